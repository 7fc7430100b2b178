#pragma once
/// Randomness: one seed per run, one named stream per consumer, our own samplers
/// (std::*_distribution differs between standard libraries; these do not).
///
/// Example:
///   RngStreams streams(42);
///   Rng arrivals = streams.stream("workload.arrivals");
///   double gap = arrivals.exponential(1.0 / 60.0);
#include <cmath>
#include <cstdint>
#include <string_view>

namespace gpusched {

/// xoshiro256** seeded through SplitMix64. Period 2^256 - 1.
class Rng {
 public:
  explicit Rng(std::uint64_t seed);
  std::uint64_t next();
  /// Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  /// Uniform integer in [0, n). Unbiased (Lemire). Precondition: n > 0.
  std::uint64_t below(std::uint64_t n);
  /// Exponential with the given rate (mean 1/rate). Precondition: rate > 0.
  double exponential(double rate) { return -std::log1p(-uniform()) / rate; }
  /// Standard normal (Box-Muller, one value per call).
  double normal();
  /// Log-normal with the given median and shape sigma.
  double lognormal(double median, double sigma) { return median * std::exp(sigma * normal()); }

 private:
  std::uint64_t s_[4];
};

/// Derives independent streams from one run seed: stream(name) depends only on (seed, name),
/// so adding a consumer never shifts another's numbers.
class RngStreams {
 public:
  explicit RngStreams(std::uint64_t seed) : seed_(seed) {}
  [[nodiscard]] Rng stream(std::string_view name) const;
  [[nodiscard]] std::uint64_t seed() const { return seed_; }

 private:
  std::uint64_t seed_;
};

/// FNV-1a 64-bit hash (stable across platforms; used for stream names and input digests).
std::uint64_t fnv1a64(std::string_view data, std::uint64_t h = 0xcbf29ce484222325ULL);

}  // namespace gpusched
