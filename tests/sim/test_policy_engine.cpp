// The engine with policies end to end: preemption (requeue, restart from zero or from a
// checkpoint, counters), gang timeout, NoExecute taints, and a property test under preemption.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include <gpusched/policies/framework/registry.hpp>
#include <gpusched/policies/framework/scheduler.hpp>
#include <gpusched/rng.hpp>
#include <gpusched/sim/engine.hpp>
#include <gpusched/sim/outputs.hpp>

#include "support/support.hpp"

using namespace gpusched;
using namespace gpusched::sim;
namespace t = gpusched::test;

namespace {

SimTime s(std::int64_t seconds) { return SimTime::from_seconds(seconds); }

/// first-fit with taint-toleration and priority-preemption.
policies::Profile preemption_profile() {
  auto p = policies::builtin_profile("first-fit");
  p.post_filter = {policies::PluginRef{"priority-preemption"}};
  return p;
}

JobSpec gpu_job(const std::string& name, double submit, double duration, int gpus, std::int32_t priority = 0,
                std::int32_t tasks = 1) {
  return t::job(name, submit, duration,
                t::request({{"cpu", "1"}, {"memory", "1Gi"}, {"nvidia.com/gpu", std::to_string(gpus)}}), tasks, -1,
                priority);
}

struct Sim {
  ClusterState cluster;
  Workload jobs;
  policies::Scheduler scheduler;
  EventLog log;
  Engine engine;

  Sim(std::vector<NodeSpec> nodes, Workload w, EngineConfig cfg = {})
      : cluster(t::cluster(std::move(nodes))),
        jobs(std::move(w)),
        scheduler(preemption_profile(), policies::Registry::with_builtins(), 1),
        engine(cluster, jobs, scheduler, std::move(cfg)) {
    engine.add_observer(&log);
  }
  const JobRuntime& job(std::uint32_t i) const { return engine.job(JobId{i}); }
  bool logged(const std::string& line) const {
    for (const auto& l : log.lines()) if (l == line) return true;
    return false;
  }
};

std::vector<NodeSpec> one_gpu_nodes(int n) {
  std::vector<NodeSpec> out;
  for (int i = 0; i < n; ++i) out.push_back(t::node(t::numbered("n", i), 8, 32, 1, "T4"));
  return out;
}

}  // namespace

TEST_CASE("A preempted job is requeued and restarts from zero after the preemptor", "[engine][policies]") {
  // n0 has 2 GPUs. low (2 GPUs, 1000 s) from 0; high (2 GPUs, priority 10, 50 s) at 100.
  Sim sim({t::node("n0", 16, 64, 2)}, {gpu_job("low", 0, 1000, 2), gpu_job("high", 100, 50, 2, 10)});
  sim.engine.run();
  const auto& low = sim.job(0);
  const auto& high = sim.job(1);
  CHECK(sim.logged("100.000000,requeue,low,,preempted by high"));
  CHECK(high.start == s(100));
  CHECK(high.end == s(150));
  CHECK(high.evictions == 0);
  CHECK(low.state == JobState::kCompleted);
  CHECK(low.attempts == 2);
  CHECK(low.evictions == 1);
  CHECK(low.start == s(150));               // restarted when high finished
  CHECK(low.end == s(150 + 1000));          // the full duration again
  CHECK(low.work_kept_us == 0.0);
  CHECK(low.lost_work_us == Approx(100e6));
  CHECK(sim.engine.preemptions() == 1);
  CHECK(sim.engine.evictions() == 1);
  CHECK(sim.engine.lost_gpu_hours() == Approx(100.0 / 3600.0 * 2));   // 100 s on 2 GPUs
  CHECK(t::cluster_empty(sim.cluster));
}

