#include <gpusched/gpu_catalog.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>

#include <nlohmann/json.hpp>

#include <gpusched/embedded_gpu_models.hpp>

namespace gpusched {
namespace {
std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}
}  // namespace

void to_json(nlohmann::json& j, const GpuModel& m) {
  j = nlohmann::json{{"name", m.name},     {"aliases", m.aliases}, {"vendor", m.vendor},
                     {"memory_mib", m.memory_mib}, {"sms", m.sms}, {"mig_capable", m.mig_capable},
                     {"nvlink", m.nvlink}, {"resource_name", m.resource_name}};
  if (m.nominal_memory_gb > 0) j["nominal_memory_gb"] = m.nominal_memory_gb;
  if (!m.source.empty()) j["source"] = m.source;
  if (m.mig) j["mig"] = *m.mig;
  if (!m.vgpu.empty()) {
    auto& list = j["vgpu"] = nlohmann::json::array();
    for (const auto& v : m.vgpu) {
      nlohmann::json e{{"name", v.name}, {"framebuffer_mib", v.framebuffer_mib}, {"max_per_gpu", v.max_per_gpu}};
      if (v.mig_backed()) e["mig_profile"] = v.mig_profile;
      if (v.max_per_gpu_mixed > 0) e["max_per_gpu_mixed"] = v.max_per_gpu_mixed;
      list.push_back(std::move(e));
    }
  }
}

std::string_view default_resource_name(std::string_view vendor) {
  const auto v = lower(vendor);
  if (v == "nvidia") return "nvidia.com/gpu";
  if (v == "amd") return "amd.com/gpu";
  if (v == "intel") return "gpu.intel.com/i915";
  return {};
}

int GpuModel::find_vgpu(std::string_view profile) const {
  const auto key = lower(profile);
  for (std::size_t i = 0; i < vgpu.size(); ++i) {
    if (lower(vgpu[i].name) == key) return static_cast<int>(i);
  }
  return -1;
}

