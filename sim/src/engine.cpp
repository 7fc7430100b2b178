#include <gpusched/sim/engine.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>

#include <gpusched/assert.hpp>
#include <gpusched/constraints.hpp>
#include <gpusched/dra/allocator.hpp>
#include <gpusched/error.hpp>
#include <gpusched/input_range.hpp>
#include <gpusched/interrupt.hpp>
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

std::string_view to_string(QueuePolicy q) {
  switch (q) {
    case QueuePolicy::kGreedy: return "greedy";
    case QueuePolicy::kStrictFifo: return "strict-fifo";
    case QueuePolicy::kEasyBackfill: return "easy-backfill";
    case QueuePolicy::kPreemptive: return "preemptive";
  }
  return "?";
}

std::string_view to_string(RestartPolicy r) {
  switch (r) {
    case RestartPolicy::kFromZero: return "from-zero";
    case RestartPolicy::kCheckpoint: return "checkpoint";
    case RestartPolicy::kResume: return "resume";
  }
  return "?";
}

SimTime WaitForPodsReady::backoff(std::uint32_t n) const {
  // Kueue pkg/workload UpdateRequeueState: base x 2^(n-1), capped at max (jitter left out).
  if (n == 0) return SimTime::zero();
  std::int64_t us = backoff_base.us;
  for (std::uint32_t i = 1; i < n && us < backoff_max.us; ++i) {
    if (us > backoff_max.us / 2) {   // doubling would pass the cap (and could overflow)
      us = backoff_max.us;
      break;
    }
    us *= 2;
  }
  return SimTime::from_us(std::min(us, backoff_max.us));
}

