#pragma once
/// Choosing GPUs inside the chosen node.
///  - `gpu-first-fit`: the lowest-index GPUs that fit.
///  - `gpu-spread`: shared requests go to the GPU with the most free memory, then compute.
///  - `gpu-random`: random fitting GPUs (stream "policy.gpu-random").
/// Whole-GPU requests always take fully free GPUs of an allowed model; a grant takes the whole
/// compute (1000 milli) and all memory of the GPU.
#include <gpusched/policies/framework/plugin.hpp>

namespace gpusched::policies {

/// Fills `out.gpus` with `r.gpu.count` fully free allowed GPUs in index order; false if short.
bool take_whole_gpus(const ClusterState& cluster, const TaskRequest& r, NodeId node, TaskPlacement& out);
/// One shared grant on GPU `index` of the node.
void grant_shared(const ClusterState& cluster, const TaskRequest& r, NodeId node, int index, TaskPlacement& out);

class GpuFirstFit final : public DeviceSelectPlugin {
 public:
  [[nodiscard]] std::string_view name() const override { return "gpu-first-fit"; }
  [[nodiscard]] bool select(const ClusterState& cluster, const TaskContext& ctx, NodeId node,
                            TaskPlacement& out) const override;
};

class GpuSpread final : public DeviceSelectPlugin {
 public:
  [[nodiscard]] std::string_view name() const override { return "gpu-spread"; }
  [[nodiscard]] bool select(const ClusterState& cluster, const TaskContext& ctx, NodeId node,
                            TaskPlacement& out) const override;
};

class GpuRandom final : public DeviceSelectPlugin {
 public:
  explicit GpuRandom(Rng rng) : rng_(rng) {}
  [[nodiscard]] std::string_view name() const override { return "gpu-random"; }
  [[nodiscard]] bool select(const ClusterState& cluster, const TaskContext& ctx, NodeId node,
                            TaskPlacement& out) const override;

 private:
  mutable Rng rng_;
};

}  // namespace gpusched::policies
