#pragma once
/// Helpers shared by the benchmark programs: a demo-like cluster of any size, pre-filled to a
/// target allocation. Bench-private (not part of any gpusched target).
#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <deque>
#include <span>
#include <string>
#include <vector>

#include <gpusched/cluster.hpp>
#include <gpusched/gpu_catalog.hpp>
#include <gpusched/job.hpp>
#include <gpusched/node.hpp>
#include <gpusched/resources.hpp>
#include <gpusched/rng.hpp>
#include <gpusched/scheduling.hpp>
#include <gpusched/traces/synthetic.hpp>

namespace gpusched::bench {

/// The demo's node mix, per 10 nodes: 4x (8x A100-80GB, 128 cores, 1 TiB), 3x (8x V100-32GB,
/// 96 cores, 512 GiB), 2x (4x T4, 64 cores, 256 GiB), 1x CPU-only (96 cores, 384 GiB); laid out
/// in blocks like scenario node_groups. 7.2 GPUs per node on average.
inline ClusterState make_demo_like_cluster(std::uint32_t nodes) {
  GpuCatalog catalog = GpuCatalog::builtin();
  struct Group {
    const char* name;
    std::uint32_t per10;
    std::int64_t cores, gib;
    int gpus;
    const char* model;
  };
  const Group groups[] = {{"a100", 4, 128, 1024, 8, "A100-80GB"},
                          {"v100", 3, 96, 512, 8, "V100-32GB"},
                          {"t4", 2, 64, 256, 4, "T4"},
                          {"cpu", 1, 96, 384, 0, nullptr}};
  std::vector<NodeSpec> specs;
  specs.reserve(nodes);
  std::uint32_t made = 0;
  for (std::size_t gi = 0; gi < std::size(groups); ++gi) {
    const auto& g = groups[gi];
    const std::uint32_t count = gi + 1 == std::size(groups) ? nodes - made : nodes * g.per10 / 10;
    const GpuModelId model = g.model ? *catalog.find(g.model) : GpuModelId{};
    for (std::uint32_t i = 0; i < count; ++i) {
      NodeSpec n;
      n.name = std::string(g.name) + "-" + std::to_string(i);
      n.cpu_milli = g.cores * 1000;
      n.memory_mib = g.gib * 1024;
      n.sockets = 2;
      for (int k = 0; k < g.gpus; ++k) n.gpus.push_back({model, static_cast<std::int16_t>(k * 2 / g.gpus)});
      if (g.model) n.labels.emplace("nvidia.com/gpu.product", g.model);
      specs.push_back(std::move(n));
    }
    made += count;
  }
  return ClusterState(std::move(catalog), ResourceTable{}, std::move(specs));
}

/// GPU grants for `r` on node `n`: the first fully free GPUs (whole) or the first GPU with
/// room (shared). Returns false when the node cannot host it.
inline bool first_fit_grants(const ClusterState& c, NodeId n, const TaskRequest& r, TaskPlacement& p) {
  if (!c.fits(n, r)) return false;
  p.node = n;
  p.gpus.clear();
  const auto gpus = c.gpus(n);
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    if (!r.model_allowed(gpus[i].model)) continue;
    if (r.gpu.mode == GpuMode::kWhole && gpus[i].fully_free()) {
      p.gpus.push_back({static_cast<std::uint16_t>(i), kMilliPerGpu, gpus[i].memory_mib});
      if (static_cast<std::int32_t>(p.gpus.size()) == r.gpu.count) return true;
    } else if (r.gpu.mode == GpuMode::kShared && ClusterState::gpu_fits_shared(gpus[i], r.gpu)) {
      p.gpus.push_back({static_cast<std::uint16_t>(i), r.gpu.milli, r.gpu.memory_mib});
      return true;
    }
  }
  return r.gpu.mode == GpuMode::kNone;
}

struct FillStats {
  std::int64_t jobs_placed = 0;
  double gpu_alloc = 0, cpu_alloc = 0;   ///< fractions of capacity
};

