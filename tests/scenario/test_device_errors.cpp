// Bad device input in scenario files and traces: each is rejected before anything runs, with the
// stable error id and the JSON path (or trace field) of what is wrong.
#include <catch2/catch.hpp>

#include <string>
#include <string_view>

#include <gpusched/scenario/scenario.hpp>

#include "support/support.hpp"

using namespace gpusched;
using namespace gpusched::scenario;
namespace t = gpusched::test;

namespace {

/// One node (the inside of the object after the name, cpu and memory) and optional jobs.
std::string node_doc(std::string_view node, std::string_view jobs = "") {
  std::string s = R"({"schema_version": 1, "cluster": {"nodes": [{"name": "n", "cpu": 32, "memory": "128Gi", )";
  s += node;
  s += R"(}]}, "workload": {"jobs": [)";
  s += jobs;
  s += "]}}";
  return s;
}

/// One node group (the inside after name, cpu and memory) and optional jobs.
std::string group_doc(std::string_view group, std::string_view jobs = "") {
  std::string s = R"({"schema_version": 1, "cluster": {"node_groups": [{"name": "g", "cpu": 96, "memory": "256Gi", )";
  s += group;
  s += R"(}]}, "workload": {"jobs": [)";
  s += jobs;
  s += "]}}";
  return s;
}

constexpr std::string_view kH100 = R"("gpus": 1, "gpu_model": "H100-80GB", )";
constexpr std::string_view kLayoutPath = "/cluster/nodes/0/gpu_partition/layout";

/// The error parsing `text` throws; fails the test when it throws none or another class.
template <class E>
E error_of(const std::string& text) {
  INFO(text);
  return t::thrown<E>([&] { (void)parse_scenario(std::string_view(text), "bad.json", "."); });
}

std::string mig_layout(std::string_view layout) {
  return node_doc(std::string(kH100) + R"("gpu_partition": {"mode": "mig", "layout": )" + std::string(layout) + "}");
}

/// A job with the given requests (the inside of the object) and extra fields (each ending in ", ").
std::string job(std::string_view requests, std::string_view extra = "") {
  return R"({"id": "j", "submit_time": 0, )" + std::string(extra) + R"("requests": {"cpu": "1", )" + std::string(requests) + "}}";
}

constexpr std::string_view kV4Pool = R"("count": 16, "tpu": {"generation": "v4", "topology": "4x4x4", "provisioned": false})";

}  // namespace

// ---------------------------------------------------------------- MIG layouts

TEST_CASE("A MIG layout naming a profile the GPU model does not have is a catalog error at its index",
          "[scenario][device-errors]") {
  const auto e = error_of<CatalogError>(mig_layout(R"(["4g.40gb", "3g.20gb"])"));   // 3g.20gb is an A100-40GB profile
  CHECK(e.id() == "gpusched.catalog_error.403");
  CHECK(e.where().file == "bad.json");
  CHECK(e.where().field == std::string(kLayoutPath) + "/1");
  CHECK_THAT(e.detail(), Catch::Contains("3g.20gb") && Catch::Contains("H100-80GB") && Catch::Contains("3g.40gb"));
}

TEST_CASE("Overlapping static GPU instances are rejected at the second one", "[scenario][device-errors]") {
  const auto e = error_of<ScenarioError>(mig_layout(R"([{"profile": "4g.40gb", "start": 0}, {"profile": "3g.40gb", "start": 0}])"));
  CHECK(e.id() == "gpusched.scenario_error.209");
  CHECK(e.where().field == std::string(kLayoutPath) + "/1");
  CHECK_THAT(e.detail(), Catch::Contains("3g.40gb") && Catch::Contains("overlaps"));
}

