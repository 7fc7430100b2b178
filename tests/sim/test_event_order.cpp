// The event log replays line by line: at one instant every release (finish, fail, requeue) comes
// before the acquisitions (placed, start, grow) that use it, so a reader applying events.csv to
// the cluster's capacity never sees over-commitment. A job on a GPU instance created for it is
// `placed` when it takes the instance and `start`s when it runs, at jobs.csv's start_s. Elastic
// gangs (min_available < tasks) place their other tasks when room appears, and one that ends
// without them all is "partial", not "completed".
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gpusched/policies/framework/registry.hpp>
#include <gpusched/policies/framework/scheduler.hpp>
#include <gpusched/rng.hpp>
#include <gpusched/scenario/scenario.hpp>
#include <gpusched/sim/engine.hpp>
#include <gpusched/sim/outputs.hpp>

#include "support/support.hpp"

using namespace gpusched;
namespace t = gpusched::test;

namespace {

/// One CSV line split into fields (RFC 4180 quotes; no newlines inside fields in our files).
std::vector<std::string> csv_split(const std::string& line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        out.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        out.back() += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.emplace_back();
    } else {
      out.back() += c;
    }
  }
  return out;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

/// jobs.csv as rows keyed by job name, each a column -> value map.
std::map<std::string, std::map<std::string, std::string>> read_jobs(const std::string& text) {
  const auto lines = lines_of(text);
  REQUIRE(!lines.empty());
  const auto header = csv_split(lines[0]);
  std::map<std::string, std::map<std::string, std::string>> out;
  for (std::size_t i = 1; i < lines.size(); ++i) {
    const auto f = csv_split(lines[i]);
    REQUIRE(f.size() == header.size());
    auto& row = out[f[0]];
    for (std::size_t k = 0; k < f.size(); ++k) row[header[k]] = f[k];
  }
  return out;
}

/// Replays events.csv line by line against the cluster's capacities (taken from `cluster`, as
/// the scenario built it; the replay keeps its own books): per node CPU and memory, per GPU the
/// compute share (whole = 1000 milli), the tasks of a time-sliced / MPS GPU (<= replicas), GPU
/// memory of shares, and MIG instances (memory slices never overlap, compute slices <= the GPU's).
/// Returns the first violation ("" when none) and fills `start_s` with each job's last start.
class LogReplay {
 public:
  LogReplay(const ClusterState& cluster, const std::string& jobs_csv) : cluster_(cluster), jobs_(read_jobs(jobs_csv)) {}

  std::string replay(const std::string& events_csv) {
    const auto lines = lines_of(events_csv);
    if (lines.empty() || lines[0] != "time_s,event,job,node,detail") return "bad header";
    double last_t = -1e300;
    for (std::size_t i = 1; i < lines.size(); ++i) {
      const auto f = csv_split(lines[i]);
      if (f.size() != 5) return "line " + std::to_string(i + 1) + ": not 5 fields";
      const double time = std::stod(f[0]);
      if (time < last_t) return "line " + std::to_string(i + 1) + ": time goes back";
      last_t = time;
      const std::string& ev = f[1];
      const std::string& job = f[2];
      const std::string where = "line " + std::to_string(i + 1) + " (" + lines[i] + "): ";
      ++counts_[ev];
      if (ev == "placed") {
        if (!held_[job].empty()) return where + "placed while holding resources";
        if (auto e = acquire(job, f[4]); !e.empty()) return where + e;
        placed_[job] = f[4];
      } else if (ev == "start") {
        if (placed_.count(job)) {
          if (placed_[job] != f[4]) return where + "start on another placement than placed";
          placed_.erase(job);
        } else {
          if (!held_[job].empty()) return where + "start while holding resources";
          if (auto e = acquire(job, f[4]); !e.empty()) return where + e;
        }
        start_s[job] = time;
      } else if (ev == "grow") {
        if (held_[job].empty()) return where + "grow of a job that holds nothing";
        if (auto e = acquire(job, f[4]); !e.empty()) return where + e;
      } else if (ev == "finish" || ev == "fail" || ev == "requeue") {
        release(job);
        placed_.erase(job);
      }
      if (auto e = check(); !e.empty()) return where + e;
    }
    return "";
  }

  std::map<std::string, double> start_s;
  std::map<std::string, int> counts_;

