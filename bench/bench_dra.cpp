// DRA allocation cost (issue 18): Kubernetes' structured allocator (gpusched::dra::Allocator)
// on NVIDIA-vocabulary slices of 1,000 nodes x 8 H100 (two NVSwitch domains of 4 per node, as
// gpusched.io/nvlinkDomain), with half of the GPUs in use (seeded), through the class
// gpu.nvidia.com (NVIDIA's selector).
//
//   BM_Dra_AllocateOnNode/<claim>
//       One Allocate call for one claim on one node (nodes rotate), as the DRA scheduler plugin's
//       Filter makes per node. items = calls.
//   BM_Dra_PlaceClaim/<claim>/nodes:N
//       One claim placed: nodes are tried from a rotating start until the claim fits (the
//       Filter loop of a scheduler that stops at the first feasible node). items = claims.
// Claims: gpu1 (count 1), gpu4 (count 4), gpu4-nvlink (count 4, matchAttribute
// gpusched.io/nvlinkDomain: four GPUs of one NVSwitch domain), gpu1-80g (count 1 with a
// memory selector).
#include <benchmark/benchmark.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include <gpusched/dra/nvidia.hpp>
#include <gpusched/gpu_catalog.hpp>
#include <gpusched/rng.hpp>

namespace {

using namespace gpusched;

struct Cluster {
  std::unique_ptr<dra::Allocator> alloc;
  std::vector<dra::NodeInfo> nodes;
  std::vector<std::uint8_t> in_use;
};

const Cluster& cluster(int n) {
  static std::map<int, Cluster> built;
  auto it = built.find(n);
  if (it != built.end()) return it->second;
  const GpuCatalog catalog = GpuCatalog::builtin();
  const auto model = catalog.find("H100-80GB");
  std::vector<dra::ResourceSlice> slices;
  Cluster c;
  for (int i = 0; i < n; ++i) {
    NodeSpec spec;
    spec.name = "node-" + std::to_string(i);
    for (int g = 0; g < 8; ++g) {
      GpuSpec gpu;
      gpu.model = *model;
      gpu.socket = static_cast<std::int16_t>(g / 4);
      gpu.nvlink_domain = static_cast<std::int16_t>(g / 4);
      spec.gpus.push_back(gpu);
    }
    slices.push_back(*dra::nvidia_slice(spec, catalog));
    c.nodes.push_back({spec.name, {}});
  }
  c.alloc = std::make_unique<dra::Allocator>(dra::nvidia_device_classes(), std::move(slices));
  c.in_use = c.alloc->no_devices_in_use();
  Rng rng(42);
  for (auto& u : c.in_use) u = rng.below(2) == 0 ? 1 : 0;
  return built.emplace(n, std::move(c)).first->second;
}

dra::ResourceClaim claim_of(const std::string& kind) {
  dra::ResourceClaim c;
  c.name = kind;
  dra::DeviceRequest r;
  r.name = "gpus";
  r.exactly.device_class = "gpu.nvidia.com";
  r.exactly.count = kind.rfind("gpu4", 0) == 0 ? 4 : 1;
  if (kind == "gpu1-80g") {
    r.exactly.selectors.push_back(dra::CelExpression::compile("device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('79Gi')) >= 0"));
  }
  c.requests.push_back(r);
  if (kind == "gpu4-nvlink") c.constraints.push_back({{}, "gpusched.io/nvlinkDomain"});
  return c;
}

const char* const kClaims[] = {"gpu1", "gpu1-80g", "gpu4", "gpu4-nvlink"};

void BM_Dra_AllocateOnNode(benchmark::State& state) {
  const Cluster& c = cluster(1000);
  const auto claim = claim_of(kClaims[state.range(0)]);
  const dra::ResourceClaim* claims[] = {&claim};
  std::size_t node = 0, fits = 0;
  for (auto _ : state) {
    auto r = c.alloc->allocate(c.nodes[node], claims, c.in_use);
    fits += r ? 1 : 0;
    benchmark::DoNotOptimize(r);
    node = (node + 1) % c.nodes.size();
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["fits_pct"] = 100.0 * static_cast<double>(fits) / static_cast<double>(state.iterations());
  state.SetLabel(kClaims[state.range(0)]);
}

void BM_Dra_PlaceClaim(benchmark::State& state) {
  const Cluster& c = cluster(static_cast<int>(state.range(1)));
  const auto claim = claim_of(kClaims[state.range(0)]);
  const dra::ResourceClaim* claims[] = {&claim};
  std::size_t start = 0, tried = 0;
  for (auto _ : state) {
    for (std::size_t k = 0; k < c.nodes.size(); ++k) {
      ++tried;
      auto r = c.alloc->allocate(c.nodes[(start + k) % c.nodes.size()], claims, c.in_use);
      if (r) {
        benchmark::DoNotOptimize(r);
        break;
      }
    }
    start = (start + 7) % c.nodes.size();
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["nodes_tried"] = static_cast<double>(tried) / static_cast<double>(state.iterations());
  state.SetLabel(kClaims[state.range(0)]);
}

}  // namespace

BENCHMARK(BM_Dra_AllocateOnNode)->DenseRange(0, 3)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Dra_PlaceClaim)->ArgsProduct({{0, 1, 2, 3}, {1000}})->ArgNames({"claim", "nodes"})->Unit(benchmark::kMicrosecond);
