#pragma once
/// The node index behind Scheduler::set_node_index (issue 14).
///
/// A plain decision runs every filter on every node and scores every feasible one: O(nodes)
/// plugin calls. When every filter and score plugin of the profile gives node-local answers
/// (Plugin::node_local_for: they depend only on the node's state, which its generation counts,
/// and on the job's request and constraints), the answers for a node stay valid until that node
/// changes. The index keeps, per request class (request, placement constraints, task counts,
/// compared exactly, not by hash only), each node's filter verdict, its raw score per plugin and
/// the generation they were computed at. A decision first brings the class up to date from the
/// cluster's change log (ClusterState::changed_since: only nodes changed since the class was
/// last used are recomputed), then:
///  - when every score plugin leaves its scores as they are (normalize_is_identity), a max tree
///    over each node's total (sum of weight x score, added in profile order exactly as the scan
///    adds them, infeasible = -inf) gives the top total and, for ties, the lowest node index (or
///    the k-th tied node for a random tie-break): O(log nodes);
///  - when the one score plugin normalises min-max (normalize_is_min_max) and ties go to node
///    order, a tree of raw scores with subtree maxima and minima gives the feasible nodes'
///    lowest and highest scores, hence each node's normalised score, and the lowest-index node
///    reaching the top one: O(log nodes);
///  - otherwise the cached raw scores of the feasible nodes, in node order, go through the
///    plugins' normalize() exactly as the scan's would: no plugin call per node, O(nodes) adds.
/// Each rejected node also keeps why (its reject signature: the first failing filter's status
/// and, for kube-scheduler wording, every reason that filter gives), so when no node is feasible
/// the diagnosis (which filter rejected how many nodes, in its words) is counted from the index
/// in one pass, with no plugin call, in the order the scan would have noted it. The cluster object is identified by
/// ClusterState::instance(), so a what-if copy never reads another copy's answers.
///
/// Memory: per class, 8 + 1 + 4 + 8 x score plugins bytes per node, plus 24 bytes per node for the
/// tree. Classes are evicted least recently used beyond a budget of 96 classes' worth, at least
/// 64 MiB and at most 1 GiB in all (and 4,096 classes): a workload with more active request
/// classes than fit rebuilds classes over and over, each rebuild as dear as a full scan, so large
/// clusters get room for ~96 of them (100,000 nodes: ~6 MB a class).
#include <algorithm>
#include <bit>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <span>
#include <vector>

#include <gpusched/assert.hpp>
#include <gpusched/cluster.hpp>
#include <gpusched/job.hpp>
#include <gpusched/policies/framework/plugin.hpp>
#include <gpusched/policies/framework/scheduler.hpp>
#include <gpusched/scheduling.hpp>
#include <gpusched/status.hpp>

namespace gpusched::policies {

/// One request class's answers for every node of one cluster.
struct NodeIndexClass {
  std::uint64_t hash = 0;
  JobSpec key;                      ///< the job the class was made for (its request and constraints)
  std::vector<std::uint64_t> variant;   ///< the filters' index_key() after pre_filter (capacity-queues' flavors)
  std::uint64_t instance = 0;       ///< ClusterState::instance() the answers are for (0: none)
  std::uint64_t log_pos = 0;        ///< ClusterState::change_count() when last brought up to date
  std::uint64_t last_used = 0;
  std::size_t nodes = 0;
  std::vector<std::uint64_t> gen;   ///< per node: the generation the answers were computed at
  std::vector<std::uint8_t> feasible;
  std::vector<std::uint32_t> reject;   ///< per node: its reject signature + 1 (0: feasible; kDeferred: not yet asked)
  std::size_t deferred = 0;            ///< nodes whose reject is kDeferred
  std::size_t feasible_count = 0;
  std::vector<double> raw;          ///< [plugin x nodes + node]: raw score (feasible nodes only)
  std::vector<std::uint32_t> active;   ///< per idle-normalised plugin: feasible nodes with an active raw score
  /// The last diagnosis counted from this class (Scheduler::diagnose_from_index), valid while
  /// log_pos is still diag_pos: every reject signature with its node count, in the order the
  /// scan notes them, and the nodes where preemption might help. Jobs of one request that fail
  /// one after another with nothing changed in between read it instead of counting again.
  std::uint64_t diag_pos = std::numeric_limits<std::uint64_t>::max();
  std::vector<std::pair<std::uint32_t, std::uint32_t>> diag_sigs;
  std::vector<NodeId> diag_resolvable;
  // Max tree over totals (tree mode): leaves at [leaves, 2 leaves), root at 1.
  std::size_t leaves = 0;
  std::vector<double> top;          ///< highest total in the subtree
  std::vector<std::uint32_t> ties;  ///< leaves holding it
  std::vector<double> bottom;       ///< lowest value in the subtree (min-max mode; +inf: none)
};

/// Why a node was rejected: the first failing filter's status and (kube-scheduler wording)
/// every reason that filter gives for the node.
struct NodeIndexSignature {
  Status status;
  std::vector<std::string_view> reasons;
};

/// Every node's free capacity (CapacityNeed::of) in node order, with the largest of each over
/// every subtree: one tree for all request classes, brought up to date from the cluster's change
/// log (a few leaf-to-root paths per decision). first() finds the lowest-index node meeting a
/// task's bounds in O(log nodes) per subtree it has to open.
class CapacityTree {
 public:
  static constexpr std::uint32_t kNone = std::numeric_limits<std::uint32_t>::max();

