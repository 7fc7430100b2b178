// Placement constraints on small hand-built clusters, through the Scheduler: taints and
// tolerations, node selectors and affinity, app maximum per node, topology spread and GPU topology.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include <gpusched/policies/framework/registry.hpp>
#include <gpusched/policies/framework/scheduler.hpp>
#include <gpusched/policies/placement/gpu_topology.hpp>
#include <gpusched/policies/placement/node_affinity.hpp>
#include <gpusched/policies/placement/taint_toleration.hpp>
#include <gpusched/policies/placement/topology_spread.hpp>

#include "support/support.hpp"

using namespace gpusched;
using namespace gpusched::policies;
namespace t = gpusched::test;

namespace {

/// node-resources-fit plus `filters`, scored by `scores` (none: the first feasible node wins).
Scheduler make(std::vector<PluginRef> filters, std::vector<PluginRef> scores = {},
               std::string device_select = "gpu-first-fit") {
  Profile p;
  p.name = "placement-test";
  p.filter = {PluginRef{"node-resources-fit"}};
  p.filter.insert(p.filter.end(), filters.begin(), filters.end());
  p.score = std::move(scores);
  p.device_select = PluginRef{std::move(device_select)};
  return Scheduler(p, Registry::with_builtins(), 1);
}

/// Schedules `j`; "node;node;..." of its tasks ("node[gpus]" when `gpus`), or "" when not placed.
std::string place(Scheduler& s, ClusterState& c, const JobSpec& j, JobId id = JobId{0}, bool gpus = false,
                  std::vector<TaskPlacement>* where = nullptr) {
  std::vector<TaskPlacement> out;
  if (!s.schedule(c, j, id, out).ok()) return "";
  std::string r;
  for (const auto& p : out) {
    if (!r.empty()) r += ";";
    r += c.spec(p.node).name;
    if (!gpus) continue;
    r += "[";
    for (std::size_t g = 0; g < p.gpus.size(); ++g) {
      if (g) r += ",";
      r += std::to_string(p.gpus[g].index);
    }
    r += "]";
  }
  if (where) *where = out;
  return r;
}

/// The nodes each of which, alone, would take the job (tried one at a time; nothing is kept).
std::string feasible(Scheduler& s, ClusterState& c, const JobSpec& j) {
  std::string r;
  for (std::uint32_t i = 0; i < c.node_count(); ++i) {
    const NodeId only[] = {NodeId{i}};
    std::vector<TaskPlacement> out;
    if (!s.schedule(c, j, JobId{0}, out, only).ok()) continue;
    for (const auto& p : out) c.release(j.request, p);
    if (!r.empty()) r += ",";
    r += c.spec(NodeId{i}).name;
  }
  return r;
}

JobSpec small_job(const std::string& name = "j", std::int32_t tasks = 1, std::int32_t min_available = -1) {
  return t::job(name, 0, 100, t::request({{"cpu", "1"}, {"memory", "1Gi"}}), tasks, min_available);
}

NodeSpec labelled(std::string name, std::map<std::string, std::string> labels) {
  auto n = t::node(std::move(name), 16, 64);
  n.labels = std::move(labels);
  return n;
}

LabelRequirement req(std::string key, std::string op, std::vector<std::string> values = {}) {
  return LabelRequirement{std::move(key), std::move(op), std::move(values)};
}

/// The running jobs the scheduler sees (what the engine's JobsView reports).
class RunningJobs final : public JobsView {
 public:
  explicit RunningJobs(std::size_t nodes) : on_(nodes) {}
  void add(JobId id, const JobSpec& spec, std::vector<TaskPlacement> where) {
    if (specs_.size() <= id.value) {
      specs_.resize(id.value + 1);
      where_.resize(id.value + 1);
    }
    specs_[id.value] = spec;
    for (const auto& p : where) {
      auto& list = on_[p.node.value];
      if (std::find(list.begin(), list.end(), id) == list.end()) list.push_back(id);
    }
    where_[id.value] = std::move(where);
  }
  [[nodiscard]] SimTime now() const override { return SimTime::from_us(0); }
  [[nodiscard]] std::span<const JobId> running_on(NodeId n) const override { return on_[n.value]; }
  [[nodiscard]] const JobSpec& spec(JobId j) const override { return specs_[j.value]; }
  [[nodiscard]] std::span<const TaskPlacement> placements(JobId j) const override { return where_[j.value]; }
  [[nodiscard]] SimTime started(JobId) const override { return SimTime::from_us(0); }
  [[nodiscard]] double work_lost_us(JobId) const override { return 0.0; }

