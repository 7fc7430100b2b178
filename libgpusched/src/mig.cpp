#include <gpusched/mig.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <set>

#include <nlohmann/json.hpp>

#include <gpusched/assert.hpp>

namespace gpusched {

int MigGeometry::find_profile(std::string_view name) const {
  for (std::size_t i = 0; i < profiles.size(); ++i) {
    if (profiles[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

int MigGeometry::require_profile(std::string_view name, const Location& where, std::string_view model) const {
  const int p = find_profile(name);
  if (p >= 0) return p;
  throw_error(ErrorCode::kCatalogUnknownMigProfile, where,
              "MIG profile \"" + std::string(name) + "\" does not exist on " +
                  (model.empty() ? std::string("this GPU") : std::string(model)) + "; its profiles: " + profile_names());
}

std::string MigGeometry::profile_names() const {
  std::string out;
  for (const auto& p : profiles) out += (out.empty() ? "" : ", ") + p.name;
  return out;
}

MigGeometry mig_geometry_from_json(const nlohmann::json& j, const std::string& source, const std::string& path) {
  auto bad = [&](const std::string& field, const std::string& msg) {
    throw_error(ErrorCode::kCatalogBadEntry, {source, 0, path + field}, msg);
  };
  if (!j.is_object()) bad("", "expected an object");
  // A whole number lo..hi (never a cast of an out-of-range double or a truncated 64-bit integer).
  auto integer = [&](const nlohmann::json& v, const std::string& field, std::int64_t lo, std::int64_t hi) -> std::int64_t {
    const bool whole = v.is_number_integer() || (v.is_number_float() && std::isfinite(v.get<double>()) &&
                                                 v.get<double>() == std::floor(v.get<double>()));
    if (!whole) bad(field, "expected a whole number, got " + v.dump());
    const double d = v.get<double>();
    if (v.is_number_unsigned() ? v.get<std::uint64_t>() > static_cast<std::uint64_t>(hi)
                               : (d < static_cast<double>(lo) || d > static_cast<double>(hi))) {
      bad(field, v.dump() + " is out of range: must be " + std::to_string(lo) + ".." + std::to_string(hi));
    }
    return v.is_number_integer() ? v.get<std::int64_t>() : static_cast<std::int64_t>(d);
  };
  MigGeometry g;
  try {
    for (const auto& [k, v] : j.items()) {
      if (k == "memory_slices") g.memory_slices = static_cast<int>(integer(v, "/memory_slices", 1, 32));
      else if (k == "compute_slices") g.compute_slices = static_cast<int>(integer(v, "/compute_slices", 1, 64));
      else if (k == "max_media_instances") g.max_media_instances = static_cast<int>(integer(v, "/max_media_instances", 0, 64));
      else if (k == "reconfigure_requires_idle") g.reconfigure_requires_idle = v.get<bool>();
      else if (k == "lgip_memory") g.lgip_memory = v.get<bool>();
      else if (k == "source") g.source = v.get<std::string>();
      else if (k == "notes") continue;
      else if (k == "profiles") {
        if (!v.is_array()) bad("/profiles", "expected a list");
        for (std::size_t i = 0; i < v.size(); ++i) {
          const std::string pf = "/profiles/" + std::to_string(i);
          MigProfile p;
          for (const auto& [pk, pv] : v[i].items()) {
            const std::string pkf = pf + "/" + pk;
            if (pk == "id") p.id = static_cast<int>(integer(pv, pkf, -1, 1 << 20));
            else if (pk == "name") p.name = pv.get<std::string>();
            else if (pk == "compute_slices") p.compute_slices = static_cast<int>(integer(pv, pkf, 1, 64));
            else if (pk == "memory_slices") p.memory_slices = static_cast<int>(integer(pv, pkf, 1, 32));
            else if (pk == "memory_mib") p.memory_mib = integer(pv, pkf, 0, std::int64_t{1} << 40);
            else if (pk == "sms") p.sms = static_cast<int>(integer(pv, pkf, 0, 1 << 20));
            else if (pk == "copy_engines") p.copy_engines = static_cast<int>(integer(pv, pkf, 0, 64));
            else if (pk == "decoders") p.decoders = static_cast<int>(integer(pv, pkf, 0, 64));
            else if (pk == "encoders") p.encoders = static_cast<int>(integer(pv, pkf, 0, 64));
            else if (pk == "jpeg_engines") p.jpeg_engines = static_cast<int>(integer(pv, pkf, 0, 64));
            else if (pk == "ofa_engines") p.ofa_engines = static_cast<int>(integer(pv, pkf, 0, 64));
            else if (pk == "max_count") p.max_count = static_cast<int>(integer(pv, pkf, 1, 64));
            else if (pk == "starts") {
              if (!pv.is_array()) bad(pkf, "expected a list of memory-slice starts");
              for (std::size_t s = 0; s < pv.size(); ++s) p.starts.push_back(static_cast<int>(integer(pv[s], pkf + "/" + std::to_string(s), 0, 31)));
            }
            else if (pk == "media_extensions") p.media_extensions = pv.get<bool>();
            else bad(pf + "/" + pk, "unknown field");
          }
          if (p.name.empty()) bad(pf + "/name", "a MIG profile needs a name");
          if (p.memory_slices < 1 || p.compute_slices < 1) bad(pf, "memory_slices and compute_slices must be >= 1");
          if (p.max_count < 1) bad(pf + "/max_count", "must be >= 1");
          if (p.starts.empty()) bad(pf + "/starts", "a MIG profile needs its legal starts");
          std::sort(p.starts.begin(), p.starts.end());
          g.profiles.push_back(std::move(p));
        }
      } else {
        bad("/" + k, "unknown field (known: memory_slices, compute_slices, max_media_instances, reconfigure_requires_idle, lgip_memory, source, profiles)");
      }
    }
  } catch (const nlohmann::json::exception& ex) {
    bad("", std::string("wrong type: ") + ex.what());
  }
  if (g.memory_slices < 1 || g.memory_slices > 32) bad("/memory_slices", "must be 1..32");
  if (g.compute_slices < 1) bad("/compute_slices", "must be >= 1");
  for (std::size_t i = 0; i < g.profiles.size(); ++i) {
    const auto& p = g.profiles[i];
    for (int s : p.starts) {
      if (s < 0 || s + p.memory_slices > g.memory_slices) {
        bad("/profiles/" + std::to_string(i) + "/starts", "start " + std::to_string(s) + " puts " + p.name + " outside the GPU's " +
                                                               std::to_string(g.memory_slices) + " memory slices");
      }
    }
    if (g.find_profile(p.name) != static_cast<int>(i)) bad("/profiles/" + std::to_string(i) + "/name", "duplicate profile " + p.name);
  }
  return g;
}

void to_json(nlohmann::json& j, const MigGeometry& g) {
  j = {{"memory_slices", g.memory_slices}, {"compute_slices", g.compute_slices}, {"max_media_instances", g.max_media_instances}, {"reconfigure_requires_idle", g.reconfigure_requires_idle}};
  if (g.lgip_memory) j["lgip_memory"] = true;
  if (!g.source.empty()) j["source"] = g.source;
  auto& list = j["profiles"] = nlohmann::json::array();
  for (const auto& p : g.profiles) {
    auto& e = list.emplace_back(nlohmann::json{{"id", p.id}, {"name", p.name}, {"compute_slices", p.compute_slices}, {"memory_slices", p.memory_slices},
                                               {"memory_mib", p.memory_mib}, {"sms", p.sms}, {"max_count", p.max_count}, {"starts", p.starts},
                                               {"media_extensions", p.media_extensions}});
    for (const auto& [key, count] : {std::pair{"copy_engines", p.copy_engines}, std::pair{"decoders", p.decoders}, std::pair{"encoders", p.encoders},
                                     std::pair{"jpeg_engines", p.jpeg_engines}, std::pair{"ofa_engines", p.ofa_engines}}) {
      if (count >= 0) e[key] = count;
    }
  }
}

// ----------------------------------------------------------------------------- MigLayout

namespace {
/// Bits start..start+size-1; size 32 (a whole 32-slice GPU) must not shift a 32-bit 1 by 32 (UB).
std::uint32_t slice_mask(int start, int size) {
  return static_cast<std::uint32_t>(((std::uint64_t{1} << size) - 1u) << start);
}
}  // namespace

bool MigLayout::can_place(const MigGeometry& g, int p, int start) const {
  const auto& prof = g.profiles[static_cast<std::size_t>(p)];
  if (!std::binary_search(prof.starts.begin(), prof.starts.end(), start)) return false;
  if (start + prof.memory_slices > g.memory_slices) return false;
  if (memory_mask_ & slice_mask(start, prof.memory_slices)) return false;
  if (compute_ + prof.compute_slices > g.compute_slices) return false;
  if (prof.media_extensions && media_ >= g.max_media_instances) return false;
  const auto same = std::count_if(instances_.begin(), instances_.end(), [p](const MigInstance& i) { return i.profile == p; });
  return same < prof.max_count;
}

std::vector<int> MigLayout::free_starts(const MigGeometry& g, int p) const {
  std::vector<int> out;
  for (int s : g.profiles[static_cast<std::size_t>(p)].starts) {
    if (can_place(g, p, s)) out.push_back(s);
  }
  return out;
}

void MigLayout::place(const MigGeometry& g, int p, int start) {
  GPUSCHED_ASSERT(can_place(g, p, start), "MIG instance placed where it cannot go");
  const auto& prof = g.profiles[static_cast<std::size_t>(p)];
  memory_mask_ |= slice_mask(start, prof.memory_slices);
  compute_ += prof.compute_slices;
  media_ += prof.media_extensions ? 1 : 0;
  const MigInstance inst{p, start};
  instances_.insert(std::upper_bound(instances_.begin(), instances_.end(), inst,
                                     [](const MigInstance& a, const MigInstance& b) { return a.start < b.start; }),
                    inst);
}

bool MigLayout::remove(const MigGeometry& g, int p, int start) {
  const auto it = std::find(instances_.begin(), instances_.end(), MigInstance{p, start});
  if (it == instances_.end()) return false;
  const auto& prof = g.profiles[static_cast<std::size_t>(p)];
  memory_mask_ &= ~slice_mask(start, prof.memory_slices);
  compute_ -= prof.compute_slices;
  media_ -= prof.media_extensions ? 1 : 0;
  instances_.erase(it);
  return true;
}

// ----------------------------------------------------------------------------- decisions

namespace {
bool larger(const MigProfile& a, const MigProfile& b) {
  return a.memory_slices != b.memory_slices ? a.memory_slices > b.memory_slices : a.compute_slices > b.compute_slices;
}
}  // namespace

std::optional<int> choose_start(const MigGeometry& g, const MigLayout& layout, int p, MigStartPolicy policy) {
  const auto starts = layout.free_starts(g, p);
  if (starts.empty()) return std::nullopt;
  switch (policy) {
    case MigStartPolicy::kLowestFirst: return starts.front();
    case MigStartPolicy::kHighestFirst: return starts.back();
    case MigStartPolicy::kBest: break;
  }
  // Score a start by what stays possible after it: first the number of larger profiles that can
  // still be created somewhere, then the number of (profile, start) creations still legal.
  const auto& me = g.profiles[static_cast<std::size_t>(p)];
  int best = starts.front();
  std::pair<int, int> best_score{-1, -1};
  for (int s : starts) {
    MigLayout after = layout;
    after.place(g, p, s);
    int larger_possible = 0, placements = 0;
    for (std::size_t q = 0; q < g.profiles.size(); ++q) {
      const auto n = static_cast<int>(after.free_starts(g, static_cast<int>(q)).size());
      placements += n;
      if (n > 0 && larger(g.profiles[q], me)) ++larger_possible;
    }
    const std::pair<int, int> score{larger_possible, placements};
    if (score > best_score) {   // strict: ties keep the lowest start
      best_score = score;
      best = s;
    }
  }
  return best;
}

namespace {
bool fits_rec(const MigGeometry& g, const std::vector<int>& todo, std::size_t i, MigLayout& layout, int prev_start) {
  if (i == todo.size()) return true;
  const int p = todo[i];
  // Equal profiles are adjacent in `todo`: place them at increasing starts (no permutations).
  const int lo = (i > 0 && todo[i - 1] == p) ? prev_start + 1 : 0;
  for (int s : layout.free_starts(g, p)) {
    if (s < lo) continue;
    layout.place(g, p, s);
    const bool ok = fits_rec(g, todo, i + 1, layout, s);
    layout.remove(g, p, s);
    if (ok) return true;
  }
  return false;
}

void layouts_rec(const MigGeometry& g, MigLayout& layout, int min_start, std::set<std::vector<MigInstance>>& out) {
  bool extended = false;
  for (int s = min_start; s < g.memory_slices; ++s) {
    for (std::size_t p = 0; p < g.profiles.size(); ++p) {
      if (!layout.can_place(g, static_cast<int>(p), s)) continue;
      extended = true;
      layout.place(g, static_cast<int>(p), s);
      layouts_rec(g, layout, s + 1, out);
      layout.remove(g, static_cast<int>(p), s);
    }
  }
  if (extended) return;
  // Nothing more at or after min_start; maximal only if nothing fits anywhere either.
  for (std::size_t p = 0; p < g.profiles.size(); ++p) {
    if (!layout.free_starts(g, static_cast<int>(p)).empty()) return;
  }
  out.insert(layout.instances());
}
}  // namespace

bool mig_fits(const MigGeometry& g, std::span<const int> profiles, const MigLayout& layout) {
  int compute = layout.used_compute(), memory = std::popcount(layout.used_memory_mask());
  for (int p : profiles) {
    compute += g.profiles[static_cast<std::size_t>(p)].compute_slices;
    memory += g.profiles[static_cast<std::size_t>(p)].memory_slices;
  }
  if (compute > g.compute_slices || memory > g.memory_slices) return false;
  std::vector<int> todo(profiles.begin(), profiles.end());
  // Largest first prunes early; equal profiles end up adjacent.
  std::sort(todo.begin(), todo.end(), [&](int a, int b) {
    const auto& pa = g.profiles[static_cast<std::size_t>(a)];
    const auto& pb = g.profiles[static_cast<std::size_t>(b)];
    if (larger(pa, pb) != larger(pb, pa)) return larger(pa, pb);
    return a < b;
  });
  MigLayout work = layout;
  return fits_rec(g, todo, 0, work, -1);
}

std::vector<std::vector<MigInstance>> mig_maximal_layouts(const MigGeometry& g) {
  std::set<std::vector<MigInstance>> out;
  MigLayout layout;
  layouts_rec(g, layout, 0, out);
  return {out.begin(), out.end()};
}

std::size_t mig_create_in_order(const MigGeometry& g, MigLayout& layout, std::span<const int> profiles, MigStartPolicy policy) {
  std::size_t created = 0;
  for (int p : profiles) {
    const auto s = choose_start(g, layout, p, policy);
    if (!s) break;
    layout.place(g, p, *s);
    ++created;
  }
  return created;
}

}  // namespace gpusched
