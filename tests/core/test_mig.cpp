// One test per rule of ../shared/reference/mig.md, for every MIG model in the built-in catalog.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include <gpusched/gpu_catalog.hpp>
#include <gpusched/mig.hpp>
#include <nlohmann/json.hpp>

using namespace gpusched;

namespace {
const GpuCatalog& catalog() {
  static const GpuCatalog c = GpuCatalog::builtin();
  return c;
}
const MigGeometry& geo(const std::string& model) {
  const auto& m = catalog()[catalog().require(model, {})];
  REQUIRE(m.mig.has_value());
  return *m.mig;
}
/// Profile indices by generic name ("1g", "1g+me", "1g2" = the two-slice 1g, "2g", "3g", "4g", "7g").
struct Names {
  int g1, g1me, g1x2, g2, g3, g4, g7;
};
Names names(const MigGeometry& g) {
  Names n{-1, -1, -1, -1, -1, -1, -1};
  for (std::size_t i = 0; i < g.profiles.size(); ++i) {
    const auto& p = g.profiles[i];
    const int idx = static_cast<int>(i);
    if (p.compute_slices == 1 && p.memory_slices == 1) (p.media_extensions ? n.g1me : n.g1) = idx;
    else if (p.compute_slices == 1 && p.memory_slices == 2) n.g1x2 = idx;
    else if (p.compute_slices == 2) n.g2 = idx;
    else if (p.compute_slices == 3) n.g3 = idx;
    else if (p.compute_slices == 4) n.g4 = idx;
    else if (p.compute_slices == 7) n.g7 = idx;
  }
  return n;
}
bool fits(const MigGeometry& g, std::vector<int> ps) { return mig_fits(g, ps); }
}  // namespace

TEST_CASE("The 8-slice MIG models carry mig.md's profiles, ids, counts and starts", "[core][mig]") {
  const auto model = GENERATE(as<std::string>{}, "A100-40GB", "A100-80GB", "H100-80GB", "H100-NVL", "H200");
  INFO(model);
  const auto& g = geo(model);
  CHECK(g.memory_slices == 8);
  CHECK(g.compute_slices == 7);
  REQUIRE(g.profiles.size() == 7);
  const std::vector<int> ids{19, 20, 15, 14, 9, 5, 0}, max{7, 1, 4, 3, 2, 1, 1};
  const std::vector<std::vector<int>> starts{{0, 1, 2, 3, 4, 5, 6}, {0, 1, 2, 3, 4, 5, 6}, {0, 2, 4, 6}, {0, 2, 4}, {0, 4}, {0}, {0}};
  for (std::size_t i = 0; i < 7; ++i) {
    CHECK(g.profiles[i].id == ids[i]);
    CHECK(g.profiles[i].max_count == max[i]);
    CHECK(g.profiles[i].starts == starts[i]);
  }
  CHECK(catalog()[catalog().require(model, {})].mig_capable);
}

TEST_CASE("Profile names and sizes per model follow mig.md", "[core][mig]") {
  CHECK(geo("A100-40GB").profile_names() == "1g.5gb, 1g.5gb+me, 1g.10gb, 2g.10gb, 3g.20gb, 4g.20gb, 7g.40gb");
  CHECK(geo("A100-80GB").profile_names() == "1g.10gb, 1g.10gb+me, 1g.20gb, 2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb");
  CHECK(geo("H100-80GB").profile_names() == "1g.10gb, 1g.10gb+me, 1g.20gb, 2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb");
  CHECK(geo("H100-NVL").profile_names() == "1g.12gb, 1g.12gb+me, 1g.24gb, 2g.24gb, 3g.47gb, 4g.47gb, 7g.94gb");
  CHECK(geo("H200").profile_names() == "1g.18gb, 1g.18gb+me, 1g.35gb, 2g.35gb, 3g.71gb, 4g.71gb, 7g.141gb");
  // Exact NVML sizes on A100 for 1/2/4/8 memory slices.
  const auto& a40 = geo("A100-40GB");
  CHECK(a40.profiles[0].memory_mib == 4864);
  CHECK(a40.profiles[2].memory_mib == 9856);
  CHECK(a40.profiles[4].memory_mib == 19968);
  CHECK(a40.profiles[6].memory_mib == 40192);
  CHECK(geo("A100-80GB").profiles[6].memory_mib == 80384);
  // SMs per GI.
  std::vector<int> sms;
  for (const auto& p : geo("H100-80GB").profiles) sms.push_back(p.sms);
  CHECK(sms == std::vector<int>{16, 16, 26, 32, 60, 64, 132});
  sms.clear();
  for (const auto& p : geo("A100-80GB").profiles) sms.push_back(p.sms);
  CHECK(sms == std::vector<int>{14, 14, 14, 28, 42, 56, 98});
}

