#include "support/support.hpp"

#include <atomic>
#include <cstdlib>
#include <chrono>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>

#include <unistd.h>

#include <catch2/catch.hpp>

#include <gpusched/quantity.hpp>
#include <gpusched/scenario/scenario.hpp>

namespace gpusched::test {

std::filesystem::path source_dir() { return std::filesystem::path(GPUSCHED_SOURCE_DIR); }

std::filesystem::path example(const std::string& relative) { return source_dir() / "examples" / relative; }

void check_same_jobs(const Workload& a, const Workload& b) {
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    INFO("job " << a[i].name);
    CHECK(a[i].name == b[i].name);
    CHECK(a[i].submit == b[i].submit);
    CHECK(a[i].duration == b[i].duration);
    CHECK(a[i].tasks == b[i].tasks);
    CHECK(a[i].min_available == b[i].min_available);
    CHECK(a[i].priority == b[i].priority);
    CHECK(a[i].queue == b[i].queue);
    const auto &ra = a[i].request, &rb = b[i].request;
    CHECK(ra.cpu_milli == rb.cpu_milli);
    CHECK(ra.memory_mib == rb.memory_mib);
    CHECK(ra.gpu.mode == rb.gpu.mode);
    CHECK(ra.gpu.count == rb.gpu.count);
    CHECK(ra.gpu.milli == rb.gpu.milli);
    CHECK(ra.gpu.memory_mib == rb.gpu.memory_mib);
    CHECK(ra.allowed_models == rb.allowed_models);
    CHECK(ra.extended == rb.extended);
    CHECK(a[i].constraints == b[i].constraints);
  }
}

std::filesystem::path real_trace(const std::string& relative) {
  const char* env = std::getenv("GPUSCHED_TRACES_DIR");
  const std::filesystem::path dir = (env != nullptr && *env != '\0') ? std::filesystem::path(env) : source_dir().parent_path() / "shared" / "traces";
  auto path = dir / relative;
  if (!std::filesystem::exists(path)) {
    WARN("skipped: real trace " << path.string() << " is absent (set GPUSCHED_TRACES_DIR to the traces folder)");
    return {};
  }
  return path;
}

TempDir::TempDir() {
  static std::atomic<unsigned> counter{0};
  const auto stamp = std::chrono::steady_clock::now().time_since_epoch().count();
  path_ = std::filesystem::temp_directory_path() /
          ("gpusched-test-" + std::to_string(::getpid()) + "-" + std::to_string(stamp) + "-" +
           std::to_string(counter++));
  std::filesystem::create_directories(path_);
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::filesystem::path TempDir::write(const std::string& name, std::string_view text) const {
  const auto p = path_ / name;
  std::ofstream out(p, std::ios::binary);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + p.string());
  return p;
}

std::string numbered(std::string prefix, std::int64_t i) {
  prefix += std::to_string(i);
  return prefix;
}

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + p.string());
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

NodeSpec node(std::string name, std::int64_t cpu_cores, std::int64_t memory_gib, int gpus, std::string_view model,
              std::int16_t sockets) {
  static const GpuCatalog catalog = GpuCatalog::builtin();
  NodeSpec n;
  n.name = std::move(name);
  n.cpu_milli = cpu_cores * 1000;
  n.memory_mib = memory_gib * 1024;
  n.sockets = sockets;
  const GpuModelId id = gpus > 0 ? catalog.require(model, {}) : GpuModelId{};
  for (int g = 0; g < gpus; ++g) n.gpus.push_back({id, static_cast<std::int16_t>(g * sockets / gpus)});
  return n;
}

ClusterState cluster(std::vector<NodeSpec> nodes, ResourceTable resources) {
  return ClusterState(GpuCatalog::builtin(), std::move(resources), std::move(nodes));
}

TaskRequest request(const Items& items, std::vector<std::string> models) {
  ResourceTable resources;
  return request(items, resources, std::move(models));
}

TaskRequest request(const Items& items, ResourceTable& resources, std::vector<std::string> models) {
  static const GpuCatalog catalog = GpuCatalog::builtin();
  return parse_requests(items, models, catalog, resources, {"test", 0, ""});
}

JobSpec job(std::string name, double submit_s, double duration_s, TaskRequest r, std::int32_t tasks,
            std::int32_t min_available, std::int32_t priority) {
  JobSpec j;
  j.name = std::move(name);
  j.submit = SimTime::from_seconds_f(submit_s);
  j.duration = duration_s < 0 ? SimTime::forever() : SimTime::from_seconds_f(duration_s);
  j.tasks = tasks;
  j.min_available = min_available < 0 ? tasks : min_available;
  j.priority = priority;
  j.request = std::move(r);
  return j;
}

