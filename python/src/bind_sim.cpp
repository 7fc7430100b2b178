// Simulation bindings: load / run scenarios (the GIL is released while simulating), the run
// result as columns for pandas, outputs, validation and the command line.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iostream>
#include <limits>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <pybind11/functional.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <gpusched/json_input.hpp>
#include <gpusched/policies/framework/registry.hpp>
#include <gpusched/quantity.hpp>
#include <gpusched/policies/framework/scheduler.hpp>
#include <gpusched/rng.hpp>
#include <gpusched/scenario/scenario.hpp>
#include <gpusched/scenario/whatif.hpp>
#include <gpusched/traces/native.hpp>
#include <gpusched/traces/synthetic.hpp>

#include "bindings.hpp"

namespace gpusched::python {
namespace {

using scenario::RunResult;
using scenario::Scenario;

/// Thrown through the engine to stop a run when the progress callback raised.
struct ProgressAbort {};

/// Loads a scenario and runs it with the GIL released. The GIL is taken back only inside the
/// progress callback and the engine's interrupt poll (SignalPoll: Ctrl-C on the main thread stops
/// the run and raises KeyboardInterrupt); an exception raised by `progress` stops the run too.
RunResult run_released(const std::function<Scenario(const policies::Registry&)>& load, std::optional<std::uint64_t> seed,
                       const py::object& progress, bool exact_scan = false) {
  const policies::Registry registry = current_registry();   // this process's plugins, Python ones included
  std::optional<py::error_already_set> py_error;
  scenario::ProgressFn on_progress;
  if (!progress.is_none()) {
    on_progress = [&](double fraction) {
      PyCallGil gil;
      try {
        call_python(progress, py::make_tuple(fraction));
      } catch (py::error_already_set& e) {
        py_error.emplace(std::move(e));
        throw ProgressAbort{};
      }
    };
  }
  return interruptible([&] {
    std::optional<RunResult> result;
    try {
      ReleasedGil release;
      Scenario sc = load(registry);
      sc.exact_scan = exact_scan;
      result.emplace(scenario::run(sc, seed, on_progress, registry));
    } catch (const ProgressAbort&) {
      throw std::move(*py_error);   // the GIL is held again here
    }
    return std::move(*result);
  });
}

/// A 1-D numpy array of `n` elements filled by `get(i)`.
template <typename T, typename Get>
py::array_t<T> column(std::size_t n, Get get) {
  py::array_t<T> a(static_cast<py::ssize_t>(n));
  auto v = a.template mutable_unchecked<1>();
  for (std::size_t i = 0; i < n; ++i) v(static_cast<py::ssize_t>(i)) = get(i);
  return a;
}

template <typename Get>
py::list str_column(std::size_t n, Get get) {
  py::list out(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::string& s = get(i);
    out[i] = py::reinterpret_steal<py::object>(PyUnicode_DecodeUTF8(s.data(), static_cast<py::ssize_t>(s.size()), "replace"));
  }
  return out;
}

double nan_if_empty(const std::optional<double>& v) { return v ? *v : std::numeric_limits<double>::quiet_NaN(); }

/// The job table as columns (the jobs.csv header order).
py::dict job_columns(const RunResult& r) {
  std::vector<sim::JobRow> rows;
  {
    py::gil_scoped_release release;
    rows = r.jobs();
  }
  const std::size_t n = rows.size();
  py::dict d;
  d["job"] = str_column(n, [&](std::size_t i) -> const std::string& { return rows[i].job; });
  d["queue"] = str_column(n, [&](std::size_t i) -> const std::string& { return rows[i].queue; });
  d["priority"] = column<std::int32_t>(n, [&](std::size_t i) { return rows[i].priority; });
  d["tasks"] = column<std::int32_t>(n, [&](std::size_t i) { return rows[i].tasks; });
  d["cpu_milli"] = column<std::int64_t>(n, [&](std::size_t i) { return rows[i].cpu_milli; });
  d["memory_mib"] = column<std::int64_t>(n, [&](std::size_t i) { return rows[i].memory_mib; });
  d["gpus"] = column<std::int32_t>(n, [&](std::size_t i) { return rows[i].gpus; });
  d["gpu_milli"] = column<std::int32_t>(n, [&](std::size_t i) { return rows[i].gpu_milli; });
  d["gpu_memory_mib"] = column<std::int64_t>(n, [&](std::size_t i) { return rows[i].gpu_memory_mib; });
  d["submit_s"] = column<double>(n, [&](std::size_t i) { return rows[i].submit_s; });
  d["start_s"] = column<double>(n, [&](std::size_t i) { return nan_if_empty(rows[i].start_s); });
  d["end_s"] = column<double>(n, [&](std::size_t i) { return nan_if_empty(rows[i].end_s); });
  d["wait_s"] = column<double>(n, [&](std::size_t i) { return nan_if_empty(rows[i].wait_s); });
  d["jct_s"] = column<double>(n, [&](std::size_t i) { return nan_if_empty(rows[i].jct_s); });
  d["state"] = str_column(n, [&](std::size_t i) -> const std::string& { return rows[i].state; });
  d["attempts"] = column<std::uint32_t>(n, [&](std::size_t i) { return rows[i].attempts; });
  d["evictions"] = column<std::uint32_t>(n, [&](std::size_t i) { return rows[i].evictions; });
  d["lost_gpu_hours"] = column<double>(n, [&](std::size_t i) { return rows[i].lost_gpu_hours; });
  d["placement"] = str_column(n, [&](std::size_t i) -> const std::string& { return rows[i].placement; });
  d["reason"] = str_column(n, [&](std::size_t i) -> const std::string& { return rows[i].reason; });
  d["requeues"] = column<std::uint32_t>(n, [&](std::size_t i) { return rows[i].requeues; });
  d["bound"] = column<bool>(n, [&](std::size_t i) { return rows[i].bound; });
  d["attained_s"] = column<double>(n, [&](std::size_t i) { return rows[i].attained_s; });
  d["attained_gpu_s"] = column<double>(n, [&](std::size_t i) { return rows[i].attained_gpu_s; });
  d["queue_level"] = column<double>(n, [&](std::size_t i) {
    return rows[i].queue_level >= 0 ? static_cast<double>(rows[i].queue_level) : std::numeric_limits<double>::quiet_NaN();
  });
  d["preemptions"] = column<std::uint32_t>(n, [&](std::size_t i) { return rows[i].preemptions; });
  d["resumptions"] = column<std::uint32_t>(n, [&](std::size_t i) { return rows[i].resumptions; });
  d["overhead_s"] = column<double>(n, [&](std::size_t i) { return rows[i].overhead_s; });
  return d;
}

/// The time series as columns (the timeseries.csv header order).
py::dict timeseries_columns(const RunResult& r) {
  const auto& s = r.timeseries();
  const std::size_t n = s.size();
  py::dict d;
  d["time_s"] = column<double>(n, [&](std::size_t i) { return s[i].t.seconds(); });
  d["gpu_alloc_pct"] = column<double>(n, [&](std::size_t i) { return s[i].gpu_alloc_pct; });
  d["gpus_busy_pct"] = column<double>(n, [&](std::size_t i) { return s[i].gpus_busy_pct; });
  d["cpu_alloc_pct"] = column<double>(n, [&](std::size_t i) { return s[i].cpu_alloc_pct; });
  d["memory_alloc_pct"] = column<double>(n, [&](std::size_t i) { return s[i].memory_alloc_pct; });
  d["pending_jobs"] = column<std::int64_t>(n, [&](std::size_t i) { return s[i].pending_jobs; });
  d["running_jobs"] = column<std::int64_t>(n, [&](std::size_t i) { return s[i].running_jobs; });
  return d;
}

/// Fragmentation after every decision as columns (the fragmentation.csv header order).
py::dict fragmentation_columns(const RunResult& r) {
  const auto& s = r.fragmentation();
  const std::size_t n = s.size();
  py::dict d;
  d["t_s"] = column<double>(n, [&](std::size_t i) { return s[i].t.seconds(); });
  d["decisions"] = column<std::int64_t>(n, [&](std::size_t i) { return s[i].decisions; });
  d["arrived_pct"] = column<double>(n, [&](std::size_t i) { return s[i].arrived_pct; });
  d["unallocated_pct"] = column<double>(n, [&](std::size_t i) { return s[i].unallocated_pct; });
  d["frag_pct"] = column<double>(n, [&](std::size_t i) { return s[i].frag_pct; });
  d["frag_ratio_pct"] = column<double>(n, [&](std::size_t i) { return s[i].frag_ratio_pct; });
  return d;
}

py::dict stamp_dict(const sim::RunStamp& st) {
  py::dict d;
  d["version"] = st.version;
  d["scenario"] = st.scenario;
  d["source"] = st.source;
  d["digest"] = st.digest;
  d["seed"] = st.seed;
  return d;
}

/// What validation found, for a scenario, a trace or a profile.
struct Checked {
  std::string kind, name, profile;
  std::size_t nodes = 0, jobs = 0;
  std::int64_t gpus = 0;
};

/// Everything `gpusched validate` checks for a scenario: cluster, profile (scheduler built),
/// workload (generated, or checked to fit some node). Throws gpusched errors.
Checked check_scenario(const Scenario& sc, const std::string& source, const policies::Registry& registry) {
  ClusterState cluster(sc.catalog, sc.resources, sc.nodes);
  const policies::Scheduler check(sc.profile, registry, sc.seed);
  std::size_t jobs = sc.jobs.size();
  if (sc.synthetic) {
    jobs = traces::generate(*sc.synthetic, cluster, RngStreams(sc.seed)).size();
  } else {
    traces::check_placeable(sc.jobs, cluster, sc.trace ? sc.trace->string() : source);
  }
  return {"scenario", sc.name, sc.profile.name, cluster.node_count(), jobs, cluster.totals().gpus};
}

/// Same as `gpusched validate FILE`: a trace (.csv / .jsonl / .ndjson), a profile (a JSON object
/// without cluster and workload) or a scenario.
Checked check_file(const std::filesystem::path& path, const policies::Registry& registry) {
  const std::string file = path.string();
  const auto ext = path.extension().string();
  if (ext == ".csv" || ext == ".jsonl" || ext == ".ndjson") {
    ResourceTable resources;
    const auto jobs = traces::read_trace(path, GpuCatalog::builtin(), resources);
    return {"trace", path.filename().string(), "", 0, jobs.size(), 0};
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw_error(ErrorCode::kScenarioCannotOpen, {file, 0, ""}, "cannot open the file");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  const nlohmann::json doc = parse_json(text, file, kScenarioJsonErrors);
  if (doc.is_object() && !doc.contains("cluster") && !doc.contains("workload")) {
    const auto profile = policies::Profile::from_json(doc, file);
    const policies::Scheduler check(profile, registry, 0);
    return {"profile", profile.name, profile.name, 0, 0, 0};
  }
  return check_scenario(scenario::parse_scenario(doc, file, path.parent_path(), registry), file, registry);
}

py::dict checked_dict(const Checked& c) {
  py::dict d;
  d["kind"] = c.kind;
  d["name"] = c.name;
  if (c.kind == "scenario") {
    d["nodes"] = c.nodes;
    d["gpus"] = c.gpus;
    d["profile"] = c.profile;
  }
  if (c.kind != "profile") d["jobs"] = c.jobs;
  return d;
}

/// The long-form placement table (see RunResult.placements).
py::dict placement_columns(const RunResult& r) {
  const auto& engine = r.engine();
  const auto& cluster = engine.cluster();
  std::vector<std::string> job, node, mig, vgpu;
  std::vector<std::int32_t> task, gpu, milli, mig_start, chips;
  std::vector<std::int64_t> memory;
  std::vector<double> start, end;
  const auto workload = engine.workload();
  for (std::size_t j = 0; j < workload.size(); ++j) {
    const auto& rt = engine.job(JobId{static_cast<std::uint32_t>(j)});
    if (rt.state != sim::JobState::kRunning && rt.state != sim::JobState::kCompleted) continue;
    const double st = rt.start.seconds();
    const double en = rt.end.is_forever() ? std::numeric_limits<double>::quiet_NaN() : rt.end.seconds();
    for (std::size_t t = 0; t < rt.placements.size(); ++t) {
      const auto& p = rt.placements[t];
      auto row = [&](const GpuGrant* g) {
        job.push_back(workload[j].name);
        task.push_back(static_cast<std::int32_t>(t));
        node.push_back(cluster.spec(p.node).name);
        chips.push_back(p.tpu_chips);
        start.push_back(st);
        end.push_back(en);
        if (g == nullptr) {
          gpu.push_back(-1);
          milli.push_back(0);
          memory.push_back(0);
          mig.emplace_back();
          mig_start.push_back(-1);
          vgpu.emplace_back();
          return;
        }
        const auto& gs = cluster.gpus(p.node)[g->index];
        gpu.push_back(g->index);
        milli.push_back(g->milli);
        memory.push_back(g->memory_mib);
        mig.push_back(g->mig_profile >= 0 ? cluster.mig_geometry(gs).profiles[static_cast<std::size_t>(g->mig_profile)].name
                                          : std::string());
        mig_start.push_back(g->mig_start);
        vgpu.push_back(g->vgpu_profile >= 0 ? cluster.catalog()[gs.model].vgpu[static_cast<std::size_t>(g->vgpu_profile)].name
                                            : std::string());
      };
      if (p.gpus.empty()) row(nullptr);
      for (const auto& g : p.gpus) row(&g);
    }
  }
  py::dict d;
  d["job"] = job;
  d["task"] = column<std::int32_t>(task.size(), [&](std::size_t i) { return task[i]; });
  d["node"] = node;
  d["gpu"] = column<std::int32_t>(gpu.size(), [&](std::size_t i) { return gpu[i]; });
  d["milli"] = column<std::int32_t>(milli.size(), [&](std::size_t i) { return milli[i]; });
  d["memory_mib"] = column<std::int64_t>(memory.size(), [&](std::size_t i) { return memory[i]; });
  d["mig_profile"] = mig;
  d["mig_start"] = column<std::int32_t>(mig_start.size(), [&](std::size_t i) { return mig_start[i]; });
  d["vgpu_profile"] = vgpu;
  d["tpu_chips"] = column<std::int32_t>(chips.size(), [&](std::size_t i) { return chips[i]; });
  d["start_s"] = column<double>(start.size(), [&](std::size_t i) { return start[i]; });
  d["end_s"] = column<double>(end.size(), [&](std::size_t i) { return end[i]; });
  return d;
}

/// claims.csv as columns: the DRA devices each task holds through its claim.
py::dict claim_columns(const RunResult& r) {
  const auto rows = r.claims();
  std::vector<std::string> job, node, tmpl, request, driver, pool, device;
  std::vector<std::int32_t> task;
  std::vector<bool> admin;
  for (const auto& c : rows) {
    admin.push_back(c.admin_access);
    job.push_back(c.job);
    task.push_back(c.task);
    node.push_back(c.node);
    tmpl.push_back(c.claim_template);
    request.push_back(c.request);
    driver.push_back(c.driver);
    pool.push_back(c.pool);
    device.push_back(c.device);
  }
  py::dict d;
  d["job"] = job;
  d["task"] = column<std::int32_t>(task.size(), [&](std::size_t i) { return task[i]; });
  d["node"] = node;
  d["claim_template"] = tmpl;
  d["request"] = request;
  d["driver"] = driver;
  d["pool"] = pool;
  d["device"] = device;
  d["admin_access"] = admin;
  return d;
}

}  // namespace

void bind_sim(py::module_& m) {
  py::class_<RunResult>(m, "RunResult",
                        "Everything a finished run produced (read-only). Build with run_json / run_file / run_demo.")
      .def_property_readonly("stamp", [](const RunResult& r) { return stamp_dict(r.stamp()); },
                             "What produced the run: version, scenario, source, digest, seed.")
      .def_property_readonly("profile_name", &RunResult::profile_name, "Name of the scheduling profile used.")
      .def("summary", [](const RunResult& r) { return json_to_py(r.summary_json()); },
           "summary.json as a dict: counts, wait / JCT distributions, allocation, stamp and resolved inputs.")
      .def("summary_json", [](const RunResult& r) { return r.summary_json().dump(2); },
           "summary.json as text (indent 2).")
      .def("timeseries", &timeseries_columns,
           "The time series as {column: numpy array}: time_s, gpu_alloc_pct, gpus_busy_pct, cpu_alloc_pct, "
           "memory_alloc_pct, pending_jobs, running_jobs.")
      .def("fragmentation", &fragmentation_columns,
           "Fragmentation after every decision as {column: numpy array}: t_s, decisions, arrived_pct, "
           "unallocated_pct, frag_pct, frag_ratio_pct (empty unless the run shares GPUs or asks for it).")
      .def("jobs", &job_columns,
           "The job table as {column: numpy array or list of str}, in jobs.csv column order; NaN where a "
           "time does not apply (never started / not finished).")
      .def("placements", &placement_columns,
           "Where every running or completed job ran, long form, as {column: numpy array or list}: one row per "
           "(job, task, GPU grant), or per task without GPUs: job, task, node, gpu (-1: none), milli, memory_mib, "
           "mig_profile, mig_start (-1), vgpu_profile ('' when none), tpu_chips, start_s, end_s (NaN: still running).")
      .def("claims", &claim_columns,
           "The DRA devices every running or completed job's claims hold (claims.csv), as {column: list or numpy "
           "array}: job, task, node, claim_template, request, driver, pool, device, admin_access. Empty lists when no job has a claim.")
      .def("event_log", [](const RunResult& r) { return r.event_log(); },
           "Event-log lines 'time_s,event,job,node,detail' (empty unless outputs.event_log is on).")
      .def(
          "write_outputs",
          [](const RunResult& r, const std::filesystem::path& dir) {
            return interruptible([&] {
              py::gil_scoped_release release;
              return scenario::write_outputs(r, dir);
            });
          },
          py::arg("dir"),
          "Writes summary.json, jobs.csv, timeseries.csv, report.md (and events.csv when enabled) into `dir` "
          "(created) atomically: into a staging folder first, then moved into place with summary.json last; "
          "files of an earlier run there that this run does not write are removed. Returns the paths. Raises "
          "OutputError (nothing that looks complete is left), KeyboardInterrupt on Ctrl-C (nothing written).")
      .def("format_summary", &scenario::format_summary, "The terminal summary (a few aligned lines).");

  m.def(
      "run_json",
      [](const std::string& text, const std::string& source, const std::filesystem::path& base_dir,
         std::optional<std::uint64_t> seed, const py::object& progress, bool exact_scan) {
        return run_released([&](const policies::Registry& reg) { return scenario::parse_scenario(std::string_view(text), source, base_dir, reg); }, seed,
                            progress, exact_scan);
      },
      py::arg("text"), py::arg("source") = "<string>", py::arg("base_dir") = std::filesystem::path("."),
      py::arg("seed") = py::none(), py::arg("progress") = py::none(), py::arg("exact_scan") = false,
      "Parses scenario JSON text and runs it. `source` names it in errors and outputs; relative paths "
      "(traces) resolve from `base_dir`; `seed` overrides the scenario's seed; `progress(fraction)` is "
      "called now and then; `exact_scan` scans every node for every decision (same outputs, slower). "
      "The GIL is released while loading and simulating.");
  m.def(
      "run_file",
      [](const std::filesystem::path& path, std::optional<std::uint64_t> seed, const py::object& progress, bool exact_scan) {
        return run_released([&](const policies::Registry& reg) { return scenario::load_scenario(path, reg); }, seed, progress,
                            exact_scan);
      },
      py::arg("path"), py::arg("seed") = py::none(), py::arg("progress") = py::none(), py::arg("exact_scan") = false,
      "Loads a scenario file and runs it (GIL released).");
  m.def(
      "run_demo",
      [](std::optional<std::uint64_t> seed, const py::object& progress, bool exact_scan) {
        return run_released([](const policies::Registry&) { return scenario::demo_scenario(); }, seed, progress, exact_scan);
      },
      py::arg("seed") = py::none(), py::arg("progress") = py::none(), py::arg("exact_scan") = false,
      "Runs the built-in demo: 1,000 nodes, 20,000 synthetic jobs (GIL released).");
  m.def(
      "read_json",
      [](const py::object& what, const std::string& source) {
        // A path (str or os.PathLike) to read, or JSON text (bytes); errors are ScenarioErrors
        // with an id and the line, as for scenario files (see gpusched/json_input.hpp).
        std::string text;
        std::string shown = source;
        if (py::isinstance<py::bytes>(what)) {
          text = what.cast<std::string>();
        } else {
          const auto path = what.cast<std::filesystem::path>();
          if (shown.empty()) shown = path.string();
          std::ifstream in(path, std::ios::binary);
          if (!in) throw_error(ErrorCode::kScenarioCannotOpen, {shown, 0, ""}, "cannot open the file");
          std::stringstream ss;
          ss << in.rdbuf();
          text = ss.str();
        }
        return json_to_py(parse_json(text, shown.empty() ? "<string>" : shown, kScenarioJsonErrors));
      },
      py::arg("what"), py::arg("source") = "",
      "Reads JSON as gpusched reads scenario files: a path, or bytes of JSON text. Returns dicts/lists; "
      "raises ScenarioError (202 syntax, 210 too deep, 211 number out of range) with the line.");
  m.def(
      "write_output_files",
      [](const std::filesystem::path& dir, const std::vector<std::pair<std::string, py::bytes>>& files) {
        std::vector<std::pair<std::string, std::string>> plain;
        plain.reserve(files.size());
        for (const auto& [name, data] : files) plain.emplace_back(name, std::string(data));
        return interruptible([&] {
          py::gil_scoped_release release;
          return scenario::write_output_files(dir, plain);
        });
      },
      py::arg("dir"), py::arg("files"),
      "Writes [(name, bytes)] (what RunResult.write_outputs wrote) into `dir` the same way, atomically; "
      "returns the paths. Raises OutputError.");
  m.def("request_interrupt", &request_interrupt,
        "Asks every simulation running in this process to stop (each raises KeyboardInterrupt in its thread) "
        "until clear_interrupt() is called.");
  m.def("clear_interrupt", &clear_interrupt, "Clears the flag request_interrupt() set.");
  m.def("interrupt_requested", &interrupt_requested, "True while the flag request_interrupt() set is up.");
  m.def("demo_scenario_text", [] { return std::string(scenario::demo_scenario_text()); },
        "The built-in demo scenario as JSON text.");

  m.def(
      "whatif_json",
      [](const std::filesystem::path& nodes, const std::filesystem::path& pods, const std::vector<std::string>& profiles,
         std::uint64_t seed, bool explain, bool as_gpu_mem, const std::string& gpu_mem_default,
         const std::map<std::string, std::string>& gpu_mem_by_image, const std::filesystem::path& events) {
        const auto registry = current_registry();
        return interruptible([&] {
          ReleasedGil release;
          scenario::WhatIfOptions o;
          o.nodes = nodes;
          o.pods = pods;
          o.profiles = profiles;
          o.seed = seed;
          o.explain = explain;
          o.as_gpu_mem = as_gpu_mem;
          o.events = events;
          if (!gpu_mem_default.empty()) o.gpu_mem_default_mib = parse_memory_mib(gpu_mem_default, {"gpu_mem_default", 0, ""});
          for (const auto& [image, q] : gpu_mem_by_image) o.gpu_mem_by_image[image] = parse_memory_mib(q, {"gpu_mem_by_image", 0, image});
          return scenario::whatif_json(scenario::whatif(o, registry)).dump();
        });
      },
      py::arg("nodes"), py::arg("pods"), py::arg("profiles"), py::arg("seed") = 42, py::arg("explain") = false,
      py::arg("as_gpu_mem") = false, py::arg("gpu_mem_default") = "", py::arg("gpu_mem_by_image") = std::map<std::string, std::string>{},
      py::arg("events") = std::filesystem::path{},
      "What-if on a kubectl snapshot (scenario::whatif): the pending pods under each profile, as JSON text "
      "{rows: [{profile, bound, pending, placed, kube_reasons, same_reason, gpu_alloc_pct_before, gpu_alloc_pct, frag_pct, "
      "frag_ratio_pct, pods}]}.");
  m.def(
      "validate_json",
      [](const std::string& text, const std::string& source, const std::filesystem::path& base_dir) {
        Checked c;
        const auto registry = current_registry();
        {
          py::gil_scoped_release release;
          const auto sc = scenario::parse_scenario(std::string_view(text), source, base_dir, registry);
          c = check_scenario(sc, source, registry);
        }
        return checked_dict(c);
      },
      py::arg("text"), py::arg("source") = "<string>", py::arg("base_dir") = std::filesystem::path("."),
      "Checks scenario JSON text without running it (cluster, profile, workload). Returns "
      "{kind, name, nodes, gpus, profile, jobs}; raises a GpuschedError subclass.");
  m.def(
      "validate_file",
      [](const std::filesystem::path& path) {
        Checked c;
        const auto registry = current_registry();
        {
          py::gil_scoped_release release;
          c = check_file(path, registry);
        }
        return checked_dict(c);
      },
      py::arg("path"),
      "Checks a scenario, trace (.csv / .jsonl) or profile file like `gpusched validate`. Returns a dict "
      "whose 'kind' is 'scenario', 'trace' or 'profile'; raises a GpuschedError subclass.");

  m.def(
      "cli_main",
      [](const std::vector<std::string>& args) {
        std::vector<std::string> argv_store;
        argv_store.reserve(args.size() + 1);
        argv_store.emplace_back("gpusched");
        argv_store.insert(argv_store.end(), args.begin(), args.end());
        std::vector<const char*> argv;
        for (const auto& a : argv_store) argv.push_back(a.c_str());
        int rc = 0;
        const auto registry = current_registry();
        {
          py::gil_scoped_release release;
          rc = scenario::cli_main(static_cast<int>(argv.size()), argv.data(), registry);
          std::cout.flush();
          std::cerr.flush();
          std::fflush(stdout);
          std::fflush(stderr);
        }
        return rc;
      },
      py::arg("args"),
      "The `gpusched` command line; `args` excludes the program name (like sys.argv[1:]). Returns the exit "
      "code: 0 success, 1 bad input, 2 wrong usage, 3 outputs not written. Writes to the process's "
      "stdout / stderr (file descriptors 1 and 2). The GIL is released.");
}

}  // namespace gpusched::python
