// Node topology (sharing.md, "Node topology"): GPU link classes, distances, best GPU subsets,
// placement slowdowns, and the kubelet Topology Manager's admission policies.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include <gpusched/error.hpp>
#include <gpusched/node.hpp>
#include <gpusched/topology.hpp>
#include <gpusched/topology_manager.hpp>

using namespace gpusched;

namespace {

GpuSpec gpu(std::int16_t socket, std::int16_t pcie_switch = -1, std::int16_t nvlink_domain = -1) {
  GpuSpec g;
  g.socket = socket;
  g.pcie_switch = pcie_switch;
  g.nvlink_domain = nvlink_domain;
  return g;
}

/// DGX/HGX-like: 8 GPUs on one NVSwitch, 4 per socket, two GPUs per PCIe switch.
NodeSpec nvswitch8() {
  NodeSpec n;
  n.name = "hgx";
  n.sockets = 2;
  for (std::int16_t g = 0; g < 8; ++g) n.gpus.push_back(gpu(g < 4 ? 0 : 1, g / 2, 0));
  return n;
}

/// Two sockets, GPU0-1 behind one PCIe switch on socket 0, GPU2-3 behind one on socket 1, no NVLink.
NodeSpec pcie2x2() {
  NodeSpec n;
  n.name = "pcie";
  n.sockets = 2;
  n.gpus = {gpu(0, 0), gpu(0, 0), gpu(1, 1), gpu(1, 1)};
  return n;
}

/// One of each link class as seen from GPU0: GPU1 NVLink (and same switch), GPU2 same switch,
/// GPU3 same socket without a switch, GPU4 the other socket.
NodeSpec mixed() {
  NodeSpec n;
  n.name = "mixed";
  n.sockets = 2;
  n.gpus = {gpu(0, 0), gpu(0, 0), gpu(0, 0), gpu(0), gpu(1)};
  n.nvlinks = {NvLink{0, 1, 4}};
  return n;
}

/// 32 GPUs in 4 NVLink domains of 8, 2 domains per socket.
NodeSpec nvswitch32() {
  NodeSpec n;
  n.name = "big";
  n.sockets = 2;
  for (std::int16_t g = 0; g < 32; ++g) n.gpus.push_back(gpu(g < 16 ? 0 : 1, -1, static_cast<std::int16_t>(g / 8)));
  return n;
}

std::vector<int> v(std::initializer_list<int> x) { return x; }

}  // namespace

TEST_CASE("GPU link classes follow NVLink, PCIe switch, socket and inter-socket connections", "[core][topology]") {
  const Topology t(mixed());
  CHECK(t.gpu_count() == 5);
  CHECK(t.sockets() == 2);
  CHECK(t.link(0, 0) == GpuLink::kSelf);
  CHECK(t.link(0, 1) == GpuLink::kNvlink);
  CHECK(t.link(1, 0) == GpuLink::kNvlink);
  CHECK(t.link(0, 2) == GpuLink::kPcieSwitch);
  CHECK(t.link(0, 3) == GpuLink::kHostBridge);
  CHECK(t.link(2, 3) == GpuLink::kHostBridge);
  CHECK(t.link(0, 4) == GpuLink::kCrossSocket);
  CHECK(t.socket_of(3) == 0);
  CHECK(t.socket_of(4) == 1);
}

TEST_CASE("Link classes print as nvidia-smi topo abbreviations", "[core][topology]") {
  CHECK(to_string(GpuLink::kSelf) == "X");
  CHECK(to_string(GpuLink::kNvlink) == "NV");
  CHECK(to_string(GpuLink::kPcieSwitch) == "PIX");
  CHECK(to_string(GpuLink::kHostBridge) == "PHB");
  CHECK(to_string(GpuLink::kCrossSocket) == "SYS");
}

