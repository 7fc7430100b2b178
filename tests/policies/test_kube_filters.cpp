// kube-scheduler's filters, in its order and with its wording of why a pod is pending (issue 12,
// item 7); percentage_of_nodes_to_score; the warnings channel (item 8). Cases translated from
// kubernetes/kubernetes name the file, the test function and the case; facts carry over, code
// does not.
#include <catch2/catch.hpp>

#include <algorithm>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gpusched/policies/framework/profile.hpp>
#include <gpusched/policies/framework/registry.hpp>
#include <gpusched/policies/framework/scheduler.hpp>
#include <gpusched/policies/noderesources/requested_to_capacity_ratio.hpp>
#include <gpusched/policies/placement/node_unschedulable.hpp>
#include <gpusched/policies/placement/taint_toleration.hpp>
#include <gpusched/scenario/scenario.hpp>

#include "support/support.hpp"

using namespace gpusched;
using namespace gpusched::policies;
namespace t = gpusched::test;

namespace {

/// A profile that words its diagnosis as kube-scheduler does, with `filters` in that order.
Scheduler kube(std::vector<PluginRef> filters, const Registry& registry = Registry::builtins(), int percentage = -1) {
  Profile p;
  p.name = "kube-filters-test";
  p.diagnosis = Diagnosis::kKubeScheduler;
  p.filter = std::move(filters);
  p.percentage_of_nodes_to_score = percentage;
  return Scheduler(p, registry, 1);
}

/// Schedules `j`, which must not fit, and returns the diagnosis.
std::string why(Scheduler& s, ClusterState& c, const JobSpec& j) {
  std::vector<TaskPlacement> out;
  const Status st = s.schedule(c, j, JobId{0}, out);
  REQUIRE_FALSE(st.ok());
  return s.last_diagnosis();
}

/// One filter's answer for `j` on node 0.
Status filter_node0(const FilterPlugin& f, const ClusterState& c, const JobSpec& j) {
  CycleState state;
  TaskContext ctx{j, JobId{0}, 0, state};
  return f.filter(c, ctx, NodeId{0});
}

JobSpec with_tolerations(std::vector<Toleration> tols) {
  auto j = t::job("pod1", 0, 10, t::request({{"cpu", "1"}}));
  j.constraints.tolerations = std::move(tols);
  return j;
}

ClusterState tainted(std::vector<Taint> taints) {
  auto n = t::node("nodeA", 8, 32);
  n.taints = std::move(taints);
  return t::cluster({n});
}

/// A node with `cpu_milli` millicores, `memory_mib` MiB and `ext` of example.com/aaa.
NodeSpec small_node(std::string name, std::int64_t cpu_milli, std::int64_t memory_mib, ResourceTable& res, std::int64_t ext = 0) {
  NodeSpec n;
  n.name = std::move(name);
  n.cpu_milli = cpu_milli;
  n.memory_mib = memory_mib;
  if (ext > 0) n.extended.emplace_back(res.intern("example.com/aaa"), ext);
  return n;
}

/// A filter that rejects the nodes named in `reasons` with the reason given (the peer's
/// FalseFilter test plugins), as a plugin outside the built-ins would.
class NamedFilter final : public FilterPlugin {
 public:
  NamedFilter(std::string name, std::vector<std::pair<std::string, std::string>> reasons)
      : name_(std::move(name)), reasons_(std::move(reasons)) {}
  [[nodiscard]] std::string_view name() const override { return name_; }
  [[nodiscard]] Status filter(const ClusterState& cluster, const TaskContext&, NodeId node) const override {
    for (const auto& [n, r] : reasons_) {
      if (cluster.spec(node).name == n) return Status::unschedulable(name_, r);
    }
    return Status::success();
  }

 private:
  std::string name_;
  std::vector<std::pair<std::string, std::string>> reasons_;
};

class NamedPreFilter final : public PreFilterPlugin {
 public:
  explicit NamedPreFilter(std::string reason) : reason_(std::move(reason)) {}
  [[nodiscard]] std::string_view name() const override { return "false-pre-filter"; }
  Status pre_filter(const ClusterState&, TaskContext&) override { return Status::unschedulable(name(), reason_); }

 private:
  std::string reason_;
};

}  // namespace

// ---------------------------------------------------------------- NodeUnschedulable

// kubernetes/kubernetes pkg/scheduler/framework/plugins/nodeunschedulable/node_unschedulable_test.go,
// TestNodeUnschedulable (read at 00a12c787cb55fa704576e899983e62d2a3d2dc6), all three cases. A
// cordoned node is, in gpusched, one with the node controller's node.kubernetes.io/unschedulable
// taint (as the Kubernetes trace reader gives a node with spec.unschedulable).
TEST_CASE("node-unschedulable rejects a cordoned node unless the job tolerates the cordon", "[kube-filters]") {
  const NodeUnschedulablePlugin p;
  const Taint cordon{"node.kubernetes.io/unschedulable", "", TaintEffect::kNoSchedule};
  // "Does not schedule pod to unschedulable node (node.Spec.Unschedulable==true)"
  auto cordoned = tainted({cordon});
  const Status s = filter_node0(p, cordoned, with_tolerations({}));
  CHECK(s.code == StatusCode::kUnschedulableAndUnresolvable);
  CHECK(s.reason == "node(s) were unschedulable");
  // "Schedule pod to normal node"
  auto normal = tainted({});
  CHECK(filter_node0(p, normal, with_tolerations({})).ok());
  // "Schedule pod with toleration to unschedulable node (node.Spec.Unschedulable==true)"
  CHECK(filter_node0(p, cordoned, with_tolerations({{"node.kubernetes.io/unschedulable", "Equal", "", "NoSchedule"}})).ok());
}

// ---------------------------------------------------------------- TaintToleration

// kubernetes/kubernetes pkg/scheduler/framework/plugins/tainttoleration/taint_toleration_test.go,
// TestTaintTolerationFilter (read at 04c0d74f8e8bf18e93a9d8d082b218d3eb4c6395): the current
// message is "node(s) had untolerated taint(s)" (older releases named the taint).
TEST_CASE("taint-toleration rejects an untolerated NoSchedule taint with kube-scheduler's words", "[kube-filters]") {
  const TaintTolerationPlugin p;
  auto user1 = tainted({{"dedicated", "user1", TaintEffect::kNoSchedule}});
  // "A pod having no tolerations can't be scheduled onto a node with nonempty taints"
  const Status none = filter_node0(p, user1, with_tolerations({}));
  CHECK(none.code == StatusCode::kUnschedulableAndUnresolvable);
  CHECK(none.reason == "node(s) had untolerated taint(s)");
  // "A pod which can be scheduled on a dedicated node assigned to user1 with effect NoSchedule"
  CHECK(filter_node0(p, user1, with_tolerations({{"dedicated", "Equal", "user1", "NoSchedule"}})).ok());
  // "A pod which can't be scheduled on a dedicated node assigned to user2 with effect NoSchedule"
  CHECK(filter_node0(p, user1, with_tolerations({{"dedicated", "Equal", "user2", "NoSchedule"}})).reason ==
        "node(s) had untolerated taint(s)");
  // "A pod has a toleration that keys and values match the taint on the node, but (non-empty)
  // effect doesn't match, can't be scheduled onto the node"
  auto foo = tainted({{"foo", "bar", TaintEffect::kNoSchedule}});
  CHECK_FALSE(filter_node0(p, foo, with_tolerations({{"foo", "Equal", "bar", "PreferNoSchedule"}})).ok());
  // "The pod has no toleration, but the effect of taint on node is PreferNoSchedule. Pod can be
  // scheduled onto the node"
  auto prefer = tainted({{"dedicated", "user1", TaintEffect::kPreferNoSchedule}});
  CHECK(filter_node0(p, prefer, with_tolerations({})).ok());
}