namespace {
/// A whole number lo..hi from a catalog entry (never a cast of an out-of-range double or a
/// truncated 64-bit integer); kCatalogBadEntry naming `path` otherwise.
std::int64_t catalog_int(const nlohmann::json& v, const std::string& source, const std::string& path, std::int64_t lo,
                         std::int64_t hi) {
  const bool whole = v.is_number_integer() ||
                     (v.is_number_float() && std::isfinite(v.get<double>()) && v.get<double>() == std::floor(v.get<double>()));
  if (!whole) throw_error(ErrorCode::kCatalogBadEntry, {source, 0, path}, "expected a whole number, got " + v.dump());
  const double d = v.get<double>();
  if (v.is_number_unsigned() ? v.get<std::uint64_t>() > static_cast<std::uint64_t>(hi)
                             : (d < static_cast<double>(lo) || d > static_cast<double>(hi))) {
    throw_error(ErrorCode::kCatalogBadEntry, {source, 0, path},
                v.dump() + " is out of range: must be " + std::to_string(lo) + ".." + std::to_string(hi));
  }
  return v.is_number_integer() ? v.get<std::int64_t>() : static_cast<std::int64_t>(d);
}

/// The most memory one GPU model may declare: 2^40 MiB (1 EiB); keeps products of it in range.
constexpr std::int64_t kMaxGpuMemoryMib = std::int64_t{1} << 40;

/// vGPU profiles; `memory_mib` is the board's framebuffer as NVIDIA's vGPU guide sizes profiles
/// (the nominal memory when known: an L4-24C fills a 24 GB L4 whose driver reports 23,034 MiB).
std::vector<VgpuProfile> vgpu_from_json(const nlohmann::json& v, const std::string& source, const std::string& path,
                                        std::int64_t memory_mib, const std::optional<MigGeometry>& mig) {
  if (!v.is_array()) throw_error(ErrorCode::kCatalogBadEntry, {source, 0, path}, "expected a list of vGPU profiles");
  std::vector<VgpuProfile> out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    const std::string pf = path + "/" + std::to_string(i);
    if (!v[i].is_object()) throw_error(ErrorCode::kCatalogBadEntry, {source, 0, pf}, "expected an object");
    VgpuProfile p;
    for (const auto& [k, x] : v[i].items()) {
      if (k == "name") p.name = x.get<std::string>();
      else if (k == "framebuffer_mib") p.framebuffer_mib = catalog_int(x, source, pf + "/" + k, 0, kMaxGpuMemoryMib);
      else if (k == "max_per_gpu") p.max_per_gpu = static_cast<std::int32_t>(catalog_int(x, source, pf + "/" + k, 0, 1 << 16));
      else if (k == "max_per_gpu_mixed") p.max_per_gpu_mixed = static_cast<std::int32_t>(catalog_int(x, source, pf + "/" + k, 0, 1 << 16));
      else if (k == "mig_profile") p.mig_profile = x.get<std::string>();
      else throw_error(ErrorCode::kCatalogBadEntry, {source, 0, pf + "/" + k},
                       "unknown field (known: name, framebuffer_mib, max_per_gpu, max_per_gpu_mixed, mig_profile)");
    }
    if (p.mig_backed()) {
      if (!mig) throw_error(ErrorCode::kCatalogBadEntry, {source, 0, pf + "/mig_profile"}, "a MIG-backed vGPU needs the model's mig geometry");
      const int gi = mig->find_profile(p.mig_profile);
      if (gi < 0) {
        throw_error(ErrorCode::kCatalogBadEntry, {source, 0, pf + "/mig_profile"},
                    "no MIG profile \"" + p.mig_profile + "\" on this model; its profiles: " + mig->profile_names());
      }
      if (p.max_per_gpu > mig->profiles[static_cast<std::size_t>(gi)].max_count) {
        throw_error(ErrorCode::kCatalogBadEntry, {source, 0, pf + "/max_per_gpu"},
                    "more vGPUs than instances of " + p.mig_profile + " fit one GPU (" +
                        std::to_string(mig->profiles[static_cast<std::size_t>(gi)].max_count) + ")");
      }
      if (p.max_per_gpu_mixed != 0) {
        throw_error(ErrorCode::kCatalogBadEntry, {source, 0, pf + "/max_per_gpu_mixed"}, "mixed-size mode is for time-sliced vGPUs only");
      }
      // A MIG-backed vGPU's framebuffer is its GPU instance's memory unless stated.
      if (p.framebuffer_mib == 0) p.framebuffer_mib = mig->profiles[static_cast<std::size_t>(gi)].memory_mib;
    }
    if (p.max_per_gpu_mixed < 0 || p.max_per_gpu_mixed > p.max_per_gpu || p.framebuffer_mib * p.max_per_gpu_mixed > memory_mib) {
      throw_error(ErrorCode::kCatalogBadEntry, {source, 0, pf + "/max_per_gpu_mixed"},
                  "must be 0..max_per_gpu, and max_per_gpu_mixed x framebuffer_mib must fit the GPU's memory");
    }
    if (p.name.empty()) throw_error(ErrorCode::kCatalogBadEntry, {source, 0, pf + "/name"}, "a vGPU profile needs a name");
    for (const auto& q : out) {
      if (lower(q.name) == lower(p.name)) throw_error(ErrorCode::kCatalogBadEntry, {source, 0, pf + "/name"}, "duplicate vGPU profile " + p.name);
    }
    if (p.framebuffer_mib <= 0 || p.framebuffer_mib > memory_mib) {
      throw_error(ErrorCode::kCatalogBadEntry, {source, 0, pf + "/framebuffer_mib"}, "must be > 0 and at most the GPU's memory");
    }
    // MIG-backed: how many fit is the GI profile's max_count (checked above), not a framebuffer sum.
    if (p.max_per_gpu < 1 || (!p.mig_backed() && p.framebuffer_mib * p.max_per_gpu > memory_mib)) {
      throw_error(ErrorCode::kCatalogBadEntry, {source, 0, pf + "/max_per_gpu"},
                  "must be >= 1, and max_per_gpu x framebuffer_mib must fit the GPU's memory");
    }
    out.push_back(std::move(p));
  }
  return out;
}
}  // namespace

