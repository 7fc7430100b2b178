// The native trace formats: reading, writing, round trips, and errors with file, line and field.
#include <catch2/catch.hpp>

#include <map>
#include <sstream>
#include <string>

#include <gpusched/traces/csv.hpp>
#include <gpusched/traces/native.hpp>

#include "support/support.hpp"

using namespace gpusched;
using namespace gpusched::traces;
namespace t = gpusched::test;

namespace {

const GpuCatalog& catalog() {
  static const GpuCatalog c = GpuCatalog::builtin();
  return c;
}

Workload read(const std::filesystem::path& p) {
  ResourceTable res;
  return read_trace(p, catalog(), res);
}

const JobSpec& by_name(const Workload& w, const std::string& name) {
  for (const auto& j : w) {
    if (j.name == name) return j;
  }
  FAIL("no job " << name);
  throw;
}


/// Reads `text` as `name` in a temp folder and returns the gpusched::Error it throws.
template <class E>
E read_error(const std::string& name, const std::string& text) {
  t::TempDir dir;
  const auto p = dir.write(name, text);
  try {
    (void)read(p);
  } catch (const E& e) {
    CHECK(e.where().file == p.string());
    return e;
  } catch (const Error& e) {
    FAIL("wrong exception type: " << e.what());
  }
  FAIL("no exception reading " << name);
  throw;
}

const char* kHeader = "id,submit_time,duration,tasks,min_available,priority,queue,gpu_model,cpu,memory,nvidia.com/gpu\n";

}  // namespace

TEST_CASE("The example CSV trace reads into jobs sorted by submit time", "[traces][native]") {
  const auto w = read(t::example("traces/mixed.csv"));
  REQUIRE(w.size() == 7);
  for (std::size_t i = 1; i < w.size(); ++i) CHECK(w[i - 1].submit <= w[i].submit);
  const auto& bert = by_name(w, "bert-ft");
  CHECK(bert.submit == SimTime::zero());
  CHECK(bert.duration == SimTime::from_seconds(5400));
  CHECK(bert.queue == "nlp");
  CHECK(bert.request.cpu_milli == 8000);
  CHECK(bert.request.memory_mib == 64 * 1024);
  CHECK(bert.request.gpu.mode == GpuMode::kWhole);
  CHECK(bert.request.gpu.count == 2);
  CHECK(bert.source_line == 3);
  const auto& resnet = by_name(w, "resnet");
  CHECK(resnet.request.allowed_models.count() == 2);
  CHECK(resnet.request.model_allowed(*catalog().find("V100-32GB")));
  const auto& serve1 = by_name(w, "serve-1");
  CHECK(serve1.duration.is_forever());
  CHECK(serve1.priority == 10);
  CHECK(serve1.request.gpu.mode == GpuMode::kShared);
  CHECK(serve1.request.gpu.milli == 250);
  CHECK(by_name(w, "serve-2").request.gpu.memory_mib == 6 * 1024);
  const auto& llm = by_name(w, "llm-pretrain");
  CHECK(llm.tasks == 2);
  CHECK(llm.min_available == 2);
  const auto& sweep = by_name(w, "sweep-1");
  CHECK(sweep.tasks == 4);
  CHECK(sweep.min_available == 2);
  CHECK(by_name(w, "etl-1").request.gpu.mode == GpuMode::kNone);
}

