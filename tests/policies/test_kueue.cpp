// capacity-queues against Kueue's own preemption tests: which workloads Kueue's preemptor
// evicts (pkg/scheduler/preemption: GetTargets, minimalPreemptions, fillBackWorkloads,
// candidatesOrdering, borrowWithinCohort), translated case by case.
//
// Peer: kubernetes-sigs/kueue. Algorithm read in pkg/scheduler/preemption/preemption.go at commit
// 006767fe658f9119f0f4a18c452acb5a6a81b92f; cases from pkg/scheduler/preemption/preemption_test.go
// at commit 014d9490c7f3ca68120582ab72cbfec7c3194aa1, func TestPreemption (case names quoted).
// Facts carry over, not code: each case's queues, admitted workloads, incoming workload and
// expected victims, run through our scheduler (Scheduler::schedule with the plugin at filter and
// post_filter) on one node big enough that only quota decides. Kueue's tests fix the flavor
// assignment as an input ("Preempt" mode); here our flavor assignment computes it, so cases whose
// incoming workload fits the quota without preemption (Kueue's "no workloads borrowing",
// "can't preempt workloads in ClusterQueue for withinClusterQueue=Never") are not translated: we
// admit those workloads.
#include <catch2/catch.hpp>

#include <algorithm>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <gpusched/policies/framework/registry.hpp>
#include <gpusched/policies/framework/scheduler.hpp>
#include <gpusched/policies/quota/capacity_queues.hpp>
#include <gpusched/sim/engine.hpp>

#include "support/support.hpp"

using namespace gpusched;
using namespace gpusched::policies;
using nlohmann::json;
namespace t = gpusched::test;

namespace {

/// The running jobs, as the engine shows them. Specs live in a deque: the Statement keeps
/// pointers to victims' requests.
class Running final : public JobsView {
 public:
  explicit Running(std::size_t nodes) : on_node_(nodes) {}
  [[nodiscard]] SimTime now() const override { return SimTime::zero(); }
  [[nodiscard]] std::span<const JobId> running_on(NodeId n) const override { return on_node_[n.value]; }
  [[nodiscard]] const JobSpec& spec(JobId j) const override { return specs_[j.value]; }
  [[nodiscard]] std::span<const TaskPlacement> placements(JobId j) const override { return where_[j.value]; }
  [[nodiscard]] SimTime started(JobId j) const override { return started_[j.value]; }
  [[nodiscard]] double work_lost_us(JobId) const override { return 0; }

  JobId add(JobSpec s, SimTime started) {
    specs_.push_back(std::move(s));
    where_.emplace_back();
    started_.push_back(started);
    return JobId{static_cast<std::uint32_t>(specs_.size() - 1)};
  }
  void start(JobId j, std::vector<TaskPlacement> p) {
    where_[j.value] = std::move(p);
    for (const auto& x : where_[j.value]) {
      auto& l = on_node_[x.node.value];
      if (std::find(l.begin(), l.end(), j) == l.end()) l.push_back(j);
    }
  }
  void stop(JobId j) {
    for (auto& l : on_node_) std::erase(l, j);
    where_[j.value].clear();
  }

 private:
  std::deque<JobSpec> specs_;
  std::vector<std::vector<TaskPlacement>> where_;
  std::vector<SimTime> started_;
  std::vector<std::vector<JobId>> on_node_;
};

Profile kueue_profile(const json& args) {
  Profile p = builtin_profile("first-fit");
  p.name = "kueue-test";
  p.queue_sort = PluginRef{"priority-fifo"};
  p.filter.push_back(PluginRef{"capacity-queues", 1.0, args});
  p.post_filter = {PluginRef{"capacity-queues"}};
  return p;
}

/// One big CPU node: only the quotas decide.
std::vector<NodeSpec> big_node() { return {t::node("big", 1024, 4096, 0)}; }

/// Kueue's admitted workloads, then one incoming workload, through our scheduler.
struct Kueue {
  ClusterState cluster;
  Running jobs;
  Scheduler sched;
  std::map<std::uint32_t, std::string> names;

