// Device partitions end to end: scenario JSON -> ClusterState + policies::Scheduler (or
// scenario::run) -> the grants, layouts and slices the references (mig.md, sharing.md, tpu.md)
// say a cluster hands out.
#include <catch2/catch.hpp>

#include <algorithm>
#include <bit>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <gpusched/policies/framework/registry.hpp>
#include <gpusched/policies/framework/scheduler.hpp>
#include <gpusched/rng.hpp>
#include <gpusched/scenario/scenario.hpp>
#include <gpusched/tpu.hpp>
#include <gpusched/tpu_slice.hpp>

#include "support/support.hpp"

using namespace gpusched;
using namespace gpusched::scenario;
namespace t = gpusched::test;

namespace {

/// A scenario with single nodes, or with node groups (see test::scenario_doc).
std::string doc(std::string_view nodes, std::string_view jobs, std::string_view extra = "") {
  return t::scenario_doc("devices", "nodes", nodes, jobs, extra);
}
std::string group_doc(std::string_view groups, std::string_view jobs, std::string_view extra = "") {
  return t::scenario_doc("devices", "node_groups", groups, jobs, extra);
}

/// A profile whose device selection puts new MIG instances at `mig_start`.
std::string mig_start_profile(std::string_view mig_start, std::string_view plugin = "gpu-first-fit") {
  return R"("profile": {"device_select": {"name": ")" + std::string(plugin) + R"(", "args": {"mig_start": ")" +
         std::string(mig_start) + R"("}}},)";
}

/// A job line: one task (unless `tasks` > 1) asking for `requests` (the inside of the object).
std::string job(std::string_view id, std::string_view requests, int tasks = 1) {
  std::string s = R"({"id": ")" + std::string(id) + R"(", "submit_time": 0, )";
  if (tasks > 1) s += R"("tasks": )" + std::to_string(tasks) + ", ";
  s += R"("requests": {"cpu": "1", )";
  s += requests;
  s += "}}";
  return s;
}

/// A scenario parsed from text, its cluster and its scheduler, driven job by job.
struct Bench {
  Scenario sc;
  ClusterState cluster;
  policies::Scheduler scheduler;
  std::map<std::string, std::vector<TaskPlacement>> running;

  explicit Bench(const std::string& text)
      : sc(parse_scenario(std::string_view(text), "test.json", ".")),
        cluster(sc.catalog, sc.resources, sc.nodes),
        scheduler(sc.profile, policies::Registry::with_builtins(), sc.seed) {
    cluster.set_device_options(sc.devices);
  }

  JobId id(std::string_view name) const {
    for (std::size_t i = 0; i < sc.jobs.size(); ++i) {
      if (sc.jobs[i].name == name) return JobId{static_cast<std::uint32_t>(i)};
    }
    FAIL("no job named " << name);
    return JobId{};
  }
  const JobSpec& spec(std::string_view name) const { return sc.jobs[id(name).value]; }
  NodeId node(std::string_view name) const {
    const auto n = cluster.find_node(name);
    REQUIRE(n.has_value());
    return *n;
  }

  /// Schedules the named job (on `only` when given); on success remembers its placements.
  Status place(std::string_view name, std::vector<NodeId> only = {}) {
    std::vector<TaskPlacement> out;
    const Status s = scheduler.schedule(cluster, spec(name), id(name), out, only);
    if (s.ok()) running[std::string(name)] = out;
    const auto bad = t::cluster_violation(cluster);
    INFO(bad);
    CHECK(bad.empty());
    return s;
  }
  bool placed(std::string_view name) { return place(name).ok(); }
  const std::vector<TaskPlacement>& where(std::string_view name) const {
    const auto it = running.find(std::string(name));
    REQUIRE(it != running.end());
    return it->second;
  }
  const GpuGrant& grant(std::string_view name, std::size_t task = 0, std::size_t k = 0) const {
    const auto& w = where(name);
    REQUIRE(task < w.size());
    REQUIRE(k < w[task].gpus.size());
    return w[task].gpus[k];
  }
  /// Releases every task of the named job.
  void finish(std::string_view name) {
    const auto it = running.find(std::string(name));
    REQUIRE(it != running.end());
    for (const auto& p : it->second) cluster.release(spec(name).request, p);
    running.erase(it);
    const auto bad = t::cluster_violation(cluster);
    INFO(bad);
    CHECK(bad.empty());
  }
  const GpuState& gpu(std::string_view node_name, std::size_t index) const { return cluster.gpus(node(node_name))[index]; }
  const MigGpuState& mig(std::string_view node_name, std::size_t index = 0) const {
    const auto& g = gpu(node_name, index);
    REQUIRE(g.partition == GpuPartition::kMig);
    return cluster.mig_state(g);
  }
  int profile(std::string_view node_name, std::string_view mig_profile) const {
    const int p = cluster.mig_geometry(gpu(node_name, 0)).find_profile(mig_profile);
    REQUIRE(p >= 0);
    return p;
  }
  /// The memory a MIG profile grants on the node's GPU 0, from the catalog's geometry (issue 15: the
  /// `nvidia-smi mig -lgip` figure where the catalog has one, e.g. 3g.40gb on H100 = 40448 MiB, not 40 x 1024).
  int profile_memory_mib(std::string_view node_name, std::string_view mig_profile) const {
    const auto& geo = cluster.mig_geometry(gpu(node_name, 0));
    return static_cast<int>(geo.profiles[static_cast<std::size_t>(profile(node_name, mig_profile))].memory_mib);
  }
  /// The MIG instances of a GPU as (profile name, start), in start order.
  std::vector<std::pair<std::string, int>> layout(std::string_view node_name, std::size_t index = 0) const {
    const auto& geo = cluster.mig_geometry(gpu(node_name, index));
    std::vector<std::pair<std::string, int>> out;
    for (const auto& i : mig(node_name, index).layout.instances()) {
      out.emplace_back(geo.profiles[static_cast<std::size_t>(i.profile)].name, i.start);
    }
    return out;
  }
};

using Layout = std::vector<std::pair<std::string, int>>;

constexpr std::string_view kH100Mig4g3g =
    R"({"name": "h", "cpu": 32, "memory": "128Gi", "gpus": 1, "gpu_model": "H100-80GB",
        "gpu_partition": {"mode": "mig", "layout": ["4g.40gb", "3g.40gb"]}})";

constexpr std::string_view kH100Dynamic =
    R"({"name": "h", "cpu": 32, "memory": "128Gi", "gpus": 1, "gpu_model": "H100-80GB",
        "gpu_partition": {"mode": "mig", "dynamic": true}})";

std::string mig_job(std::string_view id, std::string_view profile, int count = 1, int tasks = 1) {
  return job(id, R"("nvidia.com/mig-)" + std::string(profile) + R"(": )" + std::to_string(count), tasks);
}

}  // namespace

// ---------------------------------------------------------------- MIG, static layouts

TEST_CASE("A 3g request on a static 4g+3g H100 takes the 3g instance at the start the layout gave it",
          "[scenario][devices][mig]") {
  Bench b(doc(kH100Mig4g3g, mig_job("a", "3g.40gb")));
  CHECK(b.layout("h") == Layout{{"4g.40gb", 0}, {"3g.40gb", 4}});
  REQUIRE(b.placed("a"));
  const auto& g = b.grant("a");
  CHECK(g.index == 0);
  CHECK(g.mig_profile == b.profile("h", "3g.40gb"));
  CHECK(g.mig_start == 4);
  CHECK_FALSE(g.mig_created);
  CHECK(g.mig_destroyed == 0);
  CHECK(g.milli == 1000 * 3 / 7);
  // Usable memory (issue 15): the grant is the profile's catalog memory (lgip figure), no longer 40 x 1024.
  CHECK(g.memory_mib == b.profile_memory_mib("h", "3g.40gb"));
  CHECK(g.memory_mib > 0);
  CHECK(g.memory_mib <= 40960);
  CHECK(b.mig("h").busy == (1U << 4));
  CHECK(b.cluster.totals().mig_reconfigurations == 0);
}

