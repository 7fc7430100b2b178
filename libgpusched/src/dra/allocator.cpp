// The structured allocator (see gpusched/dra/allocator.hpp). Follows kube-scheduler's
// k8s.io/dynamic-resource-allocation/structured allocator (1.34): pool gathering, up-front
// validation, then a depth-first search over claims, requests, firstAvailable alternatives and
// devices; error texts are the peer's where it has one.
#include <gpusched/dra/allocator.hpp>

#include <algorithm>
#include <charconv>
#include <functional>
#include <limits>
#include <tuple>

namespace gpusched::dra {

namespace {

std::string device_key(std::string_view driver, std::string_view pool, std::string_view name) {
  std::string k;
  k.reserve(driver.size() + pool.size() + name.size() + 2);
  k.append(driver).push_back('\0');
  k.append(pool).push_back('\0');
  k.append(name);
  return k;
}

std::optional<std::int64_t> to_int64(std::string_view s) {
  std::int64_t v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

/// Same key, operator and set of values (the peer's test when merging node selectors).
bool same_requirement(const NodeSelectorRequirement& a, const NodeSelectorRequirement& b) {
  if (a.key != b.key || a.op != b.op) return false;
  auto x = a.values, y = b.values;
  std::sort(x.begin(), x.end());
  std::sort(y.begin(), y.end());
  x.erase(std::unique(x.begin(), x.end()), x.end());
  y.erase(std::unique(y.begin(), y.end()), y.end());
  return x == y;
}

void merge_into(std::vector<NodeSelectorRequirement>& into, const std::vector<NodeSelectorRequirement>& from) {
  for (const auto& r : from) {
    if (std::none_of(into.begin(), into.end(), [&](const NodeSelectorRequirement& e) { return same_requirement(e, r); })) into.push_back(r);
  }
}

bool requirement_holds(const NodeSelectorRequirement& r, const std::string* value) {
  const auto& vs = r.values;
  if (r.op == "In") return value != nullptr && std::find(vs.begin(), vs.end(), *value) != vs.end();
  if (r.op == "NotIn") return value == nullptr || std::find(vs.begin(), vs.end(), *value) == vs.end();
  if (r.op == "Exists") return value != nullptr;
  if (r.op == "DoesNotExist") return value == nullptr;
  if (r.op == "Gt" || r.op == "Lt") {
    // As the peer: one value, both sides integers; anything else does not match.
    if (value == nullptr || vs.size() != 1) return false;
    const auto a = to_int64(*value), b = to_int64(vs[0]);
    if (!a || !b) return false;
    return r.op == "Gt" ? *a > *b : *a < *b;
  }
  return false;
}

}  // namespace

bool matches(const NodeSelectorTerm& term, const NodeInfo& node) {
  if (term.expressions.empty() && term.fields.empty()) return false;   // an empty term matches nothing
  for (const auto& r : term.expressions) {
    const auto it = node.labels.find(r.key);
    if (!requirement_holds(r, it == node.labels.end() ? nullptr : &it->second)) return false;
  }
  for (const auto& r : term.fields) {
    const std::string* v = r.key == "metadata.name" ? &node.name : nullptr;
    if (!requirement_holds(r, v)) return false;
  }
  return true;
}

Allocator::Allocator(std::vector<DeviceClass> classes, std::vector<ResourceSlice> slices)
    : classes_(std::move(classes)), slices_(std::move(slices)) {
  for (std::size_t i = 0; i < classes_.size(); ++i) class_index_[classes_[i].name] = i;
  // The newest generation of each pool names its devices (find_device).
  std::unordered_map<std::string, std::int64_t> newest;
  std::unordered_map<std::string, std::uint32_t> identity_of;
  for (const auto& s : slices_) {
    auto [it, fresh] = newest.try_emplace(device_key(s.driver, s.pool, ""), s.generation);
    if (!fresh) it->second = std::max(it->second, s.generation);
  }
  for (std::uint32_t i = 0; i < slices_.size(); ++i) {
    const auto& s = slices_[i];
    slice_first_.push_back(static_cast<std::uint32_t>(device_slice_.size()));
    const bool current = newest[device_key(s.driver, s.pool, "")] == s.generation;
    for (const auto& d : s.devices) {
      const auto number = static_cast<std::uint32_t>(device_slice_.size());
      const std::string key = device_key(s.driver, s.pool, d.name);
      if (current) device_by_id_.try_emplace(key, number);
      auto [it, fresh] = identity_of.try_emplace(key, static_cast<std::uint32_t>(twins_.size()));
      if (fresh) twins_.emplace_back();
      twins_[it->second].push_back(number);
      identity_.push_back(it->second);
      device_slice_.push_back(i);
    }
    if (!s.node_name.empty()) {
      by_node_[s.node_name].push_back(i);
    } else if (s.all_nodes || s.node_selector) {
      unpinned_.push_back(i);
    }
  }
}

const DeviceClass* Allocator::find_class(std::string_view name) const {
  const auto it = class_index_.find(std::string(name));
  return it == class_index_.end() ? nullptr : &classes_[it->second];
}

std::optional<std::uint32_t> Allocator::find_device(std::string_view driver, std::string_view pool, std::string_view name) const {
  const auto it = device_by_id_.find(device_key(driver, pool, name));
  if (it == device_by_id_.end()) return std::nullopt;
  return it->second;
}

void Allocator::mark_in_use(const std::vector<DeviceResult>& results, std::vector<std::uint8_t>& in_use) const {
  for (const auto& r : results) {
    if (r.admin_access) continue;   // admin access never blocks anybody
    if (const auto d = find_device(r.driver, r.pool, r.device)) mark_in_use(*d, in_use);
  }
}

void Allocator::mark_in_use(std::uint32_t d, std::vector<std::uint8_t>& in_use) const {
  for (const auto twin : twins_[identity_[d]]) in_use[twin] = 1;
}

const Device& Allocator::device(std::uint32_t d) const {
  const auto s = device_slice_[d];
  return slices_[s].devices[d - slice_first_[s]];
}

// ----------------------------------------------------------------------------------- search

struct Allocator::Search {
  const Allocator& a;
  const NodeInfo& node;
  std::span<const ResourceClaim* const> claims;
  std::span<const std::uint8_t> in_use;

