#include <gpusched/tpu.hpp>

#include <algorithm>
#include <charconv>
#include <limits>

#include <nlohmann/json.hpp>

#include <gpusched/embedded_tpu_generations.hpp>

namespace gpusched {

std::int64_t TpuTopology::chips() const {
  // Saturates instead of overflowing (parse_tpu_topology bounds dims, but a TpuTopology is a plain struct).
  std::int64_t c = 1;
  for (int d : dims) {
    if (d <= 0) return 0;
    if (c > std::numeric_limits<std::int64_t>::max() / d) return std::numeric_limits<std::int64_t>::max();
    c *= d;
  }
  return c;
}

std::string TpuTopology::to_string() const {
  std::string out;
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (i) out += 'x';
    out += std::to_string(dims[i]);
  }
  return out;
}

TpuTopology parse_tpu_topology(std::string_view topology, const Location& where) {
  TpuTopology t;
  std::size_t pos = 0;
  while (pos <= topology.size()) {
    const auto x = topology.find('x', pos);
    const auto part = topology.substr(pos, x == std::string_view::npos ? std::string_view::npos : x - pos);
    int v = 0;
    const auto [ptr, ec] = std::from_chars(part.data(), part.data() + part.size(), v);
    if (part.empty() || ec != std::errc() || ptr != part.data() + part.size() || v < 1 || v > 65536 || t.dims.size() >= 3) {
      throw_error(ErrorCode::kCatalogBadTopology, where,
                  "\"" + std::string(topology) + "\" is not of the form AxB or AxBxC (each dimension 1..65536)");
    }
    t.dims.push_back(v);
    if (x == std::string_view::npos) break;
    pos = x + 1;
  }
  return t;
}

std::string TpuGeneration::allowed() const {
  std::string out;
  for (const auto& s : shapes) out += (out.empty() ? "" : ", ") + s;
  if (multiple_of > 0) {
    out += ", or " + std::string(dimensions == 3 ? "AxBxC" : "AxB") + " with every dimension a multiple of " +
           std::to_string(multiple_of) + " (non-decreasing)";
  }
  return out + ", up to " + std::to_string(max_chips) + " chips";
}

TpuTopology TpuGeneration::require_topology(std::string_view topology, const Location& where) const {
  auto bad = [&](const std::string& why) {
    throw_error(ErrorCode::kCatalogBadTopology, where,
                "TPU " + name + " has no slice topology \"" + std::string(topology) + "\" (" + why + "); allowed: " + allowed());
  };
  TpuTopology t;
  try {
    t = parse_tpu_topology(topology, where);
  } catch (const CatalogError&) {
    bad("not of the form AxB or AxBxC");
  }
  if (static_cast<int>(t.dims.size()) != dimensions) bad(std::to_string(dimensions) + "-D shapes only");
  if (t.chips() > max_chips) bad("more than " + std::to_string(max_chips) + " chips");
  const std::string canonical = t.to_string();
  if (std::find(shapes.begin(), shapes.end(), canonical) != shapes.end()) return t;
  if (multiple_of > 0 && std::all_of(t.dims.begin(), t.dims.end(), [&](int d) { return d % multiple_of == 0; })) {
    if (!std::is_sorted(t.dims.begin(), t.dims.end())) {
      auto sorted = t;
      std::sort(sorted.dims.begin(), sorted.dims.end());
      bad("write the dimensions in non-decreasing order: " + sorted.to_string());
    }
    return t;
  }
  bad("not a shape this generation offers");
  return t;   // unreachable
}

int TpuGeneration::hosts(std::string_view topology, const Location& where, int chips_per_host_wanted) const {
  const auto t = require_topology(topology, where);
  const int per_host = chips_per_host_wanted == 0 ? default_chips_per_host : chips_per_host_wanted;
  if (std::find(chips_per_host.begin(), chips_per_host.end(), per_host) == chips_per_host.end()) {
    std::string offered;
    for (int c : chips_per_host) offered += (offered.empty() ? "" : ", ") + std::to_string(c);
    throw_error(ErrorCode::kCatalogBadTopology, where,
                "TPU " + name + " hosts have " + offered + " chips, not " + std::to_string(per_host));
  }
  return static_cast<int>((t.chips() + per_host - 1) / per_host);
}

const TpuCatalog& TpuCatalog::builtin() {
  static const TpuCatalog catalog = [] {
    TpuCatalog c;
    const auto doc = nlohmann::json::parse(embedded::kTpuGenerationsJson);
    for (const auto& g : doc.at("generations")) {
      TpuGeneration t;
      t.name = g.at("name").get<std::string>();
      t.accelerator_label = g.at("accelerator_label").get<std::string>();
      t.chips_per_host = g.at("chips_per_host").get<std::vector<int>>();
      t.default_chips_per_host = g.at("default_chips_per_host").get<int>();
      t.dimensions = g.at("dimensions").get<int>();
      t.shapes = g.at("shapes").get<std::vector<std::string>>();
      t.multiple_of = g.value("multiple_of", 0);
      t.max_chips = g.at("max_chips").get<std::int64_t>();
      c.generations_.push_back(std::move(t));
    }
    return c;
  }();
  return catalog;
}

const TpuGeneration* TpuCatalog::find(std::string_view name) const {
  for (const auto& g : generations_) if (g.name == name) return &g;
  return nullptr;
}

const TpuGeneration& TpuCatalog::require(std::string_view name, const Location& where) const {
  if (const auto* g = find(name)) return *g;
  std::string known;
  for (const auto& g : generations_) known += (known.empty() ? "" : ", ") + g.name;
  throw_error(ErrorCode::kCatalogUnknownModel, where, "unknown TPU generation \"" + std::string(name) + "\"; known: " + known);
}

}  // namespace gpusched
