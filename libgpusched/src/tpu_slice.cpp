#include <gpusched/tpu_slice.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <numeric>
#include <string>

#include <gpusched/assert.hpp>

namespace gpusched {
namespace {

std::string dims_string(const std::vector<int>& dims) { return TpuTopology{dims}.to_string(); }

int resolve_chips_per_host(const TpuGeneration& g, int chips_per_host) {
  return chips_per_host == 0 ? g.default_chips_per_host : chips_per_host;
}

/// A box of the grid, padded to 3 dimensions with extent 1.
using Dims3 = std::array<int, 3>;

Dims3 pad3(const std::vector<int>& v) {
  Dims3 out{1, 1, 1};
  for (std::size_t i = 0; i < v.size() && i < 3; ++i) out[i] = v[i];
  return out;
}

/// Row-major index (last dimension fastest) of host (x, y, z) in a grid of extents `n`.
std::uint32_t host_index(const Dims3& n, int x, int y, int z) {
  const auto index = (static_cast<std::uint64_t>(x) * static_cast<std::uint64_t>(n[1]) + static_cast<std::uint64_t>(y)) *
                         static_cast<std::uint64_t>(n[2]) +
                     static_cast<std::uint64_t>(z);
  return static_cast<std::uint32_t>(index);
}

/// Inclusive-exclusive 3-D prefix sums of the free mask: free hosts in [lo, hi) in O(1).
class FreeCounts {
 public:
  FreeCounts(const Dims3& n, std::span<const std::uint8_t> host_free)
      : s1_(static_cast<std::size_t>(n[1]) + 1),
        s2_(static_cast<std::size_t>(n[2]) + 1),
        sums_((static_cast<std::size_t>(n[0]) + 1) * s1_ * s2_, 0) {
    std::size_t h = 0;
    for (std::size_t x = 1; x <= static_cast<std::size_t>(n[0]); ++x) {
      for (std::size_t y = 1; y <= static_cast<std::size_t>(n[1]); ++y) {
        for (std::size_t z = 1; z <= static_cast<std::size_t>(n[2]); ++z, ++h) {
          sums_[at(x, y, z)] = (host_free[h] != 0 ? 1 : 0) + sums_[at(x - 1, y, z)] + sums_[at(x, y - 1, z)] +
                               sums_[at(x, y, z - 1)] - sums_[at(x - 1, y - 1, z)] - sums_[at(x - 1, y, z - 1)] -
                               sums_[at(x, y - 1, z - 1)] + sums_[at(x - 1, y - 1, z - 1)];
        }
      }
    }
  }

  /// Free hosts in the box [lo, hi) (exclusive upper corner).
  [[nodiscard]] int count(const Dims3& lo, const Dims3& hi) const {
    const auto x0 = static_cast<std::size_t>(lo[0]), y0 = static_cast<std::size_t>(lo[1]),
               z0 = static_cast<std::size_t>(lo[2]);
    const auto x1 = static_cast<std::size_t>(hi[0]), y1 = static_cast<std::size_t>(hi[1]),
               z1 = static_cast<std::size_t>(hi[2]);
    return sums_[at(x1, y1, z1)] - sums_[at(x0, y1, z1)] - sums_[at(x1, y0, z1)] - sums_[at(x1, y1, z0)] +
           sums_[at(x0, y0, z1)] + sums_[at(x0, y1, z0)] + sums_[at(x1, y0, z0)] - sums_[at(x0, y0, z0)];
  }

 private:
  [[nodiscard]] std::size_t at(std::size_t x, std::size_t y, std::size_t z) const { return (x * s1_ + y) * s2_ + z; }

