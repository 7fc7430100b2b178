#include <gpusched/sim/event_queue.hpp>

#include <algorithm>

#include <gpusched/assert.hpp>

namespace gpusched::sim {
namespace {
// std heap functions build a max-heap; "greater" puts the earliest (time, seq) on top.
struct Later {
  bool operator()(const EventQueue::Entry& a, const EventQueue::Entry& b) const {
    return a.time != b.time ? a.time > b.time : a.seq > b.seq;
  }
};
}  // namespace

EventId EventQueue::push(SimTime t, Event e) {
  const EventId id = next_seq_++;
  heap_.push_back({t, id, std::move(e)});
  std::push_heap(heap_.begin(), heap_.end(), Later{});
  cancelled_.push_back(0);
  ++live_;
  return id;
}

void EventQueue::cancel(EventId id) {
  if (id < cancelled_.size() && cancelled_[id] == 0) {
    cancelled_[id] = 1;
    --live_;
  }
}

void EventQueue::drop_cancelled() {
  while (!heap_.empty() && cancelled_[heap_.front().seq]) {
    std::pop_heap(heap_.begin(), heap_.end(), Later{});
    heap_.pop_back();
  }
}

bool EventQueue::empty() {
  drop_cancelled();
  return heap_.empty();
}

EventId EventQueue::next_id() {
  drop_cancelled();
  GPUSCHED_ASSERT(!heap_.empty(), "next_id() on an empty queue");
  return heap_.front().seq;
}

EventId EventQueue::reserve_external(std::uint64_t n) {
  const EventId first = next_seq_;
  next_seq_ += n;
  cancelled_.resize(cancelled_.size() + n, 1);   // never cancelled here: cancel() leaves them alone
  live_ += n;
  return first;
}

SimTime EventQueue::next_time() {
  drop_cancelled();
  GPUSCHED_ASSERT(!heap_.empty(), "next_time() on an empty queue");
  return heap_.front().time;
}

EventQueue::Entry EventQueue::pop() {
  drop_cancelled();
  GPUSCHED_ASSERT(!heap_.empty(), "pop() on an empty queue");
  std::pop_heap(heap_.begin(), heap_.end(), Later{});
  Entry e = std::move(heap_.back());
  heap_.pop_back();
  cancelled_[e.seq] = 1;   // fired: a late cancel() is a no-op
  --live_;
  return e;
}

}  // namespace gpusched::sim
