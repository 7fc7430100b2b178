#pragma once
/// Fragmentation metrics of a run (the FGD paper's measures), sampled after every scheduling
/// decision: the GPU demand that has arrived, what is allocated, and how much of the idle GPU
/// capacity the workload's typical pod types cannot use.
///
/// Definitions (fgd.md): arrived demand % = GPU milli requested by the jobs submitted so far /
/// cluster GPU milli (finished jobs still count: it is cumulative); unallocated % = 100 -
/// allocated milli / cluster milli; fragmentation % = sum over nodes of F_n / cluster milli;
/// fragmentation ratio % = fragmentation / idle GPU milli (policies/fgd/fragmentation.hpp).
///
/// Example:
///   FragmentationRecorder frag(policies::fgd::typical_pod_types(original_trace));
///   engine.add_observer(&frag);
///   engine.run();
///   for (const auto& row : frag.curve()) ...   // one row per integer arrived %
#include <cstdint>
#include <ostream>
#include <span>
#include <vector>

#include <gpusched/policies/fgd/fragmentation.hpp>
#include <gpusched/sim/engine.hpp>
#include <gpusched/sim/observer.hpp>
#include <gpusched/sim/outputs.hpp>

namespace gpusched::scenario {

/// The state right after one decision (a job placed, or failed for good); the first sample is
/// the starting state (decision 0).
struct FragmentationSample {
  SimTime t;
  std::int64_t decisions = 0;     ///< jobs placed or failed before this state
  double arrived_pct = 0;         ///< GPU demand submitted so far / cluster GPU capacity
  double unallocated_pct = 0;     ///< 100 - allocated GPU %
  double frag_pct = 0;            ///< fragmentation / cluster GPU capacity
  double frag_ratio_pct = 0;      ///< fragmentation / idle GPU capacity (0 when nothing is idle)
};

/// One row per integer arrived % from 0 to the first integer at or above the last arrived
/// demand: the state after the last decision whose arrived demand was at most that percentage
/// (at the top: the final state, when arrivals stopped just short of it, as the FGD protocol's
/// do at 130%).
struct CurvePoint {
  std::int32_t arrived_pct = 0;
  double unallocated_pct = 0, frag_pct = 0, frag_ratio_pct = 0;
};

class FragmentationRecorder final : public sim::Observer {
 public:
  /// `types`: the target workload (typical pod types of the trace the policies see).
  explicit FragmentationRecorder(std::vector<policies::fgd::PodType> types);

  void on_start(const sim::Engine& e) override;
  void on_submit(SimTime t, JobId j, const sim::Engine& e) override;
  void on_job_start(SimTime t, JobId j, std::span<const TaskPlacement> p, const sim::Engine& e) override;
  void on_job_fail(SimTime t, JobId j, std::string_view reason, const sim::Engine& e) override;
  void on_job_finish(SimTime t, JobId j, const sim::Engine& e) override;
  void on_job_requeue(SimTime, JobId, std::string_view, const sim::Engine&) override { all_dirty_ = true; }
  void on_node(SimTime, NodeId, bool, const sim::Engine&) override { all_dirty_ = true; }

  [[nodiscard]] const std::vector<FragmentationSample>& samples() const { return samples_; }
  /// The curve (see CurvePoint).
  [[nodiscard]] std::vector<CurvePoint> curve() const;

 private:
  void sample(SimTime t, const sim::Engine& e);
  void touch(std::span<const TaskPlacement> placements);
  /// Brings the per-node sums up to date: only the nodes touched since the last sample, or all
  /// of them after an eviction, requeue or node event (which may change any node).
  void refresh(const ClusterState& c, const sim::Engine& e);
  policies::fgd::FragmentationCache cache_;
  // Per node: FGD's weighted fragment (integer, exact) and idle GPU milli; their sums.
  std::vector<std::int64_t> weighted_, idle_;
  std::int64_t weighted_sum_ = 0, idle_sum_ = 0;
  std::vector<std::uint32_t> dirty_;
  std::vector<std::uint8_t> is_dirty_;
  bool all_dirty_ = true;
  std::uint64_t evictions_seen_ = 0;
  std::int64_t arrived_milli_ = 0, capacity_milli_ = 0, decisions_ = 0;
  std::vector<FragmentationSample> samples_;
};

/// fragmentation.csv: the header row (`t_s,decisions,arrived_pct,unallocated_pct,frag_pct,frag_ratio_pct`),
/// then one row per decision.
void write_fragmentation_csv(std::ostream& out, std::span<const FragmentationSample> samples);

/// True when some job of `workload` asks for a share of a GPU (the runs that report fragmentation).
[[nodiscard]] bool has_gpu_sharing(std::span<const JobSpec> workload);

}  // namespace gpusched::scenario
