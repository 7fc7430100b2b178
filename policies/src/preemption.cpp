#include <gpusched/policies/preemption/priority_preemption.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <limits>
#include <string>

#include <gpusched/assert.hpp>
#include <gpusched/error.hpp>

#include "builtin_plugins.hpp"

namespace gpusched::policies {

namespace {
constexpr std::string_view kName = "priority-preemption";
constexpr VictimCost kNoVictims{std::numeric_limits<std::size_t>::max(), 0, 0.0};
}  // namespace

PriorityPreemption::PriorityPreemption(std::size_t exact_search_limit) : exact_search_limit_(exact_search_limit) {
  GPUSCHED_ASSERT(exact_search_limit <= kMaxExactSearchLimit, "exact_search_limit above kMaxExactSearchLimit");
}

void PriorityPreemption::attach(const ClusterState& cluster, std::span<const JobSpec> /*workload*/, const JobsView* jobs) {
  jobs_ = jobs;
  by_node_.assign(cluster.node_count(), {});
  preemptible_by_priority_.clear();
}

bool PriorityPreemption::may_help(const JobSpec& job) const {
  return !job.constraints.preempt_never && !preemptible_by_priority_.empty() &&
         preemptible_by_priority_.begin()->first < job.priority;
}

void PriorityPreemption::job_started(const JobSpec& job, JobId id, std::span<const TaskPlacement> placements) {
  if (job.constraints.preemptible) ++preemptible_by_priority_[job.priority];
  for (const auto& p : placements) {
    if (p.node.value >= by_node_.size()) by_node_.resize(p.node.value + 1);
    auto& here = by_node_[p.node.value];
    if (here.empty() || here.back().id != id) {
      Resident r;
      r.id = id;
      r.priority = job.priority;
      r.preemptible = job.constraints.preemptible;
      here.push_back(r);
    }
    auto& r = here.back();   // a job's tasks on one node share one entry
    r.cpu_milli += job.request.cpu_milli;
    r.memory_mib += job.request.memory_mib;
    r.tpu_chips += p.tpu_chips;
    for (const auto& g : p.gpus) r.gpu_milli += g.milli;
  }
  std::int64_t milli = 0;
  for (const auto& p : placements) {
    for (const auto& g : p.gpus) milli += g.milli;
  }
  for (const auto& p : placements) by_node_[p.node.value].back().job_gpu_milli = milli;
}

void PriorityPreemption::job_stopped(const JobSpec& job, JobId id, std::span<const TaskPlacement> placements) {
  if (job.constraints.preemptible) {
    if (auto it = preemptible_by_priority_.find(job.priority); it != preemptible_by_priority_.end() && --it->second == 0) {
      preemptible_by_priority_.erase(it);
    }
  }
  for (const auto& p : placements) {
    if (p.node.value < by_node_.size()) std::erase_if(by_node_[p.node.value], [&](const Resident& r) { return r.id == id; });
  }
}

double PriorityPreemption::cost_of(const Resident& r) const {
  return jobs_->work_lost_us(r.id) * static_cast<double>(r.job_gpu_milli) / static_cast<double>(kMilliPerGpu);
}

void PriorityPreemption::take(ClusterState& cluster, JobId j) const {
  const auto& r = jobs_->spec(j).request;
  for (const auto& p : jobs_->placements(j)) cluster.release(r, p);
}

void PriorityPreemption::give(ClusterState& cluster, JobId j) const {
  const auto& r = jobs_->spec(j).request;
  const auto ps = jobs_->placements(j);
  for (auto it = ps.rbegin(); it != ps.rend(); ++it) cluster.allocate(r, *it);
}

bool PriorityPreemption::fits_without(ClusterState& cluster, std::span<const Candidate* const> set, NodeId node,
                                      const FitsFn& fits) {
  for (const auto* c : set) take(cluster, c->id);
  ++fits_calls_;
  const bool ok = fits(std::span<const NodeId>(&node, 1));
  for (auto it = set.rbegin(); it != set.rend(); ++it) give(cluster, (*it)->id);
  return ok;
}

// The candidates of one node (cands_, sorted by priority, cost, id) whose resources there could
// host the request: finds the node's best victim set if it beats best_cost_.
void PriorityPreemption::search_node(ClusterState& cluster, NodeId node, const FitsFn& fits, const TaskRequest& r,
                                     std::size_t k_min) {
  const auto& ns = cluster.node(node);
  const std::size_t m = cands_.size();
  auto covers = [&](std::span<const Candidate* const> set) {
    std::int64_t cpu = ns.cpu_free_milli, mem = ns.memory_free_mib, gpu = ns.gpu_milli_free;
    std::int64_t tpu = ns.tpu_chips_free;
    for (const auto* c : set) {
      cpu += c->cpu_milli;
      mem += c->memory_mib;
      gpu += c->gpu_milli;
      tpu += c->tpu_chips;
    }
    return cpu >= r.cpu_milli && mem >= r.memory_mib && gpu >= r.gpu.total_milli() && tpu >= r.tpu.chips;
  };
  auto record = [&](const VictimCost& cost, std::span<const Candidate* const> set) {
    best_cost_ = cost;
    best_.clear();
    for (const auto* c : set) best_.push_back(c->id);
  };
  std::array<const Candidate*, kMaxExactSearchLimit> buf{};

  if (m <= exact_search_limit_) {
    // Nothing can work here unless evicting them all does (one fits() call instead of many).
    if (m > k_min) {
      for (std::size_t i = 0; i < m; ++i) buf[i] = &cands_[i];
      if (!fits_without(cluster, std::span(buf.data(), m), node, fits)) return;
    }
    // Exact: subsets by increasing size; within a size, every subset that could beat the best.
    std::array<std::size_t, kMaxExactSearchLimit> idx{};
    for (std::size_t k = k_min; k <= m && k <= best_cost_.count; ++k) {
      bool found = false;
      for (std::size_t i = 0; i < k; ++i) idx[i] = i;
      while (true) {
        VictimCost cost{k, cands_[idx[k - 1]].priority, 0.0};   // sorted: the last has the top priority
        for (std::size_t i = 0; i < k; ++i) cost.work_lost_gpu_us += cands_[idx[i]].cost;
        if (cost < best_cost_) {
          for (std::size_t i = 0; i < k; ++i) buf[i] = &cands_[idx[i]];
          const std::span<const Candidate* const> set(buf.data(), k);
          if (covers(set) && fits_without(cluster, set, node, fits)) {
            record(cost, set);
            found = true;
          }
        }
        // Next k-combination of 0..m-1 in lexicographic order.
        std::size_t i = k;
        while (i > 0 && idx[i - 1] == m - k + i - 1) --i;
        if (i == 0) break;
        ++idx[i - 1];
        for (std::size_t j = i; j < k; ++j) idx[j] = idx[j - 1] + 1;
      }
      if (found) return;   // larger sets are worse
    }
    return;
  }

  // Greedy (Kubernetes): evict all, then reprieve the most valuable first while the job fits.
  for (const auto& c : cands_) take(cluster, c.id);
  ++fits_calls_;
  const NodeId only[] = {node};
  if (!fits(only)) {
    for (auto it = cands_.rbegin(); it != cands_.rend(); ++it) give(cluster, it->id);
    return;
  }
  std::vector<const Candidate*> victims;
  for (auto it = cands_.rbegin(); it != cands_.rend(); ++it) {
    give(cluster, it->id);
    ++fits_calls_;
    if (!fits(only)) {
      take(cluster, it->id);
      victims.push_back(&*it);
    }
  }
  for (auto it = victims.rbegin(); it != victims.rend(); ++it) give(cluster, (*it)->id);
  std::reverse(victims.begin(), victims.end());   // ascending value, as the exact search lists them
  VictimCost cost{victims.size(), victims.empty() ? 0 : victims.back()->priority, 0.0};
  for (const auto* v : victims) {
    cost.max_priority = std::max(cost.max_priority, v->priority);
    cost.work_lost_gpu_us += v->cost;
  }
  if (!victims.empty() && cost < best_cost_) record(cost, victims);
}

bool PriorityPreemption::single_task(ClusterState& cluster, const JobSpec& job, const FitsFn& fits) {
  const auto& r = job.request;
  const auto cmp = [](const Candidate& a, const Candidate& b) {
    if (a.priority != b.priority) return a.priority < b.priority;
    if (a.cost != b.cost) return a.cost < b.cost;
    return a.id < b.id;
  };
  // The fewest candidates (of cands_) whose `field` sums to at least `deficit`.
  std::vector<std::int64_t> amounts;
  auto fewest_to_cover = [&](std::int64_t deficit, std::int64_t Candidate::*field) -> std::size_t {
    if (deficit <= 0) return 0;
    amounts.clear();
    for (const auto& c : cands_) amounts.push_back(c.*field);
    std::sort(amounts.begin(), amounts.end(), std::greater<>());
    std::size_t k = 0;
    for (std::int64_t covered = 0; covered < deficit && k < amounts.size(); ++k) covered += amounts[k];
    return k;
  };
  for (std::uint32_t i = 0; i < cluster.node_count(); ++i) {
    const NodeId node{i};
    const auto& ns = cluster.node(node);
    if (!ns.schedulable) continue;
    if (r.gpu.mode != GpuMode::kNone && ns.model.valid() && !r.model_allowed(ns.model)) continue;
    if (i >= by_node_.size() || by_node_[i].empty()) continue;
    cands_.clear();
    Candidate all;
    for (const auto& res : by_node_[i]) {
      if (res.priority >= job.priority || !res.preemptible) continue;
      Candidate c;
      static_cast<Resident&>(c) = res;
      all.cpu_milli += c.cpu_milli;
      all.memory_mib += c.memory_mib;
      all.gpu_milli += c.gpu_milli;
      all.tpu_chips += c.tpu_chips;
      cands_.push_back(c);
    }
    if (cands_.empty()) continue;
    // Even evicting every candidate must cover the request's totals.
    if (ns.cpu_free_milli + all.cpu_milli < r.cpu_milli || ns.memory_free_mib + all.memory_mib < r.memory_mib ||
        ns.gpu_milli_free + all.gpu_milli < r.gpu.total_milli() || ns.tpu_chips_free + all.tpu_chips < r.tpu.chips) {
      continue;
    }
    // The best any set here could be (branch and bound): at least k_min victims, where k_min
    // is the fewest candidates whose amounts could cover the deficit of the tightest dimension;
    // then the k_min-th lowest priority; then the k_min cheapest costs.
    const std::size_t k_min = std::max<std::size_t>(
        {1, fewest_to_cover(r.cpu_milli - ns.cpu_free_milli, &Candidate::cpu_milli),
         fewest_to_cover(r.memory_mib - ns.memory_free_mib, &Candidate::memory_mib),
         fewest_to_cover(r.gpu.total_milli() - ns.gpu_milli_free, &Candidate::gpu_milli),
         fewest_to_cover(std::int64_t{r.tpu.chips} - ns.tpu_chips_free, &Candidate::tpu_chips)});
    if (k_min > best_cost_.count) continue;
    prios_.clear();
    for (const auto& c : cands_) prios_.push_back(c.priority);
    std::nth_element(prios_.begin(), prios_.begin() + static_cast<std::ptrdiff_t>(k_min - 1), prios_.end());
    const VictimCost bound{k_min, prios_[k_min - 1], 0.0};
    if (k_min == best_cost_.count && bound.max_priority > best_cost_.max_priority) continue;
    // Costs (a JobsView call each) matter to the bound only on a tie in count and priority:
    // then the k_min cheapest among the candidates of at most that priority.
    if (k_min == best_cost_.count && bound.max_priority == best_cost_.max_priority) {
      costs_.clear();
      for (const auto& c : cands_) {
        if (c.priority <= bound.max_priority) costs_.push_back(cost_of(c));
      }
      std::partial_sort(costs_.begin(), costs_.begin() + static_cast<std::ptrdiff_t>(k_min), costs_.end());
      double work = 0.0;
      for (std::size_t k = 0; k < k_min; ++k) work += costs_[k];
      if (!(work < best_cost_.work_lost_gpu_us)) continue;
    }
    for (auto& c : cands_) c.cost = cost_of(c);
    std::sort(cands_.begin(), cands_.end(), cmp);   // the final order: priority, cost, id
    search_node(cluster, node, fits, r, k_min);
  }
  return !best_.empty();
}

bool PriorityPreemption::across_nodes(ClusterState& cluster, const JobSpec& job, const FitsFn& fits) {
  cands_.clear();
  for (const auto& here : by_node_) {
    for (const auto& res : here) {
      if (res.priority >= job.priority || !res.preemptible) continue;
      Candidate c;
      static_cast<Resident&>(c) = res;   // its amounts here are not used across nodes
      cands_.push_back(c);
    }
  }
  std::sort(cands_.begin(), cands_.end(), [](const Candidate& a, const Candidate& b) { return a.id < b.id; });
  cands_.erase(std::unique(cands_.begin(), cands_.end(), [](const Candidate& a, const Candidate& b) { return a.id == b.id; }),
               cands_.end());
  for (auto& c : cands_) c.cost = cost_of(c);
  if (cands_.empty()) return false;
  std::stable_sort(cands_.begin(), cands_.end(), [](const Candidate& a, const Candidate& b) {
    return a.priority != b.priority ? a.priority < b.priority : a.cost < b.cost;
  });
  const std::size_t m = cands_.size();
  std::size_t taken = 0;   // cands_[0, taken) are released
  auto take_to = [&](std::size_t n) {
    while (taken < n) take(cluster, cands_[taken++].id);
    while (taken > n) give(cluster, cands_[--taken].id);
  };
  auto fits_all = [&] {
    ++fits_calls_;
    return fits({});
  };
  // The shortest prefix that lets the job fit: doubling, then bisection (prefix 0 fails).
  std::size_t lo = 0, hi = 0;
  for (std::size_t n = 1;; n = std::min(m, n * 2)) {
    take_to(n);
    if (fits_all()) {
      hi = n;
      break;
    }
    lo = n;
    if (n == m) break;
  }
  if (hi == 0) {
    take_to(0);
    return false;
  }
  while (hi - lo > 1) {
    const std::size_t mid = lo + (hi - lo) / 2;
    take_to(mid);
    if (fits_all()) hi = mid;
    else lo = mid;
  }
  take_to(hi);
  // Reprieve the most valuable first: give each back unless the job then no longer fits.
  std::vector<std::size_t> kept;   // indices still evicted, most valuable first
  for (std::size_t i = hi; i-- > 0;) {
    give(cluster, cands_[i].id);
    if (!fits_all()) {
      take(cluster, cands_[i].id);
      kept.push_back(i);
    }
  }
  for (const std::size_t i : kept) give(cluster, cands_[i].id);   // restore (reverse of taking)
  std::reverse(kept.begin(), kept.end());
  best_cost_ = VictimCost{kept.size(), 0, 0.0};
  best_.clear();
  if (!kept.empty()) best_cost_.max_priority = cands_[kept.back()].priority;
  for (const std::size_t i : kept) {
    best_.push_back(cands_[i].id);
    best_cost_.work_lost_gpu_us += cands_[i].cost;
  }
  return true;
}

Status PriorityPreemption::post_filter(ClusterState& cluster, const JobSpec& job, JobId /*id*/, Statement& st,
                                       std::vector<JobId>& victims, const FitsFn& fits) {
  fits_calls_ = 0;
  if (job.constraints.preempt_never) return Status::unschedulable(kName, "preemptionPolicy Never: the job waits");
  if (jobs_ == nullptr) return Status::unschedulable(kName, "no view of the running jobs");
  best_cost_ = kNoVictims;
  best_.clear();
  const bool gang = job.tasks > 1 || job.min_available > 1;
  const bool found = gang ? across_nodes(cluster, job, fits) : single_task(cluster, job, fits);
  if (!found) return Status::unschedulable(kName, "no set of lower-priority jobs to preempt makes room");
  for (const JobId v : best_) {
    const auto& r = jobs_->spec(v).request;
    for (const auto& p : jobs_->placements(v)) st.evict(r, p);
    victims.push_back(v);
  }
  last_cost_ = best_cost_;
  return Status::success();
}

namespace detail {

void register_preemption_plugins(Registry& r) {
  r.add({std::string(kName),
         "post-filter: evicts the fewest strictly-lower-priority, preemptible running jobs (whole jobs) that let a "
         "job fit, then the lowest victim priority, then the least work lost (Kubernetes DefaultPreemption)",
         {"post_filter"},
         {{"exact_search_limit", "number",
           "a node with at most this many lower-priority candidate jobs gets the exact minimum victim set (subsets by "
           "increasing size); above it, Kubernetes' greedy reprieve. 0..16",
           PriorityPreemption::kDefaultExactSearchLimit}},
         [](const PluginContext& ctx) -> std::unique_ptr<Plugin> {
           const double v = number_arg(ctx, "exact_search_limit", 0);
           if (v > static_cast<double>(PriorityPreemption::kMaxExactSearchLimit) || v != std::floor(v)) {
             throw_error(ErrorCode::kProfileBadArgs, {"", 0, std::string(ctx.name) + "/args/exact_search_limit"},
                         std::string(ctx.name) + ": exact_search_limit must be an integer in 0..16");
           }
           return std::make_unique<PriorityPreemption>(static_cast<std::size_t>(v));
         }});
}

}  // namespace detail
}  // namespace gpusched::policies
