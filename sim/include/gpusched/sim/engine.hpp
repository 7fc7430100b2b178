#pragma once
/// The discrete-event engine: an ordinary object (no globals), so many can run in one process.
///
/// Jobs arrive, wait in the queue, are placed through the SchedulingHook, run for their
/// duration (or forever in fill mode), finish and release. Waiting jobs are retried when
/// capacity frees. A horizon ends the run.
///
/// Elastic gangs (min_available < tasks) start once min_available tasks fit; the tasks that did
/// not fit are placed later, when capacity frees, after the waiting jobs had their turn
/// (Volcano: a ready job's pending tasks are allocated one by one, and the gang plugin orders
/// ready jobs after those still short of their minimum). Tasks run in lockstep: a job placed in
/// parts ends when its work is done, all its tasks with it.
///
/// Example:
///   sim::Engine engine(cluster, workload, scheduler, {});
///   sim::MetricsCollector metrics(SimTime::from_seconds(60));
///   engine.add_observer(&metrics);
///   engine.run();
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include <gpusched/cluster.hpp>
#include <gpusched/job.hpp>
#include <gpusched/scheduling.hpp>
#include <gpusched/sim/event_queue.hpp>
#include <gpusched/sim/observer.hpp>

namespace gpusched::sim {

enum class JobState : std::uint8_t { kNotArrived, kPending, kRunning, kCompleted, kFailed };
std::string_view to_string(JobState s);

/// A node going down or coming back at a given time, or (with `taint`) a taint added to it or
/// removed from it. A NoExecute taint evicts the running jobs that do not tolerate it.
struct NodeEvent {
  SimTime time;
  NodeId node;
  bool up = false;
  std::optional<Taint> taint;   ///< set: a taint event (`up` is ignored)
  bool untaint = false;         ///< with `taint`: remove taints with its key and effect
};

/// What an evicted (preempted) job keeps of its work when it runs again.
enum class RestartPolicy : std::uint8_t {
  kFromZero,     ///< all progress is lost
  kCheckpoint,   ///< progress up to the last multiple of checkpoint_interval is kept
  kResume,       ///< all progress is kept (the preemptive queueing mode's default)
};
std::string_view to_string(RestartPolicy r);

/// In which order waiting jobs may start (an action of the scheduling cycle).
enum class QueuePolicy : std::uint8_t {
  kGreedy,        ///< in queue order, every job that fits starts (Kubernetes)
  kStrictFifo,    ///< in queue order; the first job that does not fit blocks the rest
  kEasyBackfill,  ///< EASY backfilling (Slurm, Maui): the first job that does not fit gets a
                  ///< reservation at its earliest start; later jobs start only if they do not delay it
  kPreemptive,    ///< preemptive reallocation (Tiresias, SRTF): at every event all jobs, running and
                  ///< waiting, are ordered by the queue sort; in that order running jobs keep their
                  ///< place and waiting ones start where they fit, taking the room of jobs after them
                  ///< when needed (the last in the order first); the jobs that lost their room are
                  ///< preempted (Engine::place_preempting)
};
std::string_view to_string(QueuePolicy q);

/// Which time orders a gang requeued after a PodsReady timeout among the waiting jobs (Kueue
/// `requeuingStrategy.timestamp`).
enum class RequeueTimestamp : std::uint8_t {
  kEviction,   ///< the time of the timeout: behind the jobs of its priority already waiting (Kueue's default)
  kCreation,   ///< its submission: back to its original place
};

/// Kueue's `waitForPodsReady` for gangs (min_available > 1): a gang not started within `timeout`
/// of entering the queue (its submission, the end of its backoff, or its eviction) leaves the
/// queue for a backoff of min(backoff_base x 2^(n-1), backoff_max) after its n-th timeout and
/// comes back; the timeout that would be requeue number backoff_limit_count + 1 deactivates it
/// (it fails with the reason). Kueue times an admitted workload whose pods are not all ready;
/// gpusched places a gang all at once, so "not ready" is "not started", and the time it waits
/// for quota counts too. No jitter (Kueue adds at most 0.01%).
struct WaitForPodsReady {
  bool enabled = false;
  SimTime timeout = SimTime::from_seconds(300);        ///< Kueue's default: 5 min
  SimTime backoff_base = SimTime::from_seconds(60);    ///< backoffBaseSeconds
  SimTime backoff_max = SimTime::from_seconds(3600);   ///< backoffMaxSeconds
  std::optional<std::uint32_t> backoff_limit_count;    ///< none: requeued forever
  RequeueTimestamp timestamp = RequeueTimestamp::kEviction;
  /// The backoff after the n-th requeue (n >= 1), in microseconds.
  [[nodiscard]] SimTime backoff(std::uint32_t n) const;
};

/// How evictions cost: restart policy and checkpoint period.
struct PreemptionConfig {
  RestartPolicy restart = RestartPolicy::kFromZero;
  SimTime checkpoint_interval = SimTime::from_seconds(600);   ///< kCheckpoint: K minutes
  /// Time a job restarted after an eviction spends restoring before it makes progress again
  /// (it holds its resources meanwhile); a job's own `restart_overhead` replaces it. 0: none.
  SimTime restart_overhead = SimTime::zero();
};

struct EngineConfig {
  SimTime horizon = SimTime::forever();   ///< events after this are not processed
  bool fill_mode = false;                 ///< arrival-only: placed jobs never finish
  bool retry = true;                      ///< false: a job that does not fit on arrival fails
  bool requeue_on_node_down = true;       ///< false: jobs on a failed node fail
  /// Within one cycle, skip a job whose SchedulingHook::equivalence_class() already failed.
  bool skip_equivalent = true;
  /// Retry a waiting job (min_available == 1) only on the nodes that gained capacity since it
  /// last failed (exact: nothing else can have become feasible). Gangs are retried on every
  /// node. false: every retry scans every node.
  bool retry_changed_nodes_only = true;
  /// kPreemptive: skip the walk over every job when no job waits, and start a lone arrival that
  /// fits as things are without it (the walk would decide the same). false: every event walks.
  bool preemptive_shortcuts = true;
  std::vector<NodeEvent> node_events;
  PreemptionConfig preemption;
  QueuePolicy queue_policy = QueuePolicy::kGreedy;
  /// Kueue's waitForPodsReady (off by default). A job's own `gang_timeout` is gpusched's gang
  /// deadline: the job fails for good when it has not started that long after submission.
  WaitForPodsReady wait_for_pods_ready;
};

/// What the engine knows about one job at any moment. (Members ordered by size, so that a
/// million of them take 128 MB rather than 144 MB.)
struct JobRuntime {
  SimTime start = SimTime::forever();
  SimTime end = SimTime::forever();
  std::vector<TaskPlacement> placements;
  EventId finish_event = 0;
  SimTime running_since = SimTime::forever();   ///< work starts (after a MIG reconfiguration delay)
  double work_left_us = 0.0;      ///< nominal work still to do (duration at full speed)
  double rate = 1.0;              ///< nominal work per simulated microsecond now (1 = full speed)
  double work_kept_us = 0.0;       ///< progress kept from earlier runs (checkpoints)
  double lost_work_us = 0.0;       ///< nominal work lost to evictions, all runs
  double lost_gpu_hours = 0.0;     ///< that work times the GPU share it held (grants' milli / 1000)
  double attained_us = 0.0;        ///< time run in earlier runs, restart overheads left out (attained service)
  double attained_gpu_us = 0.0;    ///< the same in GPU-microseconds (time x GPU share held)
  double overhead_paid_us = 0.0;   ///< restart overhead spent in earlier runs (cut short when preempted again)
  std::uint64_t starts_at_requeue = 0;  ///< waitForPodsReady: the engine's job starts at its last requeue
  std::uint32_t attempts = 0;      ///< times the job started (requeues add one)
  std::uint32_t reason = 0;        ///< index into reasons(): why it is pending / failed (0 = none)
  std::uint32_t evictions = 0;     ///< times it was preempted or evicted while running
  std::uint32_t preemptions = 0;   ///< of those, preemptions (by a scheduler or the preemptive mode)
  std::uint32_t requeues = 0;      ///< times waitForPodsReady put it back in the queue (timeouts)
  std::uint32_t timer_generation = 0;   ///< waitForPodsReady: only the latest timer counts
  JobState state = JobState::kNotArrived;
  bool rejected = false;           ///< refused at submission (SchedulingHook::admit); state kFailed
  bool deactivated = false;        ///< waitForPodsReady gave up on it (backoff limit); state kFailed
  bool backing_off = false;        ///< pending but out of the queue until its backoff ends
};

class Engine final : public JobsView {
 public:
  /// `cluster`, `workload` and `hook` must outlive the engine. Jobs must be sorted by submit time.
  Engine(ClusterState& cluster, std::span<const JobSpec> workload, SchedulingHook& hook, EngineConfig config);