TEST_CASE("A static GPU instance at an illegal start names the start and the legal ones", "[scenario][device-errors]") {
  auto e = error_of<ScenarioError>(mig_layout(R"([{"profile": "3g.40gb", "start": 2}])"));
  CHECK(e.id() == "gpusched.scenario_error.209");
  CHECK(e.where().field == std::string(kLayoutPath) + "/0/start");
  CHECK_THAT(e.detail(), Catch::Contains("legal: 0, 4"));
  // No 1g starts at memory slice 7 (mig.md), though the slice exists.
  e = error_of<ScenarioError>(mig_layout(R"([{"profile": "1g.10gb", "start": 7}])"));
  CHECK(e.id() == "gpusched.scenario_error.209");
  CHECK(e.where().field == std::string(kLayoutPath) + "/0/start");
  // Past the GPU's memory slices: a bad value.
  e = error_of<ScenarioError>(mig_layout(R"([{"profile": "1g.10gb", "start": 8}])"));
  CHECK(e.where().field == std::string(kLayoutPath) + "/0/start");
}

TEST_CASE("A 4g+4g layout is impossible on one GPU", "[scenario][device-errors]") {
  auto e = error_of<ScenarioError>(mig_layout(R"(["4g.40gb", "4g.40gb"])"));
  CHECK(e.id() == "gpusched.scenario_error.209");
  CHECK(e.where().field == std::string(kLayoutPath) + "/1");
  CHECK_THAT(e.detail(), Catch::Contains("4g.40gb"));
  // Other rule-1 combinations: 3g+3g+1g and 4g+3g+1g.
  CHECK(error_of<ScenarioError>(mig_layout(R"(["3g.40gb", "3g.40gb", "1g.10gb"])")).where().field == std::string(kLayoutPath) + "/2");
  CHECK(error_of<ScenarioError>(mig_layout(R"(["4g.40gb", "3g.40gb", "1g.10gb"])")).where().field == std::string(kLayoutPath) + "/2");
}

TEST_CASE("Per-GPU layouts are checked GPU by GPU and must match the GPU count", "[scenario][device-errors]") {
  const std::string two = R"("gpus": 2, "gpu_model": "A100-80GB", )";
  auto e = error_of<ScenarioError>(node_doc(two + R"("gpu_partition": {"mode": "mig", "layouts": [["7g.80gb"]]})"));
  CHECK(e.id() == "gpusched.scenario_error.209");
  CHECK(e.where().field == "/cluster/nodes/0/gpu_partition/layouts");
  e = error_of<ScenarioError>(node_doc(two + R"("gpu_partition": {"mode": "mig", "layouts": [["7g.80gb"], ["4g.40gb", "4g.40gb"]]})"));
  CHECK(e.where().field == "/cluster/nodes/0/gpu_partition/layouts/1/1");
}

TEST_CASE("MIG options outside mode mig and impossible MIG strategies are rejected", "[scenario][device-errors]") {
  auto e = error_of<ScenarioError>(node_doc(std::string(kH100) + R"("gpu_partition": {"mode": "vgpu", "layout": ["7g.80gb"]})"));
  CHECK(e.id() == "gpusched.scenario_error.209");
  CHECK(e.where().field == "/cluster/nodes/0/gpu_partition");
  e = error_of<ScenarioError>(node_doc(std::string(kH100) + R"("gpu_partition": {"mode": "mig"})"));
  CHECK(e.id() == "gpusched.scenario_error.209");
  CHECK_THAT(e.detail(), Catch::Contains("dynamic"));
  e = error_of<ScenarioError>(node_doc(std::string(kH100) + R"("gpu_partition": {"mode": "mig", "strategy": "single", "dynamic": true})"));
  CHECK(e.where().field == "/cluster/nodes/0/gpu_partition/strategy");
  e = error_of<ScenarioError>(node_doc(std::string(kH100) + R"("gpu_partition": {"mode": "mig", "strategy": "single", "layout": ["4g.40gb", "3g.40gb"]})"));
  CHECK(e.id() == "gpusched.scenario_error.209");
  CHECK(e.where().field == "/cluster/nodes/0/gpu_partition/layout");
  e = error_of<ScenarioError>(node_doc(std::string(kH100) + R"("gpu_partition": {"mode": "whole", "replicas": 4})"));
  CHECK(e.where().field == "/cluster/nodes/0/gpu_partition/replicas");
  e = error_of<ScenarioError>(node_doc(std::string(kH100) + R"("gpu_partition": {"mode": "sliced"})"));
  CHECK(e.id() == "gpusched.scenario_error.203");
  CHECK(e.where().field == "/cluster/nodes/0/gpu_partition/mode");
}

