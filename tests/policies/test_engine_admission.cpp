// Engine-level admission semantics (issue 12, items 4 and 5):
//  - [resource-quota-created]: Kubernetes ResourceQuota charges a pod when it is created; a job
//    over quota is refused at submission with the API server's message; a pending job holds its
//    quota. The old "running only" accounting stays as `charge: "running"`.
//  - [gang-requeue]: Kueue's waitForPodsReady: a gang not started within the timeout is put back
//    in the queue after an exponential backoff and deactivated after backoffLimitCount requeues;
//    Volcano keeps a PodGroup pending (no timeout); gpusched's own `gang_timeout` fails for good.
// Cases translated from the peers' tests name the repository, file, test and case, and the
// commit read; the inputs and expected outputs are the peers', the code is ours.
#include <catch2/catch.hpp>

#include <algorithm>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <limits>

#include <gpusched/policies/framework/registry.hpp>
#include <gpusched/policies/framework/scheduler.hpp>
#include <gpusched/policies/quota/resource_quota.hpp>
#include <gpusched/scenario/scenario.hpp>
#include <gpusched/sim/engine.hpp>
#include <gpusched/sim/metrics.hpp>
#include <gpusched/sim/outputs.hpp>

#include "support/support.hpp"

using namespace gpusched;
using namespace gpusched::policies;
using nlohmann::json;
namespace t = gpusched::test;

namespace {

SimTime s(std::int64_t seconds) { return SimTime::from_seconds(seconds); }

JobSpec job_in(const std::string& name, const std::string& ns, double submit, double duration, const t::Items& items,
               std::int32_t tasks = 1) {
  auto j = t::job(name, submit, duration, t::request(items), tasks);
  j.queue = ns;
  return j;
}

JobSpec gpu_job(const std::string& name, const std::string& ns, double submit, double duration, int gpus,
                std::int32_t tasks = 1) {
  return job_in(name, ns, submit, duration, {{"cpu", "1"}, {"memory", "1Gi"}, {"nvidia.com/gpu", std::to_string(gpus)}},
                tasks);
}

Profile with_resource_quota(const json& args) {
  Profile p = builtin_profile("first-fit");
  p.name = "resource-quota-test";
  p.pre_filter = {PluginRef{"resource-quota", 1.0, args}};
  return p;
}

/// Owns what an engine needs.
struct Sim {
  ClusterState cluster;
  Workload jobs;
  Scheduler scheduler;
  sim::Engine engine;
  sim::EventLog log;
  sim::MetricsCollector metrics{SimTime::from_seconds(60)};
  Sim(std::vector<NodeSpec> nodes, Workload w, const Profile& p, sim::EngineConfig cfg = {})
      : cluster(t::cluster(std::move(nodes))), jobs(std::move(w)), scheduler(p, Registry::with_builtins(), 1),
        engine(cluster, jobs, scheduler, std::move(cfg)) {
    engine.add_observer(&log);
    engine.add_observer(&metrics);
  }
  const sim::JobRuntime& job(std::uint32_t i) const { return engine.job(JobId{i}); }
  std::string reason(std::uint32_t i) const { return engine.reason(job(i).reason); }
};

/// The plugin on its own, driven as the scheduler drives it: attach, then job_submitted per job.
struct Admission {
  ClusterState cluster;
  Workload jobs;
  ResourceQuotaPlugin plugin;
  Admission(const json& args, Workload w)
      : cluster(t::cluster({t::node("n0", 64, 256, 8, "T4")})), jobs(std::move(w)), plugin(args, "resource-quota") {
    plugin.attach(cluster, jobs, nullptr);
  }
  Status submit(std::uint32_t i) { return plugin.job_submitted(jobs[i], JobId{i}); }
};

/// The quota of kubernetes/kubernetes plugin/pkg/admission/resourcequota/admission_test.go
/// TestAdmitBelowQuotaLimit / TestAdmitExceedQuotaLimit / TestAdmitDryRun: namespace "test",
/// ResourceQuota "quota", hard cpu 3, memory 100Gi, pods 5, status.used cpu 1, memory 50Gi,
/// pods 3. gpusched has no status to preload, so jobs 0 and 1 (1 + 2 pods, 1 CPU, 50Gi) make
/// that usage by being admitted first.
const json kKubeQuota = json::parse(
    R"({"quotas": {"test": {"name": "quota", "cpu": "3", "memory": "100Gi", "pods": 5}}})");

Workload kube_quota_jobs(const t::Items& new_pod, const std::string& name) {
  return {job_in("used-a", "test", 0, 100, {{"cpu", "500m"}, {"memory", "25Gi"}}),
          job_in("used-b", "test", 0, 100, {{"cpu", "250m"}, {"memory", "12800Mi"}}, 2), job_in(name, "test", 0, 100, new_pod)};
}

}  // namespace

