// Tiresias compatibility mode (see gpusched/scenario/tiresias.hpp and docs/tiresias.md). Each
// policy follows the public simulator's loop (SymbioticLab/Tiresias simulator/run_sim.py:
// one_queue_fifo_sim_jobs, fit_first_sim_jobs, smallest_first_sim_jobs, shortest_first_sim_jobs,
// dlas_sim_jobs), step by step, including the orders its lists keep between events.
#include <gpusched/scenario/tiresias.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <list>
#include <map>
#include <optional>
#include <sstream>

#include <gpusched/error.hpp>
#include <gpusched/gpu_catalog.hpp>
#include <gpusched/resources.hpp>
#include <gpusched/policies/framework/profile.hpp>
#include <gpusched/policies/framework/registry.hpp>
#include <gpusched/policies/framework/scheduler.hpp>
#include <gpusched/traces/philly.hpp>

namespace gpusched::scenario {

namespace {

constexpr std::int64_t kNever = std::numeric_limits<std::int64_t>::max();

enum class Status : std::uint8_t { kPending, kRunning, kEnd };

struct Job {
  std::size_t index = 0;   // in the trace's order (the result's)
  std::int64_t gpus = 0, submit = 0, duration = 0;
  Status status = Status::kPending;
  std::int64_t start = kNever, end = -1;
  std::int64_t last_check = 0, total_executed = 0, executed = 0, pending = 0, last_pending = 0;
  std::int64_t remaining = 0, remaining_gpu = 0;
  std::int64_t preempt = 0, resume = 0, promote = 0;
  std::size_t queue = 0;
};

/// A start event of the simulator: the jobs submitted at one time, and the end_jobs list its
/// dict may be given when a completion falls at the same second (dlas keeps that list when a
/// queue-crossing event comes first: reproduced).
struct StartEvent {
  std::int64_t time = 0;
  std::vector<Job*> starts;
  std::vector<Job*> ends;
};

struct EndEvent {
  std::int64_t time = 0;
  std::vector<Job*> ends;
};

class Sim {
 public:
  Sim(std::span<const TiresiasCompatJob> input, std::int64_t gpus, const TiresiasCompatOptions& o)
      : total_(gpus), options_(o) {
    jobs_.resize(input.size());
    for (std::size_t i = 0; i < input.size(); ++i) {
      jobs_[i].index = i;
      jobs_[i].gpus = input[i].gpus;
      jobs_[i].submit = input[i].submit;
      jobs_[i].duration = input[i].duration;
    }
    // JOBS.sort_all_jobs: a stable sort by submit time; prepare_job_start_events: one event per
    // distinct time, jobs in that order.
    std::vector<Job*> order;
    for (auto& j : jobs_) order.push_back(&j);
    std::stable_sort(order.begin(), order.end(), [](const Job* a, const Job* b) { return a->submit < b->submit; });
    for (Job* j : order) {
      if (starts_.empty() || starts_.back().time != j->submit) starts_.push_back({j->submit, {}, {}});
      starts_.back().starts.push_back(j);
    }
  }

  bool run() {
    const auto& p = options_.policy;
    if (p == "fifo" || p == "fjf") return non_preemptive(p == "fifo");
    if (p == "las" || p == "2d-las") return dlas(p == "2d-las");
    return preemptive();
  }

  std::vector<Job>& jobs() { return jobs_; }

 private:
  void complete(Job* j, std::int64_t t) {
    j->status = Status::kEnd;
    j->end = t;
  }

  /// one_queue_fifo_sim_jobs (fifo) and fit_first_sim_jobs (fjf): start and end events in one
  /// time-sorted list; pending jobs start in arrival order.
  bool non_preemptive(bool fifo) {
    // The simulator's list holds one event per time, sorted: a map. An end at the current time
    // (a zero duration) joins the current event after its ends were handled, and is lost with
    // it, as there.
    struct Event {
      std::vector<Job*> starts, ends;
    };
    std::map<std::int64_t, Event> events;
    for (const auto& s : starts_) events[s.time].starts = s.starts;
    std::list<Job*> pending;
    std::int64_t free = total_;
    while (!events.empty() || !pending.empty()) {
      if (events.empty()) return true;   // "This cluster is not large enough to run the job"
      const auto current = events.begin();
      const std::int64_t t = current->first;
      for (Job* e : current->second.ends) {
        free = std::min(free + e->gpus, total_);   // release_job_res (count): capped at the cluster's GPUs
        complete(e, t);
      }
      for (Job* s : current->second.starts) {
        s->status = Status::kPending;
        pending.push_back(s);
      }
      std::vector<std::list<Job*>::iterator> started;
      if (!fifo || free > 0) {
        for (auto it = pending.begin(); it != pending.end(); ++it) {
          if (!fifo && free <= 0) break;
          if (free >= (*it)->gpus) {
            free -= (*it)->gpus;
            started.push_back(it);
          } else if (fifo) {
            break;
          }
        }
      }
      for (const auto it : started) {
        Job* j = *it;
        pending.erase(it);
        j->status = Status::kRunning;
        j->start = t;
        j->pending = t - j->submit;
        events[t + j->duration].ends.push_back(j);   // add_job_end_event
      }
      events.erase(current);
    }
    return false;
  }

