// The scheduler extender's protocol (see gpusched/scenario/extender.hpp).
#include <gpusched/scenario/extender.hpp>

#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include <nlohmann/json.hpp>
#include <simdjson.h>

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

/// The extender compacts its pods once it holds this many entries (and then twice as many as
/// it kept, at least this many).
constexpr std::size_t kCompactAt = 4096;

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

/// The GPUs each spec.containers entry asks for, as HAMi reads a pod (its Resourcereqs):
/// nvidia.com/gpu from limits, else requests; a container asking for HAMi's memory or cores
/// without it counts one (HAMi's webhook adds nvidia.com/gpu: 1).
std::vector<std::uint16_t> gpu_containers_of(const nlohmann::json& pod) {
  std::vector<std::uint16_t> out;
  if (!pod.is_object()) return out;
  const auto spec = pod.find("spec");
  if (spec == pod.end() || !spec->is_object()) return out;
  const auto containers = spec->find("containers");
  if (containers == spec->end() || !containers->is_array()) return out;
  for (const auto& c : *containers) {
    std::int64_t n = -1;
    bool hami = false;
    const auto res = c.is_object() ? c.find("resources") : c.end();
    if (c.is_object() && res != c.end() && res->is_object()) {
      for (const char* section : {"limits", "requests"}) {
        const auto sec = res->find(section);
        if (sec == res->end() || !sec->is_object()) continue;
        if (const auto g = sec->find("nvidia.com/gpu"); g != sec->end() && n < 0) {
          if (g->is_number_integer()) {
            n = g->get<std::int64_t>();
          } else if (g->is_string()) {
            const auto& text = g->get_ref<const std::string&>();
            if (!text.empty() && text.size() < 6 &&
                std::all_of(text.begin(), text.end(), [](char ch) { return std::isdigit(static_cast<unsigned char>(ch)) != 0; })) {
              n = std::stoll(text);
            }
          }
        }
        for (const char* r : {"nvidia.com/gpumem", "nvidia.com/gpucores", "nvidia.com/gpumem-percentage"}) hami = hami || sec->contains(r);
      }
    }
    if (n < 0) n = hami ? 1 : 0;
    out.push_back(static_cast<std::uint16_t>(std::clamp<std::int64_t>(n, 0, 4096)));
  }
  return out;
}

std::string optional_string(const nlohmann::json& obj, const char* key) {
  if (!obj.is_object()) return {};
  const auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : std::string{};
}

/// Appends `s` as a JSON string (quoted; ", \\ and control characters escaped). The bytes are
/// valid UTF-8 already: node names came through a JSON parser, messages are ours.
void append_json_string(std::string& out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += '"';
  std::size_t run = 0;   // start of the bytes not yet copied: copied in one piece up to an escape
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out.append(s.data() + run, i - run);
    run = i + 1;
    if (c >= 0x20) {
      out += '\\';
      out += static_cast<char>(c);
    } else {
      out += "\\u00";
      out += kHex[c >> 4];
      out += kHex[c & 0xF];
    }
  }
  out.append(s.data() + run, s.size() - run);
  out += '"';
}

/// An ExtenderArgs read by simdjson (filter and prioritize, the calls kube-scheduler makes for
/// every pod): the Pod object minified, and the candidate names as views into the parser's
/// document. Only the well-formed NodeNames shape is read here; anything else (Nodes objects, a
/// missing or mistyped field, malformed JSON) goes to the nlohmann path, which words the error.
struct FastArgs {
  std::string pod;                       // the Pod object, minified: the key of its cached reading
  std::string key;                       // "namespace/name" ("" when metadata.name is not a string)
  std::vector<std::string_view> names;   // NodeNames
};

bool read_fast(std::string_view body, FastArgs& a) {
  thread_local simdjson::dom::parser parser;   // one per server thread; its document is reused
  simdjson::dom::element doc;
  if (parser.parse(body.data(), body.size()).get(doc) != simdjson::SUCCESS) return false;
  simdjson::dom::object args;
  if (doc.get_object().get(args) != simdjson::SUCCESS) return false;
  // A key given twice: simdjson would read the first, nlohmann (which words errors) the last.
  int pods = 0, lists = 0;
  for (const auto field : args) {
    pods += field.key == "Pod" ? 1 : 0;
    lists += field.key == "NodeNames" ? 1 : 0;
  }
  if (pods > 1 || lists > 1) return false;
  simdjson::dom::array names;
  if (args["NodeNames"].get_array().get(names) != simdjson::SUCCESS) return false;
  simdjson::dom::object pod;
  if (args["Pod"].get_object().get(pod) != simdjson::SUCCESS) return false;
  a.names.clear();
  for (const auto n : names) {
    std::string_view name;
    if (n.get_string().get(name) != simdjson::SUCCESS) return false;
    a.names.push_back(name);
  }
  a.pod = simdjson::minify(pod);
  a.key.clear();
  std::string_view name, ns = "default";
  simdjson::dom::object meta;
  if (pod["metadata"].get_object().get(meta) == simdjson::SUCCESS && meta["name"].get_string().get(name) == simdjson::SUCCESS) {
    std::string_view given;
    if (meta["namespace"].get_string().get(given) == simdjson::SUCCESS && !given.empty()) ns = given;
    a.key.append(ns).append("/").append(name);
  }
  return true;
}

