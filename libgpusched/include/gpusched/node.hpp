#pragma once
/// Node descriptions: what a machine has. Runtime state lives in ClusterState.
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <gpusched/ids.hpp>

namespace gpusched {

enum class TaintEffect : std::uint8_t { kNoSchedule, kPreferNoSchedule, kNoExecute };

struct Taint {
  std::string key;
  std::string value;
  TaintEffect effect = TaintEffect::kNoSchedule;
};

/// One GPU of a node: its model and the NUMA socket whose PCIe root it hangs off.
struct GpuSpec {
  GpuModelId model;
  std::int16_t socket = 0;
};

/// A machine. Example: 8x A100-80GB, 2 sockets, 128 cores, 1 TiB.
struct NodeSpec {
  std::string name;
  std::int64_t cpu_milli = 0;
  std::int64_t memory_mib = 0;
  std::int16_t sockets = 1;                 ///< NUMA nodes; GPUs are spread over them in order
  std::vector<GpuSpec> gpus;
  std::map<std::string, std::string> labels;  ///< ordered: deterministic output
  std::vector<Taint> taints;
  std::vector<std::pair<ResourceId, std::int64_t>> extended;  ///< capacity of extended resources
};

}  // namespace gpusched
