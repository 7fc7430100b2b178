// Kubernetes objects as `kubectl get -o yaml` prints them: reading (YAML through yaml-cpp, into
// nlohmann::json with the line of every field), the shared field checks, the dispatch to the
// translators, and the merge of the translation into a scenario and its profile.
#include <gpusched/scenario/k8s_objects.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <gpusched/quantity.hpp>
#include <gpusched/time.hpp>
#include <gpusched/utf8.hpp>

#include "k8s_objects_detail.hpp"

namespace gpusched::scenario {
namespace detail {

std::string join(std::initializer_list<std::string_view> names) {
  std::string out;
  for (auto n : names) out += (out.empty() ? "" : ", ") + std::string(n);
  return out;
}

std::int64_t ObjectContext::line(std::string path) const {
  for (;;) {
    if (auto it = o_.lines.find(path); it != o_.lines.end()) return it->second;
    if (path.empty()) return 0;
    const auto slash = path.rfind('/');
    path = slash == std::string::npos ? std::string() : path.substr(0, slash);
  }
}

Location ObjectContext::at(const std::string& path) const {
  std::string field = o_.where;
  if (!o_.kind.empty()) field += ", " + o_.kind + (o_.name.empty() ? std::string() : " " + o_.name);
  if (!path.empty()) field += ", " + path;
  return {o_.file, line(path), field};
}

void ObjectContext::fail(ErrorCode code, const std::string& path, const std::string& msg) const {
  throw_error(code, at(path), msg);
}

void ObjectContext::unmodelled(const std::string& path, const std::string& why) const {
  fail(ErrorCode::kScenarioUnknownField, path, "not modelled: " + why);
}

void ObjectContext::unknown(const std::string& path, std::string_view known) const {
  fail(ErrorCode::kScenarioUnknownField, path, "unknown or unmodelled field (gpusched reads: " + std::string(known) + ")");
}

void ObjectContext::expect_object(const nlohmann::json& j, const std::string& path) const {
  if (!j.is_object()) fail(ErrorCode::kScenarioBadValue, path, "expected a mapping");
}

void ObjectContext::expect_array(const nlohmann::json& j, const std::string& path) const {
  if (!j.is_array()) fail(ErrorCode::kScenarioBadValue, path, "expected a list");
}

std::string ObjectContext::str(const nlohmann::json& j, const std::string& path) const {
  if (!j.is_string()) fail(ErrorCode::kScenarioBadValue, path, "expected a string");
  return j.get<std::string>();
}

std::int64_t ObjectContext::integer(const nlohmann::json& j, const std::string& path, std::int64_t min, std::int64_t max) const {
  if (!j.is_number_integer()) fail(ErrorCode::kScenarioBadValue, path, "expected an integer");
  const auto range = [&](const std::string& v) {
    fail(ErrorCode::kScenarioOutOfRange, path, v + " is out of range: must be between " + std::to_string(min) + " and " + std::to_string(max));
  };
  if (j.is_number_unsigned() && j.get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
    range(std::to_string(j.get<std::uint64_t>()));
  }
  const auto v = j.get<std::int64_t>();
  if (v < min || v > max) range(std::to_string(v));
  return v;
}

bool ObjectContext::boolean(const nlohmann::json& j, const std::string& path) const {
  if (!j.is_boolean()) fail(ErrorCode::kScenarioBadValue, path, "expected true or false");
  return j.get<bool>();
}

double ObjectContext::quantity(const nlohmann::json& j, const std::string& path) const {
  const auto text = j.is_null() ? std::nullopt : scalar_text(j);
  if (!text) fail(ErrorCode::kScenarioBadValue, path, "expected a quantity");
  try {
    return static_cast<double>(parse_cpu_milli(*text, at(path))) / 1000.0;
  } catch (const Error& e) {
    fail(ErrorCode::kScenarioBadValue, path, e.detail());
  }
}

void ObjectContext::check_top(std::initializer_list<std::string_view> fields) const {
  static constexpr std::string_view kIgnoredMetadata[] = {
      "uid", "resourceVersion", "generation", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds",
      "managedFields", "annotations", "labels", "ownerReferences", "finalizers", "selfLink", "generateName"};
  for (const auto& [k, v] : o_.object.items()) {
    if (k == "apiVersion" || k == "kind" || k == "status") continue;
    if (k == "metadata") {
      expect_object(v, "/metadata");
      for (const auto& [mk, mv] : v.items()) {
        if (mk == "name" || mk == "namespace") {
          (void)str(mv, "/metadata/" + mk);
          continue;
        }
        if (std::find(std::begin(kIgnoredMetadata), std::end(kIgnoredMetadata), mk) == std::end(kIgnoredMetadata)) {
          unknown("/metadata/" + mk, "name, namespace; ignored: uid, resourceVersion, generation, creationTimestamp, "
                                     "deletionTimestamp, managedFields, annotations, labels, ownerReferences, finalizers");
        }
      }
      continue;
    }
    if (std::find(fields.begin(), fields.end(), k) == fields.end()) {
      unknown("/" + k, "apiVersion, kind, metadata, " + join(fields) + "; ignored: status");
    }
  }
}

}  // namespace detail

namespace {

using detail::ObjectContext;

/// A plain (unquoted) YAML scalar typed as the YAML 1.2 core schema types it; quoted ones and
/// explicitly tagged strings stay strings.
nlohmann::json scalar_json(const YAML::Node& n) {
  const std::string& s = n.Scalar();
  const std::string& tag = n.Tag();
  if (tag == "!" || tag == "tag:yaml.org,2002:str") return s;
  if (tag != "?" && !tag.empty() && tag != "tag:yaml.org,2002:int" && tag != "tag:yaml.org,2002:float" &&
      tag != "tag:yaml.org,2002:bool" && tag != "tag:yaml.org,2002:null") {
    return s;
  }
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return nullptr;
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  {
    std::int64_t v = 0;
    const char* b = s.data();
    const char* e = s.data() + s.size();
    if (*b == '+') ++b;
    auto [p, ec] = std::from_chars(b, e, v);
    if (ec == std::errc() && p == e && b != e) return v;
  }
  // Floats: digits with a '.' or an exponent (YAML 1.2 core), and .inf / .nan.
  bool digit = false, ok = true;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c >= '0' && c <= '9') digit = true;
    else if (!(c == '.' || c == 'e' || c == 'E' || ((c == '-' || c == '+') && (i == 0 || s[i - 1] == 'e' || s[i - 1] == 'E')))) ok = false;
  }
  if (ok && digit) {
    try {
      std::size_t used = 0;
      const double d = std::stod(s, &used);
      if (used == s.size()) return d;
    } catch (const std::exception&) {
    }
  }
  return s;
}

