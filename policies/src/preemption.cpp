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

// ---- PodDisruptionBudgets -------------------------------------------------------------------

bool PodDisruptionBudget::matches(const JobSpec& job) const {
  if (!namespace_name.empty() && job.queue != namespace_name) return false;
  if (!app.empty() && job.constraints.app != app) return false;
  if (!queue.empty() && job.queue != queue) return false;
  if (!job_name.empty() && job.name != job_name) return false;
  return true;
}

// The disruption controller's getExpectedPodCount + updatePdbStatus.
std::int64_t PodDisruptionBudget::disruptions_allowed(std::int64_t healthy, std::int64_t expected) const {
  std::int64_t desired = 0;
  if (max_unavailable) {
    desired = std::max<std::int64_t>(0, expected - max_unavailable->scaled(expected));
  } else if (min_available) {
    desired = min_available->scaled(expected);
  }
  const std::int64_t allowed = healthy - desired;
  return expected <= 0 || allowed <= 0 ? 0 : allowed;
}

namespace {

IntOrPercent parse_int_or_percent(const nlohmann::json& v, const Location& at, ErrorCode bad) {
  auto fail = [&] {
    throw_error(bad, at, "expected a non-negative integer or a percentage such as \"50%\"");
  };
  IntOrPercent r;
  if (v.is_number_integer()) {
    const auto x = v.get<std::int64_t>();
    if (x < 0 || x > std::numeric_limits<std::int32_t>::max()) fail();
    r.value = static_cast<std::int32_t>(x);
    return r;
  }
  if (!v.is_string()) fail();
  const auto str = v.get<std::string>();
  if (str.size() < 2 || str.back() != '%') fail();
  std::int64_t x = 0;
  for (std::size_t i = 0; i + 1 < str.size(); ++i) {
    if (str[i] < '0' || str[i] > '9' || x > 1000) fail();
    x = x * 10 + (str[i] - '0');
  }
  if (x > 100) throw_error(bad, at, "a percentage must be between 0% and 100%");
  r.value = static_cast<std::int32_t>(x);
  r.percent = true;
  return r;
}

}  // namespace

std::vector<PodDisruptionBudget> parse_pod_disruption_budgets(const nlohmann::json& list, const Location& where,
                                                              ErrorCode bad_value, ErrorCode missing, ErrorCode unknown) {
  auto at = [&](const std::string& field) { return Location{where.file, where.line, where.field + field}; };
  if (!list.is_array()) {
    throw_error(bad_value, where,
                "expected a list of {name, namespace, selector: {app, queue, name}, min_available | max_unavailable}");
  }
  std::vector<PodDisruptionBudget> out;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string f = "/" + std::to_string(i);
    const auto& b = list[i];
    if (!b.is_object()) throw_error(bad_value, at(f), "expected an object {name, selector, min_available | max_unavailable}");
    PodDisruptionBudget pdb;
    bool has_selector = false;
    for (const auto& [k, v] : b.items()) {
      const std::string kf = f + "/" + k;
      auto text = [&](const std::string& field) {
        if (!v.is_string()) throw_error(bad_value, at(field), "expected a string");
        return v.get<std::string>();
      };
      if (k == "name") pdb.name = text(kf);
      else if (k == "namespace") pdb.namespace_name = text(kf);
      else if (k == "selector") {
        if (!v.is_object()) throw_error(bad_value, at(kf), "expected an object such as {\"app\": \"web\"}");
        for (const auto& [sk, sv] : v.items()) {
          const std::string sf = kf + "/" + sk;
          if (!sv.is_string() || sv.get<std::string>().empty()) throw_error(bad_value, at(sf), "expected a non-empty string");
          if (sk == "app") pdb.app = sv.get<std::string>();
          else if (sk == "queue") pdb.queue = sv.get<std::string>();
          else if (sk == "name") pdb.job_name = sv.get<std::string>();
          else throw_error(unknown, at(sf), "unknown selector field (known: app, queue, name)");
        }
        has_selector = !pdb.app.empty() || !pdb.queue.empty() || !pdb.job_name.empty();
      } else if (k == "min_available") {
        pdb.min_available = parse_int_or_percent(v, at(kf), bad_value);
      } else if (k == "max_unavailable") {
        pdb.max_unavailable = parse_int_or_percent(v, at(kf), bad_value);
      } else {
        throw_error(unknown, at(kf), "unknown field (known: name, namespace, selector, min_available, max_unavailable)");
      }
    }
    if (pdb.name.empty()) throw_error(missing, at(f + "/name"), "a pod disruption budget needs a name");
    if (!has_selector) {
      throw_error(missing, at(f + "/selector"), "a pod disruption budget needs a selector with at least one of app, queue, name");
    }
    if (pdb.min_available.has_value() == pdb.max_unavailable.has_value()) {
      throw_error(pdb.min_available ? bad_value : missing, at(f + "/min_available"),
                  "give exactly one of min_available and max_unavailable");
    }
    for (const auto& o : out) {
      if (o.name == pdb.name && o.namespace_name == pdb.namespace_name) {
        throw_error(bad_value, at(f + "/name"), "pod disruption budget \"" + pdb.name + "\" is defined twice");
      }
    }
    out.push_back(std::move(pdb));
  }
  return out;
}

