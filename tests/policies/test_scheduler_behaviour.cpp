// What the built-in policies decide on small hand-built clusters.
#include <catch2/catch.hpp>

#include <set>
#include <string>
#include <vector>

#include <gpusched/policies/framework/registry.hpp>
#include <gpusched/policies/framework/scheduler.hpp>
#include <gpusched/policies/noderesources/allocated.hpp>

#include "support/support.hpp"

using namespace gpusched;
using namespace gpusched::policies;
namespace t = gpusched::test;

namespace {

Scheduler make(const std::string& profile, std::uint64_t seed = 1) {
  return Scheduler(builtin_profile(profile), Registry::with_builtins(), seed);
}

/// Schedules `j` and returns "node[gpus]" of every task, or "" when it was not placed.
std::string place(Scheduler& s, ClusterState& c, const JobSpec& j, JobId id = JobId{0}) {
  std::vector<TaskPlacement> out;
  const Status st = s.schedule(c, j, id, out);
  if (!st.ok()) return "";
  std::string r;
  for (const auto& p : out) {
    if (!r.empty()) r += ";";
    r += c.spec(p.node).name;
    if (p.gpus.empty()) continue;
    r += "[";
    for (std::size_t g = 0; g < p.gpus.size(); ++g) {
      if (g) r += ",";
      r += std::to_string(p.gpus[g].index);
    }
    r += "]";
  }
  return r;
}

JobSpec gpu_job(const std::string& gpus, std::int32_t tasks = 1, std::int32_t min_available = -1) {
  return t::job("j", 0, 100, t::request({{"cpu", "1"}, {"memory", "1Gi"}, {"nvidia.com/gpu", gpus}}), tasks, min_available);
}
JobSpec share_job(const std::string& gib) {
  return t::job("s", 0, 100, t::request({{"cpu", "1"}, {"memory", "1Gi"}, {"aliyun.com/gpu-mem", gib}}));
}

}  // namespace

TEST_CASE("first-fit picks the first node in cluster order that fits", "[policies][behaviour]") {
  auto c = t::cluster({t::node("a", 4, 16, 1, "T4"), t::node("b", 64, 512, 8), t::node("c", 64, 512, 8)});
  auto s = make("first-fit");
  CHECK(place(s, c, gpu_job("1")) == "a[0]");
  CHECK(place(s, c, gpu_job("1")) == "b[0]");
  CHECK(place(s, c, gpu_job("1")) == "b[1]");
  // A job that node a can never hold starts the search at b.
  auto big = t::job("big", 0, 10, t::request({{"cpu", "8"}}));
  CHECK(place(s, c, big) == "b");
}

TEST_CASE("gpu-binpack picks the node and GPU with the least free GPU memory that still fits", "[policies][behaviour]") {
  // big: 2x A100-80GB, GPU 1 already holds a 20 GiB share; t4: 1x T4 (16 GiB); a10: 1x A10
  // (23028 MiB usable, issue 15: was 24 GiB nominal) with 10 GiB taken, so 12788 MiB are left.
  auto base = t::cluster({t::node("big", 32, 256, 2, "A100-80GB"), t::node("t4", 32, 256, 1, "T4"),
                          t::node("a10", 32, 256, 1, "A10")});
  const auto share20 = t::request({{"aliyun.com/gpu-mem", "20"}});
  const auto share10 = t::request({{"aliyun.com/gpu-mem", "10"}});
  base.allocate(share20, {NodeId{0}, {{1, 0, 20 * 1024}}});
  base.allocate(share10, {NodeId{2}, {{0, 0, 10 * 1024}}});

  struct Case {
    const char* gib;
    const char* expected;
  };
  for (const Case& k : {Case{"8", "a10[0]"},      // leaves 6 GiB on the A10 (T4 would leave 8)
                        Case{"12", "a10[0]"},     // 12288 of the A10's 12788 MiB left (23028 usable - 10240)
                        Case{"13", "t4[0]"},      // 13312 > 12788: the T4 (16384) it is
                        Case{"15", "t4[0]"},      // A10 too small now; T4 leaves 1 GiB
                        Case{"20", "big[1]"},     // the used A100 leaves 40 GiB, the empty one 60
                        Case{"70", "big[0]"}}) {  // only the empty A100 has 70 GiB
    INFO(k.gib << " GiB");
    auto c = base;
    auto s = make("binpack");
    CHECK(place(s, c, share_job(k.gib)) == k.expected);
    CHECK(t::cluster_violation(c).empty());
  }
}

