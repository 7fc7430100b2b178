#include <gpusched/traces/swf.hpp>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <limits>
#include <map>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <gpusched/error.hpp>
#include <gpusched/quantity.hpp>
#include <gpusched/traces/philly.hpp>
#include <gpusched/traces/ranges.hpp>

namespace gpusched::traces {
namespace {

constexpr std::size_t kFields = 18;
/// SWF field names, in file order (error locations use them).
constexpr std::array<const char*, kFields> kFieldNames = {
    "job_number",        "submit_time",    "wait_time",          "run_time",        "allocated_processors",
    "average_cpu_time",  "used_memory",    "requested_processors", "requested_time", "requested_memory",
    "status",            "user_id",        "group_id",           "executable_number", "queue_number",
    "partition_number",  "preceding_job_number", "think_time"};
enum Field : std::size_t {
  kJob = 0, kSubmit, kWait, kRunTime, kAllocated, kCpuTime, kUsedMemory, kRequested, kRequestedTime,
  kRequestedMemory, kStatus, kUser, kGroup, kExecutable, kQueue, kPartition, kPreceding, kThink
};
/// Fields that must be whole numbers.
constexpr std::array<bool, kFields> kInteger = {true, false, false, false, true, false, false, true, false,
                                                true, true, true, true, true, true, true, true, false};
constexpr std::int32_t kMaxPerNode = 1024;

[[noreturn]] void bad_value(const Location& at, const std::string& message) {
  throw_error(ErrorCode::kTraceBadValue, at, message);
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return {};
  return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}

/// Canonical decimal text of a non-negative integer ("0", "17"; not "017", "+3", "1.0").
bool canonical_natural(const std::string& s, std::int64_t& out) {
  if (s.empty() || s.size() > 18 || (s.size() > 1 && s[0] == '0')) return false;
  if (!std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; })) return false;
  (void)std::from_chars(s.data(), s.data() + s.size(), out);
  return true;
}

/// "q17" with prefix "q" -> 17.
bool prefixed_number(const std::string& s, const std::string& prefix, std::int64_t& out) {
  return s.size() > prefix.size() && s.compare(0, prefix.size(), prefix) == 0 &&
         canonical_natural(s.substr(prefix.size()), out);
}

/// Decimal seconds, trailing zeros dropped ("12", "0.25").
std::string seconds_text(SimTime t) {
  std::string s = std::to_string(t.us / 1'000'000);
  if (const auto frac = t.us % 1'000'000; frac != 0) {
    const std::string f = std::to_string(frac);
    s += "." + std::string(6 - f.size(), '0') + f;
    while (s.back() == '0') s.pop_back();
  }
  return s;
}

const char* processors_text(SwfProcessors p) { return p == SwfProcessors::kGpus ? "gpus" : "cpus"; }
const char* queue_field_text(SwfQueueField q) { return q == SwfQueueField::kQueueNumber ? "queue" : "user"; }
const char* run_time_text(SwfUnknownRunTime r) {
  return r == SwfUnknownRunTime::kError ? "error" : r == SwfUnknownRunTime::kSkip ? "skip" : "forever";
}

std::int32_t per_node(const SwfOptions& o) {
  const std::int32_t n = o.processors == SwfProcessors::kGpus ? o.gpus_per_node : o.cores_per_node;
  if (n < 1 || n > kMaxPerNode) {
    bad_value({"", 0, o.processors == SwfProcessors::kGpus ? "gpus_per_node" : "cores_per_node"},
              "option must be 1.." + std::to_string(kMaxPerNode) + ", got " + std::to_string(n));
  }
  return n;
}

/// One job line split into its 18 fields, each checked to be a number.
struct SwfLine {
  std::array<std::string, kFields> text;
  std::array<double, kFields> value{};
};

/// The name maps of `; gpusched: queue|user|executable <N> = <name>` comments.
struct NameMaps {
  std::map<std::int64_t, std::string> queue, user, executable;
};