// ------------------------------------------------------------------ ResourceQuota at creation

// kubernetes/kubernetes plugin/pkg/admission/resourcequota/admission_test.go,
// TestAdmitBelowQuotaLimit ("a pod when created has its usage reflected on the quota"), read at
// 0061479890ddf827bd55570ccbf8bd59352543c3 (same inputs in the current corev1 version): pod
// "allowed-pod" requests cpu 100m, memory 2Gi -> admitted; used becomes cpu 1100m, memory 52Gi,
// pods 4.
TEST_CASE("ResourceQuota admits a pod below the limit at creation and charges it at once",
          "[resource-quota-created][peer]") {
  Admission a(kKubeQuota, kube_quota_jobs({{"cpu", "100m"}, {"memory", "2Gi"}}, "allowed-pod"));
  REQUIRE(a.submit(0).ok());
  REQUIRE(a.submit(1).ok());
  CHECK(a.plugin.used("test", "cpu") == 1000);   // milli
  CHECK(a.plugin.used("test", "pods") == 3);
  REQUIRE(a.submit(2).ok());
  CHECK(a.plugin.used("test", "cpu") == 1100);
  CHECK(a.plugin.used("test", "memory") == 52 * 1024);   // MiB
  CHECK(a.plugin.used("test", "pods") == 4);
  // Nothing ran: the charge is the pending pods' (pods.go QuotaV1Pod counts non-terminal pods).
  a.plugin.job_left(a.jobs[2], JobId{2});
  CHECK(a.plugin.used("test", "cpu") == 1000);
  CHECK(a.plugin.used("test", "pods") == 3);
}

// Same file, TestAdmitExceedQuotaLimit ("if a pod exceeded allowed usage that its rejected during
// admission"), same commit: pod "not-allowed-pod" requests cpu 3, memory 2Gi -> refused (1 + 3 > 3).
// The message is controller.go checkRequest's "exceeded quota: %s, requested: %s, used: %s,
// limited: %s" with the exceeded resources only, behind admission.NewForbidden's prefix.
TEST_CASE("ResourceQuota refuses a pod over the limit at creation with the API server's message",
          "[resource-quota-created][peer]") {
  Admission a(kKubeQuota, kube_quota_jobs({{"cpu", "3"}, {"memory", "2Gi"}}, "not-allowed-pod"));
  REQUIRE(a.submit(0).ok());
  REQUIRE(a.submit(1).ok());
  const Status st = a.submit(2);
  CHECK_FALSE(st.ok());
  CHECK(st.plugin == "resource-quota");
  CHECK(std::string(st.reason) ==
        "pods \"not-allowed-pod\" is forbidden: exceeded quota: quota, requested: cpu=3, used: cpu=1, limited: cpu=3");
  CHECK(a.plugin.used("test", "cpu") == 1000);   // a refused pod is not charged
  CHECK(a.plugin.used("test", "pods") == 3);
}

// Same file, TestAdmitDryRun, its second pod "too-large-pod" (cpu 100m, memory 60Gi: 50Gi used +
// 60Gi > 100Gi) -> refused; and TestAdmitPodInNamespaceWithoutQuota: a quota in namespace
// "other" does not limit a pod in "test". Same commit.
TEST_CASE("ResourceQuota names only the exceeded resource, and a namespace without a quota is not limited",
          "[resource-quota-created][peer]") {
  Admission a(kKubeQuota, kube_quota_jobs({{"cpu", "100m"}, {"memory", "60Gi"}}, "too-large-pod"));
  REQUIRE(a.submit(0).ok());
  REQUIRE(a.submit(1).ok());
  const Status st = a.submit(2);
  CHECK_FALSE(st.ok());
  CHECK(std::string(st.reason) ==
        "pods \"too-large-pod\" is forbidden: exceeded quota: quota, requested: memory=60Gi, used: memory=50Gi, "
        "limited: memory=100Gi");

  Admission other(json::parse(R"({"quotas": {"other": {"name": "quota", "cpu": "3", "memory": "100Gi", "pods": 5}}})"),
                  {job_in("not-allowed-pod", "test", 0, 100, {{"cpu", "100m"}, {"memory", "2Gi"}})});
  CHECK(other.submit(0).ok());
  CHECK(other.plugin.used("other", "cpu") == 0);
}

