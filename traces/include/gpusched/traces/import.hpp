#pragma once
/// One entry point for every trace format (docs/traces.md): workload formats and cluster (node
/// list) formats by name, detection from a file's name and first line, and reading.
///
/// Workload formats: native (gpusched CSV / JSON Lines), openb-pods, philly, dlrm, tiresias,
/// swf, kubectl-pods. Cluster formats: openb-nodes, pai-machines, spot-nodes, philly-machines,
/// tiresias-cluster, kubectl-nodes.
///
/// Example:
///   GpuCatalog catalog = GpuCatalog::builtin();
///   ResourceTable resources;
///   auto nodes = traces::import_nodes("openb_node_list_gpu_node.csv", "", catalog, resources);   // detected
///   auto jobs = traces::import_workload("philly.csv", "philly", catalog, resources);
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <gpusched/gpu_catalog.hpp>
#include <gpusched/job.hpp>
#include <gpusched/node.hpp>
#include <gpusched/resources.hpp>

namespace gpusched::traces {

enum class FormatKind : std::uint8_t { kWorkload, kCluster };

struct FormatInfo {
  std::string name;          ///< e.g. "openb-pods"
  FormatKind kind = FormatKind::kWorkload;
  std::string description;   ///< one line: where the format comes from, what a row is
};

/// Every format, workload formats first.
[[nodiscard]] const std::vector<FormatInfo>& formats();
/// The format named `name`, or TraceError listing the known names (`where` names the option).
[[nodiscard]] const FormatInfo& require_format(std::string_view name, const Location& where);

/// The format of `path`, from its extension (.swf, .jsonl) and first non-empty line (CSV
/// headers, the kind of a kubectl JSON list). TraceError when it cannot tell (name --format).
[[nodiscard]] std::string detect_format(const std::filesystem::path& path);

/// Reads a workload file in `format` ("" = detect). TraceError for a cluster format.
[[nodiscard]] Workload import_workload(const std::filesystem::path& path, std::string_view format, GpuCatalog& catalog,
                                       ResourceTable& resources);
/// Reads a node list in `format` ("" = detect). TraceError for a workload format.
[[nodiscard]] std::vector<NodeSpec> import_nodes(const std::filesystem::path& path, std::string_view format,
                                                 GpuCatalog& catalog, ResourceTable& resources);

/// A node list as the scenario's `cluster` object ({"gpu_models": [...], "nodes": [...]}):
/// what `gpusched convert` writes for a cluster format. Models not in the built-in catalog
/// (Alibaba's undisclosed ones) are written under gpu_models.
[[nodiscard]] std::string nodes_to_cluster_json(const std::vector<NodeSpec>& nodes, const GpuCatalog& catalog,
                                                const ResourceTable& resources);

}  // namespace gpusched::traces
