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

}  // namespace gpusched
