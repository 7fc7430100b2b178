#pragma once
/// The native job trace, schema_version 1, in CSV or JSON Lines (see schemas/trace.schema.json).
///
/// CSV (first line optional):
///   # gpusched trace schema_version=1
///   id,submit_time,duration,tasks,min_available,priority,queue,gpu_model,cpu,memory,nvidia.com/gpu,gpusched.io/gpu-milli,aliyun.com/gpu-mem
///   train-1,0,3600,1,1,0,team-a,,8,64Gi,2,,
/// JSON Lines (first line optional):
///   {"schema_version": 1, "kind": "gpusched.trace"}
///   {"id": "train-1", "submit_time": 0, "duration": 3600, "requests": {"cpu": "8", "memory": "64Gi", "nvidia.com/gpu": 2}}
/// Times are seconds (decimals allowed); an empty duration means the job never ends. Every CSV
/// column not listed above or below is a resource name. `gpu_model` lists allowed models, '|'-separated.
///
/// Optional scheduling fields (JobSpec::constraints; Kubernetes names and semantics), checked
/// with validate(JobConstraints); a bad value is a TraceError naming file, line and field:
///   app (string), max_per_node (count, 0 = no limit; needs app), priority_class (string),
///   preemption_policy ("PreemptLowerPriority" | "Never"), preemptible (true | false),
///   gang_timeout, walltime (seconds > 0; empty = none)           -- CSV columns and JSON fields
///   node_selector {"label": "value"}                              -- JSON Lines only
///   affinity {"required": [[{"key", "operator", "values"}...]...],     (terms ORed, requirements ANDed)
///             "preferred": [{"weight": 1..100, "term": [...]}]}
///   tolerations [{"key", "operator": "Equal" | "Exists", "value", "effect"}]
/// Example: {"id": "svc-3", "submit_time": 0, "requests": {"cpu": "4"}, "app": "ranker",
///   "max_per_node": 1, "tolerations": [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}]}
#include <filesystem>
#include <istream>
#include <ostream>
#include <string>

#include <gpusched/cluster.hpp>
#include <gpusched/gpu_catalog.hpp>
#include <gpusched/job.hpp>
#include <gpusched/resources.hpp>

namespace gpusched::traces {

inline constexpr int kTraceSchemaVersion = 1;

enum class TraceFormat { kCsv, kJsonLines };

/// By extension: .csv -> CSV; .jsonl/.ndjson/.json -> JSON Lines. TraceError otherwise.
TraceFormat format_for(const std::filesystem::path& path);

/// Reads a native trace. Jobs come back sorted by submit time (stable). Errors name the file,
/// line and field (TraceError, QuantityError, CatalogError).
Workload read_trace(const std::filesystem::path& path, const GpuCatalog& catalog, ResourceTable& resources);
Workload read_trace(std::istream& in, TraceFormat format, const std::string& source, const GpuCatalog& catalog,
                    ResourceTable& resources);

/// Writes a native trace that read_trace() reads back to the same jobs. CSV cannot carry
/// node_selector, affinity or tolerations: a job with any of them throws TraceError (use JSON Lines).
void write_trace(std::ostream& out, TraceFormat format, const Workload& jobs, const GpuCatalog& catalog,
                 const ResourceTable& resources);

/// Checks that every job fits at least one node of the cluster when the node is empty; throws
/// TraceError(kTraceUnplaceable) naming the job's line otherwise (a job that could never run).
void check_placeable(const Workload& jobs, const ClusterState& cluster, const std::string& source);

}  // namespace gpusched::traces
