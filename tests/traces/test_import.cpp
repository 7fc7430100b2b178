// traces/import.hpp: formats by name, detection from a file's first line, dispatch, and the
// cluster file `gpusched convert` writes for a node list.
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include <gpusched/scenario/scenario.hpp>
#include <gpusched/traces/import.hpp>

#include "support/support.hpp"

using namespace gpusched;
using namespace gpusched::traces;
namespace t = gpusched::test;

namespace {

const char* const kOpenbNodes = "sn,cpu_milli,memory_mib,gpu,model\nn-0,64000,262144,2,P100\nn-1,96000,393216,8,G2\nn-2,32000,131072,0,\n";
const char* const kOpenbPods =
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"
    "p-0,4000,8192,1,500,,LS,Running,0,100,0\np-1,8000,16384,2,1000,P100|G2,BE,Running,10,50,10\n";

}  // namespace

TEST_CASE("every format has a unique name and a description, workloads before clusters", "[traces][import]") {
  const auto& f = formats();
  REQUIRE(f.size() == 13);
  bool seen_cluster = false;
  for (std::size_t i = 0; i < f.size(); ++i) {
    CHECK_FALSE(f[i].description.empty());
    if (f[i].kind == FormatKind::kCluster) seen_cluster = true;
    else CHECK_FALSE(seen_cluster);
    for (std::size_t j = i + 1; j < f.size(); ++j) CHECK(f[i].name != f[j].name);
  }
  CHECK(require_format("openb-pods", {}).kind == FormatKind::kWorkload);
  CHECK(require_format("kubectl-nodes", {}).kind == FormatKind::kCluster);
  try {
    (void)require_format("alibaba", {"cli", 0, "--format"});
    FAIL("no error");
  } catch (const TraceError& e) {
    CHECK_THAT(e.what(), Catch::Contains("alibaba") && Catch::Contains("openb-pods") && Catch::Contains("kubectl-nodes"));
  }
}

TEST_CASE("detect_format reads the first line and the extension", "[traces][import]") {
  t::TempDir dir;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"a.csv", kOpenbPods},
      {"b.csv", kOpenbNodes},
      {"c.csv", "timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-09 07:01:55,66.0,1,66.0,11cb48\n"},
      {"d.csv", "machineId, number of GPUs, single GPU mem\nm0,2, 12GB\n"},
      {"e.csv", "instance_sn,role,app_name,cpu_request\n"},
      {"f.csv", "job_id,num_gpu,submit_time,iterations,model_name,duration,interval\n"},
      {"g.csv", "num_switch,num_node_p_switch,num_gpu_p_node,num_cpu_p_node,mem_p_node\n"},
      {"h.csv", "gpu_model,gpu_capacity_num,cpu_num,node_name\n"},
      {"pai_machine_spec.csv", "m1,T4,96,512,2\n"},
      {"i.csv", "\xEF\xBB\xBFid,submit_time,duration,cpu\nj,0,1,1\n"},
      {"j.csv", "# gpusched trace schema_version=1\nid,submit_time\n"},
      {"k.swf", "1 0 0 10 1 -1 -1 1 -1 -1 1 1 1 1 1 1 -1 -1\n"},
      {"l.txt", "; Version: 2.2\n"},
      {"m.jsonl", "{}\n"},
      {"n.json", R"({"apiVersion": "v1", "kind": "List", "items": [{"kind": "Node"}]})"},
      {"o.json", R"({"apiVersion": "v1", "kind": "PodList", "items": []})"},
  };
  const std::vector<std::string> expected = {"openb-pods", "openb-nodes", "philly", "philly-machines", "dlrm", "tiresias",
                                             "tiresias-cluster", "spot-nodes", "pai-machines", "native", "native", "swf",
                                             "swf", "native", "kubectl-nodes", "kubectl-pods"};
  for (std::size_t i = 0; i < cases.size(); ++i) {
    INFO(cases[i].first);
    CHECK(detect_format(dir.write(cases[i].first, cases[i].second)) == expected[i]);
  }
  // What it cannot tell, it says, with the line.
  const auto unknown = dir.write("x.csv", "a,b,c\n1,2,3\n");
  try {
    (void)detect_format(unknown);
    FAIL("no error");
  } catch (const TraceError& e) {
    CHECK_THAT(e.what(), Catch::Contains("x.csv:1") && Catch::Contains("a,b,c"));
  }
  CHECK_THROWS_AS(detect_format(dir.write("y.json", R"({"kind": "Deployment"})")), TraceError);
  CHECK_THROWS_AS(detect_format(dir.path() / "missing.csv"), TraceError);
}