  struct Pool {
    std::string driver, name;
    std::int64_t generation = 0;
    std::vector<std::uint32_t> slices;
    bool incomplete = false;
    std::string invalid;   // why, when a device name repeats
  };
  std::vector<Pool> pools;

  struct Sub {   // one way to satisfy a request: `exactly`, or one firstAvailable alternative
    const DeviceSubRequest* spec = nullptr;
    const DeviceClass* cls = nullptr;
    std::string result_name;                 // "req" or "req/sub"
    std::vector<std::uint32_t> all;          // mode All: the devices, in pool / slice / device order
    std::size_t needed = 0;
  };
  struct Request {
    const DeviceRequest* spec = nullptr;
    std::vector<Sub> subs;   // one for `exactly`
    bool prioritized = false;
    std::uint32_t chosen = 0;   // the sub of the search's current path (the solution's, once found)
  };
  struct Constraint {
    const DeviceConstraint* spec = nullptr;
    std::optional<AttributeValue> value;
    std::size_t devices = 0;
  };
  struct Claim {
    std::vector<Request> requests;
    std::vector<Constraint> constraints;
    std::vector<DeviceResult> results;
    std::vector<std::uint32_t> numbers;   // the results' device numbers
  };
  std::vector<Claim> state;
  // Devices taken in this attempt: per device identity (driver, pool, name), the claims holding it.
  std::unordered_map<std::uint32_t, std::vector<std::uint32_t>> taken;
  // Selector answers per (device, claim, request, sub): 1 yes, 2 no.
  std::unordered_map<std::uint64_t, std::uint8_t> selectable_cache;
  std::uint64_t steps = 0;

  Search(const Allocator& al, const NodeInfo& n, std::span<const ResourceClaim* const> c, std::span<const std::uint8_t> u)
      : a(al), node(n), claims(c), in_use(u) {}

