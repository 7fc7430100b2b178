#pragma once
/// Choosing GPUs inside the chosen node.
///  - `gpu-first-fit`: the lowest-index GPUs that fit.
///  - `gpu-spread`: shared requests go to the GPU with the most free memory, then compute.
///  - `gpu-random`: random fitting GPUs (stream "policy.gpu-random").
/// Whole-GPU requests take fully free GPUs of an allowed model (or replicas / single-strategy
/// GIs on partitioned nodes). MIG requests take an idle GI of the profile when one exists
/// anywhere on the node, and only then create one (dynamic nodes), at the start chosen by the
/// `mig_start` argument: "best" (keeps the most larger profiles possible), "lowest", "highest".
#include <gpusched/policies/framework/plugin.hpp>

namespace gpusched::policies {

/// The MIG start chooser named by a `mig_start` argument, or nullptr for an unknown name.
ClusterState::MigStartChooser mig_start_chooser(std::string_view policy);
/// Fills `out` (node, GPU grants, TPU chips) for `r` on `node`, visiting GPUs in `order`
/// (empty = index order). False when the node cannot serve the request.
bool pick_devices(const ClusterState& cluster, const TaskRequest& r, NodeId node, std::span<const std::uint16_t> order,
                  ClusterState::MigStartChooser choose, TaskPlacement& out);

/// Shared by the device-select plugins: the MIG start chooser from the `mig_start` argument.
class DeviceSelectBase : public DeviceSelectPlugin {
 public:
  void set_mig_start(ClusterState::MigStartChooser c) { chooser_ = c; }

 protected:
  ClusterState::MigStartChooser chooser_ = nullptr;   // nullptr: "best"
};

class GpuFirstFit final : public DeviceSelectBase {
 public:
  [[nodiscard]] std::string_view name() const override { return "gpu-first-fit"; }
  [[nodiscard]] bool select(const ClusterState& cluster, const TaskContext& ctx, NodeId node,
                            TaskPlacement& out) const override;
};

class GpuSpread final : public DeviceSelectBase {
 public:
  [[nodiscard]] std::string_view name() const override { return "gpu-spread"; }
  [[nodiscard]] bool select(const ClusterState& cluster, const TaskContext& ctx, NodeId node,
                            TaskPlacement& out) const override;
};

class GpuRandom final : public DeviceSelectBase {
 public:
  explicit GpuRandom(Rng rng) : rng_(rng) {}
  [[nodiscard]] std::string_view name() const override { return "gpu-random"; }
  [[nodiscard]] bool select(const ClusterState& cluster, const TaskContext& ctx, NodeId node,
                            TaskPlacement& out) const override;

 private:
  mutable Rng rng_;
};

}  // namespace gpusched::policies
