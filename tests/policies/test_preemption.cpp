// priority-preemption on small hand-built clusters, through the runner (Scheduler::schedule)
// with a JobsView over vectors: which jobs it evicts, and which it never does. These cases test
// gpusched's own rule (node_choice: least-lost-work: fewest victims, then priority, then work
// lost); kube-scheduler's rule, the default, is tested in test_kube_preemption.cpp. The cases
// that hold under both rules run under both.
#include <catch2/catch.hpp>

#include <algorithm>
#include <deque>
#include <string>
#include <vector>

#include <gpusched/error.hpp>
#include <gpusched/policies/framework/registry.hpp>
#include <gpusched/policies/framework/scheduler.hpp>
#include <gpusched/policies/preemption/priority_preemption.hpp>

#include "support/support.hpp"

using namespace gpusched;
using namespace gpusched::policies;
namespace t = gpusched::test;

namespace {

/// The running jobs, as the engine would show them. Specs live in a deque: the Statement keeps
/// pointers to victims' requests.
class Running final : public JobsView {
 public:
  explicit Running(std::size_t nodes) : on_node_(nodes) {}
  [[nodiscard]] SimTime now() const override { return SimTime::zero(); }
  [[nodiscard]] std::span<const JobId> running_on(NodeId n) const override { return on_node_[n.value]; }
  [[nodiscard]] const JobSpec& spec(JobId j) const override { return specs_[j.value]; }
  [[nodiscard]] std::span<const TaskPlacement> placements(JobId j) const override { return where_[j.value]; }
  [[nodiscard]] SimTime started(JobId) const override { return SimTime::zero(); }
  [[nodiscard]] double work_lost_us(JobId j) const override { return lost_[j.value]; }

  JobId add(JobSpec s, double lost_s) {
    specs_.push_back(std::move(s));
    where_.emplace_back();
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

 private:
  std::deque<JobSpec> specs_;
  std::vector<std::vector<TaskPlacement>> where_;
  std::vector<double> lost_;
  std::vector<std::vector<JobId>> on_node_;
};

Profile preemption_profile(nlohmann::json args = nlohmann::json::object()) {
  if (!args.contains("node_choice")) args["node_choice"] = "least-lost-work";
  Profile p = builtin_profile("first-fit");
  p.post_filter = {PluginRef{"priority-preemption", 1.0, std::move(args)}};
  return p;
}

/// A cluster, its running jobs and a scheduler with priority-preemption, told of every start and
/// stop as the engine would tell it.
struct Fixture {
  ClusterState cluster;
  Running jobs;
  Scheduler sched;
  std::vector<TaskPlacement> out;

