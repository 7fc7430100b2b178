#pragma once
/// `capacity-queues`: Kueue ClusterQueues, Cohorts and ResourceFlavors.
///
/// Model (Kueue v1beta1 semantics, named as Kueue names them):
/// - A ClusterQueue has resource groups; each group lists ResourceFlavors in order, each with a
///   quota per covered resource: `nominal_quota` (nominalQuota), optional `borrowing_limit`
///   (borrowingLimit: how much more than nominal it may take from its cohort) and
///   `lending_limit` (lendingLimit: how much of its unused nominal quota the cohort may use).
/// - A flavor is a GPU model name from the catalog ("A100-80GB"; nodes with GPUs of that model)
///   or "default" (every node). Admission assigns, per resource group the job requests, the
///   first flavor in the queue's order that the job's GPU-model constraint allows and that has
///   room, borrowing if needed (Kueue's flavor assignment with whenCanBorrow: Borrow). The
///   filter then keeps the job on nodes of the assigned flavor (Kueue injects the flavor's
///   node labels). Resources no group covers are not limited (Kueue would refuse the job).
/// - A job (workload) is charged its whole request: per-task request x tasks (pods x count).
/// - Cohorts pool the queues' lendable quota; a cohort may have a parent cohort (hierarchical
///   cohorts): a subtree lends to its parent what its members lend. A queue admits a job when,
///   for every charged resource, usage + request <= what is still free of its guaranteed part
///   (nominal - lending_limit) plus what its cohort tree has free, capped by borrowing_limit.
/// - Preemption (post-filter), as Kueue's preemptor (pkg/scheduler/preemption, GetTargets and
///   minimalPreemptions; read at kubernetes-sigs/kueue@006767fe658f):
///   * Flavor: per resource group, the first flavor with room; else the first flavor where the
///     job's request is within the queue's nominal quota (or, with borrow_within_cohort, within
///     nominal + borrowing limit): Kueue's "Preempt" mode. The resources of that assignment
///     without room are the ones needing preemption.
///   * Candidates: running jobs using a resource needing preemption: the queue's own jobs of
///     lower priority (within_cluster_queue: LowerPriority), and jobs of other queues of the
///     cohort tree that borrow in such a resource (reclaim_within_cohort: Any, or LowerPriority
///     for lower priority only). Ordered: other queues before the own queue, lower priority
///     first, most recently started first, then the higher job id.
///   * If every candidate is the queue's own: minimal set with borrowing allowed. Else, with
///     borrow_within_cohort LowerPriority: when the queue is at or above nominal in a resource
///     needing preemption, other queues' candidates must have priority below the threshold
///     (the job's priority, or max_priority_threshold + 1 when lower); a minimal set with
///     borrowing allowed, except that a victim at or above the threshold forbids borrowing.
///     Else: if the queue is under nominal in every resource needing preemption, a minimal
///     set that must fit without borrowing; failing that, the own candidates with borrowing.
///   * Minimal set: take candidates in order (skipping other queues that no longer borrow)
///     until the job fits, then walk the taken ones back from the second-to-last and put back
///     every one the job fits without. Only that set is evicted.
///   "Fits" is Kueue's quota test (every charged flavor-resource within what the queue can take)
///   and, in gpusched, also a placement on the nodes as they would be (a flavor's nodes are its
///   quota). When the quota has room but the nodes are held by borrowers, the other queues'
///   borrowing jobs are the candidates, for a job that then fits its queue's nominal quota (a
///   gpusched addition: Kueue would admit and leave the pods pending). Jobs with preemptible=false are never victims; jobs with preemptionPolicy Never
///   never preempt. Defaults: reclaim_within_cohort Any (Kueue's API default is Never: here
///   listing the plugin at post_filter turns reclaim on; set Never per queue to opt out),
///   within_cluster_queue Never, borrow_within_cohort Never.
///   Not modelled: LowerOrNewerEqualPriority, cohort-level quotas, already-evicted workloads
///   ordered first (evictions here are instantaneous).
/// - Fair sharing (Kueue's Configuration fairSharing; plugin arg `fair_sharing: {enable,
///   preemption_strategies}`; per ClusterQueue `fair_sharing: {weight}`, default 1; read at
///   kubernetes-sigs/kueue pkg/cache dominantResourceShare, pkg/scheduler/fair_sharing_iterator.go
///   @00b0d4bdf17c, pkg/scheduler/preemption/fair_strategy.go @2cfce05143a4,
///   fairsharing/ordering.go @00b0d4bdf17c, fairsharing/strategy.go @0249ffa036b0):
///   * Dominant resource share (DRS) of a ClusterQueue in a cohort: per resource, what it uses
///     above its nominal quota summed over flavors, x 1000 / what its cohort tree can lend of that
///     resource (integer division); the largest over resources, x 1000 / weight in milli-units.
///     0 when it borrows nothing (or has no cohort); weight 0 and borrowing: infinite.
///   * Admission order (when the plugin is also listed at queue_sort): the job whose ClusterQueue
///     has the lowest DRS once the job is admitted goes first (Kueue's tournament among the heads
///     of the ClusterQueues of a cohort), then higher priority, earlier submission, lower id.
///     Inside a ClusterQueue jobs keep Kueue's order (priority, then submission): the key of a
///     waiting job counts the waiting jobs ahead of it in its ClusterQueue as admitted, so it is
///     the share its queue reaches when the job is the head and is admitted. Without fair sharing
///     the order is priority, submission, id (as priority-fifo).
///   * Preemption: the same candidates as above (within_cluster_queue, reclaim_within_cohort;
///     borrow_within_cohort has no effect, as in Kueue), in the same order, offered by target
///     ClusterQueue: repeatedly the ClusterQueue with candidates and the highest DRS (ties: the
///     later name in alphabetical order; one that borrows nothing is dropped, except the
///     preemptor's own). The preemptor's own candidates are taken as they come. Another queue's candidate is
///     taken when the first strategy holds for it (LessThanOrEqualToFinalShare: the preemptor's
///     DRS with the job <= the target's DRS without the candidate; LessThanInitialShare: < the
///     target's DRS now), else kept for the second strategy, which then offers, per target
///     ClusterQueue from the highest DRS, its first kept candidate when the preemptor's DRS with
///     the job < the target's DRS. Taking stops once the job fits (borrowing allowed); then the
///     same put-back as above. Simplifications: in hierarchical cohorts every ClusterQueue of
///     the tree is compared by its own DRS (Kueue compares subtrees at each level, by the DRS of
///     the almost-least-common ancestors); the feature gates FairSharingPreemptWithinNominal
///     and FairSharingReevaluatePreemptionCandidates are off; the admission keys are computed
///     once per scheduling cycle.
///
/// Args:
///   {"cohorts": {"org": {}, "research": {"parent": "org"}},
///    "queues": {
///      "team-a": {"cohort": "research",
///                 "resource_groups": [
///                   {"flavors": [{"name": "A100-80GB", "resources": {"nvidia.com/gpu":
///                                  {"nominal_quota": 8, "borrowing_limit": 4, "lending_limit": 2}}},
///                                {"name": "default", "resources": {"nvidia.com/gpu": 2}}]}],
///                 "preemption": {"reclaim_within_cohort": "Any", "within_cluster_queue": "LowerPriority",
///                                "borrow_within_cohort": {"policy": "LowerPriority", "max_priority_threshold": 100}},
///                 "fair_sharing": {"weight": 2}},
///      "team-b": {"cohort": "research", "local_queues": ["team-b-dev"],
///                 "flavors": [{"name": "A100-80GB", "resources": {"nvidia.com/gpu": 8, "cpu": "128"}}]}},
///    "default_queue": "team-a",
///    "fair_sharing": {"enable": true, "preemption_strategies": ["LessThanOrEqualToFinalShare", "LessThanInitialShare"]}}
/// A resource given as a bare amount is its nominal quota. "flavors" is shorthand for one
/// resource group. A job's queue (JobSpec::queue, a LocalQueue) maps to the ClusterQueue of the
/// same name or the one listing it in `local_queues`; otherwise to `default_queue`; otherwise
/// the job is UnschedulableAndUnresolvable ("no ClusterQueue").
///
/// Configuration errors (ProfileError kProfileBadArgs, field = "<plugin>/args/<path>"): unknown
/// cohort (queue's cohort or cohort's parent not in `cohorts`), a cycle of parents (a
/// borrowing_limit larger than the cohort tree could ever lend is accepted: a cap, as in Kueue),
/// borrowing/lending limits without a cohort, lending_limit > nominal_quota, borrow_within_cohort LowerPriority with
/// reclaim_within_cohort Never (Kueue's validation), flavors of a group covering different resources, a
/// resource in two groups, an unknown default_queue, a local queue mapped twice, unknown keys.
/// Flavor names that are not "default" must be GPU models of the cluster's catalog (checked when
/// the run attaches the cluster).
///
/// Fair-sharing errors: a weight that is not a number >= 0 (or below 0.001 but not 0), strategies
/// other than [LessThanOrEqualToFinalShare], [LessThanInitialShare] or both in that order (the
/// sequences Kueue's configuration validation accepts), unknown keys.
///
/// Profile: {"filter": ["node-resources-fit", {"name": "capacity-queues", "args": {...}}],
///           "post_filter": ["capacity-queues"], ...} (a filter plugin's pre-filter runs too);
///           with fair sharing also "queue_sort": "capacity-queues" (else a warning says the
///           admission order does not follow the shares).
#include <cstdint>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include <gpusched/policies/framework/plugin.hpp>
#include <gpusched/policies/quota/quota_resources.hpp>

