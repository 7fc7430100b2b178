// The peers' own configuration objects (scenario `kubernetes_objects`, k8s_objects.hpp): Kueue,
// Volcano, PriorityClass, ResourceQuota and KubeSchedulerConfiguration objects in the shapes the
// peers document (tests/data/k8s/, each file names its source page), translated to gpusched
// args that equal hand-written ones and decide the same in a small run; every unmodelled
// field is an error naming the file, line, document, kind, name and field.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <gpusched/policies/framework/scheduler.hpp>
#include <gpusched/scenario/k8s_objects.hpp>
#include <gpusched/scenario/scenario.hpp>

#include "support/support.hpp"

using namespace gpusched;
using namespace gpusched::scenario;
using nlohmann::json;
namespace t = gpusched::test;

namespace {

std::filesystem::path data(const std::string& name) { return t::source_dir() / "tests" / "data" / "k8s" / name; }

KubernetesTranslation translate_file(const std::string& name) {
  return translate_kubernetes_objects(read_kubernetes_objects(data(name)), GpuCatalog::builtin());
}

KubernetesTranslation translate_text(std::string_view text) {
  return translate_kubernetes_objects(parse_kubernetes_objects(text, "objs.yaml"), GpuCatalog::builtin());
}

Scenario parse(const std::string& text) { return parse_scenario(std::string_view(text), "t.json", t::source_dir()); }

/// Two A100-80GB nodes of 4 GPUs (8 in all).
constexpr std::string_view kA100Nodes =
    R"({"name": "a", "cpu": 32, "memory": "256Gi", "gpus": 4, "gpu_model": "A100-80GB"},
       {"name": "b", "cpu": 32, "memory": "256Gi", "gpus": 4, "gpu_model": "A100-80GB"})";

std::string doc(std::string_view nodes, std::string_view jobs, std::string_view extra) {
  return t::scenario_doc("k8s", "nodes", nodes, jobs, extra);
}

std::map<std::string, sim::JobRow> rows(const Scenario& sc) {
  std::map<std::string, sim::JobRow> out;
  for (auto& row : run(sc).jobs()) out.emplace(row.job, row);
  return out;
}

/// The same decisions: every job's start, end, placement, state and evictions.
void check_same_decisions(const std::map<std::string, sim::JobRow>& a, const std::map<std::string, sim::JobRow>& b) {
  REQUIRE(a.size() == b.size());
  for (const auto& [name, ra] : a) {
    INFO("job " << name);
    const auto& rb = b.at(name);
    CHECK(ra.start_s == rb.start_s);
    CHECK(ra.end_s == rb.end_s);
    CHECK(ra.placement == rb.placement);
    CHECK(ra.state == rb.state);
    CHECK(ra.evictions == rb.evictions);
    CHECK(ra.priority == rb.priority);
  }
}

/// Two profiles alike in everything but their description (an extending profile describes itself
/// as "extends <parent>").
void check_same_profile(const policies::Profile& a, const policies::Profile& b) {
  auto ja = a.to_json(), jb = b.to_json();
  ja.erase("description");
  jb.erase("description");
  CHECK(ja == jb);
}

/// The error a translation of `text` raises.
Error error_of(std::string_view text) {
  try {
    (void)translate_text(text);
  } catch (const Error& e) {
    return e;
  }
  FAIL("no error for:\n" << text);
  throw std::logic_error("unreachable");
}

// The args kueue-cohort-gpu.yaml means, written by hand.
const json kCohortArgs = json::parse(R"({
  "queues": {
    "team-a-cq": {"cohort": "team-ab", "local_queues": ["team-a"],
                  "preemption": {"reclaim_within_cohort": "Any", "within_cluster_queue": "LowerPriority"},
                  "resource_groups": [{"flavors": [{"name": "A100-80GB", "resources": {
                      "cpu": {"nominal_quota": "32"}, "nvidia.com/gpu": {"nominal_quota": 4, "borrowing_limit": 4}}}]}]},
    "team-b-cq": {"cohort": "team-ab", "local_queues": ["team-b"],
                  "preemption": {"reclaim_within_cohort": "Any", "within_cluster_queue": "Never"},
                  "resource_groups": [{"flavors": [{"name": "A100-80GB", "resources": {
                      "cpu": {"nominal_quota": "32"}, "nvidia.com/gpu": {"nominal_quota": 4, "lending_limit": 4}}}]}]}},
  "cohorts": {"team-ab": {"parent": "org"}, "org": {}}})");

}  // namespace

TEST_CASE("Kueue's single-ClusterQueue sample becomes capacity-queues args with Kueue's preemption defaults", "[k8s-objects]") {
  const auto tr = translate_file("kueue-single-clusterqueue.yaml");
  const auto expected = json::parse(R"({"queues": {"cluster-queue": {
      "local_queues": ["user-queue"],
      "preemption": {"reclaim_within_cohort": "Never", "within_cluster_queue": "Never"},
      "resource_groups": [{"flavors": [{"name": "default", "resources": {"cpu": {"nominal_quota": "9"},
                                                                            "memory": {"nominal_quota": "36Gi"}}}]}]}},
      "cohorts": {}})");
  CHECK(tr.plugin_args["capacity-queues"] == expected);
  CHECK(tr.plugin_args.size() == 1);
  CHECK(tr.priority_classes.empty());
  CHECK(tr.profile.is_null());
}

