// The node index (policies::Scheduler::set_node_index) never changes an output: every file a run
// writes is byte-identical with the index on (the default) and off (`--exact-scan`, the plain
// scan of every node), and the same run twice with the index on writes the same bytes. Here:
// the example scenarios (MIG, vGPU, time-slicing, passthrough, TPU, topology, Kueue quotas,
// preemption, taints, autoscaling), the devices example under every built-in profile, and the
// demo's node mix (many identical nodes: ties) under every built-in profile. The random
// event-log comparison over every profile is in test_properties.cpp ("The node index decides
// exactly like ..."); Python's `run(exact_scan=True)` in tests/python/test_exact_scan.py.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <gpusched/policies/framework/profile.hpp>
#include <gpusched/policies/framework/registry.hpp>
#include <gpusched/policies/framework/scheduler.hpp>
#include <gpusched/rng.hpp>
#include <gpusched/scenario/scenario.hpp>
#include <gpusched/sim/engine.hpp>
#include <gpusched/sim/outputs.hpp>
#include <gpusched/traces/synthetic.hpp>

#include "support/support.hpp"

using namespace gpusched;
using namespace gpusched::scenario;
namespace t = gpusched::test;

namespace {

/// Every file write_outputs wrote (event log on), by name.
std::map<std::string, std::string> outputs_of(Scenario sc, bool exact_scan, const std::filesystem::path& dir) {
  sc.exact_scan = exact_scan;
  sc.outputs.event_log = true;
  std::map<std::string, std::string> files;
  for (const auto& f : write_outputs(run(sc), dir)) files[f.filename().string()] = t::read_file(f);
  return files;
}

/// Empty when equal, else the file and the first differing line of each.
std::string first_difference(const std::map<std::string, std::string>& a, const std::map<std::string, std::string>& b) {
  for (const auto& [name, text] : a) {
    const auto it = b.find(name);
    if (it == b.end()) return name + ": written only with the index on";
    if (it->second == text) continue;
    std::istringstream x(text), y(it->second);
    std::string lx, ly;
    for (int line = 1;; ++line) {
      const bool gx = static_cast<bool>(std::getline(x, lx)), gy = static_cast<bool>(std::getline(y, ly));
      if (!gx && !gy) return name + ": differs in line endings";
      if (!gx || !gy || lx != ly) {
        return name + " line " + std::to_string(line) + ":\n  index on:  " + (gx ? lx : "<end>") + "\n  exact scan: " + (gy ? ly : "<end>");
      }
    }
  }
  for (const auto& [name, text] : b) {
    if (!a.count(name)) return name + ": written only with --exact-scan";
  }
  return {};
}

void check_same_outputs(const Scenario& sc, const std::string& label) {
  INFO(label);
  t::TempDir dir;
  const auto indexed = outputs_of(sc, false, dir.path() / "index");
  const auto scanned = outputs_of(sc, true, dir.path() / "scan");
  REQUIRE(indexed.count("events.csv") == 1);
  CHECK(first_difference(indexed, scanned) == "");   // the file and line printed on failure
}

/// The demo's node mix (1,000 nodes of four kinds: most nodes have an identical twin, so ties
/// between equal nodes decide many placements) with fewer jobs.
Scenario reduced_demo(std::int64_t jobs, const nlohmann::json& profile) {
  auto doc = nlohmann::json::parse(demo_scenario_text());
  doc["workload"]["synthetic"]["jobs"] = jobs;
  doc["workload"]["synthetic"]["gang_fraction"] = 0.2;
  doc["profile"] = profile;
  return parse_scenario(doc, "<built-in demo, reduced>", t::source_dir());
}

}  // namespace

TEST_CASE("Every example scenario writes the same bytes with the node index and with --exact-scan",
          "[scenario][node-index]") {
  std::vector<std::string> ran;
  for (const auto& entry : std::filesystem::directory_iterator(t::source_dir() / "examples")) {
    if (entry.path().extension() != ".json") continue;
    // Examples reading the public traces (../shared/traces: 8k-82k jobs on 500-1,500 nodes) take
    // too long for a unit test: compare them with `gpusched run --exact-scan` (docs/policies.md).
    if (t::read_file(entry.path()).find("shared/traces") != std::string::npos) continue;
    Scenario sc = load_scenario(entry.path());
    if (sc.synthetic && sc.synthetic->jobs > 4000) sc.synthetic->jobs = 4000;   // the demo: its shape, fewer jobs
    check_same_outputs(sc, entry.path().filename().string());
    ran.push_back(entry.path().filename().string());
  }
  INFO("ran: " << ran.size());
  for (const char* must : {"devices.json", "kueue-objects.json", "policies.json", "small.json", "fill.json"}) {
    CHECK(std::count(ran.begin(), ran.end(), must) == 1);
  }
}

