// Scheduling plugins written in Python: adapters from the C++ hook interfaces to Python objects,
// the process's registry (built-ins + Python plugins), and the read-only views a plugin sees.
//
// One Python call per decision, never per node: filters and scores receive every candidate node
// at once as NumPy arrays (NodeView). The GIL is taken only around each call; the simulation
// itself runs with it released. An exception raised in Python, or a result of the wrong type or
// shape, becomes gpusched::PluginError naming the plugin and the job, with the traceback.
#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <thread>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <gpusched/error.hpp>
#include <gpusched/json_input.hpp>
#include <gpusched/policies/devices/device_select.hpp>
#include <gpusched/policies/framework/plugin.hpp>
#include <gpusched/policies/framework/registry.hpp>

#include "bindings.hpp"

namespace gpusched::python {

namespace {
std::atomic<bool> g_exiting{false};   // set by an atexit hook: the interpreter is shutting down
}  // namespace

bool interpreter_exiting() {
#if PY_VERSION_HEX >= 0x030D0000
  const bool finalizing = Py_IsFinalizing() != 0;
#else
  const bool finalizing = _Py_IsFinalizing() != 0;
#endif
  return finalizing || g_exiting.load();
}

void park_forever() {
  for (;;) std::this_thread::sleep_for(std::chrono::hours(24));
}

void park_if_interpreter_exiting() {
  if (!interpreter_exiting()) return;
  if (PyGILState_Check() != 0) return;   // this thread holds the GIL already (the main thread at exit)
  // Taking the GIL now would end this thread with a forced unwind through C++ frames (CPython
  // calls pthread_exit), which crashes: park it instead; the process is exiting anyway.
  park_forever();
}

namespace {



/// A Python object that may be released from any thread: the last owner takes the GIL to drop
/// it. Shared (not copied) between registry snapshots, so copying a Registry needs no GIL.
struct PyHandle {
  py::object obj;
  explicit PyHandle(py::object o) : obj(std::move(o)) {}
  PyHandle(const PyHandle&) = delete;
  PyHandle& operator=(const PyHandle&) = delete;
  ~PyHandle() {
    if (!Py_IsInitialized()) {
      obj.release();   // the interpreter is gone: leak rather than touch it
      return;
    }
    PyCallGil gil;
    obj = py::object();
  }
};

/// What a plugin sees of the job (read-only). Times in seconds.
struct JobInfo {
  std::int64_t id = 0;
  std::string name, queue, gpu_mode, gpu_profile;
  std::int32_t priority = 0, tasks = 1, min_available = 1, task_index = 0;
  std::int64_t cpu_milli = 0, memory_mib = 0;
  std::int32_t gpus = 0, gpu_milli = 0;
  std::int64_t gpu_memory_mib = 0;
  std::int32_t tpu_chips = 0;
  double submit_s = 0, duration_s = 0, now_s = 0;
};

/// Static facts about a cluster's nodes, built once per run (per cluster size) and shared by
/// every NodeView of that run: names, GPU model names, labels as integer codes.
struct ClusterStatic {
  py::tuple names;                        // all nodes, cluster order
  py::tuple model_names;                  // catalog order: code -> name
  std::map<std::string, std::pair<py::array_t<std::int32_t>, py::list>> labels;   // key -> (codes, values)
  std::size_t width = 0;                  // most GPUs on one node
  std::int64_t max_cpu_milli = 0, max_memory_mib = 0, max_gpu_milli = 0;   // the largest node's capacity
};

template <class T>
py::array_t<T> new_array(std::vector<py::ssize_t> shape) {
  return py::array_t<T>(std::move(shape));
}

void freeze(py::array& a) {
  py::detail::array_proxy(a.ptr())->flags &= ~py::detail::npy_api::NPY_ARRAY_WRITEABLE_;
}

/// The arrays of a NodeView, each built on first access (a policy pays only for what it reads).
enum class Field : std::uint8_t {
  kCpuFree, kCpuTotal, kMemoryFree, kMemoryTotal, kGpusTotal, kGpusFree, kGpuMilliFree, kGpuMilliPerGpu,
  kGpuMemoryFree, kGpuMemoryTotal, kGpuMask, kModel, kCount
};

/// The candidate nodes of one decision, as read-only NumPy arrays (rows follow `index`). The
/// arrays are built lazily while the plugin call runs; afterwards the view keeps the ones built
/// and refuses the others (the cluster has moved on).
struct NodeView {
  const ClusterState* cluster = nullptr;   // null once the call returned
  std::span<const NodeId> nodes;
  std::shared_ptr<ClusterStatic> statics;
  std::shared_ptr<const std::vector<NodeId>> all_nodes;   // every node, for cluster()
  std::vector<std::uint32_t> ids;                          // the rows' node indices (never read back from `index`)
  std::size_t size = 0;
  py::array index;
  std::array<py::object, static_cast<std::size_t>(Field::kCount)> cache;
  std::vector<std::weak_ptr<NodeView>> children;           // views made from this one (cluster())

