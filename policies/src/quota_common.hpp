#pragma once
// Helpers shared by the quota plugins' sources (resource-quota, capacity-queues, drf): argument
// errors that name the plugin and path, key checks, and MIG/vGPU share of a GPU. Internal.
#include <algorithm>
#include <cctype>
#include <initializer_list>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include <gpusched/error.hpp>
#include <gpusched/policies/framework/plugin.hpp>

namespace gpusched::policies::quota_util {

using nlohmann::json;

inline Location arg_at(std::string_view plugin, const std::string& path) {
  return {"", 0, std::string(plugin) + "/args/" + path};
}

[[noreturn]] inline void bad_arg(std::string_view plugin, const std::string& path, const std::string& message) {
  throw_error(ErrorCode::kProfileBadArgs, arg_at(plugin, path), std::string(plugin) + ": " + message);
}

/// gpu-equivalent amounts are kept in millionths.
inline constexpr double kMicro = 1e6;

inline bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

inline bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  }
  return true;
}

inline std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

/// Rejects keys of `obj` not in `allowed` (typos in a quota config must not pass silently).
inline void check_keys(std::string_view plugin, const std::string& path, const json& obj,
                std::initializer_list<std::string_view> allowed) {
  for (const auto& [k, v] : obj.items()) {
    if (std::find(allowed.begin(), allowed.end(), k) != allowed.end()) continue;
    std::string known;
    for (auto a : allowed) known += (known.empty() ? "" : ", ") + std::string(a);
    bad_arg(plugin, path + (path.empty() ? "" : "/") + k, "unknown key \"" + k + "\" (expected: " + known + ")");
  }
}

inline const json& object_at(std::string_view plugin, const std::string& path, const json& v) {
  if (!v.is_object()) bad_arg(plugin, path, "expected an object");
  return v;
}

/// args[key], or an empty object when absent or null (never a temporary).
inline const json& member_or_empty(const json& args, const char* key) {
  static const json empty = json::object();
  return args.contains(key) && !args.at(key).is_null() ? args.at(key) : empty;
}

/// Compute share of one MIG / vGPU unit of `r`'s profile (first catalog model offering it).
inline double partition_fraction(const ClusterState* cluster, const GpuRequest& r) {
  if (cluster == nullptr) return 0.0;
  const auto& catalog = cluster->catalog();
  for (std::size_t m = 0; m < r.profile_by_model.size() && m < catalog.size(); ++m) {
    const int idx = r.profile_by_model[m];
    if (idx < 0) continue;
    const auto& model = catalog[GpuModelId{static_cast<std::uint16_t>(m)}];
    if (r.mode == GpuMode::kMig && model.mig && static_cast<std::size_t>(idx) < model.mig->profiles.size() &&
        model.mig->compute_slices > 0) {
      return static_cast<double>(model.mig->profiles[static_cast<std::size_t>(idx)].compute_slices) / model.mig->compute_slices;
    }
    if (r.mode == GpuMode::kVgpu && static_cast<std::size_t>(idx) < model.vgpu.size()) {
      return 1.0 / std::max(1, model.vgpu[static_cast<std::size_t>(idx)].max_per_gpu);
    }
  }
  return 0.0;
}

}  // namespace gpusched::policies::quota_util
