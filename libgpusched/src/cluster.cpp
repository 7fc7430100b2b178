#include <gpusched/cluster.hpp>

#include <atomic>
#include <bit>

#include <algorithm>

#include <gpusched/assert.hpp>

namespace gpusched {

namespace {
bool is_replicated(GpuPartition p) { return p == GpuPartition::kTimeSlicing || p == GpuPartition::kMps; }
/// Free replicas of a time-slicing / MPS GPU as nvidia.com/gpu units (all of them as the device
/// plugin advertises them, or at most one per GPU in the earlier model).
int replica_units(const GpuState& g, ReplicaAllocation a) {
  const int free = std::max(0, int{g.replicas} - int{g.tasks});
  return a == ReplicaAllocation::kDevicePlugin ? free : std::min(free, 1);
}
}  // namespace

std::string_view to_string(ReplicaAllocation a) {
  return a == ReplicaAllocation::kDevicePlugin ? "device-plugin" : "one-per-gpu";
}

ClusterState::ClusterState(GpuCatalog catalog, ResourceTable resources, std::vector<NodeSpec> nodes)
    : catalog_(std::make_shared<const GpuCatalog>(std::move(catalog))),
      resources_(std::make_shared<const ResourceTable>(std::move(resources))),
      specs_(std::move(nodes)) {
  nodes_.reserve(specs_.size());
  auto by_name = std::make_shared<std::unordered_map<std::string, NodeId>>();
  by_name->reserve(specs_.size());
  const std::size_t nres = resources_->size();
  extended_free_.assign(specs_.size() * nres, 0);
  for (std::size_t i = 0; i < specs_.size(); ++i) {
    const auto& spec = specs_[i];
    prefer_no_schedule_ += static_cast<std::size_t>(std::count_if(
        spec.taints.begin(), spec.taints.end(), [](const Taint& t) { return t.effect == TaintEffect::kPreferNoSchedule; }));
    NodeState s;
    s.cpu_free_milli = spec.cpu_milli;
    s.memory_free_mib = spec.memory_mib;
    s.gpu_begin = static_cast<std::uint32_t>(gpus_.size());
    s.gpu_count = static_cast<std::uint16_t>(spec.gpus.size());
    s.model = spec.gpus.empty() ? GpuModelId{} : spec.gpus.front().model;
    for (const auto& g : spec.gpus) {
      GPUSCHED_ASSERT(g.model.valid() && g.model.value < catalog_->size(), "GPU model id out of catalog");
      GpuState gs;
      gs.memory_mib = (*catalog_)[g.model].memory_mib;
      gs.memory_free_mib = gs.memory_mib;
      gs.model = g.model;
      gs.socket = g.socket;
      gs.partition = g.partition;
      gs.replicas = std::max<std::uint16_t>(1, g.replicas);
      gs.vgpu_profile = g.vgpu_profile;
      gs.vgpu_fixed = g.vgpu_profile >= 0;
      if (g.partition == GpuPartition::kMig) {
        GPUSCHED_ASSERT((*catalog_)[g.model].mig.has_value(), "MIG partition on a model without MIG");
        const auto& geo = *(*catalog_)[g.model].mig;
        MigGpuState m;
        for (const auto& inst : g.mig) {
          GPUSCHED_ASSERT(m.layout.can_place(geo, inst.profile, inst.start), "static MIG layout is not legal (validate it first)");
          m.layout.place(geo, inst.profile, inst.start);
        }
        gs.mig = static_cast<std::int32_t>(migs_.size());
        migs_.push_back(std::move(m));
      }
      gpus_.push_back(gs);
      if (g.model != s.model) s.model = GpuModelId{};
    }
    numa_begin_.push_back(static_cast<std::uint32_t>(numa_cpu_free_.size()));
    if (spec.numa.empty()) {
      numa_cpu_free_.push_back(spec.cpu_milli);
      numa_memory_free_.push_back(spec.memory_mib);
    } else {
      for (const auto& z : spec.numa) {
        numa_cpu_free_.push_back(z.cpu_milli);
        numa_memory_free_.push_back(z.memory_mib);
      }
    }
    s.tpu_chips_free = spec.tpu.chips;
    totals_.tpu_chips += spec.tpu.chips;
    for (const auto& [id, amount] : spec.extended) {
      GPUSCHED_ASSERT(id.value < nres, "extended resource not interned");
      extended_free_[i * nres + id.value] += amount;
    }
    s.plain_gpus = std::all_of(spec.gpus.begin(), spec.gpus.end(),
                               [](const GpuSpec& g) { return g.partition == GpuPartition::kWhole; });   // fixed
    refresh_gpu_aggregates(s, spec);
    totals_.cpu_milli += spec.cpu_milli;
    totals_.memory_mib += spec.memory_mib;
    totals_.gpus += s.gpu_count;
    totals_.gpu_milli += std::int64_t{s.gpu_count} * kMilliPerGpu;
    max_capacity_.cpu_free_milli = std::max(max_capacity_.cpu_free_milli, s.cpu_free_milli);
    max_capacity_.memory_free_mib = std::max(max_capacity_.memory_free_mib, s.memory_free_mib);
    max_capacity_.gpu_count = std::max(max_capacity_.gpu_count, s.gpu_count);
    max_capacity_.whole_units_free = std::max(max_capacity_.whole_units_free, s.whole_units_free);
    max_capacity_.tpu_chips_free = std::max(max_capacity_.tpu_chips_free, s.tpu_chips_free);
    max_capacity_.gpu_milli_free = std::max(max_capacity_.gpu_milli_free, s.gpu_milli_free);
    max_capacity_.gpu_memory_free_max = std::max(max_capacity_.gpu_memory_free_max, s.gpu_memory_free_max);
    by_name->emplace(spec.name, NodeId{static_cast<std::uint32_t>(i)});
    nodes_.push_back(s);
  }
  by_name_ = std::move(by_name);
}

void ClusterState::refresh_gpu_aggregates(NodeState& s, const NodeSpec& spec) {
  const bool single = spec.mig_strategy == MigStrategy::kSingle;
  std::uint16_t free_whole = 0;
  std::int32_t units = 0;
  std::int32_t milli_sum = 0, milli_max = 0;
  std::int64_t mem_max = 0, mem_sum = 0;
  for (std::uint32_t i = s.gpu_begin; i < s.gpu_begin + s.gpu_count; ++i) {
    const auto& g = gpus_[i];
    free_whole = static_cast<std::uint16_t>(free_whole + (g.fully_free() ? 1 : 0));
    switch (g.partition) {
      case GpuPartition::kWhole: units += g.fully_free() ? 1 : 0; break;
      case GpuPartition::kTimeSlicing:
      case GpuPartition::kMps: units += replica_units(g, options_.replica_allocation); break;
      case GpuPartition::kMig:
        if (single) units += migs_[static_cast<std::size_t>(g.mig)].free_count();
        break;
      default: break;
    }
    milli_sum += g.milli_free;
    milli_max = std::max(milli_max, g.milli_free);
    mem_max = std::max(mem_max, g.memory_free_mib);
    mem_sum += g.memory_free_mib;
  }
  s.gpu_memory_free = mem_sum;
  s.whole_units_free = static_cast<std::uint16_t>(std::min<std::int32_t>(units, 0xFFFF));   // saturates
  s.gpus_fully_free = free_whole;
  s.gpu_milli_free = milli_sum;
  s.gpu_milli_free_max = milli_max;
  s.gpu_memory_free_max = mem_max;
}

std::int64_t ClusterState::extended_free(NodeId n, ResourceId r) const {
  return extended_free_[n.value * resources_->size() + r.value];
}

std::optional<NodeId> ClusterState::find_node(std::string_view name) const {
  if (!by_name_) return std::nullopt;   // moved from
  if (auto it = by_name_->find(std::string(name)); it != by_name_->end()) return it->second;
  return std::nullopt;
}

namespace {
constexpr int kNibble = 4;
std::uint32_t destroyed_code(std::uint32_t code, const MigInstance& i) {
  return code | (static_cast<std::uint32_t>(i.profile + 1) << (kNibble * i.start));
}
template <class Fn>
void for_each_destroyed(std::uint32_t code, Fn fn) {
  for (int start = 0; code != 0; ++start, code >>= kNibble) {
    if (const auto v = static_cast<int>(code & 0xFU); v != 0) fn(MigInstance{v - 1, start});
  }
}
/// The grant of GI (profile, start) on GPU `index`: its share of compute and its memory.
GpuGrant mig_grant(std::uint16_t index, const MigGeometry& geo, int profile, int start) {
  const auto& prof = geo.profiles[static_cast<std::size_t>(profile)];
  GpuGrant g{index, kMilliPerGpu * prof.compute_slices / geo.compute_slices, prof.memory_mib};
  g.mig_profile = static_cast<std::int8_t>(profile);
  g.mig_start = static_cast<std::int8_t>(start);
  return g;
}
/// Applies a grant to a scratch copy of a GPU's MIG state (what allocate() would do to it).
void apply_mig_grant(MigGpuState& m, const MigGeometry& geo, const GpuGrant& g) {
  for_each_destroyed(g.mig_destroyed, [&](const MigInstance& i) { m.layout.remove(geo, i.profile, i.start); });
  if (g.mig_created) m.layout.place(geo, g.mig_profile, g.mig_start);
  m.busy = static_cast<std::uint8_t>(m.busy | (1U << g.mig_start));
}
std::optional<int> default_chooser(const MigGeometry& g, const MigLayout& l, int p) {
  return choose_start(g, l, p, MigStartPolicy::kBest);
}
/// A pre-provisioned TPU pool is labelled with its one slice topology, and GKE matches the
/// workload's topology selector to that label exactly: a request naming another topology (a
/// one-host 2x2x1 on a 2x2x4 pool, say) does not select its hosts.
bool tpu_topology_mismatch(const TpuHostSpec& t, const TpuRequest& r) {
  return !r.topology.empty() && t.provisioned && !t.pool_topology.empty() && t.pool_topology != r.topology;
}
}  // namespace

bool ClusterState::fits_empty(NodeId n, const TaskRequest& r) const {
  const auto& spec = specs_[n.value];
  if (spec.cpu_milli < r.cpu_milli || spec.memory_mib < r.memory_mib) return false;
  for (const auto& [id, amount] : r.extended) {
    std::int64_t cap = 0;
    for (const auto& [eid, eamount] : spec.extended) if (eid == id) cap += eamount;
    if (cap < amount) return false;
  }
  if (r.tpu.chips > 0 && (spec.tpu.chips < r.tpu.chips || (!r.tpu.generation.empty() && spec.tpu.generation != r.tpu.generation) ||
                          tpu_topology_mismatch(spec.tpu, r.tpu))) {
    return false;
  }
  std::int32_t usable = 0;
  for (const auto& g : spec.gpus) {
    if (!r.model_allowed(g.model)) continue;
    const auto& model = (*catalog_)[g.model];
    switch (r.gpu.mode) {
      case GpuMode::kNone: break;
      case GpuMode::kWhole:
        if (is_replicated(g.partition)) {
          // failRequestsGreaterThanOne is not checked here: kube-scheduler places such a pod and
          // the plugin's Allocate refuses it, so it stays pending with that reason (fit_check's
          // kReplicaRequestTooLarge) rather than stopping the run as an impossible input.
          if (spec.sharing.rename_by_default != r.gpu.shared_name) break;
          usable += options_.replica_allocation == ReplicaAllocation::kDevicePlugin ? std::max<std::int32_t>(1, g.replicas) : 1;
        } else if (r.gpu.shared_name) {
          break;   // nvidia.com/gpu.shared is only advertised for replicas
        } else if (g.partition == GpuPartition::kWhole) {
          ++usable;
        } else if (g.partition == GpuPartition::kMig && spec.mig_strategy == MigStrategy::kSingle) {
          usable += static_cast<std::int32_t>(g.mig.size());
        }
        break;
      case GpuMode::kShared:
        if (g.partition == GpuPartition::kWhole &&
            (r.gpu.memory_mib == kAllGpuMemory || model.memory_mib >= r.gpu.memory_mib)) ++usable;
        if (g.partition == GpuPartition::kMps) {
          GpuState empty;
          empty.memory_mib = model.memory_mib;
          empty.replicas = std::max<std::uint16_t>(1, g.replicas);
          if (mps_share_within_limits(empty, r.gpu)) ++usable;
        }
        break;
      case GpuMode::kMig: {
        // The single strategy advertises GIs only as nvidia.com/gpu, never as nvidia.com/mig-<profile>.
        if (g.partition != GpuPartition::kMig || spec.mig_strategy == MigStrategy::kSingle) break;
        const int p = r.gpu.profile_index(g.model);
        if (p < 0) break;
        if (spec.mig_dynamic) usable += model.mig->profiles[static_cast<std::size_t>(p)].max_count;
        else for (const auto& i : g.mig) usable += i.profile == p ? 1 : 0;
        break;
      }
      case GpuMode::kVgpu: {
        const int p = r.gpu.profile_index(g.model);
        if (g.partition == GpuPartition::kVgpu && p >= 0 && (g.vgpu_profile < 0 || g.vgpu_profile == p)) ++usable;
        break;
      }
      case GpuMode::kPassthrough:
        if (g.partition == GpuPartition::kPassthrough) ++usable;
        break;
    }
  }
  return r.gpu.mode == GpuMode::kNone || usable >= r.gpu.count;
}

int ClusterState::gpu_units(NodeId node, const GpuState& g, const TaskRequest& r) const {
  if (!r.model_allowed(g.model)) return 0;
  switch (r.gpu.mode) {
    case GpuMode::kNone: return 0;
    case GpuMode::kWhole:
      switch (g.partition) {
        case GpuPartition::kWhole: return g.fully_free() && !r.gpu.shared_name ? 1 : 0;
        case GpuPartition::kTimeSlicing:
        case GpuPartition::kMps: return free_replicas(node, g, r);
        case GpuPartition::kMig:
          return specs_[node.value].mig_strategy == MigStrategy::kSingle && !r.gpu.shared_name ? mig_state(g).free_count() : 0;
        default: return 0;
      }
    case GpuMode::kShared: return gpu_fits_shared(g, r.gpu) ? 1 : 0;
    case GpuMode::kMig: {
      if (g.partition != GpuPartition::kMig || specs_[node.value].mig_strategy == MigStrategy::kSingle) return 0;
      const int p = r.gpu.profile_index(g.model);
      if (p < 0) return 0;
      const auto& m = mig_state(g);
      const int idle = m.free_of(p);
      if (idle >= r.gpu.count || !specs_[node.value].mig_dynamic) return idle;
      const auto& geo = mig_geometry(g);
      if (geo.reconfigure_requires_idle && m.busy != 0) return idle;
      if (r.gpu.count == 1) {
        // One GI: a free legal start now, or one once every idle GI is gone. No copies.
        const auto& prof = geo.profiles[static_cast<std::size_t>(p)];
        if (kMilliPerGpu * prof.compute_slices / geo.compute_slices > g.milli_free) return idle;
        for (int st : prof.starts) if (m.layout.can_place(geo, p, st)) return 1;
        if (m.busy == 0) return m.layout.empty() ? 0 : 1;   // destroying every idle GI leaves an empty GPU
        MigLayout busy_only;
        for (const auto& i : m.layout.instances()) if (m.busy_at(i.start)) busy_only.place(geo, i.profile, i.start);
        for (int st : prof.starts) if (busy_only.can_place(geo, p, st)) return 1;
        return 0;
      }
      // Dynamic: count what could be created too (on a scratch copy).
      MigGpuState copy = m;
      int n = 0;
      const auto index = static_cast<std::uint16_t>(&g - gpus_.data() - nodes_[node.value].gpu_begin);
      while (n < r.gpu.count) {
        auto o = mig_option(node, index, r, default_chooser, &copy);
        if (!o) break;
        apply_mig_grant(copy, geo, o->grant);
        ++n;
      }
      return n;
    }
    case GpuMode::kVgpu: {
      if (g.partition != GpuPartition::kVgpu) return 0;
      const int p = r.gpu.profile_index(g.model);
      if (p < 0 || (g.vgpu_profile >= 0 && g.vgpu_profile != p)) return 0;
      return g.tasks < (*catalog_)[g.model].vgpu[static_cast<std::size_t>(p)].max_per_gpu ? 1 : 0;
    }
    case GpuMode::kPassthrough: return g.partition == GpuPartition::kPassthrough && g.fully_free() ? 1 : 0;
  }
  return 0;
}

GpuGrant ClusterState::mig_instance_grant(std::uint16_t index, const MigGeometry& geo, int profile, int start) {
  return mig_grant(index, geo, profile, start);
}

GpuGrant ClusterState::unit_grant(NodeId node, std::uint16_t index, const TaskRequest& r) const {
  const auto& g = gpus_[nodes_[node.value].gpu_begin + index];
  GPUSCHED_ASSERT(g.partition != GpuPartition::kMig, "MIG grants come from mig_option()");
  GpuGrant out{index, kMilliPerGpu, g.memory_mib};
  switch (r.gpu.mode) {
    case GpuMode::kShared:
      if (g.partition == GpuPartition::kMps) {   // one MPS client: its limits are what it holds
        out.milli = mps_client_milli(g);
        out.memory_mib = mps_client_memory_mib(g);
        break;
      }
      out.milli = r.gpu.milli;
      out.memory_mib = r.gpu.memory_mib == kAllGpuMemory ? g.memory_mib : r.gpu.memory_mib;
      break;
    case GpuMode::kVgpu: {
      const auto p = r.gpu.profile_index(g.model);
      const auto& v = (*catalog_)[g.model].vgpu[static_cast<std::size_t>(p)];
      out.milli = kMilliPerGpu / v.max_per_gpu;
      // NVIDIA states framebuffers nominally (L4-24C = 24576 MiB), above the usable memory_mib of the
      // GPU (L4: 23034): a vGPU gets at most its share of what the GPU has (issue 15).
      out.memory_mib = std::min(v.framebuffer_mib, g.memory_mib / v.max_per_gpu);
      out.vgpu_profile = static_cast<std::int16_t>(p);
      break;
    }
    case GpuMode::kWhole:
      if (g.partition == GpuPartition::kTimeSlicing) {
        out.milli = kMilliPerGpu / g.replicas;
        out.memory_mib = 0;   // no memory isolation: nothing is set aside
      } else if (g.partition == GpuPartition::kMps) {
        out.milli = mps_client_milli(g);
        out.memory_mib = mps_client_memory_mib(g);
      }
      break;
    default: break;
  }
  return out;
}

std::optional<ClusterState::MigOption> ClusterState::mig_option(NodeId node, std::uint16_t index, const TaskRequest& r,
                                                                MigStartChooser choose, const MigGpuState* layout,
                                                                bool allow_create) const {
  const auto& g = gpus_[nodes_[node.value].gpu_begin + index];
  if (g.partition != GpuPartition::kMig || !r.model_allowed(g.model) || specs_[node.value].mig_strategy == MigStrategy::kSingle) {
    return std::nullopt;
  }
  const int p = r.gpu.profile_index(g.model);
  if (p < 0) return std::nullopt;
  const auto& geo = mig_geometry(g);
  const auto& m = layout ? *layout : mig_state(g);
  const auto& prof = geo.profiles[static_cast<std::size_t>(p)];
  MigOption o;
  o.grant = mig_grant(index, geo, p, -1);
  for (const auto& i : m.layout.instances()) {
    if (i.profile == p && !m.busy_at(i.start)) {
      o.grant.mig_start = static_cast<std::int8_t>(i.start);
      return o;
    }
  }
  if (!allow_create || !specs_[node.value].mig_dynamic || (geo.reconfigure_requires_idle && m.busy != 0)) return std::nullopt;
  o.grant.mig_created = true;
  if (auto s = choose ? choose(geo, m.layout, p) : default_chooser(geo, m.layout, p)) {
    o.grant.mig_start = static_cast<std::int8_t>(*s);
    return o;
  }
  // Make room by destroying idle GIs: the start that needs the fewest, ties in the chooser's
  // preferred order on the busy-only layout, then ascending.
  MigLayout busy_only;
  for (const auto& i : m.layout.instances()) if (m.busy_at(i.start)) busy_only.place(geo, i.profile, i.start);
  std::vector<int> starts;
  if (auto pref = choose ? choose(geo, busy_only, p) : default_chooser(geo, busy_only, p)) starts.push_back(*pref);
  for (int st : prof.starts) if (starts.empty() || st != starts.front()) starts.push_back(st);
  std::optional<MigOption> best;
  for (int st : starts) {
    if (!busy_only.can_place(geo, p, st)) continue;
    MigLayout l = m.layout;
    std::uint32_t code = 0;
    int destroyed = 0;
    const auto lo = st, hi = st + prof.memory_slices;
    for (const auto& i : m.layout.instances()) {
      const auto& ip = geo.profiles[static_cast<std::size_t>(i.profile)];
      if (!m.busy_at(i.start) && i.start < hi && i.start + ip.memory_slices > lo) {
        l.remove(geo, i.profile, i.start);
        code = destroyed_code(code, i);
        ++destroyed;
      }
    }
    while (!l.can_place(geo, p, st)) {   // compute, max_count or +me limits: drop the biggest idle GI
      const MigInstance* victim = nullptr;
      for (const auto& i : l.instances()) {
        if (m.busy_at(i.start)) continue;
        if (!victim || geo.profiles[static_cast<std::size_t>(i.profile)].compute_slices >
                           geo.profiles[static_cast<std::size_t>(victim->profile)].compute_slices) victim = &i;
      }
      if (!victim) break;
      const MigInstance v = *victim;
      l.remove(geo, v.profile, v.start);
      code = destroyed_code(code, v);
      ++destroyed;
    }
    if (!l.can_place(geo, p, st)) continue;
    if (!best || destroyed < best->destroyed) {
      best = o;
      best->grant.mig_start = static_cast<std::int8_t>(st);
      best->grant.mig_destroyed = code;
      best->destroyed = destroyed;
    }
  }
  return best;
}

bool ClusterState::pick_units(NodeId node, const TaskRequest& r, std::span<const std::uint16_t> order, MigStartChooser choose,
                              std::vector<GpuGrant>& out) const {
  out.clear();
  const auto& s = nodes_[node.value];
  std::vector<std::optional<MigGpuState>> copies;   // MIG: per GPU, the layout as this task changes it
  bool create = false;
  auto visit = [&](std::uint16_t index) {
    const auto& g = gpus_[s.gpu_begin + index];
    if (r.gpu.mode == GpuMode::kMig) {
      if (g.partition != GpuPartition::kMig) return;
      if (copies.empty()) copies.resize(s.gpu_count);
      auto& copy = copies[index];
      if (!copy) copy = mig_state(g);
      const auto& geo = mig_geometry(g);
      while (static_cast<std::int32_t>(out.size()) < r.gpu.count) {
        auto o = mig_option(node, index, r, choose, &*copy, create);
        if (!o) break;
        apply_mig_grant(*copy, geo, o->grant);
        out.push_back(o->grant);
      }
      return;
    }
    if (r.gpu.mode == GpuMode::kWhole && g.partition == GpuPartition::kMig) {   // single strategy: idle GIs
      if (specs_[node.value].mig_strategy != MigStrategy::kSingle || !r.model_allowed(g.model)) return;
      const auto& m = mig_state(g);
      const auto& geo = mig_geometry(g);
      for (const auto& i : m.layout.instances()) {
        if (static_cast<std::int32_t>(out.size()) >= r.gpu.count) return;
        if (!m.busy_at(i.start)) out.push_back(mig_grant(index, geo, i.profile, i.start));
      }
      return;
    }
    if (r.gpu.mode == GpuMode::kWhole && is_replicated(g.partition) && options_.replica_allocation == ReplicaAllocation::kDevicePlugin) {
      return;   // the device plugin's choice, below
    }
    if (gpu_units(node, g, r) > 0) out.push_back(unit_grant(node, index, r));
  };
  auto pass = [&] {
    if (order.empty()) {
      for (std::uint16_t i = 0; i < s.gpu_count && static_cast<std::int32_t>(out.size()) < r.gpu.count; ++i) visit(i);
    } else {
      for (auto i : order) {
        if (static_cast<std::int32_t>(out.size()) >= r.gpu.count) break;
        visit(i);
      }
    }
  };
  pass();
  if (r.gpu.mode == GpuMode::kWhole && options_.replica_allocation == ReplicaAllocation::kDevicePlugin &&
      static_cast<std::int32_t>(out.size()) < r.gpu.count) {
    // Replicas as the NVIDIA device plugin's default `distributed` policy hands them out
    // (internal/rm/allocate.go): one at a time, from the GPU with the fewest replicas allocated
    // (this task's picks included), then the fewest picked for this task, then `order`.
    struct Candidate {
      std::uint16_t index;
      int free, allocated, picked = 0;
    };
    std::vector<Candidate> cands;
    auto add = [&](std::uint16_t i) {
      const auto& g = gpus_[s.gpu_begin + i];
      if (!is_replicated(g.partition)) return;
      if (const int f = free_replicas(node, g, r); f > 0) cands.push_back({i, f, int{g.tasks}});
    };
    if (order.empty()) {
      for (std::uint16_t i = 0; i < s.gpu_count; ++i) add(i);
    } else {
      for (auto i : order) add(i);
    }
    while (static_cast<std::int32_t>(out.size()) < r.gpu.count) {
      Candidate* best = nullptr;
      for (auto& c : cands) {
        if (c.free == 0) continue;
        if (!best || std::pair(c.allocated, c.picked) < std::pair(best->allocated, best->picked)) best = &c;
      }
      if (!best) break;
      out.push_back(unit_grant(node, best->index, r));
      --best->free;
      ++best->allocated;
      ++best->picked;
    }
  }
  if (r.gpu.mode == GpuMode::kMig && static_cast<std::int32_t>(out.size()) < r.gpu.count && specs_[node.value].mig_dynamic) {
    create = true;
    pass();
  }
  return static_cast<std::int32_t>(out.size()) >= r.gpu.count;
}

void ClusterState::set_device_options(const DeviceOptions& o) {
  const bool refresh = o.replica_allocation != options_.replica_allocation;
  options_ = o;
  if (!refresh) return;
  max_capacity_.whole_units_free = 0;
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    auto& s = nodes_[i];
    refresh_gpu_aggregates(s, specs_[i]);
    changed(static_cast<std::uint32_t>(i));
    // The largest node as built: its units when empty (a running task's replicas count too).
    std::int32_t units = 0;
    for (const auto& g : gpus(NodeId{static_cast<std::uint32_t>(i)})) {
      if (is_replicated(g.partition)) units += o.replica_allocation == ReplicaAllocation::kDevicePlugin ? g.replicas : 1;
      else if (g.partition == GpuPartition::kWhole) units += 1;
      else if (g.partition == GpuPartition::kMig && specs_[i].mig_strategy == MigStrategy::kSingle) units += static_cast<std::int32_t>(specs_[i].gpus[static_cast<std::size_t>(&g - gpus_.data() - s.gpu_begin)].mig.size());
    }
    max_capacity_.whole_units_free = std::max(max_capacity_.whole_units_free, static_cast<std::uint16_t>(std::min<std::int32_t>(units, 0xFFFF)));
  }
}

