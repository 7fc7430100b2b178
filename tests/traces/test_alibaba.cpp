// The Alibaba trace importers (openb 2023, PAI 2020, spot-GPU 2026, DLRM 2025): the real files
// when present, hand-written fixtures for the mappings, errors with file, line and column, and a
// round trip through the native trace format.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <gpusched/cluster.hpp>
#include <gpusched/traces/alibaba.hpp>
#include <gpusched/traces/native.hpp>

#include "support/support.hpp"

using namespace gpusched;
using namespace gpusched::traces;
namespace t = gpusched::test;
using Catch::Matchers::Contains;

namespace {

/// The data rows of a real trace file, split on ',' (these files carry no quoting).
std::vector<std::vector<std::string>> data_rows(const std::filesystem::path& p, bool has_header = true) {
  std::ifstream in(p);
  std::vector<std::vector<std::string>> rows;
  std::string line;
  bool first = has_header;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    if (first) {
      first = false;
      continue;
    }
    std::vector<std::string> fields;
    std::size_t start = 0;
    while (true) {
      const auto comma = line.find(',', start);
      fields.push_back(line.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    rows.push_back(std::move(fields));
  }
  return rows;
}

template <class Reader>
auto read_file(const std::filesystem::path& p, GpuCatalog& catalog, ResourceTable& resources, Reader reader) {
  std::ifstream in(p);
  REQUIRE(in);
  return reader(in, p.filename().string(), catalog, resources);
}

std::map<std::string, int> nodes_per_model(const std::vector<NodeSpec>& nodes, const GpuCatalog& catalog) {
  std::map<std::string, int> out;
  for (const auto& n : nodes) out[n.gpus.empty() ? "CPU" : catalog[n.gpus[0].model].name]++;
  return out;
}

std::int64_t gpu_count(const std::vector<NodeSpec>& nodes) {
  std::int64_t total = 0;
  for (const auto& n : nodes) total += static_cast<std::int64_t>(n.gpus.size());
  return total;
}

Workload pods_from(const std::string& text, GpuCatalog& catalog, ResourceTable& resources) {
  std::istringstream in(text);
  return read_openb_pods(in, "pods.csv", catalog, resources);
}

Workload pods_from(const std::string& text) {
  GpuCatalog catalog = GpuCatalog::builtin();
  ResourceTable resources;
  return pods_from(text, catalog, resources);
}

/// Runs `fn`, which must throw a TraceError of `code` whose message names `where` ("file:line:")
/// and the column `field`.
void expect_error(const std::function<void()>& fn, ErrorCode code, const std::string& where, const std::string& field) {
  try {
    fn();
  } catch (const TraceError& e) {
    INFO(e.what());
    CHECK(e.code() == code);
    CHECK_THAT(e.what(), Contains(where));
    if (!field.empty()) {
      CHECK_THAT(e.what(), Contains("field '" + field + "'"));
      CHECK(e.where().field == field);
    }
    return;
  }
  FAIL("no TraceError was thrown (expected " << where << " " << field << ")");
}

const std::string kPodHeader =
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n";


/// Writes `jobs` as a native trace in `format` and reads it back, in the same order.
void check_round_trip(const Workload& jobs, const GpuCatalog& catalog, const ResourceTable& resources, TraceFormat format) {
  std::stringstream buf;
  write_trace(buf, format, jobs, catalog, resources);
  ResourceTable back_resources = resources;
  const auto back = read_trace(buf, format, "roundtrip", catalog, back_resources);
  Workload sorted = jobs;
  std::stable_sort(sorted.begin(), sorted.end(), [](const JobSpec& a, const JobSpec& b) { return a.submit < b.submit; });
  t::check_same_jobs(sorted, back);
}

}  // namespace

// ------------------------------------------------------------------------------------ catalog

TEST_CASE("Undisclosed Alibaba GPU models are added once as opaque models", "[traces][alibaba]") {
  GpuCatalog catalog = GpuCatalog::builtin();
  const auto before = catalog.size();
  add_undisclosed_alibaba_models(catalog);
  add_undisclosed_alibaba_models(catalog);
  CHECK(catalog.size() == before + 5);
  for (const char* name : {"G2", "G3", "GPU-series-1", "GPU-series-2", "MISC"}) {
    INFO(name);
    const auto id = catalog.find(name);
    REQUIRE(id.has_value());
    CHECK(catalog[*id].memory_mib == kUndisclosedGpuMemoryMib);
    CHECK(catalog[*id].vendor == kUndisclosedVendor);
    CHECK_FALSE(catalog[*id].mig_capable);
  }
}

TEST_CASE("A model described before the import is kept as it is", "[traces][alibaba]") {
  GpuCatalog catalog = GpuCatalog::builtin();
  GpuModel g2;
  g2.name = "G2";
  g2.memory_mib = 81920;
  g2.sms = 108;
  catalog.add(g2);
  const auto before = catalog.size();
  add_undisclosed_alibaba_models(catalog);
  CHECK(catalog.size() == before + 4);
  CHECK(catalog[*catalog.find("G2")].memory_mib == 81920);
}

// ------------------------------------------------------------------------------- openb nodes

TEST_CASE("The openb GPU node list has 1213 nodes with 6212 GPUs of 7 models", "[traces][alibaba][real]") {
  const auto path = t::real_trace("alibaba-gpu-v2023-openb/openb_node_list_gpu_node.csv");
  if (path.empty()) return;
  GpuCatalog catalog = GpuCatalog::builtin();
  ResourceTable resources;
  const auto nodes = read_file(path, catalog, resources, read_openb_nodes);
  CHECK(nodes.size() == 1213);
  CHECK(gpu_count(nodes) == 6212);
  const std::map<std::string, int> expected = {{"G2", 549},       {"T4", 404},        {"P100", 134}, {"V100-16GB", 55},
                                               {"G3", 39},        {"V100-32GB", 30},  {"A10", 2}};
  CHECK(nodes_per_model(nodes, catalog) == expected);
  // Independent sums from the file itself.
  std::int64_t cpu = 0, mem = 0;
  for (const auto& r : data_rows(path)) {
    cpu += std::stoll(r[1]);
    mem += std::stoll(r[2]);
  }
  std::int64_t got_cpu = 0, got_mem = 0;
  for (const auto& n : nodes) {
    got_cpu += n.cpu_milli;
    got_mem += n.memory_mib;
    CHECK(n.labels.at(std::string(kGpuModelLabel)) == catalog[n.gpus.at(0).model].name);
  }
  CHECK(got_cpu == cpu);
  CHECK(got_mem == mem);
  CHECK(nodes[0].name == "openb-node-0000");
  CHECK(nodes[0].cpu_milli == 64000);
  CHECK(nodes[0].memory_mib == 262144);
}

TEST_CASE("The openb all-node list adds 310 CPU-only nodes", "[traces][alibaba][real]") {
  const auto path = t::real_trace("alibaba-gpu-v2023-openb/openb_node_list_all_node.csv");
  if (path.empty()) return;
  GpuCatalog catalog = GpuCatalog::builtin();
  ResourceTable resources;
  const auto nodes = read_file(path, catalog, resources, read_openb_nodes);
  CHECK(nodes.size() == 1523);
  CHECK(gpu_count(nodes) == 6212);
  const auto per_model = nodes_per_model(nodes, catalog);
  CHECK(per_model.at("CPU") == 310);
  for (const auto& n : nodes) {
    if (n.gpus.empty()) CHECK(n.labels.empty());
  }
}

TEST_CASE("An openb node list fixture maps columns to node fields", "[traces][alibaba]") {
  GpuCatalog catalog = GpuCatalog::builtin();
  ResourceTable resources;
  std::istringstream in(
      "sn,cpu_milli,memory_mib,gpu,model\n"
      "n0,96000,393216,8,G2\n"
      "n1,32000,131072,0,\n"
      "n2,8000,32768,1,v100m16\n");
  const auto nodes = read_openb_nodes(in, "nodes.csv", catalog, resources);
  REQUIRE(nodes.size() == 3);
  CHECK(nodes[0].name == "n0");
  CHECK(nodes[0].cpu_milli == 96000);
  CHECK(nodes[0].memory_mib == 393216);
  REQUIRE(nodes[0].gpus.size() == 8);
  CHECK(catalog[nodes[0].gpus[7].model].name == "G2");
  CHECK(nodes[0].gpus[0].partition == GpuPartition::kWhole);
  CHECK(nodes[0].labels.at("gpusched.io/gpu-model") == "G2");
  CHECK(nodes[1].gpus.empty());
  CHECK(catalog[nodes[2].gpus[0].model].name == "V100-16GB");
  // The nodes build a cluster.
  ClusterState cluster(catalog, resources, nodes);
  CHECK(cluster.node_count() == 3);
}

// -------------------------------------------------------------------------------- openb pods

TEST_CASE("The default openb pod list has the published mix of pods", "[traces][alibaba][real]") {
  const auto path = t::real_trace("alibaba-gpu-v2023-openb/openb_pod_list_default.csv");
  if (path.empty()) return;
  GpuCatalog catalog = GpuCatalog::builtin();
  ResourceTable resources;
  const auto pods = read_file(path, catalog, resources, read_openb_pods);
  REQUIRE(pods.size() == 8152);
  // Count the mix from the file itself.
  const auto rows = data_rows(path);
  REQUIRE(rows.size() == 8152);
  int file_fractional = 0;
  std::int64_t file_milli = 0;
  for (const auto& r : rows) {
    const auto n = std::stoll(r[3]), m = std::stoll(r[4]);
    if (n == 1 && m < 1000) ++file_fractional;
    file_milli += n <= 1 ? m : n * 1000;
  }
  CHECK(file_fractional == 3078);
  int cpu_only = 0, one_gpu = 0, fractional = 0, multi = 0;
  std::int64_t milli = 0;
  std::map<std::string, int> queues;
  for (const auto& p : pods) {
    const auto& g = p.request.gpu;
    if (g.mode == GpuMode::kNone) ++cpu_only;
    if (g.count == 1) ++one_gpu;
    if (g.mode == GpuMode::kShared) ++fractional;
    if (g.count > 1) ++multi;
    milli += g.total_milli();
    queues[p.queue]++;
    CHECK(p.tasks == 1);
  }
  CHECK(cpu_only == 1088);
  CHECK(one_gpu == 6989);
  CHECK(fractional == file_fractional);
  CHECK(multi == 75);
  CHECK(milli == file_milli);
  CHECK(queues == std::map<std::string, int>{{"BE", 3398}, {"Burstable", 100}, {"Guaranteed", 7}, {"LS", 4647}});
  // File order, names as written, times in seconds.
  CHECK(pods[1].name == "openb-pod-0001");
  CHECK(pods[1].request.cpu_milli == 6000);
  CHECK(pods[1].request.memory_mib == 12288);
  CHECK(pods[1].request.gpu.milli == 460);
  CHECK(pods[1].submit == SimTime::from_seconds(427061));
  CHECK(pods[1].duration == SimTime::from_seconds(12902960 - 427061));
  // Pending pods (no scheduled_time) never finish.
  const auto pending = std::count_if(pods.begin(), pods.end(), [](const JobSpec& j) { return j.duration.is_forever(); });
  CHECK(pending == 897);
}

TEST_CASE("Every openb pod list and variant reads one job per data line", "[traces][alibaba][real]") {
  const auto path = t::real_trace("alibaba-gpu-v2023-openb/openb_pod_list_default.csv");
  if (path.empty()) return;
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(path.parent_path())) {
    const auto name = entry.path().filename().string();
    if (name.rfind("openb_pod_list_", 0) != 0 || entry.path().extension() != ".csv") continue;
    ++files;
    INFO(name);
    GpuCatalog catalog = GpuCatalog::builtin();
    ResourceTable resources;
    const auto pods = read_file(entry.path(), catalog, resources, read_openb_pods);
    const auto rows = data_rows(entry.path());
    CHECK(pods.size() == rows.size());
    std::int64_t gpus = 0, file_gpus = 0, models = 0, file_models = 0;
    for (const auto& r : rows) {
      file_gpus += std::stoll(r[3]);
      if (r.size() > 5 && !r[5].empty()) ++file_models;
    }
    for (const auto& p : pods) {
      gpus += p.request.gpu.count;
      if (p.request.allowed_models.any()) ++models;
    }
    CHECK(gpus == file_gpus);
    CHECK(models == file_models);
    if (name.rfind("openb_pod_list_multigpu", 0) == 0) {
      // Five columns: no times, no qos.
      CHECK(std::all_of(pods.begin(), pods.end(), [](const JobSpec& j) {
        return j.submit == SimTime::zero() && j.duration.is_forever() && j.queue == "default";
      }));
    }
  }
  CHECK(files == 24);   // the default list and its 23 variants
}

