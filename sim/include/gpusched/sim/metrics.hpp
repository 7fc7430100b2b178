#pragma once
/// Metrics: a time series sampled at a fixed interval, exact time-weighted allocation, and the
/// run summary (counts, wait and JCT percentiles, makespan).
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <gpusched/sim/engine.hpp>
#include <gpusched/sim/observer.hpp>

namespace gpusched::sim {

/// One row of the time series: the state that held at time `t`.
struct TimeSample {
  SimTime t;
  double gpu_alloc_pct = 0;     ///< allocated GPU milli / total GPU milli
  double gpus_busy_pct = 0;     ///< GPUs with at least one task / all GPUs
  double cpu_alloc_pct = 0;
  double memory_alloc_pct = 0;
  std::int64_t pending_jobs = 0;
  std::int64_t running_jobs = 0;
};

/// Mean and nearest-rank percentiles of a set of durations, in seconds.
struct Distribution {
  std::int64_t count = 0;
  double mean_s = 0, p50_s = 0, p95_s = 0, p99_s = 0, max_s = 0;
  static Distribution of(std::vector<std::int64_t> values_us);
};
void to_json(nlohmann::json& j, const Distribution& d);

struct Summary {
  std::int64_t jobs = 0, completed = 0, failed = 0, running = 0, pending = 0, not_arrived = 0;
  std::int64_t requeued = 0;               ///< jobs put back in the queue (evicted or node down)
  std::int64_t rejected = 0;               ///< refused at submission (ResourceQuota at creation); counted in failed
  std::int64_t deactivated = 0;            ///< waitForPodsReady gave up after its backoff limit; counted in failed
  std::int64_t partial = 0;                ///< elastic gangs that completed with fewer tasks than asked; counted in completed
  std::int64_t pods_ready_requeues = 0;    ///< waitForPodsReady timeouts that put a gang back in the queue
  std::int64_t preemptions = 0;            ///< jobs evicted by the scheduler (preemption, reclaim)
  std::int64_t evictions = 0;              ///< all evictions: preemptions, NoExecute taints, node failures
  double lost_gpu_hours = 0;               ///< GPU-hours of work lost to evictions (restart policy applied)
  double overhead_gpu_hours = 0;           ///< GPU-hours spent restoring after evictions (restart overheads)
  SimTime first_submit, end;
  double makespan_s = 0;                   ///< first submit -> last completion
  double gpu_alloc_pct_time_weighted = 0;  ///< over [first submit, end]
  double gpu_alloc_pct_arrivals = 0;       ///< over [first submit, last submit]: while jobs arrive
  SimTime last_submit;
  double cpu_alloc_pct_time_weighted = 0;
  double gpu_hours_allocated = 0;
  double gpu_alloc_pct_peak = 0;           ///< highest allocated GPU share at any instant
  std::int64_t peak_pending = 0;
  Distribution wait;                       ///< start - submit, jobs that started
  Distribution jct;                        ///< end - submit, completed jobs
  /// Time waiting over all its runs: end - submit - attained service, completed jobs. With
  /// preemption a job waits again after each eviction, which `wait` (to its last start) misses.
  Distribution queueing;
  std::int64_t nodes = 0, gpus = 0;
  std::uint64_t events = 0, schedule_attempts = 0;
};
void to_json(nlohmann::json& j, const Summary& s);

class MetricsCollector final : public Observer {
 public:
  /// `interval`: time between samples (> 0).
  explicit MetricsCollector(SimTime interval);
  /// At most this many samples per run (10^7 rows of timeseries.csv, ~0.5 GB): more stops the
  /// run with scenario_error.211 naming `sample_interval_s`.
  static constexpr std::size_t kMaxSamples = 10'000'000;

  void on_start(const Engine& e) override;
  void on_advance(SimTime from, SimTime to, const Engine& e) override;
  void on_job_requeue(SimTime, JobId, std::string_view, const Engine&) override { ++requeued_; }
  void on_end(SimTime end, const Engine& e) override;

  [[nodiscard]] const std::vector<TimeSample>& samples() const { return samples_; }
  [[nodiscard]] const Summary& summary() const { return summary_; }

 private:
  TimeSample sample_now(SimTime t, const Engine& e) const;
  SimTime interval_;
  SimTime next_sample_;
  SimTime first_submit_, last_submit_;
  long double gpu_milli_us_ = 0, cpu_milli_us_ = 0, gpu_milli_us_arrivals_ = 0;
  std::int64_t peak_pending_ = 0, requeued_ = 0, peak_gpu_milli_ = 0;
  std::vector<TimeSample> samples_;
  Summary summary_;
};

}  // namespace gpusched::sim