TEST_CASE("A JSON Lines trace reads like the CSV one", "[traces][native]") {
  t::TempDir dir;
  const auto p = dir.write("jobs.jsonl",
                           "{\"schema_version\": 1, \"kind\": \"gpusched.trace\"}\n"
                           "{\"id\": \"b\", \"submit_time\": 30.5, \"duration\": 60, \"requests\": {\"cpu\": \"500m\", "
                           "\"memory\": \"2Gi\", \"gpusched.io/gpu-milli\": 300}}\n"
                           "\n"
                           "{\"id\": 7, \"submit_time\": \"10\", \"tasks\": 2, \"priority\": -3, \"gpu_model\": [\"T4\", \"A10\"], "
                           "\"requests\": {\"nvidia.com/gpu\": 1, \"rdma/hca\": 1}}\n");
  ResourceTable res;
  const auto w = read_trace(p, catalog(), res);
  REQUIRE(w.size() == 2);
  CHECK(w[0].name == "7");
  CHECK(w[0].submit == SimTime::from_seconds(10));
  CHECK(w[0].duration.is_forever());
  CHECK(w[0].tasks == 2);
  CHECK(w[0].min_available == 2);
  CHECK(w[0].priority == -3);
  CHECK(w[0].source_line == 4);
  CHECK(w[0].request.allowed_models.count() == 2);
  REQUIRE(w[0].request.extended.size() == 1);
  CHECK(res.name(w[0].request.extended[0].first) == "rdma/hca");
  CHECK(w[1].submit == SimTime::from_us(30'500'000));
  CHECK(w[1].request.cpu_milli == 500);
  CHECK(w[1].request.gpu.milli == 300);
}

TEST_CASE("Writing a trace and reading it back gives the same jobs", "[traces][native]") {
  ResourceTable res;
  auto jobs = read_trace(t::example("traces/mixed.csv"), catalog(), res);
  // Add what the example lacks: fractional times, odd names, shares with memory, extended resources.
  auto odd = t::job("name, with \"quotes\"", 500.345678, 0.5, t::request({{"cpu", "1500m"}, {"memory", "3Gi"},
                    {"gpusched.io/gpu-milli", "700"}, {"aliyun.com/gpu-mem", "5"}, {"rdma/hca", "2"}}, res), 3, 1, -7);
  odd.queue = "team b";
  jobs.push_back(odd);
  for (const auto format : {TraceFormat::kCsv, TraceFormat::kJsonLines}) {
    INFO((format == TraceFormat::kCsv ? "csv" : "jsonl"));
    std::stringstream buffer;
    write_trace(buffer, format, jobs, catalog(), res);
    const auto back = read_trace(buffer, format, "round-trip", catalog(), res);
    t::check_same_jobs(jobs, back);
    // And writing again gives the same text.
    std::stringstream again;
    write_trace(again, format, back, catalog(), res);
    CHECK(again.str() == buffer.str());
  }
}

TEST_CASE("CSV traces with Windows line endings read like Unix ones", "[traces][native]") {
  const std::string unix_text = std::string("# gpusched trace schema_version=1\n") + kHeader +
                                "a,0,10,1,1,0,q,T4,1,1Gi,1\nb,5,,2,1,3,r,,500m,2Gi,\n";
  std::string dos_text;
  for (char c : unix_text) {
    if (c == '\n') dos_text += '\r';
    dos_text += c;
  }
  ResourceTable res;
  std::istringstream a(unix_text), b(dos_text);
  t::check_same_jobs(read_trace(a, TraceFormat::kCsv, "unix.csv", catalog(), res),
                  read_trace(b, TraceFormat::kCsv, "dos.csv", catalog(), res));
}

TEST_CASE("Trace format follows the file extension", "[traces][native]") {
  CHECK(format_for("a/b.csv") == TraceFormat::kCsv);
  CHECK(format_for("b.jsonl") == TraceFormat::kJsonLines);
  CHECK(format_for("b.ndjson") == TraceFormat::kJsonLines);
  CHECK_THROWS_AS(format_for("b.parquet"), TraceError);
  ResourceTable res;
  try {
    (void)read_trace(std::filesystem::path("/nonexistent/jobs.csv"), catalog(), res);
    FAIL("no exception");
  } catch (const TraceError& e) {
    CHECK(e.code() == ErrorCode::kTraceCannotOpen);
    CHECK(e.where().file == "/nonexistent/jobs.csv");
  }
}

TEST_CASE("A missing column names the column and the header line", "[traces][errors]") {
  const auto e = read_error<TraceError>("jobs.csv", "# gpusched trace schema_version=1\nid,duration,cpu\nj1,10,4\n");
  CHECK(e.code() == ErrorCode::kTraceMissingColumn);
  CHECK(e.where().line == 2);
  CHECK(e.where().field == "submit_time");
  CHECK_THAT(e.detail(), Catch::Contains("id,duration,cpu"));
}

