#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include <gpusched/policies/framework/registry.hpp>
#include <gpusched/policies/framework/scheduler.hpp>
#include <gpusched/sim/engine.hpp>
#include <gpusched/sim/metrics.hpp>
#include <gpusched/sim/outputs.hpp>

#include "support/support.hpp"

using namespace gpusched;
using namespace gpusched::sim;
namespace t = gpusched::test;

namespace {
/// One node with 2 GPUs and 10 CPUs. a: 1 GPU + 2 CPU on [0, 100); b: 1 GPU + 4 CPU on [50, 150).
struct TwoJobs {
  ClusterState cluster = t::cluster({t::node("n", 10, 64, 2, "T4")});
  Workload jobs{t::job("a", 0, 100, t::request({{"cpu", "2"}, {"nvidia.com/gpu", "1"}})),
                t::job("b", 50, 100, t::request({{"cpu", "4"}, {"nvidia.com/gpu", "1"}}))};
  policies::Scheduler scheduler{policies::builtin_profile("first-fit"), policies::Registry::with_builtins(), 1};
  MetricsCollector metrics{SimTime::from_seconds(50)};
  Engine engine{cluster, jobs, scheduler, {}};
  TwoJobs() {
    engine.add_observer(&metrics);
    engine.run();
  }
};
}  // namespace

TEST_CASE("Time-weighted allocation integrates the allocation over time", "[sim][metrics]") {
  TwoJobs run;
  const auto& s = run.metrics.summary();
  // GPU milli in use: 1000 on [0,50), 2000 on [50,100), 1000 on [100,150) -> 200,000 milli-s
  // of 2000 x 150 s available.
  CHECK(s.gpu_alloc_pct_time_weighted == Approx(100.0 * 200'000.0 / 300'000.0));
  // CPU: 2000 x 50 + 6000 x 50 + 4000 x 50 = 600,000 milli-s of 10,000 x 150.
  CHECK(s.cpu_alloc_pct_time_weighted == Approx(40.0));
  CHECK(s.gpu_hours_allocated == Approx(200.0 / 3600.0));
  CHECK(s.gpu_alloc_pct_peak == Approx(100.0));
  CHECK(s.first_submit == SimTime::zero());
  CHECK(s.end == SimTime::from_seconds(150));
  CHECK(s.makespan_s == Approx(150.0));
}

TEST_CASE("Allocation while jobs arrive covers only first to last submission", "[sim][metrics]") {
  TwoJobs run;
  const auto& s = run.metrics.summary();
  // Arrivals span [0, 50): only job a runs there, 1000 of 2000 milli -> 50 %.
  CHECK(s.last_submit == SimTime::from_seconds(50));
  CHECK(s.gpu_alloc_pct_arrivals == Approx(50.0));
}

TEST_CASE("The summary counts jobs by final state and measures wait and JCT", "[sim][metrics]") {
  TwoJobs run;
  const auto& s = run.metrics.summary();
  CHECK(s.jobs == 2);
  CHECK(s.completed == 2);
  CHECK(s.failed + s.running + s.pending + s.not_arrived == 0);
  CHECK(s.nodes == 1);
  CHECK(s.gpus == 2);
  CHECK(s.wait.count == 2);
  CHECK(s.wait.max_s == 0.0);
  CHECK(s.jct.count == 2);
  CHECK(s.jct.mean_s == Approx(100.0));
  CHECK(s.events == 4);
  CHECK(s.schedule_attempts == 2);
}

TEST_CASE("Samples show the state that held at each sample time", "[sim][metrics]") {
  TwoJobs run;
  const auto& samples = run.metrics.samples();
  REQUIRE(samples.size() == 4);
  const double expected_gpu[] = {50.0, 100.0, 50.0, 0.0};
  const double expected_cpu[] = {20.0, 60.0, 40.0, 0.0};
  const std::int64_t expected_running[] = {1, 2, 1, 0};
  for (std::size_t i = 0; i < 4; ++i) {
    INFO("sample " << i);
    CHECK(samples[i].t == SimTime::from_seconds(static_cast<std::int64_t>(50 * i)));
    CHECK(samples[i].gpu_alloc_pct == Approx(expected_gpu[i]));
    CHECK(samples[i].gpus_busy_pct == Approx(expected_gpu[i]));
    CHECK(samples[i].cpu_alloc_pct == Approx(expected_cpu[i]));
    CHECK(samples[i].running_jobs == expected_running[i]);
    CHECK(samples[i].pending_jobs == 0);
  }
}

