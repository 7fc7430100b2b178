#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

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
  cat.add_json(nlohmann::json::parse(R"([{"name":"MI300X","aliases":["AMD MI300X"],"vendor":"AMD","memory_mib":196608,"sms":304}])"),
               "my.json");
  CHECK(cat.size() == before + 1);
  const auto id = cat.find("mi300x");
  REQUIRE(id);
  CHECK(cat[*id].name == "MI300X");
  CHECK(cat[*id].vendor == "AMD");
  CHECK(cat[*id].memory_mib == 196608);
  CHECK(cat.find("amd mi300x") == id);
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