  explicit Kueue(const json& args, std::vector<NodeSpec> nodes = big_node())
      : cluster(t::cluster(std::move(nodes))), jobs(cluster.node_count()), sched(kueue_profile(args), Registry::with_builtins(), 1) {
    sched.attach(cluster, {}, &jobs);
  }
  static JobSpec workload(const std::string& name, const std::string& queue, std::int32_t priority, const t::Items& items,
                          std::vector<std::string> models = {}) {
    auto j = t::job(name, 0, 100, t::request(items, std::move(models)), 1, -1, priority);
    j.queue = queue;
    return j;
  }
  /// An admitted workload (ReserveQuotaAt): admitted by the plugin without any preemption.
  void admit(JobSpec s, double started_s = 0) {
    const JobId id = jobs.add(std::move(s), SimTime::from_seconds(started_s));
    names[id.value] = jobs.spec(id).name;
    std::vector<TaskPlacement> out;
    const Status st = sched.schedule(cluster, jobs.spec(id), id, out);
    INFO(jobs.spec(id).name << ": " << st.reason);
    REQUIRE(st.ok());
    REQUIRE(sched.last_victims().empty());
    jobs.start(id, out);
    sched.job_started(jobs.spec(id), id, jobs.placements(id));
  }
  void admit(const std::string& name, const std::string& queue, std::int32_t priority, const t::Items& items) {
    admit(workload(name, queue, priority, items));
  }
  /// The incoming workload: the names of the workloads evicted for it (empty when it was placed
  /// without evicting), or {"<pending>"} when it stays pending.
  std::set<std::string> incoming(JobSpec s) {
    const JobId id = jobs.add(std::move(s), SimTime::zero());
    std::vector<TaskPlacement> out;
    if (!sched.schedule(cluster, jobs.spec(id), id, out).ok()) return {"<pending>"};
    std::set<std::string> victims;
    for (const JobId v : sched.last_victims()) {
      victims.insert(names.at(v.value));
      sched.job_stopped(jobs.spec(v), v, jobs.placements(v));
      jobs.stop(v);
    }
    jobs.start(id, out);
    sched.job_started(jobs.spec(id), id, jobs.placements(id));
    return victims;
  }
  std::set<std::string> incoming(const std::string& queue, std::int32_t priority, const t::Items& items) {
    return incoming(workload("in", queue, priority, items));
  }
};

const std::set<std::string> kPending{"<pending>"};

/// TestPreemption's defaultClusterQueues, those the translated cases use. Kueue's
/// `Resource(name, nominal, borrowingLimit, lendingLimit)`; its "alpha" and "beta" memory flavors
/// are GPU-model flavors here (T4, A100-80GB), the only named flavors gpusched has; their group
/// also covers nvidia.com/gpu with a quota that never binds (a job pinned to a model asks for a GPU).
const json kDefaultClusterQueues = json::parse(R"({
  "cohorts": {"cohort": {}, "cohort-no-limits": {}, "legion": {}, "cohort-lend": {}},
  "queues": {
    "standalone": {
      "resource_groups": [
        {"flavors": [{"name": "default", "resources": {"cpu": 6}}]},
        {"flavors": [{"name": "T4", "resources": {"memory": "3Gi", "nvidia.com/gpu": 100}},
                     {"name": "A100-80GB", "resources": {"memory": "3Gi", "nvidia.com/gpu": 100}}]}],
      "preemption": {"within_cluster_queue": "LowerPriority", "reclaim_within_cohort": "Never"}},
    "c1": {"cohort": "cohort",
      "flavors": [{"name": "default", "resources": {"cpu": {"nominal_quota": 6, "borrowing_limit": 6},
                                                    "memory": {"nominal_quota": "3Gi", "borrowing_limit": "3Gi"}}}],
      "preemption": {"within_cluster_queue": "LowerPriority", "reclaim_within_cohort": "LowerPriority"}},
    "c2": {"cohort": "cohort",
      "flavors": [{"name": "default", "resources": {"cpu": {"nominal_quota": 6, "borrowing_limit": 6},
                                                    "memory": {"nominal_quota": "3Gi", "borrowing_limit": "3Gi"}}}],
      "preemption": {"within_cluster_queue": "Never", "reclaim_within_cohort": "Any"}},
    "d1": {"cohort": "cohort-no-limits",
      "flavors": [{"name": "default", "resources": {"cpu": 6, "memory": "3Gi"}}],
      "preemption": {"within_cluster_queue": "LowerPriority", "reclaim_within_cohort": "LowerPriority"}},
    "d2": {"cohort": "cohort-no-limits",
      "flavors": [{"name": "default", "resources": {"cpu": 6, "memory": "3Gi"}}],
      "preemption": {"within_cluster_queue": "Never", "reclaim_within_cohort": "Any"}},
    "l1": {"cohort": "legion",
      "flavors": [{"name": "default", "resources": {"cpu": {"nominal_quota": 6, "borrowing_limit": 12},
                                                    "memory": {"nominal_quota": "3Gi", "borrowing_limit": "6Gi"}}}],
      "preemption": {"within_cluster_queue": "LowerPriority", "reclaim_within_cohort": "LowerPriority"}},
    "lend1": {"cohort": "cohort-lend",
      "flavors": [{"name": "default", "resources": {"cpu": {"nominal_quota": 6, "lending_limit": 4}}}],
      "preemption": {"within_cluster_queue": "LowerPriority", "reclaim_within_cohort": "LowerPriority"}},
    "lend2": {"cohort": "cohort-lend",
      "flavors": [{"name": "default", "resources": {"cpu": {"nominal_quota": 6, "lending_limit": 2}}}],
      "preemption": {"within_cluster_queue": "LowerPriority", "reclaim_within_cohort": "LowerPriority"}}}})");

/// TestPreemption's "with_shared_cq" cohort: four queues with borrowWithinCohort (LowerPriority,
/// maxPriorityThreshold 0) and a shared queue holding most of the quota.
const json kSharedCohort = json::parse(R"({
  "cohorts": {"with_shared_cq": {}},
  "queues": {
    "a_standard": {"cohort": "with_shared_cq",
      "flavors": [{"name": "default", "resources": {"cpu": {"nominal_quota": 1, "borrowing_limit": 12}}}],
      "preemption": {"within_cluster_queue": "Never", "reclaim_within_cohort": "LowerPriority",
                     "borrow_within_cohort": {"policy": "LowerPriority", "max_priority_threshold": 0}}},
    "b_standard": {"cohort": "with_shared_cq",
      "flavors": [{"name": "default", "resources": {"cpu": {"nominal_quota": 1, "borrowing_limit": 12}}}],
      "preemption": {"within_cluster_queue": "LowerPriority", "reclaim_within_cohort": "Any",
                     "borrow_within_cohort": {"policy": "LowerPriority", "max_priority_threshold": 0}}},
    "a_best_effort": {"cohort": "with_shared_cq",
      "flavors": [{"name": "default", "resources": {"cpu": {"nominal_quota": 1, "borrowing_limit": 12}}}],
      "preemption": {"within_cluster_queue": "Never", "reclaim_within_cohort": "LowerPriority",
                     "borrow_within_cohort": {"policy": "LowerPriority", "max_priority_threshold": 0}}},
    "b_best_effort": {"cohort": "with_shared_cq",
      "flavors": [{"name": "default", "resources": {"cpu": {"nominal_quota": 0, "borrowing_limit": 13}}}],
      "preemption": {"within_cluster_queue": "Never", "reclaim_within_cohort": "LowerPriority",
                     "borrow_within_cohort": {"policy": "LowerPriority", "max_priority_threshold": 0}}},
    "shared": {"cohort": "with_shared_cq",
      "flavors": [{"name": "default", "resources": {"cpu": 10}}],
      "preemption": {"within_cluster_queue": "Never", "reclaim_within_cohort": "Never"}}}})");

t::Items cpu(const std::string& amount) { return {{"cpu", amount}}; }

}  // namespace

// ---------------------------------------------------------------- within the ClusterQueue