  void add_observer(Observer* o) { observers_.push_back(o); }
  /// Calls `fn(now)` at simulated time `t` (a Timer event). Usable before or during run().
  void call_at(SimTime t, std::function<void(SimTime)> fn);
  /// Runs to the end (no events left) or to the horizon. `progress(f)` is called now and then
  /// with f in [0, 1]. May be called once.
  void run(const std::function<void(double)>& progress = {});

  [[nodiscard]] SimTime now() const override { return now_; }
  // JobsView: what schedulers may read about running jobs.
  [[nodiscard]] std::span<const JobId> running_on(NodeId n) const override { return on_node_[n.value]; }
  [[nodiscard]] const JobSpec& spec(JobId j) const override { return workload_[j.value]; }
  [[nodiscard]] std::span<const TaskPlacement> placements(JobId j) const override { return jobs_[j.value].placements; }
  [[nodiscard]] SimTime started(JobId j) const override { return jobs_[j.value].start; }
  [[nodiscard]] double work_lost_us(JobId j) const override;
  [[nodiscard]] double attained_us(JobId j) const override;
  [[nodiscard]] double attained_gpu_us(JobId j) const override;
  [[nodiscard]] double work_done_us(JobId j) const override;
  [[nodiscard]] SimTime progress_from(JobId j) const override;
  /// Restart overhead job `j` has spent so far (seconds): at each start after an eviction, until
  /// restored or preempted again.
  [[nodiscard]] double overhead_s(JobId j) const;
  /// The GPU share a running job holds (grants' milli / 1000, all tasks).
  [[nodiscard]] double held_gpus(JobId j) const;
  /// Restart overheads spent by all stopped runs, in GPU-hours (each x the GPUs held meanwhile).
  [[nodiscard]] double overhead_gpu_hours() const { return overhead_gpu_hours_; }
  /// The job's queue under the hook's multi-level order (SchedulingHook::queue_level; -1: none).
  [[nodiscard]] std::int32_t queue_level(JobId j) const { return hook_->queue_level(j); }
  /// Jobs evicted so far (preemption, reclaim, NoExecute taints, node failures with requeue),
  /// and the GPU-hours of work those evictions lost.
  [[nodiscard]] std::uint64_t evictions() const { return evictions_; }
  [[nodiscard]] double lost_gpu_hours() const { return lost_gpu_hours_; }
  [[nodiscard]] std::uint64_t preemptions() const { return preemptions_; }
  /// waitForPodsReady: requeues after a timeout, all jobs; jobs refused at submission.
  [[nodiscard]] std::uint64_t pods_ready_requeues() const { return pods_ready_requeues_; }
  [[nodiscard]] std::uint64_t rejected() const { return rejected_; }
  [[nodiscard]] const ClusterState& cluster() const { return *cluster_; }
  [[nodiscard]] std::span<const JobSpec> workload() const { return workload_; }
  [[nodiscard]] const JobRuntime& job(JobId j) const { return jobs_[j.value]; }
  [[nodiscard]] std::span<const JobRuntime> jobs() const { return jobs_; }
  [[nodiscard]] const std::string& reason(std::uint32_t i) const { return reasons_[i]; }
  /// Jobs waiting: in the queue, or out of it for a waitForPodsReady backoff.
  [[nodiscard]] std::size_t pending_count() const { return pending_.size() + backing_off_; }
  /// Jobs waiting after the last cycle, in queue order.
  [[nodiscard]] std::span<const JobId> pending_jobs() const { return pending_; }
  /// Brings node `n` up (or takes it down, requeueing its jobs) at time `t` >= now(); usable
  /// during run() (the cluster autoscaler adds and removes nodes this way).
  void push_node_event(SimTime t, NodeId n, bool up);
  /// EASY backfill: the reserved job and its reserved start after the last cycle (forever: none).
  [[nodiscard]] std::pair<JobId, SimTime> reservation() const { return {reserved_job_, reserved_at_}; }
  [[nodiscard]] std::size_t running_count() const { return running_; }
  [[nodiscard]] std::uint64_t events_processed() const { return events_processed_; }
  [[nodiscard]] std::uint64_t schedule_attempts() const { return attempts_; }
  [[nodiscard]] const EngineConfig& config() const { return config_; }

