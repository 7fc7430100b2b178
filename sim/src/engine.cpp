#include <gpusched/sim/engine.hpp>

#include <algorithm>
#include <limits>
#include <unordered_map>

#include <gpusched/assert.hpp>
#include <gpusched/rng.hpp>

namespace gpusched::sim {

std::string_view to_string(JobState s) {
  switch (s) {
    case JobState::kNotArrived: return "not_arrived";
    case JobState::kPending: return "pending";
    case JobState::kRunning: return "running";
    case JobState::kCompleted: return "completed";
    case JobState::kFailed: return "failed";
  }
  return "?";
}

Engine::Engine(ClusterState& cluster, std::span<const JobSpec> workload, SchedulingHook& hook, EngineConfig config)
    : cluster_(&cluster), workload_(workload), hook_(&hook), config_(std::move(config)), jobs_(workload.size()),
      fresh_(workload.size(), 0), dirty_flag_(cluster.node_count(), 0) {
  for (std::size_t i = 1; i < workload.size(); ++i) {
    GPUSCHED_ASSERT(workload[i - 1].submit <= workload[i].submit, "workload not sorted by submit time");
  }
}

void Engine::call_at(SimTime t, std::function<void(SimTime)> fn) {
  timers_.push_back(std::move(fn));
  queue_.push(t, Timer{static_cast<std::uint32_t>(timers_.size() - 1)});
}

std::uint32_t Engine::intern_reason(std::string r) {
  const auto [it, inserted] = reason_index_.try_emplace(std::move(r), static_cast<std::uint32_t>(reasons_.size()));
  if (inserted) reasons_.push_back(it->first);
  return it->second;
}

void Engine::mark_dirty(NodeId n) {
  if (dirty_flag_[n.value]) return;
  dirty_flag_[n.value] = 1;
  dirty_.push_back(n);
}

void Engine::start_job(JobId j, std::vector<TaskPlacement>& placements) {
  auto& rt = jobs_[j.value];
  const auto& spec = workload_[j.value];
  rt.state = JobState::kRunning;
  rt.start = now_;
  rt.placements = placements;
  rt.reason = 0;
  ++rt.attempts;
  ++running_;
  // No finish event for a job that never ends: an id that matches no event, so stop_job() cannot
  // cancel an unrelated one (event 0, or the finish event of the job's previous run).
  rt.finish_event = std::numeric_limits<EventId>::max();
  if (!config_.fill_mode && !spec.duration.is_forever()) {
    rt.finish_event = queue_.push(now_ + spec.duration, JobFinish{j});
  }
  for (auto* o : observers_) o->on_job_start(now_, j, rt.placements, *this);
}

void Engine::stop_job(JobId j) {
  auto& rt = jobs_[j.value];
  GPUSCHED_ASSERT(rt.state == JobState::kRunning, "stopping a job that is not running");
  for (const auto& p : rt.placements) {
    cluster_->release(workload_[j.value].request, p);
    mark_dirty(p.node);
  }
  queue_.cancel(rt.finish_event);
  --running_;
}

void Engine::handle(const EventQueue::Entry& e, bool& capacity_freed) {
  std::visit(
      [&](const auto& ev) {
        using T = std::decay_t<decltype(ev)>;
        if constexpr (std::is_same_v<T, JobArrival>) {
          jobs_[ev.job.value].state = JobState::kPending;
          fresh_[ev.job.value] = 1;
          arrived_.push_back(ev.job);
          for (auto* o : observers_) o->on_submit(now_, ev.job, *this);
        } else if constexpr (std::is_same_v<T, JobFinish>) {
          stop_job(ev.job);
          auto& rt = jobs_[ev.job.value];
          rt.state = JobState::kCompleted;
          rt.end = now_;
          capacity_freed = true;
          for (auto* o : observers_) o->on_job_finish(now_, ev.job, *this);
        } else if constexpr (std::is_same_v<T, NodeDown>) {
          cluster_->set_schedulable(ev.node, false);
          for (auto* o : observers_) o->on_node(now_, ev.node, false, *this);
          const std::string why = "node " + cluster_->spec(ev.node).name + " went down";
          for (std::uint32_t i = 0; i < jobs_.size(); ++i) {
            auto& rt = jobs_[i];
            if (rt.state != JobState::kRunning) continue;
            const bool hit = std::any_of(rt.placements.begin(), rt.placements.end(),
                                         [&](const TaskPlacement& p) { return p.node == ev.node; });
            if (!hit) continue;
            stop_job(JobId{i});
            capacity_freed = true;
            rt.placements.clear();
            rt.reason = intern_reason(why);
            if (config_.requeue_on_node_down && config_.retry) {
              rt.state = JobState::kPending;
              fresh_[i] = 1;
              arrived_.push_back(JobId{i});
              for (auto* o : observers_) o->on_job_requeue(now_, JobId{i}, why, *this);
            } else {
              rt.state = JobState::kFailed;
              rt.end = now_;
              for (auto* o : observers_) o->on_job_fail(now_, JobId{i}, why, *this);
            }
          }
        } else if constexpr (std::is_same_v<T, NodeUp>) {
          cluster_->set_schedulable(ev.node, true);
          mark_dirty(ev.node);
          capacity_freed = true;
          for (auto* o : observers_) o->on_node(now_, ev.node, true, *this);
        } else if constexpr (std::is_same_v<T, Timer>) {
          // Moved out first: the callback may call call_at(), which can reallocate timers_.
          const auto fn = std::move(timers_[ev.id]);
          fn(now_);
        }
      },
      e.event);
}

void Engine::schedule_cycle(bool full) {
  auto before = [this](JobId a, JobId b) { return hook_->before(workload_[a.value], a, workload_[b.value], b); };
  std::sort(arrived_.begin(), arrived_.end(), before);
  // Without freed capacity, jobs already waiting would fail again: only new arrivals are tried.
  std::vector<JobId> tried;
  std::vector<JobId>* order = &arrived_;
  if (full && !pending_.empty()) {
    tried.reserve(pending_.size() + arrived_.size());
    std::merge(pending_.begin(), pending_.end(), arrived_.begin(), arrived_.end(), std::back_inserter(tried), before);
    order = &tried;
  }
  // A job that failed before, when one task suffices to start it (min_available == 1), fits now
  // only on a node that gained capacity since: retry it there. A gang needs several tasks at
  // once, some of which may fit on unchanged nodes, so it is retried everywhere.
  std::sort(dirty_.begin(), dirty_.end());
  const std::span<const NodeId> changed = dirty_;
  auto& failed = failed_;   // equivalence class -> reason (0: failed on changed nodes only)
  failed.clear();
  std::vector<JobId> still_pending;
  still_pending.reserve(order->size());
  for (JobId j : *order) {
    const auto& spec = workload_[j.value];
    auto& rt = jobs_[j.value];
    const bool fresh = fresh_[j.value] != 0;
    fresh_[j.value] = 0;
    const std::uint64_t cls = config_.skip_equivalent ? class_[j.value] : 0;
    auto seen = config_.skip_equivalent ? failed.find(cls) : failed.end();
    if (seen != failed.end()) {
      if (seen->second != 0) rt.reason = seen->second;
      else if (fresh) rt.reason = intern_reason("not tried: a job with the same request could not be placed at this time");
    } else if (!fresh && config_.retry_changed_nodes_only && changed.empty()) {
      // Nothing gained capacity: it would fail again.
    } else {
      const bool narrow = !fresh && config_.retry_changed_nodes_only && spec.min_available == 1;
      ++attempts_;
      const Status s = hook_->schedule(*cluster_, spec, j, scratch_, narrow ? changed : std::span<const NodeId>{});
      if (s.ok()) {
        start_job(j, scratch_);
        continue;
      }
      // A narrowed attempt keeps the reason of the job's last full evaluation.
      if (!narrow) rt.reason = intern_reason(hook_->last_diagnosis());
      if (config_.skip_equivalent) failed.emplace(cls, narrow ? 0u : rt.reason);
    }
    if (!config_.retry) {
      rt.state = JobState::kFailed;
      rt.end = now_;
      for (auto* o : observers_) o->on_job_fail(now_, j, reasons_[rt.reason], *this);
    } else {
      still_pending.push_back(j);
    }
  }
  for (NodeId n : dirty_) dirty_flag_[n.value] = 0;
  dirty_.clear();
  // Rebuild the pending queue: untried old ones + those that stayed, in queue order.
  if (order == &arrived_) {
    std::vector<JobId> merged;
    merged.reserve(pending_.size() + still_pending.size());
    std::merge(pending_.begin(), pending_.end(), still_pending.begin(), still_pending.end(), std::back_inserter(merged), before);
    pending_.swap(merged);
  } else {
    pending_.swap(still_pending);
  }
  arrived_.clear();
}

void Engine::run(const std::function<void(double)>& progress) {
  GPUSCHED_ASSERT(!ran_, "Engine::run() called twice");
  ran_ = true;
  queue_.reserve(workload_.size() * 2 + config_.node_events.size());
  if (config_.skip_equivalent) {
    class_.reserve(workload_.size());
    for (const auto& spec : workload_) class_.push_back(hook_->equivalence_class(spec));
  }
  for (std::uint32_t i = 0; i < workload_.size(); ++i) queue_.push(workload_[i].submit, JobArrival{JobId{i}});
  for (const auto& ne : config_.node_events) {
    GPUSCHED_ASSERT(ne.node.value < cluster_->node_count(), "node event on an unknown node");
    if (ne.up) queue_.push(ne.time, NodeUp{ne.node});
    else queue_.push(ne.time, NodeDown{ne.node});
  }
  now_ = workload_.empty() ? SimTime::zero() : std::min(SimTime::zero(), workload_.front().submit);
  for (auto* o : observers_) o->on_start(*this);
  const double expected = static_cast<double>(std::max<std::size_t>(1, workload_.size() * (config_.fill_mode ? 1 : 2)));
  if (progress) progress(0.0);

  while (!queue_.empty()) {
    const SimTime t = queue_.next_time();
    if (t > config_.horizon) break;
    if (t != now_) {
      for (auto* o : observers_) o->on_advance(now_, t, *this);
      now_ = t;
    }
    bool freed = false;
    while (!queue_.empty() && queue_.next_time() == t) {
      const auto e = queue_.pop();
      handle(e, freed);
      ++events_processed_;
      if (progress && (events_processed_ & 0xFFF) == 0) {
        progress(std::min(0.99, static_cast<double>(events_processed_) / expected));
      }
    }
    if (freed || !arrived_.empty()) schedule_cycle(freed);
  }
  SimTime end = now_;
  if (!config_.horizon.is_forever() && config_.horizon > now_ && !queue_.empty()) end = config_.horizon;
  if (end != now_) {
    for (auto* o : observers_) o->on_advance(now_, end, *this);
    now_ = end;
  }
  for (auto* o : observers_) o->on_end(now_, *this);
  if (progress) progress(1.0);
}

}  // namespace gpusched::sim