TEST_CASE("Rule 1: 4g+4g, 3g+3g+1g and 4g+3g+1g are impossible, at most one 4g, two 3g, one +me", "[core][mig]") {
  const auto model = GENERATE(as<std::string>{}, "A100-40GB", "A100-80GB", "H100-80GB", "H100-NVL", "H200");
  INFO(model);
  const auto& g = geo(model);
  const auto n = names(g);
  CHECK_FALSE(fits(g, {n.g4, n.g4}));
  CHECK_FALSE(fits(g, {n.g3, n.g3, n.g1}));
  CHECK_FALSE(fits(g, {n.g4, n.g3, n.g1}));
  CHECK(fits(g, {n.g3, n.g3}));
  CHECK_FALSE(fits(g, {n.g3, n.g3, n.g3}));
  CHECK(fits(g, {n.g1me}));
  CHECK_FALSE(fits(g, {n.g1me, n.g1me}));
  CHECK(fits(g, {n.g1me, n.g1, n.g1}));
}

TEST_CASE("Rule 2: 7g, 4g+3g, 3g+2g+2g and 3g+2g+1g+1g fit and leave nothing", "[core][mig]") {
  const auto model = GENERATE(as<std::string>{}, "A100-40GB", "A100-80GB", "H100-80GB", "H100-NVL", "H200");
  INFO(model);
  const auto& g = geo(model);
  const auto n = names(g);
  for (const auto& layout : std::vector<std::vector<int>>{{n.g7}, {n.g4, n.g3}, {n.g3, n.g2, n.g2}, {n.g3, n.g2, n.g1, n.g1}}) {
    CHECK(fits(g, layout));
    for (std::size_t p = 0; p < g.profiles.size(); ++p) {   // zero waste: nothing more fits
      auto more = layout;
      more.push_back(static_cast<int>(p));
      CHECK_FALSE(fits(g, more));
    }
  }
}

TEST_CASE("Rule 3: three 2g leave room for exactly one 1g at slice 6, never a fourth 2g", "[core][mig]") {
  const auto model = GENERATE(as<std::string>{}, "A100-40GB", "A100-80GB", "H100-80GB", "H100-NVL", "H200");
  INFO(model);
  const auto& g = geo(model);
  const auto n = names(g);
  MigLayout gpu;
  for (int s : {0, 2, 4}) gpu.place(g, n.g2, s);
  CHECK(gpu.free_starts(g, n.g1) == std::vector<int>{6});
  CHECK(gpu.free_starts(g, n.g1x2) == std::vector<int>{6});
  CHECK(gpu.free_starts(g, n.g2).empty());
  CHECK(mig_fits(g, std::vector<int>{n.g1}, gpu));
  CHECK_FALSE(mig_fits(g, std::vector<int>{n.g1, n.g1}, gpu));   // one compute slice left
}

