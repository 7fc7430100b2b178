#pragma once
/// The runner: the one place that knows how plugin opinions combine.
///   - filters AND together; the first rejection names the plugin that said no;
///   - scores are normalised to [0, 100], weighted and summed; the highest total wins;
///   - ties go to the lowest node index, or to a named random stream when the profile asks;
///   - a job's tasks are placed inside a Statement: fewer than min_available -> all undone.
///
/// Example (a real scheduler component asking for a placement):
///   ClusterState cluster = ...;
///   policies::Scheduler sched(policies::builtin_profile("binpack"), policies::Registry::with_builtins(), 42);
///   std::vector<TaskPlacement> where;
///   if (sched.schedule(cluster, job, JobId{0}, where).ok()) { ... where[0].node ... }
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <gpusched/policies/framework/plugin.hpp>
#include <gpusched/policies/framework/profile.hpp>
#include <gpusched/policies/framework/registry.hpp>
#include <gpusched/policies/framework/statement.hpp>
#include <gpusched/scheduling.hpp>
#include <gpusched/tpu_slice.hpp>

namespace gpusched::policies {

class NodeIndex;
struct NodeIndexClass;
struct NodeIndexSignature;

/// One node's part in a decision (Scheduler::set_explain): kube-scheduler-simulator's per-node
/// filter and score breakdown.
struct NodeVerdict {
  NodeId node;
  Status rejected = Status::success();     ///< the first filter that said no (ok: the node is feasible)
  std::vector<std::string_view> reasons;   ///< every reason that filter gives (kube-scheduler counts each)
  std::vector<double> raw;                 ///< feasible nodes: each score plugin's raw score, profile order
  std::vector<double> normalized;          ///< after the plugin's normalize(), before its weight
  double total = 0;                        ///< sum of weight x normalized: the highest total wins
};

/// How one task's decision looked at every node it considered, on the cluster as it was then.
struct DecisionExplanation {
  JobId job;
  std::int32_t task = 0;
  Status pre_filter = Status::success();   ///< a pre-filter that ruled out every node (then `nodes` is empty)
  bool narrowed = false;                   ///< a retry on the nodes that gained capacity only (the engine's)
  std::vector<std::string> score_plugins;  ///< names, profile order
  std::vector<double> weights;
  std::vector<NodeVerdict> nodes;          ///< node order (the narrowed set on a narrowed retry)
};

class Scheduler final : public SchedulingHook {
 public:
  /// Builds and validates every plugin of the profile. Throws ProfileError on an unknown
  /// plugin, a plugin at a hook it does not implement, a duplicate, a weight <= 0 or bad args.
  Scheduler(const Profile& profile, const Registry& registry, std::uint64_t seed);
  ~Scheduler() override;

  [[nodiscard]] bool before(const JobSpec& a, JobId ia, const JobSpec& b, JobId ib) const override;
  using SchedulingHook::schedule;
  Status schedule(ClusterState& cluster, const JobSpec& job, JobId id, std::vector<TaskPlacement>& out,
                  std::span<const NodeId> only) override;
  [[nodiscard]] std::string last_diagnosis() const override;
  /// SchedulingHook::what_if. A failure's status says only that the job does not fit: why is not
  /// worked out (the diagnosis stays that of the last schedule()).
  Status what_if(ClusterState& cluster, const JobSpec& job, JobId id, std::vector<TaskPlacement>& out) override;
  /// The placement schedule()'s first attempt would make on `only` (every node when empty), as
  /// filters and scores see the cluster now, with its diagnosis and explanation (set_explain).
  /// No post-filter (preemption) is tried. `keep` false: nothing changes (no bind plugin runs,
  /// the cluster is left as it was), what a scheduler extender's filter and prioritize ask.
  /// `keep` true: a placement found is bound (bind plugins) and kept on the cluster, as
  /// schedule() keeps it: the extender's bind.
  Status probe(ClusterState& cluster, const JobSpec& job, JobId id, std::vector<TaskPlacement>& out,
               std::span<const NodeId> only, bool keep = false);
  void attach(const ClusterState& cluster, std::span<const JobSpec> workload, const JobsView* jobs) override;
  void job_started(const JobSpec& job, JobId id, std::span<const TaskPlacement> placements) override;
  void job_stopped(const JobSpec& job, JobId id, std::span<const TaskPlacement> placements) override;
  /// Asks every JobEventsPlugin in profile order; the first refusal wins and the plugins that
  /// admitted before it are told the job left.
  Status admit(const JobSpec& job, JobId id) override;
  void job_left(const JobSpec& job, JobId id) override;
  [[nodiscard]] std::span<const JobId> last_victims() const override { return victims_; }
  /// A fair-share order is treated as not node-local too: the narrowed retry's equivalence with
  /// a full retry is only checked (tests/sim/test_properties.cpp) for fixed queue orders.
  /// A partial search (percentage_of_nodes_to_score) depends on where the last one stopped.
  [[nodiscard]] bool node_local() const override {
    return !reads_queue_ && !dynamic_order_ && profile_.percentage_of_nodes_to_score < 0;
  }
  [[nodiscard]] bool dynamic_order() const override { return dynamic_order_; }
  [[nodiscard]] SimTime next_order_change(SimTime now) const override { return queue_sort_->next_order_change(now); }
  [[nodiscard]] std::int32_t queue_level(JobId id) const override { return queue_sort_->queue_level(id); }
  [[nodiscard]] std::uint64_t equivalence_class(const JobSpec& job) const override;
  /// The running jobs, as attached (null before attach()).
  [[nodiscard]] const JobsView* jobs() const { return jobs_; }