  /// A view of every node of the cluster, valid as long as this one.
  std::shared_ptr<NodeView> whole_cluster() {
    if (cluster == nullptr) {
      throw py::value_error("this NodeView was read after its plugin call returned");
    }
    auto v = std::make_shared<NodeView>();
    v->cluster = cluster;
    v->nodes = *all_nodes;
    v->statics = statics;
    v->all_nodes = all_nodes;
    v->size = all_nodes->size();
    auto idx = py::array_t<std::int32_t>(static_cast<py::ssize_t>(v->size));
    auto* d = idx.mutable_data();
    v->ids.resize(v->size);
    for (std::size_t i = 0; i < v->size; ++i) {
      v->ids[i] = (*all_nodes)[i].value;
      d[i] = static_cast<std::int32_t>(v->ids[i]);
    }
    py::array frozen = idx;
    freeze(frozen);
    v->index = frozen;
    children.push_back(v);
    return v;
  }
  /// The call returned: arrays not built yet can no longer be.
  void invalidate() {
    cluster = nullptr;
    nodes = {};
    for (auto& c : children) {
      if (auto child = c.lock()) child->invalidate();
    }
    children.clear();
  }

  py::array get(Field f) {
    auto& slot = cache[static_cast<std::size_t>(f)];
    if (slot) return py::reinterpret_borrow<py::array>(slot);
    if (cluster == nullptr) {
      throw py::value_error("this NodeView was read after its plugin call returned; read the arrays you need "
                            "during the call (or copy them)");
    }
    py::array a = build(f);
    freeze(a);
    slot = a;
    return a;
  }

