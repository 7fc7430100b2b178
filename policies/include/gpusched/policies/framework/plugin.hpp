#pragma once
/// The hook interfaces. A plugin implements only the hooks it needs; the runner (Scheduler)
/// holds every combination rule. Plugins never loop over the cluster themselves.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <utility>
#include <span>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include <gpusched/cluster.hpp>
#include <gpusched/job.hpp>
#include <gpusched/policies/framework/cycle_state.hpp>
#include <functional>
#include <vector>

#include <gpusched/rng.hpp>
#include <gpusched/scheduling.hpp>
#include <gpusched/status.hpp>

namespace gpusched::policies {

/// What a plugin factory gets: its arguments (validated by the factory) and the run's streams.
/// Valid only during the factory call: a plugin copies what it keeps (e.g. a Rng stream).
struct PluginContext {
  const nlohmann::json& args;
  const RngStreams& rng;
  std::string_view name;   ///< the registered name
};

/// One task being scheduled.
struct TaskContext {
  const JobSpec& job;
  JobId job_id;
  std::int32_t task_index = 0;
  CycleState& state;
  /// The job's tasks already placed in this attempt (tentatively; they are in the cluster).
  std::span<const TaskPlacement> placed = {};
  /// The running jobs (null when the caller gave no view).
  const JobsView* jobs = nullptr;
  [[nodiscard]] const TaskRequest& request() const { return job.request; }
};

class Plugin {
 public:
  virtual ~Plugin() = default;
  [[nodiscard]] virtual std::string_view name() const = 0;
  /// True when the plugin's answers depend on state beyond the nodes: the job's queue and
  /// other jobs' usage (quotas, spread counts). The runner then folds queue and priority into
  /// equivalence classes and tells the caller decisions are not node-local. For the queue sort
  /// (fair share) it means the order changes as jobs start and stop (dynamic_order()).
  [[nodiscard]] virtual bool reads_queue() const { return false; }
  /// True when the plugin's answers may depend on anything about a job (a plugin written in
  /// Python): the runner then never treats two jobs as equivalent.
  [[nodiscard]] virtual bool opaque() const { return false; }
  /// True when the plugin's filter and score answers for a node depend only on that node's state
  /// in the ClusterState (what its generation counts: free resources, devices, taints,
  /// schedulability, the static spec) and on the job's request and constraints: never on other
  /// nodes, other jobs, the job's tasks already placed, the task index, randomness or time, and
  /// never changing between attach() calls. The runner then remembers each node's answers per
  /// request until the node changes (the node index); a profile with any filter or score plugin
  /// not saying so scans every node. Default false: plugins outside this library stay exact.
  [[nodiscard]] virtual bool node_local_answers() const { return false; }
  /// node_local_answers() for one job: a plugin whose answers are node-local for some jobs only
  /// (app-max-per-node, for jobs without an app) says so here.
  [[nodiscard]] virtual bool node_local_for(const JobSpec& /*job*/) const { return node_local_answers(); }
  /// True when the plugin notes something a run reports (a warning) from the answers it gives
  /// for this job, so the node index must ask it about exactly the node states the plain scan
  /// would: such decisions take the request class (every node state once, as the scan sees it),
  /// never a score-order walk that skips nodes, and scan when the search is partial (sampling,
  /// narrowed retries), and scan when a filter listed at or after this one gives capacity bounds
  /// (the index would skip nodes below them unasked). dynamic-resources says so for jobs with a
  /// claim (allocation errors).
  [[nodiscard]] virtual bool exhaustive_for(const JobSpec& /*job*/) const { return false; }
  /// Called once when a Scheduler is built, with every hook the profile lists this plugin at.
  /// May throw ProfileError for a combination the plugin cannot serve.
  virtual void bound_to(std::span<const std::string_view> /*hooks*/) {}
  /// Warnings about how the plugin was configured (an essential argument missing, so it runs as
  /// its peer would not), noted when it was built or attached; the runner lists them once per
  /// run (stderr and summary.json `warnings`). Each names the plugin, e.g. "capacity-queues: no
  /// ClusterQueue configured: every job is admitted without quota".
  [[nodiscard]] virtual std::vector<std::string> warnings() const { return warnings_; }