TEST_CASE("gpu-binpack puts whole-GPU jobs on the node with the least free GPU memory", "[policies][behaviour]") {
  auto c = t::cluster({t::node("x", 64, 512, 4), t::node("y", 64, 512, 4), t::node("z", 64, 512, 4)});
  c.allocate(t::request({{"nvidia.com/gpu", "2"}}), {NodeId{1}, {{0, 1000, 81920}, {1, 1000, 81920}}});
  auto s = make("binpack");
  CHECK(place(s, c, gpu_job("2")) == "y[2,3]");
  CHECK(place(s, c, gpu_job("1")) == "x[0]");   // y is full; x and z tie, node order breaks it
  CHECK(place(s, c, gpu_job("1")) == "x[1]");
}

TEST_CASE("least-allocated spreads jobs over the emptiest nodes", "[policies][behaviour]") {
  auto c = t::cluster({t::node("n0", 32, 128, 4), t::node("n1", 32, 128, 4), t::node("n2", 32, 128, 4)});
  auto s = make("default");
  std::vector<std::string> got;
  for (int i = 0; i < 6; ++i) {
    const auto p = place(s, c, gpu_job("1"));
    got.push_back(p.substr(0, 2));
  }
  // Each round goes to the nodes with fewest jobs; among equal integer scores the default preset
  // picks at random, as kube-scheduler's selectHost does (the order was n0, n1, n2 while ties
  // went to node order).
  const std::set<std::string> all{"n0", "n1", "n2"};
  CHECK(std::set<std::string>(got.begin(), got.begin() + 3) == all);
  CHECK(std::set<std::string>(got.begin() + 3, got.end()) == all);
  for (std::uint32_t n = 0; n < 3; ++n) CHECK(c.node(NodeId{n}).tasks == 2);
}

TEST_CASE("most-allocated packs jobs onto the fullest node", "[policies][behaviour]") {
  auto c = t::cluster({t::node("n0", 32, 128, 4), t::node("n1", 32, 128, 4)});
  auto s = make("most-allocated");
  // The first job ties on the empty nodes (random, as kube-scheduler); the next ones follow it.
  const auto first = place(s, c, gpu_job("1")).substr(0, 2);
  for (int i = 0; i < 3; ++i) CHECK(place(s, c, gpu_job("1")).substr(0, 2) == first);
  CHECK(place(s, c, gpu_job("1")).substr(0, 2) == (first == "n0" ? "n1" : "n0"));
}

TEST_CASE("best-fit scores 100 x (1 - (w_cpu x cpu left / max cpu + w_gpu x gpu left / max gpu))", "[policies][behaviour]") {
  const auto c = t::cluster({t::node("big", 32, 256, 4), t::node("small", 16, 128, 2)});
  const auto j = t::job("j", 0, 1, t::request({{"cpu", "4"}, {"nvidia.com/gpu", "1"}}));
  CycleState state;
  TaskContext ctx{j, JobId{0}, 0, state};
  BestFitScore half(0.5, 0.5);
  // small: cpu (16000-4000)/32000 = 0.375, gpu (2000-1000)/4000 = 0.25 -> 100 x (1 - 0.3125)
  CHECK(half.score(c, ctx, NodeId{1}) == Approx(68.75));
  // big: cpu 28000/32000 = 0.875, gpu 3000/4000 = 0.75 -> 100 x (1 - 0.8125)
  CHECK(half.score(c, ctx, NodeId{0}) == Approx(18.75));
  BestFitScore cpu_only(1.0, 0.0);
  CHECK(cpu_only.score(c, ctx, NodeId{1}) == Approx(62.5));
  // Through the profile: the tighter node wins.
  auto c2 = c;
  auto s = make("best-fit");
  CHECK(place(s, c2, j) == "small[0]");
}

