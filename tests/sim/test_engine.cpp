// The engine on small hand-checked workloads: arrivals, finishes, retries, fill mode, horizon,
// node failures and timers.
#include <catch2/catch.hpp>

#include <functional>
#include <string>
#include <vector>

#include <gpusched/policies/framework/registry.hpp>
#include <gpusched/policies/framework/scheduler.hpp>
#include <gpusched/sim/engine.hpp>
#include <gpusched/sim/outputs.hpp>

#include "support/support.hpp"

using namespace gpusched;
using namespace gpusched::sim;
namespace t = gpusched::test;

namespace {

SimTime s(std::int64_t seconds) { return SimTime::from_seconds(seconds); }

JobSpec gpu_job(const std::string& name, double submit, double duration, const std::string& gpus = "1",
                std::int32_t tasks = 1) {
  return t::job(name, submit, duration, t::request({{"cpu", "1"}, {"memory", "1Gi"}, {"nvidia.com/gpu", gpus}}), tasks);
}

/// Owns everything an engine needs; the event log records what happened.
struct Sim {
  ClusterState cluster;
  Workload jobs;
  policies::Scheduler scheduler;
  EventLog log;
  Engine engine;

  Sim(std::vector<NodeSpec> nodes, Workload w, EngineConfig cfg = {}, const std::string& profile = "first-fit")
      : cluster(t::cluster(std::move(nodes))),
        jobs(std::move(w)),
        scheduler(policies::builtin_profile(profile), policies::Registry::with_builtins(), 1),
        engine(cluster, jobs, scheduler, std::move(cfg)) {
    engine.add_observer(&log);
  }
  const JobRuntime& job(std::uint32_t i) const { return engine.job(JobId{i}); }
};

std::vector<NodeSpec> one_gpu_nodes(int n) {
  std::vector<NodeSpec> out;
  for (int i = 0; i < n; ++i) out.push_back(t::node(t::numbered("n", i), 8, 32, 1, "T4"));
  return out;
}

}  // namespace

TEST_CASE("A job that does not fit waits and starts when capacity frees", "[sim][engine]") {
  Sim sim(one_gpu_nodes(1), {gpu_job("a", 0, 100), gpu_job("b", 10, 50)});
  sim.engine.run();
  CHECK(sim.log.lines() == std::vector<std::string>{
                               "0.000000,submit,a,,", "0.000000,start,a,,n0[0]", "10.000000,submit,b,,",
                               "100.000000,finish,a,,", "100.000000,start,b,,n0[0]", "150.000000,finish,b,,"});
  CHECK(sim.job(0).state == JobState::kCompleted);
  CHECK(sim.job(1).state == JobState::kCompleted);
  CHECK(sim.job(1).start == s(100));
  CHECK(sim.job(1).end == s(150));
  CHECK(sim.job(1).attempts == 1);
  CHECK(sim.engine.now() == s(150));
  CHECK(sim.engine.running_count() == 0);
  CHECK(sim.engine.pending_count() == 0);
  CHECK(t::cluster_empty(sim.cluster));
}

TEST_CASE("A pending job records why it does not fit", "[sim][engine]") {
  EngineConfig cfg;
  cfg.horizon = s(20);
  Sim sim(one_gpu_nodes(1), {gpu_job("a", 0, 100), gpu_job("b", 10, 50)}, cfg);
  sim.engine.run();
  REQUIRE(sim.job(1).state == JobState::kPending);
  CHECK_THAT(sim.engine.reason(sim.job(1).reason), Catch::Contains("0/1 nodes are available"));
  CHECK_THAT(sim.engine.reason(sim.job(1).reason), Catch::Contains("Insufficient nvidia.com/gpu"));
  CHECK(sim.engine.pending_count() == 1);
}

TEST_CASE("Waiting jobs are retried in queue order when capacity frees", "[sim][engine]") {
  auto urgent = gpu_job("urgent", 30, 10);
  urgent.priority = 5;
  Sim sim(one_gpu_nodes(1), {gpu_job("a", 0, 100), gpu_job("b", 10, 10), gpu_job("c", 20, 10), urgent});
  sim.engine.run();
  CHECK(sim.job(3).start == s(100));   // higher priority first
  CHECK(sim.job(1).start == s(110));
  CHECK(sim.job(2).start == s(120));
  CHECK(sim.engine.now() == s(130));
}

