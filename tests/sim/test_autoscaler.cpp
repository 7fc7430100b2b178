// The cluster autoscaler end to end (first-fit scheduler + engine), on hand-checked scenarios.
// Timing used throughout: scans run at multiples of the scan interval (10 s), the first one
// strictly after a submission, so a job submitted at 0 s is seen at 10 s; its node is ready
// 10 s + provisioning delay (300 s) = 310 s, when the job starts. A node that became empty at
// T is removed at exactly T + scale_down_idle (600 s).
#include <catch2/catch.hpp>

#include <functional>
#include <string>
#include <vector>

#include <gpusched/error.hpp>
#include <gpusched/policies/framework/registry.hpp>
#include <gpusched/policies/framework/scheduler.hpp>
#include <gpusched/sim/autoscaler.hpp>
#include <gpusched/sim/engine.hpp>

#include "support/support.hpp"

using namespace gpusched;
using namespace gpusched::sim;
namespace t = gpusched::test;

namespace {

SimTime s(std::int64_t seconds) { return SimTime::from_seconds(seconds); }
double hours(double seconds) { return seconds / 3600.0; }

JobSpec gpu_job(const std::string& name, double submit, double duration, const std::string& gpus, std::int32_t tasks = 1,
                const std::string& cpu = "8") {
  return t::job(name, submit, duration, t::request({{"cpu", cpu}, {"memory", "32Gi"}, {"nvidia.com/gpu", gpus}}), tasks);
}

/// `count` nodes named prefix0.. with 8 A100s (or `gpus` of `model`), labelled pool=<prefix>.
std::vector<NodeSpec> nodes(const std::string& prefix, int count, int gpus = 8, const std::string& model = "A100-80GB",
                            std::int64_t cores = 128) {
  std::vector<NodeSpec> out;
  for (int i = 0; i < count; ++i) {
    out.push_back(t::node(t::numbered(prefix, i), cores, 1024, gpus, model));
    out.back().labels["pool"] = prefix;
  }
  return out;
}

std::vector<NodeSpec> operator+(std::vector<NodeSpec> a, const std::vector<NodeSpec>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

AutoscaleGroup group(std::string name, std::uint32_t first, std::uint32_t max, std::uint32_t min = 0) {
  return {std::move(name), first, max, min, s(300), s(600)};
}

/// Owns a cluster, a workload, a first-fit scheduler, an engine and the autoscaler watching it.
struct Scaled {
  ClusterState cluster;
  Workload jobs;
  policies::Scheduler scheduler;
  Engine engine;
  Autoscaler scaler;

  Scaled(std::vector<NodeSpec> n, Workload w, AutoscalerConfig cfg, EngineConfig ecfg = {})
      : cluster(t::cluster(std::move(n))),
        jobs(std::move(w)),
        scheduler(policies::builtin_profile("first-fit"), policies::Registry::with_builtins(), 42),
        engine(cluster, jobs, scheduler, std::move(ecfg)),
        scaler(engine, cluster, std::move(cfg)) {
    engine.add_observer(&scaler);
  }
  const JobRuntime& job(std::uint32_t i) const { return engine.job(JobId{i}); }
  /// "t:+node" / "t:-node" for every request and removal.
  std::vector<std::string> log() const {
    std::vector<std::string> out;
    for (const auto& e : scaler.events()) {
      out.push_back(std::to_string(e.time.us / 1'000'000) + (e.up ? ":+" : ":-") + cluster.spec(e.node).name);
    }
    return out;
  }
};

ErrorCode code_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.code();
  }
  return ErrorCode::kOutputWrite;   // "did not throw"
}

}  // namespace

TEST_CASE("A pending job gets a node after scan + provisioning delay, removed when idle", "[sim][autoscaler]") {
  // Node 0 is static (CPUs only); nodes 1..3 are the autoscaled group.
  Scaled sim(std::vector<NodeSpec>{t::node("cpu", 16, 64)} + nodes("a100-", 3), {gpu_job("a", 0, 1000, "8")}, {{group("a100", 1, 3)}});
  CHECK_FALSE(sim.cluster.node(NodeId{1}).schedulable);   // absent until provisioned
  sim.engine.run();
  CHECK(sim.log() == std::vector<std::string>{"10:+a100-0", "1910:-a100-0"});
  CHECK(sim.job(0).start == s(310));   // scan at 10 s + 300 s
  CHECK(sim.job(0).end == s(1310));
  CHECK(sim.engine.now() == s(1910));   // removed 600 s after the job ended
  CHECK_FALSE(sim.cluster.node(NodeId{1}).schedulable);
  const auto r = sim.scaler.report();
  const auto& g = r["groups"][0];
  CHECK(g["name"] == "a100");
  CHECK(g["peak_up"] == 1);
  CHECK(g["scale_ups"] == 1);
  CHECK(g["scale_downs"] == 1);
  CHECK(g["node_hours"].get<double>() == Approx(hours(1910 - 10)));   // requested at 10 s, removed at 1910 s
  CHECK(r["node_hours"].get<double>() == Approx(hours(1900)));
  CHECK(r["static_node_hours"].get<double>() == Approx(hours(1910)));
  CHECK(r["peak_up"] == 1);
}

