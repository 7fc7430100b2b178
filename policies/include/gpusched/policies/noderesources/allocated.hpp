#pragma once
/// Node scoring by how full a node is after placement.
///  - `least-allocated` / `most-allocated`, scoring "kubernetes" (the default): kube-scheduler's
///    NodeResourcesFit LeastAllocated / MostAllocated (noderesources/least_allocated.go,
///    most_allocated.go, resource_allocation.go). Per listed resource, in integers:
///    least = (capacity - requested) x 100 / capacity (0 when over capacity), most =
///    min(requested, capacity) x 100 / capacity, where requested = what the node's tasks ask for
///    plus the job's request; the node score is sum(weight x score) / sum(weight), truncated.
///    CPU and memory count a task that asks for none as 100m / 200 MiB (the peer's
///    NonZeroRequested, pkg/scheduler/util non_zero.go; gpusched cannot tell a request left unset
///    from one written as 0 and takes 0 as unset; arg `non_zero_defaults: false` takes it as an
///    explicit 0). A GPU (`nvidia.com/gpu`, in milli),
///    TPU (`google.com/tpu`) or extended resource the job does not request is left out, and so is
///    a resource the node does not have (with its weight). Resources default to cpu 1, memory 1:
///    GPUs do not count unless listed. O(resources) per node.
///  - scoring "gpusched" (gpusched's own rule, not the peer's): mean over cpu, memory and GPU milli
///    of free-after / capacity (least) or used-after / capacity (most), x100, real-valued, with
///    weights cpu_weight, memory_weight, gpu_weight (default 1 each); the GPU counts whether or not
///    the job asks for one; a request is taken as given (no non-zero defaults).
///  - `best-fit` (the FGD paper's Best-fit): 100 x (1 - [w_cpu (freeCPU - req)/maxCPU +
///    w_gpu (freeGPU - req)/maxGPU]), max = the cluster's largest node.
/// A dimension whose capacity is 0 on a node is left out of that node's mean.
///
/// Example profile (kube-scheduler's bin packing with GPUs weighted 3):
///   {"score": [{"name": "most-allocated", "args": {"resources": [{"name": "cpu", "weight": 1},
///      {"name": "memory", "weight": 1}, {"name": "nvidia.com/gpu", "weight": 3}]}}]}
#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <gpusched/policies/framework/plugin.hpp>

namespace gpusched::policies {

struct ResourceWeights {
  double cpu = 1.0, memory = 1.0, gpu = 1.0;
};

/// One resource of kube-scheduler's scoringStrategy.resources.
struct ScoredResource {
  std::string name;           ///< cpu, memory, nvidia.com/gpu, google.com/tpu or an extended resource
  std::int64_t weight = 1;    ///< 1..100
};

/// kube-scheduler's non-zero defaults for a container without requests (non_zero.go).
inline constexpr std::int64_t kKubeDefaultMilliCpu = 100;
inline constexpr std::int64_t kKubeDefaultMemoryMib = 200;

class AllocatedScore final : public ScorePlugin {
 public:
  enum class Mode { kLeast, kMost };
  /// kube-scheduler's scoring over `resources` (names unique, weights 1..100). `non_zero_defaults`
  /// false: a task's 0 CPU / memory counts 0 (a container that writes 0 explicitly) rather than the
  /// peer's default for one that leaves it unset.
  AllocatedScore(Mode mode, std::vector<ScoredResource> resources, std::string_view name, bool non_zero_defaults = true);
  /// gpusched's own scoring (`scoring: "gpusched"`): real-valued, cpu/memory/GPU weights.
  AllocatedScore(Mode mode, ResourceWeights w, std::string_view name) : mode_(mode), kube_(false), w_(w), name_(name) {}
  [[nodiscard]] std::string_view name() const override { return name_; }
  [[nodiscard]] bool node_local_answers() const override { return true; }
  [[nodiscard]] bool normalize_is_identity() const override { return true; }
  [[nodiscard]] double score(const ClusterState& cluster, const TaskContext& ctx, NodeId node) override;

