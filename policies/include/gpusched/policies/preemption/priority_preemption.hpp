#pragma once
/// `priority-preemption` (post-filter; Kubernetes DefaultPreemption): when a job cannot be placed,
/// evicts strictly-lower-priority, preemptible running jobs so that it fits. Victims are whole
/// jobs (every task on every node), never part of a gang. Two rules, by the `node_choice` arg:
///
/// - "kubernetes" (default; kube-scheduler's DefaultPreemption, kubernetes/kubernetes
///   pkg/scheduler/framework/plugins/defaultpreemption/default_preemption.go at 008b3652959c and
///   pkg/scheduler/framework/preemption/preemption.go at 00e6d9519393). Per node (SelectVictimsOnNode): remove
///   every lower-priority preemptible job there; if the job still does not fit, the node is no
///   candidate; else sort them most important first (MoreImportantPod: higher priority, then
///   earlier start, then lower job id), split them into PodDisruptionBudget-violating and
///   non-violating (filterPodsWithPDBViolation: budgets are spent in that order), and reprieve
///   the violating ones first, then the others, each while the job still fits. Among candidate
///   nodes (pickOneNodeForPreemption): fewest PDB violations, then the lowest highest victim
///   priority, then the smallest sum of victim priorities (each + 2^31, as Kubernetes), then
///   the fewest victims, then the latest start among the highest-priority victims, then the
///   lowest node index. `exact_search_limit` is not used. Best-first branch and bound: every
///   candidate node gets a lower bound on its score without any fits() call (no PDB violation;
///   at least k_min victims, see below, so the k_min-th lowest priority and the k_min lowest
///   priorities' sum; no later start than its latest-started candidate of that priority); nodes
///   are dry-run in (bound, index) order until a bound cannot beat the best found. Each dry run
///   costs 1 + (candidates there) fits() calls.
/// - "least-lost-work" (gpusched's own rule, kept byte-identical): victim sets compare by
///   (VictimCost) fewest victims, then the lowest highest-victim priority, then the least work
///   lost (JobsView::work_lost_us x the victim's GPUs, summed), then the lowest node index. On
///   a candidate node with at most `exact_search_limit` such jobs, subsets are searched by
///   increasing size: the exact minimum under that order. With more, the greedy reprieve (evict
///   them all, give back the most valuable first: highest priority, most work lost). Branch and
///   bound: a node is skipped without any fits() call when its best possible set cannot beat
///   the best so far — at least k_min victims (the fewest whose amounts cover the tightest
///   dimension's deficit), the k_min-th lowest priority, the k_min cheapest costs. PDBs are
///   not read.
///
/// Both: a node is a candidate only when it is schedulable, runs a lower-priority preemptible
/// job, and its free resources plus those of all such jobs cover the request (CPU, memory, GPU
/// milli, TPU chips). A gang (tasks > 1 or min_available > 1) may take victims on several nodes
/// (kube-scheduler's DefaultPreemption has no gangs: pods preempt one at a time): candidates from
/// the whole cluster, least important first (kubernetes: lowest priority, latest start, highest
/// id; least-lost-work: lowest priority, least work lost), are evicted as the shortest prefix
/// that lets the gang fit (doubling then bisection on fits(all nodes)), then reprieved most
/// important first (kubernetes: PDB-violating ones first, as on a node). O(log candidates +
/// victims) fits() calls, each O(nodes).
///
/// PodDisruptionBudgets (the arg `pod_disruption_budgets`; a scenario's top-level
/// `pod_disruption_budgets` list is copied into it): the pods are the tasks of jobs; a budget
/// matches a job in its namespace (the job's queue; every queue when none is given) whose
/// fields equal every selector entry (app, queue, name). disruptionsAllowed follows the
/// disruption controller (pkg/controller/disruption/disruption.go at 189c34a7cded): healthy =
/// running matching tasks; expected = the `tasks` of matching jobs that run or were evicted by
/// this plugin and wait to run again (each job is its own controller, its scale = tasks);
/// desiredHealthy = min_available (an integer), ceil(min_available% x expected), or expected -
/// ceil(max_unavailable x expected); allowed = healthy - desiredHealthy, 0 when negative or
/// when expected is 0. A victim job spends as many disruptions as it runs tasks; a PDB
/// violation counts once per victim job.
///
/// Differences from Kubernetes: victims are evicted at once (no graceful termination, no
/// nominated node: the job is placed again over all nodes right away); whole jobs are victims;
/// every node is a candidate (Kubernetes dry-runs max(10% of nodes, 100) from a random offset,
/// and breaks the last ties in map order, i.e. at random); jobs waiting that were never started
/// are not counted as a PDB's expected pods; a job with preempt_never waits (as
/// preemptionPolicy: Never).
///
/// The node index comes from job events (JobEventsPlugin: the runner forwards the hook's
/// job_started / job_stopped); evictions read placements and requests from the JobsView.
///
/// Args: `node_choice` ("kubernetes" | "least-lost-work"); `exact_search_limit` (number, 0..16,
/// default 12; least-lost-work only): the most candidate victims on one node for which the
/// exact subset search runs (0: always the greedy reprieve); `pod_disruption_budgets` (list).
///
/// Example (profile JSON):
///   {"name": "prio", "post_filter": [{"name": "priority-preemption", "args": {"node_choice": "kubernetes",
///     "pod_disruption_budgets": [{"name": "web", "selector": {"app": "web"}, "min_available": 2}]}}]}
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include <gpusched/error.hpp>
#include <gpusched/policies/framework/plugin.hpp>
#include <gpusched/policies/framework/profile.hpp>
#include <gpusched/policies/framework/statement.hpp>