TEST_CASE("Fill mode fails what does not fit and never finishes what starts", "[sim][engine]") {
  EngineConfig cfg;
  cfg.fill_mode = true;
  cfg.retry = false;
  Sim sim(one_gpu_nodes(2), {gpu_job("a", 0, 100), gpu_job("b", 10, 100), gpu_job("c", 20, 100), gpu_job("d", 30, 5, "2")},
          cfg);
  sim.engine.run();
  CHECK(sim.job(0).state == JobState::kRunning);
  CHECK(sim.job(1).state == JobState::kRunning);
  CHECK(sim.job(2).state == JobState::kFailed);
  CHECK(sim.job(2).end == s(20));
  CHECK(sim.job(3).state == JobState::kFailed);
  CHECK_THAT(sim.engine.reason(sim.job(2).reason), Catch::Contains("Insufficient nvidia.com/gpu"));
  CHECK_THAT(sim.engine.reason(sim.job(3).reason), Catch::Contains("exceeds every node"));
  CHECK(sim.engine.now() == s(30));
  CHECK(sim.cluster.totals().gpus_busy == 2);
  CHECK(sim.log.lines().back() == "30.000000,fail,d,,0/2 nodes are available: 2 nvidia.com/gpu exceeds every node (node-resources-fit)");
}

TEST_CASE("Without retry a job that does not fit on arrival fails", "[sim][engine]") {
  EngineConfig cfg;
  cfg.retry = false;
  Sim sim(one_gpu_nodes(1), {gpu_job("a", 0, 100), gpu_job("b", 10, 50), gpu_job("c", 120, 5)}, cfg);
  sim.engine.run();
  CHECK(sim.job(0).state == JobState::kCompleted);
  CHECK(sim.job(1).state == JobState::kFailed);
  CHECK(sim.job(2).state == JobState::kCompleted);
}

TEST_CASE("The horizon stops the run with later jobs running or not arrived", "[sim][engine]") {
  EngineConfig cfg;
  cfg.horizon = s(120);
  Sim sim(one_gpu_nodes(1), {gpu_job("a", 0, 100), gpu_job("b", 10, 50), gpu_job("c", 200, 5)}, cfg);
  sim.engine.run();
  CHECK(sim.job(0).state == JobState::kCompleted);
  CHECK(sim.job(1).state == JobState::kRunning);
  CHECK(sim.job(2).state == JobState::kNotArrived);
  CHECK(sim.engine.now() == s(120));
  CHECK(sim.cluster.totals().tasks == 1);
}

TEST_CASE("Events exactly at the horizon are still processed", "[sim][engine]") {
  EngineConfig cfg;
  cfg.horizon = s(100);
  Sim sim(one_gpu_nodes(1), {gpu_job("a", 0, 100), gpu_job("b", 100, 5)}, cfg);
  sim.engine.run();
  CHECK(sim.job(0).state == JobState::kCompleted);
  CHECK(sim.job(1).state == JobState::kRunning);
  CHECK(sim.engine.now() == s(100));
}

TEST_CASE("A node going down requeues its jobs, which restart elsewhere", "[sim][engine]") {
  EngineConfig cfg;
  cfg.node_events = {{s(30), NodeId{0}, false}};
  Sim sim(one_gpu_nodes(2), {gpu_job("a", 0, 100)}, cfg);
  sim.engine.run();
  CHECK(sim.log.lines() == std::vector<std::string>{"0.000000,submit,a,,", "0.000000,start,a,,n0[0]",
                                                    "30.000000,node_down,,n0,", "30.000000,requeue,a,,node n0 went down",
                                                    "30.000000,start,a,,n1[0]", "130.000000,finish,a,,"});
  CHECK(sim.job(0).attempts == 2);
  CHECK(sim.job(0).start == s(30));
  CHECK(sim.job(0).end == s(130));
  CHECK_FALSE(sim.cluster.node(NodeId{0}).schedulable);
  CHECK(t::cluster_empty(sim.cluster));
}

TEST_CASE("A node going down fails its jobs when requeue is off", "[sim][engine]") {
  EngineConfig cfg;
  cfg.requeue_on_node_down = false;
  cfg.node_events = {{s(30), NodeId{0}, false}};
  Sim sim(one_gpu_nodes(2), {gpu_job("a", 0, 100), gpu_job("b", 0, 100)}, cfg);
  sim.engine.run();
  CHECK(sim.job(0).state == JobState::kFailed);
  CHECK(sim.job(0).end == s(30));
  CHECK(sim.engine.reason(sim.job(0).reason) == "node n0 went down");
  CHECK(sim.job(1).state == JobState::kCompleted);   // on n1, untouched
  CHECK(sim.job(1).end == s(100));
  CHECK(t::cluster_empty(sim.cluster));
}