TEST_CASE("On a static 4g+3g GPU a second 3g waits while a 4g still fits", "[scenario][devices][mig]") {
  Bench b(doc(kH100Mig4g3g, mig_job("a", "3g.40gb") + "," + mig_job("b", "3g.40gb") + "," + mig_job("c", "4g.40gb")));
  REQUIRE(b.placed("a"));
  const auto generation = b.cluster.generation();
  CHECK_FALSE(b.placed("b"));
  CHECK(b.cluster.generation() == generation);   // a failed attempt changes nothing
  REQUIRE(b.placed("c"));
  CHECK(b.grant("c").mig_start == 0);
  CHECK(b.grant("c").mig_profile == b.profile("h", "4g.40gb"));
  CHECK(b.layout("h") == Layout{{"4g.40gb", 0}, {"3g.40gb", 4}});   // static: never repartitioned
  b.finish("a");
  CHECK(b.placed("b"));
  CHECK(b.grant("b").mig_start == 4);
}

TEST_CASE("A 7g request never fits a static 4g+3g GPU, even when it is idle", "[scenario][devices][mig]") {
  Bench b(doc(kH100Mig4g3g, mig_job("whole", "7g.80gb")));
  CHECK_FALSE(b.cluster.fits_empty(b.node("h"), b.spec("whole").request));
  CHECK_FALSE(b.placed("whole"));
  CHECK(b.layout("h") == Layout{{"4g.40gb", 0}, {"3g.40gb", 4}});
  CHECK(t::cluster_empty(b.cluster));
}

TEST_CASE("A static layout of {profile, start} objects is built at exactly those starts", "[scenario][devices][mig]") {
  const std::string node = R"({"name": "h", "cpu": 32, "memory": "128Gi", "gpus": 2, "gpu_model": "H100-80GB",
      "gpu_partition": {"mode": "mig", "layout": [{"profile": "2g.20gb", "start": 4}, {"profile": "3g.40gb", "start": 0},
                                                  {"profile": "1g.20gb", "start": 6}]}})";
  Bench b(doc(node, mig_job("three", "3g.40gb") + "," + mig_job("two", "2g.20gb", 2) + "," + mig_job("one", "1g.20gb")));
  for (std::size_t g = 0; g < 2; ++g) CHECK(b.layout("h", g) == Layout{{"3g.40gb", 0}, {"2g.20gb", 4}, {"1g.20gb", 6}});
  REQUIRE(b.placed("three"));
  CHECK(b.grant("three").mig_start == 0);
  REQUIRE(b.placed("two"));   // one 2g per GPU: the task spans both GPUs
  CHECK(b.grant("two", 0, 0).mig_start == 4);
  CHECK(b.grant("two", 0, 1).mig_start == 4);
  CHECK(b.grant("two", 0, 0).index != b.grant("two", 0, 1).index);
  REQUIRE(b.placed("one"));
  CHECK(b.grant("one").mig_start == 6);
  // Usable memory (issue 15): the 1g.20gb instance's catalog memory (lgip figure), no longer 20 x 1024.
  CHECK(b.grant("one").memory_mib == b.profile_memory_mib("h", "1g.20gb"));
  CHECK(b.grant("one").memory_mib > 0);
  CHECK(b.grant("one").memory_mib <= 20480);
}

TEST_CASE("A static layout written 3g first still fits the 4g that only starts at 0", "[scenario][devices][mig]") {
  const std::string node = R"({"name": "h", "cpu": 32, "memory": "128Gi", "gpus": 1, "gpu_model": "H100-80GB",
      "gpu_partition": {"mode": "mig", "layout": ["3g.40gb", "4g.40gb"]}})";
  Bench b(doc(node, mig_job("four", "4g.40gb")));
  CHECK(b.layout("h") == Layout{{"4g.40gb", 0}, {"3g.40gb", 4}});
  REQUIRE(b.placed("four"));
  CHECK(b.grant("four").mig_start == 0);
}

// ---------------------------------------------------------------- MIG, single strategy

TEST_CASE("A single-strategy node of seven 1g instances advertises nvidia.com/gpu 7 per GPU", "[scenario][devices][mig]") {
  const std::string node = R"({"name": "s", "cpu": 32, "memory": "128Gi", "gpus": 2, "gpu_model": "H100-80GB",
      "gpu_partition": {"mode": "mig", "strategy": "single",
                        "layout": ["1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb"]}})";
  Bench b(doc(node, job("two", R"("nvidia.com/gpu": 2)") + "," + job("twelve", R"("nvidia.com/gpu": 12)") + "," +
                        job("one", R"("nvidia.com/gpu": 1)")));
  CHECK(b.sc.nodes[0].labels.at("nvidia.com/mig.strategy") == "single");
  CHECK(b.cluster.node(b.node("s")).whole_units_free == 14);
  CHECK(b.mig("s", 0).layout.instances().size() == 7);
  REQUIRE(b.placed("two"));
  const auto& w = b.where("two");
  REQUIRE(w.size() == 1);
  REQUIRE(w[0].gpus.size() == 2);
  const int one_g = b.profile("s", "1g.10gb");
  for (const auto& g : w[0].gpus) {
    CHECK(g.index == 0);
    CHECK(g.mig_profile == one_g);
    CHECK(g.milli == 1000 / 7);
    // Usable memory (issue 15): the 1g.10gb catalog memory (lgip figure), no longer 10 x 1024.
    CHECK(g.memory_mib == b.profile_memory_mib("s", "1g.10gb"));
    CHECK(g.memory_mib > 0);
    CHECK(g.memory_mib <= 10240);
  }
  CHECK(w[0].gpus[0].mig_start != w[0].gpus[1].mig_start);
  CHECK(std::popcount(static_cast<unsigned>(b.mig("s", 0).busy)) == 2);
  CHECK(b.cluster.node(b.node("s")).whole_units_free == 12);
  REQUIRE(b.placed("twelve"));
  CHECK(b.cluster.node(b.node("s")).whole_units_free == 0);
  CHECK_FALSE(b.placed("one"));
  b.finish("two");
  CHECK(b.cluster.node(b.node("s")).whole_units_free == 2);
  CHECK(b.placed("one"));
}

TEST_CASE("A MIG profile resource never lands on a single-strategy node", "[scenario][devices][mig]") {
  // Under the single strategy the device plugin advertises GIs only as nvidia.com/gpu.
  const std::string node = R"({"name": "s", "cpu": 32, "memory": "128Gi", "gpus": 1, "gpu_model": "H100-80GB",
      "gpu_partition": {"mode": "mig", "strategy": "single", "layout": ["3g.40gb", "3g.40gb"]}})";
  Bench b(doc(node, mig_job("mixed", "3g.40gb")));
  CHECK_FALSE(b.cluster.fits_empty(b.node("s"), b.spec("mixed").request));
  CHECK_FALSE(b.placed("mixed"));
  CHECK(t::cluster_empty(b.cluster));
}

// ---------------------------------------------------------------- MIG, dynamic

TEST_CASE("Dynamic MIG creates instances at legal starts and keeps them idle for reuse after the jobs end",
          "[scenario][devices][mig]") {
  Bench b(doc(kH100Dynamic, mig_job("a", "3g.40gb") + "," + mig_job("b", "3g.40gb") + "," + mig_job("c", "3g.40gb"),
              mig_start_profile("lowest")));
  CHECK(b.mig("h").layout.empty());
  REQUIRE(b.placed("a"));
  CHECK(b.grant("a").mig_created);
  CHECK(b.grant("a").mig_start == 0);
  REQUIRE(b.placed("b"));
  CHECK(b.grant("b").mig_created);
  CHECK(b.grant("b").mig_start == 4);
  CHECK(b.cluster.totals().mig_reconfigurations == 2);
  b.finish("a");
  CHECK(b.layout("h") == Layout{{"3g.40gb", 0}, {"3g.40gb", 4}});   // the GI outlives its job
  CHECK(b.mig("h").busy == (1U << 4));
  REQUIRE(b.placed("c"));
  CHECK_FALSE(b.grant("c").mig_created);   // reused, not created
  CHECK(b.grant("c").mig_destroyed == 0);
  CHECK(b.grant("c").mig_start == 0);
  CHECK(b.cluster.totals().mig_reconfigurations == 2);
}