// ---------------------------------------------------------------- NodeResourcesFit

// kubernetes/kubernetes pkg/scheduler/framework/plugins/noderesources/fit_test.go, TestEnoughRequests
// (read at 24fbb13eafec665e6f4b64961930774babd8b6d1): a node of 10 millicores and 20 units of memory
// (MiB here), the pod's request against what its pods already use. Every insufficient resource is a
// reason of its own in the FitError.
TEST_CASE("node-resources-fit names every insufficient resource in kube-scheduler's diagnosis", "[kube-filters]") {
  ResourceTable res;
  (void)res.intern("example.com/aaa");   // before any cluster copies the table
  auto run = [&](std::int64_t used_cpu, std::int64_t used_mem, const t::Items& req, std::int64_t ext_capacity = 0) {
    auto c = t::cluster({small_node("node", 10, 20, res, ext_capacity)}, res);
    c.allocate(t::request({{"cpu", std::to_string(used_cpu) + "m"}, {"memory", std::to_string(used_mem) + "Mi"}}, res),
               TaskPlacement{NodeId{0}, {}});
    auto s = kube({PluginRef{"node-resources-fit"}});
    std::vector<TaskPlacement> out;
    const auto j = t::job("pod", 0, 10, t::request(req, res));
    const bool ok = s.schedule(c, j, JobId{0}, out).ok();
    return ok ? std::string("fits") : s.last_diagnosis();
  };
  // "too many resources fails": pod 1m / 1, node used 10m / 20.
  CHECK(run(10, 20, {{"cpu", "1m"}, {"memory", "1Mi"}}) == "0/1 nodes are available: 1 Insufficient cpu, 1 Insufficient memory.");
  // "one resource memory fits": pod 2m / 1, used 9m / 5.
  CHECK(run(9, 5, {{"cpu", "2m"}, {"memory", "1Mi"}}) == "0/1 nodes are available: 1 Insufficient cpu.");
  // "one resource cpu fits": pod 1m / 2, used 5m / 19.
  CHECK(run(5, 19, {{"cpu", "1m"}, {"memory", "2Mi"}}) == "0/1 nodes are available: 1 Insufficient memory.");
  // "equal edge case": pod 5m / 1, used 5m / 19.
  CHECK(run(5, 19, {{"cpu", "5m"}, {"memory", "1Mi"}}) == "fits");
  // "extended resource capacity enforced": pod example.com/aaa 10 on a node with 5.
  CHECK(run(0, 0, {{"cpu", "1m"}, {"memory", "1Mi"}, {"example.com/aaa", "10"}}, 5) ==
        "0/1 nodes are available: 1 Insufficient example.com/aaa.");
}

// ---------------------------------------------------------------- FitError

// kubernetes/kubernetes pkg/scheduler/framework/types_test.go, TestFitError_Error (read at
// 98be7dfc5da8533f62c063206c5751e884d6294d), through our runner with filter plugins that reject as
// the case's FalseFilter plugins do.
TEST_CASE("the kube-scheduler diagnosis counts reasons and sorts the items as text", "[kube-filters]") {
  auto c = t::cluster({t::node("node1", 8, 32), t::node("node2", 8, 32), t::node("node3", 8, 32)});
  const auto j = t::job("pod", 0, 10, t::request({{"cpu", "1"}}));
  SECTION("nodes failed one Filter plugin with an empty PostFilterMsg") {
    Registry reg = Registry::with_builtins();
    reg.add({"false-filter-1", "test", {"filter"}, {}, [](const PluginContext&) {
               return std::make_unique<NamedFilter>("false-filter-1",
                                                    std::vector<std::pair<std::string, std::string>>{
                                                        {"node1", "Node(s) failed Filter plugin FalseFilter-1"},
                                                        {"node2", "Node(s) failed Filter plugin FalseFilter-1"},
                                                        {"node3", "Node(s) failed Filter plugin FalseFilter-1"}});
             }});
    auto s = kube({PluginRef{"node-resources-fit"}, PluginRef{"false-filter-1"}}, reg);
    CHECK(why(s, c, j) == "0/3 nodes are available: 3 Node(s) failed Filter plugin FalseFilter-1.");
  }
  SECTION("nodes failed two Filter plugins with an empty PostFilterMsg") {
    Registry reg = Registry::with_builtins();
    reg.add({"false-filter-1", "test", {"filter"}, {}, [](const PluginContext&) {
               return std::make_unique<NamedFilter>("false-filter-1",
                                                    std::vector<std::pair<std::string, std::string>>{
                                                        {"node1", "Node(s) failed Filter plugin FalseFilter-1"},
                                                        {"node2", "Node(s) failed Filter plugin FalseFilter-1"}});
             }});
    reg.add({"false-filter-2", "test", {"filter"}, {}, [](const PluginContext&) {
               return std::make_unique<NamedFilter>("false-filter-2",
                                                    std::vector<std::pair<std::string, std::string>>{
                                                        {"node3", "Node(s) failed Filter plugin FalseFilter-2"}});
             }});
    auto s = kube({PluginRef{"node-resources-fit"}, PluginRef{"false-filter-1"}, PluginRef{"false-filter-2"}}, reg);
    // "1 ..." sorts before "2 ...": the items are sorted as text, not by count.
    CHECK(why(s, c, j) ==
          "0/3 nodes are available: 1 Node(s) failed Filter plugin FalseFilter-2, 2 Node(s) failed Filter plugin FalseFilter-1.");
  }
  SECTION("nodes failed Prefilter plugin") {
    Registry reg = Registry::with_builtins();
    reg.add({"false-pre-filter", "test", {"pre_filter"}, {}, [](const PluginContext&) {
               return std::make_unique<NamedPreFilter>("Node(s) failed PreFilter plugin FalsePreFilter");
             }});
    Profile p;
    p.diagnosis = Diagnosis::kKubeScheduler;
    p.pre_filter = {PluginRef{"false-pre-filter"}};
    p.filter = {PluginRef{"node-resources-fit"}};
    Scheduler s(p, reg, 1);
    CHECK(why(s, c, j) == "0/3 nodes are available: Node(s) failed PreFilter plugin FalsePreFilter.");
  }
}

// ---------------------------------------------------------------- the presets

TEST_CASE("kube-default reports a cordoned or tainted node as such, not as short of resources", "[kube-filters]") {
  // Every node lacks the GPU; one is cordoned, one tainted, one only full. kube-scheduler runs
  // NodeUnschedulable and TaintToleration before NodeResourcesFit.
  auto cordoned = t::node("cordoned", 8, 32, 1), tainted_node = t::node("tainted", 8, 32, 1), full = t::node("full", 2, 32, 1);
  cordoned.taints.push_back({"node.kubernetes.io/unschedulable", "", TaintEffect::kNoSchedule});
  tainted_node.taints.push_back({"dedicated", "training", TaintEffect::kNoSchedule});
  auto c = t::cluster({cordoned, tainted_node, full});
  const auto j = t::job("big", 0, 10, t::request({{"cpu", "4"}, {"nvidia.com/gpu", "2"}}));
  Scheduler k(builtin_profile("kube-default"), Registry::builtins(), 1);
  // "full" lacks both cpu and GPUs: both are counted. A request above every node's GPUs is still
  // refused before preemption is tried (unresolvable), but worded node by node.
  std::vector<TaskPlacement> out;
  const Status st = k.schedule(c, j, JobId{0}, out);
  CHECK(st.code == StatusCode::kUnschedulableAndUnresolvable);
  CHECK(k.last_diagnosis() == "0/3 nodes are available: 1 Insufficient cpu, 1 Insufficient nvidia.com/gpu, "
                              "1 node(s) had untolerated taint(s), 1 node(s) were unschedulable.");
  // A gpusched preset keeps its own order and wording: resources first, plugins named.
  Scheduler b(builtin_profile("binpack"), Registry::builtins(), 1);
  CHECK(why(b, c, j) == "0/3 nodes are available: 3 nvidia.com/gpu exceeds every node (node-resources-fit)");
}

