#pragma once
/// Events ordered by (time, sequence number): simultaneous events fire in insertion order, so
/// every run is bit-for-bit reproducible. Cancellation is lazy (marked, skipped when popped).
///
/// Example:
///   EventQueue q;
///   auto id = q.push(SimTime::from_seconds(5), JobFinish{JobId{0}});
///   q.cancel(id);
///   while (!q.empty()) { auto e = q.pop(); ... }
#include <cstdint>
#include <variant>
#include <vector>

#include <gpusched/ids.hpp>
#include <gpusched/time.hpp>

namespace gpusched::sim {

struct JobArrival { JobId job; };
struct JobFinish { JobId job; };
struct NodeDown { NodeId node; };
struct NodeUp { NodeId node; };
struct NodeTaint { std::uint32_t index; };   ///< EngineConfig::node_events[index] (taint or untaint)
struct Timer { std::uint32_t id; };   ///< call-me-later; the engine maps id -> callback
/// The preemptive queueing mode reorders (the queue order moved with time); only the latest counts.
struct Reorder { std::uint32_t generation; };
/// The GPU instances created for a job are ready: it starts running (its `attempt`-th start;
/// stale when the job was stopped meanwhile).
struct JobRunning {
  JobId job;
  std::uint32_t attempt;
};

/// The closed set of simulation events.
using Event = std::variant<JobArrival, JobFinish, NodeDown, NodeUp, NodeTaint, Timer, JobRunning, Reorder>;
using EventId = std::uint64_t;   ///< the event's sequence number

class EventQueue {
 public:
  struct Entry {
    SimTime time;
    EventId seq;
    Event event;
  };

  /// O(log n). Returns an id for cancel().
  EventId push(SimTime t, Event e);
  /// Marks the event so pop() skips it. O(1). Cancelling twice or after the pop is harmless.
  void cancel(EventId id);
  /// True when no live event is left (drops cancelled ones at the top).
  [[nodiscard]] bool empty();
  /// Time of the next live event. Precondition: !empty().
  [[nodiscard]] SimTime next_time();
  /// Removes and returns the next live event. Precondition: !empty(). O(log n).
  Entry pop();
  /// Id of the next live event. Precondition: !empty().
  [[nodiscard]] EventId next_id();
  /// Sets aside `n` consecutive ids (returns the first) for events the caller keeps in its own
  /// list, already in order (the engine's arrivals: one per job, in submit order), so the heap
  /// does not hold them. They count as live until take_external() says one fired; the caller
  /// fires one before next() when its (time, id) comes first.
  EventId reserve_external(std::uint64_t n);
  void take_external() { --live_; }
  /// Events pushed so far (live, fired or cancelled), external ones included.
  [[nodiscard]] std::uint64_t pushed() const { return next_seq_; }
  /// Events still to fire (pushed, neither popped nor cancelled). O(1).
  [[nodiscard]] std::size_t live() const { return live_; }
  void reserve(std::size_t n) { heap_.reserve(n); }

 private:
  void drop_cancelled();
  std::vector<Entry> heap_;
  std::vector<std::uint8_t> cancelled_;   // by seq
  EventId next_seq_ = 0;
  std::size_t live_ = 0;
};

}  // namespace gpusched::sim