 private:
  std::vector<std::vector<JobId>> on_;
  std::vector<JobSpec> specs_;
  std::vector<std::vector<TaskPlacement>> where_;
};

/// Places `j` as job `id` and records it as running.
std::string start(Scheduler& s, ClusterState& c, RunningJobs& running, const JobSpec& j, std::uint32_t id) {
  std::vector<TaskPlacement> out;
  const auto r = place(s, c, j, JobId{id}, false, &out);
  if (!r.empty()) running.add(JobId{id}, j, out);
  return r;
}

JobSpec app_job(const std::string& app, std::int32_t max_per_node, std::int32_t tasks = 1, std::int32_t min_available = -1) {
  auto j = small_job(app, tasks, min_available);
  j.constraints.app = app;
  j.constraints.max_per_node = max_per_node;
  return j;
}

}  // namespace

// ---------------------------------------------------------------- taint-toleration

TEST_CASE("A NoSchedule taint keeps out a job that does not tolerate it, and only that job", "[policies][placement]") {
  auto tainted = t::node("tainted", 16, 64);
  tainted.taints.push_back(Taint{"dedicated", "gpu", TaintEffect::kNoSchedule});
  auto c = t::cluster({tainted, t::node("plain", 16, 64)});
  auto s = make({PluginRef{"taint-toleration"}});

  auto with = [](Toleration tol) {
    auto j = small_job();
    j.constraints.tolerations.push_back(std::move(tol));
    return j;
  };
  CHECK(feasible(s, c, small_job()) == "plain");
  CHECK(feasible(s, c, with({"dedicated", "Equal", "gpu", "NoSchedule"})) == "tainted,plain");
  CHECK(feasible(s, c, with({"dedicated", "Exists", "", "NoSchedule"})) == "tainted,plain");
  CHECK(feasible(s, c, with({"dedicated", "Equal", "gpu", ""})) == "tainted,plain");   // no effect: every effect
  CHECK(feasible(s, c, with({"", "Exists", "", ""})) == "tainted,plain");              // tolerates everything
  CHECK(feasible(s, c, with({"dedicated", "Equal", "cpu", "NoSchedule"})) == "plain");  // other value
  CHECK(feasible(s, c, with({"dedicated", "Exists", "", "PreferNoSchedule"})) == "plain");  // other effect
  CHECK(feasible(s, c, with({"other", "Exists", "", ""})) == "plain");                   // other key
}

TEST_CASE("An untolerated taint's rejection is worded as kube-scheduler words it", "[policies][placement]") {
  // NoSchedule and NoExecute alike: kube-scheduler's TaintToleration says "node(s) had untolerated
  // taint(s)" (the peer's current wording, issue 12; it used to name the effect here).
  auto a = t::node("a", 16, 64), b = t::node("b", 16, 64);
  a.taints.push_back(Taint{"dedicated", "gpu", TaintEffect::kNoSchedule});
  b.taints.push_back(Taint{"maint", "", TaintEffect::kNoExecute});
  auto c = t::cluster({a, b});
  auto s = make({PluginRef{"taint-toleration"}});
  CHECK(place(s, c, small_job()).empty());
  CHECK(s.last_diagnosis() == "0/2 nodes are available: 2 node(s) had untolerated taint(s) (taint-toleration)");
}

