// The DRA structured allocator, with the test cases of Kubernetes' shared allocator table
// (staging/src/k8s.io/dynamic-resource-allocation/structured/internal/allocatortesting/
// allocator_testing.go, the 1.34 line; each SECTION names its case). The peer's helpers are
// rebuilt here: nodes node-1/node-2 labelled region and planet=earth, class(name, driver) with
// the selector `device.driver == "<driver>"`, slices of generation 1 and one slice per pool
// unless stated. The peer compares results ignoring order; gpusched's order is deterministic
// (pools in order of first appearance), so the expectations list it.
#include <catch2/catch.hpp>

#include <algorithm>

#include <gpusched/dra/allocator.hpp>

using namespace gpusched::dra;

namespace {

NodeInfo node(const std::string& name, const std::string& region) { return {name, {{"region", region}, {"planet", "earth"}}}; }
const NodeInfo kNode1 = node("node-1", "region-1");

DeviceClass cls(const std::string& name, const std::string& driver) {
  return {name, {CelExpression::compile("device.driver == \"" + driver + "\"")}};
}

struct Dev {
  std::string name;
  std::vector<std::pair<std::string, std::string>> capacity;   // bare name -> quantity
  std::vector<std::pair<std::string, AttributeValue>> attributes;
};

ResourceSlice slice(const std::string& name, const std::string& node_name, const std::string& pool, const std::string& driver,
                    const std::vector<Dev>& devices) {
  ResourceSlice s;
  s.name = name;
  s.node_name = node_name;
  s.pool = pool;
  s.driver = driver;
  s.generation = 1;
  for (const auto& d : devices) {
    Device out;
    out.name = d.name;
    for (const auto& [k, v] : d.capacity) out.capacity.emplace_back(qualify(k, driver), Quantity::parse(v).value());
    for (const auto& [k, v] : d.attributes) out.attributes.emplace_back(qualify(k, driver), v);
    out.sort();
    s.devices.push_back(std::move(out));
  }
  return s;
}

std::vector<Dev> devices(std::initializer_list<const char*> names) {
  std::vector<Dev> out;
  for (const char* n : names) out.push_back({n, {}, {}});
  return out;
}
std::vector<Dev> numbered(int n) {
  std::vector<Dev> out;
  for (int i = 0; i < n; ++i) out.push_back({"device-" + std::to_string(i), {}, {}});
  return out;
}

DeviceSubRequest sub(const std::string& name, const std::string& cls_name, std::int64_t count, std::vector<std::string> selectors = {}) {
  DeviceSubRequest r;
  r.name = name;
  r.device_class = cls_name;
  r.count = count;
  for (const auto& s : selectors) r.selectors.push_back(CelExpression::compile(s));
  return r;
}
DeviceRequest request(const std::string& name, const std::string& cls_name, std::int64_t count, std::vector<std::string> selectors = {}) {
  DeviceRequest r;
  r.name = name;
  r.exactly = sub(name, cls_name, count, std::move(selectors));
  return r;
}
DeviceRequest all(const std::string& name, const std::string& cls_name) {
  DeviceRequest r = request(name, cls_name, 1);
  r.exactly.mode = AllocationMode::kAll;
  return r;
}
DeviceRequest admin(DeviceRequest r) {
  r.exactly.admin_access = true;
  return r;
}
DeviceRequest prioritized(const std::string& name, std::vector<DeviceSubRequest> subs) {
  DeviceRequest r;
  r.name = name;
  r.first_available = std::move(subs);
  return r;
}
ResourceClaim claim(const std::string& name, std::vector<DeviceRequest> requests, std::vector<DeviceConstraint> constraints = {}) {
  ResourceClaim c;
  c.name = name;
  c.requests = std::move(requests);
  c.constraints = std::move(constraints);
  return c;
}
std::string mem_at_least(const std::string& q) { return "device.capacity[\"driver-a\"].memory.compareTo(quantity(\"" + q + "\")) >= 0"; }

struct Case {
  std::vector<DeviceClass> classes{cls("class-a", "driver-a")};
  std::vector<ResourceSlice> slices;
  std::vector<ResourceClaim> claims;
  std::vector<std::string> allocated;   // "driver/pool/device"
  NodeInfo on = kNode1;

  /// Per claim, "request driver/pool/device" (+ " admin"); nullopt: does not fit.
  std::optional<std::vector<std::vector<std::string>>> run(std::optional<std::vector<Allocation>>* raw = nullptr) const {
    Allocator a(classes, slices);
    auto in_use = a.no_devices_in_use();
    for (const auto& id : allocated) {
      const auto p1 = id.find('/'), p2 = id.find('/', p1 + 1);
      const auto d = a.find_device(id.substr(0, p1), id.substr(p1 + 1, p2 - p1 - 1), id.substr(p2 + 1));
      REQUIRE(d);
      in_use[*d] = 1;
    }
    std::vector<const ResourceClaim*> ptrs;
    for (const auto& c : claims) ptrs.push_back(&c);
    auto r = a.allocate(on, ptrs, in_use);
    if (raw != nullptr) *raw = r;
    if (!r) return std::nullopt;
    std::vector<std::vector<std::string>> out;
    for (const auto& al : *r) {
      auto& v = out.emplace_back();
      for (const auto& d : al.devices) v.push_back(d.request + " " + d.driver + "/" + d.pool + "/" + d.device + (d.admin_access ? " admin" : ""));
    }
    return out;
  }
  std::string error() const {
    try {
      (void)run();
    } catch (const AllocationError& e) {
      return e.what();
    }
    return "";
  }
};

using Got = std::vector<std::vector<std::string>>;

}  // namespace

