// The FGD family: fragmentation (fgd/fragmentation.hpp) and the plugins fgd, dotprod,
// gpu-clustering and gpu-packing (fgd/fgd.hpp). Definitions follow the ATC'23 paper as written
// down in the project's reference notes; the `integer_scores` and `fill` options reproduce how
// the authors' simulator scores (integer scores, its fullness measure), written from a
// description of its behaviour, not from its code.
#include <gpusched/policies/fgd/fgd.hpp>
#include <gpusched/policies/fgd/fragmentation.hpp>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <tuple>

#include <gpusched/assert.hpp>
#include <gpusched/error.hpp>
#include <gpusched/rng.hpp>

#include "builtin_plugins.hpp"

namespace gpusched::policies::fgd {

// ============================================================================ GPU looks

/// A GPU as FGD sees it: the cluster's state, or a hypothetical one after some grants.
struct detail::GpuLook {
  const GpuState* g = nullptr;
  std::int32_t milli_free = 0;
  std::int64_t memory_free_mib = 0;
  std::uint16_t tasks = 0;
  const MigGpuState* mig = nullptr;     // the cluster's MIG state (MIG GPUs)
  std::optional<MigGpuState> own;       // a hypothetical MIG state, once a grant touched it
  [[nodiscard]] const MigGpuState& mig_state() const { return own ? *own : *mig; }
};

struct detail::GpuChange {
  const GpuLook* before = nullptr;
  const GpuLook* after = nullptr;
  std::int64_t times = 1;
};

namespace {

using Look = detail::GpuLook;
using Change = detail::GpuChange;

/// How the node hands out MIG GPUs and time-slicing / MPS replicas.
struct NodeMig {
  bool dynamic = false;   // GIs created and destroyed on demand
  bool single = false;    // `single` strategy: GIs are nvidia.com/gpu units
  bool renamed = false;   // replicas are nvidia.com/gpu.shared (renameByDefault)
  bool all_replicas = true;   // a GPU gives all its free replicas (device plugin), not one
  bool fail_above_one_ts = false, fail_above_one_mps = false;   // failRequestsGreaterThanOne
};
NodeMig node_mig(const ClusterState& c, NodeId n) {
  const auto& spec = c.spec(n);
  return {spec.mig_dynamic,
          spec.mig_strategy == MigStrategy::kSingle,
          spec.sharing.rename_by_default,
          c.device_options().replica_allocation == ReplicaAllocation::kDevicePlugin,
          c.fails_above_one(n, GpuPartition::kTimeSlicing),
          c.fails_above_one(n, GpuPartition::kMps)};
}

Look look_of(const ClusterState& c, const GpuState& g) {
  Look l;
  l.g = &g;
  l.milli_free = g.milli_free;
  l.memory_free_mib = g.memory_free_mib;
  l.tasks = g.tasks;
  if (g.partition == GpuPartition::kMig) l.mig = &c.mig_state(g);
  return l;
}

constexpr int kNibble = 4;

/// Applies one grant to a look, as ClusterState::allocate() would.
void apply_grant(const ClusterState& c, Look& l, const GpuGrant& gr) {
  l.milli_free -= gr.milli;
  l.memory_free_mib -= gr.memory_mib;
  ++l.tasks;
  if (l.g->partition != GpuPartition::kMig) return;
  if (!l.own) l.own = *l.mig;
  auto& m = *l.own;
  const auto& geo = c.mig_geometry(*l.g);
  std::uint32_t code = gr.mig_destroyed;
  for (int start = 0; code != 0; ++start, code >>= kNibble) {
    if (const auto v = static_cast<int>(code & 0xFU); v != 0) m.layout.remove(geo, v - 1, start);
  }
  const bool exists = std::any_of(m.layout.instances().begin(), m.layout.instances().end(), [&](const MigInstance& i) {
    return i.start == gr.mig_start && i.profile == gr.mig_profile;
  });
  if (!exists) m.layout.place(geo, gr.mig_profile, gr.mig_start);
  m.busy = static_cast<std::uint8_t>(m.busy | (1U << gr.mig_start));
}

std::uint32_t slice_mask(int start, int size) { return ((1U << size) - 1U) << start; }

std::int64_t slices_milli(std::uint32_t mask, const MigGeometry& geo) {
  return std::int64_t{std::popcount(mask)} * kMilliPerGpu / geo.memory_slices;
}

/// Memory slices under busy GIs and idle GIs, and what the busy GIs use.
struct MigUse {
  std::uint32_t busy_mask = 0, idle_mask = 0;
  int compute = 0, media = 0;
  std::array<std::uint8_t, 32> count{};   // busy GIs per profile
};
MigUse mig_use(const MigGeometry& geo, const MigGpuState& m) {
  MigUse u;
  for (const auto& i : m.layout.instances()) {
    const auto& prof = geo.profiles[static_cast<std::size_t>(i.profile)];
    const auto mask = slice_mask(i.start, prof.memory_slices);
    if (m.busy_at(i.start)) {
      u.busy_mask |= mask;
      u.compute += prof.compute_slices;
      u.media += prof.media_extensions ? 1 : 0;
      if (static_cast<std::size_t>(i.profile) < u.count.size()) ++u.count[static_cast<std::size_t>(i.profile)];
    } else {
      u.idle_mask |= mask;
    }
  }
  return u;
}

/// Free slices of a MIG GPU: dynamic nodes, every slice no busy GI holds; else idle GIs' slices.
std::uint32_t mig_free_mask(const MigGeometry& geo, const MigUse& u, const NodeMig& f) {
  if (f.dynamic && !f.single) return ((1U << geo.memory_slices) - 1U) & ~u.busy_mask;
  return u.idle_mask;
}

std::int64_t idle_of(const ClusterState& c, const NodeMig& f, const Look& l) {
  switch (l.g->partition) {
    case GpuPartition::kWhole:
    case GpuPartition::kTimeSlicing:
    case GpuPartition::kMps: return l.milli_free;
    case GpuPartition::kMig: {
      const auto& geo = c.mig_geometry(*l.g);
      return slices_milli(mig_free_mask(geo, mig_use(geo, l.mig_state()), f), geo);
    }
    default: return 0;
  }
}

/// What one GPU offers a pod type: the idle milli it can use, and the units it can give.
struct Contrib {
  std::int64_t usable = 0;
  std::int32_t units = 0;
};

Contrib mig_contrib(const ClusterState& c, const NodeMig& f, const Look& l, const TaskRequest& m) {
  const auto& geo = c.mig_geometry(*l.g);
  const auto& ms = l.mig_state();
  if (f.single) {   // idle GIs are nvidia.com/gpu units
    if (m.gpu.mode != GpuMode::kWhole) return {};
    const auto u = mig_use(geo, ms);
    return {slices_milli(u.idle_mask, geo), ms.free_count()};
  }
  if (m.gpu.mode != GpuMode::kMig) return {};
  const int p = m.gpu.profile_index(l.g->model);
  if (p < 0) return {};
  const auto& prof = geo.profiles[static_cast<std::size_t>(p)];
  if (!f.dynamic || (geo.reconfigure_requires_idle && ms.busy != 0)) {
    // Only the idle GIs of the profile serve it.
    std::uint32_t mask = 0;
    std::int32_t n = 0;
    for (const auto& i : ms.layout.instances()) {
      if (i.profile != p || ms.busy_at(i.start)) continue;
      mask |= slice_mask(i.start, prof.memory_slices);
      ++n;
    }
    return {slices_milli(mask, geo), n};
  }
  // Dynamic: any start legal next to the busy GIs (idle ones can be destroyed). `units` counts
  // GIs placed greedily at ascending starts.
  const auto u = mig_use(geo, ms);
  const auto pi = static_cast<std::size_t>(p);
  auto legal = [&](int s, std::uint32_t mask, int compute, int media, int count) {
    return s + prof.memory_slices <= geo.memory_slices && (mask & slice_mask(s, prof.memory_slices)) == 0 &&
           compute + prof.compute_slices <= geo.compute_slices &&
           !(prof.media_extensions && media >= geo.max_media_instances) && count < prof.max_count;
  };
  const int busy_count = pi < u.count.size() ? u.count[pi] : 0;
  std::uint32_t covered = 0, g_mask = u.busy_mask;
  int g_compute = u.compute, g_media = u.media, g_count = busy_count;
  std::int32_t units = 0;
  for (int s : prof.starts) {
    if (!legal(s, u.busy_mask, u.compute, u.media, busy_count)) continue;
    covered |= slice_mask(s, prof.memory_slices);
    if (legal(s, g_mask, g_compute, g_media, g_count)) {
      g_mask |= slice_mask(s, prof.memory_slices);
      g_compute += prof.compute_slices;
      g_media += prof.media_extensions ? 1 : 0;
      ++g_count;
      ++units;
    }
  }
  return {slices_milli(covered, geo), units};
}

Contrib contrib(const ClusterState& c, const NodeMig& f, const Look& l, const TaskRequest& m) {
  const GpuState& g = *l.g;
  if (m.gpu.mode == GpuMode::kNone || !m.model_allowed(g.model)) return {};
  switch (g.partition) {
    case GpuPartition::kWhole:
      if (m.gpu.mode == GpuMode::kWhole) return l.tasks == 0 ? Contrib{l.milli_free, 1} : Contrib{};
      if (m.gpu.mode == GpuMode::kShared) {
        return ClusterState::share_fits(l.milli_free, l.memory_free_mib, l.tasks, g.memory_mib, m.gpu.milli, m.gpu.memory_mib)
                   ? Contrib{l.milli_free, 1}
                   : Contrib{};
      }
      return {};
    case GpuPartition::kTimeSlicing:
    case GpuPartition::kMps: {
      // As ClusterState::free_replicas() counts them, for this look's sharers.
      if (m.gpu.mode != GpuMode::kWhole || m.gpu.shared_name != f.renamed || l.tasks >= g.replicas) return {};
      const bool fails = g.partition == GpuPartition::kMps ? f.fail_above_one_mps : f.fail_above_one_ts;
      if (m.gpu.count > 1 && fails) return {};
      return Contrib{l.milli_free, f.all_replicas ? g.replicas - l.tasks : 1};
    }
    case GpuPartition::kMig: return mig_contrib(c, f, l, m);
    default: return {};
  }
}

/// F_n(m) from a node's aggregates.
std::int64_t fragment(const TaskRequest& m, std::int64_t idle, std::int64_t cpu_free, std::int64_t usable,
                      std::int64_t units) {
  if (m.gpu.mode == GpuMode::kNone || cpu_free < m.cpu_milli || units < m.gpu.count) return idle;
  return idle - usable;
}

/// Two GPUs that FGD cannot tell apart: every grant scores the same on either.
bool same_state(const GpuState& a, const GpuState& b) {
  return a.milli_free == b.milli_free && a.memory_free_mib == b.memory_free_mib && a.tasks == b.tasks && a.model == b.model &&
         a.partition == b.partition && a.replicas == b.replicas && a.memory_mib == b.memory_mib;
}

/// The shape of a request as typical_pod_types compares it.
using TypeKey = std::tuple<std::int64_t, int, std::int32_t, std::int32_t, std::int64_t, std::string, std::string>;
TypeKey key_of(const TaskRequest& r) {
  return {r.cpu_milli, static_cast<int>(r.gpu.mode), r.gpu.count, r.gpu.milli, r.gpu.memory_mib,
          r.gpu.mode == GpuMode::kMig ? r.gpu.profile.str() : std::string(),
          r.allowed_models.to_string() + "/" + r.resource_models.to_string() + (r.gpu.shared_name ? "/shared" : "")};
}

bool modelled(const TaskRequest& r) {
  if (r.tpu.chips > 0) return false;
  switch (r.gpu.mode) {
    case GpuMode::kNone:
    case GpuMode::kWhole:
    case GpuMode::kShared:
    case GpuMode::kMig: return true;
    default: return false;
  }
}

/// A node's idle GPU and, per GPU shape, the idle milli it can use and the units it can give.
/// `offers`: per shape, the GPUs (index < 64) that give it a unit.
void aggregate(const ClusterState& c, NodeId n, std::span<const TaskRequest> shapes, std::int64_t& idle,
               std::int64_t* usable, std::int32_t* units, std::uint64_t* offers) {
  const auto f = node_mig(c, n);
  idle = 0;
  std::fill(usable, usable + shapes.size(), 0);
  std::fill(units, units + shapes.size(), 0);
  std::fill(offers, offers + shapes.size(), 0);
  std::size_t i = 0;
  for (const auto& g : c.gpus(n)) {
    const Look l = look_of(c, g);
    idle += idle_of(c, f, l);
    for (std::size_t k = 0; k < shapes.size(); ++k) {
      const auto x = contrib(c, f, l, shapes[k]);
      usable[k] += x.usable;
      units[k] += x.units;
      if (x.units > 0 && i < 64) offers[k] |= std::uint64_t{1} << i;
    }
    ++i;
  }
}

/// The GPU part of a type (what contrib() reads): CPU-only types have none.
bool same_gpu_shape(const TaskRequest& a, const TaskRequest& b) {
  return a.gpu.mode == b.gpu.mode && a.gpu.count == b.gpu.count && a.gpu.milli == b.gpu.milli &&
         a.gpu.memory_mib == b.gpu.memory_mib && a.gpu.profile_by_model == b.gpu.profile_by_model &&
         a.allowed_models == b.allowed_models && a.resource_models == b.resource_models &&
         a.gpu.shared_name == b.gpu.shared_name && a.gpu.resource_name == b.gpu.resource_name;
}

}  // namespace

// ============================================================================ types

PodType pod_type_of(const TaskRequest& r) {
  PodType t;
  t.request.cpu_milli = r.cpu_milli;
  t.request.gpu = r.gpu;
  t.request.allowed_models = r.allowed_models;
  t.request.resource_models = r.resource_models;
  t.pods = 1;
  t.probability = 1.0;
  return t;
}

bool same_pod_type(const TaskRequest& a, const TaskRequest& b) { return key_of(a) == key_of(b); }

std::vector<PodType> typical_pod_types(std::span<const JobSpec> workload, double coverage) {
  if (!(coverage > 0.0 && coverage <= 1.0)) {
    throw_error(ErrorCode::kProfileBadArgs, {"", 0, "coverage"}, "coverage must be in (0, 1], got " + std::to_string(coverage));
  }
  std::map<TypeKey, std::size_t> index;
  std::vector<PodType> all;   // first-appearance order
  std::int64_t total = 0;
  for (const auto& job : workload) {
    if (!modelled(job.request)) continue;
    const auto pods = std::int64_t{std::max<std::int32_t>(1, job.tasks)};
    auto [it, added] = index.try_emplace(key_of(job.request), all.size());
    if (added) {
      all.push_back(pod_type_of(job.request));
      all.back().pods = 0;
    }
    all[it->second].pods += pods;
    total += pods;
  }
  std::stable_sort(all.begin(), all.end(), [](const PodType& a, const PodType& b) { return a.pods > b.pods; });
  std::vector<PodType> out;
  std::int64_t covered = 0;
  const double target = coverage * static_cast<double>(total) * (1.0 - 1e-12);
  for (auto& t : all) {
    if (static_cast<double>(covered) >= target) break;
    covered += t.pods;
    out.push_back(std::move(t));
  }
  for (auto& t : out) t.probability = static_cast<double>(t.pods) / static_cast<double>(covered);
  return out;
}

// ============================================================================ from scratch

std::int32_t integer_score(double delta_milli) {
  // As Go computes int64(sigmoid(x) * 100): truncation towards zero.
  const double x = -delta_milli / 1000.0;
  return static_cast<std::int32_t>(1.0 / (1.0 + std::exp(-x)) * 100.0);
}

std::int64_t gpu_idle_milli(const ClusterState& c, NodeId node, std::uint16_t index) {
  return idle_of(c, node_mig(c, node), look_of(c, c.gpus(node)[index]));
}

std::int64_t node_idle_milli(const ClusterState& c, NodeId node) {
  const auto f = node_mig(c, node);
  std::int64_t idle = 0;
  for (const auto& g : c.gpus(node)) idle += idle_of(c, f, look_of(c, g));
  return idle;
}

std::int64_t node_fragment(const ClusterState& c, NodeId node, const PodType& m) {
  std::int64_t idle = 0, usable = 0;
  std::int32_t units = 0;
  std::uint64_t offers = 0;
  aggregate(c, node, std::span<const TaskRequest>(&m.request, 1), idle, &usable, &units, &offers);
  return fragment(m.request, idle, c.node(node).cpu_free_milli, usable, units);
}

double node_fragmentation(const ClusterState& c, NodeId node, std::span<const PodType> types) {
  std::int64_t weighted = 0, weights = 0;
  for (const auto& m : types) {
    weighted += m.pods * node_fragment(c, node, m);
    weights += m.pods;
  }
  return weights > 0 ? static_cast<double>(weighted) / static_cast<double>(weights) : 0.0;
}

Fragmentation cluster_fragmentation(const ClusterState& c, std::span<const PodType> types) {
  FragmentationCache cache(std::vector<PodType>(types.begin(), types.end()));
  return cache.cluster(c);
}

// ============================================================================ cache

FragmentationCache::FragmentationCache(std::vector<PodType> types) { set_types(std::move(types)); }

void FragmentationCache::set_types(std::vector<PodType> types) {
  types_ = std::move(types);
  weight_total_ = 0;
  for (const auto& t : types_) {
    GPUSCHED_ASSERT(t.pods > 0, "a pod type needs a positive weight (pods)");
    weight_total_ += t.pods;
  }
  shapes_.clear();
  shape_of_.assign(types_.size(), -1);
  for (std::size_t m = 0; m < types_.size(); ++m) {
    const auto& r = types_[m].request;
    if (r.gpu.mode == GpuMode::kNone) continue;
    auto it = std::find_if(shapes_.begin(), shapes_.end(), [&](const TaskRequest& x) { return same_gpu_shape(x, r); });
    if (it == shapes_.end()) {
      TaskRequest shape;
      shape.gpu = r.gpu;
      shape.allowed_models = r.allowed_models;
      shapes_.push_back(std::move(shape));
      it = shapes_.end() - 1;
    }
    shape_of_[m] = static_cast<std::int32_t>(it - shapes_.begin());
  }
  du_.assign(shapes_.size(), 0);
  dn_.assign(shapes_.size(), 0);
  bound_ = 0;
  bound_nodes_ = 0;
}

void FragmentationCache::bind(const ClusterState& c) {
  if (bound_ == c.instance() && bound_nodes_ == c.node_count()) return;
  bound_ = c.instance();
  bound_nodes_ = c.node_count();
  const auto n = bound_nodes_, k = shapes_.size();
  key_gen_.assign(n, ~0ULL);
  cpu_free_.assign(n, 0);
  idle_.assign(n, 0);
  weighted_.assign(n, 0);
  usable_.assign(n * k, 0);
  units_.assign(n * k, 0);
  offers_.assign(n * k, 0);
  fit_pods_.assign(n * k, 0);
  unfit_pods_.assign(n, 0);
}

std::size_t FragmentationCache::ensure(const ClusterState& c, NodeId n) {
  bind(c);
  const std::size_t i = n.value;
  const auto& s = c.node(n);
  if (key_gen_[i] == s.generation) return i;
  const std::size_t k = shapes_.size();
  std::int64_t idle = 0;
  aggregate(c, n, shapes_, idle, usable_.data() + i * k, units_.data() + i * k, offers_.data() + i * k);
  std::int64_t weighted = 0, unfit = 0;
  std::fill_n(fit_pods_.begin() + static_cast<std::ptrdiff_t>(i * k), k, 0);
  for (std::size_t m = 0; m < types_.size(); ++m) {
    const auto sh = shape_of_[m];
    const std::size_t at = i * k + static_cast<std::size_t>(std::max(sh, 0));
    const auto& type = types_[m].request;
    // fragment(): a type with GPUs that fits leaves its usable milli out; the others count all idle milli.
    const bool fits = sh >= 0 && s.cpu_free_milli >= type.cpu_milli && units_[at] >= type.gpu.count;
    weighted += types_[m].pods * (fits ? idle - usable_[at] : idle);
    (fits ? fit_pods_[at] : unfit) += types_[m].pods;
  }
  unfit_pods_[i] = unfit;
  key_gen_[i] = s.generation;
  cpu_free_[i] = s.cpu_free_milli;
  idle_[i] = idle;
  weighted_[i] = weighted;
  return i;
}

std::int64_t FragmentationCache::weighted_node(const ClusterState& c, NodeId n) { return weighted_[ensure(c, n)]; }

std::int64_t FragmentationCache::weighted_drop_bound(const ClusterState& c, NodeId n, std::int64_t g, std::uint64_t gpus,
                                                     const TaskRequest* one_gpu) {
  const std::size_t i = ensure(c, n);
  const std::size_t k = shapes_.size();
  const std::int64_t idle = idle_[i];
  // Types that do not fit (CPU-only ones included): F_n(m) is the idle milli.
  const std::int64_t unfit = unfit_pods_[i] * std::min(g, idle);
  if (one_gpu == nullptr || gpus == 0) {
    std::int64_t out = unfit;
    for (std::size_t at = i * k; at < (i + 1) * k; ++at) {
      // Types of this shape that fit: F_n(m) = idle - usable, unless every GPU the task may take serves them.
      if (fit_pods_[at] != 0 && (gpus & ~offers_[at]) != 0) out += fit_pods_[at] * std::min(g, idle - usable_[at]);
    }
    return out;
  }
  // One GPU taken: the most any one of them can lower. A type it serves does not fall; should
  // the GPU stop serving it, F_n(m) grows by at least the milli the GPU has left.
  const auto all = c.gpus(n);
  std::int64_t best = std::numeric_limits<std::int64_t>::min();
  for (std::uint64_t left = gpus; left != 0; left &= left - 1) {
    const auto x = static_cast<std::size_t>(std::countr_zero(left));
    const GpuState& gx = all[x];
    // A GPU in the same state as one before it allows the same.
    bool seen = false;
    for (std::uint64_t before = gpus & ((std::uint64_t{1} << x) - 1); before != 0 && !seen; before &= before - 1) {
      seen = same_state(all[static_cast<std::size_t>(std::countr_zero(before))], gx);
    }
    if (seen) continue;
    const std::uint64_t bit = std::uint64_t{1} << x;
    // The GPU after the grant (ClusterState::unit_grant on a plain GPU: a whole GPU gives all its
    // milli and memory, a share its request's).
    const bool whole = one_gpu->gpu.mode == GpuMode::kWhole;
    const std::int32_t left_milli = whole ? 0 : gx.milli_free - one_gpu->gpu.milli;
    const std::int64_t left_memory =
        whole ? 0 : gx.memory_free_mib - (one_gpu->gpu.memory_mib == kAllGpuMemory ? gx.memory_mib : one_gpu->gpu.memory_mib);
    std::int64_t out = unfit;
    for (std::size_t at = i * k, sh = 0; sh < k; ++at, ++sh) {
      if (fit_pods_[at] == 0) continue;
      if ((offers_[at] & bit) == 0) {
        out += fit_pods_[at] * std::min(g, idle - usable_[at]);
        continue;
      }
      // It served the type's shape (so a whole GPU or a share, of an allowed model): does it still?
      // A whole GPU no longer (a task holds it); a share as ClusterState::share_fits says.
      const auto& shape = shapes_[sh].gpu;
      const bool serves = shape.mode == GpuMode::kShared &&
                          ClusterState::share_fits(left_milli, left_memory, static_cast<std::uint16_t>(gx.tasks + 1), gx.memory_mib,
                                                   shape.milli, shape.memory_mib);
      if (!serves) out -= fit_pods_[at] * left_milli;
    }
    best = std::max(best, out);
  }
  return best;
}

double FragmentationCache::node(const ClusterState& c, NodeId n) {
  const auto w = weighted_node(c, n);
  return weight_total_ > 0 ? static_cast<double>(w) / static_cast<double>(weight_total_) : 0.0;
}

Fragmentation FragmentationCache::cluster(const ClusterState& c) {
  Fragmentation f;
  std::int64_t weighted = 0;
  for (std::uint32_t n = 0; n < c.node_count(); ++n) {
    const auto i = ensure(c, NodeId{n});
    weighted += weighted_[i];
    f.idle_milli += idle_[i];
  }
  f.capacity_milli = c.totals().gpu_milli;
  f.fragment_milli = weight_total_ > 0 ? static_cast<double>(weighted) / static_cast<double>(weight_total_) : 0.0;
  return f;
}

std::int64_t FragmentationCache::weighted_delta(const ClusterState& c, NodeId n, std::int64_t cpu_after,
                                                const Change* changes, std::size_t count) {
  const std::size_t i = ensure(c, n);
  const auto f = node_mig(c, n);
  std::int64_t d_idle = 0;
  for (std::size_t x = 0; x < count; ++x) {
    d_idle += changes[x].times * (idle_of(c, f, *changes[x].after) - idle_of(c, f, *changes[x].before));
  }
  for (std::size_t sh = 0; sh < shapes_.size(); ++sh) {
    std::int64_t du = 0, dn = 0;
    for (std::size_t x = 0; x < count; ++x) {
      const auto a = contrib(c, f, *changes[x].after, shapes_[sh]), b = contrib(c, f, *changes[x].before, shapes_[sh]);
      du += changes[x].times * (a.usable - b.usable);
      dn += changes[x].times * (a.units - b.units);
    }
    du_[sh] = du;
    dn_[sh] = dn;
  }
  const std::int64_t idle = idle_[i], cpu = cpu_free_[i];
  const std::size_t k = shapes_.size();
  std::int64_t out = 0;
  for (std::size_t m = 0; m < types_.size(); ++m) {
    const auto sh = shape_of_[m];
    if (sh < 0) {   // CPU-only: all idle GPU before and after
      out += types_[m].pods * d_idle;
      continue;
    }
    const auto s = static_cast<std::size_t>(sh);
    const auto& type = types_[m].request;
    const auto usable = usable_[i * k + s];
    const std::int64_t units = units_[i * k + s];
    const auto before = fragment(type, idle, cpu, usable, units);
    const auto after = fragment(type, idle + d_idle, cpu_after, usable + du_[s], units + dn_[s]);
    out += types_[m].pods * (after - before);
  }
  return out;
}

std::int64_t FragmentationCache::weighted_delta_of(const ClusterState& c, const TaskRequest& r, NodeId node,
                                                   std::span<const GpuGrant> grants) {
  const auto gpus = c.gpus(node);
  std::vector<std::uint16_t> touched;
  for (const auto& gr : grants) {
    if (std::find(touched.begin(), touched.end(), gr.index) == touched.end()) touched.push_back(gr.index);
  }
  std::vector<Look> before, after;
  before.reserve(touched.size());
  after.reserve(touched.size());
  for (auto idx : touched) {
    before.push_back(look_of(c, gpus[idx]));
    after.push_back(before.back());
    for (const auto& gr : grants) {
      if (gr.index == idx) apply_grant(c, after.back(), gr);
    }
  }
  std::vector<Change> changes(touched.size());
  for (std::size_t x = 0; x < touched.size(); ++x) changes[x] = {&before[x], &after[x], 1};
  return weighted_delta(c, node, c.node(node).cpu_free_milli - r.cpu_milli, changes.data(), changes.size());
}

double FragmentationCache::delta(const ClusterState& c, const TaskRequest& r, NodeId node, std::span<const GpuGrant> grants) {
  const auto w = weighted_delta_of(c, r, node, grants);
  return weight_total_ > 0 ? static_cast<double>(w) / static_cast<double>(weight_total_) : 0.0;
}

std::optional<std::int64_t> FragmentationCache::greedy_units(const ClusterState& c, const TaskRequest& r, NodeId node,
                                                             std::vector<GpuGrant>& out, GpuChoice choice) {
  const auto& s = c.node(node);
  const auto gpus = c.gpus(node);
  const std::int64_t cpu_after = s.cpu_free_milli - r.cpu_milli;
  const auto need = static_cast<std::size_t>(r.gpu.count);
  out.clear();
  if (r.gpu.mode == GpuMode::kWhole && s.plain_gpus && s.model.valid()) {
    // Identical plain GPUs: every free one is alike; the lowest-index ones are taken.
    if (!r.model_allowed(s.model)) return std::nullopt;
    for (std::size_t i = 0; i < gpus.size() && out.size() < need; ++i) {
      if (gpus[i].tasks == 0) out.push_back(c.unit_grant(node, static_cast<std::uint16_t>(i), r));
    }
    if (out.size() < need) return std::nullopt;
    const Look before = look_of(c, gpus[out.front().index]);
    Look after = before;
    apply_grant(c, after, out.front());
    const Change ch{&before, &after, static_cast<std::int64_t>(need)};
    return weighted_delta(c, node, cpu_after, &ch, 1);
  }
  if (need == 1) {
    // The hot path (a share): each fitting GPU alone.
    std::optional<std::int64_t> best;
    std::int32_t best_left = 0, best_score = 0;
    GpuGrant best_grant;
    const double weights = static_cast<double>(std::max<std::int64_t>(1, weight_total_));
    for (std::size_t i = 0; i < gpus.size(); ++i) {
      if (c.gpu_units(node, gpus[i], r) == 0) continue;
      // A GPU in the same state as an earlier candidate scores the same and loses the tie.
      const auto& g = gpus[i];
      const bool seen = std::any_of(gpus.begin(), gpus.begin() + static_cast<std::ptrdiff_t>(i),
                                    [&](const GpuState& e) { return same_state(e, g) && c.gpu_units(node, e, r) > 0; });
      if (seen) continue;
      const auto grant = c.unit_grant(node, static_cast<std::uint16_t>(i), r);
      const Look before = look_of(c, gpus[i]);
      Look after = before;
      apply_grant(c, after, grant);
      const Change ch{&before, &after, 1};
      const auto d = weighted_delta(c, node, cpu_after, &ch, 1);
      if (choice == GpuChoice::kFirstBestScore) {
        // The first GPU with the highest integer score (its ΔF need not be the least).
        const auto score = integer_score(static_cast<double>(d) / weights);
        if (!best || score > best_score) {
          best = d;
          best_score = score;
          best_grant = grant;
        }
        continue;
      }
      if (!best || d < *best || (d == *best && after.milli_free < best_left)) {
        best = d;
        best_left = after.milli_free;
        best_grant = grant;
      }
    }
    if (best) out.push_back(best_grant);
    return best;
  }
  // N units, one per GPU, chosen one at a time.
  std::vector<Look> before, after;
  before.reserve(need + 1);
  after.reserve(need + 1);
  std::vector<Change> changes;
  std::vector<std::uint8_t> used(gpus.size(), 0);
  std::int64_t total = 0;
  while (out.size() < need) {
    std::optional<std::int64_t> best;
    std::int32_t best_left = 0;
    std::size_t best_i = 0;
    GpuGrant best_grant;
    for (std::size_t i = 0; i < gpus.size(); ++i) {
      if (used[i] || c.gpu_units(node, gpus[i], r) == 0) continue;
      const auto grant = c.unit_grant(node, static_cast<std::uint16_t>(i), r);
      before.push_back(look_of(c, gpus[i]));
      after.push_back(before.back());
      apply_grant(c, after.back(), grant);
      changes.clear();
      for (std::size_t x = 0; x < before.size(); ++x) changes.push_back({&before[x], &after[x], 1});
      const auto d = weighted_delta(c, node, cpu_after, changes.data(), changes.size());
      const auto left = after.back().milli_free;
      before.pop_back();
      after.pop_back();
      if (!best || d < *best || (d == *best && left < best_left)) {
        best = d;
        best_left = left;
        best_i = i;
        best_grant = grant;
      }
    }
    if (!best) return std::nullopt;
    used[best_i] = 1;
    before.push_back(look_of(c, gpus[best_i]));
    after.push_back(before.back());
    apply_grant(c, after.back(), best_grant);
    out.push_back(best_grant);
    total = *best;
  }
  return total;
}

std::optional<std::int64_t> FragmentationCache::greedy_mig(const ClusterState& c, const TaskRequest& r, NodeId node,
                                                           ClusterState::MigStartChooser mig_start,
                                                           std::vector<GpuGrant>& out) {
  const auto f = node_mig(c, node);
  if (f.single) return std::nullopt;
  const auto gpus = c.gpus(node);
  const std::int64_t cpu_after = c.node(node).cpu_free_milli - r.cpu_milli;
  // Per GPU: the look before and after this task's grants so far (MIG GPUs only).
  std::vector<Look> before(gpus.size()), after(gpus.size());
  std::vector<std::uint8_t> touched(gpus.size(), 0);
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    before[i] = look_of(c, gpus[i]);
    after[i] = before[i];
  }
  std::vector<Change> changes;
  out.clear();
  std::int64_t total = 0;
  struct Candidate {
    std::int64_t d;
    int destroyed;
    std::int32_t left;
    std::uint16_t index;
    int start;
    GpuGrant grant;
    [[nodiscard]] auto key() const { return std::tuple{d, destroyed, left, index, start}; }
  };
  while (static_cast<std::int32_t>(out.size()) < r.gpu.count) {
    std::vector<std::pair<GpuGrant, int>> options;   // grant, GIs destroyed
    auto usable_gpu = [&](std::size_t i, int& p) {
      const auto& g = gpus[i];
      if (g.partition != GpuPartition::kMig || !r.model_allowed(g.model)) return false;
      p = r.gpu.profile_index(g.model);
      return p >= 0;
    };
    auto grant_of = [&](std::size_t i, int p, int start, bool created) {
      const auto& geo = c.mig_geometry(gpus[i]);
      const auto& prof = geo.profiles[static_cast<std::size_t>(p)];
      GpuGrant gr{static_cast<std::uint16_t>(i), kMilliPerGpu * prof.compute_slices / geo.compute_slices, prof.memory_mib};
      gr.mig_profile = static_cast<std::int8_t>(p);
      gr.mig_start = static_cast<std::int8_t>(start);
      gr.mig_created = created;
      return gr;
    };
    // 1. idle GIs of the profile, anywhere on the node.
    for (std::size_t i = 0; i < gpus.size(); ++i) {
      int p = -1;
      if (!usable_gpu(i, p)) continue;
      const auto& m = after[i].mig_state();
      for (const auto& inst : m.layout.instances()) {
        if (inst.profile == p && !m.busy_at(inst.start)) options.emplace_back(grant_of(i, p, inst.start, false), 0);
      }
    }
    // 2. new GIs at legal free starts (dynamic nodes).
    if (options.empty() && f.dynamic) {
      for (std::size_t i = 0; i < gpus.size(); ++i) {
        int p = -1;
        if (!usable_gpu(i, p)) continue;
        const auto& geo = c.mig_geometry(gpus[i]);
        const auto& m = after[i].mig_state();
        if (geo.reconfigure_requires_idle && m.busy != 0) continue;
        if (kMilliPerGpu * geo.profiles[static_cast<std::size_t>(p)].compute_slices / geo.compute_slices > after[i].milli_free) continue;
        for (int st : geo.profiles[static_cast<std::size_t>(p)].starts) {
          if (m.layout.can_place(geo, p, st)) options.emplace_back(grant_of(i, p, st, true), 0);
        }
      }
    }
    // 3. after destroying idle GIs (the fewest, per GPU).
    if (options.empty() && f.dynamic) {
      for (std::size_t i = 0; i < gpus.size(); ++i) {
        int p = -1;
        if (!usable_gpu(i, p)) continue;
        const auto o = c.mig_option(node, static_cast<std::uint16_t>(i), r, mig_start, &after[i].mig_state(), true);
        if (o && o->grant.mig_created) options.emplace_back(o->grant, o->destroyed);
      }
    }
    if (options.empty()) return std::nullopt;
    std::optional<Candidate> best;
    for (const auto& [grant, destroyed] : options) {
      const auto i = grant.index;
      Look trial = after[i];
      apply_grant(c, trial, grant);
      changes.clear();
      for (std::size_t x = 0; x < gpus.size(); ++x) {
        if (x == i) changes.push_back({&before[x], &trial, 1});
        else if (touched[x]) changes.push_back({&before[x], &after[x], 1});
      }
      const Candidate cand{weighted_delta(c, node, cpu_after, changes.data(), changes.size()), destroyed, trial.milli_free,
                           i, grant.mig_start, grant};
      if (!best || cand.key() < best->key()) best = cand;
    }
    apply_grant(c, after[best->index], best->grant);
    touched[best->index] = 1;
    out.push_back(best->grant);
    total = best->d;
  }
  return total;
}

