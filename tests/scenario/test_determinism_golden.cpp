// Reproducibility: the same scenario and seed give byte-identical outputs, and the small example
// reproduces its checked-in event log (tests/data/golden/small_events.csv) byte for byte.
#include <catch2/catch.hpp>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include <gpusched/scenario/scenario.hpp>

#include "support/support.hpp"

using namespace gpusched;
using namespace gpusched::scenario;
namespace t = gpusched::test;

namespace {

const char* const kTables[] = {"summary.json", "jobs.csv", "timeseries.csv", "report.md", "meta.json"};

/// The demo's cluster, profile and workload shape with fewer jobs, so that three runs stay fast.
Scenario reduced_demo(std::int64_t jobs) {
  auto doc = nlohmann::json::parse(demo_scenario_text());
  doc["workload"]["synthetic"]["jobs"] = jobs;
  return parse_scenario(doc, "<built-in demo, reduced>", t::source_dir());
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

/// Empty when equal, else the first differing line of each, unified-diff style.
std::string first_difference(const std::string& expected, const std::string& actual) {
  if (expected == actual) return {};
  const auto e = lines_of(expected), a = lines_of(actual);
  std::ostringstream out;
  for (std::size_t i = 0; i < std::max(e.size(), a.size()); ++i) {
    const std::string* el = i < e.size() ? &e[i] : nullptr;
    const std::string* al = i < a.size() ? &a[i] : nullptr;
    if (el && al && *el == *al) continue;
    out << "first difference at line " << i + 1 << ":\n";
    if (i > 0) out << "  " << e[i - 1] << "\n";
    out << "- " << (el ? *el : "<end of file>") << "\n+ " << (al ? *al : "<end of file>") << "\n";
    out << "(" << e.size() << " expected lines, " << a.size() << " actual lines)";
    return out.str();
  }
  return "the files differ only in line endings or a final newline";
}

}  // namespace

TEST_CASE("The same scenario and seed give byte-identical outputs", "[scenario][determinism]") {
  const auto sc = reduced_demo(6000);
  t::TempDir dir;
  write_outputs(run(sc), dir.path() / "a");
  write_outputs(run(sc), dir.path() / "b");
  for (const char* f : kTables) {
    INFO(f);
    const auto a = t::read_file(dir.path() / "a" / f), b = t::read_file(dir.path() / "b" / f);
    CHECK_FALSE(a.empty());
    CHECK(first_difference(a, b) == "");
  }
}

TEST_CASE("A different seed gives a different demo job table", "[scenario][determinism]") {
  const auto sc = reduced_demo(6000);
  t::TempDir dir;
  write_outputs(run(sc), dir.path() / "a");
  write_outputs(run(sc, 43), dir.path() / "b");
  const auto a = t::read_file(dir.path() / "a" / "jobs.csv"), b = t::read_file(dir.path() / "b" / "jobs.csv");
  CHECK(a != b);
  const auto la = lines_of(a), lb = lines_of(b);
  REQUIRE(la.size() == lb.size());
  CHECK(la[0] == lb[0]);   // the header row
  std::size_t same = 0;
  for (std::size_t i = 1; i < la.size(); ++i) same += la[i] == lb[i] ? 1 : 0;
  CHECK(same < la.size() / 10);
  // The seed is recorded beside the tables, not in them.
  for (const auto& [run, seed] : {std::pair{"a", 42}, std::pair{"b", 43}}) {
    for (const char* f : {"summary.json", "meta.json"}) {
      INFO(run << "/" << f);
      CHECK(nlohmann::json::parse(t::read_file(dir.path() / run / f))["seed"] == seed);
    }
  }
}

TEST_CASE("The small example gives byte-identical outputs, event log included", "[scenario][determinism]") {
  const auto sc = load_scenario(t::example("small.json"));
  t::TempDir dir;
  write_outputs(run(sc), dir.path() / "a");
  write_outputs(run(sc), dir.path() / "b");
  for (const char* f : {"summary.json", "jobs.csv", "timeseries.csv", "events.csv", "report.md"}) {
    INFO(f);
    CHECK(first_difference(t::read_file(dir.path() / "a" / f), t::read_file(dir.path() / "b" / f)) == "");
  }
}

TEST_CASE("The small example reproduces the golden event log byte for byte", "[scenario][golden]") {
  // Loaded under the name the CLI gives it when run from the repository root
  // (`gpusched run examples/small.json`), as the golden file was made.
  const auto text = t::read_file(t::example("small.json"));
  const auto sc = parse_scenario(std::string_view(text), "examples/small.json", t::example(""));
  t::TempDir dir;
  write_outputs(run(sc), dir.path());
  const auto actual = t::read_file(dir.path() / "events.csv");
  const auto golden_path = t::source_dir() / "tests" / "data" / "golden" / "small_events.csv";
  const auto expected = t::read_file(golden_path);
  const auto diff = first_difference(expected, actual);
  INFO("golden file: " << golden_path.string() << "\n" << diff
                       << "\nIf the change is intended, regenerate it as tests/data/golden/README.md says and review the diff.");
  CHECK(diff.empty());
  CHECK(actual.rfind("time_s,event,job,node,detail\n", 0) == 0);   // the header row first, no stamp
}
