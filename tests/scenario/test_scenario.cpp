// Scenario files: the examples load; bad input is reported with the file, line or JSON path.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <gpusched/scenario/scenario.hpp>
#include <gpusched/traces/native.hpp>
#include <gpusched/version.hpp>

#include "support/support.hpp"

using namespace gpusched;
using namespace gpusched::scenario;
namespace t = gpusched::test;

namespace {

/// A small valid scenario document; tests break one part of it.
nlohmann::json valid() {
  return nlohmann::json::parse(R"({
    "schema_version": 1,
    "name": "t",
    "cluster": {"nodes": [
      {"name": "g0", "cpu": "16", "memory": "64Gi", "gpus": 2, "gpu_model": "T4"},
      {"name": "c0", "cpu": 8, "memory": "32Gi"}]},
    "profile": "first-fit",
    "workload": {"jobs": [
      {"id": "a", "submit_time": 0, "duration": 10, "requests": {"cpu": "1", "nvidia.com/gpu": 1}}]}
  })");
}

template <class E>
E parse_error(const nlohmann::json& doc) {
  auto e = t::thrown<E>([&] { (void)parse_scenario(doc, "bad.json", t::source_dir()); });
  CHECK(e.where().file.rfind("bad.json", 0) == 0);
  return e;
}

}  // namespace

TEST_CASE("Every example scenario loads and validates", "[scenario]") {
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(t::source_dir() / "examples")) {
    if (entry.path().extension() == ".json") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  CHECK(files.size() >= 4);
  for (const auto& file : files) {
    INFO(file.string());
    {
      // Examples on the real traces (../shared/traces) load only where the traces are.
      std::ifstream in(file);
      const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      if (text.find("shared/traces/") != std::string::npos &&
          !std::filesystem::exists(t::source_dir().parent_path() / "shared" / "traces")) {
        WARN("skipping " << file.filename().string() << ": it reads ../shared/traces, which is absent");
        continue;
      }
    }
    const auto sc = load_scenario(file);
    CHECK_FALSE(sc.nodes.empty());
    CHECK(sc.source == file.string());
    const ClusterState cluster(sc.catalog, sc.resources, sc.nodes);
    if (!sc.synthetic) CHECK_NOTHROW(traces::check_placeable(sc.jobs, cluster, sc.source));
  }
}

TEST_CASE("The small example is read as written", "[scenario]") {
  const auto sc = load_scenario(t::example("small.json"));
  CHECK(sc.name == "small");
  CHECK(sc.seed == 7);
  REQUIRE(sc.nodes.size() == 4);
  CHECK(sc.nodes[2].name == "gpu-c");
  CHECK(sc.nodes[2].gpus.size() == 2);
  CHECK(sc.nodes[0].labels.at("nvidia.com/gpu.product") == "A100-80GB");
  CHECK(sc.profile.name == "binpack");
  CHECK(sc.jobs.size() == 10);
  CHECK(sc.engine.horizon == SimTime::from_seconds(10000));
  REQUIRE(sc.engine.node_events.size() == 2);
  CHECK(sc.engine.node_events[0].node == NodeId{2});
  CHECK_FALSE(sc.engine.node_events[0].up);
  CHECK(sc.engine.node_events[1].time == SimTime::from_seconds(2000));
  CHECK(sc.outputs.event_log);
  CHECK(sc.outputs.sample_interval == SimTime::from_seconds(600));
  CHECK(sc.engine.retry);
  CHECK_FALSE(sc.engine.fill_mode);
}

TEST_CASE("Node groups expand into numbered nodes and traces resolve next to the scenario", "[scenario]") {
  const auto demo = load_scenario(t::example("demo.json"));
  CHECK(demo.nodes.size() == 1000);
  CHECK(demo.nodes.front().name == "a100-0000");
  CHECK(demo.nodes[399].name == "a100-0399");
  CHECK(demo.nodes[400].name == "v100-0000");
  REQUIRE(demo.synthetic.has_value());
  CHECK(demo.synthetic->jobs == 20000);
  const auto fill = load_scenario(t::example("fill.json"));
  CHECK(fill.engine.fill_mode);
  CHECK_FALSE(fill.engine.retry);
  const auto replay = load_scenario(t::example("trace-replay.json"));
  REQUIRE(replay.trace.has_value());
  CHECK(*replay.trace == t::example("traces/mixed.csv"));
  CHECK(replay.jobs.size() == 7);
  CHECK(replay.profile.name == "spread-custom");
  CHECK(replay.profile.score.size() == 3);   // default's least-allocated and balanced-allocation, then gpu-binpack
}

