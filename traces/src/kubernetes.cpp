#include <gpusched/traces/kubernetes.hpp>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <sstream>
#include <unordered_set>
#include <utility>

#include <nlohmann/json.hpp>

#include <gpusched/constraints.hpp>
#include <gpusched/error.hpp>
#include <gpusched/json_input.hpp>
#include <gpusched/mig.hpp>
#include <gpusched/quantity.hpp>
#include <gpusched/traces/ranges.hpp>

namespace gpusched::traces {
namespace {

using nlohmann::json;

constexpr std::string_view kHostnameLabel = "kubernetes.io/hostname";
constexpr std::string_view kUnschedulableTaint = "node.kubernetes.io/unschedulable";
constexpr std::string_view kProductLabel = "nvidia.com/gpu.product";
constexpr std::string_view kGkeAcceleratorLabel = "cloud.google.com/gke-accelerator";
constexpr std::string_view kGpuCountLabel = "nvidia.com/gpu.count";
constexpr std::string_view kReplicasLabel = "nvidia.com/gpu.replicas";
constexpr std::string_view kSharingLabel = "nvidia.com/gpu.sharing-strategy";
constexpr std::string_view kMigConfigLabel = "nvidia.com/mig.config";   // the MIG manager's applied config

// ---------------------------------------------------------------- where things are in the text

/// Walks a JSON text (already known to be valid) and reports the line of every value with its
/// path, spelled as the readers spell fields: `items[3].spec.containers[0].name`.
class PathScanner {
 public:
  explicit PathScanner(std::string_view text) : t_(text) {}

  /// Calls `visit(path, line, depth)` for every value down to `max_depth` (the root is depth 0);
  /// `visit` returns false to stop the walk.
  template <class Visit>
  void run(Visit&& visit, int max_depth) {
    std::string path;
    value(path, 0, visit, max_depth);
  }

 private:
  void advance() {
    if (t_[i_] == '\n') ++line_;
    ++i_;
  }
  void ws() {
    while (i_ < t_.size() && (t_[i_] == ' ' || t_[i_] == '\t' || t_[i_] == '\r' || t_[i_] == '\n')) advance();
  }
  /// At an opening quote: the string's raw text (escapes kept but for \" and \\).
  std::string string() {
    std::string out;
    advance();
    while (i_ < t_.size() && t_[i_] != '"') {
      if (t_[i_] == '\\' && i_ + 1 < t_.size()) {
        advance();
        if (t_[i_] != '"' && t_[i_] != '\\' && t_[i_] != '/') out += '\\';
      }
      out += t_[i_];
      advance();
    }
    if (i_ < t_.size()) advance();
    return out;
  }
  /// Skips one value without reporting what is inside.
  void skip() {
    ws();
    if (i_ >= t_.size()) return;
    if (t_[i_] == '"') {
      (void)string();
      return;
    }
    if (t_[i_] != '{' && t_[i_] != '[') {
      while (i_ < t_.size() && std::string_view(",]} \t\r\n").find(t_[i_]) == std::string_view::npos) advance();
      return;
    }
    int depth = 0;
    while (i_ < t_.size()) {
      const char c = t_[i_];
      if (c == '"') {
        (void)string();
        continue;
      }
      advance();
      if (c == '{' || c == '[') ++depth;
      else if ((c == '}' || c == ']') && --depth == 0) return;
    }
  }
  template <class Visit>
  void value(std::string& path, int depth, Visit& visit, int max_depth) {
    ws();
    if (stop_ || i_ >= t_.size()) return;
    if (depth > max_depth) {
      skip();
      return;
    }
    if (!visit(static_cast<const std::string&>(path), line_, depth)) {
      stop_ = true;
      return;
    }
    const char open = t_[i_];
    if (open != '{' && open != '[') {
      skip();
      return;
    }
    advance();
    const std::size_t keep = path.size();
    for (std::size_t n = 0; !stop_; ++n) {
      ws();
      if (i_ >= t_.size()) return;
      if (t_[i_] == '}' || t_[i_] == ']') {
        advance();
        return;
      }
      if (open == '{') {
        if (t_[i_] != '"') return;  // not the JSON this scanner expects: give up quietly
        const std::string key = string();
        ws();
        if (i_ >= t_.size() || t_[i_] != ':') return;
        advance();
        if (!path.empty()) path += '.';
        path += key;
      } else {
        path += '[' + std::to_string(n) + ']';
      }
      value(path, depth + 1, visit, max_depth);
      path.resize(keep);
      ws();
      if (i_ < t_.size() && t_[i_] == ',') advance();
    }
  }

  std::string_view t_;
  std::size_t i_ = 0;
  std::int64_t line_ = 1;
  bool stop_ = false;
};

/// Line of the value at `path`, or of the longest prefix of it that exists (0 when none).
std::int64_t line_of(std::string_view text, const std::string& path) {
  std::int64_t best = 0;
  PathScanner(text).run(
      [&](const std::string& p, std::int64_t line, int) {
        if (p == path) {
          best = line;
          return false;
        }
        if (p.empty() || (path.size() > p.size() && path.compare(0, p.size(), p) == 0 &&
                          (path[p.size()] == '.' || path[p.size()] == '['))) {
          best = line;
        }
        return true;
      },
      64);
  return best;
}

/// The text, where it came from, and how to fail with the line of a JSON path.
struct Doc {
  std::string text;
  std::string source;