TEST_CASE("Dynamic MIG destroys idle instances to make room but never a busy one", "[scenario][devices][mig]") {
  Bench b(doc(kH100Dynamic,
              mig_job("a", "3g.40gb") + "," + mig_job("b", "3g.40gb") + "," + mig_job("four", "4g.40gb") + "," +
                  mig_job("seven", "7g.80gb") + "," + mig_job("one", "1g.10gb"),
              mig_start_profile("lowest")));
  REQUIRE(b.placed("a"));
  REQUIRE(b.placed("b"));
  b.finish("a");   // idle 3g at 0, busy 3g at 4
  REQUIRE(b.placed("four"));   // 4g only starts at 0: the idle 3g there goes
  CHECK(b.grant("four").mig_start == 0);
  CHECK(b.grant("four").mig_created);
  CHECK(b.grant("four").mig_destroyed != 0);
  CHECK(b.cluster.totals().mig_reconfigurations == 4);   // 2 created, then 1 destroyed + 1 created
  CHECK(b.layout("h") == Layout{{"4g.40gb", 0}, {"3g.40gb", 4}});
  CHECK(b.mig("h").busy == ((1U << 0) | (1U << 4)));

  // 7g needs the whole GPU: both instances are busy, so nothing may be destroyed.
  CHECK_FALSE(b.placed("seven"));
  CHECK(b.layout("h") == Layout{{"4g.40gb", 0}, {"3g.40gb", 4}});
  CHECK(b.cluster.totals().mig_reconfigurations == 4);

  b.finish("b");   // idle 3g at 4, busy 4g at 0
  CHECK_FALSE(b.placed("seven"));   // the busy 4g still blocks it
  CHECK(b.layout("h") == Layout{{"4g.40gb", 0}, {"3g.40gb", 4}});
  REQUIRE(b.placed("one"));   // no free slice: the idle 3g is destroyed, the busy 4g stays
  CHECK(b.grant("one").mig_start == 4);
  CHECK(b.layout("h") == Layout{{"4g.40gb", 0}, {"1g.10gb", 4}});
  CHECK(b.cluster.totals().mig_reconfigurations == 6);

  b.finish("four");
  b.finish("one");
  REQUIRE(b.placed("seven"));   // everything idle: both go
  CHECK(b.layout("h") == Layout{{"7g.80gb", 0}});
  CHECK(b.cluster.totals().mig_reconfigurations == 9);
}

TEST_CASE("The mig_start argument decides mig.md rule 4: 1g,1g,2g,3g and 3g,1g,2g,1g", "[scenario][devices][mig]") {
  // Each job holds its instance; the sequence is created one job after another on one H100.
  auto run_sequence = [](std::string_view policy, const std::vector<std::string>& profiles) {
    std::string jobs;
    for (std::size_t i = 0; i < profiles.size(); ++i) {
      if (i) jobs += ",";
      jobs += mig_job(t::numbered("j", static_cast<std::int64_t>(i)), profiles[i]);
    }
    Bench b(doc(kH100Dynamic, jobs, mig_start_profile(policy)));
    std::vector<bool> ok;
    for (std::size_t i = 0; i < profiles.size(); ++i) ok.push_back(b.placed(t::numbered("j", static_cast<std::int64_t>(i))));
    return ok;
  };
  const std::vector<std::string> small_first{"1g.10gb", "1g.10gb", "2g.20gb", "3g.40gb"};
  const std::vector<std::string> large_first{"3g.40gb", "1g.10gb", "2g.20gb", "1g.10gb"};
  // The rule as written: the 3g finds no free start at 0 or 4; the other order succeeds.
  CHECK(run_sequence("highest", small_first) == std::vector<bool>{true, true, true, false});
  CHECK(run_sequence("highest", large_first) == std::vector<bool>{true, true, true, true});
  CHECK(run_sequence("best", small_first) == std::vector<bool>{true, true, true, false});
  CHECK(run_sequence("best", large_first) == std::vector<bool>{true, true, true, true});
  // Lowest-first turns it round: 1g@0, 1g@1, 2g@2 leave 4..7 for the 3g; 3g@0 + 1g@4 leave no 2g start.
  CHECK(run_sequence("lowest", small_first) == std::vector<bool>{true, true, true, true});
  CHECK(run_sequence("lowest", large_first) == std::vector<bool>{true, true, false, true});
}

TEST_CASE("A MIG gang that only half fits leaves the MIG layout exactly as before", "[scenario][devices][mig]") {
  const std::string jobs = mig_job("p", "3g.40gb") + "," + mig_job("q", "1g.10gb") + "," +
                           mig_job("gang", "3g.40gb", 1, 2) + "," + mig_job("solo", "3g.40gb");
  Bench b(doc(kH100Dynamic, jobs, mig_start_profile("lowest")));
  REQUIRE(b.spec("gang").tasks == 2);
  REQUIRE(b.spec("gang").min_available == 2);
  REQUIRE(b.placed("p"));   // 3g at 0, busy
  REQUIRE(b.placed("q"));   // 1g at 4
  b.finish("q");            // idle 1g at 4
  const auto before = b.mig("h").layout.instances();
  const auto busy_before = b.mig("h").busy;
  const auto reconfigurations = b.cluster.totals().mig_reconfigurations;
  const auto gpu_before = b.gpu("h", 0);
  // Task 1 destroys the idle 1g and creates a 3g at 4; task 2 finds no room: all undone.
  CHECK_FALSE(b.placed("gang"));
  CHECK(b.mig("h").layout.instances() == before);
  CHECK(b.mig("h").busy == busy_before);
  CHECK(b.cluster.totals().mig_reconfigurations == reconfigurations);
  CHECK(b.gpu("h", 0).milli_free == gpu_before.milli_free);
  CHECK(b.gpu("h", 0).memory_free_mib == gpu_before.memory_free_mib);
  CHECK(b.gpu("h", 0).tasks == gpu_before.tasks);
  CHECK(b.cluster.totals().tasks == 1);
  // The same single task still takes the same way in.
  REQUIRE(b.placed("solo"));
  CHECK(b.grant("solo").mig_start == 4);
  CHECK(b.grant("solo").mig_destroyed != 0);
}

// ---------------------------------------------------------------- MIG, property