TEST_CASE("DRA allocator: basic allocation, slices and pools (Kubernetes' allocator table)", "[dra][allocator]") {
  Case t;
  SECTION("simple") {
    t.claims = {claim("claim-0", {request("req-0", "class-a", 1)})};
    t.slices = {slice("slice-1", "node-1", "pool-1", "driver-a", devices({"device-1"}))};
    std::optional<std::vector<Allocation>> raw;
    CHECK(t.run(&raw) == Got{{"req-0 driver-a/pool-1/device-1"}});
    CHECK((*raw)[0].node_name == "node-1");
  }
  SECTION("other-node") {
    t.slices = {slice("slice-1", "node-1", "pool-1", "driver-b", devices({"device-1"})),
                slice("slice-2", "node-2", "pool-2", "driver-a", devices({"device-1"}))};
    t.claims = {claim("claim-0", {request("req-0", "class-a", 1)})};
    t.on = node("node-2", "region-2");
    CHECK(t.run() == Got{{"req-0 driver-a/pool-2/device-1"}});
  }
  SECTION("small-and-large / small-and-large-backtrack-requests") {
    t.claims = {claim("claim-0", {request("req-0", "class-a", 1, {mem_at_least("1Gi")}), request("req-1", "class-a", 1, {mem_at_least("2Gi")})})};
    t.slices = {slice("slice-1", "node-1", "pool-1", "driver-a", {{"device-1", {{"memory", "1Gi"}}, {}}, {"device-2", {{"memory", "2Gi"}}, {}}})};
    CHECK(t.run() == Got{{"req-0 driver-a/pool-1/device-1", "req-1 driver-a/pool-1/device-2"}});
    // Large first: req-0 takes device-2, req-1 finds nothing, the search backtracks.
    t.slices = {slice("slice-1", "node-1", "pool-1", "driver-a", {{"device-2", {{"memory", "2Gi"}}, {}}, {"device-1", {{"memory", "1Gi"}}, {}}})};
    CHECK(t.run() == Got{{"req-0 driver-a/pool-1/device-1", "req-1 driver-a/pool-1/device-2"}});
  }
  SECTION("small-and-large-backtrack-claims") {
    t.claims = {claim("claim-0", {request("req-0", "class-a", 1, {mem_at_least("1Gi")})}),
                claim("claim-1", {request("req-1", "class-a", 1, {mem_at_least("2Gi")})})};
    t.slices = {slice("slice-1", "node-1", "pool-1", "driver-a", {{"device-2", {{"memory", "2Gi"}}, {}}, {"device-1", {{"memory", "1Gi"}}, {}}})};
    CHECK(t.run() == Got{{"req-0 driver-a/pool-1/device-1"}, {"req-1 driver-a/pool-1/device-2"}});
  }
  SECTION("devices-split-across-different-slices") {
    t.claims = {claim("claim-0", {request("req-0", "class-a", 2)})};
    t.slices = {slice("slice-1", "node-1", "pool-1", "driver-a", devices({"device-1"})),
                slice("slice-2", "node-1", "pool-2", "driver-a", devices({"device-1"}))};
    CHECK(t.run() == Got{{"req-0 driver-a/pool-1/device-1", "req-0 driver-a/pool-2/device-1"}});
  }
  SECTION("obsolete-slice") {
    t.claims = {claim("claim-0", {request("req-0", "class-a", 1)})};
    auto old = slice("slice-1-obsolete", "node-1", "pool-1", "driver-a", devices({"device-0"}));
    auto fresh = slice("slice-1", "node-1", "pool-1", "driver-a", devices({"device-1"}));
    fresh.generation = 2;
    t.slices = {old, fresh};
    CHECK(t.run() == Got{{"req-0 driver-a/pool-1/device-1"}});
  }
  SECTION("duplicate-slice") {
    t.claims = {claim("claim-0", {request("req-0", "class-a", 1)})};
    auto s = slice("slice-1", "node-1", "pool-1", "driver-a", devices({"device-1"}));
    s.slice_count = 2;
    auto copy = s;
    copy.name = "slice-1-2";
    t.slices = {s, copy};
    CHECK(t.error() == "pool pool-1 is invalid: duplicate device name device-1");
  }
  SECTION("no-slices / not-enough-suitable-devices / no-claims-to-allocate") {
    t.claims = {claim("claim-0", {request("req-0", "class-a", 1)})};
    CHECK_FALSE(t.run());
    t.slices = {slice("slice-1", "node-1", "pool-1", "driver-a", devices({"device-1"}))};
    t.claims = {claim("claim-0", {request("req-0", "class-a", 1)}), claim("claim-0", {request("req-1", "class-a", 1)})};
    CHECK_FALSE(t.run());
    t.claims.clear();
    CHECK(t.run() == Got{});
  }
  SECTION("network-attached-device / unsuccessful-allocation-network-attached-device") {
    t.claims = {claim("claim-0", {request("req-0", "class-a", 1)})};
    auto s = slice("slice-1", "", "pool-1", "driver-a", devices({"device-1"}));
    s.node_selector = NodeSelectorTerm{{{"region", "In", {"region-1"}}}, {}};
    t.slices = {s};
    std::optional<std::vector<Allocation>> raw;
    CHECK(t.run(&raw) == Got{{"req-0 driver-a/pool-1/device-1"}});
    CHECK((*raw)[0].node_name.empty());
    CHECK((*raw)[0].node_selector.expressions == std::vector<NodeSelectorRequirement>{{"region", "In", {"region-1"}}});
    t.on = node("node-2", "region-2");
    CHECK_FALSE(t.run());
  }
  SECTION("many-network-attached-devices / local-and-network-attached-devices") {
    t.claims = {claim("claim-0", {request("req-0", "class-a", 4)})};
    auto by_region = slice("slice-1", "", "pool-1", "driver-a", devices({"device-1"}));
    by_region.node_selector = NodeSelectorTerm{{{"region", "In", {"region-1"}}}, {}};
    auto everywhere = slice("slice-1", "", "pool-2", "driver-a", devices({"device-1"}));
    everywhere.all_nodes = true;
    auto by_planet = slice("slice-1", "", "pool-3", "driver-a", devices({"device-1"}));
    by_planet.node_selector = NodeSelectorTerm{{{"planet", "In", {"earth"}}}, {}};
    auto by_name = slice("slice-1", "", "pool-4", "driver-a", devices({"device-1"}));
    by_name.node_selector = NodeSelectorTerm{{}, {{"metadata.name", "In", {"node-1"}}}};
    t.slices = {by_region, everywhere, by_planet, by_name};
    std::optional<std::vector<Allocation>> raw;
    CHECK(t.run(&raw) == Got{{"req-0 driver-a/pool-1/device-1", "req-0 driver-a/pool-2/device-1", "req-0 driver-a/pool-3/device-1",
                              "req-0 driver-a/pool-4/device-1"}});
    const auto& sel = (*raw)[0].node_selector;
    CHECK(sel.expressions == std::vector<NodeSelectorRequirement>{{"region", "In", {"region-1"}}, {"planet", "In", {"earth"}}});
    CHECK(sel.fields == std::vector<NodeSelectorRequirement>{{"metadata.name", "In", {"node-1"}}});
    // A device of a slice that names its node pins the claim there.
    t.claims = {claim("claim-0", {request("req-0", "class-a", 2)})};
    t.slices = {by_region, slice("slice-2", "node-1", "pool-2", "driver-a", devices({"device-1"}))};
    CHECK(t.run(&raw));
    CHECK((*raw)[0].node_name == "node-1");
  }
  SECTION("several-different-drivers") {
    t.classes = {cls("class-a", "driver-a"), cls("class-b", "driver-b")};
    t.claims = {claim("claim-0", {request("req-0", "class-a", 1)}), claim("claim-0", {request("req-0", "class-b", 1)})};
    t.slices = {slice("slice-1", "node-1", "pool-1", "driver-a", devices({"device-1", "device-2"})),
                slice("slice-1", "node-1", "pool-1", "driver-b", devices({"device-1"}))};
    CHECK(t.run() == Got{{"req-0 driver-a/pool-1/device-1"}, {"req-0 driver-b/pool-1/device-1"}});
  }
  SECTION("already-allocated-devices") {
    t.claims = {claim("claim-0", {request("req-0", "class-a", 1)})};
    t.slices = {slice("slice-1", "node-1", "pool-1", "driver-a", devices({"device-1"}))};
    t.allocated = {"driver-a/pool-1/device-1"};
    CHECK_FALSE(t.run());
  }
}

