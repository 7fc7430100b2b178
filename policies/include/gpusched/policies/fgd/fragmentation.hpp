#pragma once
/// GPU fragmentation as defined by FGD (Weng et al., "Beware of Fragmentation: Scheduling
/// GPU-Sharing Workloads with Fragmentation Gradient Descent", USENIX ATC'23), extended to MIG.
///
/// Target workload: the *typical pod types* M of a workload, each with a weight (its number of
/// pods; p_m = pods_m / sum of pods over M). For node n and type m, the fragment F_n(m) is the
/// idle GPU capacity of n (milli) that a pod of type m cannot use:
///   - m is CPU-only, or n lacks the free CPU for m, or n cannot host m's GPU request (too few
///     usable GPUs / GPU instances): all idle GPU capacity of n;
///   - else: the idle capacity of n that m cannot use (GPUs of a model m does not allow, GPUs
///     with less free milli or GPU memory than m's per-GPU share, GPUs not fully free for a
///     whole-GPU m, and on MIG GPUs the free memory slices no legal GI of m's profile covers).
/// Node fragmentation F_n = sum_m p_m F_n(m); cluster fragmentation = sum over nodes. Host
/// memory and node schedulability are not considered (as in the paper).
///
/// What "idle capacity" means per GPU (gpu_idle_milli):
///   - whole / time-slicing / MPS GPUs: its free milli (1000 - shares taken);
///   - MIG GPUs: free memory slices x 1000 / memory_slices (A100/H100: 125 milli per slice).
///     Dynamic nodes (GIs created on demand): every slice not under a busy GI (idle GIs can be
///     destroyed). Static or `single`-strategy nodes: the slices of idle GIs (slices no GI covers
///     can never be handed out and are not capacity). A slice range serves a MIG type only
///     where a legal GI of its profile fits: dynamic nodes, any start that is legal next to the
///     busy GIs (placement rules, compute and max_count of mig.hpp); static nodes, idle GIs of
///     the profile. Non-MIG types cannot use MIG GPUs (except whole-GPU types on `single` nodes,
///     which use idle GIs) and MIG types cannot use other GPUs;
///   - vGPU and passthrough GPUs: 0 (outside FGD's model; they never count as fragment).
///
/// Example (the simulator's metrics after every pod):
///   auto types = fgd::typical_pod_types(workload);          // once
///   fgd::FragmentationCache frag(types);
///   ... after each placement:  auto f = frag.cluster(cluster);  f.ratio(); f.percent_of_capacity();
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include <gpusched/cluster.hpp>
#include <gpusched/job.hpp>

