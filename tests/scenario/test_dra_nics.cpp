// NICs as DRA devices: the node model's `nics`, published as kubernetes-sigs/dranet publishes
// network interfaces (pkg/inventory db.go discoverPCIDevices and addLinkAttributes, inventory
// NormalizePCIAddress, pkg/apis attributes.go), and aligned with NVIDIA's GPUs by the standard
// resource.kubernetes.io/pcieRoot attribute both drivers publish (docs/dra.md).
#include <catch2/catch.hpp>

#include <algorithm>
#include <bit>
#include <map>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include <gpusched/dra/nvidia.hpp>
#include <gpusched/error.hpp>
#include <gpusched/scenario/k8s_dra.hpp>
#include <gpusched/scenario/scenario.hpp>

#include "support/support.hpp"

using namespace gpusched;
using namespace gpusched::scenario;
namespace t = gpusched::test;

namespace {

std::string string_attr(const dra::Device& d, const std::string& name) {
  const auto* v = d.attribute(name);
  REQUIRE(v != nullptr);
  return std::get<std::string>(*v);
}

std::string run_error(const nlohmann::json& doc) {
  try {
    (void)run(parse_scenario(doc.dump(), "nics.json", t::source_dir() / "examples" / "dra"));
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("NICs of the node model: spread over the GPUs' PCIe switches, else over the sockets", "[dra][nics]") {
  const Scenario sc = load_scenario((t::source_dir() / "examples" / "dra" / "nics.json").string());
  REQUIRE(sc.nodes.size() == 3);
  const auto& hgx = sc.nodes[0];
  REQUIRE(hgx.nics.size() == 8);
  // Four switches of two GPUs (gpus_per_pcie_switch 2): NIC i behind the switch of GPUs 2(i mod 4).
  for (std::size_t i = 0; i < 8; ++i) {
    INFO("NIC " << i);
    CHECK(hgx.nics[i].root_gpu == static_cast<std::int16_t>(2 * (i % 4)));
    CHECK(hgx.nics[i].socket == hgx.gpus[2 * (i % 4)].socket);
    CHECK(hgx.nics[i].rdma);
  }
  const auto& pcie = sc.nodes[2];
  REQUIRE(pcie.nics.size() == 1);
  CHECK(pcie.nics[0].root_gpu == -1);   // no GPU switch: a root of its own
  CHECK_FALSE(pcie.nics[0].rdma);

  // Mistakes name the field.
  auto doc = nlohmann::json::parse(t::read_file(t::source_dir() / "examples" / "dra" / "nics.json"));
  const auto error = [&](const nlohmann::json& nics) {
    auto d = doc;
    d["cluster"]["node_groups"][0]["nics"] = nics;
    try {
      (void)parse_scenario(d.dump(), "nics.json", t::source_dir() / "examples" / "dra");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(error(65).find("field '/cluster/node_groups/0/nics'") != std::string::npos);
  CHECK(error({{"rdma", true}}).find("field '/cluster/node_groups/0/nics/count': missing field 'count'") != std::string::npos);
  CHECK(error({{"count", 2}, {"rdma", "yes"}}).find("field '/cluster/node_groups/0/nics/rdma': expected true or false") != std::string::npos);
  CHECK(error({{"count", 2}, {"speed", 400}}).find("nics/speed") != std::string::npos);
  CHECK(error(4).empty());
  // A list places each NIC: on a GPU's root, or on a socket's root of its own.
  CHECK(error(nlohmann::json::parse(R"([{"gpu": 0}, {"gpu": 9}])")).find("nics/1/gpu': 9 is out of range") != std::string::npos);
  CHECK(error(nlohmann::json::parse(R"([{"rdma": false}])")).find("nics/0/gpu': missing field 'gpu'") != std::string::npos);
  CHECK(error(nlohmann::json::parse(R"([{"gpu": 0, "socket": 1}])")).find("give gpu or socket, not both") != std::string::npos);
  CHECK(error(nlohmann::json::parse(R"([{"socket": 2}])")).find("nics/0/socket'") != std::string::npos);
  CHECK(error("many").find("expected a count, {count, rdma}, or a list") != std::string::npos);
  auto listed = doc;
  // A DGX H100's four NICs of nvidia-smi topo -m (NIC0 PIX to GPU0-1, NIC1 to GPU2-3, ...), and a
  // storage NIC on socket 1 of its own.
  listed["cluster"]["node_groups"][0]["nics"] = nlohmann::json::parse(R"([{"gpu": 0}, {"gpu": 2}, {"gpu": 4}, {"gpu": 6},
      {"socket": 1, "rdma": false}])");
  const auto ls = parse_scenario(listed.dump(), "nics.json", t::source_dir() / "examples" / "dra");
  const auto& l = ls.nodes[0];
  REQUIRE(l.nics.size() == 5);
  CHECK(l.nics[2].root_gpu == 4);
  CHECK(l.nics[2].socket == 1);
  CHECK(dra::nic_pcie_root(l, 2) == dra::gpu_pcie_root(l, 5));   // GPU 4's switch holds GPU 5 too
  CHECK(l.nics[4].root_gpu == -1);
  CHECK(l.nics[4].socket == 1);
  for (std::size_t g = 0; g < l.gpus.size(); ++g) CHECK(dra::nic_pcie_root(l, 4) != dra::gpu_pcie_root(l, g));
}

TEST_CASE("NICs are published as dranet publishes them and read back as written", "[dra][nics]") {
  const Scenario sc = load_scenario((t::source_dir() / "examples" / "dra" / "nics.json").string());
  const auto list = nvidia_dra_objects(sc.nodes, sc.catalog);
  const auto objs = read_dra_objects(parse_kubernetes_objects(list.dump(), "slices.json"));
  std::map<std::string, const dra::ResourceSlice*> nics, gpus;   // by node
  for (const auto& s : objs.slices) (s.driver == "dra.net" ? nics : gpus)[s.node_name] = &s;
  REQUIRE(nics.size() == 3);
  const auto& h = *nics.at("hgx-0000");
  CHECK(h.pool == "hgx-0000");
  REQUIRE(h.devices.size() == 8);
  // Named after a PCI address as dranet names them ("net1-" and the address, ':' and '.' as '-').
  CHECK(h.devices[0].name == "net1-0000-10-00-0");
  CHECK(string_attr(h.devices[0], "dra.net/pciAddress") == "0000:10:00.0");
  CHECK(string_attr(h.devices[0], "dra.net/ifName") == "eth1");
  CHECK(string_attr(h.devices[0], "dra.net/rdmaDevice") == "mlx5_0");
  CHECK(std::get<bool>(*h.devices[0].attribute("dra.net/rdma")));
  CHECK(std::get<std::int64_t>(*h.devices[2].attribute("dra.net/numaNode")) == 1);
  // Each NIC's root is that of the GPUs behind its switch; every GPU root has two NICs.
  std::map<std::string, int> nics_per_root;
  for (const auto& d : h.devices) ++nics_per_root[string_attr(d, "resource.kubernetes.io/pcieRoot")];
  std::set<std::string> gpu_roots;
  for (const auto& d : gpus.at("hgx-0000")->devices) gpu_roots.insert(string_attr(d, "resource.kubernetes.io/pcieRoot"));
  CHECK(gpu_roots.size() == 4);
  for (const auto& r : gpu_roots) CHECK(nics_per_root[r] == 2);
  // The PCIe node's NIC: its own root, which no GPU has; no RDMA, so no rdmaDevice.
  const auto& p = *nics.at("pcie-0000");
  REQUIRE(p.devices.size() == 1);
  CHECK_FALSE(std::get<bool>(*p.devices[0].attribute("dra.net/rdma")));
  CHECK(p.devices[0].attribute("dra.net/rdmaDevice") == nullptr);
  for (const auto& d : gpus.at("pcie-0000")->devices) {
    CHECK(string_attr(d, "resource.kubernetes.io/pcieRoot") != string_attr(p.devices[0], "resource.kubernetes.io/pcieRoot"));
  }
}

TEST_CASE("A GPU and a NIC on one PCIe root, end to end through gpusched dra slices and dra allocate", "[dra][nics][cli]") {
  t::TempDir dir;
  const auto slices = t::cli({"dra", "slices", (t::source_dir() / "examples" / "dra" / "nics.json").string()});
  REQUIRE(slices.rc == 0);
  const auto path = dir.write("slices.json", slices.out);
  const auto got = t::cli({"dra", "allocate", path.string(), (t::source_dir() / "examples" / "dra" / "gpu-nic.yaml").string()});
  INFO(got.out << got.err);
  REQUIRE(got.rc == 0);
  // GPU 0 and NIC 0 share the first root; the pair claim then takes the next root's two GPUs and
  // its two NICs (eth2, eth6); the L40S node's NIC shares no root with a GPU.
  CHECK_THAT(got.out, Catch::Contains("training/gpu-and-nic-one-root        hgx-0000  gpu=gpu.nvidia.com/hgx-0000/gpu-0, "
                                      "nic=dra.net/hgx-0000/net1-0000-10-00-0"));
  CHECK_THAT(got.out, Catch::Contains("gpus=gpu.nvidia.com/hgx-0000/gpu-2, gpus=gpu.nvidia.com/hgx-0000/gpu-3, "
                                      "nics=dra.net/hgx-0000/net1-0000-11-00-0, nics=dra.net/hgx-0000/net1-0000-15-00-0"));
  CHECK_THAT(got.out, Catch::Contains("inference/l40s-and-nic-one-root      -         pending"));
  CHECK_THAT(got.out, Catch::Contains("2 of 3 claims allocated"));
}

namespace {

/// examples/dra/nics.json (two HGX H100 nodes: 8 GPUs, 4 PCIe switches of two GPUs and two RDMA
/// NICs each; an L40S node whose plain NIC has a root of its own) under the DRA profile, with
/// the dranet DeviceClass, the template `tmpl` (its spec.devices) and `jobs` jobs of it, all at 0 s
/// for 10 s.
nlohmann::json nic_jobs(const std::string& devices, int jobs) {
  auto doc = nlohmann::json::parse(t::read_file(t::source_dir() / "examples" / "dra" / "nics.json"));
  doc["profile"] = nlohmann::json::parse(R"({"name": "kube-dra", "filter": [{"name": "node-resources-fit"}, {"name": "dynamic-resources"}],
      "score": [{"name": "first-fit"}], "device_select": {"name": "dynamic-resources"}})");
  doc["dra"] = {{"objects", nlohmann::json::array({nlohmann::json::parse(R"({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
       "metadata": {"name": "dranet"}, "spec": {"selectors": [{"cel": {"expression": "device.driver == 'dra.net'"}}]}})"),
      {{"apiVersion", "resource.k8s.io/v1"}, {"kind", "ResourceClaimTemplate"}, {"metadata", {{"name", "tmpl"}}},
       {"spec", {{"spec", {{"devices", nlohmann::json::parse(devices)}}}}}}})}};
  doc["workload"]["jobs"] = nlohmann::json::array();
  for (int i = 0; i < jobs; ++i) {
    doc["workload"]["jobs"].push_back({{"id", "j" + std::to_string(i)}, {"submit_time", 0}, {"duration", 10}, {"claim_template", "tmpl"},
                                       {"requests", {{"cpu", "1"}, {"memory", "1Gi"}}}});
  }
  return doc;
}

Scenario parse_nics(const nlohmann::json& doc, bool exact = false) {
  auto sc = parse_scenario(doc.dump(), "nics.json", t::source_dir() / "examples" / "dra");
  sc.exact_scan = exact;
  sc.outputs.event_log = true;
  return sc;
}

/// The scenario's jobs with their claims resolved to what each states (as run() does).
std::vector<JobSpec> resolved_jobs(const Scenario& sc) {
  auto jobs = sc.jobs;
  prepare_claims(jobs, sc);
  return jobs;
}

/// The index of the NIC `device` names on `spec` (its dranet device name).
int nic_index(const NodeSpec& spec, const std::string& device) {
  const auto slice = dra::dranet_slice(spec);
  REQUIRE(slice);
  for (std::size_t k = 0; k < slice->devices.size(); ++k) {
    if (slice->devices[k].name == device) return static_cast<int>(k);
  }
  FAIL("no NIC " << device << " on " << spec.name);
  return -1;
}

}  // namespace

TEST_CASE("Simulated jobs hold NICs through their claims, on their GPU's PCIe root", "[dra][nics][engine]") {
  // gpu-nic.yaml's first claim as a template: a GPU and an RDMA NIC behind one PCIe switch. One
  // claim over two drivers' slices of one node is the Kubernetes structured allocator's
  // "several-different-drivers" case (allocator_test.go; translated in test_dra_allocator.cpp);
  // here the engine keeps what it allocated held until the job ends.
  const auto doc = nic_jobs(R"({"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}},
      {"name": "nic", "exactly": {"deviceClassName": "dranet", "selectors": [{"cel": {"expression": "device.attributes['dra.net'].rdma == true"}}]}}],
      "constraints": [{"requests": ["gpu", "nic"], "matchAttribute": "resource.kubernetes.io/pcieRoot"}]})", 20);
  const auto sc = parse_nics(doc);
  // The job states its one GPU: the NIC comes besides, not as a second GPU.
  const auto resolved = resolved_jobs(sc);
  REQUIRE(resolved.size() == 20);
  CHECK(resolved[0].request.gpu.mode == GpuMode::kWhole);
  CHECK(resolved[0].request.gpu.count == 1);
  CHECK(resolved[0].constraints.claims->most_devices == 0);   // (the same on every node)
  const auto r = run(sc);
  REQUIRE(r.summary().completed == 20);
  // 16 GPU-NIC pairs share a root (two HGX nodes x four switches x two); the L40S node's NIC
  // shares none. So 16 jobs start at once and 4 when the first end, each pair held once at a time.
  const auto& engine = r.engine();
  std::map<std::string, std::string> nic_of, gpu_of;   // job -> device
  for (const auto& row : r.claims()) {
    INFO(row.job << " " << row.request << " " << row.device);
    CHECK(row.pool == row.node);
    if (row.request == "nic") {
      CHECK(row.driver == "dra.net");
      CHECK(nic_of.emplace(row.job, row.device).second);
    } else {
      CHECK(row.request == "gpu");
      CHECK(row.driver == "gpu.nvidia.com");
      CHECK(gpu_of.emplace(row.job, row.device).second);
    }
  }
  REQUIRE(nic_of.size() == 20);
  std::map<double, std::set<std::pair<std::string, int>>> nics_at;   // start -> (node, NIC) held from then
  int at_zero = 0;
  for (std::uint32_t j = 0; j < 20; ++j) {
    const auto& rt = engine.job(JobId{j});
    const std::string name = "j" + std::to_string(j);
    REQUIRE(rt.placements.size() == 1);
    const auto& p = rt.placements.front();
    const auto& spec = engine.cluster().spec(p.node);
    INFO(name << " on " << spec.name);
    CHECK(spec.name.rfind("hgx", 0) == 0);
    // The placement's NIC is the one claims.csv names, on the root of the GPU it holds.
    REQUIRE(std::popcount(p.nics) == 1);
    const int k = std::countr_zero(p.nics);
    CHECK(k == nic_index(spec, nic_of.at(name)));
    REQUIRE(p.gpus.size() == 1);
    CHECK(gpu_of.at(name) == "gpu-" + std::to_string(p.gpus.front().index));
    CHECK(dra::nic_pcie_root(spec, static_cast<std::size_t>(k)) == dra::gpu_pcie_root(spec, p.gpus.front().index));
    const double start = static_cast<double>(rt.start.us) / 1e6;
    at_zero += start == 0.0 ? 1 : 0;
    CHECK(nics_at[start].emplace(spec.name, k).second);   // no NIC held twice at once
  }
  CHECK(at_zero == 16);
  CHECK(nics_at.size() == 2);
  CHECK(nics_at.rbegin()->first == 10.0);
  // Every NIC went back: the cluster ends with none held.
  for (std::uint32_t n = 0; n < engine.cluster().node_count(); ++n) CHECK(engine.cluster().node(NodeId{n}).nics_busy == 0);
  // The event log names the NIC after the GPU ("hgx-0000[0]{nic:0}": the first pair of the first node).
  CHECK(std::any_of(r.event_log().begin(), r.event_log().end(),
                    [](const std::string& line) { return line.find(",start,j0,,hgx-0000[0]{nic:0}") != std::string::npos; }));
  // The node index decides as the plain scan, and a second run writes the same.
  const auto scanned = run(parse_nics(doc, true));
  CHECK(scanned.event_log() == r.event_log());
  const auto again = run(parse_nics(doc));
  REQUIRE(again.claims().size() == r.claims().size());
  for (std::size_t i = 0; i < r.claims().size(); ++i) CHECK(again.claims()[i].device == r.claims()[i].device);
}

