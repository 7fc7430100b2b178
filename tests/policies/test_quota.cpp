// Quotas and fair sharing: Kubernetes ResourceQuota (`resource-quota`), Kueue ClusterQueues with
// cohorts, borrowing, lending and reclaim (`capacity-queues`), weighted DRF queue order (`drf`).
// Small cases are worked out by hand; the property test runs random workloads through the engine.
#include <catch2/catch.hpp>

#include <algorithm>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <gpusched/policies/framework/registry.hpp>
#include <gpusched/policies/framework/scheduler.hpp>
#include <gpusched/policies/quota/drf.hpp>
#include <gpusched/rng.hpp>
#include <gpusched/sim/engine.hpp>

#include "support/support.hpp"

using namespace gpusched;
using namespace gpusched::policies;
using nlohmann::json;
namespace t = gpusched::test;

namespace {

SimTime s(std::int64_t seconds) { return SimTime::from_seconds(seconds); }

JobSpec gpu_job(const std::string& name, const std::string& queue, double submit, double duration, int gpus,
                std::int32_t priority = 0, std::int32_t tasks = 1) {
  auto j = t::job(name, submit, duration, t::request({{"cpu", "1"}, {"memory", "1Gi"}, {"nvidia.com/gpu", std::to_string(gpus)}}),
                  tasks, -1, priority);
  j.queue = queue;
  return j;
}

JobSpec mig_job(const std::string& name, const std::string& queue, const std::string& profile) {
  auto j = t::job(name, 0, 100, t::request({{"cpu", "1"}, {"nvidia.com/mig-" + profile, "1"}}));
  j.queue = queue;
  return j;
}

std::vector<NodeSpec> t4_nodes(int n, int gpus = 4) {
  std::vector<NodeSpec> out;
  for (int i = 0; i < n; ++i) out.push_back(t::node(t::numbered("n", i), 16, 64, gpus, "T4"));
  return out;
}

Profile with_resource_quota(const json& args) {
  Profile p = builtin_profile("first-fit");
  p.name = "resource-quota-test";
  p.pre_filter = {PluginRef{"resource-quota", 1.0, args}};
  return p;
}

Profile with_capacity_queues(const json& args, const std::string& queue_sort = "priority-fifo") {
  Profile p = builtin_profile("first-fit");
  p.name = "capacity-queues-test";
  p.queue_sort = PluginRef{queue_sort};
  p.filter.push_back(PluginRef{"capacity-queues", 1.0, args});
  p.post_filter = {PluginRef{"capacity-queues"}};
  return p;
}

Profile with_drf(const json& weights, const std::string& order = "") {
  Profile p = builtin_profile("first-fit");
  p.name = "drf-test";
  json args{{"weights", weights}};
  if (!order.empty()) args["order"] = order;
  p.queue_sort = PluginRef{"drf", 1.0, args};
  return p;
}

/// A scheduler driven by hand, the way the engine drives it: schedule, then job_started; stop
/// releases and calls job_stopped.
struct Direct {
  ClusterState cluster;
  Scheduler sched;
  std::map<std::uint32_t, std::pair<JobSpec, std::vector<TaskPlacement>>> running;

  Direct(std::vector<NodeSpec> nodes, const Profile& p) : cluster(t::cluster(std::move(nodes))), sched(p, Registry::with_builtins(), 1) {}
  Status start(const JobSpec& j, std::uint32_t id) {
    std::vector<TaskPlacement> out;
    const Status st = sched.schedule(cluster, j, JobId{id}, out);
    if (st.ok()) {
      sched.job_started(j, JobId{id}, out);
      running.emplace(id, std::pair{j, out});
    }
    return st;
  }
  void stop(std::uint32_t id) {
    auto& [j, out] = running.at(id);
    for (const auto& p : out) cluster.release(j.request, p);
    sched.job_stopped(j, JobId{id}, out);
    running.erase(id);
  }
};

/// Owns what an engine needs.
struct Sim {
  ClusterState cluster;
  Workload jobs;
  Scheduler scheduler;
  sim::Engine engine;
  Sim(std::vector<NodeSpec> nodes, Workload w, const Profile& p, sim::EngineConfig cfg = {})
      : cluster(t::cluster(std::move(nodes))), jobs(std::move(w)), scheduler(p, Registry::with_builtins(), 1),
        engine(cluster, jobs, scheduler, std::move(cfg)) {}
  const sim::JobRuntime& job(std::uint32_t i) const { return engine.job(JobId{i}); }
  int started_at(SimTime at, const std::string& queue) const {
    int n = 0;
    for (std::uint32_t i = 0; i < jobs.size(); ++i) n += (jobs[i].queue == queue && job(i).start == at) ? 1 : 0;
    return n;
  }
};

/// Calls `check` after every job start.
class OnStart final : public sim::Observer {
 public:
  explicit OnStart(std::function<void(const sim::Engine&)> check) : check_(std::move(check)) {}
  void on_job_start(SimTime, JobId, std::span<const TaskPlacement>, const sim::Engine& e) override { check_(e); }

 private:
  std::function<void(const sim::Engine&)> check_;
};

ProfileError build_error(const Profile& p) {
  try {
    Scheduler sched(p, Registry::with_builtins(), 1);
  } catch (const ProfileError& e) {
    return e;
  }
  FAIL("no ProfileError");
  throw;   // unreachable
}

const json kTwoQueuesOneCohort = json::parse(R"({
  "cohorts": {"pool": {}},
  "queues": {
    "a": {"cohort": "pool", "flavors": [{"name": "default", "resources": {"nvidia.com/gpu": 4}}]},
    "b": {"cohort": "pool", "flavors": [{"name": "default", "resources": {"nvidia.com/gpu": 4}}]}}})");

}  // namespace

