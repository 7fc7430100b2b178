#pragma once
/// A live Kubernetes cluster as a what-if snapshot: `kubectl get nodes -o json` as the cluster
/// and `kubectl get pods -A -o json` as the workload (see docs/traces.md, "Kubernetes snapshot").
///
/// Example:
///   GpuCatalog catalog = GpuCatalog::builtin();
///   ResourceTable resources;
///   auto nodes = read_kube_nodes("nodes.json", catalog, resources);
///   Workload pods = read_kube_pods("pods.json", catalog, resources);   // same table: extended ids agree
///   ClusterState cluster(catalog, resources, std::move(nodes));
///
/// Input: a `v1` `List` (as kubectl prints it; `NodeList` / `PodList` as the API server returns
/// them are accepted too, as is a single `Node` / `Pod` object). An item whose `kind` is present
/// and is not the expected one (a Pod in the node list) is an error. Fields gpusched does not
/// model are ignored; `null` counts as absent.
///
/// Errors: every error is a TraceError naming the file, the line and the JSON path of the field,
/// e.g. `[gpusched.trace_error.102] pods.json:41: field 'items[3].spec.containers[0].resources.requests.cpu': "12x" is not a CPU quantity`.
/// The line is that of the field itself, or of its nearest enclosing value when the field is
/// missing; a JSON syntax error gives the line of the offending byte. Ids: kTraceCannotOpen (101),
/// kTraceBadValue (102: malformed JSON, wrong kind or type, bad quantity, unknown resource or MIG
/// profile, MIG instances that do not fit), kTraceNegativeRequest (104), kTraceUnknownGpuModel
/// (105: a GPU product the catalog does not know), kTraceDuplicateId (107: two nodes or two pods
/// with one name).
#include <filesystem>
#include <istream>
#include <string>
#include <string_view>
#include <vector>

#include <gpusched/gpu_catalog.hpp>
#include <gpusched/job.hpp>
#include <gpusched/node.hpp>
#include <gpusched/resources.hpp>