  void add_runnable(Job* s) {
    // JOBS.move_to_runnable
    s->status = Status::kPending;
    s->start = kNever;
    s->last_check = s->submit;
    s->total_executed = 0;
    s->executed = 0;
    s->pending = 0;
    s->last_pending = 0;
    s->remaining = s->duration;
    s->remaining_gpu = s->duration * s->gpus;
    runnable_.push_back(s);
  }

  /// smallest_first_sim_jobs (sjf) and shortest_first_sim_jobs (srtf, srsf).
  bool preemptive() {
    const bool sjf = options_.policy == "sjf";
    const bool gputime = options_.policy == "srsf";
    std::vector<EndEvent> end_events;
    std::size_t next_start = 0;
    while (next_start < starts_.size() || !runnable_.empty()) {
      if (next_start == starts_.size() && end_events.empty()) return true;
      const std::int64_t start_time = next_start < starts_.size() ? starts_[next_start].time : kNever;
      const std::int64_t end_time = end_events.empty() ? kNever : end_events.front().time;
      std::int64_t t = 0;
      std::vector<Job*> ends, arrivals;
      if (end_time < start_time) {
        t = end_time;
        ends = end_events.front().ends;
      } else {
        t = start_time;
        arrivals = starts_[next_start].starts;
        if (end_time == start_time) ends = end_events.front().ends;
        ++next_start;
      }
      for (Job* e : ends) {
        complete(e, t);
        runnable_.erase(std::find(runnable_.begin(), runnable_.end(), e));
      }
      for (Job* s : arrivals) add_runnable(s);
      for (Job* r : runnable_) {
        if (r->status == Status::kRunning) {
          r->total_executed += t - r->last_check;
          r->last_check = t;
          r->remaining = r->duration - r->total_executed;
          if (gputime) r->remaining_gpu = r->remaining * r->gpus;
        } else {
          r->pending += t - r->last_check;
          r->last_check = t;
        }
      }
      std::stable_sort(runnable_.begin(), runnable_.end(), [&](const Job* a, const Job* b) {
        if (sjf) return a->gpus < b->gpus;
        return gputime ? a->remaining_gpu < b->remaining_gpu : a->remaining < b->remaining;
      });
      allocate(t, runnable_);
      // The next completions: every running job's end, grouped by time, sorted stably.
      // Only the earliest completion is ever read: the running jobs ending first, in list order.
      end_events.clear();
      for (Job* r : runnable_) {
        if (r->status != Status::kRunning) continue;
        const std::int64_t end = t + r->remaining;
        if (end_events.empty() || end < end_events.front().time) end_events.assign(1, EndEvent{end, {r}});
        else if (end == end_events.front().time) end_events.front().ends.push_back(r);
      }
    }
    return false;
  }

  /// The allocation rebuilt from an empty cluster, jobs taken in `order`: each that fits runs.
  void allocate(std::int64_t t, const std::vector<Job*>& order) {
    std::int64_t free = total_;
    std::vector<Job*> run, preempt;
    for (Job* j : order) {
      if (free >= j->gpus) {
        free -= j->gpus;
        if (j->start == kNever) j->start = t;
        if (j->status == Status::kPending) run.push_back(j);
      } else if (j->status == Status::kRunning) {
        preempt.push_back(j);
      }
    }
    for (Job* j : preempt) {
      j->status = Status::kPending;
      ++j->preempt;
    }
    for (Job* j : run) {
      j->status = Status::kRunning;
      ++j->resume;
    }
  }

