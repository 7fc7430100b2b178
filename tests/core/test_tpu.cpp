// TPU generations, slice topologies and GKE machine types (../shared/reference/tpu.md, docs/tpu.md).
#include <catch2/catch.hpp>

#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <gpusched/embedded_tpu_generations.hpp>
#include <gpusched/tpu.hpp>

using namespace gpusched;

namespace {
int hosts(const std::string& gen, const std::string& topo, int per_host = 0) {
  return TpuCatalog::builtin().require(gen, {}).hosts(topo, {"test", 0, "topology"}, per_host);
}
const TpuGeneration& gen(const std::string& name) { return TpuCatalog::builtin().require(name, {}); }
std::int64_t product(const std::vector<int>& v) {
  std::int64_t p = 1;
  for (int d : v) p *= d;
  return p;
}
}  // namespace

TEST_CASE("Every listed TPU topology is accepted with the right host count", "[core][tpu]") {
  const std::vector<std::pair<std::string, int>> v4{{"2x2x1", 1}, {"2x2x2", 2}, {"2x2x4", 4}, {"2x4x4", 8},
                                                   {"4x4x4", 16}, {"4x4x8", 32}, {"4x8x8", 64}, {"8x8x8", 128},
                                                   {"8x8x12", 192}, {"8x8x16", 256}, {"16x16x16", 1024}};
  for (const auto& [t, h] : v4) {
    INFO("v4 " << t);
    CHECK(hosts("v4", t) == h);
  }
  const std::vector<std::pair<std::string, int>> v5p{{"2x2x1", 1}, {"2x2x2", 2}, {"2x2x4", 4}, {"2x4x4", 8},
                                                    {"4x4x4", 16}, {"4x4x8", 32}, {"4x4x12", 48}, {"4x8x8", 64},
                                                    {"8x8x8", 128}, {"8x8x16", 256}, {"8x16x16", 512},
                                                    {"16x16x16", 1024}, {"16x16x24", 1536}};
  for (const auto& [t, h] : v5p) {
    INFO("v5p " << t);
    CHECK(hosts("v5p", t) == h);
  }
}

// GKE's tables (docs/tpu.md): topology -> machine type, nodes, google.com/tpu per node.
TEST_CASE("Each documented GKE topology gives the documented node count and chips per node", "[core][tpu]") {
  struct Row {
    std::string generation, topology, machine;
    int nodes, chips;
  };
  const std::vector<Row> rows{
      // v5e (tpu-v5-lite-podslice): single host on 1t/4t/8t, multi-host on 4-chip ct5lp-hightpu-4t.
      {"v5e", "1x1", "ct5lp-hightpu-1t", 1, 1},   {"v5e", "2x2", "ct5lp-hightpu-4t", 1, 4},
      {"v5e", "2x4", "ct5lp-hightpu-8t", 1, 8},   {"v5e", "2x4", "ct5lp-hightpu-4t", 2, 4},
      {"v5e", "4x4", "ct5lp-hightpu-4t", 4, 4},   {"v5e", "4x8", "ct5lp-hightpu-4t", 8, 4},
      {"v5e", "8x8", "ct5lp-hightpu-4t", 16, 4},  {"v5e", "8x16", "ct5lp-hightpu-4t", 32, 4},
      {"v5e", "16x16", "ct5lp-hightpu-4t", 64, 4},
      // v6e (tpu-v6e-slice), the v6e page's Supported configurations table (VMs column).
      {"v6e", "1x1", "ct6e-standard-1t", 1, 1},   {"v6e", "2x2", "ct6e-standard-4t", 1, 4},
      {"v6e", "2x4", "ct6e-standard-8t", 1, 8},   {"v6e", "2x4", "ct6e-standard-4t", 2, 4},
      {"v6e", "4x4", "ct6e-standard-4t", 4, 4},   {"v6e", "4x8", "ct6e-standard-4t", 8, 4},
      {"v6e", "8x8", "ct6e-standard-4t", 16, 4},  {"v6e", "8x16", "ct6e-standard-4t", 32, 4},
      {"v6e", "16x16", "ct6e-standard-4t", 64, 4},
      // v5p and v4: 4-chip hosts.
      {"v5p", "2x2x1", "ct5p-hightpu-4t", 1, 4},  {"v5p", "2x2x4", "ct5p-hightpu-4t", 4, 4},
      {"v5p", "2x4x4", "ct5p-hightpu-4t", 8, 4},  {"v4", "2x2x4", "ct4p-hightpu-4t", 4, 4},
      // tpu7x (Ironwood).
      {"tpu7x", "1x1x1", "tpu7x-standard-1t", 1, 1}, {"tpu7x", "2x2x1", "tpu7x-standard-4t", 1, 4},
      {"tpu7x", "2x2x4", "tpu7x-standard-4t", 4, 4}, {"tpu7x", "4x4x4", "tpu7x-standard-4t", 16, 4},
      {"tpu7x", "16x24x24", "tpu7x-standard-4t", 2304, 4},
  };
  for (const auto& r : rows) {
    INFO(r.generation << " " << r.topology << " on " << r.machine);
    const auto& g = gen(r.generation);
    const auto* m = g.machine_type(r.chips);
    REQUIRE(m != nullptr);
    CHECK(m->name == r.machine);
    CHECK(hosts(r.generation, r.topology, r.chips) == r.nodes);
    CHECK(g.serves(*m, g.require_topology(r.topology, {})));
    // The host shape tiles the slice: nodes x chips per node = chips of the topology.
    CHECK(static_cast<std::int64_t>(r.nodes) * r.chips == g.require_topology(r.topology, {}).chips());
    CHECK(product(m->host_shape) == m->chips);
  }
}