  /// Brings the tree up to date with `cluster` (rebuilt for another cluster object).
  void refresh(const ClusterState& cluster) {
    const std::size_t n = cluster.node_count();
    if (instance_ != cluster.instance() || n_ != n) {
      rebuild(cluster);
      return;
    }
    if (cluster.change_count() == log_pos_) return;
    const auto changed = cluster.changed_since(log_pos_);
    if (!changed || changed->size() * 8 >= leaves_) {
      rebuild(cluster);
      return;
    }
    const auto nodes = cluster.nodes();
    for (const std::uint32_t u : *changed) {
      std::size_t at = leaves_ + u;
      tree_[at] = CapacityNeed::of(nodes[u]);
      for (at /= 2; at >= 1; at /= 2) pull(at);
    }
    log_pos_ = cluster.change_count();
  }

  /// The lowest-index node at or after `from` whose free capacity meets `need`, or kNone.
  [[nodiscard]] std::uint32_t first(const CapacityNeed& need, std::uint32_t from) const {
    if (n_ == 0 || from >= n_) return kNone;
    return find(1, 0, leaves_, need, from);
  }

  [[nodiscard]] std::uint64_t instance() const { return instance_; }

 private:
  std::uint32_t find(std::size_t at, std::size_t lo, std::size_t hi, const CapacityNeed& need, std::uint32_t from) const {
    if (hi <= from || !need.admits(tree_[at])) return kNone;
    if (hi - lo == 1) return lo < n_ ? static_cast<std::uint32_t>(lo) : kNone;
    const std::size_t mid = lo + (hi - lo) / 2;
    const std::uint32_t l = find(2 * at, lo, mid, need, from);
    return l != kNone ? l : find(2 * at + 1, mid, hi, need, from);
  }

  void rebuild(const ClusterState& cluster) {
    n_ = cluster.node_count();
    instance_ = cluster.instance();
    log_pos_ = cluster.change_count();
    leaves_ = std::bit_ceil(std::max<std::size_t>(n_, 1));
    tree_.assign(2 * leaves_, CapacityNeed{});   // padding: not schedulable, no capacity
    const auto nodes = cluster.nodes();
    for (std::size_t u = 0; u < n_; ++u) tree_[leaves_ + u] = CapacityNeed::of(nodes[u]);
    for (std::size_t at = leaves_ - 1; at >= 1; --at) pull(at);
  }

  void pull(std::size_t at) {
    tree_[at] = tree_[2 * at];
    tree_[at].merge(tree_[2 * at + 1]);   // the larger of each bound: the subtree's best capacity
  }

  std::uint64_t instance_ = 0;
  std::uint64_t log_pos_ = 0;
  std::size_t n_ = 0;
  std::size_t leaves_ = 0;
  std::vector<CapacityNeed> tree_;
};

class NodeIndex {
 public:
  static constexpr double kInfeasible = -std::numeric_limits<double>::infinity();
  static constexpr std::size_t kMaxClasses = 4096;
  static constexpr std::size_t kMinBytes = std::size_t{64} << 20;
  static constexpr std::size_t kMaxBytes = std::size_t{1} << 30;
  static constexpr std::size_t kBudgetClasses = 96;

