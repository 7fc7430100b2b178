#pragma once
/// Jobs: N identical tasks, placed together when min_available of them fit (gang).
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <gpusched/compact_string.hpp>
#include <gpusched/ids.hpp>
#include <gpusched/resources.hpp>
#include <gpusched/time.hpp>

namespace gpusched {

namespace dra {
struct DeviceClaims;
}

/// Kubernetes toleration: matches a taint with the same key (operator Equal: and value;
/// Exists: any value; empty key with Exists: every taint) and effect (empty: every effect).
struct Toleration {
  std::string key;
  std::string op = "Equal";     ///< "Equal" or "Exists"
  std::string value;
  std::string effect;           ///< "", "NoSchedule", "PreferNoSchedule", "NoExecute"
  bool operator==(const Toleration&) const = default;
};

/// One node-selector requirement (Kubernetes NodeSelectorRequirement).
struct LabelRequirement {
  std::string key;
  std::string op = "In";        ///< In, NotIn, Exists, DoesNotExist, Gt, Lt
  std::vector<std::string> values;
  bool operator==(const LabelRequirement&) const = default;
};

/// A node-selector term: every requirement must hold (AND).
using LabelTerm = std::vector<LabelRequirement>;

/// Node affinity: `required` terms are ORed (a node must match one); `preferred` terms add
/// their weight (1..100) to the node's score when they match.
struct NodeAffinity {
  std::vector<LabelTerm> required;
  std::vector<std::pair<std::int32_t, LabelTerm>> preferred;
  [[nodiscard]] bool empty() const { return required.empty() && preferred.empty(); }
  bool operator==(const NodeAffinity&) const = default;
};

/// How a job is scheduled beyond its resources: placement constraints, priority class, gang
/// timeout and the limits a batch system is given. All optional.
struct JobConstraints {
  std::map<std::string, std::string> node_selector;   ///< every label must match exactly
  NodeAffinity affinity;
  std::vector<Toleration> tolerations;
  CompactString app;                  ///< application label (anti-affinity, spread, max per node)
  std::int32_t max_per_node = 0;      ///< at most this many tasks of `app` on one node (0 = no limit)
  CompactString priority_class;       ///< name it was given (resolved into JobSpec::priority)
  /// JobSpec::priority is already resolved (a Kubernetes pod's spec.priority, set at admission):
  /// priority_class is only its name and is not looked up again.
  bool priority_final = false;
  /// From a cluster snapshot: the pod was already bound to a node (spec.nodeName; node_selector
  /// pins it there). What-if reports tell these from the pending pods they place.
  bool bound = false;
  bool preempt_never = false;         ///< preemptionPolicy: Never (waits; never evicts others)
  bool preemptible = true;            ///< false: never chosen as a victim
  SimTime gang_timeout = SimTime::forever();   ///< a waiting gang fails after this long
  SimTime walltime = SimTime::forever();       ///< user-declared limit (backfill estimates)
  /// Preemptive queueing: time a resumed job spends restoring its checkpoint before it makes
  /// progress again (holding its GPUs). forever: the run's default (scenario `preemption`).
  SimTime restart_overhead = SimTime::forever();
  /// Kubernetes DRA: the ResourceClaimTemplate each task's claim is made from (a trace field;
  /// docs/dra.md), and the claim as the scenario resolved it (nullptr: no claim).
  CompactString claim_template;
  /// Kubernetes DRA: a ResourceClaim shared by every job that names it (a pod's
  /// `resourceClaimName`; trace field `resource_claim`; docs/dra.md), resolved into `claims` too.
  CompactString resource_claim;
  std::shared_ptr<const dra::DeviceClaims> claims;
  bool operator==(const JobConstraints&) const = default;
};

/// A job as read from a trace or generated. Example (JSON Lines):
///   {"id":"train-7","submit_time":60,"duration":3600,"tasks":2,
///    "requests":{"cpu":"8","memory":"64Gi","nvidia.com/gpu":4},"priority":10,"queue":"team-a"}
struct JobSpec {
  std::string name;
  SimTime submit;
  SimTime duration = SimTime::forever();   ///< forever: never finishes on its own
  std::int32_t tasks = 1;
  std::int32_t min_available = 1;           ///< gang minimum; == tasks for all-or-nothing
  std::int32_t priority = 0;                ///< higher runs first
  std::string queue = "default";            ///< queue / namespace / tenant
  TaskRequest request;                      ///< per task
  std::int64_t source_line = 0;             ///< line in the trace it came from (0 = generated)
  /// Share of a whole GPU's compute the job keeps busy when alone (0..1]; drives the
  /// interference model on time-sliced and MPS GPUs.
  double gpu_util = 1.0;
  JobConstraints constraints;
  /// What a batch scheduler believes the job runs for: the declared walltime, else the duration.
  [[nodiscard]] SimTime estimate() const { return constraints.walltime.is_forever() ? duration : constraints.walltime; }
};

/// A time-ordered list of jobs (stable order for equal submit times).
using Workload = std::vector<JobSpec>;

}  // namespace gpusched