TEST_CASE("The embedded demo is examples/demo.json", "[scenario]") {
  CHECK(std::string(demo_scenario_text()) == t::read_file(t::example("demo.json")));
  CHECK(demo_scenario().nodes.size() == 1000);
}

TEST_CASE("A JSON syntax error names the line", "[scenario][errors]") {
  const std::string text = "{\n  \"schema_version\": 1,\n  \"name\": \"x\"\n  \"cluster\": {}\n}\n";
  try {
    (void)parse_scenario(std::string_view(text), "bad.json", ".");
    FAIL("no exception");
  } catch (const ScenarioError& e) {
    CHECK(e.code() == ErrorCode::kScenarioParse);
    CHECK(e.where().file == "bad.json");
    CHECK(e.where().line == 4);
  }
  const std::string trailing = "{\"schema_version\": 1,\n\"cluster\": {\n\"nodes\": [],\n}\n}";
  try {
    (void)parse_scenario(std::string_view(trailing), "bad.json", ".");
    FAIL("no exception");
  } catch (const ScenarioError& e) {
    CHECK(e.where().line == 4);
  }
  t::TempDir dir;
  try {
    (void)load_scenario(dir.write("broken.json", "\n\n[1, 2,,]"));
    FAIL("no exception");
  } catch (const ScenarioError& e) {
    CHECK(e.where().line == 3);
    CHECK(e.where().file == (dir.path() / "broken.json").string());
  }
}

TEST_CASE("An unknown field is reported with its JSON path", "[scenario][errors]") {
  auto doc = valid();
  doc["colour"] = "blue";
  CHECK(parse_error<ScenarioError>(doc).where().field == "/colour");
  doc = valid();
  doc["cluster"]["nodes"][1]["gpu"] = 1;
  auto e = parse_error<ScenarioError>(doc);
  CHECK(e.code() == ErrorCode::kScenarioUnknownField);
  CHECK(e.where().field == "/cluster/nodes/1/gpu");
  CHECK_THAT(e.detail(), Catch::Contains("gpus"));
  doc = valid();
  doc["outputs"] = {{"event_logs", true}};
  CHECK(parse_error<ScenarioError>(doc).where().field == "/outputs/event_logs");
  doc = valid();
  doc["workload"] = {{"synthetic", {{"jobs", 5}, {"lode", 1}}}};
  CHECK(parse_error<ScenarioError>(doc).where().field == "/workload/synthetic/lode");
}

TEST_CASE("Missing and mistyped fields are reported with their JSON path", "[scenario][errors]") {
  auto doc = valid();
  doc.erase("schema_version");
  CHECK(parse_error<ScenarioError>(doc).code() == ErrorCode::kScenarioMissingField);
  doc = valid();
  doc["schema_version"] = 2;
  CHECK(parse_error<ScenarioError>(doc).code() == ErrorCode::kScenarioSchemaVersion);
  doc = valid();
  doc["cluster"]["nodes"][0].erase("memory");
  auto e = parse_error<ScenarioError>(doc);
  CHECK(e.code() == ErrorCode::kScenarioMissingField);
  CHECK(e.where().field == "/cluster/nodes/0/memory");
  doc = valid();
  doc["seed"] = "seven";
  CHECK(parse_error<ScenarioError>(doc).where().field == "/seed");
  doc = valid();
  doc["cluster"]["nodes"][0]["cpu"] = "lots";
  CHECK(parse_error<QuantityError>(doc).where().field == "/cluster/nodes/0/cpu");
  doc = valid();
  doc.erase("workload");
  CHECK(parse_error<ScenarioError>(doc).where().field == "/workload");
}

TEST_CASE("An unknown GPU model in the cluster is a catalog error with its path", "[scenario][errors]") {
  auto doc = valid();
  doc["cluster"]["nodes"][0]["gpu_model"] = "A1000";
  const auto e = parse_error<CatalogError>(doc);
  CHECK(e.code() == ErrorCode::kCatalogUnknownModel);
  CHECK(e.where().field == "/cluster/nodes/0/gpu_model");
  CHECK_THAT(e.detail(), Catch::Contains("T4"));
}

