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
///    the k-th tied node for a random tie-break): O(log nodes). When the one score plugin bounds
///    its scores (ScorePlugin::score_bounds) and ties go to node order, a changed node's leaf may
///    hold its bound instead, and only nodes whose bound reaches the top are scored
///    (best_bounded);
///  - when the one score plugin normalises min-max (normalize_is_min_max) and ties go to node
///    order, a tree of raw scores with subtree maxima and minima gives the feasible nodes'
///    lowest and highest scores, hence each node's normalised score, and the lowest-index node
///    reaching the top one: O(log nodes);
///  - otherwise the cached raw scores of the feasible nodes, in node order, go through the
///    plugins' normalize() exactly as the scan's would: no plugin call per node, O(nodes) adds.
/// Each rejected node also keeps why (its reject signature: the first failing filter's status
/// and, for kube-scheduler wording, every reason that filter gives), so when no node is feasible
/// the diagnosis (which filter rejected how many nodes, in its words) is read from the index with
/// no plugin call (each class keeps its node count per signature as its rejects change), in the
/// order the scan would have noted it. The cluster object is identified by
/// ClusterState::instance(), so a what-if copy never reads another copy's answers.
///
/// Memory: per class, 8 + 1 + 4 + 1 + 8 x score plugins bytes per node, up to 4 more for the list
/// of deferred nodes, plus 24 bytes per node for the tree. Classes are evicted least recently used
/// beyond a budget of 96 classes' worth, at least 64 MiB and at most 1 GiB in all (and 4,096
/// classes): a workload with more active request classes than fit rebuilds classes over and over,
/// each rebuild as dear as a full scan, so large clusters get room for ~96 of them (100,000 nodes:
/// ~7 MB a class with two score plugins).
#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
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
  std::vector<std::uint32_t> sig_count;   ///< per reject signature: the nodes whose reject it is (NodeIndex::set_reject)
  /// Every node whose reject is kDeferred, while deferred_listed (repeats, and nodes decided
  /// since, possible): NodeIndex::resolve_deferred decides them without a pass over every node.
  /// Longer than the nodes: no longer kept (deferred_listed false) until that pass.
  std::vector<std::uint32_t> deferred_list;
  bool deferred_listed = true;
  std::size_t feasible_count = 0;
  std::vector<double> raw;          ///< [plugin x nodes + node]: raw score (feasible nodes only)
  std::vector<std::uint32_t> active;   ///< per idle-normalised plugin: feasible nodes with an active raw score
  /// Per node: 1 while its leaf holds the score plugin's bound (ScorePlugin::score_bounds) instead
  /// of its total; its raw score is then not kept. NodeIndex::best_bounded scores such a node
  /// when it reaches the top, NodeIndex::settle all of them.
  std::vector<std::uint8_t> pending;
  std::size_t pending_count = 0;
  /// The last diagnosis counted from this class (Scheduler::diagnose_from_index), valid while
  /// log_pos is still diag_pos: every reject signature with its node count, in the order the
  /// scan notes them, and the nodes where preemption might help. Jobs of one request that fail
  /// one after another with nothing changed in between read it instead of counting again.
  std::uint64_t diag_pos = std::numeric_limits<std::uint64_t>::max();
  std::vector<std::pair<std::uint32_t, std::uint32_t>> diag_sigs;
  std::uint32_t diag_resolvable_count = 0;
  std::vector<NodeId> diag_resolvable;   ///< the nodes themselves, when diag_listed (only some callers read them)
  bool diag_listed = false;
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

/// What NodeIndex::kept_for needs of a structure it keeps per cluster object: the object it is
/// for (ClusterState::instance()), the change-log position it is up to date with, and when it
/// was last used.
class PerCluster {
 public:
  [[nodiscard]] std::uint64_t instance() const { return instance_; }
  [[nodiscard]] std::uint64_t log_pos() const { return log_pos_; }
  /// Now kept for cluster object `instance`, a copy of the one it was kept for (see kept_for).
  void adopt(std::uint64_t instance) { instance_ = instance; }
  std::uint64_t used = 0;   ///< kept_for's clock when last used

 protected:
  std::uint64_t instance_ = 0;
  std::uint64_t log_pos_ = 0;
};

/// Every node's free capacity (CapacityNeed::of) in node order, with the largest of each over
/// every subtree: one tree for all request classes, brought up to date from the cluster's change
/// log (a few leaf-to-root paths per decision). first() finds the lowest-index node meeting a
/// task's bounds in O(log nodes) per subtree it has to open.
class CapacityTree : public PerCluster {
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
      const CapacityNeed now = CapacityNeed::of(nodes[u]);
      if (tree_[at] == now) continue;   // listed again, or its bounds are as they were
      tree_[at] = now;
      // Up to the first ancestor whose maxima stay: those above it hold too.
      for (at /= 2; at >= 1; at /= 2) {
        const CapacityNeed was = tree_[at];
        pull(at);
        if (tree_[at] == was) break;
      }
    }
    log_pos_ = cluster.change_count();
  }

  /// The lowest-index node at or after `from` whose free capacity meets `need`, or kNone.
  [[nodiscard]] std::uint32_t first(const CapacityNeed& need, std::uint32_t from) const {
    if (n_ == 0 || from >= n_) return kNone;
    return find(1, 0, leaves_, need, from);
  }


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


  std::size_t n_ = 0;
  std::size_t leaves_ = 0;
  std::vector<CapacityNeed> tree_;
};

/// Items (nodes, or GPUs) in a score order: per group, one sorted sequence, by key (highest
/// first), then fingerprint, then item index, cut into blocks of at most kBlock items, and the
/// blocks into spans of at most 2 kSpan blocks. Each span keeps, in arrays beside its blocks, each
/// block's largest free capacity of each kind (Cap) and its last entry; each group keeps the same
/// of its spans. A walk in score order skips every span and block whose items all fall below a
/// task's bounds and steps through a block's items one after the other in memory. Moving an item
/// (remove, place) is two binary searches over those arrays and a shift within one block (at most
/// kBlock entries), with the maxima recomputed: a few hundred bytes read in order, where a balanced
/// tree descends and rebalances through ~2 log2(items) scattered items. Thin neighbours join (two
/// blocks of a span; a span of under kSpan / 4 blocks and the next or previous span). A span split,
/// joined or emptied renumbers the group's spans (about items / (kFill kSpan) of them); nothing
/// else depends on the group's size. The owner (ScoreOrder, GpuOrder) keeps it up to date.
class OrderBlocks {
 public:
  static constexpr std::uint32_t kNil = std::numeric_limits<std::uint32_t>::max();
  static constexpr std::size_t kBlock = 16;   ///< most items a block holds (split in halves beyond)
  static constexpr std::size_t kFill = 12;    ///< items per block after build()
  static constexpr std::size_t kSpan = 16;    ///< blocks per span after build() (split beyond 2 kSpan)

  /// Free capacity in eight 32-bit lanes, saturated at 0 and 2^31-1 (for nodes: CapacityNeed's
  /// schedulable, CPU, memory, GPU memory, whole units, GPU compute, TPU chips; unused), so the
  /// largest of two and the test against a task's bounds are a few vector instructions.
  /// Saturating both sides keeps every item that meets the bounds; a saturated bound may let
  /// more through (the filters decide). A lane of -1 meets no bound.
  struct Cap {
    std::array<std::int32_t, 8> v{};
    static std::int32_t sat(std::int64_t x) {
      return static_cast<std::int32_t>(std::clamp<std::int64_t>(x, 0, std::numeric_limits<std::int32_t>::max()));
    }
    static Cap of(const CapacityNeed& c) {
      return Cap{{c.schedulable ? 1 : 0, sat(c.cpu_milli), sat(c.memory_mib), sat(c.gpu_memory_mib), sat(c.whole_units),
                  sat(c.gpu_milli), sat(c.tpu_chips), 0}};
    }
    /// Meets no bound: the largest over nothing.
    static Cap none() {
      Cap c;
      c.v.fill(-1);
      return c;
    }
    void merge(const Cap& o) {
      for (std::size_t i = 0; i < 8; ++i) v[i] = std::max(v[i], o.v[i]);
    }
    [[nodiscard]] bool admits(const Cap& have) const {
      bool ok = true;
      for (std::size_t i = 0; i < 8; ++i) ok &= have.v[i] >= v[i];
      return ok;
    }
    bool operator==(const Cap&) const = default;
  };

