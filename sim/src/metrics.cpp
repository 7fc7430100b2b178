#include <gpusched/sim/metrics.hpp>

#include <algorithm>
#include <numeric>

#include <gpusched/assert.hpp>
#include <gpusched/error.hpp>
#include <gpusched/input_range.hpp>

namespace gpusched::sim {

Distribution Distribution::of(std::vector<std::int64_t> v) {
  Distribution d;
  d.count = static_cast<std::int64_t>(v.size());
  if (v.empty()) return d;
  std::sort(v.begin(), v.end());
  const long double sum = std::accumulate(v.begin(), v.end(), static_cast<long double>(0));
  d.mean_s = static_cast<double>(sum / static_cast<long double>(v.size()) / 1e6L);
  // Nearest-rank percentile: the smallest value with at least p% of values <= it.
  auto pct = [&](double p) {
    auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(v.size())));
    rank = std::clamp<std::size_t>(rank, 1, v.size());
    return static_cast<double>(v[rank - 1]) / 1e6;
  };
  d.p50_s = pct(50);
  d.p95_s = pct(95);
  d.p99_s = pct(99);
  d.max_s = static_cast<double>(v.back()) / 1e6;
  return d;
}

void to_json(nlohmann::json& j, const Distribution& d) {
  j = {{"count", d.count}, {"mean_s", d.mean_s}, {"p50_s", d.p50_s}, {"p95_s", d.p95_s}, {"p99_s", d.p99_s}, {"max_s", d.max_s}};
}

void to_json(nlohmann::json& j, const Summary& s) {
  j = {{"jobs", {{"total", s.jobs}, {"completed", s.completed}, {"failed", s.failed}, {"running", s.running},
                 {"pending", s.pending}, {"not_arrived", s.not_arrived}, {"requeued", s.requeued},
                 {"rejected", s.rejected}, {"deactivated", s.deactivated}, {"partial", s.partial}, {"pods_ready_requeues", s.pods_ready_requeues}}},
       {"preemption", {{"preemptions", s.preemptions}, {"evictions", s.evictions}, {"lost_gpu_hours", s.lost_gpu_hours},
                       {"overhead_gpu_hours", s.overhead_gpu_hours}}},
       {"cluster", {{"nodes", s.nodes}, {"gpus", s.gpus}}},
       {"time", {{"first_submit_s", s.first_submit.seconds()}, {"last_submit_s", s.last_submit.seconds()}, {"end_s", s.end.seconds()}, {"makespan_s", s.makespan_s}}},
       {"allocation", {{"gpu_pct_time_weighted", s.gpu_alloc_pct_time_weighted},
                       {"cpu_pct_time_weighted", s.cpu_alloc_pct_time_weighted},
                       {"gpu_hours", s.gpu_hours_allocated},
                       {"gpu_pct_peak", s.gpu_alloc_pct_peak},
                       {"gpu_pct_while_arriving", s.gpu_alloc_pct_arrivals}}},
       {"queue", {{"peak_pending", s.peak_pending}}},
       {"wait", s.wait},
       {"jct", s.jct},
       {"queueing", s.queueing},
       {"engine", {{"events", s.events}, {"schedule_attempts", s.schedule_attempts}}}};
}

MetricsCollector::MetricsCollector(SimTime interval) : interval_(interval) {
  GPUSCHED_ASSERT(interval.us > 0, "sample interval must be positive");
}

TimeSample MetricsCollector::sample_now(SimTime t, const Engine& e) const {
  const auto& tot = e.cluster().totals();
  auto pct = [](std::int64_t used, std::int64_t total) {
    return total > 0 ? 100.0 * static_cast<double>(used) / static_cast<double>(total) : 0.0;
  };
  return {t,
          pct(tot.gpu_used_milli, tot.gpu_milli),
          pct(tot.gpus_busy, tot.gpus),
          pct(tot.cpu_used_milli, tot.cpu_milli),
          pct(tot.memory_used_mib, tot.memory_mib),
          static_cast<std::int64_t>(e.pending_count()),
          static_cast<std::int64_t>(e.running_count())};
}

void MetricsCollector::on_start(const Engine& e) {
  first_submit_ = e.workload().empty() ? SimTime::zero() : e.workload().front().submit;
  last_submit_ = e.workload().empty() ? SimTime::zero() : e.workload().back().submit;
  next_sample_ = first_submit_;
}