TEST_CASE("Every default openb pod fits some node of the openb GPU cluster", "[traces][alibaba][real]") {
  const auto nodes_path = t::real_trace("alibaba-gpu-v2023-openb/openb_node_list_gpu_node.csv");
  const auto pods_path = t::real_trace("alibaba-gpu-v2023-openb/openb_pod_list_default.csv");
  const auto spec_path = t::real_trace("alibaba-gpu-v2023-openb/openb_pod_list_gpuspec33.csv");
  if (nodes_path.empty() || pods_path.empty() || spec_path.empty()) return;
  GpuCatalog catalog = GpuCatalog::builtin();
  ResourceTable resources;
  auto nodes = read_file(nodes_path, catalog, resources, read_openb_nodes);
  const auto pods = read_file(pods_path, catalog, resources, read_openb_pods);
  const auto spec_pods = read_file(spec_path, catalog, resources, read_openb_pods);
  ClusterState cluster(catalog, resources, std::move(nodes));
  CHECK_NOTHROW(check_placeable(pods, cluster, pods_path.filename().string()));
  // The gpuspec33 variant pins one 120-core pod to G2, whose nodes have 96 cores (line 1641).
  CHECK_THROWS_WITH(check_placeable(spec_pods, cluster, spec_path.filename().string()),
                    Contains("openb_pod_list_gpuspec33.csv:1641:") && Contains("openb-pod-1639"));
}

