#pragma once
/// Cluster state with incremental per-node aggregates (Kubernetes NodeInfo-style).
///
/// Every change goes through allocate()/release(); both update the node's aggregates,
/// the cluster totals and the node's generation counter.
///
/// Example:
///   ClusterState c(catalog, resources, std::move(specs));
///   TaskPlacement p{NodeId{0}, {{0, 1000, 0}}};
///   c.allocate(request, p);   // ... later
///   c.release(request, p);
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <gpusched/gpu_catalog.hpp>
#include <gpusched/ids.hpp>
#include <gpusched/node.hpp>
#include <gpusched/resources.hpp>

namespace gpusched {

/// What one task got on one GPU.
struct GpuGrant {
  std::uint16_t index = 0;       ///< GPU index within the node
  std::int32_t milli = 0;        ///< compute share taken (1000 = whole)
  std::int64_t memory_mib = 0;   ///< GPU memory taken
  auto operator<=>(const GpuGrant&) const = default;
};

/// Where one task runs: a node and its GPU grants.
struct TaskPlacement {
  NodeId node;
  std::vector<GpuGrant> gpus;
  bool operator==(const TaskPlacement&) const = default;
};

/// Runtime state of one GPU.
struct GpuState {
  std::int32_t milli_free = kMilliPerGpu;
  std::int64_t memory_free_mib = 0;
  std::int64_t memory_mib = 0;
  GpuModelId model;
  std::int16_t socket = 0;
  std::uint16_t tasks = 0;       ///< tasks holding a grant on it
  [[nodiscard]] bool fully_free() const { return tasks == 0; }
};

/// Runtime state of one node: free capacity and aggregates over its GPUs.
struct NodeState {
  std::int64_t cpu_free_milli = 0;
  std::int64_t memory_free_mib = 0;
  std::uint32_t gpu_begin = 0;          ///< first GPU in ClusterState::gpus()
  std::uint16_t gpu_count = 0;
  std::uint16_t gpus_fully_free = 0;    ///< GPUs with no task at all
  std::int32_t gpu_milli_free = 0;      ///< sum over GPUs
  std::int32_t gpu_milli_free_max = 0;  ///< best single GPU, compute
  std::int64_t gpu_memory_free_max = 0; ///< best single GPU, memory
  std::int64_t gpu_memory_free = 0;     ///< sum over GPUs, MiB
  GpuModelId model;                     ///< the model when all GPUs share it, else invalid
  bool schedulable = true;              ///< false while the node is down or cordoned
  std::uint32_t tasks = 0;              ///< tasks running here
  std::uint64_t generation = 0;         ///< bumped on every change
};

/// Why a request does not fit a node now (first failing dimension, in this order).
enum class FitResult : std::uint8_t {
  kFits, kUnschedulable, kCpu, kMemory, kExtended, kGpuModel, kGpuCount, kGpuShare
};

/// The cluster: node specs, runtime state, totals. Not thread-safe; copyable (what-if copies).
class ClusterState {
 public:
  ClusterState(GpuCatalog catalog, ResourceTable resources, std::vector<NodeSpec> nodes);

  [[nodiscard]] std::size_t node_count() const { return nodes_.size(); }
  [[nodiscard]] const NodeSpec& spec(NodeId n) const { return specs_[n.value]; }
  [[nodiscard]] const NodeState& node(NodeId n) const { return nodes_[n.value]; }
  [[nodiscard]] std::span<const NodeState> nodes() const { return nodes_; }
  [[nodiscard]] std::span<const GpuState> gpus(NodeId n) const {
    const auto& s = nodes_[n.value];
    return {gpus_.data() + s.gpu_begin, s.gpu_count};
  }
  [[nodiscard]] std::span<const GpuState> all_gpus() const { return gpus_; }
  [[nodiscard]] std::int64_t extended_free(NodeId n, ResourceId r) const;
  [[nodiscard]] std::optional<NodeId> find_node(std::string_view name) const;
  [[nodiscard]] const GpuCatalog& catalog() const { return catalog_; }
  [[nodiscard]] const ResourceTable& resources() const { return resources_; }

  /// Could `r` ever fit on node `n` if the node were empty? (validation of inputs)
  [[nodiscard]] bool fits_empty(NodeId n, const TaskRequest& r) const;
  /// Does `r` fit node `n` now (CPU, memory, extended, GPUs incl. model constraint)?
  [[nodiscard]] bool fits(NodeId n, const TaskRequest& r) const { return fit_check(n, r) == FitResult::kFits; }
  /// Like fits(), but says which dimension failed first. O(GPUs on the node) at worst.
  [[nodiscard]] FitResult fit_check(NodeId n, const TaskRequest& r) const;
  /// Can the GPU part of `r` be served by GPU `g` of node `n` now? (shared requests)
  [[nodiscard]] static bool gpu_fits_shared(const GpuState& g, const GpuRequest& r) {
    return g.milli_free >= r.milli && g.memory_free_mib >= r.memory_mib;
  }

  /// Takes the resources. Precondition: the placement fits (asserted).
  void allocate(const TaskRequest& r, const TaskPlacement& p);
  /// Gives back exactly what allocate() took. Precondition: it was allocated (asserted).
  void release(const TaskRequest& r, const TaskPlacement& p);
  /// Marks a node (un)schedulable (node down/up, cordon). Running tasks are the caller's business.
  void set_schedulable(NodeId n, bool schedulable);

  // Cluster totals, maintained incrementally.
  struct Totals {
    std::int64_t cpu_milli = 0, memory_mib = 0, gpu_milli = 0, gpus = 0;
    std::int64_t cpu_used_milli = 0, memory_used_mib = 0, gpu_used_milli = 0, gpus_busy = 0;
    std::int64_t tasks = 0;
  };
  [[nodiscard]] const Totals& totals() const { return totals_; }
  /// Largest node, per dimension (for normalisation, e.g. FGD's 128,000 milli-CPU / 8,000 milli-GPU).
  [[nodiscard]] const NodeState& max_capacity() const { return max_capacity_; }
  [[nodiscard]] std::uint64_t generation() const { return generation_; }
  /// The cluster's capacity per node, as built (free = capacity when empty).
  [[nodiscard]] std::int64_t cpu_capacity(NodeId n) const { return specs_[n.value].cpu_milli; }
  [[nodiscard]] std::int64_t memory_capacity(NodeId n) const { return specs_[n.value].memory_mib; }

 private:
  void refresh_gpu_aggregates(NodeState& s);

  GpuCatalog catalog_;
  ResourceTable resources_;
  std::vector<NodeSpec> specs_;
  std::vector<NodeState> nodes_;
  std::vector<GpuState> gpus_;
  std::vector<std::int64_t> extended_free_;   // node-major: [node * resources + r]
  std::unordered_map<std::string, NodeId> by_name_;
  Totals totals_;
  NodeState max_capacity_;
  std::uint64_t generation_ = 0;
};

}  // namespace gpusched
