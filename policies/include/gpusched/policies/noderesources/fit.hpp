#pragma once
/// `node-resources-fit` (Kubernetes NodeResourcesFit, plus GPUs as gpusched models them):
/// pre-filter rejects a task larger than the largest node in any dimension; filter checks CPU,
/// memory, extended resources, whole GPUs, GPU shares and the GPU-model constraint.
#include <gpusched/policies/framework/plugin.hpp>

namespace gpusched::policies {

class NodeResourcesFit final : public PreFilterPlugin, public FilterPlugin {
 public:
  [[nodiscard]] std::string_view name() const override { return "node-resources-fit"; }
  [[nodiscard]] bool node_local_answers() const override { return true; }
  Status pre_filter(const ClusterState& cluster, TaskContext& ctx) override;
  [[nodiscard]] Status filter(const ClusterState& cluster, const TaskContext& ctx, NodeId node) const override;
  /// The bounds fit_check tests first: schedulable, CPU, memory, TPU chips, free nvidia.com/gpu
  /// units (whole requests), the best single GPU's free compute and memory (shared requests).
  void capacity_need(const ClusterState& cluster, const TaskContext& ctx, CapacityNeed& need) const override;
  /// Every resource the node lacks, as kube-scheduler lists them ("Insufficient cpu",
  /// "Insufficient memory", "Insufficient <extended resource>", then the devices' reason).
  void reasons(const ClusterState& cluster, const TaskContext& ctx, NodeId node, const Status& first,
               std::vector<std::string_view>& out) const override;
  /// The reason string for a fit result (static storage).
  static std::string_view reason(FitResult r);

 private:
  mutable TaskRequest devices_only_;   // scratch: the request without cpu, memory, extended resources
};

}  // namespace gpusched::policies