TEST_CASE("PreferNoSchedule taints only lower a node's score", "[policies][placement]") {
  auto two = t::node("two", 16, 64), one = t::node("one", 16, 64), none = t::node("none", 16, 64);
  two.taints = {{"a", "", TaintEffect::kPreferNoSchedule}, {"b", "", TaintEffect::kPreferNoSchedule}};
  one.taints = {{"a", "", TaintEffect::kPreferNoSchedule}};
  auto c = t::cluster({two, one, none});
  auto s = make({PluginRef{"taint-toleration"}}, {PluginRef{"taint-toleration"}});
  CHECK(feasible(s, c, small_job()) == "two,one,none");   // never filtered
  CHECK(place(s, c, small_job()) == "none");
  // Tolerating "a" leaves two with one untolerated taint and one with none: one ties with none
  // and wins by node order.
  auto tolerant = small_job();
  tolerant.constraints.tolerations.push_back({"a", "Exists", "", "PreferNoSchedule"});
  CHECK(place(s, c, tolerant) == "one");
  // Kubernetes' normalisation: 100 - 100 * count / max.
  std::vector<double> scores{2, 1, 0};
  TaintTolerationPlugin{}.normalize(scores);
  CHECK(scores == std::vector<double>{0, 50, 100});
  std::vector<double> zeros{0, 0};
  TaintTolerationPlugin{}.normalize(zeros);
  CHECK(zeros == std::vector<double>{100, 100});
}

// ---------------------------------------------------------------- node-affinity

TEST_CASE("A nodeSelector needs every label to match exactly", "[policies][placement]") {
  auto c = t::cluster({labelled("a", {{"zone", "a"}, {"disk", "ssd"}}), labelled("b", {{"zone", "b"}, {"disk", "ssd"}}),
                       labelled("c", {{"zone", "a"}})});
  auto s = make({PluginRef{"node-affinity"}});
  auto j = small_job();
  CHECK(feasible(s, c, j) == "a,b,c");
  j.constraints.node_selector = {{"zone", "a"}};
  CHECK(feasible(s, c, j) == "a,c");
  j.constraints.node_selector = {{"zone", "a"}, {"disk", "ssd"}};
  CHECK(feasible(s, c, j) == "a");
  j.constraints.node_selector = {{"zone", "z"}};
  CHECK(place(s, c, j).empty());
  CHECK_THAT(s.last_diagnosis(), Catch::Contains("3 node(s) didn't match Pod's node affinity/selector (node-affinity)"));
}

TEST_CASE("Each node-affinity operator selects the nodes it names", "[policies][placement]") {
  // n1: zone a, 2 GPUs; n2: zone b, 8 GPUs; n3: no labels.
  auto c = t::cluster({labelled("n1", {{"zone", "a"}, {"gpus", "2"}}), labelled("n2", {{"zone", "b"}, {"gpus", "8"}}),
                       labelled("n3", {})});
  auto s = make({PluginRef{"node-affinity"}});
  auto with = [](std::vector<LabelTerm> terms) {
    auto j = small_job();
    j.constraints.affinity.required = std::move(terms);
    return j;
  };
  CHECK(feasible(s, c, with({{req("zone", "In", {"b", "c"})}})) == "n2");
  CHECK(feasible(s, c, with({{req("zone", "NotIn", {"a"})}})) == "n2,n3");   // no label: not in
  CHECK(feasible(s, c, with({{req("gpus", "Exists")}})) == "n1,n2");
  CHECK(feasible(s, c, with({{req("zone", "DoesNotExist")}})) == "n3");
  CHECK(feasible(s, c, with({{req("gpus", "Gt", {"4"})}})) == "n2");
  CHECK(feasible(s, c, with({{req("gpus", "Lt", {"4"})}})) == "n1");
  CHECK(feasible(s, c, with({{req("gpus", "Gt", {"8"})}})).empty());            // strictly greater
  // Terms are ORed, the requirements of one term ANDed.
  CHECK(feasible(s, c, with({{req("zone", "In", {"a"})}, {req("zone", "DoesNotExist")}})) == "n1,n3");
  CHECK(feasible(s, c, with({{req("zone", "Exists"), req("gpus", "Lt", {"4"})}})) == "n1");
  // nodeSelector and required affinity must both hold.
  auto both = with({{req("gpus", "Exists")}});
  both.constraints.node_selector = {{"zone", "b"}};
  CHECK(feasible(s, c, both) == "n2");
}

