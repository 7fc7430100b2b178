// The Kubernetes snapshot importer: `kubectl get nodes -o json` and `kubectl get pods -A -o json`.
// The fixtures in tests/data/kubernetes are written by hand in kubectl's output format (see the
// README.md there).
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>

#include <gpusched/cluster.hpp>
#include <gpusched/constraints.hpp>
#include <gpusched/error.hpp>
#include <gpusched/traces/kubernetes.hpp>
#include <gpusched/traces/native.hpp>

#include "support/support.hpp"

using namespace gpusched;
using namespace gpusched::traces;
namespace t = gpusched::test;

namespace {

std::filesystem::path fixture(const std::string& name) { return t::source_dir() / "tests" / "data" / "kubernetes" / name; }

struct Snapshot {
  GpuCatalog catalog = GpuCatalog::builtin();
  ResourceTable resources;
  std::vector<NodeSpec> nodes;
  Workload pods;
};

Snapshot load() {
  Snapshot s;
  s.nodes = read_kube_nodes(fixture("nodes.json"), s.catalog, s.resources);
  s.pods = read_kube_pods(fixture("pods.json"), s.catalog, s.resources);
  return s;
}

const NodeSpec& node(const std::vector<NodeSpec>& nodes, const std::string& name) {
  for (const auto& n : nodes) {
    if (n.name == name) return n;
  }
  FAIL("no node " << name);
  throw;
}

const JobSpec& pod(const Workload& w, const std::string& name) {
  for (const auto& j : w) {
    if (j.name == name) return j;
  }
  FAIL("no pod " << name);
  throw;
}

std::vector<NodeSpec> nodes_from(const std::string& text, ResourceTable& resources) {
  GpuCatalog catalog = GpuCatalog::builtin();
  std::istringstream in(text);
  return read_kube_nodes(in, "nodes.json", catalog, resources);
}
std::vector<NodeSpec> nodes_from(const std::string& text) {
  ResourceTable resources;
  return nodes_from(text, resources);
}
Workload pods_from(const std::string& text) {
  GpuCatalog catalog = GpuCatalog::builtin();
  ResourceTable resources;
  std::istringstream in(text);
  return read_kube_pods(in, "pods.json", catalog, resources);
}

/// Runs `f`, which must throw TraceError with `id`; returns the error.
template <class F>
TraceError trace_error(F&& f, const std::string& id) {
  try {
    f();
  } catch (const TraceError& e) {
    INFO(e.what());
    CHECK(e.id() == id);
    return e;
  } catch (const Error& e) {
    FAIL("not a TraceError: " << e.what());
  }
  FAIL("no error");
  throw;
}

TraceError nodes_error(const std::string& file, const std::string& id) {
  return trace_error(
      [&] {
        GpuCatalog catalog = GpuCatalog::builtin();
        ResourceTable resources;
        (void)read_kube_nodes(fixture(file), catalog, resources);
      },
      id);
}
TraceError pods_error(const std::string& file, const std::string& id) {
  return trace_error(
      [&] {
        GpuCatalog catalog = GpuCatalog::builtin();
        ResourceTable resources;
        (void)read_kube_pods(fixture(file), catalog, resources);
      },
      id);
}

/// A node list of one node with these labels and allocatable resources (JSON members).
std::string one_node(const std::string& labels, const std::string& allocatable, const std::string& spec = "{}") {
  return R"({"apiVersion": "v1", "kind": "List", "items": [{"kind": "Node", "metadata": {"name": "n0", "labels": {)" +
         labels + R"(}}, "spec": )" + spec + R"(, "status": {"allocatable": {)" + allocatable + "}}}]}";
}

/// A pod list of one pending pod with this spec (JSON members besides containers).
std::string one_pod(const std::string& containers, const std::string& spec = "", const std::string& meta = "") {
  return R"({"apiVersion": "v1", "kind": "List", "items": [{"kind": "Pod", "metadata": {"name": "p", "namespace": "ns")" +
         meta + R"(}, "spec": {"containers": )" + containers + spec + R"(}, "status": {"phase": "Pending"}}]})";
}

int count_mig(const NodeSpec& n, const GpuCatalog& catalog, const std::string& profile) {
  int k = 0;
  for (const auto& g : n.gpus) {
    for (const auto& i : g.mig) k += catalog[g.model].mig->profiles[static_cast<std::size_t>(i.profile)].name == profile ? 1 : 0;
  }
  return k;
}

}  // namespace

