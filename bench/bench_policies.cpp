// Decisions per second for each policy family on 1k-16k nodes (BENCHMARKS.md "Policies").
#include <benchmark/benchmark.h>

// ---- preemption ----
// BM_Policy_Preemption/nodes:N
//   A demo-like cluster full of low-priority jobs (2 whole GPUs + 16 cores on GPU nodes, 24
//   cores on CPU-only nodes; priorities 0..3 and work lost 0..1 h from a fixed seed). One
//   priority-10 job asking for 4 whole GPUs is placed by `priority-preemption` through the full
//   runner path (failed attempt, victim search, placement), then the cluster is restored.
//   items = preemptions; counter victims = victims per preemption.
#include <algorithm>
#include <deque>
#include <vector>

#include <gpusched/policies/framework/registry.hpp>
#include <gpusched/policies/framework/scheduler.hpp>
#include <gpusched/rng.hpp>
#include <gpusched/scheduling.hpp>

#include "bench_support.hpp"

namespace preemption_bench {

using namespace gpusched;

/// The running jobs over vectors (what the engine shows a scheduler).
class RunningJobs final : public JobsView {
 public:
  explicit RunningJobs(std::size_t nodes) : on_node_(nodes) {}
  [[nodiscard]] SimTime now() const override { return SimTime::zero(); }
  [[nodiscard]] std::span<const JobId> running_on(NodeId n) const override { return on_node_[n.value]; }
  [[nodiscard]] const JobSpec& spec(JobId j) const override { return specs_[j.value]; }
  [[nodiscard]] std::span<const TaskPlacement> placements(JobId j) const override { return where_[j.value]; }
  [[nodiscard]] SimTime started(JobId) const override { return SimTime::zero(); }
  [[nodiscard]] double work_lost_us(JobId j) const override { return lost_us_[j.value]; }
  JobId add(JobSpec s, std::vector<TaskPlacement> where, double lost_us) {
    const JobId id{static_cast<std::uint32_t>(specs_.size())};
    for (const auto& p : where) on_node_[p.node.value].push_back(id);
    specs_.push_back(std::move(s));
    where_.push_back(std::move(where));
    lost_us_.push_back(lost_us);
    return id;
  }

