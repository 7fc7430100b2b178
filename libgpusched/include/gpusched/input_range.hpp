#pragma once
/// Range checks for numbers read from input files, with one message format for every reader:
///   [gpusched.scenario_error.211] s.json: field '/horizon_s': 1e+30 is out of range: must be <= 1e+10 (seconds)
/// Header-only (a few inline functions), so any reader can use it without a link dependency.
///
/// Example:
///   check_range(v, 0, kMaxInputSeconds, ErrorCode::kScenarioOutOfRange, {file, 0, "/horizon_s"}, "seconds");
#include <charconv>
#include <cmath>
#include <string>
#include <string_view>

#include <gpusched/error.hpp>

namespace gpusched {

/// The shortest text that reads back as `v` ("1e+30", "0.5", "1e+10", "nan", "inf"); whole
/// numbers below 10^9 in full ("10000000", not "1e+07").
inline std::string format_number(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (v == std::floor(v) && std::fabs(v) < 1e9) return std::to_string(static_cast<long long>(v));
  char buf[40];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

/// Throws `code` at `where` unless `v` is finite and `min <= v <= max`:
/// "<v> is out of range: must be <= <max> (<unit>)". `unit` may be empty.
inline void check_range(double v, double min, double max, ErrorCode code, const Location& where, std::string_view unit = {}) {
  const std::string suffix = unit.empty() ? std::string() : " (" + std::string(unit) + ")";
  if (std::isnan(v) || std::isinf(v)) {
    throw_error(code, where, format_number(v) + " is out of range: must be a finite number between " + format_number(min) +
                                 " and " + format_number(max) + suffix);
  }
  if (v < min) throw_error(code, where, format_number(v) + " is out of range: must be >= " + format_number(min) + suffix);
  if (v > max) throw_error(code, where, format_number(v) + " is out of range: must be <= " + format_number(max) + suffix);
}

}  // namespace gpusched
