#pragma once
/// Node discovery from saved `nvidia-smi` output: `nvidia-smi -q -x` (XML) and
/// `nvidia-smi topo -m` (text matrix) of one machine, optionally with `nvidia-smi mig -lgip`
/// (text table), become a NodeSpec; node_to_json() writes it as a scenario's cluster node.
///
/// Example:
///   NodeSpec n = node_from_nvidia_smi_files("dgx/query.xml", "dgx/topo.txt", GpuCatalog::builtin(),
///                                           {.name = "dgx-01", .memory_mib = 2048 * 1024});
///   std::cout << node_to_json(n, GpuCatalog::builtin(), "dgx/query.xml").dump(1);
///
/// Errors are TraceError with the file, line and field, ids: kTraceCannotOpen (101, a file cannot
/// be read), kTraceBadValue (102, malformed XML, a bad value, a malformed matrix row, the two
/// files disagree), kTraceMissingColumn (103, a required element or the matrix header is
/// missing), kTraceUnknownGpuModel (105, a product name the catalog does not know),
/// kTraceUnknownColumn (109, an unknown column in the matrix header).
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include <gpusched/gpu_catalog.hpp>
#include <gpusched/node.hpp>

namespace gpusched::traces {

/// One <mig_device> of a MIG-enabled <gpu>: a compute instance (CI) of a GPU instance (GI).
/// Counts are -1 when absent or N/A.
struct NvidiaSmiMigDevice {
  int gpu_instance_id = -1;      ///< <gpu_instance_id>
  int compute_instance_id = -1;  ///< <compute_instance_id>
  std::int64_t memory_mib = -1;  ///< <fb_memory_usage><total>: the GI's memory
  int sms = -1;                  ///< <device_attributes><shared><multiprocessor_count>: the CI's SMs
  int decoders = -1, encoders = -1, jpgs = -1, ofas = -1;  ///< <shared><decoder_count> ...: the GI's engines
  std::int64_t line = 0;         ///< line of the <mig_device> element
};

/// One <gpu> of `nvidia-smi -q -x`, in file order (nvidia-smi's index order, i.e. PCI bus order).
struct NvidiaSmiGpu {
  std::string product_name;      ///< <product_name>, e.g. "NVIDIA H100 80GB HBM3"
  std::string bus_id;            ///< <pci><pci_bus_id>, else the id attribute of <gpu>
  std::int64_t memory_mib = 0;   ///< <fb_memory_usage><total>, "81559 MiB"
  bool mig_enabled = false;      ///< <mig_mode><current_mig> is "Enabled" (absent or N/A = false)
  int numa_id = -1;              ///< <numa_id> when present and numeric (often absent), else -1
  std::int64_t line = 0;         ///< line of the <gpu> element
  std::vector<NvidiaSmiMigDevice> mig_devices;  ///< <mig_devices> (empty: "None" or MIG off)
};

/// Parses `nvidia-smi -q -x` output (root <nvidia_smi_log>, one <gpu> per device). Checks
/// <attached_gpus> against the number of <gpu> elements when present. Errors name `source`.
std::vector<NvidiaSmiGpu> parse_nvidia_smi_query(std::string_view xml, const std::string& source);

/// One row of `nvidia-smi mig -lgip` (GPU instance profiles; two text lines per profile).
struct NvidiaSmiLgipProfile {
  int gpu = 0;                   ///< GPU index
  std::string name;              ///< "1g.10gb" ("MIG " dropped)
  int id = 0;                    ///< profile id
  int total = 0;                 ///< Instances Total
  std::int64_t memory_mib = 0;   ///< Memory GiB x 1024, rounded
  int sms = 0, decoders = 0, encoders = 0, copy_engines = 0, jpgs = 0, ofas = 0;
  std::int64_t line = 0;         ///< line of the profile's first text line
};

/// Parses `nvidia-smi mig -lgip` output: the box-drawn table whose first line of a profile is
/// `| GPU  MIG <name>  ID  Free/Total  Memory(GiB)  P2P  SM  DEC  ENC |` and whose second is
/// `| CE  JPEG  OFA |`. Errors name `source`, the line and the column.
std::vector<NvidiaSmiLgipProfile> parse_nvidia_smi_lgip(std::string_view text, const std::string& source);

/// The catalog model an nvidia-smi <product_name> names: the name itself or an alias, else the
/// name without "NVIDIA " / "Tesla " and without form-factor and memory words ("-SXM4-80GB",
/// "-PCIE-40GB", " 80GB HBM3", " PCIe", " NVL", ...) resolved within the model family (the
/// remaining words, e.g. "H100", "RTX-6000-ADA"): a model qualifies when one of its names has
/// the same words (or starts with them, or they with its) and the form factor fits: a name
/// with one (SXM, PCIE, NVL) wants a model named with it or never named with any; a name without
/// one (how nvidia-smi prints SXM boards) wants a model with an unmarked or SXM name. Among
/// those: an explicit form factor first, then the memory closest to `memory_mib` (0 = unknown:
/// the name's memory word decides) within 10%, then catalog order. nullopt when none qualifies.
std::optional<GpuModelId> resolve_nvidia_smi_product(std::string_view product, std::int64_t memory_mib,
                                                     const GpuCatalog& catalog);

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

/// A NIC of `nvidia-smi topo -m`: its name (the "NIC Legend" name, e.g. mlx5_0, else its column
/// label) and how it reaches each GPU (its row's GPU cells).
struct NvidiaSmiTopoNic {
  std::string name;
  std::vector<NvidiaSmiTopoEntry> to_gpu;   ///< [gpu]
  std::size_t column = 0;                   ///< its device column
  std::int64_t line = 0;                    ///< its row's line
};

/// `nvidia-smi topo -m`: the GPU matrix and the NICs' links to the GPUs; NIC-to-NIC cells and the
/// link legend are dropped.
struct NvidiaSmiTopo {
  std::vector<std::vector<NvidiaSmiTopoEntry>> matrix;  ///< [gpu][gpu], symmetric
  std::vector<std::string> cpu_affinity;                ///< per GPU, e.g. "0-55,112-167"; "" = N/A or no column
  std::vector<int> numa_affinity;                       ///< per GPU; -1 = N/A or no column
  std::vector<NvidiaSmiTopoNic> nics;                   ///< in column order (NICs without a row are left out)
  std::int64_t header_line = 0;                         ///< line of the column header
};

/// Parses `nvidia-smi topo -m` output: the first non-blank line is the column header (ANSI
/// underline codes are stripped); columns GPU0..GPUn-1, then device columns that are not GPUs
/// (NIC0, mlx5_0, ...: NICs), then "CPU Affinity", "NUMA Affinity", "GPU NUMA ID" (each
/// optional). Rows follow until a blank line or "Legend:"; a NIC's row gives its links to the
/// GPUs. A "NIC Legend:" section ("NIC0: mlx5_0") names the NICs.
/// Errors name `source`, the line and the column.
NvidiaSmiTopo parse_nvidia_smi_topo(std::string_view text, const std::string& source);

/// What nvidia-smi does not say about the machine.
struct NodeSpecDefaults {
  std::string name;              ///< node name
  std::int64_t cpu_milli = 0;    ///< 0 = count the logical CPUs of the CPU Affinity column
  std::int64_t memory_mib = 0;   ///< host memory, split evenly over the NUMA nodes
  std::int16_t sockets = 0;      ///< 0 = highest NUMA affinity + 1
  bool mig_dynamic = false;      ///< MIG GPUs may be repartitioned (always so when no GPU has a GI)
};

/// The NodeSpec of a machine from its two outputs (GPU i of the XML is GPU i of the matrix):
///   - gpus: catalog model from <product_name> and <fb_memory_usage><total>
///     (resolve_nvidia_smi_product), bus_id, socket = the matrix's NUMA Affinity, else
///     <numa_id>, else 0; partition kMig when MIG mode is enabled, with the GPU instances of
///     <mig_devices> as its static layout: each GI (CIs grouped by gpu_instance_id) is matched to
///     the profile of the same memory (and, among equals, SMs and media engines: lgip's figures
///     when `lgip_text` is given, else the catalog's) and placed at the lowest legal starts,
///     largest first (-q -x does not say where a GI sits); a node whose MIG GPUs have no GI at
///     all, or defaults.mig_dynamic, is mig_dynamic; lgip profiles are checked against the
///     catalog's (names and memory), a mismatch is an error naming the lgip line;
///   - nvlinks: one per NV# pair (links = #); nvlink_domain: a connected group of NVLinked GPUs
///     in which every pair is NV# (e.g. all 8 GPUs of an NVSwitch board) gets one domain id;
///   - pcie_switch: GPUs joined by PIX share a switch id (connected groups), and so do NVLinked
///     GPUs that reach one NIC by PIX (their NV# cell hides the switch); PXB, PHB and NODE pairs
///     are modelled as "same socket, different switch";
///   - nics: one per NIC row, on the root of the first GPU it reaches by PIX, else PXB; else on a
///     root of its own on the socket of the first GPU it reaches by PHB or NODE, else socket 0
///     (a NIC that is SYS to every GPU: its socket is not known); rdma (nvidia-smi lists RDMA
///     devices);
///   - sockets and numa: max(defaults.sockets, highest NUMA affinity + 1); with
///     defaults.cpu_milli == 0 each NUMA node gets 1000m per logical CPU listed in the CPU
///     Affinity of its GPUs (every NUMA node then needs a GPU with a CPU Affinity); memory is
///     split evenly (remainder on NUMA node 0);
///   - labels: nvidia.com/gpu.product (spaces as '-'), nvidia.com/gpu.count,
///     nvidia.com/gpu.memory (MiB), as GPU feature discovery sets them.
/// Throws TraceError naming `query_source` or `topo_source`, the line and the field.
NodeSpec node_from_nvidia_smi(std::string_view query_xml, std::string_view topo_text, const GpuCatalog& catalog,
                              const std::string& query_source, const std::string& topo_source,
                              const NodeSpecDefaults& defaults, std::string_view lgip_text = {},
                              const std::string& lgip_source = {});

/// node_from_nvidia_smi() over the files (`mig_lgip` empty = none); errors name the paths as given.
NodeSpec node_from_nvidia_smi_files(const std::filesystem::path& query_xml, const std::filesystem::path& topo_text,
                                    const GpuCatalog& catalog, const NodeSpecDefaults& defaults,
                                    const std::filesystem::path& mig_lgip = {});

/// A discovered node as an entry of a scenario's `cluster.nodes`: name, cpu, memory, gpus,
/// gpu_model, sockets, topology (numa, gpu_sockets, nvlink: "nvswitch" when all GPUs are one
/// NVLink domain, else the [a, b, links] list; gpus_per_pcie_switch when the switch groups are
/// consecutive and equal), gpu_partition (mode mig, layouts with explicit starts, dynamic) and
/// labels. What a cluster file cannot say is appended to `dropped` (when given): the PCI bus
/// ids, switch groups that are not consecutive and equal. A node mixing GPU models, or MIG and
/// non-MIG GPUs, is a TraceError (kTraceBadValue) naming `source`.
nlohmann::json node_to_json(const NodeSpec& node, const GpuCatalog& catalog, const std::string& source,
                            std::vector<std::string>* dropped = nullptr);

}  // namespace gpusched::traces