std::optional<double> FragmentationCache::best_grants(const ClusterState& c, const TaskRequest& r, NodeId node,
                                                      ClusterState::MigStartChooser mig_start, std::vector<GpuGrant>& out,
                                                      GpuChoice choice) {
  out.clear();
  if (!c.fits(node, r)) return std::nullopt;
  std::optional<std::int64_t> w;
  const auto& s = c.node(node);
  switch (r.gpu.mode) {
    case GpuMode::kNone:
      w = weighted_delta(c, node, s.cpu_free_milli - r.cpu_milli, nullptr, 0);
      break;
    case GpuMode::kShared:
      w = greedy_units(c, r, node, out, choice);
      break;
    case GpuMode::kWhole: {
      const auto gpus = c.gpus(node);
      const bool mig = std::any_of(gpus.begin(), gpus.end(), [](const GpuState& g) { return g.partition == GpuPartition::kMig; });
      if (!mig) w = greedy_units(c, r, node, out, choice);
      break;
    }
    case GpuMode::kMig:
      w = greedy_mig(c, r, node, mig_start, out);
      break;
    default: break;
  }
  if (!w) {
    // Modes FGD does not shape (vGPU, passthrough, `single` MIG) or a stuck greedy search:
    // the usual device choice, scored as is.
    TaskPlacement p;
    if (!pick_devices(c, r, node, {}, mig_start, p)) return std::nullopt;
    out = std::move(p.gpus);
    w = weighted_delta_of(c, r, node, out);
  }
  return weight_total_ > 0 ? static_cast<double>(*w) / static_cast<double>(weight_total_) : 0.0;
}

}  // namespace gpusched::policies::fgd