TEST_CASE("Three full-node jobs get three nodes, a fourth waits because the group is at max", "[sim][autoscaler]") {
  Workload w;
  for (int i = 0; i < 4; ++i) w.push_back(gpu_job(t::numbered("j", i), 0, 1000, "8"));
  Scaled sim(nodes("a100-", 3), std::move(w), {{group("a100", 0, 3)}});
  sim.engine.run();
  CHECK(sim.log() == std::vector<std::string>{"10:+a100-0", "10:+a100-1", "10:+a100-2", "1910:-a100-1", "1910:-a100-2",
                                              "2910:-a100-0"});
  for (std::uint32_t i = 0; i < 3; ++i) CHECK(sim.job(i).start == s(310));
  CHECK(sim.job(3).start == s(1310));   // on a100-0, freed by j0
  const auto r = sim.scaler.report();
  CHECK(r["groups"][0]["peak_up"] == 3);
  CHECK(r["scale_ups"] == 3);
  CHECK(r["scale_downs"] == 3);
  CHECK(r["node_hours"].get<double>() == Approx(hours(2 * (1910 - 10) + (2910 - 10))));
  CHECK(r["static_node_hours"].get<double>() == 0.0);
}

TEST_CASE("A job that fits no template node never triggers a scale-up", "[sim][autoscaler]") {
  auto gang = gpu_job("gang", 0, 100, "8", 4);   // 4 full nodes at once; the group has 3
  Scaled sim(nodes("a100-", 3), {gpu_job("huge", 0, 100, "16"), gang}, {{group("a100", 0, 3)}});
  sim.engine.run();
  CHECK(sim.scaler.events().empty());
  CHECK(sim.job(0).state == JobState::kPending);
  CHECK(sim.job(1).state == JobState::kPending);
  CHECK(sim.engine.now() == s(10));   // one scan, then nothing left to do
  CHECK(sim.scaler.report()["node_hours"].get<double>() == 0.0);
}

TEST_CASE("A gang gets all its nodes in one scan", "[sim][autoscaler]") {
  Scaled sim(nodes("a100-", 3), {gpu_job("gang", 0, 100, "8", 2)}, {{group("a100", 0, 3)}});
  sim.engine.run();
  CHECK(sim.log() == std::vector<std::string>{"10:+a100-0", "10:+a100-1", "1010:-a100-0", "1010:-a100-1"});
  CHECK(sim.job(0).start == s(310));
}

TEST_CASE("Min nodes are up from the start and never removed", "[sim][autoscaler]") {
  Scaled sim(nodes("a100-", 3), {gpu_job("a", 0, 100, "1"), gpu_job("b", 5000, 100, "1")}, {{group("a100", 0, 3, 1)}});
  CHECK(sim.cluster.node(NodeId{0}).schedulable);
  CHECK_FALSE(sim.cluster.node(NodeId{1}).schedulable);
  CHECK_FALSE(sim.cluster.node(NodeId{2}).schedulable);
  sim.engine.run();
  CHECK(sim.scaler.events().empty());
  CHECK(sim.job(0).start == s(0));
  CHECK(sim.job(1).start == s(5000));
  CHECK(sim.cluster.node(NodeId{0}).schedulable);
  CHECK(sim.engine.now() == s(5100));
  const auto r = sim.scaler.report();
  CHECK(r["groups"][0]["peak_up"] == 1);
  CHECK(r["node_hours"].get<double>() == Approx(hours(5100)));
}

TEST_CASE("A node above min is removed even while the min nodes stay", "[sim][autoscaler]") {
  // a fills the min node; b needs a second node; after both end, one node is removed (the group
  // keeps min = 1), the lowest-index empty one at its idle deadline.
  Scaled sim(nodes("a100-", 2), {gpu_job("a", 0, 2000, "8"), gpu_job("b", 0, 100, "8")}, {{group("a100", 0, 2, 1)}});
  sim.engine.run();
  CHECK(sim.log() == std::vector<std::string>{"10:+a100-1", "1010:-a100-1"});
  CHECK(sim.job(1).start == s(310));
  CHECK(sim.scaler.up(0) == 1);
}

