// TPU chips as Google's TPU DRA driver publishes them (driver tpu.google.com,
// kubernetes-sigs/dra-driver-google-tpu, cmd/tpu-dra-kubeletplugin), and jobs that claim them.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <gpusched/dra/nvidia.hpp>
#include <gpusched/error.hpp>
#include <gpusched/resources.hpp>
#include <gpusched/scenario/scenario.hpp>

#include "support/support.hpp"

using namespace gpusched;
using namespace gpusched::scenario;
namespace t = gpusched::test;

namespace {

NodeSpec tpu_host(std::string name, std::string generation, int chips, std::map<std::string, std::string> labels = {}) {
  NodeSpec n;
  n.name = std::move(name);
  n.tpu.generation = std::move(generation);
  n.tpu.chips = chips;
  n.labels = std::move(labels);
  return n;
}

std::string text(const dra::Device& d, const std::string& key) {
  const auto* v = d.attribute("tpu.google.com/" + key);
  REQUIRE(v != nullptr);
  return std::get<std::string>(*v);
}
std::int64_t number(const dra::Device& d, const std::string& key) {
  const auto* v = d.attribute("tpu.google.com/" + key);
  REQUIRE(v != nullptr);
  return std::get<std::int64_t>(*v);
}

/// Single-host TPU pools (two 4-chip v5e hosts, one 8-chip v6e host), a GPU node, three jobs
/// claiming through template "tpus", and a profile with dynamic-resources.
nlohmann::json tpu_scenario() {
  return nlohmann::json::parse(R"({
    "schema_version": 1, "name": "dra-tpu", "seed": 1,
    "cluster": {"node_groups": [
      {"name": "v5e-a", "count": 1, "cpu": 112, "memory": "192Gi", "tpu": {"generation": "v5e", "topology": "2x2"}},
      {"name": "v5e-b", "count": 1, "cpu": 112, "memory": "192Gi", "tpu": {"generation": "v5e", "topology": "2x2"}},
      {"name": "v6e", "count": 1, "cpu": 180, "memory": "720Gi", "tpu": {"generation": "v6e", "topology": "2x4"}},
      {"name": "gpu", "count": 1, "cpu": 64, "memory": "256Gi", "gpus": 2, "gpu_model": "A100-80GB"}
    ]},
    "profile": {"name": "kube-dra", "filter": [{"name": "node-resources-fit"}, {"name": "dynamic-resources"}],
                "score": [{"name": "first-fit"}], "device_select": {"name": "dynamic-resources"}},
    "workload": {"jobs": [
      {"id": "a", "submit_time": 0, "duration": 100, "claim_template": "tpus", "requests": {"cpu": "8", "memory": "16Gi"}},
      {"id": "b", "submit_time": 1, "duration": 100, "claim_template": "tpus", "requests": {"cpu": "8", "memory": "16Gi"}},
      {"id": "c", "submit_time": 2, "duration": 100, "claim_template": "tpus", "requests": {"cpu": "8", "memory": "16Gi"}}
    ]},
    "outputs": {"event_log": true}
  })");
}

nlohmann::json with_dra(nlohmann::json doc, const nlohmann::json& claim_spec) {
  doc["dra"] = {{"objects", nlohmann::json::array({{{"apiVersion", "resource.k8s.io/v1"},
                                                      {"kind", "ResourceClaimTemplate"},
                                                      {"metadata", {{"name", "tpus"}}},
                                                      {"spec", {{"spec", claim_spec}}}}})}};
  return doc;
}

