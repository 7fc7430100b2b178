#pragma once
/// Profiles are data: which plugin runs at which hook, with which weight and arguments.
///
/// JSON form:
///   {"name": "binpack", "queue_sort": "priority-fifo",
///    "filter": ["node-resources-fit"],
///    "score": [{"name": "gpu-binpack", "weight": 1}],
///    "device_select": "gpu-binpack", "tie_break": "node-order"}
/// Plugin entries may be a bare name or {"name", "weight", "args"}.
///
/// `"extends": "<built-in>"` starts from a built-in profile. A list hook given in the child
/// (pre_filter, filter, score, reserve, permit, post_filter, bind) ADDS to the parent's list: an
/// entry naming a plugin the parent lists takes that entry's place (with the child's weight and
/// args), the others are appended in the child's order. `"replace": ["score", ...]` makes the
/// named hooks use the child's list as written (or drop the parent's list when the child gives
/// none). queue_sort and device_select hold one plugin and are replaced when given. The
/// description is the child's, else "extends <parent>"; the name is the child's, else the parent's.
///   {"name": "pack", "extends": "kube-default", "score": [{"name": "gpu-binpack", "weight": 2}]}
///     -> scores least-allocated (1), balanced-allocation (1), taint-toleration (3), node-affinity (2),
///        gpu-binpack (2)
///   {"name": "pack", "extends": "kube-default", "replace": ["score"], "score": ["gpu-binpack"]}
///     -> scores gpu-binpack alone
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace gpusched::policies {

struct PluginRef {
  std::string name;
  double weight = 1.0;       ///< score plugins only; must be > 0
  nlohmann::json args = nlohmann::json::object();
  /// Where the entry was written ("score/1"), for errors; empty = its position in the list.
  std::string field;
};

enum class TieBreak { kNodeOrder, kRandom };

/// How the runner words why a job found no node (Scheduler::last_diagnosis()).
///  - kGpusched: "0/3 nodes are available: 2 Insufficient nvidia.com/gpu (node-resources-fit), 1 ...",
///    most frequent reason first, each node counted once under its first rejection, the plugin named.
///  - kKubeScheduler: kube-scheduler's FitError text: "0/3 nodes are available: 1 Insufficient cpu,
///    2 node(s) had untolerated taint {dedicated: gpu}." — every reason of a node counted, the
///    "<count> <reason>" items sorted as text, a pre-filter's rejection alone ("0/3 nodes are
///    available: <reason>."), and after `priority-preemption` the " preemption: ..." part.
enum class Diagnosis { kGpusched, kKubeScheduler };

struct Profile {
  std::string name = "custom";
  std::string description;
  PluginRef queue_sort{"priority-fifo"};
  std::vector<PluginRef> pre_filter;
  /// Every profile honours taints and node selectors/affinity unless it says otherwise (as
  /// kube-scheduler always runs TaintToleration and NodeAffinity).
  std::vector<PluginRef> filter{PluginRef{"node-resources-fit"}, PluginRef{"taint-toleration"}, PluginRef{"node-affinity"}};
  std::vector<PluginRef> score;
  PluginRef device_select{"gpu-first-fit"};
  std::vector<PluginRef> reserve;
  std::vector<PluginRef> permit;
  std::vector<PluginRef> post_filter;
  std::vector<PluginRef> bind;
  TieBreak tie_break = TieBreak::kNodeOrder;
  /// The queueing action the simulator runs with this profile: "greedy" (every job that fits
  /// starts, Kubernetes), "strict-fifo" (the first job that does not fit blocks the rest) or
  /// "easy-backfill" (Slurm's EASY backfill). The scheduler itself does not read it.
  std::string queueing = "greedy";
  /// "diagnosis": "gpusched" (default) or "kube-scheduler" (the Kubernetes presets).
  Diagnosis diagnosis = Diagnosis::kGpusched;
  /// kube-scheduler's percentageOfNodesToScore: -1 (absent) = every feasible node is scored
  /// (gpusched); 0 = kube-scheduler's adaptive default; 1..100 = stop the filter search once
  /// that share of the nodes (at least 100) was found feasible, starting where the last search
  /// stopped. See docs/policies.md for how it differs from kube-scheduler's parallel search.
  int percentage_of_nodes_to_score = -1;

  /// Parses a profile object (`extends` and `replace` resolved as above); `source` names the
  /// file/JSON path in errors (ProfileError).
  static Profile from_json(const nlohmann::json& j, const std::string& source);
  [[nodiscard]] nlohmann::json to_json() const;
};

/// Named profiles shipped with gpusched: simple references ("default", "first-fit", "spread",
/// ...), the FGD paper's policies ("fgd", "best-fit", "packing", ...) and presets that reproduce
/// well-known schedulers ("kube-default", "volcano-gang-drf", "kueue-cohorts", "slurm-backfill").
/// See docs/policies.md.
[[nodiscard]] std::vector<std::string> builtin_profile_names();
/// The named profile, or ProfileError(kProfileUnknownProfile) listing the known ones.
[[nodiscard]] Profile builtin_profile(const std::string& name, const std::string& source = "");

}  // namespace gpusched::policies
