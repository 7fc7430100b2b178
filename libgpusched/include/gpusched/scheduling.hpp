#pragma once
/// The narrow hook between whoever drives time (the simulator, or a real cluster component)
/// and whoever decides placements (policies::Scheduler). Neither knows the other's internals.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <gpusched/cluster.hpp>
#include <gpusched/job.hpp>
#include <gpusched/status.hpp>

namespace gpusched {

/// A 64-bit hash of what placement reads from a job: its request, task count and gang minimum.
/// Equal jobs get equal classes.
[[nodiscard]] std::uint64_t request_class(const JobSpec& job);

class SchedulingHook {
 public:
  virtual ~SchedulingHook() = default;
  /// Queue order: true when `a` should be tried before `b`.
  [[nodiscard]] virtual bool before(const JobSpec& a, JobId ia, const JobSpec& b, JobId ib) const = 0;
  /// Tries to place the job. On success the allocations are applied to `cluster`, one
  /// TaskPlacement per placed task is written to `out`, and Success is returned.
  /// Otherwise `cluster` is unchanged and the status says why.
  /// `only`: consider just these nodes (sorted by index); empty = every node. A caller may
  /// restrict the retry of a job that needs one task to start to the nodes that gained capacity
  /// since it last failed: placement depends only on node state, so the answer is the same.
  virtual Status schedule(ClusterState& cluster, const JobSpec& job, JobId id, std::vector<TaskPlacement>& out,
                          std::span<const NodeId> only) = 0;
  /// Every node considered.
  Status schedule(ClusterState& cluster, const JobSpec& job, JobId id, std::vector<TaskPlacement>& out) {
    return schedule(cluster, job, id, out, {});
  }
  /// Jobs with equal classes get equal answers from schedule() on the same cluster state, so a
  /// caller may skip a job whose class already failed in this state. The default covers what
  /// placement reads from a job: its request, task count and gang minimum. A hook whose
  /// decisions read more (a queue's quota, say) must fold that in.
  [[nodiscard]] virtual std::uint64_t equivalence_class(const JobSpec& job) const { return request_class(job); }
  /// A human-readable account of the last failed schedule() ("0/1000 nodes: 600 ...").
  [[nodiscard]] virtual std::string last_diagnosis() const = 0;
};

}  // namespace gpusched