TEST_CASE("MIG mode on a T4 is rejected naming the model", "[scenario][device-errors]") {
  const auto e = error_of<ScenarioError>(node_doc(R"("gpus": 2, "gpu_model": "T4", "gpu_partition": {"mode": "mig", "dynamic": true})"));
  CHECK(e.id() == "gpusched.scenario_error.209");
  CHECK(e.where().field == "/cluster/nodes/0/gpu_partition/mode");
  CHECK_THAT(e.detail(), Catch::Contains("T4"));
}

// ---------------------------------------------------------------- vGPU

TEST_CASE("Two vGPU profiles on one physical GPU are rejected", "[scenario][device-errors]") {
  const auto e = error_of<ScenarioError>(
      node_doc(R"("gpus": 1, "gpu_model": "A100-40GB", "gpu_partition": {"mode": "vgpu", "vgpu_profiles": ["A100-10C", "A100-20C"]})"));
  CHECK(e.id() == "gpusched.scenario_error.209");
  CHECK(e.where().field == "/cluster/nodes/0/gpu_partition/vgpu_profiles");
  CHECK_THAT(e.detail(), Catch::Contains("same profile"));
}

TEST_CASE("An unknown vGPU profile is a catalog error listing the model's profiles", "[scenario][device-errors]") {
  // A100-80GB boards have the A100D-* profiles.
  const auto e = error_of<CatalogError>(
      node_doc(R"("gpus": 1, "gpu_model": "A100-80GB", "gpu_partition": {"mode": "vgpu", "vgpu_profile": "A100-10C"})"));
  CHECK(e.id() == "gpusched.catalog_error.405");
  CHECK(e.where().field == "/cluster/nodes/0/gpu_partition/vgpu_profile");
  CHECK_THAT(e.detail(), Catch::Contains("A100-10C") && Catch::Contains("A100D-10C"));
  // vgpu_profile belongs to mode vgpu.
  const auto m = error_of<ScenarioError>(
      node_doc(R"("gpus": 1, "gpu_model": "A100-80GB", "gpu_partition": {"mode": "mig", "dynamic": true, "vgpu_profile": "A100D-10C"})"));
  CHECK(m.id() == "gpusched.scenario_error.209");
  CHECK(m.where().field == "/cluster/nodes/0/gpu_partition/vgpu_profile");
}

TEST_CASE("vGPU mode on a model without vGPU profiles is rejected", "[scenario][device-errors]") {
  const auto e = error_of<ScenarioError>(node_doc(R"("gpus": 1, "gpu_model": "K80", "gpu_partition": {"mode": "vgpu"})"));
  CHECK(e.id() == "gpusched.scenario_error.209");
  CHECK(e.where().field == "/cluster/nodes/0/gpu_partition/mode");
}

// ---------------------------------------------------------------- TPU pools

TEST_CASE("A v4 pool of topology 3x3x3 is rejected naming the topology", "[scenario][device-errors]") {
  for (const char* provisioned : {"true", "false"}) {
    INFO("provisioned " << provisioned);
    const auto e = error_of<CatalogError>(group_doc(R"("count": 1, "tpu": {"generation": "v4", "topology": "3x3x3", "provisioned": )" +
                                                    std::string(provisioned) + "}"));
    CHECK(e.id() == "gpusched.catalog_error.404");
    CHECK(e.where().field == "/cluster/node_groups/0/tpu/topology");
    CHECK_THAT(e.detail(), Catch::Contains("3x3x3"));
  }
}