TEST_CASE("kubectl nodes read with allocatable capacity, labels, taints and GPU models", "[traces][kubernetes]") {
  const auto s = load();
  REQUIRE(s.nodes.size() == 4);
  CHECK(s.nodes[0].name == "gpu-a100-0");
  CHECK(s.nodes[3].name == "mig-a100-0");

  const auto& a100 = node(s.nodes, "gpu-a100-0");
  CHECK(a100.cpu_milli == 95500);
  CHECK(a100.memory_mib == 1032088);
  REQUIRE(a100.gpus.size() == 8);
  for (const auto& g : a100.gpus) {
    CHECK(s.catalog[g.model].name == "A100-80GB");
    CHECK(g.partition == GpuPartition::kWhole);
  }
  CHECK(a100.labels.at("topology.kubernetes.io/zone") == "us-east-1a");
  CHECK(a100.labels.at("nvidia.com/gpu.product") == "NVIDIA-A100-SXM4-80GB");
  REQUIRE(a100.taints.size() == 2);
  CHECK(a100.taints[0].key == "nvidia.com/gpu");
  CHECK(a100.taints[0].value == "present");
  CHECK(a100.taints[0].effect == TaintEffect::kNoSchedule);
  CHECK(a100.taints[1].effect == TaintEffect::kPreferNoSchedule);
  REQUIRE(a100.extended.size() == 1);
  CHECK(s.resources.name(a100.extended[0].first) == "rdma/hca");
  CHECK(a100.extended[0].second == 16);

  const auto& t4 = node(s.nodes, "gpu-t4-0");
  CHECK(t4.cpu_milli == 3920);
  CHECK(t4.memory_mib == 14904);
  REQUIRE(t4.gpus.size() == 1);
  CHECK(s.catalog[t4.gpus[0].model].name == "T4");
  CHECK(t4.labels.at("kubernetes.io/hostname") == "gpu-t4-0");   // added: the label was missing
  CHECK(t4.taints.empty());
  CHECK(t4.extended.empty());
}

TEST_CASE("a cordoned node without allocatable uses its capacity and gets the unschedulable taint", "[traces][kubernetes]") {
  const auto s = load();
  const auto& cpu = node(s.nodes, "cpu-0");
  CHECK(cpu.cpu_milli == 64000);
  CHECK(cpu.memory_mib == 64000);
  CHECK(cpu.gpus.empty());
  REQUIRE(cpu.taints.size() == 1);
  CHECK(cpu.taints[0].key == "node.kubernetes.io/unschedulable");
  CHECK(cpu.taints[0].effect == TaintEffect::kNoSchedule);

  // Listed already (the node controller adds it): not twice.
  const auto nodes = nodes_from(one_node("", R"("cpu": "4", "memory": "8Gi")",
                                         R"({"unschedulable": true, "taints": [{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule", "timeAdded": "2024-05-01T10:00:00Z"}]})"));
  CHECK(nodes[0].taints.size() == 1);
}

TEST_CASE("a mixed-strategy MIG node gets static GPU instances packed onto its GPUs", "[traces][kubernetes]") {
  const auto s = load();
  const auto& mig = node(s.nodes, "mig-a100-0");
  CHECK(mig.mig_strategy == MigStrategy::kMixed);
  REQUIRE(mig.gpus.size() == 2);   // nvidia.com/gpu.count
  for (const auto& g : mig.gpus) {
    CHECK(g.partition == GpuPartition::kMig);
    CHECK(s.catalog[g.model].name == "A100-40GB");
  }
  CHECK(count_mig(mig, s.catalog, "3g.20gb") == 2);
  CHECK(count_mig(mig, s.catalog, "1g.5gb") == 7);
  // Largest first: both 3g on GPU 0, the seven 1g on GPU 1.
  CHECK(mig.gpus[0].mig.size() == 2);
  CHECK(mig.gpus[1].mig.size() == 7);
  // Legal layouts: the cluster accepts them.
  const auto cluster = t::cluster(s.nodes, s.resources);
  CHECK(t::cluster_violation(cluster).empty());
}