TEST_CASE("A gang with a task on a failed node is stopped and requeued whole", "[sim][engine]") {
  EngineConfig cfg;
  cfg.node_events = {{s(10), NodeId{1}, false}, {s(50), NodeId{1}, true}};
  Sim sim(one_gpu_nodes(3), {gpu_job("gang", 0, 100, "1", 2)}, cfg);
  sim.engine.run();
  const auto& lines = sim.log.lines();
  CHECK(lines == std::vector<std::string>{"0.000000,submit,gang,,", "0.000000,start,gang,,n0[0];n1[0]",
                                          "10.000000,node_down,,n1,", "10.000000,requeue,gang,,node n1 went down",
                                          "10.000000,start,gang,,n0[0];n2[0]", "50.000000,node_up,,n1,",
                                          "110.000000,finish,gang,,"});
  CHECK(t::cluster_empty(sim.cluster));
}

TEST_CASE("Jobs waiting for a failed node start when it comes back", "[sim][engine]") {
  EngineConfig cfg;
  cfg.node_events = {{s(5), NodeId{0}, false}, {s(50), NodeId{0}, true}};
  Sim sim(one_gpu_nodes(1), {gpu_job("a", 10, 20)}, cfg);
  sim.engine.run();
  CHECK(sim.job(0).start == s(50));
  CHECK(sim.job(0).end == s(70));
  CHECK(sim.cluster.node(NodeId{0}).schedulable);
}

TEST_CASE("call_at timers fire at their time, in time order, after the events before them", "[sim][engine]") {
  Sim sim(one_gpu_nodes(1), {gpu_job("a", 0, 100)});
  std::vector<std::pair<std::int64_t, std::int64_t>> fired;   // (now, tasks running)
  sim.engine.call_at(s(75), [&](SimTime now) { fired.emplace_back(now.us, sim.cluster.totals().tasks); });
  sim.engine.call_at(s(25), [&](SimTime now) { fired.emplace_back(now.us, sim.cluster.totals().tasks); });
  sim.engine.call_at(s(150), [&](SimTime now) { fired.emplace_back(now.us, sim.cluster.totals().tasks); });
  sim.engine.run();
  CHECK(fired == std::vector<std::pair<std::int64_t, std::int64_t>>{{25'000'000, 1}, {75'000'000, 1}, {150'000'000, 0}});
  CHECK(sim.engine.now() == s(150));
}

TEST_CASE("A timer callback can schedule the next timer", "[sim][engine]") {
  Sim sim(one_gpu_nodes(1), {gpu_job("a", 0, 35)});
  struct Ticks {
    Engine* engine;
    std::vector<std::int64_t> at;
  } ticks{&sim.engine, {}};
  // Two reference captures: small enough for std::function to store the lambda inline, so the
  // callback must survive the engine's timer table growing while it runs.
  std::function<void(SimTime)> tick;
  tick = [&ticks, &tick](SimTime now) {
    if (ticks.at.size() < 5) ticks.engine->call_at(now + SimTime::from_seconds(10), tick);
    ticks.at.push_back(now.us / 1'000'000);
  };
  sim.engine.call_at(s(10), tick);
  sim.engine.run();
  CHECK(ticks.at == std::vector<std::int64_t>{10, 20, 30, 40, 50, 60});
}

TEST_CASE("A node failure that stops a never-ending job does not cancel unrelated timers", "[sim][engine]") {
  EngineConfig cfg;
  cfg.node_events = {{s(10), NodeId{0}, false}};
  Sim sim(one_gpu_nodes(2), {gpu_job("forever", 0, -1)}, cfg);
  bool fired = false;
  sim.engine.call_at(s(20), [&](SimTime) { fired = true; });   // the first event pushed
  sim.engine.run();
  CHECK(fired);
  CHECK(sim.job(0).state == JobState::kRunning);
  CHECK(sim.job(0).attempts == 2);
}

TEST_CASE("Skipping equivalent jobs does not change any outcome", "[sim][engine]") {
  Workload w;
  for (int i = 0; i < 40; ++i) w.push_back(gpu_job(t::numbered("j", i), i, 30 + (i % 7) * 10, i % 3 == 0 ? "2" : "1"));
  auto outcome = [&](bool skip) {
    EngineConfig cfg;
    cfg.skip_equivalent = skip;
    std::vector<NodeSpec> nodes{t::node("a", 16, 64, 2, "T4"), t::node("b", 16, 64, 2, "T4"), t::node("c", 16, 64, 1, "T4")};
    Sim sim(nodes, w, cfg, "binpack");
    sim.engine.run();
    return sim.log.lines();
  };
  CHECK(outcome(true) == outcome(false));
}

TEST_CASE("An empty workload runs to time zero", "[sim][engine]") {
  Sim sim(one_gpu_nodes(1), {});
  sim.engine.run();
  CHECK(sim.engine.now() == SimTime::zero());
  CHECK(sim.log.lines().empty());
  CHECK(sim.engine.events_processed() == 0);
}
