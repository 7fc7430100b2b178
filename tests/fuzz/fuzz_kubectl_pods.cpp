// Fuzz target (tests/fuzz/README.md): bad input may only throw gpusched::Error.
// kubectl get pods -A -o json as traces::read_kube_pods reads it (catalog copied per input: the reader may add models to it).
#include <sstream>

#include <gpusched/gpu_catalog.hpp>
#include <gpusched/resources.hpp>
#include <gpusched/traces/kubernetes.hpp>

#include "fuzz_target.hpp"

using namespace gpusched;

GPUSCHED_FUZZ_TARGET(kubectl_pods) {
  static const GpuCatalog base = GpuCatalog::builtin();
  return fuzz::expect_errors([&] {
    GpuCatalog catalog = base;
    ResourceTable resources;
    std::istringstream in{std::string(fuzz::as_text(data, size))};
    (void)traces::read_kube_pods(in, "pods.json", catalog, resources);
  });
}