// TestPreemption "preempt lowest priority".
TEST_CASE("Kueue TestPreemption: preempt lowest priority", "[kueue]") {
  Kueue k(kDefaultClusterQueues);
  k.admit("low", "standalone", -1, cpu("2"));
  k.admit("mid", "standalone", 0, cpu("2"));
  k.admit("high", "standalone", 1, cpu("2"));
  CHECK(k.incoming("standalone", 1, cpu("2")) == std::set<std::string>{"low"});
}

// TestPreemption "preempt multiple".
TEST_CASE("Kueue TestPreemption: preempt multiple", "[kueue]") {
  Kueue k(kDefaultClusterQueues);
  k.admit("low", "standalone", -1, cpu("2"));
  k.admit("mid", "standalone", 0, cpu("2"));
  k.admit("high", "standalone", 1, cpu("2"));
  CHECK(k.incoming("standalone", 1, cpu("3")) == std::set<std::string>{"low", "mid"});
}

// TestPreemption "no preemption for low priority".
TEST_CASE("Kueue TestPreemption: no preemption for low priority", "[kueue]") {
  Kueue k(kDefaultClusterQueues);
  k.admit("low", "standalone", -1, cpu("3"));
  k.admit("mid", "standalone", 0, cpu("3"));
  CHECK(k.incoming("standalone", -1, cpu("1")) == kPending);
}

// TestPreemption "not enough low priority workloads".
TEST_CASE("Kueue TestPreemption: not enough low priority workloads", "[kueue]") {
  Kueue k(kDefaultClusterQueues);
  k.admit("low", "standalone", -1, cpu("3"));
  k.admit("mid", "standalone", 0, cpu("3"));
  CHECK(k.incoming("standalone", 0, cpu("4")) == kPending);
}

// TestPreemption "some free quota, preempt low priority".
TEST_CASE("Kueue TestPreemption: some free quota, preempt low priority", "[kueue]") {
  Kueue k(kDefaultClusterQueues);
  k.admit("low", "standalone", -1, cpu("1"));
  k.admit("mid", "standalone", 0, cpu("1"));
  k.admit("high", "standalone", 1, cpu("3"));
  CHECK(k.incoming("standalone", 1, cpu("2")) == std::set<std::string>{"low"});
}

// TestPreemption "minimal set excludes low priority": the issue 12 example. Taking low (1 CPU)
// then mid (2 CPUs) makes room; putting low back still leaves room, so only mid is evicted.
TEST_CASE("Kueue TestPreemption: minimal set excludes low priority", "[kueue]") {
  Kueue k(kDefaultClusterQueues);
  k.admit("low", "standalone", -1, cpu("1"));
  k.admit("mid", "standalone", 0, cpu("2"));
  k.admit("high", "standalone", 1, cpu("3"));
  CHECK(k.incoming("standalone", 1, cpu("2")) == std::set<std::string>{"mid"});
}

// TestPreemption "only preempt workloads using the chosen flavor": the incoming workload's memory
// goes to flavor beta (A100-80GB here; Kueue's case fixes the assignment, here the jobs are
// pinned to a model, with one GPU each), its CPU fits; low holds memory of alpha (T4) and is no
// candidate.
TEST_CASE("Kueue TestPreemption: only preempt workloads using the chosen flavor", "[kueue]") {
  Kueue k(kDefaultClusterQueues, {t::node("alpha", 64, 256, 4, "T4"), t::node("beta", 64, 256, 4, "A100-80GB")});
  k.admit(Kueue::workload("low", "standalone", -1, {{"memory", "2Gi"}, {"nvidia.com/gpu", "1"}}, {"T4"}));
  k.admit(Kueue::workload("mid", "standalone", 0, {{"memory", "1Gi"}, {"nvidia.com/gpu", "1"}}, {"A100-80GB"}));
  k.admit(Kueue::workload("high", "standalone", 1, {{"memory", "1Gi"}, {"nvidia.com/gpu", "1"}}, {"A100-80GB"}));
  CHECK(k.incoming(Kueue::workload("in", "standalone", 1, {{"cpu", "1"}, {"memory", "2Gi"}, {"nvidia.com/gpu", "1"}},
                                   {"A100-80GB"})) == std::set<std::string>{"mid"});
}

// ---------------------------------------------------------------- reclaim within the cohort

// TestPreemption "reclaim quota from borrower".
TEST_CASE("Kueue TestPreemption: reclaim quota from borrower", "[kueue]") {
  Kueue k(kDefaultClusterQueues);
  k.admit("c1-low", "c1", -1, cpu("3"));
  k.admit("c2-mid", "c2", 0, cpu("3"));
  k.admit("c2-high", "c2", 1, cpu("6"));
  CHECK(k.incoming("c1", 1, cpu("3")) == std::set<std::string>{"c2-mid"});
}

// TestPreemption "not enough workloads borrowing": after one c2 workload goes, c2 no longer
// borrows and c1 would have to borrow; nothing is evicted.
TEST_CASE("Kueue TestPreemption: not enough workloads borrowing", "[kueue]") {
  Kueue k(kDefaultClusterQueues);
  k.admit("c1-high", "c1", 1, cpu("4"));
  k.admit("c2-low-1", "c2", -1, cpu("4"));
  k.admit("c2-low-2", "c2", -1, cpu("4"));
  CHECK(k.incoming("c1", 1, cpu("4")) == kPending);
}

// TestPreemption "preempting locally and borrowing same resource in cohort".
TEST_CASE("Kueue TestPreemption: preempting locally and borrowing same resource in cohort", "[kueue]") {
  Kueue k(kDefaultClusterQueues);
  k.admit("c1-med", "c1", 0, cpu("4"));
  k.admit("c1-low", "c1", -1, cpu("4"));
  k.admit("c2-low-1", "c2", -1, cpu("4"));
  CHECK(k.incoming("c1", 1, cpu("4")) == std::set<std::string>{"c1-low"});
}

// TestPreemption "preempting locally and borrowing same resource in cohort; no borrowing limit in
// the cohort".
TEST_CASE("Kueue TestPreemption: preempting locally and borrowing same resource in cohort; no borrowing limit", "[kueue]") {
  Kueue k(kDefaultClusterQueues);
  k.admit("d1-med", "d1", 0, cpu("4"));
  k.admit("d1-low", "d1", -1, cpu("4"));
  k.admit("d2-low-1", "d2", -1, cpu("4"));
  CHECK(k.incoming("d1", 1, cpu("4")) == std::set<std::string>{"d1-low"});
}

