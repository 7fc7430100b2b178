#pragma once
/// The documented ranges of numeric trace fields, checked where every reader reads them.
/// A well-formed value outside its range is `[gpusched.trace_error.110]` (kTraceOutOfRange)
/// naming the file, line and field; text that is not a number stays kTraceBadValue (102).
///
///   times (submit, start, end)        0 .. kMaxInputSeconds (1e10 s); rounded to the microsecond
///   spans (duration, run time, ...)   0 .. kMaxInputSeconds; a positive span below 1 us is rejected
///                                     (it would round to 0)
///   positive spans (gang_timeout,     kMinPositiveSeconds (1e-6 s) .. kMaxInputSeconds
///     walltime, requested_time, ...)
///   cpu / memory requests             0, or at least 1m / 1 byte, up to 1e15m / 1e15 MiB
///   gpusched.io/gpu-milli             1 .. 1000
///   counts                            per reader (tasks 1..1e6, GPUs per task 0..4096, ...)
///
/// Example:
///   const SimTime d = trace_span(text, {source, line, "duration"}, Span::kNonNegative);
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <gpusched/error.hpp>
#include <gpusched/time.hpp>

namespace gpusched::traces {

/// Throws kTraceOutOfRange: `"<text>" is out of range: <rule>`.
[[noreturn]] void out_of_range(const Location& where, std::string_view text, const std::string& rule);

/// What a time-like field allows.
enum class Span : std::uint8_t {
  kInstant,       ///< a point in time: 0..kMaxInputSeconds, rounded to the microsecond
  kNonNegative,   ///< a span: 0, or kMinPositiveSeconds..kMaxInputSeconds
  kPositive,      ///< a span that must be > 0: kMinPositiveSeconds..kMaxInputSeconds
};

/// Seconds (decimal text) to SimTime under `rule`; `allow_forever`: "", "inf" and "forever" are
/// SimTime::forever(). Unparsable or negative text: kTraceBadValue; out of range: kTraceOutOfRange.
[[nodiscard]] SimTime trace_seconds(std::string_view text, const Location& where, Span rule, bool allow_forever = false);

/// The same checks for a number a reader already parsed (finite or not): SimTime under `rule`.
[[nodiscard]] SimTime trace_seconds(double seconds, std::string_view text, const Location& where, Span rule);

/// An integer lo..hi read from text ("8" or "8.0"); unparsable: kTraceBadValue; outside: kTraceOutOfRange.
[[nodiscard]] std::int64_t trace_integer(std::string_view text, const Location& where, std::int64_t lo, std::int64_t hi);

/// Checks the range of each request a trace gives (cpu, memory, gpusched.io/gpu-milli and other
/// counts) with kTraceOutOfRange, `row`'s file and line and the field `prefix` + name; the
/// caller then builds the request with parse_requests (which reports malformed quantities).
void check_request_ranges(const std::vector<std::pair<std::string, std::string>>& items, const Location& row,
                          std::string_view prefix = "");

}  // namespace gpusched::traces
