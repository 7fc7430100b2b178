#include <gpusched/traces/philly.hpp>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <limits>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include <gpusched/error.hpp>
#include <gpusched/quantity.hpp>
#include <gpusched/traces/csv.hpp>
#include <gpusched/traces/ranges.hpp>

namespace gpusched::traces {
namespace {

constexpr const char* kGpuModelLabel = "gpusched.io/gpu-model";
constexpr const char* kSwitchLabel = "gpusched.io/switch";
/// Sanity bound on GPUs of one job or one machine.
constexpr std::int64_t kMaxJobGpus = 1'000'000;
constexpr std::int64_t kMaxNodeGpus = 1024;

[[noreturn]] void bad_value(const Location& at, const std::string& message) {
  throw_error(ErrorCode::kTraceBadValue, at, message);
}

/// A finite decimal number, the whole text.
double number(const std::string& text, const Location& at, const char* what) {
  double v = 0;
  const char* first = text.data();
  const char* last = first + text.size();
  const auto [ptr, ec] = std::from_chars(first, last, v);
  if (text.empty() || ec != std::errc() || ptr != last || !std::isfinite(v)) {
    bad_value(at, "\"" + text + "\" is not " + what);
  }
  return v;
}

/// A whole number in [min, max] ("4" or "4.0").
std::int64_t integer(const std::string& text, const Location& at, std::int64_t min, std::int64_t max) {
  const double v = number(text, at, "a whole number");
  if (v != std::floor(v)) bad_value(at, "\"" + text + "\" is not a whole number");
  if (v < static_cast<double>(min) || v > static_cast<double>(max)) {
    out_of_range(at, text, "must be " + std::to_string(min) + ".." + std::to_string(max));
  }
  return static_cast<std::int64_t>(v);
}

/// Non-negative seconds (decimals kept to the microsecond), at most kMaxInputSeconds; a span
/// (`rule` kNonNegative) may not be positive but below a microsecond.
SimTime seconds(const std::string& text, const Location& at, Span rule = Span::kNonNegative) {
  return trace_seconds(text, at, rule);
}

/// `YYYY-MM-DD hh:mm:ss` (UTC) -> seconds since 1970-01-01.
std::int64_t timestamp_seconds(const std::string& text, const Location& at) {
  auto fail = [&](const std::string& why) -> std::int64_t {
    bad_value(at, "\"" + text + "\" is not a timestamp YYYY-MM-DD hh:mm:ss (" + why + ")");
  };
  if (text.size() != 19) return fail("wrong length");
  static constexpr char kShape[] = "dddd-dd-dd dd:dd:dd";
  for (std::size_t i = 0; i < 19; ++i) {
    const char c = text[i];
    if (kShape[i] == 'd' ? (c < '0' || c > '9') : c != kShape[i]) return fail("unexpected character at position " + std::to_string(i + 1));
  }
  auto digits = [&](std::size_t pos, std::size_t n) {
    int v = 0;
    for (std::size_t i = pos; i < pos + n; ++i) v = v * 10 + (text[i] - '0');
    return v;
  };
  const int y = digits(0, 4), mo = digits(5, 2), d = digits(8, 2), h = digits(11, 2), mi = digits(14, 2), s = digits(17, 2);
  const std::chrono::year_month_day ymd{std::chrono::year{y}, std::chrono::month{static_cast<unsigned>(mo)},
                                       std::chrono::day{static_cast<unsigned>(d)}};
  if (!ymd.ok()) return fail("no such date");
  if (h > 23 || mi > 59 || s > 59) return fail("no such time of day");
  const auto days = std::chrono::sys_days{ymd}.time_since_epoch().count();
  return static_cast<std::int64_t>(days) * 86'400 + h * 3600 + mi * 60 + s;
}

/// Whole-GPU requests, one per GPUs-per-task count, built once through parse_requests.
class RequestCache {
 public:
  RequestCache(const GpuCatalog& catalog, ResourceTable& resources, std::int64_t cpu_milli_per_gpu,
               std::int64_t memory_mib_per_gpu)
      : catalog_(catalog), resources_(resources), cpu_(cpu_milli_per_gpu), mem_(memory_mib_per_gpu) {}

  const TaskRequest& get(std::int32_t gpus, const Location& at) {
    auto it = cache_.find(gpus);
    if (it != cache_.end()) return it->second;
    std::vector<std::pair<std::string, std::string>> items;
    if (cpu_ > 0) items.emplace_back(resource_names::kCpu, std::to_string(cpu_ * gpus) + "m");
    if (mem_ > 0) items.emplace_back(resource_names::kMemory, std::to_string(mem_ * gpus) + "Mi");
    items.emplace_back(resource_names::kGpu, std::to_string(gpus));
    return cache_.emplace(gpus, parse_requests(items, {}, catalog_, resources_, at)).first->second;
  }

