// The command line (scenario::cli_main) in-process: `gpusched run --profile NAME|FILE`.
#include <catch2/catch.hpp>

#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <gpusched/scenario/scenario.hpp>

#include "support/support.hpp"

using namespace gpusched;
using namespace gpusched::scenario;
namespace t = gpusched::test;

namespace {


nlohmann::json json_file(const std::filesystem::path& p) { return nlohmann::json::parse(t::read_file(p)); }

}  // namespace

TEST_CASE("run --profile NAME runs the scenario with that built-in profile", "[scenario][cli]") {
  t::TempDir dir;
  const auto small = t::example("small.json").string();
  const auto plain = t::cli({"run", small, "--out", (dir.path() / "plain").string(), "--progress", "never"});
  REQUIRE(plain.rc == 0);
  const auto ff = t::cli({"run", small, "--out", (dir.path() / "ff").string(), "--profile", "first-fit", "--progress", "never"});
  INFO(ff.err);
  REQUIRE(ff.rc == 0);
  CHECK_THAT(ff.out, Catch::Contains("(seed 7, profile first-fit)"));
  const auto summary = json_file(dir.path() / "ff" / "summary.json");
  CHECK(summary["profile"] == "first-fit");
  CHECK(summary["inputs"]["scenario"]["profile"] == "first-fit");
  CHECK(summary["inputs"]["profile"]["score"][0]["name"] == "first-fit");
  const auto meta = json_file(dir.path() / "ff" / "meta.json");
  CHECK(meta["profile"] == "first-fit");
  CHECK(meta["scenario"]["digest"] != json_file(dir.path() / "plain" / "meta.json")["scenario"]["digest"]);
  CHECK_THAT(t::read_file(dir.path() / "ff" / "report.md"), Catch::Contains("| profile | first-fit |"));
  // The profile decides placements: first-fit and the scenario's binpack place differently.
  CHECK(t::read_file(dir.path() / "ff" / "events.csv") != t::read_file(dir.path() / "plain" / "events.csv"));

  // Naming the scenario's own profile changes nothing, byte for byte.
  const auto same = t::cli({"run", small, "--out", (dir.path() / "same").string(), "--profile", "binpack", "--progress", "never"});
  REQUIRE(same.rc == 0);
  for (const char* f : {"summary.json", "meta.json", "jobs.csv", "events.csv", "timeseries.csv", "report.md"}) {
    INFO(f);
    CHECK(t::read_file(dir.path() / "same" / f) == t::read_file(dir.path() / "plain" / f));
  }
}

TEST_CASE("run --profile FILE uses a profile file, named after the file when it gives no name", "[scenario][cli]") {
  t::TempDir dir;
  const auto file = dir.write("spread-heavy.json", R"({"extends": "binpack", "score": [{"name": "least-allocated", "weight": 3}]})");
  const auto r = t::cli({"run", t::example("small.json").string(), "--out", (dir.path() / "out").string(), "--profile", file.string(),
                      "--progress", "never", "--quiet"});
  INFO(r.err);
  REQUIRE(r.rc == 0);
  CHECK(r.out.empty());
  const auto summary = json_file(dir.path() / "out" / "summary.json");
  CHECK(summary["profile"] == "spread-heavy");
  CHECK(summary["inputs"]["scenario"]["profile"]["extends"] == "binpack");
  const auto& scores = summary["inputs"]["profile"]["score"];
  REQUIRE(scores.size() == 2);   // binpack's gpu-binpack, plus least-allocated
  CHECK(scores[0]["name"] == "gpu-binpack");
  CHECK(scores[1]["name"] == "least-allocated");
  CHECK(scores[1]["weight"] == 3.0);
  CHECK(json_file(dir.path() / "out" / "meta.json")["profile"] == "spread-heavy");
}

TEST_CASE("run --profile rejects unknown names and bad profile files before running", "[scenario][cli][errors]") {
  t::TempDir dir;
  const auto small = t::example("small.json").string();
  const auto out = (dir.path() / "out").string();
  auto r = t::cli({"run", small, "--out", out, "--profile", "fastest"});
  CHECK(r.rc == 1);
  CHECK_THAT(r.err, Catch::Contains("[gpusched.profile_error.306] --profile:"));
  CHECK_THAT(r.err, Catch::Contains("kube-default"));
  const auto bad = dir.write("bad.json", R"({"extends": "default", "score": ["gpu-binpack", "least-alocated"]})");
  r = t::cli({"run", small, "--out", out, "--profile", bad.string()});
  CHECK(r.rc == 1);
  CHECK_THAT(r.err, Catch::Contains(std::string("[gpusched.profile_error.301] ").append(bad.string()).append(": field 'score/1'")));
  const auto broken = dir.write("broken.json", R"({"score": )");
  r = t::cli({"run", small, "--out", out, "--profile", broken.string()});
  CHECK(r.rc == 1);
  CHECK_THAT(r.err, Catch::Contains("[gpusched.scenario_error.202]"));
  r = t::cli({"run", small, "--out", out, "--profile", (dir.path() / "missing.json").string()});
  CHECK(r.rc == 1);
  CHECK_THAT(r.err, Catch::Contains("[gpusched.scenario_error.201]"));
  CHECK_FALSE(std::filesystem::exists(dir.path() / "out"));   // nothing ran
}

TEST_CASE("run --help documents --profile", "[scenario][cli]") {
  const auto r = t::cli({"run", "--help"});
  CHECK(r.rc == 0);
  CHECK_THAT(r.out, Catch::Contains("--profile"));
  CHECK_THAT(r.out, Catch::Contains("profile JSON file"));
}
