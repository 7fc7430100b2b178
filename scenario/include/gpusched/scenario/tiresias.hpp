#pragma once
/// Tiresias (Gu et al., NSDI'19) compatibility mode (issue 17): the training-job schedulers as
/// the authors' public simulator runs them (SymbioticLab/Tiresias, `simulator/run_sim.py` with
/// `--scheme=count`), so that results can be compared job by job with published artifacts.
///
/// The simulator's model, reproduced here (docs/tiresias.md):
///  - integer seconds, event driven (arrivals, completions and, for the LAS family, the time a
///    running job crosses its queue's threshold or a waiting job is due for promotion);
///  - GPUs are only counted: a job runs when the cluster has as many free GPUs as it asks for,
///    wherever they are; a running job completes one second of its duration per second;
///  - fifo and fjf never preempt: pending jobs start in arrival order while they fit (fifo stops
///    at the first that does not, fjf skips it);
///  - the others rebuild the allocation at every event from an empty cluster, walking every
///    job (running and pending) in the policy's order and admitting each that fits; a running
///    job not admitted is preempted (it keeps its progress, no overhead), a pending one admitted
///    starts or resumes. Ties keep the previous order (a stable sort of one persistent list).
///
/// Policies, by the names gpusched uses (the simulator's in brackets):
///   fifo [fifo], fjf [fjf], sjf [sjf: fewest GPUs], srtf [shortest: least remaining time],
///   srsf [shortest-gpu: least remaining time x GPUs], las [dlas: attained time], 2d-las
///   [dlas-gpu: attained GPU time; with starvation_k > 0, dlas-gpu-K].
/// The LAS family keeps the simulator's queues: thresholds 3,250 and 7,200 (seconds, or
/// GPU-seconds for 2d-las), three queues, FIFO inside a queue with running jobs kept ahead of
/// pending ones, and its demotion-time rule, which subtracts attained *time* from a GPU-time
/// threshold before dividing by the GPUs (a multi-GPU job's demotion is seen at the first event
/// at or after the true crossing, sometimes later).
///
/// Example:
///   auto jobs = scenario::read_tiresias_compat_jobs("60_job.csv");
///   auto r = scenario::run_tiresias_compat(jobs, 4, {.policy = "2d-las"});
#include <cstdint>
#include <filesystem>
#include <gpusched/scenario/scenario.hpp>
#include <gpusched/sim/outputs.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace gpusched::scenario {

struct TiresiasCompatJob {
  std::string id;            ///< job_id as written in the trace
  std::int64_t gpus = 0;
  std::int64_t submit = 0;   ///< s
  std::int64_t duration = 0; ///< s (the simulator truncates a fractional duration)
};

struct TiresiasCompatOptions {
  std::string policy = "2d-las";   ///< see tiresias_compat_policies()
  /// Queue thresholds of the LAS family (attained seconds, or GPU-seconds for 2d-las), one per
  /// queue but the last: the simulator's 3,250 and 7,200.
  std::vector<std::int64_t> queue_limits = {3250, 7200};
  /// 2d-las / las: a waiting job in a lower queue that has run before returns to the first
  /// queue once it has waited starvation_k x its attained time (the simulator's dlas-gpu-K;
  /// 0: never).
  double starvation_k = 0.0;
};

/// One job's outcome, in the order of the jobs given (read_tiresias_compat_jobs: by submit time, rows of equal time
/// in file order).
struct TiresiasCompatResult {
  std::string id;
  std::int64_t gpus = 0, submit = 0, duration = 0;
  bool completed = false;     ///< false: the run ended without it (it never fitted, or fifo blocked)
  std::int64_t start = -1;    ///< first start (-1: never started)
  std::int64_t end = -1;
  std::int64_t pending = 0;   ///< seconds waiting (before its first start and while preempted)
  std::int64_t preemptions = 0, resumptions = 0, promotions = 0;
  [[nodiscard]] std::int64_t jct() const { return completed ? end - submit : -1; }
};

struct TiresiasCompatRun {
  std::string policy;
  std::vector<TiresiasCompatResult> jobs;
  /// The simulator stops when nothing can happen any more (no arrival left and nothing
  /// running): true when jobs were left waiting then.
  bool stuck = false;
};

