// The device plugin's sharing settings in scenario files (docs/sharing.md): devices.replica_allocation,
// gpu_partition.fail_requests_greater_than_one / rename_by_default / per-GPU replicas, each valid
// and each wrong (error id and field); the filter reasons' texts; quota counting of
// nvidia.com/gpu.shared.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <string>
#include <string_view>
#include <vector>

#include <gpusched/policies/framework/registry.hpp>
#include <gpusched/policies/framework/scheduler.hpp>
#include <gpusched/policies/noderesources/fit.hpp>
#include <gpusched/policies/quota/quota_resources.hpp>
#include <gpusched/scenario/scenario.hpp>

#include "support/support.hpp"

using namespace gpusched;
using namespace gpusched::scenario;
namespace t = gpusched::test;

namespace {

/// One node "n" of `gpus` T4s with `partition` (a JSON object), `devices` (a JSON object or
/// empty) and jobs.
std::string doc(int gpus, std::string_view partition, std::string_view devices = "", std::string_view jobs = "") {
  std::string s = R"({"schema_version": 1, )";
  if (!devices.empty()) s += R"("devices": )" + std::string(devices) + ", ";
  s += R"("cluster": {"nodes": [{"name": "n", "cpu": 32, "memory": "128Gi", "gpus": )" + std::to_string(gpus) +
       R"(, "gpu_model": "T4", "gpu_partition": )" + std::string(partition) + R"(}]}, "workload": {"jobs": [)";
  s += jobs;
  s += "]}}";
  return s;
}

std::string job(std::string_view id, std::string_view gpu_name, int count) {
  return R"({"id": ")" + std::string(id) + R"(", "submit_time": 0, "requests": {"cpu": "1", ")" + std::string(gpu_name) +
         R"(": )" + std::to_string(count) + "}}";
}

Scenario parse(const std::string& text) { return parse_scenario(std::string_view(text), "sharing.json", "."); }

/// The ScenarioError parsing `text` throws.
ScenarioError error_of(const std::string& text) {
  INFO(text);
  return t::thrown<ScenarioError>([&] { (void)parse(text); });
}

void check_error(const std::string& text, std::string_view id, std::string_view field, std::string_view words = "") {
  INFO(text);
  const auto e = error_of(text);
  CHECK(e.id() == id);
  CHECK(e.where().file == "sharing.json");
  CHECK(e.where().field == field);
  if (!words.empty()) CHECK_THAT(std::string(e.what()), Catch::Contains(std::string(words)));
}

constexpr std::string_view kBadValue = "gpusched.scenario_error.203";
constexpr std::string_view kUnknownField = "gpusched.scenario_error.205";
constexpr std::string_view kBadDevices = "gpusched.scenario_error.209";
constexpr std::string_view kOutOfRange = "gpusched.scenario_error.211";
constexpr std::string_view kPartition = "/cluster/nodes/0/gpu_partition";

/// A parsed scenario, its cluster and its scheduler (as the engine builds them).
struct Bench {
  Scenario sc;
  ClusterState cluster;
  policies::Scheduler scheduler;
  explicit Bench(const std::string& text)
      : sc(parse(text)),
        cluster(sc.catalog, sc.resources, sc.nodes),
        scheduler(sc.profile, policies::Registry::with_builtins(), sc.seed) {
    cluster.set_device_options(sc.devices);
  }
  /// Places job `i` and returns whether it fit (schedule() binds: the cluster holds the job after).
  bool place(std::size_t i) {
    std::vector<TaskPlacement> out;
    const auto& spec = sc.jobs.at(i);
    if (!scheduler.schedule(cluster, spec, JobId{static_cast<std::uint32_t>(i)}, out).ok()) return false;
    INFO(t::cluster_violation(cluster));
    CHECK(t::cluster_violation(cluster).empty());
    return true;
  }
};

}  // namespace

// ---------------------------------------------------------------- devices.replica_allocation

TEST_CASE("devices.replica_allocation: device-plugin by default, one-per-gpu when asked", "[scenario][sharing]") {
  const std::string ts = R"({"mode": "time-slicing", "replicas": 4})";
  const std::string jobs = job("three", "nvidia.com/gpu", 3);
  CHECK(parse(doc(2, ts)).devices.replica_allocation == ReplicaAllocation::kDevicePlugin);
  CHECK(parse(doc(2, ts, R"({"replica_allocation": "device-plugin"})")).devices.replica_allocation ==
        ReplicaAllocation::kDevicePlugin);
  CHECK(parse(doc(2, ts, R"({"replica_allocation": "one-per-gpu"})")).devices.replica_allocation ==
        ReplicaAllocation::kOnePerGpu);
  // The option reaches placement: 3 replicas fit 2 GPUs x 4 as the plugin allocates, not one per GPU.
  Bench plugin(doc(2, ts, "", jobs));
  CHECK(plugin.place(0));
  Bench one(doc(2, ts, R"({"replica_allocation": "one-per-gpu"})", jobs));
  CHECK_FALSE(one.place(0));
}