// TestPreemption "preempting locally and not borrowing same resource in 1-queue cohort": l1-low
// is taken first but put back, as the job fits without it once l1-med is gone.
TEST_CASE("Kueue TestPreemption: preempting locally and not borrowing same resource in 1-queue cohort", "[kueue]") {
  Kueue k(kDefaultClusterQueues);
  k.admit("l1-med", "l1", 0, cpu("4"));
  k.admit("l1-low", "l1", -1, cpu("2"));
  CHECK(k.incoming("l1", 1, cpu("4")) == std::set<std::string>{"l1-med"});
}

// TestPreemption "do not reclaim borrowed quota from same priority for
// withinCohort=ReclaimFromLowerPriority".
TEST_CASE("Kueue TestPreemption: do not reclaim borrowed quota from same priority for LowerPriority", "[kueue]") {
  Kueue k(kDefaultClusterQueues);
  k.admit("c1", "c1", 0, cpu("2"));
  k.admit("c2-1", "c2", 0, cpu("4"));
  k.admit("c2-2", "c2", 0, cpu("4"));
  CHECK(k.incoming("c1", 0, cpu("4")) == kPending);
}

// TestPreemption "reclaim borrowed quota from same priority for withinCohort=ReclaimFromAny".
TEST_CASE("Kueue TestPreemption: reclaim borrowed quota from same priority for Any", "[kueue]") {
  Kueue k(kDefaultClusterQueues);
  k.admit("c1-1", "c1", 0, cpu("4"));
  k.admit("c1-2", "c1", 1, cpu("4"));
  k.admit("c2", "c2", 0, cpu("2"));
  CHECK(k.incoming("c2", 0, cpu("4")) == std::set<std::string>{"c1-1"});
}

// TestPreemption "preempt from all ClusterQueues in cohort": c2-low alone is not enough without
// borrowing, c1-low completes it, and putting c2-low back no longer fits.
TEST_CASE("Kueue TestPreemption: preempt from all ClusterQueues in cohort", "[kueue]") {
  Kueue k(kDefaultClusterQueues);
  k.admit("c1-low", "c1", -1, cpu("3"));
  k.admit("c1-mid", "c1", 0, cpu("2"));
  k.admit("c2-low", "c2", -1, cpu("3"));
  k.admit("c2-mid", "c2", 0, cpu("4"));
  CHECK(k.incoming("c1", 0, cpu("4")) == std::set<std::string>{"c1-low", "c2-low"});
}

// TestPreemption "reclaim quota from lender" (lending limits 4 and 2).
TEST_CASE("Kueue TestPreemption: reclaim quota from lender", "[kueue]") {
  Kueue k(kDefaultClusterQueues);
  k.admit("lend1-low", "lend1", -1, cpu("3"));
  k.admit("lend2-mid", "lend2", 0, cpu("3"));
  k.admit("lend2-high", "lend2", 1, cpu("4"));
  CHECK(k.incoming("lend1", 1, cpu("3")) == std::set<std::string>{"lend2-mid"});
}

// ---------------------------------------------------------------- borrowWithinCohort

// TestPreemption "use BorrowWithinCohort; allow preempting a lower-priority workload from another
// ClusterQueue while borrowing".
TEST_CASE("Kueue TestPreemption: BorrowWithinCohort preempts a lower-priority workload of another queue while borrowing",
          "[kueue]") {
  Kueue k(kSharedCohort);
  k.admit("a_best_effort_low", "a_best_effort", -1, cpu("10"));
  k.admit("b_best_effort_low", "b_best_effort", -1, cpu("1"));
  CHECK(k.incoming("a_standard", 0, cpu("10")) == std::set<std::string>{"a_best_effort_low"});
}

// TestPreemption "use BorrowWithinCohort; don't allow preempting a lower-priority workload with
// priority above MaxPriorityThreshold, if borrowing is required even after the preemption".
TEST_CASE("Kueue TestPreemption: BorrowWithinCohort does not preempt above the threshold when the job must still borrow",
          "[kueue]") {
  Kueue k(kSharedCohort);
  k.admit("b_standard", "b_standard", 1, cpu("10"));
  CHECK(k.incoming("a_standard", 2, cpu("10")) == kPending);
}

// TestPreemption "use BorrowWithinCohort; allow preempting a lower-priority workload with priority
// above MaxPriorityThreshold, if borrowing is not required after the preemption".
TEST_CASE("Kueue TestPreemption: BorrowWithinCohort preempts above the threshold when the job then fits its nominal quota",
          "[kueue]") {
  Kueue k(kSharedCohort);
  k.admit("b_standard", "b_standard", 1, cpu("13"));
  CHECK(k.incoming("a_standard", 2, cpu("1")) == std::set<std::string>{"b_standard"});
}

// TestPreemption "use BorrowWithinCohort; don't allow for preemption of lower-priority workload
// from the same ClusterQueue" (a_standard: withinClusterQueue Never).
TEST_CASE("Kueue TestPreemption: BorrowWithinCohort does not preempt the queue's own workloads", "[kueue]") {
  Kueue k(kSharedCohort);
  k.admit("a_standard", "a_standard", 1, cpu("13"));
  CHECK(k.incoming("a_standard", 2, cpu("1")) == kPending);
}

// TestPreemption "use BorrowWithinCohort; only preempt from CQ if no workloads below threshold and
// already above nominal".
TEST_CASE("Kueue TestPreemption: BorrowWithinCohort above nominal preempts only below the threshold, else its own",
          "[kueue]") {
  Kueue k(kSharedCohort);
  k.admit("a_standard_1", "a_standard", 1, cpu("10"));
  k.admit("a_standard_2", "a_standard", 1, cpu("1"));
  k.admit("b_standard_1", "b_standard", 1, cpu("1"));
  k.admit("b_standard_2", "b_standard", 2, cpu("1"));
  CHECK(k.incoming("b_standard", 3, cpu("1")) == std::set<std::string>{"b_standard_1"});
}

