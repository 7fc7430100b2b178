// Experiment bindings: the FGD paper's experiment (GIL released while it runs; its runs use
// their own thread pool), and its pieces for running elsewhere: the inputs (FgdInputs), one
// (policy, seed) run (fgd_run, plain data that pickles) and the assembly of gathered runs
// (fgd_assemble, the same medians and files as the built-in path). Results come back as plain
// columns for pandas.
#include <chrono>
#include <future>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <gpusched/scenario/experiment.hpp>
#include <gpusched/scenario/tiresias.hpp>

#include "bindings.hpp"

namespace gpusched::python {
namespace {

using scenario::CurvePoint;
using scenario::FgdExperiment;
using scenario::FgdExperimentResult;
using scenario::FgdInputs;
using scenario::FgdRun;

/// Thrown through the experiment's thread pool to stop it when the progress callback raised.
struct ProgressAbort {};

FgdExperiment make_config(const std::filesystem::path& traces, const std::string& workload,
                          const std::vector<std::string>& policies, const std::vector<std::uint64_t>& seeds,
                          unsigned threads, double max_arrived_pct) {
  FgdExperiment cfg;
  cfg.traces = traces;
  cfg.workload = workload;
  cfg.policies = policies;
  cfg.seeds = seeds;
  cfg.threads = threads;
  cfg.max_arrived_pct = max_arrived_pct;
  return cfg;
}

/// A run's scalar columns: policy, seed, pods, failed, wall_s.
py::dict run_row(const FgdRun& run) {
  py::dict d;
  d["policy"] = run.policy;
  d["seed"] = run.seed;
  d["pods"] = run.pods;
  d["failed"] = run.failed;
  d["wall_s"] = run.wall_s;
  return d;
}

/// Curve points as columns (arrived_pct, unallocated_pct, frag_pct, frag_ratio_pct).
struct CurveColumns {
  std::vector<std::int32_t> arrived;
  std::vector<double> unalloc, frag, ratio;
  void add(const CurvePoint& p) {
    arrived.push_back(p.arrived_pct);
    unalloc.push_back(p.unallocated_pct);
    frag.push_back(p.frag_pct);
    ratio.push_back(p.frag_ratio_pct);
  }
  void write(py::dict& d) const {
    d["arrived_pct"] = arrived;
    d["unallocated_pct"] = unalloc;
    d["frag_pct"] = frag;
    d["frag_ratio_pct"] = ratio;
  }
};

/// One run as plain Python data: policy, seed, pods, failed, wall_s and its curve as columns.
py::dict run_to_py(const FgdRun& run) {
  CurveColumns cols;
  for (const auto& p : run.curve) cols.add(p);
  py::dict curve;
  cols.write(curve);
  py::dict d = run_row(run);
  d["curve"] = curve;
  return d;
}

/// The inverse of run_to_py (doubles round-trip exactly through Python floats).
FgdRun run_from_py(const py::handle& h) {
  const auto d = h.cast<py::dict>();
  FgdRun run;
  run.policy = d["policy"].cast<std::string>();
  run.seed = d["seed"].cast<std::uint64_t>();
  run.pods = d["pods"].cast<std::int64_t>();
  run.failed = d["failed"].cast<std::int64_t>();
  run.wall_s = d["wall_s"].cast<double>();
  const auto curve = d["curve"].cast<py::dict>();
  const auto arrived = curve["arrived_pct"].cast<std::vector<std::int32_t>>();
  const auto unalloc = curve["unallocated_pct"].cast<std::vector<double>>();
  const auto frag = curve["frag_pct"].cast<std::vector<double>>();
  const auto ratio = curve["frag_ratio_pct"].cast<std::vector<double>>();
  if (unalloc.size() != arrived.size() || frag.size() != arrived.size() || ratio.size() != arrived.size()) {
    throw py::value_error("fgd_assemble: a run's curve columns differ in length");
  }
  run.curve.resize(arrived.size());
  for (std::size_t i = 0; i < arrived.size(); ++i) run.curve[i] = CurvePoint{arrived[i], unalloc[i], frag[i], ratio[i]};
  return run;
}

/// The results of one or more workloads as {'curve': columns, 'runs': [...], 'summary': [...],
/// ...}: rows workload after workload, each with its `workload`.
py::dict result_to_py(std::span<const FgdExperimentResult> rs, double wall_s, unsigned threads) {
  py::dict curve;
  std::vector<std::string> policy, workload;
  std::vector<std::uint64_t> seed;
  CurveColumns cols;
  py::list runs, summary;
  std::vector<std::string> names, sources;
  std::vector<std::int64_t> trace_pods;
  for (const auto& r : rs) {
    names.push_back(r.workload_name);
    sources.push_back(r.pod_source);
    trace_pods.push_back(r.trace_pods);
    for (const auto& run : r.runs) {
      for (const auto& p : run.curve) {
        policy.push_back(run.policy);
        seed.push_back(run.seed);
        cols.add(p);
        workload.push_back(r.workload_name);
      }
      py::dict d = run_row(run);
      d["workload"] = r.workload_name;
      runs.append(d);
    }
    for (const auto& s : r.summary) {
      py::dict d;
      d["policy"] = s.policy;
      d["seeds"] = s.seeds;
      d["unallocated_pct_100"] = s.unallocated_pct_100;
      d["unallocated_pct_130"] = s.unallocated_pct_130;
      d["frag_pct_80"] = s.frag_pct_80;
      d["paper_unallocated_pct_100"] = s.paper_unallocated_pct_100;
      d["paper_unallocated_pct_130"] = s.paper_unallocated_pct_130;
      d["paper_frag_pct_80"] = s.paper_frag_pct_80;
      d["workload"] = r.workload_name;
      summary.append(d);
    }
  }
  curve["policy"] = policy;
  curve["seed"] = seed;
  cols.write(curve);
  curve["workload"] = workload;
  const auto& first = rs.front();
  py::dict result;
  result["curve"] = curve;
  result["runs"] = runs;
  result["summary"] = summary;
  result["wall_s"] = wall_s;
  result["threads"] = threads;
  // One workload: its name, pod list and pod count; several: the sweep's name and lists.
  result["workload"] = scenario::fgd_sweep_name(names);
  result["workloads"] = names;
  if (rs.size() == 1) {
    result["pod_source"] = first.pod_source;
    result["trace_pods"] = first.trace_pods;
  } else {
    result["pod_source"] = sources;
    result["trace_pods"] = trace_pods;
  }
  result["node_source"] = first.node_source;
  result["nodes"] = first.nodes;
  result["gpus"] = first.gpus;
  return result;
}

std::shared_ptr<FgdInputs> load_inputs(const FgdExperiment& cfg) {
  py::gil_scoped_release release;
  return std::make_shared<FgdInputs>(scenario::load_fgd_inputs(cfg));
}

}  // namespace

void bind_experiments(py::module_& m) {
  m.def("fgd_policy_names", [] { return scenario::fgd_policy_names(); }, "The FGD experiment's policy names, paper order.");
  m.def("parse_seeds", [](const std::string& text) { return scenario::parse_seeds(text); }, py::arg("text"),
        "Seeds from '42', '42-51' or a comma list.");
  m.def("fgd_workload_names", [] { return scenario::fgd_workload_names(); },
        "The openb pod-list variants the FGD experiment knows (24), as `workload='all'` runs them.");
  m.def("parse_fgd_workloads", [](const std::string& text) { return scenario::parse_fgd_workloads(text); }, py::arg("text"),
        "Workloads from 'all' or a comma list of variant names and pod-list paths.");
  m.def("parse_fgd_policies", [](const std::string& text) { return scenario::parse_fgd_policies(text); }, py::arg("text"),
        "Policies from 'all' or a comma list.");
  m.def(
      "fgd_experiment",
      [](const std::filesystem::path& traces, const std::vector<std::string>& workloads, const std::vector<std::string>& policies,
         const std::vector<std::uint64_t>& seeds, unsigned threads, double max_arrived_pct,
         const std::optional<std::filesystem::path>& out, const py::object& progress) {
        const FgdExperiment cfg = make_config(traces, "", policies, seeds, threads, max_arrived_pct);
        // progress(done, total) runs on a pool thread (calls are serialised by the experiment),
        // with the GIL taken for the call; an exception it raises stops the experiment.
        std::optional<py::error_already_set> py_error;
        scenario::ExperimentProgress on_progress;
        if (!progress.is_none()) {
          on_progress = [&](std::size_t done, std::size_t total) {
            py::gil_scoped_acquire gil;
            try {
              progress(done, total);
            } catch (py::error_already_set& e) {
              if (!py_error) py_error.emplace(std::move(e));
              throw ProgressAbort{};
            }
          };
        }
        // The runs go on a thread of their own; this one waits, and on Python's main thread runs
        // the signal handlers every 50 ms: Ctrl-C raises the process-wide interrupt flag, which
        // stops every run of the experiment, then raises KeyboardInterrupt here.
        scenario::FgdSweepResult r;
        SignalPoll signals;
        bool interrupted = false;
        try {
          py::gil_scoped_release release;
          auto done = std::async(std::launch::async, [&] {
            auto result = scenario::run_fgd_experiments(cfg, workloads, on_progress);
            if (out) (void)scenario::write_fgd_outputs(result.workloads, *out);
            return result;
          });
          while (done.wait_for(std::chrono::milliseconds(50)) != std::future_status::ready) {
            if (!interrupted && signals.check()) {
              interrupted = true;
              request_interrupt();
            }
          }
          try {
            r = done.get();
          } catch (...) {
            if (interrupted) clear_interrupt();
            throw;
          }
          if (interrupted) clear_interrupt();
        } catch (const ProgressAbort&) {
          throw std::move(*py_error);   // the GIL is held again here
        } catch (const InterruptedError&) {
          signals.raise_pending();
          throw;
        }
        if (interrupted) signals.raise_pending();   // finished before it saw the flag: still Ctrl-C
        return result_to_py(r.workloads, r.wall_s, r.threads);
      },
      py::arg("traces"), py::arg("workloads"), py::arg("policies"), py::arg("seeds"), py::arg("threads") = 0,
      py::arg("max_arrived_pct") = 130.0, py::arg("out") = py::none(), py::arg("progress") = py::none(),
      "Runs the FGD paper's experiment for each workload (variant names or pod-list paths, all runs on one pool); "
      "returns {'curve': columns, 'runs': [...], 'summary': [...], ...}, rows workload after workload. "
      "`progress(done, total)` is called after each run (from a worker thread, GIL held).");

  py::class_<FgdInputs, std::shared_ptr<FgdInputs>>(
      m, "FgdInputs",
      "The FGD experiment's node and pod lists, read once and shared read-only by runs (thread-safe).\n\n"
      "Example: ``inp = FgdInputs('../shared/traces', 'default'); fgd_run(inp, 'fgd', 42)``")
      .def(py::init([](const std::filesystem::path& traces, const std::string& workload) {
             FgdExperiment cfg;
             cfg.traces = traces;
             cfg.workload = workload;
             return load_inputs(cfg);
           }),
           py::arg("traces"), py::arg("workload") = "default",
           "Finds and reads the openb node and pod lists (TraceError naming a missing file).")
      .def_property_readonly("workload", [](const FgdInputs& in) { return in.workload_name; })
      .def_property_readonly("pod_source", [](const FgdInputs& in) { return in.pod_source.string(); })
      .def_property_readonly("node_source", [](const FgdInputs& in) { return in.node_source.string(); })
      .def_property_readonly("nodes", [](const FgdInputs& in) { return in.nodes.size(); })
      .def_property_readonly("gpus",
                             [](const FgdInputs& in) {
                               std::size_t n = 0;
                               for (const auto& node : in.nodes) n += node.gpus.size();
                               return n;
                             })
      .def_property_readonly("trace_pods", [](const FgdInputs& in) { return in.pods.size(); });

  m.def(
      "fgd_prepare",
      [](const std::filesystem::path& traces, const std::string& workload, const std::vector<std::string>& policies,
         const std::vector<std::uint64_t>& seeds, double max_arrived_pct) {
        const FgdExperiment cfg = make_config(traces, workload, policies, seeds, 0, max_arrived_pct);
        scenario::check_fgd_experiment(cfg);
        return load_inputs(cfg);
      },
      py::arg("traces"), py::arg("workload"), py::arg("policies"), py::arg("seeds"), py::arg("max_arrived_pct") = 130.0,
      "Checks an experiment's arguments as fgd_experiment does and reads its inputs (an FgdInputs).");

  m.def(
      "fgd_run",
      [](const FgdInputs& in, const std::string& policy, std::uint64_t seed, double max_arrived_pct) {
        const auto names = scenario::parse_fgd_policies(policy);   // ScenarioError for an unknown name
        if (names.size() != 1) throw py::value_error("fgd_run takes one policy, got \"" + policy + "\"");
        const FgdRun run = interruptible([&] {
          py::gil_scoped_release release;
          return scenario::run_fgd_once(in, names.front(), seed, max_arrived_pct);
        });
        return run_to_py(run);
      },
      py::arg("inputs"), py::arg("policy"), py::arg("seed"), py::arg("max_arrived_pct") = 130.0,
      "One (policy, seed) run of the FGD protocol (GIL released): {'policy', 'seed', 'pods', 'failed', 'wall_s', "
      "'curve': {'arrived_pct', 'unallocated_pct', 'frag_pct', 'frag_ratio_pct'}}, plain data that pickles.");

  m.def(
      "fgd_assemble",
      [](const std::vector<std::shared_ptr<FgdInputs>>& inputs, const std::filesystem::path& traces,
         const std::vector<std::string>& workloads, const std::vector<std::string>& policies,
         const std::vector<std::uint64_t>& seeds, double max_arrived_pct, const py::list& runs, double wall_s, unsigned threads,
         const std::optional<std::filesystem::path>& out) {
        if (inputs.size() != workloads.size() || inputs.empty()) {
          throw py::value_error("fgd_assemble: one FgdInputs per workload, and at least one");
        }
        const std::size_t per = policies.size() * seeds.size();
        if (static_cast<std::size_t>(py::len(runs)) != per * workloads.size()) {
          throw py::value_error("fgd_assemble: " + std::to_string(py::len(runs)) + " runs given for " +
                                std::to_string(workloads.size()) + " workloads x " + std::to_string(policies.size()) +
                                " policies x " + std::to_string(seeds.size()) + " seeds");
        }
        std::vector<FgdRun> gathered;
        gathered.reserve(runs.size());
        for (const auto& h : runs) gathered.push_back(run_from_py(h));
        std::vector<FgdExperimentResult> rs;
        {
          py::gil_scoped_release release;
          for (std::size_t w = 0; w < workloads.size(); ++w) {
            FgdExperiment cfg = make_config(traces, workloads[w], policies, seeds, threads, max_arrived_pct);
            std::vector<FgdRun> mine(std::make_move_iterator(gathered.begin() + static_cast<std::ptrdiff_t>(w * per)),
                                     std::make_move_iterator(gathered.begin() + static_cast<std::ptrdiff_t>((w + 1) * per)));
            rs.push_back(scenario::assemble_fgd_result(cfg, *inputs[w], std::move(mine)));
            rs.back().wall_s = wall_s;
            rs.back().threads = threads;
          }
          if (out) (void)scenario::write_fgd_outputs(rs, *out);
        }
        return result_to_py(rs, wall_s, threads);
      },
      py::arg("inputs"), py::arg("traces"), py::arg("workloads"), py::arg("policies"), py::arg("seeds"),
      py::arg("max_arrived_pct"), py::arg("runs"), py::arg("wall_s"), py::arg("threads"), py::arg("out") = py::none(),
      "Assembles fgd_run results (one FgdInputs per workload; runs workload-major, then policy-major: "
      "runs[(w * len(policies) + p) * len(seeds) + s]) into what fgd_experiment returns: the same medians, computed by "
      "the same C++; writes the same files to `out` when given.");

  m.def("tiresias_compat_policies", [] { return scenario::tiresias_compat_policies(); },
        "The policies of the Tiresias compat mode: fifo, fjf, sjf, srtf, srsf, las, 2d-las.");
  m.def(
      "tiresias_compat",
      [](const std::filesystem::path& trace, const std::filesystem::path& cluster, const std::vector<std::string>& policies,
         double starvation_k, const std::vector<std::int64_t>& queue_limits) {
        std::vector<std::string> policy, id, stuck_policy;
        std::vector<std::int64_t> gpus, submit, start, end, duration, pending, preempt, resume, promote;
        std::vector<bool> completed, stuck;
        std::int64_t total = 0;
        {
          py::gil_scoped_release release;
          const auto jobs = scenario::read_tiresias_compat_jobs(trace);
          total = scenario::read_tiresias_compat_gpus(cluster);
          for (const auto& name : policies) {
            scenario::TiresiasCompatOptions o;
            o.policy = name;
            o.starvation_k = starvation_k;
            o.queue_limits = queue_limits;
            const auto run = scenario::run_tiresias_compat(jobs, total, o);
            stuck_policy.push_back(name);
            stuck.push_back(run.stuck);
            for (const auto& j : run.jobs) {
              policy.push_back(name);
              id.push_back(j.id);
              gpus.push_back(j.gpus);
              submit.push_back(j.submit);
              start.push_back(j.start);
              end.push_back(j.end);
              duration.push_back(j.duration);
              pending.push_back(j.pending);
              preempt.push_back(j.preemptions);
              resume.push_back(j.resumptions);
              promote.push_back(j.promotions);
              completed.push_back(j.completed);
            }
          }
        }
        py::dict jobs_cols;
        jobs_cols["policy"] = policy;
        jobs_cols["job_id"] = id;
        jobs_cols["num_gpu"] = gpus;
        jobs_cols["submit_time"] = submit;
        jobs_cols["start_time"] = start;
        jobs_cols["end_time"] = end;
        jobs_cols["duration"] = duration;
        jobs_cols["pending_time"] = pending;
        jobs_cols["preempt"] = preempt;
        jobs_cols["resume"] = resume;
        jobs_cols["promote"] = promote;
        jobs_cols["completed"] = completed;
        py::dict runs;
        runs["policy"] = stuck_policy;
        runs["stuck"] = stuck;
        py::dict out;
        out["jobs"] = jobs_cols;
        out["runs"] = runs;
        out["gpus"] = total;
        return out;
      },
      py::arg("trace"), py::arg("cluster"), py::arg("policies"), py::arg("starvation_k") = 0.0,
      py::arg("queue_limits") = std::vector<std::int64_t>{3250, 7200},
      "Tiresias compat mode (docs/tiresias.md): each policy on the trace and cluster spec; per-job columns "
      "(start/end -1 when it never started/completed) and whether each run was left stuck.");

  m.def("tiresias_engine_policies", [] { return scenario::tiresias_engine_policies(); },
        "The policies the Tiresias experiment runs on gpusched's engine: the compat ones and gittins.");
  m.def(
      "tiresias_run",
      [](const std::filesystem::path& trace, const std::filesystem::path& cluster, const std::string& policy,
         const std::vector<double>& thresholds, double starvation_k, const std::string& within_queue, double quantum,
         const std::string& distribution, const std::string& placement, double restart_overhead_s) {
        scenario::TiresiasEngineOptions o;
        o.policy = policy;
        o.thresholds = thresholds;
        o.starvation_k = starvation_k;
        o.within_queue = within_queue;
        o.quantum = quantum;
        o.distribution = distribution;
        o.placement = placement;
        o.restart_overhead_s = restart_overhead_s;
        return interruptible([&] {
          py::gil_scoped_release release;
          return scenario::run(scenario::tiresias_scenario(trace, cluster, o));
        });
      },
      py::arg("trace"), py::arg("cluster"), py::arg("policy"), py::arg("thresholds") = std::vector<double>{3250, 7200},
      py::arg("starvation_k") = 0.0, py::arg("within_queue") = "running-first", py::arg("quantum") = 3600.0,
      py::arg("distribution") = "", py::arg("placement") = "binpack", py::arg("restart_overhead_s") = 0.0,
      "One Tiresias policy on gpusched's engine (scenario::tiresias_scenario): the preemptive queueing mode with "
      "the profile's placement (or `placement='count'`). Returns a RunResult (GIL released while it runs).");
}

}  // namespace gpusched::python