// ---------------------------------------------------------------- resource-quota

TEST_CASE("ResourceQuota holds back a namespace's third 4-GPU job at a limit of 8 until one finishes",
          "[policies][quota]") {
  Direct d(t4_nodes(4), with_resource_quota(json::parse(R"({"quotas": {"team-a": {"requests.nvidia.com/gpu": 8}}})")));
  const auto a0 = gpu_job("a0", "team-a", 0, 100, 4), a1 = gpu_job("a1", "team-a", 0, 100, 4),
             a2 = gpu_job("a2", "team-a", 0, 100, 4), b0 = gpu_job("b0", "team-b", 0, 100, 4);
  REQUIRE(d.start(a0, 0).ok());
  REQUIRE(d.start(a1, 1).ok());
  const Status st = d.start(a2, 2);
  CHECK(st.code == StatusCode::kUnschedulable);
  CHECK(st.plugin == "resource-quota");
  CHECK_THAT(std::string(st.reason), Catch::Contains("exceeded quota: namespace team-a") && Catch::Contains("hard 8"));
  CHECK(d.start(b0, 3).ok());   // no quota in team-b, and the nodes have room
  d.stop(0);
  CHECK(d.start(a2, 2).ok());
}

// The "running" rule (only running jobs count, an over-quota job waits). Kubernetes' own rule,
// the default "created", refuses a2 at submission: tests/policies/test_engine_admission.cpp.
TEST_CASE("ResourceQuota in the engine: the third job starts when the first finishes", "[policies][quota]") {
  Sim sim(t4_nodes(4),
          {gpu_job("a0", "team-a", 0, 100, 4), gpu_job("a1", "team-a", 0, 150, 4), gpu_job("a2", "team-a", 0, 100, 4),
           gpu_job("b0", "team-b", 0, 100, 4)},
          with_resource_quota(json::parse(
              R"({"charge": "running", "quotas": {"team-a": {"requests.nvidia.com/gpu": 8, "count/jobs": 5}}})")));
  sim.engine.run();
  CHECK(sim.job(0).start == s(0));
  CHECK(sim.job(1).start == s(0));
  CHECK(sim.job(2).start == s(100));
  CHECK(sim.job(3).start == s(0));
  CHECK(t::cluster_empty(sim.cluster));
}

TEST_CASE("ResourceQuota: a job larger than the hard limit itself is unresolvable, counts and quantities parse",
          "[policies][quota]") {
  Direct d(t4_nodes(4), with_resource_quota(json::parse(
                            R"({"quotas": {"ns": {"requests.nvidia.com/gpu": 8, "requests.cpu": "6", "memory": "3Gi",
                                                  "count/jobs.batch": 2, "pods": 4}}})")));
  const Status big = d.start(gpu_job("big", "ns", 0, 100, 4, 0, 3), 0);   // 12 GPUs
  CHECK(big.code == StatusCode::kUnschedulableAndUnresolvable);
  CHECK_THAT(std::string(big.reason), Catch::Contains("more nvidia.com/gpu than namespace ns"));
  REQUIRE(d.start(gpu_job("one", "ns", 0, 100, 1), 1).ok());
  REQUIRE(d.start(gpu_job("two", "ns", 0, 100, 1), 2).ok());
  const Status third = d.start(gpu_job("three", "ns", 0, 100, 1), 3);   // count/jobs 2
  CHECK(third.code == StatusCode::kUnschedulable);
  CHECK_THAT(std::string(third.reason), Catch::Contains("count/jobs"));
  d.stop(1);
  const Status gang = d.start(gpu_job("gang", "ns", 0, 100, 1, 0, 3), 4);   // 1 + 3 pods <= 4, but 1Gi + 3Gi > 3Gi
  CHECK(gang.code == StatusCode::kUnschedulable);
  CHECK_THAT(std::string(gang.reason), Catch::Contains("memory used + requested > hard 3Gi"));
  d.stop(2);
  CHECK(d.start(gpu_job("gang", "ns", 0, 100, 1, 0, 3), 4).ok());
}