TEST_CASE("import_workload and import_nodes dispatch by format and refuse the other kind", "[traces][import]") {
  t::TempDir dir;
  const auto pods = dir.write("pods.csv", kOpenbPods);
  const auto nodes = dir.write("nodes.csv", kOpenbNodes);
  GpuCatalog catalog = GpuCatalog::builtin();
  ResourceTable resources;
  const auto jobs = import_workload(pods, "", catalog, resources);
  REQUIRE(jobs.size() == 2);
  CHECK(jobs[0].request.gpu.milli == 500);
  CHECK(jobs[1].request.gpu.count == 2);
  const auto ns = import_nodes(nodes, "openb-nodes", catalog, resources);
  REQUIRE(ns.size() == 3);
  CHECK(ns[1].gpus.size() == 8);
  CHECK(catalog[ns[1].gpus[0].model].name == "G2");
  try {
    (void)import_nodes(pods, "", catalog, resources);
    FAIL("no error");
  } catch (const TraceError& e) {
    CHECK_THAT(e.what(), Catch::Contains("workload format"));
  }
  CHECK_THROWS_AS(import_workload(nodes, "", catalog, resources), TraceError);
  CHECK_THROWS_AS(import_workload(pods, "philly", catalog, resources), TraceError);   // wrong columns, named
}

TEST_CASE("a node list converted to a cluster file loads as a scenario with the same nodes", "[traces][import]") {
  t::TempDir dir;
  GpuCatalog catalog = GpuCatalog::builtin();
  ResourceTable resources;
  const auto nodes = import_nodes(dir.write("nodes.csv", kOpenbNodes), "", catalog, resources);
  const std::string cluster = nodes_to_cluster_json(nodes, catalog, resources);
  const auto cj = nlohmann::json::parse(cluster);
  REQUIRE(cj.contains("gpu_models"));   // G2 is not a built-in model: it travels with the file
  CHECK(cj["gpu_models"].size() == 1);
  nlohmann::json doc = {{"schema_version", 1}, {"cluster", cj}, {"workload", {{"jobs", nlohmann::json::array()}}}};
  const auto sc = scenario::parse_scenario(doc, "converted.json", dir.path());
  REQUIRE(sc.nodes.size() == nodes.size());
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    CHECK(sc.nodes[i].name == nodes[i].name);
    CHECK(sc.nodes[i].cpu_milli == nodes[i].cpu_milli);
    CHECK(sc.nodes[i].memory_mib == nodes[i].memory_mib);
    CHECK(sc.nodes[i].gpus.size() == nodes[i].gpus.size());
    for (const auto& [k, v] : nodes[i].labels) {   // the scenario adds its own well-known labels
      INFO(k);
      CHECK(sc.nodes[i].labels.count(k) == 1);
      if (sc.nodes[i].labels.count(k) == 1) CHECK(sc.nodes[i].labels.at(k) == v);
    }
  }
}

TEST_CASE("a scenario imports a node list and a trace with transforms", "[traces][import][scenario]") {
  t::TempDir dir;
  dir.write("nodes.csv", kOpenbNodes);
  dir.write("pods.csv", kOpenbPods);
  const auto path = dir.write("s.json", R"({"schema_version": 1, "seed": 3,
    "cluster": {"import": [{"path": "nodes.csv", "format": "openb-nodes"}]},
    "profile": "fgd",
    "workload": {"trace": {"path": "pods.csv", "transforms": [{"shuffle": true}, {"resample_gpu_pct": 50}, {"arrival_only": true}]}}})");
  const auto sc = scenario::load_scenario(path);
  CHECK(sc.nodes.size() == 3);
  CHECK(sc.jobs.size() == 2);
  CHECK(sc.transforms.size() == 3);
  const auto r = scenario::run(sc);
  // 10 GPUs; 50% = 5,000 milli: the 2 pods (2,500) plus copies up to 5,000.
  std::int64_t milli = 0;
  for (const auto& row : r.jobs()) milli += row.gpus * 1000 * (row.gpu_milli > 0 ? 0 : 1) + row.gpu_milli;
  CHECK(milli <= 5000);
  CHECK(milli > 5000 - 2000);
  CHECK(r.summary().jobs > 2);
  CHECK_FALSE(r.fragmentation().empty());   // shares: fragmentation is recorded
  // Bad references name the JSON path.
  const auto bad = dir.write("bad.json", R"({"schema_version": 1,
    "cluster": {"import": [{"path": "nodes.csv", "format": "openb-pods"}]}, "workload": {"jobs": []}})");
  CHECK_THROWS_AS(scenario::load_scenario(bad), TraceError);
  const auto bad_step = dir.write("bad2.json", R"({"schema_version": 1,
    "cluster": {"import": [{"path": "nodes.csv"}]}, "workload": {"trace": {"path": "pods.csv", "transforms": [{"shuffle": 1}]}}})");
  try {
    (void)scenario::load_scenario(bad_step);
    FAIL("no error");
  } catch (const ScenarioError& e) {
    CHECK_THAT(e.what(), Catch::Contains("/workload/trace/transforms/0/shuffle"));
  }
}

