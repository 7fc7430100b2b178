#include <gpusched/sim/outputs.hpp>

#include <bit>
#include <charconv>
#include <cstdio>
#include <system_error>

namespace gpusched::sim {

std::string fixed(double v, int decimals) {
  // std::to_chars prints the exactly rounded value as printf("%.*f") does (the property test in
  // tests/sim/test_outputs.cpp compares them), several times faster: jobs.csv of a million jobs
  // spent 9% of the run in snprintf.
  char buf[128];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed, decimals);
  std::string s;
  if (ec == std::errc{}) {
    s.assign(buf, end);
  } else {
    const int n = std::snprintf(nullptr, 0, "%.*f", decimals, v);
    s.resize(static_cast<std::size_t>(n) + 1);
    std::snprintf(s.data(), s.size(), "%.*f", decimals, v);
    s.resize(static_cast<std::size_t>(n));
  }
  if (s == "-0" || s.rfind("-0.", 0) == 0) {
    // Normalise negative zero so equal values print equal bytes.
    bool all_zero = s.find_first_not_of("-0.") == std::string::npos;
    if (all_zero) s.erase(0, 1);
  }
  return s;
}

std::string csv_field(std::string_view s) {
  if (s.find_first_of(",\"\n\r") == std::string_view::npos) return std::string(s);
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
  return out;
}

namespace {
/// "{nic:0,4}": the NICs a task holds through a DRA claim (TaskPlacement::nics), by index.
void append_nics(std::string& out, std::uint64_t nics) {
  if (nics == 0) return;
  out += "{nic:";
  for (bool first = true; nics != 0; nics &= nics - 1, first = false) {
    if (!first) out += ',';
    out += std::to_string(std::countr_zero(nics));
  }
  out += '}';
}
}  // namespace

std::string placement_string(const ClusterState& cluster, std::span<const TaskPlacement> placements) {
  std::string out;
  for (std::size_t i = 0; i < placements.size(); ++i) {
    const auto& p = placements[i];
    if (i) out += ';';
    out += cluster.spec(p.node).name;
    if (p.tpu_chips > 0) out += "{tpu:" + std::to_string(p.tpu_chips) + "}";
    if (p.gpus.empty()) {
      append_nics(out, p.nics);
      continue;
    }
    out += '[';
    for (std::size_t k = 0; k < p.gpus.size(); ++k) {
      const auto& g = p.gpus[k];
      if (k) out += ',';
      out += std::to_string(g.index);
      const auto& gs = cluster.gpus(p.node)[g.index];
      if (g.mig_profile >= 0) {   // the GPU instance: profile @ first memory slice
        out += ":mig-" + cluster.mig_geometry(gs).profiles[static_cast<std::size_t>(g.mig_profile)].name + "@" +
               std::to_string(g.mig_start);
        continue;
      }
      if (g.vgpu_profile >= 0) {
        out += ":vgpu-" + cluster.catalog()[gs.model].vgpu[static_cast<std::size_t>(g.vgpu_profile)].name;
        continue;
      }
      const bool whole = g.milli == kMilliPerGpu && g.memory_mib == gs.memory_mib;
      if (whole) continue;
      out += ':';
      if (g.milli > 0) out += std::to_string(g.milli) + "m";
      if (g.milli > 0 && g.memory_mib > 0) out += '/';
      if (g.memory_mib > 0) out += std::to_string(g.memory_mib) + "Mi";
    }
    out += ']';
    append_nics(out, p.nics);
  }
  return out;
}

