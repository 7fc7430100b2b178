// Registration of the quota and fair-sharing plugins: `resource-quota`, `capacity-queues`, `drf`.
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


namespace detail {

void register_quota_plugins(Registry& r) {
  const PluginArg weights{"weights", "object",
                          "gpusched.io/gpu-equivalent cost per unit of each requested resource (e.g. "
                          "{\"nvidia.com/mig-7g.80gb\": 7, \"nvidia.com/mig-1g.10gb\": 1}); replaces the defaults "
                          "(nvidia.com/gpu 1, gpusched.io/gpu-milli 0.001, MIG/vGPU their share of a GPU)",
                          nullptr};
  r.add({"resource-quota",
         "Kubernetes ResourceQuota per namespace (the job's queue): a job is charged from its submission, pending "
         "included, and one that would push its namespace over a hard limit is refused at submission (charge: created); "
         "charge: running counts running jobs only and makes an over-quota job wait",
         {"pre_filter"},
         {{"quotas", "object",
           "namespace -> {resource: hard limit, name: ResourceQuota name}, e.g. {\"team-a\": {\"requests.nvidia.com/gpu\": "
           "8, \"requests.memory\": \"256Gi\", \"count/jobs\": 10}}",
           json::object()},
          weights,
          {"charge", "string",
           "\"created\" (Kubernetes: jobs hold quota from submission; over quota: refused) or \"running\" (only running "
           "jobs count; over quota: waits)",
           "created"}},
         [](const PluginContext& c) { return std::make_unique<ResourceQuotaPlugin>(c.args, c.name); }});
  r.add({"capacity-queues",
         "Kueue ClusterQueues: per-flavor nominal quota, borrowing from and lending to (hierarchical) cohorts; the "
         "post-filter reclaims lent quota by evicting borrowing jobs (reclaimWithinCohort) and, when asked, the queue's "
         "lower-priority jobs (withinClusterQueue); with fair_sharing, preemption by dominant resource share and, listed "
         "at queue_sort too, admission of the lowest share first (Kueue fair sharing)",
         {"queue_sort", "pre_filter", "filter", "post_filter"},
         {{"queues", "object",
           "ClusterQueue name -> {cohort, resource_groups: [{flavors: [{name: <GPU model>|default, resources: {<resource>: "
           "<nominal> | {nominal_quota, borrowing_limit, lending_limit}}}]}], local_queues, preemption: "
           "{reclaim_within_cohort: Never|LowerPriority|Any (default Any), within_cluster_queue: Never|LowerPriority, "
           "borrow_within_cohort: {policy: Never|LowerPriority, max_priority_threshold}}, fair_sharing: {weight: >= 0 "
           "(default 1)}}",
           json::object()},
          {"fair_sharing", "object",
           "Kueue fair sharing: {enable: bool (default false), preemption_strategies: [LessThanOrEqualToFinalShare, "
           "LessThanInitialShare] (the default; or either alone)}",
           nullptr},
          {"cohorts", "object", "cohort name -> {parent: <cohort>} (hierarchical cohorts)", json::object()},
          {"default_queue", "string", "ClusterQueue for jobs whose queue has none (\"\": such jobs are unresolvable)", ""},
          weights},
         [](const PluginContext& c) { return std::make_unique<CapacityQueuesPlugin>(c.args, c.name); }});
  r.add({"drf",
         "queue order by weighted dominant-resource share (Volcano drf/proportion, YARN DRF): the queue whose current "
         "share is lowest goes first (the jobs ahead in its queue counted as started), then priority, submission, id",
         {"queue_sort"},
         {{"weights", "object", "queue -> weight (> 0; default 1): a queue with weight 2 gets twice the share", json::object()},
          {"order", "string",
           "current-share (Volcano/YARN: the queue's share now) | share-after (gpusched: the share once the job starts, "
           "so small jobs in busier queues can go first)",
           "current-share"}},
         [](const PluginContext& c) { return std::make_unique<DrfSort>(c.args, c.name); }});
}

}  // namespace detail

}  // namespace gpusched::policies
