#include <catch2/catch.hpp>

#include <array>
#include <map>
#include <set>

#include <gpusched/traces/synthetic.hpp>

#include "support/support.hpp"

using namespace gpusched;
using namespace gpusched::traces;
namespace t = gpusched::test;

namespace {
ClusterState demo_like() {
  return t::cluster({t::node("a100-0", 128, 1024, 8), t::node("a100-1", 128, 1024, 8), t::node("t4-0", 64, 256, 4, "T4"),
                     t::node("cpu-0", 96, 384)});
}
/// 0 cpu-only, 1 fractional, 2/3/4/5 = 1/2/4/8 GPUs (per job, over all tasks).
int kind_of(const JobSpec& j) {
  const auto& g = j.request.gpu;
  if (g.mode == GpuMode::kNone) return 0;
  if (g.mode == GpuMode::kShared) return 1;
  switch (g.count * j.tasks) {
    case 1: return 2;
    case 2: return 3;
    case 4: return 4;
    default: return 5;
  }
}
}  // namespace

TEST_CASE("The synthetic generator is deterministic for a seed", "[traces][synthetic]") {
  const auto c = demo_like();
  SyntheticConfig cfg;
  cfg.jobs = 500;
  cfg.gang_fraction = 0.5;
  const auto a = generate(cfg, c, RngStreams(42));
  const auto b = generate(cfg, c, RngStreams(42));
  const auto d = generate(cfg, c, RngStreams(43));
  REQUIRE(a.size() == b.size());
  int same_as_other_seed = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].name == b[i].name);
    CHECK(a[i].submit == b[i].submit);
    CHECK(a[i].duration == b[i].duration);
    CHECK(a[i].tasks == b[i].tasks);
    CHECK(a[i].queue == b[i].queue);
    CHECK(a[i].request.cpu_milli == b[i].request.cpu_milli);
    CHECK(a[i].request.gpu.milli == b[i].request.gpu.milli);
    same_as_other_seed += (a[i].duration == d[i].duration) ? 1 : 0;
  }
  CHECK(same_as_other_seed < 50);
}

TEST_CASE("The synthetic generator makes the configured number of jobs with sorted arrivals", "[traces][synthetic]") {
  const auto c = demo_like();
  SyntheticConfig cfg;
  cfg.jobs = 777;
  cfg.duration_min_s = 60;
  cfg.duration_max_s = 7200;
  cfg.queues = {"a", "b", "c"};
  const auto w = generate(cfg, c, RngStreams(1));
  REQUIRE(w.size() == 777);
  CHECK(w.front().submit == SimTime::zero());
  std::set<std::string> names, queues;
  for (std::size_t i = 0; i < w.size(); ++i) {
    if (i) CHECK(w[i - 1].submit <= w[i].submit);
    CHECK(w[i].duration >= SimTime::from_seconds(60));
    CHECK(w[i].duration <= SimTime::from_seconds(7200));
    CHECK(w[i].min_available == w[i].tasks);
    names.insert(w[i].name);
    queues.insert(w[i].queue);
  }
  CHECK(names.size() == 777);
  CHECK(w.front().name == "job-000001");
  CHECK(queues == std::set<std::string>{"a", "b", "c"});
  SyntheticConfig none;
  none.jobs = 0;
  CHECK(generate(none, c, RngStreams(1)).empty());
}

TEST_CASE("The synthetic job mix follows the configured shares", "[traces][synthetic]") {
  const auto c = demo_like();
  SyntheticConfig cfg;
  cfg.jobs = 4000;
  cfg.mix = {0.1, 0.2, 0.3, 0.2, 0.1, 0.1};
  const auto w = generate(cfg, c, RngStreams(5));
  std::array<int, 6> counts{};
  for (const auto& j : w) ++counts[static_cast<std::size_t>(kind_of(j))];
  const std::array<double, 6> expected{0.1, 0.2, 0.3, 0.2, 0.1, 0.1};
  for (std::size_t k = 0; k < 6; ++k) {
    INFO("kind " << k);
    CHECK(static_cast<double>(counts[k]) / 4000.0 == Approx(expected[k]).margin(0.025));
  }
}

