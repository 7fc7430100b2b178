// DRA objects read from kubectl YAML/JSON, the slices derived from the node model in NVIDIA's
// vocabulary, and `gpusched dra allocate` end to end.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include <gpusched/dra/nvidia.hpp>
#include <gpusched/error.hpp>
#include <gpusched/policies/quota/quota_resources.hpp>
#include <gpusched/scenario/k8s_dra.hpp>
#include <gpusched/scenario/scenario.hpp>
#include <gpusched/traces/native.hpp>
#include <gpusched/traces/swf.hpp>

using namespace gpusched;
using namespace gpusched::scenario;

namespace {

const std::filesystem::path kRepo = GPUSCHED_SOURCE_DIR;

DraObjects read(const std::string& yaml) { return read_dra_objects(parse_kubernetes_objects(yaml, "dra.yaml")); }

std::string error_of(const std::string& yaml) {
  try {
    (void)read(yaml);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

const char* kSlice = R"(
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: node-1-gpus}
spec:
  driver: gpu.nvidia.com
  nodeName: node-1
  pool: {name: node-1, generation: 1, resourceSliceCount: 1}
  devices:
  - name: gpu-0
    attributes:
      type: {string: gpu}
      productName: {string: NVIDIA H100 80GB HBM3}
      cudaComputeCapability: {version: 9.0.0}
      resource.kubernetes.io/pcieRoot: {string: pci0000:17}
      index: {int: 0}
    capacity:
      memory: {value: 81559Mi}
  - name: gpu-1
    attributes:
      type: {string: gpu}
      productName: {string: NVIDIA H100 80GB HBM3}
      cudaComputeCapability: {version: 9.0.0}
      resource.kubernetes.io/pcieRoot: {string: pci0000:29}
      index: {int: 1}
    capacity:
      memory: {value: 81559Mi}
)";

const char* kClass = R"(
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu.nvidia.com}
spec:
  selectors:
  - cel: {expression: "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'"}
)";

}  // namespace

TEST_CASE("DRA objects read from kubectl YAML: slices, classes, claims (v1 and v1beta1), templates, nodes", "[dra][k8s]") {
  const std::string claim = R"(
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: two, namespace: ml}
spec:
  devices:
    requests:
    - name: gpus
      exactly: {deviceClassName: gpu.nvidia.com, count: 2}
    constraints:
    - {requests: [gpus], matchAttribute: resource.kubernetes.io/pcieRoot}
---
apiVersion: resource.k8s.io/v1beta1
kind: ResourceClaim
metadata: {name: old-style}
spec:
  devices:
    requests:
    - {name: gpu, deviceClassName: gpu.nvidia.com, allocationMode: ExactCount, count: 1}
    - name: any
      firstAvailable:
      - {name: big, deviceClassName: gpu.nvidia.com, selectors: [{cel: {expression: "device.attributes['gpu.nvidia.com'].index > 5"}}]}
      - {name: small, deviceClassName: gpu.nvidia.com}
status:
  allocation:
    devices:
      results:
      - {request: gpu, driver: gpu.nvidia.com, pool: node-1, device: gpu-1}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: one-gpu}
spec:
  spec:
    devices:
      requests:
      - {name: gpu, exactly: {deviceClassName: gpu.nvidia.com}}
---
apiVersion: v1
kind: Node
metadata:
  name: node-1
  labels: {zone: a}
status: {capacity: {cpu: "8"}}
)";
  const auto objs = read(std::string(kSlice) + "---" + kClass + "---" + claim);
  REQUIRE(objs.slices.size() == 1);
  const auto& dev = objs.slices[0].devices[0];
  CHECK(dev.attribute("gpu.nvidia.com/type") != nullptr);   // bare names belong to the driver
  CHECK(dev.attribute("resource.kubernetes.io/pcieRoot") != nullptr);
  CHECK(*dev.capacity_of("gpu.nvidia.com/memory") == dra::Quantity::from_int(std::int64_t{81559} * 1024 * 1024));
  REQUIRE(objs.claims.size() == 2);
  CHECK(objs.claims[0].id() == "ml/two");
  CHECK(objs.claims[0].constraints[0].match_attribute == "resource.kubernetes.io/pcieRoot");
  CHECK(objs.claims[1].requests[1].first_available.size() == 2);
  REQUIRE(objs.claims[1].allocated);
  CHECK(objs.templates.size() == 1);
  REQUIRE(objs.nodes.size() == 1);
  CHECK(objs.nodes[0].labels.at("zone") == "a");

  // The v1beta1 claim holds gpu-1 already; the v1 claim wants two GPUs on one PCIe root, which
  // this node's two GPUs are not: it stays pending, and the message says so.
  const auto outcomes = allocate_claims(objs);
  REQUIRE(outcomes.size() == 2);
  CHECK_FALSE(outcomes[0].allocation);
  CHECK(outcomes[0].reason == "cannot allocate all claims on any node");
  CHECK(outcomes[1].preallocated);
  CHECK(format_dra(outcomes) ==
        "claim      node  devices\n"
        "ml/two     -     pending: cannot allocate all claims on any node\n"
        "old-style  -     gpu=gpu.nvidia.com/node-1/gpu-1 (allocated before)\n"
        "1 of 2 claims allocated\n");
}

TEST_CASE("DRA config: a class's and a claim's opaque config are read from kubectl YAML and printed in the allocation, "
          "as the API prints devices.config", "[dra][k8s]") {
  const std::string yaml = std::string(kSlice) + R"(
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu.nvidia.com}
spec:
  selectors:
  - cel: {expression: "device.driver == 'gpu.nvidia.com'"}
  config:
  - opaque: {driver: gpu.nvidia.com, parameters: {apiVersion: resource.nvidia.com/v1beta1, kind: GpuConfig, sharing: {strategy: TimeSlicing}}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: two, namespace: ns}
spec:
  devices:
    requests:
    - {name: a, exactly: {deviceClassName: gpu.nvidia.com}}
    - name: b
      firstAvailable:
      - {name: big, deviceClassName: gpu.nvidia.com, count: 4}
      - {name: one, deviceClassName: gpu.nvidia.com}
    config:
    - requests: [b/one]
      opaque: {driver: gpu.nvidia.com, parameters: {kind: GpuConfig, sharing: {strategy: MPS}}}
    - requests: [b/big]
      opaque: {driver: gpu.nvidia.com, parameters: {kind: GpuConfig}}
)";
  const auto objs = read(yaml);
  REQUIRE(objs.classes.size() == 1);
  REQUIRE(objs.classes[0].config.size() == 1);
  CHECK(objs.classes[0].config[0].driver == "gpu.nvidia.com");
  const auto outcomes = allocate_claims(objs);
  REQUIRE(outcomes.size() == 1);
  REQUIRE(outcomes[0].allocation);
  const auto j = dra_json(outcomes);
  // The class's config once, for both requests (b by its chosen alternative); the claim's entry
  // for the alternative chosen; none for the one not chosen.
  CHECK(j[0]["allocation"]["devices"]["config"] == nlohmann::json::parse(R"([
    {"source": "FromClass", "requests": ["a", "b/one"],
     "opaque": {"driver": "gpu.nvidia.com", "parameters": {"apiVersion": "resource.nvidia.com/v1beta1", "kind": "GpuConfig", "sharing": {"strategy": "TimeSlicing"}}}},
    {"source": "FromClaim", "requests": ["b/one"],
     "opaque": {"driver": "gpu.nvidia.com", "parameters": {"kind": "GpuConfig", "sharing": {"strategy": "MPS"}}}}])"));
  // Mistakes, with the field.
  const std::string head = "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: c}\nspec:\n  devices:\n"
                           "    requests: [{name: r, exactly: {deviceClassName: x}}]\n    config:\n";
  CHECK(error_of(head + "    - {requests: [s], opaque: {driver: d, parameters: {}}}\n").find("/spec/devices/config/0/requests/0': names no request of this claim: s") !=
        std::string::npos);
  CHECK(error_of(head + "    - {opaque: {driver: d, parameters: [1]}}\n").find("/spec/devices/config/0/opaque/parameters': must be a JSON object") !=
        std::string::npos);
  CHECK(error_of(head + "    - {opaque: {parameters: {}}}\n").find("/spec/devices/config/0/opaque/driver': missing") != std::string::npos);
  CHECK(error_of(head + "    - {requests: [r]}\n").find("/spec/devices/config/0/opaque': missing (required") != std::string::npos);
  CHECK(error_of(head + "    - {opaque: {driver: d, parameters: {}}, kind: x}\n").find("/spec/devices/config/0/kind") != std::string::npos);
  CHECK(error_of("apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {name: x}\nspec:\n  config:\n  - {requests: [a], opaque: {driver: d, parameters: {}}}\n")
            .find("/spec/config/0/requests") != std::string::npos);   // a class's config names no requests
  CHECK(error_of("apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {name: x}\nspec:\n  config:\n  - {opaque: {driver: d, parameters: {big: '" +
                 std::string(10 * 1024, 'x') + "'}}}\n")
            .find("longer than 10 KiB") != std::string::npos);
}

TEST_CASE("DRA objects: every mistake names the file, line and field", "[dra][k8s]") {
  const std::string head = "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: c}\nspec:\n  devices:\n    requests:\n";
  // A selector outside the subset, with its column.
  CHECK(error_of(head + "    - {name: r, exactly: {deviceClassName: x, selectors: [{cel: {expression: \"device.frob()\"}}]}}\n")
            .find("dra.yaml:7: field 'document 1, ResourceClaim c, /spec/devices/requests/0/exactly/selectors/0/cel/expression': CEL: "
                  "undeclared reference to 'frob'") != std::string::npos);
  // Alpha features of Kubernetes 1.34 are refused by name.
  CHECK(error_of(head + "    - {name: r, exactly: {deviceClassName: x, tolerations: []}}\n").find("not modelled: device taints and tolerations") !=
        std::string::npos);
  CHECK(error_of(head + "    - {name: r, exactly: {count: 1}}\n").find("missing device class name") != std::string::npos);
  CHECK(error_of(head + "    - {name: r, exactly: {deviceClassName: x, allocationMode: Some}}\n").find("unsupported count mode Some") != std::string::npos);
  CHECK(error_of(head + "    - {name: r, exactly: {deviceClassName: x, count: 0}}\n").find("out of range") != std::string::npos);
  CHECK(error_of(head + "    - {name: r, exactly: {deviceClassName: x}, firstAvailable: []}\n").find("exactly one of exactly, firstAvailable") !=
        std::string::npos);
  CHECK(error_of(head + "    - {name: r, exactly: {deviceClassName: x}}\n    constraints: [{matchAttribute: numa}]\n").find("fully qualified") !=
        std::string::npos);
  CHECK(error_of(head + "    - {name: r, exactly: {deviceClassName: x}}\n    constraints: [{requests: [s], matchAttribute: a.b/numa}]\n")
            .find("names no request of this claim: s") != std::string::npos);
  const std::string slice_head = "apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {name: s}\nspec:\n  driver: d\n  pool: {name: p, resourceSliceCount: 1}\n";
  CHECK(error_of(slice_head + "  devices: [{name: a}]\n").find("exactly one of nodeName, nodeSelector, allNodes") != std::string::npos);
  CHECK(error_of(slice_head + "  nodeName: n\n  devices: [{name: a}, {name: a}]\n").find("device name a repeats") != std::string::npos);
  CHECK(error_of(slice_head + "  nodeName: n\n  devices: [{name: a, attributes: {v: {version: '1.0'}}}]\n").find("is not a semantic version") !=
        std::string::npos);
  CHECK(error_of(slice_head + "  nodeName: n\n  devices: [{name: a, attributes: {v: {int: 1, bool: true}}}]\n").find("exactly one of int, bool") !=
        std::string::npos);
  CHECK(error_of(slice_head + "  nodeName: n\n  devices: [{name: a, capacity: {memory: {value: lots}}}]\n").find("expected a Kubernetes quantity") !=
        std::string::npos);
  CHECK(error_of(slice_head + "  nodeName: n\n  devices: [{name: a, taints: []}]\n").find("not modelled: device taints") != std::string::npos);
  CHECK(error_of(slice_head + "  nodeName: n\n  sharedCounters: []\n").find("not modelled: partitionable devices") != std::string::npos);
  CHECK(error_of(slice_head + "  nodeSelector: {nodeSelectorTerms: [{matchExpressions: []}, {matchExpressions: []}]}\n").find("exactly one term") !=
        std::string::npos);
  CHECK(error_of("apiVersion: resource.k8s.io/v1alpha3\nkind: DeviceClass\nmetadata: {name: x}\n").find("v1, v1beta2 and v1beta1") != std::string::npos);
  CHECK(error_of(head + "    - {name: r, exactly: {deviceClassName: x, allocationMode: All, count: 3}}\n").find("must not be set when allocationMode is All") !=
        std::string::npos);
  CHECK(error_of(head + "    - {name: Req 0, exactly: {deviceClassName: x}}\n").find("is not a DNS label") != std::string::npos);
  CHECK(error_of(slice_head + "  nodeName: n\n  devices: [{name: GPU 0/x}]\n").find("is not a DNS label") != std::string::npos);
  CHECK(error_of("apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {name: s}\nspec:\n  driver: Driver A!\n  nodeName: n\n"
                 "  pool: {name: p, resourceSliceCount: 1}\n").find("is not a DNS subdomain") != std::string::npos);
  CHECK(error_of(slice_head + "  nodeName: n\n  devices: [{name: a, attributes: {Bad_Domain!/x: {int: 1}}}]\n").find("is not a qualified name") !=
        std::string::npos);
  // status.allocation: null is an unallocated claim.
  const auto objs = read(head + "    - {name: r, exactly: {deviceClassName: x}}\nstatus: {allocation: null}\n");
  CHECK_FALSE(objs.claims[0].allocated);
  CHECK(error_of("apiVersion: v1\nkind: Pod\nmetadata: {name: x}\n").find("does not read kind Pod") != std::string::npos);
}