TEST_CASE("Rule 4: creation order matters, 1g,1g,2g,3g fails and 3g,1g,2g,1g succeeds", "[core][mig]") {
  const auto model = GENERATE(as<std::string>{}, "A100-40GB", "A100-80GB", "H100-80GB", "H100-NVL", "H200");
  INFO(model);
  const auto& g = geo(model);
  const auto n = names(g);
  const std::vector<int> bad{n.g1, n.g1, n.g2, n.g3}, good{n.g3, n.g1, n.g2, n.g1};
  MigLayout a, b;
  // mig.md's examples hold when each GI takes the highest free legal start.
  CHECK(mig_create_in_order(g, a, bad, MigStartPolicy::kHighestFirst) == 3);   // the 3g finds no start
  CHECK(mig_create_in_order(g, b, good, MigStartPolicy::kHighestFirst) == 4);
  // The multiset itself is feasible: placement is a decision, not a count of slices.
  CHECK(fits(g, bad));
  MigLayout c;
  CHECK(mig_create_in_order(g, c, bad, MigStartPolicy::kLowestFirst) == 4);   // 1g@0, 1g@1, 2g@2, 3g@4
}

TEST_CASE("Rule 5: which GIs fit depends on where the existing ones sit", "[core][mig]") {
  const auto model = GENERATE(as<std::string>{}, "A100-40GB", "A100-80GB", "H100-80GB", "H100-NVL", "H200");
  INFO(model);
  const auto& g = geo(model);
  const auto n = names(g);
  MigLayout at0, at6;
  at0.place(g, n.g1, 0);
  at6.place(g, n.g1, 6);
  CHECK_FALSE(mig_fits(g, std::vector<int>{n.g4}, at0));
  CHECK(mig_fits(g, std::vector<int>{n.g4}, at6));
  CHECK(mig_fits(g, std::vector<int>{n.g4, n.g2}, at6));
  // The best-start policy keeps the 4g possible.
  MigLayout best;
  best.place(g, n.g1, *choose_start(g, best, n.g1, MigStartPolicy::kBest));
  CHECK(mig_fits(g, std::vector<int>{n.g4}, best));
  CHECK(best.instances().front().start >= 4);
}

TEST_CASE("Rule 6 of the geometry: seven 1g strand memory slice 7", "[core][mig]") {
  const auto model = GENERATE(as<std::string>{}, "A100-40GB", "A100-80GB", "H100-80GB", "H100-NVL", "H200");
  INFO(model);
  const auto& g = geo(model);
  const auto n = names(g);
  MigLayout gpu;
  CHECK(mig_create_in_order(g, gpu, std::vector<int>(7, n.g1), MigStartPolicy::kLowestFirst) == 7);
  CHECK((gpu.used_memory_mask() & (1u << 7)) == 0);   // slice 7 is free ...
  for (std::size_t p = 0; p < g.profiles.size(); ++p) CHECK(gpu.free_starts(g, static_cast<int>(p)).empty());   // ... and unusable
  CHECK_FALSE(fits(g, std::vector<int>(8, n.g1)));
}

TEST_CASE("The A30 has 4 memory and 4 compute slices and its own profiles", "[core][mig]") {
  const auto& g = geo("A30");
  CHECK(g.memory_slices == 4);
  CHECK(g.compute_slices == 4);
  CHECK(g.profile_names() == "1g.6gb, 1g.6gb+me, 2g.12gb, 2g.12gb+me, 4g.24gb");
  const int g1 = g.find_profile("1g.6gb"), g1me = g.find_profile("1g.6gb+me"), g2 = g.find_profile("2g.12gb"),
            g2me = g.find_profile("2g.12gb+me"), g4 = g.find_profile("4g.24gb");
  CHECK(fits(g, {g4}));
  CHECK(fits(g, {g2, g2}));
  CHECK(fits(g, {g1, g1, g1, g1}));
  CHECK_FALSE(fits(g, {g1, g1, g1, g1, g1}));
  CHECK_FALSE(fits(g, {g2, g2, g2}));
  CHECK_FALSE(fits(g, {g4, g1}));
  CHECK_FALSE(fits(g, {g1me, g2me}));   // one +me per GPU
  CHECK(fits(g, {g2me, g1, g1}));
}

