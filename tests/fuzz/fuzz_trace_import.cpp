// Fuzz target (tests/fuzz/README.md): bad input may only throw gpusched::Error.
// traces::detect_format + import_workload / import_nodes over a file, as `gpusched convert` and a
// scenario's workload.trace read one. Input: one byte picking the file extension, then the file.
#include <string>

#include <gpusched/gpu_catalog.hpp>
#include <gpusched/resources.hpp>
#include <gpusched/traces/import.hpp>

#include "fuzz_target.hpp"

using namespace gpusched;

GPUSCHED_FUZZ_TARGET(trace_import) {
  static const GpuCatalog base = GpuCatalog::builtin();
  static const char* const kExtensions[] = {".csv", ".json", ".swf", ".jsonl", ".txt", ""};
  if (size == 0) return 0;
  const std::string name = std::string("trace") + kExtensions[data[0] % 6];
  const auto path = fuzz::write_scratch_file(name, fuzz::as_text(data + 1, size - 1));
  return fuzz::expect_errors([&] {
    GpuCatalog catalog = base;
    ResourceTable resources;
    const std::string format = traces::detect_format(path);
    if (traces::require_format(format, {}).kind == traces::FormatKind::kWorkload) {
      (void)traces::import_workload(path, format, catalog, resources);
    } else {
      (void)traces::import_nodes(path, format, catalog, resources);
    }
  });
}
