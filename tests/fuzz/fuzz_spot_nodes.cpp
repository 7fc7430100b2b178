// Fuzz target (tests/fuzz/README.md): bad input may only throw gpusched::Error.
// Alibaba spot-GPU 2026 node list as traces::read_spot_nodes reads it (catalog copied per input: the reader may add models to it).
#include <sstream>

#include <gpusched/gpu_catalog.hpp>
#include <gpusched/resources.hpp>
#include <gpusched/traces/alibaba.hpp>

#include "fuzz_target.hpp"

using namespace gpusched;

GPUSCHED_FUZZ_TARGET(spot_nodes) {
  static const GpuCatalog base = GpuCatalog::builtin();
  return fuzz::expect_errors([&] {
    GpuCatalog catalog = base;
    ResourceTable resources;
    std::istringstream in{std::string(fuzz::as_text(data, size))};
    (void)traces::read_spot_nodes(in, "spot_nodes.csv", catalog, resources);
  });
}
