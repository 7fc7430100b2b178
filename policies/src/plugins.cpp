// Implementations of the built-in plugins.
#include <algorithm>
#include <cmath>
#include <limits>
#include <mutex>
#include <optional>
#include <tuple>
#include <set>
#include <string>

#include <gpusched/assert.hpp>
#include <gpusched/policies/devices/device_select.hpp>
#include <gpusched/policies/gpubinpack/gpu_binpack.hpp>
#include <gpusched/policies/noderesources/allocated.hpp>
#include <gpusched/policies/noderesources/balanced_allocation.hpp>
#include <gpusched/policies/noderesources/fit.hpp>
#include <gpusched/policies/noderesources/requested_to_capacity_ratio.hpp>

namespace gpusched::policies {

void normalize_min_max(std::span<double> scores) {
  if (scores.empty()) return;
  const auto [lo, hi] = std::minmax_element(scores.begin(), scores.end());
  const double min = *lo, max = *hi;
  for (auto& s : scores) s = min_max_score(s, min, max);
}

// ---------------------------------------------------------------- node-resources-fit

namespace {
/// "Insufficient <name>", kept for the life of the process (one per resource name).
std::string_view extended_reason(const std::string& name) {
  static std::mutex mutex;
  static std::set<std::string, std::less<>> texts;
  const std::lock_guard<std::mutex> lock(mutex);
  return *texts.insert("Insufficient " + name).first;
}
}  // namespace

std::string_view NodeResourcesFit::reason(FitResult r) {
  switch (r) {
    case FitResult::kFits: return "fits";
    case FitResult::kUnschedulable: return "node unschedulable";
    case FitResult::kCpu: return "Insufficient cpu";
    case FitResult::kMemory: return "Insufficient memory";
    case FitResult::kExtended: return "Insufficient extended resource";
    case FitResult::kGpuModel: return "GPU model not allowed";
    case FitResult::kGpuCount: return "Insufficient nvidia.com/gpu";
    case FitResult::kGpuShare: return "no GPU with enough free share";
    case FitResult::kMig: return "no free or creatable MIG instance of the profile";
    case FitResult::kVgpu: return "no GPU can host a vGPU of the profile";
    case FitResult::kPassthrough: return "no free passthrough GPU";
    case FitResult::kTpu: return "Insufficient google.com/tpu";
    case FitResult::kReplicaRequestTooLarge:
      return "request for more than 1 shared nvidia.com/gpu: maximum request size for shared resources is 1 (failRequestsGreaterThanOne)";
    case FitResult::kMpsClientLimit: return "share above the MPS per-client limit (GPU memory / replicas, SMs / replicas)";
  }
  return "?";
}

Status NodeResourcesFit::pre_filter(const ClusterState& cluster, TaskContext& ctx) {
  const auto& r = ctx.request();
  const auto& max = cluster.max_capacity();
  if (r.cpu_milli > max.cpu_free_milli) return Status::unresolvable(name(), "cpu exceeds every node");
  if (r.memory_mib > max.memory_free_mib) return Status::unresolvable(name(), "memory exceeds every node");
  if (r.gpu.mode == GpuMode::kWhole && r.gpu.count > max.whole_units_free)
    return Status::unresolvable(name(), "nvidia.com/gpu exceeds every node");
  if (r.gpu.mode == GpuMode::kShared && r.gpu.memory_mib > max.gpu_memory_free_max)
    return Status::unresolvable(name(), "GPU memory share exceeds every GPU");
  return Status::success();
}

Status NodeResourcesFit::filter(const ClusterState& cluster, const TaskContext& ctx, NodeId node) const {
  const FitResult r = cluster.fit_check(node, ctx.request());
  if (r == FitResult::kFits) return Status::success();
  return Status::unschedulable(name(), reason(r));
}

void NodeResourcesFit::capacity_need(const ClusterState& /*cluster*/, const TaskContext& ctx, CapacityNeed& need) const {
  // Each bound is a test ClusterState::fit_check makes before it can answer kFits.
  const auto& r = ctx.request();
  CapacityNeed n;
  n.schedulable = true;
  n.cpu_milli = r.cpu_milli;
  n.memory_mib = r.memory_mib;
  if (r.tpu.chips > 0) n.tpu_chips = r.tpu.chips;
  if (r.gpu.mode == GpuMode::kWhole) n.whole_units = r.gpu.count;
  if (r.gpu.mode == GpuMode::kShared) {
    n.gpu_milli = r.gpu.milli;
    n.gpu_memory_mib = r.gpu.memory_mib == kAllGpuMemory ? 0 : r.gpu.memory_mib;
  }
  need.merge(n);
}

void NodeResourcesFit::reasons(const ClusterState& cluster, const TaskContext& ctx, NodeId node, const Status& first,
                               std::vector<std::string_view>& out) const {
  // fit_check stops at the first shortfall (cpu, memory, extended, then devices); only then can
  // later ones be hidden.
  const auto& r = ctx.request();
  const auto& s = cluster.node(node);
  const bool host = first.reason == reason(FitResult::kCpu) || first.reason == reason(FitResult::kMemory) ||
                    first.reason == reason(FitResult::kExtended);
  if (!host || !s.schedulable) {
    out.push_back(first.reason);
    return;
  }
  if (s.cpu_free_milli < r.cpu_milli) out.push_back(reason(FitResult::kCpu));
  if (s.memory_free_mib < r.memory_mib) out.push_back(reason(FitResult::kMemory));
  for (const auto& [id, amount] : r.extended) {
    if (cluster.extended_free(node, id) < amount) out.push_back(extended_reason(cluster.resources().name(id)));
  }
  devices_only_ = r;
  devices_only_.cpu_milli = 0;
  devices_only_.memory_mib = 0;
  devices_only_.extended.clear();
  if (const FitResult d = cluster.fit_check(node, devices_only_); d != FitResult::kFits) out.push_back(reason(d));
}

// ---------------------------------------------------------------- allocation scores

namespace {
/// A job's request of CPU or memory as kube-scheduler scores it: a task that asks for none
/// counts the non-zero default (pkg/scheduler/util non_zero.go). gpusched cannot tell a request
/// left unset from one set to 0, and treats both as unset.
std::int64_t non_zero(std::int64_t asked, std::int64_t fallback) { return asked > 0 ? asked : fallback; }

/// The node's NonZeroRequested CPU (milli) and memory (MiB) with the job's request added
/// (`defaults` false: the plain requests, as for containers that write 0 explicitly).
std::int64_t kube_requested_cpu(const ClusterState& cluster, const TaskRequest& r, NodeId node, bool defaults) {
  const auto& s = cluster.node(node);
  const std::int64_t used = cluster.cpu_capacity(node) - s.cpu_free_milli;
  if (!defaults) return used + r.cpu_milli;
  return used + std::int64_t{s.tasks_without_cpu} * kKubeDefaultMilliCpu + non_zero(r.cpu_milli, kKubeDefaultMilliCpu);
}
std::int64_t kube_requested_memory(const ClusterState& cluster, const TaskRequest& r, NodeId node, bool defaults) {
  const auto& s = cluster.node(node);
  const std::int64_t used = cluster.memory_capacity(node) - s.memory_free_mib;
  if (!defaults) return used + r.memory_mib;
  return used + std::int64_t{s.tasks_without_memory} * kKubeDefaultMemoryMib + non_zero(r.memory_mib, kKubeDefaultMemoryMib);
}
}  // namespace

AllocatedScore::AllocatedScore(Mode mode, std::vector<ScoredResource> resources, std::string_view name, bool non_zero_defaults)
    : mode_(mode), kube_(true), non_zero_defaults_(non_zero_defaults), name_(name) {
  for (auto& r : resources) {
    const Kind kind = r.name == "cpu"              ? Kind::kCpu
                      : r.name == "memory"         ? Kind::kMemory
                      : r.name == "nvidia.com/gpu" ? Kind::kGpu
                      : r.name == "google.com/tpu" ? Kind::kTpu
                                                   : Kind::kExtended;
    resources_.push_back({kind, r.weight, std::move(r.name)});
  }
  // The score order covers MostAllocated over cpu, memory and nvidia.com/gpu, and LeastAllocated
  // over cpu and memory (see orders_nodes).
  ordered_ = true;
  for (const auto& r : resources_) {
    switch (r.kind) {
      case Kind::kCpu: w_cpu_ = r.weight; break;
      case Kind::kMemory: w_memory_ = r.weight; break;
      case Kind::kGpu: w_gpu_ = r.weight; break;
      default: ordered_ = false;
    }
  }
  if (mode_ == Mode::kLeast && w_gpu_ > 0) ordered_ = false;
}

std::int64_t AllocatedScore::task_cpu(const TaskRequest& r) const {
  return non_zero_defaults_ ? non_zero(r.cpu_milli, kKubeDefaultMilliCpu) : r.cpu_milli;
}
std::int64_t AllocatedScore::task_memory(const TaskRequest& r) const {
  return non_zero_defaults_ ? non_zero(r.memory_mib, kKubeDefaultMemoryMib) : r.memory_mib;
}

std::uint32_t AllocatedScore::group_of(const Shape& shape) const {
  const auto it = std::find(shapes_.begin(), shapes_.end(), shape);
  if (it != shapes_.end()) return static_cast<std::uint32_t>(it - shapes_.begin()) + 1;
  shapes_.push_back(shape);
  return static_cast<std::uint32_t>(shapes_.size());
}

std::size_t AllocatedScore::order_with(std::span<const std::pair<ScorePlugin*, double>> scores) {
  // kube-scheduler's default scores: LeastAllocated over cpu and memory, then BalancedAllocation
  // over cpu and memory, with the same weight.
  if (!kube_ || mode_ != Mode::kLeast || resources_.size() != 2 || w_cpu_ <= 0 || w_cpu_ != w_memory_ || scores.size() < 2 ||
      scores[0].first != this || scores[1].second != scores[0].second || scores[0].second <= 0.0) {
    return 0;
  }
  const auto* balanced = dynamic_cast<const BalancedAllocation*>(scores[1].first);
  if (balanced == nullptr || !balanced->cpu_and_memory()) return 0;
  paired_ = true;
  ordered_ = true;
  return 1;
}

ScorePlugin::OrderBound AllocatedScore::order_bound(const ClusterState& /*cluster*/, const TaskContext& /*ctx*/) const {
  // Paired: a task asking for no CPU or memory is bounded too. least-allocated counts the non-zero
  // default where balanced-allocation counts nothing, which only lowers least-allocated's score
  // below the bound computed from the plain request (and balanced-allocation scores 0 for a task
  // asking for neither).
  return OrderBound::kBounded;
}

ScorePlugin::OrderKey AllocatedScore::order_key(const ClusterState& cluster, NodeId node, std::uint32_t variant) const {
  const auto& s = cluster.node(node);
  OrderKey k;
  if (paired_) {
    const std::int64_t cpu = cluster.cpu_capacity(node), memory = cluster.memory_capacity(node);
    if (cpu <= 0 || memory <= 0 || (non_zero_defaults_ && (s.tasks_without_cpu != 0 || s.tasks_without_memory != 0))) {
      k.group = kReplicatedGroup;   // (left out of a score, or counted with defaults by one only)
      k.fingerprint = (std::uint64_t{1} << 63) | node.value;
      return k;
    }
    const std::int64_t used_cpu = cpu - s.cpu_free_milli, used_memory = memory - s.memory_free_mib;
    const double fc = static_cast<double>(used_cpu) / static_cast<double>(cpu);
    const double fm = static_cast<double>(used_memory) / static_cast<double>(memory);
    k.group = group_of(Shape{cpu, memory, 0, fm > fc});
    k.key = -std::max(fc, fm);
    // Both scores read the two used amounts and the shape only.
    const bool packs = used_cpu >= 0 && used_cpu < (std::int64_t{1} << 23) && used_memory >= 0 &&
                       used_memory < (std::int64_t{1} << 24);
    k.fingerprint = packs ? (static_cast<std::uint64_t>(used_cpu) << 40) | (static_cast<std::uint64_t>(used_memory) << 16)
                          : (std::uint64_t{1} << 63) | node.value;
    return k;
  }
  const bool gpu = variant == 0 && w_gpu_ > 0;   // variant 1: a task asking for no GPU, which the score leaves out
  if (gpu && !s.plain_gpus && cluster.device_options().replica_allocation == ReplicaAllocation::kDevicePlugin &&
      !cluster.spec(node).sharing.rename_by_default) {
    const auto gpus = cluster.gpus(node);
    if (std::any_of(gpus.begin(), gpus.end(), [](const GpuState& g) {
          return g.partition == GpuPartition::kTimeSlicing || g.partition == GpuPartition::kMps;
        })) {
      // kube_gpu_counts may count replicas here: no bound but the top score.
      k.group = kReplicatedGroup;
      k.fingerprint = (std::uint64_t{1} << 63) | node.value;
      return k;
    }
  }
  Shape shape;
  std::int64_t used_cpu = 0, used_memory = 0, used_gpu = 0;
  if (w_cpu_ > 0 && cluster.cpu_capacity(node) > 0) {
    shape.cpu = cluster.cpu_capacity(node);
    used_cpu = shape.cpu - s.cpu_free_milli + (non_zero_defaults_ ? std::int64_t{s.tasks_without_cpu} * kKubeDefaultMilliCpu : 0);
    k.key += static_cast<double>(w_cpu_) * static_cast<double>(used_cpu) / static_cast<double>(shape.cpu);
  }
  if (w_memory_ > 0 && cluster.memory_capacity(node) > 0) {
    shape.memory = cluster.memory_capacity(node);
    used_memory = shape.memory - s.memory_free_mib +
                  (non_zero_defaults_ ? std::int64_t{s.tasks_without_memory} * kKubeDefaultMemoryMib : 0);
    k.key += static_cast<double>(w_memory_) * static_cast<double>(used_memory) / static_cast<double>(shape.memory);
  }
  if (gpu && s.gpu_count > 0) {
    shape.gpu = std::int64_t{s.gpu_count} * kMilliPerGpu;
    used_gpu = shape.gpu - s.gpu_milli_free;
    k.key += static_cast<double>(w_gpu_) * static_cast<double>(used_gpu) / static_cast<double>(shape.gpu);
  }
  if (mode_ == Mode::kLeast) k.key = -k.key;   // the less requested, the higher the score
  k.group = group_of(shape);
  // score() reads these three numbers and the shape only: packed exactly, or the node itself.
  const bool packs = used_cpu >= 0 && used_cpu < (std::int64_t{1} << 23) && used_memory >= 0 &&
                     used_memory < (std::int64_t{1} << 24) && used_gpu >= 0 && used_gpu < (std::int64_t{1} << 16);
  k.fingerprint = packs ? (static_cast<std::uint64_t>(used_cpu) << 40) | (static_cast<std::uint64_t>(used_memory) << 16) |
                              static_cast<std::uint64_t>(used_gpu)
                        : (std::uint64_t{1} << 63) | node.value;
  return k;
}

std::uint32_t AllocatedScore::order_variant(const ClusterState& /*cluster*/, const TaskContext& ctx) const {
  if (order_variants() == 1) return 0;
  return ctx.request().gpu.total_milli() > 0 ? 0 : 1;   // kube_score leaves the GPU out of a task asking for none
}

std::uint64_t AllocatedScore::order_epoch(const ClusterState& cluster) const {
  return static_cast<std::uint64_t>(cluster.device_options().replica_allocation);   // which nodes may count replicas
}

std::pair<double, double> AllocatedScore::score_range(const ClusterState& /*cluster*/, const TaskContext& ctx,
                                                      std::uint32_t group, double key) const {
  if (paired_) {
    if (group == kReplicatedGroup) return {0.0, 200.0};
    const Shape& shape = shapes_[group - 1];
    const auto& r = ctx.request();
    // At most 200 - 100 max(a, b) (see orders_nodes), fractions clamped at 1 as both scores
    // clamp them; max(a, b) >= the dominant resource's m + the task's share of it. An integer,
    // so at most the floor (slack for the roundings of m and the share).
    const double taken = shape.memory_dominant ? static_cast<double>(r.memory_mib) / static_cast<double>(shape.memory)
                                               : static_cast<double>(r.cpu_milli) / static_cast<double>(shape.cpu);
    const double exact = 200.0 - 100.0 * std::min(1.0, -key + taken);
    const double slack = 1e-9 * (1.0 + std::abs(exact));
    return {0.0, std::clamp(std::floor(exact + slack), 0.0, 200.0)};
  }
  if (group == kReplicatedGroup) return {0.0, 100.0};
  const Shape& shape = shapes_[group - 1];
  const auto& r = ctx.request();
  double taken = 0.0;
  std::int64_t weights = 0;
  if (shape.cpu > 0) {
    taken += static_cast<double>(w_cpu_) * static_cast<double>(task_cpu(r)) / static_cast<double>(shape.cpu);
    weights += w_cpu_;
  }
  if (shape.memory > 0) {
    taken += static_cast<double>(w_memory_) * static_cast<double>(task_memory(r)) / static_cast<double>(shape.memory);
    weights += w_memory_;
  }
  if (shape.gpu > 0 && r.gpu.total_milli() > 0) {
    taken += static_cast<double>(w_gpu_) * static_cast<double>(r.gpu.total_milli()) / static_cast<double>(shape.gpu);
    weights += w_gpu_;
  }
  if (weights == 0) return {0.0, 0.0};
  if (mode_ == Mode::kLeast) {
    // kube_score() = trunc(sum(w x s) / sum(w)), s = floor(100 (capacity - requested) / capacity),
    // 0 over capacity: each s is at most 100 (1 - min(1, requested / capacity)), so the score is
    // at most 100 - 100 g / sum(w) with g = sum(w min(1, requested / capacity)). g is the sum K
    // of w x requested / capacity (-key + taken) when no resource is over capacity, else at least
    // that resource's weight: g >= min(K, the smallest weight).
    std::int64_t smallest = weights;
    if (shape.cpu > 0) smallest = std::min(smallest, w_cpu_);
    if (shape.memory > 0) smallest = std::min(smallest, w_memory_);
    const double exact = 100.0 - 100.0 * std::min(-key + taken, static_cast<double>(smallest)) / static_cast<double>(weights);
    const double slack = 1e-9 * (1.0 + std::abs(exact));
    return {0.0, std::clamp(std::floor(exact + slack), 0.0, 100.0)};
  }
  // kube_score() = trunc(sum(w x floor(100 min(requested, capacity) / capacity)) / sum(w)): at most
  // 100 (key + taken) / sum(w) in real numbers, and an integer, so at most its floor (with slack
  // for the roundings of key and taken, magnitudes below 100 x 300). The lowest: 0.
  const double exact = 100.0 * (key + taken) / static_cast<double>(weights);
  const double slack = 1e-9 * (1.0 + std::abs(exact));
  return {0.0, std::clamp(std::floor(exact + slack), 0.0, 100.0)};
}

double AllocatedScore::kube_score(const ClusterState& cluster, const TaskContext& ctx, NodeId node) const {
  const auto& s = cluster.node(node);
  const auto& r = ctx.request();
  std::int64_t total = 0, weights = 0;
  for (const auto& res : resources_) {
    // resource_allocation.go calculateResourceAllocatableRequest: (allocatable, requested).
    std::int64_t capacity = 0, requested = 0;
    switch (res.kind) {
      case Kind::kCpu:
        capacity = cluster.cpu_capacity(node);
        requested = kube_requested_cpu(cluster, r, node, non_zero_defaults_);
        break;
      case Kind::kMemory:
        capacity = cluster.memory_capacity(node);
        requested = kube_requested_memory(cluster, r, node, non_zero_defaults_);
        break;
      case Kind::kGpu:
        // A scalar resource the pod does not request is bypassed.
        if (r.gpu.total_milli() == 0) continue;
        if (const auto k = cluster.kube_gpu_counts(node, r)) {   // replicas: allocatable GPUs x replicas
          std::tie(capacity, requested) = *k;
          break;
        }
        capacity = std::int64_t{s.gpu_count} * kMilliPerGpu;
        requested = capacity - s.gpu_milli_free + r.gpu.total_milli();
        break;
      case Kind::kTpu:
        if (r.tpu.chips == 0) continue;
        capacity = cluster.spec(node).tpu.chips;
        requested = capacity - s.tpu_chips_free + r.tpu.chips;
        break;
      case Kind::kExtended: {
        const auto id = cluster.resources().find(res.name);
        if (!id) continue;
        std::int64_t asked = 0;
        for (const auto& [rid, amount] : r.extended) {
          if (rid == *id) asked += amount;
        }
        if (asked == 0) continue;
        for (const auto& [rid, amount] : cluster.spec(node).extended) {
          if (rid == *id) capacity = amount;
        }
        requested = capacity - cluster.extended_free(node, *id) + asked;
        break;
      }
    }
    if (capacity <= 0) continue;   // the node does not have it: left out, weight too
    const std::int64_t score = mode_ == Mode::kLeast ? (requested > capacity ? 0 : (capacity - requested) * 100 / capacity)
                                                     : std::min(requested, capacity) * 100 / capacity;
    total += score * res.weight;
    weights += res.weight;
  }
  return weights == 0 ? 0.0 : static_cast<double>(total / weights);
}

double AllocatedScore::score(const ClusterState& cluster, const TaskContext& ctx, NodeId node) {
  if (kube_) return kube_score(cluster, ctx, node);
  const auto& s = cluster.node(node);
  const auto& r = ctx.request();
  double sum = 0.0, weights = 0.0;
  auto add = [&](double free_after, double capacity, double w) {
    if (capacity <= 0.0 || w <= 0.0) return;
    const double frac = std::clamp(free_after / capacity, 0.0, 1.0);
    sum += w * (mode_ == Mode::kLeast ? frac : 1.0 - frac);
    weights += w;
  };
  add(static_cast<double>(s.cpu_free_milli - r.cpu_milli), static_cast<double>(cluster.cpu_capacity(node)), w_.cpu);
  add(static_cast<double>(s.memory_free_mib - r.memory_mib), static_cast<double>(cluster.memory_capacity(node)), w_.memory);
  add(static_cast<double>(s.gpu_milli_free - r.gpu.total_milli()),
      static_cast<double>(std::int64_t{s.gpu_count} * kMilliPerGpu), w_.gpu);
  return weights > 0.0 ? 100.0 * sum / weights : 0.0;
}

// ---------------------------------------------------------------- requested-to-capacity-ratio

RequestedToCapacityRatio::RequestedToCapacityRatio(std::vector<Point> shape, std::vector<Resource> resources,
                                                   bool non_zero_defaults)
    : shape_(std::move(shape)), resources_(std::move(resources)), non_zero_defaults_(non_zero_defaults) {
  // kube-scheduler scales the shape's 0..10 scores to its 0..100 node scores
  // (MaxNodeScore / MaxCustomPriorityScore).
  for (auto& p : shape_) p.score *= 10;
}

std::int64_t RequestedToCapacityRatio::broken_linear(std::span<const Point> points, std::int64_t p) {
  for (std::size_t i = 0; i < points.size(); ++i) {
    if (p > points[i].utilization) continue;
    if (i == 0) return points[0].score;
    const auto& a = points[i - 1];
    const auto& b = points[i];
    return a.score + (b.score - a.score) * (p - a.utilization) / (b.utilization - a.utilization);
  }
  return points.back().score;
}

double RequestedToCapacityRatio::score(const ClusterState& cluster, const TaskContext& ctx, NodeId node) {
  const auto& s = cluster.node(node);
  const auto& r = ctx.request();
  std::int64_t total = 0, weights = 0;
  for (const auto& res : resources_) {
    std::int64_t capacity = 0, requested = 0;
    if (res.name == "cpu") {
      // NonZeroRequested, as the peer (its useRequested is false for this strategy).
      capacity = cluster.cpu_capacity(node);
      requested = kube_requested_cpu(cluster, r, node, non_zero_defaults_);
    } else if (res.name == "memory") {
      capacity = cluster.memory_capacity(node);
      requested = kube_requested_memory(cluster, r, node, non_zero_defaults_);
    } else if (res.name == "nvidia.com/gpu") {
      // As the peer: a scalar resource the pod does not request is left out of the score.
      if (r.gpu.total_milli() == 0) continue;
      if (const auto k = cluster.kube_gpu_counts(node, r)) {   // replicas: allocatable GPUs x replicas
        std::tie(capacity, requested) = *k;
      } else {
        capacity = std::int64_t{s.gpu_count} * kMilliPerGpu;
        requested = capacity - s.gpu_milli_free + r.gpu.total_milli();
      }
    } else if (res.name == "google.com/tpu") {
      if (r.tpu.chips == 0) continue;
      capacity = cluster.spec(node).tpu.chips;
      requested = capacity - s.tpu_chips_free + r.tpu.chips;
    } else if (const auto id = cluster.resources().find(res.name)) {
      std::int64_t asked = 0;
      for (const auto& [rid, amount] : r.extended) {
        if (rid == *id) asked += amount;
      }
      if (asked == 0) continue;
      for (const auto& [rid, amount] : cluster.spec(node).extended) {
        if (rid == *id) capacity = amount;
      }
      requested = capacity - cluster.extended_free(node, *id) + asked;
    }
    if (capacity <= 0) continue;   // the node does not have it
    // The peer's scaledUtilization: floor(requested x 100 / capacity), 100 when over capacity.
    const std::int64_t utilization = requested >= capacity ? 100 : requested <= 0 ? 0 : requested * 100 / capacity;
    const std::int64_t score = broken_linear(shape_, utilization);
    if (score > 0) {
      total += score * res.weight;
      weights += res.weight;
    }
  }
  if (weights == 0) return 0.0;
  return static_cast<double>(std::llround(static_cast<double>(total) / static_cast<double>(weights)));
}

double BestFitScore::score(const ClusterState& cluster, const TaskContext& ctx, NodeId node) {
  const auto& s = cluster.node(node);
  const auto& r = ctx.request();
  const auto& max = cluster.max_capacity();
  const double max_cpu = std::max<double>(1.0, static_cast<double>(max.cpu_free_milli));
  const double max_gpu = std::max<double>(1.0, static_cast<double>(max.gpu_milli_free));
  const double cpu_left = static_cast<double>(s.cpu_free_milli - r.cpu_milli) / max_cpu;
  const double gpu_left = static_cast<double>(s.gpu_milli_free - r.gpu.total_milli()) / max_gpu;
  return std::clamp(100.0 * (1.0 - (w_cpu_ * cpu_left + w_gpu_ * gpu_left)), 0.0, 100.0);
}

ScorePlugin::OrderKey BestFitScore::order_key(const ClusterState& cluster, NodeId node, std::uint32_t /*variant*/) const {
  const auto& s = cluster.node(node);
  const auto& max = cluster.max_capacity();
  const double max_cpu = std::max<double>(1.0, static_cast<double>(max.cpu_free_milli));
  const double max_gpu = std::max<double>(1.0, static_cast<double>(max.gpu_milli_free));
  OrderKey k;
  k.key = -(w_cpu_ * (static_cast<double>(s.cpu_free_milli) / max_cpu) + w_gpu_ * (static_cast<double>(s.gpu_milli_free) / max_gpu));
  // score() reads these two numbers only: packed exactly, or the node itself.
  const bool packs = s.cpu_free_milli >= 0 && s.cpu_free_milli < (std::int64_t{1} << 39) && s.gpu_milli_free >= 0 &&
                     s.gpu_milli_free < (1 << 24);
  k.fingerprint = packs ? (static_cast<std::uint64_t>(s.cpu_free_milli) << 24) | static_cast<std::uint64_t>(s.gpu_milli_free)
                        : (std::uint64_t{1} << 63) | node.value;
  return k;
}

std::uint64_t BestFitScore::order_epoch(const ClusterState& cluster) const {
  const auto& max = cluster.max_capacity();
  return (static_cast<std::uint64_t>(max.cpu_free_milli) << 24) ^ static_cast<std::uint64_t>(max.gpu_milli_free);
}

std::pair<double, double> BestFitScore::score_range(const ClusterState& cluster, const TaskContext& ctx,
                                                    std::uint32_t /*group*/, double key) const {
  const auto& r = ctx.request();
  const auto& max = cluster.max_capacity();
  const double max_cpu = std::max<double>(1.0, static_cast<double>(max.cpu_free_milli));
  const double max_gpu = std::max<double>(1.0, static_cast<double>(max.gpu_milli_free));
  const double taken = w_cpu_ * (static_cast<double>(r.cpu_milli) / max_cpu) +
                       w_gpu_ * (static_cast<double>(r.gpu.total_milli()) / max_gpu);
  // score() = 100 (1 - (w_cpu (cpu - r_cpu) / max_cpu + w_gpu (gpu - r_gpu) / max_gpu)) = 100 (1 + key + taken)
  // in real numbers; the two roundings differ by far less than the slack (magnitudes below
  // 1 + |w_cpu| + |w_gpu|, relative error 1e-15).
  const double exact = 100.0 * (1.0 + key + taken);
  const double slack = 1e-9 * 100.0 * (1.0 + std::abs(w_cpu_) + std::abs(w_gpu_) + std::abs(key) + std::abs(taken));
  return {std::clamp(exact - slack, 0.0, 100.0), std::clamp(exact + slack, 0.0, 100.0)};
}

// ---------------------------------------------------------------- devices

namespace {
std::optional<int> start_best(const MigGeometry& g, const MigLayout& l, int p) { return choose_start(g, l, p, MigStartPolicy::kBest); }
std::optional<int> start_lowest(const MigGeometry& g, const MigLayout& l, int p) { return choose_start(g, l, p, MigStartPolicy::kLowestFirst); }
std::optional<int> start_highest(const MigGeometry& g, const MigLayout& l, int p) { return choose_start(g, l, p, MigStartPolicy::kHighestFirst); }

/// GPU indices of `node` sorted by key(gpu) ascending (stable: ties keep index order).
template <class Key>
std::vector<std::uint16_t> gpus_by(const ClusterState& cluster, NodeId node, Key key) {
  const auto gpus = cluster.gpus(node);
  std::vector<std::uint16_t> order(gpus.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<std::uint16_t>(i);
  std::stable_sort(order.begin(), order.end(), [&](std::uint16_t a, std::uint16_t b) { return key(gpus[a]) < key(gpus[b]); });
  return order;
}
}  // namespace

ClusterState::MigStartChooser mig_start_chooser(std::string_view policy) {
  if (policy == "best") return start_best;
  if (policy == "lowest") return start_lowest;
  if (policy == "highest") return start_highest;
  return nullptr;
}

bool pick_devices(const ClusterState& cluster, const TaskRequest& r, NodeId node, std::span<const std::uint16_t> order,
                  ClusterState::MigStartChooser choose, TaskPlacement& out) {
  out.node = node;
  out.gpus.clear();
  out.tpu_chips = r.tpu.chips;
  if (r.gpu.mode == GpuMode::kNone) return true;
  return cluster.pick_units(node, r, order, choose, out.gpus);
}

bool GpuFirstFit::select(const ClusterState& cluster, const TaskContext& ctx, NodeId node, TaskPlacement& out) const {
  return pick_devices(cluster, ctx.request(), node, {}, chooser_, out);
}

bool GpuSpread::select(const ClusterState& cluster, const TaskContext& ctx, NodeId node, TaskPlacement& out) const {
  const auto& r = ctx.request();
  if (r.gpu.mode == GpuMode::kWhole && cluster.node(node).plain_gpus) return pick_devices(cluster, r, node, {}, chooser_, out);
  // Shares, replicas, vGPUs and GIs go to the emptiest GPU first.
  const auto order = gpus_by(cluster, node, [](const GpuState& g) { return std::pair{-g.memory_free_mib, -g.milli_free}; });
  return pick_devices(cluster, r, node, order, chooser_, out);
}

bool GpuRandom::select(const ClusterState& cluster, const TaskContext& ctx, NodeId node, TaskPlacement& out) const {
  const auto& r = ctx.request();
  out.node = node;
  out.gpus.clear();
  out.tpu_chips = r.tpu.chips;
  if (r.gpu.mode == GpuMode::kNone) return true;
  const auto gpus = cluster.gpus(node);
  std::vector<std::uint16_t> candidates;
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    if (cluster.gpu_units(node, gpus[i], r) > 0) candidates.push_back(static_cast<std::uint16_t>(i));
  }
  const bool one_per_gpu = r.gpu.mode != GpuMode::kMig && !(r.gpu.mode == GpuMode::kWhole && !cluster.node(node).plain_gpus);
  const auto need = one_per_gpu ? static_cast<std::size_t>(r.gpu.count) : candidates.size();
  if (candidates.size() < need) return false;
  // Partial Fisher-Yates: the first `need` candidates become a uniform random subset.
  for (std::size_t i = 0; i < need; ++i) {
    const auto j = i + static_cast<std::size_t>(rng_.below(candidates.size() - i));
    std::swap(candidates[i], candidates[j]);
  }
  if (one_per_gpu) std::sort(candidates.begin(), candidates.begin() + static_cast<std::ptrdiff_t>(need));
  candidates.resize(need);
  return cluster.pick_units(node, r, candidates, chooser_, out.gpus);
}

// ---------------------------------------------------------------- gpu-binpack

int GpuBinpack::tightest_gpu(const ClusterState& cluster, const TaskRequest& r, NodeId node) {
  const auto gpus = cluster.gpus(node);
  int best = -1;
  auto key = [](const GpuState& g) { return std::pair{g.memory_free_mib, g.milli_free}; };
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    const auto& g = gpus[i];
    if (!ClusterState::gpu_fits_shared(g, r.gpu) || !r.model_allowed(g.model)) continue;
    if (best < 0 || key(g) < key(gpus[static_cast<std::size_t>(best)])) best = static_cast<int>(i);
  }
  return best;
}

