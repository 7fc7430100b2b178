#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include <gpusched/gpu_catalog.hpp>

using namespace gpusched;

TEST_CASE("The builtin catalog has the common datacenter GPUs with their memory", "[core][catalog]") {
  const auto cat = GpuCatalog::builtin();
  for (const char* name : {"A100-80GB", "A100-40GB", "H100-80GB", "V100-32GB", "T4", "A10", "L4"}) {
    INFO(name);
    REQUIRE(cat.find(name).has_value());
  }
  CHECK(cat[*cat.find("A100-80GB")].memory_mib == 81920);
  CHECK(cat[*cat.find("A100-80GB")].mig_capable);
  CHECK(cat[*cat.find("T4")].memory_mib == 16384);
  CHECK_FALSE(cat[*cat.find("T4")].mig_capable);
  CHECK_FALSE(cat.find("A1000").has_value());
}

TEST_CASE("GPU model names and aliases are looked up case-insensitively", "[core][catalog]") {
  const auto cat = GpuCatalog::builtin();
  const auto a100 = cat.find("A100-80GB");
  REQUIRE(a100);
  CHECK(cat.find("a100-80gb") == a100);
  CHECK(cat.find("A100-SXM4-80GB") == a100);
  CHECK(cat.find("nvidia a100-sxm4-80gb") == a100);
  CHECK(cat.find("tesla t4") == cat.find("T4"));
  CHECK(cat.find("A100-40GB") != a100);
}

TEST_CASE("User JSON adds a model without replacing the builtin ones", "[core][catalog]") {
  auto cat = GpuCatalog::builtin();
  const auto before = cat.size();
  cat.add_json(nlohmann::json::parse(R"([{"name":"MI250X","aliases":["AMD MI250X"],"vendor":"AMD","memory_mib":131072,"sms":220}])"),
               "my.json");
  CHECK(cat.size() == before + 1);
  const auto id = cat.find("mi250x");
  REQUIRE(id);
  CHECK(cat[*id].name == "MI250X");
  CHECK(cat[*id].vendor == "AMD");
  CHECK(cat[*id].resource_name == "amd.com/gpu");
  CHECK(cat[*id].memory_mib == 131072);
  CHECK(cat.find("amd mi250x") == id);
  CHECK(cat.find("A100-80GB").has_value());
}

TEST_CASE("User JSON with the same name replaces the model and keeps its id", "[core][catalog]") {
  auto cat = GpuCatalog::builtin();
  const auto before = cat.size();
  const auto t4 = cat.find("T4");
  cat.add_json(nlohmann::json::parse(R"({"schema_version":1,"models":[{"name":"t4","memory_mib":15360}]})"), "my.json");
  CHECK(cat.size() == before);
  CHECK(cat.find("T4") == t4);
  CHECK(cat[*t4].memory_mib == 15360);
}

TEST_CASE("Bad catalog entries throw CatalogError naming the source and JSON path", "[core][catalog]") {
  auto cat = GpuCatalog::builtin();
  try {
    cat.add_json(nlohmann::json::parse(R"([{"name":"X1","memory_mib":1024,"colour":"red"}])"), "my.json");
    FAIL("no exception");
  } catch (const CatalogError& e) {
    CHECK(e.code() == ErrorCode::kCatalogBadEntry);
    CHECK(e.where().file == "my.json");
    CHECK(e.where().field == "/0/colour");
  }
  CHECK_THROWS_AS(cat.add_json(nlohmann::json::parse(R"([{"name":"X2","memory_mib":0}])"), "my.json"), CatalogError);
  CHECK_THROWS_AS(cat.add_json(nlohmann::json::parse(R"([{"memory_mib":10}])"), "my.json"), CatalogError);
  CHECK_THROWS_AS(cat.add_json(nlohmann::json::parse(R"([{"name":"X3","memory_mib":"lots"}])"), "my.json"), CatalogError);
  CHECK_THROWS_AS(cat.add_json(nlohmann::json::parse(R"({"schema_version":2,"models":[]})"), "my.json"), CatalogError);
}

