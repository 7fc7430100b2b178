// The scheduler extender's protocol (scenario/extender.hpp, `gpusched serve`) without the
// network: request bodies shaped as k8s.io/kube-scheduler/extender/v1's types marshal them
// (ExtenderArgs, ExtenderFilterResult, HostPriorityList, ExtenderBindingArgs), on the snapshot in
// tests/data/kubernetes. The HTTP layer itself is tested from Python (tests/python/test_serve.py).
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include <gpusched/scenario/extender.hpp>
#include <gpusched/scenario/scenario.hpp>
#include <gpusched/scenario/whatif.hpp>
#include <gpusched/sim/outputs.hpp>

#include "support/support.hpp"

using namespace gpusched;
using namespace gpusched::scenario;
using nlohmann::json;
namespace t = gpusched::test;

namespace {

std::filesystem::path snapshot(const char* file) { return t::source_dir() / "tests" / "data" / "kubernetes" / file; }

Extender make(const std::string& profile, bool with_pods = true) {
  ExtenderOptions o;
  o.profile = profile;
  o.nodes = snapshot("nodes.json");
  if (with_pods) o.pods = snapshot("pods.json");
  return Extender(o);
}

json pods_doc() { return json::parse(t::read_file(snapshot("pods.json"))); }

/// The snapshot's pod `name` as kube-scheduler sends it.
json pod(const std::string& name) {
  const json doc = pods_doc();
  for (auto p : doc["items"]) {
    if (p["metadata"]["name"] == name) {
      // As kube-scheduler sends it: from its informer cache, without status or TypeMeta.
      p.erase("status");
      p.erase("kind");
      p.erase("apiVersion");
      return p;
    }
  }
  FAIL("no pod " << name << " in pods.json");
  return {};
}

const std::vector<std::string> kNodes = {"gpu-a100-0", "gpu-t4-0", "cpu-0", "mig-a100-0"};

json post(Extender& e, const char* path, const json& body, int status = 200) {
  const auto r = e.handle("POST", path, body.dump());
  INFO(path << " -> " << r.status << " " << r.body);
  REQUIRE(r.status == status);
  return json::parse(r.body);
}

/// An unlabelled counter or gauge of the extender's /metrics.
std::uint64_t metric_value(Extender& e, const std::string& name) {
  const auto m = e.handle("GET", "/metrics", "").body;
  const auto at = m.find("\n" + name + " ");
  REQUIRE(at != std::string::npos);
  return std::stoull(m.substr(at + name.size() + 2));
}

/// The snapshot through `gpusched run`'s path: pending pods' nodes by pod name ("" = pending).
std::map<std::string, std::string> run_nodes(const std::string& profile) {
  const json doc = {{"schema_version", 1},
                    {"name", "snap"},
                    {"seed", 42},
                    {"cluster", {{"import", {{{"path", snapshot("nodes.json").string()}, {"format", "kubectl-nodes"}}}}}},
                    {"workload", {{"trace", {{"path", snapshot("pods.json").string()}, {"format", "kubectl-pods"}}}}},
                    {"profile", profile}};
  Scenario sc = parse_scenario(doc, "snap.json", ".");
  sc.keep_unplaceable = true;
  for (auto& j : sc.jobs) j.duration = SimTime::forever();
  std::map<std::string, std::string> out;
  for (const auto& r : run(sc).jobs()) out[r.job] = r.placement.substr(0, r.placement.find('['));
  return out;
}

/// A node list of three untainted copies of the snapshot's A100 node: a100-a, a100-b, a100-c.
json three_a100_nodes() {
  const json src = json::parse(t::read_file(snapshot("nodes.json")));
  json base;
  for (const auto& n : src["items"]) {
    if (n["metadata"]["name"] == "gpu-a100-0") base = n;
  }
  base["spec"].erase("taints");
  json nodes = {{"apiVersion", "v1"}, {"kind", "List"}, {"items", json::array()}};
  for (const char* name : {"a100-a", "a100-b", "a100-c"}) {
    json n = base;
    n["metadata"]["name"] = name;
    n["metadata"]["labels"]["kubernetes.io/hostname"] = name;
    nodes["items"].push_back(n);
  }
  return nodes;
}

/// binpack in shadow mode on three_a100_nodes() (written into `dir`), logging into `lines`.
ExtenderOptions shadow_binpack_on_three_a100s(const t::TempDir& dir, std::vector<std::string>& lines) {
  const auto nodes_path = dir.path() / "nodes.json";
  std::ofstream(nodes_path) << three_a100_nodes().dump();
  ExtenderOptions o;
  o.profile = "binpack";
  o.nodes = nodes_path;
  o.shadow = true;
  o.log = [&lines](const std::string& line) { lines.push_back(line); };
  return o;
}

}  // namespace

TEST_CASE("Extender: each pending pod through filter, prioritize and bind lands where gpusched run puts it",
          "[scenario][extender]") {
  // kube-scheduler's cycle for one pod: filter on every node, prioritize the survivors, bind to
  // the best. With the extender's scores deciding (a large extender weight), each pod goes
  // where the profile puts it in a `gpusched run` of the same snapshot, oldest pod first.
  for (const char* profile : {"binpack", "fgd", "kube-default", "first-fit"}) {
    INFO("profile " << profile);
    auto e = make(profile);
    const auto expected = run_nodes(profile);
    CHECK(e.pod_count() == 4);   // the snapshot's running pods (the Succeeded one is skipped)
    // Oldest first, as the importer and kube-scheduler's queue order them (creationTimestamp).
    for (const char* name : {"notebook-ana", "etl-nightly-28573440-abcde", "finetune-7b"}) {
      INFO("pod " << name);
      const json p = pod(name);
      const std::string key = p["metadata"]["namespace"].get<std::string>() + "/" + name;
      const auto filtered = post(e, "/filter", {{"Pod", p}, {"NodeNames", kNodes}});
      CHECK(filtered["Error"] == "");
      CHECK(filtered["Nodes"].is_null());
      // Every candidate is either kept or failed, once.
      std::vector<std::string> seen = filtered["NodeNames"].get<std::vector<std::string>>();
      for (const auto& [node, why] : filtered["FailedNodes"].items()) {
        CHECK_FALSE(why.get<std::string>().empty());
        seen.push_back(node);
      }
      for (const auto& [node, why] : filtered["FailedAndUnresolvableNodes"].items()) seen.push_back(node);
      std::sort(seen.begin(), seen.end());
      auto all = kNodes;
      std::sort(all.begin(), all.end());
      CHECK(seen == all);
      const auto want = expected.at(key);
      if (want.empty()) {
        CHECK(filtered["NodeNames"].empty());
        continue;
      }
      const auto scores = post(e, "/prioritize", {{"Pod", p}, {"NodeNames", filtered["NodeNames"]}});
      REQUIRE(scores.is_array());
      REQUIRE(scores.size() == filtered["NodeNames"].size());
      std::string best;
      std::int64_t top = -1;
      for (const auto& h : scores) {
        CHECK(h["Score"].get<std::int64_t>() >= 0);
        CHECK(h["Score"].get<std::int64_t>() <= 10);
        if (h["Score"].get<std::int64_t>() > top) {
          top = h["Score"].get<std::int64_t>();
          best = h["Host"].get<std::string>();
        }
      }
      CHECK(top == 10);
      CHECK(best == want);
      const auto bound = post(e, "/bind", {{"PodName", name}, {"PodNamespace", p["metadata"]["namespace"]}, {"PodUID", "u"}, {"Node", best}});
      CHECK(bound == json{{"Error", ""}});
    }
    // The pods the extender holds now: the snapshot's and the ones it bound, on those nodes.
    const auto held = json::parse(e.handle("GET", "/pods", "").body);
    std::map<std::string, std::string> where;
    for (const auto& h : held) where[h["pod"]] = h["node"];
    for (const auto& [key, node] : expected) {
      if (!node.empty()) CHECK(where[key] == node);
    }
  }
}

