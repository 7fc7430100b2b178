#include <gpusched/traces/alibaba.hpp>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <iterator>
#include <limits>
#include <optional>
#include <sstream>
#include <unordered_map>
#include <utility>

#include <gpusched/constraints.hpp>
#include <gpusched/error.hpp>
#include <gpusched/traces/csv.hpp>
#include <gpusched/traces/ranges.hpp>

namespace gpusched::traces {
namespace {

constexpr std::int64_t kMaxGpusPerNode = 1024;
constexpr std::int64_t kMaxGpusPerTask = 4096;
constexpr double kMaxCores = 1e6;
constexpr double kMaxGib = 1e7;
constexpr std::int64_t kMaxMilliCpu = 1'000'000'000;
constexpr std::int64_t kMaxMib = std::int64_t{1} << 40;

/// The rows of one CSV file with locations for errors. `line_shift` lines were put in front of
/// the file's text (a header it lacked); locations subtract them so they stay the file's lines.
class Table {
 public:
  Table(std::istream& in, const std::string& source, std::int64_t line_shift = 0)
      : csv_(in, source), shift_(line_shift) {}

  /// Reads the next row; false at the end.
  bool next() {
    try {
      return csv_.next(fields_);
    } catch (const Error& e) {
      if (shift_ == 0) throw;
      Location w = e.where();
      if (w.line > 0) w.line -= shift_;
      throw_error(e.code(), std::move(w), e.detail());
    }
  }
  [[nodiscard]] const std::string& operator[](std::size_t col) const { return fields_[col]; }
  [[nodiscard]] std::int64_t line() const { return csv_.line() - shift_; }
  [[nodiscard]] Location at(std::size_t col) const { return {csv_.source(), line(), csv_.header().at(col)}; }
  [[nodiscard]] Location row() const { return {csv_.source(), line(), ""}; }
  [[nodiscard]] const std::string& source() const { return csv_.source(); }
  [[nodiscard]] std::size_t require(std::string_view name) const { return csv_.require(name); }
  [[nodiscard]] std::optional<std::size_t> column(std::string_view name) const { return csv_.column(name); }

