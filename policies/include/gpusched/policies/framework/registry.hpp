#pragma once
/// Plugin registry: name -> factory, with the hooks each plugin implements and its arguments.
///
/// Example:
///   Registry reg = Registry::with_builtins();
///   reg.add({"my-score", "prefers even nodes", {"score"}, {}, [](const PluginContext&) {
///     return std::make_unique<MyScore>(); }});
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <gpusched/error.hpp>
#include <gpusched/policies/framework/plugin.hpp>

namespace gpusched::policies {

/// One documented argument of a plugin.
struct PluginArg {
  std::string name;
  std::string type;          ///< "number", "string", "array", ...
  std::string description;
  nlohmann::json default_value;
};

struct PluginInfo {
  std::string name;
  std::string description;
  std::vector<std::string> hooks;  ///< "queue_sort", "pre_filter", "filter", "score", "device_select", ...
  std::vector<PluginArg> args;
  /// Builds the plugin; throws ProfileError(kProfileBadArgs) on bad arguments.
  std::function<std::unique_ptr<Plugin>(const PluginContext&)> factory;
};

class Registry {
 public:
  /// The plugins shipped with gpusched (a new registry: add your own plugins to it).
  static Registry with_builtins();
  /// The plugins shipped with gpusched, built once per process (immutable; thread-safe).
  static const Registry& builtins();

  /// Adds a plugin, keeping the list sorted by name; one with the same name is replaced.
  void add(PluginInfo info);
  /// Removes the plugin named `name`; false when there is none.
  bool remove(std::string_view name);
  [[nodiscard]] const PluginInfo* find(std::string_view name) const;
  /// All plugins, sorted by name.
  [[nodiscard]] const std::vector<PluginInfo>& plugins() const { return plugins_; }
  /// "best-fit, first-fit, ..." for error messages; only those that implement `hook` when given.
  [[nodiscard]] std::string known_names(std::string_view hook = {}) const;

 private:
  std::vector<PluginInfo> plugins_;
};

/// Rejects argument names not in `info.args` and fills in defaults. Throws ProfileError at
/// `where` (its field gets "/args/<name>" appended).
nlohmann::json resolve_args(const PluginInfo& info, const nlohmann::json& given, const Location& where);

}  // namespace gpusched::policies