 private:
  const GpuCatalog& catalog_;
  ResourceTable& resources_;
  std::int64_t cpu_, mem_;
  std::unordered_map<std::int32_t, TaskRequest> cache_;
};

void check_per_node(std::int32_t per_node, const std::string& source, const char* option) {
  if (per_node < 1) bad_value({source, 0, option}, "option must be >= 1, got " + std::to_string(per_node));
}

/// A job of `gpus` whole GPUs: one task, or an all-or-nothing gang per split_gang().
void shape_job(JobSpec& j, std::int64_t gpus, std::int32_t per_node, RequestCache& requests, const Location& at) {
  const GangShape g = split_gang(gpus, per_node);
  j.tasks = g.tasks;
  j.min_available = g.tasks;
  j.request = requests.get(g.per_task, at);
}

void sort_by_submit(Workload& jobs) {
  std::stable_sort(jobs.begin(), jobs.end(), [](const JobSpec& a, const JobSpec& b) { return a.submit < b.submit; });
}

NodeSpec gpu_node(std::string name, std::int64_t gpus, GpuModelId model, const std::string& model_name,
                  std::int64_t cpu_milli, std::int64_t memory_mib) {
  NodeSpec n;
  n.name = std::move(name);
  n.cpu_milli = cpu_milli;
  n.memory_mib = memory_mib;
  n.sockets = 1;
  for (std::int64_t g = 0; g < gpus; ++g) {
    GpuSpec s;
    s.model = model;
    n.gpus.push_back(s);
  }
  n.labels[kGpuModelLabel] = model_name;
  (void)normalize_numa(n);  // one socket: always consistent
  return n;
}

}  // namespace

GangShape split_gang(std::int64_t units, std::int32_t per_node) {
  if (units <= per_node) return {1, static_cast<std::int32_t>(units)};
  // The fewest tasks = the largest divisor of units that is <= per_node: at most per_node steps
  // (counting tasks up from units / per_node took up to `units` steps for a prime).
  for (std::int64_t per_task = per_node; per_task > 1; --per_task) {
    if (units % per_task == 0) return {static_cast<std::int32_t>(units / per_task), static_cast<std::int32_t>(per_task)};
  }
  return {static_cast<std::int32_t>(units), 1};
}

// ------------------------------------------------------------------------------- Philly jobs

Workload read_philly_jobs(std::istream& in, const std::string& source, GpuCatalog& catalog, ResourceTable& resources) {
  return read_philly_jobs(in, source, catalog, resources, PhillyJobOptions{});
}

Workload read_philly_jobs(std::istream& in, const std::string& source, GpuCatalog& catalog, ResourceTable& resources,
                          const PhillyJobOptions& options) {
  check_per_node(options.gpus_per_node, source, "gpus_per_node");
  CsvReader csv(in, source);
  const auto c_time = csv.require("timestamp"), c_duration = csv.require("duration"),
             c_gpus = csv.require("num_gpus"), c_cluster = csv.require("cluster");
  const auto c_gpu_time = csv.column("gpu_time");
  RequestCache requests(catalog, resources, options.cpu_milli_per_gpu, options.memory_mib_per_gpu);
  Workload jobs;
  std::vector<std::int64_t> stamps;
  std::vector<std::pair<Location, std::string>> stamp_at;   // where each timestamp is, and its text
  std::vector<std::string> f;
  while (csv.next(f)) {
    JobSpec j;
    j.name = "philly-" + std::to_string(jobs.size());
    j.source_line = csv.line();
    stamps.push_back(timestamp_seconds(f[c_time], csv.at(c_time)));
    stamp_at.emplace_back(csv.at(c_time), f[c_time]);
    j.duration = seconds(f[c_duration], csv.at(c_duration));
    const std::int64_t gpus = integer(f[c_gpus], csv.at(c_gpus), 1, kMaxJobGpus);
    if (c_gpu_time && options.check_gpu_time && !f[*c_gpu_time].empty()) {
      const double gpu_time = number(f[*c_gpu_time], csv.at(*c_gpu_time), "a number of GPU-seconds");
      const double expected = j.duration.seconds() * static_cast<double>(gpus);
      if (std::abs(gpu_time - expected) > std::max(1.0, 1e-6 * expected)) {
        bad_value(csv.at(*c_gpu_time), "\"" + f[*c_gpu_time] + "\" is not duration x num_gpus (" + f[c_duration] +
                                           " x " + f[c_gpus] + ")");
      }
    }
    if (!f[c_cluster].empty()) j.queue = f[c_cluster];
    shape_job(j, gpus, options.gpus_per_node, requests, csv.at(c_gpus));
    jobs.push_back(std::move(j));
  }
  if (!jobs.empty()) {
    const std::int64_t first = *std::min_element(stamps.begin(), stamps.end());
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      // Submit times count from the earliest timestamp and must stay within the clock's input range.
      if (static_cast<double>(stamps[i] - first) > kMaxInputSeconds) {
        out_of_range(stamp_at[i].first, stamp_at[i].second,
                     "it is " + std::to_string(stamps[i] - first) + " s after the earliest timestamp; submit times must be <= 1e10 s");
      }
      jobs[i].submit = SimTime::from_seconds(stamps[i] - first);
    }
  }
  sort_by_submit(jobs);
  return jobs;
}

