#pragma once
/// Shared declarations of the pybind11 module gpusched._core: one bind_* function per
/// component (core, policies, sim), plus the JSON -> Python conversion they all use.
#include <nlohmann/json.hpp>
#include <pybind11/pybind11.h>

namespace gpusched::python {

namespace py = pybind11;

/// Converts a JSON value to the matching Python object (dict, list, str, int, float, bool, None).
/// Requires the GIL. O(size of the value).
py::object json_to_py(const nlohmann::json& j);

/// Exception classes, exception translation, the GPU catalog, the version.
void bind_core(py::module_& m);
/// Plugin registry and built-in profiles.
void bind_policies(py::module_& m);
/// Scenarios, runs, results, outputs and the command line.
void bind_sim(py::module_& m);
/// Published experiments (FGD).
void bind_experiments(py::module_& m);

}  // namespace gpusched::python