TEST_CASE("A node group whose count differs from its TPU pool's host count is rejected", "[scenario][device-errors]") {
  const auto e = error_of<ScenarioError>(group_doc(R"("count": 8, "tpu": {"generation": "v4", "topology": "4x4x4", "provisioned": false})"));
  CHECK(e.id() == "gpusched.scenario_error.209");
  CHECK(e.where().field.rfind("/cluster/node_groups/0", 0) == 0);
  CHECK_THAT(e.detail(), Catch::Contains("16 hosts") && Catch::Contains("count is 8"));
  // A multi-host pool is not a single node.
  const auto n = error_of<ScenarioError>(node_doc(R"("tpu": {"generation": "v4", "topology": "2x2x4"})"));
  CHECK(n.id() == "gpusched.scenario_error.209");
  CHECK(n.where().field == "/cluster/nodes/0/tpu/topology");
}

TEST_CASE("A node with both GPUs and TPUs, or a TPU host size the generation lacks, is rejected", "[scenario][device-errors]") {
  auto e = error_of<ScenarioError>(node_doc(R"("gpus": 1, "gpu_model": "T4", "tpu": {"generation": "v4"})"));
  CHECK(e.id() == "gpusched.scenario_error.209");
  CHECK(e.where().field == "/cluster/nodes/0/tpu");
  e = error_of<ScenarioError>(node_doc(R"("tpu": {"generation": "v4", "chips_per_host": 8})"));
  CHECK(e.id() == "gpusched.scenario_error.209");
  CHECK(e.where().field == "/cluster/nodes/0/tpu/chips_per_host");
  const auto c = error_of<CatalogError>(node_doc(R"("tpu": {"generation": "v9"})"));
  CHECK(c.id() == "gpusched.catalog_error.401");
  CHECK(c.where().field == "/cluster/nodes/0/tpu/generation");
}

// ---------------------------------------------------------------- requests in jobs

TEST_CASE("A trace job asking for a MIG profile no model has is a catalog error naming the field", "[scenario][device-errors]") {
  t::TempDir dir;
  const auto trace = dir.write("jobs.jsonl", R"({"id": "ok", "submit_time": 0, "requests": {"nvidia.com/mig-3g.40gb": 1}})"
                                             "\n"
                                             R"({"id": "bad", "submit_time": 1, "requests": {"nvidia.com/mig-9g.99gb": 1}})"
                                             "\n");
  const std::string text = R"({"schema_version": 1, "cluster": {"nodes": [{"name": "n", "cpu": 32, "memory": "128Gi", )" +
                           std::string(kH100) + R"("gpu_partition": {"mode": "mig", "dynamic": true}}]}, "workload": {"trace": ")" +
                           trace.string() + R"("}})";
  const auto e = error_of<CatalogError>(text);
  CHECK(e.id() == "gpusched.catalog_error.403");
  CHECK(e.where().file == trace.string());
  CHECK(e.where().line == 2);
  CHECK(e.where().field == "requests.nvidia.com/mig-9g.99gb");
  CHECK_THAT(e.detail(), Catch::Contains("9g.99gb") && Catch::Contains("3g.40gb"));
  // The same job inline in the scenario.
  const auto inline_error = error_of<CatalogError>(node_doc(kH100.substr(0, kH100.size() - 2), job(R"("nvidia.com/mig-9g.99gb": 1)")));
  CHECK(inline_error.id() == "gpusched.catalog_error.403");
  CHECK(inline_error.where().field == "requests.nvidia.com/mig-9g.99gb");
  CHECK(inline_error.where().line == 1);
}

TEST_CASE("A MIG profile only other GPU models have is rejected under a gpu_model constraint", "[scenario][device-errors]") {
  // 3g.20gb exists on A100-40GB, not on the H100 the job is constrained to.
  const auto e = error_of<CatalogError>(node_doc(kH100.substr(0, kH100.size() - 2),
                                                 job(R"("nvidia.com/mig-3g.20gb": 1)", R"("gpu_model": "H100-80GB", )")));
  CHECK(e.id() == "gpusched.catalog_error.403");
  CHECK(e.where().field == "requests.nvidia.com/mig-3g.20gb");
  CHECK_THAT(e.detail(), Catch::Contains("H100-80GB"));
}

