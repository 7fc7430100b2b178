#include <gpusched/traces/transforms.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include <gpusched/gpu_catalog.hpp>
#include <gpusched/resources.hpp>
#include <gpusched/rng.hpp>

namespace gpusched::traces {

namespace {

const GpuCatalog& builtin_catalog() {
  static const GpuCatalog catalog = GpuCatalog::builtin();
  return catalog;
}

/// Milli of one MIG GI of `model`'s profile `idx`, as the cluster grants it.
std::int64_t mig_unit_milli(const MigGeometry& geo, std::size_t idx) {
  return std::int64_t{kMilliPerGpu} * geo.profiles[idx].compute_slices / std::max(1, geo.compute_slices);
}

/// Milli of one vGPU of `model`'s profile `idx`, as the cluster grants it.
std::int64_t vgpu_unit_milli(const GpuModel& model, std::size_t idx) {
  return std::int64_t{kMilliPerGpu} / std::max(1, model.vgpu[idx].max_per_gpu);
}

/// "3g.40gb" -> 3 compute slices; 0 when the name does not start with "<N>g".
int compute_slices_from_name(std::string_view name) {
  int n = 0;
  std::size_t i = 0;
  while (i < name.size() && i < 3 && name[i] >= '0' && name[i] <= '9') n = n * 10 + (name[i++] - '0');
  return i > 0 && i < name.size() && name[i] == 'g' ? n : 0;
}

/// Milli of one MIG / vGPU unit of `r`: the first builtin model offering the profile (through
/// the indices resolved when the request was parsed, checked by name; else by name alone).
std::int64_t partition_unit_milli(const GpuRequest& r) {
  const auto& catalog = builtin_catalog();
  const bool mig = r.mode == GpuMode::kMig;
  auto unit = [&](const GpuModel& model, int idx) -> std::optional<std::int64_t> {
    if (idx < 0) return std::nullopt;
    const auto i = static_cast<std::size_t>(idx);
    if (mig) {
      if (!model.mig || i >= model.mig->profiles.size() || model.mig->profiles[i].name != r.profile) return std::nullopt;
      return mig_unit_milli(*model.mig, i);
    }
    if (i >= model.vgpu.size() || model.find_vgpu(r.profile) != idx) return std::nullopt;
    return vgpu_unit_milli(model, i);
  };
  for (std::size_t m = 0; m < r.profile_by_model.size() && m < catalog.size(); ++m) {
    if (auto u = unit(catalog[GpuModelId{static_cast<std::uint16_t>(m)}], r.profile_by_model[m])) return *u;
  }
  for (const auto& model : catalog.models()) {
    const int idx = mig ? (model.mig ? model.mig->find_profile(r.profile) : -1) : model.find_vgpu(r.profile);
    if (auto u = unit(model, idx)) return *u;
  }
  if (mig) {
    const int slices = compute_slices_from_name(r.profile);
    if (slices > 0) return std::min<std::int64_t>(kMilliPerGpu, std::int64_t{kMilliPerGpu} * slices / 7);
  }
  return kMilliPerGpu;
}

/// Per-task GPU milli (see gpu_milli_requested).
std::int64_t task_milli(const GpuRequest& r) {
  switch (r.mode) {
    case GpuMode::kNone: return 0;
    case GpuMode::kWhole:
    case GpuMode::kPassthrough:
    case GpuMode::kShared: return r.total_milli();
    case GpuMode::kMig:
    case GpuMode::kVgpu: return r.count <= 0 ? 0 : std::int64_t{r.count} * partition_unit_milli(r);
  }
  return 0;
}

/// The largest time a transform may produce, in microseconds: what an input may give.
constexpr double kMaxUs = kMaxInputSeconds * 1e6;

/// `t` x factor, rounded; forever stays forever. A result past kMaxInputSeconds throws
/// std::out_of_range naming `what` and the job.
SimTime scaled(SimTime t, double factor, const JobSpec& job, const char* what) {
  if (t.is_forever()) return t;
  const double v = std::round(static_cast<double>(t.us) * factor);
  if (!(std::fabs(v) <= kMaxUs)) {
    throw std::out_of_range("job \"" + job.name + "\": its " + what + " of " + std::to_string(t.seconds()) +
                            " s scaled by " + std::to_string(factor) + " passes the largest time an input may give (1e10 s)");
  }
  return SimTime::from_us(static_cast<std::int64_t>(v));
}

}  // namespace

std::int64_t gpu_milli_requested(const JobSpec& job) {
  return std::int64_t{std::max(job.tasks, 0)} * task_milli(job.request.gpu);
}

std::int64_t gpu_milli_requested(std::span<const JobSpec> jobs) {
  std::int64_t total = 0;
  for (const auto& j : jobs) total += gpu_milli_requested(j);
  return total;
}

Workload shuffle(Workload jobs, std::uint64_t seed) {
  Rng rng = RngStreams(seed).stream("transform.shuffle");
  for (std::size_t i = jobs.size(); i > 1; --i) {
    const auto j = static_cast<std::size_t>(rng.below(i));
    if (j != i - 1) std::swap(jobs[i - 1], jobs[j]);
  }
  return jobs;
}

Workload resample_to_gpu_milli(Workload jobs, std::span<const JobSpec> pool, std::int64_t target_milli,
                               std::uint64_t seed) {
  if (target_milli < 0) {
    throw std::invalid_argument("traces::resample_to_gpu_milli: the target GPU milli must be >= 0, got " +
                                std::to_string(target_milli));
  }
  // Keep the longest prefix within the target (all of it unless deflating).
  std::int64_t total = 0;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    const auto m = gpu_milli_requested(jobs[i]);
    if (total + m > target_milli) {
      jobs.erase(jobs.begin() + static_cast<std::ptrdiff_t>(i), jobs.end());
      return jobs;
    }
    total += m;
  }
  if (total == target_milli) return jobs;

