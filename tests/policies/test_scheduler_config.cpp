// Profiles are validated when the scheduler is built, never halfway through a run.
#include <algorithm>
#include <string>

#include <catch2/catch.hpp>

#include <gpusched/policies/framework/registry.hpp>
#include <gpusched/policies/framework/scheduler.hpp>

using namespace gpusched;
using namespace gpusched::policies;

namespace {
/// Builds a scheduler and returns the ProfileError it throws (fails the test when none is thrown).
ProfileError build_error(const Profile& p) {
  try {
    Scheduler s(p, Registry::with_builtins(), 1);
  } catch (const ProfileError& e) {
    return e;
  }
  FAIL("the scheduler was built");
  throw;  // unreachable
}
Profile with_score(std::vector<PluginRef> score) {
  Profile p;
  p.score = std::move(score);
  return p;
}
}  // namespace

TEST_CASE("Every built-in profile builds a scheduler", "[policies][scheduler]") {
  const auto reg = Registry::with_builtins();
  for (const auto& name : builtin_profile_names()) {
    INFO(name);
    CHECK_NOTHROW(Scheduler(builtin_profile(name), reg, 42));
  }
}

TEST_CASE("An unknown plugin is rejected with the plugins known at that hook", "[policies][scheduler]") {
  const auto e = build_error(with_score({PluginRef{"gpu-binpak"}}));
  CHECK(e.code() == ErrorCode::kProfileUnknownPlugin);
  CHECK(e.where().field == "score/0");
  CHECK_THAT(e.detail(), Catch::Contains("\"gpu-binpak\""));
  for (const char* score : {"best-fit", "first-fit", "gpu-binpack", "least-allocated", "most-allocated", "random"}) {
    CHECK_THAT(e.detail(), Catch::Contains(score));
  }
  CHECK_THAT(e.detail(), !Catch::Contains("gpu-spread"));   // a device plugin, not a score plugin
  CHECK_THAT(e.detail(), !Catch::Contains("priority-fifo"));   // a queue sort
}

TEST_CASE("A plugin at a hook it does not implement is rejected", "[policies][scheduler]") {
  const auto e = build_error(with_score({PluginRef{"gpu-first-fit"}}));
  CHECK(e.code() == ErrorCode::kProfileWrongHook);
  CHECK_THAT(e.detail(), Catch::Contains("does not implement score"));
  Profile p;
  p.device_select = PluginRef{"least-allocated"};
  CHECK(build_error(p).code() == ErrorCode::kProfileWrongHook);
  Profile q;
  q.queue_sort = PluginRef{"node-resources-fit"};
  CHECK(build_error(q).code() == ErrorCode::kProfileWrongHook);
}

TEST_CASE("A plugin listed twice at one hook is rejected", "[policies][scheduler]") {
  const auto e = build_error(with_score({PluginRef{"best-fit"}, PluginRef{"least-allocated"}, PluginRef{"best-fit"}}));
  CHECK(e.code() == ErrorCode::kProfileDuplicatePlugin);
  CHECK(e.where().field == "score/2");
  Profile p;
  p.filter = {PluginRef{"node-resources-fit"}, PluginRef{"node-resources-fit"}};
  CHECK(build_error(p).code() == ErrorCode::kProfileDuplicatePlugin);
}

TEST_CASE("A score weight of zero or less is rejected", "[policies][scheduler]") {
  PluginRef zero{"least-allocated"};
  zero.weight = 0.0;
  const auto e = build_error(with_score({zero}));
  CHECK(e.code() == ErrorCode::kProfileZeroWeight);
  CHECK(e.where().field == "score/0/weight");
  CHECK_THAT(e.detail(), Catch::Contains("> 0"));
  PluginRef negative{"least-allocated"};
  negative.weight = -1.0;
  CHECK(build_error(with_score({negative})).code() == ErrorCode::kProfileZeroWeight);
}

TEST_CASE("A profile without node-resources-fit is rejected", "[policies][scheduler]") {
  Profile p;
  p.filter.clear();
  const auto e = build_error(p);
  CHECK(e.code() == ErrorCode::kProfileMissingHook);
  CHECK(e.where().field == "filter");
  CHECK_THAT(e.detail(), Catch::Contains("node-resources-fit"));
}

TEST_CASE("Bad plugin arguments are rejected by name", "[policies][scheduler]") {
  PluginRef unknown_arg{"least-allocated"};
  unknown_arg.args = {{"cpu_wieght", 1}};
  auto e = build_error(with_score({unknown_arg}));
  CHECK(e.code() == ErrorCode::kProfileBadArgs);
  CHECK(e.where().field == "score/0/args/cpu_wieght");
  CHECK_THAT(e.detail(), Catch::Contains("cpu_weight"));   // lists what it takes

  PluginRef wrong_type{"best-fit"};
  wrong_type.args = {{"cpu_weight", "heavy"}};
  e = build_error(with_score({wrong_type}));
  CHECK(e.code() == ErrorCode::kProfileBadArgs);
  CHECK(e.where().field == "score/0/args/cpu_weight");

  PluginRef negative{"most-allocated"};
  negative.args = {{"gpu_weight", -2}};
  CHECK(build_error(with_score({negative})).code() == ErrorCode::kProfileBadArgs);

  PluginRef no_args{"first-fit"};
  no_args.args = {{"x", 1}};
  e = build_error(with_score({no_args}));
  CHECK(e.code() == ErrorCode::kProfileBadArgs);
  CHECK_THAT(e.detail(), Catch::Contains("none"));
}

TEST_CASE("resolve_args fills in the documented defaults", "[policies][registry]") {
  const auto reg = Registry::with_builtins();
  const auto* info = reg.find("best-fit");
  REQUIRE(info != nullptr);
  const auto args = resolve_args(*info, nlohmann::json{{"gpu_weight", 0.8}}, Location{"here", 0, "score/0"});
  CHECK(args["cpu_weight"] == 0.5);
  CHECK(args["gpu_weight"] == 0.8);
  CHECK(reg.find("no-such") == nullptr);
  try {
    (void)resolve_args(*info, nlohmann::json{{"gpu_wait", 1}}, Location{"p.json", 0, "score/1"});
    FAIL("no exception");
  } catch (const ProfileError& e) {
    CHECK(e.where().file == "p.json");
    CHECK(e.where().field == "score/1/args/gpu_wait");
  }
}

TEST_CASE("The registry lists plugins sorted by name and filters them by hook", "[policies][registry]") {
  const auto reg = Registry::with_builtins();
  const auto& all = reg.plugins();
  REQUIRE(all.size() >= 12);
  for (std::size_t i = 1; i < all.size(); ++i) CHECK(all[i - 1].name < all[i].name);
  // Every listed plugin implements the hook, and every plugin implementing it is listed, in order.
  for (const char* hook : {"queue_sort", "filter", "score", "device_select", "post_filter"}) {
    std::string expected;
    for (const auto& p : all) {
      if (std::find(p.hooks.begin(), p.hooks.end(), hook) != p.hooks.end()) expected += (expected.empty() ? "" : ", ") + p.name;
    }
    CHECK(reg.known_names(hook) == expected);
  }
  CHECK_THAT(reg.known_names("queue_sort"), Catch::Contains("fifo, fjf, gittins, las, priority-fifo, sjf, srsf, srtf"));
  CHECK_THAT(reg.known_names("device_select"), Catch::Contains("gpu-binpack, gpu-first-fit"));
  CHECK_THAT(reg.known_names("device_select"), !Catch::Contains("least-allocated"));
}
