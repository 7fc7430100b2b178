// Issue 13 (hardening), classes 1, 2, 5 and 6 for traces: every numeric trace field has a
// documented range (gpusched/traces/ranges.hpp) checked where it is read; values beyond the
// clock, values that round to nothing, the nvidia-smi CPU-list overflow, and seeds. Each bad
// input goes through the entry point a user has (`gpusched validate|run`, in-process) and must
// give exit code 1, a stable id, the file, line and field, and no crash.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <gpusched/gpu_catalog.hpp>
#include <gpusched/scenario/experiment.hpp>
#include <gpusched/tpu.hpp>
#include <gpusched/traces/nvidia_smi.hpp>
#include <gpusched/traces/philly.hpp>
#include <gpusched/traces/ranges.hpp>

#include "support/support.hpp"

using namespace gpusched;
namespace t = gpusched::test;

namespace {

/// `gpusched validate FILE [--format F]` on `text` written as `name`; the stderr of a failure.
t::CliResult validate(const t::TempDir& dir, const std::string& name, const std::string& text, const std::string& format = "") {
  const auto path = dir.write(name, text);
  std::vector<std::string> args{"validate", path.string()};
  if (!format.empty()) {
    args.emplace_back("--format");
    args.push_back(format);
  }
  return t::cli(args);
}

/// The failure must be exit 1 with `id`, `file:line:` and `field 'F':` on one line of stderr.
void check_fails(const t::CliResult& r, const std::string& id, const std::string& where, const std::string& field) {
  INFO("stderr: " << r.err << "stdout: " << r.out);
  CHECK(r.rc == 1);
  CHECK_THAT(r.err, Catch::Contains("[" + id + "]"));
  CHECK_THAT(r.err, Catch::Contains(where));
  CHECK_THAT(r.err, Catch::Contains("field '" + field + "':"));
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);   // one line, no trace of an abort
}

constexpr const char* kOutOfRange = "gpusched.trace_error.110";
constexpr const char* kBadValue = "gpusched.trace_error.102";
constexpr const char* kHeader = "id,submit_time,duration,tasks,min_available,priority,gpu_util,gang_timeout,walltime,cpu,memory,nvidia.com/gpu,gpusched.io/gpu-milli\n";
constexpr const char* kGoodRow = "ok,0,10,1,1,0,1,,,1,1Gi,1,\n";

/// A native CSV trace with one good row and `bad` on line 3.
std::string native(const std::string& bad) { return std::string(kHeader) + kGoodRow + bad + "\n"; }

}  // namespace

// ---------------------------------------------------------------- native CSV and JSON Lines

TEST_CASE("Native trace times beyond the clock are out of range with file, line and field", "[traces][ranges]") {
  t::TempDir dir;
  check_fails(validate(dir, "a.csv", native("a,1e30,10,1,1,0,1,,,1,1Gi,1,")), kOutOfRange, "a.csv:3:", "submit_time");
  check_fails(validate(dir, "b.csv", native("b,0,1e11,1,1,0,1,,,1,1Gi,1,")), kOutOfRange, "b.csv:3:", "duration");
  check_fails(validate(dir, "c.csv", native("c,0,10,1,1,0,1,2e10,,1,1Gi,1,")), kOutOfRange, "c.csv:3:", "gang_timeout");
  check_fails(validate(dir, "d.csv", native("d,0,10,1,1,0,1,,9.3e12,1,1Gi,1,")), kOutOfRange, "d.csv:3:", "walltime");
  // The limit itself is accepted.
  CHECK(validate(dir, "e.csv", native("e,1e10,1e10,1,1,0,1,1e10,1e10,1,1Gi,1,")).rc == 0);
}

