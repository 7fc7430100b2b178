#pragma once
/// Simulated time: integer microseconds, never a double.
#include <compare>
#include <cmath>
#include <cstdint>
#include <limits>

namespace gpusched {

/// A point in (or span of) simulated time, in microseconds. `SimTime::forever()` means "never".
struct SimTime {
  std::int64_t us = 0;

  static constexpr SimTime from_us(std::int64_t v) { return SimTime{v}; }
  static constexpr SimTime from_seconds(std::int64_t s) { return SimTime{s * 1'000'000}; }
  /// Rounds to the nearest microsecond. Precondition: finite, |s| < 9.2e12.
  static SimTime from_seconds_f(double s) { return SimTime{static_cast<std::int64_t>(std::llround(s * 1e6))}; }
  static constexpr SimTime forever() { return SimTime{std::numeric_limits<std::int64_t>::max()}; }
  static constexpr SimTime zero() { return SimTime{0}; }

  [[nodiscard]] constexpr bool is_forever() const { return us == std::numeric_limits<std::int64_t>::max(); }
  [[nodiscard]] constexpr double seconds() const { return static_cast<double>(us) / 1e6; }

  constexpr auto operator<=>(const SimTime&) const = default;
  /// Saturating add: forever + x = forever.
  friend constexpr SimTime operator+(SimTime a, SimTime b) {
    if (a.is_forever() || b.is_forever()) return forever();
    return SimTime{a.us + b.us};
  }
  friend constexpr SimTime operator-(SimTime a, SimTime b) { return SimTime{a.us - b.us}; }
};

inline constexpr SimTime kSecond = SimTime::from_us(1'000'000);

/// The largest time-like value (a time or a span, in seconds) any input may give: 10^10 s, about
/// 317 years. Sums of a handful of such values (submit + duration + delays, times slow-downs up to
/// 100x) stay far below the clock's limit (9.2e12 s), so no input can overflow the clock.
/// Readers reject larger values with an `out of range` error naming the field.
inline constexpr double kMaxInputSeconds = 1e10;
/// The smallest positive time-like value an input may give where the format says "> 0": one
/// microsecond, the clock's tick. Smaller positive values would round to 0.
inline constexpr double kMinPositiveSeconds = 1e-6;
/// The deepest JSON nesting any reader accepts (scenario, profile, trace, kubectl files).
inline constexpr int kMaxJsonDepth = 256;

}  // namespace gpusched
