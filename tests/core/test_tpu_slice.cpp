// Carving TPU slices out of a pool's host grid (../shared/reference/tpu.md).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <gpusched/tpu.hpp>
#include <gpusched/tpu_slice.hpp>

using namespace gpusched;

namespace {

const TpuGeneration& gen(const std::string& name) { return TpuCatalog::builtin().require(name, {}); }

TpuTopology topo(const TpuGeneration& g, const std::string& t) { return g.require_topology(t, {"test", 0, "topology"}); }

TpuPoolGrid grid_of(const TpuGeneration& g, const std::vector<int>& pool_chips, int chips_per_host = 0) {
  return pool_grid(g, TpuTopology{pool_chips}, chips_per_host, {"test", 0, "pool_topology"});
}

std::vector<std::uint8_t> all_free(const TpuPoolGrid& grid) { return std::vector<std::uint8_t>(grid.host_count(), 1); }

std::vector<std::uint8_t> only_free(const TpuPoolGrid& grid, const std::vector<std::uint32_t>& free_hosts) {
  std::vector<std::uint8_t> mask(grid.host_count(), 0);
  for (auto h : free_hosts) mask[h] = 1;
  return mask;
}

/// Hosts along each dimension of the bounding box of `hosts` when they fill it exactly; empty
/// otherwise (not contiguous, not a box).
std::vector<int> box_of(const TpuPoolGrid& grid, const std::vector<std::uint32_t>& hosts) {
  if (hosts.empty()) return {};
  std::vector<int> lo = grid.coords_of(hosts.front()), hi = lo;
  for (auto h : hosts) {
    const auto c = grid.coords_of(h);
    for (std::size_t i = 0; i < c.size(); ++i) {
      lo[i] = std::min(lo[i], c[i]);
      hi[i] = std::max(hi[i], c[i]);
    }
  }
  std::vector<int> extent(lo.size());
  std::size_t volume = 1;
  for (std::size_t i = 0; i < lo.size(); ++i) {
    extent[i] = hi[i] - lo[i] + 1;
    volume *= static_cast<std::size_t>(extent[i]);
  }
  auto sorted = hosts;
  std::sort(sorted.begin(), sorted.end());
  const bool distinct = std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end();
  return volume == hosts.size() && distinct ? extent : std::vector<int>{};
}

/// Every box of `shape` inside `grid`, as its origin coordinates.
std::vector<std::vector<int>> origins(const TpuPoolGrid& grid, const std::vector<int>& shape) {
  std::vector<std::vector<int>> out;
  for (std::uint32_t h = 0; h < grid.host_count(); ++h) {
    const auto c = grid.coords_of(h);
    bool fits = true;
    for (std::size_t i = 0; i < c.size(); ++i) fits = fits && c[i] + shape[i] <= grid.hosts[i];
    if (fits) out.push_back(c);
  }
  return out;
}

/// Hosts of the box at `origin` with extent `shape`, ascending.
std::vector<std::uint32_t> box_hosts(const TpuPoolGrid& grid, const std::vector<int>& origin,
                                     const std::vector<int>& shape) {
  std::vector<std::uint32_t> out;
  for (std::uint32_t h = 0; h < grid.host_count(); ++h) {
    const auto c = grid.coords_of(h);
    bool inside = true;
    for (std::size_t i = 0; i < c.size(); ++i) inside = inside && c[i] >= origin[i] && c[i] < origin[i] + shape[i];
    if (inside) out.push_back(h);
  }
  return out;
}

/// Host faces of a box touching a busy host or the pool's edge, counted host by host.
int brute_contact(const TpuPoolGrid& grid, const std::vector<std::uint8_t>& mask, const std::vector<int>& origin,
                  const std::vector<int>& shape) {
  int touching = 0;
  for (auto h : box_hosts(grid, origin, shape)) {
    const auto c = grid.coords_of(h);
    for (std::size_t a = 0; a < c.size(); ++a) {
      for (int step : {-1, 1}) {
        auto n = c;
        n[a] += step;
        if (n[a] >= origin[a] && n[a] < origin[a] + shape[a]) continue;   // inside the block
        if (n[a] < 0 || n[a] >= grid.hosts[a] || mask[grid.index_of(n)] == 0) ++touching;
      }
    }
  }
  return touching;
}

/// The documented choice, found by trying every orientation (every permutation of the slice's
/// chip dims that divides by the host shape) at every origin and checking every host.
std::optional<std::vector<std::uint32_t>> brute_force(const std::vector<int>& host, const TpuPoolGrid& grid,
                                                      const std::vector<std::uint8_t>& mask, std::vector<int> slice,
                                                      TpuBlockRule rule) {
  std::vector<std::vector<int>> shapes;
  std::sort(slice.begin(), slice.end());
  do {
    std::vector<int> s(slice.size());
    bool divides = true;
    for (std::size_t i = 0; i < slice.size(); ++i) {
      divides = divides && slice[i] % host[i] == 0;
      s[i] = slice[i] / host[i];
    }
    if (divides) shapes.push_back(s);
  } while (std::next_permutation(slice.begin(), slice.end()));
  std::sort(shapes.begin(), shapes.end());   // already distinct: permutations of a sorted multiset
  std::optional<std::vector<std::uint32_t>> best;
  int best_contact = -1;
  std::uint32_t best_origin = 0;
  for (const auto& s : shapes) {
    for (const auto& o : origins(grid, s)) {
      const auto hosts = box_hosts(grid, o, s);
      if (!std::all_of(hosts.begin(), hosts.end(), [&](std::uint32_t h) { return mask[h] != 0; })) continue;
      const int touching = rule == TpuBlockRule::kMostContact ? brute_contact(grid, mask, o, s) : 0;
      const auto origin = grid.index_of(o);
      if (!best || touching > best_contact || (touching == best_contact && origin < best_origin)) {
        best = hosts;
        best_contact = touching;
        best_origin = origin;
      }
    }
  }
  return best;
}

/// A small deterministic generator (SplitMix64), so the masks are the same everywhere.
struct SplitMix {
  std::uint64_t state;
  std::uint64_t next() {
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
};

/// Every slice topology the generation offers: the listed shapes, plus, with `multiple_of`, every
/// non-decreasing shape of multiples up to max_chips.
std::vector<std::string> every_shape(const TpuGeneration& g) {
  std::vector<std::string> out = g.shapes;
  if (g.multiple_of > 0 && g.dimensions == 3) {
    const int m = g.multiple_of;
    for (int a = m; static_cast<std::int64_t>(a) * a * a <= g.max_chips; a += m) {
      for (int b = a; static_cast<std::int64_t>(a) * b * b <= g.max_chips; b += m) {
        for (int c = b; static_cast<std::int64_t>(a) * b * c <= g.max_chips; c += m) {
          out.push_back(TpuTopology{{a, b, c}}.to_string());
        }
      }
    }
  }
  return out;
}

}  // namespace

TEST_CASE("Host shapes follow the generation and the host size", "[core][tpu][tpu_slice]") {
  CHECK(host_shape(gen("v4"), 4) == std::vector<int>{2, 2, 1});
  CHECK(host_shape(gen("v5p"), 4) == std::vector<int>{2, 2, 1});
  CHECK(host_shape(gen("v5e"), 1) == std::vector<int>{1, 1});
  CHECK(host_shape(gen("v5e"), 4) == std::vector<int>{2, 2});
  CHECK(host_shape(gen("v5e"), 8) == std::vector<int>{2, 4});
  CHECK(host_shape(gen("v5e"), 0) == std::vector<int>{2, 2});   // the default: GKE's 4-chip multi-host VM
  CHECK(host_shape(gen("v6e"), 8) == std::vector<int>{2, 4});
  CHECK(host_shape(gen("v6e"), 4) == std::vector<int>{2, 2});
  CHECK(host_shape(gen("tpu7x"), 1) == std::vector<int>{1, 1, 1});
  CHECK(host_shape(gen("tpu7x"), 4) == std::vector<int>{2, 2, 1});
  for (const auto& g : TpuCatalog::builtin().generations()) {
    for (int per_host : g.chips_per_host) {
      INFO(g.name << " " << per_host << "-chip host");
      const auto shape = host_shape(g, per_host);
      CHECK(static_cast<int>(shape.size()) == g.dimensions);
      CHECK(TpuTopology{shape}.chips() == per_host);
    }
  }
  try {
    (void)host_shape(gen("v4"), 8, {"test", 0, "chips_per_host"});
    FAIL("accepted");
  } catch (const CatalogError& e) {
    CHECK(e.id() == "gpusched.catalog_error.404");
    CHECK(e.where().field == "chips_per_host");
  }
}

TEST_CASE("A pool's chip topology becomes its host grid", "[core][tpu][tpu_slice]") {
  const auto v4 = grid_of(gen("v4"), {4, 4, 4});
  CHECK(v4.hosts == std::vector<int>{2, 2, 4});
  CHECK(v4.host_count() == 16);
  CHECK(grid_of(gen("v5p"), {16, 16, 24}).hosts == std::vector<int>{8, 8, 24});
  CHECK(grid_of(gen("v5e"), {16, 16}, 8).hosts == std::vector<int>{8, 4});
  CHECK(grid_of(gen("v5e"), {16, 16}, 4).hosts == std::vector<int>{8, 8});
  CHECK(grid_of(gen("v5e"), {16, 16}, 1).hosts == std::vector<int>{16, 16});
  // A pool need not be a slice shape (a v5p pod of 8,960 chips is 16x20x28).
  CHECK(grid_of(gen("v5p"), {16, 20, 28}).host_count() == 8960 / 4);
}

TEST_CASE("Host indices are row-major with the last dimension fastest", "[core][tpu][tpu_slice]") {
  const TpuPoolGrid grid{{2, 3, 4}};
  CHECK(grid.index_of(std::vector<int>{0, 0, 1}) == 1);
  CHECK(grid.index_of(std::vector<int>{0, 1, 0}) == 4);
  CHECK(grid.index_of(std::vector<int>{1, 0, 0}) == 12);
  CHECK(grid.index_of(std::vector<int>{1, 2, 3}) == 23);
  CHECK(grid.coords_of(17) == std::vector<int>{1, 1, 1});
  for (std::uint32_t h = 0; h < grid.host_count(); ++h) CHECK(grid.index_of(grid.coords_of(h)) == h);
  const TpuPoolGrid flat{{3, 5}};
  CHECK(flat.index_of(std::vector<int>{2, 1}) == 11);
  CHECK(flat.coords_of(7) == std::vector<int>{1, 2});
}

TEST_CASE("Pool topologies that do not divide into hosts are errors naming the field", "[core][tpu][tpu_slice]") {
  struct Case {
    std::string gen;
    std::vector<int> chips;
    int per_host;
  };
  for (const auto& c : std::vector<Case>{{"v4", {3, 4, 4}, 4},     // 3 is not a multiple of 2
                                         {"v4", {4, 4, 4, 4}, 4},  // 4-D
                                         {"v4", {4, 4}, 4},        // 2-D
                                         {"v4", {4, 0, 4}, 4},     // empty
                                         {"v5e", {4, 6}, 8},       // 6 is not a multiple of 4
                                         {"v5e", {2, 2}, 8},       // smaller than one host
                                         {"v5e", {3, 4}, 4},
                                         {"v4", {4, 4, 4}, 8}}) {  // no 8-chip v4 host
    const auto pool = TpuTopology{c.chips}.to_string();
    INFO(c.gen << " " << pool << " " << c.per_host);
    try {
      (void)grid_of(gen(c.gen), c.chips, c.per_host);
      FAIL("accepted");
    } catch (const CatalogError& e) {
      CHECK(e.id() == "gpusched.catalog_error.404");
      CHECK(e.where().field == "pool_topology");
      CHECK(std::string(e.what()).find("field 'pool_topology'") != std::string::npos);
      if (c.per_host != 8 || c.gen != "v4") CHECK(std::string(e.what()).find("\"" + pool + "\"") != std::string::npos);
    }
  }
}

TEST_CASE("A 2x2x4 v4 slice takes a contiguous block of 4 hosts in an empty 4x4x4 pool", "[core][tpu][tpu_slice]") {
  const auto& v4 = gen("v4");
  const auto grid = grid_of(v4, {4, 4, 4});
  REQUIRE(grid.host_count() == 16);
  const auto block = find_slice_block(v4, 4, grid, all_free(grid), topo(v4, "2x2x4"));
  REQUIRE(block);
  CHECK(block->size() == static_cast<std::size_t>(v4.hosts("2x2x4", {})));
  CHECK(block->size() == 4);
  CHECK(std::is_sorted(block->begin(), block->end()));
  CHECK_FALSE(box_of(grid, *block).empty());
  // Every orientation touches 10 host faces in a corner; the lowest origin and then the smallest
  // block shape (1x1x4) win.
  CHECK(*block == std::vector<std::uint32_t>{0, 1, 2, 3});
  CHECK(*find_slice_block(v4, 4, grid, all_free(grid), topo(v4, "2x2x4"), TpuBlockRule::kFirstFit) ==
        std::vector<std::uint32_t>{0, 1, 2, 3});
}

TEST_CASE("A multi-host slice is never placed on fewer hosts than it needs", "[core][tpu][tpu_slice]") {
  const auto& v4 = gen("v4");
  const auto grid = grid_of(v4, {4, 4, 4});   // 2x2x4 hosts
  const auto slice = topo(v4, "2x2x4");       // 4 hosts
  // Three hosts of a column free, the fourth busy, every other host busy.
  CHECK_FALSE(find_slice_block(v4, 4, grid, only_free(grid, {0, 1, 2}), slice));
  // Three of a 1x2x2 square free.
  CHECK_FALSE(find_slice_block(v4, 4, grid, only_free(grid, {0, 1, 4}), slice));
  // Twelve of 16 hosts free, yet every column and every 1x2x2 / 2x1x2 block has a busy host.
  auto mask = all_free(grid);
  for (std::uint32_t h : {1u, 6u, 10u, 13u}) mask[h] = 0;   // (0,0,1) (0,1,2) (1,0,2) (1,1,1)
  CHECK_FALSE(find_slice_block(v4, 4, grid, mask, slice));
  // Freeing the fourth host of the column gives that block.
  CHECK(*find_slice_block(v4, 4, grid, only_free(grid, {0, 1, 2, 3}), slice) ==
        std::vector<std::uint32_t>{0, 1, 2, 3});
}

TEST_CASE("Free hosts that are not contiguous do not form a block", "[core][tpu][tpu_slice]") {
  const auto& v4 = gen("v4");
  const auto grid = grid_of(v4, {4, 4, 4});   // 2x2x4 hosts
  // Four free hosts, enough in number, in an L, a zig-zag and scattered.
  for (const auto& free_hosts : std::vector<std::vector<std::uint32_t>>{
           {0, 1, 2, 7}, {0, 1, 5, 6}, {0, 5, 10, 15}, {0, 3, 12, 15}}) {
    CHECK_FALSE(find_slice_block(v4, 4, grid, only_free(grid, free_hosts), topo(v4, "2x2x4")));
  }
  // No wrap-around: hosts (0,0,3) and (0,0,0) are not neighbours for a 2-host 2x2x2 slice.
  CHECK_FALSE(find_slice_block(v4, 4, grid, only_free(grid, {0, 3}), topo(v4, "2x2x2")));
  CHECK(*find_slice_block(v4, 4, grid, only_free(grid, {2, 3}), topo(v4, "2x2x2")) ==
        std::vector<std::uint32_t>{2, 3});
}

TEST_CASE("A slice takes a rotated orientation when only that one fits", "[core][tpu][tpu_slice]") {
  const auto& v4 = gen("v4");
  const auto slice = topo(v4, "2x4x4");   // 8 hosts: 1x2x4, 2x1x4 or 2x2x2
  CHECK(slice_block_shapes(v4, 4, slice) ==
        std::vector<std::vector<int>>{{1, 2, 4}, {2, 1, 4}, {2, 2, 2}});
  // A pool wired as 4x2x4 chips (2x1x4 hosts) holds the slice only as 4x2x4.
  const auto narrow = grid_of(v4, {4, 2, 4});
  REQUIRE(narrow.hosts == std::vector<int>{2, 1, 4});
  CHECK(*find_slice_block(v4, 4, narrow, all_free(narrow), slice) ==
        std::vector<std::uint32_t>{0, 1, 2, 3, 4, 5, 6, 7});
  // In a 4x4x4 pool only the hosts of the 4x2x4 (2x1x4-host) orientation at y = 0 are free.
  const auto grid = grid_of(v4, {4, 4, 4});
  const std::vector<std::uint32_t> rotated{0, 1, 2, 3, 8, 9, 10, 11};
  const auto block = find_slice_block(v4, 4, grid, only_free(grid, rotated), slice);
  REQUIRE(block);
  CHECK(*block == rotated);
  CHECK(box_of(grid, *block) == std::vector<int>{2, 1, 4});
  // And only those of the 4x4x2 (2x2x2-host) orientation.
  const std::vector<std::uint32_t> cube{2, 3, 6, 7, 10, 11, 14, 15};
  CHECK(*find_slice_block(v4, 4, grid, only_free(grid, cube), slice) == cube);
}

TEST_CASE("A v5e 4x4 slice spans 4 hosts of 4 chips; 8-chip hosts do not serve it", "[core][tpu][tpu_slice]") {
  const auto& v5e = gen("v5e");
  const auto slice = topo(v5e, "4x4");
  // GKE runs multi-host v5e on ct5lp-hightpu-4t; ct5lp-hightpu-8t is the single-host 2x4 only.
  const auto grid8 = grid_of(v5e, {16, 16}, 8);   // 8x4 hosts of 2x4 chips
  CHECK(slice_block_shapes(v5e, 8, slice).empty());
  CHECK_FALSE(find_slice_block(v5e, 8, grid8, all_free(grid8), slice));
  CHECK_THROWS_AS(v5e.hosts("4x4", {}, 8), CatalogError);
  const auto grid4 = grid_of(v5e, {16, 16}, 4);   // 8x8 hosts of 2x2 chips
  const auto block4 = find_slice_block(v5e, 4, grid4, all_free(grid4), slice);
  REQUIRE(block4);
  CHECK(block4->size() == 4);
  CHECK(block4->size() == static_cast<std::size_t>(v5e.hosts("4x4", {})));
  CHECK(box_of(grid4, *block4) == std::vector<int>{2, 2});
}

TEST_CASE("Sub-host slices are left to the caller as one-host requests", "[core][tpu][tpu_slice]") {
  const auto& v5e = gen("v5e");
  const auto grid = grid_of(v5e, {8, 8}, 8);
  for (const char* t : {"1x1", "2x2"}) {
    INFO(t);
    CHECK(slice_block_shapes(v5e, 8, topo(v5e, t)).empty());
    CHECK_FALSE(find_slice_block(v5e, 8, grid, all_free(grid), topo(v5e, t)));
  }
  CHECK_FALSE(find_slice_block(v5e, 4, grid_of(v5e, {8, 8}, 4), all_free(grid_of(v5e, {8, 8}, 4)), topo(v5e, "1x1")));
  // A whole 8-chip host is a 2x4 slice: one host.
  CHECK(find_slice_block(v5e, 8, grid, all_free(grid), topo(v5e, "2x4"))->size() == 1);
}

TEST_CASE("Every multi-host topology of each generation fits an empty pool with exactly its host count",
          "[core][tpu][tpu_slice]") {
  int checked = 0;
  for (const auto& g : TpuCatalog::builtin().generations()) {
    for (int per_host : g.chips_per_host) {
      const auto host = host_shape(g, per_host);
      const auto& machine = *g.machine_type(per_host);
      for (const auto& name : every_shape(g)) {
        INFO(g.name << " " << name << " on " << per_host << "-chip hosts");
        const auto slice = topo(g, name);
        if (!g.serves(machine, slice)) {
          // Sub-host slices and topologies the machine type does not serve: no block, and hosts() says why.
          CHECK(slice_block_shapes(g, per_host, slice).empty());
          CHECK_THROWS_AS(g.hosts(name, {}, per_host), CatalogError);
          continue;
        }
        CHECK(slice.chips() >= per_host);
        const auto hosts = static_cast<std::size_t>(g.hosts(name, {}, per_host));
        REQUIRE_FALSE(slice_block_shapes(g, per_host, slice).empty());
        // A pool of exactly the slice, one of one more host along every axis, and, where it
        // divides, the slice's axes reversed (only a rotation fits).
        std::vector<std::vector<int>> pools{slice.dims, slice.dims};
        for (std::size_t i = 0; i < host.size(); ++i) pools[1][i] += host[i];
        auto reversed = slice.dims;
        std::reverse(reversed.begin(), reversed.end());
        bool divides = true;
        for (std::size_t i = 0; i < host.size(); ++i) divides = divides && reversed[i] % host[i] == 0;
        if (divides) pools.push_back(reversed);
        for (const auto& chips : pools) {
          INFO("pool " << TpuTopology{chips}.to_string());
          const auto grid = grid_of(g, chips, per_host);
          const auto block = find_slice_block(g, per_host, grid, all_free(grid), slice);
          REQUIRE(block);
          CHECK(block->size() == hosts);
          CHECK(std::is_sorted(block->begin(), block->end()));
          CHECK_FALSE(box_of(grid, *block).empty());
          ++checked;
        }
      }
    }
  }
  CHECK(checked > 100);
}

TEST_CASE("The same input always gives the same block", "[core][tpu][tpu_slice]") {
  const auto& v5p = gen("v5p");
  const auto grid = grid_of(v5p, {16, 16, 24});   // 8x8x24 hosts
  SplitMix rng{42};
  auto mask = all_free(grid);
  for (auto& m : mask) m = rng.next() % 4 != 0 ? 1 : 0;
  const auto copy = mask;
  for (const char* t : {"2x2x2", "2x4x4", "4x4x4"}) {
    INFO(t);
    const auto first = find_slice_block(v5p, 4, grid, mask, topo(v5p, t));
    REQUIRE(first);
    for (int i = 0; i < 3; ++i) CHECK(find_slice_block(v5p, 4, grid, copy, topo(v5p, t)) == first);
  }
}

TEST_CASE("Most contact packs a slice against busy hosts where first fit takes the lowest origin",
          "[core][tpu][tpu_slice]") {
  const auto& v4 = gen("v4");
  const auto grid = grid_of(v4, {4, 4, 4});   // 2x2x4 hosts
  const auto slice = topo(v4, "2x2x2");       // 2 hosts along the last axis
  auto mask = all_free(grid);
  mask[0] = mask[1] = 0;                      // a 2x2x2 slice already at (0,0,0..1)
  // (0,0,2..3) touches 6 faces; (0,1,0..1) lies against the busy pair and touches 7.
  CHECK(*find_slice_block(v4, 4, grid, mask, slice) == std::vector<std::uint32_t>{4, 5});
  CHECK(*find_slice_block(v4, 4, grid, mask, slice, TpuBlockRule::kFirstFit) == std::vector<std::uint32_t>{2, 3});
}

TEST_CASE("Random free masks: blocks are free, contiguous and whole, and none is missed", "[core][tpu][tpu_slice]") {
  struct Pool {
    std::string gen;
    std::vector<int> chips;
    int per_host;
    std::vector<std::string> slices;
  };
  const std::vector<Pool> pools{{"v4", {4, 4, 4}, 4, {"2x2x1", "2x2x2", "2x2x4", "2x4x4", "4x4x4"}},
                                {"v5e", {8, 8}, 4, {"2x2", "2x4", "4x4", "4x8", "8x8"}},
                                {"v5e", {8, 16}, 8, {"2x4"}},
                                {"v6e", {8, 16}, 4, {"2x2", "2x4", "4x4", "4x8", "8x16"}},
                                {"tpu7x", {4, 4, 8}, 4, {"2x2x1", "2x2x2", "2x2x4", "2x4x4", "4x4x4"}}};
  SplitMix rng{2024};
  int found = 0, none = 0;
  for (const auto& p : pools) {
    const auto& g = gen(p.gen);
    const auto host = host_shape(g, p.per_host);
    const auto grid = grid_of(g, p.chips, p.per_host);
    for (int trial = 0; trial < 400; ++trial) {
      std::vector<std::uint8_t> mask(grid.host_count());
      const auto busy_in_8 = rng.next() % 8;   // 0/8 .. 7/8 of the hosts busy
      for (auto& m : mask) m = rng.next() % 8 >= busy_in_8 ? 1 : 0;
      for (const auto& name : p.slices) {
        const auto slice = topo(g, name);
        for (auto rule : {TpuBlockRule::kMostContact, TpuBlockRule::kFirstFit}) {
          INFO(p.gen << " pool " << TpuTopology{p.chips}.to_string() << " slice " << name << " trial " << trial
                     << " rule " << static_cast<int>(rule));
          const auto block = find_slice_block(g, p.per_host, grid, mask, slice, rule);
          const auto expected = brute_force(host, grid, mask, slice.dims, rule);
          REQUIRE(block.has_value() == expected.has_value());
          if (!block) {
            ++none;
            continue;
          }
          ++found;
          CHECK(block->size() == static_cast<std::size_t>(g.hosts(name, {}, p.per_host)));
          CHECK(std::all_of(block->begin(), block->end(), [&](std::uint32_t h) { return mask[h] != 0; }));
          CHECK(std::is_sorted(block->begin(), block->end()));
          const auto box = box_of(grid, *block);
          REQUIRE_FALSE(box.empty());
          // The box is the slice in some orientation.
          std::vector<int> chips(box.size());
          for (std::size_t i = 0; i < box.size(); ++i) chips[i] = box[i] * host[i];
          auto a = chips, b = slice.dims;
          std::sort(a.begin(), a.end());
          std::sort(b.begin(), b.end());
          CHECK(a == b);
          CHECK(*block == *expected);
        }
      }
    }
  }
  CHECK(found > 1000);
  CHECK(none > 1000);
}

TEST_CASE("A pre-provisioned pool serves only a slice of exactly its topology", "[core][tpu][tpu_slice]") {
  const auto& v4 = gen("v4");
  CHECK(slice_matches_pool(topo(v4, "2x2x4"), topo(v4, "2x2x4")));
  CHECK_FALSE(slice_matches_pool(topo(v4, "2x2x4"), topo(v4, "2x2x2")));   // smaller: a pool is one slice
  CHECK_FALSE(slice_matches_pool(topo(v4, "4x4x8"), topo(v4, "4x4x4")));
  CHECK_FALSE(slice_matches_pool(TpuTopology{{4, 8, 4}}, topo(v4, "4x4x8")));   // no axis permutation
  const auto& v5e = gen("v5e");
  CHECK(slice_matches_pool(topo(v5e, "4x8"), topo(v5e, "4x8")));
  CHECK_FALSE(slice_matches_pool(topo(v5e, "4x8"), topo(v5e, "8x8")));
}

namespace {
TpuPoolView pool_view(std::string_view name, const std::string& g, const std::string& t, int chips, bool provisioned,
                      std::size_t hosts = 0) {
  const auto& generation = gen(g);
  const auto topology = parse_tpu_topology(t, {});
  if (hosts == 0) hosts = pool_grid(generation, topology, chips, {}).host_count();
  return TpuPoolView{name, &generation, chips, topology, provisioned, hosts};
}
}  // namespace

TEST_CASE("A slice no pool can serve is explained naming the request, every pool and why", "[core][tpu][tpu_slice]") {
  const auto& v5e = gen("v5e");
  const auto s4x4 = topo(v5e, "4x4");
  const std::string head = "no TPU pool can serve a v5e (tpu-v5-lite-podslice) 4x4 slice as 4 nodes x google.com/tpu: 4";
  SECTION("no TPU pools at all") {
    CHECK(explain_unservable_slice({}, v5e, 4, s4x4) == head + "; the cluster has no TPU pools");
  }
  SECTION("each reason a pool can give") {
    const std::vector<TpuPoolView> pools{
        pool_view("v4-pool", "v4", "4x4x4", 4, false),
        pool_view("small", "v5e", "2x4", 4, true),
        pool_view("carved", "v5e", "4x2", 4, false),
        pool_view("eights", "v5e", "2x4", 8, true),
        pool_view("short", "v5e", "4x4", 4, true, 3),
    };
    const auto text = explain_unservable_slice(pools, v5e, 4, s4x4);
    INFO(text);
    CHECK_THAT(text, Catch::StartsWith(head + "; pools: "));
    CHECK_THAT(text, Catch::Contains("\"v4-pool\" (v4 4x4x4 carved, 16 nodes x 4 chips): other generation"));
    CHECK_THAT(text, Catch::Contains("\"small\" (v5e 2x4, 2 nodes x 4 chips): a provisioned 2x4 slice"));
    CHECK_THAT(text, Catch::Contains("\"carved\" (v5e 4x2 carved, 2 nodes x 4 chips): too small"));
    CHECK_THAT(text, Catch::Contains("\"eights\" (v5e 2x4, 1 nodes x 8 chips): 8-chip hosts, the pods ask google.com/tpu: 4"));
    CHECK_THAT(text, Catch::Contains("\"short\" (v5e 4x4, 3 nodes x 4 chips): only 3 nodes"));
  }
  SECTION("a request on a host size no machine type serves says what GKE runs instead") {
    const std::vector<TpuPoolView> pools{pool_view("eights", "v5e", "16x16", 8, false)};
    const auto text = explain_unservable_slice(pools, v5e, 8, s4x4);
    INFO(text);
    CHECK_THAT(text, Catch::Contains("4x4 slice as 2 nodes x google.com/tpu: 8"));
    CHECK_THAT(text, Catch::Contains("no v5e machine type has 8 chips and serves 4x4 (GKE runs 4x4 on ct5lp-hightpu-4t: 4 nodes x google.com/tpu: 4)"));
    CHECK_THAT(text, Catch::Contains("\"eights\" (v5e 16x16 carved, 32 nodes x 8 chips): ct5lp-hightpu-8t hosts do not serve 4x4"));
  }
  SECTION("a pool that could serve it once free gives no explanation") {
    const std::vector<TpuPoolView> ok{pool_view("v4-pool", "v4", "4x4x4", 4, false), pool_view("right", "v5e", "4x4", 4, true)};
    CHECK(explain_unservable_slice(ok, v5e, 4, s4x4).empty());
    const std::vector<TpuPoolView> carved{pool_view("big", "v5e", "16x16", 4, false)};
    CHECK(explain_unservable_slice(carved, v5e, 4, s4x4).empty());
    CHECK(explain_unservable_slice(carved, v5e, 4, topo(v5e, "16x16")).empty());
  }
  SECTION("at most 8 pools are named") {
    std::vector<TpuPoolView> many;
    for (int i = 0; i < 10; ++i) many.push_back(pool_view("p", "v4", "2x2x4", 4, true));
    const auto text = explain_unservable_slice(many, v5e, 4, s4x4);
    CHECK_THAT(text, Catch::EndsWith("; and 2 more pools"));
  }
}

TEST_CASE("A v5p 2x2x4 slice is 4 hosts of 4 chips carved from a pool or as its own pool", "[core][tpu][tpu_slice]") {
  const auto& v5p = gen("v5p");
  const auto slice = topo(v5p, "2x2x4");
  CHECK(v5p.hosts("2x2x4", {}) == 4);
  const auto grid = grid_of(v5p, {4, 4, 4});
  const auto block = find_slice_block(v5p, 4, grid, all_free(grid), slice);
  REQUIRE(block);
  CHECK(block->size() == 4);
  const auto own = grid_of(v5p, {2, 2, 4});
  CHECK(find_slice_block(v5p, 4, own, all_free(own), slice)->size() == 4);
  const std::vector<TpuPoolView> pools{pool_view("p", "v5p", "2x2x4", 4, true)};
  CHECK(explain_unservable_slice(pools, v5p, 4, slice).empty());
}
