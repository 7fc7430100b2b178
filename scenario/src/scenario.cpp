#include <gpusched/scenario/scenario.hpp>
#include <gpusched/scenario/k8s_dra.hpp>
#include <gpusched/scenario/k8s_objects.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>
#include <set>
#include <span>
#include <stdexcept>

#include <gpusched/dra/nvidia.hpp>
#include <gpusched/embedded_demo.hpp>
#include <gpusched/input_range.hpp>
#include <gpusched/json_input.hpp>
#include <gpusched/policies/framework/registry.hpp>
#include <gpusched/policies/framework/scheduler.hpp>
#include <gpusched/policies/preemption/priority_preemption.hpp>
#include <gpusched/quantity.hpp>
#include <gpusched/tpu.hpp>
#include <gpusched/tpu_slice.hpp>
#include <gpusched/utf8.hpp>
#include <gpusched/traces/import.hpp>
#include <gpusched/traces/nvidia_smi.hpp>
#include <gpusched/traces/native.hpp>
#include <gpusched/traces/transforms.hpp>

namespace gpusched::scenario {
namespace {

// Ranges of the scenario's numeric fields (schemas/scenario.schema.json says the same; the test
// tests/python/test_schema_ranges.py keeps the two in agreement). Times are bounded by
// kMaxInputSeconds and kMinPositiveSeconds (gpusched/time.hpp). Sizes are bounded so that cluster
// totals (sums over every node, in int64 milli-CPU / MiB) can never overflow and a scenario that
// passes validation fits in memory.
/// Most CPUs on one node (or NUMA zone): 10^6, about 500x the largest machines built.
constexpr std::int64_t kMaxNodeCpuMilli = 1'000'000'000;
/// Most memory on one node (or NUMA zone): 1 PiB (2^50 bytes), about 30x the largest machines built.
constexpr double kMaxNodeMemoryBytes = 1125899906842624.0;
constexpr std::int64_t kMaxNodeMemoryMib = 1LL << 30;
/// Most nodes in one cluster (node groups, nodes and imported nodes together): 10^6.
constexpr std::int64_t kMaxNodes = 1'000'000;
/// Most GPUs in one cluster: 10^7 (50x the largest clusters built; a GPU costs ~200 bytes of state).
constexpr std::int64_t kMaxGpus = 10'000'000;
/// Most units of one extended resource on a node ("rdma/hca": 8).
constexpr std::int64_t kMaxExtended = 1'000'000'000;
/// Slow-down factors (devices.slowdown.*): 1 .. 10. A task's factor is its partition's times its
/// topology's, so at most 100x: a duration of kMaxInputSeconds stays far below the clock's limit.
constexpr double kMaxSlowdown = 10.0;
/// devices.time_slicing_overhead: 0 .. 1 (1 = context switches alone halve a sharer's speed;
/// measured overheads are a few percent).
constexpr double kMaxTimeSlicingOverhead = 1.0;
/// gpu_partition.replicas in mode "mps": the NVIDIA device plugin's maxClients
/// (cmd/mps-control-daemon/mps/device.go: 48 MPS clients per GPU from compute capability 7.5 on,
/// 16 before). The catalog holds no compute capability: the models below 7.5 it lists are named.
constexpr std::int64_t kMaxMpsReplicas = 48;
constexpr std::int64_t kMaxMpsReplicasBeforeTuring = 16;
std::int64_t max_mps_clients(const GpuModel& m) {
  for (const std::string_view family : {"V100", "P100", "P40", "P4", "K80", "M60", "M40"}) {   // CC 3.7 .. 7.0
    if (std::string_view(m.name).starts_with(family)) return kMaxMpsReplicasBeforeTuring;
  }
  return kMaxMpsReplicas;
}
/// autoscaler.scan_interval_s: at least 1 ms (real autoscalers scan every 10 s; below 1 ms the
/// scans alone would dominate a run).
constexpr double kMinScanIntervalSeconds = 1e-3;
/// workload.trace.transforms: scale_time 0.001 .. 100 (scaled times of up to kMaxInputSeconds stay
/// far below the clock's limit); target_load 0.001 .. 1000; resample_gpu_pct (0, 10000].
constexpr double kMinScaleTime = 1e-3, kMaxScaleTime = 100.0;
constexpr double kMinTargetLoad = 1e-3, kMaxTargetLoad = 1000.0;

class Parser {
 public:
  Parser(std::string source) : source_(std::move(source)) {}

  [[noreturn]] void fail(ErrorCode code, const std::string& path, const std::string& msg) const {
    throw_error(code, {source_, 0, path}, msg);
  }
  void expect_object(const nlohmann::json& j, const std::string& path) const {
    if (!j.is_object()) fail(ErrorCode::kScenarioBadValue, path, "expected an object");
  }
  std::string str(const nlohmann::json& j, const std::string& path) const {
    if (!j.is_string()) fail(ErrorCode::kScenarioBadValue, path, "expected a string");
    return j.get<std::string>();
  }
  /// A number or a numeric string, as text (for quantities).
  std::string text(const nlohmann::json& j, const std::string& path) const {
    auto t = j.is_null() ? std::nullopt : scalar_text(j);
    if (!t) fail(ErrorCode::kScenarioBadValue, path, "expected a number or a quantity string");
    return *t;
  }
  /// An integer in [min, max]. A whole number written as a float (2.0, 1e30) is range-checked
  /// like an integer (JSON Schema's "integer" accepts 2.0); 2.5 or a string is a bad value.
  std::int64_t integer(const nlohmann::json& j, const std::string& path, std::int64_t min, std::int64_t max) const {
    const auto range = [&](const std::string& v) {
      fail(ErrorCode::kScenarioOutOfRange, path,
           v + " is out of range: must be between " + std::to_string(min) + " and " + std::to_string(max));
    };
    if (j.is_number_unsigned() && j.get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      range(std::to_string(j.get<std::uint64_t>()));
    }
    if (j.is_number_integer()) {
      const auto v = j.get<std::int64_t>();
      if (v < min || v > max) range(std::to_string(v));
      return v;
    }
    if (!j.is_number()) fail(ErrorCode::kScenarioBadValue, path, "expected an integer");
    const double d = j.get<double>();
    if (std::isfinite(d) && d != std::floor(d)) fail(ErrorCode::kScenarioBadValue, path, "expected an integer, not " + format_number(d));
    if (!(d >= static_cast<double>(min) && d <= static_cast<double>(max)) || d >= 0x1p63) range(format_number(d));
    return static_cast<std::int64_t>(d);
  }
  /// A seed: an integer 0 .. 2^64-1 (the range the CLI's --seed and Python's seed= take).
  std::uint64_t seed(const nlohmann::json& j, const std::string& path) const {
    const std::string range = " is out of range: must be between 0 and 18446744073709551615";
    if (j.is_number_unsigned()) return j.get<std::uint64_t>();
    if (j.is_number_integer()) {   // a signed integer (a document built in C++ holds these)
      const auto v = j.get<std::int64_t>();
      if (v < 0) fail(ErrorCode::kScenarioOutOfRange, path, std::to_string(v) + range);
      return static_cast<std::uint64_t>(v);
    }
    if (!j.is_number()) fail(ErrorCode::kScenarioBadValue, path, "expected an integer");
    const double d = j.get<double>();
    if (std::isfinite(d) && d != std::floor(d)) fail(ErrorCode::kScenarioBadValue, path, "expected an integer, not " + format_number(d));
    if (!(d >= 0 && d < 0x1p64)) fail(ErrorCode::kScenarioOutOfRange, path, format_number(d) + range);
    return static_cast<std::uint64_t>(d);
  }
  /// A finite number in [min, max]; `unit` names the unit in errors ("seconds").
  double number(const nlohmann::json& j, const std::string& path, double min, double max, std::string_view unit = {}) const {
    if (!j.is_number()) fail(ErrorCode::kScenarioBadValue, path, "expected a number");
    const double v = j.get<double>();
    check_range(v, min, max, ErrorCode::kScenarioOutOfRange, at(path), unit);
    return v;
  }
  /// A time (an instant or a span) in seconds: [0, kMaxInputSeconds], or from kMinPositiveSeconds
  /// (one microsecond, the clock's tick) when the field must be > 0.
  SimTime seconds(const nlohmann::json& j, const std::string& path, bool positive) const {
    return SimTime::from_seconds_f(number(j, path, positive ? kMinPositiveSeconds : 0.0, kMaxInputSeconds, "seconds"));
  }
  /// A node's (or NUMA zone's) CPU: a quantity ("64", "500m", 64), 0 or 1m .. kMaxNodeCpuMilli.
  std::int64_t node_cpu_milli(const nlohmann::json& j, const std::string& path) const {
    if (j.is_number()) check_range(j.get<double>(), 0, kMaxNodeCpuMilli / 1000.0, ErrorCode::kScenarioOutOfRange, at(path), "CPUs");
    const auto t = text(j, path);
    const auto m = parse_cpu_milli(t, at(path), ErrorCode::kScenarioOutOfRange);
    if (m > kMaxNodeCpuMilli) fail(ErrorCode::kScenarioOutOfRange, path, "\"" + t + "\" is out of range: must be <= " + std::to_string(kMaxNodeCpuMilli / 1000) + " CPUs");
    return m;
  }
  /// A node's (or NUMA zone's) memory: a quantity ("256Gi", bytes as a number), 0 or 1 byte .. 1 PiB.
  std::int64_t node_memory_mib(const nlohmann::json& j, const std::string& path) const {
    if (j.is_number()) check_range(j.get<double>(), 0, kMaxNodeMemoryBytes, ErrorCode::kScenarioOutOfRange, at(path), "bytes");
    const auto t = text(j, path);
    const auto m = parse_memory_mib(t, at(path), ErrorCode::kScenarioOutOfRange);
    if (m > kMaxNodeMemoryMib) fail(ErrorCode::kScenarioOutOfRange, path, "\"" + t + "\" is out of range: must be <= 1Pi (1 PiB)");
    return m;
  }
  void unknown(const std::string& path, const std::string& known) const {
    fail(ErrorCode::kScenarioUnknownField, path, "unknown field (known: " + known + ")");
  }
  Location at(const std::string& path) const { return {source_, 0, path}; }
  const std::string& source() const { return source_; }