 protected:
  /// Notes a warning (once: the same text again is ignored).
  void warn(std::string text) {
    for (const auto& w : warnings_) {
      if (w == text) return;
    }
    warnings_.push_back(std::move(text));
  }

 private:
  std::vector<std::string> warnings_;
};

/// Sees the run's workload and every job start and stop, whatever hook the plugin sits at
/// (quota usage, fair-share accounting, FGD's typical pod types). The runner forwards
/// SchedulingHook::attach / job_started / job_stopped to every plugin implementing it.
class JobEventsPlugin : public virtual Plugin {
 public:
  virtual void attach(const ClusterState& /*cluster*/, std::span<const JobSpec> /*workload*/, const JobsView* /*jobs*/) {}
  virtual void job_started(const JobSpec& /*job*/, JobId /*id*/, std::span<const TaskPlacement> /*placements*/) {}
  virtual void job_stopped(const JobSpec& /*job*/, JobId /*id*/, std::span<const TaskPlacement> /*placements*/) {}
  /// The job was submitted (created), before any placement of it: Success admits it; anything
  /// else refuses it for good with the status's reason (ResourceQuota admission at creation).
  /// The reason must stay valid until the plugin's next call. SchedulingHook::admit.
  virtual Status job_submitted(const JobSpec& /*job*/, JobId /*id*/) { return Status::success(); }
  /// The job left for good (completed, failed, refused): ends what job_submitted charged.
  virtual void job_left(const JobSpec& /*job*/, JobId /*id*/) {}
};

/// Orders the pending queue. Exactly one per profile.
class QueueSortPlugin : public virtual Plugin {
 public:
  [[nodiscard]] virtual bool less(const JobSpec& a, JobId ia, const JobSpec& b, JobId ib) const = 0;
  /// SchedulingHook::next_order_change: for an order that moves with time alone (attained
  /// service), the next time after `now` it may answer differently. Default: never.
  [[nodiscard]] virtual SimTime next_order_change(SimTime /*now*/) const { return SimTime::forever(); }
  /// SchedulingHook::queue_level: the job's queue under a multi-level order, -1 without levels.
  [[nodiscard]] virtual std::int32_t queue_level(JobId /*id*/) const { return -1; }
};

/// Once per task before the node loop: may reject the task outright or prepare CycleState.
class PreFilterPlugin : public virtual Plugin {
 public:
  virtual Status pre_filter(const ClusterState& cluster, TaskContext& ctx) = 0;
};

/// Lower bounds on a node's free capacity (NodeState) that a filter needs met before it can accept
/// a task: necessary, never sufficient. FilterPlugin::capacity_need gives them; the node index
/// (Scheduler::set_node_index) keeps every node's free capacity in one tree shared by all
/// requests and never calls the filters on a node below the bounds (it is rejected anyway).
struct CapacityNeed {
  bool schedulable = false;          ///< NodeState::schedulable must be true
  std::int64_t cpu_milli = 0;        ///< NodeState::cpu_free_milli
  std::int64_t memory_mib = 0;       ///< NodeState::memory_free_mib
  std::int64_t gpu_memory_mib = 0;   ///< NodeState::gpu_memory_free_max (one GPU)
  std::int32_t whole_units = 0;      ///< NodeState::whole_units_free
  std::int32_t gpu_milli = 0;        ///< NodeState::gpu_milli_free_max (one GPU)
  std::int32_t tpu_chips = 0;        ///< NodeState::tpu_chips_free