namespace gpusched::policies {

namespace {
/// GPU milli a request takes on `node` (MIG / vGPU: the instance's share on the node's model).
double request_gpu_milli(const ClusterState& c, NodeId node, const TaskRequest& r) {
  switch (r.gpu.mode) {
    case GpuMode::kMig:
    case GpuMode::kVgpu:
      for (const auto& g : c.gpus(node)) {
        const int p = r.gpu.profile_index(g.model);
        if (p < 0 || !r.model_allowed(g.model)) continue;
        const auto& model = c.catalog()[g.model];
        if (r.gpu.mode == GpuMode::kMig && model.mig) {
          const auto& geo = *model.mig;
          return r.gpu.count * static_cast<double>(kMilliPerGpu * geo.profiles[static_cast<std::size_t>(p)].compute_slices) /
                 geo.compute_slices;
        }
        if (r.gpu.mode == GpuMode::kVgpu) {
          return r.gpu.count * static_cast<double>(kMilliPerGpu) / model.vgpu[static_cast<std::size_t>(p)].max_per_gpu;
        }
      }
      return 0.0;
    default: return static_cast<double>(r.gpu.total_milli());
  }
}
}  // namespace

// ---------------------------------------------------------------------------- fgd

namespace {
/// Index of the task's request shape in FgdPlugin's memo, found once per task.
const StateKey<std::size_t> kFgdMemo{"fgd/memo"};

/// The entry of `memos` that `same` accepts; else a new one (while fewer than `cap`) or the
/// least recently used, set up by `reset`. Marked as used now.
template <class M, class Same, class Reset>
M& lru_entry(std::vector<M>& memos, std::size_t cap, std::uint64_t& clock, Same same, Reset reset) {
  auto it = std::find_if(memos.begin(), memos.end(), same);
  if (it == memos.end()) {
    it = memos.size() < cap ? memos.insert(memos.end(), M{})
                            : std::min_element(memos.begin(), memos.end(), [](const M& a, const M& b) { return a.last_used < b.last_used; });
    reset(*it);
  }
  it->last_used = ++clock;
  return *it;
}

std::uint64_t mix(std::uint64_t h, std::uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  return h * 0xff51afd7ed558ccdULL;
}
/// What ΔF depends on in a request: all but host memory (FGD counts CPU and GPU only).
TaskRequest memo_shape(const TaskRequest& r) {
  TaskRequest s = r;
  s.memory_mib = 0;
  return s;
}
std::uint64_t shape_hash(const TaskRequest& r) {
  std::uint64_t h = fnv1a64(r.gpu.profile);
  h = mix(h, static_cast<std::uint64_t>(r.cpu_milli));
  h = mix(h, static_cast<std::uint64_t>(r.gpu.mode));
  h = mix(h, static_cast<std::uint64_t>(r.gpu.count));
  h = mix(h, static_cast<std::uint64_t>(r.gpu.milli));
  h = mix(h, static_cast<std::uint64_t>(r.gpu.memory_mib));
  const GpuModelMask low(~0ULL);
  h = mix(h, (r.allowed_models & low).to_ullong());
  h = mix(h, (r.allowed_models >> 64).to_ullong());
  h = mix(h, (r.resource_models & low).to_ullong());
  h = mix(h, (r.resource_models >> 64).to_ullong());
  h = mix(h, r.gpu.shared_name ? 1U : 0U);
  return h;
}
}  // namespace

void FgdPlugin::forget() const {
  memos_.clear();
  memo_instance_ = 0;
  bound_memos_.clear();
}

FgdPlugin::ShapeMemo& FgdPlugin::memo_for(const ClusterState& cluster, const TaskContext& ctx) const {
  if (memo_instance_ != cluster.instance() || (!memos_.empty() && memos_.front().nodes.size() != cluster.node_count())) {
    forget();
    memo_instance_ = cluster.instance();
  }
  if (const auto* i = ctx.state.read(kFgdMemo); i && *i < memos_.size()) return memos_[*i];
  const auto& r = ctx.request();
  const auto hash = shape_hash(r);
  auto same = [&](const ShapeMemo& m) {
    // The request less host memory, compared exactly.
    const auto& x = m.shape;
    return m.hash == hash && x.cpu_milli == r.cpu_milli && x.gpu == r.gpu && x.tpu == r.tpu &&
           x.allowed_models == r.allowed_models && x.resource_models == r.resource_models && x.extended == r.extended;
  };
  const std::size_t per_shape = std::max<std::size_t>(1, cluster.node_count() * sizeof(Memo));
  ShapeMemo& m = lru_entry(memos_, std::clamp<std::size_t>(kMemoBytes / per_shape, 16, kMemoShapes), memo_clock_, same,
                           [&](ShapeMemo& fresh) {
                             fresh.hash = hash;
                             fresh.shape = memo_shape(r);
                             fresh.nodes.assign(cluster.node_count(), Memo{});
                           });
  ctx.state.write(kFgdMemo, static_cast<std::size_t>(&m - memos_.data()));
  return m;
}

void FgdPlugin::attach(const ClusterState& /*cluster*/, std::span<const JobSpec> workload, const JobsView* /*jobs*/) {
  auto types = fgd::typical_pod_types(workload, coverage_);
  attached_ = !types.empty();
  cache_.set_types(std::move(types));
  forget();
}

void FgdPlugin::use_fallback(const TaskRequest& r) const {
  if (attached_) return;
  const auto& t = cache_.types();
  if (t.size() == 1 && fgd::same_pod_type(t.front().request, r)) return;
  cache_.set_types({fgd::pod_type_of(r)});
  forget();
}

double FgdPlugin::score(const ClusterState& cluster, const TaskContext& ctx, NodeId node) {
  const auto& r = ctx.request();
  use_fallback(r);
  const auto& s = cluster.node(node);
  Memo& m = memo_for(cluster, ctx).nodes[node.value];
  const auto as_score = [&](double delta) { return integer_ ? static_cast<double>(fgd::integer_score(delta)) : -delta; };
  if (m.generation == s.generation) return as_score(m.delta);
  const auto d = cache_.best_grants(cluster, r, node, chooser_, scratch_, choice());
  // A feasible node always has grants; should one not, it ranks last.
  if (!d) return integer_ ? 0.0 : -std::numeric_limits<double>::max() / 4;
  m = {s.generation, *d};
  return as_score(*d);
}

FgdPlugin::BoundMemo& FgdPlugin::bound_memo_for(const ClusterState& cluster, const TaskRequest& r) {
  const auto& q = r.gpu;
  BoundMemo& m = lru_entry(
      bound_memos_, kBoundMemos, memo_clock_,
      [&](const BoundMemo& x) { return x.mode == q.mode && x.count == q.count && x.milli == q.milli && x.memory_mib == q.memory_mib; },
      [&](BoundMemo& fresh) {
        fresh.mode = q.mode;
        fresh.count = q.count;
        fresh.milli = q.milli;
        fresh.memory_mib = q.memory_mib;
        fresh.nodes.clear();
      });
  if (m.nodes.size() != cluster.node_count()) m.nodes.assign(cluster.node_count(), Memo{});
  return m;
}

bool FgdPlugin::score_bounds(const ClusterState& cluster, const TaskContext& ctx, std::span<const NodeId> nodes,
                             std::span<double> out) {
  // Integer scores only: their normalize is the identity (the node index's totals tree).
  const auto& r = ctx.request();
  if (!integer_ || r.tpu.chips > 0) return false;
  // The idle milli a placement takes, at most, on a node of plain GPUs (ClusterState::unit_grant:
  // a whole GPU gives all its milli, a share its request's).
  std::int64_t g = 0;
  switch (r.gpu.mode) {
    case GpuMode::kNone: break;
    case GpuMode::kWhole:
    case GpuMode::kShared: g = r.gpu.total_milli(); break;
    default: return false;
  }
  if (g < 0) return false;
  use_fallback(r);
  if (memo_instance_ != cluster.instance()) {
    forget();
    memo_instance_ = cluster.instance();
  }
  const std::int64_t weights = cache_.total_weight();
  if (r.gpu.mode == GpuMode::kNone) {
    // No GPU is taken, on any node: no F_n(m) falls (less CPU only makes types stop fitting).
    std::fill(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(nodes.size()), static_cast<double>(fgd::integer_score(-1e-6)));
    return true;
  }
  BoundMemo& memo = bound_memo_for(cluster, r);
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const auto& state = cluster.node(nodes[i]);
    Memo& known = memo.nodes[nodes[i].value];
    if (known.generation == state.generation) {
      out[i] = known.delta;
      continue;
    }
    if (!state.plain_gpus || cluster.gpus(nodes[i]).size() > 64) {
      out[i] = std::numeric_limits<double>::quiet_NaN();   // partitioned GPUs: no bound, score() answers
      continue;
    }
    // The GPUs the task may take, or more: a whole GPU must be idle, a share needs its milli
    // free and, taking all the compute, an idle GPU (ClusterState::share_fits).
    std::uint64_t may_take = 0;
    const auto gpus = cluster.gpus(nodes[i]);
    for (std::size_t x = 0; x < gpus.size(); ++x) {
      const auto& gpu = gpus[x];
      const bool may = r.gpu.mode == GpuMode::kWhole ? gpu.tasks == 0
                                                     : gpu.milli_free >= r.gpu.milli && (r.gpu.milli < kMilliPerGpu || gpu.tasks == 0);
      if (may) may_take |= std::uint64_t{1} << x;
    }
    const std::int64_t drop = cache_.weighted_drop_bound(cluster, nodes[i], g, may_take, r.gpu.count == 1 ? &r : nullptr);
    // ΔF >= -drop / weights, and integer_score does not grow with ΔF. The bound's ΔF is taken a
    // millionth of a milli lower so that exp()'s rounding can never put the bound below the score.
    const double least = weights > 0 ? static_cast<double>(-drop) / static_cast<double>(weights) : 0.0;
    out[i] = static_cast<double>(fgd::integer_score(least - 1e-6));
    known = {state.generation, out[i]};
  }
  return true;
}

