#pragma once
/// The FGD family (Weng et al., USENIX ATC'23): FGD itself and the paper's baselines DotProd,
/// GPU Clustering and GPU Packing (Best-fit is `best-fit`, Random is `random`, elsewhere).
/// Normalisation constants come from ClusterState::max_capacity() (the paper: 128,000 milli-CPU,
/// 8,000 milli-GPU). "Free GPU" of a node = the sum of its GPUs' free milli.
///
///  - `fgd` (score + device select): places a task where fragmentation grows least,
///    ΔF = F_n(after) - F_n(before) (see fragmentation.hpp), trying every fitting GPU for a share.
///    Typical pod types come from the workload given to attach() (argument `coverage`, default
///    0.95); without one, the task's own shape is the only type. Raw score = -ΔF, min-max
///    normalised to [0, 100]. F_n is cached per node by NodeState::generation, and each node's
///    ΔF per request shape is remembered until the node changes (keyed by ClusterState::instance()).
///  - `dotprod` (score): 100 x (1 - dot/2), dot = (free CPU / max CPU)(CPU req / max CPU) +
///    (free GPU / max GPU)(GPU req / max GPU): small free resources where the pod asks win.
///  - `gpu-clustering` (score): bands by the kinds of GPU pods on the node (CPU-only, sharing,
///    k whole GPUs): (75,100] all of the new pod's kind, (50,75] that kind among others,
///    (25,50] no GPU pod, (0,25] only other kinds; inside a band more used GPU scores higher.
///    CPU-only pods score 0 everywhere. Kinds are counted from job_started / job_stopped plus
///    the current job's tasks already placed; a node with used GPUs but no counted GPU pod
///    (allocated behind the scheduler's back) counts as holding other kinds. "More used"
///    (argument `fill`): used-share (default) = used GPU milli / the node's GPU milli;
///    free-milli (the paper preset, as the authors' simulator) = (G - free GPU milli) / G,
///    G = the largest node's GPU milli (8,000 in the paper), so an idle 2-GPU node looks fuller
///    (6/8) than a half-used 8-GPU node (4/8).
///  - `gpu-packing` (score + device select): (66,100] the pod fits on GPUs already in use (less
///    free milli left on them is better); (33,66] it must open free GPUs on a node with used
///    GPUs (fewer opened is better); (0,33] an idle node (fewer GPUs is better). CPU-only pods
///    score 0. Inside the node: the GPUs with the least free milli that fit.
///
/// Argument `integer_scores` (all four; the paper presets turn it on): score as the authors'
/// simulator (hkust-adsl/kubernetes-scheduler-simulator) does, an integer 0..100 truncated
/// towards zero and not normalised, so that near-equal nodes tie and the tie goes to node order:
///  - fgd: trunc(100 sigmoid(-ΔF / 1000 milli)); inside the node a share goes to the first GPU
///    (index order) with the highest such score, not to the least ΔF;
///  - dotprod: trunc(100 (1 - dot/2));
///  - gpu-clustering: band + trunc(25 x fill), fill as argument `fill` says (above);
///  - gpu-packing: 100 - trunc(sum over the GPUs used of trunc(free% before placing) / 10),
///    at least 50; else 50 - GPUs opened, at least 33; an idle node max(33 - GPUs, GPUs).
/// The authors' NormalizeScore is not applied to these four plugins (their ScoreExtensions are
/// nil), so the integers are the final scores.
#include <cstdint>
#include <utility>
#include <vector>

#include <gpusched/policies/devices/device_select.hpp>
#include <gpusched/policies/fgd/fragmentation.hpp>

