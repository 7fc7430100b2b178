// Fuzz target (tests/fuzz/README.md): bad input may only throw gpusched::Error.
// Alibaba PAI 2020 machine list as traces::read_pai_machines reads it (catalog copied per input: the reader may add models to it).
#include <sstream>

#include <gpusched/gpu_catalog.hpp>
#include <gpusched/resources.hpp>
#include <gpusched/traces/alibaba.hpp>

#include "fuzz_target.hpp"

using namespace gpusched;

GPUSCHED_FUZZ_TARGET(pai_machines) {
  static const GpuCatalog base = GpuCatalog::builtin();
  return fuzz::expect_errors([&] {
    GpuCatalog catalog = base;
    ResourceTable resources;
    std::istringstream in{std::string(fuzz::as_text(data, size))};
    (void)traces::read_pai_machines(in, "pai_machine_spec.csv", catalog, resources);
  });
}
