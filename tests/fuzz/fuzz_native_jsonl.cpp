// Fuzz target (tests/fuzz/README.md): bad input may only throw gpusched::Error.
// The native trace (jsonl) as traces::read_trace reads it.
#include <sstream>

#include <gpusched/gpu_catalog.hpp>
#include <gpusched/resources.hpp>
#include <gpusched/traces/native.hpp>

#include "fuzz_target.hpp"

using namespace gpusched;

GPUSCHED_FUZZ_TARGET(native_jsonl) {
  static const GpuCatalog catalog = GpuCatalog::builtin();
  return fuzz::expect_errors([&] {
    ResourceTable resources;
    std::istringstream in{std::string(fuzz::as_text(data, size))};
    (void)traces::read_trace(in, traces::TraceFormat::kJsonLines, "fuzz.jsonl", catalog, resources);
  });
}