TEST_CASE("An openb pod fixture maps GPU counts, shares, models, queues and times", "[traces][alibaba]") {
  GpuCatalog catalog = GpuCatalog::builtin();
  ResourceTable resources;
  const auto pods = pods_from(kPodHeader +
                                  "cpu,4000,8192,0,0,,BE,Running,0,100,5\n"
                                  "share,6000,12288,1,460,,LS,Running,10,500,20\n"
                                  "whole,12000,24576,1,1000,G3,,Failed,30,40,35\n"
                                  "eight,64000,262144,8,1000,V100M16|V100M32|V100M32,Burstable,Pending,50,60,\n"
                                  "spec,1000,1024,1,250,A10 | t4,LS,Running,,,\n",
                              catalog, resources);
  REQUIRE(pods.size() == 5);
  CHECK(pods[0].request.gpu.mode == GpuMode::kNone);
  CHECK(pods[0].request.cpu_milli == 4000);
  CHECK(pods[0].request.memory_mib == 8192);
  CHECK(pods[0].queue == "BE");
  CHECK(pods[0].submit == SimTime::zero());
  CHECK(pods[0].duration == SimTime::from_seconds(95));
  CHECK(pods[0].source_line == 2);

  CHECK(pods[1].request.gpu.mode == GpuMode::kShared);
  CHECK(pods[1].request.gpu.count == 1);
  CHECK(pods[1].request.gpu.milli == 460);
  CHECK(pods[1].request.gpu.memory_mib == 0);
  CHECK(pods[1].submit == SimTime::from_seconds(10));
  CHECK(pods[1].duration == SimTime::from_seconds(480));

  CHECK(pods[2].request.gpu.mode == GpuMode::kWhole);
  CHECK(pods[2].request.gpu.count == 1);
  CHECK(pods[2].queue == "default");
  CHECK(pods[2].request.allowed_models.count() == 1);
  CHECK(pods[2].request.allowed_models.test(catalog.find("G3")->value));

  CHECK(pods[3].request.gpu.mode == GpuMode::kWhole);
  CHECK(pods[3].request.gpu.count == 8);
  CHECK(pods[3].request.allowed_models.count() == 2);
  CHECK(pods[3].request.allowed_models.test(catalog.find("V100-16GB")->value));
  CHECK(pods[3].request.allowed_models.test(catalog.find("V100-32GB")->value));
  CHECK(pods[3].duration.is_forever());   // Pending: never scheduled

  CHECK(pods[4].request.allowed_models.count() == 2);
  CHECK(pods[4].request.allowed_models.test(catalog.find("T4")->value));
  CHECK(pods[4].submit == SimTime::zero());
  CHECK(pods[4].duration.is_forever());
}

