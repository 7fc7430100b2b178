// `gpusched dra allocate` and `gpusched dra slices` (see gpusched/scenario/k8s_dra.hpp).
#include <algorithm>
#include <set>
#include <sstream>

#include <gpusched/dra/nvidia.hpp>
#include <gpusched/scenario/k8s_dra.hpp>

namespace gpusched::scenario {

std::vector<DraOutcome> allocate_claims(const DraObjects& objects, const std::string& only_node) {
  dra::Allocator alloc(objects.classes, objects.slices);
  auto in_use = alloc.no_devices_in_use();
  std::vector<DraOutcome> out;
  for (const auto& c : objects.claims) {
    if (c.allocated) alloc.mark_in_use(*c.allocated, in_use);
  }
  std::vector<dra::NodeInfo> nodes;
  if (!only_node.empty()) {
    const auto it = std::find_if(objects.nodes.begin(), objects.nodes.end(), [&](const dra::NodeInfo& n) { return n.name == only_node; });
    nodes.push_back(it != objects.nodes.end() ? *it : dra::NodeInfo{only_node, {}});
  } else if (!objects.nodes.empty()) {
    nodes = objects.nodes;
  } else {
    std::set<std::string> names;
    for (const auto& s : objects.slices) {
      if (!s.node_name.empty()) names.insert(s.node_name);
    }
    for (const auto& n : names) nodes.push_back({n, {}});
  }
  for (const auto& c : objects.claims) {
    DraOutcome o;
    o.claim = c.id();
    if (c.allocated) {
      o.preallocated = true;
      o.allocation.emplace();
      o.allocation->devices = *c.allocated;
      out.push_back(std::move(o));
      continue;
    }
    const dra::ResourceClaim* one[] = {&c};
    try {
      for (const auto& n : nodes) {
        auto r = alloc.allocate(n, one, in_use);
        if (!r) continue;
        o.node = n.name;
        o.allocation = std::move((*r)[0]);
        alloc.mark_in_use(o.allocation->devices, in_use);
        break;
      }
      if (!o.allocation) o.reason = nodes.empty() ? "no nodes (give Node objects, slices with nodeName, or --node)" : "cannot allocate all claims on any node";
    } catch (const dra::AllocationError& e) {
      o.reason = e.what();
    }
    out.push_back(std::move(o));
  }
  return out;
}

std::string format_dra(const std::vector<DraOutcome>& outcomes) {
  std::size_t w = 5;
  for (const auto& o : outcomes) w = std::max(w, o.claim.size());
  std::size_t nw = 4;
  for (const auto& o : outcomes) nw = std::max(nw, o.node.size());
  std::ostringstream s;
  auto pad = [](const std::string& t, std::size_t n) { return t + std::string(n > t.size() ? n - t.size() : 0, ' '); };
  s << pad("claim", w) << "  " << pad("node", nw) << "  devices\n";
  std::size_t placed = 0;
  for (const auto& o : outcomes) {
    std::string what;
    if (o.allocation) {
      ++placed;
      for (const auto& d : o.allocation->devices) {
        what += (what.empty() ? "" : ", ") + d.request + "=" + d.driver + "/" + d.pool + "/" + d.device + (d.admin_access ? " (admin)" : "");
      }
      if (o.preallocated) what += " (allocated before)";
      if (what.empty()) what = "(no devices)";
    } else {
      what = "pending: " + o.reason;
    }
    s << pad(o.claim, w) << "  " << pad(o.node.empty() ? "-" : o.node, nw) << "  " << what << "\n";
  }
  s << placed << " of " << outcomes.size() << " claims allocated\n";
  return s.str();
}

nlohmann::json dra_json(const std::vector<DraOutcome>& outcomes) {
  using json = nlohmann::json;
  json out = json::array();
  for (const auto& o : outcomes) {
    json c = {{"claim", o.claim}};
    if (!o.allocation) {
      c["pending"] = o.reason;
      out.push_back(c);
      continue;
    }
    json results = json::array();
    for (const auto& d : o.allocation->devices) {
      json r = {{"request", d.request}, {"driver", d.driver}, {"pool", d.pool}, {"device", d.device}};
      if (d.admin_access) r["adminAccess"] = true;
      results.push_back(r);
    }
    json allocation = {{"devices", {{"results", results}}}};
    if (!o.allocation->config.empty()) {   // as the API prints devices.config
      json config = json::array();
      for (const auto& k : o.allocation->config) {
        json e = {{"source", std::string(dra::to_string(k.source))}};
        if (!k.requests.empty()) e["requests"] = k.requests;
        e["opaque"] = {{"driver", k.opaque.driver}, {"parameters", json::parse(k.opaque.parameters)}};
        config.push_back(std::move(e));
      }
      allocation["devices"]["config"] = std::move(config);
    }
    const auto& sel = o.allocation->node_selector;
    auto reqs = [](const std::vector<dra::NodeSelectorRequirement>& rs) {
      json a = json::array();
      for (const auto& r : rs) a.push_back({{"key", r.key}, {"operator", r.op}, {"values", r.values}});
      return a;
    };
    if (!o.allocation->node_name.empty()) {
      allocation["nodeSelector"] = {{"nodeSelectorTerms", json::array({{{"matchFields", json::array({{{"key", "metadata.name"}, {"operator", "In"}, {"values", {o.allocation->node_name}}}})}}})}};
    } else if (!sel.expressions.empty() || !sel.fields.empty()) {
      json term = json::object();
      if (!sel.expressions.empty()) term["matchExpressions"] = reqs(sel.expressions);
      if (!sel.fields.empty()) term["matchFields"] = reqs(sel.fields);
      allocation["nodeSelector"] = {{"nodeSelectorTerms", json::array({term})}};
    }
    c["node"] = o.node;
    c["allocation"] = allocation;
    if (o.preallocated) c["allocated_before"] = true;
    out.push_back(c);
  }
  return out;
}

nlohmann::json nvidia_dra_objects(const std::vector<NodeSpec>& nodes, const GpuCatalog& catalog) {
  nlohmann::json items = nlohmann::json::array();
  for (const auto& cls : dra::builtin_device_classes()) items.push_back(dra::to_kubernetes(cls));
  for (const auto& n : nodes) {
    if (auto s = dra::nvidia_slice(n, catalog)) items.push_back(dra::to_kubernetes(*s));
    else if (auto t = dra::tpu_slice(n)) items.push_back(dra::to_kubernetes(*t));
    if (auto nics = dra::dranet_slice(n)) items.push_back(dra::to_kubernetes(*nics));
  }
  return {{"apiVersion", "v1"}, {"kind", "List"}, {"items", items}};
}

}  // namespace gpusched::scenario
