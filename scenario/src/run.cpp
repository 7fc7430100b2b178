#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>

#include <gpusched/dra/nvidia.hpp>
#include <gpusched/policies/dynamicresources/dynamic_resources.hpp>
#include <gpusched/policies/framework/registry.hpp>
#include <gpusched/policies/framework/scheduler.hpp>
#include <gpusched/rng.hpp>
#include <gpusched/scenario/scenario.hpp>
#include <gpusched/policies/fgd/fragmentation.hpp>
#include <gpusched/traces/native.hpp>
#include <gpusched/traces/transforms.hpp>
#include <gpusched/version.hpp>

#include "output_files.hpp"

namespace gpusched::scenario {

struct RunResult::State {
  ClusterState cluster;
  Workload workload;
  std::unique_ptr<policies::Scheduler> scheduler;
  std::unique_ptr<sim::Engine> engine;
  std::unique_ptr<sim::Autoscaler> autoscaler;   // null unless a node group autoscales
  sim::MetricsCollector metrics;
  sim::EventLog events;
  std::unique_ptr<FragmentationRecorder> fragmentation;   // null unless enabled
  sim::RunStamp stamp;
  nlohmann::json inputs;
  std::string profile_name;
  std::vector<std::string> warnings;   // the scheduler's configuration warnings
  std::vector<policies::DecisionExplanation> explanations;   // Scenario::explain