TEST_CASE("ResourceQuota weighs MIG instances by the configured gpu-equivalent cost", "[policies][quota]") {
  auto mig_node = [](const std::string& name) {
    auto n = t::node(name, 32, 128, 2, "A100-80GB");
    for (auto& g : n.gpus) g.partition = GpuPartition::kMig;
    n.mig_dynamic = true;
    return n;
  };
  SECTION("7g.80gb costs 7 and 1g.10gb costs 1 against a limit of 8") {
    Direct d({mig_node("m0"), mig_node("m1")},
             with_resource_quota(json::parse(R"({"quotas": {"ns": {"gpusched.io/gpu-equivalent": 8}},
                                                "weights": {"nvidia.com/mig-7g.80gb": 7, "nvidia.com/mig-1g.10gb": 1}})")));
    REQUIRE(d.start(mig_job("big", "ns", "7g.80gb"), 0).ok());
    REQUIRE(d.start(mig_job("small", "ns", "1g.10gb"), 1).ok());
    const Status st = d.start(mig_job("small2", "ns", "1g.10gb"), 2);   // 7 + 1 + 1 > 8, though a GPU has room
    CHECK(st.code == StatusCode::kUnschedulable);
    CHECK_THAT(std::string(st.reason), Catch::Contains("gpusched.io/gpu-equivalent") && Catch::Contains("hard 8"));
    CHECK(d.start(mig_job("other-ns", "free", "1g.10gb"), 3).ok());
    d.stop(0);
    CHECK(d.start(mig_job("small2", "ns", "1g.10gb"), 2).ok());
  }
  SECTION("by default a MIG instance costs its share of the GPU's compute slices") {
    Direct d({mig_node("m0"), mig_node("m1")},
             with_resource_quota(json::parse(R"({"quotas": {"ns": {"gpusched.io/gpu-equivalent": 1}}})")));
    REQUIRE(d.start(mig_job("big", "ns", "7g.80gb"), 0).ok());   // 7/7 = 1
    CHECK(d.start(mig_job("small", "ns", "1g.10gb"), 1).code == StatusCode::kUnschedulable);   // + 1/7
    d.stop(0);
    for (std::uint32_t i = 0; i < 7; ++i) CHECK(d.start(mig_job(t::numbered("s", i), "ns", "1g.10gb"), 10 + i).ok());
    CHECK(d.start(mig_job("s7", "ns", "1g.10gb"), 17).code == StatusCode::kUnschedulable);
  }
}

TEST_CASE("ResourceQuota rejects unknown resources, limits.* and malformed amounts with the argument path",
          "[policies][quota]") {
  auto e = build_error(with_resource_quota(json::parse(R"({"quotas": {"ns": {"requests.nvidia.com/gpus": 8}}})")));
  CHECK(e.code() == ErrorCode::kProfileBadArgs);
  CHECK(e.where().field == "resource-quota/args/quotas/ns/requests.nvidia.com/gpus");
  CHECK_THAT(e.detail(), Catch::Contains("unknown quota resource"));
  e = build_error(with_resource_quota(json::parse(R"({"quotas": {"ns": {"gpu": 8}}})")));
  CHECK(e.where().field == "resource-quota/args/quotas/ns/gpu");
  e = build_error(with_resource_quota(json::parse(R"({"quotas": {"ns": {"limits.cpu": 8}}})")));
  CHECK_THAT(e.detail(), Catch::Contains("requests.cpu"));
  e = build_error(with_resource_quota(json::parse(R"({"quotas": {"ns": {"requests.memory": "lots"}}})")));
  CHECK(e.where().field == "resource-quota/args/quotas/ns/requests.memory");
  e = build_error(with_resource_quota(json::parse(R"({"quotas": {"ns": {"nvidia.com/gpu": -1}}})")));
  CHECK(e.code() == ErrorCode::kProfileBadArgs);
  e = build_error(with_resource_quota(json::parse(R"({"weights": {"nvidia.com/mig-1g.10gb": -1}})")));
  CHECK(e.where().field == "resource-quota/args/weights/nvidia.com/mig-1g.10gb");
}

// ---------------------------------------------------------------- capacity-queues

TEST_CASE("A ClusterQueue borrows its cohort's idle quota and is reclaimed when the lender's jobs arrive",
          "[policies][quota]") {
  // Two 4-GPU nodes; queues a and b have 4 GPUs of nominal quota each in cohort "pool".
  Sim sim(t4_nodes(2),
          {gpu_job("b0", "b", 0, 1000, 4), gpu_job("b1", "b", 0, 1000, 4), gpu_job("a0", "a", 100, 100, 4)},
          with_capacity_queues(kTwoQueuesOneCohort));
  sim.engine.run();
  CHECK(sim.job(0).start == s(0));   // within nominal
  CHECK(sim.job(0).evictions == 0);
  CHECK(sim.job(2).start == s(100));   // a reclaims its lent quota at once
  CHECK(sim.job(2).end == s(200));
  // b1 borrowed a's quota: evicted at 100, requeued, restarted when a0 finished.
  CHECK(sim.job(1).evictions == 1);
  CHECK(sim.job(1).attempts == 2);
  CHECK(sim.job(1).start == s(200));
  CHECK(sim.job(1).end == s(1200));
  CHECK(sim.job(1).state == sim::JobState::kCompleted);
  CHECK(sim.engine.preemptions() == 1);
  CHECK(t::cluster_empty(sim.cluster));
}

TEST_CASE("Reclaim picks the borrower's lowest-priority, then newest job, a queue within nominal is never a victim",
          "[policies][quota]") {
  // b runs 6 GPUs (2 borrowed); a (nominal 4) uses 2 and asks for 2 more.
  Sim sim(t4_nodes(2, 4),
          {gpu_job("b-old", "b", 0, 1000, 2, 1), gpu_job("b-low", "b", 0, 1000, 2, 0), gpu_job("b-new", "b", 10, 1000, 2, 1),
           gpu_job("a0", "a", 20, 1000, 2), gpu_job("a1", "a", 30, 100, 2)},
          with_capacity_queues(kTwoQueuesOneCohort));
  sim.engine.run();
  CHECK(sim.job(1).evictions == 1);   // lowest priority goes first
  CHECK(sim.job(0).evictions == 0);
  CHECK(sim.job(2).evictions == 0);   // b is within nominal once b-low is gone
  CHECK(sim.job(3).evictions == 0);
  CHECK(sim.job(4).start == s(30));
}

namespace {
/// How many 1-GPU jobs of `queue` capacity-queues admits, one after another, on `nodes` T4 nodes
/// of 4 GPUs (at most one per GPU).
std::uint32_t admitted_jobs(const json& args, const std::string& queue, int nodes) {
  Direct d(t4_nodes(nodes), with_capacity_queues(args));
  std::uint32_t n = 0;
  while (n < static_cast<std::uint32_t>(4 * nodes) && d.start(gpu_job(t::numbered("j", n), queue, 0, 100, 1), n).ok()) ++n;
  return n;
}
}  // namespace

TEST_CASE("borrowing_limit caps what a queue takes from its cohort, lending_limit caps what it lends",
          "[policies][quota]") {
  auto admitted = [](const json& args, const std::string& queue) { return admitted_jobs(args, queue, 4); };
  SECTION("borrowing_limit") {
    const auto args = json::parse(R"({"cohorts": {"pool": {}}, "queues": {
      "a": {"cohort": "pool", "flavors": [{"name": "default", "resources": {"nvidia.com/gpu": {"nominal_quota": 4, "borrowing_limit": 2}}}]},
      "b": {"cohort": "pool", "flavors": [{"name": "default", "resources": {"nvidia.com/gpu": 8}}]}}})");
    CHECK(admitted(args, "a") == 6);
    CHECK(admitted(args, "b") == 12);
  }
  SECTION("lending_limit") {
    const auto args = json::parse(R"({"cohorts": {"pool": {}}, "queues": {
      "a": {"cohort": "pool", "flavors": [{"name": "default", "resources": {"nvidia.com/gpu": 4}}]},
      "b": {"cohort": "pool", "flavors": [{"name": "default", "resources": {"nvidia.com/gpu": {"nominal_quota": 8, "lending_limit": 1}}}]}}})");
    CHECK(admitted(args, "a") == 5);
    CHECK(admitted(args, "b") == 12);
  }
  SECTION("a queue outside any cohort is held to its nominal quota") {
    const auto args = json::parse(R"({"queues": {"solo": {"flavors": [{"name": "default", "resources": {"nvidia.com/gpu": 3}}]}}})");
    CHECK(admitted(args, "solo") == 3);
  }
}

