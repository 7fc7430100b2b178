// Scheduler: filter + score for one task, over demo-like clusters (mixed 8-GPU / 4-GPU / CPU
// nodes) pre-filled to ~60% GPU allocation, for every built-in profile.
//
//   BM_Scheduler_PlaceTask/<profile>/nodes:N
//       Scheduler::place_task for a rotating mix of requests (fractional 0.3 GPU + 8 GiB GPU
//       memory, 1 whole GPU, 4 whole GPUs). The cluster is not changed, so every decision sees
//       the same state. items = decisions.
//   BM_Scheduler_PlaceTaskNoFit/<profile>/nodes:N
//       Worst case: a 1-GPU request for a model no node has (H100-80GB). It passes pre-filter,
//       and every node is visited and rejected by the filter. items = decisions.
//   BM_Scheduler_ScheduleRelease/<profile>/nodes:N
//       The full SchedulingHook path the engine uses: schedule() (Statement, reserve, permit,
//       bind, commit) for the same mix, then release of the placement. items = decisions.
//
//   BM_Scheduler_DecisionLatency/<profile>/nodes:N/index:0|1
//       One decision at a time, as the engine makes them, each timed alone (steady_clock, ns):
//       5,000 nodes held at ~60% GPU allocated. The cluster is first filled to 60% with jobs of
//       the synthetic generator's default mix (13% CPU-only, 38% fractional 0.1-0.8 GPU, 45%
//       1 GPU, 2/1/1% 2/4/8 GPUs; fixed seed) on random nodes; then each iteration releases the
//       oldest running jobs (release + job_stopped, untimed) while at least 60% is allocated,
//       and times schedule() (filter, score, device select, Statement, commit) of the next job
//       of the stream, which then starts (job_started, untimed). After ~30k decisions the fill's
//       jobs have all been replaced by the profile's own placements. The scheduler is attached
//       to the whole stream (fgd: its typical pod types) and to a view of the running jobs.
//       gpushare-binpack's fractional jobs ask for GPU memory instead (gpu-mem: 16 GiB x share,
//       rounded up, no compute share). index:1 = node index on (the default), 0 = plain scan.
//       Iterations are the decisions (GPUSCHED_LATENCY_DECISIONS, default 100000); the time
//       column is the mean decision (manual time). Counters: p50_ns, p99_ns, max_ns, mean_ns,
//       unplaced_pct (decisions that found no node), p99_placed_ns (p99 of those that found one),
//       p50_unplaced_ns (median of the others, when any), gpu_alloc_pct (mean before a decision),
//       and the node index's counters per decision (idx_answered_pct, idx_updates_per_dec,
//       idx_rebuilds, idx_walk_pct: decisions a score-order or first-feasible walk answered,
//       idx_gave_up: walks past their budget; idx_bounded_per_dec, idx_bounds_scored_pct: nodes
//       given a score bound instead of a score, and the share of them scored after all). The latency histogram (log2 buckets in ns) goes to the CSV file named
//       by GPUSCHED_LATENCY_CSV (truncated at start; columns benchmark, profile, nodes, index,
//       bucket_lo_ns, bucket_hi_ns, count), else to stderr (so --benchmark_format=json stays
//       valid). GPUSCHED_LATENCY_NODES: a comma list of node counts instead of 5000.
//       GPUSCHED_LATENCY_TAIL=1: after each run, the slowest 1 % of decisions grouped by how the
//       node index answered (walk, tree, normalised, first feasible, scan; gave up; rebuilt a
//       class), the request (GPU mode x count) and the node answers it recomputed, with each
//       group's mean, on stderr: where the p99 goes.
//       Run:  build/cpp/bench/bench_scheduler --benchmark_filter=DecisionLatency
//
// One filled cluster per size is built once (not timed) and copied for each benchmark, so all
// profiles are measured on the same state.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include <gpusched/policies/framework/registry.hpp>
#include <gpusched/policies/framework/scheduler.hpp>
#include <gpusched/traces/synthetic.hpp>

