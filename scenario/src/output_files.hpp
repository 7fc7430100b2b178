#pragma once
// Writing output folders (private to the scenario component): run outputs and experiment outputs.
#include <signal.h>
#include <unistd.h>

#include <cerrno>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <functional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include <gpusched/error.hpp>
#include <gpusched/interrupt.hpp>

namespace gpusched::scenario::detail {

/// Every file a run's output folder may hold: what write_outputs writes, plus the plot the
/// Python command line adds. Files of an earlier run with these names that this run does not
/// write are removed; no other file in the folder is touched.
inline const std::vector<std::string>& run_output_names() {
  static const std::vector<std::string> names = {"summary.json", "jobs.csv",  "timeseries.csv", "fragmentation.csv",
                                                 "events.csv",   "report.md", "meta.json",      "timeseries.png", "claims.csv"};
  return names;
}
/// The same for an FGD experiment's folder.
inline const std::vector<std::string>& fgd_output_names() {
  static const std::vector<std::string> names = {"curve.csv", "summary.csv", "runs.csv", "report.md", "meta.json", "fgd.png"};
  return names;
}

/// Writes a folder of outputs atomically: every file goes first into a hidden staging folder
/// inside `dir` (same file system, so the moves are renames), and `commit` moves them into place,
/// the marker files (summary.json: "this run is complete") last, after removing the earlier run's
/// markers and its files this run does not write. A failure or an interruption before `commit`
/// leaves the folder as it was (the staging folder is removed, and the folder too when this run
/// made it); a failure during `commit` leaves no marker, so nothing looks complete. OutputError (gpusched.io_error.601) names the file.
///
///   OutputFolder f(dir, run_output_names());
///   f.write("jobs.csv", [&](std::ostream& o) { ... });
///   f.commit({"meta.json", "summary.json"});
class OutputFolder {
 public:
  OutputFolder(std::filesystem::path dir, std::vector<std::string> known) : dir_(std::move(dir)), known_(std::move(known)) {
    std::error_code ec;
    created_ = !std::filesystem::exists(dir_, ec);
    std::filesystem::create_directories(dir_, ec);
    if (ec) fail(dir_, "cannot create the output folder: " + ec.message());
    remove_orphaned_staging();
    static std::atomic<unsigned> counter{0};
    for (int attempt = 0;; ++attempt) {
      staging_ = dir_ / (".gpusched-staging-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
      if (std::filesystem::create_directory(staging_, ec)) break;
      if (ec || attempt > 100) {
        staging_.clear();
        fail(dir_, "cannot create a staging folder in the output folder: " + (ec ? ec.message() : std::string("name taken")));
      }
    }
  }
  ~OutputFolder() {
    if (staging_.empty()) return;   // committed
    std::error_code ec;
    std::filesystem::remove_all(staging_, ec);
    if (created_) std::filesystem::remove(dir_, ec);   // made for this run and still empty: gone again
  }
  OutputFolder(const OutputFolder&) = delete;
  OutputFolder& operator=(const OutputFolder&) = delete;

  /// Staging folders left by a process that died before it could clean up (SIGKILL, power loss):
  /// `.gpusched-staging-<pid>-<n>` whose pid no longer runs. A live writer's folder is left alone.
  void remove_orphaned_staging() const {
    std::error_code ec;
    const std::string prefix = ".gpusched-staging-";
    for (std::filesystem::directory_iterator it(dir_, ec), end; !ec && it != end; it.increment(ec)) {
      const auto name = it->path().filename().string();
      if (name.rfind(prefix, 0) != 0) continue;
      const auto rest = name.substr(prefix.size());
      const auto dash = rest.find('-');
      if (dash == std::string::npos || dash == 0 || rest.find_first_not_of("0123456789") != dash) continue;
      long pid = 0;
      try {
        pid = std::stol(rest.substr(0, dash));
      } catch (const std::exception&) {
        continue;
      }
      if (pid <= 0 || pid == static_cast<long>(::getpid())) continue;
      if (::kill(static_cast<pid_t>(pid), 0) == -1 && errno == ESRCH) {
        std::error_code rm;
        std::filesystem::remove_all(it->path(), rm);
      }
    }
  }

  /// Writes one file (into the staging folder) through `body`.
  void write(const std::string& name, const std::function<void(std::ostream&)>& body) {
    throw_if_interrupted();
    const auto final_path = dir_ / name;
    {
      std::ofstream out(staging_ / name, std::ios::binary);
      if (!out) fail(final_path, "cannot write the file");
      body(out);
      out.flush();
      if (!out) fail(final_path, "write failed (disk full?)");
      out.close();
      if (!out) fail(final_path, "write failed (disk full?)");
    }
    names_.push_back(name);
    written_.push_back(final_path);
  }
  /// Writes one file holding `bytes`.
  void write_bytes(const std::string& name, const std::string& bytes) {
    write(name, [&](std::ostream& o) { o.write(bytes.data(), static_cast<std::streamsize>(bytes.size())); });
  }

  /// Moves the files into place: the earlier run's `markers` are removed first, then every other
  /// file is moved, then the earlier run's known files this run did not write are removed, and
  /// last the markers written, in the order given. Throws InterruptedError when an interruption
  /// is pending (nothing moved), OutputError when a move fails (no marker left).
  void commit(const std::vector<std::string>& markers) {
    throw_if_interrupted();
    auto is_marker = [&](const std::string& n) { return std::find(markers.begin(), markers.end(), n) != markers.end(); };
    auto was_written = [&](const std::string& n) { return std::find(names_.begin(), names_.end(), n) != names_.end(); };
    for (const auto& m : markers) remove_ours(dir_ / m);
    for (const auto& n : names_) {
      if (!is_marker(n)) move_into_place(n);
    }
    for (const auto& n : known_) {
      if (!was_written(n)) remove_ours(dir_ / n);
    }
    for (const auto& m : markers) {
      if (was_written(m)) move_into_place(m);
    }
    std::error_code ec;
    std::filesystem::remove_all(staging_, ec);
    staging_.clear();
  }

  /// The paths written (as they are after commit), in order.
  [[nodiscard]] const std::vector<std::filesystem::path>& written() const { return written_; }

 private:
  [[noreturn]] static void fail(const std::filesystem::path& path, const std::string& message) {
    throw_error(ErrorCode::kOutputWrite, {path.string(), 0, ""}, message);
  }
  /// Removes a file (or a link) an earlier run left; never a folder or anything else.
  static void remove_ours(const std::filesystem::path& path) {
    std::error_code ec;
    const auto st = std::filesystem::symlink_status(path, ec);
    if (ec || !(std::filesystem::is_regular_file(st) || std::filesystem::is_symlink(st))) return;
    if (!std::filesystem::remove(path, ec) && ec) fail(path, "cannot remove the file of an earlier run: " + ec.message());
  }
  void move_into_place(const std::string& name) {
    std::error_code ec;
    std::filesystem::rename(staging_ / name, dir_ / name, ec);
    if (ec) fail(dir_ / name, "cannot move the file into place: " + ec.message());
  }

  std::filesystem::path dir_, staging_;
  bool created_ = false;
  std::vector<std::string> known_, names_;
  std::vector<std::filesystem::path> written_;
};

/// Writes one file atomically: into a hidden temporary file beside it, then renamed over it.
/// OutputError (gpusched.io_error.601) naming `path` when it cannot be written.
inline void write_file_atomically(const std::filesystem::path& path, const std::string& bytes) {
  const auto parent = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
  static std::atomic<unsigned> counter{0};
  const auto tmp = parent / ("." + path.filename().string() + ".gpusched-tmp-" + std::to_string(::getpid()) + "-" +
                             std::to_string(counter++));
  auto fail = [&](const std::string& message) {
    std::error_code ec;
    std::filesystem::remove(tmp, ec);
    throw_error(ErrorCode::kOutputWrite, {path.string(), 0, ""}, message);
  };
  {
    std::ofstream out(tmp, std::ios::binary);
    if (!out) fail("cannot write the file");
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.close();
    if (!out) fail("write failed (disk full?)");
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) fail("cannot write the file: " + ec.message());
}

}  // namespace gpusched::scenario::detail