TEST_CASE("least-allocated scores the mean free share after placement", "[policies][behaviour]") {
  const auto c = t::cluster({t::node("n", 10, 100, 4)});
  const auto j = t::job("j", 0, 1, t::request({{"cpu", "5"}, {"memory", "25Gi"}, {"nvidia.com/gpu", "1"}}));
  CycleState state;
  TaskContext ctx{j, JobId{0}, 0, state};
  AllocatedScore least(AllocatedScore::Mode::kLeast, {1, 1, 1}, "least-allocated");
  AllocatedScore most(AllocatedScore::Mode::kMost, {1, 1, 1}, "most-allocated");
  // free after: cpu 0.5, memory 0.75, gpu 0.75 -> mean 2/3
  CHECK(least.score(c, ctx, NodeId{0}) == Approx(100.0 * 2.0 / 3.0));
  CHECK(most.score(c, ctx, NodeId{0}) == Approx(100.0 / 3.0));
  AllocatedScore cpu_heavy(AllocatedScore::Mode::kLeast, {2, 0, 1}, "least-allocated");
  CHECK(cpu_heavy.score(c, ctx, NodeId{0}) == Approx(100.0 * (2 * 0.5 + 0.75) / 3.0));
}

TEST_CASE("The random profile is reproducible for a seed and differs between seeds", "[policies][behaviour]") {
  std::vector<NodeSpec> nodes;
  for (int i = 0; i < 10; ++i) nodes.push_back(t::node(t::numbered("n", i), 64, 512, 8));
  auto run = [&](std::uint64_t seed) {
    auto c = t::cluster(nodes);
    auto s = make("random", seed);
    std::vector<std::string> got;
    for (int i = 0; i < 30; ++i) got.push_back(place(s, c, gpu_job("1")));
    CHECK(t::cluster_violation(c).empty());
    return got;
  };
  const auto a = run(5), b = run(5), d = run(6);
  CHECK(a == b);
  CHECK(a != d);
  std::set<std::string> distinct_nodes;
  for (const auto& p : a) distinct_nodes.insert(p.substr(0, p.find('[')));
  CHECK(distinct_nodes.size() > 3);   // it really spreads at random
}

TEST_CASE("tie_break random draws the winner from the policy.tie-break stream", "[policies][behaviour]") {
  Profile p;   // no score plugin: every feasible node ties
  p.tie_break = TieBreak::kRandom;
  Scheduler s(p, Registry::with_builtins(), 9);
  const auto c = t::cluster({t::node("n0", 8, 8), t::node("n1", 8, 8), t::node("n2", 8, 8), t::node("n3", 8, 8),
                             t::node("n4", 8, 8)});
  const auto j = t::job("j", 0, 1, t::request({{"cpu", "1"}}));
  Rng expected = RngStreams(9).stream("policy.tie-break");
  CycleState state;
  std::set<std::uint32_t> seen;
  for (int i = 0; i < 20; ++i) {
    TaskContext ctx{j, JobId{0}, 0, state};
    TaskPlacement out;
    REQUIRE(s.place_task(c, ctx, out).ok());
    CHECK(out.node.value == expected.below(5));
    seen.insert(out.node.value);
  }
  CHECK(seen.size() > 1);

  Profile q;   // the same without random tie-break: always the lowest index
  Scheduler ordered(q, Registry::with_builtins(), 9);
  for (int i = 0; i < 5; ++i) {
    TaskContext ctx{j, JobId{0}, 0, state};
    TaskPlacement out;
    REQUIRE(ordered.place_task(c, ctx, out).ok());
    CHECK(out.node == NodeId{0});
  }
}

