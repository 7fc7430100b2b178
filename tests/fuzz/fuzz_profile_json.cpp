// Fuzz target (tests/fuzz/README.md): bad input may only throw gpusched::Error.
// A profile JSON file as `gpusched run --profile FILE` and `gpusched validate FILE` read it:
// the JSON (gpusched::parse_json, the library's one JSON reader), Profile::from_json, then the
// scheduler built from it (which checks plugin args).
#include <gpusched/json_input.hpp>

#include <gpusched/policies/framework/profile.hpp>
#include <gpusched/policies/framework/registry.hpp>
#include <gpusched/policies/framework/scheduler.hpp>

#include "fuzz_target.hpp"

using namespace gpusched;

GPUSCHED_FUZZ_TARGET(profile_json) {
  return fuzz::expect_errors([&] {
    const auto doc = parse_json(fuzz::as_text(data, size), "fuzz-profile.json", kScenarioJsonErrors);
    const auto profile = policies::Profile::from_json(doc, "fuzz-profile.json");
    policies::Scheduler check(profile, policies::Registry::builtins(), 0);
  });
}
