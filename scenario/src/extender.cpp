// The scheduler extender's protocol (see gpusched/scenario/extender.hpp).
#include <gpusched/scenario/extender.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>

#include <nlohmann/json.hpp>

#include <gpusched/error.hpp>
#include <gpusched/json_input.hpp>
#include <gpusched/policies/fgd/fragmentation.hpp>
#include <gpusched/policies/framework/scheduler.hpp>
#include <gpusched/scenario/scenario.hpp>
#include <gpusched/sim/outputs.hpp>
#include <gpusched/traces/kubernetes.hpp>

#include "kube_pod_objects.hpp"

namespace gpusched::scenario {

namespace {

/// MaxExtenderPriority (k8s.io/kube-scheduler/extender/v1 types.go).
constexpr std::int64_t kMaxExtenderPriority = 10;

/// Upper bounds (seconds) of the latency histogram's buckets; +Inf follows.
constexpr std::array<double, 13> kBuckets{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
                                          0.025,  0.05,    0.1,    0.25,  0.5,   1.0};

/// A request the extender refuses: HTTP status, message and (for bad input) the stable error id.
struct Refusal {
  int status;
  std::string message;
  std::string id;
};

ExtenderResponse json_response(int status, const nlohmann::json& body) {
  return {status, body.dump(), "application/json"};
}

ExtenderResponse refusal_response(const Refusal& r) {
  nlohmann::json body = {{"Error", r.message}};
  if (!r.id.empty()) body["error_id"] = r.id;
  return json_response(r.status, body);
}

[[noreturn]] void refuse(int status, std::string message, std::string id = error_id(ErrorCode::kTraceBadValue)) {
  throw Refusal{status, std::move(message), std::move(id)};
}

const nlohmann::json& member(const nlohmann::json& obj, const char* key, const std::string& where) {
  if (!obj.is_object()) refuse(400, where + ": expected a JSON object");
  const auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) refuse(400, where + ": field '" + key + "' is missing");
  return *it;
}

std::string string_member(const nlohmann::json& obj, const char* key, const std::string& where) {
  const auto& v = member(obj, key, where);
  if (!v.is_string()) refuse(400, where + ": field '" + key + "' must be a string");
  return v.get<std::string>();
}

std::string optional_string(const nlohmann::json& obj, const char* key) {
  if (!obj.is_object()) return {};
  const auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : std::string{};
}

}  // namespace

struct Extender::Impl {
  GpuCatalog catalog;
  ResourceTable resources;   // the importer's table: a pod may add names no node has
  std::size_t node_resources = 0;   // resources the cluster knows (ids below this)
  policies::Profile profile;
  std::unique_ptr<ClusterState> cluster;
  std::unique_ptr<policies::Scheduler> sched;

  std::mutex mu;                                  // the cluster, the scheduler and the pods
  std::vector<JobSpec> jobs;                      // every pod seen; index = JobId
  std::vector<std::vector<TaskPlacement>> placed; // per pod: its devices (empty: not bound)
  std::vector<std::int64_t> assumed;              // per pod: when it was bound (Unix ns; 0: in the snapshot)
  std::map<std::string, std::uint32_t> by_pod;    // "namespace/name" -> latest JobId
  std::map<std::string, std::uint32_t> by_uid;    // metadata.uid -> JobId (MetaVictims name pods by UID)
  std::size_t attached = 0;                       // jobs.size() when the scheduler was last attached
  std::size_t holding = 0;                        // pods bound now

  // Shadow mode (ExtenderOptions::shadow).
  bool shadow = false;
  std::function<void(const std::string&)> log;
  std::unique_ptr<ClusterState> counterfactual;            // every pod where the profile put it
  std::vector<std::vector<TaskPlacement>> shadow_placed;   // per pod, on `counterfactual`
  std::vector<policies::fgd::PodType> types;               // the snapshot's typical pod types
  struct Compared {
    std::string pod, kube_node, gpusched_node;
  };
  std::vector<Compared> compared;