TEST_CASE("DRA slices derived from the node model read back as they were written", "[dra][k8s]") {
  const Scenario sc = load_scenario((kRepo / "examples" / "devices.json").string());
  const auto list = nvidia_dra_objects(sc.nodes, sc.catalog);
  const auto objs = read_dra_objects(parse_kubernetes_objects(list.dump(), "slices.json"));
  CHECK(objs.classes.size() == 4);   // gpu.nvidia.com, mig.nvidia.com, vfio.gpu.nvidia.com, tpu.google.com
  std::vector<dra::ResourceSlice> direct;
  for (const auto& n : sc.nodes) {
    if (auto s = dra::nvidia_slice(n, sc.catalog)) direct.push_back(*s);
    else if (auto t = dra::tpu_slice(n)) direct.push_back(*t);
  }
  REQUIRE(objs.slices.size() == direct.size());
  std::size_t mig = 0, whole = 0, vfio = 0, tpu = 0;
  for (std::size_t i = 0; i < direct.size(); ++i) {
    REQUIRE(objs.slices[i].devices.size() == direct[i].devices.size());
    for (std::size_t k = 0; k < direct[i].devices.size(); ++k) {
      const auto& a = objs.slices[i].devices[k];
      const auto& b = direct[i].devices[k];
      CHECK(a.name == b.name);
      CHECK(a.capacity == b.capacity);
      REQUIRE(a.attributes.size() == b.attributes.size());
      for (std::size_t j = 0; j < a.attributes.size(); ++j) {
        CHECK(a.attributes[j].first == b.attributes[j].first);
        CHECK(dra::same_value(a.attributes[j].second, b.attributes[j].second));
      }
      if (objs.slices[i].driver == "tpu.google.com") {
        ++tpu;
        continue;
      }
      const auto& type = std::get<std::string>(*a.attribute("gpu.nvidia.com/type"));
      (type == "mig" ? mig : type == "vfio" ? vfio : whole) += 1;
    }
  }
  CHECK(tpu == 64);     // tpu-v4: a 4x4x4 pool of 16 hosts x 4 chips (accel0..accel3 each)
  CHECK(mig == 16);     // a100-mig: 2 nodes x 4 GPUs x (4g.40gb + 3g.40gb)
  CHECK(whole == 24);   // vGPU, time-slicing, hgx and pcie nodes; dynamic-MIG GPUs publish nothing
  CHECK(vfio == 8);     // passthrough: 2 nodes x 4 GPUs, named gpu-vfio-<k>
  // A GI's SMs and engines, as NVML's profile info counts them (MIG user guide, A100 table:
  // 3g.40gb has 3 copy engines and 2 NVDECs; 4g.40gb 4 and 2; neither a JPEG decoder nor an OFA).
  std::map<std::string, std::vector<std::int64_t>> engines;   // profile -> SMs, CE, DEC, ENC, JPEG, OFA
  for (const auto& sl : direct) {
    for (const auto& d : sl.devices) {
      const auto* profile = d.attribute("gpu.nvidia.com/profile");
      if (profile == nullptr) continue;
      auto& e = engines[std::get<std::string>(*profile)];
      e.clear();
      for (const char* c : {"multiprocessors", "copyEngines", "decoders", "encoders", "jpegEngines", "ofaEngines"}) {
        const auto* q = d.capacity_of(std::string("gpu.nvidia.com/") + c);
        e.push_back(q == nullptr ? -1 : q->as_integer().value_or(-2));
      }
    }
  }
  CHECK(engines["3g.40gb"] == std::vector<std::int64_t>{42, 3, 2, 0, 0, 0});
  CHECK(engines["4g.40gb"] == std::vector<std::int64_t>{56, 4, 2, 0, 0, 0});

  // The example claims (docs/dra.md), allocated on those slices.
  auto objects = parse_kubernetes_objects(list.dump(), "slices.json");
  auto claims = read_kubernetes_objects(kRepo / "examples" / "dra" / "claims.yaml");
  objects.insert(objects.end(), claims.begin(), claims.end());
  const auto outcomes = allocate_claims(read_dra_objects(objects));
  REQUIRE(outcomes.size() == 4);
  for (const auto& o : outcomes) {
    INFO(o.claim << ": " << o.reason);
    REQUIRE(o.allocation);
  }
  CHECK(outcomes[0].node == "hgx-0000");    // four GPUs of one NVLink domain
  CHECK(outcomes[1].node == "pcie-0000");   // two GPUs behind one PCIe switch
  CHECK(outcomes[2].allocation->devices[0].device == "gpu-0-mig-9-4-4");
  CHECK(outcomes[3].allocation->devices[0].request == "gpu/hopper");
  CHECK(outcomes[3].allocation->devices[0].device == "gpu-4");   // gpu-0..3 went to the first claim
}

namespace {

nlohmann::json dra_scenario_doc() {
  std::ifstream in(kRepo / "examples" / "dra" / "scenario.json");
  return nlohmann::json::parse(in);
}

Scenario dra_scenario(const nlohmann::json& doc) {
  return parse_scenario(doc.dump(), "dra-scenario.json", kRepo / "examples" / "dra");
}

std::string run_error(const nlohmann::json& doc) {
  try {
    (void)run(dra_scenario(doc));
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

/// A job's claim resolved as a run resolves it: it states `fewest` whole GPUs, and quotas charge `most`.
void check_claim_sizes(const Scenario& sc, std::size_t job, std::int32_t fewest, std::int32_t most) {
  auto resolved = sc.jobs;
  prepare_claims(resolved, sc);
  REQUIRE(job < resolved.size());
  CHECK(resolved[job].request.gpu.mode == GpuMode::kWhole);
  CHECK(resolved[job].request.gpu.count == fewest);
  REQUIRE(resolved[job].constraints.claims);
  CHECK(resolved[job].constraints.claims->most_devices == most);
}

/// GPUs held, replayed from the event log: each held by one owner (a job, or a shared claim) at a time.
struct GpuLedger {
  std::map<std::string, std::string> holder;                 // "node[i]" -> owner
  std::map<std::string, std::vector<std::string>> held;      // owner -> its GPUs
  void take(const std::string& owner, const std::string& node, const std::vector<int>& gpus) {
    for (const int g : gpus) {
      const std::string key = node + "[" + std::to_string(g) + "]";
      CHECK(holder.count(key) == 0);
      holder[key] = owner;
      held[owner].push_back(key);
    }
  }
  void give_back(const std::string& owner) {
    for (const auto& g : held[owner]) holder.erase(g);
    held.erase(owner);
  }
};

/// A fixed-seed stream for random workloads: next(n) is in [0, n) (64-bit LCG, high bits).
struct Lcg {
  std::uint64_t state;
  std::uint64_t operator()(std::uint64_t n) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (state >> 33) % n;
  }
};

/// `n` jobs `spacing` s apart, lasting 30 s + up to `spread` s: about half name `claim` in
/// `field`, the others ask for 1 to `max_gpus` GPUs.
nlohmann::json random_jobs(Lcg& next, int n, int spacing, std::uint64_t spread, const char* cpu, const char* memory, const char* field,
                           const std::string& claim, std::uint64_t max_gpus) {
  nlohmann::json jobs = nlohmann::json::array();
  for (int i = 0; i < n; ++i) {
    nlohmann::json j = {{"id", "j" + std::to_string(i)}, {"submit_time", i * spacing}, {"duration", 30 + next(spread)},
                        {"requests", {{"cpu", cpu}, {"memory", memory}}}};
    if (next(2) == 0) j[field] = claim;
    else j["requests"]["nvidia.com/gpu"] = std::to_string(1 + next(max_gpus));
    jobs.push_back(j);
  }
  return jobs;
}

/// A start or finish line of the event log: the job, and for a start each task's node and GPUs
/// ("pcie-0000[2,3];pcie-0001" -> {pcie-0000, {2, 3}}, {pcie-0001, {}}).
struct StartOrFinish {
  bool start = false;
  std::string job;
  std::vector<std::pair<std::string, std::vector<int>>> tasks;
};

/// The DRA example scenario on one 2-socket node of 4 A100s (32 CPUs, 16 per NUMA node), under
/// topology-manager's single-numa-node with dynamic-resources choosing the devices.
nlohmann::json numa_claim_doc() {
  auto doc = dra_scenario_doc();
  doc["cluster"] = nlohmann::json::parse(R"({"node_groups": [{"name": "n", "count": 1, "cpu": 32, "memory": "128Gi", "gpus": 4,
      "gpu_model": "A100-80GB", "sockets": 2, "topology": {"nvlink": "none"}}]})");
  doc["profile"] = nlohmann::json::parse(R"({"name": "dra-numa", "filter": ["node-resources-fit",
      {"name": "topology-manager", "args": {"policy": "single-numa-node"}}, "dynamic-resources"],
      "score": ["first-fit"], "device_select": {"name": "dynamic-resources"}})");
  return doc;
}

/// Per job, from claims.csv: the requests (or "request/alternative") its devices served, and how
/// many devices it held.
struct ClaimRows {
  std::map<std::string, std::set<std::string>> requests;
  std::map<std::string, int> devices;
};
ClaimRows claim_rows(const RunResult& r) {
  ClaimRows out;
  for (const auto& row : r.claims()) {
    out.requests[row.job].insert(row.request);
    ++out.devices[row.job];
  }
  return out;
}

/// `doc` with every job in queue "default" under a ResourceQuota of `amount` of `resource`
/// (Kubernetes' rule: the API server refuses what exceeds it).
nlohmann::json with_quota(nlohmann::json doc, const std::string& resource, int amount) {
  doc["profile"]["pre_filter"] = nlohmann::json::array({{{"name", "resource-quota"}, {"args", {{"quotas", {{"default", {{resource, amount}}}}}}}}});
  for (auto& j : doc["workload"]["jobs"]) j["queue"] = "default";
  return doc;
}

std::vector<StartOrFinish> starts_and_finishes(const RunResult& r) {
  std::vector<StartOrFinish> out;
  for (const auto& line : r.event_log()) {
    const bool start = line.find(",start,") != std::string::npos, finish = line.find(",finish,") != std::string::npos;
    if (!start && !finish) continue;
    StartOrFinish e;
    e.start = start;
    const auto b = line.find(start ? ",start," : ",finish,") + (start ? 7 : 8);
    e.job = line.substr(b, line.find(',', b) - b);
    if (start) {
      std::string detail = line.substr(line.find(",,", b) + 2);
      detail.erase(std::remove(detail.begin(), detail.end(), '"'), detail.end());
      std::stringstream tasks(detail);
      for (std::string task; std::getline(tasks, task, ';');) {
        const auto open = task.find('[');
        auto& t = e.tasks.emplace_back(task.substr(0, open), std::vector<int>{});
        if (open == std::string::npos) continue;
        std::stringstream list(task.substr(open + 1, task.size() - open - 2));
        for (std::string x; std::getline(list, x, ',');) t.second.push_back(std::stoi(x));
      }
    }
    out.push_back(std::move(e));
  }
  return out;
}

/// Runs `mix` (a doc whose jobs came from random_jobs) with the node index and with the plain
/// scan: the event logs must match, every job completes, and no GPU is granted twice (replayed
/// from the event log). Returns, for each start of a job naming a claim template, the job, its
/// node and how many GPUs it took.
struct ClaimStart {
  std::string job, node;
  std::size_t gpus;
};
std::vector<ClaimStart> claim_starts_of_random_mix(const nlohmann::json& mix, const std::function<Scenario(const nlohmann::json&)>& parse) {
  auto indexed = parse(mix);
  auto scanned = parse(mix);
  scanned.exact_scan = true;
  const auto a = run(indexed), b = run(scanned);
  CHECK(a.event_log() == b.event_log());
  CHECK(a.summary().completed == mix["workload"]["jobs"].size());
  GpuLedger ledger;
  std::vector<ClaimStart> out;
  for (const auto& e : starts_and_finishes(a)) {
    if (!e.start) {
      ledger.give_back(e.job);
      continue;
    }
    REQUIRE(e.tasks.size() == 1);
    const auto& [node_name, idx] = e.tasks.front();
    ledger.take(e.job, node_name, idx);
    if (mix["workload"]["jobs"][static_cast<std::size_t>(std::stoi(e.job.substr(1)))].contains("claim_template")) {
      out.push_back({e.job, node_name, idx.size()});
    }
  }
  return out;
}


/// job -> its start detail in the event log ("pcie-0000[2,3]").
std::map<std::string, std::string> starts(const RunResult& r) {
  std::map<std::string, std::string> out;
  for (const auto& line : r.event_log()) {
    const auto p = line.find(",start,");
    if (p == std::string::npos) continue;
    const auto job_end = line.find(',', p + 7);
    std::string detail = line.substr(line.find(",,", job_end) + 2);
    detail.erase(std::remove(detail.begin(), detail.end(), '"'), detail.end());
    out[line.substr(p + 7, job_end - p - 7)] = detail;
  }
  return out;
}

}  // namespace

TEST_CASE("Jobs with a DRA claim run through the engine: the claim's constraint decides the GPUs", "[dra][engine]") {
  const auto doc = dra_scenario_doc();
  const auto with_claims = run(dra_scenario(doc));
  const auto got = starts(with_claims);
  // Two-GPU claims constrained to one PCIe root take GPUs 2-3 beside a one-GPU job on GPU 0.
  CHECK(got.at("one-a") == "pcie-0000[0]");
  CHECK(got.at("pair-a") == "pcie-0000[2,3]");
  CHECK(got.at("one-b") == "pcie-0000[1]");
  CHECK(got.at("pair-b") == "pcie-0001[0,1]");
  CHECK(got.at("pair-c") == "pcie-0001[2,3]");

  // The same jobs asking nvidia.com/gpu: 2 under first fit: the pair spans the two roots.
  auto plain = doc;
  plain.erase("dra");
  plain["profile"] = "first-fit";
  for (auto& j : plain["workload"]["jobs"]) {
    if (j.contains("claim_template")) {
      j.erase("claim_template");
      j["requests"]["nvidia.com/gpu"] = "2";
    }
  }
  const auto without = starts(run(dra_scenario(plain)));
  CHECK(without.at("pair-a") == "pcie-0000[1,2]");
}

TEST_CASE("Jobs with DRA claims on random workloads: every claim's GPUs share a PCIe root, none is granted twice", "[dra][engine]") {
  auto doc = dra_scenario_doc();
  Lcg next{7};
  for (int round = 0; round < 5; ++round) {
    doc["workload"]["jobs"] = random_jobs(next, 60, 5, 300, "2", "8Gi", "claim_template", "two-gpus-one-pcie-root", 2);
    const auto r = run(dra_scenario(doc));
    INFO("round " << round);
    CHECK(r.summary().completed == 60);
    // Replay the event log: a GPU is held by one job at a time; a claim's two GPUs share a root.
    GpuLedger ledger;
    for (const auto& e : starts_and_finishes(r)) {
      const std::string& job = e.job;
      if (!e.start) {
        ledger.give_back(job);
        continue;
      }
      REQUIRE(e.tasks.size() == 1);
      const auto& [node_name, idx] = e.tasks.front();
      ledger.take(job, node_name, idx);
      const auto& spec = doc["workload"]["jobs"][static_cast<std::size_t>(std::stoi(job.substr(1)))];
      if (spec.contains("claim_template")) {
        REQUIRE(idx.size() == 2);
        CHECK(idx[0] / 2 == idx[1] / 2);   // gpus_per_pcie_switch 2: GPUs 0-1 and 2-3 share a root
      }
    }
  }
}

