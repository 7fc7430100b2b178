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
/// - Reclaim (post-filter; Kueue preemption.reclaimWithinCohort): when a job would fit within
///   its queue's nominal quota but cannot be admitted or placed, running jobs of other queues in
///   the same cohort tree that borrow (usage > nominal) in the flavor and resource the job needs
///   are evicted, lowest priority first, then most recently started, until the job fits; a
///   queue's jobs stop being candidates once it no longer borrows. `within_cluster_queue:
///   LowerPriority` (withinClusterQueue) also evicts the queue's own lower-priority jobs when
///   that brings the job within nominal quota. Reclaim candidates (other queues) go before the
///   queue's own jobs. Jobs with preemptible=false are never victims; jobs with
///   preemptionPolicy Never never preempt. Reclaim also runs when the quota has room but the
///   nodes are held by borrowers (in gpusched a flavor's nodes are the quota); the queue's own
///   jobs are evicted only while its quota is what blocks the job. Evictions stop at the first
///   set that lets the job fit (no second pass that re-admits unneeded victims, unlike Kueue).
///   Defaults: reclaim_within_cohort Any (Kueue's API default is Never: here listing the plugin
///   at post_filter turns reclaim on; set Never per queue to opt out), within_cluster_queue Never.
///   Not modelled: borrowWithinCohort, fair sharing between ClusterQueues, cohort-level quotas.
///
/// Args:
///   {"cohorts": {"org": {}, "research": {"parent": "org"}},
///    "queues": {
///      "team-a": {"cohort": "research",
///                 "resource_groups": [
///                   {"flavors": [{"name": "A100-80GB", "resources": {"nvidia.com/gpu":
///                                  {"nominal_quota": 8, "borrowing_limit": 4, "lending_limit": 2}}},
///                                {"name": "default", "resources": {"nvidia.com/gpu": 2}}]}],
///                 "preemption": {"reclaim_within_cohort": "Any", "within_cluster_queue": "LowerPriority"}},
///      "team-b": {"cohort": "research", "local_queues": ["team-b-dev"],
///                 "flavors": [{"name": "A100-80GB", "resources": {"nvidia.com/gpu": 8, "cpu": "128"}}]}},
///    "default_queue": "team-a"}
/// A resource given as a bare amount is its nominal quota. "flavors" is shorthand for one
/// resource group. A job's queue (JobSpec::queue, a LocalQueue) maps to the ClusterQueue of the
/// same name or the one listing it in `local_queues`; otherwise to `default_queue`; otherwise
/// the job is UnschedulableAndUnresolvable ("no ClusterQueue").
///
/// Configuration errors (ProfileError kProfileBadArgs, field = "<plugin>/args/<path>"): unknown
/// cohort (queue's cohort or cohort's parent not in `cohorts`), a cycle of parents, a
/// borrowing_limit larger than the cohort tree could ever lend, borrowing/lending limits without
/// a cohort, lending_limit > nominal_quota, flavors of a group covering different resources, a
/// resource in two groups, an unknown default_queue, a local queue mapped twice, unknown keys.
/// Flavor names that are not "default" must be GPU models of the cluster's catalog (checked when
/// the run attaches the cluster).
///
/// Profile: {"filter": ["node-resources-fit", {"name": "capacity-queues", "args": {...}}],
///           "post_filter": ["capacity-queues"], ...} (a filter plugin's pre-filter runs too).
#include <cstdint>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include <gpusched/policies/framework/plugin.hpp>
#include <gpusched/policies/quota/quota_resources.hpp>

namespace gpusched::policies {

/// Kueue PreemptionPolicy values.
enum class QueuePreemption : std::uint8_t { kNever, kLowerPriority, kAny };

class CapacityQueuesPlugin final : public PreFilterPlugin,
                                   public FilterPlugin,
                                   public PostFilterPlugin,
                                   public JobEventsPlugin {
 public:
  /// Parses and validates `args`. Throws ProfileError(kProfileBadArgs) with the argument path.
  CapacityQueuesPlugin(const nlohmann::json& args, std::string_view name);

  [[nodiscard]] std::string_view name() const override { return name_; }
  [[nodiscard]] bool reads_queue() const override { return true; }
  /// Task 0: flavor assignment and admission for the whole job. O(groups x flavors x resources x depth).
  Status pre_filter(const ClusterState& cluster, TaskContext& ctx) override;
  /// Nodes of the assigned flavors only. O(1), O(GPUs) on nodes with mixed models.
  [[nodiscard]] Status filter(const ClusterState& cluster, const TaskContext& ctx, NodeId node) const override;
  /// Reclaim / within-queue preemption (see above). O(candidates x fits).
  Status post_filter(ClusterState& cluster, const JobSpec& job, JobId id, Statement& st, std::vector<JobId>& victims,
                     const FitsFn& fits) override;
  void attach(const ClusterState& cluster, std::span<const JobSpec> workload, const JobsView* jobs) override;
  void job_started(const JobSpec& job, JobId id, std::span<const TaskPlacement> placements) override;
  void job_stopped(const JobSpec& job, JobId id, std::span<const TaskPlacement> placements) override;

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
    std::vector<JobId> running;
    int root = -1;
    std::string no_room_reason, too_big_reason, no_flavor_reason;
  };
  struct Running {
    int queue = -1;
    std::vector<std::pair<std::size_t, std::int64_t>> charged;   // fr -> amount
    bool evicting = false;   // already subtracted by our post-filter; job_stopped will follow
  };
  enum class Fit : std::uint8_t { kFits, kNoRoom, kTooBig, kNoFlavor };

  [[nodiscard]] std::size_t fr(std::uint32_t flavor, std::size_t resource) const { return flavor * resources_.size() + resource; }
  [[nodiscard]] std::int64_t available_at(int node, std::size_t fr) const;
  void add_usage(int node, std::size_t fr, std::int64_t delta);
  void apply(const Running& r, int sign);
  [[nodiscard]] int queue_of(const JobSpec& job) const;
  [[nodiscard]] bool flavor_allows(std::uint32_t flavor, const TaskRequest& r) const;
  /// Assigns a flavor per group the job requests (out: per group, -1 = none); `limit`: the
  /// per-fr bound to test against (available now, or nominal - own usage for reclaim).
  Fit assign(int queue, const JobSpec& job, std::span<const std::int64_t> charge, std::vector<int>& out,
             bool within_nominal, std::span<const std::int64_t> own_relief = {}) const;
  void resolve(const ClusterState& cluster);
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

  // The last admission decision (pre_filter task 0), used by filter and job_started.
  JobId decided_job_ = JobId::invalid();
  int decided_queue_ = -1;
  std::vector<int> decided_flavors_;
  std::vector<GpuModelId> decided_models_;
  std::vector<std::int64_t> charge_;   // scratch
};

}  // namespace gpusched::policies
