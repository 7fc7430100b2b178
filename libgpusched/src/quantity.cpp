#include <gpusched/quantity.hpp>

#include <charconv>
#include <cmath>
#include <limits>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include <gpusched/time.hpp>

namespace gpusched {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

[[noreturn]] void bad(std::string_view text, const Location& where, std::string_view what) {
  throw_error(ErrorCode::kQuantityBad, where, "\"" + std::string(text) + "\" is not " + std::string(what));
}

/// A well-formed value outside its range: `code` names the file kind (kQuantityBad by default).
[[noreturn]] void out_of_range(ErrorCode code, std::string_view text, const Location& where, const std::string& rule) {
  throw_error(code, where, "\"" + std::string(trim(text)) + "\" is out of range: " + rule);
}

/// Splits "16Gi" into (16.0, "Gi"). Returns false when the number part does not parse; a number
/// beyond double's range (1e999, 1e-999) is out of range, naming `where`.
bool split_number(std::string_view s, double& value, std::string_view& suffix, ErrorCode out_of_range_code,
                  const Location& where) {
  const char* first = s.data();
  const char* last = s.data() + s.size();
  auto [ptr, ec] = std::from_chars(first, last, value);
  if (ec == std::errc::result_out_of_range && ptr != first) {
    out_of_range(out_of_range_code, s, where, "its magnitude is beyond what a double holds");
  }
  if (ec != std::errc() || ptr == first) return false;
  if (!std::isfinite(value)) return false;
  suffix = std::string_view(ptr, static_cast<std::size_t>(last - ptr));
  return true;
}

}  // namespace

std::int64_t parse_cpu_milli(std::string_view text, const Location& where, ErrorCode out_of_range_code) {
  auto s = trim(text);
  double v = 0;
  std::string_view suffix;
  if (s.empty() || !split_number(s, v, suffix, out_of_range_code, where)) bad(text, where, "a CPU quantity (e.g. \"4\", \"500m\")");
  double milli;
  if (suffix.empty()) milli = v * 1000.0;
  else if (suffix == "m") milli = v;
  else bad(text, where, "a CPU quantity (e.g. \"4\", \"500m\")");
  if (milli < 0) throw_error(ErrorCode::kQuantityBad, where, "negative CPU request \"" + std::string(text) + "\"");
  if (milli > 1e15) out_of_range(out_of_range_code, text, where, "must be <= 1e15m (1e12 CPUs)");
  const auto out = static_cast<std::int64_t>(std::ceil(milli - 1e-9));
  if (milli > 0 && out == 0) out_of_range(out_of_range_code, text, where, "must be 0 or at least 1m (it would round to 0 CPU)");
  return out;
}

std::int64_t parse_memory_mib(std::string_view text, const Location& where, ErrorCode out_of_range_code) {
  auto s = trim(text);
  double v = 0;
  std::string_view suffix;
  if (s.empty() || !split_number(s, v, suffix, out_of_range_code, where)) bad(text, where, "a memory quantity (e.g. \"16Gi\", \"512Mi\")");
  double bytes_per_unit;
  if (suffix.empty()) bytes_per_unit = 1.0;
  else if (suffix == "k" || suffix == "K") bytes_per_unit = 1e3;
  else if (suffix == "M") bytes_per_unit = 1e6;
  else if (suffix == "G") bytes_per_unit = 1e9;
  else if (suffix == "T") bytes_per_unit = 1e12;
  else if (suffix == "P") bytes_per_unit = 1e15;
  else if (suffix == "Ki") bytes_per_unit = 1024.0;
  else if (suffix == "Mi") bytes_per_unit = 1024.0 * 1024.0;
  else if (suffix == "Gi") bytes_per_unit = 1024.0 * 1024.0 * 1024.0;
  else if (suffix == "Ti") bytes_per_unit = 1024.0 * 1024.0 * 1024.0 * 1024.0;
  else if (suffix == "Pi") bytes_per_unit = 1024.0 * 1024.0 * 1024.0 * 1024.0 * 1024.0;
  else bad(text, where, "a memory quantity (suffixes k M G T P Ki Mi Gi Ti Pi)");
  if (v < 0) throw_error(ErrorCode::kQuantityBad, where, "negative memory request \"" + std::string(text) + "\"");
  const double mib = v * bytes_per_unit / (1024.0 * 1024.0);
  if (mib > 1e15) out_of_range(out_of_range_code, text, where, "must be <= 1e15Mi");
  const auto out = static_cast<std::int64_t>(std::ceil(mib - 1e-9));
  if (mib > 0 && out == 0) out_of_range(out_of_range_code, text, where, "must be 0 or at least 1 byte (it would round to 0 MiB)");
  return out;
}

std::int64_t parse_count(std::string_view text, const Location& where, ErrorCode out_of_range_code) {
  auto s = trim(text);
  double v = 0;
  std::string_view suffix;
  if (s.empty() || !split_number(s, v, suffix, out_of_range_code, where) || !suffix.empty()) bad(text, where, "a whole number");
  if (v < 0) throw_error(ErrorCode::kQuantityBad, where, "negative count \"" + std::string(text) + "\"");
  if (v != std::floor(v)) bad(text, where, "a whole number");
  if (v > 9e15) out_of_range(out_of_range_code, text, where, "must be <= 9e15");
  return static_cast<std::int64_t>(v);
}

std::int64_t parse_seconds_us(std::string_view text, const Location& where, bool allow_forever, ErrorCode out_of_range_code) {
  auto s = trim(text);
  if (allow_forever && (s.empty() || s == "inf" || s == "forever")) return std::numeric_limits<std::int64_t>::max();
  double v = 0;
  std::string_view suffix;
  if (s.empty() || !split_number(s, v, suffix, out_of_range_code, where) || !suffix.empty()) bad(text, where, "a number of seconds");
  if (v < 0) bad(text, where, "a non-negative number of seconds");
  if (v > kMaxInputSeconds) out_of_range(out_of_range_code, text, where, "must be <= 1e10 (seconds)");
  return static_cast<std::int64_t>(std::llround(v * 1e6));
}

std::optional<std::string> scalar_text(const nlohmann::json& j) {
  if (j.is_string()) return j.get<std::string>();
  if (j.is_number_integer()) return std::to_string(j.get<std::int64_t>());
  if (j.is_number()) {
    std::ostringstream os;
    os.precision(17);
    os << j.get<double>();
    return os.str();
  }
  if (j.is_null()) return std::string();
  return std::nullopt;
}

}  // namespace gpusched