TEST_CASE("MIG, vGPU, time-slicing, passthrough and TPU nodes: same bytes under every built-in profile",
          "[scenario][node-index]") {
  const auto base = load_scenario(t::example("devices.json"));
  int ran = 0;
  for (const auto& name : policies::builtin_profile_names()) {
    Scenario sc = base;
    sc.profile = policies::builtin_profile(name);   // run() takes the queueing mode from it too
    sc.document["profile"] = name;
    check_same_outputs(sc, "devices.json under " + name);
    ++ran;
  }
  CHECK(ran == static_cast<int>(policies::builtin_profile_names().size()));
}

TEST_CASE("The demo's node mix: same bytes with the index and with --exact-scan under every built-in profile, "
          "and the same bytes twice with the index",
          "[scenario][node-index][determinism]") {
  for (const auto& name : policies::builtin_profile_names()) {
    // fgd scans cost 10x the others: fewer jobs keep the test short.
    const auto sc = reduced_demo(name == "fgd" ? 600 : 1500, name);
    check_same_outputs(sc, "demo mix under " + name);
  }
  // Golden-style determinism with the index on: the same run twice gives the same bytes.
  for (const char* name : {"binpack", "kube-default"}) {
    INFO(name);
    const auto sc = reduced_demo(2000, name);
    t::TempDir dir;
    const auto a = outputs_of(sc, false, dir.path() / "a");
    const auto b = outputs_of(sc, false, dir.path() / "b");
    CHECK(first_difference(a, b) == "");
  }
}

TEST_CASE("The demo's node mix with kube-scheduler's percentageOfNodesToScore: same bytes with --exact-scan",
          "[scenario][node-index]") {
  // Sampling a share of the nodes (round-robin start) is part of the decision, not a shortcut:
  // the index must reproduce it exactly as the plain scan does.
  for (const int pct : {0, 10, 100}) {
    const auto sc = reduced_demo(1500, {{"extends", "kube-default"}, {"name", "kube-sampled"},
                                        {"percentage_of_nodes_to_score", pct}});
    check_same_outputs(sc, "kube-default with percentage_of_nodes_to_score " + std::to_string(pct));
  }
}

TEST_CASE("gpusched run --exact-scan writes the same bytes as gpusched run", "[scenario][cli][node-index]") {
  t::TempDir dir;
  for (const char* example : {"devices.json", "policies.json"}) {
    INFO(example);
    std::map<std::string, std::string> out[2];
    for (int exact = 0; exact < 2; ++exact) {
      const auto folder = dir.path() / (std::string(example) + (exact ? ".exact" : ".index"));
      std::vector<std::string> args = {"run", t::example(example).string(), "--out", folder.string(), "--quiet"};
      if (exact) args.emplace_back("--exact-scan");
      const auto r = t::cli(args);
      REQUIRE(r.rc == 0);
      CHECK(r.out.empty());
      for (const auto& f : std::filesystem::directory_iterator(folder)) out[exact][f.path().filename().string()] = t::read_file(f.path());
    }
    CHECK(out[0].count("events.csv") == 1);
    CHECK(first_difference(out[0], out[1]) == "");
  }
  const auto help = t::cli({"run", "--help"});
  CHECK_THAT(help.out, Catch::Contains("--exact-scan"));
  const auto demo_help = t::cli({"demo", "--help"});
  CHECK_THAT(demo_help.out, Catch::Contains("--exact-scan"));
  CHECK(t::cli({"validate", t::example("small.json").string(), "--exact-scan"}).rc == 2);   // run and demo only
}

