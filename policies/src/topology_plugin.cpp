#include <gpusched/policies/topology/topology_manager.hpp>

#include <algorithm>
#include <bit>

#include <gpusched/topology.hpp>

namespace gpusched::policies {

namespace {
/// Units of `r` that GPU `g` of `spec` could give on an empty node: MIG GPUs give several GIs
/// (a static layout's instances, or up to the profile's max_count when dynamic), others one.
std::int64_t empty_units(const ClusterState& cluster, const NodeSpec& spec, std::size_t g, const TaskRequest& r) {
  const auto& gpu = spec.gpus[g];
  if (!r.model_allowed(gpu.model)) return 0;
  if (gpu.partition == GpuPartition::kTimeSlicing || gpu.partition == GpuPartition::kMps) {
    // As ClusterState::fits_empty() counts replicas (nvidia.com/gpu or, renamed, nvidia.com/gpu.shared).
    if (r.gpu.mode != GpuMode::kWhole) return gpu.partition == GpuPartition::kMps && r.gpu.mode == GpuMode::kShared ? 1 : 0;
    if (spec.sharing.rename_by_default != r.gpu.shared_name) return 0;
    return cluster.device_options().replica_allocation == ReplicaAllocation::kDevicePlugin ? std::max<std::int64_t>(1, gpu.replicas) : 1;
  }
  if (r.gpu.shared_name) return 0;
  if (gpu.partition != GpuPartition::kMig) return 1;
  const bool single = spec.mig_strategy == MigStrategy::kSingle;
  if (r.gpu.mode == GpuMode::kWhole) return single ? static_cast<std::int64_t>(gpu.mig.size()) : 0;
  if (r.gpu.mode != GpuMode::kMig || single) return 0;
  const int p = r.gpu.profile_index(gpu.model);
  if (p < 0) return 0;
  if (spec.mig_dynamic) return cluster.catalog()[gpu.model].mig->profiles[static_cast<std::size_t>(p)].max_count;
  return std::count_if(gpu.mig.begin(), gpu.mig.end(), [&](const MigInstance& i) { return i.profile == p; });
}
}  // namespace

NumaAdmit TopologyManagerPlugin::admit(const ClusterState& cluster, const TaskRequest& r, NodeId node, bool devices) const {
  const auto& spec = cluster.spec(node);
  const auto sockets = static_cast<std::size_t>(std::max<std::int16_t>(1, spec.sockets));
  std::vector<NumaResources> free(sockets), capacity(sockets);
  for (std::size_t z = 0; z < sockets; ++z) {
    free[z] = {cluster.numa_cpu_free(node, static_cast<int>(z)), cluster.numa_memory_free(node, static_cast<int>(z)), 0};
    if (z < spec.numa.size()) capacity[z] = {spec.numa[z].cpu_milli, spec.numa[z].memory_mib, 0};
  }
  const auto gpus = cluster.gpus(node);
  for (std::size_t g = 0; g < gpus.size(); ++g) {
    const auto z = static_cast<std::size_t>(gpus[g].socket);
    // Units, not GPUs: a MIG GPU gives a task several GPU instances.
    free[z].gpus += cluster.gpu_units(node, gpus[g], r);
    capacity[z].gpus += empty_units(cluster, spec, g, r);
  }
  const NumaResources want{r.cpu_milli, r.memory_mib, !devices || r.gpu.mode == GpuMode::kNone ? 0 : r.gpu.count};
  return topology_admit(policy_, free, want, spec.numa.empty() ? std::span<const NumaResources>{} : capacity);
}

namespace {
/// Whether the kubelet's TopologyManager sees the task's devices: not a DRA claim's. The DRA
/// manager is no hint provider; claims are prepared after admission, so only CPU and memory
/// are aligned (kubernetes/website#56232, "DRA-managed devices do not participate in
/// TopologyManager decisions"; a claim aligns its devices with matchAttribute on numaNode).
bool hinted_devices(const TaskContext& ctx) { return ctx.job.constraints.claims == nullptr; }
}  // namespace

Status TopologyManagerPlugin::filter(const ClusterState& cluster, const TaskContext& ctx, NodeId node) const {
  if (policy_ == TopologyPolicy::kNone) return Status::success();
  if (admit(cluster, ctx.request(), node, hinted_devices(ctx)).admit) return Status::success();
  return Status::unschedulable(name(), policy_ == TopologyPolicy::kSingleNumaNode
                                           ? "cannot fit one NUMA node (single-numa-node)"
                                           : "no preferred NUMA affinity (restricted)");
}

double TopologyManagerPlugin::score(const ClusterState& cluster, const TaskContext& ctx, NodeId node) {
  const auto a = admit(cluster, ctx.request(), node, hinted_devices(ctx));
  return a.admit && a.preferred ? 100.0 : 0.0;
}

bool TopologyManagerPlugin::select(const ClusterState& cluster, const TaskContext& ctx, NodeId node, TaskPlacement& out) const {
  const auto& r = ctx.request();
  const auto a = admit(cluster, r, node, hinted_devices(ctx));
  const std::uint64_t mask = a.admit ? a.mask : ~std::uint64_t{0};
  const auto gpus = cluster.gpus(node);
  // GPU order: inside the affinity first; the best-connected subset of those leads.
  std::vector<int> inside, outside;
  for (std::size_t g = 0; g < gpus.size(); ++g) {
    if (cluster.gpu_units(node, gpus[g], r) <= 0) continue;
    ((mask >> gpus[g].socket) & 1U ? inside : outside).push_back(static_cast<int>(g));
  }
  std::vector<std::uint16_t> order;
  const int want = r.gpu.mode == GpuMode::kNone ? 0 : r.gpu.count;
  if (want > 1 && static_cast<int>(inside.size()) >= want) {
    for (int g : cluster.topology(node).best_subset(inside, want)) order.push_back(static_cast<std::uint16_t>(g));
  }
  for (int g : inside) if (std::find(order.begin(), order.end(), g) == order.end()) order.push_back(static_cast<std::uint16_t>(g));
  for (int g : outside) order.push_back(static_cast<std::uint16_t>(g));
  if (!pick_devices(cluster, r, node, order, chooser_, out)) return false;
  if (policy_ == TopologyPolicy::kNone || cluster.spec(node).sockets <= 1) return true;
  pin(cluster, r, node, mask, true, out);
  return true;
}

void TopologyManagerPlugin::complete(const ClusterState& cluster, const TaskContext& ctx, TaskPlacement& out) const {
  // Claim jobs only: dynamic-resources chose their devices (scenarios require it as their
  // device_select), and a claim's devices give the TopologyManager no hint, so the kubelet's CPU
  // and memory managers pin the pod's CPUs to the NUMA nodes admitted for its CPU and memory
  // alone. Other tasks are pinned by this plugin's select, or not at all: a device select that
  // ignores the hint (gpu-first-fit, or dynamic-resources for nvidia.com/gpu pods) can put a GPU
  // where the kubelet would not, and pinning the CPUs apart from it would add a cross-socket
  // slowdown the kubelet never causes (docs/dra.md).
  if (ctx.job.constraints.claims == nullptr || policy_ == TopologyPolicy::kNone || !out.numa.empty() || cluster.spec(out.node).sockets <= 1) {
    return;
  }
  const auto a = admit(cluster, ctx.request(), out.node, false);
  pin(cluster, ctx.request(), out.node, a.admit ? a.mask : ~std::uint64_t{0}, false, out);
}

void TopologyManagerPlugin::pin(const ClusterState& cluster, const TaskRequest& r, NodeId node, std::uint64_t mask, bool gpus_first,
                                TaskPlacement& out) {
  // Pin CPUs and memory to the affinity's sockets (the GPUs' sockets first when they were
  // hinted), spilling over.
  const auto gpus = cluster.gpus(node);
  std::vector<int> sockets;
  for (const auto& grant : out.gpus) {
    if (!gpus_first) break;
    const int z = gpus[grant.index].socket;
    if (std::find(sockets.begin(), sockets.end(), z) == sockets.end()) sockets.push_back(z);
  }
  for (int z = 0; z < cluster.spec(node).sockets; ++z) {
    if (((mask >> z) & 1U) && std::find(sockets.begin(), sockets.end(), z) == sockets.end()) sockets.push_back(z);
  }
  for (int z = 0; z < cluster.spec(node).sockets; ++z) {
    if (std::find(sockets.begin(), sockets.end(), z) == sockets.end()) sockets.push_back(z);
  }
  std::int64_t cpu = r.cpu_milli, mem = r.memory_mib;
  for (int z : sockets) {
    if (cpu <= 0 && mem <= 0) break;
    const auto c = std::min(cpu, cluster.numa_cpu_free(node, z));
    const auto m = std::min(mem, cluster.numa_memory_free(node, z));
    if (c > 0 || m > 0) out.numa.push_back({static_cast<std::int16_t>(z), c, m});
    cpu -= c;
    mem -= m;
  }
  if (cpu > 0 || mem > 0) out.numa.clear();   // the shared pool has it, the NUMA nodes do not: stay unpinned
}

}  // namespace gpusched::policies
