#pragma once
/// Kubernetes placement constraints evaluated against a node: taints and tolerations, node
/// selectors and node affinity. Shared by the policies (filters, scores) and the simulator
/// (NoExecute evictions), so both read the same rules.
///
/// Example:
///   if (!tolerates_all(job.constraints.tolerations, spec.taints, TaintEffect::kNoSchedule)) ...
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <gpusched/job.hpp>
#include <gpusched/node.hpp>

namespace gpusched {

std::string_view to_string(TaintEffect e);
/// "NoSchedule", "PreferNoSchedule" or "NoExecute"; nullopt otherwise.
std::optional<TaintEffect> parse_taint_effect(std::string_view s);

/// Does toleration `t` tolerate `taint` (key, operator Equal/Exists, value, effect)?
[[nodiscard]] bool tolerates(const Toleration& t, const Taint& taint);
/// Does some toleration in `tols` tolerate `taint`?
[[nodiscard]] bool tolerated(std::span<const Toleration> tols, const Taint& taint);
/// The first taint of `effect` in `taints` that no toleration tolerates; nullptr when none.
[[nodiscard]] const Taint* untolerated(std::span<const Toleration> tols, std::span<const Taint> taints, TaintEffect effect);
/// Taints of `effect` in `taints` that no toleration tolerates.
[[nodiscard]] int count_untolerated(std::span<const Toleration> tols, std::span<const Taint> taints, TaintEffect effect);

/// Does one requirement hold for `labels`? Gt/Lt compare integers (a non-integer never matches).
[[nodiscard]] bool matches(const LabelRequirement& r, const std::map<std::string, std::string>& labels);
/// Do all requirements of the term hold? (an empty term matches nothing, as in Kubernetes)
[[nodiscard]] bool matches(const LabelTerm& term, const std::map<std::string, std::string>& labels);
/// nodeSelector (every label equal) and required node affinity (some term matches).
[[nodiscard]] bool node_matches(const JobConstraints& c, const std::map<std::string, std::string>& labels);
/// Sum of the weights of the preferred terms that match.
[[nodiscard]] std::int64_t preferred_weight(const NodeAffinity& a, const std::map<std::string, std::string>& labels);

/// Checks operators, value counts (In/NotIn need values; Exists/DoesNotExist none; Gt/Lt one
/// integer) and weights (1..100). Returns "" or what is wrong, with the JSON-pointer-ish field.
[[nodiscard]] std::string validate(const JobConstraints& c);

}  // namespace gpusched