TEST_CASE("Maximal layouts are legal, maximal and include the zero-waste ones", "[core][mig]") {
  const auto& g = geo("A100-80GB");
  const auto n = names(g);
  const auto layouts = mig_maximal_layouts(g);
  REQUIRE(layouts.size() > 10);
  for (const auto& l : layouts) {
    MigLayout gpu;
    for (const auto& inst : l) {
      REQUIRE(gpu.can_place(g, inst.profile, inst.start));
      gpu.place(g, inst.profile, inst.start);
    }
    for (std::size_t p = 0; p < g.profiles.size(); ++p) CHECK(gpu.free_starts(g, static_cast<int>(p)).empty());
  }
  auto has = [&](std::vector<MigInstance> want) { return std::find(layouts.begin(), layouts.end(), want) != layouts.end(); };
  CHECK(has({{n.g7, 0}}));
  CHECK(has({{n.g4, 0}, {n.g3, 4}}));
  CHECK(has({{n.g2, 0}, {n.g2, 2}, {n.g3, 4}}));
  CHECK(has({{n.g1, 0}, {n.g1, 1}, {n.g1, 2}, {n.g1, 3}, {n.g1, 4}, {n.g1, 5}, {n.g1, 6}}));
  CHECK_FALSE(has({{n.g4, 0}}));   // not maximal: a 3g still fits
  CHECK(std::is_sorted(layouts.begin(), layouts.end()));
}

TEST_CASE("A MIG profile that the GPU does not have is an error naming the model and its profiles", "[core][mig]") {
  const auto& g = geo("A100-40GB");
  try {
    (void)g.require_profile("3g.40gb", {"scenario.json", 0, "/jobs/0/requests"}, "A100-40GB");
    FAIL("no error");
  } catch (const CatalogError& e) {
    CHECK(e.id() == "gpusched.catalog_error.403");
    CHECK(e.where().file == "scenario.json");
    CHECK(std::string(e.what()).find("3g.40gb") != std::string::npos);
    CHECK(std::string(e.what()).find("3g.20gb") != std::string::npos);
  }
}

TEST_CASE("A user catalog adds a MIG model without recompiling, and bad geometry is rejected", "[core][mig]") {
  GpuCatalog cat = GpuCatalog::builtin();
  cat.add_json(nlohmann::json::parse(R"([{"name": "Toy-2", "memory_mib": 2048, "mig": {"memory_slices": 2, "compute_slices": 2,
      "profiles": [{"name": "1g.1gb", "compute_slices": 1, "memory_slices": 1, "max_count": 2, "starts": [0, 1]},
                   {"name": "2g.2gb", "compute_slices": 2, "memory_slices": 2, "starts": [0]}]}}])"), "toy.json");
  const auto& toy = *cat[*cat.find("Toy-2")].mig;
  CHECK(mig_fits(toy, std::vector<int>{0, 0}));
  CHECK_FALSE(mig_fits(toy, std::vector<int>{0, 1}));
  CHECK(cat[*cat.find("Toy-2")].mig_capable);
  CHECK_THROWS_AS(cat.add_json(nlohmann::json::parse(R"([{"name": "Bad", "memory_mib": 1, "mig": {"memory_slices": 2,
      "profiles": [{"name": "2g", "compute_slices": 1, "memory_slices": 2, "starts": [1]}]}}])"), "bad.json"), CatalogError);
}

// ---------------------------------------------------------------------------------------------
// The same rules for every MIG-capable model of the catalog (issue 15), not only mig.md's six.

