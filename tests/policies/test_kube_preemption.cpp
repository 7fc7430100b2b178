// priority-preemption with node_choice "kubernetes" (the default): victims per node and the choice
// of node as kube-scheduler's DefaultPreemption makes them, PodDisruptionBudgets included.
//
// Peer cases are translated from kubernetes/kubernetes at commit 008b3652959ca58af8be3fb5b6ecfe9ae7638282,
// pkg/scheduler/framework/plugins/defaultpreemption/default_preemption_test.go. Their nodes hold
// 500m CPU and 500 bytes of memory; pods ask for small (100m, 100), medium (200m, 200), large
// (300m, 300) or veryLarge (500m, 500); priorities neg -100, low 0, mid 100, high 1000,
// veryHigh 10000. Here a node holds 500m CPU and 500 MiB and requests scale the same way (bytes
// become MiB). Facts carry over, code does not: each case is our own test of the same inputs and
// expected outcome. Where a peer case accepts several nodes (map order decides in Kubernetes),
// we check the lowest node index, gpusched's deterministic tie-break.
#include <catch2/catch.hpp>

#include <algorithm>
#include <deque>
#include <iostream>
#include <map>
#include <sstream>
#include <random>
#include <string>
#include <vector>

#include <gpusched/error.hpp>
#include <gpusched/policies/framework/registry.hpp>
#include <gpusched/policies/framework/scheduler.hpp>
#include <gpusched/policies/preemption/priority_preemption.hpp>
#include <gpusched/scenario/scenario.hpp>

#include "support/support.hpp"

using namespace gpusched;
using namespace gpusched::policies;
namespace t = gpusched::test;

namespace {

constexpr std::int32_t kNeg = -100, kLow = 0, kMid = 100, kHigh = 1000, kVeryHigh = 10000;

/// The running jobs as the engine shows them, with start times. Specs live in a deque: the
/// Statement keeps pointers to victims' requests.
class Running final : public JobsView {
 public:
  explicit Running(std::size_t nodes) : on_node_(nodes) {}
  [[nodiscard]] SimTime now() const override { return SimTime::from_seconds(100); }
  [[nodiscard]] std::span<const JobId> running_on(NodeId n) const override { return on_node_[n.value]; }
  [[nodiscard]] const JobSpec& spec(JobId j) const override { return specs_[j.value]; }
  [[nodiscard]] std::span<const TaskPlacement> placements(JobId j) const override { return where_[j.value]; }
  [[nodiscard]] SimTime started(JobId j) const override { return start_[j.value]; }
  [[nodiscard]] double work_lost_us(JobId j) const override { return lost_[j.value]; }

  JobId add(JobSpec s, SimTime start, double lost_s) {
    specs_.push_back(std::move(s));
    where_.emplace_back();
    start_.push_back(start);
    lost_.push_back(lost_s * 1e6);
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
  [[nodiscard]] bool running(JobId j) const { return !where_[j.value].empty(); }
  [[nodiscard]] std::size_t size() const { return specs_.size(); }

 private:
  std::deque<JobSpec> specs_;
  std::vector<std::vector<TaskPlacement>> where_;
  std::vector<SimTime> start_;
  std::vector<double> lost_;
  std::vector<std::vector<JobId>> on_node_;
};

Profile kube_profile(nlohmann::json args) {
  Profile p = builtin_profile("first-fit");
  p.post_filter = {PluginRef{"priority-preemption", 1.0, std::move(args)}};
  return p;
}

/// A cluster, its running jobs and a first-fit scheduler with priority-preemption, told of every
/// start and stop as the engine would tell it.
/// The built-in registry whose priority-preemption factory also hands out the plugin it builds.
Registry registry_keeping(PriorityPreemption** built) {
  Registry r = Registry::with_builtins();
  PluginInfo info = *r.find("priority-preemption");
  info.factory = [inner = info.factory, built](const PluginContext& ctx) {
    auto p = inner(ctx);
    *built = dynamic_cast<PriorityPreemption*>(p.get());
    return p;
  };
  r.add(std::move(info));
  return r;
}

struct Fixture {
  PriorityPreemption* built = nullptr;
  ClusterState cluster;
  Running jobs;
  Scheduler sched;
  std::vector<TaskPlacement> out;