TEST_CASE("Kueue objects as multi-document YAML and as a kubectl JSON List translate alike", "[k8s-objects]") {
  const auto yaml = translate_file("kueue-cohort-gpu.yaml");
  const auto list = translate_file("kueue-cohort-gpu-list.json");
  // The List carries what kubectl adds (uid, managedFields, status, quantities as strings): ignored.
  CHECK(yaml.plugin_args == list.plugin_args);
  CHECK(yaml.priority_classes == list.priority_classes);
  CHECK(yaml.plugin_args["capacity-queues"] == kCohortArgs);
  CHECK(yaml.priority_classes == json::parse(R"({"sample-priority": {"value": 10000}})"));
  // The List's objects keep their place: document 1, item n.
  const auto objs = read_kubernetes_objects(data("kueue-cohort-gpu-list.json"));
  REQUIRE(objs.size() == 7);
  CHECK(objs[2].where == "document 1 item 3");
  CHECK(objs[2].kind == "ClusterQueue");
  CHECK(objs[2].name == "team-a-cq");
  CHECK(objs[2].lines.at("/spec/cohort") == 15);
}

TEST_CASE("A Kueue cohort from objects decides as the hand-written capacity-queues profile", "[k8s-objects]") {
  // team-a borrows team-b's GPUs; team-b's job then reclaims them (reclaimWithinCohort: Any).
  const std::string jobs =
      R"({"id": "a1", "submit_time": 0, "duration": 100, "queue": "team-a", "requests": {"cpu": 1, "nvidia.com/gpu": 4}},
         {"id": "a2", "submit_time": 0, "duration": 100, "queue": "team-a", "requests": {"cpu": 1, "nvidia.com/gpu": 4}},
         {"id": "b1", "submit_time": 10, "duration": 50, "queue": "team-b", "priority_class": "sample-priority",
          "requests": {"cpu": 1, "nvidia.com/gpu": 2}})";
  const auto from_objects = parse(doc(kA100Nodes, jobs,
      R"("profile": "kueue-cohorts", "kubernetes_objects": ["tests/data/k8s/kueue-cohort-gpu.yaml"],)"));
  const json hand_profile{{"extends", "kueue-cohorts"},
                          {"filter", json::array({json{{"name", "capacity-queues"}, {"args", kCohortArgs}}})},
                          {"post_filter", json::array({json{{"name", "capacity-queues"}, {"args", kCohortArgs}}})}};
  const auto by_hand = parse(doc(kA100Nodes, jobs,
      R"("priority_classes": {"sample-priority": {"value": 10000}}, "profile": )" + hand_profile.dump() + ","));
  CHECK(from_objects.profile.name == "kueue-cohorts");
  check_same_profile(from_objects.profile, by_hand.profile);
  CHECK(from_objects.priority_classes.at("sample-priority").value == 10000);
  CHECK(from_objects.jobs[2].priority == 10000);
  CHECK(from_objects.kubernetes_plugin_args["capacity-queues"] == kCohortArgs);
  const auto a = rows(from_objects);
  check_same_decisions(a, rows(by_hand));
  // What the translation means: a2 borrowed team-b's quota and is reclaimed when b1 arrives.
  CHECK(a.at("a1").start_s == 0.0);
  CHECK(a.at("a2").start_s.has_value());
  CHECK(a.at("b1").start_s == 10.0);
  CHECK(a.at("a2").evictions == 1);
  CHECK(a.at("a1").evictions == 0);
}

TEST_CASE("PriorityClass objects in a List become the scenario's priority classes", "[k8s-objects]") {
  const auto tr = translate_file("priority-classes.yaml");
  CHECK(tr.priority_classes == json::parse(R"({"high-priority": {"value": 1000000},
      "high-priority-nonpreempting": {"value": 1000000, "preemption_policy": "Never"},
      "batch-default": {"value": 100, "global_default": true}})"));
  CHECK(tr.plugin_args.empty());
  const auto sc = parse(doc(kA100Nodes,
      R"({"id": "x", "submit_time": 0, "duration": 10, "priority_class": "high-priority-nonpreempting", "requests": {"cpu": 1}},
         {"id": "y", "submit_time": 0, "duration": 10, "requests": {"cpu": 1}})",
      R"("kubernetes_objects": ["tests/data/k8s/priority-classes.yaml"],)"));
  REQUIRE(sc.jobs.size() == 2);
  CHECK(sc.jobs[0].priority == 1000000);
  CHECK(sc.jobs[0].constraints.preempt_never);
  CHECK(sc.jobs[1].priority == 100);   // the global default
  CHECK(sc.profile.name == "custom");  // no profile given: the scenario default, untouched
}

