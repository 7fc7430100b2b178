// TPU generations and slice topologies (../shared/reference/tpu.md).
#include <catch2/catch.hpp>

#include <string>
#include <utility>
#include <vector>

#include <gpusched/tpu.hpp>

using namespace gpusched;

namespace {
int hosts(const std::string& gen, const std::string& topo, int per_host = 0) {
  return TpuCatalog::builtin().require(gen, {}).hosts(topo, {"test", 0, "topology"}, per_host);
}
}  // namespace

TEST_CASE("Every listed TPU topology is accepted with the right host count", "[core][tpu]") {
  const std::vector<std::pair<std::string, int>> v4{{"2x2x1", 1}, {"2x2x2", 2}, {"2x2x4", 4}, {"2x4x4", 8},
                                                   {"4x4x4", 16}, {"4x4x8", 32}, {"4x8x8", 64}, {"8x8x8", 128},
                                                   {"8x8x16", 256}, {"16x16x16", 1024}};
  for (const auto& [t, h] : v4) {
    INFO("v4 " << t);
    CHECK(hosts("v4", t) == h);
  }
  const std::vector<std::pair<std::string, int>> v5p{{"2x2x1", 1}, {"2x2x2", 2}, {"2x4x4", 8}, {"4x4x4", 16},
                                                    {"4x4x8", 32}, {"4x8x8", 64}, {"8x8x8", 128}, {"8x8x16", 256},
                                                    {"8x16x16", 512}, {"16x16x16", 1024}, {"16x16x24", 1536}};
  for (const auto& [t, h] : v5p) {
    INFO("v5p " << t);
    CHECK(hosts("v5p", t) == h);
  }
  // v5e with 8-chip hosts (tpu.md's table; a 1x1 or 2x2 slice uses part of one host).
  const std::vector<std::pair<std::string, int>> v5e{{"1x1", 1}, {"2x2", 1}, {"2x4", 1}, {"4x4", 2},
                                                    {"4x8", 4}, {"8x8", 8}, {"8x16", 16}, {"16x16", 32}};
  for (const auto& [t, h] : v5e) {
    INFO("v5e " << t);
    CHECK(hosts("v5e", t) == h);
  }
  // GKE multi-host v5e uses 4-chip hosts.
  CHECK(hosts("v5e", "4x4", 4) == 4);
  CHECK(hosts("v5e", "16x16", 4) == 64);
}

TEST_CASE("A 2x2x4 v4 slice needs 4 hosts", "[core][tpu]") { CHECK(hosts("v4", "2x2x4") == 4); }

TEST_CASE("Shapes a generation does not offer are rejected naming the shape and the allowed ones", "[core][tpu]") {
  for (const auto& [gen, topo] : std::vector<std::pair<std::string, std::string>>{
           {"v4", "2x2x3"}, {"v4", "4x4"}, {"v4", "3x4x4"}, {"v4", "16x16x32"},   // not multiple of 4; 2-D; too big
           {"v4", "8x4x4"},                                                      // order
           {"v5e", "2x2x2"}, {"v5e", "4x2"}, {"v5e", "32x32"}, {"v5e", "3x3"},
           {"v5p", "2x2x4"}, {"v5p", "16x16x32"}, {"v5p", "2x2"}, {"v5p", "x"}, {"v5p", "4x4x0"}}) {
    INFO(gen << " " << topo);
    try {
      (void)hosts(gen, topo);
      FAIL("accepted");
    } catch (const CatalogError& e) {
      CHECK(e.id() == "gpusched.catalog_error.404");
      CHECK(e.where().field == "topology");
      CHECK(std::string(e.what()).find("\"" + topo + "\"") != std::string::npos);
      CHECK(std::string(e.what()).find("allowed:") != std::string::npos);
    }
  }
}

TEST_CASE("Unknown generations and host sizes are errors", "[core][tpu]") {
  CHECK_THROWS_AS(TpuCatalog::builtin().require("v3", {}), CatalogError);
  CHECK_THROWS_AS(hosts("v4", "2x2x4", 8), CatalogError);
  CHECK(TpuCatalog::builtin().require("v5p", {}).accelerator_label == "tpu-v5p-slice");
}