/// Places synthetic jobs (default Alibaba-like mix) until `target_gpu_alloc` of the GPU
/// capacity is allocated. Each job goes to a uniformly random node among those where it fits
/// (rejection sampling, like the "random" profile, but O(1) per job instead of O(nodes)), on
/// its first-fit GPUs. Deterministic for a given seed.
inline FillStats fill_randomly(ClusterState& c, double target_gpu_alloc, std::uint64_t seed) {
  traces::SyntheticConfig cfg;
  cfg.jobs = static_cast<std::int64_t>(c.node_count()) * 16;
  const Workload w = traces::generate(cfg, c, RngStreams(seed));
  Rng rng(seed ^ 0x5eedULL);
  FillStats st;
  const auto n = c.node_count();
  TaskPlacement p;
  for (const auto& job : w) {
    const auto& t = c.totals();
    if (static_cast<double>(t.gpu_used_milli) >= target_gpu_alloc * static_cast<double>(t.gpu_milli)) break;
    for (int probe = 0; probe < 256; ++probe) {
      const NodeId node{static_cast<std::uint32_t>(rng.below(n))};
      if (first_fit_grants(c, node, job.request, p)) {
        c.allocate(job.request, p);
        ++st.jobs_placed;
        break;
      }
    }
  }
  const auto& t = c.totals();
  st.gpu_alloc = static_cast<double>(t.gpu_used_milli) / static_cast<double>(t.gpu_milli);
  st.cpu_alloc = static_cast<double>(t.cpu_used_milli) / static_cast<double>(t.cpu_milli);
  return st;
}

/// A fill that remembers what it placed, so a benchmark can later release those jobs as the
/// engine's finish events would.
struct TrackedFill {
  FillStats stats;
  std::vector<std::pair<JobId, TaskPlacement>> placed;   ///< in placement order (oldest first)
  std::size_t next = 0;                                   ///< first job of `jobs` the fill did not consume
};

/// fill_randomly's rule (a uniformly random node where the job fits, first-fit GPUs) over the
/// given single-task jobs from the start, until `target_gpu_alloc` of the GPU capacity is
/// allocated or the jobs run out. Job i gets JobId i. Deterministic for a given seed.
inline TrackedFill fill_randomly_tracked(ClusterState& c, std::span<const JobSpec> jobs, double target_gpu_alloc,
                                         std::uint64_t seed) {
  Rng rng(seed ^ 0x5eedULL);
  TrackedFill f;
  const auto n = c.node_count();
  TaskPlacement p;
  for (; f.next < jobs.size(); ++f.next) {
    const auto& t = c.totals();
    if (static_cast<double>(t.gpu_used_milli) >= target_gpu_alloc * static_cast<double>(t.gpu_milli)) break;
    const JobSpec& job = jobs[f.next];
    if (job.tasks != 1) continue;
    for (int probe = 0; probe < 256; ++probe) {
      const NodeId node{static_cast<std::uint32_t>(rng.below(n))};
      if (first_fit_grants(c, node, job.request, p)) {
        c.allocate(job.request, p);
        f.placed.emplace_back(JobId{static_cast<std::uint32_t>(f.next)}, p);
        ++f.stats.jobs_placed;
        break;
      }
    }
  }
  const auto& t = c.totals();
  f.stats.gpu_alloc = static_cast<double>(t.gpu_used_milli) / static_cast<double>(t.gpu_milli);
  f.stats.cpu_alloc = static_cast<double>(t.cpu_used_milli) / static_cast<double>(t.cpu_milli);
  return f;
}

/// The running jobs of a benchmark-driven cluster, oldest first, as the engine exposes them to
/// the scheduler (JobsView: jobs per node in start order, their specs and placements). Job ids
/// index `workload`.
class RunningJobs final : public JobsView {
 public:
  RunningJobs(std::span<const JobSpec> workload, std::size_t nodes)
      : workload_(workload), on_node_(nodes), placements_(workload.size()) {}

