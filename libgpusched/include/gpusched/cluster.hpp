#pragma once
/// Cluster state with incremental per-node aggregates (Kubernetes NodeInfo-style).
///
/// Every change goes through allocate()/release(); both update the node's aggregates,
/// the cluster totals and the node's generation counter.
///
/// Example:
///   ClusterState c(catalog, resources, std::move(specs));
///   TaskPlacement p{NodeId{0}, {{0, 1000, 0}}};
///   c.allocate(request, p);   // ... later
///   c.release(request, p);
#include <algorithm>
#include <cstdint>
#include <bit>
#include <map>
#include <memory>
#include <optional>
#include <utility>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <gpusched/gpu_catalog.hpp>
#include <gpusched/ids.hpp>
#include <gpusched/mig.hpp>
#include <gpusched/node.hpp>
#include <gpusched/resources.hpp>
#include <gpusched/topology.hpp>

namespace gpusched {

/// What one task got on one GPU (a whole GPU, a share, a replica, a vGPU or a MIG instance).
struct GpuGrant {
  std::uint16_t index = 0;       ///< GPU index within the node
  std::int32_t milli = 0;        ///< compute share taken (1000 = whole; a 3g GI of 7 = 428)
  std::int64_t memory_mib = 0;   ///< GPU memory taken
  std::int8_t mig_profile = -1;  ///< MIG: profile index (MigGeometry::profiles) of the GI taken
  std::int8_t mig_start = -1;    ///< MIG: the GI's first memory slice
  bool mig_created = false;      ///< MIG: the GI was created for this task (dynamic partitioning)
  /// MIG: idle GIs destroyed to make room, 4 bits per start slice: profile index + 1 (0 = none).
  std::uint32_t mig_destroyed = 0;
  std::int16_t vgpu_profile = -1;  ///< vGPU: profile index (GpuModel::vgpu)
  auto operator<=>(const GpuGrant&) const = default;
};

/// CPUs and memory a task takes from one NUMA node (TopologyManager-aligned placements only;
/// other tasks use the node's shared pool and are not NUMA-pinned).
struct NumaGrant {
  std::int16_t socket = 0;
  std::int64_t cpu_milli = 0;
  std::int64_t memory_mib = 0;
  auto operator<=>(const NumaGrant&) const = default;
};

/// Where one task runs: a node, its GPU grants, TPU chips, NICs and NUMA pinning.
struct TaskPlacement {
  NodeId node;
  std::vector<GpuGrant> gpus;
  std::vector<NumaGrant> numa;   ///< empty: not NUMA-pinned
  std::int32_t tpu_chips = 0;    ///< google.com/tpu taken on the node
  double slowdown = 1.0;         ///< runtime factor from devices and topology (>= 1 slows)
  std::uint64_t nics = 0;        ///< bit k: the node's NIC k (NodeSpec::nics), held through a DRA claim
  bool operator==(const TaskPlacement&) const = default;
};

/// The GPUs `placements` hold, a share counting its fraction (GPU time attained, Tiresias' 2D-LAS).
[[nodiscard]] inline double held_gpus(std::span<const TaskPlacement> placements) {
  double gpus = 0.0;
  for (const auto& p : placements) {
    for (const auto& g : p.gpus) gpus += static_cast<double>(g.milli) / kMilliPerGpu;
  }
  return gpus;
}

/// MIG state of one GPU in MIG mode: its GPU instances and which of them are taken.
struct MigGpuState {
  MigLayout layout;
  std::uint8_t busy = 0;         ///< bit s: the GI starting at memory slice s runs a task
  [[nodiscard]] bool busy_at(int start) const { return (busy >> start) & 1U; }
  /// Free (idle) GIs of profile `p`, in start order.
  [[nodiscard]] int free_of(int p) const {
    int n = 0;
    for (const auto& i : layout.instances()) n += (i.profile == p && !busy_at(i.start)) ? 1 : 0;
    return n;
  }
  [[nodiscard]] int free_count() const {
    return static_cast<int>(layout.instances().size()) - std::popcount(static_cast<unsigned>(busy));
  }
};

/// Runtime state of one GPU.
struct GpuState {
  std::int32_t milli_free = kMilliPerGpu;
  std::int64_t memory_free_mib = 0;
  std::int64_t memory_mib = 0;
  GpuModelId model;
  std::int16_t socket = 0;
  std::uint16_t tasks = 0;       ///< tasks holding a grant on it
  GpuPartition partition = GpuPartition::kWhole;
  std::uint16_t replicas = 1;    ///< time-slicing / MPS shares
  std::int16_t vgpu_profile = -1;  ///< vGPU: profile in use (-1: none yet)
  bool vgpu_fixed = false;       ///< vGPU: the profile is configured, not set by the first vGPU
  std::int32_t mig = -1;         ///< MIG: index into ClusterState's MIG states
  [[nodiscard]] bool fully_free() const { return tasks == 0; }
};

/// How `nvidia.com/gpu: N` takes replicas of time-slicing / MPS GPUs (docs/sharing.md).
enum class ReplicaAllocation : std::uint8_t {
  /// As the NVIDIA device plugin: a node advertises the sum of its GPUs' replicas, and a task
  /// takes N replicas, several of one GPU when needed, each from the GPU with the fewest replicas
  /// allocated (other tasks' and this task's picks alike; ties: fewest picked for this task, then
  /// the policy's order), as its `distributed` policy does; subject to failRequestsGreaterThanOne.
  /// The default.
  kDevicePlugin,
  /// gpusched's earlier model: a task takes at most one replica per GPU, so N needs N GPUs with
  /// a free replica; failRequestsGreaterThanOne is not applied.
  kOnePerGpu,
};
std::string_view to_string(ReplicaAllocation a);

/// Device behaviour that is configuration, not hardware: performance factors and delays.
struct DeviceOptions {
  std::int64_t mig_reconfigure_us = 0;   ///< a task on a newly created GI starts this much later
  double vgpu_slowdown = 1.0;            ///< runtime factor on a vGPU (NVIDIA: a few percent)
  double passthrough_slowdown = 1.0;     ///< runtime factor with PCI passthrough
  double mig_slowdown = 1.0;             ///< runtime factor on a MIG instance (beyond its size)
  double pcie_slowdown = 1.0;            ///< multi-GPU task whose GPUs talk over PCIe on one socket
  double cross_socket_slowdown = 1.0;    ///< ... across sockets, or CPUs on another NUMA node
  double time_slicing_overhead = 0.0;    ///< context-switch cost when several sharers are active
  ReplicaAllocation replica_allocation = ReplicaAllocation::kDevicePlugin;
};

/// Runtime state of one node: free capacity and aggregates over its GPUs.
struct NodeState {
  std::int64_t cpu_free_milli = 0;
  std::int64_t memory_free_mib = 0;
  std::uint32_t gpu_begin = 0;          ///< first GPU in ClusterState::gpus()
  std::uint16_t gpu_count = 0;
  std::uint16_t gpus_fully_free = 0;    ///< GPUs with no task at all
  std::int32_t gpu_milli_free = 0;      ///< sum over GPUs
  std::int32_t gpu_milli_free_max = 0;  ///< best single GPU, compute
  std::int64_t gpu_memory_free_max = 0; ///< best single GPU, memory
  std::int64_t gpu_memory_free = 0;     ///< sum over GPUs, MiB
  std::uint16_t whole_units_free = 0;   ///< nvidia.com/gpu units: free whole GPUs, replicas, single-strategy GIs
  std::int32_t tpu_chips_free = 0;      ///< google.com/tpu
  std::uint64_t nics_busy = 0;          ///< bit k: NIC k is held by a task (DRA claims: TaskPlacement::nics)
  GpuModelId model;                     ///< the model when all GPUs share it, else invalid
  bool schedulable = true;              ///< false while the node is down or cordoned
  bool plain_gpus = true;               ///< every GPU is handed out whole or shared (no partition)
  std::uint32_t tasks = 0;              ///< tasks running here
  /// Tasks here that request no CPU / no memory: kube-scheduler's scores count each as 100m CPU /
  /// 200 MiB (NodeInfo.NonZeroRequested, pkg/scheduler/util non_zero.go).
  std::uint32_t tasks_without_cpu = 0;
  std::uint32_t tasks_without_memory = 0;
  std::uint64_t generation = 0;         ///< bumped on every change
};

/// Why a request does not fit a node now (first failing dimension, in this order).
enum class FitResult : std::uint8_t {
  kFits, kUnschedulable, kCpu, kMemory, kExtended, kGpuModel, kGpuCount, kGpuShare, kMig, kVgpu, kPassthrough, kTpu,
  kReplicaRequestTooLarge,   ///< more than one replica where failRequestsGreaterThanOne holds
  kMpsClientLimit,           ///< a share above an MPS client's limit (GPU memory / replicas, SMs / replicas)
};

/// Node specs shared by a cluster and its copies (what-if and backfill scratch clusters) until
/// one of them changes a spec (copy on write): copying a cluster copies no names, labels or
/// taints. EASY backfill copies the cluster for every reservation; copying the specs was a third
/// of a slurm-backfill replay.
class SharedNodeSpecs {
 public:
  SharedNodeSpecs() : p_(std::make_shared<std::vector<NodeSpec>>()) {}
  explicit SharedNodeSpecs(std::vector<NodeSpec> v) : p_(std::make_shared<std::vector<NodeSpec>>(std::move(v))) {}
  [[nodiscard]] const NodeSpec& operator[](std::size_t i) const { return (*p_)[i]; }
  [[nodiscard]] std::size_t size() const { return p_->size(); }
  [[nodiscard]] std::span<const NodeSpec> all() const { return *p_; }
  /// Node i's spec, to change it: this cluster's own copy of the specs first if they are shared.
  NodeSpec& mutate(std::size_t i) {
    if (p_.use_count() > 1) p_ = std::make_shared<std::vector<NodeSpec>>(*p_);
    return (*p_)[i];
  }

