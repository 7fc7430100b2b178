#pragma once
/// The Standard Workload Format (Feitelson's Parallel Workloads Archive; Batsim, Slurm tools):
/// 18 whitespace-separated fields per job, ';' header comments. See docs/traces.md.
///
/// Reading (field number: SWF name -> gpusched):
///   1 job_number -> name (the number as text, e.g. "17"); must be unique.
///   2 submit_time -> submit, seconds as in the file (not rebased); must be known.
///   4 run_time -> duration, seconds; -1 per SwfOptions::unknown_run_time (default: error).
///   5 allocated_processors, else (when < 1) 8 requested_processors -> the job's size in GPUs or
///     CPU cores (SwfOptions::processors), split by split_gang() (philly.hpp) over the per-node size:
///     all-or-nothing gangs of equal tasks.
///   9 requested_time -> constraints.walltime (-1: none).
///   10 requested_memory (KB per processor; -1: none) -> memory per task, rounded up to MiB.
///   14 executable_number -> constraints.app ("app<N>", or the name a
///     `; gpusched: executable <N> = <name>` header comment gives); -1: no app.
///   15 queue_number -> queue ("q<N>", or the name of a `; gpusched: queue <N> = <name>` comment;
///     -1: "default"); with SwfQueueField::kUserId, 12 user_id -> "u<N>" (or the name of a
///     `; gpusched: user <N> = <name>` comment) instead.
///   3, 6, 7, 11, 13, 16, 17, 18 (wait, CPU time, used memory, status, group, partition,
///   preceding job, think time) are checked to be numbers and otherwise ignored.
/// Every field must be a number (-1 = unknown); integer fields must be whole. A malformed line is
/// a TraceError naming file, line and the SWF field name: `jobs.swf:12: field 'run_time': ...`.
/// A `; gpusched: processors=cpus|gpus` comment that differs from the options is refused.
///
/// Writing is the inverse: a header (`; Version: 2.2`, `; gpusched: processors=gpus ...`, and the
/// queue/executable name comments), then one line per job in workload order. Job numbers are the
/// names when every name is a distinct non-negative integer, else 1..n in order. Jobs SWF cannot
/// carry are a TraceError naming the job (see write_swf).
///
/// Example:
///   SwfOptions o;  o.processors = SwfProcessors::kGpus;  o.gpus_per_node = 8;
///   Workload jobs = traces::read_swf(in, "log.swf", catalog, resources, o);
///   traces::write_swf(out, jobs, catalog, resources, o);
#include <cstdint>
#include <istream>
#include <ostream>
#include <string>

#include <gpusched/gpu_catalog.hpp>
#include <gpusched/job.hpp>
#include <gpusched/resources.hpp>

namespace gpusched::traces {

/// What an SWF "processor" is.
enum class SwfProcessors : std::uint8_t {
  kGpus,  ///< one whole GPU (nvidia.com/gpu); no CPU request
  kCpus,  ///< one CPU core; no GPU
};

/// What to do with run_time -1 (unknown; usually a job cancelled before it started).
enum class SwfUnknownRunTime : std::uint8_t {
  kError,    ///< TraceError naming the line (default)
  kSkip,     ///< leave the job out
  kForever,  ///< the job never ends on its own (SimTime::forever); write_swf writes -1 back
};

/// Which SWF field holds the queue.
enum class SwfQueueField : std::uint8_t {
  kQueueNumber,  ///< field 15 -> "q<N>" (default)
  kUserId,       ///< field 12 -> "u<N>": one queue per user (fair share between users)
};

struct SwfOptions {
  SwfProcessors processors = SwfProcessors::kGpus;
  std::int32_t gpus_per_node = 8;    ///< kGpus: jobs above this become gangs
  std::int32_t cores_per_node = 64;  ///< kCpus: jobs above this become gangs
  SwfUnknownRunTime unknown_run_time = SwfUnknownRunTime::kError;
  SwfQueueField queue_field = SwfQueueField::kQueueNumber;
  /// write_swf: drop what SWF cannot carry (priority, gpu_util, GPU models, CPU on GPU jobs,
  /// extended resources, placement constraints, non-canonical gang shapes) instead of throwing.
  bool lossy = false;
};

/// Reads SWF with the default options (processors = whole GPUs, 8 per node). O(lines log lines).
Workload read_swf(std::istream& in, const std::string& source, GpuCatalog& catalog, ResourceTable& resources);
Workload read_swf(std::istream& in, const std::string& source, GpuCatalog& catalog, ResourceTable& resources,
                  const SwfOptions& options);

/// Writes SWF that read_swf() with the same options reads back to the same jobs (names when
/// numeric, submit times, durations, sizes and gang shapes, memory, walltime, queues, apps).
/// Always a TraceError naming the job: no processors in the chosen unit (CPU-only job under
/// kGpus, GPU job under kCpus), GPU shares/MIG/vGPU/passthrough/TPU, fractional cores, a
/// forever duration unless unknown_run_time is kForever, a queue or app name with a line break.
/// Without `lossy`, also a TraceError for everything listed at SwfOptions::lossy. Queue and app
/// names other than "q<N>"/"u<N>"/"app<N>" get numbers in first-use order, listed in header
/// comments that read_swf() maps back.
void write_swf(std::ostream& out, const Workload& jobs, const GpuCatalog& catalog, const ResourceTable& resources);
void write_swf(std::ostream& out, const Workload& jobs, const GpuCatalog& catalog, const ResourceTable& resources,
               const SwfOptions& options);

}  // namespace gpusched::traces