  /// Chooses a node and devices for one task without changing the cluster. O(nodes x filters).
  /// `only`: the nodes to consider, sorted by index; empty = every node.
  Status place_task(const ClusterState& cluster, TaskContext& ctx, TaskPlacement& out,
                    std::span<const NodeId> only = {});

  [[nodiscard]] const Profile& profile() const { return profile_; }
  /// The plugins' warnings about their configuration (Plugin::warnings()), in profile order,
  /// each once. Read after attach() for the warnings noted then too.
  [[nodiscard]] std::vector<std::string> warnings() const;

  /// The workload plugins model as the demand (FGD's typical pod types) from the next attach()
  /// on, instead of the jobs being replayed: e.g. the original trace of a resampled workload
  /// (the FGD protocol). Empty: the replayed jobs.
  void set_target_workload(Workload target) { target_ = std::move(target); }

  /// The node index (node_index.hpp): per request class, each node's filter and score answers
  /// are kept until the node changes, so a decision revisits only the nodes that changed. It is
  /// used only when every filter and score plugin gives node-local answers, and never changes a
  /// decision (tests compare event logs with it off). On by default; off = the plain scan of
  /// every node (`--exact-scan`).
  void set_node_index(bool on);
  [[nodiscard]] bool node_index_enabled() const { return use_index_; }

  /// Calls `fn` for every task the scheduler decides for real (not preemption what-ifs), after
  /// deciding, with every considered node's filter verdict and the scores the decision computed
  /// (a task explained is decided by the plain scan, which decides as the node index does).
  /// Nodes get scores only when the decision scored them: not when one node was feasible, nor
  /// past the node where first-fit's search (or percentage_of_nodes_to_score) stopped. Batch
  /// (Python) filters are not shown. Costs a filter pass per task: for what-if reports, not
  /// replays. Empty `fn` turns it off. The decisions do not change (tests compare event logs).
  void set_explain(std::function<void(const DecisionExplanation&)> fn) { explain_ = std::move(fn); }
  /// Counters of the node index, for tests and benchmarks.
  struct IndexStats {
    std::uint64_t decisions = 0;      ///< place_task calls the index answered (placed or not)
    std::uint64_t fallbacks = 0;      ///< calls it could not serve (a job with an app, a narrowed search, ...)
    std::uint64_t node_updates = 0;   ///< node answers recomputed
    std::uint64_t rebuilds = 0;       ///< whole classes recomputed (new, evicted or log overrun)
    std::uint64_t pruned = 0;         ///< node answers settled by the filters' capacity bounds, no plugin called
    std::uint64_t first_feasible = 0; ///< decisions answered by the capacity tree (first feasible node wins)
    std::uint64_t tree = 0;           ///< decisions answered by a class's tree (top total or min-max)
    std::uint64_t normalized = 0;     ///< decisions answered by normalising the cached raw scores of every feasible node
    std::uint64_t ordered = 0;        ///< decisions answered by walking the score plugin's node order (ScorePlugin::orders_nodes)
    std::uint64_t gave_up = 0;        ///< score-order walks past their budget (NodeIndex::walk_budget): the request class answered
    std::uint64_t inherited = 0;      ///< capacity trees and score orders a cluster copy took from its original (no rebuild)
    std::uint64_t bounded = 0;        ///< feasible nodes given their score plugin's bound instead of a score (ScorePlugin::score_bounds)
    std::uint64_t bounds_scored = 0;  ///< of those, scored after all because the bound reached the top
  };
  [[nodiscard]] IndexStats index_stats() const;