 private:
  std::shared_ptr<std::vector<NodeSpec>> p_;
};

/// The cluster: node specs, runtime state, totals. Not thread-safe; copyable (what-if copies).
class ClusterState {
 public:
  ClusterState(GpuCatalog catalog, ResourceTable resources, std::vector<NodeSpec> nodes);

  [[nodiscard]] std::size_t node_count() const { return nodes_.size(); }
  [[nodiscard]] const NodeSpec& spec(NodeId n) const { return specs_[n.value]; }
  [[nodiscard]] std::span<const NodeSpec> specs() const { return specs_.all(); }
  [[nodiscard]] const NodeState& node(NodeId n) const { return nodes_[n.value]; }
  [[nodiscard]] std::span<const NodeState> nodes() const { return nodes_; }
  [[nodiscard]] std::span<const GpuState> gpus(NodeId n) const {
    const auto& s = nodes_[n.value];
    return {gpus_.data() + s.gpu_begin, s.gpu_count};
  }
  [[nodiscard]] std::span<const GpuState> all_gpus() const { return gpus_; }
  [[nodiscard]] std::int64_t extended_free(NodeId n, ResourceId r) const;
  [[nodiscard]] std::optional<NodeId> find_node(std::string_view name) const;
  [[nodiscard]] const GpuCatalog& catalog() const { return *catalog_; }
  [[nodiscard]] const ResourceTable& resources() const { return *resources_; }