TEST_CASE("DRA claim jobs through the node index: the same bytes and the same warnings as --exact-scan, under "
          "first-fit, best-fit, binpack, kube-default's scores and percentage sampling, with CEL runtime errors on some nodes",
          "[scenario][node-index][dra]") {
  // dynamic-resources answers from the node's devices (node-local) and notes allocation errors
  // as warnings (Plugin::exhaustive_for): claim jobs take the request class or the first-feasible
  // walk, never a score-order walk, and scan partial searches, so the index asks about the node
  // states the scan asks about. The template "a100-or-error" evaluates a missing capacity on
  // every device that is not an A100: a CEL runtime error on the H100 nodes, one warning per
  // device; "pair" asks for two GPUs on one PCIe root.
  const auto dir = t::source_dir() / "examples" / "dra";
  nlohmann::json doc;
  {
    std::ifstream in(dir / "scenario.json");
    doc = nlohmann::json::parse(in);
  }
  doc["cluster"]["node_groups"] = nlohmann::json::parse(R"([
    {"name": "a100", "count": 6, "cpu": 64, "memory": "512Gi", "gpus": 4, "gpu_model": "A100-80GB", "topology": {"gpus_per_pcie_switch": 2}},
    {"name": "h100", "count": 4, "cpu": 64, "memory": "512Gi", "gpus": 8, "gpu_model": "H100-80GB", "topology": {"gpus_per_pcie_switch": 4}},
    {"name": "small", "count": 2, "cpu": "500m", "memory": "16Gi", "gpus": 2, "gpu_model": "H100-80GB"}])");
  doc["dra"]["objects"].push_back(nlohmann::json::parse(R"({
    "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", "metadata": {"name": "a100-or-error"},
    "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com", "selectors": [{"cel": {"expression":
      "device.attributes['gpu.nvidia.com'].productName == 'NVIDIA A100-80GB' || device.capacity['gpu.nvidia.com'].bogus.compareTo(quantity('1')) >= 0"}}]}}]}}}})"));
  std::uint64_t state = 11;
  auto next = [&](std::uint64_t n) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (state >> 33) % n;
  };
  nlohmann::json jobs = nlohmann::json::array();
  for (int i = 0; i < 400; ++i) {
    nlohmann::json j = {{"id", "j" + std::to_string(i)}, {"submit_time", i * 3}, {"duration", 30 + next(900)},
                        {"requests", {{"cpu", std::to_string(1 + next(8))}, {"memory", std::to_string(1 + next(32)) + "Gi"}}}};
    switch (next(4)) {
      case 0: j["claim_template"] = "two-gpus-one-pcie-root"; break;
      case 1: j["claim_template"] = "a100-or-error"; break;
      default: j["requests"]["nvidia.com/gpu"] = std::to_string(1 + next(4));
    }
    jobs.push_back(j);
  }
  doc["workload"]["jobs"] = jobs;
  const auto base = parse_scenario(doc.dump(), "dra-random.json", dir);
  auto profile = [&](const nlohmann::json& score, int pct, bool dra_first = false) {
    auto p = nlohmann::json::parse(R"({"name": "kube-dra", "filter": [{"name": "node-resources-fit"}, {"name": "dynamic-resources"}],
                                       "device_select": {"name": "dynamic-resources"}})");
    // dynamic-resources first: the scan asks it about nodes node-resources-fit (the capacity
    // bounds) rejects, such as the small nodes (half a CPU) for every job (review of 5de8bc0).
    if (dra_first) std::swap(p["filter"][0], p["filter"][1]);
    p["score"] = score;
    if (pct >= 0) p["percentage_of_nodes_to_score"] = pct;
    return p;
  };
  const std::vector<std::pair<std::string, nlohmann::json>> profiles = {
      {"first-fit", profile(nlohmann::json::parse(R"([{"name": "first-fit"}])"), -1)},
      {"best-fit", profile(nlohmann::json::parse(R"([{"name": "best-fit"}])"), -1)},
      {"binpack", profile(nlohmann::json::parse(R"([{"name": "gpu-binpack"}])"), -1)},
      {"kube scores", profile(nlohmann::json::parse(R"([{"name": "least-allocated"}, {"name": "balanced-allocation"}])"), -1)},
      {"best-fit, 10 % sampled", profile(nlohmann::json::parse(R"([{"name": "best-fit"}])"), 10)},
      {"dynamic-resources before node-resources-fit, first-fit", profile(nlohmann::json::parse(R"([{"name": "first-fit"}])"), -1, true)},
      {"dynamic-resources before node-resources-fit, kube scores",
       profile(nlohmann::json::parse(R"([{"name": "least-allocated"}, {"name": "balanced-allocation"}])"), -1, true)}};
  for (const auto& [label, p] : profiles) {
    auto d = doc;
    d["profile"] = p;
    Scenario sc = parse_scenario(d.dump(), "dra-random.json", dir);
    sc.outputs.event_log = true;
    INFO(label);
    t::TempDir tmp;
    sc.exact_scan = true;
    const auto scanned_result = run(sc);
    sc.exact_scan = false;
    const auto indexed_result = run(sc);
    CHECK(indexed_result.warnings() == scanned_result.warnings());
    std::map<std::string, std::string> a, b;
    for (const auto& f : write_outputs(indexed_result, tmp.path() / "index")) a[f.filename().string()] = t::read_file(f);
    for (const auto& f : write_outputs(scanned_result, tmp.path() / "scan")) b[f.filename().string()] = t::read_file(f);
    CHECK(first_difference(a, b) == "");
    // Not vacuous: CEL runtime errors were met (one per H100 device tried), and claim jobs ran.
    const auto w = indexed_result.warnings();
    CHECK(std::count_if(w.begin(), w.end(), [](const std::string& x) { return x.find("CEL runtime error") != std::string::npos; }) >= 8);
    CHECK(a.count("claims.csv") == 1);
  }
}