  explicit Fixture(std::vector<NodeSpec> nodes, nlohmann::json args = nlohmann::json::object())
      : cluster(t::cluster(std::move(nodes))), jobs(cluster.node_count()),
        sched(kube_profile(std::move(args)), registry_keeping(&built), 1) {
    sched.attach(cluster, {}, &jobs);
  }
  [[nodiscard]] PriorityPreemption& plugin() {
    REQUIRE(built != nullptr);
    return *built;
  }
  /// Runs a job on the given nodes (one task each; whole GPUs first-fit there).
  JobId run(JobSpec s, std::vector<std::uint32_t> nodes, SimTime start = SimTime::zero(), double lost_s = 0) {
    const JobId id = jobs.add(std::move(s), start, lost_s);
    const auto& spec = jobs.spec(id);
    std::vector<TaskPlacement> ps;
    for (const auto n : nodes) {
      TaskPlacement p;
      p.node = NodeId{n};
      const auto gpus = cluster.gpus(p.node);
      for (std::uint16_t g = 0; g < gpus.size() && static_cast<std::int32_t>(p.gpus.size()) < spec.request.gpu.count; ++g) {
        if (gpus[g].fully_free()) p.gpus.push_back({g, kMilliPerGpu, gpus[g].memory_mib});
      }
      REQUIRE(cluster.fits(p.node, spec.request));
      cluster.allocate(spec.request, p);
      ps.push_back(std::move(p));
    }
    jobs.start(id, std::move(ps));
    sched.job_started(jobs.spec(id), id, jobs.placements(id));
    return id;
  }
  /// Schedules a new job; on success stops the victims and starts it. Returns the victims'
  /// names, sorted, or {"<unplaced>"}.
  std::vector<std::string> submit(JobSpec s, std::string* node = nullptr) {
    const JobId id = jobs.add(std::move(s), SimTime::from_seconds(100), 0);
    if (!sched.schedule(cluster, jobs.spec(id), id, out).ok()) return {"<unplaced>"};
    std::vector<std::string> names;
    for (const JobId v : sched.last_victims()) {
      names.push_back(jobs.spec(v).name);
      sched.job_stopped(jobs.spec(v), v, jobs.placements(v));
      jobs.stop(v);
    }
    jobs.start(id, out);
    sched.job_started(jobs.spec(id), id, jobs.placements(id));
    if (node) *node = cluster.spec(out.front().node).name;
    std::sort(names.begin(), names.end());
    return names;
  }
};

/// Nodes of the peer's tests: 500m CPU, 500 MiB, no GPUs.
std::vector<NodeSpec> kube_nodes(int count) {
  std::vector<NodeSpec> out;
  for (int i = 1; i <= count; ++i) {
    NodeSpec n = t::node(t::numbered("node", i), 1, 1);
    n.cpu_milli = 500;
    n.memory_mib = 500;
    out.push_back(std::move(n));
  }
  return out;
}

enum class Size { kSmall = 100, kMedium = 200, kLarge = 300, kVeryLarge = 500 };

JobSpec pod(const std::string& name, std::int32_t priority, Size size, const std::string& app = "") {
  const auto amount = std::to_string(static_cast<int>(size));
  auto j = t::job(name, 0, 1000, t::request({{"cpu", amount + "m"}, {"memory", amount + "Mi"}}), 1, -1, priority);
  j.constraints.app = app;
  return j;
}

SimTime epoch(int n) { return SimTime::from_us(n); }   // the peer's epochTime<n> (n ns; order is what matters)

JobSpec gpus(const std::string& name, int n, std::int32_t priority, std::int32_t tasks = 1) {
  return t::job(name, 0, 1000, t::request({{"cpu", "1"}, {"memory", "1Gi"}, {"nvidia.com/gpu", std::to_string(n)}}),
                tasks, -1, priority);
}

std::vector<NodeSpec> gpu_nodes(int count, int gpus_each) {
  std::vector<NodeSpec> out;
  for (int i = 0; i < count; ++i) out.push_back(t::node(t::numbered("n", i), 32, 128, gpus_each));
  return out;
}

using Names = std::vector<std::string>;

}  // namespace

// kubernetes/kubernetes default_preemption_test.go, TestSelectBestCandidate,
// "a pod that fits on both nodes when lower priority pods are preempted" (expected: node1 or node2).
TEST_CASE("kube preemption: a pod that fits on both nodes when lower priority pods are preempted", "[kube-preemption]") {
  Fixture f(kube_nodes(2));
  f.run(pod("p1", kMid, Size::kLarge), {0}, epoch(0));
  f.run(pod("p2", kMid, Size::kLarge), {1}, epoch(0));
  std::string node;
  CHECK(f.submit(pod("p", kHigh, Size::kLarge), &node) == Names{"p1"});
  CHECK(node == "node1");   // either is the peer's answer; ties go to the lowest node index
}

// TestSelectBestCandidate, "node with min highest priority pod is picked" (expected: node3).
TEST_CASE("kube preemption: node with min highest priority pod is picked", "[kube-preemption]") {
  Fixture f(kube_nodes(3));
  f.run(pod("p1.1", kMid, Size::kMedium), {0});
  f.run(pod("p1.2", kMid, Size::kLarge), {0});
  f.run(pod("p2.1", kMid, Size::kMedium), {1});
  f.run(pod("p2.2", kLow, Size::kMedium), {1});
  f.run(pod("p3.1", kLow, Size::kMedium), {2});
  f.run(pod("p3.2", kLow, Size::kMedium), {2});
  std::string node;
  CHECK(f.submit(pod("p", kHigh, Size::kVeryLarge), &node) == Names{"p3.1", "p3.2"});
  CHECK(node == "node3");
}

// TestSelectBestCandidate, "when highest priorities are the same, minimum sum of priorities is
// picked" (expected: node2).
TEST_CASE("kube preemption: when highest priorities are the same, minimum sum of priorities is picked", "[kube-preemption]") {
  Fixture f(kube_nodes(3));
  f.run(pod("p1.1", kMid, Size::kMedium), {0});
  f.run(pod("p1.2", kMid, Size::kLarge), {0});
  f.run(pod("p2.1", kMid, Size::kLarge), {1});
  f.run(pod("p2.2", kLow, Size::kMedium), {1});
  f.run(pod("p3.1", kMid, Size::kMedium), {2});
  f.run(pod("p3.2", kMid, Size::kMedium), {2});
  std::string node;
  CHECK(f.submit(pod("p", kHigh, Size::kVeryLarge), &node) == Names{"p2.1", "p2.2"});
  CHECK(node == "node2");
}

// TestSelectBestCandidate, "when highest priority and sum are the same, minimum number of pods is
// picked" (expected: node2; the +2^31 per victim makes the sum decide first).
TEST_CASE("kube preemption: when highest priority and sum are the same, minimum number of pods is picked", "[kube-preemption]") {
  Fixture f(kube_nodes(3));
  f.run(pod("p1.1", kMid, Size::kSmall), {0});
  f.run(pod("p1.2", kNeg, Size::kSmall), {0});
  f.run(pod("p1.3", kMid, Size::kSmall), {0});
  f.run(pod("p1.4", kNeg, Size::kSmall), {0});
  f.run(pod("p2.1", kMid, Size::kLarge), {1});
  f.run(pod("p2.2", kNeg, Size::kMedium), {1});
  f.run(pod("p3.1", kMid, Size::kMedium), {2});
  f.run(pod("p3.2", kNeg, Size::kSmall), {2});
  f.run(pod("p3.3", kLow, Size::kSmall), {2});
  std::string node;
  CHECK(f.submit(pod("p", kHigh, Size::kVeryLarge), &node) == Names{"p2.1", "p2.2"});
  CHECK(node == "node2");
}

// TestSelectBestCandidate, "sum of adjusted priorities is considered" (expected: node2; without
// the +2^31 per victim node1's three pods would sum lowest).
TEST_CASE("kube preemption: sum of adjusted priorities is considered", "[kube-preemption]") {
  Fixture f(kube_nodes(3));
  f.run(pod("p1.1", kMid, Size::kSmall), {0});
  f.run(pod("p1.2", kNeg, Size::kSmall), {0});
  f.run(pod("p1.3", kNeg, Size::kSmall), {0});
  f.run(pod("p2.1", kMid, Size::kLarge), {1});
  f.run(pod("p2.2", kNeg, Size::kMedium), {1});
  f.run(pod("p3.1", kMid, Size::kMedium), {2});
  f.run(pod("p3.2", kNeg, Size::kSmall), {2});
  f.run(pod("p3.3", kLow, Size::kSmall), {2});
  std::string node;
  CHECK(f.submit(pod("p", kHigh, Size::kVeryLarge), &node) == Names{"p2.1", "p2.2"});
  CHECK(node == "node2");
}

// TestSelectBestCandidate, "same priority, same number of victims, different start time for each
// node's pod" (expected: node2, whose victims started last).
TEST_CASE("kube preemption: same priority, same number of victims, different start time for each node's pod", "[kube-preemption]") {
  Fixture f(kube_nodes(3));
  f.run(pod("p1.1", kMid, Size::kMedium), {0}, epoch(2));
  f.run(pod("p1.2", kMid, Size::kMedium), {0}, epoch(2));
  f.run(pod("p2.1", kMid, Size::kMedium), {1}, epoch(3));
  f.run(pod("p2.2", kMid, Size::kMedium), {1}, epoch(3));
  f.run(pod("p3.1", kMid, Size::kMedium), {2}, epoch(1));
  f.run(pod("p3.2", kMid, Size::kMedium), {2}, epoch(1));
  std::string node;
  CHECK(f.submit(pod("p", kHigh, Size::kVeryLarge), &node) == Names{"p2.1", "p2.2"});
  CHECK(node == "node2");
}

// TestSelectBestCandidate, "same priority, same number of victims, different start time for all
// pods" (expected: node3: its earliest victim started latest).
TEST_CASE("kube preemption: same priority, same number of victims, different start time for all pods", "[kube-preemption]") {
  Fixture f(kube_nodes(3));
  f.run(pod("p1.1", kMid, Size::kMedium), {0}, epoch(4));
  f.run(pod("p1.2", kMid, Size::kMedium), {0}, epoch(2));
  f.run(pod("p2.1", kMid, Size::kMedium), {1}, epoch(5));
  f.run(pod("p2.2", kMid, Size::kMedium), {1}, epoch(1));
  f.run(pod("p3.1", kMid, Size::kMedium), {2}, epoch(3));
  f.run(pod("p3.2", kMid, Size::kMedium), {2}, epoch(6));
  std::string node;
  CHECK(f.submit(pod("p", kHigh, Size::kVeryLarge), &node) == Names{"p3.1", "p3.2"});
  CHECK(node == "node3");
}

// TestSelectBestCandidate, "different priority, same number of victims, different start time for
// all pods" (expected: node2: only the highest-priority victims' start times count).
TEST_CASE("kube preemption: different priority, same number of victims, different start time for all pods", "[kube-preemption]") {
  Fixture f(kube_nodes(3));
  f.run(pod("p1.1", kLow, Size::kMedium), {0}, epoch(4));
  f.run(pod("p1.2", kMid, Size::kMedium), {0}, epoch(2));
  f.run(pod("p2.1", kMid, Size::kMedium), {1}, epoch(6));
  f.run(pod("p2.2", kLow, Size::kMedium), {1}, epoch(1));
  f.run(pod("p3.1", kLow, Size::kMedium), {2}, epoch(3));
  f.run(pod("p3.2", kMid, Size::kMedium), {2}, epoch(5));
  std::string node;
  CHECK(f.submit(pod("p", kHigh, Size::kVeryLarge), &node) == Names{"p2.1", "p2.2"});
  CHECK(node == "node2");
}

// TestDryRunPreemption, "medium priority pod is preempted, but lower priority one stays as it is
// small" (node1's victims: p1.2 only; node2's: p2; the nodes tie).
TEST_CASE("kube preemption: medium priority pod is preempted, but lower priority one stays as it is small", "[kube-preemption]") {
  Fixture f(kube_nodes(2));
  const JobId small = f.run(pod("p1.1", kLow, Size::kSmall), {0});
  f.run(pod("p1.2", kMid, Size::kLarge), {0});
  f.run(pod("p2", kMid, Size::kLarge), {1});
  std::string node;
  CHECK(f.submit(pod("p", kHigh, Size::kLarge), &node) == Names{"p1.2"});
  CHECK(node == "node1");
  CHECK(f.jobs.running(small));
}

// TestDryRunPreemption, "mixed priority pods are preempted" (node1's victims: p1.2 and p1.3; the
// more important p1.1 is reprieved first).
TEST_CASE("kube preemption: mixed priority pods are preempted", "[kube-preemption]") {
  Fixture f(kube_nodes(2));
  f.run(pod("p1.1", kMid, Size::kSmall), {0});
  f.run(pod("p1.2", kLow, Size::kSmall), {0});
  f.run(pod("p1.3", kMid, Size::kMedium), {0});
  f.run(pod("p1.4", kHigh, Size::kSmall), {0});
  f.run(pod("p2", kHigh, Size::kLarge), {1});
  CHECK(f.submit(pod("p", kHigh, Size::kLarge)) == Names{"p1.2", "p1.3"});
}

// TestDryRunPreemption, "mixed priority pods are preempted, pick later StartTime one when
// priorities are equal" (victims: p1.1 (started later than p1.2) and p1.3).
TEST_CASE("kube preemption: mixed priority pods are preempted, pick later StartTime one when priorities are equal", "[kube-preemption]") {
  Fixture f(kube_nodes(2));
  f.run(pod("p1.1", kLow, Size::kSmall), {0}, epoch(5));
  f.run(pod("p1.2", kLow, Size::kSmall), {0}, epoch(4));
  f.run(pod("p1.3", kMid, Size::kMedium), {0}, epoch(3));
  f.run(pod("p1.4", kHigh, Size::kSmall), {0}, epoch(2));
  f.run(pod("p2", kHigh, Size::kLarge), {1}, epoch(1));
  CHECK(f.submit(pod("p", kHigh, Size::kLarge)) == Names{"p1.1", "p1.3"});
}

// TestDryRunPreemption, "preemption with violation of same pdb" (both pods go; one PDB violation:
// the PDB allows one disruption).
TEST_CASE("kube preemption: preemption with violation of same pdb", "[kube-preemption]") {
  // Two running app=foo pods and min_available 1: disruptionsAllowed 1, as the peer's fixture.
  Fixture f(kube_nodes(1), {{"pod_disruption_budgets", {{{"name", "foo"}, {"selector", {{"app", "foo"}}}, {"min_available", 1}}}}});
  f.run(pod("p1.1", kMid, Size::kMedium, "foo"), {0});
  f.run(pod("p1.2", kMid, Size::kMedium, "foo"), {0});
  CHECK(f.plugin().disruptions_allowed(0) == 1);
  CHECK(f.submit(pod("p", kHigh, Size::kVeryLarge)) == Names{"p1.1", "p1.2"});
  CHECK(f.plugin().last_pdb_violations() == 1);
  CHECK(f.plugin().disruptions_allowed(0) == 0);
}

// TestPostFilter, "pod can be made schedulable on minHighestPriority node" (expected: node2). The
// peer's nodes hold one pod each; here a node holds 2 GPUs and the preemptor needs both, so every
// pod on a node must go, as there. p1's PDB allows any disruption (min_available 0), p2's and
// p3's none (min_available 100%): both nodes violate once, and node2's highest victim is lower.
TEST_CASE("kube preemption: pod can be made schedulable on minHighestPriority node", "[kube-preemption]") {
  const nlohmann::json pdbs = nlohmann::json::parse(R"([
    {"name": "violating-pdb", "namespace": "default", "selector": {"app": "violating"}, "min_available": "100%"},
    {"name": "non-violating-pdb", "namespace": "default", "selector": {"app": "non-violating"}, "min_available": 0}])");
  Fixture f(gpu_nodes(2, 2), {{"pod_disruption_budgets", pdbs}});
  auto p1 = gpus("p1", 1, kHigh);
  p1.constraints.app = "non-violating";
  auto p2 = gpus("p2", 1, kLow);
  p2.constraints.app = "violating";
  auto p3 = gpus("p3", 2, kMid);
  p3.constraints.app = "violating";
  f.run(p1, {0});
  f.run(p2, {0});
  f.run(p3, {1});
  std::string node;
  CHECK(f.submit(gpus("p", 2, kVeryHigh), &node) == Names{"p3"});
  CHECK(node == "n1");
  CHECK(f.plugin().last_pdb_violations() == 1);
}