  /// One order for every request (kube-scheduler's MostAllocated over cpu, memory and
  /// nvidia.com/gpu only): nodes of one capacity shape (group) are ordered by their weighted
  /// requested fractions sum(w x requested / capacity), which with the task's own fractions
  /// added bounds the score from above (each resource's floor and the clamp at capacity only
  /// lower it). Two variants: with the GPU (a task asking for GPUs) and without (one asking for
  /// none, whose score leaves the GPU out). Nodes whose GPUs the device plugin replicates
  /// (kube_gpu_counts) get a group whose bound is the top score.
  ///
  /// kube-scheduler's LeastAllocated over cpu and memory alone (no nvidia.com/gpu listed) orders
  /// the nodes of a shape by -sum(w x requested / capacity), defaults counted: with the task's
  /// own fractions added, the score is at most 100 - 100 min(that sum, the smallest weight) /
  /// sum(w) (each resource over capacity scores 0, not less).
  ///
  /// kube-scheduler's LeastAllocated over cpu and memory (equal weights) followed by
  /// BalancedAllocation over cpu and memory with the same profile weight (the default plugins:
  /// order_with) orders the nodes for their sum. For fractions a (cpu) and b (memory) after
  /// placement, LeastAllocated is at most 100 - 50 (a + b) and BalancedAllocation at most
  /// 100 - 50 |a - b|, so the sum is at most 200 - 100 max(a, b). Nodes of one capacity shape and
  /// one dominant resource before placement (group: cpu when its fraction is the larger or equal,
  /// else memory) are ordered by that larger fraction m (key: -m); with the task, max(a, b) is at
  /// least m plus the task's fraction of the dominant resource, which bounds the sum. Nodes whose
  /// tasks count non-zero defaults (LeastAllocated adds them, BalancedAllocation does not: equal
  /// used amounts would not mean equal scores), and nodes without cpu or memory, get a group
  /// whose bound is the top score. A task's own non-zero default (no cpu or no memory asked)
  /// only lowers LeastAllocated below the bound, which reads the plain request.
  [[nodiscard]] bool orders_nodes() const override { return ordered_; }
  std::size_t order_with(std::span<const std::pair<ScorePlugin*, double>> scores) override;
  [[nodiscard]] OrderKey order_key(const ClusterState& cluster, NodeId node, std::uint32_t variant) const override;
  [[nodiscard]] std::uint32_t order_variants() const override { return paired_ || mode_ == Mode::kLeast ? 1 : 2; }
  [[nodiscard]] std::uint32_t order_variant(const ClusterState& /*cluster*/, const TaskContext& ctx) const override;
  [[nodiscard]] std::uint64_t order_epoch(const ClusterState& cluster) const override;
  [[nodiscard]] OrderBound order_bound(const ClusterState& /*cluster*/, const TaskContext& ctx) const override;
  [[nodiscard]] std::pair<double, double> score_range(const ClusterState& cluster, const TaskContext& ctx,
                                                      std::uint32_t group, double key) const override;

 private:
  enum class Kind : std::uint8_t { kCpu, kMemory, kGpu, kTpu, kExtended };
  /// A capacity shape of the order: each scored resource's capacity on the node (0: left out).
  struct Shape {
    std::int64_t cpu = 0, memory = 0, gpu = 0;
    bool memory_dominant = false;   ///< paired order: memory's fraction is the larger
    bool operator==(const Shape&) const = default;
  };
  static constexpr std::uint32_t kReplicatedGroup = 0;   ///< bound: the top score (paired: any node it cannot bound)
  [[nodiscard]] std::uint32_t group_of(const Shape& shape) const;
  /// The non-zero default's request when the task asks for none (kube_requested_cpu's rule).
  [[nodiscard]] std::int64_t task_cpu(const TaskRequest& r) const;
  [[nodiscard]] std::int64_t task_memory(const TaskRequest& r) const;
  std::int64_t w_cpu_ = 0, w_memory_ = 0, w_gpu_ = 0;   ///< weights of the listed resources (0: not listed)
  bool ordered_ = false;
  bool paired_ = false;   ///< the order bounds this score plus balanced-allocation's (order_with)
  /// The shapes met so far: group g > 0 is shapes_[g - 1]. Filled by order_key (the index keeps
  /// one order per scheduler, so the plugin instance is not shared between threads).
  mutable std::vector<Shape> shapes_;
  struct Scored {
    Kind kind;
    std::int64_t weight;
    std::string name;
  };
  [[nodiscard]] double kube_score(const ClusterState& cluster, const TaskContext& ctx, NodeId node) const;
  Mode mode_;
  bool kube_;
  bool non_zero_defaults_ = true;
  ResourceWeights w_;
  std::vector<Scored> resources_;
  std::string_view name_;
};

class BestFitScore final : public ScorePlugin {
 public:
  BestFitScore(double cpu_weight, double gpu_weight) : w_cpu_(cpu_weight), w_gpu_(gpu_weight) {}
  [[nodiscard]] std::string_view name() const override { return "best-fit"; }
  [[nodiscard]] bool node_local_answers() const override { return true; }
  [[nodiscard]] bool normalize_is_identity() const override { return true; }
  [[nodiscard]] double score(const ClusterState& cluster, const TaskContext& ctx, NodeId node) override;
  /// One order for every request: the score is 100 x (1 - weighted free left), and what a request
  /// takes away is the same on every node, so nodes with less weighted free CPU and GPU score higher.
  [[nodiscard]] bool orders_nodes() const override { return std::isfinite(w_cpu_) && std::isfinite(w_gpu_); }   // NaN: no order
  [[nodiscard]] OrderKey order_key(const ClusterState& cluster, NodeId node, std::uint32_t variant) const override;
  [[nodiscard]] std::uint64_t order_epoch(const ClusterState& cluster) const override;
  [[nodiscard]] OrderBound order_bound(const ClusterState& /*cluster*/, const TaskContext& /*ctx*/) const override {
    return OrderBound::kBounded;
  }
  [[nodiscard]] std::pair<double, double> score_range(const ClusterState& cluster, const TaskContext& ctx,
                                                      std::uint32_t group, double key) const override;

 private:
  double w_cpu_, w_gpu_;
};

}  // namespace gpusched::policies