int ClusterState::free_replicas(NodeId node, const GpuState& g, const TaskRequest& r) const {
  if (!is_replicated(g.partition) || !r.model_allowed(g.model)) return 0;
  if (specs_[node.value].sharing.rename_by_default != r.gpu.shared_name) return 0;
  return replica_units(g, options_.replica_allocation);
}

std::optional<std::pair<std::int64_t, std::int64_t>> ClusterState::kube_gpu_counts(NodeId n, const TaskRequest& r) const {
  if (nodes_[n.value].plain_gpus || r.gpu.mode != GpuMode::kWhole || r.gpu.shared_name ||
      options_.replica_allocation != ReplicaAllocation::kDevicePlugin || specs_[n.value].sharing.rename_by_default) {
    return std::nullopt;
  }
  bool replicated = false;
  std::int64_t allocatable = 0, requested = r.gpu.count;
  for (const auto& g : gpus(n)) {
    if (is_replicated(g.partition)) {
      replicated = true;
      allocatable += g.replicas;
      requested += g.tasks;
    } else if (g.partition == GpuPartition::kWhole) {
      allocatable += 1;
      requested += g.fully_free() ? 0 : 1;
    }
  }
  if (!replicated) return std::nullopt;
  return std::pair{allocatable, requested};
}

bool ClusterState::fails_above_one(NodeId n, GpuPartition p) const {
  if (options_.replica_allocation != ReplicaAllocation::kDevicePlugin || !is_replicated(p)) return false;
  return specs_[n.value].sharing.fail_requests_greater_than_one.value_or(p == GpuPartition::kMps);
}