TEST_CASE("Waiting time and peak pending count jobs that queue", "[sim][metrics]") {
  auto cluster = t::cluster({t::node("n", 10, 64, 1, "T4")});
  Workload jobs{t::job("a", 0, 100, t::request({{"nvidia.com/gpu", "1"}})),
                t::job("b", 10, 100, t::request({{"nvidia.com/gpu", "1"}})),
                t::job("c", 20, 100, t::request({{"nvidia.com/gpu", "1"}}))};
  policies::Scheduler sched(policies::builtin_profile("first-fit"), policies::Registry::with_builtins(), 1);
  MetricsCollector m(SimTime::from_seconds(1000));
  Engine e(cluster, jobs, sched, {});
  e.add_observer(&m);
  e.run();
  const auto& s = m.summary();
  CHECK(s.peak_pending == 2);
  // waits: 0, 90, 180 -> mean 90, p50 = 2nd value (nearest rank)
  CHECK(s.wait.mean_s == Approx(90.0));
  CHECK(s.wait.p50_s == Approx(90.0));
  CHECK(s.wait.max_s == Approx(180.0));
  CHECK(s.jct.max_s == Approx(280.0));
  CHECK(s.gpu_alloc_pct_time_weighted == Approx(100.0));
}

TEST_CASE("Distribution percentiles use the nearest rank", "[sim][metrics]") {
  std::vector<std::int64_t> ten;
  for (int i = 10; i >= 1; --i) ten.push_back(i * 1'000'000);   // unsorted on purpose
  const auto d = Distribution::of(ten);
  CHECK(d.count == 10);
  CHECK(d.mean_s == Approx(5.5));
  CHECK(d.p50_s == 5.0);    // rank ceil(0.5 x 10) = 5, no interpolation
  CHECK(d.p95_s == 10.0);   // rank ceil(9.5) = 10
  CHECK(d.p99_s == 10.0);
  CHECK(d.max_s == 10.0);

  std::vector<std::int64_t> twenty;
  for (int i = 1; i <= 20; ++i) twenty.push_back(i * 1'000'000);
  const auto e = Distribution::of(twenty);
  CHECK(e.p50_s == 10.0);
  CHECK(e.p95_s == 19.0);   // rank 19
  CHECK(e.p99_s == 20.0);

  const auto one = Distribution::of({3'500'000});
  CHECK(one.p50_s == 3.5);
  CHECK(one.p99_s == 3.5);
  const auto none = Distribution::of({});
  CHECK(none.count == 0);
  CHECK(none.mean_s == 0.0);
}

TEST_CASE("fixed prints the same bytes for equal values, negative zero included", "[sim][outputs]") {
  CHECK(fixed(1.5, 2) == "1.50");
  CHECK(fixed(-0.0, 3) == "0.000");
  CHECK(fixed(-0.0001, 2) == "0.00");
  CHECK(fixed(-1.25, 1) == "-1.2");
  CHECK(fixed(1e300, 1).size() == 303);   // longer than the fast path's buffer: the printf fallback
  CHECK(csv_field("plain") == "plain");
  CHECK(csv_field("a,b") == "\"a,b\"");
  CHECK(csv_field("say \"hi\"") == "\"say \"\"hi\"\"\"");
}

TEST_CASE("fixed prints exactly what printf(\"%.*f\") prints", "[sim][outputs][property]") {
  // fixed() uses std::to_chars; every output file relies on it printing printf's bytes (golden
  // outputs were written with printf). Random doubles across magnitudes, exact binary ties
  // (x.125, x.5: round-half-even in both), integers, tiny and negative values, 0-6 decimals.
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::uniform_int_distribution<int> exp10(-8, 12);
  std::vector<double> values = {0.0, 0.5, 1.5, 2.5, 0.125, 0.375, 2.675, 1e-7, 123456789.125, 1e10, 0.045, 1.005};
  for (int i = 0; i < 200'000; ++i) values.push_back(unit(rng) * std::pow(10.0, exp10(rng)));
  for (int i = 0; i < 20'000; ++i) values.push_back(static_cast<double>(static_cast<std::int64_t>(unit(rng) * 1e6)) / 1024.0);
  int compared = 0;
  for (const double x : values) {
    for (const double v : {x, -x}) {
      for (int d = 0; d <= 6; ++d) {
        char buf[400];
        std::snprintf(buf, sizeof buf, "%.*f", d, v);
        std::string want(buf);
        if (want.find_first_not_of("-0.") == std::string::npos && want[0] == '-') want.erase(0, 1);
        if (fixed(v, d) != want) {
          INFO("value " << v << " decimals " << d);
          REQUIRE(fixed(v, d) == want);
        }
        ++compared;
      }
    }
  }
  CHECK(compared == static_cast<int>(values.size()) * 14);
}