TEST_CASE("The Kubernetes presets run kube-scheduler's filters in its order", "[kube-filters]") {
  for (const char* name : {"default", "kube-default", "most-allocated", "kueue-cohorts"}) {
    INFO(name);
    const auto p = builtin_profile(name);
    CHECK(p.diagnosis == Diagnosis::kKubeScheduler);
    REQUIRE(p.filter.size() >= 4);
    CHECK(p.filter[0].name == "node-unschedulable");
    CHECK(p.filter[1].name == "taint-toleration");
    CHECK(p.filter[2].name == "node-affinity");
  }
  for (const char* name : {"first-fit", "binpack", "fgd", "volcano-gang-drf", "slurm-backfill"}) {
    INFO(name);
    CHECK(builtin_profile(name).diagnosis == Diagnosis::kGpusched);
  }
  // The profile fields read and write as JSON; bad values are refused where they are written.
  const auto p = Profile::from_json({{"extends", "first-fit"}, {"diagnosis", "kube-scheduler"}, {"percentage_of_nodes_to_score", 0}}, "p.json");
  CHECK(p.diagnosis == Diagnosis::kKubeScheduler);
  CHECK(p.percentage_of_nodes_to_score == 0);
  CHECK(p.to_json()["diagnosis"] == "kube-scheduler");
  CHECK(p.to_json()["percentage_of_nodes_to_score"] == 0);
  CHECK_FALSE(builtin_profile("first-fit").to_json().contains("percentage_of_nodes_to_score"));
  CHECK_THAT(t::error_message<ProfileError>([] { (void)Profile::from_json({{"diagnosis", "slurm"}}, "p.json"); }),
             Catch::Contains("p.json") && Catch::Contains("diagnosis"));
  CHECK_THAT(t::error_message<ProfileError>([] { (void)Profile::from_json({{"percentage_of_nodes_to_score", 101}}, "p.json"); }),
             Catch::Contains("percentage_of_nodes_to_score"));
}

// ---------------------------------------------------------------- percentageOfNodesToScore

// kubernetes/kubernetes pkg/scheduler/schedule_one_test.go, TestNumFeasibleNodesToFind (read at
// cb0f09275e56634451c727b187a2e24eedf0291e): how many feasible nodes the search looks for. Seen
// through where the search stops: identical nodes, least-allocated scoring, so each job takes the
// first node searched, and the next search starts after the nodes the last one processed.
TEST_CASE("percentage_of_nodes_to_score stops the search as kube-scheduler's numFeasibleNodesToFind does", "[kube-filters]") {
  auto second_node = [](std::uint32_t nodes, int percentage) {
    std::vector<NodeSpec> specs;
    for (std::uint32_t i = 0; i < nodes; ++i) specs.push_back(t::node(t::numbered("n", i), 4, 8));
    auto c = t::cluster(std::move(specs));
    Profile p;
    p.score = {PluginRef{"least-allocated"}};
    p.percentage_of_nodes_to_score = percentage;
    Scheduler s(p, Registry::builtins(), 1);
    const auto j = t::job("pod", 0, 10, t::request({{"cpu", "1"}}));
    std::vector<TaskPlacement> out;
    REQUIRE(s.schedule(c, j, JobId{0}, out).ok());
    CHECK(out[0].node.value == 0);
    c.allocate(j.request, out[0]);
    REQUIRE(s.schedule(c, j, JobId{1}, out).ok());
    return out[0].node.value;
  };
  // "not set percentageOfNodesToScore and nodes number not more than 50": 10 nodes, all searched.
  CHECK(second_node(10, 0) == 1);
  // "set percentageOfNodesToScore and nodes number not more than 50": 40 % of 10 -> all 10.
  CHECK(second_node(10, 40) == 1);
  // "not set percentageOfNodesToScore and nodes number more than 50": 1000 nodes -> 420.
  CHECK(second_node(1000, 0) == 420);
  // "set percentageOfNodesToScore and nodes number more than 50": 40 % of 1000 -> 400.
  CHECK(second_node(1000, 40) == 400);
  // "not set percentageOfNodesToScore and nodes number more than 50*125": 6000 nodes -> 5 % = 300.
  CHECK(second_node(6000, 0) == 300);
  // Absent (gpusched): every node is scored, so the emptiest node 1 wins again.
  CHECK(second_node(1000, -1) == 1);
}

// ---------------------------------------------------------------- warnings

TEST_CASE("A preset missing its essential arguments warns, a configured one does not", "[kube-filters]") {
  const std::string no_queues = "capacity-queues: no ClusterQueue configured: every job is admitted without quota";
  {
    Scheduler s(builtin_profile("kueue-cohorts"), Registry::builtins(), 1);
    const auto w = s.warnings();
    REQUIRE(w.size() == 1);   // once, though the plugin sits at three hooks
    CHECK_THAT(w[0], Catch::StartsWith(no_queues));
  }
  {
    const auto p = Profile::from_json(nlohmann::json::parse(R"({"extends": "kueue-cohorts", "filter": [{"name": "capacity-queues",
      "args": {"queues": {"team": {"resource_groups": [{"flavors": [{"name": "default", "resources": {"nvidia.com/gpu": 8}}]}]}},
               "default_queue": "team"}}]})"),
                                      "kueue.json");
    Scheduler s(p, Registry::builtins(), 1);
    CHECK(s.warnings().empty());
  }
  {
    Profile p;
    p.pre_filter = {PluginRef{"resource-quota"}};
    Scheduler s(p, Registry::builtins(), 1);
    CHECK(s.warnings() == std::vector<std::string>{"resource-quota: no quotas configured: no namespace is limited"});
  }
  CHECK(Scheduler(builtin_profile("kube-default"), Registry::builtins(), 1).warnings().empty());
}

TEST_CASE("gpusched run prints a configuration warning once and lists it in summary.json", "[kube-filters]") {
  t::TempDir dir;
  const auto small = t::example("small.json").string();
  const std::string warning = "capacity-queues: no ClusterQueue configured: every job is admitted without quota";
  const auto bare = t::cli({"run", small, "--out", (dir.path() / "bare").string(), "--profile", "kueue-cohorts", "--progress", "never", "--quiet"});
  INFO(bare.err);
  REQUIRE(bare.rc == 0);
  // One line on stderr (even with --quiet), the same text in summary.json.
  CHECK_THAT(bare.err, Catch::StartsWith("gpusched: warning: " + warning));
  CHECK(std::count(bare.err.begin(), bare.err.end(), '\n') == 1);
  const auto summary = nlohmann::json::parse(t::read_file(dir.path() / "bare" / "summary.json"));
  REQUIRE(summary["warnings"].size() == 1);
  CHECK_THAT(summary["warnings"][0].get<std::string>(), Catch::StartsWith(warning));
  CHECK(bare.err == "gpusched: warning: " + summary["warnings"][0].get<std::string>() + "\n");

  // A configured Kueue profile (from a file) runs without a word.
  const auto profile = dir.write("kueue.json", R"({"name": "kueue", "extends": "kueue-cohorts", "filter": [{"name": "capacity-queues",
    "args": {"queues": {"team": {"resource_groups": [{"flavors": [{"name": "default", "resources": {"nvidia.com/gpu": 16}}]}]}},
             "default_queue": "team"}}]})");
  const auto configured = t::cli({"run", small, "--out", (dir.path() / "conf").string(), "--profile", profile.string(), "--progress", "never", "--quiet"});
  INFO(configured.err);
  REQUIRE(configured.rc == 0);
  CHECK(configured.err.empty());
  CHECK(nlohmann::json::parse(t::read_file(dir.path() / "conf" / "summary.json"))["warnings"] == nlohmann::json::array());
}

