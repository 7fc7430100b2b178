// Plain driver for the fuzz targets in the normal (gcc) build: what `make test` runs as ctest
// fuzz_smoke_<target>.
//
//   gpusched_fuzz_smoke TARGET [--seconds S] [--runs N] [--seed N] [--max-len N] [--verbose] DIR|FILE...
//   gpusched_fuzz_smoke --list
//
// 1. Replays every file of the given folders (sorted by name) and files: the seed corpus and the
//    regression inputs that once crashed.
// 2. Then feeds seeded, deterministic mutations of them (bit flips, byte changes, inserts,
//    deletes, duplicated ranges, boundary tokens such as 1e999 or 9223372036854775808, splices of
//    two inputs) until S seconds or N inputs, whichever comes first: the same seed tries the
//    same inputs in the same order.
//
// This is a smoke and regression check, NOT a replacement for libFuzzer: no coverage feedback,
// no sanitizers, a few thousand inputs. `make fuzz` runs the real thing (tests/fuzz/README.md).
//
// A finding (an exception other than gpusched::Error, a crash signal, an input running longer
// than 10 s) prints the target and what happened, writes the input to
// fuzz-finding-<target>.bin in the working folder, and exits non-zero.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cctype>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <typeinfo>
#include <string>
#include <vector>

#include "fuzz_target.hpp"

namespace gpusched::fuzz {
namespace {

std::map<std::string, TargetFn>& targets() {
  static std::map<std::string, TargetFn> all;
  return all;
}

// What the signal handler needs, set before each input (async-signal-safe access only).
const std::string* g_current = nullptr;
char g_finding_path[512] = {};
char g_target_name[128] = {};
constexpr unsigned kHangSeconds = 10;

void write_all(int fd, const char* p, std::size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w <= 0) return;
    p += w;
    n -= static_cast<std::size_t>(w);
  }
}

void save_current_input() {
  if (g_current == nullptr) return;
  const int fd = ::open(g_finding_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return;
  write_all(fd, g_current->data(), g_current->size());
  ::close(fd);
}

extern "C" void on_signal(int sig) {
  const char* what = sig == SIGALRM ? "hang (input ran longer than 10 s)" : ::strsignal(sig);
  write_all(2, "fuzz_smoke ", 11);
  write_all(2, g_target_name, std::strlen(g_target_name));
  write_all(2, ": FINDING: ", 11);
  write_all(2, what, std::strlen(what));
  write_all(2, "; input written to ", 19);
  write_all(2, g_finding_path, std::strlen(g_finding_path));
  write_all(2, "\n", 1);
  save_current_input();
  ::signal(sig, SIG_DFL);
  ::signal(SIGABRT, SIG_DFL);   // a hang ends as an abort, reported once
  ::raise(sig == SIGALRM ? SIGABRT : sig);
}

void install_handlers() {
  static std::vector<char> alt(1 << 16);   // deep recursion overflows the stack: handle it elsewhere
  stack_t ss{};
  ss.ss_sp = alt.data();
  ss.ss_size = alt.size();
  ::sigaltstack(&ss, nullptr);
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sa.sa_flags = SA_ONSTACK;
  ::sigemptyset(&sa.sa_mask);
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGALRM}) ::sigaction(sig, &sa, nullptr);
}

