// How devices change runtimes: time-slicing and MPS interference, vGPU and topology slowdowns,
// and the delay of creating a MIG instance. Each case is small enough to work out by hand.
#include <catch2/catch.hpp>

#include <map>
#include <string>

#include <gpusched/scenario/scenario.hpp>

using namespace gpusched;
using namespace gpusched::scenario;

namespace {

/// Runs `nodes` and `jobs` (JSON text) and returns job -> (start_s, end_s).
std::map<std::string, std::pair<double, double>> run_jobs(const std::string& nodes, const std::string& jobs,
                                                          const std::string& devices = "{}",
                                                          const std::string& profile = "\"first-fit\"") {
  const std::string doc = R"({"schema_version": 1, "cluster": {"nodes": )" + nodes + R"(}, "devices": )" + devices +
                          R"(, "profile": )" + profile + R"(, "workload": {"jobs": )" + jobs + "}}";
  const auto sc = parse_scenario(std::string_view(doc), "devices.json", ".");
  const auto result = run(sc);
  std::map<std::string, std::pair<double, double>> out;
  for (const auto& row : result.jobs()) {
    REQUIRE(row.state == "completed");
    out[row.job] = {*row.start_s, *row.end_s};
  }
  return out;
}

const std::string kTimeSliced2 =
    R"([{"name": "ts", "cpu": 16, "memory": "64Gi", "gpus": 1, "gpu_model": "A10",
         "gpu_partition": {"mode": "time-slicing", "replicas": 2}}])";

}  // namespace

TEST_CASE("Two full-demand jobs time-slicing one GPU each run at half speed", "[sim][devices]") {
  const auto r = run_jobs(kTimeSliced2, R"([
    {"id": "a", "submit_time": 0, "duration": 100, "requests": {"cpu": 1, "nvidia.com/gpu": 1}},
    {"id": "b", "submit_time": 0, "duration": 100, "requests": {"cpu": 1, "nvidia.com/gpu": 1}}])");
  CHECK(r.at("a").second == Approx(200.0));
  CHECK(r.at("b").second == Approx(200.0));
}

TEST_CASE("Context-switch overhead slows time-sliced sharers further, but not a job alone", "[sim][devices]") {
  const auto r = run_jobs(kTimeSliced2, R"([
    {"id": "a", "submit_time": 0, "duration": 100, "requests": {"cpu": 1, "nvidia.com/gpu": 1}},
    {"id": "b", "submit_time": 0, "duration": 100, "requests": {"cpu": 1, "nvidia.com/gpu": 1}},
    {"id": "alone", "submit_time": 1000, "duration": 100, "requests": {"cpu": 1, "nvidia.com/gpu": 1}}])",
                          R"({"time_slicing_overhead": 0.25})");
  CHECK(r.at("a").second == Approx(250.0));   // rate 0.5 / 1.25 = 0.4
  CHECK(r.at("alone").second == Approx(1100.0));
}

TEST_CASE("When a sharer leaves, the one that stays speeds up for the rest of its work", "[sim][devices]") {
  const auto r = run_jobs(kTimeSliced2, R"([
    {"id": "short", "submit_time": 0, "duration": 100, "requests": {"cpu": 1, "nvidia.com/gpu": 1}},
    {"id": "long", "submit_time": 0, "duration": 300, "requests": {"cpu": 1, "nvidia.com/gpu": 1}}])");
  CHECK(r.at("short").second == Approx(200.0));   // 100 s of work at half speed
  CHECK(r.at("long").second == Approx(400.0));    // 100 done by t=200, 200 left at full speed
}

TEST_CASE("Light sharers do not slow each other when their demand fits the GPU", "[sim][devices]") {
  const auto r = run_jobs(kTimeSliced2, R"([
    {"id": "a", "submit_time": 0, "duration": 100, "gpu_util": 0.4, "requests": {"cpu": 1, "nvidia.com/gpu": 1}},
    {"id": "b", "submit_time": 0, "duration": 100, "gpu_util": 0.5, "requests": {"cpu": 1, "nvidia.com/gpu": 1}}])");
  CHECK(r.at("a").second == Approx(100.0));
  CHECK(r.at("b").second == Approx(100.0));
}