std::int64_t ClusterState::numa_cpu_free(NodeId n, int socket) const {
  return std::min(numa_cpu_free_[numa_begin_[n.value] + static_cast<std::uint32_t>(socket)], nodes_[n.value].cpu_free_milli);
}
std::int64_t ClusterState::numa_memory_free(NodeId n, int socket) const {
  return std::min(numa_memory_free_[numa_begin_[n.value] + static_cast<std::uint32_t>(socket)], nodes_[n.value].memory_free_mib);
}

const Topology& ClusterState::topology(NodeId n) const {
  if (topologies_.empty()) topologies_.resize(specs_.size());
  auto& t = topologies_[n.value];
  if (!t) {
    // Nodes of one group share a shape: key by everything Topology reads.
    const auto& spec = specs_[n.value];
    std::string key = std::to_string(spec.numa.size()) + ";";
    for (const auto& g : spec.gpus) key += std::to_string(g.socket) + "," + std::to_string(g.pcie_switch) + "," + std::to_string(g.nvlink_domain) + ";";
    for (const auto& l : spec.nvlinks) key += std::to_string(l.a) + "-" + std::to_string(l.b) + "x" + std::to_string(l.links) + ";";
    auto& shared = topology_by_shape_[key];
    if (!shared) shared = std::make_shared<const Topology>(spec);
    t = shared;
  }
  return *t;
}