// --------------------------------------------------------------------------- Philly machines

std::vector<NodeSpec> read_philly_machines(std::istream& in, const std::string& source, GpuCatalog& catalog,
                                           ResourceTable& resources) {
  return read_philly_machines(in, source, catalog, resources, PhillyMachineOptions{});
}

std::vector<NodeSpec> read_philly_machines(std::istream& in, const std::string& source, GpuCatalog& catalog,
                                           ResourceTable& /*resources*/, const PhillyMachineOptions& options) {
  CsvReader csv(in, source);
  const auto c_id = csv.require("machineId"), c_gpus = csv.require("number of GPUs"),
             c_mem = csv.require("single GPU mem");
  std::string known;
  for (const auto& [gb, model] : options.model_by_gpu_memory_gb) {
    known += (known.empty() ? "" : ", ") + std::to_string(gb) + "GB -> " + model;
  }
  std::vector<NodeSpec> nodes;
  std::unordered_set<std::string> seen;
  std::vector<std::string> f;
  while (csv.next(f)) {
    const std::string& id = f[c_id];
    if (id.empty()) bad_value(csv.at(c_id), "a machine needs an id");
    if (!seen.insert(id).second) {
      throw_error(ErrorCode::kTraceDuplicateId, csv.at(c_id), "machine \"" + id + "\" appears twice");
    }
    const std::int64_t gpus = integer(f[c_gpus], csv.at(c_gpus), 1, kMaxNodeGpus);
    std::string mem = f[c_mem];
    if (mem.size() > 2 && (mem.ends_with("GB") || mem.ends_with("gb") || mem.ends_with("Gb"))) mem.resize(mem.size() - 2);
    while (!mem.empty() && mem.back() == ' ') mem.pop_back();
    std::int64_t gb = -1;
    const auto [ptr, ec] = std::from_chars(mem.data(), mem.data() + mem.size(), gb);
    if (mem.empty() || ec != std::errc() || ptr != mem.data() + mem.size()) {
      bad_value(csv.at(c_mem), "\"" + f[c_mem] + "\" is not a GPU memory size like \"12GB\"");
    }
    const auto it = options.model_by_gpu_memory_gb.find(gb);
    if (it == options.model_by_gpu_memory_gb.end()) {
      bad_value(csv.at(c_mem), "no GPU model is known for " + std::to_string(gb) + "GB GPUs (known: " + known + ")");
    }
    const GpuModelId model = catalog.require(it->second, csv.at(c_mem));
    nodes.push_back(gpu_node(id, gpus, model, catalog[model].name, gpus * options.cpu_milli_per_gpu,
                             gpus * options.memory_mib_per_gpu));
  }
  return nodes;
}

// ----------------------------------------------------------------------------- Tiresias jobs

Workload read_tiresias_jobs(std::istream& in, const std::string& source, GpuCatalog& catalog, ResourceTable& resources) {
  return read_tiresias_jobs(in, source, catalog, resources, TiresiasOptions{});
}