  /// Forgets everything: n items, none placed. The places that follow, up to build(), are
  /// gathered and sorted once.
  void reset(std::size_t n) {
    items_.assign(n, Item{});
    caps_.assign(n, Cap{});
    groups_.clear();
    slots_.clear();
    blocks_.clear();
    spans_.clear();
    free_blocks_.clear();
    free_spans_.clear();
    pending_.clear();
    building_ = true;
  }
  /// Ends the places after reset(): every group's items sorted and cut into blocks of kFill items
  /// and spans of kSpan blocks.
  void build() {
    GPUSCHED_ASSERT(building_, "score order: build() without reset()");
    building_ = false;
    std::sort(pending_.begin(), pending_.end(), [&](std::uint32_t a, std::uint32_t b) {
      if (items_[a].slot != items_[b].slot) return items_[a].slot < items_[b].slot;
      return before(entry(a), entry(b));
    });
    for (std::size_t at = 0; at < pending_.size();) {
      const std::uint32_t slot = items_[pending_[at]].slot;
      const std::uint32_t s = new_span(slot);
      Group& g = groups_[slot];
      spans_[s].rank = static_cast<std::uint32_t>(g.spans.size());
      g.spans.push_back(s);
      g.aggs.push_back(Cap::none());
      g.lasts.emplace_back();
      while (at < pending_.size() && items_[pending_[at]].slot == slot && spans_[s].blocks.size() < kSpan) {
        const std::uint32_t b = new_block(s);
        Block& blk = blocks_[b];
        for (; at < pending_.size() && items_[pending_[at]].slot == slot && blk.entries.size() < kFill; ++at) {
          const std::uint32_t u = pending_[at];
          blk.entries.push_back(entry(u));
          blk.caps.push_back(caps_[u]);
          items_[u].block = b;
        }
        spans_[s].blocks.push_back(b);
        spans_[s].aggs.push_back(max_of(blk));
        spans_[s].lasts.push_back(blk.entries.back());
      }
      g.aggs.back() = max_of(spans_[s]);
      g.lasts.back() = spans_[s].lasts.back();
    }
    pending_.clear();
  }
  [[nodiscard]] std::size_t size() const { return items_.size(); }
  [[nodiscard]] bool placed(std::uint32_t u) const { return items_[u].slot != kNil; }
  /// Puts item u (not placed) into `group` at (key, fingerprint) with capacity `cap`.
  void place(std::uint32_t u, std::uint32_t group, double key, std::uint64_t fingerprint, const Cap& cap) {
    Item& it = items_[u];
    it.key = key;
    it.fingerprint = fingerprint;
    caps_[u] = cap;
    const std::size_t slot = slot_of(group);
    it.slot = static_cast<std::uint32_t>(slot);
    if (building_) {
      pending_.push_back(u);
      return;
    }
    Group& g = groups_[slot];
    const Entry e = entry(u);
    if (g.spans.empty()) {
      const std::uint32_t s = new_span(static_cast<std::uint32_t>(slot));
      spans_[s].rank = 0;
      g.spans.push_back(s);
      g.aggs.push_back(Cap::none());
      g.lasts.push_back(e);   // (the block is empty until e goes in below)
      spans_[s].blocks.push_back(new_block(s));
      spans_[s].aggs.push_back(Cap::none());
      spans_[s].lasts.push_back(e);
    }
    // The first span, then the first block in it, whose last entry is not before e (else the last).
    const std::size_t rank = first_not_before(g.lasts, e);
    Span& sp = spans_[g.spans[rank]];
    const std::size_t i = first_not_before(sp.lasts, e);
    const std::uint32_t b = sp.blocks[i];
    Block& blk = blocks_[b];
    const auto at = std::lower_bound(blk.entries.begin(), blk.entries.end(), e, before) - blk.entries.begin();
    blk.entries.insert(blk.entries.begin() + at, e);
    blk.caps.insert(blk.caps.begin() + at, cap);
    sp.aggs[i].merge(cap);
    g.aggs[rank].merge(cap);
    if (static_cast<std::size_t>(at) + 1 == blk.entries.size()) {   // the new last of its block (and so of the group)
      sp.lasts[i] = e;
      if (i + 1 == sp.blocks.size()) g.lasts[rank] = e;
    }
    it.block = b;
    if (blk.entries.size() > kBlock) split(b);
  }
  /// Takes item u out of its group.
  void remove(std::uint32_t u) {
    Item& it = items_[u];
    GPUSCHED_ASSERT(it.slot != kNil && !building_, "score order: item not placed");
    const std::uint32_t b = it.block;
    Block& blk = blocks_[b];
    const auto at = position(blk, u);
    blk.entries.erase(blk.entries.begin() + static_cast<std::ptrdiff_t>(at));
    blk.caps.erase(blk.caps.begin() + static_cast<std::ptrdiff_t>(at));
    it.slot = it.block = kNil;
    const std::uint32_t s = blk.span;
    Span& sp = spans_[s];
    Group& g = groups_[sp.slot];
    const std::size_t i = index_in_span(b);
    if (blk.entries.empty()) {
      sp.blocks.erase(sp.blocks.begin() + static_cast<std::ptrdiff_t>(i));
      sp.aggs.erase(sp.aggs.begin() + static_cast<std::ptrdiff_t>(i));
      sp.lasts.erase(sp.lasts.begin() + static_cast<std::ptrdiff_t>(i));
      free_blocks_.push_back(b);
      if (sp.blocks.empty()) {
        drop_span(s);
        return;
      }
      g.lasts[sp.rank] = sp.lasts.back();
    } else {
      if (at == blk.entries.size()) {   // its last went: the one before it is
        sp.lasts[i] = blk.entries.back();
        if (i + 1 == sp.blocks.size()) g.lasts[sp.rank] = sp.lasts[i];
      }
      // Two thin neighbours: one block.
      if (i + 1 < sp.blocks.size() && blk.entries.size() + blocks_[sp.blocks[i + 1]].entries.size() <= kBlock / 2) {
        absorb(sp, i);
      } else if (i > 0 && blocks_[sp.blocks[i - 1]].entries.size() + blk.entries.size() <= kBlock / 2) {
        absorb(sp, i - 1);
      } else {
        const Cap a = max_of(blk);
        if (a == sp.aggs[i]) return;   // (the span's largest stays too)
        sp.aggs[i] = a;
      }
    }
    g.aggs[sp.rank] = max_of(sp);
    // A thin span joins a neighbour: keys that drift one way would otherwise leave many spans
    // of a few blocks, and a walk that finds nothing tests every span's maximum.
    if (sp.blocks.size() < kSpan / 4) join_span(s);
  }
  /// Whether item u is placed at (group, key, fingerprint) with capacity `cap` already.
  [[nodiscard]] bool same(std::uint32_t u, std::uint32_t group, double key, std::uint64_t fingerprint, const Cap& cap) const {
    const Item& it = items_[u];
    return it.slot != kNil && groups_[it.slot].id == group && it.key == key && it.fingerprint == fingerprint && caps_[u] == cap;
  }

  [[nodiscard]] std::size_t groups() const { return groups_.size(); }
  [[nodiscard]] std::uint32_t group(std::size_t slot) const { return groups_[slot].id; }
  [[nodiscard]] double key(std::uint32_t u) const { return items_[u].key; }

