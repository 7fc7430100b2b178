#pragma once
/// Forming TPU slices from the hosts of a pool (../shared/reference/tpu.md, "What the simulator
/// must answer"): carving a slice dynamically as a contiguous block of the pool's physical host
/// grid, or matching it to a pre-provisioned node pool of exactly its topology (GKE-style).
///
/// A host of `chips_per_host` chips covers a fixed box of chips (its host shape, e.g. 2x2x1 for
/// v4), so a pool whose physical chip topology is 4x4x4 is a 2x2x4 grid of hosts, and a 2x2x4
/// slice is a 1x1x4 (or, rotated, 1x2x2 / 2x1x2) block of hosts in it.
///
/// Host numbering: row-major with the LAST dimension fastest, like a C array
/// `hosts[n0][n1][n2]`: index = (c0 * n1 + c1) * n2 + c2 (2-D: c0 * n1 + c1).
///
/// Example:
///   const auto& v4 = TpuCatalog::builtin().require("v4", {});
///   const auto grid = pool_grid(v4, v4.require_topology("4x4x4", {}), 4, {"pools.json", 0, "topology"});
///   std::vector<std::uint8_t> free(grid.host_count(), 1);
///   auto block = find_slice_block(v4, 4, grid, free, v4.require_topology("2x2x4", {}));
///   // block == {0, 1, 2, 3}: the 4 hosts of one 1x1x4 column
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <gpusched/error.hpp>
#include <gpusched/tpu.hpp>

namespace gpusched {

/// Chips along each dimension of one host of `chips_per_host` chips (0 = the generation's
/// default), from the catalog's machine types: v4/v5p 4 → 2x2x1; v5e/v6e 1 → 1x1, 4 → 2x2,
/// 8 → 2x4; tpu7x 1 → 1x1x1, 4 → 2x2x1. Throws
/// CatalogError(kCatalogBadTopology) at `where` when the generation offers no such host.
[[nodiscard]] std::vector<int> host_shape(const TpuGeneration& generation, int chips_per_host,
                                          const Location& where = {});

/// The physical host grid of a pool: hosts along each dimension.
struct TpuPoolGrid {
  std::vector<int> hosts;  ///< hosts along each dimension, e.g. {2, 2, 4}