namespace gpusched::policies {

/// FGD: score = -ΔF (min-max normalised) or, with integer_scores, fgd::integer_score(ΔF) as is;
/// device select = the GPUs that minimise ΔF (with integer_scores: fgd::GpuChoice::kFirstBestScore).
///
/// Example: `FgdPlugin fgd(0.95, true); fgd.attach(cluster, workload, nullptr);` then score / select.
class FgdPlugin final : public ScorePlugin, public DeviceSelectBase, public JobEventsPlugin {
 public:
  explicit FgdPlugin(double coverage = 0.95, bool integer_scores = false)
      : coverage_(coverage), integer_(integer_scores) {}
  [[nodiscard]] std::string_view name() const override { return "fgd"; }
  [[nodiscard]] bool node_local_answers() const override { return true; }
  [[nodiscard]] bool normalize_is_identity() const override { return integer_; }
  [[nodiscard]] bool normalize_is_min_max() const override { return !integer_; }
  [[nodiscard]] double score(const ClusterState& cluster, const TaskContext& ctx, NodeId node) override;
  /// Integer scores, tasks of no GPU, whole GPUs or shares: integer_score of the least ΔF any
  /// placement can reach (FragmentationCache::weighted_drop_bound); NaN, for a task with GPUs, on
  /// nodes with partitioned GPUs (MIG, time-slicing, MPS) or more than 64 GPUs.
  bool score_bounds(const ClusterState& cluster, const TaskContext& ctx, std::span<const NodeId> nodes,
                    std::span<double> out) override;
  void normalize(std::span<double> scores) const override {
    if (!integer_) normalize_min_max(scores);
  }
  [[nodiscard]] bool select(const ClusterState& cluster, const TaskContext& ctx, NodeId node,
                            TaskPlacement& out) const override;
  /// Computes the typical pod types of `workload` (empty workload: the fallback applies).
  void attach(const ClusterState& cluster, std::span<const JobSpec> workload, const JobsView* jobs) override;
  [[nodiscard]] const std::vector<fgd::PodType>& types() const { return cache_.types(); }
  /// True when the types come from an attached workload (not the per-task fallback).
  [[nodiscard]] bool attached() const { return attached_; }

 private:
  /// Without an attached workload: makes `r` the only type (forgets the cache when it changes).
  void use_fallback(const TaskRequest& r) const;

  /// Forgets the memo of node answers (types or cluster changed).
  void forget() const;

  [[nodiscard]] fgd::GpuChoice choice() const {
    return integer_ ? fgd::GpuChoice::kFirstBestScore : fgd::GpuChoice::kLeastGrowth;
  }

  double coverage_;
  bool integer_ = false;
  bool attached_ = false;
  mutable fgd::FragmentationCache cache_;
  mutable std::vector<GpuGrant> scratch_;
  /// Memo of ΔF per request shape and node, valid while the node's generation is unchanged in
  /// the same cluster object (ClusterState::instance(): generations only grow, and a copy gets a
  /// new instance). The shape is the request without host memory (ΔF does not depend on it),
  /// compared exactly. A decision recomputes only the nodes that changed since the last request
  /// of the same shape. Shapes are kept least recently used, at most kMemoShapes and
  /// kMemoBytes in all (the openb pod lists have 50-90 shapes).
  struct Memo {
    std::uint64_t generation = ~0ULL;
    double delta = 0.0;
  };
  struct ShapeMemo {
    std::uint64_t hash = 0, last_used = 0;
    TaskRequest shape;
    std::vector<Memo> nodes;
  };
  static constexpr std::size_t kMemoShapes = 256;
  static constexpr std::size_t kMemoBytes = std::size_t{32} << 20;
  /// The memo of this task's request shape (found or made once per task via the cycle state).
  ShapeMemo& memo_for(const ClusterState& cluster, const TaskContext& ctx) const;
  mutable std::vector<ShapeMemo> memos_;
  mutable std::uint64_t memo_clock_ = 0;
  mutable std::uint64_t memo_instance_ = 0;   ///< ClusterState::instance() the memos are for (0: none)
  /// score_bounds' answers per GPU request (all a bound reads of a request: mode, count, milli,
  /// memory) and node, valid while the node's generation is unchanged: request classes that differ
  /// only in CPU or host memory share them. At most kBoundMemos, least recently used replaced;
  /// forgotten with the memos.
  struct BoundMemo {
    GpuMode mode = GpuMode::kNone;
    std::int32_t count = 0, milli = 0;
    std::int64_t memory_mib = 0;
    std::uint64_t last_used = 0;
    std::vector<Memo> nodes;   ///< delta holds the bound
  };
  static constexpr std::size_t kBoundMemos = 64;
  BoundMemo& bound_memo_for(const ClusterState& cluster, const TaskRequest& r);
  mutable std::vector<BoundMemo> bound_memos_;
};

class DotProdScore final : public ScorePlugin {
 public:
  explicit DotProdScore(bool integer_scores = false) : integer_(integer_scores) {}
  [[nodiscard]] std::string_view name() const override { return "dotprod"; }
  [[nodiscard]] bool node_local_answers() const override { return true; }
  [[nodiscard]] bool normalize_is_identity() const override { return true; }
  [[nodiscard]] double score(const ClusterState& cluster, const TaskContext& ctx, NodeId node) override;