Workload read_tiresias_jobs(std::istream& in, const std::string& source, GpuCatalog& catalog, ResourceTable& resources,
                            const TiresiasOptions& options) {
  check_per_node(options.gpus_per_node, source, "gpus_per_node");
  CsvReader csv(in, source);
  const auto c_id = csv.require("job_id"), c_gpus = csv.require("num_gpu"), c_submit = csv.require("submit_time"),
             c_duration = csv.require("duration");
  const auto c_iterations = csv.column("iterations"), c_model = csv.column("model_name"),
             c_interval = csv.column("interval"), c_overhead = csv.column("restart_overhead");
  RequestCache requests(catalog, resources, 0, 0);
  Workload jobs;
  std::unordered_set<std::string> seen;
  std::vector<std::string> f;
  CompactStringPool apps;
  while (csv.next(f)) {
    JobSpec j;
    j.name = f[c_id];
    j.source_line = csv.line();
    if (j.name.empty()) bad_value(csv.at(c_id), "a job needs an id");
    if (!seen.insert(j.name).second) {
      throw_error(ErrorCode::kTraceDuplicateId, csv.at(c_id), "job id \"" + j.name + "\" appears twice");
    }
    const std::int64_t gpus = integer(f[c_gpus], csv.at(c_gpus), 1, kMaxJobGpus);
    j.submit = seconds(f[c_submit], csv.at(c_submit), Span::kInstant);
    j.duration = seconds(f[c_duration], csv.at(c_duration));
    if (c_iterations && !f[*c_iterations].empty()) {
      (void)integer(f[*c_iterations], csv.at(*c_iterations), 0, std::numeric_limits<std::int32_t>::max());
    }
    if (c_interval && !f[*c_interval].empty()) (void)seconds(f[*c_interval], csv.at(*c_interval));
    if (c_model) j.constraints.app = apps.get(f[*c_model]);   // one block per distinct model
    // gpusched's own column (not the simulator's): the job's restart overhead in the preemptive
    // mode, as the native trace field; empty: the run's.
    if (c_overhead) j.constraints.restart_overhead = trace_seconds(f[*c_overhead], csv.at(*c_overhead), Span::kNonNegative, true);
    shape_job(j, gpus, options.gpus_per_node, requests, csv.at(c_gpus));
    jobs.push_back(std::move(j));
  }
  sort_by_submit(jobs);
  return jobs;
}

// -------------------------------------------------------------------------- Tiresias cluster

std::vector<NodeSpec> read_tiresias_cluster(std::istream& in, const std::string& source, GpuCatalog& catalog,
                                            ResourceTable& resources) {
  return read_tiresias_cluster(in, source, catalog, resources, TiresiasOptions{});
}

std::vector<NodeSpec> read_tiresias_cluster(std::istream& in, const std::string& source, GpuCatalog& catalog,
                                            ResourceTable& /*resources*/, const TiresiasOptions& options) {
  const GpuModelId model = catalog.require(options.gpu_model, {source, 0, "gpu_model"});
  CsvReader csv(in, source);
  const auto c_switches = csv.require("num_switch"), c_nodes = csv.require("num_node_p_switch"),
             c_gpus = csv.require("num_gpu_p_node"), c_cpus = csv.require("num_cpu_p_node"),
             c_mem = csv.require("mem_p_node");
  std::vector<NodeSpec> nodes;
  std::int64_t next_switch = 0;
  std::vector<std::string> f;
  while (csv.next(f)) {
    const std::int64_t switches = integer(f[c_switches], csv.at(c_switches), 1, 100'000);
    const std::int64_t per_switch = integer(f[c_nodes], csv.at(c_nodes), 1, 100'000);
    if (switches * per_switch > 1'000'000) bad_value(csv.at(c_nodes), "more than 1000000 nodes");
    const std::int64_t gpus = integer(f[c_gpus], csv.at(c_gpus), 0, kMaxNodeGpus);
    const std::int64_t cpus = integer(f[c_cpus], csv.at(c_cpus), 0, 1'000'000);
    const double mem_gb = number(f[c_mem], csv.at(c_mem), "a number of GB");
    if (mem_gb < 0 || mem_gb > 1e9) out_of_range(csv.at(c_mem), f[c_mem], "must be 0..1e9 (GB)");
    const auto memory_mib = static_cast<std::int64_t>(std::llround(mem_gb * 1024.0));
    if (mem_gb > 0 && memory_mib == 0) out_of_range(csv.at(c_mem), f[c_mem], "must be 0 or at least 0.0005 GB (it would round to 0 MiB)");
    for (std::int64_t s = 0; s < switches; ++s, ++next_switch) {
      std::string sw = "s";
      sw.append(std::to_string(next_switch));  // not "s" + ...: GCC 12 warns falsely (-Wrestrict)
      for (std::int64_t n = 0; n < per_switch; ++n) {
        NodeSpec node = gpu_node(sw + "-n" + std::to_string(n), gpus, model, catalog[model].name, cpus * 1000, memory_mib);
        if (gpus == 0) node.labels.erase(kGpuModelLabel);
        node.labels[kSwitchLabel] = sw;
        nodes.push_back(std::move(node));
      }
    }
  }
  return nodes;
}

}  // namespace gpusched::traces