  [[noreturn]] void fail(ErrorCode code, const std::string& path, const std::string& message) const {
    throw_error(code, {source, line_of(text, path), path}, message);
  }
  [[noreturn]] void bad(const std::string& path, const std::string& message) const {
    fail(ErrorCode::kTraceBadValue, path, message);
  }
};

/// Runs `f`, turning the library's quantity, catalog and resource errors into TraceErrors with
/// the line of their field (negative quantities and out-of-range values keep their own id).
template <class F>
auto guarded(const Doc& d, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const TraceError& e) {
    if (e.where().line != 0) throw;
    d.fail(e.code(), e.where().field, e.detail());   // the same error, with the line of its field
  } catch (const Error& e) {
    const bool negative = e.detail().rfind("negative", 0) == 0;
    d.fail(negative ? ErrorCode::kTraceNegativeRequest : ErrorCode::kTraceBadValue, e.where().field, e.detail());
  }
}

std::string join(const std::string& path, std::string_view key) {
  return path.empty() ? std::string(key) : path + "." + std::string(key);
}
std::string index(const std::string& path, std::size_t i) { return path + "[" + std::to_string(i) + "]"; }

// ---------------------------------------------------------------- typed access with paths

/// Member `key` of object `o`, or nullptr when absent or null.
const json* member(const json& o, std::string_view key) {
  if (!o.is_object()) return nullptr;
  const auto it = o.find(key);
  return it == o.end() || it->is_null() ? nullptr : &*it;
}

const json& expect_object(const Doc& d, const json& v, const std::string& path) {
  if (!v.is_object()) d.bad(path, "expected an object, got " + std::string(v.type_name()));
  return v;
}
const json& expect_array(const Doc& d, const json& v, const std::string& path) {
  if (!v.is_array()) d.bad(path, "expected a list, got " + std::string(v.type_name()));
  return v;
}
std::string expect_string(const Doc& d, const json& v, const std::string& path) {
  if (!v.is_string()) d.bad(path, "expected a string, got " + std::string(v.type_name()));
  return v.get<std::string>();
}
/// A string or a number as text (label values, quantities).
std::string scalar(const Doc& d, const json& v, const std::string& path) {
  if (v.is_string() || v.is_number()) {
    if (auto t = scalar_text(v)) return *t;
  }
  d.bad(path, "expected a string or a number, got " + std::string(v.type_name()));
}
/// An object of string values (labels, annotations, nodeSelector); empty when absent.
std::map<std::string, std::string> string_map(const Doc& d, const json* v, const std::string& path) {
  std::map<std::string, std::string> out;
  if (!v) return out;
  expect_object(d, *v, path);
  for (const auto& [k, val] : v->items()) {
    if (k.empty()) d.bad(path, "a key must not be empty");
    out[k] = val.is_null() ? std::string() : scalar(d, val, join(path, k));
  }
  return out;
}

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

/// Reads the whole stream; a JSON syntax error names the line of the offending byte (see
/// parse_json: depth, numbers beyond a double and invalid UTF-8 are errors too).
json parse(const Doc& d) { return parse_json(d.text, d.source, kTraceJsonErrors); }

Doc read_doc(std::istream& in, const std::string& source) {
  std::ostringstream s;
  s << in.rdbuf();
  return Doc{s.str(), source};
}

/// One object of the list: the JSON, its path and the line where it begins.
struct Item {
  const json* obj = nullptr;
  std::string path;
  std::int64_t line = 0;
};

/// The items of a v1 List (or NodeList / PodList, or one bare object) of `kind`.
std::vector<Item> list_items(const Doc& d, const json& root, const std::string& kind, const char* command) {
  const std::string how = std::string(" (the output of `") + command + "`)";
  if (!root.is_object()) d.bad("", "expected a v1 List of " + kind + how);
  const json* k = member(root, "kind");
  const std::string root_kind = k ? expect_string(d, *k, "kind") : std::string();
  if (root_kind == kind) return {Item{&root, "", 1}};
  if (!root_kind.empty() && root_kind != "List" && root_kind != kind + "List") {
    d.bad("kind", "\"" + root_kind + "\" is not a List of " + kind + how);
  }
  const json* items = member(root, "items");
  if (!items) d.bad("items", "missing: expected a v1 List of " + kind + how);
  expect_array(d, *items, "items");
  std::vector<std::int64_t> lines;
  lines.reserve(items->size());
  PathScanner(d.text).run(
      [&](const std::string& p, std::int64_t line, int depth) {
        if (depth == 2 && starts_with(p, "items[")) lines.push_back(line);
        return true;
      },
      2);
  std::vector<Item> out;
  for (std::size_t i = 0; i < items->size(); ++i) {
    Item it{&(*items)[i], index("items", i), i < lines.size() ? lines[i] : 0};
    expect_object(d, *it.obj, it.path);
    if (const json* ik = member(*it.obj, "kind")) {
      const auto item_kind = expect_string(d, *ik, join(it.path, "kind"));
      if (item_kind != kind) d.bad(join(it.path, "kind"), "expected kind " + kind + ", got " + item_kind + how);
    }
    out.push_back(std::move(it));
  }
  return out;
}

/// Resource names Kubernetes defines that gpusched does not model.
bool ignored_resource(std::string_view name) {
  return name == "ephemeral-storage" || name == "storage" || name == "pods" || starts_with(name, "hugepages-") ||
         starts_with(name, "attachable-volumes-");
}

// ---------------------------------------------------------------- nodes

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

/// A GPU product label to a catalog model: as written, with '-' read as ' ' (all, or the first),
/// and without a leading vendor word.
std::optional<GpuModelId> find_product(const GpuCatalog& catalog, const std::string& product) {
  std::vector<std::string> bases{product};
  for (std::string_view prefix : {"nvidia-", "tesla-", "nvidia ", "tesla "}) {
    if (lower(product.substr(0, prefix.size())) == prefix) bases.push_back(product.substr(prefix.size()));
  }
  for (const auto& b : bases) {
    std::string spaced = b, first = b;
    std::replace(spaced.begin(), spaced.end(), '-', ' ');
    if (const auto dash = first.find('-'); dash != std::string::npos) first[dash] = ' ';
    for (const auto& candidate : {b, spaced, first}) {
      if (auto id = catalog.find(candidate)) return id;
    }
  }
  return std::nullopt;
}

/// Packs MIG instances (profile index -> count) first-fit, largest profiles first, onto at most
/// `limit` GPUs (0 = as many as needed). Returns one layout per GPU, or nullopt when this greedy
/// order finds none (which does not mean there is none: see MigPacker). Its layouts are tried
/// first so that nodes it imported before keep their GPU layouts.
std::optional<std::vector<MigLayout>> pack_mig_first_fit(const MigGeometry& geo, const std::map<int, std::int64_t>& counts,
                                               std::size_t limit) {
  std::vector<int> order;
  for (const auto& [p, n] : counts) order.push_back(p);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    const auto &pa = geo.profiles[static_cast<std::size_t>(a)], &pb = geo.profiles[static_cast<std::size_t>(b)];
    return std::pair(pa.memory_slices, pa.compute_slices) > std::pair(pb.memory_slices, pb.compute_slices);
  });
  std::vector<MigLayout> gpus;
  for (const int p : order) {
    for (std::int64_t k = 0; k < counts.at(p); ++k) {
      bool placed = false;
      for (auto& g : gpus) {
        if (const auto start = choose_start(geo, g, p, MigStartPolicy::kBest)) {
          g.place(geo, p, *start);
          placed = true;
          break;
        }
      }
      if (placed) continue;
      if (limit != 0 && gpus.size() >= limit) return std::nullopt;
      MigLayout fresh;
      const auto start = choose_start(geo, fresh, p, MigStartPolicy::kBest);
      if (!start) return std::nullopt;
      fresh.place(geo, p, *start);
      gpus.push_back(std::move(fresh));
    }
  }
  if (limit != 0) gpus.resize(std::max(gpus.size(), limit));
  return gpus;
}

/// Lays MIG instances (profile index -> count) out exactly on a number of GPUs, or proves they
/// do not fit. Every legal layout of one GPU is a subset of a maximal one (mig_maximal_layouts)
/// and every subset of a legal layout is legal, so the per-GPU choices are the sub-multisets of
/// the maximal layouts; a depth-first search picks one per GPU (in non-increasing option order:
/// GPUs are interchangeable), with bounds on counts, compute and memory slices and a memo of
/// dead ends. Unlike first-fit it never rejects instances that fit (NVIDIA's all-balanced on
/// any number of A100-80GBs, say). A search that runs past its budget says so (gave_up()).
class MigPacker {
 public:
  MigPacker(const MigGeometry& geo, const std::map<int, std::int64_t>& counts) : geo_(geo) {
    for (const auto& [p, n] : counts) {
      if (n <= 0) continue;
      profiles_.push_back(p);
      target_.push_back(n);
    }
    max_per_gpu_.assign(profiles_.size(), 0);
    std::map<std::vector<std::int64_t>, std::vector<MigInstance>> options;
    for (const auto& layout : mig_maximal_layouts(geo)) {
      std::vector<std::vector<MigInstance>> by_profile(profiles_.size());
      for (const auto& inst : layout) {
        const auto it = std::find(profiles_.begin(), profiles_.end(), inst.profile);
        if (it != profiles_.end()) by_profile[static_cast<std::size_t>(it - profiles_.begin())].push_back(inst);
      }
      // Every count vector k <= what this layout holds (mixed radix), each with its instances.
      std::vector<std::int64_t> k(profiles_.size(), 0);
      while (true) {
        std::vector<MigInstance> insts;
        for (std::size_t i = 0; i < k.size(); ++i) {
          insts.insert(insts.end(), by_profile[i].begin(), by_profile[i].begin() + k[i]);
          max_per_gpu_[i] = std::max<std::int64_t>(max_per_gpu_[i], static_cast<std::int64_t>(by_profile[i].size()));
        }
        if (std::any_of(k.begin(), k.end(), [](std::int64_t x) { return x > 0; })) options.emplace(k, std::move(insts));
        std::size_t i = 0;
        for (; i < k.size(); ++i) {
          if (k[i] < static_cast<std::int64_t>(by_profile[i].size())) {
            ++k[i];
            break;
          }
          k[i] = 0;
        }
        if (i == k.size()) break;
      }
    }
    for (auto& [k, insts] : options) options_.push_back({k, std::move(insts), weight(k)});
    std::stable_sort(options_.begin(), options_.end(), [](const Option& a, const Option& b) { return a.weight > b.weight; });
  }