 private:
  struct Task {
    std::uint32_t node = 0;
    std::int64_t cpu = 0, mem = 0;
    struct Gpu {
      int index = 0, milli = 0;
      std::int64_t memory = 0;
      int mig_start = -1, mig_slices = 0, mig_compute = 0;
    };
    std::vector<Gpu> gpus;
  };

  std::string acquire(const std::string& job, const std::string& detail) {
    const auto row = jobs_.find(job);
    if (row == jobs_.end()) return "unknown job " + job;
    const std::int64_t cpu = std::stoll(row->second.at("cpu_milli")), mem = std::stoll(row->second.at("memory_mib"));
    std::stringstream tasks(detail);
    for (std::string one; std::getline(tasks, one, ';');) {
      Task task;
      const auto bracket = one.find_first_of("[{");
      const auto node = cluster_.find_node(one.substr(0, bracket));
      if (!node) return "unknown node in " + one;
      task.node = node->value;
      task.cpu = cpu;
      task.mem = mem;
      if (bracket != std::string::npos && one[bracket] == '[') {
        std::stringstream grants(one.substr(bracket + 1, one.find(']') - bracket - 1));
        for (std::string g; std::getline(grants, g, ',');) {
          Task::Gpu gpu;
          const auto colon = g.find(':');
          gpu.index = std::stoi(g.substr(0, colon));
          const auto& gs = cluster_.gpus(*node)[static_cast<std::size_t>(gpu.index)];
          if (colon == std::string::npos) {
            gpu.milli = kMilliPerGpu;
          } else {
            const std::string what = g.substr(colon + 1);
            if (what.rfind("mig-", 0) == 0) {
              const auto at = what.find('@');
              const std::string name = what.substr(4, at - 4);
              gpu.mig_start = std::stoi(what.substr(at + 1));
              for (const auto& p : cluster_.mig_geometry(gs).profiles) {
                if (p.name == name) {
                  gpu.mig_slices = p.memory_slices;
                  gpu.mig_compute = p.compute_slices;
                }
              }
              if (gpu.mig_slices == 0) return "unknown MIG profile " + name;
            } else if (what.rfind("vgpu-", 0) != 0) {
              // "250m", "250m/4096Mi" or "4096Mi"
              const auto m = what.find('m');
              if (m != std::string::npos && (m + 1 == what.size() || what[m + 1] == '/')) gpu.milli = std::stoi(what.substr(0, m));
              if (const auto mi = what.find("Mi"); mi != std::string::npos) {
                const auto from = what.find('/') == std::string::npos ? 0 : what.find('/') + 1;
                gpu.memory = std::stoll(what.substr(from, mi - from));
              }
            }
          }
          task.gpus.push_back(gpu);
        }
      }
      held_[job].push_back(task);
    }
    return "";
  }

  void release(const std::string& job) { held_[job].clear(); }

  std::string check() const {
    std::map<std::uint32_t, std::pair<std::int64_t, std::int64_t>> node_use;
    std::map<std::pair<std::uint32_t, int>, std::vector<const Task::Gpu*>> gpu_use;
    for (const auto& [job, tasks] : held_) {
      for (const auto& task : tasks) {
        node_use[task.node].first += task.cpu;
        node_use[task.node].second += task.mem;
        for (const auto& g : task.gpus) gpu_use[{task.node, g.index}].push_back(&g);
      }
    }
    for (const auto& [n, use] : node_use) {
      const auto& spec = cluster_.spec(NodeId{n});
      if (use.first > spec.cpu_milli) return "node " + spec.name + " CPU over-committed: " + std::to_string(use.first);
      if (use.second > spec.memory_mib) return "node " + spec.name + " memory over-committed";
    }
    for (const auto& [key, grants] : gpu_use) {
      const auto& gs = cluster_.gpus(NodeId{key.first})[static_cast<std::size_t>(key.second)];
      const std::string gpu = cluster_.spec(NodeId{key.first}).name + " GPU " + std::to_string(key.second);
      int milli = 0, compute = 0;
      std::int64_t memory = 0;
      std::set<int> slices;
      for (const auto* g : grants) {
        milli += g->milli;
        memory += g->memory;
        compute += g->mig_compute;
        for (int s = g->mig_start; g->mig_start >= 0 && s < g->mig_start + g->mig_slices; ++s) {
          if (!slices.insert(s).second) return gpu + ": MIG memory slice " + std::to_string(s) + " taken twice";
        }
      }
      const bool replicated = gs.partition == GpuPartition::kTimeSlicing || gs.partition == GpuPartition::kMps;
      if (replicated && grants.size() > gs.replicas) return gpu + ": more sharers than replicas";
      if (!replicated && gs.mig < 0 && milli > kMilliPerGpu) return gpu + ": " + std::to_string(milli) + " milli taken";
      if (memory > gs.memory_mib) return gpu + ": GPU memory over-committed";
      if (gs.mig >= 0 && compute > cluster_.mig_geometry(gs).compute_slices) return gpu + ": MIG compute over-committed";
    }
    return "";
  }

