#include <catch2/catch.hpp>

#include <vector>

#include <gpusched/cluster.hpp>

#include "support/support.hpp"

using namespace gpusched;
namespace t = gpusched::test;

namespace {
ClusterState two_nodes() {
  return t::cluster({t::node("gpu-0", 32, 256, 4, "A100-80GB", 2), t::node("cpu-0", 64, 512)});
}
}  // namespace

TEST_CASE("A new cluster has every node fully free and totals equal to the capacity", "[core][cluster]") {
  const auto c = two_nodes();
  REQUIRE(c.node_count() == 2);
  const auto& t = c.totals();
  CHECK(t.cpu_milli == 96'000);
  CHECK(t.memory_mib == 768 * 1024);
  CHECK(t.gpus == 4);
  CHECK(t.gpu_milli == 4000);
  CHECK(t.cpu_used_milli == 0);
  CHECK(t.gpus_busy == 0);
  const auto& n0 = c.node(NodeId{0});
  CHECK(n0.gpus_fully_free == 4);
  CHECK(n0.gpu_milli_free == 4000);
  CHECK(n0.gpu_milli_free_max == 1000);
  CHECK(n0.gpu_memory_free_max == 81920);
  CHECK(n0.model == *c.catalog().find("A100-80GB"));
  CHECK(c.gpus(NodeId{0})[2].socket == 1);
  CHECK(c.node(NodeId{1}).gpu_count == 0);
  CHECK(c.max_capacity().cpu_free_milli == 64'000);
  CHECK(c.max_capacity().gpu_count == 4);
  CHECK(c.find_node("cpu-0") == NodeId{1});
  CHECK_FALSE(c.find_node("nope").has_value());
  CHECK(t::cluster_violation(c).empty());
}

TEST_CASE("Allocating whole GPUs updates the node aggregates, totals and generation", "[core][cluster]") {
  auto c = two_nodes();
  const auto r = t::request({{"cpu", "8"}, {"memory", "64Gi"}, {"nvidia.com/gpu", "2"}});
  const TaskPlacement p{NodeId{0}, {{1, 1000, 81920}, {3, 1000, 81920}}};
  const auto gen = c.generation();
  const auto node_gen = c.node(NodeId{0}).generation;
  REQUIRE(c.fits(NodeId{0}, r));
  c.allocate(r, p);
  const auto& n = c.node(NodeId{0});
  CHECK(n.cpu_free_milli == 24'000);
  CHECK(n.memory_free_mib == 192 * 1024);
  CHECK(n.gpus_fully_free == 2);
  CHECK(n.gpu_milli_free == 2000);
  CHECK(n.tasks == 1);
  CHECK(c.gpus(NodeId{0})[1].tasks == 1);
  CHECK(c.gpus(NodeId{0})[0].fully_free());
  CHECK(c.totals().cpu_used_milli == 8000);
  CHECK(c.totals().memory_used_mib == 64 * 1024);
  CHECK(c.totals().gpu_used_milli == 2000);
  CHECK(c.totals().gpus_busy == 2);
  CHECK(c.totals().tasks == 1);
  CHECK(c.generation() > gen);
  CHECK(n.generation > node_gen);
  CHECK(c.node(NodeId{1}).generation == 0);
  CHECK(t::cluster_violation(c).empty());
}

TEST_CASE("A copy knows which cluster it was copied from and at which change, and keeps the change log",
          "[core][cluster]") {
  // What the node index relies on to start a copy's structures from the original's
  // (ClusterState::copied_from / copied_at): the copy's log holds the same changes up to then.
  auto c = two_nodes();
  CHECK(c.copied_from() == 0);   // built from specs
  const auto r = t::request({{"cpu", "8"}, {"memory", "64Gi"}, {"nvidia.com/gpu", "1"}});
  const TaskPlacement p{NodeId{0}, {{1, 1000, 81920}}};
  c.allocate(r, p);
  const auto at = c.change_count();
  REQUIRE(at > 0);
  ClusterState copy = c;
  CHECK(copy.instance() != c.instance());
  CHECK(copy.copied_from() == c.instance());
  CHECK(copy.copied_at() == at);
  CHECK(copy.change_count() == at);
  REQUIRE(copy.changed_since(0));
  CHECK(std::vector<std::uint32_t>(copy.changed_since(0)->begin(), copy.changed_since(0)->end()) ==
        std::vector<std::uint32_t>(c.changed_since(0)->begin(), c.changed_since(0)->end()));
  // The copy moves on alone; its copied_at stays where it was copied.
  copy.release(r, p);
  CHECK(copy.copied_at() == at);
  CHECK(copy.change_count() > at);
  CHECK(c.change_count() == at);
  // Assigning over an older copy (EASY backfill's scratch cluster) records the new origin.
  c.release(r, p);
  ClusterState third = two_nodes();
  third = c;
  CHECK(third.copied_from() == c.instance());
  CHECK(third.copied_at() == c.change_count());
  copy = third;
  CHECK(copy.copied_from() == third.instance());
}

TEST_CASE("Releasing gives back exactly what allocating took", "[core][cluster]") {
  auto c = two_nodes();
  const auto whole = t::request({{"cpu", "8"}, {"memory", "64Gi"}, {"nvidia.com/gpu", "2"}});
  const auto share = t::request({{"cpu", "500m"}, {"memory", "1Gi"}, {"gpusched.io/gpu-milli", "300"}, {"aliyun.com/gpu-mem", "10"}});
  const auto cpu = t::request({{"cpu", "3"}, {"memory", "5Gi"}});
  const TaskPlacement p1{NodeId{0}, {{0, 1000, 81920}, {1, 1000, 81920}}};
  const TaskPlacement p2{NodeId{0}, {{2, 300, 10240}}};
  const TaskPlacement p3{NodeId{0}, {{2, 300, 10240}}};
  const TaskPlacement p4{NodeId{1}, {}};
  c.allocate(whole, p1);
  c.allocate(share, p2);
  c.allocate(share, p3);
  c.allocate(cpu, p4);
  CHECK(c.gpus(NodeId{0})[2].milli_free == 400);
  CHECK(c.gpus(NodeId{0})[2].memory_free_mib == 81920 - 20480);
  CHECK(c.gpus(NodeId{0})[2].tasks == 2);
  CHECK(c.node(NodeId{0}).gpus_fully_free == 1);
  CHECK(c.node(NodeId{0}).gpu_milli_free == 1400);
  CHECK(c.node(NodeId{0}).gpu_milli_free_max == 1000);
  CHECK(c.totals().gpus_busy == 3);
  CHECK(c.totals().gpu_used_milli == 2600);
  CHECK(c.totals().tasks == 4);
  CHECK(t::cluster_violation(c).empty());

  c.release(share, p2);
  CHECK(c.gpus(NodeId{0})[2].tasks == 1);
  CHECK_FALSE(c.gpus(NodeId{0})[2].fully_free());
  CHECK(c.totals().gpus_busy == 3);
  c.release(cpu, p4);
  c.release(whole, p1);
  c.release(share, p3);
  CHECK(t::cluster_empty(c));
  CHECK(t::cluster_violation(c).empty());
  CHECK(c.totals().gpus_busy == 0);
  CHECK(c.node(NodeId{0}).gpus_fully_free == 4);
}

TEST_CASE("fit_check names the first dimension that does not fit", "[core][cluster]") {
  auto c = t::cluster({t::node("g", 8, 64, 2, "T4")});
  const NodeId n{0};
  CHECK(c.fit_check(n, t::request({{"cpu", "9"}})) == FitResult::kCpu);
  CHECK(c.fit_check(n, t::request({{"memory", "65Gi"}})) == FitResult::kMemory);
  CHECK(c.fit_check(n, t::request({{"nvidia.com/gpu", "3"}})) == FitResult::kGpuCount);
  CHECK(c.fit_check(n, t::request({{"nvidia.com/gpu", "1"}}, {"A100-80GB"})) == FitResult::kGpuModel);
  CHECK(c.fit_check(n, t::request({{"aliyun.com/gpu-mem", "17"}})) == FitResult::kGpuShare);
  CHECK(c.fit_check(n, t::request({{"nvidia.com/gpu", "2"}}, {"T4"})) == FitResult::kFits);
  ResourceTable res;
  const auto ext = t::request({{"rdma/hca", "1"}}, res);
  auto c2 = t::cluster({t::node("g", 8, 64)}, res);
  CHECK(c2.fit_check(n, ext) == FitResult::kExtended);
  c.set_schedulable(n, false);
  CHECK(c.fit_check(n, t::request({{"cpu", "1"}})) == FitResult::kUnschedulable);
}

TEST_CASE("A share fits only a GPU with enough free compute and memory", "[core][cluster]") {
  auto c = t::cluster({t::node("g", 8, 64, 2, "T4")});
  const NodeId n{0};
  const auto big = t::request({{"gpusched.io/gpu-milli", "600"}});
  c.allocate(big, {n, {{0, 600, 0}}});
  c.allocate(big, {n, {{1, 600, 0}}});
  CHECK_FALSE(c.fits(n, big));
  CHECK(c.fit_check(n, big) == FitResult::kGpuShare);
  CHECK(c.fits(n, t::request({{"gpusched.io/gpu-milli", "400"}})));
  CHECK_FALSE(c.fits(n, t::request({{"nvidia.com/gpu", "1"}})));
}

TEST_CASE("Extended resources are taken and given back per node", "[core][cluster]") {
  ResourceTable res;
  const auto r = t::request({{"rdma/hca", "2"}}, res);
  auto spec = t::node("n", 8, 64);
  spec.extended.emplace_back(*res.find("rdma/hca"), 3);
  auto c = t::cluster({spec}, res);
  const NodeId n{0};
  CHECK(c.extended_free(n, *res.find("rdma/hca")) == 3);
  REQUIRE(c.fits(n, r));
  c.allocate(r, {n, {}});
  CHECK(c.extended_free(n, *res.find("rdma/hca")) == 1);
  CHECK_FALSE(c.fits(n, r));
  c.release(r, {n, {}});
  CHECK(c.extended_free(n, *res.find("rdma/hca")) == 3);
}

TEST_CASE("fits_empty ignores current allocations and the schedulable flag", "[core][cluster]") {
  auto c = t::cluster({t::node("g", 8, 64, 2, "T4")});
  const NodeId n{0};
  const auto two = t::request({{"nvidia.com/gpu", "2"}});
  c.allocate(two, {n, {{0, 1000, 16384}, {1, 1000, 16384}}});
  c.set_schedulable(n, false);
  CHECK(c.fits_empty(n, two));
  CHECK_FALSE(c.fits_empty(n, t::request({{"nvidia.com/gpu", "3"}})));
  CHECK_FALSE(c.fits_empty(n, t::request({{"aliyun.com/gpu-mem", "20"}})));
  CHECK_FALSE(c.fits_empty(n, t::request({{"nvidia.com/gpu", "1"}}, {"A100-80GB"})));
}

TEST_CASE("Marking a node unschedulable bumps its generation once", "[core][cluster]") {
  auto c = two_nodes();
  const auto g = c.generation();
  c.set_schedulable(NodeId{1}, false);
  CHECK_FALSE(c.node(NodeId{1}).schedulable);
  CHECK(c.generation() == g + 1);
  c.set_schedulable(NodeId{1}, false);
  CHECK(c.generation() == g + 1);
  c.set_schedulable(NodeId{1}, true);
  CHECK(c.node(NodeId{1}).schedulable);
  CHECK(c.generation() == g + 2);
}

TEST_CASE("Copies of a cluster share node specs until one of them changes a taint", "[core][cluster]") {
  // ClusterState keeps its node specs copy-on-write (SharedNodeSpecs): a what-if or backfill copy
  // must see the specs of the moment it was made, and a taint added on either side must not show
  // on the other.
  auto a = two_nodes();
  const ClusterState b = a;
  CHECK(&a.spec(NodeId{0}) == &b.spec(NodeId{0}));   // shared, not copied
  CHECK(&a.catalog() == &b.catalog());
  a.add_taint(NodeId{0}, Taint{"maintenance", "true", TaintEffect::kNoSchedule});
  CHECK(&a.spec(NodeId{0}) != &b.spec(NodeId{0}));   // a took its own copy before changing it
  REQUIRE(a.spec(NodeId{0}).taints.size() == 1);
  CHECK(b.spec(NodeId{0}).taints.empty());
  CHECK(a.spec(NodeId{1}).name == b.spec(NodeId{1}).name);

  ClusterState c = b;
  c.add_taint(NodeId{1}, Taint{"dedicated", "ml", TaintEffect::kNoExecute});
  CHECK(b.spec(NodeId{1}).taints.empty());
  CHECK(c.spec(NodeId{1}).taints.size() == 1);
  CHECK(c.remove_taint(NodeId{1}, "dedicated") == 1);
  CHECK(c.spec(NodeId{1}).taints.empty());
  // Assigning shares again: the copy sees the source's taints.
  c = a;
  CHECK(c.spec(NodeId{0}).taints.size() == 1);
  CHECK(&c.spec(NodeId{0}) == &a.spec(NodeId{0}));
  // A cluster that is not shared changes its specs in place.
  ClusterState d = two_nodes();
  const NodeSpec* before = &d.spec(NodeId{0});
  d.add_taint(NodeId{0}, Taint{"x", "", TaintEffect::kNoSchedule});
  CHECK(&d.spec(NodeId{0}) == before);
}
