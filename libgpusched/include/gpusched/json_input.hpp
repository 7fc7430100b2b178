#pragma once
/// The one way gpusched reads JSON from outside (scenario, profile, trace and kubectl files,
/// JSON Lines, JSON text from Python): every failure is a gpusched::Error with an id and a
/// location, never a nlohmann exception, a crash or a non-UTF-8 message.
///
/// Checked while reading: JSON syntax (the message names the line and the column), nesting
/// deeper than kMaxJsonDepth (checked before anything is built, so a 400 KB file nested 200,000
/// levels deep is one error, not a stack overflow), numbers beyond the range of a double (`1e999`),
/// and strings that are not valid UTF-8 (so writing the document again never fails).
///
/// Example:
///   const auto doc = parse_json(text, "scenario.json", kScenarioJsonErrors);
///   // [gpusched.scenario_error.211] scenario.json:7: field '/workload/jobs/0/duration': 1e999 is out of range ...
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include <gpusched/error.hpp>

namespace gpusched {

/// How field paths are written in errors: "/a/0/b" (JSON pointer; scenario and profile files) or
/// "a[0].b" (trace files: a JSON Lines key is just its name, kubectl paths read as in kubectl).
enum class JsonPathStyle { kPointer, kDotted };

/// The error codes a reader reports for the three kinds of bad JSON, and how it names fields.
struct JsonErrors {
  ErrorCode syntax;         ///< not JSON (syntax, invalid UTF-8 in a string, trailing text)
  ErrorCode too_deep;       ///< nested deeper than kMaxJsonDepth
  ErrorCode out_of_range;   ///< a number beyond the range of a double
  JsonPathStyle paths = JsonPathStyle::kPointer;
};

/// Scenario files, profile files and scenario JSON text: 202 / 210 / 211.
inline constexpr JsonErrors kScenarioJsonErrors{ErrorCode::kScenarioParse, ErrorCode::kScenarioTooDeep,
                                                ErrorCode::kScenarioOutOfRange, JsonPathStyle::kPointer};
/// Trace files (JSON Lines, kubectl lists): 102 / 102 / 110.
inline constexpr JsonErrors kTraceJsonErrors{ErrorCode::kTraceBadValue, ErrorCode::kTraceBadValue,
                                             ErrorCode::kTraceOutOfRange, JsonPathStyle::kDotted};

/// Parses one JSON document (the whole of `text`; comments are not allowed) and returns it.
/// `source` names the file in errors; `first_line` is the line of the file where `text` begins
/// (JSON Lines pass each line's number). Throws the Error class of `errors`' codes with the
/// line (and, in the message, the column) of the offending character. O(size of text); no
/// recursion, so no input can exhaust the stack.
[[nodiscard]] nlohmann::json parse_json(std::string_view text, const std::string& source,
                                        const JsonErrors& errors = kScenarioJsonErrors, std::int64_t first_line = 1);

}  // namespace gpusched