 private:
  void handle(const EventQueue::Entry& e, bool& capacity_freed);
  // Arrivals are not in the event queue: they come in submit order from the workload, each with
  // the id it would have had there (arrival_base_ + job), merged with the queue by (time, id).
  [[nodiscard]] bool arrival_next();
  [[nodiscard]] bool events_left() { return next_arrival_ < workload_.size() || !queue_.empty(); }
  [[nodiscard]] SimTime next_event_time() { return arrival_next() ? workload_[next_arrival_].submit : queue_.next_time(); }
  EventQueue::Entry next_event();
  void schedule_cycle(bool full);
  /// kPreemptive: one reallocation over every running and waiting job (see QueuePolicy).
  void preemptive_cycle();
  /// kPreemptive: tries `j` where jobs at positions > `pos` of active_ lose their room if they
  /// must. The candidates are listed in the order, those that fit when GPUs are only counted
  /// (by_count_) first; they leave from the last listed until `j` fits. Then those not on its
  /// nodes, and the others in the listed order while it still fits, get their room back. On
  /// success the placement is allocated, the victims released and listed in `victims`.
  bool place_preempting(JobId j, std::size_t pos, std::vector<JobId>& victims);
  /// The restart overhead of job `j` in microseconds, and that of its current run (0 for a
  /// first start).
  [[nodiscard]] std::int64_t restart_overhead_us(JobId j) const;
  [[nodiscard]] std::int64_t run_overhead_us(JobId j) const;
  /// kPreemptive: a Reorder event at the hook's next_order_change while jobs wait (else none).
  void schedule_reorder();
  /// The GPU share (milli) a waiting job needs at least (Engine::preemptive_cycle's bounds).
  [[nodiscard]] std::int64_t gpu_milli_needed(const JobSpec& spec) const;
  std::int32_t whole_gpu_min_milli_ = -1;   // smallest grant of one whole GPU (time-slicing/MPS replicas)
  void start_job(JobId j, std::vector<TaskPlacement>& placements);
  /// Stops a running job: releases its resources (unless the scheduler already did, for
  /// preemption victims) and tells the hook.
  void stop_job(JobId j, bool release = true);
  /// A job of a shared DRA claim (JobConstraints::resource_claim) that holds the claim's devices
  /// hands them to another running job of the claim before it releases its tasks: `released` gets
  /// its placements less the devices handed over. False: nothing was handed over.
  bool hand_over_claim(JobId j, std::vector<TaskPlacement>& released);
  /// Stops a running job that did not finish and puts it back in the queue, keeping what its
  /// restart policy keeps. `released`: the scheduler already gave its resources back.
  void evict(JobId j, const std::string& why, bool released);
  /// Work done so far in this run plus earlier runs' kept work (nominal microseconds), and what
  /// would be kept after an eviction now.
  std::pair<double, double> progress(JobId j) const;
  /// A gang still waiting `gang_timeout` after its submission fails (gpusched's gang deadline).
  void gang_timeout(JobId j);
  /// waitForPodsReady: starts the timeout of a gang that just entered the queue.
  void arm_pods_ready(JobId j);
  /// waitForPodsReady: the timeout of `j` (armed as `generation`) ran out.
  void pods_ready_timeout(JobId j, std::uint32_t generation);
  /// waitForPodsReady: the backoff of `j` ended; it enters the queue again.
  void backoff_done(JobId j, std::uint32_t generation);
  /// The job leaves for good: the hook releases what admit() charged.
  void left(JobId j) { hook_->job_left(workload_[j.value], j); }
  /// The spec the queue order sees (a requeued gang's timestamp may differ from its submit).
  const JobSpec& order_spec(JobId j) const {
    return order_override_.empty() || !order_override_[j.value] ? workload_[j.value] : *order_override_[j.value];
  }
  /// The job's speed now: 1 / its placements' slowdown, times the interference on its
  /// time-sliced / MPS GPUs.
  double job_rate(JobId j) const;
  /// Re-times the running jobs sharing GPUs with `placements` (after a sharer came or went).
  void retime_sharers(const std::vector<TaskPlacement>& placements, JobId except);
  void retime(JobId j);
  /// Whether `spec` uses a shared DRA claim's devices (a ResourceClaim that takes GPUs or GIs).
  static bool uses_claim_devices(const JobSpec& spec);
  /// Whether job k runs and names the shared ResourceClaim `claim`.
  bool runs_with_claim(JobId k, const CompactString& claim) const;
  /// Re-times the other running jobs of `j`'s shared claim (after j came or went).
  void retime_claim_users(JobId j);
  std::uint32_t flat_gpu(const TaskPlacement& p, const GpuGrant& g) const {
    return cluster_->node(p.node).gpu_begin + g.index;
  }
  std::uint32_t intern_reason(std::string r);
  void mark_dirty(NodeId n);