  void gather_pools() {
    std::unordered_map<std::string, std::size_t> index;
    auto add = [&](std::uint32_t si) {
      const auto& s = a.slices_[si];
      const std::string key = device_key(s.driver, s.pool, "");
      auto it = index.find(key);
      if (it == index.end()) {
        index.emplace(key, pools.size());
        pools.push_back({s.driver, s.pool, s.generation, {si}, false, {}});
        return;
      }
      Pool& p = pools[it->second];
      if (s.generation < p.generation) return;   // outdated
      if (s.generation > p.generation) {
        p.generation = s.generation;
        p.slices.clear();
      }
      p.slices.push_back(si);
    };
    // Slices in input order: those naming this node, for all nodes, or selecting it.
    std::vector<std::uint32_t> visible;
    if (const auto it = a.by_node_.find(node.name); it != a.by_node_.end()) visible = it->second;
    for (const auto si : a.unpinned_) {
      const auto& s = a.slices_[si];
      if (s.all_nodes || (s.node_selector && matches(*s.node_selector, node))) visible.push_back(si);
    }
    std::sort(visible.begin(), visible.end());
    for (const auto si : visible) add(si);
    for (auto& p : pools) {
      p.incomplete = static_cast<std::int64_t>(p.slices.size()) != a.slices_[p.slices.front()].slice_count;
      std::vector<std::string_view> names;
      for (const auto si : p.slices) {
        for (const auto& d : a.slices_[si].devices) names.push_back(d.name);
      }
      std::sort(names.begin(), names.end());
      const auto dup = std::adjacent_find(names.begin(), names.end());
      if (dup != names.end()) p.invalid = "duplicate device name " + std::string(*dup);
    }
  }

  [[nodiscard]] bool taken_by(std::uint32_t d, std::uint32_t claim) const {
    const auto it = taken.find(a.identity_[d]);
    return it != taken.end() && std::find(it->second.begin(), it->second.end(), claim) != it->second.end();
  }
  [[nodiscard]] bool taken_by_any(std::uint32_t d) const {
    const auto it = taken.find(a.identity_[d]);
    return it != taken.end() && !it->second.empty();
  }
  /// The cheap test before the selectors: a device other claims hold, or one this attempt took.
  [[nodiscard]] bool unavailable(std::uint32_t d, std::uint32_t claim, bool admin) const {
    if (admin) return taken_by(d, claim);
    if (taken_by_any(d)) return true;
    for (const auto twin : a.twins_[a.identity_[d]]) {
      if (in_use[twin] != 0) return true;
    }
    return false;
  }

  [[nodiscard]] bool selectable(std::uint32_t d, std::uint32_t c, std::uint32_t r, std::uint32_t s) {
    const std::uint64_t key = (static_cast<std::uint64_t>(d) << 32) ^ (static_cast<std::uint64_t>(c) << 20) ^ (static_cast<std::uint64_t>(r) << 10) ^ s;
    if (const auto it = selectable_cache.find(key); it != selectable_cache.end()) return it->second == 1;
    const Sub& sub = state[c].requests[r].subs[s];
    const Device& dev = a.device(d);
    const std::string& driver = a.slice_of(d).driver;
    bool ok = true;
    auto run = [&](const std::vector<CelExpression>& sels, bool of_class) {
      for (std::size_t i = 0; ok && i < sels.size(); ++i) {
        const auto res = sels[i].evaluate(dev, driver);
        if (!res.error.empty()) {
          const std::string who = of_class ? "class " + sub.cls->name : "claim " + claims[c]->id();
          throw AllocationError(who + ": selector #" + std::to_string(i) + ": CEL runtime error on device " + driver + "/" +
                                a.slice_of(d).pool + "/" + dev.name + ": " + res.error);
        }
        ok = res.value;
      }
    };
    run(sub.cls->selectors, true);
    if (ok) run(sub.spec->selectors, false);
    selectable_cache.emplace(key, ok ? 1 : 2);
    return ok;
  }

  [[nodiscard]] static bool applies(const DeviceConstraint& k, const std::string& request, const std::string& result_name) {
    if (k.requests.empty()) return true;
    return std::find(k.requests.begin(), k.requests.end(), request) != k.requests.end() ||
           (result_name != request && std::find(k.requests.begin(), k.requests.end(), result_name) != k.requests.end());
  }

