// Fuzz target (tests/fuzz/README.md): bad input may only throw gpusched::Error.
// A node from both nvidia-smi outputs (traces::node_from_nvidia_smi: CPU affinity ranges, NUMA,
// NVLink domains ...). Input: the query XML, a line "----8<----", then the topo text.
#include <gpusched/gpu_catalog.hpp>
#include <gpusched/traces/nvidia_smi.hpp>

#include "fuzz_target.hpp"

using namespace gpusched;

GPUSCHED_FUZZ_TARGET(nvidia_smi_node) {
  static const GpuCatalog catalog = GpuCatalog::builtin();
  constexpr std::string_view kCut = "\n----8<----\n";
  const std::string_view all = fuzz::as_text(data, size);
  const auto cut = all.find(kCut);
  if (cut == std::string_view::npos) return 0;
  // Defaults from the length: counted CPUs or given, sockets from the matrix or given.
  traces::NodeSpecDefaults defaults;
  defaults.name = "fuzz-node";
  defaults.memory_mib = (size % 2 == 0) ? 1024 * 1024 : 0;
  defaults.cpu_milli = (size % 3 == 0) ? 64000 : 0;
  defaults.sockets = static_cast<std::int16_t>(size % 5 == 0 ? 2 : 0);
  return fuzz::expect_errors([&] {
    (void)traces::node_from_nvidia_smi(all.substr(0, cut), all.substr(cut + kCut.size()), catalog, "query.xml",
                                       "topo.txt", defaults);
  });
}