TEST_CASE("Native trace values that would round to nothing are rejected, not rounded to 0", "[traces][ranges]") {
  t::TempDir dir;
  check_fails(validate(dir, "a.csv", native("a,0,1e-30,1,1,0,1,,,1,1Gi,1,")), kOutOfRange, "a.csv:3:", "duration");
  check_fails(validate(dir, "b.csv", native("b,0,10,1,1,0,1,1e-30,,1,1Gi,1,")), kOutOfRange, "b.csv:3:", "gang_timeout");
  check_fails(validate(dir, "c.csv", native("c,0,10,1,1,0,1,,1e-7,1,1Gi,1,")), kOutOfRange, "c.csv:3:", "walltime");
  check_fails(validate(dir, "d.csv", native("d,0,10,1,1,0,1,,,1e-30,1Gi,1,")), kOutOfRange, "d.csv:3:", "cpu");
  check_fails(validate(dir, "e.csv", native("e,0,10,1,1,0,1,,,1,1e-30,1,")), kOutOfRange, "e.csv:3:", "memory");
  check_fails(validate(dir, "f.csv", native("f,0,10,1,1,0,1,,,1,1Gi,1,0")), kOutOfRange, "f.csv:3:", "gpusched.io/gpu-milli");
  check_fails(validate(dir, "g.csv", native("g,0,10,1,1,0,1,,,1,1Gi,1,1001")), kOutOfRange, "g.csv:3:", "gpusched.io/gpu-milli");
  // A duration of exactly 0 is still a job that ends at once; one microsecond is the smallest positive span.
  CHECK(validate(dir, "h.csv", native("h,0,0,1,1,0,1,1e-6,1e-6,0.001,1,1,500")).rc == 0);
}

TEST_CASE("Native trace counts and priorities outside their range are rejected, never truncated", "[traces][ranges]") {
  t::TempDir dir;
  // 2^32 + 1 tasks used to become 1 task through a 32-bit cast.
  check_fails(validate(dir, "a.csv", native("a,0,10,4294967297,1,0,1,,,1,1Gi,1,")), kOutOfRange, "a.csv:3:", "tasks");
  check_fails(validate(dir, "b.csv", native("b,0,10,1e30,1,0,1,,,1,1Gi,1,")), kOutOfRange, "b.csv:3:", "tasks");
  check_fails(validate(dir, "c.csv", native("c,0,10,2,3,0,1,,,1,1Gi,1,")), kOutOfRange, "c.csv:3:", "min_available");
  check_fails(validate(dir, "d.csv", native("d,0,10,1,1,3000000000,1,,,1,1Gi,1,")), kOutOfRange, "d.csv:3:", "priority");
  check_fails(validate(dir, "e.csv", native("e,0,10,1,1,0,2,,,1,1Gi,1,")), kOutOfRange, "e.csv:3:", "gpu_util");
  check_fails(validate(dir, "f.csv", native("f,0,10,1,1,0,1,,,1,1Gi,9e16,")), kOutOfRange, "f.csv:3:", "nvidia.com/gpu");
  // Text that is not a number stays a bad value (NaN and inf included).
  check_fails(validate(dir, "g.csv", native("g,nan,10,1,1,0,1,,,1,1Gi,1,")), kBadValue, "g.csv:3:", "submit_time");
  check_fails(validate(dir, "h.csv", native("h,0,10,1,1,0,inf,,,1,1Gi,1,")), kBadValue, "h.csv:3:", "gpu_util");
}

TEST_CASE("JSON Lines traces and inline jobs check the same ranges", "[traces][ranges]") {
  t::TempDir dir;
  check_fails(validate(dir, "a.jsonl", "{\"id\": \"ok\", \"submit_time\": 0}\n{\"id\": \"a\", \"submit_time\": 1e30}\n"), kOutOfRange,
              "a.jsonl:2:", "submit_time");
  check_fails(validate(dir, "b.jsonl", "{\"id\": \"b\", \"submit_time\": 0, \"duration\": 1e-30}\n"), kOutOfRange, "b.jsonl:1:",
              "duration");
  check_fails(validate(dir, "c.jsonl", "{\"id\": \"c\", \"submit_time\": 0, \"requests\": {\"gpusched.io/gpu-milli\": 0}}\n"),
              kOutOfRange, "c.jsonl:1:", "requests.gpusched.io/gpu-milli");
  check_fails(validate(dir, "d.jsonl", "{\"id\": \"d\", \"submit_time\": 0, \"requests\": {\"cpu\": 1e-30}}\n"), kOutOfRange,
              "d.jsonl:1:", "requests.cpu");
}

// ---------------------------------------------------------------- importers