// The issue's case: a small pod is refused while a big pending pod holds the quota. team-a has
// requests.nvidia.com/gpu 8; team-b's job fills the only node, so team-a's 6-GPU job waits;
// team-a's 4-GPU job, submitted later, is refused at once (6 + 4 > 8), though nothing of team-a
// runs. Under "running" the 4-GPU job instead waits and runs first (its turn comes when the node frees).
TEST_CASE("A pending job holds its namespace's quota: a later job over the rest is refused for good",
          "[resource-quota-created]") {
  const json quota = json::parse(R"({"quotas": {"team-a": {"requests.nvidia.com/gpu": 8}}})");
  auto workload = [] {
    return Workload{gpu_job("b-fill", "team-b", 0, 100, 8), gpu_job("a-big", "team-a", 10, 100, 6),
                    gpu_job("a-small", "team-a", 20, 100, 4)};
  };
  SECTION("charge: created (the default)") {
    Sim sim({t::node("n0", 64, 256, 8, "T4")}, workload(), with_resource_quota(quota));
    sim.engine.run();
    CHECK(sim.job(1).start == s(100));   // held its quota while pending, runs when b-fill ends
    CHECK(sim.job(1).state == sim::JobState::kCompleted);
    const auto& small = sim.job(2);
    CHECK(small.state == sim::JobState::kFailed);
    CHECK(small.rejected);
    CHECK(small.end == s(20));
    CHECK(small.attempts == 0);
    CHECK(sim.reason(2) ==
          "pods \"a-small\" is forbidden: exceeded quota: team-a, requested: requests.nvidia.com/gpu=4, used: "
          "requests.nvidia.com/gpu=6, limited: requests.nvidia.com/gpu=8");
    CHECK(sim.engine.rejected() == 1);
    CHECK(sim.metrics.summary().rejected == 1);
    CHECK(sim.metrics.summary().failed == 1);
    // The event log shows the submission and the refusal at the same instant.
    const auto& lines = sim.log.lines();
    CHECK(std::find(lines.begin(), lines.end(), "20.000000,submit,a-small,,") != lines.end());
    CHECK(std::count_if(lines.begin(), lines.end(), [](const std::string& l) {
            return l.rfind("20.000000,fail,a-small,,", 0) == 0;
          }) == 1);
    CHECK(t::cluster_empty(sim.cluster));
  }
  SECTION("charge: running (gpusched's earlier rule)") {
    json running = quota;
    running["charge"] = "running";
    Sim sim({t::node("n0", 64, 256, 8, "T4")}, workload(), with_resource_quota(running));
    sim.engine.run();
    // At 100 the node frees: a-big (ahead in the queue) starts with 6 GPUs; a-small (4) no longer
    // fits on the node and waits for a-big.
    CHECK(sim.job(1).start == s(100));
    CHECK(sim.job(2).state == sim::JobState::kCompleted);
    CHECK(sim.job(2).start == s(200));
    CHECK_FALSE(sim.job(2).rejected);
    CHECK(sim.engine.rejected() == 0);
  }
}