TEST_CASE("The default host size is the machine type with the most chips that serves the topology", "[core][tpu]") {
  CHECK(hosts("v5e", "2x4") == 1);     // ct5lp-hightpu-8t
  CHECK(hosts("v5e", "4x4") == 4);     // ct5lp-hightpu-4t: a 4x4 slice is 4 nodes asking google.com/tpu: 4
  CHECK(hosts("v5e", "16x16") == 64);
  CHECK(hosts("v5e", "1x1") == 1);
  CHECK(hosts("v6e", "8x8") == 16);
  CHECK(hosts("tpu7x", "1x1x1") == 1);
  CHECK(hosts("tpu7x", "2x2x2") == 2);
  for (const auto& g : TpuCatalog::builtin().generations()) {
    for (const auto& s : g.shapes) {
      INFO(g.name << " " << s);
      const auto t = g.require_topology(s, {});
      const auto* m = g.machine_for(t, 0);
      REQUIRE(m != nullptr);   // every listed shape has a machine type
      for (const auto& other : g.machine_types) {
        if (other.chips > m->chips) CHECK_FALSE(g.serves(other, t));
      }
      CHECK(hosts(g.name, s) == t.chips() / m->chips);
    }
  }
}

TEST_CASE("8-chip v5e and v6e hosts serve only 2x4: multi-host slices need 4-chip hosts", "[core][tpu]") {
  for (const std::string g : {"v5e", "v6e"}) {
    for (const std::string t : {"4x4", "8x8", "16x16"}) {
      INFO(g << " " << t);
      try {
        (void)hosts(g, t, 8);
        FAIL("accepted");
      } catch (const CatalogError& e) {
        CHECK(e.id() == "gpusched.catalog_error.404");
        CHECK_THAT(e.what(), Catch::Contains("do not serve a " + t) && Catch::Contains("-4t: ") &&
                                 Catch::Contains("nodes x google.com/tpu: 4"));
      }
    }
  }
  // 1-chip hosts serve only 1x1 (GKE runs 2x2 on one 4-chip host).
  CHECK_THROWS_AS(hosts("v5e", "2x2", 1), CatalogError);
}

