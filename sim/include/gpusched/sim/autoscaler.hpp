#pragma once
/// Cluster autoscaler (Kubernetes Cluster Autoscaler semantics): node groups built from a node
/// template with min/max size and a provisioning delay. Scales up when pending jobs would fit a
/// template node; removes nodes idle for a set time. Reports node-hours.
///
/// Example:
///   sim::Autoscaler scaler(engine, cluster, {{{"a100", first, 16, 0, 300s, 600s}}});
///   engine.add_observer(&scaler);
///   engine.run();
///   scaler.report();
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include <gpusched/cluster.hpp>
#include <gpusched/sim/engine.hpp>
#include <gpusched/sim/observer.hpp>

namespace gpusched::sim {

/// One autoscaled node group: nodes [first, first + max) of the cluster, all built from the
/// same template; `min` of them are up at the start.
struct AutoscaleGroup {
  std::string name;
  std::uint32_t first = 0;                                   ///< first node index of the group
  std::uint32_t max = 0;                                     ///< nodes in the group (the most that can be up)
  std::uint32_t min = 0;                                     ///< never fewer than this up
  SimTime provisioning_delay = SimTime::from_seconds(300);   ///< request -> node ready
  SimTime scale_down_idle = SimTime::from_seconds(600);      ///< empty this long -> removed
};

/// How a scale-up chooses among the groups that could help (Cluster Autoscaler `--expander`).
enum class Expander : std::uint8_t {
  /// Cluster Autoscaler's least-waste (expander/waste/waste.go): least idle CPU share + idle
  /// memory share on the new nodes (GPUs are not counted, as in CA); ties: group order (CA hands
  /// ties to its fallback expander, random by default).
  kLeastWaste,
  kFirst,          ///< the first group, in configuration order, that helps some pending job
  /// gpusched's variant for accelerator pools: least idle CPU share + idle GPU share; ties: group order.
  kLeastIdleGpu,
};
std::string_view to_string(Expander e);
/// "least-waste", "first" or "least-idle-gpu"; nullopt otherwise.
std::optional<Expander> parse_expander(std::string_view s);

struct AutoscalerConfig {
  std::vector<AutoscaleGroup> groups;
  SimTime scan_interval = SimTime::from_seconds(10);   ///< how often pending jobs and idle nodes are checked
  Expander expander = Expander::kLeastWaste;
};

/// What the autoscaler did to one node: asked for it (up, at the request time; it is ready
/// `provisioning_delay` later) or removed it.
struct ScaleEvent {
  SimTime time;
  std::uint32_t group = 0;   ///< index into AutoscalerConfig::groups
  NodeId node;
  bool up = false;
};

/// The autoscaler, an observer that acts through Engine::call_at() and push_node_event().
///
/// - Construction takes the group nodes beyond `min` down (unschedulable) before the run.
/// - Scale-up: scans run at multiples of `scan_interval` (the first one strictly after the
///   event that made them useful: a submission, a requeue, a node change, a scale-up). A scan
///   bin-packs the pending jobs (queue order, first fit, a gang needs min_available tasks in one
///   group) onto the capacity that is coming (provisioning nodes, empty nodes) and then onto
///   new template nodes of each group; the expander picks ONE group, which gets as many nodes
///   as its estimate needs (capped by max). Ready `provisioning_delay` after the scan.
/// - Scale-down: an up, empty node of a group is removed `scale_down_idle` after it became
///   empty (exactly; not rounded to scans), unless the group would drop below `min`.
///
/// Cost: a scan is O(pending jobs x tasks x group nodes) fit checks; idle tracking O(1) per job
/// start/finish (O(group nodes) per requeue).
class Autoscaler final : public Observer {
 public:
  /// `engine` and `cluster` must outlive the autoscaler, which must be added as an observer
  /// before Engine::run(). Throws ScenarioError (kScenarioBadValue) on a bad configuration.
  Autoscaler(Engine& engine, ClusterState& cluster, AutoscalerConfig config);

  void on_start(const Engine& e) override;
  void on_submit(SimTime t, JobId j, const Engine& e) override;
  void on_job_start(SimTime t, JobId j, std::span<const TaskPlacement> placements, const Engine& e) override;
  /// A gang that started with min_available tasks placing more: their nodes are no longer empty.
  void on_job_grow(SimTime t, JobId j, std::span<const TaskPlacement> added, const Engine& e) override;
  void on_job_finish(SimTime t, JobId j, const Engine& e) override;
  void on_job_fail(SimTime t, JobId j, std::string_view reason, const Engine& e) override;
  void on_job_requeue(SimTime t, JobId j, std::string_view reason, const Engine& e) override;
  void on_node(SimTime t, NodeId n, bool up, const Engine& e) override;
  void on_end(SimTime end, const Engine& e) override;

