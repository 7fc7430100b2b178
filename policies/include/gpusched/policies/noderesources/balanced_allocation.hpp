#pragma once
/// `balanced-allocation` (kube-scheduler's NodeResourcesBalancedAllocation, one of its default
/// score plugins, weight 1; noderesources/balanced_allocation.go and resource_allocation.go).
/// Per listed resource the node's fraction after placement, min(1, (requested on the node + the
/// job's request) / capacity); the score is trunc((1 - sd) x 100), sd being |f1 - f2| / 2 for two
/// fractions, the population standard deviation for more, 0 for fewer. As the peer (its
/// `useRequested`), requests count as written: no 100m / 200 MiB non-zero defaults for cpu or
/// memory. A GPU (`nvidia.com/gpu`, in milli), TPU (`google.com/tpu`) or extended resource the job
/// does not request is left out, and so is any resource the node does not have (capacity 0).
/// A job that requests none of the listed resources scores 0 on every node (the peer skips the
/// plugin for such best-effort pods; a constant shifts no choice). Weights only select the
/// resources: the formula ignores them, as the peer's does. Resources default to cpu 1,
/// memory 1. O(resources) per node.
///
/// Example profile (kube-scheduler's default scores, GPUs balanced too):
///   {"score": [{"name": "least-allocated"},
///              {"name": "balanced-allocation", "args": {"resources": [{"name": "cpu", "weight": 1},
///                 {"name": "memory", "weight": 1}, {"name": "nvidia.com/gpu", "weight": 1}]}}]}
#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <gpusched/policies/framework/plugin.hpp>
#include <gpusched/policies/noderesources/allocated.hpp>

namespace gpusched::policies {

class BalancedAllocation final : public ScorePlugin {
 public:
  /// `resources`: names unique (weights are checked by the registry, then unused, as the peer).
  explicit BalancedAllocation(std::vector<ScoredResource> resources);
  [[nodiscard]] std::string_view name() const override { return "balanced-allocation"; }
  [[nodiscard]] bool node_local_answers() const override { return true; }
  [[nodiscard]] bool normalize_is_identity() const override { return true; }
  /// An integer 0..100 (see above).
  [[nodiscard]] double score(const ClusterState& cluster, const TaskContext& ctx, NodeId node) override;
  /// Whether the listed resources are cpu and memory, nothing else (least-allocated's score
  /// order may then bound this score too: AllocatedScore::order_with).
  [[nodiscard]] bool cpu_and_memory() const {
    return resources_.size() == 2 && std::any_of(resources_.begin(), resources_.end(), [](const Balanced& r) { return r.kind == Kind::kCpu; }) &&
           std::any_of(resources_.begin(), resources_.end(), [](const Balanced& r) { return r.kind == Kind::kMemory; });
  }

 private:
  enum class Kind : std::uint8_t { kCpu, kMemory, kGpu, kTpu, kExtended };
  struct Balanced {
    Kind kind;
    std::string name;
  };
  std::vector<Balanced> resources_;
};

}  // namespace gpusched::policies
