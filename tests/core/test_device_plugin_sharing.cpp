// Time-slicing and MPS as the NVIDIA device plugin deploys them (docs/sharing.md): a node
// advertises GPUs x replicas, failRequestsGreaterThanOne, renameByDefault (nvidia.com/gpu.shared),
// per-GPU replica counts, and MPS clients limited to GPU memory / replicas. Cases marked
// "plugin:" are translated from NVIDIA/k8s-device-plugin's own tests and code, named there.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <gpusched/cluster.hpp>

#include "support/support.hpp"

using namespace gpusched;
namespace t = gpusched::test;

namespace {

/// One node of `replicas.size()` GPUs of `model`, GPU i shared by replicas[i].
NodeSpec shared_node(GpuPartition mode, std::vector<std::uint16_t> replicas, std::string_view model = "A100-80GB",
                     DevicePluginSharing sharing = {}) {
  auto n = t::node("shared-0", 64, 512, static_cast<int>(replicas.size()), model);
  for (std::size_t i = 0; i < replicas.size(); ++i) {
    n.gpus[i].partition = mode;
    n.gpus[i].replicas = replicas[i];
  }
  n.sharing = sharing;
  return n;
}

ClusterState cluster_of(NodeSpec n, ReplicaAllocation a = ReplicaAllocation::kDevicePlugin) {
  auto c = t::cluster({std::move(n)});
  DeviceOptions o = c.device_options();
  o.replica_allocation = a;
  c.set_device_options(o);
  return c;
}

/// Replicas taken per GPU index by one placement of `r` on node 0, or nullopt when it does not fit.
std::optional<std::map<int, int>> place(ClusterState& c, const TaskRequest& r) {
  const NodeId n{0};
  if (!c.fits(n, r)) return std::nullopt;
  std::vector<GpuGrant> grants;
  REQUIRE(c.pick_units(n, r, {}, nullptr, grants));
  c.allocate(r, TaskPlacement{n, grants});
  std::map<int, int> per_gpu;
  for (const auto& g : grants) ++per_gpu[g.index];
  REQUIRE(t::cluster_violation(c).empty());
  return per_gpu;
}

TaskRequest gpus(int k, bool shared_name = false) {
  return t::request({{"cpu", "1"}, {shared_name ? "nvidia.com/gpu.shared" : "nvidia.com/gpu", std::to_string(k)}});
}

}  // namespace

TEST_CASE("A time-sliced node advertises GPUs x replicas: nvidia.com/gpu 3 fits 2 GPUs of 4 replicas", "[core][sharing]") {
  auto c = cluster_of(shared_node(GpuPartition::kTimeSlicing, {4, 4}));
  CHECK(c.node(NodeId{0}).whole_units_free == 8);
  CHECK(c.max_capacity().whole_units_free == 8);
  const auto got = place(c, gpus(3));
  REQUIRE(got);
  CHECK(got->at(0) + got->at(1) == 3);
  CHECK(c.node(NodeId{0}).whole_units_free == 5);
  // Property: 1-replica tasks fill exactly the advertised replicas, then the next waits.
  int placed = 0;
  while (place(c, gpus(1))) ++placed;
  CHECK(placed == 5);
  CHECK(c.fit_check(NodeId{0}, gpus(1)) == FitResult::kGpuCount);
  for (const auto& g : c.gpus(NodeId{0})) CHECK(g.tasks == g.replicas);
}

TEST_CASE("plugin: the distributed allocation spreads a request's replicas over the GPUs", "[core][sharing]") {
  // internal/rm/allocate_test.go, TestDistributedAlloc: "2 GPUs, 4 replicas each, allocate 2",
  // "3 GPUs, 2 replicas each, allocate 3", "2 GPUs, 4 replicas each, allocate 4", "allocate 1
  // from single GPU", "not enough devices" (here: the request does not fit).
  struct Case {
    std::vector<std::uint16_t> replicas;
    int size;
    std::map<int, int> expected;   // empty: does not fit
  };
  const std::vector<Case> cases{
      {{4, 4}, 2, {{0, 1}, {1, 1}}},
      {{2, 2, 2}, 3, {{0, 1}, {1, 1}, {2, 1}}},
      {{4, 4}, 4, {{0, 2}, {1, 2}}},
      {{4}, 1, {{0, 1}}},
      {{2}, 5, {}},
  };
  for (const auto& k : cases) {
    INFO(k.replicas.size() << " GPU(s), size " << k.size);
    auto c = cluster_of(shared_node(GpuPartition::kTimeSlicing, k.replicas));
    const auto got = place(c, gpus(k.size));
    if (k.expected.empty()) {
      CHECK_FALSE(got);
    } else {
      REQUIRE(got);
      CHECK(*got == k.expected);
    }
  }
  // TestDistributedAlloc_PartiallyAllocated_DistributesAcrossDistinctGPUs: GPU 1 has one of its
  // two replicas taken; a request of 2 takes one replica of each GPU.
  auto c = cluster_of(shared_node(GpuPartition::kTimeSlicing, {2, 2}));
  c.allocate(gpus(1), TaskPlacement{NodeId{0}, {c.unit_grant(NodeId{0}, 1, gpus(1))}});
  const auto got = place(c, gpus(2));
  REQUIRE(got);
  CHECK(*got == std::map<int, int>{{0, 1}, {1, 1}});
  // The comparator (allocate.go, distributed): the GPU with the fewest replicas allocated goes
  // first, so with GPU 0 at 3 of 4 taken both replicas of a request of 2 come from GPU 1.
  auto d = cluster_of(shared_node(GpuPartition::kTimeSlicing, {4, 4}));
  for (int i = 0; i < 3; ++i) d.allocate(gpus(1), TaskPlacement{NodeId{0}, {d.unit_grant(NodeId{0}, 0, gpus(1))}});
  const auto second = place(d, gpus(2));
  REQUIRE(second);
  CHECK(*second == std::map<int, int>{{1, 2}});
}