std::string run_error(const nlohmann::json& doc) {
  try {
    (void)run(parse_scenario(doc.dump(), "tpu.json", "."));
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("Google's TPU driver: the generation read from the accelerator label", "[dra][tpu]") {
  // cmd/tpu-dra-kubeletplugin/util_test.go, TestAcceleratorGen, case by case.
  CHECK(dra::tpu_driver_generation("tpu-v3-device") == "v3");           // "valid v3 device"
  CHECK(dra::tpu_driver_generation("tpu-v3-slice") == "v3");            // "valid v3 slice"
  CHECK(dra::tpu_driver_generation("tpu-v4-podslice") == "v4");         // "valid v4 podslice"
  CHECK(dra::tpu_driver_generation("tpu-v4-lite-device") == "v4lite");  // "valid v4 lite device"
  CHECK(dra::tpu_driver_generation("tpu-v5-lite-device") == "v5lite");  // "valid v5 lite device"
  CHECK(dra::tpu_driver_generation("tpu-v5-lite-podslice") == "v5litepod");   // "valid v5 lite podslice"
  CHECK(dra::tpu_driver_generation("tpu-v5p-slice") == "v5p");          // "valid v5p slice"
  CHECK(dra::tpu_driver_generation("tpu-v6e-slice") == "v6e");          // "valid v6e slice"
  CHECK_FALSE(dra::tpu_driver_generation("invalid-tpu"));               // "invalid accelerator random"
  CHECK_FALSE(dra::tpu_driver_generation("tpu7x"));                     // "unsupported new-style future generation"
  CHECK_FALSE(dra::tpu_driver_generation("tpu99z"));                    // "unsupported new-style garbage"
  // util.go AcceleratorGen's edge cases: names its regex lets through that are no product.
  CHECK_FALSE(dra::tpu_driver_generation("tpu-v4-device"));
  CHECK_FALSE(dra::tpu_driver_generation("tpu-v4-lite-podslice"));
}

TEST_CASE("A TPU host publishes one device per chip, named and described as Google's driver does", "[dra][tpu]") {
  // v4 chips bind to /dev/accel<i>; v5e, v5p and v6e chips to /dev/vfio/<i> (driver.go NewDriver;
  // manager_test.go expects accel0..accel3 for v4 and "0".."7" for v6e).
  const auto v4 = dra::tpu_slice(tpu_host("v4-host", "v4", 4, {{"cloud.google.com/gke-tpu-accelerator", "tpu-v4-podslice"},
                                                             {"cloud.google.com/gke-tpu-topology", "2x2x4"}}));
  REQUIRE(v4);
  CHECK(v4->driver == "tpu.google.com");
  CHECK(v4->pool == "v4-host");
  CHECK(v4->node_name == "v4-host");
  REQUIRE(v4->devices.size() == 4);
  std::set<std::string> uuids;
  for (std::size_t i = 0; i < 4; ++i) {
    const auto& d = v4->devices[i];
    CHECK(d.name == "accel" + std::to_string(i));
    CHECK(number(d, "index") == static_cast<std::int64_t>(i));
    CHECK(text(d, "tpuGen") == "v4");
    CHECK(text(d, "brand") == "Google");
    CHECK(text(d, "accelerator") == "tpu-v4-podslice");
    CHECK(number(d, "chipCount") == 4);
    CHECK(text(d, "topology") == "2x2x4");
    // manager_test.go: "tpu-" and a UUID, 40 characters, one per chip.
    const auto uuid = text(d, "uuid");
    CHECK(uuid.rfind("tpu-", 0) == 0);
    CHECK(uuid.size() == 40);
    uuids.insert(uuid);
    CHECK(d.attributes.size() == 7);
    CHECK(d.capacity.empty());   // the driver publishes no capacity (its memory line is commented out)
  }
  CHECK(uuids.size() == 4);
  // The same chip on another node has another UUID; on the same node, the same one (stable).
  const auto other = dra::tpu_slice(tpu_host("v4-other", "v4", 4, {{"cloud.google.com/gke-tpu-accelerator", "tpu-v4-podslice"}}));
  REQUIRE(other);
  CHECK(text(other->devices[0], "uuid") != text(v4->devices[0], "uuid"));
  CHECK(text(dra::tpu_slice(tpu_host("v4-host", "v4", 4, {{"cloud.google.com/gke-tpu-accelerator", "tpu-v4-podslice"}}))->devices[0], "uuid") ==
        text(v4->devices[0], "uuid"));
  // No topology label and no pool topology: the attribute is left out (GetDevice).
  CHECK(other->devices[0].attribute("tpu.google.com/topology") == nullptr);

  const auto v6e = dra::tpu_slice(tpu_host("v6e-host", "v6e", 8));   // no label: the catalog's accelerator
  REQUIRE(v6e);
  REQUIRE(v6e->devices.size() == 8);
  for (std::size_t i = 0; i < 8; ++i) CHECK(v6e->devices[i].name == std::to_string(i));
  CHECK(text(v6e->devices[0], "accelerator") == "tpu-v6e-slice");
  CHECK(text(v6e->devices[0], "tpuGen") == "v6e");
  // A node's own label wins over the catalog: a v5e device host.
  const auto lite = dra::tpu_slice(tpu_host("v5e-host", "v5e", 4, {{"cloud.google.com/gke-tpu-accelerator", "tpu-v5-lite-device"}}));
  REQUIRE(lite);
  CHECK(text(lite->devices[0], "tpuGen") == "v5lite");
  CHECK(lite->devices[0].name == "0");
  CHECK(text(dra::tpu_slice(tpu_host("pod", "v5e", 4))->devices[0], "tpuGen") == "v5litepod");
  // The driver does not run on generations it has no device directory for, nor on a GPU node.
  CHECK_FALSE(dra::tpu_slice(tpu_host("ironwood", "tpu7x", 4)));
  CHECK_FALSE(dra::tpu_slice(NodeSpec{}));
  // Its DeviceClass (the Helm chart's deviceclass.yaml).
  const auto classes = dra::builtin_device_classes();
  REQUIRE(classes.back().name == "tpu.google.com");
  CHECK(classes.back().selectors.at(0).text() == "device.driver == 'tpu.google.com'");
}

TEST_CASE("The TPU driver prepares only claims that take all of a host's chips", "[dra][tpu]") {
  const auto host = tpu_host("h", "v5e", 4);
  dra::Allocation whole, part, gpu;
  for (int i = 0; i < 4; ++i) whole.devices.push_back({"tpus", "tpu.google.com", "h", std::to_string(i), false});
  part.devices.assign(whole.devices.begin(), whole.devices.begin() + 2);
  gpu.devices.push_back({"gpu", "gpu.nvidia.com", "h", "gpu-0", false});
  CHECK(dra::takes_whole_tpu_host(std::vector<dra::Allocation>{whole}, host));
  CHECK(dra::takes_whole_tpu_host(std::vector<dra::Allocation>{gpu}, host));   // no TPU result: not the driver's claim
  CHECK_FALSE(dra::takes_whole_tpu_host(std::vector<dra::Allocation>{part}, host));
  CHECK_FALSE(dra::takes_whole_tpu_host(std::vector<dra::Allocation>{whole, part}, host));   // each claim counts alone
}

TEST_CASE("Jobs claiming TPU chips run on whole hosts, hold google.com/tpu, and name their chips", "[dra][tpu][engine]") {
  // tpu.google.com/demo/specs/multi-tpu-pod.yaml: exactly 4 devices of class tpu.google.com.
  const nlohmann::json four = {{"devices", {{"requests", nlohmann::json::array({{{"name", "tpus"},
                                                                                {"exactly", {{"deviceClassName", "tpu.google.com"}, {"count", 4}}}}})}}}};
  const auto doc = with_dra(tpu_scenario(), four);
  const auto r = run(parse_scenario(doc.dump(), "tpu.json", "."));
  CHECK(r.summary().completed == 3);
  // Two 4-chip v5e hosts take a and b at once; c waits for one of them (the v6e host has 8 chips:
  // a claim of 4 would be half of it, which the driver refuses).
  std::map<std::string, std::string> node_of;
  std::map<std::string, double> start_of;
  for (const auto& row : r.claims()) node_of[row.job] = row.node;
  CHECK(node_of.at("a") == "v5e-a-0000");
  CHECK(node_of.at("b") == "v5e-b-0000");
  CHECK(node_of.at("c") == "v5e-a-0000");
  std::vector<std::string> devices;
  for (const auto& row : r.claims()) {
    if (row.job != "a") continue;
    CHECK(row.driver == "tpu.google.com");
    CHECK(row.pool == "v5e-a-0000");
    CHECK(row.request == "tpus");
    devices.push_back(row.device);
  }
  CHECK(devices == std::vector<std::string>{"0", "1", "2", "3"});
  for (const auto& line : r.event_log()) {
    if (line.find(",start,c,") != std::string::npos) CHECK(line.rfind("100", 0) == 0);   // after a ends at t = 100
  }

  // `All` on the v6e host: the eight chips.
  nlohmann::json all = {{"devices", {{"requests", nlohmann::json::array({{{"name", "tpus"},
                                                                           {"exactly", {{"deviceClassName", "tpu.google.com"},
                                                                                        {"allocationMode", "All"},
                                                                                        {"selectors", nlohmann::json::array({{{"cel", {{"expression", "device.attributes['tpu.google.com'].tpuGen == 'v6e'"}}}}})}}}}})}}}};
  const auto r8 = run(parse_scenario(with_dra(tpu_scenario(), all).dump(), "tpu.json", "."));
  CHECK(r8.summary().completed == 3);
  std::size_t rows_a = 0;
  for (const auto& row : r8.claims()) {
    if (row.job != "a") continue;
    ++rows_a;
    CHECK(row.node == "v6e-0000");
  }
  CHECK(rows_a == 8);
}

TEST_CASE("TPU claims that cannot work are refused before the run, naming the driver's rule", "[dra][tpu]") {
  // Two chips of 4- and 8-chip hosts: the driver would refuse to prepare every placement.
  const nlohmann::json two = {{"devices", {{"requests", nlohmann::json::array({{{"name", "tpus"},
                                                                               {"exactly", {{"deviceClassName", "tpu.google.com"}, {"count", 2}}}}})}}}};
  const auto err = run_error(with_dra(tpu_scenario(), two));
  CHECK(err.find("no node can hold the claim of ResourceClaimTemplate \"tpus\", even with all its devices free (Google's TPU driver prepares a "
                 "claim only when it takes all chips of the host together, and the claim takes part of one: v5e-a-0000 has 4 chips)") !=
        std::string::npos);
  // A class that matches GPUs and TPU chips alike: one kind of device per job.
  auto any = with_dra(tpu_scenario(),
                      {{"devices", {{"requests", nlohmann::json::array({{{"name", "x"}, {"exactly", {{"deviceClassName", "anything"}, {"count", 1}}}}})}}}});
  any["dra"]["objects"].push_back({{"apiVersion", "resource.k8s.io/v1"},
                                   {"kind", "DeviceClass"},
                                   {"metadata", {{"name", "anything"}}},
                                   {"spec", {{"selectors", nlohmann::json::array({{{"cel", {{"expression", "true"}}}}})}}}});
  CHECK(run_error(any).find("can get whole GPUs, TPU chips: a job in a simulation takes one kind of device") != std::string::npos);
  // A claim of admin-access chips counts too, as the driver counts every result of its own: one
  // chip of a 4-chip host is refused before the run (review of 51ecf5b).
  const auto admin = run_error(with_dra(tpu_scenario(),
                                        {{"devices", {{"requests", nlohmann::json::array({{{"name", "tpus"},
                                                                                          {"exactly", {{"deviceClassName", "tpu.google.com"},
                                                                                                       {"count", 1},
                                                                                                       {"adminAccess", true}}}}})}}}}));
  CHECK(admin.find("Google's TPU driver prepares a claim only when it takes all chips of the host together") != std::string::npos);
  // Kubernetes tells pools apart by driver: a given TPU slice may use a GPU node's pool name.
  auto pooled = with_dra(tpu_scenario(), {{"devices", {{"requests", nlohmann::json::array({{{"name", "tpus"},
                                                                                           {"exactly", {{"deviceClassName", "tpu.google.com"}, {"count", 4}}}}})}}}});
  pooled["dra"]["objects"].push_back(nlohmann::json::parse(R"({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
      "metadata": {"name": "given"}, "spec": {"driver": "tpu.google.com", "nodeName": "v5e-a-0000",
      "pool": {"name": "gpu-0000", "resourceSliceCount": 1},
      "devices": [{"name": "0"}, {"name": "1"}, {"name": "2"}, {"name": "3"}]}})"));
  CHECK(run_error(pooled).empty());
  // (Different counts of chips for one claim are run: "TPU claims over hosts of different sizes".)
  // TPU chips asked both ways.
  auto both = with_dra(tpu_scenario(),
                       {{"devices", {{"requests", nlohmann::json::array({{{"name", "tpus"},
                                                                           {"exactly", {{"deviceClassName", "tpu.google.com"}, {"count", 4}}}}})}}}});
  both["workload"]["jobs"][0]["requests"]["google.com/tpu"] = "4";
  CHECK(run_error(both).find("job \"a\" asks for TPU chips both in its requests and through claim_template \"tpus\"") != std::string::npos);
}

TEST_CASE("TPU claims over hosts of different sizes: all of a host's chips, or alternatives of different counts", "[dra][tpu][engine][quota]") {
  // Google's driver prepares a claim only when it takes all of a host's chips, so over 4-chip v5e
  // and 8-chip v6e hosts a claim's size depends on the host: `All`, or firstAvailable "eight,
  // else four". The job states the fewest (google.com/tpu: 4) and takes what the host gives;
  // quotas charge the most (8), as Kubernetes' ResourceQuota charges a claim's worst case.
  const nlohmann::json all = {{"devices", {{"requests", nlohmann::json::array({{{"name", "tpus"},
                                                                                 {"exactly", {{"deviceClassName", "tpu.google.com"}, {"allocationMode", "All"}}}}})}}}};
  const nlohmann::json alternatives = {{"devices", {{"requests", nlohmann::json::array({{{"name", "tpus"},
      {"firstAvailable", nlohmann::json::parse(R"([{"name": "v6e", "deviceClassName": "tpu.google.com", "count": 8},
                                                   {"name": "v5e", "deviceClassName": "tpu.google.com", "count": 4}])")}}})}}}};
  for (const auto* spec : {&all, &alternatives}) {
    const bool is_all = spec == &all;
    INFO((is_all ? "All" : "firstAvailable"));
    const auto doc = with_dra(tpu_scenario(), *spec);
    const auto sc = parse_scenario(doc.dump(), "tpu.json", ".");
    auto resolved = sc.jobs;
    prepare_claims(resolved, sc);
    CHECK(resolved[0].request.tpu.chips == 4);
    REQUIRE(resolved[0].constraints.claims);
    CHECK(resolved[0].constraints.claims->most_devices == 8);
    const auto r = run(sc);
    CHECK(r.summary().completed == 3);
    std::map<std::string, std::string> node_of;
    std::map<std::string, std::set<std::string>> request_of;
    std::map<std::string, int> chips;
    for (const auto& row : r.claims()) {
      node_of[row.job] = row.node;
      request_of[row.job].insert(row.request);
      ++chips[row.job];
    }
    CHECK(node_of.at("a") == "v5e-a-0000");
    CHECK(node_of.at("b") == "v5e-b-0000");
    CHECK(node_of.at("c") == "v6e-0000");
    CHECK(chips.at("a") == 4);
    CHECK(chips.at("c") == 8);
    if (!is_all) {
      CHECK(request_of.at("a") == std::set<std::string>{"tpus/v5e"});
      CHECK(request_of.at("c") == std::set<std::string>{"tpus/v6e"});
    }
    // The event log and jobs.csv name the chips each task took.
    bool saw = false;
    for (const auto& line : r.event_log()) {
      if (line.find(",start,c,") == std::string::npos) continue;
      saw = true;
      CHECK(line.find("v6e-0000{tpu:8}") != std::string::npos);
    }
    CHECK(saw);

    // ResourceQuota of 8 chips, Kubernetes' rule: each job is charged 8, so one runs at a time
    // and the others are refused by the API server.
    auto quota = doc;
    quota["profile"]["pre_filter"] = nlohmann::json::parse(R"([{"name": "resource-quota", "args": {"quotas": {"default": {"requests.google.com/tpu": 8}}}}])");
    for (auto& j : quota["workload"]["jobs"]) j["queue"] = "default";
    const auto q = run(parse_scenario(quota.dump(), "tpu.json", "."));
    CHECK(q.engine().reason(q.engine().job(JobId{1}).reason).find("requested: requests.google.com/tpu=8, used: requests.google.com/tpu=8") !=
          std::string::npos);
  }

  // The autoscaler packs such a job onto a new host as the claim takes it there (8 chips of a
  // v6e host, not the 4 it states). A 2x4 v6e pool is one host, so each job gets a group; the
  // autoscaler opens one a scan. (A smoke test: with one node a scan, the old count of 4 planned
  // two jobs per host but opened the same nodes.)
  auto scaled = with_dra(tpu_scenario(), all);
  scaled["cluster"]["node_groups"] = nlohmann::json::array();
  for (const char* name : {"v6e-x", "v6e-y", "v6e-z"}) {   // (a 2x4 pool is one host: a group each)
    auto g = nlohmann::json::parse(R"({"count": 1, "cpu": 180, "memory": "720Gi", "tpu": {"generation": "v6e", "topology": "2x4"},
        "autoscale": {"min": 0, "provisioning_delay_s": 60, "scale_down_idle_s": 600}})");
    g["name"] = name;
    scaled["cluster"]["node_groups"].push_back(g);
  }
  scaled["autoscaler"] = {{"scan_interval_s", 10}};
  const auto s = run(parse_scenario(scaled.dump(), "tpu.json", "."));
  CHECK(s.summary().completed == 3);
  std::set<std::string> hosts;
  for (const auto& row : s.claims()) hosts.insert(row.node);
  CHECK(hosts == std::set<std::string>{"v6e-x-0000", "v6e-y-0000", "v6e-z-0000"});
  CHECK(s.claims().size() == 24);   // 8 chips each
}

TEST_CASE("A job waiting only because of the TPU driver's whole-host rule says so", "[dra][tpu][engine]") {
  // Both 4-chip hosts are held for ever; the 8-chip host is free, and the claim's 4 chips fit it
  // but take half of it. The pending reason names the rule, not a generic allocation failure.
  auto doc = with_dra(tpu_scenario(), {{"devices", {{"requests", nlohmann::json::array({{{"name", "tpus"},
                                                                                        {"exactly", {{"deviceClassName", "tpu.google.com"}, {"count", 4}}}}})}}}});
  doc["workload"]["jobs"][0].erase("duration");
  doc["workload"]["jobs"][1].erase("duration");
  doc["horizon_s"] = 1000;
  const auto r = run(parse_scenario(doc.dump(), "tpu.json", "."));
  std::string reason;
  for (const auto& row : r.jobs()) {
    if (row.job == "c") reason = row.reason;
  }
  INFO(reason);
  CHECK(reason.find("the claim takes part of the host's TPU chips, which the TPU driver refuses") != std::string::npos);
  CHECK(reason.find("cannot allocate all claims") == std::string::npos);
}

TEST_CASE("gpusched validate reads a scenario with DRA objects inline as a scenario", "[dra][tpu][cli]") {
  // It once took any .json with "apiVersion" in its first 4 KiB for a kubectl list (review of
  // 51ecf5b); only an object with apiVersion at the top is one.
  t::TempDir dir;
  const auto good = with_dra(tpu_scenario(), {{"devices", {{"requests", nlohmann::json::array({{{"name", "tpus"},
                                                                                                 {"exactly", {{"deviceClassName", "tpu.google.com"}, {"count", 4}}}}})}}}});
  const auto ok = t::cli({"validate", dir.write("inline.json", good.dump()).string()});
  INFO(ok.err);
  CHECK(ok.rc == 0);
  // The scenario's own checks run: a partial TPU claim is refused there too.
  const auto bad = with_dra(tpu_scenario(), {{"devices", {{"requests", nlohmann::json::array({{{"name", "tpus"},
                                                                                                {"exactly", {{"deviceClassName", "tpu.google.com"}, {"count", 2}}}}})}}}});
  const auto refused = t::cli({"validate", dir.write("partial.json", bad.dump()).string()});
  CHECK(refused.rc == 1);
  CHECK_THAT(refused.err, Catch::Contains("takes all chips of the host together"));
  // A kubectl list is still read as one (a list of Nodes and Pods, the whatif inputs).
  const auto list = t::cli({"validate", dir.write("nodes.json", R"({"apiVersion": "v1", "kind": "List", "items": []})").string()});
  CHECK_THAT(list.out + list.err, !Catch::Contains("schema_version"));
}

TEST_CASE("The autoscaler adds only nodes whose devices can hold a job's claim", "[dra][tpu][autoscaler]") {
  // Review of 51ecf5b: it sized new nodes by the job's counted request alone, so it added an 8-chip
  // v6e host for 4-chip claims (half a host, which the TPU driver refuses) and left it idle, and
  // it would add an A100 node for a claim that selects H100s.
  const auto autoscaled = [](nlohmann::json group) {
    group["autoscale"] = {{"min", 0}, {"provisioning_delay_s", 60}, {"scale_down_idle_s", 600}};
    return group;
  };
  auto doc = with_dra(tpu_scenario(), {{"devices", {{"requests", nlohmann::json::array({{{"name", "tpus"},
                                                                                        {"exactly", {{"deviceClassName", "tpu.google.com"}, {"count", 4}}}}})}}}});
  doc["cluster"]["node_groups"] = nlohmann::json::array(
      {autoscaled({{"name", "v6e"}, {"count", 1}, {"cpu", 180}, {"memory", "720Gi"}, {"tpu", {{"generation", "v6e"}, {"topology", "2x4"}}}}),
       autoscaled({{"name", "v5e"}, {"count", 1}, {"cpu", 112}, {"memory", "192Gi"}, {"tpu", {{"generation", "v5e"}, {"topology", "2x2"}}}})});
  const auto r = run(parse_scenario(doc.dump(), "tpu.json", "."));
  CHECK(r.summary().completed == 3);
  std::vector<std::string> ups;
  for (const auto& line : r.event_log()) {
    if (line.find(",node_up,") != std::string::npos) ups.push_back(line.substr(line.rfind(",,") + 2));
  }
  INFO(ups.size());
  CHECK(std::none_of(ups.begin(), ups.end(), [](const std::string& u) { return u.find("v6e") != std::string::npos; }));
  CHECK_FALSE(ups.empty());

  // GPUs: the claim selects H100s; the A100 group comes first in the file.
  auto gpus = with_dra(tpu_scenario(), {{"devices", {{"requests", nlohmann::json::array({{{"name", "h100"},
                                                                                         {"exactly", {{"deviceClassName", "gpu.nvidia.com"},
                                                                                                      {"count", 1},
                                                                                                      {"selectors", nlohmann::json::array({{{"cel", {{"expression", "device.attributes['gpu.nvidia.com'].productName.startsWith('NVIDIA H100')"}}}}})}}}}})}}}});
  gpus["cluster"]["node_groups"] = nlohmann::json::array(
      {autoscaled({{"name", "a100"}, {"count", 1}, {"cpu", 64}, {"memory", "256Gi"}, {"gpus", 2}, {"gpu_model", "A100-80GB"}}),
       autoscaled({{"name", "h100"}, {"count", 1}, {"cpu", 64}, {"memory", "256Gi"}, {"gpus", 2}, {"gpu_model", "H100-80GB"}})});
  const auto g = run(parse_scenario(gpus.dump(), "gpus.json", "."));
  CHECK(g.summary().completed == 3);
  ups.clear();
  for (const auto& line : g.event_log()) {
    if (line.find(",node_up,") != std::string::npos) ups.push_back(line);
  }
  INFO(ups.size());
  CHECK_FALSE(ups.empty());
  CHECK(std::none_of(ups.begin(), ups.end(), [](const std::string& u) { return u.find("a100") != std::string::npos; }));
}

namespace {

/// A v4 pool of 16 four-chip hosts (4x4x4, not provisioned: slices are found as blocks) and
/// four slice jobs (2x2x4: 4 hosts; 2x4x4: 8 hosts), each host's chips through claim template
/// "tpus" when `claims`, else through google.com/tpu: 4 as GKE's pods ask for them.
nlohmann::json slice_jobs(bool claims) {
  auto doc = nlohmann::json::parse(R"({
    "schema_version": 1, "name": "dra-tpu-slices", "seed": 1,
    "cluster": {"node_groups": [
      {"name": "tpu-v4", "cpu": 240, "memory": "400Gi", "tpu": {"generation": "v4", "topology": "4x4x4", "provisioned": false}}]},
    "profile": {"name": "kube-dra", "filter": [{"name": "node-resources-fit"}, {"name": "dynamic-resources"}],
                "score": [{"name": "first-fit"}], "device_select": {"name": "dynamic-resources"}},
    "workload": {"jobs": []},
    "outputs": {"event_log": true}
  })");
  const char* shapes[] = {"2x2x4", "2x4x4", "2x2x4", "2x2x4"};
  for (int i = 0; i < 4; ++i) {
    nlohmann::json j = {{"id", "s" + std::to_string(i)}, {"submit_time", i}, {"duration", 100 + 50 * i},
                        {"requests", {{"cpu", "8"}, {"memory", "64Gi"}, {"cloud.google.com/gke-tpu-accelerator", "tpu-v4-podslice"},
                                      {"cloud.google.com/gke-tpu-topology", shapes[i]}}}};
    if (claims) j["claim_template"] = "tpus";
    else j["requests"]["google.com/tpu"] = "4";
    doc["workload"]["jobs"].push_back(j);
  }
  if (!claims) return doc;
  return with_dra(doc, nlohmann::json::parse(R"({"devices": {"requests": [{"name": "tpus", "exactly": {"deviceClassName": "tpu.google.com",
      "allocationMode": "All", "selectors": [{"cel": {"expression": "device.attributes['tpu.google.com'].tpuGen == 'v4'"}}]}}]}})"));
}

}  // namespace

TEST_CASE("Multi-host TPU slices through claims: each host's chips by claim, the slice by its shape", "[dra][tpu][engine]") {
  // GKE's multi-host slice under DRA: one pod per host, each claiming all of its host's chips,
  // selecting the slice by accelerator and topology. It is placed as google.com/tpu places it.
  const auto by_claim = parse_scenario(slice_jobs(true).dump(), "slices.json", ".");
  auto jobs = by_claim.jobs;
  prepare_claims(jobs, by_claim);
  CHECK(jobs[0].tasks == 4);
  CHECK(jobs[0].min_available == 4);
  CHECK(jobs[0].request.tpu.hosts == 4);
  CHECK(jobs[0].request.tpu.chips == 4);
  CHECK(jobs[0].request.tpu.generation == "v4");
  CHECK(jobs[1].tasks == 8);
  const auto a = run(by_claim);
  const auto b = run(parse_scenario(slice_jobs(false).dump(), "slices.json", "."));
  REQUIRE(a.summary().completed == 4);
  std::vector<std::string> starts_a, starts_b;
  for (const auto& l : a.event_log()) {
    if (l.find(",start,") != std::string::npos) starts_a.push_back(l);
  }
  for (const auto& l : b.event_log()) {
    if (l.find(",start,") != std::string::npos) starts_b.push_back(l);
  }
  CHECK(starts_a == starts_b);
  // s0, s1 and s2 fill the 16 hosts; s3 waits for s0's hosts.
  const auto rows = a.jobs();
  CHECK(rows[2].start_s == 2.0);
  CHECK(rows[3].start_s == 100.0);
  // Each task names its host's four chips in claims.csv: 4 + 8 + 4 + 4 hosts.
  std::map<std::string, std::set<std::string>> hosts;
  std::size_t chips = 0;
  for (const auto& row : a.claims()) {
    CHECK(row.driver == "tpu.google.com");
    hosts[row.job].insert(row.node);
    ++chips;
  }
  CHECK(hosts["s0"].size() == 4);
  CHECK(hosts["s1"].size() == 8);
  CHECK(chips == 4 * (4 + 8 + 4 + 4));
}

TEST_CASE("Multi-host TPU slices through claims refuse what no slice can be", "[dra][tpu]") {
  auto doc = slice_jobs(true);
  doc["workload"]["jobs"][0]["tasks"] = 3;
  CHECK(run_error(doc).find("a 2x2x4 slice of 4 chips per host (the claim's) spans 4 hosts, so the job has 4 tasks, not 3") != std::string::npos);
  doc["workload"]["jobs"][0]["tasks"] = 4;
  doc["workload"]["jobs"][0]["min_available"] = 2;
  CHECK(run_error(doc).find("a multi-host TPU slice is all-or-nothing") != std::string::npos);
  // A claim of GPUs cannot make a TPU slice.
  auto gpus = slice_jobs(true);
  gpus["cluster"]["node_groups"].push_back(nlohmann::json::parse(R"({"name": "gpu", "count": 1, "cpu": 64, "memory": "256Gi", "gpus": 2, "gpu_model": "A100-80GB"})"));
  gpus["dra"]["objects"][0]["spec"]["spec"] = nlohmann::json::parse(R"({"devices": {"requests": [{"name": "g", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}})");
  CHECK(run_error(gpus).find("job \"s0\" selects a TPU slice (cloud.google.com/gke-tpu-accelerator, topology 2x2x4), but ResourceClaimTemplate "
                             "\"tpus\" gets GPUs") != std::string::npos);
  // Without a claim, google.com/tpu is still needed beside the slice selector.
  auto plain = slice_jobs(false);
  plain["workload"]["jobs"][0]["requests"].erase("google.com/tpu");
  CHECK(run_error(plain).find("a TPU slice selector needs google.com/tpu chips per task") != std::string::npos);
}

TEST_CASE("Multi-host TPU slices through claims: the claim's chips on the selected generation's hosts", "[dra][tpu][engine]") {
  // Review of 668c9db. A claim for all of a host's chips, whatever the generation, over v4 hosts
  // (4 chips) and a v5e host of 8: the v4 slice counts the v4 hosts' 4 chips (not "4 to 8").
  auto doc = slice_jobs(true);
  doc["dra"]["objects"][0]["spec"]["spec"]["devices"]["requests"][0]["exactly"].erase("selectors");
  doc["cluster"]["node_groups"].push_back(nlohmann::json::parse(
      R"({"name": "v5e", "count": 1, "cpu": 112, "memory": "192Gi", "tpu": {"generation": "v5e", "topology": "2x4"}})"));
  doc["workload"]["jobs"].push_back(nlohmann::json::parse(R"({"id": "v5e-host", "submit_time": 5, "duration": 50, "claim_template": "tpus",
      "requests": {"cpu": "8", "memory": "64Gi", "cloud.google.com/gke-tpu-accelerator": "tpu-v5-lite-podslice", "cloud.google.com/gke-tpu-topology": "2x4"}})"));
  const auto sc = parse_scenario(doc.dump(), "slices.json", ".");
  auto jobs = sc.jobs;
  prepare_claims(jobs, sc);
  CHECK(jobs[0].request.tpu.chips == 4);
  CHECK(jobs[0].request.tpu.hosts == 4);
  CHECK(jobs[4].request.tpu.chips == 8);
  CHECK(jobs[4].request.tpu.hosts == 1);
  CHECK(jobs[4].tasks == 1);
  const auto r = run(sc);
  CHECK(r.summary().completed == 5);
  CHECK(r.jobs()[4].start_s == 5.0);
  // A claim whose selectors choose v5p hosts under a v4 slice selector can never run: refused.
  auto other = slice_jobs(true);
  other["dra"]["objects"][0]["spec"]["spec"]["devices"]["requests"][0]["exactly"]["selectors"][0]["cel"]["expression"] =
      "device.attributes['tpu.google.com'].tpuGen == 'v5p'";
  other["cluster"]["node_groups"].push_back(nlohmann::json::parse(
      R"({"name": "v5p", "cpu": 208, "memory": "448Gi", "tpu": {"generation": "v5p", "topology": "2x2x1"}})"));
  CHECK(run_error(other).find("job \"s0\" selects TPU v4 hosts for a 2x2x4 slice, but ResourceClaimTemplate \"tpus\" cannot be allocated on "
                              "any of them") !=
        std::string::npos);
}

TEST_CASE("A claim job's TPU slice selectors are written back to a trace", "[dra][tpu][trace]") {
  // Review of 668c9db: `gpusched convert` dropped them (format_requests wrote them with chips only).
  ResourceTable resources;
  const GpuCatalog catalog = GpuCatalog::builtin();
  const std::vector<std::pair<std::string, std::string>> items = {
      {"cpu", "8"}, {"memory", "64Gi"}, {"cloud.google.com/gke-tpu-accelerator", "tpu-v4-podslice"}, {"cloud.google.com/gke-tpu-topology", "2x2x4"}};
  const auto r = parse_requests(items, {}, catalog, resources, {}, {}, true);
  CHECK(r.tpu.chips == 0);
  CHECK(r.tpu.generation == "v4");
  CHECK(r.tpu.topology == "2x2x4");
  const auto out = format_requests(r, resources);
  const std::map<std::string, std::string> written(out.begin(), out.end());
  CHECK(written.count("google.com/tpu") == 0);
  CHECK(written.at("cloud.google.com/gke-tpu-accelerator") == "tpu-v4-podslice");
  CHECK(written.at("cloud.google.com/gke-tpu-topology") == "2x2x4");
  CHECK(parse_requests(out, {}, catalog, resources, {}, {}, true).tpu == r.tpu);
}

TEST_CASE("Multi-host TPU slices through claims: only hosts of a size that serves the shape count", "[dra][tpu][engine]") {
  // Review of 900a6b6: v5e comes in hosts of 1, 4 and 8 chips, and the 8-chip host serves 2x4
  // only. A claim for all of a host's chips under a 4x4 selector counts the 4-chip hosts (as
  // google.com/tpu: 4 would), not "4 to 8 chips"; a 2x4 selector counts the pool of that shape
  // (a provisioned pool is one slice of its own shape), the 8-chip host.
  auto doc = slice_jobs(true);
  doc["cluster"]["node_groups"] = nlohmann::json::parse(R"([
      {"name": "v5e-pool", "cpu": 112, "memory": "192Gi", "tpu": {"generation": "v5e", "topology": "4x4"}},
      {"name": "v5e-8", "count": 1, "cpu": 224, "memory": "384Gi", "tpu": {"generation": "v5e", "topology": "2x4"}}])");
  doc["dra"]["objects"][0]["spec"]["spec"]["devices"]["requests"][0]["exactly"].erase("selectors");
  doc["workload"]["jobs"] = nlohmann::json::parse(R"([
      {"id": "slice", "submit_time": 0, "duration": 100, "claim_template": "tpus", "requests": {"cpu": "8", "memory": "16Gi",
       "cloud.google.com/gke-tpu-accelerator": "tpu-v5-lite-podslice", "cloud.google.com/gke-tpu-topology": "4x4"}},
      {"id": "host", "submit_time": 0, "duration": 100, "claim_template": "tpus", "requests": {"cpu": "8", "memory": "16Gi",
       "cloud.google.com/gke-tpu-accelerator": "tpu-v5-lite-podslice", "cloud.google.com/gke-tpu-topology": "2x4"}}])");
  const auto sc = parse_scenario(doc.dump(), "slices.json", ".");
  auto jobs = sc.jobs;
  prepare_claims(jobs, sc);
  CHECK(jobs[0].request.tpu.chips == 4);
  CHECK(jobs[0].request.tpu.hosts == 4);
  CHECK(jobs[0].tasks == 4);
  CHECK(jobs[1].request.tpu.chips == 8);
  CHECK(jobs[1].request.tpu.hosts == 1);
  const auto r = run(sc);
  CHECK(r.summary().completed == 2);
  CHECK(r.jobs()[0].start_s == 0.0);
  CHECK(r.jobs()[1].start_s == 0.0);
  // A claim for v4 hosts under a v5e selector is refused; kept unplaceable (what-if), it waits
  // instead of failing to load, and so does one that no node at all can hold.
  auto kept = doc;
  kept["cluster"]["node_groups"].push_back(nlohmann::json::parse(
      R"({"name": "tpu-v4", "cpu": 240, "memory": "400Gi", "tpu": {"generation": "v4", "topology": "2x2x4"}})"));
  kept["dra"]["objects"][0]["spec"]["spec"]["devices"]["requests"][0]["exactly"]["selectors"] =
      nlohmann::json::parse(R"([{"cel": {"expression": "device.attributes['tpu.google.com'].tpuGen == 'v4'"}}])");
  CHECK(run_error(kept).find("job \"slice\" selects TPU v5e hosts for a 4x4 slice, but ResourceClaimTemplate \"tpus\" cannot be allocated") !=
        std::string::npos);
  for (const bool any_node : {true, false}) {
    auto d = kept;
    if (!any_node) d["cluster"]["node_groups"].erase(2);   // no v4 host: the claim fits no node
    auto waiting = parse_scenario(d.dump(), "slices.json", ".");
    waiting.keep_unplaceable = true;
    const auto w = run(waiting);
    CHECK(w.summary().completed == 0);
  }
}
