// The preemptive reallocation queueing mode and the training-job orders (issue 17): each order on
// small hand-made cases with answers worked out by hand, restart overheads, the reorder event of
// an order that moves with time, and (tests/scenario/test_tiresias.cpp) the Tiresias
// simulator's figures reproduced by the engine with GPUs counted only.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <gpusched/policies/framework/profile.hpp>
#include <gpusched/policies/framework/registry.hpp>
#include <gpusched/policies/framework/scheduler.hpp>
#include <gpusched/policies/queuesort/training.hpp>
#include <gpusched/sim/engine.hpp>
#include <gpusched/scenario/scenario.hpp>
#include <gpusched/sim/metrics.hpp>
#include <gpusched/sim/outputs.hpp>
#include <gpusched/traces/native.hpp>
#include <gpusched/traces/philly.hpp>

#include "support/support.hpp"

using namespace gpusched;
using namespace gpusched::sim;
namespace t = gpusched::test;

namespace {

struct Ran {
  std::map<std::string, JobRow> rows;
  std::vector<std::string> events;
  double overhead_gpu_hours = 0;
  std::uint64_t preemptions = 0;
};

/// One node of `gpus` A100s; jobs of (name, submit, duration, GPUs) run under `order` (with
/// `args`) in the preemptive mode.
Ran run(int gpus, const std::vector<std::tuple<std::string, double, double, int>>& specs, const std::string& order,
        nlohmann::json args = nlohmann::json::object(), EngineConfig cfg = {}) {
  auto cluster = t::cluster({t::node("n0", 64, 512, gpus)});
  Workload jobs;
  for (const auto& [name, submit, duration, g] : specs) {
    jobs.push_back(t::job(name, submit, duration, t::request({{"cpu", "1"}, {"nvidia.com/gpu", std::to_string(g)}})));
  }
  auto profile = policies::builtin_profile("binpack");
  profile.queue_sort = policies::PluginRef{order};
  profile.queue_sort.args = std::move(args);
  profile.queueing = "preemptive";
  policies::Scheduler sched(profile, policies::Registry::builtins(), 1);
  cfg.queue_policy = QueuePolicy::kPreemptive;
  cfg.preemption.restart = RestartPolicy::kResume;
  EventLog log;
  Engine engine(cluster, jobs, sched, cfg);
  engine.add_observer(&log);
  engine.run();
  Ran r;
  for (const auto& row : job_rows(engine)) r.rows[row.job] = row;
  r.events = log.lines();
  r.overhead_gpu_hours = engine.overhead_gpu_hours();
  r.preemptions = engine.preemptions();
  REQUIRE(t::cluster_empty(cluster));
  return r;
}

double end_of(const Ran& r, const std::string& job) { return r.rows.at(job).end_s.value_or(-1); }

}  // namespace

TEST_CASE("srtf: a short arrival preempts a long job, which resumes where it was", "[sim][preemptive]") {
  // 1 GPU. a: 100 s at 0; b: 10 s at 5. b has less left (10 < 95): a is preempted at 5, b runs
  // 5-15, a resumes at 15 with 95 s left and ends at 110.
  const auto r = run(1, {{"a", 0, 100, 1}, {"b", 5, 10, 1}}, "srtf");
  CHECK(end_of(r, "b") == 15);
  CHECK(end_of(r, "a") == 110);
  CHECK(r.rows.at("a").preemptions == 1);
  CHECK(r.rows.at("a").resumptions == 1);
  CHECK(r.rows.at("a").attained_s == Approx(100));
  CHECK(r.rows.at("a").start_s == 15);   // jobs.csv's start is the last (re)start
  CHECK(r.rows.at("b").preemptions == 0);
  CHECK(r.preemptions == 1);
  CHECK(r.rows.at("a").reason.empty());
  // The victim leaves before the preemptor starts, at the same instant.
  std::vector<std::string> at5;
  for (const auto& e : r.events) {
    if (e.rfind("5.000000,", 0) == 0) at5.push_back(e.substr(9, e.find(',', 9) - 9));
  }
  CHECK(at5 == std::vector<std::string>{"submit", "requeue", "start"});
}