 private:
  struct Reject {
    std::string_view plugin, reason;
    std::uint32_t count;
  };
  void note_reject(const Status& s, std::uint32_t count = 1);
  /// Notes a filter's rejection of `node`: every reason it gives in the kube-scheduler diagnosis.
  void note_filter_reject(const FilterPlugin& f, const ClusterState& cluster, const TaskContext& ctx, NodeId node,
                          const Status& s);
  /// The nodes of one search, in the order searched: all (or `only`), from start_ when the
  /// profile sets percentage_of_nodes_to_score.
  std::size_t nodes_to_find(std::size_t nodes) const;
  /// The nodes the last search rejected as Unschedulable by a per-node filter (kube
  /// preemption part): how many, and which while `listed`. A diagnosis read from the node index
  /// lists them only when preemption_message looks at them (resolvable_list_needed).
  struct ResolvableNodes {
    std::vector<NodeId> nodes;
    std::uint32_t count = 0;
    bool listed = true;
    void clear() {
      nodes.clear();
      count = 0;
      listed = true;
    }
    void add(NodeId n) {
      nodes.push_back(n);
      ++count;
    }
  };
  /// Whether preemption_message reads the resolvable nodes themselves for `job`, not only their count.
  [[nodiscard]] bool resolvable_list_needed(const JobSpec& job) const;
  /// What last_diagnosis() reads, saved around what-ifs and failed post-filters.
  struct DiagnosisState {
    std::vector<Reject> rejects;
    std::size_t nodes_seen;
    std::uint32_t rejected_nodes, unresolvable_nodes;
    bool pre_filter_rejected, batch_rejected;
    ResolvableNodes resolvable;
  };
  [[nodiscard]] DiagnosisState diagnosis_state() const {
    return {rejects_, nodes_seen_, rejected_nodes_, unresolvable_nodes_, pre_filter_rejected_, batch_rejected_, resolvable_};
  }
  void restore(const DiagnosisState& d) {
    rejects_ = d.rejects;
    nodes_seen_ = d.nodes_seen;
    rejected_nodes_ = d.rejected_nodes;
    unresolvable_nodes_ = d.unresolvable_nodes;
    pre_filter_rejected_ = d.pre_filter_rejected;
    batch_rejected_ = d.batch_rejected;
    resolvable_ = d.resolvable;
  }
  /// Runs the batch filters over `nodes` (which passed the per-node filters), keeping the
  /// accepted ones in order and noting the rejections.
  void apply_batch_filters(const ClusterState& cluster, const TaskContext& ctx, std::vector<NodeId>& nodes);
  /// set_explain: every considered node's filter verdict (filters are const: asking them again
  /// changes nothing); scores are recorded from the decision's own scoring pass, never asked twice.
  /// Makes explanation_.nodes n long, reusing spare verdicts (their vectors keep capacity).
  void resize_verdicts(std::size_t n);
  /// `from`: the node index's class for the task, whose reject signatures are what the filters
  /// say (the index serves the task); null: the filters are asked.
  void explain_verdicts(const ClusterState& cluster, const TaskContext& ctx, std::span<const NodeId> only,
                        NodeIndexClass* from = nullptr);
  Status place_task_scan(const ClusterState& cluster, TaskContext& ctx, TaskPlacement& out, std::span<const NodeId> only);
  std::vector<std::uint8_t> keep_;
  bool opaque_ = false;   // a plugin gives no equivalence guarantee: every job is its own class
  /// Places the job's tasks inside `st` (reserve + allocate) and runs the permits: Success when
  /// at least min_available tasks were placed and every permit agrees. Binds nothing.
  Status place_job(ClusterState& cluster, const JobSpec& job, JobId id, Statement& st,
                   std::vector<TaskPlacement>& out, std::span<const NodeId> only);
  /// A multi-host TPU slice: one pool's hosts forming the shape (a pre-provisioned pool of
  /// exactly that topology, or a free contiguous block carved from a larger pool), each host
  /// passing every filter. Fills one placement per host; changes nothing.
  Status place_slice(const ClusterState& cluster, const JobSpec& job, JobId id, std::vector<TaskPlacement>& out);
  void index_pools(const ClusterState& cluster);
  struct TpuPool {
    const TpuGeneration* generation = nullptr;
    int chips_per_host = 0;
    TpuTopology topology;
    TpuPoolGrid grid;
    bool provisioned = true;
    std::vector<NodeId> hosts;   // by pool-local index
  };

