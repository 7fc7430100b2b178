// The one JSON reading layer (gpusched/json_input.hpp) and the readers that use it: deep nesting,
// numbers beyond a double, invalid UTF-8 and malformed kubectl documents are errors with ids and
// locations, through the same entry points a user has (the CLI, in-process), never crashes,
// nlohmann exceptions or messages that are not UTF-8.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include <gpusched/error.hpp>
#include <gpusched/json_input.hpp>
#include <gpusched/scenario/k8s_objects.hpp>
#include <gpusched/time.hpp>
#include <gpusched/utf8.hpp>

#include "support/support.hpp"

using namespace gpusched;
namespace t = gpusched::test;
using nlohmann::json;

namespace {

std::string nested_arrays(int levels) { return std::string(static_cast<std::size_t>(levels), '[') + std::string(static_cast<std::size_t>(levels), ']'); }

/// `{"a":{"a":...1...}}`, `levels` objects deep.
std::string nested_objects(int levels) {
  std::string out;
  for (int i = 0; i < levels; ++i) out += "{\"a\":";
  out += "1";
  out.append(static_cast<std::size_t>(levels), '}');
  return out;
}

template <class E = Error>
E caught(const std::function<void()>& f) {
  try {
    f();
  } catch (const E& e) {
    return e;
  }
  FAIL("no exception");
  throw std::logic_error("unreachable");
}

/// A small valid scenario (2 nodes, 1 job) with `extra` top-level members (each followed by a comma).
std::string small_scenario(const std::string& extra = "") {
  return t::scenario_doc("j", "nodes", R"({"name": "n0", "cpu": 8, "memory": "32Gi", "gpus": 1, "gpu_model": "A100-80GB"})",
                         R"({"id": "a", "submit_time": 0, "duration": 10, "requests": {"cpu": 1}})", extra);
}

}  // namespace

// ------------------------------------------------------------------ UTF-8 helpers

TEST_CASE("UTF-8 validation follows RFC 3629", "[core][json-input]") {
  CHECK(is_valid_utf8(""));
  CHECK(is_valid_utf8("plain ascii"));
  CHECK(is_valid_utf8("h\xC3\xA9llo \xE2\x82\xAC \xF0\x9F\x98\x80"));   // é € 😀
  CHECK(invalid_utf8_at("ab\xFF") == 2u);
  CHECK(invalid_utf8_at("\xC3") == 0u);               // truncated
  CHECK(invalid_utf8_at("x\xC0\xAF") == 1u);          // overlong '/'
  CHECK(invalid_utf8_at("\xE0\x80\xAF") == 0u);       // overlong, 3 bytes
  CHECK(invalid_utf8_at("\xED\xA0\x80") == 0u);       // UTF-16 surrogate D800
  CHECK(invalid_utf8_at("\xF4\x90\x80\x80") == 0u);   // above U+10FFFF
  CHECK(invalid_utf8_at("\xC3\xA9\x80") == 2u);       // stray continuation byte
  CHECK(printable_utf8("h\xC3llo \xC3\xA9") == "h\\xC3llo \xC3\xA9");
  CHECK(describe_invalid_utf8("j\xFF" "1") == "invalid UTF-8 (byte 0xFF at position 2)");
  CHECK(describe_invalid_utf8("ok").empty());
}

TEST_CASE("Error messages are valid UTF-8 even when they quote bad bytes", "[core][json-input]") {
  const TraceError e(ErrorCode::kTraceBadValue, {"a\xFF.csv", 3, "n\xC3"}, "\"x\xE2\x82\" is bad");
  CHECK(is_valid_utf8(e.what()));
  CHECK(std::string(e.what()) == "[gpusched.trace_error.102] a\\xFF.csv:3: field 'n\\xC3': \"x\\xE2\\x82\" is bad");
  CHECK(e.detail() == "\"x\\xE2\\x82\" is bad");
}

// ------------------------------------------------------------------ parse_json

TEST_CASE("parse_json reads what nlohmann reads", "[core][json-input]") {
  const std::string text = R"({"a": [1, -2, 3.5, 18446744073709551615, true, null, "h\u00e9"], "b": {"c": {}}, "d": []})";
  CHECK(parse_json(text, "x.json") == json::parse(text));
  CHECK(parse_json("  7 ", "x.json") == json(7));
  CHECK(parse_json(nested_arrays(kMaxJsonDepth), "x.json").is_array());          // exactly the limit
  CHECK(parse_json(nested_objects(kMaxJsonDepth), "x.json").is_object());
  // Brackets inside strings (escaped quotes too) are not nesting.
  const std::string brackets = "{\"s\": \"\\\"" + std::string(1000, '[') + "\"}";
  CHECK(parse_json(brackets, "x.json")["s"].get<std::string>().size() == 1001);
}

