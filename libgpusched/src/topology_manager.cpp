#include <gpusched/topology_manager.hpp>

#include <array>
#include <bit>
#include <string>
#include <vector>

namespace gpusched {
namespace {

/// One topology hint; mask 0 stands for "any NUMA node" (kubelet's nil affinity).
struct Hint {
  std::uint64_t mask = 0;
  bool preferred = false;
};

std::int64_t amount(const NumaResources& r, int resource) {
  return resource == 0 ? r.cpu_milli : resource == 1 ? r.memory_mib : r.gpus;
}

/// A provider's hints for one resource (kubelet's generate*TopologyHints + filterProvidersHints).
std::vector<Hint> provider_hints(std::span<const NumaResources> free, std::span<const NumaResources> capacity,
                                 std::int64_t request, int resource) {
  if (request <= 0) return {Hint{0, true}};
  const std::uint64_t masks = std::uint64_t{1} << free.size();
  int min_size = static_cast<int>(free.size()) + 1;
  std::vector<Hint> hints;
  for (std::uint64_t m = 1; m < masks; ++m) {
    std::int64_t avail = 0, cap = 0;
    for (std::size_t s = 0; s < free.size(); ++s) {
      if (m >> s & 1U) {
        avail += amount(free[s], resource);
        cap += amount(capacity[s], resource);
      }
    }
    const int size = std::popcount(m);
    if (cap >= request) min_size = std::min(min_size, size);
    if (avail >= request) hints.push_back({m, false});
  }
  if (hints.empty()) return {Hint{0, false}};
  for (auto& h : hints) h.preferred = std::popcount(h.mask) == min_size;
  return hints;
}

/// HintMerger.compare: true when `a` is a better merged hint than `b`.
bool better(const Hint& a, const Hint& b) {
  if (a.preferred != b.preferred) return a.preferred;
  const int ca = std::popcount(a.mask), cb = std::popcount(b.mask);
  if (ca != cb) return ca < cb;
  return a.mask < b.mask;
}

/// Every combination of one hint per provider, ANDed, and the best non-empty result. The merged
/// hint depends only on (mask, preferred), so providers are folded in one at a time over the set
/// of reachable (mask, preferred) pairs instead of the full cross product.
Hint merge(const std::array<std::vector<Hint>, 3>& providers, std::uint64_t all) {
  const std::size_t states = static_cast<std::size_t>(all) + 1;
  std::vector<std::array<char, 2>> reach(states, {0, 0});  // [mask][preferred]
  reach[all][1] = 1;
  for (const auto& hints : providers) {
    std::vector<std::array<char, 2>> next(states, {0, 0});
    for (std::size_t m = 0; m < states; ++m) {
      for (int p = 0; p < 2; ++p) {
        if (!reach[m][static_cast<std::size_t>(p)]) continue;
        for (const Hint& h : hints) {
          const std::uint64_t mask = m & (h.mask == 0 ? all : h.mask);
          next[mask][(p != 0 && h.preferred) ? 1 : 0] = 1;
        }
      }
    }
    reach = std::move(next);
  }
  Hint best{all, false};
  bool found = false;
  for (std::size_t m = 1; m < states; ++m) {
    for (int p = 1; p >= 0; --p) {
      if (!reach[m][static_cast<std::size_t>(p)]) continue;
      const Hint h{m, p == 1};
      if (!found || better(h, best)) {
        best = h;
        found = true;
      }
    }
  }
  return best;
}

[[noreturn]] void bad_numa(const std::string& message) {
  throw_error(ErrorCode::kScenarioBadValue, {"", 0, "numa"}, message);
}

}  // namespace

std::string_view to_string(TopologyPolicy policy) {
  switch (policy) {
    case TopologyPolicy::kNone: return "none";
    case TopologyPolicy::kBestEffort: return "best-effort";
    case TopologyPolicy::kRestricted: return "restricted";
    case TopologyPolicy::kSingleNumaNode: return "single-numa-node";
  }
  return "?";
}

TopologyPolicy parse_topology_policy(std::string_view name, const Location& where) {
  for (auto p : {TopologyPolicy::kNone, TopologyPolicy::kBestEffort, TopologyPolicy::kRestricted,
                 TopologyPolicy::kSingleNumaNode}) {
    if (name == to_string(p)) return p;
  }
  throw_error(ErrorCode::kScenarioBadValue, where,
              "unknown topology manager policy \"" + std::string(name) +
                  "\"; known policies: none, best-effort, restricted, single-numa-node");
}

NumaAdmit topology_admit(TopologyPolicy policy, std::span<const NumaResources> free, const NumaResources& request,
                         std::span<const NumaResources> capacity) {
  if (free.empty()) bad_numa("the node has no NUMA nodes");
  if (free.size() > 64) bad_numa("more than 64 NUMA nodes");
  if (!capacity.empty() && capacity.size() != free.size()) {
    bad_numa("capacity is given for " + std::to_string(capacity.size()) + " NUMA nodes, free resources for " +
             std::to_string(free.size()));
  }
  const std::uint64_t all = free.size() == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << free.size()) - 1;
  if (policy == TopologyPolicy::kNone) return {true, all, true};
  if (free.size() > kMaxTopologyNumaNodes) {
    bad_numa("the topology manager supports at most " + std::to_string(kMaxTopologyNumaNodes) +
             " NUMA nodes (kubelet's limit); this node has " + std::to_string(free.size()));
  }
  if (capacity.empty()) capacity = free;

  std::array<std::vector<Hint>, 3> providers;
  for (int r = 0; r < 3; ++r) {
    providers[static_cast<std::size_t>(r)] = provider_hints(free, capacity, amount(request, r), r);
  }
  if (policy == TopologyPolicy::kSingleNumaNode) {
    for (auto& hints : providers) {
      std::erase_if(hints, [](const Hint& h) { return !h.preferred || (h.mask != 0 && std::popcount(h.mask) != 1); });
    }
  }
  const Hint best = merge(providers, all);
  switch (policy) {
    case TopologyPolicy::kBestEffort: return {true, best.mask, best.preferred};
    case TopologyPolicy::kRestricted:
    case TopologyPolicy::kSingleNumaNode: return {best.preferred, best.mask, best.preferred};
    case TopologyPolicy::kNone: break;
  }
  return {true, all, true};
}

}  // namespace gpusched
