// Atomic output folders (scenario/src/output_files.hpp) and interruption of runs
// (gpusched/interrupt.hpp): what a run leaves behind when it fails or is stopped.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <gpusched/interrupt.hpp>
#include <gpusched/scenario/scenario.hpp>

#include "support/support.hpp"

using namespace gpusched;
using namespace gpusched::scenario;
namespace t = gpusched::test;
namespace fs = std::filesystem;

namespace {

/// The names in a folder, sorted (hidden staging folders included).
std::vector<std::string> listing(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

/// A poll that reports an interruption on its `fire_at`-th call (a thread-local hook, as Python's).
std::atomic<int> g_polls{0};
int g_fire_at = 0;
bool counting_poll() { return ++g_polls >= g_fire_at; }

/// Installs counting_poll on this thread for a scope.
struct PollScope {
  explicit PollScope(int fire_at) {
    g_polls = 0;
    g_fire_at = fire_at;
    set_thread_interrupt_poll(&counting_poll);
  }
  ~PollScope() { set_thread_interrupt_poll(nullptr); }
  PollScope(const PollScope&) = delete;
  PollScope& operator=(const PollScope&) = delete;
};

/// The small example without its event log (so a rerun into the same folder writes no events.csv).
Scenario small_without_events() {
  Scenario sc = load_scenario(t::example("small.json"));
  sc.outputs.event_log = false;
  return sc;
}

}  // namespace

TEST_CASE("A run whose interrupt poll fires stops early with InterruptedError", "[scenario][interrupt]") {
  const Scenario sc = demo_scenario();
  {
    PollScope poll(3);   // the third poll (about 3,000 events and cycles in) says stop
    try {
      (void)run(sc);
      FAIL("the run went to the end");
    } catch (const InterruptedError& e) {
      CHECK(e.code() == ErrorCode::kInterrupted);
      CHECK(e.id() == "gpusched.io_error.602");
    }
    CHECK(g_polls == 3);   // it stopped at once, not at the end of the run
  }
  // Without a poll the same scenario runs: the flag and hook are not sticky.
  CHECK_FALSE(interrupt_requested());
}

TEST_CASE("The process-wide flag stops a run in another thread within a fraction of a second", "[scenario][interrupt]") {
  // Ten times the demo's jobs: the run must still be going when the flag is set (the demo alone
  // now ends in about 0.2 s, near the 150 ms the test waits).
  Scenario sc = demo_scenario();
  REQUIRE(sc.synthetic);
  sc.synthetic->jobs *= 10;
  clear_interrupt();
  std::atomic<bool> threw{false};
  std::chrono::steady_clock::time_point stopped;
  std::thread worker([&] {
    try {
      (void)run(sc);
    } catch (const InterruptedError&) {
      threw = true;
    }
    stopped = std::chrono::steady_clock::now();
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  const auto asked = std::chrono::steady_clock::now();
  request_interrupt();
  worker.join();
  clear_interrupt();
  CHECK(threw);
  CHECK(std::chrono::duration<double>(stopped - asked).count() < 0.5);
}

TEST_CASE("A directory in place of jobs.csv is an OutputError naming it, and no summary.json is left", "[scenario][outputs]") {
  t::TempDir dir;
  const auto out = dir.path() / "out";
  fs::create_directories(out / "jobs.csv");
  const auto r = run(small_without_events());
  try {
    (void)write_outputs(r, out);
    FAIL("no error");
  } catch (const OutputError& e) {
    CHECK(e.id() == "gpusched.io_error.601");
    CHECK(e.where().file == (out / "jobs.csv").string());
  }
  CHECK_FALSE(fs::exists(out / "summary.json"));
  CHECK_FALSE(fs::exists(out / "meta.json"));
  for (const auto& name : listing(out)) CHECK(name.rfind(".gpusched-staging", 0) != 0);   // staging removed
}

TEST_CASE("A failed rewrite leaves no summary.json beside the earlier run's files", "[scenario][outputs]") {
  t::TempDir dir;
  const auto out = dir.path() / "out";
  const auto r = run(load_scenario(t::example("small.json")));
  (void)write_outputs(r, out);
  REQUIRE(fs::exists(out / "summary.json"));
  fs::remove(out / "timeseries.csv");
  fs::create_directories(out / "timeseries.csv");   // the rewrite cannot put timeseries.csv in place
  CHECK_THROWS_AS(write_outputs(r, out), OutputError);
  CHECK_FALSE(fs::exists(out / "summary.json"));   // nothing looks complete
}

TEST_CASE("Rewriting an output folder removes the earlier run's events.csv and keeps other files", "[scenario][outputs]") {
  t::TempDir dir;
  const auto out = dir.path() / "out";
  (void)write_outputs(run(load_scenario(t::example("small.json"))), out);
  REQUIRE(fs::exists(out / "events.csv"));
  (void)dir.write("out/notes.txt", "mine");
  (void)dir.write("out/timeseries.png", "stale plot");
  fs::create_directories(out / "events-archive");
  const auto files = write_outputs(run(small_without_events()), out);
  CHECK_FALSE(fs::exists(out / "events.csv"));
  CHECK_FALSE(fs::exists(out / "timeseries.png"));   // a gpusched name this run did not write
  CHECK(t::read_file(out / "notes.txt") == "mine");  // not ours: kept
  CHECK(fs::is_directory(out / "events-archive"));
  CHECK(listing(out) == std::vector<std::string>{"events-archive", "fragmentation.csv", "jobs.csv", "meta.json", "notes.txt", "report.md", "summary.json",
                                                 "timeseries.csv"});
  CHECK(files.back().filename() == "meta.json");   // the order written (meta.json lists them) is kept
}

TEST_CASE("Outputs written through the staging folder are byte-identical to a fresh write", "[scenario][outputs]") {
  t::TempDir dir;
  const auto r = run(load_scenario(t::example("small.json")));
  const auto a = write_outputs(r, dir.path() / "a");
  (void)write_outputs(run(small_without_events()), dir.path() / "b");   // b holds another run first
  const auto b = write_outputs(r, dir.path() / "b");
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    INFO(a[i].filename().string());
    CHECK(a[i].filename() == b[i].filename());
    CHECK(t::read_file(a[i]) == t::read_file(b[i]));
  }
  CHECK(listing(dir.path() / "a") == listing(dir.path() / "b"));
}

TEST_CASE("An interruption while writing leaves the earlier complete run untouched", "[scenario][outputs][interrupt]") {
  t::TempDir dir;
  const auto out = dir.path() / "out";
  (void)write_outputs(run(load_scenario(t::example("small.json"))), out);
  const auto before = listing(out);
  const auto summary = t::read_file(out / "summary.json");
  const auto r = run(small_without_events());
  {
    PollScope poll(2);   // the first file is written, the second is refused
    CHECK_THROWS_AS(write_outputs(r, out), InterruptedError);
  }
  CHECK(listing(out) == before);
  CHECK(t::read_file(out / "summary.json") == summary);
  // A folder made for an interrupted write is removed again.
  {
    PollScope poll(1);
    CHECK_THROWS_AS(write_outputs(r, dir.path() / "fresh"), InterruptedError);
  }
  CHECK_FALSE(fs::exists(dir.path() / "fresh"));
}

TEST_CASE("gpusched run exits 130 with one line and writes nothing when interrupted", "[scenario][cli][interrupt]") {
  t::TempDir dir;
  const auto out = dir.path() / "out";
  PollScope poll(2);
  const auto r = t::cli({"demo", "--out", out.string(), "--progress", "never"});
  CHECK(r.rc == 130);
  CHECK(r.err == "gpusched: interrupted; nothing was written\n");
  CHECK(r.out.empty());
  CHECK_FALSE(fs::exists(out));
  CHECK_FALSE(interrupt_requested());   // the command clears the flag behind it
}

TEST_CASE("convert's write failure exits 3 with an io_error id and the path", "[scenario][cli][outputs]") {
  t::TempDir dir;
  const auto target = dir.path() / "missing" / "out.csv";
  const auto r = t::cli({"convert", t::example("traces/mixed.csv").string(), target.string()});
  INFO(r.err);
  CHECK(r.rc == 3);
  CHECK_THAT(r.err, Catch::StartsWith("gpusched: error: [gpusched.io_error.601] " + target.string() + ":"));
  // A directory in the way: same error, and nothing beside it.
  fs::create_directories(dir.path() / "taken.csv");
  const auto r2 = t::cli({"convert", t::example("traces/mixed.csv").string(), (dir.path() / "taken.csv").string()});
  CHECK(r2.rc == 3);
  CHECK_THAT(r2.err, Catch::Contains("[gpusched.io_error.601]"));
  CHECK(listing(dir.path()) == std::vector<std::string>{"taken.csv"});
  // A successful convert leaves only its file.
  const auto ok = t::cli({"convert", t::example("traces/mixed.csv").string(), (dir.path() / "ok.csv").string()});
  CHECK(ok.rc == 0);
  CHECK(listing(dir.path()) == std::vector<std::string>{"ok.csv", "taken.csv"});
}
