// Issue 4's scenario-level features end to end: priority classes, preemption restart policy,
// taint events, queueing actions (strict FIFO, EASY backfill), the gang check before the run and
// autoscaled node groups. Scenario JSON -> scenario::run -> job rows checked by hand.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <gpusched/policies/framework/registry.hpp>
#include <gpusched/policies/framework/scheduler.hpp>
#include <gpusched/rng.hpp>
#include <gpusched/scenario/scenario.hpp>

#include "support/support.hpp"

using namespace gpusched;
using namespace gpusched::scenario;

namespace {

/// A scenario with single nodes (see test::scenario_doc).
std::string doc(std::string_view nodes, std::string_view jobs, std::string_view extra = "") {
  return test::scenario_doc("policies", "nodes", nodes, jobs, extra);
}

Scenario parse(const std::string& text) { return parse_scenario(std::string_view(text), "t.json", test::source_dir()); }

std::map<std::string, sim::JobRow> rows_by_name(const RunResult& r) {
  std::map<std::string, sim::JobRow> out;
  for (auto& row : r.jobs()) out.emplace(row.job, row);
  return out;
}

constexpr std::string_view kTwoNodes =
    R"({"name": "a", "cpu": 16, "memory": "64Gi", "gpus": 4, "gpu_model": "A100-80GB"},
       {"name": "b", "cpu": 16, "memory": "64Gi", "gpus": 4, "gpu_model": "A100-80GB"})";

}  // namespace

TEST_CASE("A priority class gives its jobs its value and the global default covers the rest", "[scenario][policies]") {
  const auto sc = parse(doc(kTwoNodes,
                            R"({"id": "x", "submit_time": 0, "duration": 10, "priority_class": "high", "requests": {"cpu": 1}},
                               {"id": "y", "submit_time": 0, "duration": 10, "requests": {"cpu": 1}},
                               {"id": "z", "submit_time": 0, "duration": 10, "priority": 5, "requests": {"cpu": 1}},
                               {"id": "w", "submit_time": 0, "duration": 10, "priority_class": "batch", "requests": {"cpu": 1}})",
                            R"("priority_classes": {"high": 1000, "batch": {"value": 10, "preemption_policy": "Never"},
                                                    "normal": {"value": 100, "global_default": true}},)"));
  REQUIRE(sc.jobs.size() == 4);
  CHECK(sc.jobs[0].priority == 1000);
  CHECK(sc.jobs[1].priority == 100);   // no class, priority 0: the global default
  CHECK(sc.jobs[2].priority == 5);     // an explicit priority stays
  CHECK(sc.jobs[3].priority == 10);
  CHECK(sc.jobs[3].constraints.preempt_never);
  CHECK_FALSE(sc.jobs[0].constraints.preempt_never);
}

TEST_CASE("An unknown priority class is an error naming the job's line and field", "[scenario][policies][errors]") {
  try {
    (void)parse(doc(kTwoNodes,
                    R"({"id": "x", "submit_time": 0, "requests": {"cpu": 1}},
                       {"id": "y", "submit_time": 0, "priority_class": "urgent", "requests": {"cpu": 1}})",
                    R"("priority_classes": {"high": 1000},)"));
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::kTraceBadValue);
    CHECK(e.where().line == 2);
    CHECK(e.where().field == "priority_class");
    CHECK_THAT(e.detail(), Catch::Contains("\"urgent\"") && Catch::Contains("high"));
  }
}

TEST_CASE("Priority class and preemption settings are checked before the run", "[scenario][policies][errors]") {
  auto code_and_field = [](const std::string& extra) -> std::pair<ErrorCode, std::string> {
    try {
      (void)parse(doc(kTwoNodes, R"({"id": "x", "submit_time": 0, "requests": {"cpu": 1}})", extra));
    } catch (const Error& e) {
      return {e.code(), e.where().field};
    }
    return {ErrorCode{}, "no error"};
  };
  CHECK(code_and_field(R"("priority_classes": {"a": {"preemption_policy": "Never"}},)") ==
        std::pair{ErrorCode::kScenarioMissingField, std::string("/priority_classes/a/value")});
  CHECK(code_and_field(R"("priority_classes": {"a": {"value": 1, "preemption_policy": "Sometimes"}},)").second ==
        "/priority_classes/a/preemption_policy");
  CHECK(code_and_field(R"("priority_classes": {"a": {"value": 1, "global_default": true}, "b": {"value": 2, "global_default": true}},)")
            .second == "/priority_classes/b/global_default");
  CHECK(code_and_field(R"("preemption": {"restart": "rewind"},)").second == "/preemption/restart");
  CHECK(code_and_field(R"("preemption": {"restart_overhead_s": -1},)").second == "/preemption/restart_overhead_s");
  CHECK(code_and_field(R"("preemption": {"placement": "anywhere"},)").second == "/preemption/placement");
  CHECK(code_and_field(R"("preemption": {"checkpoint_interval_s": 0},)").second == "/preemption/checkpoint_interval_s");
  CHECK(code_and_field(R"("profile": {"queueing": "lifo"},)").first == ErrorCode::kProfileBadArgs);
}

