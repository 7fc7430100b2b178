#pragma once
/// `priority-preemption` (post-filter; Kubernetes DefaultPreemption, adapted): when a job cannot
/// be placed, evicts the smallest set of strictly-lower-priority, preemptible running jobs that
/// lets it fit. Victims are whole jobs (every task on every node), never part of a gang.
///
/// Victim sets compare by (VictimCost): fewest victims, then the lowest highest-victim priority,
/// then the least work lost (JobsView::work_lost_us x the victim's GPUs, summed), then the
/// lowest node index. Kubernetes orders candidate nodes by PDB violations, highest victim
/// priority, sum of priorities, victim count, then start time; we put the count first (issue 4).
///
/// - A single-task job takes victims from one node. A node is a candidate only when it is
///   schedulable, runs a lower-priority preemptible job, and its free resources plus those of
///   all such jobs cover the request (CPU, memory, GPU milli, TPU chips) — no fits() call for
///   the others. On a candidate node with at most `exact_search_limit` such jobs, subsets are
///   searched by increasing size: the result is the exact minimum under the order above. With
///   more, Kubernetes' greedy reprieve: evict them all, then give back the most valuable first
///   (highest priority, most work lost) whenever the job still fits. Branch and bound: a node
///   is skipped without any fits() call when its best possible set cannot beat the best found
///   so far — at least k_min victims (the fewest whose amounts cover the tightest dimension's
///   deficit), the k_min-th lowest priority, the k_min cheapest costs — so a full cluster costs
///   about one fits() call per improvement, plus an O(jobs on the node) scan per node.
/// - A gang (tasks > 1 or min_available > 1) may take victims on several nodes: candidates from
///   the whole cluster in order (lowest priority, least work lost, job id) are evicted as a
///   prefix found by doubling then bisection on fits(all nodes), then reprieved most valuable
///   first. O(log candidates + victims) fits() calls, each O(nodes).
///
/// The node index comes from job events (JobEventsPlugin: the runner forwards the hook's
/// job_started / job_stopped); evictions read placements and requests from the JobsView.
///
/// Differences from Kubernetes: victims are evicted at once (no graceful termination, no
/// nominated node); no PodDisruptionBudgets; whole jobs are victims; the victim order puts
/// the count first; a job with preempt_never waits (as preemptionPolicy: Never).
///
/// Args: `exact_search_limit` (number, 0..16, default 12): the most candidate victims on one
/// node for which the exact subset search runs (0: always the greedy reprieve).
///
/// Example (profile JSON):
///   {"name": "prio", "post_filter": [{"name": "priority-preemption", "args": {"exact_search_limit": 8}}]}
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <map>
#include <vector>

#include <gpusched/policies/framework/plugin.hpp>
#include <gpusched/policies/framework/statement.hpp>

namespace gpusched::policies {

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

class PriorityPreemption final : public PostFilterPlugin, public JobEventsPlugin {
 public:
  static constexpr std::size_t kDefaultExactSearchLimit = 12;
  static constexpr std::size_t kMaxExactSearchLimit = 16;

  /// `exact_search_limit` <= kMaxExactSearchLimit (asserted).
  explicit PriorityPreemption(std::size_t exact_search_limit = kDefaultExactSearchLimit);

  [[nodiscard]] std::string_view name() const override { return "priority-preemption"; }
  void attach(const ClusterState& cluster, std::span<const JobSpec> workload, const JobsView* jobs) override;
  /// Keeps a compact per-node index of running jobs (priority, preemptible, what they hold),
  /// so the node scan never reads JobSpecs. O(placements).
  void job_started(const JobSpec& job, JobId id, std::span<const TaskPlacement> placements) override;
  void job_stopped(const JobSpec& job, JobId id, std::span<const TaskPlacement> placements) override;
  /// False when no preemptible running job has a lower priority than `job` (O(log n)).
  [[nodiscard]] bool may_help(const JobSpec& job) const override;
  /// Success: the victims are evicted in `st` and listed in `victims`, and the job fits.
  /// Unschedulable (nothing evicted): preempt_never, no view of running jobs, or no set works.
  Status post_filter(ClusterState& cluster, const JobSpec& job, JobId id, Statement& st, std::vector<JobId>& victims,
                     const FitsFn& fits) override;

  /// The cost of the last successful choice (diagnostics, tests).
  [[nodiscard]] const VictimCost& last_cost() const { return last_cost_; }
  /// fits() calls made by the last post_filter (how much the pruning saved).
  [[nodiscard]] std::size_t last_fits_calls() const { return fits_calls_; }

 private:
  /// A running job's share of one node, from job events.
  struct Resident {
    JobId id;
    std::int32_t priority = 0;
    bool preemptible = true;
    std::int64_t cpu_milli = 0, memory_mib = 0, gpu_milli = 0, tpu_chips = 0;   ///< on this node
    std::int64_t job_gpu_milli = 0;   ///< the whole job's GPUs (milli), all nodes
  };
  /// A running job that may be evicted, with what it holds on the node being considered.
  struct Candidate : Resident {
    double cost = 0.0;               ///< work_lost_us x GPUs
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

  std::size_t exact_search_limit_;
  std::map<std::int32_t, std::int64_t> preemptible_by_priority_;   // running preemptible jobs per priority
  const JobsView* jobs_ = nullptr;
  std::vector<std::vector<Resident>> by_node_;   // per node, in start order
  // Per call.
  VictimCost best_cost_, last_cost_;
  std::vector<JobId> best_;
  std::vector<Candidate> cands_;
  std::vector<double> costs_;
  std::vector<std::int32_t> prios_;
  std::size_t fits_calls_ = 0;
};

}  // namespace gpusched::policies
