// Kubernetes Dynamic Resource Allocation from Python: gpusched._core.dra_allocate / dra_slices
// (the `gpusched dra` commands; gpusched.dra wraps them in DataFrames).
#include <gpusched/scenario/k8s_dra.hpp>
#include <gpusched/scenario/scenario.hpp>

#include <pybind11/stl.h>

#include "bindings.hpp"

namespace gpusched::python {

void bind_dra(py::module_& m) {
  m.def(
      "dra_allocate",
      [](const std::vector<std::string>& paths, const std::string& node) {
        nlohmann::json out;
        {
          py::gil_scoped_release release;
          std::vector<scenario::KubernetesObject> objects;
          for (const auto& p : paths) {
            auto more = scenario::read_kubernetes_objects(p);
            objects.insert(objects.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
          }
          out = scenario::dra_json(scenario::allocate_claims(scenario::read_dra_objects(objects), node));
        }
        return json_to_py(out);
      },
      py::arg("paths"), py::arg("node") = "",
      "Allocates the ResourceClaims in kubectl files (with their ResourceSlices, DeviceClasses and Nodes) as "
      "`gpusched dra allocate` does: a list with one dict per claim, {claim, node, allocation} or {claim, pending}.");
  m.def(
      "dra_slices",
      [](const std::string& scenario_path) {
        nlohmann::json out;
        const auto registry = current_registry();
        {
          py::gil_scoped_release release;
          const auto sc = scenario::load_scenario(scenario_path, registry);
          out = scenario::nvidia_dra_objects(sc.nodes, sc.catalog);
        }
        return json_to_py(out);
      },
      py::arg("scenario"),
      "The ResourceSlices NVIDIA's DRA driver (Google's TPU driver for TPU hosts) would publish for a scenario's cluster, "
      "and their DeviceClasses, as a "
      "kubectl List (a dict), as `gpusched dra slices` prints it.");
}

}  // namespace gpusched::python