TEST_CASE("A gang larger than the whole empty cluster is rejected before the run", "[scenario][policies][errors]") {
  // Two nodes of 4 GPUs hold eight 1-GPU tasks or two 4-GPU tasks at once.
  const auto fits = parse(doc(kTwoNodes, R"({"id": "g", "submit_time": 0, "duration": 1, "tasks": 8, "requests": {"cpu": 1, "nvidia.com/gpu": 1}})"));
  CHECK_NOTHROW(run(fits));
  const auto too_big = parse(doc(kTwoNodes, R"({"id": "ok", "submit_time": 0, "duration": 1, "requests": {"cpu": 1}},
                                               {"id": "g", "submit_time": 0, "duration": 1, "tasks": 3, "requests": {"cpu": 1, "nvidia.com/gpu": 4}})"));
  try {
    (void)run(too_big);
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::kTraceUnplaceable);
    CHECK(e.where().line == 2);
    CHECK(e.where().field == "min_available");
    CHECK_THAT(e.detail(), Catch::Contains("gang of 3") && Catch::Contains("holds only 2"));
  }
}

TEST_CASE("A NoExecute taint event evicts untolerating jobs and an untaint lets them back", "[scenario][policies]") {
  const auto sc = parse(doc(R"({"name": "a", "cpu": 16, "memory": "64Gi", "gpus": 4, "gpu_model": "A100-80GB"})",
                            R"({"id": "plain", "submit_time": 0, "duration": 100, "requests": {"cpu": 1, "nvidia.com/gpu": 1}},
                               {"id": "tolerant", "submit_time": 0, "duration": 100, "requests": {"cpu": 1, "nvidia.com/gpu": 1},
                                "tolerations": [{"key": "maintenance", "operator": "Exists"}]})",
                            R"("events": [{"time_s": 30, "node": "a", "type": "taint", "taint": {"key": "maintenance", "value": "bios", "effect": "NoExecute"}},
                                          {"time_s": 50, "node": "a", "type": "untaint", "taint": {"key": "maintenance", "effect": "NoExecute"}}],
                               "profile": {"filter": ["node-resources-fit", "taint-toleration"]},)"));
  const auto r = run(sc);
  const auto rows = rows_by_name(r);
  const auto& plain = rows.at("plain");
  const auto& tolerant = rows.at("tolerant");
  CHECK(tolerant.evictions == 0);
  CHECK(*tolerant.end_s == Approx(100));
  CHECK(plain.evictions == 1);
  CHECK(plain.attempts == 2);
  CHECK(*plain.start_s == Approx(50));    // back when the taint is gone
  CHECK(*plain.end_s == Approx(150));     // restarted from zero
  CHECK(r.summary().evictions == 1);
  CHECK(r.summary().preemptions == 0);
  CHECK(r.summary().lost_gpu_hours == Approx(30.0 / 3600.0));   // 30 s of one GPU
}

