#pragma once
/// Scenario files (schema_version 1, see schemas/scenario.schema.json): cluster, profile,
/// workload, seed, horizon, outputs — everything one run needs, validated before it starts.
///
/// Example:
///   auto sc = scenario::load_scenario("examples/small.json");
///   auto result = scenario::run(sc);
///   scenario::write_outputs(result, "out/small");
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <gpusched/dra/allocator.hpp>

#include <gpusched/cluster.hpp>
#include <gpusched/gpu_catalog.hpp>
#include <gpusched/job.hpp>
#include <gpusched/policies/framework/profile.hpp>
#include <gpusched/policies/framework/registry.hpp>
#include <gpusched/policies/framework/scheduler.hpp>
#include <gpusched/scenario/fragmentation.hpp>
#include <gpusched/sim/autoscaler.hpp>
#include <gpusched/sim/engine.hpp>
#include <gpusched/sim/metrics.hpp>
#include <gpusched/sim/outputs.hpp>
#include <gpusched/traces/synthetic.hpp>

namespace gpusched::scenario {

inline constexpr int kScenarioSchemaVersion = 1;

/// A Kubernetes PriorityClass: jobs naming it get its value; `preempt_never` is
/// preemptionPolicy: Never; the global default applies to jobs without a class and priority 0.
struct PriorityClass {
  std::int32_t value = 0;
  bool preempt_never = false;
  bool global_default = false;
};

/// The highest value a user-defined PriorityClass may have (Kubernetes'
/// HighestUserDefinablePriority, pkg/apis/scheduling/types.go).
inline constexpr std::int32_t kHighestUserPriority = 1'000'000'000;

/// Kubernetes' built-in priority classes, present in every cluster (pkg/apis/scheduling/types.go:
/// SystemClusterCritical = 2 x 1e9, SystemNodeCritical = that + 1000): their value, else nullopt.
/// Jobs may name them without defining them; a scenario that lists them must give these values.
[[nodiscard]] inline std::optional<std::int32_t> system_priority_class(std::string_view name) {
  if (name == "system-cluster-critical") return 2'000'000'000;
  if (name == "system-node-critical") return 2'000'001'000;
  return std::nullopt;
}

struct OutputOptions {
  SimTime sample_interval = SimTime::from_seconds(300);
  bool event_log = false;     ///< also write events.csv (every submit/start/finish)
  /// Fragmentation metrics (fragmentation.csv, summary "fragmentation"): "auto" = when some job
  /// asks for a GPU share, "on", "off".
  std::string fragmentation = "auto";
};

/// One step of `workload.trace.transforms`, applied in order at run time (with the run's seed).
struct TransformStep {
  enum class Kind : std::uint8_t { kShuffle, kResample, kScaleTime, kFilter, kArrivalOnly, kTargetLoad };
  Kind kind = Kind::kShuffle;
  /// kResample: % of cluster GPU capacity; kScaleTime: factor; kTargetLoad: offered GPU load
  /// (traces::offered_gpu_load, e.g. 0.8)
  double value = 0;
  std::vector<std::string> queues;        ///< kFilter
  std::vector<std::string> kinds;         ///< kFilter: cpu, share, one-gpu, multi-gpu, other
  std::string path;                       ///< JSON path of the step, for errors found at run time
};

/// A parsed, validated scenario. The workload is materialised at run time (it may depend on
/// the seed).
struct Scenario {
  std::string name = "scenario";
  std::string description;
  std::string source;                    ///< file path, or a label for built-in / in-memory ones
  std::filesystem::path base_dir;        ///< relative paths resolve against this
  nlohmann::json document;               ///< the input as given (for stamping)
  std::uint64_t seed = 42;
  GpuCatalog catalog;
  ResourceTable resources;
  std::vector<NodeSpec> nodes;
  DeviceOptions devices;                 ///< performance factors and reconfiguration delay
  policies::Profile profile;
  std::optional<traces::SyntheticConfig> synthetic;
  std::optional<std::filesystem::path> trace;
  std::string trace_format;              ///< "" = detected from the file (traces/import.hpp)
  std::vector<TransformStep> transforms; ///< applied to the trace's jobs at run time
  Workload jobs;                         ///< inline jobs (and, after load, trace jobs)
  sim::EngineConfig engine;
  OutputOptions outputs;
  std::map<std::string, PriorityClass> priority_classes;   ///< by name
  sim::AutoscalerConfig autoscaler;      ///< node groups with "autoscale" (empty: none)
  /// Plugin args translated from `kubernetes_objects` (k8s_objects.hpp), already in `profile`;
  /// kept so a profile given later (run --profile) gets them too. Null when none.
  nlohmann::json kubernetes_plugin_args;
  /// Scan every node for every decision (`run --exact-scan`, Python `run(exact_scan=True)`):
  /// turns the scheduler's node index off (policies::Scheduler::set_node_index). Decisions and
  /// outputs are the same either way (tests compare them); only the time differs. Not part of
  /// the document, so it changes neither the digest nor summary.json.
  bool exact_scan = false;
  /// Keep a job no node could ever hold (or a gang the empty cluster cannot hold at once) as a
  /// pending job with the scheduler's diagnosis, instead of refusing the input before the run:
  /// what a what-if on a cluster snapshot reports (scenario/whatif.hpp). Not part of the document.
  bool keep_unplaceable = false;
  /// Record every real decision's per-node breakdown (policies::Scheduler::set_explain):
  /// RunResult::explanations(). A full scan per task: for what-if reports on snapshots.
  bool explain = false;
  /// `preemption.restart` was given (else the preemptive queueing mode resumes, the others restart from zero).
  bool restart_given = false;
  /// `preemption.placement: "count"`: GPUs are counted only, as the Tiresias simulator's
  /// `--scheme=count` does: each job's whole GPUs become one-GPU tasks of one gang, placed anywhere.
  bool count_gpus = false;
  /// Kubernetes DRA (`dra.objects`, docs/dra.md): the DeviceClasses claims may name (NVIDIA's,
  /// then the scenario's), and ResourceClaimTemplates by name, which jobs name in their
  /// `claim_template` field. Null / empty without a `dra` section.
  std::shared_ptr<const std::vector<dra::DeviceClass>> dra_classes;
  /// ResourceSlices dra.objects gives for some nodes, in place of those derived from their model.
  std::shared_ptr<const std::vector<dra::ResourceSlice>> dra_slices;
  std::map<std::string, dra::ResourceClaim> claim_templates;
  /// ResourceClaims by name, each shared by the jobs that name it in their `resource_claim` field.
  std::map<std::string, dra::ResourceClaim> resource_claims;
};

/// Resolves each job's `claim_template` into its claims (JobConstraints::claims) and the whole
/// GPUs they take (the job's GPU request). A template must name known DeviceClasses, ask for
/// devices by ExactCount (firstAvailable alternatives with equal counts), without admin access;
/// a job with a claim states no GPU request of its own. Throws TraceError naming the job's line.
void resolve_claims(Workload& jobs, const Scenario& sc, const std::string& source);
/// resolve_claims() naming the workload's source, then: with any claim, the profile must list
/// dynamic-resources at filter and device_select (ScenarioError otherwise). run() and
/// `gpusched validate` call it.
void prepare_claims(Workload& jobs, const Scenario& sc);

/// Gives jobs their PriorityClass's value and preemption policy (the global default to jobs
/// with neither class nor priority). Throws TraceError naming the job's line for an unknown class.
void apply_priority_classes(Workload& jobs, const std::map<std::string, PriorityClass>& classes, const std::string& source);
/// Applies `steps` in order: the jobs a run replays. `cluster_gpu_milli` sizes kResample and
/// kTargetLoad. A step that cannot apply to these jobs (e.g. target_load on jobs that all arrive
/// at once) throws ScenarioError naming `source` and the step's JSON path.
Workload apply_transforms(Workload jobs, const std::vector<TransformStep>& steps, std::int64_t cluster_gpu_milli,
                          std::uint64_t seed, const std::string& source = "");
/// Rejects, before the run, a gang that needs more tasks at once than the empty cluster holds.
void check_gangs(const Workload& jobs, const ClusterState& cluster, const std::string& source);

/// Reads and validates a scenario file. Throws gpusched::Error subclasses naming the file,
/// line (syntax errors) and JSON path. The profile is checked against `registry`: pass your own
/// (Registry::with_builtins() plus your plugins) to name custom plugins in scenarios.
Scenario load_scenario(const std::filesystem::path& path,
                       const policies::Registry& registry = policies::Registry::builtins());
/// Parses scenario JSON text; `source` names it in errors; relative paths resolve from base_dir.
Scenario parse_scenario(std::string_view text, const std::string& source, const std::filesystem::path& base_dir,
                        const policies::Registry& registry = policies::Registry::builtins());
/// Same, for a string literal or a std::string (which would otherwise convert to both text and
/// a JSON document).
Scenario parse_scenario(const char* text, const std::string& source, const std::filesystem::path& base_dir,
                        const policies::Registry& registry = policies::Registry::builtins());
Scenario parse_scenario(const std::string& text, const std::string& source, const std::filesystem::path& base_dir,
                        const policies::Registry& registry = policies::Registry::builtins());
/// Same, from an already-parsed document.
Scenario parse_scenario(const nlohmann::json& doc, const std::string& source, const std::filesystem::path& base_dir,
                        const policies::Registry& registry = policies::Registry::builtins());
/// Makes the files a profile's plugins name (gittins' `distribution`) relative to `base_dir`
/// when they are relative paths (a scenario's folder, or a --profile file's).
void resolve_profile_paths(policies::Profile& profile, const std::filesystem::path& base_dir);
/// The built-in demo: 1,000 nodes, 20,000 synthetic jobs (examples/demo.json, embedded).
Scenario demo_scenario();
/// The embedded demo scenario text.
std::string_view demo_scenario_text();

/// One DRA device a running or completed task holds through its claim (claims.csv): the
/// ResourceClaim's `status.allocation.devices.results` entry, with the job, task and node.
struct ClaimRow {
  std::string job;
  std::int32_t task = 0;
  std::string node;
  std::string claim_template;
  std::string request;   ///< "req", or "req/sub" for a firstAvailable alternative
  std::string driver, pool, device;
  bool admin_access = false;   ///< monitored, not taken: no GPU of the job's
};
/// The devices every running or completed job's claims hold (its last attempt), in workload
/// order, then task, then the order the allocator chose them. Empty when no job has a claim.
[[nodiscard]] std::vector<ClaimRow> claim_rows(const sim::Engine& engine);
/// claims.csv: job,task,node,claim_template,request,driver,pool,device,admin_access.
void write_claims_csv(std::ostream& out, const std::vector<ClaimRow>& rows);

/// Everything a finished run produced. Movable, not copyable.
class RunResult {
 public:
  RunResult();
  RunResult(RunResult&&) noexcept;
  RunResult& operator=(RunResult&&) noexcept;
  ~RunResult();

