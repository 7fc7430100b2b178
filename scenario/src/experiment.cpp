#include <gpusched/scenario/experiment.hpp>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <nlohmann/json.hpp>

#include <gpusched/policies/framework/registry.hpp>
#include <gpusched/policies/framework/scheduler.hpp>
#include <gpusched/rng.hpp>
#include <gpusched/sim/engine.hpp>
#include <gpusched/sim/outputs.hpp>
#include <gpusched/traces/alibaba.hpp>
#include <gpusched/traces/transforms.hpp>
#include <gpusched/utf8.hpp>
#include <gpusched/version.hpp>

#include "output_files.hpp"

namespace gpusched::scenario {
namespace {

constexpr std::string_view kOpenbFolder = "alibaba-gpu-v2023-openb";

std::string trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return std::string(s);
}

std::vector<std::string> split(std::string_view text, char sep) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const auto end = std::min(text.find(sep, start), text.size());
    out.push_back(trim(text.substr(start, end - start)));
    start = end + 1;
  }
  return out;
}

[[noreturn]] void bad(const std::string& field, const std::string& message) {
  throw_error(ErrorCode::kScenarioBadValue, {"command line", 0, field}, message);
}

/// The reference table of fgd.md (default workload, median of 10 seeds).
struct PaperRow {
  double unalloc_100, unalloc_130;
  std::optional<double> frag_80;
};
const std::map<std::string, PaperRow>& paper_table() {
  static const std::map<std::string, PaperRow> t = {
      {"random", {13.75, 12.62, 15.89}}, {"dotprod", {9.44, 9.20, std::nullopt}},
      {"clustering", {8.42, 8.21, std::nullopt}}, {"packing", {8.19, 7.94, std::nullopt}},
      {"bestfit", {7.09, 6.89, 8.21}}, {"fgd", {4.77, 4.60, 5.97}}};
  return t;
}

std::filesystem::path find_in(const std::filesystem::path& dir, const std::string& file) {
  for (const auto& candidate : {dir / file, dir / std::string(kOpenbFolder) / file}) {
    if (std::filesystem::is_regular_file(candidate)) return candidate;
  }
  return {};
}

std::ifstream open_or_throw(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw_error(ErrorCode::kTraceCannotOpen, {p.string(), 0, ""}, "cannot open the file");
  return in;
}

}  // namespace

const std::vector<std::string>& fgd_policy_names() {
  static const std::vector<std::string> names = {"random", "dotprod", "clustering", "packing", "bestfit", "fgd"};
  return names;
}

const std::vector<std::string>& fgd_workload_names() {
  static const std::vector<std::string> names = {
      "default",    "cpu0",       "cpu037",     "cpu050",     "cpu072",     "cpu100",    "cpu200",     "cpu235",
      "cpu250",     "cpu300",     "gpushare20", "gpushare40", "gpushare60", "gpushare80", "gpushare100", "gpuspec05",
      "gpuspec10",  "gpuspec20",  "gpuspec25",  "gpuspec33",  "multigpu20", "multigpu30", "multigpu40", "multigpu50"};
  return names;
}

std::vector<std::string> parse_fgd_workloads(std::string_view text) {
  const std::string whole = trim(text);
  std::error_code ec;
  if (whole != "all" && !whole.empty() && std::filesystem::is_regular_file(whole, ec)) return {whole};   // a path with a comma
  std::vector<std::string> out;
  auto add = [&](const std::string& name) {
    if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
  };
  for (const auto& name : split(text, ',')) {
    if (name.empty()) {
      bad("--workload", "\"" + std::string(text) + "\" has an empty entry (use all, or a comma list of variant names or pod-list paths)");
    }
    if (name == "all") {
      for (const auto& w : fgd_workload_names()) add(w);
    } else {
      add(name);
    }
  }
  return out;
}

std::string fgd_sweep_name(const std::vector<std::string>& names) {
  if (names.size() == 1) return names.front();
  if (names == fgd_workload_names()) return "all";
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ",") + n;   // as the command line takes them
  return out;
}

std::string fgd_profile_for(std::string_view policy) {
  if (policy == "bestfit") return "best-fit";
  return std::string(policy);
}