  State(ClusterState c, Workload w, SimTime interval)
      : cluster(std::move(c)), workload(std::move(w)), metrics(interval) {}
};

RunResult::RunResult() = default;
RunResult::RunResult(RunResult&&) noexcept = default;
RunResult& RunResult::operator=(RunResult&&) noexcept = default;
RunResult::~RunResult() = default;
RunResult::RunResult(std::unique_ptr<State> s) : state_(std::move(s)) {}

const sim::RunStamp& RunResult::stamp() const { return state_->stamp; }
const sim::Summary& RunResult::summary() const { return state_->metrics.summary(); }
const std::vector<sim::TimeSample>& RunResult::timeseries() const { return state_->metrics.samples(); }
std::vector<sim::JobRow> RunResult::jobs() const { return sim::job_rows(*state_->engine); }
const std::vector<policies::DecisionExplanation>& RunResult::explanations() const { return state_->explanations; }
const std::vector<std::string>& RunResult::event_log() const { return state_->events.lines(); }
const std::vector<FragmentationSample>& RunResult::fragmentation() const {
  static const std::vector<FragmentationSample> none;
  return state_->fragmentation ? state_->fragmentation->samples() : none;
}
const sim::Engine& RunResult::engine() const { return *state_->engine; }
const std::string& RunResult::profile_name() const { return state_->profile_name; }
const std::vector<std::string>& RunResult::warnings() const { return state_->warnings; }

nlohmann::json RunResult::summary_json() const {
  const auto& st = state_->stamp;
  nlohmann::json j = summary();
  j["schema_version"] = 1;
  j["kind"] = "gpusched.summary";
  j["gpusched_version"] = st.version;
  j["scenario"] = {{"name", st.scenario}, {"source", st.source}, {"digest", st.digest}};
  j["seed"] = st.seed;
  j["profile"] = state_->profile_name;
  j["inputs"] = state_->inputs;
  j["warnings"] = state_->warnings;
  if (state_->autoscaler) j["autoscaler"] = state_->autoscaler->report();
  if (state_->fragmentation && !state_->fragmentation->samples().empty()) {
    const auto& last = state_->fragmentation->samples().back();
    nlohmann::json f = {{"samples", state_->fragmentation->samples().size()},
                        {"final", {{"arrived_pct", last.arrived_pct}, {"unallocated_pct", last.unallocated_pct},
                                   {"frag_pct", last.frag_pct}, {"frag_ratio_pct", last.frag_ratio_pct}}}};
    double peak = 0;
    for (const auto& s : state_->fragmentation->samples()) peak = std::max(peak, s.frag_pct);
    f["peak_frag_pct"] = peak;
    j["fragmentation"] = f;
  }
  return j;
}

void apply_priority_classes(Workload& jobs, const std::map<std::string, PriorityClass>& classes, const std::string& source) {
  const PriorityClass* global = nullptr;
  for (const auto& [name, c] : classes) {
    if (c.global_default) global = &c;
  }
  for (auto& j : jobs) {
    auto& c = j.constraints;
    if (c.priority_final) continue;   // a pod's spec.priority: admission already resolved its class
    if (c.priority_class.empty()) {
      if (global && j.priority == 0) {
        j.priority = global->value;
        c.preempt_never = c.preempt_never || global->preempt_never;
      }
      continue;
    }
    const auto it = classes.find(c.priority_class);
    if (it == classes.end()) {
      if (const auto system = system_priority_class(c.priority_class)) {
        j.priority = *system;   // every cluster has them; their preemptionPolicy is PreemptLowerPriority
        continue;
      }
      std::string known;
      for (const auto& [name, pc] : classes) known += (known.empty() ? "" : ", ") + name;
      throw_error(ErrorCode::kTraceBadValue, {source, j.source_line, "priority_class"},
                  "job \"" + j.name + "\" names an unknown priority class \"" + c.priority_class + "\" (defined: " +
                      (known.empty() ? "none; add them under priority_classes" : known) + ")");
    }
    j.priority = it->second.value;
    c.preempt_never = c.preempt_never || it->second.preempt_never;
  }
}

/// How many tasks of a job with a DRA claim an empty cluster holds at once: on each node, the
/// claim allocated again and again with the devices taken before marked in use, as
/// dynamic-resources would place them one after another, while the task's CPU and memory fit.
/// A shared claim's tasks all go to its node and take its devices once: the best node counts.
std::int64_t claim_tasks_at_once(const JobSpec& j, ClusterState& scratch, std::int64_t want) {
  const auto& claims = *j.constraints.claims;
  if (!claims.classes) return 0;
  const auto published = dra::simulated_devices(scratch.specs(), scratch.catalog(), dra::given_slices(claims.slices));
  const dra::Allocator alloc(*claims.classes, published.slices);
  const auto ptrs = claims.pointers();
  TaskRequest host = j.request;   // CPU, memory and the rest: the devices come from the claim
  host.gpu = GpuRequest{};
  host.tpu = TpuRequest{};
  std::int64_t total = 0, best = 0;
  for (std::uint32_t n = 0; n < scratch.node_count() && total < want && best < want; ++n) {
    const NodeId node{n};
    auto in_use = alloc.no_devices_in_use();
    std::vector<TaskPlacement> taken;
    while (total + static_cast<std::int64_t>(taken.size()) < want && scratch.fits(node, host) &&
           (!claims.shared || taken.size() < policies::DynamicResources::kMaxClaimUsers)) {
      if (!claims.shared || taken.empty()) {
        const auto on = dra::allocate_on_node(alloc, published.nodes[n], scratch.spec(node), ptrs, in_use);
        if (!on.got) break;
        for (const auto& a : *on.got) {
          for (const auto& r : a.devices) {
            if (r.admin_access) continue;
            if (const auto k = alloc.find_device(r.driver, r.pool, r.device)) in_use[*k] = 1;
          }
        }
      }
      TaskPlacement p;
      p.node = node;
      scratch.allocate(host, p);
      taken.push_back(p);
    }
    for (auto t = taken.rbegin(); t != taken.rend(); ++t) scratch.undo_allocate(host, *t);
    if (claims.shared) best = std::max<std::int64_t>(best, static_cast<std::int64_t>(taken.size()));
    else total += static_cast<std::int64_t>(taken.size());
  }
  return claims.shared ? best : total;
}

void check_gangs(const Workload& jobs, const ClusterState& cluster, const std::string& source) {
  // How many tasks of one request an empty cluster holds at once: pack them node by node on a
  // scratch copy (first fit, lowest GPUs). Equal requests share the answer.
  std::map<std::uint64_t, std::int64_t> capacity;
  std::optional<ClusterState> scratch;
  for (const auto& j : jobs) {
    if (j.min_available <= 1 || j.request.tpu.hosts > 1) continue;   // TPU slices are checked by shape
    const std::uint64_t cls = request_class(j);
    auto it = capacity.find(cls);
    if (it == capacity.end()) {
      if (!scratch) scratch.emplace(cluster);
      std::int64_t placed = 0;
      std::vector<std::pair<TaskPlacement, const TaskRequest*>> taken;
      // A claim decides which devices a task gets, and its size may depend on the node.
      if (j.constraints.claims) placed = claim_tasks_at_once(j, *scratch, j.min_available);
      for (std::uint32_t n = 0; !j.constraints.claims && n < scratch->node_count() && placed < j.min_available; ++n) {
        const NodeId node{n};
        while (placed < j.min_available && scratch->fits(node, j.request)) {
          TaskPlacement p;
          p.node = node;
          p.tpu_chips = j.request.tpu.chips;
          if (j.request.gpu.mode != GpuMode::kNone &&
              !scratch->pick_units(node, j.request, {}, [](const MigGeometry& g, const MigLayout& l, int profile) {
                return choose_start(g, l, profile, MigStartPolicy::kLowestFirst);
              }, p.gpus)) {
            break;
          }
          scratch->allocate(j.request, p);
          taken.emplace_back(std::move(p), &j.request);
          ++placed;
        }
      }
      for (auto t = taken.rbegin(); t != taken.rend(); ++t) scratch->undo_allocate(*t->second, t->first);
      it = capacity.emplace(cls, placed).first;
    }
    if (it->second < j.min_available) {
      throw_error(ErrorCode::kTraceUnplaceable, {source, j.source_line, "min_available"},
                  "job \"" + j.name + "\" is a gang of " + std::to_string(j.min_available) +
                      " tasks that must run at once, but the whole cluster, empty, holds only " +
                      std::to_string(it->second) + " of them");
    }
  }
}

Workload apply_transforms(Workload jobs, const std::vector<TransformStep>& steps, std::int64_t cluster_gpu_milli,
                          std::uint64_t seed, const std::string& source) {
  const Workload original = steps.empty() ? Workload{} : jobs;
  for (const auto& t : steps) {
    try {
      switch (t.kind) {
        case TransformStep::Kind::kShuffle: jobs = traces::shuffle(std::move(jobs), seed); break;
        case TransformStep::Kind::kResample: {
          const auto target = static_cast<std::int64_t>(std::floor(static_cast<double>(cluster_gpu_milli) * t.value / 100.0));
          jobs = traces::resample_to_gpu_milli(std::move(jobs), original, target, seed);
          break;
        }
        case TransformStep::Kind::kScaleTime: jobs = traces::scale_time(std::move(jobs), t.value); break;
        case TransformStep::Kind::kFilter: {
          traces::JobFilter f;
          f.queues = t.queues;
          for (const auto& k : t.kinds) f.kinds.push_back(*traces::parse_job_kind(k));
          jobs = traces::filter(std::move(jobs), f);
          break;
        }
        case TransformStep::Kind::kArrivalOnly: jobs = traces::arrival_only(std::move(jobs)); break;
        case TransformStep::Kind::kTargetLoad:
          jobs = traces::scale_to_gpu_load(std::move(jobs), cluster_gpu_milli, t.value);
          break;
      }
    } catch (const std::invalid_argument& e) {
      throw_error(ErrorCode::kScenarioBadValue, {source, 0, t.path}, e.what());
    } catch (const std::out_of_range& e) {   // a scaled time past kMaxInputSeconds
      throw_error(ErrorCode::kScenarioOutOfRange, {source, 0, t.path}, e.what());
    }
  }
  return jobs;
}

namespace {
/// Every job arrived at one instant and the run ended there (a cluster snapshot whose pods
/// never finish): time-weighted shares are 0/0, so summaries give the final allocation.
bool no_time_passed(const sim::Summary& s) { return s.jobs > 0 && s.end == s.first_submit; }

std::string hex64(std::uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

/// `preemption.placement: "count"`: every whole GPU a one-GPU task of the job's gang (CPU, memory
/// and extended resources split evenly, rounded up), so the job fits wherever the cluster has that
/// many GPUs free. A job that would have more than 1,000,000 tasks (the trace limit) is refused.
void count_gpus_only(Workload& workload, const std::string& source) {
  constexpr std::int64_t kMaxTasks = 1'000'000;
  for (auto& j : workload) {
    auto& g = j.request.gpu;
    if ((g.mode != GpuMode::kWhole && g.mode != GpuMode::kPassthrough) || g.count <= 1) continue;
    const std::int64_t per = g.count;
    const std::int64_t tasks = std::int64_t{j.tasks} * per;
    if (tasks > kMaxTasks) {
      throw_error(ErrorCode::kScenarioOutOfRange, {source, j.source_line, "tasks"},
                  "with preemption.placement \"count\" every GPU is a task: job \"" + j.name + "\" would be " +
                      std::to_string(tasks) + " one-GPU tasks (at most 1000000)");
    }
    j.tasks = static_cast<std::int32_t>(tasks);
    j.min_available = static_cast<std::int32_t>(std::int64_t{j.min_available} * per);
    j.request.cpu_milli = (j.request.cpu_milli + per - 1) / per;
    j.request.memory_mib = (j.request.memory_mib + per - 1) / per;
    for (auto& [id, amount] : j.request.extended) amount = (amount + per - 1) / per;
    g.count = 1;
  }
}
}  // namespace

void prepare_claims(Workload& jobs, const Scenario& sc) {
  const std::string source = sc.trace ? sc.trace->string() : sc.synthetic ? sc.source : sc.source + " /workload/jobs (line = job number)";
  resolve_claims(jobs, sc, source);
  if (std::none_of(jobs.begin(), jobs.end(), [](const JobSpec& j) { return j.constraints.claims != nullptr; })) return;
  // The DynamicResources plugin must decide, or the claims would be ignored.
  const auto named = [](const policies::PluginRef& r) { return r.name == "dynamic-resources"; };
  if (std::none_of(sc.profile.filter.begin(), sc.profile.filter.end(), named) || !named(sc.profile.device_select)) {
    throw_error(ErrorCode::kScenarioBadValue, {sc.source, 0, "profile"},
                "jobs have DRA claims (claim_template, resource_claim), but profile \"" + sc.profile.name +
                    "\" does not list dynamic-resources at filter and device_select, so their claims would be ignored (docs/dra.md)");
  }
  // Counting GPUs only cuts each job into one-GPU tasks: a claim names devices, not a count.
  if (sc.count_gpus) {
    throw_error(ErrorCode::kScenarioBadValue, {sc.source, 0, "/preemption/placement"},
                "placement \"count\" counts GPUs only, which a DRA claim (claim_template, resource_claim) does not: a claim names its devices (docs/dra.md)");
  }
}

RunResult run(const Scenario& sc, std::optional<std::uint64_t> seed_override, const ProgressFn& progress,
              const policies::Registry& registry) {
  const std::uint64_t seed = seed_override.value_or(sc.seed);
  ClusterState cluster(sc.catalog, sc.resources, sc.nodes);
  cluster.set_device_options(sc.devices);
  // The scheduler is built (and its profile validated) before any workload is generated.
  auto scheduler = std::make_unique<policies::Scheduler>(sc.profile, registry, seed);
  if (sc.exact_scan) scheduler->set_node_index(false);
  Workload workload;
  std::string workload_source = sc.source;
  if (sc.synthetic) {
    workload = traces::generate(*sc.synthetic, cluster, RngStreams(seed));
  } else {
    workload = sc.jobs;
    if (sc.trace) workload_source = sc.trace->string();
  }
  if (sc.synthetic) apply_priority_classes(workload, sc.priority_classes, workload_source);
  // DRA claims first: transforms and plugins that model demand see the GPUs claims take.
  prepare_claims(workload, sc);
  // Plugins that model demand (FGD's typical pod types) see the trace as read, not as transformed.
  const bool transformed = !sc.transforms.empty();
  if (transformed) {
    scheduler->set_target_workload(workload);
    workload = apply_transforms(std::move(workload), sc.transforms, cluster.totals().gpu_milli, seed, sc.source);
  }
  // The engine replays jobs in submit order (importers may keep a trace's file order).
  // (Checked first: a sorted million-job workload spent 4% of the run moving JobSpecs.)
  const auto by_submit = [](const JobSpec& a, const JobSpec& b) { return a.submit < b.submit; };
  if (!std::is_sorted(workload.begin(), workload.end(), by_submit)) std::stable_sort(workload.begin(), workload.end(), by_submit);
  if (sc.count_gpus) count_gpus_only(workload, workload_source);
  if (!sc.keep_unplaceable) {
    traces::check_placeable(workload, cluster, workload_source);
    check_gangs(workload, cluster, workload_source);
  }
  sim::EngineConfig engine_config = sc.engine;
  if (sc.profile.queueing == "strict-fifo") engine_config.queue_policy = sim::QueuePolicy::kStrictFifo;
  else if (sc.profile.queueing == "easy-backfill") engine_config.queue_policy = sim::QueuePolicy::kEasyBackfill;
  else if (sc.profile.queueing == "preemptive") {
    engine_config.queue_policy = sim::QueuePolicy::kPreemptive;
    // Preempted training jobs resume from where they were (Tiresias), unless the scenario says.
    if (!sc.restart_given) engine_config.preemption.restart = sim::RestartPolicy::kResume;
    const char* clash = engine_config.wait_for_pods_ready.enabled ? "wait_for_pods_ready"
                        : engine_config.fill_mode                   ? "mode"
                        : !engine_config.retry                      ? "retry"
                                                                    : nullptr;
    if (clash != nullptr) {
      throw_error(ErrorCode::kScenarioBadValue, {sc.source, 0, clash},
                  std::string(clash == std::string_view("mode") ? "mode \"fill\"" : clash == std::string_view("retry") ? "retry: false" : clash) +
                      " does not combine with the profile's \"preemptive\" queueing (profile \"" + sc.profile.name +
                      "\"): a preempted job waits and runs again by the queue order");
    }
  }

  // Shared DRA claims under queue policies that decide several jobs on copies before any starts
  // (preemptive queueing's what-ifs, EASY backfill's reservation) are not modelled: the claim's
  // state lives in what has started, and a copy would free the holder's devices under the others.
  if (engine_config.queue_policy == sim::QueuePolicy::kPreemptive || engine_config.queue_policy == sim::QueuePolicy::kEasyBackfill) {
    const auto shared = std::find_if(workload.begin(), workload.end(), [](const JobSpec& j) { return !j.constraints.resource_claim.empty(); });
    if (shared != workload.end()) {
      throw_error(ErrorCode::kScenarioBadValue, {sc.source, 0, "profile"},
                  "job \"" + shared->name + "\" shares ResourceClaim \"" + shared->constraints.resource_claim.str() + "\" (resource_claim), which the profile's \"" +
                      sc.profile.queueing + "\" queueing does not model yet (profile \"" + sc.profile.name + "\"; docs/dra.md)");
    }
  }
  auto state = std::make_unique<RunResult::State>(std::move(cluster), std::move(workload), sc.outputs.sample_interval);
  state->scheduler = std::move(scheduler);
  state->profile_name = sc.profile.name;
  auto& s = *state;
  s.engine = std::make_unique<sim::Engine>(s.cluster, s.workload, *s.scheduler, engine_config);
  s.engine->add_observer(&s.metrics);
  if (!sc.autoscaler.groups.empty()) {
    s.autoscaler = std::make_unique<sim::Autoscaler>(*s.engine, s.cluster, sc.autoscaler);
    s.engine->add_observer(s.autoscaler.get());
  }
  if (sc.outputs.event_log) s.engine->add_observer(&s.events);
  if (sc.explain) {
    s.scheduler->set_explain([&list = s.explanations](const policies::DecisionExplanation& e) { list.push_back(e); });
  }
  if (sc.outputs.fragmentation == "on" || (sc.outputs.fragmentation == "auto" && has_gpu_sharing(s.workload))) {
    const std::span<const JobSpec> target = transformed ? std::span<const JobSpec>(sc.jobs) : std::span<const JobSpec>(s.workload);
    s.fragmentation = std::make_unique<FragmentationRecorder>(policies::fgd::typical_pod_types(target));
    s.engine->add_observer(s.fragmentation.get());
  }

  nlohmann::json resolved = sc.document;
  resolved["seed"] = seed;
  s.inputs = {{"scenario", resolved}, {"profile", sc.profile.to_json()}};
  if (sc.trace) s.inputs["trace"] = sc.trace->string();
  s.stamp = {kVersion, sc.name, sc.source, hex64(fnv1a64(resolved.dump())), seed};

  try {
    s.engine->run(progress);
  } catch (const ScenarioError& e) {
    // Limits only the run can find (a slowed-down job past the clock, too many samples) are
    // raised by the engine without a file: name the scenario's.
    if (!e.where().file.empty() || sc.source.empty()) throw;
    throw_error(e.code(), {sc.source, e.where().line, e.where().field}, e.detail());
  }
  s.warnings = s.scheduler->warnings();   // after the run: plugins warn when built and when attached
  // PodDisruptionBudgets are read only by kube-scheduler's preemption rule: say so when the
  // profile has none (e.g. a sweep that runs the same scenario under another preset).
  if (const auto it = sc.document.find("pod_disruption_budgets"); it != sc.document.end() && it->is_array() && !it->empty()) {
    const bool used = std::any_of(sc.profile.post_filter.begin(), sc.profile.post_filter.end(), [](const auto& ref) {
      if (ref.name != "priority-preemption") return false;
      const auto nc = ref.args.find("node_choice");
      return nc == ref.args.end() || (nc->is_string() && nc->template get<std::string>() == "kubernetes");
    });
    if (!used) {
      s.warnings.push_back("pod_disruption_budgets: profile \"" + sc.profile.name +
                           "\" has no priority-preemption with node_choice \"kubernetes\", so the budgets have no effect");
    }
  }
  return RunResult(std::move(state));
}

std::vector<std::filesystem::path> write_outputs(const RunResult& r, const std::filesystem::path& dir) {
  detail::OutputFolder folder(dir, detail::run_output_names());
  auto write = [&](const std::string& name, const std::function<void(std::ostream&)>& body) { folder.write(name, body); };
  write("summary.json", [&](std::ostream& o) { o << r.summary_json().dump(2) << '\n'; });
  // CSVs start with their header row (pandas.read_csv(path) reads them as they are); what
  // produced them is in summary.json and meta.json.
  write("jobs.csv", [&](std::ostream& o) { sim::write_jobs_csv(o, r.engine()); });
  write("timeseries.csv", [&](std::ostream& o) { sim::write_timeseries_csv(o, r.timeseries()); });
  const auto claims = r.claims();
  if (!claims.empty()) write("claims.csv", [&](std::ostream& o) { write_claims_csv(o, claims); });
  if (!r.fragmentation().empty()) {
    write("fragmentation.csv", [&](std::ostream& o) { write_fragmentation_csv(o, r.fragmentation()); });
  }
  if (!r.event_log().empty()) {
    write("events.csv", [&](std::ostream& o) {
      o << "time_s,event,job,node,detail\n";
      for (const auto& l : r.event_log()) o << l << '\n';
    });
  }
  write("report.md", [&](std::ostream& o) {
    const auto& s = r.summary();
    const auto& st = r.stamp();
    using sim::fixed;
    o << "# gpusched report: " << st.scenario << "\n\n";
    o << "| | |\n|---|---|\n";
    o << "| gpusched | " << st.version << " |\n| scenario | " << st.source << " |\n| digest | " << st.digest
      << " |\n| seed | " << st.seed << " |\n| profile | " << r.profile_name() << " |\n";
    o << "| cluster | " << s.nodes << " nodes, " << s.gpus << " GPUs |\n\n";
    o << "## Jobs\n\n| total | completed | failed | running | pending | not arrived | requeued |\n|---|---|---|---|---|---|---|\n";
    o << "| " << s.jobs << " | " << s.completed << " | " << s.failed << " | " << s.running << " | " << s.pending << " | "
      << s.not_arrived << " | " << s.requeued << " |\n\n";
    if (no_time_passed(s)) {
      o << "## Allocation (every job arrived at " << fixed(s.first_submit.seconds(), 0) << " s; no time passed)\n\n";
      o << "- GPU: " << fixed(allocated_gpu_pct(r.engine().cluster()), 2) << " % allocated once every job arrived\n";
    } else {
      o << "## Allocation (time-weighted, first submit to end)\n\n";
      o << "- GPU: " << fixed(s.gpu_alloc_pct_time_weighted, 2) << " % (" << fixed(s.gpu_hours_allocated, 1) << " GPU-hours); peak "
        << fixed(s.gpu_alloc_pct_peak, 2) << " %; ";
      if (s.first_submit == s.last_submit) o << "every job arrived at " << fixed(s.first_submit.seconds(), 0) << " s\n";
      else o << fixed(s.gpu_alloc_pct_arrivals, 2) << " % while jobs arrived (" << fixed(s.first_submit.seconds(), 0) << "-"
             << fixed(s.last_submit.seconds(), 0) << " s)\n";
    }
    o << "- CPU: " << fixed(s.cpu_alloc_pct_time_weighted, 2) << " %\n";
    o << "- peak pending jobs: " << s.peak_pending << "\n";
    if (s.evictions > 0) {
      o << "- evictions: " << s.evictions << " (" << s.preemptions << " by preemption or reclaim), "
        << fixed(s.lost_gpu_hours, 2) << " GPU-hours of work lost\n";
    }
    if (const auto j = r.summary_json(); j.contains("autoscaler")) {
      o << "- autoscaler: " << fixed(j["autoscaler"]["node_hours"].get<double>(), 1) << " node-hours in autoscaled groups ("
        << j["autoscaler"]["scale_ups"].get<std::int64_t>() << " nodes added, " << j["autoscaler"]["scale_downs"].get<std::int64_t>()
        << " removed), " << fixed(j["autoscaler"]["static_node_hours"].get<double>(), 1) << " in static nodes\n";
    }
    if (const auto j = r.summary_json(); j.contains("fragmentation")) {
      const auto& f = j["fragmentation"]["final"];
      o << "- GPU fragmentation (FGD's measure, typical pod types of the trace): " << fixed(f["frag_pct"].get<double>(), 2)
        << " % of GPU capacity at the last decision (" << fixed(f["frag_ratio_pct"].get<double>(), 2) << " % of idle GPU; peak "
        << fixed(j["fragmentation"]["peak_frag_pct"].get<double>(), 2) << " %), with " << fixed(f["unallocated_pct"].get<double>(), 2)
        << " % of GPU unallocated after " << fixed(f["arrived_pct"].get<double>(), 1) << " % of capacity arrived\n";
    }
    o << "\n";
    o << "## Wait and job completion time (seconds)\n\n| | count | mean | p50 | p95 | p99 | max |\n|---|---|---|---|---|---|---|\n";
    for (const auto& [label, d] : {std::pair{"wait", s.wait}, std::pair{"JCT", s.jct}}) {
      o << "| " << label << " | " << d.count << " | " << fixed(d.mean_s, 1) << " | " << fixed(d.p50_s, 1) << " | "
        << fixed(d.p95_s, 1) << " | " << fixed(d.p99_s, 1) << " | " << fixed(d.max_s, 1) << " |\n";
    }
    o << "\nMakespan: " << fixed(s.makespan_s, 1) << " s; simulated end: " << fixed(s.end.seconds(), 1) << " s.\n\n";
    o << "## Files\n\n- `summary.json`: these figures, with the resolved inputs\n- `jobs.csv`: one row per job\n"
         "- `timeseries.csv`: allocation and queue length every sample interval\n";
    if (!r.event_log().empty()) o << "- `events.csv`: every submit, start, finish and failure\n";
    if (!r.fragmentation().empty()) o << "- `fragmentation.csv`: arrived demand, unallocated GPU and fragmentation after every decision\n";
    if (!claims.empty()) o << "- `claims.csv`: the DRA devices each task holds through its claim\n";
    o << "- `meta.json`: what produced these files (version, scenario, digest, seed, profile)\n";
  });
  write("meta.json", [&](std::ostream& o) {
    const auto& st = r.stamp();
    nlohmann::json files = nlohmann::json::array();
    for (const auto& f : folder.written()) files.push_back(f.filename().string());
    files.push_back("meta.json");
    const nlohmann::json meta = {{"schema_version", 1},
                                 {"kind", "gpusched.meta"},
                                 {"gpusched_version", st.version},
                                 {"scenario", {{"name", st.scenario}, {"source", st.source}, {"digest", st.digest}}},
                                 {"seed", st.seed},
                                 {"profile", r.profile_name()},
                                 {"files", files}};
    o << meta.dump(2) << '\n';
  });
  folder.commit({"meta.json", "summary.json"});   // summary.json last: the folder now holds a complete run
  return folder.written();
}

std::vector<std::filesystem::path> write_output_files(const std::filesystem::path& dir,
                                                      const std::vector<std::pair<std::string, std::string>>& files) {
  detail::OutputFolder folder(dir, detail::run_output_names());
  for (const auto& [name, bytes] : files) {
    if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..") {
      throw_error(ErrorCode::kOutputWrite, {(dir / name).string(), 0, ""}, "not a plain file name");
    }
    folder.write_bytes(name, bytes);
  }
  folder.commit({"meta.json", "summary.json"});
  return folder.written();
}

double allocated_gpu_pct(const ClusterState& c) {
  const auto& t = c.totals();
  return t.gpu_milli > 0 ? 100.0 * static_cast<double>(t.gpu_used_milli) / static_cast<double>(t.gpu_milli) : 0.0;
}

std::string format_summary(const RunResult& r) {
  const auto& s = r.summary();
  const auto& st = r.stamp();
  using sim::fixed;
  std::ostringstream o;
  o << "gpusched " << st.version << "  " << st.scenario << " (seed " << st.seed << ", profile " << r.profile_name()
    << "): " << s.nodes << " nodes, " << s.gpus << " GPUs, " << s.jobs << " jobs\n";
  o << "  jobs       completed " << s.completed << ", failed " << s.failed << ", running " << s.running << ", pending "
    << s.pending;
  if (s.not_arrived) o << ", not arrived " << s.not_arrived;
  o << "\n";
  if (no_time_passed(s)) {
    // A snapshot (every job at one instant, nothing finished): time-weighted shares are 0/0.
    o << "  GPU alloc  " << fixed(allocated_gpu_pct(r.engine().cluster()), 1) << "% once every job arrived (all at "
      << fixed(s.first_submit.seconds(), 0) << " s; no time passed)\n";
  } else if (s.first_submit == s.last_submit) {
    // Every job at one instant: there is no arrival window to average over.
    o << "  GPU alloc  " << fixed(s.gpu_alloc_pct_time_weighted, 1) << "% to the end (" << fixed(s.end.seconds(), 0)
      << " s; every job arrived at " << fixed(s.first_submit.seconds(), 0) << " s), peak " << fixed(s.gpu_alloc_pct_peak, 1) << "%\n";
  } else {
    o << "  GPU alloc  " << fixed(s.gpu_alloc_pct_arrivals, 1) << "% while jobs arrived (" << fixed(s.first_submit.seconds(), 0)
      << "-" << fixed(s.last_submit.seconds(), 0) << " s), " << fixed(s.gpu_alloc_pct_time_weighted, 1) << "% to the end ("
      << fixed(s.end.seconds(), 0) << " s), peak " << fixed(s.gpu_alloc_pct_peak, 1) << "%\n";
  }
  o << "  CPU alloc  " << fixed(s.cpu_alloc_pct_time_weighted, 1) << "% to the end; peak pending jobs " << s.peak_pending << "\n";
  o << "  wait  (s)  mean " << fixed(s.wait.mean_s, 1) << "  p50 " << fixed(s.wait.p50_s, 1) << "  p95 "
    << fixed(s.wait.p95_s, 1) << "  p99 " << fixed(s.wait.p99_s, 1) << "\n";
  o << "  JCT   (s)  mean " << fixed(s.jct.mean_s, 1) << "  p50 " << fixed(s.jct.p50_s, 1) << "  p95 "
    << fixed(s.jct.p95_s, 1) << "  p99 " << fixed(s.jct.p99_s, 1) << "\n";
  o << "  makespan   " << fixed(s.makespan_s, 1) << " s\n";
  if (!r.fragmentation().empty()) {
    const auto& f = r.fragmentation().back();
    o << "  GPU frag   " << fixed(f.frag_pct, 2) << "% of capacity at the last decision (" << fixed(f.frag_ratio_pct, 1)
      << "% of idle GPU); unallocated " << fixed(f.unallocated_pct, 2) << "% after " << fixed(f.arrived_pct, 1) << "% arrived\n";
  }
  if (s.evictions > 0) {
    o << "  evictions  " << s.evictions << " (" << s.preemptions << " preemptions), " << fixed(s.lost_gpu_hours, 2)
      << " GPU-hours lost\n";
  }
  return o.str();
}

}  // namespace gpusched::scenario
