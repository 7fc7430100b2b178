// The `target_load` workload transform in scenarios: arrivals scaled so the offered GPU load is
// the target (traces::scale_to_gpu_load), errors naming the step's JSON path, and the real
// Philly trace, which replays at 15% GPU allocation as recorded, brought to a busy cluster.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <gpusched/scenario/scenario.hpp>
#include <gpusched/traces/transforms.hpp>

#include "support/support.hpp"

using namespace gpusched;
using namespace gpusched::scenario;
namespace t = gpusched::test;

namespace {

/// Eight nodes of 4 T4 each (32 GPUs = 32,000 milli), a trace file beside the scenario.
/// `transforms` is the JSON text of the step list.
nlohmann::json doc_with(const std::string& transforms, const std::string& trace = "trace.csv") {
  nlohmann::json d = nlohmann::json::parse(R"({
    "schema_version": 1,
    "name": "load",
    "seed": 3,
    "cluster": {"node_groups": [{"name": "g", "count": 8, "cpu": "64", "memory": "256Gi", "gpus": 4, "gpu_model": "T4"}]},
    "profile": "default",
    "outputs": {"sample_interval_s": 60}
  })");
  d["workload"]["trace"] = {{"path", trace}, {"transforms", nlohmann::json::parse(transforms)}};
  return d;
}

/// A light trace: 40 jobs over about three hours, whole GPUs, shares and CPU-only jobs.
std::string light_trace() {
  std::ostringstream text;
  text << "id,submit_time,duration,tasks,queue,cpu,memory,nvidia.com/gpu,gpusched.io/gpu-milli\n";
  for (int i = 0; i < 40; ++i) {
    const int submit = i * 277 + (i % 3) * 41;
    const int duration = 300 + (i * 611) % 2400;
    const char* gpu = i % 5 == 0 ? "" : i % 5 == 2 ? "2" : "1";
    const char* milli = i % 5 == 3 ? "500" : "";
    text << 'j' << i << ',' << submit << ',' << duration << ',' << (i % 7 == 0 ? 2 : 1) << ',' << (i % 2 ? 'a' : 'b')
         << ",2,4Gi," << gpu << ',' << milli << '\n';
  }
  return text.str();
}

ScenarioError run_error(const Scenario& sc) {
  try {
    (void)run(sc);
  } catch (const ScenarioError& e) {
    return e;
  }
  FAIL("no ScenarioError");
  throw;
}

}  // namespace

