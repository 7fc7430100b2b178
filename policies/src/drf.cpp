// `drf`: weighted dominant-resource-fairness queue order (see gpusched/policies/quota/drf.hpp).
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <numeric>

#include <gpusched/policies/framework/statement.hpp>
#include <gpusched/policies/quota/capacity_queues.hpp>
#include <gpusched/policies/quota/drf.hpp>
#include <gpusched/policies/quota/quota_resources.hpp>
#include <gpusched/policies/quota/resource_quota.hpp>
#include <gpusched/quantity.hpp>

#include "builtin_plugins.hpp"
#include "quota_common.hpp"

namespace gpusched::policies {

using namespace quota_util;   // NOLINT(google-build-using-namespace): internal helpers
using nlohmann::json;


DrfSort::DrfSort(const nlohmann::json& args, std::string_view name) : name_(name) {
  const json& w = object_at(name, "weights", member_or_empty(args, "weights"));
  for (const auto& [q, v] : w.items()) {
    if (!v.is_number() || !(v.get<double>() > 0.0)) bad_arg(name, "weights/" + q, "a queue weight must be a number > 0");
    weights_[q] = v.get<double>();
  }
  if (args.is_object() && args.contains("order")) {
    const json& o = args.at("order");
    const std::string order = o.is_string() ? o.get<std::string>() : std::string();
    if (order != "current-share" && order != "share-after") {
      bad_arg(name, "order", "expected \"current-share\" (Volcano/YARN: the queue's share now) or \"share-after\" "
                             "(gpusched: the share once the job starts)");
    }
    share_after_ = order == "share-after";
  }
}

std::size_t DrfSort::queue_index(const std::string& q) const {
  const auto it = queue_ids_.find(q);
  if (it != queue_ids_.end()) return it->second;
  Queue queue;
  if (const auto w = weights_.find(q); w != weights_.end()) queue.weight = w->second;
  queues_.push_back(std::move(queue));
  queue_ids_.emplace(q, queues_.size() - 1);
  return queues_.size() - 1;
}

DrfSort::Vec DrfSort::request_of(const JobSpec& job) const {
  const auto& r = job.request;
  double gpu = 0.0;
  switch (r.gpu.mode) {
    case GpuMode::kWhole:
    case GpuMode::kPassthrough:
    case GpuMode::kShared: gpu = static_cast<double>(r.gpu.total_milli()); break;
    case GpuMode::kMig:
    case GpuMode::kVgpu: gpu = r.gpu.count * kMilliPerGpu * partition_fraction(cluster_, r.gpu); break;
    case GpuMode::kNone: break;
  }
  const auto t = static_cast<double>(job.tasks);
  return {static_cast<double>(r.cpu_milli) * t, static_cast<double>(r.memory_mib) * t, gpu * t,
          static_cast<double>(r.tpu.chips) * t};
}

double DrfSort::dominant(const Vec& v, double weight) const {
  double m = 0.0;
  for (std::size_t d = 0; d < kDims; ++d) {
    if (capacity_[d] > 0) m = std::max(m, v[d] / capacity_[d]);
  }
  return m / weight;
}

bool DrfSort::ahead(std::uint32_t a, std::uint32_t b) const {
  const auto& x = workload_[a];
  const auto& y = workload_[b];
  if (x.priority != y.priority) return x.priority > y.priority;
  if (x.submit != y.submit) return x.submit < y.submit;
  return a < b;
}

void DrfSort::advance_arrivals() const {
  const SimTime now = jobs_ != nullptr ? jobs_->now() : SimTime::forever();
  if (keyed_ && now == keyed_at_) return;
  keyed_ = true;
  keyed_at_ = now;
  while (arrived_ < by_submit_.size() && workload_[by_submit_[arrived_]].submit <= now) {
    const auto j = by_submit_[arrived_++];
    if (started_[j]) continue;
    auto& q = queues_[job_queue_[j]];
    const auto at = std::upper_bound(q.waiting.begin(), q.waiting.end(), j,
                                     [&](std::uint32_t a, std::uint32_t b) { return ahead(a, b); });
    q.waiting.insert(at, j);
    q.dirty = true;
  }
}

void DrfSort::refresh(std::size_t qi) const {
  auto& q = queues_[qi];
  if (!q.dirty) return;
  std::erase_if(q.waiting, [&](std::uint32_t j) { return started_[j] != 0; });
  Vec acc = q.usage;
  for (const auto j : q.waiting) {
    if (!share_after_) key_[j] = dominant(acc, q.weight);   // current share: the jobs ahead only
    for (std::size_t d = 0; d < kDims; ++d) acc[d] += job_request_[j][d];
    if (share_after_) key_[j] = dominant(acc, q.weight);
  }
  q.dirty = false;
}

double DrfSort::key(const JobSpec& job, JobId id) const {
  const bool known = id.value < workload_.size() &&
                     (&workload_[id.value] == &job || (workload_[id.value].name == job.name && workload_[id.value].submit == job.submit));
  if (known && !started_[id.value]) {
    advance_arrivals();
    if (job.submit <= keyed_at_) {
      refresh(job_queue_[id.value]);
      return key_[id.value];
    }
  }
  const auto qi = queue_index(job.queue);
  Vec v = queues_[qi].usage;
  if (share_after_) {
    const Vec r = request_of(job);
    for (std::size_t d = 0; d < kDims; ++d) v[d] += r[d];
  }
  return dominant(v, queues_[qi].weight);
}

bool DrfSort::less(const JobSpec& a, JobId ia, const JobSpec& b, JobId ib) const {
  const double ka = key(a, ia), kb = key(b, ib);
  if (ka != kb) return ka < kb;
  if (a.priority != b.priority) return a.priority > b.priority;
  if (a.submit != b.submit) return a.submit < b.submit;
  return ia < ib;
}

void DrfSort::attach(const ClusterState& cluster, std::span<const JobSpec> workload, const JobsView* jobs) {
  cluster_ = &cluster;
  workload_ = workload;
  jobs_ = jobs;
  const auto& t = cluster.totals();
  capacity_ = {static_cast<double>(t.cpu_milli), static_cast<double>(t.memory_mib), static_cast<double>(t.gpu_milli),
               static_cast<double>(t.tpu_chips)};
  queues_.clear();
  queue_ids_.clear();
  const auto n = workload.size();
  job_queue_.resize(n);
  job_request_.resize(n);
  for (std::size_t j = 0; j < n; ++j) {
    job_queue_[j] = static_cast<std::uint32_t>(queue_index(workload[j].queue));
    job_request_[j] = request_of(workload[j]);
  }
  started_.assign(n, 0);
  running_.assign(n, Vec{});
  key_.assign(n, 0.0);
  by_submit_.resize(n);
  std::iota(by_submit_.begin(), by_submit_.end(), 0U);
  std::stable_sort(by_submit_.begin(), by_submit_.end(),
                   [&](std::uint32_t a, std::uint32_t b) { return workload[a].submit < workload[b].submit; });
  arrived_ = 0;
  keyed_ = false;
}

void DrfSort::job_started(const JobSpec& job, JobId id, std::span<const TaskPlacement> placements) {
  const auto qi = queue_index(job.queue);
  Vec u{};
  const auto tasks = static_cast<double>(placements.empty() ? static_cast<std::size_t>(job.tasks) : placements.size());
  u[0] = static_cast<double>(job.request.cpu_milli) * tasks;
  u[1] = static_cast<double>(job.request.memory_mib) * tasks;
  if (placements.empty()) {
    u = request_of(job);
  } else {
    for (const auto& p : placements) {
      for (const auto& g : p.gpus) u[2] += g.milli;
      u[3] += p.tpu_chips;
    }
  }
  if (running_.size() <= id.value) running_.resize(id.value + 1, Vec{});
  running_[id.value] = u;
  auto& q = queues_[qi];
  for (std::size_t d = 0; d < kDims; ++d) q.usage[d] += u[d];
  q.dirty = true;
  if (id.value < started_.size()) started_[id.value] = 1;
}

void DrfSort::job_stopped(const JobSpec& job, JobId id, std::span<const TaskPlacement>) {
  if (id.value >= running_.size()) return;
  auto& q = queues_[queue_index(job.queue)];
  for (std::size_t d = 0; d < kDims; ++d) q.usage[d] -= running_[id.value][d];
  running_[id.value] = Vec{};
  q.dirty = true;
}

double DrfSort::share(const std::string& queue) const {
  const auto it = queue_ids_.find(queue);
  return it == queue_ids_.end() ? 0.0 : dominant(queues_[it->second].usage, queues_[it->second].weight);
}

}  // namespace gpusched::policies
