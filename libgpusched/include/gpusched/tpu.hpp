#pragma once
/// TPU generations as data (data/tpu_generations.json, embedded): the slice topologies each
/// generation offers, HBM per chip, and the GKE machine types with their host shapes (chips per
/// host and the box of chips one host covers). See docs/tpu.md.
///
/// A topology is "AxB" (2-D) or "AxBxC" (3-D). A generation offers its listed shapes and, when it
/// has `multiple_of`, every shape whose dimensions are all multiples of it (written in
/// non-decreasing order, e.g. 4x4x8) up to `max_chips`. A machine type serves either every
/// topology that is a whole number of its hosts ("all" in the data) or the topologies it lists
/// (v5e/v6e 8-chip VMs serve only 2x4: GKE runs multi-host v5e/v6e slices on 4-chip VMs). A slice
/// spans chips / chips_per_host hosts (VMs, Kubernetes nodes), all of one machine type.
///
/// Example:
///   const auto& v5e = TpuCatalog::builtin().require("v5e", {});
///   int hosts = v5e.hosts("4x4", {});                        // 4 (ct5lp-hightpu-4t)
///   const auto* m = v5e.machine_for(v5e.require_topology("2x4", {}), 0);   // ct5lp-hightpu-8t
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

/// One GKE machine type of a generation: a host (VM, Kubernetes node) of `chips` chips that
/// covers a `host_shape` box of the slice's chip grid.
struct TpuMachineType {
  std::string name;                     ///< GKE machine type, e.g. "ct5lp-hightpu-4t"
  int chips = 0;                        ///< chips per host (google.com/tpu capacity of the node)
  std::vector<int> host_shape;          ///< chips along each dimension, e.g. {2, 2} or {2, 2, 1}
  std::vector<std::string> topologies;  ///< topologies served; empty = every one that is whole hosts
  std::string source;                   ///< where the figures come from
};

struct TpuGeneration {
  std::string name;                    ///< "v4", "v5e", "v5p", "v6e", "tpu7x"
  std::string display_name;            ///< "Trillium", "Ironwood"; empty when none
  std::string accelerator_label;       ///< cloud.google.com/gke-tpu-accelerator value
  std::vector<int> chips_per_host;     ///< chip counts of the machine types, ascending
  int default_chips_per_host = 4;      ///< chips of default_machine_type (GKE's multi-host VM)
  std::string default_machine_type;
  int dimensions = 3;
  std::vector<std::string> shapes;     ///< listed shapes
  int multiple_of = 0;                 ///< 0: only the listed shapes
  std::int64_t max_chips = 0;
  double hbm_per_chip = 0;             ///< as the source states it, in hbm_unit
  std::string hbm_unit;                ///< "GiB" or "GB"
  std::int64_t hbm_per_chip_mib = 0;   ///< hbm_per_chip converted (GB = 10^9 bytes), rounded down
  std::string source;
  std::vector<TpuMachineType> machine_types;   ///< ascending by chips, one per chip count

  /// Parses and checks `topology` for this generation; throws CatalogError(kCatalogBadTopology)
  /// naming the shape and the allowed ones.
  [[nodiscard]] TpuTopology require_topology(std::string_view topology, const Location& where) const;
  /// The machine type with `chips` chips per host; nullptr when there is none. O(machine types).
  [[nodiscard]] const TpuMachineType* machine_type(int chips) const;
  /// Whether `machine` serves a slice of `slice`: listed, or (serves-all types) at least one host
  /// and every dimension, in some axis order, a multiple of the host shape's. O(1).
  [[nodiscard]] bool serves(const TpuMachineType& machine, const TpuTopology& slice) const;
  /// The machine type that serves `slice` with `per_host` chips per host; 0 = the one with the
  /// most chips that serves it (fewest nodes). nullptr when none does.
  [[nodiscard]] const TpuMachineType* machine_for(const TpuTopology& slice, int per_host) const;
  /// Hosts (Kubernetes nodes) a slice of `topology` spans on hosts of `chips_per_host` chips
  /// (0 = the machine type with the most chips that serves it). Throws CatalogError
  /// (kCatalogBadTopology) for a shape the generation does not offer, a host size it does not
  /// have, or a machine type that does not serve the shape (naming the one that does).
  [[nodiscard]] int hosts(std::string_view topology, const Location& where, int chips_per_host = 0) const;
  /// "2x2x1, 2x2x2, ... or AxBxC with every dimension a multiple of 4, up to 4096 chips".
  [[nodiscard]] std::string allowed() const;
  /// "ct5lp-hightpu-1t (1 chip: 1x1), ct5lp-hightpu-4t (4 chips: 2x2, 2x4, ...), ..."
  [[nodiscard]] std::string machine_types_text() const;
};

class TpuCatalog {
 public:
  /// The generations shipped with the library (data/tpu_generations.json, embedded at build time).
  static const TpuCatalog& builtin();
  /// A catalog from the text of a tpu_generations.json (schema_version 2). Throws
  /// CatalogError(kCatalogBadEntry) at `file` and the JSON path of the bad field.
  static TpuCatalog from_json_text(std::string_view text, const std::string& file);
  [[nodiscard]] const TpuGeneration* find(std::string_view name) const;
  /// find() or CatalogError(kCatalogUnknownModel) listing the generations.
  [[nodiscard]] const TpuGeneration& require(std::string_view name, const Location& where) const;
  [[nodiscard]] const std::vector<TpuGeneration>& generations() const { return generations_; }

 private:
  std::vector<TpuGeneration> generations_;
};

}  // namespace gpusched