TEST_CASE("openb pods keep file order even when creation times go backwards", "[traces][alibaba]") {
  const auto pods = pods_from(kPodHeader +
                              "late,1000,1024,0,0,,LS,Running,500,600,500\n"
                              "early,1000,1024,0,0,,LS,Running,100,600,100\n");
  REQUIRE(pods.size() == 2);
  CHECK(pods[0].name == "late");
  CHECK(pods[1].name == "early");
}

TEST_CASE("The five-column openb variant reads without times or queues", "[traces][alibaba]") {
  const auto pods = pods_from(
      "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n"
      "a,12000,16384,1,1000\n"
      "b,6000,12288,1,460\n"
      "c,88000,327680,4,1000\n");
  REQUIRE(pods.size() == 3);
  CHECK(pods[0].request.gpu.mode == GpuMode::kWhole);
  CHECK(pods[1].request.gpu.mode == GpuMode::kShared);
  CHECK(pods[2].request.gpu.count == 4);
  for (const auto& p : pods) {
    CHECK(p.submit == SimTime::zero());
    CHECK(p.duration.is_forever());
    CHECK(p.queue == "default");
  }
}

// --------------------------------------------------------------------------- openb errors

TEST_CASE("Bad openb pod rows name the file, line and column", "[traces][alibaba][errors]") {
  auto pods = [](const std::string& rows) { return [rows] { (void)pods_from(kPodHeader + rows); }; };
  const std::string ok = "ok,1000,1024,1,1000,,LS,Running,0,10,0\n";
  SECTION("gpu_milli above one GPU") {
    expect_error(pods(ok + "bad,1000,1024,1,1500,,LS,Running,0,10,0\n"), ErrorCode::kTraceOutOfRange, "pods.csv:3:", "gpu_milli");
  }
  SECTION("a share of one GPU with two GPUs") {
    expect_error(pods(ok + "bad,1000,1024,2,500,,LS,Running,0,10,0\n"), ErrorCode::kTraceBadValue, "pods.csv:3:", "gpu_milli");
  }
  SECTION("a GPU share on a CPU-only pod") {
    expect_error(pods(ok + "bad,1000,1024,0,200,,LS,Running,0,10,0\n"), ErrorCode::kTraceBadValue,
                 "pods.csv:3:", "gpu_milli");
  }
  SECTION("one GPU with no share") {
    expect_error(pods("bad,1000,1024,1,0,,LS,Running,0,10,0\n"), ErrorCode::kTraceOutOfRange, "pods.csv:2:", "gpu_milli");
  }
  SECTION("an unknown model in gpu_spec") {
    expect_error(pods(ok + "x,1000,1024,1,1000,T4|B200X,LS,Running,0,10,0\n"),
                 ErrorCode::kTraceUnknownGpuModel, "pods.csv:3:", "gpu_spec");
  }
  SECTION("a model constraint on a CPU-only pod") {
    expect_error(pods("x,1000,1024,0,0,T4,LS,Running,0,10,0\n"), ErrorCode::kTraceBadValue, "pods.csv:2:", "gpu_spec");
  }
  SECTION("a negative CPU request") {
    expect_error(pods(ok + "bad,-1000,1024,1,1000,,LS,Running,0,10,0\n"), ErrorCode::kTraceNegativeRequest, "pods.csv:3:",
                 "cpu_milli");
  }
  SECTION("memory that is not a number") {
    expect_error(pods(ok + "bad,1000,lots,1,1000,,LS,Running,0,10,0\n"), ErrorCode::kTraceBadValue, "pods.csv:3:", "memory_mib");
  }
  SECTION("a fractional GPU count") {
    expect_error(pods("bad,1000,1024,1.5,1000,,LS,Running,0,10,0\n"), ErrorCode::kTraceBadValue, "pods.csv:2:", "num_gpu");
  }
  SECTION("a deletion before the pod was scheduled") {
    expect_error(pods("bad,1000,1024,1,1000,,LS,Running,0,10,20\n"), ErrorCode::kTraceBadValue, "pods.csv:2:", "deletion_time");
  }
  SECTION("a time that is not a number") {
    expect_error(pods("bad,1000,1024,1,1000,,LS,Running,soon,10,0\n"), ErrorCode::kTraceBadValue, "pods.csv:2:", "creation_time");
  }
  SECTION("the same pod name twice") {
    expect_error(pods(ok + "x,1,1,0,0,,LS,Running,0,10,0\n" + ok), ErrorCode::kTraceDuplicateId, "pods.csv:4:", "name");
  }
  SECTION("a row with too few fields") {
    expect_error(pods(ok + "bad,1000,1024\n"), ErrorCode::kTraceBadValue, "pods.csv:3:", "");
  }
}