  std::vector<std::int64_t> milli(pool.size());
  bool any_gpu = false;
  for (std::size_t i = 0; i < pool.size(); ++i) {
    milli[i] = gpu_milli_requested(pool[i]);
    any_gpu = any_gpu || milli[i] > 0;
  }
  if (!any_gpu) {
    throw std::invalid_argument("traces::resample_to_gpu_milli: the jobs ask for " + std::to_string(total) +
                                " GPU milli, below the target " + std::to_string(target_milli) + ", and the pool (" +
                                std::to_string(pool.size()) + " jobs) has no job asking for GPU to draw");
  }
  std::unordered_set<std::string> taken;
  taken.reserve(jobs.size() * 2);
  for (const auto& j : jobs) taken.insert(j.name);
  std::unordered_map<std::string, std::int64_t> copies;   // pool name -> last k used

  Rng rng = RngStreams(seed).stream("transform.resample");
  for (;;) {
    const auto i = static_cast<std::size_t>(rng.below(pool.size()));
    if (total + milli[i] > target_milli) break;
    total += milli[i];
    JobSpec copy = pool[i];
    auto& k = copies[copy.name];
    std::string name;
    do {
      name = copy.name + "#" + std::to_string(++k);
    } while (taken.contains(name));
    taken.insert(name);
    copy.name = std::move(name);
    jobs.push_back(std::move(copy));
  }
  return jobs;
}

Workload scale_time(Workload jobs, double factor) {
  if (!std::isfinite(factor) || factor <= 0.0) {
    throw std::invalid_argument("traces::scale_time: the factor must be finite and > 0, got " + std::to_string(factor));
  }
  for (auto& j : jobs) {
    j.submit = scaled(j.submit, factor, j, "submit time");
    j.duration = scaled(j.duration, factor, j, "duration");
    j.constraints.walltime = scaled(j.constraints.walltime, factor, j, "walltime");
  }
  return jobs;
}

