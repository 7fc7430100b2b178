// Profiles that extend a built-in one (policies/src/profile.cpp): list hooks add to the
// parent's, entries naming a parent's plugin override it in place, "replace" restates a hook,
// single-plugin hooks are replaced, and the description is never the parent's.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include <gpusched/error.hpp>
#include <gpusched/policies/framework/profile.hpp>
#include <gpusched/policies/framework/registry.hpp>
#include <gpusched/policies/framework/scheduler.hpp>

#include "support/support.hpp"

using namespace gpusched;
using namespace gpusched::policies;
namespace t = gpusched::test;

namespace {

Profile parse(const char* text) { return Profile::from_json(nlohmann::json::parse(text), "p.json"); }

/// "name" per entry, with "*weight" when the weight is not 1, in order.
std::vector<std::string> entries(const std::vector<PluginRef>& list) {
  std::vector<std::string> out;
  for (const auto& r : list) {
    std::string e = r.name;
    if (r.weight != 1.0) {
      e += '*';
      e += std::to_string(static_cast<int>(r.weight));
    }
    out.push_back(e);
  }
  return out;
}

using Names = std::vector<std::string>;

ProfileError profile_error(const char* text) {
  try {
    (void)parse(text);
  } catch (const ProfileError& e) {
    return e;
  }
  FAIL("no ProfileError for " << text);
  throw;
}

}  // namespace

TEST_CASE("A child's score entries are added to the parent's scores", "[policies][profile]") {
  const auto p = parse(R"({"name": "pack", "extends": "default", "score": [{"name": "gpu-binpack", "weight": 2}]})");
  CHECK(entries(p.score) == Names{"least-allocated", "balanced-allocation", "gpu-binpack*2"});
  CHECK(p.name == "pack");
  // Hooks the child does not give are the parent's.
  CHECK(entries(p.filter) == entries(builtin_profile("default").filter));
  CHECK(p.device_select.name == builtin_profile("default").device_select.name);
}

TEST_CASE("A child entry naming a parent's plugin overrides its weight and args in place", "[policies][profile]") {
  const auto p = parse(R"({"extends": "kube-default",
                           "score": ["gpu-binpack", {"name": "node-affinity", "weight": 5, "args": {"x": 1}}]})");
  CHECK(entries(p.score) == Names{"least-allocated", "balanced-allocation", "taint-toleration*3", "node-affinity*5", "gpu-binpack"});
  CHECK(p.score[3].args == nlohmann::json{{"x", 1}});
  // A bare name takes the entry's place with the defaults (weight 1, no args).
  const auto q = parse(R"({"extends": "kube-default", "score": ["taint-toleration"]})");
  CHECK(entries(q.score) == Names{"least-allocated", "balanced-allocation", "taint-toleration", "node-affinity*2"});
  // Kueue: configuring capacity-queues at filter keeps the list and its post-filter.
  const auto k = parse(R"({"extends": "kueue-cohorts", "filter": [{"name": "capacity-queues", "args": {"queues": {}}}]})");
  // (kube-scheduler's filter order, issue 12: NodeUnschedulable, TaintToleration, NodeAffinity
  // before NodeResourcesFit; Kueue's flavor check sits with node affinity.)
  CHECK(entries(k.filter) ==
        Names{"node-unschedulable", "taint-toleration", "node-affinity", "capacity-queues", "node-resources-fit"});
  CHECK(k.filter[3].args == nlohmann::json{{"queues", nlohmann::json::object()}});
  CHECK(entries(k.post_filter) == Names{"capacity-queues"});
}

TEST_CASE("Every list hook of a child adds to the parent's list", "[policies][profile]") {
  const auto p = parse(R"({"extends": "volcano-gang-drf", "filter": ["app-max-per-node"], "post_filter": ["capacity-queues"],
                           "pre_filter": ["a"], "reserve": ["b"], "permit": ["c"], "bind": ["d"]})");
  CHECK(entries(p.filter) == Names{"node-resources-fit", "taint-toleration", "node-affinity", "app-max-per-node"});
  CHECK(entries(p.post_filter) == Names{"priority-preemption", "capacity-queues"});
  CHECK(entries(p.pre_filter) == Names{"a"});
  CHECK(entries(p.reserve) == Names{"b"});
  CHECK(entries(p.permit) == Names{"c"});
  CHECK(entries(p.bind) == Names{"d"});
  CHECK(p.queue_sort.name == "drf");   // not given: the parent's
}

TEST_CASE("replace makes the named hooks the child's lists as written", "[policies][profile]") {
  const auto p = parse(R"({"extends": "kube-default", "replace": ["score", "post_filter"],
                           "score": [{"name": "gpu-binpack", "weight": 2}, "least-allocated"]})");
  CHECK(entries(p.score) == Names{"gpu-binpack*2", "least-allocated"});
  CHECK(p.post_filter.empty());   // named but not given: the parent's list is dropped
  CHECK(entries(p.filter) == entries(builtin_profile("kube-default").filter));   // not named: the parent's
  const auto q = parse(R"({"extends": "kube-default", "replace": ["filter"], "filter": ["node-resources-fit"]})");
  CHECK(entries(q.filter) == Names{"node-resources-fit"});
}

TEST_CASE("Single-plugin hooks of a child replace the parent's", "[policies][profile]") {
  const auto p = parse(R"({"extends": "volcano-gang-drf", "queue_sort": "priority-fifo",
                           "device_select": {"name": "gpu-spread"}})");
  CHECK(p.queue_sort.name == "priority-fifo");
  CHECK(p.device_select.name == "gpu-spread");
}