TEST_CASE("A claim for NICs alone takes no GPU and waits for a free NIC", "[dra][nics][engine]") {
  // Any NIC: eight on each HGX node and the L40S node's one, so 17 jobs run at once.
  const auto doc = nic_jobs(R"({"requests": [{"name": "nic", "exactly": {"deviceClassName": "dranet"}}]})", 18);
  const auto sc = parse_nics(doc);
  const auto resolved = resolved_jobs(sc);
  CHECK(resolved[0].request.gpu.mode == GpuMode::kNone);
  CHECK(resolved[0].request.tpu.chips == 0);
  REQUIRE(resolved[0].constraints.claims);
  const auto r = run(sc);
  REQUIRE(r.summary().completed == 18);
  int at_zero = 0;
  for (const auto& row : r.jobs()) at_zero += row.start_s == 0.0 ? 1 : 0;
  CHECK(at_zero == 17);
  for (std::uint32_t j = 0; j < 18; ++j) {
    const auto& p = r.engine().job(JobId{j}).placements.front();
    CHECK(p.gpus.empty());
    CHECK(std::popcount(p.nics) == 1);
  }
  // A GPU and `All` of a node's RDMA NICs: two jobs at once, one per HGX node (the L40S's NIC is
  // no RDMA NIC), and `All` NICs do not change the GPU count the job states.
  const auto all = parse_nics(nic_jobs(R"({"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}},
      {"name": "nics", "exactly": {"deviceClassName": "dranet", "allocationMode": "All",
       "selectors": [{"cel": {"expression": "device.attributes['dra.net'].rdma == true"}}]}}]})", 3));
  CHECK(resolved_jobs(all)[0].request.gpu.count == 1);
  const auto ra = run(all);
  REQUIRE(ra.summary().completed == 3);
  CHECK(ra.jobs()[0].start_s == 0.0);
  CHECK(ra.jobs()[1].start_s == 0.0);
  CHECK(ra.jobs()[2].start_s == 10.0);   // every RDMA NIC is held
  CHECK(std::popcount(ra.engine().job(JobId{0}).placements.front().nics) == 8);
}