TEST_CASE("A finished job gives its quota back; an evicted job keeps it while it is requeued",
          "[resource-quota-created]") {
  const json quota = json::parse(R"({"quotas": {"ns": {"requests.nvidia.com/gpu": 4}}})");
  // j0 runs on n0 from 0 to 100 (4 GPUs: the whole quota). j1 (t=50) is refused; j2 (t=150) is admitted.
  // j3 runs on n1 from 200; n1 goes down at 250: j3 is requeued and still holds the quota (its
  // controller recreates the pod), so j4 (t=252, while j3 waits) is refused; j3 restarts on n0 at 255.
  Workload w{gpu_job("j0", "ns", 0, 100, 4), gpu_job("j1", "ns", 50, 10, 1), gpu_job("j2", "ns", 150, 10, 4),
             gpu_job("j3", "ns", 200, 100, 4), gpu_job("j4", "ns", 252, 10, 1)};
  // j3 must land on n1: n0 is cordoned by a NoSchedule taint between 190 and 255.
  sim::EngineConfig cfg;
  sim::NodeEvent taint{s(190), NodeId{0}, false, Taint{"hold", "", TaintEffect::kNoSchedule}, false};
  sim::NodeEvent untaint{s(255), NodeId{0}, false, Taint{"hold", "", TaintEffect::kNoSchedule}, true};
  sim::NodeEvent down{s(250), NodeId{1}, false, std::nullopt, false};
  cfg.node_events = {taint, down, untaint};
  Profile p = with_resource_quota(quota);
  if (std::none_of(p.filter.begin(), p.filter.end(), [](const PluginRef& r) { return r.name == "taint-toleration"; })) {
    p.filter.push_back(PluginRef{"taint-toleration"});
  }
  Sim sim({t::node("n0", 64, 256, 4, "T4"), t::node("n1", 64, 256, 4, "T4")}, std::move(w), p, cfg);
  sim.engine.run();
  CHECK(sim.job(1).rejected);
  CHECK_THAT(sim.reason(1), Catch::Contains("used: requests.nvidia.com/gpu=4, limited: requests.nvidia.com/gpu=4"));
  CHECK(sim.job(2).state == sim::JobState::kCompleted);
  CHECK(sim.job(2).start == s(150));
  CHECK(sim.job(3).evictions == 1);
  CHECK(sim.job(3).state == sim::JobState::kCompleted);
  CHECK(sim.job(3).start == s(255));   // restarted on n0 once untainted
  CHECK(sim.job(4).rejected);
  CHECK_THAT(sim.reason(4), Catch::Contains("used: requests.nvidia.com/gpu=4"));
  CHECK(sim.engine.rejected() == 2);
}

TEST_CASE("resource-quota's charge argument accepts created or running only", "[resource-quota-created]") {
  try {
    Scheduler sched(with_resource_quota(json::parse(R"({"charge": "pending", "quotas": {}})")), Registry::with_builtins(), 1);
    FAIL("no ProfileError");
  } catch (const ProfileError& e) {
    CHECK(e.code() == ErrorCode::kProfileBadArgs);
    CHECK_THAT(e.where().field, Catch::EndsWith("args/charge"));
    CHECK_THAT(e.detail(), Catch::Contains("created") && Catch::Contains("running"));
  }
}

// ------------------------------------------------------------------ gangs: waitForPodsReady

// kubernetes-sigs/kueue pkg/controller/core/workload_controller_test.go, TestReconcile, read at
// 1e0f7e11bece445e3651a76385a08fa875befe72: case "increment re-queue count" (backoff base 10 s,
// max 3600 s, requeue count 3 -> 4: requeueAt = now + 10 s x 2^(4-1) = 80 s) and case "wait time
// should be limited to backoffMaxSeconds" (base 10 s, max 7200 s, count 10 -> 11: 10 x 2^10 =
// 10240 s > 7200 s, so 7200 s). Both set requeuingBackoffJitter 0, as gpusched has none. The
// defaults follow site/content/en/docs/tasks/manage/setup_wait_for_pods_ready.md (Kueue at
// 0de531560d7fac70482f83ab99ecb84bc8b57710): "re-queued after approximately 60, 120, 240, ...,
// 3600, ..., 3600 seconds".
TEST_CASE("waitForPodsReady backoff doubles from its base and stops at its maximum", "[gang-requeue][peer]") {
  sim::WaitForPodsReady w;
  w.backoff_base = s(10);
  w.backoff_max = s(3600);
  CHECK(w.backoff(4) == s(80));
  w.backoff_max = s(7200);
  CHECK(w.backoff(11) == s(7200));
  const sim::WaitForPodsReady defaults;
  CHECK(defaults.timeout == s(300));
  CHECK_FALSE(defaults.backoff_limit_count.has_value());
  CHECK(defaults.timestamp == sim::RequeueTimestamp::kEviction);
  std::vector<std::int64_t> waits;
  for (std::uint32_t n = 1; n <= 8; ++n) waits.push_back(defaults.backoff(n).us / 1'000'000);
  CHECK(waits == std::vector<std::int64_t>{60, 120, 240, 480, 960, 1920, 3600, 3600});
}