// ---------------------------------------------------------------- RequestedToCapacityRatio

namespace {
/// The plugin built from the registry with `args` (as a profile would build it).
std::unique_ptr<Plugin> rtcr(const nlohmann::json& args) {
  const auto* info = Registry::builtins().find("requested-to-capacity-ratio");
  REQUIRE(info != nullptr);
  const auto resolved = resolve_args(*info, args, Location{"test", 0, "score/0"});
  const RngStreams rng(1);
  return info->factory(PluginContext{resolved, rng, info->name});
}
/// Score of `j` on every node of `c`, in node order.
std::vector<double> scores(Plugin& p, const ClusterState& c, const JobSpec& j) {
  auto& s = dynamic_cast<ScorePlugin&>(p);
  std::vector<double> out;
  for (std::uint32_t n = 0; n < c.node_count(); ++n) {
    CycleState state;
    TaskContext ctx{j, JobId{0}, 0, state};
    out.push_back(s.score(c, ctx, NodeId{n}));
  }
  return out;
}
}  // namespace

// kubernetes/kubernetes pkg/scheduler/framework/plugins/noderesources/requested_to_capacity_ratio_test.go,
// TestBrokenLinearFunction (read at 00b9ead02c37921011ebe5293558cea5277cd295): its three shapes.
TEST_CASE("requested-to-capacity-ratio interpolates its shape as kube-scheduler's broken-linear function", "[kube-filters]") {
  using P = RequestedToCapacityRatio::Point;
  auto f = [](std::vector<P> pts, std::int64_t p) { return RequestedToCapacityRatio::broken_linear(pts, p); };
  const std::vector<P> a{{10, 1}, {90, 9}};
  for (auto [p, want] : std::vector<std::pair<std::int64_t, std::int64_t>>{
           {-10, 1}, {0, 1}, {9, 1}, {10, 1}, {15, 1}, {19, 1}, {20, 2}, {89, 8}, {90, 9}, {99, 9}, {100, 9}, {110, 9}}) {
    CHECK(f(a, p) == want);
  }
  const std::vector<P> b{{0, 2}, {40, 10}, {100, 0}};
  for (auto [p, want] : std::vector<std::pair<std::int64_t, std::int64_t>>{
           {-10, 2}, {0, 2}, {20, 6}, {30, 8}, {40, 10}, {70, 5}, {100, 0}, {110, 0}}) {
    CHECK(f(b, p) == want);
  }
  const std::vector<P> c{{0, 2}, {40, 2}, {100, 2}};
  for (std::int64_t p : {-10, 0, 20, 30, 40, 70, 100, 110}) CHECK(f(c, p) == 2);
}

// Same file, TestRequestedToCapacityRatioScoringStrategy: shape {0 -> 10, 100 -> 0}, cpu and memory
// weight 1; the peer's nodes of 4000/6000 cpu and 10000 memory as 4/6 cores and 10000 MiB.
TEST_CASE("requested-to-capacity-ratio scores cpu and memory as kube-scheduler's strategy", "[kube-filters]") {
  const auto plugin = rtcr({{"shape", {{{"utilization", 0}, {"score", 10}}, {{"utilization", 100}, {"score", 0}}}}});
  ResourceTable res;
  auto node = [&](const char* name, std::int64_t cores) { return small_node(name, cores * 1000, 10000, res); };
  // The peer's pod without requests has no containers, so no non-zero defaults: non_zero_defaults false.
  const auto as_written = rtcr({{"shape", {{{"utilization", 0}, {"score", 10}}, {{"utilization", 100}, {"score", 0}}}},
                                {"non_zero_defaults", false}});
  SECTION("nothing scheduled, nothing requested (default - least requested nodes have priority)") {
    auto c = t::cluster({node("node1", 4), node("node2", 4)});
    CHECK(scores(*as_written, c, t::job("pod", 0, 10, t::request({}))) == std::vector<double>{100, 100});
    // A job asking for nothing counts 100m and 200 MiB by default: 2 % of 4 cores and of 10000 MiB -> 98.
    CHECK(scores(*plugin, c, t::job("pod", 0, 10, t::request({}))) == std::vector<double>{98, 98});
  }
  SECTION("nothing scheduled, resources requested, differently sized nodes (default - least requested nodes have priority)") {
    auto c = t::cluster({node("node1", 4), node("node2", 6)});
    // node1: cpu 75 % -> 25, memory 50 % -> 50: round(37.5) = 38; node2: 50 and 50.
    CHECK(scores(*plugin, c, t::job("pod", 0, 10, t::request({{"cpu", "3"}, {"memory", "5000Mi"}}))) == std::vector<double>{38, 50});
  }
  SECTION("no resources requested, pods scheduled with resources (default - least requested nodes have priority)") {
    auto c = t::cluster({node("node1", 4), node("node2", 6)});
    const auto used = t::request({{"cpu", "3"}, {"memory", "5000Mi"}});
    c.allocate(used, TaskPlacement{NodeId{0}, {}});
    c.allocate(used, TaskPlacement{NodeId{1}, {}});
    CHECK(scores(*as_written, c, t::job("pod", 0, 10, t::request({}))) == std::vector<double>{38, 50});
  }
}