namespace gpusched::traces {

/// Nodes -> NodeSpec:
///   - name = metadata.name; labels = metadata.labels, plus kubernetes.io/hostname = name when the
///     label is missing; taints = spec.taints (key, value, effect NoSchedule | PreferNoSchedule |
///     NoExecute); spec.unschedulable (cordoned) adds node.kubernetes.io/unschedulable:NoSchedule
///     unless that taint is already listed.
///   - capacity from status.allocatable (status.capacity when allocatable is absent): cpu ->
///     cpu_milli, memory -> memory_mib (rounded up); ephemeral-storage, hugepages-*, pods,
///     storage and attachable-volumes-* are ignored; other names with a '/' (rdma/hca,
///     example.com/foo) are extended resources (ResourceTable::intern).
///     GPU-share names (gpusched.io/gpu-milli, aliyun.com/gpu-mem, nvidia.com/gpumem,
///     nvidia.com/gpucores) are ignored on nodes: shares are carved from the GPUs themselves.
///     google.com/tpu and nvidia.com/vgpu-* capacity is rejected (TPU hosts and vGPU nodes are
///     not imported).
///   - GPUs: the model comes from the GPU feature discovery label nvidia.com/gpu.product (e.g.
///     "NVIDIA-A100-SXM4-80GB", "Tesla-T4"), else from GKE's cloud.google.com/gke-accelerator;
///     it is looked up in the catalog as written, with '-' read as ' ' (all of them or the first),
///     and without a leading "NVIDIA-" / "Tesla-". A product the catalog does not know, or GPUs
///     without either label, is an error naming the node and the label.
///   - nvidia.com/gpu: N -> N whole GPUs. With the label nvidia.com/gpu.replicas R > 1
///     (device-plugin sharing; GFD writes 0 or 1 when not shared; GFD's "-SHARED" product suffix
///     is dropped), N must be a multiple of R: N / R GPUs shared by R, partition kMps when
///     nvidia.com/gpu.sharing-strategy is "mps", else kTimeSlicing. nvidia.com/gpu.shared: N
///     (renameByDefault) is read the same way and sets NodeSpec::sharing.rename_by_default; any
///     nvidia.com/gpu beside it are plain GPUs. Replicated MIG instances are refused.
///   - MIG, mixed strategy: nvidia.com/mig-<profile>: K -> K static GPU instances laid out
///     exactly (a search over splits into legal per-GPU layouts, see docs/sharing.md) onto
///     nvidia.com/gpu.count minus the whole GPUs when that label is present; else onto
///     instances / per-GPU count when nvidia.com/mig.config is "all-<profile>"; else onto the
///     fewest GPUs that hold them. GPUs left without instances stay in MIG mode, empty. The whole
///     GPUs come first in the node's GPU list, then the MIG GPUs. Instances that fit no split are
///     an error naming the instances and the GPU count.
///   - MIG, single strategy: a product "<model>-MIG-<profile>" (GFD's single-strategy label):
///     nvidia.com/gpu counts GPU instances; every GPU holds as many instances of the profile as
///     fit, so the count must be a multiple of that (mig_strategy kSingle).
///   - One socket, no NUMA split, no NVLink/PCIe topology (a node list does not say).
/// Complexity: O(input size) plus the MIG layout search per MIG node (bounded: past its budget
/// the node is refused, asking for nvidia.com/gpu.count).
std::vector<NodeSpec> read_kube_nodes(std::istream& in, const std::string& source, GpuCatalog& catalog,
                                      ResourceTable& resources);
/// read_kube_nodes() over a file; errors name the path as given (kTraceCannotOpen when unreadable).
std::vector<NodeSpec> read_kube_nodes(const std::filesystem::path& path, GpuCatalog& catalog, ResourceTable& resources);

/// Pods -> one single-task job each:
///   - name = "<metadata.namespace>/<metadata.name>", queue = namespace ("default" when absent);
///     source_line = the line where the pod's object begins.
///   - pods in phase Succeeded or Failed are skipped (they hold no resources).
///   - request: the Kubernetes effective request, per resource: the sum over spec.containers of
///     resources.requests (a resource with a limit but no request takes the limit, as the API
///     server defaults it), then the maximum with each init container (an init container with
///     restartPolicy Always is a sidecar: it adds to the sum and to the init containers after it),
///     plus spec.overhead. cpu is summed in milli-CPU, memory in MiB (each container rounded up),
///     everything else as whole counts; the totals go through parse_requests() (nvidia.com/gpu,
///     nvidia.com/mig-<profile>, gpu shares, extended resources ...). ephemeral-storage,
///     hugepages-*, storage and pods are ignored.
///   - constraints: node_selector = spec.nodeSelector; affinity = spec.affinity.nodeAffinity:
///     requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[] (matchExpressions;
///     matchFields on metadata.name is read as the kubernetes.io/hostname label) and
///     preferredDuringSchedulingIgnoredDuringExecution[] {weight, preference} (an empty
///     preference, which matches every node alike, is dropped); tolerations = spec.tolerations
///     (tolerationSeconds ignored); pod (anti-)affinity and topology spread are ignored.
///   - priority = spec.priority (integer, as admission resolved it; 0 when absent),
///     priority_class = spec.priorityClassName, spec.preemptionPolicy Never -> preempt_never.
///   - a pod bound to a node (spec.nodeName) is pinned there by node_selector
///     kubernetes.io/hostname = nodeName, and tolerates every NoSchedule taint (it is past the
///     scheduler's taint check; NoExecute taints still apply).
///   - submit time 0 (a snapshot); duration forever unless the annotation gpusched.io/duration
///     gives seconds (> 0).
///   - order: bound pods first, in file order (so they take their places), then the pending ones
///     by metadata.creationTimestamp (RFC 3339; stable; pods without one last).
/// Complexity: O(input size + pods log pods).
Workload read_kube_pods(std::istream& in, const std::string& source, GpuCatalog& catalog, ResourceTable& resources);
/// read_kube_pods() over a file; errors name the path as given (kTraceCannotOpen when unreadable).
Workload read_kube_pods(const std::filesystem::path& path, GpuCatalog& catalog, ResourceTable& resources);

/// Annotation a pod may carry to give its run time in seconds (a snapshot has none).
inline constexpr std::string_view kKubeDurationAnnotation = "gpusched.io/duration";

}  // namespace gpusched::traces