TEST_CASE("A preempted job restarts from its last checkpoint", "[engine][policies]") {
  EngineConfig cfg;
  cfg.preemption.restart = RestartPolicy::kCheckpoint;
  cfg.preemption.checkpoint_interval = s(30);
  Sim sim({t::node("n0", 16, 64, 2)}, {gpu_job("low", 0, 1000, 2), gpu_job("high", 100, 50, 2, 10)}, cfg);
  sim.engine.run();
  const auto& low = sim.job(0);
  // 100 s done at the eviction: checkpoints at 30, 60, 90 keep 90 s; 10 s are lost.
  CHECK(low.work_kept_us == Approx(90e6));
  CHECK(low.lost_work_us == Approx(10e6));
  CHECK(low.start == s(150));
  CHECK(low.end == s(150 + 1000 - 90));     // ends earlier by the kept amount
  CHECK(sim.engine.preemptions() == 1);
  CHECK(sim.engine.lost_gpu_hours() == Approx(10.0 / 3600.0 * 2));
  CHECK(low.lost_gpu_hours == Approx(10.0 / 3600.0 * 2));
}

TEST_CASE("A gang of 4 on 3 nodes waits holding nothing and fails at its gang timeout", "[engine][policies]") {
  // low (priority 0) runs on n0 from 0 to 20; the gang (priority 5) cannot fit even by preempting it.
  auto gang = gpu_job("gang", 0, 100, 1, 5, 4);
  gang.constraints.gang_timeout = s(60);
  Sim sim(one_gpu_nodes(3), {gpu_job("low", 0, 20, 1), gang, gpu_job("small", 30, 10, 1)});
  std::vector<std::int64_t> busy;
  std::vector<JobState> gang_state;
  for (int at : {10, 25, 35, 59}) {
    sim.engine.call_at(s(at), [&](SimTime) {
      busy.push_back(sim.cluster.totals().gpus_busy);
      gang_state.push_back(sim.engine.job(JobId{1}).state);
    });
  }
  sim.engine.run();
  CHECK(busy == std::vector<std::int64_t>{1, 0, 1, 0});   // low, nothing, small, nothing
  CHECK(gang_state == std::vector<JobState>(4, JobState::kPending));
  CHECK(sim.engine.preemptions() == 0);
  CHECK(sim.job(0).evictions == 0);
  CHECK(sim.job(2).state == JobState::kCompleted);
  CHECK(sim.job(2).start == s(30));
  const auto& g = sim.job(1);
  CHECK(g.state == JobState::kFailed);
  CHECK(g.end == s(60));
  CHECK(g.attempts == 0);
  CHECK_THAT(sim.engine.reason(g.reason), Catch::Contains("gang timeout"));
  CHECK(t::cluster_empty(sim.cluster));
}

TEST_CASE("A NoExecute taint evicts the job that does not tolerate it and spares the one that does",
          "[engine][policies]") {
  // n0 (2 GPUs): a and b (tolerates maint); n1 (1 GPU): c until 100. At 50 n0 gets maint:NoExecute.
  auto b = gpu_job("b", 0, 1000, 1);
  b.constraints.tolerations.push_back(Toleration{"maint", "Exists", "", "NoExecute"});
  EngineConfig cfg;
  cfg.node_events.push_back(NodeEvent{s(50), NodeId{0}, false, Taint{"maint", "", TaintEffect::kNoExecute}, false});
  Sim sim({t::node("n0", 16, 64, 2), t::node("n1", 16, 64, 1)},
          {gpu_job("a", 0, 1000, 1), b, gpu_job("c", 0, 100, 1)}, cfg);
  sim.engine.run();
  const auto& a = sim.job(0);
  CHECK(sim.logged("50.000000,requeue,a,,node n0 tainted maint:NoExecute"));
  CHECK(a.evictions == 1);
  CHECK(a.lost_work_us == Approx(50e6));
  CHECK(sim.job(1).evictions == 0);
  CHECK(sim.job(1).end == s(1000));
  CHECK(sim.engine.evictions() == 1);
  CHECK(sim.engine.preemptions() == 0);
  // It may not come back to n0: it waits for c and restarts on n1, from zero.
  CHECK(a.start == s(100));
  CHECK(sim.logged("100.000000,start,a,,n1[0]"));
  CHECK(a.end == s(1100));
  CHECK(t::cluster_empty(sim.cluster));
}