TEST_CASE("JSON nested deeper than the limit is an error with the line, not a crash", "[core][json-input]") {
  for (const auto& deep : {nested_arrays(200'000), nested_objects(200'000), nested_arrays(kMaxJsonDepth + 1)}) {
    const auto e = caught<ScenarioError>([&] { (void)parse_json("{\n\"x\":\n" + deep + "}", "deep.json", kScenarioJsonErrors); });
    CHECK(e.code() == ErrorCode::kScenarioTooDeep);
    CHECK(e.where().file == "deep.json");
    CHECK(e.where().line == 3);
    CHECK_THAT(e.detail(), Catch::Contains("deeper than 256 levels"));
    CHECK(e.where().field.size() < 40);   // the path is cut short, not 256 levels long
  }
  // Traces report it with their own category.
  const auto e = caught<TraceError>([&] { (void)parse_json(nested_arrays(300), "t.jsonl", kTraceJsonErrors, 9); });
  CHECK(e.code() == ErrorCode::kTraceBadValue);
  CHECK(e.where().line == 9);
}

TEST_CASE("A syntax error before the deep part is reported as the syntax error", "[core][json-input]") {
  const auto e = caught<ScenarioError>([&] { (void)parse_json("{\"a\": tru,\n\"b\": " + nested_arrays(1000) + "}", "s.json"); });
  CHECK(e.code() == ErrorCode::kScenarioParse);
  CHECK(e.where().line == 1);
}

TEST_CASE("A number beyond the range of a double is out of range, with its field and line", "[core][json-input]") {
  auto e = caught<ScenarioError>([] { (void)parse_json("{\"a\": [0,\n {\"b\": 1e999}]}", "s.json"); });
  CHECK(e.code() == ErrorCode::kScenarioOutOfRange);
  CHECK(e.where().line == 2);
  CHECK(e.where().field == "/a/1/b");
  CHECK_THAT(e.detail(), Catch::StartsWith("1e999 is out of range (column 8)"));
  e = caught<ScenarioError>([] { (void)parse_json("[-1E+400]", "s.json"); });
  CHECK(e.where().field == "/0");
  CHECK_THAT(e.detail(), Catch::StartsWith("-1E+400 is out of range"));
  const auto tr = caught<TraceError>([] { (void)parse_json(R"({"a": [0, {"b": 1e999}]})", "k.json", kTraceJsonErrors); });
  CHECK(tr.code() == ErrorCode::kTraceOutOfRange);
  CHECK(tr.where().field == "a[1].b");
  // Tiny numbers round to 0 in the JSON layer; the field readers judge them.
  CHECK(parse_json("1e-999", "s.json") == json(0.0));
}

TEST_CASE("Invalid UTF-8 in a JSON string is an error naming the field", "[core][json-input]") {
  const auto e = caught<ScenarioError>([] { (void)parse_json("{\"nodes\": [{\"name\": \"n\xC3(\"}]}", "s.json"); });
  CHECK(e.code() == ErrorCode::kScenarioParse);
  CHECK(e.where().field == "/nodes/0/name");
  CHECK_THAT(e.detail(), Catch::Contains("UTF-8"));
  CHECK(is_valid_utf8(e.what()));
}

TEST_CASE("A syntax error next to a non-ASCII character gives a UTF-8 message with line and column", "[core][json-input]") {
  const auto e = caught<ScenarioError>([] { (void)parse_json("{\"name\": \"h\xC3\xA9llo\",\n \"x\": \xC3\xA9}", "s.json"); });
  CHECK(e.code() == ErrorCode::kScenarioParse);
  CHECK(e.where().line == 2);
  CHECK_THAT(e.detail(), Catch::StartsWith("not valid JSON (column 7):"));
  CHECK(is_valid_utf8(e.what()));
  CHECK_THAT(e.detail(), Catch::Contains("\\xC3"));
}

TEST_CASE("Trailing text, comments and empty input are syntax errors", "[core][json-input]") {
  CHECK(caught<ScenarioError>([] { (void)parse_json("{} {}", "s.json"); }).code() == ErrorCode::kScenarioParse);
  CHECK(caught<ScenarioError>([] { (void)parse_json("{} // c", "s.json"); }).code() == ErrorCode::kScenarioParse);
  CHECK(caught<ScenarioError>([] { (void)parse_json("", "s.json"); }).code() == ErrorCode::kScenarioParse);
}

// ------------------------------------------------------------------ YAML (kubernetes_objects)