namespace gpusched::policies::fgd {

namespace detail {
struct GpuLook;     ///< a GPU as it is, or as it would be after some grants (fgd.cpp)
struct GpuChange;   ///< one GPU before -> after, counted `times` times (fgd.cpp)
}  // namespace detail

/// One typical pod type: a request shape and how many pods of the workload have it.
struct PodType {
  /// CPU, GPU request (mode, count, share, GPU memory, MIG profile) and allowed GPU models;
  /// host memory, extended resources and TPU are cleared (they do not count).
  TaskRequest request;
  std::int64_t pods = 1;      ///< pods (tasks) of this shape: the integer weight of the type
  double probability = 1.0;   ///< p_m = pods / (pods of all typical types)
};

/// The typical pod types of `workload`: distinct (cpu_milli, GPU mode, count, milli, GPU memory,
/// MIG profile, allowed models) shapes, each job counting `tasks` pods, most popular first
/// (ties: first appearance), taken until they cover `coverage` of the pods (the type that
/// reaches it is included), probabilities renormalised to sum to 1. CPU-only pods are a type
/// like any other. vGPU, passthrough and TPU jobs are left out of the count (FGD does not model
/// them). coverage in (0, 1]. O(jobs log types).
[[nodiscard]] std::vector<PodType> typical_pod_types(std::span<const JobSpec> workload, double coverage = 0.95);

/// The type of one request (weight 1, probability 1): FGD's fallback when no workload is known.
[[nodiscard]] PodType pod_type_of(const TaskRequest& r);
/// True when two requests are the same pod type (same shape as typical_pod_types compares).
[[nodiscard]] bool same_pod_type(const TaskRequest& a, const TaskRequest& b);

/// Idle capacity of GPU `index` of `node`, in milli (see above). O(GIs) for MIG, else O(1).
[[nodiscard]] std::int64_t gpu_idle_milli(const ClusterState& c, NodeId node, std::uint16_t index);
/// Sum of gpu_idle_milli over the node's GPUs.
[[nodiscard]] std::int64_t node_idle_milli(const ClusterState& c, NodeId node);
/// F_n(m) in milli. O(GPUs) (MIG: O(GPUs x profile starts)).
[[nodiscard]] std::int64_t node_fragment(const ClusterState& c, NodeId node, const PodType& m);
/// F_n = sum_m p_m F_n(m), in milli (weights: PodType::pods). O(GPUs x types).
[[nodiscard]] double node_fragmentation(const ClusterState& c, NodeId node, std::span<const PodType> types);

/// FGD's score as the authors' simulator computes it: trunc(100 x sigmoid(-ΔF / 1000)), ΔF in
/// milli (so one GPU of growth moves the sigmoid by one unit). 50 for ΔF = 0; higher is better.
[[nodiscard]] std::int32_t integer_score(double delta_milli);

/// How FragmentationCache::best_grants picks among the GPUs a share could go to.
enum class GpuChoice {
  kLeastGrowth,      ///< least ΔF, then least free milli left on the GPU, then lowest index
  kFirstBestScore,   ///< the lowest-index GPU with the highest integer_score(ΔF) (the authors')
};

/// Fragmentation of a whole cluster.
struct Fragmentation {
  double fragment_milli = 0.0;       ///< sum over nodes of F_n
  std::int64_t idle_milli = 0;       ///< sum over nodes of node_idle_milli
  std::int64_t capacity_milli = 0;   ///< 1000 x GPUs of the cluster
  /// Fragmentation / idle GPU (0 when nothing is idle).
  [[nodiscard]] double ratio() const { return idle_milli > 0 ? fragment_milli / static_cast<double>(idle_milli) : 0.0; }
  /// Fragmentation as % of the cluster's GPU capacity.
  [[nodiscard]] double percent_of_capacity() const {
    return capacity_milli > 0 ? 100.0 * fragment_milli / static_cast<double>(capacity_milli) : 0.0;
  }
};
/// From scratch: O(nodes x GPUs x types). Use FragmentationCache when called repeatedly.
[[nodiscard]] Fragmentation cluster_fragmentation(const ClusterState& c, std::span<const PodType> types);

/// Per-node fragmentation kept up to date incrementally: each node's summary is keyed by its
/// NodeState::generation, so after a placement or release only that node is recomputed.
/// Also evaluates FGD's decision: the growth of fragmentation a placement would cause.
/// One cache follows one ClusterState object: a call with another object (ClusterState::instance():
/// a copy is another object) or node count starts over. Not thread-safe.
///
/// Example:
///   FragmentationCache cache(fgd::typical_pod_types(workload));
///   double before = cache.node(cluster, NodeId{3});          // O(1) when node 3 is unchanged
///   std::vector<GpuGrant> grants;
///   auto d = cache.best_grants(cluster, request, NodeId{3}, nullptr, grants);   // min ΔF
class FragmentationCache {
 public:
  explicit FragmentationCache(std::vector<PodType> types = {});

  /// Replaces the target workload (forgets every node).
  void set_types(std::vector<PodType> types);
  [[nodiscard]] const std::vector<PodType>& types() const { return types_; }

  /// F_n in milli. O(1) when the node is unchanged since the last call, else O(GPUs x types).
  [[nodiscard]] double node(const ClusterState& c, NodeId n);
  /// The cluster's fragmentation: O(nodes) plus the nodes that changed.
  [[nodiscard]] Fragmentation cluster(const ClusterState& c);

  /// Growth of F_n (milli) if `r` were placed on `node` with `grants` (not applied; MIG grants
  /// may create or destroy GIs as ClusterState::allocate would). O(types x GPUs touched).
  [[nodiscard]] double delta(const ClusterState& c, const TaskRequest& r, NodeId node, std::span<const GpuGrant> grants);

  /// FGD's choice inside a node: the grants for `r` on `node` that minimise the growth of F_n.
  ///  - shares (and every one-unit-per-GPU mode): each fitting GPU is tried; `choice` says
  ///    which wins (default: the least growth, then the least free milli left on that GPU, then
  ///    the lowest index); a task of N units picks them one at a time (greedy, least growth);
  ///  - whole GPUs: the same greedy; on a node of identical plain GPUs every free GPU is alike,
  ///    so the lowest-index free GPUs are taken (O(count));
  ///  - MIG profiles (mixed strategy): an idle GI of the profile when the node has one (no
  ///    reconfiguration while one exists), else a new GI at any legal free start, else (dynamic
  ///    nodes) ClusterState::mig_option's fewest-destroyed option on each GPU; each candidate is
  ///    scored by growth, then GIs destroyed, GPU index and start; N GIs are picked greedily;
  ///  - anything else (vGPU, passthrough, `single` MIG), or when the greedy MIG search gets stuck:
  ///    pick_devices() in index order with `mig_start`, scored as is.
  /// Returns the growth (milli), or nullopt when `r` does not fit. Cost O(GPUs x types) for a
  /// share, O(count x types) for whole GPUs on an identical-GPU node.
  [[nodiscard]] std::optional<double> best_grants(const ClusterState& c, const TaskRequest& r, NodeId node,
                                                  ClusterState::MigStartChooser mig_start, std::vector<GpuGrant>& out,
                                                  GpuChoice choice = GpuChoice::kLeastGrowth);