TEST_CASE("The earlier one-replica-per-GPU model stays available as a named option", "[core][sharing]") {
  CHECK(to_string(ReplicaAllocation::kDevicePlugin) == "device-plugin");
  CHECK(to_string(ReplicaAllocation::kOnePerGpu) == "one-per-gpu");
  auto c = cluster_of(shared_node(GpuPartition::kTimeSlicing, {4, 4}), ReplicaAllocation::kOnePerGpu);
  CHECK(c.node(NodeId{0}).whole_units_free == 2);
  CHECK(c.fit_check(NodeId{0}, gpus(3)) == FitResult::kGpuCount);
  const auto got = place(c, gpus(2));
  REQUIRE(got);
  CHECK(*got == std::map<int, int>{{0, 1}, {1, 1}});
  // Switching back recomputes the aggregates: 6 replicas free.
  DeviceOptions o = c.device_options();
  o.replica_allocation = ReplicaAllocation::kDevicePlugin;
  c.set_device_options(o);
  CHECK(c.node(NodeId{0}).whole_units_free == 6);
  CHECK(c.max_capacity().whole_units_free == 8);
}

TEST_CASE("failRequestsGreaterThanOne: off by default for time-slicing, on for MPS, and settable", "[core][sharing]") {
  // cmd/nvidia-device-plugin: Allocate fails "request for 'nvidia.com/gpu: N' too large: maximum
  // request size for shared resources is 1" when the flag holds and N > 1; unset, it is false for
  // time-slicing, and api/config/v1/config.go NewConfig sets it for MPS.
  auto ts = cluster_of(shared_node(GpuPartition::kTimeSlicing, {4}));
  CHECK(ts.fits(NodeId{0}, gpus(2)));
  DevicePluginSharing strict;
  strict.fail_requests_greater_than_one = true;
  auto ts_strict = cluster_of(shared_node(GpuPartition::kTimeSlicing, {4, 4}, "A100-80GB", strict));
  CHECK(ts_strict.fit_check(NodeId{0}, gpus(2)) == FitResult::kReplicaRequestTooLarge);
  // Not an impossible input: the job is placed by kube-scheduler and refused by the plugin, so it
  // stays pending with that reason (docs/sharing.md) rather than stopping the run.
  CHECK(ts_strict.fits_empty(NodeId{0}, gpus(2)));
  CHECK(ts_strict.fits(NodeId{0}, gpus(1)));

  auto mps = cluster_of(shared_node(GpuPartition::kMps, {4, 4}));
  CHECK(mps.fit_check(NodeId{0}, gpus(2)) == FitResult::kReplicaRequestTooLarge);
  CHECK(mps.fits(NodeId{0}, gpus(1)));
  DevicePluginSharing lenient;
  lenient.fail_requests_greater_than_one = false;
  auto mps_lenient = cluster_of(shared_node(GpuPartition::kMps, {4, 4}, "A100-80GB", lenient));
  CHECK(mps_lenient.fits(NodeId{0}, gpus(3)));
  // The earlier model never applied the flag.
  auto mps_old = cluster_of(shared_node(GpuPartition::kMps, {4, 4}), ReplicaAllocation::kOnePerGpu);
  CHECK(mps_old.fits(NodeId{0}, gpus(2)));
}

