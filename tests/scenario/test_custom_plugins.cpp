// Plugins of your own reach every entry point: a Registry passed to parse_scenario / load_scenario
// / run / cli_main; the batch hooks (one call for all candidate nodes) that plugins written in
// other languages use decide exactly as the per-node hooks do.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <gpusched/policies/framework/registry.hpp>
#include <gpusched/policies/framework/scheduler.hpp>
#include <gpusched/scenario/scenario.hpp>

#include "support/support.hpp"

using namespace gpusched;
using namespace gpusched::policies;
namespace t = gpusched::test;

namespace {

/// Prefers the highest node index (per node).
class LastNodeScore final : public ScorePlugin {
 public:
  [[nodiscard]] std::string_view name() const override { return "last-node"; }
  double score(const ClusterState&, const TaskContext&, NodeId node) override { return node.value; }
  void normalize(std::span<double> s) const override { normalize_min_max(s); }
};

/// The same preference, answered for all candidates in one call (as a Python plugin does).
class LastNodeBatchScore final : public ScorePlugin {
 public:
  [[nodiscard]] std::string_view name() const override { return "last-node-batch"; }
  double score(const ClusterState&, const TaskContext&, NodeId) override {
    FAIL("the runner must call score_all, not score");
    return 0;
  }
  void score_all(const ClusterState&, const TaskContext&, std::span<const NodeId> nodes, std::span<double> out) override {
    ++calls;
    for (std::size_t i = 0; i < nodes.size(); ++i) out[i] = nodes[i].value;
  }
  void normalize(std::span<double> s) const override { normalize_min_max(s); }
  int calls = 0;
};

/// Rejects odd node indices, all candidates at once.
class EvenNodesBatchFilter final : public BatchFilterPlugin {
 public:
  [[nodiscard]] std::string_view name() const override { return "even-nodes"; }
  Status filter_all(const ClusterState&, const TaskContext&, std::span<const NodeId> nodes,
                    std::span<std::uint8_t> keep) override {
    ++calls;
    seen = nodes.size();
    for (std::size_t i = 0; i < nodes.size(); ++i) keep[i] = nodes[i].value % 2 == 0 ? 1 : 0;
    return Status::unschedulable("even-nodes", "odd node");
  }
  int calls = 0;
  std::size_t seen = 0;
};

Registry registry_with_custom() {
  Registry reg = Registry::with_builtins();
  reg.add({"last-node", "prefers the highest node index", {"score"}, {},
           [](const PluginContext&) { return std::make_unique<LastNodeScore>(); }});
  reg.add({"last-node-batch", "prefers the highest node index, one call per decision", {"score"}, {},
           [](const PluginContext&) { return std::make_unique<LastNodeBatchScore>(); }});
  reg.add({"even-nodes", "only even node indices", {"filter"}, {},
           [](const PluginContext&) { return std::make_unique<EvenNodesBatchFilter>(); }});
  return reg;
}

std::string doc_with_profile(const std::string& profile_json, int jobs = 6) {
  std::string list;
  for (int i = 0; i < jobs; ++i) {
    list += std::string(i ? "," : "") + R"({"id": "j)" + std::to_string(i) +
            R"(", "submit_time": 0, "duration": 100, "requests": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": 1}})";
  }
  return t::scenario_doc("custom", "node_groups",
                         R"({"name": "n", "count": 5, "cpu": 16, "memory": "64Gi", "gpus": 4, "gpu_model": "T4"})", list,
                         R"("profile": )" + profile_json + ",");
}

std::vector<std::string> placements(const scenario::RunResult& r) {
  std::vector<std::string> out;
  for (const auto& row : r.jobs()) out.push_back(row.placement);
  return out;
}

}  // namespace

TEST_CASE("A scenario names a plugin registered by the caller, through parse_scenario and run", "[scenario][registry]") {
  const auto reg = registry_with_custom();
  const std::string profile = R"({"name": "mine", "filter": ["node-resources-fit"], "score": ["last-node"]})";
  // A string literal picks the text overload (it used to be ambiguous with the JSON one).
  CHECK_THROWS_AS(scenario::parse_scenario("{", "literal.json", "."), ScenarioError);
  const auto sc = scenario::parse_scenario(doc_with_profile(profile), "custom.json", ".", reg);
  const auto r = scenario::run(sc, std::nullopt, {}, reg);
  REQUIRE(r.summary().completed == 6);
  // Highest index first: node 4 takes the first four jobs' GPUs, then node 3.
  CHECK(placements(r) == std::vector<std::string>{"n-0004[0]", "n-0004[1]", "n-0004[2]", "n-0004[3]", "n-0003[0]", "n-0003[1]"});
}