  using Class = NodeIndexClass;

  /// What the tree holds: nothing (the cached raw scores are normalised per decision), each
  /// node's total (every score plugin's normalize is the identity), or the raw score of the one
  /// min-max normalised plugin, with the subtree minimum as well.
  enum class Mode : std::uint8_t { kLinear, kTotals, kMinMax };

  NodeIndex(std::span<FilterPlugin* const> filters, std::span<const std::pair<ScorePlugin*, double>> scores, Mode mode,
            bool reasons)
      : filters_(filters.begin(), filters.end()), scores_(scores.begin(), scores.end()), mode_(mode),
        tree_(mode != Mode::kLinear), reasons_(reasons) {
    for (std::size_t k = 0; k < scores_.size(); ++k) {
      const auto* p = scores_[k].first;
      if (mode_ == Mode::kTotals && !p->normalize_is_identity()) {
        GPUSCHED_ASSERT(p->normalize_when_idle().applies, "a totals tree needs every score's normalize known");
        idle_.push_back({k, p->normalize_when_idle()});
      }
    }
  }

  /// Whether every score plugin of `mode` kTotals lets the tree answer (normalize is the identity,
  /// or its idle behaviour is known: see idle()).
  [[nodiscard]] static bool tree_serves(std::span<const std::pair<ScorePlugin*, double>> scores) {
    return std::all_of(scores.begin(), scores.end(),
                       [](const auto& s) { return s.first->normalize_is_identity() || s.first->normalize_when_idle().applies; });
  }
  /// Totals mode: the tree's totals are the scan's when no feasible node has an active score for
  /// a plugin whose normalize is not the identity (the totals assume each acts as when idle).
  /// Otherwise the caller normalises the cached raw scores as the scan would.
  [[nodiscard]] static bool idle(const Class& c) {
    return std::all_of(c.active.begin(), c.active.end(), [](std::uint32_t a) { return a == 0; });
  }

  using Signature = NodeIndexSignature;
  [[nodiscard]] const Signature& signature(std::uint32_t id) const { return signatures_[id]; }
  [[nodiscard]] std::size_t signature_count() const { return signatures_.size(); }

  [[nodiscard]] Mode mode() const { return mode_; }

  /// The class of `ctx.job` under the filters' `variant` (FilterPlugin::index_key), its answers
  /// brought up to date with `cluster`.
  Class& refresh(const ClusterState& cluster, const TaskContext& ctx, std::span<const std::uint64_t> variant = {}) {
    const JobSpec& job = ctx.job;
    need_ = need_of(cluster, ctx);
    std::uint64_t h = request_class(job);
    for (const auto v : variant) h = (h ^ v) * 0x100000001b3ULL;
    ++clock_;
    Class* c = nullptr;
    auto& same_hash = by_hash_[h];
    // A class is kept per cluster object: EASY backfill asks the same request class of the real
    // cluster and of its scratch copy (the reservation what-if) in turn, and one class per
    // request rebuilt itself (a full pass over every node) at every switch.
    for (const std::uint32_t k : same_hash) {
      if (classes_[k].instance == cluster.instance() && same_class(classes_[k].key, job) &&
          std::equal(variant.begin(), variant.end(), classes_[k].variant.begin(), classes_[k].variant.end())) {
        c = &classes_[k];
        break;
      }
    }
    const std::size_t n = cluster.node_count();
    if (c == nullptr) {
      const std::size_t per_class = n * (21 + 8 * scores_.size()) + (tree_ ? 24 * std::bit_ceil(std::max<std::size_t>(n, 1)) : 0);
      const std::size_t budget = std::clamp<std::size_t>(kBudgetClasses * per_class, kMinBytes, kMaxBytes);
      const std::size_t cap = std::clamp<std::size_t>(budget / std::max<std::size_t>(per_class, 1), 2, kMaxClasses);
      std::uint32_t slot = 0;
      if (classes_.size() < cap) {
        slot = static_cast<std::uint32_t>(classes_.size());
        classes_.emplace_back();
      } else {
        slot = static_cast<std::uint32_t>(std::min_element(classes_.begin(), classes_.end(),
                                                           [](const Class& a, const Class& b) { return a.last_used < b.last_used; }) -
                                          classes_.begin());
        auto& old = by_hash_[classes_[slot].hash];
        std::erase(old, slot);
        if (old.empty()) by_hash_.erase(classes_[slot].hash);
      }
      by_hash_[h].push_back(slot);
      c = &classes_[slot];
      c->hash = h;
      c->key = job;
      c->variant.assign(variant.begin(), variant.end());
      c->instance = 0;
    }
    c->last_used = clock_;
    if (c->instance != cluster.instance() || c->nodes != n) {
      rebuild(*c, cluster, ctx);
    } else if (cluster.change_count() != c->log_pos) {
      const auto nodes = cluster.nodes();
      dirty_.clear();
      const auto changed = cluster.changed_since(c->log_pos);
      if (changed && changed->size() <= n / 2) {
        for (const std::uint32_t u : *changed) {
          if (c->gen[u] != nodes[u].generation) {
            c->gen[u] = nodes[u].generation;
            dirty_.push_back(u);
          }
        }
      } else {
        for (std::uint32_t u = 0; u < n; ++u) {
          if (c->gen[u] != nodes[u].generation) {
            c->gen[u] = nodes[u].generation;
            dirty_.push_back(u);
          }
        }
      }
      update(*c, cluster, ctx, dirty_, false);
    }
    c->log_pos = cluster.change_count();
    return *c;
  }