TEST_CASE("An extending profile's description is its own, or says what it extends", "[policies][profile]") {
  for (const auto& name : builtin_profile_names()) {
    INFO(name);
    const auto plain = Profile::from_json({{"extends", name}}, "p.json");
    CHECK(plain.description == "extends " + name);
    CHECK(plain.description != builtin_profile(name).description);
    CHECK(plain.name == name);   // the name is the parent's unless the child gives one
    const auto mine = Profile::from_json({{"extends", name}, {"description", "mine"}}, "p.json");
    CHECK(mine.description == "mine");
  }
  // Without extends nothing changes: no parent to describe.
  CHECK(parse(R"({"name": "x"})").description.empty());
}

TEST_CASE("Extending a profile and restating nothing resolves to the parent's hooks", "[policies][profile]") {
  for (const auto& name : builtin_profile_names()) {
    INFO(name);
    auto resolved = Profile::from_json({{"extends", name}}, "p.json").to_json();
    auto parent = builtin_profile(name).to_json();
    resolved.erase("description");
    parent.erase("description");
    CHECK(resolved == parent);
    // Restating the parent's own lists changes nothing either.
    nlohmann::json restated = builtin_profile(name).to_json();
    restated.erase("name");
    restated.erase("description");
    restated["extends"] = name;
    auto again = Profile::from_json(restated, "p.json").to_json();
    again.erase("description");
    CHECK(again == parent);
  }
}

TEST_CASE("A resolved extending profile round-trips through JSON", "[policies][profile]") {
  const auto p = parse(R"({"name": "pack", "extends": "kube-default", "score": [{"name": "gpu-binpack", "weight": 2}]})");
  const auto again = Profile::from_json(p.to_json(), "resolved.json");
  CHECK(again.to_json() == p.to_json());
}

TEST_CASE("A plugin a child lists twice is still a duplicate", "[policies][profile]") {
  const auto p = parse(R"({"extends": "default", "score": ["gpu-binpack", "gpu-binpack"]})");
  CHECK(entries(p.score) == Names{"least-allocated", "balanced-allocation", "gpu-binpack", "gpu-binpack"});
  try {
    Scheduler s(p, Registry::builtins(), 0);
    FAIL("accepted");
  } catch (const ProfileError& e) {
    CHECK(e.code() == ErrorCode::kProfileDuplicatePlugin);
  }
  // The merged profiles are valid ones.
  CHECK_NOTHROW(Scheduler(parse(R"({"extends": "kube-default", "score": [{"name": "gpu-binpack", "weight": 2}]})"),
                          Registry::builtins(), 0));
}

TEST_CASE("A bad replace is a ProfileError naming the entry", "[policies][profile][errors]") {
  auto e = profile_error(R"({"replace": ["score"], "score": ["first-fit"]})");
  CHECK(e.where().field == "replace");
  CHECK_THAT(e.detail(), Catch::Contains("needs extends"));
  e = profile_error(R"({"extends": "default", "replace": "score"})");
  CHECK(e.where().field == "replace");
  e = profile_error(R"({"extends": "default", "replace": ["score", "device_select"]})");
  CHECK(e.where().field == "replace/1");
  CHECK_THAT(e.detail(), Catch::Contains("holds one plugin"));
  e = profile_error(R"({"extends": "default", "replace": ["scores"]})");
  CHECK(e.where().field == "replace/0");
  CHECK_THAT(e.detail(), Catch::Contains("unknown hook \"scores\""));
  CHECK_THAT(e.detail(), Catch::Contains("post_filter"));
  e = profile_error(R"({"extends": "default", "replace": [3]})");
  CHECK(e.where().field == "replace/0");
}

TEST_CASE("The example scenarios' extending profiles resolve to what they meant", "[policies][profile]") {
  auto profile_of = [](const char* file) {
    const auto doc = nlohmann::json::parse(t::read_file(t::example(file)));
    return Profile::from_json(doc.at("profile"), file);
  };
  // trace-replay: default's least-allocated at weight 2, plus gpu-binpack.
  const auto replay = profile_of("trace-replay.json");
  CHECK(entries(replay.score) == Names{"least-allocated*2", "balanced-allocation", "gpu-binpack"});
  CHECK(replay.name == "spread-custom");
  // devices: default's filters (kube-scheduler's: cordon, taints, node affinity, resources) plus
  // the topology manager.
  const auto devices = profile_of("devices.json");
  CHECK(entries(devices.filter) ==
        Names{"node-unschedulable", "taint-toleration", "node-affinity", "node-resources-fit", "topology-manager"});
  CHECK(devices.filter[4].args == nlohmann::json{{"policy", "best-effort"}});
  CHECK(devices.device_select.name == "topology-manager");
  CHECK(entries(devices.score) == Names{"least-allocated", "balanced-allocation"});
}

TEST_CASE("Errors in a merged list name the entry where the child wrote it", "[policies][profile][errors]") {
  const auto p = parse(R"({"extends": "kube-default", "score": ["gpu-binpack", "least-alocated"]})");
  REQUIRE(p.score.size() == 6);   // four of the parent's, then the child's two
  try {
    Scheduler s(p, Registry::builtins(), 0);
    FAIL("accepted");
  } catch (const ProfileError& e) {
    CHECK(e.code() == ErrorCode::kProfileUnknownPlugin);
    CHECK(e.where().field == "score/1");   // not score/5, its place in the merged list
  }
}
