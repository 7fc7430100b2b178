// Implementations of the built-in plugins.
#include <algorithm>
#include <limits>

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
  }
  return "?";
}

Status NodeResourcesFit::pre_filter(const ClusterState& cluster, TaskContext& ctx) {
  const auto& r = ctx.request();
  const auto& max = cluster.max_capacity();
  if (r.cpu_milli > max.cpu_free_milli) return Status::unresolvable(name(), "cpu exceeds every node");
  if (r.memory_mib > max.memory_free_mib) return Status::unresolvable(name(), "memory exceeds every node");
  if (r.gpu.mode == GpuMode::kWhole && r.gpu.count > max.gpu_count)
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

bool take_whole_gpus(const ClusterState& cluster, const TaskRequest& r, NodeId node, TaskPlacement& out) {
  out.node = node;
  out.gpus.clear();
  const auto gpus = cluster.gpus(node);
  for (std::size_t i = 0; i < gpus.size() && static_cast<std::int32_t>(out.gpus.size()) < r.gpu.count; ++i) {
    if (gpus[i].fully_free() && r.model_allowed(gpus[i].model)) {
      out.gpus.push_back({static_cast<std::uint16_t>(i), kMilliPerGpu, gpus[i].memory_mib});
    }
  }
  return static_cast<std::int32_t>(out.gpus.size()) == r.gpu.count;
}

void grant_shared(const ClusterState&, const TaskRequest& r, NodeId node, int index, TaskPlacement& out) {
  out.node = node;
  out.gpus.assign(1, GpuGrant{static_cast<std::uint16_t>(index), r.gpu.milli, r.gpu.memory_mib});
}

namespace {
/// Index of the fitting GPU that minimises key(gpu) (ties: lower index), or -1.
template <class Key>
int pick_shared(const ClusterState& cluster, const TaskRequest& r, NodeId node, Key key) {
  const auto gpus = cluster.gpus(node);
  int best = -1;
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    const auto& g = gpus[i];
    if (!ClusterState::gpu_fits_shared(g, r.gpu) || !r.model_allowed(g.model)) continue;
    if (best < 0 || key(g) < key(gpus[static_cast<std::size_t>(best)])) best = static_cast<int>(i);
  }
  return best;
}

bool select_with(const ClusterState& cluster, const TaskRequest& r, NodeId node, TaskPlacement& out, int shared_index) {
  out.node = node;
  out.gpus.clear();
  switch (r.gpu.mode) {
    case GpuMode::kNone: return true;
    case GpuMode::kWhole: return take_whole_gpus(cluster, r, node, out);
    case GpuMode::kShared:
      if (shared_index < 0) return false;
      grant_shared(cluster, r, node, shared_index, out);
      return true;
  }
  return false;
}
}  // namespace

bool GpuFirstFit::select(const ClusterState& cluster, const TaskContext& ctx, NodeId node, TaskPlacement& out) const {
  const auto& r = ctx.request();
  const int idx = r.gpu.mode == GpuMode::kShared ? pick_shared(cluster, r, node, [](const GpuState&) { return 0; }) : -1;
  return select_with(cluster, r, node, out, idx);
}

bool GpuSpread::select(const ClusterState& cluster, const TaskContext& ctx, NodeId node, TaskPlacement& out) const {
  const auto& r = ctx.request();
  const int idx = r.gpu.mode == GpuMode::kShared
                      ? pick_shared(cluster, r, node, [](const GpuState& g) {
                          return std::pair{-g.memory_free_mib, -g.milli_free};
                        })
                      : -1;
  return select_with(cluster, r, node, out, idx);
}

bool GpuRandom::select(const ClusterState& cluster, const TaskContext& ctx, NodeId node, TaskPlacement& out) const {
  const auto& r = ctx.request();
  out.node = node;
  out.gpus.clear();
  if (r.gpu.mode == GpuMode::kNone) return true;
  const auto gpus = cluster.gpus(node);
  std::vector<std::uint16_t> candidates;
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    const bool ok = r.gpu.mode == GpuMode::kWhole ? gpus[i].fully_free() : ClusterState::gpu_fits_shared(gpus[i], r.gpu);
    if (ok && r.model_allowed(gpus[i].model)) candidates.push_back(static_cast<std::uint16_t>(i));
  }
  const auto need = static_cast<std::size_t>(r.gpu.mode == GpuMode::kWhole ? r.gpu.count : 1);
  if (candidates.size() < need) return false;
  // Partial Fisher-Yates: the first `need` candidates become a uniform random subset.
  for (std::size_t i = 0; i < need; ++i) {
    const auto j = i + static_cast<std::size_t>(rng_.below(candidates.size() - i));
    std::swap(candidates[i], candidates[j]);
  }
  std::sort(candidates.begin(), candidates.begin() + static_cast<std::ptrdiff_t>(need));
  for (std::size_t i = 0; i < need; ++i) {
    const auto& g = gpus[candidates[i]];
    if (r.gpu.mode == GpuMode::kWhole) out.gpus.push_back({candidates[i], kMilliPerGpu, g.memory_mib});
    else out.gpus.push_back({candidates[i], r.gpu.milli, r.gpu.memory_mib});
  }
  return true;
}

// ---------------------------------------------------------------- gpu-binpack

int GpuBinpack::tightest_gpu(const ClusterState& cluster, const TaskRequest& r, NodeId node) {
  return pick_shared(cluster, r, node, [](const GpuState& g) { return std::pair{g.memory_free_mib, g.milli_free}; });
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
      // Memory left first; compute left breaks ties between equal memory.
      return -(static_cast<double>(g.memory_free_mib - r.gpu.memory_mib) * 1024.0 +
               static_cast<double>(g.milli_free - r.gpu.milli));
    }
  }
  return 0.0;
}

bool GpuBinpack::select(const ClusterState& cluster, const TaskContext& ctx, NodeId node, TaskPlacement& out) const {
  const auto& r = ctx.request();
  const int idx = r.gpu.mode == GpuMode::kShared ? tightest_gpu(cluster, r, node) : -1;
  return select_with(cluster, r, node, out, idx);
}

}  // namespace gpusched::policies