namespace {

/// Checks every MIG GPU: its layout is legal (starts, no overlap, compute, counts), its busy
/// instances are exactly the ones running tasks hold, with the profiles they were granted.
std::string mig_violation(const ClusterState& c, const std::map<std::string, std::pair<TaskRequest, std::vector<TaskPlacement>>>& running) {
  std::map<std::pair<std::uint32_t, std::uint16_t>, std::vector<GpuGrant>> held;
  for (const auto& [name, r] : running) {
    for (const auto& p : r.second) {
      for (const auto& g : p.gpus) held[{p.node.value, g.index}].push_back(g);
    }
  }
  for (std::uint32_t n = 0; n < c.node_count(); ++n) {
    const auto gpus = c.gpus(NodeId{n});
    for (std::uint16_t i = 0; i < gpus.size(); ++i) {
      const auto& gs = gpus[i];
      if (gs.partition != GpuPartition::kMig) continue;
      const std::string where = c.spec(NodeId{n}).name + " GPU " + std::to_string(i) + ": ";
      const auto& geo = c.mig_geometry(gs);
      const auto& m = c.mig_state(gs);
      MigLayout rebuilt;
      int compute = 0;
      std::uint32_t slices = 0;
      std::map<int, int> count;
      for (const auto& inst : m.layout.instances()) {
        const auto& prof = geo.profiles[static_cast<std::size_t>(inst.profile)];
        if (std::find(prof.starts.begin(), prof.starts.end(), inst.start) == prof.starts.end()) return where + prof.name + " at an illegal start";
        const std::uint32_t mask = ((1U << prof.memory_slices) - 1U) << inst.start;
        if (inst.start + prof.memory_slices > geo.memory_slices) return where + prof.name + " past the last memory slice";
        if (slices & mask) return where + "overlapping instances";
        slices |= mask;
        compute += prof.compute_slices;
        if (++count[inst.profile] > prof.max_count) return where + "more " + prof.name + " than max_count";
        if (!rebuilt.can_place(geo, inst.profile, inst.start)) return where + "layout not rebuildable";
        rebuilt.place(geo, inst.profile, inst.start);
      }
      if (compute > geo.compute_slices) return where + "more compute slices than the GPU has";
      std::uint8_t expect_busy = 0;
      std::int32_t milli = 0;
      std::int64_t memory = 0;
      const auto it = held.find({n, i});
      const std::size_t grants = it == held.end() ? 0 : it->second.size();
      if (it != held.end()) {
        for (const auto& g : it->second) {
          const auto found = std::find_if(m.layout.instances().begin(), m.layout.instances().end(),
                                          [&](const MigInstance& inst) { return inst.start == g.mig_start; });
          if (found == m.layout.instances().end() || found->profile != g.mig_profile) return where + "a busy instance was destroyed or replaced";
          if (expect_busy & (1U << g.mig_start)) return where + "one instance granted twice";
          expect_busy = static_cast<std::uint8_t>(expect_busy | (1U << g.mig_start));
          milli += g.milli;
          memory += g.memory_mib;
        }
      }
      if (m.busy != expect_busy) return where + "busy mask differs from the running grants";
      if (gs.tasks != grants) return where + "task count differs from the running grants";
      if (gs.milli_free != kMilliPerGpu - milli || gs.memory_free_mib != gs.memory_mib - memory) return where + "free share differs from the running grants";
    }
  }
  return {};
}

int destroyed_count(std::uint32_t code) {
  int n = 0;
  for (; code != 0; code >>= 4) n += (code & 0xFU) != 0 ? 1 : 0;
  return n;
}

}  // namespace

TEST_CASE("Random MIG jobs on dynamic A100 and H100 nodes keep every layout legal and every busy instance",
          "[scenario][devices][mig][property]") {
  const std::vector<std::string> profiles{"1g.10gb", "1g.10gb", "1g.10gb+me", "1g.20gb", "2g.20gb", "2g.20gb",
                                          "3g.40gb", "3g.40gb", "4g.40gb", "7g.80gb"};
  const std::string nodes = R"(
      {"name": "a0", "cpu": 64, "memory": "256Gi", "gpus": 2, "gpu_model": "A100-80GB", "gpu_partition": {"mode": "mig", "dynamic": true}},
      {"name": "h0", "cpu": 64, "memory": "256Gi", "gpus": 2, "gpu_model": "H100-80GB", "gpu_partition": {"mode": "mig", "dynamic": true}},
      {"name": "a1", "cpu": 64, "memory": "256Gi", "gpus": 1, "gpu_model": "A100-80GB", "gpu_partition": {"mode": "mig", "dynamic": true}})";
  const std::vector<std::pair<std::string, std::string>> selects{
      {"gpu-first-fit", "best"}, {"gpu-first-fit", "lowest"}, {"gpu-spread", "highest"}, {"gpu-binpack", "best"}, {"gpu-random", "lowest"}};
  for (std::size_t variant = 0; variant < selects.size(); ++variant) {
    const auto& [plugin, start] = selects[variant];
    INFO(plugin << " mig_start " << start);
    Rng rng(20261122 + variant);
    struct Planned { std::string id; std::int64_t submit, duration; };
    std::vector<Planned> planned;
    std::string jobs;
    std::int64_t clock = 0;
    for (int i = 0; i < 250; ++i) {
      clock += static_cast<std::int64_t>(rng.below(4));
      const auto& prof = profiles[rng.below(profiles.size())];
      const int count = rng.below(4) == 0 ? 2 : 1;
      const int tasks = rng.below(6) == 0 ? 2 : 1;
      const auto duration = 5 + static_cast<std::int64_t>(rng.below(60));
      const std::string id = t::numbered("m", i);
      planned.push_back({id, clock, duration});
      jobs += (i ? "," : "");
      jobs += R"({"id": ")" + id + R"(", "submit_time": )" + std::to_string(clock) + R"(, "duration": )" + std::to_string(duration) +
              R"(, "tasks": )" + std::to_string(tasks) + R"(, "requests": {"cpu": "1", "nvidia.com/mig-)" + prof + R"(": )" +
              std::to_string(count) + "}}";
    }
    Bench b(doc(nodes, jobs, mig_start_profile(start, plugin)));
    REQUIRE(b.sc.jobs.size() == planned.size());

    std::map<std::string, std::pair<TaskRequest, std::vector<TaskPlacement>>> running;
    std::multimap<std::int64_t, std::string> finishes;
    std::vector<std::size_t> waiting;
    std::int64_t created = 0, destroyed = 0, failures = 0, placed = 0;
    auto check = [&](const char* after) {
      INFO("after " << after);
      const auto bad = t::cluster_violation(b.cluster);
      INFO(bad);
      REQUIRE(bad.empty());
      const auto mig = mig_violation(b.cluster, running);
      INFO(mig);
      REQUIRE(mig.empty());
      REQUIRE(b.cluster.totals().mig_reconfigurations == created + destroyed);
    };
    std::size_t next = 0;
    while (next < planned.size() || !finishes.empty()) {
      const std::int64_t now = std::min(next < planned.size() ? planned[next].submit : std::numeric_limits<std::int64_t>::max(),
                                        finishes.empty() ? std::numeric_limits<std::int64_t>::max() : finishes.begin()->first);
      while (!finishes.empty() && finishes.begin()->first == now) {
        const auto name = finishes.begin()->second;
        finishes.erase(finishes.begin());
        const auto& [request, placements] = running.at(name);
        for (const auto& p : placements) b.cluster.release(request, p);
        running.erase(name);
        check("release");
      }
      while (next < planned.size() && planned[next].submit == now) waiting.push_back(next++);
      std::vector<std::size_t> still;
      for (const auto j : waiting) {
        const auto& spec = b.sc.jobs[j];
        std::vector<TaskPlacement> out;
        const Status s = b.scheduler.schedule(b.cluster, spec, JobId{static_cast<std::uint32_t>(j)}, out);
        if (s.ok()) {
          ++placed;
          REQUIRE(out.size() == static_cast<std::size_t>(spec.tasks));
          for (const auto& p : out) {
            REQUIRE(p.gpus.size() == static_cast<std::size_t>(spec.request.gpu.count));
            for (const auto& g : p.gpus) {
              created += g.mig_created ? 1 : 0;
              destroyed += destroyed_count(g.mig_destroyed);
            }
          }
          running[spec.name] = {spec.request, out};
          finishes.emplace(now + planned[j].duration, spec.name);
        } else {
          ++failures;
          still.push_back(j);
        }
        check(s.ok() ? "schedule" : "failed schedule");
      }
      waiting = still;
      if (next >= planned.size() && finishes.empty()) break;
    }
    CHECK(placed > 100);
    CHECK(failures > 0);     // there was contention
    CHECK(created > 0);
    CHECK(destroyed > 0);    // and repartitioning
    for (auto& [name, r] : running) for (const auto& p : r.second) b.cluster.release(r.first, p);
    running.clear();
    check("the end");
    CHECK(t::cluster_empty(b.cluster));
  }
}

// ---------------------------------------------------------------- vGPU