  const ClusterState& cluster_;
  std::map<std::string, std::map<std::string, std::string>> jobs_;
  std::map<std::string, std::vector<Task>> held_;
  std::map<std::string, std::string> placed_;
};

struct Outputs {
  std::string events, jobs;
  nlohmann::json summary;
  std::map<std::string, std::map<std::string, std::string>> rows;
};

/// Runs the scenario document through the library's own run + write_outputs (as the CLI does),
/// replays its events.csv and requires the replay to hold; returns the files.
Outputs run_and_replay(const std::string& doc, const std::string& name = "order.json") {
  const auto sc = scenario::parse_scenario(std::string_view(doc), name, t::example(""));
  const auto result = scenario::run(sc);
  t::TempDir dir;
  scenario::write_outputs(result, dir.path());
  Outputs o{t::read_file(dir.path() / "events.csv"), t::read_file(dir.path() / "jobs.csv"),
            nlohmann::json::parse(t::read_file(dir.path() / "summary.json")), {}};
  o.rows = read_jobs(o.jobs);
  LogReplay replay(result.engine().cluster(), o.jobs);
  const auto violation = replay.replay(o.events);
  INFO(o.events);
  REQUIRE(violation == "");
  // Every job that started has its last `start` line at jobs.csv's start_s.
  for (const auto& [job, row] : o.rows) {
    if (row.at("start_s").empty()) continue;
    INFO("job " << job);
    REQUIRE(replay.start_s.count(job) == 1);
    CHECK(replay.start_s.at(job) == Approx(std::stod(row.at("start_s"))));
  }
  return o;
}

std::string doc(std::string_view nodes, std::string_view jobs, std::string_view extra = "") {
  return t::scenario_doc("order", "nodes", nodes, jobs, std::string(extra) + R"("outputs": {"event_log": true},)");
}

/// Events of one job in the log, as "event@time".
std::vector<std::string> events_of(const std::string& events_csv, const std::string& job) {
  std::vector<std::string> out;
  for (const auto& l : lines_of(events_csv)) {
    const auto f = csv_split(l);
    if (f.size() == 5 && f[2] == job) out.push_back(f[1] + "@" + f[0]);
  }
  return out;
}

std::size_t line_index(const std::string& events_csv, const std::string& prefix) {
  const auto lines = lines_of(events_csv);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].rfind(prefix, 0) == 0) return i;
  }
  FAIL("no line starting with " << prefix);
  return 0;
}

constexpr const char* kPreemption =
    R"("profile": {"name": "p", "extends": "first-fit", "post_filter": ["priority-preemption"]}, "priority_classes": {"high": {"value": 1000}},)";

}  // namespace

TEST_CASE("A preemption victim's requeue comes before its preemptor's start in the event log", "[sim][engine][events]") {
  const auto o = run_and_replay(doc(R"({"name": "n0", "cpu": 8, "memory": "32Gi", "gpus": 2, "gpu_model": "A100-80GB"})",
                                    R"({"id": "low", "submit_time": 0, "duration": 1000, "requests": {"cpu": 1, "nvidia.com/gpu": 2}},
      {"id": "high", "submit_time": 100, "duration": 50, "priority_class": "high", "requests": {"cpu": 1, "nvidia.com/gpu": 2}})",
                                    kPreemption));
  const auto requeue = line_index(o.events, "100.000000,requeue,low,,preempted by high");
  const auto start = line_index(o.events, "100.000000,start,high,,");
  CHECK(requeue < start);
  CHECK(events_of(o.events, "low") ==
        std::vector<std::string>{"submit@0.000000", "start@0.000000", "requeue@100.000000", "start@150.000000", "finish@1150.000000"});
}

