#pragma once
/// `random`: a uniformly random score per node from the run's stream "policy.random"
/// (reproducible for a given seed). `gpu-random` device select: random fitting GPUs.
#include <gpusched/policies/framework/plugin.hpp>

namespace gpusched::policies {

class RandomScore final : public ScorePlugin {
 public:
  explicit RandomScore(Rng rng) : rng_(rng) {}
  [[nodiscard]] std::string_view name() const override { return "random"; }
  [[nodiscard]] double score(const ClusterState&, const TaskContext&, NodeId) override { return 100.0 * rng_.uniform(); }

 private:
  Rng rng_;
};

}  // namespace gpusched::policies