 private:
  CsvReader csv_;
  std::int64_t shift_ = 0;
  std::vector<std::string> fields_;
};

[[noreturn]] void fail(const Table& t, std::size_t col, const std::string& message,
                       ErrorCode code = ErrorCode::kTraceBadValue) {
  throw_error(code, t.at(col), message);
}

std::string quoted(const std::string& s) { return "\"" + s + "\""; }

std::optional<double> to_double(std::string_view s) {
  double v = 0;
  const auto* end = s.data() + s.size();
  const auto [p, ec] = std::from_chars(s.data(), end, v);
  if (s.empty() || ec != std::errc{} || p != end || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::string range_text(double lo, double hi) {
  std::ostringstream os;
  os << lo << ".." << hi;
  return os.str();
}

/// A whole number in lo..hi ("8" or "8.0"). `request`: a negative value is kTraceNegativeRequest.
std::int64_t integer(const Table& t, std::size_t col, std::int64_t lo, std::int64_t hi, bool request = false) {
  const std::string& s = t[col];
  if (s.empty()) fail(t, col, "is empty (expected an integer)");
  std::int64_t v = 0;
  const auto* end = s.data() + s.size();
  const auto [p, ec] = std::from_chars(s.data(), end, v);
  if (ec != std::errc{} || p != end) {
    const auto d = to_double(s);
    if (!d || *d != std::floor(*d)) fail(t, col, quoted(s) + " is not an integer");
    if (request && *d < 0) fail(t, col, quoted(s) + " is negative (a request is >= 0)", ErrorCode::kTraceNegativeRequest);
    if (std::fabs(*d) > 9e15) out_of_range(t.at(col), s, "must be " + std::to_string(lo) + ".." + std::to_string(hi));
    v = static_cast<std::int64_t>(*d);
  }
  if (request && v < 0) fail(t, col, quoted(s) + " is negative (a request is >= 0)", ErrorCode::kTraceNegativeRequest);
  if (v < lo || v > hi) out_of_range(t.at(col), s, "must be " + std::to_string(lo) + ".." + std::to_string(hi));
  return v;
}

/// A decimal number in lo..hi. `request`: a negative value is kTraceNegativeRequest.
double number(const Table& t, std::size_t col, double lo, double hi, bool request = false) {
  const std::string& s = t[col];
  if (s.empty()) fail(t, col, "is empty (expected a number)");
  const auto d = to_double(s);
  if (!d) fail(t, col, quoted(s) + " is not a number");
  if (request && *d < 0) fail(t, col, quoted(s) + " is negative (a request is >= 0)", ErrorCode::kTraceNegativeRequest);
  if (*d < lo || *d > hi) out_of_range(t.at(col), s, "must be " + range_text(lo, hi));
  return *d;
}

/// A time in seconds (decimals allowed), or nullopt when the column is absent or the field empty.
std::optional<SimTime> time_of(const Table& t, std::optional<std::size_t> col) {
  if (!col || t[*col].empty()) return std::nullopt;
  const auto d = to_double(t[*col]);
  if (!d || *d < 0) fail(t, *col, quoted(t[*col]) + " is not a time in seconds (>= 0)");
  return trace_seconds(*d, t[*col], t.at(*col), Span::kInstant);   // at most kMaxInputSeconds
}

GpuModelId model_of(const GpuCatalog& catalog, const Table& t, std::size_t col, const std::string& name) {
  if (auto id = catalog.find(name)) return *id;
  fail(t, col, "unknown GPU model " + quoted(name) + " (known: " + catalog.known_names() + ")",
       ErrorCode::kTraceUnknownGpuModel);
}

/// Remembers names and rejects the second use of one.
class UniqueNames {
 public:
  explicit UniqueNames(const char* what) : what_(what) {}
  void add(const Table& t, std::size_t col) {
    const std::string& name = t[col];
    if (name.empty()) fail(t, col, std::string("a ") + what_ + " needs a name");
    const auto [it, inserted] = lines_.emplace(name, t.line());
    if (!inserted) {
      fail(t, col, what_ + std::string(" ") + quoted(name) + " appears twice (first on line " + std::to_string(it->second) + ")",
           ErrorCode::kTraceDuplicateId);
    }
  }

 private:
  const char* what_;
  std::unordered_map<std::string, std::int64_t> lines_;
};

NodeSpec make_node(std::string name, std::int64_t cpu_milli, std::int64_t memory_mib, std::int64_t gpus, GpuModelId model,
                   const GpuCatalog& catalog) {
  NodeSpec n;
  n.name = std::move(name);
  n.cpu_milli = cpu_milli;
  n.memory_mib = memory_mib;
  if (gpus > 0) {
    GpuSpec g;
    g.model = model;
    n.gpus.assign(static_cast<std::size_t>(gpus), g);
    n.labels[std::string(kGpuModelLabel)] = catalog[model].name;
  }
  return n;
}

/// Cores (column `col`) to milli-CPU; a positive amount that rounds to 0 is out of range.
std::int64_t cores_to_milli(const Table& t, std::size_t col, double cores) {
  const auto milli = static_cast<std::int64_t>(std::llround(cores * 1000.0));
  if (cores > 0 && milli == 0) out_of_range(t.at(col), t[col], "must be 0 or at least 0.0005 CPUs (it would round to 0m)");
  return milli;
}
/// GiB (column `col`) to MiB; a positive amount that rounds to 0 is out of range.
std::int64_t gib_to_mib(const Table& t, std::size_t col, double gib) {
  const auto mib = static_cast<std::int64_t>(std::llround(gib * 1024.0));
  if (gib > 0 && mib == 0) out_of_range(t.at(col), t[col], "must be 0 or at least 0.0005 GiB (it would round to 0 MiB)");
  return mib;
}

/// The `|`-separated models of an openb gpu_spec as canonical catalog names, duplicates dropped.
std::vector<std::string> spec_models(const GpuCatalog& catalog, const Table& t, std::size_t col) {
  std::vector<std::string> out;
  const std::string& s = t[col];
  std::size_t start = 0;
  while (start <= s.size()) {
    auto end = s.find('|', start);
    if (end == std::string::npos) end = s.size();
    std::string name = s.substr(start, end - start);
    name.erase(0, name.find_first_not_of(" \t"));
    name.erase(name.find_last_not_of(" \t") + 1);
    if (name.empty()) fail(t, col, quoted(s) + " has an empty model name (models are separated by '|')");
    const auto& canonical = catalog[model_of(catalog, t, col, name)].name;
    if (std::find(out.begin(), out.end(), canonical) == out.end()) out.push_back(canonical);
    start = end + 1;
  }
  return out;
}

/// Is the first data line of `text` a PAI header row (first field "machine")?
bool starts_with_pai_header(const std::string& text) {
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    const auto b = line.find_first_not_of(" \t\r");
    if (b == std::string::npos || line[b] == '#') continue;
    std::string first = line.substr(b, line.find(',', b) == std::string::npos ? std::string::npos : line.find(',', b) - b);
    first.erase(std::remove(first.begin(), first.end(), '"'), first.end());
    first.erase(first.find_last_not_of(" \t\r") + 1);
    std::transform(first.begin(), first.end(), first.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return first == "machine";
  }
  return true;  // no data: let CsvReader report the empty file
}

}  // namespace

void add_undisclosed_alibaba_models(GpuCatalog& catalog) {
  for (const char* name : {"G2", "G3", "GPU-series-1", "GPU-series-2", "MISC"}) {
    if (catalog.find(name)) continue;
    GpuModel m;
    m.name = name;
    m.vendor = std::string(kUndisclosedVendor);
    m.memory_mib = kUndisclosedGpuMemoryMib;
    m.sms = 0;
    catalog.add(std::move(m));
  }
}

std::vector<NodeSpec> read_openb_nodes(std::istream& in, const std::string& source, GpuCatalog& catalog,
                                       ResourceTable& /*resources*/) {
  add_undisclosed_alibaba_models(catalog);
  Table t(in, source);
  const auto c_sn = t.require("sn"), c_cpu = t.require("cpu_milli"), c_mem = t.require("memory_mib"),
             c_gpu = t.require("gpu"), c_model = t.require("model");
  std::vector<NodeSpec> nodes;
  UniqueNames names("node");
  while (t.next()) {
    names.add(t, c_sn);
    const auto cpu = integer(t, c_cpu, 0, kMaxMilliCpu);
    const auto mem = integer(t, c_mem, 0, kMaxMib);
    const auto gpus = integer(t, c_gpu, 0, kMaxGpusPerNode);
    GpuModelId model;
    if (!t[c_model].empty()) model = model_of(catalog, t, c_model, t[c_model]);
    else if (gpus > 0) fail(t, c_model, "a node with " + std::to_string(gpus) + " GPUs needs a model");
    nodes.push_back(make_node(t[c_sn], cpu, mem, gpus, model, catalog));
  }
  return nodes;
}

Workload read_openb_pods(std::istream& in, const std::string& source, GpuCatalog& catalog, ResourceTable& resources) {
  add_undisclosed_alibaba_models(catalog);
  Table t(in, source);
  const auto c_name = t.require("name"), c_cpu = t.require("cpu_milli"), c_mem = t.require("memory_mib"),
             c_ngpu = t.require("num_gpu"), c_milli = t.require("gpu_milli");
  const auto c_spec = t.column("gpu_spec"), c_qos = t.column("qos"), c_create = t.column("creation_time"),
             c_delete = t.column("deletion_time"), c_sched = t.column("scheduled_time");
  Workload jobs;
  UniqueNames names("pod");
  while (t.next()) {
    names.add(t, c_name);
    JobSpec j;
    j.name = t[c_name];
    j.source_line = t.line();
    const auto cpu = integer(t, c_cpu, 0, kMaxMilliCpu, true);
    const auto mem = integer(t, c_mem, 0, kMaxMib, true);
    const auto ngpu = integer(t, c_ngpu, 0, kMaxGpusPerTask, true);
    const auto milli = integer(t, c_milli, 0, kMilliPerGpu, true);
    if (ngpu == 0 && milli != 0) {
      fail(t, c_milli, "a CPU-only pod (num_gpu 0) must have gpu_milli 0, got " + std::to_string(milli));
    }
    if (ngpu == 1 && milli == 0) {
      fail(t, c_milli, "a pod with num_gpu 1 needs gpu_milli 1..1000, got 0", ErrorCode::kTraceOutOfRange);
    }
    if (ngpu > 1 && milli != kMilliPerGpu) {
      fail(t, c_milli, "gpu_milli " + std::to_string(milli) + " is a share of ONE GPU, but num_gpu is " +
                           std::to_string(ngpu) + " (a multi-GPU pod takes whole GPUs: gpu_milli 1000)");
    }
    std::vector<std::string> models;
    if (c_spec && !t[*c_spec].empty()) {
      if (ngpu == 0) fail(t, *c_spec, "a GPU model constraint on a CPU-only pod (num_gpu 0)");
      models = spec_models(catalog, t, *c_spec);
    }
    std::vector<std::pair<std::string, std::string>> items = {
        {std::string(resource_names::kCpu), std::to_string(cpu) + "m"},
        {std::string(resource_names::kMemory), std::to_string(mem) + "Mi"}};
    if (ngpu > 0) items.emplace_back(std::string(resource_names::kGpu), std::to_string(ngpu));
    if (ngpu == 1 && milli < kMilliPerGpu) items.emplace_back(std::string(resource_names::kGpuMilli), std::to_string(milli));
    j.request = parse_requests(items, models, catalog, resources, t.row());
    if (c_qos && !t[*c_qos].empty()) j.queue = t[*c_qos];
    j.submit = time_of(t, c_create).value_or(SimTime::zero());
    const auto scheduled = time_of(t, c_sched);
    const auto deleted = time_of(t, c_delete);
    if (scheduled && deleted) {
      if (*deleted < *scheduled) fail(t, *c_delete, "deletion_time " + t[*c_delete] + " is before scheduled_time " + t[*c_sched]);
      j.duration = *deleted - *scheduled;
    }
    jobs.push_back(std::move(j));
  }
  return jobs;
}

std::vector<NodeSpec> read_pai_machines(std::istream& in, const std::string& source, GpuCatalog& catalog,
                                        ResourceTable& /*resources*/) {
  add_undisclosed_alibaba_models(catalog);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::int64_t shift = 0;
  if (!starts_with_pai_header(text)) {
    text.insert(0, "machine,gpu_type,cap_cpu,cap_mem,cap_gpu\n");
    shift = 1;
  }
  std::istringstream body(text);
  Table t(body, source, shift);
  const auto c_machine = t.require("machine"), c_type = t.require("gpu_type"), c_cpu = t.require("cap_cpu"),
             c_mem = t.require("cap_mem"), c_gpu = t.require("cap_gpu");
  std::vector<NodeSpec> nodes;
  UniqueNames names("machine");
  while (t.next()) {
    names.add(t, c_machine);
    const auto cores = number(t, c_cpu, 0, kMaxCores);
    const auto gib = number(t, c_mem, 0, kMaxGib);
    const auto gpus = integer(t, c_gpu, 0, kMaxGpusPerNode);
    const std::string& type = t[c_type];
    GpuModelId model;
    if (type.empty() || type == "CPU") {
      if (gpus > 0) {
        fail(t, c_gpu, std::to_string(gpus) + " GPUs on a machine whose gpu_type is " + (type.empty() ? "empty" : "CPU"));
      }
    } else {
      // The list names the 32 GB boards V100M32, so plain V100 is the 16 GB board.
      model = model_of(catalog, t, c_type, type == "V100" ? "V100-16GB" : type);
    }
    nodes.push_back(make_node(t[c_machine], cores_to_milli(t, c_cpu, cores), gib_to_mib(t, c_mem, gib), gpus, model, catalog));
  }
  return nodes;
}

std::vector<NodeSpec> read_spot_nodes(std::istream& in, const std::string& source, GpuCatalog& catalog,
                                      ResourceTable& resources) {
  return read_spot_nodes(in, source, catalog, resources, kSpotMemoryMibPerCore);
}

std::vector<NodeSpec> read_spot_nodes(std::istream& in, const std::string& source, GpuCatalog& catalog,
                                      ResourceTable& /*resources*/, std::int64_t memory_mib_per_core) {
  if (memory_mib_per_core <= 0) {
    throw_error(ErrorCode::kTraceBadValue, {source, 0, ""},
                "memory per core must be > 0 MiB, got " + std::to_string(memory_mib_per_core));
  }
  add_undisclosed_alibaba_models(catalog);
  Table t(in, source);
  const auto c_model = t.require("gpu_model"), c_gpu = t.require("gpu_capacity_num"), c_cpu = t.require("cpu_num"),
             c_name = t.require("node_name");
  std::vector<NodeSpec> nodes;
  UniqueNames names("node");
  while (t.next()) {
    names.add(t, c_name);
    const auto cores = number(t, c_cpu, 0, kMaxCores);
    const auto gpus = integer(t, c_gpu, 0, kMaxGpusPerNode);
    GpuModelId model;
    if (!t[c_model].empty()) model = model_of(catalog, t, c_model, t[c_model]);
    else if (gpus > 0) fail(t, c_model, "a node with " + std::to_string(gpus) + " GPUs needs a gpu_model");
    const double mib = std::round(cores * static_cast<double>(memory_mib_per_core));
    if (mib > static_cast<double>(kMaxMib)) fail(t, c_cpu, "cpu_num x memory per core is more memory than a node can have");
    nodes.push_back(make_node(t[c_name], cores_to_milli(t, c_cpu, cores), static_cast<std::int64_t>(mib), gpus, model, catalog));
  }
  return nodes;
}

Workload read_dlrm(std::istream& in, const std::string& source, GpuCatalog& catalog, ResourceTable& resources) {
  add_undisclosed_alibaba_models(catalog);
  Table t(in, source);
  const auto c_name = t.require("instance_sn"), c_cpu = t.require("cpu_request"), c_mem = t.require("memory_request"),
             c_gpu = t.require("gpu_request");
  const auto c_role = t.column("role"), c_app = t.column("app_name"), c_rdma = t.column("rdma_request"),
             c_max = t.column("max_instance_per_node"), c_create = t.column("creation_time"),
             c_sched = t.column("scheduled_time"), c_delete = t.column("deletion_time");
  Workload jobs;
  UniqueNames names("instance");
  CompactStringPool apps;
  while (t.next()) {
    names.add(t, c_name);
    JobSpec j;
    j.name = t[c_name];
    j.source_line = t.line();
    const auto cores = number(t, c_cpu, 0, kMaxCores, true);
    const auto gib = number(t, c_mem, 0, kMaxGib, true);
    const auto gpus = integer(t, c_gpu, 0, kMaxGpusPerTask, true);
    const auto rdma = c_rdma ? integer(t, *c_rdma, 0, 1'000'000, true) : 0;
    std::vector<std::pair<std::string, std::string>> items = {
        {std::string(resource_names::kCpu), std::to_string(cores_to_milli(t, c_cpu, cores)) + "m"},
        {std::string(resource_names::kMemory), std::to_string(gib_to_mib(t, c_mem, gib)) + "Mi"}};
    if (gpus > 0) items.emplace_back(std::string(resource_names::kGpu), std::to_string(gpus));
    if (rdma > 0) items.emplace_back(std::string(kDlrmRdmaResource), std::to_string(rdma));
    j.request = parse_requests(items, {}, catalog, resources, t.row());
    if (c_role && !t[*c_role].empty()) j.queue = t[*c_role];
    if (c_app) j.constraints.app = apps.get(t[*c_app]);   // one block per distinct app
    if (c_max) {
      const auto cap = integer(t, *c_max, -1, 1'000'000);
      if (cap > 0) {
        if (j.constraints.app.empty()) {
          fail(t, c_app ? *c_app : *c_max, "max_instance_per_node " + std::to_string(cap) + " needs an app_name");
        }
        j.constraints.max_per_node = static_cast<std::int32_t>(cap);
      }
    }
    if (const auto problem = validate(j.constraints); !problem.empty()) {
      throw_error(ErrorCode::kTraceBadValue, t.row(), problem);
    }
    const auto created = time_of(t, c_create);
    const auto scheduled = time_of(t, c_sched);
    const auto deleted = time_of(t, c_delete);
    j.submit = created.value_or(SimTime::zero());
    if (created && scheduled && *scheduled < *created) {
      fail(t, *c_sched, "scheduled_time " + t[*c_sched] + " is before creation_time " + t[*c_create]);
    }
    // Runs from scheduled_time; with neither time it was already running when the trace began.
    const std::optional<SimTime> start = scheduled ? scheduled : created ? std::nullopt : std::optional<SimTime>(SimTime::zero());
    if (start && deleted) {
      if (*deleted < *start) {
        fail(t, *c_delete, "deletion_time " + t[*c_delete] + " is before the instance started (" +
                               std::to_string(start->seconds()) + " s)");
      }
      j.duration = *deleted - *start;
    }
    jobs.push_back(std::move(j));
  }
  std::stable_sort(jobs.begin(), jobs.end(), [](const JobSpec& a, const JobSpec& b) { return a.submit < b.submit; });
  return jobs;
}

}  // namespace gpusched::traces