double ClusterState::placement_slowdown(const TaskRequest&, const TaskPlacement& p) const {
  double f = 1.0;
  const auto& s = nodes_[p.node.value];
  for (const auto& grant : p.gpus) {
    switch (gpus_[s.gpu_begin + grant.index].partition) {
      case GpuPartition::kVgpu: f = std::max(f, options_.vgpu_slowdown); break;
      case GpuPartition::kPassthrough: f = std::max(f, options_.passthrough_slowdown); break;
      case GpuPartition::kMig: f = std::max(f, options_.mig_slowdown); break;
      default: break;
    }
  }
  if ((p.gpus.size() > 1 || !p.numa.empty()) && (options_.pcie_slowdown != 1.0 || options_.cross_socket_slowdown != 1.0)) {
    std::vector<int> gpus, sockets;
    for (const auto& g : p.gpus) {
      if (std::find(gpus.begin(), gpus.end(), g.index) == gpus.end()) gpus.push_back(g.index);
    }
    for (const auto& z : p.numa) sockets.push_back(z.socket);
    f *= topology(p.node).slowdown(gpus, sockets, TopologySlowdown{options_.pcie_slowdown, options_.cross_socket_slowdown});
  }
  return f;
}

FitResult ClusterState::fit_check(NodeId n, const TaskRequest& r) const {
  const auto& s = nodes_[n.value];
  if (!s.schedulable) return FitResult::kUnschedulable;
  if (s.cpu_free_milli < r.cpu_milli) return FitResult::kCpu;
  if (s.memory_free_mib < r.memory_mib) return FitResult::kMemory;
  for (const auto& [id, amount] : r.extended) {
    if (extended_free(n, id) < amount) return FitResult::kExtended;
  }
  if (r.tpu.chips > 0) {
    const auto& t = specs_[n.value].tpu;
    if (s.tpu_chips_free < r.tpu.chips || (!r.tpu.generation.empty() && t.generation != r.tpu.generation) ||
        tpu_topology_mismatch(t, r.tpu)) {
      return FitResult::kTpu;
    }
  }
  switch (r.gpu.mode) {
    case GpuMode::kNone:
      return FitResult::kFits;
    case GpuMode::kWhole: {
      if (!s.plain_gpus && r.gpu.count > 1 && options_.replica_allocation == ReplicaAllocation::kDevicePlugin) {
        // The plugin's Allocate fails such a request outright (kubelet admission), whatever is free.
        for (const auto& g : gpus(n)) {
          if (is_replicated(g.partition) && r.model_allowed(g.model) && specs_[n.value].sharing.rename_by_default == r.gpu.shared_name &&
              fails_above_one(n, g.partition)) {
            return FitResult::kReplicaRequestTooLarge;
          }
        }
      }
      if (s.whole_units_free < r.gpu.count) return FitResult::kGpuCount;
      if (s.plain_gpus) {
        // The common case: no partitioned GPU, units are free GPUs (and no replicas for nvidia.com/gpu.shared).
        if (r.gpu.shared_name) return FitResult::kGpuCount;
        if (r.any_model()) return FitResult::kFits;
        if (s.model.valid()) return r.model_allowed(s.model) ? FitResult::kFits : FitResult::kGpuModel;
      }
      std::int32_t ok = 0, any = 0;
      for (const auto& g : gpus(n)) {
        const int u = gpu_units(n, g, r);
        ok += u;
        if (!r.model_allowed(g.model)) continue;
        any += 1;
      }
      if (ok >= r.gpu.count) return FitResult::kFits;
      return any == 0 ? FitResult::kGpuModel : FitResult::kGpuCount;
    }
    case GpuMode::kShared: {
      if (s.model.valid() && !r.model_allowed(s.model)) return FitResult::kGpuModel;
      const auto mem = r.gpu.memory_mib == kAllGpuMemory ? 0 : r.gpu.memory_mib;
      if (s.gpu_milli_free_max < r.gpu.milli || s.gpu_memory_free_max < mem) return FitResult::kGpuShare;
      std::int32_t ok = 0;
      bool mps_limit = false, mps_above_one = false;
      for (const auto& g : gpus(n)) {
        if (g.partition == GpuPartition::kMps && r.model_allowed(g.model)) {
          mps_limit = mps_limit || !mps_share_within_limits(g, r.gpu);
          if (r.gpu.count > 1 && fails_above_one(n, g.partition)) {   // this MPS GPU refuses; others may serve
            mps_above_one = true;
            continue;
          }
        }
        if (gpu_fits_shared(g, r.gpu) && r.model_allowed(g.model) && ++ok >= r.gpu.count) return FitResult::kFits;
      }
      if (mps_above_one) return FitResult::kReplicaRequestTooLarge;
      return mps_limit ? FitResult::kMpsClientLimit : FitResult::kGpuShare;
    }
    case GpuMode::kMig:
    case GpuMode::kVgpu:
    case GpuMode::kPassthrough: {
      if (r.gpu.mode == GpuMode::kMig && s.model.valid()) {
        // Idle GIs hold no compute share, so a GI of the profile (idle or new) needs that much
        // free compute on one GPU: most nodes are rejected here without looking at layouts.
        const int p = r.gpu.profile_index(s.model);
        if (p < 0 || !(*catalog_)[s.model].mig) return FitResult::kMig;
        const auto& geo = *(*catalog_)[s.model].mig;
        if (kMilliPerGpu * geo.profiles[static_cast<std::size_t>(p)].compute_slices / geo.compute_slices > s.gpu_milli_free_max) {
          return FitResult::kMig;
        }
      }
      std::int32_t ok = 0;
      for (const auto& g : gpus(n)) {
        ok += gpu_units(n, g, r);
        if (ok >= r.gpu.count) return FitResult::kFits;
      }
      return r.gpu.mode == GpuMode::kMig ? FitResult::kMig : r.gpu.mode == GpuMode::kVgpu ? FitResult::kVgpu : FitResult::kPassthrough;
    }
  }
  return FitResult::kGpuShare;
}