TEST_CASE("A gang that does not fit entirely is not placed and holds nothing afterwards", "[policies][behaviour]") {
  // Four one-GPU nodes, one of them busy: three free nodes for a gang of four.
  auto c = t::cluster({t::node("n0", 8, 32, 1), t::node("n1", 8, 32, 1), t::node("n2", 8, 32, 1), t::node("n3", 8, 32, 1)});
  const auto other = t::request({{"cpu", "1"}, {"nvidia.com/gpu", "1"}});
  c.allocate(other, {NodeId{2}, {{0, 1000, 81920}}});
  const auto before = c.totals();
  std::vector<NodeState> nodes_before(c.nodes().begin(), c.nodes().end());

  for (const auto& profile : builtin_profile_names()) {
    INFO(profile);
    auto s = make(profile);
    std::vector<TaskPlacement> out;
    const auto gang = gpu_job("1", 4, 4);
    const Status st = s.schedule(c, gang, JobId{0}, out);
    CHECK_FALSE(st.ok());
    CHECK(out.empty());
    CHECK(c.totals().cpu_used_milli == before.cpu_used_milli);
    CHECK(c.totals().memory_used_mib == before.memory_used_mib);
    CHECK(c.totals().gpu_used_milli == before.gpu_used_milli);
    CHECK(c.totals().gpus_busy == before.gpus_busy);
    CHECK(c.totals().tasks == before.tasks);
    for (std::uint32_t n = 0; n < 4; ++n) {
      CHECK(c.node(NodeId{n}).cpu_free_milli == nodes_before[n].cpu_free_milli);
      CHECK(c.node(NodeId{n}).gpus_fully_free == nodes_before[n].gpus_fully_free);
      CHECK(c.node(NodeId{n}).tasks == nodes_before[n].tasks);
    }
    CHECK(t::cluster_violation(c).empty());
  }
}

TEST_CASE("A gang with min_available below tasks places the tasks that fit", "[policies][behaviour]") {
  auto c = t::cluster({t::node("n0", 8, 32, 1), t::node("n1", 8, 32, 1), t::node("n2", 8, 32, 1)});
  auto s = make("first-fit");
  std::vector<TaskPlacement> out;
  REQUIRE(s.schedule(c, gpu_job("1", 4, 2), JobId{0}, out).ok());
  REQUIRE(out.size() == 3);
  std::set<std::uint32_t> nodes;
  for (const auto& p : out) nodes.insert(p.node.value);
  CHECK(nodes.size() == 3);
  CHECK(c.totals().tasks == 3);
  CHECK(c.totals().gpus_busy == 3);
  // With nothing left, even min_available = 1 places nothing.
  CHECK(place(s, c, gpu_job("1", 2, 1)).empty());
  CHECK(c.totals().tasks == 3);
}

TEST_CASE("last_diagnosis counts the nodes rejected for each reason", "[policies][behaviour]") {
  auto c = t::cluster({t::node("a", 8, 32, 2, "T4"), t::node("b", 8, 32, 2, "T4"), t::node("c", 8, 32, 2, "T4")});
  const auto one = t::request({{"nvidia.com/gpu", "1"}});
  for (std::uint32_t n = 0; n < 3; ++n) c.allocate(one, {NodeId{n}, {{0, 1000, 16384}}});
  auto s = make("binpack");
  std::vector<TaskPlacement> out;
  const Status st = s.schedule(c, gpu_job("2"), JobId{0}, out);
  CHECK(st.code == StatusCode::kUnschedulable);
  CHECK(s.last_diagnosis() == "0/3 nodes are available: 3 Insufficient nvidia.com/gpu (node-resources-fit)");

  // Mixed reasons, most frequent first: a and c have no free GPU, b lacks CPU (checked first).
  const auto j = t::job("j", 0, 1, t::request({{"cpu", "6"}, {"nvidia.com/gpu", "1"}}));
  c.allocate(one, {NodeId{0}, {{1, 1000, 16384}}});
  c.allocate(t::request({{"cpu", "4"}}), {NodeId{1}, {}});
  c.allocate(one, {NodeId{2}, {{1, 1000, 16384}}});
  CHECK_FALSE(s.schedule(c, j, JobId{1}, out).ok());
  CHECK(s.last_diagnosis() ==
        "0/3 nodes are available: 2 Insufficient nvidia.com/gpu (node-resources-fit), 1 Insufficient cpu (node-resources-fit)");
}