namespace {
/// The A100/H100 -lgipp placement table: 8 memory and 7 compute slices, mig.md's starts.
bool standard_eight_slice(const MigGeometry& g) {
  if (g.memory_slices != 8 || g.compute_slices != 7) return false;
  const auto n = names(g);
  return n.g1 >= 0 && n.g1x2 >= 0 && n.g2 >= 0 && n.g3 >= 0 && n.g4 >= 0 && n.g7 >= 0;
}
std::vector<std::string> mig_models() {
  std::vector<std::string> out;
  for (const auto& m : catalog().models()) {
    if (m.mig) out.push_back(m.name);
  }
  return out;
}
}  // namespace

TEST_CASE("MIG profile engines: the built-in figures of NVIDIA's MIG user guide, unknown elsewhere, and a user catalog's "
          "read back as written", "[core][mig]") {
  const auto& cat = GpuCatalog::builtin();
  auto engines = [&](const char* model, const char* profile) {
    const auto& g = *cat[*cat.find(model)].mig;
    const auto& p = g.profiles[static_cast<std::size_t>(g.find_profile(profile))];
    return std::vector<int>{p.sms, p.copy_engines, p.decoders, p.encoders, p.jpeg_engines, p.ofa_engines};
  };
  // MIG user guide, Supported MIG Profiles ("Hardware Units", "Copy Engines"); SMs from -lgip.
  CHECK(engines("A100-40GB", "1g.5gb") == std::vector<int>{14, 1, 0, 0, 0, 0});
  CHECK(engines("A100-40GB", "1g.5gb+me") == std::vector<int>{14, 1, 1, 0, 1, 1});
  CHECK(engines("A100-80GB", "7g.80gb") == std::vector<int>{98, 7, 5, 0, 1, 1});
  CHECK(engines("H100-80GB", "1g.10gb") == std::vector<int>{16, 1, 1, 0, 1, 0});
  CHECK(engines("H100-80GB", "7g.80gb") == std::vector<int>{132, 8, 7, 0, 7, 1});
  CHECK(engines("H100-NVL", "1g.24gb") == std::vector<int>{26, 1, 1, 0, 1, 0});
  CHECK(engines("H200", "3g.71gb") == std::vector<int>{60, 3, 3, 0, 3, 0});
  // Not sourced: unknown, not guessed from a sibling board.
  CHECK(engines("A800-80GB", "3g.40gb")[1] == -1);
  CHECK(engines("B200", "3g.90gb")[2] == -1);
  // A user catalog's engines survive writing and reading the geometry back.
  nlohmann::json j = *cat[*cat.find("H100-80GB")].mig;
  CHECK(j["profiles"][6]["copy_engines"] == 8);
  CHECK_FALSE(nlohmann::json(*cat[*cat.find("B200")].mig)["profiles"][0].contains("copy_engines"));
  const auto back = mig_geometry_from_json(j, "catalog.json", "/models/0/mig");
  CHECK(back.profiles[6].jpeg_engines == 7);
  j["profiles"][0]["decoders"] = 65;
  CHECK_THROWS_WITH(mig_geometry_from_json(j, "catalog.json", "/models/0/mig"), Catch::Contains("profiles/0/decoders"));
}

TEST_CASE("The MIG user guide's MIG-capable GPUs are MIG models of the catalog", "[core][mig]") {
  for (const char* m : {"A30", "A100-40GB", "A100-80GB", "A800-40GB", "A800-80GB", "H100-80GB", "H100-PCIe", "H100-NVL", "H800",
                        "H800-PCIe", "H20", "H200", "GH200-96GB", "GH200-144GB", "B200", "GB200", "B300", "RTX-PRO-6000-Blackwell-Server"}) {
    INFO(m);
    CHECK(catalog()[catalog().require(m, {})].mig_capable);
    CHECK(catalog()[catalog().require(m, {})].mig.has_value());
  }
  for (const char* m : {"A10", "A10G", "A40", "L4", "L40", "L40S", "RTX-6000-Ada", "MI300X", "MI325X", "T4"}) {
    INFO(m);
    CHECK_FALSE(catalog()[catalog().require(m, {})].mig_capable);
  }
}