TEST_CASE("MIG instances that do not fit the labelled GPU count are an error", "[traces][kubernetes]") {
  const auto e = trace_error(
      [] {
        (void)nodes_from(one_node(R"("nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB", "nvidia.com/gpu.count": "1")",
                                  R"("cpu": "8", "memory": "64Gi", "nvidia.com/mig-3g.20gb": "3")"));
      },
      "gpusched.trace_error.102");
  CHECK(e.where().field == "items[0].status.allocatable.nvidia.com/mig-3g.20gb");
  CHECK(e.detail().find("do not fit") != std::string::npos);

  // Without the count label the instances are spread over as many GPUs as they need.
  GpuCatalog catalog = GpuCatalog::builtin();
  const auto n = nodes_from(one_node(R"("nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB")",
                                     R"("cpu": "8", "memory": "64Gi", "nvidia.com/mig-3g.20gb": "3")"));
  CHECK(n[0].gpus.size() == 2);
  CHECK(count_mig(n[0], catalog, "3g.20gb") == 3);
}

TEST_CASE("a single-strategy MIG node splits every GPU alike into the labelled profile", "[traces][kubernetes]") {
  GpuCatalog catalog = GpuCatalog::builtin();
  const auto n = nodes_from(one_node(R"("nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb", "nvidia.com/mig.strategy": "single")",
                                     R"("cpu": "8", "memory": "64Gi", "nvidia.com/gpu": "14")"));
  CHECK(n[0].mig_strategy == MigStrategy::kSingle);
  REQUIRE(n[0].gpus.size() == 2);
  CHECK(n[0].gpus[0].mig.size() == 7);
  CHECK(n[0].gpus[1].mig == n[0].gpus[0].mig);

  const auto e = trace_error(
      [] {
        (void)nodes_from(one_node(R"("nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB-MIG-3g.20gb")",
                                  R"("cpu": "8", "memory": "64Gi", "nvidia.com/gpu": "3")"));
      },
      "gpusched.trace_error.102");
  CHECK(e.where().field == "items[0].status.allocatable.nvidia.com/gpu");
}

TEST_CASE("device-plugin replicas make time-sliced or MPS GPUs", "[traces][kubernetes]") {
  const auto ts = nodes_from(one_node(R"("nvidia.com/gpu.product": "Tesla-T4-SHARED", "nvidia.com/gpu.replicas": "4")",
                                      R"("cpu": "8", "memory": "32Gi", "nvidia.com/gpu": "8")"));
  REQUIRE(ts[0].gpus.size() == 2);
  CHECK(ts[0].gpus[0].partition == GpuPartition::kTimeSlicing);
  CHECK(ts[0].gpus[0].replicas == 4);

  const auto mps = nodes_from(one_node(R"("nvidia.com/gpu.product": "NVIDIA-L4", "nvidia.com/gpu.replicas": "2", "nvidia.com/gpu.sharing-strategy": "mps")",
                                       R"("cpu": "8", "memory": "32Gi", "nvidia.com/gpu": "2")"));
  REQUIRE(mps[0].gpus.size() == 1);
  CHECK(mps[0].gpus[0].partition == GpuPartition::kMps);
}