/// splitmix64: small, and the same numbers on every platform and standard library.
struct Rng {
  std::uint64_t s;
  std::uint64_t next() {
    std::uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  std::size_t below(std::size_t n) { return n == 0 ? 0 : static_cast<std::size_t>(next() % n); }
};

/// Boundary values and syntax fragments the parsers meet: numbers at the edges of int32, int64,
/// double and the microsecond clock, non-numbers, JSON / CSV / XML / YAML punctuation, bad UTF-8.
const std::vector<std::string>& tokens() {
  static const std::vector<std::string> all = {
      "-1", "0", "1", "-0", "1.5", "1e999", "-1e999", "1e-30", "1e30", "1e10", "1e13", "NaN", "nan", "inf", "-inf",
      "9223372036854775807", "9223372036854775808", "-9223372036854775808", "2147483647", "2147483648",
      "4294967296", "18446744073709551615", "18446744073709551616", "99999999999999999999999", "0x10", "1e", ".",
      "\"\"", "null", "true", "false", "[]", "{}", "[[[[[[[[[[[[[[[[", "{\"a\":{\"a\":{\"a\":", "\"x\":", ",", ",,",
      "\n", "\r\n", "\"", "'", "\\", "\\u0000", "\\ud800", std::string("\0", 1), "\xff", "\xc3\x28", "\xe2\x82",
      "Gi", "Mi", "Ki", "m", "Ti", "Ei", "e18", "NV4", "NV18", "SYS", "PIX", "X", "0-2147483647", "0-9223372036854775807",
      "N/A", "-", ";", "\t", " ", "<", "</", "/>", "&amp;", "<![CDATA[", "]]>", "---\n", "- ", ": ", "&a", "*a", "!!",
      "2023-01-01 00:00:00", "9999-12-31 23:59:59", "kind", "List", "items", "Node", "Pod"};
  return all;
}

std::string mutate(const std::string& in, const std::vector<std::string>& pool, Rng& rng, std::size_t max_len) {
  std::string s = in;
  const std::size_t rounds = 1 + rng.below(4);
  for (std::size_t r = 0; r < rounds; ++r) {
    const std::size_t at = rng.below(s.size() + 1);
    switch (rng.below(9)) {
      case 0:   // flip one bit
        if (!s.empty()) s[rng.below(s.size())] ^= static_cast<char>(1u << rng.below(8));
        break;
      case 1:   // any byte
        if (!s.empty()) s[rng.below(s.size())] = static_cast<char>(rng.below(256));
        break;
      case 2: {  // a byte that means something to some parser
        static const char kSyntax[] = "0123456789-+.,;:eE\"'{}[]<>/\\ \t\n\r#=|&*!";
        if (!s.empty()) s[rng.below(s.size())] = kSyntax[rng.below(sizeof kSyntax - 1)];
        break;
      }
      case 3:   // insert random bytes
        s.insert(at, std::string(1 + rng.below(4), static_cast<char>(rng.below(256))));
        break;
      case 4:   // delete a range
        if (!s.empty()) s.erase(std::min(at, s.size() - 1), 1 + rng.below(16));
        break;
      case 5: {  // duplicate a range somewhere
        if (s.empty()) break;
        const std::size_t from = rng.below(s.size());
        const std::string piece = s.substr(from, 1 + rng.below(64));
        s.insert(rng.below(s.size() + 1), piece);
        break;
      }
      case 6:   // insert a token
        s.insert(at, tokens()[rng.below(tokens().size())]);
        break;
      case 7: {  // replace a number (or what stands at `at`) by a token
        std::size_t b = std::min(at, s.size());
        std::size_t e = b;
        while (e < s.size() && (std::isdigit(static_cast<unsigned char>(s[e])) || s[e] == '.' || s[e] == '-')) ++e;
        s.replace(b, e - b, tokens()[rng.below(tokens().size())]);
        break;
      }
      default: {  // splice: our head, another input's tail
        const std::string& other = pool[rng.below(pool.size())];
        s = s.substr(0, at) + other.substr(rng.below(other.size() + 1));
        break;
      }
    }
  }
  if (s.size() > max_len) s.resize(max_len);
  return s;
}

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::uint64_t name_seed(const std::string& name) {   // FNV-1a: a stable default seed per target
  std::uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : name) h = (h ^ c) * 1099511628211ULL;
  return h;
}

int usage() {
  std::cerr << "usage: gpusched_fuzz_smoke TARGET [--seconds S] [--runs N] [--seed N] [--max-len N] [--verbose] DIR|FILE...\n"
               "       gpusched_fuzz_smoke --list\n";
  return 2;
}

