#include <algorithm>

#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include <gpusched/policies/framework/cycle_state.hpp>
#include <gpusched/policies/framework/profile.hpp>
#include <gpusched/policies/framework/statement.hpp>

#include "support/support.hpp"

using namespace gpusched;
using namespace gpusched::policies;
namespace t = gpusched::test;

namespace {
ClusterState three_gpu_nodes() {
  return t::cluster({t::node("a", 16, 64, 2, "T4"), t::node("b", 16, 64, 2, "T4"), t::node("c", 16, 64, 2, "T4")});
}
const TaskRequest& one_gpu() {
  static const TaskRequest r = t::request({{"cpu", "4"}, {"memory", "8Gi"}, {"nvidia.com/gpu", "1"}});
  return r;
}
}  // namespace

// ------------------------------------------------------------------ Statement

TEST_CASE("An uncommitted Statement rolls every allocation back when it goes out of scope", "[policies][statement]") {
  auto c = three_gpu_nodes();
  {
    Statement st(c);
    st.allocate(one_gpu(), {NodeId{0}, {{0, 1000, 16384}}});
    st.allocate(one_gpu(), {NodeId{1}, {{1, 1000, 16384}}});
    CHECK(c.totals().tasks == 2);
    CHECK(c.totals().gpus_busy == 2);
    CHECK(st.size() == 2);
  }
  CHECK(t::cluster_empty(c));
  CHECK(t::cluster_violation(c).empty());
}

TEST_CASE("A Statement undoes its changes newest first", "[policies][statement]") {
  auto c = three_gpu_nodes();
  std::vector<std::string> order;
  {
    Statement st(c);
    st.allocate(one_gpu(), {NodeId{0}, {{0, 1000, 16384}}});
    st.on_rollback([&] {
      // Runs after the later allocation on node b was undone, before the one on node a.
      order.push_back("undo-1");
      CHECK(c.node(NodeId{1}).tasks == 0);
      CHECK(c.node(NodeId{0}).tasks == 1);
    });
    st.allocate(one_gpu(), {NodeId{1}, {{0, 1000, 16384}}});
    st.on_rollback([&] {
      order.push_back("undo-2");
      CHECK(c.node(NodeId{1}).tasks == 1);
    });
    st.rollback();
    CHECK(st.size() == 0);
  }
  CHECK(order == std::vector<std::string>{"undo-2", "undo-1"});
  CHECK(t::cluster_empty(c));
}

TEST_CASE("A committed Statement keeps its allocations", "[policies][statement]") {
  auto c = three_gpu_nodes();
  bool undone = false;
  {
    Statement st(c);
    st.allocate(one_gpu(), {NodeId{2}, {{1, 1000, 16384}}});
    st.on_rollback([&] { undone = true; });
    st.commit();
  }
  CHECK_FALSE(undone);
  CHECK(c.node(NodeId{2}).tasks == 1);
  CHECK(c.gpus(NodeId{2})[1].tasks == 1);
  CHECK(c.totals().gpu_used_milli == 1000);
}

TEST_CASE("Rolling back an eviction takes the resources again", "[policies][statement]") {
  auto c = three_gpu_nodes();
  const TaskPlacement p{NodeId{0}, {{0, 1000, 16384}}};
  c.allocate(one_gpu(), p);
  {
    Statement st(c);
    st.evict(one_gpu(), p);
    CHECK(c.totals().tasks == 0);
  }
  CHECK(c.totals().tasks == 1);
  CHECK(c.gpus(NodeId{0})[0].tasks == 1);
  CHECK(t::cluster_violation(c).empty());
}

// ------------------------------------------------------------------ CycleState

namespace {
struct Best {
  int node = -1;
  std::vector<int> gpus;
};
const StateKey<Best> kBest{"test/best"};
const StateKey<int> kCount{"test/count"};
}  // namespace

TEST_CASE("CycleState reads back what was written under a typed key", "[policies][cycle_state]") {
  CycleState s;
  CHECK(s.read(kBest) == nullptr);
  s.write(kBest, Best{3, {1, 2}});
  s.write(kCount, 7);
  REQUIRE(s.read(kBest) != nullptr);
  CHECK(s.read(kBest)->node == 3);
  CHECK(s.read(kBest)->gpus == std::vector<int>{1, 2});
  REQUIRE(s.read(kCount) != nullptr);
  CHECK(*s.read(kCount) == 7);
  s.write(kCount, 8);
  CHECK(*s.read(kCount) == 8);
  CHECK(kBest.index() != kCount.index());
}