TEST_CASE("A task larger than every node is rejected before the node loop", "[policies][behaviour]") {
  auto c = t::cluster({t::node("a", 8, 32, 8), t::node("b", 8, 32, 8), t::node("c", 8, 32, 4)});
  auto s = make("first-fit");
  std::vector<TaskPlacement> out;
  const Status st = s.schedule(c, gpu_job("16"), JobId{0}, out);
  CHECK(st.code == StatusCode::kUnschedulableAndUnresolvable);
  CHECK(st.plugin == "node-resources-fit");
  CHECK(s.last_diagnosis() == "0/3 nodes are available: 3 nvidia.com/gpu exceeds every node (node-resources-fit)");
}

TEST_CASE("Unschedulable nodes are skipped and GPU model constraints are honoured", "[policies][behaviour]") {
  auto c = t::cluster({t::node("a100", 32, 128, 4, "A100-80GB"), t::node("t4", 32, 128, 4, "T4"),
                       t::node("a100b", 32, 128, 4, "A100-80GB")});
  auto s = make("first-fit");
  const auto t4_job = t::job("t4", 0, 1, t::request({{"nvidia.com/gpu", "1"}}, {"T4"}));
  CHECK(place(s, c, t4_job) == "t4[0]");
  c.set_schedulable(NodeId{0}, false);
  CHECK(place(s, c, gpu_job("1")) == "t4[1]");
  c.set_schedulable(NodeId{1}, false);
  CHECK(place(s, c, gpu_job("1")) == "a100b[0]");
  CHECK(place(s, c, t4_job).empty());
}

TEST_CASE("gpu-spread puts a share on the GPU with the most free memory", "[policies][behaviour]") {
  auto c = t::cluster({t::node("n", 32, 128, 3, "A100-80GB")});
  c.allocate(t::request({{"aliyun.com/gpu-mem", "10"}}), {NodeId{0}, {{0, 0, 10240}}});
  c.allocate(t::request({{"aliyun.com/gpu-mem", "5"}}), {NodeId{0}, {{2, 0, 5120}}});
  auto spread = make("spread");
  CHECK(place(spread, c, share_job("4")) == "n[1]");
  auto pack = make("binpack");
  CHECK(place(pack, c, share_job("4")) == "n[0]");
  auto first = make("first-fit");
  CHECK(place(first, c, share_job("4")) == "n[0]");
}

TEST_CASE("priority-fifo orders by priority, then submit time, then job id and fifo ignores priority", "[policies][behaviour]") {
  auto s = make("binpack");
  auto low_early = t::job("a", 0, 1, {}, 1, -1, 0);
  auto high_late = t::job("b", 50, 1, {}, 1, -1, 10);
  auto low_late = t::job("c", 50, 1, {}, 1, -1, 0);
  CHECK(s.before(high_late, JobId{1}, low_early, JobId{0}));
  CHECK_FALSE(s.before(low_early, JobId{0}, high_late, JobId{1}));
  CHECK(s.before(low_early, JobId{0}, low_late, JobId{2}));
  CHECK(s.before(low_late, JobId{2}, low_late, JobId{3}));
  CHECK_FALSE(s.before(low_late, JobId{3}, low_late, JobId{2}));
  Profile p;
  p.queue_sort = PluginRef{"fifo"};
  Scheduler fifo(p, Registry::with_builtins(), 1);
  CHECK(fifo.before(low_early, JobId{0}, high_late, JobId{1}));
}