TEST_CASE("Without the caller's registry a custom plugin is an unknown-plugin error naming the JSON path", "[scenario][registry]") {
  const std::string profile = R"({"name": "mine", "filter": ["node-resources-fit"], "score": ["last-node"]})";
  try {
    (void)scenario::parse_scenario(doc_with_profile(profile), "custom.json", ".");
    FAIL("expected a ProfileError");
  } catch (const ProfileError& e) {
    CHECK(e.code() == ErrorCode::kProfileUnknownPlugin);
    CHECK(e.where().file == "custom.json");
    CHECK(e.where().field == "/profile/score/0");
  }
}

TEST_CASE("load_scenario and the command line take the caller's registry", "[scenario][registry][cli]") {
  const auto reg = registry_with_custom();
  const auto dir = std::filesystem::temp_directory_path() / "gpusched-test-custom-registry";
  std::filesystem::create_directories(dir);
  const auto file = dir / "custom.json";
  {
    std::ofstream out(file);
    out << doc_with_profile(R"({"name": "mine", "filter": ["node-resources-fit", "even-nodes"], "score": ["last-node-batch"]})");
  }
  const auto sc = scenario::load_scenario(file, reg);
  CHECK(sc.profile.name == "mine");

  const std::string out_dir = (dir / "out").string();
  const std::string file_s = file.string();
  std::vector<const char*> argv = {"gpusched", "run", file_s.c_str(), "--out", out_dir.c_str(), "--quiet"};
  CHECK(scenario::cli_main(static_cast<int>(argv.size()), argv.data(), reg) == 0);
  std::ifstream jobs(dir / "out" / "jobs.csv");
  std::stringstream text;
  text << jobs.rdbuf();
  CHECK(text.str().find("n-0004[0]") != std::string::npos);
  CHECK(text.str().find("n-0003[") == std::string::npos);   // odd nodes are filtered out

  // Without it, the same command is a bad-input error (exit 1), not a crash.
  std::vector<const char*> plain = {"gpusched", "run", file_s.c_str(), "--out", out_dir.c_str(), "--quiet"};
  CHECK(scenario::cli_main(static_cast<int>(plain.size()), plain.data()) == 1);

  // `gpusched policies` lists the caller's plugins.
  std::stringstream captured;
  auto* old = std::cout.rdbuf(captured.rdbuf());
  std::vector<const char*> list = {"gpusched", "policies"};
  const int rc = scenario::cli_main(static_cast<int>(list.size()), list.data(), reg);
  std::cout.rdbuf(old);
  CHECK(rc == 0);
  CHECK(captured.str().find("last-node-batch  [score]") != std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST_CASE("A batch score decides exactly as the same score answered per node", "[policies][registry]") {
  const auto reg = registry_with_custom();
  auto run_with = [&](const std::string& score) {
    const auto sc = scenario::parse_scenario(
        doc_with_profile(R"({"name": "p", "filter": ["node-resources-fit"], "score": [")" + score + R"("]})", 20), "p.json",
        ".", reg);
    return placements(scenario::run(sc, std::nullopt, {}, reg));
  };
  CHECK(run_with("last-node") == run_with("last-node-batch"));
}

TEST_CASE("A batch filter runs once per task, after the per-node filters, on the nodes they kept", "[policies][registry]") {
  const auto reg = registry_with_custom();
  Profile p;
  p.name = "p";
  p.filter = {PluginRef{"node-resources-fit"}, PluginRef{"even-nodes"}};
  p.score = {PluginRef{"last-node"}};
  Scheduler s(p, reg, 1);
  // Five nodes; node 4 is too small for the job, so the batch filter sees four candidates.
  auto c = t::cluster({t::node("a", 16, 64, 2, "T4"), t::node("b", 16, 64, 2, "T4"), t::node("c", 16, 64, 2, "T4"),
                       t::node("d", 16, 64, 2, "T4"), t::node("e", 1, 64, 2, "T4")});
  const JobSpec job = t::job("j", 0, 10, t::request({{"cpu", "4"}, {"memory", "1Gi"}, {"nvidia.com/gpu", "1"}}));
  std::vector<TaskPlacement> out;
  REQUIRE(s.schedule(c, job, JobId{0}, out).ok());
  CHECK(out.at(0).node == NodeId{2});   // the highest even node that fits
  // Odd nodes are reported by the batch filter in the diagnosis of a failure.
  const JobSpec big = t::job("big", 0, 10, t::request({{"cpu", "4"}, {"memory", "1Gi"}, {"nvidia.com/gpu", "2"}}));
  std::vector<TaskPlacement> out2;
  REQUIRE(s.schedule(c, big, JobId{1}, out2).ok());
  CHECK(out2.at(0).node == NodeId{0});   // node 2 has one GPU left; node 0 is the other even one
  const JobSpec huge = t::job("huge", 0, 10, t::request({{"cpu", "4"}, {"memory", "1Gi"}, {"nvidia.com/gpu", "2"}}));
  std::vector<TaskPlacement> out3;
  CHECK_FALSE(s.schedule(c, huge, JobId{2}, out3).ok());
  const auto why = s.last_diagnosis();
  CHECK(why.find("odd node (even-nodes)") != std::string::npos);
  CHECK(why.find("0/5 nodes are available") == 0);
}