namespace gpusched::policies {

/// How priority-preemption chooses victims and the node (see the file comment).
enum class NodeChoice : std::uint8_t {
  kKubernetes,      ///< kube-scheduler's DefaultPreemption: greedy reprieve, PDBs, its node order
  kLeastLostWork,   ///< fewest victims, then highest priority, then work lost x GPUs (exact search)
};

/// Kubernetes' IntOrString for PDB bounds: an integer, or a percentage ("50%": value 50).
struct IntOrPercent {
  std::int32_t value = 0;
  bool percent = false;
  /// The count it stands for out of `total` (a percentage rounds up, as the disruption controller).
  [[nodiscard]] std::int64_t scaled(std::int64_t total) const { return percent ? (value * total + 99) / 100 : value; }
};

/// A PodDisruptionBudget over jobs' tasks. Example (scenario or plugin args JSON):
///   {"name": "web-pdb", "namespace": "team-a", "selector": {"app": "web"}, "max_unavailable": "25%"}
struct PodDisruptionBudget {
  std::string name;
  std::string namespace_name;   ///< the jobs' queue; "" = every queue
  /// Selector: every non-empty entry must equal the job's field (at least one is set).
  std::string app, queue, job_name;
  std::optional<IntOrPercent> min_available, max_unavailable;   ///< exactly one is set
  [[nodiscard]] bool matches(const JobSpec& job) const;
  /// status.disruptionsAllowed with `healthy` running matching tasks and `expected` pods (scale).
  [[nodiscard]] std::int64_t disruptions_allowed(std::int64_t healthy, std::int64_t expected) const;
};

/// Reads a list of budgets (see PodDisruptionBudget); throws with `where.file` and the field
/// `where.field` + "/<index>/<key>", using the given codes for a bad value, a missing field and
/// an unknown field. Names must be unique within a namespace.
std::vector<PodDisruptionBudget> parse_pod_disruption_budgets(const nlohmann::json& list, const Location& where,
                                                              ErrorCode bad_value, ErrorCode missing, ErrorCode unknown);

/// Appends `budgets` (a list as parse_pod_disruption_budgets reads it) to the
/// `pod_disruption_budgets` argument of every priority-preemption post-filter of `profile`
/// (how a scenario's top-level list reaches the plugin). Other plugins ignore PDBs.
void add_pod_disruption_budgets(Profile& profile, const nlohmann::json& budgets);

/// How costly a victim set is; lower is better (compared in member order).
struct VictimCost {
  std::size_t count = 0;              ///< jobs evicted
  std::int32_t max_priority = 0;      ///< the highest victim priority
  double work_lost_gpu_us = 0.0;      ///< sum of work_lost_us x GPUs over the victims
  friend bool operator<(const VictimCost& a, const VictimCost& b) {
    if (a.count != b.count) return a.count < b.count;
    if (a.max_priority != b.max_priority) return a.max_priority < b.max_priority;
    return a.work_lost_gpu_us < b.work_lost_gpu_us;
  }
};

/// A node's victims as kube-scheduler's pickOneNodeForPreemption compares them; lower is better.
struct KubeVictimScore {
  std::int64_t pdb_violations = 0;   ///< victims whose eviction breaks a PodDisruptionBudget
  std::int32_t max_priority = 0;     ///< the highest victim priority
  std::int64_t priority_sum = 0;     ///< sum of (priority + 2^31) over the victims
  std::size_t count = 0;             ///< victims
  std::int64_t earliest_start_us = 0;   ///< earliest start among the highest-priority victims (later is better)
  friend bool operator<(const KubeVictimScore& a, const KubeVictimScore& b) {
    if (a.pdb_violations != b.pdb_violations) return a.pdb_violations < b.pdb_violations;
    if (a.max_priority != b.max_priority) return a.max_priority < b.max_priority;
    if (a.priority_sum != b.priority_sum) return a.priority_sum < b.priority_sum;
    if (a.count != b.count) return a.count < b.count;
    return a.earliest_start_us > b.earliest_start_us;
  }
};

class PriorityPreemption final : public PostFilterPlugin, public JobEventsPlugin {
 public:
  static constexpr std::size_t kDefaultExactSearchLimit = 12;
  static constexpr std::size_t kMaxExactSearchLimit = 16;

