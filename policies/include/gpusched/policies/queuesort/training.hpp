#pragma once
/// Queue orders of the deep-learning training schedulers (issue 17; docs/tiresias.md): the
/// baselines of Tiresias (Gu et al., NSDI'19) and of the papers that compare against it. Each is
/// a queue-sort plugin; with `"queueing": "preemptive"` the engine orders running and waiting
/// jobs together by it at every event and preempts the jobs that lose their room.
///
///   sjf     fewest GPUs first (the job's GPU share: tasks x GPUs, a share counts its fraction)
///   srtf    least remaining time first (the duration is known: an oracle)
///   srsf    least remaining time x GPUs first
///   las     discretized least attained service: attained time, in queues split at `thresholds`
///   2d-las  the same on attained GPU-time (Tiresias' 2D-LAS)
///   gittins highest Gittins index of attained GPU-time first, from a service distribution
///
/// Ties go to the earlier submission, then the lower job id (FIFO), so an order never depends
/// on the order jobs were compared in.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <gpusched/policies/framework/plugin.hpp>

namespace gpusched::policies {

/// The job's GPU share when all its tasks run: tasks x whole GPUs, or tasks x milli / 1000.
[[nodiscard]] double job_gpus(const JobSpec& spec);

/// What the training orders share: the workload and the engine's view of each job's progress.
class TrainingOrder : public QueueSortPlugin, public JobEventsPlugin {
 public:
  /// The order reads the jobs' progress: the engine sorts its queue again every cycle.
  [[nodiscard]] bool reads_queue() const override { return true; }
  void attach(const ClusterState& cluster, std::span<const JobSpec> workload, const JobsView* jobs) override;

 protected:
  [[nodiscard]] static bool fifo(const JobSpec& a, JobId ia, const JobSpec& b, JobId ib) {
    if (a.submit != b.submit) return a.submit < b.submit;
    return ia < ib;
  }
  /// The job's GPUs: those its tasks hold while it runs when they come from a DRA claim (whose
  /// size may depend on the node: firstAvailable alternatives, All), else what it asks for.
  [[nodiscard]] double gpus(const JobSpec& s, JobId j) const;
  const JobsView* jobs_ = nullptr;
  std::span<const JobSpec> workload_;
};

class SjfOrder final : public TrainingOrder {
 public:
  [[nodiscard]] std::string_view name() const override { return "sjf"; }
  [[nodiscard]] bool less(const JobSpec& a, JobId ia, const JobSpec& b, JobId ib) const override;
};

/// srtf (weight_gpus false) and srsf (true).
class RemainingOrder final : public TrainingOrder {
 public:
  explicit RemainingOrder(bool weight_gpus) : weight_gpus_(weight_gpus) {}
  [[nodiscard]] std::string_view name() const override { return weight_gpus_ ? "srsf" : "srtf"; }
  [[nodiscard]] bool less(const JobSpec& a, JobId ia, const JobSpec& b, JobId ib) const override;
  void attach(const ClusterState& cluster, std::span<const JobSpec> workload, const JobsView* jobs) override;

 private:
  [[nodiscard]] double key(const JobSpec& s, JobId j) const;
  bool weight_gpus_;
  // Keys computed at one instant (a sort compares each job O(log n) times; work done moves only
  // with time).
  mutable std::vector<double> key_;
  mutable std::vector<SimTime> key_at_;
};

/// Follows each job's attained service (time, or GPU-time) as it runs, to say when it crosses a
/// given amount: the base of the LAS and Gittins orders.
class ServiceOrder : public TrainingOrder {
 public:
  ServiceOrder(bool gpu_time) : gpu_time_(gpu_time) {}
  void attach(const ClusterState& cluster, std::span<const JobSpec> workload, const JobsView* jobs) override;
  void job_started(const JobSpec& job, JobId id, std::span<const TaskPlacement> placements) override;
  void job_stopped(const JobSpec& job, JobId id, std::span<const TaskPlacement> placements) override;