TEST_CASE("DRA claim jobs with dynamic-resources listed before node-resources-fit: the index asks it about the nodes "
          "the capacity bounds would skip, as the scan does", "[scenario][node-index][dra]") {
  // The review's repro of 5de8bc0: the T4 nodes have 4 CPUs and every job asks for 8, so
  // node-resources-fit rejects them, but the scan asks dynamic-resources first, whose selector
  // then fails at run time on their free T4s (no such key), one warning per node. The index must
  // not skip them by node-resources-fit's capacity bounds.
  const auto dir = t::source_dir() / "examples" / "dra";
  nlohmann::json doc;
  {
    std::ifstream in(dir / "scenario.json");
    doc = nlohmann::json::parse(in);
  }
  doc["cluster"]["node_groups"] = nlohmann::json::parse(R"([
    {"name": "t4", "count": 2, "cpu": 4, "memory": "64Gi", "gpus": 2, "gpu_model": "T4"},
    {"name": "a100", "count": 2, "cpu": 64, "memory": "512Gi", "gpus": 4, "gpu_model": "A100-80GB"}])");
  doc["dra"]["objects"].push_back(nlohmann::json::parse(R"({
    "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", "metadata": {"name": "t"},
    "spec": {"spec": {"devices": {"requests": [{"name": "gpus", "exactly": {"deviceClassName": "gpu.nvidia.com", "selectors": [{"cel": {"expression":
      "device.attributes['gpu.nvidia.com'].architecture == 'Ampere' || device.attributes['gpu.nvidia.com'].nosuch == 'x'"}}]}}]}}}})"));
  doc["workload"]["jobs"] = nlohmann::json::parse(R"([
    {"id": "c1", "submit_time": 0, "duration": 100, "claim_template": "t", "requests": {"cpu": "8", "memory": "8Gi"}},
    {"id": "c2", "submit_time": 1, "duration": 100, "claim_template": "t", "requests": {"cpu": "8", "memory": "8Gi"}}])");
  for (const char* score : {R"([{"name": "first-fit"}])", R"([{"name": "best-fit"}])", R"([{"name": "least-allocated"}, {"name": "balanced-allocation"}])"}) {
    INFO(score);
    auto d = doc;
    d["profile"] = nlohmann::json::parse(R"({"name": "dra-first", "filter": [{"name": "dynamic-resources"}, {"name": "node-resources-fit"}],
                                             "device_select": {"name": "dynamic-resources"}})");
    d["profile"]["score"] = nlohmann::json::parse(score);
    Scenario sc = parse_scenario(d.dump(), "dra-first.json", dir);
    sc.exact_scan = true;
    const auto scanned = run(sc).warnings();
    sc.exact_scan = false;
    const auto indexed = run(sc).warnings();
    CHECK(indexed == scanned);
    // Every scan asks about the T4s (first in node order), first-fit's too before it reaches an A100.
    CHECK(std::count_if(scanned.begin(), scanned.end(), [](const std::string& x) { return x.find("t4-000") != std::string::npos; }) == 2);
  }
}

TEST_CASE("Scheduler::set_node_index(false) turns the index off and its counters stay at zero", "[policies][node-index]") {
  ResourceTable res;
  auto cluster = t::cluster({t::node("a", 32, 128, 4), t::node("b", 32, 128, 4), t::node("c", 32, 128, 8, "V100-32GB")}, res);
  Workload jobs;
  for (int i = 0; i < 20; ++i) {
    jobs.push_back(t::job(t::numbered("j", i), i, 100, t::request({{"cpu", "2"}, {"nvidia.com/gpu", "1"}}, res)));
  }
  policies::Scheduler sched(policies::builtin_profile("binpack"), policies::Registry::with_builtins(), 1);
  CHECK(sched.node_index_enabled());   // on by default
  sched.set_node_index(false);
  CHECK_FALSE(sched.node_index_enabled());
  sim::Engine engine(cluster, jobs, sched, {});
  engine.run();
  const auto s = sched.index_stats();
  CHECK(s.decisions == 0);
  CHECK(s.node_updates == 0);
  CHECK(s.rebuilds == 0);
}