// Same file, TestResourceBinPackingSingleExtended and TestResourceBinPackingMultipleExtended:
// shape {0 -> 0, 100 -> 1}, extended resources intel.com/foo (and intel.com/bar).
TEST_CASE("requested-to-capacity-ratio packs extended resources with weights as kube-scheduler", "[kube-filters]") {
  const auto shape = nlohmann::json::array({{{"utilization", 0}, {"score", 0}}, {{"utilization", 100}, {"score", 1}}});
  ResourceTable res;
  const auto foo = res.intern("intel.com/foo"), bar = res.intern("intel.com/bar");
  auto node = [&](const char* name, std::int64_t foo_n, std::int64_t bar_n = 0) {
    auto n = small_node(name, 4000, 10000, res);
    n.extended = {{foo, foo_n}};
    if (bar_n > 0) n.extended.emplace_back(bar, bar_n);
    return n;
  };
  SECTION("single extended resource") {
    const auto p = rtcr({{"shape", shape}, {"resources", {{{"name", "intel.com/foo"}, {"weight", 1}}}}});
    auto c = t::cluster({node("node1", 8), node("node2", 4)}, res);
    // "nothing scheduled, nothing requested": both 0.
    CHECK(scores(*p, c, t::job("pod", 0, 10, t::request({}, res))) == std::vector<double>{0, 0});
    // "resources requested, pods scheduled with less resources": 2/8 -> 2, 2/4 -> 5.
    const auto two = t::request({{"intel.com/foo", "2"}}, res);
    CHECK(scores(*p, c, t::job("pod", 0, 10, two)) == std::vector<double>{2, 5});
    // "resources requested, pods scheduled with more resources": 4/8 -> 5, 4/4 -> 10.
    CHECK(scores(*p, c, t::job("pod", 0, 10, t::request({{"intel.com/foo", "4"}}, res))) == std::vector<double>{5, 10});
    // "resources requested, pods scheduled with resources, on node with existing pod running": node2
    // already runs 2 -> (2 + 2)/4 -> 10.
    c.allocate(two, TaskPlacement{NodeId{1}, {}});
    CHECK(scores(*p, c, t::job("pod", 0, 10, two)) == std::vector<double>{2, 10});
  }
  SECTION("multiple extended resources, weights 3 and 5") {
    const auto p = rtcr({{"shape", shape},
                         {"resources", {{{"name", "intel.com/foo"}, {"weight", 3}}, {{"name", "intel.com/bar"}, {"weight", 5}}}}});
    auto c = t::cluster({node("node1", 8, 4), node("node2", 4, 8)}, res);
    // "resources requested, pods scheduled with less resources": node1 round((2*3 + 5*5)/8) = 4,
    // node2 round((5*3 + 2*5)/8) = 3.
    CHECK(scores(*p, c, t::job("pod", 0, 10, t::request({{"intel.com/foo", "2"}, {"intel.com/bar", "2"}}, res))) ==
          std::vector<double>{4, 3});
  }
  SECTION("an extended resource the job does not request is left out (resource_allocation.go)") {
    const auto p = rtcr({{"shape", shape},
                         {"resources", {{{"name", "cpu"}, {"weight", 1}}, {{"name", "intel.com/foo"}, {"weight", 1}}}}});
    auto c = t::cluster({node("node1", 8)}, res);
    c.allocate(t::request({{"intel.com/foo", "8"}}, res), TaskPlacement{NodeId{0}, {}});
    // cpu 1 of 4 cores: 25 % -> 2; intel.com/foo (full) is not asked for: 2, not round((2 + 10) / 2).
    CHECK(scores(*p, c, t::job("pod", 0, 10, t::request({{"cpu", "1"}}, res))) == std::vector<double>{2});
  }
  SECTION("bad arguments are refused as kube-scheduler's validation refuses them") {
    CHECK_THROWS_AS(rtcr(nlohmann::json::object()), ProfileError);   // no shape
    CHECK_THROWS_AS(rtcr({{"shape", {{{"utilization", 50}, {"score", 1}}, {{"utilization", 10}, {"score", 2}}}}}), ProfileError);
    CHECK_THROWS_AS(rtcr({{"shape", {{{"utilization", 0}, {"score", 11}}}}}), ProfileError);
    CHECK_THROWS_AS(rtcr({{"shape", shape}, {"resources", {{{"name", "cpu"}, {"weight", 0}}}}}), ProfileError);
  }
}

// ---------------------------------------------------------------- DefaultPreemption's part

// kubernetes/kubernetes pkg/scheduler/framework/preemption/preemption.go, Evaluator.Preempt (read at
// 00e6d95193934fed1b980e82fb6ec563e9dd1693): after filtering fails, kube-scheduler's diagnosis
// ends with DefaultPreemption's FitError over all nodes; PodEligibleToPreemptOthers refuses a pod
// with preemptionPolicy Never first.
TEST_CASE("kube-default ends a pending job's reason with DefaultPreemption's part", "[kube-filters]") {
  const auto doc = t::scenario_doc(
      "preemption-words", "nodes",
      R"({"name": "a", "cpu": "8", "memory": "32Gi", "gpus": 1, "gpu_model": "T4",
          "taints": [{"key": "dedicated", "value": "training", "effect": "NoSchedule"}]},
         {"name": "b", "cpu": "8", "memory": "32Gi", "gpus": 1, "gpu_model": "T4"})",
      R"({"id": "high", "submit_time": 0, "priority": 10, "requests": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": 1}},
         {"id": "low", "submit_time": 1, "priority": 5, "requests": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": 1}},
         {"id": "never", "submit_time": 2, "priority": 20, "preemption_policy": "Never",
          "requests": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": 1}})",
      R"("profile": "kube-default", "horizon_s": 100,)");
  const auto sc = scenario::parse_scenario(doc, "preemption-words.json", t::source_dir());
  const auto r = scenario::run(sc);
  std::map<std::string, std::string> reason;
  for (const auto& row : r.jobs()) reason[row.job] = row.reason;
  // "low": node b runs only a higher-priority job (no victims), node a is tainted (unresolvable).
  CHECK(reason["low"] ==
        "0/2 nodes are available: 1 Insufficient nvidia.com/gpu, 1 node(s) had untolerated taint(s). "
        "preemption: 0/2 nodes are available: 1 No preemption victims found for incoming pod, "
        "1 Preemption is not helpful for scheduling.");
  CHECK(reason["never"] ==
        "0/2 nodes are available: 1 Insufficient nvidia.com/gpu, 1 node(s) had untolerated taint(s). "
        "preemption: not eligible due to preemptionPolicy=Never.");
}

// preemption_message reads the resolvable nodes themselves when a job of lower priority than the
// pending one runs (a diagnosis from the node index lists them only then, issue 14). Where it runs
// on a tainted node, preemption cannot help there: "No preemption victims" for the others. Where
// it runs on a node the pending job lacks room on, the peer would dry-run evicting it (not
// modelled: no preemption part). The index and the exact scan give the same words.
TEST_CASE("kube-default's DefaultPreemption part reads the nodes when a lower-priority job runs", "[kube-filters]") {
  auto run = [](const char* low_pool, bool exact) {
    const auto doc = t::scenario_doc(
        "preemption-listed", "nodes",
        R"({"name": "a", "cpu": "8", "memory": "32Gi", "gpus": 2, "gpu_model": "T4", "labels": {"pool": "a"},
            "taints": [{"key": "dedicated", "value": "training", "effect": "NoSchedule"}]},
           {"name": "b", "cpu": "8", "memory": "32Gi", "gpus": 2, "gpu_model": "T4", "labels": {"pool": "b"}},
           {"name": "c", "cpu": "8", "memory": "32Gi", "gpus": 4, "gpu_model": "T4", "labels": {"pool": "c"}})",
        std::string(R"({"id": "low", "submit_time": 0, "priority": 1, "tolerations": [{"key": "dedicated", "operator": "Exists"}],
            "node_selector": {"pool": ")") + low_pool + R"("}, "requests": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": 1}},
           {"id": "high", "submit_time": 1, "priority": 10, "node_selector": {"pool": "c"},
            "requests": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": 4}},
           {"id": "mid", "submit_time": 2, "priority": 5, "requests": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": 3}})",
        R"("profile": "kube-default", "horizon_s": 100,)");
    auto sc = scenario::parse_scenario(doc, "preemption-listed.json", t::source_dir());
    sc.exact_scan = exact;
    std::map<std::string, std::string> reason;
    for (const auto& row : scenario::run(sc).jobs()) {
      REQUIRE(row.start_s.has_value() == (row.job != "mid"));
      reason[row.job] = row.reason;
    }
    return reason["mid"];
  };
  for (const bool exact : {false, true}) {
    INFO("exact scan: " << exact);
    CHECK(run("a", exact) ==
          "0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 Insufficient nvidia.com/gpu. "
          "preemption: 0/3 nodes are available: 1 Preemption is not helpful for scheduling, "
          "2 No preemption victims found for incoming pod.");
    CHECK(run("b", exact) == "0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 Insufficient nvidia.com/gpu.");
  }
}

// ---------------------------------------------------------------- NodeResourcesFit scores [kube-scores]