// TestDryRunPreemption, "preemption looks past numCandidates until a non-PDB violating node is
// found": p1, p2 and p5 are covered by a PDB that allows no disruption; a node whose victim
// breaks no budget wins (node3, the first such; node4 ties with it).
TEST_CASE("kube preemption: fewest PDB violations first: a node whose victims break no budget wins", "[kube-preemption]") {
  Fixture f(kube_nodes(5), {{"pod_disruption_budgets", {{{"name", "foo"}, {"selector", {{"app", "foo"}}}, {"max_unavailable", 0}}}}});
  f.run(pod("p1", kMid, Size::kLarge, "foo"), {0});
  f.run(pod("p2", kMid, Size::kLarge, "foo"), {1});
  f.run(pod("p3", kMid, Size::kLarge), {2});
  f.run(pod("p4", kMid, Size::kLarge), {3});
  f.run(pod("p5", kMid, Size::kLarge, "foo"), {4});
  CHECK(f.plugin().disruptions_allowed(0) == 0);
  std::string node;
  CHECK(f.submit(pod("p", kHigh, Size::kLarge), &node) == Names{"p3"});
  CHECK(node == "node3");
  CHECK(f.plugin().last_pdb_violations() == 0);
  // With no such node left, a violating one is taken: preemption is not blocked by a PDB.
  f.submit(pod("q", kHigh, Size::kLarge));   // takes node4's p4
  CHECK(f.submit(pod("r", kHigh, Size::kLarge), &node) == Names{"p1"});
  CHECK(node == "node1");
  CHECK(f.plugin().last_pdb_violations() == 1);
}