  /// `exact_search_limit` <= kMaxExactSearchLimit (asserted).
  explicit PriorityPreemption(std::size_t exact_search_limit = kDefaultExactSearchLimit,
                              NodeChoice node_choice = NodeChoice::kKubernetes,
                              std::vector<PodDisruptionBudget> budgets = {});

  [[nodiscard]] std::string_view name() const override { return "priority-preemption"; }
  void attach(const ClusterState& cluster, std::span<const JobSpec> workload, const JobsView* jobs) override;
  /// Keeps a compact per-node index of running jobs (priority, preemptible, what they hold),
  /// so the node scan never reads JobSpecs, and the budgets' healthy and expected counts. O(placements).
  void job_started(const JobSpec& job, JobId id, std::span<const TaskPlacement> placements) override;
  void job_stopped(const JobSpec& job, JobId id, std::span<const TaskPlacement> placements) override;
  /// A victim that leaves for good before running again (deactivated, failed) no longer
  /// counts among its budgets' expected pods.
  void job_left(const JobSpec& job, JobId id) override;
  /// False when no preemptible running job has a lower priority than `job` (O(log n)).
  [[nodiscard]] bool may_help(const JobSpec& job) const override;
  /// Success: the victims are evicted in `st` and listed in `victims`, and the job fits.
  /// Unschedulable (nothing evicted): preempt_never, no view of running jobs, or no set works.
  Status post_filter(ClusterState& cluster, const JobSpec& job, JobId id, Statement& st, std::vector<JobId>& victims,
                     const FitsFn& fits) override;