namespace {
/// A score plugin built from the registry with `args` (as a profile would build it).
std::unique_ptr<Plugin> built(const char* name, const nlohmann::json& args) {
  const auto* info = Registry::builtins().find(name);
  REQUIRE(info != nullptr);
  const auto resolved = resolve_args(*info, args, Location{"test", 0, "score/0"});
  const RngStreams rng(1);
  return info->factory(PluginContext{resolved, rng, info->name});
}
/// A node with `cpu_milli`, `memory_mib` and `gpus` whole A100s.
NodeSpec gpu_node(const char* name, std::int64_t cpu_milli, std::int64_t memory_mib, int gpus) {
  auto n = t::node(name, 1, 1, gpus);
  n.cpu_milli = cpu_milli;
  n.memory_mib = memory_mib;
  return n;
}
TaskRequest milli_request(std::int64_t cpu_milli, std::int64_t memory_mib, int gpus = 0) {
  t::Items items;
  if (cpu_milli > 0) items.push_back({"cpu", std::to_string(cpu_milli) + "m"});
  if (memory_mib > 0) items.push_back({"memory", std::to_string(memory_mib) + "Mi"});
  if (gpus > 0) items.push_back({"nvidia.com/gpu", std::to_string(gpus)});
  return t::request(items);
}
nlohmann::json resources(std::vector<std::pair<const char*, int>> rs) {
  auto out = nlohmann::json::array();
  for (const auto& [n, w] : rs) out.push_back({{"name", n}, {"weight", w}});
  return out;
}
}  // namespace

// kubernetes/kubernetes pkg/scheduler/framework/plugins/noderesources/least_allocated_test.go,
// TestLeastAllocatedScoringStrategy (read at 008b3652959ca58af8be3fb5b6ecfe9ae7638282). The peer's
// cpu "4000" / memory "10000" become 4000 millicores / 10000 MiB (only ratios enter the scores
// when every pod has requests); the peer's extendedRes is nvidia.com/gpu.
TEST_CASE("least-allocated scores as kube-scheduler's LeastAllocated: integers, cpu and memory by default", "[kube-scores]") {
  const auto plugin = built("least-allocated", nlohmann::json::object());
  SECTION("nothing scheduled, resources requested, differently sized nodes: 37, 50") {
    auto c = t::cluster({gpu_node("node1", 4000, 10000, 0), gpu_node("node2", 6000, 10000, 0)});
    CHECK(scores(*plugin, c, t::job("pod", 0, 10, milli_request(3000, 5000))) == std::vector<double>{37, 50});
  }
  SECTION("resources requested, pods scheduled with resources: 57, 45") {
    auto c = t::cluster({gpu_node("node1", 10000, 20000, 0), gpu_node("node2", 10000, 20000, 0)});
    // The peer's existing pod on node1 writes memory "0": non_zero_defaults false counts it so.
    c.allocate(milli_request(3000, 0), TaskPlacement{NodeId{0}, {}});
    c.allocate(milli_request(3000, 5000), TaskPlacement{NodeId{1}, {}});
    const auto as_written = built("least-allocated", {{"non_zero_defaults", false}});
    CHECK(scores(*as_written, c, t::job("pod", 0, 10, milli_request(3000, 5000))) == std::vector<double>{57, 45});
  }
  SECTION("nothing scheduled, resources requested with different weight on CPU and memory: 41, 50") {
    auto c = t::cluster({gpu_node("node1", 4000, 10000, 0), gpu_node("node2", 6000, 10000, 0)});
    const auto weighted = built("least-allocated", {{"resources", resources({{"memory", 2}, {"cpu", 1}})}});
    CHECK(scores(*weighted, c, t::job("pod", 0, 10, milli_request(3000, 5000))) == std::vector<double>{41, 50});
  }
  SECTION("bypass extended resource if the pod does not request: 50, 50; honor it if the pod requests: 50, 60") {
    const auto with_gpus = built("least-allocated", {{"resources", resources({{"cpu", 1}, {"memory", 1}, {"nvidia.com/gpu", 1}})}});
    auto c = t::cluster({gpu_node("node1", 6000, 10000, 0), gpu_node("node2", 6000, 10000, 4)});
    CHECK(scores(*with_gpus, c, t::job("pod", 0, 10, milli_request(3000, 5000))) == std::vector<double>{50, 50});
    auto d = t::cluster({gpu_node("node1", 6000, 10000, 4), gpu_node("node2", 6000, 10000, 10)});
    CHECK(scores(*with_gpus, d, t::job("pod", 0, 10, milli_request(3000, 5000, 2))) == std::vector<double>{50, 60});
  }
  SECTION("if the node doesn't have a resource (extended weight 2): 55, 55") {
    const auto p = built("least-allocated", {{"resources", resources({{"nvidia.com/gpu", 2}, {"cpu", 1}, {"memory", 1}})}});
    auto c = t::cluster({gpu_node("node1", 6000, 10000, 0), gpu_node("node2", 6000, 10000, 4)});
    CHECK(scores(*p, c, t::job("pod", 0, 10, milli_request(3000, 4000))) == std::vector<double>{55, 55});
  }
  SECTION("resource with negative weight, zero weight, weight larger than MaxNodeScore: refused") {
    for (int w : {-1, 0, 101}) {
      try {
        (void)built("least-allocated", {{"resources", resources({{"memory", 1}, {"cpu", w}})}});
        FAIL("weight " << w << " accepted");
      } catch (const ProfileError& e) {
        CHECK(e.where().field == "least-allocated/args/resources/1/weight");
      }
    }
  }
}

// kubernetes/kubernetes .../noderesources/most_allocated_test.go, TestMostAllocatedScoringStrategy
// (the stored copy read for this test; H6 read the same cases at 030880a5dc5449403c6d1f0aa146a7dc21d6c6dc).
TEST_CASE("most-allocated scores as kube-scheduler's MostAllocated, with its non-zero defaults", "[kube-scores]") {
  const auto plugin = built("most-allocated", nlohmann::json::object());
  SECTION("no resources requested, pods scheduled, nonzero request for resource: 80, 30") {
    // Nodes of 250m and 1000Mi; two pods with a container and no requests on node1; the pod
    // has a container and no requests: each counts 100m and 200Mi (non_zero.go).
    auto c = t::cluster({gpu_node("node1", 250, 1000, 0), gpu_node("node2", 250, 1000, 0)});
    c.allocate(TaskRequest{}, TaskPlacement{NodeId{0}, {}});
    c.allocate(TaskRequest{}, TaskPlacement{NodeId{0}, {}});
    c.allocate(TaskRequest{}, TaskPlacement{NodeId{1}, {}});
    c.release(TaskRequest{}, TaskPlacement{NodeId{1}, {}});
    CHECK(c.node(NodeId{0}).tasks_without_cpu == 2);
    CHECK(c.node(NodeId{0}).tasks_without_memory == 2);
    CHECK(c.node(NodeId{1}).tasks_without_cpu == 0);
    const auto pod = t::job("pod", 0, 10, TaskRequest{});
    CHECK(scores(*plugin, c, pod) == std::vector<double>{80, 30});
    // Taken as explicit zeros, nothing is requested anywhere.
    CHECK(scores(*built("most-allocated", {{"non_zero_defaults", false}}), c, pod) == std::vector<double>{0, 0});
  }
  SECTION("resources requested equal node capacity: 95, 75") {
    auto c = t::cluster({gpu_node("node1", 5000, 10000, 0), gpu_node("node2", 10000, 9000, 0)});
    CHECK(scores(*plugin, c, t::job("pod", 0, 10, milli_request(5000, 9000))) == std::vector<double>{95, 75});
  }
  SECTION("nothing scheduled, resources requested, differently sized nodes: 62, 50; memory weighted 2: 58, 50") {
    auto c = t::cluster({gpu_node("node1", 4000, 10000, 0), gpu_node("node2", 6000, 10000, 0)});
    const auto pod = t::job("pod", 0, 10, milli_request(3000, 5000));
    CHECK(scores(*plugin, c, pod) == std::vector<double>{62, 50});
    CHECK(scores(*built("most-allocated", {{"resources", resources({{"memory", 2}, {"cpu", 1}})}}), c, pod) ==
          std::vector<double>{58, 50});
  }
  SECTION("honor extended resource if the pod request: 50, 40; if the node doesn't have a resource: 45, 45") {
    auto c = t::cluster({gpu_node("node1", 6000, 10000, 4), gpu_node("node2", 6000, 10000, 10)});
    const auto with_gpus = built("most-allocated", {{"resources", resources({{"cpu", 1}, {"memory", 1}, {"nvidia.com/gpu", 1}})}});
    CHECK(scores(*with_gpus, c, t::job("pod", 0, 10, milli_request(3000, 5000, 2))) == std::vector<double>{50, 40});
    auto d = t::cluster({gpu_node("node1", 6000, 10000, 0), gpu_node("node2", 6000, 10000, 4)});
    const auto gpu2 = built("most-allocated", {{"resources", resources({{"nvidia.com/gpu", 2}, {"cpu", 1}, {"memory", 1}})}});
    CHECK(scores(*gpu2, d, t::job("pod", 0, 10, milli_request(3000, 4000))) == std::vector<double>{45, 45});
  }
}

