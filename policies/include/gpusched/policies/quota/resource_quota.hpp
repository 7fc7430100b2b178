#pragma once
/// `resource-quota`: Kubernetes ResourceQuota per namespace (gpusched: the job's queue,
/// JobSpec::queue). `spec.hard` limits the sum of the requests of the namespace's jobs.
///
/// `charge` says which jobs count:
///   - "created" (default, Kubernetes): every job from its submission until it ends, pending
///     included (pkg/quota/v1/evaluator/core/pods.go QuotaV1Pod: a pod counts unless it
///     Succeeded or Failed). A job that would exceed a hard limit at submission is refused for
///     good (SchedulingHook::admit), with the API server's message
///     `pods "<job>" is forbidden: exceeded quota: <quota>, requested: <r>=<n>, used: <r>=<n>,
///     limited: <r>=<n>` (plugin/pkg/admission/resourcequota/controller.go checkRequest; the
///     exceeded resources only, sorted by name). An evicted (preempted) job keeps its charge
///     while it is requeued: its controller recreates the pod at once, for the same request.
///   - "running" (gpusched's earlier rule): only running jobs count; a job over quota waits in
///     the queue (pre-filter Unschedulable) until running jobs of its namespace finish, and is
///     UnschedulableAndUnresolvable when it alone exceeds a hard limit.
/// A caller that never admits jobs (no SchedulingHook::admit) gets the "running" rule with
/// either setting. Gangs are charged whole (per-task request x tasks): Kubernetes admits each
/// pod of a Job on its own, gpusched admits or refuses the job's pods together. Namespaces
/// without a quota are not limited.
///
/// Args (resource names: quota_resources.hpp; `name`: the ResourceQuota's name in messages,
/// default the namespace):
///   {"quotas": {"team-a": {"name": "gpu-quota", "requests.nvidia.com/gpu": 8, "requests.cpu": "64",
///                          "requests.memory": "256Gi", "count/jobs": 10,
///                          "gpusched.io/gpu-equivalent": 4}},
///    "weights": {"nvidia.com/gpu": 1, "nvidia.com/mig-7g.80gb": 1, "nvidia.com/mig-1g.10gb": 0.125},
///    "charge": "created"}
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
  /// "created": admits the job against its namespace's quota and charges it, or refuses it.
  Status job_submitted(const JobSpec& job, JobId id) override;
  void job_left(const JobSpec& job, JobId id) override;

  /// The namespace's current usage of a resource (internal units), 0 when not limited.
  [[nodiscard]] std::int64_t used(const std::string& ns, std::string_view resource) const;

 private:
  struct Namespace {
    std::string quota_name;           // the ResourceQuota's name (messages)
    std::vector<std::int64_t> hard;   // per resource; -1 = no limit
    std::vector<std::int64_t> used;
    std::vector<std::string> written;   // per resource: the name as the quota writes it
    std::vector<std::string> over_reason, too_big_reason;   // static storage for Status
  };
  /// "created" and the job was admitted at submission: its charge is held from then on.
  [[nodiscard]] bool admitted(JobId id) const { return id.value < admitted_.size() && admitted_[id.value]; }
  std::string name_;
  bool created_ = true;                                    // charge: "created"
  std::string refusal_;                                    // the last job_submitted refusal
  std::vector<std::uint8_t> admitted_;                     // per job id: admitted at submission
  quota::QuotaResources resources_;
  std::unordered_map<std::string, Namespace> namespaces_;
  const ClusterState* cluster_ = nullptr;
  std::vector<std::int64_t> charge_;                       // scratch
  std::vector<std::vector<std::int64_t>> running_;         // per job id: what it was charged (empty: nothing)
};

}  // namespace gpusched::policies