  /// Fewer GPUs than this cannot hold the instances (counts, compute and memory slices).
  [[nodiscard]] std::int64_t lower_bound() const {
    std::int64_t lb = target_.empty() ? 0 : 1;
    std::int64_t compute = 0, memory = 0;
    for (std::size_t i = 0; i < profiles_.size(); ++i) {
      if (max_per_gpu_[i] == 0) return -1;   // a profile no GPU can hold
      lb = std::max(lb, (target_[i] + max_per_gpu_[i] - 1) / max_per_gpu_[i]);
      const auto& prof = geo_.profiles[static_cast<std::size_t>(profiles_[i])];
      compute += target_[i] * prof.compute_slices;
      memory += target_[i] * prof.memory_slices;
    }
    lb = std::max(lb, (compute + geo_.compute_slices - 1) / geo_.compute_slices);
    return std::max(lb, (memory + geo_.memory_slices - 1) / geo_.memory_slices);
  }

  /// One layout per GPU for exactly `gpus` GPUs (some maybe empty), or nullopt.
  std::optional<std::vector<MigLayout>> pack(std::int64_t gpus) {
    const auto lb = lower_bound();
    if (lb < 0 || gpus < lb) return std::nullopt;
    std::vector<std::int64_t> rem = target_;
    std::vector<std::size_t> chosen;
    dead_.clear();
    if (!search(rem, gpus, 0, chosen)) return std::nullopt;
    std::vector<MigLayout> out;
    for (const auto j : chosen) {
      MigLayout l;
      for (const auto& inst : options_[j].instances) l.place(geo_, inst.profile, inst.start);
      out.push_back(std::move(l));
    }
    out.resize(static_cast<std::size_t>(gpus));
    return out;
  }
  /// The last pack() stopped at its budget without an answer.
  [[nodiscard]] bool gave_up() const { return gave_up_; }

 private:
  struct Option {
    std::vector<std::int64_t> k;        ///< instances per profile (profiles_ order)
    std::vector<MigInstance> instances;
    std::int64_t weight = 0;            ///< compute then memory slices used: fuller GPUs first
  };
  static constexpr std::int64_t kBudget = 2'000'000;   // search steps per node

  std::int64_t weight(const std::vector<std::int64_t>& k) const {
    std::int64_t c = 0, m = 0;
    for (std::size_t i = 0; i < k.size(); ++i) {
      const auto& prof = geo_.profiles[static_cast<std::size_t>(profiles_[i])];
      c += k[i] * prof.compute_slices;
      m += k[i] * prof.memory_slices;
    }
    return c * 64 + m;
  }

  bool search(std::vector<std::int64_t>& rem, std::int64_t gpus, std::size_t from, std::vector<std::size_t>& chosen) {
    if (std::all_of(rem.begin(), rem.end(), [](std::int64_t x) { return x == 0; })) return true;
    if (gpus == 0 || gave_up_) return false;
    std::int64_t compute = 0, memory = 0;
    for (std::size_t i = 0; i < rem.size(); ++i) {
      if (rem[i] > gpus * max_per_gpu_[i]) return false;
      const auto& prof = geo_.profiles[static_cast<std::size_t>(profiles_[i])];
      compute += rem[i] * prof.compute_slices;
      memory += rem[i] * prof.memory_slices;
    }
    if (compute > gpus * geo_.compute_slices || memory > gpus * geo_.memory_slices) return false;
    std::string key = std::to_string(gpus) + ":" + std::to_string(from);
    for (const auto x : rem) key += "," + std::to_string(x);
    if (dead_.count(key)) return false;
    if (++steps_ > kBudget) {
      gave_up_ = true;
      return false;
    }
    for (std::size_t j = from; j < options_.size(); ++j) {
      const auto& k = options_[j].k;
      bool fits = true;
      for (std::size_t i = 0; i < k.size() && fits; ++i) fits = k[i] <= rem[i];
      if (!fits) continue;
      for (std::size_t i = 0; i < k.size(); ++i) rem[i] -= k[i];
      chosen.push_back(j);
      if (search(rem, gpus - 1, j, chosen)) return true;
      chosen.pop_back();
      for (std::size_t i = 0; i < k.size(); ++i) rem[i] += k[i];
      if (gave_up_) return false;
    }
    dead_.insert(std::move(key));
    return false;
  }

  const MigGeometry& geo_;
  std::vector<int> profiles_;
  std::vector<std::int64_t> target_, max_per_gpu_;
  std::vector<Option> options_;
  std::unordered_set<std::string> dead_;
  std::int64_t steps_ = 0;
  bool gave_up_ = false;
};

/// A small whole number from a label.
std::int64_t label_count(const Doc& d, const std::map<std::string, std::string>& labels, std::string_view key,
                         const std::string& labels_path, std::int64_t fallback) {
  const auto it = labels.find(std::string(key));
  if (it == labels.end()) return fallback;
  const auto path = join(labels_path, key);
  const auto n = guarded(d, [&] { return parse_count(it->second, {d.source, 0, path}, ErrorCode::kTraceOutOfRange); });
  if (n < 1 || n > 65535) d.fail(ErrorCode::kTraceOutOfRange, path, "\"" + it->second + "\" is out of range: must be 1..65535");
  return n;
}

/// A replicas label of GPU feature discovery (nvidia.com/gpu.replicas, nvidia.com/mig-<p>.replicas):
/// GFD writes 0 when sharing is disabled and 1 when it is enabled but the resource not replicated.
std::int64_t replicas_label(const Doc& d, const std::map<std::string, std::string>& labels, std::string_view key,
                            const std::string& labels_path) {
  const auto it = labels.find(std::string(key));
  if (it == labels.end()) return 1;
  const auto path = join(labels_path, key);
  const auto n = guarded(d, [&] { return parse_count(it->second, {d.source, 0, path}, ErrorCode::kTraceOutOfRange); });
  if (n < 0 || n > 65535) d.fail(ErrorCode::kTraceOutOfRange, path, "\"" + it->second + "\" is out of range: must be 0..65535");
  return std::max<std::int64_t>(n, 1);
}

/// spec.taints, and the unschedulable taint the node controller adds to a cordoned node.
void read_taints(const Doc& d, const json& o, const std::string& item_path, NodeSpec& n) {
  const auto at = [&](std::string_view field) { return join(item_path, field); };
  if (const json* spec = member(o, "spec")) {
    expect_object(d, *spec, at("spec"));
    if (const json* taints = member(*spec, "taints")) {
      expect_array(d, *taints, at("spec.taints"));
      for (std::size_t i = 0; i < taints->size(); ++i) {
        const auto tp = index(at("spec.taints"), i);
        const json& t = expect_object(d, (*taints)[i], tp);
        Taint taint;
        const json* key = member(t, "key");
        if (!key) d.bad(join(tp, "key"), "missing: a taint needs a key");
        taint.key = expect_string(d, *key, join(tp, "key"));
        if (const json* v = member(t, "value")) taint.value = scalar(d, *v, join(tp, "value"));
        const json* effect = member(t, "effect");
        if (!effect) d.bad(join(tp, "effect"), "missing (NoSchedule, PreferNoSchedule or NoExecute)");
        const auto e = parse_taint_effect(expect_string(d, *effect, join(tp, "effect")));
        if (!e) d.bad(join(tp, "effect"), "\"" + effect->get<std::string>() + "\" is not NoSchedule, PreferNoSchedule or NoExecute");
        taint.effect = *e;
        n.taints.push_back(std::move(taint));
      }
    }
    if (const json* u = member(*spec, "unschedulable")) {
      if (!u->is_boolean()) d.bad(at("spec.unschedulable"), "expected true or false");
      const bool listed = std::any_of(n.taints.begin(), n.taints.end(), [](const Taint& t) {
        return t.key == kUnschedulableTaint && t.effect == TaintEffect::kNoSchedule;
      });
      if (u->get<bool>() && !listed) n.taints.push_back({std::string(kUnschedulableTaint), "", TaintEffect::kNoSchedule});
    }
  }
}