struct Converter {
  const std::string& source;
  std::map<std::string, std::int64_t>& lines;
  /// Values left to convert: aliases (*a) repeat a subtree, so a small file could expand
  /// without bound ("billion laughs"); the caller allows a few per byte of the file.
  std::size_t& budget;

  /// Text that ends up in the document (and in JSON outputs, Python strings) must be UTF-8.
  void check_utf8(const std::string& text, const YAML::Mark& mark, const std::string& path) const {
    if (!is_valid_utf8(text)) {
      throw_error(ErrorCode::kScenarioParse, {source, static_cast<std::int64_t>(mark.line) + 1, path}, describe_invalid_utf8(text));
    }
  }

  nlohmann::json convert(const YAML::Node& n, const std::string& path, int depth = 0) {
    const auto line = static_cast<std::int64_t>(n.Mark().line) + 1;
    if (depth > kMaxJsonDepth) {
      throw_error(ErrorCode::kScenarioTooDeep, {source, line, path},
                  "nested deeper than " + std::to_string(kMaxJsonDepth) + " levels of mappings and sequences");
    }
    if (budget == 0) {
      throw_error(ErrorCode::kScenarioParse, {source, line, path},
                  "the document expands to too many values (aliases repeating large subtrees?)");
    }
    --budget;
    lines.emplace(path, line);
    switch (n.Type()) {
      case YAML::NodeType::Undefined:
      case YAML::NodeType::Null:
        return nullptr;
      case YAML::NodeType::Scalar:
        check_utf8(n.Scalar(), n.Mark(), path);
        return scalar_json(n);
      case YAML::NodeType::Sequence: {
        auto out = nlohmann::json::array();
        for (std::size_t i = 0; i < n.size(); ++i) out.push_back(convert(n[i], path + "/" + std::to_string(i), depth + 1));
        return out;
      }
      case YAML::NodeType::Map: {
        auto out = nlohmann::json::object();
        for (const auto& kv : n) {
          if (!kv.first.IsScalar()) {
            throw_error(ErrorCode::kScenarioParse, {source, static_cast<std::int64_t>(kv.first.Mark().line) + 1, path},
                        "a mapping key must be a plain string");
          }
          const std::string key = kv.first.Scalar();
          check_utf8(key, kv.first.Mark(), path);
          if (out.contains(key)) {
            throw_error(ErrorCode::kScenarioParse, {source, static_cast<std::int64_t>(kv.first.Mark().line) + 1, path + "/" + key},
                        "duplicate key \"" + key + "\"");
          }
          out[key] = convert(kv.second, path + "/" + key, depth + 1);
        }
        return out;
      }
    }
    return nullptr;
  }
};