  ClusterState* cluster_;
  std::span<const JobSpec> workload_;
  SchedulingHook* hook_;
  EngineConfig config_;
  EventQueue queue_;
  std::size_t next_arrival_ = 0;   // the next job to arrive (workload order = submit order)
  EventId arrival_base_ = 0;       // event id of job 0's arrival
  std::vector<JobRuntime> jobs_;
  std::vector<JobId> pending_;       // queue order (hook_->before)
  std::vector<JobId> arrived_;       // arrivals of the current instant, not yet tried
  std::vector<JobId> tried_, still_pending_, merged_;   // schedule_cycle()'s lists, kept for their buffers
  std::vector<std::function<void(SimTime)>> timers_;
  std::vector<Observer*> observers_;
  std::vector<std::string> reasons_{""};
  std::unordered_map<std::string, std::uint32_t> reason_index_{{"", 0}};
  std::vector<std::uint64_t> class_;                            // per job: equivalence class
  std::unordered_map<std::uint64_t, std::uint32_t> failed_;     // per cycle: class -> reason
  std::vector<std::uint8_t> fresh_;       // per job: not yet tried since it (re)entered the queue
  std::vector<std::uint8_t> dirty_flag_;  // per node: gained capacity since the last cycle
  std::vector<NodeId> dirty_;
  std::vector<TaskPlacement> scratch_;
  /// EASY backfill: the earliest time the job fits if running jobs end at their estimates,
  /// leaving the cluster as it would be then in `shadow_`. forever: never (not even when all end).
  SimTime reserve(JobId head);
  /// EASY backfill: may `j`, just placed at `p`, keep its place without delaying the reservation?
  bool backfill_allowed(JobId j, const std::vector<TaskPlacement>& p);
  /// The backfill scratch cluster, when a reservation holds (shadow_ok_). Kept between
  /// reservations and refreshed by copy assignment, which reuses its buffers (a new copy
  /// allocates every node's spec again).
  ClusterState* shadow() { return shadow_ok_ ? &*shadow_store_ : nullptr; }
  void drop_shadow() { shadow_ok_ = false; }
  std::optional<ClusterState> shadow_store_;
  bool shadow_ok_ = false;
  std::vector<NodeId> reserved_nodes_;   // sorted: where the reserved job would run
  std::vector<NodeId> unreserved_nodes_;   // the others, in node order (built when first needed)
  bool unreserved_ok_ = false;
  JobId reserved_job_{};
  JobId backfill_reason_job_{};           // the reserved job backfill_reason_ names
  std::uint32_t backfill_reason_ = 0;     // interned "backfill: would delay ..." (0: none yet)
  SimTime reserved_at_ = SimTime::forever();
  /// Running jobs with a finite estimate, sorted by (estimated_end, job); kept only where
  /// reserve() reads it (EASY backfill, not in fill mode): each start and stop moves O(running)
  /// entries, 10% of a 10,000-node greedy replay when it was kept for every queueing mode.
  /// Each entry holds its estimated end, so reserve() reads the list front to back without
  /// touching the jobs (a cache miss per running job was a third of a slurm-backfill run).
  std::vector<std::pair<SimTime, JobId>> running_list_;
  std::vector<JobId> past_ends_;   // reserve()'s scratch: jobs past their estimate, by job
  // kPreemptive: every running and waiting job, in the order of the last cycle (a stable sort
  // keeps ties as they were); per job: in active_, and this cycle's decision.
  std::vector<JobId> active_;
  std::vector<std::uint8_t> in_active_, decided_;
  std::vector<std::uint8_t> by_count_;   // kPreemptive: 1 if the job fits when GPUs are only counted, in order
  std::vector<std::int64_t> count_after_;   // kPreemptive: scratch of the counted pass
  std::vector<std::pair<JobId, std::vector<TaskPlacement>>> started_;   // this cycle's starts
  std::vector<std::pair<JobId, JobId>> victims_;                        // (victim, preemptor)
  SimTime reorder_at_ = SimTime::forever();   // the Reorder event pending (forever: none)
  EventId reorder_event_ = 0;
  std::uint32_t reorder_generation_ = 0;
  bool reorder_due_ = false;
  double overhead_gpu_hours_ = 0.0;
  [[nodiscard]] bool tracks_ends() const {
    return !config_.fill_mode && config_.queue_policy == QueuePolicy::kEasyBackfill;
  }
  std::vector<std::vector<JobId>> on_node_;    // per node: running jobs with a task there
  /// Per running job: the GPUs a shared DRA claim's holder handed it, and when (hand_over_claim):
  /// its restore overhead and lost work count them only from then on.
  std::unordered_map<std::uint32_t, std::vector<std::pair<SimTime, double>>> received_;
  std::vector<JobId> requeued_;                 // evicted in this cycle: tried again after it
  /// Starts `j` at the placements in scratch_ after a successful schedule(): evicts the
  /// hook's victims first (already released) and announces them, then starts it.
  void start_placed(JobId j);
  /// Elastic gangs: places the missing tasks of running jobs where capacity allows (no
  /// eviction), in queue order.
  void grow_elastic();
  std::vector<std::pair<JobId, std::uint32_t>> deferred_requeues_;   // victims stopped, not yet announced
  std::vector<JobId> growing_;            // running elastic jobs with tasks not placed, start order
  std::size_t running_events_ = 0;        // JobRunning events in the queue (stale ones too)
  std::uint64_t evictions_ = 0, preemptions_ = 0, pods_ready_requeues_ = 0, rejected_ = 0;
  std::size_t backing_off_ = 0;
  std::size_t ready_timers_ = 0;   // waitForPodsReady and backoff timers in the event queue (stale ones too)
  std::uint64_t starts_ = 0;       // job starts so far (waitForPodsReady: did anything change?)
  std::vector<std::unique_ptr<JobSpec>> order_override_;   // empty unless a gang was requeued
  double lost_gpu_hours_ = 0.0;
  std::vector<std::vector<JobId>> sharers_;   // per flat GPU (time-slicing / MPS only): running jobs
  std::size_t running_ = 0;
  SimTime now_ = SimTime::zero();
  std::uint64_t events_processed_ = 0;
  std::uint64_t attempts_ = 0;
  bool ran_ = false;
};

}  // namespace gpusched::sim