 private:
  template <class T, class Fill>
  py::array per_node(Fill fill) {
    auto a = new_array<T>({static_cast<py::ssize_t>(size)});
    auto* d = a.mutable_data();
    for (std::size_t i = 0; i < size; ++i) d[i] = fill(nodes[i], cluster->node(nodes[i]));
    return a;
  }
  template <class T, class Fill>
  py::array per_gpu(Fill fill) {
    const auto w = static_cast<py::ssize_t>(statics->width);
    auto a = new_array<T>({static_cast<py::ssize_t>(size), w});
    auto* d = a.mutable_data();
    std::fill(d, d + static_cast<py::ssize_t>(size) * w, T{});
    for (std::size_t i = 0; i < size; ++i) {
      const auto gpus = cluster->gpus(nodes[i]);
      for (std::size_t g = 0; g < gpus.size(); ++g) d[static_cast<py::ssize_t>(i) * w + static_cast<py::ssize_t>(g)] = fill(gpus[g]);
    }
    return a;
  }
  py::array build(Field f) {
    using I64 = std::int64_t;
    using I32 = std::int32_t;
    switch (f) {
      case Field::kCpuFree: return per_node<I64>([](NodeId, const NodeState& s) { return s.cpu_free_milli; });
      case Field::kCpuTotal: return per_node<I64>([&](NodeId n, const NodeState&) { return cluster->cpu_capacity(n); });
      case Field::kMemoryFree: return per_node<I64>([](NodeId, const NodeState& s) { return s.memory_free_mib; });
      case Field::kMemoryTotal: return per_node<I64>([&](NodeId n, const NodeState&) { return cluster->memory_capacity(n); });
      case Field::kGpusTotal: return per_node<I32>([](NodeId, const NodeState& s) { return I32{s.gpu_count}; });
      case Field::kGpusFree: return per_node<I32>([](NodeId, const NodeState& s) { return I32{s.gpus_fully_free}; });
      case Field::kGpuMilliFree: return per_node<I32>([](NodeId, const NodeState& s) { return s.gpu_milli_free; });
      case Field::kModel:
        return per_node<std::int16_t>([](NodeId, const NodeState& s) {
          return s.model.valid() ? static_cast<std::int16_t>(s.model.value) : std::int16_t{-1};
        });
      case Field::kGpuMilliPerGpu: return per_gpu<I32>([](const GpuState& g) { return g.milli_free; });
      case Field::kGpuMemoryFree: return per_gpu<I64>([](const GpuState& g) { return g.memory_free_mib; });
      case Field::kGpuMemoryTotal: return per_gpu<I64>([](const GpuState& g) { return g.memory_mib; });
      case Field::kGpuMask: return per_gpu<bool>([](const GpuState&) { return true; });
      case Field::kCount: break;
    }
    throw py::value_error("unknown NodeView field");
  }
};

std::string gpu_mode_name(GpuMode m) {
  switch (m) {
    case GpuMode::kNone: return "none";
    case GpuMode::kWhole: return "whole";
    case GpuMode::kShared: return "share";
    case GpuMode::kMig: return "mig";
    case GpuMode::kVgpu: return "vgpu";
    case GpuMode::kPassthrough: return "passthrough";
  }
  return "none";
}

/// What the Python side registered: a factory building the plugin object for one run.
struct PySpec {
  std::string name;
  std::vector<std::string> hooks;
  std::shared_ptr<PyHandle> factory;   // factory(args: dict, seed: int) -> object
  std::string normalize = "min-max";   // scores: "min-max" or "none"
};

/// One Python plugin object in one run. Implements every hook a Python plugin can have; the
/// registry lists only the hooks the object really has, so the Scheduler uses just those.
class PyPlugin final : public policies::BatchFilterPlugin,
                       public policies::ScorePlugin,
                       public policies::QueueSortPlugin,
                       public policies::DeviceSelectPlugin,
                       public policies::JobEventsPlugin {
 public:
  PyPlugin(const PySpec& spec, py::object obj)
      : spec_(spec), obj_(std::make_shared<PyHandle>(std::move(obj))),
        reject_reason_("rejected by Python filter"), wait_reason_("Python placement chose to wait") {
    has_place_ = std::find(spec.hooks.begin(), spec.hooks.end(), "place") != spec.hooks.end();
    has_started_ = py::hasattr(obj_->obj, "job_started");
    node_local_ = py::hasattr(obj_->obj, "node_local") && py::object(obj_->obj.attr("node_local")).ptr() == Py_True;
    has_stopped_ = py::hasattr(obj_->obj, "job_stopped");
  }

  PyPlugin(const PyPlugin&) = delete;
  PyPlugin& operator=(const PyPlugin&) = delete;
  /// May run without the GIL (a run stopped by an exception unwinds with it released).
  ~PyPlugin() override {
    if (statics_ && Py_IsInitialized()) {
      PyCallGil gil;
      statics_.reset();
    }
  }

  [[nodiscard]] std::string_view name() const override { return spec_.name; }
  /// Unless the object says `node_local = True`, its answers may depend on anything: no
  /// equivalence classes, full retries (see README "Policies in Python").
  [[nodiscard]] bool opaque() const override { return !node_local_; }
  void bound_to(std::span<const std::string_view> hooks) override {
    const bool at_filter = std::find(hooks.begin(), hooks.end(), "filter") != hooks.end();
    is_device_select_ = std::find(hooks.begin(), hooks.end(), "device_select") != hooks.end();
    if (has_place_ && is_device_select_ && !at_filter) {
      throw_error(ErrorCode::kProfileMissingHook, {"", 0, "device_select"},
                  "plugin \"" + spec_.name + "\" makes its decision in place(), which runs at the filter hook: list it "
                  "at filter too (Profile.place() does both), or it would never be asked");
    }
  }
  [[nodiscard]] bool reads_queue() const override { return !node_local_; }

  void attach(const ClusterState& /*cluster*/, std::span<const JobSpec> /*workload*/, const JobsView* jobs) override {
    jobs_ = jobs;
  }
  // ---- job events: job_started(job, nodes) with one cluster node index per task; job_stopped(job)
  void job_started(const JobSpec& spec, JobId id, std::span<const TaskPlacement> placements) override {
    if (!has_started_) return;
    PyCallGil gil;
    const JobInfo job = job_info(spec, id);
    py::tuple nodes(placements.size());
    for (std::size_t i = 0; i < placements.size(); ++i) nodes[i] = py::int_(placements[i].node.value);
    call("job_started", job, nodes);
  }
  void job_stopped(const JobSpec& spec, JobId id, std::span<const TaskPlacement> /*placements*/) override {
    if (!has_stopped_) return;
    PyCallGil gil;
    call("job_stopped", job_info(spec, id), py::none());
  }

  // ---- filter (or place: narrows to the chosen node)
  Status filter_all(const ClusterState& cluster, const policies::TaskContext& ctx, std::span<const NodeId> nodes,
                    std::span<std::uint8_t> keep) override {
    PyCallGil gil;
    const JobInfo job = job_info(ctx);
    decided_.reset();
    if (has_place_) {
      if (ctx.request().tpu.hosts > 1) {
        bad_result("place", job, "place() cannot choose a multi-host TPU slice (it names one node); list the plugin "
                                 "at score or filter instead, or leave TPU-slice jobs to a profile without it");
      }
      py::object result = call_with_view("place", job, cluster, nodes);
      if (result.is_none()) {
        std::fill(keep.begin(), keep.end(), std::uint8_t{0});
        return Status::unschedulable(spec_.name, wait_reason_);
      }
      static constexpr const char* kExpected =
          "expected a node index (an int from nodes.index), None (wait) or (node, [gpu indices])";
      auto as_index = [&](const py::handle& h, const char* what) -> std::int64_t {
        if (py::isinstance<py::bool_>(h) || PyIndex_Check(h.ptr()) == 0) {
          bad_result("place", job, std::string(kExpected) + "; " + what + " is " + describe(h));
        }
        try {
          return py::reinterpret_steal<py::int_>(PyNumber_Index(h.ptr())).cast<std::int64_t>();
        } catch (const std::exception&) {
          bad_result("place", job, std::string(kExpected) + "; " + what + " is out of range: " + describe(h));
        }
      };
      std::int64_t node = -1;
      std::vector<std::uint16_t> gpus;
      bool with_gpus = false;
      if (py::isinstance<py::tuple>(result) || py::isinstance<py::list>(result)) {
        auto seq = py::reinterpret_borrow<py::sequence>(result);
        if (seq.size() != 2) bad_result("place", job, std::string(kExpected) + ", got " + describe(result));
        node = as_index(seq[0], "the node");
        py::object list = seq[1];
        if (!py::isinstance<py::sequence>(list) && !py::isinstance<py::array>(list)) {
          bad_result("place", job, std::string(kExpected) + "; the GPUs are " + describe(list));
        }
        py::list items;
        try {
          items = py::list(list);
        } catch (const std::exception&) {
          bad_result("place", job, std::string(kExpected) + "; the GPUs are " + describe(list));
        }
        for (auto g : items) {
          const auto index = as_index(g, "a GPU index");
          if (index < 0 || index > 65535) bad_result("place", job, "GPU index " + std::to_string(index) + " is out of range");
          const auto gi = static_cast<std::uint16_t>(index);
          if (std::find(gpus.begin(), gpus.end(), gi) != gpus.end()) {
            bad_result("place", job, "GPU " + std::to_string(index) + " is listed twice");
          }
          gpus.push_back(gi);
        }
        with_gpus = true;
      } else {
        node = as_index(result, "the result");
      }
      bool found = false;
      for (std::size_t i = 0; i < nodes.size(); ++i) {
        keep[i] = (static_cast<std::int64_t>(nodes[i].value) == node) ? 1 : 0;
        found = found || keep[i] != 0;
      }
      if (!found) {
        bad_result("place", job, "returned node " + std::to_string(node) +
                                     ", which is not a candidate for this task (choose one of nodes.index, or None to wait)");
      }
      if (with_gpus && !is_device_select_) {
        bad_result("place", job, "place() returned GPU indices, but the profile's device_select is another plugin, so "
                                 "they would be ignored; list \"" + spec_.name + "\" as the profile's device_select too "
                                 "(Profile.place() does both), or return only the node");
      }
      if (with_gpus) decided_ = Decision{job.id, job.task_index, NodeId{static_cast<std::uint32_t>(node)}, std::move(gpus)};
      return Status::unschedulable(spec_.name, reject_reason_);
    }
    py::object result = call_with_view("filter", job, cluster, nodes);
    // Booleans only (a list of bools, or a bool array): 0.2, NaN or "False" are not answers.
    const auto mask = answer_array<bool>("filter", job, result, nodes.size(), "b", "a boolean array of one value");
    const bool* m = mask.data();
    for (std::size_t i = 0; i < nodes.size(); ++i) keep[i] = m[i] ? 1 : 0;
    return Status::unschedulable(spec_.name, reject_reason_);
  }

  // ---- score
  double score(const ClusterState& cluster, const policies::TaskContext& ctx, NodeId node) override {
    double out = 0;
    score_all(cluster, ctx, std::span<const NodeId>(&node, 1), std::span<double>(&out, 1));
    return out;
  }
  void score_all(const ClusterState& cluster, const policies::TaskContext& ctx, std::span<const NodeId> nodes,
                 std::span<double> out) override {
    PyCallGil gil;
    const JobInfo job = job_info(ctx);
    last_job_ = job.id;
    last_job_name_ = job.name;
    py::object result = call_with_view("score", job, cluster, nodes);
    // Real numbers only (bool, int, unsigned, float): strings and complex values are refused.
    const auto scores = answer_array<double>("score", job, result, nodes.size(), "biuf", "an array of one number");
    const double* d = scores.data();
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      if (!std::isfinite(d[i])) bad_result("score", job, "score " + std::to_string(i) + " is not a finite number");
      out[i] = d[i];
    }
  }
  void normalize(std::span<double> scores) const override {
    if (spec_.normalize == "min-max") {
      if (scores.empty()) return;
      const auto [lo, hi] = std::minmax_element(scores.begin(), scores.end());
      const double min = *lo, max = *hi;
      if (!std::isfinite(max - min)) {
        throw_error(ErrorCode::kPluginBadResult, {"plugin '" + spec_.name + "'", 0, "score"},
                    "job \"" + last_job_name_ + "\" (id " + std::to_string(last_job_) + "): the scores span " +
                        std::to_string(min) + " .. " + std::to_string(max) + ", more than a double can hold; scale them");
      }
      policies::normalize_min_max(scores);
      return;
    }
    for (double s : scores) {
      if (s < 0.0 || s > 100.0) {
        throw_error(ErrorCode::kPluginBadResult, {"plugin '" + spec_.name + "'", 0, "score"},
                    "job \"" + last_job_name_ + "\" (id " + std::to_string(last_job_) + "): score " + std::to_string(s) +
                        " is outside [0, 100]; return scores in [0, 100] or set normalize = \"min-max\"");
      }
    }
  }