TEST_CASE("Alibaba openb, PAI and DLRM files check times and amounts", "[traces][ranges]") {
  t::TempDir dir;
  const std::string pods = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n";
  check_fails(validate(dir, "p1.csv", pods + "a,1000,1024,1,500,,LS,Running,1e11,,\n", "openb-pods"), kOutOfRange, "p1.csv:2:",
              "creation_time");
  check_fails(validate(dir, "p2.csv", pods + "a,1e20,1024,1,500,,LS,Running,0,,\n", "openb-pods"), kOutOfRange, "p2.csv:2:",
              "cpu_milli");
  check_fails(validate(dir, "p3.csv", pods + "a,1000,1024,1,0,,LS,Running,0,,\n", "openb-pods"), kOutOfRange, "p3.csv:2:",
              "gpu_milli");
  const std::string pai = "machine,gpu_type,cap_cpu,cap_mem,cap_gpu\n";
  check_fails(validate(dir, "m1.csv", pai + "m1,CPU,1e-30,10,0\n", "pai-machines"), kOutOfRange, "m1.csv:2:", "cap_cpu");
  check_fails(validate(dir, "m2.csv", pai + "m2,CPU,8,1e-30,0\n", "pai-machines"), kOutOfRange, "m2.csv:2:", "cap_mem");
  check_fails(validate(dir, "m3.csv", pai + "m3,CPU,1e300,8,0\n", "pai-machines"), kOutOfRange, "m3.csv:2:", "cap_cpu");
}

TEST_CASE("Philly and Tiresias files check times and counts", "[traces][ranges]") {
  t::TempDir dir;
  const std::string philly = "timestamp,duration,num_gpus,cluster\n";
  // Timestamps 8,000 years apart give submit times far past 1e10 s.
  check_fails(validate(dir, "j1.csv", philly + "2017-10-01 00:00:00,60,1,vc1\n9999-12-31 23:59:59,60,1,vc1\n", "philly"), kOutOfRange,
              "j1.csv:3:", "timestamp");
  check_fails(validate(dir, "j2.csv", philly + "2017-10-01 00:00:00,1e11,1,vc1\n", "philly"), kOutOfRange, "j2.csv:2:", "duration");
  check_fails(validate(dir, "j3.csv", philly + "2017-10-01 00:00:00,60,2000000,vc1\n", "philly"), kOutOfRange, "j3.csv:2:", "num_gpus");
  const std::string tiresias = "job_id,num_gpu,submit_time,duration\n";
  check_fails(validate(dir, "t1.csv", tiresias + "1,1,0,1e-30\n", "tiresias"), kOutOfRange, "t1.csv:2:", "duration");
  check_fails(validate(dir, "t2.csv", tiresias + "1,1,2e10,60\n", "tiresias"), kOutOfRange, "t2.csv:2:", "submit_time");
  check_fails(validate(dir, "c1.csv", "num_switch,num_node_p_switch,num_gpu_p_node,num_cpu_p_node,mem_p_node\n1,1,4,8,1e-30\n",
                       "tiresias-cluster"),
              kOutOfRange, "c1.csv:2:", "mem_p_node");
}

TEST_CASE("SWF logs check times, sizes and memory, and a prime processor count is quick", "[traces][ranges]") {
  t::TempDir dir;
  auto line = [](const std::string& submit, const std::string& run, const std::string& procs, const std::string& req_time,
                 const std::string& mem) {
    return "1 " + submit + " -1 " + run + " " + procs + " -1 -1 " + procs + " " + req_time + " " + mem + " 1 1 1 1 1 -1 -1 -1\n";
  };
  check_fails(validate(dir, "a.swf", line("1e11", "10", "1", "-1", "-1")), kOutOfRange, "a.swf:1:", "submit_time");
  check_fails(validate(dir, "b.swf", line("0", "1e-30", "1", "-1", "-1")), kOutOfRange, "b.swf:1:", "run_time");
  check_fails(validate(dir, "c.swf", line("0", "10", "1", "1e-30", "-1")), kOutOfRange, "c.swf:1:", "requested_time");
  check_fails(validate(dir, "d.swf", line("0", "10", "1", "-1", "1e16")), kOutOfRange, "d.swf:1:", "requested_memory");
  check_fails(validate(dir, "e.swf", line("0", "10", "1e17", "-1", "-1")), kOutOfRange, "e.swf:1:", "allocated_processors");
  // A prime count above the node size used to take one step per processor to split into a gang
  // (999,999,937 steps); now at most gpus_per_node steps, and 1e9 one-GPU tasks is out of range.
  const auto start = std::chrono::steady_clock::now();
  check_fails(validate(dir, "f.swf", line("0", "10", "999999937", "-1", "-1")), kOutOfRange, "f.swf:1:", "allocated_processors");
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(2));
}

