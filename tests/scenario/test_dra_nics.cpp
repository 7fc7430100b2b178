// NICs as DRA devices: the node model's `nics`, published as kubernetes-sigs/dranet publishes
// network interfaces (pkg/inventory db.go discoverPCIDevices and addLinkAttributes, inventory
// NormalizePCIAddress, pkg/apis attributes.go), and aligned with NVIDIA's GPUs by the standard
// resource.kubernetes.io/pcieRoot attribute both drivers publish (docs/dra.md).
#include <catch2/catch.hpp>

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

TEST_CASE("Simulations refuse a claim for NICs by name, not as unplaceable", "[dra][nics][engine]") {
  auto doc = nlohmann::json::parse(t::read_file(t::source_dir() / "examples" / "dra" / "nics.json"));
  doc["profile"] = nlohmann::json::parse(R"({"name": "kube-dra", "filter": [{"name": "node-resources-fit"}, {"name": "dynamic-resources"}],
      "score": [{"name": "first-fit"}], "device_select": {"name": "dynamic-resources"}})");
  doc["dra"] = {{"objects", nlohmann::json::parse(R"([
      {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "dranet"},
       "spec": {"selectors": [{"cel": {"expression": "device.driver == 'dra.net'"}}]}},
      {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", "metadata": {"name": "nic"},
       "spec": {"spec": {"devices": {"requests": [{"name": "nic", "exactly": {"deviceClassName": "dranet"}}]}}}}])")}};
  doc["workload"]["jobs"][0] = nlohmann::json::parse(R"({"id": "n", "submit_time": 0, "duration": 10, "claim_template": "nic",
      "requests": {"cpu": "1", "memory": "1Gi"}})");
  CHECK(run_error(doc).find("ResourceClaimTemplate \"nic\", request nic selects NICs (driver dra.net, e.g. net1-0000-10-00-0 of node hgx-0000): "
                            "simulations do not hand out NICs yet") != std::string::npos);
  // A claim for a GPU and a NIC (gpu-nic.yaml's first claim, as a template), and one whose first
  // alternative is a NIC, are refused too (review: the first was refused as unplaceable, the
  // second ran on a GPU where Kubernetes would allocate the NIC).
  auto mixed = doc;
  mixed["dra"]["objects"][1]["spec"]["spec"]["devices"] = nlohmann::json::parse(R"({"requests": [
      {"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}, {"name": "nic", "exactly": {"deviceClassName": "dranet"}}],
      "constraints": [{"matchAttribute": "resource.kubernetes.io/pcieRoot"}]})");
  CHECK(run_error(mixed).find("request nic selects NICs") != std::string::npos);
  mixed["dra"]["objects"][1]["spec"]["spec"]["devices"] = nlohmann::json::parse(R"({"requests": [{"name": "x", "firstAvailable": [
      {"name": "nic", "deviceClassName": "dranet"}, {"name": "gpu", "deviceClassName": "gpu.nvidia.com"}]}]})");
  CHECK(run_error(mixed).find("request x selects NICs") != std::string::npos);
  // A claim for GPUs beside the NICs runs as before.
  doc["dra"]["objects"][1]["spec"]["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] = "gpu.nvidia.com";
  CHECK(run_error(doc).empty());
}