namespace {

/// Checks at every start that nothing is over-committed and every gang got all its tasks, and
/// at every preemption that the victim had a strictly lower priority than its preemptor.
class PreemptionChecker final : public Observer {
 public:
  void on_job_start(SimTime, JobId j, std::span<const TaskPlacement> p, const Engine& e) override {
    ++starts;
    const auto why = t::cluster_violation(e.cluster());
    if (!why.empty()) errors.push_back("over-committed: " + why);
    if (static_cast<std::int32_t>(p.size()) != e.spec(j).tasks) errors.push_back("partial gang " + e.spec(j).name);
  }
  void on_job_requeue(SimTime, JobId j, std::string_view reason, const Engine& e) override {
    const std::string_view prefix = "preempted by ";
    if (reason.substr(0, prefix.size()) != prefix) {
      errors.push_back("unexpected requeue: " + std::string(reason));
      return;
    }
    ++preemptions;
    const auto by = std::stoul(std::string(reason.substr(prefix.size() + 1)));   // "j<index>"
    const auto& victim = e.spec(j);
    const auto& preemptor = e.spec(JobId{static_cast<std::uint32_t>(by)});
    if (victim.priority >= preemptor.priority) errors.push_back(victim.name + " preempted by " + preemptor.name + " of no higher priority");
    if (!victim.constraints.preemptible) errors.push_back(victim.name + " was not preemptible");
    if (preemptor.constraints.preempt_never) errors.push_back(preemptor.name + " has preemptionPolicy Never");
  }
  std::vector<std::string> errors;
  std::size_t starts = 0, preemptions = 0;
};

Workload random_workload(std::uint64_t seed, int count) {
  Rng rng(seed);
  Workload w;
  double at = 0;
  const int gpu_choices[] = {1, 2, 4, 8};
  for (int i = 0; i < count; ++i) {
    at += rng.exponential(1.0 / 20.0);
    const auto tasks = static_cast<std::int32_t>(rng.uniform() < 0.7 ? 1 : 2 + rng.below(2));
    const int gpus = gpu_choices[rng.below(tasks > 1 ? 3 : 4)];
    auto j = gpu_job(t::numbered("j", i), at, 50.0 + static_cast<double>(rng.below(2000)), gpus,
                     static_cast<std::int32_t>(rng.below(4)), tasks);
    j.constraints.preemptible = rng.uniform() >= 0.1;
    j.constraints.preempt_never = rng.uniform() < 0.1;
    w.push_back(std::move(j));
  }
  return w;
}

}  // namespace

TEST_CASE("Property: random workloads under preemption never over-commit, never split gangs, and end",
          "[engine][policies][property]") {
  for (const auto restart : {RestartPolicy::kFromZero, RestartPolicy::kCheckpoint}) {
    std::vector<NodeSpec> nodes;
    for (int i = 0; i < 3; ++i) nodes.push_back(t::node(t::numbered("a", i), 64, 512, 8));
    for (int i = 0; i < 3; ++i) nodes.push_back(t::node(t::numbered("t", i), 32, 128, 4, "T4"));
    EngineConfig cfg;
    cfg.preemption.restart = restart;
    cfg.preemption.checkpoint_interval = s(120);
    Sim sim(std::move(nodes), random_workload(20240611, 300), cfg);
    PreemptionChecker check;
    sim.engine.add_observer(&check);
    sim.engine.run();
    INFO("restart policy " << static_cast<int>(restart));
    CHECK(check.errors == std::vector<std::string>{});
    CHECK(check.preemptions > 10);   // the workload does exercise preemption
    CHECK(check.preemptions == sim.engine.preemptions());
    CHECK(sim.engine.evictions() == sim.engine.preemptions());
    double lost = 0;
    for (std::uint32_t i = 0; i < sim.jobs.size(); ++i) {
      const auto& rt = sim.job(i);
      const auto& spec = sim.jobs[i];
      INFO(spec.name);
      REQUIRE(rt.state == JobState::kCompleted);   // every job ran to the end: the run terminated
      // The last run did what was left after the kept work (full speed on whole GPUs).
      CHECK((rt.end - rt.start).us == spec.duration.us - static_cast<std::int64_t>(rt.work_kept_us));
      if (restart == RestartPolicy::kFromZero) CHECK(rt.work_kept_us == 0.0);
      lost += rt.lost_gpu_hours;
    }
    CHECK(lost == Approx(sim.engine.lost_gpu_hours()));
    CHECK(t::cluster_empty(sim.cluster));
  }
}