  /// Adds device d for (c, r, s): false when it cannot be; an All request (`must`) whose device
  /// breaks a constraint is an error. On success the caller undoes with remove().
  [[nodiscard]] bool add(std::uint32_t d, std::uint32_t c, std::uint32_t r, std::uint32_t s, bool must) {
    const Sub& sub = state[c].requests[r].subs[s];
    const bool admin = sub.spec->admin_access;
    if (unavailable(d, c, admin)) return false;
    Claim& cl = state[c];
    const std::string& request = cl.requests[r].spec->name;
    const Device& dev = a.device(d);
    std::size_t done = 0;
    for (; done < cl.constraints.size(); ++done) {
      Constraint& k = cl.constraints[done];
      if (!applies(*k.spec, request, sub.result_name)) continue;
      const AttributeValue* v = dev.attribute(k.spec->match_attribute);
      const bool ok = v != nullptr && (!k.value || same_value(*k.value, *v));
      if (!ok) break;
      if (k.devices++ == 0) k.value = *v;
    }
    if (done < cl.constraints.size()) {   // roll back the constraints this device entered
      for (std::size_t i = 0; i < done; ++i) {
        Constraint& k = cl.constraints[i];
        if (!applies(*k.spec, request, sub.result_name)) continue;
        if (--k.devices == 0) k.value.reset();
      }
      if (must) {
        const auto& sl = a.slice_of(d);
        throw AllocationError("claim " + claims[c]->id() + ", request " + request + ": cannot add device " + sl.driver + "/" + sl.pool + "/" +
                              dev.name + " because a claim constraint would not be satisfied");
      }
      return false;
    }
    taken[a.identity_[d]].push_back(c);
    const auto& sl = a.slice_of(d);
    cl.results.push_back({sub.result_name, sl.driver, sl.pool, dev.name, admin});
    cl.numbers.push_back(d);
    return true;
  }

  void remove(std::uint32_t d, std::uint32_t c, std::uint32_t r, std::uint32_t s) {
    Claim& cl = state[c];
    const Sub& sub = cl.requests[r].subs[s];
    const std::string& request = cl.requests[r].spec->name;
    for (auto& k : cl.constraints) {
      if (!applies(*k.spec, request, sub.result_name)) continue;
      if (--k.devices == 0) k.value.reset();
    }
    auto& holders = taken[a.identity_[d]];
    holders.erase(std::find(holders.begin(), holders.end(), c));
    cl.results.pop_back();
    cl.numbers.pop_back();
  }

  void validate() {
    state.resize(claims.size());
    for (std::uint32_t c = 0; c < claims.size(); ++c) {
      const ResourceClaim& claim = *claims[c];
      Claim& cl = state[c];
      std::size_t minimum = 0;
      for (const auto& req : claim.requests) {
        Request rq;
        rq.spec = &req;
        rq.prioritized = !req.first_available.empty();
        const auto one = [&](const DeviceSubRequest& sr, std::string result_name) {
          Sub sub;
          sub.spec = &sr;
          sub.result_name = std::move(result_name);
          const auto found = a.class_index_.find(sr.device_class);
          sub.cls = found == a.class_index_.end() ? nullptr : &a.classes_[found->second];
          if (sub.cls == nullptr) {
            throw AllocationError("claim " + claim.id() + ", request " + sub.result_name + ": could not retrieve device class " + sr.device_class + ": not found");
          }
          if (sr.mode == AllocationMode::kExactCount) {
            sub.needed = static_cast<std::size_t>(sr.count);
          }
          return sub;
        };
        if (rq.prioritized) {
          for (const auto& sr : req.first_available) rq.subs.push_back(one(sr, req.name + "/" + sr.name));
        } else {
          rq.subs.push_back(one(req.exactly, req.name));
        }
        cl.requests.push_back(std::move(rq));
      }
      // "All" sets, then the claim's minimum size (needs the requests in place for the cache key).
      for (std::uint32_t r = 0; r < cl.requests.size(); ++r) {
        std::size_t least = std::numeric_limits<std::size_t>::max();
        for (std::uint32_t s = 0; s < cl.requests[r].subs.size(); ++s) {
          Sub& sub = cl.requests[r].subs[s];
          if (sub.spec->mode == AllocationMode::kAll) {
            for (const auto& p : pools) {
              const std::string who = "claim " + claim.id() + ", request " + sub.result_name;
              if (p.incomplete) throw AllocationError(who + ": asks for all devices, but resource pool " + p.driver + "/" + p.name + " is currently being updated");
              if (!p.invalid.empty()) throw AllocationError(who + ": asks for all devices, but resource pool " + p.driver + "/" + p.name + " is currently invalid");
            }
            for (const auto& p : pools) {
              for (const auto si : p.slices) {
                for (std::uint32_t k = 0; k < a.slices_[si].devices.size(); ++k) {
                  const std::uint32_t d = a.slice_first_[si] + k;
                  if (selectable(d, c, r, s)) sub.all.push_back(d);
                }
              }
            }
            sub.needed = sub.all.size();
          }
          least = std::min(least, sub.needed);
        }
        minimum += least;
      }
      if (minimum > kMaxDevicesPerClaim) {
        throw AllocationError("claim " + claim.id() + ": number of requested devices " + std::to_string(minimum) + " exceeds the claim limit of " +
                              std::to_string(kMaxDevicesPerClaim));
      }
      for (const auto& k : claim.constraints) cl.constraints.push_back({&k, std::nullopt, 0});
    }
  }

