#pragma once
/// Expected scheduling outcomes: cheap values, no allocation on the hot path.
#include <cstdint>
#include <string_view>

namespace gpusched {

/// Kubernetes framework codes. Unschedulable may be resolved by preemption;
/// UnschedulableAndUnresolvable may not.
enum class StatusCode : std::uint8_t { kSuccess, kUnschedulable, kUnschedulableAndUnresolvable, kWait, kSkip, kError };

/// An outcome with the plugin that produced it and a reason. Both strings must have static
/// storage duration (string literals or names owned by a plugin that outlives the Status).
struct Status {
  StatusCode code = StatusCode::kSuccess;
  std::string_view plugin;
  std::string_view reason;

  static constexpr Status success() { return {}; }
  static constexpr Status unschedulable(std::string_view plugin, std::string_view reason) {
    return {StatusCode::kUnschedulable, plugin, reason};
  }
  static constexpr Status unresolvable(std::string_view plugin, std::string_view reason) {
    return {StatusCode::kUnschedulableAndUnresolvable, plugin, reason};
  }
  static constexpr Status skip() { return {StatusCode::kSkip, {}, {}}; }
  [[nodiscard]] constexpr bool ok() const { return code == StatusCode::kSuccess; }
  [[nodiscard]] constexpr bool is_skip() const { return code == StatusCode::kSkip; }
};

std::string_view to_string(StatusCode code);

}  // namespace gpusched
