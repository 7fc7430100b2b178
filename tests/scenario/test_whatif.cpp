// What-if on a Kubernetes snapshot (scenario/whatif.hpp, `gpusched whatif`), and the snapshot
// fixes it needed: Kubernetes' built-in priority classes, a pod's spec.priority read as final,
// pods that fit nowhere reported instead of refused. The snapshot is tests/data/kubernetes
// (nodes.json, pods.json: hand-written from kubectl's output format, see its README).
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <gpusched/scenario/scenario.hpp>
#include <gpusched/scenario/whatif.hpp>
#include <gpusched/sim/outputs.hpp>

#include "support/support.hpp"

using namespace gpusched;
using namespace gpusched::scenario;
namespace t = gpusched::test;

namespace {

std::filesystem::path snapshot(const char* file) { return t::source_dir() / "tests" / "data" / "kubernetes" / file; }

WhatIfOptions options(std::vector<std::string> profiles) {
  WhatIfOptions o;
  o.nodes = snapshot("nodes.json");
  o.pods = snapshot("pods.json");
  o.profiles = std::move(profiles);
  return o;
}

/// The snapshot through `run`'s path (what `gpusched run` on a scenario importing it does),
/// keeping pods that fit nowhere: jobs.csv rows by pod name.
std::map<std::string, sim::JobRow> run_rows(const std::filesystem::path& pods, const std::string& profile) {
  const nlohmann::json doc = {
      {"schema_version", 1},
      {"name", "snap"},
      {"seed", 42},
      {"cluster", {{"import", {{{"path", snapshot("nodes.json").string()}, {"format", "kubectl-nodes"}}}}}},
      {"workload", {{"trace", {{"path", pods.string()}, {"format", "kubectl-pods"}}}}},
      {"profile", profile}};
  Scenario sc = parse_scenario(doc, "snap.json", ".");
  sc.keep_unplaceable = true;
  std::map<std::string, sim::JobRow> rows;
  for (auto& r : run(sc).jobs()) rows[r.job] = r;
  return rows;
}

/// pods.json with one more pending pod asking for `gpus` GPUs.
std::filesystem::path with_pending_pod(t::TempDir& dir, int gpus) {
  auto doc = nlohmann::json::parse(t::read_file(snapshot("pods.json")));
  doc["items"].push_back({{"apiVersion", "v1"},
                          {"kind", "Pod"},
                          {"metadata", {{"name", "huge"}, {"namespace", "ml"}, {"creationTimestamp", "2024-06-01T00:00:00Z"}}},
                          {"spec",
                           {{"containers",
                             {{{"name", "main"},
                               {"resources", {{"requests", {{"cpu", "1"}, {"nvidia.com/gpu", std::to_string(gpus)}}},
                                              {"limits", {{"nvidia.com/gpu", std::to_string(gpus)}}}}}}}}}},
                          {"status", {{"phase", "Pending"}}}});
  return dir.write("pods.json", doc.dump(2));
}

}  // namespace

