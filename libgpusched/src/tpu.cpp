#include <gpusched/tpu.hpp>

#include <algorithm>
#include <charconv>
#include <initializer_list>
#include <limits>
#include <numeric>
#include <utility>

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

namespace {

/// Whether `t` is a whole number of `host` boxes in some axis order.
bool whole_hosts(const std::vector<int>& host, const TpuTopology& t) {
  if (t.dims.size() != host.size() || host.empty()) return false;
  std::vector<std::size_t> axes(host.size());
  std::iota(axes.begin(), axes.end(), std::size_t{0});
  do {
    bool divides = true;
    for (std::size_t i = 0; i < host.size() && divides; ++i) divides = host[i] > 0 && t.dims[axes[i]] % host[i] == 0;
    if (divides) return true;
  } while (std::next_permutation(axes.begin(), axes.end()));
  return false;
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

}  // namespace

std::string TpuGeneration::allowed() const {
  std::string out;
  // Long explicit lists (tpu7x) are cut: the data file has them all.
  constexpr std::size_t kShown = 12;
  for (std::size_t i = 0; i < shapes.size() && i < kShown; ++i) out += (out.empty() ? "" : ", ") + shapes[i];
  if (shapes.size() > kShown) {
    out += ", ... (" + std::to_string(shapes.size()) + " shapes in all, listed in data/tpu_generations.json)";
  }
  if (multiple_of > 0) {
    out += ", or " + std::string(dimensions == 3 ? "AxBxC" : "AxB") + " with every dimension a multiple of " +
           std::to_string(multiple_of) + " (non-decreasing)";
  }
  return out + ", up to " + std::to_string(max_chips) + " chips";
}

std::string TpuGeneration::machine_types_text() const {
  std::string out;
  for (const auto& m : machine_types) {
    out += (out.empty() ? "" : ", ") + m.name + " (" + std::to_string(m.chips) + (m.chips == 1 ? " chip" : " chips") + ": " +
           (m.topologies.empty() ? "every topology of whole hosts" : join(m.topologies)) + ")";
  }
  return out;
}

const TpuMachineType* TpuGeneration::machine_type(int chips) const {
  for (const auto& m : machine_types) {
    if (m.chips == chips) return &m;
  }
  return nullptr;
}

bool TpuGeneration::serves(const TpuMachineType& machine, const TpuTopology& slice) const {
  if (!machine.topologies.empty()) {
    return std::find(machine.topologies.begin(), machine.topologies.end(), slice.to_string()) != machine.topologies.end();
  }
  return slice.chips() >= machine.chips && whole_hosts(machine.host_shape, slice);
}

const TpuMachineType* TpuGeneration::machine_for(const TpuTopology& slice, int per_host) const {
  if (per_host != 0) {
    const auto* m = machine_type(per_host);
    return m != nullptr && serves(*m, slice) ? m : nullptr;
  }
  for (auto it = machine_types.rbegin(); it != machine_types.rend(); ++it) {
    if (serves(*it, slice)) return &*it;
  }
  return nullptr;
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
  const auto* best = machine_for(t, 0);
  auto on_best = [&] {
    return best == nullptr ? std::string()
                           : "; GKE runs " + t.to_string() + " on " + best->name + ": " + std::to_string(t.chips() / best->chips) +
                                 " nodes x google.com/tpu: " + std::to_string(best->chips);
  };
  if (chips_per_host_wanted != 0) {
    const auto* m = machine_type(chips_per_host_wanted);
    if (m == nullptr) {
      std::string offered;
      for (int c : chips_per_host) offered += (offered.empty() ? "" : ", ") + std::to_string(c);
      throw_error(ErrorCode::kCatalogBadTopology, where,
                  "TPU " + name + " hosts have " + offered + " chips, not " + std::to_string(chips_per_host_wanted) +
                      " (machine types: " + machine_types_text() + ")");
    }
    if (!serves(*m, t)) {
      throw_error(ErrorCode::kCatalogBadTopology, where,
                  "TPU " + name + " " + m->name + " hosts (" + std::to_string(m->chips) + " chips) do not serve a " +
                      t.to_string() + " slice (they serve " +
                      (m->topologies.empty() ? std::string("whole multiples of ") + TpuTopology{m->host_shape}.to_string()
                                             : join(m->topologies)) +
                      ")" + on_best());
    }
    return static_cast<int>(t.chips() / m->chips);
  }
  if (best == nullptr) {
    throw_error(ErrorCode::kCatalogBadTopology, where,
                "no TPU " + name + " machine type serves a " + t.to_string() + " slice (machine types: " + machine_types_text() + ")");
  }
  return static_cast<int>(t.chips() / best->chips);
}

namespace {

class CatalogReader {
 public:
  explicit CatalogReader(std::string file) : file_(std::move(file)) {}