TEST_CASE("A gang preempting several victims on several nodes replays without over-commitment", "[sim][engine][events]") {
  const auto o = run_and_replay(
      doc(R"({"name": "n0", "cpu": 8, "memory": "32Gi", "gpus": 2, "gpu_model": "A100-80GB"},
             {"name": "n1", "cpu": 8, "memory": "32Gi", "gpus": 2, "gpu_model": "A100-80GB"})",
          R"({"id": "a", "submit_time": 0, "duration": 500, "requests": {"cpu": 1, "nvidia.com/gpu": 1}},
             {"id": "b", "submit_time": 0, "duration": 500, "requests": {"cpu": 1, "nvidia.com/gpu": 1}},
             {"id": "c", "submit_time": 0, "duration": 500, "requests": {"cpu": 1, "nvidia.com/gpu": 1}},
             {"id": "d", "submit_time": 0, "duration": 500, "requests": {"cpu": 1, "nvidia.com/gpu": 1}},
             {"id": "gang", "submit_time": 10, "duration": 100, "tasks": 2, "priority_class": "high", "requests": {"cpu": 1, "nvidia.com/gpu": 2}})",
          kPreemption));
  CHECK(o.summary["preemption"]["preemptions"] == 4);
  const auto start = line_index(o.events, "10.000000,start,gang,,");
  for (const char* v : {"a", "b", "c", "d"}) CHECK(line_index(o.events, std::string("10.000000,requeue,") + v + ",,") < start);
}

TEST_CASE("A job on a newly created MIG instance is placed at once and starts after the reconfiguration",
          "[sim][engine][events][mig]") {
  const auto o = run_and_replay(
      doc(R"({"name": "h0", "cpu": 16, "memory": "64Gi", "gpus": 1, "gpu_model": "A100-80GB", "gpu_partition": {"mode": "mig", "dynamic": true}})",
          R"({"id": "first", "submit_time": 0, "duration": 100, "requests": {"cpu": 1, "nvidia.com/mig-3g.40gb": 1}},
             {"id": "second", "submit_time": 1, "duration": 100, "requests": {"cpu": 1, "nvidia.com/mig-3g.40gb": 1}},
             {"id": "third", "submit_time": 2, "duration": 100, "requests": {"cpu": 1, "nvidia.com/mig-3g.40gb": 1}},
             {"id": "again", "submit_time": 500, "duration": 100, "requests": {"cpu": 1, "nvidia.com/mig-3g.40gb": 1}})",
          R"("devices": {"mig_reconfigure_s": 5},)"));
  CHECK(events_of(o.events, "first") == std::vector<std::string>{"submit@0.000000", "placed@0.000000", "start@5.000000", "finish@105.000000"});
  CHECK(o.rows.at("first").at("start_s") == "5.000000");
  CHECK(o.rows.at("first").at("wait_s") == "5.000000");
  // An idle instance is reused without delay.
  CHECK(events_of(o.events, "again") == std::vector<std::string>{"submit@500.000000", "start@500.000000", "finish@600.000000"});
}

TEST_CASE("A job preempted while its MIG instance is created never logs a start", "[sim][engine][events][mig]") {
  const auto o = run_and_replay(
      doc(R"({"name": "h0", "cpu": 16, "memory": "64Gi", "gpus": 1, "gpu_model": "A100-80GB", "gpu_partition": {"mode": "mig", "dynamic": true}})",
          R"({"id": "low", "submit_time": 0, "duration": 100, "requests": {"cpu": 1, "nvidia.com/mig-7g.80gb": 1}},
             {"id": "high", "submit_time": 2, "duration": 100, "priority_class": "high", "requests": {"cpu": 1, "nvidia.com/mig-7g.80gb": 1}})",
          std::string(kPreemption) + R"("devices": {"mig_reconfigure_s": 5},)"));
  const auto low = events_of(o.events, "low");
  REQUIRE(low.size() >= 3);
  CHECK(low[1] == "placed@0.000000");
  CHECK(low[2] == "requeue@2.000000");
  CHECK(events_of(o.events, "high")[1].find("@2.000000") != std::string::npos);
}

