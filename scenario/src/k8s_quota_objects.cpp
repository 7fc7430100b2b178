// Kueue (ClusterQueue, Cohort, ResourceFlavor, LocalQueue, WorkloadPriorityClass), Volcano
// (Queue), Kubernetes PriorityClass and ResourceQuota objects, translated to scenario priority
// classes and the args of capacity-queues, resource-quota and drf. Field names and defaults
// follow kueue.x-k8s.io/v1beta1 (apis/kueue/v1beta1/*_types.go), scheduling.volcano.sh/v1beta1
// (volcano-sh/apis pkg/apis/scheduling/v1beta1/types.go), scheduling.k8s.io/v1 and core v1.
#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <set>

#include <gpusched/policies/framework/scheduler.hpp>
#include <gpusched/policies/quota/quota_resources.hpp>

#include <gpusched/scenario/scenario.hpp>

#include "k8s_objects_detail.hpp"

namespace gpusched::scenario::detail {
namespace {

using nlohmann::json;

constexpr std::string_view kKueue = "kueue.x-k8s.io/v1beta1";
constexpr std::string_view kVolcano = "scheduling.volcano.sh/v1beta1";

void require_api(const ObjectContext& c, std::string_view want) {
  if (c.object().api_version != want) {
    c.fail(ErrorCode::kScenarioBadValue, "/apiVersion",
           "gpusched reads " + c.object().kind + " as " + std::string(want) + ", not " + c.object().api_version);
  }
}

const json& spec_of(const ObjectContext& c) {
  static const json kEmpty = json::object();
  const auto& o = c.object().object;
  if (!o.contains("spec") || o["spec"].is_null()) return kEmpty;
  c.expect_object(o["spec"], "/spec");
  return o["spec"];
}

/// Checks a quota resource name (ResourceQuota, ClusterQueue, Volcano Queue) as the plugins will,
/// reporting with the object's location; returns the canonical name.
std::string quota_resource(const ObjectContext& c, const std::string& name, const std::string& path) {
  try {
    return policies::quota::QuotaResources::canonical(name, c.at(path));
  } catch (const Error& e) {
    c.fail(ErrorCode::kScenarioUnknownField, path, e.detail());
  }
}

std::int64_t quota_amount(const ObjectContext& c, const std::string& canonical, const json& v, const std::string& path) {
  policies::quota::QuotaResources res;
  const auto i = res.intern(canonical);
  try {
    return res.parse_amount(i, v, c.at(path));
  } catch (const Error& e) {
    c.fail(ErrorCode::kScenarioBadValue, path, e.detail());
  }
}

/// An amount as the plugins' args write it ("32", "36Gi", 4), whether kubectl printed it as a
/// string or a number: the same object gives the same args from YAML and JSON.
json quota_value(const ObjectContext& c, const std::string& canonical, const json& v, const std::string& path) {
  policies::quota::QuotaResources res;
  const auto i = res.intern(canonical);
  const auto text = res.format(i, quota_amount(c, canonical, v, path));
  if (!text.empty() && std::all_of(text.begin(), text.end(), [](char ch) { return ch >= '0' && ch <= '9'; }) &&
      canonical != "cpu" && canonical != "memory") {
    return std::stoll(text);
  }
  return text;
}

/// A StopPolicy: only None (the default) is modelled.
void stop_policy(const ObjectContext& c, const json& v, const std::string& path) {
  if (c.str(v, path) != "None") c.unmodelled(path, "stopPolicy " + v.get<std::string>() + " (gpusched admits from every queue; only None)");
}

// ------------------------------------------------------------------ priority classes

void priority_class(const ObjectContext& c, bool workload, KubernetesTranslation& out) {
  const auto& o = c.object().object;
  if (workload) {
    require_api(c, kKueue);
    c.check_top({"value", "description"});
  } else {
    require_api(c, "scheduling.k8s.io/v1");
    c.check_top({"value", "description", "globalDefault", "preemptionPolicy"});
  }
  if (!o.contains("value")) c.fail(ErrorCode::kScenarioMissingField, "/value", "missing field 'value'");
  // User classes go up to 1e9, as Kubernetes allows; the built-in system-* classes (as
  // `kubectl get priorityclasses` lists them) only at their own values.
  const auto& pc_name = c.object().name;
  const auto system = workload ? std::nullopt : system_priority_class(pc_name);
  const auto value = c.integer(o["value"], "/value", -2'000'000'000, system ? *system : kHighestUserPriority);
  if (system && value != *system) {
    c.fail(ErrorCode::kScenarioBadValue, "/value",
           "\"" + pc_name + "\" is Kubernetes' built-in priority class: its value is " + std::to_string(*system));
  }
  json pc{{"value", value}};
  if (o.contains("globalDefault")) {
    if (c.boolean(o["globalDefault"], "/globalDefault")) pc["global_default"] = true;
  }
  if (o.contains("preemptionPolicy") && !o["preemptionPolicy"].is_null()) {
    const auto p = c.str(o["preemptionPolicy"], "/preemptionPolicy");
    if (p != "Never" && p != "PreemptLowerPriority") {
      c.fail(ErrorCode::kScenarioBadValue, "/preemptionPolicy", "expected PreemptLowerPriority or Never");
    }
    if (p == "Never") pc["preemption_policy"] = "Never";
  }
  const auto& name = c.object().name;
  if (out.priority_classes.contains(name)) {
    c.fail(ErrorCode::kScenarioBadValue, "/metadata/name",
           "a PriorityClass and a WorkloadPriorityClass are both named \"" + name + "\"; jobs name one priority class");
  }
  if (pc.value("global_default", false)) {
    for (const auto& [other, v] : out.priority_classes.items()) {
      if (v.value("global_default", false)) {
        c.fail(ErrorCode::kScenarioBadValue, "/globalDefault", "\"" + other + "\" is already the global default");
      }
    }
  }
  out.priority_classes[name] = pc;
}

// ------------------------------------------------------------------ ResourceQuota

/// Object counts that simulated jobs never create: a quota on them never binds.
bool inert_quota_resource(const std::string& n) {
  static const std::set<std::string, std::less<>> kInert = {
      "configmaps", "secrets", "services", "services.loadbalancers", "services.nodeports", "replicationcontrollers",
      "resourcequotas", "persistentvolumeclaims", "requests.storage"};
  if (kInert.count(n)) return true;
  if (n.size() > 38 && n.find(".storageclass.storage.k8s.io/") != std::string::npos) return true;
  return n.rfind("count/", 0) == 0 && n != "count/jobs" && n != "count/jobs.batch" && n != "count/pods";
}

struct QuotaEntry {
  std::int64_t amount = 0;
  std::string written;
  json value;
  std::string quota_name;   ///< the ResourceQuota that set this (tightest) limit
};

void resource_quota(const ObjectContext& c, std::map<std::string, std::map<std::string, QuotaEntry>>& quotas) {
  require_api(c, "v1");
  c.check_top({"spec"});
  const auto& spec = spec_of(c);
  const std::string ns = c.object().namespace_name.empty() ? "default" : c.object().namespace_name;
  for (const auto& [k, v] : spec.items()) {
    const std::string f = "/spec/" + k;
    if (k == "hard") {
      c.expect_object(v, f);
      for (const auto& [res, amount] : v.items()) {
        const std::string rf = f + "/" + res;
        if (inert_quota_resource(res)) continue;
        if (res == "count/pods") {
          const auto canon = quota_resource(c, "pods", rf);
          auto& e = quotas[ns][canon];
          const auto a = quota_amount(c, canon, amount, rf);
          if (e.written.empty() || a < e.amount) e = {a, "pods", quota_value(c, canon, amount, rf), c.object().name};
          continue;
        }
        const auto canon = quota_resource(c, res, rf);
        const auto a = quota_amount(c, canon, amount, rf);
        // Every ResourceQuota of a namespace must hold: the tightest limit per resource counts.
        auto& e = quotas[ns][canon];
        if (e.written.empty() || a < e.amount) e = {a, res, quota_value(c, canon, amount, rf), c.object().name};
      }
    } else if (k == "scopes" || k == "scopeSelector") {
      if (!v.empty()) c.unmodelled(f, "quota scopes (Terminating, BestEffort, PriorityClass, ...): a gpusched quota covers every job of its namespace");
    } else {
      c.unknown(f, "spec.hard; spec.scopes and scopeSelector only empty");
    }
  }
  (void)quotas[ns];
}

// ------------------------------------------------------------------ Volcano Queue

struct VolcanoQueues {
  json weights = json::object();
  std::map<std::string, std::map<std::string, QuotaEntry>> capability;
};

void volcano_queue(const ObjectContext& c, VolcanoQueues& out) {
  require_api(c, kVolcano);
  c.check_top({"spec"});
  const auto& spec = spec_of(c);
  const auto& name = c.object().name;
  std::int64_t weight = 1;   // Volcano defaults an unset or 0 weight to 1
  for (const auto& [k, v] : spec.items()) {
    const std::string f = "/spec/" + k;
    if (k == "weight") {
      weight = c.integer(v, f, 0, 2'147'483'647);
      if (weight == 0) weight = 1;
    } else if (k == "capability") {
      c.expect_object(v, f);
      for (const auto& [res, amount] : v.items()) {
        const auto canon = quota_resource(c, res, f + "/" + res);
        out.capability[name][canon] = {quota_amount(c, canon, amount, f + "/" + res), res, quota_value(c, canon, amount, f + "/" + res)};
      }
    } else if (k == "reclaimable") {
      if (!c.boolean(v, f)) {
        c.unmodelled(f, "reclaimable: false (gpusched's Volcano model has no reclaim action, so nothing would protect the "
                        "queue's jobs as Volcano does); only the default true");
      }
    } else if (k == "deserved") {
      c.unmodelled(f, "deserved (the capacity plugin's share a queue may reclaim up to): gpusched models a queue's weight (drf "
                      "order) and capability (a hard cap), not deserved shares");
    } else if (k == "guarantee") {
      c.unmodelled(f, "guarantee (resources reserved for the queue): gpusched models weight and capability only");
    } else if (k == "parent" || k == "hierarchy" || k == "type" || k == "priority" || k == "extendClusters" || k == "affinity" ||
               k == "dequeueStrategy") {
      c.unmodelled(f, k + " (gpusched's Volcano queues are flat, unprioritised and single-cluster; it models weight and capability)");
    } else {
      c.unknown(f, "spec.weight, spec.capability, spec.reclaimable (true)");
    }
  }
  out.weights[name] = weight;
}

// ------------------------------------------------------------------ Kueue

/// The GPU model a node label nvidia.com/gpu.product names. GPU feature discovery writes the
/// product as nvidia-smi names it with spaces turned to dashes ("NVIDIA-A100-SXM4-80GB",
/// "NVIDIA-H100-80GB-HBM3"): compared with the catalog's names and aliases case-insensitively,
/// spaces and dashes alike, an "NVIDIA" prefix optional.
std::optional<GpuModelId> gpu_model_of_product(const GpuCatalog& catalog, const std::string& product) {
  if (auto id = catalog.find(product)) return id;
  auto norm = [](std::string x) {
    for (auto& ch : x) {
      ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      if (ch == ' ' || ch == '_') ch = '-';
    }
    if (x.rfind("nvidia-", 0) == 0) x = x.substr(7);
    return x;
  };
  const auto want = norm(product);
  for (std::size_t i = 0; i < catalog.size(); ++i) {
    const auto& m = catalog.models()[i];
    if (norm(m.name) == want) return catalog.find(m.name);
    for (const auto& a : m.aliases) {
      if (norm(a) == want) return catalog.find(m.name);
    }
  }
  return std::nullopt;
}

/// ResourceFlavor -> gpusched flavor: a GPU model (nodeLabels nvidia.com/gpu.product) or
/// "default" (no nodeLabels: every node).
std::string resource_flavor(const ObjectContext& c, const GpuCatalog& catalog) {
  require_api(c, kKueue);
  c.check_top({"spec"});
  const auto& spec = spec_of(c);
  std::string flavor = "default";
  for (const auto& [k, v] : spec.items()) {
    const std::string f = "/spec/" + k;
    if (k == "nodeLabels") {
      if (v.is_null()) continue;
      c.expect_object(v, f);
      for (const auto& [lk, lv] : v.items()) {
        const std::string lf = f + "/" + lk;
        if (lk != "nvidia.com/gpu.product") {
          c.unmodelled(lf, "node label \"" + lk + "\": a gpusched flavor is a GPU model, named by the nvidia.com/gpu.product "
                           "label (or every node, without nodeLabels)");
        }
        const auto product = c.str(lv, lf);
        const auto id = gpu_model_of_product(catalog, product);
        if (!id) {
          c.fail(ErrorCode::kScenarioBadValue, lf, "\"" + product + "\" is not a GPU model of the catalog (known: " +
                                                       catalog.known_names() + ")");
        }
        flavor = catalog[*id].name;
      }
    } else if (k == "nodeTaints" || k == "tolerations") {
      if (!v.is_null() && !v.empty()) {
        c.unmodelled(f, k + " of a flavor: put the taints on the cluster's nodes and the tolerations on the jobs");
      }
    } else if (k == "topologyName") {
      if (!v.is_null()) c.unmodelled(f, "topology-aware scheduling (Topology objects)");
    } else {
      c.unknown(f, "spec.nodeLabels (nvidia.com/gpu.product); spec.nodeTaints, tolerations only empty");
    }
  }
  return flavor;
}

std::string preemption_policy(const ObjectContext& c, const json& v, const std::string& path, std::initializer_list<std::string_view> allowed) {
  const auto s = c.str(v, path);
  if (std::find(allowed.begin(), allowed.end(), s) == allowed.end()) {
    if (s == "LowerOrNewerEqualPriority") c.unmodelled(path, "withinClusterQueue: LowerOrNewerEqualPriority (only Never and LowerPriority)");
    c.fail(ErrorCode::kScenarioBadValue, path, "expected one of " + join(allowed));
  }
  return s;
}

json cq_preemption(const ObjectContext& c, const json& v, const std::string& path) {
  // Kueue's API defaults (gpusched's capacity-queues defaults reclaim to Any: say Never here).
  json out{{"reclaim_within_cohort", "Never"}, {"within_cluster_queue", "Never"}};
  if (v.is_null()) return out;
  c.expect_object(v, path);
  for (const auto& [k, pv] : v.items()) {
    const std::string f = path + "/" + k;
    if (k == "reclaimWithinCohort") {
      out["reclaim_within_cohort"] = preemption_policy(c, pv, f, {"Never", "LowerPriority", "Any"});
    } else if (k == "withinClusterQueue") {
      out["within_cluster_queue"] = preemption_policy(c, pv, f, {"Never", "LowerPriority"});
    } else if (k == "borrowWithinCohort") {
      if (pv.is_null()) continue;
      c.expect_object(pv, f);
      json b = json::object();
      for (const auto& [bk, bv] : pv.items()) {
        if (bk == "policy") b["policy"] = preemption_policy(c, bv, f + "/policy", {"Never", "LowerPriority"});
        else if (bk == "maxPriorityThreshold") b["max_priority_threshold"] = c.integer(bv, f + "/" + bk, -2'147'483'648LL, 2'147'483'647LL);
        else c.unknown(f + "/" + bk, "policy, maxPriorityThreshold");
      }
      if (b.value("policy", "Never") != "Never") out["borrow_within_cohort"] = b;
    } else {
      c.unknown(f, "reclaimWithinCohort, withinClusterQueue, borrowWithinCohort");
    }
  }
  return out;
}

/// Whether capacity-queues accepts `args` (a probe for arguments other helpers may add).
bool capacity_queues_take(const policies::Registry& registry, const json& args) {
  policies::Profile p;
  p.filter = {policies::PluginRef{"node-resources-fit"}, policies::PluginRef{"capacity-queues", 1.0, args, {}}};
  try {
    policies::Scheduler check(p, registry, 0);
    return true;
  } catch (const Error&) {
    return false;
  }
}

struct KueueState {
  std::map<std::string, std::string> flavors;   // ResourceFlavor name -> gpusched flavor
  json queues = json::object();
  json cohorts = json::object();
  std::map<std::string, std::string> local_queues;   // LocalQueue name -> ClusterQueue
};

void cluster_queue(const ObjectContext& c, KueueState& st, const policies::Registry& registry) {
  require_api(c, kKueue);
  c.check_top({"spec"});
  const auto& spec = spec_of(c);
  json q = json::object();
  q["preemption"] = cq_preemption(c, nullptr, "/spec/preemption");
  bool has_selector = false;
  for (const auto& [k, v] : spec.items()) {
    const std::string f = "/spec/" + k;
    if (k == "resourceGroups") {
      c.expect_array(v, f);
      json groups = json::array();
      for (std::size_t g = 0; g < v.size(); ++g) {
        const std::string gf = f + "/" + std::to_string(g);
        c.expect_object(v[g], gf);
        std::vector<std::string> covered;
        json flavors = json::array();
        std::set<std::string> models;
        for (const auto& [gk, gv] : v[g].items()) {
          if (gk == "coveredResources") {
            c.expect_array(gv, gf + "/" + gk);
            for (std::size_t i = 0; i < gv.size(); ++i) {
              const std::string rf = gf + "/coveredResources/" + std::to_string(i);
              const auto r = c.str(gv[i], rf);
              (void)quota_resource(c, r, rf);
              covered.push_back(r);
            }
          } else if (gk != "flavors") {
            c.unknown(gf + "/" + gk, "coveredResources, flavors");
          }
        }
        if (!v[g].contains("flavors")) c.fail(ErrorCode::kScenarioMissingField, gf + "/flavors", "missing field 'flavors'");
        const auto& fl = v[g]["flavors"];
        c.expect_array(fl, gf + "/flavors");
        for (std::size_t i = 0; i < fl.size(); ++i) {
          const std::string ff = gf + "/flavors/" + std::to_string(i);
          c.expect_object(fl[i], ff);
          std::string rf_name;
          json resources = json::object();
          std::vector<std::string> listed;
          for (const auto& [fk, fv] : fl[i].items()) {
            if (fk == "name") {
              rf_name = c.str(fv, ff + "/name");
            } else if (fk == "resources") {
              c.expect_array(fv, ff + "/resources");
              for (std::size_t r = 0; r < fv.size(); ++r) {
                const std::string qf = ff + "/resources/" + std::to_string(r);
                c.expect_object(fv[r], qf);
                std::string rname;
                json quota = json::object();
                for (const auto& [qk, qv] : fv[r].items()) {
                  if (qk == "name") rname = c.str(qv, qf + "/name");
                  else if (qk == "nominalQuota") quota["nominal_quota"] = qv;
                  else if (qk == "borrowingLimit") { if (!qv.is_null()) quota["borrowing_limit"] = qv; }
                  else if (qk == "lendingLimit") { if (!qv.is_null()) quota["lending_limit"] = qv; }
                  else c.unknown(qf + "/" + qk, "name, nominalQuota, borrowingLimit, lendingLimit");
                }
                if (rname.empty()) c.fail(ErrorCode::kScenarioMissingField, qf + "/name", "missing field 'name'");
                if (!quota.contains("nominal_quota")) c.fail(ErrorCode::kScenarioMissingField, qf + "/nominalQuota", "missing field 'nominalQuota'");
                const auto canon = quota_resource(c, rname, qf + "/name");
                for (const auto& [key, written] : {std::pair{"nominal_quota", "/nominalQuota"}, std::pair{"borrowing_limit", "/borrowingLimit"},
                                                   std::pair{"lending_limit", "/lendingLimit"}}) {
                  if (quota.contains(key)) quota[key] = quota_value(c, canon, quota[key], qf + written);
                }
                listed.push_back(rname);
                resources[rname] = quota;
              }
            } else {
              c.unknown(ff + "/" + fk, "name, resources");
            }
          }
          if (rf_name.empty()) c.fail(ErrorCode::kScenarioMissingField, ff + "/name", "missing field 'name'");
          // Kueue: every flavor lists exactly the group's covered resources.
          auto a = listed, b = covered;
          std::sort(a.begin(), a.end());
          std::sort(b.begin(), b.end());
          if (a != b) {
            c.fail(ErrorCode::kScenarioBadValue, ff + "/resources", "flavor \"" + rf_name +
                                                                       "\" must list exactly the group's coveredResources (Kueue rejects it otherwise)");
          }
          const auto it = st.flavors.find(rf_name);
          if (it == st.flavors.end()) {
            c.fail(ErrorCode::kScenarioBadValue, ff + "/name", "no ResourceFlavor named \"" + rf_name +
                                                                  "\" among the objects given (Kueue keeps such a ClusterQueue inactive)");
          }
          if (!models.insert(it->second).second) {
            c.unmodelled(ff + "/name", "two flavors of one resource group that select the same nodes (\"" + it->second +
                                           "\"): a gpusched flavor is a GPU model");
          }
          flavors.push_back(json{{"name", it->second}, {"resources", resources}});
        }
        groups.push_back(json{{"flavors", flavors}});
      }
      q["resource_groups"] = groups;
    } else if (k == "cohort") {
      if (v.is_null() || v == "") continue;
      const auto cohort = c.str(v, f);
      q["cohort"] = cohort;
      if (!st.cohorts.contains(cohort)) st.cohorts[cohort] = json::object();
    } else if (k == "preemption") {
      q["preemption"] = cq_preemption(c, v, f);
    } else if (k == "fairSharing") {
      if (v.is_null()) continue;
      c.expect_object(v, f);
      for (const auto& [fk, fv] : v.items()) {
        if (fk != "weight") c.unknown(f + "/" + fk, "weight");
        q["fair_sharing"] = json{{"weight", c.quantity(fv, f + "/weight")}};
        if (!capacity_queues_take(registry, json{{"queues", {{"q", {{"fair_sharing", q["fair_sharing"]}}}}}})) {
          c.unmodelled(f + "/weight", "fair-sharing weights (this build's capacity-queues has no fair sharing)");
        }
      }
    } else if (k == "namespaceSelector") {
      if (v.is_null()) continue;
      c.expect_object(v, f);
      if (!v.empty()) c.unmodelled(f, "a namespaceSelector with terms (gpusched jobs have no namespace labels); only {} (every namespace)");
      has_selector = true;
    } else if (k == "queueingStrategy") {
      if (c.str(v, f) != "BestEffortFIFO") {
        c.unmodelled(f, "queueingStrategy " + v.get<std::string>() + " (gpusched's capacity-queues admits BestEffortFIFO: a job that "
                        "does not fit does not block later ones)");
      }
    } else if (k == "flavorFungibility") {
      if (v.is_null()) continue;
      c.expect_object(v, f);
      for (const auto& [fk, fv] : v.items()) {
        const auto s = c.str(fv, f + "/" + fk);
        if (fk == "whenCanBorrow") {
          if (s != "MayStopSearch" && s != "Borrow") c.unmodelled(f + "/" + fk, "whenCanBorrow " + s + " (gpusched borrows in the first flavor with room: MayStopSearch)");
        } else if (fk == "whenCanPreempt") {
          if (s != "TryNextFlavor") c.unmodelled(f + "/" + fk, "whenCanPreempt " + s + " (gpusched tries every flavor before preempting: TryNextFlavor)");
        } else {
          c.unknown(f + "/" + fk, "whenCanBorrow, whenCanPreempt");
        }
      }
    } else if (k == "stopPolicy") {
      stop_policy(c, v, f);
    } else if (k == "admissionChecks" || k == "admissionChecksStrategy" || k == "excludeResourcePrefixes") {
      if (!v.is_null() && !v.empty()) c.unmodelled(f, k + " (admission checks and excluded resources are not simulated)");
    } else if (k == "admissionScope") {
      if (!v.is_null()) c.unmodelled(f, "admissionScope (admission fair sharing)");
    } else {
      c.unknown(f, "spec.resourceGroups, cohort, preemption, fairSharing, namespaceSelector ({}), queueingStrategy "
                   "(BestEffortFIFO), flavorFungibility (defaults), stopPolicy (None)");
    }
  }
  if (!has_selector) {
    c.unmodelled("/spec", "a ClusterQueue without namespaceSelector admits no namespace in Kueue (a null selector matches "
                          "nothing); write namespaceSelector: {} for every namespace");
  }
  st.queues[c.object().name] = q;
}

void cohort(const ObjectContext& c, KueueState& st) {
  require_api(c, kKueue);
  c.check_top({"spec"});
  const auto& spec = spec_of(c);
  json co = json::object();
  for (const auto& [k, v] : spec.items()) {
    const std::string f = "/spec/" + k;
    if (k == "parent") {
      if (v.is_null() || v == "") continue;
      co["parent"] = c.str(v, f);
    } else if (k == "resourceGroups") {
      if (!v.is_null() && !v.empty()) c.unmodelled(f, "quota held by a Cohort itself (gpusched's cohorts pool their ClusterQueues' quota)");
    } else if (k == "fairSharing") {
      if (!v.is_null() && !v.empty()) c.unmodelled(f, "fair-sharing weights of a Cohort (gpusched weighs ClusterQueues only)");
    } else {
      c.unknown(f, "spec.parent; spec.resourceGroups and fairSharing only empty");
    }
  }
  const auto& name = c.object().name;
  if (st.cohorts.contains(name) && !st.cohorts[name].empty() && st.cohorts[name] != co) {
    c.fail(ErrorCode::kScenarioBadValue, "/metadata/name", "cohort \"" + name + "\" is described twice");
  }
  st.cohorts[name] = co;
}

void local_queue(const ObjectContext& c, KueueState& st) {
  require_api(c, kKueue);
  c.check_top({"spec"});
  const auto& spec = spec_of(c);
  std::string cq;
  for (const auto& [k, v] : spec.items()) {
    const std::string f = "/spec/" + k;
    if (k == "clusterQueue") cq = c.str(v, f);
    else if (k == "stopPolicy") stop_policy(c, v, f);
    else if (k == "fairSharing") { if (!v.is_null() && !v.empty()) c.unmodelled(f, "admission fair sharing between LocalQueues"); }
    else c.unknown(f, "spec.clusterQueue, stopPolicy (None)");
  }
  if (cq.empty()) c.fail(ErrorCode::kScenarioMissingField, "/spec/clusterQueue", "missing field 'spec.clusterQueue'");
  if (!st.queues.contains(cq)) {
    c.fail(ErrorCode::kScenarioBadValue, "/spec/clusterQueue", "no ClusterQueue named \"" + cq + "\" among the objects given");
  }
  // A job's queue is the LocalQueue's name (gpusched jobs have no namespace).
  const auto& name = c.object().name;
  if (auto it = st.local_queues.find(name); it != st.local_queues.end() && it->second != cq) {
    c.unmodelled("/metadata/name", "LocalQueues named \"" + name + "\" in two namespaces pointing at different ClusterQueues (\"" +
                                       it->second + "\", \"" + cq + "\"): a gpusched job's queue has no namespace");
  }
  st.local_queues[name] = cq;
}

}  // namespace

void translate_quota_objects(const std::vector<KubernetesObject>& objects, const GpuCatalog& catalog,
                             const policies::Registry& registry, KubernetesTranslation& out) {
  KueueState kueue;
  VolcanoQueues volcano;
  std::map<std::string, std::map<std::string, QuotaEntry>> quotas;
  bool any_kueue = false, any_rq = false, any_volcano = false;
  // Flavors and queues first: ClusterQueues name flavors, LocalQueues name ClusterQueues.
  for (int pass = 0; pass < 3; ++pass) {
    for (const auto& o : objects) {
      const ObjectContext c(o);
      const auto& k = o.kind;
      if (pass == 0) {
        if (k == "ResourceFlavor") kueue.flavors[o.name] = resource_flavor(c, catalog);
        else if (k == "Cohort") cohort(c, kueue);
        else if (k == "PriorityClass") priority_class(c, false, out);
        else if (k == "WorkloadPriorityClass") priority_class(c, true, out);
        else if (k == "ResourceQuota") { resource_quota(c, quotas); any_rq = true; }
        else if (k == "Queue") { volcano_queue(c, volcano); any_volcano = true; }
        else if (k != "ClusterQueue" && k != "LocalQueue") {
          c.fail(ErrorCode::kScenarioUnknownField, "/kind",
                 "gpusched does not read kind " + k + " (" + o.api_version + "); it reads ClusterQueue, Cohort, ResourceFlavor, "
                 "LocalQueue, WorkloadPriorityClass (kueue.x-k8s.io/v1beta1), Queue (scheduling.volcano.sh/v1beta1), "
                 "PriorityClass (scheduling.k8s.io/v1), ResourceQuota (v1), KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1)");
        }
      } else if (pass == 1 && k == "ClusterQueue") {
        cluster_queue(c, kueue, registry);
        any_kueue = true;
      } else if (pass == 2 && k == "LocalQueue") {
        local_queue(c, kueue);
      }
    }
  }
  if (any_kueue || !kueue.cohorts.empty()) {
    // Parents that no Cohort object describes are implicit cohorts (Kueue: "default Cohort").
    auto cohorts = kueue.cohorts;
    for (const auto& [name, co] : kueue.cohorts.items()) {
      if (co.contains("parent") && !cohorts.contains(co["parent"].get<std::string>())) cohorts[co["parent"].get<std::string>()] = json::object();
    }
    for (const auto& [lq, cq] : kueue.local_queues) {
      if (lq == cq) continue;   // capacity-queues maps a job queue named after a ClusterQueue already
      auto& list = kueue.queues[cq]["local_queues"];
      if (list.is_null()) list = json::array();
      list.push_back(lq);
    }
    out.plugin_args["capacity-queues"] = json{{"queues", kueue.queues}, {"cohorts", cohorts}};
  }
  if (any_volcano) out.plugin_args["drf"] = json{{"weights", volcano.weights}};
  if (any_rq && !volcano.capability.empty()) {
    throw_error(ErrorCode::kScenarioBadValue, {objects.front().file, 0, "/kubernetes_objects"},
                "ResourceQuota objects (charged when jobs are created) and Volcano Queue capabilities (charged while jobs run) "
                "both configure the resource-quota plugin: give one kind");
  }
  if (any_rq || !volcano.capability.empty()) {
    auto& src = any_rq ? quotas : volcano.capability;
    json q = json::object();
    for (const auto& [ns, entries] : src) {
      q[ns] = json::object();
      for (const auto& [canon, e] : entries) q[ns][e.written] = e.value;
      // The API server's refusal names the ResourceQuota ("exceeded quota: <name>"): the one
      // that set the namespace's limits (several quotas in one namespace: the one that set the
      // tightest limit of the first resource by name; the plugin keeps one name per namespace).
      if (any_rq && !entries.empty() && !entries.begin()->second.quota_name.empty()) {
        q[ns]["name"] = entries.begin()->second.quota_name;
      }
    }
    json args{{"quotas", q}};
    // A Volcano capability caps what a queue's running jobs hold.
    const auto* info = registry.find("resource-quota");
    const bool has_charge = info && std::any_of(info->args.begin(), info->args.end(), [](const auto& a) { return a.name == "charge"; });
    if (!any_rq && has_charge) args["charge"] = "running";
    out.plugin_args["resource-quota"] = args;
  }
}

}  // namespace gpusched::scenario::detail
