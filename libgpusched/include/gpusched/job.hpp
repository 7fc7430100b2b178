#pragma once
/// Jobs: N identical tasks, placed together when min_available of them fit (gang).
#include <cstdint>
#include <string>
#include <vector>

#include <gpusched/ids.hpp>
#include <gpusched/resources.hpp>
#include <gpusched/time.hpp>

namespace gpusched {

/// A job as read from a trace or generated. Example (JSON Lines):
///   {"id":"train-7","submit_time":60,"duration":3600,"tasks":2,
///    "requests":{"cpu":"8","memory":"64Gi","nvidia.com/gpu":4},"priority":10,"queue":"team-a"}
struct JobSpec {
  std::string name;
  SimTime submit;
  SimTime duration = SimTime::forever();   ///< forever: never finishes on its own
  std::int32_t tasks = 1;
  std::int32_t min_available = 1;           ///< gang minimum; == tasks for all-or-nothing
  std::int32_t priority = 0;                ///< higher runs first
  std::string queue = "default";            ///< queue / namespace / tenant
  TaskRequest request;                      ///< per task
  std::int64_t source_line = 0;             ///< line in the trace it came from (0 = generated)
  /// Share of a whole GPU's compute the job keeps busy when alone (0..1]; drives the
  /// interference model on time-sliced and MPS GPUs.
  double gpu_util = 1.0;
};

/// A time-ordered list of jobs (stable order for equal submit times).
using Workload = std::vector<JobSpec>;

}  // namespace gpusched