int main_impl(int argc, char** argv) {
  if (argc >= 2 && std::string(argv[1]) == "--list") {
    for (const auto& [name, fn] : targets()) std::cout << name << "\n";
    return 0;
  }
  if (argc < 2) return usage();
  const std::string target = argv[1];
  const auto it = targets().find(target);
  if (it == targets().end()) {
    std::cerr << "gpusched_fuzz_smoke: no target '" << target << "' (--list names them)\n";
    return 2;
  }
  double seconds = 3;
  std::uint64_t runs = UINT64_MAX;
  std::uint64_t seed = name_seed(target);
  std::size_t max_len = 65536;
  bool verbose = false;
  std::vector<std::filesystem::path> files;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) std::exit(usage());
      return argv[++i];
    };
    if (a == "--seconds") seconds = std::stod(value());
    else if (a == "--runs") runs = std::stoull(value());
    else if (a == "--seed") seed = std::stoull(value());
    else if (a == "--max-len") max_len = std::stoull(value());
    else if (a == "--verbose") verbose = true;
    else if (std::filesystem::is_directory(a)) {
      std::vector<std::filesystem::path> in_dir;
      for (const auto& e : std::filesystem::directory_iterator(a)) {
        if (e.is_regular_file() && e.path().filename().string().rfind('.', 0) != 0) in_dir.push_back(e.path());
      }
      std::sort(in_dir.begin(), in_dir.end());
      files.insert(files.end(), in_dir.begin(), in_dir.end());
    } else if (std::filesystem::is_regular_file(a)) {
      files.emplace_back(a);
    } else if (!std::filesystem::exists(a)) {
      // A target without regressions has no regressions/<target> folder: nothing to replay.
    } else {
      return usage();
    }
  }
  std::snprintf(g_target_name, sizeof g_target_name, "%s", target.c_str());
  std::snprintf(g_finding_path, sizeof g_finding_path, "fuzz-finding-%s.bin", target.c_str());
  install_handlers();

  const TargetFn fn = it->second;
  std::string current;
  auto run_one = [&](const std::string& input, const std::string& label) {
    current = input;
    g_current = &current;
    ::alarm(kHangSeconds);
    try {
      (void)fn(reinterpret_cast<const std::uint8_t*>(current.data()), current.size());
    } catch (const std::exception& e) {
      ::alarm(0);
      save_current_input();
      std::cerr << "fuzz_smoke " << target << ": FINDING: " << label << " threw " << typeid(e).name() << " (not a gpusched::Error): "
                << e.what() << "; input written to " << g_finding_path << "\n";
      std::exit(1);
    } catch (...) {
      ::alarm(0);
      save_current_input();
      std::cerr << "fuzz_smoke " << target << ": FINDING: " << label << " threw a non-std exception; input written to "
                << g_finding_path << "\n";
      std::exit(1);
    }
    ::alarm(0);
  };

  std::vector<std::string> pool;
  std::size_t rejected = 0;
  for (const auto& f : files) {
    pool.push_back(read_file(f));
    run_one(pool.back(), f.string());
    if (!last_rejection.empty()) ++rejected;
    if (verbose) std::cout << f.string() << ": " << (last_rejection.empty() ? "accepted" : last_rejection) << "\n";
  }
  if (pool.empty()) pool.emplace_back();
  Rng rng{seed};
  const auto start = std::chrono::steady_clock::now();
  const auto budget = std::chrono::duration<double>(seconds);
  std::uint64_t done = 0;
  while (done < runs && std::chrono::steady_clock::now() - start < budget) {
    // Mostly mutate a corpus input; sometimes keep mutating the last one (deeper changes).
    const std::string& base = (done % 4 == 3) ? current : pool[rng.below(pool.size())];
    const std::string input = mutate(base, pool, rng, max_len);
    run_one(input, "mutated input #" + std::to_string(done));
    ++done;
  }
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << "fuzz_smoke " << target << ": replayed " << files.size() << " files (" << rejected
            << " rejected with a gpusched::Error), then " << done
            << " mutated inputs in " << took << " s (seed " << seed << "): no finding\n";
  return 0;
}

}  // namespace

bool register_target(const char* name, TargetFn fn) {
  targets().emplace(name, fn);
  return true;
}

}  // namespace gpusched::fuzz

int main(int argc, char** argv) { return gpusched::fuzz::main_impl(argc, argv); }