TEST_CASE("DRA firstAvailable alternatives of different sizes: four H100s, else eight A100s", "[dra][engine]") {
  // examples/dra/alternatives.json: one 8-GPU H100 node, then two 8-GPU A100 nodes, first fit.
  std::ifstream in(kRepo / "examples" / "dra" / "alternatives.json");
  const auto doc = nlohmann::json::parse(in);
  const auto parse = [](const nlohmann::json& d) { return parse_scenario(d.dump(), "alternatives.json", kRepo / "examples" / "dra"); };
  const auto sc = parse(doc);
  // The job states the smallest alternative (4 GPUs: fit and the index's bounds refuse no node a
  // smaller alternative fits); quotas charge the largest (8), as Kubernetes' ResourceQuota does.
  REQUIRE(sc.jobs.size() == 5);
  check_claim_sizes(sc, 0, 4, 8);

  const auto r = run(sc);
  const auto got = starts(r);
  CHECK(got.at("train-1") == "h100-0000[0,1,2,3]");
  CHECK(got.at("train-2") == "h100-0000[4,5,6,7]");
  CHECK(got.at("train-3") == "a100-0000[0,1,2,3,4,5,6,7]");
  CHECK(got.at("train-4") == "a100-0001[0,1,2,3,4,5,6,7]");
  CHECK(got.at("train-5") == "h100-0000[0,1,2,3]");   // the first H100s free again at 600 s
  CHECK(r.summary().completed == 5);
  // claims.csv says which alternative each task got.
  const auto rows = claim_rows(r);
  CHECK(rows.requests.at("train-1") == std::set<std::string>{"gpus/h100"});
  CHECK(rows.requests.at("train-3") == std::set<std::string>{"gpus/a100"});
  CHECK(rows.devices.at("train-1") == 4);
  CHECK(rows.devices.at("train-3") == 8);

  // Quotas charge the worst case: with 8 GPUs of quota, one job at a time, even on 4 H100s.
  // Kubernetes' rule ("created"): the API server refuses the second pod, naming the charge.
  auto quota = with_quota(doc, "requests.nvidia.com/gpu", 8);
  const auto refused = run(parse(quota));
  CHECK(starts(refused).size() == 1);
  CHECK(refused.engine().reason(refused.engine().job(JobId{1}).reason).find("requested: requests.nvidia.com/gpu=8, used: requests.nvidia.com/gpu=8") !=
        std::string::npos);
  // gpusched's "running" rule: the jobs wait, and run one after another.
  quota["profile"]["pre_filter"][0]["args"]["charge"] = "running";
  const auto q = starts(run(parse(quota)));
  CHECK(q.size() == 5);
  CHECK(q.at("train-1") == "h100-0000[0,1,2,3]");
  CHECK(q.at("train-2") == "h100-0000[0,1,2,3]");   // at 600 s, when train-1's charge of 8 is returned
  CHECK(q.at("train-3") == "h100-0000[0,1,2,3]");

  // The index and the plain scan decide alike on random mixes of claim jobs and plain GPU jobs,
  // and no GPU is granted twice.
  Lcg next{5};
  auto mix = doc;
  mix["workload"]["jobs"] = random_jobs(next, 120, 7, 400, "4", "16Gi", "claim_template", "four-h100-else-eight-a100", 4);
  mix["profile"]["score"] = nlohmann::json::parse(R"([{"name": "most-allocated"}])");
  for (const auto& c : claim_starts_of_random_mix(mix, parse)) {
    INFO(c.job << " on " << c.node);
    CHECK(c.gpus == (c.node.rfind("h100", 0) == 0 ? 4u : 8u));
  }
}

TEST_CASE("Shared DRA claims: retries, attained service, the 256-task limit, the autoscaler, queueing modes", "[dra][engine][autoscaler]") {
  // Review of 8e2e466 (a helper's repros, one section each).
  std::ifstream in(kRepo / "examples" / "dra" / "shared.json");
  const auto doc = nlohmann::json::parse(in);
  const auto parse = [](const nlohmann::json& d) { return parse_scenario(d.dump(), "shared.json", kRepo / "examples" / "dra"); };
  auto shared_jobs = [](const char* a_duration) {
    return nlohmann::json::parse(std::string(R"([
      {"id": "a", "submit_time": 0.5, "duration": )") + a_duration + R"(, "gpu_util": 0.5, "resource_claim": "shared-pair", "requests": {"cpu": "8", "memory": "32Gi"}},
      {"id": "cpuhog", "submit_time": 0.6, "duration": 1000, "requests": {"cpu": "52", "memory": "16Gi"}},
      {"id": "b", "submit_time": 1.5, "duration": 500, "gpu_util": 0.5, "resource_claim": "shared-pair", "requests": {"cpu": "16", "memory": "16Gi"}}])");
  };
  SECTION("a claim freed by its last job opens every node to its waiting jobs (no narrowed retry)") {
    // b cannot join a on pcie-0000 (CPU); once a ends the claim is free, and b allocates it on
    // pcie-0001, where nothing changed.
    auto d = doc;
    d["workload"]["jobs"] = shared_jobs("100");
    const auto got = starts(run(parse(d)));
    CHECK(got.at("b") == "pcie-0001[0,1]");
    const auto r = run(parse(d));
    CHECK(r.jobs()[2].start_s == 100.5);
  }
  SECTION("attained GPU service counts the devices from when they were handed over") {
    const auto r = run(parse(doc));
    std::map<std::string, double> gpu_s;
    for (const auto& row : r.jobs()) gpu_s[row.job] = row.attained_gpu_s;
    CHECK(gpu_s.at("trainer") == Approx(600.0));     // 2 GPUs x 1-301 s
    CHECK(gpu_s.at("evaluator") == Approx(402.0));   // 2 GPUs x 301-502 s (was 1,000)
    CHECK(gpu_s.at("late") == Approx(396.0));        // 2 GPUs x 502-700 s (was 600)
  }
  SECTION("a node failure under all of a claim's jobs: the lost GPU-hours are the holder's alone") {
    auto d = doc;
    d["cluster"]["node_groups"][0]["count"] = 1;
    d["events"] = nlohmann::json::parse(R"([{"time_s": 100, "node": "pcie-0000", "type": "node_down"},
                                            {"time_s": 110, "node": "pcie-0000", "type": "node_up"}])");
    d["workload"]["jobs"] = nlohmann::json::parse(R"([
      {"id": "A", "submit_time": 0, "duration": 300, "gpu_util": 0.25, "resource_claim": "shared-pair", "requests": {"cpu": "8", "memory": "16Gi"}},
      {"id": "B", "submit_time": 0, "duration": 500, "gpu_util": 0.25, "resource_claim": "shared-pair", "requests": {"cpu": "8", "memory": "16Gi"}},
      {"id": "C", "submit_time": 0, "duration": 500, "gpu_util": 0.25, "resource_claim": "shared-pair", "requests": {"cpu": "8", "memory": "16Gi"}}])");
    const auto r = run(parse(d));
    const auto rows = r.jobs();
    CHECK(rows[0].lost_gpu_hours == Approx(200.0 / 3600));   // A held the 2 GPUs for the 100 s lost
    CHECK(rows[1].lost_gpu_hours == 0.0);                    // B and C were handed them at 100 s, as they were evicted too
    CHECK(rows[2].lost_gpu_hours == 0.0);
    CHECK(r.summary().lost_gpu_hours == Approx(200.0 / 3600));
  }
  SECTION("restore overhead counts handed-over devices from when they were received") {
    auto d = doc;
    d["cluster"]["node_groups"][0]["count"] = 1;
    d["preemption"] = {{"restart_overhead_s", 100}};
    d["events"] = nlohmann::json::parse(R"([{"time_s": 50, "node": "pcie-0000", "type": "node_down"},
                                            {"time_s": 60, "node": "pcie-0000", "type": "node_up"}])");
    d["workload"]["jobs"] = nlohmann::json::parse(R"([
      {"id": "A", "submit_time": 0, "duration": 200, "gpu_util": 0.5, "resource_claim": "shared-pair", "requests": {"cpu": "8", "memory": "16Gi"}},
      {"id": "hog", "submit_time": 0.5, "duration": 120, "requests": {"cpu": "40", "memory": "16Gi"}},
      {"id": "B", "submit_time": 1, "duration": 500, "gpu_util": 0.5, "resource_claim": "shared-pair", "requests": {"cpu": "16", "memory": "16Gi"}},
      {"id": "filler", "submit_time": 55, "duration": 250, "priority": 100, "requests": {"cpu": "16", "memory": "16Gi"}}])");
    // A restores for 100 s on 2 GPUs (200 GPU-s); B receives them at 360 s, 20 s before its own
    // restore ends (40 GPU-s). Counting B's whole restore at 2 GPUs gave 400.
    CHECK(run(parse(d)).summary().overhead_gpu_hours == Approx(240.0 / 3600));
  }
  SECTION("at most 256 tasks use a claim, the one that allocates it included") {
    // Kubernetes: ResourceClaimReservedForMaxSize; dynamicresources.go PreFilter "resourceclaim in use".
    auto d = doc;
    d["workload"]["jobs"] = nlohmann::json::parse(R"([{"id": "big", "submit_time": 0, "duration": 100, "tasks": 300, "min_available": 300,
        "resource_claim": "shared-pair", "requests": {"cpu": "100m", "memory": "100Mi"}}])");
    CHECK(run_error(d).find("job \"big\" is a gang of 300 tasks that must run at once, but the whole cluster, empty, holds only 256 of them") !=
          std::string::npos);
    d["workload"]["jobs"][0]["min_available"] = 1;   // elastic: runs with 256
    const auto r = run(parse(d));
    CHECK(r.engine().job(JobId{0}).placements.size() == 256);
  }
  SECTION("the autoscaler adds no node for a job that can only join its claim's node") {
    auto d = doc;
    d["cluster"]["node_groups"][0]["count"] = 1;
    d["cluster"]["node_groups"].push_back(nlohmann::json::parse(R"({"name": "burst", "count": 3, "cpu": 64, "memory": "512Gi", "gpus": 4,
        "gpu_model": "A100-80GB", "topology": {"gpus_per_pcie_switch": 2}, "autoscale": {"min": 0, "provisioning_delay_s": 60, "scale_down_idle_s": 120}})"));
    d["autoscaler"] = {{"scan_interval_s", 10}};
    d["workload"]["jobs"] = shared_jobs("1000");
    const auto r = run(parse(d));
    for (const auto& line : r.event_log()) CHECK(line.find(",node_up,") == std::string::npos);
    // b waits for the claim to be free (a ends at 1000.5) and for CPU (cpuhog ends at 1000.6).
    CHECK(r.jobs()[2].start_s == Approx(1000.6));
  }
  SECTION("queue modes that decide on copies before jobs start are refused") {
    for (const char* queueing : {"preemptive", "easy-backfill"}) {
      auto d = doc;
      d["profile"]["queueing"] = queueing;
      INFO(queueing);
      CHECK(run_error(d).find(std::string("job \"trainer\" shares ResourceClaim \"shared-pair\" (resource_claim), which the profile's \"") + queueing +
                              "\" queueing does not model yet") != std::string::npos);
    }
  }
}