TEST_CASE("Job kinds that fit no node are left out of the mix", "[traces][synthetic]") {
  const auto c = t::cluster({t::node("t4", 32, 128, 4, "T4"), t::node("t4b", 32, 128, 2, "T4")});
  SyntheticConfig cfg;
  cfg.jobs = 1000;
  cfg.mix = {0.1, 0.1, 0.1, 0.1, 0.1, 0.5};   // half of it 8-GPU jobs, which cannot run here
  const auto w = generate(cfg, c, RngStreams(2));
  REQUIRE(w.size() == 1000);
  for (const auto& j : w) {
    REQUIRE(kind_of(j) != 5);
    bool fits = false;
    for (std::uint32_t n = 0; n < c.node_count(); ++n) fits = fits || c.fits_empty(NodeId{n}, j.request);
    REQUIRE(fits);
  }
  const auto cpu_only = t::cluster({t::node("c", 32, 128)});
  for (const auto& j : generate(cfg, cpu_only, RngStreams(2))) REQUIRE(j.request.gpu.mode == GpuMode::kNone);
}

TEST_CASE("Gang fraction splits multi-GPU jobs into two-task gangs", "[traces][synthetic]") {
  const auto c = demo_like();
  SyntheticConfig cfg;
  cfg.jobs = 2000;
  cfg.mix = {0, 0, 0, 0.5, 0.5, 0};
  cfg.gang_fraction = 1.0;
  for (const auto& j : generate(cfg, c, RngStreams(3))) {
    REQUIRE(j.tasks == 2);
    REQUIRE(j.min_available == 2);
  }
  cfg.gang_fraction = 0.0;
  for (const auto& j : generate(cfg, c, RngStreams(3))) REQUIRE(j.tasks == 1);
}

TEST_CASE("A higher load means faster arrivals", "[traces][synthetic]") {
  const auto c = demo_like();
  SyntheticConfig low;
  low.jobs = 2000;
  low.load = 0.5;
  SyntheticConfig high = low;
  high.load = 2.0;
  const auto a = generate(low, c, RngStreams(4));
  const auto b = generate(high, c, RngStreams(4));
  // Same jobs, same arrival stream: only the rate differs, by the load ratio.
  CHECK(a.back().submit.seconds() / b.back().submit.seconds() == Approx(4.0).epsilon(0.001));
  SyntheticConfig fixed_rate;
  fixed_rate.jobs = 4000;
  fixed_rate.load = 0;
  fixed_rate.arrival_rate_per_hour = 3600;   // one a second
  const auto f = generate(fixed_rate, c, RngStreams(4));
  CHECK(f.back().submit.seconds() / 4000.0 == Approx(1.0).epsilon(0.05));
}

TEST_CASE("Synthetic config JSON rejects unknown fields and bad values by path", "[traces][synthetic]") {
  const auto cfg = SyntheticConfig::from_json(nlohmann::json::parse(R"({"jobs": 10, "load": 1.5, "queues": ["x"],
    "mix": {"gpu1": 1}})"), "s.json", "/workload/synthetic");
  CHECK(cfg.jobs == 10);
  CHECK(cfg.load == 1.5);
  CHECK(cfg.mix.gpu1 == 1.0);
  CHECK(cfg.mix.cpu_only == 0.0);
  CHECK(SyntheticConfig::from_json(cfg.to_json(), "s", "/w").to_json() == cfg.to_json());
  try {
    (void)SyntheticConfig::from_json(nlohmann::json::parse(R"({"jobz": 10})"), "s.json", "/workload/synthetic");
    FAIL("no exception");
  } catch (const ScenarioError& e) {
    CHECK(e.code() == ErrorCode::kScenarioUnknownField);
    CHECK(e.where().field == "/workload/synthetic/jobz");
  }
  try {
    (void)SyntheticConfig::from_json(nlohmann::json::parse(R"({"load": -1})"), "s.json", "/workload/synthetic");
    FAIL("no exception");
  } catch (const ScenarioError& e) {
    CHECK(e.where().field == "/workload/synthetic/load");
  }
  CHECK_THROWS_AS(SyntheticConfig::from_json(nlohmann::json::parse(R"({"mix": {"gpu16": 1}})"), "s", "/w"), ScenarioError);
  CHECK_THROWS_AS(SyntheticConfig::from_json(nlohmann::json::parse(R"({"duration_min_s": 10, "duration_max_s": 5})"), "s", "/w"),
                  ScenarioError);
}