TEST_CASE("DRA allocator: validation errors and the 32-device claim limit", "[dra][allocator]") {
  Case t;
  SECTION("no-classes / unknown-class") {
    t.classes.clear();
    t.claims = {claim("claim-0", {request("req-0", "class-a", 1)})};
    CHECK(t.error() == "claim claim-0, request req-0: could not retrieve device class class-a: not found");
  }
  SECTION("too-many-devices-single-request / many-devices-okay") {
    t.claims = {claim("claim-0", {request("req-0", "class-a", 500)})};
    CHECK(t.error() == "claim claim-0: number of requested devices 500 exceeds the claim limit of 32");
    t.claims = {claim("claim-0", {request("req-0", "class-a", 32)})};
    CHECK(t.error().empty());
    CHECK_FALSE(t.run());
  }
  SECTION("too-many-devices-total / max-number-devices") {
    t.slices = {slice("slice-1", "node-1", "pool-1", "driver-a", numbered(33))};
    t.claims = {claim("claim-0", {request("req-0", "class-a", 32), request("req-1", "class-a", 1)})};
    CHECK(t.error().find("number of requested devices 33 exceeds the claim limit of 32") != std::string::npos);
    t.slices = {slice("slice-1", "node-1", "pool-1", "driver-a", numbered(32))};
    t.claims = {claim("claim-0", {request("req-0", "class-a", 32)})};
    const auto got = t.run();
    REQUIRE(got);
    CHECK((*got)[0].size() == 32);
    CHECK((*got)[0].back() == "req-0 driver-a/pool-1/device-31");
  }
  SECTION("CEL runtime error in a claim or class selector (scheduler plugin tests: claim-parameters-CEL-runtime-error)") {
    t.slices = {slice("slice-1", "node-1", "pool-1", "driver-a", devices({"device-1"}))};
    t.claims = {claim("claim-0", {request("req-0", "class-a", 1, {"device.attributes[\"driver-a\"].missing == 1"})})};
    CHECK(t.error() == "claim claim-0: selector #0: CEL runtime error on device driver-a/pool-1/device-1: no such key: missing");
    t.classes = {{"class-a", {CelExpression::compile("device.attributes[\"driver-a\"].missing == 1")}}};
    t.claims = {claim("claim-0", {request("req-0", "class-a", 1)})};
    CHECK(t.error() == "class class-a: selector #0: CEL runtime error on device driver-a/pool-1/device-1: no such key: missing");
  }
}