  [[nodiscard]] SimTime now() const override { return now_; }
  [[nodiscard]] std::span<const JobId> running_on(NodeId n) const override { return on_node_[n.value]; }
  [[nodiscard]] const JobSpec& spec(JobId j) const override { return workload_[j.value]; }
  [[nodiscard]] std::span<const TaskPlacement> placements(JobId j) const override { return placements_[j.value]; }
  [[nodiscard]] SimTime started(JobId /*j*/) const override { return SimTime{}; }
  [[nodiscard]] double work_lost_us(JobId /*j*/) const override { return 0.0; }

  [[nodiscard]] bool empty() const { return fifo_.empty(); }
  [[nodiscard]] std::size_t size() const { return fifo_.size(); }
  void tick() { now_ = SimTime{now_.us + 1}; }
  /// The job started on `ps` (the engine's start_job bookkeeping).
  void start(JobId j, std::span<const TaskPlacement> ps) {
    placements_[j.value].assign(ps.begin(), ps.end());
    for (const auto& p : ps) {
      auto& list = on_node_[p.node.value];
      if (list.empty() || list.back() != j) list.push_back(j);
    }
    fifo_.push_back(j);
  }
  /// Stops the oldest running job: releases its placements from `c` and tells `hook`, in the
  /// engine's order (release, then job_stopped).
  void stop_oldest(ClusterState& c, SchedulingHook& hook) {
    const JobId j = fifo_.front();
    fifo_.pop_front();
    const auto& ps = placements_[j.value];
    for (const auto& p : ps) {
      c.release(workload_[j.value].request, p);
      auto& list = on_node_[p.node.value];
      if (auto it = std::find(list.begin(), list.end(), j); it != list.end()) list.erase(it);
    }
    hook.job_stopped(workload_[j.value], j, ps);
    placements_[j.value].clear();
  }

 private:
  std::span<const JobSpec> workload_;
  std::vector<std::vector<JobId>> on_node_;
  std::vector<std::vector<TaskPlacement>> placements_;
  std::deque<JobId> fifo_;
  SimTime now_{};
};

/// Decision latencies in nanoseconds: exact percentiles (all samples kept) and a histogram of
/// log2 buckets, bucket b = [2^b, 2^(b+1)) ns (bucket 0 also holds 0 ns).
class LatencyRecorder {
 public:
  void reserve(std::size_t n) { samples_.reserve(n); }
  void add(std::int64_t ns) {
    samples_.push_back(ns);
    ++buckets_[bucket_of(ns)];
  }
  [[nodiscard]] std::size_t count() const { return samples_.size(); }
  [[nodiscard]] static std::size_t bucket_of(std::int64_t ns) {
    return ns <= 1 ? 0 : static_cast<std::size_t>(std::bit_width(static_cast<std::uint64_t>(ns))) - 1;
  }
  [[nodiscard]] const std::array<std::uint64_t, 64>& buckets() const { return buckets_; }
  /// Nearest-rank percentile (q in (0, 1]); 0 when empty. Reorders the samples.
  [[nodiscard]] std::int64_t percentile(double q) {
    if (samples_.empty()) return 0;
    auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(samples_.size())));
    rank = std::clamp<std::size_t>(rank, 1, samples_.size()) - 1;
    std::nth_element(samples_.begin(), samples_.begin() + static_cast<std::ptrdiff_t>(rank), samples_.end());
    return samples_[rank];
  }
  [[nodiscard]] std::int64_t max() const { return samples_.empty() ? 0 : *std::max_element(samples_.begin(), samples_.end()); }
  [[nodiscard]] double mean() const {
    if (samples_.empty()) return 0;
    long double sum = 0;
    for (auto v : samples_) sum += static_cast<long double>(v);
    return static_cast<double>(sum / static_cast<long double>(samples_.size()));
  }

 private:
  std::vector<std::int64_t> samples_;
  std::array<std::uint64_t, 64> buckets_{};
};

}  // namespace gpusched::bench
