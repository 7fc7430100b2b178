// The `gpusched` command line. Exit codes: 0 success, 1 bad input or configuration (a
// gpusched error with its id and location), 2 wrong usage, 3 outputs could not be written (an
// io_error id and the path), 130 interrupted (SIGINT or SIGTERM during run, demo or experiment:
// one line on stderr, no output written).
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>

#include <CLI/CLI.hpp>

#include <gpusched/interrupt.hpp>
#include <gpusched/json_input.hpp>
#include <gpusched/quantity.hpp>
#include <gpusched/utf8.hpp>
#include <gpusched/policies/framework/registry.hpp>
#include <gpusched/policies/framework/scheduler.hpp>
#include <gpusched/policies/preemption/priority_preemption.hpp>
#include <gpusched/scenario/experiment.hpp>
#include <gpusched/scenario/scenario.hpp>
#include <gpusched/scenario/serve.hpp>
#include <gpusched/input_range.hpp>
#include <gpusched/scenario/tiresias.hpp>
#include <cctype>
#include <mutex>
#include <system_error>
#include <gpusched/scenario/whatif.hpp>
#include <gpusched/scenario/k8s_dra.hpp>
#include <gpusched/scenario/k8s_objects.hpp>
#include <gpusched/traces/import.hpp>
#include <gpusched/traces/native.hpp>
#include <gpusched/traces/nvidia_smi.hpp>
#include <gpusched/traces/swf.hpp>
#include <gpusched/version.hpp>

#include "output_files.hpp"

namespace gpusched::scenario {
namespace {

/// SIGINT / SIGTERM: asks the run to stop (the engine polls the flag), and gives the signal its
/// default action back, so a second Ctrl-C ends the process at once. Async-signal-safe.
void on_interrupt_signal(int sig) {
  request_interrupt();
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(sig, &dfl, nullptr);
}

/// While alive, SIGINT and SIGTERM interrupt the run instead of killing the process; the
/// handlers found (Python's, when called from `python -m gpusched`) come back afterwards. A
/// signal ignored on entry (a background job's SIGINT) stays ignored.
class InterruptSignals {
 public:
  InterruptSignals() {
    clear_interrupt();
    struct sigaction sa {};
    sa.sa_handler = on_interrupt_signal;
    sigemptyset(&sa.sa_mask);
    for (std::size_t i = 0; i < 2; ++i) {
      struct sigaction old {};
      if (sigaction(kSignals[i], nullptr, &old) != 0 || old.sa_handler == SIG_IGN) continue;
      if (sigaction(kSignals[i], &sa, &old_[i]) == 0) installed_[i] = true;
    }
    // `python -m gpusched` blocks SIGINT / SIGTERM before calling in, so that a signal sent in
    // the hand-over reaches these handlers (and stops the run: nothing written) rather than
    // Python's, which would see it only after the run had finished and written everything.
    // Unblocking delivers such a pending signal now; the destructor puts the caller's mask back.
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    mask_saved_ = pthread_sigmask(SIG_UNBLOCK, &set, &old_mask_) == 0;
  }
  ~InterruptSignals() {
    // Blocked again (if the caller had them blocked) before the caller's handlers come back: a
    // signal from here on waits for the caller, whose handler then runs.
    if (mask_saved_) pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
    for (std::size_t i = 0; i < 2; ++i) {
      if (installed_[i]) sigaction(kSignals[i], &old_[i], nullptr);
    }
    clear_interrupt();
  }
  InterruptSignals(const InterruptSignals&) = delete;
  InterruptSignals& operator=(const InterruptSignals&) = delete;

 private:
  static constexpr int kSignals[2] = {SIGINT, SIGTERM};
  struct sigaction old_[2] {};
  bool installed_[2] = {false, false};
  sigset_t old_mask_{};
  bool mask_saved_ = false;
};

enum class ProgressMode { kAuto, kAlways, kNever };

/// A progress bar on stderr, shown only once a run has taken more than a second.
class ProgressBar {
 public:
  explicit ProgressBar(ProgressMode mode) : enabled_(mode == ProgressMode::kAlways || (mode == ProgressMode::kAuto && isatty(2))) {}
  ~ProgressBar() {
    if (shown_) std::fputc('\n', stderr);   // a run stopped half-way: the next message starts a line of its own
  }
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;
  void operator()(double f) {
    if (!enabled_) return;
    const auto now = std::chrono::steady_clock::now();
    const double elapsed = std::chrono::duration<double>(now - start_).count();
    if (f >= 1.0) {
      if (shown_) {
        draw(1.0, elapsed);
        std::fputc('\n', stderr);
        shown_ = false;
      }
      return;
    }
    if (elapsed < 1.0 || std::chrono::duration<double>(now - last_).count() < 0.1) return;
    last_ = now;
    shown_ = true;
    draw(f, elapsed);
  }