void ClusterState::take_gpu(NodeState& s, const GpuGrant& grant) {
  GPUSCHED_ASSERT(grant.index < s.gpu_count, "GPU index out of range");
  auto& g = gpus_[s.gpu_begin + grant.index];
  g.milli_free -= grant.milli;
  g.memory_free_mib -= grant.memory_mib;
  ++g.tasks;
  GPUSCHED_ASSERT(g.milli_free >= 0 && g.memory_free_mib >= 0, "GPU over-committed");
  switch (g.partition) {
    case GpuPartition::kTimeSlicing:
    case GpuPartition::kMps: GPUSCHED_ASSERT(g.tasks <= g.replicas, "more sharers than replicas"); break;
    case GpuPartition::kPassthrough:
    case GpuPartition::kWhole:
      // share_fits(): a grant of all the compute (a whole GPU, HAMi gpucores 100) needs an idle GPU.
      GPUSCHED_ASSERT(grant.milli < kMilliPerGpu || g.tasks == 1, "a whole GPU given twice");
      break;
    case GpuPartition::kVgpu: {
      GPUSCHED_ASSERT(grant.vgpu_profile >= 0 && (g.vgpu_profile < 0 || g.vgpu_profile == grant.vgpu_profile),
                      "vGPU profiles mixed on one GPU");
      g.vgpu_profile = grant.vgpu_profile;
      GPUSCHED_ASSERT(g.tasks <= (*catalog_)[g.model].vgpu[static_cast<std::size_t>(grant.vgpu_profile)].max_per_gpu, "too many vGPUs on one GPU");
      break;
    }
    case GpuPartition::kMig: {
      GPUSCHED_ASSERT(grant.mig_profile >= 0 && grant.mig_start >= 0, "a MIG GPU granted without a GPU instance");
      auto& m = migs_[static_cast<std::size_t>(g.mig)];
      const auto& geo = mig_geometry(g);
      if (restore_) {   // undo_release(): the GI release() left idle is taken again, nothing else
        const bool there = std::any_of(m.layout.instances().begin(), m.layout.instances().end(), [&](const MigInstance& i) {
          return i.start == grant.mig_start && i.profile == grant.mig_profile;
        });
        GPUSCHED_ASSERT(there, "restored a GPU instance that is gone");
        GPUSCHED_ASSERT(!m.busy_at(grant.mig_start), "a GPU instance given twice");
        m.busy = static_cast<std::uint8_t>(m.busy | (1U << grant.mig_start));
        break;
      }
      for_each_destroyed(grant.mig_destroyed, [&](const MigInstance& i) {
        if (m.layout.remove(geo, i.profile, i.start)) ++totals_.mig_reconfigurations;
        GPUSCHED_ASSERT(!m.busy_at(i.start), "destroyed a busy GPU instance");
      });
      const bool exists = std::any_of(m.layout.instances().begin(), m.layout.instances().end(), [&](const MigInstance& i) {
        return i.start == grant.mig_start && i.profile == grant.mig_profile;
      });
      if (!exists) {
        GPUSCHED_ASSERT(grant.mig_created, "took a GPU instance that does not exist");
        m.layout.place(geo, grant.mig_profile, grant.mig_start);
        ++totals_.mig_reconfigurations;
      }
      GPUSCHED_ASSERT(!m.busy_at(grant.mig_start), "a GPU instance given twice");
      m.busy = static_cast<std::uint8_t>(m.busy | (1U << grant.mig_start));
      break;
    }
  }
}

