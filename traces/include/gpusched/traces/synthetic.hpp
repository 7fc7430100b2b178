#pragma once
/// Built-in synthetic workload: Poisson arrivals, log-normal (heavy-tailed) durations and a
/// request mix like production GPU clusters (CPU-only, fractional-GPU, 1/2/4/8 whole GPUs).
/// Default mix follows the Alibaba 2023 GPU cluster (openb): ~13% CPU-only, ~38% fractional,
/// ~47% one GPU, ~2% multi-GPU.
///
/// Example:
///   SyntheticConfig cfg; cfg.jobs = 20000; cfg.load = 0.85;
///   Workload w = generate(cfg, cluster, RngStreams(42));
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <gpusched/cluster.hpp>
#include <gpusched/job.hpp>
#include <gpusched/rng.hpp>

namespace gpusched::traces {

struct SyntheticMix {
  double cpu_only = 0.13, fractional = 0.38, gpu1 = 0.45, gpu2 = 0.02, gpu4 = 0.01, gpu8 = 0.01;
};

/// Ranges (from_json checks them; schemas/scenario.schema.json "$defs/synthetic" says the same):
///   jobs 0 .. 10^7 (a generated job costs ~600 bytes before the run; 10^7 is ~3x the largest
///   public traces), load 0 .. 1000, arrival_rate_per_hour 0 .. 3.6e9 (one job per microsecond),
///   duration_median_s 1e-6 .. 1e10, duration_min_s / duration_max_s 0 .. 1e10 (kMaxInputSeconds)
///   with min <= max, duration_sigma 0 .. 10, mix weights 0 .. 10^6, gang_fraction 0 .. 1.
/// generate() also rejects a load or rate so low that the arrivals would spread past
/// kMaxInputSeconds. Out-of-range values throw ScenarioError kScenarioOutOfRange naming the field.
struct SyntheticLimits {
  static constexpr std::int64_t kMaxJobs = 10'000'000;
  static constexpr double kMaxLoad = 1000.0;
  static constexpr double kMaxArrivalRatePerHour = 3.6e9;
  static constexpr double kMaxDurationSigma = 10.0;
  static constexpr double kMaxMixWeight = 1e6;
};

struct SyntheticConfig {
  std::int64_t jobs = 1000;
  /// Offered load: GPU-time demanded per unit time / cluster GPUs (CPU for GPU-less clusters).
  /// > 0 sets the arrival rate; 0 uses arrival_rate_per_hour.
  double load = 0.8;
  double arrival_rate_per_hour = 0.0;
  double duration_median_s = 1800.0;   ///< log-normal median
  double duration_sigma = 1.5;         ///< log-normal shape (heavier tail when larger)
  double duration_min_s = 60.0;
  double duration_max_s = 7 * 86400.0;
  SyntheticMix mix;
  std::vector<std::string> queues{"default"};
  /// Share of multi-GPU jobs that run as gangs of 2 tasks (half the GPUs each).
  double gang_fraction = 0.0;
  /// Where the settings came from (errors from generate() name this file and JSON path).
  std::string source;
  std::string path = "workload/synthetic";

  /// Reads {"jobs", "load", ...}; unknown fields throw ScenarioError naming `path`.
  static SyntheticConfig from_json(const nlohmann::json& j, const std::string& source, const std::string& path);
  [[nodiscard]] nlohmann::json to_json() const;
};

/// Generates the workload. Requests are shaped so that every job fits some node of `cluster`
/// (kinds that cannot fit any node are dropped from the mix). Uses the streams
/// workload.kind, workload.shape, workload.duration, workload.arrival, workload.queue.
Workload generate(const SyntheticConfig& cfg, const ClusterState& cluster, const RngStreams& streams);

}  // namespace gpusched::traces