TEST_CASE("Every MIG model with the 8-slice placement table obeys mig.md's rules 1-6", "[core][mig]") {
  std::size_t checked = 0;
  for (const auto& model : mig_models()) {
    const auto& g = geo(model);
    if (!standard_eight_slice(g)) continue;
    INFO(model);
    ++checked;
    const auto n = names(g);
    // Starts and counts of mig.md's table.
    CHECK(g.profiles[static_cast<std::size_t>(n.g1)].starts == std::vector<int>{0, 1, 2, 3, 4, 5, 6});
    CHECK(g.profiles[static_cast<std::size_t>(n.g1x2)].starts == std::vector<int>{0, 2, 4, 6});
    CHECK(g.profiles[static_cast<std::size_t>(n.g2)].starts == std::vector<int>{0, 2, 4});
    CHECK(g.profiles[static_cast<std::size_t>(n.g3)].starts == std::vector<int>{0, 4});
    // Rule 1.
    CHECK_FALSE(fits(g, {n.g4, n.g4}));
    CHECK_FALSE(fits(g, {n.g3, n.g3, n.g1}));
    CHECK_FALSE(fits(g, {n.g4, n.g3, n.g1}));
    CHECK(fits(g, {n.g3, n.g3}));
    CHECK_FALSE(fits(g, {n.g3, n.g3, n.g3}));
    if (n.g1me >= 0) {
      CHECK_FALSE(fits(g, {n.g1me, n.g1me}));
      CHECK(fits(g, {n.g1me, n.g1, n.g1}));
    }
    // Rule 2: zero-waste layouts.
    for (const auto& layout : std::vector<std::vector<int>>{{n.g7}, {n.g4, n.g3}, {n.g3, n.g2, n.g2}, {n.g3, n.g2, n.g1, n.g1}}) {
      CHECK(fits(g, layout));
      for (std::size_t p = 0; p < g.profiles.size(); ++p) {
        auto more = layout;
        more.push_back(static_cast<int>(p));
        CHECK_FALSE(fits(g, more));
      }
    }
    // Rule 3.
    MigLayout three2g;
    for (int s : {0, 2, 4}) three2g.place(g, n.g2, s);
    CHECK(three2g.free_starts(g, n.g1) == std::vector<int>{6});
    CHECK(three2g.free_starts(g, n.g2).empty());
    CHECK_FALSE(mig_fits(g, std::vector<int>{n.g1, n.g1}, three2g));
    // Rule 4.
    MigLayout a, b;
    CHECK(mig_create_in_order(g, a, std::vector<int>{n.g1, n.g1, n.g2, n.g3}, MigStartPolicy::kHighestFirst) == 3);
    CHECK(mig_create_in_order(g, b, std::vector<int>{n.g3, n.g1, n.g2, n.g1}, MigStartPolicy::kHighestFirst) == 4);
    // Rule 5.
    MigLayout at0, at6;
    at0.place(g, n.g1, 0);
    at6.place(g, n.g1, 6);
    CHECK_FALSE(mig_fits(g, std::vector<int>{n.g4}, at0));
    CHECK(mig_fits(g, std::vector<int>{n.g4, n.g2}, at6));
    // Rule 6 of the geometry: seven 1g strand slice 7.
    CHECK_FALSE(fits(g, std::vector<int>(8, n.g1)));
  }
  CHECK(checked >= 15);   // the six of mig.md and the new Hopper/Blackwell/A800 models
}