  std::size_t s1_;
  std::size_t s2_;
  std::vector<int> sums_;
};

/// Host faces of the block at `origin` with extent `block` that touch a busy host or the pool's
/// edge, over the first `dims` axes.
int contact(const FreeCounts& free, const Dims3& n, const Dims3& origin, const Dims3& block, std::size_t dims) {
  const int volume = block[0] * block[1] * block[2];
  int touching = 0;
  for (std::size_t a = 0; a < dims; ++a) {
    const int face = volume / block[a];
    // Low side: the slab just below the block along axis a.
    if (origin[a] == 0) {
      touching += face;
    } else {
      Dims3 lo = origin, hi{origin[0] + block[0], origin[1] + block[1], origin[2] + block[2]};
      lo[a] = origin[a] - 1;
      hi[a] = origin[a];
      touching += face - free.count(lo, hi);
    }
    // High side: the slab just above it.
    if (origin[a] + block[a] == n[a]) {
      touching += face;
    } else {
      Dims3 lo = origin, hi{origin[0] + block[0], origin[1] + block[1], origin[2] + block[2]};
      lo[a] = origin[a] + block[a];
      hi[a] = lo[a] + 1;
      touching += face - free.count(lo, hi);
    }
  }
  return touching;
}

}  // namespace

std::vector<int> host_shape(const TpuGeneration& generation, int chips_per_host, const Location& where) {
  // The host shapes are catalog data (data/tpu_generations.json, machine_types[].host_shape).
  const int per_host = resolve_chips_per_host(generation, chips_per_host);
  if (const auto* m = generation.machine_type(per_host)) return m->host_shape;
  std::string sizes;
  for (int c : generation.chips_per_host) sizes += (sizes.empty() ? "" : ", ") + std::to_string(c);
  throw_error(ErrorCode::kCatalogBadTopology, where,
              "TPU " + generation.name + " has no " + std::to_string(per_host) + "-chip host shape (hosts have " +
                  sizes + " chips)");
}

std::size_t TpuPoolGrid::host_count() const {
  std::size_t n = 1;
  for (int h : hosts) n *= static_cast<std::size_t>(h);
  return n;
}

std::uint32_t TpuPoolGrid::index_of(std::span<const int> coords) const {
  GPUSCHED_ASSERT(coords.size() == hosts.size(), "one coordinate per grid dimension");
  std::uint32_t index = 0;
  for (std::size_t i = 0; i < hosts.size(); ++i) {
    GPUSCHED_ASSERT(coords[i] >= 0 && coords[i] < hosts[i], "host coordinate inside the grid");
    index = index * static_cast<std::uint32_t>(hosts[i]) + static_cast<std::uint32_t>(coords[i]);
  }
  return index;
}

std::vector<int> TpuPoolGrid::coords_of(std::uint32_t index) const {
  GPUSCHED_ASSERT(index < host_count(), "host index inside the grid");
  std::vector<int> coords(hosts.size(), 0);
  for (std::size_t i = hosts.size(); i-- > 0;) {
    const auto extent = static_cast<std::uint32_t>(hosts[i]);
    coords[i] = static_cast<int>(index % extent);
    index /= extent;
  }
  return coords;
}

TpuPoolGrid pool_grid(const TpuGeneration& generation, const TpuTopology& pool_chips, int chips_per_host,
                      const Location& where) {
  const auto shape = host_shape(generation, chips_per_host, where);
  const int per_host = resolve_chips_per_host(generation, chips_per_host);
  const std::string pool = pool_chips.to_string();
  auto bad = [&](const std::string& why) {
    throw_error(ErrorCode::kCatalogBadTopology, where,
                "TPU " + generation.name + " pool topology \"" + pool + "\" does not divide into " +
                    std::to_string(per_host) + "-chip hosts of " + dims_string(shape) + " chips: " + why);
  };
  if (pool_chips.dims.size() != shape.size() || shape.size() > 3) {
    bad("it must have " + std::to_string(shape.size()) + " dimensions");
  }
  TpuPoolGrid grid;
  std::uint64_t total = 1;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    const int d = pool_chips.dims[i];
    if (d < 1) bad("dimension " + std::to_string(i + 1) + " is " + std::to_string(d));
    if (d % shape[i] != 0) {
      bad("dimension " + std::to_string(i + 1) + " (" + std::to_string(d) + ") is not a multiple of " +
          std::to_string(shape[i]));
    }
    grid.hosts.push_back(d / shape[i]);
    total *= static_cast<std::uint64_t>(d / shape[i]);
    if (total > static_cast<std::uint64_t>(std::numeric_limits<std::int32_t>::max())) bad("more than 2^31 - 1 hosts");
  }
  return grid;
}

