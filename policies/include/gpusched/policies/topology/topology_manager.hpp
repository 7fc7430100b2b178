#pragma once
/// `topology-manager`: Kubernetes TopologyManager semantics for one task on one node, as a
/// filter, a score and a device-select plugin (use it at all three hooks).
///  - filter: the kubelet's admission for the `policy` argument (none, best-effort,
///    restricted, single-numa-node) over the node's free CPUs, memory and usable GPUs per
///    NUMA node; `single-numa-node` rejects a task that cannot fit one socket.
///  - score: 100 when the task can be placed with a preferred (narrowest) NUMA affinity, else 0.
///  - device select: GPUs inside the chosen NUMA affinity first, the best-connected subset
///    (Topology::best_subset: NVLink, then one PCIe switch, then one socket); CPUs and memory
///    are pinned to the affinity's sockets unless the policy is `none`.
/// Example profile: {"filter": ["node-resources-fit", {"name": "topology-manager",
///   "args": {"policy": "single-numa-node"}}], "score": ["topology-manager"],
///   "device_select": "topology-manager"}
#include <memory>

#include <gpusched/policies/devices/device_select.hpp>
#include <gpusched/topology_manager.hpp>

namespace gpusched::policies {

class TopologyManagerPlugin final : public FilterPlugin, public ScorePlugin, public DeviceSelectBase {
 public:
  explicit TopologyManagerPlugin(TopologyPolicy policy) : policy_(policy) {}
  [[nodiscard]] std::string_view name() const override { return "topology-manager"; }
  [[nodiscard]] bool node_local_answers() const override { return true; }
  [[nodiscard]] bool normalize_is_identity() const override { return true; }
  [[nodiscard]] Status filter(const ClusterState& cluster, const TaskContext& ctx, NodeId node) const override;
  [[nodiscard]] double score(const ClusterState& cluster, const TaskContext& ctx, NodeId node) override;
  [[nodiscard]] bool select(const ClusterState& cluster, const TaskContext& ctx, NodeId node,
                            TaskPlacement& out) const override;
  /// A DRA claim job (its devices chosen by dynamic-resources): pins its CPUs and memory to the
  /// NUMA nodes admitted for them, as the kubelet's CPU and memory managers do for such a pod.
  void complete(const ClusterState& cluster, const TaskContext& ctx, TaskPlacement& out) const override;
  /// The admission decision for `r` on `node` now; with `devices` false, for its CPU and memory
  /// only (a DRA claim's devices give the kubelet's TopologyManager no hint).
  [[nodiscard]] NumaAdmit admit(const ClusterState& cluster, const TaskRequest& r, NodeId node, bool devices = true) const;

 private:
  /// Pins the task's CPUs and memory to the sockets of `mask` (with `gpus_first`, those of its
  /// GPUs first), spilling over; leaves `out.numa` empty when the NUMA nodes cannot hold them.
  static void pin(const ClusterState& cluster, const TaskRequest& r, NodeId node, std::uint64_t mask, bool gpus_first, TaskPlacement& out);
  TopologyPolicy policy_;
};

}  // namespace gpusched::policies
