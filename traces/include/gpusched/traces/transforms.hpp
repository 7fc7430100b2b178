#pragma once
/// Workload transforms: shuffle, resample to a target GPU demand (the FGD "tuning"), time
/// scaling, arrival scaling to a target offered load, filtering, arrival-only (fill) form. Pure functions: same inputs and seed, same jobs.
///
/// Example (the FGD protocol):
///   Workload w = traces::shuffle(pods, seed);
///   w = traces::resample_to_gpu_milli(std::move(w), pods, 13 * cluster_gpu_milli / 10, seed);
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <gpusched/job.hpp>

namespace gpusched::traces {

/// GPU milli a job asks for: tasks x per-task milli, where per task
///  - whole GPUs / passthrough: count x 1000 (also on time-slicing / MPS / MIG-single nodes,
///    where nvidia.com/gpu units are replicas or GIs: the request alone cannot tell);
///  - a share (gpu-milli / gpu-mem / HAMi): count x milli (a memory-only share is 0, as granted);
///  - MIG: count x (1000 x compute slices / the model's compute slices), integer, as the cluster
///    grants it (a 3g GI of 7 = 428);
///  - vGPU: count x (1000 / vGPUs per GPU of the profile);
///  MIG / vGPU profiles are looked up in the builtin catalog (the first model offering the
///  profile); an unknown MIG profile "<N>g..." counts 1000 x N / 7, any other unknown profile
///  1000 per unit.
///  CPU-only and TPU: 0. O(1) (O(models) for MIG / vGPU).
[[nodiscard]] std::int64_t gpu_milli_requested(const JobSpec& job);
/// Sum over jobs. O(n).
[[nodiscard]] std::int64_t gpu_milli_requested(std::span<const JobSpec> jobs);

/// Fisher-Yates shuffle with the stream "transform.shuffle" of `seed`; submit times are kept
/// (order only matters for jobs with equal submit times, e.g. fill mode). O(n).
[[nodiscard]] Workload shuffle(Workload jobs, std::uint64_t seed);

/// The FGD "tuning", with T = target_milli and gpu_milli_requested() as the measure:
///  - deflate: if `jobs` total more than T, keep the longest prefix whose total is <= T;
///  - exactly T: `jobs` unchanged;
///  - inflate: below T, append jobs drawn uniformly with replacement from `pool` (stream
///    "transform.resample" of `seed`) until a drawn job would bring the total above T: that
///    draw stops the process and is not added (no smaller job is tried instead). Drawn CPU-only
///    jobs add 0 and are appended.
/// Appended copies keep their spec and are renamed "<name>#<k>" (k = 1, 2, ... counting the
/// copies of that pool name; a k whose name is already taken is skipped), so names stay unique
/// when the input names are.
/// Throws std::invalid_argument when target_milli < 0, or when the total is below T and `pool`
/// has no job asking for GPU (the loop would never end).
[[nodiscard]] Workload resample_to_gpu_milli(Workload jobs, std::span<const JobSpec> pool, std::int64_t target_milli,
                                             std::uint64_t seed);

/// Multiplies submit times, durations and declared walltimes by `factor`, rounding to the
/// nearest microsecond; forever stays forever. Throws std::invalid_argument unless factor is
/// finite and > 0, and std::out_of_range (naming the job) when a product passes
/// kMaxInputSeconds, the largest time an input may give (gpusched/time.hpp).
[[nodiscard]] Workload scale_time(Workload jobs, double factor);

/// Offered GPU load: the share of the cluster's GPU capacity that the jobs' GPU work would fill
/// over their arrival span,
///   load = sum_j gpu_milli_requested(j) x duration_j / (cluster_gpu_milli x (last submit - first submit)),
/// with durations and submit times in microseconds and gpu_milli_requested (tasks x per-task
/// milli) as the measure, so GPU shares, MIG and vGPU count by what they take. CPU-only jobs add
/// no work but their submit times count toward the span. Throws std::invalid_argument when
/// cluster_gpu_milli <= 0, when the jobs have no arrival span (fewer than two distinct submit
/// times), when no job asks for GPU, or when a job asking for GPU never ends (forever duration).
/// O(n).
[[nodiscard]] double offered_gpu_load(std::span<const JobSpec> jobs, std::int64_t cluster_gpu_milli);

/// Arrival-only time scaling to a target offered load (the `target_load` step): every submit
/// time t becomes first + round((t - first) x f) with f = offered_gpu_load / target_load, so the
/// arrival span becomes GPU work / (capacity x target_load) and offered_gpu_load of the result
/// is target_load (up to rounding the last submit to the microsecond: relative error at most
/// 0.5 us / new span). Durations, walltimes and the jobs' order are unchanged, and submit order
/// is kept (equal times may merge when f < 1). Throws std::invalid_argument when target_load is
/// not finite and > 0 and in offered_gpu_load's cases, and std::out_of_range when the last
/// submit time would pass kMaxInputSeconds (gpusched/time.hpp). O(n).
[[nodiscard]] Workload scale_to_gpu_load(Workload jobs, std::int64_t cluster_gpu_milli, double target_load);

/// Kinds of job by the GPU request of one task (a pod):
///   kCpuOnly  no GPU and no TPU;
///   kShare    a share of ONE GPU (gpu-milli / gpu-mem, or HAMi with nvidia.com/gpu: 1);
///   kOneGpu   one whole GPU (nvidia.com/gpu: 1 or passthrough of 1);
///   kMultiGpu several whole GPUs;
///   kOther    MIG, vGPU, HAMi shares of several GPUs, TPU.
enum class JobKind : std::uint8_t { kCpuOnly, kShare, kOneGpu, kMultiGpu, kOther };
[[nodiscard]] JobKind kind_of(const JobSpec& job);
/// "cpu", "share", "one-gpu", "multi-gpu", "other".
[[nodiscard]] std::string to_string(JobKind k);
/// Parses to_string's names (exact spelling); nullopt otherwise.
[[nodiscard]] std::optional<JobKind> parse_job_kind(std::string_view name);

struct JobFilter {
  std::vector<std::string> queues;   ///< keep jobs of these queues (empty: all)
  std::vector<JobKind> kinds;        ///< keep jobs of these kinds (empty: all)
};
/// Jobs matching both lists, in their order. O(n x (queues + kinds)).
[[nodiscard]] Workload filter(Workload jobs, const JobFilter& f);

/// Arrival-only (fill) form: the jobs arrive one at a time in their current order, job i at
/// i microseconds (so each is scheduled alone, before the next arrives, whatever the queue
/// order), and never end (duration and declared walltime become forever).
[[nodiscard]] Workload arrival_only(Workload jobs);

}  // namespace gpusched::traces