  /// Could `r` ever fit on node `n` if the node were empty? (validation of inputs)
  [[nodiscard]] bool fits_empty(NodeId n, const TaskRequest& r) const;
  /// Does `r` fit node `n` now (CPU, memory, extended, GPUs incl. model constraint)?
  [[nodiscard]] bool fits(NodeId n, const TaskRequest& r) const { return fit_check(n, r) == FitResult::kFits; }
  /// Like fits(), but says which dimension failed first. O(GPUs on the node) at worst.
  [[nodiscard]] FitResult fit_check(NodeId n, const TaskRequest& r) const;
  /// Can the GPU part of `r` be served by GPU `g` of node `n` now? (shared requests: a share of
  /// a bare-metal GPU, or one MPS client when the share is within the client's limits)
  [[nodiscard]] static bool gpu_fits_shared(const GpuState& g, const GpuRequest& r) {
    if (g.partition == GpuPartition::kMps) return g.tasks < g.replicas && mps_share_within_limits(g, r);
    return g.partition == GpuPartition::kWhole &&
           share_fits(g.milli_free, g.memory_free_mib, g.tasks, g.memory_mib, r.milli, r.memory_mib);
  }
  /// A share of a bare-metal GPU in a given state (free compute and memory, tasks holding a
  /// grant, memory size), by HAMi's device checks (pkg/device/nvidia fit_checks.go): enough free
  /// compute and memory; a share of all the compute (gpucores 100, gpu-milli 1000) is exclusive,
  /// so only an idle GPU takes it (checkCardExclusive); a share with no compute does not go on
  /// a GPU whose compute is all given (checkCardComputeExhausted). So a GPU that holds a grant
  /// of all its compute holds nothing else. `memory_mib` may be kAllGpuMemory.
  [[nodiscard]] static bool share_fits(std::int32_t milli_free, std::int64_t memory_free_mib, std::uint16_t tasks,
                                       std::int64_t gpu_memory_mib, std::int32_t milli, std::int64_t memory_mib) {
    return milli_free >= milli && memory_free_mib >= (memory_mib == kAllGpuMemory ? gpu_memory_mib : memory_mib) &&
           (milli < kMilliPerGpu || tasks == 0) && (milli > 0 || milli_free > 0);
  }
  /// Units of `r` that GPU `g` (of `node`) can serve now: 0 when it cannot; 1 for a whole GPU,
  /// a share, a replica, a vGPU or a passthrough GPU (one unit per GPU per task); for MIG, the
  /// GIs it can give (free ones of the profile, plus ones that could be created when dynamic).
  [[nodiscard]] int gpu_units(NodeId node, const GpuState& g, const TaskRequest& r) const;
  /// The grant for one unit of `r` on GPU `index` of `node`. Not for MIG GPUs: see mig_option().
  [[nodiscard]] GpuGrant unit_grant(NodeId node, std::uint16_t index, const TaskRequest& r) const;
  /// The grant of the existing GI (profile, start) on MIG GPU `index`: its share of compute and its
  /// memory (what a task taking that idle GI holds; DRA hands out GIs by name).
  [[nodiscard]] static GpuGrant mig_instance_grant(std::uint16_t index, const MigGeometry& geo, int profile, int start);

