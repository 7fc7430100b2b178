#include <gpusched/policies/framework/registry.hpp>
#include <gpusched/policies/dynamicresources/dynamic_resources.hpp>

#include <algorithm>
#include <filesystem>

#include <gpusched/error.hpp>
#include <gpusched/policies/devices/device_select.hpp>
#include <gpusched/policies/firstfit/first_fit.hpp>
#include <gpusched/policies/gpubinpack/gpu_binpack.hpp>
#include <gpusched/policies/noderesources/allocated.hpp>
#include <gpusched/policies/noderesources/balanced_allocation.hpp>
#include <gpusched/policies/noderesources/fit.hpp>
#include <gpusched/policies/noderesources/requested_to_capacity_ratio.hpp>
#include <gpusched/policies/queuesort/priority_sort.hpp>
#include <gpusched/policies/queuesort/training.hpp>
#include <gpusched/policies/random/random.hpp>
#include <gpusched/policies/topology/topology_manager.hpp>

#include "builtin_plugins.hpp"

namespace gpusched::policies {

void Registry::add(PluginInfo info) {
  auto it = std::lower_bound(plugins_.begin(), plugins_.end(), info.name,
                             [](const PluginInfo& p, const std::string& n) { return p.name < n; });
  if (it != plugins_.end() && it->name == info.name) *it = std::move(info);
  else plugins_.insert(it, std::move(info));
}

bool Registry::remove(std::string_view name) {
  const auto it = std::find_if(plugins_.begin(), plugins_.end(), [&](const PluginInfo& p) { return p.name == name; });
  if (it == plugins_.end()) return false;
  plugins_.erase(it);
  return true;
}

const Registry& Registry::builtins() {
  static const Registry registry = with_builtins();
  return registry;
}

const PluginInfo* Registry::find(std::string_view name) const {
  for (const auto& p : plugins_) if (p.name == name) return &p;
  return nullptr;
}

std::string Registry::known_names(std::string_view hook) const {
  std::string out;
  for (const auto& p : plugins_) {
    if (!hook.empty() && std::find(p.hooks.begin(), p.hooks.end(), hook) == p.hooks.end()) continue;
    out += (out.empty() ? "" : ", ") + p.name;
  }
  return out;
}

nlohmann::json resolve_args(const PluginInfo& info, const nlohmann::json& given, const Location& where) {
  auto at = [&](const std::string& k) { Location l = where; l.field += (k.empty() ? "/args" : "/args/" + k); return l; };
  nlohmann::json out = nlohmann::json::object();
  for (const auto& a : info.args) out[a.name] = a.default_value;
  if (given.is_null()) return out;
  if (!given.is_object()) throw_error(ErrorCode::kProfileBadArgs, at(""), "plugin arguments must be an object");
  for (const auto& [k, v] : given.items()) {
    const auto it = std::find_if(info.args.begin(), info.args.end(), [&](const PluginArg& a) { return a.name == k; });
    if (it == info.args.end()) {
      std::string known;
      for (const auto& a : info.args) known += (known.empty() ? "" : ", ") + a.name;
      throw_error(ErrorCode::kProfileBadArgs, at(k),
                  "plugin '" + info.name + "' has no argument '" + k + "' (it takes: " + (known.empty() ? "none" : known) + ")");
    }
    const bool type_ok = (it->type == "number" && v.is_number()) || (it->type == "string" && v.is_string()) ||
                         (it->type == "boolean" && v.is_boolean()) || (it->type == "object" && v.is_object()) ||
                         (it->type == "array" && v.is_array());
    if (!type_ok) throw_error(ErrorCode::kProfileBadArgs, at(k), "expected a " + it->type);
    out[k] = v;
  }
  return out;
}

using detail::number_arg;
using detail::kMigStartArg;
using detail::with_mig_start;

namespace {
std::vector<PluginArg> allocated_args() {
  return {{"scoring", "string",
           "kubernetes: kube-scheduler's NodeResourcesFit (integer scores over `resources`, non-zero defaults); "
           "gpusched: gpusched's own real-valued mean over cpu, memory and GPU with the *_weight arguments",
           "kubernetes"},
          {"resources", "array",
           "scoring kubernetes: [{name: cpu|memory|nvidia.com/gpu|google.com/tpu|<extended>, weight: 1..100}] "
           "(absent: cpu 1, memory 1, as kube-scheduler)",
           nullptr},
          {"non_zero_defaults", "boolean",
           "scoring kubernetes: a task requesting no CPU / memory counts as 100m / 200 MiB, as kube-scheduler counts a "
           "container that leaves them unset (false: as 0, a container that writes 0)",
           true},
          {"cpu_weight", "number", "scoring gpusched: weight of CPU in the mean (absent: 1)", nullptr},
          {"memory_weight", "number", "scoring gpusched: weight of host memory in the mean (absent: 1)", nullptr},
          {"gpu_weight", "number", "scoring gpusched: weight of GPU (milli) in the mean (absent: 1)", nullptr}};
}
/// kube-scheduler's scoringStrategy.resources, checked as ValidateNodeResourcesFitArgs does:
/// names given and unique, integer weights 1..100 (absent: 1).
std::vector<ScoredResource> scored_resources(const PluginContext& c, const nlohmann::json& res) {
  auto bad = [&](const std::string& field, const std::string& msg) {
    throw_error(ErrorCode::kProfileBadArgs, {"", 0, std::string(c.name) + "/args/" + field}, std::string(c.name) + ": " + msg);
  };
  if (!res.is_array() || res.empty()) bad("resources", "expected a non-empty list of {name, weight}");
  std::vector<ScoredResource> resources;
  for (std::size_t i = 0; i < res.size(); ++i) {
    const std::string at = "resources/" + std::to_string(i);
    const auto& r = res[i];
    if (!r.is_object() || !r.contains("name") || !r.at("name").is_string() || r.at("name").get<std::string>().empty()) {
      bad(at, "expected {\"name\", \"weight\"}");
    }
    std::int64_t weight = 1;
    if (r.contains("weight")) {
      const auto& w = r.at("weight");
      if (!w.is_number_integer() || w.get<std::int64_t>() < 1 || w.get<std::int64_t>() > 100) {
        bad(at + "/weight", "expected an integer from 1 to 100");
      }
      weight = w.get<std::int64_t>();
    }
    ScoredResource one{r.at("name").get<std::string>(), weight};
    // kube-scheduler accepts any valid resource name and skips one a node lacks; a name that is
    // not a resource a node reports would be skipped everywhere, so it is refused here.
    const auto& n = one.name;
    if (n == "ephemeral-storage" || n.rfind("hugepages-", 0) == 0) {
      bad(at + "/name", "\"" + n + "\" is not modelled (gpusched nodes have cpu, memory, GPUs, TPUs and extended resources)");
    }
    const auto slash = n.find('/');
    const bool qualified = slash != std::string::npos && slash > 0 && slash + 1 < n.size() && n.find('/', slash + 1) == std::string::npos;
    if (n != "cpu" && n != "memory" && !qualified) {
      bad(at + "/name", "\"" + n + "\" is not a resource name: cpu, memory, or a domain-qualified one such as nvidia.com/gpu, "
                        "google.com/tpu or an extended resource");
    }
    if (n.rfind("requests.", 0) == 0 || n.rfind("limits.", 0) == 0 || n.rfind("gpusched.io/", 0) == 0 ||
        n.rfind("nvidia.com/mig-", 0) == 0) {
      bad(at + "/name", "\"" + n + "\" is not a node resource these scores read (quota names and MIG/gpusched units are not; "
                        "use nvidia.com/gpu for GPUs)");
    }
    for (const auto& k : r.items()) {
      if (k.key() != "name" && k.key() != "weight") bad(at + "/" + k.key(), "unknown field (expected name, weight)");
    }
    for (const auto& o : resources) {
      if (o.name == one.name) bad(at + "/name", "resource \"" + one.name + "\" is listed twice");
    }
    resources.push_back(std::move(one));
  }
  return resources;
}
/// Checks the arguments as kube-scheduler's ValidateNodeResourcesFitArgs does for this strategy.
std::unique_ptr<Plugin> requested_to_capacity_ratio(const PluginContext& c) {
  auto bad = [&](const std::string& field, const std::string& msg) {
    throw_error(ErrorCode::kProfileBadArgs, {"", 0, std::string(c.name) + "/args/" + field}, std::string(c.name) + ": " + msg);
  };
  auto integer_in = [&](const nlohmann::json& v, std::int64_t lo, std::int64_t hi, const std::string& field) {
    if (!v.is_number_integer() || v.get<std::int64_t>() < lo || v.get<std::int64_t>() > hi) {
      bad(field, "expected an integer from " + std::to_string(lo) + " to " + std::to_string(hi));
    }
    return v.get<std::int64_t>();
  };
  const auto& shape = c.args.at("shape");
  if (!shape.is_array() || shape.empty()) {
    bad("shape", "a shape is required: [{\"utilization\": 0..100, \"score\": 0..10}, ...]");
  }
  std::vector<RequestedToCapacityRatio::Point> points;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    const std::string at = "shape/" + std::to_string(i);
    const auto& p = shape[i];
    if (!p.is_object() || !p.contains("utilization") || !p.contains("score") || p.size() != 2) {
      bad(at, "expected {\"utilization\", \"score\"}");
    }
    RequestedToCapacityRatio::Point pt{integer_in(p.at("utilization"), 0, 100, at + "/utilization"),
                                       integer_in(p.at("score"), 0, 10, at + "/score")};
    if (!points.empty() && pt.utilization <= points.back().utilization) {
      bad(at + "/utilization", "utilization values must be sorted in increasing order");
    }
    points.push_back(pt);
  }
  std::vector<RequestedToCapacityRatio::Resource> resources;
  for (auto& r : scored_resources(c, c.args.at("resources"))) resources.push_back({std::move(r.name), r.weight});
  return std::make_unique<RequestedToCapacityRatio>(std::move(points), std::move(resources), c.args.at("non_zero_defaults").get<bool>());
}

/// least-allocated / most-allocated: kube-scheduler's scoring over `resources` (default), or
/// gpusched's own with `scoring: "gpusched"` and the cpu/memory/gpu weights.
std::unique_ptr<Plugin> allocated_score(const PluginContext& c, AllocatedScore::Mode mode, std::string_view name) {
  const auto& scoring = c.args.at("scoring");
  const bool gpusched = scoring == "gpusched";
  if (!gpusched && scoring != "kubernetes") {
    throw_error(ErrorCode::kProfileBadArgs, {"", 0, std::string(c.name) + "/args/scoring"},
                std::string(c.name) + ": scoring must be \"kubernetes\" (kube-scheduler's NodeResourcesFit) or \"gpusched\"");
  }
  for (const char* key : {"cpu_weight", "memory_weight", "gpu_weight"}) {
    if (!gpusched && !c.args.at(key).is_null()) {
      throw_error(ErrorCode::kProfileBadArgs, {"", 0, std::string(c.name) + "/args/" + key},
                  std::string(c.name) + ": " + key + " belongs to scoring \"gpusched\"; kube-scheduler's scoring takes "
                  "resources: [{\"name\": \"cpu\", \"weight\": 1}, ...]");
    }
  }
  if (gpusched) {
    if (!c.args.at("resources").is_null() || !c.args.at("non_zero_defaults").get<bool>()) {
      throw_error(ErrorCode::kProfileBadArgs, {"", 0, std::string(c.name) + "/args/resources"},
                  std::string(c.name) + ": resources and non_zero_defaults belong to scoring \"kubernetes\"; scoring \"gpusched\" takes "
                  "cpu_weight, memory_weight, gpu_weight");
    }
    auto weight = [&](const char* key) { return c.args.at(key).is_null() ? 1.0 : number_arg(c, key, 0.0); };
    return std::make_unique<AllocatedScore>(mode, ResourceWeights{weight("cpu_weight"), weight("memory_weight"), weight("gpu_weight")},
                                            name);
  }
  const auto& res = c.args.at("resources");
  return std::make_unique<AllocatedScore>(
      mode, scored_resources(c, res.is_null() ? nlohmann::json::array({{{"name", "cpu"}, {"weight", 1}}, {{"name", "memory"}, {"weight", 1}}}) : res),
      name, c.args.at("non_zero_defaults").get<bool>());
}

/// las / 2d-las: `thresholds` strictly increasing, each in (0, 1e10] seconds; `starvation_k` in [0, 1e6].
std::unique_ptr<Plugin> las_order(const PluginContext& c, bool gpu_time) {
  auto bad = [&](const char* key, const std::string& what) {
    throw_error(ErrorCode::kProfileBadArgs, {"", 0, std::string(c.name) + "/args/" + key}, std::string(c.name) + ": " + what);
  };
  std::vector<double> thresholds;
  for (const auto& v : c.args.at("thresholds")) {
    if (!v.is_number()) bad("thresholds", "thresholds must be numbers of seconds");
    const double t = v.get<double>();
    if (!(t > 0.0 && t <= 1e10)) bad("thresholds", "each threshold must be > 0 and <= 1e10 seconds");
    if (!thresholds.empty() && t <= thresholds.back()) bad("thresholds", "thresholds must be strictly increasing");
    thresholds.push_back(t);
  }
  const double k = number_arg(c, "starvation_k", 0.0);
  if (k > 1e6) bad("starvation_k", "starvation_k must be <= 1000000");
  const auto within = c.args.at("within_queue").get<std::string>();
  if (within != "running-first" && within != "fifo") bad("within_queue", "within_queue must be \"running-first\" or \"fifo\"");
  return std::make_unique<LasOrder>(gpu_time, std::move(thresholds), k, within == "running-first");
}

std::vector<PluginArg> las_args(const char* unit) {
  return {{"thresholds", "array",
           std::string("queue thresholds in attained ") + unit + ", increasing (Tiresias: 3250, 7200; empty: one queue, FIFO)",
           nlohmann::json::array({3250, 7200})},
          {"starvation_k", "number",
           "a waiting job in a lower queue returns to the first once it has waited K x its attained time (0: never)", 0},
          {"within_queue", "string",
           "running-first (running jobs ahead of waiting ones in a queue: never preempted by their own queue; the "
           "Tiresias simulator) or fifo (by the time each entered the queue, running or not)",
           "running-first"}};
}

std::unique_ptr<Plugin> gittins_order(const PluginContext& c) {
  const double quantum = number_arg(c, "quantum", 0.0);
  if (!(quantum > 0.0 && quantum <= 1e10)) {
    throw_error(ErrorCode::kProfileBadArgs, {"", 0, std::string(c.name) + "/args/quantum"},
                std::string(c.name) + ": quantum must be > 0 and <= 1e10 seconds");
  }
  const auto service = c.args.at("service").get<std::string>();
  if (service != "gpu-time" && service != "time") {
    throw_error(ErrorCode::kProfileBadArgs, {"", 0, std::string(c.name) + "/args/service"},
                std::string(c.name) + ": service must be \"gpu-time\" or \"time\"");
  }
  const auto file = c.args.at("distribution").get<std::string>();
  const auto within = c.args.at("within_queue").get<std::string>();
  if (within != "running-first" && within != "fifo") {
    throw_error(ErrorCode::kProfileBadArgs, {"", 0, std::string(c.name) + "/args/within_queue"},
                std::string(c.name) + ": within_queue must be \"running-first\" or \"fifo\"");
  }
  std::vector<double> samples;
  if (!file.empty()) {
    if (!std::filesystem::exists(file)) {
      throw_error(ErrorCode::kProfileBadArgs, {"", 0, std::string(c.name) + "/args/distribution"},
                  std::string(c.name) + ": cannot open the service distribution \"" + file + "\"");
    }
    samples = read_service_distribution(file);
  }
  return std::make_unique<GittinsOrder>(service == "gpu-time", quantum, std::move(samples), within == "running-first");
}
}  // namespace