std::string text_of(const nlohmann::json& j, std::string_view key) {
  if (!j.is_object() || !j.contains(key) || !j[std::string(key)].is_string()) return {};
  return j[std::string(key)].get<std::string>();
}

KubernetesObject make_object(nlohmann::json obj, std::map<std::string, std::int64_t> lines, const std::string& source,
                             const std::string& where) {
  KubernetesObject o;
  o.file = source;
  o.where = where;
  o.object = std::move(obj);
  o.lines = std::move(lines);
  const ObjectContext ctx(o);
  if (!o.object.is_object()) ctx.fail(ErrorCode::kScenarioBadValue, "", "expected a Kubernetes object (a mapping with apiVersion and kind)");
  if (!o.object.contains("kind")) ctx.fail(ErrorCode::kScenarioMissingField, "/kind", "missing field 'kind'");
  if (!o.object.contains("apiVersion")) ctx.fail(ErrorCode::kScenarioMissingField, "/apiVersion", "missing field 'apiVersion'");
  o.kind = ctx.str(o.object["kind"], "/kind");
  o.api_version = ctx.str(o.object["apiVersion"], "/apiVersion");
  if (o.object.contains("metadata") && o.object["metadata"].is_object()) {
    o.name = text_of(o.object["metadata"], "name");
    o.namespace_name = text_of(o.object["metadata"], "namespace");
  }
  return o;
}

/// Sub-map of `lines` under `prefix`, re-rooted.
std::map<std::string, std::int64_t> lines_under(const std::map<std::string, std::int64_t>& lines, const std::string& prefix) {
  std::map<std::string, std::int64_t> out;
  for (auto it = lines.lower_bound(prefix); it != lines.end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it) {
    const auto rest = it->first.substr(prefix.size());
    if (rest.empty() || rest[0] == '/') out.emplace(rest, it->second);
  }
  return out;
}

/// One document: an object, or a List (kind "List" or "<Kind>List" with items) of objects.
void add_document(nlohmann::json doc, std::map<std::string, std::int64_t> lines, const std::string& source,
                  const std::string& where, std::vector<KubernetesObject>& out) {
  if (doc.is_null()) return;   // an empty document (a trailing ---)
  auto o = make_object(std::move(doc), std::move(lines), source, where);
  const bool list = o.kind == "List" || (o.kind.size() > 4 && o.kind.compare(o.kind.size() - 4, 4, "List") == 0 && o.object.contains("items"));
  if (!list) {
    out.push_back(std::move(o));
    return;
  }
  const ObjectContext ctx(o);
  for (const auto& [k, v] : o.object.items()) {
    if (k != "apiVersion" && k != "kind" && k != "metadata" && k != "items") ctx.unknown("/" + k, "apiVersion, kind, metadata, items");
  }
  if (!o.object.contains("items")) return;
  const auto& items = o.object["items"];
  ctx.expect_array(items, "/items");
  for (std::size_t i = 0; i < items.size(); ++i) {
    const std::string prefix = "/items/" + std::to_string(i);
    auto item = items[i];
    // Typed lists (ClusterQueueList) may leave apiVersion/kind out of their items.
    if (item.is_object() && o.kind != "List") {
      if (!item.contains("kind")) item["kind"] = o.kind.substr(0, o.kind.size() - 4);
      if (!item.contains("apiVersion")) item["apiVersion"] = o.api_version;
    }
    out.push_back(make_object(std::move(item), lines_under(o.lines, prefix), source, where + " item " + std::to_string(i + 1)));
  }
}

}  // namespace