void parse_comment(const std::string& body, std::int64_t line, const std::string& source, const SwfOptions& options,
                   NameMaps& maps) {
  std::string s = trim(body);
  static const std::string kTag = "gpusched:";
  if (s.compare(0, kTag.size(), kTag) != 0) return;
  s = trim(s.substr(kTag.size()));
  // Settings line: check the unit of a processor, which silently changes every job when wrong.
  if (const auto p = s.find("processors="); p != std::string::npos && (p == 0 || s[p - 1] == ' ')) {
    const std::string v = s.substr(p + 11, s.find(' ', p) - std::min(s.find(' ', p), p + 11));
    if ((v == "gpus" || v == "cpus") && v != processors_text(options.processors)) {
      bad_value({source, line, "processors"}, "the file was written with processors=" + v + " but is read with processors=" +
                                                  processors_text(options.processors) + " (set SwfOptions::processors)");
    }
    return;
  }
  using Names = std::map<std::int64_t, std::string>;
  const std::array<std::pair<std::string, Names*>, 3> kinds = {
      {{"queue ", &maps.queue}, {"user ", &maps.user}, {"executable ", &maps.executable}}};
  Names* target = nullptr;
  std::size_t skip = 0;
  for (const auto& [kw, m] : kinds) {
    if (s.compare(0, kw.size(), kw) == 0) {
      target = m;
      skip = kw.size();
    }
  }
  if (!target) return;
  const std::string rest = s.substr(skip);
  const auto eq = rest.find('=');
  std::int64_t n = 0;
  if (eq == std::string::npos || !canonical_natural(trim(rest.substr(0, eq)), n)) {
    bad_value({source, line, ""}, "expected \"; gpusched: " + s.substr(0, skip) + "<number> = <name>\"");
  }
  const std::string name = trim(rest.substr(eq + 1));
  if (name.empty()) bad_value({source, line, ""}, "empty name for " + s.substr(0, skip) + std::to_string(n));
  const auto [it, inserted] = target->emplace(n, name);
  if (!inserted && it->second != name) {
    bad_value({source, line, ""}, s.substr(0, skip) + std::to_string(n) + " is named twice (\"" + it->second + "\", \"" + name + "\")");
  }
}

/// Splits and checks one job line; false for blank lines.
bool split_line(const std::string& text, std::int64_t line, const std::string& source, SwfLine& out) {
  std::size_t n = 0, i = 0;
  while (true) {
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t' || text[i] == '\r')) ++i;
    if (i >= text.size()) break;
    std::size_t e = i;
    while (e < text.size() && text[e] != ' ' && text[e] != '\t' && text[e] != '\r') ++e;
    if (n >= kFields) {
      std::size_t total = n;
      for (std::size_t k = i; k < text.size();) {
        while (k < text.size() && (text[k] == ' ' || text[k] == '\t' || text[k] == '\r')) ++k;
        if (k >= text.size()) break;
        ++total;
        while (k < text.size() && text[k] != ' ' && text[k] != '\t' && text[k] != '\r') ++k;
      }
      bad_value({source, line, ""}, "the line has " + std::to_string(total) + " fields; SWF has 18");
    }
    out.text[n++] = text.substr(i, e - i);
    i = e;
  }
  if (n == 0) return false;
  if (n < kFields) {
    bad_value({source, line, kFieldNames[n]},
              "missing: the line has " + std::to_string(n) + " of the 18 SWF fields");
  }
  for (std::size_t f = 0; f < kFields; ++f) {
    const std::string& s = out.text[f];
    double v = 0;
    const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || ptr != s.data() + s.size() || !std::isfinite(v)) {
      bad_value({source, line, kFieldNames[f]}, "\"" + s + "\" is not a number");
    }
    if (kInteger[f] && v != std::floor(v)) {
      bad_value({source, line, kFieldNames[f]}, "\"" + s + "\" is not a whole number");
    }
    if (kInteger[f] && std::abs(v) > 9e15) out_of_range({source, line, kFieldNames[f]}, s, "must be -1..9e15");
    out.value[f] = v;
  }
  return true;
}