// Kueue: borrowingLimit is a cap, not a promise. A ClusterQueue may set one above what its cohort
// could ever lend (issue 12: nominal 6, borrowingLimit 12, a cohort that lends 6); Kueue's
// ClusterQueue webhook (pkg/webhooks/clusterqueue_webhook.go) only requires it to be >= 0 and the
// queue to be in a cohort. The second case is the example of Kueue's "Cluster Queue" concept page
// (site/content/en/docs/concepts/cluster_queue.md, "BorrowingLimit"): team-a-cq nominal 9 with
// borrowingLimit 1 admits 9+1 = 10 while team-b-cq (nominal 12, no limit) is idle, and team-b-cq
// can borrow up to 12+9 = 21. (The page counts CPUs; GPUs here, one unit per job.)
TEST_CASE("A borrowing limit above what the cohort can lend is a cap, not an error (Kueue)", "[policies][quota]") {
  auto admitted = [](const json& args, const std::string& queue) { return admitted_jobs(args, queue, 6); };
  SECTION("nominal 6, borrowing limit 12, a cohort that can lend 6") {
    const auto args = json::parse(R"({"cohorts": {"pool": {}}, "queues": {
      "a": {"cohort": "pool", "flavors": [{"name": "default", "resources": {"nvidia.com/gpu": {"nominal_quota": 6, "borrowing_limit": 12}}}]},
      "b": {"cohort": "pool", "flavors": [{"name": "default", "resources": {"nvidia.com/gpu": 6}}]}}})");
    CHECK(admitted(args, "a") == 12);   // all the cohort has: 6 + 6
    CHECK(admitted(args, "b") == 12);
  }
  SECTION("Kueue's concept-page example: team-a-cq 9 + borrowingLimit 1, team-b-cq 12") {
    const auto args = json::parse(R"({"cohorts": {"team-ab": {}}, "queues": {
      "team-a-cq": {"cohort": "team-ab", "flavors": [{"name": "default", "resources": {"nvidia.com/gpu": {"nominal_quota": 9, "borrowing_limit": 1}}}]},
      "team-b-cq": {"cohort": "team-ab", "flavors": [{"name": "default", "resources": {"nvidia.com/gpu": 12}}]}}})");
    CHECK(admitted(args, "team-a-cq") == 10);
    CHECK(admitted(args, "team-b-cq") == 21);
  }
}

TEST_CASE("The guaranteed part of a lending queue stays free for it while others borrow the rest", "[policies][quota]") {
  const auto args = json::parse(R"({"cohorts": {"pool": {}}, "queues": {
    "a": {"cohort": "pool", "flavors": [{"name": "default", "resources": {"nvidia.com/gpu": 4}}]},
    "b": {"cohort": "pool", "flavors": [{"name": "default", "resources": {"nvidia.com/gpu": {"nominal_quota": 4, "lending_limit": 1}}}]}}})");
  Direct d(t4_nodes(4), with_capacity_queues(args));
  std::uint32_t id = 0;
  for (int i = 0; i < 5; ++i) REQUIRE(d.start(gpu_job(t::numbered("a", i), "a", 0, 100, 1), id++).ok());
  CHECK(d.start(gpu_job("a5", "a", 0, 100, 1), id++).code == StatusCode::kUnschedulable);
  for (int i = 0; i < 3; ++i) CHECK(d.start(gpu_job(t::numbered("b", i), "b", 0, 100, 1), id++).ok());   // b's guaranteed 3
  const Status st = d.start(gpu_job("b3", "b", 0, 100, 1), id++);   // its 4th unit was lent to a
  CHECK(st.code == StatusCode::kUnschedulable);
  CHECK_THAT(std::string(st.reason), Catch::Contains("ClusterQueue b") && Catch::Contains("cohort pool"));
}