TEST_CASE("split_gang takes at most per_node steps and keeps its shapes", "[traces][ranges]") {
  using traces::split_gang;
  const auto g12 = split_gang(12, 8);
  CHECK((g12.tasks == 2 && g12.per_task == 6));
  const auto g16 = split_gang(16, 8);
  CHECK((g16.tasks == 2 && g16.per_task == 8));
  const auto g7 = split_gang(7, 8);
  CHECK((g7.tasks == 1 && g7.per_task == 7));
  const auto prime = split_gang(999'999'937, 8);
  CHECK((prime.tasks == 999'999'937 && prime.per_task == 1));
  const auto g18 = split_gang(18, 8);   // 3 x 6, not 9 x 2
  CHECK((g18.tasks == 3 && g18.per_task == 6));
}

TEST_CASE("kubectl pod and node lists check ranges with the line of the field", "[traces][ranges]") {
  t::TempDir dir;
  auto pod = [](const std::string& requests, const std::string& extra_meta = "", const std::string& extra_spec = "") {
    return std::string("{\"apiVersion\": \"v1\", \"kind\": \"List\", \"items\": [\n") +
           "{\"kind\": \"Pod\", \"metadata\": {\"name\": \"p\"" + extra_meta + "},\n" +
           "\"spec\": {\"containers\": [{\"name\": \"c\",\n\"resources\": {\"requests\": " + requests + "}}]" + extra_spec + "}}\n]}\n";
  };
  check_fails(validate(dir, "a.json", pod("{\"cpu\": \"1\", \"gpusched.io/gpu-milli\": \"0\"}"), "kubectl-pods"), kOutOfRange,
              "a.json:4:", "items[0].spec.containers[0].resources.requests.gpusched.io/gpu-milli");
  check_fails(validate(dir, "b.json", pod("{\"cpu\": \"1e-30\"}"), "kubectl-pods"), kOutOfRange, "b.json:4:",
              "items[0].spec.containers[0].resources.requests.cpu");
  check_fails(validate(dir, "c.json", pod("{\"cpu\": \"1\"}", ", \"annotations\": {\"gpusched.io/duration\": \"1e-30\"}"),
                       "kubectl-pods"),
              kOutOfRange, "c.json:2:", "items[0].metadata.annotations.gpusched.io/duration");
  check_fails(validate(dir, "d.json", pod("{\"cpu\": \"1\"}", "", ", \"priority\": 3000000000"), "kubectl-pods"), kOutOfRange,
              "d.json:4:", "items[0].spec.priority");
  const std::string node = "{\"apiVersion\": \"v1\", \"kind\": \"List\", \"items\": [\n{\"kind\": \"Node\", \"metadata\": {\"name\": \"n\"},\n"
                           "\"status\": {\"allocatable\": {\"cpu\": \"1e-30\", \"memory\": \"1Gi\"}}}\n]}\n";
  check_fails(validate(dir, "n.json", node, "kubectl-nodes"), kOutOfRange, "n.json:3:", "items[0].status.allocatable.cpu");
}

// ---------------------------------------------------------------- nvidia-smi topo -m

