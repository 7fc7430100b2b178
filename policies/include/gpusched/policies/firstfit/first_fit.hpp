#pragma once
/// `first-fit`: prefers nodes by their order in the cluster (earlier = better). Alone in a
/// profile, the runner stops at the first feasible node (O(position of that node)).
#include <gpusched/policies/framework/plugin.hpp>

namespace gpusched::policies {

class FirstFitScore final : public ScorePlugin {
 public:
  [[nodiscard]] std::string_view name() const override { return "first-fit"; }
  [[nodiscard]] bool node_local_answers() const override { return true; }
  [[nodiscard]] bool normalize_is_identity() const override { return true; }
  [[nodiscard]] double score(const ClusterState& cluster, const TaskContext&, NodeId node) override {
    const auto n = static_cast<double>(cluster.node_count());
    return 100.0 * (1.0 - static_cast<double>(node.value) / n);
  }
  [[nodiscard]] bool orders_by_node_index() const override { return true; }
};

}  // namespace gpusched::policies
