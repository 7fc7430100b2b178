#include <gpusched/scenario/fragmentation.hpp>

#include <algorithm>
#include <cmath>

#include <gpusched/traces/transforms.hpp>

namespace gpusched::scenario {

FragmentationRecorder::FragmentationRecorder(std::vector<policies::fgd::PodType> types) : cache_(std::move(types)) {}

void FragmentationRecorder::on_start(const sim::Engine& e) {
  capacity_milli_ = e.cluster().totals().gpu_milli;
  const auto nodes = e.cluster().node_count();
  weighted_.assign(nodes, 0);
  idle_.assign(nodes, 0);
  is_dirty_.assign(nodes, 0);
  dirty_.clear();
  weighted_sum_ = idle_sum_ = 0;
  all_dirty_ = true;
  arrived_milli_ = 0;
  decisions_ = 0;
  samples_.clear();
  samples_.reserve(e.workload().size() + 1);
  sample(e.now(), e);   // the starting state (decision 0)
}

void FragmentationRecorder::on_submit(SimTime, JobId j, const sim::Engine& e) {
  arrived_milli_ += traces::gpu_milli_requested(e.spec(j));
}

void FragmentationRecorder::on_job_start(SimTime t, JobId, std::span<const TaskPlacement> p, const sim::Engine& e) {
  touch(p);
  sample(t, e);
}

void FragmentationRecorder::on_job_finish(SimTime, JobId j, const sim::Engine& e) { touch(e.job(j).placements); }

void FragmentationRecorder::touch(std::span<const TaskPlacement> placements) {
  for (const auto& p : placements) {
    const auto n = p.node.value;
    if (n < is_dirty_.size() && is_dirty_[n] == 0) {
      is_dirty_[n] = 1;
      dirty_.push_back(n);
    }
  }
}

void FragmentationRecorder::refresh(const ClusterState& c, const sim::Engine& e) {
  auto update = [&](std::uint32_t n) {
    const NodeId id{n};
    const auto w = cache_.weighted_node(c, id);
    const auto idle = policies::fgd::node_idle_milli(c, id);
    weighted_sum_ += w - weighted_[n];
    idle_sum_ += idle - idle_[n];
    weighted_[n] = w;
    idle_[n] = idle;
  };
  if (all_dirty_ || e.evictions() != evictions_seen_) {
    for (std::uint32_t n = 0; n < c.node_count(); ++n) update(n);
    all_dirty_ = false;
    evictions_seen_ = e.evictions();
  } else {
    for (const auto n : dirty_) update(n);
  }
  for (const auto n : dirty_) is_dirty_[n] = 0;
  dirty_.clear();
}

void FragmentationRecorder::on_job_fail(SimTime t, JobId, std::string_view, const sim::Engine& e) { sample(t, e); }

void FragmentationRecorder::sample(SimTime t, const sim::Engine& e) {
  const auto& c = e.cluster();
  refresh(c, e);
  policies::fgd::Fragmentation f;
  f.idle_milli = idle_sum_;
  f.capacity_milli = capacity_milli_;
  f.fragment_milli = cache_.total_weight() > 0
                         ? static_cast<double>(weighted_sum_) / static_cast<double>(cache_.total_weight())
                         : 0.0;
  FragmentationSample s;
  s.t = t;
  s.decisions = decisions_;
  if (capacity_milli_ > 0) {
    const auto cap = static_cast<double>(capacity_milli_);
    s.arrived_pct = 100.0 * static_cast<double>(arrived_milli_) / cap;
    s.unallocated_pct = 100.0 - 100.0 * static_cast<double>(c.totals().gpu_used_milli) / cap;
    s.frag_pct = 100.0 * f.fragment_milli / cap;
  }
  s.frag_ratio_pct = 100.0 * f.ratio();
  samples_.push_back(s);
  ++decisions_;
}

std::vector<CurvePoint> FragmentationRecorder::curve() const {
  std::vector<CurvePoint> out;
  std::size_t i = 0;
  const FragmentationSample* last = nullptr;
  const double top = samples_.empty() ? 0.0 : samples_.back().arrived_pct;
  // Up to the first integer at or above the last arrived demand: when arrivals stop short of
  // it (the next job would have crossed it), the final state is the value there. A tiny
  // tolerance keeps 100% reached exactly (in milli) from being lost to rounding.
  for (std::int32_t k = 0; k <= static_cast<std::int32_t>(std::ceil(top - 1e-9)); ++k) {
    while (i < samples_.size() && samples_[i].arrived_pct <= k + 1e-9) last = &samples_[i++];
    if (last == nullptr) continue;
    out.push_back({k, last->unallocated_pct, last->frag_pct, last->frag_ratio_pct});
  }
  return out;
}

void write_fragmentation_csv(std::ostream& out, std::span<const FragmentationSample> samples) {
  out << "t_s,decisions,arrived_pct,unallocated_pct,frag_pct,frag_ratio_pct\n";
  for (const auto& s : samples) {
    out << sim::fixed(s.t.seconds(), 6) << ',' << s.decisions << ',' << sim::fixed(s.arrived_pct, 4) << ','
        << sim::fixed(s.unallocated_pct, 4) << ',' << sim::fixed(s.frag_pct, 4) << ',' << sim::fixed(s.frag_ratio_pct, 4)
        << '\n';
  }
}

bool has_gpu_sharing(std::span<const JobSpec> workload) {
  return std::any_of(workload.begin(), workload.end(),
                     [](const JobSpec& j) { return j.request.gpu.mode == GpuMode::kShared; });
}

}  // namespace gpusched::scenario