// The issue's example (gpusched issue 12, item 1): one node's single victim has priority 5, the
// other node's three victims priority 1. kube-scheduler takes the three (lowest highest victim
// priority); least-lost-work takes the one (fewest victims).
TEST_CASE("kube preemption evicts three low-priority jobs rather than one higher-priority job", "[kube-preemption]") {
  SECTION("on two nodes") {
    for (const std::string rule : {"kubernetes", "least-lost-work"}) {
      INFO(rule);
      Fixture f(gpu_nodes(2, 8), {{"node_choice", rule}});
      f.run(gpus("a", 4, 5), {0});
      f.run(gpus("x", 4, 20), {0});
      f.run(gpus("b", 2, 1), {1});
      f.run(gpus("c", 1, 1), {1});
      f.run(gpus("d", 1, 1), {1});
      f.run(gpus("y", 4, 20), {1});
      std::string node;
      const auto victims = f.submit(gpus("h", 4, 10), &node);
      CHECK(victims == (rule == "kubernetes" ? Names{"b", "c", "d"} : Names{"a"}));
      CHECK(node == (rule == "kubernetes" ? "n1" : "n0"));
    }
  }
  SECTION("on one node: the higher-priority job is reprieved first") {
    for (const std::string rule : {"kubernetes", "least-lost-work"}) {
      INFO(rule);
      Fixture f(gpu_nodes(1, 8), {{"node_choice", rule}});
      f.run(gpus("a", 4, 5), {0});
      f.run(gpus("b", 2, 1), {0});
      f.run(gpus("c", 1, 1), {0});
      f.run(gpus("d", 1, 1), {0});
      CHECK(f.submit(gpus("h", 4, 10)) == (rule == "kubernetes" ? Names{"b", "c", "d"} : Names{"a"}));
    }
  }
}

