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
  if (args.is_object() && args.contains("charge")) {
    const json& c = args["charge"];
    if (c == "created") created_ = true;
    else if (c == "running") created_ = false;
    else bad_arg(name, "charge", "expected \"created\" (Kubernetes: jobs hold quota from submission) or \"running\" (only running jobs count)");
  }
  const json& quotas = object_at(name, "quotas", member_or_empty(args, "quotas"));
  if (quotas.empty()) warn(std::string(name) + ": no quotas configured: no namespace is limited");
  struct Limit {
    std::string ns;
    std::size_t resource;
    std::int64_t hard;
    std::string written;
  };
  std::vector<Limit> limits;
  for (const auto& [ns, spec] : quotas.items()) {
    object_at(name, "quotas/" + ns, spec);
    auto& entry = namespaces_.try_emplace(ns).first->second;
    entry.quota_name = ns;
    for (const auto& [k, v] : spec.items()) {
      const auto at = arg_at(name, "quotas/" + ns + "/" + k);
      if (k == "name") {
        if (!v.is_string() || v.get<std::string>().empty()) bad_arg(name, "quotas/" + ns + "/name", "expected the ResourceQuota's name (a string)");
        entry.quota_name = v.get<std::string>();
        continue;
      }
      const auto i = resources_.intern(quota::QuotaResources::canonical(k, at));
      limits.push_back({ns, i, resources_.parse_amount(i, v, at), k});
    }
  }
  const auto n = resources_.size();
  for (auto& [ns, q] : namespaces_) {
    q.hard.assign(n, -1);
    q.used.assign(n, 0);
    q.written.resize(n);
    q.over_reason.resize(n);
    q.too_big_reason.resize(n);
  }
  for (const auto& l : limits) {
    auto& q = namespaces_.at(l.ns);
    q.hard[l.resource] = l.hard;
    q.written[l.resource] = l.written;
    const std::string res = resources_.name(l.resource);
    const std::string hard = resources_.format(l.resource, l.hard);
    q.over_reason[l.resource] = "exceeded quota: namespace " + l.ns + ", " + res + " used + requested > hard " + hard;
    q.too_big_reason[l.resource] = "job requests more " + res + " than namespace " + l.ns + "'s ResourceQuota allows (hard " + hard + ")";
  }
}

Status ResourceQuotaPlugin::pre_filter(const ClusterState& cluster, TaskContext& ctx) {
  if (ctx.task_index != 0) return Status::success();   // task 0 admitted the whole job
  if (admitted(ctx.job_id)) return Status::success();   // charged since its submission
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
  admitted_.assign(workload.size(), 0);
  for (auto& [ns, q] : namespaces_) std::fill(q.used.begin(), q.used.end(), 0);
}

namespace {
/// A Kubernetes resource.Quantity as String() prints it for our units (0 is "0").
std::string quantity(const quota::QuotaResources& res, std::size_t i, std::int64_t amount) {
  return amount == 0 ? "0" : res.format(i, amount);
}
}  // namespace

Status ResourceQuotaPlugin::job_submitted(const JobSpec& job, JobId id) {
  if (!created_) return Status::success();
  const auto it = namespaces_.find(job.queue);
  if (it == namespaces_.end()) return Status::success();
  auto& q = it->second;
  charge_.assign(resources_.size(), 0);
  resources_.charge(cluster_, job, job.tasks, charge_);
  // controller.go checkRequest: every limited resource the job requests must stay within hard;
  // the message lists the exceeded ones, sorted by name (prettyPrint).
  std::vector<std::pair<std::string, std::size_t>> exceeded;
  for (std::size_t i = 0; i < charge_.size(); ++i) {
    if (q.hard[i] >= 0 && charge_[i] > 0 && q.used[i] + charge_[i] > q.hard[i]) exceeded.emplace_back(q.written[i], i);
  }
  if (!exceeded.empty()) {
    std::sort(exceeded.begin(), exceeded.end());
    std::string requested, used, limited;
    for (std::size_t k = 0; k < exceeded.size(); ++k) {
      const auto& [res, i] = exceeded[k];
      const std::string sep = k ? "," : "";
      requested += sep + res + "=" + quantity(resources_, i, charge_[i]);
      used += sep + res + "=" + quantity(resources_, i, q.used[i]);
      limited += sep + res + "=" + quantity(resources_, i, q.hard[i]);
    }
    refusal_ = "pods \"" + job.name + "\" is forbidden: exceeded quota: " + q.quota_name + ", requested: " + requested +
               ", used: " + used + ", limited: " + limited;
    return Status::unresolvable(name_, refusal_);
  }
  if (admitted_.size() <= id.value) admitted_.resize(id.value + 1, 0);
  if (running_.size() <= id.value) running_.resize(id.value + 1);
  admitted_[id.value] = 1;
  running_[id.value] = charge_;
  for (std::size_t i = 0; i < charge_.size(); ++i) q.used[i] += charge_[i];
  return Status::success();
}

void ResourceQuotaPlugin::job_left(const JobSpec& job, JobId id) {
  if (!admitted(id)) return;
  admitted_[id.value] = 0;
  const auto it = namespaces_.find(job.queue);
  auto& c = running_[id.value];
  if (it != namespaces_.end()) {
    for (std::size_t i = 0; i < c.size(); ++i) it->second.used[i] -= c[i];
  }
  c.clear();
}

void ResourceQuotaPlugin::job_started(const JobSpec& job, JobId id, std::span<const TaskPlacement> placements) {
  if (admitted(id)) return;   // charged since its submission
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
  if (admitted(id)) return;   // keeps its charge until it leaves (an evicted job is requeued)
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