// kubernetes/kubernetes pkg/scheduler/framework/plugins/noderesources/balanced_allocation_test.go,
// TestNodeResourcesBalancedAllocation (read at 00fdb4ffc64976886691c99434ab5b01fa54f8fe; the plugin,
// balanced_allocation.go, at 02d7708af661e2fb5a089a04c3944a54d2afcc0e). The peer's cpu "1000m" and
// memory "2000" become millicores and MiB (only fractions enter the score); its pods cpuOnly
// (3000m, memory written "0"), cpuAndMemory (3000m, 5000) and cpuAndMemoryAndGPU (3000m, 5000, 3 GPUs)
// are placed with exactly those requests: the plugin counts requests as written (useRequested).
TEST_CASE("balanced-allocation scores as kube-scheduler's NodeResourcesBalancedAllocation", "[kube-scores]") {
  const auto plugin = built("balanced-allocation", nlohmann::json::object());
  const auto cpu_and_memory = t::job("pod", 0, 10, milli_request(3000, 5000));
  SECTION("nothing scheduled, nothing requested, skip in PreScore: 0 on every node") {
    auto c = t::cluster({gpu_node("node1", 4000, 10000, 0), gpu_node("node2", 4000, 10000, 0)});
    CHECK(scores(*plugin, c, t::job("pod", 0, 10, TaskRequest{})) == std::vector<double>{0, 0});
  }
  SECTION("nothing scheduled, resources requested, differently sized nodes: 87, 100") {
    auto c = t::cluster({gpu_node("node1", 4000, 10000, 0), gpu_node("node2", 6000, 10000, 0)});
    CHECK(scores(*plugin, c, cpu_and_memory) == std::vector<double>{87, 100});
  }
  SECTION("resources requested, pods scheduled with resources: 82, 95; differently sized nodes: 82, 80") {
    auto c = t::cluster({gpu_node("node1", 10000, 20000, 0), gpu_node("node2", 10000, 20000, 0)});
    c.allocate(milli_request(3000, 0), TaskPlacement{NodeId{0}, {}});      // cpuOnly
    c.allocate(milli_request(3000, 5000), TaskPlacement{NodeId{1}, {}});   // cpuAndMemory
    // cpuOnly's memory counts 0, not 200 MiB: with the non-zero default node1 would score 83.
    CHECK(scores(*plugin, c, cpu_and_memory) == std::vector<double>{82, 95});
    auto d = t::cluster({gpu_node("node1", 10000, 20000, 0), gpu_node("node2", 10000, 50000, 0)});
    d.allocate(milli_request(3000, 0), TaskPlacement{NodeId{0}, {}});
    d.allocate(milli_request(3000, 5000), TaskPlacement{NodeId{1}, {}});
    CHECK(scores(*plugin, d, cpu_and_memory) == std::vector<double>{82, 80});
  }
  SECTION("requested resources at node capacity: 50, 75") {
    auto c = t::cluster({gpu_node("node1", 6000, 10000, 0), gpu_node("node2", 6000, 10000, 0)});
    c.allocate(milli_request(3000, 0), TaskPlacement{NodeId{0}, {}});
    c.allocate(milli_request(3000, 5000), TaskPlacement{NodeId{1}, {}});
    CHECK(scores(*plugin, c, t::job("pod", 0, 10, milli_request(3000, 0))) == std::vector<double>{50, 75});
  }
  SECTION("include scalar resource on a node for balanced resource allocation: 70, 65 (three fractions)") {
    const auto with_gpus = built("balanced-allocation", {{"resources", resources({{"cpu", 1}, {"memory", 1}, {"nvidia.com/gpu", 1}})}});
    auto c = t::cluster({gpu_node("node1", 3500, 40000, 8), gpu_node("node2", 3500, 40000, 8)});
    c.allocate(milli_request(3000, 5000, 3), TaskPlacement{NodeId{0}, {{0, 1000, 81920}, {1, 1000, 81920}, {2, 1000, 81920}}});
    c.allocate(milli_request(3000, 5000), TaskPlacement{NodeId{1}, {}});
    // The pod asks for one GPU and nothing else: its cpu counts 0 (no 100m default).
    const auto one_gpu = t::job("pod", 0, 10, milli_request(0, 0, 1));
    CHECK(scores(*with_gpus, c, one_gpu) == std::vector<double>{70, 65});
    // Weights only select the resources.
    const auto heavy = built("balanced-allocation", {{"resources", resources({{"cpu", 1}, {"memory", 7}, {"nvidia.com/gpu", 100}})}});
    CHECK(scores(*heavy, c, one_gpu) == std::vector<double>{70, 65});
    // With the default resources (cpu, memory) the pod asks for none of them: a best-effort pod,
    // which the peer skips (0 everywhere).
    CHECK(scores(*plugin, c, one_gpu) == std::vector<double>{0, 0});
  }
  SECTION("node without the scalar resource should skip the scalar resource: 63, 63") {
    const auto with_gpus = built("balanced-allocation", {{"resources", resources({{"cpu", 1}, {"memory", 1}, {"nvidia.com/gpu", 1}})}});
    auto c = t::cluster({gpu_node("node1", 3500, 40000, 8), gpu_node("node2", 3500, 40000, 0)});
    CHECK(scores(*with_gpus, c, cpu_and_memory) == std::vector<double>{63, 63});
  }
  SECTION("resources checked as the peer's ValidateNodeResourcesBalancedAllocationArgs: weights 1..100, names once") {
    for (int w : {0, 101}) CHECK_THROWS_AS(built("balanced-allocation", {{"resources", resources({{"cpu", w}})}}), ProfileError);
    CHECK_THROWS_AS(built("balanced-allocation", {{"resources", resources({{"cpu", 1}, {"cpu", 2}})}}), ProfileError);
  }
}

