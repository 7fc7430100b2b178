#pragma once
/// Importers for Alibaba's public GPU-cluster traces (see docs/traces.md for every mapping).
///
///  - openb 2023 (ATC'23, FGD): node lists `sn,cpu_milli,memory_mib,gpu,model` (GPU-only and
///    all-node lists) and pod lists
///    `name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time`
///    or only the first five columns (the multigpu* variants).
///  - PAI 2020 (NSDI'22) machine list `machine,gpu_type,cap_cpu,cap_mem,cap_gpu` (no header row
///    in the published file; one is accepted).
///  - spot-GPU 2026 (ASPLOS'26) node list `gpu_model,gpu_capacity_num,cpu_num,node_name`.
///  - DLRM 2025 (NSDI'25) serving instances
///    `instance_sn,role,app_name,cpu_request,...,max_instance_per_node,creation_time,scheduled_time,deletion_time`.
///
/// Every reader reports a bad row as a TraceError naming source, line and column, e.g.
///   `[gpusched.trace_error.102] pods.csv:3: field 'gpu_milli': 1500 is out of range (0..1000)`;
/// an unknown GPU model is kTraceUnknownGpuModel, a negative request kTraceNegativeRequest, a
/// repeated node or job name kTraceDuplicateId. Rows with the wrong number of fields fail in
/// CsvReader with the line. Columns are found by name; extra columns are ignored.
///
/// GPU models are looked up in `catalog` (case-insensitive, aliases included) after
/// add_undisclosed_alibaba_models(); a model can be described better by adding it to the
/// catalog before the import (the readers never replace a model that is already there).
/// Nodes get one NUMA node (socket 0) and the label kGpuModelLabel = canonical model name.
///
/// Example:
///   GpuCatalog catalog = GpuCatalog::builtin();
///   ResourceTable resources;
///   std::ifstream nf(".../openb_node_list_gpu_node.csv"), pf(".../openb_pod_list_default.csv");
///   auto nodes = traces::read_openb_nodes(nf, "openb_node_list_gpu_node.csv", catalog, resources);
///   auto pods = traces::read_openb_pods(pf, "openb_pod_list_default.csv", catalog, resources);
///   ClusterState cluster(catalog, resources, nodes);
#include <cstdint>
#include <istream>
#include <string>
#include <string_view>
#include <vector>

#include <gpusched/gpu_catalog.hpp>
#include <gpusched/job.hpp>
#include <gpusched/node.hpp>
#include <gpusched/resources.hpp>