 private:
  std::string source_;
};

TaintEffect parse_effect(const Parser& p, const nlohmann::json& j, const std::string& path) {
  const auto s = p.str(j, path);
  if (s == "NoSchedule") return TaintEffect::kNoSchedule;
  if (s == "PreferNoSchedule") return TaintEffect::kPreferNoSchedule;
  if (s == "NoExecute") return TaintEffect::kNoExecute;
  p.fail(ErrorCode::kScenarioBadValue, path, "expected NoSchedule, PreferNoSchedule or NoExecute");
}

GpuPartition parse_partition_mode(const Parser& p, const nlohmann::json& j, const std::string& path) {
  const auto s = p.str(j, path);
  for (auto m : {GpuPartition::kWhole, GpuPartition::kMig, GpuPartition::kVgpu, GpuPartition::kTimeSlicing,
                 GpuPartition::kMps, GpuPartition::kPassthrough}) {
    if (s == to_string(m)) return m;
  }
  p.fail(ErrorCode::kScenarioBadValue, path, "expected whole, mig, vgpu, time-slicing, mps or passthrough");
}

/// A MIG layout for one GPU: ["3g.40gb", {"profile": "2g.20gb", "start": 4}, ...]. Names without
/// a start are placed in order at the start the default policy picks; explicit starts must be
/// legal and must not overlap.
std::vector<MigInstance> parse_mig_layout(const Parser& p, const nlohmann::json& j, const std::string& path, const GpuModel& model) {
  if (!j.is_array()) p.fail(ErrorCode::kScenarioBadValue, path, "expected a list of MIG profiles (\"3g.40gb\" or {\"profile\", \"start\"})");
  const auto& geo = *model.mig;
  MigLayout layout;
  for (std::size_t i = 0; i < j.size(); ++i) {
    const std::string f = path + "/" + std::to_string(i);
    std::string name;
    std::optional<int> start;
    if (j[i].is_string()) {
      name = j[i].get<std::string>();
    } else if (j[i].is_object()) {
      for (const auto& [k, v] : j[i].items()) {
        if (k == "profile") name = p.str(v, f + "/profile");
        else if (k == "start") start = static_cast<int>(p.integer(v, f + "/start", 0, geo.memory_slices - 1));
        else p.unknown(f + "/" + k, "profile, start");
      }
    } else {
      p.fail(ErrorCode::kScenarioBadValue, f, "expected a profile name or {\"profile\", \"start\"}");
    }
    const int prof = geo.require_profile(name, p.at(f), model.name);
    const auto& info = geo.profiles[static_cast<std::size_t>(prof)];
    if (!start) {
      start = choose_start(geo, layout, prof, MigStartPolicy::kBest);
      if (!start) p.fail(ErrorCode::kScenarioBadDevices, f, "no room for " + name + " after the GPU instances before it");
    }
    if (std::find(info.starts.begin(), info.starts.end(), *start) == info.starts.end()) {
      std::string legal;
      for (int s : info.starts) legal += (legal.empty() ? "" : ", ") + std::to_string(s);
      p.fail(ErrorCode::kScenarioBadDevices, f + "/start", name + " cannot start at memory slice " + std::to_string(*start) + " (legal: " + legal + ")");
    }
    if (!layout.can_place(geo, prof, *start)) {
      p.fail(ErrorCode::kScenarioBadDevices, f, name + " at memory slice " + std::to_string(*start) +
                                                   " overlaps an earlier GPU instance or exceeds the GPU's compute slices, count or +me limit");
    }
    layout.place(geo, prof, *start);
  }
  return layout.instances();
}

/// `gpu_partition` of a node: how its GPUs are handed out.
void parse_gpu_partition(const Parser& p, const nlohmann::json& j, const std::string& path, NodeSpec& n,
                         const GpuCatalog& catalog) {
  p.expect_object(j, path);
  GpuPartition mode = GpuPartition::kWhole;
  if (j.contains("mode")) mode = parse_partition_mode(p, j["mode"], path + "/mode");
  std::int64_t replicas = 1;
  std::vector<std::int64_t> per_gpu_replicas;   // "replicas": [..], one per GPU
  std::optional<bool> fail_above_one, rename;
  std::optional<std::string> vgpu;
  const nlohmann::json* layout = nullptr;
  const nlohmann::json* layouts = nullptr;
  for (const auto& [k, v] : j.items()) {
    const std::string f = path + "/" + k;
    if (k == "mode") continue;
    if (k == "replicas" && v.is_array()) {
      if (v.size() != n.gpus.size()) {
        p.fail(ErrorCode::kScenarioBadDevices, f, "expected one replica count per GPU (" + std::to_string(n.gpus.size()) + "), got " + std::to_string(v.size()));
      }
      for (std::size_t g = 0; g < v.size(); ++g) per_gpu_replicas.push_back(p.integer(v[g], f + "/" + std::to_string(g), 1, 1024));
    } else if (k == "replicas") {
      if (!v.is_number()) p.fail(ErrorCode::kScenarioBadValue, f, "expected an integer or a list of integers (one per GPU)");
      replicas = p.integer(v, f, 1, 1024);
    } else if (k == "fail_requests_greater_than_one" || k == "rename_by_default") {
      if (!v.is_boolean()) p.fail(ErrorCode::kScenarioBadValue, f, "expected true or false");
      (k == "rename_by_default" ? rename : fail_above_one) = v.get<bool>();
    } else if (k == "vgpu_profile") vgpu = p.str(v, f);
    else if (k == "vgpu_profiles") {
      if (!v.is_array()) p.fail(ErrorCode::kScenarioBadValue, f, "expected a list");
      if (v.size() > 1) p.fail(ErrorCode::kScenarioBadDevices, f, "all vGPUs on one physical GPU use the same profile; give one vgpu_profile");
      if (v.size() == 1) vgpu = p.str(v[0], f + "/0");
    } else if (k == "strategy") {
      const auto st = p.str(v, f);
      if (st == "single") n.mig_strategy = MigStrategy::kSingle;
      else if (st != "mixed") p.fail(ErrorCode::kScenarioBadValue, f, "expected \"mixed\" or \"single\"");
    } else if (k == "dynamic") {
      if (!v.is_boolean()) p.fail(ErrorCode::kScenarioBadValue, f, "expected true or false");
      n.mig_dynamic = v.get<bool>();
    } else if (k == "layout") layout = &v;
    else if (k == "layouts") layouts = &v;
    else p.unknown(f, "mode, replicas, fail_requests_greater_than_one, rename_by_default, vgpu_profile, strategy, dynamic, layout, layouts");
  }
  const bool mig = mode == GpuPartition::kMig;
  if (!mig && (layout || layouts || n.mig_dynamic || n.mig_strategy == MigStrategy::kSingle)) {
    p.fail(ErrorCode::kScenarioBadDevices, path, "layout, layouts, strategy and dynamic belong to mode \"mig\"");
  }
  const bool replicated = mode == GpuPartition::kTimeSlicing || mode == GpuPartition::kMps;
  if ((replicas != 1 || !per_gpu_replicas.empty()) && !replicated) {
    p.fail(ErrorCode::kScenarioBadDevices, path + "/replicas", "replicas belong to mode \"time-slicing\" or \"mps\"");
  }
  if (fail_above_one && !replicated) {
    p.fail(ErrorCode::kScenarioBadDevices, path + "/fail_requests_greater_than_one",
           "fail_requests_greater_than_one belongs to mode \"time-slicing\" or \"mps\" (the device plugin's sharing config)");
  }
  if (rename && !replicated) {
    p.fail(ErrorCode::kScenarioBadDevices, path + "/rename_by_default",
           "rename_by_default belongs to mode \"time-slicing\" or \"mps\" (the device plugin's sharing config)");
  }
  if (fail_above_one) n.sharing.fail_requests_greater_than_one = *fail_above_one;
  if (rename) n.sharing.rename_by_default = *rename;
  if (mode == GpuPartition::kMps) {
    // NVIDIA/k8s-device-plugin cmd/mps-control-daemon/mps/device.go: maxClients is 48 from
    // compute capability 7.5 on, 16 before.
    const auto check = [&](std::int64_t r, std::size_t g, const std::string& f) {
      const auto& model = catalog[n.gpus.at(std::min(g, n.gpus.size() - 1)).model];
      if (const auto cap = max_mps_clients(model); r > cap) {
        p.fail(ErrorCode::kScenarioBadDevices, f, std::to_string(r) + " MPS replicas: the NVIDIA device plugin allows at most " +
                                                      std::to_string(cap) + " MPS clients per " + model.name + " GPU");
      }
    };
    if (!n.gpus.empty()) {
      check(replicas, 0, path + "/replicas");
      for (std::size_t g = 0; g < per_gpu_replicas.size(); ++g) check(per_gpu_replicas[g], g, path + "/replicas/" + std::to_string(g));
    }
    // cmd/mps-control-daemon/mps/daemon.go sets one active-thread percentage for the whole MPS
    // daemon (100 / (replicas / GPUs)): per-GPU counts that differ cannot be served as modelled.
    for (std::size_t g = 1; g < per_gpu_replicas.size(); ++g) {
      if (per_gpu_replicas[g] != per_gpu_replicas[0]) {
        p.fail(ErrorCode::kScenarioBadDevices, path + "/replicas/" + std::to_string(g),
               "MPS replicas differ between GPUs: the device plugin's MPS daemon sets one active-thread percentage for all "
               "GPUs of a resource, so give every GPU the same count (per-GPU counts are for time-slicing)");
      }
    }
  }
  if (vgpu && mode != GpuPartition::kVgpu) p.fail(ErrorCode::kScenarioBadDevices, path + "/vgpu_profile", "vgpu_profile belongs to mode \"vgpu\"");
  if (mig && n.mig_dynamic && n.mig_strategy == MigStrategy::kSingle) {
    p.fail(ErrorCode::kScenarioBadDevices, path + "/strategy", "the single strategy splits every GPU alike; it cannot be dynamic");
  }
  if (layout && layouts) p.fail(ErrorCode::kScenarioBadDevices, path, "give layout (every GPU) or layouts (per GPU), not both");
  if (layouts && (!layouts->is_array() || layouts->size() != n.gpus.size())) {
    p.fail(ErrorCode::kScenarioBadDevices, path + "/layouts", "expected one layout per GPU (" + std::to_string(n.gpus.size()) + ")");
  }
  if (mig && !layout && !layouts && !n.mig_dynamic) {
    p.fail(ErrorCode::kScenarioBadDevices, path, "a MIG node needs a layout (static GPU instances) or dynamic: true");
  }
  // null in layouts: MIG is disabled on that GPU, a whole GPU beside the MIG ones (MIG mode is
  // set per GPU; the device plugin's mixed strategy advertises both kinds).
  if (layouts && layouts->is_array() && !layouts->empty() &&
      std::all_of(layouts->begin(), layouts->end(), [](const nlohmann::json& l) { return l.is_null(); })) {
    p.fail(ErrorCode::kScenarioBadDevices, path + "/layouts", "every GPU has MIG disabled (null): use mode \"whole\"");
  }
  if (layouts && layouts->is_array()) {
    for (std::size_t g = 0; g < layouts->size(); ++g) {
      if (!(*layouts)[g].is_null()) continue;
      const std::string f = path + "/layouts/" + std::to_string(g);
      if (n.mig_strategy == MigStrategy::kSingle) {
        p.fail(ErrorCode::kScenarioBadDevices, f,
               "null (MIG disabled on this GPU) needs the mixed strategy: the single strategy advertises every GPU's instances as nvidia.com/gpu, so all GPUs must be split alike");
      }
      if (n.mig_dynamic) p.fail(ErrorCode::kScenarioBadDevices, f, "null (MIG disabled on this GPU) does not go with dynamic: true");
    }
  }
  std::vector<std::vector<MigInstance>> per_gpu;
  for (std::size_t g = 0; g < n.gpus.size(); ++g) {
    auto& gpu = n.gpus[g];
    const auto& model = catalog[gpu.model];
    gpu.partition = mode;
    gpu.replicas = static_cast<std::uint16_t>(per_gpu_replicas.empty() ? replicas : per_gpu_replicas[g]);
    if (mig && !model.mig) p.fail(ErrorCode::kScenarioBadDevices, path + "/mode", model.name + " has no MIG (MIG models: A30, A100, H100, H200 ...)");
    if (mig && layouts && (*layouts)[g].is_null()) {
      gpu.partition = GpuPartition::kWhole;   // MIG disabled on this GPU
      continue;
    }
    if (mig) {
      if (layout) gpu.mig = g == 0 ? parse_mig_layout(p, *layout, path + "/layout", model) : n.gpus[0].mig;
      if (layouts) gpu.mig = parse_mig_layout(p, (*layouts)[g], path + "/layouts/" + std::to_string(g), model);
      per_gpu.push_back(gpu.mig);
    }
    if (mode == GpuPartition::kVgpu) {
      if (model.vgpu.empty()) p.fail(ErrorCode::kScenarioBadDevices, path + "/mode", model.name + " has no vGPU profiles in the catalog");
      if (vgpu) {
        const int idx = model.find_vgpu(*vgpu);
        if (idx < 0) {
          std::string names;
          for (const auto& v : model.vgpu) names += (names.empty() ? "" : ", ") + v.name;
          throw_error(ErrorCode::kCatalogUnknownVgpuProfile, p.at(path + "/vgpu_profile"),
                      model.name + " has no vGPU profile \"" + *vgpu + "\"; its profiles: " + names);
        }
        gpu.vgpu_profile = static_cast<std::int16_t>(idx);
      }
    }
  }
  if (mig && n.mig_strategy == MigStrategy::kSingle) {
    for (auto& l : per_gpu) {
      std::vector<int> a, b;
      for (const auto& i : l) a.push_back(i.profile);
      for (const auto& i : per_gpu.front()) b.push_back(i.profile);
      std::sort(a.begin(), a.end());
      std::sort(b.begin(), b.end());
      if (a != b) p.fail(ErrorCode::kScenarioBadDevices, path + "/layouts", "the single strategy needs every GPU split the same way");
    }
    if (!per_gpu.empty() && !per_gpu.front().empty()) {
      std::vector<int> profs;
      for (const auto& i : per_gpu.front()) profs.push_back(i.profile);
      if (std::adjacent_find(profs.begin(), profs.end(), std::not_equal_to<>()) != profs.end()) {
        p.fail(ErrorCode::kScenarioBadDevices, path + "/layout", "the single strategy advertises one kind of GI as nvidia.com/gpu: use one profile");
      }
    }
  }
  n.labels["nvidia.com/mig.strategy"] = mig ? (n.mig_strategy == MigStrategy::kSingle ? "single" : "mixed") : "none";
  if (mode != GpuPartition::kWhole) n.labels["gpusched.io/gpu-partition"] = std::string(to_string(mode));
}

/// `topology` of a node: NUMA nodes, PCIe switches and NVLink.
void parse_node_topology(const Parser& p, const nlohmann::json& j, const std::string& path, NodeSpec& n) {
  p.expect_object(j, path);
  for (const auto& [k, v] : j.items()) {
    const std::string f = path + "/" + k;
    if (k == "numa") {
      if (!v.is_array() || v.empty()) p.fail(ErrorCode::kScenarioBadValue, f, "expected a list of {cpu, memory}");
      n.numa.clear();
      for (std::size_t i = 0; i < v.size(); ++i) {
        const std::string zf = f + "/" + std::to_string(i);
        p.expect_object(v[i], zf);
        NumaSpec z;
        for (const auto& [zk, zv] : v[i].items()) {
          if (zk == "cpu") z.cpu_milli = p.node_cpu_milli(zv, zf + "/cpu");
          else if (zk == "memory") z.memory_mib = p.node_memory_mib(zv, zf + "/memory");
          else p.unknown(zf + "/" + zk, "cpu, memory");
        }
        n.numa.push_back(z);
      }
    } else if (k == "gpu_sockets") {
      if (!v.is_array() || v.size() != n.gpus.size()) p.fail(ErrorCode::kScenarioBadValue, f, "expected one socket per GPU");
      for (std::size_t g = 0; g < v.size(); ++g) n.gpus[g].socket = static_cast<std::int16_t>(p.integer(v[g], f + "/" + std::to_string(g), 0, 63));
    } else if (k == "gpus_per_pcie_switch") {
      const auto per = p.integer(v, f, 1, 64);
      for (std::size_t g = 0; g < n.gpus.size(); ++g) n.gpus[g].pcie_switch = static_cast<std::int16_t>(static_cast<std::int64_t>(g) / per);
    } else if (k == "nvlink") {
      for (auto& g : n.gpus) g.nvlink_domain = -1;
      n.nvlinks.clear();
      if (v.is_string()) {
        const auto s = v.get<std::string>();
        if (s == "nvswitch") for (auto& g : n.gpus) g.nvlink_domain = 0;
        else if (s != "none") p.fail(ErrorCode::kScenarioBadValue, f, "expected \"nvswitch\", \"none\" or a list of [gpu, gpu, links]");
      } else if (v.is_array()) {
        for (std::size_t i = 0; i < v.size(); ++i) {
          const std::string lf = f + "/" + std::to_string(i);
          if (!v[i].is_array() || v[i].size() < 2 || v[i].size() > 3) p.fail(ErrorCode::kScenarioBadValue, lf, "expected [gpu, gpu] or [gpu, gpu, links]");
          const auto last = static_cast<std::int64_t>(n.gpus.size()) - 1;
          auto a = p.integer(v[i][0], lf + "/0", 0, last), b = p.integer(v[i][1], lf + "/1", 0, last);
          if (a == b) p.fail(ErrorCode::kScenarioBadValue, lf, "an NVLink joins two different GPUs");
          if (a > b) std::swap(a, b);
          const auto links = v[i].size() == 3 ? p.integer(v[i][2], lf + "/2", 1, 255) : 1;
          n.nvlinks.push_back({static_cast<std::uint16_t>(a), static_cast<std::uint16_t>(b), static_cast<std::uint8_t>(links)});
        }
      } else {
        p.fail(ErrorCode::kScenarioBadValue, f, "expected \"nvswitch\", \"none\" or a list of [gpu, gpu, links]");
      }
    } else {
      p.unknown(f, "numa, gpu_sockets, gpus_per_pcie_switch, nvlink");
    }
  }
}

/// `tpu` of a node group: a pool of TPU hosts. {"generation": "v4", "topology": "4x4x4",
/// "chips_per_host": 4, "provisioned": true}. The group's count is the pool's host count.
void parse_tpu_host(const Parser& p, const nlohmann::json& j, const std::string& path, NodeSpec& n, bool group,
                    bool has_count, std::int64_t& count) {
  p.expect_object(j, path);
  std::string gen_name, topo;
  std::int64_t chips = 0;
  for (const auto& [k, v] : j.items()) {
    const std::string f = path + "/" + k;
    if (k == "generation") gen_name = p.str(v, f);
    else if (k == "topology") topo = p.str(v, f);
    else if (k == "chips_per_host") chips = p.integer(v, f, 1, 64);
    else if (k == "provisioned") {
      if (!v.is_boolean()) p.fail(ErrorCode::kScenarioBadValue, f, "expected true (a pool of one slice shape) or false (slices carved from the pool)");
      n.tpu.provisioned = v.get<bool>();
    } else {
      p.unknown(f, "generation, topology, chips_per_host, provisioned");
    }
  }
  if (gen_name.empty()) {
    std::string names;   // the catalog's generations (issue 15: v4, v5e, v5p, v6e, tpu7x)
    for (const auto& g : TpuCatalog::builtin().generations()) names += (names.empty() ? "" : ", ") + g.name;
    p.fail(ErrorCode::kScenarioMissingField, path + "/generation", "missing field 'generation' (" + names + ")");
  }
  const auto& gen = TpuCatalog::builtin().require(gen_name, p.at(path + "/generation"));
  if (chips == 0 && n.tpu.provisioned && !topo.empty()) {
    // A provisioned pool of one slice shape: the machine type GKE uses for it (v5e/v6e 2x4 -> 8
    // chips, 1x1 -> 1), not the generation's multi-host default (issue 15).
    if (const auto* m = gen.machine_for(gen.require_topology(topo, p.at(path + "/topology")), 0)) chips = m->chips;
  }
  if (chips == 0) chips = gen.default_chips_per_host;
  if (std::find(gen.chips_per_host.begin(), gen.chips_per_host.end(), chips) == gen.chips_per_host.end()) {
    p.fail(ErrorCode::kScenarioBadDevices, path + "/chips_per_host", "TPU " + gen.name + " hosts do not come with " + std::to_string(chips) + " chips");
  }
  n.tpu.generation = gen.name;
  n.tpu.chips = static_cast<std::int32_t>(chips);
  n.tpu.pool = n.name;
  std::int64_t hosts = 1;
  if (!topo.empty()) {
    // A provisioned pool is one slice: its shape must be one the generation offers. A carved
    // pool is a physical block that may be larger than any one slice.
    const auto t = n.tpu.provisioned ? gen.require_topology(topo, p.at(path + "/topology"))
                                     : parse_tpu_topology(topo, p.at(path + "/topology"));
    // A GKE node pool whose machine type does not serve its topology (v5e 4x4 on 8-chip hosts) is
    // refused with the reason and what GKE uses instead (issue 15).
    if (n.tpu.provisioned) (void)gen.hosts(t.to_string(), p.at(path + "/topology"), static_cast<int>(chips));
    const auto grid = pool_grid(gen, t, static_cast<int>(chips), p.at(path + "/topology"));
    hosts = static_cast<std::int64_t>(grid.host_count());
    n.tpu.pool_topology = t.to_string();
  }
  if (group && has_count && count != hosts) {
    p.fail(ErrorCode::kScenarioBadDevices, path + "/topology", "a " + (topo.empty() ? std::string("single-host") : topo) + " pool of " +
                                                                    std::to_string(chips) + "-chip hosts has " + std::to_string(hosts) +
                                                                    " hosts, but count is " + std::to_string(count));
  }
  if (!group && hosts != 1) p.fail(ErrorCode::kScenarioBadDevices, path + "/topology", "a multi-host pool is a node group (nodes: one host)");
  count = hosts;
  n.labels["cloud.google.com/gke-tpu-accelerator"] = gen.accelerator_label;
  if (!n.tpu.pool_topology.empty()) n.labels["cloud.google.com/gke-tpu-topology"] = n.tpu.pool_topology;
  n.labels["cloud.google.com/gke-nodepool"] = n.name;
}

/// One node (or the template of a node group).
/// `nics` of a node: a count, {"count": 8, "rdma": true}, or a list, one entry per NIC:
/// {"gpu": 0} (on GPU 0's PCIe root, behind its switch if it has one) or {"socket": 1} (a root of
/// its own), each with "rdma" (default true). A count spreads the NICs over the PCIe switches of
/// the node's GPUs in turn (NIC i behind the switch of GPU group i mod switches, as DGX/HGX
/// boards pair each switch's GPUs with NICs for GPUDirect RDMA), else over its sockets, each on a
/// root of its own.
void parse_node_nics(const Parser& p, const nlohmann::json& j, const std::string& path, NodeSpec& n) {
  const auto rdma_of = [&](const nlohmann::json& v, const std::string& f) {
    if (!v.is_boolean()) p.fail(ErrorCode::kScenarioBadValue, f, "expected true or false");
    return v.get<bool>();
  };
  n.nics.clear();
  if (j.is_array()) {
    if (j.size() > 64) p.fail(ErrorCode::kScenarioOutOfRange, path, std::to_string(j.size()) + " NICs is out of range: at most 64");
    for (std::size_t i = 0; i < j.size(); ++i) {
      const std::string ef = path + "/" + std::to_string(i);
      p.expect_object(j[i], ef);
      const bool on_gpu = j[i].contains("gpu"), on_socket = j[i].contains("socket");
      if (on_gpu && on_socket) p.fail(ErrorCode::kScenarioBadValue, ef, "a NIC on a GPU's root is on that GPU's socket: give gpu or socket, not both");
      if (!on_gpu && !on_socket) p.fail(ErrorCode::kScenarioMissingField, ef + "/gpu", "missing field 'gpu' (the GPU whose PCIe root it is on) or 'socket'");
      NicSpec nic;
      for (const auto& [k, v] : j[i].items()) {
        const std::string f = ef + "/" + k;
        if (k == "gpu") {
          if (n.gpus.empty()) p.fail(ErrorCode::kScenarioBadValue, f, "the node has no GPU to share a PCIe root with");
          nic.root_gpu = static_cast<std::int16_t>(p.integer(v, f, 0, static_cast<std::int64_t>(n.gpus.size()) - 1));
          nic.socket = n.gpus[static_cast<std::size_t>(nic.root_gpu)].socket;
        } else if (k == "socket") {
          nic.socket = static_cast<std::int16_t>(p.integer(v, f, 0, n.sockets - 1));
        } else if (k == "rdma") {
          nic.rdma = rdma_of(v, f);
        } else {
          p.unknown(f, "gpu, socket, rdma");
        }
      }
      n.nics.push_back(nic);
    }
    return;
  }
  std::int64_t count = 0;
  bool rdma = true;
  if (j.is_number()) {
    count = p.integer(j, path, 0, 64);
  } else {
    if (!j.is_object()) p.fail(ErrorCode::kScenarioBadValue, path, "expected a count, {count, rdma}, or a list of {gpu | socket, rdma}");
    bool has_count = false;
    for (const auto& [k, v] : j.items()) {
      const std::string f = path + "/" + k;
      if (k == "count") {
        count = p.integer(v, f, 0, 64);
        has_count = true;
      } else if (k == "rdma") {
        rdma = rdma_of(v, f);
      } else {
        p.unknown(f, "count, rdma");
      }
    }
    if (!has_count) p.fail(ErrorCode::kScenarioMissingField, path + "/count", "missing field 'count'");
  }
  std::vector<std::size_t> switches;   // the first GPU of each PCIe switch, in GPU order
  for (std::size_t g = 0; g < n.gpus.size(); ++g) {
    if (n.gpus[g].pcie_switch < 0) continue;
    const bool seen = std::any_of(switches.begin(), switches.end(), [&](std::size_t f) {
      return n.gpus[f].socket == n.gpus[g].socket && n.gpus[f].pcie_switch == n.gpus[g].pcie_switch;
    });
    if (!seen) switches.push_back(g);
  }
  for (std::int64_t i = 0; i < count; ++i) {
    NicSpec nic;
    nic.rdma = rdma;
    if (!switches.empty()) {
      nic.root_gpu = static_cast<std::int16_t>(switches[static_cast<std::size_t>(i) % switches.size()]);
      nic.socket = n.gpus[static_cast<std::size_t>(nic.root_gpu)].socket;
    } else {
      nic.socket = static_cast<std::int16_t>(i * n.sockets / count);
    }
    n.nics.push_back(nic);
  }
}

NodeSpec parse_node(const Parser& p, const nlohmann::json& j, const std::string& path, const GpuCatalog& catalog,
                    ResourceTable& resources, bool group, std::int64_t& count) {
  p.expect_object(j, path);
  NodeSpec n;
  std::int64_t gpus = 0;
  std::string model;
  bool has_cpu = false, has_mem = false;
  const nlohmann::json* partition = nullptr;
  const nlohmann::json* topology = nullptr;
  const nlohmann::json* tpu = nullptr;
  const nlohmann::json* nics = nullptr;
  bool has_count = false;
  count = 1;
  for (const auto& [k, v] : j.items()) {
    const std::string f = path + "/" + k;
    if (k == "name") n.name = p.str(v, f);
    else if (k == "count" && group) { count = p.integer(v, f, 0, kMaxNodes); has_count = true; }
    else if (k == "cpu") { n.cpu_milli = p.node_cpu_milli(v, f); has_cpu = true; }
    else if (k == "memory") { n.memory_mib = p.node_memory_mib(v, f); has_mem = true; }
    else if (k == "gpus") gpus = p.integer(v, f, 0, 4096);
    else if (k == "gpu_model") model = p.str(v, f);
    else if (k == "sockets") n.sockets = static_cast<std::int16_t>(p.integer(v, f, 1, 64));
    else if (k == "gpu_partition") partition = &v;
    else if (k == "tpu") tpu = &v;
    else if (k == "topology") topology = &v;
    else if (k == "nics") nics = &v;
    else if (k == "labels") {
      p.expect_object(v, f);
      for (const auto& [lk, lv] : v.items()) n.labels[lk] = p.str(lv, f + "/" + lk);
    } else if (k == "taints") {
      if (!v.is_array()) p.fail(ErrorCode::kScenarioBadValue, f, "expected a list of {key, value, effect}");
      for (std::size_t i = 0; i < v.size(); ++i) {
        const std::string tf = f + "/" + std::to_string(i);
        p.expect_object(v[i], tf);
        Taint t;
        for (const auto& [tk, tv] : v[i].items()) {
          if (tk == "key") t.key = p.str(tv, tf + "/key");
          else if (tk == "value") t.value = p.str(tv, tf + "/value");
          else if (tk == "effect") t.effect = parse_effect(p, tv, tf + "/effect");
          else p.unknown(tf + "/" + tk, "key, value, effect");
        }
        if (t.key.empty()) p.fail(ErrorCode::kScenarioMissingField, tf + "/key", "a taint needs a key");
        n.taints.push_back(t);
      }
    } else if (k == "extended") {
      p.expect_object(v, f);
      for (const auto& [ek, ev] : v.items()) {
        if (!is_extended_resource(ek)) p.fail(ErrorCode::kScenarioBadValue, f + "/" + ek, "extended resource names have a domain, e.g. \"rdma/hca\"");
        const std::string ef = f + "/" + ek;
        if (ev.is_number()) check_range(ev.get<double>(), 0, static_cast<double>(kMaxExtended), ErrorCode::kScenarioOutOfRange, p.at(ef));
        const auto units = parse_count(p.text(ev, ef), p.at(ef), ErrorCode::kScenarioOutOfRange);
        if (units > kMaxExtended) p.fail(ErrorCode::kScenarioOutOfRange, ef, std::to_string(units) + " is out of range: must be <= " + std::to_string(kMaxExtended));
        n.extended.emplace_back(resources.intern(ek), units);
      }
    } else {
      p.unknown(f, group ? "name, count, cpu, memory, gpus, gpu_model, sockets, topology, gpu_partition, tpu, nics, labels, taints, extended"
                         : "name, cpu, memory, gpus, gpu_model, sockets, topology, gpu_partition, tpu, nics, labels, taints, extended");
    }
  }
  if (n.name.empty()) p.fail(ErrorCode::kScenarioMissingField, path + "/name", "missing field 'name'");
  if (!has_cpu) p.fail(ErrorCode::kScenarioMissingField, path + "/cpu", "missing field 'cpu'");
  if (!has_mem) p.fail(ErrorCode::kScenarioMissingField, path + "/memory", "missing field 'memory'");
  if (gpus > 0 && model.empty()) p.fail(ErrorCode::kScenarioMissingField, path + "/gpu_model", "a node with GPUs needs a gpu_model");
  if (gpus > 0) {
    const auto id = catalog.require(model, p.at(path + "/gpu_model"));
    for (std::int64_t g = 0; g < gpus; ++g) {
      GpuSpec gs;
      gs.model = id;
      gs.socket = static_cast<std::int16_t>(g * n.sockets / gpus);
      gs.nvlink_domain = catalog[id].nvlink && gpus > 1 ? 0 : -1;   // NVLink boards unless told otherwise
      n.gpus.push_back(gs);
    }
    // GPU feature discovery labels, as a real node would carry them.
    n.labels.emplace("nvidia.com/gpu.product", catalog[id].name);
    n.labels.emplace("nvidia.com/gpu.count", std::to_string(gpus));
    n.labels.emplace("nvidia.com/gpu.memory", std::to_string(catalog[id].memory_mib));
  }
  if (partition) {
    if (n.gpus.empty()) p.fail(ErrorCode::kScenarioBadDevices, path + "/gpu_partition", "a node without GPUs has nothing to partition");
    parse_gpu_partition(p, *partition, path + "/gpu_partition", n, catalog);
  }
  if (topology) parse_node_topology(p, *topology, path + "/topology", n);
  if (tpu) {
    if (!n.gpus.empty()) p.fail(ErrorCode::kScenarioBadDevices, path + "/tpu", "a node has GPUs or TPUs, not both");
    parse_tpu_host(p, *tpu, path + "/tpu", n, group, has_count, count);
  }
  if (const auto bad = normalize_numa(n); !bad.empty()) p.fail(ErrorCode::kScenarioBadDevices, path + "/topology", bad);
  if (nics) parse_node_nics(p, *nics, path + "/nics", n);
  return n;
}

/// A node group's `autoscale`: {"min": 0, "provisioning_delay_s": 300, "scale_down_idle_s": 600};
/// the group's `count` is its maximum size.
sim::AutoscaleGroup parse_autoscale(const Parser& p, const nlohmann::json& j, const std::string& path) {
  p.expect_object(j, path);
  sim::AutoscaleGroup g;
  for (const auto& [k, v] : j.items()) {
    const std::string f = path + "/" + k;
    if (k == "min") g.min = static_cast<std::uint32_t>(p.integer(v, f, 0, kMaxNodes));
    else if (k == "provisioning_delay_s") g.provisioning_delay = p.seconds(v, f, false);
    else if (k == "scale_down_idle_s") g.scale_down_idle = p.seconds(v, f, false);
    else p.unknown(f, "min, provisioning_delay_s, scale_down_idle_s");
  }
  return g;
}

/// Rejects `count` more nodes of `gpus` GPUs each when the cluster would pass kMaxNodes or
/// kMaxGpus (checked before the nodes are made, so a huge count costs no memory).
/// `gpu_total`: the GPUs counted so far (updated).
void check_cluster_size(const Parser& p, const Scenario& sc, std::int64_t count, std::int64_t gpus, const std::string& path,
                        std::int64_t& gpu_total) {
  const auto nodes = static_cast<std::int64_t>(sc.nodes.size());
  if (nodes + count > kMaxNodes) {
    p.fail(ErrorCode::kScenarioOutOfRange, path, std::to_string(nodes + count) + " nodes is out of range: a cluster has at most " +
                                                     std::to_string(kMaxNodes) + " nodes");
  }
  if (gpu_total + count * gpus > kMaxGpus) {
    p.fail(ErrorCode::kScenarioOutOfRange, path, std::to_string(gpu_total + count * gpus) +
                                                     " GPUs is out of range: a cluster has at most " + std::to_string(kMaxGpus) + " GPUs");
  }
  gpu_total += count * gpus;
}

void parse_cluster(const Parser& p, const nlohmann::json& j, Scenario& sc) {
  p.expect_object(j, "/cluster");
  std::int64_t gpu_total = 0;   // GPUs of the nodes so far (check_cluster_size)
  {
    // The declared size first (group counts, then the nodes), so that a cluster past kMaxNodes
    // is rejected before a single node is made.
    std::int64_t declared = 0;
    auto over = [&](const std::string& path) {
      p.fail(ErrorCode::kScenarioOutOfRange, path, std::to_string(declared) + " nodes is out of range: a cluster has at most " +
                                                       std::to_string(kMaxNodes) + " nodes");
    };
    if (j.contains("node_groups") && j["node_groups"].is_array()) {
      const auto& groups = j["node_groups"];
      for (std::size_t i = 0; i < groups.size(); ++i) {
        const std::string path = "/cluster/node_groups/" + std::to_string(i) + "/count";
        const bool counted = groups[i].is_object() && groups[i].contains("count");
        declared += counted ? p.integer(groups[i]["count"], path, 0, kMaxNodes) : 1;
        if (declared > kMaxNodes) over(path);
      }
    }
    if (j.contains("nodes") && j["nodes"].is_array() && declared + static_cast<std::int64_t>(j["nodes"].size()) > kMaxNodes) {
      const auto first_over = kMaxNodes - declared;
      declared += static_cast<std::int64_t>(j["nodes"].size());
      over("/cluster/nodes/" + std::to_string(first_over));
    }
  }
  if (j.contains("gpu_models")) sc.catalog.add_json(j["gpu_models"], p.source() + " /cluster/gpu_models");
  for (const auto& [k, v] : j.items()) {
    if (k == "gpu_models") continue;
    if (k == "node_groups") {
      if (!v.is_array()) p.fail(ErrorCode::kScenarioBadValue, "/cluster/node_groups", "expected a list");
      for (std::size_t i = 0; i < v.size(); ++i) {
        std::int64_t count = 1;
        const std::string path = "/cluster/node_groups/" + std::to_string(i);
        nlohmann::json group = v[i];
        std::optional<sim::AutoscaleGroup> scale;
        if (group.is_object() && group.contains("autoscale")) {
          scale = parse_autoscale(p, group["autoscale"], path + "/autoscale");
          group.erase("autoscale");
        }
        NodeSpec tmpl = parse_node(p, group, path, sc.catalog, sc.resources, true, count);
        check_cluster_size(p, sc, count, static_cast<std::int64_t>(tmpl.gpus.size()), path + "/count", gpu_total);
        if (scale) {
          scale->name = tmpl.name;
          scale->first = static_cast<std::uint32_t>(sc.nodes.size());
          scale->max = static_cast<std::uint32_t>(count);
          if (scale->min > scale->max) {
            p.fail(ErrorCode::kScenarioBadValue, path + "/autoscale/min", "min (" + std::to_string(scale->min) +
                   ") is above the group's count (" + std::to_string(count) + "), which is its maximum size");
          }
          sc.autoscaler.groups.push_back(*scale);
        }
        const int width = count >= 10000 ? 5 : 4;
        std::optional<TpuPoolGrid> grid;
        if (!tmpl.tpu.pool_topology.empty()) {
          const auto& gen = TpuCatalog::builtin().require(tmpl.tpu.generation, {});
          grid = pool_grid(gen, parse_tpu_topology(tmpl.tpu.pool_topology, {}), tmpl.tpu.chips, {});
        }
        for (std::int64_t c = 0; c < count; ++c) {
          NodeSpec n = tmpl;
          if (grid) n.tpu.coords = grid->coords_of(static_cast<std::uint32_t>(c));
          std::string idx = std::to_string(c);
          n.name = tmpl.name + "-" + std::string(static_cast<std::size_t>(std::max<int>(0, width - static_cast<int>(idx.size()))), '0') + idx;
          sc.nodes.push_back(std::move(n));
        }
      }
    } else if (k == "nodes") {
      if (!v.is_array()) p.fail(ErrorCode::kScenarioBadValue, "/cluster/nodes", "expected a list");
      for (std::size_t i = 0; i < v.size(); ++i) {
        std::int64_t count = 1;
        const std::string path = "/cluster/nodes/" + std::to_string(i);
        NodeSpec n = parse_node(p, v[i], path, sc.catalog, sc.resources, false, count);
        check_cluster_size(p, sc, 1, static_cast<std::int64_t>(n.gpus.size()), path, gpu_total);
        sc.nodes.push_back(std::move(n));
      }
    } else if (k == "import") {
      // Node lists in any supported format: [{"path": "nodes.csv", "format": "openb-nodes"}].
      if (!v.is_array()) p.fail(ErrorCode::kScenarioBadValue, "/cluster/import", "expected a list of {path, format}");
      for (std::size_t i = 0; i < v.size(); ++i) {
        const std::string path = "/cluster/import/" + std::to_string(i);
        p.expect_object(v[i], path);
        std::filesystem::path file;
        std::string format;
        // Or one machine from saved nvidia-smi output: {"nvidia_smi_xml", "topo", "mig_lgip", "name", "cpu", "memory", "mig_dynamic"}.
        std::filesystem::path smi_xml, smi_topo, smi_lgip;
        traces::NodeSpecDefaults smi;
        bool smi_entry = false;
        for (const auto& [ik, iv] : v[i].items()) {
          const std::string f = path + "/" + ik;
          if (ik == "path") file = p.str(iv, f);
          else if (ik == "format") format = p.str(iv, f);
          else if (ik == "nvidia_smi_xml") smi_xml = p.str(iv, f);
          else if (ik == "topo") smi_topo = p.str(iv, f);
          else if (ik == "mig_lgip") smi_lgip = p.str(iv, f);
          else if (ik == "name") smi.name = p.str(iv, f);
          else if (ik == "cpu") smi.cpu_milli = p.node_cpu_milli(iv, f);
          else if (ik == "memory") smi.memory_mib = p.node_memory_mib(iv, f);
          else if (ik == "mig_dynamic") {
            if (!iv.is_boolean()) p.fail(ErrorCode::kScenarioBadValue, f, "expected true or false");
            smi.mig_dynamic = iv.get<bool>();
          } else {
            p.unknown(f, "path, format (a node list); nvidia_smi_xml, topo, mig_lgip, name, cpu, memory, mig_dynamic (nvidia-smi output)");
          }
          smi_entry = smi_entry || (ik != "path" && ik != "format");
        }
        if (smi_entry) {
          if (!file.empty() || !format.empty()) {
            p.fail(ErrorCode::kScenarioBadValue, path, "give path/format (a node list) or nvidia_smi_xml/topo (one machine), not both");
          }
          if (smi_xml.empty()) p.fail(ErrorCode::kScenarioMissingField, path + "/nvidia_smi_xml", "missing field 'nvidia_smi_xml' (`nvidia-smi -q -x` output)");
          if (smi_topo.empty()) p.fail(ErrorCode::kScenarioMissingField, path + "/topo", "missing field 'topo' (`nvidia-smi topo -m` output)");
          if (smi.name.empty()) p.fail(ErrorCode::kScenarioMissingField, path + "/name", "missing field 'name'");
          for (auto* f : {&smi_xml, &smi_topo, &smi_lgip}) {
            if (!f->empty() && f->is_relative()) *f = sc.base_dir / *f;
          }
          NodeSpec n = traces::node_from_nvidia_smi_files(smi_xml, smi_topo, sc.catalog, smi, smi_lgip);
          check_cluster_size(p, sc, 1, static_cast<std::int64_t>(n.gpus.size()), path, gpu_total);
          sc.nodes.push_back(std::move(n));
          continue;
        }
        if (file.empty()) p.fail(ErrorCode::kScenarioMissingField, path + "/path", "missing field 'path'");
        if (!format.empty()) (void)traces::require_format(format, p.at(path + "/format"));
        if (file.is_relative()) file = sc.base_dir / file;
        auto nodes = traces::import_nodes(file, format, sc.catalog, sc.resources);
        for (auto& n : nodes) {
          check_cluster_size(p, sc, 1, static_cast<std::int64_t>(n.gpus.size()), path, gpu_total);
          sc.nodes.push_back(std::move(n));
        }
      }
    } else {
      p.unknown("/cluster/" + k, "gpu_models, node_groups, nodes, import");
    }
  }
  if (sc.nodes.empty()) p.fail(ErrorCode::kScenarioMissingField, "/cluster", "the cluster has no nodes (give node_groups or nodes)");
  std::vector<std::string> names;
  names.reserve(sc.nodes.size());
  for (const auto& n : sc.nodes) names.push_back(n.name);
  std::sort(names.begin(), names.end());
  if (auto d = std::adjacent_find(names.begin(), names.end()); d != names.end()) {
    p.fail(ErrorCode::kScenarioDuplicateNode, "/cluster", "two nodes are named \"" + *d + "\"");
  }
}

/// One transform step: {"shuffle": true} | {"resample_gpu_pct": 130} | {"scale_time": 0.5} |
/// {"target_load": 0.8} | {"filter": {"queues": [...], "kinds": [...]}} | {"arrival_only": true}.
TransformStep parse_transform(const Parser& p, const nlohmann::json& j, const std::string& path) {
  p.expect_object(j, path);
  if (j.size() != 1) p.fail(ErrorCode::kScenarioBadValue, path, "a step has exactly one of shuffle, resample_gpu_pct, scale_time, target_load, filter, arrival_only");
  const std::string& k = j.begin().key();
  const nlohmann::json& v = j.begin().value();
  const std::string f = path + "/" + k;
  TransformStep t;
  t.path = f;
  auto flag = [&] {
    if (!v.is_boolean() || !v.get<bool>()) p.fail(ErrorCode::kScenarioBadValue, f, "expected true");
  };
  if (k == "shuffle") { flag(); t.kind = TransformStep::Kind::kShuffle; }
  else if (k == "arrival_only") { flag(); t.kind = TransformStep::Kind::kArrivalOnly; }
  else if (k == "resample_gpu_pct") {
    t.kind = TransformStep::Kind::kResample;
    t.value = p.number(v, f, 0, 10000, "% of the cluster's GPU capacity");
    if (t.value <= 0) p.fail(ErrorCode::kScenarioOutOfRange, f, "0 is out of range: must be > 0 (% of the cluster's GPU capacity)");
  } else if (k == "scale_time") {
    t.kind = TransformStep::Kind::kScaleTime;
    t.value = p.number(v, f, kMinScaleTime, kMaxScaleTime, "a factor");
  } else if (k == "target_load") {
    t.kind = TransformStep::Kind::kTargetLoad;
    t.value = p.number(v, f, kMinTargetLoad, kMaxTargetLoad,
                       "the offered GPU load, e.g. 0.8 = GPU work for 80% of the cluster's GPUs while jobs arrive");
  } else if (k == "filter") {
    t.kind = TransformStep::Kind::kFilter;
    p.expect_object(v, f);
    for (const auto& [fk, fv] : v.items()) {
      const std::string ff = f + "/" + fk;
      if (!fv.is_array()) p.fail(ErrorCode::kScenarioBadValue, ff, "expected a list of strings");
      for (std::size_t i = 0; i < fv.size(); ++i) {
        const auto item = p.str(fv[i], ff + "/" + std::to_string(i));
        if (fk == "queues") t.queues.push_back(item);
        else if (fk == "kinds") {
          if (!traces::parse_job_kind(item)) p.fail(ErrorCode::kScenarioBadValue, ff + "/" + std::to_string(i), "unknown kind (known: cpu, share, one-gpu, multi-gpu, other)");
          t.kinds.push_back(item);
        } else {
          p.unknown(ff, "queues, kinds");
        }
      }
    }
  } else {
    p.unknown(f, "shuffle, resample_gpu_pct, scale_time, target_load, filter, arrival_only");
  }
  return t;
}

void parse_workload(const Parser& p, const nlohmann::json& j, Scenario& sc) {
  p.expect_object(j, "/workload");
  if (j.size() != 1) p.fail(ErrorCode::kScenarioBadValue, "/workload", "give exactly one of synthetic, trace, jobs");
  // Not `const auto& [k, v] = *j.items().begin()`: that binds to a temporary that is gone
  // before k and v are read.
  const std::string& k = j.begin().key();
  const nlohmann::json& v = j.begin().value();
  if (k == "synthetic") {
    sc.synthetic = traces::SyntheticConfig::from_json(v, p.source(), "/workload/synthetic");
  } else if (k == "trace") {
    std::filesystem::path t;
    if (v.is_string()) {
      t = v.get<std::string>();
    } else {
      // {"path": ..., "format": "openb-pods", "transforms": [{"shuffle": true}, {"resample_gpu_pct": 130}, ...]}
      p.expect_object(v, "/workload/trace");
      for (const auto& [tk, tv] : v.items()) {
        const std::string f = "/workload/trace/" + tk;
        if (tk == "path") t = p.str(tv, f);
        else if (tk == "format") {
          sc.trace_format = p.str(tv, f);
          (void)traces::require_format(sc.trace_format, p.at(f));
        } else if (tk == "transforms") {
          if (!tv.is_array()) p.fail(ErrorCode::kScenarioBadValue, f, "expected a list of steps, e.g. [{\"shuffle\": true}, {\"resample_gpu_pct\": 130}]");
          for (std::size_t i = 0; i < tv.size(); ++i) sc.transforms.push_back(parse_transform(p, tv[i], f + "/" + std::to_string(i)));
        } else {
          p.unknown(f, "path, format, transforms");
        }
      }
      if (t.empty()) p.fail(ErrorCode::kScenarioMissingField, "/workload/trace/path", "missing field 'path'");
    }
    if (t.is_relative()) t = sc.base_dir / t;
    sc.trace = t;
  } else if (k == "jobs") {
    if (!v.is_array()) p.fail(ErrorCode::kScenarioBadValue, "/workload/jobs", "expected a list of jobs");
    std::string lines;
    for (const auto& job : v) lines += job.dump() + "\n";
    std::istringstream in(lines);
    sc.jobs = traces::read_trace(in, traces::TraceFormat::kJsonLines, p.source() + " /workload/jobs (line = job number)",
                                 sc.catalog, sc.resources);
  } else {
    p.unknown("/workload/" + k, "synthetic, trace, jobs");
  }
}

/// `dra`: {"objects": [PATH or OBJECT, ...]}: DeviceClasses and ResourceClaimTemplates as kubectl
/// prints them (files relative to the scenario, or inline objects).
void parse_dra(const Parser& p, const nlohmann::json& j, Scenario& sc) {
  p.expect_object(j, "/dra");
  std::vector<KubernetesObject> objects;
  for (const auto& [k, v] : j.items()) {
    const std::string f = "/dra/" + k;
    if (k != "objects") p.unknown(f, "objects");
    if (!v.is_array()) p.fail(ErrorCode::kScenarioBadValue, f, "expected a list of kubectl files or objects");
    for (std::size_t i = 0; i < v.size(); ++i) {
      const std::string fi = f + "/" + std::to_string(i);
      if (v[i].is_string()) {
        std::filesystem::path path = v[i].get<std::string>();
        if (path.is_relative()) path = sc.base_dir / path;
        auto more = read_kubernetes_objects(path);
        objects.insert(objects.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
      } else if (v[i].is_object()) {
        objects.push_back(kubernetes_object_from_json(v[i], p.source(), fi));
      } else {
        p.fail(ErrorCode::kScenarioBadValue, fi, "expected a file path or a Kubernetes object");
      }
    }
  }
  const DraObjects dra = read_dra_objects(objects);
  if (!dra.nodes.empty()) {
    p.fail(ErrorCode::kScenarioBadValue, "/dra/objects",
           "a scenario's dra.objects holds DeviceClasses, ResourceClaimTemplates, ResourceClaims and ResourceSlices: nodes come "
           "from the cluster");
  }
  for (const auto& c : dra.claims) {
    // A shared claim is allocated when the first job naming it starts (the simulation's state).
    if (c.allocated) {
      p.fail(ErrorCode::kScenarioBadValue, "/dra/objects",
             "ResourceClaim \"" + c.id() + "\" has status.allocation: in a simulation a shared claim starts unallocated and is "
             "allocated when the first job naming it (resource_claim) starts");
    }
    if (!sc.resource_claims.emplace(c.name, c).second) {
      p.fail(ErrorCode::kScenarioBadValue, "/dra/objects",
             "two ResourceClaims are named \"" + c.name + "\": jobs name a claim by its name alone (resource_claim)");
    }
  }
  if (!dra.slices.empty()) sc.dra_slices = std::make_shared<const std::vector<dra::ResourceSlice>>(dra.slices);
  auto classes = std::make_shared<std::vector<dra::DeviceClass>>(dra::builtin_device_classes());
  for (const auto& c : dra.classes) {
    auto it = std::find_if(classes->begin(), classes->end(), [&](const dra::DeviceClass& x) { return x.name == c.name; });
    if (it != classes->end()) *it = c;
    else classes->push_back(c);
  }
  sc.dra_classes = std::move(classes);
  for (const auto& t : dra.templates) sc.claim_templates[t.name] = t;
}

/// `devices`: {"mig_reconfigure_s": 5, "time_slicing_overhead": 0.05, "replica_allocation": "device-plugin",
///  "slowdown": {"vgpu": 1.05, "passthrough": 1.0, "mig": 1.0, "pcie": 1.1, "cross_socket": 1.3}}
void parse_devices(const Parser& p, const nlohmann::json& j, DeviceOptions& o) {
  p.expect_object(j, "/devices");
  for (const auto& [k, v] : j.items()) {
    const std::string f = "/devices/" + k;
    if (k == "mig_reconfigure_s") o.mig_reconfigure_us = p.seconds(v, f, false).us;
    else if (k == "time_slicing_overhead") o.time_slicing_overhead = p.number(v, f, 0, kMaxTimeSlicingOverhead);
    else if (k == "replica_allocation") {
      const auto a = p.str(v, f);
      if (a == to_string(ReplicaAllocation::kDevicePlugin)) o.replica_allocation = ReplicaAllocation::kDevicePlugin;
      else if (a == to_string(ReplicaAllocation::kOnePerGpu)) o.replica_allocation = ReplicaAllocation::kOnePerGpu;
      else p.fail(ErrorCode::kScenarioBadValue, f, "expected \"device-plugin\" or \"one-per-gpu\" (docs/sharing.md)");
    } else if (k == "slowdown") {
      p.expect_object(v, f);
      for (const auto& [sk, sv] : v.items()) {
        const std::string sf = f + "/" + sk;
        const double x = p.number(sv, sf, 1.0, kMaxSlowdown);
        if (sk == "vgpu") o.vgpu_slowdown = x;
        else if (sk == "passthrough") o.passthrough_slowdown = x;
        else if (sk == "mig") o.mig_slowdown = x;
        else if (sk == "pcie") o.pcie_slowdown = x;
        else if (sk == "cross_socket") o.cross_socket_slowdown = x;
        else p.unknown(sf, "vgpu, passthrough, mig, pcie, cross_socket");
      }
    } else {
      p.unknown(f, "mig_reconfigure_s, time_slicing_overhead, replica_allocation, slowdown");
    }
  }
}

/// Kueue's waitForPodsReady: {timeout_s, requeuing: {timestamp, backoff_limit_count,
/// backoff_base_s, backoff_max_s}} (sim::WaitForPodsReady; Kueue's defaults when left out).
void parse_wait_for_pods_ready(const Parser& p, const nlohmann::json& j, sim::WaitForPodsReady& w) {
  p.expect_object(j, "/wait_for_pods_ready");
  w.enabled = true;
  for (const auto& [k, v] : j.items()) {
    const std::string f = "/wait_for_pods_ready/" + k;
    if (k == "enable") {
      if (!v.is_boolean()) p.fail(ErrorCode::kScenarioBadValue, f, "expected true or false");
      w.enabled = v.get<bool>();
    } else if (k == "timeout_s") {
      w.timeout = p.seconds(v, f, true);
    } else if (k == "requeuing") {
      p.expect_object(v, f);
      for (const auto& [rk, rv] : v.items()) {
        const std::string rf = f + "/" + rk;
        if (rk == "timestamp") {
          const auto t = p.str(rv, rf);
          if (t == "Eviction") w.timestamp = sim::RequeueTimestamp::kEviction;
          else if (t == "Creation") w.timestamp = sim::RequeueTimestamp::kCreation;
          else p.fail(ErrorCode::kScenarioBadValue, rf, "expected \"Eviction\" or \"Creation\"");
        } else if (rk == "backoff_limit_count") {
          if (rv.is_null()) w.backoff_limit_count.reset();
          else w.backoff_limit_count = static_cast<std::uint32_t>(p.integer(rv, rf, 0, 1'000'000'000));
        } else if (rk == "backoff_base_s") {
          w.backoff_base = p.seconds(rv, rf, false);
        } else if (rk == "backoff_max_s") {
          w.backoff_max = p.seconds(rv, rf, false);
        } else {
          p.unknown(rf, "timestamp, backoff_limit_count, backoff_base_s, backoff_max_s");
        }
      }
    } else {
      p.unknown(f, "enable, timeout_s, requeuing");
    }
  }
}

}  // namespace

void resolve_profile_paths(policies::Profile& profile, const std::filesystem::path& base_dir) {
  // gittins' service distribution: a file beside the scenario, as every other path it names.
  auto& qs = profile.queue_sort;
  if (qs.name != "gittins" || !qs.args.is_object() || base_dir.empty()) return;
  const auto it = qs.args.find("distribution");
  if (it == qs.args.end() || !it->is_string()) return;
  const std::filesystem::path file = it->get<std::string>();
  if (!file.empty() && file.is_relative()) *it = (base_dir / file).string();
}

Scenario parse_scenario(const nlohmann::json& doc, const std::string& source, const std::filesystem::path& base_dir,
                        const policies::Registry& registry) {
  if (doc.is_object() && doc.contains("kubernetes_objects")) {
    // Kueue/Volcano/Kubernetes objects become priority classes and profile args (k8s_objects.hpp).
    nlohmann::json plugin_args;
    auto sc = parse_scenario(resolve_kubernetes_objects(doc, source, base_dir, registry, &plugin_args), source, base_dir, registry);
    sc.kubernetes_plugin_args = std::move(plugin_args);
    return sc;
  }
  Parser p(source);
  Scenario sc;
  sc.source = printable_utf8(source);   // a file name is not always UTF-8; summary.json records it
  sc.base_dir = base_dir;
  sc.document = doc;
  sc.catalog = GpuCatalog::builtin();
  p.expect_object(doc, "");
  if (!doc.contains("schema_version")) p.fail(ErrorCode::kScenarioMissingField, "/schema_version", "missing field 'schema_version' (use 1)");
  if (doc["schema_version"] != kScenarioSchemaVersion) {
    p.fail(ErrorCode::kScenarioSchemaVersion, "/schema_version", "schema_version " + doc["schema_version"].dump() + " is not supported (this build reads 1)");
  }
  for (const char* required : {"cluster", "workload"}) {
    if (!doc.contains(required)) p.fail(ErrorCode::kScenarioMissingField, std::string("/") + required, std::string("missing field '") + required + "'");
  }
  parse_cluster(p, doc["cluster"], sc);   // first: gpu_models extend the catalog for the rest
  bool fill = false;
  std::optional<bool> retry;
  const nlohmann::json* pdbs = nullptr;   // pod_disruption_budgets, validated
  for (const auto& [k, v] : doc.items()) {
    const std::string f = "/" + k;
    if (k == "schema_version" || k == "cluster") continue;
    if (k == "name") sc.name = p.str(v, f);
    else if (k == "description") sc.description = p.str(v, f);
    else if (k == "seed") sc.seed = p.seed(v, f);
    else if (k == "horizon_s") sc.engine.horizon = v.is_null() ? SimTime::forever() : p.seconds(v, f, false);
    else if (k == "mode") {
      const auto m = p.str(v, f);
      if (m == "fill") fill = true;
      else if (m != "replay") p.fail(ErrorCode::kScenarioBadValue, f, "expected \"replay\" (jobs run and finish) or \"fill\" (arrival-only)");
    } else if (k == "retry") {
      if (!v.is_boolean()) p.fail(ErrorCode::kScenarioBadValue, f, "expected true or false");
      retry = v.get<bool>();
    } else if (k == "requeue_on_node_down") {
      if (!v.is_boolean()) p.fail(ErrorCode::kScenarioBadValue, f, "expected true or false");
      sc.engine.requeue_on_node_down = v.get<bool>();
    } else if (k == "profile") {
      try {
        sc.profile = v.is_string() ? policies::builtin_profile(v.get<std::string>(), source)
                                   : policies::Profile::from_json(v, source);
        resolve_profile_paths(sc.profile, sc.base_dir);
        // Build it once now, so a bad profile is reported with this file before anything runs.
        policies::Scheduler check(sc.profile, registry, 0);
      } catch (const ProfileError& e) {
        const auto& inner = e.where().field;
        throw_error(e.code(), {source, 0, inner.empty() || inner == "profile" ? "/profile" : "/profile/" + inner}, e.detail());
      }
    } else if (k == "devices") {
      parse_devices(p, v, sc.devices);
    } else if (k == "priority_classes") {
      p.expect_object(v, f);
      int defaults = 0;
      for (const auto& [name, pc] : v.items()) {
        const std::string cf = f + "/" + name;
        PriorityClass c;
        // Up to Kubernetes' limit for user classes; the two system classes only at their own values.
        const auto system = system_priority_class(name);
        const std::int64_t top = system ? *system : kHighestUserPriority;
        const auto check_system = [&](std::int64_t value, const std::string& at) {
          if (system && value != *system) {
            p.fail(ErrorCode::kScenarioBadValue, at,
                   "\"" + name + "\" is Kubernetes' built-in priority class: its value is " + std::to_string(*system) +
                       " (leave it out: jobs may name it without defining it)");
          }
        };
        if (pc.is_number_integer()) {
          c.value = static_cast<std::int32_t>(p.integer(pc, cf, -2'000'000'000, top));
          check_system(c.value, cf);
        } else {
          p.expect_object(pc, cf);
          bool has_value = false;
          for (const auto& [ck, cv] : pc.items()) {
            const std::string kf = cf + "/" + ck;
            if (ck == "value") {
              c.value = static_cast<std::int32_t>(p.integer(cv, kf, -2'000'000'000, top));
              check_system(c.value, kf);
              has_value = true;
            }
            else if (ck == "preemption_policy") {
              const auto pol = p.str(cv, kf);
              if (pol != "Never" && pol != "PreemptLowerPriority") p.fail(ErrorCode::kScenarioBadValue, kf, "expected \"PreemptLowerPriority\" or \"Never\"");
              c.preempt_never = pol == "Never";
            } else if (ck == "global_default") {
              if (!cv.is_boolean()) p.fail(ErrorCode::kScenarioBadValue, kf, "expected true or false");
              c.global_default = cv.get<bool>();
            } else {
              p.unknown(kf, "value, preemption_policy, global_default");
            }
          }
          if (!has_value) p.fail(ErrorCode::kScenarioMissingField, cf + "/value", "a priority class needs a value");
        }
        defaults += c.global_default ? 1 : 0;
        if (defaults > 1) p.fail(ErrorCode::kScenarioBadValue, cf + "/global_default", "only one priority class may be the global default");
        sc.priority_classes[name] = c;
      }
    } else if (k == "preemption") {
      p.expect_object(v, f);
      for (const auto& [pk, pv] : v.items()) {
        const std::string pf = f + "/" + pk;
        if (pk == "restart") {
          const auto r = p.str(pv, pf);
          if (r == "from-zero") sc.engine.preemption.restart = sim::RestartPolicy::kFromZero;
          else if (r == "checkpoint") sc.engine.preemption.restart = sim::RestartPolicy::kCheckpoint;
          else if (r == "resume") sc.engine.preemption.restart = sim::RestartPolicy::kResume;
          else p.fail(ErrorCode::kScenarioBadValue, pf, "expected \"from-zero\", \"checkpoint\" or \"resume\"");
          sc.restart_given = true;
        } else if (pk == "checkpoint_interval_s") {
          sc.engine.preemption.checkpoint_interval = p.seconds(pv, pf, true);
        } else if (pk == "restart_overhead_s") {
          sc.engine.preemption.restart_overhead = p.seconds(pv, pf, false);
        } else if (pk == "placement") {
          const auto m = p.str(pv, pf);
          if (m == "count") sc.count_gpus = true;
          else if (m != "profile") p.fail(ErrorCode::kScenarioBadValue, pf, "expected \"profile\" or \"count\"");
        } else {
          p.unknown(pf, "restart, checkpoint_interval_s, restart_overhead_s, placement");
        }
      }
    } else if (k == "wait_for_pods_ready") {
      parse_wait_for_pods_ready(p, v, sc.engine.wait_for_pods_ready);
    } else if (k == "pod_disruption_budgets") {
      // Checked here (errors name this file); priority-preemption reads them as its argument.
      (void)policies::parse_pod_disruption_budgets(v, p.at(f), ErrorCode::kScenarioBadValue,
                                                   ErrorCode::kScenarioMissingField, ErrorCode::kScenarioUnknownField);
      pdbs = &v;
    } else if (k == "autoscaler") {
      p.expect_object(v, f);
      for (const auto& [ak, av] : v.items()) {
        const std::string af = f + "/" + ak;
        if (ak == "scan_interval_s") sc.autoscaler.scan_interval = SimTime::from_seconds_f(p.number(av, af, kMinScanIntervalSeconds, kMaxInputSeconds, "seconds"));
        else if (ak == "expander") {
          const auto e = sim::parse_expander(p.str(av, af));
          if (!e) p.fail(ErrorCode::kScenarioBadValue, af, "expected \"least-waste\", \"first\" or \"least-idle-gpu\"");
          sc.autoscaler.expander = *e;
        } else {
          p.unknown(af, "scan_interval_s, expander");
        }
      }
    } else if (k == "dra") {
      parse_dra(p, v, sc);
    } else if (k == "workload") {
      parse_workload(p, v, sc);
    } else if (k == "outputs") {
      p.expect_object(v, f);
      for (const auto& [ok, ov] : v.items()) {
        if (ok == "sample_interval_s") {
          sc.outputs.sample_interval = p.seconds(ov, f + "/" + ok, true);
        } else if (ok == "event_log") {
          if (!ov.is_boolean()) p.fail(ErrorCode::kScenarioBadValue, f + "/" + ok, "expected true or false");
          sc.outputs.event_log = ov.get<bool>();
        } else if (ok == "fragmentation") {
          const auto m = p.str(ov, f + "/" + ok);
          if (m != "auto" && m != "on" && m != "off") p.fail(ErrorCode::kScenarioBadValue, f + "/" + ok, "expected \"auto\" (when jobs share GPUs), \"on\" or \"off\"");
          sc.outputs.fragmentation = m;
        } else {
          p.unknown(f + "/" + ok, "sample_interval_s, event_log, fragmentation");
        }
      }
    } else if (k == "events") {
      if (!v.is_array()) p.fail(ErrorCode::kScenarioBadValue, f, "expected a list of {time_s, node, type}");
      for (std::size_t i = 0; i < v.size(); ++i) {
        const std::string ef = f + "/" + std::to_string(i);
        p.expect_object(v[i], ef);
        sim::NodeEvent ne;
        std::string node, type;
        bool has_time = false;
        const nlohmann::json* taint = nullptr;
        for (const auto& [ek, ev] : v[i].items()) {
          if (ek == "time_s") { ne.time = p.seconds(ev, ef + "/time_s", false); has_time = true; }
          else if (ek == "node") node = p.str(ev, ef + "/node");
          else if (ek == "type") type = p.str(ev, ef + "/type");
          else if (ek == "taint") taint = &ev;
          else p.unknown(ef + "/" + ek, "time_s, node, type, taint");
        }
        if (!has_time) p.fail(ErrorCode::kScenarioMissingField, ef + "/time_s", "missing field 'time_s'");
        if (type != "node_down" && type != "node_up" && type != "taint" && type != "untaint") {
          p.fail(ErrorCode::kScenarioBadValue, ef + "/type", "expected \"node_down\", \"node_up\", \"taint\" or \"untaint\"");
        }
        ne.up = type == "node_up";
        if (type == "taint" || type == "untaint") {
          if (!taint) p.fail(ErrorCode::kScenarioMissingField, ef + "/taint", "a " + type + " event needs {\"key\", \"value\", \"effect\"}");
          p.expect_object(*taint, ef + "/taint");
          Taint t;
          for (const auto& [tk, tv] : taint->items()) {
            if (tk == "key") t.key = p.str(tv, ef + "/taint/key");
            else if (tk == "value") t.value = p.str(tv, ef + "/taint/value");
            else if (tk == "effect") t.effect = parse_effect(p, tv, ef + "/taint/effect");
            else p.unknown(ef + "/taint/" + tk, "key, value, effect");
          }
          if (t.key.empty()) p.fail(ErrorCode::kScenarioMissingField, ef + "/taint/key", "a taint needs a key");
          ne.taint = t;
          ne.untaint = type == "untaint";
        } else if (taint) {
          p.fail(ErrorCode::kScenarioBadValue, ef + "/taint", "only taint and untaint events take a taint");
        }
        const auto it = std::find_if(sc.nodes.begin(), sc.nodes.end(), [&](const NodeSpec& n) { return n.name == node; });
        if (it == sc.nodes.end()) p.fail(ErrorCode::kScenarioUnknownNode, ef + "/node", "no node is named \"" + node + "\"");
        ne.node = NodeId{static_cast<std::uint32_t>(it - sc.nodes.begin())};
        sc.engine.node_events.push_back(ne);
      }
    } else {
      p.unknown(f, "schema_version, name, description, seed, horizon_s, mode, retry, requeue_on_node_down, cluster, "
                   "devices, profile, workload, events, outputs, priority_classes, pod_disruption_budgets, preemption, autoscaler, "
                   "wait_for_pods_ready, dra");
    }
  }
  if (pdbs != nullptr && !pdbs->empty()) {
    // The budgets go to every priority-preemption post-filter of the profile (others ignore PDBs).
    policies::add_pod_disruption_budgets(sc.profile, *pdbs);
    try {
      policies::Scheduler check(sc.profile, registry, 0);
    } catch (const ProfileError& e) {
      throw_error(ErrorCode::kScenarioBadValue, {source, 0, "/pod_disruption_budgets"}, e.detail());
    }
  }
  sc.engine.fill_mode = fill;
  sc.engine.retry = retry.value_or(!fill);
  std::stable_sort(sc.engine.node_events.begin(), sc.engine.node_events.end(),
                   [](const sim::NodeEvent& a, const sim::NodeEvent& b) { return a.time < b.time; });
  if (sc.trace) {
    sc.jobs = traces::import_workload(*sc.trace, sc.trace_format, sc.catalog, sc.resources);
  }
  apply_priority_classes(sc.jobs, sc.priority_classes, sc.trace ? sc.trace->string() : source + " /workload/jobs");
  return sc;
}

namespace {
/// A request's alternatives: `exactly`, or its firstAvailable list.
std::span<const dra::DeviceSubRequest> alternatives(const dra::DeviceRequest& req) {
  return req.first_available.empty() ? std::span<const dra::DeviceSubRequest>(&req.exactly, 1) : std::span<const dra::DeviceSubRequest>(req.first_available);
}

/// The name an allocation result gives a request's alternative: "req", or "req/sub" in firstAvailable.
std::string result_request(const dra::DeviceRequest& req, const dra::DeviceSubRequest& alt) {
  return req.first_available.empty() ? req.name : req.name + "/" + alt.name;
}

/// Whether the class's and the alternative's selectors all hold for `device`. A CEL runtime error
/// means "not this device", as the dynamic-resources plugin takes it during the run.
bool selects(const dra::DeviceClass& cls, const dra::DeviceSubRequest& alt, const dra::Device& device, const std::string& driver) {
  const auto holds = [&](const std::vector<dra::CelExpression>& sels) {
    return std::all_of(sels.begin(), sels.end(), [&](const dra::CelExpression& e) {
      const auto res = e.evaluate(device, driver);
      return res.error.empty() && res.value;
    });
  };
  return holds(cls.selectors) && holds(alt.selectors);
}

/// What a claim with `All` requests takes on one node: the fewest and the most devices, over
/// every alternative the node could serve (an `All` one: its `matching` devices there; a
/// counted one: its count), added over the `All` requests, to `fixed` (the other requests'
/// fewest and most). An alternative of more than 32 devices is never chosen (the allocator
/// fails it: AllocationResultsMaxSize), and a claim holds 32 at most.
std::pair<std::int64_t, std::int64_t> sizes_on_node(const std::vector<dra::DeviceRequest>& requests, const std::vector<bool>& has_all,
                                                    const std::vector<std::vector<std::vector<std::int64_t>>>& matching, std::size_t node,
                                                    std::pair<std::int64_t, std::int64_t> fixed) {
  auto [low, high] = fixed;
  for (std::size_t q = 0; q < requests.size(); ++q) {
    if (!has_all[q]) continue;
    const auto alts = alternatives(requests[q]);
    std::int64_t lo = std::numeric_limits<std::int64_t>::max(), hi = 0;
    for (std::size_t x = 0; x < alts.size(); ++x) {
      const auto& a = alts[x];
      const std::int64_t on_node = matching[q][x][node];
      const std::int64_t devices_here = a.mode == dra::AllocationMode::kAll ? on_node : a.count;
      if (a.mode == dra::AllocationMode::kAll ? on_node == 0 : on_node < a.count) continue;   // nothing, or too few, match
      if (devices_here > static_cast<std::int64_t>(dra::kMaxDevicesPerClaim)) continue;
      const std::int64_t taken = a.admin_access ? 0 : devices_here;
      lo = std::min(lo, taken);
      hi = std::max(hi, taken);
    }
    if (hi == 0 && lo == std::numeric_limits<std::int64_t>::max()) lo = 0;   // (admin access only: matching is not counted)
    low += lo;
    high += hi;
  }
  return {low, std::min<std::int64_t>(high, dra::kMaxDevicesPerClaim)};
}

/// How the jobs sharing `claim` share its devices, as NVIDIA's DRA driver prepares them
/// (k8s-dra-driver-gpu: cmd/gpu-kubelet-plugin/device_state.go prepareDevices;
/// api/nvidia.com/resource/v1beta1 gpuconfig.go DefaultGpuConfig and Normalize, sharing.go,
/// validate.go). The allocation carries the configs of the requests' classes, then the claim's;
/// the driver decodes every one of its driver strictly, puts its defaults (a GpuConfig and a
/// MigDeviceConfig, both TimeSlicing) first, and walks the list backwards per allocated device:
/// a config naming the device's request (exactly: "req" or "req/sub") applies, or fails when it
/// is of the wrong type; one naming no request applies when of the device's type, else is
/// skipped. `mig`: the claim gets GIs (a MigDeviceConfig's type), else whole GPUs (GpuConfig).
/// The requests must agree (a job shares one way). Errors quote the driver where it has words and
/// name the claim as `who` ("ResourceClaim \"x\"", or the template it is made from).
void read_claim_sharing(dra::DeviceClaims& dc, const dra::ResourceClaim& claim, const std::vector<dra::DeviceClass>& classes, bool mig,
                        const std::string& who, const Location& where) {
  constexpr std::string_view kDriver = "gpu.nvidia.com";
  using Sharing = dra::DeviceClaims::Sharing;
  const char* want = mig ? "MigDeviceConfig" : "GpuConfig";
  // One config of the driver as the allocation lists it.
  struct Entry {
    const dra::OpaqueConfig* config;
    std::vector<std::string> requests;   // empty: every request
    std::string source;
  };
  std::vector<Entry> entries;
  for (const auto& req : claim.requests) {
    for (const auto& alt : alternatives(req)) {
      const auto cls = std::find_if(classes.begin(), classes.end(), [&](const dra::DeviceClass& c) { return c.name == alt.device_class; });
      if (cls == classes.end()) continue;
      const std::string full = result_request(req, alt);
      for (std::size_t i = 0; i < cls->config.size(); ++i) {
        if (cls->config[i].driver != kDriver) continue;
        entries.push_back({&cls->config[i], {full}, "DeviceClass \"" + cls->name + "\" config[" + std::to_string(i) + "]"});
      }
    }
  }
  for (std::size_t i = 0; i < claim.config.size(); ++i) {
    const auto& c = claim.config[i];
    if (c.opaque.driver == kDriver) entries.push_back({&c.opaque, c.requests, who + " spec.devices.config[" + std::to_string(i) + "]"});
  }
  // Decode each as the driver's StrictDecoder would: a known kind, known fields, right types.
  struct Decoded {
    std::string kind;
    nlohmann::json params;   // its `sharing`, or null
  };
  std::vector<Decoded> decoded;
  for (const auto& e : entries) {
    const auto fail = [&](const std::string& why) { throw_error(ErrorCode::kTraceBadValue, where, e.source + ": " + why); };
    const auto params = nlohmann::json::parse(e.config->parameters, nullptr, false);
    if (!params.is_object()) fail("the parameters of NVIDIA's driver are an object");
    Decoded d;
    if (!params.contains("kind")) fail("no kind (NVIDIA's driver reads GpuConfig, MigDeviceConfig or VfioDeviceConfig)");
    if (!params["kind"].is_string()) fail("kind must be a string, not " + params["kind"].dump());
    d.kind = params["kind"].get<std::string>();
    if (d.kind != "GpuConfig" && d.kind != "MigDeviceConfig" && d.kind != "VfioDeviceConfig") {
      fail("kind \"" + d.kind + "\" is none NVIDIA's driver reads (GpuConfig, MigDeviceConfig, VfioDeviceConfig)");
    }
    for (const auto& [k, v] : params.items()) {
      if (k != "apiVersion" && k != "kind" && !(k == "sharing" && d.kind != "VfioDeviceConfig")) fail("unknown field \"" + k + "\" in a " + d.kind);
    }
    if (params.contains("sharing") && !params["sharing"].is_null()) {
      const auto& sh = params["sharing"];
      if (!sh.is_object()) fail("sharing must be an object, not " + sh.dump());
      for (const auto& [k, v] : sh.items()) {
        if (k != "strategy" && k != "mpsConfig" && !(k == "timeSlicingConfig" && d.kind == "GpuConfig")) {
          fail("unknown field \"sharing." + k + "\" in a " + d.kind);
        }
      }
      const auto present = [&](const char* k) { return sh.contains(k) && !sh[k].is_null(); };
      if (!sh.contains("strategy") || !sh["strategy"].is_string()) {
        fail("sharing.strategy must be \"TimeSlicing\" or \"MPS\", not " + (sh.contains("strategy") ? sh["strategy"].dump() : std::string("missing")));
      }
      if (present("timeSlicingConfig")) {
        const auto& t = sh["timeSlicingConfig"];
        if (!t.is_object()) fail("timeSlicingConfig must be an object, not " + t.dump());
        for (const auto& [k, v] : t.items()) {
          if (k != "interval") fail("unknown field \"sharing.timeSlicingConfig." + k + "\"");
          if (!v.is_null() && !v.is_string()) fail("timeSlicingConfig.interval must be a string, not " + v.dump());
        }
      }
      if (present("mpsConfig")) {
        const auto& m = sh["mpsConfig"];
        if (!m.is_object()) fail("mpsConfig must be an object, not " + m.dump());
        for (const auto& [k, v] : m.items()) {
          if (k != "defaultActiveThreadPercentage" && k != "defaultPinnedDeviceMemoryLimit" && k != "defaultPerDevicePinnedMemoryLimit") {
            fail("unknown field \"sharing.mpsConfig." + k + "\"");
          }
          if (k != "defaultActiveThreadPercentage" || v.is_null()) continue;
          if (!v.is_number_integer()) fail("defaultActiveThreadPercentage must be an integer, not " + v.dump());
          if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
            fail("defaultActiveThreadPercentage " + v.dump() + " does not fit an int");   // (Go's int: 64 bits)
          }
        }
      }
      d.params = sh;
    }
    decoded.push_back(std::move(d));
  }
  // What the driver makes of the config it applies (Normalize, Validate, and the sharing
  // getters applyConfig calls), in its words.
  const auto validate = [&](const Entry& e, const nlohmann::json& sh, const std::string& request) -> std::pair<Sharing, std::int32_t> {
    const auto fail = [&](const std::string& why) {
      throw_error(ErrorCode::kTraceBadValue, where, e.source + " (request " + request + "): " + why);
    };
    if (sh.is_null()) return {Sharing::kTimeSlicing, 100};   // Normalize: TimeSlicing
    const auto present = [&](const char* k) { return sh.contains(k) && !sh[k].is_null(); };
    const std::string strategy = sh["strategy"].get<std::string>();
    if (strategy == "TimeSlicing") {
      if (present("mpsConfig")) fail("cannot use MpsConfig with the 'TimeSlicing' strategy");
      if (present("timeSlicingConfig") && sh["timeSlicingConfig"].contains("interval") && !sh["timeSlicingConfig"]["interval"].is_null()) {
        static const std::set<std::string> kIntervals{"Default", "Short", "Medium", "Long"};
        const auto iv = sh["timeSlicingConfig"]["interval"].get<std::string>();
        if (kIntervals.count(iv) == 0) fail("unknown time-slice interval: " + iv);
      }
      return {Sharing::kTimeSlicing, 100};
    }
    if (strategy == "MPS") {
      if (present("timeSlicingConfig")) fail("cannot use TimeSlicingConfig with the 'MPS' strategy");
      std::int32_t pct = 100;
      if (present("mpsConfig") && sh["mpsConfig"].contains("defaultActiveThreadPercentage") && !sh["mpsConfig"]["defaultActiveThreadPercentage"].is_null()) {
        const auto v = sh["mpsConfig"]["defaultActiveThreadPercentage"].get<std::int64_t>();
        if (v < 0) fail("active thread percentage must not be negative");
        if (v > 100) fail("active thread percentage must not be greater than 100");
        if (v == 0) fail("an active thread percentage of 0 gives the claim's jobs no SMs: they would never finish");
        pct = static_cast<std::int32_t>(v);
      }
      return {Sharing::kMps, pct};
    }
    if (strategy == "Fabric") fail("fabric GPU sharing strategy is not enabled");
    fail("unknown GPU sharing strategy: " + strategy);
    return {};
  };
  // Per allocated request, the config the driver applies.
  std::optional<std::pair<Sharing, std::int32_t>> agreed;
  std::string agreed_by;
  for (const auto& req : claim.requests) {
    for (const auto& alt : alternatives(req)) {
      if (alt.admin_access) continue;
      const std::string full = result_request(req, alt);
      std::pair<Sharing, std::int32_t> got{Sharing::kTimeSlicing, 100};   // the driver's default
      for (std::size_t i = entries.size(); i-- > 0;) {
        const auto& e = entries[i];
        const bool named = std::find(e.requests.begin(), e.requests.end(), full) != e.requests.end();
        if (!named && !e.requests.empty()) continue;
        if (decoded[i].kind != want) {
          if (!named) continue;   // a config for every request, of another device type
          throw_error(ErrorCode::kTraceBadValue, where,
                      e.source + ": cannot apply " + decoded[i].kind + " to the " + (mig ? "MIG devices" : "GPUs") + " of request " + full +
                          " (NVIDIA's driver applies a " + want + " to them)");
        }
        got = validate(e, decoded[i].params, full);
        break;
      }
      if (agreed && *agreed != got) {
        throw_error(ErrorCode::kTraceBadValue, where,
                    who + ": requests " + agreed_by + " and " + full + " share their devices differently; a job of a shared claim shares one way");
      }
      agreed = got;
      agreed_by = full;
    }
  }
  if (agreed) {
    dc.sharing = agreed->first;
    dc.mps_active_thread_percent = agreed->second;
  }
}
}  // namespace

void resolve_claims(Workload& jobs, const Scenario& sc, const std::string& source) {
  // The kind of device a claim's job takes, and for GIs their profile.
  enum class Kind { kWholeGpu, kVfio, kMig, kTpuChip };
  struct Made {
    std::shared_ptr<const dra::DeviceClaims> claims;
    std::int32_t units = 0;    // devices taken (admin access left out)
    Kind kind = Kind::kWholeGpu;
    std::string mig_profile;   // kMig: the GIs' profile
    bool fits = true;          // some node can hold the claim (else it is kept unplaceable)
  };
  std::map<std::string, Made> made;   // by "template NAME" or "claim NAME"
  // The GPU request of a job that takes `m.units` devices of the claim's kind (TPU chips: none).
  const auto gpu_request = [&](const Made& m) {
    GpuRequest g;
    switch (m.kind) {
      case Kind::kWholeGpu:
      case Kind::kVfio:   // passthrough GPUs, as pci_passthrough:alias would ask for them
        g.mode = m.kind == Kind::kVfio ? GpuMode::kPassthrough : GpuMode::kWhole;
        g.count = m.units;
        break;
      case Kind::kTpuChip: break;
      case Kind::kMig:   // GIs of one profile, on whichever model offers it
        g.mode = GpuMode::kMig;
        g.count = m.units;
        g.profile = m.mig_profile;
        g.profile_by_model.assign(sc.catalog.size(), -1);
        for (std::size_t k = 0; k < sc.catalog.size(); ++k) {
          const auto& model = sc.catalog[GpuModelId{static_cast<std::uint16_t>(k)}];
          if (model.mig) g.profile_by_model[k] = static_cast<std::int8_t>(model.mig->find_profile(m.mig_profile));
        }
        break;
    }
    if (m.units == 0) g = GpuRequest{};
    return g;
  };
  std::optional<dra::Allocator> empty_cluster;   // every node's devices, none in use
  std::vector<dra::NodeInfo> nodes;
  std::vector<std::vector<dra::DeviceUnit>> units;   // slice -> its devices' GPUs, GIs, chips and NICs
  std::vector<std::size_t> node_of_slice;
  // The devices as the dynamic-resources plugin will see them: the nodes' own, or the slices the
  // scenario gives in their place (checked here, whether or not a job has a claim).
  const std::span<const dra::ResourceSlice> given = dra::given_slices(sc.dra_slices);
  const auto publish = [&] {
    try {
      return dra::simulated_devices(sc.nodes, sc.catalog, given);
    } catch (const std::invalid_argument& e) {
      throw_error(ErrorCode::kScenarioBadValue, {sc.source, 0, "/dra/objects"}, e.what());
    }
  };
  if (!given.empty()) (void)publish();
  // A TPU claim's chips on the hosts a slice selector can use: of its generation and, with a
  // topology, of a machine type serving that shape (v5e's 8-chip hosts serve 2x4 only, as for
  // google.com/tpu) in a pool that can hold it (a provisioned pool: of that shape). The fewest and the most it takes there, over the hosts that can hold it
  // with every chip free (Google's whole-host rule included); nothing when none can.
  std::map<std::tuple<const dra::DeviceClaims*, std::string, std::string>, std::optional<std::pair<std::int64_t, std::int64_t>>> chips_of_generation;
  const auto chips_on = [&](const dra::DeviceClaims& claims, const std::string& generation, const std::string& topology) {
    const auto key = std::make_tuple(&claims, generation, topology);
    if (const auto it = chips_of_generation.find(key); it != chips_of_generation.end()) return it->second;
    std::optional<std::pair<std::int64_t, std::int64_t>> out;
    const auto ptrs = claims.pointers();
    const TpuGeneration& gen = TpuCatalog::builtin().require(generation, {});
    const std::optional<TpuTopology> shape = topology.empty() ? std::nullopt : std::optional<TpuTopology>(parse_tpu_topology(topology, {}));
    for (std::size_t u = 0; u < nodes.size(); ++u) {
      if (sc.nodes[u].tpu.generation != generation) continue;
      const auto on = dra::allocate_on_node(*empty_cluster, nodes[u], sc.nodes[u], ptrs, empty_cluster->no_devices_in_use());
      if (!on.got) continue;
      const std::int64_t chips = dra::devices_taken(*on.got, dra::kTpuDriver);
      if (chips == 0) continue;
      if (shape) {
        const TpuMachineType* machine = gen.machine_type(static_cast<int>(chips));
        if (machine == nullptr || !gen.serves(*machine, *shape)) continue;
        // A provisioned pool is one slice of its own shape (as Scheduler::place_slice takes it).
        const auto& t = sc.nodes[u].tpu;
        if (t.provisioned && !t.pool_topology.empty() && !slice_matches_pool(parse_tpu_topology(t.pool_topology, {}), *shape)) continue;
      }
      out = out ? std::make_pair(std::min(out->first, chips), std::max(out->second, chips)) : std::make_pair(chips, chips);
    }
    return chips_of_generation[key] = out;
  };
  for (auto& j : jobs) {
    // A ResourceClaimTemplate gives each task a claim of its own; a ResourceClaim (resource_claim)
    // is one claim, shared by every job naming it.
    const bool shared = !j.constraints.resource_claim.empty();
    const std::string& name = shared ? static_cast<const std::string&>(j.constraints.resource_claim)
                                     : static_cast<const std::string&>(j.constraints.claim_template);
    if (name.empty()) continue;
    const std::string what = shared ? "ResourceClaim" : "ResourceClaimTemplate";
    const Location where{source, j.source_line, shared ? "resource_claim" : "claim_template"};
    auto it = made.find((shared ? "claim " : "template ") + name);
    if (it == made.end()) {
      const auto& defined = shared ? sc.resource_claims : sc.claim_templates;
      const auto t = defined.find(name);
      if (t == defined.end()) {
        std::string known;
        for (const auto& [n, c] : defined) known += (known.empty() ? "" : ", ") + n;
        throw_error(ErrorCode::kTraceBadValue, where,
                    "job \"" + j.name + "\" names " + what + " \"" + name + "\", which the scenario's dra.objects does not define" +
                        (known.empty() ? std::string(" (it defines none)") : " (it defines: " + known + ")"));
      }
      auto dc = std::make_shared<dra::DeviceClaims>();
      dc->template_name = name;
      dc->shared = shared;
      dc->classes = sc.dra_classes;
      dc->claims = {t->second};
      dc->slices = sc.dra_slices;
      if (!empty_cluster) {   // the devices the dynamic-resources plugin will see
        auto published = publish();
        nodes = std::move(published.nodes);
        units = std::move(published.units);
        node_of_slice.resize(published.slices.size());
        for (std::size_t u = 0; u < published.slice_of_node.size(); ++u) {
          if (published.slice_of_node[u] >= 0) node_of_slice[static_cast<std::size_t>(published.slice_of_node[u])] = u;
          if (published.nic_slice_of_node[u] >= 0) node_of_slice[static_cast<std::size_t>(published.nic_slice_of_node[u])] = u;
        }
        empty_cluster.emplace(*sc.dra_classes, std::move(published.slices));
      }
      if (t->second.requests.empty()) throw_error(ErrorCode::kTraceBadValue, where, what + " \"" + name + "\" asks for no device");
      // The devices the job takes: the claim's devices without admin access (those are monitored,
      // not taken). An exact count gives it up front; `All` takes every matching device of the
      // node, so the count is the same on every node that can hold the claim, or the job could
      // not state one GPU count (refused below).
      // `firstAvailable` alternatives may ask for different counts ("8 A100s, else 4 H100s"): the
      // job then states the smallest total (gpus) and its tasks take what the alternative chosen
      // on their node takes, up to `most` (what quotas charge).
      // A request with an `All` alternative (alone, or in firstAvailable: "all H100s of the node,
      // else two A100s") takes a node-dependent count: the node's matching devices, counted
      // below; the other requests' counts are the same on every node.
      std::int64_t gpus = 0, most = 0, devices = 0;
      bool all_mode = false, varies = false;
      const std::string in = what + " \"" + name + "\", request ";
      const auto& requests = t->second.requests;
      std::vector<bool> has_all(requests.size(), false);
      for (std::size_t q = 0; q < requests.size(); ++q) {
        const auto& req = requests[q];
        for (const auto& a : alternatives(req)) {
          if (empty_cluster->find_class(a.device_class) == nullptr) throw_error(ErrorCode::kTraceBadValue, where, in + req.name + ": no DeviceClass is named \"" + a.device_class + "\"");
          if (a.mode == dra::AllocationMode::kAll) has_all[q] = true;
        }
      }
      // Requests with an `All` alternative: per alternative, its devices matching on each node.
      std::vector<std::vector<std::vector<std::int64_t>>> matching(requests.size());   // [request][alternative][node]
      for (std::size_t q = 0; q < requests.size(); ++q) {
        if (has_all[q]) matching[q].assign(alternatives(requests[q]).size(), std::vector<std::int64_t>(nodes.size(), 0));
      }
      // The kind of device the job takes: whole GPUs, passthrough GPUs (vfio), GIs of one MIG
      // profile, or TPU chips, whichever the requests' classes and selectors can match on any
      // node; a job states one kind.
      // NICs (dranet) come besides: a request gets NICs or devices of that kind, not both.
      std::set<std::pair<Kind, std::string>> kinds;   // (kind, MIG profile)
      std::vector<bool> nic(requests.size(), false);   // per request: it gets NICs
      for (std::size_t q = 0; q < requests.size(); ++q) {
        const auto alts = alternatives(requests[q]);
        std::string a_nic, a_device;   // examples of each, should the request get both
        for (std::size_t x = 0; x < alts.size(); ++x) {
          const auto& a = alts[x];
          if (a.admin_access) continue;
          const dra::DeviceClass* cls = empty_cluster->find_class(a.device_class);
          for (std::size_t k = 0; k < empty_cluster->slices().size(); ++k) {
            const auto& sl = empty_cluster->slices()[k];
            const auto& spec = sc.nodes[node_of_slice[k]];
            for (std::size_t i = 0; i < sl.devices.size(); ++i) {
              if (!selects(*cls, a, sl.devices[i], sl.driver)) continue;
              if (has_all[q]) ++matching[q][x][node_of_slice[k]];
              const auto& u = units[k][i];
              if (std::string& example = u.nic ? a_nic : a_device; example.empty()) example = sl.devices[i].name + " of node " + spec.name;
              if (u.nic) continue;
              if (u.tpu_chip) kinds.emplace(Kind::kTpuChip, std::string());
              else if (u.mig_profile >= 0) {
                kinds.emplace(Kind::kMig, sc.catalog[spec.gpus[u.gpu].model].mig->profiles[static_cast<std::size_t>(u.mig_profile)].name);
              } else {
                kinds.emplace(spec.gpus[u.gpu].partition == GpuPartition::kPassthrough ? Kind::kVfio : Kind::kWholeGpu, std::string());
              }
            }
          }
        }
        if (!a_nic.empty() && !a_device.empty()) {
          throw_error(ErrorCode::kTraceBadValue, where,
                      in + requests[q].name + " can get NICs (driver dra.net, e.g. " + a_nic + ") and other devices (e.g. " + a_device +
                          "): in a simulation a request, with its firstAvailable alternatives, gets NICs or GPUs, GIs or TPU chips, not "
                          "both (select by deviceClassName or device.driver; docs/dra.md)");
        }
        nic[q] = !a_nic.empty();
      }
      // What the job states: the devices of the requests that get no NIC. An exact count gives
      // it up front (`All`: counted per node below).
      for (std::size_t q = 0; q < requests.size(); ++q) {
        std::int64_t fewest = std::numeric_limits<std::int64_t>::max(), largest = 0, fewest_devices = fewest;
        for (const auto& a : alternatives(requests[q])) {
          const std::int64_t taken = a.admin_access ? 0 : a.count;
          fewest = std::min(fewest, taken);
          largest = std::max(largest, taken);
          fewest_devices = std::min<std::int64_t>(fewest_devices, a.count);
        }
        if (has_all[q]) continue;
        devices += fewest_devices;   // (NICs count towards Kubernetes' 32 per claim)
        if (nic[q]) continue;
        varies = varies || fewest != largest;   // (never 0: a subrequest has no adminAccess, and counts are positive)
        gpus += fewest;
        most += largest;
      }
      if (devices > static_cast<std::int64_t>(dra::kMaxDevicesPerClaim)) {
        throw_error(ErrorCode::kTraceBadValue, where,
                    what + " \"" + name + "\" asks for " + std::to_string(devices) + " devices, more than Kubernetes' 32 per claim");
      }
      // `All` requests of NICs take every matching NIC of the node; what the job states is not
      // changed by them.
      std::vector<bool> gpu_all(requests.size(), false);
      for (std::size_t q = 0; q < requests.size(); ++q) {
        gpu_all[q] = has_all[q] && !nic[q];
        all_mode = all_mode || gpu_all[q];
      }
      if (kinds.size() > 1) {
        std::string list;
        for (const auto& [kind, profile] : kinds) {
          list += (list.empty() ? "" : ", ") + (kind == Kind::kWholeGpu ? std::string("whole GPUs")
                                                : kind == Kind::kVfio   ? std::string("passthrough GPUs (vfio)")
                                                : kind == Kind::kTpuChip ? std::string("TPU chips")
                                                                         : "MIG " + profile + " instances");
        }
        throw_error(ErrorCode::kTraceBadValue, where,
                    what + " \"" + name + "\" can get " + list +
                        ": a job in a simulation takes one kind of device (select one, e.g. deviceClassName gpu.nvidia.com, "
                        "vfio.gpu.nvidia.com, tpu.google.com, or mig.nvidia.com and device.attributes['gpu.nvidia.com'].profile == '" +
                        (kinds.rbegin()->first == Kind::kMig ? kinds.rbegin()->second : std::string("3g.40gb")) + "'; docs/dra.md)");
      }
      // A claim no node could hold even with every GPU free would wait for ever: refuse it.
      const auto none = empty_cluster->no_devices_in_use();
      const std::int64_t gpus_fixed = gpus, most_fixed = most;   // the requests without `All`
      const dra::ResourceClaim* claims[] = {&dc->claims.front()};
      // An error on one node (a CEL runtime error: an attribute only some nodes' devices have)
      // means "not there", as the plugin takes it during the run; it is reported if no node fits.
      bool fits = false;
      std::string first_error, partial_tpu;
      for (std::size_t u = 0; u < nodes.size(); ++u) {
        const auto& n = nodes[u];
        const auto on = dra::allocate_on_node(*empty_cluster, n, sc.nodes[u], claims, none);
        if (!on.error.empty() && first_error.empty()) first_error = "on node " + n.name + ": " + on.error;
        // Google's driver refuses to prepare a claim that takes part of a host's chips
        // (ValidateTpuRequest; admin-access chips count too, as the driver counts them): the
        // claim fits there only if it takes them all.
        if (on.partial_tpu && partial_tpu.empty()) partial_tpu = n.name + " has " + std::to_string(sc.nodes[u].tpu.chips) + " chips";
        if (!on.got) continue;
        if (!all_mode) {
          fits = true;
          break;
        }
        // `All`: the count is the node's (every matching device, all free), so it may differ
        // from node to node; the job states the smallest it can take on any node and may take
        // up to the largest. In firstAvailable, the alternative chosen depends on which devices
        // are free when the job comes: every alternative the node could serve counts.
        const auto [low, high] = sizes_on_node(requests, gpu_all, matching, u, {gpus_fixed, most_fixed});
        gpus = fits ? std::min(gpus, low) : low;
        most = fits ? std::max(most, high) : high;
        fits = true;
      }
      if (all_mode && fits && most != gpus) varies = true;
      if (!fits && !sc.keep_unplaceable) {
        throw_error(ErrorCode::kTraceUnplaceable, where,
                    "job \"" + j.name + "\": no node can hold the claim of " + what + " \"" + name + "\", even with all its devices free" +
                        (!partial_tpu.empty() ? " (Google's TPU driver prepares a claim only when it takes all chips of the host together, "
                                                "and the claim takes part of one: " + partial_tpu + ")"
                         : first_error.empty() ? std::string()
                                               : " (" + first_error + ")"));
      }
      if (varies) dc->most_devices = static_cast<std::int32_t>(most);
      Made m{nullptr, static_cast<std::int32_t>(gpus), Kind::kWholeGpu, std::string(), fits};
      if (!kinds.empty()) {
        m.kind = kinds.begin()->first;
        m.mig_profile = kinds.begin()->second;
      }
      // NVIDIA's driver reads its config when it prepares the claim: what it would refuse (the
      // pod would never start) is refused here. A shared claim's jobs share by it.
      if (m.units > 0 && (m.kind == Kind::kWholeGpu || m.kind == Kind::kMig)) {
        read_claim_sharing(*dc, t->second, *sc.dra_classes, m.kind == Kind::kMig, what + " \"" + name + "\"", where);
      }
      if (shared) {
        // The job that allocates a shared claim takes its devices; the others take none. So the
        // jobs state no device, and the plugin grants the first one what this request says.
        if (m.kind == Kind::kTpuChip && m.units > 0) {
          throw_error(ErrorCode::kTraceBadValue, where,
                      "ResourceClaim \"" + name + "\" gets TPU chips: a shared claim of TPU chips is not supported in simulations yet (use a "
                      "ResourceClaimTemplate; docs/dra.md)");
        }
        dc->holder = gpu_request(m);
        dc->holder.count = m.units;
        m.units = 0;
      }
      m.claims = std::move(dc);
      it = made.emplace((shared ? "claim " : "template ") + name, std::move(m)).first;
    }
    if (j.request.gpu.mode != GpuMode::kNone || j.request.tpu.chips > 0) {
      throw_error(ErrorCode::kTraceBadValue, {source, j.source_line, "requests"},
                  "job \"" + j.name + "\" asks for " + (j.request.tpu.chips > 0 ? "TPU chips" : "GPUs") + " both in its requests and through " +
                      (shared ? "resource_claim" : "claim_template") + " \"" + name + "\": with a claim, the claim says which devices it gets");
    }
    j.constraints.claims = it->second.claims;
    j.request.gpu = GpuRequest{};
    // A job sharing a claim is never a preemption victim: evicting the one that holds the
    // claim's devices would free them under the others (not modelled; docs/dra.md).
    if (shared) j.constraints.preemptible = false;
    const Made& m = it->second;
    // A TPU slice selector (accelerator and topology in the requests): the claim's chips on each
    // host of a slice of that shape, one task per host, all or nothing (as google.com/tpu would).
    const bool slice = !j.request.tpu.topology.empty() || !j.request.tpu.generation.empty();
    // (A claim no node can hold, kept unplaceable, takes nothing: the job waits.)
    if (slice && m.fits && (m.kind != Kind::kTpuChip || m.units == 0)) {
      throw_error(ErrorCode::kTraceBadValue, {source, j.source_line, "requests"},
                  "job \"" + j.name + "\" selects a TPU slice (cloud.google.com/gke-tpu-accelerator" +
                      (j.request.tpu.topology.empty() ? std::string() : ", topology " + std::string(j.request.tpu.topology)) + "), but " +
                      what + " \"" + name + "\" gets " + (m.units == 0 ? "no device it takes" : "GPUs") +
                      ": the slice's hosts each take TPU chips through the claim (docs/dra.md)");
    }
    if (m.units == 0) continue;   // only admin access, or a shared claim: the job states no device
    if (m.kind == Kind::kTpuChip) {   // google.com/tpu on one host, whatever its generation (the selectors chose)
      TpuRequest tpu;
      tpu.generation = j.request.tpu.generation;
      tpu.topology = j.request.tpu.topology;
      tpu.chips = m.units;
      const Location at{source, j.source_line, "requests"};
      std::int64_t most = std::max<std::int64_t>(m.claims->most_devices, m.units);
      if (!tpu.generation.empty()) {
        // The selector's generation: the claim's chips on those hosts (others may differ).
        const auto range = chips_on(*m.claims, std::string(tpu.generation), std::string(tpu.topology));
        if (!range) {
          if (!sc.keep_unplaceable) {
            throw_error(ErrorCode::kTraceUnplaceable, at,
                        "job \"" + j.name + "\" selects TPU " + std::string(tpu.generation) + " hosts" +
                            (tpu.topology.empty() ? std::string() : " for a " + std::string(tpu.topology) + " slice") + ", but " + what + " \"" +
                            name + "\" cannot be allocated on any of them, even with all their chips free (its selectors choose other hosts; or "
                            "it takes part of a host's chips, which Google's TPU driver refuses; or no host of that generation and size "
                            "serves the shape)");
          }
          // Kept unplaceable: it waits on the hosts it selects, none of which can hold the claim.
          tpu.topology = CompactString();
          tpu.hosts = 1;
          j.request.tpu = tpu;
          continue;
        }
        tpu.chips = static_cast<std::int32_t>(range->first);
        most = range->second;
      }
      set_tpu_hosts(tpu, at);
      if (tpu.hosts > 1) {
        if (most > tpu.chips) {
          throw_error(ErrorCode::kTraceBadValue, at, "job \"" + j.name + "\": " + what + " \"" + name + "\" takes " + std::to_string(tpu.chips) +
                                                         " to " + std::to_string(most) +
                                                         " chips depending on the host, but the hosts of a multi-host slice are alike: select one size");
        }
        if (j.tasks == 1) j.tasks = j.min_available = tpu.hosts;
        if (j.tasks != tpu.hosts) {
          throw_error(ErrorCode::kTraceBadValue, {source, j.source_line, "tasks"},
                      "a " + std::string(tpu.topology) + " slice of " + std::to_string(tpu.chips) + " chips per host (the claim's) spans " +
                          std::to_string(tpu.hosts) + " hosts, so the job has " + std::to_string(tpu.hosts) + " tasks, not " + std::to_string(j.tasks));
        }
        if (j.min_available != j.tasks) {
          throw_error(ErrorCode::kTraceBadValue, {source, j.source_line, "min_available"},
                      "a multi-host TPU slice is all-or-nothing: min_available must equal tasks");
        }
      }
      j.request.tpu = tpu;
      continue;
    }
    j.request.gpu = gpu_request(m);
  }
}

Scenario parse_scenario(std::string_view text, const std::string& source, const std::filesystem::path& base_dir,
                        const policies::Registry& registry) {
  const nlohmann::json doc = parse_json(text, source, kScenarioJsonErrors);
  return parse_scenario(doc, source, base_dir, registry);
}

Scenario parse_scenario(const char* text, const std::string& source, const std::filesystem::path& base_dir,
                        const policies::Registry& registry) {
  return parse_scenario(std::string_view(text), source, base_dir, registry);
}

Scenario parse_scenario(const std::string& text, const std::string& source, const std::filesystem::path& base_dir,
                        const policies::Registry& registry) {
  return parse_scenario(std::string_view(text), source, base_dir, registry);
}

Scenario load_scenario(const std::filesystem::path& path, const policies::Registry& registry) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw_error(ErrorCode::kScenarioCannotOpen, {path.string(), 0, ""}, "cannot open the scenario file");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  return parse_scenario(std::string_view(text), path.string(), path.parent_path(), registry);
}

std::string_view demo_scenario_text() { return embedded::kDemoScenarioJson; }

Scenario demo_scenario() { return parse_scenario(std::string_view(demo_scenario_text()), "<built-in demo>", std::filesystem::current_path()); }

}  // namespace gpusched::scenario