  [[noreturn]] void fail(const std::string& path, const std::string& why) const {
    throw_error(ErrorCode::kCatalogBadEntry, {file_, 0, path}, why);
  }
  const nlohmann::json& at(const nlohmann::json& j, const std::string& path, const char* key) const {
    if (!j.contains(key)) fail(path + "/" + key, std::string("missing field '") + key + "'");
    return j.at(key);
  }
  std::string str(const nlohmann::json& j, const std::string& path, const char* key) const {
    const auto& v = at(j, path, key);
    if (!v.is_string() || v.get<std::string>().empty()) fail(path + "/" + key, "expected a non-empty string");
    return v.get<std::string>();
  }
  std::int64_t integer(const nlohmann::json& j, const std::string& path, const char* key, std::int64_t lo, std::int64_t hi) const {
    const auto& v = at(j, path, key);
    if (!v.is_number_integer() || v.get<std::int64_t>() < lo || v.get<std::int64_t>() > hi) {
      fail(path + "/" + key, "expected an integer in " + std::to_string(lo) + ".." + std::to_string(hi));
    }
    return v.get<std::int64_t>();
  }
  void only(const nlohmann::json& j, const std::string& path, std::initializer_list<std::string_view> keys) const {
    if (!j.is_object()) fail(path, "expected an object");
    for (const auto& [k, v] : j.items()) {
      if (std::find(keys.begin(), keys.end(), k) == keys.end()) {
        std::string known;
        for (auto key : keys) known += (known.empty() ? "" : ", ") + std::string(key);
        fail(path + "/" + k, "unknown field '" + k + "'; known: " + known);
      }
    }
  }
  TpuTopology topology(const std::string& text, const std::string& path, int dimensions) const {
    TpuTopology t;
    try {
      t = parse_tpu_topology(text, {file_, 0, path});
    } catch (const CatalogError& e) {
      fail(path, e.what());
    }
    if (static_cast<int>(t.dims.size()) != dimensions) fail(path, "\"" + text + "\" is not " + std::to_string(dimensions) + "-D");
    return t;
  }