  /// The lowest-index node every filter accepts (the first feasible node in node order), found
  /// through the shared capacity tree: the filters run only on nodes meeting their bounds, from
  /// the lowest index up, until one accepts. Nothing: no node is feasible (the caller asks the
  /// class for the diagnosis). Answers what a scan stopping at the first feasible node answers.
  [[nodiscard]] std::optional<std::uint32_t> first_feasible(const ClusterState& cluster, const TaskContext& ctx) {
    CapacityTree* t = tree_for(cluster);
    const CapacityNeed need = need_of(cluster, ctx);
    for (std::uint32_t u = t->first(need, 0); u != CapacityTree::kNone; u = t->first(need, u + 1)) {
      ++stats.node_updates;
      if (std::all_of(filters_.begin(), filters_.end(), [&](const FilterPlugin* f) { return f->filter(cluster, ctx, NodeId{u}).ok(); })) {
        return u;
      }
    }
    return std::nullopt;
  }

  /// Sets the signature of every node whose rejection was decided by the capacity bounds alone
  /// (filters not called): before the rejects are counted or read. `c` is up to date.
  void resolve_deferred(Class& c, const ClusterState& cluster, const TaskContext& ctx) {
    if (c.deferred == 0) return;
    for (std::uint32_t u = 0; u < c.nodes; ++u) {
      if (c.reject[u] == kDeferred) resolve(c, cluster, ctx, u);
    }
  }
  /// Node u's reject signature + 1 (0: feasible), deciding a deferred one.
  std::uint32_t reject_of(Class& c, const ClusterState& cluster, const TaskContext& ctx, std::uint32_t u) {
    if (c.reject[u] == kDeferred) resolve(c, cluster, ctx, u);
    return c.reject[u];
  }

  /// Tree mode: the node with the highest total, lowest index first; `pick` (< ties at the top)
  /// selects the pick-th tied node in node order instead. Precondition: some node is feasible.
  [[nodiscard]] static std::uint32_t best(const Class& c, std::uint32_t pick = 0) {
    std::size_t at = 1;
    while (at < c.leaves) {
      const std::size_t l = 2 * at;
      if (c.top[l] == c.top[at]) {
        if (pick < c.ties[l]) {
          at = l;
          continue;
        }
        pick -= c.ties[l];
      }
      at = l + 1;
    }
    return static_cast<std::uint32_t>(at - c.leaves);
  }

  /// Min-max mode, node-order ties: the lowest-index node whose normalised, weighted score
  /// (min_max_score over the feasible nodes' lowest and highest raw scores, times `weight`, as the
  /// scan computes it) equals the top one. That test is monotone in the raw score, so a subtree
  /// holds such a node exactly when its highest raw score passes it. Precondition: a node is feasible.
  [[nodiscard]] static std::uint32_t best_min_max(const Class& c, double weight) {
    const double hi = c.top[1], lo = c.bottom[1];
    const double target = 0.0 + weight * min_max_score(hi, lo, hi);
    auto top = [&](double x) { return x != kInfeasible && 0.0 + weight * min_max_score(x, lo, hi) == target; };
    std::size_t at = 1;
    while (at < c.leaves) at = top(c.top[2 * at]) ? 2 * at : 2 * at + 1;
    return static_cast<std::uint32_t>(at - c.leaves);
  }