/// Whole-GPU or CPU-core requests with memory, built once per shape through parse_requests.
class RequestCache {
 public:
  RequestCache(const GpuCatalog& catalog, ResourceTable& resources, SwfProcessors p)
      : catalog_(catalog), resources_(resources), processors_(p) {}

  const TaskRequest& get(std::int32_t per_task, std::int64_t memory_mib, const Location& at) {
    const auto key = std::make_pair(per_task, memory_mib);
    if (auto it = cache_.find(key); it != cache_.end()) return it->second;
    std::vector<std::pair<std::string, std::string>> items;
    if (processors_ == SwfProcessors::kGpus) items.emplace_back(resource_names::kGpu, std::to_string(per_task));
    else items.emplace_back(resource_names::kCpu, std::to_string(per_task));
    if (memory_mib > 0) items.emplace_back(resource_names::kMemory, std::to_string(memory_mib) + "Mi");
    return cache_.emplace(key, parse_requests(items, {}, catalog_, resources_, at)).first->second;
  }

 private:
  const GpuCatalog& catalog_;
  ResourceTable& resources_;
  SwfProcessors processors_;
  std::map<std::pair<std::int32_t, std::int64_t>, TaskRequest> cache_;
};

/// Seconds of field `f`: a time (submit) or a span, 0..kMaxInputSeconds (spans: 0 or >= 1 us).
SimTime swf_seconds(const SwfLine& l, Field f, const Location& at) {
  return trace_seconds(l.text[f], at, f == kSubmit ? Span::kInstant : Span::kNonNegative);
}

/// A name from its number: the comment's name, else prefix + number.
std::string mapped_name(const std::map<std::int64_t, std::string>& names, const std::string& prefix, std::int64_t n) {
  const auto it = names.find(n);
  return it != names.end() ? it->second : prefix + std::to_string(n);
}

/// Names -> SWF numbers for the writer: "<prefix><N>" keeps N, others get fresh numbers.
class NumberMap {
 public:
  NumberMap(std::string prefix, const std::vector<std::string>& names) : prefix_(std::move(prefix)) {
    std::int64_t max = 0;
    for (const auto& n : names) {
      std::int64_t v = 0;
      if (prefixed_number(n, prefix_, v)) max = std::max(max, v);
    }
    next_ = max + 1;
  }
  /// -1 for the empty name (or `none`).
  std::int64_t number(const std::string& name, const std::string& none = "") {
    if (name.empty() || name == none) return -1;
    std::int64_t v = 0;
    if (prefixed_number(name, prefix_, v)) return v;
    const auto [it, inserted] = assigned_.emplace(name, next_);
    if (inserted) {
      order_.emplace_back(next_, name);
      ++next_;
    }
    return it->second;
  }
  [[nodiscard]] const std::vector<std::pair<std::int64_t, std::string>>& assigned() const { return order_; }

 private:
  std::string prefix_;
  std::int64_t next_ = 1;
  std::unordered_map<std::string, std::int64_t> assigned_;
  std::vector<std::pair<std::int64_t, std::string>> order_;
};

}  // namespace

// ------------------------------------------------------------------------------------ read

Workload read_swf(std::istream& in, const std::string& source, GpuCatalog& catalog, ResourceTable& resources) {
  return read_swf(in, source, catalog, resources, SwfOptions{});
}