namespace {

/// One node of 4 GPUs; "blocker" holds all of them from 0 to `blocker_end`; "gang" (2 tasks of
/// 2 GPUs, all-or-nothing) arrives at 0.
Workload blocked_gang(double blocker_end) {
  return {gpu_job("blocker", "default", 0, blocker_end, 4), gpu_job("gang", "default", 0, 100, 2, 2)};
}

sim::EngineConfig pods_ready(std::int64_t timeout_s, std::optional<std::uint32_t> limit = std::nullopt) {
  sim::EngineConfig cfg;
  cfg.wait_for_pods_ready.enabled = true;
  cfg.wait_for_pods_ready.timeout = s(timeout_s);
  cfg.wait_for_pods_ready.backoff_limit_count = limit;
  return cfg;
}

std::vector<std::string> lines_with(const sim::EventLog& log, const std::string& what) {
  std::vector<std::string> out;
  for (const auto& l : log.lines()) {
    if (l.find(what) != std::string::npos) out.push_back(l);
  }
  return out;
}

}  // namespace

// Kueue workload_controller_test.go TestReconcile (same commit), case "trigger deactivation of
// workload when reaching backoffLimitCount": backoffLimitCount 1 and a workload already requeued
// once times out again -> deactivated, "exceeding the maximum number of re-queuing retries".
// Here: timeout 100 s, default base 60 s; the gang times out at 100 (requeue 1, back at 160) and
// at 260 (count 1 + 1 > 1): deactivated.
TEST_CASE("A gang that times out once more than backoff_limit_count allows is deactivated", "[gang-requeue][peer]") {
  Sim sim({t::node("n0", 64, 256, 4, "T4")}, blocked_gang(1000), builtin_profile("first-fit"), pods_ready(100, 1));
  std::vector<std::size_t> pending;
  for (int at : {50, 130, 200}) {
    sim.engine.call_at(s(at), [&](SimTime) { pending.push_back(sim.engine.pending_count()); });
  }
  sim.engine.run();
  const auto& g = sim.job(1);
  CHECK(g.state == sim::JobState::kFailed);
  CHECK(g.deactivated);
  CHECK(g.requeues == 1);
  CHECK(g.end == s(260));
  CHECK(g.attempts == 0);
  CHECK_THAT(sim.reason(1), Catch::StartsWith("deactivated: exceeding the maximum number of re-queuing retries") &&
                                Catch::Contains("PodsReady timeout of 100 s"));
  CHECK(pending == std::vector<std::size_t>{1, 1, 1});   // in the queue, in backoff, in the queue again
  CHECK(lines_with(sim.log, ",backoff,gang,") ==
        std::vector<std::string>{"100.000000,backoff,gang,,\"requeued after a PodsReady timeout (not started within the "
                                 "PodsReady timeout of 100 s), requeue 1: backoff until t=160 s\""});
  CHECK(sim.metrics.summary().deactivated == 1);
  CHECK(sim.metrics.summary().pods_ready_requeues == 1);
  CHECK(sim.engine.pods_ready_requeues() == 1);
}

TEST_CASE("A gang that can never fit is not requeued forever once nothing else can change", "[gang-requeue]") {
  // n1 fails at 0 and never comes back, so the gang (2 tasks of 4 GPUs) can never fit. Kueue's
  // default (no backoff_limit_count) would requeue it forever; the run must still end. Timeout
  // 100 s: requeue 1 at 100 (back at 160); at 260 only its own timers are left and no job has
  // started since the requeue, so it stays pending.
  auto cfg = pods_ready(100);
  cfg.node_events = {sim::NodeEvent{s(0), NodeId{1}, false, std::nullopt, false}};
  Sim sim({t::node("n0", 64, 256, 4, "T4"), t::node("n1", 64, 256, 4, "T4")},
          {gpu_job("gang", "default", 0, 100, 4, 2)}, builtin_profile("first-fit"), cfg);
  sim.engine.run();
  const auto& g = sim.job(0);
  CHECK(g.state == sim::JobState::kPending);
  CHECK(g.requeues == 1);
  CHECK_THAT(sim.reason(0), Catch::Contains("nothing else can change"));
  CHECK(sim.engine.now() == s(260));
}

