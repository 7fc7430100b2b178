// DRA objects (ResourceSlice, DeviceClass, ResourceClaim, ResourceClaimTemplate; resource.k8s.io
// v1, v1beta2 and v1beta1) and Node names/labels, read into gpusched::dra with every error
// naming the file, line, object and field (see gpusched/scenario/k8s_dra.hpp).
#include <gpusched/scenario/k8s_dra.hpp>

#include <algorithm>
#include <set>

#include <gpusched/quantity.hpp>

#include "k8s_objects_detail.hpp"

namespace gpusched::scenario {
namespace {

using detail::ObjectContext;
using json = nlohmann::json;

constexpr std::string_view kApiVersions[] = {"resource.k8s.io/v1", "resource.k8s.io/v1beta2", "resource.k8s.io/v1beta1"};
bool is_v1beta1(const KubernetesObject& o) { return o.api_version == "resource.k8s.io/v1beta1"; }

/// Checks that `j` is a mapping whose keys are among `known`; `alpha` keys are features gpusched
/// does not model (an error that says so).
void check_keys(const ObjectContext& c, const json& j, const std::string& path, const std::vector<std::string_view>& known,
                const std::vector<std::pair<std::string_view, std::string_view>>& alpha = {}) {
  c.expect_object(j, path);
  for (const auto& [k, v] : j.items()) {
    if (std::find(known.begin(), known.end(), k) != known.end()) continue;
    for (const auto& [name, why] : alpha) {
      if (k == name) c.unmodelled(path + "/" + k, std::string(why));
    }
    std::string names;
    for (auto n : known) names += (names.empty() ? "" : ", ") + std::string(n);
    c.unknown(path + "/" + k, names);
  }
}

std::string required_string(const ObjectContext& c, const json& parent, const std::string& path, const std::string& key) {
  if (!parent.contains(key)) c.fail(ErrorCode::kScenarioMissingField, path + "/" + key, "missing (required)");
  const std::string s = c.str(parent.at(key), path + "/" + key);
  if (s.empty()) c.fail(ErrorCode::kScenarioBadValue, path + "/" + key, "must not be empty");
  return s;
}

std::vector<dra::CelExpression> selectors(const ObjectContext& c, const json& parent, const std::string& path) {
  std::vector<dra::CelExpression> out;
  if (!parent.contains("selectors")) return out;
  const auto& list = parent.at("selectors");
  c.expect_array(list, path + "/selectors");
  if (list.size() > 32) c.fail(ErrorCode::kScenarioBadValue, path + "/selectors", "at most 32 selectors (Kubernetes' DeviceSelectorsMaxSize)");
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string p = path + "/selectors/" + std::to_string(i);
    check_keys(c, list[i], p, {"cel"});
    if (!list[i].contains("cel")) c.fail(ErrorCode::kScenarioMissingField, p + "/cel", "CEL expression empty (unsupported selector type?)");
    check_keys(c, list[i].at("cel"), p + "/cel", {"expression"});
    const std::string text = required_string(c, list[i].at("cel"), p + "/cel", "expression");
    try {
      out.push_back(dra::CelExpression::compile(text));
    } catch (const dra::CelError& e) {
      c.fail(ErrorCode::kScenarioBadValue, p + "/cel/expression",
             std::string("CEL: ") + e.what() + (e.column() > 0 ? " (column " + std::to_string(e.column()) + ")" : "") +
                 "; gpusched evaluates a subset of CEL, listed in docs/dra.md");
    }
  }
  return out;
}

dra::NodeSelectorTerm node_selector(const ObjectContext& c, const json& j, const std::string& path) {
  check_keys(c, j, path, {"nodeSelectorTerms"});
  if (!j.contains("nodeSelectorTerms")) c.fail(ErrorCode::kScenarioMissingField, path + "/nodeSelectorTerms", "missing (required)");
  const auto& terms = j.at("nodeSelectorTerms");
  c.expect_array(terms, path + "/nodeSelectorTerms");
  if (terms.size() != 1) {
    c.fail(ErrorCode::kScenarioBadValue, path + "/nodeSelectorTerms", "a ResourceSlice's node selector must have exactly one term, not " + std::to_string(terms.size()));
  }
  dra::NodeSelectorTerm out;
  const std::string tp = path + "/nodeSelectorTerms/0";
  check_keys(c, terms[0], tp, {"matchExpressions", "matchFields"});
  for (const char* kind : {"matchExpressions", "matchFields"}) {
    if (!terms[0].contains(kind)) continue;
    const auto& list = terms[0].at(kind);
    c.expect_array(list, tp + "/" + kind);
    for (std::size_t i = 0; i < list.size(); ++i) {
      const std::string p = tp + "/" + kind + "/" + std::to_string(i);
      check_keys(c, list[i], p, {"key", "operator", "values"});
      dra::NodeSelectorRequirement r;
      r.key = required_string(c, list[i], p, "key");
      r.op = required_string(c, list[i], p, "operator");
      static constexpr std::string_view kOps[] = {"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"};
      if (std::find(std::begin(kOps), std::end(kOps), r.op) == std::end(kOps)) {
        c.fail(ErrorCode::kScenarioBadValue, p + "/operator", "\"" + r.op + "\" is not one of In, NotIn, Exists, DoesNotExist, Gt, Lt");
      }
      if (list[i].contains("values")) {
        c.expect_array(list[i].at("values"), p + "/values");
        for (std::size_t k = 0; k < list[i].at("values").size(); ++k) r.values.push_back(c.str(list[i].at("values")[k], p + "/values/" + std::to_string(k)));
      }
      if (std::string_view(kind) == "matchFields" && r.key != "metadata.name") {
        c.fail(ErrorCode::kScenarioBadValue, p + "/key", "node selector fields support metadata.name only");
      }
      (std::string_view(kind) == "matchFields" ? out.fields : out.expressions).push_back(std::move(r));
    }
  }
  return out;
}

/// An RFC 1123 DNS label (at most 63 lowercase alphanumerics and '-', alphanumeric at both ends).
bool dns_label(std::string_view s) {
  if (s.empty() || s.size() > 63) return false;
  auto alnum = [](char ch) { return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9'); };
  if (!alnum(s.front()) || !alnum(s.back())) return false;
  return std::all_of(s.begin(), s.end(), [&](char ch) { return alnum(ch) || ch == '-'; });
}
/// An RFC 1123 DNS subdomain of at most `max` characters: DNS labels joined by '.'.
bool dns_subdomain(std::string_view s, std::size_t max) {
  if (s.empty() || s.size() > max) return false;
  for (;;) {
    const auto dot = s.find('.');
    if (!dns_label(s.substr(0, dot))) return false;
    if (dot == std::string_view::npos) return true;
    s.remove_prefix(dot + 1);
  }
}
void check_name(const ObjectContext& c, const std::string& name, const std::string& path, bool subdomain, std::size_t max = 63) {
  if (subdomain ? dns_subdomain(name, max) : dns_label(name)) return;
  c.fail(ErrorCode::kScenarioBadValue, path,
         "\"" + name + "\" is not a " + (subdomain ? "DNS subdomain" : "DNS label") + " (lowercase letters, digits and '-'" +
             (subdomain ? ", labels joined by '.'" : "") + ", at most " + std::to_string(max) + " characters)");
}

/// One DeviceConfiguration: `opaque` with a driver and a JSON object of parameters (the only
/// kind the API has), as the API server validates it (10 KiB of parameters at most).
dra::OpaqueConfig opaque_config(const ObjectContext& c, const json& j, const std::string& path, const std::vector<std::string_view>& known) {
  check_keys(c, j, path, known);
  if (!j.contains("opaque")) c.fail(ErrorCode::kScenarioMissingField, path + "/opaque", "missing (required; the only kind of configuration)");
  const auto& o = j.at("opaque");
  const std::string p = path + "/opaque";
  check_keys(c, o, p, {"driver", "parameters"});
  dra::OpaqueConfig out;
  out.driver = required_string(c, o, p, "driver");
  check_name(c, out.driver, p + "/driver", true);
  if (!o.contains("parameters")) c.fail(ErrorCode::kScenarioMissingField, p + "/parameters", "missing (required)");
  const auto& params = o.at("parameters");
  if (!params.is_object()) c.fail(ErrorCode::kScenarioBadValue, p + "/parameters", "must be a JSON object");
  out.parameters = params.dump();
  if (out.parameters.size() > 10 * 1024) {
    c.fail(ErrorCode::kScenarioBadValue, p + "/parameters", "longer than 10 KiB (Kubernetes' OpaqueParametersMaxLength)");
  }
  return out;
}

/// spec.config of a DeviceClass or spec.devices.config of a claim: at most 32 entries.
const json& config_list(const ObjectContext& c, const json& parent, const std::string& path) {
  const auto& list = parent.at("config");
  c.expect_array(list, path + "/config");
  if (list.size() > 32) c.fail(ErrorCode::kScenarioBadValue, path + "/config", "at most 32 entries (Kubernetes' DeviceConfigMaxSize)");
  return list;
}

bool c_identifier(std::string_view s) {
  if (s.empty() || s.size() > 32 || (s[0] >= '0' && s[0] <= '9')) return false;
  return std::all_of(s.begin(), s.end(), [](char ch) { return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_'; });
}

/// A qualified attribute or capacity name ("id" or "domain/id"), checked as the API server does.
std::string qualified_name(const ObjectContext& c, const std::string& name, const std::string& path, const std::string& driver) {
  const auto slash = name.find('/');
  const std::string_view id = slash == std::string::npos ? std::string_view(name) : std::string_view(name).substr(slash + 1);
  if (!c_identifier(id) || (slash != std::string::npos && !dns_subdomain(std::string_view(name).substr(0, slash), 63))) {
    c.fail(ErrorCode::kScenarioBadValue, path, "\"" + name + "\" is not a qualified name (an optional domain of at most 63 characters and \"/\", then a C identifier of at most 32)");
  }
  return dra::qualify(name, driver);
}

dra::Device device(const ObjectContext& c, const json& j, const std::string& path, const std::string& driver, bool v1beta1) {
  static const std::vector<std::pair<std::string_view, std::string_view>> kAlpha = {
      {"consumesCounters", "partitionable devices (DRAPartitionableDevices, alpha in Kubernetes 1.34)"},
      {"taints", "device taints (DRADeviceTaints, alpha in Kubernetes 1.34)"},
      {"bindsToNode", "binding conditions (DRADeviceBindingConditions, alpha in Kubernetes 1.34)"},
      {"bindingConditions", "binding conditions (DRADeviceBindingConditions, alpha in Kubernetes 1.34)"},
      {"bindingFailureConditions", "binding conditions (DRADeviceBindingConditions, alpha in Kubernetes 1.34)"},
      {"allowMultipleAllocations", "consumable capacity (DRAConsumableCapacity, alpha in Kubernetes 1.34)"},
      {"nodeName", "per-device node selection (DRAPartitionableDevices, alpha in Kubernetes 1.34)"},
      {"nodeSelector", "per-device node selection (DRAPartitionableDevices, alpha in Kubernetes 1.34)"},
      {"allNodes", "per-device node selection (DRAPartitionableDevices, alpha in Kubernetes 1.34)"}};
  dra::Device d;
  if (v1beta1) {
    check_keys(c, j, path, {"name", "basic"});
  } else {
    check_keys(c, j, path, {"name", "attributes", "capacity"}, kAlpha);
  }
  d.name = required_string(c, j, path, "name");
  check_name(c, d.name, path + "/name", false);
  const json* body = &j;
  std::string bp = path;
  if (v1beta1) {
    if (!j.contains("basic")) c.fail(ErrorCode::kScenarioMissingField, path + "/basic", "missing (a v1beta1 device holds its attributes in basic)");
    body = &j.at("basic");
    bp = path + "/basic";
    check_keys(c, *body, bp, {"attributes", "capacity"}, kAlpha);
  }
  std::set<std::string> seen;
  if (body->contains("attributes")) {
    const auto& attrs = body->at("attributes");
    c.expect_object(attrs, bp + "/attributes");
    for (const auto& [name, v] : attrs.items()) {
      const std::string p = bp + "/attributes/" + name;
      const std::string q = qualified_name(c, name, p, driver);
      if (!seen.insert(q).second) c.fail(ErrorCode::kScenarioBadValue, p, "names the attribute " + q + " twice");
      check_keys(c, v, p, {"int", "bool", "string", "version"});
      if (v.size() != 1) c.fail(ErrorCode::kScenarioBadValue, p, "exactly one of int, bool, string, version");
      const std::string type = v.begin().key();
      const json& value = v.begin().value();
      dra::AttributeValue out;
      if (type == "int") out = c.integer(value, p + "/int", std::numeric_limits<std::int64_t>::min(), std::numeric_limits<std::int64_t>::max());
      else if (type == "bool") out = c.boolean(value, p + "/bool");
      else if (type == "string") {
        std::string s = c.str(value, p + "/string");
        if (s.size() > 64) c.fail(ErrorCode::kScenarioBadValue, p + "/string", "longer than 64 characters");
        out = std::move(s);
      } else {
        const std::string s = c.str(value, p + "/version");
        auto ver = dra::Semver::parse(s);
        if (!ver || s.size() > 64) c.fail(ErrorCode::kScenarioBadValue, p + "/version", "\"" + s + "\" is not a semantic version (semver.org 2.0.0, at most 64 characters)");
        out = std::move(*ver);
      }
      d.attributes.emplace_back(q, std::move(out));
    }
  }
  if (body->contains("capacity")) {
    const auto& caps = body->at("capacity");
    c.expect_object(caps, bp + "/capacity");
    for (const auto& [name, v] : caps.items()) {
      const std::string p = bp + "/capacity/" + name;
      const std::string q = qualified_name(c, name, p, driver);
      if (!seen.insert(q).second) c.fail(ErrorCode::kScenarioBadValue, p, "names " + q + " twice (attributes and capacities share names)");
      check_keys(c, v, p, {"value"}, {{"requestPolicy", "consumable capacity (DRAConsumableCapacity, alpha in Kubernetes 1.34)"}});
      if (!v.contains("value")) c.fail(ErrorCode::kScenarioMissingField, p + "/value", "missing (required)");
      const auto text = v.at("value").is_null() ? std::nullopt : scalar_text(v.at("value"));
      const auto q2 = text ? dra::Quantity::parse(*text) : std::nullopt;
      if (!q2) c.fail(ErrorCode::kScenarioBadValue, p + "/value", "expected a Kubernetes quantity (\"80Gi\", \"4\", \"500m\")");
      d.capacity.emplace_back(q, *q2);
    }
  }
  if (seen.size() > 32) c.fail(ErrorCode::kScenarioBadValue, bp, "more than 32 attributes and capacities (Kubernetes' limit per device)");
  d.sort();
  return d;
}

dra::ResourceSlice resource_slice(const ObjectContext& c) {
  const auto& o = c.object();
  c.check_top({"spec"});
  if (!o.object.contains("spec")) c.fail(ErrorCode::kScenarioMissingField, "/spec", "missing (required)");
  const auto& spec = o.object.at("spec");
  check_keys(c, spec, "/spec", {"driver", "pool", "nodeName", "nodeSelector", "allNodes", "devices"},
             {{"sharedCounters", "partitionable devices (DRAPartitionableDevices, alpha in Kubernetes 1.34)"},
              {"perDeviceNodeSelection", "per-device node selection (DRAPartitionableDevices, alpha in Kubernetes 1.34)"}});
  dra::ResourceSlice s;
  s.name = o.name;
  s.driver = required_string(c, spec, "/spec", "driver");
  check_name(c, s.driver, "/spec/driver", true);
  if (!spec.contains("pool")) c.fail(ErrorCode::kScenarioMissingField, "/spec/pool", "missing (required)");
  const auto& pool = spec.at("pool");
  check_keys(c, pool, "/spec/pool", {"name", "generation", "resourceSliceCount"});
  s.pool = required_string(c, pool, "/spec/pool", "name");
  {
    // Kubernetes: DNS subdomains joined by '/', at most 253 characters in all.
    bool ok = s.pool.size() <= 253;
    std::string_view rest = s.pool;
    for (; ok;) {
      const auto slash = rest.find('/');
      ok = dns_subdomain(rest.substr(0, slash), 253);
      if (slash == std::string_view::npos) break;
      rest.remove_prefix(slash + 1);
    }
    if (!ok) c.fail(ErrorCode::kScenarioBadValue, "/spec/pool/name", "\"" + s.pool + "\" is not a pool name (DNS subdomains joined by '/', at most 253 characters)");
  }
  s.generation = pool.contains("generation") ? c.integer(pool.at("generation"), "/spec/pool/generation", 0, std::numeric_limits<std::int64_t>::max()) : 0;
  if (!pool.contains("resourceSliceCount")) c.fail(ErrorCode::kScenarioMissingField, "/spec/pool/resourceSliceCount", "missing (required)");
  s.slice_count = c.integer(pool.at("resourceSliceCount"), "/spec/pool/resourceSliceCount", 1, std::numeric_limits<std::int64_t>::max());
  int where = 0;
  if (spec.contains("nodeName") && !spec.at("nodeName").is_null()) {
    s.node_name = c.str(spec.at("nodeName"), "/spec/nodeName");
    where += s.node_name.empty() ? 0 : 1;
  }
  if (spec.contains("allNodes") && !spec.at("allNodes").is_null()) {
    s.all_nodes = c.boolean(spec.at("allNodes"), "/spec/allNodes");
    where += s.all_nodes ? 1 : 0;
  }
  if (spec.contains("nodeSelector") && !spec.at("nodeSelector").is_null()) {
    s.node_selector = node_selector(c, spec.at("nodeSelector"), "/spec/nodeSelector");
    ++where;
  }
  if (where != 1) c.fail(ErrorCode::kScenarioBadValue, "/spec", "exactly one of nodeName, nodeSelector, allNodes must be set");
  if (spec.contains("devices")) {
    const auto& devs = spec.at("devices");
    c.expect_array(devs, "/spec/devices");
    if (devs.size() > 128) c.fail(ErrorCode::kScenarioBadValue, "/spec/devices", "more than 128 devices (Kubernetes' limit per slice)");
    std::set<std::string> names;
    for (std::size_t i = 0; i < devs.size(); ++i) {
      const std::string p = "/spec/devices/" + std::to_string(i);
      s.devices.push_back(device(c, devs[i], p, s.driver, is_v1beta1(o)));
      if (!names.insert(s.devices.back().name).second) c.fail(ErrorCode::kScenarioBadValue, p + "/name", "device name " + s.devices.back().name + " repeats in this slice");
    }
  }
  return s;
}

dra::DeviceClass device_class(const ObjectContext& c) {
  const auto& o = c.object();
  c.check_top({"spec"});
  dra::DeviceClass out;
  out.name = o.name;
  if (out.name.empty()) c.fail(ErrorCode::kScenarioMissingField, "/metadata/name", "missing (required)");
  if (!o.object.contains("spec")) return out;
  const auto& spec = o.object.at("spec");
  // config only travels to the driver (the allocation result copies it): no effect on decisions.
  check_keys(c, spec, "/spec", {"selectors", "config"}, {{"extendedResourceName", "extended resources backed by DRA (DRAExtendedResource, alpha in Kubernetes 1.34)"}});
  out.selectors = selectors(c, spec, "/spec");
  if (spec.contains("config")) {
    const auto& list = config_list(c, spec, "/spec");
    for (std::size_t i = 0; i < list.size(); ++i) out.config.push_back(opaque_config(c, list[i], "/spec/config/" + std::to_string(i), {"opaque"}));
  }
  return out;
}

dra::DeviceSubRequest sub_request(const ObjectContext& c, const json& j, const std::string& path, bool exactly) {
  const std::vector<std::string_view> known = exactly ? std::vector<std::string_view>{"deviceClassName", "selectors", "allocationMode", "count", "adminAccess"}
                                                      : std::vector<std::string_view>{"name", "deviceClassName", "selectors", "allocationMode", "count"};
  check_keys(c, j, path, known,
             {{"tolerations", "device taints and tolerations (DRADeviceTaints, alpha in Kubernetes 1.34)"},
              {"capacity", "consumable capacity (DRAConsumableCapacity, alpha in Kubernetes 1.34)"}});
  dra::DeviceSubRequest r;
  if (!exactly) {
    r.name = required_string(c, j, path, "name");
    check_name(c, r.name, path + "/name", false);
  }
  if (!j.contains("deviceClassName")) c.fail(ErrorCode::kScenarioMissingField, path + "/deviceClassName", "missing device class name");
  r.device_class = required_string(c, j, path, "deviceClassName");
  r.selectors = selectors(c, j, path);
  const std::string mode = j.contains("allocationMode") ? c.str(j.at("allocationMode"), path + "/allocationMode") : "ExactCount";
  if (mode == "ExactCount") r.mode = dra::AllocationMode::kExactCount;
  else if (mode == "All") r.mode = dra::AllocationMode::kAll;
  else c.fail(ErrorCode::kScenarioBadValue, path + "/allocationMode", "unsupported count mode " + mode + " (ExactCount or All)");
  if (j.contains("count")) {
    if (r.mode == dra::AllocationMode::kAll) c.fail(ErrorCode::kScenarioBadValue, path + "/count", "must not be set when allocationMode is All");
    r.count = c.integer(j.at("count"), path + "/count", 1, std::numeric_limits<std::int32_t>::max());
  }
  if (exactly && j.contains("adminAccess") && !j.at("adminAccess").is_null()) r.admin_access = c.boolean(j.at("adminAccess"), path + "/adminAccess");
  return r;
}

/// Whether `name` is a request of `claim` ("req") or one of its firstAvailable alternatives ("req/sub").
bool names_request(const dra::ResourceClaim& claim, const std::string& name) {
  const std::string parent = name.substr(0, name.find('/'));
  return std::any_of(claim.requests.begin(), claim.requests.end(), [&](const dra::DeviceRequest& q) {
    if (q.name != parent) return false;
    if (parent == name) return true;
    const std::string sub = name.substr(parent.size() + 1);
    return std::any_of(q.first_available.begin(), q.first_available.end(), [&](const dra::DeviceSubRequest& s) { return s.name == sub; });
  });
}

dra::ResourceClaim claim_spec(const ObjectContext& c, const json& spec, const std::string& path, bool v1beta1) {
  dra::ResourceClaim out;
  check_keys(c, spec, path, {"devices"});
  if (!spec.contains("devices")) return out;
  const auto& devices = spec.at("devices");
  const std::string dp = path + "/devices";
  check_keys(c, devices, dp, {"requests", "constraints", "config"});
  std::set<std::string> names;
  if (devices.contains("requests")) {
    const auto& reqs = devices.at("requests");
    c.expect_array(reqs, dp + "/requests");
    if (reqs.size() > 32) c.fail(ErrorCode::kScenarioBadValue, dp + "/requests", "more than 32 requests (Kubernetes' DeviceRequestsMaxSize)");
    for (std::size_t i = 0; i < reqs.size(); ++i) {
      const std::string p = dp + "/requests/" + std::to_string(i);
      dra::DeviceRequest r;
      c.expect_object(reqs[i], p);
      r.name = required_string(c, reqs[i], p, "name");
      check_name(c, r.name, p + "/name", false);
      if (!names.insert(r.name).second) c.fail(ErrorCode::kScenarioBadValue, p + "/name", "request name " + r.name + " repeats");
      const bool has_first = reqs[i].contains("firstAvailable");
      if (v1beta1) {
        // v1beta1: the request's own fields, or firstAvailable.
        json own = reqs[i];
        own.erase("name");
        own.erase("firstAvailable");
        if (has_first && !own.empty()) c.fail(ErrorCode::kScenarioBadValue, p, "firstAvailable excludes deviceClassName and the other request fields");
        if (!has_first) r.exactly = sub_request(c, own, p, true);
      } else {
        check_keys(c, reqs[i], p, {"name", "exactly", "firstAvailable"});
        if (reqs[i].contains("exactly") == has_first) c.fail(ErrorCode::kScenarioBadValue, p, "exactly one of exactly, firstAvailable");
        if (!has_first) r.exactly = sub_request(c, reqs[i].at("exactly"), p + "/exactly", true);
      }
      r.exactly.name = r.name;
      if (has_first) {
        const auto& alts = reqs[i].at("firstAvailable");
        c.expect_array(alts, p + "/firstAvailable");
        if (alts.empty() || alts.size() > 8) c.fail(ErrorCode::kScenarioBadValue, p + "/firstAvailable", "1 to 8 alternatives");
        std::set<std::string> sub_names;
        for (std::size_t k = 0; k < alts.size(); ++k) {
          r.first_available.push_back(sub_request(c, alts[k], p + "/firstAvailable/" + std::to_string(k), false));
          if (!sub_names.insert(r.first_available.back().name).second) {
            c.fail(ErrorCode::kScenarioBadValue, p + "/firstAvailable/" + std::to_string(k) + "/name", "alternative name repeats");
          }
        }
      }
      out.requests.push_back(std::move(r));
    }
  }
  if (devices.contains("constraints")) {
    const auto& cons = devices.at("constraints");
    c.expect_array(cons, dp + "/constraints");
    for (std::size_t i = 0; i < cons.size(); ++i) {
      const std::string p = dp + "/constraints/" + std::to_string(i);
      check_keys(c, cons[i], p, {"requests", "matchAttribute"}, {{"distinctAttribute", "consumable capacity (DRAConsumableCapacity, alpha in Kubernetes 1.34)"}});
      dra::DeviceConstraint k;
      if (!cons[i].contains("matchAttribute")) c.fail(ErrorCode::kScenarioMissingField, p + "/matchAttribute", "empty constraint (unsupported constraint type?)");
      k.match_attribute = required_string(c, cons[i], p, "matchAttribute");
      if (k.match_attribute.find('/') == std::string::npos) c.fail(ErrorCode::kScenarioBadValue, p + "/matchAttribute", "must be fully qualified (domain/id)");
      (void)qualified_name(c, k.match_attribute, p + "/matchAttribute", "");
      if (cons[i].contains("requests")) {
        c.expect_array(cons[i].at("requests"), p + "/requests");
        for (std::size_t r = 0; r < cons[i].at("requests").size(); ++r) {
          const std::string name = c.str(cons[i].at("requests")[r], p + "/requests/" + std::to_string(r));
          if (!names_request(out, name)) c.fail(ErrorCode::kScenarioBadValue, p + "/requests/" + std::to_string(r), "names no request of this claim: " + name);
          k.requests.push_back(name);
        }
      }
      out.constraints.push_back(std::move(k));
    }
  }
  if (devices.contains("config")) {
    const auto& list = config_list(c, devices, dp);
    for (std::size_t i = 0; i < list.size(); ++i) {
      const std::string p = dp + "/config/" + std::to_string(i);
      dra::ClaimConfig k;
      k.opaque = opaque_config(c, list[i], p, {"requests", "opaque"});
      if (list[i].contains("requests")) {
        c.expect_array(list[i].at("requests"), p + "/requests");
        for (std::size_t r = 0; r < list[i].at("requests").size(); ++r) {
          const std::string rp = p + "/requests/" + std::to_string(r);
          k.requests.push_back(c.str(list[i].at("requests")[r], rp));
          if (!names_request(out, k.requests.back())) c.fail(ErrorCode::kScenarioBadValue, rp, "names no request of this claim: " + k.requests.back());
        }
      }
      out.config.push_back(std::move(k));
    }
  }
  return out;
}

std::vector<dra::DeviceResult> allocation_status(const ObjectContext& c, const json& status) {
  std::vector<dra::DeviceResult> out;
  if (!status.is_object() || !status.contains("allocation") || status.at("allocation").is_null()) return out;
  const auto& a = status.at("allocation");
  if (!a.contains("devices") || !a.at("devices").contains("results")) return out;
  const auto& results = a.at("devices").at("results");
  const std::string p = "/status/allocation/devices/results";
  c.expect_array(results, p);
  for (std::size_t i = 0; i < results.size(); ++i) {
    const std::string rp = p + "/" + std::to_string(i);
    c.expect_object(results[i], rp);
    dra::DeviceResult r;
    r.request = required_string(c, results[i], rp, "request");
    r.driver = required_string(c, results[i], rp, "driver");
    r.pool = required_string(c, results[i], rp, "pool");
    r.device = required_string(c, results[i], rp, "device");
    if (results[i].contains("adminAccess") && !results[i].at("adminAccess").is_null()) r.admin_access = c.boolean(results[i].at("adminAccess"), rp + "/adminAccess");
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace

DraObjects read_dra_objects(const std::vector<KubernetesObject>& objects) {
  DraObjects out;
  for (const auto& o : objects) {
    const ObjectContext c(o);
    if (o.kind == "Node" && o.api_version == "v1") {
      dra::NodeInfo n;
      n.name = o.name;
      if (n.name.empty()) c.fail(ErrorCode::kScenarioMissingField, "/metadata/name", "missing (required)");
      const auto& meta = o.object.at("metadata");
      if (meta.contains("labels")) {
        c.expect_object(meta.at("labels"), "/metadata/labels");
        for (const auto& [k, v] : meta.at("labels").items()) n.labels[k] = c.str(v, "/metadata/labels/" + k);
      }
      out.nodes.push_back(std::move(n));
      continue;
    }
    const bool dra_kind = o.kind == "ResourceSlice" || o.kind == "DeviceClass" || o.kind == "ResourceClaim" || o.kind == "ResourceClaimTemplate";
    if (!dra_kind) {
      c.fail(ErrorCode::kScenarioUnknownField, "/kind",
             "gpusched does not read kind " + o.kind + " (" + o.api_version + ") here; DRA inputs are ResourceSlice, DeviceClass, ResourceClaim, "
             "ResourceClaimTemplate (resource.k8s.io/v1, v1beta2, v1beta1) and Node (v1)");
    }
    if (std::find(std::begin(kApiVersions), std::end(kApiVersions), o.api_version) == std::end(kApiVersions)) {
      c.fail(ErrorCode::kScenarioBadValue, "/apiVersion", "\"" + o.api_version + "\": gpusched reads " + o.kind + " of resource.k8s.io/v1, v1beta2 and v1beta1");
    }
    if (o.kind == "ResourceSlice") {
      out.slices.push_back(resource_slice(c));
    } else if (o.kind == "DeviceClass") {
      out.classes.push_back(device_class(c));
    } else if (o.kind == "ResourceClaim") {
      c.check_top({"spec"});
      if (o.name.empty()) c.fail(ErrorCode::kScenarioMissingField, "/metadata/name", "missing (required)");
      dra::ResourceClaim claim = o.object.contains("spec") ? claim_spec(c, o.object.at("spec"), "/spec", is_v1beta1(o)) : dra::ResourceClaim{};
      claim.name = o.name;
      claim.namespace_name = o.namespace_name;
      if (o.object.contains("status")) {
        auto results = allocation_status(c, o.object.at("status"));
        const auto& st = o.object.at("status");
        if (!results.empty() || (st.is_object() && st.contains("allocation") && !st.at("allocation").is_null())) claim.allocated = std::move(results);
      }
      out.claims.push_back(std::move(claim));
    } else {
      c.check_top({"spec"});
      if (!o.object.contains("spec")) c.fail(ErrorCode::kScenarioMissingField, "/spec", "missing (required)");
      const auto& spec = o.object.at("spec");
      check_keys(c, spec, "/spec", {"metadata", "spec"});
      dra::ResourceClaim claim = spec.contains("spec") ? claim_spec(c, spec.at("spec"), "/spec/spec", is_v1beta1(o)) : dra::ResourceClaim{};
      claim.name = o.name;
      claim.namespace_name = o.namespace_name;
      out.templates.push_back(std::move(claim));
    }
  }
  return out;
}

}  // namespace gpusched::scenario