TEST_CASE("A negative request names the line and the resource", "[traces][errors]") {
  const auto e = read_error<QuantityError>("jobs.csv", std::string(kHeader) + "ok,0,10,1,1,0,q,,1,1Gi,\nbad,5,10,1,1,0,q,,-2,1Gi,\n");
  CHECK(e.where().line == 3);
  CHECK(e.where().field == "cpu");
  CHECK_THAT(e.detail(), Catch::Contains("negative"));
  const auto j = read_error<QuantityError>("jobs.jsonl", "{\"id\":\"a\",\"submit_time\":0,\"requests\":{\"memory\":\"-1Gi\"}}\n");
  CHECK(j.where().line == 1);
  CHECK(j.where().field == "requests.memory");
}

TEST_CASE("An unknown GPU model names the line and the gpu_model field", "[traces][errors]") {
  const auto e = read_error<CatalogError>("jobs.csv", std::string(kHeader) + "a,0,10,1,1,0,q,,1,1Gi,1\n\nb,1,10,1,1,0,q,A1000,1,1Gi,1\n");
  CHECK(e.code() == ErrorCode::kCatalogUnknownModel);
  CHECK(e.where().line == 4);
  CHECK(e.where().field == "gpu_model");
  CHECK_THAT(e.detail(), Catch::Contains("A100-80GB"));
}

TEST_CASE("A row with the wrong number of fields names its line", "[traces][errors]") {
  const auto e = read_error<TraceError>("jobs.csv", std::string(kHeader) + "a,0,10,1,1,0,q,,1,1Gi,1\nb,1,10,1,1,0,q,,1,1Gi\n");
  CHECK(e.code() == ErrorCode::kTraceBadValue);
  CHECK(e.where().line == 3);
  CHECK_THAT(e.detail(), Catch::Contains("10 fields"));
  CHECK_THAT(e.detail(), Catch::Contains("11"));
  const auto q = read_error<TraceError>("jobs.csv", std::string(kHeader) + "\"a,0,10,1,1,0,q,,1,1Gi,1\n");
  CHECK(q.where().line == 2);
  const auto j = read_error<TraceError>("jobs.jsonl", "{\"id\":\"a\",\"submit_time\":0}\n{\"id\":\"b\",\n");
  CHECK(j.where().line == 2);
}

TEST_CASE("A bad number names the line and the field", "[traces][errors]") {
  const auto e = read_error<TraceError>("jobs.csv", std::string(kHeader) + "a,0,10,1,1,0,q,,1,1Gi,1\nb,soon,10,1,1,0,q,,1,1Gi,1\n");
  CHECK(e.code() == ErrorCode::kTraceBadValue);   // text that is not a number (a number out of range: 110)
  CHECK(e.where().line == 3);
  CHECK(e.where().field == "submit_time");
  const auto p = read_error<TraceError>("jobs.csv", std::string(kHeader) + "a,0,10,1,1,high,q,,1,1Gi,1\n");
  CHECK(p.code() == ErrorCode::kTraceBadValue);
  CHECK(p.where().line == 2);
  CHECK(p.where().field == "priority");
  const auto g = read_error<QuantityError>("jobs.csv", std::string(kHeader) + "a,0,10,1,1,0,q,,1,1Gi,two\n");
  CHECK(g.where().field == "nvidia.com/gpu");
  const auto c = read_error<QuantityError>("jobs.csv", std::string(kHeader) + "a,0,10,1,1,0,q,,4 cores,1Gi,1\n");
  CHECK(c.where().line == 2);
  CHECK(c.where().field == "cpu");
}

TEST_CASE("A duplicate job id names the second occurrence", "[traces][errors]") {
  const auto e = read_error<TraceError>("jobs.csv", std::string(kHeader) + "a,0,10,1,1,0,q,,1,1Gi,1\nb,0,10,1,1,0,q,,1,1Gi,1\na,5,10,1,1,0,q,,1,1Gi,1\n");
  CHECK(e.code() == ErrorCode::kTraceDuplicateId);
  CHECK(e.where().line == 4);
  CHECK(e.where().field == "id");
  CHECK_THAT(e.detail(), Catch::Contains("\"a\""));
}

