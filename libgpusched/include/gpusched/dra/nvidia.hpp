#pragma once
/// A node's GPUs as NVIDIA's DRA driver (driver `gpu.nvidia.com`, k8s-dra-driver-gpu) publishes
/// them: one ResourceSlice per node (pool = node name), a device per whole GPU (`gpu-<i>`), per
/// passthrough GPU (`gpu-vfio-<k>`, type vfio, k its place among the node's NVIDIA GPUs) or, for a
/// GPU with static MIG instances, one per instance
/// (`gpu-<i>-mig-<GI profile id>-<start>-<memory slices>`, as the driver names them), with the driver's attributes and
/// capacities where the node model knows them (docs/dra.md lists each and its source):
///   type ("gpu" | "mig"), uuid (synthetic, stable per node and index), productName, brand,
///   architecture and cudaComputeCapability (from the model name), profile and parentUUID
///   (MIG), resource.kubernetes.io/numaNode (the GPU's socket), resource.kubernetes.io/pcieRoot
///   (derived: GPUs behind one PCIe switch share a root), resource.kubernetes.io/pciBusID (when
///   discovered), capacity memory (and multiprocessors and memorySlice<k> for MIG).
/// NVIDIA's driver publishes no NVLink attribute on GPUs; gpusched adds its own
/// `gpusched.io/nvlinkDomain` (int) for GPUs of one NVSwitch domain, so a claim can ask for GPUs
/// of one domain with matchAttribute. AMD GPUs and TPU hosts get no devices here.
#include <nlohmann/json.hpp>

#include <cstdint>

#include <gpusched/dra/allocator.hpp>
#include <gpusched/gpu_catalog.hpp>
#include <gpusched/node.hpp>

namespace gpusched::dra {

inline constexpr std::string_view kNvidiaDriver = "gpu.nvidia.com";

/// The node's slice; nullopt when it has no NVIDIA GPU. `simulated`: only the devices
/// simulations hand out (docs/dra.md): GPUs handed out whole (no MIG, vGPU, time-slicing or MPS
/// partition), passthrough GPUs, and the GIs of static MIG layouts (not on nodes whose MIG is dynamic:
/// their GIs come and go; nor under the `single` strategy, where the engine counts GIs as
/// nvidia.com/gpu).
[[nodiscard]] std::optional<ResourceSlice> nvidia_slice(const NodeSpec& node, const GpuCatalog& catalog, bool simulated = false);
/// What one published device is in the node model: a whole GPU (mig_profile -1) or a GI.
struct DeviceUnit {
  std::uint16_t gpu = 0;
  std::int8_t mig_profile = -1;   ///< index in the model's MIG geometry
  std::int8_t mig_start = -1;
};
/// What simulations publish for a cluster: the slices in node order, each node's slice (-1: no
/// device), each node as the allocator sees it (name and labels), and for each slice the unit of
/// each of its devices, in the slice's order.
struct ClusterDevices {
  std::vector<ResourceSlice> slices;
  std::vector<std::int32_t> slice_of_node;
  std::vector<NodeInfo> nodes;
  std::vector<std::vector<DeviceUnit>> units;
};
///
/// `given`: slices a scenario gives (as kubectl prints them) for some nodes. Each names one node
/// (nodeName), is of driver gpu.nvidia.com, and lists devices by the names the node's model
/// publishes (`gpu-<i>`, the GIs' names): it replaces the derived slice, its attributes and
/// capacities deciding the selectors, while each device stays the GPU or GI of that name. A
/// device the model does not hand out, a second slice for a node, or an unknown node throws
/// std::invalid_argument naming the slice.
[[nodiscard]] ClusterDevices simulated_devices(std::span<const NodeSpec> nodes, const GpuCatalog& catalog,
                                               std::span<const ResourceSlice> given = {});
/// The given slices a scenario or a job's claims carry (none when null).
[[nodiscard]] inline std::span<const ResourceSlice> given_slices(const std::shared_ptr<const std::vector<ResourceSlice>>& slices) {
  return slices ? std::span<const ResourceSlice>(*slices) : std::span<const ResourceSlice>();
}
/// NVIDIA's DeviceClasses: gpu.nvidia.com (type gpu), mig.nvidia.com (type mig) and
/// vfio.gpu.nvidia.com (type vfio), with the chart's selectors.
[[nodiscard]] std::vector<DeviceClass> nvidia_device_classes();

/// A slice as `kubectl get resourceslice -o json` prints it (resource.k8s.io/v1).
[[nodiscard]] nlohmann::json to_kubernetes(const ResourceSlice& slice);
/// A DeviceClass as the API serves it.
[[nodiscard]] nlohmann::json to_kubernetes(const DeviceClass& cls);

}  // namespace gpusched::dra