/// What a node's allocatable says about its GPUs.
struct GpuCapacity {
  std::int64_t whole = 0;                   ///< nvidia.com/gpu
  std::int64_t shared = 0;                  ///< nvidia.com/gpu.shared (replicas, renameByDefault)
  std::string shared_path;                  ///< JSON path of nvidia.com/gpu.shared
  std::map<std::string, std::int64_t> mig;  ///< MIG profile name -> instances (mixed strategy)
  std::string path;                         ///< JSON path of nvidia.com/gpu, else of mig_path
  std::string mig_path;                     ///< JSON path of the first nvidia.com/mig-* > 0
  std::string list_path;                    ///< JSON path of status.allocatable (or capacity)
};

/// CPU, memory and extended resources into `n`; the GPU resources returned for add_gpus().
GpuCapacity read_capacity(const Doc& d, const json& o, const std::string& item_path, NodeSpec& n,
                          ResourceTable& resources) {
  const auto at = [&](std::string_view field) { return join(item_path, field); };
  const json* status = member(o, "status");
  if (status) expect_object(d, *status, at("status"));
  std::string cap_path = at("status.allocatable");
  const json* cap = status ? member(*status, "allocatable") : nullptr;
  if (!cap && status) {
    cap = member(*status, "capacity");
    cap_path = at("status.capacity");
  }
  if (!cap) d.bad(at("status.allocatable"), "missing: node \"" + n.name + "\" needs status.allocatable (or status.capacity)");
  expect_object(d, *cap, cap_path);
  using namespace resource_names;
  GpuCapacity gpu;
  gpu.list_path = cap_path;
  for (const auto& [rname, v] : cap->items()) {
    const auto rp = join(cap_path, rname);
    const Location where{d.source, 0, rp};
    const std::string q = scalar(d, v, rp);
    constexpr auto range = ErrorCode::kTraceOutOfRange;
    if (rname == kCpu) n.cpu_milli = guarded(d, [&] { return parse_cpu_milli(q, where, range); });
    else if (rname == kMemory) n.memory_mib = guarded(d, [&] { return parse_memory_mib(q, where, range); });
    else if (rname == kGpu) {
      gpu.whole = guarded(d, [&] { return parse_count(q, where, range); });
      gpu.path = rp;
    } else if (rname == kGpuShared) {
      gpu.shared = guarded(d, [&] { return parse_count(q, where, range); });
      gpu.shared_path = rp;
      if (gpu.path.empty()) gpu.path = rp;
    } else if (starts_with(rname, kMigPrefix)) {
      const auto k = guarded(d, [&] { return parse_count(q, where, range); });
      if (k > 0) gpu.mig[rname.substr(kMigPrefix.size())] = k;
      if (k > 0 && gpu.mig_path.empty()) gpu.mig_path = rp;
      if (k > 0 && gpu.path.empty()) gpu.path = rp;
    } else if (rname == kTpu || starts_with(rname, kVgpuPrefix)) {
      const auto k = guarded(d, [&] { return parse_count(q, where, range); });
      if (k > 0) {
        d.bad(rp, "node \"" + n.name + "\": " + (rname == kTpu ? "TPU hosts" : "vGPU nodes") +
                      " are not imported from a node list (describe them in a scenario instead)");
      }
    } else if (rname == kGpuMilli || rname == kGpuMem || rname == kHamiMem || rname == kHamiCores) {
      continue;  // shares are carved from the GPUs themselves
    } else if (is_extended_resource(rname)) {
      const auto k = guarded(d, [&] { return parse_count(q, where, range); });
      if (k > 0) n.extended.emplace_back(resources.intern(rname), k);
    } else if (!ignored_resource(rname)) {
      d.bad(rp, "unknown resource \"" + rname + "\" (cpu, memory, nvidia.com/gpu, nvidia.com/mig-<profile> or a name with a domain)");
    }
  }
  std::sort(n.extended.begin(), n.extended.end());
  return gpu;
}

