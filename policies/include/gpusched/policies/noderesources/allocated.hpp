#pragma once
/// Node scoring by how full a node is after placement.
///  - `least-allocated` (spread; Kubernetes LeastAllocated): mean over cpu, memory and GPU of
///    free-after / capacity, x100.
///  - `most-allocated` (pack; Kubernetes MostAllocated): mean of used-after / capacity, x100.
///  - `best-fit` (the FGD paper's Best-fit): 100 x (1 - [w_cpu (freeCPU - req)/maxCPU +
///    w_gpu (freeGPU - req)/maxGPU]), max = the cluster's largest node.
/// A dimension whose capacity is 0 on a node is left out of that node's mean.
#include <array>

#include <gpusched/policies/framework/plugin.hpp>

namespace gpusched::policies {

struct ResourceWeights {
  double cpu = 1.0, memory = 1.0, gpu = 1.0;
};

class AllocatedScore final : public ScorePlugin {
 public:
  enum class Mode { kLeast, kMost };
  AllocatedScore(Mode mode, ResourceWeights w, std::string_view name) : mode_(mode), w_(w), name_(name) {}
  [[nodiscard]] std::string_view name() const override { return name_; }
  [[nodiscard]] double score(const ClusterState& cluster, const TaskContext& ctx, NodeId node) override;

 private:
  Mode mode_;
  ResourceWeights w_;
  std::string_view name_;
};

class BestFitScore final : public ScorePlugin {
 public:
  BestFitScore(double cpu_weight, double gpu_weight) : w_cpu_(cpu_weight), w_gpu_(gpu_weight) {}
  [[nodiscard]] std::string_view name() const override { return "best-fit"; }
  [[nodiscard]] double score(const ClusterState& cluster, const TaskContext& ctx, NodeId node) override;

 private:
  double w_cpu_, w_gpu_;
};

}  // namespace gpusched::policies