namespace {
/// A node-local score with many ties (seven bands of free CPU and GPUs), whose bounds
/// (ScorePlugin::score_bounds) are the score itself, the score plus up to 50, or NaN, drawn from
/// a seeded stream: any value at or above the score is a valid bound.
class BandedScore final : public policies::ScorePlugin {
 public:
  explicit BandedScore(std::uint64_t seed) : rng_(seed) {}
  [[nodiscard]] std::string_view name() const override { return "banded"; }
  [[nodiscard]] bool node_local_answers() const override { return true; }
  [[nodiscard]] bool normalize_is_identity() const override { return true; }
  double score(const ClusterState& c, const policies::TaskContext& /*ctx*/, NodeId n) override {
    const auto& s = c.node(n);
    return 10.0 * static_cast<double>((s.cpu_free_milli / 1000 + 3 * s.gpus_fully_free) % 7);
  }
  bool score_bounds(const ClusterState& c, const policies::TaskContext& ctx, std::span<const NodeId> nodes,
                    std::span<double> out) override {
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      const auto k = rng_.below(10);
      out[i] = k == 0 ? std::numeric_limits<double>::quiet_NaN() : std::min(100.0, score(c, ctx, nodes[i]) + (k < 5 ? 0.0 : 10.0 * static_cast<double>(k - 4)));
    }
    return true;
  }

 private:
  Rng rng_;
};
}  // namespace

TEST_CASE("Score bounds stand in for scores without changing a decision, ties to node order included",
          "[policies][node-index]") {
  // NodeIndex::best_bounded against the plain scan: the same node for every decision, while most
  // nodes keep their bound and only those reaching the top are scored. Every fifth decision is
  // explained, which reads the class's raw scores: its bounded nodes are scored first (settle).
  ResourceTable res;
  std::vector<NodeSpec> nodes;
  for (int i = 0; i < 60; ++i) nodes.push_back(t::node(t::numbered("n", i), 8 + 8 * (i % 4), 256, i % 5 == 4 ? 0 : 4 + 4 * (i % 2)));
  auto indexed_cluster = t::cluster(nodes, res);
  auto scanned_cluster = indexed_cluster;
  auto registry = policies::Registry::with_builtins();
  std::uint64_t seed = 5;
  registry.add({"banded", "test: banded score with random bounds", {"score"}, {},
                [&seed](const policies::PluginContext&) { return std::make_unique<BandedScore>(seed++); }});
  auto profile = policies::builtin_profile("best-fit");
  profile.score = {policies::PluginRef{"banded", 3.0}};
  policies::Scheduler indexed(profile, registry, 1), scanned(profile, registry, 1);
  scanned.set_node_index(false);
  const std::vector<TaskRequest> requests{t::request({{"cpu", "2"}, {"nvidia.com/gpu", "1"}}, res),
                                          t::request({{"cpu", "6"}, {"nvidia.com/gpu", "4"}}, res),
                                          t::request({{"cpu", "3"}}, res), t::request({{"cpu", "1"}, {"nvidia.com/gpu", "2"}}, res)};
  Rng rng(9);
  std::vector<std::pair<JobSpec, std::vector<TaskPlacement>>> running;
  int placed = 0;
  for (std::uint32_t i = 0; i < 1500; ++i) {
    if (!running.empty() && rng.below(5) < 2) {
      const auto k = static_cast<std::size_t>(rng.below(running.size()));
      for (const auto& p : running[k].second) {
        indexed_cluster.release(running[k].first.request, p);
        scanned_cluster.release(running[k].first.request, p);
      }
      running.erase(running.begin() + static_cast<std::ptrdiff_t>(k));
      continue;
    }
    const auto j = t::job(t::numbered("j", static_cast<int>(i)), 0, 100, requests[static_cast<std::size_t>(rng.below(requests.size()))]);
    std::vector<TaskPlacement> a, b;
    std::size_t explained = 0;
    if (i % 5 == 0) {
      indexed.set_explain([&explained](const policies::DecisionExplanation& e) { explained += e.nodes.size(); });
    } else {
      indexed.set_explain({});
    }
    const bool ok = indexed.schedule(indexed_cluster, j, JobId{i}, a).ok();
    if (i % 5 == 0) CHECK(explained > 0);
    INFO("decision " << i);
    REQUIRE(scanned.schedule(scanned_cluster, j, JobId{i}, b).ok() == ok);
    REQUIRE(a == b);
    if (ok) {
      running.emplace_back(j, a);
      ++placed;
    }
  }
  CHECK(placed > 500);
  const auto s = indexed.index_stats();
  CHECK(s.tree > 500);
  CHECK(s.bounded > 1000);
  CHECK(s.bounds_scored > 0);
  CHECK(s.bounds_scored < s.bounded);
}
