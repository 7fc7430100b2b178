#include <gpusched/policies/framework/profile.hpp>

#include <algorithm>
#include <iterator>

#include <gpusched/error.hpp>

namespace gpusched::policies {
namespace {

/// The FGD paper's presets score as the authors' simulator does: integers 0..100, ties to node order.
nlohmann::json authors_scores() { return {{"integer_scores", true}}; }
/// gpusched's own real-valued least-/most-allocated (cpu, memory and GPU, weight 1 each): for the
/// presets that do not claim kube-scheduler's NodeResourcesFit.
nlohmann::json gpusched_scoring() { return {{"scoring", "gpusched"}}; }

[[noreturn]] void bad(const std::string& source, const std::string& field, const std::string& msg) {
  throw_error(ErrorCode::kProfileBadArgs, {source, 0, field}, msg);
}

PluginRef parse_ref(const nlohmann::json& j, const std::string& source, const std::string& field, bool allow_weight) {
  PluginRef ref;
  ref.field = field;
  if (j.is_string()) {
    ref.name = j.get<std::string>();
    return ref;
  }
  if (!j.is_object()) bad(source, field, "a plugin is a name or {\"name\", \"weight\", \"args\"}");
  for (const auto& [k, v] : j.items()) {
    if (k == "name" && v.is_string()) ref.name = v.get<std::string>();
    else if (k == "weight" && allow_weight && v.is_number()) ref.weight = v.get<double>();
    else if (k == "args") ref.args = v;
    else if (k == "weight" && !allow_weight) bad(source, field + "/weight", "only score plugins take a weight");
    else bad(source, field + "/" + k, "unknown or mistyped field (expected name, weight, args)");
  }
  if (ref.name.empty()) bad(source, field + "/name", "missing plugin name");
  return ref;
}

std::vector<PluginRef> parse_list(const nlohmann::json& j, const std::string& source, const std::string& field, bool weights) {
  if (!j.is_array()) bad(source, field, "expected a list of plugins");
  std::vector<PluginRef> out;
  for (std::size_t i = 0; i < j.size(); ++i) out.push_back(parse_ref(j[i], source, field + "/" + std::to_string(i), weights));
  return out;
}

nlohmann::json ref_json(const PluginRef& r, bool weight) {
  nlohmann::json j{{"name", r.name}};
  if (weight) j["weight"] = r.weight;
  if (!r.args.empty()) j["args"] = r.args;
  return j;
}

nlohmann::json list_json(const std::vector<PluginRef>& l, bool weight) {
  nlohmann::json j = nlohmann::json::array();
  for (const auto& r : l) j.push_back(ref_json(r, weight));
  return j;
}

}  // namespace

namespace {

/// The hooks that hold a list of plugins (queue_sort and device_select hold one).
constexpr const char* kListHooks[] = {"pre_filter", "filter", "score", "reserve", "permit", "post_filter", "bind"};

bool is_list_hook(const std::string& k) {
  return std::any_of(std::begin(kListHooks), std::end(kListHooks), [&](const char* h) { return k == h; });
}

/// `child` added to `base`: an entry naming a plugin of `base` takes that entry's place (its
/// weight and args as the child gives them); the others follow in the child's order. A plugin
/// the child names twice is kept twice, so the scheduler reports the duplicate.
std::vector<PluginRef> merged(std::vector<PluginRef> base, std::vector<PluginRef> child) {
  std::vector<bool> overridden(base.size(), false);
  const std::size_t inherited = base.size();
  for (auto& c : child) {
    std::size_t i = 0;
    while (i < inherited && (overridden[i] || base[i].name != c.name)) ++i;
    if (i < inherited) {
      base[i] = std::move(c);
      overridden[i] = true;
    } else {
      base.push_back(std::move(c));
    }
  }
  return base;
}

}  // namespace

Profile Profile::from_json(const nlohmann::json& j, const std::string& source) {
  if (!j.is_object()) bad(source, "", "a profile is a name or an object");
  Profile p;
  std::string base;
  if (j.contains("extends")) {
    if (!j["extends"].is_string()) bad(source, "extends", "expected a built-in profile name");
    base = j["extends"].get<std::string>();
    p = builtin_profile(base, source);
    // The parent's description describes the parent, not this profile.
    p.description = "extends " + base;
  }
  // "replace": list hooks whose entries replace the parent's list instead of adding to it.
  std::vector<std::string> replace;
  if (j.contains("replace")) {
    const auto& r = j["replace"];
    if (base.empty()) bad(source, "replace", "replace needs extends: without a parent every hook given is used as written");
    if (!r.is_array()) bad(source, "replace", "expected a list of hook names, e.g. [\"score\"]");
    for (std::size_t i = 0; i < r.size(); ++i) {
      const std::string f = "replace/" + std::to_string(i);
      if (!r[i].is_string()) bad(source, f, "expected a hook name");
      const auto h = r[i].get<std::string>();
      if (h == "queue_sort" || h == "device_select") {
        bad(source, f, h + " holds one plugin: giving it replaces the parent's (nothing to list in replace)");
      }
      if (!is_list_hook(h)) bad(source, f, "unknown hook \"" + h + "\" (list hooks: pre_filter, filter, score, reserve, permit, post_filter, bind)");
      replace.push_back(h);
    }
  }
  auto replaced = [&](const std::string& hook) { return std::find(replace.begin(), replace.end(), hook) != replace.end(); };
  // A list hook given in a child adds to the parent's list unless the hook is named in replace.
  auto list = [&](std::vector<PluginRef>& target, const nlohmann::json& v, const std::string& k, bool weights) {
    auto given = parse_list(v, source, k, weights);
    target = base.empty() || replaced(k) ? std::move(given) : merged(std::move(target), std::move(given));
  };
  for (const auto& [k, v] : j.items()) {
    const std::string f = k;
    if (k == "extends" || k == "replace") continue;
    if (k == "name") { if (!v.is_string()) bad(source, f, "expected a string"); p.name = v.get<std::string>(); }
    else if (k == "description") { if (!v.is_string()) bad(source, f, "expected a string"); p.description = v.get<std::string>(); }
    else if (k == "queue_sort") p.queue_sort = parse_ref(v, source, f, false);
    else if (k == "pre_filter") list(p.pre_filter, v, k, false);
    else if (k == "filter") list(p.filter, v, k, false);
    else if (k == "score") list(p.score, v, k, true);
    else if (k == "device_select") p.device_select = parse_ref(v, source, f, false);
    else if (k == "reserve") list(p.reserve, v, k, false);
    else if (k == "permit") list(p.permit, v, k, false);
    else if (k == "post_filter") list(p.post_filter, v, k, false);
    else if (k == "bind") list(p.bind, v, k, false);
    else if (k == "queueing") {
      if (v != "greedy" && v != "strict-fifo" && v != "easy-backfill" && v != "preemptive") {
        bad(source, f, "expected \"greedy\", \"strict-fifo\", \"easy-backfill\" or \"preemptive\"");
      }
      p.queueing = v.get<std::string>();
    } else if (k == "diagnosis") {
      if (v == "gpusched") p.diagnosis = Diagnosis::kGpusched;
      else if (v == "kube-scheduler") p.diagnosis = Diagnosis::kKubeScheduler;
      else bad(source, f, "expected \"gpusched\" or \"kube-scheduler\"");
    } else if (k == "percentage_of_nodes_to_score") {
      if (!v.is_number_integer() || v.get<std::int64_t>() < 0 || v.get<std::int64_t>() > 100) {
        bad(source, f, "expected an integer from 0 (kube-scheduler's adaptive default) to 100");
      }
      p.percentage_of_nodes_to_score = v.get<int>();
    } else if (k == "tie_break") {
      if (v == "node-order") p.tie_break = TieBreak::kNodeOrder;
      else if (v == "random") p.tie_break = TieBreak::kRandom;
      else bad(source, f, "expected \"node-order\" or \"random\"");
    } else {
      bad(source, f, "unknown profile field (known: name, description, extends, replace, queue_sort, pre_filter, filter, "
                     "score, device_select, reserve, permit, post_filter, bind, tie_break, queueing, diagnosis, "
                     "percentage_of_nodes_to_score)");
    }
  }
  // A hook named in replace but not given drops the parent's list.
  for (const auto& h : replace) {
    if (j.contains(h)) continue;
    if (h == "pre_filter") p.pre_filter.clear();
    else if (h == "filter") p.filter.clear();
    else if (h == "score") p.score.clear();
    else if (h == "reserve") p.reserve.clear();
    else if (h == "permit") p.permit.clear();
    else if (h == "post_filter") p.post_filter.clear();
    else if (h == "bind") p.bind.clear();
  }
  return p;
}

nlohmann::json Profile::to_json() const {
  nlohmann::json j = {{"name", name},
          {"description", description},
          {"queue_sort", ref_json(queue_sort, false)},
          {"pre_filter", list_json(pre_filter, false)},
          {"filter", list_json(filter, false)},
          {"score", list_json(score, true)},
          {"device_select", ref_json(device_select, false)},
          {"reserve", list_json(reserve, false)},
          {"permit", list_json(permit, false)},
          {"post_filter", list_json(post_filter, false)},
          {"bind", list_json(bind, false)},
          {"tie_break", tie_break == TieBreak::kRandom ? "random" : "node-order"},
          {"queueing", queueing}};
  // Written when not the default, so older profiles' JSON stays as it was.
  if (diagnosis == Diagnosis::kKubeScheduler) j["diagnosis"] = "kube-scheduler";
  if (percentage_of_nodes_to_score >= 0) j["percentage_of_nodes_to_score"] = percentage_of_nodes_to_score;
  return j;
}

std::vector<std::string> builtin_profile_names() {
  return {"default", "first-fit", "best-fit", "binpack", "gpushare-binpack", "spread", "most-allocated", "random",
          "fgd", "dotprod", "clustering", "packing", "kube-default", "volcano-gang-drf", "kueue-cohorts", "slurm-backfill"};
}

Profile builtin_profile(const std::string& name, const std::string& source) {
  Profile p;
  p.name = name;
  // kube-scheduler's filters in its order (default_plugins.go: NodeUnschedulable, NodeName,
  // TaintToleration, NodeAffinity, NodePorts, NodeResourcesFit, ...), and its wording of why a
  // pod is pending.
  // Among equal top scores kube-scheduler picks at random (schedule_one.go selectHost,
  // reservoir sampling); here from the seeded stream, so runs stay reproducible.
  auto kube = [&p](std::vector<PluginRef> after_fit = {}) {
    p.diagnosis = Diagnosis::kKubeScheduler;
    p.tie_break = TieBreak::kRandom;
    p.filter = {PluginRef{"node-unschedulable"}, PluginRef{"taint-toleration"}, PluginRef{"node-affinity"},
                PluginRef{"node-resources-fit"}};
    for (auto& r : after_fit) p.filter.push_back(std::move(r));
  };
  if (name == "default") {
    p.description = "Kubernetes default scoring: resource fit, then least-allocated (spread) nodes (NodeResourcesFit "
                    "LeastAllocated on cpu and memory, integer scores) and balanced cpu/memory use "
                    "(NodeResourcesBalancedAllocation), weight 1 each, ties broken at random as kube-scheduler's "
                    "selectHost";
    kube();
    p.score = {PluginRef{"least-allocated"}, PluginRef{"balanced-allocation"}};
  } else if (name == "first-fit") {
    p.description = "the first node in cluster order that fits; lowest-index GPUs";
    p.score = {PluginRef{"first-fit"}};
  } else if (name == "best-fit") {
    p.description = "the FGD paper's Best-fit: least normalised free CPU and GPU left; tightest GPU inside";
    p.score = {PluginRef{"best-fit"}};
    p.device_select = PluginRef{"gpu-binpack"};
  } else if (name == "binpack") {
    p.description = "GPU-memory bin-packing (gpusched's): the node and GPU with the least free GPU memory that fits";
    p.score = {PluginRef{"gpu-binpack"}};
    p.device_select = PluginRef{"gpu-binpack"};
  } else if (name == "gpushare-binpack") {
    // gpushare-scheduler-extender registers /filter and /bind only (pkg/routes/routes.go): the
    // node is kube-scheduler's choice (its default plugins, as kube-default), the GPU inside it
    // the extender's allocateGPUID (pkg/cache/nodeinfo.go): the least free memory that fits.
    p = builtin_profile("kube-default", source);
    p.name = name;
    p.description = "gpushare-scheduler-extender behind kube-scheduler: the node by kube-scheduler's default plugins "
                    "(as kube-default), the GPU inside it with the least free GPU memory that fits";
    p.device_select = PluginRef{"gpu-binpack"};
  } else if (name == "spread") {
    p.description = "least-allocated nodes (gpusched's scoring: cpu, memory and GPU), and the emptiest GPU inside";
    p.score = {PluginRef{"least-allocated", 1.0, gpusched_scoring()}};
    p.device_select = PluginRef{"gpu-spread"};
  } else if (name == "most-allocated") {
    p.description = "Kubernetes MostAllocated: fill nodes before opening new ones (NodeResourcesFit MostAllocated on "
                    "cpu 1, memory 1, nvidia.com/gpu 1, integer scores, random ties); tightest GPU inside";
    kube();
    p.score = {PluginRef{"most-allocated", 1.0,
                         {{"resources", nlohmann::json::array({{{"name", "cpu"}, {"weight", 1}},
                                                               {{"name", "memory"}, {"weight", 1}},
                                                               {{"name", "nvidia.com/gpu"}, {"weight", 1}}})}}}};
    p.device_select = PluginRef{"gpu-binpack"};
  } else if (name == "random") {
    p.description = "a uniformly random feasible node and random GPUs (seeded)";
    p.score = {PluginRef{"random"}};
    p.device_select = PluginRef{"gpu-random"};
  } else if (name == "fgd") {
    p.description = "the FGD paper's FGD: the node and GPU where fragmentation of the typical pod types grows least "
                    "(ΔF), typical types from the attached workload (95% coverage); integer sigmoid scores as in the "
                    "authors' simulator, ties to node order";
    p.score = {PluginRef{"fgd", 1.0, authors_scores()}};
    p.device_select = PluginRef{"fgd"};
  } else if (name == "dotprod") {
    p.description = "the FGD paper's DotProd baseline: least dot product of the node's free (CPU, GPU) and the request, "
                    "normalised by the largest node, truncated to an integer score as in the authors' simulator; the GPUs "
                    "with least free milli inside";
    p.score = {PluginRef{"dotprod", 1.0, authors_scores()}};
    p.device_select = PluginRef{"gpu-packing"};
  } else if (name == "clustering") {
    p.description = "the FGD paper's GPU Clustering baseline: nodes running pods of the same kind (sharing, k whole GPUs) "
                    "first, then less free GPU milli (of the largest node's 8 GPUs) first, in integer steps as in the authors' "
                    "simulator; the GPUs with least free milli inside";
    p.score = {PluginRef{"gpu-clustering", 1.0, {{"integer_scores", true}, {"fill", "free-milli"}}}};
    p.device_select = PluginRef{"gpu-packing"};
  } else if (name == "packing") {
    p.description = "the FGD paper's GPU Packing baseline: GPUs in use first, then the fewest GPUs opened on a node in "
                    "use, then the smallest idle node (the authors' integer scores); the GPUs with least free milli inside";
    p.score = {PluginRef{"gpu-packing", 1.0, authors_scores()}};
    p.device_select = PluginRef{"gpu-packing"};
  } else if (name == "kube-default") {
    p.description = "kube-scheduler's default plugins as they bear on accelerators: NodeUnschedulable, TaintToleration, "
                    "NodeAffinity, NodeResourcesFit, per-app anti-affinity; LeastAllocated (1, on cpu and memory), "
                    "BalancedAllocation (1), TaintToleration (3) and NodeAffinity (2) scores, random among equal top scores; "
                    "DefaultPreemption; every job that fits starts";
    kube({PluginRef{"app-max-per-node"}});   // InterPodAffinity comes last in kube-scheduler's order
    p.score = {PluginRef{"least-allocated"}, PluginRef{"balanced-allocation"}, PluginRef{"taint-toleration", 3.0},
               PluginRef{"node-affinity", 2.0}};
    p.post_filter = {PluginRef{"priority-preemption"}};
  } else if (name == "volcano-gang-drf") {
    p.description = "Volcano's default tiers: queues in weighted dominant-resource-share order (drf), gangs placed "
                    "all-or-nothing (min_available), predicates, binpack scoring, the preempt action";
    p.queue_sort = PluginRef{"drf"};
    p.filter = {PluginRef{"node-resources-fit"}, PluginRef{"taint-toleration"}, PluginRef{"node-affinity"}};
    // Volcano's binpack plugin is neither kube-scheduler's MostAllocated nor exactly this: keep
    // gpusched's scoring (see docs/policies.md).
    p.score = {PluginRef{"most-allocated", 1.0, gpusched_scoring()}};
    p.device_select = PluginRef{"gpu-binpack"};
    // Volcano's preempt action is not kube-scheduler's DefaultPreemption: keep gpusched's rule.
    p.post_filter = {PluginRef{"priority-preemption", 1.0, {{"node_choice", "least-lost-work"}}}};
  } else if (name == "kueue-cohorts") {
    p.description = "Kueue: ClusterQueues with nominal quota per flavor, borrowing and lending in cohorts, reclaim of "
                    "lent quota by preemption (capacity-queues; give its queues and cohorts as args)";
    // Kueue admits; kube-scheduler places the admitted pods (the flavor's node labels act as a
    // node selector, so the flavor check sits with node affinity).
    kube();
    p.filter.insert(p.filter.begin() + 3, PluginRef{"capacity-queues"});
    p.score = {PluginRef{"least-allocated"}};
    p.post_filter = {PluginRef{"capacity-queues"}};
  } else if (name == "slurm-backfill") {
    p.description = "Slurm with sched/backfill: priority then submit order, EASY backfill (later jobs never delay "
                    "the first waiting job's reservation), nodes in cluster order (select/cons_tres, equal weights)";
    p.filter = {PluginRef{"node-resources-fit"}, PluginRef{"taint-toleration"}, PluginRef{"node-affinity"}};
    p.score = {PluginRef{"first-fit"}};
    p.queueing = "easy-backfill";
  } else {
    std::string known;
    for (const auto& n : builtin_profile_names()) known += (known.empty() ? "" : ", ") + n;
    throw_error(ErrorCode::kProfileUnknownProfile, {source, 0, "profile"},
                "unknown profile \"" + name + "\"; built-in profiles: " + known);
  }
  return p;
}

}  // namespace gpusched::policies