  /// Where a walk of one group stands (advance()): the item it found last (kNil: none yet, the
  /// walk starts at the group's best), that item's entry's place, and its key.
  struct Cursor {
    std::uint32_t item = kNil;
    std::uint32_t rank = 0;    // its span's rank in the group
    std::uint32_t block = 0;   // its block's index in the span
    std::uint32_t at = 0;      // its entry's index in the block
    double key = 0.0;
  };
  /// Walking group `slot` best first: the first item after item `u` (kNil: from the start) whose
  /// capacity meets `need`, or kNil. past_run: after every item of u's key and fingerprint.
  [[nodiscard]] std::uint32_t next(std::size_t slot, const Cap& need, std::uint32_t u, bool past_run = false) const {
    Cursor cur;
    if (u != kNil) {
      const Item& it = items_[u];
      GPUSCHED_ASSERT(it.slot == slot, "score order: walked from an item not placed in that group");
      const std::uint32_t b = it.block;
      cur = {u, spans_[blocks_[b].span].rank, static_cast<std::uint32_t>(index_in_span(b)),
             static_cast<std::uint32_t>(position(blocks_[b], u)), it.key};
    }
    return advance(slot, need, cur, past_run);
  }
  /// next() from the cursor's item, moving the cursor to the item found (its item kNil: none): a
  /// walk that keeps its cursor reads the blocks in order, never the items' own records. The
  /// order must not change between the calls of one walk.
  std::uint32_t advance(std::size_t slot, const Cap& need, Cursor& cur, bool past_run = false) const {
    GPUSCHED_ASSERT(!building_, "score order: walked before build()");
    const Group& g = groups_[slot];
    std::size_t rank = 0, block = 0, at = 0;   // where the walk resumes: span rank, block in it, entry in it
    if (g.spans.empty()) return cur.item = kNil;
    if (cur.item != kNil) {
      GPUSCHED_ASSERT(blocks_[spans_[g.spans[cur.rank]].blocks[cur.block]].entries[cur.at].item == cur.item,
                      "score order: a cursor outlived a change of the order");
      rank = cur.rank;
      block = cur.block;
      at = cur.at + 1;
      if (past_run) {
        // The first entry after the run: nothing of the run follows it.
        const Entry& e = blocks_[spans_[g.spans[rank]].blocks[block]].entries[cur.at];
        const Entry last{e.key, e.fingerprint, kNil};
        if (!before(last, g.lasts[rank])) {
          rank = first_after(g.lasts, last, rank + 1);
          if (rank == g.spans.size()) return cur.item = kNil;
          block = 0;
        }
        const Span* sp = &spans_[g.spans[rank]];
        block = first_after(sp->lasts, last, block);   // (the span's last block is after the run)
        const auto& es = blocks_[sp->blocks[block]].entries;
        at = static_cast<std::size_t>(std::upper_bound(es.begin(), es.end(), last, before) - es.begin());
      }
    }
    for (; rank < g.spans.size(); ++rank, block = 0, at = 0) {
      const Span& sp = spans_[g.spans[rank]];
      if (!need.admits(g.aggs[rank])) continue;
      for (; block < sp.blocks.size(); ++block, at = 0) {
        const Block& blk = blocks_[sp.blocks[block]];
        if (!need.admits(sp.aggs[block])) continue;
        for (std::size_t i = at; i < blk.caps.size(); ++i) {
          if (need.admits(blk.caps[i])) {
            cur = {blk.entries[i].item, static_cast<std::uint32_t>(rank), static_cast<std::uint32_t>(block),
                   static_cast<std::uint32_t>(i), blk.entries[i].key};
            return cur.item;
          }
        }
      }
    }
    return cur.item = kNil;
  }

 private:
  struct Item {
    double key = 0.0;
    std::uint64_t fingerprint = 0;
    std::uint32_t slot = kNil;    // its group's index in groups_ (kNil: not placed)
    std::uint32_t block = kNil;   // its block in blocks_
  };
  struct Entry {
    double key;
    std::uint64_t fingerprint;
    std::uint32_t item;
  };
  struct Block {
    std::vector<Entry> entries;   // in walk order
    std::vector<Cap> caps;        // each entry's capacity
    std::uint32_t span = 0;       // its span in spans_
  };
  struct Span {
    std::vector<std::uint32_t> blocks;   // in walk order
    std::vector<Cap> aggs;               // per block: the largest of each lane over its items (walked in memory order)
    std::vector<Entry> lasts;            // per block: its last entry (searched in memory order)
    std::uint32_t rank = 0;              // its place in its group's spans
    std::uint32_t slot = 0;              // its group
  };
  struct Group {
    std::uint32_t id;
    std::vector<std::uint32_t> spans;   // in walk order
    std::vector<Cap> aggs;              // per span: the largest of each lane over its blocks
    std::vector<Entry> lasts;           // per span: its last entry
  };

