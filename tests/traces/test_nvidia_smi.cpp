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
#include <vector>

#include <nlohmann/json.hpp>

#include <gpusched/error.hpp>
#include <gpusched/gpu_catalog.hpp>
#include <gpusched/mig.hpp>
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
    // GPU pairs show NV18 to each other, but both reach one NIC by PIX (NIC0 for GPU0-1, ...):
    // they share its PCIe switch.
    CHECK(n.gpus[g].pcie_switch == static_cast<std::int16_t>(g / 2));
    CHECK(n.gpus[g].partition == GpuPartition::kWhole);
  }
  // The four NICs (mlx5_0..3 in the NIC Legend), each behind the switch of its GPU pair.
  REQUIRE(n.nics.size() == 4);
  for (std::size_t k = 0; k < 4; ++k) {
    INFO("NIC" << k);
    CHECK(n.nics[k].root_gpu == static_cast<std::int16_t>(2 * k));
    CHECK(n.nics[k].socket == (k < 2 ? 0 : 1));
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

TEST_CASE("NIC rows give the NICs and where they sit; an N/A NUMA affinity means socket 0", "[traces][nvidia_smi]") {
  const NodeSpec n = load("small-a30x2-nic", {.name = "small", .memory_mib = 128 * 1024});
  REQUIRE(n.gpus.size() == 2);
  CHECK(n.sockets == 1);
  CHECK(n.cpu_milli == 32'000);
  CHECK(n.gpus[0].socket == 0);
  CHECK(n.gpus[1].socket == 0);
  CHECK(n.gpus[0].pcie_switch == -1);  // NODE: same socket, different host bridges
  CHECK(n.nvlinks.empty());
  CHECK(n.gpus[0].model == *catalog().find("A30"));
  // Columns named mlx5_0 and mlx5_1 (no NIC Legend): each on its GPU's root (PIX).
  REQUIRE(n.nics.size() == 2);
  CHECK(n.nics[0].root_gpu == 0);
  CHECK(n.nics[1].root_gpu == 1);
  const auto t = parse_nvidia_smi_topo(slurp("small-a30x2-nic-topo.txt"), "topo.txt");
  REQUIRE(t.nics.size() == 2);
  CHECK(t.nics[1].name == "mlx5_1");
  CHECK(t.nics[1].to_gpu[0].link == NvidiaSmiLink::kNode);
  CHECK(parse_nvidia_smi_topo(slurp("dgx-h100-topo.txt"), "topo.txt").nics[3].name == "mlx5_3");   // from the NIC Legend
  const auto topo_error = [](const std::string& text) {
    try {
      (void)parse_nvidia_smi_topo(text, "topo.txt");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  const std::string base = slurp("small-a30x2-nic-topo.txt");
  const auto edited = [&](const std::string& from, const std::string& to) {
    std::string t = base;
    const auto at = t.find(from);
    REQUIRE(at != std::string::npos);
    return t.replace(at, from.size(), to);
  };
  // Review (a helper's repros): a NIC row twice, and a NIC row the GPU rows contradict.
  CHECK(topo_error(edited("mlx5_1\tNODE\tPIX\tNODE\t X \t\t\n", "mlx5_1\tNODE\tPIX\tNODE\t X \t\t\nmlx5_1\tNODE\tPIX\tNODE\t X \t\t\n"))
            .find("second row for this NIC") != std::string::npos);
  CHECK(topo_error(edited("GPU0\t X \tNODE\tPIX", "GPU0\t X \tNODE\tSYS"))
            .find("the matrix is not symmetric: GPU0-mlx5_0 is \"SYS\" in GPU0's row but differs in mlx5_0's row") != std::string::npos);
  // A NIC PIX to both GPUs whose own cell says NODE does not put them behind one switch: the
  // GPUs' cell wins where it is a PCIe link (only NV# hides the switch).
  const std::string both = edited("GPU1\tNODE\t X \tNODE", "GPU1\tNODE\t X \tPIX");
  const std::string shared = both.substr(0, both.find("mlx5_0\tPIX\tNODE")) + "mlx5_0\tPIX\tPIX" +
                             both.substr(both.find("mlx5_0\tPIX\tNODE") + std::string("mlx5_0\tPIX\tNODE").size());
  REQUIRE(topo_error(shared).empty());
  const NodeSpec joined = node_from_nvidia_smi(slurp("small-a30x2-nic-query.xml"), shared, catalog(), "q.xml", "t.txt", {.name = "j", .memory_mib = 1024});
  CHECK(joined.gpus[0].pcie_switch == -1);
  CHECK(joined.gpus[1].pcie_switch == -1);
  CHECK(joined.nics[0].root_gpu == 0);
  // A NIC cell that is no PCIe link is an error naming the line and column.
  std::string bad = slurp("small-a30x2-nic-topo.txt");
  bad.replace(bad.find("mlx5_0\tPIX"), 10, "mlx5_0\tNV4");
  try {
    (void)parse_nvidia_smi_topo(bad, "topo.txt");
    FAIL("an NVLink from a NIC was accepted");
  } catch (const Error& e) {
    CHECK_THAT(e.what(), Catch::Contains("topo.txt:4") && Catch::Contains("\"NV4\" is not a PCIe link between a NIC and a GPU"));
  }
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

// ---------------------------------------------------------------- product names, MIG layouts, lgip, JSON

namespace {

/// The GPU instances of one GPU as "profile@start", in start order.
std::vector<std::string> layout_of(const NodeSpec& n, std::size_t g) {
  const auto& geo = *catalog()[n.gpus[g].model].mig;
  std::vector<std::string> out;
  for (const auto& gi : n.gpus[g].mig) out.push_back(geo.profiles[static_cast<std::size_t>(gi.profile)].name + "@" + std::to_string(gi.start));
  return out;
}

using Layout = std::vector<std::string>;

}  // namespace

TEST_CASE("Product names as nvidia-smi prints them resolve to the catalog model", "[traces][nvidia_smi]") {
  // {printed name, FB memory MiB, a catalog spelling of the expected model}
  struct Case { const char* printed; std::int64_t mib; const char* expect; };
  const Case cases[] = {
      {"NVIDIA A100-SXM4-80GB", 81920, "A100-80GB"},      {"A100-SXM4-80GB", 81920, "A100-80GB"},
      {"NVIDIA A100-SXM4-40GB", 40960, "A100-40GB"},      {"NVIDIA A100-PCIE-40GB", 40960, "A100-40GB"},
      {"NVIDIA A100 80GB PCIe", 81920, "A100-80GB"},      {"NVIDIA A800-SXM4-80GB", 81920, "A800-SXM4-80GB"},
      {"NVIDIA H100 80GB HBM3", 81559, "H100-80GB"},      {"H100-SXM5-80GB", 81559, "H100-80GB"},
      {"NVIDIA H800 80GB HBM3", 81559, "H800"},           {"NVIDIA H100 NVL", 95830, "H100-NVL"},
      {"NVIDIA H200", 143771, "H200"},                    {"Tesla T4", 15360, "T4"},
      {"NVIDIA Tesla T4", 15360, "T4"},                   {"Tesla V100-SXM2-16GB", 16160, "V100-16GB"},
      {"Tesla V100-SXM2-32GB", 32510, "V100-32GB"},       {"NVIDIA A10", 23028, "A10"},
      {"NVIDIA A30", 24576, "A30"},                       {"NVIDIA L4", 23034, "L4"},
      {"NVIDIA L40S", 46068, "L40S"},
      // The PCIe V100s: the catalog spells them as aliases of the same models (same memory and SMs).
      {"Tesla V100-PCIE-16GB", 16160, "V100-16GB"},       {"Tesla V100-PCIE-32GB", 32510, "V100-32GB"},
  };
  for (const auto& c : cases) {
    INFO(c.printed);
    const auto want = catalog().find(c.expect);
    REQUIRE(want);
    const auto got = resolve_nvidia_smi_product(c.printed, c.mib, catalog());
    REQUIRE(got);
    CHECK(catalog()[*got].name == catalog()[*want].name);
  }
}

TEST_CASE("Every catalog spelling with the NVIDIA prefix resolves to its model or an identical one", "[traces][nvidia_smi]") {
  for (const auto& m : catalog().models()) {
    std::vector<std::string> spellings{m.name};
    spellings.insert(spellings.end(), m.aliases.begin(), m.aliases.end());
    for (const auto& sp : spellings) {
      for (const std::string& printed : {"NVIDIA " + sp, sp}) {
        INFO(printed);
        const auto got = resolve_nvidia_smi_product(printed, m.memory_mib, catalog());
        REQUIRE(got);
        const auto& r = catalog()[*got];
        CHECK((r.name == m.name || (r.memory_mib == m.memory_mib && r.sms == m.sms)));
      }
    }
  }
}

TEST_CASE("Form factor and memory pick the model within a family", "[traces][nvidia_smi]") {
  GpuCatalog cat;
  cat.add_json(nlohmann::json::parse(R"([
    {"name": "X100-40GB", "aliases": ["X100-SXM4-40GB", "X100-PCIE-40GB"], "memory_mib": 40960, "sms": 100},
    {"name": "X100-80GB", "aliases": ["X100-SXM4-80GB"], "memory_mib": 81920, "sms": 100},
    {"name": "X100-NVL", "memory_mib": 96000, "sms": 100},
    {"name": "X10", "memory_mib": 24576, "sms": 70},
    {"name": "RTX 9000 Ada", "memory_mib": 49152, "sms": 140}
  ])"), "test");
  const auto name = [&](std::string_view printed, std::int64_t mib) -> std::string {
    const auto id = resolve_nvidia_smi_product(printed, mib, cat);
    return id ? cat[*id].name : std::string("-");
  };
  CHECK(name("NVIDIA X100-SXM4-80GB", 81000) == "X100-80GB");
  CHECK(name("NVIDIA X100 80GB HBM3", 81000) == "X100-80GB");      // no form factor: SXM or unmarked models
  CHECK(name("NVIDIA X100 40GB PCIe", 40000) == "X100-40GB");
  CHECK(name("NVIDIA X100 80GB PCIe", 81000) == "-");              // no PCIe model of 80 GB
  CHECK(name("NVIDIA X100 NVL", 95000) == "X100-NVL");
  CHECK(name("NVIDIA X100 NVL", 81000) == "-");                    // more than 10% apart
  CHECK(name("NVIDIA X100", 41000) == "X100-40GB");                // memory decides
  CHECK(name("NVIDIA X10", 23028) == "X10");                       // not the X100 family
  CHECK(name("NVIDIA X10G", 23028) == "-");
  CHECK(name("NVIDIA RTX 9000 Ada Generation", 49140) == "RTX 9000 Ada");
  CHECK(name("Tesla X10", 24000) == "X10");
}

TEST_CASE("An HGX A100 with MIG on every GPU keeps its GPU instances", "[traces][nvidia_smi]") {
  const NodeSpec n = load("hgx-a100-mig", {.name = "hgx", .memory_mib = 1024 * 1024});
  REQUIRE(n.gpus.size() == 4);
  for (const auto& g : n.gpus) {
    CHECK(catalog()[g.model].name == "A100-80GB");
    CHECK(g.partition == GpuPartition::kMig);
    CHECK(g.nvlink_domain == 0);
  }
  CHECK_FALSE(n.mig_dynamic);
  // 3g+2g+1g+1g: the 3g must sit at 4 for both 1g to fit (no 1g starts at slice 7).
  CHECK(layout_of(n, 0) == Layout{"2g.20gb@0", "1g.10gb@2", "1g.10gb@3", "3g.40gb@4"});
  CHECK(layout_of(n, 1) == Layout{"7g.80gb@0"});
  CHECK(layout_of(n, 2) == Layout{"4g.40gb@0", "3g.40gb@4"});   // same memory, told apart by SMs
  // A 2g GI with two CIs (SMs added up); the +me twin told apart by its OFA.
  CHECK(layout_of(n, 3) == Layout{"2g.20gb@0", "1g.20gb@2", "1g.10gb+me@4", "1g.10gb@5"});
  const auto& geo = *catalog()[n.gpus[0].model].mig;
  for (std::size_t g = 0; g < 4; ++g) {
    MigLayout l;
    for (const auto& gi : n.gpus[g].mig) {
      REQUIRE(l.can_place(geo, gi.profile, gi.start));
      l.place(geo, gi.profile, gi.start);
    }
  }
}

TEST_CASE("An HGX H200 with and without MIG, with lgip figures or the catalog's", "[traces][nvidia_smi]") {
  const NodeSpec plain = load("hgx-h200");
  REQUIRE(plain.gpus.size() == 8);
  for (const auto& g : plain.gpus) {
    CHECK(catalog()[g.model].name == "H200");
    CHECK(g.partition == GpuPartition::kWhole);
  }
  CHECK(plain.sockets == 2);
  CHECK(plain.cpu_milli == 192'000);
  CHECK(plain.labels.at("nvidia.com/gpu.memory") == "143771");

  const NodeSpecDefaults d{.name = "h200"};
  const NodeSpec with_lgip = node_from_nvidia_smi_files(sample("hgx-h200-mig-query.xml"), sample("hgx-h200-topo.txt"), catalog(), d,
                                                        sample("hgx-h200-mig-lgip.txt"));
  const NodeSpec without = node_from_nvidia_smi_files(sample("hgx-h200-mig-query.xml"), sample("hgx-h200-topo.txt"), catalog(), d);
  // Without lgip, 3g and 4g of equal memory are told apart by the catalog's SM counts; where the
  // catalog has none (estimated from compute slices), GPU6's 4g.71gb is not recognised.
  const auto& h200 = catalog()[*catalog().find("H200")];
  const bool sms_known = std::all_of(h200.mig->profiles.begin(), h200.mig->profiles.end(), [](const MigProfile& p) { return p.sms > 0; });
  for (std::size_t g = 0; g < 8; ++g) {
    INFO("GPU" << g);
    CHECK(with_lgip.gpus[g].partition == GpuPartition::kMig);
    if (g != 6 || sms_known) CHECK(layout_of(with_lgip, g) == layout_of(without, g));
    if (g < 6) CHECK(layout_of(with_lgip, g) == Layout{"2g.35gb@0", "1g.18gb@2", "1g.18gb@3", "3g.71gb@4"});
  }
  CHECK(layout_of(with_lgip, 6) == Layout{"4g.71gb@0", "3g.71gb@4"});
  CHECK(layout_of(with_lgip, 7) == Layout{"3g.71gb@0", "1g.35gb@4", "1g.18gb+me@6"});   // largest first, lowest starts
}

TEST_CASE("A DGX H100 with MIG and a PCIe H100 NVL pair with MIG", "[traces][nvidia_smi]") {
  const NodeSpec dgx = node_from_nvidia_smi_files(sample("dgx-h100-mig-query.xml"), sample("dgx-h100-topo.txt"), catalog(),
                                                  {.name = "dgx"});
  REQUIRE(dgx.gpus.size() == 8);
  CHECK(layout_of(dgx, 0) == Layout{"7g.80gb@0"});
  CHECK(layout_of(dgx, 3) == Layout{"2g.20gb@0", "1g.10gb@2", "1g.10gb@3", "3g.40gb@4"});
  CHECK(layout_of(dgx, 6) == Layout{"4g.40gb@0", "3g.40gb@4"});
  CHECK(layout_of(dgx, 7) == Layout{"1g.20gb@0", "1g.20gb@2", "1g.20gb@4", "1g.20gb@6"});

  const NodeSpec nvl = load("pcie-h100nvl-mig");
  REQUIRE(nvl.gpus.size() == 2);
  CHECK(catalog()[nvl.gpus[0].model].name == "H100-NVL");
  CHECK(nvl.nvlinks == std::vector<NvLink>{{0, 1, 12}});
  CHECK(nvl.gpus[0].socket == 0);
  CHECK(nvl.gpus[1].socket == 1);
  CHECK(layout_of(nvl, 0) == Layout{"2g.24gb@0", "1g.12gb@2", "1g.12gb@3", "3g.47gb@4"});
  CHECK(layout_of(nvl, 1) == Layout{"3g.47gb@0", "3g.47gb@4"});
}

TEST_CASE("MIG GPUs without instances make the node dynamic; mig_dynamic asks for it", "[traces][nvidia_smi]") {
  CHECK(load("small-a30x2-nic").mig_dynamic);
  CHECK_FALSE(load("dgx-h100").mig_dynamic);   // no MIG at all
  CHECK(load("hgx-a100-mig", {.name = "n", .mig_dynamic = true}).mig_dynamic);
}

TEST_CASE("A GPU instance that matches no profile, or instances that cannot share a GPU, are errors", "[traces][nvidia_smi]") {
  const std::string xml = slurp("hgx-a100-mig-query.xml"), topo = slurp("hgx-a100-mig-topo.txt");
  // The 7g.80gb GI of GPU1 shrunk to a size no profile has.
  auto e = trace_error([&] {
    (void)node_from_nvidia_smi(replaced(xml, "<total>80384 MiB</total>", "<total>3000 MiB</total>"), topo, catalog(), "q.xml",
                               "t.txt", {.name = "n"});
  }, "gpusched.trace_error.102");
  CHECK(e.where().file == "q.xml");
  CHECK(e.where().field == "nvidia_smi_log/gpu[1]/mig_devices (gpu_instance_id 0)/fb_memory_usage/total");
  CHECK(std::string(e.what()).find("3000 MiB") != std::string::npos);
  // GPU2's 3g.40gb turned into a second 4g.40gb (56 SMs): two 4g never share a GPU.
  const auto at = xml.find("<gpu_instance_id>2</gpu_instance_id>", xml.find("00000000:85:00.0"));
  REQUIRE(at != std::string::npos);
  std::string two4g = xml;
  const auto sm = two4g.find("<multiprocessor_count>42</multiprocessor_count>", at);
  two4g.replace(sm, std::string("<multiprocessor_count>42</multiprocessor_count>").size(), "<multiprocessor_count>56</multiprocessor_count>");
  e = trace_error([&] { (void)node_from_nvidia_smi(two4g, topo, catalog(), "q.xml", "t.txt", {.name = "n"}); },
                  "gpusched.trace_error.102");
  CHECK(e.where().field == "nvidia_smi_log/gpu[2]/mig_devices");
  CHECK(std::string(e.what()).find("4g.40gb, 4g.40gb") != std::string::npos);
  // A GI id that is not a number.
  e = trace_error([&] { (void)parse_nvidia_smi_query(replaced(xml, "<gpu_instance_id>13<", "<gpu_instance_id>x<"), "q.xml"); },
                  "gpusched.trace_error.102");
  CHECK(e.where().field == "nvidia_smi_log/gpu[0]/mig_devices/mig_device[2]/gpu_instance_id");
  CHECK(e.where().line == static_cast<std::int64_t>(line_of(xml, "<gpu_instance_id>13<")));
}

TEST_CASE("An unknown product names the name, the file and how to add the model", "[traces][nvidia_smi]") {
  const std::string xml = replaced(slurp("hgx-h200-query.xml"), "<product_name>NVIDIA H200</product_name>",
                                   "<product_name>NVIDIA Z900 96GB PCIe</product_name>");
  const auto e = trace_error([&] {
    (void)node_from_nvidia_smi(xml, slurp("hgx-h200-topo.txt"), catalog(), "h200.xml", "t.txt", {.name = "n"});
  }, "gpusched.trace_error.105");
  const std::string what = e.what();
  CHECK(e.where().file == "h200.xml");
  CHECK(e.where().line == static_cast<std::int64_t>(line_of(xml, "<gpu id=")));
  CHECK(what.find("\"NVIDIA Z900 96GB PCIe\"") != std::string::npos);
  CHECK(what.find("model \"Z900\", form factor PCIE, 96 GB") != std::string::npos);
  CHECK(what.find("--gpu-models") != std::string::npos);
  CHECK(what.find("cluster.gpu_models") != std::string::npos);
}

TEST_CASE("The lgip table is read row by row; a malformed row names its line and column", "[traces][nvidia_smi]") {
  const std::string text = slurp("hgx-h200-mig-lgip.txt");
  const auto rows = parse_nvidia_smi_lgip(text, "lgip.txt");
  REQUIRE(rows.size() == 8 * 6);
  CHECK(rows[0].gpu == 0);
  CHECK(rows[0].name == "1g.18gb");
  CHECK(rows[0].id == 19);
  CHECK(rows[0].total == 7);
  CHECK(rows[0].memory_mib == 16 * 1024);
  CHECK(rows[0].sms == 16);
  CHECK(rows[1].ofas == 1);
  CHECK(rows[2].memory_mib == 33024);   // 32.25 GiB
  CHECK(rows[5].copy_engines == 4);
  CHECK(rows.back().gpu == 7);
  CHECK(rows[0].line == 6);
  auto e = trace_error([&] { (void)parse_nvidia_smi_lgip(replaced(text, "32.25 ", "32,25 "), "lgip.txt"); },
                       "gpusched.trace_error.102");
  CHECK(e.where().line == static_cast<std::int64_t>(line_of(text, "32.25 ")));
  CHECK(e.where().field == "Memory");
  e = trace_error([] { (void)parse_nvidia_smi_lgip("No MIG-enabled devices found.\n", "lgip.txt"); }, "gpusched.trace_error.103");
  CHECK(e.where().file == "lgip.txt");
  // lgip without rows for a MIG GPU
  const std::string gpu0_only = text.substr(0, text.find("|   1  MIG"));
  e = trace_error([&] {
    (void)node_from_nvidia_smi(slurp("hgx-h200-mig-query.xml"), slurp("hgx-h200-topo.txt"), catalog(), "q.xml", "t.txt",
                               {.name = "n"}, gpu0_only, "lgip.txt");
  }, "gpusched.trace_error.103");
  CHECK(e.where().file == "lgip.txt");
}

TEST_CASE("A discovered node as cluster JSON: topology, MIG layouts and labels", "[traces][nvidia_smi]") {
  const NodeSpec n = load("hgx-a100-mig", {.name = "hgx", .memory_mib = 1024 * 1024});
  std::vector<std::string> dropped;
  const auto j = node_to_json(n, catalog(), "q.xml", &dropped);
  CHECK(j["name"] == "hgx");
  CHECK(j["cpu"] == 64);
  CHECK(j["memory"] == "1048576Mi");
  CHECK(j["gpus"] == 4);
  CHECK(j["gpu_model"] == "A100-80GB");
  CHECK(j["topology"]["nvlink"] == "nvswitch");
  CHECK(j["topology"]["gpu_sockets"] == nlohmann::json::array({0, 0, 0, 0}));
  CHECK(j["gpu_partition"]["mode"] == "mig");
  CHECK(j["gpu_partition"]["layouts"][1] == nlohmann::json::parse(R"([{"profile": "7g.80gb", "start": 0}])"));
  CHECK_FALSE(j["gpu_partition"].contains("dynamic"));
  CHECK(j["labels"]["nvidia.com/gpu.count"] == "4");
  CHECK(std::find(dropped.begin(), dropped.end(), "PCI bus ids") != dropped.end());

  const auto pcie = node_to_json(load("pcie-a100x4", {.name = "p"}), catalog(), "q.xml");
  CHECK(pcie["topology"]["nvlink"] == "none");
  CHECK(pcie["topology"]["gpus_per_pcie_switch"] == 2);
  CHECK_FALSE(pcie.contains("gpu_partition"));
  const auto nvl = node_to_json(load("pcie-h100nvl-mig"), catalog(), "q.xml");
  CHECK(nvl["topology"]["nvlink"] == "nvswitch");   // one NVLink pair is the whole node

  const auto e = trace_error([] { (void)node_to_json(load("small-a30x2-nic"), catalog(), "a30.xml"); }, "gpusched.trace_error.102");
  CHECK(e.where().file == "a30.xml");
  CHECK(e.where().field == "nvidia_smi_log/gpu[1]/mig_mode/current_mig");
}