/// The node's GPUs: model from the product label, whole / shared / MIG GPUs from `cap`.
void add_gpus(const Doc& d, const GpuCapacity& cap, const std::string& labels_path, const GpuCatalog& catalog,
              NodeSpec& n) {
  if (cap.whole == 0 && cap.shared == 0 && cap.mig.empty()) return;
  const std::int64_t whole = cap.whole;
  const auto& mig = cap.mig;
  const auto& gpu_path = cap.path;
  const auto& cap_path = cap.list_path;
  using namespace resource_names;
  // GPU model from the GPU feature discovery label (or GKE's).
  std::string label_key(kProductLabel);
  auto product_it = n.labels.find(label_key);
  if (product_it == n.labels.end()) {
    label_key = kGkeAcceleratorLabel;
    product_it = n.labels.find(label_key);
  }
  const std::string count_text = whole > 0 ? std::to_string(whole) + " nvidia.com/gpu"
                                 : cap.shared > 0 ? std::to_string(cap.shared) + " nvidia.com/gpu.shared" : "MIG instances";
  if (product_it == n.labels.end()) {
    d.bad(labels_path, "node \"" + n.name + "\" has " + count_text + " but no " + std::string(kProductLabel) +
                           " label to tell the GPU model (run GPU feature discovery, or add the label)");
  }
  const auto product_path = join(labels_path, label_key);
  std::string product = product_it->second;
  if (product.size() > 7 && product.compare(product.size() - 7, 7, "-SHARED") == 0) product.resize(product.size() - 7);
  std::string single_profile;
  if (const auto pos = product.find("-MIG-"); pos != std::string::npos) {
    single_profile = product.substr(pos + 5);
    product.resize(pos);
  }
  const auto model_id = find_product(catalog, product);
  if (!model_id) {
    d.fail(ErrorCode::kTraceUnknownGpuModel, product_path,
           "node \"" + n.name + "\": GPU product \"" + product_it->second + "\" is not in the GPU catalog (known: " +
               catalog.known_names() + "; add the model or an alias to the catalog)");
  }
  const GpuModel& model = catalog[*model_id];
  auto gpu = [&](GpuPartition p) {
    GpuSpec g;
    g.model = *model_id;
    g.partition = p;
    return g;
  };

  if (!single_profile.empty()) {
    // Single strategy: nvidia.com/gpu counts GPU instances of one profile, every GPU split alike.
    if (!model.mig) d.bad(product_path, "node \"" + n.name + "\": " + model.name + " has no MIG");
    if (!mig.empty()) d.bad(cap.mig_path, "node \"" + n.name + "\": nvidia.com/mig-<profile> resources on a single-strategy MIG node");
    if (cap.shared > 0 || replicas_label(d, n.labels, kReplicasLabel, labels_path) > 1) {
      d.bad(cap.shared > 0 ? cap.shared_path : join(labels_path, kReplicasLabel),
            "node \"" + n.name + "\": time-sliced / MPS MIG instances are not modelled (replicas apply to whole GPUs only)");
    }
    const auto& geo = *model.mig;
    const int p = geo.find_profile(single_profile);
    if (p < 0) {
      d.bad(product_path, "node \"" + n.name + "\": " + model.name + " has no MIG profile \"" + single_profile +
                              "\" (its profiles: " + geo.profile_names() + ")");
    }
    MigLayout full;
    while (const auto start = choose_start(geo, full, p, MigStartPolicy::kBest)) full.place(geo, p, *start);
    const auto per_gpu = static_cast<std::int64_t>(full.instances().size());
    if (per_gpu == 0 || whole % per_gpu != 0) {
      d.bad(gpu_path, "node \"" + n.name + "\": " + std::to_string(whole) + " GPU instances of " + single_profile +
                          " are not a whole number of GPUs (" + std::to_string(per_gpu) + " per GPU)");
    }
    if (whole / per_gpu > 4096) d.bad(gpu_path, "more than 4096 GPUs on one node");
    n.mig_strategy = MigStrategy::kSingle;
    for (std::int64_t g = 0; g < whole / per_gpu; ++g) {
      auto spec = gpu(GpuPartition::kMig);
      spec.mig = full.instances();
      n.gpus.push_back(std::move(spec));
    }
    return;
  }

  // Whole GPUs, maybe shared by device-plugin replicas: GPU feature discovery labels the
  // replicas per GPU (nvidia.com/gpu.replicas) and the strategy (nvidia.com/gpu.sharing-strategy),
  // and suffixes the product with -SHARED unless the resource is renamed (renameByDefault:
  // the replicas are advertised as nvidia.com/gpu.shared instead).
  const auto replicas = replicas_label(d, n.labels, kReplicasLabel, labels_path);
  const auto strategy_it = n.labels.find(std::string(kSharingLabel));
  const std::string strategy = strategy_it == n.labels.end() ? "" : strategy_it->second;
  if (!strategy.empty() && strategy != "mps" && strategy != "time-slicing" && strategy != "none") {
    d.bad(join(labels_path, kSharingLabel), "node \"" + n.name + "\": \"" + strategy + "\" is not mps, time-slicing or none");
  }
  const bool renamed = cap.shared > 0;
  if (renamed && replicas == 1) {
    d.bad(cap.shared_path, "node \"" + n.name + "\": nvidia.com/gpu.shared needs the " + std::string(kReplicasLabel) +
                               " label (replicas per GPU) to tell how many GPUs share them");
  }
  // With both names, the plain nvidia.com/gpu are GPUs the sharing config leaves out (its devices list).
  const std::int64_t replicated = renamed ? cap.shared : (replicas > 1 ? whole : 0);
  const std::int64_t plain = renamed ? whole : (replicas > 1 ? 0 : whole);
  if (replicated % replicas != 0) {
    d.bad(renamed ? cap.shared_path : gpu_path,
          "node \"" + n.name + "\": " + std::to_string(replicated) + (renamed ? " nvidia.com/gpu.shared" : " nvidia.com/gpu") +
              " is not a multiple of " + std::string(kReplicasLabel) + " = " + std::to_string(replicas) +
              " (per-GPU replica counts that differ cannot be told from a node list: describe the node in a scenario)");
  }
  const auto physical = plain + replicated / replicas;
  if (physical > 4096) d.bad(gpu_path, "more than 4096 GPUs on one node");
  for (std::int64_t g = 0; g < plain; ++g) n.gpus.push_back(gpu(GpuPartition::kWhole));
  for (std::int64_t g = 0; g < replicated / replicas; ++g) {
    auto spec = gpu(strategy == "mps" ? GpuPartition::kMps : GpuPartition::kTimeSlicing);
    spec.replicas = static_cast<std::uint16_t>(replicas);
    n.gpus.push_back(std::move(spec));
  }
  n.sharing.rename_by_default = renamed;

  // MIG, mixed strategy: static instances packed onto the MIG GPUs.
  if (!mig.empty()) {
    if (!model.mig) d.bad(cap.mig_path, "node \"" + n.name + "\": MIG instances on " + model.name + ", which has no MIG");
    const auto& geo = *model.mig;
    std::map<int, std::int64_t> counts;
    std::int64_t total = 0;
    for (const auto& [profile_name, k] : mig) {
      const auto rp = join(cap_path, std::string(kMigPrefix) + profile_name);
      const int p = geo.find_profile(profile_name);
      if (p < 0) d.bad(rp, "node \"" + n.name + "\": " + model.name + " has no MIG profile \"" + profile_name + "\" (its profiles: " + geo.profile_names() + ")");
      if (k > 4096) d.bad(rp, "more than 4096 GPU instances");
      const auto replicas_key = std::string(kMigPrefix) + profile_name + ".replicas";
      if (replicas_label(d, n.labels, replicas_key, labels_path) > 1) {
        d.bad(join(labels_path, replicas_key), "node \"" + n.name + "\": time-sliced / MPS MIG instances are not modelled "
                                                "(replicas apply to whole GPUs only)");
      }
      counts[p] = k;
      total += k;
    }
    std::string listing;
    for (const auto& [p, k] : counts) {
      listing += (listing.empty() ? "" : ", ") + std::to_string(k) + " x " + geo.profiles[static_cast<std::size_t>(p)].name;
    }
    // How many GPUs are in MIG mode: GPU feature discovery's count label, else the MIG manager's
    // all-<profile> config (every GPU split alike), else the fewest that hold the instances.
    std::int64_t limit = 0;
    std::string limit_from;
    if (const auto physical_all = label_count(d, n.labels, kGpuCountLabel, labels_path, 0); physical_all > 0) {
      if (physical_all <= physical) {
        d.bad(join(labels_path, kGpuCountLabel), "node \"" + n.name + "\": " + std::to_string(physical_all) +
                                                    " GPU(s) leave none in MIG mode beside the " + std::to_string(physical) +
                                                    " whole GPU(s)");
      }
      limit = physical_all - physical;
      limit_from = std::string(kGpuCountLabel) + " = " + std::to_string(physical_all);
    } else if (const auto cfg = n.labels.find(std::string(kMigConfigLabel));
               cfg != n.labels.end() && cfg->second.rfind("all-", 0) == 0 && counts.size() == 1 &&
               geo.profiles[static_cast<std::size_t>(counts.begin()->first)].name == cfg->second.substr(4)) {
      // mig-parted's all-<profile> fills every GPU with the profile (its names follow the 80 GB
      // parts and map to other profiles on other models: a name that is not the instances' own
      // says nothing here).
      const auto cfg_path = join(labels_path, kMigConfigLabel);
      const int p = counts.begin()->first;
      MigLayout full;
      while (const auto st = choose_start(geo, full, p, MigStartPolicy::kBest)) full.place(geo, p, *st);
      const auto per_gpu = static_cast<std::int64_t>(full.instances().size());
      if (per_gpu == 0 || counts.begin()->second % per_gpu != 0) {
        d.bad(cfg_path, "node \"" + n.name + "\": MIG config \"" + cfg->second + "\" puts " + std::to_string(per_gpu) + " x " +
                            cfg->second.substr(4) + " on every GPU, but allocatable has " + listing +
                            " (a reconfiguration in progress? add " + std::string(kGpuCountLabel) + ")");
      }
      limit = counts.begin()->second / per_gpu;
      limit_from = std::string(kMigConfigLabel) + " = " + cfg->second;
    }
    // The layouts: first-fit's when it manages on that many GPUs (the layouts earlier versions
    // gave), else the exact search's; without a count, the fewest GPUs the exact search needs.
    MigPacker packer(geo, counts);
    std::optional<std::vector<MigLayout>> layouts;
    if (limit > 0) {
      layouts = pack_mig_first_fit(geo, counts, static_cast<std::size_t>(limit));
      if (!layouts) layouts = packer.pack(limit);
    } else if (const auto lb = packer.lower_bound(); lb > 0) {
      for (std::int64_t g = lb; !layouts && !packer.gave_up() && g <= total; ++g) layouts = packer.pack(g);
      if (layouts) {
        if (auto first_fit = pack_mig_first_fit(geo, counts, layouts->size())) layouts = std::move(first_fit);
      }
    }
    if (!layouts) {
      const std::string on = limit > 0 ? std::to_string(limit) + " " + model.name + " GPU(s) in MIG mode (" + limit_from + ")"
                                       : "any number of " + model.name + " GPUs";
      if (packer.gave_up()) {
        d.bad(cap.mig_path, "node \"" + n.name + "\": could not decide within the search budget whether its MIG instances (" +
                                listing + ") fit on " + on +
                                (limit > 0 ? std::string() : "; add the " + std::string(kGpuCountLabel) + " label"));
      }
      d.bad(cap.mig_path, "node \"" + n.name + "\": its " + std::to_string(total) + " MIG instance(s) (" + listing +
                              ") do not fit on " + on + ": no split into legal per-GPU layouts exists");
    }
    for (const auto& l : *layouts) {
      auto spec = gpu(GpuPartition::kMig);
      spec.mig = l.instances();
      n.gpus.push_back(std::move(spec));
    }
  }
}