TEST_CASE("min_available above tasks is rejected", "[traces][errors]") {
  const auto e = read_error<TraceError>("jobs.csv", std::string(kHeader) + "a,0,10,2,3,0,q,,1,1Gi,1\n");
  CHECK(e.code() == ErrorCode::kTraceOutOfRange);
  CHECK(e.where().line == 2);
  CHECK(e.where().field == "min_available");
  const auto zero = read_error<TraceError>("jobs.csv", std::string(kHeader) + "a,0,10,0,,0,q,,1,1Gi,1\n");
  CHECK(zero.where().field == "tasks");
}

TEST_CASE("An unsupported schema_version is rejected", "[traces][errors]") {
  const auto e = read_error<TraceError>("jobs.csv", std::string("# gpusched trace schema_version=2\n") + kHeader);
  CHECK(e.code() == ErrorCode::kTraceSchemaVersion);
  CHECK(e.where().line == 1);
  CHECK(e.where().field == "schema_version");
  const auto j = read_error<TraceError>("jobs.jsonl", "{\"schema_version\": 3}\n{\"id\":\"a\",\"submit_time\":0}\n");
  CHECK(j.code() == ErrorCode::kTraceSchemaVersion);
  CHECK(j.where().line == 1);
}

TEST_CASE("An unknown JSON Lines field is rejected with its name", "[traces][errors]") {
  const auto e = read_error<TraceError>("jobs.jsonl", "{\"id\":\"a\",\"submit_time\":0}\n{\"id\":\"b\",\"submit_time\":0,\"gpus\":1}\n");
  CHECK(e.code() == ErrorCode::kTraceUnknownColumn);
  CHECK(e.where().line == 2);
  CHECK(e.where().field == "gpus");
}

TEST_CASE("A job that no node could ever hold is rejected naming its line", "[traces][errors]") {
  const auto cluster = t::cluster({t::node("a", 64, 512, 8), t::node("b", 64, 512, 4, "T4")});
  ResourceTable res;
  std::istringstream in(std::string(kHeader) + "ok,0,10,1,1,0,q,,1,1Gi,8\nbig,0,10,1,1,0,q,,1,1Gi,16\n");
  const auto jobs = read_trace(in, TraceFormat::kCsv, "jobs.csv", catalog(), res);
  try {
    check_placeable(jobs, cluster, "jobs.csv");
    FAIL("no exception");
  } catch (const TraceError& e) {
    CHECK(e.code() == ErrorCode::kTraceUnplaceable);
    CHECK(e.where().file == "jobs.csv");
    CHECK(e.where().line == 3);
    CHECK_THAT(e.detail(), Catch::Contains("\"big\""));
    CHECK_THAT(e.detail(), Catch::Contains("16 nvidia.com/gpu"));
    CHECK_THAT(e.detail(), Catch::Contains("largest node has 8"));
  }
  // Fits a node in every dimension but not all on one node: 8 T4s exist nowhere.
  std::istringstream in2(std::string(kHeader) + "t4x8,0,10,1,1,0,q,T4,1,1Gi,8\n");
  const auto t4 = read_trace(in2, TraceFormat::kCsv, "t4.csv", catalog(), res);
  CHECK_THROWS_AS(check_placeable(t4, cluster, "t4.csv"), TraceError);
  CHECK_NOTHROW(check_placeable(read(t::example("traces/mixed.csv")),
                                t::cluster({t::node("a", 128, 1024, 8)}), "mixed.csv"));
}

TEST_CASE("The CSV reader skips comments and blank lines and unquotes fields", "[traces][csv]") {
  std::istringstream in("# first comment\n\n#second\na,b,c\n1,\"x,y\",\" z \"\n\n# mid\n2,\"say \\\"hi\\\"\",\n");
  CsvReader csv(in, "t.csv");
  CHECK(csv.header() == std::vector<std::string>{"a", "b", "c"});
  CHECK(csv.comments() == std::vector<std::string>{"first comment", "second"});
  CHECK(csv.column("b") == 1u);
  CHECK_FALSE(csv.column("d").has_value());
  std::vector<std::string> f;
  REQUIRE(csv.next(f));
  CHECK(f == std::vector<std::string>{"1", "x,y", "z"});
  CHECK(csv.line() == 5);
  REQUIRE(csv.next(f));
  CHECK(f == std::vector<std::string>{"2", "say \"hi\"", ""});
  CHECK(csv.line() == 8);
  CHECK(csv.at(1).field == "b");
  CHECK_FALSE(csv.next(f));
}