  // ---- queue sort: the key is computed once per job (numbers or a tuple of numbers)
  [[nodiscard]] bool less(const JobSpec& a, JobId ia, const JobSpec& b, JobId ib) const override {
    const auto& ka = key(a, ia);
    const auto& kb = key(b, ib);
    if (ka != kb) return ka < kb;
    return ia < ib;
  }

  // ---- device select (place only): the GPUs the placement chose, else the lowest that fit
  [[nodiscard]] bool select(const ClusterState& cluster, const policies::TaskContext& ctx, NodeId node,
                            TaskPlacement& out) const override {
    if (decided_ && decided_->job == static_cast<std::int64_t>(ctx.job_id.value) && decided_->task == ctx.task_index &&
        decided_->node == node) {
      const auto gpus = decided_->gpus;
      decided_.reset();
      const auto count = cluster.node(node).gpu_count;
      for (auto g : gpus) {
        if (g >= count) {
          throw_error(ErrorCode::kPluginBadResult, {"plugin '" + spec_.name + "'", 0, "place"},
                      "job \"" + ctx.job.name + "\" (id " + std::to_string(ctx.job_id.value) + "): GPU " + std::to_string(g) +
                          " does not exist on node " + cluster.spec(node).name + " (" + std::to_string(count) + " GPUs)");
        }
      }
      if (!policies::pick_devices(cluster, ctx.request(), node, gpus, nullptr, out)) {
        std::string list;
        for (auto g : gpus) list += (list.empty() ? "" : ", ") + std::to_string(g);
        throw_error(ErrorCode::kPluginBadResult, {"plugin '" + spec_.name + "'", 0, "place"},
                    "job \"" + ctx.job.name + "\" (id " + std::to_string(ctx.job_id.value) + "): GPUs [" + list +
                        "] of node " + cluster.spec(node).name + " cannot serve the task's request");
      }
      return true;
    }
    return policies::pick_devices(cluster, ctx.request(), node, {}, nullptr, out);
  }

 private:
  struct Decision {
    std::int64_t job;
    std::int32_t task;
    NodeId node;
    std::vector<std::uint16_t> gpus;
  };

