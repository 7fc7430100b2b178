#include <gpusched/constraints.hpp>

#include <algorithm>
#include <charconv>

namespace gpusched {

std::string_view to_string(TaintEffect e) {
  switch (e) {
    case TaintEffect::kNoSchedule: return "NoSchedule";
    case TaintEffect::kPreferNoSchedule: return "PreferNoSchedule";
    case TaintEffect::kNoExecute: return "NoExecute";
  }
  return "?";
}

std::optional<TaintEffect> parse_taint_effect(std::string_view s) {
  if (s == "NoSchedule") return TaintEffect::kNoSchedule;
  if (s == "PreferNoSchedule") return TaintEffect::kPreferNoSchedule;
  if (s == "NoExecute") return TaintEffect::kNoExecute;
  return std::nullopt;
}

bool tolerates(const Toleration& t, const Taint& taint) {
  if (!t.effect.empty() && t.effect != to_string(taint.effect)) return false;
  if (t.op == "Exists") return t.key.empty() || t.key == taint.key;
  return t.key == taint.key && t.value == taint.value;
}

bool tolerated(std::span<const Toleration> tols, const Taint& taint) {
  return std::any_of(tols.begin(), tols.end(), [&](const Toleration& t) { return tolerates(t, taint); });
}

const Taint* untolerated(std::span<const Toleration> tols, std::span<const Taint> taints, TaintEffect effect) {
  for (const auto& taint : taints) {
    if (taint.effect == effect && !tolerated(tols, taint)) return &taint;
  }
  return nullptr;
}

int count_untolerated(std::span<const Toleration> tols, std::span<const Taint> taints, TaintEffect effect) {
  int n = 0;
  for (const auto& taint : taints) n += (taint.effect == effect && !tolerated(tols, taint)) ? 1 : 0;
  return n;
}

namespace {
std::optional<long long> as_int(std::string_view s) {
  long long v = 0;
  const auto* end = s.data() + s.size();
  auto [p, ec] = std::from_chars(s.data(), end, v);
  if (ec != std::errc{} || p != end || s.empty()) return std::nullopt;
  return v;
}
}  // namespace

bool matches(const LabelRequirement& r, const std::map<std::string, std::string>& labels) {
  const auto it = labels.find(r.key);
  const bool has = it != labels.end();
  if (r.op == "Exists") return has;
  if (r.op == "DoesNotExist") return !has;
  if (r.op == "In") return has && std::find(r.values.begin(), r.values.end(), it->second) != r.values.end();
  if (r.op == "NotIn") return !has || std::find(r.values.begin(), r.values.end(), it->second) == r.values.end();
  if ((r.op == "Gt" || r.op == "Lt") && has && r.values.size() == 1) {
    const auto a = as_int(it->second), b = as_int(r.values[0]);
    if (!a || !b) return false;
    return r.op == "Gt" ? *a > *b : *a < *b;
  }
  return false;
}

bool matches(const LabelTerm& term, const std::map<std::string, std::string>& labels) {
  if (term.empty()) return false;
  return std::all_of(term.begin(), term.end(), [&](const LabelRequirement& r) { return matches(r, labels); });
}

bool node_matches(const JobConstraints& c, const std::map<std::string, std::string>& labels) {
  for (const auto& [k, v] : c.node_selector) {
    const auto it = labels.find(k);
    if (it == labels.end() || it->second != v) return false;
  }
  if (c.affinity.required.empty()) return true;
  return std::any_of(c.affinity.required.begin(), c.affinity.required.end(),
                     [&](const LabelTerm& t) { return matches(t, labels); });
}

std::int64_t preferred_weight(const NodeAffinity& a, const std::map<std::string, std::string>& labels) {
  std::int64_t w = 0;
  for (const auto& [weight, term] : a.preferred) w += matches(term, labels) ? weight : 0;
  return w;
}

namespace {
std::string check_term(const LabelTerm& term, const std::string& at) {
  if (term.empty()) return at + ": a term needs at least one requirement";
  for (std::size_t i = 0; i < term.size(); ++i) {
    const auto& r = term[i];
    const std::string f = at + "/" + std::to_string(i);
    if (r.key.empty()) return f + "/key: missing";
    if (r.op == "In" || r.op == "NotIn") {
      if (r.values.empty()) return f + "/values: " + r.op + " needs at least one value";
    } else if (r.op == "Exists" || r.op == "DoesNotExist") {
      if (!r.values.empty()) return f + "/values: " + r.op + " takes no values";
    } else if (r.op == "Gt" || r.op == "Lt") {
      if (r.values.size() != 1 || !as_int(r.values[0])) return f + "/values: " + r.op + " needs exactly one integer";
    } else {
      return f + "/operator: unknown operator \"" + r.op + "\" (In, NotIn, Exists, DoesNotExist, Gt, Lt)";
    }
  }
  return {};
}
}  // namespace

std::string validate(const JobConstraints& c) {
  for (std::size_t i = 0; i < c.affinity.required.size(); ++i) {
    if (auto e = check_term(c.affinity.required[i], "affinity/required/" + std::to_string(i)); !e.empty()) return e;
  }
  for (std::size_t i = 0; i < c.affinity.preferred.size(); ++i) {
    const auto& [w, term] = c.affinity.preferred[i];
    const std::string at = "affinity/preferred/" + std::to_string(i);
    if (w < 1 || w > 100) return at + "/weight: must be 1..100";
    if (auto e = check_term(term, at + "/term"); !e.empty()) return e;
  }
  for (std::size_t i = 0; i < c.tolerations.size(); ++i) {
    const auto& t = c.tolerations[i];
    const std::string at = "tolerations/" + std::to_string(i);
    if (t.op != "Equal" && t.op != "Exists") return at + "/operator: expected Equal or Exists";
    if (t.op == "Exists" && !t.value.empty()) return at + "/value: Exists takes no value";
    if (t.op == "Equal" && t.key.empty()) return at + "/key: Equal needs a key";
    if (!t.effect.empty() && !parse_taint_effect(t.effect)) return at + "/effect: expected NoSchedule, PreferNoSchedule or NoExecute";
  }
  if (c.max_per_node < 0) return "max_per_node: must be >= 0";
  if (c.max_per_node > 0 && c.app.empty()) return "max_per_node: needs an app";
  return {};
}

}  // namespace gpusched
