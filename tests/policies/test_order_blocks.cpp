// The shared score order of the node index (policies/src/node_index.hpp, OrderBlocks): a walk
// from any item, with or without skipping its run, returns what a sorted list of the placed items
// returns, after a rebuild and through thousands of places and removes (blocks split, merge and
// empty; spans skip).
// Decisions through it are compared with the plain scan in test_properties.cpp and
// test_node_index.cpp; here the structure alone, at sizes those clusters never reach.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <tuple>
#include <vector>

#include <gpusched/rng.hpp>

#include "../../policies/src/node_index.hpp"

using gpusched::policies::OrderBlocks;

namespace {

struct Placed {
  bool on = false;
  std::uint32_t group = 0;
  double key = 0.0;
  std::uint64_t fingerprint = 0;
  OrderBlocks::Cap cap;
};

/// The walk as a sorted list gives it.
std::uint32_t reference_next(const std::vector<Placed>& items, std::uint32_t group, const OrderBlocks::Cap& need, std::uint32_t u,
                             bool past_run) {
  auto order = [&](std::uint32_t a) { return std::make_tuple(-items[a].key, items[a].fingerprint, a); };
  std::uint32_t best = OrderBlocks::kNil;
  for (std::uint32_t v = 0; v < items.size(); ++v) {
    const Placed& p = items[v];
    if (!p.on || p.group != group || !need.admits(p.cap)) continue;
    if (u != OrderBlocks::kNil) {
      const bool after = past_run ? std::make_tuple(-p.key, p.fingerprint) > std::make_tuple(-items[u].key, items[u].fingerprint)
                                  : order(v) > order(u);
      if (!after) continue;
    }
    if (best == OrderBlocks::kNil || order(v) < order(best)) best = v;
  }
  return best;
}

OrderBlocks::Cap random_cap(gpusched::Rng& rng, std::uint64_t range) {
  OrderBlocks::Cap c;
  for (auto& lane : c.v) lane = static_cast<std::int32_t>(rng.below(range));
  return c;
}

/// `probes` walks of random groups, from the start or from a random item of the group, with or
/// without skipping its run, for every item, most or only the roomy ones (whole blocks and spans
/// skipped): each must return what the sorted list returns.
void check_walks(const OrderBlocks& o, const std::vector<Placed>& items, gpusched::Rng& rng, int probes) {
  const auto n = static_cast<std::uint32_t>(items.size());
  for (int q = 0; q < probes; ++q) {
    const std::size_t slot = rng.below(o.groups());
    const std::uint32_t group = o.group(slot);
    OrderBlocks::Cap need;
    need.v.fill(0);
    const auto kind = rng.below(3);
    if (kind == 1) need = random_cap(rng, 2);
    if (kind == 2) need.v[rng.below(8)] = static_cast<std::int32_t>(3 + rng.below(9));
    std::uint32_t u = OrderBlocks::kNil;
    for (int tries = 0; tries < 50 && rng.below(5) != 0; ++tries) {
      const auto v = static_cast<std::uint32_t>(rng.below(n));
      if (items[v].on && items[v].group == group) {
        u = v;
        break;
      }
    }
    const bool past_run = rng.below(2) == 0;
    REQUIRE(o.next(slot, need, u, past_run) == reference_next(items, group, need, u, past_run));
    // A walk that keeps its cursor (advance), some steps past the run: each step as the list's,
    // and the cursor's key the item's. It is checked from a random depth on (the steps before
    // are taken unchecked), so resuming at span and block boundaries is met too.
    OrderBlocks::Cursor cur;
    std::uint32_t want = reference_next(items, group, need, OrderBlocks::kNil, false);
    REQUIRE(o.advance(slot, need, cur) == want);
    for (auto skip = rng.below(400); skip > 0 && cur.item != OrderBlocks::kNil; --skip) {
      o.advance(slot, need, cur, rng.below(3) == 0);
    }
    want = cur.item;
    for (int steps = 0; want != OrderBlocks::kNil && steps < 40; ++steps) {
      REQUIRE(cur.item == want);
      REQUIRE(cur.key == o.key(want));
      const bool skip = rng.below(3) == 0;
      want = reference_next(items, group, need, want, skip);
      REQUIRE(o.advance(slot, need, cur, skip) == want);
    }
  }
}

}  // namespace