  [[nodiscard]] NodeChoice node_choice() const { return node_choice_; }
  /// The cost of the last successful choice (diagnostics, tests; both rules fill it).
  [[nodiscard]] const VictimCost& last_cost() const { return last_cost_; }
  /// PodDisruptionBudget violations of the last successful choice (kubernetes rule; else 0).
  [[nodiscard]] std::int64_t last_pdb_violations() const { return last_pdb_violations_; }
  /// fits() calls made by the last post_filter (how much the pruning saved).
  [[nodiscard]] std::size_t last_fits_calls() const { return fits_calls_; }
  /// The budgets and their current status.disruptionsAllowed (in the order given).
  [[nodiscard]] const std::vector<PodDisruptionBudget>& budgets() const { return budgets_; }
  [[nodiscard]] std::int64_t disruptions_allowed(std::size_t budget) const;

 private:
  /// A running job's share of one node, from job events.
  struct Resident {
    JobId id;
    std::int32_t priority = 0;
    bool preemptible = true;
    std::int64_t cpu_milli = 0, memory_mib = 0, gpu_milli = 0, tpu_chips = 0;   ///< on this node
    std::int64_t job_gpu_milli = 0;   ///< the whole job's GPUs (milli), all nodes
    std::int64_t job_tasks = 0;       ///< the whole job's running tasks, all nodes
  };
  /// A running job that may be evicted, with what it holds on the node being considered.
  struct Candidate : Resident {
    double cost = 0.0;               ///< work_lost_us x GPUs
    std::int64_t start_us = 0;       ///< when it (re)started (kubernetes rule)
    bool violating = false;          ///< evicting it breaks a PDB (kubernetes rule)
  };
  /// work_lost_us x the job's GPUs.
  [[nodiscard]] double cost_of(const Resident& r) const;
  /// Releases / re-takes a job's resources directly (what-ifs; restored before returning).
  void take(ClusterState& cluster, JobId j) const;
  void give(ClusterState& cluster, JobId j) const;
  bool fits_without(ClusterState& cluster, std::span<const Candidate* const> set, NodeId node, const FitsFn& fits);
  /// `k_min`: no fewer victims can work on this node.
  void search_node(ClusterState& cluster, NodeId node, const FitsFn& fits, const TaskRequest& r, std::size_t k_min);
  bool single_task(ClusterState& cluster, const JobSpec& job, const FitsFn& fits);
  bool across_nodes(ClusterState& cluster, const JobSpec& job, const FitsFn& fits);
  /// The kubernetes rule for a single-task job: SelectVictimsOnNode per node, pickOneNodeForPreemption.
  bool kube_single_task(ClusterState& cluster, const JobSpec& job, const FitsFn& fits);
  /// Marks the candidates (sorted most important first) whose eviction breaks a budget, spending
  /// the budgets in that order (filterPodsWithPDBViolation). No-op without budgets.
  void mark_pdb_violations(std::span<Candidate* const> most_important_first);
  /// Kubernetes' MoreImportantPod: higher priority, then earlier start, then lower id.
  static bool more_important(const Candidate& a, const Candidate& b);

  std::size_t exact_search_limit_;
  NodeChoice node_choice_;
  std::vector<PodDisruptionBudget> budgets_;
  std::vector<std::int64_t> pdb_healthy_, pdb_expected_;   // per budget
  std::vector<JobId> evicting_;       // the last post_filter's victims, until the next job starts
  SimTime evicting_at_ = SimTime::forever();   // when that post_filter ran
  std::set<JobId> waiting_victims_;   // evicted by this plugin, not started again (PDB expected pods)
  std::map<std::int32_t, std::int64_t> preemptible_by_priority_;   // running preemptible jobs per priority
  const JobsView* jobs_ = nullptr;
  std::vector<std::vector<Resident>> by_node_;   // per node, in start order
  // Per call.
  VictimCost best_cost_, last_cost_;
  KubeVictimScore best_kube_;
  std::int64_t last_pdb_violations_ = 0;
  std::vector<JobId> best_;
  std::vector<Candidate> cands_;
  std::vector<double> costs_;
  std::vector<std::int32_t> prios_;
  std::vector<std::int64_t> allowed_;
  std::size_t fits_calls_ = 0;
};

}  // namespace gpusched::policies