TEST_CASE("Hierarchical cohorts: a queue borrows across the tree and is reclaimed by queues of either subtree",
          "[policies][quota]") {
  const auto args = json::parse(R"({
    "cohorts": {"org": {}, "research": {"parent": "org"}, "prod": {"parent": "org"}},
    "queues": {
      "a": {"cohort": "research", "flavors": [{"name": "default", "resources": {"nvidia.com/gpu": 2}}]},
      "b": {"cohort": "research", "flavors": [{"name": "default", "resources": {"nvidia.com/gpu": 2}}]},
      "c": {"cohort": "prod", "flavors": [{"name": "default", "resources": {"nvidia.com/gpu": 4}}]}}})");
  Workload w;
  for (int i = 0; i < 8; ++i) w.push_back(gpu_job(t::numbered("a", i), "a", 0, 1000, 1));
  for (int i = 0; i < 4; ++i) w.push_back(gpu_job(t::numbered("c", i), "c", 10, 100, 1));
  for (int i = 0; i < 2; ++i) w.push_back(gpu_job(t::numbered("b", i), "b", 20, 100, 1));
  Sim sim(t4_nodes(2), w, with_capacity_queues(args));
  sim.engine.run();
  // a took all 8 GPUs of org at 0 (6 borrowed); prod reclaims its 4, then b reclaims its 2 from its sibling.
  CHECK(sim.started_at(s(10), "c") == 4);
  CHECK(sim.started_at(s(20), "b") == 2);
  for (std::uint32_t i = 0; i < 8; ++i) {
    INFO("a" << i);
    CHECK(sim.job(i).evictions == (i >= 2 ? 1U : 0U));   // a's newest (highest id) first; a0, a1 within nominal
    CHECK(sim.job(i).start == (i >= 2 ? (i < 6 ? s(110) : s(120)) : s(0)));
    CHECK(sim.job(i).state == sim::JobState::kCompleted);
  }
  CHECK(sim.engine.preemptions() == 6);
}

TEST_CASE("within_cluster_queue LowerPriority evicts the queue's own lower-priority job to stay within nominal",
          "[policies][quota]") {
  const auto args = json::parse(R"({"queues": {"q": {"flavors": [{"name": "default", "resources": {"nvidia.com/gpu": 4}}],
                                                    "preemption": {"within_cluster_queue": "LowerPriority"}},
                                              "r": {"flavors": [{"name": "default", "resources": {"nvidia.com/gpu": 4}}]}}})");
  Sim sim(t4_nodes(2),
          {gpu_job("low", "q", 0, 1000, 4, 0), gpu_job("r-low", "r", 0, 1000, 4, 0), gpu_job("high", "q", 10, 100, 4, 5),
           gpu_job("r-high", "r", 10, 100, 4, 5)},
          with_capacity_queues(args));
  sim.engine.run();
  CHECK(sim.job(2).start == s(10));
  CHECK(sim.job(0).evictions == 1);
  CHECK(sim.job(0).start == s(110));
  CHECK(sim.job(3).start == s(1000));   // r keeps Kueue's default withinClusterQueue: Never
  CHECK(sim.job(1).evictions == 0);
}

TEST_CASE("Flavors are tried in the queue's order and the job lands on the assigned flavor's nodes", "[policies][quota]") {
  const auto args = json::parse(R"({"queues": {"q": {"flavors": [
    {"name": "A100-80GB", "resources": {"nvidia.com/gpu": 2}},
    {"name": "T4", "resources": {"nvidia.com/gpu": 4}}]}}})");
  Direct d({t::node("t4", 16, 64, 4, "T4"), t::node("a100", 16, 64, 4, "A100-80GB")}, with_capacity_queues(args));
  for (std::uint32_t i = 0; i < 6; ++i) {
    REQUIRE(d.start(gpu_job(t::numbered("j", i), "q", 0, 100, 1), i).ok());
    CHECK(d.cluster.spec(d.running.at(i).second[0].node).name == (i < 2 ? "a100" : "t4"));
  }
  CHECK(d.start(gpu_job("j6", "q", 0, 100, 1), 6).code == StatusCode::kUnschedulable);
  auto pinned = gpu_job("pinned", "q", 0, 100, 1);
  pinned.request = t::request({{"nvidia.com/gpu", "1"}}, {"H100-80GB"});
  CHECK(d.start(pinned, 7).code == StatusCode::kUnschedulableAndUnresolvable);   // no flavor offers the model
}

TEST_CASE("A job whose queue has no ClusterQueue is unresolvable unless default_queue takes it", "[policies][quota]") {
  const auto base = json::parse(R"({"queues": {"q": {"local_queues": ["team-q"],
                                    "flavors": [{"name": "default", "resources": {"nvidia.com/gpu": 4}}]}}})");
  Direct d(t4_nodes(1), with_capacity_queues(base));
  CHECK(d.start(gpu_job("mapped", "team-q", 0, 100, 1), 0).ok());
  const Status st = d.start(gpu_job("stray", "nobody", 0, 100, 1), 1);
  CHECK(st.code == StatusCode::kUnschedulableAndUnresolvable);
  CHECK_THAT(std::string(st.reason), Catch::Contains("no ClusterQueue for queue \"nobody\""));
  auto with_default = base;
  with_default["default_queue"] = "q";
  Direct d2(t4_nodes(1), with_capacity_queues(with_default));
  for (std::uint32_t i = 0; i < 4; ++i) CHECK(d2.start(gpu_job(t::numbered("s", i), "nobody", 0, 100, 1), i).ok());
  CHECK(d2.start(gpu_job("s4", "team-q", 0, 100, 1), 4).code == StatusCode::kUnschedulable);   // shares q's quota
}