// TestPreemption "use BorrowWithinCohort; preempt from CQ and from other CQs with workloads below
// threshold": a_best_effort stops borrowing after one victim, so its second workload is skipped.
TEST_CASE("Kueue TestPreemption: BorrowWithinCohort preempts from its own queue and from others below the threshold",
          "[kueue]") {
  Kueue k(kSharedCohort);
  k.admit("b_standard_high", "b_standard", 2, cpu("10"));
  k.admit("b_standard_mid", "b_standard", 1, cpu("1"));
  k.admit("a_best_effort_low", "a_best_effort", -1, cpu("1"));
  k.admit("a_best_effort_lower", "a_best_effort", -2, cpu("1"));
  CHECK(k.incoming("b_standard", 2, cpu("2")) == std::set<std::string>{"b_standard_mid", "a_best_effort_lower"});
}

TEST_CASE("Without borrow_within_cohort the same queue does not preempt another queue's workload to borrow", "[kueue]") {
  // The first BorrowWithinCohort case with the policy off: a_standard's request (10) exceeds its
  // nominal quota (1), so Kueue's flavor assignment gives no "Preempt" mode and nothing is evicted.
  json args = kSharedCohort;
  args["queues"]["a_standard"]["preemption"].erase("borrow_within_cohort");
  Kueue k(args);
  k.admit("a_best_effort_low", "a_best_effort", -1, cpu("10"));
  k.admit("b_best_effort_low", "b_best_effort", -1, cpu("1"));
  CHECK(k.incoming("a_standard", 0, cpu("10")) == kPending);
}

// ---------------------------------------------------------------- the engine

// Issue 12: gpusched evicted both a low- and a mid-priority workload, then restarted the low one
// at the same instant. With Kueue's minimal set only mid is evicted and counted.
TEST_CASE("The engine evicts only Kueue's minimal set and counts only real evictions", "[kueue]") {
  const json args = json::parse(R"({"queues": {"q": {"flavors": [{"name": "default", "resources": {"cpu": 6}}],
                                                     "preemption": {"within_cluster_queue": "LowerPriority"}}}})");
  auto job = [](const std::string& name, double submit, std::int32_t priority, const std::string& cores) {
    auto j = t::job(name, submit, 100, t::request({{"cpu", cores}}), 1, -1, priority);
    j.queue = "q";
    return j;
  };
  ClusterState cluster = t::cluster(big_node());
  Workload w{job("low", 0, -1, "1"), job("mid", 0, 0, "2"), job("high", 0, 1, "3"), job("in", 10, 1, "2")};
  Scheduler sched(kueue_profile(args), Registry::with_builtins(), 1);
  sim::Engine engine(cluster, w, sched, {});
  engine.run();
  CHECK(engine.job(JobId{3}).start == SimTime::from_seconds(10));
  CHECK(engine.job(JobId{0}).evictions == 0);
  CHECK(engine.job(JobId{0}).attempts == 1);
  CHECK(engine.job(JobId{0}).start == SimTime::zero());
  CHECK(engine.job(JobId{1}).evictions == 1);
  CHECK(engine.job(JobId{1}).start == SimTime::from_seconds(100));   // restarted when low and high finish
  CHECK(engine.job(JobId{2}).evictions == 0);
  CHECK(engine.preemptions() == 1);
  CHECK(t::cluster_empty(cluster));
}

// ---------------------------------------------------------------- configuration

TEST_CASE("borrow_within_cohort is validated as Kueue validates it", "[kueue]") {
  auto error = [](const json& args) -> std::string {
    try {
      Scheduler sched(kueue_profile(args), Registry::with_builtins(), 1);
    } catch (const ProfileError& e) {
      return e.where().field + ": " + e.detail();
    }
    return "no error";
  };
  auto with = [](const json& preemption, bool cohort = true) {
    json q = {{"flavors", json::parse(R"([{"name": "default", "resources": {"cpu": 4}}])")}, {"preemption", preemption}};
    if (cohort) q["cohort"] = "pool";
    return json{{"cohorts", {{"pool", json::object()}}}, {"queues", {{"q", q}}}};
  };
  CHECK(error(with(json::parse(R"({"borrow_within_cohort": {"policy": "LowerPriority", "max_priority_threshold": 5}})"))) == "no error");
  CHECK(error(with(json::parse(R"({"borrow_within_cohort": {"policy": "Never"}})"))) == "no error");
  CHECK_THAT(error(with(json::parse(R"({"borrow_within_cohort": {"policy": "Sometimes"}})"))),
             Catch::StartsWith("capacity-queues/args/queues/q/preemption/borrow_within_cohort/policy"));
  CHECK_THAT(error(with(json::parse(R"({"borrow_within_cohort": {}})"))),
             Catch::StartsWith("capacity-queues/args/queues/q/preemption/borrow_within_cohort/policy:") &&
                 Catch::Contains("missing"));
  CHECK_THAT(error(with(json::parse(R"({"borrow_within_cohort": {"policy": "LowerPriority", "max_priority_threshold": "high"}})"))),
             Catch::StartsWith("capacity-queues/args/queues/q/preemption/borrow_within_cohort/max_priority_threshold"));
  CHECK_THAT(error(with(json::parse(R"({"reclaim_within_cohort": "Never", "borrow_within_cohort": {"policy": "LowerPriority"}})"))),
             Catch::Contains("reclaim_within_cohort other than Never"));
  // Outside a cohort the policy has no effect; Kueue accepts it.
  CHECK(error(with(json::parse(R"({"borrow_within_cohort": {"policy": "LowerPriority"}})"), false)) == "no error");
  CHECK_THAT(error(with(json::parse(R"({"borrow_within_cohort": {"policy": "LowerPriority", "threshold": 1}})"))),
             Catch::StartsWith("capacity-queues/args/queues/q/preemption/borrow_within_cohort/threshold"));
}

