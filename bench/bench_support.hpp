#pragma once
/// Helpers shared by the benchmark programs: a demo-like cluster of any size, pre-filled to a
/// target allocation. Bench-private (not part of any gpusched target).
#include <cstdint>
#include <string>
#include <vector>

#include <gpusched/cluster.hpp>
#include <gpusched/gpu_catalog.hpp>
#include <gpusched/job.hpp>
#include <gpusched/node.hpp>
#include <gpusched/resources.hpp>
#include <gpusched/rng.hpp>
#include <gpusched/traces/synthetic.hpp>

namespace gpusched::bench {

/// The demo's node mix, per 10 nodes: 4x (8x A100-80GB, 128 cores, 1 TiB), 3x (8x V100-32GB,
/// 96 cores, 512 GiB), 2x (4x T4, 64 cores, 256 GiB), 1x CPU-only (96 cores, 384 GiB); laid out
/// in blocks like scenario node_groups. 7.2 GPUs per node on average.
inline ClusterState make_demo_like_cluster(std::uint32_t nodes) {
  GpuCatalog catalog = GpuCatalog::builtin();
  struct Group {
    const char* name;
    std::uint32_t per10;
    std::int64_t cores, gib;
    int gpus;
    const char* model;
  };
  const Group groups[] = {{"a100", 4, 128, 1024, 8, "A100-80GB"},
                          {"v100", 3, 96, 512, 8, "V100-32GB"},
                          {"t4", 2, 64, 256, 4, "T4"},
                          {"cpu", 1, 96, 384, 0, nullptr}};
  std::vector<NodeSpec> specs;
  specs.reserve(nodes);
  std::uint32_t made = 0;
  for (std::size_t gi = 0; gi < std::size(groups); ++gi) {
    const auto& g = groups[gi];
    const std::uint32_t count = gi + 1 == std::size(groups) ? nodes - made : nodes * g.per10 / 10;
    const GpuModelId model = g.model ? *catalog.find(g.model) : GpuModelId{};
    for (std::uint32_t i = 0; i < count; ++i) {
      NodeSpec n;
      n.name = std::string(g.name) + "-" + std::to_string(i);
      n.cpu_milli = g.cores * 1000;
      n.memory_mib = g.gib * 1024;
      n.sockets = 2;
      for (int k = 0; k < g.gpus; ++k) n.gpus.push_back({model, static_cast<std::int16_t>(k * 2 / g.gpus)});
      if (g.model) n.labels.emplace("nvidia.com/gpu.product", g.model);
      specs.push_back(std::move(n));
    }
    made += count;
  }
  return ClusterState(std::move(catalog), ResourceTable{}, std::move(specs));
}

/// GPU grants for `r` on node `n`: the first fully free GPUs (whole) or the first GPU with
/// room (shared). Returns false when the node cannot host it.
inline bool first_fit_grants(const ClusterState& c, NodeId n, const TaskRequest& r, TaskPlacement& p) {
  if (!c.fits(n, r)) return false;
  p.node = n;
  p.gpus.clear();
  const auto gpus = c.gpus(n);
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    if (!r.model_allowed(gpus[i].model)) continue;
    if (r.gpu.mode == GpuMode::kWhole && gpus[i].fully_free()) {
      p.gpus.push_back({static_cast<std::uint16_t>(i), kMilliPerGpu, gpus[i].memory_mib});
      if (static_cast<std::int32_t>(p.gpus.size()) == r.gpu.count) return true;
    } else if (r.gpu.mode == GpuMode::kShared && ClusterState::gpu_fits_shared(gpus[i], r.gpu)) {
      p.gpus.push_back({static_cast<std::uint16_t>(i), r.gpu.milli, r.gpu.memory_mib});
      return true;
    }
  }
  return r.gpu.mode == GpuMode::kNone;
}

struct FillStats {
  std::int64_t jobs_placed = 0;
  double gpu_alloc = 0, cpu_alloc = 0;   ///< fractions of capacity
};

/// Places synthetic jobs (default Alibaba-like mix) until `target_gpu_alloc` of the GPU
/// capacity is allocated. Each job goes to a uniformly random node among those where it fits
/// (rejection sampling, like the "random" profile, but O(1) per job instead of O(nodes)), on
/// its first-fit GPUs. Deterministic for a given seed.
inline FillStats fill_randomly(ClusterState& c, double target_gpu_alloc, std::uint64_t seed) {
  traces::SyntheticConfig cfg;
  cfg.jobs = static_cast<std::int64_t>(c.node_count()) * 16;
  const Workload w = traces::generate(cfg, c, RngStreams(seed));
  Rng rng(seed ^ 0x5eedULL);
  FillStats st;
  const auto n = c.node_count();
  TaskPlacement p;
  for (const auto& job : w) {
    const auto& t = c.totals();
    if (static_cast<double>(t.gpu_used_milli) >= target_gpu_alloc * static_cast<double>(t.gpu_milli)) break;
    for (int probe = 0; probe < 256; ++probe) {
      const NodeId node{static_cast<std::uint32_t>(rng.below(n))};
      if (first_fit_grants(c, node, job.request, p)) {
        c.allocate(job.request, p);
        ++st.jobs_placed;
        break;
      }
    }
  }
  const auto& t = c.totals();
  st.gpu_alloc = static_cast<double>(t.gpu_used_milli) / static_cast<double>(t.gpu_milli);
  st.cpu_alloc = static_cast<double>(t.cpu_used_milli) / static_cast<double>(t.cpu_milli);
  return st;
}

}  // namespace gpusched::bench
