#include <gpusched/error.hpp>
#include <gpusched/status.hpp>
#include <gpusched/utf8.hpp>

namespace gpusched {
namespace {
std::string format_message(ErrorCode code, const Location& w, const std::string& message) {
  // append() rather than operator+ chains: GCC 12 warns falsely (-Wrestrict) on the latter.
  std::string out;
  out.append("[").append(error_id(code)).append("]");
  if (!w.file.empty()) {
    out.append(" ").append(w.file);
    if (w.line > 0) out.append(":").append(std::to_string(w.line));
    out.append(":");
  }
  if (!w.field.empty()) out.append(" field '").append(w.field).append("':");
  out.append(" ").append(message);
  return out;
}
}  // namespace

std::string_view error_category(ErrorCode code) {
  switch (static_cast<int>(code) / 100) {
    case 1: return "trace_error";
    case 2: return "scenario_error";
    case 3: return "profile_error";
    case 4: return "catalog_error";
    case 5: return "quantity_error";
    case 7: return "plugin_error";
    default: return "io_error";
  }
}

std::string error_id(ErrorCode code) {
  return "gpusched." + std::string(error_category(code)) + "." + std::to_string(static_cast<int>(code));
}

namespace {
/// Messages quote input; invalid UTF-8 in it becomes \xNN so that every message is valid UTF-8
/// (Python decodes it; a terminal prints it).
Location printable(Location w) {
  w.file = printable_utf8(w.file);
  w.field = printable_utf8(w.field);
  return w;
}
}  // namespace

Error::Error(ErrorCode code, Location where, const std::string& message)
    : std::runtime_error(format_message(code, printable(where), printable_utf8(message))),
      code_(code), where_(printable(std::move(where))), detail_(printable_utf8(message)) {}

void throw_error(ErrorCode code, Location where, const std::string& message) {
  switch (static_cast<int>(code) / 100) {
    case 1: throw TraceError(code, std::move(where), message);
    case 2: throw ScenarioError(code, std::move(where), message);
    case 3: throw ProfileError(code, std::move(where), message);
    case 4: throw CatalogError(code, std::move(where), message);
    case 5: throw QuantityError(code, std::move(where), message);
    case 7: throw PluginError(code, std::move(where), message);
    default:
      if (code == ErrorCode::kInterrupted) throw InterruptedError(code, std::move(where), message);
      throw OutputError(code, std::move(where), message);
  }
}

std::string_view to_string(StatusCode code) {
  switch (code) {
    case StatusCode::kSuccess: return "Success";
    case StatusCode::kUnschedulable: return "Unschedulable";
    case StatusCode::kUnschedulableAndUnresolvable: return "UnschedulableAndUnresolvable";
    case StatusCode::kWait: return "Wait";
    case StatusCode::kSkip: return "Skip";
    case StatusCode::kError: return "Error";
  }
  return "?";
}
}  // namespace gpusched