namespace gpusched::policies {

/// Kueue PreemptionPolicy values.
enum class QueuePreemption : std::uint8_t { kNever, kLowerPriority, kAny };

class CapacityQueuesPlugin final : public QueueSortPlugin,
                                   public PreFilterPlugin,
                                   public FilterPlugin,
                                   public PostFilterPlugin,
                                   public JobEventsPlugin {
 public:
  /// Parses and validates `args`. Throws ProfileError(kProfileBadArgs) with the argument path.
  CapacityQueuesPlugin(const nlohmann::json& args, std::string_view name);

  [[nodiscard]] std::string_view name() const override { return name_; }
  [[nodiscard]] bool reads_queue() const override { return true; }
  /// Notes whether the plugin is the queue sort (fair sharing warns when it is not).
  void bound_to(std::span<const std::string_view> hooks) override;
  /// Queue order (see above). O(1) after the keys of the cycle are computed (O(waiting x frs)).
  [[nodiscard]] bool less(const JobSpec& a, JobId ia, const JobSpec& b, JobId ib) const override;
  /// Task 0: flavor assignment and admission for the whole job. O(groups x flavors x resources x depth).
  Status pre_filter(const ClusterState& cluster, TaskContext& ctx) override;
  /// Nodes of the assigned flavors only. O(1), O(GPUs) on nodes with mixed models.
  [[nodiscard]] Status filter(const ClusterState& cluster, const TaskContext& ctx, NodeId node) const override;
  /// The filter's answer for a node depends on the node and on the flavors' models pre_filter
  /// assigned (index_key), so the node index serves kueue-cohorts too.
  [[nodiscard]] bool node_local_answers() const override { return true; }
  void index_key(std::vector<std::uint64_t>& key) const override;
  /// Reclaim / within-queue preemption (see above). O(candidates x fits).
  Status post_filter(ClusterState& cluster, const JobSpec& job, JobId id, Statement& st, std::vector<JobId>& victims,
                     const FitsFn& fits) override;
  void attach(const ClusterState& cluster, std::span<const JobSpec> workload, const JobsView* jobs) override;
  void job_started(const JobSpec& job, JobId id, std::span<const TaskPlacement> placements) override;
  void job_stopped(const JobSpec& job, JobId id, std::span<const TaskPlacement> placements) override;
  void job_left(const JobSpec& job, JobId id) override;

  /// Kueue's dominant resource share of a ClusterQueue now (see above; INT64_MAX = infinite).
  /// 0 for unknown names.
  [[nodiscard]] std::int64_t dominant_resource_share(std::string_view queue) const;

  /// Usage of a ClusterQueue or cohort in (flavor, resource), internal units (cohort: what its
  /// members use beyond their guaranteed quota). 0 for unknown names.
  [[nodiscard]] std::int64_t usage(std::string_view node, std::string_view flavor, std::string_view resource) const;
  /// What a ClusterQueue could still admit in (flavor, resource) now, borrowing included.
  [[nodiscard]] std::int64_t available(std::string_view queue, std::string_view flavor, std::string_view resource) const;
  /// The most a ClusterQueue can ever hold in (flavor, resource): nominal + allowed borrowing.
  [[nodiscard]] std::int64_t ceiling(std::string_view queue, std::string_view flavor, std::string_view resource) const;
  /// The ClusterQueue a job queue (LocalQueue) maps to, or "" when none.
  [[nodiscard]] std::string cluster_queue_of(const std::string& job_queue) const;

 private:
  struct Group {
    std::vector<std::size_t> covered;     // quota resources
    std::vector<std::uint32_t> flavors;   // in admission order
  };
  struct Node {   // a ClusterQueue or a cohort
    std::string name;
    bool is_queue = false;
    int parent = -1;
    std::vector<std::int64_t> nominal, borrowing_limit, lending_limit;   // per fr; limits -1 = none
    std::vector<std::int64_t> quota, lendable, guaranteed, usage, ceiling;
    std::vector<Group> groups;
    QueuePreemption reclaim = QueuePreemption::kAny, within = QueuePreemption::kNever;
    bool borrow_within = false;                   // borrowWithinCohort.policy LowerPriority
    std::optional<std::int32_t> borrow_threshold;   // borrowWithinCohort.maxPriorityThreshold
    std::vector<JobId> running;
    int root = -1;
    std::int64_t weight_milli = 1000;   // fairSharing.weight x 1000
    std::string no_room_reason, too_big_reason, no_flavor_reason;
  };
  struct Running {
    int queue = -1;
    std::vector<std::pair<std::size_t, std::int64_t>> charged;   // fr -> amount
    bool evicting = false;   // already subtracted by our post-filter; job_stopped will follow
  };
  enum class Fit : std::uint8_t { kFits, kNoRoom, kTooBig, kNoFlavor };
  enum class FairStrategy : std::uint8_t { kLessThanOrEqualToFinalShare, kLessThanInitialShare };

  [[nodiscard]] std::size_t fr(std::uint32_t flavor, std::size_t resource) const { return flavor * resources_.size() + resource; }
  [[nodiscard]] std::int64_t available_at(int node, std::size_t fr) const;
  void add_usage(int node, std::size_t fr, std::int64_t delta);
  void apply(const Running& r, int sign);
  [[nodiscard]] int queue_of(const JobSpec& job) const;
  [[nodiscard]] bool flavor_allows(std::uint32_t flavor, const TaskRequest& r) const;
  /// Assigns a flavor per group the job requests (out: per group, -1 = none): the first flavor
  /// in the queue's order with room now (borrowing included).
  Fit assign(int queue, const JobSpec& job, std::span<const std::int64_t> charge, std::vector<int>& out) const;
  /// Kueue's flavor assignment for preemption: per group the first flavor with room, else the
  /// first whose quota could hold the job after preemption. False when a requested group has none.
  bool assign_for_preemption(int queue, const JobSpec& job, std::span<const std::int64_t> charge, std::vector<int>& out) const;
  void resolve(const ClusterState& cluster);
  /// DRS of a ClusterQueue with `delta` (per fr, may be null) added to its usage.
  [[nodiscard]] std::int64_t drs(int queue, const std::vector<std::int64_t>* delta) const;
  /// Fair-sharing admission keys of the waiting jobs, recomputed when time or usage changed.
  void refresh_keys() const;
  /// The flavor-resources a job would be charged in its queue now (admission or preemption flavors).
  void charged_for(int queue, const JobSpec& job, std::vector<std::pair<std::size_t, std::int64_t>>& out) const;
  Running make_running(int queue, const std::vector<int>& flavors, std::span<const std::int64_t> charge) const;
  [[nodiscard]] int find_node(std::string_view name) const;
  [[nodiscard]] std::optional<std::size_t> find_fr(std::string_view flavor, std::string_view resource) const;
  std::string_view intern(std::string text);

  std::string name_;
  quota::QuotaResources resources_;
  std::vector<std::string> flavor_names_;
  std::vector<GpuModelId> flavor_models_;          // invalid = any node
  std::vector<std::string> flavor_reasons_;        // filter rejections
  const ClusterState* resolved_for_ = nullptr;
  std::vector<Node> nodes_;
  std::unordered_map<std::string, int> local_queues_;   // job queue -> ClusterQueue node
  int default_queue_ = -1;
  const ClusterState* cluster_ = nullptr;
  const JobsView* jobs_ = nullptr;
  std::vector<Running> running_;   // per job id
  std::set<std::string, std::less<>> texts_;

  // Fair sharing.
  bool fair_ = false;
  std::vector<FairStrategy> strategies_{FairStrategy::kLessThanOrEqualToFinalShare, FairStrategy::kLessThanInitialShare};
  bool at_queue_sort_ = false;
  std::span<const JobSpec> workload_;
  std::vector<std::uint8_t> left_;      // per workload job: left for good
  std::vector<std::uint32_t> by_submit_;    // workload ids by submission time
  mutable std::size_t arrived_ = 0;         // prefix of by_submit_ taken into waiting_
  mutable std::set<std::uint32_t> waiting_; // submitted, not running, not gone
  std::uint64_t generation_ = 0;        // bumped on every start and stop
  mutable std::vector<std::int64_t> key_;   // per workload job; -1 = not waiting
  mutable bool keyed_ = false;
  mutable SimTime keyed_at_;
  mutable std::uint64_t keyed_generation_ = 0;
  mutable std::vector<std::int64_t> scratch_charge_;

  // The last admission decision (pre_filter task 0), used by filter and job_started.
  JobId decided_job_ = JobId::invalid();
  int decided_queue_ = -1;
  std::vector<int> decided_flavors_;
  std::vector<GpuModelId> decided_models_;
  std::vector<std::int64_t> charge_;   // scratch
};

}  // namespace gpusched::policies