TEST_CASE("whatif: one row per profile; every pending pod is placed on a node or says why not", "[scenario][whatif]") {
  const auto rows = whatif(options({"kube-default", "binpack", "first-fit"}));
  REQUIRE(rows.size() == 3);
  CHECK(rows[0].profile == "kube-default");
  CHECK(rows[2].profile == "first-fit");
  for (const auto& r : rows) {
    INFO(r.profile);
    // pods.json: 4 pods bound to a node and running, 3 pending, 1 Succeeded (skipped).
    CHECK(r.bound == 4);
    CHECK(r.pending == 3);
    REQUIRE(r.pods.size() == 3);
    std::int64_t placed = 0;
    for (const auto& p : r.pods) {
      INFO(p.pod);
      if (p.placed) {
        ++placed;
        CHECK_FALSE(p.node.empty());
        CHECK(p.placement.rfind(p.node + "[", 0) == 0);
        CHECK(p.reason.empty());
      } else {
        CHECK(p.node.empty());
        CHECK_FALSE(p.reason.empty());
      }
    }
    CHECK(placed == r.placed);
    CHECK(r.gpu_alloc_pct >= r.gpu_alloc_pct_before);
    CHECK(r.gpu_alloc_pct_before > 0);   // train-llama's 4 GPUs and ranker's T4 are bound
  }
  // Listed oldest creationTimestamp first (docs/traces.md; notebook-ana's 10:10+02:00 is 08:10Z).
  CHECK(rows[0].pods[0].pod == "ml/notebook-ana");
  CHECK(rows[0].pods[1].pod == "data/etl-nightly-28573440-abcde");
  CHECK(rows[0].pods[2].pod == "ml/finetune-7b");
  // The data pod asks more CPU than any untainted node has: pending under every profile, in
  // kube-scheduler's words under kube-default.
  for (const auto& r : rows) CHECK_FALSE(r.pods[1].placed);
  CHECK_THAT(rows[0].pods[1].reason, Catch::StartsWith("0/4 nodes are available:") && Catch::Contains("Insufficient cpu"));
}

TEST_CASE("whatif places each pending pod where `run` of the same snapshot and profile does", "[scenario][whatif]") {
  for (const char* profile : {"kube-default", "gpushare-binpack", "fgd", "binpack"}) {
    INFO(profile);
    const auto rows = whatif(options({profile}));
    REQUIRE(rows.size() == 1);
    const auto ran = run_rows(snapshot("pods.json"), profile);
    for (const auto& p : rows[0].pods) {
      INFO(p.pod);
      REQUIRE(ran.count(p.pod) == 1);
      const auto& r = ran.at(p.pod);
      CHECK(p.placed == r.start_s.has_value());
      CHECK(p.placement == (p.placed ? r.placement : ""));
      CHECK(p.reason == (p.placed ? "" : r.reason));
    }
  }
}

TEST_CASE("whatif reports a pending pod that fits nowhere instead of refusing the snapshot", "[scenario][whatif]") {
  t::TempDir dir;
  auto o = options({"kube-default"});
  o.pods = with_pending_pod(dir, 64);   // no node has 64 GPUs
  // `run` refuses such an input before the run (trace_error: the job could never run) ...
  const nlohmann::json doc = {{"schema_version", 1},
                              {"name", "snap"},
                              {"cluster", {{"import", {{{"path", o.nodes.string()}, {"format", "kubectl-nodes"}}}}}},
                              {"workload", {{"trace", {{"path", o.pods.string()}, {"format", "kubectl-pods"}}}}}};
  CHECK_THROWS_AS(run(parse_scenario(doc, "snap.json", ".")), TraceError);
  // ... what-if reports it, in kube-scheduler's words, and still places the others.
  const auto rows = whatif(o);
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].pending == 4);
  const auto& huge = rows[0].pods.back();
  CHECK(huge.pod == "ml/huge");
  CHECK_FALSE(huge.placed);
  CHECK_THAT(huge.reason, Catch::Contains("nodes are available") && Catch::Contains("nvidia.com/gpu"));
  const auto plain = whatif(options({"kube-default"}));
  for (std::size_t i = 0; i < plain[0].pods.size(); ++i) {
    CHECK(rows[0].pods[i].placement == plain[0].pods[i].placement);   // the others are unaffected
  }
}