 private:
  std::deque<JobSpec> specs_;   // stable addresses: a Statement keeps pointers to requests
  std::vector<std::vector<TaskPlacement>> where_;
  std::vector<double> lost_us_;
  std::vector<std::vector<JobId>> on_node_;
};

void BM_Policy_Preemption(benchmark::State& state) {
  const auto nodes = static_cast<std::uint32_t>(state.range(0));
  ClusterState cluster = bench::make_demo_like_cluster(nodes);
  RunningJobs jobs(nodes);
  Rng rng(42);
  JobSpec gpu2, cpu;
  gpu2.request.cpu_milli = 16000;
  gpu2.request.memory_mib = 64 * 1024;
  gpu2.request.gpu = {GpuMode::kWhole, 2, kMilliPerGpu, 0};
  cpu.request.cpu_milli = 24000;
  cpu.request.memory_mib = 96 * 1024;
  for (std::uint32_t i = 0; i < nodes; ++i) {
    const NodeId n{i};
    JobSpec s = cluster.node(n).gpu_count > 0 ? gpu2 : cpu;
    TaskPlacement p;
    while (bench::first_fit_grants(cluster, n, s.request, p)) {
      cluster.allocate(s.request, p);
      s.priority = static_cast<std::int32_t>(rng.below(4));
      jobs.add(s, {p}, rng.uniform() * 3.6e9);
    }
  }
  JobSpec high;
  high.name = "high";
  high.priority = 10;
  high.request.cpu_milli = 32000;
  high.request.memory_mib = 128 * 1024;
  high.request.gpu = {GpuMode::kWhole, 4, kMilliPerGpu, 0};
  const JobId high_id = jobs.add(high, {}, 0.0);

  policies::Profile profile = policies::builtin_profile("first-fit");
  profile.post_filter = {policies::PluginRef{"priority-preemption"}};
  policies::Scheduler sched(profile, policies::Registry::with_builtins(), 1);
  sched.attach(cluster, {}, &jobs);
  for (std::uint32_t j = 0; j < high_id.value; ++j) sched.job_started(jobs.spec(JobId{j}), JobId{j}, jobs.placements(JobId{j}));
  std::vector<TaskPlacement> out;
  std::size_t victims = 0;
  for (auto _ : state) {
    if (!sched.schedule(cluster, jobs.spec(high_id), high_id, out).ok()) {
      state.SkipWithError("the high-priority job was not placed");
      break;
    }
    const auto v = sched.last_victims();
    victims += v.size();
    // Restore: the job leaves, its victims come back where they were.
    for (auto it = out.rbegin(); it != out.rend(); ++it) cluster.undo_allocate(high.request, *it);
    for (const JobId j : v) {
      for (const auto& p : jobs.placements(j)) cluster.allocate(jobs.spec(j).request, p);
    }
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
  state.counters["victims"] = static_cast<double>(victims) / static_cast<double>(std::max<benchmark::IterationCount>(1, state.iterations()));
}
BENCHMARK(BM_Policy_Preemption)->ArgName("nodes")->Arg(1000)->Arg(4000)->Arg(16000)->Unit(benchmark::kMicrosecond);

}  // namespace preemption_bench
// ---- end preemption ----

// ---- FGD family ----
// BM_Policy_<Name>/nodes:N for the FGD paper's policies (fgd, dotprod, clustering, packing,
// best-fit, random): a demo-like cluster pre-filled to ~60% GPU allocation (random nodes,
// first-fit GPUs); a synthetic workload of the same mix is attached (FGD's typical pod types).
// Each iteration schedules one job through Scheduler::schedule (filter, score, device select,
// Statement, commit), reports it started, then releases it and reports it stopped, so every
// decision sees the same state. Requests rotate: 0.3 GPU, 0.5 GPU, 1 GPU, 4 GPUs, CPU-only.
// items = decisions; counter unplaced_pct = decisions that found no node.
#include <map>
#include <memory>
#include <string>

#include <gpusched/traces/synthetic.hpp>

namespace fgd_family_bench {

using namespace gpusched;

struct Filled {
  std::unique_ptr<ClusterState> cluster;
  Workload workload;   // for attach(): FGD's typical pod types
};

const Filled& filled(std::uint32_t nodes) {
  static std::map<std::uint32_t, Filled> cache;
  auto it = cache.find(nodes);
  if (it == cache.end()) {
    Filled f;
    f.cluster = std::make_unique<ClusterState>(bench::make_demo_like_cluster(nodes));
    (void)bench::fill_randomly(*f.cluster, 0.60, 42);
    traces::SyntheticConfig cfg;
    cfg.jobs = 5000;
    f.workload = traces::generate(cfg, *f.cluster, RngStreams(42));
    it = cache.emplace(nodes, std::move(f)).first;
  }
  return it->second;
}

std::vector<JobSpec> request_mix() {
  auto make = [](std::int64_t cores, GpuMode mode, std::int32_t count, std::int32_t milli) {
    JobSpec j;
    j.name = "bench";
    j.request.cpu_milli = cores * 1000;
    j.request.memory_mib = cores * 4 * 1024;
    j.request.gpu.mode = mode;
    j.request.gpu.count = count;
    j.request.gpu.milli = milli;
    return j;
  };
  return {make(4, GpuMode::kShared, 1, 300), make(8, GpuMode::kShared, 1, 500), make(8, GpuMode::kWhole, 1, kMilliPerGpu),
          make(32, GpuMode::kWhole, 4, kMilliPerGpu), make(4, GpuMode::kNone, 0, 0)};
}

void BM_Policy(benchmark::State& state, const std::string& profile) {
  const Filled& f = filled(static_cast<std::uint32_t>(state.range(0)));
  ClusterState cluster = *f.cluster;
  policies::Scheduler sched(policies::builtin_profile(profile), policies::Registry::with_builtins(), 42);
  sched.attach(cluster, f.workload, nullptr);
  const auto mix = request_mix();
  std::vector<TaskPlacement> out;
  std::size_t k = 0;
  std::int64_t failed = 0;
  for (auto _ : state) {
    const JobSpec& job = mix[k % mix.size()];
    const JobId id{static_cast<std::uint32_t>(k)};
    if (sched.schedule(cluster, job, id, out).ok()) {
      sched.job_started(job, id, out);
      for (const auto& p : out) cluster.release(job.request, p);
      sched.job_stopped(job, id, out);
    } else {
      ++failed;
    }
    ++k;
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
  state.counters["unplaced_pct"] = 100.0 * static_cast<double>(failed) / static_cast<double>(std::max<std::size_t>(1, k));
}

[[maybe_unused]] const bool kRegistered = [] {
  const std::pair<const char*, const char*> profiles[] = {{"BM_Policy_Fgd", "fgd"},           {"BM_Policy_DotProd", "dotprod"},
                                                          {"BM_Policy_Clustering", "clustering"}, {"BM_Policy_Packing", "packing"},
                                                          {"BM_Policy_BestFit", "best-fit"},  {"BM_Policy_Random", "random"},
                                                          // The presets' decisions (queueing and preemption aside).
                                                          {"BM_Preset_KubeDefault", "kube-default"},
                                                          {"BM_Preset_VolcanoGangDrf", "volcano-gang-drf"},
                                                          {"BM_Preset_KueueCohorts", "kueue-cohorts"},
                                                          {"BM_Preset_SlurmBackfill", "slurm-backfill"}};
  for (const auto& [name, profile] : profiles) {
    benchmark::RegisterBenchmark(name, BM_Policy, std::string(profile))
        ->ArgName("nodes")
        ->Arg(1000)
        ->Arg(4000)
        ->Arg(16000)
        ->Unit(benchmark::kMicrosecond);
  }
  return true;
}();

}  // namespace fgd_family_bench
// ---- end FGD family ----

// ---- placement ----
// BM_Policy_Taints, BM_Policy_Affinity, BM_Policy_TopologySpread, BM_Policy_GpuTopology over
// nodes:N. The demo-like cluster with placement data (see placement_bench::make_cluster), filled
// to 50 % of its GPUs at random; each iteration is one Scheduler::schedule() of one job through
// the full runner path, then its tasks are released. items = schedule() calls.
#include <map>
#include <string>
#include <vector>

#include <gpusched/node.hpp>
#include <gpusched/policies/framework/registry.hpp>
#include <gpusched/policies/framework/scheduler.hpp>
#include <gpusched/scheduling.hpp>

#include "bench_support.hpp"

namespace placement_bench {

using namespace gpusched;
using policies::PluginRef;

constexpr const char* kZone = "topology.kubernetes.io/zone";

/// make_demo_like_cluster plus: zone labels (8 zones, round robin); a dedicated=infer:NoSchedule
/// taint on every 4th node and a spot:PreferNoSchedule taint on every 3rd; the A100 nodes' 8 GPUs
/// on one NVSwitch, the V100 nodes' GPUs in pairs behind PCIe switches, the T4s on their sockets;
/// CPUs and memory split over the 2 NUMA nodes. Then filled to 50 % GPU allocation.
ClusterState make_cluster(std::uint32_t nodes) {
  const ClusterState base = bench::make_demo_like_cluster(nodes);
  std::vector<NodeSpec> specs;
  specs.reserve(nodes);
  for (std::uint32_t i = 0; i < nodes; ++i) {
    NodeSpec n = base.spec(NodeId{i});
    n.labels[kZone] = "zone-" + std::to_string(i % 8);
    if (i % 4 == 0) n.taints.push_back(Taint{"dedicated", "infer", TaintEffect::kNoSchedule});
    if (i % 3 == 0) n.taints.push_back(Taint{"spot", "", TaintEffect::kPreferNoSchedule});
    for (std::size_t g = 0; g < n.gpus.size(); ++g) {
      const auto& model = base.catalog()[n.gpus[g].model].name;
      if (model == "A100-80GB") n.gpus[g].nvlink_domain = 0;
      else if (model == "V100-32GB") n.gpus[g].pcie_switch = static_cast<std::int16_t>(g / 2);
    }
    (void)normalize_numa(n);
    specs.push_back(std::move(n));
  }
  ClusterState c(GpuCatalog::builtin(), ResourceTable{}, std::move(specs));
  bench::fill_randomly(c, 0.5, 7);
  return c;
}

JobSpec gpu_job(std::int32_t gpus, std::int32_t tasks = 1) {
  JobSpec j;
  j.name = "placement";
  j.tasks = tasks;
  j.min_available = tasks;
  j.request.cpu_milli = 4000;
  j.request.memory_mib = 16 * 1024;
  j.request.gpu = {GpuMode::kWhole, gpus, kMilliPerGpu, 0};
  return j;
}

/// Running jobs of app "web": one task on every 4th node, spread over the zones (for the
/// topology-spread counts; the view only, the cluster is filled separately).
class WebJobs final : public JobsView {
 public:
  explicit WebJobs(std::uint32_t nodes) : on_node_(nodes) {
    JobSpec web;
    web.constraints.app = "web";
    for (std::uint32_t i = 0; i < nodes; i += 4) {
      const JobId id{static_cast<std::uint32_t>(specs_.size())};
      const NodeId n{(i * 7919U + i / 4) % nodes};
      on_node_[n.value].push_back(id);
      specs_.push_back(web);
      where_.push_back({TaskPlacement{n}});
    }
  }
  [[nodiscard]] SimTime now() const override { return SimTime::zero(); }
  [[nodiscard]] std::span<const JobId> running_on(NodeId n) const override { return on_node_[n.value]; }
  [[nodiscard]] const JobSpec& spec(JobId j) const override { return specs_[j.value]; }
  [[nodiscard]] std::span<const TaskPlacement> placements(JobId j) const override { return where_[j.value]; }
  [[nodiscard]] SimTime started(JobId) const override { return SimTime::zero(); }
  [[nodiscard]] double work_lost_us(JobId) const override { return 0.0; }