  /// One way to give a GI of `r`'s profile on a GPU: an idle GI, or a new one (maybe after
  /// destroying idle GIs).
  struct MigOption {
    GpuGrant grant;
    int destroyed = 0;   ///< idle GIs destroyed
  };
  /// Chooses the start of a new GI among legal free starts of `layout` (a policy hook).
  using MigStartChooser = std::optional<int> (*)(const MigGeometry&, const MigLayout&, int profile);
  /// The best option on GPU `index` of `node` for a GI of `r`: an idle GI of the profile (lowest
  /// start) if any; else, when the node is dynamic, a new GI at `choose`'s start; else one after
  /// destroying the fewest idle GIs. `layout` overrides the GPU's current layout (for
  /// several GIs in one task). nullopt: impossible.
  [[nodiscard]] std::optional<MigOption> mig_option(NodeId node, std::uint16_t index, const TaskRequest& r,
                                                    MigStartChooser choose, const MigGpuState* layout = nullptr,
                                                    bool allow_create = true) const;
  /// Picks `r.gpu.count` units for a task on `node`, visiting GPUs in `order` (GPU indices;
  /// empty = index order) and taking as many units per GPU as the mode allows. MIG GIs go
  /// through mig_option() with `choose`: idle GIs on any GPU first, then new ones (no
  /// reconfiguration while an idle GI of the profile exists). False when there are not enough.
  bool pick_units(NodeId node, const TaskRequest& r, std::span<const std::uint16_t> order, MigStartChooser choose,
                  std::vector<GpuGrant>& out) const;
  [[nodiscard]] const MigGpuState& mig_state(const GpuState& g) const { return migs_[static_cast<std::size_t>(g.mig)]; }
  [[nodiscard]] const MigGeometry& mig_geometry(const GpuState& g) const { return *(*catalog_)[g.model].mig; }
  /// Free CPU / memory on a NUMA node for pinned tasks (capacity minus pinned tasks; the node's
  /// total free bounds it as well).
  [[nodiscard]] std::int64_t numa_cpu_free(NodeId n, int socket) const;
  [[nodiscard]] std::int64_t numa_memory_free(NodeId n, int socket) const;