TEST_CASE("DRA allocator: allocationMode All", "[dra][allocator]") {
  Case t;
  t.classes = {cls("class-a", "driver-a"), cls("class-b", "driver-b")};
  SECTION("all-devices-single / all-devices-many") {
    t.claims = {claim("claim-0", {all("req-0", "class-a")})};
    t.slices = {slice("slice-1", "node-1", "pool-1", "driver-a", devices({"device-1"}))};
    CHECK(t.run() == Got{{"req-0 driver-a/pool-1/device-1"}});
    t.slices.push_back(slice("slice-1", "node-1", "pool-2", "driver-a", devices({"device-1"})));
    CHECK(t.run() == Got{{"req-0 driver-a/pool-1/device-1", "req-0 driver-a/pool-2/device-1"}});
  }
  SECTION("all-devices-of-the-incomplete-pool") {
    t.claims = {claim("claim-0", {all("req-0", "class-a")})};
    auto s = slice("slice-1", "node-1", "pool-1", "driver-a", devices({"device-1"}));
    s.slice_count = 2;
    t.slices = {s};
    CHECK(t.error() == "claim claim-0, request req-0: asks for all devices, but resource pool driver-a/pool-1 is currently being updated");
  }
  SECTION("all-devices-plus-another (and -reversed, -many-)") {
    t.slices = {slice("slice-1", "node-1", "pool-1", "driver-a", devices({"device-1", "device-2"})),
                slice("slice-1", "node-1", "pool-1", "driver-b", devices({"device-1"}))};
    t.claims = {claim("claim-0", {all("req-0", "class-a")}), claim("claim-1", {request("req-0", "class-b", 1)})};
    CHECK(t.run() == Got{{"req-0 driver-a/pool-1/device-1", "req-0 driver-a/pool-1/device-2"}, {"req-0 driver-b/pool-1/device-1"}});
    std::swap(t.claims[0], t.claims[1]);
    CHECK(t.run() == Got{{"req-0 driver-b/pool-1/device-1"}, {"req-0 driver-a/pool-1/device-1", "req-0 driver-a/pool-1/device-2"}});
  }
  SECTION("all-devices-no-solution (and -reversed)") {
    t.slices = {slice("slice-1", "node-1", "pool-1", "driver-a", devices({"device-1"}))};
    t.claims = {claim("claim-1", {request("req-0", "class-a", 1)}), claim("claim-0", {all("req-0", "class-a")})};
    CHECK_FALSE(t.run());
    std::swap(t.claims[0], t.claims[1]);
    CHECK_FALSE(t.run());
    CHECK(t.error().empty());
  }
  SECTION("all-devices-slice-without-devices / all-devices-no-slices") {
    t.claims = {claim("claim-0", {all("req-0", "class-a")})};
    t.slices = {slice("slice-1", "node-1", "pool-1", "driver-a", {})};
    CHECK_FALSE(t.run());
    t.slices.clear();
    CHECK_FALSE(t.run());
  }
  SECTION("all-devices-some-allocated / -admin-access / all-devices-some-allocating-admin-access") {
    t.slices = {slice("slice-1", "node-1", "pool-1", "driver-a", devices({"device-1", "device-2"}))};
    t.allocated = {"driver-a/pool-1/device-1"};
    t.claims = {claim("claim-0", {all("req-0", "class-a")})};
    CHECK_FALSE(t.run());
    t.claims = {claim("claim-0", {admin(all("req-0", "class-a"))})};
    CHECK(t.run() == Got{{"req-0 driver-a/pool-1/device-1 admin", "req-0 driver-a/pool-1/device-2 admin"}});
    t.allocated.clear();
    t.claims = {claim("claim-0", {admin(request("req-0", "class-a", 1)), admin(all("req-1", "class-a"))})};
    CHECK_FALSE(t.run());
  }
  SECTION("with-constraint-not-matching-int-attribute-all-devices") {
    t.slices = {slice("slice-1", "node-1", "pool-1", "driver-a",
                      {{"device-1", {}, {{"numa", std::int64_t{1}}}}, {"device-2", {}, {{"numa", std::int64_t{2}}}}})};
    t.claims = {claim("claim-0", {all("req-0", "class-a")}, {{{}, "driver-a/numa"}})};
    CHECK(t.error() == "claim claim-0, request req-0: cannot add device driver-a/pool-1/device-2 because a claim constraint would not be satisfied");
  }
}

TEST_CASE("DRA allocator: admin access", "[dra][allocator]") {
  Case t;
  t.slices = {slice("slice-1", "node-1", "pool-1", "driver-a", devices({"device-1", "device-2"}))};
  SECTION("count-devices-some-allocated-admin-access") {
    t.allocated = {"driver-a/pool-1/device-1"};
    t.claims = {claim("claim-0", {admin(request("req-0", "class-a", 2))})};
    CHECK(t.run() == Got{{"req-0 driver-a/pool-1/device-1 admin", "req-0 driver-a/pool-1/device-2 admin"}});
  }
  SECTION("separate-claims-share-device-admin-access") {
    t.claims = {claim("claim-0", {admin(request("req-0", "class-a", 1))}), claim("claim-1", {admin(request("req-0", "class-a", 1))})};
    CHECK(t.run() == Got{{"req-0 driver-a/pool-1/device-1 admin"}, {"req-0 driver-a/pool-1/device-1 admin"}});
  }
  SECTION("admin-access-claims-device-allocating-for-non-admin-access") {
    t.claims = {claim("claim-0", {request("req-0", "class-a", 1)}), claim("claim-1", {admin(request("req-0", "class-a", 1))})};
    CHECK(t.run() == Got{{"req-0 driver-a/pool-1/device-1"}, {"req-0 driver-a/pool-1/device-1 admin"}});
  }
  SECTION("admin-access-enabled") {
    t.slices = {slice("slice-1", "node-1", "pool-1", "driver-a", devices({"device-1"}))};
    t.allocated = {"driver-a/pool-1/device-1"};
    t.claims = {claim("claim-0", {admin(request("req-0", "class-a", 1))})};
    CHECK(t.run() == Got{{"req-0 driver-a/pool-1/device-1 admin"}});
  }
}

