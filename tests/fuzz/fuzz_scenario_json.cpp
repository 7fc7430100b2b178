// Fuzz target (tests/fuzz/README.md): bad input may only throw gpusched::Error.
// Scenario JSON text as `gpusched validate|run FILE` and gpusched.run(path) read it. Relative
// paths (traces, kubernetes_objects) resolve against an empty scratch folder.
#include <gpusched/scenario/scenario.hpp>

#include "fuzz_target.hpp"

using namespace gpusched;

GPUSCHED_FUZZ_TARGET(scenario_json) {
  return fuzz::expect_errors([&] {
    (void)scenario::parse_scenario(fuzz::as_text(data, size), "fuzz.json", fuzz::scratch_dir());
  });
}