TEST_CASE("kube preemption: a gang reprieves the most important victims first and respects PDBs", "[kube-preemption]") {
  // Four 1-GPU nodes run low-priority jobs; a 2-task gang of priority 10 needs two of them. The
  // least important (latest started) go first; l0 and l1 are covered by a PDB allowing none.
  const nlohmann::json pdbs = nlohmann::json::parse(R"([{"name": "keep", "selector": {"app": "keep"}, "max_unavailable": 0}])");
  Fixture f(gpu_nodes(4, 1), {{"pod_disruption_budgets", pdbs}});
  auto keep0 = gpus("l0", 1, 0);
  keep0.constraints.app = "keep";
  auto keep1 = gpus("l1", 1, 0);
  keep1.constraints.app = "keep";
  f.run(keep0, {0}, epoch(40));
  f.run(keep1, {1}, epoch(30));
  f.run(gpus("l2", 1, 0), {2}, epoch(20));
  f.run(gpus("l3", 1, 0), {3}, epoch(10));
  CHECK(f.submit(gpus("g", 1, 10, 2)) == Names{"l2", "l3"});
  CHECK(f.plugin().last_pdb_violations() == 0);
}

TEST_CASE("PodDisruptionBudget: disruptionsAllowed as the disruption controller computes it", "[kube-preemption]") {
  PodDisruptionBudget b;
  b.app = "web";
  SECTION("min_available as an integer") {
    b.min_available = IntOrPercent{2, false};
    CHECK(b.disruptions_allowed(3, 3) == 1);
    CHECK(b.disruptions_allowed(2, 3) == 0);
    CHECK(b.disruptions_allowed(1, 3) == 0);   // never negative
    CHECK(b.disruptions_allowed(0, 0) == 0);   // expected 0: none
  }
  SECTION("min_available as a percentage rounds up") {
    b.min_available = IntOrPercent{50, true};
    CHECK(b.disruptions_allowed(3, 3) == 1);   // ceil(1.5) = 2 desired
    CHECK(b.disruptions_allowed(4, 4) == 2);
    CHECK(b.disruptions_allowed(3, 4) == 1);   // one pod already gone
  }
  SECTION("max_unavailable") {
    b.max_unavailable = IntOrPercent{1, false};
    CHECK(b.disruptions_allowed(4, 4) == 1);
    CHECK(b.disruptions_allowed(3, 4) == 0);   // one is already unavailable
    b.max_unavailable = IntOrPercent{25, true};
    CHECK(b.disruptions_allowed(5, 5) == 2);   // ceil(1.25) = 2 may be unavailable
  }
  SECTION("matching: namespace is the queue; every selector entry must hold") {
    b.max_unavailable = IntOrPercent{1, false};
    auto j = gpus("web-1", 1, 0);
    j.constraints.app = "web";
    j.queue = "team-a";
    CHECK(b.matches(j));
    b.namespace_name = "team-b";
    CHECK_FALSE(b.matches(j));
    b.namespace_name = "team-a";
    b.job_name = "web-2";
    CHECK_FALSE(b.matches(j));
  }
}

