#include <gpusched/traces/synthetic.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>

#include <gpusched/error.hpp>
#include <gpusched/input_range.hpp>
#include <gpusched/time.hpp>

namespace gpusched::traces {
namespace {
template <class T, std::size_t N>
T pick(Rng& rng, const std::array<T, N>& values) {
  return values[rng.below(N)];
}
}  // namespace

SyntheticConfig SyntheticConfig::from_json(const nlohmann::json& j, const std::string& source, const std::string& path) {
  SyntheticConfig c;
  c.source = source;
  c.path = path;
  if (!j.is_object()) throw_error(ErrorCode::kScenarioBadValue, {source, 0, path}, "expected an object");
  // A finite number in [min, max] (SyntheticLimits); wrong types are bad values, the rest out of range.
  auto num = [&](const std::string& k, const nlohmann::json& v, double min, double max, std::string_view unit = {}) {
    if (!v.is_number()) throw_error(ErrorCode::kScenarioBadValue, {source, 0, path + "/" + k}, "expected a number");
    const double d = v.get<double>();
    check_range(d, min, max, ErrorCode::kScenarioOutOfRange, {source, 0, path + "/" + k}, unit);
    return d;
  };
  using L = SyntheticLimits;
  for (const auto& [k, v] : j.items()) {
    if (k == "jobs") {
      const double d = num(k, v, 0, static_cast<double>(L::kMaxJobs), "jobs");
      if (d != std::floor(d)) throw_error(ErrorCode::kScenarioBadValue, {source, 0, path + "/jobs"}, "expected a whole number of jobs");
      c.jobs = static_cast<std::int64_t>(d);
    } else if (k == "load") c.load = num(k, v, 0, L::kMaxLoad);
    else if (k == "arrival_rate_per_hour") c.arrival_rate_per_hour = num(k, v, 0, L::kMaxArrivalRatePerHour, "jobs per hour");
    else if (k == "duration_median_s") c.duration_median_s = num(k, v, kMinPositiveSeconds, kMaxInputSeconds, "seconds");
    else if (k == "duration_sigma") c.duration_sigma = num(k, v, 0, L::kMaxDurationSigma);
    else if (k == "duration_min_s") c.duration_min_s = num(k, v, 0, kMaxInputSeconds, "seconds");
    else if (k == "duration_max_s") c.duration_max_s = num(k, v, 0, kMaxInputSeconds, "seconds");
    else if (k == "gang_fraction") c.gang_fraction = num(k, v, 0, 1, "a fraction of the multi-GPU jobs");
    else if (k == "queues") {
      if (!v.is_array() || v.empty()) throw_error(ErrorCode::kScenarioBadValue, {source, 0, path + "/queues"}, "expected a non-empty list of names");
      c.queues.clear();
      for (const auto& q : v) {
        if (!q.is_string()) throw_error(ErrorCode::kScenarioBadValue, {source, 0, path + "/queues"}, "queue names are strings");
        c.queues.push_back(q.get<std::string>());
      }
    } else if (k == "mix") {
      if (!v.is_object()) throw_error(ErrorCode::kScenarioBadValue, {source, 0, path + "/mix"}, "expected an object");
      SyntheticMix m{0, 0, 0, 0, 0, 0};
      for (const auto& [mk, mv] : v.items()) {
        double* slot = mk == "cpu_only" ? &m.cpu_only : mk == "fractional" ? &m.fractional : mk == "gpu1" ? &m.gpu1
                     : mk == "gpu2" ? &m.gpu2 : mk == "gpu4" ? &m.gpu4 : mk == "gpu8" ? &m.gpu8 : nullptr;
        if (slot == nullptr) {
          throw_error(ErrorCode::kScenarioUnknownField, {source, 0, path + "/mix/" + mk},
                      "unknown kind (known: cpu_only, fractional, gpu1, gpu2, gpu4, gpu8)");
        }
        *slot = num("mix/" + mk, mv, 0, L::kMaxMixWeight, "a relative weight");
      }
      c.mix = m;
    } else {
      throw_error(ErrorCode::kScenarioUnknownField, {source, 0, path + "/" + k},
                  "unknown field (known: jobs, load, arrival_rate_per_hour, duration_median_s, duration_sigma, "
                  "duration_min_s, duration_max_s, mix, queues, gang_fraction)");
    }
  }
  if (c.load == 0 && c.arrival_rate_per_hour == 0 && c.jobs > 0) {
    throw_error(ErrorCode::kScenarioBadValue, {source, 0, path + "/load"}, "set load > 0 or arrival_rate_per_hour > 0");
  }
  if (c.duration_max_s < c.duration_min_s) {
    throw_error(ErrorCode::kScenarioOutOfRange, {source, 0, path + "/duration_max_s"},
                format_number(c.duration_max_s) + " is out of range: must be >= duration_min_s (" + format_number(c.duration_min_s) + ")");
  }
  return c;
}

nlohmann::json SyntheticConfig::to_json() const {
  return {{"jobs", jobs},
          {"load", load},
          {"arrival_rate_per_hour", arrival_rate_per_hour},
          {"duration_median_s", duration_median_s},
          {"duration_sigma", duration_sigma},
          {"duration_min_s", duration_min_s},
          {"duration_max_s", duration_max_s},
          {"mix", {{"cpu_only", mix.cpu_only}, {"fractional", mix.fractional}, {"gpu1", mix.gpu1},
                   {"gpu2", mix.gpu2}, {"gpu4", mix.gpu4}, {"gpu8", mix.gpu8}}},
          {"queues", queues},
          {"gang_fraction", gang_fraction}};
}

Workload generate(const SyntheticConfig& cfg, const ClusterState& cluster, const RngStreams& streams) {
  // What the cluster can host: per-GPU CPU/memory on the thinnest GPU node, GPUs on the biggest.
  std::int64_t cpu_per_gpu = 0, mem_per_gpu = 0, max_gpus = 0, min_cpu = 0, min_mem = 0;
  bool first_gpu = true, first = true;
  for (std::uint32_t n = 0; n < cluster.node_count(); ++n) {
    const auto& s = cluster.spec(NodeId{n});
    if (first || s.cpu_milli < min_cpu) min_cpu = s.cpu_milli;
    if (first || s.memory_mib < min_mem) min_mem = s.memory_mib;
    first = false;
    if (s.gpus.empty()) continue;
    const auto g = static_cast<std::int64_t>(s.gpus.size());
    const std::int64_t c = s.cpu_milli / g, m = s.memory_mib / g;
    if (first_gpu || c < cpu_per_gpu) cpu_per_gpu = c;
    if (first_gpu || m < mem_per_gpu) mem_per_gpu = m;
    max_gpus = std::max(max_gpus, g);
    first_gpu = false;
  }
  std::array<double, 6> weights{cfg.mix.cpu_only, cfg.mix.fractional, cfg.mix.gpu1, cfg.mix.gpu2, cfg.mix.gpu4, cfg.mix.gpu8};
  const std::array<std::int64_t, 6> gpus_of{0, 0, 1, 2, 4, 8};
  for (std::size_t k = 1; k < weights.size(); ++k) {
    if (gpus_of[k] > max_gpus || (k == 1 && max_gpus == 0)) weights[k] = 0;
  }
  double wsum = 0;
  for (double w : weights) wsum += w;
  if (wsum <= 0) {
    throw_error(ErrorCode::kScenarioBadValue, {cfg.source, 0, cfg.path + "/mix"},
                "no job kind of the mix fits this cluster (no GPU nodes for GPU jobs?)");
  }

  Rng kind_rng = streams.stream("workload.kind");
  Rng shape_rng = streams.stream("workload.shape");
  Rng dur_rng = streams.stream("workload.duration");
  Rng arr_rng = streams.stream("workload.arrival");
  Rng queue_rng = streams.stream("workload.queue");

  const std::array<std::int64_t, 5> cpu_cores{1, 2, 4, 8, 16};
  const std::array<std::int32_t, 9> shares{100, 200, 250, 300, 400, 500, 600, 700, 800};
  const std::array<std::int64_t, 4> cores_per_gpu{4, 6, 8, 12};
  const std::array<std::int64_t, 3> gib_per_core{2, 4, 8};

  Workload jobs;
  jobs.reserve(static_cast<std::size_t>(cfg.jobs));
  long double demand = 0;   // sum of GPU-milli x seconds (or CPU when the cluster has no GPU)
  const bool gpu_cluster = cluster.totals().gpus > 0;
  for (std::int64_t i = 0; i < cfg.jobs; ++i) {
    double u = kind_rng.uniform() * wsum;
    std::size_t kind = 0;
    while (kind + 1 < weights.size() && (u >= weights[kind] || weights[kind] == 0)) {
      u -= weights[kind];
      ++kind;
    }
    JobSpec j;
    char name[32];
    std::snprintf(name, sizeof name, "job-%06lld", static_cast<long long>(i + 1));
    j.name = name;
    auto& r = j.request;
    if (kind == 0) {
      const std::int64_t cores = std::min<std::int64_t>(pick(shape_rng, cpu_cores), std::max<std::int64_t>(1, min_cpu / 1000 / 2));
      r.cpu_milli = cores * 1000;
      r.memory_mib = std::min<std::int64_t>(cores * pick(shape_rng, gib_per_core) * 1024, min_mem / 2);
    } else if (kind == 1) {
      r.gpu.mode = GpuMode::kShared;
      r.gpu.count = 1;
      r.gpu.milli = static_cast<std::int32_t>(pick(shape_rng, shares));
      const std::int64_t cores = std::min<std::int64_t>(pick(shape_rng, std::array<std::int64_t, 4>{1, 2, 4, 8}), std::max<std::int64_t>(1, cpu_per_gpu / 1000));
      r.cpu_milli = cores * 1000;
      r.memory_mib = std::min<std::int64_t>(cores * 4 * 1024, mem_per_gpu);
    } else {
      const auto g = static_cast<std::int32_t>(gpus_of[kind]);
      r.gpu.mode = GpuMode::kWhole;
      r.gpu.count = g;
      r.gpu.milli = kMilliPerGpu;
      const std::int64_t cores = std::min<std::int64_t>(pick(shape_rng, cores_per_gpu), std::max<std::int64_t>(1, cpu_per_gpu / 1000));
      r.cpu_milli = cores * 1000 * g;
      r.memory_mib = std::min<std::int64_t>(cores * 8 * 1024, mem_per_gpu) * g;
      if (g >= 2 && cfg.gang_fraction > 0 && shape_rng.uniform() < cfg.gang_fraction) {
        j.tasks = 2;
        j.min_available = 2;
        r.gpu.count = g / 2;
        r.cpu_milli /= 2;
        r.memory_mib /= 2;
      }
    }
    const double d = std::clamp(dur_rng.lognormal(cfg.duration_median_s, cfg.duration_sigma), cfg.duration_min_s, cfg.duration_max_s);
    j.duration = SimTime::from_seconds(std::max<std::int64_t>(1, std::llround(d)));
    j.queue = cfg.queues[queue_rng.below(cfg.queues.size())];
    const long double per_task = gpu_cluster ? static_cast<long double>(r.gpu.total_milli()) : static_cast<long double>(r.cpu_milli);
    demand += per_task * j.tasks * static_cast<long double>(j.duration.seconds());
    jobs.push_back(std::move(j));
  }
  // Arrival rate (jobs/s) from the target load, or as given.
  double rate = cfg.arrival_rate_per_hour / 3600.0;
  if (cfg.load > 0 && !jobs.empty() && demand > 0) {
    const long double capacity = gpu_cluster ? cluster.totals().gpu_milli : cluster.totals().cpu_milli;
    rate = static_cast<double>(static_cast<long double>(cfg.load) * capacity * static_cast<long double>(jobs.size()) / demand);
  }
  double t = 0;
  for (auto& j : jobs) {
    // A rate so low that arrivals pass the clock's input range (or none at all: rate 0) is an
    // input out of range, not a time to round.
    if (!(t <= kMaxInputSeconds)) {
      const bool by_load = cfg.load > 0;
      throw_error(ErrorCode::kScenarioOutOfRange, {cfg.source, 0, cfg.path + (by_load ? "/load" : "/arrival_rate_per_hour")},
                  format_number(by_load ? cfg.load : cfg.arrival_rate_per_hour) + " is out of range: the " + std::to_string(jobs.size()) +
                      " jobs would arrive over more than " + format_number(kMaxInputSeconds) + " seconds; raise it");
    }
    j.submit = SimTime::from_seconds_f(t);
    t += arr_rng.exponential(rate);
  }
  return jobs;
}

}  // namespace gpusched::traces
