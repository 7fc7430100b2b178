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
#include <gpusched/time.hpp>

namespace gpusched {

/// A 64-bit hash of what placement reads from a job: its request, task count and gang minimum.
/// Equal jobs get equal classes.
[[nodiscard]] std::uint64_t request_class(const JobSpec& job);

/// What a scheduler may read about the jobs the cluster runs now (Kubernetes: the pods in each
/// NodeInfo). The simulator's engine implements it; a real component would from its informers.
class JobsView {
 public:
  virtual ~JobsView() = default;
  [[nodiscard]] virtual SimTime now() const = 0;
  /// Running jobs with at least one task on `n`, in start order.
  [[nodiscard]] virtual std::span<const JobId> running_on(NodeId n) const = 0;
  [[nodiscard]] virtual const JobSpec& spec(JobId j) const = 0;
  /// Where a running job's tasks are.
  [[nodiscard]] virtual std::span<const TaskPlacement> placements(JobId j) const = 0;
  /// When the running job (re)started.
  [[nodiscard]] virtual SimTime started(JobId j) const = 0;
  /// Nominal work (microseconds at full speed) the job would lose if evicted now: everything
  /// since its last checkpoint.
  [[nodiscard]] virtual double work_lost_us(JobId j) const = 0;
  /// Attained service: microseconds the job has run, all its runs and the current one up to
  /// now(), restart overheads left out (restoring a checkpoint is not service). Default 0.
  [[nodiscard]] virtual double attained_us(JobId /*j*/) const { return 0.0; }
  /// The same weighted by the GPUs held (a GPU share counts its fraction): GPU-microseconds.
  [[nodiscard]] virtual double attained_gpu_us(JobId /*j*/) const { return 0.0; }
  /// Nominal work done so far (microseconds at full speed), progress kept from earlier runs
  /// included: the duration minus this is what is left. Default 0.
  [[nodiscard]] virtual double work_done_us(JobId /*j*/) const { return 0.0; }
  /// When the running job's current run starts adding attained service: its start, after a MIG
  /// set-up and a restart overhead (restoring is not service). Default: started().
  [[nodiscard]] virtual SimTime progress_from(JobId j) const { return started(j); }
};

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
  /// A what-if placement on a scratch copy of the cluster (backfill reservations, autoscaler
  /// estimates): places the job like schedule() but never evicts anything, binds nothing and
  /// leaves no trace in the hook's state. On success the allocations stay in `cluster`.
  virtual Status what_if(ClusterState& cluster, const JobSpec& job, JobId id, std::vector<TaskPlacement>& out) {
    return schedule(cluster, job, id, out);
  }
  /// A human-readable account of the last failed schedule() ("0/1000 nodes: 600 ...").
  [[nodiscard]] virtual std::string last_diagnosis() const = 0;

  /// Called once before the first schedule(): the whole workload (e.g. FGD's typical pod types)
  /// and a view of the running jobs that stays valid for the run (may be null).
  virtual void attach(const ClusterState& /*cluster*/, std::span<const JobSpec> /*workload*/, const JobsView* /*jobs*/) {}
  /// The job's placements were bound (it runs now); called after a successful schedule().
  virtual void job_started(const JobSpec& /*job*/, JobId /*id*/, std::span<const TaskPlacement> /*placements*/) {}
  /// The job stopped (finished, evicted, or its node failed); its resources are released.
  virtual void job_stopped(const JobSpec& /*job*/, JobId /*id*/, std::span<const TaskPlacement> /*placements*/) {}
  /// The job was submitted (created), before any schedule() of it: Success admits it into the
  /// queue; anything else refuses it for good with the status's reason (Kubernetes ResourceQuota
  /// admission: the API server refuses a pod over quota at creation). The reason stays valid
  /// until the next call on the hook. Called once per job.
  virtual Status admit(const JobSpec& /*job*/, JobId /*id*/) { return Status::success(); }
  /// The job left the system for good (completed, failed, refused, deactivated): what admit()
  /// charged is released. Not called for an eviction (the job is requeued, still created).
  virtual void job_left(const JobSpec& /*job*/, JobId /*id*/) {}
  /// After a successful schedule(): running jobs it evicted to make room (preemption, reclaim).
  /// Their resources are already released in the cluster; the caller stops and requeues them.
  [[nodiscard]] virtual std::span<const JobId> last_victims() const { return {}; }
  /// True when a job that failed can only succeed after some node gained capacity (so a retry
  /// may be restricted to changed nodes). False when decisions also read state outside the
  /// nodes: quota usage, other queues' shares.
  [[nodiscard]] virtual bool node_local() const { return true; }
  /// True when before() depends on state that changes as jobs start and stop (fair share):
  /// the caller re-sorts its queue each cycle.
  [[nodiscard]] virtual bool dynamic_order() const { return false; }
  /// For an order that moves with time alone (least attained service: a running job falls
  /// behind as it runs): the next time after `now` at which before() may answer differently with
  /// no job starting, stopping or arriving. The preemptive queueing mode reorders then.
  /// forever: only those events change it.
  [[nodiscard]] virtual SimTime next_order_change(SimTime /*now*/) const { return SimTime::forever(); }
  /// The job's priority queue under a multi-level order (2D-LAS: 0 is the first queue); -1 when
  /// the order has no levels. Written to jobs.csv.
  [[nodiscard]] virtual std::int32_t queue_level(JobId /*j*/) const { return -1; }
};

}  // namespace gpusched