TEST_CASE("Jobs sharing a DRA claim time-slice its GPUs, or share them by MPS as the claim's GpuConfig says", "[dra][engine]") {
  // NVIDIA's DRA driver (k8s-dra-driver-gpu api/nvidia.com/resource/v1beta1): DefaultGpuConfig
  // and Normalize give a claim without sharing config the TimeSlicing strategy; sharing.go and
  // validate.go say what a GpuConfig / MigDeviceConfig may hold, and the messages for what not.
  std::ifstream in(kRepo / "examples" / "dra" / "shared.json");
  auto doc = nlohmann::json::parse(in);
  const auto claim = [](const nlohmann::json& config) {
    auto c = nlohmann::json::parse(R"({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "pair", "namespace": "t"},
        "spec": {"devices": {"requests": [{"name": "gpus", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 2}}]}}})");
    if (!config.is_null()) c["spec"]["devices"]["config"] = config;
    return c;
  };
  const auto gpu_config = [](const char* sharing) {
    return nlohmann::json::array({{{"opaque", {{"driver", "gpu.nvidia.com"},
                                              {"parameters", nlohmann::json::parse(std::string(R"({"apiVersion": "resource.nvidia.com/v1beta1", "kind": "GpuConfig", "sharing": )") +
                                                                                   sharing + "}")}}}}});
  };
  const auto ends = [&](const nlohmann::json& config, const char* jobs, double overhead = 0.0) {
    auto d = doc;
    d["dra"]["objects"] = nlohmann::json::array({claim(config)});
    d["workload"]["jobs"] = nlohmann::json::parse(jobs);
    if (overhead > 0) d["devices"] = {{"time_slicing_overhead", overhead}};
    const auto r = run(parse_scenario(d.dump(), "shared.json", kRepo / "examples" / "dra"));
    std::map<std::string, double> out;
    for (const auto& row : r.jobs()) out[row.job] = row.end_s.value_or(-1.0);
    return out;
  };
  const char* two_full = R"([
      {"id": "x", "submit_time": 0, "duration": 100, "resource_claim": "pair", "requests": {"cpu": "4", "memory": "16Gi"}},
      {"id": "y", "submit_time": 0, "duration": 300, "resource_claim": "pair", "requests": {"cpu": "4", "memory": "16Gi"}}])";
  // No config: time-sliced. Each keeps a whole GPU busy alone, so each goes at half speed while
  // both run: x's 100 s take 200 s; y has done 100 s of 300 by then and ends at 400 s alone.
  auto e = ends(nullptr, two_full);
  CHECK(e.at("x") == Approx(200.0));
  CHECK(e.at("y") == Approx(400.0));
  // The same written out, and with the cost of context switches (devices.time_slicing_overhead).
  e = ends(gpu_config(R"({"strategy": "TimeSlicing", "timeSlicingConfig": {"interval": "Long"}})"), two_full);
  CHECK(e.at("x") == Approx(200.0));
  e = ends(nullptr, two_full, 0.25);
  CHECK(e.at("x") == Approx(250.0));     // 0.5 / 1.25 = 0.4 of full speed
  CHECK(e.at("y") == Approx(450.0));     // 100 s done at 250 s, then 200 s alone
  // MPS: no context switches; a client gets at most its active thread percentage of the SMs.
  e = ends(gpu_config(R"({"strategy": "MPS"})"), two_full, 0.25);
  CHECK(e.at("x") == Approx(200.0));
  e = ends(gpu_config(R"({"strategy": "MPS", "mpsConfig": {"defaultActiveThreadPercentage": 25}})"), R"([
      {"id": "x", "submit_time": 0, "duration": 100, "gpu_util": 0.5, "resource_claim": "pair", "requests": {"cpu": "4", "memory": "16Gi"}}])");
  CHECK(e.at("x") == Approx(200.0));     // alone, but 25 % of the SMs for work that needs 50 %
  // Jobs that keep half a GPU busy each share it without slowing each other.
  e = ends(nullptr, R"([
      {"id": "x", "submit_time": 0, "duration": 100, "gpu_util": 0.5, "resource_claim": "pair", "requests": {"cpu": "4", "memory": "16Gi"}},
      {"id": "y", "submit_time": 0, "duration": 300, "gpu_util": 0.5, "resource_claim": "pair", "requests": {"cpu": "4", "memory": "16Gi"}}])");
  CHECK(e.at("x") == Approx(100.0));
  CHECK(e.at("y") == Approx(300.0));

  // What the driver refuses is refused before the run, naming the config.
  const auto error = [&](const nlohmann::json& config) {
    auto d = doc;
    d["dra"]["objects"] = nlohmann::json::array({claim(config)});
    d["workload"]["jobs"] = nlohmann::json::parse(two_full);
    return run_error(d);
  };
  CHECK(error(gpu_config(R"({"strategy": "MPS", "timeSlicingConfig": {"interval": "Short"}})"))
            .find("ResourceClaim \"pair\" spec.devices.config[0] (request gpus): cannot use TimeSlicingConfig with the 'MPS' strategy") !=
        std::string::npos);
  CHECK(error(gpu_config(R"({"strategy": "TimeSlicing", "mpsConfig": {}})")).find("cannot use MpsConfig with the 'TimeSlicing' strategy") !=
        std::string::npos);
  CHECK(error(gpu_config(R"({"strategy": "Fabric"})")).find("fabric GPU sharing strategy is not enabled") != std::string::npos);
  CHECK(error(gpu_config(R"({"strategy": "Spatial"})")).find("unknown GPU sharing strategy: Spatial") != std::string::npos);
  CHECK(error(gpu_config(R"({"strategy": "TimeSlicing", "timeSlicingConfig": {"interval": "Tiny"}})")).find("unknown time-slice interval: Tiny") !=
        std::string::npos);
  CHECK(error(gpu_config(R"({"strategy": "MPS", "mpsConfig": {"defaultActiveThreadPercentage": 101}})"))
            .find("active thread percentage must not be greater than 100") != std::string::npos);
  CHECK(error(gpu_config(R"({"strategy": "MPS", "mpsConfig": {"defaultActiveThreadPercentage": -1}})"))
            .find("active thread percentage must not be negative") != std::string::npos);
  CHECK(error(gpu_config(R"({"strategy": "MPS", "mpsConfig": {"defaultActiveThreadPercentage": 0}})")).find("no SMs") != std::string::npos);
  // Decoding is strict for every config of the driver (StrictDecoder), applied or not.
  CHECK(error(gpu_config(R"({"strategy": "MPS", "mpsConfig": {"defaultActiveThreadPercentage": 18446744073709551615}})"))
            .find("defaultActiveThreadPercentage 18446744073709551615 does not fit an int") != std::string::npos);
  CHECK(error(gpu_config(R"({"strategy": "MPS", "mpsConfig": {"defaultActiveThreadPercentage": 9223372036854775807}})"))
            .find("active thread percentage must not be greater than 100") != std::string::npos);
  CHECK(error(gpu_config(R"("MPS")")).find("sharing must be an object, not \"MPS\"") != std::string::npos);
  CHECK(error(gpu_config(R"({})")).find("sharing.strategy must be \"TimeSlicing\" or \"MPS\", not missing") != std::string::npos);
  CHECK(error(gpu_config(R"({"strategy": "MPS", "mpsConfig": "x"})")).find("mpsConfig must be an object, not \"x\"") != std::string::npos);
  CHECK(error(gpu_config(R"({"strategy": "MPS", "colour": 1})")).find("unknown field \"sharing.colour\" in a GpuConfig") != std::string::npos);
  auto no_kind = gpu_config(R"({"strategy": "MPS"})");
  no_kind[0]["opaque"]["parameters"].erase("kind");
  CHECK(error(no_kind).find("no kind (NVIDIA's driver reads GpuConfig, MigDeviceConfig or VfioDeviceConfig)") != std::string::npos);
  // Nulls are Go's nil pointers: no sharing is the default, time-slicing.
  CHECK(error(gpu_config("null")).empty());
  CHECK(error(gpu_config(R"({"strategy": "TimeSlicing", "mpsConfig": null})")).empty());
  // A config of another device type: skipped when it names no request, refused when it names this one.
  auto mig_kind = gpu_config(R"({"strategy": "MPS"})");
  mig_kind[0]["opaque"]["parameters"]["kind"] = "MigDeviceConfig";
  CHECK(error(mig_kind).empty());
  mig_kind[0]["requests"] = nlohmann::json::array({"gpus"});
  CHECK(error(mig_kind).find("ResourceClaim \"pair\" spec.devices.config[0]: cannot apply MigDeviceConfig to the GPUs of request gpus (NVIDIA's "
                             "driver applies a GpuConfig to them)") != std::string::npos);
  // Another driver's config is not NVIDIA's driver's business. The claim's last config that
  // applies wins, and only it is validated (Validate runs on the configs applied).
  auto other = gpu_config(R"({"strategy": "Spatial"})");
  other[0]["opaque"]["driver"] = "example.com";
  CHECK(error(other).empty());
  auto two = gpu_config(R"({"strategy": "Spatial"})");
  two.push_back(gpu_config(R"({"strategy": "MPS"})")[0]);
  CHECK(error(two).empty());
  two[1]["requests"] = nlohmann::json::array({"watch"});   // not this request: the first one applies, and its strategy is refused
  auto with_watch = claim(two);
  with_watch["spec"]["devices"]["requests"].push_back(
      nlohmann::json::parse(R"({"name": "watch", "exactly": {"deviceClassName": "gpu.nvidia.com", "adminAccess": true}})"));
  auto d = doc;
  d["dra"]["objects"] = nlohmann::json::array({with_watch});
  d["workload"]["jobs"] = nlohmann::json::parse(two_full);
  INFO(run_error(d));
  CHECK(run_error(d).find("ResourceClaim \"pair\" spec.devices.config[0] (request gpus): unknown GPU sharing strategy: Spatial") != std::string::npos);
}

TEST_CASE("Review of the All, topology-manager and sharing changes: 32 devices at most, NUMA pinning, pods of one job, template configs",
          "[dra][engine]") {
  // A helper's repros (/tmp/rv4 at the time), one section each.
  SECTION("an All alternative over more than 32 devices is never chosen, so quotas do not charge it") {
    // 8 A100s of seven 1g.10gb GIs: 56 match "all", more than a claim may hold
    // (AllocationResultsMaxSize); the claim takes two. A quota of 40 GIs admits it.
    const auto doc = nlohmann::json::parse(R"({"schema_version": 1, "name": "c1", "seed": 1,
      "cluster": {"node_groups": [{"name": "mig", "count": 1, "cpu": 64, "memory": "512Gi", "gpus": 8, "gpu_model": "A100-80GB",
        "gpu_partition": {"mode": "mig", "layout": ["1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb"]}}]},
      "dra": {"objects": [{"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", "metadata": {"name": "all-else-two"},
        "spec": {"spec": {"devices": {"requests": [{"name": "g", "firstAvailable": [
          {"name": "all", "deviceClassName": "mig.nvidia.com", "allocationMode": "All"},
          {"name": "two", "deviceClassName": "mig.nvidia.com", "count": 2}]}]}}}}]},
      "profile": {"name": "q", "pre_filter": [{"name": "resource-quota", "args": {"quotas": {"default": {"requests.nvidia.com/mig-1g.10gb": 40}}}}],
        "filter": [{"name": "node-resources-fit"}, {"name": "dynamic-resources"}], "score": [{"name": "first-fit"}],
        "device_select": {"name": "dynamic-resources"}},
      "workload": {"jobs": [{"id": "a", "submit_time": 0, "duration": 100, "claim_template": "all-else-two", "queue": "default",
        "requests": {"cpu": "1", "memory": "1Gi"}}]},
      "outputs": {"event_log": true}})");
    const auto sc = parse_scenario(doc.dump(), "c1.json", ".");
    auto resolved = sc.jobs;
    prepare_claims(resolved, sc);
    CHECK(resolved[0].request.gpu.count == 2);
    CHECK(resolved[0].constraints.claims->most_devices == 0);   // two on every node: no node-dependent size
    const auto r = run(sc);
    CHECK(r.summary().completed == 1);
  }
  SECTION("single-numa-node pins a claim job's CPUs, so the third 10-CPU pod waits on 2 x 16 CPUs") {
    auto doc = numa_claim_doc();
    doc["dra"]["objects"].push_back(nlohmann::json::parse(R"({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
        "metadata": {"name": "one"}, "spec": {"spec": {"devices": {"requests": [{"name": "g", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}}}})"));
    doc["workload"]["jobs"] = nlohmann::json::array();
    for (int i = 0; i < 3; ++i) {
      doc["workload"]["jobs"].push_back({{"id", "c" + std::to_string(i)}, {"submit_time", i}, {"duration", 100}, {"claim_template", "one"},
                                         {"requests", {{"cpu", "10"}, {"memory", "4Gi"}}}});
    }
    const auto r = run(dra_scenario(doc));
    const auto rows = r.jobs();
    CHECK(rows[0].start_s == 0.0);
    CHECK(rows[1].start_s == 1.0);
    CHECK(rows[2].start_s == 100.0);   // was 2: the claim jobs' CPUs were never taken from a NUMA node
    // Each was pinned to one NUMA node, not the one its GPU is on (the GPU gave no hint).
    for (const auto& id : {JobId{0}, JobId{1}}) {
      const auto& p = r.engine().job(id).placements;
      REQUIRE(p.size() == 1);
      REQUIRE(p[0].numa.size() == 1);
      CHECK(p[0].numa[0].cpu_milli == 10000);
    }
    // Pods of nvidia.com/gpu are not pinned when another plugin chose their GPUs: that device
    // select ignores the NUMA hint, so their CPUs cannot follow both (a known limit, docs/dra.md).
    // Under topology-manager's own device select the third waits, as the kubelet would have it.
    for (auto& j : doc["workload"]["jobs"]) {
      j.erase("claim_template");
      j["requests"]["nvidia.com/gpu"] = "1";
    }
    const auto plain = run(dra_scenario(doc));
    CHECK(plain.engine().job(JobId{0}).placements[0].numa.empty());
    CHECK(plain.jobs()[2].start_s == 2.0);
    auto own_select = doc;
    own_select["profile"]["device_select"] = {{"name", "topology-manager"}, {"args", {{"policy", "single-numa-node"}}}};
    CHECK(run(dra_scenario(own_select)).jobs()[2].start_s == 100.0);
    // Review (a helper's repro): with gpu-first-fit choosing GPU 0 on socket 0 (12 CPUs) for a
    // 14-CPU job, pinning its CPUs to the admitted socket 1 made it cross sockets (130 s).
    const auto ff = nlohmann::json::parse(R"({"schema_version": 1, "name": "tm-ff-empty", "seed": 1,
      "cluster": {"node_groups": [{"name": "n", "count": 1, "cpu": 32, "memory": "256Gi", "gpus": 4, "gpu_model": "A100-80GB", "sockets": 2,
        "topology": {"nvlink": "none", "numa": [{"cpu": 12, "memory": "128Gi"}, {"cpu": 20, "memory": "128Gi"}]}}]},
      "devices": {"slowdown": {"cross_socket": 1.3}},
      "profile": {"name": "p", "extends": "default", "filter": ["node-resources-fit", {"name": "topology-manager", "args": {"policy": "best-effort"}}],
        "device_select": "gpu-first-fit"},
      "workload": {"jobs": [{"id": "j", "submit_time": 0, "duration": 100, "requests": {"cpu": 14, "memory": "8Gi", "nvidia.com/gpu": 1}}]}})");
    CHECK(run(dra_scenario(ff)).jobs()[0].end_s.value_or(-1.0) == Approx(100.0));
  }
  SECTION("the pods of one job time-slice a shared claim's GPU with one another") {
    auto doc = dra_scenario_doc();
    doc["dra"]["objects"].push_back(nlohmann::json::parse(R"({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": "sc", "namespace": "ns"}, "spec": {"devices": {"requests": [{"name": "gpus", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}}})"));
    doc["devices"] = {{"time_slicing_overhead", 0.1}};
    doc["workload"]["jobs"] = nlohmann::json::parse(R"([{"id": "A", "submit_time": 0, "duration": 100, "tasks": 2, "resource_claim": "sc",
        "requests": {"cpu": "1", "memory": "1Gi"}}])");
    const auto r = run(dra_scenario(doc));
    // Two pods of a whole GPU's demand each: half speed, less 10 % for context switches, as the
    // same job on a time-sliced GPU of the device plugin.
    CHECK(r.jobs()[0].end_s.value_or(-1.0) == Approx(220.0));
  }
  SECTION("a template claim's config is checked as the driver checks it, though no two pods share it") {
    auto doc = dra_scenario_doc();
    doc["dra"]["objects"] = nlohmann::json::array({nlohmann::json::parse(R"({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
        "metadata": {"name": "two-gpus-one-pcie-root"}, "spec": {"spec": {"devices": {
          "requests": [{"name": "gpus", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 2}}],
          "config": [{"opaque": {"driver": "gpu.nvidia.com",
            "parameters": {"apiVersion": "resource.nvidia.com/v1beta1", "kind": "GpuConfig", "sharing": {"strategy": "Fabric"}}}}]}}}})")});
    CHECK(run_error(doc).find("ResourceClaimTemplate \"two-gpus-one-pcie-root\" spec.devices.config[0] (request gpus): fabric GPU sharing "
                              "strategy is not enabled") != std::string::npos);
  }
}