double offered_gpu_load(std::span<const JobSpec> jobs, std::int64_t cluster_gpu_milli) {
  if (cluster_gpu_milli <= 0) {
    throw std::invalid_argument("the cluster has no GPU capacity, so there is no GPU load to aim at");
  }
  if (jobs.empty()) throw std::invalid_argument("the workload has no jobs");
  std::int64_t first = jobs.front().submit.us, last = first;
  // Work in milli x microseconds, summed in double with Neumaier's compensation: products reach
  // 1e18 and more, past int64 once summed; the order is fixed, so the result is deterministic.
  double work = 0, carry = 0;
  bool gpu = false;
  for (const auto& j : jobs) {
    first = std::min(first, j.submit.us);
    last = std::max(last, j.submit.us);
    const auto milli = gpu_milli_requested(j);
    if (milli <= 0) continue;
    if (j.duration.is_forever()) {
      throw std::invalid_argument("job \"" + j.name + "\" asks for GPU and never ends (no duration): the offered load needs "
                                  "finite durations");
    }
    gpu = true;
    const double term = static_cast<double>(milli) * static_cast<double>(std::max<std::int64_t>(j.duration.us, 0));
    const double sum = work + term;
    carry += std::abs(work) >= std::abs(term) ? (work - sum) + term : (term - sum) + work;
    work = sum;
  }
  if (!gpu) throw std::invalid_argument("no job asks for GPU, so the workload offers no GPU load");
  if (last == first) {
    throw std::invalid_argument("all " + std::to_string(jobs.size()) + " jobs arrive at the same time, so there is no arrival "
                                "span to scale");
  }
  return (work + carry) / (static_cast<double>(cluster_gpu_milli) * static_cast<double>(last - first));
}

Workload scale_to_gpu_load(Workload jobs, std::int64_t cluster_gpu_milli, double target_load) {
  if (!std::isfinite(target_load) || target_load <= 0.0) {
    throw std::invalid_argument("the target load must be finite and > 0, got " + std::to_string(target_load));
  }
  const double load = offered_gpu_load(jobs, cluster_gpu_milli);
  std::int64_t first = jobs.front().submit.us, last = first;
  for (const auto& j : jobs) {
    first = std::min(first, j.submit.us);
    last = std::max(last, j.submit.us);
  }
  const double span = static_cast<double>(last - first);
  const double new_span = span * load / target_load;
  // The last submit must stay within what an input may give (kMaxInputSeconds).
  if (!(static_cast<double>(first) + new_span <= kMaxUs)) {
    throw std::out_of_range("the target load is too small: the arrivals would spread over " + std::to_string(new_span / 1e6) +
                            " s, past the largest time an input may give (1e10 s)");
  }
  const double factor = new_span / span;
  for (auto& j : jobs) {
    j.submit = SimTime::from_us(first + static_cast<std::int64_t>(std::round(static_cast<double>(j.submit.us - first) * factor)));
  }
  return jobs;
}

JobKind kind_of(const JobSpec& job) {
  const auto& g = job.request.gpu;
  switch (g.mode) {
    case GpuMode::kNone: return job.request.tpu.chips > 0 ? JobKind::kOther : JobKind::kCpuOnly;
    case GpuMode::kShared: return g.count == 1 ? JobKind::kShare : JobKind::kOther;
    case GpuMode::kWhole:
    case GpuMode::kPassthrough:
      return g.count == 1 ? JobKind::kOneGpu : g.count > 1 ? JobKind::kMultiGpu : JobKind::kOther;
    case GpuMode::kMig:
    case GpuMode::kVgpu: return JobKind::kOther;
  }
  return JobKind::kOther;
}

std::string to_string(JobKind k) {
  switch (k) {
    case JobKind::kCpuOnly: return "cpu";
    case JobKind::kShare: return "share";
    case JobKind::kOneGpu: return "one-gpu";
    case JobKind::kMultiGpu: return "multi-gpu";
    case JobKind::kOther: return "other";
  }
  return "other";
}

std::optional<JobKind> parse_job_kind(std::string_view name) {
  for (const auto k : {JobKind::kCpuOnly, JobKind::kShare, JobKind::kOneGpu, JobKind::kMultiGpu, JobKind::kOther}) {
    if (name == to_string(k)) return k;
  }
  return std::nullopt;
}

Workload filter(Workload jobs, const JobFilter& f) {
  std::erase_if(jobs, [&](const JobSpec& j) {
    const bool queue_ok = f.queues.empty() || std::find(f.queues.begin(), f.queues.end(), j.queue) != f.queues.end();
    if (!queue_ok) return true;
    return !f.kinds.empty() && std::find(f.kinds.begin(), f.kinds.end(), kind_of(j)) == f.kinds.end();
  });
  return jobs;
}

Workload arrival_only(Workload jobs) {
  std::int64_t us = 0;
  for (auto& j : jobs) {
    j.submit = SimTime::from_us(us++);
    j.duration = SimTime::forever();
    j.constraints.walltime = SimTime::forever();
  }
  return jobs;
}

}  // namespace gpusched::traces