 private:
  std::vector<JobSpec> specs_;
  std::vector<std::vector<TaskPlacement>> where_;
  std::vector<std::vector<JobId>> on_node_;
};

/// One schedule() + release per iteration.
void run(benchmark::State& state, const policies::Profile& profile, const JobSpec& job, const JobsView* jobs = nullptr) {
  ClusterState cluster = make_cluster(static_cast<std::uint32_t>(state.range(0)));
  policies::Scheduler sched(profile, policies::Registry::with_builtins(), 1);
  sched.attach(cluster, {}, jobs);
  std::vector<TaskPlacement> out;
  const JobId id{1u << 30};
  if (!sched.schedule(cluster, job, id, out).ok()) {
    state.SkipWithError(("the job does not fit: " + sched.last_diagnosis()).c_str());
    return;
  }
  for (const auto& p : out) cluster.release(job.request, p);
  for (auto _ : state) {
    const Status s = sched.schedule(cluster, job, id, out);
    benchmark::DoNotOptimize(s);
    for (const auto& p : out) cluster.release(job.request, p);
  }
  state.SetItemsProcessed(state.iterations());
}

policies::Profile profile(std::vector<PluginRef> filters, std::vector<PluginRef> scores, std::string device = "gpu-first-fit") {
  policies::Profile p;
  p.name = "placement-bench";
  p.filter = {PluginRef{"node-resources-fit"}};
  p.filter.insert(p.filter.end(), filters.begin(), filters.end());
  p.score = std::move(scores);
  p.device_select = PluginRef{std::move(device)};
  return p;
}

/// taint-toleration filter + score; the job tolerates neither taint.
void BM_Policy_Taints(benchmark::State& state) {
  run(state, profile({PluginRef{"taint-toleration"}}, {PluginRef{"taint-toleration"}}), gpu_job(1));
}

/// node-affinity filter + score: required gpu.product In [A100, V100] and zone NotIn [zone-7];
/// preferred zone-1 (50) and A100 (20).
void BM_Policy_Affinity(benchmark::State& state) {
  auto job = gpu_job(1);
  auto& a = job.constraints.affinity;
  a.required = {{{"nvidia.com/gpu.product", "In", {"A100-80GB", "V100-32GB"}}, {kZone, "NotIn", {"zone-7"}}}};
  a.preferred = {{50, {{kZone, "In", {"zone-1"}}}}, {20, {{"nvidia.com/gpu.product", "In", {"A100-80GB"}}}}};
  run(state, profile({PluginRef{"node-affinity"}}, {PluginRef{"node-affinity"}}), job);
}

/// topology-spread (zone, max_skew 1, DoNotSchedule) + app-max-per-node for a 4-task job of app
/// "web" (max 1 per node), with nodes/4 running web tasks in the view; least-allocated score.
void BM_Policy_TopologySpread(benchmark::State& state) {
  auto job = gpu_job(1, 4);
  job.constraints.app = "web";
  job.constraints.max_per_node = 1;
  const WebJobs web(static_cast<std::uint32_t>(state.range(0)));
  run(state, profile({PluginRef{"topology-spread"}, PluginRef{"app-max-per-node"}}, {PluginRef{"least-allocated"}}), job, &web);
}

/// gpu-topology score for a 4-GPU task, topology-manager device select.
void BM_Policy_GpuTopology(benchmark::State& state) {
  run(state, profile({}, {PluginRef{"gpu-topology"}}, "topology-manager"), gpu_job(4));
}

BENCHMARK(BM_Policy_Taints)->ArgName("nodes")->Arg(1000)->Arg(4000)->Arg(16000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Policy_Affinity)->ArgName("nodes")->Arg(1000)->Arg(4000)->Arg(16000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Policy_TopologySpread)->ArgName("nodes")->Arg(1000)->Arg(4000)->Arg(16000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Policy_GpuTopology)->ArgName("nodes")->Arg(1000)->Arg(4000)->Arg(16000)->Unit(benchmark::kMicrosecond);

}  // namespace placement_bench
// ---- end placement ----

// ---- quota ----
// Quotas and fair sharing on demo-like clusters pre-filled to ~60% GPU allocation. Requests
// rotate over 1 GPU, 4 GPUs, a 0.5-GPU share and CPU-only, and over four queues team-0..team-3.
//   BM_Policy_ResourceQuota/nodes:N   resource-quota pre-filter + the "default" profile
//       (node-resources-fit, least-allocated over every feasible node). team-3 is at its
//       nvidia.com/gpu hard limit (its GPU jobs are refused by the pre-filter); the others have
//       room. Each iteration: schedule, job_started, release, job_stopped. items = decisions.
//   BM_Policy_CapacityQueues/nodes:N  capacity-queues (pre-filter: flavor assignment with
//       borrowing over a 4-queue cohort; filter: nodes of the flavor; post-filter listed) +
//       the "default" profile. Flavors A100-80GB, V100-32GB, T4, default; team-0 borrows beyond nominal.
//       Same loop. items = decisions; counter unplaced_pct.
//   BM_Policy_Drf/nodes:N  drf queue order: 4,096 pending jobs in 8 queues (weights 1..8); each
//       iteration one job starts (its queue's share changes), the pending list is re-sorted
//       with Scheduler::before, and the job stops. items = jobs ordered.
#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <gpusched/policies/framework/registry.hpp>
#include <gpusched/policies/framework/scheduler.hpp>
#include <gpusched/rng.hpp>

#include "bench_support.hpp"

namespace quota_bench {

using namespace gpusched;
using policies::PluginRef;

constexpr std::uint64_t kSeed = 42;

/// "team-" + 3 without GCC 12's false -Wrestrict on "literal" + std::string.
std::string numbered(std::string prefix, std::int64_t i) {
  prefix += std::to_string(i);
  return prefix;
}

const ClusterState& filled(std::uint32_t nodes) {
  static std::map<std::uint32_t, std::unique_ptr<ClusterState>> cache;
  auto& c = cache[nodes];
  if (!c) {
    c = std::make_unique<ClusterState>(bench::make_demo_like_cluster(nodes));
    bench::fill_randomly(*c, 0.60, kSeed);
  }
  return *c;
}

std::vector<JobSpec> mix() {
  std::vector<JobSpec> out;
  for (int q = 0; q < 4; ++q) {
    for (int k = 0; k < 4; ++k) {
      JobSpec j;
      j.name = numbered("j", q * 4 + k);
      j.queue = numbered("team-", q);
      j.request.cpu_milli = 4000;
      j.request.memory_mib = 16 * 1024;
      if (k == 0) j.request.gpu = {GpuMode::kWhole, 1, kMilliPerGpu, 0};
      if (k == 1) j.request.gpu = {GpuMode::kWhole, 4, kMilliPerGpu, 0};
      if (k == 2) j.request.gpu = {GpuMode::kShared, 1, 500, 0};
      out.push_back(std::move(j));
    }
  }
  return out;
}

/// Reports `n` fake running 1-GPU jobs of `queue` to the scheduler (quota usage only).
void preload(policies::Scheduler& sched, const std::string& queue, int n, std::uint32_t first_id) {
  JobSpec j;
  j.queue = queue;
  j.request.cpu_milli = 1000;
  j.request.gpu = {GpuMode::kWhole, 1, kMilliPerGpu, 0};
  const std::vector<TaskPlacement> one(1);
  for (int i = 0; i < n; ++i) sched.job_started(j, JobId{first_id + static_cast<std::uint32_t>(i)}, one);
}

void decisions(benchmark::State& state, const policies::Profile& profile, int preload_gpus, const std::string& preload_queue) {
  const auto nodes = static_cast<std::uint32_t>(state.range(0));
  ClusterState cluster = filled(nodes);
  policies::Scheduler sched(profile, policies::Registry::with_builtins(), kSeed);
  sched.attach(cluster, {}, nullptr);
  preload(sched, preload_queue, preload_gpus, 1'000'000);
  const auto jobs = mix();
  std::vector<TaskPlacement> out;
  std::size_t k = 0;
  std::int64_t failed = 0;
  for (auto _ : state) {
    const JobSpec& job = jobs[k % jobs.size()];
    const JobId id{static_cast<std::uint32_t>(k % jobs.size())};
    if (sched.schedule(cluster, job, id, out).ok()) {
      sched.job_started(job, id, out);
      for (const auto& p : out) cluster.release(job.request, p);
      sched.job_stopped(job, id, out);
    } else {
      ++failed;
    }
    ++k;
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
  state.counters["unplaced_pct"] = 100.0 * static_cast<double>(failed) / static_cast<double>(std::max<std::size_t>(1, k));
}

void BM_Policy_ResourceQuota(benchmark::State& state) {
  const auto nodes = state.range(0);
  nlohmann::json quotas = nlohmann::json::object();
  for (int q = 0; q < 4; ++q) {
    auto& ns = quotas[numbered("team-", q)];
    ns["requests.nvidia.com/gpu"] = nodes;
    ns["requests.cpu"] = std::to_string(nodes * 16);
    ns["requests.memory"] = std::to_string(nodes * 64) + "Gi";
    ns["count/jobs"] = 100000;
  }
  policies::Profile p = policies::builtin_profile("default");
  nlohmann::json args;
  args["quotas"] = quotas;
  p.pre_filter = {PluginRef{"resource-quota", 1.0, args}};
  decisions(state, p, static_cast<int>(nodes), "team-3");
}

void BM_Policy_CapacityQueues(benchmark::State& state) {
  const auto nodes = state.range(0);
  // Demo mix per 10 nodes: 32 A100, 24 V100, 8 T4 GPUs; a quarter of each per queue.
  nlohmann::json queues = nlohmann::json::object();
  for (int q = 0; q < 4; ++q) {
    nlohmann::json gpu_flavors = nlohmann::json::array();
    for (const auto& [model, per10] : {std::pair{"A100-80GB", 32}, {"V100-32GB", 24}, {"T4", 8}}) {
      nlohmann::json f;
      f["name"] = model;
      f["resources"]["nvidia.com/gpu"] = nodes * per10 / 40;
      gpu_flavors.push_back(f);
    }
    nlohmann::json host;
    host["name"] = "default";
    host["resources"]["cpu"] = std::to_string(nodes * 25);
    host["resources"]["memory"] = std::to_string(nodes * 160) + "Gi";
    nlohmann::json queue;
    queue["cohort"] = "org";
    queue["resource_groups"] = nlohmann::json::array();
    queue["resource_groups"].push_back({{"flavors", gpu_flavors}});
    queue["resource_groups"].push_back({{"flavors", nlohmann::json::array({host})}});
    queues[numbered("team-", q)] = queue;
  }
  nlohmann::json args;
  args["cohorts"]["org"] = nlohmann::json::object();
  args["queues"] = queues;
  policies::Profile p = policies::builtin_profile("default");
  p.filter.push_back(PluginRef{"capacity-queues", 1.0, args});
  p.post_filter = {PluginRef{"capacity-queues"}};
  decisions(state, p, static_cast<int>(nodes * 32 / 40 + nodes / 10), "team-0");
}

void BM_Policy_Drf(benchmark::State& state) {
  const auto nodes = static_cast<std::uint32_t>(state.range(0));
  const ClusterState& cluster = filled(nodes);
  nlohmann::json weights = nlohmann::json::object();
  for (int q = 0; q < 8; ++q) weights[numbered("q", q)] = q + 1;
  policies::Profile p = policies::builtin_profile("first-fit");
  nlohmann::json args;
  args["weights"] = weights;
  p.queue_sort = PluginRef{"drf", 1.0, args};
  policies::Scheduler sched(p, policies::Registry::with_builtins(), kSeed);
  Workload w;
  Rng rng(kSeed);
  for (int i = 0; i < 4096; ++i) {
    JobSpec j;
    j.name = numbered("p", i);
    j.queue = numbered("q", rng.below(8));
    j.priority = static_cast<std::int32_t>(rng.below(3));
    j.submit = SimTime::from_seconds(i / 16);
    j.request.cpu_milli = static_cast<std::int64_t>(1 + rng.below(16)) * 1000;
    j.request.memory_mib = static_cast<std::int64_t>(1 + rng.below(64)) * 1024;
    j.request.gpu = {GpuMode::kWhole, static_cast<std::int32_t>(rng.below(5)), kMilliPerGpu, 0};
    if (j.request.gpu.count == 0) j.request.gpu.mode = GpuMode::kNone;
    w.push_back(std::move(j));
  }
  sched.attach(cluster, w, nullptr);
  std::vector<JobId> pending(w.size());
  for (std::uint32_t i = 0; i < pending.size(); ++i) pending[i] = JobId{i};
  TaskPlacement where;
  where.gpus.push_back({0, kMilliPerGpu, 0});
  std::uint32_t k = 0;
  const auto before = [&](JobId a, JobId b) { return sched.before(w[a.value], a, w[b.value], b); };
  for (auto _ : state) {
    const JobId started{static_cast<std::uint32_t>(w.size()) + k % 64};   // not a pending job
    JobSpec runner = w[k % w.size()];
    sched.job_started(runner, started, {&where, 1});
    std::sort(pending.begin(), pending.end(), before);
    benchmark::DoNotOptimize(pending.front());
    sched.job_stopped(runner, started, {&where, 1});
    ++k;
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(pending.size()));
}

BENCHMARK(BM_Policy_ResourceQuota)->ArgName("nodes")->Arg(1000)->Arg(4000)->Arg(16000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Policy_CapacityQueues)->ArgName("nodes")->Arg(1000)->Arg(4000)->Arg(16000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Policy_Drf)->ArgName("nodes")->Arg(1000)->Arg(4000)->Arg(16000)->Unit(benchmark::kMicrosecond);

}  // namespace quota_bench
// ---- end quota ----

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