  struct Verb {
    std::map<int, std::uint64_t> by_status;
    std::array<std::uint64_t, kBuckets.size() + 1> hist{};
    double sum = 0;
    std::uint64_t count = 0;
  };
  mutable std::mutex metrics_mu;
  std::map<std::string, Verb, std::less<>> verbs;
  std::uint64_t decisions = 0, bindings = 0, deletions = 0, bind_errors = 0;

  /// What the profile says about a pod on the candidate nodes, on a copy of the cluster.
  struct Decision {
    Status status = Status::success();
    std::optional<NodeId> chosen;
    std::optional<policies::DecisionExplanation> explanation;
    std::vector<TaskPlacement> placements;
    std::string missing;   // an extended resource no node has: every node fails with it
  };

  void attach() {
    if (attached == jobs.size()) return;
    sched->attach(*cluster, jobs, nullptr);
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      if (!placed[i].empty()) sched->job_started(jobs[i], JobId{static_cast<std::uint32_t>(i)}, placed[i]);
    }
    attached = jobs.size();
  }

  /// The pod in an ExtenderArgs, as a job (the kubectl importer's reading of a Pod object).
  std::uint32_t pod_job(const nlohmann::json& pod) {
    if (!pod.is_object()) refuse(400, "field 'Pod' must be a Pod object");
    // Pods from kube-scheduler's informer cache usually come without their TypeMeta.
    nlohmann::json object = pod;
    if (!object.contains("kind")) object["kind"] = "Pod";
    if (!object.contains("apiVersion")) object["apiVersion"] = "v1";
    std::istringstream in(object.dump());
    Workload w = traces::read_kube_pods(in, "request body (Pod)", catalog, resources);
    if (w.empty()) refuse(400, "the pod has finished (phase Succeeded or Failed)");
    JobSpec job = std::move(w.front());
    job.constraints.bound = false;   // the extender is asked where it may go
    const auto it = by_pod.find(job.name);
    if (it != by_pod.end() && placed[it->second].empty()) {
      jobs[it->second] = std::move(job);   // the same pending pod asked again: its latest spec
      return it->second;
    }
    if (it != by_pod.end()) refuse(400, "pod " + job.name + " is already bound (POST /pods/delete first)");
    const auto id = static_cast<std::uint32_t>(jobs.size());
    by_pod[job.name] = id;
    if (const auto uid = optional_string(pod.value("metadata", nlohmann::json::object()), "uid"); !uid.empty()) by_uid[uid] = id;
    jobs.push_back(std::move(job));
    placed.emplace_back();
    shadow_placed.emplace_back();
    assumed.push_back(0);
    return id;
  }

  /// Extended resources the pod asks for that no node has (ids past the cluster's table).
  std::string unknown_resource(const JobSpec& job) const {
    for (const auto& [id, amount] : job.request.extended) {
      if (id.value >= node_resources && amount > 0) return resources.name(id);
    }
    return {};
  }

  /// On a copy of `base` (default: the cluster).
  Decision decide(std::uint32_t id, std::span<const NodeId> candidates, const ClusterState* base = nullptr) {
    attach();
    Decision d;
    if (const auto name = unknown_resource(jobs[id]); !name.empty()) {
      d.status = Status::unresolvable("node-resources-fit", "Insufficient resource");
      d.missing = "Insufficient " + name;
      return d;
    }
    ClusterState scratch = base != nullptr ? *base : *cluster;
    sched->set_explain([&](const policies::DecisionExplanation& e) {
      if (!d.explanation) d.explanation = e;
    });
    try {
      d.status = sched->schedule(scratch, jobs[id], JobId{id}, d.placements, candidates);
    } catch (...) {
      sched->set_explain({});
      throw;
    }
    sched->set_explain({});
    ++decisions;
    if (d.status.ok() && !d.placements.empty() &&
        std::find(candidates.begin(), candidates.end(), d.placements.front().node) != candidates.end()) {
      d.chosen = d.placements.front().node;
    }
    return d;
  }

  /// The candidate nodes of an ExtenderArgs: NodeNames, or the names of Nodes.items.
  struct Candidates {
    std::vector<std::string> names;
    std::vector<std::optional<NodeId>> ids;
    const nlohmann::json* objects = nullptr;   // Nodes (nodeCacheCapable false)
  };
  Candidates candidates(const nlohmann::json& args) const {
    Candidates c;
    const auto names = args.find("NodeNames");
    const auto nodes = args.find("Nodes");
    if (names != args.end() && !names->is_null()) {
      if (!names->is_array()) refuse(400, "field 'NodeNames' must be an array of node names");
      for (const auto& n : *names) {
        if (!n.is_string()) refuse(400, "field 'NodeNames' must be an array of node names");
        c.names.push_back(n.get<std::string>());
      }
    } else if (nodes != args.end() && !nodes->is_null()) {
      const auto& items = member(*nodes, "items", "field 'Nodes'");
      if (!items.is_array()) refuse(400, "field 'Nodes.items' must be an array of Node objects");
      for (const auto& n : items) {
        const auto& meta = member(n, "metadata", "field 'Nodes.items[]'");
        c.names.push_back(string_member(meta, "name", "field 'Nodes.items[].metadata'"));
      }
      c.objects = &*nodes;
    } else {
      refuse(400, "ExtenderArgs: give 'NodeNames' (nodeCacheCapable) or 'Nodes'");
    }
    for (const auto& n : c.names) c.ids.push_back(cluster->find_node(n));
    return c;
  }

  static std::vector<NodeId> known(const Candidates& c) {
    std::vector<NodeId> ids;
    for (const auto& id : c.ids) {
      if (id) ids.push_back(*id);
    }
    std::sort(ids.begin(), ids.end(), [](NodeId a, NodeId b) { return a.value < b.value; });
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    return ids;
  }

  /// Per candidate node: empty when feasible, else (message, unresolvable).
  std::map<std::uint32_t, std::pair<std::string, bool>> failures(const Decision& d, std::span<const NodeId> ids) const {
    std::map<std::uint32_t, std::pair<std::string, bool>> out;
    if (!d.missing.empty()) {
      for (const auto id : ids) out[id.value] = {d.missing, true};
      return out;
    }
    if (d.explanation && d.explanation->pre_filter.ok()) {
      for (const auto& v : d.explanation->nodes) {
        if (v.rejected.ok()) continue;
        std::string msg;
        for (const auto r : v.reasons) msg += (msg.empty() ? "" : ", ") + std::string(r);
        if (msg.empty()) msg = std::string(v.rejected.reason);
        out[v.node.value] = {msg, v.rejected.code == StatusCode::kUnschedulableAndUnresolvable};
      }
      return out;
    }
    // Ruled out before any node was looked at (a pre-filter, or a resource no node has).
    const Status s = d.explanation ? d.explanation->pre_filter : d.status;
    for (const auto id : ids) out[id.value] = {std::string(s.reason), s.code == StatusCode::kUnschedulableAndUnresolvable};
    return out;
  }

  ExtenderResponse filter(const nlohmann::json& args) {
    const auto c = candidates(args);
    const auto id = pod_job(member(args, "Pod", "ExtenderArgs"));
    const auto ids = known(c);
    const Decision d = decide(id, ids);
    const auto failed = failures(d, ids);
    nlohmann::json fit = nlohmann::json::array(), failed_nodes = nlohmann::json::object(),
                   unresolvable = nlohmann::json::object();
    for (std::size_t i = 0; i < c.names.size(); ++i) {
      if (!c.ids[i]) {
        unresolvable[c.names[i]] = "node unknown to gpusched (not in its snapshot)";
        continue;
      }
      const auto it = failed.find(c.ids[i]->value);
      if (it == failed.end()) {
        fit.push_back(c.objects ? (*c.objects)["items"][i] : nlohmann::json(c.names[i]));
      } else if (it->second.second) {
        unresolvable[c.names[i]] = it->second.first;
      } else {
        failed_nodes[c.names[i]] = it->second.first;
      }
    }
    nlohmann::json out = {{"FailedNodes", failed_nodes}, {"FailedAndUnresolvableNodes", unresolvable}, {"Error", ""}};
    if (c.objects) {
      nlohmann::json list = *c.objects;
      list["items"] = fit;
      out["Nodes"] = list;
      out["NodeNames"] = nullptr;
    } else {
      out["Nodes"] = nullptr;
      out["NodeNames"] = fit;
    }
    return json_response(200, out);
  }

  ExtenderResponse prioritize(const nlohmann::json& args) {
    const auto c = candidates(args);
    const auto id = pod_job(member(args, "Pod", "ExtenderArgs"));
    const auto ids = known(c);
    const Decision d = decide(id, ids);
    std::map<std::uint32_t, double> total;   // feasible candidates with a score total
    if (d.explanation) {
      for (const auto& v : d.explanation->nodes) {
        if (v.rejected.ok()) total[v.node.value] = v.raw.empty() ? 0.0 : v.total;
      }
    }
    double lo = 0, hi = 0;
    bool first = true;
    for (const auto& [node, t] : total) {
      lo = first ? t : std::min(lo, t);
      hi = first ? t : std::max(hi, t);
      first = false;
    }
    nlohmann::json out = nlohmann::json::array();
    for (std::size_t i = 0; i < c.names.size(); ++i) {
      std::int64_t score = 0;
      if (c.ids[i] && d.chosen && *c.ids[i] == *d.chosen) {
        score = kMaxExtenderPriority;
      } else if (c.ids[i]) {
        const auto it = total.find(c.ids[i]->value);
        if (it != total.end() && hi > lo) {
          score = static_cast<std::int64_t>(std::floor((kMaxExtenderPriority - 1) * (it->second - lo) / (hi - lo)));
        }
      }
      out.push_back({{"Host", c.names[i]}, {"Score", score}});
    }
    return json_response(200, out);
  }

  ExtenderResponse bind(const nlohmann::json& args) {
    const auto name = string_member(args, "PodName", "ExtenderBindingArgs");
    const auto ns = optional_string(args, "PodNamespace");
    const auto node_name = string_member(args, "Node", "ExtenderBindingArgs");
    const std::string key = (ns.empty() ? "default" : ns) + "/" + name;
    auto fail = [&](const std::string& msg) {
      ++bind_errors;
      return json_response(200, {{"Error", msg}});
    };
    const auto it = by_pod.find(key);
    if (it == by_pod.end()) return fail("pod " + key + " is unknown to gpusched (no filter or prioritize call for it)");
    const auto id = it->second;
    if (!placed[id].empty()) return fail("pod " + key + " is already bound");
    const auto node = cluster->find_node(node_name);
    if (!node) return fail("node " + node_name + " is unknown to gpusched");
    const NodeId only[] = {*node};
    const Decision d = decide(id, only);
    if (!d.status.ok() || !d.chosen) {
      // Why, in the words of the filter that rejected that node (as /filter gives them).
      const auto why = failures(d, only);
      const auto reason = why.find(node->value);
      return fail("pod " + key + " does not fit node " + node_name + ": " +
                  (reason != why.end() ? reason->second.first : d.status.ok() ? std::string("rejected there") : sched->last_diagnosis()));
    }
    std::string ours;   // shadow: where the profile would have put it, on the same cluster
    if (shadow) {
      std::vector<NodeId> all(cluster->node_count());
      for (std::uint32_t n = 0; n < all.size(); ++n) all[n] = NodeId{n};
      const Decision mine = decide(id, all);
      if (mine.chosen) ours = cluster->spec(*mine.chosen).name;
    }
    for (const auto& p : d.placements) cluster->allocate(jobs[id].request, p);
    placed[id] = d.placements;
    assumed[id] = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
    sched->job_started(jobs[id], JobId{id}, placed[id]);
    ++holding;
    ++bindings;
    if (shadow) {
      // The counterfactual cluster: the pod where the profile puts it there (a second scheduler
      // would keep its own plugin state; the profile's answers here are node-local or drawn).
      std::vector<TaskPlacement> there;
      if (sched->what_if(*counterfactual, jobs[id], JobId{id}, there).ok()) shadow_placed[id] = std::move(there);
      compared.push_back({key, node_name, ours});
      if (log) {
        log(nlohmann::json{{"pod", key}, {"kube_node", node_name}, {"gpusched_node", ours}, {"agree", ours == node_name}}.dump());
      }
    }
    return json_response(200, {{"Error", ""}});
  }

  static double frag_pct(const ClusterState& c, std::span<const policies::fgd::PodType> types) {
    const auto f = policies::fgd::cluster_fragmentation(c, types);
    return f.capacity_milli > 0 ? 100.0 * f.fragment_milli / static_cast<double>(f.capacity_milli) : 0.0;
  }

  ExtenderResponse shadow_summary() const {
    if (!shadow) refuse(404, "not in shadow mode (gpusched serve --shadow)", "");
    std::size_t agree = 0;
    nlohmann::json pods = nlohmann::json::array();
    for (const auto& c : compared) {
      agree += c.kube_node == c.gpusched_node ? 1 : 0;
      pods.push_back({{"pod", c.pod}, {"kube_node", c.kube_node}, {"gpusched_node", c.gpusched_node}, {"agree", c.kube_node == c.gpusched_node}});
    }
    return json_response(200, {{"binds", compared.size()},
                               {"agree", agree},
                               {"agreement_pct", compared.empty() ? 0.0 : 100.0 * static_cast<double>(agree) / static_cast<double>(compared.size())},
                               {"kube", {{"gpu_alloc_pct", allocated_gpu_pct(*cluster)}, {"frag_pct", frag_pct(*cluster, types)}}},
                               {"gpusched", {{"gpu_alloc_pct", allocated_gpu_pct(*counterfactual)}, {"frag_pct", frag_pct(*counterfactual, types)}}},
                               {"pods", pods}});
  }

  /// ExtenderPreemptionArgs -> ExtenderPreemptionResult: of the nodes kube-scheduler's
  /// preemption proposes, those where the pod fits the profile's filters once that node's
  /// proposed victims are gone, with the same victims (as MetaVictims: UIDs). Victims gpusched
  /// does not hold free nothing here; a node it does not know is dropped.
  ExtenderResponse preempt(const nlohmann::json& args) {
    const auto id = pod_job(member(args, "Pod", "ExtenderPreemptionArgs"));
    const auto meta = args.find("NodeNameToMetaVictims");
    const auto full = args.find("NodeNameToVictims");
    const bool use_meta = meta != args.end() && !meta->is_null();
    if (!use_meta && (full == args.end() || full->is_null())) {
      refuse(400, "ExtenderPreemptionArgs: give 'NodeNameToMetaVictims' (nodeCacheCapable) or 'NodeNameToVictims'");
    }
    const auto& map = use_meta ? *meta : *full;
    if (!map.is_object()) refuse(400, "ExtenderPreemptionArgs: the victims must be an object keyed by node name");
    nlohmann::json kept = nlohmann::json::object();
    for (const auto& [node_name, victims] : map.items()) {
      const std::string where = "victims of node '" + node_name + "'";
      const auto& pods = member(victims, "Pods", where);
      if (!pods.is_array()) refuse(400, where + ": 'Pods' must be an array");
      std::int64_t pdb = 0;
      if (const auto it = victims.find("NumPDBViolations"); it != victims.end() && !it->is_null()) {
        if (!it->is_number_integer()) refuse(400, where + ": 'NumPDBViolations' must be an integer");
        pdb = it->get<std::int64_t>();
      }
      nlohmann::json uids = nlohmann::json::array();
      std::vector<std::uint32_t> gone;
      for (const auto& v : pods) {
        std::string uid;
        std::optional<std::uint32_t> job;
        if (use_meta) {
          uid = string_member(v, "UID", where);
        } else {
          const auto& m = member(v, "metadata", where);
          uid = optional_string(m, "uid");
          const auto ns = optional_string(m, "namespace");
          const auto it = by_pod.find((ns.empty() ? "default" : ns) + "/" + string_member(m, "name", where));
          if (it != by_pod.end()) job = it->second;
        }
        if (!job) {
          const auto it = by_uid.find(uid);
          if (it != by_uid.end()) job = it->second;
        }
        if (job && !placed[*job].empty()) gone.push_back(*job);
        uids.push_back({{"UID", uid}});
      }
      const auto node = cluster->find_node(node_name);
      if (!node) continue;
      ClusterState without = *cluster;
      for (const auto j : gone) {
        for (const auto& p : placed[j]) without.release(jobs[j].request, p);
      }
      const NodeId only[] = {*node};
      if (!decide(id, only, &without).chosen) continue;
      kept[node_name] = {{"Pods", uids}, {"NumPDBViolations", pdb}};
    }
    return json_response(200, {{"NodeNameToMetaVictims", kept}});
  }

  ExtenderResponse remove(const nlohmann::json& args) {
    const auto name = string_member(args, "PodName", "pod");
    const auto ns = optional_string(args, "PodNamespace");
    const std::string key = (ns.empty() ? "default" : ns) + "/" + name;
    const auto it = by_pod.find(key);
    if (it == by_pod.end() || placed[it->second].empty()) return json_response(200, {{"Error", "pod " + key + " holds no devices here"}});
    const auto id = it->second;
    attach();
    for (const auto& p : placed[id]) cluster->release(jobs[id].request, p);
    sched->job_stopped(jobs[id], JobId{id}, placed[id]);
    placed[id].clear();
    for (const auto& p : shadow_placed[id]) counterfactual->release(jobs[id].request, p);
    shadow_placed[id].clear();
    by_pod.erase(it);
    --holding;
    ++deletions;
    return json_response(200, {{"Error", ""}});
  }

  ExtenderResponse pods() const {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& [key, id] : by_pod) {
      if (placed[id].empty()) continue;
      nlohmann::json gpus = nlohmann::json::array();
      for (const auto& p : placed[id]) {
        for (const auto& g : p.gpus) gpus.push_back(g.index);
      }
      out.push_back({{"pod", key},
                     {"node", cluster->spec(placed[id].front().node).name},
                     {"placement", sim::placement_string(*cluster, placed[id])},
                     {"gpus", gpus},
                     {"annotations", annotations(id)}});
    }
    return json_response(200, out);
  }

  /// The annotations a device plugin reads to hand the pod its devices, in its peer's vocabulary
  /// where it has one. A GPU-memory share (aliyun.com/gpu-mem, gpushare): gpushare-scheduler-
  /// extender's (pkg/utils/pod.go PatchPodAnnotationSpec): the GPU index, the pod's and the GPU's
  /// memory in GiB, assigned "false" for the device plugin to flip, and the assume time (ns).
  nlohmann::json annotations(std::uint32_t id) const {
    nlohmann::json a = nlohmann::json::object();
    const auto& g = jobs[id].request.gpu;
    const auto& p = placed[id];
    if (g.mode == GpuMode::kShared && g.milli == 0 && g.memory_mib > 0 && g.count == 1 && p.size() == 1 && p[0].gpus.size() == 1) {
      const auto& grant = p[0].gpus[0];
      const auto& gpu = cluster->gpus(p[0].node)[grant.index];
      a["ALIYUN_COM_GPU_MEM_IDX"] = std::to_string(grant.index);
      a["ALIYUN_COM_GPU_MEM_POD"] = std::to_string(g.memory_mib / 1024);
      a["ALIYUN_COM_GPU_MEM_DEV"] = std::to_string(cluster->catalog()[gpu.model].memory_mib / 1024);
      a["ALIYUN_COM_GPU_MEM_ASSIGNED"] = "false";
      a["ALIYUN_COM_GPU_MEM_ASSUME_TIME"] = std::to_string(assumed[id]);
    }
    return a;
  }

  std::string metrics() const {
    std::lock_guard lock(metrics_mu);
    std::ostringstream m;
    m << "# HELP gpusched_extender_requests_total Requests answered, by verb and HTTP status.\n"
         "# TYPE gpusched_extender_requests_total counter\n";
    for (const auto& [verb, v] : verbs) {
      for (const auto& [status, n] : v.by_status) {
        m << "gpusched_extender_requests_total{verb=\"" << verb << "\",code=\"" << status << "\"} " << n << "\n";
      }
    }
    m << "# HELP gpusched_extender_request_duration_seconds Time to answer a request, by verb.\n"
         "# TYPE gpusched_extender_request_duration_seconds histogram\n";
    for (const auto& [verb, v] : verbs) {
      std::uint64_t cum = 0;
      for (std::size_t b = 0; b <= kBuckets.size(); ++b) {
        cum += v.hist[b];
        m << "gpusched_extender_request_duration_seconds_bucket{verb=\"" << verb << "\",le=\"";
        if (b < kBuckets.size()) m << kBuckets[b];
        else m << "+Inf";
        m << "\"} " << cum << "\n";
      }
      m << "gpusched_extender_request_duration_seconds_sum{verb=\"" << verb << "\"} " << v.sum << "\n";
      m << "gpusched_extender_request_duration_seconds_count{verb=\"" << verb << "\"} " << v.count << "\n";
    }
    m << "# HELP gpusched_extender_decisions_total Placement decisions made (filter, prioritize, bind).\n"
         "# TYPE gpusched_extender_decisions_total counter\n"
      << "gpusched_extender_decisions_total " << decisions << "\n"
      << "# HELP gpusched_extender_bindings_total Pods bound.\n# TYPE gpusched_extender_bindings_total counter\n"
      << "gpusched_extender_bindings_total " << bindings << "\n"
      << "# HELP gpusched_extender_bind_errors_total Bind calls answered with an Error.\n"
         "# TYPE gpusched_extender_bind_errors_total counter\n"
      << "gpusched_extender_bind_errors_total " << bind_errors << "\n"
      << "# HELP gpusched_extender_deletions_total Pods removed (POST /pods/delete).\n"
         "# TYPE gpusched_extender_deletions_total counter\n"
      << "gpusched_extender_deletions_total " << deletions << "\n"
      << "# HELP gpusched_extender_pods Pods holding devices now.\n# TYPE gpusched_extender_pods gauge\n"
      << "gpusched_extender_pods " << holding << "\n";
    return m.str();
  }

  void record(std::string_view verb, int status, double seconds) {
    std::lock_guard lock(metrics_mu);
    auto it = verbs.find(verb);
    if (it == verbs.end()) it = verbs.emplace(std::string(verb), Verb{}).first;
    auto& v = it->second;
    ++v.by_status[status];
    const auto b = static_cast<std::size_t>(std::lower_bound(kBuckets.begin(), kBuckets.end(), seconds) - kBuckets.begin());
    ++v.hist[b];
    v.sum += seconds;
    ++v.count;
  }
};