void add_pod_disruption_budgets(Profile& profile, const nlohmann::json& budgets) {
  if (!budgets.is_array() || budgets.empty()) return;
  for (auto& ref : profile.post_filter) {
    if (ref.name != kName) continue;
    auto& list = ref.args["pod_disruption_budgets"];
    if (!list.is_array()) list = nlohmann::json::array();
    for (const auto& b : budgets) list.push_back(b);
  }
}

// ---- the plugin --------------------------------------------------------------------------------

PriorityPreemption::PriorityPreemption(std::size_t exact_search_limit, NodeChoice node_choice,
                                       std::vector<PodDisruptionBudget> budgets)
    : exact_search_limit_(exact_search_limit), node_choice_(node_choice), budgets_(std::move(budgets)) {
  GPUSCHED_ASSERT(exact_search_limit <= kMaxExactSearchLimit, "exact_search_limit above kMaxExactSearchLimit");
}

void PriorityPreemption::attach(const ClusterState& cluster, std::span<const JobSpec> /*workload*/, const JobsView* jobs) {
  jobs_ = jobs;
  by_node_.assign(cluster.node_count(), {});
  preemptible_by_priority_.clear();
  pdb_healthy_.assign(budgets_.size(), 0);
  pdb_expected_.assign(budgets_.size(), 0);
  evicting_.clear();
  waiting_victims_.clear();
}

std::int64_t PriorityPreemption::disruptions_allowed(std::size_t budget) const {
  GPUSCHED_ASSERT(budget < budgets_.size(), "no such budget");
  if (budget >= pdb_healthy_.size()) return budgets_[budget].disruptions_allowed(0, 0);
  return budgets_[budget].disruptions_allowed(pdb_healthy_[budget], pdb_expected_[budget]);
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
  for (const auto& p : placements) {
    auto& r = by_node_[p.node.value].back();
    r.job_gpu_milli = milli;
    r.job_tasks = static_cast<std::int64_t>(placements.size());
  }
  if (!budgets_.empty()) {
    const bool was_waiting = waiting_victims_.erase(id) > 0;
    for (std::size_t k = 0; k < budgets_.size(); ++k) {
      if (!budgets_[k].matches(job)) continue;
      pdb_healthy_[k] += static_cast<std::int64_t>(placements.size());
      if (!was_waiting) pdb_expected_[k] += job.tasks;   // a waiting victim's pods were counted already
    }
    evicting_.clear();   // the engine stops a post_filter's victims before it starts the job
  }
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
  if (!budgets_.empty()) {
    // Evicted by this plugin: its pods wait to run again and still count as expected.
    // (At the same instant: if the runner could not place the job after all, its would-be
    // victims keep running and a later stop is theirs.)
    const bool evicted = jobs_ != nullptr && jobs_->now() == evicting_at_ &&
                         std::find(evicting_.begin(), evicting_.end(), id) != evicting_.end();
    if (evicted) waiting_victims_.insert(id);
    for (std::size_t k = 0; k < budgets_.size(); ++k) {
      if (!budgets_[k].matches(job)) continue;
      pdb_healthy_[k] -= static_cast<std::int64_t>(placements.size());
      if (!evicted) pdb_expected_[k] -= job.tasks;
    }
  }
}

