#pragma once
/// The FGD paper's experiment (Weng et al., USENIX ATC'23; see docs/fgd.md): the Alibaba openb
/// pod list replayed against the openb GPU cluster, pods arriving one at a time and never
/// leaving, until 130% of the cluster's GPU capacity has been requested; unallocated GPU %
/// and fragmentation recorded after every pod; medians over seeds.
///
/// Protocol of one (policy, seed) run:
///  1. the node list is permuted with the seed (stream "experiment.node_order"): ties between
///     equally scored nodes go to the first node in that order;
///  2. the pods are shuffled with the seed (traces::shuffle), then pods drawn uniformly with
///     replacement from the original list are appended until the requested GPU would exceed
///     max_arrived_pct of capacity (traces::resample_to_gpu_milli);
///  3. pods are submitted one at a time, in that order (arrival-only: they never finish); a
///     pod that fits nowhere fails at once (no retry, no preemption);
///  4. the policy's plugins see the original pod list as the target workload (FGD's typical pod
///     types), and FragmentationRecorder samples the cluster after every pod.
///
/// Example:
///   FgdExperiment cfg;
///   cfg.traces = "../shared/traces";
///   cfg.seeds = {42};
///   auto result = run_fgd_experiment(cfg);
///   write_fgd_outputs(result, "out/fgd");
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <span>
#include <string_view>
#include <vector>

#include <gpusched/cluster.hpp>
#include <gpusched/gpu_catalog.hpp>
#include <gpusched/job.hpp>
#include <gpusched/policies/fgd/fragmentation.hpp>
#include <gpusched/scenario/fragmentation.hpp>

