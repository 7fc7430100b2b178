// Implementations of the built-in plugins.
#include <algorithm>
#include <limits>
#include <optional>

#include <gpusched/policies/devices/device_select.hpp>
#include <gpusched/policies/gpubinpack/gpu_binpack.hpp>
#include <gpusched/policies/noderesources/allocated.hpp>
#include <gpusched/policies/noderesources/fit.hpp>

namespace gpusched::policies {

void normalize_min_max(std::span<double> scores) {
  if (scores.empty()) return;
  const auto [lo, hi] = std::minmax_element(scores.begin(), scores.end());
  const double min = *lo, max = *hi;
  for (auto& s : scores) s = (max > min) ? 100.0 * (s - min) / (max - min) : 100.0;
}

// ---------------------------------------------------------------- node-resources-fit

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

// ---------------------------------------------------------------- allocation scores

double AllocatedScore::score(const ClusterState& cluster, const TaskContext& ctx, NodeId node) {
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

bool GpuBinpack::select(const ClusterState& cluster, const TaskContext& ctx, NodeId node, TaskPlacement& out) const {
  const auto& r = ctx.request();
  if (r.gpu.mode == GpuMode::kWhole && cluster.node(node).plain_gpus) return pick_devices(cluster, r, node, {}, chooser_, out);
  // The fullest GPU first (least free memory, then compute).
  const auto order = gpus_by(cluster, node, [](const GpuState& g) { return std::pair{g.memory_free_mib, g.milli_free}; });
  return pick_devices(cluster, r, node, order, chooser_, out);
}

}  // namespace gpusched::policies
