// Fuzz target (tests/fuzz/README.md): bad input may only throw gpusched::Error.
// SWF as traces::read_swf reads it. The options come from the input's length (deterministic per
// input, no framing byte): processors GPUs or CPUs x unknown run time error / skip / forever.
#include <sstream>

#include <gpusched/gpu_catalog.hpp>
#include <gpusched/resources.hpp>
#include <gpusched/traces/swf.hpp>

#include "fuzz_target.hpp"

using namespace gpusched;

GPUSCHED_FUZZ_TARGET(swf) {
  static const GpuCatalog base = GpuCatalog::builtin();
  return fuzz::expect_errors([&] {
    GpuCatalog catalog = base;
    ResourceTable resources;
    std::istringstream in{std::string(fuzz::as_text(data, size))};
    traces::SwfOptions options;
    options.processors = (size / 3) % 2 == 0 ? traces::SwfProcessors::kGpus : traces::SwfProcessors::kCpus;
    options.unknown_run_time = static_cast<traces::SwfUnknownRunTime>(size % 3);
    options.queue_field = (size / 6) % 2 == 0 ? traces::SwfQueueField::kQueueNumber : traces::SwfQueueField::kUserId;
    (void)traces::read_swf(in, "jobs.swf", catalog, resources, options);
  });
}
