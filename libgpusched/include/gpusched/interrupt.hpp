#pragma once
/// Interruption of long runs: a process-wide flag that a signal handler (the CLI's SIGINT/SIGTERM)
/// or a host (Python's PyErr_CheckSignals) sets, and that the engine polls every few thousand
/// events. A run that sees it throws InterruptedError (gpusched.io_error.602) and writes nothing.
#include <atomic>

namespace gpusched {

/// Async-signal-safe: only a lock-free atomic store.
void request_interrupt() noexcept;
/// Clears the flag (call before starting a run that should be interruptible afresh).
void clear_interrupt() noexcept;
[[nodiscard]] bool interrupt_requested() noexcept;

/// An extra check the engine calls along with the flag (Python installs one that runs
/// PyErr_CheckSignals with the GIL held and returns true when a KeyboardInterrupt is pending).
/// Thread-local: each thread running a simulation has its own. nullptr = none.
using InterruptPoll = bool (*)();
void set_thread_interrupt_poll(InterruptPoll poll) noexcept;
[[nodiscard]] InterruptPoll thread_interrupt_poll() noexcept;

/// Throws InterruptedError (gpusched.io_error.602) when the flag is set or this thread's poll
/// reports an interruption; else returns. The poll may be costly (Python takes the GIL): call
/// this every few thousand events, not every one.
void throw_if_interrupted();

}  // namespace gpusched