TEST_CASE("The default and kube-default presets add balanced-allocation with weight 1, as kube-scheduler's defaults",
          "[kube-scores]") {
  for (const char* name : {"default", "kube-default"}) {
    INFO(name);
    const auto p = builtin_profile(name);
    const auto it = std::find_if(p.score.begin(), p.score.end(), [](const PluginRef& r) { return r.name == "balanced-allocation"; });
    REQUIRE(it != p.score.end());
    CHECK(it->weight == 1.0);
    CHECK(it->args.empty());
  }
  // A 2-cpu/2-GiB pod, empty nodes of 16 cores with 16 GiB (n0) and 128 GiB (n1). LeastAllocated
  // alone prefers n1 (87 vs (87 + 98) / 2 = 92); BalancedAllocation scores n0's even fill 100 and
  // n1's 94, so kube-scheduler's default sum picks n0 (187 vs 186).
  const auto pod = t::job("pod", 0, 10, milli_request(2000, 2048));
  auto chosen = [&](const Profile& p) {
    auto c = t::cluster({t::node("n0", 16, 16), t::node("n1", 16, 128)});
    Scheduler s(p, Registry::builtins(), 1);
    std::vector<TaskPlacement> out;
    REQUIRE(s.schedule(c, pod, JobId{0}, out).ok());
    return out[0].node.value;
  };
  auto c = t::cluster({t::node("n0", 16, 16), t::node("n1", 16, 128)});
  CHECK(scores(*built("least-allocated", nlohmann::json::object()), c, pod) == std::vector<double>{87, 92});
  CHECK(scores(*built("balanced-allocation", nlohmann::json::object()), c, pod) == std::vector<double>{100, 94});
  CHECK(chosen(builtin_profile("default")) == 0);
  CHECK(chosen(builtin_profile("kube-default")) == 0);
  auto spread_only = builtin_profile("default");
  spread_only.score = {PluginRef{"least-allocated"}};
  CHECK(chosen(spread_only) == 1);
}

TEST_CASE("scoring gpusched keeps gpusched's real-valued cpu/memory/GPU mean", "[kube-scores]") {
  auto c = t::cluster({gpu_node("node1", 4000, 10000, 0), gpu_node("node2", 6000, 10000, 4)});
  const auto pod = t::job("pod", 0, 10, milli_request(3000, 5000));
  const auto least = built("least-allocated", {{"scoring", "gpusched"}});
  const auto s = scores(*least, c, pod);
  CHECK(s[0] == Approx(37.5));               // (25 + 50) / 2, not truncated
  CHECK(s[1] == Approx(200.0 / 3.0));        // (50 + 50 + 100 idle GPUs) / 3: the GPU counts unasked
  const auto most = built("most-allocated", {{"scoring", "gpusched"}, {"gpu_weight", 0}});
  CHECK(scores(*most, c, pod)[1] == Approx(50));
  // Each scoring refuses the other's arguments.
  CHECK_THROWS_AS(built("least-allocated", {{"gpu_weight", 1}}), ProfileError);
  CHECK_THROWS_AS(built("least-allocated", {{"scoring", "gpusched"}, {"resources", resources({{"cpu", 1}})}}), ProfileError);
  CHECK_THROWS_AS(built("least-allocated", {{"scoring", "kube"}}), ProfileError);
}

TEST_CASE("Presets that claim kube-scheduler score as it does and break ties at random; gpusched's own keep their rule",
          "[kube-scores]") {
  for (const char* name : {"default", "kube-default", "most-allocated", "kueue-cohorts"}) {
    INFO(name);
    const auto p = builtin_profile(name);
    CHECK(p.tie_break == TieBreak::kRandom);
    for (const auto& ref : p.score) {
      if (ref.name == "least-allocated" || ref.name == "most-allocated") CHECK_FALSE(ref.args.contains("scoring"));
    }
  }
  for (const char* name : {"spread", "volcano-gang-drf"}) {
    INFO(name);
    const auto p = builtin_profile(name);
    CHECK(p.tie_break == TieBreak::kNodeOrder);
    REQUIRE(p.score.size() == 1);
    CHECK(p.score[0].args["scoring"] == "gpusched");
  }
}

// kubernetes/kubernetes pkg/scheduler/schedule_one.go, selectHost (read at
// 0a295a8d, as H4): among the nodes with the top total score one is taken at random (reservoir
// sampling). gpusched draws from the profile's seeded stream: the same seed, the same node.
TEST_CASE("The default preset picks among equally scored nodes at random, reproducibly per seed", "[kube-scores]") {
  const auto job = t::job("pod", 0, 10, milli_request(1000, 1024));
  auto chosen = [&](std::uint64_t seed) {
    auto c = t::cluster({t::node("n0", 8, 32), t::node("n1", 8, 32), t::node("n2", 8, 32), t::node("n3", 8, 32)});
    Scheduler s(builtin_profile("default"), Registry::builtins(), seed);
    std::vector<TaskPlacement> out;
    REQUIRE(s.schedule(c, job, JobId{0}, out).ok());
    return out[0].node.value;
  };
  std::set<std::uint32_t> seen;
  for (std::uint64_t seed = 1; seed <= 16; ++seed) {
    seen.insert(chosen(seed));
    CHECK(chosen(seed) == chosen(seed));
  }
  CHECK(seen.size() > 1);
  // A node whose integer score is higher still wins every time.
  auto c = t::cluster({t::node("n0", 8, 32), t::node("n1", 16, 64)});
  Scheduler s(builtin_profile("default"), Registry::builtins(), 3);
  std::vector<TaskPlacement> out;
  REQUIRE(s.schedule(c, job, JobId{0}, out).ok());
  CHECK(out[0].node.value == 1);
}

TEST_CASE("Scoring resources must name something a node reports", "[kube-scores]") {
  // kube-scheduler would skip these on every node without a word; gpusched refuses them.
  for (const char* plugin : {"least-allocated", "most-allocated", "balanced-allocation"}) {
    INFO(plugin);
    for (const char* bad : {"gpu", "GPU", "cpus", "gpusched.io/gpu-milli", "requests.nvidia.com/gpu",
                            "nvidia.com/mig-1g.10gb", "ephemeral-storage", "hugepages-2Mi", "/gpu", "nvidia.com/"}) {
      INFO(bad);
      CHECK_THROWS_AS(built(plugin, {{"resources", resources({{bad, 1}})}}), ProfileError);
    }
    for (const char* good : {"cpu", "memory", "nvidia.com/gpu", "google.com/tpu", "example.com/fpga"}) {
      INFO(good);
      CHECK_NOTHROW(built(plugin, {{"resources", resources({{good, 1}})}}));
    }
  }
}

// The NVIDIA device plugin advertises a time-sliced GPU as `replicas` nvidia.com/gpu
// (docs/sharing.md); kube-scheduler's allocation scores then count those: allocatable 2 GPUs x 4
// replicas = 8, and a pod's nvidia.com/gpu: 1 is one of them (resource_allocation.go
// calculateResourceAllocatableRequest), not a whole GPU's compute.
TEST_CASE("most-allocated counts nvidia.com/gpu replicas as kube-scheduler sees them", "[kube-scores]") {
  const auto most = built("most-allocated", {{"resources", resources({{"nvidia.com/gpu", 1}})}});
  auto shared = [](const char* name) {
    auto n = gpu_node(name, 4000, 10000, 2);
    for (auto& g : n.gpus) {
      g.partition = GpuPartition::kTimeSlicing;
      g.replicas = 4;
    }
    return n;
  };
  auto c = t::cluster({shared("node1"), shared("node2")});
  const auto one = milli_request(1000, 1000, 1);
  c.allocate(one, TaskPlacement{NodeId{0}, {GpuGrant{0, 250, 0}}});   // one replica held on node1
  const auto pod = t::job("pod", 0, 10, one);
  // (1 held + 1) x 100 / 8 = 25 and 1 x 100 / 8 = 12; counted as compute it would be 62 and 50.
  CHECK(scores(*most, c, pod) == std::vector<double>{25, 12});
  // The earlier one-replica-per-GPU model keeps counting compute.
  DeviceOptions o;
  o.replica_allocation = ReplicaAllocation::kOnePerGpu;
  c.set_device_options(o);
  CHECK(scores(*most, c, pod) == std::vector<double>{62, 50});
}
