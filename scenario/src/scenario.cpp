#include <gpusched/scenario/scenario.hpp>

#include <algorithm>
#include <fstream>
#include <sstream>

#include <gpusched/embedded_demo.hpp>
#include <gpusched/policies/framework/registry.hpp>
#include <gpusched/policies/framework/scheduler.hpp>
#include <gpusched/quantity.hpp>
#include <gpusched/traces/native.hpp>

namespace gpusched::scenario {
namespace {

class Parser {
 public:
  Parser(std::string source) : source_(std::move(source)) {}

  [[noreturn]] void fail(ErrorCode code, const std::string& path, const std::string& msg) const {
    throw_error(code, {source_, 0, path}, msg);
  }
  void expect_object(const nlohmann::json& j, const std::string& path) const {
    if (!j.is_object()) fail(ErrorCode::kScenarioBadValue, path, "expected an object");
  }
  std::string str(const nlohmann::json& j, const std::string& path) const {
    if (!j.is_string()) fail(ErrorCode::kScenarioBadValue, path, "expected a string");
    return j.get<std::string>();
  }
  /// A number or a numeric string, as text (for quantities).
  std::string text(const nlohmann::json& j, const std::string& path) const {
    auto t = j.is_null() ? std::nullopt : scalar_text(j);
    if (!t) fail(ErrorCode::kScenarioBadValue, path, "expected a number or a quantity string");
    return *t;
  }
  std::int64_t integer(const nlohmann::json& j, const std::string& path, std::int64_t min, std::int64_t max) const {
    if (!j.is_number_integer()) fail(ErrorCode::kScenarioBadValue, path, "expected an integer");
    const auto v = j.get<std::int64_t>();
    if (v < min || v > max) fail(ErrorCode::kScenarioBadValue, path, "must be between " + std::to_string(min) + " and " + std::to_string(max));
    return v;
  }
  double number(const nlohmann::json& j, const std::string& path, double min) const {
    if (!j.is_number()) fail(ErrorCode::kScenarioBadValue, path, "expected a number");
    const double v = j.get<double>();
    if (!(v >= min)) fail(ErrorCode::kScenarioBadValue, path, "must be >= " + std::to_string(min));
    return v;
  }
  void unknown(const std::string& path, const std::string& known) const {
    fail(ErrorCode::kScenarioUnknownField, path, "unknown field (known: " + known + ")");
  }
  Location at(const std::string& path) const { return {source_, 0, path}; }
  const std::string& source() const { return source_; }