bool FgdPlugin::select(const ClusterState& cluster, const TaskContext& ctx, NodeId node, TaskPlacement& out) const {
  use_fallback(ctx.request());
  const auto& r = ctx.request();
  out.node = node;
  out.tpu_chips = r.tpu.chips;
  out.gpus.clear();
  if (r.gpu.mode == GpuMode::kNone) return true;
  return cache_.best_grants(cluster, r, node, chooser_, out.gpus, choice()).has_value();
}

// ---------------------------------------------------------------------------- dotprod

double DotProdScore::score(const ClusterState& cluster, const TaskContext& ctx, NodeId node) {
  const auto& s = cluster.node(node);
  const auto& r = ctx.request();
  const auto& max = cluster.max_capacity();
  const double max_cpu = std::max<double>(1.0, static_cast<double>(max.cpu_free_milli));
  const double max_gpu = std::max<double>(1.0, static_cast<double>(max.gpu_milli_free));
  const double dot = (static_cast<double>(s.cpu_free_milli) / max_cpu) * (static_cast<double>(r.cpu_milli) / max_cpu) +
                     (static_cast<double>(s.gpu_milli_free) / max_gpu) * (request_gpu_milli(cluster, node, r) / max_gpu);
  const double score = std::clamp(100.0 * (1.0 - dot / 2.0), 0.0, 100.0);
  return integer_ ? std::trunc(score) : score;
}

