#pragma once
// Writing output folders (private to the scenario component): run outputs and experiment outputs.
#include <filesystem>
#include <fstream>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include <gpusched/error.hpp>

namespace gpusched::scenario::detail {

/// Creates `dir` and writes files into it, each through a callback; OutputError (naming the file)
/// when the folder cannot be made or a file cannot be written completely.
class OutputFolder {
 public:
  explicit OutputFolder(std::filesystem::path dir) : dir_(std::move(dir)) {
    std::error_code ec;
    std::filesystem::create_directories(dir_, ec);
    if (ec) throw_error(ErrorCode::kOutputWrite, {dir_.string(), 0, ""}, "cannot create the output folder: " + ec.message());
  }
  void write(const std::string& name, const std::function<void(std::ostream&)>& body) {
    const auto path = dir_ / name;
    std::ofstream out(path, std::ios::binary);
    if (!out) throw_error(ErrorCode::kOutputWrite, {path.string(), 0, ""}, "cannot write the file");
    body(out);
    out.flush();
    if (!out) throw_error(ErrorCode::kOutputWrite, {path.string(), 0, ""}, "write failed (disk full?)");
    written_.push_back(path);
  }
  /// The paths written so far, in order.
  [[nodiscard]] const std::vector<std::filesystem::path>& written() const { return written_; }

 private:
  std::filesystem::path dir_;
  std::vector<std::filesystem::path> written_;
};

}  // namespace gpusched::scenario::detail