 private:
  std::string file_;
};

TpuGeneration read_generation(const CatalogReader& r, const nlohmann::json& g, const std::string& path) {
  r.only(g, path, {"name", "display_name", "accelerator_label", "dimensions", "shapes", "multiple_of", "max_chips", "source",
                   "hbm_per_chip", "default_machine_type", "machine_types"});
  TpuGeneration t;
  t.name = r.str(g, path, "name");
  if (g.contains("display_name")) t.display_name = r.str(g, path, "display_name");
  t.accelerator_label = r.str(g, path, "accelerator_label");
  t.dimensions = static_cast<int>(r.integer(g, path, "dimensions", 2, 3));
  t.max_chips = r.integer(g, path, "max_chips", 1, 1 << 20);
  t.multiple_of = g.contains("multiple_of") ? static_cast<int>(r.integer(g, path, "multiple_of", 1, 64)) : 0;
  t.source = r.str(g, path, "source");
  const auto& shapes = r.at(g, path, "shapes");
  if (!shapes.is_array() || shapes.empty()) r.fail(path + "/shapes", "expected a non-empty list of topologies");
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    const std::string sp = path + "/shapes/" + std::to_string(i);
    if (!shapes[i].is_string()) r.fail(sp, "expected a topology string");
    const auto topo = r.topology(shapes[i].get<std::string>(), sp, t.dimensions);
    if (topo.to_string() != shapes[i].get<std::string>()) r.fail(sp, "write it as " + topo.to_string());
    if (topo.chips() > t.max_chips) r.fail(sp, "more chips than max_chips (" + std::to_string(t.max_chips) + ")");
    if (std::find(t.shapes.begin(), t.shapes.end(), topo.to_string()) != t.shapes.end()) r.fail(sp, "listed twice");
    t.shapes.push_back(topo.to_string());
  }
  const auto& hbm = r.at(g, path, "hbm_per_chip");
  const std::string hp = path + "/hbm_per_chip";
  r.only(hbm, hp, {"amount", "unit", "source"});
  const auto& amount = r.at(hbm, hp, "amount");
  if (!amount.is_number() || amount.get<double>() <= 0) r.fail(hp + "/amount", "expected a positive number");
  t.hbm_per_chip = amount.get<double>();
  t.hbm_unit = r.str(hbm, hp, "unit");
  if (t.hbm_unit == "GiB") {
    t.hbm_per_chip_mib = static_cast<std::int64_t>(t.hbm_per_chip * 1024.0);
  } else if (t.hbm_unit == "GB") {
    t.hbm_per_chip_mib = static_cast<std::int64_t>(t.hbm_per_chip * 1e9 / 1048576.0);
  } else {
    r.fail(hp + "/unit", "expected \"GiB\" or \"GB\", not \"" + t.hbm_unit + "\"");
  }
  (void)r.str(hbm, hp, "source");
  const auto& machines = r.at(g, path, "machine_types");
  if (!machines.is_array() || machines.empty()) r.fail(path + "/machine_types", "expected a non-empty list");
  for (std::size_t i = 0; i < machines.size(); ++i) {
    const std::string mp = path + "/machine_types/" + std::to_string(i);
    const auto& mj = machines[i];
    r.only(mj, mp, {"name", "chips", "host_shape", "topologies", "source"});
    TpuMachineType m;
    m.name = r.str(mj, mp, "name");
    m.chips = static_cast<int>(r.integer(mj, mp, "chips", 1, 64));
    m.source = r.str(mj, mp, "source");
    const auto shape = r.topology(r.str(mj, mp, "host_shape"), mp + "/host_shape", t.dimensions);
    if (shape.chips() != m.chips) {
      r.fail(mp + "/host_shape", shape.to_string() + " holds " + std::to_string(shape.chips()) + " chips, not " + std::to_string(m.chips));
    }
    m.host_shape = shape.dims;
    if (t.machine_type(m.chips) != nullptr) r.fail(mp + "/chips", "two machine types with " + std::to_string(m.chips) + " chips");
    const auto& topos = r.at(mj, mp, "topologies");
    if (topos.is_string() && topos.get<std::string>() == "all") {
      // every topology of whole hosts
    } else if (topos.is_array() && !topos.empty()) {
      for (std::size_t k = 0; k < topos.size(); ++k) {
        const std::string tp = mp + "/topologies/" + std::to_string(k);
        if (!topos[k].is_string()) r.fail(tp, "expected a topology string");
        TpuTopology served;
        try {
          served = t.require_topology(topos[k].get<std::string>(), {"", 0, tp});
        } catch (const CatalogError& e) {
          r.fail(tp, e.what());
        }
        if (!whole_hosts(m.host_shape, served)) {
          r.fail(tp, served.to_string() + " is not a whole number of " + shape.to_string() + " hosts");
        }
        m.topologies.push_back(served.to_string());
      }
    } else {
      r.fail(mp + "/topologies", "expected \"all\" or a non-empty list of topologies");
    }
    t.machine_types.push_back(std::move(m));
  }
  std::sort(t.machine_types.begin(), t.machine_types.end(), [](const auto& a, const auto& b) { return a.chips < b.chips; });
  for (const auto& m : t.machine_types) t.chips_per_host.push_back(m.chips);
  t.default_machine_type = r.str(g, path, "default_machine_type");
  const auto dm = std::find_if(t.machine_types.begin(), t.machine_types.end(),
                               [&](const TpuMachineType& m) { return m.name == t.default_machine_type; });
  if (dm == t.machine_types.end()) {
    r.fail(path + "/default_machine_type", "\"" + t.default_machine_type + "\" is not one of its machine_types");
  }
  t.default_chips_per_host = dm->chips;
  return t;
}

}  // namespace

TpuCatalog TpuCatalog::from_json_text(std::string_view text, const std::string& file) {
  const CatalogReader r(file);
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    r.fail("", std::string("not valid JSON: ") + e.what());
  }
  r.only(doc, "", {"schema_version", "kind", "notes", "generations"});
  if (r.integer(doc, "", "schema_version", 0, 1000) != 2) r.fail("/schema_version", "expected schema_version 2");
  const auto& gens = r.at(doc, "", "generations");
  if (!gens.is_array() || gens.empty()) r.fail("/generations", "expected a non-empty list");
  TpuCatalog c;
  for (std::size_t i = 0; i < gens.size(); ++i) {
    const std::string path = "/generations/" + std::to_string(i);
    auto g = read_generation(r, gens[i], path);
    for (const auto& other : c.generations_) {
      if (other.name == g.name) r.fail(path + "/name", "generation \"" + g.name + "\" listed twice");
      if (other.accelerator_label == g.accelerator_label) {
        r.fail(path + "/accelerator_label", "\"" + g.accelerator_label + "\" is also " + other.name + "'s");
      }
    }
    c.generations_.push_back(std::move(g));
  }
  return c;
}

const TpuCatalog& TpuCatalog::builtin() {
  static const TpuCatalog catalog = from_json_text(embedded::kTpuGenerationsJson, "tpu_generations.json");
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