  /// The bounds of both (each the larger).
  void merge(const CapacityNeed& o) {
    schedulable = schedulable || o.schedulable;
    cpu_milli = std::max(cpu_milli, o.cpu_milli);
    memory_mib = std::max(memory_mib, o.memory_mib);
    gpu_memory_mib = std::max(gpu_memory_mib, o.gpu_memory_mib);
    whole_units = std::max(whole_units, o.whole_units);
    gpu_milli = std::max(gpu_milli, o.gpu_milli);
    tpu_chips = std::max(tpu_chips, o.tpu_chips);
  }
  /// A node's free capacity (or, in a tree, the largest of each over a set of nodes) as bounds.
  [[nodiscard]] static CapacityNeed of(const NodeState& s) {
    return {s.schedulable, s.cpu_free_milli, s.memory_free_mib, s.gpu_memory_free_max, s.whole_units_free,
            s.gpu_milli_free_max, s.tpu_chips_free};
  }
  /// True when free capacity `have` (as of()) meets every bound.
  [[nodiscard]] bool admits(const CapacityNeed& have) const {
    return (!schedulable || have.schedulable) && have.cpu_milli >= cpu_milli && have.memory_mib >= memory_mib &&
           have.gpu_memory_mib >= gpu_memory_mib && have.whole_units >= whole_units && have.gpu_milli >= gpu_milli &&
           have.tpu_chips >= tpu_chips;
  }
  [[nodiscard]] bool admits(const NodeState& s) const { return admits(of(s)); }
  bool operator==(const CapacityNeed&) const = default;
};

/// Per node: can the task run there? All filters must say yes (AND).
class FilterPlugin : public virtual Plugin {
 public:
  [[nodiscard]] virtual Status filter(const ClusterState& cluster, const TaskContext& ctx, NodeId node) const = 0;
  /// Every reason `node` is rejected for, given filter()'s rejection `first` (kube-scheduler's
  /// diagnosis counts each: NodeResourcesFit names every insufficient resource). Reasons must
  /// have static storage (or outlive the scheduler). Default: first.reason alone.
  virtual void reasons(const ClusterState& /*cluster*/, const TaskContext& /*ctx*/, NodeId /*node*/, const Status& first,
                       std::vector<std::string_view>& out) const {
    out.push_back(first.reason);
  }
  /// For a filter whose node-local answers also depend on what its own pre_filter decided for the
  /// task (capacity-queues: the ResourceFlavors it assigned): appends, after pre_filter ran, an
  /// exact key of that decision. The node index keeps one class per (request, key), so answers
  /// remembered under one decision are never read under another. Default: nothing (the answers
  /// depend on the node and the job only).
  virtual void index_key(std::vector<std::uint64_t>& /*key*/) const {}
  /// For a node-local filter: raises `need` to bounds every node it accepts for this task meets
  /// (see CapacityNeed), after pre_filter ran. They must be implied by filter() returning
  /// success: a bound that is too high changes decisions (the node-index property tests compare
  /// against the plain scan). Default: none.
  virtual void capacity_need(const ClusterState& /*cluster*/, const TaskContext& /*ctx*/, CapacityNeed& /*need*/) const {}
  /// After the device_select plugin chose the task's devices on `out.node`: a filter that also
  /// owns part of the placement (the topology-manager's CPU and memory pinning, when another
  /// plugin chose the devices) completes `out`. It must not change the devices. Default: nothing.
  virtual void complete(const ClusterState& /*cluster*/, const TaskContext& /*ctx*/, TaskPlacement& /*out*/) const {}
};

/// Per task, over every candidate node at once: for plugins that pay a price per call (written
/// in Python: one call per decision, not per node). The runner calls it, in profile order, after
/// the per-node filters, on the nodes they accepted. Listed under "filter" in profiles.
class BatchFilterPlugin : public virtual Plugin {
 public:
  /// Sets keep[i] to 0 to reject nodes[i] (keep starts all 1). Returns the reason a rejected node
  /// is reported with (its reason must outlive the scheduler's diagnosis: keep it in the plugin).
  virtual Status filter_all(const ClusterState& cluster, const TaskContext& ctx, std::span<const NodeId> nodes,
                            std::span<std::uint8_t> keep) = 0;
};

/// Per feasible node: how good is it? Raw scores go through normalize(); the result must lie
/// in [0, 100]; the runner multiplies by the profile weight and sums over plugins.
class ScorePlugin : public virtual Plugin {
 public:
  [[nodiscard]] virtual double score(const ClusterState& cluster, const TaskContext& ctx, NodeId node) = 0;
  /// Raw scores of all feasible nodes, into `out` (same length). The runner calls this; the
  /// default calls score() per node. Override it when one call for all nodes is cheaper.
  virtual void score_all(const ClusterState& cluster, const TaskContext& ctx, std::span<const NodeId> nodes,
                         std::span<double> out) {
    for (std::size_t i = 0; i < nodes.size(); ++i) out[i] = score(cluster, ctx, nodes[i]);
  }
  /// Upper bounds of the raw scores of nodes every filter accepts, cheaper than score():
  /// out[i] >= score(nodes[i]) exactly as score() would compute it, or NaN where the plugin has
  /// no bound for that node. Returns false (the default) when it offers none for this task.
  /// The node index reads them when this plugin is the profile's only score plugin, its
  /// normalize is the identity and ties go to node order: a node whose bound cannot reach the
  /// top total keeps its bound until it could, and score() runs only on the nodes that reach it.
  /// A bound must hold for every node state the filters accept; a wrong one changes decisions.
  virtual bool score_bounds(const ClusterState& /*cluster*/, const TaskContext& /*ctx*/, std::span<const NodeId> /*nodes*/,
                            std::span<double> /*out*/) {
    return false;
  }
  /// Maps the raw scores of all feasible nodes onto [0, 100]. Default: they already are.
  virtual void normalize(std::span<double> /*scores*/) const {}
  /// True when normalize() leaves scores as they are (the default normalize). Lets the node
  /// index keep a max-tree of scores instead of normalising over every feasible node. A plugin
  /// overriding normalize() must override this too when it changes nothing (default false).
  [[nodiscard]] virtual bool normalize_is_identity() const { return false; }
  /// True when normalize() is normalize_min_max() (each score mapped by min_max_score() over the
  /// feasible nodes' lowest and highest): lets the node index find the top node with a min/max
  /// tree. Default false.
  [[nodiscard]] virtual bool normalize_is_min_max() const { return false; }
  /// What normalize() does when no feasible node's raw score is active (normalize_active): for
  /// Kubernetes' DefaultNormalizeScore, a maximum of 0 leaves every score as it is (identity) or,
  /// reversed, sets every score to 100. Lets the node index keep a max tree while no feasible
  /// node has an active score (no PreferNoSchedule taint, no preferred affinity term matched),
  /// and normalise per decision only otherwise. Default: not known (applies = false).
  struct IdleNormalize {
    bool applies = false;
    bool identity = false;   ///< scores stay as they are
    double value = 0.0;      ///< else every score becomes this
  };
  [[nodiscard]] virtual IdleNormalize normalize_when_idle() const { return {}; }
  /// Whether raw score `s` keeps normalize() from its idle behaviour (normalize_when_idle).
  [[nodiscard]] virtual bool normalize_active(double /*s*/) const { return true; }
  /// True when the plugin prefers nodes purely by their order (first-fit): lets the runner
  /// stop at the first feasible node when it is the only score plugin.
  [[nodiscard]] virtual bool orders_by_node_index() const { return false; }