TEST_CASE("ResourceQuota objects become resource-quota args and decide as the hand-written ones", "[k8s-objects]") {
  const auto tr = translate_file("resource-quotas.yaml");
  // Object counts (configmaps, services, ...) never bind simulated jobs; pods does. The name is
  // the ResourceQuota a refusal names ("exceeded quota: compute-resources, ...").
  const auto expected = json::parse(R"({"quotas": {"team-a": {"name": "compute-resources", "requests.cpu": "16",
                                        "requests.memory": "64Gi", "requests.nvidia.com/gpu": 2, "pods": 4}}})");
  CHECK(tr.plugin_args["resource-quota"] == expected);
  const std::string jobs =
      R"({"id": "j1", "submit_time": 0, "duration": 100, "queue": "team-a", "requests": {"cpu": 1, "nvidia.com/gpu": 2}},
         {"id": "j2", "submit_time": 5, "duration": 100, "queue": "team-a", "requests": {"cpu": 1, "nvidia.com/gpu": 1}},
         {"id": "j3", "submit_time": 5, "duration": 100, "queue": "team-b", "requests": {"cpu": 1, "nvidia.com/gpu": 1}})";
  const auto from_objects = parse(doc(kA100Nodes, jobs, R"("kubernetes_objects": ["tests/data/k8s/resource-quotas.yaml"],)"));
  const auto by_hand = parse(doc(kA100Nodes, jobs,
      R"("profile": {"pre_filter": [{"name": "resource-quota", "args": )" + expected.dump() + "}]},"));
  check_same_profile(from_objects.profile, by_hand.profile);
  const auto a = rows(from_objects);
  check_same_decisions(a, rows(by_hand));
  CHECK(a.at("j1").start_s == 0.0);
  CHECK(a.at("j2").start_s != 5.0);   // team-a's 2 GPUs are held by j1
  CHECK(a.at("j3").start_s == 5.0);   // team-b has no quota
}

TEST_CASE("Volcano Queues become drf weights and capability caps", "[k8s-objects]") {
  const auto tr = translate_file("volcano-queues.yaml");
  CHECK(tr.plugin_args["drf"] == json::parse(R"({"weights": {"research": 3, "prod": 1}})"));
  const auto& rq = tr.plugin_args["resource-quota"];
  CHECK(rq["quotas"] == json::parse(R"({"prod": {"cpu": "8", "nvidia.com/gpu": 2}})"));
  const auto* info = policies::Registry::builtins().find("resource-quota");
  const bool has_charge = std::any_of(info->args.begin(), info->args.end(), [](const auto& x) { return x.name == "charge"; });
  if (has_charge) CHECK(rq["charge"] == "running");   // a capability caps what the queue runs
  const std::string jobs =
      R"({"id": "p1", "submit_time": 0, "duration": 100, "queue": "prod", "requests": {"cpu": 1, "nvidia.com/gpu": 2}},
         {"id": "p2", "submit_time": 1, "duration": 100, "queue": "prod", "requests": {"cpu": 1, "nvidia.com/gpu": 1}},
         {"id": "r1", "submit_time": 1, "duration": 100, "queue": "research", "requests": {"cpu": 1, "nvidia.com/gpu": 4}})";
  const auto from_objects = parse(doc(kA100Nodes, jobs,
      R"("profile": "volcano-gang-drf", "kubernetes_objects": ["tests/data/k8s/volcano-queues.yaml"],)"));
  json hand{{"extends", "volcano-gang-drf"}, {"queue_sort", {{"name", "drf"}, {"args", tr.plugin_args["drf"]}}},
            {"pre_filter", json::array({json{{"name", "resource-quota"}, {"args", rq}}})}};
  const auto by_hand = parse(doc(kA100Nodes, jobs, R"("profile": )" + hand.dump() + ","));
  CHECK(from_objects.profile.queue_sort.name == "drf");
  check_same_profile(from_objects.profile, by_hand.profile);
  const auto a = rows(from_objects);
  check_same_decisions(a, rows(by_hand));
  CHECK(a.at("p2").start_s != 1.0);   // prod's capability is 2 GPUs, held by p1
  CHECK(a.at("r1").start_s == 1.0);
}

