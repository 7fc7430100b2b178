#pragma once
/// The narrow hook between whoever drives time (the simulator, or a real cluster component)
/// and whoever decides placements (policies::Scheduler). Neither knows the other's internals.
#include <span>
#include <string>
#include <vector>

#include <gpusched/cluster.hpp>
#include <gpusched/job.hpp>
#include <gpusched/status.hpp>

namespace gpusched {

class SchedulingHook {
 public:
  virtual ~SchedulingHook() = default;
  /// Queue order: true when `a` should be tried before `b`.
  [[nodiscard]] virtual bool before(const JobSpec& a, JobId ia, const JobSpec& b, JobId ib) const = 0;
  /// Tries to place the job. On success the allocations are applied to `cluster`, one
  /// TaskPlacement per placed task is written to `out`, and Success is returned.
  /// Otherwise `cluster` is unchanged and the status says why.
  virtual Status schedule(ClusterState& cluster, const JobSpec& job, JobId id,
                          std::vector<TaskPlacement>& out) = 0;
  /// A human-readable account of the last failed schedule() ("0/1000 nodes: 600 ...").
  [[nodiscard]] virtual std::string last_diagnosis() const = 0;
};

}  // namespace gpusched