TEST_CASE("A restart overhead delays the resumed job and is counted in GPU-hours", "[sim][preemptive]") {
  EngineConfig cfg;
  cfg.preemption.restart_overhead = SimTime::from_seconds(3);
  // As above, but a resumes 3 s late: 113. Its overhead: 3 s on 1 GPU.
  const auto r = run(1, {{"a", 0, 100, 1}, {"b", 5, 10, 1}}, "srtf", nlohmann::json::object(), cfg);
  CHECK(end_of(r, "a") == 113);
  CHECK(r.rows.at("a").overhead_s == 3);
  CHECK(r.rows.at("b").overhead_s == 0);
  CHECK(r.overhead_gpu_hours == Approx(3.0 / 3600));
  // Preempted again while restoring, a keeps what it had done: c (2 s at 16) preempts a at 16,
  // 1 s into its 3 s restore; a resumes at 18, restores 3 s, and has 95 s left: 116.
  const auto r2 = run(1, {{"a", 0, 100, 1}, {"b", 5, 10, 1}, {"c", 16, 2, 1}}, "srtf", nlohmann::json::object(), cfg);
  CHECK(end_of(r2, "c") == 18);
  CHECK(end_of(r2, "a") == 116);
  CHECK(r2.rows.at("a").overhead_s == 4);   // 1 s cut short by c, then 3 s
}

TEST_CASE("Preemptive mode keeps a running job that still fits: only the jobs the order leaves out are preempted",
          "[sim][preemptive]") {
  // 3 GPUs. a (1 GPU, 100 s) and b (2 GPUs, 50 s) run from 0; x and y (1 GPU, 10 s) come at 5.
  // srtf order at 5: x, y, b (45 s left), a (95 s). Walking it, x and y take 2 GPUs, b does not
  // fit, a does: only b is preempted (the Tiresias simulator's outcome). Evicting from the last
  // in the order alone would make x evict a, y evict b, and a start again at once: a preemption
  // and a restart overhead for a job the order keeps (review of issue 17).
  EngineConfig cfg;
  cfg.preemption.restart_overhead = SimTime::from_seconds(5);
  const auto r = run(3, {{"a", 0, 100, 1}, {"b", 0, 50, 2}, {"x", 5, 10, 1}, {"y", 5, 10, 1}}, "srtf", nlohmann::json::object(), cfg);
  CHECK(r.rows.at("a").preemptions == 0);
  CHECK(r.rows.at("a").overhead_s == 0);
  CHECK(end_of(r, "a") == 100);
  CHECK(r.rows.at("b").preemptions == 1);
  CHECK(end_of(r, "b") == 65);   // 5 s done, back at 15 after 5 s of restore: 15 + 5 + 45
  CHECK(r.preemptions == 1);
  // 4 GPUs: a (1), b (2) and c (1) run; x (3 GPUs, 10 s) comes at 5. Order: x, b (45 s left),
  // c (60), a (95). Counted, x and c fit and b and a do not, so a and b leave, though c is
  // after b in the order (from the last alone: a, then c, then b would go, and c start again).
  const auto r2 = run(4, {{"a", 0, 100, 1}, {"b", 0, 50, 2}, {"c", 0, 65, 1}, {"x", 5, 10, 3}}, "srtf", nlohmann::json::object(), cfg);
  CHECK(r2.rows.at("c").preemptions == 0);
  CHECK(end_of(r2, "c") == 65);
  CHECK(r2.rows.at("a").preemptions == 1);
  CHECK(r2.rows.at("b").preemptions == 1);
}

TEST_CASE("Preemptive mode: a job bigger than the cluster says so, not that the jobs ahead hold its GPUs", "[sim][preemptive]") {
  const auto r = run(2, {{"a", 0, 10, 1}, {"big", 1, 10, 4}, {"b", 2, 10, 2}}, "srtf");
  CHECK(r.rows.at("big").state == "pending");
  CHECK(r.rows.at("big").reason == "preemptive: needs more GPUs than the cluster has");
  CHECK(r.rows.at("b").state == "completed");
}

TEST_CASE("sjf and srsf: fewest GPUs, least remaining GPU-time", "[sim][preemptive]") {
  // 2 GPUs. a: 2 GPUs x 100 s at 0; b: 1 GPU x 150 s at 10.
  // sjf: b (1 GPU) comes first: a is preempted at 10, b runs 10-160, a resumes at 160 with 90 s left: 250.
  const auto sjf = run(2, {{"a", 0, 100, 2}, {"b", 10, 150, 1}}, "sjf");
  CHECK(end_of(sjf, "b") == 160);
  CHECK(end_of(sjf, "a") == 250);
  // srsf: at 10, a has 90 s x 2 = 180 GPU-s left, b 150 x 1: b first again.
  const auto srsf = run(2, {{"a", 0, 100, 2}, {"b", 10, 150, 1}}, "srsf");
  CHECK(end_of(srsf, "b") == 160);
  CHECK(end_of(srsf, "a") == 250);
  // srtf: a has 90 s left, b 150: a keeps running (100), b follows (100-250).
  const auto srtf = run(2, {{"a", 0, 100, 2}, {"b", 10, 150, 1}}, "srtf");
  CHECK(end_of(srtf, "a") == 100);
  CHECK(end_of(srtf, "b") == 250);
  CHECK(srtf.preemptions == 0);
}