TEST_CASE("A KubeSchedulerConfiguration becomes a profile that decides as the hand-written one", "[k8s-objects]") {
  const auto tr = translate_file("kube-scheduler-config.yaml");
  REQUIRE(tr.profile.is_object());
  auto expected = json::parse(R"({
      "queue_sort": "priority-fifo",
      "pre_filter": [],
      "filter": ["taint-toleration", "node-affinity", "node-resources-fit", "app-max-per-node"],
      "score": [{"name": "taint-toleration", "weight": 5}, {"name": "node-affinity", "weight": 2},
                {"name": "most-allocated", "weight": 1, "args": {"resources": [{"name": "cpu", "weight": 1},
                 {"name": "memory", "weight": 1}, {"name": "nvidia.com/gpu", "weight": 3}]}}],
      "post_filter": ["priority-preemption"],
      "tie_break": "random",
      "queueing": "greedy"})");
  // NodeUnschedulable and kube-scheduler's wording, where this build has them.
  if (policies::Registry::builtins().find("node-unschedulable")) expected["filter"].insert(expected["filter"].begin(), "node-unschedulable");
  bool wording = true;
  try {
    (void)policies::Profile::from_json(json{{"diagnosis", "kube-scheduler"}}, "t");
  } catch (const Error&) {
    wording = false;
  }
  if (wording) expected["diagnosis"] = "kube-scheduler";
  CHECK(tr.profile.contains("diagnosis") == wording);
  for (const auto& [k, v] : expected.items()) {
    INFO(k);
    CHECK(tr.profile[k] == v);
  }
  CHECK(tr.profile["name"] == "default-scheduler");
  // Packing (MostAllocated): the second 1-GPU job joins the first on its node.
  const std::string jobs =
      R"({"id": "j1", "submit_time": 0, "duration": 100, "requests": {"cpu": 1, "nvidia.com/gpu": 1}},
         {"id": "j2", "submit_time": 1, "duration": 100, "requests": {"cpu": 1, "nvidia.com/gpu": 1}},
         {"id": "j3", "submit_time": 2, "duration": 100, "requests": {"cpu": 1}})";
  const auto from_objects = parse(doc(kA100Nodes, jobs, R"("kubernetes_objects": ["tests/data/k8s/kube-scheduler-config.yaml"],)"));
  auto hand = expected;
  hand["name"] = "by-hand";
  const auto by_hand = parse(doc(kA100Nodes, jobs, R"("profile": )" + hand.dump() + ","));
  const auto a = rows(from_objects);
  check_same_decisions(a, rows(by_hand));
  CHECK(a.at("j1").placement.substr(0, 1) == a.at("j2").placement.substr(0, 1));
  CHECK(from_objects.profile.name == "default-scheduler");
  // The spreading default (LeastAllocated on cpu and memory) places j2 elsewhere.
  const auto spread = rows(parse(doc(kA100Nodes, jobs, R"("kubernetes_objects": [{"apiVersion": "kubescheduler.config.k8s.io/v1",
      "kind": "KubeSchedulerConfiguration", "profiles": [{"plugins": {"score": {"disabled": [{"name": "NodeResourcesBalancedAllocation"}]}}}]}],)")));
  CHECK(spread.at("j1").placement.substr(0, 1) != spread.at("j2").placement.substr(0, 1));
}

