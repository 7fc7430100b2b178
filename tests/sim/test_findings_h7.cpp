// Regression tests for the engine bugs the invariant checker found (issue 13, helper H7's
// findings F1-F3; reproducers in tests/python/invariants/findings/). Each failed before its fix:
// F1 and F2 aborted the process (GPUSCHED_ASSERT), F3 admitted a job past a quota.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include <gpusched/cluster.hpp>
#include <gpusched/policies/framework/statement.hpp>
#include <gpusched/policies/quota/quota_resources.hpp>
#include <gpusched/scenario/scenario.hpp>

#include "support/support.hpp"

using namespace gpusched;
namespace t = gpusched::test;

namespace {

const sim::JobRow& row(const std::vector<sim::JobRow>& rows, const std::string& name) {
  for (const auto& r : rows) {
    if (r.job == name) return r;
  }
  FAIL("no job " << name);
  return rows.front();
}

/// A one-node scenario (H200 GPUs) with `profile` and the inline `jobs`.
std::string h200_doc(int gpus, std::string_view profile, std::string_view jobs) {
  return t::scenario_doc("h7", "nodes",
                         R"({"name": "n0", "cpu": "16", "memory": "64Gi", "gpus": )" + std::to_string(gpus) +
                             R"(, "gpu_model": "H200"})",
                         jobs, std::string(R"("profile": )") + std::string(profile) + ",");
}

}  // namespace

// ------------------------------------------------------------------ F1: HAMi gpucores 100

TEST_CASE("A HAMi share of all the compute does not fit a GPU that holds a memory share", "[findings][h7][core]") {
  auto c = t::cluster({t::node("n0", 16, 64, 1, "H200")});
  const NodeId n{0};
  const auto memshare = t::request({{"aliyun.com/gpu-mem", "10"}});
  const auto hami100 = t::request({{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "4096"}, {"nvidia.com/gpucores", "100"}});
  REQUIRE(hami100.gpu.mode == GpuMode::kShared);
  REQUIRE(hami100.gpu.milli == kMilliPerGpu);
  CHECK(c.fits(n, hami100));   // an idle GPU takes it
  c.allocate(memshare, {n, {{0, 0, 10240}}});
  // HAMi checkCardExclusive: gpucores 100 wants the GPU to itself (device used > 0: refused).
  CHECK_FALSE(c.fits(n, hami100));
  CHECK(c.fit_check(n, hami100) == FitResult::kGpuShare);
  // The same for a gpu-milli 1000 share with memory (a share of all the compute too).
  CHECK_FALSE(c.fits(n, t::request({{"gpusched.io/gpu-milli", "1000"}, {"aliyun.com/gpu-mem", "4"}})));
  // A smaller share still fits beside it.
  CHECK(c.fits(n, t::request({{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "4096"}, {"nvidia.com/gpucores", "99"}})));
  CHECK(t::cluster_violation(c).empty());
}

TEST_CASE("A GPU whose compute is all given takes no share without compute", "[findings][h7][core]") {
  auto c = t::cluster({t::node("n0", 16, 64, 1, "H200")});
  const NodeId n{0};
  const auto memshare = t::request({{"aliyun.com/gpu-mem", "10"}});
  SECTION("after a HAMi gpucores 100 share (exclusive both ways)") {
    c.allocate(t::request({{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "4096"}, {"nvidia.com/gpucores", "100"}}),
               {n, {{0, 1000, 4096}}});
  }
  SECTION("after shares that add up to the whole compute (HAMi checkCardComputeExhausted)") {
    const auto half = t::request({{"gpusched.io/gpu-milli", "500"}});
    c.allocate(half, {n, {{0, 500, 0}}});
    c.allocate(half, {n, {{0, 500, 0}}});
  }
  CHECK(c.gpus(n)[0].milli_free == 0);
  CHECK(c.gpus(n)[0].memory_free_mib > 10240);   // memory alone would fit
  CHECK_FALSE(c.fits(n, memshare));
}

TEST_CASE("F1: a HAMi gpucores 100 task waits for the GPU a memory share holds instead of aborting",
          "[findings][h7][scenario]") {
  const std::string jobs =
      R"({"id": "memshare", "submit_time": 0, "duration": 100, "requests": {"cpu": "1", "memory": "1Gi", "aliyun.com/gpu-mem": 10}},
         {"id": "hami", "submit_time": 1, "duration": 100, "requests": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": 1,
          "nvidia.com/gpumem": 4096, "nvidia.com/gpucores": 100}})";
  const auto r = scenario::run(scenario::parse_scenario(std::string_view(h200_doc(1, R"("first-fit")", jobs)), "f1.json", "."));
  const auto rows = r.jobs();
  CHECK(row(rows, "memshare").state == "completed");
  CHECK(row(rows, "hami").state == "completed");
  CHECK(row(rows, "hami").start_s.value_or(-1.0) == Approx(100.0));
}