TEST_CASE("waitForPodsReady backoff never overflows near its largest values", "[gang-requeue]") {
  sim::WaitForPodsReady w;
  w.backoff_base = s(1);
  w.backoff_max = SimTime::from_us(std::numeric_limits<std::int64_t>::max() - 1);
  CHECK(w.backoff(200) == w.backoff_max);
  CHECK(w.backoff(63).us > 0);
}

TEST_CASE("A gang in backoff is not tried even when room frees; it starts once its backoff ends",
          "[gang-requeue]") {
  // Timeout 100 s: requeue 1 at 100 with a 60 s backoff. The blocker ends at 130, inside the
  // backoff: the gang starts at 160, not 130.
  Sim sim({t::node("n0", 64, 256, 4, "T4")}, blocked_gang(130), builtin_profile("first-fit"), pods_ready(100));
  sim.engine.run();
  const auto& g = sim.job(1);
  CHECK(g.state == sim::JobState::kCompleted);
  CHECK(g.start == s(160));
  CHECK(g.requeues == 1);
  CHECK_FALSE(g.deactivated);
  // jobs.csv: existing columns keep their order; requeues, then bound, then the training-scheduler
  // columns (attained service, queue level, preemptions, resumptions, restart overhead) are appended.
  std::ostringstream csv;
  sim::write_jobs_csv(csv, sim::job_rows(sim.engine));
  const std::string out = csv.str();
  CHECK(out.rfind("job,queue,priority,tasks,cpu_milli,memory_mib,gpus,gpu_milli,gpu_memory_mib,submit_s,start_s,end_s,"
                  "wait_s,jct_s,state,attempts,evictions,lost_gpu_hours,placement,reason,requeues,bound,attained_s,attained_gpu_s,"
                  "queue_level,preemptions,resumptions,overhead_s\n",
                  0) == 0);
  CHECK_THAT(out, Catch::Contains("\ngang,") && Catch::Contains(",completed,1,0,0.000000,\"n0[0,1];n0[2,3]\",,1,false,"));
  nlohmann::json summary = sim.metrics.summary();
  CHECK(summary["jobs"]["pods_ready_requeues"] == 1);
  CHECK(summary["jobs"]["deactivated"] == 0);
  CHECK(summary["jobs"]["rejected"] == 0);
}

TEST_CASE("Requeued gangs come back in the order the timestamp strategy gives", "[gang-requeue]") {
  // The gang (t=0) times out at 200 and is back at 260; "single" (4 GPUs, t=50, no gang, so no
  // timeout) waits too. At 300 the blocker ends and only one of them fits.
  // Eviction (Kueue's default): the gang is ordered by its eviction time, 200 > 50: single first.
  // Creation: by its creation time, 0 < 50: the gang first.
  auto run = [](sim::RequeueTimestamp ts) {
    Workload w = blocked_gang(300);
    w.push_back(gpu_job("single", "default", 50, 100, 4));
    auto cfg = pods_ready(200);
    cfg.wait_for_pods_ready.timestamp = ts;
    auto sim = std::make_unique<Sim>(std::vector<NodeSpec>{t::node("n0", 64, 256, 4, "T4")}, std::move(w),
                                     builtin_profile("first-fit"), cfg);
    sim->engine.run();
    return sim;
  };
  const auto eviction = run(sim::RequeueTimestamp::kEviction);
  CHECK(eviction->job(2).start == s(300));
  CHECK(eviction->job(1).start == s(400));   // when single ends, before its next timeout (460)
  CHECK(eviction->job(1).requeues == 1);
  const auto creation = run(sim::RequeueTimestamp::kCreation);
  CHECK(creation->job(1).start == s(300));
  CHECK(creation->job(1).requeues == 1);
  CHECK(creation->job(2).start == s(400));
}