Registry Registry::with_builtins() {
  Registry r;
  r.add({"priority-fifo", "queue order: higher priority, then earlier submission, then job id (Kubernetes PrioritySort)",
         {"queue_sort"}, {}, [](const PluginContext&) { return std::make_unique<PriorityFifoSort>(); }});
  r.add({"fifo", "queue order: earlier submission, then job id", {"queue_sort"}, {},
         [](const PluginContext&) { return std::make_unique<FifoSort>(); }});
  r.add({"fjf",
         "training order: first job fit (Tiresias' FJF): the fifo order; with greedy queueing a job that does not fit is "
         "skipped and nothing is preempted (under preemptive queueing earlier waiting jobs preempt later ones; under "
         "strict-fifo it blocks)",
         {"queue_sort"}, {}, [](const PluginContext&) { return std::make_unique<FifoSort>("fjf"); }});
  r.add({"sjf", "training order: fewest GPUs first, then FIFO (preemptive with queueing \"preemptive\")", {"queue_sort"}, {},
         [](const PluginContext&) { return std::make_unique<SjfOrder>(); }});
  r.add({"srtf", "training order: least remaining time first (the duration is known), then FIFO", {"queue_sort"}, {},
         [](const PluginContext&) { return std::make_unique<RemainingOrder>(false); }});
  r.add({"srsf", "training order: least remaining time x GPUs first, then FIFO", {"queue_sort"}, {},
         [](const PluginContext&) { return std::make_unique<RemainingOrder>(true); }});
  r.add({"las", "training order: discretized least attained service (time), queues split at thresholds, FIFO inside",
         {"queue_sort"}, las_args("seconds"), [](const PluginContext& c) { return las_order(c, false); }});
  r.add({"2d-las", "training order: Tiresias' discretized 2D-LAS on attained GPU-time, queues split at thresholds",
         {"queue_sort"}, las_args("GPU-seconds"), [](const PluginContext& c) { return las_order(c, true); }});
  r.add({"gittins",
         "training order: highest Gittins index of attained service first (index over a service distribution, "
         "taken at multiples of the quantum)",
         {"queue_sort"},
         {{"quantum", "number", "service quantum Q in seconds (GPU-seconds for gpu-time): the index's horizon and step", 3600},
          {"distribution", "string", "file of service samples, one per line; empty: the trace's jobs (duration x GPUs)", ""},
          {"service", "string", "gpu-time (Tiresias' 2D) or time", "gpu-time"},
          {"within_queue", "string", "among equal indexes: running-first (running jobs ahead) or fifo", "running-first"}},
         gittins_order});
  r.add({"node-resources-fit",
         "CPU, memory, extended resources, whole GPUs, GPU shares and GPU-model constraints fit the node "
         "(Kubernetes NodeResourcesFit); its pre-filter rejects tasks larger than every node",
         {"pre_filter", "filter"}, {}, [](const PluginContext&) { return std::make_unique<NodeResourcesFit>(); }});
  r.add({"least-allocated",
         "spread: kube-scheduler's NodeResourcesFit LeastAllocated (cpu and memory unless `resources` says "
         "otherwise); scoring \"gpusched\": gpusched's real-valued mean over cpu/memory/GPU",
         {"score"}, allocated_args(), [](const PluginContext& c) {
           return allocated_score(c, AllocatedScore::Mode::kLeast, "least-allocated");
         }});
  r.add({"most-allocated",
         "pack: kube-scheduler's NodeResourcesFit MostAllocated (cpu and memory unless `resources` says "
         "otherwise); scoring \"gpusched\": gpusched's real-valued mean over cpu/memory/GPU",
         {"score"}, allocated_args(), [](const PluginContext& c) {
           return allocated_score(c, AllocatedScore::Mode::kMost, "most-allocated");
         }});
  r.add({"balanced-allocation",
         "kube-scheduler's NodeResourcesBalancedAllocation: (1 - standard deviation of the resources' requested "
         "fractions after placement) x 100, truncated; requests as written (no non-zero defaults); weights only "
         "select the resources",
         {"score"},
         {{"resources", "array",
           "[{name: cpu|memory|nvidia.com/gpu|google.com/tpu|<extended>, weight: 1..100}] (weights unused, as kube-scheduler)",
           nlohmann::json::array({{{"name", "cpu"}, {"weight", 1}}, {{"name", "memory"}, {"weight", 1}}})}},
         [](const PluginContext& c) { return std::make_unique<BalancedAllocation>(scored_resources(c, c.args.at("resources"))); }});
  r.add({"requested-to-capacity-ratio",
         "Kubernetes NodeResourcesFit RequestedToCapacityRatio: each resource's utilisation after placement mapped "
         "through a broken-linear shape (utilization 0..100 -> score 0..10), weighted mean over the resources",
         {"score"},
         {{"shape", "array", "[{utilization: 0..100, score: 0..10}, ...], utilizations increasing (required)", nullptr},
          {"resources", "array", "[{name: cpu|memory|nvidia.com/gpu|<extended>, weight: 1..100}]",
           nlohmann::json::array({{{"name", "cpu"}, {"weight", 1}}, {{"name", "memory"}, {"weight", 1}}})},
          {"non_zero_defaults", "boolean",
           "a task requesting no CPU / memory counts as 100m / 200 MiB, as kube-scheduler counts a container that "
           "leaves them unset (false: as 0, a container that writes 0)",
           true}},
         requested_to_capacity_ratio});
  r.add({"best-fit", "the FGD paper's Best-fit: prefer the node left with the least normalised free CPU and GPU",
         {"score"},
         {{"cpu_weight", "number", "weight of free CPU / largest node CPU", 0.5},
          {"gpu_weight", "number", "weight of free GPU milli / largest node GPU milli", 0.5}},
         [](const PluginContext& c) {
           return std::make_unique<BestFitScore>(number_arg(c, "cpu_weight", 0.0), number_arg(c, "gpu_weight", 0.0));
         }});
  r.add({"first-fit", "prefer nodes in cluster order; alone, the first feasible node wins", {"score"}, {},
         [](const PluginContext&) { return std::make_unique<FirstFitScore>(); }});
  r.add({"gpu-binpack",
         "gpushare-style GPU-memory binpack: the node and GPU with the least free GPU memory that still fits",
         {"score", "device_select"}, {kMigStartArg}, [](const PluginContext& c) { return with_mig_start<GpuBinpack>(c); }});
  r.add({"dynamic-resources",
         "Kubernetes DynamicResources: a job's DRA claim (claim_template, or a ResourceClaim shared with other jobs: "
         "resource_claim) allocated by the structured allocator on the node's devices (filter), those devices granted "
         "(device select); other jobs pass, their GPUs first fit",
         {"filter", "device_select"}, {kMigStartArg}, [](const PluginContext& c) { return with_mig_start<DynamicResources>(c); }});
  r.add({"topology-manager",
         "Kubernetes TopologyManager: NUMA admission (filter), aligned nodes first (score), best-connected GPUs "
         "and NUMA-pinned CPUs (device select)",
         {"filter", "score", "device_select"},
         {{"policy", "string", "none, best-effort, restricted or single-numa-node", "best-effort"}, kMigStartArg},
         [](const PluginContext& c) {
           const auto& v = c.args.at("policy");
           TopologyPolicy policy{};
           try {
             policy = parse_topology_policy(v.is_string() ? v.get<std::string>() : v.dump());
           } catch (const Error& e) {
             throw_error(ErrorCode::kProfileBadArgs, {"", 0, std::string(c.name) + "/args/policy"}, e.detail());
           }
           return with_mig_start<TopologyManagerPlugin>(c, policy);
         }});
  r.add({"random", "uniformly random node among the feasible ones (stream policy.random)", {"score"}, {},
         [](const PluginContext& c) { return std::make_unique<RandomScore>(c.rng.stream("policy.random")); }});
  r.add({"gpu-first-fit", "inside the node: the lowest-index GPUs that fit", {"device_select"}, {kMigStartArg},
         [](const PluginContext& c) { return with_mig_start<GpuFirstFit>(c); }});
  r.add({"gpu-spread", "inside the node: shares, replicas and GIs go to the emptiest GPU", {"device_select"}, {kMigStartArg},
         [](const PluginContext& c) { return with_mig_start<GpuSpread>(c); }});
  r.add({"gpu-random", "inside the node: random fitting GPUs (stream policy.gpu-random)", {"device_select"}, {kMigStartArg},
         [](const PluginContext& c) { return with_mig_start<GpuRandom>(c, c.rng.stream("policy.gpu-random")); }});
  detail::register_fgd_plugins(r);
  detail::register_placement_plugins(r);
  detail::register_preemption_plugins(r);
  detail::register_quota_plugins(r);
  return r;
}

}  // namespace gpusched::policies
