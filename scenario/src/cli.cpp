// The `gpusched` command line. Exit codes: 0 success, 1 bad input or configuration (a
// gpusched error with its id and location), 2 wrong usage, 3 outputs could not be written.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include <CLI/CLI.hpp>

#include <gpusched/policies/framework/registry.hpp>
#include <gpusched/policies/framework/scheduler.hpp>
#include <gpusched/scenario/scenario.hpp>
#include <gpusched/traces/native.hpp>
#include <gpusched/version.hpp>

namespace gpusched::scenario {
namespace {

enum class ProgressMode { kAuto, kAlways, kNever };

/// A progress bar on stderr, shown only once a run has taken more than a second.
class ProgressBar {
 public:
  explicit ProgressBar(ProgressMode mode) : enabled_(mode == ProgressMode::kAlways || (mode == ProgressMode::kAuto && isatty(2))) {}
  void operator()(double f) {
    if (!enabled_) return;
    const auto now = std::chrono::steady_clock::now();
    const double elapsed = std::chrono::duration<double>(now - start_).count();
    if (f >= 1.0) {
      if (shown_) {
        draw(1.0, elapsed);
        std::fputc('\n', stderr);
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

int run_and_write(const Scenario& sc, std::optional<std::uint64_t> seed, const std::string& out_dir, ProgressMode mode, bool quiet) {
  ProgressBar bar(mode);
  const auto t0 = std::chrono::steady_clock::now();
  RunResult result = run(sc, seed, [&bar](double f) { bar(f); });
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
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
    std::cout << "  report     " << (dir / "report.md").string() << "  (also summary.json, jobs.csv, timeseries.csv";
    if (!result.event_log().empty()) std::cout << ", events.csv";
    std::cout << ")\n";
  }
  return 0;
}

int validate(const std::string& file) {
  const std::filesystem::path path(file);
  const auto ext = path.extension().string();
  if (ext == ".csv" || ext == ".jsonl" || ext == ".ndjson") {
    ResourceTable resources;
    const auto jobs = traces::read_trace(path, GpuCatalog::builtin(), resources);
    std::cout << "OK  trace " << file << ": " << jobs.size() << " jobs\n";
    return 0;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw_error(ErrorCode::kScenarioCannotOpen, {file, 0, ""}, "cannot open the file");
  std::stringstream ss;
  ss << in.rdbuf();
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(ss.str());
  } catch (const nlohmann::json::parse_error&) {
    const std::string text = ss.str();
    (void)parse_scenario(std::string_view(text), file, path.parent_path());   // reports the line
  }
  if (doc.is_object() && !doc.contains("cluster") && !doc.contains("workload")) {
    const auto profile = policies::Profile::from_json(doc, file);
    policies::Scheduler check(profile, policies::Registry::with_builtins(), 0);
    std::cout << "OK  profile " << file << ": " << profile.name << "\n";
    return 0;
  }
  const Scenario sc = parse_scenario(doc, file, path.parent_path());
  ClusterState cluster(sc.catalog, sc.resources, sc.nodes);
  policies::Scheduler check(sc.profile, policies::Registry::with_builtins(), sc.seed);
  std::size_t jobs = sc.jobs.size();
  if (sc.synthetic) {
    jobs = traces::generate(*sc.synthetic, cluster, RngStreams(sc.seed)).size();
  } else {
    traces::check_placeable(sc.jobs, cluster, sc.trace ? sc.trace->string() : file);
  }
  std::cout << "OK  scenario " << file << ": " << sc.name << ", " << cluster.node_count() << " nodes, "
            << cluster.totals().gpus << " GPUs, profile " << sc.profile.name << ", " << jobs << " jobs\n";
  return 0;
}

void list_policies() {
  const auto reg = policies::Registry::with_builtins();
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

}  // namespace

int cli_main(int argc, const char* const* argv) {
  CLI::App app{"gpusched: simulate accelerator clusters and scheduling policies"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("gpusched ") + kVersion);

  std::string scenario_path, out_dir, validate_path;
  std::optional<std::uint64_t> seed;
  std::uint64_t seed_value = 0;
  std::string progress = "auto";
  bool quiet = false;

  auto* run_cmd = app.add_subcommand("run", "Run a scenario file and write its outputs");
  run_cmd->add_option("scenario", scenario_path, "scenario JSON file")->required();
  run_cmd->add_option("--out", out_dir, "output folder (default: out/<scenario name>)");
  auto* run_seed = run_cmd->add_option("--seed", seed_value, "override the scenario's seed");
  run_cmd->add_option("--progress", progress, "progress bar on stderr: auto (when a terminal), always, never")
      ->check(CLI::IsMember({"auto", "always", "never"}));
  run_cmd->add_flag("--quiet", quiet, "print nothing on success");

  auto* demo_cmd = app.add_subcommand("demo", "Run the built-in demo (1,000 nodes, 20,000 synthetic jobs)");
  demo_cmd->add_option("--out", out_dir, "output folder (default: out/demo)");
  auto* demo_seed = demo_cmd->add_option("--seed", seed_value, "seed (default 42)");
  demo_cmd->add_option("--progress", progress, "progress bar on stderr: auto, always, never")
      ->check(CLI::IsMember({"auto", "always", "never"}));
  demo_cmd->add_flag("--quiet", quiet, "print nothing on success");

  auto* validate_cmd = app.add_subcommand("validate", "Check a scenario, trace (.csv/.jsonl) or profile file");
  validate_cmd->add_option("file", validate_path, "file to check")->required();

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
      if (*run_seed) seed = seed_value;
      return run_and_write(load_scenario(scenario_path), seed, out_dir, mode, quiet);
    }
    if (*demo_cmd) {
      if (*demo_seed) seed = seed_value;
      return run_and_write(demo_scenario(), seed, out_dir.empty() ? "out/demo" : out_dir, mode, quiet);
    }
    if (*validate_cmd) return validate(validate_path);
    if (*policies_cmd) {
      list_policies();
      return 0;
    }
    if (*version_cmd) {
      std::cout << "gpusched " << kVersion << "\n";
      return 0;
    }
  } catch (const Error& e) {
    std::cerr << "gpusched: error: " << e.what() << "\n";
    return 1;
  }
  return 2;
}

}  // namespace gpusched::scenario