TEST_CASE("A request that can get NICs or GPUs is refused by name", "[dra][nics][engine]") {
  // A firstAvailable list of a NIC, else a GPU: the job's GPU count would depend on which is free.
  const auto alternatives = nic_jobs(R"({"requests": [{"name": "x", "firstAvailable": [
      {"name": "nic", "deviceClassName": "dranet"}, {"name": "gpu", "deviceClassName": "gpu.nvidia.com"}]}]})", 1);
  CHECK(run_error(alternatives).find("ResourceClaimTemplate \"tmpl\", request x can get NICs (driver dra.net, e.g. net1-0000-10-00-0 of node "
                                     "hgx-0000) and other devices (e.g. gpu-0 of node hgx-0000)") != std::string::npos);
  // A GPU and a NIC in requests of their own run (above); a NIC request beside GPUs of 33
  // devices in all is over Kubernetes' 32 per claim.
  const auto big = nic_jobs(R"({"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 32}},
      {"name": "nic", "exactly": {"deviceClassName": "dranet"}}]})", 1);
  CHECK(run_error(big).find("asks for 33 devices, more than Kubernetes' 32 per claim") != std::string::npos);
  // A selector reading NVIDIA's attributes without checking the driver meets the NICs too, and
  // an `All` request checks every device of the node: the CEL runtime error Kubernetes gives with
  // dranet installed ("no such key"). Checking the driver first, as NVIDIA's classes do, avoids it.
  auto unguarded = nic_jobs(R"({"requests": [{"name": "gpus", "exactly": {"deviceClassName": "any", "allocationMode": "All",
      "selectors": [{"cel": {"expression": "device.attributes['gpu.nvidia.com'].productName == 'NVIDIA H100-80GB'"}}]}}]})", 1);
  unguarded["dra"]["objects"].push_back(nlohmann::json::parse(R"({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
      "metadata": {"name": "any"}, "spec": {}})"));
  CHECK(run_error(unguarded).find("no such key") != std::string::npos);
  unguarded["dra"]["objects"][1]["spec"]["spec"]["devices"]["requests"][0]["exactly"]["selectors"][0]["cel"]["expression"] =
      "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].productName == 'NVIDIA H100-80GB'";
  CHECK(run_error(unguarded) == "");
}

