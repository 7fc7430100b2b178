#pragma once
/// Node discovery from saved `nvidia-smi` output: `nvidia-smi -q -x` (XML) and
/// `nvidia-smi topo -m` (text matrix) of one machine become a NodeSpec.
///
/// Example:
///   NodeSpec n = node_from_nvidia_smi_files("dgx/query.xml", "dgx/topo.txt", GpuCatalog::builtin(),
///                                           {.name = "dgx-01", .memory_mib = 2048 * 1024});
///
/// Errors are TraceError with the file, line and field, ids: kTraceCannotOpen (101, a file cannot
/// be read), kTraceBadValue (102, malformed XML, a bad value, a malformed matrix row, the two
/// files disagree), kTraceMissingColumn (103, a required element or the matrix header is
/// missing), kTraceUnknownGpuModel (105, a product name the catalog does not know),
/// kTraceUnknownColumn (109, an unknown column in the matrix header).
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <gpusched/gpu_catalog.hpp>
#include <gpusched/node.hpp>

namespace gpusched::traces {

/// One <gpu> of `nvidia-smi -q -x`, in file order (nvidia-smi's index order, i.e. PCI bus order).
struct NvidiaSmiGpu {
  std::string product_name;      ///< <product_name>, e.g. "NVIDIA H100 80GB HBM3"
  std::string bus_id;            ///< <pci><pci_bus_id>, else the id attribute of <gpu>
  std::int64_t memory_mib = 0;   ///< <fb_memory_usage><total>, "81559 MiB"
  bool mig_enabled = false;      ///< <mig_mode><current_mig> is "Enabled" (absent or N/A = false)
  int numa_id = -1;              ///< <numa_id> when present and numeric (often absent), else -1
  std::int64_t line = 0;         ///< line of the <gpu> element
};

/// Parses `nvidia-smi -q -x` output (root <nvidia_smi_log>, one <gpu> per device). Checks
/// <attached_gpus> against the number of <gpu> elements when present. Errors name `source`.
std::vector<NvidiaSmiGpu> parse_nvidia_smi_query(std::string_view xml, const std::string& source);

/// A cell of the `nvidia-smi topo -m` matrix between two GPUs.
enum class NvidiaSmiLink : std::uint8_t {
  kSelf,    ///< X
  kNvlink,  ///< NV# (# bonded links)
  kPix,     ///< at most one PCIe bridge
  kPxb,     ///< several PCIe bridges, no host bridge
  kPhb,     ///< a PCIe host bridge
  kNode,    ///< host bridges within one NUMA node
  kSys,     ///< the inter-socket link (also the older spelling SOC)
};

struct NvidiaSmiTopoEntry {
  NvidiaSmiLink link = NvidiaSmiLink::kSys;
  int nvlinks = 0;  ///< bonded links for kNvlink, else 0
  bool operator==(const NvidiaSmiTopoEntry&) const = default;
};

/// The GPU part of `nvidia-smi topo -m`; NIC rows and columns and the legends are dropped.
struct NvidiaSmiTopo {
  std::vector<std::vector<NvidiaSmiTopoEntry>> matrix;  ///< [gpu][gpu], symmetric
  std::vector<std::string> cpu_affinity;                ///< per GPU, e.g. "0-55,112-167"; "" = N/A or no column
  std::vector<int> numa_affinity;                       ///< per GPU; -1 = N/A or no column
  std::int64_t header_line = 0;                         ///< line of the column header
};

/// Parses `nvidia-smi topo -m` output: the first non-blank line is the column header (ANSI
/// underline codes are stripped); columns GPU0..GPUn-1, then device columns that are not GPUs
/// (NIC0, mlx5_0, ... ignored), then "CPU Affinity", "NUMA Affinity", "GPU NUMA ID" (each
/// optional). Rows follow until a blank line or "Legend:"; rows of non-GPU devices are skipped.
/// Errors name `source`, the line and the column.
NvidiaSmiTopo parse_nvidia_smi_topo(std::string_view text, const std::string& source);

/// What nvidia-smi does not say about the machine.
struct NodeSpecDefaults {
  std::string name;              ///< node name
  std::int64_t cpu_milli = 0;    ///< 0 = count the logical CPUs of the CPU Affinity column
  std::int64_t memory_mib = 0;   ///< host memory, split evenly over the NUMA nodes
  std::int16_t sockets = 0;      ///< 0 = highest NUMA affinity + 1
};

/// The NodeSpec of a machine from its two outputs (GPU i of the XML is GPU i of the matrix):
///   - gpus: catalog model from <product_name> (names and aliases), bus_id, partition kMig when
///     MIG mode is enabled (no instances: they are created by the scheduler), socket = the
///     matrix's NUMA Affinity, else <numa_id>, else 0;
///   - nvlinks: one per NV# pair (links = #); nvlink_domain: a connected group of NVLinked GPUs
///     in which every pair is NV# (e.g. all 8 GPUs of an NVSwitch board) gets one domain id;
///   - pcie_switch: GPUs joined by PIX share a switch id (connected groups); PXB, PHB and NODE
///     pairs are modelled as "same socket, different switch";
///   - sockets and numa: max(defaults.sockets, highest NUMA affinity + 1); with
///     defaults.cpu_milli == 0 each NUMA node gets 1000m per logical CPU listed in the CPU
///     Affinity of its GPUs (every NUMA node then needs a GPU with a CPU Affinity); memory is
///     split evenly (remainder on NUMA node 0);
///   - labels: nvidia.com/gpu.product (spaces as '-'), nvidia.com/gpu.count,
///     nvidia.com/gpu.memory (MiB), as GPU feature discovery sets them.
/// Throws TraceError naming `query_source` or `topo_source`, the line and the field.
NodeSpec node_from_nvidia_smi(std::string_view query_xml, std::string_view topo_text, const GpuCatalog& catalog,
                              const std::string& query_source, const std::string& topo_source,
                              const NodeSpecDefaults& defaults);

/// node_from_nvidia_smi() over two files; errors name the paths as given.
NodeSpec node_from_nvidia_smi_files(const std::filesystem::path& query_xml, const std::filesystem::path& topo_text,
                                    const GpuCatalog& catalog, const NodeSpecDefaults& defaults);

}  // namespace gpusched::traces
