// Growth curve: whole simulations through scenario::run() (cluster build, workload generation,
// engine, metrics; what `gpusched run` does before writing files) over a grid of cluster sizes
// and job counts, one CSV row per cell. Plot with tools/plot_growth.py.
//
// The cell (N nodes, J jobs, profile P): the built-in demo (examples/demo.json) with its node
// groups scaled to N nodes (same proportions: 40% 8x A100, 30% 8x V100, 20% 4x T4, 10% CPU-only),
// J synthetic jobs (the demo's mix and durations) offered at load 0.9 (--load), seed 42, under
// preset P, node index on (index 1) or off (index 0, Scenario::exact_scan = `run --exact-scan`).
//
// Each cell runs in a child process (fork), so max_rss_mb is that cell's own peak resident
// memory (wait4's ru_maxrss) and a cell that runs past --timeout is killed and recorded as such.
//
// Usage (defaults in brackets; a flag beats the environment variable named after it):
//   bench_growth [--nodes 1000,4000,16000,64000]   GPUSCHED_GROWTH_NODES
//                [--jobs 10000,100000,1000000]     GPUSCHED_GROWTH_JOBS
//                [--profiles binpack,kube-default,fgd]  GPUSCHED_GROWTH_PROFILES
//                [--index on|off|both (on)]        GPUSCHED_GROWTH_INDEX
//                [--load 0.9] [--seed 42]
//                [--max-seconds S (0: no limit)]   GPUSCHED_GROWTH_MAX_SECONDS
//                    skip a cell whose predicted wall time exceeds S (or one above a cell that
//                    was skipped or timed out); the prediction extrapolates the finished cells of
//                    the same profile and index along jobs (same nodes), else along nodes (same
//                    jobs): linearly, or by the last two cells' log-log slope when steeper
//                [--timeout S (0: none; default 3 x --max-seconds)]  kill a cell running longer
//                [--write-outputs DIR]  also write the CLI's default outputs of each cell under
//                                       DIR/<cell>/ and time it (write_s)
//                [--out growth.csv] [--append]  append rows to an existing CSV (no second header)
// Cells run in order nodes, then jobs (ascending), then profile, then index.
//
// Columns: nodes, jobs, profile, index, status (ok | skipped | timeout | error), wall_s (run()),
// decisions (engine schedule() calls), us_per_decision, us_per_job, events, completed, failed,
// max_rss_mb, write_s, predicted_s (for skipped cells), note.
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <gpusched/scenario/scenario.hpp>

#include "scaled_demo.hpp"