namespace gpusched::scenario {

/// The policies of the paper, by the names the experiment takes, in the paper's table order:
/// random, dotprod, clustering, packing, bestfit, fgd.
[[nodiscard]] const std::vector<std::string>& fgd_policy_names();
/// The built-in profile that runs an experiment policy ("bestfit" -> "best-fit").
[[nodiscard]] std::string fgd_profile_for(std::string_view policy);
/// "all" or a comma list of fgd_policy_names(); ScenarioError naming the bad entry otherwise.
[[nodiscard]] std::vector<std::string> parse_fgd_policies(std::string_view text);
/// One seed ("42"), an inclusive range ("42-51") or a comma list of either ("1,5-7"); each seed
/// as parse_seed() reads it, at most 100,000 per range.
[[nodiscard]] std::vector<std::uint64_t> parse_seeds(std::string_view text);
/// A seed: a whole number 0..18446744073709551615 (2^64-1), the one documented seed range (CLI
/// --seed / --seeds, scenario `seed`, Python `seed=`). A negative or larger number is
/// ScenarioError kScenarioOutOfRange, other text kScenarioBadValue, both naming `where`.
[[nodiscard]] std::uint64_t parse_seed(std::string_view text, const Location& where);

/// The openb pod-list variants (openb_pod_list_<name>.csv), as the reference lists them: default,
/// cpu0 ... cpu300 (9), gpushare20 ... gpushare100 (5), gpuspec05 ... gpuspec33 (5), multigpu20 ...
/// multigpu50 (4): 24 in all.
[[nodiscard]] const std::vector<std::string>& fgd_workload_names();
/// "all" (fgd_workload_names()) or a comma list of variant names and pod-list paths ("all" inside
/// the list stands for every variant); duplicates dropped, order kept. Text naming an existing
/// file is one path even when it holds a comma. ScenarioError (field --workload) for an empty
/// entry. A name that is no pod list in the traces folder fails when read (load_fgd_inputs),
/// naming it and listing the known variants.
[[nodiscard]] std::vector<std::string> parse_fgd_workloads(std::string_view text);

struct FgdExperiment {
  /// Folder holding the openb files: the alibaba-gpu-v2023-openb folder itself or a folder
  /// that contains it (e.g. ../shared/traces).
  std::filesystem::path traces;
  /// Pod-list variant ("default", "gpushare80", ... = openb_pod_list_<name>.csv) or a path.
  std::string workload = "default";
  /// Node list: empty = openb_node_list_gpu_node.csv of the traces folder; else a path.
  std::filesystem::path node_list;
  std::vector<std::string> policies = fgd_policy_names();
  std::vector<std::uint64_t> seeds = {42, 43, 44, 45, 46, 47, 48, 49, 50, 51};
  double max_arrived_pct = 130.0;   ///< requested GPU, % of cluster GPU capacity
  double coverage = 0.95;           ///< typical pod types cover this share of the pods
  unsigned threads = 0;             ///< parallel runs; 0 = one per hardware thread
};

/// The inputs every run shares, read once.
struct FgdInputs {
  GpuCatalog catalog;
  ResourceTable resources;
  std::vector<NodeSpec> nodes;
  Workload pods;                                   ///< the pod list as read (file order)
  std::vector<policies::fgd::PodType> types;       ///< its typical pod types
  std::filesystem::path node_source, pod_source;
  std::string workload_name;                       ///< variant name, or the file's stem
};
/// Finds and reads the node and pod lists (TraceError naming a missing file and what was tried;
/// an unknown variant name also lists the known ones).
[[nodiscard]] FgdInputs load_fgd_inputs(const FgdExperiment& cfg);

struct FgdRun {
  std::string policy;
  std::uint64_t seed = 0;
  std::int64_t pods = 0;            ///< pods submitted (original + resampled)
  std::int64_t failed = 0;          ///< pods that fitted nowhere
  double wall_s = 0;                ///< this run's wall time
  std::vector<CurvePoint> curve;    ///< one point per integer arrived %
  /// The curve at `pct` (nullopt when the run did not reach it).
  [[nodiscard]] std::optional<CurvePoint> at(std::int32_t pct) const;
};

/// One (policy, seed) run of the protocol. Thread-safe for distinct calls (shares `in` read-only).
[[nodiscard]] FgdRun run_fgd_once(const FgdInputs& in, const std::string& policy, std::uint64_t seed,
                                  double max_arrived_pct = 130.0);

/// Median (and quartiles) over seeds of one policy.
struct FgdSummaryRow {
  std::string policy;
  std::int64_t seeds = 0;
  std::optional<double> unallocated_pct_100, unallocated_pct_130;   ///< medians
  std::optional<double> frag_pct_80;                                ///< median fragmentation at 80%
  std::optional<double> paper_unallocated_pct_100, paper_unallocated_pct_130;   ///< fgd.md, default workload
  std::optional<double> paper_frag_pct_80;
};

struct FgdExperimentResult {
  FgdExperiment config;
  std::string node_source, pod_source, workload_name;
  std::int64_t nodes = 0, gpus = 0, trace_pods = 0;
  std::vector<FgdRun> runs;              ///< policy-major, in config order
  std::vector<FgdSummaryRow> summary;    ///< one per policy, config order
  double wall_s = 0;                     ///< the whole experiment
  unsigned threads = 1;
};

using ExperimentProgress = std::function<void(std::size_t done, std::size_t total)>;

/// ScenarioError unless cfg names at least one policy (each a known one) and one seed, and
/// max_arrived_pct is in (0, 1000]. run_fgd_experiment starts with it.
void check_fgd_experiment(const FgdExperiment& cfg);

/// The result of gathered runs: the inputs' description, `runs` (policy-major: runs[p * seeds +
/// s], each the run_fgd_once of cfg.policies[p] and cfg.seeds[s]) and the per-policy medians
/// (paper figures for the default workload). wall_s and threads are left for the caller. This is
/// how run_fgd_experiment ends, and how a caller that ran the runs elsewhere (e.g. on a Dask
/// cluster from Python) gets the same summary. ScenarioError when runs.size() is not
/// policies x seeds.
[[nodiscard]] FgdExperimentResult assemble_fgd_result(const FgdExperiment& cfg, const FgdInputs& in, std::vector<FgdRun> runs);

/// Runs every (policy, seed) pair on a thread pool. Deterministic: the result does not depend on
/// the number of threads (runs are independent and stored by index).
[[nodiscard]] FgdExperimentResult run_fgd_experiment(const FgdExperiment& cfg, const ExperimentProgress& progress = {});

/// Several workloads: one FgdExperimentResult per workload, in the order asked, plus the whole
/// sweep's wall time and threads.
struct FgdSweepResult {
  std::vector<FgdExperimentResult> workloads;
  double wall_s = 0;
  unsigned threads = 1;
};
/// The experiment of `cfg` for each of `workloads` (variant names or paths; cfg.workload is not
/// used): every input is read first (so a bad name fails before any run, the first bad one in
/// list order is reported), then every (workload, policy, seed) run goes on one thread pool of
/// cfg.threads (0 = one per hardware thread; the pool run_fgd_experiment uses). Deterministic:
/// runs are stored by index, so results and files do not depend on the number of threads.
/// `progress(done, total)` counts runs over all workloads. ScenarioError for an empty list.
[[nodiscard]] FgdSweepResult run_fgd_experiments(const FgdExperiment& cfg, const std::vector<std::string>& workloads,
                                                 const ExperimentProgress& progress = {});

/// Quantile q (0..1) of `values` with linear interpolation (q = 0.5: the median). nullopt when empty.
[[nodiscard]] std::optional<double> quantile(std::vector<double> values, double q);

/// Writes curve.csv, summary.csv, runs.csv (each starting with its header row; the last column
/// is `workload`), report.md and meta.json (version, workload(s), node list, policies, seeds,
/// files) into `dir` (created); returns the paths. Several results (a sweep) go into the same
/// files, workload after workload in the order given.
std::vector<std::filesystem::path> write_fgd_outputs(const FgdExperimentResult& r, const std::filesystem::path& dir);
std::vector<std::filesystem::path> write_fgd_outputs(std::span<const FgdExperimentResult> results,
                                                     const std::filesystem::path& dir);
/// The terminal summary: one line per policy against the paper.
[[nodiscard]] std::string format_fgd_summary(const FgdExperimentResult& r);
/// A sweep's terminal summary: one line per workload, unallocated GPU % at 130% per policy.
[[nodiscard]] std::string format_fgd_summary(const FgdSweepResult& r);
/// The name a sweep's outputs go by: the workload's for one, "all" for every variant in order,
/// else the names joined by commas (as --workload takes them).
[[nodiscard]] std::string fgd_sweep_name(const std::vector<std::string>& workload_names);

}  // namespace gpusched::scenario