TEST_CASE("Shapes a generation does not offer are rejected naming the shape and the allowed ones", "[core][tpu]") {
  for (const auto& [g, topo] : std::vector<std::pair<std::string, std::string>>{
           {"v4", "2x2x3"}, {"v4", "4x4"}, {"v4", "3x4x4"}, {"v4", "16x16x32"},   // not multiple of 4; 2-D; too big
           {"v4", "8x4x4"},                                                      // order
           {"v5e", "2x2x2"}, {"v5e", "4x2"}, {"v5e", "32x32"}, {"v5e", "3x3"},
           {"v6e", "4x2"}, {"v6e", "32x16"}, {"tpu7x", "2x2"}, {"tpu7x", "4x4x16"}, {"tpu7x", "3x4x4"},
           {"v5p", "16x16x32"}, {"v5p", "2x2"}, {"v5p", "x"}, {"v5p", "4x4x0"}, {"v5p", "2x2x3"}}) {
    INFO(g << " " << topo);
    try {
      (void)hosts(g, topo);
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
  CHECK(gen("v5p").accelerator_label == "tpu-v5p-slice");
  CHECK(gen("v6e").accelerator_label == "tpu-v6e-slice");
  CHECK(gen("v5e").accelerator_label == "tpu-v5-lite-podslice");
  CHECK(gen("tpu7x").accelerator_label == "tpu7x");
}

// The catalog against its own rules, read from the raw JSON (not through the loader's view).
TEST_CASE("Every catalog generation and machine type is consistent and sourced", "[core][tpu]") {
  const auto doc = nlohmann::json::parse(embedded::kTpuGenerationsJson);
  std::set<std::string> labels;
  for (const auto& gj : doc.at("generations")) {
    const auto& g = gen(gj.at("name").get<std::string>());
    INFO(g.name);
    CHECK(labels.insert(g.accelerator_label).second);
    CHECK_FALSE(gj.at("source").get<std::string>().empty());
    CHECK_FALSE(gj.at("hbm_per_chip").at("source").get<std::string>().empty());
    CHECK(g.hbm_per_chip_mib > 0);
    CHECK(g.machine_type(g.default_chips_per_host)->name == g.default_machine_type);
    for (const auto& mj : gj.at("machine_types")) {
      INFO(mj.at("name").get<std::string>());
      CHECK(mj.at("source").get<std::string>().find("http") != std::string::npos);
      const auto* m = g.machine_type(mj.at("chips").get<int>());
      REQUIRE(m != nullptr);
      CHECK(static_cast<int>(m->host_shape.size()) == g.dimensions);
      CHECK(product(m->host_shape) == m->chips);
      // Every served topology is a whole number of hosts: chips divide evenly.
      for (const auto& t : m->topologies) CHECK(g.require_topology(t, {}).chips() % m->chips == 0);
    }
  }
  // HBM per chip as the sources state it.
  CHECK(gen("v5e").hbm_per_chip_mib == 15258);          // 16 GB
  CHECK(gen("v5p").hbm_per_chip_mib == 95 * 1024);      // 95 GiB
  CHECK(gen("tpu7x").hbm_per_chip_mib == 192 * 1024);   // 192 GiB
}

TEST_CASE("A bad TPU catalog is refused naming the field", "[core][tpu]") {
  const auto good = nlohmann::json::parse(embedded::kTpuGenerationsJson);
  CHECK(TpuCatalog::from_json_text(good.dump(), "t.json").generations().size() == good.at("generations").size());
  struct Bad {
    std::string path, field, expect;
    nlohmann::json value;
  };
  const std::vector<Bad> bad{
      {"/generations/1/machine_types/1/host_shape", "/generations/1/machine_types/1/host_shape", "holds 8 chips", "2x4"},
      {"/generations/1/machine_types/2/topologies", "/generations/1/machine_types/2/topologies/0", "not a whole number", {"2x2"}},
      {"/generations/1/machine_types/0/chips", "/generations/1/machine_types/0/host_shape", "holds 1 chips, not 4", 4},
      {"/generations/1/hbm_per_chip/unit", "/generations/1/hbm_per_chip/unit", "GiB", "TB"},
      {"/generations/0/default_machine_type", "/generations/0/default_machine_type", "not one of", "ct9"},
      {"/generations/0/shapes/0", "/generations/0/shapes/0", "3-D", "2x2"},
      {"/generations/2/accelerator_label", "/generations/2/accelerator_label", "also", "tpu-v4-podslice"},
      {"/generations/0/bogus", "/generations/0/bogus", "unknown field", 1},
      {"/schema_version", "/schema_version", "schema_version 2", 1},
  };
  for (const auto& b : bad) {
    INFO(b.path);
    auto doc = good;
    doc[nlohmann::json::json_pointer(b.path)] = b.value;
    try {
      (void)TpuCatalog::from_json_text(doc.dump(), "t.json");
      FAIL("accepted");
    } catch (const CatalogError& e) {
      CHECK(e.id() == "gpusched.catalog_error.402");
      CHECK(e.where().file == "t.json");
      CHECK(e.where().field == b.field);
      CHECK_THAT(e.what(), Catch::Contains(b.expect));
    }
  }
}