namespace gpusched::traces {

/// Framebuffer given to every undisclosed model (16 GiB: the smallest of the disclosed models
/// in the openb and PAI clusters, so a gpu-mem share that fits it fits any GPU there). The
/// FGD experiment schedules by gpu-milli only and never reads it. sms = 0 (unknown).
inline constexpr std::int64_t kUndisclosedGpuMemoryMib = 16 * 1024;
/// Vendor recorded for the undisclosed models.
inline constexpr std::string_view kUndisclosedVendor = "undisclosed";
/// Node label carrying the canonical catalog name of the node's GPU model (GPU nodes only).
inline constexpr std::string_view kGpuModelLabel = "gpusched.io/gpu-model";
/// Host memory per CPU core assumed for spot-GPU nodes, whose list has no memory column
/// (8 GiB per core: 1 TiB for the 128-core nodes, 1.5 TiB for the 192-core ones).
inline constexpr std::int64_t kSpotMemoryMibPerCore = 8 * 1024;
/// Extended resource a DLRM instance's rdma_request becomes: percent of one RDMA NIC, so a
/// node with N NICs should advertise N * 100 (the trace ships no node list).
inline constexpr std::string_view kDlrmRdmaResource = "rdma/hca";

/// Adds the GPU models Alibaba's traces name without disclosing them (openb "G2", "G3"; spot
/// "GPU-series-1", "GPU-series-2"; PAI "MISC") to `catalog`, when missing, as opaque models:
/// kUndisclosedGpuMemoryMib of memory, 0 SMs, no MIG, vendor kUndisclosedVendor. A model
/// already present (by name or alias) is left as it is. Every reader below calls it; idempotent.
void add_undisclosed_alibaba_models(GpuCatalog& catalog);

/// openb node list `sn,cpu_milli,memory_mib,gpu,model`. One node per row in file order:
/// name = sn, cpu in milli, memory in MiB, `gpu` whole-partition GPUs of `model` on socket 0.
/// `gpu` = 0 is a CPU-only node (its `model`, normally empty, is checked when present but unused);
/// `gpu` > 0 needs a known `model`. Label kGpuModelLabel on GPU nodes. O(rows).
std::vector<NodeSpec> read_openb_nodes(std::istream& in, const std::string& source, GpuCatalog& catalog,
                                       ResourceTable& resources);

/// openb pod list (11- or 5-column variant). One single-task job per row, kept in FILE order
/// (not sorted by submit time: the FGD protocol places pods in file order and ignores times;
/// several variants are not time-ordered, so stable-sort by submit for a time-driven replay):
///  - name -> job name (unique); cpu_milli, memory_mib -> cpu, memory;
///  - num_gpu = 0 (gpu_milli must be 0, gpu_spec empty): CPU only;
///    num_gpu = k, gpu_milli = 1000: k whole GPUs (nvidia.com/gpu: k);
///    num_gpu = 1, gpu_milli 1..999: a share of one GPU (nvidia.com/gpu: 1 + gpusched.io/gpu-milli);
///  - gpu_spec ('|'-separated models, duplicates dropped) -> allowed GPU models; qos -> queue
///    (empty: "default"); pod_phase is ignored (Pending pods stay in the workload);
///  - submit = creation_time (0 when absent); duration = deletion_time - scheduled_time, forever
///    when either is empty (the pod never ran, or the 5-column variants that carry no times).
Workload read_openb_pods(std::istream& in, const std::string& source, GpuCatalog& catalog, ResourceTable& resources);

/// PAI 2020 machine list `machine,gpu_type,cap_cpu,cap_mem,cap_gpu` (header row optional; when
/// absent, the columns are taken in that order and line numbers stay those of the file).
/// cap_cpu cores, cap_mem GiB, cap_gpu GPUs. gpu_type "CPU" (cap_gpu must be 0) or cap_gpu 0:
/// CPU-only node. gpu_type "V100" is read as V100-16GB (the list names the 32 GB boards
/// "V100M32" separately); "MISC" is undisclosed; other types resolve through the catalog.
std::vector<NodeSpec> read_pai_machines(std::istream& in, const std::string& source, GpuCatalog& catalog,
                                        ResourceTable& resources);

/// Spot-GPU 2026 node list `gpu_model,gpu_capacity_num,cpu_num,node_name`: name = node_name as
/// written, gpu_capacity_num GPUs of gpu_model, cpu_num cores, memory = cpu_num x
/// kSpotMemoryMibPerCore (the list has no memory column).
std::vector<NodeSpec> read_spot_nodes(std::istream& in, const std::string& source, GpuCatalog& catalog,
                                      ResourceTable& resources);
/// The same with another host-memory assumption (MiB per core, > 0).
std::vector<NodeSpec> read_spot_nodes(std::istream& in, const std::string& source, GpuCatalog& catalog,
                                      ResourceTable& resources, std::int64_t memory_mib_per_core);

/// DLRM 2025 serving instances: one single-task job per instance, sorted by submit time (stable,
/// file order among equals; the file itself is not time-ordered).
///  - instance_sn -> name (unique); role (CN / HN) -> queue; app_name -> constraints.app;
///  - cpu_request cores, memory_request GiB (decimals allowed), gpu_request whole GPUs,
///    rdma_request percent of one NIC -> kDlrmRdmaResource; the *_limit and disk_* columns
///    are ignored (no node list ships with the trace, so no node would advertise disk);
///  - max_instance_per_node -> constraints.max_per_node (-1 or 0: no cap);
///  - submit = creation_time, 0 when empty (the instance existed before the trace started);
///    it runs from scheduled_time (0 when both are empty) to deletion_time; no deletion_time
///    (or created but never scheduled): it never ends.
Workload read_dlrm(std::istream& in, const std::string& source, GpuCatalog& catalog, ResourceTable& resources);

}  // namespace gpusched::traces