TEST_CASE("Distances order NVLink before PCIe switch before host bridge before cross-socket", "[core][topology]") {
  const Topology t(mixed());
  CHECK(t.distance(0, 0) == 0);
  CHECK(t.distance(0, 1) == Topology::kNvlinkWeight);
  CHECK(t.distance(0, 2) == 2 * Topology::kPcieHopWeight);
  CHECK(t.distance(0, 3) == 2 * (Topology::kPcieHopWeight + Topology::kHostBridgeWeight));
  CHECK(t.distance(0, 4) == 2 * (Topology::kPcieHopWeight + Topology::kHostBridgeWeight) + Topology::kInterSocketWeight);
  CHECK(t.distance(0, 1) < t.distance(0, 2));
  CHECK(t.distance(0, 2) < t.distance(0, 3));
  CHECK(t.distance(0, 3) < t.distance(0, 4));
  CHECK(t.distance(4, 0) == t.distance(0, 4));
  // GPU1 reaches GPU2 through GPU0's NVLink and the shared switch no faster than over the switch.
  CHECK(t.distance(1, 2) == 2 * Topology::kPcieHopWeight);
}

TEST_CASE("An NVSwitch node links every GPU pair by NVLink, across sockets too", "[core][topology]") {
  const Topology t(nvswitch8());
  for (int a = 0; a < 8; ++a) {
    for (int b = 0; b < 8; ++b) {
      INFO(a << "-" << b);
      CHECK(t.link(a, b) == (a == b ? GpuLink::kSelf : GpuLink::kNvlink));
      CHECK(t.distance(a, b) == (a == b ? 0 : 1));
    }
  }
}

TEST_CASE("best_subset picks the NVLinked pair over a pair behind one PCIe switch", "[core][topology]") {
  const Topology t(mixed());
  CHECK(t.best_subset(v({4, 3, 2, 1, 0}), 2) == v({0, 1}));
  CHECK(t.best_subset(v({4, 3, 2, 0}), 2) == v({0, 2}));  // no NVLink free: same switch
  CHECK(t.best_subset(v({4, 3, 2}), 2) == v({2, 3}));     // same socket beats cross-socket
}

TEST_CASE("best_subset keeps a 2-GPU task behind one PCIe switch when one is free", "[core][topology]") {
  const Topology t(pcie2x2());
  CHECK(t.best_subset(v({0, 2, 3}), 2) == v({2, 3}));
  CHECK(t.best_subset(v({0, 1, 2, 3}), 2) == v({0, 1}));  // tie: lexicographically smallest
  CHECK(t.best_subset(v({0, 2}), 2) == v({0, 2}));
}

TEST_CASE("best_subset returns nothing when fewer candidates than requested are free", "[core][topology]") {
  const Topology t(pcie2x2());
  CHECK(t.best_subset(v({0, 1}), 3).empty());
  CHECK(t.best_subset(v({1, 1, 1}), 2).empty());  // duplicates count once
  CHECK(t.best_subset(v({0, 1}), 0).empty());
  CHECK(t.best_subset(v({3}), 1) == v({3}));
}

TEST_CASE("best_subset on a node too large to enumerate still finds a whole NVLink domain", "[core][topology]") {
  const Topology t(nvswitch32());
  std::vector<int> all;
  for (int g = 0; g < 32; ++g) all.push_back(g);
  CHECK(t.best_subset(all, 8) == v({0, 1, 2, 3, 4, 5, 6, 7}));
  // Domain 2 (GPUs 16-23) is the only one fully free.
  std::vector<int> free;
  for (int g = 0; g < 32; ++g) {
    if (g % 8 != 0 || (g >= 16 && g < 24)) free.push_back(g);
  }
  CHECK(t.best_subset(free, 8) == v({16, 17, 18, 19, 20, 21, 22, 23}));
}

TEST_CASE("A 4-GPU task on an 8-GPU NVSwitch node runs at full speed", "[core][topology]") {
  const Topology t(nvswitch8());
  const TopologySlowdown f{1.3, 1.8};
  CHECK(t.slowdown(v({0, 1, 2, 3}), v({0}), f) == 1.0);
  CHECK(t.slowdown(v({0, 1, 4, 5}), v({0, 1}), f) == 1.0);  // across sockets, but NVLinked
  CHECK(t.slowdown(v({0, 1, 4, 5}), {}, f) == 1.0);
}

TEST_CASE("A 4-GPU task on a 2+2 PCIe two-socket node pays the cross-socket factor", "[core][topology]") {
  const Topology t(pcie2x2());
  const TopologySlowdown f{1.3, 1.8};
  CHECK(t.slowdown(v({0, 1, 2, 3}), v({0, 1}), f) == 1.8);
  CHECK(t.slowdown(v({0, 1, 2, 3}), {}, f) == 1.8);
}

