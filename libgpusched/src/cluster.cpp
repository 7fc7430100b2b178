#include <gpusched/cluster.hpp>

#include <algorithm>

#include <gpusched/assert.hpp>

namespace gpusched {

ClusterState::ClusterState(GpuCatalog catalog, ResourceTable resources, std::vector<NodeSpec> nodes)
    : catalog_(std::move(catalog)), resources_(std::move(resources)), specs_(std::move(nodes)) {
  nodes_.reserve(specs_.size());
  const std::size_t nres = resources_.size();
  extended_free_.assign(specs_.size() * nres, 0);
  for (std::size_t i = 0; i < specs_.size(); ++i) {
    const auto& spec = specs_[i];
    NodeState s;
    s.cpu_free_milli = spec.cpu_milli;
    s.memory_free_mib = spec.memory_mib;
    s.gpu_begin = static_cast<std::uint32_t>(gpus_.size());
    s.gpu_count = static_cast<std::uint16_t>(spec.gpus.size());
    s.model = spec.gpus.empty() ? GpuModelId{} : spec.gpus.front().model;
    for (const auto& g : spec.gpus) {
      GPUSCHED_ASSERT(g.model.valid() && g.model.value < catalog_.size(), "GPU model id out of catalog");
      GpuState gs;
      gs.memory_mib = catalog_[g.model].memory_mib;
      gs.memory_free_mib = gs.memory_mib;
      gs.model = g.model;
      gs.socket = g.socket;
      gpus_.push_back(gs);
      if (g.model != s.model) s.model = GpuModelId{};
    }
    for (const auto& [id, amount] : spec.extended) {
      GPUSCHED_ASSERT(id.value < nres, "extended resource not interned");
      extended_free_[i * nres + id.value] += amount;
    }
    refresh_gpu_aggregates(s);
    totals_.cpu_milli += spec.cpu_milli;
    totals_.memory_mib += spec.memory_mib;
    totals_.gpus += s.gpu_count;
    totals_.gpu_milli += std::int64_t{s.gpu_count} * kMilliPerGpu;
    max_capacity_.cpu_free_milli = std::max(max_capacity_.cpu_free_milli, s.cpu_free_milli);
    max_capacity_.memory_free_mib = std::max(max_capacity_.memory_free_mib, s.memory_free_mib);
    max_capacity_.gpu_count = std::max(max_capacity_.gpu_count, s.gpu_count);
    max_capacity_.gpu_milli_free = std::max(max_capacity_.gpu_milli_free, s.gpu_milli_free);
    max_capacity_.gpu_memory_free_max = std::max(max_capacity_.gpu_memory_free_max, s.gpu_memory_free_max);
    by_name_.emplace(spec.name, NodeId{static_cast<std::uint32_t>(i)});
    nodes_.push_back(s);
  }
}

void ClusterState::refresh_gpu_aggregates(NodeState& s) {
  std::uint16_t free_whole = 0;
  std::int32_t milli_sum = 0, milli_max = 0;
  std::int64_t mem_max = 0, mem_sum = 0;
  for (std::uint32_t i = s.gpu_begin; i < s.gpu_begin + s.gpu_count; ++i) {
    const auto& g = gpus_[i];
    free_whole = static_cast<std::uint16_t>(free_whole + (g.fully_free() ? 1 : 0));
    milli_sum += g.milli_free;
    milli_max = std::max(milli_max, g.milli_free);
    mem_max = std::max(mem_max, g.memory_free_mib);
    mem_sum += g.memory_free_mib;
  }
  s.gpu_memory_free = mem_sum;
  s.gpus_fully_free = free_whole;
  s.gpu_milli_free = milli_sum;
  s.gpu_milli_free_max = milli_max;
  s.gpu_memory_free_max = mem_max;
}

std::int64_t ClusterState::extended_free(NodeId n, ResourceId r) const {
  return extended_free_[n.value * resources_.size() + r.value];
}

std::optional<NodeId> ClusterState::find_node(std::string_view name) const {
  if (auto it = by_name_.find(std::string(name)); it != by_name_.end()) return it->second;
  return std::nullopt;
}

bool ClusterState::fits_empty(NodeId n, const TaskRequest& r) const {
  const auto& spec = specs_[n.value];
  if (spec.cpu_milli < r.cpu_milli || spec.memory_mib < r.memory_mib) return false;
  for (const auto& [id, amount] : r.extended) {
    std::int64_t cap = 0;
    for (const auto& [eid, eamount] : spec.extended) if (eid == id) cap += eamount;
    if (cap < amount) return false;
  }
  std::int32_t usable = 0;
  for (const auto& g : spec.gpus) {
    if (!r.model_allowed(g.model)) continue;
    if (r.gpu.mode == GpuMode::kShared && catalog_[g.model].memory_mib < r.gpu.memory_mib) continue;
    ++usable;
  }
  switch (r.gpu.mode) {
    case GpuMode::kNone: return true;
    case GpuMode::kWhole: return usable >= r.gpu.count;
    case GpuMode::kShared: return usable >= 1;
  }
  return false;
}

FitResult ClusterState::fit_check(NodeId n, const TaskRequest& r) const {
  const auto& s = nodes_[n.value];
  if (!s.schedulable) return FitResult::kUnschedulable;
  if (s.cpu_free_milli < r.cpu_milli) return FitResult::kCpu;
  if (s.memory_free_mib < r.memory_mib) return FitResult::kMemory;
  for (const auto& [id, amount] : r.extended) {
    if (extended_free(n, id) < amount) return FitResult::kExtended;
  }
  switch (r.gpu.mode) {
    case GpuMode::kNone:
      return FitResult::kFits;
    case GpuMode::kWhole: {
      if (s.gpus_fully_free < r.gpu.count) return FitResult::kGpuCount;
      if (r.allowed_models.none()) return FitResult::kFits;
      if (s.model.valid()) return r.model_allowed(s.model) ? FitResult::kFits : FitResult::kGpuModel;
      std::int32_t ok = 0;
      for (const auto& g : gpus(n)) ok += (g.fully_free() && r.model_allowed(g.model)) ? 1 : 0;
      return ok >= r.gpu.count ? FitResult::kFits : FitResult::kGpuModel;
    }
    case GpuMode::kShared: {
      if (s.model.valid() && !r.model_allowed(s.model)) return FitResult::kGpuModel;
      if (s.gpu_milli_free_max < r.gpu.milli || s.gpu_memory_free_max < r.gpu.memory_mib) return FitResult::kGpuShare;
      for (const auto& g : gpus(n)) {
        if (gpu_fits_shared(g, r.gpu) && r.model_allowed(g.model)) return FitResult::kFits;
      }
      return FitResult::kGpuShare;
    }
  }
  return FitResult::kGpuShare;
}

void ClusterState::allocate(const TaskRequest& r, const TaskPlacement& p) {
  GPUSCHED_ASSERT(p.node.valid() && p.node.value < nodes_.size(), "placement on an unknown node");
  auto& s = nodes_[p.node.value];
  const std::uint16_t busy_before = static_cast<std::uint16_t>(s.gpu_count - s.gpus_fully_free);
  s.cpu_free_milli -= r.cpu_milli;
  s.memory_free_mib -= r.memory_mib;
  GPUSCHED_ASSERT(s.cpu_free_milli >= 0 && s.memory_free_mib >= 0, "CPU or memory over-committed");
  const std::size_t nres = resources_.size();
  for (const auto& [id, amount] : r.extended) {
    auto& f = extended_free_[p.node.value * nres + id.value];
    f -= amount;
    GPUSCHED_ASSERT(f >= 0, "extended resource over-committed");
  }
  std::int64_t milli = 0;
  for (const auto& grant : p.gpus) {
    GPUSCHED_ASSERT(grant.index < s.gpu_count, "GPU index out of range");
    auto& g = gpus_[s.gpu_begin + grant.index];
    g.milli_free -= grant.milli;
    g.memory_free_mib -= grant.memory_mib;
    ++g.tasks;
    GPUSCHED_ASSERT(g.milli_free >= 0 && g.memory_free_mib >= 0, "GPU over-committed");
    milli += grant.milli;
  }
  refresh_gpu_aggregates(s);
  ++s.tasks;
  ++s.generation;
  ++generation_;
  totals_.cpu_used_milli += r.cpu_milli;
  totals_.memory_used_mib += r.memory_mib;
  totals_.gpu_used_milli += milli;
  totals_.gpus_busy += (s.gpu_count - s.gpus_fully_free) - busy_before;
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
  const std::size_t nres = resources_.size();
  for (const auto& [id, amount] : r.extended) extended_free_[p.node.value * nres + id.value] += amount;
  std::int64_t milli = 0;
  for (const auto& grant : p.gpus) {
    auto& g = gpus_[s.gpu_begin + grant.index];
    GPUSCHED_ASSERT(g.tasks > 0, "released a GPU grant that was not taken");
    g.milli_free += grant.milli;
    g.memory_free_mib += grant.memory_mib;
    --g.tasks;
    GPUSCHED_ASSERT(g.milli_free <= kMilliPerGpu && g.memory_free_mib <= g.memory_mib, "GPU released twice");
    milli += grant.milli;
  }
  refresh_gpu_aggregates(s);
  GPUSCHED_ASSERT(s.tasks > 0, "released a task on an empty node");
  --s.tasks;
  ++s.generation;
  ++generation_;
  totals_.cpu_used_milli -= r.cpu_milli;
  totals_.memory_used_mib -= r.memory_mib;
  totals_.gpu_used_milli -= milli;
  totals_.gpus_busy += (s.gpu_count - s.gpus_fully_free) - busy_before;
  --totals_.tasks;
}

void ClusterState::set_schedulable(NodeId n, bool schedulable) {
  auto& s = nodes_[n.value];
  if (s.schedulable == schedulable) return;
  s.schedulable = schedulable;
  ++s.generation;
  ++generation_;
}

}  // namespace gpusched