TEST_CASE("DRA allocator: matchAttribute constraints", "[dra][allocator]") {
  Case t;
  const AttributeValue v1 = *Semver::parse("1.0.0"), v2 = *Semver::parse("2.0.0"), v3 = *Semver::parse("3.0.0");
  SECTION("with-constraint") {
    const std::vector<std::pair<std::string, AttributeValue>> same = {
        {"driverVersion", v1}, {"numa", std::int64_t{1}}, {"stringAttribute", std::string("stringAttributeValue")}, {"boolAttribute", true}};
    t.slices = {slice("slice-1", "node-1", "pool-1", "driver-a", {{"device-1", {}, same}, {"device-2", {}, same}})};
    t.claims = {claim("claim-0", {request("req-0", "class-a", 1), request("req-1", "class-a", 1)},
                      {{{}, "driver-a/numa"}, {{}, "driver-a/driverVersion"}, {{}, "driver-a/stringAttribute"}, {{}, "driver-a/boolAttribute"}})};
    CHECK(t.run() == Got{{"req-0 driver-a/pool-1/device-1", "req-1 driver-a/pool-1/device-2"}});
  }
  SECTION("with-constraint-non-existent-attribute") {
    t.slices = {slice("slice-1", "node-1", "pool-1", "driver-a", devices({"device-1"}))};
    t.claims = {claim("claim-0", {request("req-0", "class-a", 1)}, {{{}, "driver-a/NonExistentAttribute"}})};
    CHECK_FALSE(t.run());
    CHECK(t.error().empty());
  }
  SECTION("with-constraint-not-matching-{int,string,bool,version}-attribute") {
    const std::vector<std::pair<std::string, std::pair<AttributeValue, AttributeValue>>> kinds = {
        {"numa", {std::int64_t{1}, std::int64_t{2}}},
        {"stringAttribute", {std::string("stringAttributeValue"), std::string("stringAttributeValue2")}},
        {"boolAttribute", {true, false}},
        {"driverVersion", {v1, v2}}};
    for (const auto& [attr, values] : kinds) {
      INFO(attr);
      t.slices = {slice("slice-1", "node-1", "pool-1", "driver-a", {{"device-1", {}, {{attr, values.first}}}, {"device-2", {}, {{attr, values.second}}}})};
      t.claims = {claim("claim-0", {request("req-0", "class-a", 2)}, {{{}, "driver-a/" + attr}})};
      CHECK_FALSE(t.run());
    }
  }
  SECTION("versions are compared as text, as the peer's constraint does") {
    t.slices = {slice("slice-1", "node-1", "pool-1", "driver-a",
                      {{"device-1", {}, {{"driverVersion", *Semver::parse("1.0.0+a")}}}, {"device-2", {}, {{"driverVersion", *Semver::parse("1.0.0+b")}}}})};
    t.claims = {claim("claim-0", {request("req-0", "class-a", 2)}, {{{}, "driver-a/driverVersion"}})};
    CHECK_FALSE(t.run());
  }
  SECTION("with-constraint-for-request / with-constraint-for-request-retry") {
    t.slices = {slice("slice-1", "node-1", "pool-1", "driver-a", {{"device-1", {}, {{"driverVersion", v1}}}, {"device-2", {}, {{"driverVersion", v2}}}})};
    t.claims = {claim("claim-0", {request("req-0", "class-a", 1), request("req-1", "class-a", 1)}, {{{"req-0"}, "driver-a/driverVersion"}})};
    CHECK(t.run() == Got{{"req-0 driver-a/pool-1/device-1", "req-1 driver-a/pool-1/device-2"}});
    t.slices = {slice("slice-1", "node-1", "pool-1", "driver-a",
                      {{"device-1", {}, {{"driverVersion", v1}, {"stringAttribute", std::string("a")}}},
                       {"device-2", {}, {{"driverVersion", v2}, {"stringAttribute", std::string("b")}}},
                       {"device-3", {}, {{"driverVersion", v3}, {"stringAttribute", std::string("b")}}}})};
    t.claims = {claim("claim-0", {request("req-0", "class-a", 1), request("req-1", "class-a", 1)},
                      {{{"req-0"}, "driver-a/driverVersion"}, {{}, "driver-a/stringAttribute"}})};
    CHECK(t.run() == Got{{"req-0 driver-a/pool-1/device-2", "req-1 driver-a/pool-1/device-3"}});
  }
}