// ------------------------------------------------------------------ F2: dynamic MIG + preemption

namespace {

/// One dynamic-MIG A100-80GB GPU: a 7g.80gb GI created and left idle, then two 3g.40gb GIs, the
/// one at start 4 created by destroying the idle 7g (its grant records that), the other at 0.
struct MigBench {
  scenario::Scenario sc = scenario::parse_scenario(
      std::string_view(t::scenario_doc("h7-mig", "nodes",
                                       R"({"name": "m0", "cpu": "16", "memory": "64Gi", "gpus": 1, "gpu_model": "A100-80GB",
                                           "gpu_partition": {"mode": "mig", "dynamic": true}})",
                                       R"({"id": "cpu", "submit_time": 0, "duration": 1, "requests": {"cpu": "1"}})")),
      "mig.json", ".");
  ClusterState c{sc.catalog, sc.resources, sc.nodes};
  NodeId n{0};
  TaskRequest big = t::request({{"nvidia.com/mig-7g.80gb", "1"}});
  TaskRequest three = t::request({{"nvidia.com/mig-3g.40gb", "1"}});
  TaskPlacement seven_p, a, b;

  MigBench() {
    const auto& geo = c.mig_geometry(c.gpus(n)[0]);
    const int p7 = geo.find_profile("7g.80gb");
    const int p3 = geo.find_profile("3g.40gb");
    auto grant = [&](int p, int start) {
      const auto& prof = geo.profiles[static_cast<std::size_t>(p)];
      GpuGrant g{0, kMilliPerGpu * prof.compute_slices / geo.compute_slices, prof.memory_mib};
      g.mig_profile = static_cast<std::int8_t>(p);
      g.mig_start = static_cast<std::int8_t>(start);
      g.mig_created = true;
      return g;
    };
    seven_p = {n, {grant(p7, 0)}};
    c.allocate(big, seven_p);
    c.release(big, seven_p);   // the 7g stays, idle
    GpuGrant ga = grant(p3, 4);
    ga.mig_destroyed = static_cast<std::uint32_t>(p7 + 1);   // the idle 7g at start 0
    a = {n, {ga}};
    b = {n, {grant(p3, 0)}};
    c.allocate(three, a);
    c.allocate(three, b);
  }
  [[nodiscard]] std::vector<MigInstance> layout() const { return c.mig_state(c.gpus(n)[0]).layout.instances(); }
  [[nodiscard]] unsigned busy() const { return c.mig_state(c.gpus(n)[0]).busy; }
};

}  // namespace

TEST_CASE("Taking back a released MIG task does not replay the reconfiguration it started with",
          "[findings][h7][core][mig]") {
  MigBench m;
  const auto layout = m.layout();
  REQUIRE(layout.size() == 2);
  REQUIRE(m.busy() == 0b10001U);
  const auto reconfigurations = m.c.totals().mig_reconfigurations;
  m.c.release(m.three, m.a);
  CHECK(m.busy() == 0b00001U);
  // Before the fix the way back was allocate(), which destroyed the 7g at start 0 again: the
  // GI there is b's, busy -> GPUSCHED_ASSERT "destroyed a busy GPU instance".
  m.c.undo_release(m.three, m.a);
  CHECK(m.layout() == layout);
  CHECK(m.busy() == 0b10001U);
  CHECK(m.c.totals().mig_reconfigurations == reconfigurations);
  CHECK(t::cluster_violation(m.c).empty());
}

TEST_CASE("A rolled-back what-if eviction of a MIG task leaves the layout as it was", "[findings][h7][core][mig]") {
  MigBench m;
  const auto layout = m.layout();
  const auto reconfigurations = m.c.totals().mig_reconfigurations;
  {
    policies::Statement st(m.c);   // preemption's what-if: evict a, try, roll back
    st.evict(m.three, m.a);
    st.restore(m.three, m.a);   // capacity-queues puts a victim back inside the statement
    st.evict(m.three, m.a);
  }
  CHECK(m.layout() == layout);
  CHECK(m.busy() == 0b10001U);
  CHECK(m.c.totals().mig_reconfigurations == reconfigurations);
  CHECK(t::cluster_violation(m.c).empty());
}

TEST_CASE("F2: dynamic MIG with priority preemption runs to the end", "[findings][h7][scenario][mig]") {
  const auto path = t::source_dir() / "tests" / "python" / "invariants" / "findings" / "F2-mig-preempt-destroys-busy-gi.json";
  const auto r = scenario::run(scenario::parse_scenario(t::read_file(path), path.string(), path.parent_path()));
  const auto rows = r.jobs();
  REQUIRE(rows.size() == 6);
  for (const auto& j : rows) {
    INFO(j.job);
    CHECK(j.state == "completed");
  }
  CHECK(r.summary().preemptions > 0);   // it did preempt
}

