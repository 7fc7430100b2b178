// The Standard Workload Format: reading with both processor units, errors with file, line and
// SWF field name, writing, and round trips (hand-built, Philly and Tiresias workloads).
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>
#include <string>

#include <gpusched/traces/philly.hpp>
#include <gpusched/traces/swf.hpp>

#include "support/support.hpp"

using namespace gpusched;
using namespace gpusched::traces;
namespace t = gpusched::test;

namespace {

/// The TraceError's message (the test fails when nothing or something else is thrown).
template <class F>
std::string trace_error(F&& f) {
  return t::error_message<TraceError>(std::forward<F>(f));
}

Workload read(const std::string& text, const SwfOptions& o = {}) {
  std::istringstream in(text);
  GpuCatalog catalog = GpuCatalog::builtin();
  ResourceTable resources;
  return read_swf(in, "log.swf", catalog, resources, o);
}

std::string write(const Workload& jobs, const SwfOptions& o = {}) {
  std::ostringstream out;
  const GpuCatalog catalog = GpuCatalog::builtin();
  const ResourceTable resources;
  write_swf(out, jobs, catalog, resources, o);
  return out.str();
}

const JobSpec& by_name(const Workload& w, const std::string& name) {
  for (const auto& j : w) {
    if (j.name == name) return j;
  }
  FAIL("no job " << name);
  throw;
}

/// What SWF carries: compares those fields (names only when `names`).
void check_same_swf_jobs(const Workload& a, const Workload& b, bool names = true) {
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    INFO("job " << a[i].name);
    if (names) CHECK(a[i].name == b[i].name);
    CHECK(a[i].submit == b[i].submit);
    CHECK(a[i].duration == b[i].duration);
    CHECK(a[i].tasks == b[i].tasks);
    CHECK(a[i].min_available == b[i].min_available);
    CHECK(a[i].queue == b[i].queue);
    CHECK(a[i].request.cpu_milli == b[i].request.cpu_milli);
    CHECK(a[i].request.memory_mib == b[i].request.memory_mib);
    CHECK(a[i].request.gpu.mode == b[i].request.gpu.mode);
    CHECK(a[i].request.gpu.count == b[i].request.gpu.count);
    CHECK(a[i].constraints == b[i].constraints);
  }
}

// Job 1: 4 GPUs, queue 3, executable 2, walltime 3600, 1 GiB per processor.
// Job 2: allocated unknown, requested 16 -> 2 x 8; queue unknown.
// Job 3: submitted first; 2.5 s run time.
const std::string kLog = "; Version: 2.2\n"
                         "; Computer: test\n"
                         ";\n"
                         "    1   100  5  60  4  -1  -1   4  3600  1048576  1  7  1  2  3  -1  -1  -1\n"
                         "\n"
                         "    2   200  5  30 -1  -1  -1  16    -1       -1  1  8  1 -1 -1  -1  -1  -1\n"
                         "    3    50  0 2.5  1  -1  -1   1    -1       -1  0  7  1 -1  0  -1  -1  -1\n";

}  // namespace

TEST_CASE("SWF fields map to submit time, duration, GPUs, walltime, memory, queue and app", "[traces][swf]") {
  const auto jobs = read(kLog);
  REQUIRE(jobs.size() == 3);
  CHECK(jobs[0].name == "3");  // sorted by submit time
  const auto& j1 = by_name(jobs, "1");
  CHECK(j1.submit == SimTime::from_seconds(100));
  CHECK(j1.duration == SimTime::from_seconds(60));
  CHECK(j1.tasks == 1);
  CHECK(j1.request.gpu.mode == GpuMode::kWhole);
  CHECK(j1.request.gpu.count == 4);
  CHECK(j1.request.cpu_milli == 0);
  CHECK(j1.request.memory_mib == 4 * 1024);
  CHECK(j1.constraints.walltime == SimTime::from_seconds(3600));
  CHECK(j1.estimate() == SimTime::from_seconds(3600));
  CHECK(j1.queue == "q3");
  CHECK(j1.constraints.app == "app2");
  CHECK(j1.source_line == 4);
  const auto& j2 = by_name(jobs, "2");
  CHECK(j2.tasks == 2);
  CHECK(j2.min_available == 2);
  CHECK(j2.request.gpu.count == 8);
  CHECK(j2.queue == "default");
  CHECK(j2.constraints.walltime.is_forever());
  CHECK(j2.constraints.app.empty());
  const auto& j3 = by_name(jobs, "3");
  CHECK(j3.duration == SimTime::from_us(2'500'000));
  CHECK(j3.queue == "q0");
}

