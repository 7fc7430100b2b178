#include <gpusched/traces/native.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>
#include <unordered_set>

#include <nlohmann/json.hpp>

#include <gpusched/constraints.hpp>
#include <gpusched/json_input.hpp>
#include <gpusched/quantity.hpp>
#include <gpusched/scheduling.hpp>
#include <gpusched/traces/csv.hpp>
#include <gpusched/traces/ranges.hpp>

namespace gpusched::traces {
namespace {

const std::vector<std::string> kMetaColumns = {"id", "submit_time", "duration", "tasks", "min_available",
                                               "priority", "queue", "gpu_model", "gpu_util", "app", "max_per_node",
                                               "priority_class", "preemption_policy", "preemptible", "gang_timeout",
                                               "walltime", "restart_overhead", "claim_template",
                                               "resource_claim"};
/// For the unknown-field message.
constexpr const char* kJsonFields =
    "id, submit_time, duration, tasks, min_available, priority, queue, gpu_model, gpu_util, requests, node_selector, "
    "affinity, tolerations, app, max_per_node, priority_class, preemption_policy, preemptible, gang_timeout, walltime, restart_overhead, claim_template, resource_claim";

/// The request a trace states: a job whose GPUs come from a DRA claim (resolved by a scenario)
/// states its claim template, not the GPU count the claim resolved to.
TaskRequest written_request(const JobSpec& j) {
  TaskRequest r = j.request;
  if (j.constraints.claims) r.gpu = GpuRequest{};
  return r;
}

std::vector<std::string> split_models(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == '|') {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else if (c != ' ') {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

/// Fields of one job as text, whatever the format; the structured constraints (JSON Lines only)
/// already parsed into `constraints`.
struct RawJob {
  std::string id, submit, duration, tasks, min_available, priority, queue, gpu_util;
  std::string app, max_per_node, priority_class, preemption_policy, preemptible, gang_timeout, walltime;
  std::string restart_overhead, claim_template, resource_claim;
  std::vector<std::string> models;
  std::vector<std::pair<std::string, std::string>> requests;
  JobConstraints constraints;   ///< node_selector, affinity, tolerations
  std::int64_t line = 0;
};

/// A duration in seconds > 0 (1e-6..1e10), or forever when empty ("inf" and "forever" too).
SimTime positive_seconds(const std::string& text, const Location& where) {
  return trace_seconds(text, where, Span::kPositive, true);
}

/// The job's placement constraints, priority class and limits; validated (constraints.hpp).
void build_constraints(const RawJob& raw, const std::string& source, JobSpec& j, CompactStringPool& texts) {
  auto at = [&](const std::string& field) { return Location{source, raw.line, field}; };
  auto& c = j.constraints;
  c = raw.constraints;
  c.app = texts.get(raw.app);
  c.priority_class = texts.get(raw.priority_class);
  if (!raw.max_per_node.empty()) {
    c.max_per_node = static_cast<std::int32_t>(trace_integer(raw.max_per_node, at("max_per_node"), 0, 1'000'000));
  }
  if (raw.preemption_policy == "Never") c.preempt_never = true;
  else if (!raw.preemption_policy.empty() && raw.preemption_policy != "PreemptLowerPriority") {
    throw_error(ErrorCode::kTraceBadValue, at("preemption_policy"),
                "\"" + raw.preemption_policy + "\" is not PreemptLowerPriority or Never");
  }
  if (raw.preemptible == "false") c.preemptible = false;
  else if (!raw.preemptible.empty() && raw.preemptible != "true") {
    throw_error(ErrorCode::kTraceBadValue, at("preemptible"), "\"" + raw.preemptible + "\" is not true or false");
  }
  c.gang_timeout = positive_seconds(raw.gang_timeout, at("gang_timeout"));
  c.walltime = positive_seconds(raw.walltime, at("walltime"));
  // 0 is a real value here (no overhead for this job), unlike the limits above.
  c.restart_overhead = trace_seconds(raw.restart_overhead, at("restart_overhead"), Span::kNonNegative, true);
  if (raw.claim_template.find_first_of(" \t,\"") != std::string::npos) {
    throw_error(ErrorCode::kTraceBadValue, at("claim_template"), "\"" + raw.claim_template + "\" is not a ResourceClaimTemplate name");
  }
  c.claim_template = texts.get(raw.claim_template);
  if (raw.resource_claim.find_first_of(" \t,\"") != std::string::npos) {
    throw_error(ErrorCode::kTraceBadValue, at("resource_claim"), "\"" + raw.resource_claim + "\" is not a ResourceClaim name");
  }
  if (!raw.resource_claim.empty() && !raw.claim_template.empty()) {
    throw_error(ErrorCode::kTraceBadValue, at("resource_claim"),
                "a job in a simulation has one DRA claim: resource_claim (a shared ResourceClaim) or claim_template, not both");
  }
  c.resource_claim = texts.get(raw.resource_claim);
  if (const auto problem = validate(c); !problem.empty()) {
    const auto colon = problem.find(": ");
    throw_error(ErrorCode::kTraceBadValue, at(problem.substr(0, colon)),
                colon == std::string::npos ? problem : problem.substr(colon + 2));
  }
}

JobSpec build_job(const RawJob& raw, const std::string& source, const GpuCatalog& catalog, ResourceTable& resources,
                  const std::string& request_prefix, CompactStringPool& texts) {
  auto at = [&](const char* field) { return Location{source, raw.line, field}; };
  JobSpec j;
  if (raw.id.empty()) throw_error(ErrorCode::kTraceBadValue, at("id"), "a job needs an id");
  j.name = raw.id;
  if (raw.submit.empty()) throw_error(ErrorCode::kTraceBadValue, at("submit_time"), "a job needs a submit_time");
  j.submit = trace_seconds(raw.submit, at("submit_time"), Span::kInstant);
  j.duration = trace_seconds(raw.duration, at("duration"), Span::kNonNegative, true);
  j.tasks = raw.tasks.empty() ? 1 : static_cast<std::int32_t>(trace_integer(raw.tasks, at("tasks"), 1, 1'000'000));
  j.min_available = raw.min_available.empty()
                        ? j.tasks
                        : static_cast<std::int32_t>(trace_integer(raw.min_available, at("min_available"), 1, j.tasks));
  if (!raw.priority.empty()) {
    j.priority = static_cast<std::int32_t>(trace_integer(raw.priority, at("priority"), std::numeric_limits<std::int32_t>::min(),
                                                         std::numeric_limits<std::int32_t>::max()));
  }
  if (!raw.queue.empty()) j.queue = raw.queue;
  if (!raw.gpu_util.empty()) {
    double u = 0.0;
    std::size_t pos = 0;
    try {
      u = std::stod(raw.gpu_util, &pos);
    } catch (const std::out_of_range&) {
      out_of_range(at("gpu_util"), raw.gpu_util, "must be a share in (0, 1]");
    } catch (const std::exception&) {
      pos = 0;
    }
    if (pos != raw.gpu_util.size() || !std::isfinite(u)) {
      throw_error(ErrorCode::kTraceBadValue, at("gpu_util"), "\"" + raw.gpu_util + "\" is not a share in (0, 1]");
    }
    if (!(u > 0.0 && u <= 1.0)) out_of_range(at("gpu_util"), raw.gpu_util, "must be a share in (0, 1]");
    j.gpu_util = u;
  }
  check_request_ranges(raw.requests, {source, raw.line, ""}, request_prefix);
  if ((!raw.claim_template.empty() || !raw.resource_claim.empty()) && !raw.models.empty()) {
    throw_error(ErrorCode::kTraceBadValue, at("gpu_model"),
                std::string("gpu_model does not combine with ") + (raw.claim_template.empty() ? "resource_claim" : "claim_template") + ": the claim chooses the GPUs (select the model in the claim's selectors, "
                "e.g. device.attributes['gpu.nvidia.com'].productName == 'NVIDIA H100-80GB'; docs/dra.md)");
  }
  const bool claim = !raw.claim_template.empty() || !raw.resource_claim.empty();
  j.request = parse_requests(raw.requests, raw.models, catalog, resources, {source, raw.line, ""}, request_prefix, claim);
  j.source_line = raw.line;
  build_constraints(raw, source, j, texts);
  // A multi-host TPU slice is an Indexed Job of one pod per host, placed all-or-nothing.
  if (const auto hosts = j.request.tpu.hosts; hosts > 1) {
    if (raw.tasks.empty() || j.tasks == 1) j.tasks = hosts;
    if (j.tasks != hosts) {
      throw_error(ErrorCode::kTraceBadValue, at("tasks"), "a " + j.request.tpu.topology + " slice of " +
                                                              std::to_string(j.request.tpu.chips) + " chips per host spans " +
                                                              std::to_string(hosts) + " hosts, so the job has " +
                                                              std::to_string(hosts) + " tasks, not " + std::to_string(j.tasks));
    }
    if (!raw.min_available.empty() && j.min_available != j.tasks) {
      throw_error(ErrorCode::kTraceBadValue, at("min_available"), "a multi-host TPU slice is all-or-nothing: min_available must equal tasks");
    }
    j.min_available = j.tasks;
  }
  return j;
}

std::string json_text(const nlohmann::json& v, const Location& where) {
  if (auto t = scalar_text(v)) return *t;
  throw_error(ErrorCode::kTraceBadValue, where, "expected a number or a string, got " + std::string(v.type_name()));
}

/// Rejects duplicate ids, then sorts by submit time (stable).
void finish(Workload& jobs, const std::string& source) {
  std::unordered_set<std::string> seen;
  for (const auto& j : jobs) {
    if (!seen.insert(j.name).second) {
      throw_error(ErrorCode::kTraceDuplicateId, {source, j.source_line, "id"}, "job id \"" + j.name + "\" appears twice");
    }
  }
  std::stable_sort(jobs.begin(), jobs.end(), [](const JobSpec& a, const JobSpec& b) { return a.submit < b.submit; });
}

void check_schema_comment(const std::vector<std::string>& comments, const std::string& source) {
  for (const auto& c : comments) {
    const auto pos = c.find("schema_version=");
    if (pos == std::string::npos) continue;
    const std::string v = c.substr(pos + 15, c.find_first_of(" \t", pos + 15) - (pos + 15));
    if (v != std::to_string(kTraceSchemaVersion)) {
      throw_error(ErrorCode::kTraceSchemaVersion, {source, 1, "schema_version"},
                  "schema_version " + v + " is not supported (this build reads " + std::to_string(kTraceSchemaVersion) + ")");
    }
  }
}

Workload read_csv(std::istream& in, const std::string& source, const GpuCatalog& catalog, ResourceTable& resources) {
  CompactStringPool texts;   // each distinct app, priority class and claim template allocated once
  CsvReader csv(in, source);
  check_schema_comment(csv.comments(), source);
  const std::size_t c_id = csv.require("id");
  const std::size_t c_submit = csv.require("submit_time");
  auto col = [&](const char* n) { return csv.column(n); };
  const auto c_duration = col("duration"), c_tasks = col("tasks"), c_min = col("min_available"),
             c_priority = col("priority"), c_queue = col("queue"), c_model = col("gpu_model"), c_util = col("gpu_util");
  const auto c_app = col("app"), c_max = col("max_per_node"), c_class = col("priority_class"),
             c_policy = col("preemption_policy"), c_preemptible = col("preemptible"), c_gang = col("gang_timeout"),
             c_wall = col("walltime"), c_overhead = col("restart_overhead"), c_claim = col("claim_template"),
             c_shared = col("resource_claim");
  std::vector<std::size_t> resource_cols;
  for (std::size_t i = 0; i < csv.header().size(); ++i) {
    if (std::find(kMetaColumns.begin(), kMetaColumns.end(), csv.header()[i]) == kMetaColumns.end()) resource_cols.push_back(i);
  }
  Workload jobs;
  std::vector<std::string> f;
  while (csv.next(f)) {
    RawJob raw;
    raw.line = csv.line();
    raw.id = f[c_id];
    raw.submit = f[c_submit];
    if (c_duration) raw.duration = f[*c_duration];
    if (c_tasks) raw.tasks = f[*c_tasks];
    if (c_min) raw.min_available = f[*c_min];
    if (c_priority) raw.priority = f[*c_priority];
    if (c_queue) raw.queue = f[*c_queue];
    if (c_util) raw.gpu_util = f[*c_util];
    if (c_app) raw.app = f[*c_app];
    if (c_max) raw.max_per_node = f[*c_max];
    if (c_class) raw.priority_class = f[*c_class];
    if (c_policy) raw.preemption_policy = f[*c_policy];
    if (c_preemptible) raw.preemptible = f[*c_preemptible];
    if (c_gang) raw.gang_timeout = f[*c_gang];
    if (c_wall) raw.walltime = f[*c_wall];
    if (c_overhead) raw.restart_overhead = f[*c_overhead];
    if (c_claim) raw.claim_template = f[*c_claim];
    if (c_shared) raw.resource_claim = f[*c_shared];
    if (c_model) raw.models = split_models(f[*c_model]);
    for (auto c : resource_cols) {
      if (!f[c].empty()) raw.requests.emplace_back(csv.header()[c], f[c]);
    }
    jobs.push_back(build_job(raw, source, catalog, resources, "", texts));
  }
  finish(jobs, source);
  return jobs;
}

/// Rejects a JSON member that is not in `known` (comma-separated) at `at`/name.
[[noreturn]] void unknown_member(const Location& where, const std::string& name, const char* known) {
  Location l = where;
  l.field += "/" + name;
  throw_error(ErrorCode::kTraceBadValue, l, "unknown field (known: " + std::string(known) + ")");
}

Location sub(const Location& where, const std::string& part) {
  Location l = where;
  l.field += "/" + part;
  return l;
}

std::map<std::string, std::string> parse_selector(const nlohmann::json& v, const Location& where) {
  if (!v.is_object()) throw_error(ErrorCode::kTraceBadValue, where, "expected an object of label: value");
  std::map<std::string, std::string> out;
  for (const auto& [k, val] : v.items()) {
    if (k.empty()) throw_error(ErrorCode::kTraceBadValue, where, "a label key must not be empty");
    out[k] = json_text(val, sub(where, k));
  }
  return out;
}

LabelTerm parse_term(const nlohmann::json& v, const Location& where) {
  if (!v.is_array()) throw_error(ErrorCode::kTraceBadValue, where, "expected a list of {\"key\", \"operator\", \"values\"}");
  LabelTerm term;
  for (std::size_t i = 0; i < v.size(); ++i) {
    const auto at = sub(where, std::to_string(i));
    if (!v[i].is_object()) throw_error(ErrorCode::kTraceBadValue, at, "expected {\"key\", \"operator\", \"values\"}");
    LabelRequirement r;
    bool has_op = false;
    for (const auto& [k, val] : v[i].items()) {
      if (k == "key") r.key = json_text(val, sub(at, k));
      else if (k == "operator") {
        r.op = json_text(val, sub(at, k));
        has_op = true;
      } else if (k == "values") {
        if (!val.is_array()) throw_error(ErrorCode::kTraceBadValue, sub(at, k), "expected a list of strings");
        for (std::size_t n = 0; n < val.size(); ++n) r.values.push_back(json_text(val[n], sub(sub(at, k), std::to_string(n))));
      } else {
        unknown_member(at, k, "key, operator, values");
      }
    }
    if (!has_op) throw_error(ErrorCode::kTraceBadValue, sub(at, "operator"), "missing (In, NotIn, Exists, DoesNotExist, Gt, Lt)");
    term.push_back(std::move(r));
  }
  return term;
}

NodeAffinity parse_affinity(const nlohmann::json& v, const Location& where) {
  if (!v.is_object()) throw_error(ErrorCode::kTraceBadValue, where, "expected {\"required\": [...], \"preferred\": [...]}");
  NodeAffinity a;
  for (const auto& [k, val] : v.items()) {
    const auto at = sub(where, k);
    if (!val.is_array()) throw_error(ErrorCode::kTraceBadValue, at, "expected a list");
    if (k == "required") {
      for (std::size_t i = 0; i < val.size(); ++i) a.required.push_back(parse_term(val[i], sub(at, std::to_string(i))));
    } else if (k == "preferred") {
      for (std::size_t i = 0; i < val.size(); ++i) {
        const auto pat = sub(at, std::to_string(i));
        if (!val[i].is_object()) throw_error(ErrorCode::kTraceBadValue, pat, "expected {\"weight\": 1..100, \"term\": [...]}");
        std::int32_t weight = 0;
        LabelTerm term;
        bool has_weight = false, has_term = false;
        for (const auto& [pk, pv] : val[i].items()) {
          if (pk == "weight") {
            if (!pv.is_number_integer() || pv.get<std::int64_t>() < 1 || pv.get<std::int64_t>() > 100) {
              throw_error(ErrorCode::kTraceBadValue, sub(pat, pk), "must be an integer 1..100");
            }
            weight = static_cast<std::int32_t>(pv.get<std::int64_t>());
            has_weight = true;
          } else if (pk == "term") {
            term = parse_term(pv, sub(pat, pk));
            has_term = true;
          } else {
            unknown_member(pat, pk, "weight, term");
          }
        }
        if (!has_weight) throw_error(ErrorCode::kTraceBadValue, sub(pat, "weight"), "missing (1..100)");
        if (!has_term) throw_error(ErrorCode::kTraceBadValue, sub(pat, "term"), "missing");
        a.preferred.emplace_back(weight, std::move(term));
      }
    } else {
      unknown_member(where, k, "required, preferred");
    }
  }
  return a;
}

std::vector<Toleration> parse_tolerations(const nlohmann::json& v, const Location& where) {
  if (!v.is_array()) throw_error(ErrorCode::kTraceBadValue, where, "expected a list of {\"key\", \"operator\", \"value\", \"effect\"}");
  std::vector<Toleration> out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    const auto at = sub(where, std::to_string(i));
    if (!v[i].is_object()) throw_error(ErrorCode::kTraceBadValue, at, "expected {\"key\", \"operator\", \"value\", \"effect\"}");
    Toleration t;
    for (const auto& [k, val] : v[i].items()) {
      if (k == "key") t.key = json_text(val, sub(at, k));
      else if (k == "operator") t.op = json_text(val, sub(at, k));
      else if (k == "value") t.value = json_text(val, sub(at, k));
      else if (k == "effect") t.effect = json_text(val, sub(at, k));
      else unknown_member(at, k, "key, operator, value, effect");
    }
    out.push_back(std::move(t));
  }
  return out;
}

nlohmann::json term_json(const LabelTerm& term) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& r : term) {
    nlohmann::json o{{"key", r.key}, {"operator", r.op}};
    if (!r.values.empty()) o["values"] = r.values;
    out.push_back(std::move(o));
  }
  return out;
}

/// The constraint fields of a job, as read_jsonl reads them; only those that differ from the defaults.
void constraints_json(const JobConstraints& c, nlohmann::json& o) {
  if (!c.node_selector.empty()) o["node_selector"] = c.node_selector;
  if (!c.affinity.empty()) {
    nlohmann::json a = nlohmann::json::object();
    if (!c.affinity.required.empty()) {
      a["required"] = nlohmann::json::array();
      for (const auto& term : c.affinity.required) a["required"].push_back(term_json(term));
    }
    if (!c.affinity.preferred.empty()) {
      a["preferred"] = nlohmann::json::array();
      for (const auto& [w, term] : c.affinity.preferred) a["preferred"].push_back({{"weight", w}, {"term", term_json(term)}});
    }
    o["affinity"] = std::move(a);
  }
  if (!c.tolerations.empty()) {
    nlohmann::json ts = nlohmann::json::array();
    for (const auto& t : c.tolerations) {
      nlohmann::json x = nlohmann::json::object();
      if (!t.key.empty()) x["key"] = t.key;
      x["operator"] = t.op;
      if (!t.value.empty()) x["value"] = t.value;
      if (!t.effect.empty()) x["effect"] = t.effect;
      ts.push_back(std::move(x));
    }
    o["tolerations"] = std::move(ts);
  }
}

Workload read_jsonl(std::istream& in, const std::string& source, const GpuCatalog& catalog, ResourceTable& resources) {
  CompactStringPool texts;   // each distinct app, priority class and claim template allocated once
  Workload jobs;
  std::string text;
  std::int64_t line = 0;
  while (std::getline(in, text)) {
    ++line;
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    const nlohmann::json j = parse_json(text, source, kTraceJsonErrors, line);
    if (!j.is_object()) throw_error(ErrorCode::kTraceBadValue, {source, line, ""}, "each line must be a JSON object");
    if (j.contains("schema_version") && !j.contains("id")) {
      if (j["schema_version"] != kTraceSchemaVersion) {
        throw_error(ErrorCode::kTraceSchemaVersion, {source, line, "schema_version"},
                    "schema_version " + j["schema_version"].dump() + " is not supported (this build reads 1)");
      }
      continue;
    }
    RawJob raw;
    raw.line = line;
    for (const auto& [k, v] : j.items()) {
      const Location where{source, line, k};
      if (k == "id") raw.id = json_text(v, where);
      else if (k == "submit_time") raw.submit = json_text(v, where);
      else if (k == "duration") raw.duration = json_text(v, where);
      else if (k == "tasks") raw.tasks = json_text(v, where);
      else if (k == "min_available") raw.min_available = json_text(v, where);
      else if (k == "priority") raw.priority = json_text(v, where);
      else if (k == "queue") raw.queue = json_text(v, where);
      else if (k == "gpu_util") raw.gpu_util = json_text(v, where);
      else if (k == "app") raw.app = json_text(v, where);
      else if (k == "max_per_node") raw.max_per_node = json_text(v, where);
      else if (k == "priority_class") raw.priority_class = json_text(v, where);
      else if (k == "preemption_policy") raw.preemption_policy = json_text(v, where);
      else if (k == "gang_timeout") raw.gang_timeout = json_text(v, where);
      else if (k == "walltime") raw.walltime = json_text(v, where);
      else if (k == "restart_overhead") raw.restart_overhead = json_text(v, where);
      else if (k == "claim_template") {
        // (An empty name would silently mean no claim: the job would take no device.)
        if (!v.is_string() || v.get_ref<const std::string&>().empty()) {
          throw_error(ErrorCode::kTraceBadValue, where, "expected a ResourceClaimTemplate's name (a non-empty string)");
        }
        raw.claim_template = v.get<std::string>();
      }
      else if (k == "resource_claim") {
        if (!v.is_string() || v.get_ref<const std::string&>().empty()) {
          throw_error(ErrorCode::kTraceBadValue, where, "expected a ResourceClaim's name (a non-empty string)");
        }
        raw.resource_claim = v.get<std::string>();
      }
      else if (k == "preemptible") {
        if (!v.is_boolean()) throw_error(ErrorCode::kTraceBadValue, where, "expected true or false");
        raw.preemptible = v.get<bool>() ? "true" : "false";
      } else if (k == "node_selector") raw.constraints.node_selector = parse_selector(v, where);
      else if (k == "affinity") raw.constraints.affinity = parse_affinity(v, where);
      else if (k == "tolerations") raw.constraints.tolerations = parse_tolerations(v, where);
      else if (k == "gpu_model") {
        if (v.is_array()) {
          for (const auto& m : v) raw.models.push_back(json_text(m, where));
        } else {
          raw.models = split_models(json_text(v, where));
        }
      } else if (k == "requests") {
        if (!v.is_object()) throw_error(ErrorCode::kTraceBadValue, where, "expected an object of resource: quantity");
        for (const auto& [rk, rv] : v.items()) raw.requests.emplace_back(rk, json_text(rv, {source, line, "requests." + rk}));
      } else {
        throw_error(ErrorCode::kTraceUnknownColumn, where, std::string("unknown field (known: ") + kJsonFields + ")");
      }
    }
    jobs.push_back(build_job(raw, source, catalog, resources, "requests.", texts));
  }
  finish(jobs, source);
  return jobs;
}

std::string seconds_text(SimTime t) {
  if (t.is_forever()) return "";
  if (t.us % 1'000'000 == 0) return std::to_string(t.us / 1'000'000);
  std::string s = std::to_string(t.us / 1'000'000) + "." ;
  std::string frac = std::to_string(t.us % 1'000'000);
  s += std::string(6 - frac.size(), '0') + frac;
  while (s.back() == '0') s.pop_back();
  return s;
}

std::string models_text(const TaskRequest& r, const GpuCatalog& catalog) {
  std::string out;
  for (std::size_t m = 0; m < catalog.size(); ++m) {
    if (r.allowed_models.test(m)) out += (out.empty() ? "" : "|") + catalog[GpuModelId{static_cast<std::uint16_t>(m)}].name;
  }
  return out;
}

}  // namespace

