#pragma once
/// GPU models as data. The built-in catalog ships as JSON inside the library
/// (`gpu_models.json`); users add or override models from their own JSON without recompiling.
///
/// Example:
///   GpuCatalog cat = GpuCatalog::builtin();
///   cat.add_json(nlohmann::json::parse(R"([{"name":"MI300X","memory_mib":196608,"sms":304}])"), "my.json");
///   GpuModelId a100 = cat.require("A100-80GB", {"scenario.json", 0, "/cluster/node_groups/0/gpu_model"});
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include <gpusched/error.hpp>
#include <gpusched/ids.hpp>
#include <gpusched/mig.hpp>

namespace gpusched {

/// One NVIDIA vGPU profile of a model (e.g. "A100-10C": 10 GiB framebuffer, 4 per GPU).
/// Time-sliced profiles: all vGPUs on one physical GPU use the same profile (equal-size mode).
/// MIG-backed profiles ("A100-3-20C") name the GPU instance profile that backs each vGPU.
struct VgpuProfile {
  std::string name;
  std::int64_t framebuffer_mib = 0;  ///< as NVIDIA's vGPU guide states it (GB x 1024)
  std::int32_t max_per_gpu = 1;
  std::string mig_profile;           ///< MIG-backed: the GI profile name (e.g. "3g.20gb"); empty: time-sliced
  std::int32_t max_per_gpu_mixed = 0;  ///< time-sliced, mixed-size mode: vGPUs per GPU (0 = not supported)

  [[nodiscard]] bool mig_backed() const { return !mig_profile.empty(); }
};

/// One GPU model.
struct GpuModel {
  std::string name;                  ///< canonical name, e.g. "A100-80GB"
  std::vector<std::string> aliases;  ///< other spellings accepted in inputs ("A100-SXM4-80GB")
  std::string vendor = "NVIDIA";
  std::int64_t memory_mib = 0;       ///< framebuffer, MiB
  std::int32_t sms = 0;              ///< streaming multiprocessors (compute units)
  bool mig_capable = false;
  bool nvlink = false;               ///< usually sold in NVLink/NVSwitch boards
  std::optional<MigGeometry> mig;    ///< MIG geometry and profiles, when the model has MIG
  std::vector<VgpuProfile> vgpu;     ///< vGPU profiles (empty: no vGPU support)
  /// Extended resource a pod requests for one whole GPU of this model ("nvidia.com/gpu",
  /// "amd.com/gpu"); from the JSON's `resource_name`, else default_resource_name(vendor), else
  /// (a vendor without a known device plugin) "nvidia.com/gpu", as before vendors decided it.
  std::string resource_name;
  /// Marketing memory in GB ("80" for an H100 80GB), for display only; 0 = not stated.
  /// memory_mib is what the driver reports as usable framebuffer (nvidia-smi FB total).
  double nominal_memory_gb = 0;
  std::string source;                ///< where each figure comes from (URL / document, table)

  /// Index of the vGPU profile named `name` (case-insensitive) or -1.
  [[nodiscard]] int find_vgpu(std::string_view name) const;
};

void to_json(nlohmann::json& j, const GpuModel& m);

/// The device plugin's resource name for whole GPUs of `vendor` (case-insensitive): NVIDIA ->
/// "nvidia.com/gpu", AMD -> "amd.com/gpu", Intel -> "gpu.intel.com/i915"; empty when unknown
/// (the catalog then uses "nvidia.com/gpu" unless the model states its `resource_name`).
[[nodiscard]] std::string_view default_resource_name(std::string_view vendor);

/// An ordered, name-indexed set of GPU models. Lookup is case-insensitive on names and aliases.
class GpuCatalog {
 public:
  /// The models shipped with the library (data/gpu_models.json, embedded at build time).
  static GpuCatalog builtin();

  /// Adds models from a JSON array (or {"schema_version":1,"models":[...]}). A model whose
  /// name already exists replaces it. Throws CatalogError naming `source` and the entry.
  void add_json(const nlohmann::json& doc, const std::string& source);
  /// Adds one model; returns its id. Replaces a model of the same name.
  GpuModelId add(GpuModel model);

  [[nodiscard]] std::optional<GpuModelId> find(std::string_view name) const;
  /// find() or throw CatalogError kCatalogUnknownModel listing the known names.
  [[nodiscard]] GpuModelId require(std::string_view name, const Location& where) const;
  [[nodiscard]] const GpuModel& operator[](GpuModelId id) const { return models_[id.value]; }
  [[nodiscard]] std::size_t size() const { return models_.size(); }
  [[nodiscard]] const std::vector<GpuModel>& models() const { return models_; }
  /// The distinct resource names of the models ("amd.com/gpu", "nvidia.com/gpu"), sorted.
  [[nodiscard]] std::vector<std::string> resource_names() const;
  /// "A10, A100-40GB, ..." for error messages.
  [[nodiscard]] std::string known_names() const;

 private:
  std::vector<GpuModel> models_;
  std::unordered_map<std::string, GpuModelId> index_;  // lower-cased name/alias -> id
};

}  // namespace gpusched