TEST_CASE("examples/dra/gpu-nic-jobs.json: every claim job's GPUs and NICs share a root, no NIC held twice at once", "[dra][nics][engine]") {
  const auto sc = load_scenario((t::source_dir() / "examples" / "dra" / "gpu-nic-jobs.json").string());
  const auto r = run(sc);
  const auto& engine = r.engine();
  REQUIRE(r.summary().completed == sc.jobs.size());
  struct Held {
    std::uint32_t node;
    std::uint64_t nics;
    std::int64_t start, end;
  };
  std::vector<Held> held;
  for (std::uint32_t j = 0; j < sc.jobs.size(); ++j) {
    const auto& rt = engine.job(JobId{j});
    const auto& p = rt.placements.front();
    const auto& spec = engine.cluster().spec(p.node);
    INFO(sc.jobs[j].name << " on " << spec.name);
    const bool claim = !sc.jobs[j].constraints.claim_template.empty();
    // A claim job holds one NIC per GPU (its template's counts), each on the root of one of its
    // GPUs; a plain nvidia.com/gpu job holds none.
    CHECK(std::popcount(p.nics) == (claim ? static_cast<int>(p.gpus.size()) : 0));
    std::set<std::string> gpu_roots;
    for (const auto& g : p.gpus) gpu_roots.insert(dra::gpu_pcie_root(spec, g.index));
    for (std::uint64_t m = p.nics; m != 0; m &= m - 1) CHECK(gpu_roots.count(dra::nic_pcie_root(spec, static_cast<std::size_t>(std::countr_zero(m)))) == 1);
    held.push_back({p.node.value, p.nics, rt.start.us, rt.end.us});
  }
  for (std::size_t a = 0; a < held.size(); ++a) {
    for (std::size_t b = a + 1; b < held.size(); ++b) {
      const bool overlap = held[a].node == held[b].node && held[a].start < held[b].end && held[b].start < held[a].end;
      if (overlap) CHECK((held[a].nics & held[b].nics) == 0);
    }
  }
}
