// Event queue: push/pop throughput of the (time, seq) binary heap with lazy cancellation.
//
//   BM_EventQueue_PushPop/N     push N events at random times, then pop all. items = N events.
//   BM_EventQueue_CancelHalf/N  push N, cancel a random half (lazy), pop the rest. items = N events.
//   BM_EventQueue_Hold/N        the simulation's steady state ("hold" model): a queue of N
//                               live events; each item pops the earliest and pushes one later.
//
// Times are drawn from gpusched::Rng (seeded), outside the timed region where possible.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

#include <gpusched/rng.hpp>
#include <gpusched/sim/event_queue.hpp>

namespace {

using gpusched::JobId;
using gpusched::Rng;
using gpusched::SimTime;
using gpusched::sim::EventId;
using gpusched::sim::EventQueue;
using gpusched::sim::JobArrival;
using gpusched::sim::JobFinish;

/// N event times spread uniformly over ~one simulated day (many distinct times, few ties).
std::vector<SimTime> random_times(std::size_t n, std::uint64_t seed) {
  Rng rng(seed);
  std::vector<SimTime> t(n);
  for (auto& x : t) x = SimTime::from_us(static_cast<std::int64_t>(rng.below(86'400'000'000ULL)));
  return t;
}

void BM_EventQueue_PushPop(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const auto times = random_times(n, 42);
  std::int64_t sink = 0;
  for (auto _ : state) {
    EventQueue q;
    q.reserve(n);
    for (std::size_t i = 0; i < n; ++i) q.push(times[i], JobArrival{JobId{static_cast<std::uint32_t>(i)}});
    while (!q.empty()) sink += q.pop().time.us;
    benchmark::DoNotOptimize(sink);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(n));
  state.counters["events"] = static_cast<double>(n);
}

void BM_EventQueue_CancelHalf(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const auto times = random_times(n, 43);
  // Which events to cancel: a random half, decided once.
  std::vector<std::uint8_t> cancel(n, 0);
  Rng pick(44);
  for (auto& c : cancel) c = static_cast<std::uint8_t>(pick.next() & 1U);
  std::vector<EventId> ids(n);
  std::int64_t sink = 0;
  for (auto _ : state) {
    EventQueue q;
    q.reserve(n);
    for (std::size_t i = 0; i < n; ++i) ids[i] = q.push(times[i], JobFinish{JobId{static_cast<std::uint32_t>(i)}});
    for (std::size_t i = 0; i < n; ++i) {
      if (cancel[i]) q.cancel(ids[i]);
    }
    while (!q.empty()) sink += q.pop().time.us;
    benchmark::DoNotOptimize(sink);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(n));
  state.counters["events"] = static_cast<double>(n);
}

void BM_EventQueue_Hold(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const auto times = random_times(n, 45);
  Rng rng(46);
  // Increments: ~log-normal-ish job durations are not needed here; uniform up to one hour.
  std::vector<std::int64_t> inc(1 << 16);
  for (auto& x : inc) x = 1 + static_cast<std::int64_t>(rng.below(3'600'000'000ULL));
  EventQueue q;
  q.reserve(n + 1);
  for (std::size_t i = 0; i < n; ++i) q.push(times[i], JobFinish{JobId{static_cast<std::uint32_t>(i)}});
  std::size_t k = 0;
  for (auto _ : state) {
    const auto e = q.pop();
    q.push(SimTime::from_us(e.time.us + inc[k++ & (inc.size() - 1)]), e.event);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
  state.counters["queue_size"] = static_cast<double>(n);
}

}  // namespace

BENCHMARK(BM_EventQueue_PushPop)->RangeMultiplier(10)->Range(1'000, 1'000'000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_EventQueue_CancelHalf)->RangeMultiplier(10)->Range(1'000, 1'000'000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_EventQueue_Hold)->RangeMultiplier(10)->Range(1'000, 1'000'000);