TEST_CASE("GPU product labels are matched to catalog models in several spellings", "[traces][kubernetes]") {
  GpuCatalog catalog = GpuCatalog::builtin();
  const std::map<std::string, std::string> expected = {
      {"NVIDIA-A100-SXM4-80GB", "A100-80GB"}, {"NVIDIA-A100-80GB-PCIe", "A100-80GB"},
      {"NVIDIA-H100-80GB-HBM3", "H100-80GB"}, {"Tesla-T4", "T4"},
      {"NVIDIA-L4", "L4"},                    {"Tesla-V100-SXM2-16GB", "V100-16GB"},
      {"Tesla-P100-PCIE-16GB", "P100"},       {"NVIDIA-H100-NVL", "H100-NVL"},
  };
  for (const auto& [label, model] : expected) {
    INFO(label);
    const auto n = nodes_from(one_node(R"("nvidia.com/gpu.product": ")" + label + "\"", R"("cpu": "8", "memory": "32Gi", "nvidia.com/gpu": "1")"));
    REQUIRE(n[0].gpus.size() == 1);
    CHECK(catalog[n[0].gpus[0].model].name == model);
  }
  // GKE's accelerator label when GPU feature discovery is not installed.
  const auto gke = nodes_from(one_node(R"("cloud.google.com/gke-accelerator": "nvidia-l4")", R"("cpu": "8", "memory": "32Gi", "nvidia.com/gpu": "2")"));
  REQUIRE(gke[0].gpus.size() == 2);
  CHECK(catalog[gke[0].gpus[0].model].name == "L4");
}

TEST_CASE("an unknown GPU product fails naming the file, the node and the label", "[traces][kubernetes]") {
  const auto e = nodes_error("bad-gpu-product.json", "gpusched.trace_error.105");
  CHECK(e.where().file == fixture("bad-gpu-product.json").string());
  CHECK(e.where().field == "items[0].metadata.labels.nvidia.com/gpu.product");
  CHECK(e.where().line == 13);
  CHECK(e.detail().find("gpu-x-0") != std::string::npos);
  CHECK(e.detail().find("NVIDIA-Z9000-96GB") != std::string::npos);
}

TEST_CASE("GPUs without a product label fail naming the node", "[traces][kubernetes]") {
  const auto e = trace_error([] { (void)nodes_from(one_node("", R"("cpu": "8", "memory": "32Gi", "nvidia.com/gpu": "2")")); },
                             "gpusched.trace_error.102");
  CHECK(e.where().field == "items[0].metadata.labels");
  CHECK(e.detail().find("n0") != std::string::npos);
  CHECK(e.detail().find("nvidia.com/gpu.product") != std::string::npos);
}

TEST_CASE("a pod in a node list is rejected as the wrong kind", "[traces][kubernetes]") {
  const auto e = nodes_error("bad-kind.json", "gpusched.trace_error.102");
  CHECK(e.where().field == "items[1].kind");
  CHECK(e.where().line == 20);
  CHECK(e.detail().find("Pod") != std::string::npos);

  // And a node list given as pods.
  const auto p = trace_error(
      [] {
        GpuCatalog catalog = GpuCatalog::builtin();
        ResourceTable resources;
        (void)read_kube_pods(fixture("nodes.json"), catalog, resources);
      },
      "gpusched.trace_error.102");
  CHECK(p.where().field == "items[0].kind");
  CHECK(p.where().line == 6);
}

TEST_CASE("a JSON syntax error names the file and the line", "[traces][kubernetes]") {
  const auto e = nodes_error("bad-syntax.json", "gpusched.trace_error.102");
  CHECK(e.where().file == fixture("bad-syntax.json").string());
  CHECK(e.where().line == 10);
  CHECK(std::string(e.what()).find("bad-syntax.json:10") != std::string::npos);
}

TEST_CASE("a malformed node quantity or taint fails with its JSON path and line", "[traces][kubernetes]") {
  const auto cpu = trace_error([] { (void)nodes_from(one_node("", "\"cpu\": \"lots\",\n\"memory\": \"8Gi\"")); }, "gpusched.trace_error.102");
  CHECK(cpu.where().field == "items[0].status.allocatable.cpu");
  CHECK(cpu.where().line == 1);
  const auto taint = trace_error(
      [] { (void)nodes_from(one_node("", R"("cpu": "4")", R"({"taints": [{"key": "a", "effect": "NoWay"}]})")); },
      "gpusched.trace_error.102");
  CHECK(taint.where().field == "items[0].spec.taints[0].effect");
  const auto unknown = trace_error([] { (void)nodes_from(one_node("", R"("cpu": "4", "gpu": "1")")); }, "gpusched.trace_error.102");
  CHECK(unknown.where().field == "items[0].status.allocatable.gpu");
}