TEST_CASE("A scenario can add its own GPU models", "[scenario]") {
  auto doc = valid();
  doc["cluster"]["gpu_models"] = nlohmann::json::parse(R"([{"name": "MI300X", "memory_mib": 196608}])");
  doc["cluster"]["nodes"][0]["gpu_model"] = "mi300x";
  const auto sc = parse_scenario(doc, "ok.json", ".");
  CHECK(sc.catalog[sc.nodes[0].gpus[0].model].name == "MI300X");
}

TEST_CASE("An unknown profile lists the built-in ones", "[scenario][errors]") {
  auto doc = valid();
  doc["profile"] = "fastest";
  const auto e = parse_error<ProfileError>(doc);
  CHECK(e.code() == ErrorCode::kProfileUnknownProfile);
  CHECK(e.where().field == "/profile");
  CHECK_THAT(e.detail(), Catch::Contains("binpack"));
  doc["profile"] = {{"extends", "binpack"}, {"scorez", {}}};
  CHECK(parse_error<ProfileError>(doc).where().field == "/profile/scorez");
}

TEST_CASE("A profile with an unknown plugin is rejected when the scenario loads", "[scenario][errors]") {
  auto doc = valid();
  doc["profile"] = {{"extends", "default"}, {"score", {"first-fit", "least-alocated"}}};
  const auto e = parse_error<ProfileError>(doc);
  CHECK(e.code() == ErrorCode::kProfileUnknownPlugin);
  CHECK(e.where().file == "bad.json");
  CHECK(e.where().field == "/profile/score/1");
  CHECK_THAT(e.detail(), Catch::Contains("least-allocated"));
  doc["profile"] = {{"score", {{{"name", "best-fit"}, {"args", {{"cpu_weight", -1}}}}}}};
  CHECK(parse_error<ProfileError>(doc).code() == ErrorCode::kProfileBadArgs);
}

TEST_CASE("A node event naming an unknown node is rejected", "[scenario][errors]") {
  auto doc = valid();
  doc["events"] = nlohmann::json::parse(R"([{"time_s": 5, "node": "g0", "type": "node_down"},
                                            {"time_s": 9, "node": "g9", "type": "node_up"}])");
  const auto e = parse_error<ScenarioError>(doc);
  CHECK(e.code() == ErrorCode::kScenarioUnknownNode);
  CHECK(e.where().field == "/events/1/node");
  CHECK_THAT(e.detail(), Catch::Contains("\"g9\""));
  doc["events"] = nlohmann::json::parse(R"([{"time_s": 5, "node": "g0", "type": "reboot"}])");
  CHECK(parse_error<ScenarioError>(doc).where().field == "/events/0/type");
}

TEST_CASE("Two nodes with the same name are rejected", "[scenario][errors]") {
  auto doc = valid();
  doc["cluster"]["nodes"][1]["name"] = "g0";
  auto e = parse_error<ScenarioError>(doc);
  CHECK(e.code() == ErrorCode::kScenarioDuplicateNode);
  CHECK_THAT(e.detail(), Catch::Contains("\"g0\""));
  // A group member colliding with a named node.
  doc = valid();
  doc["cluster"]["node_groups"] = nlohmann::json::parse(R"([{"name": "g", "count": 2, "cpu": 4, "memory": "8Gi"}])");
  doc["cluster"]["nodes"][1]["name"] = "g-0001";
  CHECK(parse_error<ScenarioError>(doc).code() == ErrorCode::kScenarioDuplicateNode);
}

TEST_CASE("Inline jobs with errors name the job and the field", "[scenario][errors]") {
  auto doc = valid();
  doc["workload"]["jobs"].push_back({{"id", "b"}, {"submit_time", 1}, {"requests", {{"cpu", "-1"}}}});
  const auto e = parse_error<QuantityError>(doc);
  CHECK(e.where().line == 2);
  CHECK(e.where().field == "requests.cpu");
}

TEST_CASE("A scenario whose job can never run is rejected before the run", "[scenario][errors]") {
  auto doc = valid();
  doc["workload"]["jobs"].push_back({{"id", "huge"}, {"submit_time", 1}, {"requests", {{"nvidia.com/gpu", 4}}}});
  const auto sc = parse_scenario(doc, "ok.json", ".");
  try {
    (void)run(sc);
    FAIL("no exception");
  } catch (const TraceError& e) {
    CHECK(e.code() == ErrorCode::kTraceUnplaceable);
    CHECK(e.where().line == 2);
    CHECK_THAT(e.detail(), Catch::Contains("\"huge\""));
  }
}

