// MIG placement decisions on H100 clusters (8 GPUs per node), the issue-3 target: decisions per
// second on 1,000 nodes.
//
//   BM_Mig_ScheduleRelease/<layout>/<profile>/nodes:N
//       schedule() a MIG request (rotating 1g.10gb, 2g.20gb, 3g.40gb, 4g.40gb, 1g.20gb) and
//       release it, on a cluster pre-filled with MIG GIs to about 60% of the compute slices.
//       layout "dynamic": GIs are created on demand at the start the device-select plugin's
//       mig_start policy picks (and idle ones destroyed when needed); layout "static": every GPU
//       is split 3g+2g+1g+1g, so only those profiles fit. items = decisions.
//   BM_Mig_PlaceTaskNoFit/<layout>/nodes:N
//       Worst case: 7g.80gb, which fits no GPU with any GI busy; every node is visited.
//
// The filled cluster is built once per (layout, size) and copied per benchmark (not timed).
#include <benchmark/benchmark.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include <gpusched/policies/framework/registry.hpp>
#include <gpusched/policies/framework/scheduler.hpp>
#include <gpusched/rng.hpp>
#include <gpusched/scenario/scenario.hpp>

namespace {

using namespace gpusched;

constexpr std::uint64_t kSeed = 42;
const std::vector<std::string> kProfiles{"1g.10gb", "2g.20gb", "3g.40gb", "4g.40gb", "1g.20gb"};

JobSpec mig_job(const ClusterState& c, const std::string& profile) {
  JobSpec j;
  j.name = profile;
  ResourceTable table = c.resources();
  j.request = parse_requests({{"cpu", "2"}, {"memory", "8Gi"}, {"nvidia.com/mig-" + profile, "1"}}, {}, c.catalog(), table, {});
  return j;
}

std::unique_ptr<ClusterState> make_cluster(std::uint32_t nodes, bool dynamic) {
  const std::string partition = dynamic ? R"({"mode": "mig", "dynamic": true})"
                                        : R"({"mode": "mig", "layout": ["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"]})";
  const std::string doc = R"({"schema_version": 1, "cluster": {"node_groups": [{"name": "h100", "count": )" +
                          std::to_string(nodes) +
                          R"(, "cpu": 224, "memory": "2Ti", "gpus": 8, "gpu_model": "H100-80GB", "gpu_partition": )" +
                          partition + R"(}]}, "workload": {"jobs": []}})";
  const auto sc = scenario::parse_scenario(std::string_view(doc), "bench_mig", ".");
  auto c = std::make_unique<ClusterState>(sc.catalog, sc.resources, sc.nodes);
  // Fill to ~60% of the compute slices with random profiles, through the real scheduler.
  policies::Scheduler sched(policies::builtin_profile("first-fit"), policies::Registry::with_builtins(), kSeed);
  Rng rng = RngStreams(kSeed).stream("bench.mig-fill");
  std::vector<JobSpec> jobs;
  for (const auto& p : kProfiles) {
    if (dynamic || p == "3g.40gb" || p == "2g.20gb" || p == "1g.10gb") jobs.push_back(mig_job(*c, p));
  }
  std::vector<TaskPlacement> out;
  const double target = 0.6 * static_cast<double>(c->totals().gpu_milli);
  for (int misses = 0; static_cast<double>(c->totals().gpu_used_milli) < target && misses < 10'000;) {
    const auto& job = jobs[rng.below(jobs.size())];
    // Spread the fill over the cluster: only a random window of nodes is offered.
    const auto first = static_cast<std::uint32_t>(rng.below(nodes));
    std::vector<NodeId> only;
    for (std::uint32_t k = 0; k < std::min<std::uint32_t>(nodes, 8); ++k) only.push_back(NodeId{(first + k) % nodes});
    std::sort(only.begin(), only.end());
    misses = sched.schedule(*c, job, JobId{0}, out, only).ok() ? 0 : misses + 1;
  }
  return c;
}

const ClusterState& filled(std::uint32_t nodes, bool dynamic) {
  static std::map<std::pair<std::uint32_t, bool>, std::unique_ptr<ClusterState>> cache;
  auto& c = cache[{nodes, dynamic}];
  if (!c) c = make_cluster(nodes, dynamic);
  return *c;
}

void counters(benchmark::State& state, const ClusterState& c) {
  state.counters["gpu_alloc_pct"] = 100.0 * static_cast<double>(c.totals().gpu_used_milli) / static_cast<double>(c.totals().gpu_milli);
}

void BM_Mig_ScheduleRelease(benchmark::State& state, bool dynamic, const std::string& profile) {
  const auto nodes = static_cast<std::uint32_t>(state.range(0));
  ClusterState cluster = filled(nodes, dynamic);
  counters(state, cluster);
  policies::Scheduler sched(policies::builtin_profile(profile), policies::Registry::with_builtins(), kSeed);
  std::vector<JobSpec> jobs;
  for (const auto& p : kProfiles) jobs.push_back(mig_job(cluster, p));
  std::vector<TaskPlacement> out;
  std::size_t k = 0;
  std::int64_t failed = 0;
  for (auto _ : state) {
    const auto& job = jobs[k++ % jobs.size()];
    if (sched.schedule(cluster, job, JobId{0}, out).ok()) {
      for (const auto& p : out) cluster.release(job.request, p);
    } else {
      ++failed;
    }
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
  state.counters["unplaced_pct"] = 100.0 * static_cast<double>(failed) / static_cast<double>(std::max<std::size_t>(1, k));
}

void BM_Mig_PlaceTaskNoFit(benchmark::State& state, bool dynamic) {
  const auto nodes = static_cast<std::uint32_t>(state.range(0));
  const ClusterState cluster = filled(nodes, dynamic);
  counters(state, cluster);
  policies::Scheduler sched(policies::builtin_profile("default"), policies::Registry::with_builtins(), kSeed);
  const JobSpec job = mig_job(cluster, "7g.80gb");
  policies::CycleState cycle;
  TaskPlacement out;
  for (auto _ : state) {
    cycle.clear();
    policies::TaskContext ctx{job, JobId{0}, 0, cycle};
    benchmark::DoNotOptimize(sched.place_task(cluster, ctx, out));
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
}

void register_all() {
  const std::vector<std::int64_t> sizes{100, 1'000};
  for (bool dynamic : {true, false}) {
    const std::string layout = dynamic ? "dynamic" : "static";
    for (const std::string profile : {"first-fit", "default", "binpack"}) {
      auto* b = benchmark::RegisterBenchmark(("BM_Mig_ScheduleRelease/" + layout + "/" + profile).c_str(),
                                             BM_Mig_ScheduleRelease, dynamic, profile);
      b->ArgName("nodes")->Unit(benchmark::kMicrosecond);
      for (auto n : sizes) b->Arg(n);
    }
    auto* b = benchmark::RegisterBenchmark(("BM_Mig_PlaceTaskNoFit/" + layout).c_str(), BM_Mig_PlaceTaskNoFit, dynamic);
    b->ArgName("nodes")->Unit(benchmark::kMicrosecond);
    for (auto n : sizes) b->Arg(n);
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