// Issue 12 item 8: the kueue-cohorts preset without ClusterQueues enforces nothing, and says so.
TEST_CASE("kueue-cohorts without a ClusterQueue warns that every job is admitted without quota", "[kueue]") {
  Scheduler bare(builtin_profile("kueue-cohorts"), Registry::with_builtins(), 1);
  const auto warnings = bare.warnings();
  REQUIRE(warnings.size() == 1);
  CHECK_THAT(warnings[0], Catch::StartsWith("capacity-queues: no ClusterQueue configured") && Catch::Contains("kueue-cohorts"));
  Scheduler configured(kueue_profile(kSharedCohort), Registry::with_builtins(), 1);
  CHECK(configured.warnings().empty());
}

// ================================================================ fair sharing
//
// Kueue fair sharing (Configuration fairSharing.enable, ClusterQueue fairSharing.weight).
// Algorithm read at kubernetes-sigs/kueue: pkg/scheduler/preemption/fair_strategy.go
// @2cfce05143a49003419c411e08f6f3698012f7ce, fairsharing/ordering.go @00b0d4bdf17c9d981307d1a8b7ec87c9c78d3482,
// fairsharing/strategy.go @0249ffa036b0aa225e18bcc602b3a8d0b0358863, pkg/cache dominantResourceShare,
// pkg/scheduler/fair_sharing_iterator.go @00b0d4bdf17c9d981307d1a8b7ec87c9c78d3482. Cases from
// pkg/scheduler/preemption/preemption_fair_test.go @054bf63476ae9203a912522cf9daea8960811ad1, func
// TestFairPreemptions (case names quoted), and pkg/scheduler/scheduler_test.go
// @78143e695aed235b3e1af86db9f7a8e48dcaaf3a, func TestSchedule. Kueue's admitted workloads share
// one admission time and tie-break by UID; where a case's answer depends on that tie, the
// check names the queue the victims come from, not the workload.

namespace {

/// TestFairPreemptions' baseCQs: a, b, c with 3 CPUs each and "preemptible" with 0, cohort "all".
/// (Their borrowWithinCohort has no effect under fair sharing, as the peer's case comment says.)
json fair_cqs(const json& fair_sharing = json{{"enable", true}}, double weight_a = 1, double weight_b = 1) {
  json args = json::parse(R"({
    "cohorts": {"all": {}},
    "queues": {
      "a": {"cohort": "all", "flavors": [{"name": "default", "resources": {"cpu": 3}}],
            "preemption": {"within_cluster_queue": "LowerPriority", "reclaim_within_cohort": "Any",
                           "borrow_within_cohort": {"policy": "LowerPriority", "max_priority_threshold": -3}}},
      "b": {"cohort": "all", "flavors": [{"name": "default", "resources": {"cpu": 3}}],
            "preemption": {"within_cluster_queue": "LowerPriority", "reclaim_within_cohort": "Any",
                           "borrow_within_cohort": {"policy": "LowerPriority", "max_priority_threshold": -3}}},
      "c": {"cohort": "all", "flavors": [{"name": "default", "resources": {"cpu": 3}}],
            "preemption": {"within_cluster_queue": "LowerPriority", "reclaim_within_cohort": "Any",
                           "borrow_within_cohort": {"policy": "LowerPriority", "max_priority_threshold": -3}}},
      "preemptible": {"cohort": "all", "flavors": [{"name": "default", "resources": {"cpu": 0}}]}}})");
  args["fair_sharing"] = fair_sharing;
  if (weight_a != 1) args["queues"]["a"]["fair_sharing"] = {{"weight", weight_a}};
  if (weight_b != 1) args["queues"]["b"]["fair_sharing"] = {{"weight", weight_b}};
  return args;
}

/// Admits `n` one-CPU workloads named <queue><i> (i from 1) to a queue.
void units(Kueue& k, const std::string& queue, int n, std::int32_t priority = 0) {
  for (int i = 1; i <= n; ++i) k.admit(queue + std::to_string(i), queue, priority, cpu("1"));
}

/// How many victims come from each queue (victim names start with their queue's name).
std::map<std::string, int> by_queue(const std::set<std::string>& victims) {
  std::map<std::string, int> out;
  for (const auto& v : victims) ++out[v.substr(0, 1)];
  return out;
}

}  // namespace

// TestFairPreemptions "reclaim nominal from user using the most": c (1 of 3) takes one back from
// b, the queue with the highest share (5 of 3).
TEST_CASE("Kueue TestFairPreemptions: reclaim nominal from user using the most", "[kueue-fair]") {
  Kueue k(fair_cqs());
  units(k, "a", 3);
  units(k, "b", 5);
  units(k, "c", 1);
  CHECK(by_queue(k.incoming("c", 0, cpu("1"))) == std::map<std::string, int>{{"b", 1}});
}

// TestFairPreemptions "can't preempt when it would switch the imbalance": a would borrow 2 (share
// 222) and b, after losing one unit, 1 (111): neither strategy holds.
TEST_CASE("Kueue TestFairPreemptions: can't preempt when it would switch the imbalance", "[kueue-fair]") {
  Kueue k(fair_cqs());
  units(k, "a", 3);
  units(k, "b", 5);
  CHECK(k.incoming("a", 0, cpu("2")) == kPending);
}

// TestFairPreemptions "can preempt a combination of same CQ and highest user": a_low of a
// (withinClusterQueue) and one workload of b.
TEST_CASE("Kueue TestFairPreemptions: can preempt a combination of same CQ and highest user", "[kueue-fair]") {
  Kueue k(fair_cqs());
  k.admit("a_low", "a", -1, cpu("1"));
  k.admit("a2", "a", 0, cpu("1"));
  k.admit("a3", "a", 0, cpu("1"));
  units(k, "b", 6);
  const auto victims = k.incoming("a", 0, cpu("2"));
  CHECK(victims.count("a_low") == 1);
  CHECK(by_queue(victims) == std::map<std::string, int>{{"a", 1}, {"b", 1}});
}