TEST_CASE("capacity-queues configuration errors name the field and say what is wrong", "[policies][quota]") {
  auto error = [](const char* text) { return build_error(with_capacity_queues(json::parse(text))); };
  SECTION("a cyclic cohort tree") {
    const auto e = error(R"({"cohorts": {"x": {"parent": "y"}, "y": {"parent": "x"}}})");
    CHECK(e.code() == ErrorCode::kProfileBadArgs);
    CHECK(e.where().field == "capacity-queues/args/cohorts/x/parent");
    CHECK_THAT(e.detail(), Catch::Contains("cohort cycle: x -> y -> x"));
  }
  SECTION("an unknown cohort") {
    auto e = error(R"({"queues": {"a": {"cohort": "nope", "flavors": [{"name": "default", "resources": {"cpu": 4}}]}}})");
    CHECK(e.where().field == "capacity-queues/args/queues/a/cohort");
    CHECK_THAT(e.detail(), Catch::Contains("unknown cohort \"nope\""));
    e = error(R"({"cohorts": {"x": {"parent": "nope"}}})");
    CHECK(e.where().field == "capacity-queues/args/cohorts/x/parent");
  }
  SECTION("other mistakes") {
    auto e = error(R"({"queues": {"a": {"flavors": [{"name": "default", "resources": {"nvidia.com/gpu": {"nominal_quota": 4, "borrowing_limit": 1}}}]}}})");
    CHECK_THAT(e.detail(), Catch::Contains("in a cohort"));
    e = error(R"({"cohorts": {"p": {}}, "queues": {"a": {"cohort": "p", "flavors": [{"name": "default", "resources": {"nvidia.com/gpu": {"nominal_quota": 4, "lending_limit": 5}}}]}}})");
    CHECK(e.where().field == "capacity-queues/args/queues/a/flavors/0/resources/nvidia.com/gpu/lending_limit");
    e = error(R"({"queues": {}, "default_queue": "nowhere"})");
    CHECK(e.where().field == "capacity-queues/args/default_queue");
    e = error(R"({"queues": {"a": {"resource_groups": [{"flavors": [
      {"name": "T4", "resources": {"nvidia.com/gpu": 4, "cpu": 8}}, {"name": "default", "resources": {"nvidia.com/gpu": 4}}]}]}}})");
    CHECK(e.where().field == "capacity-queues/args/queues/a/resource_groups/0/flavors/1/resources");
    CHECK_THAT(e.detail(), Catch::Contains("coveredResources"));
    e = error(R"({"queues": {"a": {"cohrt": "p"}}})");
    CHECK(e.where().field == "capacity-queues/args/queues/a/cohrt");
    e = error(R"({"queues": {"a": {"flavors": [{"name": "default", "resources": {"cpu": 1}}], "preemption": {"reclaim_within_cohort": "Sometimes"}}}})");
    CHECK(e.where().field == "capacity-queues/args/queues/a/preemption/reclaim_within_cohort");
  }
}

// ---------------------------------------------------------------- drf

TEST_CASE("DRF interleaves two queues by dominant share, and weights shift the split", "[policies][quota]") {
  // One node, 4 GPUs; each queue submits eight 1-GPU jobs at once (GPU is the dominant resource).
  Workload w;
  for (int i = 0; i < 8; ++i) w.push_back(gpu_job(t::numbered("a", i), "a", 0, 100, 1));
  for (int i = 0; i < 8; ++i) w.push_back(gpu_job(t::numbered("b", i), "b", 0, 100, 1));
  SECTION("equal weights: 2 + 2 in every round") {
    Sim sim(t4_nodes(1), w, with_drf(json::object()));
    sim.engine.run();
    for (std::int64_t round = 0; round < 4; ++round) {
      CHECK(sim.started_at(s(100 * round), "a") == 2);
      CHECK(sim.started_at(s(100 * round), "b") == 2);
    }
  }
  SECTION("weight 3 for a: 3 + 1 while both wait") {
    Sim sim(t4_nodes(1), w, with_drf(json{{"a", 3}}));
    sim.engine.run();
    CHECK(sim.started_at(s(0), "a") == 3);
    CHECK(sim.started_at(s(0), "b") == 1);
    CHECK(sim.started_at(s(100), "a") == 3);
    CHECK(sim.started_at(s(100), "b") == 1);
  }
  SECTION("priority-fifo, for contrast, serves a first") {
    Sim sim(t4_nodes(1), w, builtin_profile("first-fit"));
    sim.engine.run();
    CHECK(sim.started_at(s(0), "a") == 4);
  }
}

TEST_CASE("DRF orders by the queue's running usage: the least-served queue goes first", "[policies][quota]") {
  Workload w{gpu_job("a-long", "a", 0, 1000, 3), gpu_job("filler", "c", 0, 30, 1), gpu_job("a-next", "a", 10, 100, 1),
             gpu_job("b-next", "b", 20, 100, 1)};
  Sim sim(t4_nodes(1), w, with_drf(json::object()));
  sim.engine.run();
  CHECK(sim.job(3).start == s(30));    // b (share 0) before a (share 3/4), though a waited longer
  CHECK(sim.job(2).start == s(130));
}

/// YARN's comparator tests, translated: one node of `cpu` cores and `mem_gib` GiB (YARN's MB /
/// 1000), queues s1 and s2 running `u1` and `u2`, each with one waiting job. True when s1's
/// waiting job sorts first. s2's waiting job has the lower id, so an id tie-break would pick s2.
bool s1_first(std::int64_t cpu, std::int64_t mem_gib, const t::Items& u1, const t::Items& u2, double w1 = 1.0) {
  const ClusterState c = t::cluster({t::node("n", cpu, mem_gib, 0)});
  auto mk = [](const char* name, const char* queue, const t::Items& r) {
    auto j = t::job(name, 0, 100, t::request(r));
    j.queue = queue;
    return j;
  };
  const t::Items small{{"cpu", "1"}};
  const Workload w{mk("run-s1", "s1", u1), mk("run-s2", "s2", u2), mk("wait-s2", "s2", small), mk("wait-s1", "s1", small)};
  DrfSort drf(json{{"weights", {{"s1", w1}}}}, "drf");
  drf.attach(c, w, nullptr);
  drf.job_started(w[0], JobId{0}, {});
  drf.job_started(w[1], JobId{1}, {});
  const bool first = drf.less(w[3], JobId{3}, w[2], JobId{2});
  CHECK(first != drf.less(w[2], JobId{2}, w[3], JobId{3}));   // a strict order: exactly one goes first
  return first;
}

