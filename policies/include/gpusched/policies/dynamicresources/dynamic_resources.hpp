#pragma once
/// `dynamic-resources`: kube-scheduler's DynamicResources plugin for jobs whose GPUs come from a
/// DRA claim (a `claim_template`, resolved by the scenario into JobConstraints::claims;
/// docs/dra.md). At `filter` it runs Kubernetes' structured allocator (gpusched::dra::Allocator)
/// for the task's claims on the node, over the node's whole GPUs, passthrough GPUs and static MIG
/// instances published in NVIDIA's DRA vocabulary and a TPU host's chips in Google's
/// (dra::simulated_devices), a GPU with any task, a busy GI and a taken chip being in use; at
/// `device_select` it grants the GPUs, GIs or chips the allocator chose. A TPU claim fits a host
/// only when it takes all of its chips (dra::takes_whole_tpu_host). Jobs without a claim pass the
/// filter, and their devices are chosen as `gpu-first-fit` does.
///
/// A claim shared by several jobs (dra::DeviceClaims::shared, a `resource_claim`) is allocated by
/// the first of them to start, which is granted its devices; while any of them runs, the others
/// go to that node and are granted none (dynamicresources.go Filter: an allocated claim's node
/// selector, "resourceclaim not available on the node", UnschedulableAndUnresolvable), and at
/// most 256 of them use it at once (ResourceClaimReservedForMaxSize; PreFilter "resourceclaim in
/// use"). The engine hands the devices to another running job of the claim when their holder ends
/// (sim::Engine), and the claim is free again once none runs. Such answers depend on which jobs run,
/// so these jobs are never node-local (the node index scans for them).
///
/// Example profile (kube-scheduler's defaults with DRA):
///   {"name": "kube-dra", "filter": [..., {"name": "dynamic-resources"}], "score": [...],
///    "device_select": {"name": "dynamic-resources"}}
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include <gpusched/dra/allocator.hpp>
#include <gpusched/dra/nvidia.hpp>
#include <gpusched/policies/devices/device_select.hpp>
#include <gpusched/policies/framework/plugin.hpp>

namespace gpusched::policies {

class DynamicResources final : public FilterPlugin, public DeviceSelectBase, public JobEventsPlugin {
 public:
  [[nodiscard]] std::string_view name() const override { return "dynamic-resources"; }
  /// The answer reads the node's devices and whether each is in use (its GPUs' and GIs' state,
  /// which the node's generation counts) and the job's claims, which are the same for every job
  /// of one ResourceClaimTemplate (the node index keys request classes by the template).
  [[nodiscard]] bool node_local_answers() const override { return true; }
  /// A shared claim's answers depend on which jobs of the claim run.
  [[nodiscard]] bool node_local_for(const JobSpec& job) const override {
    return job.constraints.claims == nullptr || !job.constraints.claims->shared;
  }
  /// Allocation errors become warnings: a claim job's decisions must ask about every node state
  /// the scan would, so the warnings are the scan's.
  [[nodiscard]] bool exhaustive_for(const JobSpec& job) const override { return job.constraints.claims != nullptr; }
  [[nodiscard]] Status filter(const ClusterState& cluster, const TaskContext& ctx, NodeId node) const override;
  [[nodiscard]] bool select(const ClusterState& cluster, const TaskContext& ctx, NodeId node, TaskPlacement& out) const override;
  /// Besides configuration warnings: the allocation errors met (a CEL runtime error in a
  /// selector), each once, in text order (the node index asks about nodes in another order than
  /// the scan, never about other node states); the task stays pending as kube-scheduler keeps
  /// such a pod.
  [[nodiscard]] std::vector<std::string> warnings() const override;
  /// Shared claims: which run, where, used by how many tasks.
  void attach(const ClusterState& cluster, std::span<const JobSpec> workload, const JobsView* jobs) override;
  void job_started(const JobSpec& job, JobId id, std::span<const TaskPlacement> placements) override;
  void job_stopped(const JobSpec& job, JobId id, std::span<const TaskPlacement> placements) override;
  /// Kubernetes' ResourceClaimReservedForMaxSize: pods that may use one claim at once.
  static constexpr std::uint32_t kMaxClaimUsers = 256;

 private:
  struct SharedUse {
    NodeId node;                 // where the claim is allocated (while a job uses it)
    std::vector<std::pair<JobId, std::uint32_t>> users;   // running jobs using it, with their tasks (status.reservedFor)
    [[nodiscard]] std::uint32_t tasks() const {
      std::uint32_t n = 0;
      for (const auto& u : users) n += u.second;
      return n;
    }
  };
  /// A shared claim's node for this task, when it is allocated already (by a running job, or by
  /// an earlier task of this attempt); nullopt: the task would allocate it.
  [[nodiscard]] std::optional<NodeId> shared_node(const TaskContext& ctx) const;
  struct Devices {
    std::uint64_t cluster = 0;                       // ClusterState::instance() they were built for
    std::vector<std::uint64_t> copies;               // instances copied from it (EASY backfill's scratch clusters)
    const std::vector<dra::DeviceClass>* classes = nullptr;
    const std::vector<dra::ResourceSlice>* given = nullptr;   // the scenario's slices (DeviceClaims::slices)
    std::unique_ptr<dra::Allocator> alloc;
    std::vector<std::int32_t> slice_of_node;         // node -> its slice (-1: no device)
    std::vector<std::int32_t> nic_slice_of_node;     // node -> its NICs' slice (-1: no NIC)
    std::vector<dra::DeviceUnit> unit_of;            // device -> its GPU (and GI) on its node
    std::vector<dra::NodeInfo> nodes;
  };
  /// The task's allocation on `node`; nullopt when it does not fit (`partial_tpu`, when given, is
  /// set when only the TPU driver's whole-host rule refused it). Errors are noted as warnings.
  [[nodiscard]] std::optional<std::vector<dra::Allocation>> allocate(const ClusterState& cluster, const dra::DeviceClaims& claims,
                                                                     NodeId node, bool* partial_tpu = nullptr) const;
  mutable std::optional<Devices> devices_;
  mutable std::vector<std::uint8_t> in_use_;
  mutable std::vector<std::string> errors_;
  std::unordered_map<const dra::DeviceClaims*, SharedUse> shared_;
};

}  // namespace gpusched::policies
