// The FGD experiment (scenario/experiment.hpp) and the fragmentation metrics every run with GPU
// sharing reports (scenario/fragmentation.hpp).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>

#include <gpusched/policies/framework/registry.hpp>
#include <gpusched/policies/framework/scheduler.hpp>
#include <gpusched/rng.hpp>
#include <gpusched/scenario/experiment.hpp>
#include <gpusched/scenario/fragmentation.hpp>
#include <gpusched/sim/engine.hpp>
#include <gpusched/traces/transforms.hpp>

#include "support/support.hpp"

using namespace gpusched;
namespace t = gpusched::test;

namespace {

/// The openb folder when the real traces are present (else WARNs and returns empty).
std::filesystem::path openb_dir() {
  const auto nodes = t::real_trace("alibaba-gpu-v2023-openb/openb_node_list_gpu_node.csv");
  return nodes.empty() ? std::filesystem::path() : nodes.parent_path();
}

}  // namespace

TEST_CASE("parse_seeds takes one seed, a range and comma lists", "[experiment]") {
  CHECK(scenario::parse_seeds("42") == std::vector<std::uint64_t>{42});
  CHECK(scenario::parse_seeds("42-45") == std::vector<std::uint64_t>{42, 43, 44, 45});
  CHECK(scenario::parse_seeds("1, 5-6,9") == std::vector<std::uint64_t>{1, 5, 6, 9});
  CHECK_THROWS_AS(scenario::parse_seeds("x"), ScenarioError);
  CHECK_THROWS_AS(scenario::parse_seeds("50-42"), ScenarioError);
  CHECK_THROWS_AS(scenario::parse_seeds(""), ScenarioError);
  CHECK_THROWS_AS(scenario::parse_seeds("-3"), ScenarioError);
}

TEST_CASE("parse_fgd_policies takes all or a comma list and names a bad entry", "[experiment]") {
  CHECK(scenario::parse_fgd_policies("all") == scenario::fgd_policy_names());
  CHECK(scenario::parse_fgd_policies("fgd, BestFit,fgd") == std::vector<std::string>{"fgd", "bestfit"});
  CHECK(scenario::fgd_profile_for("bestfit") == "best-fit");
  try {
    (void)scenario::parse_fgd_policies("fgd,tetris");
    FAIL("no error");
  } catch (const ScenarioError& e) {
    CHECK_THAT(e.what(), Catch::Contains("tetris") && Catch::Contains("--policies"));
  }
}

TEST_CASE("quantile interpolates linearly and the median of an even count is the mean of the middle two", "[experiment]") {
  CHECK(*scenario::quantile({3, 1, 2}, 0.5) == Approx(2));
  CHECK(*scenario::quantile({4, 1, 3, 2}, 0.5) == Approx(2.5));
  CHECK(*scenario::quantile({1, 2, 3, 4, 5}, 0.25) == Approx(2));
  CHECK(*scenario::quantile({10}, 0.75) == Approx(10));
  CHECK_FALSE(scenario::quantile({}, 0.5).has_value());
}