TEST_CASE("ResourceQuota charges of DRA claims, as Kubernetes' quota evaluator counts them", "[dra][engine][quota]") {
  // kubernetes pkg/quota/v1/evaluator/core/resource_claims_test.go, TestResourceClaimEvaluatorUsage:
  // each case's claim as a template, resolved as a run resolves it, charged by QuotaResources.
  // gpusched counts a claim's devices as nvidia.com/gpu (docs/dra.md), where Kubernetes counts
  // <class>.deviceclass.resource.k8s.io/devices; the numbers are the case's.
  auto doc = dra_scenario_doc();
  doc["cluster"] = nlohmann::json::parse(R"({"node_groups": [{"name": "big", "count": 1, "cpu": 64, "memory": "512Gi", "gpus": 8, "gpu_model": "A100-80GB"}]})");
  const auto one = [](const char* name, int count) {
    return nlohmann::json{{"name", name}, {"exactly", {{"deviceClassName", "gpu.nvidia.com"}, {"count", count}}}};
  };
  const auto sub = [](const char* name, int count) { return nlohmann::json{{"name", name}, {"deviceClassName", "gpu.nvidia.com"}, {"count", count}}; };
  const std::vector<std::pair<std::string, nlohmann::json>> cases = {
      {"simple", nlohmann::json::array({one("req-0", 1)})},
      {"many-requests", nlohmann::json::array({one("req-0", 1), one("req-1", 1), one("req-2", 1), one("req-3", 1), one("req-4", 1)})},
      {"count", nlohmann::json::array({one("req-0", 5)})},
      {"prioritized-list", nlohmann::json::array({{{"name", "req-0"}, {"firstAvailable", nlohmann::json::array({sub("subreq-0", 1)})}}})},
      {"prioritized-list-multiple-subrequests",
       nlohmann::json::array({{{"name", "req-0"}, {"firstAvailable", nlohmann::json::array({sub("subreq-0", 2), sub("subreq-1", 1)})}}})},
  };
  const std::map<std::string, std::int64_t> want = {
      {"simple", 1}, {"many-requests", 5}, {"count", 5}, {"prioritized-list", 1}, {"prioritized-list-multiple-subrequests", 2}};
  doc["dra"]["objects"] = nlohmann::json::array();
  nlohmann::json jobs = nlohmann::json::array();
  for (const auto& [name, requests] : cases) {
    doc["dra"]["objects"].push_back({{"apiVersion", "resource.k8s.io/v1"}, {"kind", "ResourceClaimTemplate"}, {"metadata", {{"name", name}}},
                                     {"spec", {{"spec", {{"devices", {{"requests", requests}}}}}}}});
    jobs.push_back({{"id", name}, {"submit_time", 0}, {"duration", 10}, {"claim_template", name}, {"requests", {{"cpu", "1"}}}});
  }
  doc["workload"]["jobs"] = jobs;
  const auto sc = dra_scenario(doc);
  auto resolved = sc.jobs;
  prepare_claims(resolved, sc);
  policies::quota::QuotaResources quota;
  const auto gpu = quota.intern(policies::quota::QuotaResources::canonical("requests.nvidia.com/gpu", {}));
  for (const auto& job : resolved) {
    std::vector<std::int64_t> charged(quota.size(), 0);
    quota.charge(nullptr, job, 1, charged);
    INFO(job.name);
    CHECK(charged[gpu] == want.at(job.name));
  }
  // "prioritized-list-multiple-subrequests-allocation-mode-all": Kubernetes charges 32
  // (AllocationResultsMaxSize). gpusched charges the most the claim can take on a node of the
  // cluster: all 8 GPUs of the one node (docs/dra.md, "Where gpusched differs"); the job states
  // the fewest, 2. ("...-different-device-classes": a job in a simulation takes one kind of
  // device, refused before the run; test_dra_tpu.cpp.)
  doc["dra"]["objects"][4]["spec"]["spec"]["devices"]["requests"][0]["firstAvailable"][1] =
      nlohmann::json{{"name", "subreq-1"}, {"deviceClassName", "gpu.nvidia.com"}, {"allocationMode", "All"}};
  const auto with_all = dra_scenario(doc);
  check_claim_sizes(with_all, 4, 2, 8);
  auto all_resolved = with_all.jobs;
  prepare_claims(all_resolved, with_all);
  std::vector<std::int64_t> charged(quota.size(), 0);
  quota.charge(nullptr, all_resolved[4], 1, charged);
  CHECK(charged[gpu] == 8);
}

TEST_CASE("A shared claim in use, as kube-scheduler's DynamicResources Filter answers", "[dra][engine]") {
  // kubernetes pkg/scheduler/framework/plugins/dynamicresources/dynamicresources_test.go,
  // TestPlugin: "wrong-topology" (an allocated claim, another node: UnschedulableAndUnresolvable
  // "resourceclaim not available on the node") and "good-topology" (its node: the pod fits and
  // reserves the claim, no new allocation).
  std::ifstream in(kRepo / "examples" / "dra" / "shared.json");
  auto doc = nlohmann::json::parse(in);
  doc["horizon_s"] = 500;
  doc["workload"]["jobs"] = nlohmann::json::parse(R"([
    {"id": "holder", "submit_time": 0, "duration": 1000, "resource_claim": "shared-pair", "requests": {"cpu": "8", "memory": "32Gi"}},
    {"id": "cpuhog", "submit_time": 1, "duration": 1000, "requests": {"cpu": "50", "memory": "16Gi"}},
    {"id": "fits", "submit_time": 2, "duration": 1000, "resource_claim": "shared-pair", "requests": {"cpu": "4", "memory": "16Gi"}},
    {"id": "too-big", "submit_time": 3, "duration": 1000, "resource_claim": "shared-pair", "requests": {"cpu": "16", "memory": "16Gi"}}])");
  const auto r = run(parse_scenario(doc.dump(), "shared.json", kRepo / "examples" / "dra"));
  const auto got = starts(r);
  CHECK(got.at("holder") == "pcie-0000[0,1]");
  CHECK(got.at("fits") == "pcie-0000");   // good-topology: the claim's node, no device of its own
  const auto rows = r.jobs();
  REQUIRE(rows[3].job == "too-big");
  CHECK(rows[3].state == "pending");
  INFO(rows[3].reason);
  // pcie-0001 has room, but the claim is allocated on pcie-0000 (wrong-topology); pcie-0000 has no CPU left.
  CHECK(rows[3].reason.find("resourceclaim not available on the node") != std::string::npos);
  CHECK(rows[3].reason.find("Insufficient cpu") != std::string::npos);
}

TEST_CASE("DRA claims of node-dependent size: the autoscaler and SRSF count what the claim takes", "[dra][engine][autoscaler]") {
  // Review of 8ede7d7 (repros in the commit message of the fix): both counted the smallest.
  std::ifstream in(kRepo / "examples" / "dra" / "alternatives.json");
  auto doc = nlohmann::json::parse(in);
  const auto parse = [](const nlohmann::json& d) { return parse_scenario(d.dump(), "alternatives.json", kRepo / "examples" / "dra"); };
  // The H100 node is full; four "four H100s, else eight A100s" jobs each need a new A100 node.
  doc["cluster"]["node_groups"][1]["count"] = 4;
  doc["cluster"]["node_groups"][1]["autoscale"] = {{"min", 0}, {"provisioning_delay_s", 300}, {"scale_down_idle_s", 600}};
  doc["autoscaler"] = {{"scan_interval_s", 10}};
  nlohmann::json jobs = nlohmann::json::array();
  for (int i = 0; i < 2; ++i) {
    jobs.push_back({{"id", "h-" + std::to_string(i)}, {"submit_time", 0}, {"duration", 5000},
                    {"requests", {{"cpu", "4"}, {"memory", "16Gi"}, {"nvidia.com/gpu", "4"}}}});
  }
  for (int i = 0; i < 4; ++i) {
    jobs.push_back({{"id", "c-" + std::to_string(i)}, {"submit_time", 10}, {"duration", 1000}, {"claim_template", "four-h100-else-eight-a100"},
                    {"requests", {{"cpu", "4"}, {"memory", "16Gi"}}}});
  }
  doc["workload"]["jobs"] = jobs;
  const auto scaled = run(parse(doc));
  std::size_t ups = 0;
  for (const auto& line : scaled.event_log()) ups += line.find(",node_up,") != std::string::npos ? 1 : 0;
  CHECK(ups == 4);   // was 2, then 1 and 1, each job started 300 s after the one before
  for (const auto& row : scaled.jobs()) {
    if (row.job.rfind("c-", 0) == 0) CHECK(row.start_s == 320.0);
  }

  // A gang checked before the run: one H100 node holds two tasks (4 GPUs each), one A100 node
  // one (8): three at once, not the four that counting the smallest (4 GPUs) would allow.
  std::ifstream again(kRepo / "examples" / "dra" / "alternatives.json");
  auto gang = nlohmann::json::parse(again);
  gang["cluster"]["node_groups"][1]["count"] = 1;
  gang["workload"]["jobs"] = nlohmann::json::parse(R"([{"id": "g", "submit_time": 0, "duration": 100, "tasks": 4, "min_available": 4,
      "claim_template": "four-h100-else-eight-a100", "requests": {"cpu": "4", "memory": "16Gi"}}])");
  try {
    (void)run(parse(gang));
    FAIL("a gang of 4 was accepted");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("job \"g\" is a gang of 4 tasks that must run at once, but the whole cluster, empty, holds only 3 of them") !=
          std::string::npos);
  }
  gang["workload"]["jobs"][0]["tasks"] = 3;
  gang["workload"]["jobs"][0]["min_available"] = 3;
  CHECK(starts(run(parse(gang))).at("g") == "h100-0000[0,1,2,3];h100-0000[4,5,6,7];a100-0000[0,1,2,3,4,5,6,7]");

  // SRSF: a running job's key is its remaining time x the GPUs it holds (8 A100s), not the
  // smallest its claim could take (4 H100s): P, 120 s x 8 GPUs, preempts C, 199 s x 8.
  auto srsf = nlohmann::json::parse(R"({"schema_version": 1, "name": "srsf", "seed": 1,
    "cluster": {"node_groups": [
      {"name": "h100", "count": 1, "cpu": 64, "memory": "512Gi", "gpus": 4, "gpu_model": "H100-80GB"},
      {"name": "a100", "count": 1, "cpu": 64, "memory": "512Gi", "gpus": 8, "gpu_model": "A100-80GB"}]},
    "dra": {"objects": [{"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", "metadata": {"name": "all-gpus"},
                         "spec": {"spec": {"devices": {"requests": [{"name": "all", "exactly": {"deviceClassName": "gpu.nvidia.com", "allocationMode": "All"}}]}}}}]},
    "profile": {"name": "srsf-dra", "queue_sort": {"name": "srsf"}, "queueing": "preemptive",
                "filter": [{"name": "node-resources-fit"}, {"name": "dynamic-resources"}], "score": [{"name": "first-fit"}],
                "device_select": {"name": "dynamic-resources"}},
    "workload": {"jobs": [
      {"id": "B", "submit_time": 0, "duration": 1000, "gpu_model": "H100-80GB", "requests": {"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": "4"}},
      {"id": "C", "submit_time": 1, "duration": 200, "claim_template": "all-gpus", "requests": {"cpu": "4", "memory": "16Gi"}},
      {"id": "P", "submit_time": 2, "duration": 120, "gpu_model": "A100-80GB", "requests": {"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": "8"}}]},
    "outputs": {"event_log": true}})");
  const auto ordered = run(parse_scenario(srsf.dump(), "srsf.json", "."));
  const auto rows = ordered.jobs();
  CHECK(rows[1].job == "C");
  CHECK(rows[1].evictions == 1);
  CHECK(rows[2].start_s == 2.0);
}

TEST_CASE("A DRA ResourceClaim shared by several jobs: allocated by the first, kept until the last ends", "[dra][engine]") {
  // examples/dra/shared.json: two GPUs on one PCIe root, shared by trainer, evaluator and late.
  std::ifstream in(kRepo / "examples" / "dra" / "shared.json");
  const auto doc = nlohmann::json::parse(in);
  const auto parse = [](const nlohmann::json& d) { return parse_scenario(d.dump(), "shared.json", kRepo / "examples" / "dra"); };
  const auto r = run(parse(doc));
  const auto got = starts(r);
  CHECK(got.at("one-a") == "pcie-0000[0]");
  CHECK(got.at("trainer") == "pcie-0000[2,3]");   // allocates the claim: GPUs 2-3 share a root
  CHECK(got.at("evaluator") == "pcie-0000");      // the claim's node, no device of its own ("good-topology")
  // At 350 s trainer has ended, but evaluator still uses the claim: GPUs 2-3 stay taken.
  CHECK(got.at("pair") == "pcie-0001[0,1]");
  CHECK(got.at("late") == "pcie-0000");
  // At 650 s evaluator has ended too, and late still holds the claim: pcie-0000 has two GPUs free.
  CHECK(got.at("probe") == "pcie-0001[0,1,2,3]");
  // At 800 s nobody uses it: the claim was deallocated (kubernetes pkg/controller/resourceclaim/
  // controller.go syncClaim: no valid reservedFor entry left, the allocation is cleared), and is
  // allocated afresh.
  CHECK(got.at("after") == "pcie-0000[0,1]");
  CHECK(r.summary().completed == 7);
  // claims.csv: the devices under each job that held them (the one that allocated the claim, and
  // those it passed to), named by the claim.
  std::map<std::string, std::vector<std::string>> held;
  for (const auto& row : r.claims()) {
    CHECK(row.claim_template == "shared-pair");
    held[row.job].push_back(row.node + "/" + row.device);
  }
  CHECK(held.at("trainer") == std::vector<std::string>{"pcie-0000/gpu-2", "pcie-0000/gpu-3"});
  CHECK(held.at("late") == std::vector<std::string>{"pcie-0000/gpu-2", "pcie-0000/gpu-3"});
  CHECK(held.at("after") == std::vector<std::string>{"pcie-0000/gpu-0", "pcie-0000/gpu-1"});

  // On random workloads: the index and the plain scan agree; while a claim is used, its jobs are on
  // one node and its devices are held by none but them; no GPU is granted twice.
  Lcg next{3};
  auto mix = doc;
  mix["dra"]["objects"] = nlohmann::json::array();
  for (const char* name : {"c0", "c1", "c2"}) {
    auto claim = nlohmann::json::parse(R"({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": ""},
        "spec": {"devices": {"requests": [{"name": "gpus", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 2}}],
                 "constraints": [{"matchAttribute": "resource.kubernetes.io/pcieRoot"}]}}})");
    claim["metadata"]["name"] = name;
    mix["dra"]["objects"].push_back(claim);
  }
  mix["cluster"]["node_groups"][0]["count"] = 4;
  for (int round = 0; round < 3; ++round) {
    nlohmann::json jobs = nlohmann::json::array();
    for (int i = 0; i < 150; ++i) {
      nlohmann::json j = {{"id", "j" + std::to_string(i)}, {"submit_time", i * 4}, {"duration", 20 + next(200)},
                          {"requests", {{"cpu", "2"}, {"memory", "8Gi"}}}};
      if (next(2) == 0) j["resource_claim"] = "c" + std::to_string(next(3));
      else j["requests"]["nvidia.com/gpu"] = std::to_string(1 + next(3));
      if (next(4) == 0) j["tasks"] = 2;
      jobs.push_back(j);
    }
    mix["workload"]["jobs"] = jobs;
    auto indexed = parse(mix);
    auto scanned = parse(mix);
    scanned.exact_scan = true;
    const auto a = run(indexed), b = run(scanned);
    INFO("round " << round);
    CHECK(a.event_log() == b.event_log());
    CHECK(a.summary().completed == 150);
    // Replay: a claim's GPUs are held from its allocation until its last user ends.
    GpuLedger ledger;                                           // owners: jobs, and "claim cN"
    std::map<std::string, std::set<std::string>> users;        // claim -> running jobs
    std::map<std::string, std::string> claim_node;
    for (const auto& e : starts_and_finishes(a)) {
      const std::string& job = e.job;
      const auto& spec = mix["workload"]["jobs"][static_cast<std::size_t>(std::stoi(job.substr(1)))];
      const std::string claim = spec.contains("resource_claim") ? spec["resource_claim"].get<std::string>() : "";
      const std::string owner = claim.empty() ? job : "claim " + claim;
      if (!e.start) {
        if (!claim.empty()) {
          users[claim].erase(job);
          if (!users[claim].empty()) continue;
        }
        ledger.give_back(owner);
        continue;
      }
      INFO(job);
      for (const auto& [node_name, idx] : e.tasks) {
        if (!claim.empty()) {
          if (!users[claim].empty() || ledger.held.count(owner)) CHECK(node_name == claim_node[claim]);
          claim_node[claim] = node_name;
        }
        ledger.take(owner, node_name, idx);
      }
      if (!claim.empty()) {
        CHECK(ledger.held[owner].size() == 2);   // allocated by its first user, or held already
        users[claim].insert(job);
      }
    }
  }
}