TEST_CASE("A 2-GPU task on one PIX pair pays the PCIe factor", "[core][topology]") {
  const Topology t(pcie2x2());
  const TopologySlowdown f{1.3, 1.8};
  CHECK(t.slowdown(v({2, 3}), v({1}), f) == 1.3);
  CHECK(t.slowdown(v({0, 1}), {}, f) == 1.3);
}

TEST_CASE("CPUs on another socket than the task's GPUs pay the cross-socket factor", "[core][topology]") {
  const TopologySlowdown f{1.3, 1.8};
  const Topology pcie(pcie2x2());
  CHECK(pcie.slowdown(v({0}), v({0}), f) == 1.0);
  CHECK(pcie.slowdown(v({0}), v({1}), f) == 1.8);
  CHECK(pcie.slowdown(v({0, 1}), v({0, 1}), f) == 1.8);  // half the CPUs are remote
  const Topology hgx(nvswitch8());
  CHECK(hgx.slowdown(v({0, 1, 4, 5}), v({0}), f) == 1.8);  // GPUs 4, 5 feed from a remote socket
  CHECK(hgx.slowdown({}, v({1}), f) == 1.0);               // no GPUs: nothing to slow down
}

TEST_CASE("A NodeSpec with an NVLink to a missing GPU is rejected naming the node", "[core][topology]") {
  NodeSpec n = pcie2x2();
  n.nvlinks = {NvLink{1, 7, 1}};
  try {
    const Topology t(n);
    FAIL("accepted");
  } catch (const ScenarioError& e) {
    CHECK(e.id() == "gpusched.scenario_error.203");
    CHECK(e.where().field == "nodes/pcie/nvlinks/0");
  }
}

// ---------------------------------------------------------------- Topology Manager

namespace {
const std::vector<NumaResources> kTwoSockets{{32000, 256 * 1024, 4}, {32000, 256 * 1024, 4}};
}  // namespace

TEST_CASE("single-numa-node admits a request one socket can hold, on that socket", "[core][topology_manager]") {
  const std::vector<NumaResources> free{{8000, 64 * 1024, 1}, {32000, 256 * 1024, 4}};
  const NumaAdmit a = topology_admit(TopologyPolicy::kSingleNumaNode, free, {16000, 128 * 1024, 4});
  CHECK(a == NumaAdmit{true, 0b10, true});
}

TEST_CASE("single-numa-node rejects a request needing more GPUs than one socket has free", "[core][topology_manager]") {
  const NumaAdmit a = topology_admit(TopologyPolicy::kSingleNumaNode, kTwoSockets, {8000, 1024, 6});
  CHECK_FALSE(a.admit);
  CHECK_FALSE(a.preferred);
  // restricted admits: two sockets are the fewest that could ever hold 6 GPUs, so the GPU hint
  // {0,1} is preferred; ANDed with the preferred CPU/memory hint {0} it gives {0}, still preferred
  // (kubelet merges masks this way too).
  CHECK(topology_admit(TopologyPolicy::kRestricted, kTwoSockets, {8000, 1024, 6}) == NumaAdmit{true, 0b01, true});
  CHECK(topology_admit(TopologyPolicy::kRestricted, kTwoSockets, {0, 0, 6}) == NumaAdmit{true, 0b11, true});
}

TEST_CASE("single-numa-node rejects a request needing more CPUs than one socket has free", "[core][topology_manager]") {
  CHECK_FALSE(topology_admit(TopologyPolicy::kSingleNumaNode, kTwoSockets, {48000, 1024, 1}).admit);
  CHECK(topology_admit(TopologyPolicy::kSingleNumaNode, kTwoSockets, {32000, 1024, 1}) == NumaAdmit{true, 0b01, true});
}

