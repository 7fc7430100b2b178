#pragma once
/// Registration of the built-in plugin families, one function per source file, so each family
/// lives in its own file and Registry::with_builtins() stays a list.
#include <memory>
#include <string>
#include <utility>

#include <gpusched/error.hpp>
#include <gpusched/policies/devices/device_select.hpp>
#include <gpusched/policies/framework/registry.hpp>

namespace gpusched::policies::detail {

/// A number argument that must be >= min (ProfileError otherwise).
inline double number_arg(const PluginContext& ctx, const char* key, double min) {
  const double v = ctx.args.at(key).get<double>();
  if (!(v >= min)) {
    throw_error(ErrorCode::kProfileBadArgs, {"", 0, std::string(ctx.name) + "/args/" + key},
                std::string(ctx.name) + ": argument " + key + " must be >= " + std::to_string(min));
  }
  return v;
}
inline const PluginArg kMigStartArg{"mig_start", "string",
                             "where a new MIG GPU instance goes: best (keeps the most larger profiles possible), lowest, highest",
                             "best"};
/// A device-select plugin with its `mig_start` argument applied.
template <class Plugin, class... Extra>
std::unique_ptr<Plugin> with_mig_start(const PluginContext& ctx, Extra&&... extra) {
  const auto& v = ctx.args.at("mig_start");
  const auto chooser = v.is_string() ? mig_start_chooser(v.get<std::string>()) : nullptr;
  if (!chooser) {
    throw_error(ErrorCode::kProfileBadArgs, {"", 0, std::string(ctx.name) + "/args/mig_start"},
                std::string(ctx.name) + ": mig_start must be \"best\", \"lowest\" or \"highest\"");
  }
  auto p = std::make_unique<Plugin>(std::forward<Extra>(extra)...);
  p->set_mig_start(chooser);
  return p;
}

void register_fgd_plugins(Registry& r);         ///< fgd.cpp: FGD and its baselines
void register_placement_plugins(Registry& r);   ///< placement.cpp: taints, affinity, spread, topology
void register_preemption_plugins(Registry& r);  ///< preemption.cpp: priority preemption
void register_quota_plugins(Registry& r);       ///< quota.cpp: ResourceQuota, queues, cohorts, DRF

}  // namespace gpusched::policies::detail