TEST_CASE("A vGPU GPU hosts at most max_per_gpu vGPUs of one profile and takes another only once empty",
          "[scenario][devices][vgpu]") {
  const std::string node = R"({"name": "v", "cpu": 64, "memory": "256Gi", "gpus": 2, "gpu_model": "A100-40GB",
                               "gpu_partition": {"mode": "vgpu"}})";
  std::string jobs;
  for (int i = 1; i <= 5; ++i) jobs += job(t::numbered("ten", i), R"("nvidia.com/vgpu-A100-10C": 1)") + ",";
  for (int i = 1; i <= 3; ++i) jobs += job(t::numbered("twenty", i), R"("nvidia.com/vgpu-A100-20C": 1)") + (i < 3 ? "," : "");
  Bench b(doc(node, jobs));
  const auto& model = b.cluster.catalog()[b.gpu("v", 0).model];
  const int ten = model.find_vgpu("A100-10C"), twenty = model.find_vgpu("A100-20C");
  REQUIRE(model.vgpu[static_cast<std::size_t>(ten)].max_per_gpu == 4);
  REQUIRE(model.vgpu[static_cast<std::size_t>(twenty)].max_per_gpu == 2);

  REQUIRE(b.placed("ten1"));
  CHECK(b.grant("ten1").index == 0);
  CHECK(b.grant("ten1").vgpu_profile == ten);
  CHECK(b.grant("ten1").memory_mib == 10240);
  CHECK(b.grant("ten1").milli == 250);
  REQUIRE(b.placed("twenty1"));
  CHECK(b.grant("twenty1").index == 1);   // GPU 0 holds 10C vGPUs
  REQUIRE(b.placed("twenty2"));
  CHECK(b.grant("twenty2").index == 1);
  CHECK_FALSE(b.placed("twenty3"));       // GPU 1 is full, GPU 0 runs another profile
  for (const char* name : {"ten2", "ten3", "ten4"}) {
    REQUIRE(b.placed(name));
    CHECK(b.grant(name).index == 0);
  }
  CHECK(b.gpu("v", 0).tasks == 4);
  CHECK_FALSE(b.placed("ten5"));          // GPU 0 at max_per_gpu, GPU 1 runs 20C
  for (const char* name : {"ten1", "ten2", "ten3", "ten4"}) b.finish(name);
  CHECK(b.gpu("v", 0).vgpu_profile == -1);
  REQUIRE(b.placed("twenty3"));           // the emptied GPU takes the other profile
  CHECK(b.grant("twenty3").index == 0);
  CHECK(b.gpu("v", 0).vgpu_profile == twenty);
}

// Issue 15: the catalog holds usable memory (L4: 23034 MiB) while NVIDIA states vGPU framebuffers
// nominally (L4-24C = 24576 MiB): a full GPU's vGPUs never take more memory than the GPU has.
TEST_CASE("A GPU full of vGPUs of any profile never grants more memory than the GPU's usable memory",
          "[scenario][devices][vgpu]") {
  const std::string node = R"({"name": "v", "cpu": 64, "memory": "256Gi", "gpus": 1, "gpu_model": "L4",
                               "gpu_partition": {"mode": "vgpu"}})";
  const auto catalog = GpuCatalog::builtin();
  const auto& l4 = catalog[catalog.require("L4", {})];
  REQUIRE_FALSE(l4.vgpu.empty());
  bool some_nominal_above_usable = false;
  for (const auto& v : l4.vgpu) {
    INFO(v.name);
    std::string jobs;
    for (int i = 1; i <= v.max_per_gpu; ++i) {
      jobs += (i > 1 ? "," : "") + job(t::numbered("j", i), R"("nvidia.com/vgpu-)" + v.name + R"(": 1)");
    }
    Bench b(doc(node, jobs));
    const auto& g = b.gpu("v", 0);
    std::int64_t granted = 0;
    for (int i = 1; i <= v.max_per_gpu; ++i) {
      REQUIRE(b.placed(t::numbered("j", i)));
      const auto& grant = b.grant(t::numbered("j", i));
      CHECK(grant.memory_mib <= v.framebuffer_mib);
      CHECK(grant.memory_mib > 0);
      granted += grant.memory_mib;
    }
    some_nominal_above_usable |= v.framebuffer_mib * v.max_per_gpu > g.memory_mib;
    CHECK(granted <= g.memory_mib);
    CHECK(g.memory_free_mib >= 0);
    CHECK(t::cluster_violation(b.cluster).empty());
  }
  CHECK(some_nominal_above_usable);   // the case this test is about exists in the catalog
}

TEST_CASE("A configured vgpu_profile fixes the GPU to that profile even when it is empty", "[scenario][devices][vgpu]") {
  const std::string node = R"({"name": "f", "cpu": 64, "memory": "256Gi", "gpus": 1, "gpu_model": "A100-40GB",
                               "gpu_partition": {"mode": "vgpu", "vgpu_profile": "A100-20C"}})";
  Bench b(doc(node, job("ten", R"("nvidia.com/vgpu-A100-10C": 1)") + "," + job("twenty", R"("nvidia.com/vgpu-A100-20C": 1)")));
  CHECK_FALSE(b.cluster.fits_empty(b.node("f"), b.spec("ten").request));
  CHECK_FALSE(b.placed("ten"));
  REQUIRE(b.placed("twenty"));
  b.finish("twenty");
  CHECK(b.gpu("f", 0).vgpu_profile == b.cluster.catalog()[b.gpu("f", 0).model].find_vgpu("A100-20C"));
  CHECK_FALSE(b.placed("ten"));
}

// ---------------------------------------------------------------- vendor resource names (issue 15)

// A model's vendor decides the resource it is requested by: amd.com/gpu for MI300X, nvidia.com/gpu
// for NVIDIA models. Each lands only on its own vendor's GPUs.
TEST_CASE("amd.com/gpu lands on an MI300X node and nvidia.com/gpu never does", "[scenario][devices][vendor]") {
  const std::string nodes = R"(
      {"name": "nv", "cpu": 64, "memory": "256Gi", "gpus": 8, "gpu_model": "A100-80GB"},
      {"name": "amd", "cpu": 64, "memory": "256Gi", "gpus": 8, "gpu_model": "MI300X"})";
  Bench b(doc(nodes, job("amd2", R"("amd.com/gpu": 2)") + "," + job("nv2", R"("nvidia.com/gpu": 2)") + "," +
                         job("amd9", R"("amd.com/gpu": 9)")));
  const auto& catalog = b.cluster.catalog();
  REQUIRE(catalog[catalog.require("MI300X", {})].resource_name == "amd.com/gpu");
  CHECK(b.spec("amd2").request.gpu.mode == GpuMode::kWhole);
  CHECK(b.spec("amd2").request.gpu.count == 2);
  CHECK(b.spec("amd2").request.gpu.resource_name == "amd.com/gpu");
  CHECK(b.spec("amd2").request.extended.empty());   // no longer an extended resource
  CHECK_FALSE(b.cluster.fits_empty(b.node("nv"), b.spec("amd2").request));
  CHECK(b.cluster.fits_empty(b.node("amd"), b.spec("amd2").request));
  CHECK_FALSE(b.cluster.fits_empty(b.node("amd"), b.spec("nv2").request));
  CHECK(b.cluster.fits_empty(b.node("nv"), b.spec("nv2").request));
  REQUIRE(b.placed("amd2"));
  CHECK(b.where("amd2")[0].node == b.node("amd"));
  CHECK(b.where("amd2")[0].gpus.size() == 2);
  REQUIRE(b.placed("nv2"));
  CHECK(b.where("nv2")[0].node == b.node("nv"));
  CHECK_FALSE(b.placed("amd9"));   // more than an MI300X node has; the NVIDIA node's 8 free GPUs do not count
  // The request is written back under its own name.
  bool amd_written = false;
  for (const auto& [k, v] : format_requests(b.spec("amd2").request, b.sc.resources)) {
    CHECK(k != "nvidia.com/gpu");
    amd_written = amd_written || (k == "amd.com/gpu" && v == "2");
  }
  CHECK(amd_written);
}

TEST_CASE("With only NVIDIA nodes an amd.com/gpu job never places", "[scenario][devices][vendor]") {
  const std::string nodes = R"({"name": "nv", "cpu": 64, "memory": "256Gi", "gpus": 8, "gpu_model": "H100-80GB"})";
  Bench b(doc(nodes, job("amd1", R"("amd.com/gpu": 1)")));
  CHECK_FALSE(b.cluster.fits_empty(b.node("nv"), b.spec("amd1").request));
  CHECK_FALSE(b.placed("amd1"));
  CHECK(t::cluster_empty(b.cluster));
}

