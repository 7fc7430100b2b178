// Fuzz target (tests/fuzz/README.md): bad input may only throw gpusched::Error.
// `nvidia-smi topo -m` text as traces::parse_nvidia_smi_topo reads it.
#include <gpusched/traces/nvidia_smi.hpp>

#include "fuzz_target.hpp"

using namespace gpusched;

GPUSCHED_FUZZ_TARGET(nvidia_smi_topo) {
  return fuzz::expect_errors([&] { (void)traces::parse_nvidia_smi_topo(fuzz::as_text(data, size), "topo.txt"); });
}