/// Hash of node names, for lookups by string_view.
struct NameHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};

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
  std::vector<std::int64_t> assumed;              // per pod: when it was bound (Unix ns, strictly increasing; 0: in the snapshot)
  std::int64_t last_assumed = 0;
  /// /pods/sync?complete=true: held pods the previous complete list did not name, with their
  /// bind time then. Forgotten only if the next complete list does not name them either (a list
  /// taken before a pod was bound does not free it).
  std::map<std::string, std::int64_t> missing_once;
  std::map<std::string, std::uint32_t> by_pod;    // "namespace/name" -> latest JobId
  std::map<std::string, std::uint32_t> by_uid;    // metadata.uid -> JobId (MetaVictims name pods by UID)
  const JobSpec* attached_data = nullptr;         // jobs.data() when the scheduler was last attached (null: never, or again)
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

  /// Per node: its GPUs as HAMi's device plugin registered them (the node annotation
  /// hami.io/node-nvidia-register), in GPU index order; empty: not a HAMi node.
  struct HamiDevice {
    std::string uuid;
    std::int64_t memory_mib = 0;   // devmem (0: not given)
  };
  std::vector<std::vector<HamiDevice>> hami;
  Binder binder;                 // ExtenderOptions::binder (empty: bindings stay in this state)
  std::uint64_t binder_errors = 0;

  struct Verb {
    std::map<int, std::uint64_t> by_status;
    std::array<std::uint64_t, kBuckets.size() + 1> hist{};
    double sum = 0;
    std::uint64_t count = 0;
  };
  mutable std::mutex metrics_mu;
  std::map<std::string, Verb, std::less<>> verbs;
  std::uint64_t decisions = 0, bindings = 0, deletions = 0, bind_errors = 0, reused = 0;

  // Filter and prioritize answers. kube-scheduler asks both for every pod, with the same pod and
  // candidates, and asks again for pods that stay pending: one decision answers all of these
  // until the cluster, the pod or the candidates change.
  std::uint64_t version = 1;            // bumped by every change of the cluster or of the scheduler's view
  std::vector<std::uint64_t> stamp;     // per pod: bumped when its spec is read again
  std::vector<std::string> source;      // per pod: the minified Pod object it was read from ("": the snapshot's)
  std::vector<std::string> pod_uids;       // per pod: its metadata.uid ("": not given)
  std::vector<std::vector<std::uint16_t>> gpu_containers;   // per pod: GPUs of each spec.containers entry (HAMi's view)
  // Forgetting pods (compact()): deleted pods, and pending pods not asked about for a while.
  std::vector<std::uint64_t> asked;     // per pod: the epoch it was last asked about
  std::uint64_t epoch = 1;              // bumped at each compaction
  std::size_t compact_at = kCompactAt;  // jobs.size() that starts the next compaction
  std::uint64_t forgotten = 0;
  std::unordered_map<std::string, NodeId, NameHash, std::equal_to<>> node_ids;
  /// A candidate list resolved to node ids (the last few; kube-scheduler sends the same list
  /// for pod after pod while its own filters agree).
  struct Resolved {
    std::uint64_t serial = 0;                  // 0: empty slot
    std::string key;                           // the names, each after its length: equal keys, equal lists
    std::vector<std::optional<NodeId>> ids;    // per name
    std::vector<NodeId> known;                 // the known ones, sorted, no duplicates
  };
  std::array<Resolved, 4> resolved;
  std::size_t next_resolved = 0;
  std::uint64_t serial = 0;
  std::string scratch_key;
  enum Kind : std::uint8_t { kFit, kFailed, kUnresolvable, kUnknown };
  /// The profile's answer for one pod on one candidate list, as the cluster was at `version`.
  struct Answer {
    std::uint32_t job = 0;
    std::uint64_t stamp = 0, version = 0, cands = 0;   // what it answers (cands 0: empty slot)
    std::vector<Kind> kind;                  // per candidate name
    std::vector<std::uint32_t> message;      // per candidate name, failed ones: index into messages
    std::vector<std::uint8_t> score;         // per candidate name: 0..MaxExtenderPriority
    std::vector<std::string> messages;
    std::unordered_map<std::string, std::uint32_t> interned;
    std::string filter_body, priorities_body;   // written once (NodeNames shape), sent again when asked again
  };
  std::vector<std::string> quoted;   // per node: its name as a JSON string (the responses list thousands)
  std::array<Answer, 16> answers;
  std::size_t next_answer = 0;
  // Per node scratch for working an answer out.
  std::vector<Kind> node_kind;
  std::vector<std::uint32_t> node_message;
  std::vector<double> node_total;
  std::vector<std::uint64_t> seen;   // node -> the last output pass that wrote it (duplicate names)
  std::uint64_t pass = 0;
  std::string joined;

  /// What the profile says about a pod on the candidate nodes, on a copy of the cluster.
  struct Decision {
    Status status = Status::success();
    std::optional<NodeId> chosen;
    std::optional<policies::DecisionExplanation> explanation;
    std::vector<TaskPlacement> placements;
    std::string missing;   // an extended resource no node has: every node fails with it
  };

  /// Attaches the scheduler to the pods when their storage moved (the plugins keep a view of
  /// it): once each time the number of pods seen doubles, not for every new pod. Pods that came
  /// since are decided from their JobSpec (plugins look up a JobId only within the view they
  /// were given); a plugin that learns from the workload at attach (FGD's typical pod types)
  /// learns of them at the next doubling.
  void attach() {
    if (attached_data != nullptr && attached_data == jobs.data()) return;
    attached_data = jobs.data();
    sched->attach(*cluster, jobs, nullptr);
    ++version;
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      if (!placed[i].empty()) sched->job_started(jobs[i], JobId{static_cast<std::uint32_t>(i)}, placed[i]);
    }
  }

  /// The pod in an ExtenderArgs, as a job (the kubectl importer's reading of a Pod object).
  std::uint32_t pod_job(const nlohmann::json& pod) {
    if (!pod.is_object()) refuse(400, "field 'Pod' must be a Pod object");
    // Pods from kube-scheduler's informer cache usually come without their TypeMeta.
    nlohmann::json object = pod;
    if (!object.contains("kind")) object["kind"] = "Pod";
    if (!object.contains("apiVersion")) object["apiVersion"] = "v1";
    std::string text = object.dump();
    const auto meta = pod.find("metadata");
    const auto uid = meta != pod.end() ? optional_string(*meta, "uid") : std::string{};
    if (meta != pod.end() && meta->is_object()) {
      // The same pending pod asked again in the same bytes: nothing to read again.
      const auto name = optional_string(*meta, "name");
      const auto ns = optional_string(*meta, "namespace");
      const auto it = name.empty() ? by_pod.end() : by_pod.find((ns.empty() ? "default" : ns) + "/" + name);
      if (it != by_pod.end() && placed[it->second].empty() && source[it->second] == text) {
        asked[it->second] = epoch;
        return it->second;
      }
    }
    std::istringstream in(text);
    Workload w = traces::read_kube_pods(in, "request body (Pod)", catalog, resources);
    if (w.empty()) refuse(400, "the pod has finished (phase Succeeded or Failed)");
    JobSpec job = std::move(w.front());
    job.constraints.bound = false;   // the extender is asked where it may go
    const auto it = by_pod.find(job.name);
    if (it != by_pod.end() && placed[it->second].empty()) {
      jobs[it->second] = std::move(job);   // the same pending pod asked again: its latest spec
      ++stamp[it->second];
      source[it->second] = std::move(text);
      pod_uids[it->second] = uid;
      gpu_containers[it->second] = gpu_containers_of(pod);
      asked[it->second] = epoch;
      if (!uid.empty()) by_uid[uid] = it->second;   // a pod made again under the same name
      return it->second;
    }
    if (it != by_pod.end()) refuse(400, "pod " + job.name + " is already bound (POST /pods/delete first)");
    compact();
    const auto id = static_cast<std::uint32_t>(jobs.size());
    by_pod[job.name] = id;
    if (!uid.empty()) by_uid[uid] = id;
    jobs.push_back(std::move(job));
    placed.emplace_back();
    shadow_placed.emplace_back();
    assumed.push_back(0);
    stamp.push_back(0);
    source.push_back(std::move(text));
    pod_uids.push_back(uid);
    gpu_containers.push_back(gpu_containers_of(pod));
    asked.push_back(epoch);
    return id;
  }

  /// Forgets the pods that no longer matter, once the entries have doubled since the last time
  /// (amortised O(1) per pod): deleted pods, and pending pods nobody asked about since the last
  /// compaction (kube-scheduler asks filter before it binds, so a pod it still schedules is read
  /// again). Bound pods and recently asked ones keep their places, renumbered in order; the
  /// scheduler is attached again (its plugins' state is rebuilt from the bound pods), and kept
  /// answers are dropped. A long-running extender's memory follows the pods it holds, not every
  /// pod it ever saw.
  void compact() {
    if (jobs.size() < compact_at) return;
    std::vector<std::uint32_t> keep;
    for (std::uint32_t i = 0; i < jobs.size(); ++i) {
      const auto it = by_pod.find(jobs[i].name);
      const bool current = it != by_pod.end() && it->second == i;   // not deleted, not superseded
      if (current && (!placed[i].empty() || asked[i] == epoch)) keep.push_back(i);
    }
    std::vector<std::uint32_t> renumber(jobs.size(), std::numeric_limits<std::uint32_t>::max());
    auto pick = [&](auto& v) {
      std::remove_reference_t<decltype(v)> out;
      out.reserve(keep.size());
      for (const auto i : keep) out.push_back(std::move(v[i]));
      v.swap(out);
    };
    for (std::uint32_t k = 0; k < keep.size(); ++k) renumber[keep[k]] = k;
    forgotten += jobs.size() - keep.size();
    pick(jobs);
    pick(placed);
    pick(shadow_placed);
    pick(assumed);
    pick(stamp);
    pick(source);
    pick(pod_uids);
    pick(gpu_containers);
    pick(asked);
    by_pod.clear();
    for (std::uint32_t k = 0; k < jobs.size(); ++k) by_pod[jobs[k].name] = k;
    for (auto it = by_uid.begin(); it != by_uid.end();) {
      const auto k = renumber[it->second];
      if (k == std::numeric_limits<std::uint32_t>::max()) {
        it = by_uid.erase(it);
      } else {
        it->second = k;
        ++it;
      }
    }
    for (auto& a : answers) a.cands = 0;
    attached_data = nullptr;   // the next decision attaches the scheduler again (and bumps the version)
    ++epoch;   // a pending pod kept now goes at the next compaction unless asked about again
    compact_at = std::max(kCompactAt, 2 * jobs.size());
  }

  /// Extended resources the pod asks for that no node has (ids past the cluster's table).
  std::string unknown_resource(const JobSpec& job) const {
    for (const auto& [id, amount] : job.request.extended) {
      if (id.value >= node_resources && amount > 0) return resources.name(id);
    }
    return {};
  }

  /// The profile's decision on `base` (default: the cluster) without preemption (Scheduler::
  /// probe): nothing changes unless `keep`, when a placement found is kept on the cluster.
  /// `explain` false: no explanation is kept (a bind that fits needs none).
  Decision decide(std::uint32_t id, std::span<const NodeId> candidates, ClusterState* base = nullptr, bool keep = false,
                  bool explain = true) {
    attach();
    Decision d;
    if (const auto name = unknown_resource(jobs[id]); !name.empty()) {
      d.status = Status::unresolvable("node-resources-fit", "Insufficient resource");
      d.missing = "Insufficient " + name;
      return d;
    }
    if (explain) {
      sched->set_explain([&](const policies::DecisionExplanation& e) {
        if (!d.explanation) d.explanation = e;
      });
    }
    try {
      d.status = sched->probe(base != nullptr ? *base : *cluster, jobs[id], JobId{id}, d.placements, candidates, keep);
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

  /// The candidate nodes of an ExtenderArgs (nlohmann path): NodeNames, or the names of Nodes.items.
  struct Candidates {
    std::vector<std::string> names;
    const nlohmann::json* objects = nullptr;   // Nodes (nodeCacheCapable false)
  };
  static Candidates candidates(const nlohmann::json& args) {
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
    return c;
  }

  /// The candidate names resolved to node ids, from the last few lists when one is the same.
  template <class Names>
  const Resolved& resolve(const Names& names) {
    if (node_ids.empty()) {
      for (std::uint32_t n = 0; n < cluster->node_count(); ++n) node_ids.emplace(cluster->spec(NodeId{n}).name, NodeId{n});
    }
    scratch_key.clear();
    for (const auto& n : names) {
      const auto size = static_cast<std::uint32_t>(std::string_view(n).size());
      scratch_key.append(reinterpret_cast<const char*>(&size), sizeof size).append(n);
    }
    for (const auto& r : resolved) {
      if (r.serial != 0 && r.key == scratch_key) return r;
    }
    auto& r = resolved[next_resolved];
    next_resolved = (next_resolved + 1) % resolved.size();
    r.serial = ++serial;
    r.key.swap(scratch_key);
    r.ids.clear();
    r.known.clear();
    for (const auto& n : names) {
      const auto it = node_ids.find(std::string_view(n));
      r.ids.push_back(it == node_ids.end() ? std::nullopt : std::optional<NodeId>(it->second));
      if (it != node_ids.end()) r.known.push_back(it->second);
    }
    std::sort(r.known.begin(), r.known.end(), [](NodeId a, NodeId b) { return a.value < b.value; });
    r.known.erase(std::unique(r.known.begin(), r.known.end()), r.known.end());
    return r;
  }

  /// The pod of a fast-path ExtenderArgs: the pending pod of that name when it was read from the
  /// same bytes, else read again (pod_job).
  std::uint32_t fast_pod(const FastArgs& a) {
    if (!a.key.empty()) {
      const auto it = by_pod.find(a.key);
      if (it != by_pod.end() && placed[it->second].empty() && source[it->second] == a.pod) {
        asked[it->second] = epoch;
        return it->second;
      }
    }
    const auto id = pod_job(parse_json(a.pod, "request body (Pod)", kTraceJsonErrors));
    source[id] = a.pod;
    return id;
  }

  /// Per candidate: empty when feasible, else (message, unresolvable) — bind's wording of a
  /// refusal (decide() on one node).
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
        reasons_of(v, msg);
        out[v.node.value] = {std::move(msg), v.rejected.code == StatusCode::kUnschedulableAndUnresolvable};
      }
      return out;
    }
    // Ruled out before any node was looked at (a pre-filter, or a resource no node has).
    const Status s = d.explanation ? d.explanation->pre_filter : d.status;
    for (const auto id : ids) out[id.value] = {std::string(s.reason), s.code == StatusCode::kUnschedulableAndUnresolvable};
    return out;
  }

  /// A rejected node's message into `msg`: every reason its filter gives, as kube-scheduler
  /// lists them, or the filter's status reason when it gives none.
  static void reasons_of(const policies::NodeVerdict& v, std::string& msg) {
    msg.clear();
    for (const auto r : v.reasons) msg.append(msg.empty() ? "" : ", ").append(r);
    if (msg.empty()) msg = v.rejected.reason;
  }

  std::uint32_t intern(Answer& a, const std::string& message) {
    const auto [it, added] = a.interned.try_emplace(message, static_cast<std::uint32_t>(a.messages.size()));
    if (added) a.messages.push_back(message);
    return it->second;
  }

  /// The profile's answer for pod `id` on candidates `r`: each candidate's filter verdict and its
  /// 0..10 priority. One probe of the profile on the cluster as it is (nothing changes), from
  /// the answers kept when the same question was asked since the last change.
  Answer& answer(std::uint32_t id, const Resolved& r) {
    attach();
    for (auto& a : answers) {
      if (a.cands == r.serial && a.job == id && a.stamp == stamp[id] && a.version == version) {
        ++reused;
        return a;
      }
    }
    Answer& a = answers[next_answer];
    next_answer = (next_answer + 1) % answers.size();
    a.job = id;
    a.stamp = stamp[id];
    a.version = version;
    a.cands = 0;   // until complete: a throw below leaves no half answer behind
    a.messages.clear();
    a.interned.clear();
    a.filter_body.clear();
    a.priorities_body.clear();
    const auto nodes = cluster->node_count();
    node_kind.resize(nodes);
    node_message.resize(nodes);
    node_total.resize(nodes);
    for (const auto n : r.known) {
      node_kind[n.value] = kFit;
      node_total[n.value] = 0;
    }
    std::optional<NodeId> chosen;
    double lo = 0, hi = 0;
    bool any = false;
    auto fail_all = [&](const std::string& message, bool unresolvable) {
      const auto m = intern(a, message);
      for (const auto n : r.known) {
        node_kind[n.value] = unresolvable ? kUnresolvable : kFailed;
        node_message[n.value] = m;
      }
    };
    if (r.known.empty()) {
      // No candidate is a node gpusched knows: nothing to decide.
    } else if (const auto name = unknown_resource(jobs[id]); !name.empty()) {
      fail_all("Insufficient " + name, true);
    } else {
      bool explained = false;
      sched->set_explain([&](const policies::DecisionExplanation& e) {
        if (explained) return;   // a job's first task speaks for it (pods have one)
        explained = true;
        if (!e.pre_filter.ok()) {
          fail_all(std::string(e.pre_filter.reason), e.pre_filter.code == StatusCode::kUnschedulableAndUnresolvable);
          return;
        }
        for (const auto& v : e.nodes) {
          if (!v.rejected.ok()) {
            reasons_of(v, joined);   // into a reused buffer: most messages are interned already
            node_kind[v.node.value] = v.rejected.code == StatusCode::kUnschedulableAndUnresolvable ? kUnresolvable : kFailed;
            node_message[v.node.value] = intern(a, joined);
            continue;
          }
          const double t = v.raw.empty() ? 0.0 : v.total;
          node_total[v.node.value] = t;
          lo = any ? std::min(lo, t) : t;
          hi = any ? std::max(hi, t) : t;
          any = true;
        }
      });
      std::vector<TaskPlacement> placements;
      Status s;
      try {
        s = sched->probe(*cluster, jobs[id], JobId{id}, placements, r.known);
      } catch (...) {
        sched->set_explain({});
        throw;
      }
      sched->set_explain({});
      ++decisions;
      if (!explained && !s.ok()) {
        // Ruled out before any node was looked at.
        fail_all(std::string(s.reason), s.code == StatusCode::kUnschedulableAndUnresolvable);
      }
      if (s.ok() && !placements.empty() && std::binary_search(r.known.begin(), r.known.end(), placements.front().node,
                                                               [](NodeId x, NodeId y) { return x.value < y.value; })) {
        chosen = placements.front().node;
      }
    }
    a.kind.resize(r.ids.size());
    a.message.resize(r.ids.size());
    a.score.resize(r.ids.size());
    for (std::size_t i = 0; i < r.ids.size(); ++i) {
      const auto& n = r.ids[i];
      a.kind[i] = n ? node_kind[n->value] : kUnknown;
      a.message[i] = n && a.kind[i] != kFit ? node_message[n->value] : 0;
      std::int64_t score = 0;
      if (n && chosen && *n == *chosen) {
        score = kMaxExtenderPriority;
      } else if (n && a.kind[i] == kFit && hi > lo) {
        score = static_cast<std::int64_t>(std::floor((kMaxExtenderPriority - 1) * (node_total[n->value] - lo) / (hi - lo)));
      }
      a.score[i] = static_cast<std::uint8_t>(score);
    }
    a.cands = r.serial;
    return a;
  }

  static constexpr std::string_view kUnknownNode = "node unknown to gpusched (not in its snapshot)";

  /// Candidate i's name as a JSON string: the node's, written once, when it is a known node.
  template <class Names>
  void append_name(std::string& s, const Names& names, const Resolved& r, std::size_t i) {
    if (const auto& n = r.ids[i]) {
      if (quoted.empty()) {
        quoted.resize(cluster->node_count());
        for (std::uint32_t u = 0; u < quoted.size(); ++u) append_json_string(quoted[u], cluster->spec(NodeId{u}).name);
      }
      s += quoted[n->value];
    } else {
      append_json_string(s, names[i]);
    }
  }

  /// ExtenderFilterResult for NodeNames, written directly: {"Error", "FailedAndUnresolvableNodes",
  /// "FailedNodes", "NodeNames", "Nodes": null}. A name given twice is listed once in the maps.
  template <class Names>
  ExtenderResponse write_filter(const Answer& a, const Names& names, const Resolved& r) {
    ExtenderResponse out;
    auto& s = out.body;
    s.reserve(names.size() * 24 + 128);
    ++pass;
    seen.resize(cluster->node_count());
    std::unordered_set<std::string_view> unknown_seen;
    const auto first_time = [&](std::size_t i) {
      if (const auto& n = r.ids[i]) {
        if (seen[n->value] == pass) return false;
        seen[n->value] = pass;
        return true;
      }
      return unknown_seen.insert(std::string_view(names[i])).second;
    };
    auto map = [&](bool unresolvable) {
      s += '{';
      bool first = true;
      for (std::size_t i = 0; i < a.kind.size(); ++i) {
        const auto k = a.kind[i];
        if (k == kFit || (k == kFailed) == unresolvable) continue;
        if (!first_time(i)) continue;
        if (!first) s += ',';
        first = false;
        append_name(s, names, r, i);
        s += ':';
        append_json_string(s, k == kUnknown ? kUnknownNode : std::string_view(a.messages[a.message[i]]));
      }
      s += '}';
    };
    s += R"({"Error":"","FailedAndUnresolvableNodes":)";
    map(true);
    ++pass;   // the two maps hold different names: each starts afresh
    unknown_seen.clear();
    s += R"(,"FailedNodes":)";
    map(false);
    s += R"(,"NodeNames":[)";
    bool first = true;
    for (std::size_t i = 0; i < a.kind.size(); ++i) {
      if (a.kind[i] != kFit) continue;
      if (!first) s += ',';
      first = false;
      append_name(s, names, r, i);
    }
    s += R"(],"Nodes":null})";
    return out;
  }

  /// HostPriorityList, written directly: [{"Host", "Score"}] in candidate order.
  template <class Names>
  ExtenderResponse write_priorities(const Answer& a, const Names& names, const Resolved& r) {
    ExtenderResponse out;
    auto& s = out.body;
    s.reserve(names.size() * 32 + 2);
    s += '[';
    for (std::size_t i = 0; i < a.kind.size(); ++i) {
      if (i != 0) s += ',';
      s += R"({"Host":)";
      append_name(s, names, r, i);
      s += R"(,"Score":)";
      s += a.score[i] >= 10 ? "10" : std::string_view(&"0123456789"[a.score[i]], 1);
      s += '}';
    }
    s += ']';
    return out;
  }

  /// filter and prioritize from a fast-path read (the mutex held).
  ExtenderResponse fast(bool is_filter, const FastArgs& args) {
    const auto& r = resolve(args.names);
    const auto id = fast_pod(args);
    auto& a = answer(id, r);
    auto& body = is_filter ? a.filter_body : a.priorities_body;
    if (body.empty()) body = (is_filter ? write_filter(a, args.names, r) : write_priorities(a, args.names, r)).body;
    return {200, body, "application/json"};
  }

  ExtenderResponse filter(const nlohmann::json& args) {
    const auto c = candidates(args);
    const auto id = pod_job(member(args, "Pod", "ExtenderArgs"));
    const auto& r = resolve(c.names);
    const auto& a = answer(id, r);
    if (c.objects == nullptr) return write_filter(a, c.names, r);
    // Nodes given as objects (nodeCacheCapable false): the feasible ones come back as given.
    nlohmann::json fit = nlohmann::json::array(), failed_nodes = nlohmann::json::object(),
                   unresolvable = nlohmann::json::object();
    for (std::size_t i = 0; i < c.names.size(); ++i) {
      switch (a.kind[i]) {
        case kFit: fit.push_back((*c.objects)["items"][i]); break;
        case kFailed: failed_nodes[c.names[i]] = a.messages[a.message[i]]; break;
        case kUnresolvable: unresolvable[c.names[i]] = a.messages[a.message[i]]; break;
        case kUnknown: unresolvable[c.names[i]] = kUnknownNode; break;
      }
    }
    nlohmann::json list = *c.objects;
    list["items"] = fit;
    return json_response(200, {{"FailedNodes", failed_nodes},
                               {"FailedAndUnresolvableNodes", unresolvable},
                               {"Error", ""},
                               {"Nodes", list},
                               {"NodeNames", nullptr}});
  }

  ExtenderResponse prioritize(const nlohmann::json& args) {
    const auto c = candidates(args);
    const auto id = pod_job(member(args, "Pod", "ExtenderArgs"));
    const auto& r = resolve(c.names);
    return write_priorities(answer(id, r), c.names, r);
  }

  ExtenderResponse bind(const nlohmann::json& args) {
    const auto name = string_member(args, "PodName", "ExtenderBindingArgs");
    const auto ns = optional_string(args, "PodNamespace");
    const auto node_name = string_member(args, "Node", "ExtenderBindingArgs");
    const std::string key = (ns.empty() ? "default" : ns) + "/" + name;
    const auto error = bind_pod(key, node_name);
    if (!error.empty()) ++bind_errors;
    return json_response(200, {{"Error", error}});
  }

  /// bind with a real binder (ExtenderOptions::binder), as kube-scheduler binds: the placement
  /// is assumed (kept) under the lock, the binder is called with the lock released (an API
  /// server round trip must not hold every other decision up), and the placement is forgotten
  /// again when the binder refuses (its ForgetPod), unless the pod was deleted meanwhile. Shadow
  /// mode records the bind only once the binder accepted it.
  ExtenderResponse bind_through_binder(const nlohmann::json& args, std::unique_lock<std::mutex>& lock) {
    const auto name = string_member(args, "PodName", "ExtenderBindingArgs");
    const auto ns = optional_string(args, "PodNamespace").empty() ? std::string("default") : optional_string(args, "PodNamespace");
    const auto uid = optional_string(args, "PodUID");
    const auto node_name = string_member(args, "Node", "ExtenderBindingArgs");
    const std::string key = ns + "/" + name;
    std::optional<Compared> shadowed;
    if (auto error = bind_pod(key, node_name, true, &shadowed); !error.empty()) {
      ++bind_errors;
      return json_response(200, {{"Error", error}});
    }
    const auto id = by_pod.at(key);
    const std::int64_t when = assumed[id];
    BindingRequest request{name, ns, uid, node_name, {}};
    const nlohmann::json devices = annotations(id);
    for (const auto& [k, v] : devices.items()) request.annotations.emplace_back(k, v.get<std::string>());
    lock.unlock();
    std::string refused;
    try {
      refused = binder(request);
    } catch (const std::exception& e) {
      refused = std::string("the binder failed: ") + e.what();
    } catch (...) {
      refused = "the binder failed";
    }
    lock.lock();
    const auto now = by_pod.find(key);
    const bool still = now != by_pod.end() && !placed[now->second].empty() && assumed[now->second] == when;
    if (refused.empty()) {
      ++bindings;   // the cluster bound it; compared only if it was not deleted meanwhile
      if (shadowed && still) note_compared(std::move(*shadowed));
      return json_response(200, {{"Error", ""}});
    }
    ++bind_errors;
    ++binder_errors;
    // Forgotten again (pending, so kube-scheduler may retry), unless deleted or bound anew
    // meanwhile. A binding whose answer was lost may have been made all the same: as with
    // kube-scheduler's ForgetPod, the next /pods/sync list shows the pod bound and puts it back.
    if (still) release_pod(now->second);
    return json_response(200, {{"Error", "binding pod " + key + " to node " + node_name + " failed: " + refused}});
  }

  /// Gives back the devices of bound pod `id` (it is pending again, or about to be forgotten).
  void release_pod(std::uint32_t id) {
    attach();
    for (const auto& p : placed[id]) cluster->release(jobs[id].request, p);
    ++version;
    sched->job_stopped(jobs[id], JobId{id}, placed[id]);
    placed[id].clear();
    for (const auto& p : shadow_placed[id]) counterfactual->release(jobs[id].request, p);
    shadow_placed[id].clear();
    --holding;
  }

  /// Shadow mode: one bind compared (kept for GET /shadow, and logged).
  void note_compared(Compared c) {
    if (log) {
      log(nlohmann::json{{"pod", c.pod}, {"kube_node", c.kube_node}, {"gpusched_node", c.gpusched_node},
                         {"agree", c.gpusched_node == c.kube_node}}
              .dump());
    }
    compared.push_back(std::move(c));
  }

  /// Places pod `key` on node `node_name` (bind, or a snapshot saying kube-scheduler bound it
  /// there): "" when done, else why not. Shadow mode records the profile's own choice beside it.
  /// `compare` false (a pod the extender was never asked about): shadow mode records no choice
  /// of its own for it, but still places it on the counterfactual cluster. `deferred` (a bind
  /// still to be confirmed by the binder): the comparison is written there, and the binding is
  /// not counted, for the caller to do once it is confirmed.
  std::string bind_pod(const std::string& key, const std::string& node_name, bool compare = true,
                       std::optional<Compared>* deferred = nullptr) {
    const auto it = by_pod.find(key);
    if (it == by_pod.end()) return "pod " + key + " is unknown to gpusched (no filter or prioritize call for it)";
    const auto id = it->second;
    if (!placed[id].empty()) return "pod " + key + " is already bound";
    const auto node = cluster->find_node(node_name);
    if (!node) return "node " + node_name + " is unknown to gpusched";
    const NodeId only[] = {*node};
    std::string ours;   // shadow: where the profile would have put it, on the same cluster
    const bool record = shadow && compare;
    // Shadow mode asks the profile's own choice only for a bind that will succeed (checked
    // first, changing nothing), so a refused bind draws nothing from tie-break streams.
    Decision d = decide(id, only, nullptr, !record, false);   // kept on the cluster when it fits
    if (record && d.chosen) {
      std::vector<NodeId> all(cluster->node_count());
      for (std::uint32_t n = 0; n < all.size(); ++n) all[n] = NodeId{n};
      const Decision mine = decide(id, all, nullptr, false, false);
      if (mine.chosen) ours = cluster->spec(*mine.chosen).name;
      d = decide(id, only, nullptr, true, false);
    }
    if (d.status.ok() && !d.chosen) {
      for (const auto& p : d.placements) cluster->release(jobs[id].request, p);   // not there: never happens with one node
    }
    if (!d.status.ok() || !d.chosen) {
      d = decide(id, only);   // again, explained, to say why
      // Why, in the words of the filter that rejected that node (as /filter gives them).
      const auto why = failures(d, only);
      const auto reason = why.find(node->value);
      return "pod " + key + " does not fit node " + node_name + ": " +
             (reason != why.end() ? reason->second.first : d.status.ok() ? std::string("rejected there") : sched->last_diagnosis());
    }
    ++version;
    placed[id] = d.placements;
    // The bind time, and (strictly increasing, whatever the clock does) which binding this is:
    // a binder's refusal forgets the placement only if it is still this one.
    last_assumed = std::max(last_assumed + 1, std::chrono::duration_cast<std::chrono::nanoseconds>(
                                                  std::chrono::system_clock::now().time_since_epoch()).count());
    assumed[id] = last_assumed;
    sched->job_started(jobs[id], JobId{id}, placed[id]);
    ++holding;
    if (deferred == nullptr) ++bindings;
    if (shadow) {
      // The counterfactual cluster: the pod where the profile puts it there (a second scheduler
      // would keep its own plugin state; the profile's answers here are node-local or drawn).
      std::vector<TaskPlacement> there;
      if (sched->what_if(*counterfactual, jobs[id], JobId{id}, there).ok()) shadow_placed[id] = std::move(there);
    }
    if (record) {
      if (deferred != nullptr) *deferred = Compared{key, node_name, ours};
      else note_compared({key, node_name, ours});
    }
    return {};
  }

  /// POST /pods/sync: a `kubectl get pods -A -o json` list taken after kube-scheduler bound
  /// pods itself (an extender without bindVerb never hears of its bindings). Each pod the list
  /// shows on a node (spec.nodeName, not finished) that the extender does not hold bound is read
  /// from the list (its spec now) and bound there, as a bind call would: the extender's cluster
  /// follows the real one and, in shadow mode, the profile's own choice is recorded beside
  /// kube-scheduler's for pods it was asked about. An item it cannot read or place is reported
  /// under `refused` with why; the others still apply.
  ExtenderResponse snapshot(const nlohmann::json& list) { return sync(list, false); }

  /// POST /pods/sync (see above). Pods the list shows finished (Succeeded, Failed) that the
  /// extender holds give their devices back. `complete` (`?complete=true`: the list is every
  /// pod of the cluster, `kubectl get pods -A`): held pods it does not list are gone too.
  ExtenderResponse sync(const nlohmann::json& list, bool complete) {
    const auto& items = member(list, "items", "pod list");
    if (!items.is_array()) refuse(400, "pod list: 'items' must be an array of Pod objects");
    std::size_t bound = 0, added = 0, held = 0, pending = 0, finished = 0, gone = 0;
    nlohmann::json refused = nlohmann::json::object();
    std::unordered_set<std::string> listed;
    const auto forget = [&](std::map<std::string, std::uint32_t>::iterator it) {
      release_pod(it->second);
      by_pod.erase(it);
      ++deletions;
    };
    for (std::size_t i = 0; i < items.size(); ++i) {
      const auto& item = items[i];
      std::string key = "items[" + std::to_string(i) + "]";
      try {
        const std::string where = "pod list: " + key;
        const auto& meta = member(item, "metadata", where);
        const auto ns = optional_string(meta, "namespace");
        key = (ns.empty() ? "default" : ns) + "/" + string_member(meta, "name", where + ".metadata");
        if (complete) listed.insert(key);
        const auto spec = item.find("spec");
        const auto node = spec != item.end() ? optional_string(*spec, "nodeName") : std::string{};
        const auto status = item.find("status");
        const auto phase = status != item.end() ? optional_string(*status, "phase") : std::string{};
        auto it = by_pod.find(key);
        const auto uid = optional_string(meta, "uid");
        // The held pod of that name is the listed one unless both UIDs are known and differ
        // (the pod was deleted and made again under its name).
        const bool holds = it != by_pod.end() && !placed[it->second].empty();
        const bool same = holds && (uid.empty() || pod_uids[it->second].empty() || pod_uids[it->second] == uid);
        if (phase == "Succeeded" || phase == "Failed") {
          if (same) {
            forget(it);   // done: its devices are free (kubelet keeps a finished pod's object)
            ++finished;
          } else {
            ++pending;
          }
          continue;
        }
        if (holds && !same) {   // the pod held is gone; the listed one is another
          forget(it);
          ++gone;
          it = by_pod.end();
        }
        if (node.empty()) {
          ++pending;
          continue;
        }
        if (it != by_pod.end() && !placed[it->second].empty()) {
          ++held;
          continue;
        }
        // A pod asked about before keeps the spec it was decided with (the list's pins it to its
        // node); one never seen, or made again under the name (another UID), is read from the list.
        const auto by = uid.empty() ? by_uid.end() : by_uid.find(uid);
        const bool asked_before = it != by_pod.end() && (uid.empty() || (by != by_uid.end() && by->second == it->second));
        if (!asked_before) pod_job(item);
        if (auto error = bind_pod(key, node, asked_before); !error.empty()) {
          refused[key] = std::move(error);
        } else {
          ++(asked_before ? bound : added);
        }
      } catch (const Refusal& e) {
        refused[key] = e.message;
      } catch (const Error& e) {
        refused[key] = e.what();
      } catch (const nlohmann::json::exception& e) {
        refused[key] = e.what();
      }
    }
    std::size_t unconfirmed = 0;
    if (complete) {
      // Every pod of the cluster was listed: a held pod missing from this list and from the
      // previous complete one (held then, and not bound again since) was deleted. One list
      // is not enough: it may have been taken before the pod was bound.
      std::map<std::string, std::int64_t> missing_now;
      std::vector<std::string> confirmed;
      for (const auto& [key, id] : by_pod) {
        if (placed[id].empty() || listed.contains(key)) continue;
        const auto before = missing_once.find(key);
        if (before != missing_once.end() && before->second == assumed[id]) confirmed.push_back(key);
        else missing_now[key] = assumed[id];
      }
      for (const auto& key : confirmed) forget(by_pod.find(key));
      gone += confirmed.size();
      unconfirmed = missing_now.size();
      missing_once = std::move(missing_now);
    }
    return json_response(200, {{"bound", bound},
                               {"added", added},
                               {"already_held", held},
                               {"not_on_a_node", pending},
                               {"finished", finished},
                               {"deleted", gone},
                               {"missing_once", unconfirmed},
                               {"refused", refused}});
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

  /// ExtenderPreemptionArgs -> ExtenderPreemptionResult. For each node kube-scheduler's
  /// preemption proposes, the victims as gpusched sees the node (its devices, GPU-memory shares,
  /// MIG instances, which kube-scheduler may not count):
  ///   - kube-scheduler's victims are removed; if the pod still does not fit, the extender adds
  ///     pods it holds on that node with a lower priority than the pod's (preemptible ones,
  ///     lowest priority first) until it fits; if it never does, the node is dropped;
  ///   - then, as kube-scheduler's DefaultPreemption does (selectVictimsOnNode), each victim is
  ///     put back, most important first (higher priority, then the one bound earlier), and stays
  ///     when the pod still fits: the fewest victims that make room.
  /// Victims the extender does not hold are kept as proposed (it cannot judge them). The result
  /// names victims by UID (MetaVictims); NumPDBViolations is passed through (gpusched knows no
  /// PodDisruptionBudgets). A node it does not know is dropped.
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
    std::map<std::uint32_t, std::string> uid_of;   // held pods' UIDs (victims are named by UID)
    for (const auto& [uid, j] : by_uid) uid_of[j] = uid;
    const auto priority = jobs[id].priority;
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
      std::vector<std::string> foreign;   // victims the extender does not hold: kept as proposed
      std::vector<std::uint32_t> gone;    // held victims
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
        if (job && !placed[*job].empty()) {
          if (std::find(gone.begin(), gone.end(), *job) == gone.end()) gone.push_back(*job);
          if (!uid.empty()) uid_of[*job] = uid;   // as kube-scheduler names it
        } else if (!uid.empty()) {
          foreign.push_back(uid);
        }
      }
      const auto node = cluster->find_node(node_name);
      if (!node) continue;
      const NodeId only[] = {*node};
      ClusterState without = *cluster;
      auto take_out = [&](std::uint32_t j) {
        for (const auto& p : placed[j]) without.release(jobs[j].request, p);
      };
      auto fits = [&] { return decide(id, only, &without, false, false).chosen.has_value(); };
      for (const auto j : gone) take_out(j);
      if (!fits()) {
        // More room, from pods the extender holds there with a lower priority, lowest first.
        std::vector<std::uint32_t> more;
        for (std::uint32_t j = 0; j < jobs.size(); ++j) {
          if (placed[j].empty() || !jobs[j].constraints.preemptible || jobs[j].priority >= priority) continue;
          if (std::find(gone.begin(), gone.end(), j) != gone.end() || !uid_of.count(j)) continue;
          if (std::any_of(placed[j].begin(), placed[j].end(), [&](const TaskPlacement& p) { return p.node == *node; })) more.push_back(j);
        }
        std::stable_sort(more.begin(), more.end(), [&](std::uint32_t a, std::uint32_t b) { return jobs[a].priority < jobs[b].priority; });
        bool room = false;
        for (const auto j : more) {
          take_out(j);
          gone.push_back(j);
          if ((room = fits())) break;
        }
        if (!room) continue;
      }
      // Reprieve, most important first: put each victim back while the pod still fits.
      std::stable_sort(gone.begin(), gone.end(), [&](std::uint32_t a, std::uint32_t b) {
        if (jobs[a].priority != jobs[b].priority) return jobs[a].priority > jobs[b].priority;
        return assumed[a] < assumed[b];
      });
      std::vector<std::uint32_t> evict;
      for (const auto j : gone) {
        for (const auto& p : placed[j]) without.undo_release(jobs[j].request, p);   // GIs as they were
        if (fits()) continue;   // reprieved
        take_out(j);
        evict.push_back(j);
      }
      nlohmann::json uids = nlohmann::json::array();
      for (const auto& uid : foreign) uids.push_back({{"UID", uid}});
      bool named = true;   // a victim without a UID cannot be named to kube-scheduler: drop the node
      for (const auto j : evict) {
        const auto it = uid_of.find(j);
        if (it == uid_of.end()) named = false;
        else uids.push_back({{"UID", it->second}});
      }
      if (named) kept[node_name] = {{"Pods", uids}, {"NumPDBViolations", pdb}};
    }
    return json_response(200, {{"NodeNameToMetaVictims", kept}});
  }

  ExtenderResponse remove(const nlohmann::json& args) {
    const auto name = string_member(args, "PodName", "pod");
    const auto ns = optional_string(args, "PodNamespace");
    const std::string key = (ns.empty() ? "default" : ns) + "/" + name;
    const auto it = by_pod.find(key);
    if (it == by_pod.end() || placed[it->second].empty()) return json_response(200, {{"Error", "pod " + key + " holds no devices here"}});
    release_pod(it->second);
    by_pod.erase(it);
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
    // HAMi (Project-HAMi/HAMi): on a node its device plugin registered, the scheduler's Filter
    // writes hami.io/vgpu-node, hami.io/vgpu-time (Unix s) and the devices under both
    // hami.io/vgpu-devices-to-allocate and hami.io/vgpu-devices-allocated
    // (pkg/scheduler/scheduler.go; PatchAnnotations), and its Bind hami.io/bind-phase
    // "allocating" and hami.io/bind-time (Unix s); the device plugin hands out what
    // to-allocate names. The devices are EncodePodSingleDevice's (pkg/device/devices.go):
    // "UUID,NVIDIA,<memory MiB>,<cores %>:" per GPU, ";" after each container. gpusched
    // places a pod's request as one task: one container. A whole GPU is HAMi's default
    // request (all its memory, cores 0).
    const auto node = p.empty() ? std::nullopt : std::optional<NodeId>(p[0].node);
    if (node && node->value < hami.size() && !hami[node->value].empty() &&
        (g.mode == GpuMode::kWhole || g.mode == GpuMode::kShared) && !p[0].gpus.empty()) {
      const auto& devices = hami[node->value];
      // One entry per spec.containers entry, in order, each with as many of the pod's GPUs as
      // that container asks for (HAMi's device plugin hands entry i to container i). When the
      // containers' counts do not add up to the GPUs granted, the first container asking for a
      // GPU (else the first) gets them all.
      const auto& layout = gpu_containers[id];
      const auto& grants = p[0].gpus;
      std::vector<std::string> per(std::max<std::size_t>(layout.size(), 1));
      std::size_t asked_total = 0;
      for (const auto n : layout) asked_total += n;
      std::vector<std::size_t> owner(grants.size(), 0);
      if (asked_total == grants.size()) {
        std::size_t c = 0, used = 0;
        for (auto& o : owner) {
          while (used == layout[c]) {
            ++c;
            used = 0;
          }
          o = c;
          ++used;
        }
      } else {
        const auto first = std::find_if(layout.begin(), layout.end(), [](std::uint16_t n) { return n > 0; });
        std::fill(owner.begin(), owner.end(), first == layout.end() ? 0 : static_cast<std::size_t>(first - layout.begin()));
      }
      for (std::size_t k = 0; k < grants.size(); ++k) {
        const auto& grant = grants[k];
        const auto& dev = devices[grant.index];
        std::int64_t memory = grant.memory_mib;
        if (g.mode == GpuMode::kWhole || memory <= 0) {
          memory = dev.memory_mib > 0 ? dev.memory_mib : cluster->catalog()[cluster->gpus(p[0].node)[grant.index].model].memory_mib;
        }
        const std::int64_t cores = g.mode == GpuMode::kShared ? grant.milli / 10 : 0;
        per[owner[k]] += dev.uuid + ",NVIDIA," + std::to_string(memory) + "," + std::to_string(cores) + ":";
      }
      std::string list;
      for (const auto& one : per) list += one + ";";
      a["hami.io/vgpu-node"] = cluster->spec(p[0].node).name;
      a["hami.io/vgpu-devices-to-allocate"] = list;
      a["hami.io/vgpu-devices-allocated"] = list;
      a["hami.io/bind-phase"] = "allocating";
      if (assumed[id] > 0) {   // bound here (a pod bound in the snapshot has its own already)
        const auto seconds = std::to_string(assumed[id] / 1'000'000'000);
        a["hami.io/vgpu-time"] = seconds;
        a["hami.io/bind-time"] = seconds;
      }
    }
    return a;
  }

  /// Reads HAMi's device registration of every node that has one (see `hami`). Its current form
  /// is JSON (device.MarshalNodeDevices: [{"id", "index", "count", "devmem", "devcore", "type",
  /// ...}]); the older one colon-separated "id,count,devmem,devcore,type,numa,health[,index,mode]:"
  /// (DecodeNodeDevices). Devices are taken in the order listed, which is the device plugin's
  /// GPU order; a list that does not give one device per GPU of the node is refused.
  void read_hami_registrations(const std::filesystem::path& nodes_file) {
    static constexpr std::string_view kKey = "hami.io/node-nvidia-register";
    hami.assign(cluster->node_count(), {});
    for_each_pod_object(nodes_file, [&](const nlohmann::json& item, const std::string& key) {
      const auto& meta = item["metadata"];
      if (!meta.contains("annotations") || !meta["annotations"].is_object()) return;
      const auto& ann = meta["annotations"];
      const auto it = ann.find(kKey);
      if (it == ann.end()) return;
      const std::string name = key.substr(key.find('/') + 1);
      const auto node = cluster->find_node(name);
      if (!node) return;
      const auto bad = [&](const std::string& why) {
        throw_error(ErrorCode::kTraceBadValue, {nodes_file.string(), 0, "metadata.annotations." + std::string(kKey)},
                    "node " + name + ": " + why);
      };
      if (!it->is_string()) bad("expected a string");
      const std::string text = it->get<std::string>();
      std::vector<HamiDevice> devices;
      const auto first = text.find_first_not_of(" \t\r\n");
      if (first != std::string::npos && text[first] == '[') {
        const auto list = nlohmann::json::parse(text, nullptr, false);
        if (!list.is_array()) bad("not valid JSON (expected HAMi's list of devices)");
        std::vector<std::int64_t> index;   // "index" (omitted when 0: omitempty)
        for (const auto& d : list) {
          index.push_back(d.is_object() && d.contains("index") && d["index"].is_number_integer() ? d["index"].get<std::int64_t>() : 0);
          if (!d.is_object() || !d.contains("id") || !d["id"].is_string() || d["id"].get<std::string>().empty()) {
            bad("each device needs a string \"id\" (the GPU's UUID)");
          }
          HamiDevice dev{d["id"].get<std::string>(), 0};
          if (d.contains("devmem")) {
            if (!d["devmem"].is_number_integer() || d["devmem"].get<std::int64_t>() < 0) bad("\"devmem\" must be a non-negative integer (MiB)");
            dev.memory_mib = d["devmem"].get<std::int64_t>();
          }
          devices.push_back(std::move(dev));
        }
        // In GPU index order when "index" numbers them 0..n-1; otherwise as listed.
        std::vector<std::int64_t> sorted = index;
        std::sort(sorted.begin(), sorted.end());
        bool numbered = true;
        for (std::size_t k = 0; k < sorted.size(); ++k) numbered = numbered && sorted[k] == static_cast<std::int64_t>(k);
        if (numbered) {
          std::vector<HamiDevice> by_index(devices.size());
          for (std::size_t k = 0; k < devices.size(); ++k) by_index[static_cast<std::size_t>(index[k])] = std::move(devices[k]);
          devices = std::move(by_index);
        }
      } else {
        std::size_t at = 0;
        while (at < text.size()) {
          auto end = text.find(':', at);
          if (end == std::string::npos) end = text.size();
          const std::string one = text.substr(at, end - at);
          at = end + 1;
          if (one.empty()) continue;
          std::vector<std::string> fields;
          for (std::size_t f = 0;;) {
            const auto comma = one.find(',', f);
            fields.push_back(one.substr(f, comma == std::string::npos ? std::string::npos : comma - f));
            if (comma == std::string::npos) break;
            f = comma + 1;
          }
          if (fields.size() < 7 || fields[0].empty()) {
            bad("device \"" + one + "\": expected id,count,devmem,devcore,type,numa,health[,index,mode]");
          }
          HamiDevice dev{fields[0], 0};
          const auto& mem = fields[2];
          if (mem.empty() || mem.size() > 12 || !std::all_of(mem.begin(), mem.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; })) {
            bad("device \"" + one + "\": devmem \"" + mem + "\" is not a number of MiB");
          }
          dev.memory_mib = std::stoll(mem);
          devices.push_back(std::move(dev));
        }
      }
      const auto gpus = cluster->gpus(*node).size();
      if (devices.size() != gpus) {
        bad("lists " + std::to_string(devices.size()) + " devices, but the node has " + std::to_string(gpus) + " GPUs");
      }
      hami[node->value] = std::move(devices);
    });
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
      << "# HELP gpusched_extender_answers_reused_total Filter and prioritize calls answered from an earlier decision (same pod and candidates, cluster unchanged).\n"
         "# TYPE gpusched_extender_answers_reused_total counter\n"
      << "gpusched_extender_answers_reused_total " << reused << "\n"
      << "# HELP gpusched_extender_bindings_total Pods bound.\n# TYPE gpusched_extender_bindings_total counter\n"
      << "gpusched_extender_bindings_total " << bindings << "\n"
      << "# HELP gpusched_extender_bind_errors_total Bind calls answered with an Error.\n"
         "# TYPE gpusched_extender_bind_errors_total counter\n"
      << "gpusched_extender_bind_errors_total " << bind_errors << "\n"
      << "# HELP gpusched_extender_binder_errors_total Bindings the real binder refused (the placement was forgotten again).\n"
         "# TYPE gpusched_extender_binder_errors_total counter\n"
      << "gpusched_extender_binder_errors_total " << binder_errors << "\n"
      << "# HELP gpusched_extender_deletions_total Pods removed (POST /pods/delete, or /pods/sync finding them finished or gone).\n"
         "# TYPE gpusched_extender_deletions_total counter\n"
      << "gpusched_extender_deletions_total " << deletions << "\n"
      << "# HELP gpusched_extender_pods_forgotten_total Pods forgotten: deleted, or pending and not asked about since the last compaction.\n"
         "# TYPE gpusched_extender_pods_forgotten_total counter\n"
      << "gpusched_extender_pods_forgotten_total " << forgotten << "\n"
      << "# HELP gpusched_extender_pods_known Pods the extender keeps an entry for (bound or recently asked about, and not yet compacted away).\n"
         "# TYPE gpusched_extender_pods_known gauge\n"
      << "gpusched_extender_pods_known " << jobs.size() << "\n"
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
  m.binder = o.binder;
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
  // The scheduler is attached once to every pod of the snapshot, as `gpusched run` of it is.
  for (auto& p : pods) {
    m.by_pod[p.name] = static_cast<std::uint32_t>(m.jobs.size());
    m.jobs.push_back(std::move(p));
  }
  const auto snapshot_pods = m.jobs.size();
  m.placed.resize(snapshot_pods);
  m.shadow_placed.resize(snapshot_pods);
  m.assumed.assign(snapshot_pods, 0);
  m.stamp.assign(snapshot_pods, 0);
  m.source.resize(snapshot_pods);
  m.pod_uids.resize(snapshot_pods);
  m.gpu_containers.resize(snapshot_pods);
  m.asked.assign(snapshot_pods, m.epoch);
  for (std::uint32_t id = 0; id < snapshot_pods; ++id) {
    if (!m.jobs[id].constraints.bound) continue;
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
      if (it == m.by_pod.end()) return;
      if (!uid.empty()) m.by_uid[uid] = it->second;
      m.pod_uids[it->second] = uid;
      m.gpu_containers[it->second] = gpu_containers_of(item);
    });
  }
  m.read_hami_registrations(o.nodes);
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