 private:
  bool integer_ = false;
};

/// The kind of a pod for GPU Clustering: 0 CPU-only, -1 sharing (a part of a GPU: shares, MIG
/// instances, vGPUs), k > 0 k whole GPUs (whole, time-slicing replicas, passthrough).
[[nodiscard]] std::int32_t pod_kind(const TaskRequest& r);

/// What "more used GPU" means for GPU Clustering inside a band.
enum class ClusteringFill {
  kUsedShare,   ///< used GPU milli / the node's GPU milli
  kFreeMilli,   ///< (G - free GPU milli) / G, G = the largest node's GPU milli (the authors' simulator)
};

class GpuClusteringScore final : public ScorePlugin, public JobEventsPlugin {
 public:
  explicit GpuClusteringScore(bool integer_scores = false, ClusteringFill fill = ClusteringFill::kUsedShare)
      : integer_(integer_scores), fill_(fill) {}
  [[nodiscard]] std::string_view name() const override { return "gpu-clustering"; }
  /// Not node-local (the node index scans for it): the kinds counted per node change at
  /// job_started / job_stopped, which come after the allocation or release that changed the
  /// node's generation (a preemptor is placed after its victims are released but before they are
  /// reported stopped), so an answer cached in between would be stale.
  [[nodiscard]] double score(const ClusterState& cluster, const TaskContext& ctx, NodeId node) override;
  /// Forgets the counts; recounts the running jobs when `jobs` is given.
  void attach(const ClusterState& cluster, std::span<const JobSpec> workload, const JobsView* jobs) override;
  void job_started(const JobSpec& job, JobId id, std::span<const TaskPlacement> placements) override;
  void job_stopped(const JobSpec& job, JobId id, std::span<const TaskPlacement> placements) override;
  /// Running tasks of `kind` counted on `node`.
  [[nodiscard]] std::int32_t count(NodeId node, std::int32_t kind) const;

 private:
  void add(NodeId node, std::int32_t kind, std::int32_t delta);
  bool integer_ = false;
  ClusteringFill fill_ = ClusteringFill::kUsedShare;
  std::vector<std::vector<std::pair<std::int32_t, std::int32_t>>> kinds_;   // per node: (kind, tasks)
};

class GpuPacking final : public ScorePlugin, public DeviceSelectBase {
 public:
  explicit GpuPacking(bool integer_scores = false) : integer_(integer_scores) {}
  [[nodiscard]] std::string_view name() const override { return "gpu-packing"; }
  [[nodiscard]] bool node_local_answers() const override { return true; }
  [[nodiscard]] bool normalize_is_identity() const override { return true; }
  [[nodiscard]] double score(const ClusterState& cluster, const TaskContext& ctx, NodeId node) override;
  [[nodiscard]] bool select(const ClusterState& cluster, const TaskContext& ctx, NodeId node,
                            TaskPlacement& out) const override;

 private:
  /// The authors' integer bands (whole GPUs and shares on plain GPUs).
  [[nodiscard]] double integer_score(const ClusterState& cluster, const TaskRequest& r, NodeId node);

  bool integer_ = false;
  std::vector<std::int32_t> left_;   // scratch: free milli kept on used GPUs
  std::vector<std::uint16_t> order_;   // scratch: GPU indices by free milli
};

}  // namespace gpusched::policies