TEST_CASE("FragmentationRecorder samples after every decision and its curve matches a recomputation", "[experiment][fragmentation]") {
  // 4 nodes x 2 GPUs; shares of 600 milli strand 400 on each GPU they land on.
  std::vector<NodeSpec> nodes;
  for (int i = 0; i < 4; ++i) nodes.push_back(t::node(t::numbered("n", i), 16, 64, 2, "T4"));
  ClusterState cluster = t::cluster(nodes);
  Workload pods;
  for (int i = 0; i < 12; ++i) {
    const bool share = i % 3 != 2;
    pods.push_back(t::job(t::numbered("p", i), 0, -1,
                          share ? t::request({{"cpu", "1"}, {"nvidia.com/gpu", "1"}, {"gpusched.io/gpu-milli", "600"}})
                                : t::request({{"cpu", "1"}, {"nvidia.com/gpu", "1"}})));
  }
  pods = traces::arrival_only(pods);
  const auto types = policies::fgd::typical_pod_types(pods);
  policies::Scheduler sched(policies::builtin_profile("best-fit"), policies::Registry::with_builtins(), 1);
  sim::EngineConfig cfg;
  cfg.fill_mode = true;
  cfg.retry = false;
  sim::Engine engine(cluster, pods, sched, cfg);
  scenario::FragmentationRecorder rec(types);
  engine.add_observer(&rec);
  engine.run();
  const auto& samples = rec.samples();
  REQUIRE(samples.size() == pods.size() + 1);   // the start, then every pod: placed or failed
  CHECK(samples.front().unallocated_pct == Approx(100.0));
  std::int64_t arrived = 0;
  for (std::size_t i = 1; i < samples.size(); ++i) {
    arrived += traces::gpu_milli_requested(pods[i - 1]);
    CHECK(samples[i].decisions == static_cast<std::int64_t>(i));
    CHECK(samples[i].arrived_pct == Approx(100.0 * static_cast<double>(arrived) / 8000.0));
    CHECK(samples[i].unallocated_pct >= 0.0);
    CHECK(samples[i].frag_pct <= samples[i].unallocated_pct + 1e-9);   // fragments are idle GPU
  }
  // The final state equals a from-scratch recomputation.
  const auto f = policies::fgd::cluster_fragmentation(cluster, types);
  CHECK(samples.back().frag_pct == Approx(100.0 * f.fragment_milli / 8000.0));
  CHECK(samples.back().unallocated_pct == Approx(100.0 - 100.0 * static_cast<double>(cluster.totals().gpu_used_milli) / 8000.0));
  // The curve: one row per integer %, each the last sample at or below it.
  const auto curve = rec.curve();
  REQUIRE_FALSE(curve.empty());
  CHECK(curve.front().arrived_pct == 0);
  CHECK(curve.back().arrived_pct == static_cast<std::int32_t>(std::ceil(samples.back().arrived_pct - 1e-9)));
  for (std::size_t k = 0; k < curve.size(); ++k) {
    CHECK(curve[k].arrived_pct == static_cast<std::int32_t>(k));
    const scenario::FragmentationSample* last = nullptr;
    for (const auto& s : samples) {
      if (s.arrived_pct <= curve[k].arrived_pct + 1e-9) last = &s;
    }
    if (last != nullptr) CHECK(curve[k].unallocated_pct == Approx(last->unallocated_pct));
  }
}

TEST_CASE("one FGD-protocol run on the openb trace is deterministic and its curve is well formed", "[experiment][real-trace]") {
  const auto dir = openb_dir();
  if (dir.empty()) return;
  scenario::FgdExperiment cfg;
  cfg.traces = dir;
  const auto in = scenario::load_fgd_inputs(cfg);
  CHECK(in.nodes.size() == 1213);
  CHECK(in.pods.size() == 8152);
  const auto a = scenario::run_fgd_once(in, "fgd", 42);
  const auto b = scenario::run_fgd_once(in, "fgd", 42);
  REQUIRE(a.curve.size() == 131);   // 0..130 %
  CHECK(a.pods > 8152);
  CHECK(a.pods == b.pods);
  CHECK(a.failed == b.failed);
  for (std::size_t i = 0; i < a.curve.size(); ++i) {
    CHECK(a.curve[i].unallocated_pct == b.curve[i].unallocated_pct);
    CHECK(a.curve[i].frag_pct == b.curve[i].frag_pct);
  }
  // Below saturation almost everything arrived is allocated: unallocated ~ 100 - arrived.
  CHECK(a.at(50)->unallocated_pct == Approx(50.0).margin(1.5));
  const auto c = scenario::run_fgd_once(in, "fgd", 43);
  CHECK(c.at(100)->unallocated_pct != a.at(100)->unallocated_pct);
}