TEST_CASE("A snapshot's pods keep their spec.priority; system priority classes need no definition", "[scenario][whatif][priority]") {
  // The device plugin's pod names system-node-critical and carries spec.priority 2000001000; the
  // pending finetune pod names batch-low (defined nowhere) with spec.priority 500: admission
  // already resolved both, so neither is an error and the values are the pods' own.
  const auto rows = run_rows(snapshot("pods.json"), "kube-default");
  CHECK(rows.at("kube-system/nvidia-device-plugin-daemonset-x7k2p").priority == 2'000'001'000);
  CHECK(rows.at("ml/finetune-7b").priority == 500);
  CHECK(rows.at("ml/train-llama-0").priority == 1000);

  // Without spec.priority the class is looked up: the system classes are built in ...
  const auto jobs = [](const std::string& priority_class, const std::string& classes) {
    return R"({"schema_version": 1, "name": "p", "cluster": {"nodes": [{"name": "n", "cpu": "8", "memory": "8Gi"}]},
               "priority_classes": )" + classes + R"(,
               "workload": {"jobs": [{"id": "a", "submit_time": 0, "duration": 10, "priority_class": ")" + priority_class +
           R"(", "requests": {"cpu": "1"}}]}})";
  };
  const auto sc = parse_scenario(jobs("system-cluster-critical", "{}"), "p.json", ".");
  CHECK(sc.jobs.at(0).priority == 2'000'000'000);
  // ... a scenario may list them (as `kubectl get priorityclasses` shows them) at their values ...
  CHECK(parse_scenario(jobs("system-node-critical", R"({"system-node-critical": 2000001000})"), "p.json", ".").jobs.at(0).priority ==
        2'000'001'000);
  // ... but not at another value, and user classes stop at Kubernetes' limit of 1e9.
  auto e = t::thrown<ScenarioError>([&] { (void)parse_scenario(jobs("a", R"({"system-node-critical": 5})"), "p.json", "."); });
  CHECK(e.id() == "gpusched.scenario_error.203");
  CHECK(e.where().field == "/priority_classes/system-node-critical");
  CHECK_THAT(e.detail(), Catch::Contains("2000001000"));
  e = t::thrown<ScenarioError>([&] { (void)parse_scenario(jobs("a", R"({"a": {"value": 1000000001}})"), "p.json", "."); });
  CHECK(e.id() == "gpusched.scenario_error.211");
  CHECK(e.where().field == "/priority_classes/a/value");
  // An unknown class without spec.priority is still an error naming the job's line.
  CHECK_THROWS_AS(parse_scenario(jobs("nope", "{}"), "p.json", "."), TraceError);
}

TEST_CASE("gpusched whatif prints the table, the pods on request, and JSON", "[scenario][whatif][cli]") {
  const std::string nodes = snapshot("nodes.json").string(), pods = snapshot("pods.json").string();
  const auto table = t::cli({"whatif", "--nodes", nodes, "--pods", pods, "--profiles", "kube-default,binpack"});
  INFO(table.err);
  REQUIRE(table.rc == 0);
  CHECK_THAT(table.out, Catch::Contains("4 bound pods keep their nodes") && Catch::Contains("3 pending pods"));
  CHECK_THAT(table.out, Catch::Contains("kube-default") && Catch::Contains("binpack"));
  CHECK_THAT(table.out, !Catch::Contains("ml/finetune-7b"));
  const auto listed = t::cli({"whatif", "--nodes", nodes, "--pods", pods, "--profiles", "binpack", "--show-pods"});
  REQUIRE(listed.rc == 0);
  CHECK_THAT(listed.out, Catch::Contains("ml/finetune-7b") && Catch::Contains("ml/notebook-ana"));
  const auto json = t::cli({"whatif", "--nodes", nodes, "--pods", pods, "--profiles", "binpack", "--json"});
  REQUIRE(json.rc == 0);
  const auto doc = nlohmann::json::parse(json.out);
  const auto direct = whatif_json(whatif(options({"binpack"})));
  CHECK(doc == direct);
  // Bad input: an unknown profile and a missing file are errors naming them, exit 1.
  const auto bad = t::cli({"whatif", "--nodes", nodes, "--pods", pods, "--profiles", "kube-default,nope"});
  CHECK(bad.rc == 1);
  CHECK_THAT(bad.err, Catch::Contains("nope"));
  const auto missing = t::cli({"whatif", "--nodes", "no-such-nodes.json", "--pods", pods});
  CHECK(missing.rc == 1);
  CHECK_THAT(missing.err, Catch::Contains("no-such-nodes.json"));
}

TEST_CASE("The summary of a snapshot gives the allocation once every job arrived, not a 0 % average over no time",
          "[scenario][whatif][summary]") {
  const auto doc = [](const std::string& duration) {
    return R"({"schema_version": 1, "name": "s", "cluster": {"nodes": [{"name": "n", "cpu": "8", "memory": "8Gi", "gpus": 4,
               "gpu_model": "A100-80GB"}]}, "workload": {"jobs": [
               {"id": "a", "submit_time": 0, )" + duration + R"("requests": {"cpu": "1", "nvidia.com/gpu": 1}},
               {"id": "b", "submit_time": 0, )" + duration + R"("requests": {"cpu": "1", "nvidia.com/gpu": 2}}]}})";
  };
  // Pods that never finish: nothing but the state once they arrived (3 of 4 GPUs).
  const auto frozen = run(parse_scenario(doc(""), "s.json", "."));
  const auto text = format_summary(frozen);
  CHECK_THAT(text, Catch::Contains("GPU alloc  75.0% once every job arrived (all at 0 s; no time passed)"));
  CHECK_THAT(text, !Catch::Contains("while jobs arrived"));
  // Jobs that run: time-weighted to the end, without an empty arrival window.
  const auto ran = format_summary(run(parse_scenario(doc(R"("duration": 100, )"), "s.json", ".")));
  CHECK_THAT(ran, Catch::Contains("% to the end (100 s; every job arrived at 0 s), peak 75.0%"));
  CHECK_THAT(ran, !Catch::Contains("while jobs arrived"));
}