TEST_CASE("Strict FIFO keeps a small job behind the big one that does not fit, greedy lets it pass", "[scenario][policies][backfill]") {
  // One node, 4 GPUs: 'running' holds 2 until t=100; 'big' needs 4; 'small' needs 1 for 10 s.
  const std::string jobs = R"({"id": "running", "submit_time": 0, "duration": 100, "requests": {"cpu": 1, "nvidia.com/gpu": 2}},
                              {"id": "big", "submit_time": 1, "duration": 50, "requests": {"cpu": 1, "nvidia.com/gpu": 4}},
                              {"id": "small", "submit_time": 2, "duration": 10, "requests": {"cpu": 1, "nvidia.com/gpu": 1}})";
  const std::string node = R"({"name": "a", "cpu": 16, "memory": "64Gi", "gpus": 4, "gpu_model": "A100-80GB"})";
  const auto greedy = rows_by_name(run(parse(doc(node, jobs))));
  CHECK(*greedy.at("small").start_s == Approx(2));
  const auto strict = rows_by_name(run(parse(doc(node, jobs, R"("profile": {"extends": "first-fit", "queueing": "strict-fifo"},)"))));
  CHECK(*strict.at("big").start_s == Approx(100));
  CHECK(*strict.at("small").start_s == Approx(150));   // behind big, which takes all 4 GPUs until 150
}

TEST_CASE("EASY backfill lets a short job jump ahead but never a long one that would delay the reservation", "[scenario][policies][backfill]") {
  // 'running' holds 2 of 4 GPUs until t=100. 'big' (4 GPUs) reserves t=100. 'short' (1 GPU,
  // 50 s) ends before 100: it backfills at once. 'long' (1 GPU, 500 s) would still hold a GPU at
  // 100: it waits until big has started.
  const std::string node = R"({"name": "a", "cpu": 16, "memory": "64Gi", "gpus": 4, "gpu_model": "A100-80GB"})";
  const std::string jobs = R"({"id": "running", "submit_time": 0, "duration": 100, "requests": {"cpu": 1, "nvidia.com/gpu": 2}},
                              {"id": "big", "submit_time": 1, "duration": 50, "requests": {"cpu": 1, "nvidia.com/gpu": 4}},
                              {"id": "short", "submit_time": 2, "duration": 50, "requests": {"cpu": 1, "nvidia.com/gpu": 1}},
                              {"id": "long", "submit_time": 3, "duration": 500, "requests": {"cpu": 1, "nvidia.com/gpu": 1}})";
  const auto r = run(parse(doc(node, jobs, R"("profile": {"extends": "first-fit", "queueing": "easy-backfill"},)")));
  const auto rows = rows_by_name(r);
  CHECK(*rows.at("short").start_s == Approx(2));
  CHECK(*rows.at("big").start_s == Approx(100));
  CHECK(*rows.at("long").start_s == Approx(150));

  SECTION("a declared walltime is what backfill plans with") {
    // 'short' declares 200 s: it might run past 100, so it may not jump ahead.
    std::string declared = jobs;
    declared.replace(declared.find(R"("id": "short", "submit_time": 2, "duration": 50)"),
                     std::string_view(R"("id": "short", "submit_time": 2, "duration": 50)").size(),
                     R"("id": "short", "submit_time": 2, "duration": 50, "walltime": 200)");
    const auto rows2 = rows_by_name(run(parse(doc(node, declared, R"("profile": {"extends": "first-fit", "queueing": "easy-backfill"},)"))));
    CHECK(*rows2.at("big").start_s == Approx(100));
    CHECK(*rows2.at("short").start_s >= 100.0);
  }
  SECTION("a long job that leaves room for the reserved one may backfill") {
    // On a second node, 'long' does not touch the GPUs big needs.
    const std::string two = node + R"(, {"name": "b", "cpu": 16, "memory": "64Gi", "gpus": 1, "gpu_model": "A100-80GB"})";
    const auto rows2 = rows_by_name(run(parse(doc(two, jobs, R"("profile": {"extends": "first-fit", "queueing": "easy-backfill"},)"))));
    CHECK(*rows2.at("big").start_s == Approx(100));
    CHECK(*rows2.at("long").start_s < 100.0);
  }
}

