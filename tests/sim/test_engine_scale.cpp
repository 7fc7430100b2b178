// What the engine does to stay cheap on large replays, checked for the same results: arrivals
// fed from the workload instead of the event heap, O(1) bookkeeping of running jobs, jobs.csv
// streamed row by row, the backfill scratch cluster kept between reservations.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include <gpusched/policies/framework/registry.hpp>
#include <gpusched/policies/framework/scheduler.hpp>
#include <gpusched/sim/engine.hpp>
#include <gpusched/sim/event_queue.hpp>
#include <gpusched/sim/outputs.hpp>

#include "support/support.hpp"

using namespace gpusched;
using namespace gpusched::sim;
namespace t = gpusched::test;

namespace {

SimTime s(std::int64_t seconds) { return SimTime::from_seconds(seconds); }

JobSpec gpu_job(const std::string& name, double submit, double duration, const std::string& gpus = "1") {
  return t::job(name, submit, duration, t::request({{"cpu", "1"}, {"memory", "1Gi"}, {"nvidia.com/gpu", gpus}}));
}

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
};

}  // namespace

TEST_CASE("Ids set aside for external events keep their place in (time, id) order", "[sim][event_queue]") {
  EventQueue q;
  const EventId timer = q.push(s(10), Timer{0});
  const EventId first = q.reserve_external(3);   // ids 1, 2, 3
  const EventId node = q.push(s(10), NodeDown{NodeId{0}});
  CHECK(timer == 0);
  CHECK(first == 1);
  CHECK(node == 4);
  CHECK(q.pushed() == 5);
  CHECK(q.live() == 5);   // the three external ones count until taken
  CHECK(q.next_id() == timer);
  (void)q.pop();
  CHECK(q.next_id() == node);
  q.cancel(first);   // not the heap's: ignored
  CHECK(q.live() == 4);
  q.take_external();
  q.take_external();
  q.take_external();
  CHECK(q.live() == 1);
  (void)q.pop();
  CHECK(q.empty());
  CHECK(q.live() == 0);
}

TEST_CASE("Arrivals fire after timers set before the run and before node events of the same instant",
          "[sim][engine]") {
  // Before the run, call_at() takes id 0; the arrivals come next, then the node events: at one
  // instant they fire in that order, as when the arrivals were in the event queue.
  EngineConfig cfg;
  cfg.node_events = {{s(10), NodeId{0}, false}};
  Sim sim({t::node("n0", 8, 32, 1, "T4"), t::node("n1", 8, 32, 1, "T4")},
          {gpu_job("a", 10, 100), gpu_job("b", 10, 100)}, cfg);
  std::vector<JobState> seen;
  sim.engine.call_at(s(10), [&](SimTime) { seen = {sim.engine.job(JobId{0}).state, sim.engine.job(JobId{1}).state}; });
  sim.engine.run();
  CHECK(seen == std::vector<JobState>{JobState::kNotArrived, JobState::kNotArrived});
  // Both arrive, then n0 goes down before the cycle: one job runs on n1, the other waits.
  CHECK(sim.log.lines() == std::vector<std::string>{"10.000000,submit,a,,", "10.000000,submit,b,,",
                                                    "10.000000,node_down,,n0,", "10.000000,start,a,,n1[0]",
                                                    "110.000000,finish,a,,", "110.000000,start,b,,n1[0]",
                                                    "210.000000,finish,b,,"});
}

TEST_CASE("A node going down requeues its jobs in job order, whatever order they started in", "[sim][engine]") {
  // b (job 1) waits for two GPUs while c (job 2) starts on the third; b starts when x ends. At
  // t=20 n0 holds c (started first) and b: they are requeued b, then c.
  EngineConfig cfg;
  cfg.node_events = {{s(20), NodeId{0}, false}};
  Sim sim({t::node("n0", 8, 32, 3, "T4")},
          {gpu_job("x", 0, 10, "2"), gpu_job("b", 1, 100, "2"), gpu_job("c", 2, 100, "1")}, cfg);
  sim.engine.run();
  CHECK(sim.log.lines() == std::vector<std::string>{
                               "0.000000,submit,x,,", "0.000000,start,x,,\"n0[0,1]\"", "1.000000,submit,b,,",
                               "2.000000,submit,c,,", "2.000000,start,c,,n0[2]", "10.000000,finish,x,,",
                               "10.000000,start,b,,\"n0[0,1]\"", "20.000000,node_down,,n0,",
                               "20.000000,requeue,b,,node n0 went down", "20.000000,requeue,c,,node n0 went down"});
  CHECK(sim.engine.running_count() == 0);
  CHECK(sim.engine.pending_count() == 2);
}

TEST_CASE("jobs.csv streamed from the engine is the table written from job_rows()", "[sim][outputs]") {
  // Completed, pending (with a reason) and running jobs, and a job that runs past the horizon.
  EngineConfig cfg;
  cfg.horizon = s(150);
  Sim sim({t::node("n0", 8, 32, 2, "T4"), t::node("n1", 8, 32, 1, "T4")},
          {gpu_job("a", 0, 100, "2"), gpu_job("b", 0, 300), gpu_job("c", 5, 50, "2"), gpu_job("d,quoted", 6, 10, "3")},
          cfg);
  sim.engine.run();
  std::ostringstream streamed, table;
  write_jobs_csv(streamed, sim.engine);
  write_jobs_csv(table, job_rows(sim.engine));
  const std::string text = streamed.str();
  CHECK(text == table.str());
  CHECK(text.find("\"d,quoted\"") != std::string::npos);
  CHECK(std::count(text.begin(), text.end(), '\n') == 5);   // the header and four jobs
}

TEST_CASE("EASY backfill decides as before its scratch cluster was kept between reservations", "[sim][engine][backfill]") {
  // 60 jobs of 1, 2 and 4 GPUs on 8 GPUs: a queue builds and the reservation is computed again
  // at every finish. The log's FNV-1a digest was recorded with the engine that copied a fresh
  // scratch cluster for every reservation (commit f01e9a2; the same as `gpusched run` of this
  // workload as a scenario with event_log on).
  EngineConfig cfg;
  cfg.queue_policy = QueuePolicy::kEasyBackfill;
  Workload w;
  for (int i = 0; i < 60; ++i) {
    const std::string gpus = i % 5 == 0 ? "4" : (i % 3 == 0 ? "2" : "1");
    w.push_back(gpu_job(t::numbered("j", i), i, 20 + (i * 37) % 90, gpus));
  }
  Sim sim({t::node("n0", 16, 64, 4, "T4"), t::node("n1", 16, 64, 4, "T4")}, w, cfg, "slurm-backfill");
  sim.engine.run();
  std::string text;
  for (const auto& line : sim.log.lines()) text += (text.empty() ? "" : "\n") + line;
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (const unsigned char c : text) h = (h ^ c) * 0x100000001b3ULL;
  CHECK(sim.log.lines().size() == 180);
  CHECK(h == 0x9dca9ef30627a79aULL);
  CHECK(sim.engine.schedule_attempts() == 892);
  for (std::uint32_t i = 0; i < w.size(); ++i) CHECK(sim.engine.job(JobId{i}).state == JobState::kCompleted);
  CHECK(t::cluster_empty(sim.cluster));
}