// ------------------------------------------------------------------ F3: quota on HAMi GPUs

TEST_CASE("requests.nvidia.com/gpu charges the nvidia.com/gpu a pod requests, in every sharing mode",
          "[findings][h7][quota]") {
  using policies::quota::QuotaResources;
  auto gpus = [](const t::Items& items) { return QuotaResources::nvidia_gpus(t::request(items).gpu); };
  CHECK(gpus({{"nvidia.com/gpu", "3"}}) == 3);
  CHECK(gpus({{"nvidia.com/gpu", "8"}, {"nvidia.com/gpumem", "4096"}, {"nvidia.com/gpucores", "50"}}) == 8);   // HAMi
  CHECK(gpus({{"nvidia.com/gpumem", "4096"}}) == 1);   // HAMi's webhook adds nvidia.com/gpu: 1
  CHECK(gpus({{"nvidia.com/gpu", "1"}, {"gpusched.io/gpu-milli", "500"}}) == 1);   // the openb mapping
  CHECK(gpus({{"gpusched.io/gpu-milli", "500"}}) == 0);
  CHECK(gpus({{"aliyun.com/gpu-mem", "8"}}) == 0);   // gpushare: only aliyun.com/gpu-mem
  CHECK(gpus({{"nvidia.com/gpu", "1"}, {"aliyun.com/gpu-mem", "8"}}) == 1);
  CHECK(gpus({{"gpusched.io/gpu-milli", "1000"}}) == 1);   // a whole GPU (README)
  CHECK(gpus({{"pci_passthrough:alias", "GPU:2"}}) == 2);
  CHECK(gpus({{"nvidia.com/mig-3g.40gb", "2"}}) == 0);   // charged as nvidia.com/mig-3g.40gb
  CHECK(gpus({{"nvidia.com/vgpu-A100-10C", "1"}}) == 0);   // charged as nvidia.com/vgpu-A100-10C
}

TEST_CASE("A share written with nvidia.com/gpu: 1 keeps it through a native trace", "[findings][h7][quota]") {
  const auto named = t::request({{"nvidia.com/gpu", "1"}, {"gpusched.io/gpu-milli", "500"}});
  const auto bare = t::request({{"gpusched.io/gpu-milli", "500"}});
  ResourceTable res;
  auto written = [&](const TaskRequest& r) {
    std::string s;
    for (const auto& [k, v] : format_requests(r, res)) s += k + "=" + v + ";";
    return s;
  };
  CHECK_THAT(written(named), Catch::Contains("nvidia.com/gpu=1;"));
  CHECK_THAT(written(bare), !Catch::Contains("nvidia.com/gpu="));
  CHECK(t::request({{"nvidia.com/gpu", "1"}, {"gpusched.io/gpu-milli", "500"}}).gpu.names_gpu);
}

TEST_CASE("F3: resource-quota charges a HAMi job its nvidia.com/gpu", "[findings][h7][quota][scenario]") {
  const std::string jobs =
      R"({"id": "hami8", "submit_time": 0, "duration": 100, "queue": "b", "requests": {"cpu": "1", "memory": "1Gi",
          "nvidia.com/gpu": 8, "nvidia.com/gpumem": 4096, "nvidia.com/gpucores": 50}},
         {"id": "hami1", "submit_time": 1, "duration": 100, "queue": "b", "requests": {"cpu": "1", "memory": "1Gi",
          "nvidia.com/gpu": 1, "nvidia.com/gpumem": 4096, "nvidia.com/gpucores": 10}},
         {"id": "hami7", "submit_time": 2, "duration": 100, "queue": "b", "requests": {"cpu": "1", "memory": "1Gi",
          "nvidia.com/gpu": 7, "nvidia.com/gpumem": 4096, "nvidia.com/gpucores": 10}})";
  const std::string profile =
      R"({"name": "q", "extends": "first-fit", "pre_filter": [{"name": "resource-quota", "args": {"quotas": {"b": {"requests.nvidia.com/gpu": 7}}}}]})";
  const auto r = scenario::run(scenario::parse_scenario(std::string_view(h200_doc(8, profile, jobs)), "f3.json", "."));
  const auto rows = r.jobs();
  // 8 > 7: refused at submission (it was admitted before the fix).
  CHECK(row(rows, "hami8").state == "failed");
  CHECK_THAT(row(rows, "hami8").reason, Catch::Contains("exceeded quota") && Catch::Contains("requests.nvidia.com/gpu=8"));
  CHECK(row(rows, "hami1").state == "completed");
  // 1 + 7 > 7 while hami1 holds its charge.
  CHECK(row(rows, "hami7").state == "failed");
  CHECK_THAT(row(rows, "hami7").reason, Catch::Contains("used: requests.nvidia.com/gpu=1"));
}