TEST_CASE("2d-las demotes a job at the moment it crosses a threshold, with no other event", "[sim][preemptive]") {
  // 2 GPUs, one threshold at 100 GPU-s. a: 2 GPUs x 100 s at 0; b: 1 GPU x 10 s at 10.
  // At 10 both are in queue 0 (a has 20 GPU-s); a runs, and a running job keeps its place in
  // its queue, so b waits. a crosses 100 GPU-s at 50: it drops to queue 1 and b preempts it then
  // (nothing else happens at 50: the order's own event). b ends at 60; a resumes, ends at 110.
  const auto r = run(2, {{"a", 0, 100, 2}, {"b", 10, 10, 1}}, "2d-las", {{"thresholds", {100}}});
  CHECK(end_of(r, "b") == 60);
  CHECK(end_of(r, "a") == 110);
  CHECK(r.rows.at("a").queue_level == 1);
  CHECK(r.rows.at("b").queue_level == 0);
  CHECK(r.rows.at("a").attained_gpu_s == Approx(200));
  // las counts time, not GPU-time: a crosses 100 s only at its end; b waits until 100.
  const auto las = run(2, {{"a", 0, 100, 2}, {"b", 10, 10, 1}}, "las", {{"thresholds", {100}}});
  CHECK(end_of(las, "a") == 100);
  CHECK(end_of(las, "b") == 110);
}

TEST_CASE("las within_queue: running-first keeps a running job ahead in its queue, fifo orders by entry", "[sim][preemptive]") {
  // 1 GPU, one threshold at 10 s. a: 100 s at 0; b: 100 s at 5. a crosses 10 s at 10 (queue 1
  // from 10) and b, in queue 0, preempts it; b crosses at 20 (queue 1 from 20).
  // running-first: b runs on to 110, then a (90 s left) to 200.
  const auto rf = run(1, {{"a", 0, 100, 1}, {"b", 5, 100, 1}}, "las", {{"thresholds", {10}}});
  CHECK(end_of(rf, "b") == 110);
  CHECK(end_of(rf, "a") == 200);
  // fifo: a entered queue 1 first, so it preempts b at 20 and ends at 110; b ends at 200.
  const auto fifo = run(1, {{"a", 0, 100, 1}, {"b", 5, 100, 1}}, "las", {{"thresholds", {10}}, {"within_queue", "fifo"}});
  CHECK(end_of(fifo, "a") == 110);
  CHECK(end_of(fifo, "b") == 200);
  CHECK(fifo.rows.at("b").preemptions == 1);
}

TEST_CASE("las starvation: a waiting job that waited K x its attained time returns to the first queue", "[sim][preemptive]") {
  // 1 GPU, one threshold at 10 s, K = 1. a: 100 s at 0; b: 1,000 s at 20.
  //  0-20: a runs; it crosses 10 s at 10 (queue 1). At 20 b arrives in queue 0 and preempts a
  //        (a has attained 20 s; it may wait 20 s).
  //  30:   b crosses 10 s (queue 1). Both in queue 1, b runs: it keeps its place.
  //  40:   a has waited 20 s: promoted to queue 0, it preempts b (b attained 20 s).
  //  50:   a crosses 10 s again (counted from its promotion): queue 1, running, keeps running.
  //  60:   b has waited 20 s: promoted, preempts a (a attained 20 s since its promotion)...
  // Each preempts the other every 20 s (a's work: 20 + 20 + 20 ... until a is done).
  const auto r = run(1, {{"a", 0, 100, 1}, {"b", 20, 1000, 1}}, "las", {{"thresholds", {10}}, {"starvation_k", 1}});
  // a runs 0-20, 40-60, 80-100, 120-140, 160-180: done at 180 (100 s of work).
  CHECK(end_of(r, "a") == 180);
  CHECK(r.rows.at("a").preemptions == 4);
  CHECK(end_of(r, "b") == 1100);
  // Without starvation a never runs again until b is done (b stays ahead in queue 1, running).
  const auto none = run(1, {{"a", 0, 100, 1}, {"b", 20, 1000, 1}}, "las", {{"thresholds", {10}}});
  CHECK(end_of(none, "b") == 1020);
  CHECK(end_of(none, "a") == 1100);
}