  JobInfo job_info(const policies::TaskContext& ctx) const {
    JobInfo j = job_info(ctx.job, ctx.job_id);
    j.task_index = ctx.task_index;
    if (ctx.jobs != nullptr) j.now_s = ctx.jobs->now().seconds();
    return j;
  }
  JobInfo job_info(const JobSpec& s, JobId id) const {
    JobInfo j;
    j.id = id.value;
    j.name = s.name;
    j.queue = s.queue;
    j.priority = s.priority;
    j.tasks = s.tasks;
    j.min_available = s.min_available;
    j.cpu_milli = s.request.cpu_milli;
    j.memory_mib = s.request.memory_mib;
    j.gpu_mode = gpu_mode_name(s.request.gpu.mode);
    j.gpu_profile = s.request.gpu.profile;
    j.gpus = s.request.gpu.count;
    j.gpu_milli = s.request.gpu.mode == GpuMode::kShared ? s.request.gpu.milli
                  : s.request.gpu.mode == GpuMode::kNone ? 0 : kMilliPerGpu;
    j.gpu_memory_mib = s.request.gpu.memory_mib;
    j.tpu_chips = s.request.tpu.chips;
    j.submit_s = s.submit.seconds();
    j.duration_s = s.duration.is_forever() ? std::numeric_limits<double>::infinity() : s.duration.seconds();
    j.now_s = jobs_ != nullptr ? jobs_->now().seconds() : j.submit_s;
    return j;
  }

  py::object call(const char* method, const JobInfo& job, py::object view) {
    try {
      py::object fn = obj_->obj.attr(method);
      py::tuple args = view.is_none() ? py::tuple(py::make_tuple(py::cast(job))) : py::tuple(py::make_tuple(py::cast(job), view));
      return call_python(fn, args);
    } catch (py::error_already_set& e) {
      if (e.matches(PyExc_KeyboardInterrupt)) throw;   // Ctrl-C stops the run as itself
      std::string trace;
      try {
        auto tb = py::module_::import("traceback");
        py::list lines = tb.attr("format_exception")(e.type(), e.value(), e.trace());
        for (auto l : lines) trace += l.cast<std::string>();
      } catch (const std::exception&) {
        trace = e.what();
      }
      throw_error(ErrorCode::kPluginRaised, {"plugin '" + spec_.name + "'", 0, method},
                  "job \"" + job.name + "\" (id " + std::to_string(job.id) + "): the plugin raised an exception:\n" + trace);
    }
  }

  [[noreturn]] void bad_result(const char* method, const JobInfo& job, const std::string& what) const {
    throw_error(ErrorCode::kPluginBadResult, {"plugin '" + spec_.name + "'", 0, method},
                "job \"" + job.name + "\" (id " + std::to_string(job.id) + "): " + what);
  }

  /// `result` as a 1-D C array of `n` values of T, when numpy's dtype kind of it is one of
  /// `kinds`; otherwise a PluginError saying `what` was expected per candidate node.
  template <class T>
  py::array_t<T, py::array::c_style | py::array::forcecast> answer_array(const char* method, const JobInfo& job,
                                                                     const py::object& result, std::size_t n,
                                                                     std::string_view kinds, const char* what) const {
    py::array_t<T, py::array::c_style | py::array::forcecast> a;
    if (const char k = dtype_kind(result); k != 0 && kinds.find(k) != std::string_view::npos) {
      try {
        a = py::array_t<T, py::array::c_style | py::array::forcecast>::ensure(result);
      } catch (const std::exception&) {
      }
    }
    if (!a || a.ndim() != 1 || static_cast<std::size_t>(a.shape(0)) != n) {
      bad_result(method, job, std::string("expected ") + what + " per candidate node (" + std::to_string(n) +
                                  "), got " + describe(result));
    }
    return a;
  }

  /// numpy's dtype kind of what `h` converts to ('b', 'i', 'u', 'f', 'c', 'U', 'O', ...); 0 when
  /// it does not convert.
  static char dtype_kind(const py::handle& h) {
    try {
      py::array a = py::isinstance<py::array>(h) ? py::reinterpret_borrow<py::array>(h)
                                                   : py::array(py::module_::import("numpy").attr("asarray")(h));
      return a.dtype().kind();
    } catch (const std::exception&) {
      return 0;
    }
  }

  static std::string describe(const py::handle& h) {
    try {
      std::string s = py::repr(h).cast<std::string>();
      if (s.size() > 120) s = s.substr(0, 117) + "...";
      return std::string(py::str(h.get_type().attr("__name__"))) + " " + s;
    } catch (const std::exception&) {
      return "an object";
    }
  }

  const std::vector<double>& key(const JobSpec& s, JobId id) const {
    auto it = keys_.find(id.value);
    if (it != keys_.end()) return it->second;
    PyCallGil gil;
    const JobInfo job = job_info(s, id);
    py::object k = const_cast<PyPlugin*>(this)->call("queue_key", job, py::none());
    std::vector<double> out;
    auto take = [&](const py::handle& v) {
      const bool number = !py::isinstance<py::str>(v) && !py::isinstance<py::bytes>(v) &&
                          (PyFloat_Check(v.ptr()) || PyLong_Check(v.ptr()) ||
                           (py::isinstance<py::array>(v) ? py::reinterpret_borrow<py::array>(v).ndim() == 0 : PyNumber_Check(v.ptr()) != 0));
      if (!number) bad_result("queue_key", job, "expected a number or a tuple of numbers, got " + describe(v));
      double d = 0;
      try {
        d = py::float_(py::reinterpret_borrow<py::object>(v)).cast<double>();
      } catch (const std::exception& e) {
        bad_result("queue_key", job, "the key " + describe(v) + " is not a usable number: " + e.what());
      }
      if (std::isnan(d)) bad_result("queue_key", job, "the key is NaN");
      out.push_back(d);
    };
    if (py::isinstance<py::tuple>(k) || py::isinstance<py::list>(k)) {
      for (auto v : py::reinterpret_borrow<py::sequence>(k)) take(v);
    } else {
      take(k);
    }
    return keys_.emplace(id.value, std::move(out)).first->second;
  }

