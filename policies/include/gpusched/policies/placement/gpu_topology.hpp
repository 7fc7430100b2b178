#pragma once
/// `gpu-topology` score: for a task of several GPUs (one per GPU: whole GPUs, HAMi shares,
/// vGPUs, passthrough), prefers the node whose best free k-GPU subset (Topology::best_subset
/// over the GPUs that can serve the request now) is best connected. By the subset's worst
/// pairwise link: NVLink (same NVLink domain or direct link) 100, same PCIe switch 66.7, same
/// NUMA node (host bridge) 33.3, across sockets 0. Tasks of one GPU or none, MIG requests and
/// MIG-single nodes score every node 100.
/// Pair it with the `topology-manager` device select, which takes that best-connected subset.
/// Answers are cached per (node topology shape, free-GPU mask, k): nodes described alike share a
/// Topology, so a cluster of a few node shapes costs O(GPUs) per node once warm.
///
/// Example profile: {"score": ["gpu-topology"], "device_select": "topology-manager"}
#include <cstdint>
#include <unordered_map>

#include <gpusched/policies/framework/plugin.hpp>

namespace gpusched::policies {

class GpuTopologyScore final : public ScorePlugin, public JobEventsPlugin {
 public:
  [[nodiscard]] std::string_view name() const override { return "gpu-topology"; }
  [[nodiscard]] double score(const ClusterState& cluster, const TaskContext& ctx, NodeId node) override;
  /// A new run: forgets the cache (its keys are Topology addresses of the previous cluster).
  void attach(const ClusterState& cluster, std::span<const JobSpec> workload, const JobsView* jobs) override;
  /// Score for a worst link class (see above).
  [[nodiscard]] static double link_score(GpuLink worst);

 private:
  struct Key {
    const Topology* topology;
    std::uint64_t mask;
    std::int32_t k;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    std::size_t operator()(const Key& k) const noexcept;
  };
  std::unordered_map<Key, double, KeyHash> cache_;
  std::vector<int> candidates_;   // scratch
};

}  // namespace gpusched::policies