  /// What a step found. kTooMany: the claim would exceed kMaxDevicesPerClaim, which depends on
  /// the alternatives chosen, never on which devices: device choices are not retried for it (the
  /// peer's allocator unwinds the same way), only alternatives are.
  enum class Res : std::uint8_t { kFail, kOk, kTooMany };

  /// Devices of request (c, r) from index i on, within alternative s (-1: choose one).
  [[nodiscard]] Res step(std::uint32_t c, std::uint32_t r, int s, std::size_t i) {
    if (++steps > kMaxSteps) {
      throw AllocationError("filter operation aborted: the search for a device allocation took more than " + std::to_string(kMaxSteps) +
                            " steps (Kubernetes gives up after DRASchedulerFilterTimeout, 10 s)");
    }
    if (c == claims.size()) return Res::kOk;
    Claim& cl = state[c];
    if (r == cl.requests.size()) return step(c + 1, 0, -1, 0);
    Request& rq = cl.requests[r];
    if (s < 0) {
      if (!rq.prioritized) return step(c, r, 0, 0);
      bool only_too_many = true;
      for (std::uint32_t k = 0; k < rq.subs.size(); ++k) {
        const Res got = step(c, r, static_cast<int>(k), 0);
        if (got == Res::kOk) return got;
        only_too_many &= got == Res::kTooMany;
      }
      return only_too_many ? Res::kTooMany : Res::kFail;
    }
    const auto su = static_cast<std::uint32_t>(s);
    rq.chosen = su;
    Sub& sub = rq.subs[su];
    if (sub.spec->mode == AllocationMode::kAll && sub.all.empty()) return Res::kFail;   // All needs a device
    if (i >= sub.needed) return step(c, r + 1, -1, 0);
    if (cl.results.size() + (sub.needed - i) > kMaxDevicesPerClaim) return Res::kTooMany;
    if (sub.spec->mode == AllocationMode::kAll) {
      const std::uint32_t d = sub.all[i];
      if (!add(d, c, r, su, true)) return Res::kFail;
      const Res got = step(c, r, s, i + 1);
      if (got != Res::kOk) remove(d, c, r, su);
      return got;
    }
    const bool admin = sub.spec->admin_access;
    for (const auto& p : pools) {
      if (!p.invalid.empty()) throw AllocationError("pool " + p.name + " is invalid: " + p.invalid);
      for (const auto si : p.slices) {
        const std::uint32_t first = a.slice_first_[si];
        const auto n = static_cast<std::uint32_t>(a.slices_[si].devices.size());
        for (std::uint32_t d = first; d < first + n; ++d) {
          if (unavailable(d, c, admin)) continue;
          if (!selectable(d, c, r, su)) continue;
          if (!add(d, c, r, su, false)) continue;
          const Res got = step(c, r, s, i + 1);
          if (got == Res::kOk) return got;
          remove(d, c, r, su);
          if (got == Res::kTooMany) return got;   // another device leaves the count as it is
        }
      }
    }
    return Res::kFail;
  }

