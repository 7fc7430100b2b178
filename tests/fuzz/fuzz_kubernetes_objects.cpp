// Fuzz target (tests/fuzz/README.md): bad input may only throw gpusched::Error.
// Kueue / Volcano / Kubernetes objects (YAML or JSON) as a scenario's kubernetes_objects reads
// them: scenario::parse_kubernetes_objects, then translate_kubernetes_objects.
#include <gpusched/gpu_catalog.hpp>
#include <gpusched/scenario/k8s_objects.hpp>

#include "fuzz_target.hpp"

using namespace gpusched;

GPUSCHED_FUZZ_TARGET(kubernetes_objects) {
  static const GpuCatalog catalog = GpuCatalog::builtin();
  return fuzz::expect_errors([&] {
    const auto objects = scenario::parse_kubernetes_objects(fuzz::as_text(data, size), "objects.yaml");
    (void)scenario::translate_kubernetes_objects(objects, catalog);
  });
}
