#include <gpusched/traces/import.hpp>

#include <algorithm>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include <gpusched/constraints.hpp>
#include <gpusched/json_input.hpp>
#include <gpusched/traces/alibaba.hpp>
#include <gpusched/traces/kubernetes.hpp>
#include <gpusched/traces/native.hpp>
#include <gpusched/traces/philly.hpp>
#include <gpusched/traces/swf.hpp>

namespace gpusched::traces {
namespace {

using WorkloadFn = Workload (*)(std::istream&, const std::string&, GpuCatalog&, ResourceTable&);
using NodeFn = std::vector<NodeSpec> (*)(std::istream&, const std::string&, GpuCatalog&, ResourceTable&);
// Aggregates (not std::pair) so an overloaded reader name resolves to the 4-argument form.
struct WorkloadReader {
  std::string_view name;
  WorkloadFn read;
};
struct NodeReader {
  std::string_view name;
  NodeFn read;
};

const std::vector<WorkloadReader>& workload_readers() {
  static const std::vector<WorkloadReader> r = {
      {"openb-pods", read_openb_pods}, {"philly", read_philly_jobs},  {"dlrm", read_dlrm},
      {"tiresias", read_tiresias_jobs}, {"swf", read_swf},             {"kubectl-pods", read_kube_pods}};
  return r;
}

const std::vector<NodeReader>& node_readers() {
  static const std::vector<NodeReader> r = {
      {"openb-nodes", read_openb_nodes},         {"pai-machines", read_pai_machines},
      {"spot-nodes", read_spot_nodes},           {"philly-machines", read_philly_machines},
      {"tiresias-cluster", read_tiresias_cluster}, {"kubectl-nodes", read_kube_nodes}};
  return r;
}

std::string first_line(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw_error(ErrorCode::kTraceCannotOpen, {path.string(), 0, ""}, "cannot open the file");
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    // A UTF-8 byte-order mark is not part of the header.
    if (line.rfind("\xEF\xBB\xBF", 0) == 0) line.erase(0, 3);
    if (line.find_first_not_of(" \t") != std::string::npos) return line;
  }
  return {};
}

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

std::ifstream open(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw_error(ErrorCode::kTraceCannotOpen, {path.string(), 0, ""}, "cannot open the file");
  return in;
}

std::string names_of(FormatKind kind) {
  std::string out;
  for (const auto& f : formats()) {
    if (f.kind == kind) out += (out.empty() ? "" : ", ") + f.name;
  }
  return out;
}

}  // namespace

const std::vector<FormatInfo>& formats() {
  static const std::vector<FormatInfo> f = {
      {"native", FormatKind::kWorkload, "gpusched's own trace: CSV or JSON Lines (schemas/trace.schema.json)"},
      {"openb-pods", FormatKind::kWorkload, "Alibaba GPU cluster 2023 (openb, FGD paper) pod list: one pod per row"},
      {"philly", FormatKind::kWorkload, "Microsoft Philly 2017 per-job table (Pollux/Sia): submit, duration, GPUs, virtual cluster"},
      {"dlrm", FormatKind::kWorkload, "Alibaba DLRM serving 2025 (NSDI'25): one long-running instance per row"},
      {"tiresias", FormatKind::kWorkload, "Tiresias (NSDI'19) job list: GPUs, submit time, duration"},
      {"swf", FormatKind::kWorkload, "Standard Workload Format (Parallel Workloads Archive, Batsim, Slurm tools)"},
      {"kubectl-pods", FormatKind::kWorkload, "kubectl get pods -A -o json: a live cluster's pods (bound ones pinned)"},
      {"openb-nodes", FormatKind::kCluster, "Alibaba openb 2023 node list: sn, cpu_milli, memory_mib, gpu, model"},
      {"pai-machines", FormatKind::kCluster, "Alibaba PAI 2020 machine list: machine, gpu_type, cap_cpu, cap_mem, cap_gpu"},
      {"spot-nodes", FormatKind::kCluster, "Alibaba spot-GPU 2026 node list: gpu_model, gpu_capacity_num, cpu_num, node_name"},
      {"philly-machines", FormatKind::kCluster, "Microsoft Philly machine list: machineId, number of GPUs, single GPU mem"},
      {"tiresias-cluster", FormatKind::kCluster, "Tiresias cluster shape: switches, nodes per switch, GPUs, CPUs, memory per node"},
      {"kubectl-nodes", FormatKind::kCluster, "kubectl get nodes -o json: a live cluster's nodes"},
  };
  return f;
}