TEST_CASE("A pod list without num_gpu is rejected naming the column", "[traces][alibaba][errors]") {
  expect_error([] { (void)pods_from("name,cpu_milli,memory_mib,gpu_milli\na,1,1,0\n"); }, ErrorCode::kTraceMissingColumn,
               "pods.csv:1:", "num_gpu");
}

TEST_CASE("Bad openb node rows name the file, line and column", "[traces][alibaba][errors]") {
  auto nodes = [](const std::string& rows) {
    return [rows] {
      GpuCatalog catalog = GpuCatalog::builtin();
      ResourceTable resources;
      std::istringstream in("sn,cpu_milli,memory_mib,gpu,model\nn0,1000,1024,2,T4\n" + rows);
      (void)read_openb_nodes(in, "nodes.csv", catalog, resources);
    };
  };
  expect_error(nodes("n1,1000,1024,2,Z9000\n"), ErrorCode::kTraceUnknownGpuModel, "nodes.csv:3:", "model");
  expect_error(nodes("n1,1000,1024,2,\n"), ErrorCode::kTraceBadValue, "nodes.csv:3:", "model");
  expect_error(nodes("n1,-1000,1024,2,T4\n"), ErrorCode::kTraceOutOfRange, "nodes.csv:3:", "cpu_milli");
  expect_error(nodes("n1,1000,1024,two,T4\n"), ErrorCode::kTraceBadValue, "nodes.csv:3:", "gpu");
  expect_error(nodes("n0,1000,1024,2,T4\n"), ErrorCode::kTraceDuplicateId, "nodes.csv:3:", "sn");
}

// -------------------------------------------------------------------------------- round trip

TEST_CASE("An imported openb workload survives a native trace round trip", "[traces][alibaba]") {
  GpuCatalog catalog = GpuCatalog::builtin();
  ResourceTable resources;
  const auto pods = pods_from(kPodHeader +
                                  "cpu,4000,8192,0,0,,BE,Running,0,100,5\n"
                                  "share,6000,12288,1,460,G2|T4,LS,Running,10,500,20\n"
                                  "whole,12000,24576,1,1000,G3,,Failed,30,40,35\n"
                                  "eight,64000,262144,8,1000,V100M16|V100M32,Burstable,Pending,50,60,\n",
                              catalog, resources);
  check_round_trip(pods, catalog, resources, TraceFormat::kCsv);
  check_round_trip(pods, catalog, resources, TraceFormat::kJsonLines);
}

TEST_CASE("The real openb gpuspec33 pod list survives a native trace round trip", "[traces][alibaba][real]") {
  const auto path = t::real_trace("alibaba-gpu-v2023-openb/openb_pod_list_gpuspec33.csv");
  if (path.empty()) return;
  GpuCatalog catalog = GpuCatalog::builtin();
  ResourceTable resources;
  const auto pods = read_file(path, catalog, resources, read_openb_pods);
  REQUIRE(pods.size() == 8152);
  check_round_trip(pods, catalog, resources, TraceFormat::kCsv);
}

// ------------------------------------------------------------------------------------- PAI