Workload read_swf(std::istream& in, const std::string& source, GpuCatalog& catalog, ResourceTable& resources,
                  const SwfOptions& options) {
  const std::int32_t node_size = per_node(options);
  RequestCache requests(catalog, resources, options.processors);
  NameMaps maps;
  Workload jobs;
  std::unordered_set<std::int64_t> seen;
  std::string text;
  std::int64_t line = 0;
  SwfLine l;
  CompactStringPool apps;
  while (std::getline(in, text)) {
    ++line;
    const auto b = text.find_first_not_of(" \t\r");
    if (b == std::string::npos) continue;
    if (text[b] == ';') {
      parse_comment(text.substr(b + 1), line, source, options, maps);
      continue;
    }
    if (!split_line(text, line, source, l)) continue;
    auto at = [&](Field f) { return Location{source, line, kFieldNames[f]}; };
    auto value = [&](Field f) { return static_cast<std::int64_t>(l.value[f]); };
    /// -1 = unknown; any other negative value is an error.
    auto check_unknown = [&](Field f) {
      if (l.value[f] < 0 && l.value[f] != -1) bad_value(at(f), "\"" + l.text[f] + "\" is negative (only -1, unknown, is allowed)");
      return l.value[f] == -1;
    };

    JobSpec j;
    j.source_line = line;
    if (l.value[kJob] < 0) bad_value(at(kJob), "\"" + l.text[kJob] + "\" is not a job number (>= 0)");
    const std::int64_t number = value(kJob);
    if (!seen.insert(number).second) {
      throw_error(ErrorCode::kTraceDuplicateId, at(kJob), "job number " + std::to_string(number) + " appears twice");
    }
    j.name = std::to_string(number);
    if (check_unknown(kSubmit)) bad_value(at(kSubmit), "a job needs a submit time (-1 = unknown)");
    j.submit = swf_seconds(l, kSubmit, at(kSubmit));
    if (check_unknown(kRunTime)) {
      if (options.unknown_run_time == SwfUnknownRunTime::kSkip) continue;
      if (options.unknown_run_time == SwfUnknownRunTime::kError) {
        bad_value(at(kRunTime), "unknown (-1); read with SwfOptions::unknown_run_time skip or forever to accept it");
      }
      j.duration = SimTime::forever();
    } else {
      j.duration = swf_seconds(l, kRunTime, at(kRunTime));
    }
    // Size: allocated processors, else requested.
    const bool alloc_unknown = check_unknown(kAllocated);
    const bool req_unknown = check_unknown(kRequested);
    std::int64_t units = alloc_unknown ? 0 : value(kAllocated);
    if (units < 1) units = req_unknown ? 0 : value(kRequested);
    if (units < 1) {
      bad_value(at(kAllocated), "no processor count: allocated_processors is " + l.text[kAllocated] +
                                    " and requested_processors is " + l.text[kRequested]);
    }
    if (units > 1'000'000'000) {
      const Field uf = alloc_unknown || value(kAllocated) < 1 ? kRequested : kAllocated;
      out_of_range(at(uf), l.text[uf], "must be 1..1e9 processors");
    }
    const GangShape g = split_gang(units, node_size);
    if (g.tasks > 1'000'000) {
      const Field uf = alloc_unknown || value(kAllocated) < 1 ? kRequested : kAllocated;
      out_of_range(at(uf), l.text[uf], "a gang of " + std::to_string(g.tasks) + " tasks (of " + std::to_string(g.per_task) +
                                           " per node); at most 1000000 tasks");
    }
    j.tasks = g.tasks;
    j.min_available = g.tasks;
    std::int64_t memory_mib = 0;
    if (!check_unknown(kRequestedMemory)) {
      const std::int64_t kb = value(kRequestedMemory);
      // kb <= 9e15 (checked above) and per_task <= kMaxPerNode: the product fits in int64.
      memory_mib = (kb * g.per_task + 1023) / 1024;
      if (memory_mib > 1'000'000'000'000'000) {
        out_of_range(at(kRequestedMemory), l.text[kRequestedMemory], "must be at most 1e15 MiB per task (KB per processor x processors per task)");
      }
    }
    j.request = requests.get(g.per_task, memory_mib, at(kAllocated));
    if (!check_unknown(kRequestedTime)) {
      j.constraints.walltime = swf_seconds(l, kRequestedTime, at(kRequestedTime));
      if (j.constraints.walltime.us == 0) bad_value(at(kRequestedTime), "must be > 0 seconds (-1 = unknown)");
    }
    if (!check_unknown(kExecutable)) j.constraints.app = apps.get(mapped_name(maps.executable, "app", value(kExecutable)));
    const Field qf = options.queue_field == SwfQueueField::kQueueNumber ? kQueue : kUser;
    if (!check_unknown(qf)) {
      j.queue = qf == kQueue ? mapped_name(maps.queue, "q", value(kQueue)) : mapped_name(maps.user, "u", value(kUser));
    }
    jobs.push_back(std::move(j));
  }
  std::stable_sort(jobs.begin(), jobs.end(), [](const JobSpec& a, const JobSpec& b) { return a.submit < b.submit; });
  return jobs;
}

