#pragma once
/// `resource-quota`: Kubernetes ResourceQuota per namespace (gpusched: the job's queue,
/// JobSpec::queue). `spec.hard` limits the sum of the requests of the namespace's running jobs.
///
/// Kubernetes refuses to create a pod that would exceed the quota; a simulated job instead waits
/// in the queue (pre-filter Unschedulable) until running jobs of its namespace finish, and is
/// UnschedulableAndUnresolvable when it alone exceeds a hard limit. Gangs are charged whole
/// (per-task request x tasks). Namespaces without a quota are not limited.
///
/// Args (resource names: quota_resources.hpp):
///   {"quotas": {"team-a": {"requests.nvidia.com/gpu": 8, "requests.cpu": "64",
///                          "requests.memory": "256Gi", "count/jobs": 10,
///                          "gpusched.io/gpu-equivalent": 4}},
///    "weights": {"nvidia.com/gpu": 1, "nvidia.com/mig-7g.80gb": 1, "nvidia.com/mig-1g.10gb": 0.125}}
///
/// Profile: {"pre_filter": [{"name": "resource-quota", "args": {...}}], ...}.
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include <gpusched/policies/framework/plugin.hpp>
#include <gpusched/policies/quota/quota_resources.hpp>

namespace gpusched::policies {

class ResourceQuotaPlugin final : public PreFilterPlugin, public JobEventsPlugin {
 public:
  /// Parses `args` (see above). Throws ProfileError(kProfileBadArgs) with the argument path.
  ResourceQuotaPlugin(const nlohmann::json& args, std::string_view name);

  [[nodiscard]] std::string_view name() const override { return name_; }
  [[nodiscard]] bool reads_queue() const override { return true; }
  /// Task 0 decides for the whole job; O(limited resources).
  Status pre_filter(const ClusterState& cluster, TaskContext& ctx) override;
  void attach(const ClusterState& cluster, std::span<const JobSpec> workload, const JobsView* jobs) override;
  void job_started(const JobSpec& job, JobId id, std::span<const TaskPlacement> placements) override;
  void job_stopped(const JobSpec& job, JobId id, std::span<const TaskPlacement> placements) override;

  /// The namespace's current usage of a resource (internal units), 0 when not limited.
  [[nodiscard]] std::int64_t used(const std::string& ns, std::string_view resource) const;

 private:
  struct Namespace {
    std::vector<std::int64_t> hard;   // per resource; -1 = no limit
    std::vector<std::int64_t> used;
    std::vector<std::string> over_reason, too_big_reason;   // static storage for Status
  };
  std::string name_;
  quota::QuotaResources resources_;
  std::unordered_map<std::string, Namespace> namespaces_;
  const ClusterState* cluster_ = nullptr;
  std::vector<std::int64_t> charge_;                       // scratch
  std::vector<std::vector<std::int64_t>> running_;         // per job id: what it was charged
};

}  // namespace gpusched::policies