const FormatInfo& require_format(std::string_view name, const Location& where) {
  for (const auto& f : formats()) {
    if (f.name == name) return f;
  }
  throw_error(ErrorCode::kTraceBadValue, where,
              "unknown trace format \"" + std::string(name) + "\" (workloads: " + names_of(FormatKind::kWorkload) +
                  "; clusters: " + names_of(FormatKind::kCluster) + ")");
}

std::string detect_format(const std::filesystem::path& path) {
  const std::string ext = path.extension().string();
  const std::string stem = path.filename().string();
  if (ext == ".swf") return "swf";
  if (ext == ".jsonl" || ext == ".ndjson") return "native";
  const std::string line = first_line(path);
  if (ext == ".json") {
    std::ifstream in = open(path);
    std::ostringstream text;
    text << in.rdbuf();
    const nlohmann::json doc = parse_json(text.str(), path.string(), kTraceJsonErrors);
    const auto not_kubectl = [&](const std::string& field, const std::string& why) {
      throw_error(ErrorCode::kTraceBadValue, {path.string(), 0, field},
                  "a JSON file that is not a kubectl list of Nodes or Pods (" + why +
                      "); name the format (workloads: " + names_of(FormatKind::kWorkload) + "; clusters: " +
                      names_of(FormatKind::kCluster) + ")");
    };
    // The kind of an object: "" when absent; a kind that is not a string is an error, not a guess.
    const auto kind_of = [&](const nlohmann::json& o, const std::string& field) -> std::string {
      const auto it = o.find("kind");
      if (it == o.end()) return {};
      if (!it->is_string()) not_kubectl(field, std::string("kind is ") + it->type_name() + ", not a string");
      return it->get<std::string>();
    };
    if (!doc.is_object()) not_kubectl("", std::string("the document is a JSON ") + doc.type_name() + ", not an object");
    std::string kind = kind_of(doc, "kind");
    if (kind == "List" && doc.contains("items") && doc["items"].is_array() && !doc["items"].empty() &&
        doc["items"][0].is_object()) {
      kind = kind_of(doc["items"][0], "items[0].kind");
    }
    if (kind == "Node" || kind == "NodeList") return "kubectl-nodes";
    if (kind == "Pod" || kind == "PodList") return "kubectl-pods";
    throw_error(ErrorCode::kTraceBadValue, {path.string(), 0, "kind"},
                "a JSON file that is not a kubectl list of Nodes or Pods (kind \"" + kind + "\")");
  }
  if (starts_with(line, ";")) return "swf";
  if (starts_with(line, "# gpusched trace") || starts_with(line, "id,")) return "native";
  if (starts_with(line, "name,cpu_milli,memory_mib,num_gpu,gpu_milli")) return "openb-pods";
  if (starts_with(line, "sn,cpu_milli,memory_mib,gpu,model")) return "openb-nodes";
  if (starts_with(line, "timestamp,duration,num_gpus")) return "philly";
  if (starts_with(line, "machineId")) return "philly-machines";
  if (starts_with(line, "instance_sn,role,app_name")) return "dlrm";
  if (starts_with(line, "job_id,num_gpu,submit_time")) return "tiresias";
  if (starts_with(line, "num_switch,num_node_p_switch")) return "tiresias-cluster";
  if (starts_with(line, "gpu_model,gpu_capacity_num,cpu_num,node_name")) return "spot-nodes";
  if (starts_with(line, "machine,gpu_type,cap_cpu") || starts_with(stem, "pai_machine_spec")) return "pai-machines";
  throw_error(ErrorCode::kTraceBadValue, {path.string(), 1, ""},
              "cannot tell the trace format from the first line \"" + line.substr(0, 80) +
                  "\"; name it (workloads: " + names_of(FormatKind::kWorkload) + "; clusters: " + names_of(FormatKind::kCluster) + ")");
}