TEST_CASE("An unknown GPU model error lists the known names", "[core][catalog]") {
  const auto cat = GpuCatalog::builtin();
  try {
    (void)cat.require("A1000", {"scenario.json", 0, "/cluster/nodes/0/gpu_model"});
    FAIL("no exception");
  } catch (const CatalogError& e) {
    CHECK(e.code() == ErrorCode::kCatalogUnknownModel);
    CHECK(e.id() == "gpusched.catalog_error.401");
    CHECK(e.where().field == "/cluster/nodes/0/gpu_model");
    CHECK_THAT(e.what(), Catch::Contains("\"A1000\""));
    CHECK_THAT(e.what(), Catch::Contains("A100-80GB"));
    CHECK_THAT(e.what(), Catch::Contains("T4"));
    CHECK_THAT(e.what(), Catch::Contains(cat.known_names()));
  }
}

TEST_CASE("Known model names are listed sorted and comma-separated", "[core][catalog]") {
  GpuCatalog cat;
  cat.add(GpuModel{"b-gpu", {}, "X", 1024, 1, false, false});
  cat.add(GpuModel{"a-gpu", {}, "X", 2048, 1, false, false});
  CHECK(cat.known_names() == "a-gpu, b-gpu");
}

TEST_CASE("Every built-in model names its sources, its nominal size and a usable memory just below it", "[core][catalog]") {
  const auto cat = GpuCatalog::builtin();
  for (const auto& m : cat.models()) {
    INFO(m.name);
    CHECK_FALSE(m.source.empty());
    REQUIRE(m.nominal_memory_gb > 0);
    const double nominal_mib = m.nominal_memory_gb * 1024;
    // Usable (what the driver reports) never exceeds the nominal GiB and is at least 90% of it.
    CHECK(static_cast<double>(m.memory_mib) <= nominal_mib);
    CHECK(static_cast<double>(m.memory_mib) >= 0.9 * nominal_mib);
    CHECK(m.resource_name == default_resource_name(m.vendor));
    if (m.mig) CHECK_FALSE(m.mig->source.empty());
  }
}

TEST_CASE("Usable memory is what nvidia-smi reports, not the name's GB", "[core][catalog]") {
  const auto cat = GpuCatalog::builtin();
  auto mem = [&](const char* n) { return cat[cat.require(n, {})].memory_mib; };
  CHECK(mem("H100-80GB") == 81559);
  CHECK(mem("H100-80GB") < 80 * 1024);
  CHECK(mem("H200") == 143771);
  CHECK(mem("B200") == 183359);
  CHECK(mem("L4") == 23034);
  CHECK(mem("MI300X") == 196592);
  CHECK(cat[cat.require("L4", {})].nominal_memory_gb == 24);
  // An H100 1g.10gb has less than 10 GiB (nvidia-smi mig -lgip: 9.75 GiB).
  const auto& h100 = *cat[cat.require("H100-80GB", {})].mig;
  CHECK(h100.profiles[static_cast<std::size_t>(h100.find_profile("1g.10gb"))].memory_mib == 9984);
  CHECK(h100.lgip_memory);
}

TEST_CASE("The names nvidia-smi and rocm-smi print find their model", "[core][catalog]") {
  const auto cat = GpuCatalog::builtin();
  const std::vector<std::pair<std::string, std::string>> printed{
      {"NVIDIA A100-SXM4-80GB", "A100-80GB"}, {"NVIDIA A100 80GB PCIe", "A100-80GB"}, {"NVIDIA A100-PCIE-40GB", "A100-40GB"},
      {"NVIDIA A800-SXM4-80GB", "A800-80GB"}, {"NVIDIA A800 80GB PCIe", "A800-80GB"}, {"NVIDIA A800 40GB Active", "A800-40GB"},
      {"NVIDIA H100 80GB HBM3", "H100-80GB"}, {"NVIDIA H100 PCIe", "H100-PCIe"}, {"NVIDIA H100 NVL", "H100-NVL"},
      {"NVIDIA H800", "H800"}, {"NVIDIA H800 PCIe", "H800-PCIe"}, {"NVIDIA H20", "H20"}, {"NVIDIA H200", "H200"},
      {"NVIDIA H200 NVL", "H200"}, {"NVIDIA GH200 480GB", "GH200-96GB"}, {"NVIDIA GH200 120GB", "GH200-96GB"},
      {"NVIDIA GH200 144G HBM3e", "GH200-144GB"}, {"NVIDIA B200", "B200"}, {"NVIDIA GB200", "GB200"},
      {"NVIDIA B300 SXM6 AC", "B300"}, {"NVIDIA RTX PRO 6000 Blackwell Server Edition", "RTX-PRO-6000-Blackwell-Server"},
      {"NVIDIA A40", "A40"}, {"NVIDIA L40", "L40"}, {"NVIDIA L40S", "L40S"}, {"NVIDIA A10G", "A10G"}, {"NVIDIA A10", "A10"},
      {"NVIDIA L4", "L4"}, {"NVIDIA RTX 6000 Ada Generation", "RTX-6000-Ada"}, {"NVIDIA RTX 6000 Ada Gene...", "RTX-6000-Ada"},
      {"AMD Instinct MI300X OAM", "MI300X"}, {"AMD Instinct MI325X", "MI325X"}, {"Tesla T4", "T4"}};
  for (const auto& [name, model] : printed) {
    INFO(name);
    const auto id = cat.find(name);
    REQUIRE(id.has_value());
    CHECK(cat[*id].name == model);
  }
  // Aliases are unique: no printed name of one model resolves to another.
  for (const auto& m : cat.models()) {
    for (const auto& a : m.aliases) {
      INFO(a);
      CHECK(cat[*cat.find(a)].name == m.name);
    }
  }
}