TEST_CASE("An elastic gang places the tasks that did not fit when room appears", "[sim][engine][events][gang]") {
  // 4 GPUs; "filler" holds 2 until t=100. elastic: 3 tasks of 1 GPU, min_available 1: 2 fit at
  // t=10. "later" (1 GPU) waits from t=20; at t=100 it goes first, and the elastic gang takes the
  // last GPU; it ends at 10 + 1000 with all 3.
  const auto o = run_and_replay(
      doc(R"({"name": "n0", "cpu": 16, "memory": "64Gi", "gpus": 4, "gpu_model": "A100-80GB"})",
          R"({"id": "filler", "submit_time": 0, "duration": 100, "requests": {"cpu": 1, "nvidia.com/gpu": 2}},
             {"id": "elastic", "submit_time": 10, "duration": 1000, "tasks": 3, "min_available": 1, "requests": {"cpu": 1, "nvidia.com/gpu": 1}},
             {"id": "later", "submit_time": 20, "duration": 10, "requests": {"cpu": 1, "nvidia.com/gpu": 1}})"));
  const auto ev = events_of(o.events, "elastic");
  REQUIRE(ev.size() == 4);
  CHECK(ev[1] == "start@10.000000");
  CHECK(ev[2] == "grow@100.000000");
  CHECK(ev[3] == "finish@1010.000000");
  // The waiting job (later) goes first when filler frees its GPU; the elastic gang takes what is left.
  CHECK(events_of(o.events, "later")[1] == "start@100.000000");
  CHECK(line_index(o.events, "100.000000,start,later") < line_index(o.events, "100.000000,grow,elastic"));
  const auto& row = o.rows.at("elastic");
  CHECK(row.at("state") == "completed");
  CHECK(row.at("start_s") == "10.000000");
  CHECK(std::count(row.at("placement").begin(), row.at("placement").end(), ';') == 2);   // 3 tasks
  CHECK(o.summary["jobs"]["partial"] == 0);
}

TEST_CASE("An elastic gang whose other tasks never fit is reported partial with the count", "[sim][engine][events][gang]") {
  const auto o = run_and_replay(
      doc(R"({"name": "n0", "cpu": 16, "memory": "64Gi", "gpus": 4, "gpu_model": "A100-80GB"})",
          R"({"id": "elastic", "submit_time": 0, "duration": 100, "tasks": 5, "min_available": 1, "requests": {"cpu": 1, "nvidia.com/gpu": 1}},
             {"id": "whole", "submit_time": 0, "duration": 100, "tasks": 2, "requests": {"cpu": 1, "nvidia.com/gpu": 1}})"));
  const auto& row = o.rows.at("elastic");
  CHECK(row.at("state") == "partial");
  CHECK(row.at("reason") == "ran 4 of 5 tasks (min_available 1); the others never fitted before it ended");
  CHECK(o.rows.at("whole").at("state") == "completed");   // a gang started only once both fit
  CHECK(o.rows.at("whole").at("reason").empty());
  CHECK(o.summary["jobs"]["partial"] == 1);
  CHECK(o.summary["jobs"]["completed"] == 2);   // partial jobs count as completed, as rejected ones as failed
}

TEST_CASE("The bundled examples replay line by line and agree with jobs.csv", "[sim][engine][events]") {
  for (const char* example : {"small.json", "devices.json", "policies.json"}) {
    INFO(example);
    auto d = nlohmann::json::parse(t::read_file(t::example(example)));
    d["outputs"]["event_log"] = true;
    const auto o = run_and_replay(d.dump(), example);
    CHECK(!o.events.empty());
  }
}

namespace {

/// Applies every callback to its own copy of the cluster and checks, at each, that the copy
/// is consistent (never over-committed), and at each acquisition (start, grow) that it holds
/// exactly what the engine's cluster holds: the victims a preemptor displaces were all announced
/// before it. (At a release the cluster may hold less: victims freed together are announced one
/// by one.)
class ReplicaChecker final : public sim::Observer {
 public:
  void on_start(const sim::Engine& e) override { copy_.emplace(e.cluster()); held_.assign(e.workload().size(), {}); }
  void on_job_start(SimTime, JobId j, std::span<const TaskPlacement> p, const sim::Engine& e) override {
    take(j, p, e);
    check(e, "start", true);
  }
  void on_job_grow(SimTime, JobId j, std::span<const TaskPlacement> p, const sim::Engine& e) override {
    take(j, p, e);
    check(e, "grow", true);
  }
  void on_job_finish(SimTime, JobId j, const sim::Engine& e) override { drop(j, e, "finish"); }
  void on_job_fail(SimTime, JobId j, std::string_view, const sim::Engine& e) override { drop(j, e, "fail"); }
  void on_job_requeue(SimTime, JobId j, std::string_view, const sim::Engine& e) override { drop(j, e, "requeue"); }
  std::vector<std::string> errors;
  std::int64_t checks = 0;

 private:
  void take(JobId j, std::span<const TaskPlacement> p, const sim::Engine& e) {
    for (const auto& task : p) {
      const auto& r = e.spec(j).request;
      const auto& n = copy_->node(task.node);
      // allocate() asserts on CPU and memory: look first (GPUs are checked after, by cluster_violation).
      if (n.cpu_free_milli < r.cpu_milli || n.memory_free_mib < r.memory_mib) errors.push_back("over-committed taking " + e.spec(j).name);
      else copy_->allocate(r, task);
      held_[j.value].push_back(task);
    }
  }
  void drop(JobId j, const sim::Engine& e, const char* what) {
    for (const auto& task : held_[j.value]) copy_->release(e.spec(j).request, task);
    held_[j.value].clear();
    check(e, what, false);
  }
  void check(const sim::Engine& e, const char* what, bool exact) {
    ++checks;
    if (auto v = t::cluster_violation(*copy_); !v.empty()) errors.push_back(std::string(what) + ": " + v);
    const auto &a = copy_->totals(), &b = e.cluster().totals();
    const bool same = a.tasks == b.tasks && a.cpu_used_milli == b.cpu_used_milli && a.gpu_used_milli == b.gpu_used_milli;
    const bool no_more = b.tasks <= a.tasks && b.cpu_used_milli <= a.cpu_used_milli && b.gpu_used_milli <= a.gpu_used_milli;
    if (exact ? !same : !no_more) {
      errors.push_back(std::string("at ") + what + " the callbacks hold " + std::to_string(a.tasks) + " tasks, the cluster " +
                       std::to_string(b.tasks));
    }
  }
  std::optional<ClusterState> copy_;
  std::vector<std::vector<TaskPlacement>> held_;
};

}  // namespace

TEST_CASE("Observers see each preemption victim leave before its preemptor takes its place", "[sim][engine][events]") {
  // Random priorities on a small cluster of 2-GPU nodes: many preemptions, gangs and elastic gangs.
  std::int64_t preemptions = 0, grows = 0;
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    Rng rng = RngStreams(seed).stream("test.order");
    std::vector<NodeSpec> nodes;
    for (int i = 0; i < 3; ++i) nodes.push_back(t::node(t::numbered("n", i), 8, 32, 2));
    auto cluster = t::cluster(nodes);
    Workload jobs;
    for (int i = 0; i < 60; ++i) {
      const auto tasks = static_cast<std::int32_t>(1 + rng.below(3));
      const auto min_available = static_cast<std::int32_t>(1 + rng.below(static_cast<std::uint64_t>(tasks)));
      jobs.push_back(t::job(t::numbered("j", i), static_cast<double>(i * 20), static_cast<double>(50 + rng.below(400)),
                            t::request({{"cpu", "1"}, {"memory", "1Gi"}, {"nvidia.com/gpu", std::to_string(1 + rng.below(2))}}),
                            tasks, min_available, static_cast<std::int32_t>(rng.below(4))));
    }
    auto profile = policies::builtin_profile("first-fit");
    profile.post_filter = {policies::PluginRef{"priority-preemption"}};
    policies::Scheduler scheduler(profile, policies::Registry::with_builtins(), seed);
    sim::Engine engine(cluster, jobs, scheduler, {});
    ReplicaChecker checker;
    sim::EventLog log;
    engine.add_observer(&checker);
    engine.add_observer(&log);
    engine.run();
    INFO("seed " << seed);
    CHECK(checker.errors.empty());
    for (const auto& err : checker.errors) UNSCOPED_INFO(err);
    preemptions += static_cast<std::int64_t>(engine.preemptions());
    for (const auto& l : log.lines()) grows += l.find(",grow,") != std::string::npos ? 1 : 0;
  }
  CHECK(preemptions > 20);
  CHECK(grows > 0);
}
