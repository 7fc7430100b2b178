// Fuzz target (tests/fuzz/README.md): bad input may only throw gpusched::Error.
// Philly per-job table as traces::read_philly_jobs reads it (catalog copied per input: the reader may add models to it).
#include <sstream>

#include <gpusched/gpu_catalog.hpp>
#include <gpusched/resources.hpp>
#include <gpusched/traces/philly.hpp>

#include "fuzz_target.hpp"

using namespace gpusched;

GPUSCHED_FUZZ_TARGET(philly_jobs) {
  static const GpuCatalog base = GpuCatalog::builtin();
  return fuzz::expect_errors([&] {
    GpuCatalog catalog = base;
    ResourceTable resources;
    std::istringstream in{std::string(fuzz::as_text(data, size))};
    (void)traces::read_philly_jobs(in, "philly.csv", catalog, resources);
  });
}