TEST_CASE("least-idle-gpu picks the T4 group for a T4-sized job, first picks by group order", "[sim][autoscaler]") {
  // Group order: A100 first, so least-idle-gpu's choice is not the order's.
  // One 8-core, 1-GPU job: T4 node (32 cores, 4 GPUs) waste 24/32 + 3/4 = 1.5; A100 node
  // (128 cores, 8 GPUs) waste 120/128 + 7/8 = 1.81.
  const auto cluster = nodes("a100-", 2) + nodes("t4-", 2, 4, "T4", 32);
  AutoscalerConfig idle_gpu{{group("a100", 0, 2), group("t4", 2, 2)}};
  idle_gpu.expander = Expander::kLeastIdleGpu;
  Scaled a(cluster, {gpu_job("small", 0, 100, "1")}, idle_gpu);
  a.engine.run();
  CHECK(a.log() == std::vector<std::string>{"10:+t4-0", "1010:-t4-0"});
  CHECK(a.job(0).placements.front().node == NodeId{2});

  AutoscalerConfig first = idle_gpu;
  first.expander = Expander::kFirst;
  Scaled b(cluster, {gpu_job("small", 0, 100, "1")}, first);
  b.engine.run();
  CHECK(b.log() == std::vector<std::string>{"10:+a100-0", "1010:-a100-0"});
}

TEST_CASE("least-waste counts idle CPU and memory as Cluster Autoscaler, not GPUs", "[sim][autoscaler]") {
  // Cluster Autoscaler expander/waste/waste.go BestOption (read at 105bf75e): wastedCPU +
  // wastedMemory. One 8-core, 32 GiB, 1-GPU job. Group "wide" (first): 16 cores, 1024 GiB, 1 GPU:
  // CA waste 8/16 + 992/1024 = 1.47, idle GPU 0. Group "dense": 16 cores, 64 GiB, 8 GPUs: CA waste
  // 8/16 + 32/64 = 1.0, idle GPU 7/8. CA scales "dense"; least-idle-gpu scales "wide".
  std::vector<NodeSpec> cluster;
  for (int i = 0; i < 2; ++i) cluster.push_back(t::node(t::numbered("wide-", i), 16, 1024, 1, "A100-80GB"));
  for (int i = 0; i < 2; ++i) cluster.push_back(t::node(t::numbered("dense-", i), 16, 64, 8, "A100-80GB"));
  AutoscalerConfig cfg{{group("wide", 0, 2), group("dense", 2, 2)}};
  REQUIRE(cfg.expander == Expander::kLeastWaste);
  Scaled ca(cluster, {gpu_job("small", 0, 100, "1")}, cfg);
  ca.engine.run();
  CHECK(ca.log() == std::vector<std::string>{"10:+dense-0", "1010:-dense-0"});

  cfg.expander = Expander::kLeastIdleGpu;
  Scaled ours(cluster, {gpu_job("small", 0, 100, "1")}, cfg);
  ours.engine.run();
  CHECK(ours.log() == std::vector<std::string>{"10:+wide-0", "1010:-wide-0"});
}

TEST_CASE("A node selector or an untolerated taint steers the scale-up to the group that can take the job",
          "[sim][autoscaler]") {
  auto cluster = nodes("a100-", 2) + nodes("t4-", 2, 4, "T4", 32);
  auto picky = gpu_job("picky", 0, 100, "1");
  picky.constraints.node_selector["pool"] = "a100-";
  Scaled a(cluster, {picky}, {{group("a100", 0, 2), group("t4", 2, 2)}});
  a.engine.run();
  CHECK(a.log() == std::vector<std::string>{"10:+a100-0", "1010:-a100-0"});

  for (std::size_t i = 2; i < 4; ++i) cluster[i].taints.push_back({"dedicated", "infer", TaintEffect::kNoSchedule});
  Scaled b(cluster, {gpu_job("plain", 0, 100, "1")}, {{group("a100", 0, 2), group("t4", 2, 2)}});
  b.engine.run();
  CHECK(b.log() == std::vector<std::string>{"10:+a100-0", "1010:-a100-0"});
}

TEST_CASE("Jobs arriving while nodes provision use the coming capacity first", "[sim][autoscaler]") {
  // a (4 GPUs) asks for a node at 10 s; b (4 GPUs, at 100 s) fits its other half: no new node.
  // c (8 GPUs, at 100 s) needs its own node, asked for at 110 s, ready at 410 s.
  Scaled sim(nodes("a100-", 3), {gpu_job("a", 0, 1000, "4"), gpu_job("b", 100, 1000, "4"), gpu_job("c", 100, 1000, "8")},
             {{group("a100", 0, 3)}});
  sim.engine.run();
  CHECK(sim.log() == std::vector<std::string>{"10:+a100-0", "110:+a100-1", "1910:-a100-0", "2010:-a100-1"});
  CHECK(sim.job(0).start == s(310));
  CHECK(sim.job(1).start == s(310));
  CHECK(sim.job(2).start == s(410));
}