TEST_CASE("devices.replica_allocation: a wrong name or type is an error naming the field", "[scenario][sharing]") {
  const std::string ts = R"({"mode": "time-slicing", "replicas": 4})";
  check_error(doc(1, ts, R"({"replica_allocation": "packed"})"), kBadValue, "/devices/replica_allocation", "one-per-gpu");
  check_error(doc(1, ts, R"({"replica_allocation": 1})"), kBadValue, "/devices/replica_allocation", "expected a string");
  check_error(doc(1, ts, R"({"replica_alocation": "one-per-gpu"})"), kUnknownField, "/devices/replica_alocation", "replica_allocation");
}

// ---------------------------------------------------------------- fail_requests_greater_than_one

TEST_CASE("gpu_partition.fail_requests_greater_than_one: the plugin default when absent, else as written", "[scenario][sharing]") {
  for (const char* mode : {"time-slicing", "mps"}) {
    INFO(mode);
    const std::string m = R"({"mode": ")" + std::string(mode) + R"(", "replicas": 4)";
    CHECK_FALSE(parse(doc(2, m + "}")).nodes.at(0).sharing.fail_requests_greater_than_one.has_value());
    for (const bool v : {true, false}) {
      const auto sc = parse(doc(2, m + R"(, "fail_requests_greater_than_one": )" + (v ? "true" : "false") + "}"));
      REQUIRE(sc.nodes.at(0).sharing.fail_requests_greater_than_one.has_value());
      CHECK(*sc.nodes.at(0).sharing.fail_requests_greater_than_one == v);
    }
  }
  // It decides placement: 2 replicas fit a time-sliced node unless the flag holds, and the
  // refusal carries the plugin's reason.
  const std::string jobs = job("two", "nvidia.com/gpu", 2) + "," + job("one", "nvidia.com/gpu", 1);
  Bench lenient(doc(2, R"({"mode": "time-slicing", "replicas": 4})", "", jobs));
  CHECK(lenient.place(0));
  Bench strict(doc(2, R"({"mode": "time-slicing", "replicas": 4, "fail_requests_greater_than_one": true})", "", jobs));
  CHECK_FALSE(strict.place(0));
  CHECK_THAT(strict.scheduler.last_diagnosis(), Catch::Contains("maximum request size for shared resources is 1"));
  CHECK(strict.place(1));
  // MPS holds the flag by default; false lifts it.
  Bench mps(doc(2, R"({"mode": "mps", "replicas": 4})", "", jobs));
  CHECK_FALSE(mps.place(0));
  CHECK_THAT(mps.scheduler.last_diagnosis(), Catch::Contains("failRequestsGreaterThanOne"));
  Bench mps_lenient(doc(2, R"({"mode": "mps", "replicas": 4, "fail_requests_greater_than_one": false})", "", jobs));
  CHECK(mps_lenient.place(0));
}

// ---------------------------------------------------------------- rename_by_default

TEST_CASE("gpu_partition.rename_by_default: replicas are nvidia.com/gpu.shared", "[scenario][sharing]") {
  CHECK_FALSE(parse(doc(1, R"({"mode": "time-slicing", "replicas": 2})")).nodes.at(0).sharing.rename_by_default);
  const std::string renamed = R"({"mode": "time-slicing", "replicas": 2, "rename_by_default": true})";
  CHECK(parse(doc(1, renamed)).nodes.at(0).sharing.rename_by_default);
  CHECK(parse(doc(1, R"({"mode": "mps", "replicas": 2, "rename_by_default": true})")).nodes.at(0).sharing.rename_by_default);
  Bench b(doc(2, renamed, "", job("plain", "nvidia.com/gpu", 1) + "," + job("shared", "nvidia.com/gpu.shared", 3)));
  CHECK_FALSE(b.place(0));
  CHECK(b.place(1));
}

// ---------------------------------------------------------------- per-GPU replicas

