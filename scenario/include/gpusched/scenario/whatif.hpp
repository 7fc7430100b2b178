#pragma once
/// What-if on a Kubernetes cluster snapshot (issue 16): `kubectl get nodes -o json` and
/// `kubectl get pods -A -o json` of a live cluster, the pending pods scheduled under each of
/// several profiles. One row per profile: how many pending pods each would place, where, which
/// stay pending and why (kube-scheduler's wording), and the GPU allocation and fragmentation
/// left behind. `gpusched whatif` prints it; Python's `gpusched.whatif()` returns it as tables.
///
/// The snapshot is read as `gpusched run` reads it (docs/traces.md "Kubernetes snapshot"):
/// bound pods keep their nodes, pending pods follow oldest first, every pod arrives at time 0
/// and none finishes. Unlike `run`, a pod that no node could ever hold is reported, not refused
/// (Scenario::keep_unplaceable): that pod is what the operator asks about.
#include <cstdint>
#include <filesystem>
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
};

/// One pod that was pending in the snapshot, under one profile.
struct WhatIfPod {
  std::string pod;         ///< namespace/name
  std::int32_t priority = 0;
  bool placed = false;
  std::string node;        ///< where it would be bound ("" when it stays pending)
  std::string placement;   ///< node and devices, as jobs.csv's placement column writes them
  std::string reason;      ///< why it stays pending (kube-scheduler's wording); "" when placed
};

struct WhatIfRow {
  std::string profile;
  std::int64_t bound = 0;     ///< pods already bound in the snapshot (they keep their nodes)
  std::int64_t pending = 0;   ///< pods pending in the snapshot
  std::int64_t placed = 0;    ///< of those, placed by this profile
  double gpu_alloc_pct_before = 0;   ///< GPU capacity allocated by the bound pods
  double gpu_alloc_pct = 0;          ///< and after this profile placed what it could
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
