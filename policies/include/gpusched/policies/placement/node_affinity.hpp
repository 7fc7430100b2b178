#pragma once
/// `node-affinity` (Kubernetes NodeAffinity).
///  - filter: the job's nodeSelector (every label equal) and its required node affinity
///    (requiredDuringSchedulingIgnoredDuringExecution: the terms are ORed, the requirements of a
///    term ANDed; operators In, NotIn, Exists, DoesNotExist, Gt, Lt); UnschedulableAndUnresolvable.
///  - score: the sum of the weights of the preferred terms the node matches
///    (preferredDuringSchedulingIgnoredDuringExecution), normalised the Kubernetes way
///    (DefaultNormalizeScore): 100 * sum / max over the feasible nodes (integer arithmetic);
///    all 0 when no node matches a preferred term.
/// O(labels x requirements) per node the first time a node is checked against a given set of
/// rules, then O(1): node labels do not change, so the answers are kept per node for the last
/// 16 distinct (nodeSelector, affinity) sets, for one cluster (same object and node count;
/// attach() forgets them).
///
/// Example profile: {"filter": ["node-resources-fit", "node-affinity"], "score": ["node-affinity"]}
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <gpusched/policies/framework/plugin.hpp>

namespace gpusched::policies {

class NodeAffinityPlugin final : public FilterPlugin, public ScorePlugin, public JobEventsPlugin {
 public:
  [[nodiscard]] std::string_view name() const override { return "node-affinity"; }
  [[nodiscard]] bool node_local_answers() const override { return true; }
  [[nodiscard]] Status filter(const ClusterState& cluster, const TaskContext& ctx, NodeId node) const override;
  /// Sum of matching preferred weights (raw; see normalize()).
  [[nodiscard]] double score(const ClusterState& cluster, const TaskContext& ctx, NodeId node) override;
  void normalize(std::span<double> scores) const override;
  /// DefaultNormalizeScore with every truncated raw score <= 0 (maximum 0): scores unchanged.
  [[nodiscard]] IdleNormalize normalize_when_idle() const override { return {true, true, 0.0}; }
  [[nodiscard]] bool normalize_active(double s) const override { return static_cast<std::int64_t>(s) > 0; }
  /// 0 on every node when the job has no preferred term.
  [[nodiscard]] std::optional<double> constant_score(const ClusterState& /*cluster*/, const TaskContext& ctx) const override {
    if (!ctx.job.constraints.affinity.preferred.empty()) return std::nullopt;
    return 0.0;
  }
  /// A new run: forgets the per-node answers.
  void attach(const ClusterState& cluster, std::span<const JobSpec> workload, const JobsView* jobs) override;

 private:
  /// One set of rules and its answers per node (-1: not computed yet).
  struct Rules {
    std::map<std::string, std::string> selector;
    std::vector<LabelTerm> required;
    std::vector<std::pair<std::int32_t, LabelTerm>> preferred;
    std::vector<std::int8_t> matches;
    std::vector<std::int32_t> weights;
    std::uint64_t stamp = 0;   ///< unique per fill (a CycleState's index is checked against it)
  };
  static constexpr std::size_t kMaxRules = 16;
  Rules& rules(const ClusterState& cluster, const TaskContext& ctx) const;

  mutable const ClusterState* cluster_ = nullptr;
  mutable std::size_t nodes_ = 0;
  mutable std::vector<Rules> rules_;
  mutable std::size_t next_ = 0;   // the entry replaced when all kMaxRules are taken
  mutable std::uint64_t stamps_ = 0;
};

}  // namespace gpusched::policies