  [[nodiscard]] const sim::RunStamp& stamp() const;
  [[nodiscard]] const sim::Summary& summary() const;
  [[nodiscard]] nlohmann::json summary_json() const;   ///< summary + stamp + resolved inputs
  [[nodiscard]] const std::vector<sim::TimeSample>& timeseries() const;
  [[nodiscard]] std::vector<sim::JobRow> jobs() const;
  /// The DRA devices jobs hold (claim_rows()); empty when no job has a claim.
  [[nodiscard]] std::vector<ClaimRow> claims() const;
  [[nodiscard]] const std::vector<std::string>& event_log() const;   ///< empty unless enabled
  /// Fragmentation after every decision (empty unless enabled; see OutputOptions::fragmentation).
  [[nodiscard]] const std::vector<FragmentationSample>& fragmentation() const;
  [[nodiscard]] const sim::Engine& engine() const;
  [[nodiscard]] const std::string& profile_name() const;
  /// The scheduler's configuration warnings (policies::Scheduler::warnings()), as summary.json
  /// `warnings` lists them; the CLI prints each once on stderr.
  [[nodiscard]] const std::vector<std::string>& warnings() const;
  /// Every decision's per-node breakdown, in decision order (empty unless Scenario::explain).
  [[nodiscard]] const std::vector<policies::DecisionExplanation>& explanations() const;