TEST_CASE("DRF compares queues by the dominant share of their current usage over weight (YARN's cases)",
          "[policies][quota]") {
  // Translated from apache/hadoop TestDominantResourceFairnessPolicy.java (hadoop-yarn-server-
  // resourcemanager .../scheduler/fair/policies/): the schedulable with the smaller weighted
  // dominant share of its usage gets the next container.
  // testDifferentDominantResource: cluster <8000 MB, 8 cpu>; s1 <4000, 3> (memory 1/2) before
  // s2 <2000, 5> (cpu 5/8).
  CHECK(s1_first(8, 8, {{"cpu", "3"}, {"memory", "4Gi"}}, {{"cpu", "5"}, {"memory", "2Gi"}}));
  CHECK_FALSE(s1_first(8, 8, {{"cpu", "5"}, {"memory", "2Gi"}}, {{"cpu", "3"}, {"memory", "4Gi"}}));
  // testBothAreNeedy, first half (no min shares): cluster <8000, 100>; <2000, 5> (1/4) before <4000, 3> (1/2).
  CHECK(s1_first(100, 8, {{"cpu", "5"}, {"memory", "2Gi"}}, {{"cpu", "3"}, {"memory", "4Gi"}}));
  // testEvenWeightsSameDominantResource: cluster <8000, 8>; s1 weighs 2.
  CHECK(s1_first(8, 8, {{"cpu", "1"}, {"memory", "3Gi"}}, {{"cpu", "1"}, {"memory", "2Gi"}}, 2.0));   // 3/16 < 1/4
  CHECK(s1_first(8, 8, {{"cpu", "3"}, {"memory", "1Gi"}}, {{"cpu", "2"}, {"memory", "1Gi"}}, 2.0));   // 3/16 < 1/4
  // testEvenWeightsDifferentDominantResource.
  CHECK(s1_first(8, 8, {{"cpu", "3"}, {"memory", "1Gi"}}, {{"cpu", "1"}, {"memory", "2Gi"}}, 2.0));   // 3/16 < 1/4
  CHECK(s1_first(8, 8, {{"cpu", "1"}, {"memory", "3Gi"}}, {{"cpu", "2"}, {"memory", "1Gi"}}, 2.0));   // 3/16 < 1/4
  // Without the weight the same usages reverse: 3/8 > 1/4.
  CHECK_FALSE(s1_first(8, 8, {{"cpu", "1"}, {"memory", "3Gi"}}, {{"cpu", "2"}, {"memory", "1Gi"}}));
}

TEST_CASE("DRF splits cpu and memory as Volcano's hdrf tests expect, flattened to one level", "[policies][quota]") {
  // Translated from volcano-sh/volcano pkg/scheduler/plugins/drf/hdrf_test.go, TestHDRF. Each pod
  // group becomes one queue of single-task jobs (we have no queue hierarchy); in both cases the
  // hierarchy does not change the expected allocation, so the flat translation must match it.
  auto queue_jobs = [](Workload& w, const std::string& queue, int n, const t::Items& r) {
    for (int i = 0; i < n; ++i) {
      auto j = t::job(queue + "-" + std::to_string(i), 0, 100, t::request(r));
      j.queue = queue;
      w.push_back(j);
    }
  };
  SECTION("\"rescaling test\": node <10 cpu, 10G>; cpu+memory, cpu-only and memory-only queues get 5 each") {
    Workload w;
    queue_jobs(w, "sci", 10, {{"cpu", "1"}, {"memory", "1Gi"}});
    queue_jobs(w, "eng-dev", 10, {{"cpu", "1"}});
    queue_jobs(w, "eng-prod", 10, {{"memory", "1Gi"}});
    Sim sim({t::node("n", 10, 10, 0)}, w, with_drf(json::object()));
    sim.engine.run();
    CHECK(sim.started_at(s(0), "sci") == 5);        // pg1: cpu 5, memory 5G
    CHECK(sim.started_at(s(0), "eng-dev") == 5);    // pg21: cpu 5
    CHECK(sim.started_at(s(0), "eng-prod") == 5);   // pg22: memory 5G
  }
  SECTION("\"blocking nodes test\": node <30 cpu, 30G>; three cpu queues 10 each, two memory queues 15 each") {
    Workload w;
    for (const char* q : {"pg1", "pg2", "pg31"}) queue_jobs(w, q, 30, {{"cpu", "1"}});
    for (const char* q : {"pg32", "pg4"}) queue_jobs(w, q, 30, {{"memory", "1Gi"}});
    Sim sim({t::node("n", 30, 30, 0)}, w, with_drf(json::object()));
    sim.engine.run();
    for (const char* q : {"pg1", "pg2", "pg31"}) CHECK(sim.started_at(s(0), q) == 10);
    for (const char* q : {"pg32", "pg4"}) CHECK(sim.started_at(s(0), q) == 15);
  }
}

TEST_CASE("DRF current-share: a small job in a busier queue no longer jumps ahead; share-after keeps the old order",
          "[policies][quota]") {
  // 16 GPUs. a runs 6 (share 3/8), b runs 7 (7/16); 3 stay free. At t=1 a asks for 3 GPUs and
  // b for 1. Current share: a (less served) goes first and takes the 3. Share after start:
  // b reaches 8/16 < a's 9/16, so b's small job starts and a's 3-GPU job no longer fits.
  const Workload w{gpu_job("a-run", "a", 0, 1000, 2, 0, 3), gpu_job("b-run", "b", 0, 1000, 1, 0, 7),
                   gpu_job("a-big", "a", 1, 100, 1, 0, 3), gpu_job("b-small", "b", 1, 100, 1)};
  SECTION("current-share (default, Volcano/YARN)") {
    Sim sim(t4_nodes(4), w, with_drf(json::object()));
    sim.engine.run();
    CHECK(sim.job(2).start == s(1));
    CHECK(sim.job(3).start == s(101));   // when the winner ends
  }
  SECTION("share-after (gpusched's progressive filling)") {
    Sim sim(t4_nodes(4), w, with_drf(json::object(), "share-after"));
    sim.engine.run();
    CHECK(sim.job(3).start == s(1));
    CHECK(sim.job(2).start == s(101));   // when the winner ends
  }
}