TEST_CASE("DRA claims in scenarios: every mistake is an error before the run", "[dra][engine]") {
  const auto doc = dra_scenario_doc();
  auto unknown = doc;
  unknown["workload"]["jobs"][1]["claim_template"] = "nope";
  CHECK(run_error(unknown).find("dra-scenario.json /workload/jobs (line = job number):2: field 'claim_template': job \"pair-a\" names "
                                "ResourceClaimTemplate \"nope\", which the scenario's dra.objects does not define (it defines: "
                                "two-gpus-one-pcie-root)") != std::string::npos);
  auto both = doc;
  both["workload"]["jobs"][1]["requests"]["nvidia.com/gpu"] = "2";
  CHECK(run_error(both).find("field 'requests': job \"pair-a\" asks for GPUs both in its requests and through claim_template") !=
        std::string::npos);
  auto no_plugin = doc;
  no_plugin["profile"] = "default";
  CHECK(run_error(no_plugin).find("does not list dynamic-resources at filter and device_select") != std::string::npos);
  auto too_big = doc;
  too_big["dra"]["objects"] = nlohmann::json::array({nlohmann::json::parse(R"({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
      "metadata": {"name": "two-gpus-one-pcie-root"}, "spec": {"spec": {"devices": {"requests": [{"name": "gpus",
      "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 3}}], "constraints": [{"matchAttribute": "resource.kubernetes.io/pcieRoot"}]}}}})")});
  CHECK(run_error(too_big).find("no node can hold the claim of ResourceClaimTemplate \"two-gpus-one-pcie-root\", even with all its devices free") !=
        std::string::npos);
  auto all = too_big;
  all["dra"]["objects"][0]["spec"]["spec"]["devices"]["requests"][0]["exactly"] = {{"deviceClassName", "gpu.nvidia.com"}, {"allocationMode", "All"}};
  // All four GPUs of a node span two PCIe roots: the constraint fails on every node.
  CHECK(run_error(all).find("no node can hold the claim of ResourceClaimTemplate \"two-gpus-one-pcie-root\", even with all its devices free (on "
                            "node pcie-0000: ") != std::string::npos);
  // Counting GPUs only would cut the claim job into one-GPU tasks that each carry the claim
  // (review: the run aborted on an invariant).
  auto counted = doc;
  counted["preemption"] = {{"placement", "count"}};
  CHECK(run_error(counted).find("field '/preemption/placement': placement \"count\" counts GPUs only, which a DRA claim") != std::string::npos);
  // Shared claims (resource_claim): the claim must be defined, unallocated, and named once.
  auto claim = doc;
  claim["dra"]["objects"].push_back(nlohmann::json::parse(R"({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
      "metadata": {"name": "c", "namespace": "n"}, "spec": {"devices": {"requests": [{"name": "g", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}}})"));
  claim["workload"]["jobs"][1].erase("claim_template");
  claim["workload"]["jobs"][1]["resource_claim"] = "nope";
  CHECK(run_error(claim).find("field 'resource_claim': job \"pair-a\" names ResourceClaim \"nope\", which the scenario's dra.objects does not "
                              "define (it defines: c)") != std::string::npos);
  claim["workload"]["jobs"][1]["resource_claim"] = "c";
  CHECK(run_error(claim).empty());
  auto twice = claim;
  twice["dra"]["objects"].push_back(twice["dra"]["objects"].back());
  twice["dra"]["objects"].back()["metadata"]["namespace"] = "other";
  CHECK(run_error(twice).find("two ResourceClaims are named \"c\"") != std::string::npos);
  auto allocated = claim;
  allocated["dra"]["objects"].back()["status"] = nlohmann::json::parse(R"({"allocation": {"devices": {"results": [
      {"request": "g", "driver": "gpu.nvidia.com", "pool": "pcie-0000", "device": "gpu-0"}]}}})");
  CHECK(run_error(allocated).find("ResourceClaim \"n/c\" has status.allocation: in a simulation a shared claim starts unallocated") !=
        std::string::npos);
  for (const char* field : {"resource_claim", "claim_template"}) {
    auto empty = claim;
    empty["workload"]["jobs"][1].erase("resource_claim");
    empty["workload"]["jobs"][1][field] = "";
    CHECK(run_error(empty).find(std::string("field '") + field + "': expected a ResourceClaim") != std::string::npos);
  }
  auto both_claims = claim;
  both_claims["workload"]["jobs"][1]["claim_template"] = "two-gpus-one-pcie-root";
  CHECK(run_error(both_claims).find("a job in a simulation has one DRA claim: resource_claim (a shared ResourceClaim) or claim_template, not both") !=
        std::string::npos);
}

TEST_CASE("claim_template round-trips through JSON Lines and CSV traces; a resolved job writes its template, not its GPUs", "[dra][engine]") {
  const auto catalog = GpuCatalog::builtin();
  ResourceTable resources;
  std::istringstream in(R"({"id":"a","submit_time":0,"duration":10,"claim_template":"two-gpus","requests":{"cpu":"1"}}
{"id":"b","submit_time":1,"duration":10,"requests":{"cpu":"1","nvidia.com/gpu":"1"}}
{"id":"c","submit_time":2,"duration":10,"resource_claim":"shared-pair","requests":{"cpu":"1"}}
)");
  auto jobs = traces::read_trace(in, traces::TraceFormat::kJsonLines, "t.jsonl", catalog, resources);
  REQUIRE(jobs[0].constraints.claim_template == "two-gpus");
  // As a scenario resolves it: claims attached, two whole GPUs asked.
  jobs[0].constraints.claims = std::make_shared<dra::DeviceClaims>();
  jobs[0].request.gpu.mode = GpuMode::kWhole;
  jobs[0].request.gpu.count = 2;
  for (const auto format : {traces::TraceFormat::kJsonLines, traces::TraceFormat::kCsv}) {
    std::ostringstream out;
    traces::write_trace(out, format, jobs, catalog, resources);
    std::istringstream back(out.str());
    const auto again = traces::read_trace(back, format, "back", catalog, resources);
    INFO(out.str());
    CHECK(again[0].constraints.claim_template == "two-gpus");
    CHECK(again[0].request.gpu.mode == GpuMode::kNone);
    CHECK(again[1].constraints.claim_template.empty());
    CHECK(again[1].request.gpu.count == 1);
    CHECK(again[2].constraints.resource_claim == "shared-pair");
    CHECK(again[1].constraints.resource_claim.empty());
  }
  // SWF has no place for a claim: said so, rather than "a CPU-only job" (review of issue 18).
  std::ostringstream swf;
  try {
    traces::write_swf(swf, jobs, catalog, resources);
    FAIL("written");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("its GPUs come from a DRA claim (claim_template \"two-gpus\"), which SWF cannot carry") != std::string::npos);
  }
}

TEST_CASE("DRA claims are resolved before trace transforms, and validate checks them as run does (review of issue 18)", "[dra][engine]") {
  // A filter on GPU jobs keeps the claim jobs: they ask for GPUs through their claim.
  auto doc = dra_scenario_doc();
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "gpusched-dra-transform";
  std::filesystem::create_directories(dir);
  {
    std::ofstream t(dir / "trace.jsonl");
    for (const auto& j : doc["workload"]["jobs"]) t << j.dump() << "\n";
    std::ofstream tpl(dir / "templates.yaml");
    std::ifstream src(kRepo / "examples" / "dra" / "templates.yaml");
    tpl << src.rdbuf();
  }
  doc["workload"] = {{"trace", {{"path", "trace.jsonl"}, {"transforms", nlohmann::json::array({{{"filter", {{"kinds", {"multi-gpu"}}}}}})}}}};
  const auto sc = parse_scenario(doc.dump(), (dir / "s.json").string(), dir);
  const auto r = run(sc);
  CHECK(r.summary().jobs == 3);   // pair-a, pair-b, pair-c: two GPUs each through the claim

  // A CEL runtime error on some nodes only is "not there", before the run as during it.
  auto mixed = dra_scenario_doc();
  mixed["cluster"]["node_groups"][0]["topology"]["nvlink"] = "none";   // these GPUs have no gpusched.io/nvlinkDomain
  mixed["cluster"]["node_groups"].push_back({{"name", "hgx"}, {"count", 1}, {"cpu", 64}, {"memory", "512Gi"}, {"gpus", 8},
                                             {"gpu_model", "H100-80GB"}, {"topology", {{"nvlink", "nvswitch"}}}});
  mixed["dra"]["objects"] = nlohmann::json::array({nlohmann::json::parse(R"({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
      "metadata": {"name": "two-gpus-one-pcie-root"}, "spec": {"spec": {"devices": {"requests": [{"name": "gpus",
      "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 2, "selectors": [{"cel": {"expression": "device.attributes['gpusched.io'].nvlinkDomain == 0"}}]}}]}}}})")});
  const auto ok = run(dra_scenario(mixed));
  CHECK(ok.summary().completed == 5);
  CHECK(starts(ok).at("pair-a").rfind("hgx-0000[", 0) == 0);
  CHECK(std::any_of(ok.warnings().begin(), ok.warnings().end(), [](const std::string& w) { return w.find("no such key: nvlinkDomain") != std::string::npos; }));
}

TEST_CASE("claims.csv names the devices each task holds, and which request each serves, as the plugin chose them", "[dra][engine]") {
  // Two requests whose order matters: "high" takes GPU 2 or 3 (the second PCIe root), "any" the
  // first GPU left. The
  // rows are the allocator run again with only the granted GPUs free; its device order must be
  // the order the plugin granted them in (pick_units keeps it), request by request.
  auto doc = dra_scenario_doc();
  doc["dra"]["objects"].push_back(nlohmann::json::parse(R"({
    "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", "metadata": {"name": "high-and-any"},
    "spec": {"spec": {"devices": {"requests": [
      {"name": "high", "exactly": {"deviceClassName": "gpu.nvidia.com",
        "selectors": [{"cel": {"expression": "device.attributes['resource.kubernetes.io'].pcieRoot == 'pci0000:81'"}}]}},
      {"name": "any", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}}}})"));
  Lcg next{11};
  nlohmann::json jobs = nlohmann::json::array();
  for (int i = 0; i < 80; ++i) {
    nlohmann::json j = {{"id", "j" + std::to_string(i)}, {"submit_time", i * 10}, {"duration", 20 + next(60)},
                        {"requests", {{"cpu", "1"}, {"memory", "4Gi"}}}};
    const auto k = next(3);
    if (k == 0) j["claim_template"] = "two-gpus-one-pcie-root";
    else if (k == 1) j["claim_template"] = "high-and-any";
    else j["requests"]["nvidia.com/gpu"] = "1";
    jobs.push_back(j);
  }
  // Stop half-way, so running jobs are listed too.
  doc["horizon_s"] = 500;
  doc["workload"]["jobs"] = jobs;
  const auto r = run(dra_scenario(doc));
  const auto rows = r.claims();
  REQUIRE(!rows.empty());
  const auto& e = r.engine();
  std::size_t at = 0, claim_tasks = 0;
  for (std::size_t j = 0; j < e.workload().size(); ++j) {
    const auto& spec = e.workload()[j];
    const auto& rt = e.job(JobId{static_cast<std::uint32_t>(j)});
    if (!spec.constraints.claims || (rt.state != sim::JobState::kRunning && rt.state != sim::JobState::kCompleted)) continue;
    for (std::size_t t = 0; t < rt.placements.size(); ++t, ++claim_tasks) {
      const auto& p = rt.placements[t];
      INFO(spec.name << " task " << t);
      REQUIRE(at + p.gpus.size() <= rows.size());
      for (std::size_t k = 0; k < p.gpus.size(); ++k, ++at) {
        const auto& row = rows[at];
        CHECK(row.job == spec.name);
        CHECK(row.task == static_cast<std::int32_t>(t));
        CHECK(row.node == e.cluster().spec(p.node).name);
        CHECK(row.pool == row.node);
        CHECK(row.driver == "gpu.nvidia.com");
        CHECK(row.claim_template == spec.constraints.claim_template);
        CHECK(row.device == "gpu-" + std::to_string(p.gpus[k].index));
        if (spec.constraints.claim_template == "high-and-any") {
          CHECK(row.request == (k == 0 ? "high" : "any"));
          if (k == 0) CHECK(p.gpus[k].index >= 2);
        } else {
          CHECK(row.request == "gpus");
        }
      }
    }
  }
  CHECK(at == rows.size());
  CHECK(claim_tasks > 20);

  // The file: written when a job has a claim, with the same rows; not written otherwise.
  const auto dir = std::filesystem::temp_directory_path() / "gpusched-test-claims-csv";
  std::filesystem::remove_all(dir);
  (void)write_outputs(r, dir);
  std::ifstream in(dir / "claims.csv");
  std::string header, first;
  std::getline(in, header);
  std::getline(in, first);
  CHECK(header == "job,task,node,claim_template,request,driver,pool,device,admin_access");
  CHECK(first == rows[0].job + "," + std::to_string(rows[0].task) + "," + rows[0].node + "," + rows[0].claim_template + "," +
                     rows[0].request + ",gpu.nvidia.com," + rows[0].pool + "," + rows[0].device + ",false");
  auto plain = doc;
  plain.erase("dra");
  plain["profile"] = "first-fit";
  for (auto& j : plain["workload"]["jobs"]) {
    if (j.contains("claim_template")) {
      j.erase("claim_template");
      j["requests"]["nvidia.com/gpu"] = "2";
    }
  }
  const auto without = run(dra_scenario(plain));
  CHECK(without.claims().empty());
  (void)write_outputs(without, dir);
  CHECK(!std::filesystem::exists(dir / "claims.csv"));   // and the earlier run's file is gone
  std::filesystem::remove_all(dir);
}

TEST_CASE("DRA in simulations: allocationMode All takes every matching GPU of a node; admin access takes none", "[dra][engine]") {
  auto doc = dra_scenario_doc();
  doc["dra"]["objects"].push_back(nlohmann::json::parse(R"({
    "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", "metadata": {"name": "whole-node"},
    "spec": {"spec": {"devices": {"requests": [{"name": "gpus", "exactly": {"deviceClassName": "gpu.nvidia.com", "allocationMode": "All"}}]}}}})"));
  doc["dra"]["objects"].push_back(nlohmann::json::parse(R"({
    "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", "metadata": {"name": "monitor"},
    "spec": {"spec": {"devices": {"requests": [{"name": "watch", "exactly": {"deviceClassName": "gpu.nvidia.com", "adminAccess": true}}]}}}})"));
  doc["workload"]["jobs"] = nlohmann::json::parse(R"([
    {"id": "one", "submit_time": 0, "duration": 100, "requests": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "1"}},
    {"id": "node", "submit_time": 1, "duration": 100, "claim_template": "whole-node", "requests": {"cpu": "1", "memory": "1Gi"}},
    {"id": "node-2", "submit_time": 2, "duration": 100, "claim_template": "whole-node", "requests": {"cpu": "1", "memory": "1Gi"}},
    {"id": "watch", "submit_time": 3, "duration": 50, "claim_template": "monitor", "requests": {"cpu": "1", "memory": "1Gi"}}])");
  doc["outputs"] = {{"event_log", true}};
  const auto r = run(dra_scenario(doc));
  const auto got = starts(r);
  // "node" needs all four GPUs of a node: pcie-0000 has one taken, so it goes to pcie-0001;
  // "node-2" waits for "one" to finish; "watch" runs at once beside them, taking no GPU.
  CHECK(got.at("one") == "pcie-0000[0]");
  CHECK(got.at("node") == "pcie-0001[0,1,2,3]");
  CHECK(got.at("node-2") == "pcie-0000[0,1,2,3]");
  CHECK(got.at("watch") == "pcie-0000");
  const auto jobs = r.jobs();
  CHECK(jobs[1].gpus == 4);
  CHECK(jobs[3].gpus == 0);
  CHECK(jobs[3].start_s == 3.0);
  const auto rows = r.claims();
  REQUIRE(rows.size() == 9);
  for (int k = 0; k < 4; ++k) {
    CHECK(rows[static_cast<std::size_t>(k)].job == "node");
    CHECK(rows[static_cast<std::size_t>(k)].device == "gpu-" + std::to_string(k));
    CHECK(!rows[static_cast<std::size_t>(k)].admin_access);
  }
  CHECK(rows[8].job == "watch");
  CHECK(rows[8].request == "watch");
  CHECK(rows[8].device == "gpu-0");   // in use by "one": admin access may use it
  CHECK(rows[8].admin_access);

  // All over nodes of different sizes: 4 GPUs on a pcie node, 8 on the big one. The job states
  // the smallest (4) and takes the node's count; quotas charge the largest (8).
  auto sizes = doc;
  sizes["cluster"]["node_groups"].push_back({{"name", "big"}, {"count", 1}, {"cpu", 64}, {"memory", "512Gi"}, {"gpus", 8}, {"gpu_model", "A100-80GB"}});
  const auto mixed = dra_scenario(sizes);
  check_claim_sizes(mixed, 1, 4, 8);
  const auto on_sizes = run(mixed);
  const auto sized = starts(on_sizes);
  CHECK(sized.at("node") == "pcie-0001[0,1,2,3]");
  CHECK(sized.at("node-2") == "big-0000[0,1,2,3,4,5,6,7]");   // both pcie nodes are busy at 2 s
  std::size_t node2_rows = 0;
  for (const auto& row : on_sizes.claims()) node2_rows += row.job == "node-2" ? 1 : 0;
  CHECK(node2_rows == 8);
  // A selector that keeps to one kind of node makes the count one again.
  sizes["dra"]["objects"][sizes["dra"]["objects"].size() - 2]["spec"]["spec"]["devices"]["requests"][0]["exactly"]["selectors"] =
      nlohmann::json::parse(R"([{"cel": {"expression": "device.attributes['resource.kubernetes.io'].pcieRoot == 'pci0000:81'"}}])");
  const auto narrowed = run(dra_scenario(sizes));
  CHECK(narrowed.jobs()[1].gpus == 2);
}

TEST_CASE("DRA in simulations: allocationMode All inside firstAvailable, and beside alternatives of different sizes", "[dra][engine]") {
  // Kubernetes' allocator tries a subrequest in All mode like any other alternative
  // (allocator_testing.go: prioritized-list-subrequests-with-allocation-mode-all and
  // prioritized-list-allocation-mode-all, translated in test_dra_allocator.cpp). In a simulation
  // the count such a claim takes depends on the node and on what is free there.
  auto doc = dra_scenario_doc();
  doc["cluster"]["node_groups"].push_back({{"name", "big"}, {"count", 1}, {"cpu", 64}, {"memory", "512Gi"}, {"gpus", 8}, {"gpu_model", "A100-80GB"}});
  doc["dra"]["objects"].push_back(nlohmann::json::parse(R"({
    "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", "metadata": {"name": "node-else-two"},
    "spec": {"spec": {"devices": {"requests": [{"name": "gpus", "firstAvailable": [
      {"name": "all", "deviceClassName": "gpu.nvidia.com", "allocationMode": "All"},
      {"name": "two", "deviceClassName": "gpu.nvidia.com", "count": 2}]}]}}}})"));
  doc["workload"]["jobs"] = nlohmann::json::parse(R"([
    {"id": "one", "submit_time": 0, "duration": 100, "requests": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "1"}},
    {"id": "a", "submit_time": 1, "duration": 50, "claim_template": "node-else-two", "requests": {"cpu": "1", "memory": "1Gi"}},
    {"id": "b", "submit_time": 2, "duration": 300, "claim_template": "node-else-two", "requests": {"cpu": "1", "memory": "1Gi"}},
    {"id": "c", "submit_time": 3, "duration": 300, "claim_template": "node-else-two", "requests": {"cpu": "1", "memory": "1Gi"}},
    {"id": "d", "submit_time": 4, "duration": 300, "claim_template": "node-else-two", "requests": {"cpu": "1", "memory": "1Gi"}}])");
  const auto sc = dra_scenario(doc);
  // The fewest it can take on any node: two (the second alternative); the most: all eight GPUs
  // of the big node.
  check_claim_sizes(sc, 1, 2, 8);
  const auto r = run(sc);
  const auto got = starts(r);
  CHECK(got.at("one") == "pcie-0000[0]");
  CHECK(got.at("a") == "pcie-0000[1,2]");                 // GPU 0 in use: not all, so two
  CHECK(got.at("b") == "pcie-0001[0,1,2,3]");             // a free node: all of it
  CHECK(got.at("c") == "big-0000[0,1,2,3,4,5,6,7]");
  CHECK(got.at("d") == "pcie-0000[1,2]");                 // at 51 s, when "a" ends ("one" still runs)
  CHECK(r.summary().completed == 5);
  const auto rows = claim_rows(r);
  CHECK(rows.requests.at("a") == std::set<std::string>{"gpus/two"});
  CHECK(rows.requests.at("b") == std::set<std::string>{"gpus/all"});
  CHECK(rows.requests.at("c") == std::set<std::string>{"gpus/all"});
  CHECK(rows.devices.at("b") == 4);
  CHECK(rows.devices.at("c") == 8);
  // Quotas charge the most (8): under Kubernetes' rule the second claim job is refused.
  const auto refused = run(dra_scenario(with_quota(doc, "requests.nvidia.com/gpu", 9)));
  CHECK(starts(refused).size() == 2);   // "one" (1) and "a" (8)
  CHECK(refused.engine().reason(refused.engine().job(JobId{2}).reason).find("requested: requests.nvidia.com/gpu=8, used: requests.nvidia.com/gpu=9") !=
        std::string::npos);

  // Beside a request whose alternatives ask for different counts, the sizes add up per node.
  // "pair": two GPUs of the node's first PCIe root, else one; "rest": all GPUs of the others.
  // A pcie node's first root holds GPUs 0-1 and its second 2-3, so the claim takes 1 or 2, plus
  // 2. The big node has no PCIe switches (each GPU is its own root, none the first), so "pair"
  // finds nothing there and the claim does not fit it: 3 to 4.
  auto beside = doc;
  beside["dra"]["objects"].back()["spec"]["spec"]["devices"]["requests"] = nlohmann::json::parse(R"([
    {"name": "pair", "firstAvailable": [
      {"name": "two", "deviceClassName": "gpu.nvidia.com", "count": 2,
       "selectors": [{"cel": {"expression": "device.attributes['resource.kubernetes.io'].pcieRoot == 'pci0000:80'"}}]},
      {"name": "one", "deviceClassName": "gpu.nvidia.com", "count": 1,
       "selectors": [{"cel": {"expression": "device.attributes['resource.kubernetes.io'].pcieRoot == 'pci0000:80'"}}]}]},
    {"name": "rest", "exactly": {"deviceClassName": "gpu.nvidia.com", "allocationMode": "All",
       "selectors": [{"cel": {"expression": "device.attributes['resource.kubernetes.io'].pcieRoot != 'pci0000:80'"}}]}}])");
  const auto bs = dra_scenario(beside);
  check_claim_sizes(bs, 1, 3, 4);
  const auto rb = run(bs);
  const auto side = starts(rb);
  CHECK(side.at("a") == "pcie-0000[1,2,3]");      // GPU 0 in use: one of the first root, all of the second
  CHECK(side.at("b") == "pcie-0001[0,1,2,3]");
  CHECK(side.at("c") == "pcie-0000[1,2,3]");      // at 51 s
  CHECK(side.at("d") == "pcie-0001[0,1,2,3]");    // at 302 s, when "b" ends
  CHECK(rb.summary().completed == 5);

  // Random mixes of such claim jobs and plain GPU jobs: the index and the plain scan decide
  // alike, no GPU is granted twice, and a claim job takes all its node's GPUs or two.
  Lcg next{11};
  auto mix = doc;
  mix["workload"]["jobs"] = random_jobs(next, 120, 5, 300, "2", "8Gi", "claim_template", "node-else-two", 4);
  mix["profile"]["score"] = nlohmann::json::parse(R"([{"name": "most-allocated"}])");
  std::set<std::size_t> sizes;
  for (const auto& c : claim_starts_of_random_mix(mix, dra_scenario)) {
    INFO(c.job << " on " << c.node);
    CHECK((c.gpus == 2 || c.gpus == (c.node.rfind("big", 0) == 0 ? 8u : 4u)));
    sizes.insert(c.gpus);
  }
  CHECK(sizes.size() >= 2);   // both alternatives were taken
}

TEST_CASE("topology-manager aligns a DRA claim job's CPU and memory, not its claim's devices, as the kubelet does", "[dra][engine][topology]") {
  // The kubelet registers the device, CPU and memory managers as the TopologyManager's hint
  // providers and not the DRA manager (pkg/kubelet/cm/container_manager_linux.go,
  // NewContainerManager: AddHintProvider calls; kubelet has no topology test with a DRA claim to
  // translate). The kubelet's DRA manager gives the TopologyManager no hints: claims are prepared after
  // admission (kubernetes/website#56232, "DRA-managed devices do not participate in
  // TopologyManager decisions"). A claim aligns its own devices with matchAttribute.
  auto doc = numa_claim_doc();
  doc["dra"]["objects"].push_back(nlohmann::json::parse(R"({
    "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", "metadata": {"name": "whole-node"},
    "spec": {"spec": {"devices": {"requests": [{"name": "gpus", "exactly": {"deviceClassName": "gpu.nvidia.com", "allocationMode": "All"}}]}}}})"));
  doc["dra"]["objects"].push_back(nlohmann::json::parse(R"({
    "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", "metadata": {"name": "two-one-numa"},
    "spec": {"spec": {"devices": {"requests": [{"name": "gpus", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 2}}],
      "constraints": [{"matchAttribute": "resource.kubernetes.io/numaNode"}]}}}})"));
  doc["workload"]["jobs"] = nlohmann::json::parse(R"([
    {"id": "node", "submit_time": 0, "duration": 100, "claim_template": "whole-node", "requests": {"cpu": "2", "memory": "4Gi"}},
    {"id": "pair", "submit_time": 200, "duration": 100, "claim_template": "two-one-numa", "requests": {"cpu": "2", "memory": "4Gi"}},
    {"id": "pair-2", "submit_time": 200, "duration": 100, "claim_template": "two-one-numa", "requests": {"cpu": "2", "memory": "4Gi"}},
    {"id": "plain", "submit_time": 400, "duration": 100, "requests": {"cpu": "2", "memory": "4Gi", "nvidia.com/gpu": "4"}}])");
  auto sc = dra_scenario(doc);
  sc.keep_unplaceable = true;
  const auto r = run(sc);
  const auto got = starts(r);
  // Four GPUs over two sockets: admitted, as the kubelet admits the pod (its CPUs fit one NUMA node).
  CHECK(got.at("node") == "n-0000[0,1,2,3]");
  // Two GPUs on one NUMA node, by the claim's constraint; the second pair on the other socket.
  CHECK(got.at("pair") == "n-0000[0,1]");
  CHECK(got.at("pair-2") == "n-0000[2,3]");
  // The same four GPUs through the device plugin are hinted, and single-numa-node refuses them.
  CHECK(got.count("plain") == 0);
  CHECK(r.summary().completed == 3);
}

TEST_CASE("DRA in simulations: static MIG instances are devices; a claim takes GIs of one profile, named in claims.csv",
          "[dra][engine][mig]") {
  auto doc = dra_scenario_doc();
  doc["cluster"] = nlohmann::json::parse(R"({"node_groups": [
    {"name": "mig", "count": 2, "cpu": 64, "memory": "512Gi", "gpus": 2, "gpu_model": "A100-80GB",
     "gpu_partition": {"mode": "mig", "layout": ["4g.40gb", "3g.40gb"]}},
    {"name": "dyn", "count": 1, "cpu": 64, "memory": "512Gi", "gpus": 2, "gpu_model": "A100-80GB",
     "gpu_partition": {"mode": "mig", "dynamic": true}}]})");
  doc["dra"]["objects"] = nlohmann::json::array({nlohmann::json::parse(R"({
    "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", "metadata": {"name": "one-3g"},
    "spec": {"spec": {"devices": {"requests": [{"name": "mig", "exactly": {"deviceClassName": "mig.nvidia.com",
      "selectors": [{"cel": {"expression": "device.attributes['gpu.nvidia.com'].profile == '3g.40gb'"}}]}}]}}}})")});
  nlohmann::json jobs = nlohmann::json::array();
  for (int i = 0; i < 5; ++i) {
    jobs.push_back({{"id", "m" + std::to_string(i)}, {"submit_time", i}, {"duration", 100}, {"claim_template", "one-3g"},
                    {"requests", {{"cpu", "1"}, {"memory", "1Gi"}}}});
  }
  doc["workload"]["jobs"] = jobs;
  doc["outputs"] = {{"event_log", true}};
  const auto r = run(dra_scenario(doc));
  const auto got = starts(r);
  // Four 3g.40gb GIs (2 nodes x 2 GPUs, static); the dynamic node publishes none. The fifth job
  // waits for the first to end.
  CHECK(got.at("m0") == "mig-0000[0:mig-3g.40gb@4]");
  CHECK(got.at("m1") == "mig-0000[1:mig-3g.40gb@4]");
  CHECK(got.at("m2") == "mig-0001[0:mig-3g.40gb@4]");
  CHECK(got.at("m3") == "mig-0001[1:mig-3g.40gb@4]");
  CHECK(got.at("m4") == "mig-0000[0:mig-3g.40gb@4]");
  CHECK(r.jobs()[4].start_s == 100);
  const auto rows = r.claims();
  REQUIRE(rows.size() == 5);
  CHECK(rows[0].device == "gpu-0-mig-9-4-4");
  CHECK(rows[3].node == "mig-0001");
  CHECK(rows[3].device == "gpu-1-mig-9-4-4");
  CHECK(rows[4].job == "m4");

  // Without the profile selector the class matches 4g.40gb and 3g.40gb GIs: a job takes one kind.
  auto mixed = doc;
  mixed["dra"]["objects"][0]["spec"]["spec"]["devices"]["requests"][0]["exactly"].erase("selectors");
  CHECK(run_error(mixed).find("ResourceClaimTemplate \"one-3g\" can get MIG 3g.40gb instances, MIG 4g.40gb instances: a job in a "
                              "simulation takes one kind of device") != std::string::npos);
  // Only the dynamic node: no GI is published there, so the claim fits nowhere.
  auto dynamic = doc;
  dynamic["cluster"]["node_groups"].erase(0);
  CHECK(run_error(dynamic).find("no node can hold the claim of ResourceClaimTemplate \"one-3g\"") != std::string::npos);
  // Nor under the single strategy (review: the claim's GIs were published there, but the job's
  // request for 3g.40gb GIs could never pass node-resources-fit on such a node).
  auto single = doc;
  single["cluster"]["node_groups"][0]["gpu_partition"] = {{"mode", "mig"}, {"strategy", "single"}, {"layout", {"3g.40gb", "3g.40gb"}}};
  single["cluster"]["node_groups"].erase(1);
  CHECK(run_error(single).find("no node can hold the claim of ResourceClaimTemplate \"one-3g\"") != std::string::npos);
}

TEST_CASE("DRA in simulations: ResourceSlices given in the scenario stand in for a node's own, device by device",
          "[dra][engine]") {
  // pcie-0000's slice as a real cluster printed it: NVML's product name, a pool of its own, and
  // gpu-3 left out (not published). A claim for two GPUs of that product can only go there, and
  // one pair at a time: the second finds gpu-2 alone and waits.
  auto doc = dra_scenario_doc();
  doc["dra"]["objects"] = nlohmann::json::array({nlohmann::json::parse(R"({
    "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "pcie-0000-gpus"},
    "spec": {"driver": "gpu.nvidia.com", "nodeName": "pcie-0000", "pool": {"name": "p0", "generation": 1, "resourceSliceCount": 1},
      "devices": [
        {"name": "gpu-0", "attributes": {"type": {"string": "gpu"}, "productName": {"string": "NVIDIA A100-SXM4-80GB"}}},
        {"name": "gpu-1", "attributes": {"type": {"string": "gpu"}, "productName": {"string": "NVIDIA A100-SXM4-80GB"}}},
        {"name": "gpu-2", "attributes": {"type": {"string": "gpu"}, "productName": {"string": "NVIDIA A100-SXM4-80GB"}}}]}})"),
    nlohmann::json::parse(R"({
    "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", "metadata": {"name": "sxm-pair"},
    "spec": {"spec": {"devices": {"requests": [{"name": "gpus", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 2,
      "selectors": [{"cel": {"expression": "device.attributes['gpu.nvidia.com'].productName == 'NVIDIA A100-SXM4-80GB'"}}]}}]}}}})")});
  doc["workload"]["jobs"] = nlohmann::json::parse(R"([
    {"id": "p1", "submit_time": 0, "duration": 100, "claim_template": "sxm-pair", "requests": {"cpu": "1", "memory": "1Gi"}},
    {"id": "p2", "submit_time": 1, "duration": 100, "claim_template": "sxm-pair", "requests": {"cpu": "1", "memory": "1Gi"}},
    {"id": "one", "submit_time": 2, "duration": 10, "requests": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "1"}}])");
  doc["outputs"] = {{"event_log", true}};
  const auto r = run(dra_scenario(doc));
  const auto got = starts(r);
  CHECK(got.at("p1") == "pcie-0000[0,1]");
  CHECK(got.at("p2") == "pcie-0000[0,1]");   // after p1: gpu-2 alone cannot make a pair
  CHECK(r.jobs()[1].start_s == 100);
  CHECK(got.at("one") == "pcie-0000[2]");    // jobs without a claim still see every GPU
  const auto rows = r.claims();
  REQUIRE(rows.size() == 4);
  CHECK(rows[0].pool == "p0");
  CHECK(rows[1].device == "gpu-1");

  auto error_of = [&](const std::string& slice) {
    auto bad = doc;
    bad["dra"]["objects"][0] = nlohmann::json::parse(slice);
    return run_error(bad);
  };
  CHECK(error_of(R"({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "s"},
      "spec": {"driver": "gpu.nvidia.com", "nodeName": "pcie-0000", "pool": {"name": "p0", "resourceSliceCount": 1},
      "devices": [{"name": "gpu-9"}]}})")
            .find("field '/dra/objects': ResourceSlice \"s\": device \"gpu-9\" is no device node \"pcie-0000\" hands out in a simulation "
                  "(it has: gpu-0, gpu-1, gpu-2, gpu-3)") != std::string::npos);
  // A pool is one node's (review: a given slice on pcie-0001 in the pool named after pcie-0000 made
  // pcie-0000's busy GPUs busy there too).
  CHECK(error_of(R"({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "s"},
      "spec": {"driver": "gpu.nvidia.com", "nodeName": "pcie-0001", "pool": {"name": "pcie-0000", "resourceSliceCount": 1},
      "devices": [{"name": "gpu-0"}]}})")
            .find("ResourceSlices \"pcie-0000-gpu.nvidia.com\" (node pcie-0000) and \"s\" (node pcie-0001) are both in gpu.nvidia.com's pool "
                  "\"pcie-0000\"") != std::string::npos);
  CHECK(error_of(R"({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "s"},
      "spec": {"driver": "gpu.nvidia.com", "nodeName": "nope", "pool": {"name": "p0", "resourceSliceCount": 1}, "devices": []}})")
            .find("ResourceSlice \"s\": no node of the cluster is named \"nope\"") != std::string::npos);
  CHECK(error_of(R"({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "s"},
      "spec": {"driver": "gpu.nvidia.com", "allNodes": true, "pool": {"name": "p0", "resourceSliceCount": 1}, "devices": []}})")
            .find("in a simulation a slice names its node") != std::string::npos);
  CHECK(error_of(R"({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "s"},
      "spec": {"driver": "nic.example.com", "nodeName": "pcie-0000", "pool": {"name": "p0", "resourceSliceCount": 1}, "devices": []}})")
            .find("driver \"nic.example.com\"") != std::string::npos);
}

