// Experiment bindings: the FGD paper's experiment (GIL released while it runs; its runs use
// their own thread pool). Results come back as plain columns for pandas.
#include <optional>
#include <string>
#include <vector>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <gpusched/scenario/experiment.hpp>

#include "bindings.hpp"

namespace gpusched::python {

void bind_experiments(py::module_& m) {
  m.def("fgd_policy_names", [] { return scenario::fgd_policy_names(); }, "The FGD experiment's policy names, paper order.");
  m.def("parse_seeds", [](const std::string& text) { return scenario::parse_seeds(text); }, py::arg("text"),
        "Seeds from '42', '42-51' or a comma list.");
  m.def("parse_fgd_policies", [](const std::string& text) { return scenario::parse_fgd_policies(text); }, py::arg("text"),
        "Policies from 'all' or a comma list.");
  m.def(
      "fgd_experiment",
      [](const std::filesystem::path& traces, const std::string& workload, const std::vector<std::string>& policies,
         const std::vector<std::uint64_t>& seeds, unsigned threads, double max_arrived_pct,
         const std::optional<std::filesystem::path>& out) {
        scenario::FgdExperiment cfg;
        cfg.traces = traces;
        cfg.workload = workload;
        cfg.policies = policies;
        cfg.seeds = seeds;
        cfg.threads = threads;
        cfg.max_arrived_pct = max_arrived_pct;
        scenario::FgdExperimentResult r;
        {
          py::gil_scoped_release release;
          r = scenario::run_fgd_experiment(cfg);
          if (out) (void)scenario::write_fgd_outputs(r, *out);
        }
        py::dict curve;
        std::vector<std::string> policy;
        std::vector<std::uint64_t> seed;
        std::vector<std::int32_t> arrived;
        std::vector<double> unalloc, frag, ratio;
        for (const auto& run : r.runs) {
          for (const auto& p : run.curve) {
            policy.push_back(run.policy);
            seed.push_back(run.seed);
            arrived.push_back(p.arrived_pct);
            unalloc.push_back(p.unallocated_pct);
            frag.push_back(p.frag_pct);
            ratio.push_back(p.frag_ratio_pct);
          }
        }
        curve["policy"] = policy;
        curve["seed"] = seed;
        curve["arrived_pct"] = arrived;
        curve["unallocated_pct"] = unalloc;
        curve["frag_pct"] = frag;
        curve["frag_ratio_pct"] = ratio;
        py::list runs;
        for (const auto& run : r.runs) {
          py::dict d;
          d["policy"] = run.policy;
          d["seed"] = run.seed;
          d["pods"] = run.pods;
          d["failed"] = run.failed;
          d["wall_s"] = run.wall_s;
          runs.append(d);
        }
        py::list summary;
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
          summary.append(d);
        }
        py::dict result;
        result["curve"] = curve;
        result["runs"] = runs;
        result["summary"] = summary;
        result["wall_s"] = r.wall_s;
        result["threads"] = r.threads;
        result["workload"] = r.workload_name;
        result["pod_source"] = r.pod_source;
        result["node_source"] = r.node_source;
        result["nodes"] = r.nodes;
        result["gpus"] = r.gpus;
        result["trace_pods"] = r.trace_pods;
        return result;
      },
      py::arg("traces"), py::arg("workload"), py::arg("policies"), py::arg("seeds"), py::arg("threads") = 0,
      py::arg("max_arrived_pct") = 130.0, py::arg("out") = py::none(),
      "Runs the FGD paper's experiment; returns {'curve': columns, 'runs': [...], 'summary': [...], ...}.");
}

}  // namespace gpusched::python