TEST_CASE("kube preemption: an evicted job's pods still count as expected until it runs again", "[kube-preemption]") {
  // max_unavailable 1 over three running app=web jobs: one eviction is allowed, then none while
  // the victim waits (Kubernetes counts its replacement pod, pending, in the controller's scale).
  Fixture f(gpu_nodes(3, 1), {{"pod_disruption_budgets", {{{"name", "web"}, {"selector", {{"app", "web"}}}, {"max_unavailable", 1}}}}});
  std::vector<JobId> web;
  for (int i = 0; i < 3; ++i) {
    auto j = gpus(t::numbered("web", i), 1, 0);
    j.constraints.app = "web";
    web.push_back(f.run(j, {static_cast<std::uint32_t>(i)}));
  }
  CHECK(f.plugin().disruptions_allowed(0) == 1);
  CHECK(f.submit(gpus("h1", 1, 10)) == Names{"web0"});
  CHECK(f.plugin().last_pdb_violations() == 0);
  CHECK(f.plugin().disruptions_allowed(0) == 0);
  CHECK(f.submit(gpus("h2", 1, 10)) == Names{"web1"});
  CHECK(f.plugin().last_pdb_violations() == 1);   // PDBs order nodes; they never block preemption
}

TEST_CASE("pod_disruption_budgets are checked with the file and field named", "[kube-preemption]") {
  auto doc = [](const std::string& pdbs) {
    return t::scenario_doc("pdb", "nodes", R"({"name": "n0", "cpu": 8, "memory": "32Gi", "gpus": 1, "gpu_model": "A100-80GB"})",
                           R"({"id": "a", "submit_time": 0, "duration": 10, "requests": {"nvidia.com/gpu": 1}})",
                           R"("profile": "kube-default", "pod_disruption_budgets": )" + pdbs + ",");
  };
  auto error = [&](const std::string& pdbs) {
    return t::error_message<ScenarioError>([&] { (void)scenario::parse_scenario(doc(pdbs), "pdb.json", t::source_dir()); });
  };
  CHECK(error(R"([{"name": "a", "selector": {"app": "w"}}])") ==
        "[gpusched.scenario_error.204] pdb.json: field '/pod_disruption_budgets/0/min_available': give exactly one of "
        "min_available and max_unavailable");
  CHECK(error(R"([{"name": "a", "selector": {"app": "w"}, "min_available": "150%"}])").find(
            "/pod_disruption_budgets/0/min_available': a percentage must be between 0% and 100%") != std::string::npos);
  CHECK(error(R"([{"name": "a", "selector": {"label": "w"}, "min_available": 1}])").find(
            "[gpusched.scenario_error.205] pdb.json: field '/pod_disruption_budgets/0/selector/label'") != std::string::npos);
  CHECK(error(R"([{"name": "a", "selector": {}, "min_available": 1}])").find("needs a selector") != std::string::npos);
  CHECK(error(R"({"name": "a"})").find("field '/pod_disruption_budgets'") != std::string::npos);
  CHECK(error(R"([{"name": "a", "selector": {"app": "w"}, "max_unavailable": -1}])").find("non-negative") != std::string::npos);
  // A valid list reaches priority-preemption's arguments.
  const auto sc = scenario::parse_scenario(doc(R"([{"name": "a", "namespace": "default", "selector": {"app": "w"}, "max_unavailable": "10%"}])"),
                                           "pdb.json", t::source_dir());
  REQUIRE(sc.profile.post_filter.size() == 1);
  CHECK(sc.profile.post_filter[0].args.at("pod_disruption_budgets").size() == 1);
}

