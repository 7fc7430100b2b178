#pragma once
/// Output tables (CSV, each starting with its header row) and the event log; what produced them
/// (version, scenario, digest, seed) goes to summary.json and meta.json, not into the CSVs.
#include <cstdint>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <vector>

#include <gpusched/sim/engine.hpp>
#include <gpusched/sim/metrics.hpp>
#include <gpusched/sim/observer.hpp>

namespace gpusched::sim {

/// What produced an output: recorded in summary.json and meta.json beside the CSVs.
struct RunStamp {
  std::string version;
  std::string scenario;      ///< name
  std::string source;        ///< file path or "<built-in demo>"
  std::string digest;        ///< FNV-1a 64 of the canonical resolved scenario, hex
  std::uint64_t seed = 0;
};

/// "node-7[0,1]" (whole GPUs), "node-7[3:250m]" (share), "node-7[3:250m/4096Mi]", "node-7"
/// (CPU only), "node-7[2:mig-3g.40gb@4]" (a MIG GI at memory slice 4), "node-7[0:vgpu-A100-10C]",
/// "tpu-0003{tpu:4}" (a TPU host of a slice), "hgx-0000[0]{nic:0}" (GPU 0 and NIC 0, through a DRA
/// claim); tasks joined with ';'.
std::string placement_string(const ClusterState& cluster, std::span<const TaskPlacement> placements);

/// Quotes a CSV field when it holds a comma, quote or newline (RFC 4180).
std::string csv_field(std::string_view s);
/// Fixed-point text for a double: same bytes on every run.
std::string fixed(double v, int decimals);

/// One row of the job table (jobs.csv, Python's result.jobs). Empty optionals = not applicable.
struct JobRow {
  std::string job, queue;
  std::int32_t priority = 0, tasks = 1;
  std::int64_t cpu_milli = 0, memory_mib = 0;
  std::int32_t gpus = 0, gpu_milli = 0;
  std::int64_t gpu_memory_mib = 0;
  double submit_s = 0;
  std::optional<double> start_s, end_s, wait_s, jct_s;
  std::string state;   ///< the engine's state; "partial": completed with fewer tasks than `tasks` (elastic gang)
  std::uint32_t attempts = 0;
  std::uint32_t evictions = 0;    ///< times it was evicted while running
  double lost_gpu_hours = 0;      ///< work lost to those evictions, in GPU-hours
  std::string placement, reason;
  std::uint32_t requeues = 0;     ///< times waitForPodsReady requeued it after a timeout
  /// The input had bound it to its node already (a snapshot's spec.nodeName): told apart from the
  /// pending pods a what-if places (last column; "true" / "false" in jobs.csv).
  bool bound = false;
  /// Attained service (time run, all runs) in seconds and GPU-seconds; the queue level under a
  /// multi-level order (-1: none; empty in jobs.csv); preemptions and restarts after them;
  /// restart overhead paid (s).
  double attained_s = 0, attained_gpu_s = 0;
  std::int32_t queue_level = -1;
  std::uint32_t preemptions = 0, resumptions = 0;
  double overhead_s = 0;
};

/// The job table from the engine's final state, in workload order.
std::vector<JobRow> job_rows(const Engine& engine);
/// Row `i` of job_rows() (workload order), built on its own.
JobRow job_row(const Engine& engine, std::size_t i);
/// jobs.csv: the header row, then one row per job.
void write_jobs_csv(std::ostream& out, const std::vector<JobRow>& rows);
/// jobs.csv straight from the engine, one row at a time (the same bytes as
/// write_jobs_csv(out, job_rows(engine)) without holding the whole table in memory).
void write_jobs_csv(std::ostream& out, const Engine& engine);
/// timeseries.csv: the header row, then one row per sample.
void write_timeseries_csv(std::ostream& out, const std::vector<TimeSample>& samples);

/// Records every submit/placed/start/grow/finish/fail/requeue/backoff/node event as a CSV line
/// (`time_s,event,job,node,detail`) — the golden-test format. Read line by line, the log
/// replays to a valid cluster: at one instant, releases (finish, fail, requeue) come before the
/// acquisitions (placed, start, grow) that use them. A job acquires its placement (`detail`) at
/// `placed`, or at `start` when no `placed` came first in that run; `placed` means GPU
/// instances are being created for it and `start` follows when it runs (the start_s of
/// jobs.csv); `grow` adds tasks to a running elastic gang; finish/fail/requeue release all.
class EventLog final : public Observer {
 public:
  void on_submit(SimTime t, JobId j, const Engine& e) override;
  void on_job_start(SimTime t, JobId j, std::span<const TaskPlacement> p, const Engine& e) override;
  void on_job_running(SimTime t, JobId j, const Engine& e) override;
  void on_job_grow(SimTime t, JobId j, std::span<const TaskPlacement> added, const Engine& e) override;
  void on_job_finish(SimTime t, JobId j, const Engine& e) override;
  void on_job_fail(SimTime t, JobId j, std::string_view reason, const Engine& e) override;
  void on_job_requeue(SimTime t, JobId j, std::string_view reason, const Engine& e) override;
  void on_job_backoff(SimTime t, JobId j, SimTime until, std::string_view reason, const Engine& e) override;
  void on_node(SimTime t, NodeId n, bool up, const Engine& e) override;
  [[nodiscard]] const std::vector<std::string>& lines() const { return lines_; }
  /// events.csv: the header row, then lines().
  void write(std::ostream& out) const;

 private:
  std::vector<std::string> lines_;
};

}  // namespace gpusched::sim