TEST_CASE("target_load scales a trace's arrivals to the offered GPU load and keeps durations", "[scenario][transforms]") {
  t::TempDir dir;
  dir.write("trace.csv", light_trace());
  const auto plain = parse_scenario(doc_with("[]"), "load.json", dir.path());
  const double before = traces::offered_gpu_load(plain.jobs, 32'000);
  CHECK(before < 0.5);
  const auto sc = parse_scenario(doc_with(R"([{"target_load": 1.2}])"), "load.json", dir.path());
  REQUIRE(sc.transforms.size() == 1);
  CHECK(sc.transforms[0].path == "/workload/trace/transforms/0/target_load");
  const auto r = run(sc);

  // The offered load of what ran, from the job table: submit times as replayed, durations from the trace.
  std::map<std::string, const JobSpec*> by_name;
  for (const auto& j : sc.jobs) by_name[j.name] = &j;
  const auto rows = r.jobs();
  REQUIRE(rows.size() == 40);
  Workload replayed;
  for (const auto& row : rows) {
    JobSpec j = *by_name.at(row.job);
    j.submit = SimTime::from_seconds_f(row.submit_s);
    replayed.push_back(j);
    CHECK(row.state == "completed");
    CHECK(*row.end_s - *row.start_s == Approx(by_name.at(row.job)->duration.seconds()).margin(1e-6));   // durations unchanged
  }
  CHECK(std::abs(traces::offered_gpu_load(replayed, 32'000) / 1.2 - 1.0) <= 1e-9);
  CHECK(replayed.front().submit == sc.jobs.front().submit);
  // Jobs keep their arrival order (the table is in replay order: by submit time, stable).
  std::vector<std::string> order_in, order_out;
  auto sorted = sc.jobs;
  std::stable_sort(sorted.begin(), sorted.end(), [](const JobSpec& a, const JobSpec& b) { return a.submit < b.submit; });
  for (const auto& j : sorted) order_in.push_back(j.name);
  for (const auto& row : rows) order_out.push_back(row.job);
  CHECK(order_in == order_out);
  // A busier cluster than the trace as recorded.
  const auto base = run(plain);
  CHECK(r.summary().gpu_alloc_pct_arrivals > base.summary().gpu_alloc_pct_arrivals * 1.5);
  CHECK(r.summary_json()["inputs"]["scenario"]["workload"]["trace"]["transforms"][0]["target_load"] == 1.2);

  // Byte-identical outputs run to run.
  write_outputs(run(sc), dir.path() / "a");
  write_outputs(run(sc), dir.path() / "b");
  for (const char* f : {"jobs.csv", "timeseries.csv", "summary.json", "meta.json"}) {
    INFO(f);
    CHECK(t::read_file(dir.path() / "a" / f) == t::read_file(dir.path() / "b" / f));
  }
}

TEST_CASE("target_load applies after the steps before it", "[scenario][transforms]") {
  t::TempDir dir;
  dir.write("trace.csv", light_trace());
  const auto sc = parse_scenario(doc_with(R"([{"filter": {"queues": ["a"]}}, {"target_load": 0.6}])"), "load.json", dir.path());
  const auto rows = run(sc).jobs();
  REQUIRE(rows.size() == 20);
  std::map<std::string, const JobSpec*> by_name;
  for (const auto& j : sc.jobs) by_name[j.name] = &j;
  Workload replayed;
  for (const auto& row : rows) {
    JobSpec j = *by_name.at(row.job);
    CHECK(j.queue == "a");
    j.submit = SimTime::from_seconds_f(row.submit_s);
    replayed.push_back(j);
  }
  CHECK(std::abs(traces::offered_gpu_load(replayed, 32'000) / 0.6 - 1.0) <= 1e-9);
}

TEST_CASE("A bad target_load is a scenario error naming the step's JSON path", "[scenario][transforms][errors]") {
  t::TempDir dir;
  dir.write("trace.csv", light_trace());
  for (const auto& bad : {nlohmann::json(0), nlohmann::json(-0.5), nlohmann::json("high"), nlohmann::json(nullptr)}) {
    INFO(bad.dump());
    try {
      (void)parse_scenario(doc_with(R"([{"shuffle": true}, {"target_load": )" + bad.dump() + "}]"), "load.json", dir.path());
      FAIL("accepted");
    } catch (const ScenarioError& e) {
      // A number outside (0.001 .. 1000) is out of range; anything else is a bad value.
      CHECK(e.code() == (bad.is_number() ? ErrorCode::kScenarioOutOfRange : ErrorCode::kScenarioBadValue));
      CHECK(e.where().file == "load.json");
      CHECK(e.where().field == "/workload/trace/transforms/1/target_load");
    }
  }
}

TEST_CASE("target_load on jobs without GPU work or arrival span fails before the run, naming the step", "[scenario][transforms][errors]") {
  t::TempDir dir;
  dir.write("cpu.csv", "id,submit_time,duration,cpu\na,0,60,1\nb,30,60,1\n");
  dir.write("burst.csv", "id,submit_time,duration,cpu,nvidia.com/gpu\na,10,60,1,1\nb,10,60,1,2\n");
  dir.write("endless.csv", "id,submit_time,duration,cpu,nvidia.com/gpu\na,0,,1,1\nb,10,60,1,2\n");
  const auto cpu = run_error(parse_scenario(doc_with(R"([{"target_load": 0.8}])", "cpu.csv"), "load.json", dir.path()));
  CHECK(cpu.code() == ErrorCode::kScenarioBadValue);
  CHECK(cpu.where().file == "load.json");
  CHECK(cpu.where().field == "/workload/trace/transforms/0/target_load");
  CHECK_THAT(cpu.what(), Catch::Contains("no job asks for GPU"));
  const auto burst = run_error(parse_scenario(doc_with(R"([{"shuffle": true}, {"target_load": 0.8}])", "burst.csv"), "load.json", dir.path()));
  CHECK(burst.where().field == "/workload/trace/transforms/1/target_load");
  CHECK_THAT(burst.what(), Catch::Contains("same time"));
  const auto endless = run_error(parse_scenario(doc_with(R"([{"target_load": 0.8}])", "endless.csv"), "load.json", dir.path()));
  CHECK_THAT(endless.what(), Catch::Contains("job \"a\" asks for GPU and never ends"));
}

TEST_CASE("target_load brings the Philly trace on its machines from 15% to a busy cluster", "[scenario][transforms][real]") {
  // Fast: two virtual clusters of the trace (9,357 jobs) on all 552 Philly machines; the whole
  // trace is examples/philly-load.json (docs/traces.md gives its figures).
  const auto jobs = t::real_trace("pollux-philly-derived/philly.csv");
  const auto machines = t::real_trace("philly/cluster_machine_list");
  if (jobs.empty() || machines.empty()) return;
  auto doc = [&](const std::string& transforms) {
    nlohmann::json d = {{"schema_version", 1},
                        {"name", "philly"},
                        {"seed", 1},
                        {"cluster", {{"import", {{{"path", machines.string()}, {"format", "philly-machines"}}}}}},
                        {"profile", "default"},
                        {"outputs", {{"sample_interval_s", 3600}}}};
    d["workload"]["trace"] = {{"path", jobs.string()}, {"format", "philly"}, {"transforms", nlohmann::json::parse(transforms)}};
    return parse_scenario(d, "philly.json", t::source_dir());
  };
  const std::string two_clusters = R"({"filter": {"queues": ["b436b2", "103959"]}})";
  const auto recorded = run(doc("[" + two_clusters + "]"));
  const auto loaded = run(doc("[" + two_clusters + R"(, {"target_load": 0.8}])"));
  const double before = recorded.summary().gpu_alloc_pct_arrivals, after = loaded.summary().gpu_alloc_pct_arrivals;
  WARN("Philly, two virtual clusters: GPU allocation while jobs arrive " << before << "% as recorded, " << after
                                                                         << "% with target_load 0.8");
  CHECK(before < 5.0);    // 3.0% when measured
  CHECK(after > 30.0);    // 40.5%
  CHECK(after > 5 * before);
  CHECK(loaded.summary().jobs == recorded.summary().jobs);
}
