#pragma once
/// The inside of one machine as a graph — NUMA sockets, PCIe switches and GPUs — and the questions
/// a scheduler asks of it: how two GPUs are connected, how far apart they are, which k free GPUs
/// sit closest together, and how much slower a placement runs (sharing.md, "Node topology").
///
/// Example:
///   Topology t(node);                               // node: a NodeSpec, e.g. 8 GPUs on an NVSwitch
///   GpuLink l = t.link(0, 5);                       // GpuLink::kNvlink
///   std::vector<int> free{0, 1, 2, 4, 6};
///   std::vector<int> pick = t.best_subset(free, 2); // the two best-connected free GPUs
///   double f = t.slowdown(pick, std::vector<int>{0}, {.pcie = 1.3, .cross_socket = 1.8});
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include <gpusched/node.hpp>

namespace gpusched {

/// How two GPUs of a node talk, best first; mirrors the classes of `nvidia-smi topo -m`.
enum class GpuLink : std::uint8_t {
  kSelf,         ///< "X": the same GPU
  kNvlink,       ///< "NV#": a direct NVLink (an `nvlinks` entry or the same `nvlink_domain`)
  kPcieSwitch,   ///< "PIX"/"PXB": behind the same PCIe switch, no host bridge crossed
  kHostBridge,   ///< "PHB"/"NODE": through the PCIe root (host bridge) of one socket
  kCrossSocket,  ///< "SYS": through the inter-socket link (QPI/UPI/xGMI)
};

/// "X", "NV", "PIX", "PHB", "SYS".
std::string_view to_string(GpuLink link);

/// Run-time factors (>= 1.0) for a multi-GPU task whose GPUs or CPUs are badly placed.
struct TopologySlowdown {
  double pcie = 1.0;          ///< GPUs talk over PCIe within one socket
  double cross_socket = 1.0;  ///< traffic crosses the inter-socket link
};

/// A node's topology, built once from its NodeSpec (a Boost.Graph adjacency list inside; the
/// GPU x GPU link classes and distances are precomputed, so every query is O(1) per pair).
///
/// Graph: one vertex per socket, per PCIe switch and per GPU. Edges and weights:
///   GPU - PCIe switch              kPcieHopWeight   (10)
///   PCIe switch - its socket       kHostBridgeWeight (20)
///   GPU - socket (no switch)       kPcieHopWeight + kHostBridgeWeight (30)
///   socket - socket (every pair)   kInterSocketWeight (100)
///   GPU - GPU NVLink               kNvlinkWeight (1): an `nvlinks` entry, or every pair of one
///                                  `nvlink_domain`
/// So distances order NV (1) < PIX (20) < PHB (60) < SYS (160). A PCIe switch is identified by
/// (socket, pcie_switch id): GPUs with the same id on different sockets are on different switches.
class Topology {
 public:
  static constexpr int kNvlinkWeight = 1;
  static constexpr int kPcieHopWeight = 10;
  static constexpr int kHostBridgeWeight = 20;
  static constexpr int kInterSocketWeight = 100;
  /// best_subset() is exact (branch and bound over all combinations) up to this many candidates.
  static constexpr std::size_t kExactCandidates = 16;

  /// Builds the graph and the GPU x GPU matrices: O(G * (V + E) log V) for G GPUs.
  /// Throws ScenarioError (kScenarioBadValue) naming the node and field when a GPU's socket is
  /// negative or an NVLink names a GPU that does not exist. Sockets: max(node.sockets,
  /// node.numa.size(), highest GPU socket + 1).
  explicit Topology(const NodeSpec& node);

  [[nodiscard]] int gpu_count() const { return gpus_; }
  [[nodiscard]] int sockets() const { return sockets_; }
  /// The socket (NUMA node) GPU `gpu` hangs off. Precondition: 0 <= gpu < gpu_count().
  [[nodiscard]] int socket_of(int gpu) const;
  /// How GPUs `a` and `b` are connected (see GpuLink). O(1).
  [[nodiscard]] GpuLink link(int a, int b) const;
  /// Weighted shortest-path length between GPUs `a` and `b` (Dijkstra over the weights above;
  /// 0 for a == b; a path may hop over other GPUs' NVLinks). O(1).
  [[nodiscard]] int distance(int a, int b) const;

  /// The `k` GPUs among `candidates` (free GPU indices; duplicates ignored) that minimise, in
  /// this order: the worst pairwise GpuLink, the sum of pairwise distances, and then the index set
  /// itself (lexicographically smallest). Returned sorted ascending. Exact when there are at most
  /// kExactCandidates candidates (or at most 20000 combinations); beyond, greedy: from every seed
  /// candidate, add the candidate with the best (worst link, distance sum) to the set so far, and
  /// keep the best finished set. Empty when k <= 0 or fewer than k distinct candidates.
  /// Precondition: every candidate is a valid GPU index.
  [[nodiscard]] std::vector<int> best_subset(std::span<const int> candidates, int k) const;

  /// Run-time factor of a task on `gpus` whose CPUs sit on `cpu_sockets` (empty = CPUs not
  /// pinned: the CPU rule below is skipped). 1.0 when `gpus` is empty. Otherwise, with GS = the
  /// set of sockets of `gpus` and CS = the set of `cpu_sockets`:
  ///   - `factors.cross_socket` when two of the GPUs on different sockets are not directly
  ///     NVLinked (GpuLink::kCrossSocket), or CS is not empty and CS != GS (some CPUs are
  ///     on a socket without any of the task's GPUs, or some GPUs on a socket without its CPUs);
  ///   - else `factors.pcie` when the worst GPU pair is kPcieSwitch or kHostBridge (they talk
  ///     over PCIe within a socket);
  ///   - else 1.0: at most one GPU, or every GPU pair directly NVLinked, with the CPUs (if any)
  ///     on exactly the GPUs' sockets.
  /// The first rule that applies wins (cross_socket before pcie). O(n^2) for n GPUs.
  /// Precondition: valid GPU indices and sockets.
  [[nodiscard]] double slowdown(std::span<const int> gpus, std::span<const int> cpu_sockets,
                                const TopologySlowdown& factors) const;

 private:
  [[nodiscard]] std::size_t at(int a, int b) const;

  int gpus_ = 0;
  int sockets_ = 1;
  std::vector<int> socket_of_;    ///< per GPU
  std::vector<GpuLink> link_;     ///< gpus_ x gpus_, row-major
  std::vector<int> distance_;     ///< gpus_ x gpus_, row-major
};

}  // namespace gpusched