void ClusterState::give_gpu(NodeState& s, const GpuGrant& grant, bool undo) {
  auto& g = gpus_[s.gpu_begin + grant.index];
  GPUSCHED_ASSERT(g.tasks > 0, "released a GPU grant that was not taken");
  g.milli_free += grant.milli;
  g.memory_free_mib += grant.memory_mib;
  --g.tasks;
  GPUSCHED_ASSERT(g.milli_free <= kMilliPerGpu && g.memory_free_mib <= g.memory_mib, "GPU released twice");
  if (g.partition == GpuPartition::kVgpu && g.tasks == 0 && !g.vgpu_fixed) g.vgpu_profile = -1;
  if (g.partition == GpuPartition::kMig) {
    auto& m = migs_[static_cast<std::size_t>(g.mig)];
    GPUSCHED_ASSERT(m.busy_at(grant.mig_start), "released a GPU instance that was not taken");
    m.busy = static_cast<std::uint8_t>(m.busy & ~(1U << grant.mig_start));
    if (undo) {   // exact inverse: remove what was created, recreate what was destroyed
      const auto& geo = mig_geometry(g);
      if (grant.mig_created) {
        m.layout.remove(geo, grant.mig_profile, grant.mig_start);
        --totals_.mig_reconfigurations;
      }
      for_each_destroyed(grant.mig_destroyed, [&](const MigInstance& i) {
        m.layout.place(geo, i.profile, i.start);
        --totals_.mig_reconfigurations;
      });
    }
  }
}

