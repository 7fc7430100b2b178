#pragma once
/// `topology-spread` (Kubernetes PodTopologySpread), one constraint given by the profile (like
/// the scheduler's default constraints in PodTopologySpreadArgs) and applied to every job.
/// Arguments: `topology_key` (default "topology.kubernetes.io/zone"), `max_skew` (integer >= 1,
/// default 1), `when_unsatisfiable` ("DoNotSchedule", default, or "ScheduleAnyway").
///
/// Matching tasks: those of running jobs with the job's app, or, for a job without an app, the
/// job's own tasks placed earlier in the attempt (spreading one job over failure domains). They
/// are counted per domain (value of the key) over the eligible nodes: nodes that have the key
/// and pass the job's nodeSelector / required node affinity (nodeAffinityPolicy: Honor;
/// nodeTaintsPolicy: Ignore). The global minimum is taken over the eligible domains.
///  - pre-filter: counts once per task into CycleState: O(nodes + jobs on the eligible nodes) at
///    a job's first task, O(domains + placed tasks) at its later ones; the node -> domain map
///    is built once per cluster (same object and node count).
///  - filter (DoNotSchedule): a node without the key is UnschedulableAndUnresolvable; a node
///    where count(domain) + 1 - min > max_skew is Unschedulable. ScheduleAnyway: passes.
///  - score (ScheduleAnyway; DoNotSchedule scores every node 0): Kubernetes' scoring: raw =
///    round(count(domain) * log(domains among the scored nodes + 2) + max_skew - 1); normalised
///    to 100 * (max + min - raw) / max (integer arithmetic; 100 for all when max is 0); nodes
///    without the key score 0.
/// Counts depend on where other jobs run, so the plugin tells the runner its decisions are not
/// node-local (reads_queue()).
///
/// Example profile: {"filter": ["node-resources-fit", {"name": "topology-spread",
///   "args": {"topology_key": "topology.kubernetes.io/rack", "max_skew": 1}}]}
#include <cstdint>
#include <string>
#include <vector>

#include <gpusched/policies/framework/plugin.hpp>

namespace gpusched::policies {

class TopologySpreadPlugin final : public PreFilterPlugin, public FilterPlugin, public ScorePlugin, public JobEventsPlugin {
 public:
  enum class Mode { kDoNotSchedule, kScheduleAnyway };
  TopologySpreadPlugin(std::string topology_key, std::int32_t max_skew, Mode mode)
      : key_(std::move(topology_key)), max_skew_(max_skew), mode_(mode) {}
  [[nodiscard]] std::string_view name() const override { return "topology-spread"; }
  [[nodiscard]] bool reads_queue() const override { return true; }   // not node-local (see above)
  Status pre_filter(const ClusterState& cluster, TaskContext& ctx) override;
  [[nodiscard]] Status filter(const ClusterState& cluster, const TaskContext& ctx, NodeId node) const override;
  [[nodiscard]] double score(const ClusterState& cluster, const TaskContext& ctx, NodeId node) override;
  void normalize(std::span<double> scores) const override;
  /// A new run: forgets the node -> domain map and the running counts.
  void attach(const ClusterState& cluster, std::span<const JobSpec> workload, const JobsView* jobs) override;

  /// Per-task counts (CycleState).
  struct Counts {
    std::vector<std::int32_t> per_domain;   ///< matching tasks per domain (eligible nodes only)
    std::int32_t min = 0;                    ///< over eligible domains; INT32_MAX when none
    std::vector<std::uint8_t> scored;        ///< score: domains seen among the scored nodes
    std::int32_t scored_domains = 0;
  };

 private:
  /// Node -> domain index (-1: no key), built once per cluster (same object and node count).
  struct Domains {
    const ClusterState* cluster = nullptr;
    std::size_t nodes = 0;
    std::vector<std::int32_t> of_node;
    std::size_t count = 0;
  };
  /// Running jobs' matching tasks per domain and the eligible nodes, for one scheduling attempt
  /// of one job: computed at its first task and reused by its later tasks (nothing starts or
  /// stops in between).
  struct Running {
    const ClusterState* cluster = nullptr;
    const JobSpec* job = nullptr;
    JobId job_id;
    const JobsView* jobs = nullptr;
    bool filtered = false;                    ///< eligibility depends on the job's node affinity
    std::vector<std::uint8_t> eligible_node;  ///< when filtered
    std::vector<std::uint8_t> eligible_domain;
    std::vector<std::int32_t> per_domain;
  };
  const Domains& domains(const ClusterState& cluster) const;
  const Running& running(const ClusterState& cluster, const TaskContext& ctx) const;
  Counts& counts(const ClusterState& cluster, const TaskContext& ctx) const;

  std::string key_;
  std::int32_t max_skew_;
  Mode mode_;
  mutable Domains domains_;
  mutable Running running_;
  std::int32_t last_scored_domains_ = 0;   // set by score(), read by normalize() (same task)
};

}  // namespace gpusched::policies