TEST_CASE("every real trace file is detected as its format", "[traces][import][real-trace]") {
  const std::vector<std::pair<std::string, std::string>> files = {
      {"alibaba-gpu-v2023-openb/openb_node_list_gpu_node.csv", "openb-nodes"},
      {"alibaba-gpu-v2023-openb/openb_node_list_all_node.csv", "openb-nodes"},
      {"alibaba-gpu-v2023-openb/openb_pod_list_default.csv", "openb-pods"},
      {"alibaba-gpu-v2023-openb/openb_pod_list_multigpu50.csv", "openb-pods"},
      {"alibaba-gpu-v2020-pai/pai_machine_spec.csv", "pai-machines"},
      {"alibaba-v2026-spot-gpu/node_info_df.csv", "spot-nodes"},
      {"alibaba-gpu-v2025-dlrm/disaggregated_DLRM_trace.csv", "dlrm"},
      {"pollux-philly-derived/philly.csv", "philly"},
      {"philly/cluster_machine_list", "philly-machines"},
      {"tiresias/60_job.csv", "tiresias"},
      {"tiresias/n32g4.csv", "tiresias-cluster"},
  };
  for (const auto& [rel, format] : files) {
    const auto p = t::real_trace(rel);
    if (p.empty()) return;
    INFO(rel);
    CHECK(detect_format(p) == format);
  }
}

TEST_CASE("kubectl nodes with MIG instances and shared replicas convert to a cluster file that loads back the same devices",
          "[traces][import][kubernetes]") {
  // tests/data/k8s/nodes-device-plugin.json: MIG (mixed strategy, instances packed from the
  // counts), time-slicing and renamed MPS replicas; tests/data/kubernetes/nodes.json: whole GPUs,
  // a MIG node and a CPU node.
  for (const char* file : {"tests/data/k8s/nodes-device-plugin.json", "tests/data/kubernetes/nodes.json"}) {
    INFO(file);
    GpuCatalog catalog = GpuCatalog::builtin();
    ResourceTable resources;
    const auto nodes = import_nodes(t::source_dir() / file, "kubectl-nodes", catalog, resources);
    const auto cj = nlohmann::json::parse(nodes_to_cluster_json(nodes, catalog, resources));
    const nlohmann::json doc = {{"schema_version", 1}, {"cluster", cj}, {"workload", {{"jobs", nlohmann::json::array()}}}};
    const auto sc = scenario::parse_scenario(doc, "converted.json", ".");
    REQUIRE(sc.nodes.size() == nodes.size());
    bool mig = false, shared = false;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      const auto& a = nodes[i];
      const auto& b = sc.nodes[i];
      INFO(a.name);
      CHECK(b.name == a.name);
      CHECK(b.mig_strategy == a.mig_strategy);
      CHECK(b.mig_dynamic == a.mig_dynamic);
      CHECK(b.sharing == a.sharing);
      REQUIRE(b.gpus.size() == a.gpus.size());
      for (std::size_t g = 0; g < a.gpus.size(); ++g) {
        CHECK(b.gpus[g].model == a.gpus[g].model);
        CHECK(b.gpus[g].partition == a.gpus[g].partition);
        CHECK(b.gpus[g].replicas == a.gpus[g].replicas);
        CHECK(b.gpus[g].mig == a.gpus[g].mig);   // the same instances at the same starts
        mig = mig || !a.gpus[g].mig.empty();
        shared = shared || a.gpus[g].replicas > 1;
      }
    }
    if (std::string(file).find("device-plugin") != std::string::npos) CHECK((mig && shared));
  }
}

