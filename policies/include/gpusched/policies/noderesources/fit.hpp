#pragma once
/// `node-resources-fit` (Kubernetes NodeResourcesFit, plus GPUs as gpusched models them):
/// pre-filter rejects a task larger than the largest node in any dimension; filter checks CPU,
/// memory, extended resources, whole GPUs, GPU shares and the GPU-model constraint.
#include <gpusched/policies/framework/plugin.hpp>

namespace gpusched::policies {

class NodeResourcesFit final : public PreFilterPlugin, public FilterPlugin {
 public:
  [[nodiscard]] std::string_view name() const override { return "node-resources-fit"; }
  Status pre_filter(const ClusterState& cluster, TaskContext& ctx) override;
  [[nodiscard]] Status filter(const ClusterState& cluster, const TaskContext& ctx, NodeId node) const override;
  /// The reason string for a fit result (static storage).
  static std::string_view reason(FitResult r);
};

}  // namespace gpusched::policies
