#pragma once
/// Node descriptions: what a machine has and how its devices are handed out. Runtime state
/// lives in ClusterState.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <gpusched/ids.hpp>
#include <gpusched/mig.hpp>

namespace gpusched {

enum class TaintEffect : std::uint8_t { kNoSchedule, kPreferNoSchedule, kNoExecute };

struct Taint {
  std::string key;
  std::string value;
  TaintEffect effect = TaintEffect::kNoSchedule;
};

/// How a physical GPU is handed to workloads (see sharing.md).
enum class GpuPartition : std::uint8_t {
  kWhole,        ///< bare metal: whole GPUs (nvidia.com/gpu) or shares (gpu-milli, gpu-mem, HAMi)
  kMig,          ///< MIG mode: GPU instances (nvidia.com/mig-<profile>, or nvidia.com/gpu under `single`)
  kVgpu,         ///< NVIDIA vGPU: time-sliced vGPUs of ONE profile at a time (nvidia.com/vgpu-<profile>)
  kTimeSlicing,  ///< device-plugin time-slicing: `replicas` nvidia.com/gpu per GPU, no isolation
  kMps,          ///< MPS: `replicas` clients, each limited to 1/replicas of the SMs and memory
  kPassthrough,  ///< PCI passthrough: whole GPUs to VMs (pci_passthrough:alias)
};
std::string_view to_string(GpuPartition p);

/// Kubernetes MIG strategy of a node (NVIDIA device plugin).
enum class MigStrategy : std::uint8_t {
  kMixed,   ///< each profile is its own resource: nvidia.com/mig-3g.40gb
  kSingle,  ///< all GPUs split alike; each GI is advertised as nvidia.com/gpu
};

/// One GPU of a node: its model, where it sits, and how it is partitioned.
struct GpuSpec {
  GpuModelId model;
  std::int16_t socket = 0;           ///< NUMA node whose PCIe root it hangs off
  std::int16_t pcie_switch = -1;     ///< GPUs with the same id (>= 0) share a PCIe switch
  std::int16_t nvlink_domain = -1;   ///< GPUs with the same id (>= 0) are all-to-all NVLinked (NVSwitch)
  GpuPartition partition = GpuPartition::kWhole;
  std::uint16_t replicas = 1;        ///< time-slicing / MPS: shares advertised per GPU
  std::int16_t vgpu_profile = -1;    ///< vGPU: fixed profile index; -1 = set by the first vGPU placed
  std::vector<MigInstance> mig;      ///< MIG: static GPU instances created at start
  std::string bus_id;                ///< PCI bus id, when known (node discovery)
};

/// A direct NVLink connection between two GPUs of a node (nvidia-smi topo -m "NV<links>").
struct NvLink {
  std::uint16_t a = 0, b = 0;        ///< GPU indices within the node, a < b
  std::uint8_t links = 1;            ///< bonded links
  bool operator==(const NvLink&) const = default;
};

/// A NUMA node (CPU socket) and its share of the machine's CPUs and memory.
struct NumaSpec {
  std::int64_t cpu_milli = 0;
  std::int64_t memory_mib = 0;
  bool operator==(const NumaSpec&) const = default;
};

/// A network interface card, as the node model knows it: where it sits on the PCIe tree, and
/// whether it does RDMA (InfiniBand or RoCE). Published as a DRA device in the vocabulary of
/// kubernetes-sigs/dranet (dra::dranet_slice). Simulations do not hand NICs out yet.
struct NicSpec {
  std::int16_t socket = 0;          ///< NUMA node whose PCIe root it hangs off
  std::int16_t root_gpu = -1;       ///< on the PCIe root of this GPU (behind its switch, if it has one); -1: a root of its own
  bool rdma = true;
};

/// TPU host data: which pool it belongs to and where it sits in the pool's host grid.
struct TpuHostSpec {
  std::string generation;            ///< "v4", "v5e", "v5p"; empty = not a TPU host
  std::int32_t chips = 0;            ///< chips on this host (google.com/tpu capacity)
  std::string pool;                  ///< node pool name; a slice never spans pools
  std::string pool_topology;         ///< the pool's chips, e.g. "4x4x4" (canonical AxBxC)
  bool provisioned = true;           ///< true: GKE-style pool of exactly one slice shape;
                                     ///< false: slices are carved as sub-blocks of the pool
  std::vector<int> coords;           ///< host coordinates in the pool's host grid
};

/// The NVIDIA device plugin's sharing settings on a node (its config's `sharing.timeSlicing` /
/// `sharing.mps`, api/config/v1 of NVIDIA/k8s-device-plugin). They matter only for GPUs in
/// partition kTimeSlicing / kMps; see docs/sharing.md.
struct DevicePluginSharing {
  /// A container asking for more than one replica fails (the plugin's Allocate error "maximum
  /// request size for shared resources is 1"). nullopt: the plugin's default, false for
  /// time-slicing and true for MPS.
  std::optional<bool> fail_requests_greater_than_one;
  /// Replicas are advertised as `nvidia.com/gpu.shared` instead of `nvidia.com/gpu`.
  bool rename_by_default = false;
  bool operator==(const DevicePluginSharing&) const = default;
};

/// A machine. Example: 8x A100-80GB, 2 sockets, 128 cores, 1 TiB.
struct NodeSpec {
  std::string name;
  std::int64_t cpu_milli = 0;
  std::int64_t memory_mib = 0;
  std::int16_t sockets = 1;                 ///< NUMA nodes; == numa.size() once built
  std::vector<NumaSpec> numa;               ///< per NUMA node; empty = split cpu/memory evenly
  std::vector<GpuSpec> gpus;
  std::vector<NvLink> nvlinks;              ///< point-to-point NVLink (besides nvlink_domain)
  std::vector<NicSpec> nics;                ///< network interfaces (DRA devices of dranet)
  MigStrategy mig_strategy = MigStrategy::kMixed;
  bool mig_dynamic = false;                 ///< GIs may be created/destroyed while running
  DevicePluginSharing sharing;              ///< time-slicing / MPS: the device plugin's settings
  TpuHostSpec tpu;
  std::map<std::string, std::string> labels;  ///< ordered: deterministic output
  std::vector<Taint> taints;
  std::vector<std::pair<ResourceId, std::int64_t>> extended;  ///< capacity of extended resources
};

/// Fills `numa` from `sockets` when empty (even split, remainder on socket 0). Checks that the
/// NUMA nodes add up to the node's CPU and memory and that every GPU's socket exists.
/// Returns an empty string when consistent, else what is wrong.
std::string normalize_numa(NodeSpec& n);

}  // namespace gpusched
