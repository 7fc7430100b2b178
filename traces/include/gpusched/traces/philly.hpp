#pragma once
/// Importers for the Microsoft Philly per-job table (Pollux/Sia derived) and machine list, and
/// for the Tiresias (NSDI'19) job and cluster-shape files (see docs/traces.md).
///
///  - Philly jobs `timestamp,duration,num_gpus,gpu_time,cluster`: one job per row, named
///    "philly-<row>" (0-based data row in file order); submit = timestamp (`YYYY-MM-DD hh:mm:ss`,
///    read as UTC) minus the earliest timestamp of the file; duration in seconds (decimals kept to
///    the microsecond); cluster (virtual cluster) -> queue ("default" when empty); num_gpus whole
///    GPUs, split into a gang by split_gang() over 8 GPUs per node (12 -> 2 x 6, 16 -> 2 x 8,
///    128 -> 16 x 8), min_available = tasks. gpu_time must equal duration x num_gpus (1 s or 1e-6
///    slack) and is otherwise ignored. No CPU or memory per task unless the options say so.
///    Jobs come back sorted by submit time (stable: equal times keep file order).
///  - Philly machines `machineId, number of GPUs, single GPU mem`: one node per machine, named by
///    machineId; the memory size picks the GPU model (assumption: 12GB -> K80, 24GB -> P40; any
///    other size is an error naming line and column); CPU and host memory are not in the file:
///    6 cores and 64 GiB per GPU by default.
///  - Tiresias jobs `job_id,num_gpu,submit_time,iterations,model_name,duration,interval`: name =
///    job_id, submit and duration in seconds, model_name -> constraints.app; iterations and
///    interval (gap to the next submit) are checked to be numbers and otherwise ignored; gangs over
///    4 GPUs per node by default (the Tiresias testbed and its cluster_spec.csv have 4-GPU nodes).
///  - Tiresias cluster `num_switch,num_node_p_switch,num_gpu_p_node,num_cpu_p_node,mem_p_node`:
///    per row, num_switch x num_node_p_switch nodes "s<switch>-n<node>" labelled
///    `gpusched.io/switch: s<switch>`; mem_p_node in GB, read as GiB; GPU model P100 (the Tiresias
///    testbed's) unless the options name another.
///
/// Every node gets the label `gpusched.io/gpu-model: <catalog name>`. Every reader reports a bad
/// row as a TraceError (`[gpusched.trace_error.102] file:line: field 'column': ...`); duplicate
/// job ids or machine ids are kTraceDuplicateId.
///
/// Example:
///   GpuCatalog catalog = GpuCatalog::builtin();
///   ResourceTable resources;
///   std::ifstream jf(".../pollux-philly-derived/philly.csv"), mf(".../philly/cluster_machine_list");
///   Workload jobs = traces::read_philly_jobs(jf, "philly.csv", catalog, resources);
///   std::vector<NodeSpec> nodes = traces::read_philly_machines(mf, "cluster_machine_list", catalog, resources);
#include <cstdint>
#include <istream>
#include <map>
#include <string>
#include <vector>

#include <gpusched/gpu_catalog.hpp>
#include <gpusched/job.hpp>
#include <gpusched/node.hpp>
#include <gpusched/resources.hpp>

namespace gpusched::traces {

/// A job of `units` GPUs (or cores) as `tasks` equal tasks of `per_task` units each.
struct GangShape {
  std::int32_t tasks = 1;
  std::int32_t per_task = 0;
  bool operator==(const GangShape&) const = default;
};

/// The fewest tasks t such that t divides `units` and units / t <= `per_node`: every task of a
/// job must ask for the same amount, so 12 over 8-per-node is 2 x 6 and 13 is 13 x 1.
/// units <= per_node gives one task. Preconditions: units >= 1, per_node >= 1. O(units).
GangShape split_gang(std::int64_t units, std::int32_t per_node);

/// Defaults for what the Philly job table does not say.
struct PhillyJobOptions {
  std::int32_t gpus_per_node = 8;      ///< larger jobs become gangs (split_gang)
  std::int64_t cpu_milli_per_gpu = 0;  ///< CPU asked per GPU of a task (0: none)
  std::int64_t memory_mib_per_gpu = 0; ///< host memory asked per GPU of a task (0: none)
  bool check_gpu_time = true;          ///< gpu_time must equal duration x num_gpus
};

/// Defaults for what the Philly machine list does not say.
struct PhillyMachineOptions {
  /// GPU memory in GB as written ("12GB") -> catalog model name.
  std::map<std::int64_t, std::string> model_by_gpu_memory_gb = {{12, "K80"}, {24, "P40"}};
  std::int64_t cpu_milli_per_gpu = 6000;        ///< node CPU = GPUs x this
  std::int64_t memory_mib_per_gpu = 64 * 1024;  ///< node memory = GPUs x this
};

/// Defaults for the Tiresias readers.
struct TiresiasOptions {
  std::int32_t gpus_per_node = 4;      ///< jobs: larger jobs become gangs (split_gang)
  std::string gpu_model = "P100";      ///< cluster: the model of every GPU (catalog name)
};

/// Philly per-job table -> jobs sorted by submit time. O(rows log rows).
Workload read_philly_jobs(std::istream& in, const std::string& source, GpuCatalog& catalog, ResourceTable& resources);
Workload read_philly_jobs(std::istream& in, const std::string& source, GpuCatalog& catalog, ResourceTable& resources,
                          const PhillyJobOptions& options);
/// Philly machine list -> one node per machine, in file order.
std::vector<NodeSpec> read_philly_machines(std::istream& in, const std::string& source, GpuCatalog& catalog,
                                           ResourceTable& resources);
std::vector<NodeSpec> read_philly_machines(std::istream& in, const std::string& source, GpuCatalog& catalog,
                                           ResourceTable& resources, const PhillyMachineOptions& options);
/// Tiresias job file -> jobs sorted by submit time.
Workload read_tiresias_jobs(std::istream& in, const std::string& source, GpuCatalog& catalog, ResourceTable& resources);
Workload read_tiresias_jobs(std::istream& in, const std::string& source, GpuCatalog& catalog, ResourceTable& resources,
                            const TiresiasOptions& options);
/// Tiresias cluster shape -> nodes, switch by switch.
std::vector<NodeSpec> read_tiresias_cluster(std::istream& in, const std::string& source, GpuCatalog& catalog,
                                            ResourceTable& resources);
std::vector<NodeSpec> read_tiresias_cluster(std::istream& in, const std::string& source, GpuCatalog& catalog,
                                            ResourceTable& resources, const TiresiasOptions& options);

}  // namespace gpusched::traces