  /// a comes before b in the walk: highest key first, then lowest fingerprint, then lowest item
  /// (kNil as an item: after every item of its key and fingerprint).
  static bool before(const Entry& a, const Entry& b) {
    if (a.key != b.key) return a.key > b.key;
    if (a.fingerprint != b.fingerprint) return a.fingerprint < b.fingerprint;
    return a.item < b.item;
  }
  /// Groups found by a linear search; more are looked up in slots_.
  static constexpr std::size_t kLinearGroups = 8;
  /// Group `group`'s index in groups_ (a new, empty group the first time).
  std::size_t slot_of(std::uint32_t group) {
    const std::size_t linear = std::min(groups_.size(), kLinearGroups);
    for (std::size_t k = 0; k < linear; ++k) {
      if (groups_[k].id == group) return k;
    }
    if (groups_.size() > kLinearGroups) {
      const auto found = slots_.find(group);
      if (found != slots_.end()) return found->second;
    }
    groups_.push_back(Group{group, {}, {}, {}});
    if (groups_.size() > kLinearGroups) slots_.emplace(group, static_cast<std::uint32_t>(groups_.size() - 1));
    return groups_.size() - 1;
  }
  /// The first of `lasts` that e is not after, else the last one (place: the block or span e
  /// goes into).
  static std::size_t first_not_before(const std::vector<Entry>& lasts, const Entry& e) {
    std::size_t lo = 0, hi = lasts.size() - 1;
    while (lo < hi) {
      const std::size_t mid = (lo + hi) / 2;
      if (before(lasts[mid], e)) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
  /// The first of `lasts` from `from` on that comes after e, or lasts.size().
  static std::size_t first_after(const std::vector<Entry>& lasts, const Entry& e, std::size_t from) {
    return static_cast<std::size_t>(std::upper_bound(lasts.begin() + static_cast<std::ptrdiff_t>(from), lasts.end(), e, before) - lasts.begin());
  }
  [[nodiscard]] Entry entry(std::uint32_t u) const { return {items_[u].key, items_[u].fingerprint, u}; }
  [[nodiscard]] std::size_t position(const Block& blk, std::uint32_t u) const {
    const auto at = static_cast<std::size_t>(std::lower_bound(blk.entries.begin(), blk.entries.end(), entry(u), before) - blk.entries.begin());
    GPUSCHED_ASSERT(at < blk.entries.size() && blk.entries[at].item == u, "score order: item not in its block");
    return at;
  }
  [[nodiscard]] std::size_t index_in_span(std::uint32_t b) const {
    const auto& bs = spans_[blocks_[b].span].blocks;
    return static_cast<std::size_t>(std::find(bs.begin(), bs.end(), b) - bs.begin());
  }
  /// A free place in `pool`: one given back earlier, else a new one at the end.
  template <class T>
  static std::uint32_t take(std::vector<T>& pool, std::vector<std::uint32_t>& free) {
    if (free.empty()) {
      pool.emplace_back();
      return static_cast<std::uint32_t>(pool.size() - 1);
    }
    const std::uint32_t k = free.back();
    free.pop_back();
    return k;
  }
  std::uint32_t new_block(std::uint32_t span) {
    const std::uint32_t b = take(blocks_, free_blocks_);
    Block& blk = blocks_[b];
    blk.entries.clear();
    blk.caps.clear();
    blk.entries.reserve(kBlock + 1);
    blk.caps.reserve(kBlock + 1);
    blk.span = span;
    return b;
  }
  std::uint32_t new_span(std::uint32_t slot) {
    const std::uint32_t s = take(spans_, free_spans_);
    spans_[s].blocks.clear();
    spans_[s].aggs.clear();
    spans_[s].lasts.clear();
    spans_[s].slot = slot;
    return s;
  }
  /// The largest of each lane over a block's items, or over a span's blocks.
  static Cap max_of(const Block& blk) {
    Cap a = Cap::none();
    for (const Cap& c : blk.caps) a.merge(c);
    return a;
  }
  static Cap max_of(const Span& sp) {
    Cap a = Cap::none();
    for (const Cap& c : sp.aggs) a.merge(c);
    return a;
  }
  /// The ranks of g's spans from `from` on, after spans came or went there.
  void renumber(Group& g, std::size_t from) {
    for (std::size_t r = from; r < g.spans.size(); ++r) spans_[g.spans[r]].rank = static_cast<std::uint32_t>(r);
  }
  /// Span s and a neighbour (the next, else the one before) in one span, when they hold at most
  /// 2 kSpan blocks together.
  void join_span(std::uint32_t s) {
    Group& g = groups_[spans_[s].slot];
    const std::size_t rank = spans_[s].rank;
    auto fits = [&](std::size_t other) { return spans_[g.spans[other]].blocks.size() + spans_[s].blocks.size() <= 2 * kSpan; };
    std::size_t left = rank;   // the later of the two joins the earlier
    if (rank + 1 == g.spans.size() || !fits(rank + 1)) {
      if (rank == 0 || !fits(rank - 1)) return;
      left = rank - 1;
    }
    const std::uint32_t into_id = g.spans[left], from_id = g.spans[left + 1];
    Span& into = spans_[into_id];
    const Span& from = spans_[from_id];
    for (const std::uint32_t b : from.blocks) blocks_[b].span = into_id;
    into.blocks.insert(into.blocks.end(), from.blocks.begin(), from.blocks.end());
    into.aggs.insert(into.aggs.end(), from.aggs.begin(), from.aggs.end());
    into.lasts.insert(into.lasts.end(), from.lasts.begin(), from.lasts.end());
    g.aggs[left].merge(g.aggs[left + 1]);
    g.lasts[left] = g.lasts[left + 1];
    drop_span(from_id);
  }
  /// Span s, left without blocks (or joined to the one before it), out of its group.
  void drop_span(std::uint32_t s) {
    Group& g = groups_[spans_[s].slot];
    const std::uint32_t rank = spans_[s].rank;
    g.spans.erase(g.spans.begin() + rank);
    g.aggs.erase(g.aggs.begin() + rank);
    g.lasts.erase(g.lasts.begin() + rank);
    free_spans_.push_back(s);
    renumber(g, rank);
  }
  /// Block b (over kBlock entries) in two halves, the second a new block after it in its span;
  /// a span over 2 kSpan blocks in two halves likewise.
  void split(std::uint32_t b) {
    const std::uint32_t s = blocks_[b].span;
    const std::uint32_t c = new_block(s);   // (may move blocks_: no references held)
    Block& from = blocks_[b];
    Block& to = blocks_[c];
    const std::size_t half = from.entries.size() / 2;
    to.entries.assign(from.entries.begin() + static_cast<std::ptrdiff_t>(half), from.entries.end());
    to.caps.assign(from.caps.begin() + static_cast<std::ptrdiff_t>(half), from.caps.end());
    from.entries.resize(half);
    from.caps.resize(half);
    for (const Entry& e : to.entries) items_[e.item].block = c;
    Span& sp = spans_[s];
    const auto i = static_cast<std::ptrdiff_t>(index_in_span(b));
    sp.aggs[static_cast<std::size_t>(i)] = max_of(from);
    sp.lasts[static_cast<std::size_t>(i)] = from.entries.back();
    sp.blocks.insert(sp.blocks.begin() + i + 1, c);
    sp.aggs.insert(sp.aggs.begin() + i + 1, max_of(to));
    sp.lasts.insert(sp.lasts.begin() + i + 1, to.entries.back());
    if (sp.blocks.size() <= 2 * kSpan) return;   // (the span's largest is unchanged)
    const std::uint32_t t = new_span(sp.slot);   // (may move spans_)
    Span& left = spans_[s];
    Span& right = spans_[t];
    const auto keep = static_cast<std::ptrdiff_t>(left.blocks.size() / 2);
    right.blocks.assign(left.blocks.begin() + keep, left.blocks.end());
    right.aggs.assign(left.aggs.begin() + keep, left.aggs.end());
    right.lasts.assign(left.lasts.begin() + keep, left.lasts.end());
    left.blocks.resize(static_cast<std::size_t>(keep));
    left.aggs.resize(static_cast<std::size_t>(keep));
    left.lasts.resize(static_cast<std::size_t>(keep));
    for (const std::uint32_t x : right.blocks) blocks_[x].span = t;
    Group& g = groups_[left.slot];
    g.aggs[left.rank] = max_of(left);
    g.lasts[left.rank] = left.lasts.back();
    g.spans.insert(g.spans.begin() + left.rank + 1, t);
    g.aggs.insert(g.aggs.begin() + left.rank + 1, max_of(right));
    g.lasts.insert(g.lasts.begin() + left.rank + 1, right.lasts.back());
    renumber(g, left.rank);
  }
  /// The block after the i-th of span sp joins it.
  void absorb(Span& sp, std::size_t i) {
    const std::uint32_t b = sp.blocks[i], c = sp.blocks[i + 1];
    Block& into = blocks_[b];
    Block& from = blocks_[c];
    for (const Entry& e : from.entries) items_[e.item].block = b;
    into.entries.insert(into.entries.end(), from.entries.begin(), from.entries.end());
    into.caps.insert(into.caps.end(), from.caps.begin(), from.caps.end());
    sp.aggs[i] = max_of(into);
    sp.lasts[i] = sp.lasts[i + 1];
    sp.blocks.erase(sp.blocks.begin() + static_cast<std::ptrdiff_t>(i) + 1);
    sp.aggs.erase(sp.aggs.begin() + static_cast<std::ptrdiff_t>(i) + 1);
    sp.lasts.erase(sp.lasts.begin() + static_cast<std::ptrdiff_t>(i) + 1);
    free_blocks_.push_back(c);
  }

  std::vector<Item> items_;
  std::vector<Cap> caps_;   // per item: its own capacity (same())
  std::vector<Group> groups_;
  std::unordered_map<std::uint32_t, std::uint32_t> slots_;   // group id -> its index in groups_, past kLinearGroups
  std::vector<Block> blocks_;
  std::vector<Span> spans_;
  std::vector<std::uint32_t> free_blocks_, free_spans_;
  std::vector<std::uint32_t> pending_;   // placed since reset(), until build()
  bool building_ = false;
};

/// Every node in one score plugin's order (ScorePlugin::order_key), with its free capacity as
/// bounds (CapacityNeed::of), shared by every request: brought up to date from the cluster's
/// change log (a changed node leaves its group and enters again: a binary search over the
/// group's blocks and a shift within one or two), rebuilt for
/// another cluster object or when order_epoch() changes. One per order variant
/// (ScorePlugin::order_variants).
class ScoreOrder : public PerCluster {
 public:
  static constexpr std::uint32_t kNil = OrderBlocks::kNil;

  /// `budget`: at most this many entries of the change log are taken (the rest at a later call);
  /// the order is up to date only when the call takes them all.
  void refresh(const ClusterState& cluster, const ScorePlugin& plugin, std::uint32_t variant,
               std::size_t budget = std::numeric_limits<std::size_t>::max()) {
    const std::size_t n = cluster.node_count();
    const std::uint64_t epoch = plugin.order_epoch(cluster);
    const auto nodes = cluster.nodes();
    if (instance_ != cluster.instance() || order_.size() != n || epoch_ != epoch || variant_ != variant) {
      instance_ = cluster.instance();
      epoch_ = epoch;
      variant_ = variant;
      order_.reset(n);
      generation_.resize(n);
      for (std::uint32_t u = 0; u < n; ++u) place(cluster, plugin, u);
      order_.build();
    } else if (cluster.change_count() != log_pos_) {
      const auto changed = cluster.changed_since(log_pos_);   // none: the log moved on, look at every node
      const std::size_t k = changed ? std::min(changed->size(), budget) : n;
      for (std::size_t j = 0; j < k; ++j) {
        const std::uint32_t v = changed ? (*changed)[j] : static_cast<std::uint32_t>(j);
        if (generation_[v] == nodes[v].generation) continue;   // listed twice, or unchanged
        order_.remove(v);
        place(cluster, plugin, v);
      }
      if (changed && k < changed->size()) {
        log_pos_ += k;   // (a node listed again later is placed as it is now, then skipped there)
        return;
      }
    }
    log_pos_ = cluster.change_count();
  }

  [[nodiscard]] const OrderBlocks& items() const { return order_; }

 private:
  void place(const ClusterState& cluster, const ScorePlugin& plugin, std::uint32_t u) {
    const auto k = plugin.order_key(cluster, NodeId{u}, variant_);
    const auto& s = cluster.nodes()[u];
    generation_[u] = s.generation;
    order_.place(u, k.group, k.key, k.fingerprint, OrderBlocks::Cap::of(CapacityNeed::of(s)));
  }

  std::uint64_t epoch_ = 0;
  std::uint32_t variant_ = 0;
  OrderBlocks order_;
  std::vector<std::uint64_t> generation_;   // per node: the generation its place is for
};

/// Every GPU of the cluster in one score plugin's GPU order (ScorePlugin::gpu_order), one group,
/// GPUs of equal key in node order (their index in ClusterState::all_gpus()), with the lanes the
/// plugin gives as capacity. GPUs that fit nothing (a lane of -1: for gpu-binpack, no free
/// compute) are left out, so whole GPUs taken and given back leave or enter without moving. Kept
/// up to date like ScoreOrder: a changed node's GPUs whose key or lanes changed move.
class GpuOrder : public PerCluster {
 public:
  void refresh(const ClusterState& cluster, const ScorePlugin& plugin) {
    const std::size_t n = cluster.node_count();
    const auto nodes = cluster.nodes();
    if (instance_ != cluster.instance() || generation_.size() != n) {
      instance_ = cluster.instance();
      order_.reset(cluster.all_gpus().size());
      node_of_.assign(cluster.all_gpus().size(), 0);
      generation_.resize(n);
      for (std::uint32_t u = 0; u < n; ++u) {
        for (std::uint32_t i = nodes[u].gpu_begin; i < nodes[u].gpu_begin + nodes[u].gpu_count; ++i) node_of_[i] = u;
        place(cluster, plugin, u);
      }
      order_.build();
    } else if (cluster.change_count() != log_pos_) {
      const auto changed = cluster.changed_since(log_pos_);
      const std::size_t k = changed ? changed->size() : n;
      for (std::size_t j = 0; j < k; ++j) {
        const std::uint32_t v = changed ? (*changed)[j] : static_cast<std::uint32_t>(j);
        if (generation_[v] != nodes[v].generation) place(cluster, plugin, v);
      }
    }
    log_pos_ = cluster.change_count();
  }

  [[nodiscard]] const OrderBlocks& items() const { return order_; }
  [[nodiscard]] std::uint32_t node_of(std::uint32_t gpu) const { return node_of_[gpu]; }

 private:
  /// Node u's GPUs, placed again where their key or lanes changed.
  void place(const ClusterState& cluster, const ScorePlugin& plugin, std::uint32_t u) {
    const auto& s = cluster.nodes()[u];
    generation_[u] = s.generation;
    const auto gpus = cluster.all_gpus();
    for (std::uint32_t i = s.gpu_begin; i < s.gpu_begin + s.gpu_count; ++i) {
      const auto g = plugin.gpu_order(gpus[i]);
      OrderBlocks::Cap cap;
      cap.v.fill(std::numeric_limits<std::int32_t>::max());
      cap.v[0] = g.memory_lane;
      cap.v[1] = g.milli_lane;
      const bool fits_nothing = g.memory_lane < 0 || g.milli_lane < 0;   // (a GPU whose compute is all given)
      if (fits_nothing ? !order_.placed(i) : order_.same(i, 0, g.key, g.fingerprint, cap)) continue;
      if (order_.placed(i)) order_.remove(i);
      if (!fits_nothing) order_.place(i, 0, g.key, g.fingerprint, cap);
    }
  }

  OrderBlocks order_;
  std::vector<std::uint32_t> node_of_;      // per GPU: its node
  std::vector<std::uint64_t> generation_;   // per node: the generation its GPUs' places are for
};

/// What a walk of a score order (NodeIndex::ordered_best, gpu_ordered_best) found: the node the
/// scan would choose, that no node is feasible, or nothing, having walked past its budget (the
/// request class answers instead, exactly: a walk is a shortcut, never the only way).
struct OrderWalk {
  enum class Kind : std::uint8_t { kFound, kNone, kGaveUp };
  Kind kind = Kind::kNone;
  std::uint32_t node = 0;
};

class NodeIndex {
 public:
  static constexpr double kInfeasible = -std::numeric_limits<double>::infinity();
  static constexpr std::size_t kMaxClasses = 4096;
  static constexpr std::size_t kMinBytes = std::size_t{64} << 20;
  static constexpr std::size_t kMaxBytes = std::size_t{1} << 30;
  static constexpr std::size_t kBudgetClasses = 96;
  /// How many nodes ahead a refresh asks for a node's words (prefetch): about one memory latency of work.
  static constexpr std::size_t kPrefetchAhead = 8;
  /// Score orders kept per plugin: at most this many variants (ScorePlugin::order_variants).
  static constexpr std::uint32_t kOrderVariants = 2;
  /// Change-log entries a walk takes for the score orders of the other variants (walk_order).
  static constexpr std::size_t kOtherVariantMoves = 3;

  using Class = NodeIndexClass;

  /// What the tree holds: nothing (the cached raw scores are normalised per decision), each
  /// node's total (every score plugin's normalize is the identity), or the raw score of the one
  /// min-max normalised plugin, with the subtree minimum as well.
  enum class Mode : std::uint8_t { kLinear, kTotals, kMinMax };

  NodeIndex(std::span<FilterPlugin* const> filters, std::span<const std::pair<ScorePlugin*, double>> scores, Mode mode,
            bool reasons)
      : filters_(filters.begin(), filters.end()), scores_(scores.begin(), scores.end()), mode_(mode),
        tree_(mode != Mode::kLinear), reasons_(reasons),
        boundable_(mode == Mode::kTotals && scores_.size() == 1 && scores_[0].first->normalize_is_identity() &&
                   scores_[0].second > 0.0) {
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

  [[nodiscard]] Mode mode() const { return mode_; }

  /// The class of `ctx.job` under the filters' `variant` (FilterPlugin::index_key), its answers
  /// brought up to date with `cluster`. `bounds`: the caller takes the top node from
  /// best_bounded(), so a feasible node may keep its score plugin's bound instead of its score
  /// (ScorePlugin::score_bounds; totals mode, one score plugin). Otherwise every feasible node
  /// has its score on return.
  Class& refresh(const ClusterState& cluster, const TaskContext& ctx, std::span<const std::uint64_t> variant = {},
                 bool bounds = false) {
    const JobSpec& job = ctx.job;
    bounds_ = bounds && boundable_;
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
      const std::size_t per_class = n * (25 + 8 * scores_.size()) + (tree_ ? 24 * std::bit_ceil(std::max<std::size_t>(n, 1)) : 0);
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
        const auto& ch = *changed;
        for (std::size_t i = 0; i < ch.size(); ++i) {
          // A class not used for a while is cold: its per-node words are cache misses, at
          // addresses known ahead (the change log). Asking for them early overlaps the misses.
          if (i + kPrefetchAhead < ch.size()) {
            __builtin_prefetch(&c->gen[ch[i + kPrefetchAhead]]);
            __builtin_prefetch(&c->reject[ch[i + kPrefetchAhead]]);
            __builtin_prefetch(&nodes[ch[i + kPrefetchAhead]].generation);
          }
          const std::uint32_t u = ch[i];
          if (c->gen[u] != nodes[u].generation) {
            c->gen[u] = nodes[u].generation;
            // Rejected before and below the bounds now: deferred, as set_answers would leave it
            // (infeasible, its leaf at -inf already), without its other words. Most of a rare
            // class's changed nodes.
            if (c->reject[u] != 0 && !need_.admits(nodes[u])) {
              ++stats.pruned;
              defer(*c, u);
              continue;
            }
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
    if (!bounds_) settle(*c, cluster, ctx);
    bounds_ = false;
    return *c;
  }

  /// Scores every node of `c` that holds a bound (refresh with `bounds`), so that its raw scores
  /// and tree are the plain index's.
  void settle(Class& c, const ClusterState& cluster, const TaskContext& ctx) {
    if (c.pending_count == 0) return;
    fit_.clear();
    for (std::uint32_t u = 0; u < c.nodes; ++u) {
      if (c.pending[u] != 0) fit_.push_back(NodeId{u});
    }
    score_fit(c, cluster, ctx, false);
    propagate(c);
  }

  /// Totals mode, node-order ties, for a class refreshed with `bounds`: best(c), the lowest-index
  /// node at the top total, scoring each node that reaches the top with a bound and looking
  /// again. A bound is never below the node's total, so once the top's lowest-index leaf holds a
  /// total, every bound elsewhere is below it (from a lower index) or at most equal (from a higher
  /// one): no node the scan would prefer is left unscored. Precondition: some node is feasible.
  [[nodiscard]] std::uint32_t best_bounded(Class& c, const ClusterState& cluster, const TaskContext& ctx) {
    for (;;) {
      const std::uint32_t u = best(c);
      if (c.pending[u] == 0) return u;
      ++stats.bounds_scored;
      fit_.assign(1, NodeId{u});
      score_fit(c, cluster, ctx, false);
      propagate(c);
    }
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

  /// The node a scan would choose when the profile's one score plugin orders the nodes
  /// (ScorePlugin::orders_nodes, order_bound kBounded), ties to node order; nothing when no node
  /// is feasible. The nodes are walked in score order, group by group, from the shared score
  /// order, skipping those below the filters' bounds; the filters and the plugin run only on the
  /// nodes walked. A walk stops once score_range() says no node left in the group can reach the
  /// best found, so every node that could tie with it has been seen; of a run of equal key and
  /// fingerprint (equal scores) only the first feasible node, the lowest index, is kept.
  /// `min_max`: the plugin's normalize is normalize_min_max() and its raw scores are integers
  /// below 2^40 in magnitude (what kBounded promises then), so the top normalised score is
  /// reached by the highest raw score alone: the walk compares raw scores.
  /// A walk gives up after this many nodes (or GPUs) checked: when many nodes tie at the bound
  /// (best-fit weights that clamp most scores to 0) or fail a filter the bounds cannot see, the
  /// walk would cost a scan per decision, which the request class avoids by remembering answers.
  [[nodiscard]] static std::size_t walk_budget(std::size_t nodes) { return 64 + nodes / 32; }
  /// An integer below 2^40 in magnitude: a min-max normalised plugin's raw scores must be, for
  /// the top normalised score to belong to the highest raw score alone (ScorePlugin::order_bound).
  [[nodiscard]] static bool integral(double raw) { return std::abs(raw) < 0x1p40 && std::floor(raw) == raw; }

  /// `constants`: the normalised scores of the plugins after those the order bounds
  /// (ScorePlugin::order_with, constant_score), added to every total as the scan adds them.
  [[nodiscard]] OrderWalk ordered_best(const ClusterState& cluster, const TaskContext& ctx, bool min_max,
                                       std::span<const double> constants = {}) {
    bool others = false;
    return walk_order(cluster, ctx, min_max, false, others, constants);
  }

  /// A random tie-break (kube-scheduler's selectHost, as the scan draws it): every feasible node
  /// at the top score, in node order (ties()), and in `others` whether some other node is
  /// feasible too (the scan draws among the ties only when more than one node is feasible).
  /// As ordered_best, but no run of equal scores is skipped: each feasible node of the run is a
  /// tie. The plugin's normalize is the identity.
  [[nodiscard]] OrderWalk ordered_ties(const ClusterState& cluster, const TaskContext& ctx, bool& others,
                                       std::span<const double> constants = {}) {
    others = false;
    const OrderWalk w = walk_order(cluster, ctx, false, true, others, constants);
    if (w.kind != OrderWalk::Kind::kFound) return w;
    std::sort(ties_.begin(), ties_.end());
    if (ties_.size() == 1 && !others) others = another_feasible(cluster, ctx, ties_.front());
    return w;
  }
  [[nodiscard]] std::span<const std::uint32_t> ties() const { return ties_; }

  /// A request class whose walk gave up (too many nodes at the top, or rejected by filters the
  /// bounds cannot see) will most likely give up again: its next kSkipWalks decisions go to the
  /// request class directly, then the walk is tried again. Each give-up in a row doubles the
  /// skip, up to kMaxSkipWalks (a request whose walks keep giving up keeps its class warm instead
  /// of paying a walk and a cold class); a walk that answers starts over. Only the cost changes,
  /// never an answer (hash collisions included: the class answers exactly).
  static constexpr std::uint32_t kSkipWalks = 16;
  static constexpr std::uint32_t kMaxSkipWalks = 1024;
  /// Asked once per walk; note_gave_up and note_walked then tell how that walk ended (the same
  /// job: its request class is hashed at most once per decision).
  [[nodiscard]] bool skip_walk(const JobSpec& job) {
    walk_class_.reset();
    if (skip_.empty()) return false;
    const auto it = skip_.find(walk_class(job));
    if (it == skip_.end() || it->second.left == 0) return false;   // (0: this walk is the retry)
    --it->second.left;
    return true;
  }
  void note_gave_up(const JobSpec& job) {
    auto& s = skip_[walk_class(job)];
    s.next = s.next == 0 ? kSkipWalks : std::min(kMaxSkipWalks, 2 * s.next);
    s.left = s.next;
  }
  /// A walk answered: the request's next give-up skips kSkipWalks again.
  void note_walked(const JobSpec& job) {
    if (!skip_.empty()) skip_.erase(walk_class(job));
  }

 private:
  OrderWalk walk_order(const ClusterState& cluster, const TaskContext& ctx, bool min_max, bool all_ties, bool& others,
                       std::span<const double> constants) {
    ScorePlugin& plugin = *scores_[0].first;
    const double weight = scores_[0].second;
    // The plugins the order bounds (plugin and the next span - 1, ScorePlugin::order_with), then
    // those that score every node alike (constants).
    GPUSCHED_ASSERT(constants.size() < scores_.size() && (!min_max || scores_.size() == 1), "a walk's plugins");
    const std::size_t span = scores_.size() - constants.size();
    const std::uint32_t variant = plugin.order_variant(cluster, ctx);
    // The other variants' orders, once made for this cluster, are kept nearly up to date at every
    // walk: one brought up to date only when its rarer tasks come (a CPU-only task among GPU
    // ones) would move every node changed since then in one decision (the p99). Each walk takes
    // at most kOtherVariantMoves of their changes, so a burst (the jobs ending after a large one
    // started) is spread over the next walks instead of doubling one walk's moves.
    for (std::uint32_t v = 0; v < plugin.order_variants(); ++v) {
      if (v != variant && std::any_of(std::begin(orders_[v]), std::end(orders_[v]),
                                      [&](const ScoreOrder& k) { return k.instance() == cluster.instance(); })) {
        order_for(cluster, plugin, v, kOtherVariantMoves);
      }
    }
    const OrderBlocks& o = order_for(cluster, plugin, variant).items();
    const auto need = OrderBlocks::Cap::of(need_of(cluster, ctx));
    // What the scan compares: each plugin's weight x normalised score, added in profile order.
    auto value = [&](std::uint32_t u, double raw) {
      if (min_max) return raw;
      double t = 0.0 + weight * raw;
      for (std::size_t k = 1; k < span; ++k) t += scores_[k].second * scores_[k].first->score(cluster, ctx, NodeId{u});
      for (std::size_t k = 0; k < constants.size(); ++k) t += scores_[span + k].second * constants[k];
      return t;
    };
    auto top = [&](std::size_t slot, double key) {
      const double hi = plugin.score_range(cluster, ctx, o.group(slot), key).second;
      if (min_max) return hi;
      double t = 0.0 + weight * hi;   // the covered plugins' sum, each weighted as this one
      if (span == 1 && constants.empty()) return t;
      for (std::size_t k = 0; k < constants.size(); ++k) t += scores_[span + k].second * constants[k];
      return t + 1e-9 * (1.0 + std::abs(t));   // slack for the roundings of the sums
    };
    // Groups whose first node can score highest first: the best found rises fastest.
    order_slots_.clear();
    for (std::size_t slot = 0; slot < o.groups(); ++slot) {
      OrderBlocks::Cursor cur;
      if (o.advance(slot, need, cur) != OrderBlocks::kNil) order_slots_.push_back({top(slot, cur.key), slot, cur});
    }
    std::sort(order_slots_.begin(), order_slots_.end(), [](const auto& a, const auto& b) {
      return std::tie(b.top, a.slot) < std::tie(a.top, b.slot);
    });
    double best_value = -std::numeric_limits<double>::infinity();
    std::uint32_t best = OrderBlocks::kNil;
    ties_.clear();
    std::size_t budget = walk_budget(cluster.node_count());
    for (auto& start : order_slots_) {
      // A run's nodes share their key, so its bound is asked once.
      double bound = start.top, bound_key = start.cursor.key;
      for (auto& cur = start.cursor; cur.item != OrderBlocks::kNil;) {
        const std::uint32_t u = cur.item;
        if (cur.key != bound_key) {
          bound_key = cur.key;
          bound = top(start.slot, bound_key);
        }
        if (bound < best_value) break;
        if (budget-- == 0) return {OrderWalk::Kind::kGaveUp};
        double raw = 0.0, v = 0.0;
        if (!min_max) {
          // The score first: a node below the best found can be neither the best nor a tie, feasible
          // or not, and nor can the rest of its run (equal key and fingerprint: equal scores).
          raw = plugin.score(cluster, ctx, NodeId{u});
          v = value(u, raw);
          if (v < best_value) {
            o.advance(start.slot, need, cur, true);
            continue;
          }
        }
        if (!feasible(cluster, ctx, u)) {
          o.advance(start.slot, need, cur);
          continue;
        }
        if (min_max) {
          raw = plugin.score(cluster, ctx, NodeId{u});
          if (!integral(raw)) return {OrderWalk::Kind::kGaveUp};   // not what kBounded promised
          v = value(u, raw);
        }
        if (v > best_value) {
          others = others || best != OrderBlocks::kNil;   // the earlier best is feasible, below the top
          best_value = v;
          best = u;
          ties_.assign(1, u);
        } else if (v == best_value) {
          best = std::min(best, u);
          ties_.push_back(u);
        } else {
          others = true;
        }
        o.advance(start.slot, need, cur, !all_ties);
      }
    }
    if (best == OrderBlocks::kNil) return {OrderWalk::Kind::kNone};
    return {OrderWalk::Kind::kFound, best};
  }

  /// Whether some node other than `except` is feasible: the capacity tree's walk, as first_feasible.
  bool another_feasible(const ClusterState& cluster, const TaskContext& ctx, std::uint32_t except) {
    CapacityTree* t = tree_for(cluster);
    const CapacityNeed need = need_of(cluster, ctx);
    for (std::uint32_t u = t->first(need, 0); u != CapacityTree::kNone; u = t->first(need, u + 1)) {
      if (u != except && feasible(cluster, ctx, u)) return true;
    }
    return false;
  }

 public:
  /// The node a scan would choose when the score plugin ranks nodes by their best GPU for the
  /// task (order_bound kByGpu; its normalize is min-max, ties to node order, node-resources-fit
  /// among the filters): the node of the first GPU in the shared GPU order that fits the task
  /// (gpu_fits) on a node every filter accepts. Every feasible node has a GPU that fits, and its
  /// raw score is an integer set by its best one, so the highest raw score, alone at the top
  /// normalised score, belongs to the first such GPU, and GPUs of one key come in node order.
  [[nodiscard]] OrderWalk gpu_ordered_best(const ClusterState& cluster, const TaskContext& ctx) {
    ScorePlugin& plugin = *scores_[0].first;
    GpuOrder& o = gpu_order_for(cluster, plugin);
    const OrderBlocks& t = o.items();
    const auto [memory, milli] = plugin.gpu_need(ctx);
    OrderBlocks::Cap need;
    need.v[0] = memory;
    need.v[1] = milli;
    const CapacityNeed node_need = need_of(cluster, ctx);
    const auto nodes = cluster.nodes();
    const auto gpus = cluster.all_gpus();
    if (seen_.size() != nodes.size()) seen_.assign(nodes.size(), 0);
    if (++stamp_ == 0) {   // wrapped: forget every mark
      std::fill(seen_.begin(), seen_.end(), 0);
      stamp_ = 1;
    }
    if (t.groups() == 0) return {OrderWalk::Kind::kNone};
    std::size_t budget = walk_budget(nodes.size());
    OrderBlocks::Cursor cur;
    for (std::uint32_t g = t.advance(0, need, cur); g != OrderBlocks::kNil; g = t.advance(0, need, cur)) {
      if (budget-- == 0) return {OrderWalk::Kind::kGaveUp};
      if (!plugin.gpu_fits(ctx, gpus[g])) continue;
      const std::uint32_t u = o.node_of(g);
      if (seen_[u] == stamp_) continue;   // rejected earlier in this walk
      seen_[u] = stamp_;
      if (node_need.admits(nodes[u]) && feasible(cluster, ctx, u)) {
        // kByGpu promised integer scores (see ordered_best): else the class decides.
        if (!integral(plugin.score(cluster, ctx, NodeId{u}))) return {OrderWalk::Kind::kGaveUp};
        return {OrderWalk::Kind::kFound, u};
      }
    }
    return {OrderWalk::Kind::kNone};
  }

  /// Sets the signature of every node whose rejection was decided by the capacity bounds alone
  /// (filters not called): before the rejects are counted or read. `c` is up to date.
  void resolve_deferred(Class& c, const ClusterState& cluster, const TaskContext& ctx) {
    if (c.deferred != 0) {
      if (c.deferred_listed) {
        for (const std::uint32_t u : c.deferred_list) {
          if (c.reject[u] == kDeferred) resolve(c, cluster, ctx, u);
        }
      } else {
        for (std::uint32_t u = 0; u < c.nodes; ++u) {
          if (c.reject[u] == kDeferred) resolve(c, cluster, ctx, u);
        }
      }
    }
    GPUSCHED_ASSERT(c.deferred == 0, "node index: a deferred node missed by resolve_deferred");
    c.deferred_list.clear();
    c.deferred_listed = true;
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
    skip_.clear();
    for (auto& v : orders_) v[0] = v[1] = ScoreOrder{};
    gpu_orders_[0] = gpu_orders_[1] = GpuOrder{};
  }

  Scheduler::IndexStats stats;

 private:
  /// Jobs whose node-local answers agree: what request_class() hashes, compared exactly.
  static bool same_class(const JobSpec& a, const JobSpec& b) {
    const auto& x = a.constraints;
    const auto& y = b.constraints;
    return a.tasks == b.tasks && a.min_available == b.min_available && a.request == b.request &&
           x.node_selector == y.node_selector && x.affinity == y.affinity && x.tolerations == y.tolerations &&
           x.app == y.app && x.max_per_node == y.max_per_node && x.claim_template == y.claim_template &&
           x.resource_claim == y.resource_claim && x.claims == y.claims;
  }

  static constexpr std::uint32_t kDeferred = std::numeric_limits<std::uint32_t>::max();

  CapacityNeed need_of(const ClusterState& cluster, const TaskContext& ctx) const {
    CapacityNeed need;
    for (const auto* f : filters_) f->capacity_need(cluster, ctx, need);
    return need;
  }

  /// Of the two structures kept (one per cluster object: EASY backfill alternates between the
  /// cluster and its scratch copy), the one for `cluster`, not yet up to date. A new object takes
  /// the place of the one used less recently. When it is a copy of the object the other one is
  /// kept for, made no earlier than that one's position (ClusterState::copied_from), it starts
  /// from a copy of it and is brought up to date from its own change log, which holds the same
  /// history up to the copy: no rebuild per backfill reservation. Otherwise its refresh rebuilds it.
  template <class T>
  T& kept_for(T (&kept)[2], const ClusterState& cluster) {
    ++use_clock_;
    for (auto& k : kept) {
      if (k.instance() == cluster.instance()) {
        k.used = use_clock_;
        return k;
      }
    }
    int src = -1;
    for (int k = 0; k < 2; ++k) {
      if (kept[k].instance() != 0 && kept[k].instance() == cluster.copied_from() && kept[k].log_pos() <= cluster.copied_at()) src = k;
    }
    T& dst = src >= 0 ? kept[1 - src] : kept[kept[0].used <= kept[1].used ? 0 : 1];
    if (src >= 0) {
      dst = kept[src];
      dst.adopt(cluster.instance());
      ++stats.inherited;
    }
    dst.used = use_clock_;
    return dst;
  }

  /// The capacity tree of `cluster`, up to date.
  CapacityTree* tree_for(const ClusterState& cluster) {
    CapacityTree* t = &kept_for(trees_, cluster);
    t->refresh(cluster);
    return t;
  }

  bool feasible(const ClusterState& cluster, const TaskContext& ctx, std::uint32_t u) {
    ++stats.node_updates;
    return std::all_of(filters_.begin(), filters_.end(),
                       [&](const FilterPlugin* f) { return f->filter(cluster, ctx, NodeId{u}).ok(); });
  }

  /// The GPU order of `cluster`, up to date (two kept, as the capacity trees).
  GpuOrder& gpu_order_for(const ClusterState& cluster, const ScorePlugin& plugin) {
    GpuOrder& o = kept_for(gpu_orders_, cluster);
    o.refresh(cluster, plugin);
    return o;
  }

  /// The score order of `cluster`, up to date (two kept, as the capacity trees).
  ScoreOrder& order_for(const ClusterState& cluster, const ScorePlugin& plugin, std::uint32_t variant,
                        std::size_t budget = std::numeric_limits<std::size_t>::max()) {
    GPUSCHED_ASSERT(variant < kOrderVariants, "score order: variant out of range");
    ScoreOrder& o = kept_for(orders_[variant], cluster);
    o.refresh(cluster, plugin, variant, budget);
    return o;
  }

  void resolve(Class& c, const ClusterState& cluster, const TaskContext& ctx, std::uint32_t u) {
    for (const auto* f : filters_) {
      const Status st = f->filter(cluster, ctx, NodeId{u});
      if (!st.ok()) {
        set_reject(c, u, signature_of(*f, cluster, ctx, NodeId{u}, st) + 1);
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
    c.sig_count.clear();
    c.deferred = 0;
    c.deferred_list.clear();
    c.deferred_listed = true;
    c.diag_pos = std::numeric_limits<std::uint64_t>::max();
    c.active.assign(idle_.size(), 0);
    c.feasible_count = 0;
    c.pending.assign(n, 0);
    c.pending_count = 0;
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
      for (std::size_t i = 0; i < touched_.size(); ++i) {
        if (i + kPrefetchAhead < touched_.size()) {
          const std::size_t ahead = touched_[i + kPrefetchAhead];
          __builtin_prefetch(&c.top[2 * ahead]);
          __builtin_prefetch(&c.ties[2 * ahead]);
          __builtin_prefetch(&c.top[ahead]);
          __builtin_prefetch(&c.ties[ahead]);
        }
        pull(c, touched_[i]);
      }
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
    // The class's words for a node are spread over several arrays (cold in a rarely used class):
    // fetched ahead, their misses overlap instead of stalling one after another.
    const auto prefetch = [&](std::uint32_t v) {
      __builtin_prefetch(&c.reject[v]);
      __builtin_prefetch(&c.feasible[v]);
      __builtin_prefetch(&c.pending[v]);
      __builtin_prefetch(&states[v]);
      for (std::size_t k = 0; k < scores_.size(); ++k) __builtin_prefetch(&c.raw[k * n + v]);
      if (tree_) {
        __builtin_prefetch(&c.top[c.leaves + v]);
        __builtin_prefetch(&c.ties[c.leaves + v]);
      }
    };
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      if (i + kPrefetchAhead < nodes.size()) prefetch(nodes[i + kPrefetchAhead]);
      const std::uint32_t u = nodes[i];
      const NodeId node{u};
      unpend(c, u);   // (set again below if it gets a bound)
      if (c.feasible[u] != 0) {
        for (std::size_t j = 0; j < idle_.size(); ++j) {
          if (scores_[idle_[j].plugin].first->normalize_active(c.raw[idle_[j].plugin * n + u])) --c.active[j];
        }
      }
      if (!need_.admits(states[u])) {
        // Rejected by a filter's bounds: which filter, and why, is asked only if someone reads it.
        ++stats.pruned;
        defer(c, u);
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
          set_reject(c, u, signature_of(*f, cluster, ctx, node, st) + 1);
          break;
        }
      }
      if (ok) set_reject(c, u, 0);
      const bool was = c.feasible[u] != 0;
      c.feasible[u] = ok ? 1 : 0;
      if (ok && !was) ++c.feasible_count;
      if (!ok && was) --c.feasible_count;
      if (ok) fit_.push_back(node);
      else if (tree_) set_leaf(c, u, kInfeasible, bulk);
    }
    if (fit_.empty()) return;
    scratch_.resize(fit_.size());
    if (bounds_ && scores_[0].first->score_bounds(cluster, ctx, fit_, scratch_)) {
      // Each node with a bound keeps it as its total (one plugin, weight > 0: weight x bound is
      // never below weight x score) until best_bounded or settle scores it; the others are scored.
      const double weight = scores_[0].second;
      std::size_t exact = 0;
      for (std::size_t i = 0; i < fit_.size(); ++i) {
        const std::uint32_t u = fit_[i].value;
        if (std::isnan(scratch_[i])) {
          fit_[exact++] = fit_[i];
          continue;
        }
        c.pending[u] = 1;
        ++c.pending_count;
        ++stats.bounded;
        set_leaf(c, u, 0.0 + weight * scratch_[i], bulk);
      }
      fit_.resize(exact);
    }
    score_fit(c, cluster, ctx, bulk);
  }

  /// Node u, rejected by a filter's bounds, is (or stays) deferred: which filter, and why, is
  /// asked only if someone reads it (resolve_deferred, reject_of).
  static void defer(Class& c, std::uint32_t u) {
    if (c.reject[u] == kDeferred) return;   // (listed already, while the list is kept)
    set_reject(c, u, kDeferred);
    if (!c.deferred_listed) return;
    c.deferred_list.push_back(u);
    if (c.deferred_list.size() > c.nodes) {
      c.deferred_list.clear();
      c.deferred_listed = false;
    }
  }

  /// Node u's reject (NodeIndexClass::reject) becomes v, kept with the class's counts: deferred
  /// nodes, and nodes per signature.
  static void set_reject(Class& c, std::uint32_t u, std::uint32_t v) {
    const std::uint32_t old = c.reject[u];
    if (old == kDeferred) --c.deferred;
    else if (old != 0) --c.sig_count[old - 1];
    if (v == kDeferred) {
      ++c.deferred;
    } else if (v != 0) {
      if (c.sig_count.size() < v) c.sig_count.resize(v, 0);
      ++c.sig_count[v - 1];
    }
    c.reject[u] = v;
  }

  /// Node u no longer holds a bound (it is scored, or its answers are being recomputed).
  static void unpend(Class& c, std::uint32_t u) {
    if (c.pending[u] == 0) return;
    c.pending[u] = 0;
    --c.pending_count;
  }

  /// Scores the nodes in fit_ (feasible, their filter answers set) and sets their raw scores
  /// and leaves; a node that held a bound holds its total after.
  void score_fit(Class& c, const ClusterState& cluster, const TaskContext& ctx, bool bulk) {
    if (fit_.empty()) return;
    const std::size_t n = c.nodes;
    for (const NodeId node : fit_) unpend(c, node.value);
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
    if (!reason_scratch_.empty()) {
      // kube-scheduler wording: the reasons are a filter's own strings, compared by address as
      // the map's key compares them; the first signatures found are searched without building one.
      for (const auto& k : worded_signatures_) {
        const Signature& g = signatures_[k];
        if (g.status.code == st.code && g.status.plugin.data() == st.plugin.data() && g.status.plugin.size() == st.plugin.size() &&
            g.status.reason.data() == st.reason.data() && g.status.reason.size() == st.reason.size() &&
            std::equal(g.reasons.begin(), g.reasons.end(), reason_scratch_.begin(), reason_scratch_.end(),
                       [](std::string_view a, std::string_view b) { return a.data() == b.data() && a.size() == b.size(); })) {
          return k;
        }
      }
    } else {
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
    if (!reason_scratch_.empty() && added && worded_signatures_.size() < 32) worded_signatures_.push_back(it->second);
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
  std::vector<std::uint32_t> worded_signatures_;   // first 32 signatures with reasons, for its other fast path
  std::vector<Signature> signatures_;
  std::vector<std::string_view> reason_scratch_;

  std::vector<FilterPlugin*> filters_;
  std::vector<std::pair<ScorePlugin*, double>> scores_;
  Mode mode_ = Mode::kLinear;
  bool tree_ = false;
  bool reasons_ = false;   // keep every reason of a rejected node (kube-scheduler diagnosis)
  bool boundable_ = false; // one score plugin, identity normalize, positive weight, totals: bounds may stand for scores
  bool bounds_ = false;    // this refresh may leave bounds (refresh's `bounds`)
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
  std::uint64_t use_clock_ = 0;   // kept_for: which of two kept structures was used last
  CapacityTree trees_[2];
  ScoreOrder orders_[kOrderVariants][2];   // per order variant
  std::vector<std::uint32_t> ties_;        // ordered_ties(): the nodes at the top score
  struct Skip {
    std::uint32_t left = 0;   // decisions left to skip (0: the next one walks)
    std::uint32_t next = 0;   // the skip after the next give-up in a row, halved
  };
  std::unordered_map<std::uint64_t, Skip> skip_;   // skip_walk(): request_class() -> its skip
  std::optional<std::uint64_t> walk_class_;        // this decision's request_class(), once computed
  std::uint64_t walk_class(const JobSpec& job) {
    if (!walk_class_) walk_class_ = request_class(job);
    return *walk_class_;
  }
  GpuOrder gpu_orders_[2];
  std::vector<std::uint32_t> seen_;   // per node: the GPU walk that last rejected it
  std::uint32_t stamp_ = 0;
  struct SlotStart {
    double top;   // the highest score the group's first node can get
    std::size_t slot;
    OrderBlocks::Cursor cursor;   // at that node; the walk then moves it along
  };
  std::vector<SlotStart> order_slots_;
};

}  // namespace gpusched::policies