// ---------------------------------------------------------------- passthrough

TEST_CASE("pci_passthrough GPU:2 gets two whole GPUs on a passthrough node and never a bare-metal one",
          "[scenario][devices][passthrough]") {
  const std::string nodes = R"(
      {"name": "bm", "cpu": 64, "memory": "256Gi", "gpus": 4, "gpu_model": "A100-80GB"},
      {"name": "vm", "cpu": 64, "memory": "256Gi", "gpus": 4, "gpu_model": "A100-80GB", "gpu_partition": {"mode": "passthrough"}})";
  const std::string jobs = job("p1", R"("pci_passthrough:alias": "GPU:2")") + "," +
                           job("p2", R"("pci_passthrough:alias": "A100-80GB:2")") + "," +
                           job("p3", R"("pci_passthrough:alias": "GPU:1")") + "," + job("w1", R"("nvidia.com/gpu": 4)") + "," +
                           job("w2", R"("nvidia.com/gpu": 1)");
  Bench b(doc(nodes, jobs));
  REQUIRE(b.placed("p1"));
  const auto& w = b.where("p1");
  REQUIRE(w.size() == 1);
  CHECK(w[0].node == b.node("vm"));
  REQUIRE(w[0].gpus.size() == 2);
  CHECK(w[0].gpus[0].index != w[0].gpus[1].index);
  for (const auto& g : w[0].gpus) {
    CHECK(g.milli == 1000);
    CHECK(g.memory_mib == 81920);
  }
  REQUIRE(b.placed("p2"));
  CHECK(b.where("p2")[0].node == b.node("vm"));
  CHECK_FALSE(b.placed("p3"));   // the bare-metal node is empty, but it is not a VM host
  CHECK(b.cluster.node(b.node("bm")).gpus_fully_free == 4);
  REQUIRE(b.placed("w1"));
  CHECK(b.where("w1")[0].node == b.node("bm"));
  b.finish("p1");
  b.finish("p2");
  CHECK_FALSE(b.placed("w2"));   // the passthrough GPUs are free, but not for nvidia.com/gpu
  CHECK(b.cluster.node(b.node("vm")).gpus_fully_free == 4);
}

// ---------------------------------------------------------------- time-slicing, MPS

TEST_CASE("Time-slicing with 4 replicas shares one GPU between four tasks and the fifth waits", "[scenario][devices][sharing]") {
  const std::string node = R"({"name": "ts", "cpu": 64, "memory": "256Gi", "gpus": 1, "gpu_model": "A100-80GB",
                               "gpu_partition": {"mode": "time-slicing", "replicas": 4}})";
  std::string jobs;
  for (int i = 1; i <= 5; ++i) {
    if (i > 1) jobs += ",";
    jobs += job(t::numbered("t", i), R"("nvidia.com/gpu": 1)");
  }
  Bench b(doc(node, jobs));
  for (const char* name : {"t1", "t2", "t3", "t4"}) {
    REQUIRE(b.placed(name));
    CHECK(b.grant(name).index == 0);
    CHECK(b.grant(name).milli == 250);
    CHECK(b.grant(name).memory_mib == 0);   // no memory isolation
  }
  CHECK(b.gpu("ts", 0).tasks == 4);
  CHECK(b.cluster.node(b.node("ts")).whole_units_free == 0);
  CHECK_FALSE(b.placed("t5"));
  b.finish("t2");
  CHECK(b.placed("t5"));
}

TEST_CASE("MPS with 2 replicas gives each client half of the GPU's memory and SMs", "[scenario][devices][sharing]") {
  const std::string node = R"({"name": "mps", "cpu": 64, "memory": "256Gi", "gpus": 1, "gpu_model": "A100-80GB",
                               "gpu_partition": {"mode": "mps", "replicas": 2}})";
  Bench b(doc(node, job("m1", R"("nvidia.com/gpu": 1)") + "," + job("m2", R"("nvidia.com/gpu": 1)") + "," +
                        job("m3", R"("nvidia.com/gpu": 1)")));
  for (const char* name : {"m1", "m2"}) {
    REQUIRE(b.placed(name));
    CHECK(b.grant(name).milli == 500);
    CHECK(b.grant(name).memory_mib == 81920 / 2);
  }
  CHECK(b.gpu("mps", 0).memory_free_mib == 0);
  CHECK_FALSE(b.placed("m3"));
}

// ---------------------------------------------------------------- HAMi

TEST_CASE("HAMi gpumem and gpucores with nvidia.com/gpu 2 give one share on each of two GPUs", "[scenario][devices][sharing]") {
  const std::string node = R"({"name": "hami", "cpu": 64, "memory": "256Gi", "gpus": 4, "gpu_model": "A100-80GB"})";
  const std::string jobs = job("share", R"("nvidia.com/gpu": 2, "nvidia.com/gpumem": 10000, "nvidia.com/gpucores": 30)") + "," +
                           job("allmem", R"("nvidia.com/gpu": 2, "nvidia.com/gpucores": 50)") + "," +
                           job("again", R"("nvidia.com/gpu": 2, "nvidia.com/gpumem": 10000, "nvidia.com/gpucores": 30)") + "," +
                           job("nomore", R"("nvidia.com/gpu": 1, "nvidia.com/gpucores": 10)");
  Bench b(doc(node, jobs));
  REQUIRE(b.placed("share"));
  const auto& w = b.where("share");
  REQUIRE(w[0].gpus.size() == 2);
  CHECK(w[0].gpus[0].index != w[0].gpus[1].index);
  for (const auto& g : w[0].gpus) {
    CHECK(g.milli == 300);
    CHECK(g.memory_mib == 10000);
  }
  REQUIRE(b.placed("allmem"));   // without gpumem: the whole memory of each GPU
  const auto& a = b.where("allmem");
  REQUIRE(a[0].gpus.size() == 2);
  CHECK(a[0].gpus[0].index != a[0].gpus[1].index);
  for (const auto& g : a[0].gpus) {
    CHECK(g.milli == 500);
    CHECK(g.memory_mib == 81920);
    CHECK(g.index != w[0].gpus[0].index);   // not beside the first share: its memory is taken
    CHECK(g.index != w[0].gpus[1].index);
  }
  REQUIRE(b.placed("again"));   // beside the first share
  std::set<std::uint16_t> first{w[0].gpus[0].index, w[0].gpus[1].index};
  for (const auto& g : b.where("again")[0].gpus) CHECK(first.count(g.index) == 1);
  CHECK_FALSE(b.placed("nomore"));   // every GPU's memory is taken or partly taken
}

// ---------------------------------------------------------------- TPU slices

namespace {

constexpr std::string_view kV4CarvedPool =
    R"({"name": "v4", "count": 16, "cpu": 96, "memory": "256Gi", "tpu": {"generation": "v4", "topology": "4x4x4", "provisioned": false}})";

std::string tpu_job(std::string_view id, std::string_view topology, double submit = 0, double duration = 100) {
  std::string s = R"({"id": ")" + std::string(id) + R"(", "submit_time": )" + std::to_string(submit) + R"(, "duration": )" +
                  std::to_string(duration) + R"(, "requests": {"cpu": "8", "google.com/tpu": 4, "cloud.google.com/gke-tpu-accelerator": "tpu-v4-podslice")";
  if (!topology.empty()) s += R"(, "cloud.google.com/gke-tpu-topology": ")" + std::string(topology) + R"(")";
  s += "}}";
  return s;
}

/// The hosts of `placements` form one axis-aligned block of the pool's host grid whose chips are
/// `slice` in some orientation.
bool contiguous_block(const ClusterState& c, const std::vector<TaskPlacement>& placements, std::vector<int> slice) {
  if (placements.empty()) return false;
  const auto dims = c.spec(placements[0].node).tpu.coords.size();
  std::vector<int> lo(dims, 1 << 30), hi(dims, -1);
  std::set<std::vector<int>> seen;
  for (const auto& p : placements) {
    const auto& coords = c.spec(p.node).tpu.coords;
    if (coords.size() != dims || c.spec(p.node).tpu.pool != c.spec(placements[0].node).tpu.pool) return false;
    seen.insert(coords);
    for (std::size_t d = 0; d < dims; ++d) {
      lo[d] = std::min(lo[d], coords[d]);
      hi[d] = std::max(hi[d], coords[d]);
    }
  }
  std::size_t volume = 1;
  std::vector<int> chips;
  const std::vector<int> host{2, 2, 1};   // v4 host shape
  for (std::size_t d = 0; d < dims; ++d) {
    volume *= static_cast<std::size_t>(hi[d] - lo[d] + 1);
    chips.push_back((hi[d] - lo[d] + 1) * host[d]);
  }
  std::sort(chips.begin(), chips.end());
  std::sort(slice.begin(), slice.end());
  return seen.size() == placements.size() && volume == placements.size() && chips == slice;
}

}  // namespace