Extender::Extender(const ExtenderOptions& o, const policies::Registry& registry) : impl_(std::make_unique<Impl>()) {
  auto& m = *impl_;
  m.shadow = o.shadow;
  m.log = o.log;
  m.catalog = GpuCatalog::builtin();
  auto nodes = traces::read_kube_nodes(o.nodes, m.catalog, m.resources);
  Workload pods;
  if (!o.pods.empty()) pods = traces::read_kube_pods(o.pods, m.catalog, m.resources);
  Scenario sc;
  sc.catalog = m.catalog;
  sc.resources = m.resources;
  use_profile(sc, o.profile, registry);
  m.profile = sc.profile;
  m.node_resources = m.resources.size();
  m.cluster = std::make_unique<ClusterState>(m.catalog, m.resources, std::move(nodes));
  m.sched = std::make_unique<policies::Scheduler>(m.profile, registry, o.seed);
  // Bound pods take their places (pinned to their nodes); pending ones are remembered so that a
  // bind for one of them needs no filter call first.
  for (auto& p : pods) {
    const bool bound = p.constraints.bound;
    const auto id = static_cast<std::uint32_t>(m.jobs.size());
    m.by_pod[p.name] = id;
    m.jobs.push_back(std::move(p));
    m.placed.emplace_back();
    m.shadow_placed.emplace_back();
    m.assumed.push_back(0);
    if (!bound) continue;
    if (const auto name = m.unknown_resource(m.jobs[id]); !name.empty()) {
      throw_error(ErrorCode::kTraceUnplaceable, {o.pods.string(), m.jobs[id].source_line, ""},
                  "bound pod " + m.jobs[id].name + " asks for " + name + ", which its node does not have");
    }
    m.attach();
    std::vector<TaskPlacement> out;
    const Status s = m.sched->schedule(*m.cluster, m.jobs[id], JobId{id}, out);
    if (!s.ok()) {
      throw_error(ErrorCode::kTraceUnplaceable, {o.pods.string(), m.jobs[id].source_line, "spec.nodeName"},
                  "bound pod " + m.jobs[id].name + " does not fit the node it is bound to: " + m.sched->last_diagnosis());
    }
    m.placed[id] = out;
    m.sched->job_started(m.jobs[id], JobId{id}, out);
    ++m.holding;
  }
  if (!o.pods.empty()) {
    // The importer keeps no UIDs: read them from the snapshot.
    for_each_pod_object(o.pods, [&](const nlohmann::json& item, const std::string& key) {
      const auto uid = optional_string(item["metadata"], "uid");
      const auto it = m.by_pod.find(key);
      if (!uid.empty() && it != m.by_pod.end()) m.by_uid[uid] = it->second;
    });
  }
  if (m.shadow) {
    // Both clusters start from the snapshot as it is; the bound pods stay where they are in
    // both (released from the counterfactual one too when deleted).
    m.counterfactual = std::make_unique<ClusterState>(*m.cluster);
    m.shadow_placed = m.placed;
    m.types = policies::fgd::typical_pod_types(m.jobs);
  }
}

