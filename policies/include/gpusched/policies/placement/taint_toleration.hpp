#pragma once
/// `taint-toleration` (Kubernetes TaintToleration).
///  - filter: rejects a node with a NoSchedule or NoExecute taint that none of the job's
///    tolerations tolerates (worded as kube-scheduler's current release words it:
///    "node(s) had untolerated taint(s)");
///    UnschedulableAndUnresolvable, as in Kubernetes (preemption cannot remove a taint).
///  - score: the number of PreferNoSchedule taints the job does not tolerate, normalised the
///    Kubernetes way (reverse DefaultNormalizeScore): 100 - 100 * count / max over the feasible
///    nodes (integer arithmetic), so the node with the fewest gets 100; all 100 when none has any.
/// O(taints x tolerations) per node.
///
/// Example profile: {"filter": ["node-resources-fit", "taint-toleration"], "score": ["taint-toleration"]}
#include <gpusched/policies/framework/plugin.hpp>

namespace gpusched::policies {

class TaintTolerationPlugin final : public FilterPlugin, public ScorePlugin {
 public:
  [[nodiscard]] std::string_view name() const override { return "taint-toleration"; }
  [[nodiscard]] bool node_local_answers() const override { return true; }
  [[nodiscard]] Status filter(const ClusterState& cluster, const TaskContext& ctx, NodeId node) const override;
  /// Untolerated PreferNoSchedule taints on the node (raw; see normalize()).
  [[nodiscard]] double score(const ClusterState& cluster, const TaskContext& ctx, NodeId node) override;
  void normalize(std::span<double> scores) const override;
  /// DefaultNormalizeScore (reversed) with every truncated raw score <= 0 (maximum 0): every score 100.
  [[nodiscard]] IdleNormalize normalize_when_idle() const override { return {true, false, 100.0}; }
  [[nodiscard]] bool normalize_active(double s) const override { return static_cast<std::int64_t>(s) > 0; }
  /// 100 on every node while no node has a PreferNoSchedule taint (every raw score 0).
  [[nodiscard]] std::optional<double> constant_score(const ClusterState& cluster, const TaskContext& /*ctx*/) const override {
    if (cluster.prefer_no_schedule_taints() != 0) return std::nullopt;
    return 100.0;
  }
};

}  // namespace gpusched::policies