  explicit Fixture(std::vector<NodeSpec> nodes, nlohmann::json args = nlohmann::json::object())
      : cluster(t::cluster(std::move(nodes))), jobs(cluster.node_count()),
        sched(preemption_profile(std::move(args)), Registry::with_builtins(), 1) {
    sched.attach(cluster, {}, &jobs);
  }
  /// Places a job at the given nodes (first-fit GPUs there) and records it as running.
  JobId run(JobSpec s, double lost_s, std::vector<std::uint32_t> nodes) {
    const JobId id = jobs.add(std::move(s), lost_s);
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
    sched.job_started(jobs.spec(id), id, jobs.placements(id));   // as the engine does
    return id;
  }
  /// Schedules a new job; on success stops the victims and starts it. Returns the victims, or
  /// {JobId{}} (one invalid id) when it was not placed.
  std::vector<JobId> submit(JobSpec s, JobId* placed = nullptr) {
    const JobId id = jobs.add(std::move(s), 0);
    if (!sched.schedule(cluster, jobs.spec(id), id, out).ok()) return {JobId{}};
    std::vector<JobId> victims(sched.last_victims().begin(), sched.last_victims().end());
    for (const JobId v : victims) {   // resources already released by the runner
      sched.job_stopped(jobs.spec(v), v, jobs.placements(v));
      jobs.stop(v);
    }
    jobs.start(id, out);
    sched.job_started(jobs.spec(id), id, jobs.placements(id));
    if (placed) *placed = id;
    return victims;
  }
  /// The job ends: its resources go back.
  void finish(JobId j) {
    for (const auto& p : jobs.placements(j)) cluster.release(jobs.spec(j).request, p);
    sched.job_stopped(jobs.spec(j), j, jobs.placements(j));
    jobs.stop(j);
  }
  [[nodiscard]] std::string nodes_of(JobId j) const {
    std::string r;
    for (const auto& p : jobs.placements(j)) r += (r.empty() ? "" : ",") + cluster.spec(p.node).name;
    return r;
  }
};

JobSpec gpus(const std::string& name, int n, std::int32_t priority, std::int32_t tasks = 1) {
  return t::job(name, 0, 1000, t::request({{"cpu", "1"}, {"memory", "1Gi"}, {"nvidia.com/gpu", std::to_string(n)}}),
                tasks, -1, priority);
}

std::vector<NodeSpec> nodes(int count, int gpus_each) {
  std::vector<NodeSpec> out;
  for (int i = 0; i < count; ++i) out.push_back(t::node(t::numbered("n", i), 32, 128, gpus_each));
  return out;
}

}  // namespace

TEST_CASE("Preemption evicts the single low-priority job rather than two smaller ones", "[policies][preemption]") {
  SECTION("on one node, even when the single job lost more work") {
    Fixture f(nodes(1, 8));
    const JobId a = f.run(gpus("a", 4, 0), 1000, {0});
    const JobId b = f.run(gpus("b", 2, 0), 10, {0});
    const JobId c = f.run(gpus("c", 2, 0), 10, {0});
    JobId h;
    CHECK(f.submit(gpus("h", 4, 10), &h) == std::vector<JobId>{a});
    CHECK(f.jobs.running(b));
    CHECK(f.jobs.running(c));
    CHECK(f.nodes_of(h) == "n0");
    CHECK(t::cluster_violation(f.cluster).empty());
  }
  SECTION("across nodes: the node needing one victim wins over a lower-index node needing two") {
    Fixture f(nodes(2, 8));
    f.run(gpus("b", 2, 0), 10, {0});
    f.run(gpus("c", 2, 0), 10, {0});
    f.run(gpus("e", 4, 20), 10, {0});
    const JobId a = f.run(gpus("a", 4, 0), 1000, {1});
    f.run(gpus("g", 4, 20), 10, {1});
    JobId h;
    CHECK(f.submit(gpus("h", 4, 10), &h) == std::vector<JobId>{a});
    CHECK(f.nodes_of(h) == "n1");
    CHECK(f.sched.jobs() == &f.jobs);
  }
  SECTION("the greedy reprieve (exact_search_limit 0) keeps the most valuable job and takes the two") {
    // Kubernetes' reprieve gives back `a` first (most work lost); then b and c are both needed.
    Fixture f(nodes(1, 8), {{"exact_search_limit", 0}});
    f.run(gpus("a", 4, 0), 1000, {0});
    const JobId b = f.run(gpus("b", 2, 0), 10, {0});
    const JobId c = f.run(gpus("c", 2, 0), 10, {0});
    CHECK(f.submit(gpus("h", 4, 10)) == std::vector<JobId>{b, c});
  }
}

TEST_CASE("Preemption never evicts equal- or higher-priority or non-preemptible jobs", "[policies][preemption]") {
  const std::string rule = GENERATE(as<std::string>{}, "least-lost-work", "kubernetes");
  INFO("node_choice " << rule);
  Fixture f(nodes(1, 8), {{"node_choice", rule}});
  const JobId equal = f.run(gpus("equal", 4, 10), 1, {0});
  const JobId higher = f.run(gpus("higher", 2, 20), 1, {0});
  auto keep = gpus("keep", 2, 0);
  keep.constraints.preemptible = false;
  const JobId kept = f.run(keep, 1, {0});
  const auto used = f.cluster.totals().gpu_used_milli;
  CHECK(f.submit(gpus("h", 2, 10)) == std::vector<JobId>{JobId{}});
  CHECK(f.jobs.running(equal));
  CHECK(f.jobs.running(higher));
  CHECK(f.jobs.running(kept));
  CHECK(f.cluster.totals().gpu_used_milli == used);   // the what-ifs left nothing behind
  CHECK(t::cluster_violation(f.cluster).empty());
  // A lower-priority preemptible job appears: it is the one taken.
  f.finish(higher);
  const JobId low = f.run(gpus("low", 2, 9), 1, {0});
  CHECK(f.submit(gpus("h2", 2, 10)) == std::vector<JobId>{low});
}

TEST_CASE("A job with preemptionPolicy Never waits instead of preempting", "[policies][preemption]") {
  const std::string rule = GENERATE(as<std::string>{}, "least-lost-work", "kubernetes");
  INFO("node_choice " << rule);
  Fixture f(nodes(1, 8), {{"node_choice", rule}});
  const JobId low = f.run(gpus("low", 8, 0), 1, {0});
  auto never = gpus("never", 4, 100);
  never.constraints.preempt_never = true;
  CHECK(f.submit(never) == std::vector<JobId>{JobId{}});
  CHECK(f.jobs.running(low));
  CHECK(f.cluster.totals().gpus_busy == 8);
  // The same job without the policy preempts.
  CHECK(f.submit(gpus("h", 4, 100)) == std::vector<JobId>{low});
}

TEST_CASE("Among single victims, preemption prefers the lowest priority, then the least work lost x GPUs",
          "[policies][preemption]") {
  SECTION("less work lost, on a higher-index node") {
    Fixture f(nodes(2, 4));
    f.run(gpus("a", 4, 0), 3600, {0});
    const JobId b = f.run(gpus("b", 4, 0), 60, {1});
    CHECK(f.submit(gpus("h", 4, 10)) == std::vector<JobId>{b});
  }
  SECTION("work lost is weighted by GPUs: 2 GPUs x 100 s < 4 GPUs x 60 s") {
    Fixture f(nodes(2, 4));
    const JobId a = f.run(gpus("a", 2, 0), 100, {0});
    f.run(gpus("a2", 2, 20), 1, {0});
    f.run(gpus("b", 4, 0), 60, {1});
    CHECK(f.submit(gpus("h", 2, 10)) == std::vector<JobId>{a});
  }
  SECTION("lower priority first, whatever the work lost") {
    Fixture f(nodes(2, 4));
    f.run(gpus("a", 4, 5), 1, {0});
    const JobId b = f.run(gpus("b", 4, 1), 10000, {1});
    CHECK(f.submit(gpus("h", 4, 10)) == std::vector<JobId>{b});
  }
  SECTION("all equal: the lowest node index") {
    Fixture f(nodes(2, 4));
    const JobId a = f.run(gpus("a", 4, 0), 60, {0});
    f.run(gpus("b", 4, 0), 60, {1});
    CHECK(f.submit(gpus("h", 4, 10)) == std::vector<JobId>{a});
  }
}

TEST_CASE("A gang of 4 preempts across nodes, the cheapest whole jobs only", "[policies][preemption]") {
  // n0 free; n1..n4 run low-priority jobs losing 10, 20, 30, 1000 s; n5 a higher-priority job.
  Fixture f(nodes(6, 1));
  const JobId l1 = f.run(gpus("l1", 1, 0), 10, {1});
  const JobId l2 = f.run(gpus("l2", 1, 0), 20, {2});
  const JobId l3 = f.run(gpus("l3", 1, 0), 30, {3});
  const JobId l4 = f.run(gpus("l4", 1, 0), 1000, {4});
  const JobId hi = f.run(gpus("hi", 1, 20), 1, {5});
  JobId g;
  CHECK(f.submit(gpus("gang", 1, 10, 4), &g) == std::vector<JobId>{l1, l2, l3});
  CHECK(f.nodes_of(g) == "n0,n1,n2,n3");
  CHECK(f.jobs.running(l4));
  CHECK(f.jobs.running(hi));
  CHECK(t::cluster_violation(f.cluster).empty());
  CHECK(f.cluster.totals().gpus_busy == 6);
}

TEST_CASE("A lower-priority gang is evicted whole, never in part", "[policies][preemption]") {
  // Under kubernetes too: the gang ties with l2 on every criterion and its node n0 comes first.
  const std::string rule = GENERATE(as<std::string>{}, "least-lost-work", "kubernetes");
  INFO("node_choice " << rule);
  SECTION("for a single-task job") {
    // n0+n1: a 2-task gang (2 GPUs x 100 s = 200 GPU-s); n2: a job losing 500 s; n3: priority 5.
    Fixture f(nodes(4, 1), {{"node_choice", rule}});
    const JobId lg = f.run(gpus("lg", 1, 0, 2), 100, {0, 1});
    f.run(gpus("l2", 1, 0), 500, {2});
    f.run(gpus("l3", 1, 5), 1, {3});
    JobId h;
    CHECK(f.submit(gpus("h", 1, 10), &h) == std::vector<JobId>{lg});
    CHECK(f.nodes_of(h) == "n0");
    CHECK(f.cluster.node(NodeId{1}).gpus_fully_free == 1);   // the gang's other task went too
    CHECK(f.cluster.totals().gpus_busy == 3);
  }
  SECTION("for a gang") {
    Fixture f(nodes(4, 1), {{"node_choice", rule}});
    const JobId lg = f.run(gpus("lg", 1, 0, 3), 10, {0, 1, 2});
    const JobId l = f.run(gpus("l", 1, 0), 100, {3});
    JobId g;
    CHECK(f.submit(gpus("g", 1, 10, 2), &g) == std::vector<JobId>{lg});
    CHECK(f.nodes_of(g) == "n0,n1");
    CHECK(f.jobs.running(l));
    CHECK(f.cluster.node(NodeId{2}).gpus_fully_free == 1);
    CHECK(t::cluster_violation(f.cluster).empty());
  }
}

TEST_CASE("When no victim set makes room, preemption changes nothing", "[policies][preemption]") {
  const std::string rule = GENERATE(as<std::string>{}, "least-lost-work", "kubernetes");
  INFO("node_choice " << rule);
  Fixture f(nodes(3, 1), {{"node_choice", rule}});
  f.run(gpus("l0", 1, 0), 1, {0});
  f.run(gpus("h1", 1, 50), 1, {1});
  f.run(gpus("h2", 1, 50), 1, {2});
  const auto generation_busy = f.cluster.totals().gpus_busy;
  CHECK(f.submit(gpus("gang", 1, 10, 2)) == std::vector<JobId>{JobId{}});   // only one node can be freed
  CHECK(f.submit(gpus("big", 2, 10)) == std::vector<JobId>{JobId{}});       // no node has 2 GPUs
  CHECK(f.cluster.totals().gpus_busy == generation_busy);
  CHECK(t::cluster_violation(f.cluster).empty());
}

TEST_CASE("priority-preemption validates its arguments", "[policies][preemption]") {
  CHECK_THROWS_AS(Scheduler(preemption_profile({{"exact_search_limit", 17}}), Registry::with_builtins(), 1), ProfileError);
  CHECK_THROWS_AS(Scheduler(preemption_profile({{"exact_search_limit", 2.5}}), Registry::with_builtins(), 1), ProfileError);
  CHECK_THROWS_AS(Scheduler(preemption_profile({{"max_victims", 1}}), Registry::with_builtins(), 1), ProfileError);
  CHECK_THROWS_AS(Scheduler(preemption_profile({{"node_choice", "fewest"}}), Registry::with_builtins(), 1), ProfileError);
  CHECK_THROWS_AS(Scheduler(preemption_profile({{"node_choice", 1}}), Registry::with_builtins(), 1), ProfileError);
  CHECK_NOTHROW(Scheduler(preemption_profile({{"node_choice", "kubernetes"}}), Registry::with_builtins(), 1));
  CHECK_NOTHROW(Scheduler(preemption_profile({{"exact_search_limit", 16}}), Registry::with_builtins(), 1));
  const Registry registry = Registry::with_builtins();
  const auto* info = registry.find("priority-preemption");
  REQUIRE(info != nullptr);
  CHECK(info->hooks == std::vector<std::string>{"post_filter"});
}