double GpuBinpack::score(const ClusterState& cluster, const TaskContext& ctx, NodeId node) {
  const auto& r = ctx.request();
  switch (r.gpu.mode) {
    case GpuMode::kNone: return 0.0;
    case GpuMode::kWhole: {
      // Whole GPUs taken are fully free, so they remove their whole memory.
      const auto& s = cluster.node(node);
      const auto per_gpu = s.gpu_count == 0 ? 0 : cluster.gpus(node).front().memory_mib;
      return -static_cast<double>(s.gpu_memory_free - per_gpu * r.gpu.count);
    }
    case GpuMode::kShared: {
      const int best = tightest_gpu(cluster, r, node);
      if (best < 0) return -std::numeric_limits<double>::max() / 4;
      const auto& g = cluster.gpus(node)[static_cast<std::size_t>(best)];
      const auto mem = r.gpu.memory_mib == kAllGpuMemory ? g.memory_mib : r.gpu.memory_mib;
      // Memory left first; compute left breaks ties between equal memory.
      return -(static_cast<double>(g.memory_free_mib - mem) * 1024.0 + static_cast<double>(g.milli_free - r.gpu.milli));
    }
    default:
      // Partitioned units: prefer the node with the least free GPU memory left.
      return -static_cast<double>(cluster.node(node).gpu_memory_free);
  }
  return 0.0;
}