TEST_CASE("EASY backfill never delays the reserved job: random workloads against strict FIFO", "[scenario][policies][backfill][property]") {
  // With exact durations every reservation is honoured: each job that ever held the reservation
  // starts at or before the earliest time it was promised.
  Rng rng(RngStreams(7).stream("test.backfill"));
  for (int round = 0; round < 20; ++round) {
    std::string jobs;
    const int n = 40;
    for (int i = 0; i < n; ++i) {
      const int gpus = 1 + static_cast<int>(rng.below(4));
      const int dur = 10 + static_cast<int>(rng.below(200));
      jobs += std::string(i ? "," : "") + R"({"id": "j)" + std::to_string(i) + R"(", "submit_time": )" +
              std::to_string(i * 3) + R"(, "duration": )" + std::to_string(dur) +
              R"(, "requests": {"cpu": 1, "nvidia.com/gpu": )" + std::to_string(gpus) + "}}";
    }
    const std::string nodes = R"({"name": "a", "cpu": 64, "memory": "256Gi", "gpus": 4, "gpu_model": "A100-80GB"},
                                 {"name": "b", "cpu": 64, "memory": "256Gi", "gpus": 4, "gpu_model": "A100-80GB"})";
    const auto sc = parse(doc(nodes, jobs, R"("profile": {"extends": "first-fit", "queueing": "easy-backfill"},)"));
    // Watch the reservation after every cycle: the reserved job must start by its reserved time.
    struct Watch final : sim::Observer {
      std::map<std::uint32_t, SimTime> promised;   // job -> earliest reserved time seen
      void on_advance(SimTime, SimTime, const sim::Engine& e) override {
        const auto [j, at] = e.reservation();
        if (at.is_forever()) return;
        auto [it, added] = promised.try_emplace(j.value, at);
        if (!added) it->second = std::min(it->second, at);
      }
    };
    // Run through the C++ engine with the observer.
    ClusterState cluster(sc.catalog, sc.resources, sc.nodes);
    policies::Scheduler sched(sc.profile, policies::Registry::with_builtins(), sc.seed);
    sim::EngineConfig cfg = sc.engine;
    cfg.queue_policy = sim::QueuePolicy::kEasyBackfill;
    sim::Engine engine(cluster, sc.jobs, sched, cfg);
    Watch watch;
    engine.add_observer(&watch);
    engine.run();
    REQUIRE_FALSE(watch.promised.empty());
    for (const auto& [j, at] : watch.promised) {
      INFO("round " << round << " job " << sc.jobs[j].name);
      CHECK(engine.job(JobId{j}).start <= at);
    }
    for (std::uint32_t j = 0; j < sc.jobs.size(); ++j) CHECK(engine.job(JobId{j}).state == sim::JobState::kCompleted);
    CHECK(test::cluster_empty(cluster));
  }
}

TEST_CASE("Autoscaled node groups are parsed with their bounds", "[scenario][policies][autoscaler]") {
  const auto sc = parse(R"({"schema_version": 1, "cluster": {"node_groups": [
      {"name": "static", "count": 2, "cpu": 8, "memory": "32Gi"},
      {"name": "gpu", "count": 5, "cpu": 64, "memory": "256Gi", "gpus": 8, "gpu_model": "A100-80GB",
       "autoscale": {"min": 1, "provisioning_delay_s": 120, "scale_down_idle_s": 300}}]},
      "autoscaler": {"scan_interval_s": 20},
      "workload": {"jobs": []}})");
  REQUIRE(sc.autoscaler.groups.size() == 1);
  const auto& g = sc.autoscaler.groups[0];
  CHECK(g.name == "gpu");
  CHECK(g.first == 2);
  CHECK(g.max == 5);
  CHECK(g.min == 1);
  CHECK(g.provisioning_delay == SimTime::from_seconds(120));
  CHECK(g.scale_down_idle == SimTime::from_seconds(300));
  CHECK(sc.autoscaler.scan_interval == SimTime::from_seconds(20));
  CHECK(sc.nodes.size() == 7);
  try {
    (void)parse(R"({"schema_version": 1, "cluster": {"node_groups": [
        {"name": "gpu", "count": 2, "cpu": 64, "memory": "256Gi", "autoscale": {"min": 3}}]}, "workload": {"jobs": []}})");
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.where().field == "/cluster/node_groups/0/autoscale/min");
  }
}