TEST_CASE("A job the scheduler keeps refusing on an empty group node stops asking for nodes", "[sim][autoscaler]") {
  // Strict FIFO: `huge` fits nowhere and blocks `small`, which would fit a template node. One
  // node is asked for; once it has stood empty through a scheduling cycle, `small` no longer
  // counts, and the node is removed when idle. The run ends.
  EngineConfig ecfg;
  ecfg.queue_policy = QueuePolicy::kStrictFifo;
  Scaled sim(nodes("a100-", 3), {gpu_job("huge", 0, 100, "16"), gpu_job("small", 0, 100, "1")}, {{group("a100", 0, 3)}},
             ecfg);
  sim.engine.run();
  CHECK(sim.log() == std::vector<std::string>{"10:+a100-0", "910:-a100-0"});
  CHECK(sim.job(1).state == JobState::kPending);
}

TEST_CASE("Autoscaling is deterministic and never exceeds max", "[sim][autoscaler]") {
  Workload w;
  for (int i = 0; i < 300; ++i) {
    const int gpus = 1 << (i % 4);   // 1, 2, 4, 8
    w.push_back(gpu_job(t::numbered("j", i), i * 7.0, 200.0 + (i * 37) % 900, std::to_string(gpus), 1, "4"));
  }
  const auto cluster = std::vector<NodeSpec>{t::node("cpu", 16, 64)} + nodes("a100-", 6) + nodes("t4-", 8, 4, "T4", 32);
  const AutoscalerConfig cfg{{group("a100", 1, 6, 1), group("t4", 7, 8)}};
  Scaled a(cluster, w, cfg);
  Scaled b(cluster, w, cfg);
  a.engine.run();
  b.engine.run();
  CHECK(a.log() == b.log());
  CHECK(a.scaler.report() == b.scaler.report());
  for (std::uint32_t i = 0; i < w.size(); ++i) CHECK(a.job(i).state == JobState::kCompleted);
  const auto r = a.scaler.report();
  CHECK(r["groups"][0]["peak_up"].get<int>() <= 6);
  CHECK(r["groups"][1]["peak_up"].get<int>() <= 8);
  CHECK(r["groups"][1]["scale_ups"].get<int>() > 0);
  CHECK(r["scale_ups"].get<int>() - r["scale_downs"].get<int>() == static_cast<int>(a.scaler.up(0) + a.scaler.up(1)) - 1);
  CHECK(a.scaler.up(0) == 1);   // back to min
  CHECK(a.scaler.up(1) == 0);
  CHECK(t::cluster_empty(a.cluster));
}

TEST_CASE("A bad autoscaler configuration is rejected with a scenario error", "[sim][autoscaler]") {
  ClusterState cluster = t::cluster(nodes("a100-", 4));
  Workload none;
  policies::Scheduler sched(policies::builtin_profile("first-fit"), policies::Registry::with_builtins(), 42);
  Engine engine(cluster, none, sched, {});
  auto make = [&](AutoscalerConfig c) { return [&, c] { Autoscaler a(engine, cluster, c); }; };
  const auto bad = ErrorCode::kScenarioBadValue;
  CHECK(code_of(make({{group("g", 2, 3)}})) == bad);                       // past the cluster's end
  CHECK(code_of(make({{group("g", 0, 2), group("h", 1, 2)}})) == bad);     // overlap
  CHECK(code_of(make({{group("g", 0, 2, 3)}})) == bad);                    // min > max
  CHECK(code_of(make({{group("g", 0, 0)}})) == bad);                       // empty group
  CHECK(code_of(make({{group("g", 0, 1), group("g", 1, 1)}})) == bad);     // duplicate name
  CHECK(code_of(make({{{"g", 0, 2, 0, s(-1), s(600)}}})) == bad);          // negative delay
  CHECK(code_of(make({{{"g", 0, 2, 0, s(300), s(-5)}}})) == bad);          // negative idle time
  CHECK(code_of(make({{group("g", 0, 2)}, SimTime::zero()})) == bad);      // scan interval 0
  CHECK_THROWS_WITH(Autoscaler(engine, cluster, {{group("g", 0, 2), group("h", 1, 2)}}),
                    Catch::Contains("'h' overlaps group 'g' at node a100-1"));
  CHECK_NOTHROW(Autoscaler(engine, cluster, {{group("g", 0, 2), group("h", 2, 2)}}));
  CHECK(parse_expander("least-waste") == Expander::kLeastWaste);
  CHECK(parse_expander("least-idle-gpu") == Expander::kLeastIdleGpu);
  CHECK(parse_expander("first") == Expander::kFirst);
  CHECK_FALSE(parse_expander("random"));
}