TEST_CASE("duplicate node or pod names are rejected", "[traces][kubernetes]") {
  const std::string item = R"({"kind": "Node", "metadata": {"name": "a"}, "status": {"allocatable": {"cpu": "1"}}})";
  const auto e = trace_error([&] { (void)nodes_from(R"({"kind": "List", "items": [)" + item + ",\n" + item + "]}"); },
                             "gpusched.trace_error.107");
  CHECK(e.where().field == "items[1].metadata.name");
  CHECK(e.where().line == 2);
}

TEST_CASE("pods become single-task jobs named namespace slash name with summed requests", "[traces][kubernetes]") {
  const auto s = load();
  REQUIRE(s.pods.size() == 7);   // the Succeeded pod is skipped
  CHECK(std::none_of(s.pods.begin(), s.pods.end(), [](const JobSpec& j) { return j.name == "batch/report-28572000-xyz12"; }));
  for (const auto& j : s.pods) {
    INFO(j.name);
    CHECK(j.tasks == 1);
    CHECK(j.min_available == 1);
    CHECK(j.submit == SimTime::from_us(0));
    CHECK(j.queue == j.name.substr(0, j.name.find('/')));
  }

  const auto& train = pod(s.pods, "ml/train-llama-0");
  CHECK(train.request.cpu_milli == 32500);           // the log shipper's limits stand in for requests
  CHECK(train.request.memory_mib == 256 * 1024 + 512);
  CHECK(train.request.gpu.mode == GpuMode::kWhole);
  CHECK(train.request.gpu.count == 4);
  REQUIRE(train.request.extended.size() == 1);
  CHECK(s.resources.name(train.request.extended[0].first) == "rdma/hca");
  CHECK(train.request.extended[0].second == 1);
  CHECK(train.priority == 1000);
  CHECK(train.constraints.priority_class == "high");
  CHECK(train.duration == SimTime::from_us(7200LL * 1'000'000));
  CHECK(train.source_line == 89);

  const auto& ranker = pod(s.pods, "ml/ranker-5f7c9d8b6-qz4lm");
  CHECK(ranker.request.gpu.count == 1);               // from limits only
  CHECK(ranker.request.cpu_milli == 2000);
  CHECK(ranker.duration.is_forever());

  const auto& notebook = pod(s.pods, "ml/notebook-ana");
  CHECK(notebook.request.gpu.mode == GpuMode::kMig);
  CHECK(notebook.request.gpu.profile == "1g.5gb");
  CHECK(notebook.request.gpu.count == 1);
}

TEST_CASE("init containers count by the Kubernetes effective-request rule", "[traces][kubernetes]") {
  const auto s = load();
  const auto& etl = pod(s.pods, "data/etl-nightly-28573440-abcde");
  CHECK(etl.request.cpu_milli == 4000);               // max(init 4, app 1 + 1)
  CHECK(etl.request.memory_mib == 8 * 1024);          // max(init 2Gi, app 4Gi + 4Gi); ephemeral-storage ignored
  CHECK(etl.constraints.node_selector == std::map<std::string, std::string>{{"kubernetes.io/os", "linux"}});

  // A sidecar (restartPolicy Always) adds to the app containers and to the init containers after it.
  const auto w = pods_from(one_pod(
      R"([{"name": "app", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}])",
      R"(, "initContainers": [
           {"name": "proxy", "restartPolicy": "Always", "resources": {"requests": {"cpu": "500m", "memory": "256Mi"}}},
           {"name": "migrate", "resources": {"requests": {"cpu": "2", "memory": "512Mi"}}}],
         "overhead": {"cpu": "100m"})"));
  REQUIRE(w.size() == 1);
  CHECK(w[0].request.cpu_milli == 2500 + 100);        // max(app 1 + proxy 0.5, migrate 2 + proxy 0.5) + overhead
  CHECK(w[0].request.memory_mib == 1024 + 256);       // max(1Gi + 256Mi, 512Mi + 256Mi)
}

