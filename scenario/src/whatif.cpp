// What-if on a Kubernetes cluster snapshot (see gpusched/scenario/whatif.hpp).
#include <gpusched/scenario/whatif.hpp>

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>

#include <gpusched/json_input.hpp>
#include <gpusched/quantity.hpp>
#include <gpusched/scenario/scenario.hpp>
#include <gpusched/sim/engine.hpp>
#include <gpusched/sim/outputs.hpp>

#include "kube_pod_objects.hpp"

namespace gpusched::scenario {

namespace {

constexpr const char* kGpuMemoryAnnotation = "gpusched.io/gpu-memory";

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

/// Replaces each one-whole-GPU request with a GPU-memory share (WhatIfOptions::as_gpu_mem).
std::int64_t as_gpu_memory(const WhatIfOptions& o, Workload& jobs) {
  // The importer keeps neither annotations nor images: they are read here by pod name.
  struct Pod {
    std::string annotation, image;
  };
  std::map<std::string, Pod> pods;
  for_each_pod_object(o.pods, [&](const nlohmann::json& item, const std::string& key) {
    const auto& meta = item["metadata"];
    Pod p;
    if (meta.contains("annotations") && meta["annotations"].is_object()) {
      const auto& a = meta["annotations"];
      if (a.contains(kGpuMemoryAnnotation) && a[kGpuMemoryAnnotation].is_string()) p.annotation = a[kGpuMemoryAnnotation].get<std::string>();
    }
    if (item.contains("spec") && item["spec"].is_object() && item["spec"].contains("containers") && item["spec"]["containers"].is_array() &&
        !item["spec"]["containers"].empty() && item["spec"]["containers"][0].is_object() &&
        item["spec"]["containers"][0].contains("image") && item["spec"]["containers"][0]["image"].is_string()) {
      p.image = item["spec"]["containers"][0]["image"].get<std::string>();
    }
    pods[key] = p;
  });
  std::int64_t converted = 0;
  for (auto& j : jobs) {
    auto& g = j.request.gpu;
    if (g.mode != GpuMode::kWhole || g.count != 1 || g.shared_name || !g.resource_name.empty()) continue;
    std::int64_t mib = o.gpu_mem_default_mib;
    const auto it = pods.find(j.name);
    if (it != pods.end()) {
      const auto& p = it->second;
      if (!p.annotation.empty()) {
        mib = parse_memory_mib(p.annotation, {o.pods.string(), j.source_line, std::string("metadata.annotations.") + kGpuMemoryAnnotation});
      } else if (!p.image.empty()) {
        auto image = o.gpu_mem_by_image.find(p.image);
        if (image == o.gpu_mem_by_image.end()) {
          // Without a digest or tag (the tag's ':' comes after the last '/', a registry port's before it).
          std::string repo = p.image.substr(0, p.image.find('@'));
          if (const auto colon = repo.rfind(':'); colon != std::string::npos && colon > repo.rfind('/')) repo.resize(colon);
          image = o.gpu_mem_by_image.find(repo);
        }
        if (image != o.gpu_mem_by_image.end()) mib = image->second;
      }
    }
    if (mib <= 0) continue;
    g.mode = GpuMode::kShared;
    g.count = 1;
    g.milli = 0;
    g.memory_mib = mib;
    g.names_gpu = false;   // a gpushare pod asks aliyun.com/gpu-mem alone
    ++converted;
  }
  return converted;
}

double gpu_memory_alloc_pct(const ClusterState& c) {
  std::int64_t total = 0, used = 0;
  for (const auto& g : c.all_gpus()) {
    const std::int64_t cap = c.catalog()[g.model].memory_mib;
    total += cap;
    used += cap - g.memory_free_mib;
  }
  return total > 0 ? 100.0 * static_cast<double>(used) / static_cast<double>(total) : 0.0;
}


/// The latest FailedScheduling message per pod ("namespace/name") in a `kubectl get events -o
/// json` list. core/v1 Events name the pod in involvedObject and say it in message; events.k8s.io
/// /v1 ones in regarding and note. The latest: by lastTimestamp / eventTime / series
/// lastObservedTime (RFC 3339 text), later items winning ties.
std::map<std::string, std::string> failed_scheduling(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw_error(ErrorCode::kTraceCannotOpen, {path.string(), 0, ""}, "cannot open the events file (--events)");
  std::stringstream text;
  text << in.rdbuf();
  const auto doc = parse_json(text.str(), path.string(), kTraceJsonErrors);
  const nlohmann::json* items = &doc;
  nlohmann::json single = nlohmann::json::array();
  if (doc.is_object() && doc.contains("items")) {
    items = &doc["items"];
  } else {
    single.push_back(doc);
    items = &single;
  }
  if (!items->is_array()) throw_error(ErrorCode::kTraceBadValue, {path.string(), 0, "items"}, "expected a list of Event objects");
  auto text_of = [](const nlohmann::json& o, std::initializer_list<const char*> keys) {
    for (const char* k : keys) {
      const auto it = o.find(k);
      if (it != o.end() && it->is_string() && !it->get_ref<const std::string&>().empty()) return it->get<std::string>();
    }
    return std::string{};
  };
  std::map<std::string, std::pair<std::string, std::string>> latest;   // pod -> (time, message)
  for (std::size_t i = 0; i < items->size(); ++i) {
    const auto& e = (*items)[i];
    if (!e.is_object() || text_of(e, {"reason"}) != "FailedScheduling") continue;
    const auto object = e.contains("involvedObject") ? e.find("involvedObject") : e.find("regarding");
    if (object == e.end() || !object->is_object() || text_of(*object, {"kind"}) != "Pod") continue;
    const auto name = text_of(*object, {"name"});
    if (name.empty()) continue;
    const auto ns = text_of(*object, {"namespace"});
    std::string when = text_of(e, {"lastTimestamp", "deprecatedLastTimestamp", "eventTime"});
    if (const auto series = e.find("series"); series != e.end() && series->is_object()) {
      if (const auto t = text_of(*series, {"lastObservedTime"}); !t.empty()) when = t;
    }
    const auto message = text_of(e, {"message", "note"});
    auto& slot = latest[(ns.empty() ? "default" : ns) + "/" + name];
    if (slot.second.empty() || when >= slot.first) slot = {when, message};
  }
  std::map<std::string, std::string> out;
  for (auto& [pod, tm] : latest) out[pod] = std::move(tm.second);
  return out;
}

}  // namespace

std::vector<WhatIfRow> whatif(const WhatIfOptions& options, const policies::Registry& registry) {
  if (options.profiles.empty()) throw_error(ErrorCode::kProfileUnknownProfile, {"--profiles", 0, ""}, "no profile given");
  Scenario base = snapshot_scenario(options, registry);
  // The question is about this instant: no pod finishes (a gpusched.io/duration annotation would
  // free its devices later and let pending pods in on a retry).
  for (auto& j : base.jobs) j.duration = SimTime::forever();
  const std::int64_t converted = options.as_gpu_mem ? as_gpu_memory(options, base.jobs) : 0;
  const auto kube = options.events.empty() ? std::map<std::string, std::string>{} : failed_scheduling(options.events);
  // Allocation before: the bound pods alone (pinned, so any profile places them alike).
  double before = 0;
  {
    Scenario sc = base;
    std::erase_if(sc.jobs, [](const JobSpec& j) { return !j.constraints.bound; });
    sc.outputs.fragmentation = "off";
    before = allocated_gpu_pct(run(sc, std::nullopt, {}, registry).engine().cluster());
  }
  std::vector<WhatIfRow> rows;
  for (const auto& profile : options.profiles) {
    Scenario sc = base;
    use_profile(sc, profile, registry);
    sc.explain = options.explain;
    const RunResult r = run(sc, std::nullopt, {}, registry);
    // Each job's last decision (a pod is tried again when capacity frees up; the last try is
    // the one whose outcome stands).
    std::vector<const policies::DecisionExplanation*> last(r.engine().workload().size(), nullptr);
    std::vector<const policies::DecisionExplanation*> last_full(last.size(), nullptr);
    for (const auto& e : r.explanations()) {
      if (e.job.value >= last.size()) continue;
      last[e.job.value] = &e;
      if (!e.narrowed) last_full[e.job.value] = &e;
    }
    const auto& engine = r.engine();
    const auto workload = engine.workload();
    const auto jobs = r.jobs();
    WhatIfRow row;
    row.profile = r.profile_name();
    row.gpu_alloc_pct_before = before;
    row.gpu_alloc_pct = allocated_gpu_pct(engine.cluster());
    row.gpu_memory_alloc_pct = gpu_memory_alloc_pct(engine.cluster());
    row.gpus_busy = engine.cluster().totals().gpus_busy;
    row.converted = converted;
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
      if (const auto k = kube.find(pod.pod); k != kube.end()) {
        pod.kube_reason = k->second;
        ++row.kube_reasons;
        row.same_reason += !pod.placed && pod.reason == pod.kube_reason ? 1 : 0;
      }
      // A placed pod: the try that placed it. A pending pod: its last full try, whose
      // diagnosis is the reason it reports (a narrowed retry keeps it).
      if (const auto* e = pod.placed ? last[i] : last_full[i]) {
        if (!e->pre_filter.ok()) pod.pre_filter = std::string(e->pre_filter.plugin) + ": " + std::string(e->pre_filter.reason);
        for (const auto& v : e->nodes) {
          WhatIfNode n;
          n.node = engine.cluster().spec(v.node).name;
          n.feasible = v.rejected.ok();
          if (!n.feasible) n.filter = std::string(v.rejected.plugin);
          for (const auto reason : v.reasons) n.reasons.emplace_back(reason);
          for (std::size_t k = 0; k < v.raw.size(); ++k) n.scores.push_back({e->score_plugins[k], v.raw[k], v.normalized[k], e->weights[k]});
          n.total = v.total;
          pod.nodes.push_back(std::move(n));
        }
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
      nlohmann::json pod = {{"pod", p.pod}, {"priority", p.priority}, {"placed", p.placed}, {"node", p.node},
                            {"placement", p.placement}, {"reason", p.reason}};
      if (!p.kube_reason.empty()) pod["kube_reason"] = p.kube_reason;
      if (!p.nodes.empty() || !p.pre_filter.empty()) {
        nlohmann::json nodes = nlohmann::json::array();
        for (const auto& n : p.nodes) {
          nlohmann::json scores = nlohmann::json::array();
          for (const auto& s : n.scores) {
            scores.push_back({{"plugin", s.plugin}, {"raw", s.raw}, {"normalized", s.normalized}, {"weight", s.weight}});
          }
          nodes.push_back({{"node", n.node}, {"feasible", n.feasible}, {"filter", n.filter}, {"reasons", n.reasons},
                           {"scores", std::move(scores)}, {"total", n.total}});
        }
        pod["pre_filter"] = p.pre_filter;
        pod["nodes"] = std::move(nodes);
      }
      pods.push_back(std::move(pod));
    }
    out.push_back({{"profile", r.profile},
                   {"bound", r.bound},
                   {"pending", r.pending},
                   {"placed", r.placed},
                   {"converted", r.converted},
                   {"kube_reasons", r.kube_reasons},
                   {"same_reason", r.same_reason},
                   {"gpus_busy", r.gpus_busy},
                   {"gpu_memory_alloc_pct", r.gpu_memory_alloc_pct},
                   {"gpu_alloc_pct_before", r.gpu_alloc_pct_before},
                   {"gpu_alloc_pct", r.gpu_alloc_pct},
                   {"frag_pct", r.frag_pct},
                   {"frag_ratio_pct", r.frag_ratio_pct},
                   {"pods", std::move(pods)}});
  }
  return {{"rows", std::move(out)}};
}

std::string format_whatif(const std::vector<WhatIfRow>& rows, bool pods) {
  using sim::fixed;
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
  if (!rows.empty() && rows.front().converted > 0) {
    out << rows.front().converted << " pods asking one whole GPU were asked as GPU-memory shares (--as-gpu-mem)\n\n";
  }
  const bool events = !rows.empty() && rows.front().kube_reasons > 0;
  out << pad("profile", width) << "  placed    GPU alloc after  GPU mem after  GPUs busy  frag after (of GPUs / of idle)"
      << (events ? "  same reason as kube-scheduler" : "") << "\n";
  for (const auto& r : rows) {
    std::string frag = fixed(r.frag_pct, 1) + "% / " + fixed(r.frag_ratio_pct, 1) + "%";
    if (events) frag = pad(frag, 30) + "  " + std::to_string(r.same_reason) + "/" + std::to_string(r.kube_reasons);
    out << pad(r.profile, width) << "  " << pad(std::to_string(r.placed) + "/" + std::to_string(r.pending), 8) << "  "
        << pad(fixed(r.gpu_alloc_pct, 1) + "%", 15) << "  " << pad(fixed(r.gpu_memory_alloc_pct, 1) + "%", 13) << "  "
        << pad(std::to_string(r.gpus_busy), 9) << "  " << frag << "\n";
  }
  if (pods) {
    for (const auto& r : rows) {
      out << "\n" << r.profile << ":\n";
      for (const auto& p : r.pods) {
        out << "  " << p.pod << "  " << (p.placed ? "-> " + p.placement : "pending: " + p.reason) << "\n";
        if (!p.kube_reason.empty()) {
          out << "      kube-scheduler said" << (!p.placed && p.reason == p.kube_reason ? " the same" : "") << ": " << p.kube_reason << "\n";
        }
        if (!p.pre_filter.empty()) out << "      every node ruled out by " << p.pre_filter << "\n";
        std::size_t nw = 4;
        for (const auto& n : p.nodes) nw = std::max(nw, n.node.size());
        for (const auto& n : p.nodes) {
          out << "      " << pad(n.node, nw) << "  ";
          if (!n.feasible) {
            std::string why;
            for (const auto& reason : n.reasons) why += (why.empty() ? "" : "; ") + reason;
            out << "rejected by " << n.filter << ": " << why << "\n";
            continue;
          }
          if (n.scores.empty()) {
            out << "feasible, not scored (the only feasible node, or the search stopped before it)"
                << (n.node == p.node ? "  <- chosen" : "") << "\n";
            continue;
          }
          out << "total " << fixed(n.total, 2);
          for (const auto& s : n.scores) {
            out << "  " << s.plugin << " " << fixed(s.raw, 2) << " -> " << fixed(s.normalized, 2);
            if (s.weight != 1.0) out << " x" << fixed(s.weight, 0);
          }
          out << (n.node == p.node ? "  <- chosen" : "") << "\n";
        }
      }
    }
  }
  return out.str();
}

}  // namespace gpusched::scenario