  /// Forgets every class (a new run: plugins were attached again).
  void clear() {
    classes_.clear();
    by_hash_.clear();
    trees_[0] = trees_[1] = CapacityTree{};
  }

  Scheduler::IndexStats stats;

 private:
  /// Jobs whose node-local answers agree: what request_class() hashes, compared exactly.
  static bool same_class(const JobSpec& a, const JobSpec& b) {
    const auto& x = a.constraints;
    const auto& y = b.constraints;
    return a.tasks == b.tasks && a.min_available == b.min_available && a.request == b.request &&
           x.node_selector == y.node_selector && x.affinity == y.affinity && x.tolerations == y.tolerations &&
           x.app == y.app && x.max_per_node == y.max_per_node;
  }

  static constexpr std::uint32_t kDeferred = std::numeric_limits<std::uint32_t>::max();

  CapacityNeed need_of(const ClusterState& cluster, const TaskContext& ctx) const {
    CapacityNeed need;
    for (const auto* f : filters_) f->capacity_need(cluster, ctx, need);
    return need;
  }

  /// The capacity tree of `cluster`, up to date (two kept: EASY backfill alternates between the
  /// cluster and its scratch copy).
  CapacityTree* tree_for(const ClusterState& cluster) {
    CapacityTree* t = &trees_[0];
    if (trees_[0].instance() != cluster.instance()) {
      if (trees_[1].instance() != cluster.instance()) std::swap(trees_[0], trees_[1]);   // [0] is replaced
      else t = &trees_[1];
    }
    t->refresh(cluster);
    return t;
  }

  void resolve(Class& c, const ClusterState& cluster, const TaskContext& ctx, std::uint32_t u) {
    for (const auto* f : filters_) {
      const Status st = f->filter(cluster, ctx, NodeId{u});
      if (!st.ok()) {
        c.reject[u] = signature_of(*f, cluster, ctx, NodeId{u}, st) + 1;
        --c.deferred;
        return;
      }
    }
    GPUSCHED_ASSERT(false, "a filter's capacity_need rejected a node every filter accepts");
  }

  void rebuild(Class& c, const ClusterState& cluster, const TaskContext& ctx) {
    ++stats.rebuilds;
    const std::size_t n = cluster.node_count();
    c.instance = cluster.instance();
    c.nodes = n;
    c.gen.resize(n);
    c.feasible.assign(n, 0);
    c.reject.assign(n, 0);
    c.deferred = 0;
    c.diag_pos = std::numeric_limits<std::uint64_t>::max();
    c.active.assign(idle_.size(), 0);
    c.feasible_count = 0;
    c.raw.assign(n * scores_.size(), 0.0);
    if (tree_) {
      c.leaves = std::bit_ceil(std::max<std::size_t>(n, 1));
      c.top.assign(2 * c.leaves, kInfeasible);
      c.ties.assign(2 * c.leaves, 0);
      if (mode_ == Mode::kMinMax) c.bottom.assign(2 * c.leaves, std::numeric_limits<double>::infinity());
    }
    dirty_.resize(n);
    const auto nodes = cluster.nodes();
    for (std::uint32_t u = 0; u < n; ++u) {
      dirty_[u] = u;
      c.gen[u] = nodes[u].generation;
    }
    update(c, cluster, ctx, dirty_, true);
    if (tree_) {
      for (std::size_t at = c.leaves - 1; at >= 1; --at) pull(c, at);
    }
  }

  void pull(Class& c, std::size_t at) const {
    const std::size_t l = 2 * at, r = l + 1;
    if (mode_ == Mode::kMinMax) c.bottom[at] = std::min(c.bottom[l], c.bottom[r]);
    if (c.top[l] > c.top[r]) {
      c.top[at] = c.top[l];
      c.ties[at] = c.ties[l];
    } else if (c.top[r] > c.top[l]) {
      c.top[at] = c.top[r];
      c.ties[at] = c.ties[r];
    } else {
      c.top[at] = c.top[l];
      c.ties[at] = c.top[l] == kInfeasible ? 0 : c.ties[l] + c.ties[r];
    }
  }

