#pragma once
/// The kubelet Topology Manager's admission decision as a pure function (sharing.md, "Node
/// topology": policies none, best-effort, restricted, single-numa-node).
///
/// Follows kubelet's pkg/kubelet/cm/topologymanager (policy_none.go, policy_best_effort.go,
/// policy_restricted.go, policy_single_numa_node.go, policy.go):
///   - three hint providers, one per resource: CPU manager (cpu_milli), memory manager
///     (memory_mib), device manager (gpus). A provider with a zero request has no preference
///     (one hint: "any NUMA node", preferred). Otherwise its hints are every non-empty socket
///     mask whose FREE resources add up to the request; a hint is preferred when its mask has
///     the minimal number of sockets whose CAPACITY could hold the request (kubelet's
///     minAffinitySize, computed over all CPUs / memory / devices, not only the free ones). A
///     provider that cannot be satisfied at all gives one hint: "any", not preferred.
///   - merging (filterProvidersHints + HintMerger): every combination of one hint per provider,
///     masks ANDed ("any" = every socket), preferred iff all are preferred; combinations with an
///     empty mask are dropped. Best = preferred first, then the narrowest mask (fewest sockets),
///     then the lowest mask value. No combination left: best = (every socket, not preferred).
///   - none: admit, mask = every socket, preferred. best-effort: admit with the best hint.
///     restricted: admit iff the best hint is preferred. single-numa-node: providers' hints are
///     first filtered to preferred single-socket hints and preferred "any" hints
///     (filterSingleNumaHints), then merged; admit iff the best hint is preferred (so it is one
///     socket, or every provider had no preference — the pod needs nothing NUMA-bound).
/// Simplified: CPU and memory hints are given for any request (kubelet's static CPU manager only
/// hints Guaranteed pods with integer CPUs, its memory manager only under the Static policy);
/// between two non-preferred hints kubelet >= 1.26 prefers the one closest to the narrowest
/// satisfiable width (BestNonPreferredAffinityCount), we simply take the narrowest; the
/// prefer-closest-numa-nodes option and pod- vs container-scope are not modelled (one request).
///
/// Example:
///   std::vector<NumaResources> free{{32000, 256 * 1024, 4}, {32000, 256 * 1024, 2}};
///   NumaAdmit a = topology_admit(TopologyPolicy::kSingleNumaNode, free, {8000, 64 * 1024, 4});
///   // a.admit, a.mask == 0b01, a.preferred
#include <cstdint>
#include <span>
#include <string_view>

#include <gpusched/error.hpp>

namespace gpusched {

/// kubelet --topology-manager-policy.
enum class TopologyPolicy : std::uint8_t { kNone, kBestEffort, kRestricted, kSingleNumaNode };

/// "none", "best-effort", "restricted", "single-numa-node".
std::string_view to_string(TopologyPolicy policy);
/// The policy named as kubelet spells it; throws ScenarioError (kScenarioBadValue) at `where`
/// listing the accepted names otherwise.
TopologyPolicy parse_topology_policy(std::string_view name, const Location& where = {});

/// CPU, memory and GPUs of one NUMA node (socket), or of a request.
struct NumaResources {
  std::int64_t cpu_milli = 0;
  std::int64_t memory_mib = 0;
  std::int64_t gpus = 0;  ///< GPUs (devices) usable for the request
  bool operator==(const NumaResources&) const = default;
};

/// The Topology Manager's answer: admit or not, and the NUMA affinity (bit i = socket i).
struct NumaAdmit {
  bool admit = false;
  std::uint64_t mask = 0;
  bool preferred = false;
  bool operator==(const NumaAdmit&) const = default;
};

/// kubelet's limit on NUMA nodes for the topology manager (maxAllowableNUMANodes).
inline constexpr std::size_t kMaxTopologyNumaNodes = 8;

/// Admission of `request` on a node whose sockets have `free` resources; `capacity` (same size,
/// or empty = `free`) is what each socket has in all, used for "preferred" as kubelet does.
/// Throws ScenarioError (kScenarioBadValue, field "numa") when `free` is empty, `capacity` has
/// another size, or, for a policy other than none, there are more than kMaxTopologyNumaNodes
/// sockets. O(2^S * 2^S * 3) for S sockets.
NumaAdmit topology_admit(TopologyPolicy policy, std::span<const NumaResources> free, const NumaResources& request,
                         std::span<const NumaResources> capacity = {});

}  // namespace gpusched
