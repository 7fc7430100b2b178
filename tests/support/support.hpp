#pragma once
/// Helpers shared by the C++ tests: paths into the source tree, temporary folders, small
/// hand-built clusters and jobs, and the cluster-consistency check used by the property tests.
#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include <gpusched/cluster.hpp>
#include <gpusched/gpu_catalog.hpp>
#include <gpusched/job.hpp>
#include <gpusched/resources.hpp>

namespace gpusched::test {

/// The repository root (GPUSCHED_SOURCE_DIR), so tests never depend on the working directory.
std::filesystem::path source_dir();
/// A path under examples/.
std::filesystem::path example(const std::string& relative);

/// A file of the real public traces (../shared/traces next to the repository, or
/// $GPUSCHED_TRACES_DIR), e.g. real_trace("alibaba-gpu-v2023-openb/openb_pod_list_default.csv").
/// Empty when the file is absent: the caller skips with a printed reason, e.g.
///   const auto path = test::real_trace("philly/cluster_machine_list");
///   if (path.empty()) return;   // real_trace() has already WARNed why
std::filesystem::path real_trace(const std::string& relative);

/// Runs `f`, which must throw an `E` (a gpusched error class), and returns its message; fails
/// the test when nothing or something else is thrown. Example:
///   CHECK_THAT(t::error_message<TraceError>([&] { read(text); }), Catch::StartsWith("[gpusched.trace_error.102] a.csv:3:"));
/// Runs `f`, which must throw an `E`, and returns the exception (its id(), where(), detail());
/// fails the test when nothing or something else is thrown. Example:
///   const auto e = t::thrown<ScenarioError>([&] { (void)parse_scenario(text, "bad.json", "."); });
template <class E, class F>
E thrown(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e;
  } catch (const std::exception& e) {
    FAIL("wrong exception type: " << e.what());
  }
  FAIL("no exception");
  throw;   // unreachable: FAIL throws
}

template <class E, class F>
std::string error_message(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    FAIL("wrong exception type: " << e.what());
  }
  FAIL("no exception");
  return {};
}

/// Checks that two workloads hold the same jobs in the same order: everything a native trace
/// carries (names, times, tasks, gang size, priority, queue, requests, constraints), not the
/// source line. Round-trip tests of the trace readers and writers use it.
void check_same_jobs(const Workload& a, const Workload& b);

/// A fresh, empty folder under the system temp directory, removed on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  [[nodiscard]] const std::filesystem::path& path() const { return path_; }
  /// Writes `text` to `name` inside the folder and returns its path.
  std::filesystem::path write(const std::string& name, std::string_view text) const;

 private:
  std::filesystem::path path_;
};

/// "n" + 3 -> "n3" (without GCC 12's false -Wstringop-overflow on "literal" + std::string).
std::string numbered(std::string prefix, std::int64_t i);

/// The whole file as bytes.
std::string read_file(const std::filesystem::path& p);

/// What `gpusched ARGS...` returned and printed, run in-process (scenario::cli_main).
struct CliResult {
  int rc = 0;
  std::string out, err;
};
/// Runs `gpusched ARGS...` in-process with the built-in registry, capturing std::cout and std::cerr.
CliResult cli(std::vector<std::string> args);

using Items = std::vector<std::pair<std::string, std::string>>;

/// A node with `cpu_cores` cores, `memory_gib` GiB and `gpus` GPUs of `model` (builtin catalog name).
NodeSpec node(std::string name, std::int64_t cpu_cores, std::int64_t memory_gib, int gpus = 0,
              std::string_view model = "A100-80GB", std::int16_t sockets = 1);
/// A cluster over the builtin catalog.
ClusterState cluster(std::vector<NodeSpec> nodes, ResourceTable resources = {});
/// A request from (name, value) pairs, as a trace would write it, over the builtin catalog.
TaskRequest request(const Items& items, std::vector<std::string> models = {});
TaskRequest request(const Items& items, ResourceTable& resources, std::vector<std::string> models = {});
/// A job; duration_s < 0 means it never finishes.
JobSpec job(std::string name, double submit_s, double duration_s, TaskRequest r, std::int32_t tasks = 1,
            std::int32_t min_available = -1, std::int32_t priority = 0);

/// A scenario document named `name` whose cluster `list` ("nodes" or "node_groups") holds
/// `nodes` and whose workload is the inline `jobs` (both the insides of the JSON lists);
/// `extra` is more top-level members, each followed by a comma (a profile, devices, events).
std::string scenario_doc(std::string_view name, std::string_view list, std::string_view nodes, std::string_view jobs,
                         std::string_view extra = "");

/// Checks every bound and aggregate of the cluster: 0 <= free <= capacity for CPU, memory, every
/// GPU's milli and memory; per-node aggregates equal a recomputation; totals equal the sums.
/// Returns an empty string when consistent, else a description of the first violation.
std::string cluster_violation(const ClusterState& c);
/// True when nothing is allocated anywhere (every node and GPU fully free, totals used == 0).
bool cluster_empty(const ClusterState& c);

}  // namespace gpusched::test