std::vector<std::string> parse_fgd_policies(std::string_view text) {
  if (trim(text) == "all") return fgd_policy_names();
  std::vector<std::string> out;
  for (auto name : split(text, ',')) {
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (name == "best-fit") name = "bestfit";
    const auto& known = fgd_policy_names();
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      bad("--policies", "unknown policy \"" + name + "\" (use all, or a comma list of random, dotprod, clustering, packing, bestfit, fgd)");
    }
    if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
  }
  return out;
}

std::uint64_t parse_seed(std::string_view text, const Location& where) {
  std::string_view s = text;
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  const std::string rule = "must be between 0 and 18446744073709551615";   // as the scenario's `seed`
  const bool negative = !s.empty() && s.front() == '-';
  const std::string_view digits = negative ? s.substr(1) : s;
  if (digits.empty() || !std::all_of(digits.begin(), digits.end(), [](unsigned char c) { return std::isdigit(c) != 0; })) {
    throw_error(ErrorCode::kScenarioBadValue, where, "\"" + std::string(s) + "\" is not a seed: a whole number between 0 and 18446744073709551615");
  }
  std::uint64_t v = 0;
  const auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  const bool zero = digits.find_first_not_of('0') == std::string_view::npos;
  if ((negative && !zero) || ec == std::errc::result_out_of_range || p != digits.data() + digits.size()) {
    throw_error(ErrorCode::kScenarioOutOfRange, where, std::string(s) + " is out of range: " + rule);
  }
  return v;
}

std::vector<std::uint64_t> parse_seeds(std::string_view text) {
  std::vector<std::uint64_t> out;
  auto number = [&](const std::string& s) -> std::uint64_t {
    if (s.empty()) bad("--seeds", "\"\" is not a seed (a non-negative integer; forms: 42, 42-51, 1,5-7)");
    return parse_seed(s, {"command line", 0, "--seeds"});
  };
  for (const auto& part : split(text, ',')) {
    const auto dash = part.find('-');
    if (dash == std::string::npos) {
      out.push_back(number(part));
      continue;
    }
    const auto lo = number(trim(part.substr(0, dash))), hi = number(trim(part.substr(dash + 1)));
    if (hi < lo) bad("--seeds", "range \"" + part + "\" ends before it starts");
    if (hi - lo > 100000) bad("--seeds", "range \"" + part + "\" has more than 100,000 seeds");
    for (auto s = lo;; ++s) {   // not `s <= hi`: that never ends for hi = 2^64-1
      out.push_back(s);
      if (s == hi) break;
    }
  }
  return out;
}

FgdInputs load_fgd_inputs(const FgdExperiment& cfg) {
  FgdInputs in;
  in.catalog = GpuCatalog::builtin();
  traces::add_undisclosed_alibaba_models(in.catalog);
  // Node list.
  in.node_source = cfg.node_list;
  if (in.node_source.empty()) {
    in.node_source = find_in(cfg.traces, "openb_node_list_gpu_node.csv");
    if (in.node_source.empty()) {
      throw_error(ErrorCode::kTraceCannotOpen, {cfg.traces.string(), 0, "--traces"},
                  "no openb_node_list_gpu_node.csv in this folder or in its " + std::string(kOpenbFolder) +
                      "/ subfolder (give the folder of the Alibaba openb 2023 trace)");
    }
  }
  // Pod list: a variant name or a path.
  const bool is_path = cfg.workload.find('/') != std::string::npos || cfg.workload.ends_with(".csv");
  if (is_path) {
    in.pod_source = cfg.workload;
    in.workload_name = printable_utf8(std::filesystem::path(cfg.workload).stem().string());   // JSON needs UTF-8
  } else {
    in.workload_name = cfg.workload;
    in.pod_source = find_in(cfg.traces, "openb_pod_list_" + cfg.workload + ".csv");
    if (in.pod_source.empty()) {
      std::string known;
      for (const auto& w : fgd_workload_names()) known += (known.empty() ? "" : ", ") + w;
      const auto& names = fgd_workload_names();
      const bool listed = std::find(names.begin(), names.end(), cfg.workload) != names.end();
      throw_error(ErrorCode::kTraceCannotOpen, {cfg.traces.string(), 0, "--workload"},
                  (listed ? "workload \"" : "unknown workload \"") + cfg.workload + "\": no openb_pod_list_" + cfg.workload +
                      ".csv here or in " + std::string(kOpenbFolder) + "/ (known workloads: " + known +
                      "; or all, or a path to a pod list)");
    }
  }
  {
    auto f = open_or_throw(in.node_source);
    in.nodes = traces::read_openb_nodes(f, in.node_source.string(), in.catalog, in.resources);
  }
  {
    auto f = open_or_throw(in.pod_source);
    in.pods = traces::read_openb_pods(f, in.pod_source.string(), in.catalog, in.resources);
  }
  if (in.nodes.empty()) throw_error(ErrorCode::kTraceBadValue, {in.node_source.string(), 0, ""}, "the node list is empty");
  if (in.pods.empty()) throw_error(ErrorCode::kTraceBadValue, {in.pod_source.string(), 0, ""}, "the pod list is empty");
  in.types = policies::fgd::typical_pod_types(in.pods, cfg.coverage);
  return in;
}

