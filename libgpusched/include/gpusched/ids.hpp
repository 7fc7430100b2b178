#pragma once
/// Strong ids: a NodeId cannot be passed where a JobId is expected.
#include <compare>
#include <cstdint>
#include <functional>
#include <limits>

namespace gpusched {

/// A dense index wrapped in a type of its own. Example: `NodeId n{3}; nodes[n.value]`.
template <class Tag, class Rep = std::uint32_t>
struct StrongId {
  using rep_type = Rep;
  Rep value = std::numeric_limits<Rep>::max();

  constexpr StrongId() = default;
  constexpr explicit StrongId(Rep v) : value(v) {}
  static constexpr StrongId invalid() { return StrongId{}; }
  [[nodiscard]] constexpr bool valid() const { return value != std::numeric_limits<Rep>::max(); }
  constexpr auto operator<=>(const StrongId&) const = default;
};

using NodeId = StrongId<struct NodeTag>;          ///< index into ClusterState's nodes
using GpuId = StrongId<struct GpuTag>;            ///< cluster-wide flat GPU index
using JobId = StrongId<struct JobTag>;            ///< index into the workload
using GpuModelId = StrongId<struct GpuModelTag, std::uint16_t>;  ///< index into a GpuCatalog
using ResourceId = StrongId<struct ResourceTag, std::uint16_t>;  ///< interned extended resource

}  // namespace gpusched

template <class Tag, class Rep>
struct std::hash<gpusched::StrongId<Tag, Rep>> {
  std::size_t operator()(const gpusched::StrongId<Tag, Rep>& id) const noexcept {
    return std::hash<Rep>{}(id.value);
  }
};