TEST_CASE("whatif --explain: every node's verdict at the pod's last try agrees with the decision and its diagnosis",
          "[scenario][whatif][explain]") {
  auto o = options({"kube-default", "binpack"});
  o.explain = true;
  const auto rows = whatif(o);
  const auto plain = whatif(options({"kube-default", "binpack"}));
  REQUIRE(rows.size() == 2);
  for (std::size_t r = 0; r < rows.size(); ++r) {
    INFO(rows[r].profile);
    for (std::size_t i = 0; i < rows[r].pods.size(); ++i) {
      const auto& p = rows[r].pods[i];
      INFO(p.pod);
      CHECK(p.placement == plain[r].pods[i].placement);   // explaining changes no decision
      CHECK(p.reason == plain[r].pods[i].reason);
      REQUIRE(p.pre_filter.empty());
      // Every node of the snapshot, node order; a pod placed on a retry shows the nodes that
      // gained capacity since (the retry looked at those only).
      if (p.placed) REQUIRE((!p.nodes.empty() && p.nodes.size() <= 4));
      else REQUIRE(p.nodes.size() == 4);
      double best = -1;
      std::string best_node;
      for (const auto& n : p.nodes) {
        INFO(n.node);
        if (!n.feasible) {
          CHECK_FALSE(n.filter.empty());
          CHECK_FALSE(n.reasons.empty());
          CHECK(n.scores.empty());
          continue;
        }
        double sum = 0;
        for (const auto& s : n.scores) {
          CHECK(s.normalized >= 0);
          CHECK(s.normalized <= 100);
          sum += s.weight * s.normalized;
        }
        CHECK(n.total == Approx(sum));
        if (n.total > best) {   // ties: the lowest node wins (kube-default draws among ties)
          best = n.total;
          best_node = n.node;
        }
      }
      if (p.placed) {
        const auto chosen = std::find_if(p.nodes.begin(), p.nodes.end(), [&](const WhatIfNode& n) { return n.node == p.node; });
        REQUIRE(chosen != p.nodes.end());
        CHECK(chosen->feasible);
        CHECK(chosen->total == best);
        if (rows[r].profile == "binpack") CHECK(p.node == best_node);
      } else {
        CHECK(best < 0);   // pending: no node was feasible at its last try
      }
    }
  }
  // The pending data pod: each reason counted in kube-scheduler's message is one node's verdict.
  const auto& etl = rows[0].pods[1];
  REQUIRE_FALSE(etl.placed);
  std::map<std::string, int> count;
  for (const auto& n : etl.nodes) {
    for (const auto& reason : n.reasons) ++count[reason];
  }
  for (const auto& [reason, k] : count) {
    INFO(reason);
    CHECK_THAT(etl.reason, Catch::Contains(std::to_string(k) + " " + reason));
  }
  // The table shows the breakdown under each pod.
  const auto text = format_whatif(rows, true);
  CHECK_THAT(text, Catch::Contains("<- chosen") && Catch::Contains("rejected by"));
}