  struct State;
  explicit RunResult(std::unique_ptr<State> s);

 private:
  std::unique_ptr<State> state_;
};

using ProgressFn = std::function<void(double)>;

/// Builds the cluster, the scheduler and the workload, and runs the simulation.
/// `seed` overrides the scenario's seed. Bad input throws before the run starts. The profile's
/// plugins come from `registry` (your own plugins: Registry::with_builtins() plus yours).
RunResult run(const Scenario& sc, std::optional<std::uint64_t> seed = std::nullopt, const ProgressFn& progress = {},
              const policies::Registry& registry = policies::Registry::builtins());

/// Writes summary.json, jobs.csv, timeseries.csv (fragmentation.csv, events.csv when enabled,
/// claims.csv when a job has a DRA claim),
/// report.md and meta.json (what produced the files: version, scenario, digest, seed, profile,
/// the files' names) into `dir` (created). CSVs start with their header row. Returns the paths
/// written. Throws OutputError.
std::vector<std::filesystem::path> write_outputs(const RunResult& r, const std::filesystem::path& dir);
/// Writes files given as (name, bytes) into `dir` as write_outputs writes its own (atomically,
/// summary.json last, an earlier run's other files removed): how a Python Result that crossed a
/// process boundary writes the bytes write_outputs produced. Throws OutputError.
std::vector<std::filesystem::path> write_output_files(const std::filesystem::path& dir,
                                                      const std::vector<std::pair<std::string, std::string>>& files);
/// GPU capacity allocated in `c` now, % (compute shares: a whole GPU is 1,000 milli).
[[nodiscard]] double allocated_gpu_pct(const ClusterState& c);
/// The terminal summary (a few aligned lines).
std::string format_summary(const RunResult& r);

/// Replaces `sc`'s profile as `gpusched run --profile NAME|FILE` does: a built-in profile, or a
/// profile JSON file (named after the file when it gives no name), with the scenario's
/// kubernetes_objects and pod disruption budgets applied to it; recorded in sc.document.
/// Throws ProfileError naming `arg` for an unknown name or a bad profile.
void use_profile(Scenario& sc, const std::string& arg,
                 const policies::Registry& registry = policies::Registry::builtins());

/// The command-line tool; returns the exit code. See README "Command line". Profiles may name
/// the plugins of `registry` (and `gpusched policies` lists them).
int cli_main(int argc, const char* const* argv, const policies::Registry& registry = policies::Registry::builtins());

}  // namespace gpusched::scenario
