#pragma once
/// MIG (Multi-Instance GPU) geometry as data, and the placement rules that follow from it.
///
/// A MIG-capable GPU has M memory slices and C compute slices (8 and 7 on A100/H100/H200, 4 and 4
/// on A30). A GPU instance (GI) of profile P occupies the contiguous memory slices
/// [start, start + P.memory_slices), with `start` one of P's legal starts; GIs never overlap; the
/// compute slices of all GIs add up to at most C; a profile appears at most `max_count` times;
/// at most `max_media_instances` GIs carry the media extensions (+me).
///
/// Example:
///   const auto& geo = *catalog[catalog.require("A100-80GB", {})].mig;
///   MigLayout gpu;
///   auto p4 = geo.require_profile("4g.40gb", {}), p3 = geo.require_profile("3g.40gb", {});
///   gpu.place(geo, p4, *choose_start(geo, gpu, p4, MigStartPolicy::kBest));
///   bool ok = mig_fits(geo, {p3}, gpu);   // true: 4g + 3g fill the GPU
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include <gpusched/error.hpp>

namespace gpusched {

/// One GPU instance profile of one GPU model (`nvidia-smi mig -lgip` / `-lgipp`).
struct MigProfile {
  int id = 0;                    ///< NVML profile id (19 = 1g, 0 = 7g on A100/H100)
  std::string name;              ///< e.g. "3g.40gb"; the Kubernetes resource is nvidia.com/mig-<name>
  int compute_slices = 0;
  int memory_slices = 0;
  std::int64_t memory_mib = 0;   ///< framebuffer of the instance
  int sms = 0;                   ///< streaming multiprocessors of the instance (0 = unknown)
  /// The instance's engines, as NVML's GPU instance profile info gives them (copyEngineCount,
  /// decoderCount, encoderCount, jpegCount, ofaCount); -1: unknown (not published to DRA).
  int copy_engines = -1, decoders = -1, encoders = -1, jpeg_engines = -1, ofa_engines = -1;
  int max_count = 1;             ///< instances of this profile per GPU
  std::vector<int> starts;       ///< legal start memory slices, ascending
  bool media_extensions = false; ///< a "+me" profile
};

/// A model's MIG geometry.
struct MigGeometry {
  int memory_slices = 8;
  int compute_slices = 7;
  int max_media_instances = 1;
  /// Creating or destroying a GI needs the whole GPU idle (no busy GI), e.g. when a MIG manager
  /// reapplies a whole-GPU configuration. false: GIs change while others run (nvidia-smi mig -cgi).
  bool reconfigure_requires_idle = false;
  /// true: every profile's memory_mib is what `nvidia-smi mig -lgip` reports (exact); false: some
  /// come from the profile name (GB x 1024) because no public -lgip output was found (see source).
  bool lgip_memory = false;
  std::vector<MigProfile> profiles;
  std::string source;  ///< where the profiles, ids, starts, counts, memory and SMs come from

  /// Index of the profile named `name` (case-sensitive, as NVIDIA spells it) or -1.
  [[nodiscard]] int find_profile(std::string_view name) const;
  /// find_profile() or CatalogError(kCatalogUnknownMigProfile) listing this model's profiles.
  [[nodiscard]] int require_profile(std::string_view name, const Location& where, std::string_view model = {}) const;
  /// "1g.10gb, 1g.10gb+me, ..." for messages.
  [[nodiscard]] std::string profile_names() const;
};

/// Reads a geometry from catalog JSON; throws CatalogError naming `source` and `path`.
MigGeometry mig_geometry_from_json(const nlohmann::json& j, const std::string& source, const std::string& path);
void to_json(nlohmann::json& j, const MigGeometry& g);

/// One placed GPU instance.
struct MigInstance {
  int profile = 0;   ///< index into MigGeometry::profiles
  int start = 0;
  auto operator<=>(const MigInstance&) const = default;
};

/// The GPU instances on one GPU. Cheap to copy (what-if placement).
class MigLayout {
 public:
  /// Can profile `p` be created at `start` now? Checks start legality, overlap, compute,
  /// max_count and the +me limit. O(1).
  [[nodiscard]] bool can_place(const MigGeometry& g, int p, int start) const;
  /// Legal free starts for profile `p`, ascending.
  [[nodiscard]] std::vector<int> free_starts(const MigGeometry& g, int p) const;
  /// Creates the instance. Precondition: can_place() (asserted).
  void place(const MigGeometry& g, int p, int start);
  /// Destroys the instance of profile `p` at `start`. Returns false if there is none.
  bool remove(const MigGeometry& g, int p, int start);

  [[nodiscard]] const std::vector<MigInstance>& instances() const { return instances_; }
  [[nodiscard]] std::uint32_t used_memory_mask() const { return memory_mask_; }
  [[nodiscard]] int used_compute() const { return compute_; }
  [[nodiscard]] bool empty() const { return instances_.empty(); }

 private:
  std::vector<MigInstance> instances_;   // sorted by (start, profile)
  std::uint32_t memory_mask_ = 0;
  int compute_ = 0;
  int media_ = 0;
};

/// Where to create a new GI when several starts are legal (a policy decision, not a fact).
enum class MigStartPolicy {
  kLowestFirst,    ///< the lowest legal free start
  kHighestFirst,   ///< the highest legal free start (with it, mig.md rule 4's examples hold)
  kBest,           ///< the start that leaves the most placements of larger profiles possible
};

/// The start chosen by `policy` for profile `p` on `layout`, or nullopt when none is free.
std::optional<int> choose_start(const MigGeometry& g, const MigLayout& layout, int p, MigStartPolicy policy);

/// Can all `profiles` (indices, repeats allowed) be added to `layout` at once, choosing starts
/// freely? Exact (backtracking over legal starts).
bool mig_fits(const MigGeometry& g, std::span<const int> profiles, const MigLayout& layout = {});

/// Every maximal legal layout of an empty GPU (no profile can be added), each as instances
/// sorted by start; the list is sorted. Distinct start positions count as distinct layouts.
std::vector<std::vector<MigInstance>> mig_maximal_layouts(const MigGeometry& g);

/// Creates `profiles` one after another with `policy`; returns how many were created before the
/// first that found no start (== profiles.size() when all were).
std::size_t mig_create_in_order(const MigGeometry& g, MigLayout& layout, std::span<const int> profiles,
                                MigStartPolicy policy);

}  // namespace gpusched
