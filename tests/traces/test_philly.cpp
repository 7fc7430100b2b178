// The Philly and Tiresias importers: mappings on small hand-written files, errors with file,
// line and column, and the real published files when they are present.
#include <catch2/catch.hpp>

#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include <gpusched/cluster.hpp>
#include <gpusched/traces/native.hpp>
#include <gpusched/traces/philly.hpp>

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

Workload philly_jobs(const std::string& text, const PhillyJobOptions& o = {}) {
  std::istringstream in(text);
  GpuCatalog catalog = GpuCatalog::builtin();
  ResourceTable resources;
  return read_philly_jobs(in, "philly.csv", catalog, resources, o);
}

std::vector<NodeSpec> philly_machines(const std::string& text, const PhillyMachineOptions& o = {}) {
  std::istringstream in(text);
  GpuCatalog catalog = GpuCatalog::builtin();
  ResourceTable resources;
  return read_philly_machines(in, "machines", catalog, resources, o);
}

Workload tiresias_jobs(const std::string& text, const TiresiasOptions& o = {}) {
  std::istringstream in(text);
  GpuCatalog catalog = GpuCatalog::builtin();
  ResourceTable resources;
  return read_tiresias_jobs(in, "60_job.csv", catalog, resources, o);
}

std::vector<NodeSpec> tiresias_cluster(const std::string& text, const TiresiasOptions& o = {}) {
  std::istringstream in(text);
  GpuCatalog catalog = GpuCatalog::builtin();
  ResourceTable resources;
  return read_tiresias_cluster(in, "cluster.csv", catalog, resources, o);
}

const JobSpec& by_name(const Workload& w, const std::string& name) {
  for (const auto& j : w) {
    if (j.name == name) return j;
  }
  FAIL("no job " << name);
  throw;
}

std::int64_t total_gpus(const Workload& w) {
  std::int64_t n = 0;
  for (const auto& j : w) n += std::int64_t{j.tasks} * j.request.gpu.count;
  return n;
}

std::string model_name(const NodeSpec& n) {
  static const GpuCatalog catalog = GpuCatalog::builtin();
  return catalog[n.gpus.at(0).model].name;
}

const char* kPhillyHeader = "timestamp,duration,num_gpus,gpu_time,cluster\n";

}  // namespace

// ------------------------------------------------------------------------------- split_gang

TEST_CASE("split_gang gives the fewest equal tasks that fit a node", "[traces][philly]") {
  CHECK(split_gang(1, 8) == GangShape{1, 1});
  CHECK(split_gang(8, 8) == GangShape{1, 8});
  CHECK(split_gang(9, 8) == GangShape{3, 3});
  CHECK(split_gang(10, 8) == GangShape{2, 5});
  CHECK(split_gang(12, 8) == GangShape{2, 6});
  CHECK(split_gang(16, 8) == GangShape{2, 8});
  CHECK(split_gang(24, 8) == GangShape{3, 8});
  CHECK(split_gang(128, 8) == GangShape{16, 8});
  CHECK(split_gang(13, 8) == GangShape{13, 1});
  CHECK(split_gang(8, 4) == GangShape{2, 4});
  for (std::int64_t n = 1; n <= 300; ++n) {
    const auto g = split_gang(n, 8);
    CHECK(std::int64_t{g.tasks} * g.per_task == n);
    CHECK(g.per_task <= 8);
  }
}

// ------------------------------------------------------------------------------ Philly jobs