TEST_CASE("An MPS client is bounded by its 1/replicas share of the SMs even alone", "[sim][devices]") {
  const std::string mps = R"([{"name": "m", "cpu": 16, "memory": "64Gi", "gpus": 1, "gpu_model": "A10",
                               "gpu_partition": {"mode": "mps", "replicas": 2}}])";
  const auto r = run_jobs(mps, R"([
    {"id": "heavy", "submit_time": 0, "duration": 100, "requests": {"cpu": 1, "nvidia.com/gpu": 1}},
    {"id": "light", "submit_time": 1000, "duration": 100, "gpu_util": 0.5, "requests": {"cpu": 1, "nvidia.com/gpu": 1}}])");
  CHECK(r.at("heavy").second == Approx(200.0));   // 1/2 of the SMs for a job that wants all
  CHECK(r.at("light").second == Approx(1100.0));  // wants half: its share is enough
}

TEST_CASE("A vGPU stretches the runtime by the configured factor, bare metal does not", "[sim][devices]") {
  const std::string nodes = R"([
    {"name": "v", "cpu": 16, "memory": "64Gi", "gpus": 1, "gpu_model": "A100-40GB", "gpu_partition": {"mode": "vgpu"}},
    {"name": "b", "cpu": 16, "memory": "64Gi", "gpus": 1, "gpu_model": "A100-40GB"}])";
  const auto r = run_jobs(nodes, R"([
    {"id": "vm", "submit_time": 0, "duration": 100, "requests": {"cpu": 1, "nvidia.com/vgpu-A100-10C": 1}},
    {"id": "pod", "submit_time": 0, "duration": 100, "requests": {"cpu": 1, "nvidia.com/gpu": 1}}])",
                          R"({"slowdown": {"vgpu": 1.05}})");
  CHECK(r.at("vm").second == Approx(105.0));
  CHECK(r.at("pod").second == Approx(100.0));
}

TEST_CASE("A 4-GPU task across two PCIe sockets runs slower than on an NVSwitch board", "[sim][devices]") {
  const std::string nodes = R"([
    {"name": "hgx", "cpu": 64, "memory": "512Gi", "gpus": 8, "gpu_model": "H100-80GB", "sockets": 2,
     "topology": {"nvlink": "nvswitch"}},
    {"name": "pcie", "cpu": 64, "memory": "512Gi", "gpus": 4, "gpu_model": "A100-80GB", "sockets": 2,
     "topology": {"nvlink": "none", "gpus_per_pcie_switch": 2}}])";
  const auto r = run_jobs(nodes, R"([
    {"id": "on-hgx", "submit_time": 0, "duration": 100, "gpu_model": "H100-80GB", "requests": {"cpu": 4, "nvidia.com/gpu": 4}},
    {"id": "on-pcie", "submit_time": 0, "duration": 100, "gpu_model": "A100-80GB", "requests": {"cpu": 4, "nvidia.com/gpu": 4}},
    {"id": "pair", "submit_time": 200, "duration": 100, "gpu_model": "A100-80GB", "requests": {"cpu": 4, "nvidia.com/gpu": 2}}])",
                          R"({"slowdown": {"pcie": 1.2, "cross_socket": 1.5}})");
  CHECK(r.at("on-hgx").second == Approx(100.0));
  CHECK(r.at("on-pcie").second == Approx(150.0));
  CHECK(r.at("pair").second == Approx(200.0 + 120.0));   // GPUs 0-1 share a PCIe switch on socket 0
}

TEST_CASE("A task on a newly created MIG instance starts after the reconfiguration delay, reuse has none", "[sim][devices]") {
  const std::string nodes = R"([{"name": "h", "cpu": 16, "memory": "64Gi", "gpus": 1, "gpu_model": "H100-80GB",
                                 "gpu_partition": {"mode": "mig", "dynamic": true}}])";
  const auto r = run_jobs(nodes, R"([
    {"id": "first", "submit_time": 0, "duration": 100, "requests": {"cpu": 1, "nvidia.com/mig-3g.40gb": 1}},
    {"id": "again", "submit_time": 500, "duration": 100, "requests": {"cpu": 1, "nvidia.com/mig-3g.40gb": 1}}])",
                          R"({"mig_reconfigure_s": 5})");
  CHECK(r.at("first").first == Approx(5.0));
  CHECK(r.at("first").second == Approx(105.0));
  CHECK(r.at("again").first == Approx(500.0));   // the idle 3g GI is still there
  CHECK(r.at("again").second == Approx(600.0));
}