JobRow job_row(const Engine& engine, std::size_t i) {
  const auto& cluster = engine.cluster();
  const auto& rt = engine.jobs()[i];
  const auto& spec = engine.workload()[i];
  const auto& r = spec.request;
  JobRow row;
  row.job = spec.name;
  row.queue = spec.queue;
  row.priority = spec.priority;
  row.tasks = spec.tasks;
  row.cpu_milli = r.cpu_milli;
  row.memory_mib = r.memory_mib;
  row.gpus = (r.gpu.mode == GpuMode::kWhole || r.gpu.mode == GpuMode::kPassthrough || r.gpu.mode == GpuMode::kMig ||
              r.gpu.mode == GpuMode::kVgpu) ? r.gpu.count : 0;
  row.gpu_milli = r.gpu.mode == GpuMode::kShared ? r.gpu.milli : 0;
  row.gpu_memory_mib = r.gpu.mode == GpuMode::kShared && r.gpu.memory_mib > 0 ? r.gpu.memory_mib : 0;
  row.submit_s = spec.submit.seconds();
  const bool started = rt.state == JobState::kRunning || rt.state == JobState::kCompleted ||
                       (rt.state == JobState::kFailed && !rt.start.is_forever());
  if (started) {
    row.start_s = rt.start.seconds();
    row.wait_s = (rt.start - spec.submit).seconds();
  }
  if (rt.state == JobState::kCompleted || rt.state == JobState::kFailed) row.end_s = rt.end.seconds();
  if (rt.state == JobState::kCompleted) row.jct_s = (rt.end - spec.submit).seconds();
  row.state = std::string(to_string(rt.state));
  row.attempts = rt.attempts;
  row.evictions = rt.evictions;
  row.lost_gpu_hours = rt.lost_gpu_hours;
  if (rt.state == JobState::kRunning || rt.state == JobState::kCompleted) row.placement = placement_string(cluster, rt.placements);
  if (rt.state == JobState::kPending || rt.state == JobState::kFailed) row.reason = engine.reason(rt.reason);
  // An elastic gang (min_available < tasks) that holds fewer tasks than it asked for: it says
  // so, and one that completed that way is "partial", not "completed".
  const auto held = static_cast<std::int32_t>(rt.placements.size());
  if ((rt.state == JobState::kRunning || rt.state == JobState::kCompleted) && held < spec.tasks &&
      spec.request.tpu.hosts <= 1) {
    const std::string counts = std::to_string(held) + " of " + std::to_string(spec.tasks) + " tasks";
    if (rt.state == JobState::kCompleted) {
      row.state = "partial";
      row.reason = "ran " + counts + " (min_available " + std::to_string(spec.min_available) +
                   "); the others never fitted before it ended";
    } else {
      row.reason = "running " + counts + " (min_available " + std::to_string(spec.min_available) +
                   "); the others wait for room";
    }
  }
  row.requeues = rt.requeues;
  row.bound = spec.constraints.bound;
  const auto id = JobId{static_cast<std::uint32_t>(i)};
  row.attained_s = engine.attained_us(id) / 1e6;
  row.attained_gpu_s = engine.attained_gpu_us(id) / 1e6;
  if (rt.state != JobState::kNotArrived && rt.state != JobState::kFailed) row.queue_level = engine.queue_level(id);
  row.preemptions = rt.preemptions;
  row.resumptions = rt.attempts > 1 ? rt.attempts - 1 : 0;
  row.overhead_s = engine.overhead_s(id);
  return row;
}

std::vector<JobRow> job_rows(const Engine& engine) {
  std::vector<JobRow> rows;
  rows.reserve(engine.jobs().size());
  for (std::size_t i = 0; i < engine.jobs().size(); ++i) rows.push_back(job_row(engine, i));
  return rows;
}

namespace {
constexpr const char* kJobsHeader =
    "job,queue,priority,tasks,cpu_milli,memory_mib,gpus,gpu_milli,gpu_memory_mib,submit_s,start_s,end_s,wait_s,"
    "jct_s,state,attempts,evictions,lost_gpu_hours,placement,reason,requeues,bound,attained_s,attained_gpu_s,queue_level,"
    "preemptions,resumptions,overhead_s\n";

void write_job_row(std::ostream& out, const JobRow& r) {
  auto opt = [](const std::optional<double>& v) { return v ? fixed(*v, 6) : std::string(); };
  out << csv_field(r.job) << ',' << csv_field(r.queue) << ',' << r.priority << ',' << r.tasks << ',' << r.cpu_milli
      << ',' << r.memory_mib << ',' << r.gpus << ',' << r.gpu_milli << ',' << r.gpu_memory_mib << ','
      << fixed(r.submit_s, 6) << ',' << opt(r.start_s) << ',' << opt(r.end_s) << ',' << opt(r.wait_s) << ','
      << opt(r.jct_s) << ',' << r.state << ',' << r.attempts << ',' << r.evictions << ',' << fixed(r.lost_gpu_hours, 6)
      << ',' << csv_field(r.placement) << ','
      << csv_field(r.reason) << ',' << r.requeues << ',' << (r.bound ? "true" : "false") << ',' << fixed(r.attained_s, 6)
      << ',' << fixed(r.attained_gpu_s, 6) << ',' << (r.queue_level >= 0 ? std::to_string(r.queue_level) : std::string())
      << ',' << r.preemptions << ',' << r.resumptions << ',' << fixed(r.overhead_s, 6) << '\n';
}
}  // namespace