TEST_CASE("gittins: the index over a service distribution, and the order it gives", "[sim][preemptive]") {
  // Samples 10, 20, 30, 100 s (service "time"), quantum 10 s:
  //   G(0)  = P(S <= 10) / E[min(S, 10)]             = (1/4) / (40/4)            = 1/40
  //   G(10) = P(S <= 20 | S > 10) / E[min(S-10, 10)] = (1/3) / ((10+10+10)/3)    = 1/30
  //   G(20) = (1/2) / ((10 + 10) / 2)                = 1/20
  //   G(30) = (0/1) / (10 / 1)                       = 0
  //   G(100) = 0 (past every sample)
  const auto file = std::filesystem::temp_directory_path() / "gpusched-gittins-samples.csv";
  {
    std::ofstream out(file);
    out << "# service samples\nservice\n10\n20\n30\n100\n";
  }
  policies::GittinsOrder g(false, 10, policies::read_service_distribution(file.string()));
  auto cluster = t::cluster({t::node("n0", 8, 64, 1)});
  const Workload none;
  g.attach(cluster, none, nullptr);
  CHECK(g.index(0) == Approx(1.0 / 40));
  CHECK(g.index(10) == Approx(1.0 / 30));
  CHECK(g.index(20) == Approx(1.0 / 20));
  CHECK(g.index(30) == 0);
  CHECK(g.index(100) == 0);
  // 1 GPU. a: 30 s at 0; b: 15 s at 12. At 12, a has 12 s (band 10: 1/30), b 0 (1/40): a keeps
  // running. At 20 a enters band 20 (1/20), still ahead. At 30 a ends; b runs 30-45.
  const auto r = run(1, {{"a", 0, 30, 1}, {"b", 12, 15, 1}}, "gittins",
                     {{"quantum", 10}, {"distribution", file.string()}, {"service", "time"}});
  CHECK(end_of(r, "a") == 30);
  CHECK(end_of(r, "b") == 45);
  // a: 50 s at 0; b at 32. At 30 a enters band 30 (index 0); b (index 1/40) preempts it at 32.
  const auto r2 = run(1, {{"a", 0, 50, 1}, {"b", 32, 15, 1}}, "gittins",
                      {{"quantum", 10}, {"distribution", file.string()}, {"service", "time"}});
  CHECK(end_of(r2, "b") == 47);
  CHECK(end_of(r2, "a") == 65);   // 32 s done before b, 18 s after
  CHECK(r2.rows.at("a").queue_level == 5);   // 50 s of service in quanta of 10
  std::filesystem::remove(file);
}

TEST_CASE("Training orders: bad arguments and distribution files are refused naming the field", "[sim][preemptive]") {
  auto profile_with = [](const std::string& order, nlohmann::json args) {
    auto p = policies::builtin_profile("binpack");
    p.queue_sort = policies::PluginRef{order};
    p.queue_sort.args = std::move(args);
    return p;
  };
  auto field_of = [&](const std::string& order, nlohmann::json args) {
    try {
      policies::Scheduler s(profile_with(order, std::move(args)), policies::Registry::builtins(), 1);
    } catch (const Error& e) {
      return e.where().field;
    }
    return std::string("no error");
  };
  CHECK(field_of("las", {{"thresholds", {100, 50}}}) == "las/args/thresholds");
  CHECK(field_of("2d-las", {{"thresholds", {0}}}) == "2d-las/args/thresholds");
  CHECK(field_of("las", {{"starvation_k", -1}}) == "las/args/starvation_k");
  CHECK(field_of("las", {{"within_queue", "lifo"}}) == "las/args/within_queue");
  CHECK(field_of("gittins", {{"quantum", 0}}) == "gittins/args/quantum");
  CHECK(field_of("gittins", {{"service", "gpus"}}) == "gittins/args/service");
  CHECK(field_of("las", {{"thresholds", nlohmann::json::array()}}) == "no error");   // one queue: FIFO
  const auto file = std::filesystem::temp_directory_path() / "gpusched-gittins-bad.csv";
  {
    std::ofstream out(file);
    out << "gpu_time\n100\n-5\n";
  }
  const auto e = t::thrown<TraceError>([&] { (void)policies::read_service_distribution(file.string()); });
  CHECK(e.where().file == file.string());
  CHECK(e.where().line == 3);
  CHECK(e.where().field == "gpu_time");
  CHECK(e.code() == ErrorCode::kTraceBadValue);
  {   // several columns, none named as the samples (review of issue 17: the first was taken)
    std::ofstream out(file);
    out << "job_id,num_gpu,submit_time\n1,2,3\n";
  }
  const auto header = t::thrown<TraceError>([&] { (void)policies::read_service_distribution(file.string()); });
  CHECK(header.where().line == 1);
  CHECK(header.where().field == "header");
  {   // one column may be named as it likes
    std::ofstream out(file);
    out << "seconds\n100\n200\n";
  }
  CHECK(policies::read_service_distribution(file.string()).size() == 2);
  std::filesystem::remove(file);
  const auto missing = t::thrown<TraceError>([] { (void)policies::read_service_distribution("/nonexistent/samples.csv"); });
  CHECK(missing.code() == ErrorCode::kTraceCannotOpen);
}

