#include <gpusched/topology.hpp>

#include <algorithm>
#include <limits>
#include <map>
#include <string>
#include <utility>

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/dijkstra_shortest_paths.hpp>

#include <gpusched/assert.hpp>
#include <gpusched/error.hpp>

namespace gpusched {
namespace {

using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::undirectedS, boost::no_property,
                                    boost::property<boost::edge_weight_t, int>>;

[[noreturn]] void bad_node(const NodeSpec& node, const std::string& field, const std::string& message) {
  throw_error(ErrorCode::kScenarioBadValue, {"", 0, "nodes/" + node.name + "/" + field}, message);
}

/// Objective of a GPU set: worst pairwise link, then the sum of pairwise distances.
struct Score {
  GpuLink worst = GpuLink::kSelf;
  long long sum = 0;
  auto operator<=>(const Score&) const = default;
};

/// C(n, k), saturating at `cap`.
long long combinations(std::size_t n, std::size_t k, long long cap) {
  long long c = 1;
  k = std::min(k, n - k);
  for (std::size_t i = 1; i <= k; ++i) {
    c = c * static_cast<long long>(n - k + i) / static_cast<long long>(i);
    if (c > cap) return cap + 1;
  }
  return c;
}

}  // namespace

std::string_view to_string(GpuLink link) {
  switch (link) {
    case GpuLink::kSelf: return "X";
    case GpuLink::kNvlink: return "NV";
    case GpuLink::kPcieSwitch: return "PIX";
    case GpuLink::kHostBridge: return "PHB";
    case GpuLink::kCrossSocket: return "SYS";
  }
  return "?";
}

Topology::Topology(const NodeSpec& node) : gpus_(static_cast<int>(node.gpus.size())) {
  const std::size_t g = node.gpus.size();
  int sockets = std::max<int>({1, node.sockets, static_cast<int>(node.numa.size())});
  socket_of_.resize(g);
  for (std::size_t i = 0; i < g; ++i) {
    const int s = node.gpus[i].socket;
    if (s < 0) bad_node(node, "gpus/" + std::to_string(i) + "/socket", "a GPU's socket cannot be negative");
    socket_of_[i] = s;
    sockets = std::max(sockets, s + 1);
  }
  sockets_ = sockets;

  // Direct NVLinks: explicit pairs and every pair of one domain.
  std::vector<char> nvlinked(g * g, 0);
  for (std::size_t k = 0; k < node.nvlinks.size(); ++k) {
    const auto& l = node.nvlinks[k];
    if (l.a >= g || l.b >= g || l.a == l.b) {
      bad_node(node, "nvlinks/" + std::to_string(k),
               "an NVLink joins GPUs " + std::to_string(l.a) + " and " + std::to_string(l.b) + " but the node has " +
                   std::to_string(g) + " GPU(s)");
    }
    nvlinked[l.a * g + l.b] = nvlinked[l.b * g + l.a] = 1;
  }
  for (std::size_t a = 0; a < g; ++a) {
    for (std::size_t b = a + 1; b < g; ++b) {
      const auto da = node.gpus[a].nvlink_domain;
      if (da >= 0 && da == node.gpus[b].nvlink_domain) nvlinked[a * g + b] = nvlinked[b * g + a] = 1;
    }
  }

  // Vertices: sockets [0, S), switches [S, S + W), GPUs [S + W, S + W + G).
  std::map<std::pair<int, int>, std::size_t> switches;  // (socket, pcie_switch) -> switch number
  for (std::size_t i = 0; i < g; ++i) {
    if (node.gpus[i].pcie_switch >= 0) switches.try_emplace({socket_of_[i], node.gpus[i].pcie_switch}, switches.size());
  }
  const auto s_count = static_cast<std::size_t>(sockets_);
  const std::size_t gpu0 = s_count + switches.size();
  Graph graph(gpu0 + g);
  for (std::size_t a = 0; a < s_count; ++a) {
    for (std::size_t b = a + 1; b < s_count; ++b) boost::add_edge(a, b, kInterSocketWeight, graph);
  }
  for (const auto& [key, number] : switches) {
    boost::add_edge(s_count + number, static_cast<std::size_t>(key.first), kHostBridgeWeight, graph);
  }
  std::vector<int> switch_of(g, -1);  // switch number per GPU, -1 = none
  for (std::size_t i = 0; i < g; ++i) {
    const auto sock = static_cast<std::size_t>(socket_of_[i]);
    if (node.gpus[i].pcie_switch >= 0) {
      const std::size_t sw = switches.at({socket_of_[i], node.gpus[i].pcie_switch});
      switch_of[i] = static_cast<int>(sw);
      boost::add_edge(gpu0 + i, s_count + sw, kPcieHopWeight, graph);
    } else {
      boost::add_edge(gpu0 + i, sock, kPcieHopWeight + kHostBridgeWeight, graph);
    }
    for (std::size_t j = i + 1; j < g; ++j) {
      if (nvlinked[i * g + j]) boost::add_edge(gpu0 + i, gpu0 + j, kNvlinkWeight, graph);
    }
  }

  link_.assign(g * g, GpuLink::kSelf);
  distance_.assign(g * g, 0);
  std::vector<int> dist(boost::num_vertices(graph));
  for (std::size_t a = 0; a < g; ++a) {
    boost::dijkstra_shortest_paths(graph, gpu0 + a, boost::distance_map(dist.data()));
    for (std::size_t b = 0; b < g; ++b) {
      distance_[a * g + b] = dist[gpu0 + b];
      GpuLink l = GpuLink::kCrossSocket;
      if (a == b) l = GpuLink::kSelf;
      else if (nvlinked[a * g + b]) l = GpuLink::kNvlink;
      else if (switch_of[a] >= 0 && switch_of[a] == switch_of[b]) l = GpuLink::kPcieSwitch;
      else if (socket_of_[a] == socket_of_[b]) l = GpuLink::kHostBridge;
      link_[a * g + b] = l;
    }
  }
}

std::size_t Topology::at(int a, int b) const {
  GPUSCHED_ASSERT(a >= 0 && a < gpus_ && b >= 0 && b < gpus_, "GPU index out of range");
  return static_cast<std::size_t>(a) * static_cast<std::size_t>(gpus_) + static_cast<std::size_t>(b);
}

int Topology::socket_of(int gpu) const {
  GPUSCHED_ASSERT(gpu >= 0 && gpu < gpus_, "GPU index out of range");
  return socket_of_[static_cast<std::size_t>(gpu)];
}

GpuLink Topology::link(int a, int b) const { return link_[at(a, b)]; }

int Topology::distance(int a, int b) const { return distance_[at(a, b)]; }

std::vector<int> Topology::best_subset(std::span<const int> candidates, int k) const {
  std::vector<int> c(candidates.begin(), candidates.end());
  std::sort(c.begin(), c.end());
  c.erase(std::unique(c.begin(), c.end()), c.end());
  for (int x : c) GPUSCHED_ASSERT(x >= 0 && x < gpus_, "best_subset: candidate is not a GPU of the node");
  if (k <= 0 || c.size() < static_cast<std::size_t>(k)) return {};
  const auto n = c.size();
  const auto kk = static_cast<std::size_t>(k);

  // Adding `x` to `set` (score `s`): the new score.
  auto extend = [&](Score s, const std::vector<int>& set, int x) {
    for (int y : set) {
      s.worst = std::max(s.worst, link(x, y));
      s.sum += distance(x, y);
    }
    return s;
  };

  if (n <= kExactCandidates || combinations(n, kk, 20000) <= 20000) {
    // Depth-first over combinations in lexicographic order; a partial set whose score is already
    // no better than the best complete one cannot win (scores only grow), and ties keep the
    // earlier, lexicographically smaller set.
    std::vector<int> cur, best;
    Score best_score{GpuLink::kCrossSocket, std::numeric_limits<long long>::max()};
    bool found = false;
    auto dfs = [&](auto&& self, std::size_t from, Score s) -> void {
      if (found && s >= best_score) return;
      if (cur.size() == kk) {
        best = cur;
        best_score = s;
        found = true;
        return;
      }
      for (std::size_t i = from; i + (kk - cur.size()) <= n; ++i) {
        const Score next = extend(s, cur, c[i]);
        cur.push_back(c[i]);
        self(self, i + 1, next);
        cur.pop_back();
      }
    };
    dfs(dfs, 0, Score{});
    return best;
  }

  // Greedy from every seed.
  std::vector<int> best;
  Score best_score{};
  for (std::size_t seed = 0; seed < n; ++seed) {
    std::vector<int> set{c[seed]};
    std::vector<char> used(n, 0);
    used[seed] = 1;
    Score s{};
    while (set.size() < kk) {
      std::size_t pick = n;
      Score pick_score{};
      for (std::size_t i = 0; i < n; ++i) {
        if (used[i]) continue;
        const Score t = extend(Score{}, set, c[i]);
        if (pick == n || t < pick_score) {
          pick = i;
          pick_score = t;
        }
      }
      s = extend(s, set, c[pick]);
      set.push_back(c[pick]);
      used[pick] = 1;
    }
    std::sort(set.begin(), set.end());
    if (best.empty() || s < best_score || (s == best_score && set < best)) {
      best = std::move(set);
      best_score = s;
    }
  }
  return best;
}

double Topology::slowdown(std::span<const int> gpus, std::span<const int> cpu_sockets,
                          const TopologySlowdown& factors) const {
  if (gpus.empty()) return 1.0;
  GpuLink worst = GpuLink::kSelf;
  std::vector<int> gpu_sockets;
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    gpu_sockets.push_back(socket_of(gpus[i]));
    for (std::size_t j = i + 1; j < gpus.size(); ++j) worst = std::max(worst, link(gpus[i], gpus[j]));
  }
  std::sort(gpu_sockets.begin(), gpu_sockets.end());
  gpu_sockets.erase(std::unique(gpu_sockets.begin(), gpu_sockets.end()), gpu_sockets.end());
  std::vector<int> cpus(cpu_sockets.begin(), cpu_sockets.end());
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  for (int s : cpus) GPUSCHED_ASSERT(s >= 0 && s < sockets_, "slowdown: CPU socket out of range");

  if (worst == GpuLink::kCrossSocket || (!cpus.empty() && cpus != gpu_sockets)) return factors.cross_socket;
  if (worst == GpuLink::kPcieSwitch || worst == GpuLink::kHostBridge) return factors.pcie;
  return 1.0;
}

}  // namespace gpusched