TEST_CASE("renameByDefault: replicas are nvidia.com/gpu.shared and only that", "[core][sharing]") {
  DevicePluginSharing renamed;
  renamed.rename_by_default = true;
  auto c = cluster_of(shared_node(GpuPartition::kTimeSlicing, {2, 2}, "A100-80GB", renamed));
  CHECK(c.fit_check(NodeId{0}, gpus(1)) == FitResult::kGpuCount);
  CHECK_FALSE(c.fits_empty(NodeId{0}, gpus(1)));
  const auto got = place(c, gpus(3, true));
  REQUIRE(got);
  CHECK(got->at(0) + got->at(1) == 3);
  // A plain node does not serve nvidia.com/gpu.shared; a not-renamed shared node neither.
  auto plain = t::cluster({t::node("plain", 8, 64, 2, "A100-80GB")});
  CHECK(plain.fit_check(NodeId{0}, gpus(1, true)) == FitResult::kGpuCount);
  CHECK_FALSE(plain.fits_empty(NodeId{0}, gpus(1, true)));
  auto not_renamed = cluster_of(shared_node(GpuPartition::kTimeSlicing, {2}));
  CHECK_FALSE(not_renamed.fits(NodeId{0}, gpus(1, true)));
  // The request keeps its name through format_requests.
  const auto r = gpus(2, true);
  CHECK(r.gpu.shared_name);
  const auto items = format_requests(r, ResourceTable{});
  CHECK(std::find(items.begin(), items.end(), std::pair<std::string, std::string>{"nvidia.com/gpu.shared", "2"}) != items.end());
}

TEST_CASE("Per-GPU replica counts: each GPU gives at most its own replicas", "[core][sharing]") {
  // api/config/v1 ReplicatedResource.Devices: a sharing entry may name GPUs, each with its replicas.
  auto c = cluster_of(shared_node(GpuPartition::kTimeSlicing, {2, 6}));
  CHECK(c.node(NodeId{0}).whole_units_free == 8);
  const auto got = place(c, gpus(7));
  REQUIRE(got);
  CHECK(got->at(0) == 2);
  CHECK(got->at(1) == 5);
  CHECK(c.fits(NodeId{0}, gpus(1)));
  CHECK_FALSE(c.fits(NodeId{0}, gpus(2)));
}

TEST_CASE("MPS clients hold GPU memory / replicas; a share above that limit is refused with the reason", "[core][sharing]") {
  auto c = cluster_of(shared_node(GpuPartition::kMps, {4, 4}));
  const auto& g = c.gpus(NodeId{0})[0];
  // cmd/mps-control-daemon/mps/daemon.go perDevicePinnedDeviceMemoryLimits: total memory / replicas
  // (MiB, rounded down); activeThreadPercentage: 100 / replicas. Read from the catalog, not assumed.
  const auto limit = c.catalog()[g.model].memory_mib / 4;
  CHECK(ClusterState::mps_client_memory_mib(g) == limit);
  CHECK(ClusterState::mps_client_milli(g) == 250);
  // A whole replica holds exactly the client's limits.
  const auto grant = c.unit_grant(NodeId{0}, 0, gpus(1));
  CHECK(grant.memory_mib == limit);
  CHECK(grant.milli == 250);

  const auto at_limit = t::request({{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", std::to_string(limit)}});
  const auto above = t::request({{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", std::to_string(limit + 1)}});
  const auto cores_ok = t::request({{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "1024"}, {"nvidia.com/gpucores", "25"}});
  const auto cores_above = t::request({{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "1024"}, {"nvidia.com/gpucores", "26"}});
  CHECK(c.fits(NodeId{0}, at_limit));
  CHECK(c.fits_empty(NodeId{0}, at_limit));
  CHECK(c.fit_check(NodeId{0}, above) == FitResult::kMpsClientLimit);
  CHECK_FALSE(c.fits_empty(NodeId{0}, above));
  CHECK(c.fits(NodeId{0}, cores_ok));
  CHECK(c.fit_check(NodeId{0}, cores_above) == FitResult::kMpsClientLimit);
  // Property: memory-limited clients fill the 8 replicas, each holding the client's limit.
  int placed = 0;
  while (place(c, at_limit)) ++placed;
  CHECK(placed == 8);
  for (const auto& s : c.gpus(NodeId{0})) {
    CHECK(s.tasks == 4);
    CHECK(s.memory_free_mib == s.memory_mib - 4 * limit);
  }
  // HAMi shares on plain GPUs are unchanged: a GPU still gives its memory to one share of all of it.
  auto plain = t::cluster({t::node("plain", 8, 64, 1, "A100-80GB")});
  const auto all_memory = plain.gpus(NodeId{0})[0].memory_mib;
  CHECK(plain.fits(NodeId{0}, t::request({{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", std::to_string(all_memory)}})));
  CHECK_FALSE(plain.fits(NodeId{0}, t::request({{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", std::to_string(all_memory + 1)}})));
}

TEST_CASE("nvidia.com/gpu.shared goes alone in a request", "[core][sharing]") {
  CHECK_THROWS_AS(t::request({{"nvidia.com/gpu.shared", "1"}, {"nvidia.com/gpu", "1"}}), QuantityError);
  CHECK_THROWS_AS(t::request({{"nvidia.com/gpu.shared", "1"}, {"nvidia.com/gpumem", "1024"}}), QuantityError);
  CHECK_FALSE(is_extended_resource("nvidia.com/gpu.shared"));
}
