#pragma once
/// `requested-to-capacity-ratio` (kube-scheduler's NodeResourcesFit scoring strategy
/// RequestedToCapacityRatio): per resource, the node's utilisation after placement,
/// floor(100 x (used + requested) / capacity) (100 when over capacity), is mapped through a
/// broken-linear `shape` of {utilization 0..100 -> score 0..10} points (scores scaled x10 to
/// 0..100, integer interpolation as the peer's helper.BuildBrokenLinearFunction); the node score
/// is round(sum(weight x score) / sum(weight)) over the resources the node has and whose score is
/// above 0. Resources: "cpu", "memory", "nvidia.com/gpu" (GPU milli used / the node's GPUs) and
/// any extended resource by name; as the peer, a GPU or extended resource the job does not request
/// is left out. As the peer's NonZeroRequested, cpu and memory count a task (placed or placing)
/// that asks for none as 100m / 200 MiB (pkg/scheduler/util non_zero.go; arg `non_zero_defaults:
/// false` counts such a request as 0, as for a container that writes 0). O(resources) per node.
///
/// Example profile (bin packing on GPUs):
///   {"score": [{"name": "requested-to-capacity-ratio", "args": {
///      "shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}],
///      "resources": [{"name": "nvidia.com/gpu", "weight": 3}, {"name": "cpu", "weight": 1}]}}]}
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <gpusched/policies/framework/plugin.hpp>

namespace gpusched::policies {

class RequestedToCapacityRatio final : public ScorePlugin {
 public:
  struct Point {
    std::int64_t utilization = 0;   ///< 0..100
    std::int64_t score = 0;         ///< as given: 0..10
  };
  struct Resource {
    std::string name;
    std::int64_t weight = 1;        ///< 1..100
  };
  /// `shape`: utilisations strictly increasing; `resources`: names unique. `non_zero_defaults`
  /// false: a 0 CPU / memory request counts 0 (a container that writes 0), not 100m / 200 MiB.
  RequestedToCapacityRatio(std::vector<Point> shape, std::vector<Resource> resources, bool non_zero_defaults = true);
  [[nodiscard]] std::string_view name() const override { return "requested-to-capacity-ratio"; }
  [[nodiscard]] bool node_local_answers() const override { return true; }
  [[nodiscard]] bool normalize_is_identity() const override { return true; }
  [[nodiscard]] double score(const ClusterState& cluster, const TaskContext& ctx, NodeId node) override;
  /// The peer's helper.BuildBrokenLinearFunction: the score at utilisation `p` of `points`
  /// (integer interpolation; flat before the first and after the last point).
  static std::int64_t broken_linear(std::span<const Point> points, std::int64_t p);

 private:
  std::vector<Point> shape_;   // scores scaled to 0..100
  std::vector<Resource> resources_;
  bool non_zero_defaults_ = true;
};

}  // namespace gpusched::policies
