#include <gpusched/traces/native.hpp>

#include <algorithm>
#include <fstream>
#include <limits>
#include <sstream>
#include <unordered_set>

#include <nlohmann/json.hpp>

#include <gpusched/quantity.hpp>
#include <gpusched/scheduling.hpp>
#include <gpusched/traces/csv.hpp>

namespace gpusched::traces {
namespace {

const std::vector<std::string> kMetaColumns = {"id", "submit_time", "duration", "tasks", "min_available",
                                               "priority", "queue", "gpu_model", "gpu_util"};

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

/// Fields of one job as text, whatever the format.
struct RawJob {
  std::string id, submit, duration, tasks, min_available, priority, queue, gpu_util;
  std::vector<std::string> models;
  std::vector<std::pair<std::string, std::string>> requests;
  std::int64_t line = 0;
};

JobSpec build_job(const RawJob& raw, const std::string& source, const GpuCatalog& catalog, ResourceTable& resources,
                  const std::string& request_prefix) {
  auto at = [&](const char* field) { return Location{source, raw.line, field}; };
  JobSpec j;
  if (raw.id.empty()) throw_error(ErrorCode::kTraceBadValue, at("id"), "a job needs an id");
  j.name = raw.id;
  if (raw.submit.empty()) throw_error(ErrorCode::kTraceBadValue, at("submit_time"), "a job needs a submit_time");
  j.submit = SimTime::from_us(parse_seconds_us(raw.submit, at("submit_time"), false));
  j.duration = SimTime::from_us(parse_seconds_us(raw.duration, at("duration"), true));
  j.tasks = raw.tasks.empty() ? 1 : static_cast<std::int32_t>(parse_count(raw.tasks, at("tasks")));
  if (j.tasks < 1 || j.tasks > 1'000'000) throw_error(ErrorCode::kTraceBadValue, at("tasks"), "must be 1..1000000");
  j.min_available = raw.min_available.empty() ? j.tasks : static_cast<std::int32_t>(parse_count(raw.min_available, at("min_available")));
  if (j.min_available < 1 || j.min_available > j.tasks) {
    throw_error(ErrorCode::kTraceBadValue, at("min_available"),
                "must be between 1 and tasks (" + std::to_string(j.tasks) + "), got " + raw.min_available);
  }
  if (!raw.priority.empty()) {
    try {
      std::size_t pos = 0;
      const long long p = std::stoll(raw.priority, &pos);
      if (pos != raw.priority.size() || p < std::numeric_limits<std::int32_t>::min() || p > std::numeric_limits<std::int32_t>::max()) throw std::invalid_argument("");
      j.priority = static_cast<std::int32_t>(p);
    } catch (const std::exception&) {
      throw_error(ErrorCode::kTraceBadValue, at("priority"), "\"" + raw.priority + "\" is not an integer");
    }
  }
  if (!raw.queue.empty()) j.queue = raw.queue;
  if (!raw.gpu_util.empty()) {
    double u = 0.0;
    try {
      std::size_t pos = 0;
      u = std::stod(raw.gpu_util, &pos);
      if (pos != raw.gpu_util.size()) throw std::invalid_argument("");
    } catch (const std::exception&) {
      u = -1.0;
    }
    if (!(u > 0.0 && u <= 1.0)) throw_error(ErrorCode::kTraceBadValue, at("gpu_util"), "\"" + raw.gpu_util + "\" is not a share in (0, 1]");
    j.gpu_util = u;
  }
  j.request = parse_requests(raw.requests, raw.models, catalog, resources, {source, raw.line, ""}, request_prefix);
  j.source_line = raw.line;
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
  CsvReader csv(in, source);
  check_schema_comment(csv.comments(), source);
  const std::size_t c_id = csv.require("id");
  const std::size_t c_submit = csv.require("submit_time");
  auto col = [&](const char* n) { return csv.column(n); };
  const auto c_duration = col("duration"), c_tasks = col("tasks"), c_min = col("min_available"),
             c_priority = col("priority"), c_queue = col("queue"), c_model = col("gpu_model"), c_util = col("gpu_util");
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
    if (c_model) raw.models = split_models(f[*c_model]);
    for (auto c : resource_cols) {
      if (!f[c].empty()) raw.requests.emplace_back(csv.header()[c], f[c]);
    }
    jobs.push_back(build_job(raw, source, catalog, resources, ""));
  }
  finish(jobs, source);
  return jobs;
}

Workload read_jsonl(std::istream& in, const std::string& source, const GpuCatalog& catalog, ResourceTable& resources) {
  Workload jobs;
  std::string text;
  std::int64_t line = 0;
  while (std::getline(in, text)) {
    ++line;
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(text);
    } catch (const nlohmann::json::parse_error& ex) {
      throw_error(ErrorCode::kTraceBadValue, {source, line, ""}, std::string("not valid JSON: ") + ex.what());
    }
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
        throw_error(ErrorCode::kTraceUnknownColumn, where,
                    "unknown field (known: id, submit_time, duration, tasks, min_available, priority, queue, gpu_model, gpu_util, requests)");
      }
    }
    jobs.push_back(build_job(raw, source, catalog, resources, "requests."));
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
      for (const auto& [k, v] : format_requests(j.request, resources)) req[k] = v;
      o["requests"] = req;
      out << o.dump() << '\n';
    }
    return;
  }
  // CSV: one column per resource name used anywhere in the trace, in first-use order.
  std::vector<std::string> cols;
  for (const auto& j : jobs) {
    for (const auto& [k, v] : format_requests(j.request, resources)) {
      if (std::find(cols.begin(), cols.end(), k) == cols.end()) cols.push_back(k);
    }
  }
  out << "# gpusched trace schema_version=" << kTraceSchemaVersion << '\n';
  const bool utils = std::any_of(jobs.begin(), jobs.end(), [](const JobSpec& j) { return j.gpu_util != 1.0; });
  out << "id,submit_time,duration,tasks,min_available,priority,queue,gpu_model";
  if (utils) out << ",gpu_util";
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
    const auto req = format_requests(j.request, resources);
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