std::string cluster_violation(const ClusterState& c) {
  std::ostringstream why;
  std::int64_t cpu_used = 0, mem_used = 0, gpu_used = 0, gpus_busy = 0, tasks = 0, gpus_total = 0;
  for (std::uint32_t i = 0; i < c.node_count(); ++i) {
    const NodeId n{i};
    const auto& s = c.node(n);
    const auto& spec = c.spec(n);
    const std::string name = spec.name;
    if (s.cpu_free_milli < 0 || s.cpu_free_milli > c.cpu_capacity(n)) {
      why << name << ": cpu_free_milli " << s.cpu_free_milli << " outside [0, " << c.cpu_capacity(n) << "]";
      return why.str();
    }
    if (s.memory_free_mib < 0 || s.memory_free_mib > c.memory_capacity(n)) {
      why << name << ": memory_free_mib " << s.memory_free_mib << " outside [0, " << c.memory_capacity(n) << "]";
      return why.str();
    }
    for (const auto& [rid, cap] : spec.extended) {
      const auto f = c.extended_free(n, rid);
      if (f < 0 || f > cap) {
        why << name << ": extended resource " << c.resources().name(rid) << " free " << f << " outside [0, " << cap << "]";
        return why.str();
      }
    }
    cpu_used += c.cpu_capacity(n) - s.cpu_free_milli;
    mem_used += c.memory_capacity(n) - s.memory_free_mib;
    tasks += s.tasks;
    std::uint16_t fully_free = 0;
    std::int32_t milli_sum = 0, milli_max = 0;
    std::int64_t mem_max = 0, mem_sum = 0;
    const auto gpus = c.gpus(n);
    if (gpus.size() != spec.gpus.size()) {
      why << name << ": " << gpus.size() << " GPU states for " << spec.gpus.size() << " GPUs";
      return why.str();
    }
    for (std::size_t g = 0; g < gpus.size(); ++g) {
      const auto& gs = gpus[g];
      const auto cap_mem = c.catalog()[spec.gpus[g].model].memory_mib;
      if (gs.milli_free < 0 || gs.milli_free > kMilliPerGpu) {
        why << name << " GPU " << g << ": milli_free " << gs.milli_free << " outside [0, 1000]";
        return why.str();
      }
      if (gs.memory_mib != cap_mem || gs.memory_free_mib < 0 || gs.memory_free_mib > gs.memory_mib) {
        why << name << " GPU " << g << ": memory_free_mib " << gs.memory_free_mib << " outside [0, " << cap_mem << "]";
        return why.str();
      }
      if (gs.tasks == 0 && (gs.milli_free != kMilliPerGpu || gs.memory_free_mib != gs.memory_mib)) {
        why << name << " GPU " << g << ": no task but not fully free";
        return why.str();
      }
      fully_free = static_cast<std::uint16_t>(fully_free + (gs.fully_free() ? 1 : 0));
      milli_sum += gs.milli_free;
      milli_max = std::max(milli_max, gs.milli_free);
      mem_max = std::max(mem_max, gs.memory_free_mib);
      mem_sum += gs.memory_free_mib;
      gpu_used += kMilliPerGpu - gs.milli_free;
      gpus_busy += gs.fully_free() ? 0 : 1;
      ++gpus_total;
    }
    if (s.gpus_fully_free != fully_free || s.gpu_milli_free != milli_sum || s.gpu_milli_free_max != milli_max ||
        s.gpu_memory_free_max != mem_max || s.gpu_memory_free != mem_sum) {
      why << name << ": stale GPU aggregates (fully_free " << s.gpus_fully_free << " vs " << fully_free
          << ", milli_free " << s.gpu_milli_free << " vs " << milli_sum << ")";
      return why.str();
    }
  }
  const auto& t = c.totals();
  if (t.cpu_used_milli != cpu_used || t.memory_used_mib != mem_used || t.gpu_used_milli != gpu_used ||
      t.gpus_busy != gpus_busy || t.tasks != tasks || t.gpus != gpus_total) {
    why << "totals differ from the per-node sums (cpu " << t.cpu_used_milli << " vs " << cpu_used << ", memory "
        << t.memory_used_mib << " vs " << mem_used << ", gpu milli " << t.gpu_used_milli << " vs " << gpu_used
        << ", gpus busy " << t.gpus_busy << " vs " << gpus_busy << ", tasks " << t.tasks << " vs " << tasks << ")";
    return why.str();
  }
  return {};
}

bool cluster_empty(const ClusterState& c) {
  const auto& t = c.totals();
  if (t.cpu_used_milli != 0 || t.memory_used_mib != 0 || t.gpu_used_milli != 0 || t.gpus_busy != 0 || t.tasks != 0) {
    return false;
  }
  for (std::uint32_t i = 0; i < c.node_count(); ++i) {
    const NodeId n{i};
    const auto& s = c.node(n);
    if (s.cpu_free_milli != c.cpu_capacity(n) || s.memory_free_mib != c.memory_capacity(n) || s.tasks != 0 ||
        s.gpus_fully_free != s.gpu_count) {
      return false;
    }
    for (const auto& g : c.gpus(n)) {
      if (g.milli_free != kMilliPerGpu || g.memory_free_mib != g.memory_mib || g.tasks != 0) return false;
    }
    for (const auto& [rid, cap] : c.spec(n).extended) {
      if (c.extended_free(n, rid) != cap) return false;
    }
  }
  return true;
}

std::string scenario_doc(std::string_view name, std::string_view list, std::string_view nodes, std::string_view jobs,
                         std::string_view extra) {
  std::string s = R"({"schema_version": 1, "name": ")";
  s += name;
  s += R"(", )";
  s += extra;
  s += R"( "cluster": {")";
  s += list;
  s += R"(": [)";
  s += nodes;
  s += R"(]}, "workload": {"jobs": [)";
  s += jobs;
  s += "]}}";
  return s;
}

CliResult cli(std::vector<std::string> args) {
  args.insert(args.begin(), "gpusched");
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  std::ostringstream out, err;
  auto* old_out = std::cout.rdbuf(out.rdbuf());
  auto* old_err = std::cerr.rdbuf(err.rdbuf());
  CliResult r;
  try {
    r.rc = scenario::cli_main(static_cast<int>(argv.size()), argv.data());
  } catch (...) {
    std::cout.rdbuf(old_out);
    std::cerr.rdbuf(old_err);
    throw;
  }
  std::cout.rdbuf(old_out);
  std::cerr.rdbuf(old_err);
  r.out = out.str();
  r.err = err.str();
  return r;
}

}  // namespace gpusched::test