TEST_CASE("kube-scheduler's default profile translates, NodeResourcesBalancedAllocation included", "[k8s-objects]") {
  constexpr std::string_view kDefault = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n";
  // kube-scheduler's default scores: TaintToleration 3, NodeAffinity 2, NodeResourcesFit 1,
  // NodeResourcesBalancedAllocation 1 (its args' default resources: cpu 1, memory 1).
  const auto all = translate_text(kDefault);
  CHECK(all.profile["score"] == json::parse(R"([{"name": "taint-toleration", "weight": 3}, {"name": "node-affinity", "weight": 2},
      {"name": "least-allocated", "weight": 1, "args": {"resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]}},
      {"name": "balanced-allocation", "weight": 1, "args": {"resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]}}])"));
  CHECK_NOTHROW(policies::Scheduler(policies::Profile::from_json(all.profile, "t"), policies::Registry::builtins(), 0));
  // Its args' resources, and its weight, as written.
  const auto gpus = translate_text(std::string(kDefault) + R"(profiles:
  - plugins:
      score:
        enabled: [{name: NodeResourcesBalancedAllocation, weight: 2}]
    pluginConfig:
      - name: NodeResourcesBalancedAllocation
        args:
          resources: [{name: cpu, weight: 1}, {name: memory}, {name: nvidia.com/gpu, weight: 0}]
)");
  const auto& gpu_scores = gpus.profile["score"];
  const auto balanced = std::find_if(gpu_scores.begin(), gpu_scores.end(), [](const json& r) { return r["name"] == "balanced-allocation"; });
  REQUIRE(balanced != gpu_scores.end());
  CHECK(gpu_scores.size() == 4);
  CHECK(*balanced == json::parse(R"({"name": "balanced-allocation", "weight": 2, "args": {"resources":
      [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}, {"name": "nvidia.com/gpu", "weight": 1}]}})"));
  const auto e = error_of(std::string(kDefault) + R"(profiles:
  - pluginConfig:
      - name: NodeResourcesBalancedAllocation
        args: {resources: [{name: cpu}], shape: []}
)");
  CHECK(e.code() == ErrorCode::kScenarioUnknownField);
  CHECK(e.where().field == "document 1, KubeSchedulerConfiguration, /profiles/0/pluginConfig/0/args/shape");
  const auto tr = translate_text(std::string(kDefault) + R"(profiles:
  - plugins:
      multiPoint:
        disabled:
          - name: NodeResourcesBalancedAllocation
)");
  CHECK(tr.profile["score"] == json::parse(R"([{"name": "taint-toleration", "weight": 3}, {"name": "node-affinity", "weight": 2},
      {"name": "least-allocated", "weight": 1, "args": {"resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]}}])"));
  CHECK(tr.profile["post_filter"] == json::array({"priority-preemption"}));
  // A point that disables "*" keeps only its own plugins; weights given there override MultiPoint's.
  const auto only = translate_text(std::string(kDefault) + R"(profiles:
  - plugins:
      score:
        disabled: [{name: "*"}]
        enabled: [{name: NodeResourcesFit, weight: 4}]
      filter:
        disabled: [{name: InterPodAffinity}]
      postFilter:
        disabled: [{name: DefaultPreemption}]
)");
  CHECK(only.profile["score"] == json::parse(R"([{"name": "least-allocated", "weight": 4,
      "args": {"resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]}}])"));
  auto filters = json::parse(R"(["taint-toleration", "node-affinity", "node-resources-fit"])");
  if (policies::Registry::builtins().find("node-unschedulable")) filters.insert(filters.begin(), "node-unschedulable");
  CHECK(only.profile["filter"] == filters);
  CHECK(only.profile["post_filter"] == json::array());
  // Re-enabled at score without a weight: weight 1, not MultiPoint's 3 (kube's getScoreWeights).
  const auto reweighed = translate_text(std::string(kDefault) + R"(profiles:
  - plugins:
      score:
        disabled: [{name: NodeResourcesBalancedAllocation}]
        enabled: [{name: TaintToleration}]
)");
  CHECK(reweighed.profile["score"][0] == json::parse(R"({"name": "taint-toleration", "weight": 1})"));
}

TEST_CASE("RequestedToCapacityRatio and percentageOfNodesToScore translate or say they are not modelled", "[k8s-objects]") {
  const std::string rtcr = R"(apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
  - plugins:
      score:
        disabled: [{name: NodeResourcesBalancedAllocation}]
    pluginConfig:
      - name: NodeResourcesFit
        args:
          scoringStrategy:
            type: RequestedToCapacityRatio
            resources: [{name: nvidia.com/gpu, weight: 3}]
            requestedToCapacityRatio:
              shape:
                - {utilization: 0, score: 0}
                - {utilization: 100, score: 10}
)";
  if (policies::Registry::builtins().find("requested-to-capacity-ratio")) {
    const auto tr = translate_text(rtcr);
    CHECK(tr.profile["score"][2] == json::parse(R"({"name": "requested-to-capacity-ratio", "weight": 1, "args": {
        "shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}],
        "resources": [{"name": "nvidia.com/gpu", "weight": 3}]}})"));
    CHECK_NOTHROW(policies::Scheduler(policies::Profile::from_json(tr.profile, "t"), policies::Registry::builtins(), 0));
  } else {
    const auto e = error_of(rtcr);
    CHECK(e.where().field == "document 1, KubeSchedulerConfiguration, /profiles/0/pluginConfig/0/args/scoringStrategy/type");
    CHECK(e.where().line == 11);
  }
  const std::string pct = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\npercentageOfNodesToScore: 50\n"
                          "profiles: [{plugins: {score: {disabled: [{name: NodeResourcesBalancedAllocation}]}}}]\n";
  bool supported = true;
  try {
    (void)policies::Profile::from_json(json{{"percentage_of_nodes_to_score", 0}}, "");
  } catch (const Error&) {
    supported = false;
  }
  if (supported) {
    CHECK(translate_text(pct).profile["percentage_of_nodes_to_score"] == 50);
  } else {
    const auto e = error_of(pct);
    CHECK(e.where().field == "document 1, KubeSchedulerConfiguration, /percentageOfNodesToScore");
    CHECK(e.where().line == 3);
  }
}

TEST_CASE("Every field gpusched does not model is an error naming file, line, document, kind and field", "[k8s-objects][errors]") {
  struct Case {
    std::string text;
    std::int64_t line;
    std::string field;
    std::string says;
  };
  const std::string rf = "apiVersion: kueue.x-k8s.io/v1beta1\nkind: ResourceFlavor\nmetadata: {name: f}\n---\n";
  const std::string cq = rf + "apiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue\nmetadata:\n  name: cq\nspec:\n  namespaceSelector: {}\n";
  const std::string ksc = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n";
  const std::vector<Case> cases = {
      {cq + "  queueingStrategy: StrictFIFO\n", 11, "document 2, ClusterQueue cq, /spec/queueingStrategy", "BestEffortFIFO"},
      {cq + "  stopPolicy: Hold\n", 11, "document 2, ClusterQueue cq, /spec/stopPolicy", "stopPolicy Hold"},
      {cq + "  admissionChecks: [prov]\n", 11, "document 2, ClusterQueue cq, /spec/admissionChecks", "admission checks"},
      {cq + "  flavorFungibility: {whenCanBorrow: TryNextFlavor}\n", 11,
       "document 2, ClusterQueue cq, /spec/flavorFungibility/whenCanBorrow", "MayStopSearch"},
      {cq + "  preemption: {withinClusterQueue: LowerOrNewerEqualPriority}\n", 11,
       "document 2, ClusterQueue cq, /spec/preemption/withinClusterQueue", "LowerOrNewerEqualPriority"},
      {cq + "  colour: blue\n", 11, "document 2, ClusterQueue cq, /spec/colour", "unknown"},
      {rf + "apiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue\nmetadata: {name: cq}\nspec: {cohort: x}\n", 8,
       "document 2, ClusterQueue cq, /spec", "namespaceSelector: {}"},
      {cq + "  namespaceSelector: {matchLabels: {team: a}}\n", 11, "", ""},   // duplicate key: a parse error (below)
      {cq + "  resourceGroups:\n  - coveredResources: [cpu]\n    flavors:\n    - name: nope\n      resources: [{name: cpu, nominalQuota: 1}]\n",
       14, "document 2, ClusterQueue cq, /spec/resourceGroups/0/flavors/0/name", "no ResourceFlavor named \"nope\""},
      {cq + "  resourceGroups:\n  - coveredResources: [cpu, memory]\n    flavors:\n    - name: f\n      resources: [{name: cpu, nominalQuota: 1}]\n",
       15, "document 2, ClusterQueue cq, /spec/resourceGroups/0/flavors/0/resources", "coveredResources"},
      {"apiVersion: kueue.x-k8s.io/v1beta1\nkind: ResourceFlavor\nmetadata: {name: spot}\nspec:\n  nodeLabels:\n    instance-type: spot\n",
       6, "document 1, ResourceFlavor spot, /spec/nodeLabels/instance-type", "nvidia.com/gpu.product"},
      {"apiVersion: kueue.x-k8s.io/v1beta1\nkind: ResourceFlavor\nmetadata: {name: spot}\nspec:\n  nodeTaints:\n  - {key: spot, value: \"true\", effect: NoSchedule}\n",
       6, "document 1, ResourceFlavor spot, /spec/nodeTaints", "taints"},
      {"apiVersion: kueue.x-k8s.io/v1beta1\nkind: ResourceFlavor\nmetadata: {name: g}\nspec:\n  nodeLabels: {nvidia.com/gpu.product: NVIDIA-X9000}\n",
       5, "document 1, ResourceFlavor g, /spec/nodeLabels/nvidia.com/gpu.product", "not a GPU model"},
      {"apiVersion: kueue.x-k8s.io/v1beta1\nkind: Cohort\nmetadata: {name: c}\nspec:\n  resourceGroups:\n  - coveredResources: [cpu]\n    flavors: []\n",
       6, "document 1, Cohort c, /spec/resourceGroups", "quota held by a Cohort"},
      {"apiVersion: kueue.x-k8s.io/v1beta1\nkind: LocalQueue\nmetadata: {name: lq, namespace: ns}\nspec:\n  clusterQueue: missing\n",
       5, "document 1, LocalQueue lq, /spec/clusterQueue", "no ClusterQueue named \"missing\""},
      {"apiVersion: kueue.x-k8s.io/v1alpha1\nkind: Cohort\nmetadata: {name: c}\n", 1, "document 1, Cohort c, /apiVersion", "v1beta1"},
      {"apiVersion: kueue.x-k8s.io/v1beta1\nkind: Cohort\nmetadata:\n  name: c\n  colour: red\n", 5, "document 1, Cohort c, /metadata/colour", "unknown"},
      {"apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: q}\nspec:\n  weight: 1\n  reclaimable: false\n",
       6, "document 1, Queue q, /spec/reclaimable", "reclaim"},
      {"apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: q}\nspec:\n  deserved: {cpu: 2}\n",
       5, "document 1, Queue q, /spec/deserved", "deserved"},
      {"apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: q}\nspec:\n  guarantee:\n    resource: {cpu: 2}\n",
       6, "document 1, Queue q, /spec/guarantee", "guarantee"},
      {"apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: rq, namespace: a}\nspec:\n  hard:\n    requests.cpu: \"1\"\n    limits.cpu: \"2\"\n",
       7, "document 1, ResourceQuota rq, /spec/hard/limits.cpu", "limits are not modelled"},
      {"apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: rq, namespace: a}\nspec:\n  hard: {pods: 2}\n  scopes: [BestEffort]\n",
       6, "document 1, ResourceQuota rq, /spec/scopes", "scopes"},
      // User classes stop at Kubernetes' 1e9; the built-in system classes (as `kubectl get
      // priorityclasses` lists them, accepted) only at their own values.
      {"apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: urgent}\nvalue: 2000001000\n",
       4, "document 1, PriorityClass urgent, /value", "between"},
      {"apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: system-node-critical}\nvalue: 7\n",
       4, "document 1, PriorityClass system-node-critical, /value", "its value is 2000001000"},
      {"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n", 2, "document 1, Deployment web, /kind", "does not read kind Deployment"},
      {ksc + "profiles:\n- plugins:\n    score:\n      enabled:\n      - name: MyCustomPluginA\n        weight: 2\n", 7,
       "document 1, KubeSchedulerConfiguration, /profiles/0/plugins/score/enabled/0/name", "MyCustomPluginA"},
      {ksc + "extenders:\n- urlPrefix: http://127.0.0.1:8888/\n", 4, "document 1, KubeSchedulerConfiguration, /extenders", "extenders"},
      {ksc + "profiles:\n- schedulerName: a\n- schedulerName: b\n", 5, "document 1, KubeSchedulerConfiguration, /profiles/1", "one profile"},
      {ksc + "podMaxBackoffSeconds: 20\n", 3, "document 1, KubeSchedulerConfiguration, /podMaxBackoffSeconds", "backoff"},
      {ksc + "profiles:\n- pluginConfig:\n  - name: NodeAffinity\n    args:\n      addedAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {}}\n",
       7, "document 1, KubeSchedulerConfiguration, /profiles/0/pluginConfig/0/args/addedAffinity", "addedAffinity"},
      {ksc + "profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args:\n      scoringStrategy:\n        type: MostAllocated\n"
             "        resources: [{name: ephemeral-storage, weight: 3}]\n",
       9, "document 1, KubeSchedulerConfiguration, /profiles/0/pluginConfig/0/args/scoringStrategy/resources/0/name", "ephemeral-storage"},
  };
  for (const auto& c : cases) {
    INFO(c.text);
    if (c.field.empty()) {
      // A key given twice is refused as Kubernetes' strict decoding refuses it.
      const auto e = error_of(c.text);
      CHECK(e.code() == ErrorCode::kScenarioParse);
      CHECK(e.where().line == c.line);
      CHECK_THAT(e.detail(), Catch::Contains("duplicate key"));
      continue;
    }
    const auto e = error_of(c.text);
    CHECK(e.where().file == "objs.yaml");
    CHECK(e.where().field == c.field);
    CHECK(e.where().line == c.line);
    CHECK_THAT(e.detail(), Catch::Contains(c.says));
    CHECK((e.code() == ErrorCode::kScenarioUnknownField || e.code() == ErrorCode::kScenarioBadValue ||
           e.code() == ErrorCode::kScenarioOutOfRange));   // 211: a number outside its range (a priority above 1e9)
  }
}

TEST_CASE("Bad YAML, a missing file and conflicting inputs are errors before the run", "[k8s-objects][errors]") {
  try {
    (void)parse_kubernetes_objects("apiVersion: v1\nkind: [List\n", "bad.yaml");
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::kScenarioParse);
    CHECK(e.where().file == "bad.yaml");
    CHECK(e.where().line >= 2);
  }
  auto scenario_error = [](const std::string& extra) -> Error {
    try {
      (void)parse(doc(kA100Nodes, R"({"id": "x", "submit_time": 0, "duration": 1, "requests": {"cpu": 1}})", extra));
    } catch (const Error& e) {
      return e;
    }
    FAIL("no error for " << extra);
    throw std::logic_error("unreachable");
  };
  CHECK(scenario_error(R"("kubernetes_objects": ["tests/data/k8s/missing.yaml"],)").code() == ErrorCode::kScenarioCannotOpen);
  // The same plugin configured twice, by the profile and by the objects.
  const auto twice = scenario_error(R"("profile": {"extends": "kueue-cohorts", "filter": [{"name": "capacity-queues",
      "args": {"queues": {"q": {}}}}]}, "kubernetes_objects": ["tests/data/k8s/kueue-single-clusterqueue.yaml"],)");
  CHECK(twice.where().field == "/kubernetes_objects");
  CHECK_THAT(twice.detail(), Catch::Contains("capacity-queues"));
  const auto both = scenario_error(R"("profile": "default", "kubernetes_objects": ["tests/data/k8s/kube-scheduler-config.yaml"],)");
  CHECK(both.where().field == "/profile");
  const auto pc = scenario_error(R"("priority_classes": {"batch-default": 5}, "kubernetes_objects": ["tests/data/k8s/priority-classes.yaml"],)");
  CHECK(pc.where().field == "/priority_classes/batch-default");
  // Volcano weights need the drf queue sort; another explicit queue sort is not replaced.
  const auto sort = scenario_error(R"("profile": {"queue_sort": "fifo"}, "kubernetes_objects": ["tests/data/k8s/volcano-queues.yaml"],)");
  CHECK_THAT(sort.detail(), Catch::Contains("drf") && Catch::Contains("fifo"));
  // The same object twice.
  const auto dup = error_of(std::string("apiVersion: kueue.x-k8s.io/v1beta1\nkind: Cohort\nmetadata: {name: c}\n---\n") +
                            "apiVersion: kueue.x-k8s.io/v1beta1\nkind: Cohort\nmetadata: {name: c}\n");
  CHECK(dup.where().field == "document 2, Cohort c, /metadata/name");
}

