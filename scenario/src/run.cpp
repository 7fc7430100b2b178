#include <cstdio>
#include <fstream>
#include <sstream>

#include <gpusched/policies/framework/registry.hpp>
#include <gpusched/policies/framework/scheduler.hpp>
#include <gpusched/rng.hpp>
#include <gpusched/scenario/scenario.hpp>
#include <gpusched/traces/native.hpp>
#include <gpusched/version.hpp>

namespace gpusched::scenario {

struct RunResult::State {
  ClusterState cluster;
  Workload workload;
  std::unique_ptr<policies::Scheduler> scheduler;
  std::unique_ptr<sim::Engine> engine;
  sim::MetricsCollector metrics;
  sim::EventLog events;
  sim::RunStamp stamp;
  nlohmann::json inputs;
  std::string profile_name;

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
const std::vector<std::string>& RunResult::event_log() const { return state_->events.lines(); }
const sim::Engine& RunResult::engine() const { return *state_->engine; }
const std::string& RunResult::profile_name() const { return state_->profile_name; }

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
  return j;
}

namespace {
std::string hex64(std::uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}
}  // namespace

RunResult run(const Scenario& sc, std::optional<std::uint64_t> seed_override, const ProgressFn& progress) {
  const std::uint64_t seed = seed_override.value_or(sc.seed);
  ClusterState cluster(sc.catalog, sc.resources, sc.nodes);
  cluster.set_device_options(sc.devices);
  // The scheduler is built (and its profile validated) before any workload is generated.
  auto scheduler = std::make_unique<policies::Scheduler>(sc.profile, policies::Registry::with_builtins(), seed);
  Workload workload;
  std::string workload_source = sc.source;
  if (sc.synthetic) {
    workload = traces::generate(*sc.synthetic, cluster, RngStreams(seed));
  } else {
    workload = sc.jobs;
    if (sc.trace) workload_source = sc.trace->string();
  }
  traces::check_placeable(workload, cluster, workload_source);

  auto state = std::make_unique<RunResult::State>(std::move(cluster), std::move(workload), sc.outputs.sample_interval);
  state->scheduler = std::move(scheduler);
  state->profile_name = sc.profile.name;
  auto& s = *state;
  s.engine = std::make_unique<sim::Engine>(s.cluster, s.workload, *s.scheduler, sc.engine);
  s.engine->add_observer(&s.metrics);
  if (sc.outputs.event_log) s.engine->add_observer(&s.events);

  nlohmann::json resolved = sc.document;
  resolved["seed"] = seed;
  s.inputs = {{"scenario", resolved}, {"profile", sc.profile.to_json()}};
  if (sc.trace) s.inputs["trace"] = sc.trace->string();
  s.stamp = {kVersion, sc.name, sc.source, hex64(fnv1a64(resolved.dump())), seed};

  s.engine->run(progress);
  return RunResult(std::move(state));
}

std::vector<std::filesystem::path> write_outputs(const RunResult& r, const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw_error(ErrorCode::kOutputWrite, {dir.string(), 0, ""}, "cannot create the output folder: " + ec.message());
  std::vector<std::filesystem::path> written;
  auto write = [&](const std::string& name, const std::function<void(std::ostream&)>& body) {
    const auto path = dir / name;
    std::ofstream out(path, std::ios::binary);
    if (!out) throw_error(ErrorCode::kOutputWrite, {path.string(), 0, ""}, "cannot write the file");
    body(out);
    out.flush();
    if (!out) throw_error(ErrorCode::kOutputWrite, {path.string(), 0, ""}, "write failed (disk full?)");
    written.push_back(path);
  };
  write("summary.json", [&](std::ostream& o) { o << r.summary_json().dump(2) << '\n'; });
  write("jobs.csv", [&](std::ostream& o) { sim::write_jobs_csv(o, r.jobs(), r.stamp()); });
  write("timeseries.csv", [&](std::ostream& o) { sim::write_timeseries_csv(o, r.timeseries(), r.stamp()); });
  if (!r.event_log().empty()) {
    write("events.csv", [&](std::ostream& o) {
      o << r.stamp().comment_line() << '\n' << "time_s,event,job,node,detail\n";
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
    o << "## Allocation (time-weighted, first submit to end)\n\n";
    o << "- GPU: " << fixed(s.gpu_alloc_pct_time_weighted, 2) << " % (" << fixed(s.gpu_hours_allocated, 1) << " GPU-hours); peak "
      << fixed(s.gpu_alloc_pct_peak, 2) << " %; " << fixed(s.gpu_alloc_pct_arrivals, 2) << " % while jobs arrived ("
      << fixed(s.first_submit.seconds(), 0) << "-" << fixed(s.last_submit.seconds(), 0) << " s)\n";
    o << "- CPU: " << fixed(s.cpu_alloc_pct_time_weighted, 2) << " %\n";
    o << "- peak pending jobs: " << s.peak_pending << "\n\n";
    o << "## Wait and job completion time (seconds)\n\n| | count | mean | p50 | p95 | p99 | max |\n|---|---|---|---|---|---|---|\n";
    for (const auto& [label, d] : {std::pair{"wait", s.wait}, std::pair{"JCT", s.jct}}) {
      o << "| " << label << " | " << d.count << " | " << fixed(d.mean_s, 1) << " | " << fixed(d.p50_s, 1) << " | "
        << fixed(d.p95_s, 1) << " | " << fixed(d.p99_s, 1) << " | " << fixed(d.max_s, 1) << " |\n";
    }
    o << "\nMakespan: " << fixed(s.makespan_s, 1) << " s; simulated end: " << fixed(s.end.seconds(), 1) << " s.\n\n";
    o << "## Files\n\n- `summary.json`: these figures, with the resolved inputs\n- `jobs.csv`: one row per job\n"
         "- `timeseries.csv`: allocation and queue length every sample interval\n";
    if (!r.event_log().empty()) o << "- `events.csv`: every submit, start, finish and failure\n";
  });
  return written;
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
  o << "  GPU alloc  " << fixed(s.gpu_alloc_pct_arrivals, 1) << "% while jobs arrived (" << fixed(s.first_submit.seconds(), 0)
    << "-" << fixed(s.last_submit.seconds(), 0) << " s), " << fixed(s.gpu_alloc_pct_time_weighted, 1) << "% to the end ("
    << fixed(s.end.seconds(), 0) << " s), peak " << fixed(s.gpu_alloc_pct_peak, 1) << "%\n";
  o << "  CPU alloc  " << fixed(s.cpu_alloc_pct_time_weighted, 1) << "% to the end; peak pending jobs " << s.peak_pending << "\n";
  o << "  wait  (s)  mean " << fixed(s.wait.mean_s, 1) << "  p50 " << fixed(s.wait.p50_s, 1) << "  p95 "
    << fixed(s.wait.p95_s, 1) << "  p99 " << fixed(s.wait.p99_s, 1) << "\n";
  o << "  JCT   (s)  mean " << fixed(s.jct.mean_s, 1) << "  p50 " << fixed(s.jct.p50_s, 1) << "  p95 "
    << fixed(s.jct.p95_s, 1) << "  p99 " << fixed(s.jct.p99_s, 1) << "\n";
  o << "  makespan   " << fixed(s.makespan_s, 1) << " s\n";
  return o.str();
}

}  // namespace gpusched::scenario
