// gpusched._core: the thin compiled layer under the pure-Python package `gpusched`.
#include "bindings.hpp"

PYBIND11_MODULE(_core, m) {
  m.doc() = "gpusched._core: compiled core of the gpusched cluster-scheduling simulator (use the `gpusched` package)";
  gpusched::python::bind_core(m);
  gpusched::python::bind_policies(m);
  gpusched::python::bind_plugins(m);
  gpusched::python::bind_sim(m);
  gpusched::python::bind_experiments(m);
  gpusched::python::bind_dra(m);
}
