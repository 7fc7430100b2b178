#pragma once
/// GPU-memory bin-packing with gpushare semantics (Alibaba gpushare-scheduler-extender):
/// pick the node, and the single GPU inside it, with the least free GPU memory that still fits.
///  - `gpu-binpack` score: shared request -> minus the free memory left on the best-fitting GPU;
///    whole GPUs -> minus the free GPU memory left on the node; min-max normalised to [0, 100].
///  - `gpu-binpack` device select: that GPU (ties: less free compute, then lower index); whole
///    GPUs: the lowest-index free ones; replicas, vGPUs and MIG GIs: the fullest GPU first.
#include <gpusched/policies/devices/device_select.hpp>

namespace gpusched::policies {

class GpuBinpack final : public ScorePlugin, public DeviceSelectBase {
 public:
  [[nodiscard]] std::string_view name() const override { return "gpu-binpack"; }
  [[nodiscard]] bool node_local_answers() const override { return true; }
  [[nodiscard]] double score(const ClusterState& cluster, const TaskContext& ctx, NodeId node) override;
  void normalize(std::span<double> scores) const override { normalize_min_max(scores); }
  [[nodiscard]] bool normalize_is_min_max() const override { return true; }
  /// Whole GPUs and partitioned units score minus the node's free GPU memory (less what whole GPUs
  /// take, the same on every node with that GPU): one order for every such request, grouped by
  /// the node's GPU memory. CPU-only tasks score 0 everywhere. A share scores the tightest GPU
  /// that fits it (kByGpu: GPUs ordered by free memory, then free compute, least first), except
  /// a share of all the GPU's memory, whose score depends on each GPU's size (kNone). Scores are
  /// integers (MiB, milli), as min-max ordering needs.
  [[nodiscard]] bool orders_nodes() const override { return true; }
  [[nodiscard]] OrderKey order_key(const ClusterState& cluster, NodeId node, std::uint32_t variant) const override;
  [[nodiscard]] OrderBound order_bound(const ClusterState& cluster, const TaskContext& ctx) const override;
  [[nodiscard]] std::pair<double, double> score_range(const ClusterState& cluster, const TaskContext& ctx,
                                                      std::uint32_t group, double key) const override;
  [[nodiscard]] GpuOrderKey gpu_order(const GpuState& gpu) const override;
  [[nodiscard]] std::pair<std::int32_t, std::int32_t> gpu_need(const TaskContext& ctx) const override;
  [[nodiscard]] bool gpu_fits(const TaskContext& ctx, const GpuState& gpu) const override;
  [[nodiscard]] bool select(const ClusterState& cluster, const TaskContext& ctx, NodeId node,
                            TaskPlacement& out) const override;
  /// The shared-request GPU with the least free memory (then compute) that fits, or -1.
  static int tightest_gpu(const ClusterState& cluster, const TaskRequest& r, NodeId node);
};

}  // namespace gpusched::policies