TEST_CASE("Every MIG model's profiles are consistent: counts, whole-GPU profile, memory and SMs", "[core][mig]") {
  for (const auto& model : mig_models()) {
    INFO(model);
    const auto& m = catalog()[catalog().require(model, {})];
    const auto& g = *m.mig;
    REQUIRE_FALSE(g.profiles.empty());
    int whole = -1;
    for (std::size_t i = 0; i < g.profiles.size(); ++i) {
      const auto& p = g.profiles[i];
      INFO(p.name);
      const int pi = static_cast<int>(i);
      // max_count instances fit an empty GPU; one more does not.
      CHECK(fits(g, std::vector<int>(static_cast<std::size_t>(p.max_count), pi)));
      CHECK_FALSE(fits(g, std::vector<int>(static_cast<std::size_t>(p.max_count) + 1, pi)));
      // The name's leading "<n>g" is its compute slices.
      CHECK(p.name.substr(0, p.name.find('g')) == std::to_string(p.compute_slices));
      CHECK(p.memory_mib > 0);
      CHECK(p.memory_mib <= m.memory_mib);
      if (p.compute_slices == g.compute_slices && p.memory_slices == g.memory_slices && !p.media_extensions && whole < 0) whole = pi;
      for (const auto& q : g.profiles) {   // more memory slices never means less memory; more compute never fewer SMs
        if (q.memory_slices > p.memory_slices) CHECK(q.memory_mib >= p.memory_mib);
        // Instances holding disjoint slices never hold more than an instance of all of them
        // (two 4-slice GIs fit in the 8-slice one's memory): estimates included.
        if (q.memory_slices > p.memory_slices && q.memory_slices % p.memory_slices == 0) {
          CHECK(std::int64_t{p.memory_mib} * (q.memory_slices / p.memory_slices) <= q.memory_mib);
        }
        if (q.memory_slices == p.memory_slices && g.lgip_memory) CHECK(q.memory_mib == p.memory_mib);
        if (q.compute_slices > p.compute_slices && q.sms > 0 && p.sms > 0) CHECK(q.sms > p.sms);
      }
      if (p.sms > 0 && m.sms > 0) CHECK(p.sms <= m.sms);
    }
    REQUIRE(whole >= 0);   // a profile that takes the whole GPU
    MigLayout gpu;
    gpu.place(g, whole, 0);
    for (std::size_t p = 0; p < g.profiles.size(); ++p) CHECK(gpu.free_starts(g, static_cast<int>(p)).empty());
    // Maximal layouts are legal and maximal.
    const auto layouts = mig_maximal_layouts(g);
    CHECK_FALSE(layouts.empty());
    for (const auto& l : layouts) {
      MigLayout x;
      for (const auto& inst : l) {
        REQUIRE(x.can_place(g, inst.profile, inst.start));
        x.place(g, inst.profile, inst.start);
      }
      for (std::size_t p = 0; p < g.profiles.size(); ++p) CHECK(x.free_starts(g, static_cast<int>(p)).empty());
    }
  }
}

TEST_CASE("RTX PRO 6000 Blackwell: 12 placement units, four 1g.24gb or two 2g.48gb or one 4g.96gb", "[core][mig]") {
  const auto& g = geo("RTX-PRO-6000-Blackwell-Server");
  CHECK(g.memory_slices == 12);
  CHECK(g.compute_slices == 4);
  const int g1 = g.find_profile("1g.24gb"), g2 = g.find_profile("2g.48gb"), g4 = g.find_profile("4g.96gb");
  REQUIRE((g1 >= 0 && g2 >= 0 && g4 >= 0));
  CHECK(g.profiles[static_cast<std::size_t>(g1)].memory_mib == 24192);
  CHECK(g.profiles[static_cast<std::size_t>(g4)].sms == 188);
  CHECK(fits(g, {g2, g1, g1}));   // the walkthrough's mixed layout: 2g@0, 1g@6, 1g@9
  CHECK_FALSE(fits(g, {g2, g2, g1}));
  MigLayout gpu;
  gpu.place(g, g1, 3);
  CHECK(gpu.free_starts(g, g2) == std::vector<int>{6});   // a 1g at 3 blocks the 2g at 0
  CHECK_FALSE(mig_fits(g, std::vector<int>{g4}, gpu));
}