TEST_CASE("The PAI machine list has 1897 machines with 6742 GPUs", "[traces][alibaba][real]") {
  const auto path = t::real_trace("alibaba-gpu-v2020-pai/pai_machine_spec.csv");
  if (path.empty()) return;
  GpuCatalog catalog = GpuCatalog::builtin();
  ResourceTable resources;
  const auto nodes = read_file(path, catalog, resources, read_pai_machines);
  const auto rows = data_rows(path, false);
  // The data README says 1,896 machines; the published file holds 1,897 distinct ones.
  CHECK(nodes.size() == rows.size());
  CHECK(nodes.size() == 1897);
  CHECK(gpu_count(nodes) == 6742);
  const std::map<std::string, int> expected = {{"CPU", 83},        {"MISC", 280},      {"P100", 798},
                                               {"T4", 497},        {"V100-16GB", 104}, {"V100-32GB", 135}};
  CHECK(nodes_per_model(nodes, catalog) == expected);
  std::int64_t cores = 0, gib = 0;
  for (const auto& r : rows) {
    cores += std::stoll(r[2]);
    gib += std::stoll(r[3]);
  }
  std::int64_t cpu_milli = 0, mib = 0;
  for (const auto& n : nodes) {
    cpu_milli += n.cpu_milli;
    mib += n.memory_mib;
  }
  CHECK(cpu_milli == cores * 1000);
  CHECK(mib == gib * 1024);
}

TEST_CASE("A PAI machine list reads the same with or without a header row", "[traces][alibaba]") {
  const std::string rows =
      "m0,CPU,96,512,0\n"
      "m1,V100,96,384,8\n"
      "m2,MISC,96,512,8\n"
      "m3,T4,96,512,2\n";
  GpuCatalog catalog = GpuCatalog::builtin();
  ResourceTable resources;
  std::istringstream bare(rows), headed("machine,gpu_type,cap_cpu,cap_mem,cap_gpu\n" + rows);
  const auto a = read_pai_machines(bare, "pai.csv", catalog, resources);
  const auto b = read_pai_machines(headed, "pai.csv", catalog, resources);
  REQUIRE(a.size() == 4);
  REQUIRE(b.size() == 4);
  for (std::size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].name == b[i].name);
    CHECK(a[i].cpu_milli == b[i].cpu_milli);
    CHECK(a[i].memory_mib == b[i].memory_mib);
    CHECK(a[i].gpus.size() == b[i].gpus.size());
    CHECK(a[i].labels == b[i].labels);
  }
  CHECK(a[0].gpus.empty());
  CHECK(a[0].cpu_milli == 96000);
  CHECK(a[0].memory_mib == 512 * 1024);
  CHECK(a[1].labels.at("gpusched.io/gpu-model") == "V100-16GB");
  CHECK(a[2].labels.at("gpusched.io/gpu-model") == "MISC");
}

TEST_CASE("Errors in a headerless PAI list give the file's own line numbers", "[traces][alibaba][errors]") {
  auto pai = [](const std::string& text) {
    return [text] {
      GpuCatalog catalog = GpuCatalog::builtin();
      ResourceTable resources;
      std::istringstream in(text);
      (void)read_pai_machines(in, "pai.csv", catalog, resources);
    };
  };
  expect_error(pai("m0,CPU,96,512,0\nm1,CPU,96,512,2\n"), ErrorCode::kTraceBadValue, "pai.csv:2:", "cap_gpu");
  expect_error(pai("m0,CPU,96,512,0\nm1,H9,96,512,2\n"), ErrorCode::kTraceUnknownGpuModel, "pai.csv:2:", "gpu_type");
  expect_error(pai("m0,CPU,96,512,0\nm1,T4,-96,512,2\n"), ErrorCode::kTraceOutOfRange, "pai.csv:2:", "cap_cpu");
  expect_error(pai("m0,CPU,96,512,0\nm1,T4,96,512\n"), ErrorCode::kTraceBadValue, "pai.csv:2:", "");
  expect_error(pai("machine,gpu_type,cap_cpu,cap_mem,cap_gpu\nm0,CPU,96,512,0\nm1,T4,96,x,2\n"), ErrorCode::kTraceBadValue,
               "pai.csv:3:", "cap_mem");
}

// ------------------------------------------------------------------------------------ spot

TEST_CASE("The spot-GPU node list has 4278 nodes with 10412 GPUs", "[traces][alibaba][real]") {
  const auto path = t::real_trace("alibaba-v2026-spot-gpu/node_info_df.csv");
  if (path.empty()) return;
  GpuCatalog catalog = GpuCatalog::builtin();
  ResourceTable resources;
  const auto nodes = read_file(path, catalog, resources,
                               [](std::istream& in, const std::string& source, GpuCatalog& c, ResourceTable& r) {
                                 return read_spot_nodes(in, source, c, r);
                               });
  CHECK(nodes.size() == 4278);
  CHECK(gpu_count(nodes) == 10412);
  // Issue 15: H800 and A800-SXM4-80GB are catalog models of their own now (were counted as H100-80GB and
  // A100-80GB: 219 H800 nodes, 432 + 22 A100/A800 nodes).
  const std::map<std::string, int> expected = {{"A10", 2494},          {"A100-80GB", 432},    {"A800-80GB", 22},
                                               {"H800", 219},          {"GPU-series-1", 989}, {"GPU-series-2", 122}};
  CHECK(nodes_per_model(nodes, catalog) == expected);
  std::int64_t cores = 0;
  for (const auto& r : data_rows(path)) cores += std::stoll(r[2]);
  std::int64_t cpu_milli = 0;
  for (const auto& n : nodes) {
    cpu_milli += n.cpu_milli;
    CHECK(n.memory_mib == n.cpu_milli / 1000 * kSpotMemoryMibPerCore);
  }
  CHECK(cpu_milli == cores * 1000);
}