TEST_CASE("Extender filter: Node objects come back whole; unknown and cordoned nodes are unresolvable", "[scenario][extender]") {
  auto e = make("kube-default");
  json list = {{"apiVersion", "v1"}, {"kind", "NodeList"}, {"items", json::array()}};
  const json nodes = json::parse(t::read_file(snapshot("nodes.json")));
  for (const auto& n : nodes["items"]) list["items"].push_back(n);
  list["items"].push_back({{"metadata", {{"name", "gpu-new-7"}}}});
  const auto r = post(e, "/filter", {{"Pod", pod("etl-nightly-28573440-abcde")}, {"Nodes", list}});
  CHECK(r["NodeNames"].is_null());
  REQUIRE(r["Nodes"]["items"].is_array());
  CHECK(r["Nodes"]["kind"] == "NodeList");
  for (const auto& n : r["Nodes"]["items"]) CHECK(n.contains("status"));   // the object as sent
  CHECK(r["FailedAndUnresolvableNodes"]["gpu-new-7"] == "node unknown to gpusched (not in its snapshot)");
  // cpu-0 is cordoned: NodeUnschedulable is UnschedulableAndUnresolvable in kube-scheduler.
  CHECK(r["FailedAndUnresolvableNodes"].contains("cpu-0"));
  // gpu-a100-0's NoSchedule taint is not tolerated by the ETL pod.
  CHECK_THAT(r["FailedAndUnresolvableNodes"].value("gpu-a100-0", std::string()), Catch::Contains("untolerated taint"));
}

TEST_CASE("Extender: bad requests get 400/404/405 with a JSON error and the CLI's error ids; the extender keeps serving",
          "[scenario][extender]") {
  auto e = make("binpack");
  auto check = [&](std::string_view method, std::string_view path, std::string_view body, int status, const char* id, const char* says) {
    const auto r = e.handle(method, path, body);
    INFO(method << " " << path << " " << body << " -> " << r.body);
    CHECK(r.status == status);
    const auto j = json::parse(r.body);
    CHECK_THAT(j["Error"].get<std::string>(), Catch::Contains(says));
    if (id != nullptr) CHECK(j["error_id"] == id);
    else CHECK_FALSE(j.contains("error_id"));
  };
  check("POST", "/filter", "{\"Pod\": ", 400, "gpusched.trace_error.102", "request body");
  check("POST", "/filter", "[1, 2]", 400, "gpusched.trace_error.102", "expected a JSON object");
  check("POST", "/filter", json{{"Pod", pod("finetune-7b")}}.dump(), 400, "gpusched.trace_error.102", "NodeNames");
  check("POST", "/filter", json{{"Pod", pod("finetune-7b")}, {"NodeNames", 5}}.dump(), 400, "gpusched.trace_error.102", "'NodeNames' must be an array");
  check("POST", "/filter", json{{"NodeNames", kNodes}}.dump(), 400, "gpusched.trace_error.102", "field 'Pod' is missing");
  auto bad_cpu = pod("finetune-7b");
  bad_cpu["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "12x";
  check("POST", "/prioritize", json{{"Pod", bad_cpu}, {"NodeNames", kNodes}}.dump(), 400, "gpusched.trace_error.102", "is not a CPU quantity");
  auto negative = pod("finetune-7b");
  negative["spec"]["containers"][0]["resources"]["requests"]["memory"] = "-2Gi";
  check("POST", "/filter", json{{"Pod", negative}, {"NodeNames", kNodes}}.dump(), 400, "gpusched.trace_error.104", "memory");
  check("POST", "/bind", json{{"PodName", 7}, {"Node", "gpu-t4-0"}}.dump(), 400, "gpusched.trace_error.102", "'PodName' must be a string");
  check("GET", "/nope", "", 404, nullptr, "no such path");
  check("GET", "/filter", "", 405, nullptr, "takes POST");
  check("POST", "/healthz", "", 405, nullptr, "takes GET");
  // Binding errors are answered in ExtenderBindingResult.Error (HTTP 200), as kube-scheduler reads them.
  CHECK_THAT(post(e, "/bind", {{"PodName", "ghost"}, {"PodNamespace", "ml"}, {"Node", "gpu-t4-0"}})["Error"].get<std::string>(),
             Catch::Contains("unknown to gpusched"));
  CHECK_THAT(post(e, "/bind", {{"PodName", "finetune-7b"}, {"PodNamespace", "ml"}, {"Node", "gpu-x"}})["Error"].get<std::string>(),
             Catch::Contains("node gpu-x is unknown"));
  CHECK_THAT(post(e, "/bind", {{"PodName", "finetune-7b"}, {"PodNamespace", "ml"}, {"Node", "gpu-t4-0"}})["Error"].get<std::string>(),
             Catch::Contains("does not fit node gpu-t4-0: Insufficient cpu"));
  // Still serving, and every refusal counted.
  CHECK(e.handle("GET", "/healthz", "").body == "ok");
  const auto m = e.handle("GET", "/metrics", "").body;
  CHECK_THAT(m, Catch::Contains("gpusched_extender_requests_total{verb=\"filter\",code=\"400\"} 6"));
  CHECK_THAT(m, Catch::Contains("gpusched_extender_bind_errors_total 3"));
}

TEST_CASE("Extender: a pod that asks for a resource no node has fails every node with kube-scheduler's wording",
          "[scenario][extender]") {
  auto e = make("kube-default");
  auto p = pod("etl-nightly-28573440-abcde");
  p["spec"]["containers"][0]["resources"]["requests"]["example.com/fpga"] = "1";
  const auto r = post(e, "/filter", {{"Pod", p}, {"NodeNames", kNodes}});
  CHECK(r["NodeNames"].empty());
  for (const auto& n : kNodes) CHECK(r["FailedAndUnresolvableNodes"][n] == "Insufficient example.com/fpga");
}

TEST_CASE("Extender: /pods/delete frees a pod's devices for the next one; metrics count decisions and bindings",
          "[scenario][extender]") {
  auto e = make("binpack", false);   // no pods: an empty cluster
  CHECK(e.pod_count() == 0);
  // Fill the T4 node's one GPU, free it, fill it again.
  auto p = pod("ranker-5f7c9d8b6-qz4lm");
  p["spec"].erase("nodeName");
  const std::vector<std::string> t4 = {"gpu-t4-0"};
  CHECK(post(e, "/filter", {{"Pod", p}, {"NodeNames", t4}})["NodeNames"] == json(t4));
  CHECK(post(e, "/bind", {{"PodName", "ranker-5f7c9d8b6-qz4lm"}, {"PodNamespace", "ml"}, {"Node", "gpu-t4-0"}})["Error"] == "");
  CHECK(e.pod_count() == 1);
  auto q = p;
  q["metadata"]["name"] = "ranker-2";
  const auto full = post(e, "/filter", {{"Pod", q}, {"NodeNames", t4}});
  CHECK(full["NodeNames"].empty());
  CHECK_THAT(full["FailedNodes"]["gpu-t4-0"].get<std::string>(), Catch::Contains("nvidia.com/gpu"));
  CHECK(post(e, "/pods/delete", {{"PodName", "ranker-5f7c9d8b6-qz4lm"}, {"PodNamespace", "ml"}})["Error"] == "");
  CHECK(e.pod_count() == 0);
  CHECK(post(e, "/filter", {{"Pod", q}, {"NodeNames", t4}})["NodeNames"] == json(t4));
  CHECK(post(e, "/bind", {{"PodName", "ranker-2"}, {"PodNamespace", "ml"}, {"Node", "gpu-t4-0"}})["Error"] == "");
  CHECK_THAT(post(e, "/pods/delete", {{"PodName", "nobody"}, {"PodNamespace", "ml"}})["Error"].get<std::string>(),
             Catch::Contains("holds no devices"));
  const auto m = e.handle("GET", "/metrics", "").body;
  CHECK_THAT(m, Catch::Contains("gpusched_extender_bindings_total 2"));
  CHECK_THAT(m, Catch::Contains("gpusched_extender_deletions_total 1"));
  CHECK_THAT(m, Catch::Contains("gpusched_extender_pods 1"));
  CHECK_THAT(m, Catch::Contains("gpusched_extender_request_duration_seconds_count{verb=\"filter\"} 3"));
  CHECK_THAT(m, Catch::Contains("gpusched_extender_request_duration_seconds_bucket{verb=\"bind\",le=\"+Inf\"} 2"));
}

TEST_CASE("Extender: parallel requests are answered and never over-commit a node", "[scenario][extender]") {
  // Eight threads each try to bind their own one-GPU pod to the T4 node (one GPU): exactly one
  // binding succeeds, whatever the interleaving.
  auto e = make("binpack", false);
  auto base = pod("ranker-5f7c9d8b6-qz4lm");
  base["spec"].erase("nodeName");
  std::vector<std::thread> threads;
  std::vector<std::string> errors(8);
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&, i] {
      auto p = base;
      p["metadata"]["name"] = "r" + std::to_string(i);
      e.handle("POST", "/filter", json{{"Pod", p}, {"NodeNames", kNodes}}.dump());
      const auto r = e.handle("POST", "/bind", json{{"PodName", "r" + std::to_string(i)}, {"PodNamespace", "ml"}, {"Node", "gpu-t4-0"}}.dump());
      errors[static_cast<std::size_t>(i)] = json::parse(r.body)["Error"].get<std::string>();
    });
  }
  for (auto& th : threads) th.join();
  CHECK(std::count(errors.begin(), errors.end(), "") == 1);
  CHECK(e.pod_count() == 1);
}