  [[nodiscard]] const DeviceOptions& device_options() const { return options_; }
  /// Sets the options; node aggregates are recomputed when the replica allocation changes.
  void set_device_options(const DeviceOptions& o);
  /// Replicas of time-slicing / MPS GPU `g` that `r` (kWhole) could take now on `node`: 0 when
  /// the resource names differ (nvidia.com/gpu vs nvidia.com/gpu.shared); with kOnePerGpu at most 1.
  [[nodiscard]] int free_replicas(NodeId node, const GpuState& g, const TaskRequest& r) const;
  /// nvidia.com/gpu as kube-scheduler's allocation scores count it on a node whose GPUs the device
  /// plugin time-slices or MPS-shares (kDevicePlugin; not renamed): {allocatable, requested with
  /// `r` added}, allocatable being GPUs x replicas (whole GPUs count 1). nullopt elsewhere (the
  /// scores then count GPU compute in milli).
  [[nodiscard]] std::optional<std::pair<std::int64_t, std::int64_t>> kube_gpu_counts(NodeId n, const TaskRequest& r) const;
  /// Does failRequestsGreaterThanOne hold on node `n` for its GPUs of partition `p`?
  [[nodiscard]] bool fails_above_one(NodeId n, GpuPartition p) const;
  /// An MPS client's limits on GPU `g` (kMps): memory (the plugin's pinned-memory limit, GPU
  /// memory / replicas, MiB rounded down) and compute (1000 / replicas milli).
  [[nodiscard]] static std::int64_t mps_client_memory_mib(const GpuState& g) { return g.memory_mib / std::max<std::uint16_t>(1, g.replicas); }
  [[nodiscard]] static std::int32_t mps_client_milli(const GpuState& g) { return kMilliPerGpu / std::max<std::uint16_t>(1, g.replicas); }
  /// Does share `r` (kShared) fit one MPS client of GPU `g`, as far as the limits go?
  [[nodiscard]] static bool mps_share_within_limits(const GpuState& g, const GpuRequest& r) {
    return (r.memory_mib == kAllGpuMemory ? g.memory_mib : r.memory_mib) <= mps_client_memory_mib(g) && r.milli <= mps_client_milli(g);
  }
  /// The node's GPU/NUMA topology (built on first use, shared by nodes described alike).
  [[nodiscard]] const Topology& topology(NodeId n) const;
  /// Runtime factor of a placement: its devices' (vGPU, passthrough, MIG: the largest) times
  /// its topology's (Topology::slowdown with the pcie / cross_socket options; CPUs count when
  /// the placement is NUMA-pinned).
  [[nodiscard]] double placement_slowdown(const TaskRequest& r, const TaskPlacement& p) const;