TEST_CASE("Kubernetes objects in YAML: deep nesting, alias bombs and bad UTF-8 are errors with ids", "[core][json-input][k8s-objects]") {
  const std::string head = "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: p}\nvalue: 5\n";
  // Deeper than kMaxJsonDepth (yaml-cpp itself stops at 2000; both are errors).
  for (int levels : {300, 200'000}) {
    const auto e = caught<ScenarioError>(
        [&] { (void)scenario::parse_kubernetes_objects(head + "x: " + nested_arrays(levels) + "\n", "o.yaml"); });
    CHECK((e.code() == ErrorCode::kScenarioTooDeep || e.code() == ErrorCode::kScenarioParse));
    CHECK(e.where().file == "o.yaml");
  }
  // "Billion laughs": 9 levels of 10 aliases would be 10^9 values.
  std::string bomb = head + "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i < 10; ++i) {
    bomb += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
    for (int k = 0; k < 10; ++k) bomb += (k ? ", *a" : "*a") + std::to_string(i - 1);
    bomb += "]\n";
  }
  auto e = caught<ScenarioError>([&] { (void)scenario::parse_kubernetes_objects(bomb, "o.yaml"); });
  CHECK(e.code() == ErrorCode::kScenarioParse);
  CHECK_THAT(e.detail(), Catch::Contains("too many values"));
  // yaml-cpp 0.7 reports empty documents forever on a stray ',' (found by the fuzz smoke test).
  for (const char* stuck : {",", ", ,", "---\n,\n"}) {
    e = caught<ScenarioError>([&] { (void)scenario::parse_kubernetes_objects(stuck, "o.yaml"); });
    CHECK(e.code() == ErrorCode::kScenarioParse);
    CHECK_THAT(e.detail(), Catch::Contains("makes no progress"));
  }
  e = caught<ScenarioError>([&] { (void)scenario::parse_kubernetes_objects(head + "description: \"h\xC3(\"\n", "o.yaml"); });
  CHECK(e.code() == ErrorCode::kScenarioParse);
  CHECK(e.where().line == 5);
  CHECK(e.where().field == "/description");
  CHECK(is_valid_utf8(e.what()));
}

// ------------------------------------------------------------------ through the CLI

TEST_CASE("CLI: a scenario nested 200,000 levels deep fails with 210, not a crash", "[core][json-input][cli]") {
  const t::TempDir dir;
  const auto deep = dir.write("deep.json", "{\"name\": \"x\",\n\"cluster\": " + nested_arrays(200'000) + "}\n");
  for (const char* cmd : {"validate", "run"}) {
    const auto r = cmd == std::string("run") ? t::cli({cmd, deep.string(), "--out", (dir.path() / "out").string()})
                                             : t::cli({cmd, deep.string()});
    CHECK(r.rc == 1);
    CHECK_THAT(r.err, Catch::Contains("[gpusched.scenario_error.210] " + deep.string() + ":2:"));
  }
  CHECK_FALSE(std::filesystem::exists(dir.path() / "out"));
  const auto prof = dir.write("p.json", nested_objects(200'000));
  const auto r = t::cli({"run", dir.write("s.json", small_scenario()).string(), "--out", (dir.path() / "o").string(),
                         "--profile", prof.string()});
  CHECK(r.rc == 1);
  CHECK_THAT(r.err, Catch::Contains("[gpusched.scenario_error.210] " + prof.string() + ":1:"));
}

TEST_CASE("CLI: 1e999 in a scenario, a JSON Lines trace and a kubectl file is out of range", "[core][json-input][cli]") {
  const t::TempDir dir;
  const auto sc = dir.write("s.json", small_scenario(R"("seed":
    1e999,)"));
  auto r = t::cli({"validate", sc.string()});
  CHECK(r.rc == 1);
  CHECK_THAT(r.err, Catch::Contains("[gpusched.scenario_error.211] " + sc.string() + ":2: field '/seed': 1e999 is out of range"));

  const auto jl = dir.write("t.jsonl", "{\"id\": \"a\", \"submit_time\": 0, \"duration\": 5}\n"
                                        "{\"id\": \"b\", \"submit_time\": 1e999, \"duration\": 5}\n");
  for (const auto& args : {std::vector<std::string>{"validate", jl.string()},
                           std::vector<std::string>{"convert", jl.string(), (dir.path() / "o.csv").string()}}) {
    r = t::cli(args);
    CHECK(r.rc == 1);
    CHECK_THAT(r.err, Catch::Contains("[gpusched.trace_error.110] " + jl.string() + ":2: field 'submit_time': 1e999 is out of range"));
  }
  CHECK_FALSE(std::filesystem::exists(dir.path() / "o.csv"));

  const auto pods = dir.write("pods.json", R"({"apiVersion": "v1", "kind": "List", "items": [
  {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
   "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": 1e999}}}]}}]})");
  for (const auto& args : {std::vector<std::string>{"validate", pods.string()},
                           std::vector<std::string>{"convert", pods.string(), (dir.path() / "o.jsonl").string()}}) {
    r = t::cli(args);
    CHECK(r.rc == 1);
    CHECK_THAT(r.err, Catch::Contains("[gpusched.trace_error.110] " + pods.string() +
                                      ":3: field 'items[0].spec.containers[0].resources.requests.cpu'"));
  }
}