TEST_CASE("gpu_partition.replicas as a list gives each GPU its own count", "[scenario][sharing]") {
  const auto sc = parse(doc(3, R"({"mode": "time-slicing", "replicas": [2, 6, 1]})"));
  const auto& gpus = sc.nodes.at(0).gpus;
  REQUIRE(gpus.size() == 3);
  CHECK(gpus[0].replicas == 2);
  CHECK(gpus[1].replicas == 6);
  CHECK(gpus[2].replicas == 1);
  // One count for all is unchanged.
  const auto same = parse(doc(3, R"({"mode": "mps", "replicas": 5})"));
  for (const auto& g : same.nodes.at(0).gpus) CHECK(g.replicas == 5);
  // The node advertises the sum: 9 replicas fit, a 10th does not.
  Bench b(doc(3, R"({"mode": "time-slicing", "replicas": [2, 6, 1]})", "",
              job("nine", "nvidia.com/gpu", 9) + "," + job("one", "nvidia.com/gpu", 1)));
  CHECK(b.cluster.node(NodeId{0}).whole_units_free == 9);
  CHECK(b.place(0));
  for (const auto& g : b.cluster.gpus(NodeId{0})) CHECK(g.tasks == g.replicas);   // every replica used once
  CHECK(b.cluster.node(NodeId{0}).whole_units_free == 0);
  CHECK_FALSE(b.place(1));
}

TEST_CASE("Per-GPU replicas: wrong length, type or range is an error at the element", "[scenario][sharing]") {
  const std::string f = std::string(kPartition) + "/replicas";
  check_error(doc(2, R"({"mode": "time-slicing", "replicas": [2]})"), kBadDevices, f, "one replica count per GPU (2)");
  check_error(doc(2, R"({"mode": "time-slicing", "replicas": [2, 2, 2]})"), kBadDevices, f, "got 3");
  check_error(doc(2, R"({"mode": "time-slicing", "replicas": [2, "4"]})"), kBadValue, f + "/1", "expected an integer");
  check_error(doc(2, R"({"mode": "time-slicing", "replicas": [0, 2]})"), kOutOfRange, f + "/0", "out of range");
  check_error(doc(2, R"({"mode": "time-slicing", "replicas": [2, 1025]})"), kOutOfRange, f + "/1", "out of range");
  check_error(doc(2, R"({"mode": "time-slicing", "replicas": "4"})"), kBadValue, f, "list of integers");
  check_error(doc(2, R"({"mode": "whole", "replicas": [2, 2]})"), kBadDevices, f, "time-slicing");
}

TEST_CASE("MPS replicas are capped at the device plugin's 48 clients per GPU", "[scenario][sharing]") {
  const std::string f = std::string(kPartition) + "/replicas";
  CHECK(parse(doc(1, R"({"mode": "mps", "replicas": 48})")).nodes.at(0).gpus.at(0).replicas == 48);
  check_error(doc(1, R"({"mode": "mps", "replicas": 49})"), kBadDevices, f, "at most 48 MPS clients");
  check_error(doc(2, R"({"mode": "mps", "replicas": [4, 49]})"), kBadDevices, f + "/1", "at most 48 MPS clients");
  // Time-slicing has no such cap.
  CHECK(parse(doc(1, R"({"mode": "time-slicing", "replicas": 49})")).nodes.at(0).gpus.at(0).replicas == 49);
  // Before compute capability 7.5 (V100 is 7.0) the cap is 16 (device.go maxClients).
  auto v100 = [](std::string text) { return text.replace(text.find(R"("T4")"), 4, R"("V100-16GB")"); };
  CHECK(parse(v100(doc(1, R"({"mode": "mps", "replicas": 16})"))).nodes.at(0).gpus.at(0).replicas == 16);
  check_error(v100(doc(1, R"({"mode": "mps", "replicas": 17})")), kBadDevices, f, "at most 16 MPS clients per V100-16GB");
}

TEST_CASE("MPS replicas per GPU must be equal: the daemon's thread percentage is one for all GPUs", "[scenario][sharing]") {
  const std::string f = std::string(kPartition) + "/replicas";
  CHECK(parse(doc(2, R"({"mode": "mps", "replicas": [4, 4]})")).nodes.at(0).gpus.at(1).replicas == 4);
  check_error(doc(2, R"({"mode": "mps", "replicas": [2, 4]})"), kBadDevices, f + "/1", "one active-thread percentage");
  CHECK(parse(doc(2, R"({"mode": "time-slicing", "replicas": [2, 4]})")).nodes.at(0).gpus.at(1).replicas == 4);
}

// ---------------------------------------------------------------- wrong types and modes

TEST_CASE("The sharing flags: a non-boolean, or another mode, is an error naming the field", "[scenario][sharing]") {
  for (const char* key : {"fail_requests_greater_than_one", "rename_by_default"}) {
    INFO(key);
    const std::string f = std::string(kPartition) + "/" + key;
    const std::string k = R"(")" + std::string(key) + R"(": )";
    check_error(doc(1, R"({"mode": "time-slicing", "replicas": 2, )" + k + R"("yes"})"), kBadValue, f, "true or false");
    check_error(doc(1, R"({"mode": "mps", "replicas": 2, )" + k + "1}"), kBadValue, f, "true or false");
    for (const char* other : {"whole", "passthrough", "vgpu"}) {
      INFO(other);
      check_error(doc(1, R"({"mode": ")" + std::string(other) + R"(", )" + k + "true}"), kBadDevices, f, "time-slicing");
    }
    check_error(doc(1, R"({)" + k + "false}"), kBadDevices, f, "time-slicing");   // mode defaults to whole
  }
  check_error(doc(1, R"({"mode": "mps", "fail_request_greater_than_one": true})"), kUnknownField,
              std::string(kPartition) + "/fail_request_greater_than_one", "fail_requests_greater_than_one");
}

