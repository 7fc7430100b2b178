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
#include <string>
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

struct AutoscalerConfig {
  std::vector<AutoscaleGroup> groups;
  SimTime scan_interval = SimTime::from_seconds(10);   ///< how often pending jobs and idle nodes are checked
};

}  // namespace gpusched::sim