TEST_CASE("A topo CPU affinity range ending at INT_MAX is out of range at once, not an endless loop", "[traces][ranges][nvidia_smi]") {
  const std::string topo = "\tGPU0\tCPU Affinity\tNUMA Affinity\nGPU0\t X \t2147483640-2147483647\t0\n";
  const auto start = std::chrono::steady_clock::now();
  try {
    (void)traces::parse_nvidia_smi_topo(topo, "topo.txt");
    FAIL("accepted a CPU range ending at INT_MAX");
  } catch (const TraceError& e) {
    CHECK(e.id() == kOutOfRange);
    CHECK(e.where().file == "topo.txt");
    CHECK(e.where().line == 2);
    CHECK(e.where().field == "CPU Affinity");
  }
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(1));
  // Past int altogether: still a named error, no overflow.
  CHECK_THROWS_AS(traces::parse_nvidia_smi_topo("\tGPU0\tCPU Affinity\nGPU0\t X \t0-99999999999\n", "t"), TraceError);
  CHECK_THROWS_AS(traces::parse_nvidia_smi_topo("\tGPU0\tNUMA Affinity\nGPU0\t X \t2147483647\n", "t"), TraceError);
}

TEST_CASE("Many wide CPU ranges cost memory in the text's length, not in the CPUs they name", "[traces][ranges][nvidia_smi]") {
  // 2,000 ranges of 2^20 CPUs each: with a set of CPU numbers this took ~100 GB; as ranges, a few KB.
  std::string list;
  for (int i = 0; i < 2000; ++i) list += (i ? "," : "") + std::string("0-1048575");
  const std::string topo = "\tGPU0\tCPU Affinity\tNUMA Affinity\nGPU0\t X \t" + list + "\t0\n";
  const std::string xml =
      "<nvidia_smi_log><gpu id=\"0\"><product_name>NVIDIA A100 80GB PCIe</product_name>"
      "<fb_memory_usage><total>81920 MiB</total></fb_memory_usage></gpu></nvidia_smi_log>";
  const auto node = traces::node_from_nvidia_smi(xml, topo, GpuCatalog::builtin(), "q.xml", "topo.txt", {});
  CHECK(node.cpu_milli == std::int64_t{1048576} * 1000);   // overlapping ranges count once
}

TEST_CASE("A topo matrix with more GPU columns than a node can have is out of range", "[traces][ranges][nvidia_smi]") {
  std::string header;
  for (int g = 0; g < 1100; ++g) header += "\tGPU" + std::to_string(g);
  try {
    (void)traces::parse_nvidia_smi_topo(header + "\n", "topo.txt");
    FAIL("accepted 1100 GPU columns");
  } catch (const TraceError& e) {
    CHECK(e.id() == kOutOfRange);
    CHECK(e.where().line == 1);
  }
}

// ---------------------------------------------------------------- transforms

TEST_CASE("A transform that would scale times past the clock is a scenario error naming the step", "[traces][ranges]") {
  t::TempDir dir;
  dir.write("jobs.csv", "id,submit_time,duration,cpu,memory\na,0,10,1,1Gi\nb,5e9,10,1,1Gi\n");
  const auto scenario = dir.write("s.json", R"({"schema_version": 1, "name": "scaled",
    "cluster": {"nodes": [{"name": "n", "cpu": "8", "memory": "32Gi"}]}, "profile": "binpack",
    "workload": {"trace": {"path": "jobs.csv", "transforms": [{"scale_time": 10}]}}})");
  const auto r = t::cli({"run", scenario.string(), "--out", (dir.path() / "out").string(), "--progress", "never"});
  INFO(r.err);
  CHECK(r.rc == 1);
  CHECK_THAT(r.err, Catch::Contains("[gpusched.scenario_error.211]"));
  CHECK_THAT(r.err, Catch::Contains("s.json:"));
  CHECK_THAT(r.err, Catch::Contains("transforms/0/scale_time"));
  CHECK_THAT(r.err, Catch::Contains("job \"b\""));
}

// ---------------------------------------------------------------- catalog and TPU ranges