TEST_CASE("A job's own restart_overhead (trace field) replaces the run's, and round-trips through CSV and JSON Lines",
          "[sim][preemptive][traces]") {
  ResourceTable res;
  const auto catalog = GpuCatalog::builtin();
  std::istringstream in(
      "{\"id\":\"a\",\"submit_time\":0,\"duration\":100,\"requests\":{\"nvidia.com/gpu\":1},\"restart_overhead\":4.5}\n"
      "{\"id\":\"b\",\"submit_time\":5,\"duration\":10,\"requests\":{\"nvidia.com/gpu\":1}}\n");
  const auto jobs = traces::read_trace(in, traces::TraceFormat::kJsonLines, "t.jsonl", catalog, res);
  REQUIRE(jobs.size() == 2);
  CHECK(jobs[0].constraints.restart_overhead == SimTime::from_seconds_f(4.5));
  CHECK(jobs[1].constraints.restart_overhead.is_forever());
  for (const auto format : {traces::TraceFormat::kCsv, traces::TraceFormat::kJsonLines}) {
    std::ostringstream out;
    traces::write_trace(out, format, jobs, catalog, res);
    std::istringstream back(out.str());
    const auto again = traces::read_trace(back, format, "back", catalog, res);
    REQUIRE(again.size() == 2);
    CHECK(again[0].constraints.restart_overhead == jobs[0].constraints.restart_overhead);
    CHECK(again[1].constraints.restart_overhead.is_forever());
  }
  std::istringstream bad("id,submit_time,duration,restart_overhead,nvidia.com/gpu\na,0,10,-1,1\n");
  const auto e = t::thrown<TraceError>([&] { (void)traces::read_trace(bad, traces::TraceFormat::kCsv, "bad.csv", catalog, res); });
  CHECK(e.where().line == 2);
  CHECK(e.where().field == "restart_overhead");
  // The run's overhead is 3 s; a's own 4.5 s wins: a resumes at 15, restores 4.5 s and has 95 s left: 114.5.
  auto cluster = t::cluster({t::node("n0", 64, 512, 1)});
  auto profile = policies::builtin_profile("binpack");
  profile.queue_sort = policies::PluginRef{"srtf"};
  profile.queueing = "preemptive";
  policies::Scheduler sched(profile, policies::Registry::builtins(), 1);
  EngineConfig cfg;
  cfg.queue_policy = QueuePolicy::kPreemptive;
  cfg.preemption.restart = RestartPolicy::kResume;
  cfg.preemption.restart_overhead = SimTime::from_seconds(3);
  Engine engine(cluster, jobs, sched, cfg);
  engine.run();
  CHECK(engine.job(JobId{0}).end == SimTime::from_seconds_f(114.5));
  CHECK(engine.overhead_s(JobId{0}) == 4.5);
}

TEST_CASE("A Tiresias job list may give each job's restart_overhead (gpusched's own column)", "[sim][preemptive][traces]") {
  // Review of issue 17: the column was dropped without a word.
  ResourceTable res;
  auto catalog = GpuCatalog::builtin();
  std::istringstream in("job_id,num_gpu,submit_time,duration,restart_overhead\nA,1,0,100,7\nB,2,0,50,\n");
  const auto jobs = traces::read_tiresias_jobs(in, "t.csv", catalog, res);
  REQUIRE(jobs.size() == 2);
  CHECK(jobs[0].constraints.restart_overhead == SimTime::from_seconds(7));
  CHECK(jobs[1].constraints.restart_overhead.is_forever());
  std::istringstream bad("job_id,num_gpu,submit_time,duration,restart_overhead\nA,1,0,100,-2\n");
  const auto e = t::thrown<TraceError>([&] { (void)traces::read_tiresias_jobs(bad, "bad.csv", catalog, res); });
  CHECK(e.where().line == 2);
  CHECK(e.where().field == "restart_overhead");
}