// ---------------------------------------------------------------------------- gpu-clustering

std::int32_t pod_kind(const TaskRequest& r) {
  switch (r.gpu.mode) {
    case GpuMode::kNone: return 0;
    case GpuMode::kShared:
    case GpuMode::kMig:
    case GpuMode::kVgpu: return -1;
    case GpuMode::kWhole:
    case GpuMode::kPassthrough: return std::max<std::int32_t>(1, r.gpu.count);
  }
  return 0;
}

void GpuClusteringScore::add(NodeId node, std::int32_t kind, std::int32_t delta) {
  if (kind == 0) return;
  if (kinds_.size() <= node.value) kinds_.resize(node.value + 1);
  auto& v = kinds_[node.value];
  auto it = std::find_if(v.begin(), v.end(), [&](const auto& e) { return e.first == kind; });
  if (it == v.end()) {
    if (delta <= 0) return;
    v.emplace_back(kind, delta);
    return;
  }
  it->second += delta;
  if (it->second <= 0) v.erase(it);
}

std::int32_t GpuClusteringScore::count(NodeId node, std::int32_t kind) const {
  if (kinds_.size() <= node.value) return 0;
  for (const auto& [k, n] : kinds_[node.value]) {
    if (k == kind) return n;
  }
  return 0;
}

