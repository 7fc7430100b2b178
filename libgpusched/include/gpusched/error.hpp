#pragma once
/// Bad input or configuration: exceptions with a stable id and a location.
///
/// Example message: `[gpusched.trace_error.102] jobs.csv:17: field 'cpu': "abc" is not a quantity`.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace gpusched {

/// Stable error codes. The number never changes meaning once released; the category names the
/// exception class. Documented in README ("Errors").
enum class ErrorCode : std::uint16_t {
  // trace_error: job traces (native CSV / JSON Lines)
  kTraceCannotOpen = 101,
  kTraceBadValue = 102,
  kTraceMissingColumn = 103,
  kTraceNegativeRequest = 104,
  kTraceUnknownGpuModel = 105,
  kTraceUnplaceable = 106,
  kTraceDuplicateId = 107,
  kTraceSchemaVersion = 108,
  kTraceUnknownColumn = 109,
  kTraceOutOfRange = 110,        ///< a number outside its documented range (times beyond the clock, ...)
  // scenario_error: scenario files and cluster descriptions
  kScenarioCannotOpen = 201,
  kScenarioParse = 202,
  kScenarioBadValue = 203,
  kScenarioMissingField = 204,
  kScenarioUnknownField = 205,
  kScenarioSchemaVersion = 206,
  kScenarioUnknownNode = 207,
  kScenarioDuplicateNode = 208,
  kScenarioBadDevices = 209,     ///< impossible device layout: overlapping GIs, mixed vGPU profiles, ...
  kScenarioTooDeep = 210,        ///< JSON nested deeper than the parser's limit (kMaxJsonDepth)
  kScenarioOutOfRange = 211,     ///< a number outside its documented range (times beyond the clock, counts, ...)
  // profile_error: scheduling profiles
  kProfileUnknownPlugin = 301,
  kProfileDuplicatePlugin = 302,
  kProfileZeroWeight = 303,
  kProfileWrongHook = 304,
  kProfileBadArgs = 305,
  kProfileUnknownProfile = 306,
  kProfileMissingHook = 307,
  // catalog_error: GPU model catalog
  kCatalogUnknownModel = 401,
  kCatalogBadEntry = 402,
  kCatalogUnknownMigProfile = 403,
  kCatalogBadTopology = 404,
  kCatalogUnknownVgpuProfile = 405,
  // quantity_error: resource quantities and names
  kQuantityBad = 501,
  kResourceUnknown = 502,
  // io_error
  kOutputWrite = 601,
  kInterrupted = 602,        ///< the run was interrupted (SIGINT/SIGTERM, Ctrl-C in Python); nothing was written
  // plugin_error: a plugin written outside the library (Python) failed during a run
  kPluginRaised = 701,       ///< the plugin raised an exception (its traceback is in the message)
  kPluginBadResult = 702,    ///< the plugin returned something of the wrong type, shape or range
};

/// "trace_error", "scenario_error", ... for a code.
std::string_view error_category(ErrorCode code);
/// "gpusched.trace_error.102" for a code.
std::string error_id(ErrorCode code);

/// Where bad input came from. Empty parts are left out of the message.
struct Location {
  std::string file;        ///< file name as the user gave it
  std::int64_t line = 0;   ///< 1-based; 0 = unknown
  std::string field;       ///< column name, JSON path or argument name
};

/// Base of every gpusched input/configuration error.
class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, Location where, const std::string& message);
  [[nodiscard]] ErrorCode code() const noexcept { return code_; }
  [[nodiscard]] std::string id() const { return error_id(code_); }
  [[nodiscard]] const Location& where() const noexcept { return where_; }
  /// The message without id and location.
  [[nodiscard]] const std::string& detail() const noexcept { return detail_; }

 private:
  ErrorCode code_;
  Location where_;
  std::string detail_;
};

class TraceError : public Error { using Error::Error; };
class ScenarioError : public Error { using Error::Error; };
class ProfileError : public Error { using Error::Error; };
class CatalogError : public Error { using Error::Error; };
class QuantityError : public Error { using Error::Error; };
class OutputError : public Error { using Error::Error; };
class PluginError : public Error { using Error::Error; };
/// A run stopped by an interruption request (see gpusched/interrupt.hpp). The CLI exits 130.
class InterruptedError : public Error { using Error::Error; };

/// Throws the exception class that matches the code's category.
[[noreturn]] void throw_error(ErrorCode code, Location where, const std::string& message);

}  // namespace gpusched
