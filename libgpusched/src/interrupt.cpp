#include <gpusched/interrupt.hpp>

#include <gpusched/error.hpp>

namespace gpusched {
namespace {
std::atomic<bool> g_interrupt{false};
static_assert(std::atomic<bool>::is_always_lock_free, "the interrupt flag must be signal-safe");
thread_local InterruptPoll t_poll = nullptr;
}  // namespace

void request_interrupt() noexcept { g_interrupt.store(true, std::memory_order_relaxed); }
void clear_interrupt() noexcept { g_interrupt.store(false, std::memory_order_relaxed); }
bool interrupt_requested() noexcept { return g_interrupt.load(std::memory_order_relaxed); }
void set_thread_interrupt_poll(InterruptPoll poll) noexcept { t_poll = poll; }
InterruptPoll thread_interrupt_poll() noexcept { return t_poll; }

void throw_if_interrupted() {
  const InterruptPoll poll = t_poll;
  if (interrupt_requested() || (poll != nullptr && poll())) {
    throw InterruptedError(ErrorCode::kInterrupted, {}, "the run was interrupted; nothing was written");
  }
}

}  // namespace gpusched