ScorePlugin::OrderKey GpuBinpack::order_key(const ClusterState& cluster, NodeId node, std::uint32_t /*variant*/) const {
  const auto& s = cluster.node(node);
  OrderKey k;
  k.group = s.gpu_count == 0 ? 0 : static_cast<std::uint32_t>(cluster.gpus(node).front().memory_mib);
  k.key = -static_cast<double>(s.gpu_memory_free);   // exact: an integer below 2^53
  return k;   // the score is a function of group and key: equal keys score the same
}

ScorePlugin::OrderBound GpuBinpack::order_bound(const ClusterState& /*cluster*/, const TaskContext& ctx) const {
  switch (ctx.request().gpu.mode) {
    case GpuMode::kNone: return OrderBound::kConstant;
    case GpuMode::kShared: return ctx.request().gpu.memory_mib == kAllGpuMemory ? OrderBound::kNone : OrderBound::kByGpu;
    default: return OrderBound::kBounded;
  }
}

ScorePlugin::GpuOrderKey GpuBinpack::gpu_order(const GpuState& g) const {
  // tightest_gpu()'s order: least free memory, then least free compute. The score,
  // -((free memory - asked) x 1024 + free compute - asked), is lower for every later GPU as
  // long as free compute stays below 1024 milli (a GPU has 1000).
  GPUSCHED_ASSERT(g.milli_free >= 0 && g.milli_free < 1024, "gpu-binpack: free GPU compute outside [0, 1024) milli");
  GpuOrderKey k;
  k.key = -static_cast<double>(g.memory_free_mib);
  k.fingerprint = static_cast<std::uint64_t>(g.milli_free);
  // ClusterState::gpu_fits_shared: a bare GPU needs the free compute and memory asked; an MPS GPU
  // counts its clients instead; any other partition takes no share.
  if (g.partition == GpuPartition::kWhole && g.milli_free > 0) {   // none free: share_fits takes no share
    k.memory_lane = static_cast<std::int32_t>(std::clamp<std::int64_t>(g.memory_free_mib, 0, std::numeric_limits<std::int32_t>::max()));
    k.milli_lane = g.milli_free;
  } else if (g.partition == GpuPartition::kMps) {
    k.memory_lane = k.milli_lane = std::numeric_limits<std::int32_t>::max();
  }
  return k;
}