Engine::Engine(ClusterState& cluster, std::span<const JobSpec> workload, SchedulingHook& hook, EngineConfig config)
    : cluster_(&cluster), workload_(workload), hook_(&hook), config_(std::move(config)), jobs_(workload.size()),
      fresh_(workload.size(), 0), dirty_flag_(cluster.node_count(), 0), on_node_(cluster.node_count()) {
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

namespace {
bool is_shared_replica(GpuPartition p) { return p == GpuPartition::kTimeSlicing || p == GpuPartition::kMps; }
}  // namespace

double Engine::job_rate(JobId j) const {
  const auto& rt = jobs_[j.value];
  double slowdown = 1.0;
  for (const auto& p : rt.placements) slowdown = std::max(slowdown, p.slowdown);
  double share = 1.0;
  if (!sharers_.empty()) {
    const auto& opts = cluster_->device_options();
    const double u = std::clamp(workload_[j.value].gpu_util, 1e-6, 1.0);
    for (const auto& p : rt.placements) {
      for (const auto& grant : p.gpus) {
        const auto flat = flat_gpu(p, grant);
        const auto& g = cluster_->all_gpus()[flat];
        if (!is_shared_replica(g.partition)) continue;
        const auto& jobs = sharers_[flat];
        double demand = 0.0;
        for (JobId other : jobs) demand += std::clamp(workload_[other.value].gpu_util, 1e-6, 1.0);
        // Sharers split the GPU in proportion to what they would use alone (never more than it has).
        double r = std::min(1.0, 1.0 / std::max(demand, 1e-12));
        if (g.partition == GpuPartition::kTimeSlicing) {
          if (jobs.size() > 1) r /= 1.0 + opts.time_slicing_overhead;   // context switches
        } else {
          r = std::min(r, 1.0 / (g.replicas * u));   // an MPS client gets at most 1/replicas of the SMs
        }
        share = std::min(share, r);
      }
    }
  }
  if (uses_claim_devices(workload_[j.value]) && !rt.placements.empty()) {
    // The jobs of a shared claim run on its node and use its devices together, as NVIDIA's DRA
    // driver sets them up (dra::DeviceClaims::sharing): split in proportion to what each would
    // use alone, as replicas of a time-sliced or MPS GPU are (above).
    const auto& c = *workload_[j.value].constraints.claims;
    const auto& claim = workload_[j.value].constraints.resource_claim;
    // Each task is a pod using the claim: a job's tasks share it with one another too.
    const NodeId node = rt.placements.front().node;
    double demand = 0.0;
    std::size_t users = 0;
    for (const JobId k : on_node_[node.value]) {
      if (!runs_with_claim(k, claim)) continue;
      const auto& ps = jobs_[k.value].placements;
      const auto tasks = static_cast<std::size_t>(std::count_if(ps.begin(), ps.end(), [&](const TaskPlacement& p) { return p.node == node; }));
      demand += static_cast<double>(tasks) * std::clamp(workload_[k.value].gpu_util, 1e-6, 1.0);
      users += tasks;
    }
    double r = std::min(1.0, 1.0 / std::max(demand, 1e-12));
    if (c.sharing == dra::DeviceClaims::Sharing::kTimeSlicing) {
      if (users > 1) r /= 1.0 + cluster_->device_options().time_slicing_overhead;   // context switches
    } else {
      // An MPS client gets at most its active thread percentage of the SMs.
      r = std::min(r, c.mps_active_thread_percent / 100.0 / std::clamp(workload_[j.value].gpu_util, 1e-6, 1.0));
    }
    share = std::min(share, r);
  }
  return share / slowdown;
}

bool Engine::uses_claim_devices(const JobSpec& spec) {
  const auto& c = spec.constraints.claims;
  return c && c->shared && c->holder.count > 0;   // (shared: the job names a resource_claim)
}

bool Engine::runs_with_claim(JobId k, const CompactString& claim) const {
  return jobs_[k.value].state == JobState::kRunning && workload_[k.value].constraints.resource_claim == claim;
}

void Engine::retime_claim_users(JobId j) {
  const auto& spec = workload_[j.value];
  const auto& rt = jobs_[j.value];
  if (!uses_claim_devices(spec) || rt.placements.empty()) return;
  std::vector<JobId> users;
  for (const JobId k : on_node_[rt.placements.front().node.value]) {
    if (k != j && runs_with_claim(k, spec.constraints.resource_claim)) users.push_back(k);
  }
  std::sort(users.begin(), users.end());   // deterministic event order
  for (const JobId k : users) retime(k);
}

void Engine::retime(JobId j) {
  auto& rt = jobs_[j.value];
  const auto& spec = workload_[j.value];
  if (rt.state != JobState::kRunning || config_.fill_mode || spec.duration.is_forever()) return;
  if (now_ > rt.running_since) {
    rt.work_left_us = std::max(0.0, rt.work_left_us - static_cast<double>((now_ - rt.running_since).us) * rt.rate);
    rt.running_since = now_;
  }
  rt.rate = job_rate(j);
  queue_.cancel(rt.finish_event);
  // Full speed keeps integer arithmetic exact; otherwise round up to the next microsecond.
  // Every input time is at most kMaxInputSeconds, but a slow-down (MPS clients, time-slicing,
  // device slow-downs) stretches a duration by a factor the input does not bound: a job whose
  // end would pass the clock stops the run with an error rather than wrapping to a negative time.
  const double left_f = rt.rate == 1.0 ? rt.work_left_us : std::ceil(rt.work_left_us / rt.rate - 1e-3);
  constexpr double kClockLimitUs = static_cast<double>(std::numeric_limits<std::int64_t>::max() / 2);
  if (!(left_f < kClockLimitUs - static_cast<double>(rt.running_since.us))) {
    throw_error(ErrorCode::kScenarioOutOfRange, {"", 0, "duration"},
                "job \"" + spec.name + "\" runs at " + format_number(rt.rate) + " of full speed on its placement, so its " +
                    format_number(spec.duration.seconds()) + " s of work would end after the clock's limit (" +
                    format_number(kClockLimitUs / 1e6) + " s); give it a shorter duration or fewer sharers per GPU");
  }
  const auto left = rt.rate == 1.0 ? static_cast<std::int64_t>(rt.work_left_us)
                                   // (a nanosecond of slack: 3000 s x 1.3 must not become 3900.000001 s)
                                   : static_cast<std::int64_t>(left_f);
  rt.finish_event = queue_.push(rt.running_since + SimTime::from_us(left), JobFinish{j});
}

void Engine::retime_sharers(const std::vector<TaskPlacement>& placements, JobId except) {
  if (sharers_.empty()) return;
  std::vector<JobId> touched;
  for (const auto& p : placements) {
    for (const auto& grant : p.gpus) {
      const auto flat = flat_gpu(p, grant);
      for (JobId other : sharers_[flat]) {
        if (other != except && std::find(touched.begin(), touched.end(), other) == touched.end()) touched.push_back(other);
      }
    }
  }
  std::sort(touched.begin(), touched.end());   // deterministic event order
  for (JobId other : touched) retime(other);
}

void Engine::start_job(JobId j, std::vector<TaskPlacement>& placements) {
  auto& rt = jobs_[j.value];
  const auto& spec = workload_[j.value];
  const auto& opts = cluster_->device_options();
  rt.state = JobState::kRunning;
  rt.placements = placements;
  rt.reason = 0;
  ++rt.attempts;
  ++running_;
  // A GPU instance created for the job must be set up first: the job holds its resources from
  // now and starts running after the reconfiguration delay.
  bool created = false;
  bool shares = false;
  for (const auto& p : rt.placements) {
    for (const auto& g : p.gpus) {
      created = created || g.mig_created;
      shares = shares || is_shared_replica(cluster_->all_gpus()[flat_gpu(p, g)].partition);
    }
  }
  rt.running_since = now_ + SimTime::from_us(created ? opts.mig_reconfigure_us : 0);
  rt.start = rt.running_since;
  if (rt.running_since > now_) {
    // Observers hear of the placement now and of the start when the instances are ready.
    ++running_events_;
    queue_.push(rt.running_since, JobRunning{j, rt.attempts});
  }
  if (static_cast<std::int32_t>(rt.placements.size()) < spec.tasks && spec.request.tpu.hosts <= 1) growing_.push_back(j);
  rt.work_left_us = spec.duration.is_forever() ? 0.0 : std::max(0.0, static_cast<double>(spec.duration.us) - rt.work_kept_us);
  if (rt.attempts > 1 && !spec.duration.is_forever() && !config_.fill_mode) {
    // A restart after an eviction restores its checkpoint first, holding what it was given.
    if (const auto overhead = restart_overhead_us(j); overhead > 0) rt.work_left_us += static_cast<double>(overhead);
  }
  for (const auto& p : rt.placements) {
    auto& list = on_node_[p.node.value];
    if (list.empty() || list.back() != j) list.push_back(j);
  }
  if (const SimTime est = spec.estimate(); tracks_ends() && !est.is_forever()) {
    // Kept sorted by estimated end: reserve() reads the jobs in that order without sorting them.
    const std::pair<SimTime, JobId> key{rt.start + est, j};
    running_list_.insert(std::lower_bound(running_list_.begin(), running_list_.end(), key), key);
  }
  if (shares) {
    if (sharers_.empty()) sharers_.resize(cluster_->all_gpus().size());
    for (const auto& p : rt.placements) {
      for (const auto& g : p.gpus) {
        const auto flat = flat_gpu(p, g);
        if (is_shared_replica(cluster_->all_gpus()[flat].partition)) sharers_[flat].push_back(j);
      }
    }
  }
  // No finish event for a job that never ends: an id that matches no event, so stop_job() cannot
  // cancel an unrelated one (event 0, or the finish event of the job's previous run).
  rt.finish_event = std::numeric_limits<EventId>::max();
  rt.rate = 1.0;
  retime(j);
  if (shares) retime_sharers(rt.placements, j);
  retime_claim_users(j);
  hook_->job_started(spec, j, rt.placements);
  ++starts_;
  for (auto* o : observers_) o->on_job_start(now_, j, rt.placements, *this);
}

bool Engine::hand_over_claim(JobId j, std::vector<TaskPlacement>& released) {
  // The claim's jobs all run on its node, and only the one that allocated it was granted devices
  // (such jobs state none of their own). Kubernetes keeps a claim allocated while any pod uses it
  // (the resourceclaim controller clears the allocation once status.reservedFor is empty), so the
  // devices pass to another job of the claim, which gives them back when it ends in turn. The
  // cluster is not touched: the grants stay allocated, now held by the other job's task. The
  // stopping job's own record keeps them (outputs say what it held).
  const auto& claim = workload_[j.value].constraints.resource_claim;
  released = jobs_[j.value].placements;
  bool handed = false;
  for (auto& p : released) {
    if (p.gpus.empty() && p.nics == 0) continue;
    for (const JobId k : on_node_[p.node.value]) {
      if (k == j || !runs_with_claim(k, claim)) continue;
      auto& to = jobs_[k.value];
      for (auto& q : to.placements) {
        if (q.node != p.node) continue;
        // As when an elastic job grows: the hook hears a stop and a start with all the
        // placements (its accounting follows the devices), and attained GPU service counts the
        // time before at the GPUs held then.
        hook_->job_stopped(workload_[k.value], k, to.placements);
        const double held_before = held_gpus(k);
        q.gpus.insert(q.gpus.end(), p.gpus.begin(), p.gpus.end());
        q.nics |= p.nics;
        received_[k.value].emplace_back(now_, held_gpus(k) - held_before);
        if (const SimTime from = progress_from(k); now_ > from) {
          to.attained_gpu_us += static_cast<double>((now_ - from).us) * (held_before - held_gpus(k));
        }
        hook_->job_started(workload_[k.value], k, to.placements);
        p.gpus.clear();
        p.nics = 0;
        handed = true;
        break;
      }
      break;
    }
  }
  return handed;
}

void Engine::stop_job(JobId j, bool release) {
  auto& rt = jobs_[j.value];
  GPUSCHED_ASSERT(rt.state == JobState::kRunning, "stopping a job that is not running");
  // Attained service is added after the hook heard of the stop (it reads the run as still going).
  // The run's first microseconds after an eviction restore the checkpoint: overhead, not service.
  const double held = held_gpus(j);
  const double ran = now_ > rt.start ? static_cast<double>((now_ - rt.start).us) : 0.0;
  const double restoring = std::min(ran, static_cast<double>(run_overhead_us(j)));
  std::vector<TaskPlacement> kept;
  const bool handed = release && !workload_[j.value].constraints.resource_claim.empty() && hand_over_claim(j, kept);
  for (const auto& p : handed ? kept : rt.placements) {
    if (release) {
      cluster_->release(workload_[j.value].request, p);
      mark_dirty(p.node);
    }
    auto& list = on_node_[p.node.value];
    if (auto it = std::find(list.begin(), list.end(), j); it != list.end()) list.erase(it);
  }
  if (const SimTime est = workload_[j.value].estimate(); tracks_ends() && !est.is_forever()) {
    const std::pair<SimTime, JobId> key{rt.start + est, j};
    const auto it = std::lower_bound(running_list_.begin(), running_list_.end(), key);
    GPUSCHED_ASSERT(it != running_list_.end() && *it == key, "running list out of step");
    running_list_.erase(it);
  }
  std::erase(growing_, j);
  hook_->job_stopped(workload_[j.value], j, rt.placements);
  rt.attained_us += ran - restoring;
  rt.attained_gpu_us += (ran - restoring) * held;
  rt.overhead_paid_us += restoring;
  // GPUs a shared claim's holder handed over part-way count for the restore from then on only.
  double overhead_gpu_us = restoring * held;
  if (const auto it = received_.empty() ? received_.end() : received_.find(j.value); it != received_.end()) {
    for (const auto& [at, g] : it->second) {
      overhead_gpu_us -= g * std::min(restoring, std::max(0.0, static_cast<double>(at.us) - static_cast<double>(rt.start.us)));
    }
    received_.erase(it);
  }
  overhead_gpu_hours_ += overhead_gpu_us / 3.6e9;
  queue_.cancel(rt.finish_event);
  --running_;
  if (!sharers_.empty()) {
    bool shared = false;
    for (const auto& p : rt.placements) {
      for (const auto& g : p.gpus) {
        auto& list = sharers_[flat_gpu(p, g)];
        if (auto it = std::find(list.begin(), list.end(), j); it != list.end()) {
          list.erase(it);
          shared = true;
        }
      }
    }
    if (shared) {
      rt.state = JobState::kCompleted;   // so retime() leaves it alone; the caller sets the real state
      retime_sharers(rt.placements, j);
    }
  }
  retime_claim_users(j);   // (j has left on_node_: the others share without it)
}

std::pair<double, double> Engine::progress(JobId j) const {
  const auto& rt = jobs_[j.value];
  const auto& spec = workload_[j.value];
  const double ran = now_ > rt.running_since ? static_cast<double>((now_ - rt.running_since).us) : 0.0;
  if (config_.fill_mode || spec.duration.is_forever()) return {ran, 0.0};   // nothing to keep
  const double left = std::max(0.0, rt.work_left_us - ran * rt.rate);
  // Below the kept work while a restart overhead is being paid (left counts the overhead too).
  const double done = static_cast<double>(spec.duration.us) - left;
  double kept = 0.0;
  if (config_.preemption.restart == RestartPolicy::kCheckpoint && config_.preemption.checkpoint_interval.us > 0) {
    const auto k = static_cast<double>(config_.preemption.checkpoint_interval.us);
    kept = std::max(rt.work_kept_us, std::floor(done / k) * k);
  } else if (config_.preemption.restart == RestartPolicy::kResume) {
    kept = std::max(rt.work_kept_us, done);
  }
  return {std::max(done, kept), kept};
}

SimTime Engine::progress_from(JobId j) const { return jobs_[j.value].start + SimTime::from_us(run_overhead_us(j)); }

double Engine::attained_us(JobId j) const {
  const auto& rt = jobs_[j.value];
  const SimTime from = progress_from(j);
  if (rt.state != JobState::kRunning || now_ <= from) return rt.attained_us;
  return rt.attained_us + static_cast<double>((now_ - from).us);
}

double Engine::attained_gpu_us(JobId j) const {
  const auto& rt = jobs_[j.value];
  const SimTime from = progress_from(j);
  if (rt.state != JobState::kRunning || now_ <= from) return rt.attained_gpu_us;
  return rt.attained_gpu_us + static_cast<double>((now_ - from).us) * held_gpus(j);
}

double Engine::work_done_us(JobId j) const {
  const auto& rt = jobs_[j.value];
  if (rt.state != JobState::kRunning) return rt.state == JobState::kCompleted ? static_cast<double>(workload_[j.value].duration.us) : rt.work_kept_us;
  return progress(j).first;
}

double Engine::held_gpus(JobId j) const { return gpusched::held_gpus(jobs_[j.value].placements); }

std::int64_t Engine::restart_overhead_us(JobId j) const {
  const SimTime own = workload_[j.value].constraints.restart_overhead;
  return own.is_forever() ? config_.preemption.restart_overhead.us : own.us;
}

std::int64_t Engine::run_overhead_us(JobId j) const {
  const auto& rt = jobs_[j.value];
  if (rt.attempts <= 1 || workload_[j.value].duration.is_forever() || config_.fill_mode) return 0;
  return restart_overhead_us(j);
}

double Engine::overhead_s(JobId j) const {
  const auto& rt = jobs_[j.value];
  double spent = rt.overhead_paid_us;
  if (rt.state == JobState::kRunning && now_ > rt.start) {
    spent += std::min(static_cast<double>((now_ - rt.start).us), static_cast<double>(run_overhead_us(j)));
  }
  return spent / 1e6;
}

double Engine::work_lost_us(JobId j) const {
  if (jobs_[j.value].state != JobState::kRunning) return 0.0;
  const auto [done, kept] = progress(j);
  return done - kept;
}

void Engine::evict(JobId j, const std::string& why, bool released) {
  auto& rt = jobs_[j.value];
  const auto [done, kept] = progress(j);
  // A shared claim's devices handed to this job at this very instant (their holder was evicted
  // just before, as when a node fails under all the claim's jobs) were not held during the work
  // it loses. (Devices received earlier count for all of it: an approximation.)
  double gpus = held_gpus(j);
  if (const auto it = received_.empty() ? received_.end() : received_.find(j.value); it != received_.end()) {
    for (const auto& [at, g] : it->second) gpus -= at == now_ ? g : 0.0;
  }
  stop_job(j, !released);
  if (released) {
    // The preemptor may not use all the victim freed: other waiting jobs may fit there now.
    for (const auto& p : rt.placements) mark_dirty(p.node);
  }
  const double lost = std::max(0.0, done - kept);
  rt.work_kept_us = kept;
  rt.lost_work_us += lost;
  ++rt.evictions;
  ++evictions_;
  rt.lost_gpu_hours += lost / 3.6e9 * gpus;
  lost_gpu_hours_ += lost / 3.6e9 * gpus;
  rt.placements.clear();
  rt.reason = intern_reason(why);
  // Kueue orders a preempted workload by its creation time again.
  if (!order_override_.empty()) order_override_[j.value].reset();
  if (config_.retry) {
    rt.state = JobState::kPending;
    fresh_[j.value] = 1;
    requeued_.push_back(j);
    arm_pods_ready(j);
    // Preemption victims are announced once all of them have stopped (start_placed).
    if (released) deferred_requeues_.emplace_back(j, rt.reason);
    else for (auto* o : observers_) o->on_job_requeue(now_, j, why, *this);
  } else {
    rt.state = JobState::kFailed;
    rt.end = now_;
    left(j);
    for (auto* o : observers_) o->on_job_fail(now_, j, why, *this);
  }
}

void Engine::start_placed(JobId j) {
  if (!hook_->last_victims().empty()) {
    // At one instant every release comes before the acquisition that uses it, so that the
    // event log replays line by line without over-commitment: the victims leave (and observers
    // hear of it) before the preemptor starts. The scheduler already released the victims and
    // placed the preemptor; its allocation is taken back meanwhile (undo_allocate is exact,
    // GPU instances included), so every callback sees what the running jobs hold.
    const auto& request = workload_[j.value].request;
    for (auto it = scratch_.rbegin(); it != scratch_.rend(); ++it) cluster_->undo_allocate(request, *it);
    // Copied: evicting tells the hook, which may reuse its victim list.
    const std::vector<JobId> victims(hook_->last_victims().begin(), hook_->last_victims().end());
    for (JobId v : victims) {
      ++preemptions_;
      ++jobs_[v.value].preemptions;
      evict(v, "preempted by " + workload_[j.value].name, true);
    }
    for (const auto& [v, reason] : deferred_requeues_) {
      for (auto* o : observers_) o->on_job_requeue(now_, v, reasons_[reason], *this);
    }
    deferred_requeues_.clear();
    for (const auto& p : scratch_) cluster_->allocate(request, p);
  }
  start_job(j, scratch_);
}

void Engine::handle(const EventQueue::Entry& e, bool& capacity_freed) {
  std::visit(
      [&](const auto& ev) {
        using T = std::decay_t<decltype(ev)>;
        if constexpr (std::is_same_v<T, JobArrival>) {
          auto& rt = jobs_[ev.job.value];
          rt.state = JobState::kPending;
          for (auto* o : observers_) o->on_submit(now_, ev.job, *this);
          // Admission at creation (Kubernetes ResourceQuota): a refused job never queues.
          const Status admitted = hook_->admit(workload_[ev.job.value], ev.job);
          if (!admitted.ok()) {
            rt.state = JobState::kFailed;
            rt.end = now_;
            rt.rejected = true;
            ++rejected_;
            rt.reason = intern_reason(std::string(admitted.reason));
            for (auto* o : observers_) o->on_job_fail(now_, ev.job, reasons_[rt.reason], *this);
            return;
          }
          fresh_[ev.job.value] = 1;
          arrived_.push_back(ev.job);
          arm_pods_ready(ev.job);
          const auto& c = workload_[ev.job.value].constraints;
          if (!c.gang_timeout.is_forever()) {
            const JobId j = ev.job;
            call_at(now_ + c.gang_timeout, [this, j](SimTime) { gang_timeout(j); });
          }
        } else if constexpr (std::is_same_v<T, JobFinish>) {
          stop_job(ev.job);
          auto& rt = jobs_[ev.job.value];
          rt.state = JobState::kCompleted;
          rt.end = now_;
          left(ev.job);
          capacity_freed = true;
          for (auto* o : observers_) o->on_job_finish(now_, ev.job, *this);
        } else if constexpr (std::is_same_v<T, NodeDown>) {
          cluster_->set_schedulable(ev.node, false);
          for (auto* o : observers_) o->on_node(now_, ev.node, false, *this);
          const std::string why = "node " + cluster_->spec(ev.node).name + " went down";
          // The running jobs with a task on the node, in job order (as a scan of all jobs would
          // visit them); copied, since stopping them edits the list.
          std::vector<JobId> hit_jobs(on_node_[ev.node.value].begin(), on_node_[ev.node.value].end());
          std::sort(hit_jobs.begin(), hit_jobs.end());
          for (const JobId hj : hit_jobs) {
            const std::uint32_t i = hj.value;
            auto& rt = jobs_[i];
            if (rt.state != JobState::kRunning) continue;
            capacity_freed = true;
            if (config_.requeue_on_node_down) {
              evict(JobId{i}, why, false);
            } else {
              stop_job(JobId{i});
              rt.placements.clear();
              rt.reason = intern_reason(why);
              rt.state = JobState::kFailed;
              rt.end = now_;
              left(JobId{i});
              for (auto* o : observers_) o->on_job_fail(now_, JobId{i}, why, *this);
            }
          }
        } else if constexpr (std::is_same_v<T, NodeUp>) {
          cluster_->set_schedulable(ev.node, true);
          mark_dirty(ev.node);
          capacity_freed = true;
          for (auto* o : observers_) o->on_node(now_, ev.node, true, *this);
        } else if constexpr (std::is_same_v<T, NodeTaint>) {
          const auto& ne = config_.node_events[ev.index];
          const auto& taint = *ne.taint;
          if (ne.untaint) {
            if (cluster_->remove_taint(ne.node, taint.key, taint.effect) > 0) {
              mark_dirty(ne.node);
              capacity_freed = true;
            }
            return;
          }
          cluster_->add_taint(ne.node, taint);
          if (taint.effect != TaintEffect::kNoExecute) return;
          // NoExecute: running jobs that do not tolerate the taint are evicted (all their tasks).
          const std::string why = "node " + cluster_->spec(ne.node).name + " tainted " + taint.key +
                                  (taint.value.empty() ? "" : "=" + taint.value) + ":NoExecute";
          const std::vector<JobId> here(on_node_[ne.node.value].begin(), on_node_[ne.node.value].end());
          for (JobId j : here) {
            if (tolerated(workload_[j.value].constraints.tolerations, taint)) continue;
            evict(j, why, false);
            capacity_freed = true;
          }
        } else if constexpr (std::is_same_v<T, JobRunning>) {
          --running_events_;
          const auto& rt = jobs_[ev.job.value];
          if (rt.state != JobState::kRunning || rt.attempts != ev.attempt) return;   // stopped meanwhile
          for (auto* o : observers_) o->on_job_running(now_, ev.job, *this);
        } else if constexpr (std::is_same_v<T, Reorder>) {
          if (ev.generation != reorder_generation_) return;   // a later one replaced it
          reorder_at_ = SimTime::forever();
          reorder_due_ = true;
        } else if constexpr (std::is_same_v<T, Timer>) {
          // Moved out first: the callback may call call_at(), which can reallocate timers_.
          const auto fn = std::move(timers_[ev.id]);
          fn(now_);
        }
      },
      e.event);
}

bool Engine::arrival_next() {
  if (next_arrival_ >= workload_.size()) return false;
  if (queue_.empty()) return true;
  const SimTime a = workload_[next_arrival_].submit;
  const SimTime q = queue_.next_time();
  return a != q ? a < q : arrival_base_ + next_arrival_ < queue_.next_id();
}

EventQueue::Entry Engine::next_event() {
  if (!arrival_next()) return queue_.pop();
  queue_.take_external();
  const auto i = static_cast<std::uint32_t>(next_arrival_++);
  return {workload_[i].submit, arrival_base_ + i, JobArrival{JobId{i}}};
}

void Engine::push_node_event(SimTime t, NodeId n, bool up) {
  GPUSCHED_ASSERT(t >= now_ && n.value < cluster_->node_count(), "node event in the past or on an unknown node");
  if (up) queue_.push(t, NodeUp{n});
  else queue_.push(t, NodeDown{n});
}

SimTime Engine::reserve(JobId head) {
  GPUSCHED_ASSERT(config_.queue_policy == QueuePolicy::kEasyBackfill, "reserve() outside EASY backfill: running_list_ is not kept");
  // Running jobs by estimated end (start + declared walltime, else duration); a job past its
  // estimate is taken to end now. Jobs that never end are never released.
  // running_list_ holds exactly those jobs, sorted by (start + estimate, job): the jobs past
  // their estimate come first and, all taken to end now, are ordered by job among themselves;
  // the rest keep their order. That is the order of sorting the (max(now, end), job) pairs.
  // The search below reads only as far as the jobs it releases: ends(k) is the k-th pair of
  // that order, read in place (no O(running) list per reservation).
  const auto future = std::upper_bound(running_list_.begin(), running_list_.end(), now_,
                                       [](SimTime t, const std::pair<SimTime, JobId>& e) { return t < e.first; });
  const auto past = static_cast<std::size_t>(future - running_list_.begin());
  past_ends_.clear();
  for (std::size_t k = 0; k < past; ++k) past_ends_.push_back(running_list_[k].second);
  std::sort(past_ends_.begin(), past_ends_.end());
  auto ends = [&](std::size_t k) {
    return k < past ? std::pair<SimTime, JobId>{now_, past_ends_[k]} : running_list_[k];
  };
  drop_shadow();
  reserved_nodes_.clear();
  unreserved_ok_ = false;
  if (running_list_.empty()) return SimTime::forever();
  const auto& spec = workload_[head.value];
  // One scratch copy, moved forward (jobs end: release) and back (allocate again) in end order.
  // Copy-assigned into the kept one: its buffers are reused (a fresh copy allocates them all).
  if (shadow_store_) *shadow_store_ = *cluster_;
  else shadow_store_.emplace(*cluster_);
  shadow_ok_ = true;
  ClusterState& c = *shadow_store_;
  std::size_t released = 0;
  auto release_to = [&](std::size_t k) {
    for (; released < k; ++released) {
      const JobId j = ends(released).second;
      for (const auto& p : jobs_[j.value].placements) c.release(workload_[j.value].request, p);
    }
    while (released > k) {
      --released;
      const JobId j = ends(released).second;
      const auto& ps = jobs_[j.value].placements;
      for (auto it = ps.rbegin(); it != ps.rend(); ++it) c.undo_release(workload_[j.value].request, *it);   // exact: no MIG replay
    }
  };
  std::vector<TaskPlacement> out;
  auto fits = [&](bool keep_nodes) {
    if (!hook_->what_if(c, spec, head, out).ok()) return false;
    for (auto it = out.rbegin(); it != out.rend(); ++it) {
      if (keep_nodes) reserved_nodes_.push_back(it->node);
      c.undo_allocate(spec.request, *it);
    }
    return true;
  };
  // Fitting only gets easier as more jobs end: exponential search for the first k that fits
  // (k = 0 failed: the job is waiting), then bisection. O(log n) what-ifs, O(n) releases.
  const std::size_t n = running_list_.size();
  std::size_t lo = 0, hi = 1;
  for (;;) {
    release_to(hi);
    if (fits(false)) break;
    if (hi == n) {
      drop_shadow();
      return SimTime::forever();
    }
    lo = hi;
    hi = std::min(2 * hi, n);
  }
  while (hi - lo > 1) {
    const std::size_t mid = lo + (hi - lo) / 2;
    release_to(mid);
    if (fits(false)) hi = mid;
    else lo = mid;
  }
  // Jobs ending at the same instant as the hi-th end with it.
  while (hi < n && ends(hi).first == ends(hi - 1).first) ++hi;
  release_to(hi);
  // The nodes the reserved job would take then: backfill tries the other nodes first.
  (void)fits(true);
  std::sort(reserved_nodes_.begin(), reserved_nodes_.end());
  reserved_nodes_.erase(std::unique(reserved_nodes_.begin(), reserved_nodes_.end()), reserved_nodes_.end());
  return ends(hi - 1).first;
}

bool Engine::backfill_allowed(JobId j, const std::vector<TaskPlacement>& placements) {
  const auto& spec = workload_[j.value];
  const SimTime est = spec.estimate();
  if (!est.is_forever() && !config_.fill_mode && now_ + est <= reserved_at_) return true;   // done before the reservation
  // Runs past the reservation: allowed only if the reserved job still fits beside it then.
  ClusterState& shadow = *shadow_store_;
  for (const auto& p : placements) shadow.allocate(spec.request, p);
  std::vector<TaskPlacement> head;
  const bool ok = hook_->what_if(shadow, workload_[reserved_job_.value], reserved_job_, head).ok();
  for (auto it = head.rbegin(); it != head.rend(); ++it) shadow.undo_allocate(workload_[reserved_job_.value].request, *it);
  if (!ok) {
    for (auto it = placements.rbegin(); it != placements.rend(); ++it) shadow.undo_allocate(spec.request, *it);
  }
  return ok;
}

void Engine::gang_timeout(JobId j) {
  auto& rt = jobs_[j.value];
  if (rt.state != JobState::kPending || rt.attempts != 0) return;   // started once: no timeout
  std::erase(pending_, j);
  std::erase(arrived_, j);
  if (rt.backing_off) {
    rt.backing_off = false;
    --backing_off_;
  }
  rt.state = JobState::kFailed;
  rt.end = now_;
  const auto& spec = workload_[j.value];
  rt.reason = intern_reason("gang timeout after " + std::to_string(spec.constraints.gang_timeout.us / 1'000'000) +
                            " s: " + std::to_string(spec.min_available) + " tasks never fitted at once");
  left(j);
  for (auto* o : observers_) o->on_job_fail(now_, j, reasons_[rt.reason], *this);
}

void Engine::arm_pods_ready(JobId j) {
  const auto& w = config_.wait_for_pods_ready;
  if (!w.enabled || workload_[j.value].min_available <= 1) return;
  const std::uint32_t generation = ++jobs_[j.value].timer_generation;
  ++ready_timers_;
  call_at(now_ + w.timeout, [this, j, generation](SimTime) {
    --ready_timers_;
    pods_ready_timeout(j, generation);
  });
}

namespace {
std::string seconds_text(SimTime t) {
  // Whole seconds print without decimals ("300"), others with up to 6 ("0.5").
  if (t.us % 1'000'000 == 0) return std::to_string(t.us / 1'000'000);
  std::string s = std::to_string(static_cast<double>(t.us) / 1e6);
  while (!s.empty() && s.back() == '0') s.pop_back();
  return s;
}
}  // namespace

void Engine::pods_ready_timeout(JobId j, std::uint32_t generation) {
  auto& rt = jobs_[j.value];
  // Started, left, or entered the queue again since: this timer is stale.
  if (rt.state != JobState::kPending || rt.backing_off || rt.timer_generation != generation) return;
  const auto& w = config_.wait_for_pods_ready;
  if (rt.requeues > 0 && rt.starts_at_requeue == starts_ && queue_.live() == ready_timers_ + running_events_) {
    // Nothing but waitForPodsReady timers is left to happen and no job has started since this
    // gang's last requeue: requeuing it again could only repeat forever (Kueue would, in a
    // cluster where nothing else ever changes). It stays pending and the run can end.
    rt.reason = intern_reason("not started within the PodsReady timeout of " + seconds_text(w.timeout) + " s after " +
                              std::to_string(rt.requeues) +
                              " requeue(s); nothing else can change, so it is not requeued again");
    return;
  }
  std::erase(pending_, j);
  std::erase(arrived_, j);
  std::erase(requeued_, j);
  const std::string timeout = "not started within the PodsReady timeout of " + seconds_text(w.timeout) + " s";
  if (w.backoff_limit_count && rt.requeues + 1 > *w.backoff_limit_count) {
    // Kueue: deactivated (.spec.active = false), WorkloadRequeuingLimitExceeded.
    rt.state = JobState::kFailed;
    rt.end = now_;
    rt.deactivated = true;
    rt.reason = intern_reason("deactivated: exceeding the maximum number of re-queuing retries (backoff_limit_count " +
                              std::to_string(*w.backoff_limit_count) + "); " + timeout);
    left(j);
    for (auto* o : observers_) o->on_job_fail(now_, j, reasons_[rt.reason], *this);
    return;
  }
  ++rt.requeues;
  rt.starts_at_requeue = starts_;
  ++pods_ready_requeues_;
  rt.backing_off = true;
  ++backing_off_;
  const SimTime until = now_ + w.backoff(rt.requeues);
  rt.reason = intern_reason("requeued after a PodsReady timeout (" + timeout + "), requeue " +
                            std::to_string(rt.requeues) + ": backoff until t=" + seconds_text(until) + " s");
  if (w.timestamp == RequeueTimestamp::kEviction) {
    // Kueue orders the requeued workload by its eviction time: behind the jobs already waiting.
    if (order_override_.empty()) order_override_.resize(workload_.size());
    order_override_[j.value] = std::make_unique<JobSpec>(workload_[j.value]);
    order_override_[j.value]->submit = now_;
  }
  const std::uint32_t gen = ++rt.timer_generation;
  ++ready_timers_;
  call_at(until, [this, j, gen](SimTime) {
    --ready_timers_;
    backoff_done(j, gen);
  });
  for (auto* o : observers_) o->on_job_backoff(now_, j, until, reasons_[rt.reason], *this);
}

void Engine::backoff_done(JobId j, std::uint32_t generation) {
  auto& rt = jobs_[j.value];
  if (rt.state != JobState::kPending || !rt.backing_off || rt.timer_generation != generation) return;
  rt.backing_off = false;
  --backing_off_;
  fresh_[j.value] = 1;
  arrived_.push_back(j);
  arm_pods_ready(j);
}

void Engine::schedule_cycle(bool full) {
  auto before = [this](JobId a, JobId b) { return hook_->before(order_spec(a), a, order_spec(b), b); };
  std::sort(arrived_.begin(), arrived_.end(), before);
  // A queue order that reads usage (fair share) changes as jobs start and stop: re-sort.
  if (hook_->dynamic_order()) std::stable_sort(pending_.begin(), pending_.end(), before);
  // Without freed capacity, jobs already waiting would fail again: only new arrivals are tried.
  std::vector<JobId>* order = &arrived_;
  // Strict FIFO and backfill must see the jobs already waiting ahead of new arrivals.
  if ((full || config_.queue_policy != QueuePolicy::kGreedy) && !pending_.empty()) {
    if (arrived_.empty()) {
      order = &pending_;   // nothing to merge: the queue itself, left as it is until the cycle ends
    } else if (!hook_->dynamic_order() && arrived_.size() <= 8) {
      // A few arrivals into a long queue: each goes after the waiting jobs it does not precede,
      // where std::merge would put it (the order is fixed, so both lists are sorted by it).
      tried_.assign(pending_.begin(), pending_.end());
      for (JobId a : arrived_) tried_.insert(std::upper_bound(tried_.begin(), tried_.end(), a, before), a);
      order = &tried_;
    } else {
      tried_.clear();
      tried_.reserve(pending_.size() + arrived_.size());
      std::merge(pending_.begin(), pending_.end(), arrived_.begin(), arrived_.end(), std::back_inserter(tried_), before);
      order = &tried_;
    }
  }
  // A job that failed before, when one task suffices to start it (min_available == 1), fits now
  // only on a node that gained capacity since: retry it there. A gang needs several tasks at
  // once, some of which may fit on unchanged nodes, so it is retried everywhere.
  // The nodes that gained capacity before this cycle. Evictions during the cycle mark nodes
  // for the next one.
  std::vector<NodeId> changed_nodes;
  changed_nodes.swap(dirty_);
  for (NodeId n : changed_nodes) dirty_flag_[n.value] = 0;
  std::sort(changed_nodes.begin(), changed_nodes.end());
  std::span<const NodeId> changed = changed_nodes;
  // Evictions free capacity at once: a later job of this cycle may use it, as a full retry would.
  // So the nodes they free join this cycle's changed nodes, and failed classes are tried again.
  auto absorb_evictions = [&] {
    for (NodeId n : dirty_) {
      const auto at = std::lower_bound(changed_nodes.begin(), changed_nodes.end(), n);
      if (at == changed_nodes.end() || *at != n) changed_nodes.insert(at, n);
    }
    changed = changed_nodes;
    failed_.clear();
  };
  auto& failed = failed_;   // equivalence class -> reason (0: failed on changed nodes only)
  failed.clear();
  // Kept between cycles (with tried_ and merged_), so a cycle allocates nothing for its lists.
  auto& still_pending = still_pending_;
  still_pending.clear();
  still_pending.reserve(order->size());
  // Strict FIFO: the first job that does not fit blocks the rest. EASY backfill: it gets a
  // reservation; later jobs start only if they do not delay it.
  bool blocked = false;
  // A reservation is kept from cycle to cycle while nothing ended (jobs that backfilled since
  // were added to its scratch cluster); capacity freed, or a job starting ahead of the head,
  // means it is computed again.
  if (full) {
    drop_shadow();
    reserved_job_ = JobId{};
    reserved_at_ = SimTime::forever();
  }
  bool head_found = false;
  bool started_ahead = false;
  const auto policy = config_.queue_policy;
  for (JobId j : *order) {
    const auto& spec = workload_[j.value];
    auto& rt = jobs_[j.value];
    if (blocked) {
      still_pending.push_back(j);
      continue;
    }
    const bool fresh = fresh_[j.value] != 0;
    fresh_[j.value] = 0;
    const std::uint64_t cls = config_.skip_equivalent ? class_[j.value] : 0;
    auto seen = config_.skip_equivalent ? failed.find(cls) : failed.end();
    if (seen != failed.end()) {
      if (seen->second != 0) rt.reason = seen->second;
      else if (fresh) rt.reason = intern_reason("not tried: a job with the same request could not be placed at this time");
    } else if (!fresh && config_.retry_changed_nodes_only && changed.empty() && hook_->node_local() && spec.constraints.resource_claim.empty()) {
      // Nothing gained capacity: it would fail again. (A shared DRA claim freed by a job's end
      // opens every node to the claim's jobs, whatever gained capacity.)
    } else {
      const bool narrow = !fresh && config_.retry_changed_nodes_only && spec.min_available == 1 && hook_->node_local() &&
                          spec.constraints.resource_claim.empty();
      ++attempts_;
      const Status s = hook_->schedule(*cluster_, spec, j, scratch_, narrow ? changed : std::span<const NodeId>{});
      if (s.ok() && !head_found) started_ahead = true;
      if (s.ok() && head_found && shadow_ok_ && hook_->last_victims().empty() && !backfill_allowed(j, scratch_)) {
        // It fits now but would delay the reserved job: give the resources back, and try once
        // more on the nodes the reserved job will not use (Slurm reserves nodes for it).
        for (auto it = scratch_.rbegin(); it != scratch_.rend(); ++it) cluster_->undo_allocate(spec.request, *it);
        bool placed = false;
        if (!reserved_nodes_.empty() && reserved_nodes_.size() < cluster_->node_count()) {
          // The other nodes, built once per reservation (reserve() sets reserved_nodes_).
          if (!unreserved_ok_) {
            unreserved_nodes_.clear();
            unreserved_nodes_.reserve(cluster_->node_count() - reserved_nodes_.size());
            for (std::uint32_t n = 0, r = 0; n < cluster_->node_count(); ++n) {
              if (r < reserved_nodes_.size() && reserved_nodes_[r].value == n) ++r;
              else unreserved_nodes_.push_back(NodeId{n});
            }
            unreserved_ok_ = true;
          }
          ++attempts_;
          if (hook_->schedule(*cluster_, spec, j, scratch_, unreserved_nodes_).ok()) {
            // A placement that preempted (the victims are already released) is kept as the main
            // path keeps it: preemption, not backfill, decided it.
            if (!hook_->last_victims().empty() || backfill_allowed(j, scratch_)) {
              placed = true;
            } else {
              for (auto it = scratch_.rbegin(); it != scratch_.rend(); ++it) cluster_->undo_allocate(spec.request, *it);
            }
          }
        }
        if (placed) {
          const bool evicted = !hook_->last_victims().empty();
          start_placed(j);
          if (evicted) absorb_evictions();
          continue;
        }
        // Interned once per reserved job (the same index a fresh intern_reason() would return).
        if (backfill_reason_job_ != reserved_job_ || backfill_reason_ == 0) {
          backfill_reason_ = intern_reason("backfill: would delay the job holding the reservation (" +
                                           workload_[reserved_job_.value].name + ")");
          backfill_reason_job_ = reserved_job_;
        }
        rt.reason = backfill_reason_;
        still_pending.push_back(j);
        continue;
      }
      if (s.ok()) {
        const bool evicted = !hook_->last_victims().empty();
        start_placed(j);
        if (evicted) absorb_evictions();
        continue;
      }
      // A narrowed attempt keeps the reason of the job's last full evaluation.
      if (!narrow) rt.reason = intern_reason(hook_->last_diagnosis());
      if (config_.skip_equivalent) failed.emplace(cls, narrow ? 0u : rt.reason);
    }
    if (policy == QueuePolicy::kStrictFifo) blocked = true;
    if (policy == QueuePolicy::kEasyBackfill && !head_found) {
      const bool cached = shadow_ok_ && reserved_job_ == j && !started_ahead;
      const SimTime at = cached ? reserved_at_ : reserve(j);
      if (!at.is_forever()) {
        head_found = true;
        reserved_job_ = j;
        reserved_at_ = at;
      } else {
        drop_shadow();
        reserved_job_ = JobId{};
        reserved_at_ = SimTime::forever();
      }
    }
    if (!config_.retry) {
      rt.state = JobState::kFailed;
      rt.end = now_;
      left(j);
      for (auto* o : observers_) o->on_job_fail(now_, j, reasons_[rt.reason], *this);
    } else {
      still_pending.push_back(j);
    }
  }
  // Rebuild the pending queue: untried old ones + those that stayed, in queue order.
  if (order == &arrived_) {
    if (!hook_->dynamic_order() && still_pending.size() <= 8) {
      // A few jobs into a long queue: each goes after the waiting jobs it does not precede, as
      // std::merge would put it (the order is fixed, so the queue is sorted by it), found by
      // bisection instead of comparing it with every waiting job.
      for (JobId j : still_pending) pending_.insert(std::upper_bound(pending_.begin(), pending_.end(), j, before), j);
    } else {
      merged_.clear();
      merged_.reserve(pending_.size() + still_pending.size());
      std::merge(pending_.begin(), pending_.end(), still_pending.begin(), still_pending.end(), std::back_inserter(merged_),
                 before);
      pending_.swap(merged_);
    }
  } else {
    pending_.swap(still_pending);
  }
  arrived_.clear();
  // Capacity freed: after the waiting jobs, running elastic gangs take what is left.
  if (full && !growing_.empty()) grow_elastic();
}

std::int64_t Engine::gpu_milli_needed(const JobSpec& spec) const {
  // A lower bound on the GPU share (milli) a waiting job needs to start: its minimum of tasks
  // times what each takes of whole GPUs (a time-slicing or MPS replica grants a fraction of
  // one) or a share; 0 for MIG, vGPU and CPU-only requests.
  const auto& g = spec.request.gpu;
  std::int64_t per_task = 0;
  if (g.mode == GpuMode::kWhole || g.mode == GpuMode::kPassthrough) per_task = std::int64_t{g.count} * whole_gpu_min_milli_;
  else if (g.mode == GpuMode::kShared) per_task = g.milli;
  return per_task * std::max<std::int32_t>(1, spec.min_available);
}

namespace {
constexpr std::uint8_t kKept = 0, kStarted = 1, kVictim = 2;
}  // namespace

bool Engine::place_preempting(JobId j, std::size_t pos, std::vector<JobId>& victims) {
  const auto& spec = workload_[j.value];
  victims.clear();
  if (spec.constraints.preempt_never) return false;   // preemptionPolicy: Never waits
  // The running jobs after it in the order that still hold their room, first in order first;
  // those that would not run even with GPUs only counted come last, so they leave first: the
  // walk would not keep them anyway, and a job it will keep is not moved for nothing.
  std::vector<JobId> lower;
  for (std::size_t k = pos + 1; k < active_.size(); ++k) {
    const JobId r = active_[k];
    if (jobs_[r.value].state == JobState::kRunning && decided_[r.value] == kKept && workload_[r.value].constraints.preemptible) {
      lower.push_back(r);
    }
  }
  std::stable_partition(lower.begin(), lower.end(), [this](JobId r) { return by_count_[r.value] == 1; });
  if (lower.empty()) return false;
  auto release = [this](JobId r) {
    for (const auto& p : jobs_[r.value].placements) cluster_->release(workload_[r.value].request, p);
  };
  auto restore = [this](JobId r) {
    const auto& ps = jobs_[r.value].placements;
    for (auto it = ps.rbegin(); it != ps.rend(); ++it) cluster_->undo_release(workload_[r.value].request, *it);
  };
  auto undo_place = [&] {
    for (auto it = scratch_.rbegin(); it != scratch_.rend(); ++it) cluster_->undo_allocate(spec.request, *it);
  };
  // Not enough GPUs even with all of them gone: no placement to look for.
  const auto& totals = cluster_->totals();
  std::int64_t freed = totals.gpu_milli - totals.gpu_used_milli;
  std::int64_t all = freed;
  for (JobId r : lower) all += std::llround(held_gpus(r) * kMilliPerGpu);
  const std::int64_t need = gpu_milli_needed(spec);
  if (all < need) return false;
  // The last in the order leave first: enough of them to free the GPUs it needs, then twice as
  // many more at each try, until it fits or all are gone.
  std::size_t released = 0;   // lower's last `released` jobs
  auto release_next = [&] {
    const JobId r = lower[lower.size() - 1 - released];
    freed += std::llround(held_gpus(r) * kMilliPerGpu);
    release(r);
    ++released;
  };
  while (released < lower.size() && freed < need) release_next();
  for (std::size_t batch = 1;; batch *= 2) {
    ++attempts_;
    if (hook_->what_if(*cluster_, spec, j, scratch_).ok()) break;
    if (released == lower.size()) {
      for (std::size_t k = lower.size() - released; k < lower.size(); ++k) restore(lower[k]);
      return false;
    }
    for (std::size_t k = 0; k < batch && released < lower.size(); ++k) release_next();
  }
  lower.erase(lower.begin(), lower.begin() + static_cast<std::ptrdiff_t>(lower.size() - released));
  std::vector<NodeId> nodes;
  for (const auto& p : scratch_) nodes.push_back(p.node);
  std::sort(nodes.begin(), nodes.end());
  undo_place();
  auto touches = [&](JobId r) {
    for (const auto& p : jobs_[r.value].placements) {
      if (std::binary_search(nodes.begin(), nodes.end(), p.node)) return true;
    }
    return false;
  };
  std::vector<JobId> contested;
  for (JobId r : lower) {
    if (touches(r)) contested.push_back(r);
    else restore(r);
  }
  for (JobId r : contested) {
    restore(r);
    ++attempts_;
    if (hook_->what_if(*cluster_, spec, j, scratch_).ok()) {
      undo_place();
    } else {
      release(r);
      victims.push_back(r);
    }
  }
  ++attempts_;
  if (!hook_->what_if(*cluster_, spec, j, scratch_).ok()) {
    // Only a plugin whose answers change between identical what-ifs gets here: nobody moves.
    for (auto it = victims.rbegin(); it != victims.rend(); ++it) restore(*it);
    victims.clear();
    return false;
  }
  return true;
}

void Engine::preemptive_cycle() {
  auto before = [this](JobId a, JobId b) { return hook_->before(order_spec(a), a, order_spec(b), b); };
  if (in_active_.empty()) {
    in_active_.assign(workload_.size(), 0);
    decided_.assign(workload_.size(), kKept);
    whole_gpu_min_milli_ = kMilliPerGpu;
    for (const auto& g : cluster_->all_gpus()) {
      if (is_shared_replica(g.partition)) whole_gpu_min_milli_ = std::min(whole_gpu_min_milli_, ClusterState::mps_client_milli(g));
    }
  }
  std::erase_if(active_, [this](JobId j) {
    const auto s = jobs_[j.value].state;
    if (s == JobState::kPending || s == JobState::kRunning) return false;
    in_active_[j.value] = 0;
    return true;
  });
  for (JobId j : arrived_) {
    if (in_active_[j.value] || jobs_[j.value].state != JobState::kPending) continue;
    in_active_[j.value] = 1;
    active_.push_back(j);
  }
  // With no job waiting there is nothing to start or preempt; with one job waiting, just
  // arrived, that fits as things are, the walk would keep every running job and start it where
  // it fits now. Both skip the sort (jobs the order ties keep the last sorted cycle's places).
  const bool shortcuts = config_.preemptive_shortcuts;
  if (shortcuts && arrived_.empty() && pending_.empty() && backing_off_ == 0) {
    schedule_reorder();
    if (!growing_.empty()) grow_elastic();
    return;
  }
  if (shortcuts && arrived_.size() == 1 && pending_.empty() && backing_off_ == 0) {
    const JobId j = arrived_.front();
    ++attempts_;
    fresh_[j.value] = 0;
    if (hook_->what_if(*cluster_, workload_[j.value], j, scratch_).ok()) {
      arrived_.clear();
      // start_job's observers see the cluster as the running jobs hold it: allocated as it starts.
      for (auto it = scratch_.rbegin(); it != scratch_.rend(); ++it) cluster_->undo_allocate(workload_[j.value].request, *it);
      for (const auto& p : scratch_) cluster_->allocate(workload_[j.value].request, p);
      std::vector<TaskPlacement> placements = scratch_;
      start_job(j, placements);
      schedule_reorder();
      if (!growing_.empty()) grow_elastic();
      return;
    }
  }
  arrived_.clear();
  // Stable: jobs the order does not tell apart keep their places from the last cycle.
  std::stable_sort(active_.begin(), active_.end(), before);

  const std::int64_t capacity = cluster_->totals().gpu_milli;
  // Which jobs the walk would keep or start if GPUs were only counted (the Tiresias simulator's
  // rule): the victims' order prefers the others (place_preempting). Running jobs that may not
  // be preempted stay whatever comes first; a waiting job that may not preempt starts only if
  // the preemptible running jobs after it leave it room; a job backing off does not start.
  by_count_.resize(workload_.size());
  std::int64_t counted = 0;
  std::vector<std::int64_t>& after = count_after_;   // GPUs of preemptible running jobs from position i on
  after.assign(active_.size() + 1, 0);
  for (std::size_t i = active_.size(); i-- > 0;) {
    const JobId j = active_[i];
    const bool movable = jobs_[j.value].state == JobState::kRunning && workload_[j.value].constraints.preemptible;
    after[i] = after[i + 1] + (movable ? gpu_milli_needed(workload_[j.value]) : 0);
    if (jobs_[j.value].state == JobState::kRunning && !workload_[j.value].constraints.preemptible) counted += gpu_milli_needed(workload_[j.value]);
  }
  for (std::size_t i = 0; i < active_.size(); ++i) {
    const JobId j = active_[i];
    const auto& rt = jobs_[j.value];
    const auto& spec = workload_[j.value];
    const std::int64_t need = gpu_milli_needed(spec);
    if (rt.state == JobState::kRunning && !spec.constraints.preemptible) {
      by_count_[j.value] = 1;   // counted above
      continue;
    }
    const std::int64_t blocked = rt.state == JobState::kPending && spec.constraints.preempt_never ? after[i + 1] : 0;
    by_count_[j.value] = !rt.backing_off && counted + need + blocked <= capacity ? 1 : 0;
    if (by_count_[j.value]) counted += need;
  }
  std::int64_t held = 0;   // GPU milli taken by the jobs walked so far that run or start
  started_.clear();
  victims_.clear();
  failed_.clear();
  std::uint32_t behind_reason = 0, too_big_reason = 0;
  std::vector<JobId> victims;
  for (std::size_t i = 0; i < active_.size(); ++i) {
    const JobId j = active_[i];
    auto& rt = jobs_[j.value];
    const auto& spec = workload_[j.value];
    const bool victim = rt.state == JobState::kRunning && decided_[j.value] == kVictim;
    if (rt.state == JobState::kRunning && !victim) {
      held += std::llround(held_gpus(j) * kMilliPerGpu);
      continue;
    }
    // A job preempted in this walk waits from here on, and may start again elsewhere now.
    if (rt.backing_off) continue;
    fresh_[j.value] = 0;
    const std::int64_t need = gpu_milli_needed(spec);
    if (held + need > capacity) {
      // The jobs before it take so many GPUs that it cannot fit, whatever it preempts.
      if (need > capacity) {   // not the jobs ahead of it: nothing could ever make room
        if (too_big_reason == 0) too_big_reason = intern_reason("preemptive: needs more GPUs than the cluster has");
        rt.reason = too_big_reason;
        continue;
      }
      if (behind_reason == 0) behind_reason = intern_reason("preemptive: the jobs ahead of it in the queue order hold the GPUs it needs");
      rt.reason = behind_reason;
      continue;
    }
    const std::uint64_t cls = config_.skip_equivalent ? class_[j.value] : 0;
    if (config_.skip_equivalent) {
      // Later in the walk the cluster is only fuller and fewer jobs can be preempted: a request
      // that failed fails again.
      if (const auto seen = failed_.find(cls); seen != failed_.end()) {
        rt.reason = seen->second;
        continue;
      }
    }
    ++attempts_;
    if (hook_->what_if(*cluster_, spec, j, scratch_).ok()) {
      if (!victim) decided_[j.value] = kStarted;
      started_.emplace_back(j, scratch_);
      held += need;
      continue;
    }
    if (place_preempting(j, i, victims)) {
      for (JobId v : victims) {
        decided_[v.value] = kVictim;
        victims_.emplace_back(v, j);
      }
      if (!victim) decided_[j.value] = kStarted;
      started_.emplace_back(j, scratch_);
      held += need;
      continue;
    }
    if (victim) continue;   // its reason is its preemption
    rt.reason = intern_reason(spec.constraints.preempt_never
                                  ? "preemptive: does not fit, and its preemptionPolicy is Never"
                                  : "preemptive: does not fit even if every preemptible job after it in the queue order left");
    // (A job that may not preempt says nothing about one that may.)
    if (config_.skip_equivalent && !spec.constraints.preempt_never) failed_.emplace(cls, rt.reason);
  }

  // Observers see each change as it happens: the starts are taken back (what_if left them
  // allocated), the victims leave (every release before the acquisition that uses it, as
  // start_placed), then each job is allocated again as it starts, so every callback sees what the
  // running jobs hold.
  for (auto it = started_.rbegin(); it != started_.rend(); ++it) {
    const auto& request = workload_[it->first.value].request;
    for (auto p = it->second.rbegin(); p != it->second.rend(); ++p) cluster_->undo_allocate(request, *p);
  }
  for (const auto& [v, by] : victims_) {
    ++preemptions_;
    ++jobs_[v.value].preemptions;
    evict(v, "preempted by " + workload_[by.value].name + " (queue order)", true);
    decided_[v.value] = kKept;
  }
  for (const auto& [v, reason] : deferred_requeues_) {
    for (auto* o : observers_) o->on_job_requeue(now_, v, reasons_[reason], *this);
  }
  deferred_requeues_.clear();
  requeued_.clear();   // the victims stay in active_: the next cycle sees them
  for (auto& [j, placements] : started_) {
    for (const auto& p : placements) cluster_->allocate(workload_[j.value].request, p);
    decided_[j.value] = kKept;
    start_job(j, placements);
  }
  pending_.clear();
  for (JobId j : active_) {
    if (jobs_[j.value].state == JobState::kPending && !jobs_[j.value].backing_off) pending_.push_back(j);
  }
  schedule_reorder();
  // Elastic gangs take what is left when no job waits (as under strict FIFO).
  if (!growing_.empty()) grow_elastic();
}

void Engine::schedule_reorder() {
  // An order that moves with time (attained service) is looked at again when it next changes,
  // if a job waits then (a running job overtaken by no one changes nothing). An event no longer
  // needed is taken out, so that it does not prolong the run.
  if (pending_.empty() && backing_off_ == 0) {
    if (!reorder_at_.is_forever()) {
      queue_.cancel(reorder_event_);
      reorder_at_ = SimTime::forever();
    }
    return;
  }
  const SimTime next = hook_->next_order_change(now_);
  if (next.is_forever()) return;
  const SimTime t = std::max(next, now_ + SimTime::from_us(1));
  if (reorder_at_.is_forever() || t < reorder_at_) {
    if (!reorder_at_.is_forever()) queue_.cancel(reorder_event_);
    reorder_at_ = t;
    reorder_event_ = queue_.push(t, Reorder{++reorder_generation_});
  }
}

void Engine::grow_elastic() {
  // Volcano (pkg/scheduler/actions/allocate/allocate.go with the gang plugin's JobReady /
  // JobOrderFn, pkg/scheduler/plugins/gang/gang.go): a job with at least min_available tasks
  // allocated is ready, its pending tasks are allocated and committed one by one in later
  // sessions, and ready jobs come after the jobs still short of their minimum. Growth never
  // evicts. Strict FIFO and backfill grow a job only when no job waits (never ahead of one).
  if (config_.queue_policy != QueuePolicy::kGreedy && !pending_.empty()) return;
  std::vector<JobId> order(growing_);
  std::stable_sort(order.begin(), order.end(),
                   [this](JobId a, JobId b) { return hook_->before(order_spec(a), a, order_spec(b), b); });
  std::vector<TaskPlacement> added;
  for (JobId j : order) {
    auto& rt = jobs_[j.value];
    const auto& spec = workload_[j.value];
    JobSpec rest = spec;   // the tasks not placed yet, each committed on its own
    rest.tasks = spec.tasks - static_cast<std::int32_t>(rt.placements.size());
    rest.min_available = 1;
    ++attempts_;
    if (!hook_->what_if(*cluster_, rest, j, added).ok() || added.empty()) continue;
    // The hook hears of it as a stop and a start with all the placements: its accounting
    // (quotas, shares, PDBs, preemption candidates) then covers the added tasks.
    hook_->job_stopped(spec, j, rt.placements);
    const double held_before = held_gpus(j);
    rt.placements.insert(rt.placements.end(), added.begin(), added.end());
    // attained_gpu_us(j) adds (now - start) x the GPUs held now: the time before this counts at
    // the GPUs held then.
    if (const SimTime from = progress_from(j); now_ > from) {
      rt.attained_gpu_us += static_cast<double>((now_ - from).us) * (held_before - held_gpus(j));
    }
    bool shares = false;
    for (const auto& p : added) {
      auto& list = on_node_[p.node.value];
      if (std::find(list.begin(), list.end(), j) == list.end()) list.push_back(j);
      for (const auto& g : p.gpus) {
        const auto flat = flat_gpu(p, g);
        if (!is_shared_replica(cluster_->all_gpus()[flat].partition)) continue;
        if (sharers_.empty()) sharers_.resize(cluster_->all_gpus().size());
        // Once per grant, as start_job() does (and stop_job() undoes): a grown task on a GPU that
        // already runs one of the job's tasks adds its demand too.
        sharers_[flat].push_back(j);
        shares = true;
      }
    }
    if (static_cast<std::int32_t>(rt.placements.size()) >= spec.tasks) std::erase(growing_, j);
    hook_->job_started(spec, j, rt.placements);
    // Tasks run in lockstep: the job goes at its slowest task's pace.
    if (job_rate(j) != rt.rate) retime(j);
    if (shares) retime_sharers(added, j);
    retime_claim_users(j);   // more of its pods on a shared claim
    for (auto* o : observers_) o->on_job_grow(now_, j, added, *this);
  }
}

void Engine::run(const std::function<void(double)>& progress) {
  GPUSCHED_ASSERT(!ran_, "Engine::run() called twice");
  ran_ = true;
  // The heap holds finishes, timers and node events; arrivals stay in the workload.
  queue_.reserve(std::min<std::size_t>(workload_.size(), std::size_t{1} << 16) + config_.node_events.size());
  if (config_.skip_equivalent) {
    class_.reserve(workload_.size());
    for (const auto& spec : workload_) class_.push_back(hook_->equivalence_class(spec));
  }
  arrival_base_ = queue_.reserve_external(workload_.size());
  next_arrival_ = 0;
  for (const auto& ne : config_.node_events) {
    GPUSCHED_ASSERT(ne.node.value < cluster_->node_count(), "node event on an unknown node");
    if (ne.taint) queue_.push(ne.time, NodeTaint{static_cast<std::uint32_t>(&ne - config_.node_events.data())});
    else if (ne.up) queue_.push(ne.time, NodeUp{ne.node});
    else queue_.push(ne.time, NodeDown{ne.node});
  }
  now_ = workload_.empty() ? SimTime::zero() : std::min(SimTime::zero(), workload_.front().submit);
  hook_->attach(*cluster_, workload_, this);
  for (auto* o : observers_) o->on_start(*this);
  const double expected = static_cast<double>(std::max<std::size_t>(1, workload_.size() * (config_.fill_mode ? 1 : 2)));
  if (progress) progress(0.0);
  // Interruption (gpusched/interrupt.hpp): the flag is one relaxed load, read after every event
  // and cycle; the thread's poll (Python takes the GIL for it) runs every 1024 of them.
  std::uint32_t ticks = 0;
  const auto check_interrupt = [&ticks] {
    if (interrupt_requested() || (++ticks & 0x3FFU) == 0) throw_if_interrupted();
  };

  while (events_left()) {
    const SimTime t = next_event_time();
    if (t > config_.horizon) break;
    if (t != now_) {
      for (auto* o : observers_) o->on_advance(now_, t, *this);
      now_ = t;
    }
    bool freed = false;
    while (events_left() && next_event_time() == t) {
      const auto e = next_event();
      handle(e, freed);
      ++events_processed_;
      check_interrupt();
      if (progress && (events_processed_ & 0xFFF) == 0) {
        progress(std::min(0.99, static_cast<double>(events_processed_) / expected));
      }
    }
    arrived_.insert(arrived_.end(), requeued_.begin(), requeued_.end());
    requeued_.clear();
    if (config_.queue_policy == QueuePolicy::kPreemptive) {
      if (freed || !arrived_.empty() || reorder_due_) {
        reorder_due_ = false;
        preemptive_cycle();
        check_interrupt();
      }
      continue;
    }
    if (freed || !arrived_.empty()) {
      schedule_cycle(freed);
      check_interrupt();
      // Jobs preempted in this cycle are tried again at once (they may fit elsewhere). Each
      // round evicts only lower-priority jobs, so this ends.
      while (!requeued_.empty()) {
        arrived_.swap(requeued_);
        requeued_.clear();
        schedule_cycle(true);   // full: what the preemptor left of the victims' room is free for all
        check_interrupt();
      }
    }
  }
  SimTime end = now_;
  if (!config_.horizon.is_forever() && config_.horizon > now_ && events_left()) end = config_.horizon;
  if (end != now_) {
    for (auto* o : observers_) o->on_advance(now_, end, *this);
    now_ = end;
  }
  for (auto* o : observers_) o->on_end(now_, *this);
  if (progress) progress(1.0);
}

}  // namespace gpusched::sim