TEST_CASE("SWF processors can be CPU cores, and the queue can come from the user id", "[traces][swf]") {
  SwfOptions o;
  o.processors = SwfProcessors::kCpus;
  o.cores_per_node = 32;
  o.queue_field = SwfQueueField::kUserId;
  const auto jobs = read(kLog, o);
  const auto& j1 = by_name(jobs, "1");
  CHECK(j1.request.gpu.mode == GpuMode::kNone);
  CHECK(j1.request.cpu_milli == 4000);
  CHECK(j1.queue == "u7");
  const auto& j2 = by_name(jobs, "2");
  CHECK(j2.tasks == 1);
  CHECK(j2.request.cpu_milli == 16'000);
  CHECK(j2.queue == "u8");
}

TEST_CASE("An unknown SWF run time is an error unless the options skip the job or let it run forever", "[traces][swf]") {
  const std::string text = "1 0 0 -1 2 -1 -1 2 -1 -1 5 1 1 -1 -1 -1 -1 -1\n2 0 0 10 2 -1 -1 2 -1 -1 1 1 1 -1 -1 -1 -1 -1\n";
  CHECK_THAT(trace_error([&] { (void)read(text); }),
             Catch::StartsWith("[gpusched.trace_error.102] log.swf:1: field 'run_time': unknown (-1)"));
  SwfOptions o;
  o.unknown_run_time = SwfUnknownRunTime::kSkip;
  const auto skipped = read(text, o);
  REQUIRE(skipped.size() == 1);
  CHECK(skipped[0].name == "2");
  o.unknown_run_time = SwfUnknownRunTime::kForever;
  const auto forever = read(text, o);
  REQUIRE(forever.size() == 2);
  CHECK(by_name(forever, "1").duration.is_forever());
}

TEST_CASE("An SWF line with 17 fields names the line and the missing field", "[traces][swf]") {
  const std::string text = "; header\n1 0 0 10 2 -1 -1 2 -1 -1 1 1 1 -1 -1 -1 -1 -1\n2 0 0 10 2 -1 -1 2 -1 -1 1 1 1 -1 -1 -1 -1\n";
  CHECK_THAT(trace_error([&] { (void)read(text); }),
             Catch::StartsWith("[gpusched.trace_error.102] log.swf:3: field 'think_time': missing: the line has 17 of the 18"));
  CHECK_THAT(trace_error([] { (void)read("1 0 0 10 2 -1 -1 2 -1 -1 1 1 1 -1 -1 -1 -1 -1 99 100\n"); }),
             Catch::StartsWith("[gpusched.trace_error.102] log.swf:1: the line has 20 fields; SWF has 18"));
}

TEST_CASE("A non-numeric SWF field names the line and the SWF field name", "[traces][swf]") {
  CHECK_THAT(trace_error([] { (void)read("\n1 0 0 ten 2 -1 -1 2 -1 -1 1 1 1 -1 -1 -1 -1 -1\n"); }),
             Catch::StartsWith("[gpusched.trace_error.102] log.swf:2: field 'run_time': \"ten\" is not a number"));
  CHECK_THAT(trace_error([] { (void)read("1 0 0 10 2 -1 -1 2 -1 -1 1 x 1 -1 -1 -1 -1 -1\n"); }),
             Catch::StartsWith("[gpusched.trace_error.102] log.swf:1: field 'user_id': \"x\" is not a number"));
  CHECK_THAT(trace_error([] { (void)read("1 0 0 10 2.5 -1 -1 2 -1 -1 1 1 1 -1 -1 -1 -1 -1\n"); }),
             Catch::StartsWith("[gpusched.trace_error.102] log.swf:1: field 'allocated_processors': \"2.5\" is not a whole number"));
}

TEST_CASE("Impossible SWF values are errors naming the field", "[traces][swf]") {
  CHECK_THAT(trace_error([] { (void)read("1 -1 0 10 2 -1 -1 2 -1 -1 1 1 1 -1 -1 -1 -1 -1\n"); }),
             Catch::StartsWith("[gpusched.trace_error.102] log.swf:1: field 'submit_time':"));
  CHECK_THAT(trace_error([] { (void)read("1 0 0 -5 2 -1 -1 2 -1 -1 1 1 1 -1 -1 -1 -1 -1\n"); }),
             Catch::StartsWith("[gpusched.trace_error.102] log.swf:1: field 'run_time': \"-5\" is negative"));
  CHECK_THAT(trace_error([] { (void)read("1 0 0 10 0 -1 -1 -1 -1 -1 1 1 1 -1 -1 -1 -1 -1\n"); }),
             Catch::StartsWith("[gpusched.trace_error.102] log.swf:1: field 'allocated_processors': no processor count"));
  CHECK_THAT(trace_error([] { (void)read("1 0 0 10 2 -1 -1 2 0 -1 1 1 1 -1 -1 -1 -1 -1\n"); }),
             Catch::StartsWith("[gpusched.trace_error.102] log.swf:1: field 'requested_time': must be > 0"));
  CHECK_THAT(trace_error([] {
               (void)read("1 0 0 10 2 -1 -1 2 -1 -1 1 1 1 -1 -1 -1 -1 -1\n1 5 0 10 2 -1 -1 2 -1 -1 1 1 1 -1 -1 -1 -1 -1\n");
             }),
             Catch::StartsWith("[gpusched.trace_error.107] log.swf:2: field 'job_number': job number 1 appears twice"));
  // Allocated 0 falls back to requested.
  CHECK(read("1 0 0 10 0 -1 -1 3 -1 -1 1 1 1 -1 -1 -1 -1 -1\n").at(0).request.gpu.count == 3);
}

TEST_CASE("An SWF file written for CPU cores is refused when read as GPUs", "[traces][swf]") {
  const std::string text = "; gpusched: processors=cpus cores_per_node=64\n1 0 0 10 2 -1 -1 2 -1 -1 1 1 1 -1 -1 -1 -1 -1\n";
  CHECK_THAT(trace_error([&] { (void)read(text); }),
             Catch::StartsWith("[gpusched.trace_error.102] log.swf:1: field 'processors':"));
  SwfOptions o;
  o.processors = SwfProcessors::kCpus;
  CHECK(read(text, o).size() == 1);
}

TEST_CASE("Writing SWF and reading it back gives the same jobs", "[traces][swf]") {
  const auto jobs = read(kLog);
  const std::string text = write(jobs);
  CHECK_THAT(text, Catch::StartsWith("; Version: 2.2\n"));
  CHECK_THAT(text, Catch::Contains("; gpusched: processors=gpus gpus_per_node=8 queue_field=queue"));
  const auto again = read(text);
  check_same_swf_jobs(jobs, again);
  CHECK(write(again) == text);  // and the text is stable
}

TEST_CASE("SWF round trips keep odd memory sizes, fractional times and CPU-core gangs", "[traces][swf]") {
  SwfOptions o;
  o.processors = SwfProcessors::kCpus;
  o.cores_per_node = 4;
  Workload jobs;
  jobs.push_back(t::job("10", 0.25, 7.125, t::request({{"cpu", "3"}, {"memory", "1001Mi"}})));
  jobs.push_back(t::job("11", 1, 100, t::request({{"cpu", "3"}, {"memory", "7Mi"}}), 3));  // 9 cores: 3 x 3
  jobs.push_back(t::job("12", 2, 100, t::request({{"cpu", "1"}}), 7));                      // 7 cores: 7 x 1
  jobs[1].constraints.walltime = SimTime::from_us(1'500'000);
  jobs[2].queue = "batch";
  jobs[0].constraints.app = "lammps";
  const auto again = read(write(jobs, o), o);
  check_same_swf_jobs(jobs, again);
}

TEST_CASE("Imported Philly jobs round-trip through SWF with their queue names", "[traces][swf]") {
  std::istringstream in("timestamp,duration,num_gpus,gpu_time,cluster\n"
                        "2017-10-09 07:01:55,66.0,1,66.0,11cb48\n"
                        "2017-10-09 06:13:03,2951.0,16,47216.0,6214e9\n"
                        "2017-10-09 06:13:04,10,12,120,q7\n");
  GpuCatalog catalog = GpuCatalog::builtin();
  ResourceTable resources;
  const auto jobs = read_philly_jobs(in, "philly.csv", catalog, resources);
  const std::string text = write(jobs);
  CHECK_THAT(text, Catch::Contains("; gpusched: queue 8 = 6214e9\n"));  // after the literal q7
  const auto again = read(text);
  check_same_swf_jobs(jobs, again, false);
  CHECK(again[0].name == "1");  // "philly-<row>" names are not numbers: renumbered in order
}

TEST_CASE("Imported Tiresias jobs round-trip through SWF", "[traces][swf][tiresias]") {
  std::string csv = "job_id,num_gpu,submit_time,iterations,model_name,duration,interval\n"
                    "0,1,0,606,vgg19,164,30\n1,8,30,133,vgg11,147,23\n2,2,53,157,inception4,127,26\n";
  std::string source = "60_job.csv";
  if (const auto path = t::real_trace("tiresias/60_job.csv"); !path.empty()) {
    csv = t::read_file(path);
    source = path.string();
  }
  std::istringstream in(csv);
  GpuCatalog catalog = GpuCatalog::builtin();
  ResourceTable resources;
  TiresiasOptions to;
  const auto jobs = read_tiresias_jobs(in, source, catalog, resources, to);
  SwfOptions o;
  o.gpus_per_node = to.gpus_per_node;
  const std::string text = write(jobs, o);
  CHECK_THAT(text, Catch::Contains("; gpusched: executable 1 = vgg19\n"));
  const auto again = read(text, o);
  check_same_swf_jobs(jobs, again);
}

TEST_CASE("Writing SWF refuses jobs it cannot express, naming the job", "[traces][swf]") {
  const auto cpu_only = trace_error([] { (void)write({t::job("a", 0, 10, t::request({{"cpu", "2"}}))}); });
  CHECK_THAT(cpu_only, Catch::Contains("job \"a\": a CPU-only job"));
  const auto share = trace_error([] {
    (void)write({t::job("b", 0, 10, t::request({{"nvidia.com/gpu", "1"}, {"gpusched.io/gpu-milli", "500"}}))});
  });
  CHECK_THAT(share, Catch::Contains("job \"b\""));
  const auto forever = trace_error([] { (void)write({t::job("c", 0, -1, t::request({{"nvidia.com/gpu", "1"}}))}); });
  CHECK_THAT(forever, Catch::Contains("field 'duration': job \"c\": never ends"));
  SwfOptions cpus;
  cpus.processors = SwfProcessors::kCpus;
  const auto half = trace_error([&] { (void)write({t::job("d", 0, 10, t::request({{"cpu", "500m"}}))}, cpus); });
  CHECK_THAT(half, Catch::Contains("field 'cpu': job \"d\""));
}

TEST_CASE("Lossy SWF writing drops what SWF cannot carry, strict writing refuses it", "[traces][swf]") {
  Workload jobs;
  jobs.push_back(t::job("1", 0, 10, t::request({{"nvidia.com/gpu", "1"}}), 4, 2, 5));  // 4 x 1, gang min 2, priority 5
  jobs.push_back(t::job("2", 0, 10, t::request({{"nvidia.com/gpu", "2"}, {"cpu", "8"}}, {"A100-80GB"})));
  CHECK_THAT(trace_error([&] { (void)write(jobs); }), Catch::Contains("field 'tasks': job \"1\": has 4 tasks of 1"));
  SwfOptions o;
  o.lossy = true;
  const auto again = read(write(jobs, o), o);
  REQUIRE(again.size() == 2);
  CHECK(again[0].tasks == 1);
  CHECK(again[0].request.gpu.count == 4);
  CHECK(again[0].priority == 0);
  CHECK(again[1].request.gpu.count == 2);
  CHECK(again[1].request.cpu_milli == 0);
  CHECK(again[1].request.allowed_models.none());
}

TEST_CASE("Jobs that never end round-trip as run time -1 when the options say forever", "[traces][swf]") {
  SwfOptions o;
  o.unknown_run_time = SwfUnknownRunTime::kForever;
  const Workload jobs = {t::job("5", 3, -1, t::request({{"nvidia.com/gpu", "2"}}))};
  const std::string text = write(jobs, o);
  CHECK_THAT(text, Catch::Contains("5 3 -1 -1 2"));
  check_same_swf_jobs(jobs, read(text, o));
}

TEST_CASE("The real Philly job table round-trips through SWF", "[traces][swf][real]") {
  const auto path = t::real_trace("pollux-philly-derived/philly.csv");
  if (path.empty()) return;
  std::ifstream in(path);
  GpuCatalog catalog = GpuCatalog::builtin();
  ResourceTable resources;
  const auto jobs = read_philly_jobs(in, path.string(), catalog, resources);
  const auto again = read(write(jobs));
  check_same_swf_jobs(jobs, again, false);
}