NodeSpec read_node(const Doc& d, const Item& item, const GpuCatalog& catalog, ResourceTable& resources) {
  const json& o = *item.obj;
  const auto at = [&](std::string_view field) { return join(item.path, field); };
  NodeSpec n;
  const json* meta = member(o, "metadata");
  if (!meta) d.bad(at("metadata"), "a node needs metadata.name");
  expect_object(d, *meta, at("metadata"));
  const json* name = member(*meta, "name");
  if (!name) d.bad(at("metadata.name"), "missing: a node needs a name");
  n.name = expect_string(d, *name, at("metadata.name"));
  if (n.name.empty()) d.bad(at("metadata.name"), "a node name must not be empty");
  const std::string labels_path = at("metadata.labels");
  n.labels = string_map(d, member(*meta, "labels"), labels_path);
  n.labels.emplace(kHostnameLabel, n.name);

  read_taints(d, o, item.path, n);
  const auto gpus = read_capacity(d, o, item.path, n, resources);
  add_gpus(d, gpus, labels_path, catalog, n);
  return n;
}

// ---------------------------------------------------------------- pods

using Amounts = std::map<std::string, std::int64_t>;

/// One resource amount in the unit it is summed in (cpu: milli, memory: MiB, else a count);
/// nullopt for resources gpusched ignores.
std::optional<std::int64_t> amount(const Doc& d, const std::string& name, const json& v, const std::string& path) {
  if (name != resource_names::kCpu && name != resource_names::kMemory && ignored_resource(name)) return std::nullopt;
  const std::string q = scalar(d, v, path);
  const Location where{d.source, 0, path};
  if (const auto b = q.find_first_not_of(" \t"); b != std::string::npos && q[b] == '-') {
    d.fail(ErrorCode::kTraceNegativeRequest, path, "negative request \"" + q + "\"");
  }
  return guarded(d, [&] {
    constexpr auto range = ErrorCode::kTraceOutOfRange;
    if (name == resource_names::kCpu) return parse_cpu_milli(q, where, range);
    if (name == resource_names::kMemory) return parse_memory_mib(q, where, range);
    const auto n = parse_count(q, where, range);
    if (name == resource_names::kGpuMilli && (n < 1 || n > kMilliPerGpu)) {
      out_of_range(where, q, "must be 1..1000 (a share of one GPU; leave it out for none)");
    }
    return n;
  });
}

void add(Amounts& to, const Amounts& from) {
  for (const auto& [k, v] : from) to[k] += v;
}
void max_into(Amounts& to, const Amounts& from) {
  for (const auto& [k, v] : from) to[k] = std::max(to[k], v);
}

/// A container's requests, a limit standing in for a missing request.
Amounts container_requests(const Doc& d, const json& c, const std::string& path) {
  Amounts out;
  const json* res = member(c, "resources");
  if (!res) return out;
  expect_object(d, *res, join(path, "resources"));
  const json* req = member(*res, "requests");
  const json* lim = member(*res, "limits");
  if (req) {
    const auto rp = join(path, "resources.requests");
    expect_object(d, *req, rp);
    for (const auto& [k, v] : req->items()) {
      if (auto a = amount(d, k, v, join(rp, k))) out[k] += *a;
    }
  }
  if (lim) {
    const auto lp = join(path, "resources.limits");
    expect_object(d, *lim, lp);
    for (const auto& [k, v] : lim->items()) {
      if (req && req->contains(k)) continue;
      if (auto a = amount(d, k, v, join(lp, k))) out[k] += *a;
    }
  }
  return out;
}

/// The pod's effective request (Kubernetes' rule for app, init and sidecar containers, plus overhead).
Amounts pod_requests(const Doc& d, const json& spec, const std::string& spec_path) {
  const json* containers = member(spec, "containers");
  const auto cp = join(spec_path, "containers");
  if (!containers) d.bad(cp, "missing: a pod needs at least one container");
  expect_array(d, *containers, cp);
  if (containers->empty()) d.bad(cp, "a pod needs at least one container");
  Amounts total;
  for (std::size_t i = 0; i < containers->size(); ++i) {
    const auto p = index(cp, i);
    add(total, container_requests(d, expect_object(d, (*containers)[i], p), p));
  }
  if (const json* inits = member(spec, "initContainers")) {
    const auto ip = join(spec_path, "initContainers");
    expect_array(d, *inits, ip);
    Amounts sidecars, init_peak;
    for (std::size_t i = 0; i < inits->size(); ++i) {
      const auto p = index(ip, i);
      const json& c = expect_object(d, (*inits)[i], p);
      Amounts r = container_requests(d, c, p);
      const json* restart = member(c, "restartPolicy");
      if (restart && expect_string(d, *restart, join(p, "restartPolicy")) == "Always") {
        add(total, r);
        add(sidecars, r);
        r = sidecars;
      } else {
        add(r, sidecars);
      }
      max_into(init_peak, r);
    }
    max_into(total, init_peak);
  }
  if (const json* overhead = member(spec, "overhead")) {
    const auto op = join(spec_path, "overhead");
    expect_object(d, *overhead, op);
    for (const auto& [k, v] : overhead->items()) {
      if (auto a = amount(d, k, v, join(op, k))) total[k] += *a;
    }
  }
  return total;
}

/// matchExpressions / matchFields of a node selector term.
LabelTerm read_term(const Doc& d, const json& term, const std::string& path) {
  expect_object(d, term, path);
  LabelTerm out;
  for (const char* list : {"matchExpressions", "matchFields"}) {
    const json* reqs = member(term, list);
    if (!reqs) continue;
    const auto lp = join(path, list);
    expect_array(d, *reqs, lp);
    const bool fields = std::string_view(list) == "matchFields";
    for (std::size_t i = 0; i < reqs->size(); ++i) {
      const auto rp = index(lp, i);
      const json& r = expect_object(d, (*reqs)[i], rp);
      LabelRequirement req;
      const json* key = member(r, "key");
      if (!key) d.bad(join(rp, "key"), "missing");
      req.key = expect_string(d, *key, join(rp, "key"));
      if (fields) {
        if (req.key != "metadata.name") d.bad(join(rp, "key"), "\"" + req.key + "\": matchFields supports metadata.name only");
        req.key = kHostnameLabel;
      }
      const json* op = member(r, "operator");
      if (!op) d.bad(join(rp, "operator"), "missing (In, NotIn, Exists, DoesNotExist, Gt, Lt)");
      req.op = expect_string(d, *op, join(rp, "operator"));
      if (const json* values = member(r, "values")) {
        expect_array(d, *values, join(rp, "values"));
        for (std::size_t k = 0; k < values->size(); ++k) req.values.push_back(scalar(d, (*values)[k], index(join(rp, "values"), k)));
      }
      // The library's checks, with this requirement's path.
      JobConstraints probe;
      probe.affinity.required.push_back({req});
      if (const auto problem = validate(probe); !problem.empty()) {
        const auto slash = problem.rfind('/');
        const auto colon = problem.find(": ");
        d.bad(join(rp, problem.substr(slash + 1, colon - slash - 1)), problem.substr(colon + 2));
      }
      out.push_back(std::move(req));
    }
  }
  return out;
}