TEST_CASE("Extender: a bad snapshot or profile is refused at start with the CLI's errors", "[scenario][extender]") {
  ExtenderOptions o;
  o.nodes = snapshot("bad-gpu-product.json");
  CHECK_THROWS_WITH(Extender(o), Catch::Contains("gpusched.trace_error.105"));
  o.nodes = snapshot("nodes.json");
  o.profile = "no-such-profile";
  CHECK_THROWS_WITH(Extender(o), Catch::Contains("gpusched.profile_error.306"));
}

TEST_CASE("Extender prioritize: among several feasible nodes the profile's choice gets 10 (binpack fills, spread spreads)",
          "[scenario][extender]") {
  // Three untainted copies of the snapshot's A100 node; the middle one already runs a 4-GPU pod.
  // A new one-GPU pod: binpack (least free GPU memory) picks the busy node, spread (least
  // allocated) the first empty one; `gpusched whatif`'s run of the same snapshot agrees.
  t::TempDir dir;
  const auto nodes = three_a100_nodes();
  json busy = pod("train-llama-0");
  busy["kind"] = "Pod";
  busy["spec"]["nodeName"] = "a100-b";
  busy["status"] = {{"phase", "Running"}};
  json newcomer = pod("ranker-5f7c9d8b6-qz4lm");
  newcomer["metadata"]["name"] = "one-gpu";
  newcomer["metadata"]["creationTimestamp"] = "2024-06-01T00:00:00Z";
  newcomer["spec"].erase("nodeName");
  json pending = newcomer;
  pending["kind"] = "Pod";
  pending["status"] = {{"phase", "Pending"}};
  const json pods = {{"apiVersion", "v1"}, {"kind", "List"}, {"items", {busy, pending}}};
  const auto nodes_path = dir.path() / "nodes.json", pods_path = dir.path() / "pods.json";
  std::ofstream(nodes_path) << nodes.dump();
  std::ofstream(pods_path) << pods.dump();
  const std::vector<std::string> names = {"a100-a", "a100-b", "a100-c"};
  for (const auto& [profile, want] : std::vector<std::pair<std::string, std::string>>{{"binpack", "a100-b"}, {"spread", "a100-a"}}) {
    INFO(profile);
    WhatIfOptions w;
    w.nodes = nodes_path;
    w.pods = pods_path;
    w.profiles = {profile};
    const auto rows = whatif(w);
    REQUIRE(rows.size() == 1);
    REQUIRE(rows[0].pods.size() == 1);
    CHECK(rows[0].pods[0].node == want);
    ExtenderOptions o;
    o.profile = profile;
    o.nodes = nodes_path;
    o.pods = pods_path;
    Extender e(o);
    CHECK(post(e, "/filter", {{"Pod", newcomer}, {"NodeNames", names}})["NodeNames"] == json(names));
    const auto scores = post(e, "/prioritize", {{"Pod", newcomer}, {"NodeNames", names}});
    for (const auto& h : scores) {
      INFO(h.dump());
      if (h["Host"] == want) CHECK(h["Score"] == 10);
      else CHECK(h["Score"].get<int>() < 10);
    }
  }
}

TEST_CASE("Extender shadow mode: each bind goes where kube-scheduler asked, next to the profile's own choice, and "
          "a counterfactual cluster takes the profile's placements",
          "[scenario][extender]") {
  // Three empty A100 nodes (untainted copies of the snapshot's) and binpack: the first pod may go
  // anywhere (binpack's choice: a100-a, node order); kube-scheduler sends it to a100-c. The
  // second pod: binpack now prefers a100-c (the fuller node), and kube-scheduler agrees.
  t::TempDir dir;
  std::vector<std::string> lines;
  ExtenderOptions o = shadow_binpack_on_three_a100s(dir, lines);
  Extender e(o);
  json p = pod("ranker-5f7c9d8b6-qz4lm");
  p["spec"].erase("nodeName");
  const std::vector<std::string> names = {"a100-a", "a100-b", "a100-c"};
  for (const auto& [name, kube] : std::vector<std::pair<std::string, std::string>>{{"one", "a100-c"}, {"two", "a100-c"}}) {
    p["metadata"]["name"] = name;
    post(e, "/filter", {{"Pod", p}, {"NodeNames", names}});
    CHECK(post(e, "/bind", {{"PodName", name}, {"PodNamespace", "ml"}, {"Node", kube}})["Error"] == "");
  }
  REQUIRE(lines.size() == 2);
  CHECK(json::parse(lines[0]) == json{{"pod", "ml/one"}, {"kube_node", "a100-c"}, {"gpusched_node", "a100-a"}, {"agree", false}});
  CHECK(json::parse(lines[1]) == json{{"pod", "ml/two"}, {"kube_node", "a100-c"}, {"gpusched_node", "a100-c"}, {"agree", true}});
  const auto s = json::parse(e.handle("GET", "/shadow", "").body);
  CHECK(s["binds"] == 2);
  CHECK(s["agree"] == 1);
  CHECK(s["agreement_pct"] == 50.0);
  // Both clusters hold two one-GPU pods of 24 GPUs: the same allocation, whatever the nodes.
  CHECK(s["kube"]["gpu_alloc_pct"].get<double>() == Approx(100.0 * 2 / 24));
  CHECK(s["gpusched"]["gpu_alloc_pct"].get<double>() == Approx(100.0 * 2 / 24));
  // The real cluster holds both on a100-c, where kube-scheduler bound them.
  const auto held = json::parse(e.handle("GET", "/pods", "").body);
  for (const auto& h : held) CHECK(h["node"] == "a100-c");
  CHECK(post(e, "/pods/delete", {{"PodName", "one"}, {"PodNamespace", "ml"}})["Error"] == "");
  CHECK(json::parse(e.handle("GET", "/shadow", "").body)["gpusched"]["gpu_alloc_pct"].get<double>() == Approx(100.0 / 24));
  // Without --shadow there is no such page.
  auto plain = make("binpack");
  CHECK(plain.handle("GET", "/shadow", "").status == 404);
}

TEST_CASE("Extender /pods: a GPU-memory share carries gpushare's annotations for its device plugin", "[scenario][extender]") {
  // gpushare-scheduler-extender's PatchPodAnnotationSpec (pkg/utils/pod.go): ALIYUN_COM_GPU_MEM_IDX
  // (the GPU), _POD and _DEV (the pod's and the GPU's memory, GiB), _ASSIGNED "false", _ASSUME_TIME.
  auto e = make("gpushare-binpack", false);
  auto p = pod("ranker-5f7c9d8b6-qz4lm");
  p["spec"].erase("nodeName");
  p["spec"]["containers"][0]["resources"] = {{"limits", {{"aliyun.com/gpu-mem", "6"}}}};
  const std::vector<std::string> t4 = {"gpu-t4-0"};
  CHECK(post(e, "/filter", {{"Pod", p}, {"NodeNames", t4}})["NodeNames"] == json(t4));
  CHECK(post(e, "/bind", {{"PodName", "ranker-5f7c9d8b6-qz4lm"}, {"PodNamespace", "ml"}, {"Node", "gpu-t4-0"}})["Error"] == "");
  const auto held = json::parse(e.handle("GET", "/pods", "").body);
  REQUIRE(held.size() == 1);
  const auto& a = held[0]["annotations"];
  CHECK(a["ALIYUN_COM_GPU_MEM_IDX"] == "0");
  CHECK(a["ALIYUN_COM_GPU_MEM_POD"] == "6");
  CHECK(a["ALIYUN_COM_GPU_MEM_DEV"] == "16");   // Tesla T4: 16384 MiB in the catalog
  CHECK(a["ALIYUN_COM_GPU_MEM_ASSIGNED"] == "false");
  CHECK(std::stoll(a["ALIYUN_COM_GPU_MEM_ASSUME_TIME"].get<std::string>()) > 1'600'000'000'000'000'000LL);
  // A whole-GPU pod has none (the NVIDIA device plugin picks the GPU itself).
  auto e2 = make("gpushare-binpack", false);
  auto q = pod("ranker-5f7c9d8b6-qz4lm");
  q["spec"].erase("nodeName");
  post(e2, "/filter", {{"Pod", q}, {"NodeNames", t4}});
  CHECK(post(e2, "/bind", {{"PodName", "ranker-5f7c9d8b6-qz4lm"}, {"PodNamespace", "ml"}, {"Node", "gpu-t4-0"}})["Error"] == "");
  CHECK(json::parse(e2.handle("GET", "/pods", "").body)[0]["annotations"].empty());
}