TEST_CASE("A spot node fixture maps columns and the memory assumption", "[traces][alibaba]") {
  GpuCatalog catalog = GpuCatalog::builtin();
  ResourceTable resources;
  const std::string text =
      "gpu_model,gpu_capacity_num,cpu_num,node_name\n"
      "GPU-series-2,8,192,0\n"
      "H800,8,192,1\n";
  std::istringstream a(text), b(text);
  const auto nodes = read_spot_nodes(a, "spot.csv", catalog, resources);
  REQUIRE(nodes.size() == 2);
  CHECK(nodes[0].name == "0");
  CHECK(nodes[0].cpu_milli == 192000);
  CHECK(nodes[0].memory_mib == 192 * 8 * 1024);
  CHECK(nodes[0].labels.at("gpusched.io/gpu-model") == "GPU-series-2");
  CHECK(nodes[1].labels.at("gpusched.io/gpu-model") == "H800");   // its own model since issue 15 (was H100-80GB)
  const auto custom = read_spot_nodes(b, "spot.csv", catalog, resources, 4096);
  CHECK(custom[0].memory_mib == 192 * 4096);
}

TEST_CASE("Bad spot node rows name the file, line and column", "[traces][alibaba][errors]") {
  auto spot = [](const std::string& rows) {
    return [rows] {
      GpuCatalog catalog = GpuCatalog::builtin();
      ResourceTable resources;
      std::istringstream in("gpu_model,gpu_capacity_num,cpu_num,node_name\nA10,1,128,0\n" + rows);
      (void)read_spot_nodes(in, "spot.csv", catalog, resources);
    };
  };
  expect_error(spot("GPU-series-9,1,128,1\n"), ErrorCode::kTraceUnknownGpuModel, "spot.csv:3:", "gpu_model");
  expect_error(spot("A10,-1,128,1\n"), ErrorCode::kTraceOutOfRange, "spot.csv:3:", "gpu_capacity_num");
  expect_error(spot("A10,1,many,1\n"), ErrorCode::kTraceBadValue, "spot.csv:3:", "cpu_num");
  expect_error(spot("A10,1,128,0\n"), ErrorCode::kTraceDuplicateId, "spot.csv:3:", "node_name");
}

// ------------------------------------------------------------------------------------ DLRM

TEST_CASE("The DLRM trace has 23871 instances with the file's totals", "[traces][alibaba][real]") {
  const auto path = t::real_trace("alibaba-gpu-v2025-dlrm/disaggregated_DLRM_trace.csv");
  if (path.empty()) return;
  GpuCatalog catalog = GpuCatalog::builtin();
  ResourceTable resources;
  const auto jobs = read_file(path, catalog, resources, read_dlrm);
  const auto rows = data_rows(path);
  REQUIRE(jobs.size() == 23871);
  REQUIRE(rows.size() == 23871);
  std::int64_t file_gpus = 0, file_rdma = 0, file_cores = 0, file_capped = 0, file_no_creation = 0, file_no_deletion = 0;
  double file_gib = 0;
  for (const auto& r : rows) {
    file_gpus += std::stoll(r[5]);
    file_rdma += std::stoll(r[7]);
    file_cores += std::stoll(r[3]);
    file_gib += std::stod(r[9]);
    if (r[13] != "-1") ++file_capped;
    if (r[14].empty()) ++file_no_creation;
    if (r[16].empty()) ++file_no_deletion;
  }
  CHECK(file_gpus == 7386);
  const auto rdma = resources.find(kDlrmRdmaResource);
  REQUIRE(rdma.has_value());
  std::int64_t gpus = 0, rdma_total = 0, cpu_milli = 0, mib = 0, capped = 0, at_start = 0, forever = 0;
  std::map<std::string, int> queues;
  for (const auto& j : jobs) {
    gpus += j.request.gpu.count;
    for (const auto& [id, amount] : j.request.extended) {
      if (id == *rdma) rdma_total += amount;
    }
    cpu_milli += j.request.cpu_milli;
    mib += j.request.memory_mib;
    if (j.constraints.max_per_node > 0) ++capped;
    if (j.submit == SimTime::zero()) ++at_start;
    if (j.duration.is_forever()) ++forever;
    queues[j.queue]++;
    CHECK_FALSE(j.constraints.app.empty());
  }
  CHECK(gpus == file_gpus);
  CHECK(rdma_total == file_rdma);
  CHECK(cpu_milli == file_cores * 1000);
  CHECK(mib == static_cast<std::int64_t>(std::llround(file_gib * 1024)));
  CHECK(capped == file_capped);
  CHECK(at_start >= file_no_creation);
  CHECK(forever == file_no_deletion);
  CHECK(queues == std::map<std::string, int>{{"CN", 16485}, {"HN", 7386}});
  CHECK(std::is_sorted(jobs.begin(), jobs.end(), [](const JobSpec& a, const JobSpec& b) { return a.submit < b.submit; }));
}