TEST_CASE("DRA allocator: firstAvailable alternatives", "[dra][allocator]") {
  Case t;
  t.classes = {cls("class-a", "driver-a"), cls("class-b", "driver-b")};
  SECTION("prioritized-list-first-unavailable / prioritized-list-non-available") {
    t.slices = {slice("slice-1", "node-1", "pool-1", "driver-a", devices({"device-1"}))};
    t.claims = {claim("claim-0", {prioritized("req-0", {sub("subReq-0", "class-b", 1), sub("subReq-1", "class-a", 1)})})};
    CHECK(t.run() == Got{{"req-0/subReq-1 driver-a/pool-1/device-1"}});
    t.slices = {slice("slice-1", "node-1", "pool-1", "driver-a", devices({"device-1"})),
                slice("slice-2", "node-1", "pool-2", "driver-b", devices({"device-1"}))};
    t.claims = {claim("claim-0", {prioritized("req-0", {sub("subReq-0", "class-b", 2), sub("subReq-1", "class-a", 2)})})};
    CHECK_FALSE(t.run());
  }
  SECTION("prioritized-list-subrequests-with-expressions") {
    t.slices = {slice("slice-1", "node-1", "pool-1", "driver-a",
                      {{"device-1", {{"memory", "2Gi"}}, {}}, {"device-2", {{"memory", "2Gi"}}, {}}, {"device-3", {{"memory", "1Gi"}}, {}}})};
    t.claims = {claim("claim-0", {request("req-0", "class-a", 1, {mem_at_least("1Gi")}),
                                  prioritized("req-1", {sub("subReq-0", "class-a", 1, {mem_at_least("4Gi")}),
                                                        sub("subReq-1", "class-a", 2, {mem_at_least("2Gi")})})})};
    CHECK(t.run() == Got{{"req-0 driver-a/pool-1/device-3", "req-1/subReq-1 driver-a/pool-1/device-1", "req-1/subReq-1 driver-a/pool-1/device-2"}});
  }
  SECTION("prioritized-list-subrequests-with-constraints-ref-parent-request / -ref-sub-request") {
    const AttributeValue v1 = *Semver::parse("1.0.0"), v2 = *Semver::parse("2.0.0");
    t.slices = {slice("slice-1", "node-1", "pool-1", "driver-a", {{"device-1", {{"memory", "8Gi"}}, {{"driverVersion", v1}}}}),
                slice("slice-2", "node-1", "pool-2", "driver-a",
                      {{"device-2", {{"memory", "2Gi"}}, {{"driverVersion", v2}}}, {"device-3", {{"memory", "1Gi"}}, {{"driverVersion", v1}}}})};
    auto requests = std::vector<DeviceRequest>{request("req-0", "class-a", 1, {mem_at_least("8Gi")}),
                                               prioritized("req-1", {sub("subReq-0", "class-a", 1, {mem_at_least("2Gi")}),
                                                                     sub("subReq-1", "class-a", 1, {mem_at_least("1Gi")})})};
    t.claims = {claim("claim-0", requests, {{{"req-0", "req-1"}, "driver-a/driverVersion"}})};
    CHECK(t.run() == Got{{"req-0 driver-a/pool-1/device-1", "req-1/subReq-1 driver-a/pool-2/device-3"}});
    t.slices[1] = slice("slice-2", "node-1", "pool-2", "driver-a", {{"device-2", {{"memory", "2Gi"}}, {{"driverVersion", v2}}}});
    t.claims = {claim("claim-0", requests, {{{"req-0", "req-1/subReq-0"}, "driver-a/driverVersion"}})};
    CHECK(t.run() == Got{{"req-0 driver-a/pool-1/device-1", "req-1/subReq-1 driver-a/pool-2/device-2"}});
  }
  SECTION("prioritized-list-subrequests-with-allocation-mode-all / -multiple-requests / prioritized-list-allocation-mode-all") {
    t.slices = {slice("slice-1", "node-1", "pool-1", "driver-a", devices({"device-1", "device-2"}))};
    auto all_sub = sub("subReq-0", "class-a", 1);
    all_sub.mode = AllocationMode::kAll;
    t.allocated = {"driver-a/pool-1/device-1"};
    t.claims = {claim("claim-0", {prioritized("req-0", {all_sub, sub("subReq-1", "class-a", 1)})})};
    CHECK(t.run() == Got{{"req-0/subReq-1 driver-a/pool-1/device-2"}});
    t.allocated = {"driver-a/pool-1/device-2"};
    CHECK(t.run() == Got{{"req-0/subReq-1 driver-a/pool-1/device-1"}});
    t.allocated.clear();
    t.claims = {claim("claim-0", {request("req-0", "class-a", 1), prioritized("req-1", {all_sub, sub("subReq-1", "class-a", 1)})})};
    CHECK(t.run() == Got{{"req-0 driver-a/pool-1/device-1", "req-1/subReq-1 driver-a/pool-1/device-2"}});
  }
  SECTION("all-devices-slice-without-devices-prioritized-list (and -no-slices, -some-allocated)") {
    auto all_sub = sub("subReq-0", "class-a", 1);
    all_sub.mode = AllocationMode::kAll;
    t.claims = {claim("claim-0", {prioritized("req-0", {all_sub, sub("subReq-1", "class-b", 1)})})};
    const auto b = slice("slice-2", "node-1", "pool-2", "driver-b", devices({"device-1"}));
    t.slices = {slice("slice-1", "node-1", "pool-1", "driver-a", {}), b};
    CHECK(t.run() == Got{{"req-0/subReq-1 driver-b/pool-2/device-1"}});
    t.slices = {b};
    CHECK(t.run() == Got{{"req-0/subReq-1 driver-b/pool-2/device-1"}});
    t.slices = {slice("slice-1", "node-1", "pool-1", "driver-a", devices({"device-1", "device-2"})), b};
    t.allocated = {"driver-a/pool-1/device-1"};
    CHECK(t.run() == Got{{"req-0/subReq-1 driver-b/pool-2/device-1"}});
  }
  SECTION("prioritized-list-multi-request / prioritized-list-with-backtracking") {
    t.slices = {slice("slice-1", "node-1", "pool-1", "driver-a", {{"device-1", {{"memory", "8Gi"}}, {}}}),
                slice("slice-2", "node-1", "pool-2", "driver-a", {{"device-2", {{"memory", "4Gi"}}, {}}})};
    const auto alternatives = prioritized("req-0", {sub("subReq-0", "class-a", 1, {mem_at_least("8Gi")}), sub("subReq-1", "class-a", 1, {mem_at_least("4Gi")})});
    t.claims = {claim("claim-0", {request("req-1", "class-a", 1, {mem_at_least("8Gi")}), alternatives})};
    CHECK(t.run() == Got{{"req-1 driver-a/pool-1/device-1", "req-0/subReq-1 driver-a/pool-2/device-2"}});
    t.claims = {claim("claim-0", {alternatives, request("req-1", "class-a", 1, {mem_at_least("8Gi")})})};
    CHECK(t.run() == Got{{"req-0/subReq-1 driver-a/pool-2/device-2", "req-1 driver-a/pool-1/device-1"}});
  }
  SECTION("prioritized-list-too-many-in-first-subrequest") {
    t.slices = {slice("slice-1", "node-1", "pool-1", "driver-a", devices({"device-1"}))};
    t.claims = {claim("claim-0", {prioritized("req-0", {sub("subReq-0", "class-b", 500), sub("subReq-1", "class-a", 1)})})};
    CHECK(t.run() == Got{{"req-0/subReq-1 driver-a/pool-1/device-1"}});
  }
  SECTION("prioritized-list-max-allocation-limit-request") {
    t.slices = {slice("slice-1", "node-1", "pool-1", "driver-a", numbered(64))};
    const auto alternatives = [](const std::string& name) {
      return prioritized(name, {sub("subReq-0", "class-a", 32), sub("subReq-1", "class-a", 16)});
    };
    t.claims = {claim("claim-0", {alternatives("req-0"), alternatives("req-1")})};
    const auto got = t.run();
    REQUIRE(got);
    REQUIRE((*got)[0].size() == 32);
    CHECK((*got)[0][0] == "req-0/subReq-1 driver-a/pool-1/device-0");
    CHECK((*got)[0][15] == "req-0/subReq-1 driver-a/pool-1/device-15");
    CHECK((*got)[0][16] == "req-1/subReq-1 driver-a/pool-1/device-16");
    CHECK((*got)[0][31] == "req-1/subReq-1 driver-a/pool-1/device-31");
  }
  SECTION("prioritized-list-max-allocation-allocation-mode-all") {
    auto all_sub = sub("subReq-0", "class-a", 1);
    all_sub.mode = AllocationMode::kAll;
    t.slices = {slice("slice-1", "node-1", "pool-1", "driver-a", numbered(31)), slice("slice-2", "node-1", "pool-2", "driver-b", numbered(2))};
    t.claims = {claim("claim-0", {prioritized("req-0", {all_sub, sub("subReq-1", "class-a", 2)}), request("req-1", "class-b", 2)})};
    CHECK(t.run() == Got{{"req-0/subReq-1 driver-a/pool-1/device-0", "req-0/subReq-1 driver-a/pool-1/device-1", "req-1 driver-b/pool-2/device-0",
                          "req-1 driver-b/pool-2/device-1"}});
  }
}