Workload import_workload(const std::filesystem::path& path, std::string_view format, GpuCatalog& catalog,
                         ResourceTable& resources) {
  const std::string name = format.empty() ? detect_format(path) : std::string(format);
  const auto& info = require_format(name, {path.string(), 0, "format"});
  if (info.kind != FormatKind::kWorkload) {
    throw_error(ErrorCode::kTraceBadValue, {path.string(), 0, "format"},
                "\"" + name + "\" is a node-list (cluster) format, not a workload (workloads: " +
                    names_of(FormatKind::kWorkload) + ")");
  }
  if (name == "native") return read_trace(path, catalog, resources);
  for (const auto& [n, reader] : workload_readers()) {
    if (n == name) {
      std::ifstream in = open(path);
      return reader(in, path.string(), catalog, resources);
    }
  }
  throw_error(ErrorCode::kTraceBadValue, {path.string(), 0, "format"}, "no reader for \"" + name + "\"");
}

std::vector<NodeSpec> import_nodes(const std::filesystem::path& path, std::string_view format, GpuCatalog& catalog,
                                   ResourceTable& resources) {
  const std::string name = format.empty() ? detect_format(path) : std::string(format);
  const auto& info = require_format(name, {path.string(), 0, "format"});
  if (info.kind != FormatKind::kCluster) {
    throw_error(ErrorCode::kTraceBadValue, {path.string(), 0, "format"},
                "\"" + name + "\" is a workload format, not a node list (clusters: " + names_of(FormatKind::kCluster) + ")");
  }
  for (const auto& [n, reader] : node_readers()) {
    if (n == name) {
      std::ifstream in = open(path);
      return reader(in, path.string(), catalog, resources);
    }
  }
  throw_error(ErrorCode::kTraceBadValue, {path.string(), 0, "format"}, "no reader for \"" + name + "\"");
}

namespace {

/// A node's `gpu_partition` as a scenario writes it (every GPU in one mode, or whole GPUs beside
/// static MIG GPUs of the mixed strategy: the caller checks).
nlohmann::json partition_json(const NodeSpec& n, const GpuModel& model) {
  const auto mig_gpu = std::find_if(n.gpus.begin(), n.gpus.end(), [](const GpuSpec& g) { return g.partition == GpuPartition::kMig; });
  const auto& first = mig_gpu != n.gpus.end() ? *mig_gpu : n.gpus.front();
  nlohmann::json p = {{"mode", std::string(to_string(first.partition))}};
  switch (first.partition) {
    case GpuPartition::kMig: {
      if (n.mig_strategy == MigStrategy::kSingle) p["strategy"] = "single";
      if (n.mig_dynamic) {
        p["dynamic"] = true;
        break;
      }
      const bool all_mig = mig_gpu == n.gpus.begin() && std::all_of(n.gpus.begin(), n.gpus.end(), [](const GpuSpec& g) {
                             return g.partition == GpuPartition::kMig;
                           });
      if (n.mig_strategy == MigStrategy::kSingle && !first.mig.empty() && all_mig) {
        // single: every GPU alike, its profile repeated.
        nlohmann::json layout = nlohmann::json::array();
        for (const auto& gi : first.mig) layout.push_back({{"profile", model.mig->profiles[static_cast<std::size_t>(gi.profile)].name}, {"start", gi.start}});
        p["layout"] = layout;
        break;
      }
      nlohmann::json layouts = nlohmann::json::array();
      for (const auto& g : n.gpus) {
        if (g.partition != GpuPartition::kMig) {
          layouts.push_back(nullptr);   // MIG disabled on this GPU: a whole GPU
          continue;
        }
        nlohmann::json layout = nlohmann::json::array();
        for (const auto& gi : g.mig) layout.push_back({{"profile", model.mig->profiles[static_cast<std::size_t>(gi.profile)].name}, {"start", gi.start}});
        layouts.push_back(std::move(layout));
      }
      p["layouts"] = layouts;
      break;
    }
    case GpuPartition::kTimeSlicing:
    case GpuPartition::kMps: {
      const bool same = std::all_of(n.gpus.begin(), n.gpus.end(), [&](const GpuSpec& g) { return g.replicas == first.replicas; });
      if (same) {
        p["replicas"] = first.replicas;
      } else {
        nlohmann::json r = nlohmann::json::array();
        for (const auto& g : n.gpus) r.push_back(g.replicas);
        p["replicas"] = r;
      }
      if (n.sharing.rename_by_default) p["rename_by_default"] = true;
      if (n.sharing.fail_requests_greater_than_one) p["fail_requests_greater_than_one"] = *n.sharing.fail_requests_greater_than_one;
      break;
    }
    default:
      throw_error(ErrorCode::kTraceBadValue, {n.name, 0, "gpus"},
                  "node \"" + n.name + "\": GPUs in mode \"" + std::string(to_string(first.partition)) +
                      "\" are not written to cluster files yet");
  }
  return p;
}

}  // namespace