// ---------------------------------------------------------------- scheduling constraints

namespace {

const char* kConstrainedJob =
    "{\"id\": \"svc\", \"submit_time\": 5, \"requests\": {\"cpu\": \"1\"}, "
    "\"node_selector\": {\"nvidia.com/gpu.product\": \"A100-80GB\", \"tier\": 1}, "
    "\"affinity\": {\"required\": [[{\"key\": \"zone\", \"operator\": \"In\", \"values\": [\"a\", \"b\"]}, "
    "{\"key\": \"gpus\", \"operator\": \"Gt\", \"values\": [\"4\"]}], [{\"key\": \"spot\", \"operator\": \"DoesNotExist\"}]], "
    "\"preferred\": [{\"weight\": 30, \"term\": [{\"key\": \"disk\", \"operator\": \"Exists\"}]}]}, "
    "\"tolerations\": [{\"key\": \"dedicated\", \"operator\": \"Equal\", \"value\": \"infer\", \"effect\": \"NoSchedule\"}, "
    "{\"operator\": \"Exists\"}], "
    "\"app\": \"ranker\", \"max_per_node\": 1, \"priority_class\": \"high\", \"preemption_policy\": \"Never\", "
    "\"preemptible\": false, \"gang_timeout\": 600, \"walltime\": 7200.5}\n";

/// Reads one JSON Lines job (after a header line, so the job is line 2) and returns its error.
TraceError jsonl_error(const std::string& job_fields) {
  return read_error<TraceError>("jobs.jsonl", "{\"schema_version\": 1}\n{\"id\": \"a\", \"submit_time\": 0, " + job_fields + "}\n");
}

}  // namespace

