// Fuzz target (tests/fuzz/README.md): a CEL selector (gpusched/dra/cel.hpp) compiled and, when
// it compiles, evaluated on a fixed device. Compilation may only throw dra::CelError; evaluation
// never throws (errors are results).
#include <gpusched/dra/cel.hpp>
#include <gpusched/dra/device.hpp>

#include "fuzz_target.hpp"

using namespace gpusched;

GPUSCHED_FUZZ_TARGET(cel) {
  static const dra::Device device = [] {
    dra::Device d;
    d.name = "gpu-0";
    d.attributes = {{"gpu.nvidia.com/type", std::string("gpu")},
                    {"gpu.nvidia.com/index", std::int64_t{3}},
                    {"gpu.nvidia.com/cudaComputeCapability", *dra::Semver::parse("9.0.0")},
                    {"gpu.nvidia.com/coherent", true}};
    d.capacity = {{"gpu.nvidia.com/memory", *dra::Quantity::parse("80Gi")}};
    d.sort();
    return d;
  }();
  try {
    const auto e = dra::CelExpression::compile(fuzz::as_text(data, size));
    (void)e.evaluate(device, "gpu.nvidia.com");
  } catch (const dra::CelError&) {
  }
  return 0;
}
