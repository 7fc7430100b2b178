#pragma once
/// `app-max-per-node`: at most `max_per_node` tasks of one application (JobConstraints::app) on a
/// node. This is how Alibaba's DLRM serving trace states anti-affinity (a maximum number of
/// instances of an app per node), and `max_per_node: 1` is a required pod anti-affinity of an
/// app with itself (Kubernetes InterPodAffinity, topologyKey kubernetes.io/hostname).
///
/// Filter: counts the tasks of the same app already on the node: running jobs' tasks
/// (TaskContext::jobs: running_on + placements) and this job's tasks placed earlier in the same
/// attempt (TaskContext::placed). The limit is the smallest non-zero max_per_node among the job
/// and the same-app jobs running there (anti-affinity is symmetric in Kubernetes: a running pod's
/// rule also keeps newcomers out). Rejects (Unschedulable) when one more task would exceed it.
/// Jobs without an app pass. O(jobs on the node); a running job with many tasks is indexed once
/// per task in CycleState.
///
/// Example profile: {"filter": ["node-resources-fit", "app-max-per-node"]}
#include <gpusched/policies/framework/plugin.hpp>

namespace gpusched::policies {

class AppMaxPerNodePlugin final : public FilterPlugin {
 public:
  [[nodiscard]] std::string_view name() const override { return "app-max-per-node"; }
  [[nodiscard]] Status filter(const ClusterState& cluster, const TaskContext& ctx, NodeId node) const override;
  /// A job without an app passes everywhere.
  [[nodiscard]] bool node_local_for(const JobSpec& job) const override { return job.constraints.app.empty(); }
};

}  // namespace gpusched::policies
