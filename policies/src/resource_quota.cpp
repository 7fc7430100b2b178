// `resource-quota`: Kubernetes ResourceQuota per namespace (see
// gpusched/policies/quota/resource_quota.hpp).
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


ResourceQuotaPlugin::ResourceQuotaPlugin(const nlohmann::json& args, std::string_view name) : name_(name) {
  resources_.set_weights(args.value("weights", json()), arg_at(name, "weights"));
  const json& quotas = object_at(name, "quotas", member_or_empty(args, "quotas"));
  struct Limit {
    std::string ns;
    std::size_t resource;
    std::int64_t hard;
  };
  std::vector<Limit> limits;
  for (const auto& [ns, spec] : quotas.items()) {
    object_at(name, "quotas/" + ns, spec);
    namespaces_.try_emplace(ns);
    for (const auto& [k, v] : spec.items()) {
      const auto at = arg_at(name, "quotas/" + ns + "/" + k);
      const auto i = resources_.intern(quota::QuotaResources::canonical(k, at));
      limits.push_back({ns, i, resources_.parse_amount(i, v, at)});
    }
  }
  const auto n = resources_.size();
  for (auto& [ns, q] : namespaces_) {
    q.hard.assign(n, -1);
    q.used.assign(n, 0);
    q.over_reason.resize(n);
    q.too_big_reason.resize(n);
  }
  for (const auto& l : limits) {
    auto& q = namespaces_.at(l.ns);
    q.hard[l.resource] = l.hard;
    const std::string res = resources_.name(l.resource);
    const std::string hard = resources_.format(l.resource, l.hard);
    q.over_reason[l.resource] = "exceeded quota: namespace " + l.ns + ", " + res + " used + requested > hard " + hard;
    q.too_big_reason[l.resource] = "job requests more " + res + " than namespace " + l.ns + "'s ResourceQuota allows (hard " + hard + ")";
  }
}

Status ResourceQuotaPlugin::pre_filter(const ClusterState& cluster, TaskContext& ctx) {
  if (ctx.task_index != 0) return Status::success();   // task 0 admitted the whole job
  cluster_ = &cluster;
  const auto it = namespaces_.find(ctx.job.queue);
  if (it == namespaces_.end()) return Status::success();
  const auto& q = it->second;
  charge_.assign(resources_.size(), 0);
  resources_.charge(&cluster, ctx.job, ctx.job.tasks, charge_);
  for (std::size_t i = 0; i < charge_.size(); ++i) {
    if (q.hard[i] >= 0 && charge_[i] > q.hard[i]) return Status::unresolvable(name_, q.too_big_reason[i]);
  }
  for (std::size_t i = 0; i < charge_.size(); ++i) {
    if (q.hard[i] >= 0 && q.used[i] + charge_[i] > q.hard[i]) return Status::unschedulable(name_, q.over_reason[i]);
  }
  return Status::success();
}

void ResourceQuotaPlugin::attach(const ClusterState& cluster, std::span<const JobSpec> workload, const JobsView*) {
  cluster_ = &cluster;
  running_.assign(workload.size(), {});
  for (auto& [ns, q] : namespaces_) std::fill(q.used.begin(), q.used.end(), 0);
}

void ResourceQuotaPlugin::job_started(const JobSpec& job, JobId id, std::span<const TaskPlacement> placements) {
  const auto it = namespaces_.find(job.queue);
  if (it == namespaces_.end()) return;
  if (running_.size() <= id.value) running_.resize(id.value + 1);
  auto& c = running_[id.value];
  c.assign(resources_.size(), 0);
  const auto tasks = placements.empty() ? job.tasks : static_cast<std::int64_t>(placements.size());
  resources_.charge(cluster_, job, tasks, c);
  for (std::size_t i = 0; i < c.size(); ++i) it->second.used[i] += c[i];
}

void ResourceQuotaPlugin::job_stopped(const JobSpec& job, JobId id, std::span<const TaskPlacement>) {
  const auto it = namespaces_.find(job.queue);
  if (it == namespaces_.end() || id.value >= running_.size() || running_[id.value].empty()) return;
  auto& c = running_[id.value];
  for (std::size_t i = 0; i < c.size(); ++i) it->second.used[i] -= c[i];
  c.clear();
}

std::int64_t ResourceQuotaPlugin::used(const std::string& ns, std::string_view resource) const {
  const auto it = namespaces_.find(ns);
  if (it == namespaces_.end()) return 0;
  const auto i = resources_.find(quota::QuotaResources::canonical(resource, {}));
  return i ? it->second.used[*i] : 0;
}

}  // namespace gpusched::policies