  /// The configuration the result carries to the drivers, as the 1.34 allocator copies it
  /// (allocator_stable.go "Populate configs", with PR #134793 as release-1.34 took it in #135098):
  ///  - the config of each class used, once per class, for the requests that used it ("req" or
  ///    "req/sub": the class of the alternative chosen), in request order;
  ///  - then the claim's config in order: an entry naming no request as it is; one naming
  ///    requests once for each request of the claim it names, by name or by its chosen
  ///    alternative's "req/sub" (an entry naming two requests appears twice, as in the peer).
  /// Kubernetes 1.37 also clears `requests` of an entry that covers every request (PR #139731);
  /// the 1.34 line does not.
  [[nodiscard]] std::vector<AllocatedConfig> configs(std::uint32_t c) const {
    std::vector<AllocatedConfig> out;
    const ResourceClaim& claim = *claims[c];
    const auto& requests = state[c].requests;
    std::vector<std::tuple<const DeviceClass*, std::size_t, std::size_t>> by_class;   // class, its entries [from, to)
    for (const auto& rq : requests) {
      const Sub& sub = rq.subs[rq.chosen];
      if (sub.cls == nullptr) continue;
      const auto seen = std::find_if(by_class.begin(), by_class.end(), [&](const auto& k) { return std::get<0>(k)->name == sub.cls->name; });
      if (seen != by_class.end()) {
        for (std::size_t i = std::get<1>(*seen); i < std::get<2>(*seen); ++i) out[i].requests.push_back(sub.result_name);
        continue;
      }
      const std::size_t from = out.size();
      for (const auto& k : sub.cls->config) out.push_back({AllocatedConfig::Source::kClass, {sub.result_name}, k});
      by_class.emplace_back(sub.cls, from, out.size());
    }
    auto names = [](const ClaimConfig& k, const std::string& name) { return std::find(k.requests.begin(), k.requests.end(), name) != k.requests.end(); };
    for (const auto& k : claim.config) {
      if (k.requests.empty()) {
        out.push_back({AllocatedConfig::Source::kClaim, {}, k.opaque});
        continue;
      }
      for (std::size_t r = 0; r < claim.requests.size(); ++r) {
        const bool named = names(k, claim.requests[r].name) ||
                           (requests[r].prioritized && names(k, requests[r].subs[requests[r].chosen].result_name));
        if (named) out.push_back({AllocatedConfig::Source::kClaim, k.requests, k.opaque});
      }
    }
    return out;
  }

  /// Where the claim's devices can be used (Kubernetes' node selector of the allocation).
  [[nodiscard]] Allocation result(std::uint32_t c) const {
    Allocation out;
    out.devices = state[c].results;
    out.config = configs(c);
    for (const auto d : state[c].numbers) {
      const auto& sl = a.slice_of(d);
      if (!sl.node_name.empty()) {
        out.node_name = sl.node_name;
        out.node_selector = {};
        return out;
      }
      if (!sl.node_selector) continue;
      merge_into(out.node_selector.expressions, sl.node_selector->expressions);
      merge_into(out.node_selector.fields, sl.node_selector->fields);
    }
    return out;
  }
};

std::string_view to_string(AllocatedConfig::Source s) { return s == AllocatedConfig::Source::kClass ? "FromClass" : "FromClaim"; }

std::optional<std::vector<Allocation>> Allocator::allocate(const NodeInfo& node, std::span<const ResourceClaim* const> claims,
                                                           std::span<const std::uint8_t> in_use) const {
  if (in_use.size() != device_count()) throw std::invalid_argument("dra::Allocator::allocate: in_use must have one entry per device");
  Search s(*this, node, claims, in_use);
  s.gather_pools();
  s.validate();
  const bool ok = s.step(0, 0, -1, 0) == Search::Res::kOk;
  last_steps_ = s.steps;
  if (!ok) return std::nullopt;
  std::vector<Allocation> out;
  out.reserve(claims.size());
  for (std::uint32_t c = 0; c < claims.size(); ++c) out.push_back(s.result(c));
  return out;
}

}  // namespace gpusched::dra