TEST_CASE("Jobs of two claim templates, or a claim and a plain request, asking as many GPUs are not equivalent: one "
          "failing says nothing of the other", "[dra][engine]") {
  // The engine skips a waiting job when an equivalent one (Scheduler::equivalence_class) failed
  // in the same pass. Here the claim's two GPUs must share a PCIe root, which GPUs 1 and 2 of a
  // 3-GPU node do not; the jobs that wait with it (a plain two-GPU request, and a claim for any
  // two GPUs, whose resolved request is the first claim's exactly) fit there once the blocker ends.
  auto doc = dra_scenario_doc();
  doc["dra"]["objects"].push_back(nlohmann::json::parse(R"({
    "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", "metadata": {"name": "any-two"},
    "spec": {"spec": {"devices": {"requests": [{"name": "gpus", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 2}}]}}}})"));
  doc["cluster"]["node_groups"][0]["count"] = 1;
  doc["cluster"]["node_groups"][0]["gpus"] = 3;
  doc["workload"]["jobs"] = nlohmann::json::parse(R"([
    {"id": "one", "submit_time": 0, "duration": 600, "requests": {"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": "1"}},
    {"id": "blocker", "submit_time": 0, "duration": 100, "requests": {"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": "2"}},
    {"id": "pair", "submit_time": 1, "duration": 300, "claim_template": "two-gpus-one-pcie-root", "requests": {"cpu": "8", "memory": "32Gi"}},
    {"id": "plain", "submit_time": 2, "duration": 300, "requests": {"cpu": "8", "memory": "32Gi", "nvidia.com/gpu": "2"}}])");
  for (const bool plain : {true, false}) {
    if (!plain) doc["workload"]["jobs"][3] = nlohmann::json::parse(
        R"({"id": "any", "submit_time": 2, "duration": 300, "claim_template": "any-two", "requests": {"cpu": "8", "memory": "32Gi"}})");
    for (const bool exact : {false, true}) {
      INFO((plain ? "a plain request" : "a claim for any two GPUs") << ", exact scan: " << exact);
      Scenario sc = dra_scenario(doc);
      sc.exact_scan = exact;
      const auto jobs = run(sc).jobs();
      REQUIRE(jobs.size() == 4);
      CHECK(jobs[2].start_s == 600.0);   // the claim waits for GPUs 0 and 1
      CHECK(jobs[3].start_s == 100.0);   // the other takes GPUs 1 and 2 as soon as they are free
    }
  }
}