TEST_CASE("A DLRM fixture maps requests, caps, roles and times", "[traces][alibaba]") {
  GpuCatalog catalog = GpuCatalog::builtin();
  ResourceTable resources;
  std::istringstream in(
      "instance_sn,role,app_name,cpu_request,cpu_limit,gpu_request,gpu_limit,rdma_request,rdma_limit,memory_request,"
      "memory_limit,disk_request,disk_limit,max_instance_per_node,creation_time,scheduled_time,deletion_time\n"
      "late,HN,app_0,12,12,1,1,25,25,120.0,120.0,640.0,800.0,8,200.5,210.5,300\n"
      "old,CN,app_1,64,64,0,0,1,1,320.0,320.0,255.0,300.0,-1,,,1000\n"
      "keeps,CN,app_1,8,8,0,0,0,0,40.5,40.5,85.0,100.0,2,100,100,\n"
      "forever,HN,app_0,12,12,1,1,25,25,120.0,120.0,640.0,800.0,8,,,\n");
  const auto jobs = read_dlrm(in, "dlrm.csv", catalog, resources);
  REQUIRE(jobs.size() == 4);
  // Sorted by submit time, file order among equals.
  CHECK(jobs[0].name == "old");
  CHECK(jobs[1].name == "forever");
  CHECK(jobs[2].name == "keeps");
  CHECK(jobs[3].name == "late");

  const auto& old = jobs[0];
  CHECK(old.queue == "CN");
  CHECK(old.submit == SimTime::zero());
  CHECK(old.duration == SimTime::from_seconds(1000));
  CHECK(old.request.cpu_milli == 64000);
  CHECK(old.request.memory_mib == 320 * 1024);
  CHECK(old.request.gpu.mode == GpuMode::kNone);
  CHECK(old.constraints.app == "app_1");
  CHECK(old.constraints.max_per_node == 0);
  const auto rdma = resources.find("rdma/hca");
  REQUIRE(rdma.has_value());
  REQUIRE(old.request.extended.size() == 1);
  CHECK(old.request.extended[0] == std::make_pair(*rdma, std::int64_t{1}));

  CHECK(jobs[1].duration.is_forever());
  CHECK(jobs[2].request.extended.empty());
  CHECK(jobs[2].request.memory_mib == 40 * 1024 + 512);
  CHECK(jobs[2].constraints.max_per_node == 2);
  CHECK(jobs[2].duration.is_forever());

  const auto& late = jobs[3];
  CHECK(late.queue == "HN");
  CHECK(late.submit == SimTime::from_us(200'500'000));
  CHECK(late.duration == SimTime::from_us(89'500'000));
  CHECK(late.request.gpu.mode == GpuMode::kWhole);
  CHECK(late.request.gpu.count == 1);
  CHECK(late.constraints.max_per_node == 8);
  CHECK(late.source_line == 2);
}

TEST_CASE("Bad DLRM rows name the file, line and column", "[traces][alibaba][errors]") {
  auto dlrm = [](const std::string& row) {
    return [row] {
      GpuCatalog catalog = GpuCatalog::builtin();
      ResourceTable resources;
      std::istringstream in(
          "instance_sn,role,app_name,cpu_request,gpu_request,rdma_request,memory_request,max_instance_per_node,"
          "creation_time,scheduled_time,deletion_time\n"
          "ok,HN,app_0,12,1,25,120.0,8,,,\n" +
          row);
      (void)read_dlrm(in, "dlrm.csv", catalog, resources);
    };
  };
  expect_error(dlrm("x,HN,app_0,12,1,-25,120.0,8,,,\n"), ErrorCode::kTraceNegativeRequest, "dlrm.csv:3:", "rdma_request");
  expect_error(dlrm("x,HN,app_0,twelve,1,25,120.0,8,,,\n"), ErrorCode::kTraceBadValue, "dlrm.csv:3:", "cpu_request");
  expect_error(dlrm("x,HN,app_0,12,0.5,25,120.0,8,,,\n"), ErrorCode::kTraceBadValue, "dlrm.csv:3:", "gpu_request");
  expect_error(dlrm("x,HN,app_0,12,1,25,120.0,-3,,,\n"), ErrorCode::kTraceOutOfRange, "dlrm.csv:3:", "max_instance_per_node");
  expect_error(dlrm("x,HN,,12,1,25,120.0,4,,,\n"), ErrorCode::kTraceBadValue, "dlrm.csv:3:", "app_name");
  expect_error(dlrm("x,HN,app_0,12,1,25,120.0,8,10,20,15\n"), ErrorCode::kTraceBadValue, "dlrm.csv:3:", "deletion_time");
  expect_error(dlrm("x,HN,app_0,12,1,25,120.0,8,10,5,15\n"), ErrorCode::kTraceBadValue, "dlrm.csv:3:", "scheduled_time");
  expect_error(dlrm("ok,HN,app_0,12,1,25,120.0,8,,,\n"), ErrorCode::kTraceDuplicateId, "dlrm.csv:3:", "instance_sn");
}
