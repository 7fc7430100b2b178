#include <gpusched/sim/engine.hpp>

#include <algorithm>
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
    : cluster_(&cluster), workload_(workload), hook_(&hook), config_(std::move(config)), jobs_(workload.size()) {
  queue_hash_.reserve(workload.size());
  for (std::size_t i = 0; i < workload.size(); ++i) {
    GPUSCHED_ASSERT(i == 0 || workload[i - 1].submit <= workload[i].submit, "workload not sorted by submit time");
    queue_hash_.push_back(fnv1a64(workload[i].queue));
  }
}

void Engine::call_at(SimTime t, std::function<void(SimTime)> fn) {
  timers_.push_back(std::move(fn));
  queue_.push(t, Timer{static_cast<std::uint32_t>(timers_.size() - 1)});
}

std::uint32_t Engine::intern_reason(std::string r) {
  if (reasons_.back() == r) return static_cast<std::uint32_t>(reasons_.size() - 1);
  reasons_.push_back(std::move(r));
  return static_cast<std::uint32_t>(reasons_.size() - 1);
}

std::uint64_t Engine::signature(const JobSpec& j) const {
  const auto& r = j.request;
  std::uint64_t h = 0xcbf29ce484222325ULL;
  auto mix = [&h](std::uint64_t v) {
    h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  };
  mix(static_cast<std::uint64_t>(r.cpu_milli));
  mix(static_cast<std::uint64_t>(r.memory_mib));
  mix(static_cast<std::uint64_t>(r.gpu.mode));
  mix(static_cast<std::uint64_t>(r.gpu.count));
  mix(static_cast<std::uint64_t>(r.gpu.milli));
  mix(static_cast<std::uint64_t>(r.gpu.memory_mib));
  mix(std::hash<GpuModelMask>{}(r.allowed_models));
  for (const auto& [id, amount] : r.extended) {
    mix(id.value);
    mix(static_cast<std::uint64_t>(amount));
  }
  mix(static_cast<std::uint64_t>(j.tasks));
  mix(static_cast<std::uint64_t>(j.min_available));
  mix(queue_hash_[static_cast<std::size_t>(&j - workload_.data())]);
  return h;
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
  if (!config_.fill_mode && !spec.duration.is_forever()) {
    rt.finish_event = queue_.push(now_ + spec.duration, JobFinish{j});
  }
  for (auto* o : observers_) o->on_job_start(now_, j, rt.placements, *this);
}

void Engine::stop_job(JobId j) {
  auto& rt = jobs_[j.value];
  GPUSCHED_ASSERT(rt.state == JobState::kRunning, "stopping a job that is not running");
  for (const auto& p : rt.placements) cluster_->release(workload_[j.value].request, p);
  queue_.cancel(rt.finish_event);
  --running_;
}

void Engine::handle(const EventQueue::Entry& e, bool& capacity_freed) {
  std::visit(
      [&](const auto& ev) {
        using T = std::decay_t<decltype(ev)>;
        if constexpr (std::is_same_v<T, JobArrival>) {
          jobs_[ev.job.value].state = JobState::kPending;
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
          capacity_freed = true;
          for (auto* o : observers_) o->on_node(now_, ev.node, true, *this);
        } else if constexpr (std::is_same_v<T, Timer>) {
          timers_[ev.id](now_);
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
  std::unordered_map<std::uint64_t, std::uint32_t> failed;   // signature -> reason
  std::vector<JobId> still_pending;
  still_pending.reserve(order->size());
  for (JobId j : *order) {
    const auto& spec = workload_[j.value];
    auto& rt = jobs_[j.value];
    const std::uint64_t sig = config_.skip_equivalent ? signature(spec) : 0;
    auto seen = config_.skip_equivalent ? failed.find(sig) : failed.end();
    if (seen != failed.end()) {
      rt.reason = seen->second;
    } else {
      ++attempts_;
      const Status s = hook_->schedule(*cluster_, spec, j, scratch_);
      if (s.ok()) {
        start_job(j, scratch_);
        continue;
      }
      rt.reason = intern_reason(hook_->last_diagnosis());
      if (config_.skip_equivalent) failed.emplace(sig, rt.reason);
    }
    if (!config_.retry) {
      rt.state = JobState::kFailed;
      rt.end = now_;
      for (auto* o : observers_) o->on_job_fail(now_, j, reasons_[rt.reason], *this);
    } else {
      still_pending.push_back(j);
    }
  }
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