 private:
  std::string source_;
};

TaintEffect parse_effect(const Parser& p, const nlohmann::json& j, const std::string& path) {
  const auto s = p.str(j, path);
  if (s == "NoSchedule") return TaintEffect::kNoSchedule;
  if (s == "PreferNoSchedule") return TaintEffect::kPreferNoSchedule;
  if (s == "NoExecute") return TaintEffect::kNoExecute;
  p.fail(ErrorCode::kScenarioBadValue, path, "expected NoSchedule, PreferNoSchedule or NoExecute");
}

/// One node (or the template of a node group).
NodeSpec parse_node(const Parser& p, const nlohmann::json& j, const std::string& path, const GpuCatalog& catalog,
                    ResourceTable& resources, bool group, std::int64_t& count) {
  p.expect_object(j, path);
  NodeSpec n;
  std::int64_t gpus = 0;
  std::string model;
  bool has_cpu = false, has_mem = false;
  count = 1;
  for (const auto& [k, v] : j.items()) {
    const std::string f = path + "/" + k;
    if (k == "name") n.name = p.str(v, f);
    else if (k == "count" && group) count = p.integer(v, f, 0, 1'000'000);
    else if (k == "cpu") { n.cpu_milli = parse_cpu_milli(p.text(v, f), p.at(f)); has_cpu = true; }
    else if (k == "memory") { n.memory_mib = parse_memory_mib(p.text(v, f), p.at(f)); has_mem = true; }
    else if (k == "gpus") gpus = p.integer(v, f, 0, 4096);
    else if (k == "gpu_model") model = p.str(v, f);
    else if (k == "sockets") n.sockets = static_cast<std::int16_t>(p.integer(v, f, 1, 64));
    else if (k == "labels") {
      p.expect_object(v, f);
      for (const auto& [lk, lv] : v.items()) n.labels[lk] = p.str(lv, f + "/" + lk);
    } else if (k == "taints") {
      if (!v.is_array()) p.fail(ErrorCode::kScenarioBadValue, f, "expected a list of {key, value, effect}");
      for (std::size_t i = 0; i < v.size(); ++i) {
        const std::string tf = f + "/" + std::to_string(i);
        p.expect_object(v[i], tf);
        Taint t;
        for (const auto& [tk, tv] : v[i].items()) {
          if (tk == "key") t.key = p.str(tv, tf + "/key");
          else if (tk == "value") t.value = p.str(tv, tf + "/value");
          else if (tk == "effect") t.effect = parse_effect(p, tv, tf + "/effect");
          else p.unknown(tf + "/" + tk, "key, value, effect");
        }
        if (t.key.empty()) p.fail(ErrorCode::kScenarioMissingField, tf + "/key", "a taint needs a key");
        n.taints.push_back(t);
      }
    } else if (k == "extended") {
      p.expect_object(v, f);
      for (const auto& [ek, ev] : v.items()) {
        if (!is_extended_resource(ek)) p.fail(ErrorCode::kScenarioBadValue, f + "/" + ek, "extended resource names have a domain, e.g. \"rdma/hca\"");
        n.extended.emplace_back(resources.intern(ek), parse_count(p.text(ev, f + "/" + ek), p.at(f + "/" + ek)));
      }
    } else {
      p.unknown(f, group ? "name, count, cpu, memory, gpus, gpu_model, sockets, labels, taints, extended"
                         : "name, cpu, memory, gpus, gpu_model, sockets, labels, taints, extended");
    }
  }
  if (n.name.empty()) p.fail(ErrorCode::kScenarioMissingField, path + "/name", "missing field 'name'");
  if (!has_cpu) p.fail(ErrorCode::kScenarioMissingField, path + "/cpu", "missing field 'cpu'");
  if (!has_mem) p.fail(ErrorCode::kScenarioMissingField, path + "/memory", "missing field 'memory'");
  if (gpus > 0 && model.empty()) p.fail(ErrorCode::kScenarioMissingField, path + "/gpu_model", "a node with GPUs needs a gpu_model");
  if (gpus > 0) {
    const auto id = catalog.require(model, p.at(path + "/gpu_model"));
    for (std::int64_t g = 0; g < gpus; ++g) {
      n.gpus.push_back({id, static_cast<std::int16_t>(g * n.sockets / gpus)});
    }
    // GPU feature discovery labels, as a real node would carry them.
    n.labels.emplace("nvidia.com/gpu.product", catalog[id].name);
    n.labels.emplace("nvidia.com/gpu.count", std::to_string(gpus));
    n.labels.emplace("nvidia.com/gpu.memory", std::to_string(catalog[id].memory_mib));
  }
  return n;
}

void parse_cluster(const Parser& p, const nlohmann::json& j, Scenario& sc) {
  p.expect_object(j, "/cluster");
  if (j.contains("gpu_models")) sc.catalog.add_json(j["gpu_models"], p.source() + " /cluster/gpu_models");
  for (const auto& [k, v] : j.items()) {
    if (k == "gpu_models") continue;
    if (k == "node_groups") {
      if (!v.is_array()) p.fail(ErrorCode::kScenarioBadValue, "/cluster/node_groups", "expected a list");
      for (std::size_t i = 0; i < v.size(); ++i) {
        std::int64_t count = 1;
        const std::string path = "/cluster/node_groups/" + std::to_string(i);
        NodeSpec tmpl = parse_node(p, v[i], path, sc.catalog, sc.resources, true, count);
        const int width = count >= 10000 ? 5 : 4;
        for (std::int64_t c = 0; c < count; ++c) {
          NodeSpec n = tmpl;
          std::string idx = std::to_string(c);
          n.name = tmpl.name + "-" + std::string(static_cast<std::size_t>(std::max<int>(0, width - static_cast<int>(idx.size()))), '0') + idx;
          sc.nodes.push_back(std::move(n));
        }
      }
    } else if (k == "nodes") {
      if (!v.is_array()) p.fail(ErrorCode::kScenarioBadValue, "/cluster/nodes", "expected a list");
      for (std::size_t i = 0; i < v.size(); ++i) {
        std::int64_t count = 1;
        sc.nodes.push_back(parse_node(p, v[i], "/cluster/nodes/" + std::to_string(i), sc.catalog, sc.resources, false, count));
      }
    } else {
      p.unknown("/cluster/" + k, "gpu_models, node_groups, nodes");
    }
  }
  if (sc.nodes.empty()) p.fail(ErrorCode::kScenarioMissingField, "/cluster", "the cluster has no nodes (give node_groups or nodes)");
  std::vector<std::string> names;
  names.reserve(sc.nodes.size());
  for (const auto& n : sc.nodes) names.push_back(n.name);
  std::sort(names.begin(), names.end());
  if (auto d = std::adjacent_find(names.begin(), names.end()); d != names.end()) {
    p.fail(ErrorCode::kScenarioDuplicateNode, "/cluster", "two nodes are named \"" + *d + "\"");
  }
}

void parse_workload(const Parser& p, const nlohmann::json& j, Scenario& sc) {
  p.expect_object(j, "/workload");
  if (j.size() != 1) p.fail(ErrorCode::kScenarioBadValue, "/workload", "give exactly one of synthetic, trace, jobs");
  // Not `const auto& [k, v] = *j.items().begin()`: that binds to a temporary that is gone
  // before k and v are read.
  const std::string& k = j.begin().key();
  const nlohmann::json& v = j.begin().value();
  if (k == "synthetic") {
    sc.synthetic = traces::SyntheticConfig::from_json(v, p.source(), "/workload/synthetic");
  } else if (k == "trace") {
    std::filesystem::path t = p.str(v, "/workload/trace");
    if (t.is_relative()) t = sc.base_dir / t;
    sc.trace = t;
  } else if (k == "jobs") {
    if (!v.is_array()) p.fail(ErrorCode::kScenarioBadValue, "/workload/jobs", "expected a list of jobs");
    std::string lines;
    for (const auto& job : v) lines += job.dump() + "\n";
    std::istringstream in(lines);
    sc.jobs = traces::read_trace(in, traces::TraceFormat::kJsonLines, p.source() + " /workload/jobs (line = job number)",
                                 sc.catalog, sc.resources);
  } else {
    p.unknown("/workload/" + k, "synthetic, trace, jobs");
  }
}

}  // namespace

Scenario parse_scenario(const nlohmann::json& doc, const std::string& source, const std::filesystem::path& base_dir) {
  Parser p(source);
  Scenario sc;
  sc.source = source;
  sc.base_dir = base_dir;
  sc.document = doc;
  sc.catalog = GpuCatalog::builtin();
  p.expect_object(doc, "");
  if (!doc.contains("schema_version")) p.fail(ErrorCode::kScenarioMissingField, "/schema_version", "missing field 'schema_version' (use 1)");
  if (doc["schema_version"] != kScenarioSchemaVersion) {
    p.fail(ErrorCode::kScenarioSchemaVersion, "/schema_version", "schema_version " + doc["schema_version"].dump() + " is not supported (this build reads 1)");
  }
  for (const char* required : {"cluster", "workload"}) {
    if (!doc.contains(required)) p.fail(ErrorCode::kScenarioMissingField, std::string("/") + required, std::string("missing field '") + required + "'");
  }
  parse_cluster(p, doc["cluster"], sc);   // first: gpu_models extend the catalog for the rest
  bool fill = false;
  std::optional<bool> retry;
  for (const auto& [k, v] : doc.items()) {
    const std::string f = "/" + k;
    if (k == "schema_version" || k == "cluster") continue;
    if (k == "name") sc.name = p.str(v, f);
    else if (k == "description") sc.description = p.str(v, f);
    else if (k == "seed") sc.seed = static_cast<std::uint64_t>(p.integer(v, f, 0, std::numeric_limits<std::int64_t>::max()));
    else if (k == "horizon_s") sc.engine.horizon = v.is_null() ? SimTime::forever() : SimTime::from_seconds_f(p.number(v, f, 0));
    else if (k == "mode") {
      const auto m = p.str(v, f);
      if (m == "fill") fill = true;
      else if (m != "replay") p.fail(ErrorCode::kScenarioBadValue, f, "expected \"replay\" (jobs run and finish) or \"fill\" (arrival-only)");
    } else if (k == "retry") {
      if (!v.is_boolean()) p.fail(ErrorCode::kScenarioBadValue, f, "expected true or false");
      retry = v.get<bool>();
    } else if (k == "requeue_on_node_down") {
      if (!v.is_boolean()) p.fail(ErrorCode::kScenarioBadValue, f, "expected true or false");
      sc.engine.requeue_on_node_down = v.get<bool>();
    } else if (k == "profile") {
      try {
        sc.profile = v.is_string() ? policies::builtin_profile(v.get<std::string>(), source)
                                   : policies::Profile::from_json(v, source);
        // Build it once now, so a bad profile is reported with this file before anything runs.
        policies::Scheduler check(sc.profile, policies::Registry::with_builtins(), 0);
      } catch (const ProfileError& e) {
        const auto& inner = e.where().field;
        throw_error(e.code(), {source, 0, inner.empty() || inner == "profile" ? "/profile" : "/profile/" + inner}, e.detail());
      }
    } else if (k == "workload") {
      parse_workload(p, v, sc);
    } else if (k == "outputs") {
      p.expect_object(v, f);
      for (const auto& [ok, ov] : v.items()) {
        if (ok == "sample_interval_s") {
          const double s = p.number(ov, f + "/" + ok, 1e-6);
          sc.outputs.sample_interval = SimTime::from_seconds_f(s);
        } else if (ok == "event_log") {
          if (!ov.is_boolean()) p.fail(ErrorCode::kScenarioBadValue, f + "/" + ok, "expected true or false");
          sc.outputs.event_log = ov.get<bool>();
        } else {
          p.unknown(f + "/" + ok, "sample_interval_s, event_log");
        }
      }
    } else if (k == "events") {
      if (!v.is_array()) p.fail(ErrorCode::kScenarioBadValue, f, "expected a list of {time_s, node, type}");
      for (std::size_t i = 0; i < v.size(); ++i) {
        const std::string ef = f + "/" + std::to_string(i);
        p.expect_object(v[i], ef);
        sim::NodeEvent ne;
        std::string node, type;
        bool has_time = false;
        for (const auto& [ek, ev] : v[i].items()) {
          if (ek == "time_s") { ne.time = SimTime::from_seconds_f(p.number(ev, ef + "/time_s", 0)); has_time = true; }
          else if (ek == "node") node = p.str(ev, ef + "/node");
          else if (ek == "type") type = p.str(ev, ef + "/type");
          else p.unknown(ef + "/" + ek, "time_s, node, type");
        }
        if (!has_time) p.fail(ErrorCode::kScenarioMissingField, ef + "/time_s", "missing field 'time_s'");
        if (type != "node_down" && type != "node_up") p.fail(ErrorCode::kScenarioBadValue, ef + "/type", "expected \"node_down\" or \"node_up\"");
        ne.up = type == "node_up";
        const auto it = std::find_if(sc.nodes.begin(), sc.nodes.end(), [&](const NodeSpec& n) { return n.name == node; });
        if (it == sc.nodes.end()) p.fail(ErrorCode::kScenarioUnknownNode, ef + "/node", "no node is named \"" + node + "\"");
        ne.node = NodeId{static_cast<std::uint32_t>(it - sc.nodes.begin())};
        sc.engine.node_events.push_back(ne);
      }
    } else {
      p.unknown(f, "schema_version, name, description, seed, horizon_s, mode, retry, requeue_on_node_down, cluster, "
                   "profile, workload, events, outputs");
    }
  }
  sc.engine.fill_mode = fill;
  sc.engine.retry = retry.value_or(!fill);
  std::stable_sort(sc.engine.node_events.begin(), sc.engine.node_events.end(),
                   [](const sim::NodeEvent& a, const sim::NodeEvent& b) { return a.time < b.time; });
  if (sc.trace) {
    sc.jobs = traces::read_trace(*sc.trace, sc.catalog, sc.resources);
  }
  return sc;
}

Scenario parse_scenario(std::string_view text, const std::string& source, const std::filesystem::path& base_dir) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& ex) {
    const auto upto = std::min<std::size_t>(ex.byte, text.size());
    const auto line = 1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(upto > 0 ? upto - 1 : 0), '\n');
    throw_error(ErrorCode::kScenarioParse, {source, static_cast<std::int64_t>(line), ""}, std::string("not valid JSON: ") + ex.what());
  }
  return parse_scenario(doc, source, base_dir);
}

Scenario load_scenario(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw_error(ErrorCode::kScenarioCannotOpen, {path.string(), 0, ""}, "cannot open the scenario file");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  return parse_scenario(std::string_view(text), path.string(), path.parent_path());
}

std::string_view demo_scenario_text() { return embedded::kDemoScenarioJson; }

Scenario demo_scenario() { return parse_scenario(std::string_view(demo_scenario_text()), "<built-in demo>", std::filesystem::current_path()); }

}  // namespace gpusched::scenario