  /// Product of `hosts`. O(dimensions).
  [[nodiscard]] std::size_t host_count() const;
  /// Pool-local index of the host at `coords` (row-major, last dimension fastest).
  /// Precondition: one coordinate per dimension, each in [0, hosts[i]). O(dimensions).
  [[nodiscard]] std::uint32_t index_of(std::span<const int> coords) const;
  /// Coordinates of the host `index` (inverse of index_of). Precondition: index < host_count().
  [[nodiscard]] std::vector<int> coords_of(std::uint32_t index) const;
};

/// The host grid of a pool whose physical chip topology is `pool_chips` (e.g. v4 4x4x4 with
/// 4-chip hosts → {2, 2, 4}). The pool's axes are taken as given (no rotation) and need not be a
/// slice shape the generation offers. Throws CatalogError(kCatalogBadTopology) at `where` when the
/// pool has the wrong number of dimensions, a dimension < 1, a dimension that is not a multiple
/// of the host shape's, more than 2^31 - 1 hosts, or an unknown host size.
[[nodiscard]] TpuPoolGrid pool_grid(const TpuGeneration& generation, const TpuTopology& pool_chips,
                                    int chips_per_host, const Location& where);

/// The distinct host-block shapes (hosts per dimension) a slice of `slice` can take: every
/// permutation of the slice's axes whose chip dimensions are multiples of the host shape's,
/// divided by it; sorted lexicographically ascending. Empty for a sub-host slice (fewer chips
/// than one host, e.g. v5e 2x2 on 8-chip hosts), for a slice no permutation divides, for a
/// slice with the wrong number of dimensions, and for a slice the host's machine type does not
/// serve (v5e/v6e 8-chip hosts serve only 2x4). Throws as host_shape() for an unknown host size.
[[nodiscard]] std::vector<std::vector<int>> slice_block_shapes(const TpuGeneration& generation, int chips_per_host,
                                                               const TpuTopology& slice);

/// How find_slice_block() chooses among the free blocks that fit.
enum class TpuBlockRule {
  /// Most contact (default): the block whose faces touch the most busy hosts and pool edges
  /// (counted per host face), a cheap proxy for keeping the remaining free region in one piece;
  /// ties go to the lowest origin index, then the lexicographically smallest block shape.
  kMostContact,
  /// First fit: the lowest origin index, then the lexicographically smallest block shape.
  kFirstFit,
};

/// Hosts (pool-local indices, ascending) of a free, contiguous, axis-aligned block of `grid` that
/// forms `slice` in one of slice_block_shapes()'s orientations, chosen by `rule`; nullopt when no
/// such block is all free. A slice is never placed partially. No wrap-around: a block never
/// crosses a pool edge, even where the hardware wires the pool into a torus. `host_free[i]` != 0
/// means host i is free. Sub-host slices (fewer chips than one host) always give nullopt: the
/// caller places them as a one-host request. "Origin" is the block's lowest corner.
/// Preconditions: grid.hosts.size() == generation.dimensions <= 3 and
/// host_free.size() == grid.host_count(). Throws as host_shape() for an unknown host size.
/// Complexity: O(H) for prefix sums over the free mask plus O(R * H) candidate blocks checked in
/// O(1) each (H hosts, R <= 6 orientations); a 16x16x24 host grid takes well under a millisecond.
[[nodiscard]] std::optional<std::vector<std::uint32_t>> find_slice_block(
    const TpuGeneration& generation, int chips_per_host, const TpuPoolGrid& grid, std::span<const std::uint8_t> host_free,
    const TpuTopology& slice, TpuBlockRule rule = TpuBlockRule::kMostContact);

/// Whether a pre-provisioned (GKE-style) node pool created for topology `pool` serves a slice of
/// `slice`: the same dimensions in the same order. GKE matches the node label
/// `cloud.google.com/gke-tpu-topology` to the workload's node selector as a string, and a
/// generation's topologies are written in one canonical order, so no axis permutation is
/// allowed (a 4x4x8 pool does not serve 4x8x4, nor a 2x2x4 pool a 2x2x2 slice). O(dimensions).
[[nodiscard]] bool slice_matches_pool(const TpuTopology& pool, const TpuTopology& slice);

/// One TPU node pool as explain_unservable_slice() sees it.
struct TpuPoolView {
  std::string_view name;                     ///< the node pool (cloud.google.com/gke-nodepool)
  const TpuGeneration* generation = nullptr;
  int chips_per_host = 0;
  TpuTopology topology;                      ///< the pool's chip topology
  bool provisioned = true;                   ///< GKE-style pool of one slice shape, or carved
  std::size_t hosts = 0;                     ///< nodes present in the pool
};

/// Why no pool of `pools` can ever serve a slice of `slice` on `generation` whose pods ask
/// `chips_per_host` chips each (google.com/tpu), even with every host free; "" when one could
/// (then the slice waits for hosts to free up). The text names the request (generation,
/// accelerator label, topology, nodes x chips), what the generation's machine types serve when
/// none has `chips_per_host` chips for this topology, and each pool with its reason: other
/// generation, other host size, a provisioned pool of another topology, a machine type that does
/// not serve the topology, or a carved pool too small for any orientation. At most 8 pools are
/// named, then a count. Example:
///   no TPU pool can serve a v5e (tpu-v5-lite-podslice) 4x4 slice as 4 nodes x google.com/tpu: 4;
///   pools: "v4" (v4 4x4x4 carved, 16 nodes x 4 chips): other generation
/// O(pools).
[[nodiscard]] std::string explain_unservable_slice(std::span<const TpuPoolView> pools, const TpuGeneration& generation,
                                                   int chips_per_host, const TpuTopology& slice);

}  // namespace gpusched