namespace {
/// Runs a scenario given as JSON text (jobs.csv rows by job, and the summary).
std::pair<std::map<std::string, JobRow>, Summary> run_text(const std::string& text,
                                                           const std::filesystem::path& base = ".") {
  const auto r = scenario::run(scenario::parse_scenario(std::string_view(text), "t.json", base));
  std::map<std::string, JobRow> rows;
  for (const auto& row : r.jobs()) rows[row.job] = row;
  return {rows, r.summary()};
}
const std::string kHead = R"({"schema_version": 1, "seed": 1, )";
std::string one_node(int gpus, const std::string& extra = "") {
  return R"("cluster": {"nodes": [{"name": "n0", "cpu": "32", "memory": "256Gi", "gpus": )" + std::to_string(gpus) +
         R"(, "gpu_model": "A100-80GB")" + extra + "}]}, ";
}
std::string job_json(const std::string& id, double submit, double duration, int gpus, const std::string& extra = "") {
  return R"({"id": ")" + id + R"(", "submit_time": )" + std::to_string(submit) + R"(, "duration": )" + std::to_string(duration) +
         R"(, "requests": {"cpu": "1", "nvidia.com/gpu": )" + std::to_string(gpus) + "}" + extra + "}";
}
}  // namespace

TEST_CASE("fjf as a queue sort under greedy queueing: a job that does not fit is skipped, and nothing is preempted",
          "[sim][preemptive]") {
  // 4 GPUs: a (1 GPU, 100 s) at 0; b (4 GPUs) at 1 does not fit; c (1 GPU, 1000 s) at 2 does and
  // starts. When a ends, b still does not fit (c runs) and c is not preempted for it: b starts
  // when c ends. (Under preemptive queueing the fifo order would let b preempt c at 100.)
  const auto [rows, summary] = run_text(kHead + one_node(4) +
                                        R"("profile": {"name": "p", "extends": "binpack", "queueing": "greedy", "queue_sort": "fjf"},
    "workload": {"jobs": [)" + job_json("a", 0, 100, 1) + "," + job_json("b", 1, 10, 4) + "," + job_json("c", 2, 1000, 1) + "]}}");
  CHECK(rows.at("c").start_s == 2);
  CHECK(rows.at("c").evictions == 0);
  CHECK(rows.at("b").start_s == 1002);
  const auto [pre, ps] = run_text(kHead + one_node(4) +
                                  R"("profile": {"name": "p", "extends": "binpack", "queueing": "preemptive", "queue_sort": "fjf"},
    "workload": {"jobs": [)" + job_json("a", 0, 100, 1) + "," + job_json("b", 1, 10, 4) + "," + job_json("c", 2, 1000, 1) + "]}}");
  CHECK(pre.at("c").preemptions == 1);
  CHECK(pre.at("b").start_s == 100);
}

TEST_CASE("Preemptive mode: a waiting job that may not preempt, or a job that may not be preempted, does not make the "
          "victims' order evict a job the walk keeps", "[sim][preemptive]") {
  // Review of issue 17 (a87edbb counted W's GPUs though W cannot start). 4 GPUs, srtf, restart
  // overhead 5 s: N (1 GPU, not preemptible), R0 (2 GPUs, 55 s) and R1 (1 GPU, 65 s) run from 0;
  // W (2 GPUs, preemptionPolicy Never) comes at 1 and cannot start; X (1 GPU, 10 s) comes at 2.
  // Only R1 leaves for X; R0 runs through and ends at 55.
  const auto [rows, summary] = run_text(kHead + one_node(4) +
                                        R"("profile": {"name": "p", "extends": "default", "queueing": "preemptive", "queue_sort": "srtf"},
    "preemption": {"restart_overhead_s": 5},
    "workload": {"jobs": [)" + job_json("N", 0, 1000, 1, R"(, "preemptible": false)") + "," + job_json("R0", 0, 55, 2) + "," +
                                        job_json("R1", 0, 65, 1) + "," + job_json("W", 1, 5, 2, R"(, "preemption_policy": "Never")") + "," +
                                        job_json("X", 2, 10, 1) + "]}}");
  CHECK(rows.at("R0").preemptions == 0);
  CHECK(rows.at("R0").end_s == 55);
  CHECK(rows.at("R1").preemptions == 1);
  CHECK(rows.at("N").preemptions == 0);
}

TEST_CASE("Preemptive mode: victims start again at once where there is room; elastic gangs grow", "[sim][preemptive]") {
  // n0: 2 A100s, n1: 1 T4 (down until 5). v (any GPU) and y (A100) start on n0 at 0; p (2 A100s)
  // preempts both at 10; v starts again on n1 at 10, in the same cycle.
  const auto [rows, summary] = run_text(kHead + R"("cluster": {"nodes": [
      {"name": "n0", "cpu": "32", "memory": "256Gi", "gpus": 2, "gpu_model": "A100-80GB"},
      {"name": "n1", "cpu": "32", "memory": "256Gi", "gpus": 1, "gpu_model": "T4"}]},
    "profile": {"name": "p", "extends": "binpack", "queueing": "preemptive", "queue_sort": "srtf"},
    "workload": {"jobs": [)" + job_json("v", 0, 1000, 1) + "," + job_json("y", 0, 1000, 1, R"(, "gpu_model": "A100-80GB")") + "," +
                                         job_json("p", 10, 10, 2, R"(, "gpu_model": "A100-80GB")") + R"(]},
    "events": [{"time_s": 0, "node": "n1", "type": "node_down"}, {"time_s": 5, "node": "n1", "type": "node_up"}]})");
  CHECK(rows.at("v").preemptions == 1);
  CHECK(rows.at("v").start_s == 10);
  CHECK(rows.at("v").placement.rfind("n1", 0) == 0);
  CHECK(rows.at("y").start_s == 20);
  // Elastic: x (2 GPUs, 10 s) and e (4 tasks, at least 2) on 4 GPUs: e starts with 2 at 1 and
  // takes the other 2 when x ends at 10.
  const auto [el, es] = run_text(kHead + one_node(4) +
                                 R"("profile": {"name": "p", "extends": "binpack", "queueing": "preemptive", "queue_sort": "srtf"},
    "workload": {"jobs": [)" + job_json("x", 0, 10, 2) + "," +
                                 job_json("e", 1, 1000, 1, R"(, "tasks": 4, "min_available": 2)") + "]}}");
  CHECK(el.at("e").state == "completed");
  CHECK(std::count(el.at("e").placement.begin(), el.at("e").placement.end(), ';') == 3);
}