TEST_CASE("A job whose TPU topology its generation does not offer is a catalog error", "[scenario][device-errors]") {
  const auto e = error_of<CatalogError>(group_doc(
      kV4Pool, job(R"("google.com/tpu": 4, "cloud.google.com/gke-tpu-accelerator": "tpu-v5-lite-podslice", "cloud.google.com/gke-tpu-topology": "3x3")")));
  CHECK(e.id() == "gpusched.catalog_error.404");
  CHECK(e.where().field == "requests.cloud.google.com/gke-tpu-topology");
  CHECK_THAT(e.detail(), Catch::Contains("v5e") && Catch::Contains("3x3"));
  const auto a = error_of<CatalogError>(group_doc(
      kV4Pool, job(R"("google.com/tpu": 4, "cloud.google.com/gke-tpu-accelerator": "tpu-v9", "cloud.google.com/gke-tpu-topology": "2x2x4")")));
  CHECK(a.id() == "gpusched.catalog_error.401");
  CHECK(a.where().field == "requests.cloud.google.com/gke-tpu-accelerator");
}

TEST_CASE("A slice job whose tasks differ from the slice's hosts is rejected", "[scenario][device-errors]") {
  const std::string slice = R"("google.com/tpu": 4, "cloud.google.com/gke-tpu-accelerator": "tpu-v4-podslice", "cloud.google.com/gke-tpu-topology": "2x2x4")";
  auto e = error_of<TraceError>(group_doc(kV4Pool, job(slice, R"("tasks": 3, )")));
  CHECK(e.id() == "gpusched.trace_error.102");
  CHECK(e.where().field == "tasks");
  CHECK_THAT(e.detail(), Catch::Contains("4 hosts"));
  e = error_of<TraceError>(group_doc(kV4Pool, job(slice, R"("tasks": 4, "min_available": 2, )")));
  CHECK(e.where().field == "min_available");
  // Chips per task that do not divide the slice.
  const auto q = error_of<QuantityError>(group_doc(
      kV4Pool, job(R"("google.com/tpu": 3, "cloud.google.com/gke-tpu-accelerator": "tpu-v4-podslice", "cloud.google.com/gke-tpu-topology": "2x2x4")")));
  CHECK(q.id() == "gpusched.quantity_error.501");
  CHECK(q.where().field == "requests.google.com/tpu");
}

TEST_CASE("HAMi gpucores above 100 is rejected with its field", "[scenario][device-errors]") {
  const auto e = error_of<QuantityError>(
      node_doc(R"("gpus": 2, "gpu_model": "A100-80GB")", job(R"("nvidia.com/gpu": 1, "nvidia.com/gpucores": 101)")));
  CHECK(e.id() == "gpusched.quantity_error.501");
  CHECK(e.where().field == "requests.nvidia.com/gpucores");
  CHECK_THAT(e.detail(), Catch::Contains("0..100"));
}

TEST_CASE("Two MIG profiles, or a MIG and a vGPU profile, in one task are rejected", "[scenario][device-errors]") {
  auto e = error_of<QuantityError>(
      node_doc(kH100.substr(0, kH100.size() - 2), job(R"("nvidia.com/mig-1g.10gb": 1, "nvidia.com/mig-3g.40gb": 1)")));
  CHECK(e.id() == "gpusched.quantity_error.501");
  CHECK(e.where().field.rfind("requests.nvidia.com/mig-", 0) == 0);
  CHECK_THAT(e.detail(), Catch::Contains("one MIG or vGPU profile per task"));
  e = error_of<QuantityError>(
      node_doc(kH100.substr(0, kH100.size() - 2), job(R"("nvidia.com/mig-1g.10gb": 1, "nvidia.com/vgpu-H100-10C": 1)")));
  CHECK(e.id() == "gpusched.quantity_error.501");
  // A profile beside whole GPUs is a second way of asking.
  e = error_of<QuantityError>(node_doc(kH100.substr(0, kH100.size() - 2), job(R"("nvidia.com/gpu": 1, "nvidia.com/mig-1g.10gb": 1)")));
  CHECK(e.id() == "gpusched.quantity_error.501");
}