 private:
  static void draw(double f, double elapsed) {
    const int width = 30;
    const int filled = static_cast<int>(f * width);
    std::string bar(static_cast<std::size_t>(filled), '#');
    bar.resize(width, ' ');
    std::fprintf(stderr, "\r[%s] %3d%%  %.1f s", bar.c_str(), static_cast<int>(f * 100.0), elapsed);
    std::fflush(stderr);
  }
  bool enabled_;
  bool shown_ = false;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now(), last_{};
};

int run_and_write(const Scenario& sc, std::optional<std::uint64_t> seed, const std::string& out_dir, ProgressMode mode, bool quiet,
                  const policies::Registry& registry) {
  ProgressBar bar(mode);
  const auto t0 = std::chrono::steady_clock::now();
  RunResult result = run(sc, seed, [&bar](double f) { bar(f); }, registry);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // Once per run, even with --quiet: a profile that runs as its peer would not must say so.
  for (const auto& w : result.warnings()) std::cerr << "gpusched: warning: " << w << "\n";
  const std::filesystem::path dir = out_dir.empty() ? std::filesystem::path("out") / sc.name : std::filesystem::path(out_dir);
  std::vector<std::filesystem::path> files;
  try {
    files = write_outputs(result, dir);
  } catch (const OutputError& e) {
    std::cerr << "gpusched: " << e.what() << "\n";
    return 3;
  }
  if (!quiet) {
    std::cout << format_summary(result);
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.2f", wall);
    std::cout << "  wall time  " << buf << " s (" << result.summary().events << " events)\n";
    // Every file written, so the list cannot fall behind the writer.
    std::string others;
    for (const auto& f : files) {
      if (f.filename() != "report.md") others += (others.empty() ? "" : ", ") + f.filename().string();
    }
    std::cout << "  report     " << (dir / "report.md").string() << "  (also " << others << ")\n";
  }
  return 0;
}

}  // namespace

/// `run --profile NAME|FILE`: a built-in profile, or a profile JSON file (an object as a
/// scenario's "profile" holds; named after the file when it gives no name), replaces the
/// scenario's profile. Checked as a scenario's profile is (the scheduler is built once); the
/// scenario document records it, so summary.json's inputs and the digest name the profile used.
void use_profile(Scenario& sc, const std::string& arg, const policies::Registry& registry) {
  const auto names = policies::builtin_profile_names();
  nlohmann::json given;
  if (std::find(names.begin(), names.end(), arg) != names.end()) {
    sc.profile = policies::builtin_profile(arg, "--profile");
    given = arg;
  } else {
    const std::filesystem::path path(arg);
    if (path.extension() != ".json" && !std::filesystem::exists(path)) {
      std::string known;
      for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
      throw_error(ErrorCode::kProfileUnknownProfile, {"--profile", 0, ""},
                  "\"" + arg + "\" is neither a built-in profile (" + known + ") nor a profile file (*.json)");
    }
    std::ifstream in(path, std::ios::binary);
    if (!in) throw_error(ErrorCode::kScenarioCannotOpen, {arg, 0, ""}, "cannot open the profile file (--profile)");
    std::stringstream text;
    text << in.rdbuf();
    given = parse_json(text.str(), arg, kScenarioJsonErrors);
    sc.profile = policies::Profile::from_json(given, arg);
    resolve_profile_paths(sc.profile, path.parent_path().empty() ? std::filesystem::path(".") : path.parent_path());
    if (given.is_object() && !given.contains("name")) {
      sc.profile.name = printable_utf8(path.stem().string());   // file names need not be UTF-8; JSON does
      given["name"] = sc.profile.name;
    }
  }
  if (sc.kubernetes_plugin_args.is_object() && !sc.kubernetes_plugin_args.empty()) {
    // The scenario's kubernetes_objects configure plugins: the new profile gets them too.
    sc.profile = with_plugin_args(std::move(sc.profile), sc.kubernetes_plugin_args, sc.source + " (--profile " + arg + ")");
    given = sc.profile.to_json();
  }
  // The scenario's pod_disruption_budgets reach the new profile's priority-preemption too (the
  // document keeps them at its top level, so the recorded profile leaves them out).
  if (sc.document.is_object() && sc.document.contains("pod_disruption_budgets")) {
    policies::add_pod_disruption_budgets(sc.profile, sc.document["pod_disruption_budgets"]);
  }
  try {
    policies::Scheduler check(sc.profile, registry, 0);
  } catch (const ProfileError& e) {
    throw_error(e.code(), {given.is_string() ? "--profile" : arg, 0, e.where().field}, e.detail());
  }
  sc.document["profile"] = given;
}

namespace {

/// "1,213 nodes, 6,212 GPUs (G2 549 nodes, ...)"
std::string describe_nodes(const std::vector<NodeSpec>& nodes, const GpuCatalog& catalog) {
  std::map<std::string, std::pair<std::int64_t, std::int64_t>> by_model;   // model -> (nodes, GPUs)
  std::int64_t gpus = 0;
  for (const auto& n : nodes) {
    gpus += static_cast<std::int64_t>(n.gpus.size());
    const std::string model = n.gpus.empty() ? "no GPU" : catalog[n.gpus.front().model].name;
    auto& e = by_model[model];
    ++e.first;
    e.second += static_cast<std::int64_t>(n.gpus.size());
  }
  std::string out = std::to_string(nodes.size()) + " nodes, " + std::to_string(gpus) + " GPUs (";
  bool first = true;
  for (const auto& [model, e] : by_model) {
    out += (first ? "" : ", ") + model + ": " + std::to_string(e.first) + " nodes";
    first = false;
  }
  return out + ")";
}

/// "8152 jobs, 8152 tasks, 6212.5 GPUs requested"
std::string describe_jobs(const Workload& jobs) {
  std::int64_t tasks = 0, milli = 0, gangs = 0;
  for (const auto& j : jobs) {
    tasks += j.tasks;
    milli += j.request.gpu.total_milli() * j.tasks;
    gangs += j.min_available > 1 ? 1 : 0;
  }
  char buf[160];
  std::snprintf(buf, sizeof buf, "%zu jobs, %lld tasks, %lld gangs, %.1f GPUs requested", jobs.size(),
                static_cast<long long>(tasks), static_cast<long long>(gangs), static_cast<double>(milli) / 1000.0);
  return buf;
}

/// A trace or node list in any supported format: reads it through (every row checked).
int validate_trace(const std::filesystem::path& path, const std::string& format) {
  GpuCatalog catalog = GpuCatalog::builtin();
  ResourceTable resources;
  const std::string name = format.empty() ? traces::detect_format(path) : format;
  const auto& info = traces::require_format(name, {"--format", 0, ""});
  if (info.kind == traces::FormatKind::kCluster) {
    const auto nodes = traces::import_nodes(path, name, catalog, resources);
    std::cout << "OK  " << name << " node list " << path.string() << ": " << describe_nodes(nodes, catalog) << "\n";
  } else {
    const auto jobs = traces::import_workload(path, name, catalog, resources);
    std::cout << "OK  " << name << " trace " << path.string() << ": " << describe_jobs(jobs) << "\n";
  }
  return 0;
}

/// `gpusched convert IN OUT`: a workload to a native trace (.csv, .jsonl) or SWF (.swf); a node
/// list to a scenario cluster file (.json).
int convert(const std::string& in_file, const std::string& out_file, const std::string& format) {
  GpuCatalog catalog = GpuCatalog::builtin();
  ResourceTable resources;
  const std::filesystem::path in_path(in_file), out_path(out_file);
  const std::string name = format.empty() ? traces::detect_format(in_path) : format;
  const auto& info = traces::require_format(name, {"--from", 0, ""});
  const std::string ext = out_path.extension().string();
  std::ostringstream text;
  std::string what;
  if (info.kind == traces::FormatKind::kCluster) {
    if (ext != ".json") {
      throw_error(ErrorCode::kTraceBadValue, {out_file, 0, ""}, "a node list converts to a cluster file: name the output *.json");
    }
    const auto nodes = traces::import_nodes(in_path, name, catalog, resources);
    text << traces::nodes_to_cluster_json(nodes, catalog, resources);
    what = describe_nodes(nodes, catalog);
  } else {
    const auto jobs = traces::import_workload(in_path, name, catalog, resources);
    if (ext == ".csv") traces::write_trace(text, traces::TraceFormat::kCsv, jobs, catalog, resources);
    else if (ext == ".jsonl" || ext == ".ndjson") traces::write_trace(text, traces::TraceFormat::kJsonLines, jobs, catalog, resources);
    else if (ext == ".swf") traces::write_swf(text, jobs, catalog, resources);
    else throw_error(ErrorCode::kTraceBadValue, {out_file, 0, ""}, "output format from the extension: .csv or .jsonl (native trace) or .swf");
    what = describe_jobs(jobs);
  }
  detail::write_file_atomically(out_path, text.str());   // OutputError (exit 3) when it cannot
  std::cout << "wrote " << out_file << " from " << name << " " << in_file << ": " << what << "\n";
  return 0;
}

/// `gpusched discover`: a node from saved nvidia-smi output, printed as a scenario cluster node.
struct DiscoverArgs {
  std::string xml, topo, lgip, name = "node-0", cpu, memory = "0", gpu_models;
  bool mig_dynamic = false;
};

int discover(const DiscoverArgs& a) {
  GpuCatalog catalog = GpuCatalog::builtin();
  if (!a.gpu_models.empty()) {
    std::ifstream in(a.gpu_models, std::ios::binary);
    if (!in) throw_error(ErrorCode::kScenarioCannotOpen, {a.gpu_models, 0, ""}, "cannot open the GPU catalog file (--gpu-models)");
    std::stringstream ss;
    ss << in.rdbuf();
    catalog.add_json(parse_json(ss.str(), a.gpu_models, kScenarioJsonErrors), a.gpu_models);
  }
  traces::NodeSpecDefaults d;
  d.name = a.name;
  if (!a.cpu.empty()) d.cpu_milli = parse_cpu_milli(a.cpu, {"command line", 0, "--cpu"});
  d.memory_mib = parse_memory_mib(a.memory, {"command line", 0, "--memory"});
  d.mig_dynamic = a.mig_dynamic;
  const NodeSpec node = traces::node_from_nvidia_smi_files(a.xml, a.topo, catalog, d, a.lgip);
  std::vector<std::string> dropped;
  const auto j = traces::node_to_json(node, catalog, a.xml, &dropped);
  std::cout << j.dump(1) << "\n";
  for (const auto& what : dropped) std::cerr << "gpusched: note: a cluster file cannot say " << what << "; left out\n";
  return 0;
}

int validate(const std::string& file, const std::string& format, const policies::Registry& registry) {
  const std::filesystem::path path(file);
  const auto ext = path.extension().string();
  if (!format.empty() || ext == ".csv" || ext == ".jsonl" || ext == ".ndjson" || ext == ".swf" || ext.empty()) {
    return validate_trace(path, format);
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw_error(ErrorCode::kScenarioCannotOpen, {file, 0, ""}, "cannot open the file");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  nlohmann::json doc;
  try {
    doc = parse_json(text, file, kScenarioJsonErrors);
  } catch (const Error&) {
    // Not JSON: a kubectl file is reported by the trace reader, in its words.
    if (ext == ".json" && text.find("\"apiVersion\"") != std::string::npos) return validate_trace(path, format);
    throw;
  }
  // A kubectl object or list (apiVersion at the top) is a trace; anything else is a scenario or
  // profile. (Looking for "apiVersion" anywhere took a scenario with DRA objects inline for one.)
  if (ext == ".json" && doc.is_object() && doc.contains("apiVersion")) return validate_trace(path, format);
  if (doc.is_object() && !doc.contains("cluster") && !doc.contains("workload")) {
    const auto profile = policies::Profile::from_json(doc, file);
    policies::Scheduler check(profile, registry, 0);
    std::cout << "OK  profile " << file << ": " << profile.name << "\n";
    return 0;
  }
  const Scenario sc = parse_scenario(doc, file, path.parent_path(), registry);
  ClusterState cluster(sc.catalog, sc.resources, sc.nodes);
  policies::Scheduler check(sc.profile, registry, sc.seed);
  std::size_t jobs = sc.jobs.size();
  if (sc.synthetic) {
    jobs = traces::generate(*sc.synthetic, cluster, RngStreams(sc.seed)).size();
  } else {
    Workload workload = sc.jobs;
    prepare_claims(workload, sc);   // as run() does: templates, classes, the profile
    traces::check_placeable(workload, cluster, sc.trace ? sc.trace->string() : file);
  }
  std::cout << "OK  scenario " << file << ": " << sc.name << ", " << cluster.node_count() << " nodes, "
            << cluster.totals().gpus << " GPUs, profile " << sc.profile.name << ", " << jobs << " jobs\n";
  return 0;
}

void list_policies(const policies::Registry& reg) {
  std::cout << "Plugins (hooks; arguments = default):\n";
  for (const auto& p : reg.plugins()) {
    std::string hooks;
    for (const auto& h : p.hooks) hooks += (hooks.empty() ? "" : ", ") + h;
    std::cout << "  " << p.name << "  [" << hooks << "]\n      " << p.description << "\n";
    for (const auto& a : p.args) std::cout << "      " << a.name << " (" << a.type << ") = " << a.default_value.dump() << ": " << a.description << "\n";
  }
  std::cout << "\nProfiles:\n";
  for (const auto& name : policies::builtin_profile_names()) {
    std::cout << "  " << name << ": " << policies::builtin_profile(name).description << "\n";
  }
}

int run_fgd(const FgdExperiment& cfg, const std::vector<std::string>& workloads, const std::string& out_dir,
            ProgressMode mode, bool quiet) {
  ProgressBar bar(mode);
  const auto result = run_fgd_experiments(cfg, workloads, [&bar](std::size_t done, std::size_t total) {
    bar(static_cast<double>(done) / static_cast<double>(total));
  });
  std::vector<std::string> names;
  for (const auto& w : result.workloads) names.push_back(w.workload_name);
  const std::filesystem::path dir = out_dir.empty() ? std::filesystem::path("out") / ("fgd-" + fgd_sweep_name(names))
                                                    : std::filesystem::path(out_dir);
  try {
    (void)write_fgd_outputs(result.workloads, dir);
  } catch (const OutputError& e) {
    std::cerr << "gpusched: " << e.what() << "\n";
    return 3;
  }
  if (!quiet) {
    std::cout << format_fgd_summary(result);
    std::cout << "  report     " << (dir / "report.md").string() << "  (also curve.csv, summary.csv, runs.csv)\n";
  }
  return 0;
}

}  // namespace

int cli_main(int argc, const char* const* argv, const policies::Registry& registry) {
  CLI::App app{"gpusched: simulate accelerator clusters and scheduling policies"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("gpusched ") + kVersion);

  std::string scenario_path, out_dir, validate_path;
  std::optional<std::uint64_t> seed;
  std::string seed_text;   // read by parse_seed(): 0..2^64-1, never wrapped or clamped
  std::string progress = "auto";
  bool quiet = false;

  auto* run_cmd = app.add_subcommand("run", "Run a scenario file and write its outputs");
  run_cmd->add_option("scenario", scenario_path, "scenario JSON file")->required();
  run_cmd->add_option("--out", out_dir, "output folder (default: out/<scenario name>)");
  auto* run_seed = run_cmd->add_option("--seed", seed_text, "override the scenario's seed (0..18446744073709551615)");
  std::string profile_arg;
  run_cmd->add_option("--profile", profile_arg,
                      "use this scheduling profile instead of the scenario's: a built-in name (see `gpusched policies`) "
                      "or a profile JSON file");
  run_cmd->add_option("--progress", progress, "progress bar on stderr: auto (when a terminal), always, never")
      ->check(CLI::IsMember({"auto", "always", "never"}));
  run_cmd->add_flag("--quiet", quiet, "print nothing on success");
  bool exact_scan = false;
  run_cmd->add_flag("--exact-scan", exact_scan,
                    "scan every node for every decision (no node index): same outputs, slower; for checking");

  auto* demo_cmd = app.add_subcommand("demo", "Run the built-in demo (1,000 nodes, 20,000 synthetic jobs)");
  demo_cmd->add_option("--out", out_dir, "output folder (default: out/demo)");
  auto* demo_seed = demo_cmd->add_option("--seed", seed_text, "seed 0..18446744073709551615 (default 42)");
  demo_cmd->add_option("--progress", progress, "progress bar on stderr: auto, always, never")
      ->check(CLI::IsMember({"auto", "always", "never"}));
  demo_cmd->add_flag("--quiet", quiet, "print nothing on success");
  demo_cmd->add_flag("--exact-scan", exact_scan, "scan every node for every decision (no node index): same outputs, slower");

  WhatIfOptions whatif_options;
  std::string whatif_profiles = "kube-default,gpushare-binpack,fgd";
  bool whatif_show_pods = false, whatif_json_out = false;
  auto* whatif_cmd = app.add_subcommand(
      "whatif", "Schedule a Kubernetes snapshot's pending pods under several profiles and compare them "
                "(kubectl get nodes / pods -o json)");
  whatif_cmd->add_option("--nodes", whatif_options.nodes, "kubectl get nodes -o json")->required();
  whatif_cmd->add_option("--pods", whatif_options.pods, "kubectl get pods -A -o json")->required();
  whatif_cmd->add_option("--profiles", whatif_profiles,
                         "comma-separated built-in profiles or profile JSON files (default: kube-default,gpushare-binpack,fgd)");
  auto* whatif_seed = whatif_cmd->add_option("--seed", seed_text, "seed for profiles that draw (default 42)");
  whatif_cmd->add_flag("--show-pods", whatif_show_pods, "list each pending pod: the node it gets, or why it stays pending");
  whatif_cmd->add_flag("--json", whatif_json_out, "print the result as JSON instead of a table");
  whatif_cmd->add_option("--events", whatif_options.events,
                         "kubectl get events -A -o json: each pending pod's last FailedScheduling message beside the profile's reason");
  bool whatif_as_gpu_mem = false;
  std::string whatif_gpu_mem_default;
  std::vector<std::string> whatif_gpu_mem_images;
  whatif_cmd->add_flag("--as-gpu-mem", whatif_as_gpu_mem,
                       "ask pods wanting one whole nvidia.com/gpu for GPU memory only (gpushare's aliyun.com/gpu-mem): "
                       "their annotation gpusched.io/gpu-memory, else --gpu-mem-image, else --gpu-mem-default");
  whatif_cmd->add_option("--gpu-mem-default", whatif_gpu_mem_default, "with --as-gpu-mem: GPU memory for pods with no other figure (e.g. 8Gi)");
  whatif_cmd->add_option("--gpu-mem-image", whatif_gpu_mem_images,
                         "with --as-gpu-mem: IMAGE=QUANTITY, GPU memory of pods whose first container runs IMAGE (repeatable; "
                         "IMAGE as written or without its tag)");
  whatif_cmd->add_flag("--explain", whatif_options.explain,
                       "with each pending pod, every node's filter verdict and score breakdown at its last try (implies --show-pods)");

  ExtenderOptions serve_options;
  ServeOptions serve_http_options;
  std::string serve_listen = "127.0.0.1:8888";
  auto* serve_cmd = app.add_subcommand(
      "serve", "Run as a Kubernetes scheduler extender (HTTP: POST /filter, /prioritize, /bind, /pods/delete; "
               "GET /healthz, /metrics, /pods) deciding with a profile on a kubectl snapshot (docs/extender.md)");
  serve_cmd->add_option("--profile", serve_options.profile, "built-in profile name or profile JSON file (default kube-default)");
  serve_cmd->add_option("--listen", serve_listen, "HOST:PORT to listen on (default 127.0.0.1:8888; port 0: any free port)");
  serve_cmd->add_option("--nodes", serve_options.nodes, "kubectl get nodes -o json")->required();
  serve_cmd->add_option("--pods", serve_options.pods, "kubectl get pods -A -o json (bound pods hold their devices)");
  auto* serve_seed = serve_cmd->add_option("--seed", seed_text, "seed for profiles that draw (default 42)");
  serve_cmd->add_option("--max-body-bytes", serve_http_options.max_body_bytes, "larger request bodies are answered 413 (default 16 MiB)");
  serve_cmd->add_option("--read-timeout", serve_http_options.read_timeout_s, "seconds a request may take to arrive, else 408 (default 10)");
  serve_cmd->add_option("--threads", serve_http_options.threads, "threads serving connections (default 4; decisions are serialised)");
  serve_cmd->add_flag("--shadow", serve_options.shadow,
                      "compare each bind with the profile's own choice: one JSON line per bind on stdout, the summary at GET /shadow");
  std::string serve_bind_api;
  double serve_bind_timeout = 10.0;
  serve_cmd->add_option("--bind-api", serve_bind_api,
                        "create each binding through the API server at this http URL (e.g. `kubectl proxy`'s http://127.0.0.1:8001), "
                        "with the device annotations; a refused binding is forgotten again (default: record it here only)");
  serve_cmd->add_option("--bind-timeout", serve_bind_timeout, "seconds to wait for the API server's answer to a binding (default 10)");

  std::string trace_format, convert_in, convert_out;
  auto* validate_cmd = app.add_subcommand("validate", "Check a scenario, profile, trace or node list (any supported format)");
  validate_cmd->add_option("file", validate_path, "file to check")->required();
  validate_cmd->add_option("--format", trace_format, "trace format (default: detected; see `gpusched formats`)");

  auto* convert_cmd = app.add_subcommand("convert", "Convert a trace to a native trace (.csv, .jsonl) or SWF (.swf), or a node list to a cluster file (.json)");
  convert_cmd->add_option("input", convert_in, "trace or node list")->required();
  convert_cmd->add_option("output", convert_out, "file to write; its extension picks the format")->required();
  convert_cmd->add_option("--from", trace_format, "input format (default: detected; see `gpusched formats`)");

  DiscoverArgs discover_args;
  auto* discover_cmd = app.add_subcommand(
      "discover", "Describe a machine from its saved nvidia-smi output: prints the node as a scenario cluster node (JSON)");
  discover_cmd->add_option("--nvidia-smi-xml", discover_args.xml, "output of `nvidia-smi -q -x`")->required();
  discover_cmd->add_option("--topo", discover_args.topo, "output of `nvidia-smi topo -m`")->required();
  discover_cmd->add_option("--mig-lgip", discover_args.lgip,
                           "output of `nvidia-smi mig -lgip`: profile memory, SMs and engines to recognise MIG instances by");
  discover_cmd->add_option("--name", discover_args.name, "node name (default node-0)");
  discover_cmd->add_option("--cpu", discover_args.cpu, "CPUs of the node (default: counted from the CPU Affinity column)");
  discover_cmd->add_option("--memory", discover_args.memory, "host memory, e.g. 2Ti (nvidia-smi does not say; default 0)");
  discover_cmd->add_option("--gpu-models", discover_args.gpu_models,
                           "GPU catalog JSON with models or aliases the built-in catalog lacks ([{\"name\", \"aliases\", \"memory_mib\", ...}])");
  discover_cmd->add_flag("--mig-dynamic", discover_args.mig_dynamic,
                         "let the scheduler repartition MIG GPUs (the discovered instances are the starting layout)");

  auto* formats_cmd = app.add_subcommand("formats", "List the trace and node-list formats convert and validate read");

  auto* experiment_cmd = app.add_subcommand("experiment", "Reproduce a published experiment");
  experiment_cmd->require_subcommand(1);
  auto* fgd_cmd = experiment_cmd->add_subcommand(
      "fgd", "The FGD paper (USENIX ATC'23): unallocated GPU % against arrived demand on the Alibaba openb trace");
  std::string traces_dir, workload = "default", policies_text = "all", seeds_text = "42-51";
  unsigned threads = 0;
  double max_arrived = 130.0;
  fgd_cmd->add_option("--traces", traces_dir,
                      "folder with the openb trace (alibaba-gpu-v2023-openb or its parent); default $GPUSCHED_TRACES_DIR, "
                      "else ../shared/traces");
  fgd_cmd->add_option("--workload", workload,
                      "pod-list variant (default, cpu050, gpushare80, gpuspec20, multigpu20, ...) or a path; all (the 24 "
                      "variants) or a comma list runs each, on one pool, into one set of files with a workload column");
  fgd_cmd->add_option("--policies", policies_text, "all, or a comma list of random, dotprod, clustering, packing, bestfit, fgd");
  fgd_cmd->add_option("--seeds", seeds_text, "one seed, a range 42-51 or a comma list");
  fgd_cmd->add_option("--max-arrived", max_arrived, "arrived GPU demand to stop at, % of capacity (default 130)");
  fgd_cmd->add_option("--jobs", threads, "runs in parallel (default: one per core)");
  fgd_cmd->add_option("--out", out_dir, "output folder (default: out/fgd-<workload>)");
  fgd_cmd->add_option("--progress", progress, "progress bar on stderr: auto, always, never")
      ->check(CLI::IsMember({"auto", "always", "never"}));
  fgd_cmd->add_flag("--quiet", quiet, "print nothing on success");

  auto* tiresias_cmd = experiment_cmd->add_subcommand(
      "tiresias", "Tiresias (NSDI'19): training-job schedulers (FIFO, SJF, SRTF, SRSF, LAS, 2D-LAS, Gittins) on its job trace");
  std::string tiresias_trace, tiresias_cluster, tiresias_policies = "all", tiresias_thresholds = "3250,7200";
  std::string tiresias_placement = "binpack", tiresias_within = "running-first", tiresias_distribution;
  double tiresias_k = 0.0, tiresias_overhead = 0.0, tiresias_quantum = 3600.0;
  bool tiresias_compat = false;
  tiresias_cmd->add_option("--traces", traces_dir,
                           "folder with tiresias/ (or the tiresias folder itself); default $GPUSCHED_TRACES_DIR, else ../shared/traces");
  tiresias_cmd->add_option("--trace", tiresias_trace, "job list (default: tiresias/60_job.csv of --traces)");
  tiresias_cmd->add_option("--cluster", tiresias_cluster,
                           "cluster spec: a file, or a spec name of --traces (n1g4, n32g4, ...; default cluster_spec, the simulator's)");
  tiresias_cmd->add_option("--policies", tiresias_policies,
                           "all, or a comma list of fifo, fjf, sjf, srtf, srsf, las, 2d-las, gittins (not with --compat)");
  tiresias_cmd->add_flag("--compat", tiresias_compat,
                         "the public Tiresias simulator's rules (GPUs counted only, integer seconds); default: gpusched's engine");
  tiresias_cmd->add_option("--placement", tiresias_placement,
                           "engine: count (GPUs counted only, as the simulator) or a built-in profile whose plugins place "
                           "jobs (default binpack)");
  tiresias_cmd->add_option("--restart-overhead", tiresias_overhead, "engine: seconds a preempted job spends restoring at each restart (default 0)");
  tiresias_cmd->add_option("--within-queue", tiresias_within, "engine, las / 2d-las / gittins: inside a queue (equal index), running-first (default) or fifo (by entry into the queue)")
      ->check(CLI::IsMember({"running-first", "fifo"}));
  tiresias_cmd->add_option("--quantum", tiresias_quantum, "engine, gittins: service quantum in GPU-seconds (default 3600)");
  tiresias_cmd->add_option("--distribution", tiresias_distribution,
                           "engine, gittins: file of service samples (GPU-seconds), one per line; default: the trace's jobs");
  tiresias_cmd->add_option("--starvation", tiresias_k, "las / 2d-las: promote a waiting job after K x its attained time (0: never)");
  tiresias_cmd->add_option("--thresholds", tiresias_thresholds, "las / 2d-las queue thresholds, increasing (default 3250,7200)");
  tiresias_cmd->add_option("--out", out_dir, "output folder (default: out/tiresias)");
  tiresias_cmd->add_flag("--quiet", quiet, "print nothing on success");

  auto* dra_cmd = app.add_subcommand("dra", "Kubernetes Dynamic Resource Allocation: allocate ResourceClaims, publish ResourceSlices");
  dra_cmd->require_subcommand(1);
  std::vector<std::string> dra_files;
  std::string dra_node, dra_scenario;
  bool dra_json_out = false;
  auto* dra_allocate_cmd = dra_cmd->add_subcommand(
      "allocate", "Allocate the ResourceClaims in kubectl files (ResourceSlices, DeviceClasses, ResourceClaims, Nodes) as "
                  "kube-scheduler's DRA plugin does, each on the first node where it fits");
  dra_allocate_cmd->add_option("files", dra_files, "kubectl get -o yaml/json output (one or more files)")->required();
  dra_allocate_cmd->add_option("--node", dra_node, "allocate on this node only");
  dra_allocate_cmd->add_flag("--json", dra_json_out, "print each claim's allocation as JSON (status.allocation) instead of a table");
  auto* dra_slices_cmd = dra_cmd->add_subcommand(
      "slices", "Print, as a kubectl List, the ResourceSlices NVIDIA's DRA driver (Google's TPU driver for TPU hosts) "
                "would publish for a scenario's cluster, and their DeviceClasses");
  dra_slices_cmd->add_option("scenario", dra_scenario, "scenario JSON file")->required();
  auto* policies_cmd = app.add_subcommand("policies", "List scheduling plugins, their arguments and the built-in profiles");
  auto* version_cmd = app.add_subcommand("version", "Print the version");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  const auto mode = progress == "always" ? ProgressMode::kAlways : progress == "never" ? ProgressMode::kNever : ProgressMode::kAuto;
  try {
    if (*run_cmd) {
      const InterruptSignals signals;
      if (*run_seed) seed = parse_seed(seed_text, {"command line", 0, "--seed"});
      Scenario sc = load_scenario(scenario_path, registry);
      if (!profile_arg.empty()) use_profile(sc, profile_arg, registry);
      sc.exact_scan = exact_scan;
      return run_and_write(sc, seed, out_dir, mode, quiet, registry);
    }
    if (*demo_cmd) {
      const InterruptSignals signals;
      if (*demo_seed) seed = parse_seed(seed_text, {"command line", 0, "--seed"});
      Scenario sc = demo_scenario();
      sc.exact_scan = exact_scan;
      return run_and_write(sc, seed, out_dir.empty() ? "out/demo" : out_dir, mode, quiet, registry);
    }
    if (*whatif_cmd) {
      const InterruptSignals signals;
      if (*whatif_seed) whatif_options.seed = parse_seed(seed_text, {"command line", 0, "--seed"});
      whatif_options.as_gpu_mem = whatif_as_gpu_mem;
      if (!whatif_gpu_mem_default.empty()) {
        whatif_options.gpu_mem_default_mib = parse_memory_mib(whatif_gpu_mem_default, {"command line", 0, "--gpu-mem-default"});
      }
      for (const auto& item : whatif_gpu_mem_images) {
        const auto eq = item.rfind('=');
        if (eq == std::string::npos || eq == 0) {
          throw_error(ErrorCode::kScenarioBadValue, {"command line", 0, "--gpu-mem-image"},
                      "expected IMAGE=QUANTITY (e.g. nvcr.io/nvidia/pytorch=8Gi), got \"" + item + "\"");
        }
        whatif_options.gpu_mem_by_image[item.substr(0, eq)] = parse_memory_mib(item.substr(eq + 1), {"command line", 0, "--gpu-mem-image"});
      }
      if (!whatif_as_gpu_mem && (!whatif_gpu_mem_default.empty() || !whatif_gpu_mem_images.empty())) {
        throw_error(ErrorCode::kScenarioBadValue, {"command line", 0, "--as-gpu-mem"},
                    "--gpu-mem-default and --gpu-mem-image apply with --as-gpu-mem only");
      }
      std::stringstream list(whatif_profiles);
      for (std::string item; std::getline(list, item, ',');) {
        if (!item.empty()) whatif_options.profiles.push_back(item);
      }
      const auto rows = whatif(whatif_options, registry);
      if (whatif_json_out) std::cout << whatif_json(rows).dump(2) << "\n";
      else std::cout << format_whatif(rows, whatif_show_pods || whatif_options.explain);
      return 0;
    }
    if (*serve_cmd) {
      if (*serve_seed) serve_options.seed = parse_seed(seed_text, {"command line", 0, "--seed"});
      const auto colon = serve_listen.rfind(':');
      std::uint64_t port = 0;
      bool ok = colon != std::string::npos && colon > 0 && colon + 1 < serve_listen.size();
      for (std::size_t i = ok ? colon + 1 : serve_listen.size(); i < serve_listen.size(); ++i) {
        ok = ok && std::isdigit(static_cast<unsigned char>(serve_listen[i])) != 0;
        port = port * 10 + static_cast<std::uint64_t>(serve_listen[i] - '0');
        ok = ok && port <= 65535;
      }
      if (!ok) throw_error(ErrorCode::kScenarioBadValue, {"command line", 0, "--listen"}, "expected HOST:PORT (e.g. 127.0.0.1:8888), got \"" + serve_listen + "\"");
      serve_http_options.address = serve_listen.substr(0, colon);
      serve_http_options.port = static_cast<std::uint16_t>(port);
      if (!(serve_bind_timeout > 0) || serve_bind_timeout > 3600) {
        throw_error(ErrorCode::kScenarioBadValue, {"command line", 0, "--bind-timeout"}, "must be more than 0 and at most 3600 seconds");
      }
      if (!serve_bind_api.empty()) serve_options.binder = api_binder(serve_bind_api, serve_bind_timeout);
      std::mutex log_mu;
      if (serve_options.shadow) {
        serve_options.log = [&log_mu](const std::string& line) {
          const std::lock_guard lock(log_mu);
          std::cout << line << std::endl;
        };
      }
      Extender extender(serve_options, registry);
      serve_http_options.on_listening = [&](std::uint16_t p) {
        std::cout << "gpusched serve: listening on " << serve_http_options.address << ":" << p << " (profile "
                  << extender.profile_name() << ", " << extender.node_count() << " nodes, " << extender.pod_count()
                  << " pods bound" << (serve_bind_api.empty() ? "" : ", binding through " + serve_bind_api) << ")" << std::endl;
      };
      try {
        return serve_http(extender, serve_http_options);
      } catch (const std::system_error& e) {
        std::cerr << "gpusched: error: cannot listen on " << serve_listen << ": " << e.what() << "\n";
        return 1;
      }
    }
    if (*dra_allocate_cmd) {
      std::vector<KubernetesObject> objects;
      for (const auto& f : dra_files) {
        auto more = read_kubernetes_objects(f);
        objects.insert(objects.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
      }
      const auto outcomes = allocate_claims(read_dra_objects(objects), dra_node);
      if (dra_json_out) std::cout << dra_json(outcomes).dump(2) << "\n";
      else std::cout << format_dra(outcomes);
      return 0;
    }
    if (*dra_slices_cmd) {
      const Scenario sc = load_scenario(dra_scenario, registry);
      std::cout << nvidia_dra_objects(sc.nodes, sc.catalog).dump(2) << "\n";
      return 0;
    }
    if (*validate_cmd) return validate(validate_path, trace_format, registry);
    if (*convert_cmd) return convert(convert_in, convert_out, trace_format);
    if (*discover_cmd) return discover(discover_args);
    if (*formats_cmd) {
      for (const auto kind : {traces::FormatKind::kWorkload, traces::FormatKind::kCluster}) {
        std::cout << (kind == traces::FormatKind::kWorkload ? "Workloads:\n" : "\nNode lists (clusters):\n");
        for (const auto& f : traces::formats()) {
          if (f.kind == kind) std::cout << "  " << f.name << std::string(f.name.size() < 18 ? 18 - f.name.size() : 1, ' ') << f.description << "\n";
        }
      }
      return 0;
    }
    if (*tiresias_cmd) {
      if (traces_dir.empty()) {
        const char* env = std::getenv("GPUSCHED_TRACES_DIR");
        traces_dir = (env != nullptr && *env != '\0') ? env : "../shared/traces";
      }
      std::filesystem::path folder = traces_dir;
      if (std::filesystem::exists(folder / "tiresias")) folder /= "tiresias";
      const std::filesystem::path trace = tiresias_trace.empty() ? folder / "60_job.csv" : std::filesystem::path(tiresias_trace);
      std::filesystem::path spec = tiresias_cluster.empty() ? std::filesystem::path("cluster_spec") : std::filesystem::path(tiresias_cluster);
      if (!std::filesystem::exists(spec)) spec = folder / (spec.extension() == ".csv" ? spec : std::filesystem::path(spec.string() + ".csv"));
      std::vector<double> thresholds;
      for (std::size_t at = 0; at <= tiresias_thresholds.size() && !tiresias_thresholds.empty();) {
        const auto comma = std::min(tiresias_thresholds.find(',', at), tiresias_thresholds.size());
        const std::string one = tiresias_thresholds.substr(at, comma - at);
        const bool whole = !one.empty() && one.size() <= 12 &&
                           std::all_of(one.begin(), one.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; });
        if (!whole) {
          throw_error(ErrorCode::kScenarioBadValue, {"command line", 0, "--thresholds"},
                      "expected whole numbers of seconds, e.g. 3250,7200; got \"" + tiresias_thresholds + "\"");
        }
        thresholds.push_back(static_cast<double>(std::stoll(one)));
        at = comma + 1;
      }
      const auto& known = tiresias_compat ? tiresias_compat_policies() : tiresias_engine_policies();
      std::vector<std::string> policies;
      if (tiresias_policies == "all") {
        policies = known;
      } else {
        std::stringstream list(tiresias_policies);
        for (std::string one; std::getline(list, one, ',');) {
          if (std::find(known.begin(), known.end(), one) == known.end()) {
            std::string names;
            for (const auto& n : known) names += (names.empty() ? "" : ", ") + n;
            throw_error(ErrorCode::kScenarioBadValue, {"command line", 0, "--policies"},
                        "unknown policy \"" + one + "\"" + (tiresias_compat ? " in compat mode" : "") + " (" + names + ")" +
                            (one == "gittins" ? ": the simulator's gittins does not run as published; run it without --compat" : ""));
          }
          if (std::find(policies.begin(), policies.end(), one) == policies.end()) policies.push_back(one);
        }
      }
      if (policies.empty()) throw_error(ErrorCode::kScenarioBadValue, {"command line", 0, "--policies"}, "no policy given");
      // An option that would change nothing is an error, not silently ignored.
      const auto uses = [&](std::initializer_list<std::string_view> names) {
        return std::any_of(policies.begin(), policies.end(), [&](const std::string& p) { return std::find(names.begin(), names.end(), p) != names.end(); });
      };
      const auto refuse = [&](const char* option, const std::string& why) {
        if (tiresias_cmd->count(option) > 0) throw_error(ErrorCode::kScenarioBadValue, {"command line", 0, option}, std::string(option) + " " + why);
      };
      if (tiresias_compat) {
        for (const char* option : {"--placement", "--restart-overhead", "--within-queue", "--quantum", "--distribution"}) {
          refuse(option, "applies to gpusched's engine only: the compat mode follows the simulator (drop --compat, or the option)");
        }
      }
      if (!uses({"las", "2d-las"})) {
        for (const char* option : {"--starvation", "--thresholds"}) refuse(option, "applies to las and 2d-las, which --policies does not list");
      }
      if (!uses({"gittins"})) {
        for (const char* option : {"--quantum", "--distribution"}) refuse(option, "applies to gittins, which --policies does not list");
      }
      if (!uses({"las", "2d-las", "gittins"})) refuse("--within-queue", "applies to las, 2d-las and gittins, which --policies does not list");
      if (!uses({"sjf", "srtf", "srsf", "las", "2d-las", "gittins"})) {
        refuse("--restart-overhead", "applies to the policies that preempt (sjf, srtf, srsf, las, 2d-las, gittins), which --policies does not list");
      }
      // One line per policy: summary.csv's row and the terminal's.
      const auto row = [](const std::string& policy, const TiresiasCompatSummary& s, bool stuck, double overhead_gpu_h) {
        char line[320];
        if (s.completed == 0) {   // no JCT to average: empty cells, not zeros
          std::snprintf(line, sizeof line, "%s,%zu,0,,,,,,%lld,%s,%.6f\n", policy.c_str(), s.jobs, static_cast<long long>(s.preemptions),
                        stuck ? "true" : "false", overhead_gpu_h);
        } else {
          std::snprintf(line, sizeof line, "%s,%zu,%zu,%.3f,%.3f,%.3f,%s,%.3f,%lld,%s,%.6f\n", policy.c_str(), s.jobs, s.completed,
                        s.mean_jct, s.median_jct, s.p95_jct, format_number(s.makespan).c_str(), s.mean_pending,
                        static_cast<long long>(s.preemptions), stuck ? "true" : "false", overhead_gpu_h);
        }
        return std::string(line);
      };
      const auto print = [&](const std::string& policy, const TiresiasCompatSummary& s, bool stuck) {
        if (quiet) return;
        std::printf("%-8s %4zu/%-4zu %9.1fs %9.1fs %9.1fs %9.0fs %10.1fs %8lld%s\n", policy.c_str(), s.completed, s.jobs, s.mean_jct,
                    s.median_jct, s.p95_jct, s.makespan, s.mean_pending, static_cast<long long>(s.preemptions),
                    stuck ? "  (ended with jobs still waiting)" : "");
      };
      const char* header = "policy,jobs,completed,mean_jct_s,median_jct_s,p95_jct_s,makespan_s,mean_queueing_s,preemptions,stuck,overhead_gpu_hours\n";
      const std::filesystem::path out = out_dir.empty() ? std::filesystem::path("out/tiresias") : std::filesystem::path(out_dir);
      const auto open_summary = [&] {
        std::error_code ec;
        std::filesystem::create_directories(out, ec);
        if (ec) throw_error(ErrorCode::kOutputWrite, {out.string(), 0, ""}, "cannot create the output folder: " + ec.message());
        std::ofstream summary(out / "summary.csv", std::ios::binary);
        if (!summary) throw_error(ErrorCode::kOutputWrite, {(out / "summary.csv").string(), 0, ""}, "cannot write the file");
        summary << header;
        return summary;
      };
      const auto table_header = [&] {
        if (quiet) return;
        std::printf("%-8s %9s %10s %10s %10s %10s %11s %8s\n", "policy", "completed", "mean JCT", "median", "p95", "makespan",
                    "mean queue", "preempt");
      };
      if (tiresias_compat) {
        TiresiasCompatOptions options;
        options.starvation_k = tiresias_k;
        options.queue_limits.clear();
        for (double t : thresholds) options.queue_limits.push_back(static_cast<std::int64_t>(t));
        if (options.queue_limits.size() != 2) {
          throw_error(ErrorCode::kScenarioBadValue, {"command line", 0, "--thresholds"},
                      "the simulator has three queues: give two thresholds, e.g. 3250,7200");
        }
        const auto jobs = read_tiresias_compat_jobs(trace);
        const auto gpus = read_tiresias_compat_gpus(spec);
        {   // every option checked before anything is written or printed
          TiresiasCompatOptions check = options;
          check.policy = policies.front();
          (void)run_tiresias_compat(std::span<const TiresiasCompatJob>{}, gpus, check);
        }
        auto summary = open_summary();
        if (!quiet) {
          std::printf("Tiresias compat mode: %zu jobs from %s on %lld GPUs (%s)\n", jobs.size(), trace.string().c_str(),
                      static_cast<long long>(gpus), spec.string().c_str());
        }
        table_header();
        for (const auto& policy : policies) {
          options.policy = policy;
          const auto run = run_tiresias_compat(jobs, gpus, options);
          write_tiresias_compat_jobs(run, out / ("jobs-" + policy + ".csv"));
          const auto s = summarize(run);
          summary << row(policy, s, run.stuck, 0.0);
          print(policy, s, run.stuck);
        }
        if (!summary) throw_error(ErrorCode::kOutputWrite, {(out / "summary.csv").string(), 0, ""}, "cannot write the file");
        if (!quiet) std::printf("Wrote %s (summary.csv, jobs-<policy>.csv)\n", out.string().c_str());
        return 0;
      }
      if (!(tiresias_overhead >= 0.0 && tiresias_overhead <= 1e10)) {
        throw_error(ErrorCode::kScenarioBadValue, {"command line", 0, "--restart-overhead"},
                    "expected seconds from 0 to 1e10, got " + format_number(tiresias_overhead));
      }
      TiresiasEngineOptions options;
      options.thresholds = thresholds;
      options.starvation_k = tiresias_k;
      options.within_queue = tiresias_within;
      options.quantum = tiresias_quantum;
      options.distribution = tiresias_distribution;
      options.placement = tiresias_placement;
      options.restart_overhead_s = tiresias_overhead;
      // Every policy's profile is checked before anything is written; the trace is read once.
      std::optional<Scenario> base;
      std::vector<policies::Profile> profiles;
      for (const auto& policy : policies) {
        options.policy = policy;
        try {
          if (!base) base = tiresias_scenario(trace, spec, options);
          profiles.push_back(tiresias_profile(options));
        } catch (const ProfileError& e) {
          // A plugin argument from a flag: name the flag.
          const std::string field = e.where().field;
          const char* flag = field.find("thresholds") != std::string::npos     ? "--thresholds"
                             : field.find("starvation") != std::string::npos   ? "--starvation"
                             : field.find("quantum") != std::string::npos      ? "--quantum"
                             : field.find("distribution") != std::string::npos ? "--distribution"
                             : field.find("within") != std::string::npos       ? "--within-queue"
                                                                               : "--placement";
          throw_error(ErrorCode::kScenarioBadValue, {"command line", 0, flag}, e.detail());
        }
      }
      auto summary = open_summary();
      if (!quiet) {
        std::printf("Tiresias policies on gpusched's engine: %zu jobs from %s on %zu nodes (%s), placement %s\n",
                    base->jobs.size(), trace.string().c_str(), base->nodes.size(), spec.string().c_str(), tiresias_placement.c_str());
      }
      table_header();
      const InterruptSignals signals;
      for (std::size_t i = 0; i < policies.size(); ++i) {
        options.policy = policies[i];
        base->profile = profiles[i];
        base->name = "tiresias-" + policies[i];
        base->document["policy"] = policies[i];
        base->document["queue_sort"] = profiles[i].queue_sort.name;
        base->document["queue_sort_args"] = profiles[i].queue_sort.args;
        const auto result = scenario::run(*base);
        const auto rows = result.jobs();
        {
          const auto path = out / ("jobs-" + policies[i] + ".csv");
          std::ofstream jobs_out(path, std::ios::binary);
          if (!jobs_out) throw_error(ErrorCode::kOutputWrite, {path.string(), 0, ""}, "cannot write the file");
          sim::write_jobs_csv(jobs_out, rows);
          if (!jobs_out) throw_error(ErrorCode::kOutputWrite, {path.string(), 0, ""}, "cannot write the file");
        }
        const auto s = summarize(std::span<const sim::JobRow>(rows));
        const bool stuck = result.summary().pending > 0;
        summary << row(policies[i], s, stuck, result.summary().overhead_gpu_hours);
        print(policies[i], s, stuck);
      }
      if (!summary) throw_error(ErrorCode::kOutputWrite, {(out / "summary.csv").string(), 0, ""}, "cannot write the file");
      if (!quiet) std::printf("Wrote %s (summary.csv, jobs-<policy>.csv)\n", out.string().c_str());
      return 0;
    }
    if (*fgd_cmd) {
      const InterruptSignals signals;
      FgdExperiment cfg;
      if (traces_dir.empty()) {
        const char* env = std::getenv("GPUSCHED_TRACES_DIR");
        traces_dir = (env != nullptr && *env != '\0') ? env : "../shared/traces";
      }
      cfg.traces = traces_dir;
      const auto workloads = parse_fgd_workloads(workload);
      cfg.workload = workloads.front();
      cfg.policies = parse_fgd_policies(policies_text);
      cfg.seeds = parse_seeds(seeds_text);
      cfg.threads = threads;
      cfg.max_arrived_pct = max_arrived;
      return run_fgd(cfg, workloads, out_dir, mode, quiet);
    }
    if (*policies_cmd) {
      list_policies(registry);
      return 0;
    }
    if (*version_cmd) {
      std::cout << "gpusched " << kVersion << "\n";
      return 0;
    }
  } catch (const InterruptedError&) {
    std::cerr << "gpusched: interrupted; nothing was written\n";
    return 130;
  } catch (const OutputError& e) {
    std::cerr << "gpusched: error: " << e.what() << "\n";
    return 3;
  } catch (const Error& e) {
    std::cerr << "gpusched: error: " << e.what() << "\n";
    return 1;
  }
  return 2;
}

}  // namespace gpusched::scenario
