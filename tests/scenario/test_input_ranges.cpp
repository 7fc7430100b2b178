// Issue 13, classes 1 and 2: every numeric field of a scenario (and of the synthetic generator)
// has a documented range checked where it is read; values beyond the clock, counts beyond memory
// and positive amounts that would round to nothing are `scenario_error.211` naming the file and
// the field, through parse_scenario and through the CLI (`gpusched validate` / `run`: exit 1).
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include <gpusched/scenario/scenario.hpp>
#include <gpusched/time.hpp>
#include <gpusched/traces/synthetic.hpp>

#include "support/support.hpp"

using namespace gpusched;
using namespace gpusched::scenario;
namespace t = gpusched::test;

namespace {

/// A small valid scenario: two GPU nodes, a CPU node, an autoscaled group, three jobs.
nlohmann::json base() {
  return nlohmann::json::parse(R"({
    "schema_version": 1,
    "name": "ranges",
    "seed": 1,
    "horizon_s": 100000,
    "cluster": {
      "nodes": [
        {"name": "gpu-a", "cpu": "32", "memory": "256Gi", "gpus": 4, "gpu_model": "A100-80GB"},
        {"name": "cpu-a", "cpu": "64", "memory": "256Gi"}
      ],
      "node_groups": [{"name": "g", "count": 2, "cpu": 8, "memory": "32Gi", "autoscale": {"min": 0}}]
    },
    "profile": "binpack",
    "workload": {"jobs": [
      {"id": "a", "submit_time": 0, "duration": 60, "requests": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": 1}},
      {"id": "b", "submit_time": 5, "duration": 60, "requests": {"cpu": "1", "memory": "1Gi"}}
    ]},
    "events": [{"time_s": 10, "node": "cpu-a", "type": "node_down"}],
    "outputs": {"sample_interval_s": 60}
  })");
}

nlohmann::json synthetic(const nlohmann::json& settings) {
  auto d = base();
  d["workload"] = {{"synthetic", settings}};
  return d;
}

ScenarioError rejected(const nlohmann::json& doc) {
  try {
    (void)parse_scenario(doc, "ranges.json", ".");
  } catch (const ScenarioError& e) {
    return e;
  }
  FAIL("accepted: " << doc.dump());
  throw;   // unreachable
}

void check_out_of_range(const nlohmann::json& doc, const std::string& field, const std::string& says) {
  INFO(field);
  const auto e = rejected(doc);
  INFO(e.what());
  CHECK(e.id() == "gpusched.scenario_error.211");
  CHECK(e.where().file == "ranges.json");
  CHECK(e.where().field == field);
  CHECK_THAT(e.what(), Catch::Contains("is out of range"));
  CHECK_THAT(e.what(), Catch::Contains(says));
}

}  // namespace

TEST_CASE("Times beyond the clock's input range are out of range, naming the field", "[scenario][ranges]") {
  auto d = base();
  d["horizon_s"] = 1e30;
  check_out_of_range(d, "/horizon_s", "1e+30 is out of range: must be <= 1e+10 (seconds)");
  d = base();
  d["devices"] = {{"mig_reconfigure_s", 1e30}};
  check_out_of_range(d, "/devices/mig_reconfigure_s", "must be <= 1e+10 (seconds)");
  d = base();
  d["autoscaler"] = {{"scan_interval_s", 1e30}};
  check_out_of_range(d, "/autoscaler/scan_interval_s", "must be <= 1e+10");
  d = base();
  d["events"][0]["time_s"] = 1e30;
  check_out_of_range(d, "/events/0/time_s", "must be <= 1e+10");
  d = base();
  d["outputs"]["sample_interval_s"] = 1e30;
  check_out_of_range(d, "/outputs/sample_interval_s", "must be <= 1e+10");
  d = base();
  d["preemption"] = {{"checkpoint_interval_s", 1e11}};
  check_out_of_range(d, "/preemption/checkpoint_interval_s", "must be <= 1e+10");
  d = base();
  d["cluster"]["node_groups"][0]["autoscale"]["provisioning_delay_s"] = 2e10;
  check_out_of_range(d, "/cluster/node_groups/0/autoscale/provisioning_delay_s", "must be <= 1e+10");
  d = base();
  d["cluster"]["node_groups"][0]["autoscale"]["scale_down_idle_s"] = -1;
  check_out_of_range(d, "/cluster/node_groups/0/autoscale/scale_down_idle_s", "must be >= 0");
  d = base();
  d["wait_for_pods_ready"] = {{"timeout_s", 1e12}};
  check_out_of_range(d, "/wait_for_pods_ready/timeout_s", "must be <= 1e+10");
  d = base();
  d["wait_for_pods_ready"] = {{"requeuing", {{"backoff_max_s", 1e30}}}};
  check_out_of_range(d, "/wait_for_pods_ready/requeuing/backoff_max_s", "must be <= 1e+10");
}