  /// A score-ordered search (the node index, issue 14). A plugin that can bound its raw score
  /// through one number per node, computed from the node's state alone, lets the index keep the
  /// nodes in that order for every request at once and visit them best first, stopping once no
  /// node left can reach the best score found, instead of bringing a per-request class up to date.
  ///  - order_key(): the node's group, key and fingerprint, from NodeState and cluster-wide
  ///    constants only (order_epoch() changes when those do). Nodes of equal group and fingerprint
  ///    must get the same raw score for every request (fingerprint: the state the score reads,
  ///    packed exactly, or something unique per node).
  ///  - order_bound(): for this task, whether every node's raw score is the same (kConstant:
  ///    the first feasible node in node order wins), bounded by score_range() (kBounded), set by
  ///    the node's best GPU (kByGpu, below), or none of these (kNone: the index answers as it
  ///    would without the order). A plugin whose normalize is normalize_min_max() may answer
  ///    kBounded or kByGpu only when every feasible node's raw score is an integer below 2^40 in
  ///    magnitude: then the top normalised score belongs to the highest raw score alone.
  ///  - score_range(): lowest and highest raw score any node of `group` whose key is `key` can
  ///    get for this task; both non-decreasing in `key`. Include rounding slack: a range that
  ///    misses a score changes decisions (the node-index property test compares with the scan).
  ///  - order_variants() / order_variant(): a plugin whose score reads different state for
  ///    different requests (most-allocated leaves the GPU out of a task that asks for none) may
  ///    keep several orders, one per variant; order_key() gets the variant, and order_variant()
  ///    says which one bounds this task (below order_variants()). score_range() is for that one.
  ///  - kByGpu: a node's raw score is that of its best GPU for the task, the one that fits
  ///    (gpu_fits) and comes first in the GPU order (gpu_order: highest key first, then lowest
  ///    fingerprint); GPUs of equal key and fingerprint give equal scores, later GPUs lower ones,
  ///    and every node the filters accept has a GPU that fits. gpu_order's lanes and gpu_need():
  ///    every GPU that fits has memory_lane >= the need's memory and milli_lane >= its milli
  ///    (-1: fits nothing).
  struct OrderKey {
    std::uint32_t group = 0;
    double key = 0.0;
    std::uint64_t fingerprint = 0;
  };
  enum class OrderBound : std::uint8_t { kNone, kConstant, kBounded, kByGpu };
  struct GpuOrderKey {
    double key = 0.0;
    std::uint64_t fingerprint = 0;
    std::int32_t memory_lane = -1;
    std::int32_t milli_lane = -1;
  };
  [[nodiscard]] virtual bool orders_nodes() const { return false; }
  [[nodiscard]] virtual OrderKey order_key(const ClusterState& /*cluster*/, NodeId /*node*/, std::uint32_t /*variant*/) const {
    return {};
  }
  [[nodiscard]] virtual std::uint32_t order_variants() const { return 1; }
  [[nodiscard]] virtual std::uint32_t order_variant(const ClusterState& /*cluster*/, const TaskContext& /*ctx*/) const { return 0; }
  [[nodiscard]] virtual std::uint64_t order_epoch(const ClusterState& /*cluster*/) const { return 0; }
  [[nodiscard]] virtual OrderBound order_bound(const ClusterState& /*cluster*/, const TaskContext& /*ctx*/) const {
    return OrderBound::kNone;
  }
  [[nodiscard]] virtual std::pair<double, double> score_range(const ClusterState& /*cluster*/, const TaskContext& /*ctx*/,
                                                              std::uint32_t /*group*/, double /*key*/) const {
    return {-std::numeric_limits<double>::infinity(), std::numeric_limits<double>::infinity()};
  }
  /// A score order may bound more than its own plugin's score. The scheduler calls this once,
  /// before orders_nodes(), with the profile's score plugins from this one on (weights as given).
  /// It returns how many of the plugins after this one the order also covers: order_bound() and
  /// score_range() then bound the sum of this plugin's raw score and theirs. Each covered plugin's
  /// normalize must be the identity and its weight this plugin's. Default: none (0).
  virtual std::size_t order_with(std::span<const std::pair<ScorePlugin*, double>> /*scores*/) { return 0; }
  /// The normalised score every feasible node gets for this task, when the plugin can tell it is
  /// the same on every node of the cluster (e.g. no node has a PreferNoSchedule taint): a walk of
  /// another plugin's order adds it instead of asking this plugin. Nothing otherwise (default).
  [[nodiscard]] virtual std::optional<double> constant_score(const ClusterState& /*cluster*/, const TaskContext& /*ctx*/) const {
    return std::nullopt;
  }
  [[nodiscard]] virtual GpuOrderKey gpu_order(const GpuState& /*gpu*/) const { return {}; }
  [[nodiscard]] virtual std::pair<std::int32_t, std::int32_t> gpu_need(const TaskContext& /*ctx*/) const { return {0, 0}; }
  [[nodiscard]] virtual bool gpu_fits(const TaskContext& /*ctx*/, const GpuState& /*gpu*/) const { return false; }
};

/// Chooses the devices (GPUs) inside the chosen node. Exactly one per profile.
class DeviceSelectPlugin : public virtual Plugin {
 public:
  /// Writes the GPU grants into `out.gpus`. Returns false when the request does not fit.
  [[nodiscard]] virtual bool select(const ClusterState& cluster, const TaskContext& ctx, NodeId node,
                                    TaskPlacement& out) const = 0;
};

/// Bookkeeping when a task's resources are tentatively taken; unreserve undoes it.
class ReservePlugin : public virtual Plugin {
 public:
  virtual Status reserve(const ClusterState& cluster, const JobSpec& job, JobId id, const TaskPlacement& p) = 0;
  virtual void unreserve(const ClusterState& cluster, const JobSpec& job, JobId id, const TaskPlacement& p) = 0;
};

/// Per job, after its tasks are tentatively placed: Success (go), Wait, or Unschedulable (undo).
class PermitPlugin : public virtual Plugin {
 public:
  virtual Status permit(const ClusterState& cluster, const JobSpec& job, JobId id,
                        std::span<const TaskPlacement> placements) = 0;
};

class Statement;

/// What a post-filter may ask the runner: could the job be placed on the cluster as it is now
/// (a what-if that changes nothing)? `only`: consider just these nodes (empty: all).
using FitsFn = std::function<bool(std::span<const NodeId> only)>;

/// Per job, when it could not be placed: frees room by evicting running jobs (preemption,
/// reclaim). Evictions go through `st` (Statement::evict) so the runner can undo them when the
/// job still does not fit; every evicted job is appended to `victims` once. Success: room was
/// made (the runner places the job again); anything else: nothing was evicted.
class PostFilterPlugin : public virtual Plugin {
 public:
  /// A cheap test: false when post_filter() cannot succeed for `job` now (e.g. nothing of lower
  /// priority runs), so the runner skips the work around it.
  [[nodiscard]] virtual bool may_help(const JobSpec& /*job*/) const { return true; }
  virtual Status post_filter(ClusterState& cluster, const JobSpec& job, JobId id, Statement& st,
                             std::vector<JobId>& victims, const FitsFn& fits) = 0;
};

/// Per job, after permit: makes the placement final (record-keeping in a simulator, an API call
/// in a real cluster).
class BindPlugin : public virtual Plugin {
 public:
  virtual Status bind(const ClusterState& cluster, const JobSpec& job, JobId id,
                      std::span<const TaskPlacement> placements) = 0;
};

/// One score mapped as normalize_min_max() maps it, given the lowest and highest raw scores.
[[nodiscard]] inline double min_max_score(double s, double min, double max) {
  return (max > min) ? 100.0 * (s - min) / (max - min) : 100.0;
}

/// Maps raw scores onto [0, 100] linearly, lowest -> 0 and highest -> 100 (all equal -> 100).
void normalize_min_max(std::span<double> scores);

}  // namespace gpusched::policies