TEST_CASE("A cloned CycleState is independent of the original", "[policies][cycle_state]") {
  CycleState s;
  s.write(kBest, Best{1, {0}});
  CycleState copy = s;
  copy.read(kBest)->node = 9;
  copy.read(kBest)->gpus.push_back(5);
  copy.write(kCount, 1);
  CHECK(s.read(kBest)->node == 1);
  CHECK(s.read(kBest)->gpus == std::vector<int>{0});
  CHECK(s.read(kCount) == nullptr);
  CycleState assigned;
  assigned = copy;
  CHECK(assigned.read(kBest)->node == 9);
  CHECK(*assigned.read(kCount) == 1);
}

TEST_CASE("Clearing a CycleState forgets every slot", "[policies][cycle_state]") {
  CycleState s;
  s.write(kCount, 1);
  s.write(kBest, Best{});
  s.clear();
  CHECK(s.read(kCount) == nullptr);
  CHECK(s.read(kBest) == nullptr);
}

// ------------------------------------------------------------------ Profile

TEST_CASE("A profile parses from JSON with weights, args and tie-break", "[policies][profile]") {
  const auto p = Profile::from_json(nlohmann::json::parse(R"({
    "name": "mine", "queue_sort": "fifo", "filter": ["node-resources-fit"],
    "score": [{"name": "least-allocated", "weight": 2, "args": {"gpu_weight": 3}}, "gpu-binpack"],
    "device_select": "gpu-spread", "tie_break": "random"})"), "p.json");
  CHECK(p.name == "mine");
  CHECK(p.queue_sort.name == "fifo");
  REQUIRE(p.score.size() == 2);
  CHECK(p.score[0].name == "least-allocated");
  CHECK(p.score[0].weight == 2.0);
  CHECK(p.score[0].args["gpu_weight"] == 3);
  CHECK(p.score[1].weight == 1.0);
  CHECK(p.device_select.name == "gpu-spread");
  CHECK(p.tie_break == TieBreak::kRandom);
  const auto again = Profile::from_json(p.to_json(), "round-trip");
  CHECK(again.to_json() == p.to_json());
}

TEST_CASE("A profile can extend a built-in one and override fields", "[policies][profile]") {
  const auto p = Profile::from_json(nlohmann::json::parse(R"({"name":"x","extends":"binpack","tie_break":"random"})"), "p.json");
  CHECK(p.name == "x");
  CHECK(p.device_select.name == "gpu-binpack");
  REQUIRE(p.score.size() == 1);
  CHECK(p.score[0].name == "gpu-binpack");
  CHECK(p.tie_break == TieBreak::kRandom);
}

TEST_CASE("An unknown profile field is a ProfileError naming the field", "[policies][profile]") {
  try {
    (void)Profile::from_json(nlohmann::json::parse(R"({"name":"x","scores":["first-fit"]})"), "p.json");
    FAIL("no exception");
  } catch (const ProfileError& e) {
    CHECK(e.where().file == "p.json");
    CHECK(e.where().field == "scores");
    CHECK_THAT(e.detail(), Catch::Contains("unknown profile field"));
  }
  try {
    (void)Profile::from_json(nlohmann::json::parse(R"({"score":[{"name":"first-fit","wieght":2}]})"), "p.json");
    FAIL("no exception");
  } catch (const ProfileError& e) {
    CHECK(e.where().field == "score/0/wieght");
  }
  CHECK_THROWS_AS(Profile::from_json(nlohmann::json::parse(R"({"filter":[{"name":"node-resources-fit","weight":1}]})"), "p"),
                  ProfileError);
  CHECK_THROWS_AS(Profile::from_json(nlohmann::json::parse(R"({"tie_break":"coin"})"), "p"), ProfileError);
  CHECK_THROWS_AS(Profile::from_json(nlohmann::json::parse(R"({"extends":"nope"})"), "p"), ProfileError);
  CHECK_THROWS_AS(Profile::from_json(nlohmann::json::parse(R"(["first-fit"])"), "p"), ProfileError);
}

TEST_CASE("Every built-in profile name resolves and unknown names list them", "[policies][profile]") {
  const auto names = builtin_profile_names();
  for (const char* n : {"default", "first-fit", "best-fit", "binpack", "gpushare-binpack", "spread", "most-allocated", "random"}) {
    CHECK(std::find(names.begin(), names.end(), n) != names.end());
  }
  for (const auto& n : names) CHECK(builtin_profile(n).name == n);
  try {
    (void)builtin_profile("fastest", "s.json");
    FAIL("no exception");
  } catch (const ProfileError& e) {
    CHECK(e.code() == ErrorCode::kProfileUnknownProfile);
    CHECK_THAT(e.detail(), Catch::Contains("binpack"));
    CHECK_THAT(e.detail(), Catch::Contains("most-allocated"));
  }
}
