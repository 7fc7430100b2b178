#pragma once
/// `node-unschedulable` (Kubernetes NodeUnschedulable): rejects a cordoned node — in gpusched, a
/// node carrying the taint the node controller gives a cordoned node,
/// node.kubernetes.io/unschedulable:NoSchedule — with "node(s) were unschedulable"
/// (UnschedulableAndUnresolvable), unless the job tolerates that taint. kube-scheduler runs it
/// first, so a cordoned node is reported as such, not as lacking resources or as tainted.
/// O(taints) per node.
///
/// Example profile: {"filter": ["node-unschedulable", "taint-toleration", "node-affinity", "node-resources-fit"]}
#include <gpusched/policies/framework/plugin.hpp>

namespace gpusched::policies {

class NodeUnschedulablePlugin final : public FilterPlugin {
 public:
  /// The taint a cordoned node carries (Kubernetes TaintNodeUnschedulable).
  static constexpr std::string_view kTaintKey = "node.kubernetes.io/unschedulable";
  [[nodiscard]] std::string_view name() const override { return "node-unschedulable"; }
  [[nodiscard]] bool node_local_answers() const override { return true; }
  [[nodiscard]] Status filter(const ClusterState& cluster, const TaskContext& ctx, NodeId node) const override;
};

}  // namespace gpusched::policies