NodeAffinity read_node_affinity(const Doc& d, const json& na, const std::string& path) {
  expect_object(d, na, path);
  NodeAffinity out;
  if (const json* req = member(na, "requiredDuringSchedulingIgnoredDuringExecution")) {
    const auto rp = join(path, "requiredDuringSchedulingIgnoredDuringExecution");
    expect_object(d, *req, rp);
    const json* terms = member(*req, "nodeSelectorTerms");
    const auto tp = join(rp, "nodeSelectorTerms");
    if (!terms) d.bad(tp, "missing: required node affinity needs nodeSelectorTerms");
    expect_array(d, *terms, tp);
    for (std::size_t i = 0; i < terms->size(); ++i) {
      auto term = read_term(d, (*terms)[i], index(tp, i));
      if (term.empty()) d.bad(index(tp, i), "an empty node selector term matches no node");
      out.required.push_back(std::move(term));
    }
  }
  if (const json* pref = member(na, "preferredDuringSchedulingIgnoredDuringExecution")) {
    const auto pp = join(path, "preferredDuringSchedulingIgnoredDuringExecution");
    expect_array(d, *pref, pp);
    for (std::size_t i = 0; i < pref->size(); ++i) {
      const auto ep = index(pp, i);
      const json& e = expect_object(d, (*pref)[i], ep);
      const json* w = member(e, "weight");
      if (!w || !w->is_number_integer() || w->get<std::int64_t>() < 1 || w->get<std::int64_t>() > 100) {
        d.bad(join(ep, "weight"), "must be an integer 1..100");
      }
      const json* preference = member(e, "preference");
      if (!preference) d.bad(join(ep, "preference"), "missing");
      auto term = read_term(d, *preference, join(ep, "preference"));
      if (term.empty()) continue;  // matches every node alike: no preference
      out.preferred.emplace_back(static_cast<std::int32_t>(w->get<std::int64_t>()), std::move(term));
    }
  }
  return out;
}