std::string nodes_to_cluster_json(const std::vector<NodeSpec>& nodes, const GpuCatalog& catalog,
                                  const ResourceTable& resources) {
  const GpuCatalog builtin = GpuCatalog::builtin();
  nlohmann::json models = nlohmann::json::array();
  std::vector<std::string> added;
  nlohmann::json list = nlohmann::json::array();
  for (const auto& n : nodes) {
    nlohmann::json j;
    j["name"] = n.name;
    j["cpu"] = std::to_string(n.cpu_milli) + "m";
    j["memory"] = std::to_string(n.memory_mib) + "Mi";
    if (!n.gpus.empty()) {
      const auto model = n.gpus.front().model;
      auto partition = n.gpus.front().partition;
      // Whole GPUs beside static MIG GPUs (mixed strategy): written as mode "mig" with null
      // layouts for the whole ones. Any other mix has no cluster-file form.
      const auto is = [&](GpuPartition p) { return [p](const GpuSpec& g) { return g.partition == p; }; };
      const bool whole_and_mig = std::any_of(n.gpus.begin(), n.gpus.end(), is(GpuPartition::kMig)) &&
                                 std::all_of(n.gpus.begin(), n.gpus.end(), [](const GpuSpec& g) {
                                   return g.partition == GpuPartition::kMig || g.partition == GpuPartition::kWhole;
                                 }) &&
                                 n.mig_strategy != MigStrategy::kSingle && !n.mig_dynamic;
      if (whole_and_mig) partition = GpuPartition::kMig;
      for (const auto& g : n.gpus) {
        if (g.model != model || (g.partition != partition && !whole_and_mig)) {
          throw_error(ErrorCode::kTraceBadValue, {n.name, 0, "gpus"},
                      "node \"" + n.name + "\" has GPUs of different " + (g.model != model ? "models" : "partitions") +
                          ": a cluster file gives each node one GPU model and one gpu_partition mode (whole GPUs may "
                          "sit beside static MIG GPUs of the mixed strategy: null layouts); describe it as two nodes, "
                          "or keep the node list as the cluster's import");
        }
      }
      const auto& m = catalog[model];
      j["gpus"] = n.gpus.size();
      j["gpu_model"] = m.name;
      if (partition != GpuPartition::kWhole) j["gpu_partition"] = partition_json(n, m);
      if (!builtin.find(m.name) && std::find(added.begin(), added.end(), m.name) == added.end()) {
        models.push_back(m);
        added.push_back(m.name);
      }
    }
    if (n.sockets > 1) j["sockets"] = n.sockets;
    if (!n.labels.empty()) j["labels"] = n.labels;
    if (!n.taints.empty()) {
      nlohmann::json taints = nlohmann::json::array();
      for (const auto& t : n.taints) {
        nlohmann::json tj = {{"key", t.key}, {"effect", std::string(to_string(t.effect))}};
        if (!t.value.empty()) tj["value"] = t.value;
        taints.push_back(tj);
      }
      j["taints"] = taints;
    }
    if (!n.extended.empty()) {
      nlohmann::json ext = nlohmann::json::object();
      for (const auto& [id, amount] : n.extended) ext[resources.name(id)] = amount;
      j["extended"] = ext;
    }
    list.push_back(std::move(j));
  }
  nlohmann::json cluster;
  if (!models.empty()) cluster["gpu_models"] = models;
  cluster["nodes"] = list;
  return cluster.dump(1) + "\n";
}

}  // namespace gpusched::traces