std::optional<CurvePoint> FgdRun::at(std::int32_t pct) const {
  // The curve is dense from 0 % (FragmentationRecorder::curve), so row k is k %.
  if (pct < 0 || static_cast<std::size_t>(pct) >= curve.size()) return std::nullopt;
  return curve[static_cast<std::size_t>(pct)];
}

FgdRun run_fgd_once(const FgdInputs& in, const std::string& policy, std::uint64_t seed, double max_arrived_pct) {
  const auto t0 = std::chrono::steady_clock::now();
  // 1. Node order: a per-seed permutation (ties go to the first node in it).
  std::vector<NodeSpec> nodes = in.nodes;
  {
    Rng rng = RngStreams(seed).stream("experiment.node_order");
    for (std::size_t i = nodes.size(); i > 1; --i) std::swap(nodes[i - 1], nodes[rng.below(i)]);
  }
  ClusterState cluster(in.catalog, in.resources, std::move(nodes));
  // 2. Workload: shuffled, then resampled up to the target demand; one pod at a time, forever.
  const auto target = static_cast<std::int64_t>(std::floor(static_cast<double>(cluster.totals().gpu_milli) * max_arrived_pct / 100.0));
  Workload jobs = traces::arrival_only(traces::resample_to_gpu_milli(traces::shuffle(in.pods, seed), in.pods, target, seed));
  // 3. The policy, seeing the original pod list as its target workload.
  policies::Scheduler scheduler(policies::builtin_profile(fgd_profile_for(policy)), policies::Registry::with_builtins(), seed);
  scheduler.set_target_workload(in.pods);
  sim::EngineConfig config;
  config.fill_mode = true;
  config.retry = false;
  sim::Engine engine(cluster, jobs, scheduler, config);
  FragmentationRecorder recorder(in.types);
  engine.add_observer(&recorder);
  engine.run();

  FgdRun run;
  run.policy = policy;
  run.seed = seed;
  run.pods = static_cast<std::int64_t>(jobs.size());
  for (const auto& rt : engine.jobs()) run.failed += rt.state == sim::JobState::kFailed ? 1 : 0;
  run.curve = recorder.curve();
  run.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return run;
}