TEST_CASE("pod node affinity, tolerations and preemption policy map to job constraints", "[traces][kubernetes]") {
  const auto s = load();
  const auto& ft = pod(s.pods, "ml/finetune-7b");
  const auto& c = ft.constraints;
  REQUIRE(c.affinity.required.size() == 1);
  REQUIRE(c.affinity.required[0].size() == 2);
  CHECK(c.affinity.required[0][0] ==
        LabelRequirement{"nvidia.com/gpu.product", "In", {"NVIDIA-A100-SXM4-80GB", "NVIDIA-H100-80GB-HBM3"}});
  CHECK(c.affinity.required[0][1] == LabelRequirement{"nvidia.com/gpu.count", "Gt", {"3"}});
  REQUIRE(c.affinity.preferred.size() == 1);
  CHECK(c.affinity.preferred[0].first == 50);
  CHECK(c.affinity.preferred[0].second == LabelTerm{{"topology.kubernetes.io/zone", "In", {"us-east-1a"}}});
  REQUIRE(c.tolerations.size() == 2);
  CHECK(c.tolerations[0] == Toleration{"nvidia.com/gpu", "Exists", "", "NoSchedule"});
  CHECK(c.tolerations[1] == Toleration{"dedicated", "Equal", "training", "PreferNoSchedule"});
  CHECK(c.preempt_never);
  CHECK(ft.priority == 500);
  CHECK(c.priority_class == "batch-low");
  CHECK(c.node_selector.empty());                     // pending: not pinned

  // The A100 node is the only one it may use.
  for (const auto& n : s.nodes) {
    INFO(n.name);
    CHECK(node_matches(c, n.labels) == (n.name == "gpu-a100-0"));
  }

  const auto& plugin = pod(s.pods, "kube-system/nvidia-device-plugin-daemonset-x7k2p");
  CHECK_FALSE(plugin.constraints.preempt_never);
  CHECK(plugin.priority == 2000001000);
  CHECK(plugin.constraints.priority_class == "system-node-critical");
  // matchFields metadata.name reads as the hostname label.
  REQUIRE(plugin.constraints.affinity.required.size() == 1);
  CHECK(plugin.constraints.affinity.required[0] == LabelTerm{{"kubernetes.io/hostname", "In", {"gpu-a100-0"}}});
}

TEST_CASE("bound pods come first and are pinned to their node, pending pods follow by creation time", "[traces][kubernetes]") {
  const auto s = load();
  std::vector<std::string> names;
  for (const auto& j : s.pods) names.push_back(j.name);
  CHECK(names == std::vector<std::string>{"kube-system/nvidia-device-plugin-daemonset-x7k2p", "ml/train-llama-0",
                                          "ml/ranker-5f7c9d8b6-qz4lm", "default/web-0",
                                          "ml/notebook-ana",                  // 10:10+02:00 = 08:10Z
                                          "data/etl-nightly-28573440-abcde",  // 10:00Z
                                          "ml/finetune-7b"});                 // 10:05Z
  CHECK(pod(s.pods, "ml/train-llama-0").constraints.node_selector.at("kubernetes.io/hostname") == "gpu-a100-0");
  CHECK(pod(s.pods, "default/web-0").constraints.node_selector.at("kubernetes.io/hostname") == "cpu-0");
  // Past the scheduler's taint check: every NoSchedule taint is tolerated.
  CHECK(pod(s.pods, "default/web-0").constraints.tolerations == std::vector<Toleration>{{"", "Exists", "", "NoSchedule"}});
}

TEST_CASE("the snapshot runs end to end: every bound pod fits its pinned node", "[traces][kubernetes]") {
  const auto s = load();
  auto cluster = t::cluster(s.nodes, s.resources);
  const auto choose = [](const MigGeometry& g, const MigLayout& l, int p) { return choose_start(g, l, p, MigStartPolicy::kBest); };
  int bound = 0;
  for (const auto& j : s.pods) {
    const auto host = j.constraints.node_selector.find("kubernetes.io/hostname");
    if (host == j.constraints.node_selector.end()) continue;
    INFO(j.name << " on " << host->second);
    ++bound;
    const auto id = cluster.find_node(host->second);
    REQUIRE(id);
    const auto& spec = cluster.spec(*id);
    CHECK(spec.labels.at("kubernetes.io/hostname") == host->second);
    CHECK(node_matches(j.constraints, spec.labels));
    CHECK(untolerated(j.constraints.tolerations, spec.taints, TaintEffect::kNoSchedule) == nullptr);
    REQUIRE(cluster.fits(*id, j.request));
    TaskPlacement p{*id, {}, {}, 0, 1.0};
    REQUIRE(cluster.pick_units(*id, j.request, {}, choose, p.gpus));
    cluster.allocate(j.request, p);
    // Pinned: no other node matches.
    for (std::uint32_t n = 0; n < cluster.node_count(); ++n) {
      if (NodeId{n} != *id) CHECK_FALSE(node_matches(j.constraints, cluster.spec(NodeId{n}).labels));
    }
  }
  CHECK(bound == 4);
  CHECK(t::cluster_violation(cluster).empty());
  // Every pod, pending ones included, fits some node of the snapshot when it is empty.
  CHECK_NOTHROW(check_placeable(s.pods, cluster, "pods.json"));
}