// ---------------------------------------------------------------- reasons

TEST_CASE("The filter's reasons for the sharing refusals are texts, not '?'", "[scenario][sharing]") {
  using policies::NodeResourcesFit;
  const auto too_large = NodeResourcesFit::reason(FitResult::kReplicaRequestTooLarge);
  CHECK_THAT(std::string(too_large), Catch::Contains("maximum request size for shared resources is 1"));
  CHECK_THAT(std::string(too_large), Catch::Contains("failRequestsGreaterThanOne"));
  const auto mps = NodeResourcesFit::reason(FitResult::kMpsClientLimit);
  CHECK_THAT(std::string(mps), Catch::Contains("MPS per-client limit"));
  // Every FitResult has its own text.
  std::vector<std::string_view> seen;
  for (int i = 0; i <= static_cast<int>(FitResult::kMpsClientLimit); ++i) {
    const auto r = NodeResourcesFit::reason(static_cast<FitResult>(i));
    INFO(i);
    CHECK(r != "?");
    CHECK(std::find(seen.begin(), seen.end(), r) == seen.end());
    seen.push_back(r);
  }
}

TEST_CASE("An MPS share above the client limit is refused with its reason in the diagnosis", "[scenario][sharing]") {
  // T4: the catalog's memory / 4 replicas is the client limit; ask for one MiB more.
  Bench probe(doc(1, R"({"mode": "mps", "replicas": 4})"));
  const auto limit = ClusterState::mps_client_memory_mib(probe.cluster.gpus(NodeId{0})[0]);
  const std::string jobs = R"({"id": "big", "submit_time": 0, "requests": {"cpu": "1", "nvidia.com/gpu": 1, "nvidia.com/gpumem": )" +
                           std::to_string(limit + 1) + R"(}}, {"id": "ok", "submit_time": 0, "requests": {"cpu": "1", "nvidia.com/gpu": 1, "nvidia.com/gpumem": )" +
                           std::to_string(limit) + "}}";
  Bench b(doc(1, R"({"mode": "mps", "replicas": 4})", "", jobs));
  CHECK_FALSE(b.place(0));
  CHECK_THAT(b.scheduler.last_diagnosis(), Catch::Contains("MPS per-client limit"));
  CHECK(b.place(1));
}

// ---------------------------------------------------------------- quota

TEST_CASE("A ResourceQuota counts nvidia.com/gpu.shared as requests.nvidia.com/gpu.shared", "[scenario][sharing][quota]") {
  using policies::quota::QuotaResources;
  CHECK(QuotaResources::canonical("requests.nvidia.com/gpu.shared", {}) == "nvidia.com/gpu.shared");
  CHECK(QuotaResources::canonical("nvidia.com/gpu.shared", {}) == "nvidia.com/gpu.shared");
  QuotaResources q;
  const auto gpu = q.intern(QuotaResources::canonical("requests.nvidia.com/gpu", {}));
  const auto shared = q.intern(QuotaResources::canonical("requests.nvidia.com/gpu.shared", {}));
  REQUIRE(gpu != shared);
  const auto charge = [&](const t::Items& items, std::int64_t tasks) {
    std::vector<std::int64_t> out(q.size(), 0);
    q.charge(nullptr, t::job("j", 0, 10, t::request(items)), tasks, out);
    return std::array<std::int64_t, 2>{out[gpu], out[shared]};
  };
  CHECK(charge({{"cpu", "1"}, {"nvidia.com/gpu.shared", "3"}}, 2) == std::array<std::int64_t, 2>{0, 6});
  CHECK(charge({{"cpu", "1"}, {"nvidia.com/gpu", "3"}}, 2) == std::array<std::int64_t, 2>{6, 0});
  CHECK(charge({{"cpu", "1"}, {"nvidia.com/mig-1g.10gb", "1"}}, 1) == std::array<std::int64_t, 2>{0, 0});
  CHECK(QuotaResources::nvidia_gpus(t::request({{"nvidia.com/gpu.shared", "2"}}).gpu) == 0);
  // Weights may name it too (gpu-equivalent cost of a shared replica).
  CHECK_NOTHROW(q.set_weights(nlohmann::json{{"nvidia.com/gpu.shared", 0.25}}, {}));
}