namespace {

using namespace gpusched;

struct Options {
  std::vector<std::int64_t> nodes{1'000, 4'000, 16'000, 64'000};
  std::vector<std::int64_t> jobs{10'000, 100'000, 1'000'000};
  std::vector<std::string> profiles{"binpack", "kube-default", "fgd"};
  std::vector<int> index{1};
  double load = 0.9;
  std::uint64_t seed = 42;
  double max_seconds = 0;
  std::optional<double> timeout;
  std::string write_outputs;
  std::string out = "growth.csv";
  bool append = false;
};

[[noreturn]] void usage_error(const std::string& msg) {
  std::fprintf(stderr, "bench_growth: %s (see the comment at the top of bench/bench_growth.cpp)\n", msg.c_str());
  std::exit(2);
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

double to_number(const std::string& what, const std::string& v) {
  char* end = nullptr;
  const double x = std::strtod(v.c_str(), &end);
  if (v.empty() || *end != '\0' || !(x >= 0)) usage_error(what + ": \"" + v + "\" is not a non-negative number");
  return x;
}

std::vector<std::int64_t> to_counts(const std::string& what, const std::string& v) {
  std::vector<std::int64_t> out;
  for (const auto& item : split(v)) {
    const double x = to_number(what, item);
    if (x < 1 || x != static_cast<double>(static_cast<std::int64_t>(x))) usage_error(what + ": \"" + item + "\" is not a positive integer");
    out.push_back(static_cast<std::int64_t>(x));
  }
  if (out.empty()) usage_error(what + " is empty");
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<int> to_index(const std::string& v) {
  if (v == "on") return {1};
  if (v == "off") return {0};
  if (v == "both") return {1, 0};
  usage_error("index: \"" + v + "\" is not on, off or both");
}

void apply(Options& o, const std::string& key, const std::string& v) {
  if (key == "nodes") o.nodes = to_counts("nodes", v);
  else if (key == "jobs") o.jobs = to_counts("jobs", v);
  else if (key == "profiles") {
    o.profiles = split(v);
    if (o.profiles.empty()) usage_error("profiles is empty");
  } else if (key == "index") o.index = to_index(v);
  else if (key == "load") o.load = to_number("load", v);
  else if (key == "seed") o.seed = static_cast<std::uint64_t>(to_number("seed", v));
  else if (key == "max-seconds") o.max_seconds = to_number("max-seconds", v);
  else if (key == "timeout") o.timeout = to_number("timeout", v);
  else if (key == "write-outputs") o.write_outputs = v;
  else if (key == "out") o.out = v;
  else usage_error("unknown option --" + key);
}

Options parse_options(int argc, char** argv) {
  Options o;
  const std::pair<const char*, const char*> env[] = {{"GPUSCHED_GROWTH_NODES", "nodes"},
                                                     {"GPUSCHED_GROWTH_JOBS", "jobs"},
                                                     {"GPUSCHED_GROWTH_PROFILES", "profiles"},
                                                     {"GPUSCHED_GROWTH_INDEX", "index"},
                                                     {"GPUSCHED_GROWTH_MAX_SECONDS", "max-seconds"}};
  for (const auto& [name, key] : env) {
    if (const char* v = std::getenv(name); v != nullptr && *v != '\0') apply(o, key, v);
  }
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--append") {
      o.append = true;
      continue;
    }
    if (a == "-h" || a == "--help") usage_error("usage");
    if (a.rfind("--", 0) != 0) usage_error("unexpected argument \"" + a + "\"");
    a = a.substr(2);
    std::string v;
    if (const auto eq = a.find('='); eq != std::string::npos) {
      v = a.substr(eq + 1);
      a = a.substr(0, eq);
    } else {
      if (i + 1 >= argc) usage_error("--" + a + " needs a value");
      v = argv[++i];
    }
    apply(o, a, v);
  }
  for (const auto& p : o.profiles) {
    try {
      (void)policies::builtin_profile(p);
    } catch (const std::exception& e) {
      usage_error(e.what());
    }
  }
  if (!o.timeout && o.max_seconds > 0) o.timeout = 3 * o.max_seconds;
  return o;
}

/// The demo with its node groups scaled to `nodes` (same proportions) and `jobs` synthetic jobs
/// at `load` (as bench_sim's scaled_demo).
scenario::Scenario scaled_demo(std::int64_t nodes, std::int64_t jobs, double load) {
  auto doc = bench::scaled_demo_doc(nodes);
  doc["workload"]["synthetic"]["jobs"] = jobs;
  doc["workload"]["synthetic"]["load"] = load;
  doc["name"] = "growth-" + std::to_string(nodes) + "-" + std::to_string(jobs);
  return scenario::parse_scenario(doc, "<bench_growth>", ".");
}

struct Cell {
  std::int64_t nodes = 0, jobs = 0;
  std::string profile;
  int index = 1;
  std::string status = "ok";
  double wall_s = 0, write_s = 0, predicted_s = 0, max_rss_mb = 0;
  std::uint64_t decisions = 0, events = 0;
  std::int64_t completed = 0, failed = 0;
  std::string note;
};

std::string cell_name(const Cell& c) {
  return std::to_string(c.nodes) + "n-" + std::to_string(c.jobs) + "j-" + c.profile + "-idx" + std::to_string(c.index);
}

/// Runs in the child: the cell's run, its measures written to `fd` as one JSON line.
[[noreturn]] void child_main(const Options& o, const Cell& c, int fd) {
  nlohmann::json r;
  try {
    auto sc = scaled_demo(c.nodes, c.jobs, o.load);
    sc.profile = policies::builtin_profile(c.profile);
    sc.exact_scan = c.index == 0;
    const auto t0 = std::chrono::steady_clock::now();
    auto result = scenario::run(sc, o.seed);
    const auto t1 = std::chrono::steady_clock::now();
    r["wall_s"] = std::chrono::duration<double>(t1 - t0).count();
    r["decisions"] = result.engine().schedule_attempts();
    r["events"] = result.engine().events_processed();
    r["completed"] = result.summary().completed;
    r["failed"] = result.summary().failed;
    if (!o.write_outputs.empty()) {
      const auto t2 = std::chrono::steady_clock::now();
      scenario::write_outputs(result, std::filesystem::path(o.write_outputs) / cell_name(c));
      const auto t3 = std::chrono::steady_clock::now();
      r["write_s"] = std::chrono::duration<double>(t3 - t2).count();
    }
  } catch (const std::exception& e) {
    r["error"] = e.what();
  }
  const std::string line = r.dump() + "\n";
  std::size_t done = 0;
  while (done < line.size()) {
    const auto w = ::write(fd, line.data() + done, line.size() - done);
    if (w <= 0) break;
    done += static_cast<std::size_t>(w);
  }
  ::close(fd);
  std::fflush(nullptr);
  ::_exit(0);   // no destructors: the run's memory goes with the process
}

void run_cell(const Options& o, Cell& c) {
  int fds[2];
  if (::pipe(fds) != 0) {
    c.status = "error";
    c.note = std::string("pipe: ") + std::strerror(errno);
    return;
  }
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) {
    c.status = "error";
    c.note = std::string("fork: ") + std::strerror(errno);
    ::close(fds[0]);
    ::close(fds[1]);
    return;
  }
  if (pid == 0) {
    ::close(fds[0]);
    child_main(o, c, fds[1]);
  }
  ::close(fds[1]);
  const auto start = std::chrono::steady_clock::now();
  std::string text;
  bool timed_out = false;
  char buf[4096];
  for (;;) {
    int wait_ms = -1;
    if (o.timeout && *o.timeout > 0) {
      const double left = *o.timeout - std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (left <= 0) {
        timed_out = true;
        break;
      }
      wait_ms = static_cast<int>(std::min(left * 1000.0 + 1, 1e9));
    }
    pollfd p{fds[0], POLLIN, 0};
    const int ready = ::poll(&p, 1, wait_ms);
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) continue;   // the deadline check above ends it
    const auto n = ::read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fds[0]);
  if (timed_out) ::kill(pid, SIGKILL);
  int wstatus = 0;
  rusage ru{};
  while (::wait4(pid, &wstatus, 0, &ru) < 0 && errno == EINTR) {
  }
  c.max_rss_mb = static_cast<double>(ru.ru_maxrss) / 1024.0;   // Linux: kilobytes
  if (timed_out) {
    c.status = "timeout";
    c.wall_s = *o.timeout;
    c.note = "killed after " + std::to_string(static_cast<long long>(*o.timeout)) + " s";
    return;
  }
  if (!WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0 || text.empty()) {
    c.status = "error";
    c.note = WIFSIGNALED(wstatus) ? "killed by signal " + std::to_string(WTERMSIG(wstatus)) : "no result from the child";
    return;
  }
  const auto r = nlohmann::json::parse(text, nullptr, false);
  if (r.is_discarded()) {
    c.status = "error";
    c.note = "unreadable result from the child";
  } else if (r.contains("error")) {
    c.status = "error";
    c.note = r["error"].get<std::string>();
  } else {
    c.wall_s = r["wall_s"].get<double>();
    c.decisions = r["decisions"].get<std::uint64_t>();
    c.events = r["events"].get<std::uint64_t>();
    c.completed = r["completed"].get<std::int64_t>();
    c.failed = r["failed"].get<std::int64_t>();
    if (r.contains("write_s")) c.write_s = r["write_s"].get<double>();
  }
}