void GpuClusteringScore::attach(const ClusterState& cluster, std::span<const JobSpec> /*workload*/, const JobsView* jobs) {
  kinds_.assign(cluster.node_count(), {});
  if (!jobs) return;
  for (std::uint32_t n = 0; n < cluster.node_count(); ++n) {
    for (const JobId id : jobs->running_on(NodeId{n})) {
      const auto kind = pod_kind(jobs->spec(id).request);
      for (const auto& p : jobs->placements(id)) {
        if (p.node == NodeId{n}) add(p.node, kind, 1);
      }
    }
  }
}

void GpuClusteringScore::job_started(const JobSpec& job, JobId /*id*/, std::span<const TaskPlacement> placements) {
  const auto kind = pod_kind(job.request);
  for (const auto& p : placements) add(p.node, kind, 1);
}

void GpuClusteringScore::job_stopped(const JobSpec& job, JobId /*id*/, std::span<const TaskPlacement> placements) {
  const auto kind = pod_kind(job.request);
  for (const auto& p : placements) add(p.node, kind, -1);
}

double GpuClusteringScore::score(const ClusterState& cluster, const TaskContext& ctx, NodeId node) {
  const auto kind = pod_kind(ctx.request());
  if (kind == 0) return 0.0;
  std::int64_t same = 0, others = 0;
  if (kinds_.size() > node.value) {
    for (const auto& [k, n] : kinds_[node.value]) (k == kind ? same : others) += n;
  }
  for (const auto& p : ctx.placed) same += p.node == node ? 1 : 0;
  const auto& s = cluster.node(node);
  const std::int64_t capacity = std::int64_t{s.gpu_count} * kMilliPerGpu;
  const bool gpu_used = s.gpus_fully_free < s.gpu_count || s.gpu_milli_free < capacity;
  if (same == 0 && others == 0 && gpu_used) others = 1;   // GPU pods the scheduler was not told about
  const double band = same > 0 ? (others == 0 ? 75.0 : 50.0) : (others == 0 ? 25.0 : 0.0);
  // How full the node is, as a fraction `num / den` in [0, 1].
  std::int64_t num = 0, den = 1;
  if (fill_ == ClusteringFill::kFreeMilli) {
    // Less free GPU milli than the largest node's G, whatever this node's size.
    den = std::max<std::int64_t>(1, cluster.max_capacity().gpu_milli_free);
    num = std::clamp<std::int64_t>(den - s.gpu_milli_free, 0, den);
  } else if (capacity > 0) {
    den = capacity;
    num = std::clamp<std::int64_t>(capacity - s.gpu_milli_free, 0, capacity);
  }
  if (integer_) return band + static_cast<double>(25 * num / den);
  return band + 1.0 + 24.0 * static_cast<double>(num) / static_cast<double>(den);
}