 protected:
  /// Attained service now (microseconds or GPU-microseconds): the engine's figure at the job's
  /// last start or stop, plus what the current run has added since (followed here: a sort asks
  /// for it O(log n) times per job).
  [[nodiscard]] double service(JobId j) const {
    const auto& r = run_[j.value];
    if (!r.running) return r.service_at_start;
    const SimTime now = jobs_->now();
    return now > r.from ? r.service_at_start + static_cast<double>((now - r.from).us) * r.rate : r.service_at_start;
  }
  /// The engine's figure (JobsView::attained_us / attained_gpu_us).
  [[nodiscard]] double engine_service(JobId j) const { return gpu_time_ ? jobs_->attained_gpu_us(j) : jobs_->attained_us(j); }
  /// When the running job `j` reaches `amount` of service (amount above what it has now), to
  /// the microsecond above.
  [[nodiscard]] SimTime reaches(JobId j, double amount) const;
  struct Run {
    SimTime from = SimTime::zero();  ///< when the current run's service starts accruing
    double service_at_start = 0.0;   ///< service then (not running: at its last stop)
    double rate = 0.0;               ///< service per microsecond while it runs (1, or its GPUs)
    bool running = false;
  };
  std::vector<Run> run_;
  std::vector<JobId> running_;   ///< jobs running now, in start order
  bool gpu_time_;
};

/// las / 2d-las: queue k holds the jobs whose service since their last promotion lies in
/// [thresholds[k-1], thresholds[k]); the first queue first. Inside a queue, running jobs come
/// before waiting ones (so a job is never preempted by one of its own queue: the Tiresias
/// simulator's rule, `within_queue: "running-first"`), each group FIFO by the time the job
/// entered the queue (its submission, promotion, or threshold crossing); `"fifo"` orders a queue
/// by that time alone, running or not. With starvation_k > 0, a
/// waiting job in a lower queue that has waited starvation_k x its attained time (since its
/// last promotion; time, not GPU-time) since it last ran returns to the first queue.
class LasOrder final : public ServiceOrder {
 public:
  LasOrder(bool gpu_time, std::vector<double> thresholds_s, double starvation_k, bool running_first = true);
  [[nodiscard]] std::string_view name() const override { return gpu_time_ ? "2d-las" : "las"; }
  void attach(const ClusterState& cluster, std::span<const JobSpec> workload, const JobsView* jobs) override;
  void job_started(const JobSpec& job, JobId id, std::span<const TaskPlacement> placements) override;
  void job_stopped(const JobSpec& job, JobId id, std::span<const TaskPlacement> placements) override;
  void job_left(const JobSpec& job, JobId id) override;
  [[nodiscard]] bool less(const JobSpec& a, JobId ia, const JobSpec& b, JobId ib) const override;
  [[nodiscard]] SimTime next_order_change(SimTime now) const override;
  [[nodiscard]] std::int32_t queue_level(JobId id) const override;
  /// Times job `id` returned to the first queue (starvation).
  [[nodiscard]] std::uint32_t promotions(JobId id) const { return state_[id.value].promotions; }

 private:
  struct State {
    SimTime entered = SimTime::zero();   ///< when it entered its queue
    SimTime stopped = SimTime::forever();   ///< when it last stopped running (forever: never ran or runs)
    SimTime seen = SimTime::forever();   ///< the last refresh
    double base = 0.0;                   ///< service at its last promotion
    double base_time = 0.0;              ///< attained time at its last promotion
    std::uint32_t promotions = 0;
    std::int32_t level = 0;
    bool left = false;                   ///< completed or failed: its queue stays as it ended
  };
  /// Brings the job's queue up to `now`: demotions past thresholds, a promotion that came due.
  void refresh(JobId j, SimTime now) const;
  /// A waiting job's promotion time (forever: none due).
  [[nodiscard]] SimTime promotion_due(JobId j) const;
  std::vector<double> thresholds_;   // service units (us or GPU-us)
  double starvation_k_;
  bool running_first_;
  mutable std::vector<State> state_;
  std::vector<JobId> waiting_;   // stopped jobs that ran before (starvation candidates)
};

/// gittins: a job's priority is the Gittins index of its attained service a, taken at the last
/// multiple of the quantum Q below it (so the order changes only when a running job crosses one):
///   G(a) = P(S - a <= Q | S > a) / E[min(S - a, Q) | S > a]
/// over the service distribution S: the samples of a file (one per line), or the trace's jobs
/// (duration x GPUs for GPU-time). A job past every sample gets 0. Higher index first; among
/// equal indexes running jobs first (`within_queue: "running-first"`, as las), then FIFO.
class GittinsOrder final : public ServiceOrder {
 public:
  GittinsOrder(bool gpu_time, double quantum_s, std::vector<double> samples_s, bool running_first = true);
  [[nodiscard]] std::string_view name() const override { return "gittins"; }
  void attach(const ClusterState& cluster, std::span<const JobSpec> workload, const JobsView* jobs) override;
  [[nodiscard]] bool less(const JobSpec& a, JobId ia, const JobSpec& b, JobId ib) const override;
  [[nodiscard]] SimTime next_order_change(SimTime now) const override;
  [[nodiscard]] std::int32_t queue_level(JobId id) const override;
  /// The index for attained service `a` (seconds or GPU-seconds), from the distribution in use.
  [[nodiscard]] double index(double a_s) const;

 private:
  [[nodiscard]] double index_us(double a) const;
  [[nodiscard]] double key(JobId j) const;
  mutable std::vector<double> key_;       // per job: the index of its band...
  mutable std::vector<double> key_band_;  // ...and that band (-1: none yet)
  double quantum_;                  // service units
  bool running_first_;
  std::vector<double> given_;       // samples from a file (service units); empty: the trace's
  std::vector<double> samples_;     // sorted
  std::vector<double> prefix_;      // prefix_[i] = sum of samples_[0..i)
};

/// Service samples for `gittins`: one number per line (seconds or GPU-seconds); `#` comments
/// and an optional header line. Errors name the file, line and field (trace errors).
[[nodiscard]] std::vector<double> read_service_distribution(const std::string& path);

}  // namespace gpusched::policies