  Profile profile_;
  std::vector<std::unique_ptr<Plugin>> owned_;
  QueueSortPlugin* queue_sort_ = nullptr;
  std::vector<PreFilterPlugin*> pre_filters_;
  std::vector<FilterPlugin*> filters_;
  std::vector<BatchFilterPlugin*> batch_filters_;   // after the per-node filters, on what they kept
  std::vector<std::pair<ScorePlugin*, double>> scores_;
  DeviceSelectPlugin* device_select_ = nullptr;
  std::vector<ReservePlugin*> reserves_;
  std::vector<PermitPlugin*> permits_;
  std::vector<PostFilterPlugin*> post_filters_;
  std::vector<BindPlugin*> binds_;
  std::vector<JobEventsPlugin*> events_;
  bool reads_queue_ = false;     // a placement plugin reads queue state (quota): not node-local
  bool dynamic_order_ = false;   // the queue sort reads usage (fair share)
  const JobsView* jobs_ = nullptr;
  // kube-scheduler diagnosis with preemption: the priorities of the jobs running on each node
  // (one entry per job and node) and over all nodes, from job events, so the preemption part of
  // a pending reason does not read every running job on every node per failed attempt.
  std::vector<std::multiset<std::int32_t>> node_priorities_;
  std::multiset<std::int32_t> running_priorities_;
  bool priorities_fed_ = false;   // job events arrived (else the JobsView is scanned)
  std::vector<JobId> victims_;
  bool first_feasible_wins_ = false;
  bool ordered_ = false;          // the first score plugin orders the nodes (NodeIndex::ordered_best, ordered_ties)
  std::size_t order_span_ = 1;    // score plugins its order bounds (ScorePlugin::order_with), itself included
  std::vector<double> constants_;   // per decision: the normalised scores of the plugins after the span
  RngStreams streams_;
  Rng tie_rng_;

  // Scratch, reused across calls (no allocation per decision once warm).
  std::vector<NodeId> feasible_;
  std::vector<std::uint64_t> index_key_;   // the filters' FilterPlugin::index_key() for the node index
  std::vector<double> raw_, total_;
  std::vector<double> explained_raw_, explained_norm_;   // [plugin x feasible node], explained decisions
  CycleState cycle_;
  std::vector<Reject> rejects_;
  std::vector<std::string_view> reasons_;   // scratch for FilterPlugin::reasons
  bool kube_diagnosis_ = false;             // profile.diagnosis == kKubeScheduler
  PreFilterPlugin* fit_pre_filter_ = nullptr;   // node-resources-fit's shortcut (not kube-scheduler's)
  bool kube_preemption_ = false;            // kube diagnosis with priority-preemption: add " preemption: ..."
  std::uint32_t rejected_nodes_ = 0;        // nodes the last search rejected (each once)
  bool pre_filter_rejected_ = false;        // the last search stopped at a pre-filter
  std::uint32_t unresolvable_nodes_ = 0;    // nodes rejected as UnschedulableAndUnresolvable (kube preemption part)
  ResolvableNodes resolvable_;
  bool batch_rejected_ = false;             // a batch filter rejected nodes (their codes are not kept)
  std::string preemption_msg_;              // DefaultPreemption's part of the last diagnosis ("" = none)
  /// What DefaultPreemption would add after the job failed, when gpusched can tell it exactly
  /// (see docs/policies.md); "" otherwise.
  [[nodiscard]] std::string preemption_message(const ClusterState& cluster, const JobSpec& job) const;
  std::size_t start_ = 0;                   // kube-scheduler's nextStartNodeIndex (percentage_of_nodes_to_score)
  std::function<void(const DecisionExplanation&)> explain_;   // set_explain
  bool explaining_ = false;                 // the current task is being explained (explanation_)
  DecisionExplanation explanation_;
  std::vector<NodeVerdict> spare_verdicts_;   // verdicts a smaller explanation gave back, vectors kept
  std::vector<std::size_t> verdict_of_;     // node -> its index in explanation_.nodes (explaining_)
  bool rotate_ = false;                     // the current search may move start_ (a real attempt, not a what-if)
  std::size_t nodes_seen_ = 0;
  Status last_status_;
  std::vector<TpuPool> pools_;
  Workload target_;
  const ClusterState* pools_for_ = nullptr;
  std::size_t pools_nodes_ = 0;
  bool use_index_ = true;
  bool diagnose_ = true;          // false: a failed search need not say why (schedule()'s unnarrowed look)
  bool index_eligible_ = false;   // no batch filter, no opaque plugin (node-locality is asked per job)
  bool index_tree_ = false;       // every score plugin's normalize is the identity: a max tree
  [[nodiscard]] bool index_usable(const JobSpec& job) const;
  [[nodiscard]] bool exhaustive_for(const JobSpec& job) const;   // some plugin's Plugin::exhaustive_for
  /// Whether a filter listed at or after the first exhaustive one gives capacity bounds.
  [[nodiscard]] bool bounds_reach_exhaustive(const ClusterState& cluster, const TaskContext& ctx) const;
  void note_reasons(const NodeIndexSignature& g, std::uint32_t count);
  void note_signature(const NodeIndexSignature& g, NodeId node, std::uint32_t count);
  Status finish(const ClusterState& cluster, const TaskContext& ctx, NodeId chosen, TaskPlacement& out);
  Status diagnose_from_index(NodeIndexClass& c, const JobSpec& job);
  std::vector<std::uint8_t> sig_resolvable_, sig_met_;   // scratch of diagnose_from_index
  std::unique_ptr<NodeIndex> index_;
};

}  // namespace gpusched::policies