// ---------------------------------------------------------------------------- gpu-packing

namespace {
/// GPU indices of `node` by free milli, least first (ties: index).
std::vector<std::uint16_t> least_free_first(const ClusterState& cluster, NodeId node) {
  const auto gpus = cluster.gpus(node);
  std::vector<std::uint16_t> order(gpus.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<std::uint16_t>(i);
  std::stable_sort(order.begin(), order.end(), [&](std::uint16_t a, std::uint16_t b) { return gpus[a].milli_free < gpus[b].milli_free; });
  return order;
}
}  // namespace

double GpuPacking::integer_score(const ClusterState& cluster, const TaskRequest& r, NodeId node) {
  const auto& s = cluster.node(node);
  const auto gpus = cluster.gpus(node);
  const std::int64_t n = s.gpu_count;
  if (s.gpus_fully_free == s.gpu_count) return static_cast<double>(std::max<std::int64_t>(33 - n, n));   // idle node
  // The GPUs the pod would use, least free first: fully free ones opened, free % of the others.
  auto& order = order_;
  order.resize(gpus.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<std::uint16_t>(i);
  std::stable_sort(order.begin(), order.end(), [&](std::uint16_t a, std::uint16_t b) { return gpus[a].milli_free < gpus[b].milli_free; });
  std::int64_t need = std::max<std::int32_t>(1, r.gpu.count), opened = 0, free_pct = 0;
  for (const auto i : order) {
    if (need == 0) break;
    const auto& g = gpus[i];
    const bool fits = r.gpu.mode == GpuMode::kShared ? ClusterState::gpu_fits_shared(g, r.gpu) && r.model_allowed(g.model)
                                                     : g.tasks == 0 && r.model_allowed(g.model);
    if (!fits) continue;
    --need;
    if (g.tasks == 0) ++opened;
    else free_pct += std::int64_t{g.milli_free} * 100 / kMilliPerGpu;
  }
  if (opened > 0) return static_cast<double>(std::max<std::int64_t>(50 - opened, 33));
  return static_cast<double>(std::max<std::int64_t>(100 - free_pct / 10, 50));
}

double GpuPacking::score(const ClusterState& cluster, const TaskContext& ctx, NodeId node) {
  const auto& r = ctx.request();
  if (r.gpu.mode == GpuMode::kNone) return 0.0;
  if (integer_ && (r.gpu.mode == GpuMode::kShared || r.gpu.mode == GpuMode::kWhole) && cluster.node(node).plain_gpus) {
    return integer_score(cluster, r, node);
  }
  const auto& s = cluster.node(node);
  const auto gpus = cluster.gpus(node);
  const auto need = static_cast<std::int64_t>(std::max<std::int32_t>(1, r.gpu.count));
  const double gmax = std::max<double>(1.0, cluster.max_capacity().gpu_count);
  // Units the GPUs already in use can give, and the free milli they would keep.
  auto& left = left_;
  left.clear();
  std::int64_t units_used = 0;
  const double unit_milli = request_gpu_milli(cluster, node, r) / static_cast<double>(need);
  for (const auto& g : gpus) {
    if (g.tasks == 0) continue;
    int u = 0;
    if (r.gpu.mode == GpuMode::kShared) u = ClusterState::gpu_fits_shared(g, r.gpu) && r.model_allowed(g.model) ? 1 : 0;
    else if (!(r.gpu.mode == GpuMode::kWhole && g.partition == GpuPartition::kWhole)) u = cluster.gpu_units(node, g, r);
    if (u <= 0) continue;
    units_used += u;
    for (int k = 0; k < u; ++k) left.push_back(std::max(0, g.milli_free - static_cast<std::int32_t>(unit_milli) * (k + 1)));
  }
  if (units_used >= need) {   // (a) fits on GPUs already in use
    std::sort(left.begin(), left.end());
    std::int64_t kept = 0;
    for (std::int64_t k = 0; k < need; ++k) kept += left[static_cast<std::size_t>(k)];
    const double frac = std::min(0.999, static_cast<double>(kept) / static_cast<double>(need * kMilliPerGpu));
    return 100.0 - 34.0 * frac;
  }
  if (s.gpus_fully_free < s.gpu_count) {   // (b) opens free GPUs on a node in use
    const double opened = static_cast<double>(need - units_used);
    return 66.0 - 33.0 * std::min(0.999, (opened - 1.0) / gmax);
  }
  // (c) an idle node: the fewer GPUs the better.
  return 33.0 - 33.0 * std::min(0.999, (static_cast<double>(s.gpu_count) - 1.0) / gmax);
}

bool GpuPacking::select(const ClusterState& cluster, const TaskContext& ctx, NodeId node, TaskPlacement& out) const {
  const auto& r = ctx.request();
  if (r.gpu.mode == GpuMode::kNone) return pick_devices(cluster, r, node, {}, chooser_, out);
  const auto order = least_free_first(cluster, node);
  return pick_devices(cluster, r, node, order, chooser_, out);
}

// ---------------------------------------------------------------------------- registration

namespace detail {

namespace {
const PluginArg kIntegerScoresArg{
    "integer_scores", "boolean",
    "score as the authors' simulator does: an integer 0..100, truncated and not normalised, so near-equal nodes tie "
    "and the tie goes to node order (see fgd.hpp for each plugin's formula)",
    false};
bool integer_scores_arg(const PluginContext& c) { return c.args.at("integer_scores").get<bool>(); }
}  // namespace

void register_fgd_plugins(Registry& r) {
  r.add({"fgd",
         "FGD (Weng et al., ATC'23): the node and GPUs where the workload's fragmentation grows least (ΔF); typical "
         "pod types from the attached workload (else the task's own shape); MIG-aware",
         {"score", "device_select"},
         {{"coverage", "number", "share of the workload's pods the typical pod types must cover, in (0, 1]", 0.95},
          kIntegerScoresArg, kMigStartArg},
         [](const PluginContext& c) {
           const double coverage = number_arg(c, "coverage", 0.0);
           if (!(coverage > 0.0 && coverage <= 1.0)) {
             throw_error(ErrorCode::kProfileBadArgs, {"", 0, std::string(c.name) + "/args/coverage"},
                         std::string(c.name) + ": argument coverage must be in (0, 1]");
           }
           return with_mig_start<FgdPlugin>(c, coverage, integer_scores_arg(c));
         }});
  r.add({"dotprod",
         "the FGD paper's DotProd: 100 x (1 - dot/2) of the node's free (CPU, GPU) and the request, each over the "
         "largest node: small free resources where the pod asks win",
         {"score"}, {kIntegerScoresArg},
         [](const PluginContext& c) { return std::make_unique<DotProdScore>(integer_scores_arg(c)); }});
  r.add({"gpu-clustering",
         "the FGD paper's GPU Clustering: nodes holding only pods of the new pod's kind (CPU-only, sharing, k whole "
         "GPUs) first, then mixed, then GPU-idle, then other kinds; more used GPU first within a band",
         {"score"},
         {kIntegerScoresArg,
          {"fill", "string",
           "how full a node looks inside a band: used-share (used GPU milli / the node's GPU milli) or free-milli "
           "(the authors' simulator: (G - free GPU milli) / G, G = the largest node's GPU milli, so small nodes look "
           "full)",
           "used-share"}},
         [](const PluginContext& c) {
           const auto& v = c.args.at("fill");
           const std::string fill = v.is_string() ? v.get<std::string>() : std::string();
           if (fill != "used-share" && fill != "free-milli") {
             throw_error(ErrorCode::kProfileBadArgs, {"", 0, std::string(c.name) + "/args/fill"},
                         std::string(c.name) + ": fill must be \"used-share\" or \"free-milli\"");
           }
           return std::make_unique<GpuClusteringScore>(
               integer_scores_arg(c), fill == "free-milli" ? ClusteringFill::kFreeMilli : ClusteringFill::kUsedShare);
         }});
  r.add({"gpu-packing",
         "the FGD paper's GPU Packing: fit on GPUs in use (least free left), else open the fewest free GPUs on a node "
         "in use, else the idle node with the fewest GPUs; inside the node, the GPUs with least free milli that fit",
         {"score", "device_select"}, {kIntegerScoresArg, kMigStartArg},
         [](const PluginContext& c) { return with_mig_start<GpuPacking>(c, integer_scores_arg(c)); }});
}

}  // namespace detail

}  // namespace gpusched::policies