std::vector<std::vector<int>> slice_block_shapes(const TpuGeneration& generation, int chips_per_host,
                                                 const TpuTopology& slice) {
  const auto shape = host_shape(generation, chips_per_host);
  const int per_host = resolve_chips_per_host(generation, chips_per_host);
  std::vector<std::vector<int>> out;
  if (slice.dims.size() != shape.size() || slice.chips() < per_host) return out;
  // A machine type that lists its topologies serves only those (GKE: v5e/v6e 8-chip VMs, 2x4 only).
  const auto* machine = generation.machine_type(per_host);
  if (machine != nullptr && !machine->topologies.empty() && !generation.serves(*machine, slice)) return out;
  std::vector<std::size_t> axes(shape.size());
  std::iota(axes.begin(), axes.end(), std::size_t{0});
  do {
    std::vector<int> block(shape.size());
    bool divides = true;
    for (std::size_t i = 0; i < shape.size() && divides; ++i) {
      const int d = slice.dims[axes[i]];
      divides = d > 0 && d % shape[i] == 0;
      if (divides) block[i] = d / shape[i];
    }
    if (divides) out.push_back(std::move(block));
  } while (std::next_permutation(axes.begin(), axes.end()));
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::optional<std::vector<std::uint32_t>> find_slice_block(const TpuGeneration& generation, int chips_per_host,
                                                           const TpuPoolGrid& grid,
                                                           std::span<const std::uint8_t> host_free,
                                                           const TpuTopology& slice, TpuBlockRule rule) {
  const auto dims = grid.hosts.size();
  GPUSCHED_ASSERT(dims == static_cast<std::size_t>(generation.dimensions) && dims <= 3,
                  "pool grid has the generation's dimensions");
  GPUSCHED_ASSERT(host_free.size() == grid.host_count(), "one free flag per pool host");
  const auto shapes = slice_block_shapes(generation, chips_per_host, slice);
  if (shapes.empty()) return std::nullopt;

  const Dims3 n = pad3(grid.hosts);
  const FreeCounts free(n, host_free);

  // Best candidate so far, compared by (-contact, origin index, orientation index) ascending;
  // under kFirstFit contact is always 0.
  bool found = false;
  int best_contact = 0;
  std::uint32_t best_origin_index = 0;
  std::size_t best_shape = 0;
  Dims3 best_origin{0, 0, 0};

  for (std::size_t s = 0; s < shapes.size(); ++s) {
    const Dims3 b = pad3(shapes[s]);
    if (b[0] > n[0] || b[1] > n[1] || b[2] > n[2]) continue;
    const int volume = b[0] * b[1] * b[2];
    Dims3 o{0, 0, 0};
    for (o[0] = 0; o[0] + b[0] <= n[0]; ++o[0]) {
      for (o[1] = 0; o[1] + b[1] <= n[1]; ++o[1]) {
        for (o[2] = 0; o[2] + b[2] <= n[2]; ++o[2]) {
          if (free.count(o, {o[0] + b[0], o[1] + b[1], o[2] + b[2]}) != volume) continue;
          const std::uint32_t origin_index = host_index(n, o[0], o[1], o[2]);
          const int touching = rule == TpuBlockRule::kMostContact ? contact(free, n, o, b, dims) : 0;
          // Shapes are visited in ascending order, so among equals the first one seen wins.
          const bool better = !found || touching > best_contact ||
                              (touching == best_contact && origin_index < best_origin_index);
          if (better) {
            found = true;
            best_contact = touching;
            best_origin_index = origin_index;
            best_shape = s;
            best_origin = o;
          }
        }
      }
    }
  }
  if (!found) return std::nullopt;

  const Dims3 b = pad3(shapes[best_shape]);
  std::vector<std::uint32_t> hosts;
  hosts.reserve(static_cast<std::size_t>(b[0]) * static_cast<std::size_t>(b[1]) * static_cast<std::size_t>(b[2]));
  for (int x = best_origin[0]; x < best_origin[0] + b[0]; ++x) {
    for (int y = best_origin[1]; y < best_origin[1] + b[1]; ++y) {
      for (int z = best_origin[2]; z < best_origin[2] + b[2]; ++z) {
        hosts.push_back(host_index(n, x, y, z));
      }
    }
  }
  return hosts;
}

bool slice_matches_pool(const TpuTopology& pool, const TpuTopology& slice) { return pool.dims == slice.dims; }

std::string explain_unservable_slice(std::span<const TpuPoolView> pools, const TpuGeneration& generation,
                                     int chips_per_host, const TpuTopology& slice) {
  const std::string topo = slice.to_string();
  std::string out = "no TPU pool can serve a " + generation.name + " (" + generation.accelerator_label + ") " + topo + " slice";
  if (chips_per_host > 0 && slice.chips() % chips_per_host == 0) {
    out += " as " + std::to_string(slice.chips() / chips_per_host) + " nodes x google.com/tpu: " + std::to_string(chips_per_host);
  }
  // The request itself: does any machine type of this size serve the topology?
  const auto* wanted = generation.machine_for(slice, chips_per_host);
  if (wanted == nullptr) {
    const auto* best = generation.machine_for(slice, 0);
    out += "; no " + generation.name + " machine type has " + std::to_string(chips_per_host) + " chips and serves " + topo;
    if (best != nullptr) {
      out += " (GKE runs " + topo + " on " + best->name + ": " + std::to_string(slice.chips() / best->chips) +
             " nodes x google.com/tpu: " + std::to_string(best->chips) + ")";
    }
    out += "; machine types: " + generation.machine_types_text();
  }
  if (pools.empty()) return out + "; the cluster has no TPU pools";
  bool servable = false;
  std::string listed;
  std::size_t named = 0;
  for (const auto& pool : pools) {
    std::string why;
    const auto* g = pool.generation;
    const auto* machine = g != nullptr ? g->machine_type(pool.chips_per_host) : nullptr;
    if (g == nullptr || g->name != generation.name) {
      why = "other generation";
    } else if (pool.chips_per_host != chips_per_host) {
      why = std::to_string(pool.chips_per_host) + "-chip hosts, the pods ask google.com/tpu: " + std::to_string(chips_per_host);
    } else if (pool.provisioned && !slice_matches_pool(pool.topology, slice)) {
      why = "a provisioned " + pool.topology.to_string() + " slice (GKE matches the topology label exactly)";
    } else if (machine != nullptr && !g->serves(*machine, slice)) {
      why = machine->name + " hosts do not serve " + topo;
    } else if (!pool.provisioned) {
      bool fits = false;
      try {
        const auto grid = pool_grid(*g, pool.topology, pool.chips_per_host, {});
        for (const auto& block : slice_block_shapes(*g, pool.chips_per_host, slice)) {
          bool inside = block.size() == grid.hosts.size();
          for (std::size_t i = 0; i < block.size() && inside; ++i) inside = block[i] <= grid.hosts[i];
          fits = fits || inside;
        }
      } catch (const CatalogError&) {
        fits = false;
      }
      if (!fits) why = "too small: no " + topo + " block fits in " + pool.topology.to_string();
    }
    if (why.empty() && pool.hosts < static_cast<std::size_t>(std::max<std::int64_t>(1, slice.chips() / std::max(1, chips_per_host)))) {
      why = "only " + std::to_string(pool.hosts) + " nodes";
    }
    if (why.empty()) servable = true;
    if (named < 8) {
      listed += std::string(named == 0 ? "" : "; ") + "\"" + std::string(pool.name) + "\" (" +
                (g != nullptr ? g->name : std::string("?")) + " " + pool.topology.to_string() +
                (pool.provisioned ? "" : " carved") + ", " + std::to_string(pool.hosts) + " nodes x " +
                std::to_string(pool.chips_per_host) + " chips): " + (why.empty() ? "could serve it" : why);
    }
    ++named;
  }
  if (servable && wanted != nullptr) return {};
  if (named > 8) listed += "; and " + std::to_string(named - 8) + " more pools";
  return out + "; pools: " + listed;
}

}  // namespace gpusched
