#pragma once
/// Broken invariants (our bugs, never bad input) stop the program with file:line.
#include <cstdio>
#include <cstdlib>

namespace gpusched::detail {
[[noreturn]] inline void assert_fail(const char* expr, const char* file, int line, const char* msg) {
  std::fprintf(stderr, "gpusched: internal invariant broken: %s (%s) at %s:%d\n", msg, expr, file, line);
  std::abort();
}
}  // namespace gpusched::detail

#define GPUSCHED_ASSERT(cond, msg)                                                     \
  do {                                                                                 \
    if (!(cond)) ::gpusched::detail::assert_fail(#cond, __FILE__, __LINE__, (msg));    \
  } while (false)
