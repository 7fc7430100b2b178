#include <gpusched/node.hpp>
#include <algorithm>

namespace gpusched {

std::string_view to_string(GpuPartition p) {
  switch (p) {
    case GpuPartition::kWhole: return "whole";
    case GpuPartition::kMig: return "mig";
    case GpuPartition::kVgpu: return "vgpu";
    case GpuPartition::kTimeSlicing: return "time-slicing";
    case GpuPartition::kMps: return "mps";
    case GpuPartition::kPassthrough: return "passthrough";
  }
  return "?";
}

std::string normalize_numa(NodeSpec& n) {
  if (n.numa.empty()) {
    const auto s = std::max<std::int16_t>(1, n.sockets);
    n.numa.assign(static_cast<std::size_t>(s), NumaSpec{n.cpu_milli / s, n.memory_mib / s});
    n.numa[0].cpu_milli += n.cpu_milli % s;
    n.numa[0].memory_mib += n.memory_mib % s;
  }
  n.sockets = static_cast<std::int16_t>(n.numa.size());
  std::int64_t cpu = 0, mem = 0;
  for (const auto& z : n.numa) {
    if (z.cpu_milli < 0 || z.memory_mib < 0) return "a NUMA node has negative CPU or memory";
    cpu += z.cpu_milli;
    mem += z.memory_mib;
  }
  if (cpu != n.cpu_milli) return "the NUMA nodes' CPUs add up to " + std::to_string(cpu) + "m, the node has " + std::to_string(n.cpu_milli) + "m";
  if (mem != n.memory_mib) return "the NUMA nodes' memory adds up to " + std::to_string(mem) + "Mi, the node has " + std::to_string(n.memory_mib) + "Mi";
  for (std::size_t g = 0; g < n.gpus.size(); ++g) {
    if (n.gpus[g].socket < 0 || n.gpus[g].socket >= n.sockets) {
      return "GPU " + std::to_string(g) + " is on socket " + std::to_string(n.gpus[g].socket) + " but the node has " +
             std::to_string(n.sockets) + " socket(s)";
    }
  }
  for (const auto& l : n.nvlinks) {
    if (l.a >= l.b || l.b >= n.gpus.size()) return "an NVLink joins GPUs " + std::to_string(l.a) + " and " + std::to_string(l.b) + ", which do not exist or are not in order";
  }
  return {};
}

}  // namespace gpusched