TraceFormat format_for(const std::filesystem::path& path) {
  const auto ext = path.extension().string();
  if (ext == ".csv") return TraceFormat::kCsv;
  if (ext == ".jsonl" || ext == ".ndjson" || ext == ".json") return TraceFormat::kJsonLines;
  throw_error(ErrorCode::kTraceBadValue, {path.string(), 0, ""}, "unknown trace format (use .csv or .jsonl)");
}

Workload read_trace(std::istream& in, TraceFormat format, const std::string& source, const GpuCatalog& catalog,
                    ResourceTable& resources) {
  return format == TraceFormat::kCsv ? read_csv(in, source, catalog, resources) : read_jsonl(in, source, catalog, resources);
}

Workload read_trace(const std::filesystem::path& path, const GpuCatalog& catalog, ResourceTable& resources) {
  const auto format = format_for(path);
  std::ifstream in(path);
  if (!in) throw_error(ErrorCode::kTraceCannotOpen, {path.string(), 0, ""}, "cannot open the trace file");
  return read_trace(in, format, path.string(), catalog, resources);
}

void write_trace(std::ostream& out, TraceFormat format, const Workload& jobs, const GpuCatalog& catalog,
                 const ResourceTable& resources) {
  if (format == TraceFormat::kJsonLines) {
    out << nlohmann::json{{"schema_version", kTraceSchemaVersion}, {"kind", "gpusched.trace"}}.dump() << '\n';
    for (const auto& j : jobs) {
      nlohmann::json o = nlohmann::json::object();
      o["id"] = j.name;
      o["submit_time"] = nlohmann::json::parse(seconds_text(j.submit));
      if (!j.duration.is_forever()) o["duration"] = nlohmann::json::parse(seconds_text(j.duration));
      o["tasks"] = j.tasks;
      o["min_available"] = j.min_available;
      o["priority"] = j.priority;
      o["queue"] = j.queue;
      const auto models = models_text(j.request, catalog);
      if (!models.empty()) o["gpu_model"] = models;
      if (j.gpu_util != 1.0) o["gpu_util"] = j.gpu_util;
      nlohmann::json req = nlohmann::json::object();
      for (const auto& [k, v] : format_requests(written_request(j), resources)) req[k] = v;
      o["requests"] = req;
      const auto& c = j.constraints;
      constraints_json(c, o);
      if (!c.app.empty()) o["app"] = c.app;
      if (c.max_per_node != 0) o["max_per_node"] = c.max_per_node;
      if (!c.priority_class.empty()) o["priority_class"] = c.priority_class;
      if (c.preempt_never) o["preemption_policy"] = "Never";
      if (!c.preemptible) o["preemptible"] = false;
      if (!c.gang_timeout.is_forever()) o["gang_timeout"] = nlohmann::json::parse(seconds_text(c.gang_timeout));
      if (!c.walltime.is_forever()) o["walltime"] = nlohmann::json::parse(seconds_text(c.walltime));
      if (!c.restart_overhead.is_forever()) o["restart_overhead"] = nlohmann::json::parse(seconds_text(c.restart_overhead));
      if (!c.claim_template.empty()) o["claim_template"] = c.claim_template;
      if (!c.resource_claim.empty()) o["resource_claim"] = c.resource_claim;
      out << o.dump() << '\n';
    }
    return;
  }
  // CSV: one column per resource name used anywhere in the trace, in first-use order.
  std::vector<std::string> cols;
  for (const auto& j : jobs) {
    for (const auto& [k, v] : format_requests(written_request(j), resources)) {
      if (std::find(cols.begin(), cols.end(), k) == cols.end()) cols.push_back(k);
    }
  }
  // The structured constraints have no CSV form: refuse rather than drop them.
  for (const auto& j : jobs) {
    const auto& c = j.constraints;
    const char* field = !c.node_selector.empty() ? "node_selector" : !c.affinity.empty() ? "affinity"
                        : !c.tolerations.empty() ? "tolerations" : nullptr;
    if (field) {
      throw_error(ErrorCode::kTraceBadValue, {"", j.source_line, field},
                  "job \"" + j.name + "\" has " + field + ", which only JSON Lines traces carry (write .jsonl)");
    }
  }
  out << "# gpusched trace schema_version=" << kTraceSchemaVersion << '\n';
  auto any = [&](auto pred) { return std::any_of(jobs.begin(), jobs.end(), pred); };
  const bool utils = any([](const JobSpec& j) { return j.gpu_util != 1.0; });
  const bool apps = any([](const JobSpec& j) { return !j.constraints.app.empty(); });
  const bool maxes = any([](const JobSpec& j) { return j.constraints.max_per_node != 0; });
  const bool classes = any([](const JobSpec& j) { return !j.constraints.priority_class.empty(); });
  const bool policies = any([](const JobSpec& j) { return j.constraints.preempt_never; });
  const bool preemptibles = any([](const JobSpec& j) { return !j.constraints.preemptible; });
  const bool gangs = any([](const JobSpec& j) { return !j.constraints.gang_timeout.is_forever(); });
  const bool walls = any([](const JobSpec& j) { return !j.constraints.walltime.is_forever(); });
  const bool overheads = any([](const JobSpec& j) { return !j.constraints.restart_overhead.is_forever(); });
  const bool claims = any([](const JobSpec& j) { return !j.constraints.claim_template.empty(); });
  const bool shared_claims = any([](const JobSpec& j) { return !j.constraints.resource_claim.empty(); });
  out << "id,submit_time,duration,tasks,min_available,priority,queue,gpu_model";
  if (utils) out << ",gpu_util";
  if (apps) out << ",app";
  if (maxes) out << ",max_per_node";
  if (classes) out << ",priority_class";
  if (policies) out << ",preemption_policy";
  if (preemptibles) out << ",preemptible";
  if (gangs) out << ",gang_timeout";
  if (walls) out << ",walltime";
  if (overheads) out << ",restart_overhead";
  if (claims) out << ",claim_template";
  if (shared_claims) out << ",resource_claim";
  for (const auto& c : cols) out << ',' << c;
  out << '\n';
  auto q = [](const std::string& s) {
    if (s.find_first_of(",\"\\") == std::string::npos) return s;
    std::string o = "\"";
    for (char c : s) {
      if (c == '"' || c == '\\') o += '\\';
      o += c;
    }
    return o + "\"";
  };
  for (const auto& j : jobs) {
    out << q(j.name) << ',' << seconds_text(j.submit) << ',' << seconds_text(j.duration) << ',' << j.tasks << ','
        << j.min_available << ',' << j.priority << ',' << q(j.queue) << ',' << models_text(j.request, catalog);
    if (utils) out << ',' << nlohmann::json(j.gpu_util).dump();
    const auto& jc = j.constraints;
    if (apps) out << ',' << q(jc.app);
    if (maxes) out << ',' << jc.max_per_node;
    if (classes) out << ',' << q(jc.priority_class);
    if (policies) out << ',' << (jc.preempt_never ? "Never" : "PreemptLowerPriority");
    if (preemptibles) out << ',' << (jc.preemptible ? "true" : "false");
    if (gangs) out << ',' << seconds_text(jc.gang_timeout);
    if (walls) out << ',' << seconds_text(jc.walltime);
    if (overheads) out << ',' << (jc.restart_overhead.is_forever() ? std::string() : seconds_text(jc.restart_overhead));
    if (claims) out << ',' << q(jc.claim_template);
    if (shared_claims) out << ',' << q(jc.resource_claim);
    const auto req = format_requests(written_request(j), resources);
    for (const auto& c : cols) {
      out << ',';
      for (const auto& [k, v] : req) if (k == c) out << v;
    }
    out << '\n';
  }
}