// Property: node_choice least-lost-work is gpusched's earlier rule, unchanged: on random small
// clusters its single-task choice is the exact minimum of (victim count, highest victim
// priority, work lost x GPUs, node index) over every subset of lower-priority jobs on one node,
// found here by brute force.
TEST_CASE("least-lost-work still picks the exact minimum (count, priority, work lost x GPUs, node)", "[kube-preemption]") {
  std::mt19937_64 rng(12);
  auto uniform = [&](int lo, int hi) { return lo + static_cast<int>(rng() % static_cast<std::uint64_t>(hi - lo + 1)); };
  for (int trial = 0; trial < 150; ++trial) {
    const int node_count = uniform(1, 4);
    Fixture f(gpu_nodes(node_count, 8), {{"node_choice", "least-lost-work"}});
    struct Job { JobId id; std::uint32_t node; int gpus; std::int32_t priority; double lost; };
    std::vector<Job> placed;
    for (int n = 0; n < node_count; ++n) {
      int free = 8;
      while (free > 0) {
        const int g = std::min(free, uniform(1, 4));
        const std::int32_t prio = uniform(0, 3) * 5;
        const double lost = uniform(1, 50) * 10.0;
        const JobId id = f.run(gpus(t::numbered("j", static_cast<std::int64_t>(f.jobs.size())), g, prio), {static_cast<std::uint32_t>(n)},
                               SimTime::zero(), lost);
        placed.push_back({id, static_cast<std::uint32_t>(n), g, prio, lost * 1e6 * g});
        free -= g;
      }
    }
    const int want = uniform(1, 8);
    const std::int32_t prio = uniform(1, 3) * 5;
    // Brute force over the subsets of each node's lower-priority jobs.
    VictimCost best{std::numeric_limits<std::size_t>::max(), 0, 0.0};
    for (int n = 0; n < node_count; ++n) {
      std::vector<Job> c;
      for (const auto& j : placed) {
        if (j.node == static_cast<std::uint32_t>(n) && j.priority < prio) c.push_back(j);
      }
      for (std::uint32_t mask = 1; mask < (1u << c.size()); ++mask) {
        VictimCost cost{0, 0, 0.0};
        int freed = 0;
        for (std::size_t i = 0; i < c.size(); ++i) {
          if (!(mask & (1u << i))) continue;
          ++cost.count;
          cost.max_priority = std::max(cost.max_priority, c[i].priority);
          cost.work_lost_gpu_us += c[i].lost;
          freed += c[i].gpus;
        }
        if (freed >= want && cost < best) best = cost;
      }
    }
    INFO("trial " << trial);
    const auto victims = f.submit(gpus("h", want, prio));
    if (best.count == std::numeric_limits<std::size_t>::max()) {
      CHECK(victims == Names{"<unplaced>"});
      continue;
    }
    REQUIRE(victims != Names{"<unplaced>"});
    const auto& got = f.plugin().last_cost();
    CHECK(got.count == best.count);
    CHECK(got.max_priority == best.max_priority);
    CHECK(got.work_lost_gpu_us == Approx(best.work_lost_gpu_us));
  }
}