TEST_CASE("An autoscaled group grows for a pending job and its node-hours reach the summary", "[scenario][policies][autoscaler]") {
  const auto sc = parse(R"({"schema_version": 1, "cluster": {"node_groups": [
      {"name": "cpu", "count": 1, "cpu": 8, "memory": "32Gi"},
      {"name": "gpu", "count": 2, "cpu": 64, "memory": "256Gi", "gpus": 8, "gpu_model": "A100-80GB",
       "autoscale": {"min": 0, "provisioning_delay_s": 300, "scale_down_idle_s": 600}}]},
      "autoscaler": {"scan_interval_s": 10, "expander": "first"},
      "workload": {"jobs": [{"id": "train", "submit_time": 0, "duration": 1000, "requests": {"cpu": 8, "nvidia.com/gpu": 8}}]}})");
  const auto r = run(sc);
  const auto rows = rows_by_name(r);
  // Seen by the scan at 10 s, node ready at 310 s; removed 600 s after the job ends at 1310 s.
  CHECK(*rows.at("train").start_s == Approx(310));
  const auto j = r.summary_json();
  REQUIRE(j.contains("autoscaler"));
  CHECK(j["autoscaler"]["groups"][0]["name"] == "gpu");
  CHECK(j["autoscaler"]["groups"][0]["scale_ups"] == 1);
  CHECK(j["autoscaler"]["node_hours"].get<double>() == Approx((1910.0 - 10.0) / 3600.0));
}

namespace {
constexpr std::string_view kFourSmallNodes =
    R"({"name": "n0", "cpu": 8, "memory": "32Gi", "gpus": 1, "gpu_model": "A100-80GB"},
       {"name": "n1", "cpu": 8, "memory": "32Gi", "gpus": 1, "gpu_model": "A100-80GB"},
       {"name": "n2", "cpu": 8, "memory": "32Gi", "gpus": 1, "gpu_model": "A100-80GB"},
       {"name": "n3", "cpu": 8, "memory": "32Gi", "gpus": 1, "gpu_model": "A100-80GB"})";
}  // namespace

TEST_CASE("Room a preemption frees beyond what the preemptor takes goes to waiting jobs at once", "[scenario][policies][preemption]") {
  // A 2-task gang holds n1 and n2; 'high' evicts it whole but needs only one node: 'waiting'
  // gets the other right away instead of idling until some unrelated job ends.
  const auto sc = parse(doc(std::string(kFourSmallNodes.substr(0, kFourSmallNodes.rfind(",\n"))),
                            R"({"id": "x", "submit_time": 0, "duration": 1000, "requests": {"cpu": 1, "nvidia.com/gpu": 1}},
                               {"id": "gang", "submit_time": 8, "duration": 500, "tasks": 2, "requests": {"cpu": 1, "nvidia.com/gpu": 1}},
                               {"id": "waiting", "submit_time": 9, "duration": 100, "requests": {"cpu": 1, "nvidia.com/gpu": 1}},
                               {"id": "high", "submit_time": 10, "duration": 1000, "priority": 10, "requests": {"cpu": 1, "nvidia.com/gpu": 1}})",
                            R"("profile": {"extends": "first-fit", "post_filter": ["priority-preemption"]},)"));
  REQUIRE(sc.nodes.size() == 3);
  const auto r = run(sc);
  const auto rows = rows_by_name(r);
  CHECK(rows.at("gang").evictions == 1);
  CHECK(*rows.at("high").start_s == Approx(10));
  CHECK(*rows.at("waiting").start_s == Approx(10));
  CHECK(r.summary().preemptions == 1);
}

TEST_CASE("A backfill candidate that preempts on the unreserved nodes evicts its victims properly", "[scenario][policies][preemption][backfill]") {
  // 'd' (priority 5) starts first, on n0. 'head' (3 nodes, never preempts) reserves n1-n3 for
  // 1000 s; at 100 s 'j' fits on n1 but would delay it, so it waits; once head has started, j
  // preempts 'd'. The backfill retry path must evict victims like the main path.
  const auto sc = parse(doc(kFourSmallNodes,
                            R"({"id": "a", "submit_time": 0, "duration": 100, "requests": {"cpu": 1, "nvidia.com/gpu": 1}},
                               {"id": "b", "submit_time": 0, "duration": 1000, "requests": {"cpu": 1, "nvidia.com/gpu": 1}},
                               {"id": "c", "submit_time": 0, "duration": 1000, "requests": {"cpu": 1, "nvidia.com/gpu": 1}},
                               {"id": "d", "submit_time": 0, "duration": 5000, "priority": 5, "requests": {"cpu": 1, "nvidia.com/gpu": 1}},
                               {"id": "head", "submit_time": 50, "duration": 100, "tasks": 3, "priority": 20, "preemption_policy": "Never",
                                "requests": {"cpu": 1, "nvidia.com/gpu": 1}},
                               {"id": "j", "submit_time": 100, "duration": 2000, "priority": 10, "requests": {"cpu": 1, "nvidia.com/gpu": 1}})",
                            R"("profile": {"extends": "first-fit", "post_filter": ["priority-preemption"], "queueing": "easy-backfill"},)"));
  const auto r = run(sc);   // used to abort: the victim's resources were released twice
  const auto rows = rows_by_name(r);
  for (const auto& [name, row] : rows) CHECK(row.state == "completed");
  CHECK(*rows.at("head").start_s == Approx(1000));   // the reservation held: j did not take n1 at 100
  CHECK(*rows.at("j").start_s == Approx(1000));      // ... and took n0 from 'd' once head had started
  CHECK(rows.at("d").evictions == 1);
  CHECK(test::cluster_violation(r.engine().cluster()).empty());
}

