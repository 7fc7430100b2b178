#pragma once
/// `gpusched serve`: a Kubernetes scheduler extender (issue 16) that makes a profile's decisions
/// for a live cluster. kube-scheduler calls it over HTTP with the extender v1 protocol
/// (k8s.io/kube-scheduler/extender/v1, types.go): filter, prioritize and bind; the extender keeps
/// its own copy of the cluster, started from a `kubectl get nodes,pods -o json` snapshot and
/// updated by the bindings it makes and the pods it is told are gone.
///
/// This class is the protocol without the network: handle() takes a request's method, path and
/// body and gives the response (status, JSON body), so every verb is tested without a socket.
/// serve_http() (serve.hpp) puts it behind an HTTP/1.1 server. handle() is safe to call from
/// several threads: decisions on the shared cluster are serialised.
///
/// Verbs (JSON shapes and field names exactly as the v1 Go types marshal them):
///   POST /filter      ExtenderArgs {Pod, Nodes | NodeNames} -> ExtenderFilterResult
///                     {Nodes | NodeNames, FailedNodes, FailedAndUnresolvableNodes, Error}: the
///                     profile's filters on each candidate node as the cluster is now; a node the
///                     extender does not know is failed as unresolvable. Nodes given as objects
///                     (nodeCacheCapable: false) come back as the same objects.
///   POST /prioritize  ExtenderArgs -> HostPriorityList [{Host, Score}]: 0..10
///                     (MaxExtenderPriority); the node the profile would choose among the
///                     candidates gets 10, every other feasible one floor(9 x (total - lowest) /
///                     (highest - lowest)) of the profile's score totals (0 when all are equal),
///                     infeasible ones 0. With a large extender weight kube-scheduler then binds
///                     where gpusched would.
///   POST /bind        ExtenderBindingArgs {PodName, PodNamespace, PodUID, Node} ->
///                     ExtenderBindingResult {Error}: places the pod (seen in an earlier filter or
///                     prioritize call, or pending in the snapshot) on that node, devices chosen
///                     by the profile, and keeps it. Error is set (HTTP 200, as kube-scheduler
///                     expects) when it does not fit there or the pod is unknown. With a binder
///                     (ExtenderOptions::binder) the placement is assumed, the binder called
///                     outside the decision lock, and the placement forgotten again when the
///                     binder refuses (kube-scheduler's assume / bind / ForgetPod).
///   POST /preempt     ExtenderPreemptionArgs {Pod, NodeNameToMetaVictims | NodeNameToVictims} ->
///                     ExtenderPreemptionResult {NodeNameToMetaVictims}: the proposed nodes where
///                     the pod fits the profile's filters once that node's victims are gone, with
///                     the same victims (by UID); the others are dropped.
///   POST /pods/delete {PodName, PodNamespace} -> {Error}: the pod is gone; its devices are free.
///   POST /pods/sync   a `kubectl get pods -A -o json` list taken later -> {bound, added,
///                     already_held, not_on_a_node, finished, deleted, refused}: pods the list shows on a node that
///                     the extender does not hold are bound there, as if bind had been called
///                     (kube-scheduler binds itself when the extender has no bindVerb); shadow
///                     mode compares those it was asked about with its own choice. Held pods
///                     the list shows finished (Succeeded, Failed) give their devices back
///                     (`finished`); with `?complete=true` (the list is every pod of the
///                     cluster) so do held pods it does not list (`deleted`).
///   GET  /pods        every pod the extender holds: node, devices (jobs.csv's placement) and
///                     the device annotations a device plugin would read.
///   GET  /shadow      shadow mode (ExtenderOptions::shadow): binds compared, agreement %, and
///                     GPU allocation and fragmentation of the real and the counterfactual cluster.
///   GET  /healthz     "ok".
///   GET  /metrics     Prometheus text: requests per verb and status, latency histograms per
///                     verb, decisions, bindings, errors.
/// Bad input (malformed JSON, wrong types, a pod the importer refuses) is a 400 with
/// {"Error": message, "error_id": "gpusched.trace_error.102"} (the CLI's stable ids); an unknown
/// path is a 404, a wrong method 405. The server never stops on a bad request.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <gpusched/policies/framework/registry.hpp>

namespace gpusched::scenario {

/// What a real binder is asked to do: the Binding object kube-scheduler's DefaultBinder creates
/// (pkg/scheduler/framework/plugins/defaultbinder/default_binder.go: metadata {namespace, name,
/// uid}, target {kind Node, name}), with the device annotations of the placement (GET /pods'
/// `annotations`), which the API server copies onto the pod when it binds it.
struct BindingRequest {
  std::string pod_name, pod_namespace, pod_uid, node;
  std::vector<std::pair<std::string, std::string>> annotations;
};

/// Binds a pod in the real cluster (ExtenderOptions::binder): "" when the cluster accepted the
/// binding, otherwise why not (the bind call is answered with that Error and the pod stays
/// pending in the extender). Called from the thread answering the bind, without the extender's
/// lock held, possibly from several threads at once. An exception counts as a refusal.
using Binder = std::function<std::string(const BindingRequest&)>;

struct ExtenderOptions {
  std::string profile = "kube-default";   ///< built-in profile name or profile JSON file
  std::filesystem::path nodes;            ///< kubectl get nodes -o json (required)
  std::filesystem::path pods;             ///< kubectl get pods -A -o json (optional): bound pods hold their devices
  std::uint64_t seed = 42;                ///< for profiles that draw (random tie-breaks)
  /// Shadow mode: every bind is also compared with the profile's own choice. The pod is bound
  /// where kube-scheduler asked (the extender's cluster follows the real one); the profile's
  /// choice on that cluster is recorded next to it, and a second, counterfactual cluster takes
  /// each pod where the profile would have put it. `GET /shadow` gives the agreement and the GPU
  /// allocation and fragmentation (FGD's measure, the snapshot's typical pod types) of both.
  bool shadow = false;
  /// Shadow mode: called with one JSON line per bind ({"pod", "kube_node", "gpusched_node", "agree"}).
  std::function<void(const std::string&)> log;
  /// The real binder (api_binder() in serve.hpp posts Bindings to the API server). Empty: a bind
  /// is recorded in the extender's own state only.
  Binder binder;
};

struct ExtenderResponse {
  int status = 200;
  std::string body;
  std::string content_type = "application/json";
};

class Extender {
 public:
  /// Reads the snapshot and places its bound pods on their nodes. Throws gpusched::Error (trace,
  /// scenario or profile error) for a bad snapshot or profile, or when a bound pod does not fit
  /// the node the snapshot puts it on.
  explicit Extender(const ExtenderOptions& options, const policies::Registry& registry = policies::Registry::builtins());
  ~Extender();
  Extender(const Extender&) = delete;
  Extender& operator=(const Extender&) = delete;

  /// One request: `method` "GET" / "POST", `target` the path (a query string is ignored).
  ExtenderResponse handle(std::string_view method, std::string_view target, std::string_view body);

  /// Records a request the HTTP layer answered itself (413 body too large, 408 too slow, 503
  /// busy), so /metrics counts it.
  void record(std::string_view verb, int status, double seconds);

  [[nodiscard]] std::string profile_name() const;
  [[nodiscard]] std::size_t node_count() const;
  [[nodiscard]] std::size_t pod_count() const;   ///< pods holding devices now

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpusched::scenario
