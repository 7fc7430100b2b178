#pragma once
// Internal: error reporting and field checks shared by the translators of Kubernetes objects
// (k8s_objects.cpp: reading and merging; k8s_quota_objects.cpp: Kueue, Volcano, PriorityClass,
// ResourceQuota; k8s_scheduler_config.cpp: KubeSchedulerConfiguration).
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include <gpusched/error.hpp>
#include <gpusched/scenario/k8s_objects.hpp>

namespace gpusched::scenario::detail {

/// Errors and checks for one object: every message names the file, the line, the document,
/// the kind and name, and the field path.
class ObjectContext {
 public:
  explicit ObjectContext(const KubernetesObject& o) : o_(o) {}

  [[nodiscard]] const KubernetesObject& object() const { return o_; }
  /// The line of `path`, or of its nearest parent that has one.
  [[nodiscard]] std::int64_t line(std::string path) const;
  [[nodiscard]] Location at(const std::string& path) const;
  [[noreturn]] void fail(ErrorCode code, const std::string& path, const std::string& msg) const;
  /// A field gpusched does not model (kScenarioUnknownField): "not modelled: <why>".
  [[noreturn]] void unmodelled(const std::string& path, const std::string& why) const;
  /// An unknown field: lists the known ones.
  [[noreturn]] void unknown(const std::string& path, std::string_view known) const;

  void expect_object(const nlohmann::json& j, const std::string& path) const;
  void expect_array(const nlohmann::json& j, const std::string& path) const;
  [[nodiscard]] std::string str(const nlohmann::json& j, const std::string& path) const;
  [[nodiscard]] std::int64_t integer(const nlohmann::json& j, const std::string& path, std::int64_t min, std::int64_t max) const;
  [[nodiscard]] bool boolean(const nlohmann::json& j, const std::string& path) const;
  /// A Kubernetes quantity (number or string, "500m", "1.5") as a double.
  [[nodiscard]] double quantity(const nlohmann::json& j, const std::string& path) const;

  /// Checks the top-level keys: apiVersion, kind, metadata (name and namespace read; uid,
  /// resourceVersion, generation, creationTimestamp, managedFields, annotations, labels, ...
  /// ignored; anything else an error), status (ignored), and `fields` (the kind's own).
  void check_top(std::initializer_list<std::string_view> fields) const;

 private:
  const KubernetesObject& o_;
};

/// "a, b, c" of a list.
std::string join(std::initializer_list<std::string_view> names);

/// Kueue, Volcano, PriorityClass, WorkloadPriorityClass and ResourceQuota objects (everything
/// but KubeSchedulerConfiguration) into `out`.
void translate_quota_objects(const std::vector<KubernetesObject>& objects, const GpuCatalog& catalog,
                             const policies::Registry& registry, KubernetesTranslation& out);
/// A KubeSchedulerConfiguration into a profile object.
nlohmann::json translate_scheduler_config(const KubernetesObject& object, const policies::Registry& registry);

}  // namespace gpusched::scenario::detail