#include "bench_support.hpp"

namespace {

using namespace gpusched;

constexpr double kFillTarget = 0.60;
constexpr std::uint64_t kSeed = 42;

struct Filled {
  std::unique_ptr<ClusterState> cluster;
  bench::FillStats stats;
};

const Filled& filled_cluster(std::uint32_t nodes) {
  static std::map<std::uint32_t, Filled> cache;
  auto it = cache.find(nodes);
  if (it == cache.end()) {
    Filled f;
    f.cluster = std::make_unique<ClusterState>(bench::make_demo_like_cluster(nodes));
    f.stats = bench::fill_randomly(*f.cluster, kFillTarget, kSeed);
    it = cache.emplace(nodes, std::move(f)).first;
  }
  return it->second;
}

/// The request mix: fractional share, 1 GPU, 4 GPUs (shapes like the synthetic generator's).
std::vector<JobSpec> request_mix() {
  std::vector<JobSpec> mix(3);
  mix[0].name = "frac";
  mix[0].request.cpu_milli = 4000;
  mix[0].request.memory_mib = 16 * 1024;
  mix[0].request.gpu = {GpuMode::kShared, 1, 300, 8 * 1024};
  mix[1].name = "gpu1";
  mix[1].request.cpu_milli = 8000;
  mix[1].request.memory_mib = 64 * 1024;
  mix[1].request.gpu = {GpuMode::kWhole, 1, kMilliPerGpu, 0};
  mix[2].name = "gpu4";
  mix[2].request.cpu_milli = 32000;
  mix[2].request.memory_mib = 256 * 1024;
  mix[2].request.gpu = {GpuMode::kWhole, 4, kMilliPerGpu, 0};
  return mix;
}

JobSpec no_fit_request(const ClusterState& c) {
  JobSpec j;
  j.name = "nofit";
  j.request.cpu_milli = 8000;
  j.request.memory_mib = 64 * 1024;
  j.request.gpu = {GpuMode::kWhole, 1, kMilliPerGpu, 0};
  j.request.allowed_models.set(c.catalog().find("H100-80GB")->value);
  return j;
}

void set_fill_counters(benchmark::State& state, const Filled& f) {
  state.counters["gpu_alloc_pct"] = 100.0 * f.stats.gpu_alloc;
  state.counters["cpu_alloc_pct"] = 100.0 * f.stats.cpu_alloc;
}

void BM_Scheduler_PlaceTask(benchmark::State& state, const std::string& profile) {
  const auto nodes = static_cast<std::uint32_t>(state.range(0));
  const Filled& f = filled_cluster(nodes);
  const ClusterState cluster = *f.cluster;
  policies::Scheduler sched(policies::builtin_profile(profile), policies::Registry::with_builtins(), kSeed);
  const auto mix = request_mix();
  policies::CycleState cycle;
  TaskPlacement out;
  std::size_t k = 0;
  std::int64_t failed = 0;
  for (auto _ : state) {
    const JobSpec& job = mix[k % mix.size()];
    cycle.clear();
    policies::TaskContext ctx{job, JobId{static_cast<std::uint32_t>(k % mix.size())}, 0, cycle};
    const Status s = sched.place_task(cluster, ctx, out);
    failed += s.ok() ? 0 : 1;
    benchmark::DoNotOptimize(out.node);
    ++k;
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
  set_fill_counters(state, f);
  state.counters["unplaced_pct"] = 100.0 * static_cast<double>(failed) / static_cast<double>(std::max<std::size_t>(1, k));
}

void BM_Scheduler_PlaceTaskNoFit(benchmark::State& state, const std::string& profile) {
  const auto nodes = static_cast<std::uint32_t>(state.range(0));
  const Filled& f = filled_cluster(nodes);
  const ClusterState cluster = *f.cluster;
  policies::Scheduler sched(policies::builtin_profile(profile), policies::Registry::with_builtins(), kSeed);
  const JobSpec job = no_fit_request(cluster);
  policies::CycleState cycle;
  TaskPlacement out;
  for (auto _ : state) {
    cycle.clear();
    policies::TaskContext ctx{job, JobId{0}, 0, cycle};
    const Status s = sched.place_task(cluster, ctx, out);
    if (s.ok()) {
      state.SkipWithError("the no-fit request was placed");
      break;
    }
    benchmark::DoNotOptimize(s);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
  set_fill_counters(state, f);
}

void BM_Scheduler_ScheduleRelease(benchmark::State& state, const std::string& profile) {
  const auto nodes = static_cast<std::uint32_t>(state.range(0));
  const Filled& f = filled_cluster(nodes);
  ClusterState cluster = *f.cluster;
  policies::Scheduler sched(policies::builtin_profile(profile), policies::Registry::with_builtins(), kSeed);
  const auto mix = request_mix();
  std::vector<TaskPlacement> out;
  std::size_t k = 0;
  std::int64_t failed = 0;
  for (auto _ : state) {
    const JobSpec& job = mix[k % mix.size()];
    const Status s = sched.schedule(cluster, job, JobId{static_cast<std::uint32_t>(k % mix.size())}, out);
    if (s.ok()) {
      for (const auto& p : out) cluster.release(job.request, p);
    } else {
      ++failed;
    }
    ++k;
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
  set_fill_counters(state, f);
  state.counters["unplaced_pct"] = 100.0 * static_cast<double>(failed) / static_cast<double>(std::max<std::size_t>(1, k));
}

// ---- decision latency ----

std::int64_t env_int(const char* name, std::int64_t fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  const long long x = std::strtoll(v, &end, 10);
  if (end == v || *end != '\0' || x <= 0) {
    std::fprintf(stderr, "%s=\"%s\" is not a positive integer\n", name, v);
    std::exit(2);
  }
  return x;
}

std::vector<std::int64_t> env_list(const char* name, std::vector<std::int64_t> fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  std::vector<std::int64_t> out;
  std::string item;
  for (const char* c = v;; ++c) {
    if (*c == ',' || *c == '\0') {
      char* end = nullptr;
      const long long x = std::strtoll(item.c_str(), &end, 10);
      if (item.empty() || *end != '\0' || x <= 0) {
        std::fprintf(stderr, "%s=\"%s\": \"%s\" is not a positive integer\n", name, v, item.c_str());
        std::exit(2);
      }
      out.push_back(x);
      item.clear();
      if (*c == '\0') break;
    } else {
      item += *c;
    }
  }
  return out;
}

/// A filled cluster and the job stream that filled it and goes on after it.
struct Stream {
  std::unique_ptr<ClusterState> cluster;
  Workload jobs;
  bench::TrackedFill fill;
};

/// gpushare's requests: a fractional job asks for GPU memory (aliyun.com/gpu-mem), not compute.
void to_gpu_memory_shares(Workload& jobs) {
  for (auto& j : jobs) {
    auto& g = j.request.gpu;
    if (g.mode != GpuMode::kShared) continue;
    const auto gib = std::max<std::int64_t>(1, (static_cast<std::int64_t>(g.milli) * 16 + kMilliPerGpu - 1) / kMilliPerGpu);
    g.milli = 0;
    g.memory_mib = gib * 1024;
  }
}

const Stream& latency_stream(std::uint32_t nodes, std::int64_t decisions, bool gpu_memory_shares) {
  static std::map<std::tuple<std::uint32_t, std::int64_t, bool>, Stream> cache;
  const auto key = std::make_tuple(nodes, decisions, gpu_memory_shares);
  auto it = cache.find(key);
  if (it == cache.end()) {
    Stream s;
    s.cluster = std::make_unique<ClusterState>(bench::make_demo_like_cluster(nodes));
    traces::SyntheticConfig cfg;
    cfg.jobs = static_cast<std::int64_t>(nodes) * 8 + decisions;   // the fill takes ~5.5 per node at 60%
    s.jobs = traces::generate(cfg, *s.cluster, RngStreams(kSeed));
    if (gpu_memory_shares) to_gpu_memory_shares(s.jobs);
    s.fill = bench::fill_randomly_tracked(*s.cluster, s.jobs, kFillTarget, kSeed);
    it = cache.emplace(key, std::move(s)).first;
  }
  return it->second;
}

std::FILE* histogram_csv() {
  static std::FILE* f = [] {
    const char* path = std::getenv("GPUSCHED_LATENCY_CSV");
    if (path == nullptr || *path == '\0') return static_cast<std::FILE*>(nullptr);
    std::FILE* out = std::fopen(path, "w");
    if (out == nullptr) {
      std::fprintf(stderr, "GPUSCHED_LATENCY_CSV: cannot write %s\n", path);
      std::exit(2);
    }
    std::fprintf(out, "benchmark,profile,nodes,index,bucket_lo_ns,bucket_hi_ns,count\n");
    std::fflush(out);
    return out;
  }();
  return f;
}

void write_histogram(const std::string& bench_name, const std::string& profile, std::uint32_t nodes, bool index,
                     const bench::LatencyRecorder& rec) {
  const auto& b = rec.buckets();
  std::size_t lo = 0, hi = b.size();
  while (lo < hi && b[lo] == 0) ++lo;
  while (hi > lo && b[hi - 1] == 0) --hi;
  if (std::FILE* f = histogram_csv()) {
    for (std::size_t i = lo; i < hi; ++i) {
      std::fprintf(f, "%s,%s,%u,%d,%llu,%llu,%llu\n", bench_name.c_str(), profile.c_str(), nodes, index ? 1 : 0,
                   i == 0 ? 0ULL : 1ULL << i, 1ULL << (i + 1), static_cast<unsigned long long>(b[i]));
    }
    std::fflush(f);
    return;
  }
  std::fprintf(stderr, "# %s latency histogram, ns [lo,hi): count:", bench_name.c_str());
  for (std::size_t i = lo; i < hi; ++i) {
    std::fprintf(stderr, " [%llu,%llu):%llu", i == 0 ? 0ULL : 1ULL << i, 1ULL << (i + 1), static_cast<unsigned long long>(b[i]));
  }
  std::fprintf(stderr, "\n");
}

/// One decision, for GPUSCHED_LATENCY_TAIL: its time and how the node index answered it.
struct TailRecord {
  std::int64_t ns = 0;
  std::string group;
};

TailRecord tail_record(std::int64_t ns, const policies::Scheduler::IndexStats& a, const policies::Scheduler::IndexStats& b,
                       const GpuRequest& gpu, bool placed) {
  const char* path = b.ordered > a.ordered             ? "walk"
                     : b.tree > a.tree                 ? "tree"
                     : b.normalized > a.normalized     ? "normalized"
                     : b.first_feasible > a.first_feasible ? "first-feasible"
                     : b.fallbacks > a.fallbacks       ? "scan"
                                                       : "none";
  const auto updates = b.node_updates - a.node_updates;
  static constexpr const char* kModes[] = {"none", "whole", "shared", "mig", "vgpu", "passthrough"};
  const auto mode = static_cast<std::size_t>(gpu.mode);
  std::string g = std::string(path) + (b.gave_up > a.gave_up ? "+gave-up" : "") + (b.rebuilds > a.rebuilds ? "+rebuild" : "") + " " +
                  (mode < std::size(kModes) ? kModes[mode] : "other") + "x" + std::to_string(gpu.mode == GpuMode::kNone ? 0 : gpu.count) +
                  (placed ? "" : " unplaced") + (updates > 50 ? " updates>50" : updates > 10 ? " updates>10" : " updates<=10");
  return {ns, std::move(g)};
}

void print_tail(const std::string& profile, std::vector<TailRecord>& records) {
  if (records.size() < 100) return;
  const std::size_t top = records.size() / 100;
  std::nth_element(records.begin(), records.begin() + static_cast<std::ptrdiff_t>(top), records.end(),
                   [](const TailRecord& a, const TailRecord& b) { return a.ns > b.ns; });
  std::map<std::string, std::pair<std::size_t, std::int64_t>> groups;   // group -> count, total ns
  for (std::size_t i = 0; i < top; ++i) {
    auto& [count, total] = groups[records[i].group];
    ++count;
    total += records[i].ns;
  }
  std::vector<std::pair<std::size_t, std::string>> rows;
  for (const auto& [g, ct] : groups) rows.emplace_back(ct.first, g + "  mean " + std::to_string(ct.second / static_cast<std::int64_t>(ct.first) / 1000) + " us");
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); });
  std::fprintf(stderr, "# %s: the slowest %zu decisions (from %.1f us), by path, request and node answers recomputed:\n", profile.c_str(), top,
               static_cast<double>(records[top].ns) / 1000.0);
  for (const auto& [count, line] : rows) std::fprintf(stderr, "#   %6zu  %s\n", count, line.c_str());
}

void BM_Scheduler_DecisionLatency(benchmark::State& state, const std::string& profile) {
  const auto nodes = static_cast<std::uint32_t>(state.range(0));
  const bool index = state.range(1) != 0;
  const auto decisions = static_cast<std::int64_t>(state.max_iterations);
  const Stream& s = latency_stream(nodes, decisions, profile == "gpushare-binpack");
  if (s.fill.next + static_cast<std::size_t>(decisions) > s.jobs.size()) {
    state.SkipWithError("the job stream is shorter than the decisions asked for");
    return;
  }
  ClusterState cluster = *s.cluster;
  policies::Scheduler sched(policies::builtin_profile(profile), policies::Registry::with_builtins(), kSeed);
  sched.set_node_index(index);
  bench::RunningJobs running(s.jobs, nodes);
  sched.attach(cluster, s.jobs, &running);
  for (const auto& [id, p] : s.fill.placed) {
    running.start(id, {&p, 1});
    sched.job_started(s.jobs[id.value], id, {&p, 1});
  }
  const double target = kFillTarget * static_cast<double>(cluster.totals().gpu_milli);
  bench::LatencyRecorder rec, placed, unplaced;
  const bool tail = std::getenv("GPUSCHED_LATENCY_TAIL") != nullptr;
  std::vector<TailRecord> records;
  if (tail) records.reserve(static_cast<std::size_t>(decisions));
  rec.reserve(static_cast<std::size_t>(decisions));
  placed.reserve(static_cast<std::size_t>(decisions));
  std::vector<TaskPlacement> out;
  std::size_t next = s.fill.next;
  std::int64_t failed = 0;
  long double alloc_sum = 0;
  for (auto _ : state) {
    // The engine's finish events: the oldest jobs end while 60% or more is allocated.
    while (!running.empty() && static_cast<double>(cluster.totals().gpu_used_milli) >= target) {
      running.stop_oldest(cluster, sched);
    }
    alloc_sum += static_cast<long double>(cluster.totals().gpu_used_milli);
    running.tick();
    const JobId id{static_cast<std::uint32_t>(next)};
    const JobSpec& job = s.jobs[next++];
    const auto before = tail ? sched.index_stats() : policies::Scheduler::IndexStats{};
    const auto t0 = std::chrono::steady_clock::now();
    const Status st = sched.schedule(cluster, job, id, out);
    const auto t1 = std::chrono::steady_clock::now();
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count();
    if (tail) records.push_back(tail_record(ns, before, sched.index_stats(), job.request.gpu, st.ok()));
    rec.add(ns);
    state.SetIterationTime(static_cast<double>(ns) * 1e-9);
    if (st.ok()) {
      placed.add(ns);
      sched.job_started(job, id, out);
      running.start(id, out);
    } else {
      unplaced.add(ns);
      ++failed;
    }
  }
  if (tail) print_tail(profile, records);
  const auto n = static_cast<double>(std::max<std::size_t>(1, rec.count()));
  state.SetItemsProcessed(static_cast<std::int64_t>(rec.count()));
  state.counters["p50_ns"] = static_cast<double>(rec.percentile(0.50));
  state.counters["p99_ns"] = static_cast<double>(rec.percentile(0.99));
  state.counters["max_ns"] = static_cast<double>(rec.max());
  state.counters["p99_placed_ns"] = static_cast<double>(placed.percentile(0.99));
  if (failed > 0) state.counters["p50_unplaced_ns"] = static_cast<double>(unplaced.percentile(0.50));
  state.counters["mean_ns"] = rec.mean();
  state.counters["unplaced_pct"] = 100.0 * static_cast<double>(failed) / n;
  state.counters["gpu_alloc_pct"] = 100.0 * static_cast<double>(alloc_sum / static_cast<long double>(n)) /
                                    static_cast<double>(cluster.totals().gpu_milli);
  const auto is = sched.index_stats();
  state.counters["idx_answered_pct"] = 100.0 * static_cast<double>(is.decisions) /
                                       static_cast<double>(std::max<std::uint64_t>(1, is.decisions + is.fallbacks));
  state.counters["idx_updates_per_dec"] = static_cast<double>(is.node_updates) / n;
  state.counters["idx_rebuilds"] = static_cast<double>(is.rebuilds);
  state.counters["idx_walk_pct"] = 100.0 * static_cast<double>(is.ordered + is.first_feasible) / n;   // from a score-order walk
  state.counters["idx_gave_up"] = static_cast<double>(is.gave_up);
  if (is.bounded > 0) {   // nodes given a score bound, and the share of them scored after all
    state.counters["idx_bounded_per_dec"] = static_cast<double>(is.bounded) / n;
    state.counters["idx_bounds_scored_pct"] = 100.0 * static_cast<double>(is.bounds_scored) / static_cast<double>(is.bounded);
  }
  write_histogram("BM_Scheduler_DecisionLatency/" + profile + "/nodes:" + std::to_string(nodes) + "/index:" + (index ? "1" : "0"),
                  profile, nodes, index, rec);
}

/// The profiles of issue 14's decision-latency goal.
const char* const kLatencyProfiles[] = {"first-fit", "best-fit",     "binpack", "most-allocated",
                                        "gpushare-binpack", "kube-default", "fgd"};

void register_latency() {
  const auto decisions = env_int("GPUSCHED_LATENCY_DECISIONS", 100'000);
  const auto sizes = env_list("GPUSCHED_LATENCY_NODES", {5'000});
  for (const char* profile : kLatencyProfiles) {
    auto* b = benchmark::RegisterBenchmark((std::string("BM_Scheduler_DecisionLatency/") + profile).c_str(),
                                           BM_Scheduler_DecisionLatency, std::string(profile));
    b->ArgNames({"nodes", "index"})->Iterations(decisions)->UseManualTime()->Unit(benchmark::kMicrosecond);
    for (auto n : sizes) b->Args({n, 1})->Args({n, 0});
  }
}

void register_all() {
  const std::vector<std::int64_t> sizes{1'000, 2'000, 4'000, 8'000, 16'000};
  using Fn = void (*)(benchmark::State&, const std::string&);
  const std::pair<const char*, Fn> families[] = {
      {"BM_Scheduler_PlaceTask", &BM_Scheduler_PlaceTask},
      {"BM_Scheduler_PlaceTaskNoFit", &BM_Scheduler_PlaceTaskNoFit},
      {"BM_Scheduler_ScheduleRelease", &BM_Scheduler_ScheduleRelease},
  };
  for (const auto& [family, fn] : families) {
    for (const auto& profile : policies::builtin_profile_names()) {
      auto* b = benchmark::RegisterBenchmark((std::string(family) + "/" + profile).c_str(), fn, profile);
      b->ArgName("nodes")->Unit(benchmark::kMicrosecond);
      for (auto n : sizes) b->Arg(n);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  register_all();
  register_latency();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