  /// {"expander", "scan_interval_s", "groups": [{"name", "min", "max", "peak_up", "scale_ups",
  ///  "scale_downs", "node_hours"}], "node_hours", "static_node_hours", "peak_up", "scale_ups",
  ///  "scale_downs"}. scale_ups / scale_downs count nodes; node-hours run from a node's
  ///  request (or the run's start for nodes up from the start) to its removal or the run's end.
  [[nodiscard]] nlohmann::json report() const;
  /// Nodes of group `g` up / being provisioned now.
  [[nodiscard]] std::uint32_t up(std::size_t g) const { return groups_[g].up; }
  [[nodiscard]] std::uint32_t provisioning(std::size_t g) const { return groups_[g].provisioning; }
  /// Every node request and removal, in time order.
  [[nodiscard]] std::span<const ScaleEvent> events() const { return events_; }
  [[nodiscard]] const AutoscalerConfig& config() const { return config_; }

 private:
  enum class NodeMode : std::uint8_t { kDown, kProvisioning, kUp };
  struct NodeInfo {
    NodeMode mode = NodeMode::kDown;
    SimTime billed_since = SimTime::forever();   // requested / up since (forever: not billed)
    SimTime empty_since = SimTime::forever();    // up with no task since (forever: busy or down)
  };
  struct GroupState {
    std::vector<NodeInfo> nodes;
    std::uint32_t up = 0, provisioning = 0, peak_up = 0;
    std::uint64_t scale_ups = 0, scale_downs = 0;
    std::int64_t billed_us = 0;   // closed intervals only
  };
  /// One group's answer to a scan: how many new nodes its estimate needs and their waste.
  struct Option {
    std::uint32_t group = 0;
    std::uint32_t nodes = 0;
    double waste = 0.0;
  };

  void arm(SimTime t);
  /// Schedules a scan at the first multiple of scan_interval strictly after `now`.
  void arm_next_grid(SimTime now);
  void scan(SimTime now);
  void scale_up(SimTime now);
  void scale_down(SimTime now);
  /// Places up to all tasks of job `j` in group `g`'s scratch cluster, first fit over `slots`
  /// (scratch node indices), then over the first `opened` nodes of `fresh`, then opening the
  /// next ones. Records the placements in `undo`. Fewer than min_available: undoes them,
  /// restores `opened` and returns false.
  bool place(JobId j, std::uint32_t g, std::span<const std::uint32_t> slots, std::span<const std::uint32_t> fresh,
             std::uint32_t& opened, std::vector<std::pair<JobId, TaskPlacement>>& undo);
  void rollback(std::uint32_t g, std::vector<std::pair<JobId, TaskPlacement>>& undo);
  /// Could one task of `j` ever run on a node of group `g`? (resources, GPU model, node
  /// selector / affinity, NoSchedule taints) Cached per job and group.
  bool fits_template(JobId j, std::uint32_t g);
  bool matches(const JobSpec& spec, const NodeSpec& node) const;
  void node_emptied(std::uint32_t g, std::uint32_t i, SimTime now);
  void stop_billing(GroupState& gs, NodeInfo& ni, SimTime now);
  void mark_fresh(NodeId n, SimTime now);
  [[nodiscard]] std::int32_t group_of(NodeId n) const { return group_of_[n.value]; }

  Engine* engine_;
  ClusterState* cluster_;
  AutoscalerConfig config_;
  std::vector<GroupState> groups_;
  std::vector<ClusterState> scratch_;          // per group: its node specs, empty between scans
  std::vector<std::int32_t> group_of_;         // per cluster node: group index, -1 = static
  std::vector<std::uint8_t> template_fit_;     // per (job, group): 0 unknown, 1 fits, 2 never
  /// Per (DRA claims, group): the devices the claims take on an empty node (nullopt: it cannot hold them).
  std::map<std::pair<const void*, std::uint32_t>, std::optional<std::int32_t>> claims_fit_;
  [[nodiscard]] const std::optional<std::int32_t>& claims_on(const JobSpec& spec, std::uint32_t g);
  std::vector<std::uint8_t> unhelpable_;       // per job: scheduler refused it on empty group nodes
  std::set<SimTime> armed_;                    // scan times with a timer pending (ordered)
  std::vector<NodeId> fresh_;                  // nodes that gained capacity at `fresh_at_`
  SimTime fresh_at_ = SimTime::forever();
  std::vector<ScaleEvent> events_;
  std::uint32_t static_nodes_ = 0;
  std::uint32_t peak_up_ = 0;
  SimTime start_ = SimTime::zero();
  SimTime end_ = SimTime::forever();
  std::vector<GpuGrant> grants_;               // scratch
};

}  // namespace gpusched::sim