namespace {

/// yaml-cpp 0.7 can stop consuming its input and report empty documents forever (a stray ','
/// outside any collection: the file ","). A first pass over the events gives up past a bound
/// linear in the size of the text, so the real load below always ends.
class ProgressCheck : public YAML::EventHandler {
 public:
  struct Stuck {};
  explicit ProgressCheck(std::size_t limit) : limit_(limit) {}
  void OnDocumentStart(const YAML::Mark& m) override { step(m); }
  void OnDocumentEnd() override { step(); }
  void OnNull(const YAML::Mark& m, YAML::anchor_t) override { step(m); }
  void OnAlias(const YAML::Mark& m, YAML::anchor_t) override { step(m); }
  void OnScalar(const YAML::Mark& m, const std::string&, YAML::anchor_t, const std::string&) override { step(m); }
  void OnSequenceStart(const YAML::Mark& m, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override { step(m); }
  void OnSequenceEnd() override { step(); }
  void OnMapStart(const YAML::Mark& m, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override { step(m); }
  void OnMapEnd() override { step(); }
  [[nodiscard]] std::int64_t line() const { return last_.is_null() ? 0 : static_cast<std::int64_t>(last_.line) + 1; }

 private:
  void step(const YAML::Mark& m) {
    last_ = m;
    step();
  }
  void step() {
    if (++events_ > limit_) throw Stuck{};
  }
  std::size_t limit_;
  std::size_t events_ = 0;
  YAML::Mark last_ = YAML::Mark::null_mark();
};

void check_yaml_progress(std::string_view text, const std::string& source) {
  std::istringstream in{std::string(text)};
  YAML::Parser parser(in);
  ProgressCheck check(8 * text.size() + 64);
  std::size_t docs = 0;
  try {
    while (parser.HandleNextDocument(check)) {
      if (++docs > text.size() + 1) throw ProgressCheck::Stuck{};   // every document takes some text
    }
  } catch (const ProgressCheck::Stuck&) {
    throw_error(ErrorCode::kScenarioParse, {source, check.line(), ""},
                "not valid YAML or JSON: the YAML reader makes no progress here (a stray ',' outside any "
                "sequence or mapping?)");
  } catch (const YAML::Exception&) {
    // The load below reports it with yaml-cpp's message.
  }
}

}  // namespace

std::vector<KubernetesObject> parse_kubernetes_objects(std::string_view text, const std::string& source) {
  check_yaml_progress(text, source);
  std::vector<YAML::Node> docs;
  try {
    docs = YAML::LoadAll(std::string(text));
  } catch (const YAML::Exception& e) {
    throw_error(ErrorCode::kScenarioParse, {source, e.mark.is_null() ? 0 : static_cast<std::int64_t>(e.mark.line) + 1, ""},
                "not valid YAML or JSON: " + e.msg);
  }
  std::vector<KubernetesObject> out;
  std::size_t budget = 2 * text.size() + 1024;   // values for all documents together
  for (std::size_t d = 0; d < docs.size(); ++d) {
    std::map<std::string, std::int64_t> lines;
    Converter conv{source, lines, budget};
    auto j = conv.convert(docs[d], "");
    add_document(std::move(j), std::move(lines), source, "document " + std::to_string(d + 1), out);
  }
  return out;
}

std::vector<KubernetesObject> read_kubernetes_objects(const std::filesystem::path& path, const std::string& source) {
  const std::string shown = source.empty() ? path.string() : source;
  std::ifstream in(path, std::ios::binary);
  if (!in) throw_error(ErrorCode::kScenarioCannotOpen, {shown, 0, ""}, "cannot open the Kubernetes objects file");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_kubernetes_objects(ss.str(), shown);
}

KubernetesObject kubernetes_object_from_json(const nlohmann::json& object, const std::string& source, const std::string& where) {
  std::vector<KubernetesObject> out;
  add_document(object, {}, source, where, out);
  if (out.size() != 1) {
    throw_error(ErrorCode::kScenarioBadValue, {source, 0, where}, "an inline entry holds one Kubernetes object (not a List)");
  }
  return std::move(out.front());
}

KubernetesTranslation translate_kubernetes_objects(const std::vector<KubernetesObject>& objects, const GpuCatalog& catalog,
                                                   const policies::Registry& registry) {
  KubernetesTranslation out;
  // The same object twice (kind, namespace, name) is a mistake in the inputs: which one counts?
  std::set<std::tuple<std::string, std::string, std::string>> seen;
  std::vector<KubernetesObject> quota;
  const KubernetesObject* ksc = nullptr;
  for (const auto& o : objects) {
    const ObjectContext ctx(o);
    if (o.kind == "KubeSchedulerConfiguration") {
      if (ksc) {
        ctx.fail(ErrorCode::kScenarioBadValue, "", "a second KubeSchedulerConfiguration (the first: " + ksc->file + " " + ksc->where +
                                                       "); gpusched runs one scheduler");
      }
      ksc = &o;
      continue;
    }
    if (o.name.empty()) ctx.fail(ErrorCode::kScenarioMissingField, "/metadata/name", "missing field 'metadata.name'");
    if (!seen.emplace(o.kind, o.namespace_name, o.name).second) {
      ctx.fail(ErrorCode::kScenarioBadValue, "/metadata/name", "a second " + o.kind + " named \"" + o.name + "\"" +
                                                                    (o.namespace_name.empty() ? "" : " in namespace " + o.namespace_name));
    }
    quota.push_back(o);
  }
  detail::translate_quota_objects(quota, catalog, registry, out);
  if (ksc) out.profile = detail::translate_scheduler_config(*ksc, registry);
  return out;
}

namespace {

[[noreturn]] void merge_fail(const std::string& source, const std::string& msg) {
  throw_error(ErrorCode::kScenarioBadValue, {source, 0, "/kubernetes_objects"}, msg);
}

/// `args` merged into what the profile already gives `name` at any hook (its filter,
/// post-filter and queue-sort entries share one instance, so one set of args): the profile's own
/// keys stay when the objects do not set them (e.g. capacity-queues' `fair_sharing`, which Kueue
/// sets in its Configuration, not in a ClusterQueue); a key both give differently is a conflict.
nlohmann::json merged_args(const policies::Profile& profile, const std::string& name, const nlohmann::json& args,
                           const std::string& source) {
  nlohmann::json out = nlohmann::json::object();
  auto take = [&](const policies::PluginRef& ref) {
    if (ref.name != name || !ref.args.is_object()) return;
    for (const auto& [k, v] : ref.args.items()) out[k] = v;
  };
  for (const auto* list : {&profile.pre_filter, &profile.filter, &profile.post_filter}) {
    for (const auto& ref : *list) take(ref);
  }
  take(profile.queue_sort);
  for (const auto& [k, v] : args.items()) {
    if (out.contains(k) && out[k] != v) {
      merge_fail(source, "the profile already configures " + name + "'s \"" + k +
                             "\"; the Kubernetes objects configure it too: give one or the other");
    }
    out[k] = v;
  }
  return out;
}

/// Sets `args` on every entry of `name` in `list`, or appends an entry.
void put(std::vector<policies::PluginRef>& list, const std::string& name, const nlohmann::json& args) {
  bool found = false;
  for (auto& ref : list) {
    if (ref.name != name) continue;
    found = true;
    ref.args = args;
  }
  if (!found) list.push_back(policies::PluginRef{name, 1.0, args, {}});
}

}  // namespace

policies::Profile with_plugin_args(policies::Profile profile, const nlohmann::json& plugin_args, const std::string& source) {
  if (!plugin_args.is_object()) return profile;
  for (const auto& [name, args] : plugin_args.items()) {
    if (name == "capacity-queues") {
      const auto merged = merged_args(profile, name, args, source);
      put(profile.filter, name, merged);
      put(profile.post_filter, name, merged);
      if (profile.queue_sort.name == name) profile.queue_sort.args = merged;
    } else if (name == "resource-quota") {
      put(profile.pre_filter, name, merged_args(profile, name, args, source));
    } else if (name == "drf") {
      auto& qs = profile.queue_sort;
      if (qs.name == "drf") {
        if (!qs.args.empty() && qs.args != args) {
          merge_fail(source, "the profile's drf queue sort has its own args; the Volcano Queue weights configure it too: give one or the other");
        }
        qs.args = args;
      } else if (qs.name == "priority-fifo") {
        qs = policies::PluginRef{"drf", 1.0, args, {}};
      } else {
        merge_fail(source, "Volcano Queue weights order queues with the drf queue sort, but the profile sorts with \"" + qs.name +
                               "\" (drf replaces only the default priority-fifo)");
      }
    } else {
      merge_fail(source, "internal: no hook for translated plugin \"" + name + "\"");
    }
  }
  return profile;
}

nlohmann::json resolve_kubernetes_objects(const nlohmann::json& doc, const std::string& source, const std::filesystem::path& base_dir,
                                          const policies::Registry& registry, nlohmann::json* plugin_args) {
  if (!doc.is_object() || !doc.contains("kubernetes_objects")) return doc;
  const auto& list = doc["kubernetes_objects"];
  const auto fail = [&](const std::string& field, const std::string& msg) {
    throw_error(ErrorCode::kScenarioBadValue, {source, 0, field}, msg);
  };
  if (!list.is_array()) fail("/kubernetes_objects", "expected a list of files (YAML or JSON, relative to the scenario) or objects");
  std::vector<KubernetesObject> objects;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string f = "/kubernetes_objects/" + std::to_string(i);
    if (list[i].is_string()) {
      std::filesystem::path p = list[i].get<std::string>();
      if (p.is_relative()) p = base_dir / p;
      auto more = read_kubernetes_objects(p, p.string());
      for (auto& o : more) objects.push_back(std::move(o));
    } else if (list[i].is_object()) {
      objects.push_back(kubernetes_object_from_json(list[i], source, f));
    } else {
      fail(f, "expected a file path or a Kubernetes object");
    }
  }
  // Flavors name GPU models: the scenario's own models count too.
  GpuCatalog catalog = GpuCatalog::builtin();
  if (doc.contains("cluster") && doc["cluster"].is_object() && doc["cluster"].contains("gpu_models")) {
    catalog.add_json(doc["cluster"]["gpu_models"], source + " /cluster/gpu_models");
  }
  auto t = translate_kubernetes_objects(objects, catalog, registry);