// TestFairPreemptions "prefer to preempt workloads that don't make the target CQ have the biggest
// share": b2 (1 CPU) passes LessThanOrEqualToFinalShare, b1 and b3 (2 CPUs) would leave b below
// a's final share. "It would have been possible to preempt /b1 under rule S2-b, but S2-a was
// possible first."
TEST_CASE("Kueue TestFairPreemptions: prefer to preempt workloads that don't make the target CQ have the biggest share",
          "[kueue-fair]") {
  Kueue k(fair_cqs());
  k.admit("b1", "b", 0, cpu("2"));
  k.admit("b2", "b", 0, cpu("1"));
  k.admit("b3", "b", 0, cpu("2"));
  k.admit("c1", "c", 0, cpu("1"));
  CHECK(k.incoming("a", 0, cpu("3.5")) == std::set<std::string>{"b2"});
}

// TestFairPreemptions "preempt lower priority first, even if big" (strategies:
// [LessThanInitialShare]).
TEST_CASE("Kueue TestFairPreemptions: preempt lower priority first, even if big", "[kueue-fair]") {
  Kueue k(fair_cqs(json::parse(R"({"enable": true, "preemption_strategies": ["LessThanInitialShare"]})")));
  k.admit("a1", "a", 0, cpu("3"));
  k.admit("b_low", "b", 0, cpu("5"));
  k.admit("b_high", "b", 1, cpu("1"));
  CHECK(k.incoming("a", 0, cpu("1")) == std::set<std::string>{"b_low"});
}

// TestFairPreemptions "preempt workload that doesn't transfer the imbalance, even if high
// priority" (strategies: [LessThanOrEqualToFinalShare]).
TEST_CASE("Kueue TestFairPreemptions: preempt workload that doesn't transfer the imbalance, even if high priority",
          "[kueue-fair]") {
  Kueue k(fair_cqs(json::parse(R"({"enable": true, "preemption_strategies": ["LessThanOrEqualToFinalShare"]})")));
  k.admit("a1", "a", 0, cpu("3"));
  k.admit("b_low", "b", 0, cpu("5"));
  k.admit("b_high", "b", 1, cpu("1"));
  CHECK(k.incoming("a", 0, cpu("1")) == std::set<std::string>{"b_high"});
}

// TestFairPreemptions "CQ with higher weight can preempt more": a weighs 2 (the case's queues
// have no borrowWithinCohort; it has no effect under fair sharing).
TEST_CASE("Kueue TestFairPreemptions: CQ with higher weight can preempt more", "[kueue-fair]") {
  Kueue k(fair_cqs(json{{"enable", true}}, 2.0));
  units(k, "a", 3);
  units(k, "b", 6);
  CHECK(by_queue(k.incoming("a", 0, cpu("2"))) == std::map<std::string, int>{{"b", 2}});
  // The same with weight 1: a's final share is 222; b falls to 222 after one removal (taken,
  // <=) and would fall to 111 after a second (refused, and 222 < 222 fails too): still no room,
  // so nothing is evicted and the job stays pending.
  Kueue even(fair_cqs());
  units(even, "a", 3);
  units(even, "b", 6);
  CHECK(even.incoming("a", 0, cpu("2")) == kPending);
}

// TestFairPreemptions "can preempt anything borrowing from CQ with 0 weight": b's share is
// infinite while it borrows.
TEST_CASE("Kueue TestFairPreemptions: can preempt anything borrowing from CQ with 0 weight", "[kueue-fair]") {
  Kueue k(fair_cqs(json{{"enable", true}}, 1.0, 0.0));
  units(k, "a", 3);
  units(k, "b", 6);
  CHECK(by_queue(k.incoming("a", 0, cpu("3"))) == std::map<std::string, int>{{"b", 3}});
}

// TestFairPreemptions "can't preempt nominal from CQ with 0 weight": b does not borrow.
TEST_CASE("Kueue TestFairPreemptions: can't preempt nominal from CQ with 0 weight", "[kueue-fair]") {
  json args = fair_cqs(json{{"enable", true}}, 1.0, 0.0);
  args["queues"].erase("c");
  args["queues"].erase("preemptible");
  Kueue k(args);
  units(k, "a", 3);
  units(k, "b", 3);
  CHECK(k.incoming("a", 0, cpu("1")) == kPending);
}

// TestFairPreemptions "preempt from target and others even if over nominal": a (at nominal)
// preempts one of its own low-priority workloads and one of b's, to borrow (fair sharing lets a
// queue preempt while borrowing). Kueue's answer is {a1_low (2 CPUs), b1}; which of a's two
// equally old low-priority workloads goes is a UID tie there.
TEST_CASE("Kueue TestFairPreemptions: preempt from target and others even if over nominal", "[kueue-fair]") {
  Kueue k(fair_cqs());
  k.admit("a1_low", "a", -1, cpu("2"));
  k.admit("a2_low", "a", -1, cpu("1"));
  k.admit("b1", "b", 0, cpu("3"));
  k.admit("b2", "b", 0, cpu("3"));
  const auto victims = k.incoming("a", 0, cpu("4"));
  CHECK(by_queue(victims) == std::map<std::string, int>{{"a", 1}, {"b", 1}});
  // Without fair sharing, borrowWithinCohort (threshold -3) protects b's workloads and a's own
  // low-priority ones do not make room: nothing is preempted.
  Kueue classic(fair_cqs(json{{"enable", false}}));
  classic.admit("a1_low", "a", -1, cpu("2"));
  classic.admit("a2_low", "a", -1, cpu("1"));
  classic.admit("b1", "b", 0, cpu("3"));
  classic.admit("b2", "b", 0, cpu("3"));
  CHECK(classic.incoming("a", 0, cpu("4")) == kPending);
}

// TestFairPreemptions "can't preempt 2 smaller workloads if the incoming is huge".
TEST_CASE("Kueue TestFairPreemptions: can't preempt 2 smaller workloads if the incoming is huge", "[kueue-fair]") {
  Kueue k(fair_cqs());
  k.admit("b1", "b", 0, cpu("2"));
  k.admit("b2", "b", 0, cpu("2"));
  k.admit("b3", "b", 0, cpu("3"));
  CHECK(k.incoming("a", 0, cpu("6")) == kPending);
}