TEST_CASE("DRA allocator: class and claim config copied into the result", "[dra][allocator]") {
  // The peer's config cases (allocator_testing.go as release-1.34 has it with PR #134793, cherry-
  // picked as #135098): a class's config once per class, naming the requests that used it; the
  // claim's config for the requests it names, by name or by the chosen alternative. The peer's
  // deviceConfiguration(driver, attribute) is {"<attribute>": "<attribute>Value"}.
  auto opaque = [](const std::string& driver, const std::string& attribute) {
    return OpaqueConfig{driver, "{\"" + attribute + "\":\"" + attribute + "Value\"}"};
  };
  auto with_config = [&](DeviceClass c, const std::string& driver, const std::string& attribute) {
    c.config.push_back(opaque(driver, attribute));
    return c;
  };
  auto from_class = [&](std::vector<std::string> requests, const std::string& driver, const std::string& attribute) {
    return AllocatedConfig{AllocatedConfig::Source::kClass, std::move(requests), opaque(driver, attribute)};
  };
  auto from_claim = [&](std::vector<std::string> requests, const std::string& driver, const std::string& attribute) {
    return AllocatedConfig{AllocatedConfig::Source::kClaim, std::move(requests), opaque(driver, attribute)};
  };
  Case t;
  std::optional<std::vector<Allocation>> raw;
  SECTION("with-class-device-config") {
    t.classes = {with_config(cls("class-a", "driver-a"), "driver-a", "classAttribute")};
    t.slices = {slice("slice-1", "node-1", "pool-1", "driver-a", devices({"device-1"}))};
    t.claims = {claim("claim-0", {request("req-0", "class-a", 1)})};
    CHECK(t.run(&raw) == Got{{"req-0 driver-a/pool-1/device-1"}});
    REQUIRE(raw);
    CHECK((*raw)[0].config == std::vector<AllocatedConfig>{from_class({"req-0"}, "driver-a", "classAttribute")});
  }
  SECTION("with-class-device-config-with-multiple-request-and-configs") {
    t.classes = {with_config(cls("class-a", "driver-a"), "driver-a", "classAttribute-A"),
                 with_config(cls("class-b", "driver-b"), "driver-b", "classAttribute-B")};
    t.slices = {slice("slice-1", "node-1", "pool-1", "driver-a", numbered(2)),
                slice("slice-2", "node-1", "pool-1", "driver-b", devices({"device-1"}))};
    t.claims = {claim("claim-0", {request("req-0", "class-a", 1), request("req-1", "class-a", 1), request("req-2", "class-b", 1)})};
    CHECK(t.run(&raw) == Got{{"req-0 driver-a/pool-1/device-0", "req-1 driver-a/pool-1/device-1", "req-2 driver-b/pool-1/device-1"}});
    REQUIRE(raw);
    CHECK((*raw)[0].config == std::vector<AllocatedConfig>{from_class({"req-0", "req-1"}, "driver-a", "classAttribute-A"),
                                                          from_class({"req-2"}, "driver-b", "classAttribute-B")});
  }
  SECTION("claim-with-device-config") {
    t.slices = {slice("slice-1", "node-1", "pool-1", "driver-a", devices({"device-1"}))};
    t.claims = {claim("claim-0", {request("req-0", "class-a", 1)})};
    t.claims[0].config = {ClaimConfig{{}, opaque("driver-a", "deviceAttribute")}};
    CHECK(t.run(&raw) == Got{{"req-0 driver-a/pool-1/device-1"}});
    REQUIRE(raw);
    CHECK((*raw)[0].config == std::vector<AllocatedConfig>{from_claim({}, "driver-a", "deviceAttribute")});
  }
  SECTION("prioritized-list-device-config") {
    t.classes = {cls("class-a", "driver-a"), cls("class-b", "driver-b")};
    t.slices = {slice("slice-1", "node-1", "pool-1", "driver-b", devices({"device-1", "device-2"}))};
    t.claims = {claim("claim-0", {prioritized("req-0", {sub("subReq-0", "class-a", 1), sub("subReq-1", "class-b", 2)})})};
    t.claims[0].config = {ClaimConfig{{"req-0/subReq-0"}, opaque("driver-a", "foo")}, ClaimConfig{{"req-0/subReq-1"}, opaque("driver-b", "bar")}};
    CHECK(t.run(&raw) == Got{{"req-0/subReq-1 driver-b/pool-1/device-1", "req-0/subReq-1 driver-b/pool-1/device-2"}});
    REQUIRE(raw);
    CHECK((*raw)[0].config == std::vector<AllocatedConfig>{from_claim({"req-0/subReq-1"}, "driver-b", "bar")});
  }
  SECTION("prioritized-list-class-config") {
    t.classes = {with_config(cls("class-a", "driver-a"), "driver-a", "foo"), with_config(cls("class-b", "driver-b"), "driver-b", "bar")};
    t.slices = {slice("slice-1", "node-1", "pool-1", "driver-b", devices({"device-1", "device-2"})),
                slice("slice-2", "node-1", "pool-2", "driver-a", devices({"device-3"}))};
    t.claims = {claim("claim-0", {prioritized("req-0", {sub("subReq-0", "class-a", 2), sub("subReq-1", "class-b", 2)})})};
    CHECK(t.run(&raw) == Got{{"req-0/subReq-1 driver-b/pool-1/device-1", "req-0/subReq-1 driver-b/pool-1/device-2"}});
    REQUIRE(raw);
    CHECK((*raw)[0].config == std::vector<AllocatedConfig>{from_class({"req-0/subReq-1"}, "driver-b", "bar")});
  }
  SECTION("gpusched: a claim config naming two requests appears once per request it names, as the peer's loop appends it") {
    // Not a peer case: the peer's claim-config loop `continue`s its request loop after a match,
    // so an entry naming req-0 and req-1 is appended for each; no class config without config.
    t.slices = {slice("slice-1", "node-1", "pool-1", "driver-a", numbered(3))};
    t.claims = {claim("claim-0", {request("req-0", "class-a", 1), request("req-1", "class-a", 1), request("req-2", "class-a", 1)})};
    t.claims[0].config = {ClaimConfig{{"req-0", "req-1"}, opaque("driver-a", "x")}, ClaimConfig{{}, opaque("driver-a", "y")},
                          ClaimConfig{{"req-2"}, opaque("driver-a", "z")}};
    REQUIRE(t.run(&raw));
    CHECK((*raw)[0].config == std::vector<AllocatedConfig>{from_claim({"req-0", "req-1"}, "driver-a", "x"),
                                                          from_claim({"req-0", "req-1"}, "driver-a", "x"),
                                                          from_claim({}, "driver-a", "y"), from_claim({"req-2"}, "driver-a", "z")});
  }
}