void PriorityPreemption::job_left(const JobSpec& job, JobId id) {
  if (budgets_.empty() || waiting_victims_.erase(id) == 0) return;
  for (std::size_t k = 0; k < budgets_.size(); ++k) {
    if (budgets_[k].matches(job)) pdb_expected_[k] -= job.tasks;
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
  for (auto it = ps.rbegin(); it != ps.rend(); ++it) cluster.undo_release(r, *it);   // exact: no MIG replay
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

bool PriorityPreemption::more_important(const Candidate& a, const Candidate& b) {
  if (a.priority != b.priority) return a.priority > b.priority;
  if (a.start_us != b.start_us) return a.start_us < b.start_us;
  return a.id < b.id;
}

void PriorityPreemption::mark_pdb_violations(std::span<Candidate* const> most_important_first) {
  for (auto* c : most_important_first) c->violating = false;
  if (budgets_.empty()) return;
  allowed_.resize(budgets_.size());
  for (std::size_t k = 0; k < budgets_.size(); ++k) allowed_[k] = disruptions_allowed(k);
  for (auto* c : most_important_first) {
    const auto& spec = jobs_->spec(c->id);
    for (std::size_t k = 0; k < budgets_.size(); ++k) {
      if (!budgets_[k].matches(spec)) continue;
      allowed_[k] -= c->job_tasks;   // every running task of the job is disrupted
      if (allowed_[k] < 0) c->violating = true;
    }
  }
}

bool PriorityPreemption::kube_single_task(ClusterState& cluster, const JobSpec& job, const FitsFn& fits) {
  constexpr std::int64_t kPriorityOffset = std::int64_t{std::numeric_limits<std::int32_t>::max()} + 1;
  const auto& r = job.request;
  std::vector<std::int64_t> amounts;
  auto fewest_to_cover = [&](const std::vector<Candidate>& cs, std::int64_t deficit, std::int64_t Candidate::*field) {
    if (deficit <= 0) return std::size_t{0};
    amounts.clear();
    for (const auto& c : cs) amounts.push_back(c.*field);
    std::sort(amounts.begin(), amounts.end(), std::greater<>());
    std::size_t k = 0;
    for (std::int64_t covered = 0; covered < deficit && k < amounts.size(); ++k) covered += amounts[k];
    return k;
  };
  // 1. Candidate nodes, each with the best score any victim set there could have (a lower bound
  //    under KubeVictimScore's order): at least k_min victims (the fewest whose amounts cover the
  //    tightest dimension's deficit), so the k_min-th lowest priority P, the sum of the k_min
  //    lowest, and no earlier start than the latest-started candidate of priority P; no PDB
  //    violation.
  struct NodeEntry {
    KubeVictimScore bound;
    std::uint32_t node = 0;
    std::vector<Candidate> cands;
  };
  std::vector<NodeEntry> entries;
  for (std::uint32_t i = 0; i < cluster.node_count(); ++i) {
    const auto& ns = cluster.node(NodeId{i});
    if (!ns.schedulable) continue;
    if (r.gpu.mode != GpuMode::kNone && ns.model.valid() && !r.model_allowed(ns.model)) continue;
    if (i >= by_node_.size() || by_node_[i].empty()) continue;
    NodeEntry e;
    e.node = i;
    Candidate all;
    for (const auto& res : by_node_[i]) {
      if (res.priority >= job.priority || !res.preemptible) continue;
      Candidate c;
      static_cast<Resident&>(c) = res;
      all.cpu_milli += c.cpu_milli;
      all.memory_mib += c.memory_mib;
      all.gpu_milli += c.gpu_milli;
      all.tpu_chips += c.tpu_chips;
      e.cands.push_back(c);
    }
    if (e.cands.empty()) continue;
    // Even evicting every candidate must cover the request's totals.
    if (ns.cpu_free_milli + all.cpu_milli < r.cpu_milli || ns.memory_free_mib + all.memory_mib < r.memory_mib ||
        ns.gpu_milli_free + all.gpu_milli < r.gpu.total_milli() || ns.tpu_chips_free + all.tpu_chips < r.tpu.chips) {
      continue;
    }
    const std::size_t k_min = std::max<std::size_t>(
        {1, fewest_to_cover(e.cands, r.cpu_milli - ns.cpu_free_milli, &Candidate::cpu_milli),
         fewest_to_cover(e.cands, r.memory_mib - ns.memory_free_mib, &Candidate::memory_mib),
         fewest_to_cover(e.cands, r.gpu.total_milli() - ns.gpu_milli_free, &Candidate::gpu_milli),
         fewest_to_cover(e.cands, std::int64_t{r.tpu.chips} - ns.tpu_chips_free, &Candidate::tpu_chips)});
    prios_.clear();
    for (auto& c : e.cands) {
      c.start_us = jobs_->started(c.id).us;
      prios_.push_back(c.priority);
    }
    std::sort(prios_.begin(), prios_.end());
    e.bound = KubeVictimScore{0, prios_[k_min - 1], 0, k_min, std::numeric_limits<std::int64_t>::min()};
    for (std::size_t k = 0; k < k_min; ++k) e.bound.priority_sum += prios_[k] + kPriorityOffset;
    for (const auto& c : e.cands) {
      if (c.priority == e.bound.max_priority) e.bound.earliest_start_us = std::max(e.bound.earliest_start_us, c.start_us);
    }
    entries.push_back(std::move(e));
  }
  // 2. Best first: nodes by (bound, index). A node's score is no better than its bound, so once
  //    a node's (bound, index) cannot beat the best (score, index) found, no later node can.
  std::sort(entries.begin(), entries.end(), [](const NodeEntry& a, const NodeEntry& b) {
    if (a.bound < b.bound) return true;
    if (b.bound < a.bound) return false;
    return a.node < b.node;
  });
  bool have_best = false;
  std::uint32_t best_node = 0;
  std::vector<Candidate*> order, victims;
  for (auto& e : entries) {
    if (have_best && !(e.bound < best_kube_) && (best_kube_ < e.bound || e.node > best_node)) break;
    // SelectVictimsOnNode: remove every candidate; the node is no candidate if the job still does not fit.
    for (const auto& c : e.cands) take(cluster, c.id);
    ++fits_calls_;
    const NodeId only[] = {NodeId{e.node}};
    if (!fits(only)) {
      for (auto it = e.cands.rbegin(); it != e.cands.rend(); ++it) give(cluster, it->id);
      continue;
    }
    order.clear();
    for (auto& c : e.cands) order.push_back(&c);
    std::sort(order.begin(), order.end(), [](const Candidate* a, const Candidate* b) { return more_important(*a, *b); });
    mark_pdb_violations(order);
    // Reprieve as many as possible: the PDB-violating ones first, then the others, most important first.
    victims.clear();
    std::int64_t violations = 0;
    for (const bool violating : {true, false}) {
      for (auto* c : order) {
        if (c->violating != violating) continue;
        give(cluster, c->id);
        ++fits_calls_;
        if (!fits(only)) {
          take(cluster, c->id);
          victims.push_back(c);
          if (violating) ++violations;
        }
      }
    }
    for (auto it = victims.rbegin(); it != victims.rend(); ++it) give(cluster, (*it)->id);
    if (victims.empty()) continue;
    std::sort(victims.begin(), victims.end(), [](const Candidate* a, const Candidate* b) { return more_important(*a, *b); });
    KubeVictimScore score{violations, victims.front()->priority, 0, victims.size(), victims.front()->start_us};
    for (const auto* v : victims) {
      score.priority_sum += v->priority + kPriorityOffset;
      if (v->priority == score.max_priority) score.earliest_start_us = std::min(score.earliest_start_us, v->start_us);
    }
    if (!have_best || score < best_kube_ || (!(best_kube_ < score) && e.node < best_node)) {
      have_best = true;
      best_kube_ = score;
      best_node = e.node;
      best_.clear();
      for (const auto* v : victims) best_.push_back(v->id);
    }
  }
  return have_best;
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
  const bool kube = node_choice_ == NodeChoice::kKubernetes;
  if (kube) {
    // Least important first (the reverse of MoreImportantPod); with budgets, the jobs whose
    // eviction would break one (budgets spent most important first) go last.
    for (auto& c : cands_) c.start_us = jobs_->started(c.id).us;
    std::sort(cands_.begin(), cands_.end(), [](const Candidate& a, const Candidate& b) { return more_important(b, a); });
    if (!budgets_.empty()) {
      std::vector<Candidate*> most_important_first;
      for (auto it = cands_.rbegin(); it != cands_.rend(); ++it) most_important_first.push_back(&*it);
      mark_pdb_violations(most_important_first);
      std::stable_partition(cands_.begin(), cands_.end(), [](const Candidate& c) { return !c.violating; });
    }
  } else {
    std::stable_sort(cands_.begin(), cands_.end(), [](const Candidate& a, const Candidate& b) {
      return a.priority != b.priority ? a.priority < b.priority : a.cost < b.cost;
    });
  }
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
  if (kube) {
    // As SelectVictimsOnNode with the prefix as the potential victims: most important first,
    // the PDB-violating ones before the others.
    std::vector<Candidate*> order;
    for (std::size_t i = 0; i < hi; ++i) order.push_back(&cands_[i]);
    std::sort(order.begin(), order.end(), [](const Candidate* a, const Candidate* b) { return more_important(*a, *b); });
    mark_pdb_violations(order);
    for (const bool violating : {true, false}) {
      for (auto* c : order) {
        if (c->violating != violating) continue;
        give(cluster, c->id);
        if (!fits_all()) {
          take(cluster, c->id);
          kept.push_back(static_cast<std::size_t>(c - cands_.data()));
          if (violating) ++best_kube_.pdb_violations;
        }
      }
    }
    for (const std::size_t i : kept) give(cluster, cands_[i].id);
    std::sort(kept.begin(), kept.end(), std::greater<>());
  } else {
    for (std::size_t i = hi; i-- > 0;) {
      give(cluster, cands_[i].id);
      if (!fits_all()) {
        take(cluster, cands_[i].id);
        kept.push_back(i);
      }
    }
    for (const std::size_t i : kept) give(cluster, cands_[i].id);   // restore (reverse of taking)
  }
  std::reverse(kept.begin(), kept.end());
  best_cost_ = VictimCost{kept.size(), 0, 0.0};
  best_.clear();
  if (!kept.empty()) best_cost_.max_priority = cands_[kept.back()].priority;
  if (kube) {
    for (const std::size_t i : kept) best_cost_.max_priority = std::max(best_cost_.max_priority, cands_[i].priority);
  }
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
  best_kube_ = KubeVictimScore{};
  best_.clear();
  const bool gang = job.tasks > 1 || job.min_available > 1;
  const bool kube = node_choice_ == NodeChoice::kKubernetes;
  const bool found = gang ? across_nodes(cluster, job, fits)
                          : (kube ? kube_single_task(cluster, job, fits) : single_task(cluster, job, fits));
  if (!found) return Status::unschedulable(kName, "no set of lower-priority jobs to preempt makes room");
  if (kube && !gang) {
    best_cost_ = VictimCost{best_.size(), std::numeric_limits<std::int32_t>::min(), 0.0};
    for (const JobId v : best_) {
      std::int64_t milli = 0;
      for (const auto& p : jobs_->placements(v)) {
        for (const auto& g : p.gpus) milli += g.milli;
      }
      best_cost_.max_priority = std::max(best_cost_.max_priority, jobs_->spec(v).priority);
      best_cost_.work_lost_gpu_us += jobs_->work_lost_us(v) * static_cast<double>(milli) / static_cast<double>(kMilliPerGpu);
    }
  }
  for (const JobId v : best_) {
    const auto& r = jobs_->spec(v).request;
    for (const auto& p : jobs_->placements(v)) st.evict(r, p);
    victims.push_back(v);
  }
  last_cost_ = best_cost_;
  last_pdb_violations_ = kube ? best_kube_.pdb_violations : 0;
  if (!budgets_.empty()) {
    evicting_ = best_;
    evicting_at_ = jobs_->now();
  }
  return Status::success();
}

namespace detail {

void register_preemption_plugins(Registry& r) {
  r.add({std::string(kName),
         "post-filter: evicts strictly-lower-priority, preemptible running jobs (whole jobs) so a job fits; by default "
         "as kube-scheduler's DefaultPreemption (greedy reprieve per node, PodDisruptionBudgets, node by fewest PDB "
         "violations, lowest highest victim priority, smallest priority sum, fewest victims, latest start)",
         {"post_filter"},
         {{"node_choice", "string",
           "\"kubernetes\": kube-scheduler's DefaultPreemption (per node: evict all lower-priority jobs, then reprieve "
           "the PDB-violating, then the others, most important first; nodes by fewest PDB violations, lowest highest "
           "victim priority, smallest sum of priorities, fewest victims, latest start). \"least-lost-work\": gpusched's "
           "rule: the fewest victims (exact search), then the lowest highest priority, then the least work lost x GPUs",
           "kubernetes"},
          {"exact_search_limit", "number",
           "least-lost-work only: a node with at most this many lower-priority candidate jobs gets the exact minimum "
           "victim set (subsets by increasing size); above it, the greedy reprieve. 0..16",
           PriorityPreemption::kDefaultExactSearchLimit},
          {"pod_disruption_budgets", "array",
           "PodDisruptionBudgets [{name, namespace, selector: {app, queue, name}, min_available | max_unavailable (an "
           "integer or \"50%\")}] (kubernetes rule; a scenario's pod_disruption_budgets are added here)",
           nlohmann::json::array()}},
         [](const PluginContext& ctx) -> std::unique_ptr<Plugin> {
           const double v = number_arg(ctx, "exact_search_limit", 0);
           if (v > static_cast<double>(PriorityPreemption::kMaxExactSearchLimit) || v != std::floor(v)) {
             throw_error(ErrorCode::kProfileBadArgs, {"", 0, std::string(ctx.name) + "/args/exact_search_limit"},
                         std::string(ctx.name) + ": exact_search_limit must be an integer in 0..16");
           }
           const auto choice = ctx.args.at("node_choice").get<std::string>();
           NodeChoice nc = NodeChoice::kKubernetes;
           if (choice == "least-lost-work") nc = NodeChoice::kLeastLostWork;
           else if (choice != "kubernetes") {
             throw_error(ErrorCode::kProfileBadArgs, {"", 0, std::string(ctx.name) + "/args/node_choice"},
                         std::string(ctx.name) + ": node_choice must be \"kubernetes\" or \"least-lost-work\"");
           }
           auto budgets = parse_pod_disruption_budgets(ctx.args.at("pod_disruption_budgets"),
                                                       {"", 0, std::string(ctx.name) + "/args/pod_disruption_budgets"},
                                                       ErrorCode::kProfileBadArgs, ErrorCode::kProfileBadArgs,
                                                       ErrorCode::kProfileBadArgs);
           return std::make_unique<PriorityPreemption>(static_cast<std::size_t>(v), nc, std::move(budgets));
         }});
}

}  // namespace detail
}  // namespace gpusched::policies