// scheduler_test.go TestSchedule "with fair sharing: schedule workload with lowest share first":
// eng-alpha holds its nominal 50 CPUs, eng-beta borrows 5 (55 of 50) from eng-shared (10, lent
// whole); 5 CPUs are free. Pending: older_new (eng-beta, 1 CPU, older) and new (eng-alpha, 5
// CPUs). eng-alpha's share with new (5/110) is below eng-beta's with older_new (6/110): new is
// admitted, older_new is left. (Kueue's fixture: eng-alpha and eng-beta have 50 CPUs of
// on-demand and may borrow; the case adds eng-shared; their preemption is Kueue's default,
// Never.) Without fair sharing, the older workload goes first and new does not fit.
TEST_CASE("Kueue TestSchedule: with fair sharing, schedule workload with lowest share first", "[kueue-fair]") {
  auto run = [](bool fair) {
    json args = json::parse(R"({
      "cohorts": {"eng": {}},
      "queues": {
        "eng-alpha": {"cohort": "eng", "flavors": [{"name": "default", "resources": {"cpu": 50}}],
                      "preemption": {"reclaim_within_cohort": "Never"}},
        "eng-beta": {"cohort": "eng", "flavors": [{"name": "default", "resources": {"cpu": 50}}],
                     "preemption": {"reclaim_within_cohort": "Never"}},
        "eng-shared": {"cohort": "eng", "flavors": [{"name": "default", "resources": {"cpu": {"nominal_quota": 10,
                                                                                                  "borrowing_limit": 0}}}],
                       "preemption": {"reclaim_within_cohort": "Never"}}}})");
    args["fair_sharing"] = {{"enable", fair}};
    Profile p = kueue_profile(args);
    p.queue_sort = PluginRef{"capacity-queues"};   // args written at filter configure it
    auto job = [](const std::string& name, const std::string& queue, double submit, int tasks) {
      auto j = t::job(name, submit, 1000, t::request({{"cpu", "1"}}), tasks, -1, 0);
      j.queue = queue;
      return j;
    };
    ClusterState cluster = t::cluster(big_node());
    Workload w{job("all_nominal", "eng-alpha", 0, 50), job("borrowing", "eng-beta", 0, 55), job("older_new", "eng-beta", 10, 1),
               job("new", "eng-alpha", 10, 5)};
    Scheduler sched(p, Registry::with_builtins(), 1);
    CHECK(sched.warnings().empty());
    sim::Engine engine(cluster, w, sched, {});
    engine.run();
    CHECK(engine.job(JobId{0}).start == SimTime::zero());
    CHECK(engine.job(JobId{1}).start == SimTime::zero());
    return std::pair{engine.job(JobId{2}).start, engine.job(JobId{3}).start};
  };
  const auto [older_fair, new_fair] = run(true);
  CHECK(new_fair == SimTime::from_seconds(10));
  CHECK(older_fair > SimTime::from_seconds(10));
  const auto [older_fifo, new_fifo] = run(false);
  CHECK(older_fifo == SimTime::from_seconds(10));
  CHECK(new_fifo > SimTime::from_seconds(10));
}

TEST_CASE("Kueue dominant resource share: borrowing over what the cohort lends, per weight", "[kueue-fair]") {
  CapacityQueuesPlugin plugin(fair_cqs(json{{"enable", true}}, 2.0), "capacity-queues");
  ClusterState cluster = t::cluster(big_node());
  Running jobs(cluster.node_count());
  plugin.attach(cluster, {}, &jobs);
  auto start = [&](const std::string& queue, const std::string& cores) {
    const JobId id = jobs.add(Kueue::workload("w", queue, 0, cpu(cores)), SimTime::zero());
    plugin.job_started(jobs.spec(id), id, {});
  };
  start("a", "3");
  start("b", "5");
  CHECK(plugin.dominant_resource_share("a") == 0);     // at nominal: borrows nothing
  CHECK(plugin.dominant_resource_share("b") == 222);   // 2 of the 9 the cohort lends: 2000 / 9
  CHECK(plugin.dominant_resource_share("c") == 0);
  start("a", "1");                                       // a borrows 1 of 9, weight 2
  CHECK(plugin.dominant_resource_share("a") == 55);    // 1000 / 9 = 111, x 1000 / 2000
}

TEST_CASE("fair_sharing is validated as Kueue validates it", "[kueue-fair]") {
  auto error = [](const json& args) -> std::string {
    try {
      Scheduler sched(kueue_profile(args), Registry::with_builtins(), 1);
    } catch (const ProfileError& e) {
      return e.where().field + ": " + e.detail();
    }
    return "no error";
  };
  CHECK(error(fair_cqs()) == "no error");
  CHECK(error(fair_cqs(json::parse(R"({"enable": true, "preemption_strategies": ["LessThanInitialShare"]})"))) == "no error");
  CHECK_THAT(error(fair_cqs(json::parse(R"({"enable": true, "preemption_strategies": ["LessThanInitialShare", "LessThanOrEqualToFinalShare"]})"))),
             Catch::StartsWith("capacity-queues/args/fair_sharing/preemption_strategies"));
  CHECK_THAT(error(fair_cqs(json::parse(R"({"enable": true, "preemption_strategies": ["Fair"]})"))),
             Catch::StartsWith("capacity-queues/args/fair_sharing/preemption_strategies/0"));
  CHECK_THAT(error(fair_cqs(json::parse(R"({"enable": "yes"})"))), Catch::StartsWith("capacity-queues/args/fair_sharing/enable"));
  CHECK_THAT(error(fair_cqs(json::parse(R"({"enabled": true})"))), Catch::StartsWith("capacity-queues/args/fair_sharing/enabled"));
  CHECK_THAT(error(fair_cqs(json{{"enable", true}}, -1.0)), Catch::StartsWith("capacity-queues/args/queues/a/fair_sharing/weight"));
  CHECK(error(fair_cqs(json{{"enable", true}}, 0.0)) == "no error");
  // Enabled without the queue sort: preemption follows the shares, admission order does not.
  Scheduler s(kueue_profile(fair_cqs()), Registry::with_builtins(), 1);
  REQUIRE(s.warnings().size() == 1);
  CHECK_THAT(s.warnings()[0], Catch::Contains("not the queue sort"));
}