TEST_CASE("Without waitForPodsReady a gang waits as a Volcano PodGroup does; gang_timeout still fails it for good",
          "[gang-requeue]") {
  SECTION("no timeout: pending until room frees, never requeued") {
    Sim sim({t::node("n0", 64, 256, 4, "T4")}, blocked_gang(5000), builtin_profile("first-fit"));
    sim.engine.run();
    CHECK(sim.job(1).start == s(5000));
    CHECK(sim.job(1).requeues == 0);
    CHECK(sim.engine.pods_ready_requeues() == 0);
    CHECK(lines_with(sim.log, ",backoff,").empty());
  }
  SECTION("the job's gang_timeout (gpusched's gang deadline) fails it even during a backoff") {
    Workload w = blocked_gang(5000);
    w[1].constraints.gang_timeout = s(130);   // inside the backoff 100..160
    Sim sim({t::node("n0", 64, 256, 4, "T4")}, std::move(w), builtin_profile("first-fit"), pods_ready(100));
    sim.engine.run();
    const auto& g = sim.job(1);
    CHECK(g.state == sim::JobState::kFailed);
    CHECK(g.end == s(130));
    CHECK(g.requeues == 1);
    CHECK_FALSE(g.deactivated);
    CHECK_THAT(sim.reason(1), Catch::Contains("gang timeout after 130 s"));
    CHECK(sim.engine.pending_count() == 0);
  }
  SECTION("a one-task job is never timed") {
    Workload w{gpu_job("blocker", "default", 0, 1000, 4), gpu_job("single", "default", 0, 10, 2)};
    Sim sim({t::node("n0", 64, 256, 4, "T4")}, std::move(w), builtin_profile("first-fit"), pods_ready(100, 0));
    sim.engine.run();
    CHECK(sim.job(1).start == s(1000));
    CHECK(sim.job(1).requeues == 0);
  }
}

TEST_CASE("A scenario reads wait_for_pods_ready with Kueue's defaults and rejects unknown fields", "[gang-requeue]") {
  const std::string nodes = R"({"name": "n0", "cpu": 64, "memory": "256Gi", "gpus": 4, "gpu_model": "T4"})";
  const std::string jobs =
      R"({"id": "blocker", "submit_time": 0, "duration": 130, "requests": {"cpu": "1", "nvidia.com/gpu": 4}},
         {"id": "gang", "submit_time": 0, "duration": 100, "tasks": 2, "requests": {"cpu": "1", "nvidia.com/gpu": 2}})";
  const auto sc = scenario::parse_scenario(
      t::scenario_doc("wfpr", "nodes", nodes, jobs,
                      R"("profile": "first-fit", "wait_for_pods_ready": {"timeout_s": 100, "requeuing": {"backoff_limit_count": 3}},)"),
      "wfpr.json", ".");
  const auto& w = sc.engine.wait_for_pods_ready;
  CHECK(w.enabled);
  CHECK(w.timeout == s(100));
  CHECK(w.backoff_limit_count == std::optional<std::uint32_t>(3));
  CHECK(w.backoff_base == s(60));
  CHECK(w.backoff_max == s(3600));
  CHECK(w.timestamp == sim::RequeueTimestamp::kEviction);
  const auto r = scenario::run(sc);
  CHECK(r.summary().pods_ready_requeues == 1);
  const auto rows = r.jobs();
  CHECK(rows[1].requeues == 1);
  CHECK(rows[1].start_s == Approx(160.0));
  CHECK(r.summary_json()["jobs"]["pods_ready_requeues"] == 1);

  CHECK_THROWS_WITH(scenario::parse_scenario(t::scenario_doc("bad", "nodes", nodes, jobs,
                                                             R"("wait_for_pods_ready": {"requeuing": {"backoffLimit": 3}},)"),
                                             "bad.json", "."),
                    Catch::Contains("/wait_for_pods_ready/requeuing/backoffLimit"));
  CHECK_THROWS_WITH(scenario::parse_scenario(t::scenario_doc("bad", "nodes", nodes, jobs,
                                                             R"("wait_for_pods_ready": {"requeuing": {"timestamp": "Now"}},)"),
                                             "bad.json", "."),
                    Catch::Contains("Eviction"));
}
