#pragma once
/// Shared declarations of the pybind11 module gpusched._core: one bind_* function per
/// component (core, policies, sim), plus the JSON -> Python conversion they all use.
#include <cxxabi.h>

#include <optional>

#include <nlohmann/json.hpp>
#include <pybind11/pybind11.h>

#include <gpusched/error.hpp>
#include <gpusched/interrupt.hpp>
#include <gpusched/policies/framework/registry.hpp>

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
/// Scheduling plugins written in Python (JobInfo, NodeView, registration).
void bind_plugins(py::module_& m);
/// Kubernetes Dynamic Resource Allocation (dra_allocate, dra_slices).
void bind_dra(py::module_& m);
/// The plugins this process knows: the built-ins plus every registered Python plugin (a snapshot;
/// copies no Python object, so it may outlive the GIL). Thread-safe.
policies::Registry current_registry();
/// Call before taking the GIL from a thread that may run while the interpreter exits: parks the
/// thread for good then (taking the GIL would unwind it through C++ frames and crash).
void park_if_interpreter_exiting();
/// True while the interpreter is finalizing (or its atexit hooks ran).
bool interpreter_exiting();
/// Sleeps for good (a thread the exiting interpreter must never see again).
[[noreturn]] void park_forever();

/// Runs `f` (a bare CPython API call that may take the GIL: a call into Python code, taking the
/// GIL back) so that, when CPython ends this thread because the interpreter is exiting (it calls
/// pthread_exit: a forced unwind), no C++ frame of ours is unwound with Python objects in it:
/// the thread parks here instead. Keep `f` free of objects with destructors.
template <class F>
auto no_forced_unwind(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (abi::__forced_unwind&) {
    park_forever();
  }
}

/// Calls `fn(*args)` with the GIL held, parking the thread if the interpreter ends it meanwhile
/// (see no_forced_unwind). Throws py::error_already_set when the call raised.
inline py::object call_python(const py::handle& fn, const py::tuple& args) {
  PyObject* raw = no_forced_unwind([&] { return PyObject_Call(fn.ptr(), args.ptr(), nullptr); });
  if (raw == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(raw);
}


/// The GIL for one call into Python from a simulation thread. Parks the thread when the
/// interpreter is exiting; and when a daemon thread is being torn down by CPython during exit
/// (a forced unwind through our frames), releases nothing, since it holds nothing.
class PyCallGil {
 public:
  PyCallGil() {
    park_if_interpreter_exiting();
    state_ = no_forced_unwind([] { return PyGILState_Ensure(); });
  }
  ~PyCallGil() {
    if (interpreter_exiting() && PyGILState_Check() == 0) return;
    PyGILState_Release(state_);
  }
  PyCallGil(const PyCallGil&) = delete;
  PyCallGil& operator=(const PyCallGil&) = delete;

 private:
  PyGILState_STATE state_;
};

/// Releases the GIL while C++ runs (a simulation); takes it back after, unless the interpreter
/// is exiting meanwhile: then the thread parks (taking it would end the thread mid-unwind).
class ReleasedGil {
 public:
  ReleasedGil() : saved_(PyEval_SaveThread()) {}
  ~ReleasedGil() {
    park_if_interpreter_exiting();
    no_forced_unwind([this] { PyEval_RestoreThread(saved_); });
  }
  ReleasedGil(const ReleasedGil&) = delete;
  ReleasedGil& operator=(const ReleasedGil&) = delete;

 private:
  PyThreadState* saved_;
};

/// Ctrl-C for a simulation run from Python (construct and destroy with the GIL held). On Python's
/// main thread, while alive, the engine's interrupt poll (every 1024 events or scheduling cycles)
/// takes the GIL and runs Python's signal handlers (PyErr_CheckSignals). When one raises
/// (KeyboardInterrupt for Ctrl-C) the exception is kept and the run stops with InterruptedError;
/// `raise_pending()` then raises the kept exception itself. Elsewhere it does nothing: Python runs
/// signal handlers only on its main thread.
class SignalPoll {
 public:
  SignalPoll();
  ~SignalPoll();
  SignalPoll(const SignalPoll&) = delete;
  SignalPoll& operator=(const SignalPoll&) = delete;
  /// True on the main thread (the poll is installed).
  [[nodiscard]] bool active() const noexcept { return active_; }
  /// Runs Python's signal handlers now (takes the GIL); true when one raised (kept). Any thread
  /// of an active poll's run may call it.
  bool check();
  /// Throws the exception a signal handler raised meanwhile (py::error_already_set), if any.
  void raise_pending();

 private:
  static bool poll();
  InterruptPoll previous_ = nullptr;
  SignalPoll* outer_ = nullptr;
  bool active_ = false;
  std::optional<py::error_already_set> pending_;
};

/// Runs `f` (which releases the GIL itself) under a SignalPoll: an interruption raises the
/// signal handler's exception (KeyboardInterrupt), or KeyboardInterrupt when the process-wide
/// flag stopped the run.
template <class F>
auto interruptible(F&& f) -> decltype(f()) {
  SignalPoll signals;
  try {
    return f();
  } catch (const InterruptedError&) {
    signals.raise_pending();
    throw;
  }
}

}  // namespace gpusched::python