  /// Integer form of F_n: sum_m pods_m x F_n(m) (exact; F_n = this / total_weight()).
  [[nodiscard]] std::int64_t weighted_node(const ClusterState& c, NodeId n);
  [[nodiscard]] std::int64_t total_weight() const { return weight_total_; }

  /// The most that placing a task which takes at most `g` idle milli, from GPUs among `gpus`
  /// (bit i: GPU i; ~0: any), can lower node n's weighted fragmentation, on a node whose GPUs
  /// are all plain (NodeState::plain_gpus: handed out whole or shared, no partition). Per type m:
  ///  - F_n(m) falls by at most min(g, F_n(m)): a type that fits after fitted before, what a GPU
  ///    offers a type (usable milli, units) never grows as the GPU gives more away, and F_n(m)
  ///    stays >= 0;
  ///  - it does not fall at all when m fits and every GPU in `gpus` offers it a unit: the milli
  ///    taken leave the usable milli as they leave the idle milli (or the GPU stops offering, and
  ///    its whole free milli leave the usable milli), and should m stop fitting, the usable milli
  ///    it loses covered what was taken.
  /// So every placement's weighted growth is at least minus the sum. O(types) when n is unchanged
  /// since the last call, else O(GPUs x types) once (the summary delta() reads).
  /// `one_gpu`: the task, taking one GPU among `gpus` (as ClusterState::unit_grant grants it): the
  /// bound is then the most any one of them allows, and a type a GPU serves before and not after
  /// counts the milli the GPU has left as growth (that GPU's free milli leave the usable milli).
  [[nodiscard]] std::int64_t weighted_drop_bound(const ClusterState& c, NodeId n, std::int64_t g, std::uint64_t gpus,
                                                 const TaskRequest* one_gpu);

 private:
  /// Recomputes node n's summary when its key changed; returns n's index.
  std::size_t ensure(const ClusterState& c, NodeId n);
  void bind(const ClusterState& c);
  /// sum_m pods_m x (F_n(m) after - before) for CPU free `cpu_after` and the GPU changes.
  std::int64_t weighted_delta(const ClusterState& c, NodeId n, std::int64_t cpu_after, const detail::GpuChange* changes,
                              std::size_t count);
  std::optional<std::int64_t> greedy_units(const ClusterState& c, const TaskRequest& r, NodeId node,
                                           std::vector<GpuGrant>& out, GpuChoice choice);
  std::optional<std::int64_t> greedy_mig(const ClusterState& c, const TaskRequest& r, NodeId node,
                                         ClusterState::MigStartChooser mig_start, std::vector<GpuGrant>& out);
  std::int64_t weighted_delta_of(const ClusterState& c, const TaskRequest& r, NodeId node, std::span<const GpuGrant> grants);

  std::vector<PodType> types_;
  std::int64_t weight_total_ = 0;
  // Distinct GPU parts of the types (CPU-only types have none): aggregates are kept per shape.
  std::vector<TaskRequest> shapes_;
  std::vector<std::int32_t> shape_of_;        // per type: index into shapes_, -1 for CPU-only
  std::vector<std::int64_t> du_, dn_;         // scratch per shape
  std::uint64_t bound_ = 0;   // ClusterState::instance() of the cluster followed (0: none)
  std::size_t bound_nodes_ = 0;
  // Per node: the generation its aggregates are for (~0: none) and the aggregates; per node x
  // shape (node-major): usable idle, units. Generations only grow within one cluster object.
  std::vector<std::uint64_t> key_gen_;
  std::vector<std::int64_t> cpu_free_, idle_, weighted_;
  std::vector<std::int64_t> usable_;
  std::vector<std::int32_t> units_;
  std::vector<std::uint64_t> offers_;   // per node x shape: the GPUs (bit i, i < 64) that give the shape a unit
  std::vector<std::int64_t> fit_pods_;  // per node x shape: pods of the types of that shape that fit
  std::vector<std::int64_t> unfit_pods_;   // per node: pods of the types that do not fit (CPU-only ones too)
};

}  // namespace gpusched::policies::fgd