TEST_CASE("DRA allocator: a device in use is in use in every generation of its pool, and long searches are aborted", "[dra][allocator]") {
  // A pool whose generations are visible on different nodes (review of issue 18): the device is
  // one (driver, pool, name), as Kubernetes' in-use set keys it.
  auto old_gen = slice("slice-1", "node-1", "pool-1", "driver-a", devices({"device-1"}));
  auto new_gen = slice("slice-2", "node-2", "pool-1", "driver-a", devices({"device-1"}));
  new_gen.generation = 2;
  Allocator a({cls("class-a", "driver-a")}, {old_gen, new_gen});
  auto in_use = a.no_devices_in_use();
  const auto c = claim("claim-0", {request("req-0", "class-a", 1)});
  const ResourceClaim* one[] = {&c};
  auto got = a.allocate(kNode1, one, in_use);
  REQUIRE(got);
  a.mark_in_use((*got)[0].devices, in_use);
  CHECK(std::count(in_use.begin(), in_use.end(), 1) == 2);   // both generations
  CHECK_FALSE(a.allocate(kNode1, one, in_use));
  CHECK_FALSE(a.allocate(node("node-2", "region-1"), one, in_use));

  // 16 of 32 identical devices, then a request nothing matches: every 16-permutation would be
  // tried. The search stops after Allocator::kMaxSteps steps with the peer's wording.
  Case t;
  t.slices = {slice("slice-1", "node-1", "pool-1", "driver-a", numbered(32))};
  t.claims = {claim("claim-0", {request("many", "class-a", 16), request("never", "class-a", 1, {"device.driver == 'nobody'"})})};
  CHECK(t.error().find("filter operation aborted") == 0);
}

TEST_CASE("DRA allocator: node selectors match as core/v1 NodeSelectorTerms", "[dra][allocator]") {
  const NodeInfo n{"node-7", {{"gpu", "h100"}, {"count", "8"}}};
  CHECK(matches({{{"gpu", "In", {"a100", "h100"}}}, {}}, n));
  CHECK_FALSE(matches({{{"gpu", "NotIn", {"h100"}}}, {}}, n));
  CHECK(matches({{{"zone", "DoesNotExist", {}}, {"gpu", "Exists", {}}}, {}}, n));
  CHECK(matches({{{"count", "Gt", {"4"}}}, {}}, n));
  CHECK_FALSE(matches({{{"count", "Lt", {"4"}}}, {}}, n));
  CHECK_FALSE(matches({{{"gpu", "Gt", {"4"}}}, {}}, n));   // not integers: no match
  CHECK(matches({{}, {{"metadata.name", "In", {"node-7"}}}}, n));
  CHECK_FALSE(matches({{}, {}}, n));   // an empty term matches nothing
}

TEST_CASE("DRA allocator: the search never hands one device to two non-admin requests (random property test)", "[dra][allocator]") {
  // Random slices, claims and constraints: every answer is checked against the inputs (each
  // device once, devices exist and are free, selectors and constraints hold, counts met); a
  // nullopt answer is checked against an exhaustive search over assignments for small cases.
  std::uint64_t state = 12345;
  auto next = [&](std::uint64_t n) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (state >> 33) % n;
  };
  for (int round = 0; round < 300; ++round) {
    Case t;
    const int ndev = 1 + static_cast<int>(next(6));
    std::vector<Dev> devs;
    for (int i = 0; i < ndev; ++i) {
      devs.push_back({"device-" + std::to_string(i), {{"memory", std::to_string(1 + next(4)) + "Gi"}}, {{"numa", static_cast<std::int64_t>(next(2))}}});
    }
    t.slices = {slice("slice-1", "node-1", "pool-1", "driver-a", devs)};
    const int nreq = 1 + static_cast<int>(next(3));
    std::vector<DeviceRequest> reqs;
    for (int r = 0; r < nreq; ++r) reqs.push_back(request("req-" + std::to_string(r), "class-a", 1 + static_cast<std::int64_t>(next(2)), {mem_at_least(std::to_string(1 + next(3)) + "Gi")}));
    std::vector<DeviceConstraint> cons;
    if (next(2) == 0) cons.push_back({{}, "driver-a/numa"});
    t.claims = {claim("claim-0", reqs, cons)};
    if (next(3) == 0) t.allocated = {"driver-a/pool-1/device-0"};
    const auto got = t.run();
    // Brute force: assign each needed device slot a distinct free device, in request order.
    std::vector<std::pair<int, std::int64_t>> slots;   // (request, min memory GiB)
    std::vector<std::int64_t> need_mem;
    for (int r = 0; r < nreq; ++r) {
      for (std::int64_t k = 0; k < t.claims[0].requests[static_cast<std::size_t>(r)].exactly.count; ++k) slots.push_back({r, 0});
    }
    const auto mem_of = [&](int d) { return std::stoll(devs[static_cast<std::size_t>(d)].capacity[0].second); };
    const auto numa_of = [&](int d) { return std::get<std::int64_t>(devs[static_cast<std::size_t>(d)].attributes[0].second); };
    std::vector<std::int64_t> min_mem;
    for (const auto& rq : t.claims[0].requests) {
      const std::string sel = rq.exactly.selectors[0].text();
      min_mem.push_back(std::stoll(sel.substr(sel.find("quantity(\"") + 10)));
    }
    std::vector<int> pick(slots.size(), -1);
    std::function<bool(std::size_t)> search = [&](std::size_t i) {
      if (i == slots.size()) return true;
      for (int d = 0; d < ndev; ++d) {
        if (!t.allocated.empty() && d == 0) continue;
        if (std::find(pick.begin(), pick.begin() + static_cast<std::ptrdiff_t>(i), d) != pick.begin() + static_cast<std::ptrdiff_t>(i)) continue;
        if (mem_of(d) < min_mem[static_cast<std::size_t>(slots[i].first)]) continue;
        if (!cons.empty() && i > 0 && numa_of(d) != numa_of(pick[0])) continue;
        pick[i] = d;
        if (search(i + 1)) return true;
      }
      pick[i] = -1;
      return false;
    };
    const bool exists = slots.size() <= 32 && search(0);
    INFO("round " << round);
    CHECK(got.has_value() == exists);
    if (got && exists) {
      // The first solution in device order is the peer's answer: equal to the brute force's.
      std::vector<std::string> want;
      for (std::size_t i = 0; i < slots.size(); ++i) {
        want.push_back("req-" + std::to_string(slots[i].first) + " driver-a/pool-1/device-" + std::to_string(pick[i]));
      }
      CHECK((*got)[0] == want);
    }
  }
}