TEST_CASE("Preferred node-affinity weights choose the node", "[policies][placement]") {
  auto c = t::cluster({labelled("n1", {{"zone", "a"}, {"gpus", "2"}}), labelled("n2", {{"zone", "b"}, {"gpus", "8"}}),
                       labelled("n3", {})});
  auto s = make({PluginRef{"node-affinity"}}, {PluginRef{"node-affinity"}});
  auto j = small_job();
  CHECK(place(s, c, j) == "n1");   // no preference: node order
  // n1: 10 + 25 = 35; n2: 30 + 25 = 55; n3: 0.
  j.constraints.affinity.preferred = {{10, {req("zone", "In", {"a"})}}, {30, {req("gpus", "Gt", {"4"})}},
                                      {25, {req("zone", "Exists")}}};
  CHECK(place(s, c, j) == "n2");
  // n1: 50 + 25 = 75 beats n2's 55.
  j.constraints.affinity.preferred[0].first = 50;
  CHECK(place(s, c, j) == "n1");
  // Preferences never filter: n3 alone still takes the job.
  j.constraints.affinity.preferred = {{100, {req("zone", "In", {"z"})}}};
  CHECK(feasible(s, c, j) == "n1,n2,n3");
  // Kubernetes' normalisation: 100 * sum / max (integer), all 0 when nothing matches.
  std::vector<double> scores{35, 55, 0};
  NodeAffinityPlugin{}.normalize(scores);
  CHECK(scores == std::vector<double>{63, 100, 0});
  std::vector<double> zeros{0, 0};
  NodeAffinityPlugin{}.normalize(zeros);
  CHECK(zeros == std::vector<double>{0, 0});
}

TEST_CASE("node-affinity answers stay right when many rule sets take turns", "[policies][placement]") {
  // More distinct selectors than the plugin keeps answers for (16), in rounds.
  std::vector<NodeSpec> nodes;
  for (int i = 0; i < 20; ++i) nodes.push_back(labelled(t::numbered("n", i), {{"idx", std::to_string(i)}}));
  auto c = t::cluster(nodes);
  auto s = make({PluginRef{"node-affinity"}});
  for (int round = 0; round < 3; ++round) {
    for (int k = 0; k < 20; ++k) {
      auto j = small_job();
      j.constraints.node_selector = {{"idx", std::to_string((k * 7 + round) % 20)}};
      CHECK(place(s, c, j) == t::numbered("n", (k * 7 + round) % 20));
      for (std::uint32_t n = 0; n < c.node_count(); ++n) {
        // release what place() took: find it by the free CPU
        if (c.node(NodeId{n}).cpu_free_milli != 16000) c.release(j.request, TaskPlacement{NodeId{n}});
      }
    }
  }
  CHECK(t::cluster_empty(c));
}

// ---------------------------------------------------------------- app-max-per-node

TEST_CASE("max_per_node 1 spreads a 3-task job over 3 nodes", "[policies][placement]") {
  auto c = t::cluster({t::node("a", 16, 64), t::node("b", 16, 64), t::node("c", 16, 64)});
  auto packed = make({});
  CHECK(place(packed, c, app_job("svc", 1, 3)) == "a;a;a");   // without the plugin: first fit
  auto c2 = t::cluster({t::node("a", 16, 64), t::node("b", 16, 64), t::node("c", 16, 64)});
  auto s = make({PluginRef{"app-max-per-node"}});
  CHECK(place(s, c2, app_job("svc", 1, 3)) == "a;b;c");
  auto c3 = t::cluster({t::node("a", 16, 64), t::node("b", 16, 64), t::node("c", 16, 64)});
  CHECK(place(s, c3, app_job("svc", 2, 3)) == "a;a;b");
}

TEST_CASE("A gang that max_per_node cannot fit places nothing and holds nothing", "[policies][placement]") {
  auto c = t::cluster({t::node("a", 16, 64), t::node("b", 16, 64)});
  auto s = make({PluginRef{"app-max-per-node"}});
  CHECK(place(s, c, app_job("svc", 1, 3, 3)).empty());
  CHECK(t::cluster_empty(c));
  CHECK_THAT(s.last_diagnosis(), Catch::Contains("2 node(s) already run max_per_node tasks of the app (app-max-per-node)"));
  // With min_available 2 the gang starts on both nodes.
  CHECK(place(s, c, app_job("svc", 1, 3, 2)) == "a;b");
}