/// Predicted wall time of `c` from the finished cells of the same profile and index (0 when
/// none is comparable): along jobs (same nodes) from the largest smaller job count, else along
/// nodes (same jobs) from the largest smaller node count, else from the largest cell below in
/// both. Growth is linear, or the log-log slope of the last two cells on that line when steeper
/// (at most cubic): at 64k nodes a run costs more than 4x the 16k one.
double predict(const std::vector<Cell>& done, const Cell& c) {
  std::vector<const Cell*> along_jobs, along_nodes;   // same nodes / same jobs, ascending
  const Cell* below = nullptr;
  for (const auto& d : done) {
    if (d.status != "ok" || d.profile != c.profile || d.index != c.index || d.nodes > c.nodes || d.jobs > c.jobs) continue;
    if (d.nodes == c.nodes && d.jobs < c.jobs) along_jobs.push_back(&d);
    if (d.jobs == c.jobs && d.nodes < c.nodes) along_nodes.push_back(&d);
    if (!below || d.nodes * d.jobs > below->nodes * below->jobs) below = &d;
  }
  const auto extrapolate = [](std::vector<const Cell*>& line, auto size_of, double target) {
    std::sort(line.begin(), line.end(), [&](const Cell* a, const Cell* b) { return size_of(*a) < size_of(*b); });
    const Cell& last = *line.back();
    double slope = 1.0;
    if (line.size() >= 2) {
      const Cell& prev = *line[line.size() - 2];
      if (prev.wall_s > 0 && last.wall_s > 0) {
        slope = std::clamp(std::log(last.wall_s / prev.wall_s) / std::log(size_of(last) / size_of(prev)), 1.0, 3.0);
      }
    }
    return last.wall_s * std::pow(target / size_of(last), slope);
  };
  if (!along_jobs.empty()) {
    return extrapolate(along_jobs, [](const Cell& d) { return static_cast<double>(d.jobs); }, static_cast<double>(c.jobs));
  }
  if (!along_nodes.empty()) {
    return extrapolate(along_nodes, [](const Cell& d) { return static_cast<double>(d.nodes); }, static_cast<double>(c.nodes));
  }
  if (below) {
    return below->wall_s * static_cast<double>(c.jobs) / static_cast<double>(below->jobs) * static_cast<double>(c.nodes) /
           static_cast<double>(below->nodes);
  }
  return 0;
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char ch : s) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return q + "\"";
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse_options(argc, argv);
  const bool header = !o.append || !std::filesystem::exists(o.out) || std::filesystem::file_size(o.out) == 0;
  std::ofstream csv(o.out, o.append ? std::ios::app : std::ios::trunc);
  if (!csv) usage_error("cannot write " + o.out);
  if (header) {
    csv << "nodes,jobs,profile,index,status,wall_s,decisions,us_per_decision,us_per_job,events,completed,failed,"
           "max_rss_mb,write_s,predicted_s,note\n";
  }
  std::vector<Cell> done;
  for (const auto nodes : o.nodes) {
    for (const auto jobs : o.jobs) {
      for (const auto& profile : o.profiles) {
        for (const int index : o.index) {
          Cell c;
          c.nodes = nodes;
          c.jobs = jobs;
          c.profile = profile;
          c.index = index;
          c.predicted_s = predict(done, c);
          const bool after_limit = std::any_of(done.begin(), done.end(), [&c](const Cell& d) {
            return (d.status == "skipped" || d.status == "timeout") && d.profile == c.profile && d.index == c.index &&
                   d.nodes <= c.nodes && d.jobs <= c.jobs;
          });
          if (o.max_seconds > 0 && (after_limit || c.predicted_s > o.max_seconds)) {
            c.status = "skipped";
            c.note = after_limit ? "a smaller cell was skipped or timed out" : "predicted over --max-seconds";
          } else {
            std::fprintf(stderr, "bench_growth: %s ...", cell_name(c).c_str());
            std::fflush(stderr);
            run_cell(o, c);
          }
          const double us_dec = c.decisions ? c.wall_s * 1e6 / static_cast<double>(c.decisions) : 0;
          const double us_job = c.status == "ok" ? c.wall_s * 1e6 / static_cast<double>(c.jobs) : 0;
          char row[512];
          std::snprintf(row, sizeof row, "%lld,%lld,%s,%d,%s,%.3f,%llu,%.3f,%.3f,%llu,%lld,%lld,%.1f,%.3f,%.1f,",
                        static_cast<long long>(c.nodes), static_cast<long long>(c.jobs), csv_field(c.profile).c_str(), c.index,
                        c.status.c_str(), c.wall_s, static_cast<unsigned long long>(c.decisions), us_dec, us_job,
                        static_cast<unsigned long long>(c.events), static_cast<long long>(c.completed),
                        static_cast<long long>(c.failed), c.max_rss_mb, c.write_s, c.predicted_s);
          csv << row << csv_field(c.note) << "\n";
          csv.flush();
          if (c.status == "skipped") {
            std::fprintf(stderr, "bench_growth: %s skipped (predicted %.1f s)\n", cell_name(c).c_str(), c.predicted_s);
          } else {
            std::fprintf(stderr, " %s %.2f s, %llu decisions, %.1f us/decision, %.0f MB%s%s\n", c.status.c_str(), c.wall_s,
                         static_cast<unsigned long long>(c.decisions), us_dec, c.max_rss_mb, c.note.empty() ? "" : ": ",
                         c.note.c_str());
          }
          done.push_back(c);
        }
      }
    }
  }
  return 0;
}