TEST_CASE("Philly jobs get submit times relative to the earliest row and are sorted by them", "[traces][philly]") {
  const auto jobs = philly_jobs(std::string(kPhillyHeader) +
                                "2017-10-09 07:01:55,66.0,1,66.0,11cb48\n"
                                "2017-10-09 06:13:03,2951.5,2,5903.0,6214e9\n"
                                "2017-10-08 23:59:59,10,4,40,6c71a0\n"
                                "2017-10-09 07:01:55,1,1,1,11cb48\n");
  REQUIRE(jobs.size() == 4);
  CHECK(jobs[0].name == "philly-2");
  CHECK(jobs[0].submit == SimTime::zero());
  CHECK(jobs[1].name == "philly-1");
  CHECK(jobs[1].submit == SimTime::from_seconds(6 * 3600 + 13 * 60 + 4));
  CHECK(jobs[1].duration == SimTime::from_us(2'951'500'000));
  CHECK(jobs[1].queue == "6214e9");
  CHECK(jobs[1].request.gpu.mode == GpuMode::kWhole);
  CHECK(jobs[1].request.gpu.count == 2);
  CHECK(jobs[1].request.cpu_milli == 0);
  CHECK(jobs[1].request.memory_mib == 0);
  // Equal submit times keep file order.
  CHECK(jobs[2].name == "philly-0");
  CHECK(jobs[3].name == "philly-3");
  CHECK(jobs[2].submit == jobs[3].submit);
  CHECK(jobs[2].source_line == 2);
}

TEST_CASE("Philly jobs over 8 GPUs become all-or-nothing gangs of equal tasks", "[traces][philly]") {
  const auto jobs = philly_jobs(std::string(kPhillyHeader) +
                                "2017-10-09 07:00:00,100,8,800,a\n"
                                "2017-10-09 07:00:01,100,12,1200,a\n"
                                "2017-10-09 07:00:02,100,16,1600,a\n"
                                "2017-10-09 07:00:03,100,128,12800,a\n");
  REQUIRE(jobs.size() == 4);
  const std::vector<std::pair<int, int>> expected = {{1, 8}, {2, 6}, {2, 8}, {16, 8}};
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    INFO(jobs[i].name);
    CHECK(jobs[i].tasks == expected[i].first);
    CHECK(jobs[i].min_available == jobs[i].tasks);
    CHECK(jobs[i].request.gpu.count == expected[i].second);
  }
}

TEST_CASE("Philly job options set the node size and CPU and memory per GPU", "[traces][philly]") {
  PhillyJobOptions o;
  o.gpus_per_node = 4;
  o.cpu_milli_per_gpu = 2500;
  o.memory_mib_per_gpu = 8192;
  const auto jobs = philly_jobs(std::string(kPhillyHeader) + "2017-10-09 07:00:00,100,8,800,a\n", o);
  REQUIRE(jobs.size() == 1);
  CHECK(jobs[0].tasks == 2);
  CHECK(jobs[0].request.gpu.count == 4);
  CHECK(jobs[0].request.cpu_milli == 10'000);
  CHECK(jobs[0].request.memory_mib == 32'768);
}

TEST_CASE("A bad Philly timestamp names the line and the column", "[traces][philly]") {
  for (const char* stamp : {"2017-10-09T07:01:55", "2017-13-09 07:01:55", "2017-02-30 07:01:55", "2017-10-09 24:00:00",
                            "yesterday", "2017-10-09 07:01"}) {
    INFO(stamp);
    const auto what = trace_error([&] {
      (void)philly_jobs(std::string(kPhillyHeader) + "2017-10-09 07:01:55,66.0,1,66.0,a\n" + stamp + ",1,1,1,a\n");
    });
    CHECK_THAT(what, Catch::StartsWith("[gpusched.trace_error.102] philly.csv:3: field 'timestamp': \"" + std::string(stamp)));
  }
}

TEST_CASE("A negative Philly duration names the line and the column", "[traces][philly]") {
  const auto what = trace_error([] { (void)philly_jobs(std::string(kPhillyHeader) + "2017-10-09 07:01:55,-66.0,1,-66.0,a\n"); });
  CHECK_THAT(what, Catch::StartsWith("[gpusched.trace_error.102] philly.csv:2: field 'duration': \"-66.0\""));
  CHECK_THAT(what, Catch::Contains("non-negative"));
}

TEST_CASE("Zero or non-numeric Philly num_gpus names the line and the column", "[traces][philly]") {
  const auto zero = trace_error([] {
    (void)philly_jobs(std::string(kPhillyHeader) + "2017-10-09 07:01:55,1,1,1,a\n\n2017-10-09 07:01:55,1,0,0,a\n");
  });
  CHECK_THAT(zero, Catch::StartsWith("[gpusched.trace_error.110] philly.csv:4: field 'num_gpus': \"0\" is out of range"));
  const auto text = trace_error([] { (void)philly_jobs(std::string(kPhillyHeader) + "2017-10-09 07:01:55,1,two,2,a\n"); });
  CHECK_THAT(text, Catch::StartsWith("[gpusched.trace_error.102] philly.csv:2: field 'num_gpus': \"two\" is not a whole number"));
  const auto half = trace_error([] { (void)philly_jobs(std::string(kPhillyHeader) + "2017-10-09 07:01:55,1,1.5,1.5,a\n"); });
  CHECK_THAT(half, Catch::Contains("field 'num_gpus'"));
}

TEST_CASE("A Philly gpu_time that is not duration times num_gpus is an error unless the check is off", "[traces][philly]") {
  const std::string text = std::string(kPhillyHeader) + "2017-10-09 07:01:55,100,2,100,a\n";
  const auto what = trace_error([&] { (void)philly_jobs(text); });
  CHECK_THAT(what, Catch::StartsWith("[gpusched.trace_error.102] philly.csv:2: field 'gpu_time':"));
  PhillyJobOptions o;
  o.check_gpu_time = false;
  CHECK(philly_jobs(text, o).size() == 1);
}

TEST_CASE("A Philly job table without num_gpus is a missing-column error", "[traces][philly]") {
  const auto what = trace_error([] { (void)philly_jobs("timestamp,duration,cluster\n2017-10-09 07:01:55,1,a\n"); });
  CHECK_THAT(what, Catch::StartsWith("[gpusched.trace_error.103] philly.csv:1: field 'num_gpus':"));
}

// -------------------------------------------------------------------------- Philly machines

TEST_CASE("Philly machines map 12 GB GPUs to K80 and 24 GB GPUs to P40", "[traces][philly]") {
  const auto nodes = philly_machines("machineId, number of GPUs, single GPU mem\nm0,2, 12GB\nm98,8, 24GB\n");
  REQUIRE(nodes.size() == 2);
  CHECK(nodes[0].name == "m0");
  CHECK(nodes[0].gpus.size() == 2);
  CHECK(model_name(nodes[0]) == "K80");
  CHECK(nodes[0].labels.at("gpusched.io/gpu-model") == "K80");
  CHECK(nodes[0].cpu_milli == 2 * 6000);
  CHECK(nodes[0].memory_mib == 2 * 64 * 1024);
  CHECK(nodes[1].gpus.size() == 8);
  CHECK(model_name(nodes[1]) == "P40");
  CHECK(nodes[1].cpu_milli == 48'000);
  CHECK(nodes[1].numa.size() == 1);
  // The nodes make a valid cluster.
  const auto cluster = t::cluster(nodes);
  CHECK(cluster.node_count() == 2);
}

TEST_CASE("Philly machine options change the models and the CPU and memory per GPU", "[traces][philly]") {
  PhillyMachineOptions o;
  o.model_by_gpu_memory_gb[16] = "V100-16GB";
  o.cpu_milli_per_gpu = 4000;
  o.memory_mib_per_gpu = 1024;
  const auto nodes = philly_machines("machineId,number of GPUs,single GPU mem\nx,4,16GB\n", o);
  REQUIRE(nodes.size() == 1);
  CHECK(model_name(nodes[0]) == "V100-16GB");
  CHECK(nodes[0].cpu_milli == 16'000);
  CHECK(nodes[0].memory_mib == 4096);
}

TEST_CASE("An unknown GPU memory size in the Philly machine list names the line and the column", "[traces][philly]") {
  const auto what = trace_error([] {
    (void)philly_machines("machineId, number of GPUs, single GPU mem\nm0,2, 12GB\nm1,4, 16GB\n");
  });
  CHECK_THAT(what, Catch::StartsWith("[gpusched.trace_error.102] machines:3: field 'single GPU mem': no GPU model is known for 16GB"));
  CHECK_THAT(what, Catch::Contains("12GB -> K80, 24GB -> P40"));
  const auto garbage = trace_error([] { (void)philly_machines("machineId, number of GPUs, single GPU mem\nm0,2, lots\n"); });
  CHECK_THAT(garbage, Catch::StartsWith("[gpusched.trace_error.102] machines:2: field 'single GPU mem': \"lots\""));
}

TEST_CASE("Bad GPU counts and repeated ids in the Philly machine list are errors", "[traces][philly]") {
  const auto zero = trace_error([] { (void)philly_machines("machineId, number of GPUs, single GPU mem\nm0,0, 12GB\n"); });
  CHECK_THAT(zero, Catch::StartsWith("[gpusched.trace_error.110] machines:2: field 'number of GPUs':"));
  const auto twice = trace_error([] {
    (void)philly_machines("machineId, number of GPUs, single GPU mem\nm0,2, 12GB\nm0,8, 24GB\n");
  });
  CHECK_THAT(twice, Catch::StartsWith("[gpusched.trace_error.107] machines:3: field 'machineId': machine \"m0\" appears twice"));
}

// ---------------------------------------------------------------------------- Tiresias

TEST_CASE("Tiresias jobs keep their ids, times and model names", "[traces][tiresias]") {
  const auto jobs = tiresias_jobs("job_id,num_gpu,submit_time,iterations,model_name,duration,interval\r\n"
                                  "0,1,0,606,vgg19,164,30\r\n"
                                  "1,8,30,133,vgg11,147,23\r\n"
                                  "2,2,53,157,inception4,127.5,26\r\n");
  REQUIRE(jobs.size() == 3);
  const auto& j1 = by_name(jobs, "1");
  CHECK(j1.submit == SimTime::from_seconds(30));
  CHECK(j1.duration == SimTime::from_seconds(147));
  CHECK(j1.constraints.app == "vgg11");
  // Default: 4 GPUs per node, as in the Tiresias testbed.
  CHECK(j1.tasks == 2);
  CHECK(j1.min_available == 2);
  CHECK(j1.request.gpu.count == 4);
  CHECK(by_name(jobs, "2").duration == SimTime::from_us(127'500'000));
  TiresiasOptions o;
  o.gpus_per_node = 8;
  CHECK(by_name(tiresias_jobs("job_id,num_gpu,submit_time,iterations,model_name,duration,interval\n1,8,30,133,vgg11,147,23\n", o), "1")
            .tasks == 1);
}

TEST_CASE("Bad Tiresias job rows name the line and the column", "[traces][tiresias]") {
  const std::string header = "job_id,num_gpu,submit_time,iterations,model_name,duration,interval\n";
  CHECK_THAT(trace_error([&] { (void)tiresias_jobs(header + "0,0,0,606,vgg19,164,30\n"); }),
             Catch::StartsWith("[gpusched.trace_error.110] 60_job.csv:2: field 'num_gpu':"));
  CHECK_THAT(trace_error([&] { (void)tiresias_jobs(header + "0,1,0,606,vgg19,-164,30\n"); }),
             Catch::StartsWith("[gpusched.trace_error.102] 60_job.csv:2: field 'duration':"));
  CHECK_THAT(trace_error([&] { (void)tiresias_jobs(header + "0,1,soon,606,vgg19,164,30\n"); }),
             Catch::StartsWith("[gpusched.trace_error.102] 60_job.csv:2: field 'submit_time':"));
  CHECK_THAT(trace_error([&] { (void)tiresias_jobs(header + "0,1,0,606,vgg19,164,30\n0,1,0,606,vgg19,164,30\n"); }),
             Catch::StartsWith("[gpusched.trace_error.107] 60_job.csv:3: field 'job_id':"));
}

TEST_CASE("A Tiresias cluster shape becomes switches of named, labelled nodes", "[traces][tiresias]") {
  const auto nodes = tiresias_cluster("num_switch,num_node_p_switch,num_gpu_p_node,num_cpu_p_node,mem_p_node\n"
                                      "2,3,4,40,256\n"
                                      "1,1,8,64,512");
  REQUIRE(nodes.size() == 7);
  CHECK(nodes[0].name == "s0-n0");
  CHECK(nodes[4].name == "s1-n1");
  CHECK(nodes[4].labels.at("gpusched.io/switch") == "s1");
  CHECK(nodes[6].name == "s2-n0");
  CHECK(nodes[6].labels.at("gpusched.io/switch") == "s2");
  CHECK(nodes[0].gpus.size() == 4);
  CHECK(model_name(nodes[0]) == "P100");
  CHECK(nodes[0].labels.at("gpusched.io/gpu-model") == "P100");
  CHECK(nodes[0].cpu_milli == 40'000);
  CHECK(nodes[0].memory_mib == 256 * 1024);
  CHECK(nodes[6].gpus.size() == 8);
  TiresiasOptions o;
  o.gpu_model = "V100-32GB";
  CHECK(model_name(tiresias_cluster("num_switch,num_node_p_switch,num_gpu_p_node,num_cpu_p_node,mem_p_node\n1,1,4,40,256\n", o).at(0)) ==
        "V100-32GB");
}

TEST_CASE("Bad Tiresias cluster rows and unknown GPU models are errors", "[traces][tiresias]") {
  const std::string header = "num_switch,num_node_p_switch,num_gpu_p_node,num_cpu_p_node,mem_p_node\n";
  CHECK_THAT(trace_error([&] { (void)tiresias_cluster(header + "0,16,4,128,254\n"); }),
             Catch::StartsWith("[gpusched.trace_error.110] cluster.csv:2: field 'num_switch':"));
  CHECK_THAT(trace_error([&] { (void)tiresias_cluster(header + "1,16,4,128,much\n"); }),
             Catch::StartsWith("[gpusched.trace_error.102] cluster.csv:2: field 'mem_p_node':"));
  TiresiasOptions o;
  o.gpu_model = "NoSuchGPU";
  CHECK_THROWS_AS(tiresias_cluster(header + "1,16,4,128,254\n", o), CatalogError);
}

// --------------------------------------------------------------------------- real files

TEST_CASE("The real Philly job table reads into 82247 jobs with the file's GPU total", "[traces][philly][real]") {
  const auto path = t::real_trace("pollux-philly-derived/philly.csv");
  if (path.empty()) return;
  // Independent count: plain getline and comma splitting.
  std::int64_t rows = 0, gpus = 0, gangs = 0;
  std::set<std::string> clusters;
  {
    std::ifstream in(path);
    std::string line;
    std::getline(in, line);  // header
    while (std::getline(in, line)) {
      if (line.empty()) continue;
      std::vector<std::string> f;
      std::stringstream ss(line);
      for (std::string part; std::getline(ss, part, ',');) f.push_back(part);
      REQUIRE(f.size() == 5);
      ++rows;
      const auto n = std::stoll(f[2]);
      gpus += n;
      gangs += n > 8 ? 1 : 0;
      clusters.insert(f[4]);
    }
  }
  std::ifstream in(path);
  GpuCatalog catalog = GpuCatalog::builtin();
  ResourceTable resources;
  const auto jobs = read_philly_jobs(in, path.string(), catalog, resources);
  CHECK(rows == 82'247);
  CHECK(static_cast<std::int64_t>(jobs.size()) == rows);
  CHECK(total_gpus(jobs) == gpus);
  std::int64_t multi = 0;
  std::set<std::string> queues;
  for (const auto& j : jobs) {
    multi += j.tasks > 1 ? 1 : 0;
    CHECK(j.request.gpu.count <= 8);
    CHECK(j.min_available == j.tasks);
    queues.insert(j.queue);
  }
  CHECK(multi == gangs);
  CHECK(queues == clusters);
  CHECK(queues.size() == 15);
  CHECK(jobs.front().submit == SimTime::zero());
  CHECK(std::is_sorted(jobs.begin(), jobs.end(), [](const JobSpec& a, const JobSpec& b) { return a.submit < b.submit; }));

  // Every job fits the Philly machines.
  const auto mpath = t::real_trace("philly/cluster_machine_list");
  if (mpath.empty()) return;
  std::ifstream min(mpath);
  auto nodes = read_philly_machines(min, mpath.string(), catalog, resources);
  const ClusterState cluster(catalog, resources, std::move(nodes));
  CHECK_NOTHROW(check_placeable(jobs, cluster, path.string()));
}

TEST_CASE("The real Philly machine list reads into 321 two-GPU K80 and 231 eight-GPU P40 nodes", "[traces][philly][real]") {
  const auto path = t::real_trace("philly/cluster_machine_list");
  if (path.empty()) return;
  std::ifstream in(path);
  GpuCatalog catalog = GpuCatalog::builtin();
  ResourceTable resources;
  const auto nodes = read_philly_machines(in, path.string(), catalog, resources);
  CHECK(nodes.size() == 552);
  std::map<std::pair<std::size_t, std::string>, int> shapes;
  std::size_t gpus = 0;
  for (const auto& n : nodes) {
    ++shapes[{n.gpus.size(), model_name(n)}];
    gpus += n.gpus.size();
  }
  CHECK(shapes.size() == 2);
  CHECK(shapes[{2, "K80"}] == 321);
  CHECK(shapes[{8, "P40"}] == 231);
  CHECK(gpus == 321 * 2 + 231 * 8);
}

TEST_CASE("The real Tiresias jobs and every cluster shape read and fit together", "[traces][tiresias][real]") {
  const auto jpath = t::real_trace("tiresias/60_job.csv");
  if (jpath.empty()) return;
  GpuCatalog catalog = GpuCatalog::builtin();
  ResourceTable resources;
  std::ifstream jin(jpath);
  const auto jobs = read_tiresias_jobs(jin, jpath.string(), catalog, resources);
  REQUIRE(jobs.size() == 60);
  CHECK(total_gpus(jobs) == 30 * 1 + 10 * 2 + 10 * 4 + 10 * 8);
  for (const auto& j : jobs) CHECK(j.request.gpu.count <= 4);

  const std::map<std::string, std::array<std::int64_t, 5>> shapes = {
      {"cluster_spec.csv", {1, 16, 4, 128, 254}}, {"n1g4.csv", {1, 1, 4, 40, 256}}, {"n32g4.csv", {1, 32, 4, 40, 256}},
      {"n160g8.csv", {5, 32, 8, 128, 256}}, {"n256g8.csv", {8, 32, 8, 64, 256}}};
  for (const auto& [file, s] : shapes) {
    INFO(file);
    const auto path = t::real_trace("tiresias/" + file);
    if (path.empty()) continue;
    std::ifstream in(path);
    auto nodes = read_tiresias_cluster(in, path.string(), catalog, resources);
    REQUIRE(static_cast<std::int64_t>(nodes.size()) == s[0] * s[1]);
    std::set<std::string> switches, names;
    for (const auto& n : nodes) {
      switches.insert(n.labels.at("gpusched.io/switch"));
      names.insert(n.name);
      CHECK(static_cast<std::int64_t>(n.gpus.size()) == s[2]);
      CHECK(n.cpu_milli == s[3] * 1000);
      CHECK(n.memory_mib == s[4] * 1024);
    }
    CHECK(static_cast<std::int64_t>(switches.size()) == s[0]);
    CHECK(names.size() == nodes.size());
    // Every task fits some node (4 GPUs per task by default).
    const ClusterState cluster(catalog, resources, std::move(nodes));
    CHECK_NOTHROW(check_placeable(jobs, cluster, jpath.string()));
  }
}