TEST_CASE("Extender preempt: of the proposed nodes, those where the pod fits once victims are gone, with the fewest victims",
          "[scenario][extender]") {
  // gpu-a100-0 runs train-llama-0 (4 of its 8 GPUs) and the device-plugin pod (no GPU). An
  // 8-GPU pod that tolerates the node's taints fits only once train-llama-0 is gone.
  auto e = make("kube-default");
  auto big = pod("finetune-7b");
  big["metadata"]["name"] = "big";
  big["metadata"]["uid"] = "uid-big";
  big["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = "8";
  big["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "8";
  big["spec"]["containers"][0]["resources"]["requests"]["memory"] = "64Gi";
  const std::vector<std::string> a100 = {"gpu-a100-0"};
  const auto f = post(e, "/filter", {{"Pod", big}, {"NodeNames", a100}});
  REQUIRE(f["NodeNames"].empty());   // it needs preemption
  const std::string llama = "a1f0c3d2-2222-4e5f-8a9b-0c1d2e3f4a02", plugin = "a1f0c3d2-1111-4e5f-8a9b-0c1d2e3f4a01";
  const json meta = {{"gpu-a100-0", {{"Pods", {{{"UID", llama}}}}, {"NumPDBViolations", 1}}},
                     {"gpu-t4-0", {{"Pods", {{{"UID", "a1f0c3d2-3333-4e5f-8a9b-0c1d2e3f4a03"}}}}, {"NumPDBViolations", 0}}},
                     {"gpu-nowhere", {{"Pods", json::array()}, {"NumPDBViolations", 0}}}};
  const auto r = post(e, "/preempt", {{"Pod", big}, {"NodeNameToMetaVictims", meta}});
  // Kept: the A100 node with its victim; dropped: the T4 node (one GPU even when empty) and an unknown node.
  CHECK(r == json{{"NodeNameToMetaVictims", {{"gpu-a100-0", {{"Pods", {{{"UID", llama}}}}, {"NumPDBViolations", 1}}}}}});
  // Evicting only the device-plugin pod frees no GPU: the node is dropped.
  const json wrong = {{"gpu-a100-0", {{"Pods", {{{"UID", plugin}}}}, {"NumPDBViolations", 0}}}};
  CHECK(post(e, "/preempt", {{"Pod", big}, {"NodeNameToMetaVictims", wrong}})["NodeNameToMetaVictims"].empty());
  // Victims as whole Pod objects (nodeCacheCapable false) are found by name.
  json victim = pod("train-llama-0");
  const json full = {{"gpu-a100-0", {{"Pods", {victim}}, {"NumPDBViolations", 0}}}};
  CHECK(post(e, "/preempt", {{"Pod", big}, {"NodeNameToVictims", full}})["NodeNameToMetaVictims"]["gpu-a100-0"]["Pods"] ==
        json{{{"UID", llama}}});
  // More victims than needed: the device-plugin pod is put back (reprieved), as DefaultPreemption's
  // selectVictimsOnNode does; only train-llama-0 goes.
  const json extra = {{"gpu-a100-0", {{"Pods", {{{"UID", plugin}}, {{"UID", llama}}}}, {"NumPDBViolations", 0}}}};
  CHECK(post(e, "/preempt", {{"Pod", big}, {"NodeNameToMetaVictims", extra}})["NodeNameToMetaVictims"]["gpu-a100-0"]["Pods"] ==
        json{{{"UID", llama}}});
  // A victim the extender does not hold is kept as proposed: it cannot judge it.
  const json stranger = {{"gpu-a100-0", {{"Pods", {{{"UID", llama}}, {{"UID", "uid-unknown"}}}}, {"NumPDBViolations", 0}}}};
  CHECK(post(e, "/preempt", {{"Pod", big}, {"NodeNameToMetaVictims", stranger}})["NodeNameToMetaVictims"]["gpu-a100-0"]["Pods"] ==
        json{{{"UID", "uid-unknown"}}, {{"UID", llama}}});
  // Too few victims for gpusched's view: with a priority above train-llama-0's (1000), the pod
  // gets it added; below it (big's 500, above), the node was dropped.
  auto urgent = big;
  urgent["metadata"]["name"] = "urgent";
  urgent["metadata"]["uid"] = "uid-urgent";
  urgent["spec"]["priority"] = 5000;
  urgent["spec"].erase("priorityClassName");
  CHECK(post(e, "/preempt", {{"Pod", urgent}, {"NodeNameToMetaVictims", wrong}})["NodeNameToMetaVictims"] ==
        json{{"gpu-a100-0", {{"Pods", {{{"UID", llama}}}}, {"NumPDBViolations", 0}}}});
  // Nothing was evicted for real: the pod still does not fit.
  CHECK(post(e, "/filter", {{"Pod", big}, {"NodeNames", a100}})["NodeNames"].empty());
  // Bad shapes are 400.
  post(e, "/preempt", {{"Pod", big}}, 400);
  post(e, "/preempt", {{"Pod", big}, {"NodeNameToMetaVictims", {{"gpu-a100-0", {{"Pods", 3}}}}}}, 400);
  post(e, "/preempt", {{"Pod", big}, {"NodeNameToMetaVictims", {{"gpu-a100-0", {{"Pods", json::array()}, {"NumPDBViolations", "x"}}}}}}, 400);
}

TEST_CASE("Extender: the NodeNames fast path and the Nodes-object path give the same verdicts and priorities",
          "[scenario][extender]") {
  // NodeNames requests are read by simdjson and answered by a writer of their own; whole Node
  // objects go through nlohmann. Same pod, same cluster: same verdicts, reasons and scores.
  for (const char* profile : {"kube-default", "fgd", "gpushare-binpack"}) {
    INFO("profile " << profile);
    for (const char* name : {"finetune-7b", "etl-nightly-28573440-abcde", "notebook-ana"}) {
      INFO("pod " << name);
      auto a = make(profile);
      auto b = make(profile);
      const json by_name = {{"Pod", pod(name)}, {"NodeNames", kNodes}};
      json objects = json::parse(t::read_file(snapshot("nodes.json")));
      const json by_object = {{"Pod", pod(name)}, {"Nodes", objects}};
      const auto fa = post(a, "/filter", by_name);
      const auto fb = post(b, "/filter", by_object);
      CHECK(fa["FailedNodes"] == fb["FailedNodes"]);
      CHECK(fa["FailedAndUnresolvableNodes"] == fb["FailedAndUnresolvableNodes"]);
      std::vector<std::string> kept;
      for (const auto& n : fb["Nodes"]["items"]) kept.push_back(n["metadata"]["name"].get<std::string>());
      CHECK(fa["NodeNames"].get<std::vector<std::string>>() == kept);
      CHECK(fa["Nodes"].is_null());
      CHECK(fb["NodeNames"].is_null());
      CHECK(post(a, "/prioritize", by_name) == post(b, "/prioritize", by_object));
    }
  }
}

TEST_CASE("Extender: filter and prioritize share one decision until the cluster, the pod or the candidates change",
          "[scenario][extender]") {
  auto e = make("kube-default");
  auto counter = [&](const std::string& name) { return metric_value(e, name); };
  const json args = {{"Pod", pod("finetune-7b")}, {"NodeNames", kNodes}};
  auto d0 = counter("gpusched_extender_decisions_total");
  const auto filtered = post(e, "/filter", args);
  const auto prioritized = post(e, "/prioritize", args);
  CHECK(post(e, "/filter", args) == filtered);   // asked again: the same answer
  CHECK(counter("gpusched_extender_decisions_total") == d0 + 1);
  CHECK(counter("gpusched_extender_answers_reused_total") == 2);
  // Other candidates: decided again, and only those nodes are answered for.
  const json two = {{"Pod", pod("finetune-7b")}, {"NodeNames", {"gpu-a100-0", "cpu-0"}}};
  const auto p2 = post(e, "/prioritize", two);
  CHECK(p2.size() == 2);
  CHECK(counter("gpusched_extender_decisions_total") == d0 + 2);
  // The pod's spec changes (a new resourceVersion and a bigger request): decided again.
  json bigger = pod("finetune-7b");
  bigger["metadata"]["resourceVersion"] = "999";
  post(e, "/filter", {{"Pod", bigger}, {"NodeNames", kNodes}});
  CHECK(counter("gpusched_extender_decisions_total") == d0 + 3);
  CHECK(std::count_if(prioritized.begin(), prioritized.end(), [](const json& h) { return h["Score"] == 10; }) == 1);
  {
    // Whole Node objects (the nlohmann path): the same pod in the same bytes is not read again,
    // so its decision is reused too.
    const json objects = {{"Pod", pod("etl-nightly-28573440-abcde")}, {"Nodes", json::parse(t::read_file(snapshot("nodes.json")))}};
    const auto before = counter("gpusched_extender_decisions_total");
    post(e, "/filter", objects);
    post(e, "/prioritize", objects);
    post(e, "/filter", objects);
    CHECK(counter("gpusched_extender_decisions_total") == before + 1);
    // A key given twice is read as nlohmann reads it (the last), on either path.
    const std::string twice = R"({"Pod":)" + pod("etl-nightly-28573440-abcde").dump() + R"(,"NodeNames":["gpu-a100-0"],"NodeNames":["cpu-0"]})";
    const auto r = json::parse(e.handle("POST", "/filter", twice).body);
    CHECK(r["FailedAndUnresolvableNodes"].contains("cpu-0"));
    CHECK_FALSE(r["FailedAndUnresolvableNodes"].contains("gpu-a100-0"));
    CHECK_FALSE(r["FailedNodes"].contains("gpu-a100-0"));
    d0 += counter("gpusched_extender_decisions_total") - before;   // the checks below count from here
  }
  // A bind (another pending pod of the snapshot) changes the cluster: the first question is
  // decided again.
  const json etl = {{"Pod", pod("notebook-ana")}, {"NodeNames", kNodes}};
  const auto where = post(e, "/prioritize", etl);
  const auto best = std::find_if(where.begin(), where.end(), [](const json& h) { return h["Score"] == 10; });
  REQUIRE(best != where.end());
  CHECK(counter("gpusched_extender_decisions_total") == d0 + 4);
  CHECK(post(e, "/bind", {{"PodName", "notebook-ana"}, {"PodNamespace", "ml"}, {"Node", (*best)["Host"]}})["Error"] == "");
  CHECK(counter("gpusched_extender_decisions_total") == d0 + 5);   // the bind's own
  post(e, "/filter", args);
  CHECK(counter("gpusched_extender_decisions_total") == d0 + 6);
  post(e, "/prioritize", args);
  CHECK(counter("gpusched_extender_decisions_total") == d0 + 6);
}

TEST_CASE("Extender: names that are not nodes come back escaped and listed once", "[scenario][extender]") {
  auto e = make("kube-default");
  const std::vector<std::string> names = {"gpu-a100-0", "no \"such\" node\\\n", "gpu-a100-0", "cpu-0", "no \"such\" node\\\n", "ghost"};
  const auto r = e.handle("POST", "/filter", json{{"Pod", pod("finetune-7b")}, {"NodeNames", names}}.dump());
  REQUIRE(r.status == 200);
  const auto j = json::parse(r.body);   // valid JSON however odd the names
  const auto& unresolvable = j["FailedAndUnresolvableNodes"];
  CHECK(unresolvable.contains("no \"such\" node\\\n"));
  CHECK(unresolvable.contains("ghost"));
  // Each name at most once in the maps: no duplicate keys in the text.
  const std::string escaped = json("no \"such\" node\\\n").dump();
  CHECK(r.body.find(escaped) == r.body.rfind(escaped));
  const auto p = json::parse(e.handle("POST", "/prioritize", json{{"Pod", pod("finetune-7b")}, {"NodeNames", names}}.dump()).body);
  REQUIRE(p.size() == names.size());   // one entry per name given, in order
  for (std::size_t i = 0; i < names.size(); ++i) CHECK(p[i]["Host"] == names[i]);
  CHECK(p[1]["Score"] == 0);
  CHECK(p[5]["Score"] == 0);
}

TEST_CASE("jobs.csv of a snapshot run tells the pods it found bound from those it placed", "[scenario][whatif]") {
  // The operator's question of issue 16: bound-versus-pending, in the job table itself.
  const json doc = {{"schema_version", 1},
                    {"name", "snap"},
                    {"seed", 42},
                    {"cluster", {{"import", {{{"path", snapshot("nodes.json").string()}, {"format", "kubectl-nodes"}}}}}},
                    {"workload", {{"trace", {{"path", snapshot("pods.json").string()}, {"format", "kubectl-pods"}}}}},
                    {"profile", "kube-default"}};
  Scenario sc = parse_scenario(doc, "snap.json", ".");
  sc.keep_unplaceable = true;
  for (auto& j : sc.jobs) j.duration = SimTime::forever();
  const auto result = run(sc);
  std::ostringstream csv;
  sim::write_jobs_csv(csv, result.jobs());
  std::istringstream lines(csv.str());
  std::string line;
  // Fields of a jobs.csv line (placements are quoted: "n0[0,1]").
  const auto fields = [](const std::string& l) {
    std::vector<std::string> out(1);
    bool quoted = false;
    for (char c : l) {
      if (c == '"') quoted = !quoted;
      else if (c == ',' && !quoted) out.emplace_back();
      else out.back() += c;
    }
    return out;
  };
  std::getline(lines, line);
  const auto header = fields(line);
  const auto column = static_cast<std::size_t>(std::find(header.begin(), header.end(), "bound") - header.begin());
  REQUIRE(column < header.size());
  std::map<std::string, std::string> bound;
  while (std::getline(lines, line)) {
    const auto f = fields(line);
    REQUIRE(f.size() == header.size());
    bound[f[0]] = f[column];
  }
  CHECK(bound["ml/train-llama-0"] == "true");
  CHECK(bound["ml/ranker-5f7c9d8b6-qz4lm"] == "true");
  CHECK(bound["default/web-0"] == "true");
  CHECK(bound["ml/finetune-7b"] == "false");
  CHECK(bound["ml/notebook-ana"] == "false");
  CHECK(bound["data/etl-nightly-28573440-abcde"] == "false");
}

TEST_CASE("Extender: a long run forgets deleted and stale pending pods; bound pods keep their devices", "[scenario][extender]") {
  // 10,000 pods through filter, bind and delete, and 3,000 more filtered but never bound: the
  // extender's entries stay bounded (compaction at 4,096 entries, then at twice what it kept),
  // and the pods still bound are where they were bound, deletable by name.
  auto e = make("kube-default");
  auto metric = [&](const std::string& name) { return metric_value(e, name); };
  const json small = {{"metadata", {{"namespace", "data"}}},
                      {"spec",
                       {{"containers",
                         json::array({{{"name", "main"}, {"image", "busybox"},
                                       {"resources", {{"requests", {{"cpu", "10m"}, {"memory", "16Mi"}}}}}}})}}}};
  std::vector<std::string> held;   // bound now
  std::map<std::string, std::string> node_of;
  std::size_t most_known = 0;
  for (int i = 0; i < 13'000; ++i) {
    json p = small;
    const std::string name = "p-" + std::to_string(i);
    p["metadata"]["name"] = name;
    p["metadata"]["uid"] = "uid-" + name;
    const json args = {{"Pod", p}, {"NodeNames", {"gpu-t4-0"}}};
    const auto f = post(e, "/filter", args);
    if (i >= 10'000) continue;   // asked about, never bound
    INFO(f.dump());
    REQUIRE(f["NodeNames"] == json::array({"gpu-t4-0"}));
    REQUIRE(post(e, "/bind", {{"PodName", name}, {"PodNamespace", "data"}, {"Node", "gpu-t4-0"}})["Error"] == "");
    held.push_back(name);
    node_of[name] = "gpu-t4-0";
    if (held.size() > 20) {
      REQUIRE(post(e, "/pods/delete", {{"PodName", held.front()}, {"PodNamespace", "data"}})["Error"] == "");
      node_of.erase(held.front());
      held.erase(held.begin());
    }
    if (i % 500 == 0) most_known = std::max<std::size_t>(most_known, metric("gpusched_extender_pods_known"));
  }
  CHECK(metric("gpusched_extender_pods_forgotten_total") > 8'000);
  CHECK(most_known <= 8'192);
  // The pods still bound are listed where they were bound, with the snapshot's bound pods.
  const auto listed = json::parse(e.handle("GET", "/pods", "").body);
  std::size_t ours = 0;
  for (const auto& p : listed) {
    const auto key = p["pod"].get<std::string>();
    if (key.rfind("data/p-", 0) != 0) continue;
    ++ours;
    CHECK(node_of.at(key.substr(5)) == p["node"]);
  }
  CHECK(ours == held.size());
  CHECK(metric("gpusched_extender_pods") == held.size() + 4);   // and the snapshot's 4 bound pods
  for (const auto& name : held) CHECK(post(e, "/pods/delete", {{"PodName", name}, {"PodNamespace", "data"}})["Error"] == "");
  CHECK(metric("gpusched_extender_pods") == 4);
}

TEST_CASE("Extender: POST /pods/sync learns kube-scheduler's own bindings from a later pod list; shadow mode compares them",
          "[scenario][extender]") {
  // kube-scheduler without bindVerb binds pods itself: the extender hears filter and prioritize,
  // then sees the pods on their nodes in a later `kubectl get pods` list.
  ExtenderOptions o;
  o.profile = "kube-default";
  o.nodes = snapshot("nodes.json");
  o.pods = snapshot("pods.json");
  o.shadow = true;
  std::vector<std::string> logged;
  o.log = [&](const std::string& line) { logged.push_back(line); };
  Extender e(o);
  const json args = {{"Pod", pod("finetune-7b")}, {"NodeNames", kNodes}};
  post(e, "/filter", args);
  const auto scores = post(e, "/prioritize", args);
  std::string ours;
  for (const auto& h : scores) {
    if (h["Score"] == 10) ours = h["Host"];
  }
  REQUIRE_FALSE(ours.empty());
  // The later list: finetune-7b where the profile put it, notebook-ana nowhere yet, a pod the
  // extender never saw on a node, ranker (bound in the first snapshot) where it was.
  json later = pods_doc();
  for (auto& p : later["items"]) {
    if (p["metadata"]["name"] == "finetune-7b") {
      p["spec"]["nodeName"] = ours;
      p["status"]["phase"] = "Running";
    }
  }
  json stranger = later["items"][0];   // the device-plugin pod's twin, on gpu-a100-0
  stranger["metadata"]["name"] = "stranger";
  stranger["metadata"]["uid"] = "uid-stranger";
  later["items"].push_back(stranger);
  json broken = later["items"][0];
  broken["metadata"]["name"] = "broken";
  broken["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "lots";
  later["items"].push_back(broken);
  const auto held_before = json::parse(e.handle("GET", "/pods", "").body).size();
  const auto r = post(e, "/pods/sync", later);
  CHECK(r["bound"] == 1);         // finetune-7b, asked about before
  CHECK(r["added"] == 1);         // stranger, never asked about: read from the list and held
  CHECK(r["already_held"] == 4);  // the first snapshot's bound pods
  REQUIRE(r["refused"].size() == 1);   // broken: its item is refused, the others still apply
  CHECK_THAT(r["refused"]["kube-system/broken"].get<std::string>(), Catch::Contains("CPU quantity"));
  CHECK(json::parse(e.handle("GET", "/pods", "").body).size() == held_before + 2);
  const auto shadow = post(e, "/pods/sync", later);   // again: nothing new
  CHECK(shadow["bound"] == 0);
  CHECK(shadow["added"] == 0);
  CHECK(shadow["already_held"] == 6);
  const auto summary = json::parse(e.handle("GET", "/shadow", "").body);
  CHECK(summary["binds"] == 1);   // the stranger is not compared: nobody asked gpusched about it
  CHECK(summary["agree"] == 1);
  REQUIRE(logged.size() == 1);
  CHECK(json::parse(logged[0])["kube_node"] == ours);
  // A node the pod cannot fit is refused, with the filter's reason, and nothing is bound.
  json cpu = pods_doc();
  for (auto& p : cpu["items"]) {
    if (p["metadata"]["name"] == "notebook-ana") p["spec"]["nodeName"] = "gpu-t4-0";
  }
  const auto refused = post(e, "/pods/sync", cpu);
  CHECK(refused["bound"] == 0);
  CHECK_THAT(refused["refused"]["ml/notebook-ana"].get<std::string>(), Catch::Contains("does not fit node gpu-t4-0"));
  post(e, "/pods/sync", json{{"items", 3}}, 400);
}

TEST_CASE("Extender with a binder: a binding the cluster accepts is kept; a refused one is forgotten and may be retried",
          "[scenario][extender]") {
  // kube-scheduler's assume / bind / ForgetPod: the placement is kept while the binder runs
  // (without the extender's lock: the binder below asks the extender itself), and undone when
  // the binder refuses or throws.
  std::vector<BindingRequest> asked;
  std::string answer;   // what the binder says next ("" accepts)
  bool throws = false;
  std::size_t pods_seen_by_binder = 0;
  Extender* self = nullptr;
  ExtenderOptions o;
  o.profile = "gpushare-binpack";
  o.nodes = snapshot("nodes.json");
  o.binder = [&](const BindingRequest& b) -> std::string {
    asked.push_back(b);
    // Not deadlocked: the lock is not held. The pod is already assumed on the node.
    pods_seen_by_binder = json::parse(self->handle("GET", "/pods", "").body).size();
    if (throws) throw std::runtime_error("connection reset");
    return answer;
  };
  Extender e(o);
  self = &e;
  auto p = pod("ranker-5f7c9d8b6-qz4lm");
  p["spec"].erase("nodeName");
  p["metadata"]["uid"] = "uid-1";
  p["spec"]["containers"][0]["resources"] = {{"limits", {{"aliyun.com/gpu-mem", "6"}}}};
  const std::vector<std::string> t4 = {"gpu-t4-0"};
  const json bind = {{"PodName", "ranker-5f7c9d8b6-qz4lm"}, {"PodNamespace", "ml"}, {"PodUID", "uid-1"}, {"Node", "gpu-t4-0"}};
  CHECK(post(e, "/filter", {{"Pod", p}, {"NodeNames", t4}})["NodeNames"] == json(t4));

  answer = "pods \"ranker-5f7c9d8b6-qz4lm\" is forbidden";
  CHECK(post(e, "/bind", bind)["Error"] ==
        "binding pod ml/ranker-5f7c9d8b6-qz4lm to node gpu-t4-0 failed: pods \"ranker-5f7c9d8b6-qz4lm\" is forbidden");
  REQUIRE(asked.size() == 1);
  CHECK(pods_seen_by_binder == 1);   // assumed while the binder ran
  CHECK(e.pod_count() == 0);         // forgotten after
  CHECK(asked[0].pod_name == "ranker-5f7c9d8b6-qz4lm");
  CHECK(asked[0].pod_namespace == "ml");
  CHECK(asked[0].pod_uid == "uid-1");
  CHECK(asked[0].node == "gpu-t4-0");
  const std::map<std::string, std::string> a(asked[0].annotations.begin(), asked[0].annotations.end());
  CHECK(a.at("ALIYUN_COM_GPU_MEM_IDX") == "0");
  CHECK(a.at("ALIYUN_COM_GPU_MEM_POD") == "6");

  throws = true;
  CHECK_THAT(post(e, "/bind", bind)["Error"].get<std::string>(), Catch::Contains("failed: the binder failed: connection reset"));
  CHECK(e.pod_count() == 0);

  throws = false;
  answer.clear();
  CHECK(post(e, "/bind", bind)["Error"] == "");
  CHECK(e.pod_count() == 1);
  CHECK(asked.size() == 3);
  CHECK(metric_value(e, "gpusched_extender_bindings_total") == 1);
  CHECK(metric_value(e, "gpusched_extender_bind_errors_total") == 2);
  CHECK(metric_value(e, "gpusched_extender_binder_errors_total") == 2);
  // The GPU's memory the first two attempts took was given back: 6 of 16 GiB held, not 18.
  auto q = p;
  q["metadata"]["name"] = "ranker-2";
  q["spec"]["containers"][0]["resources"] = {{"limits", {{"aliyun.com/gpu-mem", "10"}}}};
  CHECK(post(e, "/filter", {{"Pod", q}, {"NodeNames", t4}})["NodeNames"] == json(t4));

  // A pod deleted while its binding is refused stays deleted (nothing to forget twice).
  o.binder = [&](const BindingRequest& b) -> std::string {
    CHECK(self->handle("POST", "/pods/delete", json{{"PodName", b.pod_name}, {"PodNamespace", b.pod_namespace}}.dump()).status == 200);
    return "too late";
  };
  Extender e2(o);
  self = &e2;
  post(e2, "/filter", {{"Pod", p}, {"NodeNames", t4}});
  CHECK_THAT(post(e2, "/bind", bind)["Error"].get<std::string>(), Catch::Contains("failed: too late"));
  CHECK(e2.pod_count() == 0);
  CHECK(metric_value(e2, "gpusched_extender_pods") == 0);
  CHECK(post(e2, "/filter", {{"Pod", q}, {"NodeNames", t4}})["NodeNames"] == json(t4));
}

TEST_CASE("Extender with a binder in shadow mode compares only the bindings the cluster accepted", "[scenario][extender]") {
  t::TempDir dir;
  std::vector<std::string> lines;
  ExtenderOptions o = shadow_binpack_on_three_a100s(dir, lines);
  int calls = 0;
  o.binder = [&](const BindingRequest&) -> std::string { return ++calls == 1 ? "conflict" : ""; };
  Extender e(o);
  json p = pod("ranker-5f7c9d8b6-qz4lm");
  p["spec"].erase("nodeName");
  p["metadata"]["name"] = "one";
  post(e, "/filter", {{"Pod", p}, {"NodeNames", {"a100-a", "a100-b", "a100-c"}}});
  const json bind = {{"PodName", "one"}, {"PodNamespace", "ml"}, {"Node", "a100-c"}};
  CHECK_THAT(post(e, "/bind", bind)["Error"].get<std::string>(), Catch::Contains("conflict"));
  CHECK(lines.empty());
  CHECK(json::parse(e.handle("GET", "/shadow", "").body)["binds"] == 0);
  CHECK(json::parse(e.handle("GET", "/shadow", "").body)["gpusched"]["gpu_alloc_pct"] == 0.0);
  CHECK(post(e, "/bind", bind)["Error"] == "");
  REQUIRE(lines.size() == 1);
  CHECK(json::parse(lines[0])["kube_node"] == "a100-c");
  CHECK(json::parse(e.handle("GET", "/shadow", "").body)["binds"] == 1);
}

namespace {

/// three_a100_nodes() with HAMi's device registration on a100-a (the current JSON form) and
/// a100-b (the older colon form), as its device plugin writes them
/// (pkg/device/devices.go MarshalNodeDevices / EncodeNodeDevices).
json hami_nodes() {
  json nodes = three_a100_nodes();
  json list = json::array();
  std::string legacy;
  for (int i = 0; i < 8; ++i) {
    list.push_back({{"id", "GPU-a-" + std::to_string(i)}, {"index", i}, {"count", 10}, {"devmem", 81920}, {"devcore", 100},
                    {"type", "NVIDIA-NVIDIA A100-SXM4-80GB"}, {"health", true}});
    // Test_DecodeNodeDevices' old 7-field form: id,count,devmem,devcore,type,numa,health
    legacy += "GPU-b-" + std::to_string(i) + ",10,40000,100,NVIDIA-NVIDIA A100-SXM4-80GB,0,true:";
  }
  nodes["items"][0]["metadata"]["annotations"]["hami.io/node-nvidia-register"] = list.dump();
  nodes["items"][1]["metadata"]["annotations"]["hami.io/node-nvidia-register"] = legacy;
  return nodes;
}

}  // namespace

TEST_CASE("Extender /pods: on a node HAMi registered, a pod carries HAMi's device annotations with the GPUs' UUIDs",
          "[scenario][extender]") {
  t::TempDir dir;
  const auto nodes_path = dir.path() / "nodes.json";
  std::ofstream(nodes_path) << hami_nodes().dump();
  ExtenderOptions o;
  o.profile = "binpack";
  o.nodes = nodes_path;
  Extender e(o);
  auto p = pod("ranker-5f7c9d8b6-qz4lm");
  p["spec"].erase("nodeName");
  const auto bind_on = [&](json spec_pod, const std::string& name, const std::string& node) {
    spec_pod["metadata"]["name"] = name;
    post(e, "/filter", {{"Pod", spec_pod}, {"NodeNames", {node}}});
    REQUIRE(post(e, "/bind", {{"PodName", name}, {"PodNamespace", "ml"}, {"Node", node}})["Error"] == "");
  };
  // HAMi's vocabulary: 3000 MiB and 30 % of one GPU.
  auto share = p;
  share["spec"]["containers"][0]["resources"] = {{"limits", {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "3000"}, {"nvidia.com/gpucores", "30"}}}};
  bind_on(share, "share", "a100-a");
  auto two = p;   // two whole GPUs: HAMi's default request, all of each GPU's memory, cores 0
  two["spec"]["containers"][0]["resources"] = {{"limits", {{"nvidia.com/gpu", "2"}}}};
  bind_on(two, "two", "a100-b");
  bind_on(two, "plain", "a100-c");   // not a HAMi node: no HAMi annotations
  std::map<std::string, json> held;
  for (const auto& h : json::parse(e.handle("GET", "/pods", "").body)) held[h["pod"]] = h;
  const auto& a = held.at("ml/share")["annotations"];
  const std::string gpu = "GPU-a-" + std::to_string(held.at("ml/share")["gpus"][0].get<int>());
  // EncodePodSingleDevice: UUID,NVIDIA,memory MiB,cores %, ":" after each device, ";" after the container.
  CHECK(a["hami.io/vgpu-devices-to-allocate"] == gpu + ",NVIDIA,3000,30:;");
  CHECK(a["hami.io/vgpu-devices-allocated"] == a["hami.io/vgpu-devices-to-allocate"]);
  CHECK(a["hami.io/vgpu-node"] == "a100-a");
  CHECK(a["hami.io/bind-phase"] == "allocating");
  const auto now = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  CHECK(std::abs(std::stoll(a["hami.io/vgpu-time"].get<std::string>()) - now) < 600);
  CHECK(a["hami.io/bind-time"] == a["hami.io/vgpu-time"]);
  const auto& b = held.at("ml/two");
  const auto g0 = std::to_string(b["gpus"][0].get<int>()), g1 = std::to_string(b["gpus"][1].get<int>());
  CHECK(b["annotations"]["hami.io/vgpu-devices-to-allocate"] == "GPU-b-" + g0 + ",NVIDIA,40000,0:GPU-b-" + g1 + ",NVIDIA,40000,0:;");
  CHECK(held.at("ml/plain")["annotations"].empty());
}

TEST_CASE("Extender: a HAMi registration that is not one device per GPU, or malformed, is refused at start", "[scenario][extender]") {
  t::TempDir dir;
  const auto nodes_path = dir.path() / "nodes.json";
  const auto refused = [&](const std::string& value, const std::string& words) {
    json nodes = three_a100_nodes();
    nodes["items"][2]["metadata"]["annotations"]["hami.io/node-nvidia-register"] = value;
    std::ofstream(nodes_path) << nodes.dump();
    ExtenderOptions o;
    o.nodes = nodes_path;
    try {
      Extender e(o);
      FAIL("accepted " << value);
    } catch (const Error& err) {
      const std::string what = err.what();
      INFO(what);
      CHECK_THAT(what, Catch::Contains("metadata.annotations.hami.io/node-nvidia-register"));
      CHECK_THAT(what, Catch::Contains("node a100-c: "));
      CHECK_THAT(what, Catch::Contains(words));
      CHECK(std::string(err.id()) == "gpusched.trace_error.102");
    }
  };
  refused(R"([{"id":"GPU-1","devmem":81920}])", "lists 1 devices, but the node has 8 GPUs");
  refused("[{\"devmem\":81920}]", "each device needs a string \"id\"");
  refused("[{\"id\":\"GPU-1\",", "not valid JSON");
  refused("GPU-1,10,40000,100:", "expected id,count,devmem,devcore,type,numa,health");
  refused("GPU-1,10,lots,100,NVIDIA,0,true:", "devmem \"lots\" is not a number");
}

TEST_CASE("Extender /pods/sync: held pods listed as finished give their devices back; with ?complete=true so do held pods "
          "missing from two complete lists in a row",
          "[scenario][extender]") {
  auto e = make("binpack");   // the snapshot's 4 bound pods
  const auto held = [&] {
    std::vector<std::string> out;
    for (const auto& h : json::parse(e.handle("GET", "/pods", "").body)) out.push_back(h["pod"]);
    std::sort(out.begin(), out.end());
    return out;
  };
  const auto holds = [&](const std::string& key) {
    const auto now = held();
    return std::find(now.begin(), now.end(), key) != now.end();
  };
  REQUIRE(held().size() == 4);
  json later = pods_doc();
  std::string done, dropped;   // one bound pod finishes, another is left out of the list
  json items = json::array();
  for (auto p : later["items"]) {
    if (!p["spec"].contains("nodeName")) {
      items.push_back(p);
      continue;
    }
    const std::string key = p["metadata"]["namespace"].get<std::string>() + "/" + p["metadata"]["name"].get<std::string>();
    if (done.empty()) {
      done = key;
      p["status"]["phase"] = "Succeeded";
    } else if (dropped.empty()) {
      dropped = key;
      continue;
    }
    items.push_back(p);
  }
  later["items"] = items;
  const auto r = post(e, "/pods/sync", later);   // a partial list may leave pods out: they stay
  CHECK(r["finished"] == 1);
  CHECK(r["deleted"] == 0);
  CHECK(r["already_held"] == 2);
  CHECK_FALSE(holds(done));
  CHECK(holds(dropped));
  CHECK(held().size() == 3);
  CHECK(post(e, "/pods/sync?complete=false", later)["missing_once"] == 0);   // false: a partial list
  // One complete list without it is not enough (it may predate the binding); two in a row are.
  const auto once = post(e, "/pods/sync?complete=true", later);
  CHECK(once["deleted"] == 0);
  CHECK(once["missing_once"] == 1);
  CHECK(holds(dropped));
  const auto twice = post(e, "/pods/sync?complete", later);   // the bare flag is true
  CHECK(twice["deleted"] == 1);
  CHECK(twice["missing_once"] == 0);
  CHECK_FALSE(holds(dropped));
  CHECK(held().size() == 2);
  CHECK(metric_value(e, "gpusched_extender_deletions_total") == 2);
  CHECK(metric_value(e, "gpusched_extender_pods") == 2);
  CHECK(e.handle("POST", "/pods/sync?complete=yes", later.dump()).status == 400);
  CHECK(json::parse(e.handle("POST", "/pods/sync?complete=yes", later.dump()).body)["Error"] ==
        "query parameter complete: expected true or false, got \"yes\"");
}

TEST_CASE("Extender /pods/sync?complete: a pod bound after the list was taken is not freed; a list naming it again clears "
          "the first strike",
          "[scenario][extender]") {
  auto e = make("binpack", false);   // nothing bound
  const json empty_list = {{"apiVersion", "v1"}, {"kind", "List"}, {"items", json::array()}};
  auto p = pod("ranker-5f7c9d8b6-qz4lm");
  p["spec"].erase("nodeName");
  p["metadata"]["uid"] = "uid-late";
  const std::vector<std::string> t4 = {"gpu-t4-0"};
  post(e, "/filter", {{"Pod", p}, {"NodeNames", t4}});
  REQUIRE(post(e, "/bind", {{"PodName", p["metadata"]["name"]}, {"PodNamespace", "ml"}, {"Node", "gpu-t4-0"}})["Error"] == "");
  // A list taken before the binding, sent after it: the pod is missing once, not freed.
  CHECK(post(e, "/pods/sync?complete=1", empty_list)["missing_once"] == 1);
  CHECK(e.pod_count() == 1);
  // The next list (taken after the binding) shows it running: the strike is cleared...
  json running = empty_list;
  auto on = p;
  on["spec"]["nodeName"] = "gpu-t4-0";
  on["status"] = {{"phase", "Running"}};
  running["items"].push_back(on);
  const auto seen = post(e, "/pods/sync?complete=1", running);
  CHECK(seen["already_held"] == 1);
  CHECK(seen["missing_once"] == 0);
  // ...so one more stale list does not free it either.
  CHECK(post(e, "/pods/sync?complete=1", empty_list)["deleted"] == 0);
  CHECK(e.pod_count() == 1);
  // A finished pod of the same name but another UID (the one before it) frees nothing.
  auto old = on;
  old["metadata"]["uid"] = "uid-before";
  old["status"]["phase"] = "Failed";
  json stale = empty_list;
  stale["items"].push_back(old);
  const auto r = post(e, "/pods/sync", stale);
  CHECK(r["finished"] == 0);
  CHECK(e.pod_count() == 1);
  // The same UID finished: freed.
  old["metadata"]["uid"] = "uid-late";
  stale["items"][0] = old;
  CHECK(post(e, "/pods/sync", stale)["finished"] == 1);
  CHECK(e.pod_count() == 0);
}

TEST_CASE("Extender with a binder: a pod deleted and bound again while a refused binding was in flight keeps its new placement",
          "[scenario][extender]") {
  Extender* self = nullptr;
  int calls = 0;
  ExtenderOptions o;
  o.profile = "binpack";
  o.nodes = snapshot("nodes.json");
  auto p = pod("ranker-5f7c9d8b6-qz4lm");
  p["spec"].erase("nodeName");
  const std::vector<std::string> t4 = {"gpu-t4-0"};
  const json bind = {{"PodName", "ranker-5f7c9d8b6-qz4lm"}, {"PodNamespace", "ml"}, {"Node", "gpu-t4-0"}};
  o.binder = [&](const BindingRequest& b) -> std::string {
    if (++calls > 1) return "";   // the second binding (made from inside the first) is accepted
    // While the first binding is in flight: the pod is deleted, asked about and bound again.
    CHECK(self->handle("POST", "/pods/delete", json{{"PodName", b.pod_name}, {"PodNamespace", b.pod_namespace}}.dump()).status == 200);
    CHECK(self->handle("POST", "/filter", json{{"Pod", p}, {"NodeNames", t4}}.dump()).status == 200);
    CHECK(json::parse(self->handle("POST", "/bind", bind.dump()).body)["Error"] == "");
    return "conflict";   // the first one is refused
  };
  Extender e(o);
  self = &e;
  post(e, "/filter", {{"Pod", p}, {"NodeNames", t4}});
  CHECK_THAT(post(e, "/bind", bind)["Error"].get<std::string>(), Catch::Contains("failed: conflict"));
  CHECK(calls == 2);
  CHECK(e.pod_count() == 1);   // the second binding's placement stays
  CHECK(metric_value(e, "gpusched_extender_bindings_total") == 1);
}

TEST_CASE("Extender HAMi annotations: one entry per container in spec order; devices in the registration's index order",
          "[scenario][extender]") {
  t::TempDir dir;
  const auto nodes_path = dir.path() / "nodes.json";
  json nodes = hami_nodes();
  // The JSON registration listed backwards: "index" says which GPU each device is.
  json list = json::parse(nodes["items"][0]["metadata"]["annotations"]["hami.io/node-nvidia-register"].get<std::string>());
  std::reverse(list.begin(), list.end());
  for (auto& d : list) {
    if (d["index"] == 0) d.erase("index");   // as omitempty writes index 0
  }
  nodes["items"][0]["metadata"]["annotations"]["hami.io/node-nvidia-register"] = list.dump();
  std::ofstream(nodes_path) << nodes.dump();
  ExtenderOptions o;
  o.profile = "binpack";
  o.nodes = nodes_path;
  Extender e(o);
  auto p = pod("ranker-5f7c9d8b6-qz4lm");
  p["spec"].erase("nodeName");
  p["metadata"]["name"] = "sidecar";
  // A sidecar without GPUs first, then a container with 2 GPUs, then one with 1.
  json c0 = p["spec"]["containers"][0];
  c0["name"] = "sidecar";
  c0["resources"] = {{"requests", {{"cpu", "100m"}}}};
  json c1 = p["spec"]["containers"][0];
  c1["name"] = "trainer";
  c1["resources"] = {{"limits", {{"nvidia.com/gpu", "2"}}}};
  json c2 = c1;
  c2["name"] = "evaluator";
  c2["resources"] = {{"limits", {{"nvidia.com/gpu", 1}}}};
  p["spec"]["containers"] = {c0, c1, c2};
  post(e, "/filter", {{"Pod", p}, {"NodeNames", {"a100-a"}}});
  REQUIRE(post(e, "/bind", {{"PodName", "sidecar"}, {"PodNamespace", "ml"}, {"Node", "a100-a"}})["Error"] == "");
  const auto held = json::parse(e.handle("GET", "/pods", "").body);
  REQUIRE(held.size() == 1);
  std::vector<std::string> uuid;
  for (const auto& g : held[0]["gpus"]) uuid.push_back("GPU-a-" + std::to_string(g.get<int>()));
  REQUIRE(uuid.size() == 3);
  CHECK(held[0]["annotations"]["hami.io/vgpu-devices-to-allocate"] ==
        ";" + uuid[0] + ",NVIDIA,81920,0:" + uuid[1] + ",NVIDIA,81920,0:;" + uuid[2] + ",NVIDIA,81920,0:;");
}
