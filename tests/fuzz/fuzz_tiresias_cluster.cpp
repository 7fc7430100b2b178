// Fuzz target (tests/fuzz/README.md): bad input may only throw gpusched::Error.
// Tiresias cluster shape as traces::read_tiresias_cluster reads it (catalog copied per input: the reader may add models to it).
#include <sstream>

#include <gpusched/gpu_catalog.hpp>
#include <gpusched/resources.hpp>
#include <gpusched/traces/philly.hpp>

#include "fuzz_target.hpp"

using namespace gpusched;

GPUSCHED_FUZZ_TARGET(tiresias_cluster) {
  static const GpuCatalog base = GpuCatalog::builtin();
  return fuzz::expect_errors([&] {
    GpuCatalog catalog = base;
    ResourceTable resources;
    std::istringstream in{std::string(fuzz::as_text(data, size))};
    (void)traces::read_tiresias_cluster(in, "cluster_spec.csv", catalog, resources);
  });
}