TEST_CASE("Scheduling constraint fields of a JSON Lines job parse into JobConstraints", "[traces][native]") {
  std::istringstream in(kConstrainedJob);
  ResourceTable res;
  const auto w = read_trace(in, TraceFormat::kJsonLines, "c.jsonl", catalog(), res);
  REQUIRE(w.size() == 1);
  const auto& c = w[0].constraints;
  CHECK(c.node_selector == std::map<std::string, std::string>{{"nvidia.com/gpu.product", "A100-80GB"}, {"tier", "1"}});
  REQUIRE(c.affinity.required.size() == 2);
  CHECK(c.affinity.required[0] == LabelTerm{{"zone", "In", {"a", "b"}}, {"gpus", "Gt", {"4"}}});
  CHECK(c.affinity.required[1] == LabelTerm{{"spot", "DoesNotExist", {}}});
  REQUIRE(c.affinity.preferred.size() == 1);
  CHECK(c.affinity.preferred[0].first == 30);
  CHECK(c.affinity.preferred[0].second == LabelTerm{{"disk", "Exists", {}}});
  REQUIRE(c.tolerations.size() == 2);
  CHECK(c.tolerations[0] == Toleration{"dedicated", "Equal", "infer", "NoSchedule"});
  CHECK(c.tolerations[1] == Toleration{"", "Exists", "", ""});
  CHECK(c.app == "ranker");
  CHECK(c.max_per_node == 1);
  CHECK(c.priority_class == "high");
  CHECK(c.preempt_never);
  CHECK_FALSE(c.preemptible);
  CHECK(c.gang_timeout == SimTime::from_seconds(600));
  CHECK(c.walltime == SimTime::from_us(7'200'500'000));
  CHECK(w[0].estimate() == c.walltime);
}

TEST_CASE("A job without scheduling fields gets the defaults", "[traces][native]") {
  std::istringstream in("{\"id\": \"a\", \"submit_time\": 0}\n");
  ResourceTable res;
  const auto w = read_trace(in, TraceFormat::kJsonLines, "d.jsonl", catalog(), res);
  REQUIRE(w.size() == 1);
  CHECK(w[0].constraints == JobConstraints{});
  CHECK(w[0].constraints.preemptible);
  CHECK(w[0].constraints.gang_timeout.is_forever());
}

TEST_CASE("CSV columns carry the scalar scheduling fields", "[traces][native]") {
  std::istringstream in("id,submit_time,cpu,app,max_per_node,priority_class,preemption_policy,preemptible,gang_timeout,walltime\n"
                        "a,0,1,ranker,2,high,Never,false,60,3600\n"
                        "b,0,1,,,,,,,\n");
  ResourceTable res;
  const auto w = read_trace(in, TraceFormat::kCsv, "c.csv", catalog(), res);
  REQUIRE(w.size() == 2);
  const auto& a = w[0].constraints;
  CHECK(a.app == "ranker");
  CHECK(a.max_per_node == 2);
  CHECK(a.priority_class == "high");
  CHECK(a.preempt_never);
  CHECK_FALSE(a.preemptible);
  CHECK(a.gang_timeout == SimTime::from_seconds(60));
  CHECK(a.walltime == SimTime::from_seconds(3600));
  CHECK(w[1].constraints == JobConstraints{});
  CHECK(w[0].request.extended.empty());   // the new columns are not resources
}

TEST_CASE("Scheduling constraint fields round-trip through write_trace", "[traces][native]") {
  ResourceTable res;
  std::istringstream in(std::string(kConstrainedJob) + "{\"id\": \"plain\", \"submit_time\": 1}\n");
  const auto jobs = read_trace(in, TraceFormat::kJsonLines, "c.jsonl", catalog(), res);
  std::stringstream buffer;
  write_trace(buffer, TraceFormat::kJsonLines, jobs, catalog(), res);
  const auto back = read_trace(buffer, TraceFormat::kJsonLines, "round-trip", catalog(), res);
  t::check_same_jobs(jobs, back);
  std::stringstream again;
  write_trace(again, TraceFormat::kJsonLines, back, catalog(), res);
  CHECK(again.str() == buffer.str());

  // CSV: the scalar fields round-trip; the structured ones have no CSV form and are refused.
  auto scalar = jobs;
  for (auto& j : scalar) {
    j.constraints.node_selector.clear();
    j.constraints.affinity = {};
    j.constraints.tolerations.clear();
  }
  std::stringstream csv;
  write_trace(csv, TraceFormat::kCsv, scalar, catalog(), res);
  CHECK_THAT(csv.str(), Catch::Contains("app,max_per_node,priority_class,preemption_policy,preemptible,gang_timeout,walltime"));
  t::check_same_jobs(scalar, read_trace(csv, TraceFormat::kCsv, "round-trip.csv", catalog(), res));
  std::stringstream refused;
  try {
    write_trace(refused, TraceFormat::kCsv, jobs, catalog(), res);
    FAIL("a job with a node_selector was written as CSV");
  } catch (const TraceError& e) {
    CHECK(e.where().field == "node_selector");
    CHECK_THAT(e.detail(), Catch::Contains("JSON Lines"));
  }
  // A trace without the new fields is written exactly as before (no new columns).
  std::stringstream plain;
  write_trace(plain, TraceFormat::kCsv, {by_name(jobs, "plain")}, catalog(), res);
  CHECK_THAT(plain.str(), !Catch::Contains("app"));
}

TEST_CASE("A bad scheduling field names the line and the field", "[traces][errors]") {
  struct Case {
    const char* fields;
    const char* field;
    const char* says;
  };
  for (const Case& k : {
           Case{"\"affinity\": {\"required\": [[{\"key\": \"z\", \"operator\": \"Near\", \"values\": [\"a\"]}]]}",
                "affinity/required/0/0/operator", "unknown operator"},
           Case{"\"affinity\": {\"required\": [[{\"key\": \"z\", \"operator\": \"In\"}]]}", "affinity/required/0/0/values",
                "at least one value"},
           Case{"\"affinity\": {\"required\": [[{\"key\": \"z\", \"operator\": \"Exists\", \"values\": [\"a\"]}]]}",
                "affinity/required/0/0/values", "no values"},
           Case{"\"affinity\": {\"required\": [[{\"key\": \"n\", \"operator\": \"Gt\", \"values\": [\"four\"]}]]}",
                "affinity/required/0/0/values", "integer"},
           Case{"\"affinity\": {\"required\": [[{\"key\": \"n\", \"values\": [\"4\"]}]]}", "affinity/required/0/0/operator",
                "missing"},
           Case{"\"affinity\": {\"required\": [[]]}", "affinity/required/0", "at least one requirement"},
           Case{"\"affinity\": {\"preferred\": [{\"weight\": 0, \"term\": [{\"key\": \"d\", \"operator\": \"Exists\"}]}]}",
                "affinity/preferred/0/weight", "1..100"},
           Case{"\"affinity\": {\"preferred\": [{\"weight\": 5, \"term\": [{\"key\": \"d\", \"operator\": \"Exists\"}], "
                "\"x\": 1}]}",
                "affinity/preferred/0/x", "unknown field"},
           Case{"\"affinity\": {\"requred\": []}", "affinity/requred", "unknown field"},
           Case{"\"affinity\": []", "affinity", "expected"},
           Case{"\"node_selector\": [\"zone=a\"]", "node_selector", "expected an object"},
           Case{"\"tolerations\": [{\"key\": \"k\", \"operator\": \"Like\"}]", "tolerations/0/operator", "Equal or Exists"},
           Case{"\"tolerations\": [{\"key\": \"k\", \"operator\": \"Exists\", \"value\": \"v\"}]", "tolerations/0/value",
                "no value"},
           Case{"\"tolerations\": [{\"key\": \"k\", \"effect\": \"NoRun\"}]", "tolerations/0/effect", "NoSchedule"},
           Case{"\"tolerations\": [{\"key\": \"k\", \"tolerationSeconds\": 5}]", "tolerations/0/tolerationSeconds",
                "unknown field"},
           Case{"\"max_per_node\": 2", "max_per_node", "needs an app"},
           Case{"\"preemption_policy\": \"Sometimes\"", "preemption_policy", "PreemptLowerPriority or Never"},
           Case{"\"preemptible\": \"no\"", "preemptible", "true or false"},
           Case{"\"gang_timeout\": \"soon\"", "gang_timeout", "seconds"},
           Case{"\"gang_timeout\": 0", "gang_timeout", "> 0"},
           Case{"\"walltime\": -5", "walltime", "seconds"},
       }) {
    INFO(k.fields);
    const auto e = jsonl_error(k.fields);
    CHECK(e.code() == ErrorCode::kTraceBadValue);
    CHECK(e.where().line == 2);
    CHECK(e.where().field == k.field);
    CHECK_THAT(e.detail(), Catch::Contains(k.says));
  }
  // A well-formed number outside its range is the out-of-range error.
  const auto range = jsonl_error("\"app\": \"x\", \"max_per_node\": -1");
  CHECK(range.code() == ErrorCode::kTraceOutOfRange);
  CHECK(range.where().field == "max_per_node");
  CHECK_THAT(range.detail(), Catch::Contains("0..1000000"));
  // CSV: the column's name and the row's line.
  const auto csv = read_error<TraceError>(
      "jobs.csv", "id,submit_time,cpu,app,max_per_node,preemptible\na,0,1,x,1,true\nb,0,1,x,two,true\n");
  CHECK(csv.where().line == 3);
  CHECK(csv.where().field == "max_per_node");
  const auto flag = read_error<TraceError>("jobs.csv", "id,submit_time,cpu,preemptible\na,0,1,yes\n");
  CHECK(flag.where().line == 2);
  CHECK(flag.where().field == "preemptible");
}

TEST_CASE("The unknown-field message lists the scheduling fields", "[traces][errors]") {
  const auto e = read_error<TraceError>("jobs.jsonl", "{\"id\": \"a\", \"submit_time\": 0, \"nodeSelector\": {}}\n");
  CHECK(e.code() == ErrorCode::kTraceUnknownColumn);
  CHECK(e.where().field == "nodeSelector");
  for (const char* f : {"node_selector", "affinity", "tolerations", "app", "max_per_node", "priority_class",
                        "preemption_policy", "preemptible", "gang_timeout", "walltime"}) {
    CHECK_THAT(e.detail(), Catch::Contains(f));
  }
}