void write_jobs_csv(std::ostream& out, const std::vector<JobRow>& rows) {
  out << kJobsHeader;
  for (const auto& r : rows) write_job_row(out, r);
}

void write_jobs_csv(std::ostream& out, const Engine& engine) {
  out << kJobsHeader;
  for (std::size_t i = 0; i < engine.jobs().size(); ++i) write_job_row(out, job_row(engine, i));
}

void write_timeseries_csv(std::ostream& out, const std::vector<TimeSample>& samples) {
  out << "time_s,gpu_alloc_pct,gpus_busy_pct,cpu_alloc_pct,memory_alloc_pct,pending_jobs,running_jobs\n";
  for (const auto& s : samples) {
    out << fixed(s.t.seconds(), 6) << ',' << fixed(s.gpu_alloc_pct, 4) << ',' << fixed(s.gpus_busy_pct, 4) << ','
        << fixed(s.cpu_alloc_pct, 4) << ',' << fixed(s.memory_alloc_pct, 4) << ',' << s.pending_jobs << ','
        << s.running_jobs << '\n';
  }
}

namespace {
std::string line(SimTime t, std::string_view event, std::string_view job, std::string_view node, std::string_view detail) {
  return fixed(t.seconds(), 6) + "," + std::string(event) + "," + csv_field(job) + "," + csv_field(node) + "," + csv_field(detail);
}
}  // namespace

void EventLog::on_submit(SimTime t, JobId j, const Engine& e) {
  lines_.push_back(line(t, "submit", e.workload()[j.value].name, "", ""));
}
void EventLog::on_job_start(SimTime t, JobId j, std::span<const TaskPlacement> p, const Engine& e) {
  // Placed on GPU instances still being created: `start` follows when it runs.
  const bool waits = e.job(j).running_since > t;
  lines_.push_back(line(t, waits ? "placed" : "start", e.workload()[j.value].name, "", placement_string(e.cluster(), p)));
}
void EventLog::on_job_running(SimTime t, JobId j, const Engine& e) {
  lines_.push_back(line(t, "start", e.workload()[j.value].name, "", placement_string(e.cluster(), e.job(j).placements)));
}
void EventLog::on_job_grow(SimTime t, JobId j, std::span<const TaskPlacement> added, const Engine& e) {
  lines_.push_back(line(t, "grow", e.workload()[j.value].name, "", placement_string(e.cluster(), added)));
}
void EventLog::on_job_finish(SimTime t, JobId j, const Engine& e) {
  lines_.push_back(line(t, "finish", e.workload()[j.value].name, "", ""));
}
void EventLog::on_job_fail(SimTime t, JobId j, std::string_view reason, const Engine& e) {
  lines_.push_back(line(t, "fail", e.workload()[j.value].name, "", reason));
}
void EventLog::on_job_requeue(SimTime t, JobId j, std::string_view reason, const Engine& e) {
  lines_.push_back(line(t, "requeue", e.workload()[j.value].name, "", reason));
}
void EventLog::on_job_backoff(SimTime t, JobId j, SimTime, std::string_view reason, const Engine& e) {
  lines_.push_back(line(t, "backoff", e.workload()[j.value].name, "", reason));
}
void EventLog::on_node(SimTime t, NodeId n, bool up, const Engine& e) {
  lines_.push_back(line(t, up ? "node_up" : "node_down", "", e.cluster().spec(n).name, ""));
}
void EventLog::write(std::ostream& out) const {
  out << "time_s,event,job,node,detail\n";
  for (const auto& l : lines_) out << l << '\n';
}

}  // namespace gpusched::sim