TEST_CASE("A malformed pci_passthrough alias is rejected with its field", "[scenario][device-errors]") {
  const std::string node = R"("gpus": 2, "gpu_model": "A100-80GB", "gpu_partition": {"mode": "passthrough"})";
  auto e = error_of<QuantityError>(node_doc(node, job(R"("pci_passthrough:alias": "GPU")")));
  CHECK(e.id() == "gpusched.quantity_error.501");
  CHECK(e.where().field == "requests.pci_passthrough:alias");
  e = error_of<QuantityError>(node_doc(node, job(R"("pci_passthrough:alias": "GPU:0")")));
  CHECK(e.where().field == "requests.pci_passthrough:alias");
  // An invented model (issue 15: B200, used here before, is now a catalog model).
  const auto c = error_of<CatalogError>(node_doc(node, job(R"("pci_passthrough:alias": "X9000-NOT-A-GPU:1")")));
  CHECK(c.id() == "gpusched.catalog_error.401");
  CHECK(c.where().field == "requests.pci_passthrough:alias");
}

// Issue 15: a model's vendor decides its resource name; a task asks for GPUs by one name.
TEST_CASE("Mixing amd.com/gpu with nvidia.com/gpu is an error naming the field", "[scenario][device-errors][vendor]") {
  const std::string node = R"("gpus": 8, "gpu_model": "MI300X")";
  auto e = error_of<QuantityError>(node_doc(node, job(R"("amd.com/gpu": 2, "nvidia.com/gpu": 1)")));
  CHECK(e.where().field == "requests.amd.com/gpu");
  CHECK_THAT(std::string(e.what()), Catch::Contains("nvidia.com/gpu"));
  e = error_of<QuantityError>(node_doc(node, job(R"("amd.com/gpu": 1, "nvidia.com/mig-1g.10gb": 1)")));
  CHECK(e.where().field == "requests.amd.com/gpu");
  // gpu_model naming only NVIDIA models leaves nothing an amd.com/gpu request may use.
  e = error_of<QuantityError>(node_doc(node, job(R"("amd.com/gpu": 1)", R"("gpu_model": ["A100-80GB"], )")));
  CHECK(e.where().field == "requests.amd.com/gpu");
  CHECK_THAT(std::string(e.what()), Catch::Contains("amd.com/gpu"));
}

// check_placeable() caches answers by request_class(), which must tell MIG profiles apart (a 7g
// must not inherit a 3g's "placeable").
TEST_CASE("A run whose MIG job no static layout can ever serve is rejected before it starts",
          "[scenario][device-errors]") {
  const std::string node = std::string(kH100) + R"("gpu_partition": {"mode": "mig", "layout": ["4g.40gb", "3g.40gb"]})";
  const auto sc = parse_scenario(std::string_view(node_doc(node, job(R"("nvidia.com/mig-3g.40gb": 1)") + "," +
                                                                     R"({"id": "whole", "submit_time": 1, "requests": {"cpu": "1", "nvidia.com/mig-7g.80gb": 1}})")),
                                 "bad.json", ".");
  try {
    (void)run(sc);
    FAIL("no exception");
  } catch (const TraceError& e) {
    CHECK(e.id() == "gpusched.trace_error.106");
    CHECK(e.where().line == 2);
    CHECK_THAT(e.detail(), Catch::Contains("\"whole\""));
  }
}

TEST_CASE("A bad mig_start argument is a profile error when the scenario loads", "[scenario][device-errors]") {
  const std::string text = R"({"schema_version": 1, "profile": {"device_select": {"name": "gpu-first-fit", "args": {"mig_start": "middle"}}},
      "cluster": {"nodes": [{"name": "n", "cpu": 4, "memory": "8Gi"}]}, "workload": {"jobs": []}})";
  const auto e = error_of<ProfileError>(text);
  CHECK(e.id() == "gpusched.profile_error.305");
  CHECK(e.where().field.rfind("/profile", 0) == 0);
  CHECK_THAT(e.where().field, Catch::Contains("mig_start"));
  CHECK_THAT(e.detail(), Catch::Contains("lowest"));
}
