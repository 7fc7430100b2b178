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
// One filled cluster per size is built once (not timed) and copied for each benchmark, so all
// profiles are measured on the same state.
#include <benchmark/benchmark.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include <gpusched/policies/framework/registry.hpp>
#include <gpusched/policies/framework/scheduler.hpp>

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
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
