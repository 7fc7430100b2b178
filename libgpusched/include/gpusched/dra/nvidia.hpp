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
/// of one domain with matchAttribute. AMD GPUs get no devices here.
///
/// TPU hosts: their chips as Google's TPU DRA driver publishes them (driver `tpu.google.com`,
/// kubernetes-sigs/dra-driver-google-tpu, cmd/tpu-dra-kubeletplugin): one slice per node (pool =
/// node name), a device per chip named after its device file (`accel<i>` for v3/v4, `<i>` under
/// /dev/vfio for v5e/v5p/v6e), with attributes index, uuid (synthetic), tpuGen, brand ("Google"),
/// accelerator, chipCount and topology (when the node has one); no capacity (tpu_slice).
#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>

#include <gpusched/dra/allocator.hpp>
#include <gpusched/gpu_catalog.hpp>
#include <gpusched/node.hpp>

namespace gpusched::dra {

inline constexpr std::string_view kNvidiaDriver = "gpu.nvidia.com";
inline constexpr std::string_view kTpuDriver = "tpu.google.com";
inline constexpr std::string_view kDranetDriver = "dra.net";

/// The node's slice; nullopt when it has no NVIDIA GPU. `simulated`: only the devices
/// simulations hand out (docs/dra.md): GPUs handed out whole (no MIG, vGPU, time-slicing or MPS
/// partition), passthrough GPUs, and the GIs of static MIG layouts (not on nodes whose MIG is dynamic:
/// their GIs come and go; nor under the `single` strategy, where the engine counts GIs as
/// nvidia.com/gpu).
[[nodiscard]] std::optional<ResourceSlice> nvidia_slice(const NodeSpec& node, const GpuCatalog& catalog, bool simulated = false);
/// The generation Google's TPU driver reads from a node's accelerator label (AcceleratorGen,
/// cmd/tpu-dra-kubeletplugin/util.go): "tpu-v4-podslice" -> "v4", "tpu-v5-lite-podslice" ->
/// "v5litepod", "tpu-v5-lite-device" -> "v5lite", "tpu-v5p-slice" -> "v5p", "tpu-v6e-slice" ->
/// "v6e", a new-style name ("tpu7x") as it is; nullopt for a label the driver refuses.
[[nodiscard]] std::optional<std::string> tpu_driver_generation(std::string_view accelerator);
/// The node's slice as Google's TPU driver publishes it; nullopt when the node is no TPU host, or
/// when the driver has no device directory for its generation (it serves v3, v4, v4lite, v5lite,
/// v5litepod, v5p and v6e: driver.go NewDriver; a tpu7x host publishes nothing). The accelerator
/// and topology come from the node's GKE labels (cloud.google.com/gke-tpu-accelerator,
/// cloud.google.com/gke-tpu-topology), else from its TPU spec; chipCount is the host's chips.
[[nodiscard]] std::optional<ResourceSlice> tpu_slice(const NodeSpec& node);
/// The node's NICs (NodeSpec::nics) as kubernetes-sigs/dranet publishes network interfaces
/// (driver `dra.net`; pkg/inventory db.go discoverPCIDevices and addLinkAttributes, pkg/apis
/// attributes.go): one slice per node (pool = node name), a device per NIC named after its PCI
/// address ("net1-0000-10-00-0", inventory NormalizePCIAddress), with the attributes the model
/// knows: pciAddress (synthetic), numaNode (its socket), resource.kubernetes.io/pcieRoot (that of
/// the GPU it shares a root with, NicSpec::root_gpu, else its own), ifName (eth1, eth2, ...), type
/// ("device"), virtual (false), rdma, and rdmaDevice (mlx5_<k>) for RDMA NICs. nullopt: no NIC.
/// Not published: mac, mtu, addresses, PCI vendor and device names, SR-IOV, eBPF and cloud
/// attributes (the model does not know them).
[[nodiscard]] std::optional<ResourceSlice> dranet_slice(const NodeSpec& node);
/// The PCIe root of the node's NIC `k`, as its dranet device states it.
[[nodiscard]] std::string nic_pcie_root(const NodeSpec& node, std::size_t k);
/// The PCIe root of the node's GPU `i` (resource.kubernetes.io/pcieRoot, derived: GPUs behind one
/// PCIe switch share one, as `pci<socket>:<0x80 + switch>`; a GPU without a switch has its own).
[[nodiscard]] std::string gpu_pcie_root(const NodeSpec& node, std::size_t i);
/// Whether claims allocated on `node` take its TPU chips as Google's driver prepares them: all of
/// them or none. The driver counts each claim's results of driver tpu.google.com and refuses a
/// claim with fewer than the host's chips (cmd/tpu-dra-kubeletplugin: state.go prepareDevices,
/// "only requests for all tpu devices (N) on the node are supported"; manager.go
/// ValidateTpuRequest). The scheduler does not check it: such a pod is bound and then fails to
/// start. O(devices).
[[nodiscard]] bool takes_whole_tpu_host(std::span<const Allocation> claims, const NodeSpec& node);
/// What one published device is in the node model: a whole GPU (mig_profile -1), a GI, a TPU
/// chip (tpu_chip; `gpu` is then the chip's index on the host) or a NIC (nic; `gpu` is then the
/// NIC's index in NodeSpec::nics, its bit in TaskPlacement::nics).
struct DeviceUnit {
  std::uint16_t gpu = 0;
  std::int8_t mig_profile = -1;   ///< index in the model's MIG geometry
  std::int8_t mig_start = -1;
  bool tpu_chip = false;
  bool nic = false;
};
/// The most NICs a node may have in a simulation (one bit each in TaskPlacement::nics).
inline constexpr std::size_t kMaxNics = 64;
/// What simulations publish for a cluster: the slices in node order, each node's slice (-1: no
/// device; a node with NVIDIA GPUs publishes them, else its TPU chips if it is a TPU host) and
/// then its NICs' (dranet_slice), each node as the allocator sees it (name and labels), and for
/// each slice the unit of each of its devices, in the slice's order. A node with more than
/// kMaxNics NICs throws std::invalid_argument.
struct ClusterDevices {
  std::vector<ResourceSlice> slices;
  std::vector<std::int32_t> slice_of_node;
  std::vector<std::int32_t> nic_slice_of_node;   ///< per node: its NICs' slice (dranet_slice), after its own; -1: no NIC
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
/// Whether `claims` can be allocated on `node` with none of its devices in use: its devices as
/// simulated_devices publishes them (a given slice naming the node included), the classes and
/// selectors of `claims`, and a TPU claim taking all of the host's chips (takes_whole_tpu_host).
/// A CEL runtime error or a given slice that does not fit the node counts as no. For the
/// autoscaler: can a new node of this shape ever hold the claim, and how many devices (admin
/// access and NICs left out: GPUs, GIs or chips) does it take there? nullopt: it cannot. O(devices x requests).
[[nodiscard]] std::optional<std::int32_t> claims_fit_empty(const DeviceClaims& claims, const NodeSpec& node, const GpuCatalog& catalog);
/// Claims allocated on one node as a simulation hands them out: `got` is the allocation, or
/// nullopt when they do not fit there, which includes an allocation Google's TPU driver would
/// refuse to prepare (takes_whole_tpu_host: `partial_tpu`) and an AllocationError (`error`, its
/// text: "not there", as the dynamic-resources plugin takes it).
struct NodeAllocation {
  std::optional<std::vector<Allocation>> got;
  bool partial_tpu = false;
  std::string error;
};
/// `alloc` allocating `claims` on `info` (the node `node` describes) with `in_use` marked, then
/// the TPU driver's whole-host rule.
[[nodiscard]] NodeAllocation allocate_on_node(const Allocator& alloc, const NodeInfo& info, const NodeSpec& node,
                                              std::span<const ResourceClaim* const> claims, std::span<const std::uint8_t> in_use);
/// NVIDIA's DeviceClasses: gpu.nvidia.com (type gpu), mig.nvidia.com (type mig) and
/// vfio.gpu.nvidia.com (type vfio), with the chart's selectors.
[[nodiscard]] std::vector<DeviceClass> nvidia_device_classes();
/// The DeviceClasses a modelled cluster has: NVIDIA's, then Google's TPU driver's tpu.google.com
/// (selector `device.driver == "tpu.google.com"`, its Helm chart's deviceclass.yaml).
[[nodiscard]] std::vector<DeviceClass> builtin_device_classes();

/// A slice as `kubectl get resourceslice -o json` prints it (resource.k8s.io/v1).
[[nodiscard]] nlohmann::json to_kubernetes(const ResourceSlice& slice);
/// A DeviceClass as the API serves it.
[[nodiscard]] nlohmann::json to_kubernetes(const DeviceClass& cls);

}  // namespace gpusched::dra