std::vector<Toleration> read_tolerations(const Doc& d, const json& v, const std::string& path) {
  expect_array(d, v, path);
  std::vector<Toleration> out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    const auto tp = index(path, i);
    const json& t = expect_object(d, v[i], tp);
    Toleration tol;
    if (const json* x = member(t, "key")) tol.key = expect_string(d, *x, join(tp, "key"));
    if (const json* x = member(t, "operator")) tol.op = expect_string(d, *x, join(tp, "operator"));
    if (const json* x = member(t, "value")) tol.value = scalar(d, *x, join(tp, "value"));
    if (const json* x = member(t, "effect")) tol.effect = expect_string(d, *x, join(tp, "effect"));
    JobConstraints probe;
    probe.tolerations.push_back(tol);
    if (const auto problem = validate(probe); !problem.empty()) {
      const auto slash = problem.rfind('/');
      const auto colon = problem.find(": ");
      d.bad(join(tp, problem.substr(slash + 1, colon - slash - 1)), problem.substr(colon + 2));
    }
    out.push_back(std::move(tol));
  }
  return out;
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil).
std::int64_t days_from_civil(std::int64_t y, std::int64_t m, std::int64_t day) {
  y -= m <= 2 ? 1 : 0;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const std::int64_t yoe = y - era * 400;
  const std::int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + day - 1;
  const std::int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

/// RFC 3339 ("2024-05-01T10:00:00Z", fractions and offsets allowed) to microseconds since the epoch.
std::optional<std::int64_t> parse_rfc3339(std::string_view s) {
  auto num = [&](std::size_t pos, std::size_t len, std::int64_t& out) {
    if (pos + len > s.size()) return false;
    const auto [p, ec] = std::from_chars(s.data() + pos, s.data() + pos + len, out);
    return ec == std::errc{} && p == s.data() + pos + len;
  };
  std::int64_t y = 0, mo = 0, dd = 0, h = 0, mi = 0, se = 0;
  if (s.size() < 20 || s[4] != '-' || s[7] != '-' || (s[10] != 'T' && s[10] != 't' && s[10] != ' ') || s[13] != ':' ||
      s[16] != ':' || !num(0, 4, y) || !num(5, 2, mo) || !num(8, 2, dd) || !num(11, 2, h) || !num(14, 2, mi) ||
      !num(17, 2, se) || mo < 1 || mo > 12 || dd < 1 || dd > 31 || h > 23 || mi > 59 || se > 60) {
    return std::nullopt;
  }
  std::size_t pos = 19;
  std::int64_t us = 0;
  if (s[pos] == '.') {
    std::int64_t scale = 100000;
    ++pos;
    const std::size_t first = pos;
    while (pos < s.size() && std::isdigit(static_cast<unsigned char>(s[pos]))) {
      us += (s[pos] - '0') * scale;
      scale /= 10;
      ++pos;
    }
    if (pos == first) return std::nullopt;
  }
  std::int64_t offset_min = 0;
  if (pos < s.size() && (s[pos] == 'Z' || s[pos] == 'z') && pos + 1 == s.size()) {
    // UTC
  } else if (pos + 6 == s.size() && (s[pos] == '+' || s[pos] == '-') && s[pos + 3] == ':') {
    std::int64_t oh = 0, om = 0;
    if (!num(pos + 1, 2, oh) || !num(pos + 4, 2, om) || oh > 23 || om > 59) return std::nullopt;
    offset_min = (s[pos] == '-' ? -1 : 1) * (oh * 60 + om);
  } else {
    return std::nullopt;
  }
  const std::int64_t seconds = days_from_civil(y, mo, dd) * 86400 + h * 3600 + mi * 60 + se - offset_min * 60;
  return seconds * 1'000'000 + us;
}

struct Pod {
  JobSpec job;
  bool bound = false;
  std::optional<std::int64_t> created_us;
};

std::optional<Pod> read_pod(const Doc& d, const Item& item, const GpuCatalog& catalog, ResourceTable& resources) {
  const json& o = *item.obj;
  const auto at = [&](std::string_view field) { return join(item.path, field); };
  const json* meta = member(o, "metadata");
  if (!meta) d.bad(at("metadata"), "a pod needs metadata.name");
  expect_object(d, *meta, at("metadata"));
  const json* name = member(*meta, "name");
  if (!name) d.bad(at("metadata.name"), "missing: a pod needs a name");
  const std::string pod_name = expect_string(d, *name, at("metadata.name"));
  if (pod_name.empty()) d.bad(at("metadata.name"), "a pod name must not be empty");
  std::string ns = "default";
  if (const json* x = member(*meta, "namespace")) ns = expect_string(d, *x, at("metadata.namespace"));
  if (ns.empty()) ns = "default";

  if (const json* status = member(o, "status")) {
    expect_object(d, *status, at("status"));
    if (const json* phase = member(*status, "phase")) {
      const auto p = expect_string(d, *phase, at("status.phase"));
      if (p == "Succeeded" || p == "Failed") return std::nullopt;
    }
  }

  Pod pod;
  JobSpec& j = pod.job;
  j.name = ns + "/" + pod_name;
  j.queue = ns;
  j.submit = SimTime::from_us(0);
  j.source_line = item.line;

  if (const json* created = member(*meta, "creationTimestamp")) {
    const auto text = expect_string(d, *created, at("metadata.creationTimestamp"));
    pod.created_us = parse_rfc3339(text);
    if (!pod.created_us) d.bad(at("metadata.creationTimestamp"), "\"" + text + "\" is not an RFC 3339 time like 2024-05-01T10:00:00Z");
  }
  const auto annotations = string_map(d, member(*meta, "annotations"), at("metadata.annotations"));
  if (const auto it = annotations.find(std::string(kKubeDurationAnnotation)); it != annotations.end()) {
    const auto path = join(at("metadata.annotations"), kKubeDurationAnnotation);
    // > 0 (1e-6..1e10 s); leave it out for a pod that never ends.
    j.duration = guarded(d, [&] { return trace_seconds(it->second, {d.source, 0, path}, Span::kPositive, true); });
  }

  const json* spec = member(o, "spec");
  if (!spec) d.bad(at("spec"), "missing: a pod needs a spec with containers");
  const auto sp = at("spec");
  expect_object(d, *spec, sp);

  const Amounts total = pod_requests(d, *spec, sp);
  std::vector<std::pair<std::string, std::string>> items;
  for (const auto& [k, v] : total) {
    if (k == resource_names::kCpu) items.emplace_back(k, std::to_string(v) + "m");
    else if (k == resource_names::kMemory) items.emplace_back(k, std::to_string(v) + "Mi");
    else items.emplace_back(k, std::to_string(v));
  }
  if (const auto milli = total.find(std::string(resource_names::kGpuMilli)); milli != total.end() && milli->second > kMilliPerGpu) {
    d.fail(ErrorCode::kTraceOutOfRange, join(sp, "containers[*].resources.requests.") + milli->first,
           "\"" + std::to_string(milli->second) + "\" (summed over the containers) is out of range: must be 1..1000 (a share of one GPU)");
  }
  j.request = guarded(d, [&] {
    return parse_requests(items, {}, catalog, resources, {d.source, 0, ""}, join(sp, "containers[*].resources.requests."));
  });

  auto& c = j.constraints;
  c.node_selector = string_map(d, member(*spec, "nodeSelector"), join(sp, "nodeSelector"));
  if (const json* aff = member(*spec, "affinity")) {
    expect_object(d, *aff, join(sp, "affinity"));
    if (const json* na = member(*aff, "nodeAffinity")) c.affinity = read_node_affinity(d, *na, join(sp, "affinity.nodeAffinity"));
  }
  if (const json* tol = member(*spec, "tolerations")) c.tolerations = read_tolerations(d, *tol, join(sp, "tolerations"));
  if (const json* prio = member(*spec, "priority")) {
    if (!prio->is_number_integer()) d.bad(join(sp, "priority"), "expected a 32-bit integer, got " + prio->dump());
    if ((prio->is_number_unsigned() && prio->get<std::uint64_t>() > std::numeric_limits<std::int32_t>::max()) ||
        prio->get<std::int64_t>() < std::numeric_limits<std::int32_t>::min() ||
        prio->get<std::int64_t>() > std::numeric_limits<std::int32_t>::max()) {
      d.fail(ErrorCode::kTraceOutOfRange, join(sp, "priority"), prio->dump() + " is out of range: must be a 32-bit integer");
    }
    j.priority = static_cast<std::int32_t>(prio->get<std::int64_t>());
    j.constraints.priority_final = true;   // admission resolved the class: the scheduler reads spec.priority
  }
  if (const json* pc = member(*spec, "priorityClassName")) c.priority_class = expect_string(d, *pc, join(sp, "priorityClassName"));
  if (const json* pp = member(*spec, "preemptionPolicy")) {
    const auto policy = expect_string(d, *pp, join(sp, "preemptionPolicy"));
    if (policy == "Never") c.preempt_never = true;
    else if (policy != "PreemptLowerPriority") d.bad(join(sp, "preemptionPolicy"), "\"" + policy + "\" is not PreemptLowerPriority or Never");
  }
  if (const json* node = member(*spec, "nodeName")) {
    const auto node_name = expect_string(d, *node, join(sp, "nodeName"));
    if (!node_name.empty()) {
      pod.bound = true;
      c.bound = true;
      c.node_selector[std::string(kHostnameLabel)] = node_name;
      const bool tolerant = std::any_of(c.tolerations.begin(), c.tolerations.end(), [](const Toleration& t) {
        return t.key.empty() && t.op == "Exists" && (t.effect.empty() || t.effect == "NoSchedule");
      });
      if (!tolerant) c.tolerations.push_back({"", "Exists", "", "NoSchedule"});
    }
  }
  return pod;
}

}  // namespace

std::vector<NodeSpec> read_kube_nodes(std::istream& in, const std::string& source, GpuCatalog& catalog,
                                      ResourceTable& resources) {
  const Doc d = read_doc(in, source);
  const json root = parse(d);
  std::vector<NodeSpec> nodes;
  std::unordered_set<std::string> seen;
  for (const auto& item : list_items(d, root, "Node", "kubectl get nodes -o json")) {
    nodes.push_back(read_node(d, item, catalog, resources));
    if (!seen.insert(nodes.back().name).second) {
      d.fail(ErrorCode::kTraceDuplicateId, join(item.path, "metadata.name"), "node \"" + nodes.back().name + "\" appears twice");
    }
  }
  return nodes;
}

std::vector<NodeSpec> read_kube_nodes(const std::filesystem::path& path, GpuCatalog& catalog, ResourceTable& resources) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw_error(ErrorCode::kTraceCannotOpen, {path.string(), 0, ""}, "cannot open the node list");
  return read_kube_nodes(in, path.string(), catalog, resources);
}

Workload read_kube_pods(std::istream& in, const std::string& source, GpuCatalog& catalog, ResourceTable& resources) {
  const Doc d = read_doc(in, source);
  const json root = parse(d);
  std::vector<Pod> pods;
  std::unordered_set<std::string> seen;
  for (const auto& item : list_items(d, root, "Pod", "kubectl get pods -A -o json")) {
    auto pod = read_pod(d, item, catalog, resources);
    if (!pod) continue;
    if (!seen.insert(pod->job.name).second) {
      d.fail(ErrorCode::kTraceDuplicateId, join(item.path, "metadata.name"), "pod \"" + pod->job.name + "\" appears twice");
    }
    pods.push_back(std::move(*pod));
  }
  // Bound pods first (file order), then pending ones by creation time; no timestamp sorts last.
  std::stable_sort(pods.begin(), pods.end(), [](const Pod& a, const Pod& b) {
    if (a.bound != b.bound) return a.bound;
    if (a.bound) return false;
    const auto key = [](const Pod& p) { return p.created_us.value_or(std::numeric_limits<std::int64_t>::max()); };
    return key(a) < key(b);
  });
  Workload jobs;
  jobs.reserve(pods.size());
  for (auto& p : pods) jobs.push_back(std::move(p.job));
  return jobs;
}

Workload read_kube_pods(const std::filesystem::path& path, GpuCatalog& catalog, ResourceTable& resources) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw_error(ErrorCode::kTraceCannotOpen, {path.string(), 0, ""}, "cannot open the pod list");
  return read_kube_pods(in, path.string(), catalog, resources);
}

}  // namespace gpusched::traces