TEST_CASE("max_per_node counts the running tasks of the same app on the node", "[policies][placement]") {
  auto c = t::cluster({t::node("a", 16, 64), t::node("b", 16, 64), t::node("c", 16, 64)});
  auto s = make({PluginRef{"app-max-per-node"}});
  RunningJobs running(c.node_count());
  s.attach(c, {}, &running);
  CHECK(start(s, c, running, app_job("svc", 1), 0) == "a");
  CHECK(start(s, c, running, app_job("other", 1), 1) == "a");   // another app: not counted
  CHECK(start(s, c, running, app_job("svc", 1), 2) == "b");
  // Anti-affinity is symmetric: a running svc task with max 1 keeps out an svc job without a limit.
  CHECK(start(s, c, running, app_job("svc", 0), 3) == "c");
  // A job allowing 2 per node is still held to the running tasks' max 1 everywhere.
  CHECK(place(s, c, app_job("svc", 2, 2), JobId{4}).empty());
  // Up to 2 per node: a holds 1 web task, so 1 more fits there.
  auto c2 = t::cluster({t::node("a", 16, 64), t::node("b", 16, 64)});
  auto s2 = make({PluginRef{"app-max-per-node"}});
  RunningJobs running2(c2.node_count());
  s2.attach(c2, {}, &running2);
  CHECK(start(s2, c2, running2, app_job("web", 2), 0) == "a");
  CHECK(place(s2, c2, app_job("web", 2, 3), JobId{1}) == "a;b;b");
}

TEST_CASE("max_per_node indexes a running job with many tasks", "[policies][placement]") {
  // 40 nodes; a running 20-task svc job (above the scan limit) on the first 20 nodes.
  std::vector<NodeSpec> nodes;
  for (int i = 0; i < 40; ++i) nodes.push_back(t::node(t::numbered("n", i), 16, 64));
  auto c = t::cluster(nodes);
  auto s = make({PluginRef{"app-max-per-node"}});
  RunningJobs running(c.node_count());
  s.attach(c, {}, &running);
  CHECK(start(s, c, running, app_job("svc", 1, 20), 0) ==
        "n0;n1;n2;n3;n4;n5;n6;n7;n8;n9;n10;n11;n12;n13;n14;n15;n16;n17;n18;n19");
  CHECK(place(s, c, app_job("svc", 1, 2), JobId{1}) == "n20;n21");
}

// ---------------------------------------------------------------- topology-spread

namespace {
/// a1, a2 in zone-a; b1, b2 in zone-b; c1, c2 in zone-c; optionally a node without the label first.
ClusterState zones(bool unlabelled_first = false) {
  std::vector<NodeSpec> nodes;
  if (unlabelled_first) nodes.push_back(labelled("x", {}));
  for (const char* z : {"a", "b", "c"}) {
    for (const char* i : {"1", "2"}) {
      std::string name = z, zone = "zone-";
      name += i;
      zone += z;
      nodes.push_back(labelled(name, {{"topology.kubernetes.io/zone", zone}}));
    }
  }
  return t::cluster(nodes);
}
PluginRef spread(std::int32_t max_skew, const char* when = "DoNotSchedule") {
  return PluginRef{"topology-spread", 1.0, {{"max_skew", max_skew}, {"when_unsatisfiable", when}}};
}
}  // namespace

TEST_CASE("topology-spread with max_skew 1 keeps three zones within one task of each other", "[policies][placement]") {
  auto c = zones();
  auto packed = make({});
  CHECK(place(packed, c, small_job("j", 6)) == "a1;a1;a1;a1;a1;a1");
  auto c2 = zones();
  auto s = make({spread(1)});
  // A job without an app spreads its own tasks.
  CHECK(place(s, c2, small_job("j", 6)) == "a1;b1;c1;a1;b1;c1");
  auto c3 = zones();
  auto s2 = make({spread(2)});
  // max_skew 2: zone-a may lead by 2 before zone-b is used.
  CHECK(place(s2, c3, small_job("j", 6)) == "a1;a1;b1;b1;c1;a1");
}

TEST_CASE("topology-spread counts the running tasks of the same app", "[policies][placement]") {
  auto c = zones();
  auto s = make({spread(1)});
  RunningJobs running(c.node_count());
  s.attach(c, {}, &running);
  CHECK(start(s, c, running, app_job("web", 0), 0) == "a1");
  CHECK(start(s, c, running, app_job("db", 0), 1) == "a1");    // another app: its own counts
  CHECK(start(s, c, running, app_job("web", 0, 2), 2) == "b1;c1");
  CHECK(start(s, c, running, app_job("web", 0), 3) == "a1");   // 1/1/1: any zone, node order
}