TEST_CASE("a bad pod cpu quantity fails naming the file, the container path and the line", "[traces][kubernetes]") {
  const auto e = pods_error("bad-cpu-quantity.json", "gpusched.trace_error.102");
  CHECK(e.where().file == fixture("bad-cpu-quantity.json").string());
  CHECK(e.where().field == "items[0].spec.containers[1].resources.requests.cpu");
  CHECK(e.where().line == 29);
  CHECK(e.detail().find("12x") != std::string::npos);
}

TEST_CASE("a negative pod request fails with the negative-request id and its path", "[traces][kubernetes]") {
  const auto e = pods_error("bad-negative-request.json", "gpusched.trace_error.104");
  CHECK(e.where().field == "items[1].spec.initContainers[0].resources.requests.memory");
  CHECK(e.where().line == 42);
}

TEST_CASE("bad pod fields fail with their JSON path", "[traces][kubernetes]") {
  const auto op = trace_error(
      [] { (void)pods_from(one_pod("[{\"name\": \"c\"}]", R"(, "tolerations": [{"key": "k", "operator": "Maybe"}])")); },
      "gpusched.trace_error.102");
  CHECK(op.where().field == "items[0].spec.tolerations[0].operator");

  const auto expr = trace_error(
      [] {
        (void)pods_from(one_pod("[{\"name\": \"c\"}]", R"(, "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
            {"nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": []}]}]}}})"));
      },
      "gpusched.trace_error.102");
  CHECK(expr.where().field ==
        "items[0].spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values");

  const auto policy = trace_error([] { (void)pods_from(one_pod("[{\"name\": \"c\"}]", R"(, "preemptionPolicy": "Sometimes")")); },
                                  "gpusched.trace_error.102");
  CHECK(policy.where().field == "items[0].spec.preemptionPolicy");

  const auto duration = trace_error(
      [] { (void)pods_from(one_pod("[{\"name\": \"c\"}]", "", R"(, "annotations": {"gpusched.io/duration": "soon"})")); },
      "gpusched.trace_error.102");
  CHECK(duration.where().field == "items[0].metadata.annotations.gpusched.io/duration");

  const auto profile = trace_error(
      [] { (void)pods_from(one_pod(R"([{"name": "c", "resources": {"limits": {"nvidia.com/mig-9g.99gb": "1"}}}])")); },
      "gpusched.trace_error.102");
  CHECK(profile.where().field.find("items[0].spec.containers") == 0);

  const auto none = trace_error([] { (void)pods_from(one_pod("[]")); }, "gpusched.trace_error.102");
  CHECK(none.where().field == "items[0].spec.containers");
}

TEST_CASE("a single Node or Pod object reads as a list of one", "[traces][kubernetes]") {
  const auto n = nodes_from(R"({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "solo"}, "status": {"capacity": {"cpu": "2", "memory": "4Gi"}}})");
  REQUIRE(n.size() == 1);
  CHECK(n[0].name == "solo");
  CHECK(n[0].memory_mib == 4096);
  const auto p = pods_from(R"({"kind": "Pod", "metadata": {"name": "x"}, "spec": {"containers": [{"name": "c"}]}})");
  REQUIRE(p.size() == 1);
  CHECK(p[0].name == "default/x");
  CHECK(p[0].queue == "default");
}
