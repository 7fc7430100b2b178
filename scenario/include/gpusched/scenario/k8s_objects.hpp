#pragma once
/// The peers' own configuration objects, read as `kubectl get -o yaml` prints them, and
/// translated to gpusched scenario and profile inputs (docs/policies.md, "Kubernetes objects").
///
/// Read: YAML (one or many `---` documents) or JSON; an object, a `kind: List` (or
/// `<Kind>List`) with `items`. Kinds:
///   kueue.x-k8s.io/v1beta1     ClusterQueue, Cohort, ResourceFlavor, LocalQueue, WorkloadPriorityClass
///   scheduling.volcano.sh/v1beta1  Queue
///   scheduling.k8s.io/v1       PriorityClass
///   v1                         ResourceQuota
///   kubescheduler.config.k8s.io/v1  KubeSchedulerConfiguration
/// Every field gpusched does not model is an error naming the file, the line, the document
/// (1-based; "document 2 item 3" inside a List), the object's kind and name and the field path;
/// fields without scheduling meaning (metadata other than name/namespace, status) are ignored.
///
/// Example (a scenario's `"kubernetes_objects": ["kueue.yaml"]` does this):
///   auto objs = scenario::read_kubernetes_objects("kueue.yaml");
///   auto t = scenario::translate_kubernetes_objects(objs, GpuCatalog::builtin());
///   auto profile = scenario::with_plugin_args(policies::builtin_profile("kueue-cohorts"), t.plugin_args, "kueue.yaml");
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include <gpusched/gpu_catalog.hpp>
#include <gpusched/policies/framework/profile.hpp>
#include <gpusched/policies/framework/registry.hpp>

namespace gpusched::scenario {

/// One Kubernetes object as read from a file, as JSON, with the line of every field.
struct KubernetesObject {
  std::string file;            ///< the file as named in errors
  std::string where;           ///< "document 2" or "document 1 item 3" (1-based)
  std::string api_version, kind, name, namespace_name;
  nlohmann::json object;       ///< the whole object
  std::map<std::string, std::int64_t> lines;   ///< field path ("/spec/weight") -> 1-based line; "" = the object
};

/// Parses YAML or JSON text (several documents, Lists). Throws ScenarioError (kScenarioParse)
/// with file:line on a syntax error; a document that is not an object with apiVersion and kind
/// is kScenarioBadValue. Empty documents are skipped.
std::vector<KubernetesObject> parse_kubernetes_objects(std::string_view text, const std::string& source);
/// Reads a file (kScenarioCannotOpen when it cannot be read). `source` names it in errors
/// (default: the path).
std::vector<KubernetesObject> read_kubernetes_objects(const std::filesystem::path& path, const std::string& source = "");
/// One inline object (a scenario's `kubernetes_objects` entry that is an object).
KubernetesObject kubernetes_object_from_json(const nlohmann::json& object, const std::string& source, const std::string& where);

/// What the objects configure, in gpusched's terms.
struct KubernetesTranslation {
  /// Scenario `priority_classes` entries: name -> {"value", "preemption_policy", "global_default"}
  /// (PriorityClass and WorkloadPriorityClass).
  nlohmann::json priority_classes = nlohmann::json::object();
  /// Plugin name -> args: "capacity-queues" (Kueue objects), "resource-quota" (ResourceQuota,
  /// Volcano Queue capability), "drf" (Volcano Queue weights). Only plugins something configured.
  nlohmann::json plugin_args = nlohmann::json::object();
  /// A whole profile object from a KubeSchedulerConfiguration; null when none was given.
  nlohmann::json profile;
};

/// Translates objects (see the header comment and docs/policies.md for the mapping). `catalog`
/// maps ResourceFlavor node labels (nvidia.com/gpu.product) to GPU models; `registry` tells
/// whether the plugins a KubeSchedulerConfiguration needs exist. Throws ScenarioError naming
/// the object's file, line, document, kind, name and field.
KubernetesTranslation translate_kubernetes_objects(const std::vector<KubernetesObject>& objects, const GpuCatalog& catalog,
                                                   const policies::Registry& registry = policies::Registry::builtins());

/// `profile` with the translated plugin args in place: capacity-queues at filter and
/// post_filter, resource-quota at pre_filter (added when the profile lacks them, args set when
/// it lists them without args), drf as the queue sort (replacing priority-fifo). A plugin the
/// profile already configures with other args, or another queue sort than priority-fifo/drf
/// with Volcano weights, is a ScenarioError naming `source`.
policies::Profile with_plugin_args(policies::Profile profile, const nlohmann::json& plugin_args, const std::string& source);

/// Resolves a scenario document's `kubernetes_objects` (a list of file paths, relative to
/// `base_dir`, or inline objects): returns the document without that key, with the translated
/// priority classes added to `priority_classes` and the profile completed (the scenario's
/// profile, else the KubeSchedulerConfiguration's, else the scenario default, with the plugin
/// args merged by with_plugin_args). A document without the key is returned as it is.
/// `plugin_args` (optional) receives the translated plugin args, for a later profile override.
nlohmann::json resolve_kubernetes_objects(const nlohmann::json& doc, const std::string& source, const std::filesystem::path& base_dir,
                                          const policies::Registry& registry = policies::Registry::builtins(),
                                          nlohmann::json* plugin_args = nullptr);

}  // namespace gpusched::scenario