TEST_CASE("topology-spread DoNotSchedule rejects nodes without the topology label", "[policies][placement]") {
  auto c = zones(true);
  auto s = make({spread(1)});
  CHECK(place(s, c, small_job()) == "a1");
  auto only_x = t::cluster({labelled("x", {})});
  CHECK(place(s, only_x, small_job()).empty());
  CHECK_THAT(s.last_diagnosis(), Catch::Contains("missing required label"));
}

TEST_CASE("topology-spread counts only the nodes the job's node affinity allows", "[policies][placement]") {
  // The job may only use zone-a and zone-b, so zone-c (empty) does not hold the minimum at 0.
  auto c = zones();
  auto s = make({PluginRef{"node-affinity"}, spread(1)});
  auto j = small_job("j", 4);
  j.constraints.affinity.required = {{req("topology.kubernetes.io/zone", "In", {"zone-a", "zone-b"})}};
  CHECK(place(s, c, j) == "a1;b1;a1;b1");
}

TEST_CASE("topology-spread ScheduleAnyway prefers the emptiest zone without filtering", "[policies][placement]") {
  auto c = zones(true);
  auto s = make({spread(1, "ScheduleAnyway")}, {spread(1, "ScheduleAnyway")});
  RunningJobs running(c.node_count());
  s.attach(c, {}, &running);
  CHECK(start(s, c, running, app_job("web", 0, 2), 0) == "a1;b1");
  CHECK(place(s, c, app_job("web", 0), JobId{1}) == "c1");
  // Nothing is filtered, even the unlabelled node.
  auto fresh = zones(true);
  CHECK(feasible(s, fresh, small_job()) == "x,a1,a2,b1,b2,c1,c2");
}

TEST_CASE("topology-spread ScheduleAnyway scores like Kubernetes", "[policies][placement]") {
  // web runs one task in zone-a (a1) and one in zone-b (b1); x has no zone label.
  auto c = zones(true);
  RunningJobs running(c.node_count());
  const auto web = app_job("web", 0);
  running.add(JobId{0}, web, {TaskPlacement{NodeId{1}}});
  running.add(JobId{1}, web, {TaskPlacement{NodeId{3}}});
  auto scores_for = [&](std::int32_t max_skew) {
    TopologySpreadPlugin plugin("topology.kubernetes.io/zone", max_skew, TopologySpreadPlugin::Mode::kScheduleAnyway);
    CycleState state;
    const auto job = app_job("web", 0);
    TaskContext ctx{job, JobId{2}, 0, state, {}, &running};
    std::vector<double> scores;
    for (std::uint32_t n = 0; n < c.node_count(); ++n) scores.push_back(plugin.score(c, ctx, NodeId{n}));
    plugin.normalize(scores);
    return scores;
  };
  // 3 zones among the scored nodes: weight log(3 + 2) = 1.609. raw = round(count * 1.609 + max_skew - 1).
  // max_skew 1: zone-a, zone-b raw 2, zone-c 0; score 100 * (2 + 0 - raw) / 2; x (no label) 0.
  CHECK(scores_for(1) == std::vector<double>{0, 0, 0, 0, 0, 100, 100});
  // max_skew 2: raw 3, 3, 1; score 100 * (3 + 1 - raw) / 3 = 33 and 100.
  CHECK(scores_for(2) == std::vector<double>{0, 33, 33, 33, 33, 100, 100});
}

TEST_CASE("topology-spread arguments are checked when the scheduler is built", "[policies][placement]") {
  CHECK_THROWS_AS(make({spread(0)}), ProfileError);
  CHECK_THROWS_AS(make({PluginRef{"topology-spread", 1.0, {{"max_skew", 1.5}}}}), ProfileError);
  CHECK_THROWS_AS(make({spread(1, "Sometimes")}), ProfileError);
  CHECK_THROWS_AS(make({PluginRef{"topology-spread", 1.0, {{"topology_key", ""}}}}), ProfileError);
  CHECK_NOTHROW(make({PluginRef{"topology-spread", 1.0, {{"topology_key", "rack"}}}}));
}

// ---------------------------------------------------------------- gpu-topology