TEST_CASE("A model's vendor decides the resource name its GPUs are requested as", "[core][catalog]") {
  auto cat = GpuCatalog::builtin();
  CHECK(cat[cat.require("MI300X", {})].resource_name == "amd.com/gpu");
  CHECK(cat[cat.require("MI325X", {})].resource_name == "amd.com/gpu");
  CHECK(cat[cat.require("H100-80GB", {})].resource_name == "nvidia.com/gpu");
  CHECK(cat.resource_names() == std::vector<std::string>{"amd.com/gpu", "nvidia.com/gpu"});
  CHECK(default_resource_name("nvidia") == "nvidia.com/gpu");
  CHECK(default_resource_name("Intel") == "gpu.intel.com/i915");
  CHECK(default_resource_name("Acme").empty());
  cat.add_json(nlohmann::json::parse(R"([{"name":"Gaudi3","vendor":"Intel","resource_name":"habana.ai/gaudi","memory_mib":131072}])"), "my.json");
  CHECK(cat[cat.require("Gaudi3", {})].resource_name == "habana.ai/gaudi");
  CHECK(cat.resource_names() == std::vector<std::string>{"amd.com/gpu", "habana.ai/gaudi", "nvidia.com/gpu"});
  // A vendor without a known device plugin keeps nvidia.com/gpu (what every model was requested as
  // before), and a model serialised with to_json reads back with the same resource name.
  cat.add_json(nlohmann::json::parse(R"([{"name":"X1","vendor":"undisclosed","memory_mib":1024}])"), "my.json");
  CHECK(cat[cat.require("X1", {})].resource_name == "nvidia.com/gpu");
  GpuCatalog round;
  round.add_json(nlohmann::json::array({nlohmann::json(cat[cat.require("Gaudi3", {})]), nlohmann::json(cat[cat.require("X1", {})])}), "rt.json");
  CHECK(round[round.require("Gaudi3", {})].resource_name == "habana.ai/gaudi");
  CHECK(round[round.require("X1", {})].resource_name == "nvidia.com/gpu");
  try {
    cat.add_json(nlohmann::json::parse(R"([{"name":"X2","resource_name":"gpu","memory_mib":1024}])"), "my.json");
    FAIL("no exception");
  } catch (const CatalogError& e) {
    CHECK(e.where().field == "/0/resource_name");
    CHECK_THAT(e.what(), Catch::Contains("amd.com/gpu"));
  }
  CHECK_THROWS_AS(cat.add_json(nlohmann::json::parse(R"([{"name":"X3","nominal_memory_gb":-1,"memory_mib":1024}])"), "my.json"), CatalogError);
  CHECK_THROWS_AS(cat.add_json(nlohmann::json::parse(R"([{"name":"X4","nominal_memory_gb":"80","memory_mib":1024}])"), "my.json"), CatalogError);
}