TEST_CASE("A profile given later (run --profile) keeps the args the objects configure", "[k8s-objects]") {
  const auto tr = translate_file("kueue-single-clusterqueue.yaml");
  const auto p = with_plugin_args(policies::builtin_profile("kube-default"), tr.plugin_args, "t");
  auto has = [](const std::vector<policies::PluginRef>& l, const json& args) {
    return std::any_of(l.begin(), l.end(), [&](const auto& r) { return r.name == "capacity-queues" && r.args == args; });
  };
  CHECK(has(p.filter, tr.plugin_args["capacity-queues"]));
  CHECK(has(p.post_filter, tr.plugin_args["capacity-queues"]));
  CHECK(p.post_filter.front().name == "priority-preemption");   // the preset's own entries stay, in order
  CHECK_NOTHROW(policies::Scheduler(p, policies::Registry::builtins(), 0));

  t::TempDir dir;
  const auto scen = dir.write("s.json", doc(kA100Nodes, R"({"id": "x", "submit_time": 0, "duration": 1, "queue": "user-queue", "requests": {"cpu": 1}})",
                                            R"("kubernetes_objects": [")" + data("kueue-single-clusterqueue.yaml").string() + R"("],)"));
  const std::string s = scen.string(), out = (dir.path() / "o").string();
  std::vector<const char*> argv = {"gpusched", "run", s.c_str(), "--out", out.c_str(), "--profile", "kube-default", "--progress", "never", "--quiet"};
  REQUIRE(cli_main(static_cast<int>(argv.size()), argv.data()) == 0);
  const auto summary = json::parse(t::read_file(dir.path() / "o" / "summary.json"));
  CHECK(summary["profile"] == "kube-default");
  const auto& filters = summary["inputs"]["profile"]["filter"];
  CHECK(std::any_of(filters.begin(), filters.end(), [](const json& f) { return f["name"] == "capacity-queues"; }));
}