TEST_CASE("gpu-topology prefers the NVLink node for a 4-GPU task", "[policies][placement]") {
  // pcie: 8 GPUs over 2 sockets, no NVLink (listed first); nvl: 8 GPUs on one NVSwitch.
  auto pcie = t::node("pcie", 64, 512, 8, "A100-80GB", 2);
  auto nvl = t::node("nvl", 64, 512, 8, "A100-80GB", 2);
  for (auto& g : nvl.gpus) g.nvlink_domain = 0;
  REQUIRE(normalize_numa(pcie).empty());
  REQUIRE(normalize_numa(nvl).empty());
  auto c = t::cluster({pcie, nvl});
  auto s = make({}, {PluginRef{"gpu-topology"}}, "topology-manager");
  auto job = [](const char* gpus) {
    return t::job("g", 0, 100, t::request({{"cpu", "1"}, {"memory", "1Gi"}, {"nvidia.com/gpu", gpus}}));
  };
  CHECK(place(s, c, job("4"), JobId{0}, true) == "nvl[0,1,2,3]");
  CHECK(place(s, c, job("1"), JobId{1}, true) == "pcie[0]");   // one GPU: every node equal, node order
}

TEST_CASE("gpu-topology ranks one PCIe switch above one socket above two sockets", "[policies][placement]") {
  // sys: 4 GPUs, 2 per socket; phb: 4 GPUs on socket 0, no switch; pix: 4 GPUs behind one switch.
  auto sys = t::node("sys", 64, 512, 4, "A100-80GB", 2);
  auto phb = t::node("phb", 64, 512, 4, "A100-80GB", 1);
  auto pix = t::node("pix", 64, 512, 4, "A100-80GB", 1);
  for (auto& g : pix.gpus) g.pcie_switch = 0;
  auto s = make({}, {PluginRef{"gpu-topology"}}, "topology-manager");
  const auto four = t::job("g", 0, 100, t::request({{"cpu", "1"}, {"memory", "1Gi"}, {"nvidia.com/gpu", "4"}}));
  auto c = t::cluster({sys, phb, pix});
  CHECK(place(s, c, four) == "pix");
  auto c2 = t::cluster({sys, phb});
  CHECK(place(s, c2, four) == "phb");
  CHECK(GpuTopologyScore::link_score(GpuLink::kNvlink) == 100.0);
  CHECK(GpuTopologyScore::link_score(GpuLink::kPcieSwitch) == Approx(66.667).epsilon(1e-4));
  CHECK(GpuTopologyScore::link_score(GpuLink::kHostBridge) == Approx(33.333).epsilon(1e-4));
  CHECK(GpuTopologyScore::link_score(GpuLink::kCrossSocket) == 0.0);
}

TEST_CASE("gpu-topology scores the GPUs that are free now", "[policies][placement]") {
  // Both nodes have 2 NVLink pairs (0-1, 2-3) across 2 sockets. On a, GPU 1 is busy, so the only
  // free pair sharing an NVLink is 2-3; on b, GPUs 1 and 3 are busy: no free NVLink pair.
  auto a = t::node("a", 64, 512, 4, "A100-80GB", 2);
  auto b = t::node("b", 64, 512, 4, "A100-80GB", 2);
  a.nvlinks = b.nvlinks = {NvLink{0, 1, 1}, NvLink{2, 3, 1}};
  REQUIRE(normalize_numa(a).empty());   // CPUs and memory split over both sockets (TopologyManager)
  REQUIRE(normalize_numa(b).empty());
  auto c = t::cluster({b, a});
  const auto one = t::request({{"nvidia.com/gpu", "1"}});
  const auto mib = c.gpus(NodeId{0})[0].memory_mib;
  c.allocate(one, {NodeId{0}, {{1, kMilliPerGpu, mib}}});
  c.allocate(one, {NodeId{0}, {{3, kMilliPerGpu, mib}}});
  c.allocate(one, {NodeId{1}, {{1, kMilliPerGpu, mib}}});
  auto s = make({}, {PluginRef{"gpu-topology"}}, "topology-manager");
  const auto two = t::job("g", 0, 100, t::request({{"cpu", "1"}, {"memory", "1Gi"}, {"nvidia.com/gpu", "2"}}));
  CHECK(place(s, c, two, JobId{0}, true) == "a[2,3]");
}