  /// Sets node u's leaf; its ancestors are brought up to date by propagate() (or, in a rebuild,
  /// by pulling every inner node).
  void set_leaf(Class& c, std::uint32_t u, double total, bool bulk) {
    const std::size_t at = c.leaves + u;
    if (!bulk && c.top[at] == total) return;   // ties and bottom follow from the total
    c.top[at] = total;
    c.ties[at] = total == kInfeasible ? 0 : 1;
    if (mode_ == Mode::kMinMax) c.bottom[at] = total == kInfeasible ? std::numeric_limits<double>::infinity() : total;
    if (!bulk) touched_.push_back(at / 2);
  }

  /// Pulls the ancestors of the leaves set since the last call, level by level, each once: k
  /// changed leaves cost about 2k pulls instead of k x log2(nodes) (a rarely used class brought
  /// up to date after many changes), or one pass over every inner node when k is large.
  void propagate(Class& c) {
    if (touched_.empty()) return;
    if (touched_.size() * 8 >= c.leaves) {
      for (std::size_t at = c.leaves - 1; at >= 1; --at) pull(c, at);
      touched_.clear();
      return;
    }
    std::sort(touched_.begin(), touched_.end());
    touched_.erase(std::unique(touched_.begin(), touched_.end()), touched_.end());
    while (!touched_.empty()) {   // all at one depth: leaves are
      for (const std::size_t at : touched_) pull(c, at);
      if (touched_.front() == 1) break;
      for (auto& at : touched_) at /= 2;
      touched_.erase(std::unique(touched_.begin(), touched_.end()), touched_.end());
    }
    touched_.clear();
  }

  /// Recomputes the answers of `nodes` (their generations are already recorded).
  void update(Class& c, const ClusterState& cluster, const TaskContext& ctx, std::span<const std::uint32_t> nodes, bool bulk) {
    set_answers(c, cluster, ctx, nodes, bulk);
    if (tree_ && !bulk) propagate(c);
  }

  void set_answers(Class& c, const ClusterState& cluster, const TaskContext& ctx, std::span<const std::uint32_t> nodes,
                   bool bulk) {
    const std::size_t n = c.nodes;
    fit_.clear();
    const auto states = cluster.nodes();
    for (const std::uint32_t u : nodes) {
      const NodeId node{u};
      if (c.reject[u] == kDeferred) --c.deferred;
      if (c.feasible[u] != 0) {
        for (std::size_t j = 0; j < idle_.size(); ++j) {
          if (scores_[idle_[j].plugin].first->normalize_active(c.raw[idle_[j].plugin * n + u])) --c.active[j];
        }
      }
      if (!need_.admits(states[u])) {
        // Rejected by a filter's bounds: which filter, and why, is asked only if someone reads it.
        ++stats.pruned;
        c.reject[u] = kDeferred;
        ++c.deferred;
        if (c.feasible[u] != 0) --c.feasible_count;
        c.feasible[u] = 0;
        if (tree_) set_leaf(c, u, kInfeasible, bulk);
        continue;
      }
      ++stats.node_updates;
      bool ok = true;
      for (const auto* f : filters_) {
        const Status st = f->filter(cluster, ctx, node);
        if (!st.ok()) {
          ok = false;
          c.reject[u] = signature_of(*f, cluster, ctx, node, st) + 1;
          break;
        }
      }
      if (ok) c.reject[u] = 0;
      const bool was = c.feasible[u] != 0;
      c.feasible[u] = ok ? 1 : 0;
      if (ok && !was) ++c.feasible_count;
      if (!ok && was) --c.feasible_count;
      if (ok) fit_.push_back(node);
      else if (tree_) set_leaf(c, u, kInfeasible, bulk);
    }
    if (fit_.empty()) return;
    scratch_.resize(fit_.size());
    for (std::size_t k = 0; k < scores_.size(); ++k) {
      scores_[k].first->score_all(cluster, ctx, fit_, scratch_);
      double* raw = c.raw.data() + k * n;
      for (std::size_t i = 0; i < fit_.size(); ++i) raw[fit_[i].value] = scratch_[i];
    }
    for (std::size_t j = 0; j < idle_.size(); ++j) {
      const auto* p = scores_[idle_[j].plugin].first;
      const double* raw = c.raw.data() + idle_[j].plugin * n;
      for (const NodeId node : fit_) c.active[j] += p->normalize_active(raw[node.value]) ? 1 : 0;
    }
    if (!tree_) return;
    if (mode_ == Mode::kMinMax) {
      const double* raw = c.raw.data();
      for (const NodeId node : fit_) set_leaf(c, node.value, raw[node.value], bulk);
      return;
    }
    for (const NodeId node : fit_) {
      double total = 0.0;
      std::size_t j = 0;
      for (std::size_t k = 0; k < scores_.size(); ++k) {
        double s = c.raw[k * n + node.value];
        if (j < idle_.size() && idle_[j].plugin == k) {   // as normalize() leaves it when idle
          if (!idle_[j].idle.identity) s = idle_[j].idle.value;
          ++j;
        } else {
          GPUSCHED_ASSERT(s >= -1e-9 && s <= 100.0 + 1e-9, "score plugin returned a score outside [0, 100]");
        }
        total += scores_[k].second * s;
      }
      set_leaf(c, node.value, total, bulk);
    }
  }