void ClusterState::apply_numa(NodeId n, const TaskPlacement& p, int sign) {
  for (const auto& z : p.numa) {
    const auto i = numa_begin_[n.value] + static_cast<std::uint32_t>(z.socket);
    numa_cpu_free_[i] -= sign * z.cpu_milli;
    numa_memory_free_[i] -= sign * z.memory_mib;
    GPUSCHED_ASSERT(numa_cpu_free_[i] >= 0 && numa_memory_free_[i] >= 0, "NUMA node over-committed");
  }
}

void ClusterState::allocate(const TaskRequest& r, const TaskPlacement& p) {
  GPUSCHED_ASSERT(p.node.valid() && p.node.value < nodes_.size(), "placement on an unknown node");
  auto& s = nodes_[p.node.value];
  const std::uint16_t busy_before = static_cast<std::uint16_t>(s.gpu_count - s.gpus_fully_free);
  s.cpu_free_milli -= r.cpu_milli;
  s.memory_free_mib -= r.memory_mib;
  GPUSCHED_ASSERT(s.cpu_free_milli >= 0 && s.memory_free_mib >= 0, "CPU or memory over-committed");
  const std::size_t nres = resources_->size();
  for (const auto& [id, amount] : r.extended) {
    auto& f = extended_free_[p.node.value * nres + id.value];
    f -= amount;
    GPUSCHED_ASSERT(f >= 0, "extended resource over-committed");
  }
  s.tpu_chips_free -= p.tpu_chips;
  GPUSCHED_ASSERT(s.tpu_chips_free >= 0, "TPU chips over-committed");
  GPUSCHED_ASSERT((s.nics_busy & p.nics) == 0, "a NIC handed out twice");
  GPUSCHED_ASSERT(static_cast<std::size_t>(std::bit_width(p.nics)) <= specs_[p.node.value].nics.size(), "a NIC the node does not have");
  s.nics_busy |= p.nics;
  apply_numa(p.node, p, +1);
  std::int64_t milli = 0;
  for (const auto& grant : p.gpus) {
    take_gpu(s, grant);
    milli += grant.milli;
  }
  refresh_gpu_aggregates(s, specs_[p.node.value]);
  ++s.tasks;
  if (r.cpu_milli == 0) ++s.tasks_without_cpu;
  if (r.memory_mib == 0) ++s.tasks_without_memory;
  changed(p.node.value);
  totals_.cpu_used_milli += r.cpu_milli;
  totals_.memory_used_mib += r.memory_mib;
  totals_.gpu_used_milli += milli;
  totals_.gpus_busy += (s.gpu_count - s.gpus_fully_free) - busy_before;
  totals_.tpu_chips_used += p.tpu_chips;
  ++totals_.tasks;
}