// ----------------------------------------------------------------------------------- write

void write_swf(std::ostream& out, const Workload& jobs, const GpuCatalog& catalog, const ResourceTable& resources) {
  write_swf(out, jobs, catalog, resources, SwfOptions{});
}

void write_swf(std::ostream& out, const Workload& jobs, const GpuCatalog& /*catalog*/, const ResourceTable& /*resources*/,
               const SwfOptions& options) {
  const std::int32_t node_size = per_node(options);
  const bool gpus = options.processors == SwfProcessors::kGpus;
  auto fail = [](const JobSpec& j, const char* field, const std::string& what) {
    bad_value({"", 0, field}, "job \"" + j.name + "\": " + what);
  };
  auto lossy = [&](const JobSpec& j, bool lost, const char* field, const std::string& what) {
    if (lost && !options.lossy) fail(j, field, what + " (write with SwfOptions::lossy to drop it)");
  };

  // Job numbers: the names when all are distinct canonical integers.
  bool numeric_names = true;
  {
    std::unordered_set<std::int64_t> seen;
    for (const auto& j : jobs) {
      std::int64_t n = 0;
      if (!canonical_natural(j.name, n) || !seen.insert(n).second) {
        numeric_names = false;
        break;
      }
    }
  }
  std::vector<std::string> queues, apps;
  for (const auto& j : jobs) {
    queues.push_back(j.queue);
    apps.push_back(j.constraints.app);
  }
  const bool by_user = options.queue_field == SwfQueueField::kUserId;
  NumberMap queue_numbers(by_user ? "u" : "q", queues), app_numbers("app", apps);

  // Check every job and render its line before writing anything.
  std::vector<std::string> lines;
  lines.reserve(jobs.size());
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    const JobSpec& j = jobs[i];
    const TaskRequest& r = j.request;
    if (r.tpu.chips > 0) fail(j, "requests", "TPU requests have no SWF form");
    if (!j.constraints.claim_template.empty()) {
      fail(j, "claim_template", "its GPUs come from a DRA claim (claim_template \"" + j.constraints.claim_template + "\"), which SWF cannot carry");
    }
    if (!j.constraints.resource_claim.empty()) {
      fail(j, "resource_claim", "its GPUs come from a shared DRA claim (resource_claim \"" + j.constraints.resource_claim + "\"), which SWF cannot carry");
    }
    std::int64_t per_task = 0;
    if (gpus) {
      if (r.gpu.mode == GpuMode::kNone) fail(j, "requests", "a CPU-only job has no size in SWF with processors=gpus");
      if (r.gpu.mode != GpuMode::kWhole) {
        fail(j, "requests", "asks for " + std::string(to_string(r.gpu.mode)) + " GPUs; SWF with processors=gpus carries whole GPUs only");
      }
      per_task = r.gpu.count;
      lossy(j, r.cpu_milli > 0, "cpu", "asks for CPU besides GPUs, which SWF with processors=gpus cannot carry");
    } else {
      if (r.gpu.mode != GpuMode::kNone) fail(j, "requests", "asks for GPUs; SWF with processors=cpus carries CPU cores only");
      if (r.cpu_milli % 1000 != 0) fail(j, "cpu", "asks for " + std::to_string(r.cpu_milli) + "m CPU; SWF carries whole cores");
      per_task = r.cpu_milli / 1000;
      if (per_task < 1) fail(j, "cpu", "asks for no CPU cores: no size in SWF with processors=cpus");
    }
    const std::int64_t units = per_task * j.tasks;
    const GangShape canonical = split_gang(units, node_size);
    lossy(j, canonical.tasks != j.tasks || j.min_available != j.tasks, "tasks",
          "has " + std::to_string(j.tasks) + " tasks of " + std::to_string(per_task) + " (min_available " +
              std::to_string(j.min_available) + "); SWF keeps only the total, which reads back as " +
              std::to_string(canonical.tasks) + " x " + std::to_string(canonical.per_task) + " all-or-nothing");
    const std::string none = ", which SWF cannot carry";
    lossy(j, r.allowed_models.any(), "gpu_model", "is limited to some GPU models" + none);
    lossy(j, !r.extended.empty(), "requests", "asks for extended resources" + none);
    lossy(j, j.priority != 0, "priority", "has priority " + std::to_string(j.priority) + none);
    lossy(j, j.gpu_util != 1.0, "gpu_util", "has a gpu_util" + none);
    const auto& c = j.constraints;
    lossy(j, !c.node_selector.empty() || !c.affinity.empty() || !c.tolerations.empty(), "constraints",
          "has a node selector, affinity or tolerations" + none);
    lossy(j, c.max_per_node != 0, "max_per_node", "has max_per_node" + none);
    lossy(j, !c.priority_class.empty() || c.preempt_never || !c.preemptible, "priority_class",
          "has a priority class or preemption settings" + none);
    lossy(j, !c.gang_timeout.is_forever(), "gang_timeout", "has a gang_timeout" + none);
    if (j.duration.is_forever() && options.unknown_run_time != SwfUnknownRunTime::kForever) {
      fail(j, "duration", "never ends; SWF writes that as run_time -1, which reads back only with unknown_run_time forever");
    }
    for (const std::string* name : {&j.queue, &c.app.str()}) {
      if (name->find_first_of("\r\n") != std::string::npos || *name != trim(*name)) {
        fail(j, name == &j.queue ? "queue" : "app", "the name \"" + *name + "\" has a line break or surrounding blanks");
      }
    }
    // Memory: floor(KB per processor); read back as ceil(KB x per_task / 1024) MiB, the same.
    const std::int64_t memory_kb = r.memory_mib > 0 ? r.memory_mib * 1024 / per_task : -1;
    const std::int64_t queue = queue_numbers.number(j.queue, "default");
    const std::int64_t app = app_numbers.number(c.app);

    std::array<std::string, kFields> f;
    f.fill("-1");
    f[kJob] = numeric_names ? j.name : std::to_string(i + 1);
    f[kSubmit] = seconds_text(j.submit);
    f[kRunTime] = j.duration.is_forever() ? "-1" : seconds_text(j.duration);
    f[kAllocated] = f[kRequested] = std::to_string(units);
    f[kRequestedTime] = c.walltime.is_forever() ? "-1" : seconds_text(c.walltime);
    f[kRequestedMemory] = std::to_string(memory_kb);
    f[by_user ? kUser : kQueue] = std::to_string(queue);
    f[kExecutable] = std::to_string(app);
    std::string text;
    for (std::size_t k = 0; k < kFields; ++k) text.append(k ? " " : "").append(f[k]);
    lines.push_back(std::move(text));
  }

  out << "; Version: 2.2\n";
  out << "; Computer: gpusched\n";
  out << "; MaxJobs: " << jobs.size() << "\n";
  out << "; MaxRecords: " << jobs.size() << "\n";
  out << "; Note: processors are " << (gpus ? "whole GPUs (nvidia.com/gpu)" : "CPU cores")
      << "; jobs above " << node_size << " per node are all-or-nothing gangs of equal tasks\n";
  out << "; gpusched: processors=" << processors_text(options.processors) << ' '
      << (gpus ? "gpus_per_node=" : "cores_per_node=") << node_size << " queue_field=" << queue_field_text(options.queue_field)
      << " unknown_run_time=" << run_time_text(options.unknown_run_time) << "\n";
  for (const auto& [n, name] : queue_numbers.assigned()) out << "; gpusched: " << (by_user ? "user " : "queue ") << n << " = " << name << "\n";
  for (const auto& [n, name] : app_numbers.assigned()) out << "; gpusched: executable " << n << " = " << name << "\n";
  for (const auto& l : lines) out << l << '\n';
  if (!out) throw_error(ErrorCode::kOutputWrite, {}, "writing SWF failed");
}

}  // namespace gpusched::traces
