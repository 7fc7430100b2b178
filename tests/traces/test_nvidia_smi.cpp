// Node discovery from saved nvidia-smi output (`nvidia-smi -q -x` and `nvidia-smi topo -m`).
// The samples in tests/data/nvidia-smi were written by hand from the documented formats: no GPU
// machine was available to capture real output (see the README.md there).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gpusched/error.hpp>
#include <gpusched/gpu_catalog.hpp>
#include <gpusched/topology.hpp>
#include <gpusched/traces/nvidia_smi.hpp>

using namespace gpusched;
using namespace gpusched::traces;

namespace {

const GpuCatalog& catalog() {
  static const GpuCatalog c = GpuCatalog::builtin();
  return c;
}

std::filesystem::path sample(const std::string& name) {
  return std::filesystem::path(GPUSCHED_SOURCE_DIR) / "tests" / "data" / "nvidia-smi" / name;
}

std::string slurp(const std::string& name) {
  std::ifstream in(sample(name), std::ios::binary);
  REQUIRE(in);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

NodeSpec load(const std::string& stem, NodeSpecDefaults d = {}) {
  if (d.name.empty()) d.name = stem;
  return node_from_nvidia_smi_files(sample(stem + "-query.xml"), sample(stem + "-topo.txt"), catalog(), d);
}

/// Replaces the first occurrence of `from` (which must occur) by `to`.
std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

/// Runs `f`, which must throw TraceError with `id`, and returns the error.
template <class F>
TraceError trace_error(F&& f, const std::string& id) {
  try {
    f();
  } catch (const TraceError& e) {
    CHECK(e.id() == id);
    return e;
  }
  FAIL("no TraceError " << id);
  throw;
}

std::size_t line_of(const std::string& text, const std::string& needle) {
  const auto at = text.find(needle);
  REQUIRE(at != std::string::npos);
  return 1 + static_cast<std::size_t>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
}

}  // namespace

TEST_CASE("The DGX H100 sample becomes 8 NVSwitch-linked H100s on two NUMA nodes", "[traces][nvidia_smi]") {
  const NodeSpec n = load("dgx-h100", {.name = "dgx-01", .memory_mib = 2048 * 1024});
  CHECK(n.name == "dgx-01");
  REQUIRE(n.gpus.size() == 8);
  CHECK(n.sockets == 2);
  CHECK(n.cpu_milli == 224'000);  // 0-55,112-167 and 56-111,168-223
  CHECK(n.memory_mib == 2048 * 1024);
  CHECK(n.numa == std::vector<NumaSpec>{{112'000, 1024 * 1024}, {112'000, 1024 * 1024}});
  const GpuModelId h100 = *catalog().find("H100-80GB");
  for (std::size_t g = 0; g < 8; ++g) {
    INFO("GPU" << g);
    CHECK(n.gpus[g].model == h100);
    CHECK(n.gpus[g].socket == (g < 4 ? 0 : 1));
    CHECK(n.gpus[g].nvlink_domain == 0);
    CHECK(n.gpus[g].pcie_switch == -1);
    CHECK(n.gpus[g].partition == GpuPartition::kWhole);
  }
  CHECK(n.gpus[0].bus_id == "00000000:18:00.0");
  CHECK(n.gpus[7].bus_id == "00000000:DB:00.0");
  REQUIRE(n.nvlinks.size() == 28);
  CHECK(n.nvlinks.front() == NvLink{0, 1, 18});
  CHECK(n.nvlinks.back() == NvLink{6, 7, 18});
  CHECK(n.labels.at("nvidia.com/gpu.product") == "NVIDIA-H100-80GB-HBM3");
  CHECK(n.labels.at("nvidia.com/gpu.count") == "8");
  CHECK(n.labels.at("nvidia.com/gpu.memory") == "81559");
}

TEST_CASE("The PCIe sample becomes two PIX pairs on two sockets with no NVLink", "[traces][nvidia_smi]") {
  const NodeSpec n = load("pcie-a100x4", {.name = "pcie", .memory_mib = 512 * 1024});
  REQUIRE(n.gpus.size() == 4);
  CHECK(n.sockets == 2);
  CHECK(n.cpu_milli == 64'000);
  CHECK(n.numa == std::vector<NumaSpec>{{32'000, 256 * 1024}, {32'000, 256 * 1024}});
  const GpuModelId a100 = *catalog().find("A100-80GB");
  const std::int16_t socket[] = {0, 0, 1, 1}, pcie[] = {0, 0, 1, 1};
  for (std::size_t g = 0; g < 4; ++g) {
    INFO("GPU" << g);
    CHECK(n.gpus[g].model == a100);
    CHECK(n.gpus[g].socket == socket[g]);
    CHECK(n.gpus[g].pcie_switch == pcie[g]);
    CHECK(n.gpus[g].nvlink_domain == -1);
  }
  CHECK(n.nvlinks.empty());
  CHECK(n.gpus[2].bus_id == "00000000:B1:00.0");
}

TEST_CASE("NIC rows and columns are ignored and an N/A NUMA affinity means socket 0", "[traces][nvidia_smi]") {
  const NodeSpec n = load("small-a30x2-nic", {.name = "small", .memory_mib = 128 * 1024});
  REQUIRE(n.gpus.size() == 2);
  CHECK(n.sockets == 1);
  CHECK(n.cpu_milli == 32'000);
  CHECK(n.gpus[0].socket == 0);
  CHECK(n.gpus[1].socket == 0);
  CHECK(n.gpus[0].pcie_switch == -1);  // NODE: same socket, different host bridges
  CHECK(n.nvlinks.empty());
  CHECK(n.gpus[0].model == *catalog().find("A30"));
}

TEST_CASE("MIG mode enabled in the XML marks that GPU as MIG-partitioned", "[traces][nvidia_smi]") {
  const NodeSpec n = load("small-a30x2-nic");
  CHECK(n.gpus[0].partition == GpuPartition::kWhole);
  CHECK(n.gpus[1].partition == GpuPartition::kMig);
  CHECK(n.gpus[1].mig.empty());
}

TEST_CASE("Discovered nodes give the link classes nvidia-smi reported", "[traces][nvidia_smi]") {
  const Topology dgx(load("dgx-h100"));
  CHECK(dgx.link(0, 7) == GpuLink::kNvlink);
  CHECK(dgx.socket_of(5) == 1);
  const Topology pcie(load("pcie-a100x4"));
  CHECK(pcie.link(0, 1) == GpuLink::kPcieSwitch);
  CHECK(pcie.link(2, 3) == GpuLink::kPcieSwitch);
  CHECK(pcie.link(1, 2) == GpuLink::kCrossSocket);
  const Topology small(load("small-a30x2-nic"));
  CHECK(small.link(0, 1) == GpuLink::kHostBridge);
}

TEST_CASE("The topo parser keeps GPU columns and reads the affinity columns", "[traces][nvidia_smi]") {
  const NvidiaSmiTopo t = parse_nvidia_smi_topo(slurp("dgx-h100-topo.txt"), "topo.txt");
  REQUIRE(t.matrix.size() == 8);
  CHECK(t.matrix[0][0].link == NvidiaSmiLink::kSelf);
  CHECK(t.matrix[2][5] == NvidiaSmiTopoEntry{NvidiaSmiLink::kNvlink, 18});
  CHECK(t.cpu_affinity[6] == "56-111,168-223");
  CHECK(t.numa_affinity == std::vector<int>{0, 0, 0, 0, 1, 1, 1, 1});
  CHECK(t.header_line == 1);
}

TEST_CASE("A NUMA id in the XML places GPUs when the matrix has no NUMA affinity", "[traces][nvidia_smi]") {
  std::string xml = slurp("small-a30x2-nic-query.xml");
  xml = replaced(xml, "<minor_number>1</minor_number>", "<minor_number>1</minor_number><numa_id>1</numa_id>");
  const NodeSpec n = node_from_nvidia_smi(xml, slurp("small-a30x2-nic-topo.txt"), catalog(), "q.xml", "t.txt",
                                          {.name = "n", .cpu_milli = 16'000, .memory_mib = 1024});
  CHECK(n.sockets == 2);
  CHECK(n.gpus[0].socket == 0);
  CHECK(n.gpus[1].socket == 1);
  CHECK(n.cpu_milli == 16'000);  // given, not counted
  CHECK(n.numa == std::vector<NumaSpec>{{8'000, 512}, {8'000, 512}});
}

TEST_CASE("An unknown GPU product is an error naming the file and the product", "[traces][nvidia_smi]") {
  std::string xml = replaced(slurp("pcie-a100x4-query.xml"), "NVIDIA A100 80GB PCIe", "NVIDIA Quantum Q9000");
  const auto e = trace_error([&] {
    (void)node_from_nvidia_smi(xml, slurp("pcie-a100x4-topo.txt"), catalog(), "query.xml", "topo.txt", {.name = "n"});
  }, "gpusched.trace_error.105");
  CHECK(e.where().file == "query.xml");
  CHECK(e.where().line == static_cast<std::int64_t>(line_of(xml, "<gpu id=")));
  CHECK(e.where().field == "nvidia_smi_log/gpu[0]/product_name");
  CHECK(std::string(e.what()).find("\"NVIDIA Quantum Q9000\"") != std::string::npos);
  CHECK(std::string(e.what()).find("query.xml:") != std::string::npos);
}

TEST_CASE("Malformed XML is an error naming the file and line", "[traces][nvidia_smi]") {
  const std::string xml = replaced(slurp("dgx-h100-query.xml"), "</pci_bus>", "</pci_bux>");
  const auto e = trace_error([&] { (void)parse_nvidia_smi_query(xml, "dgx.xml"); }, "gpusched.trace_error.102");
  CHECK(e.where().file == "dgx.xml");
  CHECK(e.where().line == static_cast<std::int64_t>(line_of(xml, "</pci_bux>")));
  CHECK(std::string(e.what()).find("not well-formed XML") != std::string::npos);
}

TEST_CASE("XML that is not nvidia-smi's or lacks a required element is rejected naming the element",
          "[traces][nvidia_smi]") {
  auto e = trace_error([] { (void)parse_nvidia_smi_query("<log><gpu/></log>", "x.xml"); }, "gpusched.trace_error.103");
  CHECK(e.where().field == "nvidia_smi_log");
  const std::string xml = slurp("small-a30x2-nic-query.xml");
  e = trace_error([&] { (void)parse_nvidia_smi_query(replaced(xml, "<total>24576 MiB</total>", ""), "x.xml"); },
                  "gpusched.trace_error.103");
  CHECK(e.where().field == "nvidia_smi_log/gpu[0]/fb_memory_usage/total");
  e = trace_error([&] { (void)parse_nvidia_smi_query(replaced(xml, "<total>24576 MiB</total>", "<total>24 GB</total>"), "x.xml"); },
                  "gpusched.trace_error.102");
  CHECK(e.where().line == static_cast<std::int64_t>(line_of(xml, "<total>24576 MiB</total>")));
  e = trace_error([&] { (void)parse_nvidia_smi_query(replaced(xml, "<current_mig>Enabled", "<current_mig>Maybe"), "x.xml"); },
                  "gpusched.trace_error.102");
  CHECK(e.where().field == "nvidia_smi_log/gpu[1]/mig_mode/current_mig");
  e = trace_error([&] { (void)parse_nvidia_smi_query(replaced(xml, "<attached_gpus>2", "<attached_gpus>3"), "x.xml"); },
                  "gpusched.trace_error.102");
  CHECK(e.where().field == "nvidia_smi_log/attached_gpus");
}

TEST_CASE("A malformed matrix cell is an error naming the file, line and column", "[traces][nvidia_smi]") {
  const std::string topo = slurp("pcie-a100x4-topo.txt");
  const std::string bad = replaced(topo, "GPU2\tSYS\tSYS", "GPU2\tSYS\tQPI");
  const auto e = trace_error([&] { (void)parse_nvidia_smi_topo(bad, "topo.txt"); }, "gpusched.trace_error.102");
  CHECK(e.where().file == "topo.txt");
  CHECK(e.where().line == 4);
  CHECK(e.where().field == "GPU1");
  CHECK(std::string(e.what()).find("topo.txt:4: field 'GPU1': \"QPI\"") != std::string::npos);
}

TEST_CASE("A short matrix row is an error naming the first missing column", "[traces][nvidia_smi]") {
  const std::string bad = replaced(slurp("pcie-a100x4-topo.txt"), "GPU3\tSYS\tSYS\tPIX\t X \t32-63\t1", "GPU3\tSYS\tSYS");
  const auto e = trace_error([&] { (void)parse_nvidia_smi_topo(bad, "topo.txt"); }, "gpusched.trace_error.102");
  CHECK(e.where().line == 5);
  CHECK(e.where().field == "GPU2");
}

TEST_CASE("A matrix that is not symmetric or misses a GPU row is rejected", "[traces][nvidia_smi]") {
  const std::string topo = slurp("pcie-a100x4-topo.txt");
  auto e = trace_error([&] { (void)parse_nvidia_smi_topo(replaced(topo, "GPU3\tSYS\tSYS\tPIX", "GPU3\tSYS\tPHB\tPIX"), "t"); },
                       "gpusched.trace_error.102");
  CHECK(e.where().line == 5);
  CHECK(std::string(e.what()).find("not symmetric") != std::string::npos);
  e = trace_error([&] { (void)parse_nvidia_smi_topo(replaced(topo, "GPU3\tSYS\tSYS\tPIX\t X \t32-63\t1\n", ""), "t"); },
                  "gpusched.trace_error.102");
  CHECK(e.where().field == "GPU3");
}

TEST_CASE("Text that is not a topo matrix, or has an unknown column, is rejected", "[traces][nvidia_smi]") {
  auto e = trace_error([] { (void)parse_nvidia_smi_topo("\n\nNo devices were found\n", "t"); }, "gpusched.trace_error.103");
  CHECK(e.where().line == 3);
  CHECK(e.where().field == "GPU0");
  e = trace_error([] { (void)parse_nvidia_smi_topo("GPU0\tCPU Affinity\tPower\nGPU0\t X \t0-7\t1\n", "t"); },
                  "gpusched.trace_error.109");
  CHECK(e.where().field == "Power");
  e = trace_error([] { (void)parse_nvidia_smi_topo("\tGPU0\tCPU Affinity\nGPU0\t X \t0-7x\n", "t"); },
                  "gpusched.trace_error.102");
  CHECK(e.where().field == "CPU Affinity");
}

TEST_CASE("GPU counts that differ between the two files are rejected naming both", "[traces][nvidia_smi]") {
  const auto e = trace_error([] {
    (void)node_from_nvidia_smi(slurp("small-a30x2-nic-query.xml"), slurp("pcie-a100x4-topo.txt"), catalog(), "q.xml",
                               "t.txt", {.name = "n"});
  }, "gpusched.trace_error.102");
  CHECK(e.where().file == "t.txt");
  CHECK(std::string(e.what()).find("q.xml has 2") != std::string::npos);
}

TEST_CASE("A file that cannot be read is an error naming it", "[traces][nvidia_smi]") {
  const auto e = trace_error([] {
    (void)node_from_nvidia_smi_files(sample("missing-query.xml"), sample("dgx-h100-topo.txt"), catalog(), {});
  }, "gpusched.trace_error.101");
  CHECK(e.where().file == sample("missing-query.xml").string());
}