void ClusterState::release(const TaskRequest& r, const TaskPlacement& p) {
  GPUSCHED_ASSERT(p.node.valid() && p.node.value < nodes_.size(), "release on an unknown node");
  auto& s = nodes_[p.node.value];
  const std::uint16_t busy_before = static_cast<std::uint16_t>(s.gpu_count - s.gpus_fully_free);
  const auto& spec = specs_[p.node.value];
  s.cpu_free_milli += r.cpu_milli;
  s.memory_free_mib += r.memory_mib;
  GPUSCHED_ASSERT(s.cpu_free_milli <= spec.cpu_milli && s.memory_free_mib <= spec.memory_mib,
                  "released more CPU or memory than was taken");
  const std::size_t nres = resources_->size();
  for (const auto& [id, amount] : r.extended) extended_free_[p.node.value * nres + id.value] += amount;
  s.tpu_chips_free += p.tpu_chips;
  GPUSCHED_ASSERT(s.tpu_chips_free <= spec.tpu.chips, "released TPU chips twice");
  GPUSCHED_ASSERT((s.nics_busy & p.nics) == p.nics, "released a NIC twice");
  s.nics_busy &= ~p.nics;
  apply_numa(p.node, p, -1);
  std::int64_t milli = 0;
  // Newest grant first: undoing a MIG grant recreates the idle GIs it destroyed, which may
  // overlap a GI a later grant of the same task created where they were.
  for (auto it = p.gpus.rbegin(); it != p.gpus.rend(); ++it) {
    give_gpu(s, *it, undo_);
    milli += it->milli;
  }
  refresh_gpu_aggregates(s, spec);
  GPUSCHED_ASSERT(s.tasks > 0, "released a task on an empty node");
  --s.tasks;
  if (r.cpu_milli == 0) --s.tasks_without_cpu;
  if (r.memory_mib == 0) --s.tasks_without_memory;
  changed(p.node.value);
  totals_.cpu_used_milli -= r.cpu_milli;
  totals_.memory_used_mib -= r.memory_mib;
  totals_.gpu_used_milli -= milli;
  totals_.gpus_busy += (s.gpu_count - s.gpus_fully_free) - busy_before;
  totals_.tpu_chips_used -= p.tpu_chips;
  --totals_.tasks;
}

void ClusterState::undo_allocate(const TaskRequest& r, const TaskPlacement& p) {
  undo_ = true;
  release(r, p);
  undo_ = false;
}

void ClusterState::undo_release(const TaskRequest& r, const TaskPlacement& p) {
  restore_ = true;
  allocate(r, p);
  restore_ = false;
}

void ClusterState::set_schedulable(NodeId n, bool schedulable) {
  auto& s = nodes_[n.value];
  if (s.schedulable == schedulable) return;
  s.schedulable = schedulable;
  changed(n.value);
}

void ClusterState::add_taint(NodeId n, const Taint& t) {
  auto& taints = specs_.mutate(n.value).taints;
  auto it = std::find_if(taints.begin(), taints.end(), [&](const Taint& x) { return x.key == t.key && x.effect == t.effect; });
  if (it != taints.end()) *it = t;
  else {
    taints.push_back(t);
    if (t.effect == TaintEffect::kPreferNoSchedule) ++prefer_no_schedule_;
  }
  changed(n.value);
}

int ClusterState::remove_taint(NodeId n, const std::string& key, std::optional<TaintEffect> effect) {
  auto& taints = specs_.mutate(n.value).taints;
  const auto before = taints.size();
  std::erase_if(taints, [&](const Taint& x) {
    if (x.key != key || (effect && x.effect != *effect)) return false;
    if (x.effect == TaintEffect::kPreferNoSchedule) --prefer_no_schedule_;
    return true;
  });
  const auto removed = static_cast<int>(before - taints.size());
  if (removed) changed(n.value);
  return removed;
}

std::uint64_t ClusterState::InstanceId::next() {
  static std::atomic<std::uint64_t> counter{0};
  return ++counter;
}

}  // namespace gpusched
