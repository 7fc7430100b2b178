// Policy bindings: the plugin registry and the built-in profiles, as plain Python data.
#include <string>

#include <nlohmann/json.hpp>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <gpusched/json_input.hpp>
#include <gpusched/policies/framework/profile.hpp>
#include <gpusched/policies/framework/registry.hpp>
#include <gpusched/policies/framework/scheduler.hpp>

#include "bindings.hpp"

namespace gpusched::python {

void bind_policies(py::module_& m) {
  m.def(
      "plugins",
      [] {
        const auto registry = current_registry();
        py::list out;
        for (const auto& info : registry.plugins()) {
          py::list args;
          for (const auto& a : info.args) {
            py::dict arg;
            arg["name"] = a.name;
            arg["type"] = a.type;
            arg["description"] = a.description;
            arg["default"] = json_to_py(a.default_value);
            args.append(arg);
          }
          py::dict d;
          d["name"] = info.name;
          d["hooks"] = py::cast(info.hooks);
          d["description"] = info.description;
          d["args"] = args;
          out.append(d);
        }
        return out;
      },
      "The registered scheduling plugins, sorted by name: dicts with name, hooks, description and "
      "args (each with name, type, description, default).");

  m.def(
      "profiles",
      [] {
        py::dict out;
        for (const auto& name : policies::builtin_profile_names()) {
          out[py::str(name)] = json_to_py(policies::builtin_profile(name).to_json());
        }
        return out;
      },
      "The built-in profiles: {name: profile as a dict (description, queue_sort, filter, score, ...)}.");

  m.def(
      "check_profile",
      [](const std::string& text, const std::string& source) {
        // Every JSON problem (syntax, depth, 1e999) is a ProfileError here, as the profile's other errors.
        constexpr JsonErrors kProfileJson{ErrorCode::kProfileBadArgs, ErrorCode::kProfileBadArgs, ErrorCode::kProfileBadArgs};
        const nlohmann::json doc = parse_json(text, source, kProfileJson);
        const auto profile = doc.is_string() ? policies::builtin_profile(doc.get<std::string>(), source)
                                             : policies::Profile::from_json(doc, source);
        // Building the scheduler validates every plugin, hook, weight and argument.
        const policies::Scheduler check(profile, current_registry(), 0);
        return json_to_py(profile.to_json());
      },
      py::arg("profile_json"), py::arg("source") = "<profile>",
      "Validates a profile (JSON text of a name or an object); returns it resolved (extends applied). "
      "Raises ProfileError.");
}

}  // namespace gpusched::python