/// Summary of a run over its completed jobs: JCT and queueing delay in seconds.
struct TiresiasCompatSummary {
  std::size_t jobs = 0, completed = 0;
  double mean_jct = 0, median_jct = 0, p95_jct = 0, mean_pending = 0;
  double makespan = 0;   ///< last completion (s)
  std::int64_t preemptions = 0;
};

/// The policies compat mode runs, in a sensible table order.
[[nodiscard]] const std::vector<std::string>& tiresias_compat_policies();

/// Reads a Tiresias job list (job_id, num_gpu, submit_time, duration, ...). Errors name the file,
/// line and field (gpusched::Error, trace errors).
[[nodiscard]] std::vector<TiresiasCompatJob> read_tiresias_compat_jobs(const std::filesystem::path& trace);
/// Total GPUs of a Tiresias cluster spec (num_switch x num_node_p_switch x num_gpu_p_node).
[[nodiscard]] std::int64_t read_tiresias_compat_gpus(const std::filesystem::path& spec);

/// Runs `jobs` on `total_gpus` GPUs under `options`. Throws gpusched::Error (kScenarioBadValue)
/// for an unknown policy or bad options.
[[nodiscard]] TiresiasCompatRun run_tiresias_compat(std::span<const TiresiasCompatJob> jobs, std::int64_t total_gpus,
                                                    const TiresiasCompatOptions& options);

[[nodiscard]] TiresiasCompatSummary summarize(const TiresiasCompatRun& run);

/// Per-job CSV (job_id, num_gpu, submit_time, start_time, end_time, jct, duration, pending_time,
/// preempt, resume, promote, completed) of one run.
void write_tiresias_compat_jobs(const TiresiasCompatRun& run, const std::filesystem::path& path);

// ---- gpusched's engine (no --compat) ----

/// The same policies on gpusched's own engine: the profile's placement plugins put tasks on
/// nodes and GPUs, preempted jobs resume where they were after a restart overhead, and time is
/// continuous (docs/tiresias.md says where this differs from the simulator).
struct TiresiasEngineOptions {
  std::string policy = "2d-las";            ///< see tiresias_engine_policies()
  std::vector<double> thresholds = {3250, 7200};   ///< las / 2d-las queue thresholds (s or GPU-s)
  double starvation_k = 0.0;                ///< las / 2d-las starvation promotion (0: never)
  std::string within_queue = "running-first";   ///< las / 2d-las: "running-first" or "fifo"
  double quantum = 3600.0;                  ///< gittins: service quantum (GPU-s)
  std::string distribution;                 ///< gittins: service samples file ("": the trace's jobs)
  /// "count" (GPUs counted only, as the simulator: every GPU a one-GPU task of the job's gang) or
  /// a built-in profile whose filter, score and device plugins place the jobs (default binpack:
  /// consolidated, as Tiresias places jobs that are sensitive to it).
  std::string placement = "binpack";
  double restart_overhead_s = 0.0;          ///< paid by a job at each restart after a preemption
};

/// fifo, fjf, sjf, srtf, srsf, las, 2d-las, gittins.
[[nodiscard]] const std::vector<std::string>& tiresias_engine_policies();

/// The profile of one policy: the placement preset (`count`: first-fit) with the policy as its
/// queue sort and queueing. Throws for an unknown policy or placement, or bad arguments.
[[nodiscard]] policies::Profile tiresias_profile(const TiresiasEngineOptions& options);

/// The scenario of one policy: the trace's jobs (a job larger than a node a gang of node-sized
/// tasks) on the spec's nodes, the policy as the profile's queue sort with "preemptive" queueing
/// (fifo: strict-fifo, fjf: greedy, both with the fifo sort). Jobs no node could hold stay pending
/// (kept), as in the simulator. Throws gpusched::Error for bad options, naming the option.
[[nodiscard]] Scenario tiresias_scenario(const std::filesystem::path& trace, const std::filesystem::path& cluster_spec,
                                         const TiresiasEngineOptions& options);

/// Summary of an engine run over its completed jobs (the same figures as the compat summary;
/// queueing is JCT minus attained service; `completed` excludes jobs still running or waiting).
[[nodiscard]] TiresiasCompatSummary summarize(std::span<const sim::JobRow> jobs);

}  // namespace gpusched::scenario
