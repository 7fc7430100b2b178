// balanced-allocation: kube-scheduler's NodeResourcesBalancedAllocation.
#include <gpusched/policies/noderesources/balanced_allocation.hpp>

#include <algorithm>
#include <cmath>
#include <tuple>
#include <utility>

#include <gpusched/cluster.hpp>

namespace gpusched::policies {

BalancedAllocation::BalancedAllocation(std::vector<ScoredResource> resources) {
  for (auto& r : resources) {
    const Kind kind = r.name == "cpu"              ? Kind::kCpu
                      : r.name == "memory"         ? Kind::kMemory
                      : r.name == "nvidia.com/gpu" ? Kind::kGpu
                      : r.name == "google.com/tpu" ? Kind::kTpu
                                                   : Kind::kExtended;
    resources_.push_back({kind, std::move(r.name)});
  }
}

double BalancedAllocation::score(const ClusterState& cluster, const TaskContext& ctx, NodeId node) {
  const auto& s = cluster.node(node);
  const auto& r = ctx.request();
  // The job's request per listed resource, as written (the peer's useRequested: no non-zero
  // defaults); all zero is the peer's best-effort pod, for which it skips the plugin.
  bool asks = false;
  constexpr std::size_t kInline = 16;
  double inline_fractions[kInline];
  std::vector<double> more;
  std::size_t n = 0;
  double total = 0.0;
  for (const auto& res : resources_) {
    // resource_allocation.go calculateResourceAllocatableRequest: (allocatable, requested).
    std::int64_t capacity = 0, requested = 0, asked = 0;
    switch (res.kind) {
      case Kind::kCpu:
        asked = r.cpu_milli;
        capacity = cluster.cpu_capacity(node);
        requested = capacity - s.cpu_free_milli + asked;
        break;
      case Kind::kMemory:
        asked = r.memory_mib;
        capacity = cluster.memory_capacity(node);
        requested = capacity - s.memory_free_mib + asked;
        break;
      case Kind::kGpu:
        asked = r.gpu.total_milli();
        if (const auto k = cluster.kube_gpu_counts(node, r)) {   // replicas: allocatable GPUs x replicas
          std::tie(capacity, requested) = *k;
          break;
        }
        capacity = std::int64_t{s.gpu_count} * kMilliPerGpu;
        requested = capacity - s.gpu_milli_free + asked;
        break;
      case Kind::kTpu:
        asked = r.tpu.chips;
        capacity = cluster.spec(node).tpu.chips;
        requested = capacity - s.tpu_chips_free + asked;
        break;
      case Kind::kExtended: {
        const auto id = cluster.resources().find(res.name);
        if (!id) continue;
        for (const auto& [rid, amount] : r.extended) {
          if (rid == *id) asked += amount;
        }
        for (const auto& [rid, amount] : cluster.spec(node).extended) {
          if (rid == *id) capacity = amount;
        }
        requested = capacity - cluster.extended_free(node, *id) + asked;
        break;
      }
    }
    if (asked != 0) asks = true;
    // A scalar resource the job does not request is bypassed; so is one the node lacks.
    if (asked == 0 && res.kind != Kind::kCpu && res.kind != Kind::kMemory) continue;
    if (capacity <= 0) continue;
    const double fraction = std::min(1.0, static_cast<double>(requested) / static_cast<double>(capacity));
    total += fraction;
    if (n < kInline) {
      inline_fractions[n] = fraction;
    } else {
      if (more.empty()) more.assign(inline_fractions, inline_fractions + kInline);
      more.push_back(fraction);
    }
    ++n;
  }
  if (!asks) return 0.0;
  const double* f = n <= kInline ? inline_fractions : more.data();
  double sd = 0.0;
  if (n == 2) {
    sd = std::abs((f[0] - f[1]) / 2);
  } else if (n > 2) {
    const double mean = total / static_cast<double>(n);
    double sum = 0.0;
    for (std::size_t i = 0; i < n; ++i) sum += (f[i] - mean) * (f[i] - mean);
    sd = std::sqrt(sum / static_cast<double>(n));
  }
  // int64((1 - std) x MaxNodeScore): truncation toward zero.
  return static_cast<double>(static_cast<std::int64_t>((1.0 - sd) * 100.0));
}

}  // namespace gpusched::policies
