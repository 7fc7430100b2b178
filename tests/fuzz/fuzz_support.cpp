// Helpers shared by every fuzz target (both builds; see fuzz_target.hpp).
#include "fuzz_target.hpp"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <system_error>

namespace gpusched::fuzz {
namespace {

struct Scratch {
  std::filesystem::path dir;
  Scratch() {
    dir = std::filesystem::temp_directory_path() / ("gpusched-fuzz-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
  }
  ~Scratch() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
};

}  // namespace

const std::filesystem::path& scratch_dir() {
  static const Scratch scratch;
  return scratch.dir;
}

std::filesystem::path write_scratch_file(const std::string& name, std::string_view text) {
  std::filesystem::path path = scratch_dir() / name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  out.close();
  if (!out) std::abort();   // the harness itself failed (disk full?): not a parser finding, but stop
  return path;
}

}  // namespace gpusched::fuzz
