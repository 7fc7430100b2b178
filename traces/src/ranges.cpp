#include <gpusched/traces/ranges.hpp>

#include <charconv>
#include <cmath>
#include <sstream>

#include <gpusched/quantity.hpp>
#include <gpusched/resources.hpp>

namespace gpusched::traces {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

std::string number_text(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

/// The whole of `s` as a finite double; out of double's range is out of range, else nullopt-like false.
bool to_double(std::string_view s, double& v, const Location& where) {
  const char* end = s.data() + s.size();
  const auto [p, ec] = std::from_chars(s.data(), end, v);
  if (ec == std::errc::result_out_of_range && p == end) out_of_range(where, s, "its magnitude is beyond what a double holds");
  return !s.empty() && ec == std::errc{} && p == end && std::isfinite(v);
}

}  // namespace

void out_of_range(const Location& where, std::string_view text, const std::string& rule) {
  throw_error(ErrorCode::kTraceOutOfRange, where, "\"" + std::string(trim(text)) + "\" is out of range: " + rule);
}

SimTime trace_seconds(std::string_view text, const Location& where, Span rule, bool allow_forever) {
  const auto s = trim(text);
  if (allow_forever && (s.empty() || s == "inf" || s == "forever")) return SimTime::forever();
  double v = 0;
  if (!to_double(s, v, where)) {
    throw_error(ErrorCode::kTraceBadValue, where, "\"" + std::string(s) + "\" is not a number of seconds");
  }
  return trace_seconds(v, s, where, rule);
}

SimTime trace_seconds(double v, std::string_view text, const Location& where, Span rule) {
  if (!std::isfinite(v)) throw_error(ErrorCode::kTraceBadValue, where, "\"" + std::string(trim(text)) + "\" is not a number of seconds");
  if (v < 0) throw_error(ErrorCode::kTraceBadValue, where, "\"" + std::string(trim(text)) + "\" is not a non-negative number of seconds");
  if (v > kMaxInputSeconds) out_of_range(where, text, "must be <= " + number_text(kMaxInputSeconds) + " (seconds)");
  if (rule == Span::kPositive && v == 0) {
    throw_error(ErrorCode::kTraceBadValue, where, "must be > 0 seconds (leave it out for no limit)");
  }
  if (rule != Span::kInstant && v > 0 && v < kMinPositiveSeconds) {
    out_of_range(where, text, std::string(rule == Span::kPositive ? "must be" : "must be 0 or") + " >= " +
                                  number_text(kMinPositiveSeconds) + " (seconds; smaller would round to 0)");
  }
  return SimTime::from_seconds_f(v);
}

std::int64_t trace_integer(std::string_view text, const Location& where, std::int64_t lo, std::int64_t hi) {
  const auto s = trim(text);
  std::int64_t v = 0;
  const char* end = s.data() + s.size();
  const auto [p, ec] = std::from_chars(s.data(), end, v);
  if (s.empty() || ec != std::errc{} || p != end) {
    double d = 0;
    if (!to_double(s, d, where) || d != std::floor(d)) {
      throw_error(ErrorCode::kTraceBadValue, where, "\"" + std::string(s) + "\" is not an integer");
    }
    if (std::fabs(d) > 9e15) out_of_range(where, s, "must be " + std::to_string(lo) + ".." + std::to_string(hi));
    v = static_cast<std::int64_t>(d);
  }
  if (v < lo || v > hi) out_of_range(where, s, "must be " + std::to_string(lo) + ".." + std::to_string(hi));
  return v;
}

void check_request_ranges(const std::vector<std::pair<std::string, std::string>>& items, const Location& row,
                          std::string_view prefix) {
  using namespace resource_names;
  constexpr auto code = ErrorCode::kTraceOutOfRange;
  for (const auto& [name, value] : items) {
    Location at = row;
    at.field = std::string(prefix) + name;
    if (name == kCpu) (void)parse_cpu_milli(value, at, code);
    else if (name == kMemory) (void)parse_memory_mib(value, at, code);
    else if (name == kGpuMilli) {
      const auto milli = parse_count(value, at, code);
      if (milli < 1 || milli > kMilliPerGpu) out_of_range(at, value, "must be 1..1000 (a share of one GPU; leave it out for none)");
    } else if (name == kGpu || name == kGpuMem || name == kHamiMem || name == kHamiCores || name == kTpu ||
               name.starts_with(kMigPrefix) || name.starts_with(kVgpuPrefix) || is_extended_resource(name)) {
      (void)parse_count(value, at, code);
    }
  }
}

}  // namespace gpusched::traces
