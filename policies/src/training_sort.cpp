#include <gpusched/policies/queuesort/training.hpp>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>

#include <gpusched/error.hpp>

namespace gpusched::policies {

double job_gpus(const JobSpec& spec) {
  const auto& g = spec.request.gpu;
  double per_task = 0.0;
  switch (g.mode) {
    case GpuMode::kShared: per_task = static_cast<double>(g.milli) / kMilliPerGpu; break;
    case GpuMode::kNone: break;
    default: per_task = g.count; break;
  }
  return per_task * spec.tasks;
}

void TrainingOrder::attach(const ClusterState& /*cluster*/, std::span<const JobSpec> workload, const JobsView* jobs) {
  workload_ = workload;
  jobs_ = jobs;
}

double TrainingOrder::gpus(const JobSpec& s, JobId j) const {
  if (s.constraints.claims && jobs_ != nullptr) {
    if (const auto placed = jobs_->placements(j); !placed.empty()) return held_gpus(placed);
  }
  return job_gpus(s);
}

bool SjfOrder::less(const JobSpec& a, JobId ia, const JobSpec& b, JobId ib) const {
  const double ga = gpus(a, ia), gb = gpus(b, ib);
  if (ga != gb) return ga < gb;
  return fifo(a, ia, b, ib);
}

void RemainingOrder::attach(const ClusterState& cluster, std::span<const JobSpec> workload, const JobsView* jobs) {
  TrainingOrder::attach(cluster, workload, jobs);
  key_.assign(workload.size(), 0.0);
  key_at_.assign(workload.size(), SimTime::forever());
}

double RemainingOrder::key(const JobSpec& s, JobId j) const {
  if (s.duration.is_forever()) return std::numeric_limits<double>::infinity();
  if (jobs_ == nullptr || j.value >= key_.size()) {
    const double left = std::max(0.0, static_cast<double>(s.duration.us) - (jobs_ ? jobs_->work_done_us(j) : 0.0));
    return weight_gpus_ ? left * gpus(s, j) : left;
  }
  const SimTime now = jobs_->now();
  if (key_at_[j.value] != now) {
    const double left = std::max(0.0, static_cast<double>(s.duration.us) - jobs_->work_done_us(j));
    key_[j.value] = weight_gpus_ ? left * gpus(s, j) : left;
    key_at_[j.value] = now;
  }
  return key_[j.value];
}

bool RemainingOrder::less(const JobSpec& a, JobId ia, const JobSpec& b, JobId ib) const {
  const double ka = key(a, ia), kb = key(b, ib);
  if (ka != kb) return ka < kb;
  return fifo(a, ia, b, ib);
}

// ---- attained service ----

void ServiceOrder::attach(const ClusterState& cluster, std::span<const JobSpec> workload, const JobsView* jobs) {
  TrainingOrder::attach(cluster, workload, jobs);
  run_.assign(workload.size(), Run{});
  running_.clear();
  // The scheduler extender (gpusched serve) has no view of the jobs' attained service.
  if (jobs == nullptr) warn(std::string(name()) + ": no view of the jobs' attained service here: jobs are taken in FIFO order");
}

void ServiceOrder::job_started(const JobSpec& /*job*/, JobId id, std::span<const TaskPlacement> placements) {
  if (jobs_ == nullptr) return;
  auto& r = run_[id.value];
  r.rate = gpu_time_ ? held_gpus(placements) : 1.0;
  // Service accrues from the run's start (after a MIG reconfiguration delay), or from now when
  // the run was announced again with more tasks (an elastic gang grew).
  r.from = std::max(jobs_->now(), jobs_->progress_from(id));
  r.service_at_start = engine_service(id);
  if (!r.running) running_.push_back(id);
  r.running = true;
}

void ServiceOrder::job_stopped(const JobSpec& /*job*/, JobId id, std::span<const TaskPlacement> /*placements*/) {
  if (jobs_ == nullptr) return;
  // The engine still counts the run as going: its figure includes it.
  run_[id.value].service_at_start = engine_service(id);
  run_[id.value].running = false;
  std::erase(running_, id);
}

SimTime ServiceOrder::reaches(JobId j, double amount) const {
  const auto& r = run_[j.value];
  if (!r.running || r.rate <= 0.0) return SimTime::forever();
  const double dt = std::ceil((amount - r.service_at_start) / r.rate - 1e-6);
  if (!(dt < 4.0e18)) return SimTime::forever();
  return r.from + SimTime::from_us(std::max<std::int64_t>(0, static_cast<std::int64_t>(dt)));
}

// ---- LAS / 2D-LAS ----

namespace {
/// Amounts within this of a threshold count as past it: the engine accrues service in doubles,
/// and an event placed at a crossing must see the crossing.
double slack(double x) { return 1e-6 * std::max(1.0, std::abs(x)); }
}  // namespace

LasOrder::LasOrder(bool gpu_time, std::vector<double> thresholds_s, double starvation_k, bool running_first)
    : ServiceOrder(gpu_time), starvation_k_(starvation_k), running_first_(running_first) {
  for (double t : thresholds_s) thresholds_.push_back(t * 1e6);
}

void LasOrder::attach(const ClusterState& cluster, std::span<const JobSpec> workload, const JobsView* jobs) {
  ServiceOrder::attach(cluster, workload, jobs);
  state_.assign(workload.size(), State{});
  for (std::size_t i = 0; i < workload.size(); ++i) state_[i].entered = workload[i].submit;
  waiting_.clear();
}

SimTime LasOrder::promotion_due(JobId j) const {
  const auto& st = state_[j.value];
  if (starvation_k_ <= 0.0 || st.level == 0 || st.stopped.is_forever() || run_[j.value].running) return SimTime::forever();
  const double ran = jobs_->attained_us(j) - st.base_time;
  if (ran <= 0.0) return SimTime::forever();
  const double wait = std::ceil(starvation_k_ * ran - 1e-6);
  if (!(wait < 4.0e18)) return SimTime::forever();
  return st.stopped + SimTime::from_us(static_cast<std::int64_t>(wait));
}

void LasOrder::refresh(JobId j, SimTime now) const {
  auto& st = state_[j.value];
  if (st.seen == now || st.left) return;
  st.seen = now;
  if (const SimTime due = promotion_due(j); due <= now) {
    st.level = 0;
    st.entered = due;
    st.base = service(j);
    st.base_time = jobs_->attained_us(j);
    ++st.promotions;
  }
  const double s = service(j) - st.base;
  std::int32_t level = 0;
  while (static_cast<std::size_t>(level) < thresholds_.size() && s + slack(thresholds_[level]) >= thresholds_[level]) ++level;
  if (level > st.level) {
    // It entered its new queue when it crossed that queue's threshold.
    const SimTime crossed = reaches(j, st.base + thresholds_[level - 1]);
    st.entered = crossed.is_forever() || crossed > now ? now : crossed;
    st.level = level;
  }
}

void LasOrder::job_started(const JobSpec& job, JobId id, std::span<const TaskPlacement> placements) {
  if (jobs_ == nullptr) return;
  refresh(id, jobs_->now());
  ServiceOrder::job_started(job, id, placements);
  state_[id.value].stopped = SimTime::forever();
  std::erase(waiting_, id);
}

void LasOrder::job_stopped(const JobSpec& job, JobId id, std::span<const TaskPlacement> placements) {
  if (jobs_ == nullptr) return;
  const SimTime now = jobs_->now();
  state_[id.value].seen = SimTime::forever();
  refresh(id, now);   // while it still runs: a crossing during this run gets its time
  ServiceOrder::job_stopped(job, id, placements);
  auto& st = state_[id.value];
  st.stopped = now;
  st.seen = SimTime::forever();
  if (std::find(waiting_.begin(), waiting_.end(), id) == waiting_.end()) waiting_.push_back(id);
}

void LasOrder::job_left(const JobSpec& /*job*/, JobId id) {
  std::erase(waiting_, id);
  if (id.value < state_.size()) state_[id.value].left = true;   // its queue stays as it ended
}

bool LasOrder::less(const JobSpec& a, JobId ia, const JobSpec& b, JobId ib) const {
  if (jobs_ == nullptr) return fifo(a, ia, b, ib);
  const SimTime now = jobs_->now();
  refresh(ia, now);
  refresh(ib, now);
  const auto& sa = state_[ia.value];
  const auto& sb = state_[ib.value];
  if (sa.level != sb.level) return sa.level < sb.level;
  if (running_first_ && run_[ia.value].running != run_[ib.value].running) return run_[ia.value].running;
  if (sa.entered != sb.entered) return sa.entered < sb.entered;
  return fifo(a, ia, b, ib);
}

SimTime LasOrder::next_order_change(SimTime now) const {
  SimTime next = SimTime::forever();
  if (jobs_ == nullptr) return next;
  for (JobId j : running_) {
    refresh(j, now);
    const auto& st = state_[j.value];
    if (static_cast<std::size_t>(st.level) < thresholds_.size()) next = std::min(next, reaches(j, st.base + thresholds_[st.level]));
  }
  for (JobId j : waiting_) {
    refresh(j, now);
    next = std::min(next, promotion_due(j));
  }
  return next;
}

std::int32_t LasOrder::queue_level(JobId id) const {
  if (!jobs_ || state_.empty()) return 0;
  refresh(id, jobs_->now());
  return state_[id.value].level;
}

// ---- Gittins ----

GittinsOrder::GittinsOrder(bool gpu_time, double quantum_s, std::vector<double> samples_s, bool running_first)
    : ServiceOrder(gpu_time), quantum_(quantum_s * 1e6), running_first_(running_first) {
  for (double s : samples_s) given_.push_back(s * 1e6);
}

void GittinsOrder::attach(const ClusterState& cluster, std::span<const JobSpec> workload, const JobsView* jobs) {
  ServiceOrder::attach(cluster, workload, jobs);
  samples_ = given_;
  if (samples_.empty()) {
    // The trace's own jobs: what each needs in all (duration, x GPUs for GPU-time).
    for (const auto& j : workload) {
      if (j.duration.is_forever()) continue;
      samples_.push_back(static_cast<double>(j.duration.us) * (gpu_time_ ? job_gpus(j) : 1.0));
    }
    if (samples_.empty()) warn("gittins: no job of the trace has a finite duration: every index is 0 (FIFO)");
  }
  std::sort(samples_.begin(), samples_.end());
  key_.assign(workload.size(), 0.0);
  key_band_.assign(workload.size(), -1.0);
  prefix_.assign(samples_.size() + 1, 0.0);
  for (std::size_t i = 0; i < samples_.size(); ++i) prefix_[i + 1] = prefix_[i] + samples_[i];
}

double GittinsOrder::index_us(double a) const {
  // Over the samples above a: the share that ends within the quantum, over the service the
  // quantum is expected to take (the 1 / count of both cancels).
  const auto first = std::upper_bound(samples_.begin(), samples_.end(), a);
  if (first == samples_.end()) return 0.0;
  const auto end = std::upper_bound(first, samples_.end(), a + quantum_);
  const auto i = static_cast<std::size_t>(first - samples_.begin());
  const auto k = static_cast<std::size_t>(end - samples_.begin());
  const double within = static_cast<double>(k - i);
  const double expected = (prefix_[k] - prefix_[i]) - within * a + static_cast<double>(samples_.size() - k) * quantum_;
  return expected > 0.0 ? within / expected : 0.0;
}

double GittinsOrder::index(double a_s) const { return index_us(a_s * 1e6) * 1e6; }

double GittinsOrder::key(JobId j) const {
  const double s = service(j);
  const double q = std::floor((s + slack(s)) / quantum_);
  if (key_band_[j.value] != q) {
    key_[j.value] = index_us(q * quantum_);
    key_band_[j.value] = q;
  }
  return key_[j.value];
}

bool GittinsOrder::less(const JobSpec& a, JobId ia, const JobSpec& b, JobId ib) const {
  if (jobs_ == nullptr) return fifo(a, ia, b, ib);
  const double ka = key(ia), kb = key(ib);
  if (ka != kb) return ka > kb;
  if (running_first_ && run_[ia.value].running != run_[ib.value].running) return run_[ia.value].running;
  return fifo(a, ia, b, ib);
}

SimTime GittinsOrder::next_order_change(SimTime /*now*/) const {
  SimTime next = SimTime::forever();
  if (jobs_ == nullptr) return next;
  for (JobId j : running_) {
    const double s = service(j);
    const double q = std::floor((s + slack(s)) / quantum_);
    // Past the largest sample the index is 0 and stays 0: no change to wait for.
    if (samples_.empty() || q * quantum_ >= samples_.back()) continue;
    next = std::min(next, reaches(j, (q + 1) * quantum_));
  }
  return next;
}

std::int32_t GittinsOrder::queue_level(JobId id) const {
  if (!jobs_) return 0;
  const double s = service(id);
  return static_cast<std::int32_t>(std::min(2.0e9, std::floor((s + slack(s)) / quantum_)));
}

std::vector<double> read_service_distribution(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw_error(ErrorCode::kTraceCannotOpen, {path, 0, ""}, "cannot open the service distribution");
  std::vector<double> out;
  std::string line;
  std::int64_t n = 0;
  std::size_t column = 0;
  bool header_seen = false;
  std::string column_name = "service";
  while (std::getline(in, line)) {
    ++n;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const auto first = line.find_first_not_of(" \t");
    if (first == std::string::npos || line[first] == '#') continue;
    // The fields of the line (comma separated).
    std::vector<std::string> fields;
    std::string cur;
    for (char c : line) {
      if (c == ',') {
        fields.push_back(cur);
        cur.clear();
      } else if (c != ' ' && c != '\t') {
        cur += c;
      }
    }
    fields.push_back(cur);
    auto number = [](const std::string& s, double& v) {
      if (s.empty()) return false;
      errno = 0;
      char* end = nullptr;
      v = std::strtod(s.c_str(), &end);
      return errno == 0 && end == s.c_str() + s.size();
    };
    double v = 0.0;
    if (!header_seen && out.empty() && !number(fields[0], v)) {
      // A header: the column named service (else gpu_time, else duration), or the first.
      header_seen = true;
      bool found = false;
      for (const char* want : {"service", "gpu_time", "duration"}) {
        const auto it = std::find(fields.begin(), fields.end(), want);
        if (it != fields.end()) {
          column = static_cast<std::size_t>(it - fields.begin());
          column_name = want;
          found = true;
          break;
        }
      }
      // Several columns and none of those: which one holds the samples is a guess; refuse it.
      if (!found && fields.size() > 1) {
        throw_error(ErrorCode::kTraceBadValue, {path, n, "header"},
                    "the header names none of the columns service, gpu_time or duration (a one-column file may name its column "
                    "as it likes)");
      }
      continue;
    }
    header_seen = true;
    if (column >= fields.size() || !number(fields[column], v) || !std::isfinite(v) || v < 0.0) {
      throw_error(ErrorCode::kTraceBadValue, {path, n, column_name},
                  "\"" + (column < fields.size() ? fields[column] : std::string()) +
                      "\" is not a non-negative number of seconds (or GPU-seconds)");
    }
    if (v > 1e12) throw_error(ErrorCode::kTraceOutOfRange, {path, n, column_name}, "must be <= 1e12 (seconds)");
    out.push_back(v);
  }
  if (out.empty()) throw_error(ErrorCode::kTraceBadValue, {path, n, column_name}, "the service distribution lists no samples");
  return out;
}

}  // namespace gpusched::policies