TEST_CASE("A scenario's pod_disruption_budgets steer kube-default's preemption, with run --profile too", "[kube-preemption]") {
  // Two identical low-priority jobs on two 1-GPU nodes; a priority-10 job needs one node. They
  // tie on every criterion, so kube-default takes n0's job; a PDB covering it (allowing no
  // disruption) sends the preemption to n1.
  auto doc = [](const std::string& extra) {
    return t::scenario_doc(
        "pdb", "nodes",
        R"({"name": "n0", "cpu": 8, "memory": "32Gi", "gpus": 1, "gpu_model": "A100-80GB"},
           {"name": "n1", "cpu": 8, "memory": "32Gi", "gpus": 1, "gpu_model": "A100-80GB"})",
        R"({"id": "web", "app": "web", "submit_time": 0, "duration": 100, "requests": {"nvidia.com/gpu": 1}},
           {"id": "batch", "submit_time": 0, "duration": 100, "requests": {"nvidia.com/gpu": 1}},
           {"id": "urgent", "submit_time": 10, "duration": 10, "priority": 10, "requests": {"nvidia.com/gpu": 1}})",
        R"("profile": "kube-default", "outputs": {"event_log": true}, )" + extra);
  };
  auto evictions = [](const scenario::RunResult& r) {
    std::map<std::string, std::uint32_t> e;
    for (const auto& row : r.jobs()) e[row.job] = row.evictions;
    return e;
  };
  const auto without = evictions(scenario::run(scenario::parse_scenario(doc(""), "pdb.json", t::source_dir())));
  CHECK(without.at("web") == 1);
  CHECK(without.at("batch") == 0);
  const std::string pdbs = R"("pod_disruption_budgets": [{"name": "web", "selector": {"app": "web"}, "min_available": 1}],)";
  const auto with_run = scenario::run(scenario::parse_scenario(doc(pdbs), "pdb.json", t::source_dir()));
  const auto with = evictions(with_run);
  CHECK(with.at("web") == 0);
  CHECK(with.at("batch") == 1);
  CHECK(with_run.warnings().empty());
  // Under a profile whose preemption does not read budgets, the run says they have no effect.
  for (const char* profile : {R"("first-fit")", R"({"extends": "kube-default", "post_filter": [{"name": "priority-preemption", "args": {"node_choice": "least-lost-work"}}]})"}) {
    INFO(profile);
    auto text = doc(pdbs);
    text.replace(text.find(R"("kube-default")"), std::string(R"("kube-default")").size(), profile);
    const auto r = scenario::run(scenario::parse_scenario(text, "pdb.json", t::source_dir()));
    REQUIRE(r.warnings().size() == 1);
    CHECK_THAT(r.warnings()[0], Catch::StartsWith("pod_disruption_budgets: profile") && Catch::Contains("no effect"));
  }
  // `gpusched run --profile kube-default` replaces the profile: the budgets still apply.
  t::TempDir dir;
  const auto file = dir.write("pdb.json", doc(pdbs));
  const std::string out = (dir.path() / "out").string();
  REQUIRE(t::cli({"run", file.string(), "--profile", "kube-default", "--out", out}).rc == 0);
  CHECK(t::read_file(dir.path() / "out" / "events.csv").find("requeue,batch,,preempted by urgent") != std::string::npos);
}