namespace {

/// Whether the query string of `target` sets `name` to true (`name`, `name=true` or `name=1`).
/// Any other value is refused, so a misspelt `?complete=yes` is not taken as false.
bool query_flag(std::string_view target, std::string_view name) {
  const auto q = target.find('?');
  if (q == std::string_view::npos) return false;
  std::string_view rest = target.substr(q + 1);
  while (!rest.empty()) {
    const auto amp = rest.find('&');
    const std::string_view item = rest.substr(0, amp);
    rest = amp == std::string_view::npos ? std::string_view{} : rest.substr(amp + 1);
    const auto eq = item.find('=');
    if (item.substr(0, eq) != name) continue;
    const std::string_view value = eq == std::string_view::npos ? std::string_view("true") : item.substr(eq + 1);
    if (value == "true" || value == "1") return true;
    if (value == "false" || value == "0") return false;
    refuse(400, "query parameter " + std::string(name) + ": expected true or false, got \"" + std::string(value) + "\"");
  }
  return false;
}

}  // namespace

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
                                   {"/pods/delete", "pods_delete", &Impl::remove},
                                   {"/pods/sync", "pods_sync", &Impl::snapshot}};
    if (path == "/healthz" || path == "/metrics" || path == "/pods" || path == "/shadow") {
      verb = std::string(path.substr(1));
      if (method != "GET") refuse(405, std::string(path) + " takes GET", "");
      if (path == "/healthz") {
        r = {200, "ok", "text/plain; charset=utf-8"};
      } else if (path == "/metrics") {
        std::lock_guard lock(impl_->mu);   // the pod counts: read as decisions leave them
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
      if (route == std::end(routes)) refuse(404, "no such path: " + std::string(path) + " (POST /filter, /prioritize, /preempt, /bind, /pods/delete, /pods/sync; GET /healthz, /metrics, /pods, /shadow)", "");
      verb = std::string(route->verb);
      if (method != "POST") refuse(405, std::string(path) + " takes POST", "");
      if (route->post == &Impl::filter || route->post == &Impl::prioritize) {
        // kube-scheduler's every-pod calls: read by simdjson outside the lock, answered from
        // the decision both share. Any other shape takes the path below, which words errors.
        thread_local FastArgs fast;
        if (read_fast(body, fast)) {
          std::lock_guard lock(impl_->mu);
          r = impl_->fast(route->post == &Impl::filter, fast);
          impl_->record(verb, r.status, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
          return r;
        }
      }
      const auto args = parse_json(body, "request body", kTraceJsonErrors);
      if (!args.is_object()) refuse(400, "request body: expected a JSON object");
      std::unique_lock lock(impl_->mu);
      if (route->post == &Impl::bind && impl_->binder) {
        r = impl_->bind_through_binder(args, lock);
      } else if (route->post == &Impl::snapshot) {
        r = impl_->sync(args, query_flag(target, "complete"));
      } else {
        r = (impl_.get()->*(route->post))(args);
      }
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