TEST_CASE("Preemptive mode: time-slicing replicas count as what they grant; a reorder no longer needed does not "
          "prolong the run", "[sim][preemptive]") {
  // One T4 time-sliced 4 ways: three 1-GPU jobs share it at once, as under greedy queueing.
  const auto [ts, tss] = run_text(kHead + R"("cluster": {"nodes": [{"name": "n0", "cpu": "32", "memory": "256Gi", "gpus": 1,
      "gpu_model": "T4", "gpu_partition": {"mode": "time-slicing", "replicas": 4}}]},
    "profile": {"name": "p", "extends": "binpack", "queueing": "preemptive", "queue_sort": "srtf"},
    "workload": {"jobs": [)" + job_json("a", 0, 100, 1) + "," + job_json("b", 0, 200, 1) + "," + job_json("c", 0, 300, 1) + "," +
                                  job_json("d", 0, 400, 2) + "]}}");
  // d (2 replicas, the longest) waits for a to end (sharers run slower: a ends at 300).
  for (const char* j : {"a", "b", "c"}) CHECK(ts.at(j).start_s == 0);
  CHECK(ts.at("d").start_s == ts.at("a").end_s);
  // 2d-las on 1 GPU: b waits behind a, whose threshold crossing at 3,250 s is the next order
  // change; a ends at 100, b at 110, and the run ends then, not at 3,250.
  const auto [l, ls] = run_text(kHead + one_node(1) + R"("profile": {"name": "p", "extends": "binpack", "queueing": "preemptive",
      "queue_sort": {"name": "2d-las", "args": {"thresholds": [3250, 7200]}}},
    "workload": {"jobs": [)" + job_json("a", 0, 100, 1) + "," + job_json("b", 5, 10, 1) + "]}}");
  CHECK(l.at("b").end_s == 110);
  CHECK(ls.end.seconds() == 110);
}

TEST_CASE("Preemptive mode: restoring is not attained service, so LAS with starvation cannot livelock; a finished "
          "job's queue stays as it ended", "[sim][preemptive]") {
  // 1 GPU, one threshold at 10 s, K = 1, 30 s to restore after a preemption. a and b preempt each
  // other; each run makes 10 s of progress after restoring, so both finish.
  const auto [rows, s] = run_text(kHead + one_node(1) + R"("profile": {"name": "p", "extends": "binpack", "queueing": "preemptive",
      "queue_sort": {"name": "las", "args": {"thresholds": [10], "starvation_k": 1}}},
    "preemption": {"restart_overhead_s": 30}, "horizon_s": 100000,
    "workload": {"jobs": [)" + job_json("a", 0, 100, 1) + "," + job_json("b", 1, 100, 1) + "]}}");
  CHECK(s.completed == 2);
  CHECK(rows.at("a").attained_s == Approx(100));
  CHECK(rows.at("b").attained_s == Approx(100));
  CHECK(rows.at("a").overhead_s + rows.at("b").overhead_s > 0);
  // a (20 s) crosses 10 s and completes in queue 1; b runs on beside it. Starvation does not
  // "promote" a job that has left.
  const auto [q, qs] = run_text(kHead + one_node(2) + R"("profile": {"name": "p", "extends": "binpack", "queueing": "preemptive",
      "queue_sort": {"name": "las", "args": {"thresholds": [10], "starvation_k": 1}}},
    "workload": {"jobs": [)" + job_json("a", 0, 20, 1) + "," + job_json("b", 0, 1000, 1) + "]}}");
  CHECK(q.at("a").queue_level == 1);
}