  /// dlas_sim_jobs: las (attained time) and 2d-las (attained GPU time).
  bool dlas(bool gputime) {
    const std::size_t queues_n = options_.queue_limits.size() + 1;
    std::vector<std::list<Job*>> queues(queues_n);
    const double k = options_.starvation_k;
    std::optional<EndEvent> end_event;
    std::int64_t next_jump = kNever;
    std::size_t next_start = 0;
    const auto remove = [](std::list<Job*>& q, Job* j) { q.erase(std::find(q.begin(), q.end(), j)); };
    while (next_start < starts_.size() || !runnable_.empty()) {
      if (next_start == starts_.size() && !end_event) return true;
      StartEvent* start = next_start < starts_.size() ? &starts_[next_start] : nullptr;
      const std::int64_t start_time = start != nullptr ? start->time : kNever;
      const std::int64_t end_time = end_event ? end_event->time : kNever;
      std::int64_t t = kNever;
      enum class Kind { kEnd, kStart, kNone } kind = Kind::kNone;
      if (end_time < start_time) {
        t = end_time;
        kind = Kind::kEnd;
      } else if (end_time > start_time) {
        t = start_time;
        kind = Kind::kStart;
      } else if (end_time != kNever) {
        t = start_time;
        kind = Kind::kStart;
        start->ends = end_event->ends;   // the simulator writes them into the start event's dict
      }
      if (t > next_jump) {   // a queue crossing or a promotion comes first: an empty event
        t = next_jump;
        kind = Kind::kNone;
      }
      const std::vector<Job*> ends = kind == Kind::kEnd ? end_event->ends : kind == Kind::kStart ? start->ends : std::vector<Job*>{};
      for (Job* e : ends) {
        // A start event's ends may be stale (written at a tie, then a crossing came first):
        // the simulator ends such a job all the same; one that already ended is skipped (there
        // the simulator would fail on list.remove).
        if (e->status == Status::kEnd) continue;
        complete(e, t);
        runnable_.erase(std::find(runnable_.begin(), runnable_.end(), e));
        remove(queues[e->queue], e);
      }
      if (kind == Kind::kStart) {
        for (Job* s : start->starts) {
          add_runnable(s);
          s->queue = 0;
          queues[0].push_back(s);
        }
        ++next_start;
      }
      for (Job* r : runnable_) {
        if (r->status == Status::kRunning) {
          const std::int64_t d = t - r->last_check;
          r->total_executed += d;
          r->executed += d;
          r->last_check = t;
          const std::int64_t attained = gputime ? r->executed * r->gpus : r->executed;
          if (r->queue + 1 < queues_n && attained >= options_.queue_limits[r->queue]) {
            queues[r->queue + 1].push_back(r);
            remove(queues[r->queue], r);
            ++r->queue;
          }
        } else {
          const std::int64_t d = t - r->last_check;
          r->last_check = t;
          r->pending += d;
          if (r->executed > 0) r->last_pending += d;
          if (k > 0 && r->queue > 0 && r->total_executed > 0 && r->executed > 0 &&
              r->last_pending >= static_cast<std::int64_t>(static_cast<double>(r->executed) * k)) {
            r->executed = 0;
            r->last_pending = 0;
            queues[0].push_back(r);
            remove(queues[r->queue], r);
            r->queue = 0;
            ++r->promote;
          }
        }
      }
      std::vector<Job*> order;
      for (const auto& q : queues) order.insert(order.end(), q.begin(), q.end());
      allocate(t, order);
      // Within each queue, pending jobs go behind the running ones (in their order).
      for (auto& q : queues) {
        std::stable_partition(q.begin(), q.end(), [](const Job* j) { return j->status != Status::kPending; });
      }
      end_event.reset();
      for (Job* r : runnable_) {
        if (r->status != Status::kRunning) continue;
        const std::int64_t end = t + (r->duration - r->total_executed);
        if (!end_event || end < end_event->time) end_event = EndEvent{end, {r}};
        else if (end == end_event->time) end_event->ends.push_back(r);
      }
      next_jump = kNever;
      for (Job* r : runnable_) {
        std::int64_t jump = kNever;
        if (r->status == Status::kRunning) {
          if (r->queue + 1 < queues_n) {
            const std::int64_t left = options_.queue_limits[r->queue] - r->executed;
            // int(math.ceil((limit - executed_time) // num_gpu) + event_time): attained time
            // (not GPU time) from a GPU-time limit, floored, as the simulator writes it.
            jump = gputime ? floor_div(left, r->gpus) + t : left + t;
          }
        } else if (k > 0 && r->queue > 0 && r->total_executed > 0 && r->executed > 0) {
          const auto diff = static_cast<std::int64_t>(static_cast<double>(r->executed) * k - static_cast<double>(r->last_pending));
          if (diff > 0) jump = diff + t;
        }
        next_jump = std::min(next_jump, jump);
      }
      if (next_jump <= t) {
        // A job attaining the first threshold's GPU-time in under a second: the simulator's
        // prediction, floor((threshold - attained time) / GPUs), is 0 and it repeats the same
        // second forever. Stop with the reason instead.
        throw_error(ErrorCode::kScenarioBadValue, {"tiresias", 0, "queue_limits"},
                    "at " + std::to_string(t) + " s a running job's queue crossing is predicted for the same second, so the "
                    "simulator's loop would never advance (a threshold below a job's GPU count): raise the thresholds");
      }
    }
    return false;
  }

