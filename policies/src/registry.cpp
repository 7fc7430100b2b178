#include <gpusched/policies/framework/registry.hpp>

#include <algorithm>

#include <gpusched/error.hpp>
#include <gpusched/policies/devices/device_select.hpp>
#include <gpusched/policies/firstfit/first_fit.hpp>
#include <gpusched/policies/gpubinpack/gpu_binpack.hpp>
#include <gpusched/policies/noderesources/allocated.hpp>
#include <gpusched/policies/noderesources/fit.hpp>
#include <gpusched/policies/queuesort/priority_sort.hpp>
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
std::vector<PluginArg> weight_args() {
  return {{"cpu_weight", "number", "weight of CPU in the mean", 1.0},
          {"memory_weight", "number", "weight of host memory in the mean", 1.0},
          {"gpu_weight", "number", "weight of GPU (milli) in the mean", 1.0}};
}
ResourceWeights weights_from(const PluginContext& ctx) {
  return {number_arg(ctx, "cpu_weight", 0.0), number_arg(ctx, "memory_weight", 0.0), number_arg(ctx, "gpu_weight", 0.0)};
}
}  // namespace

Registry Registry::with_builtins() {
  Registry r;
  r.add({"priority-fifo", "queue order: higher priority, then earlier submission, then job id (Kubernetes PrioritySort)",
         {"queue_sort"}, {}, [](const PluginContext&) { return std::make_unique<PriorityFifoSort>(); }});
  r.add({"fifo", "queue order: earlier submission, then job id", {"queue_sort"}, {},
         [](const PluginContext&) { return std::make_unique<FifoSort>(); }});
  r.add({"node-resources-fit",
         "CPU, memory, extended resources, whole GPUs, GPU shares and GPU-model constraints fit the node "
         "(Kubernetes NodeResourcesFit); its pre-filter rejects tasks larger than every node",
         {"pre_filter", "filter"}, {}, [](const PluginContext&) { return std::make_unique<NodeResourcesFit>(); }});
  r.add({"least-allocated", "spread: prefer nodes left with the largest free share of cpu/memory/GPU (Kubernetes LeastAllocated)",
         {"score"}, weight_args(), [](const PluginContext& c) {
           return std::make_unique<AllocatedScore>(AllocatedScore::Mode::kLeast, weights_from(c), "least-allocated");
         }});
  r.add({"most-allocated", "pack: prefer nodes left with the smallest free share of cpu/memory/GPU (Kubernetes MostAllocated)",
         {"score"}, weight_args(), [](const PluginContext& c) {
           return std::make_unique<AllocatedScore>(AllocatedScore::Mode::kMost, weights_from(c), "most-allocated");
         }});
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