TEST_CASE("CLI: a .json that is not an object, or whose kind is not a string, is an error with an id", "[core][json-input][cli]") {
  const t::TempDir dir;
  const auto out = (dir.path() / "o.jsonl").string();
  auto r = t::cli({"convert", dir.write("k.json", R"({"apiVersion": "v1", "kind": 5, "items": []})").string(), out});
  CHECK(r.rc == 1);
  CHECK_THAT(r.err, Catch::Contains("[gpusched.trace_error.102]"));
  CHECK_THAT(r.err, Catch::Contains("field 'kind': a JSON file that is not a kubectl list of Nodes or Pods (kind is number, not a string)"));
  r = t::cli({"convert", dir.write("i.json", R"({"kind": "List", "items": [{"kind": ["Pod"]}]})").string(), out});
  CHECK(r.rc == 1);
  CHECK_THAT(r.err, Catch::Contains("field 'items[0].kind'"));
  r = t::cli({"convert", dir.write("a.json", R"([{"kind": "Pod"}])").string(), out});
  CHECK(r.rc == 1);
  CHECK_THAT(r.err, Catch::Contains("[gpusched.trace_error.102]"));
  CHECK_THAT(r.err, Catch::Contains("the document is a JSON array, not an object"));
  CHECK_FALSE(std::filesystem::exists(out));
}

TEST_CASE("CLI: invalid UTF-8 in a job or node name fails validate and convert at read time", "[core][json-input][cli]") {
  const t::TempDir dir;
  const auto csv = dir.write("jobs.csv", "id,submit_time,duration,nvidia.com/gpu\nok,0,5,1\nj\xFF" "1,0,5,1\n");
  for (const auto& args : {std::vector<std::string>{"validate", csv.string()},
                           std::vector<std::string>{"convert", csv.string(), (dir.path() / "o.jsonl").string()}}) {
    const auto r = t::cli(args);
    CHECK(r.rc == 1);
    CHECK_THAT(r.err, Catch::Contains("[gpusched.trace_error.102] " + csv.string() + ":3: field 'id': invalid UTF-8 (byte 0xFF"));
    CHECK(is_valid_utf8(r.err));
  }
  CHECK_FALSE(std::filesystem::exists(dir.path() / "o.jsonl"));
  const auto jl = dir.write("jobs.jsonl", "{\"id\": \"j\xC3(\", \"submit_time\": 0, \"duration\": 5}\n");
  auto r = t::cli({"validate", jl.string()});
  CHECK(r.rc == 1);
  CHECK_THAT(r.err, Catch::Contains("[gpusched.trace_error.102] " + jl.string() + ":1: field 'id'"));
  const auto nodes = dir.write("nodes.csv", "sn,cpu_milli,memory_mib,gpu,model\nn\xC3" "0,64000,262144,2,V100M32\n");
  r = t::cli({"convert", "--from", "openb-nodes", nodes.string(), (dir.path() / "c.json").string()});
  CHECK(r.rc == 1);
  CHECK_THAT(r.err, Catch::Contains("[gpusched.trace_error.102] " + nodes.string() + ":2: field 'sn': invalid UTF-8"));
  CHECK_FALSE(std::filesystem::exists(dir.path() / "c.json"));
}

TEST_CASE("CLI: scenario and profile files whose names are not UTF-8 run, and their outputs stay valid JSON",
          "[core][json-input][cli]") {
  // Was: terminate (type_error.316) when summary.json recorded the name.
  const t::TempDir dir;
  const auto sc = dir.write("s\xFF.json", small_scenario());
  const auto prof = dir.write("p\xFF.json", R"({"extends": "binpack"})");
  const auto out = dir.path() / "out";
  const auto r = t::cli({"run", sc.string(), "--out", out.string(), "--profile", prof.string()});
  CHECK(r.rc == 0);
  const std::string summary = t::read_file(out / "summary.json");
  CHECK(is_valid_utf8(summary));
  CHECK_THAT(summary, Catch::Contains("s\\\\xFF.json"));   // the name, escaped
  CHECK_THAT(summary, Catch::Contains("p\\\\xFF"));        // the profile, named after its file
}