  /// Takes the resources. Precondition: the placement fits (asserted).
  void allocate(const TaskRequest& r, const TaskPlacement& p);
  /// Gives back what allocate() took; a GI created for the task stays, idle (dynamic MIG keeps
  /// its partitioning until a later request changes it). Precondition: it was allocated.
  void release(const TaskRequest& r, const TaskPlacement& p);
  /// Undoes allocate() exactly, including GIs it created or destroyed (transaction rollback).
  void undo_allocate(const TaskRequest& r, const TaskPlacement& p);
  /// Undoes release() exactly: the task holds what it held again (a what-if eviction taken
  /// back). Its GIs are still there, idle (release() keeps them), so the GIs its placement
  /// created or destroyed when it started are not created or destroyed again; allocate() would
  /// replay them on a layout that has moved on since. Precondition: nothing took those GIs since.
  void undo_release(const TaskRequest& r, const TaskPlacement& p);
  /// Marks a node (un)schedulable (node down/up, cordon). Running tasks are the caller's business.
  void set_schedulable(NodeId n, bool schedulable);
  /// Adds a taint (replacing one with the same key and effect). Evicting running tasks that do
  /// not tolerate a NoExecute taint is the caller's business.
  void add_taint(NodeId n, const Taint& t);
  /// Removes the taints with `key` (and `effect`, when given). Returns how many were removed.
  int remove_taint(NodeId n, const std::string& key, std::optional<TaintEffect> effect = std::nullopt);
  /// PreferNoSchedule taints on all nodes together: while there are none, kube-scheduler's
  /// TaintToleration scores every node alike (ScorePlugin::constant_score).
  [[nodiscard]] std::size_t prefer_no_schedule_taints() const { return prefer_no_schedule_; }

  // Cluster totals, maintained incrementally.
  struct Totals {
    std::int64_t cpu_milli = 0, memory_mib = 0, gpu_milli = 0, gpus = 0;
    std::int64_t cpu_used_milli = 0, memory_used_mib = 0, gpu_used_milli = 0, gpus_busy = 0;
    std::int64_t tasks = 0;
    std::int64_t tpu_chips = 0, tpu_chips_used = 0;
    std::int64_t mig_reconfigurations = 0;   ///< GIs created or destroyed while running
  };
  [[nodiscard]] const Totals& totals() const { return totals_; }
  /// Largest node, per dimension (for normalisation, e.g. FGD's 128,000 milli-CPU / 8,000 milli-GPU).
  [[nodiscard]] const NodeState& max_capacity() const { return max_capacity_; }
  [[nodiscard]] std::uint64_t generation() const { return generation_; }
  /// Identifies this cluster object: a copy (a what-if or backfill scratch cluster) gets a new
  /// one, so caches keyed by node generations never mix two clusters whose generations agree.
  [[nodiscard]] std::uint64_t instance() const { return instance_.value; }
  /// The object this one was copied (or moved) from: its instance(), 0 for a cluster built from
  /// specs, and change_count() at that moment. Up to that position the two share their history
  /// and change log, so a structure kept for the original at a position no later than
  /// copied_at() holds for this copy too and can be brought up to date from its change log
  /// (the node index does so for EASY backfill's scratch cluster).
  [[nodiscard]] std::uint64_t copied_from() const { return instance_.origin; }
  [[nodiscard]] std::uint64_t copied_at() const { return log_.copied_at; }
  /// The change log: the node of every change (each bump of a node's generation), in order.
  /// Positions count every change since the cluster was built; the oldest entries are dropped
  /// once the log holds more than 2 x nodes + 4,096 of them. changed_since(pos) gives the nodes
  /// changed at or after `pos` (repeats possible), or nothing when entries since `pos` were dropped
  /// (the caller then looks at every node).
  [[nodiscard]] std::uint64_t change_count() const { return log_.base + log_.entries.size(); }
  [[nodiscard]] std::optional<std::span<const std::uint32_t>> changed_since(std::uint64_t pos) const {
    if (pos < log_.base || pos > change_count()) return std::nullopt;
    return std::span<const std::uint32_t>(log_.entries).subspan(static_cast<std::size_t>(pos - log_.base));
  }
  /// The cluster's capacity per node, as built (free = capacity when empty).
  [[nodiscard]] std::int64_t cpu_capacity(NodeId n) const { return specs_[n.value].cpu_milli; }
  [[nodiscard]] std::int64_t memory_capacity(NodeId n) const { return specs_[n.value].memory_mib; }

