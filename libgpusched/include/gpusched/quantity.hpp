#pragma once
/// Kubernetes resource quantities ("500m", "4", "16Gi", "1.5G") converted to gpusched units.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include <gpusched/error.hpp>

namespace gpusched {

// Ranges. A well-formed value outside its range throws `out_of_range` (QuantityError
// kQuantityBad unless the caller names its file kind's code: kTraceOutOfRange for traces,
// kScenarioOutOfRange for scenarios), naming `where`:
//   cpu      0 or 1m..1e15m (a positive amount below 1m would round to 0);
//   memory   0 or anything that rounds up to 1 MiB, up to 1e15 MiB (a positive amount that
//            rounds to 0 MiB, e.g. 1e-30, is rejected);
//   counts   0..9e15;
//   seconds  0..kMaxInputSeconds (gpusched/time.hpp).

/// CPU quantity to milli-CPU: "4" -> 4000, "500m" -> 500, "0.5" -> 500.
/// Throws QuantityError (kQuantityBad) naming `where` on anything else, or on a negative value.
std::int64_t parse_cpu_milli(std::string_view text, const Location& where,
                             ErrorCode out_of_range = ErrorCode::kQuantityBad);

/// Memory quantity to MiB, rounding up: plain numbers are bytes (Kubernetes), suffixes
/// k/K, M, G, T, P (powers of 1000) and Ki, Mi, Gi, Ti, Pi (powers of 1024).
std::int64_t parse_memory_mib(std::string_view text, const Location& where,
                              ErrorCode out_of_range = ErrorCode::kQuantityBad);

/// A non-negative integer count ("2"); "2.0" is accepted, "2.5" is not.
std::int64_t parse_count(std::string_view text, const Location& where, ErrorCode out_of_range = ErrorCode::kQuantityBad);

/// A decimal number of seconds ("12", "0.25") to microseconds; "inf" or "" -> forever when
/// `allow_forever`, else an error. At most kMaxInputSeconds; rounds to the microsecond (a
/// caller whose field must be > 0 checks the result, or use a reader's positive-time helper).
std::int64_t parse_seconds_us(std::string_view text, const Location& where, bool allow_forever,
                              ErrorCode out_of_range = ErrorCode::kQuantityBad);

/// A JSON scalar as the text a quantity parser reads: strings as they are, integers exactly,
/// other numbers with 17 significant digits, null as "". Objects, arrays, booleans: nullopt.
std::optional<std::string> scalar_text(const nlohmann::json& j);

}  // namespace gpusched