  std::shared_ptr<ClusterStatic> statics(const ClusterState& cluster) {
    if (statics_ && statics_for_ == &cluster && statics_nodes_ == cluster.node_count()) return statics_;
    auto st = std::make_shared<ClusterStatic>();
    const std::size_t n = cluster.node_count();
    py::tuple names(n);
    std::map<std::string, std::map<std::string, std::int32_t>> codes;   // key -> value -> code (first seen)
    for (std::size_t i = 0; i < n; ++i) {
      const auto& spec = cluster.spec(NodeId{static_cast<std::uint32_t>(i)});
      names[i] = py::str(spec.name);
      st->width = std::max<std::size_t>(st->width, cluster.node(NodeId{static_cast<std::uint32_t>(i)}).gpu_count);
      for (const auto& [k, v] : spec.labels) codes[k].try_emplace(v, static_cast<std::int32_t>(codes[k].size()));
    }
    st->names = names;
    const auto& max = cluster.max_capacity();
    st->max_cpu_milli = max.cpu_free_milli;
    st->max_memory_mib = max.memory_free_mib;
    st->max_gpu_milli = max.gpu_milli_free;
    py::tuple models(cluster.catalog().size());
    for (std::size_t m = 0; m < cluster.catalog().size(); ++m) {
      models[m] = py::str(cluster.catalog()[GpuModelId{static_cast<std::uint16_t>(m)}].name);
    }
    st->model_names = models;
    for (const auto& [key, values] : codes) {
      auto arr = new_array<std::int32_t>({static_cast<py::ssize_t>(n)});
      auto* d = arr.mutable_data();
      for (std::size_t i = 0; i < n; ++i) {
        const auto& labels = cluster.spec(NodeId{static_cast<std::uint32_t>(i)}).labels;
        const auto it = labels.find(key);
        d[i] = it == labels.end() ? -1 : values.at(it->second);
      }
      py::array frozen = arr;
      freeze(frozen);
      py::list names_of(values.size());
      for (const auto& [v, c] : values) names_of[static_cast<std::size_t>(c)] = py::str(v);
      st->labels.emplace(key, std::pair{py::array_t<std::int32_t>(frozen), names_of});
    }
    auto all = std::make_shared<std::vector<NodeId>>(n);
    for (std::size_t i = 0; i < n; ++i) (*all)[i] = NodeId{static_cast<std::uint32_t>(i)};
    all_nodes_ = std::move(all);
    statics_ = st;
    statics_for_ = &cluster;
    statics_nodes_ = n;
    return st;
  }

  /// The view of this call's candidates: only `index` is built up front.
  std::shared_ptr<NodeView> make_view(const ClusterState& cluster, std::span<const NodeId> nodes) {
    auto v = std::make_shared<NodeView>();
    v->cluster = &cluster;
    v->nodes = nodes;
    v->statics = statics(cluster);
    v->all_nodes = all_nodes_;
    v->size = nodes.size();
    auto index = new_array<std::int32_t>({static_cast<py::ssize_t>(nodes.size())});
    auto* d = index.mutable_data();
    v->ids.resize(nodes.size());
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      v->ids[i] = nodes[i].value;
      d[i] = static_cast<std::int32_t>(nodes[i].value);
    }
    py::array frozen = index;
    freeze(frozen);
    v->index = frozen;
    return v;
  }

  /// Calls `method` with the job and a view of `nodes`; the view goes stale when it returns.
  py::object call_with_view(const char* method, const JobInfo& job, const ClusterState& cluster,
                            std::span<const NodeId> nodes) {
    auto view = make_view(cluster, nodes);
    struct Stale {
      NodeView& v;
      ~Stale() { v.invalidate(); }
    } stale{*view};
    return call(method, job, py::cast(view));
  }

 private:
  PySpec spec_;
  std::shared_ptr<PyHandle> obj_;
  std::string reject_reason_, wait_reason_;
  bool has_place_ = false;
  bool is_device_select_ = false;
  bool node_local_ = false;   // the object promises answers that depend only on the request and the nodes
  mutable std::optional<Decision> decided_;
  mutable std::unordered_map<std::uint32_t, std::vector<double>> keys_;
  std::int64_t last_job_ = 0;
  std::string last_job_name_;
  const JobsView* jobs_ = nullptr;
  std::shared_ptr<ClusterStatic> statics_;
  std::shared_ptr<const std::vector<NodeId>> all_nodes_;
  bool has_started_ = false, has_stopped_ = false;
  const ClusterState* statics_for_ = nullptr;
  std::size_t statics_nodes_ = 0;
};

/// The process's Python registrations. Never destroyed (it may hold Python objects, and the
/// interpreter may be gone at exit).
struct PyRegistry {
  std::mutex mutex;
  std::map<std::string, std::pair<PySpec, policies::PluginInfo>> plugins;
};

PyRegistry& py_registry() {
  static auto* r = new PyRegistry;
  return *r;
}

}  // namespace