GpuCatalog GpuCatalog::builtin() {
  GpuCatalog cat;
  cat.add_json(nlohmann::json::parse(embedded::kGpuModelsJson), "gpu_models.json (built in)");
  return cat;
}

GpuModelId GpuCatalog::add(GpuModel model) {
  if (model.resource_name.empty()) model.resource_name = std::string(default_resource_name(model.vendor));
  if (model.resource_name.empty()) model.resource_name = "nvidia.com/gpu";
  const auto key = lower(model.name);
  GpuModelId id;
  if (auto it = index_.find(key); it != index_.end() && lower(models_[it->second.value].name) == key) {
    id = it->second;
    models_[id.value] = std::move(model);
  } else {
    if (models_.size() >= 128) {
      throw_error(ErrorCode::kCatalogBadEntry, {}, "too many GPU models (at most 128)");
    }
    id = GpuModelId{static_cast<std::uint16_t>(models_.size())};
    models_.push_back(std::move(model));
  }
  const auto& m = models_[id.value];
  index_[lower(m.name)] = id;
  for (const auto& a : m.aliases) index_[lower(a)] = id;
  return id;
}

void GpuCatalog::add_json(const nlohmann::json& doc, const std::string& source) {
  const nlohmann::json* list = &doc;
  std::string base = "";
  if (doc.is_object()) {
    if (doc.contains("schema_version") && doc["schema_version"] != 1) {
      throw_error(ErrorCode::kCatalogBadEntry, {source, 0, "schema_version"}, "unsupported schema_version (this build reads 1)");
    }
    if (!doc.contains("models")) throw_error(ErrorCode::kCatalogBadEntry, {source, 0, "models"}, "missing the 'models' array");
    list = &doc["models"];
    base = "/models";
  }
  if (!list->is_array()) throw_error(ErrorCode::kCatalogBadEntry, {source, 0, base}, "expected an array of GPU models");
  for (std::size_t i = 0; i < list->size(); ++i) {
    const auto& e = (*list)[i];
    const std::string path = base + "/" + std::to_string(i);
    if (!e.is_object()) throw_error(ErrorCode::kCatalogBadEntry, {source, 0, path}, "expected an object");
    GpuModel m;
    const nlohmann::json* vgpu_json = nullptr;
    try {
      for (const auto& [k, v] : e.items()) {
        if (k == "name") m.name = v.get<std::string>();
        else if (k == "aliases") m.aliases = v.get<std::vector<std::string>>();
        else if (k == "vendor") m.vendor = v.get<std::string>();
        else if (k == "memory_mib") m.memory_mib = catalog_int(v, source, path + "/" + k, 0, kMaxGpuMemoryMib);
        else if (k == "sms") m.sms = static_cast<std::int32_t>(catalog_int(v, source, path + "/" + k, 0, 1 << 20));
        else if (k == "mig_capable") m.mig_capable = v.get<bool>();
        else if (k == "nvlink") m.nvlink = v.get<bool>();
        else if (k == "mig") m.mig = mig_geometry_from_json(v, source, path + "/mig");
        else if (k == "vgpu") vgpu_json = &v;
        else if (k == "resource_name") m.resource_name = v.get<std::string>();
        else if (k == "nominal_memory_gb") {
          if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0 || v.get<double>() > 1e9) {
            throw_error(ErrorCode::kCatalogBadEntry, {source, 0, path + "/" + k}, "expected a number of GB 0..1e9, got " + v.dump());
          }
          m.nominal_memory_gb = v.get<double>();
        }
        else if (k == "source") m.source = v.get<std::string>();
        else if (k == "notes") continue;
        else throw_error(ErrorCode::kCatalogBadEntry, {source, 0, path + "/" + k},
                         "unknown field (known: name, aliases, vendor, resource_name, memory_mib, nominal_memory_gb, sms, "
                         "mig_capable, nvlink, mig, vgpu, source, notes)");
      }
    } catch (const nlohmann::json::exception& ex) {
      throw_error(ErrorCode::kCatalogBadEntry, {source, 0, path}, std::string("wrong type: ") + ex.what());
    }
    if (m.name.empty()) throw_error(ErrorCode::kCatalogBadEntry, {source, 0, path + "/name"}, "a GPU model needs a name");
    if (m.memory_mib <= 0) throw_error(ErrorCode::kCatalogBadEntry, {source, 0, path + "/memory_mib"}, "must be > 0");
    if (m.mig) m.mig_capable = true;
    // Another vendor without a resource_name keeps what every model was requested as before
    // vendors decided it: nvidia.com/gpu (see add()).
    if (m.resource_name.empty()) m.resource_name = std::string(default_resource_name(m.vendor));
    if (!m.resource_name.empty() && m.resource_name.find('/') == std::string::npos) {
      throw_error(ErrorCode::kCatalogBadEntry, {source, 0, path + "/resource_name"},
                  "\"" + m.resource_name + "\" is not an extended resource name (<domain>/<name>, e.g. amd.com/gpu)");
    }
    if (m.mig && m.mig->lgip_memory) {
      for (std::size_t p = 0; p < m.mig->profiles.size(); ++p) {
        if (m.mig->profiles[p].memory_mib > m.memory_mib) {
          throw_error(ErrorCode::kCatalogBadEntry, {source, 0, path + "/mig/profiles/" + std::to_string(p) + "/memory_mib"},
                      "a GPU instance has more memory than the whole GPU (" + std::to_string(m.memory_mib) + " MiB)");
        }
      }
    }
    if (vgpu_json) {
      // vGPU profiles are sized against the board's nominal framebuffer (GB x 1024) when stated.
      const std::int64_t board_mib = m.nominal_memory_gb > 0
                                         ? std::max(m.memory_mib, static_cast<std::int64_t>(std::llround(m.nominal_memory_gb * 1024)))
                                         : m.memory_mib;
      try {
        m.vgpu = vgpu_from_json(*vgpu_json, source, path + "/vgpu", board_mib, m.mig);
      } catch (const nlohmann::json::exception& ex) {
        throw_error(ErrorCode::kCatalogBadEntry, {source, 0, path + "/vgpu"}, std::string("wrong type: ") + ex.what());
      }
    }
    if (m.sms < 0) throw_error(ErrorCode::kCatalogBadEntry, {source, 0, path + "/sms"}, "must be >= 0");
    add(std::move(m));
  }
}

std::optional<GpuModelId> GpuCatalog::find(std::string_view name) const {
  if (auto it = index_.find(lower(name)); it != index_.end()) return it->second;
  return std::nullopt;
}

GpuModelId GpuCatalog::require(std::string_view name, const Location& where) const {
  if (auto id = find(name)) return *id;
  throw_error(ErrorCode::kCatalogUnknownModel, where,
              "unknown GPU model \"" + std::string(name) + "\"; known models: " + known_names() +
                  " (add your own with a gpu_models entry)");
}

std::vector<std::string> GpuCatalog::resource_names() const {
  std::vector<std::string> out;
  for (const auto& m : models_) {
    if (std::find(out.begin(), out.end(), m.resource_name) == out.end()) out.push_back(m.resource_name);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string GpuCatalog::known_names() const {
  std::vector<std::string> names;
  for (const auto& m : models_) names.push_back(m.name);
  std::sort(names.begin(), names.end());
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace gpusched