TEST_CASE("examples/policies.json runs: preemption with checkpoints, a NoExecute eviction, a gang and autoscaling", "[scenario][policies][examples]") {
  const auto sc = load_scenario(test::example("policies.json"));
  const auto r = run(sc);
  const auto rows = rows_by_name(r);
  for (const auto& [name, row] : rows) CHECK(row.state == "completed");
  // research-a (priority 100 by the global default) evicts a scavenger (0); the scavengers never preempt.
  CHECK(rows.at("scavenge-1").evictions >= 1);
  CHECK(rows.at("research-a").evictions == 0);
  // The gang is evicted by the maintenance taint at 1500 s and, with 600 s checkpoints, redoes
  // only what it ran since its last checkpoint.
  const auto& gang = rows.at("gang-16");
  CHECK(gang.evictions == 1);
  CHECK(*gang.end_s - *gang.start_s < 1200.0);
  // prod-serving's two tasks are on different nodes (max_per_node 1), one on the reserved pool.
  CHECK_THAT(rows.at("prod-serving").placement, Catch::Contains("reserved-0000"));
  const auto j = r.summary_json();
  CHECK(j["preemption"]["preemptions"].get<std::int64_t>() >= 2);
  CHECK(j["autoscaler"]["scale_ups"].get<std::int64_t>() >= 1);
  CHECK(test::cluster_empty(r.engine().cluster()));
}

TEST_CASE("A gang that grows onto an autoscaled node keeps that node: the autoscaler watches on_job_grow (review)",
          "[scenario][policies][autoscaler]") {
  // A random review scenario (two autoscaled groups, gangs with min_available < tasks): j440
  // starts with one task and grows onto a g3 node later. The autoscaler still took that node
  // for empty and aborted on its invariant ("a node marked empty runs tasks"); had it not, it
  // could have removed the node under the running task.
  const auto sc = parse(R"({"schema_version": 1, "seed": 794, "cluster": {"node_groups": [
      {"name": "g2", "count": 1, "cpu": 16, "memory": 0, "gpus": 8, "gpu_model": "H100-80GB",
       "autoscale": {"min": 0, "provisioning_delay_s": 300, "scale_down_idle_s": 600}},
      {"name": "g3", "count": 1, "cpu": 16, "memory": "256Gi", "gpus": 8, "gpu_model": "A100-80GB",
       "autoscale": {"min": 0, "provisioning_delay_s": 300, "scale_down_idle_s": 60}},
      {"name": "g4", "count": 1, "cpu": 64, "memory": "64Gi", "gpus": 1, "gpu_model": "A100-80GB", "gpu_partition": {"mode": "mig", "dynamic": true}}]},
      "profile": "first-fit",
      "workload": {"jobs": [
        {"id": "j403", "submit_time": 645, "duration": 30, "requests": {"nvidia.com/gpu": 2}, "tasks": 3, "min_available": 2},
        {"id": "j440", "submit_time": 708, "duration": 1000, "requests": {"cpu": 8, "nvidia.com/gpu": 8}, "tasks": 2, "min_available": 1}]},
      "horizon_s": 200000, "outputs": {"event_log": true}})");
  const auto r = run(sc);
  const auto jobs = r.jobs();
  REQUIRE(jobs.size() == 2);
  CHECK(jobs[1].state == "completed");
  // Every node the grown job ran on stayed up until it ended.
  for (const auto& line : r.event_log()) {
    if (line.find(",node_down,") == std::string::npos && line.find(",scale_down,") == std::string::npos) continue;
    CHECK(std::stod(line.substr(0, line.find(','))) >= jobs[1].end_s);
  }
}