TEST_CASE("A ClusterQueue's fairSharing weight translates into capacity-queues' fair_sharing weight", "[k8s-objects]") {
  const std::string text = R"(apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: cq}
spec:
  namespaceSelector: {}
  fairSharing:
    weight: 500m
)";
  CHECK(translate_text(text).plugin_args["capacity-queues"]["queues"]["cq"]["fair_sharing"] == json::parse(R"({"weight": 0.5})"));
  // A field of fairSharing we do not know is an error that names it.
  const auto e = error_of(R"(apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: cq}
spec:
  namespaceSelector: {}
  fairSharing:
    share: 2
)");
  CHECK(e.where().field == "document 1, ClusterQueue cq, /spec/fairSharing/share");
}

TEST_CASE("The Kueue example runs with its objects translated into kueue-cohorts", "[k8s-objects][examples]") {
  const auto sc = load_scenario(t::example("kueue-objects.json"));
  CHECK(sc.profile.name == "kueue-cohorts");
  const auto& queues = sc.kubernetes_plugin_args["capacity-queues"]["queues"];
  CHECK(queues["training"]["resource_groups"][0]["flavors"][0]["name"] == "H100-80GB");   // NVIDIA-H100-80GB-HBM3
  CHECK(queues["training"]["resource_groups"][0]["flavors"][1]["name"] == "A100-80GB");
  CHECK(sc.priority_classes.at("production").value == 1000);
  const auto r = rows(sc);
  CHECK(r.at("train-1").start_s == 0.0);
  CHECK(r.at("serve-1").start_s == 1800.0);
}