TEST_CASE("DRA in simulations: passthrough GPUs are NVIDIA's vfio devices; a claim of class vfio.gpu.nvidia.com takes "
          "them, one of gpu.nvidia.com never does",
          "[dra][engine]") {
  // NVIDIA's DRA driver publishes a GPU bound to vfio-pci as a `type: vfio` device named
  // gpu-vfio-<k> (k counting the node's VFIO GPUs), selected by the vfio.gpu.nvidia.com class
  // (k8s-dra-driver-gpu, cmd/gpu-kubelet-plugin VfioDeviceInfo.GetDevice / CanonicalName).
  auto doc = dra_scenario_doc();
  doc["cluster"] = nlohmann::json::parse(R"({"node_groups": [
    {"name": "vm", "count": 1, "cpu": 64, "memory": "512Gi", "gpus": 2, "gpu_model": "A100-80GB",
     "gpu_partition": {"mode": "passthrough"}},
    {"name": "bare", "count": 1, "cpu": 64, "memory": "512Gi", "gpus": 2, "gpu_model": "A100-80GB"}]})");
  doc["dra"]["objects"] = nlohmann::json::array({nlohmann::json::parse(R"({
    "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", "metadata": {"name": "vfio-pair"},
    "spec": {"spec": {"devices": {"requests": [{"name": "vm-gpus", "exactly": {"deviceClassName": "vfio.gpu.nvidia.com", "count": 2}}],
      "constraints": [{"matchAttribute": "resource.kubernetes.io/numaNode"}]}}}})"),
                                                  nlohmann::json::parse(R"({
    "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", "metadata": {"name": "one-gpu"},
    "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}}}})")});
  doc["workload"]["jobs"] = nlohmann::json::parse(R"([
    {"id": "vm-a", "submit_time": 0, "duration": 100, "claim_template": "vfio-pair", "requests": {"cpu": "1", "memory": "1Gi"}},
    {"id": "c-a", "submit_time": 1, "duration": 50, "claim_template": "one-gpu", "requests": {"cpu": "1", "memory": "1Gi"}},
    {"id": "c-b", "submit_time": 2, "duration": 50, "claim_template": "one-gpu", "requests": {"cpu": "1", "memory": "1Gi"}},
    {"id": "c-c", "submit_time": 3, "duration": 50, "claim_template": "one-gpu", "requests": {"cpu": "1", "memory": "1Gi"}},
    {"id": "vm-b", "submit_time": 4, "duration": 100, "claim_template": "vfio-pair", "requests": {"cpu": "1", "memory": "1Gi"}}])");
  doc["outputs"] = {{"event_log", true}};
  const auto sc = dra_scenario(doc);
  const auto r = run(sc);
  const auto got = starts(r);
  CHECK(got.at("vm-a") == "vm-0000[0,1]");
  // gpu.nvidia.com claims never take a vfio device: the third waits for the bare node.
  CHECK(got.at("c-a") == "bare-0000[0]");
  CHECK(got.at("c-b") == "bare-0000[1]");
  CHECK(r.jobs()[3].start_s == 51);
  CHECK(r.jobs()[4].start_s == 100);   // the VM GPUs free again
  const auto rows = r.claims();
  REQUIRE(rows.size() >= 2);
  CHECK(rows[0].job == "vm-a");
  CHECK(rows[0].device == "gpu-vfio-0");
  CHECK(rows[1].device == "gpu-vfio-1");

  // The published device: type vfio, NVIDIA's vendor id, no NVML attributes or memory capacity.
  const auto slice = dra::nvidia_slice(sc.nodes[0], sc.catalog, true);
  REQUIRE(slice);
  REQUIRE(slice->devices.size() == 2);
  const auto& dev = slice->devices[1];
  CHECK(dev.name == "gpu-vfio-1");
  auto attr = [&](const std::string& k) -> std::string {
    for (const auto& [key, v] : dev.attributes) {
      if (key != k) continue;
      if (const auto* s = std::get_if<std::string>(&v)) return *s;
      if (const auto* i = std::get_if<std::int64_t>(&v)) return std::to_string(*i);
      return "?";
    }
    return "";
  };
  CHECK(attr("gpu.nvidia.com/type") == "vfio");
  CHECK(attr("gpu.nvidia.com/vendorID") == "0x10de");
  CHECK(attr("gpu.nvidia.com/productName") == "NVIDIA A100-80GB");
  CHECK(attr("gpu.nvidia.com/uuid").size() == 36);
  CHECK(attr("gpu.nvidia.com/architecture").empty());
  CHECK_FALSE(attr("resource.kubernetes.io/numaNode").empty());
  CHECK(attr("gpu.nvidia.com/numa") == attr("resource.kubernetes.io/numaNode"));   // the driver publishes both
  CHECK(dev.capacity.empty());

  // A given slice may not turn the node's vfio device into a whole GPU (review of 5f40a8b).
  auto retyped = doc;
  retyped["dra"]["objects"].push_back(nlohmann::json::parse(R"({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
    "metadata": {"name": "vm-gpus"}, "spec": {"driver": "gpu.nvidia.com", "nodeName": "vm-0000",
      "pool": {"name": "vm", "generation": 1, "resourceSliceCount": 1},
      "devices": [{"name": "gpu-vfio-0", "attributes": {"type": {"string": "gpu"}}}]}})"));
  CHECK(run_error(retyped).find("ResourceSlice \"vm-gpus\": device \"gpu-vfio-0\" has type \"gpu\", but node \"vm-0000\"'s device "
                                "of that name is of type \"vfio\"") != std::string::npos);

  // A class matching both kinds: a job takes one kind of device.
  auto both = doc;
  both["dra"]["objects"][1]["spec"]["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] = "any-nvidia";
  both["dra"]["objects"].push_back(nlohmann::json::parse(R"({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
    "metadata": {"name": "any-nvidia"}, "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.nvidia.com'"}}]}})"));
  CHECK(run_error(both).find("ResourceClaimTemplate \"one-gpu\" can get whole GPUs, passthrough GPUs (vfio): a job in a simulation "
                             "takes one kind of device") != std::string::npos);
}
