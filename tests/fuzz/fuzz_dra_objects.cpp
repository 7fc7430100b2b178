// Fuzz target (tests/fuzz/README.md): bad input may only throw gpusched::Error.
// DRA objects (ResourceSlices, DeviceClasses, ResourceClaims, Nodes; YAML or JSON) as
// `gpusched dra allocate` reads them, then allocated: scenario::read_dra_objects, then
// scenario::allocate_claims (whose allocation errors become pending reasons).
#include <gpusched/scenario/k8s_dra.hpp>

#include "fuzz_target.hpp"

using namespace gpusched;

GPUSCHED_FUZZ_TARGET(dra_objects) {
  return fuzz::expect_errors([&] {
    const auto objects = scenario::parse_kubernetes_objects(fuzz::as_text(data, size), "dra.yaml");
    (void)scenario::allocate_claims(scenario::read_dra_objects(objects));
  });
}