TEST_CASE("The score order's blocks walk as a sorted list of the placed items does, through splits, merges and "
          "emptied blocks",
          "[policies][node-index]") {
  const std::uint32_t n = GENERATE(200u, 3000u);
  const std::uint64_t seed = GENERATE(1u, 2u, 3u);
  gpusched::Rng rng(seed);
  OrderBlocks o;
  o.reset(n);
  std::vector<Placed> items(n);
  const std::uint32_t groups[] = {7, 3, 11};
  auto place = [&](std::uint32_t u, bool crowd = false) {
    Placed& p = items[u];
    p.on = true;
    p.group = crowd ? 7 : groups[rng.below(3)];
    p.key = static_cast<double>(crowd ? 3 : rng.below(6)) * 0.25;   // few keys and fingerprints: long runs of equals
    p.fingerprint = crowd ? 2 : rng.below(4);
    p.cap = rng.below(40) == 0 ? random_cap(rng, 12) : random_cap(rng, 3);   // a few roomy items among many small ones
    o.place(u, p.group, p.key, p.fingerprint, p.cap);
  };
  auto check = [&](int probes) { check_walks(o, items, rng, probes); };

  for (std::uint32_t u = 0; u < n; ++u) place(u);   // gathered, then sorted once
  o.build();
  check(200);
  // Churn: moves (as a changed node moves), removals down to a few items, places back, then most
  // items moved into one run of one group (its blocks split over and over, and their spans).
  for (int round = 0; round < 4; ++round) {
    for (std::uint32_t k = 0; k < 2 * n; ++k) {
      const auto u = static_cast<std::uint32_t>(rng.below(n));
      if (items[u].on) {
        o.remove(u);
        items[u].on = false;
        REQUIRE_FALSE(o.placed(u));
      }
      const bool thinning = round == 1;   // this round takes most items out for good
      if (!thinning || rng.below(10) == 0) place(u, round == 3 && rng.below(4) != 0);
      if (k % 97 == 0) check(5);
    }
    check(200);
  }
  // same(): placed where and as it was, and not when any of group, key, fingerprint or capacity differ.
  for (std::uint32_t u = 0; u < n; ++u) {
    const Placed& p = items[u];
    if (!p.on) continue;
    CHECK(o.same(u, p.group, p.key, p.fingerprint, p.cap));
    CHECK_FALSE(o.same(u, p.group, p.key + 1.0, p.fingerprint, p.cap));
    OrderBlocks::Cap other = p.cap;
    other.v[3] += 1;
    CHECK_FALSE(o.same(u, p.group, p.key, p.fingerprint, other));
  }
  // Every item out: every walk finds nothing.
  for (std::uint32_t u = 0; u < n; ++u) {
    if (items[u].on) o.remove(u);
    items[u].on = false;
  }
  OrderBlocks::Cap all;
  all.v.fill(0);
  for (std::size_t slot = 0; slot < o.groups(); ++slot) CHECK(o.next(slot, all, OrderBlocks::kNil) == OrderBlocks::kNil);
}

TEST_CASE("The score order's blocks: twenty groups, and keys that drift one way (thin blocks and spans join "
          "their neighbours)",
          "[policies][node-index]") {
  const std::uint32_t n = 4000;
  gpusched::Rng rng(GENERATE(5u, 6u));
  OrderBlocks o;
  o.reset(n);
  std::vector<Placed> items(n);
  double clock = 0.0;
  auto place = [&](std::uint32_t u, bool rising) {
    Placed& p = items[u];
    p.on = true;
    p.group = 100 + 7 * static_cast<std::uint32_t>(rng.below(20));   // past the groups searched linearly
    clock += 1.0;
    p.key = rising ? clock : -clock;   // each moved item goes to the front (rising) or the back of its group
    p.fingerprint = rng.below(2);
    p.cap = rng.below(40) == 0 ? random_cap(rng, 12) : random_cap(rng, 3);
    o.place(u, p.group, p.key, p.fingerprint, p.cap);
  };
  auto check = [&](int probes) { check_walks(o, items, rng, probes); };

  for (std::uint32_t u = 0; u < n; ++u) place(u, true);
  o.build();
  check(100);
  for (const bool rising : {true, false}) {
    for (std::uint32_t k = 0; k < 3 * n; ++k) {
      const auto u = static_cast<std::uint32_t>(rng.below(n));
      if (!items[u].on) continue;
      o.remove(u);
      place(u, rising);
      if (k % 101 == 0) check(5);
    }
    check(100);
  }
  // Most items out, at random: spans thin out and join.
  for (std::uint32_t u = 0; u < n; ++u) {
    if (rng.below(10) != 0) {
      o.remove(u);
      items[u].on = false;
    }
    if (u % 211 == 0) check(5);
  }
  check(200);
}