void MetricsCollector::on_advance(SimTime from, SimTime to, const Engine& e) {
  const auto& tot = e.cluster().totals();
  const auto span = static_cast<long double>((to - std::max(from, first_submit_)).us);
  if (to > first_submit_ && span > 0) {
    gpu_milli_us_ += static_cast<long double>(tot.gpu_used_milli) * span;
    cpu_milli_us_ += static_cast<long double>(tot.cpu_used_milli) * span;
    const auto arriving = static_cast<long double>((std::min(to, last_submit_) - std::max(from, first_submit_)).us);
    if (arriving > 0) gpu_milli_us_arrivals_ += static_cast<long double>(tot.gpu_used_milli) * arriving;
  }
  peak_pending_ = std::max<std::int64_t>(peak_pending_, static_cast<std::int64_t>(e.pending_count()));
  peak_gpu_milli_ = std::max(peak_gpu_milli_, tot.gpu_used_milli);
  // The state is constant on [from, to): every sample point in there sees it.
  while (next_sample_ < to) {
    if (next_sample_ >= from) {
      // The interval is checked where it is read, but the run's length is not known then: a
      // microsecond interval over a long run would take memory without bound. Stop with an
      // error naming the field instead.
      if (samples_.size() >= kMaxSamples) {
        throw_error(ErrorCode::kScenarioOutOfRange, {"", 0, "/outputs/sample_interval_s"},
                    format_number(interval_.seconds()) + " s gives more than " + format_number(static_cast<double>(kMaxSamples)) +
                        " samples before t = " + format_number(next_sample_.seconds()) +
                        " s of this run: raise sample_interval_s");
      }
      samples_.push_back(sample_now(next_sample_, e));
    }
    next_sample_ = next_sample_ + interval_;
  }
}

void MetricsCollector::on_end(SimTime end, const Engine& e) {
  samples_.push_back(sample_now(end, e));
  Summary s;
  const auto& tot = e.cluster().totals();
  s.jobs = static_cast<std::int64_t>(e.workload().size());
  s.nodes = static_cast<std::int64_t>(e.cluster().node_count());
  s.gpus = tot.gpus;
  s.first_submit = first_submit_;
  s.end = end;
  std::vector<std::int64_t> waits, jcts, queueing;
  SimTime last_completion = first_submit_;
  for (std::size_t i = 0; i < e.jobs().size(); ++i) {
    const auto& rt = e.jobs()[i];
    const auto& spec = e.workload()[i];
    switch (rt.state) {
      case JobState::kCompleted:
        ++s.completed;
        if (static_cast<std::int32_t>(rt.placements.size()) < spec.tasks && spec.request.tpu.hosts <= 1) ++s.partial;
        jcts.push_back((rt.end - spec.submit).us);
        queueing.push_back(std::max<std::int64_t>(0, (rt.end - spec.submit).us - std::llround(rt.attained_us)));
        last_completion = std::max(last_completion, rt.end);
        break;
      case JobState::kFailed:
        ++s.failed;
        s.rejected += rt.rejected ? 1 : 0;
        s.deactivated += rt.deactivated ? 1 : 0;
        break;
      case JobState::kRunning: ++s.running; break;
      case JobState::kPending: ++s.pending; break;
      case JobState::kNotArrived: ++s.not_arrived; break;
    }
    if (!rt.start.is_forever() && rt.state != JobState::kPending) waits.push_back((rt.start - spec.submit).us);
  }
  s.makespan_s = (last_completion - first_submit_).seconds();
  const long double horizon_us = static_cast<long double>((end - first_submit_).us);
  if (horizon_us > 0 && tot.gpu_milli > 0) {
    s.gpu_alloc_pct_time_weighted = static_cast<double>(100.0L * gpu_milli_us_ / (horizon_us * static_cast<long double>(tot.gpu_milli)));
  }
  if (horizon_us > 0 && tot.cpu_milli > 0) {
    s.cpu_alloc_pct_time_weighted = static_cast<double>(100.0L * cpu_milli_us_ / (horizon_us * static_cast<long double>(tot.cpu_milli)));
  }
  const long double arrivals_us = static_cast<long double>((std::min(end, last_submit_) - first_submit_).us);
  if (arrivals_us > 0 && tot.gpu_milli > 0) {
    s.gpu_alloc_pct_arrivals = static_cast<double>(100.0L * gpu_milli_us_arrivals_ / (arrivals_us * static_cast<long double>(tot.gpu_milli)));
  }
  s.last_submit = last_submit_;
  s.gpu_hours_allocated = static_cast<double>(gpu_milli_us_ / 1000.0L / 3.6e9L);
  s.peak_pending = peak_pending_;
  s.gpu_alloc_pct_peak = tot.gpu_milli > 0 ? 100.0 * static_cast<double>(peak_gpu_milli_) / static_cast<double>(tot.gpu_milli) : 0.0;
  s.requeued = requeued_;
  s.pods_ready_requeues = static_cast<std::int64_t>(e.pods_ready_requeues());
  s.preemptions = static_cast<std::int64_t>(e.preemptions());
  s.evictions = static_cast<std::int64_t>(e.evictions());
  s.lost_gpu_hours = e.lost_gpu_hours();
  s.overhead_gpu_hours = e.overhead_gpu_hours();
  s.wait = Distribution::of(std::move(waits));
  s.jct = Distribution::of(std::move(jcts));
  s.queueing = Distribution::of(std::move(queueing));
  s.events = e.events_processed();
  s.schedule_attempts = e.schedule_attempts();
  summary_ = s;
}

}  // namespace gpusched::sim