TEST_CASE("Catalog numbers out of range are catalog errors, never a wrapped or truncated cast", "[traces][ranges]") {
  auto add = [](const std::string& json) {
    GpuCatalog c;
    c.add_json(nlohmann::json::parse(json), "cat.json");
  };
  CHECK_THROWS_WITH(add(R"([{"name": "X", "memory_mib": 1e300}])"), Catch::Contains("catalog_error.402") && Catch::Contains("memory_mib"));
  CHECK_THROWS_WITH(add(R"([{"name": "X", "memory_mib": 1024, "sms": 4294967297}])"), Catch::Contains("sms"));
  // framebuffer x max_per_gpu used to overflow int64 and pass the "fits the GPU" check.
  CHECK_THROWS_AS(add(R"([{"name": "X", "memory_mib": 1099511627776,
                           "vgpu": [{"name": "v", "framebuffer_mib": 1099511627776, "max_per_gpu": 8589934592}]}])"),
                  CatalogError);
  CHECK_THROWS_WITH(add(R"([{"name": "X", "memory_mib": 1024, "mig": {"memory_slices": 4294967304, "compute_slices": 7, "profiles": []}}])"),
                    Catch::Contains("memory_slices"));
  CHECK_THROWS_WITH(add(R"([{"name": "X", "memory_mib": 1024, "mig": {"memory_slices": 8, "compute_slices": 7,
                           "profiles": [{"name": "1g", "compute_slices": 1, "memory_slices": 1, "starts": [2147483647]}]}}])"),
                    Catch::Contains("starts"));
}

TEST_CASE("TPU topologies with huge dimensions are errors, not an overflowing chip count", "[traces][ranges]") {
  CHECK_THROWS_AS(parse_tpu_topology("2147483647x2147483647x2147483647", {"t", 1, "topology"}), CatalogError);
  CHECK_THROWS_AS(parse_tpu_topology("2x2x2x2", {"t", 1, "topology"}), CatalogError);
  CHECK(parse_tpu_topology("4x4x8", {"t", 1, "topology"}).chips() == 128);
  TpuTopology big;
  big.dims = {2147483647, 2147483647, 2147483647};
  CHECK(big.chips() == std::numeric_limits<std::int64_t>::max());   // saturates
}

// ---------------------------------------------------------------- seeds

TEST_CASE("CLI seeds are 0..2^64-1: a negative or larger seed is one out-of-range error", "[traces][ranges][seeds]") {
  t::TempDir dir;
  const auto small = t::source_dir() / "examples" / "small.json";
  for (const std::string bad : {"-5", "18446744073709551616", "99999999999999999999999"}) {
    INFO(bad);
    const auto r = t::cli({"run", small.string(), "--seed", bad, "--out", (dir.path() / "x").string(), "--progress", "never"});
    CHECK(r.rc == 1);
    CHECK_THAT(r.err, Catch::Contains("[gpusched.scenario_error.211] command line: field '--seed': " + bad + " is out of range"));
  }
  const auto text = t::cli({"run", small.string(), "--seed", "abc", "--out", (dir.path() / "y").string(), "--progress", "never"});
  CHECK(text.rc == 1);
  CHECK_THAT(text.err, Catch::Contains("[gpusched.scenario_error.203] command line: field '--seed':"));
  // The largest seed runs, and is reported as given (not clamped).
  const auto max = t::cli({"run", small.string(), "--seed", "18446744073709551615", "--out", (dir.path() / "max").string(),
                           "--progress", "never", "--quiet"});
  INFO(max.err);
  CHECK(max.rc == 0);
  CHECK_THAT(t::read_file(dir.path() / "max" / "summary.json"), Catch::Contains("18446744073709551615"));
}

TEST_CASE("Seed lists reach 2^64-1 without wrapping and reject what is out of range", "[traces][ranges][seeds]") {
  using scenario::parse_seeds;
  CHECK(parse_seeds("18446744073709551614-18446744073709551615") ==
        std::vector<std::uint64_t>{18446744073709551614ULL, 18446744073709551615ULL});
  CHECK(parse_seeds("18446744073709551615") == std::vector<std::uint64_t>{18446744073709551615ULL});
  try {
    (void)parse_seeds("1,18446744073709551616");
    FAIL("accepted 2^64");
  } catch (const ScenarioError& e) {
    CHECK(e.id() == "gpusched.scenario_error.211");
    CHECK(e.where().field == "--seeds");
  }
  CHECK_THROWS_AS(scenario::parse_seed("-1", {"x", 0, "seed"}), ScenarioError);
  CHECK(scenario::parse_seed("0", {"x", 0, "seed"}) == 0);
}
