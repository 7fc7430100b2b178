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
  virtual void on_job_start(SimTime, JobId, std::span<const TaskPlacement>, const Engine&) {}
  virtual void on_job_finish(SimTime, JobId, const Engine&) {}
  /// The job left the system unfinished (did not fit without retry, or its node went down).
  virtual void on_job_fail(SimTime, JobId, std::string_view /*reason*/, const Engine&) {}
  /// A running job was stopped and put back in the queue (node down with requeue).
  virtual void on_job_requeue(SimTime, JobId, std::string_view /*reason*/, const Engine&) {}
  /// A waiting job left the queue for a backoff (Kueue waitForPodsReady timeout); it comes back
  /// at `until`.
  virtual void on_job_backoff(SimTime, JobId, SimTime /*until*/, std::string_view /*reason*/, const Engine&) {}
  virtual void on_node(SimTime, NodeId, bool /*up*/, const Engine&) {}
  virtual void on_end(SimTime /*end*/, const Engine&) {}
};

}  // namespace gpusched::sim