TEST_CASE("A 2x2x4 v4 slice job gets 4 tasks on one contiguous block of a carved 4x4x4 pool", "[scenario][devices][tpu]") {
  Bench b(group_doc(kV4CarvedPool, tpu_job("s1", "2x2x4") + "," + tpu_job("s2", "2x2x4")));
  REQUIRE(b.sc.nodes.size() == 16);
  const auto& spec = b.spec("s1");
  CHECK(spec.tasks == 4);
  CHECK(spec.min_available == 4);
  CHECK(spec.request.tpu.hosts == 4);
  REQUIRE(b.placed("s1"));
  const auto& w = b.where("s1");
  REQUIRE(w.size() == 4);
  for (const auto& p : w) {
    CHECK(p.tpu_chips == 4);
    CHECK(b.cluster.node(p.node).tpu_chips_free == 0);
  }
  CHECK(contiguous_block(b.cluster, w, {2, 2, 4}));
  CHECK(b.cluster.totals().tpu_chips_used == 16);
  REQUIRE(b.placed("s2"));
  CHECK(contiguous_block(b.cluster, b.where("s2"), {2, 2, 4}));
  std::set<std::uint32_t> hosts;
  for (const auto* name : {"s1", "s2"}) for (const auto& p : b.where(name)) hosts.insert(p.node.value);
  CHECK(hosts.size() == 8);
}

TEST_CASE("A slice waits with nothing allocated when only 3 hosts of the pool are free", "[scenario][devices][tpu]") {
  const std::string jobs = tpu_job("a", "2x2x4") + "," + tpu_job("b", "2x2x4") + "," + tpu_job("c", "2x2x4") + "," +
                           tpu_job("single", "") + "," + tpu_job("late", "2x2x4");
  Bench b(group_doc(kV4CarvedPool, jobs));
  CHECK(b.spec("single").tasks == 1);
  for (const char* name : {"a", "b", "c", "single"}) REQUIRE(b.placed(name));
  CHECK(b.cluster.totals().tpu_chips_used == 13 * 4);
  std::vector<std::int32_t> free_before;
  for (const auto& n : b.cluster.nodes()) free_before.push_back(n.tpu_chips_free);
  const auto generation = b.cluster.generation();
  CHECK_FALSE(b.placed("late"));
  CHECK_THAT(b.scheduler.last_diagnosis(), Catch::Contains("nodes are available"));
  std::vector<std::int32_t> free_after;
  for (const auto& n : b.cluster.nodes()) free_after.push_back(n.tpu_chips_free);
  CHECK(free_after == free_before);
  CHECK(b.cluster.totals().tpu_chips_used == 13 * 4);
  CHECK(b.cluster.generation() == generation);
  b.finish("b");
  REQUIRE(b.placed("late"));
  CHECK(contiguous_block(b.cluster, b.where("late"), {2, 2, 4}));
}

TEST_CASE("A provisioned 2x2x4 pool serves only a 2x2x4 slice", "[scenario][devices][tpu]") {
  const std::string pool = R"({"name": "p", "count": 4, "cpu": 96, "memory": "256Gi", "tpu": {"generation": "v4", "topology": "2x2x4"}})";
  Bench b(group_doc(pool, tpu_job("eight", "2x2x2") + "," + tpu_job("one", "2x2x1") + "," + tpu_job("sixteen", "2x2x4")));
  CHECK(b.sc.nodes[0].labels.at("cloud.google.com/gke-tpu-topology") == "2x2x4");
  CHECK(b.spec("eight").tasks == 2);
  CHECK_FALSE(b.placed("eight"));
  CHECK_THAT(b.scheduler.last_diagnosis(), Catch::Contains("2x2x2"));
  CHECK(b.spec("one").tasks == 1);
  CHECK_FALSE(b.placed("one"));   // a one-host slice does not match the pool's topology label either
  CHECK(b.cluster.totals().tpu_chips_used == 0);
  REQUIRE(b.placed("sixteen"));
  CHECK(b.where("sixteen").size() == 4);
  CHECK(b.cluster.totals().tpu_chips_used == 16);
}

// Issue 15 (TPU): when no pool can ever serve a slice, the reason names the pools and why, instead of
// "0/0 nodes are available".
TEST_CASE("A v5e slice on a cluster with only a v4 pool says why no pool can serve it", "[scenario][devices][tpu]") {
  const std::string v5e = R"({"id": "v5e", "submit_time": 0, "duration": 100, "requests": {"cpu": "8", "google.com/tpu": 4,
      "cloud.google.com/gke-tpu-accelerator": "tpu-v5-lite-podslice", "cloud.google.com/gke-tpu-topology": "4x4"}})";
  Bench b(group_doc(kV4CarvedPool, v5e));
  CHECK_FALSE(b.placed("v5e"));
  const std::string why = b.scheduler.last_diagnosis();
  INFO(why);
  CHECK_THAT(why, Catch::Contains("other generation"));
  CHECK_THAT(why, Catch::Contains("\"v4\""));
  CHECK_THAT(why, !Catch::Contains("0/0"));
  CHECK(b.cluster.totals().tpu_chips_used == 0);
}

TEST_CASE("A slice's hosts are all released together when its job finishes in a run", "[scenario][devices][tpu]") {
  // A 2x2x4 carved pool is exactly one 2x2x4 slice: the second slice starts when the first ends.
  const std::string pool = R"({"name": "v4", "count": 4, "cpu": 96, "memory": "256Gi", "tpu": {"generation": "v4", "topology": "2x2x4", "provisioned": false}})";
  const auto sc = parse_scenario(std::string_view(group_doc(pool, tpu_job("first", "2x2x4", 0, 100) + "," +
                                                                       tpu_job("second", "2x2x4", 0, 100) + "," +
                                                                       tpu_job("host", "", 50, 10))),
                                 "test.json", ".");
  const auto r = run(sc);
  const auto jobs = r.jobs();
  REQUIRE(jobs.size() == 3);
  CHECK(jobs[0].tasks == 4);
  CHECK(jobs[0].state == "completed");
  CHECK(jobs[0].start_s.value_or(-1.0) == Approx(0.0));
  CHECK(jobs[0].end_s.value_or(-1.0) == Approx(100.0));
  CHECK(jobs[1].start_s.value_or(-1.0) == Approx(100.0));   // all 4 hosts came back at once
  CHECK(jobs[1].end_s.value_or(-1.0) == Approx(200.0));
  CHECK(jobs[1].placement == jobs[0].placement);
  CHECK(std::count(jobs[0].placement.begin(), jobs[0].placement.end(), ';') == 3);
  CHECK(jobs[2].start_s.value_or(-1.0) == Approx(200.0));   // the one-host job waited behind the queued slice
  CHECK(r.summary().completed == 3);
  CHECK(r.engine().cluster().totals().tpu_chips_used == 0);
}

// ---------------------------------------------------------------- MIG in a run