  std::uint32_t signature_of(const FilterPlugin& f, const ClusterState& cluster, const TaskContext& ctx, NodeId node,
                             const Status& st) {
    reason_scratch_.clear();
    if (reasons_) f.reasons(cluster, ctx, node, st, reason_scratch_);
    if (reason_scratch_.empty()) {
      // The common case (no kube wording, or none for this filter): a few distinct statuses,
      // found by a short linear search instead of building a key for the map.
      for (const auto& [code, plugin, reason, id] : plain_signatures_) {
        if (code == st.code && plugin.data() == st.plugin.data() && plugin.size() == st.plugin.size() &&
            reason.data() == st.reason.data() && reason.size() == st.reason.size()) {
          return id;
        }
      }
    }
    SigKey key{st.code, st.plugin.data(), st.plugin.size(), st.reason.data(), st.reason.size(), {}};
    key.reasons.reserve(reason_scratch_.size());
    for (const auto r : reason_scratch_) key.reasons.emplace_back(r.data(), r.size());
    const auto [it, added] = signature_ids_.try_emplace(std::move(key), static_cast<std::uint32_t>(signatures_.size()));
    if (added) signatures_.push_back({st, reason_scratch_});
    if (reason_scratch_.empty() && plain_signatures_.size() < 16) {
      plain_signatures_.push_back({st.code, st.plugin, st.reason, it->second});
    }
    return it->second;
  }
  struct SigKey {
    StatusCode code;
    const char* plugin;
    std::size_t plugin_size;
    const char* reason;
    std::size_t reason_size;
    std::vector<std::pair<const char*, std::size_t>> reasons;
    bool operator<(const SigKey& o) const {
      return std::tie(code, plugin, plugin_size, reason, reason_size, reasons) <
             std::tie(o.code, o.plugin, o.plugin_size, o.reason, o.reason_size, o.reasons);
    }
  };
  std::map<SigKey, std::uint32_t> signature_ids_;
  struct PlainSignature {
    StatusCode code;
    std::string_view plugin, reason;
    std::uint32_t id;
  };
  std::vector<PlainSignature> plain_signatures_;   // first 16 reason-less signatures, for signature_of's fast path
  std::vector<Signature> signatures_;
  std::vector<std::string_view> reason_scratch_;

  std::vector<FilterPlugin*> filters_;
  std::vector<std::pair<ScorePlugin*, double>> scores_;
  Mode mode_ = Mode::kLinear;
  bool tree_ = false;
  bool reasons_ = false;   // keep every reason of a rejected node (kube-scheduler diagnosis)
  std::vector<Class> classes_;
  std::unordered_map<std::uint64_t, std::vector<std::uint32_t>> by_hash_;   // request_class() -> classes
  std::uint64_t clock_ = 0;
  std::vector<std::uint32_t> dirty_;
  std::vector<NodeId> fit_;
  std::vector<double> scratch_;
  std::vector<std::size_t> touched_;   // tree nodes whose children changed (propagate())
  CapacityNeed need_;                  // the class being brought up to date: its filters' bounds
  struct Idle {
    std::size_t plugin;                // index into scores_
    ScorePlugin::IdleNormalize idle;
  };
  std::vector<Idle> idle_;             // totals mode: the score plugins whose normalize is not the identity
  CapacityTree trees_[2];
};

}  // namespace gpusched::policies
