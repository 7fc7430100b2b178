// A KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1) translated to a gpusched profile.
//
// The plugin sets are computed as kube-scheduler computes them: the default MultiPoint set of
// pkg/scheduler/apis/config/v1/default_plugins.go (getDefaultPlugins) merged with the profile's
// (mergePluginSet: a disabled name or "*" drops defaults, an enabled default is re-configured in
// place, new ones are appended), then expanded per extension point as
// pkg/scheduler/framework/runtime/framework.go expandMultiPointPlugins does (plugins re-enabled
// at the point first, then MultiPoint ones, then the point's others; a point disabling "*"
// takes only its own). Score weights: the point's entry, else MultiPoint's; 0 means 1.
#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "k8s_objects_detail.hpp"

namespace gpusched::scenario::detail {
namespace {

using nlohmann::json;

enum Point : unsigned {
  kPreEnqueue = 1u << 0, kQueueSort = 1u << 1, kPreFilter = 1u << 2, kFilter = 1u << 3, kPostFilter = 1u << 4,
  kPreScore = 1u << 5, kScore = 1u << 6, kReserve = 1u << 7, kPermit = 1u << 8, kPreBind = 1u << 9,
  kBind = 1u << 10, kPostBind = 1u << 11,
};

struct PointName {
  const char* name;
  Point point;
};
constexpr PointName kPoints[] = {{"preEnqueue", kPreEnqueue}, {"queueSort", kQueueSort}, {"preFilter", kPreFilter},
                                 {"filter", kFilter},         {"postFilter", kPostFilter}, {"preScore", kPreScore},
                                 {"score", kScore},           {"reserve", kReserve},       {"permit", kPermit},
                                 {"preBind", kPreBind},       {"bind", kBind},             {"postBind", kPostBind}};

/// An in-tree kube-scheduler plugin: the extension points it implements and, when gpusched's
/// jobs never carry what it reads, why it has no effect in a simulation.
struct KubePlugin {
  const char* name;
  unsigned points;
  const char* inert;   ///< nullptr: translated (or refused) below
};
constexpr KubePlugin kKubePlugins[] = {
    {"SchedulingGates", kPreEnqueue, "jobs have no scheduling gates"},
    {"PrioritySort", kQueueSort, nullptr},
    {"NodeUnschedulable", kFilter, nullptr},
    {"NodeName", kFilter, "jobs never set spec.nodeName"},
    {"TaintToleration", kFilter | kPreScore | kScore, nullptr},
    {"NodeAffinity", kPreFilter | kFilter | kPreScore | kScore, nullptr},
    {"NodePorts", kPreFilter | kFilter, "jobs request no host ports"},
    {"NodeResourcesFit", kPreFilter | kFilter | kPreScore | kScore, nullptr},
    {"VolumeRestrictions", kPreFilter | kFilter, "jobs mount no volumes"},
    {"EBSLimits", kPreFilter | kFilter, "jobs mount no volumes"},
    {"GCEPDLimits", kPreFilter | kFilter, "jobs mount no volumes"},
    {"NodeVolumeLimits", kPreFilter | kFilter, "jobs mount no volumes"},
    {"AzureDiskLimits", kPreFilter | kFilter, "jobs mount no volumes"},
    {"VolumeBinding", kPreFilter | kFilter | kReserve | kPreBind | kScore, "jobs mount no volumes"},
    {"VolumeZone", kPreFilter | kFilter, "jobs mount no volumes"},
    {"PodTopologySpread", kPreFilter | kFilter | kPreScore | kScore,
     "jobs carry no topologySpreadConstraints and the System defaults select pods by Services/ReplicaSets, which jobs lack"},
    {"InterPodAffinity", kPreFilter | kFilter | kPreScore | kScore, nullptr},
    {"DefaultPreemption", kPostFilter, nullptr},
    {"NodeResourcesBalancedAllocation", kPreScore | kScore, nullptr},
    {"ImageLocality", kScore, "jobs name no container images"},
    {"DefaultBinder", kBind, "binding is immediate"},
    {"DynamicResources", kPreEnqueue | kPreFilter | kFilter | kPostFilter | kReserve | kPreBind, "jobs hold no ResourceClaims"},
};

const KubePlugin* kube_plugin(std::string_view name) {
  for (const auto& p : kKubePlugins) {
    if (name == p.name) return &p;
  }
  return nullptr;
}

struct Entry {
  std::string name;
  std::optional<std::int64_t> weight;
  std::string path;   ///< where it was written ("" = a default)
};

struct PluginSet {
  std::vector<Entry> enabled;
  std::vector<Entry> disabled;
};

const std::vector<Entry>& default_multipoint() {
  static const std::vector<Entry> kDefaults = {
      {"SchedulingGates", {}, ""},   {"PrioritySort", {}, ""},        {"NodeUnschedulable", {}, ""},
      {"NodeName", {}, ""},          {"TaintToleration", 3, ""},      {"NodeAffinity", 2, ""},
      {"NodePorts", {}, ""},         {"NodeResourcesFit", 1, ""},     {"VolumeRestrictions", {}, ""},
      {"EBSLimits", {}, ""},         {"GCEPDLimits", {}, ""},         {"NodeVolumeLimits", {}, ""},
      {"AzureDiskLimits", {}, ""},   {"VolumeBinding", {}, ""},       {"VolumeZone", {}, ""},
      {"PodTopologySpread", 2, ""},  {"InterPodAffinity", 2, ""},     {"DefaultPreemption", {}, ""},
      {"NodeResourcesBalancedAllocation", 1, ""}, {"ImageLocality", 1, ""}, {"DefaultBinder", {}, ""}};
  return kDefaults;
}

bool has(const std::vector<Entry>& v, std::string_view name) {
  return std::any_of(v.begin(), v.end(), [&](const Entry& e) { return e.name == name; });
}

const Entry* find(const std::vector<Entry>& v, std::string_view name) {
  for (const auto& e : v) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

PluginSet parse_set(const ObjectContext& c, const json& j, const std::string& path) {
  PluginSet s;
  if (j.is_null()) return s;
  c.expect_object(j, path);
  for (const auto& [k, v] : j.items()) {
    const std::string f = path + "/" + k;
    if (k != "enabled" && k != "disabled") c.unknown(f, "enabled, disabled");
    if (v.is_null()) continue;
    c.expect_array(v, f);
    for (std::size_t i = 0; i < v.size(); ++i) {
      const std::string pf = f + "/" + std::to_string(i);
      c.expect_object(v[i], pf);
      Entry e;
      e.path = pf;
      for (const auto& [pk, pv] : v[i].items()) {
        if (pk == "name") e.name = c.str(pv, pf + "/name");
        else if (pk == "weight") { if (!pv.is_null()) e.weight = c.integer(pv, pf + "/weight", 0, 1'000'000); }
        else c.unknown(pf + "/" + pk, "name, weight");
      }
      if (e.name.empty()) c.fail(ErrorCode::kScenarioMissingField, pf + "/name", "missing field 'name'");
      if (e.name != "*" && !kube_plugin(e.name)) {
        c.unmodelled(pf + "/name", "plugin \"" + e.name + "\" (gpusched translates kube-scheduler's in-tree plugins only)");
      }
      if (k == "enabled" && e.name == "*") c.fail(ErrorCode::kScenarioBadValue, pf + "/name", "\"*\" can only be disabled");
      (k == "enabled" ? s.enabled : s.disabled).push_back(std::move(e));
    }
  }
  return s;
}

/// kube's mergePluginSet.
std::vector<Entry> merge_set(const std::vector<Entry>& defaults, const PluginSet& custom) {
  std::vector<Entry> out;
  std::set<std::size_t> replaced;
  if (!has(custom.disabled, "*")) {
    for (const auto& d : defaults) {
      if (has(custom.disabled, d.name)) continue;
      auto e = d;
      for (std::size_t i = 0; i < custom.enabled.size(); ++i) {
        if (custom.enabled[i].name == d.name) {
          e = custom.enabled[i];
          replaced.insert(i);
          break;
        }
      }
      out.push_back(e);
    }
  }
  for (std::size_t i = 0; i < custom.enabled.size(); ++i) {
    if (!replaced.count(i)) out.push_back(custom.enabled[i]);
  }
  return out;
}

/// kube's expandMultiPointPlugins for one point: the plugins active there, in order.
std::vector<Entry> expand(const ObjectContext& c, const std::vector<Entry>& multipoint, const PluginSet& specific, Point point) {
  for (const auto& e : specific.enabled) {
    if (!(kube_plugin(e.name)->points & point)) {
      c.fail(ErrorCode::kScenarioBadValue, e.path + "/name", "plugin " + e.name + " does not implement this extension point");
    }
  }
  if (has(specific.disabled, "*")) return specific.enabled;
  std::vector<std::string> overrides, from_multipoint;
  for (const auto& m : multipoint) {
    if (!(kube_plugin(m.name)->points & point)) continue;
    if (has(specific.disabled, m.name)) continue;
    if (has(specific.enabled, m.name)) {
      overrides.push_back(m.name);
      continue;
    }
    if (std::find(from_multipoint.begin(), from_multipoint.end(), m.name) != from_multipoint.end()) {
      c.fail(ErrorCode::kScenarioBadValue, m.path, "plugin " + m.name + " is enabled twice in multiPoint");
    }
    from_multipoint.push_back(m.name);
  }
  std::vector<Entry> out;
  for (const auto& e : specific.enabled) {
    if (std::find(overrides.begin(), overrides.end(), e.name) != overrides.end()) out.push_back(e);
  }
  for (const auto& n : from_multipoint) out.push_back(*find(multipoint, n));
  for (const auto& e : specific.enabled) {
    if (std::find(overrides.begin(), overrides.end(), e.name) == overrides.end()) out.push_back(e);
  }
  return out;
}

struct FitArgs {
  std::string type = "LeastAllocated";
  json resources = json::array({json{{"name", "cpu"}, {"weight", 1}}, json{{"name", "memory"}, {"weight", 1}}});
  json shape;
  std::string path;   ///< where scoringStrategy was written
  /// NodeResourcesBalancedAllocation's resources (its args' default: cpu 1, memory 1).
  json balanced_resources = json::array({json{{"name", "cpu"}, {"weight", 1}}, json{{"name", "memory"}, {"weight", 1}}});
  std::string balanced_path;   ///< where its resources were written
};

/// A `resources` list ([{name, weight}]) as kube-scheduler writes it; a 0 or absent weight is 1.
json resource_specs(const ObjectContext& c, const json& list, const std::string& path) {
  c.expect_array(list, path);
  json rs = json::array();
  for (std::size_t r = 0; r < list.size(); ++r) {
    const std::string rf = path + "/" + std::to_string(r);
    c.expect_object(list[r], rf);
    json one = json::object();
    for (const auto& [rk, rv] : list[r].items()) {
      if (rk == "name") one["name"] = c.str(rv, rf + "/name");
      else if (rk == "weight") one["weight"] = c.integer(rv, rf + "/weight", 0, 100);
      else c.unknown(rf + "/" + rk, "name, weight");
    }
    if (!one.contains("name")) c.fail(ErrorCode::kScenarioMissingField, rf + "/name", "missing field 'name'");
    if (!one.contains("weight") || one["weight"] == 0) one["weight"] = 1;   // kube defaults a 0 weight to 1
    rs.push_back(one);
  }
  return rs;
}

/// pluginConfig entries: checked, and NodeResourcesFit's scoring strategy read.
FitArgs plugin_config(const ObjectContext& c, const json& list, const std::string& path) {
  FitArgs fit;
  if (list.is_null()) return fit;
  c.expect_array(list, path);
  std::set<std::string> seen;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string f = path + "/" + std::to_string(i);
    c.expect_object(list[i], f);
    std::string name;
    json args = json::object();
    for (const auto& [k, v] : list[i].items()) {
      if (k == "name") name = c.str(v, f + "/name");
      else if (k == "args") { if (!v.is_null()) { c.expect_object(v, f + "/args"); args = v; } }
      else c.unknown(f + "/" + k, "name, args");
    }
    if (!seen.insert(name).second) c.fail(ErrorCode::kScenarioBadValue, f + "/name", "a second pluginConfig for " + name);
    const std::string af = f + "/args";
    auto arg_keys = [&](std::initializer_list<std::string_view> known, auto&& each) {
      for (const auto& [k, v] : args.items()) {
        if (k == "apiVersion" || k == "kind") continue;
        if (std::find(known.begin(), known.end(), k) == known.end()) c.unknown(af + "/" + k, join(known));
        each(k, v, af + "/" + k);
      }
    };
    if (name == "NodeResourcesFit") {
      arg_keys({"ignoredResources", "ignoredResourceGroups", "scoringStrategy"}, [&](const std::string& k, const json& v, const std::string& kf) {
        if (k == "scoringStrategy") {
          if (v.is_null()) return;
          c.expect_object(v, kf);
          fit.path = kf;
          bool has_resources = false;
          for (const auto& [sk, sv] : v.items()) {
            const std::string sf = kf + "/" + sk;
            if (sk == "type") {
              fit.type = c.str(sv, sf);
              if (fit.type != "LeastAllocated" && fit.type != "MostAllocated" && fit.type != "RequestedToCapacityRatio") {
                c.fail(ErrorCode::kScenarioBadValue, sf, "expected LeastAllocated, MostAllocated or RequestedToCapacityRatio");
              }
            } else if (sk == "resources") {
              if (sv.is_null()) continue;
              fit.resources = resource_specs(c, sv, sf);
              has_resources = true;
            } else if (sk == "requestedToCapacityRatio") {
              if (sv.is_null()) continue;
              c.expect_object(sv, sf);
              for (const auto& [rk, rv] : sv.items()) {
                if (rk != "shape") c.unknown(sf + "/" + rk, "shape");
                c.expect_array(rv, sf + "/shape");
                json shape = json::array();
                for (std::size_t p = 0; p < rv.size(); ++p) {
                  const std::string pf = sf + "/shape/" + std::to_string(p);
                  c.expect_object(rv[p], pf);
                  json pt = json::object();
                  for (const auto& [pk, pv] : rv[p].items()) {
                    if (pk == "utilization") pt["utilization"] = c.integer(pv, pf + "/utilization", 0, 100);
                    else if (pk == "score") pt["score"] = c.integer(pv, pf + "/score", 0, 10);
                    else c.unknown(pf + "/" + pk, "utilization, score");
                  }
                  shape.push_back(pt);
                }
                fit.shape = shape;
              }
            } else {
              c.unknown(sf, "type, resources, requestedToCapacityRatio");
            }
          }
          (void)has_resources;
        } else if (!v.is_null() && !v.empty()) {
          c.unmodelled(kf, k + " (gpusched checks every requested resource)");
        }
      });
      if (fit.type == "RequestedToCapacityRatio" && fit.shape.is_null()) {
        c.fail(ErrorCode::kScenarioMissingField, fit.path + "/requestedToCapacityRatio/shape", "RequestedToCapacityRatio needs a shape");
      }
    } else if (name == "NodeResourcesBalancedAllocation") {
      arg_keys({"resources"}, [&](const std::string&, const json& v, const std::string& kf) {
        if (v.is_null()) return;
        fit.balanced_resources = resource_specs(c, v, kf);
        fit.balanced_path = kf;
      });
    } else if (name == "DefaultPreemption") {
      arg_keys({"minCandidateNodesPercentage", "minCandidateNodesAbsolute"}, [&](const std::string& k, const json& v, const std::string& kf) {
        const auto x = c.integer(v, kf, 0, 1'000'000);
        if ((k == "minCandidateNodesPercentage" && x != 10) || (k == "minCandidateNodesAbsolute" && x != 100)) {
          c.unmodelled(kf, k + " other than the default (10%, 100): gpusched's preemption examines every node");
        }
      });
    } else if (name == "InterPodAffinity") {
      // Only its scoring reads these, and jobs carry no preferred pod (anti-)affinity terms.
      arg_keys({"hardPodAffinityWeight", "ignorePreferredTermsOfExistingPods"}, [](const std::string&, const json&, const std::string&) {});
    } else if (name == "NodeAffinity") {
      arg_keys({"addedAffinity"}, [&](const std::string& k, const json& v, const std::string& kf) {
        if (!v.is_null()) c.unmodelled(kf, k + " (affinity added to every pod)");
      });
    } else if (name == "PodTopologySpread") {
      arg_keys({"defaultConstraints", "defaultingType"}, [&](const std::string& k, const json& v, const std::string& kf) {
        if (k == "defaultConstraints" && !v.is_null() && !v.empty()) {
          c.unmodelled(kf, "cluster-level default spread constraints (use the topology-spread plugin)");
        }
      });
    } else if (name == "VolumeBinding") {
      arg_keys({"bindTimeoutSeconds", "shape"}, [](const std::string&, const json&, const std::string&) {});
    } else if (kube_plugin(name)) {
      c.unmodelled(f + "/name", "args for " + name);
    } else {
      c.unmodelled(f + "/name", "plugin \"" + name + "\" (gpusched translates kube-scheduler's in-tree plugins only)");
    }
  }
  return fit;
}

/// NodeResourcesFit's score: least-allocated / most-allocated (kube-scheduler's scoring, the
/// default, with `resources` as written), or requested-to-capacity-ratio.
json fit_score(const ObjectContext& c, const FitArgs& fit, const policies::Registry& registry, std::int64_t weight) {
  json ref{{"weight", weight}};
  if (fit.type == "RequestedToCapacityRatio") {
    if (!registry.find("requested-to-capacity-ratio")) {
      c.unmodelled(fit.path + "/type", "RequestedToCapacityRatio (this build has no requested-to-capacity-ratio plugin)");
    }
    ref["name"] = "requested-to-capacity-ratio";
    ref["args"] = json{{"shape", fit.shape}, {"resources", fit.resources}};
    return ref;
  }
  ref["name"] = fit.type == "LeastAllocated" ? "least-allocated" : "most-allocated";
  for (std::size_t i = 0; i < fit.resources.size(); ++i) {
    if (fit.resources[i]["name"] == "ephemeral-storage") {
      c.unmodelled(fit.path + "/resources/" + std::to_string(i) + "/name", "scoring by ephemeral-storage (gpusched has no node storage)");
    }
  }
  ref["args"] = json{{"resources", fit.resources}};
  return ref;
}

/// NodeResourcesBalancedAllocation's score: balanced-allocation over its args' `resources`.
json balanced_score(const ObjectContext& c, const FitArgs& fit, std::int64_t weight) {
  for (std::size_t i = 0; i < fit.balanced_resources.size(); ++i) {
    if (fit.balanced_resources[i]["name"] == "ephemeral-storage") {
      c.unmodelled(fit.balanced_path + "/" + std::to_string(i) + "/name", "balancing ephemeral-storage (gpusched has no node storage)");
    }
  }
  return json{{"name", "balanced-allocation"}, {"weight", weight}, {"args", json{{"resources", fit.balanced_resources}}}};
}

/// Whether this build's profiles take a field (other helpers add some).
bool profiles_take(const json& field) {
  try {
    (void)policies::Profile::from_json(field, "");
    return true;
  } catch (const Error&) {
    return false;
  }
}

}  // namespace

json translate_scheduler_config(const KubernetesObject& object, const policies::Registry& registry) {
  const ObjectContext c(object);
  if (object.api_version != "kubescheduler.config.k8s.io/v1") {
    c.fail(ErrorCode::kScenarioBadValue, "/apiVersion", "gpusched reads KubeSchedulerConfiguration as kubescheduler.config.k8s.io/v1, not " +
                                                            object.api_version);
  }
  const auto& o = object.object;
  std::optional<json> percentage;
  const json* profiles = nullptr;
  for (const auto& [k, v] : o.items()) {
    const std::string f = "/" + k;
    if (k == "apiVersion" || k == "kind" || k == "parallelism" || k == "leaderElection" || k == "clientConnection" ||
        k == "healthzBindAddress" || k == "metricsBindAddress" || k == "enableProfiling" || k == "enableContentionProfiling" ||
        k == "delayCacheUntilActive" || k == "metadata") {
      continue;   // no scheduling meaning in a simulation
    }
    if (k == "percentageOfNodesToScore") {
      if (!v.is_null()) percentage = c.integer(v, f, 0, 100);
    } else if (k == "podInitialBackoffSeconds" || k == "podMaxBackoffSeconds") {
      const auto x = c.integer(v, f, 0, 1'000'000);
      if ((k == "podInitialBackoffSeconds" && x != 1) || (k == "podMaxBackoffSeconds" && x != 10)) {
        c.unmodelled(f, k + " other than the default: gpusched offers a waiting job again as soon as capacity frees, without backoff");
      }
    } else if (k == "profiles") {
      if (!v.is_null()) {
        c.expect_array(v, f);
        profiles = &v;
      }
    } else if (k == "extenders") {
      if (!v.is_null() && !v.empty()) c.unmodelled(f, "scheduler extenders");
    } else {
      c.unknown(f, "profiles, percentageOfNodesToScore, podInitialBackoffSeconds, podMaxBackoffSeconds, extenders; ignored: "
                   "parallelism, leaderElection, clientConnection, healthzBindAddress, metricsBindAddress, enableProfiling, "
                   "enableContentionProfiling, delayCacheUntilActive");
    }
  }
  if (profiles && profiles->size() > 1) {
    c.unmodelled("/profiles/1", "several scheduler profiles (gpusched runs one scheduler: give one profile)");
  }
  const json empty = json::object();
  const json& p = profiles && !profiles->empty() ? (*profiles)[0] : empty;
  const std::string pp = "/profiles/0";
  c.expect_object(p, pp);
  std::string scheduler_name = "default-scheduler";
  PluginSet multi;
  std::map<Point, PluginSet> specific;
  FitArgs fit;
  for (const auto& [k, v] : p.items()) {
    const std::string f = pp + "/" + k;
    if (k == "schedulerName") {
      scheduler_name = c.str(v, f);
    } else if (k == "percentageOfNodesToScore") {
      if (!v.is_null()) percentage = c.integer(v, f, 0, 100);
    } else if (k == "plugins") {
      if (v.is_null()) continue;
      c.expect_object(v, f);
      for (const auto& [pk, pv] : v.items()) {
        const std::string ef = f + "/" + pk;
        if (pk == "multiPoint") {
          multi = parse_set(c, pv, ef);
          continue;
        }
        const auto it = std::find_if(std::begin(kPoints), std::end(kPoints), [&](const PointName& n) { return pk == n.name; });
        if (it == std::end(kPoints)) {
          c.unknown(ef, "multiPoint, preEnqueue, queueSort, preFilter, filter, postFilter, preScore, score, reserve, permit, preBind, bind, postBind");
        }
        specific[it->point] = parse_set(c, pv, ef);
      }
    } else if (k == "pluginConfig") {
      fit = plugin_config(c, v, f);
    } else {
      c.unknown(f, "schedulerName, percentageOfNodesToScore, plugins, pluginConfig");
    }
  }
  const auto multipoint = merge_set(default_multipoint(), multi);
  auto at = [&](Point pt) { return expand(c, multipoint, specific[pt], pt); };
  // kube's getScoreWeights: the entry the point runs (its own when re-enabled there, else
  // MultiPoint's) gives the weight; 0 or unset means 1.
  auto weight_of = [&](const Entry& e) {
    const std::int64_t w = e.weight.value_or(0);
    return w == 0 ? std::int64_t{1} : w;
  };

  json prof = json::object();
  prof["name"] = scheduler_name;
  prof["description"] = "translated from a KubeSchedulerConfiguration (" + object.file + ", profile " + scheduler_name + ")";
  const auto qs = at(kQueueSort);
  if (qs.size() != 1) c.fail(ErrorCode::kScenarioBadValue, pp + "/plugins/queueSort", "exactly one queueSort plugin must be enabled");
  prof["queue_sort"] = "priority-fifo";   // PrioritySort, the only in-tree queue sort
  json filters = json::array();
  const bool has_unschedulable = registry.find("node-unschedulable") != nullptr;
  for (const auto& e : at(kFilter)) {
    // A cordon is the node.kubernetes.io/unschedulable taint; builds without node-unschedulable
    // leave it to taint-toleration.
    if (e.name == "NodeUnschedulable" && has_unschedulable) filters.push_back("node-unschedulable");
    else if (e.name == "NodeResourcesFit") filters.push_back("node-resources-fit");
    else if (e.name == "TaintToleration") filters.push_back("taint-toleration");
    else if (e.name == "NodeAffinity") filters.push_back("node-affinity");
    else if (e.name == "InterPodAffinity") filters.push_back("app-max-per-node");   // required anti-affinity per app, as kube-default
  }
  json scores = json::array();
  for (const auto& e : at(kScore)) {
    if (e.name == "NodeResourcesFit") scores.push_back(fit_score(c, fit, registry, weight_of(e)));
    else if (e.name == "TaintToleration") scores.push_back(json{{"name", "taint-toleration"}, {"weight", weight_of(e)}});
    else if (e.name == "NodeAffinity") scores.push_back(json{{"name", "node-affinity"}, {"weight", weight_of(e)}});
    else if (e.name == "NodeResourcesBalancedAllocation") scores.push_back(balanced_score(c, fit, weight_of(e)));
    // InterPodAffinity, PodTopologySpread, ImageLocality, VolumeBinding: no effect on simulated jobs.
  }
  json post = json::array();
  for (const auto& e : at(kPostFilter)) {
    if (e.name == "DefaultPreemption") post.push_back("priority-preemption");
  }
  for (Point pt : {kPreEnqueue, kPreFilter, kPreScore, kReserve, kPermit, kPreBind, kBind, kPostBind}) (void)at(pt);
  prof["pre_filter"] = json::array();
  prof["filter"] = filters;
  prof["score"] = scores;
  prof["post_filter"] = post;
  prof["queueing"] = "greedy";
  // Among equal top scores kube-scheduler picks at random (schedule_one.go selectHost).
  prof["tie_break"] = "random";
  // Why a job is pending, worded as kube-scheduler words it (where this build can).
  if (profiles_take(json{{"diagnosis", "kube-scheduler"}})) prof["diagnosis"] = "kube-scheduler";
  if (percentage) {
    if (profiles_take(json{{"percentage_of_nodes_to_score", 0}})) {
      prof["percentage_of_nodes_to_score"] = *percentage;
    } else if (*percentage != 100) {
      c.unmodelled(o.contains("percentageOfNodesToScore") ? "/percentageOfNodesToScore" : pp + "/percentageOfNodesToScore",
                   "percentageOfNodesToScore other than 100 (this build scores every feasible node)");
    }
  }
  return prof;
}

}  // namespace gpusched::scenario::detail