TEST_CASE("DRF share-after still interleaves queues and honours weights", "[policies][quota]") {
  Workload w;
  for (int i = 0; i < 8; ++i) w.push_back(gpu_job(t::numbered("a", i), "a", 0, 100, 1));
  for (int i = 0; i < 8; ++i) w.push_back(gpu_job(t::numbered("b", i), "b", 0, 100, 1));
  Sim sim(t4_nodes(1), w, with_drf(json{{"a", 3}}, "share-after"));
  sim.engine.run();
  CHECK(sim.started_at(s(0), "a") == 3);   // keys a: 1/12, 2/12, 3/12, 4/12; b: 1/4 -> a, a, a, b
  CHECK(sim.started_at(s(0), "b") == 1);
}

TEST_CASE("drf rejects an unknown order", "[policies][quota]") {
  const auto e = build_error(with_drf(json::object(), "fifo"));
  CHECK(e.code() == ErrorCode::kProfileBadArgs);
  CHECK(e.where().field == "drf/args/order");
  CHECK(std::string(e.what()).find("share-after") != std::string::npos);
}

TEST_CASE("drf rejects a weight that is not a positive number", "[policies][quota]") {
  const auto e = build_error(with_drf(json{{"a", 0}}));
  CHECK(e.code() == ErrorCode::kProfileBadArgs);
  CHECK(e.where().field == "drf/args/weights/a");
}

// ---------------------------------------------------------------- properties

TEST_CASE("Random workloads: quotas hold at every start, nothing over-commits, DRF starves no queue",
          "[policies][quota]") {
  // 16 GPUs; cohort quota 8 + 2 (b lends 2 of 4) + 4 = 14.
  const auto args = json::parse(R"({"cohorts": {"pool": {}}, "queues": {
    "a": {"cohort": "pool", "flavors": [{"name": "default", "resources": {"nvidia.com/gpu": {"nominal_quota": 8, "borrowing_limit": 4}}}]},
    "b": {"cohort": "pool", "flavors": [{"name": "default", "resources": {"nvidia.com/gpu": {"nominal_quota": 4, "lending_limit": 2}}}],
          "preemption": {"within_cluster_queue": "LowerPriority"}},
    "c": {"cohort": "pool", "flavors": [{"name": "default", "resources": {"nvidia.com/gpu": 4}}],
          "preemption": {"reclaim_within_cohort": "LowerPriority"}}}})");
  const std::map<std::string, std::int64_t> nominal{{"a", 8}, {"b", 4}, {"c", 4}};
  const std::map<std::string, std::int64_t> guaranteed{{"a", 0}, {"b", 2}, {"c", 0}};
  const std::map<std::string, std::int64_t> ceiling{{"a", 12}, {"b", 16}, {"c", 14}};
  const char* queues[] = {"a", "b", "c"};
  std::uint64_t preemptions = 0;
  for (std::uint64_t seed = 1; seed <= 8; ++seed) {
    Rng rng(seed);
    Workload w;
    double submit = 0;
    for (int i = 0; i < 60; ++i) {
      submit += rng.exponential(0.2);
      const auto tasks = static_cast<std::int32_t>(1 + rng.below(2));
      w.push_back(gpu_job(t::numbered("j", i), queues[rng.below(3)], std::floor(submit), 10.0 + static_cast<double>(rng.below(200)),
                          static_cast<int>(1 + rng.below(4)), static_cast<std::int32_t>(rng.below(3)), tasks));
    }
    Sim sim(t4_nodes(4), w, with_capacity_queues(args, seed % 2 ? "drf" : "priority-fifo"));
    std::string violation;
    OnStart check([&](const sim::Engine& e) {
      std::map<std::string, std::int64_t> used;
      for (std::uint32_t i = 0; i < e.workload().size(); ++i) {
        const auto& rt = e.job(JobId{i});
        if (rt.state != sim::JobState::kRunning) continue;
        used[e.workload()[i].queue] += e.workload()[i].request.gpu.count * static_cast<std::int64_t>(rt.placements.size());
      }
      std::int64_t borrowed_from_pool = 0;
      for (const auto& [q, u] : used) {
        if (u > ceiling.at(q)) violation = q + " uses " + std::to_string(u) + " > " + std::to_string(ceiling.at(q));
        borrowed_from_pool += std::max<std::int64_t>(0, u - guaranteed.at(q));
      }
      if (borrowed_from_pool > 14) violation = "cohort lends " + std::to_string(borrowed_from_pool) + " > 14";
      if (used["a"] > nominal.at("a") + 4) violation = "a borrowed beyond its limit";
      const auto c = t::cluster_violation(e.cluster());
      if (!c.empty()) violation = c;
    });
    sim.engine.add_observer(&check);
    sim.engine.run();
    INFO("seed " << seed);
    CHECK(violation.empty());
    for (std::uint32_t i = 0; i < w.size(); ++i) {
      INFO(w[i].name << " in " << w[i].queue);
      CHECK(sim.job(i).state == sim::JobState::kCompleted);   // finite durations: everyone runs eventually
    }
    CHECK(t::cluster_empty(sim.cluster));
    preemptions += sim.engine.preemptions();
  }
  CHECK(preemptions > 0);   // reclaim and within-queue preemption were exercised
}
