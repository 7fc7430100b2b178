#pragma once
/// One fuzz target per input parser (tests/fuzz/README.md). A target is written once:
///
///   GPUSCHED_FUZZ_TARGET(swf) {
///     return fuzz::expect_errors([&] { (void)traces::read_swf(...); });
///   }
///
/// and built two ways:
///  - with GPUSCHED_LIBFUZZER (clang -fsanitize=fuzzer,address,undefined, `make fuzz`): the body
///    is LLVMFuzzerTestOneInput, one executable per target;
///  - otherwise it registers itself under its name with the plain driver smoke_main.cpp, which
///    `make test` runs as ctest `fuzz_smoke_<name>` (replay + a few seconds of simple mutations).
///
/// Contract: bad input may throw gpusched::Error (the library's own errors, with ids). Anything
/// else escaping a target -- another exception, a crash, a sanitizer report, a hang -- is a finding.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include <gpusched/error.hpp>

namespace gpusched::fuzz {

using TargetFn = int (*)(const std::uint8_t* data, std::size_t size);

/// Registers a target with the smoke driver (not used by the libFuzzer build).
bool register_target(const char* name, TargetFn fn);

/// The input as text (not NUL-terminated; parsers take string_view or a stream).
inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

/// Runs `f`; a gpusched::Error is the expected answer to bad input and is swallowed. Anything
/// else propagates (std::terminate -> abort: the fuzzer records the input).
/// The message of the gpusched::Error the last input was rejected with ("" = accepted): the smoke
/// driver's --verbose shows it, so one can check that the seeds are accepted.
inline std::string last_rejection;

template <class F>
int expect_errors(F&& f) {
  last_rejection.clear();
  try {
    f();
  } catch (const gpusched::Error& e) {
    last_rejection = e.what();
    if (last_rejection.empty()) last_rejection = "(empty message)";
  }
  return 0;
}

/// A folder private to this process (created on first use, under the system temp folder), for
/// targets whose parser reads files. Removed at exit.
const std::filesystem::path& scratch_dir();
/// Writes `text` to scratch_dir()/name and returns the path.
std::filesystem::path write_scratch_file(const std::string& name, std::string_view text);

}  // namespace gpusched::fuzz

#if defined(GPUSCHED_LIBFUZZER)
#define GPUSCHED_FUZZ_TARGET(name) \
  extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
#else
#define GPUSCHED_FUZZ_TARGET(name)                                                                            \
  static int gpusched_fuzz_##name(const std::uint8_t* data, std::size_t size);                                \
  [[maybe_unused]] static const bool gpusched_fuzz_registered_##name =                                        \
      ::gpusched::fuzz::register_target(#name, &gpusched_fuzz_##name);                                        \
  static int gpusched_fuzz_##name(const std::uint8_t* data, std::size_t size)
#endif