// request_class() hashes the MIG/vGPU profile and the TPU request, so the engine's skip_equivalent
// does not take the 3g's failure for the 4g's.
TEST_CASE("In a run, a 4g that fits starts while a 3g submitted before it waits", "[scenario][devices][mig]") {
  // The 3g and 4g requests differ only in their profile: a run must not take one's failure for the other's.
  const std::string jobs = R"({"id": "hold", "submit_time": 0, "duration": 100, "requests": {"cpu": "1", "nvidia.com/mig-3g.40gb": 1}},
      {"id": "three", "submit_time": 10, "duration": 100, "requests": {"cpu": "1", "nvidia.com/mig-3g.40gb": 1}},
      {"id": "four", "submit_time": 10, "duration": 100, "requests": {"cpu": "1", "nvidia.com/mig-4g.40gb": 1}})";
  const auto r = run(parse_scenario(std::string_view(doc(kH100Mig4g3g, jobs)), "test.json", "."));
  const auto rows = r.jobs();
  REQUIRE(rows.size() == 3);
  CHECK(rows[0].start_s.value_or(-1.0) == Approx(0.0));
  CHECK(rows[1].start_s.value_or(-1.0) == Approx(100.0));
  CHECK(rows[2].start_s.value_or(-1.0) == Approx(10.0));
}

// ---------------------------------------------------------------- topology

TEST_CASE("topology-manager single-numa-node rejects 4 GPUs on a 2x2 two-socket node and admits 2 on one socket",
          "[scenario][devices][topology]") {
  const std::string node = R"({"name": "n", "cpu": 32, "memory": "128Gi", "gpus": 4, "gpu_model": "A100-80GB", "sockets": 2,
                               "topology": {"nvlink": "none"}})";
  const std::string jobs = job("four", R"("nvidia.com/gpu": 4)") + "," + job("two", R"("nvidia.com/gpu": 2)") + "," +
                           job("two-b", R"("nvidia.com/gpu": 2)") + "," + job("two-c", R"("nvidia.com/gpu": 2)");
  const std::string profile =
      R"("profile": {"filter": ["node-resources-fit", {"name": "topology-manager", "args": {"policy": "single-numa-node"}}],
                     "device_select": {"name": "topology-manager", "args": {"policy": "single-numa-node"}}},)";
  Bench b(doc(node, jobs, profile));
  CHECK_FALSE(b.placed("four"));
  CHECK_THAT(b.scheduler.last_diagnosis(), Catch::Contains("single-numa-node"));
  for (const char* name : {"two", "two-b"}) {
    INFO(name);
    REQUIRE(b.placed(name));
    const auto& p = b.where(name)[0];
    REQUIRE(p.gpus.size() == 2);
    const auto socket = b.gpu("n", p.gpus[0].index).socket;
    CHECK(b.gpu("n", p.gpus[1].index).socket == socket);
    REQUIRE(p.numa.size() == 1);   // CPUs pinned beside the GPUs
    CHECK(p.numa[0].socket == socket);
    CHECK(p.numa[0].cpu_milli == 1000);
  }
  CHECK(b.grant("two").index / 2 != b.grant("two-b").index / 2);
  CHECK_FALSE(b.placed("two-c"));

  // Without the Topology Manager the same node takes the 4-GPU task.
  Bench plain(doc(node, jobs));
  CHECK(plain.placed("four"));
}

TEST_CASE("Multi-GPU tasks get the configured PCIe and cross-socket slowdowns from the node topology",
          "[scenario][devices][topology]") {
  const std::string nodes = R"(
      {"name": "hgx", "cpu": 64, "memory": "256Gi", "gpus": 8, "gpu_model": "H100-80GB", "sockets": 2, "topology": {"nvlink": "nvswitch"}},
      {"name": "pcie2s", "cpu": 64, "memory": "256Gi", "gpus": 4, "gpu_model": "A100-80GB", "sockets": 2, "topology": {"nvlink": "none"}},
      {"name": "switch", "cpu": 64, "memory": "256Gi", "gpus": 4, "gpu_model": "A100-80GB",
       "topology": {"nvlink": "none", "gpus_per_pcie_switch": 2}})";
  const std::string jobs = job("four-hgx", R"("nvidia.com/gpu": 4)") + "," + job("four-pcie", R"("nvidia.com/gpu": 4)") + "," +
                           job("two-switch", R"("nvidia.com/gpu": 2)") + "," + job("one", R"("nvidia.com/gpu": 1)");
  Bench b(doc(nodes, jobs, R"("devices": {"slowdown": {"pcie": 1.2, "cross_socket": 1.5}},)"));
  CHECK(b.sc.devices.pcie_slowdown == 1.2);
  CHECK(b.sc.devices.cross_socket_slowdown == 1.5);
  REQUIRE(b.place("four-hgx", {b.node("hgx")}).ok());
  CHECK(b.where("four-hgx")[0].slowdown == 1.0);
  REQUIRE(b.place("four-pcie", {b.node("pcie2s")}).ok());
  CHECK(b.where("four-pcie")[0].slowdown == 1.5);
  REQUIRE(b.place("two-switch", {b.node("switch")}).ok());
  const auto& p = b.where("two-switch")[0];
  CHECK(b.cluster.spec(b.node("switch")).gpus[p.gpus[0].index].pcie_switch ==
        b.cluster.spec(b.node("switch")).gpus[p.gpus[1].index].pcie_switch);
  CHECK(p.slowdown == 1.2);
  REQUIRE(b.place("one", {b.node("switch")}).ok());
  CHECK(b.where("one")[0].slowdown == 1.0);   // one GPU talks to nobody
}

TEST_CASE("topology-manager single-numa-node admits two MIG instances that one GPU of one socket holds",
          "[scenario][devices][topology][mig]") {
  // One H100 per socket: two GIs of one GPU are NUMA-local, though they are not two GPUs.
  const std::string nodes = R"(
      {"name": "single", "cpu": 32, "memory": "128Gi", "gpus": 2, "gpu_model": "H100-80GB", "sockets": 2,
       "gpu_partition": {"mode": "mig", "strategy": "single", "layout": ["1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb"]}},
      {"name": "mixed", "cpu": 32, "memory": "128Gi", "gpus": 2, "gpu_model": "H100-80GB", "sockets": 2,
       "gpu_partition": {"mode": "mig", "dynamic": true}})";
  const std::string profile =
      R"("profile": {"filter": ["node-resources-fit", {"name": "topology-manager", "args": {"policy": "single-numa-node"}}],
                     "device_select": {"name": "topology-manager", "args": {"policy": "single-numa-node"}}},)";
  Bench b(doc(nodes, job("gis", R"("nvidia.com/gpu": 2)") + "," + mig_job("mig", "1g.10gb", 2), profile));
  REQUIRE(b.gpu("single", 0).socket != b.gpu("single", 1).socket);
  REQUIRE(b.place("gis", {b.node("single")}).ok());
  CHECK(b.grant("gis", 0, 0).index == b.grant("gis", 0, 1).index);
  REQUIRE(b.place("mig", {b.node("mixed")}).ok());
  CHECK(b.grant("mig", 0, 0).index == b.grant("mig", 0, 1).index);
}

TEST_CASE("Rolling back a task that created two instances where it destroyed one restores that one",
          "[scenario][devices][mig]") {
  // Task 1 of the gang destroys the idle 4g at 0 and creates 1g at 0 and 1g at 1; task 2 takes
  // 1g at 2 and 3; task 3 finds no room. Undoing task 1 must drop both 1g before the 4g returns.
  Bench b(doc(kH100Dynamic, mig_job("p", "4g.40gb") + "," + mig_job("q", "3g.40gb") + "," + mig_job("gang", "1g.10gb", 2, 3),
              mig_start_profile("lowest")));
  REQUIRE(b.placed("p"));
  REQUIRE(b.placed("q"));
  b.finish("p");
  REQUIRE(b.layout("h") == Layout{{"4g.40gb", 0}, {"3g.40gb", 4}});
  const auto reconfigurations = b.cluster.totals().mig_reconfigurations;
  CHECK_FALSE(b.placed("gang"));
  CHECK(b.layout("h") == Layout{{"4g.40gb", 0}, {"3g.40gb", 4}});
  CHECK(b.mig("h").busy == (1U << 4));
  CHECK(b.cluster.totals().mig_reconfigurations == reconfigurations);
  CHECK(b.cluster.totals().tasks == 1);
}