TEST_CASE("Explaining decisions changes none of them, under every built-in profile", "[scenario][explain][determinism]") {
  for (const auto& name : policies::builtin_profile_names()) {
    INFO(name);
    Scenario sc = load_scenario(t::example("small.json"));
    sc.profile = policies::builtin_profile(name);
    sc.document["profile"] = name;
    sc.outputs.event_log = true;
    const auto plain = run(sc);
    sc.explain = true;
    const auto explained = run(sc);
    CHECK(explained.event_log() == plain.event_log());
    CHECK(plain.explanations().empty());
    CHECK_FALSE(explained.explanations().empty());
    for (const auto& e : explained.explanations()) {
      if (e.pre_filter.ok() && !e.narrowed) CHECK(e.nodes.size() == explained.engine().cluster().node_count());
      if (e.narrowed) CHECK(e.nodes.size() < explained.engine().cluster().node_count());
    }
  }
}

namespace {
/// pods.json plus two pending pods asking one whole GPU each: one annotated with the GPU memory
/// it uses, one running an image the test gives a default for.
std::filesystem::path with_small_gpu_pods(t::TempDir& dir, const std::string& annotation = "5Gi") {
  auto doc = nlohmann::json::parse(t::read_file(snapshot("pods.json")));
  const auto pod = [](const std::string& name, const nlohmann::json& annotations, const std::string& image) {
    return nlohmann::json{
        {"apiVersion", "v1"},
        {"kind", "Pod"},
        {"metadata", {{"name", name}, {"namespace", "ml"}, {"creationTimestamp", "2024-06-01T00:00:00Z"}, {"annotations", annotations}}},
        {"spec",
         {{"containers",
           {{{"name", "main"},
             {"image", image},
             {"resources", {{"requests", {{"cpu", "100m"}, {"memory", "100Mi"}, {"nvidia.com/gpu", "1"}}},
                            {"limits", {{"nvidia.com/gpu", "1"}}}}}}}}}},
        {"status", {{"phase", "Pending"}}}};
  };
  doc["items"].push_back(pod("infer-a", {{"gpusched.io/gpu-memory", annotation}}, "registry.example:5000/infer:1.2"));
  doc["items"].push_back(pod("infer-b", nlohmann::json::object(), "nvcr.io/nvidia/pytorch:24.01-py3"));
  return dir.write("pods.json", doc.dump(2));
}
}  // namespace