TEST_CASE("single-numa-node rejects CPUs free on one socket and GPUs free on the other", "[core][topology_manager]") {
  const std::vector<NumaResources> free{{16000, 64 * 1024, 0}, {1000, 64 * 1024, 4}};
  CHECK_FALSE(topology_admit(TopologyPolicy::kSingleNumaNode, free, {8000, 1024, 2}).admit);
  CHECK_FALSE(topology_admit(TopologyPolicy::kRestricted, free, {8000, 1024, 2}).admit);
  // best-effort admits with the narrowest non-preferred merge: CPUs and memory on socket 0.
  CHECK(topology_admit(TopologyPolicy::kBestEffort, free, {8000, 1024, 2}) == NumaAdmit{true, 0b01, false});
}

TEST_CASE("restricted rejects a fragmented fit that best-effort admits", "[core][topology_manager]") {
  // Each socket has 4 GPUs but only 3 free: 4 GPUs fit only across both sockets, although one
  // socket could hold them when empty, so the hint is not preferred.
  const std::vector<NumaResources> free{{32000, 1024, 3}, {32000, 1024, 3}};
  const std::vector<NumaResources> capacity{{32000, 1024, 4}, {32000, 1024, 4}};
  const NumaResources request{4000, 512, 4};
  CHECK(topology_admit(TopologyPolicy::kBestEffort, free, request, capacity) == NumaAdmit{true, 0b01, false});
  CHECK(topology_admit(TopologyPolicy::kRestricted, free, request, capacity) == NumaAdmit{false, 0b01, false});
  // Without capacities, free is taken as capacity: two sockets are the least that can hold it.
  CHECK(topology_admit(TopologyPolicy::kRestricted, free, request) == NumaAdmit{true, 0b01, true});
}

TEST_CASE("none admits everything, even a request no socket can hold", "[core][topology_manager]") {
  CHECK(topology_admit(TopologyPolicy::kNone, kTwoSockets, {1'000'000, 1024, 64}) == NumaAdmit{true, 0b11, true});
  CHECK_FALSE(topology_admit(TopologyPolicy::kBestEffort, kTwoSockets, {1'000'000, 1024, 64}).preferred);
  CHECK(topology_admit(TopologyPolicy::kBestEffort, kTwoSockets, {1'000'000, 1024, 64}).admit);
}

TEST_CASE("A request with nothing NUMA-bound is admitted by every policy", "[core][topology_manager]") {
  for (auto p : {TopologyPolicy::kNone, TopologyPolicy::kBestEffort, TopologyPolicy::kRestricted,
                 TopologyPolicy::kSingleNumaNode}) {
    INFO(to_string(p));
    CHECK(topology_admit(p, kTwoSockets, {}) == NumaAdmit{true, 0b11, true});
  }
}

TEST_CASE("Ties between single sockets go to the lowest socket", "[core][topology_manager]") {
  CHECK(topology_admit(TopologyPolicy::kBestEffort, kTwoSockets, {1000, 1024, 1}) == NumaAdmit{true, 0b01, true});
}

TEST_CASE("Topology Manager policies parse from kubelet's names and unknown names are rejected",
          "[core][topology_manager]") {
  for (auto p : {TopologyPolicy::kNone, TopologyPolicy::kBestEffort, TopologyPolicy::kRestricted,
                 TopologyPolicy::kSingleNumaNode}) {
    CHECK(parse_topology_policy(to_string(p)) == p);
  }
  CHECK(parse_topology_policy("single-numa-node") == TopologyPolicy::kSingleNumaNode);
  try {
    (void)parse_topology_policy("single_numa_node", {"scenario.json", 0, "/cluster/topology_policy"});
    FAIL("accepted");
  } catch (const ScenarioError& e) {
    CHECK(e.id() == "gpusched.scenario_error.203");
    CHECK(e.where().field == "/cluster/topology_policy");
    CHECK(std::string(e.what()).find("best-effort") != std::string::npos);
  }
}

TEST_CASE("The Topology Manager refuses more NUMA nodes than kubelet supports", "[core][topology_manager]") {
  const std::vector<NumaResources> nine(9, NumaResources{1000, 1024, 1});
  CHECK_THROWS_AS(topology_admit(TopologyPolicy::kRestricted, nine, {1000, 0, 0}), ScenarioError);
  CHECK(topology_admit(TopologyPolicy::kNone, nine, {1000, 0, 0}).admit);
  CHECK_THROWS_AS(topology_admit(TopologyPolicy::kRestricted, {}, {1000, 0, 0}), ScenarioError);
}
