// Core bindings: exception classes (C++ gpusched::Error -> Python GpuschedError and
// subclasses, with id/file/line/field attributes), the GPU catalog and the version.
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <gpusched/error.hpp>
#include <gpusched/gpu_catalog.hpp>
#include <gpusched/mig.hpp>
#include <gpusched/tpu.hpp>
#include <gpusched/json_input.hpp>
#include <gpusched/quantity.hpp>
#include <gpusched/traces/nvidia_smi.hpp>

#include "bindings.hpp"

namespace gpusched::python {
namespace {

/// The Python exception classes, created once at import and kept for the process lifetime
/// (deliberately never released: translation may run during interpreter shutdown).
struct ExceptionClasses {
  PyObject* base = nullptr;
  PyObject* trace = nullptr;
  PyObject* scenario = nullptr;
  PyObject* profile = nullptr;
  PyObject* catalog = nullptr;
  PyObject* quantity = nullptr;
  PyObject* output = nullptr;
  PyObject* plugin = nullptr;
};

ExceptionClasses& classes() {
  static ExceptionClasses c;
  return c;
}

/// Creates `gpusched._core.<name>` deriving from `base`, with `doc`, and adds it to `m`.
PyObject* make_class(py::module_& m, const char* name, PyObject* base, const char* doc) {
  const std::string qualified = std::string("gpusched._core.") + name;
  PyObject* cls = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, base, nullptr);
  if (cls == nullptr) throw py::error_already_set();
  // Defaults so that attribute access never fails on an instance raised from Python code.
  for (const char* attr : {"id", "file", "line", "field", "code", "category", "detail"}) {
    if (PyObject_SetAttrString(cls, attr, Py_None) != 0) throw py::error_already_set();
  }
  m.add_object(name, py::reinterpret_borrow<py::object>(cls));
  return cls;   // one reference kept forever on purpose
}

/// A Python str from message text, never failing: bytes that are not UTF-8 (gpusched::Error
/// already escapes them) come out as \xNN instead of raising UnicodeDecodeError.
py::str message_str(const std::string& text) {
  PyObject* o = PyUnicode_DecodeUTF8(text.data(), static_cast<Py_ssize_t>(text.size()), "backslashreplace");
  if (o == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::str>(o);
}

/// Sets the Python error indicator to an instance of `cls` built from `e`.
void raise(PyObject* cls, const Error& e) {
  py::object exc = py::reinterpret_borrow<py::object>(cls)(message_str(e.what()));
  const auto& w = e.where();
  exc.attr("id") = py::str(e.id());
  exc.attr("code") = py::int_(static_cast<int>(e.code()));
  exc.attr("category") = py::str(std::string(error_category(e.code())));
  exc.attr("detail") = message_str(e.detail());
  exc.attr("file") = w.file.empty() ? py::object(py::none()) : py::object(message_str(w.file));
  exc.attr("line") = w.line > 0 ? py::object(py::int_(w.line)) : py::object(py::none());
  exc.attr("field") = w.field.empty() ? py::object(py::none()) : py::object(message_str(w.field));
  PyErr_SetObject(cls, exc.ptr());
}

thread_local SignalPoll* t_signal_poll = nullptr;

}  // namespace

SignalPoll::SignalPoll() {
  const auto main_ident = py::module_::import("threading").attr("main_thread")().attr("ident").cast<unsigned long>();
  if (PyThread_get_thread_ident() != main_ident) return;
  active_ = true;
  previous_ = thread_interrupt_poll();
  outer_ = t_signal_poll;
  t_signal_poll = this;
  set_thread_interrupt_poll(&SignalPoll::poll);
}

SignalPoll::~SignalPoll() {
  if (!active_) return;
  t_signal_poll = outer_;
  set_thread_interrupt_poll(previous_);
}

bool SignalPoll::check() {
  if (!active_) return false;
  if (pending_) return true;
  PyCallGil gil;
  if (PyErr_CheckSignals() == 0) return false;
  pending_.emplace();   // fetches the exception the handler raised
  return true;
}

bool SignalPoll::poll() {
  SignalPoll* self = t_signal_poll;
  return self != nullptr && self->check();
}

void SignalPoll::raise_pending() {
  if (!pending_) return;
  py::error_already_set e = std::move(*pending_);
  pending_.reset();
  throw std::move(e);
}

py::object json_to_py(const nlohmann::json& j) {
  using T = nlohmann::json::value_t;
  switch (j.type()) {
    case T::null: return py::none();
    case T::boolean: return py::bool_(j.get<bool>());
    case T::number_integer: return py::int_(j.get<std::int64_t>());
    case T::number_unsigned: return py::int_(j.get<std::uint64_t>());
    case T::number_float: return py::float_(j.get<double>());
    case T::string: return py::str(j.get_ref<const std::string&>());
    case T::array: {
      py::list out;
      for (const auto& v : j) out.append(json_to_py(v));
      return out;
    }
    case T::object: {
      py::dict out;
      for (const auto& [k, v] : j.items()) out[py::str(k)] = json_to_py(v);
      return out;
    }
    case T::binary:
    case T::discarded: break;
  }
  return py::none();
}

void bind_core(py::module_& m) {
  auto& c = classes();
  c.base = make_class(m, "GpuschedError", PyExc_Exception,
                      "Bad input or configuration. Attributes: id ('gpusched.trace_error.102'), code (102), "
                      "category, file, line (None when unknown), field (column or JSON path), detail "
                      "(the message without id and location).");
  c.trace = make_class(m, "TraceError", c.base, "A job trace (CSV / JSON Lines, or inline jobs) is malformed.");
  c.scenario = make_class(m, "ScenarioError", c.base, "A scenario file or cluster description is malformed.");
  c.profile = make_class(m, "ProfileError", c.base, "A scheduling profile is invalid (unknown plugin, weight 0, ...).");
  c.catalog = make_class(m, "CatalogError", c.base, "Unknown GPU model or bad GPU-catalog entry.");
  c.quantity = make_class(m, "QuantityError", c.base, "A resource quantity or resource name is invalid.");
  c.output = make_class(m, "OutputError", c.base, "Output files could not be written.");
  c.plugin = make_class(m, "PluginError", c.base,
                        "A Python scheduling plugin raised or returned something invalid during a run; the message "
                        "names the plugin and the job and carries the Python traceback.");

  py::register_exception_translator([](std::exception_ptr p) {
    if (!p) return;
    const auto& cls = classes();
    try {
      std::rethrow_exception(p);
    } catch (const TraceError& e) {
      raise(cls.trace, e);
    } catch (const ScenarioError& e) {
      raise(cls.scenario, e);
    } catch (const ProfileError& e) {
      raise(cls.profile, e);
    } catch (const CatalogError& e) {
      raise(cls.catalog, e);
    } catch (const QuantityError& e) {
      raise(cls.quantity, e);
    } catch (const OutputError& e) {
      raise(cls.output, e);
    } catch (const PluginError& e) {
      raise(cls.plugin, e);
    } catch (const InterruptedError& e) {
      // A run stopped by the process-wide flag (see gpusched.request_interrupt): Python's own
      // exception for "stopped by the user".
      PyErr_SetString(PyExc_KeyboardInterrupt, e.what());
    } catch (const Error& e) {
      raise(cls.base, e);
    }
  });

  m.attr("version") = GPUSCHED_PY_VERSION;

  m.def("error_id", [](int code) { return error_id(static_cast<ErrorCode>(code)); }, py::arg("code"),
        "The stable id for an error code: error_id(102) == 'gpusched.trace_error.102'.");

  m.def(
      "gpu_models",
      [] {
        const auto catalog = GpuCatalog::builtin();
        py::list out;
        for (const auto& model : catalog.models()) out.append(json_to_py(nlohmann::json(model)));
        return out;
      },
      "The built-in GPU catalog: a list of dicts (name, aliases, vendor, memory_mib, sms, mig_capable, nvlink, mig).");

  // MIG helpers over the built-in catalog. Errors: CatalogError for an unknown model, a model
  // without MIG, or a profile that the model does not have.
  auto mig_of = [](const GpuCatalog& catalog, const std::string& model) -> const MigGeometry& {
    const auto& m = catalog[catalog.require(model, {"", 0, "model"})];
    if (!m.mig) {
      throw_error(ErrorCode::kCatalogUnknownMigProfile, {"", 0, "model"}, "GPU model " + m.name + " has no MIG");
    }
    return *m.mig;
  };
  m.def(
      "mig_fits",
      [mig_of](const std::string& model, const std::vector<std::string>& profiles) {
        const auto catalog = GpuCatalog::builtin();
        const auto& geo = mig_of(catalog, model);
        std::vector<int> idx;
        for (std::size_t i = 0; i < profiles.size(); ++i) {
          idx.push_back(geo.require_profile(profiles[i], {"", 0, "profiles[" + std::to_string(i) + "]"}, model));
        }
        return mig_fits(geo, idx);
      },
      py::arg("model"), py::arg("profiles"),
      "True when GPU instances of all `profiles` (names, repeats allowed) can exist together on one GPU "
      "of `model`, with legal, non-overlapping start positions.");
  m.def(
      "mig_layouts",
      [mig_of](const std::string& model) {
        const auto catalog = GpuCatalog::builtin();
        const auto& geo = mig_of(catalog, model);
        py::list out;
        for (const auto& layout : mig_maximal_layouts(geo)) {
          py::list one;
          for (const auto& inst : layout) {
            one.append(py::make_tuple(geo.profiles[static_cast<std::size_t>(inst.profile)].name, inst.start));
          }
          out.append(one);
        }
        return out;
      },
      py::arg("model"),
      "Every maximal legal MIG layout of one empty GPU of `model`: lists of (profile, start slice).");

  m.def(
      "discover",
      [](const std::string& nvidia_smi_xml, const std::string& topo, const std::string& mig_lgip, const std::string& name,
         const std::string& cpu, const std::string& memory, const std::string& gpu_models, bool mig_dynamic) {
        GpuCatalog catalog = GpuCatalog::builtin();
        if (!gpu_models.empty()) {
          std::ifstream in(gpu_models, std::ios::binary);
          if (!in) throw_error(ErrorCode::kScenarioCannotOpen, {gpu_models, 0, ""}, "cannot open the GPU catalog file (gpu_models)");
          std::stringstream text;
          text << in.rdbuf();
          catalog.add_json(parse_json(text.str(), gpu_models, kScenarioJsonErrors), gpu_models);
        }
        traces::NodeSpecDefaults d;
        d.name = name;
        if (!cpu.empty()) d.cpu_milli = parse_cpu_milli(cpu, {"", 0, "cpu"});
        if (!memory.empty()) d.memory_mib = parse_memory_mib(memory, {"", 0, "memory"});
        d.mig_dynamic = mig_dynamic;
        const NodeSpec node = traces::node_from_nvidia_smi_files(nvidia_smi_xml, topo, catalog, d, mig_lgip);
        return json_to_py(traces::node_to_json(node, catalog, nvidia_smi_xml));
      },
      py::arg("nvidia_smi_xml"), py::arg("topo"), py::arg("mig_lgip") = "", py::arg("name") = "node-0",
      py::arg("cpu") = "", py::arg("memory") = "0", py::arg("gpu_models") = "", py::arg("mig_dynamic") = false,
      "A node from saved nvidia-smi output (-q -x, topo -m, optionally mig -lgip) as a scenario cluster node dict. "
      "TraceError naming the file, line and field.");

  m.def(
      "tpu_hosts",
      [](const std::string& generation, const std::string& topology, int chips_per_host) {
        const auto& gen = TpuCatalog::builtin().require(generation, {"", 0, "generation"});
        return gen.hosts(topology, {"", 0, "topology"}, chips_per_host);
      },
      py::arg("generation"), py::arg("topology"), py::arg("chips_per_host") = 0,
      "Hosts a TPU slice of `topology` spans (0 chips_per_host = the generation's default). "
      "CatalogError for a generation or shape that does not exist.");
  m.def(
      "tpu_generations",
      [] {
        py::list out;
        for (const auto& g : TpuCatalog::builtin().generations()) {
          py::dict d;
          d["name"] = g.name;
          d["accelerator_label"] = g.accelerator_label;
          d["chips_per_host"] = g.chips_per_host;
          d["default_chips_per_host"] = g.default_chips_per_host;
          d["dimensions"] = g.dimensions;
          d["shapes"] = g.shapes;
          d["multiple_of"] = g.multiple_of;
          d["max_chips"] = g.max_chips;
          d["allowed"] = g.allowed();
          d["display_name"] = g.display_name;
          d["default_machine_type"] = g.default_machine_type;
          d["hbm_per_chip"] = g.hbm_per_chip;
          d["hbm_unit"] = g.hbm_unit;
          d["hbm_per_chip_mib"] = g.hbm_per_chip_mib;
          py::list machines;   // GKE machine types (issue 15); topologies empty = every whole-host one
          for (const auto& mt : g.machine_types) {
            py::dict md;
            md["name"] = mt.name;
            md["chips"] = mt.chips;
            md["host_shape"] = TpuTopology{mt.host_shape}.to_string();
            md["topologies"] = mt.topologies;
            md["source"] = mt.source;
            machines.append(md);
          }
          d["machine_types"] = machines;
          out.append(d);
        }
        return out;
      },
      "The built-in TPU generations: chips per host, listed shapes and rules.");
}

}  // namespace gpusched::python
