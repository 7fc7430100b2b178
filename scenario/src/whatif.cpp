// What-if on a Kubernetes cluster snapshot (see gpusched/scenario/whatif.hpp).
#include <gpusched/scenario/whatif.hpp>

#include <algorithm>
#include <cstdio>
#include <sstream>

#include <gpusched/scenario/scenario.hpp>
#include <gpusched/sim/engine.hpp>
#include <gpusched/sim/outputs.hpp>

namespace gpusched::scenario {

namespace {

/// The snapshot as a scenario: nodes imported from kubectl's list, pods as the trace.
Scenario snapshot_scenario(const WhatIfOptions& o, const policies::Registry& registry) {
  const auto nodes = std::filesystem::absolute(o.nodes);
  const auto pods = std::filesystem::absolute(o.pods);
  const nlohmann::json doc = {
      {"schema_version", 1},
      {"name", "whatif"},
      {"seed", o.seed},
      {"cluster", {{"import", nlohmann::json::array({{{"path", nodes.string()}, {"format", "kubectl-nodes"}}})}}},
      {"workload", {{"trace", {{"path", pods.string()}, {"format", "kubectl-pods"}}}}},
      {"outputs", {{"fragmentation", "on"}}},
  };
  Scenario sc = parse_scenario(doc, "whatif (" + nodes.string() + ", " + pods.string() + ")", ".", registry);
  sc.keep_unplaceable = true;
  return sc;
}

double gpu_alloc_pct(const ClusterState& c) {
  const auto& t = c.totals();
  return t.gpu_milli > 0 ? 100.0 * static_cast<double>(t.gpu_used_milli) / static_cast<double>(t.gpu_milli) : 0.0;
}

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

}  // namespace

std::vector<WhatIfRow> whatif(const WhatIfOptions& options, const policies::Registry& registry) {
  if (options.profiles.empty()) throw_error(ErrorCode::kProfileUnknownProfile, {"--profiles", 0, ""}, "no profile given");
  const Scenario base = snapshot_scenario(options, registry);
  // Allocation before: the bound pods alone (pinned, so any profile places them alike).
  double before = 0;
  {
    Scenario sc = base;
    std::erase_if(sc.jobs, [](const JobSpec& j) { return !j.constraints.bound; });
    sc.outputs.fragmentation = "off";
    before = gpu_alloc_pct(run(sc, std::nullopt, {}, registry).engine().cluster());
  }
  std::vector<WhatIfRow> rows;
  for (const auto& profile : options.profiles) {
    Scenario sc = base;
    use_profile(sc, profile, registry);
    const RunResult r = run(sc, std::nullopt, {}, registry);
    const auto& engine = r.engine();
    const auto workload = engine.workload();
    const auto jobs = r.jobs();
    WhatIfRow row;
    row.profile = r.profile_name();
    row.gpu_alloc_pct_before = before;
    row.gpu_alloc_pct = gpu_alloc_pct(engine.cluster());
    if (const auto& f = r.fragmentation(); !f.empty()) {
      row.frag_pct = f.back().frag_pct;
      row.frag_ratio_pct = f.back().frag_ratio_pct;
    }
    for (std::size_t i = 0; i < workload.size(); ++i) {
      if (workload[i].constraints.bound) {
        ++row.bound;
        continue;
      }
      const auto& j = jobs[i];
      WhatIfPod pod;
      pod.pod = j.job;
      pod.priority = j.priority;
      pod.placed = j.start_s.has_value();
      if (pod.placed) {
        pod.placement = j.placement;
        pod.node = j.placement.substr(0, j.placement.find('['));
      } else {
        pod.reason = j.reason;
      }
      ++row.pending;
      row.placed += pod.placed ? 1 : 0;
      row.pods.push_back(std::move(pod));
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

nlohmann::json whatif_json(const std::vector<WhatIfRow>& rows) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& r : rows) {
    nlohmann::json pods = nlohmann::json::array();
    for (const auto& p : r.pods) {
      pods.push_back({{"pod", p.pod}, {"priority", p.priority}, {"placed", p.placed}, {"node", p.node},
                      {"placement", p.placement}, {"reason", p.reason}});
    }
    out.push_back({{"profile", r.profile},
                   {"bound", r.bound},
                   {"pending", r.pending},
                   {"placed", r.placed},
                   {"gpu_alloc_pct_before", r.gpu_alloc_pct_before},
                   {"gpu_alloc_pct", r.gpu_alloc_pct},
                   {"frag_pct", r.frag_pct},
                   {"frag_ratio_pct", r.frag_ratio_pct},
                   {"pods", std::move(pods)}});
  }
  return {{"rows", std::move(out)}};
}

std::string format_whatif(const std::vector<WhatIfRow>& rows, bool pods) {
  std::size_t width = 7;
  for (const auto& r : rows) width = std::max(width, r.profile.size());
  auto pad = [](std::string s, std::size_t w) {
    if (s.size() < w) s.append(w - s.size(), ' ');
    return s;
  };
  std::ostringstream out;
  if (!rows.empty()) {
    out << rows.front().bound << " bound pods keep their nodes (GPU alloc " << fixed(rows.front().gpu_alloc_pct_before, 1)
        << "%); " << rows.front().pending << " pending pods tried under each profile\n\n";
  }
  out << pad("profile", width) << "  placed    GPU alloc after  frag after (of GPUs / of idle)\n";
  for (const auto& r : rows) {
    out << pad(r.profile, width) << "  " << pad(std::to_string(r.placed) + "/" + std::to_string(r.pending), 8) << "  "
        << pad(fixed(r.gpu_alloc_pct, 1) + "%", 15) << "  " << fixed(r.frag_pct, 1) << "% / " << fixed(r.frag_ratio_pct, 1)
        << "%\n";
  }
  if (pods) {
    for (const auto& r : rows) {
      out << "\n" << r.profile << ":\n";
      for (const auto& p : r.pods) {
        out << "  " << p.pod << "  " << (p.placed ? "-> " + p.placement : "pending: " + p.reason) << "\n";
      }
    }
  }
  return out.str();
}

}  // namespace gpusched::scenario