TEST_CASE("Preemptive mode: combinations it cannot honour and counts it cannot hold are refused, naming the field",
          "[sim][preemptive]") {
  const std::string prof = R"("profile": {"name": "p", "extends": "binpack", "queueing": "preemptive", "queue_sort": "srtf"}, )";
  const std::string jobs = R"("workload": {"jobs": [)" + job_json("a", 0, 100, 1) + "]}";
  auto field_of = [](const std::string& text) {
    try {
      (void)run_text(text);
    } catch (const Error& e) {
      return e.where().field;
    }
    return std::string("no error");
  };
  CHECK(field_of(kHead + one_node(1) + prof + R"("retry": false, )" + jobs + "}") == "retry");
  CHECK(field_of(kHead + one_node(1) + prof + R"("mode": "fill", )" + jobs + "}") == "mode");
  // Counting GPUs only, 600,000 tasks x 4,096 GPUs would be 2.46e9 one-GPU tasks.
  const std::string huge = R"("workload": {"jobs": [)" + job_json("big", 0, 100, 4096, R"(, "tasks": 600000, "min_available": 600000)") + "]}";
  CHECK(field_of(kHead + one_node(8) + prof + R"("preemption": {"placement": "count"}, )" + huge + "}") == "tasks");
}

TEST_CASE("gittins: a relative distribution file is beside the scenario; a missing one is named", "[sim][preemptive]") {
  const auto dir = std::filesystem::temp_directory_path() / "gpusched-gittins-dir";
  std::filesystem::create_directories(dir);
  {
    std::ofstream(dir / "dist.csv") << "10\n20\n30\n100\n";
  }
  const std::string text = kHead + one_node(1) + R"("profile": {"name": "p", "extends": "binpack", "queueing": "preemptive",
      "queue_sort": {"name": "gittins", "args": {"quantum": 10, "distribution": "dist.csv", "service": "time"}}},
    "workload": {"jobs": [)" + job_json("a", 0, 50, 1) + "," + job_json("b", 32, 15, 1) + "]}}";
  const auto [rows, s] = run_text(text, dir);
  CHECK(rows.at("b").end_s == 47);   // as in the gittins case above
  std::filesystem::remove(dir / "dist.csv");
  const auto e = t::thrown<Error>([&] { (void)run_text(text, dir); });
  CHECK_THAT(e.where().field, Catch::Contains("distribution"));
  CHECK_THAT(std::string(e.what()), Catch::Contains("dist.csv"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("Training orders without a view of the jobs (the scheduler extender) fall back to FIFO and say so",
          "[sim][preemptive]") {
  for (const char* order : {"las", "2d-las", "gittins"}) {
    INFO(order);
    auto profile = policies::builtin_profile("binpack");
    profile.queue_sort = policies::PluginRef{order};
    policies::Scheduler sched(profile, policies::Registry::builtins(), 1);
    auto cluster = t::cluster({t::node("n0", 8, 64, 2)});
    Workload jobs = {t::job("a", 0, 100, t::request({{"nvidia.com/gpu", "1"}})), t::job("b", 5, 10, t::request({{"nvidia.com/gpu", "1"}}))};
    sched.attach(cluster, jobs, nullptr);
    std::vector<TaskPlacement> out;
    REQUIRE(sched.schedule(cluster, jobs[0], JobId{0}, out).ok());
    sched.job_started(jobs[0], JobId{0}, out);
    CHECK(sched.before(jobs[0], JobId{0}, jobs[1], JobId{1}));
    CHECK_FALSE(sched.before(jobs[1], JobId{1}, jobs[0], JobId{0}));
    CHECK(sched.next_order_change(SimTime::zero()).is_forever());
    sched.job_stopped(jobs[0], JobId{0}, out);
    CHECK_THAT(sched.warnings().at(0), Catch::Contains("no view of the jobs' attained service"));
  }
}