TEST_CASE("whatif --as-gpu-mem asks one-GPU pods for the GPU memory they use: annotation, image default, default",
          "[scenario][whatif][gpu-mem]") {
  t::TempDir dir;
  auto o = options({"gpushare-binpack"});
  o.pods = with_small_gpu_pods(dir);
  // As they are: the T4 node's one GPU is the ranker's, the A100 nodes are tainted: both stay pending.
  const auto whole = whatif(o);
  REQUIRE(whole[0].pods.size() == 5);
  CHECK_FALSE(whole[0].pods[3].placed);
  CHECK_FALSE(whole[0].pods[4].placed);
  CHECK(whole[0].converted == 0);
  // As gpushare pods: infer-a by its annotation (5Gi), infer-b by its image without the tag (3Gi),
  // the bound ranker pod by the default (4Gi, it stays on its node): 12 GiB of the T4's 15.
  o.as_gpu_mem = true;
  o.gpu_mem_by_image["nvcr.io/nvidia/pytorch"] = 3072;
  o.gpu_mem_default_mib = 4096;
  const auto shared = whatif(o);
  CHECK(shared[0].converted == 3);
  REQUIRE(shared[0].pods.size() == 5);
  for (std::size_t i : {3, 4}) {
    INFO(shared[0].pods[i].pod);
    CHECK(shared[0].pods[i].placed);
    CHECK(shared[0].pods[i].node == "gpu-t4-0");
  }
  CHECK(shared[0].placed == whole[0].placed + 2);
  // The ranker's whole T4 (all its memory) became 4 GiB: less GPU memory held, two more pods running.
  CHECK(shared[0].gpu_memory_alloc_pct < whole[0].gpu_memory_alloc_pct);
  CHECK(shared[0].gpus_busy == whole[0].gpus_busy);   // packed onto the GPU the ranker already used
  // Without a default the ranker keeps its whole T4 and nothing fits beside it.
  o.gpu_mem_default_mib = 0;
  const auto no_default = whatif(o);
  CHECK(no_default[0].converted == 2);
  CHECK_FALSE(no_default[0].pods[3].placed);
  // A malformed annotation names the file and the field.
  t::TempDir bad_dir;
  o.pods = with_small_gpu_pods(bad_dir, "lots");
  const auto e = t::thrown<Error>([&] { (void)whatif(o); });
  CHECK_THAT(std::string(e.what()), Catch::Contains("pods.json") && Catch::Contains("gpusched.io/gpu-memory"));
}

TEST_CASE("whatif --events sets each pending pod's last FailedScheduling message beside the profile's reason",
          "[scenario][whatif]") {
  // tests/data/kubernetes/events.json: two FailedScheduling events for etl-nightly (the later
  // one in kube-default's words for this snapshot), one events.k8s.io/v1 event for notebook-ana,
  // and events that are not FailedScheduling for a pod (Scheduled, a Node's).
  auto o = options({"kube-default", "binpack"});
  o.events = snapshot("events.json");
  const auto rows = whatif(o);
  REQUIRE(rows.size() == 2);
  const auto& kube = rows[0];
  CHECK(kube.kube_reasons == 2);
  CHECK(kube.same_reason == 1);   // etl-nightly: the same text; notebook-ana: kube-default places it
  std::map<std::string, WhatIfPod> by;
  for (const auto& p : kube.pods) by[p.pod] = p;
  CHECK(by["data/etl-nightly-28573440-abcde"].kube_reason == by["data/etl-nightly-28573440-abcde"].reason);
  CHECK_THAT(by["data/etl-nightly-28573440-abcde"].kube_reason, Catch::Contains("1 Insufficient memory"));   // the later event
  CHECK_THAT(by["ml/notebook-ana"].kube_reason, Catch::StartsWith("0/4 nodes are available: 4 Insufficient nvidia.com/mig-1g.5gb"));
  CHECK(by["ml/finetune-7b"].kube_reason.empty());
  CHECK(rows[1].kube_reasons == 2);   // the events are the cluster's, whatever the profile
  const auto table = format_whatif(rows, true);
  CHECK_THAT(table, Catch::Contains("same reason as kube-scheduler") && Catch::Contains("kube-scheduler said the same: 0/4"));
  const auto j = whatif_json(rows);
  CHECK(j["rows"][0]["same_reason"] == 1);
  // Without events nothing changes: no column, no message.
  const auto plain = whatif(options({"kube-default"}));
  CHECK(plain[0].kube_reasons == 0);
  CHECK_THAT(format_whatif(plain, true), !Catch::Contains("kube-scheduler said"));
  // A bad events file names itself.
  t::TempDir dir;
  o.events = dir.write("events.json", "{\"items\": 3}");
  CHECK_THAT(t::error_message<TraceError>([&] { (void)whatif(o); }), Catch::Contains("events.json") && Catch::Contains("Event"));
  o.events = dir.path() / "missing.json";
  CHECK_THAT(t::error_message<TraceError>([&] { (void)whatif(o); }), Catch::Contains("--events"));
}
