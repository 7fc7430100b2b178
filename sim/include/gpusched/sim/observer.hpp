#pragma once
/// Observers see the simulation through immutable views and collect metrics; the model never
/// contains metrics code.
#include <span>
#include <string_view>

#include <gpusched/cluster.hpp>
#include <gpusched/ids.hpp>
#include <gpusched/time.hpp>

namespace gpusched::sim {

class Engine;

class Observer {
 public:
  virtual ~Observer() = default;
  virtual void on_start(const Engine&) {}
  /// Time moves from `from` to `to`; the state seen is the one that held during [from, to).
  virtual void on_advance(SimTime /*from*/, SimTime /*to*/, const Engine&) {}
  virtual void on_submit(SimTime, JobId, const Engine&) {}
  /// The job was placed: it holds `placements` from now. It runs from now too, unless a GPU
  /// instance was created for it (dynamic MIG): then on_job_running() follows after the
  /// reconfiguration delay (Engine::job(j).running_since is when).
  virtual void on_job_start(SimTime, JobId, std::span<const TaskPlacement>, const Engine&) {}
  /// A job placed on newly created GPU instances starts running (reconfiguration done).
  virtual void on_job_running(SimTime, JobId, const Engine&) {}
  /// More tasks of a running elastic job (min_available < tasks) were placed: it holds `added`
  /// too from now, until it stops.
  virtual void on_job_grow(SimTime, JobId, std::span<const TaskPlacement> /*added*/, const Engine&) {}
  virtual void on_job_finish(SimTime, JobId, const Engine&) {}
  /// The job left the system unfinished (did not fit without retry, or its node went down).
  virtual void on_job_fail(SimTime, JobId, std::string_view /*reason*/, const Engine&) {}
  /// A running job was stopped and put back in the queue (preempted, evicted, node down with
  /// requeue). A preemption victim is announced before its preemptor's on_job_start, and
  /// meanwhile the cluster holds neither: at one instant, releases come before the acquisitions
  /// that use them.
  virtual void on_job_requeue(SimTime, JobId, std::string_view /*reason*/, const Engine&) {}
  /// A waiting job left the queue for a backoff (Kueue waitForPodsReady timeout); it comes back
  /// at `until`.
  virtual void on_job_backoff(SimTime, JobId, SimTime /*until*/, std::string_view /*reason*/, const Engine&) {}
  virtual void on_node(SimTime, NodeId, bool /*up*/, const Engine&) {}
  virtual void on_end(SimTime /*end*/, const Engine&) {}
};

}  // namespace gpusched::sim