  nlohmann::json out = doc;
  out.erase("kubernetes_objects");
  if (!t.priority_classes.empty()) {
    auto& pcs = out["priority_classes"];
    if (pcs.is_null()) pcs = nlohmann::json::object();
    if (!pcs.is_object()) fail("/priority_classes", "expected an object");
    for (const auto& [name, pc] : t.priority_classes.items()) {
      if (pcs.contains(name)) {
        fail("/priority_classes/" + name, "priority class \"" + name + "\" is given here and as a Kubernetes object: give it once");
      }
      pcs[name] = pc;
    }
  }
  if (!t.profile.is_null() && doc.contains("profile")) {
    fail("/profile", "the scenario names a profile and its kubernetes_objects hold a KubeSchedulerConfiguration: give one of them");
  }
  if (!t.plugin_args.empty()) {
    policies::Profile base;
    const nlohmann::json& given = doc.contains("profile") ? doc["profile"] : t.profile;
    try {
      if (given.is_string()) base = policies::builtin_profile(given.get<std::string>(), source);
      else if (given.is_object()) base = policies::Profile::from_json(given, source);
    } catch (const ProfileError& e) {
      const auto& inner = e.where().field;
      throw_error(e.code(), {source, 0, inner.empty() || inner == "profile" ? "/profile" : "/profile/" + inner}, e.detail());
    }
    auto merged = with_plugin_args(std::move(base), t.plugin_args, source).to_json();
    if (given.is_object()) {
      // Fields to_json() does not write (a newer profile field) stay as given.
      for (const auto& [k, v] : given.items()) {
        if (k != "extends" && k != "replace" && !merged.contains(k)) merged[k] = v;
      }
    }
    out["profile"] = std::move(merged);
  } else if (!t.profile.is_null()) {
    out["profile"] = t.profile;
  }
  if (plugin_args) *plugin_args = t.plugin_args;
  return out;
}

}  // namespace gpusched::scenario