policies::Registry current_registry() {
  policies::Registry reg = policies::Registry::builtins();
  auto& r = py_registry();
  const std::lock_guard<std::mutex> lock(r.mutex);
  for (const auto& [name, entry] : r.plugins) reg.add(entry.second);
  return reg;
}

void bind_plugins(py::module_& m) {
  py::module_::import("atexit").attr("register")(py::cpp_function([] { g_exiting.store(true); }));

  py::class_<JobInfo>(m, "JobInfo",
                      "What a Python plugin sees of the job being placed (read-only). Times in seconds; "
                      "gpu_milli is the share of each GPU (1000 = whole); gpu_mode is none, whole, share, mig, "
                      "vgpu or passthrough.")
      .def_readonly("id", &JobInfo::id)
      .def_readonly("name", &JobInfo::name)
      .def_readonly("queue", &JobInfo::queue)
      .def_readonly("priority", &JobInfo::priority)
      .def_readonly("tasks", &JobInfo::tasks)
      .def_readonly("min_available", &JobInfo::min_available)
      .def_readonly("task_index", &JobInfo::task_index)
      .def_readonly("cpu_milli", &JobInfo::cpu_milli)
      .def_readonly("memory_mib", &JobInfo::memory_mib)
      .def_readonly("gpu_mode", &JobInfo::gpu_mode)
      .def_readonly("gpu_profile", &JobInfo::gpu_profile)
      .def_readonly("gpus", &JobInfo::gpus)
      .def_readonly("gpu_milli", &JobInfo::gpu_milli)
      .def_readonly("gpu_memory_mib", &JobInfo::gpu_memory_mib)
      .def_readonly("tpu_chips", &JobInfo::tpu_chips)
      .def_readonly("submit_s", &JobInfo::submit_s)
      .def_readonly("duration_s", &JobInfo::duration_s)
      .def_readonly("now_s", &JobInfo::now_s)
      .def("__repr__", [](const JobInfo& j) {
        return "<gpusched.JobInfo " + j.name + " (id " + std::to_string(j.id) + ") task " + std::to_string(j.task_index) +
               ": cpu " + std::to_string(j.cpu_milli) + "m, memory " + std::to_string(j.memory_mib) + " MiB, gpu " +
               j.gpu_mode + " x" + std::to_string(j.gpus) + " @" + std::to_string(j.gpu_milli) + "m>";
      });

  auto field = [](Field f) { return [f](NodeView& v) { return v.get(f); }; };
  py::class_<NodeView, std::shared_ptr<NodeView>>(m, "NodeView",
                       "The candidate nodes of one decision as read-only NumPy arrays, one row per node (in "
                       "cluster order). Per-GPU arrays are n x G (G: most GPUs on a node; padding is 0 / False). "
                       "Arrays are built when first read, during the plugin call.")
      .def("__len__", [](const NodeView& v) { return v.size; })
      .def_readonly("index", &NodeView::index, "int32: the node's index in the cluster (what place() returns)")
      .def_property_readonly("cpu_free_milli", field(Field::kCpuFree), "int64: free CPU, milli-CPU")
      .def_property_readonly("cpu_total_milli", field(Field::kCpuTotal), "int64: CPU capacity, milli-CPU")
      .def_property_readonly("memory_free_mib", field(Field::kMemoryFree), "int64: free host memory, MiB")
      .def_property_readonly("memory_total_mib", field(Field::kMemoryTotal), "int64: host memory capacity, MiB")
      .def_property_readonly("gpus_total", field(Field::kGpusTotal), "int32: GPUs on the node")
      .def_property_readonly("gpus_free", field(Field::kGpusFree), "int32: GPUs with no task at all")
      .def_property_readonly("gpu_milli_free", field(Field::kGpuMilliFree), "int32: free GPU milli summed over the node's GPUs")
      .def_property_readonly("gpu_milli_free_per_gpu", field(Field::kGpuMilliPerGpu), "int32 n x G: free milli per GPU")
      .def_property_readonly("gpu_memory_free_mib", field(Field::kGpuMemoryFree), "int64 n x G: free memory per GPU, MiB")
      .def_property_readonly("gpu_memory_total_mib", field(Field::kGpuMemoryTotal), "int64 n x G: memory per GPU, MiB")
      .def_property_readonly("gpu_mask", field(Field::kGpuMask), "bool n x G: the GPU exists")
      .def_property_readonly("model", field(Field::kModel), "int16: GPU model code (model_names), -1 without GPUs or with mixed models")
      .def_property_readonly("model_names", [](const NodeView& v) { return v.statics->model_names; },
                             "tuple: model code -> name")
      .def_property_readonly("max_cpu_milli", [](const NodeView& v) { return v.statics->max_cpu_milli; },
                             "the largest node's CPU capacity in the whole cluster (milli-CPU), for normalising")
      .def_property_readonly("max_memory_mib", [](const NodeView& v) { return v.statics->max_memory_mib; },
                             "the largest node's memory capacity in the whole cluster (MiB)")
      .def_property_readonly("max_gpu_milli", [](const NodeView& v) { return v.statics->max_gpu_milli; },
                             "the largest node's GPU capacity in the whole cluster (milli-GPU: 8 GPUs = 8000)")
      .def_property_readonly(
          "names",
          [](const NodeView& v) {
            py::tuple out(v.size);
            for (std::size_t i = 0; i < v.size; ++i) out[i] = v.statics->names[v.ids[i]];
            return out;
          },
          "tuple of the candidate nodes' names")
      .def(
          "label",
          [](const NodeView& v, const std::string& key) -> py::array {
            const auto it = v.statics->labels.find(key);
            auto out = py::array_t<std::int32_t>(static_cast<py::ssize_t>(v.size));
            auto* d = out.mutable_data();
            if (it == v.statics->labels.end()) {
              std::fill(d, d + v.size, -1);
            } else {
              const auto* codes = it->second.first.data();
              for (std::size_t i = 0; i < v.size; ++i) d[i] = codes[v.ids[i]];
            }
            return out;
          },
          py::arg("key"), "int32 codes of label `key` per candidate node (-1: no such label); see label_values")
      .def(
          "label_values",
          [](const NodeView& v, const std::string& key) {
            const auto it = v.statics->labels.find(key);
            return it == v.statics->labels.end() ? py::list() : py::list(it->second.second);
          },
          py::arg("key"), "the values of label `key`: code -> value")
      .def("cluster", &NodeView::whole_cluster,
           "A NodeView of every node of the cluster (not only the candidates), valid during the call")
      .def_property_readonly("label_keys", [](const NodeView& v) {
        py::list out;
        for (const auto& [k, _] : v.statics->labels) out.append(py::str(k));
        return out;
      })
      .def("__repr__", [](const NodeView& v) { return "<gpusched.NodeView of " + std::to_string(v.size) + " candidate nodes>"; });

  m.def(
      "register_python_plugin",
      [](const std::string& name, const std::vector<std::string>& hooks, py::object factory, const std::string& description,
         const std::vector<std::tuple<std::string, std::string, std::string, py::object>>& args,
         const std::string& normalize) {
        if (name.empty()) throw py::value_error("a plugin needs a name");
        if (normalize != "min-max" && normalize != "none") {
          throw py::value_error("normalize must be \"min-max\" or \"none\", got \"" + normalize + "\"");
        }
        if (policies::Registry::builtins().find(name) != nullptr) {
          throw py::value_error("\"" + name + "\" is a built-in plugin; choose another name");
        }
        static const std::vector<std::string> known = {"filter", "score", "queue_sort", "place"};
        std::vector<std::string> registry_hooks;
        for (const auto& h : hooks) {
          if (std::find(known.begin(), known.end(), h) == known.end()) {
            throw py::value_error("unknown hook \"" + h + "\" (Python plugins implement filter, score, queue_sort or place)");
          }
          if (h == "place") {
            registry_hooks.push_back("filter");
            registry_hooks.push_back("device_select");
          } else {
            registry_hooks.push_back(h);
          }
        }
        if (registry_hooks.empty()) throw py::value_error("plugin \"" + name + "\" implements no hook");
        const bool place = std::find(hooks.begin(), hooks.end(), "place") != hooks.end();
        const bool filter = std::find(hooks.begin(), hooks.end(), "filter") != hooks.end();
        if (place && filter) {
          throw py::value_error("plugin \"" + name + "\" has both place() and filter(): place() already filters; keep one");
        }
        PySpec spec{name, hooks, std::make_shared<PyHandle>(std::move(factory)), normalize};
        policies::PluginInfo info;
        info.name = name;
        info.description = description.empty() ? "Python plugin" : description;
        info.hooks = registry_hooks;
        for (const auto& [an, at, ad, def] : args) {
          nlohmann::json dj;
          {
            // The default, through JSON (json.dumps), so profiles compare and print it.
            auto text = py::module_::import("json").attr("dumps")(def).cast<std::string>();
            try {
              dj = parse_json(text, "plugin '" + name + "'", kScenarioJsonErrors);
            } catch (const Error& e) {   // NaN, Infinity, nesting beyond kMaxJsonDepth
              throw py::value_error("plugin \"" + name + "\": the default of argument \"" + an +
                                    "\" is not JSON data: " + e.detail());
            }
          }
          info.args.push_back({an, at, ad, dj});
        }
        info.factory = [spec](const policies::PluginContext& ctx) -> std::unique_ptr<policies::Plugin> {
          PyCallGil gil;
          const auto seed = ctx.rng.stream("python." + spec.name).next();
          py::object obj;
          try {
            obj = call_python(spec.factory->obj, py::make_tuple(json_to_py(ctx.args), py::int_(seed)));
          } catch (py::error_already_set& e) {
            if (e.matches(PyExc_KeyboardInterrupt)) throw;
            std::string text = e.what();
            throw_error(ErrorCode::kProfileBadArgs, {"plugin '" + spec.name + "'", 0, "args"},
                        "could not create the Python plugin: " + text);
          }
          return std::make_unique<PyPlugin>(spec, std::move(obj));
        };
        auto& r = py_registry();
        const std::lock_guard<std::mutex> lock(r.mutex);
        r.plugins.insert_or_assign(name, std::pair{std::move(spec), std::move(info)});
      },
      py::arg("name"), py::arg("hooks"), py::arg("factory"), py::arg("description") = "",
      py::arg("args") = std::vector<std::tuple<std::string, std::string, std::string, py::object>>{},
      py::arg("normalize") = "min-max",
      "Registers a Python plugin for this process (use gpusched.register_plugin). factory(args, seed) builds the "
      "object for one run.");

  m.def(
      "unregister_python_plugin",
      [](const std::string& name) {
        auto& r = py_registry();
        const std::lock_guard<std::mutex> lock(r.mutex);
        return r.plugins.erase(name) > 0;
      },
      py::arg("name"), "Removes a Python plugin; False when there was none.");
}

}  // namespace gpusched::python