  static std::int64_t floor_div(std::int64_t a, std::int64_t b) {
    const std::int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
  }

  std::int64_t total_;
  TiresiasCompatOptions options_;
  std::vector<Job> jobs_;
  std::vector<StartEvent> starts_;
  std::vector<Job*> runnable_;
};

}  // namespace

const std::vector<std::string>& tiresias_compat_policies() {
  static const std::vector<std::string> p = {"fifo", "fjf", "sjf", "srtf", "srsf", "las", "2d-las"};
  return p;
}

std::vector<TiresiasCompatJob> read_tiresias_compat_jobs(const std::filesystem::path& trace) {
  std::ifstream in(trace, std::ios::binary);
  if (!in) throw_error(ErrorCode::kTraceCannotOpen, {trace.string(), 0, ""}, "cannot open the file");
  GpuCatalog catalog = GpuCatalog::builtin();
  ResourceTable resources;
  const auto workload = traces::read_tiresias_jobs(in, trace.string(), catalog, resources);
  std::vector<TiresiasCompatJob> out;
  out.reserve(workload.size());
  for (const auto& j : workload) {
    // The simulator reads whole seconds: int(float(duration)); submit times are integers.
    out.push_back({j.name, std::int64_t{j.tasks} * j.request.gpu.count, j.submit.us / 1'000'000, j.duration.us / 1'000'000});
  }
  return out;
}

std::int64_t read_tiresias_compat_gpus(const std::filesystem::path& spec) {
  std::ifstream in(spec, std::ios::binary);
  if (!in) throw_error(ErrorCode::kTraceCannotOpen, {spec.string(), 0, ""}, "cannot open the file");
  GpuCatalog catalog = GpuCatalog::builtin();
  ResourceTable resources;
  const auto nodes = traces::read_tiresias_cluster(in, spec.string(), catalog, resources);
  // The simulator reads one row (it keeps the last one of several): take one.
  std::ifstream again(spec, std::ios::binary);
  std::size_t rows = 0;
  for (std::string line; std::getline(again, line);) rows += line.find_first_not_of(" \t\r") != std::string::npos ? 1 : 0;
  if (rows > 2) {
    throw_error(ErrorCode::kTraceBadValue, {spec.string(), 3, ""},
                "compat mode takes a cluster spec of one row (the simulator keeps only the last of several)");
  }
  std::int64_t gpus = 0;
  for (const auto& n : nodes) gpus += static_cast<std::int64_t>(n.gpus.size());
  return gpus;
}

TiresiasCompatRun run_tiresias_compat(std::span<const TiresiasCompatJob> jobs, std::int64_t total_gpus,
                                      const TiresiasCompatOptions& options) {
  const auto& names = tiresias_compat_policies();
  if (std::find(names.begin(), names.end(), options.policy) == names.end()) {
    std::string list;
    for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
    throw_error(ErrorCode::kScenarioBadValue, {"tiresias", 0, "policy"},
                "unknown policy \"" + options.policy + "\" (compat mode runs " + list + ")");
  }
  if (total_gpus <= 0) throw_error(ErrorCode::kScenarioBadValue, {"tiresias", 0, "cluster"}, "the cluster has no GPUs");
  if (!(options.starvation_k >= 0) || options.starvation_k > 1e6) {
    throw_error(ErrorCode::kScenarioBadValue, {"tiresias", 0, "starvation_k"}, "must be a number from 0 to 1,000,000");
  }
  if (options.queue_limits.size() != 2) {
    throw_error(ErrorCode::kScenarioBadValue, {"tiresias", 0, "queue_limits"},
                "the simulator has three queues: give two thresholds (default 3250,7200)");
  }
  for (std::size_t i = 0; i < options.queue_limits.size(); ++i) {
    if (options.queue_limits[i] <= 0 || (i > 0 && options.queue_limits[i] <= options.queue_limits[i - 1])) {
      throw_error(ErrorCode::kScenarioBadValue, {"tiresias", 0, "queue_limits"}, "thresholds must be positive and increasing");
    }
  }
  for (const auto& j : jobs) {
    if (j.gpus <= 0 || j.duration < 0 || j.submit < 0) {
      throw_error(ErrorCode::kScenarioBadValue, {"tiresias", 0, "job " + j.id}, "GPUs must be positive, times non-negative");
    }
  }
  Sim sim(jobs, total_gpus, options);
  TiresiasCompatRun run;
  run.policy = options.policy;
  run.stuck = sim.run();
  run.jobs.resize(jobs.size());
  for (const auto& j : sim.jobs()) {
    auto& r = run.jobs[j.index];
    r.id = jobs[j.index].id;
    r.gpus = j.gpus;
    r.submit = j.submit;
    r.duration = j.duration;
    r.completed = j.status == Status::kEnd;
    r.start = j.start == kNever ? -1 : j.start;
    r.end = r.completed ? j.end : -1;
    r.pending = j.pending;
    r.preemptions = j.preempt;
    r.resumptions = j.resume;
    r.promotions = j.promote;
  }
  return run;
}

namespace {
/// The JCT figures of a summary from the completed jobs' JCTs and their total queueing time.
void complete_summary(TiresiasCompatSummary& s, std::vector<double> jct, double queueing) {
  s.completed = jct.size();
  if (jct.empty()) return;
  std::sort(jct.begin(), jct.end());
  double sum = 0;
  for (double v : jct) sum += v;
  s.mean_jct = sum / static_cast<double>(jct.size());
  s.mean_pending = queueing / static_cast<double>(jct.size());
  const auto at = [&](double q) {   // linear interpolation between order statistics (numpy's default)
    const double pos = q * static_cast<double>(jct.size() - 1);
    const auto lo = static_cast<std::size_t>(pos);
    const std::size_t hi = std::min(lo + 1, jct.size() - 1);
    return jct[lo] + (jct[hi] - jct[lo]) * (pos - static_cast<double>(lo));
  };
  s.median_jct = at(0.5);
  s.p95_jct = at(0.95);
}
}  // namespace

TiresiasCompatSummary summarize(const TiresiasCompatRun& run) {
  TiresiasCompatSummary s;
  s.jobs = run.jobs.size();
  std::vector<double> jct;
  double pending = 0;
  for (const auto& j : run.jobs) {
    s.preemptions += j.preemptions;
    if (!j.completed) continue;
    jct.push_back(static_cast<double>(j.jct()));
    pending += static_cast<double>(j.pending);
    s.makespan = std::max(s.makespan, static_cast<double>(j.end));
  }
  complete_summary(s, std::move(jct), pending);
  return s;
}

void write_tiresias_compat_jobs(const TiresiasCompatRun& run, const std::filesystem::path& path) {
  std::ofstream out(path, std::ios::binary);
  if (!out) throw_error(ErrorCode::kOutputWrite, {path.string(), 0, ""}, "cannot write the file");
  out << "job_id,num_gpu,submit_time,start_time,end_time,jct,duration,pending_time,preempt,resume,promote,completed\n";
  for (const auto& j : run.jobs) {
    out << j.id << ',' << j.gpus << ',' << j.submit << ',';
    if (j.start >= 0) out << j.start;
    out << ',';
    if (j.completed) out << j.end << ',' << j.jct();
    else out << ',';
    out << ',' << j.duration << ',' << j.pending << ',' << j.preemptions << ',' << j.resumptions << ',' << j.promotions << ','
        << (j.completed ? "true" : "false") << '\n';
  }
  if (!out) throw_error(ErrorCode::kOutputWrite, {path.string(), 0, ""}, "cannot write the file");
}

// ---- gpusched's engine ----

const std::vector<std::string>& tiresias_engine_policies() {
  static const std::vector<std::string> p = {"fifo", "fjf", "sjf", "srtf", "srsf", "las", "2d-las", "gittins"};
  return p;
}

policies::Profile tiresias_profile(const TiresiasEngineOptions& o) {
  const auto& names = tiresias_engine_policies();
  if (std::find(names.begin(), names.end(), o.policy) == names.end()) {
    std::string list;
    for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
    throw_error(ErrorCode::kScenarioBadValue, {"", 0, "policy"}, "unknown policy \"" + o.policy + "\" (" + list + ")");
  }
  auto profile = policies::builtin_profile(o.placement == "count" ? "first-fit" : o.placement, "--placement");
  profile.name = "tiresias-" + o.policy;
  nlohmann::json args = nlohmann::json::object();
  if (o.policy == "las" || o.policy == "2d-las") {
    args = {{"thresholds", o.thresholds}, {"starvation_k", o.starvation_k}, {"within_queue", o.within_queue}};
  } else if (o.policy == "gittins") {
    args = {{"quantum", o.quantum}, {"distribution", o.distribution}, {"within_queue", o.within_queue}};
  }
  profile.queue_sort = policies::PluginRef{o.policy};
  profile.queue_sort.args = args;
  profile.queueing = o.policy == "fifo" ? "strict-fifo" : o.policy == "fjf" ? "greedy" : "preemptive";
  profile.post_filter.clear();   // the preemptive mode preempts by the order, nothing else
  // Checked now, so that a bad argument is reported before any run.
  (void)policies::Scheduler(profile, policies::Registry::builtins(), 1);
  return profile;
}

Scenario tiresias_scenario(const std::filesystem::path& trace, const std::filesystem::path& cluster_spec,
                           const TiresiasEngineOptions& o) {
  auto profile = tiresias_profile(o);
  if (!(o.restart_overhead_s >= 0.0 && o.restart_overhead_s <= 1e10)) {
    throw_error(ErrorCode::kScenarioBadValue, {"", 0, "restart_overhead"}, "the restart overhead must be in [0, 1e10] seconds");
  }
  Scenario sc;
  sc.name = "tiresias-" + o.policy;
  sc.source = trace.string();
  sc.seed = 1;
  sc.catalog = GpuCatalog::builtin();
  {
    std::ifstream in(cluster_spec, std::ios::binary);
    if (!in) throw_error(ErrorCode::kTraceCannotOpen, {cluster_spec.string(), 0, ""}, "cannot open the file");
    sc.nodes = traces::read_tiresias_cluster(in, cluster_spec.string(), sc.catalog, sc.resources);
  }
  traces::TiresiasOptions shape;
  for (const auto& n : sc.nodes) shape.gpus_per_node = std::max<std::int32_t>(1, static_cast<std::int32_t>(n.gpus.size()));
  {
    std::ifstream in(trace, std::ios::binary);
    if (!in) throw_error(ErrorCode::kTraceCannotOpen, {trace.string(), 0, ""}, "cannot open the file");
    sc.jobs = traces::read_tiresias_jobs(in, trace.string(), sc.catalog, sc.resources, shape);
  }
  sc.profile = std::move(profile);
  const auto& args = sc.profile.queue_sort.args;
  sc.count_gpus = o.placement == "count";
  sc.engine.preemption.restart_overhead = SimTime::from_seconds_f(o.restart_overhead_s);
  sc.keep_unplaceable = true;   // the simulator leaves a job larger than the cluster waiting
  sc.document = {{"experiment", "tiresias"},
                 {"trace", trace.string()},
                 {"cluster", cluster_spec.string()},
                 {"policy", o.policy},
                 {"placement", o.placement},
                 {"restart_overhead_s", o.restart_overhead_s},
                 {"queue_sort", sc.profile.queue_sort.name},
                 {"queue_sort_args", args}};
  return sc;
}

TiresiasCompatSummary summarize(std::span<const sim::JobRow> jobs) {
  TiresiasCompatSummary s;
  s.jobs = jobs.size();
  std::vector<double> jct;
  double queueing = 0;
  for (const auto& j : jobs) {
    s.preemptions += j.preemptions;
    if (j.state != "completed" || !j.jct_s) continue;
    jct.push_back(*j.jct_s);
    queueing += std::max(0.0, *j.jct_s - j.attained_s);
    s.makespan = std::max(s.makespan, *j.end_s);
  }
  complete_summary(s, std::move(jct), queueing);
  return s;
}

}  // namespace gpusched::scenario
