#include <catch2/catch.hpp>

#include <gpusched/error.hpp>
#include <gpusched/status.hpp>

using namespace gpusched;

TEST_CASE("Error ids join the category and the stable code", "[core][error]") {
  CHECK(error_id(ErrorCode::kTraceBadValue) == "gpusched.trace_error.102");
  CHECK(error_id(ErrorCode::kScenarioUnknownField) == "gpusched.scenario_error.205");
  CHECK(error_id(ErrorCode::kProfileUnknownPlugin) == "gpusched.profile_error.301");
  CHECK(error_id(ErrorCode::kCatalogUnknownModel) == "gpusched.catalog_error.401");
  CHECK(error_id(ErrorCode::kQuantityBad) == "gpusched.quantity_error.501");
  CHECK(error_id(ErrorCode::kOutputWrite) == "gpusched.io_error.601");
}

TEST_CASE("An error message carries id, file, line and field", "[core][error]") {
  const TraceError e(ErrorCode::kTraceBadValue, {"file", 17, "cpu"}, "\"abc\" is not a quantity");
  CHECK(std::string(e.what()) == "[gpusched.trace_error.102] file:17: field 'cpu': \"abc\" is not a quantity");
  CHECK(e.id() == "gpusched.trace_error.102");
  CHECK(e.detail() == "\"abc\" is not a quantity");
  CHECK(e.where().file == "file");
  CHECK(e.where().line == 17);
  CHECK(e.where().field == "cpu");
}

TEST_CASE("Empty location parts are left out of the message", "[core][error]") {
  CHECK(std::string(Error(ErrorCode::kTraceBadValue, {"jobs.csv", 0, ""}, "bad").what()) ==
        "[gpusched.trace_error.102] jobs.csv: bad");
  CHECK(std::string(Error(ErrorCode::kProfileBadArgs, {"", 0, "args.x"}, "bad").what()) ==
        "[gpusched.profile_error.305] field 'args.x': bad");
  CHECK(std::string(Error(ErrorCode::kOutputWrite, {}, "bad").what()) == "[gpusched.io_error.601] bad");
}

TEST_CASE("throw_error throws the exception class of the code's category", "[core][error]") {
  CHECK_THROWS_AS(throw_error(ErrorCode::kTraceDuplicateId, {}, "x"), TraceError);
  CHECK_THROWS_AS(throw_error(ErrorCode::kScenarioParse, {}, "x"), ScenarioError);
  CHECK_THROWS_AS(throw_error(ErrorCode::kProfileZeroWeight, {}, "x"), ProfileError);
  CHECK_THROWS_AS(throw_error(ErrorCode::kCatalogBadEntry, {}, "x"), CatalogError);
  CHECK_THROWS_AS(throw_error(ErrorCode::kResourceUnknown, {}, "x"), QuantityError);
  CHECK_THROWS_AS(throw_error(ErrorCode::kOutputWrite, {}, "x"), OutputError);
  try {
    throw_error(ErrorCode::kTraceUnplaceable, {"t.csv", 3, "requests"}, "never");
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::kTraceUnplaceable);
    CHECK(e.where().line == 3);
  }
}

TEST_CASE("Status values carry the code, the plugin and the reason", "[core][status]") {
  constexpr Status ok = Status::success();
  static_assert(ok.ok());
  const Status u = Status::unschedulable("node-resources-fit", "Insufficient cpu");
  CHECK_FALSE(u.ok());
  CHECK(u.code == StatusCode::kUnschedulable);
  CHECK(u.plugin == "node-resources-fit");
  CHECK(u.reason == "Insufficient cpu");
  CHECK(Status::unresolvable("p", "r").code == StatusCode::kUnschedulableAndUnresolvable);
  CHECK(Status::skip().is_skip());
  CHECK(to_string(StatusCode::kUnschedulable) == "Unschedulable");
  CHECK(to_string(StatusCode::kWait) == "Wait");
}