TEST_CASE("vGPU profiles are sized against the nominal framebuffer; MIG-backed ones name a GI profile", "[core][catalog]") {
  auto cat = GpuCatalog::builtin();
  const auto& l4 = cat[cat.require("L4", {})];
  REQUIRE(l4.find_vgpu("L4-24C") >= 0);
  CHECK(l4.vgpu[static_cast<std::size_t>(l4.find_vgpu("L4-24C"))].framebuffer_mib > l4.memory_mib);   // 24 GB profile, 23034 MiB usable
  cat.add_json(nlohmann::json::parse(R"([{"name":"Toy","memory_mib":8000,"nominal_memory_gb":8,
      "mig":{"memory_slices":2,"compute_slices":2,"profiles":[{"name":"1g.4gb","compute_slices":1,"memory_slices":1,"memory_mib":4000,"max_count":2,"starts":[0,1]}]},
      "vgpu":[{"name":"Toy-1-4C","framebuffer_mib":4096,"max_per_gpu":2,"mig_profile":"1g.4gb"},
              {"name":"Toy-4C","framebuffer_mib":4096,"max_per_gpu":2,"max_per_gpu_mixed":2}]}])"), "toy.json");
  const auto& toy = cat[cat.require("Toy", {})];
  REQUIRE(toy.vgpu.size() == 2);
  CHECK(toy.vgpu[0].mig_backed());
  CHECK(toy.vgpu[0].mig_profile == "1g.4gb");
  CHECK_FALSE(toy.vgpu[1].mig_backed());
  CHECK(toy.vgpu[1].max_per_gpu_mixed == 2);
  auto bad = [&](const std::string& vgpu, const std::string& field) {
    try {
      cat.add_json(nlohmann::json::parse(R"([{"name":"Toy2","memory_mib":8000,"nominal_memory_gb":8,
          "mig":{"memory_slices":2,"compute_slices":2,"profiles":[{"name":"1g.4gb","compute_slices":1,"memory_slices":1,"max_count":2,"starts":[0,1]}]},
          "vgpu":[)" + vgpu + "]}]"), "toy.json");
      FAIL("no exception for " + vgpu);
    } catch (const CatalogError& e) {
      CHECK(e.where().field == "/0/vgpu/0/" + field);
    }
  };
  bad(R"({"name":"T-1-4C","framebuffer_mib":4096,"mig_profile":"2g.8gb"})", "mig_profile");
  bad(R"({"name":"T-1-4C","framebuffer_mib":4096,"max_per_gpu":3,"mig_profile":"1g.4gb"})", "max_per_gpu");
  bad(R"({"name":"T-1-4C","framebuffer_mib":4096,"max_per_gpu_mixed":1,"mig_profile":"1g.4gb"})", "max_per_gpu_mixed");
  bad(R"({"name":"T-4C","framebuffer_mib":4096,"max_per_gpu_mixed":3})", "max_per_gpu_mixed");
}

TEST_CASE("Built-in vGPU tables: MIG-backed types sit on a GI profile, mixed-size counts never exceed equal-size", "[core][catalog]") {
  const auto cat = GpuCatalog::builtin();
  std::size_t mig_backed = 0, mixed = 0;
  for (const auto& m : cat.models()) {
    INFO(m.name);
    const std::int64_t board = std::max(m.memory_mib, static_cast<std::int64_t>(m.nominal_memory_gb * 1024));
    for (const auto& v : m.vgpu) {
      INFO(v.name);
      CHECK(v.framebuffer_mib <= board);
      if (v.mig_backed()) {
        ++mig_backed;
        REQUIRE(m.mig.has_value());
        const int gi = m.mig->find_profile(v.mig_profile);
        REQUIRE(gi >= 0);
        CHECK(v.max_per_gpu <= m.mig->profiles[static_cast<std::size_t>(gi)].max_count);
        // NVIDIA's naming: <board>-<compute slices>-<GB>C[ME]; the slices match the GI profile.
        const auto dash = v.name.find('-');
        CHECK(std::stoi(v.name.substr(dash + 1)) == m.mig->profiles[static_cast<std::size_t>(gi)].compute_slices);
        CHECK(v.max_per_gpu_mixed == 0);
      } else {
        CHECK(v.framebuffer_mib * v.max_per_gpu <= board);
        CHECK(v.max_per_gpu_mixed <= v.max_per_gpu);
        if (v.max_per_gpu_mixed > 0) ++mixed;
      }
    }
  }
  CHECK(mig_backed >= 60);
  CHECK(mixed >= 100);
  const auto& a100 = cat[cat.require("A100-40GB", {})];
  const auto& v = a100.vgpu[static_cast<std::size_t>(a100.find_vgpu("A100-3-20C"))];
  CHECK(v.mig_profile == "3g.20gb");
  CHECK(v.max_per_gpu == 2);
  const auto& l4 = cat[cat.require("L4", {})];
  CHECK(l4.vgpu[static_cast<std::size_t>(l4.find_vgpu("L4-8C"))].max_per_gpu_mixed == 2);   // 3 in equal-size mode
  CHECK(l4.vgpu[static_cast<std::size_t>(l4.find_vgpu("L4-8C"))].max_per_gpu == 3);
}