std::pair<std::int32_t, std::int32_t> GpuBinpack::gpu_need(const TaskContext& ctx) const {
  const auto& r = ctx.request().gpu;
  return {static_cast<std::int32_t>(std::clamp<std::int64_t>(r.memory_mib, 0, std::numeric_limits<std::int32_t>::max())),
          std::max(0, r.milli)};
}

bool GpuBinpack::gpu_fits(const TaskContext& ctx, const GpuState& g) const {
  const auto& r = ctx.request();
  return ClusterState::gpu_fits_shared(g, r.gpu) && r.model_allowed(g.model);   // as tightest_gpu()
}

std::pair<double, double> GpuBinpack::score_range(const ClusterState& /*cluster*/, const TaskContext& ctx,
                                                  std::uint32_t group, double key) const {
  const auto& r = ctx.request();
  // score(): -(free - per_gpu x count) for whole GPUs, -free for partitioned units; in integers,
  // so the key plus what the GPUs take is the score exactly.
  const double s = r.gpu.mode == GpuMode::kWhole
                       ? -static_cast<double>(static_cast<std::int64_t>(-key) - static_cast<std::int64_t>(group) * r.gpu.count)
                       : key;
  return {s, s};
}

bool GpuBinpack::select(const ClusterState& cluster, const TaskContext& ctx, NodeId node, TaskPlacement& out) const {
  const auto& r = ctx.request();
  if (r.gpu.mode == GpuMode::kWhole && cluster.node(node).plain_gpus) return pick_devices(cluster, r, node, {}, chooser_, out);
  // The fullest GPU first (least free memory, then compute).
  const auto order = gpus_by(cluster, node, [](const GpuState& g) { return std::pair{g.memory_free_mib, g.milli_free}; });
  return pick_devices(cluster, r, node, order, chooser_, out);
}

}  // namespace gpusched::policies
