#pragma once
/// What-if on a Kubernetes cluster snapshot (issue 16): `kubectl get nodes -o json` and
/// `kubectl get pods -A -o json` of a live cluster, the pending pods scheduled under each of
/// several profiles. One row per profile: how many pending pods each would place, where, which
/// stay pending and why (kube-scheduler's wording), and the GPU allocation and fragmentation
/// left behind. `gpusched whatif` prints it; Python's `gpusched.whatif()` returns it as tables.
///
/// The snapshot is read as `gpusched run` reads it (docs/traces.md "Kubernetes snapshot"):
/// bound pods keep their nodes, pending pods follow oldest first, every pod arrives at time 0
/// and none finishes (gpusched.io/duration annotations are ignored: the question is about now). Unlike `run`, a pod that no node could ever hold is reported, not refused
/// (Scenario::keep_unplaceable): that pod is what the operator asks about.
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <gpusched/policies/framework/registry.hpp>

namespace gpusched::scenario {

struct WhatIfOptions {
  std::filesystem::path nodes;         ///< kubectl get nodes -o json
  std::filesystem::path pods;          ///< kubectl get pods -A -o json
  std::vector<std::string> profiles;   ///< built-in profile names or profile JSON files, in order
  std::uint64_t seed = 42;             ///< for profiles that draw (random tie-breaks)
  /// Also give each pending pod's per-node breakdown at the moment it was decided (its last try):
  /// which filter rejected each node and why, and each score plugin's raw, normalised and
  /// weighted score on the feasible ones (policies::Scheduler::set_explain).
  bool explain = false;
  /// `--as-gpu-mem`: "what if the pods asking one whole nvidia.com/gpu were gpushare pods asking
  /// only the GPU memory they use?" Each such pod (bound or pending; a bound one stays on its node)
  /// asks aliyun.com/gpu-mem instead: the quantity in its annotation gpusched.io/gpu-memory
  /// ("8Gi"), else the default for its first container's image (`gpu_mem_by_image`: the image as
  /// written, else without its tag or digest), else `gpu_mem_default_mib` (0: none). Pods with no
  /// figure keep their whole GPU; WhatIfRow::converted counts the others.
  bool as_gpu_mem = false;
  std::map<std::string, std::int64_t> gpu_mem_by_image;   ///< image -> MiB
  std::int64_t gpu_mem_default_mib = 0;
  /// `--events`: `kubectl get events -A -o json` of the same cluster (core/v1 Events, or
  /// events.k8s.io/v1 ones). Each pending pod's latest FailedScheduling message (what the real
  /// kube-scheduler said) is set beside the profile's own reason, and each row counts the pods
  /// whose reason is the same text: a check that a profile decides as the cluster's scheduler.
  std::filesystem::path events;
};

/// One node in a pod's decision (WhatIfOptions::explain).
struct WhatIfNode {
  std::string node;
  bool feasible = false;
  std::string filter;                 ///< the filter plugin that rejected it ("" when feasible)
  std::vector<std::string> reasons;   ///< every reason that filter gives
  struct Score {
    std::string plugin;
    double raw = 0, normalized = 0, weight = 1;
  };
  std::vector<Score> scores;          ///< feasible nodes, profile order
  double total = 0;                   ///< sum of weight x normalized: the highest total wins
};

/// One pod that was pending in the snapshot, under one profile.
struct WhatIfPod {
  std::string pod;         ///< namespace/name
  std::int32_t priority = 0;
  bool placed = false;
  std::string node;        ///< where it would be bound ("" when it stays pending)
  std::string placement;   ///< node and devices, as jobs.csv's placement column writes them
  std::string reason;      ///< why it stays pending (kube-scheduler's wording); "" when placed
  std::string pre_filter;  ///< with explain: a pre-filter that ruled out every node ("" otherwise)
  std::string kube_reason; ///< with events: the pod's latest FailedScheduling message ("" none)
  std::vector<WhatIfNode> nodes;   ///< with explain: every node at its last try, node order
};

struct WhatIfRow {
  std::string profile;
  std::int64_t bound = 0;     ///< pods already bound in the snapshot (they keep their nodes)
  std::int64_t pending = 0;   ///< pods pending in the snapshot
  std::int64_t placed = 0;    ///< of those, placed by this profile
  std::int64_t converted = 0; ///< pods asked as GPU-memory shares instead of a whole GPU (as_gpu_mem)
  std::int64_t kube_reasons = 0;  ///< with events: pending pods with a FailedScheduling message
  std::int64_t same_reason = 0;   ///< of those, left pending by this profile with the same text
  std::int64_t gpus_busy = 0; ///< GPUs with at least one task after
  double gpu_alloc_pct_before = 0;   ///< GPU capacity allocated by the bound pods
  double gpu_alloc_pct = 0;          ///< and after this profile placed what it could
  double gpu_memory_alloc_pct = 0;   ///< GPU memory granted after, % of all GPU memory
  double frag_pct = 0;        ///< fragmentation after, % of GPU capacity (FGD's measure)
  double frag_ratio_pct = 0;  ///< fragmentation after, % of the idle GPU capacity
  std::vector<WhatIfPod> pods;   ///< the snapshot's pending pods, oldest first (the profile's queue sort orders the tries)
};

/// Runs the snapshot once per profile. Bad input (a malformed snapshot, an unknown profile)
/// throws the same errors `gpusched run` gives, naming the file, line and field.
std::vector<WhatIfRow> whatif(const WhatIfOptions& options,
                              const policies::Registry& registry = policies::Registry::builtins());

/// {"rows": [...]} with every field above, for machines (`gpusched whatif --json`).
nlohmann::json whatif_json(const std::vector<WhatIfRow>& rows);

/// The terminal table: one line per profile; with `pods`, each profile's pending pods below it
/// (placed: the node; pending: the reason).
std::string format_whatif(const std::vector<WhatIfRow>& rows, bool pods);

}  // namespace gpusched::scenario