void check_placeable(const Workload& jobs, const ClusterState& cluster, const std::string& source) {
  // Jobs with equal requests share the answer: O(distinct requests x nodes), not O(jobs x nodes).
  std::unordered_set<std::uint64_t> placeable;
  for (const auto& j : jobs) {
    const std::uint64_t cls = request_class(j);
    if (placeable.count(cls)) continue;
    bool ok = false;
    for (std::uint32_t n = 0; n < cluster.node_count() && !ok; ++n) ok = cluster.fits_empty(NodeId{n}, j.request);
    if (ok) {
      placeable.insert(cls);
      continue;
    }
    const auto& max = cluster.max_capacity();
    std::string what;
    const auto& r = j.request;
    if (r.cpu_milli > max.cpu_free_milli) what = "cpu " + std::to_string(r.cpu_milli) + "m per task; the largest node has " + std::to_string(max.cpu_free_milli) + "m";
    else if (r.memory_mib > max.memory_free_mib) what = "memory " + std::to_string(r.memory_mib) + "Mi per task; the largest node has " + std::to_string(max.memory_free_mib) + "Mi";
    else if (r.gpu.mode == GpuMode::kWhole && r.gpu.count > max.gpu_count) what = std::to_string(r.gpu.count) + " nvidia.com/gpu per task; the largest node has " + std::to_string(max.gpu_count);
    else what = "a combination of resources (and GPU model) that no node has";
    throw_error(ErrorCode::kTraceUnplaceable, {source, j.source_line, "requests"},
                "job \"" + j.name + "\" can never run: it needs " + what);
  }
}

}  // namespace gpusched::traces