 private:
  void refresh_gpu_aggregates(NodeState& s, const NodeSpec& spec);
  void take_gpu(NodeState& s, const GpuGrant& grant);
  void give_gpu(NodeState& s, const GpuGrant& grant, bool undo);
  void apply_numa(NodeId n, const TaskPlacement& p, int sign);

  // Never changed after construction: shared by copies (a what-if or backfill copy copies no
  // model names, MIG tables or resource names).
  std::shared_ptr<const GpuCatalog> catalog_;
  std::shared_ptr<const ResourceTable> resources_;
  SharedNodeSpecs specs_;
  std::size_t prefer_no_schedule_ = 0;   // PreferNoSchedule taints in specs_
  std::vector<NodeState> nodes_;
  std::vector<GpuState> gpus_;
  std::vector<MigGpuState> migs_;
  std::vector<std::int64_t> numa_cpu_free_, numa_memory_free_;   // pinned accounting, node-major
  std::vector<std::uint32_t> numa_begin_;                         // per node: first NUMA entry
  DeviceOptions options_;
  bool undo_ = false;   // release() as the exact inverse of allocate()
  bool restore_ = false;   // allocate() as the exact inverse of release(): no MIG reconfiguration
  mutable std::vector<std::shared_ptr<const Topology>> topologies_;   // per node, lazily
  mutable std::map<std::string, std::shared_ptr<const Topology>> topology_by_shape_;
  std::vector<std::int64_t> extended_free_;   // node-major: [node * resources + r]
  /// Node names are fixed at construction: copies (EASY backfill's scratch cluster) share the map.
  std::shared_ptr<const std::unordered_map<std::string, NodeId>> by_name_;
  Totals totals_;
  NodeState max_capacity_;
  std::uint64_t generation_ = 0;
  /// Bumps node `n`'s generation and the cluster's, and logs the change.
  void changed(std::uint32_t n) {
    ++nodes_[n].generation;
    ++generation_;
    if (log_.entries.size() >= 2 * nodes_.size() + 4096) {
      log_.base += log_.entries.size();
      log_.entries.clear();
    }
    log_.entries.push_back(n);
  }
  /// The change log; a copy records where it was copied (copied_at()).
  struct ChangeLog {
    std::vector<std::uint32_t> entries;
    std::uint64_t base = 0;        ///< position of entries[0]
    std::uint64_t copied_at = 0;
    ChangeLog() = default;
    ChangeLog(const ChangeLog& o) : entries(o.entries), base(o.base), copied_at(o.base + o.entries.size()) {}
    ChangeLog(ChangeLog&& o) noexcept : base(o.base), copied_at(o.base + o.entries.size()) { entries = std::move(o.entries); }
    ChangeLog& operator=(const ChangeLog& o) {
      entries = o.entries;
      base = o.base;
      copied_at = o.base + o.entries.size();
      return *this;
    }
    ChangeLog& operator=(ChangeLog&& o) noexcept {
      copied_at = o.base + o.entries.size();
      base = o.base;
      entries = std::move(o.entries);
      return *this;
    }
  };
  ChangeLog log_;
  /// A fresh number per object, constructed or copied, and the number of the object it was
  /// copied from.
  struct InstanceId {
    std::uint64_t value = next();
    std::uint64_t origin = 0;
    InstanceId() = default;
    InstanceId(const InstanceId& o) : value(next()), origin(o.value) {}
    InstanceId& operator=(const InstanceId& o) {
      value = next();
      origin = o.value;
      return *this;
    }
    static std::uint64_t next();
  };
  InstanceId instance_;
};

}  // namespace gpusched