TEST_CASE("Kubernetes objects add to the profile's own capacity-queues args; the same key twice is a conflict",
          "[k8s-objects]") {
  // Kueue enables fair sharing in its Configuration, not in a ClusterQueue: the profile says
  // fair_sharing, the objects give the queues and their weights, and both reach the plugin.
  auto profile = policies::builtin_profile("kueue-cohorts");
  profile.queue_sort = policies::PluginRef{"capacity-queues", 1.0, json::object(), {}};
  for (auto& f : profile.filter) {
    if (f.name == "capacity-queues") f.args = json{{"fair_sharing", {{"enable", true}}}};
  }
  const json translated = {{"capacity-queues", {{"queues", {{"cq", {{"fair_sharing", {{"weight", 0.5}}}}}}}}}};
  const auto merged = with_plugin_args(profile, translated, "kueue.yaml");
  const json want = {{"fair_sharing", {{"enable", true}}}, {"queues", translated["capacity-queues"]["queues"]}};
  CHECK(merged.queue_sort.args == want);
  for (const auto* list : {&merged.filter, &merged.post_filter}) {
    const auto it = std::find_if(list->begin(), list->end(), [](const auto& r) { return r.name == "capacity-queues"; });
    REQUIRE(it != list->end());
    CHECK(it->args == want);
  }
  // The profile giving queues of its own as well: an error naming the key.
  for (auto& f : profile.filter) {
    if (f.name == "capacity-queues") f.args["queues"] = json{{"other", json::object()}};
  }
  try {
    (void)with_plugin_args(profile, translated, "kueue.yaml");
    FAIL("expected a conflict");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("\"queues\"") != std::string::npos);
  }
}

TEST_CASE("Kubernetes' built-in system priority classes translate at their own values", "[scenario][k8s-objects][priority]") {
  // As `kubectl get priorityclasses -o yaml` prints them on every cluster (pkg/apis/scheduling/types.go).
  const auto t = translate_text(
      "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: system-cluster-critical}\nvalue: 2000000000\n"
      "---\napiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: system-node-critical}\nvalue: 2000001000\n"
      "preemptionPolicy: PreemptLowerPriority\n");
  CHECK(t.priority_classes["system-cluster-critical"]["value"] == 2'000'000'000);
  CHECK(t.priority_classes["system-node-critical"]["value"] == 2'000'001'000);
}