TEST_CASE("fragmentation kept incrementally through finishes and preemptions equals a recomputation", "[experiment][fragmentation]") {
  std::vector<NodeSpec> nodes;
  for (int i = 0; i < 3; ++i) nodes.push_back(t::node(t::numbered("n", i), 8, 64, 2, "T4"));
  ClusterState cluster = t::cluster(nodes);
  Workload jobs;
  Rng rng(7);
  for (int i = 0; i < 60; ++i) {
    const auto milli = std::to_string(100 * (1 + rng.below(9)));
    auto r = i % 4 == 0 ? t::request({{"cpu", "1"}, {"nvidia.com/gpu", "1"}})
                        : t::request({{"cpu", "1"}, {"nvidia.com/gpu", "1"}, {"gpusched.io/gpu-milli", milli}});
    jobs.push_back(t::job(t::numbered("j", i), i * 5.0, 20.0 + static_cast<double>(rng.below(60)), r, 1, -1,
                          static_cast<std::int32_t>(rng.below(3)) * 100));
  }
  const auto types = policies::fgd::typical_pod_types(jobs);
  policies::Scheduler sched(policies::builtin_profile("kube-default"), policies::Registry::with_builtins(), 3);
  sim::Engine engine(cluster, jobs, sched, {});
  scenario::FragmentationRecorder rec(types);
  engine.add_observer(&rec);
  // Checks every sample against a from-scratch recomputation as it is taken.
  struct Check final : sim::Observer {
    const scenario::FragmentationRecorder* rec;
    std::vector<policies::fgd::PodType> types;
    int checked = 0;
    void on_job_start(SimTime, JobId, std::span<const TaskPlacement>, const sim::Engine& e) override {
      const auto f = policies::fgd::cluster_fragmentation(e.cluster(), types);
      CHECK(rec->samples().back().frag_pct == Approx(100.0 * f.fragment_milli / static_cast<double>(f.capacity_milli)));
      CHECK(rec->samples().back().frag_ratio_pct == Approx(100.0 * f.ratio()));
      ++checked;
    }
  } check;
  check.rec = &rec;
  check.types = types;
  engine.add_observer(&check);   // after the recorder: it sees the recorder's sample of this start
  engine.run();
  CHECK(check.checked > 40);
  CHECK(engine.preemptions() > 0);   // the case exercises evictions
}

TEST_CASE("FGD experiment CSVs start with their header rows and meta.json names the inputs", "[experiment]") {
  scenario::FgdExperimentResult r;
  r.config.policies = {"fgd", "random"};
  r.config.seeds = {42};
  r.workload_name = "gpushare80";
  r.pod_source = "traces/openb_pod_list_gpushare80.csv";
  r.node_source = "traces/openb_node_list_gpu_node.csv";
  for (const auto* policy : {"fgd", "random"}) {
    scenario::FgdRun run;
    run.policy = policy;
    run.seed = 42;
    run.pods = 10;
    run.curve = {{1, 99.0, 0.5, 0.5}, {2, 98.0, 0.25, 0.26}};
    r.runs.push_back(run);
    r.summary.push_back({policy, 1, 98.0, std::nullopt, std::nullopt, std::nullopt, std::nullopt, std::nullopt});
  }
  t::TempDir dir;
  const auto files = scenario::write_fgd_outputs(r, dir.path() / "a");
  (void)scenario::write_fgd_outputs(r, dir.path() / "b");
  for (const auto& [file, header] : {std::pair{"curve.csv", "policy,seed,arrived_pct,"}, std::pair{"summary.csv", "policy,seeds,"},
                                     std::pair{"runs.csv", "policy,seed,pods,"}}) {
    INFO(file);
    const auto text = t::read_file(dir.path() / "a" / file);
    CHECK(text.rfind(header, 0) == 0);
    CHECK(text.find('#') == std::string::npos);
  }
  const auto curve = t::read_file(dir.path() / "a" / "curve.csv");
  CHECK(std::count(curve.begin(), curve.end(), '\n') == 5);   // header + 2 runs x 2 points
  REQUIRE(files.size() == 5);
  CHECK(files.back().filename() == "meta.json");
  const auto meta_text = t::read_file(dir.path() / "a" / "meta.json");
  CHECK(meta_text == t::read_file(dir.path() / "b" / "meta.json"));   // no time or folder in it
  const auto meta = nlohmann::json::parse(meta_text);
  CHECK(meta["schema_version"] == 1);
  CHECK(meta["experiment"] == "fgd");
  CHECK(meta["scenario"]["name"] == "fgd-gpushare80");
  CHECK(meta["scenario"]["source"] == r.pod_source);
  CHECK(meta["scenario"]["digest"].get<std::string>().size() == 16);
  CHECK(meta["nodes"] == r.node_source);
  CHECK(meta["policies"] == nlohmann::json({"fgd", "random"}));
  CHECK(meta["seeds"] == nlohmann::json({42}));
  CHECK(meta["files"] == nlohmann::json({"curve.csv", "summary.csv", "runs.csv", "report.md", "meta.json"}));
  r.config.seeds = {43};
  (void)scenario::write_fgd_outputs(r, dir.path() / "c");
  CHECK(nlohmann::json::parse(t::read_file(dir.path() / "c" / "meta.json"))["scenario"]["digest"] != meta["scenario"]["digest"]);
}