TEST_CASE("A node with whole and MIG GPUs converts to null layouts and loads back the same devices; other mixes are refused",
          "[traces][import][kubernetes]") {
  // Issue 16: a GPU-operator snapshot with MIG disabled on some GPUs of a node (mixed strategy)
  // could not become an editable cluster file.
  GpuCatalog catalog = GpuCatalog::builtin();
  ResourceTable resources;
  auto nodes = import_nodes(t::source_dir() / "tests/data/k8s/nodes-device-plugin.json", "kubectl-nodes", catalog, resources);
  auto& n = nodes.front();
  REQUIRE(n.gpus.size() > 1);
  REQUIRE(n.gpus.front().partition == GpuPartition::kMig);
  REQUIRE(n.mig_strategy == MigStrategy::kMixed);
  n.gpus.back().partition = GpuPartition::kWhole;   // one GPU out of MIG mode
  n.gpus.back().mig.clear();
  const auto cj = nlohmann::json::parse(nodes_to_cluster_json({n}, catalog, resources));
  const auto& layouts = cj["nodes"][0]["gpu_partition"]["layouts"];
  REQUIRE(layouts.size() == n.gpus.size());
  CHECK(layouts.back().is_null());
  CHECK(layouts.front().is_array());
  const nlohmann::json doc = {{"schema_version", 1}, {"cluster", cj}, {"workload", {{"jobs", nlohmann::json::array()}}}};
  const auto sc = scenario::parse_scenario(doc, "converted.json", ".");
  REQUIRE(sc.nodes.size() == 1);
  const auto& b = sc.nodes.front();
  REQUIRE(b.gpus.size() == n.gpus.size());
  for (std::size_t g = 0; g < n.gpus.size(); ++g) {
    INFO("GPU " << g);
    CHECK(b.gpus[g].partition == n.gpus[g].partition);
    CHECK(b.gpus[g].mig == n.gpus[g].mig);
  }
  // The single strategy splits every GPU alike: a null layout there is refused, naming the GPU.
  nlohmann::json single = doc;
  single["cluster"]["nodes"][0]["gpu_partition"]["strategy"] = "single";
  const auto msg = t::error_message<ScenarioError>([&] { (void)scenario::parse_scenario(single, "single.json", "."); });
  CHECK_THAT(msg, Catch::Contains("layouts/" + std::to_string(n.gpus.size() - 1)) && Catch::Contains("mixed strategy"));
  // Every GPU null is no MIG node at all; a model without MIG is refused whatever the layouts.
  auto node_doc = [](const char* model, nlohmann::json layouts) {
    return nlohmann::json{{"schema_version", 1},
                          {"cluster",
                           {{"nodes",
                             {{{"name", "n"}, {"cpu", 8}, {"memory", "32Gi"}, {"gpus", 2}, {"gpu_model", model},
                               {"gpu_partition", {{"mode", "mig"}, {"layouts", layouts}}}}}}}},
                          {"workload", {{"jobs", nlohmann::json::array()}}}};
  };
  CHECK_THAT(t::error_message<ScenarioError>([&] { (void)scenario::parse_scenario(node_doc("A100-40GB", {nullptr, nullptr}), "a.json", "."); }),
             Catch::Contains("use mode \"whole\""));
  CHECK_THAT(t::error_message<ScenarioError>([&] { (void)scenario::parse_scenario(node_doc("T4", {nullptr, nlohmann::json::array()}), "t.json", "."); }),
             Catch::Contains("T4 has no MIG"));
  // Whole GPUs beside time-sliced ones have no cluster-file form: refused with a way out.
  auto shared = n;
  for (auto& g : shared.gpus) {
    g.partition = GpuPartition::kTimeSlicing;
    g.replicas = 4;
    g.mig.clear();
  }
  shared.gpus.back().partition = GpuPartition::kWhole;
  shared.gpus.back().replicas = 1;
  const auto refused = t::error_message<TraceError>([&] { (void)nodes_to_cluster_json({shared}, catalog, resources); });
  CHECK_THAT(refused, Catch::Contains(n.name) && Catch::Contains("different partitions") && Catch::Contains("two nodes"));
}