Extender::~Extender() = default;

std::string Extender::profile_name() const { return impl_->profile.name; }
std::size_t Extender::node_count() const { return impl_->cluster->node_count(); }
std::size_t Extender::pod_count() const {
  std::lock_guard lock(impl_->mu);
  return impl_->holding;
}

void Extender::record(std::string_view verb, int status, double seconds) { impl_->record(verb, status, seconds); }

ExtenderResponse Extender::handle(std::string_view method, std::string_view target, std::string_view body) {
  const auto t0 = std::chrono::steady_clock::now();
  std::string_view path = target.substr(0, target.find('?'));
  if (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  std::string verb = "other";
  ExtenderResponse r;
  try {
    using Handler = ExtenderResponse (Impl::*)(const nlohmann::json&);
    struct Route {
      std::string_view path, verb;
      Handler post;
    };
    static const Route routes[] = {{"/filter", "filter", &Impl::filter},
                                   {"/prioritize", "prioritize", &Impl::prioritize},
                                   {"/bind", "bind", &Impl::bind},
                                   {"/preempt", "preempt", &Impl::preempt},
                                   {"/pods/delete", "pods_delete", &Impl::remove}};
    if (path == "/healthz" || path == "/metrics" || path == "/pods" || path == "/shadow") {
      verb = std::string(path.substr(1));
      if (method != "GET") refuse(405, std::string(path) + " takes GET", "");
      if (path == "/healthz") {
        r = {200, "ok", "text/plain; charset=utf-8"};
      } else if (path == "/metrics") {
        r = {200, impl_->metrics(), "text/plain; version=0.0.4; charset=utf-8"};
      } else if (path == "/shadow") {
        std::lock_guard lock(impl_->mu);
        r = impl_->shadow_summary();
      } else {
        std::lock_guard lock(impl_->mu);
        r = impl_->pods();
      }
    } else {
      const auto route = std::find_if(std::begin(routes), std::end(routes), [&](const Route& x) { return x.path == path; });
      if (route == std::end(routes)) refuse(404, "no such path: " + std::string(path) + " (POST /filter, /prioritize, /preempt, /bind, /pods/delete; GET /healthz, /metrics, /pods, /shadow)", "");
      verb = std::string(route->verb);
      if (method != "POST") refuse(405, std::string(path) + " takes POST", "");
      const auto args = parse_json(body, "request body", kTraceJsonErrors);
      if (!args.is_object()) refuse(400, "request body: expected a JSON object");
      std::lock_guard lock(impl_->mu);
      r = (impl_.get()->*(route->post))(args);
    }
  } catch (const Refusal& e) {
    r = refusal_response(e);
  } catch (const Error& e) {
    r = refusal_response({400, e.what(), e.id()});
  } catch (const nlohmann::json::exception& e) {   // a value of the wrong type somewhere in the body
    r = refusal_response({400, std::string("request body: ") + e.what(), error_id(ErrorCode::kTraceBadValue)});
  } catch (const std::exception& e) {
    r = refusal_response({500, std::string("internal error: ") + e.what(), ""});
  }
  impl_->record(verb, r.status, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  return r;
}

}  // namespace gpusched::scenario