TEST_CASE("Positive times that would round to zero are out of range; the bounds themselves are accepted", "[scenario][ranges]") {
  auto d = base();
  d["outputs"]["sample_interval_s"] = 1e-30;
  check_out_of_range(d, "/outputs/sample_interval_s", "must be >= 1e-06 (seconds)");
  d = base();
  d["preemption"] = {{"checkpoint_interval_s", 1e-7}};
  check_out_of_range(d, "/preemption/checkpoint_interval_s", "must be >= 1e-06");
  d = base();
  d["wait_for_pods_ready"] = {{"timeout_s", 0}};
  check_out_of_range(d, "/wait_for_pods_ready/timeout_s", "must be >= 1e-06");
  d = base();
  d["autoscaler"] = {{"scan_interval_s", 1e-6}};   // scans: at least a millisecond apart
  check_out_of_range(d, "/autoscaler/scan_interval_s", "must be >= 0.001");

  d = base();
  d["horizon_s"] = kMaxInputSeconds;
  d["outputs"]["sample_interval_s"] = kMinPositiveSeconds;
  d["events"][0]["time_s"] = kMaxInputSeconds;
  d["devices"] = {{"mig_reconfigure_s", kMaxInputSeconds}};
  const auto sc = parse_scenario(d, "ranges.json", ".");
  CHECK(sc.engine.horizon == SimTime::from_seconds(10'000'000'000));
  CHECK(sc.outputs.sample_interval == SimTime::from_us(1));
  CHECK(sc.engine.node_events.at(0).time == SimTime::from_seconds(10'000'000'000));
}

TEST_CASE("Node sizes: 1e-30 CPUs, memory that rounds to 0 and sizes past the cluster limits are out of range", "[scenario][ranges]") {
  auto d = base();
  d["cluster"]["nodes"][1]["cpu"] = 1e-30;
  check_out_of_range(d, "/cluster/nodes/1/cpu", "out of range");
  d = base();
  d["cluster"]["nodes"][1]["cpu"] = 2e6;
  check_out_of_range(d, "/cluster/nodes/1/cpu", "2000000 is out of range: must be <= 1000000 (CPUs)");
  d = base();
  d["cluster"]["nodes"][1]["cpu"] = "2000000";
  check_out_of_range(d, "/cluster/nodes/1/cpu", "must be <= 1000000 CPUs");
  d = base();
  d["cluster"]["nodes"][1]["memory"] = 1e-30;
  check_out_of_range(d, "/cluster/nodes/1/memory", "out of range");
  d = base();
  d["cluster"]["nodes"][1]["memory"] = "2Pi";
  check_out_of_range(d, "/cluster/nodes/1/memory", "must be <= 1Pi");
  d = base();
  d["cluster"]["node_groups"][0]["count"] = 1e30;
  check_out_of_range(d, "/cluster/node_groups/0/count", "1e+30 is out of range: must be between 0 and 1000000");
  d = base();
  d["cluster"]["node_groups"][0]["count"] = 1'000'000;   // and two nodes: rejected before any node is made
  check_out_of_range(d, "/cluster/nodes/0", "1000002 nodes is out of range: a cluster has at most 1000000 nodes");
  d["cluster"]["node_groups"][1] = d["cluster"]["node_groups"][0];
  d["cluster"]["node_groups"][1]["name"] = "h";
  d["cluster"]["node_groups"][0]["count"] = 600'000;
  check_out_of_range(d, "/cluster/node_groups/1/count", "1600000 nodes is out of range");
  d = base();
  d["cluster"]["node_groups"][0]["count"] = 4000;
  d["cluster"]["node_groups"][0]["gpus"] = 4096;
  d["cluster"]["node_groups"][0]["gpu_model"] = "T4";
  check_out_of_range(d, "/cluster/node_groups/0/count", "a cluster has at most 10000000 GPUs");
  d = base();
  d["cluster"]["nodes"][0]["gpus"] = 4097;
  check_out_of_range(d, "/cluster/nodes/0/gpus", "must be between 0 and 4096");
  d = base();
  d["cluster"]["nodes"][1]["extended"] = {{"rdma/hca", 1e12}};
  check_out_of_range(d, "/cluster/nodes/1/extended/rdma/hca", "out of range");
}

TEST_CASE("Device factors, priorities, seeds and transforms have ranges", "[scenario][ranges]") {
  auto d = base();
  d["devices"] = {{"slowdown", {{"pcie", 1e30}}}};
  check_out_of_range(d, "/devices/slowdown/pcie", "1e+30 is out of range: must be <= 10");
  d = base();
  d["devices"] = {{"time_slicing_overhead", 2}};
  check_out_of_range(d, "/devices/time_slicing_overhead", "must be <= 1");
  d = base();
  d["priority_classes"] = {{"hi", 3'000'000'000LL}};
  check_out_of_range(d, "/priority_classes/hi", "must be between -2000000000 and 1000000000");
  d = base();
  d["seed"] = -5;
  check_out_of_range(d, "/seed", "must be between 0 and 18446744073709551615");
  d = base();
  d["seed"] = 1e30;
  check_out_of_range(d, "/seed", "must be between 0 and 18446744073709551615");
  d = base();
  d["seed"] = nlohmann::json::parse("18446744073709551615");
  CHECK(parse_scenario(d, "ranges.json", ".").seed == 18446744073709551615ULL);
  d["seed"] = 2.5;
  CHECK(rejected(d).code() == ErrorCode::kScenarioBadValue);   // not a whole number: a bad value
  d["seed"] = "7";
  CHECK(rejected(d).code() == ErrorCode::kScenarioBadValue);   // a wrong type stays 203
}

TEST_CASE("Synthetic settings: jobs 1e30, gang_fraction 2.0 and durations past the clock are out of range", "[scenario][ranges][synthetic]") {
  check_out_of_range(synthetic({{"jobs", 1e30}, {"load", 0.5}}), "/workload/synthetic/jobs",
                     "1e+30 is out of range: must be <= 10000000 (jobs)");
  check_out_of_range(synthetic({{"jobs", 10}, {"gang_fraction", 2.0}}), "/workload/synthetic/gang_fraction", "must be <= 1");
  check_out_of_range(synthetic({{"jobs", 10}, {"duration_max_s", 1e30}}), "/workload/synthetic/duration_max_s", "must be <= 1e+10");
  check_out_of_range(synthetic({{"jobs", 10}, {"duration_median_s", 1e-30}}), "/workload/synthetic/duration_median_s", "must be >= 1e-06");
  check_out_of_range(synthetic({{"jobs", 10}, {"duration_sigma", 1e300}}), "/workload/synthetic/duration_sigma", "must be <= 10");
  check_out_of_range(synthetic({{"jobs", 10}, {"load", 1e300}}), "/workload/synthetic/load", "must be <= 1000");
  check_out_of_range(synthetic({{"jobs", 10}, {"mix", {{"gpu1", 1e300}}}}), "/workload/synthetic/mix/gpu1", "must be <= 1000000");
  check_out_of_range(synthetic({{"jobs", 10}, {"duration_min_s", 100}, {"duration_max_s", 10}}), "/workload/synthetic/duration_max_s",
                     "must be >= duration_min_s");
  CHECK(rejected(synthetic({{"jobs", 10.5}})).code() == ErrorCode::kScenarioBadValue);
  CHECK(rejected(synthetic({{"jobs", "many"}})).code() == ErrorCode::kScenarioBadValue);
  // The bounds are accepted (the reader only; generating 10^7 jobs is for a big machine).
  const auto c = traces::SyntheticConfig::from_json({{"jobs", 10'000'000}, {"gang_fraction", 1.0}, {"duration_max_s", 1e10}},
                                                    "s.json", "/workload/synthetic");
  CHECK(c.jobs == 10'000'000);
  CHECK(c.gang_fraction == 1.0);
}

TEST_CASE("A synthetic arrival rate so low the arrivals would pass the clock's range is out of range", "[scenario][ranges][synthetic]") {
  const auto cluster = t::cluster({t::node("a", 32, 256, 4)});
  auto cfg = traces::SyntheticConfig::from_json({{"jobs", 3}, {"load", 0}, {"arrival_rate_per_hour", 1e-300}}, "s.json",
                                                "/workload/synthetic");
  try {
    (void)traces::generate(cfg, cluster, RngStreams(1));
    FAIL("accepted");
  } catch (const ScenarioError& e) {
    CHECK(e.id() == "gpusched.scenario_error.211");
    CHECK(e.where().file == "s.json");
    CHECK(e.where().field == "/workload/synthetic/arrival_rate_per_hour");
  }
  cfg = traces::SyntheticConfig::from_json({{"jobs", 3}, {"load", 1e-300}}, "s.json", "/workload/synthetic");
  try {
    (void)traces::generate(cfg, cluster, RngStreams(1));
    FAIL("accepted");
  } catch (const ScenarioError& e) {
    CHECK(e.id() == "gpusched.scenario_error.211");
    CHECK(e.where().field == "/workload/synthetic/load");
  }
}

TEST_CASE("Transform factors have ranges", "[scenario][ranges]") {
  auto d = base();
  d["workload"] = {{"trace", {{"path", "t.csv"}, {"transforms", {{{"scale_time", 1e30}}}}}}};
  check_out_of_range(d, "/workload/trace/transforms/0/scale_time", "must be <= 100");
  d["workload"]["trace"]["transforms"] = {{{"target_load", 1e-30}}};
  check_out_of_range(d, "/workload/trace/transforms/0/target_load", "must be >= 0.001");
  d["workload"]["trace"]["transforms"] = {{{"resample_gpu_pct", 0}}};
  check_out_of_range(d, "/workload/trace/transforms/0/resample_gpu_pct", "must be > 0");
}

TEST_CASE("The CLI rejects out-of-range scenarios with exit 1, the id, the file and the field", "[scenario][ranges][cli]") {
  t::TempDir dir;
  struct Case {
    std::string name, field;
    nlohmann::json doc;
  };
  std::vector<Case> cases;
  auto d = base();
  d["horizon_s"] = 1e30;
  cases.push_back({"horizon.json", "/horizon_s", d});
  d = base();
  d["devices"] = {{"mig_reconfigure_s", 1e30}};
  cases.push_back({"mig.json", "/devices/mig_reconfigure_s", d});
  d = base();
  d["autoscaler"] = {{"scan_interval_s", 1e30}};
  cases.push_back({"scan.json", "/autoscaler/scan_interval_s", d});
  d = base();
  d["events"][0]["time_s"] = 1e30;
  cases.push_back({"event.json", "/events/0/time_s", d});
  d = base();
  d["outputs"]["sample_interval_s"] = 1e30;
  cases.push_back({"sample.json", "/outputs/sample_interval_s", d});
  d = base();
  d["cluster"]["nodes"][1]["cpu"] = 1e-30;
  cases.push_back({"cpu.json", "/cluster/nodes/1/cpu", d});
  cases.push_back({"jobs.json", "/workload/synthetic/jobs", synthetic({{"jobs", 1e30}, {"load", 0.5}})});
  cases.push_back({"gang.json", "/workload/synthetic/gang_fraction", synthetic({{"jobs", 10}, {"gang_fraction", 2.0}})});
  for (const auto& c : cases) {
    INFO(c.name);
    const auto path = dir.write(c.name, c.doc.dump());
    for (const std::string cmd : {"validate", "run"}) {
      std::vector<std::string> args{cmd, path.string()};
      if (cmd == "run") args.insert(args.end(), {"--out", (dir.path() / "out").string(), "--quiet"});
      const auto r = t::cli(args);
      CHECK(r.rc == 1);
      CHECK_THAT(r.err, Catch::Contains("[gpusched.scenario_error.211]"));
      CHECK_THAT(r.err, Catch::Contains(c.name));
      CHECK_THAT(r.err, Catch::Contains("field '" + c.field + "'"));
      CHECK_THAT(r.err, Catch::Contains("is out of range"));
      CHECK_FALSE(std::filesystem::exists(dir.path() / "out" / "summary.json"));
    }
  }
}

// Two limits no reader can check, because they depend on the run: a job slowed down by its
// sharers past the clock (1024 MPS clients x 1e10 s once ended at a negative time, "completed"),
// and a sample interval far too small for the run's length (1e-6 s over 1e6 s once grew memory
// until bad_alloc aborted the process). Both stop the run with 211, the file and the field.
TEST_CASE("Limits found during the run: a slowed-down job past the clock and too many samples", "[scenario][ranges][cli]") {
  t::TempDir dir;
  // 300 jobs time-slice one GPU, context switches halving each: every job runs at 1/600 of full
  // speed, so 1e10 s of work would end at 6e12 s, past the clock (4.6e12 s). (MPS clients no longer
  // reach it: the device plugin allows at most 48 per GPU.)
  auto sliced = nlohmann::json::parse(R"({"schema_version": 1, "name": "sliced", "seed": 1,
    "devices": {"time_slicing_overhead": 1.0},
    "cluster": {"nodes": [{"name": "a", "cpu": "512", "memory": "1Ti", "gpus": 1, "gpu_model": "A100-80GB",
                           "gpu_partition": {"mode": "time-slicing", "replicas": 300}}]},
    "workload": {"jobs": []},
    "outputs": {"sample_interval_s": 1e10}})");
  for (int i = 0; i < 300; ++i) {
    sliced["workload"]["jobs"].push_back({{"id", "j" + std::to_string(i)}, {"submit_time", 0}, {"duration", 1e10},
                                          {"requests", {{"cpu", "1"}, {"memory", "1Gi"}, {"nvidia.com/gpu", 1}}}});
  }
  auto samples = base();
  samples["outputs"]["sample_interval_s"] = 1e-6;
  samples["workload"]["jobs"][0]["duration"] = 1e6;
  struct Case {
    std::string name, field, words;
    nlohmann::json doc;
  };
  for (const auto& c : {Case{"sliced.json", "duration", "clock's limit", sliced},
                        Case{"samples.json", "/outputs/sample_interval_s", "samples", samples}}) {
    INFO(c.name);
    const auto path = dir.write(c.name, c.doc.dump());
    const auto r = t::cli({"run", path.string(), "--out", (dir.path() / "out").string(), "--quiet"});
    CHECK(r.rc == 1);
    CHECK_THAT(r.err, Catch::Contains("[gpusched.scenario_error.211] "));
    CHECK_THAT(r.err, Catch::Contains(c.name + ": field"));
    CHECK_THAT(r.err, Catch::Contains("field '" + c.field + "'"));
    CHECK_THAT(r.err, Catch::Contains(c.words));
    CHECK_FALSE(std::filesystem::exists(dir.path() / "out" / "summary.json"));
  }
  // At full speed the same 1e10 s job runs and ends where it should.
  auto whole = sliced;
  whole["cluster"]["nodes"][0].erase("gpu_partition");
  whole["workload"]["jobs"] = nlohmann::json::array({whole["workload"]["jobs"][0]});   // one job alone on a whole GPU
  const auto path = dir.write("whole.json", whole.dump());
  const auto r = t::cli({"run", path.string(), "--out", (dir.path() / "whole").string(), "--quiet"});
  CHECK(r.rc == 0);
  CHECK_THAT(t::read_file(dir.path() / "whole" / "jobs.csv"), Catch::Contains("10000000000"));
}