TEST_CASE("A run of the small example matches its hand-checked summary", "[scenario]") {
  const auto r = run(load_scenario(t::example("small.json")));
  const auto& s = r.summary();
  CHECK(s.jobs == 10);
  CHECK(s.completed == 9);
  CHECK(s.running == 1);   // the notebook never ends
  CHECK(s.requeued == 1);  // train-2gpu, when gpu-c went down
  CHECK(s.end == SimTime::from_seconds(4500));
  CHECK(s.nodes == 4);
  CHECK(s.gpus == 10);
  const auto jobs = r.jobs();
  REQUIRE(jobs.size() == 10);
  CHECK(jobs[1].job == "train-2gpu");
  CHECK(jobs[1].attempts == 2);
  CHECK(jobs[1].placement == "gpu-b[1,2]");
  CHECK(jobs[8].state == "running");
  CHECK(r.summary_json()["seed"] == 7);
  CHECK(r.summary_json()["profile"] == "binpack");
}

TEST_CASE("write_outputs writes every table and the report", "[scenario]") {
  t::TempDir dir;
  const auto r = run(load_scenario(t::example("small.json")));
  const auto files = write_outputs(r, dir.path() / "out");
  CHECK(files.size() == 7);
  for (const char* f : {"summary.json", "jobs.csv", "timeseries.csv", "events.csv", "report.md", "fragmentation.csv", "meta.json"}) {
    INFO(f);
    CHECK(std::filesystem::exists(dir.path() / "out" / f));
  }
  const auto summary = nlohmann::json::parse(t::read_file(dir.path() / "out" / "summary.json"));
  CHECK(summary["schema_version"] == 1);
  CHECK(summary["jobs"]["total"] == 10);
  const auto jobs_csv = t::read_file(dir.path() / "out" / "jobs.csv");
  CHECK(jobs_csv.rfind("job,queue,priority,", 0) == 0);
  CHECK(std::count(jobs_csv.begin(), jobs_csv.end(), '\n') == 11);   // header + 10 jobs
  CHECK_THAT(format_summary(r), Catch::Contains("completed 9"));
}

TEST_CASE("Every CSV of a run starts with its header row and meta.json says what produced it", "[scenario]") {
  t::TempDir dir;
  const auto r = run(load_scenario(t::example("small.json")));
  const auto files = write_outputs(r, dir.path() / "out");
  const std::pair<const char*, const char*> headers[] = {
      {"jobs.csv", "job,queue,priority,tasks,"},
      {"timeseries.csv", "time_s,gpu_alloc_pct,"},
      {"events.csv", "time_s,event,job,node,detail\n"},
      {"fragmentation.csv", "t_s,decisions,arrived_pct,"}};
  for (const auto& [file, header] : headers) {
    INFO(file);
    const auto text = t::read_file(dir.path() / "out" / file);
    CHECK(text.rfind(header, 0) == 0);
    CHECK(text.find('#') == std::string::npos);
  }
  REQUIRE_FALSE(files.empty());
  CHECK(files.back().filename() == "meta.json");
  const auto meta = nlohmann::json::parse(t::read_file(dir.path() / "out" / "meta.json"));
  CHECK(meta["schema_version"] == 1);
  CHECK(meta["kind"] == "gpusched.meta");
  CHECK(meta["gpusched_version"] == kVersion);
  CHECK(meta["scenario"]["name"] == "small");
  CHECK(meta["scenario"]["source"] == r.stamp().source);
  CHECK(meta["scenario"]["digest"] == r.stamp().digest);
  CHECK(meta["scenario"]["digest"].get<std::string>().size() == 16);
  CHECK(meta["seed"] == 7);
  CHECK(meta["profile"] == "binpack");
  std::vector<std::string> names;
  for (const auto& f : files) names.push_back(f.filename().string());
  CHECK(meta["files"].get<std::vector<std::string>>() == names);
  const auto summary = nlohmann::json::parse(t::read_file(dir.path() / "out" / "summary.json"));
  CHECK(summary["scenario"] == meta["scenario"]);
  CHECK(summary["seed"] == meta["seed"]);
  CHECK(summary["gpusched_version"] == meta["gpusched_version"]);
}

TEST_CASE("Writing outputs where a file blocks the folder is an OutputError", "[scenario][errors]") {
  t::TempDir dir;
  const auto blocker = dir.write("file", "x");
  const auto r = run(load_scenario(t::example("small.json")));
  CHECK_THROWS_AS(write_outputs(r, blocker / "out"), OutputError);
}
