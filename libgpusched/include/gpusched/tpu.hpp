#pragma once
/// TPU generations as data (data/tpu_generations.json, embedded): chips per host, the slice
/// topologies each generation offers, and how many hosts a slice spans.
///
/// A topology is "AxB" (2-D) or "AxBxC" (3-D). A generation offers its listed shapes and, when it
/// has `multiple_of`, every shape whose dimensions are all multiples of it (written in
/// non-decreasing order, e.g. 4x4x8) up to `max_chips`. A slice spans
/// ceil(chips / chips_per_host) hosts, all of one host type.
///
/// Example:
///   const auto& v4 = TpuCatalog::builtin().require("v4", {});
///   int hosts = v4.hosts("2x2x4", {});   // 4
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <gpusched/error.hpp>

namespace gpusched {

/// A parsed topology: its dimensions and chip count.
struct TpuTopology {
  std::vector<int> dims;
  [[nodiscard]] std::int64_t chips() const;
  [[nodiscard]] std::string to_string() const;
};

/// Parses "AxB" / "AxBxC" (positive integers) without checking it against a generation (pool
/// topologies may exceed the largest slice). Throws CatalogError(kCatalogBadTopology).
TpuTopology parse_tpu_topology(std::string_view topology, const Location& where);

struct TpuGeneration {
  std::string name;                    ///< "v4", "v5e", "v5p"
  std::string accelerator_label;       ///< cloud.google.com/gke-tpu-accelerator value
  std::vector<int> chips_per_host;     ///< host types offered
  int default_chips_per_host = 4;
  int dimensions = 3;
  std::vector<std::string> shapes;     ///< listed shapes
  int multiple_of = 0;                 ///< 0: only the listed shapes
  std::int64_t max_chips = 0;

  /// Parses and checks `topology` for this generation; throws CatalogError(kCatalogBadTopology)
  /// naming the shape and the allowed ones.
  [[nodiscard]] TpuTopology require_topology(std::string_view topology, const Location& where) const;
  /// Hosts a slice of `topology` spans with hosts of `chips_per_host` chips (0 = the default).
  [[nodiscard]] int hosts(std::string_view topology, const Location& where, int chips_per_host = 0) const;
  /// "2x2x1, 2x2x2, ... or AxBxC with every dimension a multiple of 4, up to 4096 chips".
  [[nodiscard]] std::string allowed() const;
};

class TpuCatalog {
 public:
  static const TpuCatalog& builtin();
  [[nodiscard]] const TpuGeneration* find(std::string_view name) const;
  /// find() or CatalogError(kCatalogUnknownModel) listing the generations.
  [[nodiscard]] const TpuGeneration& require(std::string_view name, const Location& where) const;
  [[nodiscard]] const std::vector<TpuGeneration>& generations() const { return generations_; }

 private:
  std::vector<TpuGeneration> generations_;
};

}  // namespace gpusched