std::optional<double> quantile(std::vector<double> values, double q) {
  if (values.empty()) return std::nullopt;
  std::sort(values.begin(), values.end());
  const double pos = q * static_cast<double>(values.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const auto hi = std::min(lo + 1, values.size() - 1);
  return values[lo] + (values[hi] - values[lo]) * (pos - static_cast<double>(lo));
}

FgdExperimentResult assemble_fgd_result(const FgdExperiment& cfg, const FgdInputs& in, std::vector<FgdRun> runs) {
  if (runs.size() != cfg.policies.size() * cfg.seeds.size()) {
    bad("runs", std::to_string(runs.size()) + " runs given for " + std::to_string(cfg.policies.size()) + " policies x " +
                    std::to_string(cfg.seeds.size()) + " seeds");
  }
  FgdExperimentResult r;
  r.config = cfg;
  r.node_source = in.node_source.string();
  r.pod_source = in.pod_source.string();
  r.workload_name = in.workload_name;
  r.nodes = static_cast<std::int64_t>(in.nodes.size());
  for (const auto& n : in.nodes) r.gpus += static_cast<std::int64_t>(n.gpus.size());
  r.trace_pods = static_cast<std::int64_t>(in.pods.size());
  r.runs = std::move(runs);

  const auto& paper = paper_table();
  const bool default_workload = in.workload_name == "default";
  for (std::size_t p = 0; p < cfg.policies.size(); ++p) {
    FgdSummaryRow row;
    row.policy = cfg.policies[p];
    row.seeds = static_cast<std::int64_t>(cfg.seeds.size());
    std::vector<double> u100, u130, f80;
    for (std::size_t s = 0; s < cfg.seeds.size(); ++s) {
      const auto& run = r.runs[p * cfg.seeds.size() + s];
      if (auto v = run.at(100)) u100.push_back(v->unallocated_pct);
      if (auto v = run.at(130)) u130.push_back(v->unallocated_pct);
      if (auto v = run.at(80)) f80.push_back(v->frag_pct);
    }
    row.unallocated_pct_100 = quantile(u100, 0.5);
    row.unallocated_pct_130 = quantile(u130, 0.5);
    row.frag_pct_80 = quantile(f80, 0.5);
    if (default_workload) {
      if (const auto it = paper.find(row.policy); it != paper.end()) {
        row.paper_unallocated_pct_100 = it->second.unalloc_100;
        row.paper_unallocated_pct_130 = it->second.unalloc_130;
        row.paper_frag_pct_80 = it->second.frag_80;
      }
    }
    r.summary.push_back(row);
  }
  return r;
}

void check_fgd_experiment(const FgdExperiment& cfg) {
  if (cfg.policies.empty()) bad("--policies", "no policy to run");
  if (cfg.seeds.empty()) bad("--seeds", "no seed to run");
  if (!(cfg.max_arrived_pct > 0) || cfg.max_arrived_pct > 1000) bad("max_arrived_pct", "must be in (0, 1000]");
  for (const auto& p : cfg.policies) (void)parse_fgd_policies(p);   // validates each name
}

namespace {

/// Runs task(i) for i in [0, count) on a pool of `threads` (boost::asio::thread_pool). After a
/// failure no new task starts; the failure of the lowest index is rethrown (the same whatever
/// the timing). `progress(done, count)` is called under a lock after each task.
void run_indexed(std::size_t count, unsigned threads, const std::function<void(std::size_t)>& task,
                 const ExperimentProgress& progress) {
  std::mutex mu;
  std::size_t done = 0;
  bool failed = false;
  std::vector<std::exception_ptr> failures(count);
  {
    boost::asio::thread_pool pool(threads);
    for (std::size_t i = 0; i < count; ++i) {
      boost::asio::post(pool, [&, i] {
        {
          std::lock_guard lock(mu);
          if (failed) return;
        }
        try {
          task(i);
          std::lock_guard lock(mu);
          ++done;
          if (progress) progress(done, count);
        } catch (...) {
          std::lock_guard lock(mu);
          failed = true;
          failures[i] = std::current_exception();
        }
      });
    }
    pool.join();
  }
  for (const auto& f : failures) {
    if (f) std::rethrow_exception(f);
  }
}

unsigned pool_size(unsigned asked, std::size_t tasks) {
  const unsigned threads = asked != 0 ? asked : std::max(1U, std::thread::hardware_concurrency());
  return static_cast<unsigned>(std::clamp<std::size_t>(tasks, 1, threads));
}

}  // namespace

FgdSweepResult run_fgd_experiments(const FgdExperiment& cfg, const std::vector<std::string>& workloads,
                                   const ExperimentProgress& progress) {
  check_fgd_experiment(cfg);
  if (workloads.empty()) bad("--workload", "no workload to run");
  const auto t0 = std::chrono::steady_clock::now();
  // 1. Every input, read in parallel; a bad name fails here, before any run.
  std::vector<FgdExperiment> configs(workloads.size(), cfg);
  std::vector<FgdInputs> inputs(workloads.size());
  for (std::size_t w = 0; w < workloads.size(); ++w) configs[w].workload = workloads[w];
  run_indexed(workloads.size(), pool_size(cfg.threads, workloads.size()),
              [&](std::size_t w) { inputs[w] = load_fgd_inputs(configs[w]); }, {});
  // 2. Every (workload, policy, seed) run on one pool, stored by index.
  const std::size_t per = cfg.policies.size() * cfg.seeds.size();
  const std::size_t total = workloads.size() * per;
  std::vector<FgdRun> runs(total);
  const unsigned threads = pool_size(cfg.threads, total);
  run_indexed(
      total, threads,
      [&](std::size_t i) {
        const std::size_t w = i / per, k = i % per;
        runs[i] = run_fgd_once(inputs[w], cfg.policies[k / cfg.seeds.size()], cfg.seeds[k % cfg.seeds.size()],
                               cfg.max_arrived_pct);
      },
      progress);
  // 3. One result per workload, assembled as a single experiment's.
  FgdSweepResult out;
  for (std::size_t w = 0; w < workloads.size(); ++w) {
    std::vector<FgdRun> mine(std::make_move_iterator(runs.begin() + static_cast<std::ptrdiff_t>(w * per)),
                             std::make_move_iterator(runs.begin() + static_cast<std::ptrdiff_t>((w + 1) * per)));
    out.workloads.push_back(assemble_fgd_result(configs[w], inputs[w], std::move(mine)));
    out.workloads.back().threads = threads;
  }
  out.threads = threads;
  out.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (auto& r : out.workloads) r.wall_s = out.wall_s;
  return out;
}

FgdExperimentResult run_fgd_experiment(const FgdExperiment& cfg, const ExperimentProgress& progress) {
  auto sweep = run_fgd_experiments(cfg, {cfg.workload}, progress);
  return std::move(sweep.workloads.front());
}

namespace {

std::string opt(const std::optional<double>& v, int decimals) { return v ? sim::fixed(*v, decimals) : std::string(); }

std::string seeds_text(const std::vector<std::uint64_t>& seeds) {
  std::string out;
  for (std::size_t i = 0; i < seeds.size();) {
    std::size_t j = i;
    while (j + 1 < seeds.size() && seeds[j + 1] == seeds[j] + 1) ++j;
    out += (out.empty() ? "" : ",") + std::to_string(seeds[i]) + (j > i ? "-" + std::to_string(seeds[j]) : "");
    i = j + 1;
  }
  return out;
}

/// The workload names of a sweep's results, in order.
std::vector<std::string> names_of(std::span<const FgdExperimentResult> rs) {
  std::vector<std::string> out;
  for (const auto& r : rs) out.push_back(r.workload_name);
  return out;
}

/// meta.json of an experiment: what produced its files (the CSVs start with their header row).
/// One workload: its name and pod list; several: "workloads" and "pod_lists" besides.
nlohmann::json experiment_meta(std::span<const FgdExperimentResult> rs, const std::vector<std::filesystem::path>& written) {
  const auto& r = rs.front();
  const auto names = names_of(rs);
  const std::string name = fgd_sweep_name(names);
  nlohmann::json config = {{"experiment", "fgd"},
                           {"workload", name},
                           {"policies", r.config.policies},
                           {"seeds", r.config.seeds},
                           {"max_arrived_pct", r.config.max_arrived_pct}};
  if (rs.size() > 1) config["workloads"] = names;
  char digest[17];
  std::snprintf(digest, sizeof digest, "%016llx", static_cast<unsigned long long>(fnv1a64(config.dump())));
  nlohmann::json files = nlohmann::json::array();
  for (const auto& f : written) files.push_back(f.filename().string());
  files.push_back("meta.json");
  const std::string source =
      rs.size() == 1 ? r.pod_source : std::filesystem::path(r.pod_source).parent_path().string();
  nlohmann::json meta = {{"schema_version", 1},
                         {"kind", "gpusched.meta"},
                         {"gpusched_version", kVersion},
                         {"experiment", "fgd"},
                         {"scenario", {{"name", "fgd-" + name}, {"source", source}, {"digest", digest}}},
                         {"nodes", r.node_source},
                         {"policies", r.config.policies},
                         {"seeds", r.config.seeds},
                         {"max_arrived_pct", r.config.max_arrived_pct},
                         {"files", files}};
  if (rs.size() > 1) {
    meta["workloads"] = names;
    nlohmann::json pods = nlohmann::json::array();
    for (const auto& x : rs) pods.push_back(x.pod_source);
    meta["pod_lists"] = pods;
  }
  return meta;
}

/// The table of one workload's medians against the paper (report.md).
void summary_table(std::ostream& o, const FgdExperimentResult& r) {
  o << "| policy | at 100% arrived | paper | at 130% arrived | paper | fragmentation % at 80% | paper |\n"
       "|---|---|---|---|---|---|---|\n";
  for (const auto& s : r.summary) {
    o << "| " << s.policy << " | " << opt(s.unallocated_pct_100, 2) << " | " << opt(s.paper_unallocated_pct_100, 2) << " | "
      << opt(s.unallocated_pct_130, 2) << " | " << opt(s.paper_unallocated_pct_130, 2) << " | " << opt(s.frag_pct_80, 2)
      << " | " << opt(s.paper_frag_pct_80, 2) << " |\n";
  }
}

}  // namespace

std::vector<std::filesystem::path> write_fgd_outputs(const FgdExperimentResult& r, const std::filesystem::path& dir) {
  return write_fgd_outputs(std::span<const FgdExperimentResult>(&r, 1), dir);
}

std::vector<std::filesystem::path> write_fgd_outputs(std::span<const FgdExperimentResult> rs, const std::filesystem::path& dir) {
  if (rs.empty()) bad("results", "no experiment result to write");
  detail::OutputFolder folder(dir, detail::fgd_output_names());
  auto write = [&](const std::string& name, const std::function<void(std::ostream&)>& body) { folder.write(name, body); };
  // CSVs start with their header row; meta.json says what produced them. The workload column
  // comes last, so that files of one workload keep the columns they had before it existed.
  write("curve.csv", [&](std::ostream& o) {
    o << "policy,seed,arrived_pct,unallocated_pct,frag_pct,frag_ratio_pct,workload\n";
    for (const auto& r : rs) {
      const std::string w = sim::csv_field(r.workload_name);
      for (const auto& run : r.runs) {
        for (const auto& p : run.curve) {
          o << run.policy << ',' << run.seed << ',' << p.arrived_pct << ',' << sim::fixed(p.unallocated_pct, 4) << ','
            << sim::fixed(p.frag_pct, 4) << ',' << sim::fixed(p.frag_ratio_pct, 4) << ',' << w << '\n';
        }
      }
    }
  });
  write("summary.csv", [&](std::ostream& o) {
    o << "policy,seeds,unallocated_pct_100,unallocated_pct_130,frag_pct_80,paper_unallocated_pct_100,"
         "paper_unallocated_pct_130,paper_frag_pct_80,workload\n";
    for (const auto& r : rs) {
      const std::string w = sim::csv_field(r.workload_name);
      for (const auto& s : r.summary) {
        o << s.policy << ',' << s.seeds << ',' << opt(s.unallocated_pct_100, 2) << ',' << opt(s.unallocated_pct_130, 2) << ','
          << opt(s.frag_pct_80, 2) << ',' << opt(s.paper_unallocated_pct_100, 2) << ',' << opt(s.paper_unallocated_pct_130, 2)
          << ',' << opt(s.paper_frag_pct_80, 2) << ',' << w << '\n';
      }
    }
  });
  write("runs.csv", [&](std::ostream& o) {
    o << "policy,seed,pods,failed,unallocated_pct_100,unallocated_pct_130,frag_pct_80,workload\n";
    for (const auto& r : rs) {
      const std::string w = sim::csv_field(r.workload_name);
      for (const auto& run : r.runs) {
        auto u = [&](int pct) { return opt(run.at(pct) ? std::optional<double>(run.at(pct)->unallocated_pct) : std::nullopt, 4); };
        const auto f = run.at(80);
        o << run.policy << ',' << run.seed << ',' << run.pods << ',' << run.failed << ',' << u(100) << ',' << u(130) << ','
          << (f ? sim::fixed(f->frag_pct, 4) : std::string()) << ',' << w << '\n';
      }
    }
  });
  write("report.md", [&](std::ostream& o) {
    const auto& r = rs.front();
    o << "# gpusched experiment: FGD (Weng et al., USENIX ATC'23)\n\n";
    o << "| | |\n|---|---|\n| gpusched | " << kVersion << " |\n";
    if (rs.size() == 1) {
      o << "| pod list | " << r.pod_source << " (" << r.trace_pods << " pods) |\n";
    } else {
      o << "| workloads | " << rs.size() << " (" << fgd_sweep_name(names_of(rs)) << "), pod lists in "
        << std::filesystem::path(r.pod_source).parent_path().string() << " |\n";
    }
    o << "| node list | " << r.node_source << " (" << r.nodes << " nodes, " << r.gpus << " GPUs) |\n| seeds | "
      << seeds_text(r.config.seeds) << " |\n| arrived demand | up to " << sim::fixed(r.config.max_arrived_pct, 0)
      << "% of GPU capacity |\n\n";
    if (rs.size() == 1) {
      o << "## Unallocated GPU % (median over seeds)\n\n";
      summary_table(o, r);
    } else {
      o << "## Unallocated GPU % at 130% arrived (median over seeds)\n\n| workload |";
      for (const auto& s : r.summary) o << ' ' << s.policy << " |";
      o << "\n|---|";
      for (std::size_t i = 0; i < r.summary.size(); ++i) o << "---|";
      o << '\n';
      for (const auto& x : rs) {
        o << "| " << x.workload_name << " |";
        for (const auto& s : x.summary) o << ' ' << opt(s.unallocated_pct_130, 2) << " |";
        o << '\n';
      }
      for (const auto& x : rs) {
        o << "\n## " << x.workload_name << ": unallocated GPU % (median over seeds)\n\n"
          << x.pod_source << " (" << x.trace_pods << " pods)\n\n";
        summary_table(o, x);
      }
    }
    o << "\nPaper figures are given for the default workload only (fgd.md). See docs/fgd.md for the protocol and "
         "why digits differ.\n\n## Files\n\n- `curve.csv`: one row per policy, seed and integer arrived %"
      << (rs.size() > 1 ? " (and workload)" : "") << "\n- `summary.csv`: the "
      << (rs.size() > 1 ? "tables above, one row per workload and policy" : "table above")
      << "\n- `runs.csv`: one row per run (pods submitted, pods that failed)\n"
         "- `meta.json`: what produced these files (version, workload, node list, policies, seeds)\n";
  });
  write("meta.json", [&](std::ostream& o) { o << experiment_meta(rs, folder.written()).dump(2) << '\n'; });
  folder.commit({"meta.json"});   // meta.json (the list of files) last
  return folder.written();
}

std::string format_fgd_summary(const FgdExperimentResult& r) {
  std::ostringstream o;
  o << "gpusched " << kVersion << "  experiment fgd: workload " << r.workload_name << ", " << r.trace_pods << " pods, "
    << r.nodes << " nodes, " << r.gpus << " GPUs, seeds " << seeds_text(r.config.seeds) << "\n";
  o << "  unallocated GPU % (median)   at 100%  (paper)   at 130%  (paper)\n";
  for (const auto& s : r.summary) {
    std::string name = s.policy;
    name.resize(std::max<std::size_t>(name.size(), 12), ' ');
    auto cell = [](const std::optional<double>& v, bool paren) {
      std::string t = v ? sim::fixed(*v, 2) : "-";
      if (paren) t = "(" + t + ")";
      t.insert(0, t.size() < 9 ? 9 - t.size() : 0, ' ');
      return t;
    };
    o << "  " << name << "                " << cell(s.unallocated_pct_100, false) << cell(s.paper_unallocated_pct_100, true)
      << cell(s.unallocated_pct_130, false) << cell(s.paper_unallocated_pct_130, true) << "\n";
  }
  o << "  " << r.runs.size() << " runs on " << r.threads << " threads in " << sim::fixed(r.wall_s, 2) << " s\n";
  return o.str();
}

std::string format_fgd_summary(const FgdSweepResult& r) {
  if (r.workloads.size() == 1) return format_fgd_summary(r.workloads.front());
  std::ostringstream o;
  std::size_t runs = 0;
  for (const auto& x : r.workloads) runs += x.runs.size();
  const auto& first = r.workloads.front();
  o << "gpusched " << kVersion << "  experiment fgd: " << r.workloads.size() << " workloads, " << first.nodes << " nodes, "
    << first.gpus << " GPUs, seeds " << seeds_text(first.config.seeds) << "\n";
  o << "  unallocated GPU % at 130% arrived (median)\n  workload    ";
  auto cell = [](std::string t, std::size_t width) {
    t.insert(0, t.size() < width ? width - t.size() : 0, ' ');
    return t;
  };
  for (const auto& s : first.summary) o << cell(s.policy, 11);
  o << "\n";
  for (const auto& x : r.workloads) {
    std::string name = x.workload_name;
    name.resize(std::max<std::size_t>(name.size(), 12), ' ');
    o << "  " << name;
    for (const auto& s : x.summary) o << cell(s.unallocated_pct_130 ? sim::fixed(*s.unallocated_pct_130, 2) : "-", 11);
    o << "\n";
  }
  o << "  " << runs << " runs on " << r.threads << " threads in " << sim::fixed(r.wall_s, 2) << " s\n";
  return o.str();
}

}  // namespace gpusched::scenario
