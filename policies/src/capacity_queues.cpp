// `capacity-queues`: Kueue ClusterQueues with cohorts, borrowing, lending and reclaim (see
// gpusched/policies/quota/capacity_queues.hpp).
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <deque>
#include <iterator>
#include <limits>
#include <numeric>
#include <optional>

#include <gpusched/policies/framework/statement.hpp>
#include <gpusched/policies/quota/capacity_queues.hpp>
#include <gpusched/policies/quota/drf.hpp>
#include <gpusched/policies/quota/quota_resources.hpp>
#include <gpusched/policies/quota/resource_quota.hpp>
#include <gpusched/quantity.hpp>

#include "builtin_plugins.hpp"
#include "quota_common.hpp"

namespace gpusched::policies {

using namespace quota_util;   // NOLINT(google-build-using-namespace): internal helpers
using nlohmann::json;


namespace {

QueuePreemption parse_preemption(std::string_view plugin, const std::string& path, const json& v, bool allow_any) {
  if (v.is_string()) {
    const auto s = v.get<std::string>();
    if (s == "Never") return QueuePreemption::kNever;
    if (s == "LowerPriority") return QueuePreemption::kLowerPriority;
    if (s == "Any" && allow_any) return QueuePreemption::kAny;
  }
  bad_arg(plugin, path, std::string("expected ") + (allow_any ? "\"Never\", \"LowerPriority\" or \"Any\"" : "\"Never\" or \"LowerPriority\""));
}

}  // namespace

CapacityQueuesPlugin::CapacityQueuesPlugin(const nlohmann::json& args, std::string_view name) : name_(name) {
  resources_.set_weights(args.value("weights", json()), arg_at(name, "weights"));
  const json& cohorts = object_at(name, "cohorts", member_or_empty(args, "cohorts"));
  const json& queues = object_at(name, "queues", member_or_empty(args, "queues"));
  if (queues.empty()) {
    warn(std::string(name) +
         ": no ClusterQueue configured: every job is admitted without quota (give the plugin's \"queues\" args, e.g. in a "
         "profile extending kueue-cohorts)");
  }

  // Kueue Configuration.fairSharing {enable, preemptionStrategies}.
  if (args.contains("fair_sharing") && !args.at("fair_sharing").is_null()) {
    const auto& fs = object_at(name, "fair_sharing", args.at("fair_sharing"));
    check_keys(name, "fair_sharing", fs, {"enable", "preemption_strategies"});
    if (fs.contains("enable")) {
      if (!fs.at("enable").is_boolean()) bad_arg(name, "fair_sharing/enable", "expected true or false");
      fair_ = fs.at("enable").get<bool>();
    }
    if (fs.contains("preemption_strategies")) {
      const auto& ps = fs.at("preemption_strategies");
      const std::string known = "expected [\"LessThanOrEqualToFinalShare\"], [\"LessThanInitialShare\"] or "
                                "[\"LessThanOrEqualToFinalShare\", \"LessThanInitialShare\"] (the sequences Kueue accepts)";
      if (!ps.is_array() || ps.empty() || ps.size() > 2) bad_arg(name, "fair_sharing/preemption_strategies", known);
      strategies_.clear();
      for (std::size_t i = 0; i < ps.size(); ++i) {
        const std::string s = ps[i].is_string() ? ps[i].get<std::string>() : std::string();
        if (s == "LessThanOrEqualToFinalShare") strategies_.push_back(FairStrategy::kLessThanOrEqualToFinalShare);
        else if (s == "LessThanInitialShare") strategies_.push_back(FairStrategy::kLessThanInitialShare);
        else bad_arg(name, "fair_sharing/preemption_strategies/" + std::to_string(i), known);
      }
      if (strategies_.size() == 2 && (strategies_[0] != FairStrategy::kLessThanOrEqualToFinalShare ||
                                      strategies_[1] != FairStrategy::kLessThanInitialShare)) {
        bad_arg(name, "fair_sharing/preemption_strategies", known);
      }
    }
  }

  // Nodes: the ClusterQueues, then the cohorts.
  std::unordered_map<std::string, int> by_name;
  for (const auto& [q, spec] : queues.items()) {
    object_at(name, "queues/" + q, spec);
    check_keys(name, "queues/" + q, spec, {"cohort", "resource_groups", "flavors", "local_queues", "preemption", "fair_sharing"});
    Node n;
    n.name = q;
    n.is_queue = true;
    by_name.emplace(q, static_cast<int>(nodes_.size()));
    nodes_.push_back(std::move(n));
  }
  for (const auto& [c, spec] : cohorts.items()) {
    object_at(name, "cohorts/" + c, spec);
    check_keys(name, "cohorts/" + c, spec, {"parent"});
    if (by_name.count(c)) bad_arg(name, "cohorts/" + c, "\"" + c + "\" names both a ClusterQueue and a cohort");
    Node n;
    n.name = c;
    by_name.emplace(c, static_cast<int>(nodes_.size()));
    nodes_.push_back(std::move(n));
  }
  std::string cohort_names;
  for (const auto& [c, spec] : cohorts.items()) cohort_names += (cohort_names.empty() ? "" : ", ") + c;
  auto cohort_ref = [&](const std::string& path, const json& v) {
    if (!v.is_string()) bad_arg(name, path, "expected a cohort name");
    const auto s = v.get<std::string>();
    const auto it = by_name.find(s);
    if (it == by_name.end() || nodes_[static_cast<std::size_t>(it->second)].is_queue) {
      bad_arg(name, path, "unknown cohort \"" + s + "\" (cohorts: " + (cohort_names.empty() ? "none" : cohort_names) +
                              "); list it under \"cohorts\"");
    }
    return it->second;
  };

  // Raw quotas, parsed before the flavor x resource table can be sized.
  struct RawQuota {
    std::uint32_t flavor;
    std::size_t resource;
    std::int64_t nominal, borrowing, lending;   // -1 = not set
    std::string path;
  };
  std::vector<std::vector<RawQuota>> raw(nodes_.size());
  auto flavor_index = [&](const std::string& f) {
    for (std::uint32_t i = 0; i < flavor_names_.size(); ++i) {
      if (flavor_names_[i] == f) return i;
    }
    flavor_names_.push_back(f);
    return static_cast<std::uint32_t>(flavor_names_.size() - 1);
  };
  for (const auto& [q, spec] : queues.items()) {
    auto& node = nodes_[static_cast<std::size_t>(by_name.at(q))];
    const std::string qp = "queues/" + q;
    if (spec.contains("cohort")) node.parent = cohort_ref(qp + "/cohort", spec.at("cohort"));
    if (spec.contains("resource_groups") && spec.contains("flavors")) {
      bad_arg(name, qp, "give either \"resource_groups\" or \"flavors\" (shorthand for one group), not both");
    }
    std::vector<std::pair<std::string, const json*>> groups;
    if (spec.contains("flavors")) {
      groups.emplace_back(qp, &spec);
    } else if (spec.contains("resource_groups")) {
      const auto& rg = spec.at("resource_groups");
      if (!rg.is_array()) bad_arg(name, qp + "/resource_groups", "expected an array");
      for (std::size_t g = 0; g < rg.size(); ++g) {
        const std::string gp = qp + "/resource_groups/" + std::to_string(g);
        object_at(name, gp, rg[g]);
        check_keys(name, gp, rg[g], {"covered_resources", "flavors"});
        groups.emplace_back(gp, &rg[g]);
      }
    }
    std::vector<std::size_t> seen_resources;
    std::vector<std::uint32_t> seen_flavors;
    for (const auto& [gp, gj] : groups) {
      Group group;
      if (!gj->contains("flavors")) bad_arg(name, gp + "/flavors", "missing");
      const auto& fl = gj->at("flavors");
      if (!fl.is_array() || fl.empty()) bad_arg(name, gp + "/flavors", "expected a non-empty array of flavors");
      std::optional<std::vector<std::size_t>> covered;
      if (gj->contains("covered_resources")) {
        const auto& cr = gj->at("covered_resources");
        if (!cr.is_array()) bad_arg(name, gp + "/covered_resources", "expected an array of resource names");
        covered.emplace();
        for (std::size_t i = 0; i < cr.size(); ++i) {
          const auto at = arg_at(name, gp + "/covered_resources/" + std::to_string(i));
          if (!cr[i].is_string()) throw_error(ErrorCode::kProfileBadArgs, at, "expected a resource name");
          covered->push_back(resources_.intern(quota::QuotaResources::canonical(cr[i].get<std::string>(), at)));
        }
        std::sort(covered->begin(), covered->end());
      }
      for (std::size_t k = 0; k < fl.size(); ++k) {
        const std::string fp = gp + "/flavors/" + std::to_string(k);
        object_at(name, fp, fl[k]);
        check_keys(name, fp, fl[k], {"name", "resources"});
        if (!fl[k].contains("name") || !fl[k].at("name").is_string() || fl[k].at("name").get<std::string>().empty()) {
          bad_arg(name, fp + "/name", "expected a flavor name (a GPU model or \"default\")");
        }
        const auto f = flavor_index(fl[k].at("name").get<std::string>());
        if (std::find(seen_flavors.begin(), seen_flavors.end(), f) != seen_flavors.end()) {
          bad_arg(name, fp + "/name", "flavor \"" + flavor_names_[f] + "\" appears twice in ClusterQueue " + q);
        }
        seen_flavors.push_back(f);
        if (!fl[k].contains("resources")) bad_arg(name, fp + "/resources", "missing");
        const json& res = object_at(name, fp + "/resources", fl[k].at("resources"));
        std::vector<std::size_t> mine;
        for (const auto& [rn, rv] : res.items()) {
          const std::string rp = fp + "/resources/" + rn;
          const auto r = resources_.intern(quota::QuotaResources::canonical(rn, arg_at(name, rp)));
          RawQuota rq{f, r, -1, -1, -1, rp};
          if (rv.is_object()) {
            check_keys(name, rp, rv, {"nominal_quota", "borrowing_limit", "lending_limit"});
            if (!rv.contains("nominal_quota")) bad_arg(name, rp + "/nominal_quota", "missing");
            rq.nominal = resources_.parse_amount(r, rv.at("nominal_quota"), arg_at(name, rp + "/nominal_quota"));
            if (rv.contains("borrowing_limit")) {
              rq.borrowing = resources_.parse_amount(r, rv.at("borrowing_limit"), arg_at(name, rp + "/borrowing_limit"));
            }
            if (rv.contains("lending_limit")) {
              rq.lending = resources_.parse_amount(r, rv.at("lending_limit"), arg_at(name, rp + "/lending_limit"));
            }
          } else {
            rq.nominal = resources_.parse_amount(r, rv, arg_at(name, rp));
          }
          if ((rq.borrowing >= 0 || rq.lending >= 0) && node.parent < 0) {
            bad_arg(name, rp + (rq.borrowing >= 0 ? "/borrowing_limit" : "/lending_limit"),
                    "borrowing_limit and lending_limit need the ClusterQueue to be in a cohort");
          }
          if (rq.lending > rq.nominal) {
            bad_arg(name, rp + "/lending_limit",
                    "lending_limit " + resources_.format(r, rq.lending) + " exceeds nominal_quota " +
                        resources_.format(r, rq.nominal));
          }
          mine.push_back(r);
          raw[static_cast<std::size_t>(by_name.at(q))].push_back(rq);
        }
        std::sort(mine.begin(), mine.end());
        if (mine.empty()) bad_arg(name, fp + "/resources", "a flavor needs at least one resource");
        if (!covered) covered = mine;
        if (mine != *covered) {
          auto names = [&](const std::vector<std::size_t>& v) {
            std::string s;
            for (auto i : v) s += (s.empty() ? "" : ", ") + resources_.name(i);
            return s;
          };
          bad_arg(name, fp + "/resources",
                  "flavor \"" + flavor_names_[f] + "\" covers {" + names(mine) + "} but its resource group covers {" +
                      names(*covered) + "} (Kueue: every flavor of a group lists the group's coveredResources)");
        }
      }
      for (auto r : *covered) {
        if (std::find(seen_resources.begin(), seen_resources.end(), r) != seen_resources.end()) {
          bad_arg(name, gp, "resource " + resources_.name(r) + " is covered by two resource groups of ClusterQueue " + q);
        }
        seen_resources.push_back(r);
      }
      group.covered = *covered;
      for (std::size_t k = 0; k < fl.size(); ++k) group.flavors.push_back(flavor_index(fl[k].at("name").get<std::string>()));
      node.groups.push_back(std::move(group));
    }
    if (spec.contains("fair_sharing") && !spec.at("fair_sharing").is_null()) {
      // Kueue ClusterQueue.spec.fairSharing.weight (a quantity >= 0; default 1).
      const std::string wp = qp + "/fair_sharing";
      const auto& fs = object_at(name, wp, spec.at("fair_sharing"));
      check_keys(name, wp, fs, {"weight"});
      if (fs.contains("weight")) {
        const auto& w = fs.at("weight");
        if (!w.is_number() || !(w.get<double>() >= 0.0) || w.get<double>() > 1e9) {
          bad_arg(name, wp + "/weight", "expected a number >= 0");
        }
        node.weight_milli = static_cast<std::int64_t>(std::llround(w.get<double>() * 1000.0));
        if (node.weight_milli == 0 && w.get<double>() > 0.0) bad_arg(name, wp + "/weight", "a weight other than 0 must be at least 0.001");
      }
    }
    if (spec.contains("preemption")) {
      const std::string pp = qp + "/preemption";
      const auto& p = object_at(name, pp, spec.at("preemption"));
      check_keys(name, pp, p, {"reclaim_within_cohort", "within_cluster_queue", "borrow_within_cohort"});
      if (p.contains("reclaim_within_cohort")) {
        node.reclaim = parse_preemption(name, pp + "/reclaim_within_cohort", p.at("reclaim_within_cohort"), true);
      }
      if (p.contains("within_cluster_queue")) {
        node.within = parse_preemption(name, pp + "/within_cluster_queue", p.at("within_cluster_queue"), false);
      }
      if (p.contains("borrow_within_cohort")) {
        // Kueue ClusterQueue.spec.preemption.borrowWithinCohort {policy, maxPriorityThreshold}.
        const std::string bp = pp + "/borrow_within_cohort";
        const auto& b = object_at(name, bp, p.at("borrow_within_cohort"));
        check_keys(name, bp, b, {"policy", "max_priority_threshold"});
        if (!b.contains("policy")) bad_arg(name, bp + "/policy", "missing (\"Never\" or \"LowerPriority\")");
        node.borrow_within = parse_preemption(name, bp + "/policy", b.at("policy"), false) == QueuePreemption::kLowerPriority;
        if (b.contains("max_priority_threshold") && !b.at("max_priority_threshold").is_null()) {
          const auto& t = b.at("max_priority_threshold");
          if (!t.is_number_integer()) bad_arg(name, bp + "/max_priority_threshold", "expected an integer priority");
          const auto v = t.get<std::int64_t>();
          if (v < std::numeric_limits<std::int32_t>::min() || v > std::numeric_limits<std::int32_t>::max()) {
            bad_arg(name, bp + "/max_priority_threshold", "must fit a 32-bit priority (Kubernetes priorities are int32)");
          }
          node.borrow_threshold = static_cast<std::int32_t>(v);
        }
        // Kueue's validation (outside a cohort the policy is accepted and has no effect, as in Kueue).
        if (node.borrow_within && node.reclaim == QueuePreemption::kNever) {
          bad_arg(name, bp,
                  "borrow_within_cohort policy LowerPriority needs reclaim_within_cohort other than Never (Kueue: "
                  "\"reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never\")");
        }
      }
    }
  }
  for (const auto& [c, spec] : cohorts.items()) {
    if (spec.contains("parent")) nodes_[static_cast<std::size_t>(by_name.at(c))].parent = cohort_ref("cohorts/" + c + "/parent", spec.at("parent"));
  }
  // A cycle of parents: walk up from every cohort.
  for (const auto& [c, spec] : cohorts.items()) {
    const int start = by_name.at(c);
    std::vector<int> path{start};
    for (int n = nodes_[static_cast<std::size_t>(start)].parent; n >= 0; n = nodes_[static_cast<std::size_t>(n)].parent) {
      if (n == start || std::find(path.begin(), path.end(), n) != path.end()) {
        std::string cycle;
        for (int p : path) cycle += nodes_[static_cast<std::size_t>(p)].name + " -> ";
        bad_arg(name, "cohorts/" + c + "/parent", "cohort cycle: " + cycle + nodes_[static_cast<std::size_t>(n)].name);
      }
      path.push_back(n);
    }
  }

  // The flavor x resource table.
  const std::size_t frs = flavor_names_.size() * resources_.size();
  for (auto& n : nodes_) {
    n.nominal.assign(frs, 0);
    n.borrowing_limit.assign(frs, -1);
    n.lending_limit.assign(frs, -1);
    n.quota.assign(frs, 0);
    n.lendable.assign(frs, 0);
    n.guaranteed.assign(frs, 0);
    n.usage.assign(frs, 0);
    n.ceiling.assign(frs, 0);
  }
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    for (const auto& rq : raw[i]) {
      const auto k = fr(rq.flavor, rq.resource);
      nodes_[i].nominal[k] = rq.nominal;
      nodes_[i].borrowing_limit[k] = rq.borrowing;
      nodes_[i].lending_limit[k] = rq.lending;
    }
  }
  // Quotas bottom-up: deepest nodes first.
  std::vector<int> depth(nodes_.size(), 0);
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    int r = static_cast<int>(i);
    while (nodes_[static_cast<std::size_t>(r)].parent >= 0) {
      r = nodes_[static_cast<std::size_t>(r)].parent;
      ++depth[i];
    }
    nodes_[i].root = r;
  }
  std::vector<std::size_t> order(nodes_.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return depth[a] > depth[b]; });
  for (auto i : order) {
    auto& n = nodes_[i];
    for (std::size_t k = 0; k < frs; ++k) {
      if (n.is_queue) n.quota[k] = n.nominal[k];
      n.lendable[k] = n.lending_limit[k] >= 0 ? std::min(n.lending_limit[k], n.quota[k]) : n.quota[k];
      n.guaranteed[k] = n.quota[k] - n.lendable[k];
      if (n.parent >= 0) nodes_[static_cast<std::size_t>(n.parent)].quota[k] += n.lendable[k];
    }
  }
  // Ceilings (usage is zero now). A borrowing limit above what the cohort could ever lend is
  // valid, as in Kueue: it is a cap, not a promise (Kueue's ClusterQueue webhook checks only that
  // it is non-negative and that the queue has a cohort; see docs/policies.md).
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    auto& n = nodes_[i];
    if (!n.is_queue) continue;
    for (std::size_t k = 0; k < frs; ++k) n.ceiling[k] = available_at(static_cast<int>(i), k);
  }

  // LocalQueues -> ClusterQueues.
  for (const auto& [q, spec] : queues.items()) {
    const int node = by_name.at(q);
    auto map = [&](const std::string& lq, const std::string& path) {
      const auto [it, added] = local_queues_.emplace(lq, node);
      if (!added && it->second != node) {
        bad_arg(name, path, "queue \"" + lq + "\" is mapped to ClusterQueues " + nodes_[static_cast<std::size_t>(it->second)].name +
                                " and " + q);
      }
    };
    if (spec.contains("local_queues")) {
      const auto& lq = spec.at("local_queues");
      if (!lq.is_array()) bad_arg(name, "queues/" + q + "/local_queues", "expected an array of queue names");
      for (std::size_t i = 0; i < lq.size(); ++i) {
        const std::string path = "queues/" + q + "/local_queues/" + std::to_string(i);
        if (!lq[i].is_string()) bad_arg(name, path, "expected a queue name");
        map(lq[i].get<std::string>(), path);
      }
    }
  }
  for (const auto& [q, spec] : queues.items()) local_queues_.try_emplace(q, by_name.at(q));
  if (args.contains("default_queue") && !args.at("default_queue").is_null()) {
    const auto& d = args.at("default_queue");
    if (!d.is_string()) bad_arg(name, "default_queue", "expected a ClusterQueue name");
    const auto s = d.get<std::string>();
    if (!s.empty()) {
      const auto it = by_name.find(s);
      if (it == by_name.end() || !nodes_[static_cast<std::size_t>(it->second)].is_queue) {
        std::string known;
        for (const auto& [q, spec] : queues.items()) known += (known.empty() ? "" : ", ") + q;
        bad_arg(name, "default_queue", "unknown ClusterQueue \"" + s + "\" (queues: " + (known.empty() ? "none" : known) + ")");
      }
      default_queue_ = it->second;
    }
  }

  for (auto& n : nodes_) {
    if (!n.is_queue) continue;
    const std::string cohort = n.parent >= 0 ? " plus what cohort " + nodes_[static_cast<std::size_t>(n.parent)].name + " can lend" : "";
    n.no_room_reason = "ClusterQueue " + n.name + ": no flavor has room for the job (nominal quota" + cohort + ")";
    n.too_big_reason = "job exceeds what ClusterQueue " + n.name + " could ever admit in every flavor (nominal quota" + cohort +
                       ", borrowing limits)";
    n.no_flavor_reason = "no flavor of ClusterQueue " + n.name + " offers the job's GPU model or profile";
  }
  flavor_models_.assign(flavor_names_.size(), GpuModelId{});
  for (const auto& f : flavor_names_) flavor_reasons_.push_back("node has no GPU of flavor " + f + " assigned by the ClusterQueue");
}

std::string_view CapacityQueuesPlugin::intern(std::string text) { return *texts_.insert(std::move(text)).first; }

std::int64_t CapacityQueuesPlugin::available_at(int node, std::size_t k) const {
  const Node& n = nodes_[static_cast<std::size_t>(node)];
  if (n.parent < 0) return std::max<std::int64_t>(0, n.quota[k] - n.usage[k]);
  const std::int64_t local = std::max<std::int64_t>(0, n.guaranteed[k] - n.usage[k]);
  std::int64_t from_parent = available_at(n.parent, k);
  if (n.borrowing_limit[k] >= 0) {
    // What it put into the parent (lendable), minus what it already takes from there, plus the limit.
    const std::int64_t in_parent = std::max<std::int64_t>(0, n.usage[k] - n.guaranteed[k]);
    from_parent = std::min(from_parent, n.lendable[k] - in_parent + n.borrowing_limit[k]);
  }
  return local + std::max<std::int64_t>(0, from_parent);
}

void CapacityQueuesPlugin::add_usage(int node, std::size_t k, std::int64_t delta) {
  int n = node;
  while (delta != 0) {
    Node& x = nodes_[static_cast<std::size_t>(n)];
    const std::int64_t old = x.usage[k];
    x.usage[k] += delta;
    if (x.parent < 0) break;
    // The parent sees what a child uses beyond its guaranteed (non-lendable) quota.
    delta = std::max<std::int64_t>(0, x.usage[k] - x.guaranteed[k]) - std::max<std::int64_t>(0, old - x.guaranteed[k]);
    n = x.parent;
  }
}

void CapacityQueuesPlugin::apply(const Running& r, int sign) {
  for (const auto& [k, amount] : r.charged) add_usage(r.queue, k, sign * amount);
}

int CapacityQueuesPlugin::queue_of(const JobSpec& job) const {
  const auto it = local_queues_.find(job.queue);
  return it != local_queues_.end() ? it->second : default_queue_;
}

bool CapacityQueuesPlugin::flavor_allows(std::uint32_t flavor, const TaskRequest& r) const {
  const GpuModelId m = flavor_models_[flavor];
  if (!m.valid()) return true;
  if (!r.model_allowed(m)) return false;
  if ((r.gpu.mode == GpuMode::kMig || r.gpu.mode == GpuMode::kVgpu) && r.gpu.profile_index(m) < 0) return false;
  return true;
}

CapacityQueuesPlugin::Fit CapacityQueuesPlugin::assign(int queue, const JobSpec& job, std::span<const std::int64_t> charge,
                                                       std::vector<int>& out) const {
  const Node& q = nodes_[static_cast<std::size_t>(queue)];
  out.assign(q.groups.size(), -1);
  Fit result = Fit::kFits;
  for (std::size_t g = 0; g < q.groups.size(); ++g) {
    const auto& group = q.groups[g];
    const bool requested = std::any_of(group.covered.begin(), group.covered.end(), [&](std::size_t r) { return charge[r] > 0; });
    if (!requested) continue;
    bool eligible = false, ever = false;
    for (const auto f : group.flavors) {
      if (!flavor_allows(f, job.request)) continue;
      eligible = true;
      bool fits_ever = true, fits_now = true;
      for (const auto r : group.covered) {
        const auto c = charge[r];
        if (c == 0) continue;
        const auto k = fr(f, r);
        if (c > q.ceiling[k]) fits_ever = false;
        if (c > available_at(queue, k)) fits_now = false;
      }
      ever = ever || fits_ever;
      if (fits_ever && fits_now) {
        out[g] = static_cast<int>(f);
        break;
      }
    }
    if (!eligible) return Fit::kNoFlavor;
    if (!ever) return Fit::kTooBig;
    if (out[g] < 0) result = Fit::kNoRoom;
  }
  return result;
}

bool CapacityQueuesPlugin::assign_for_preemption(int queue, const JobSpec& job, std::span<const std::int64_t> charge,
                                                 std::vector<int>& out) const {
  // Kueue's flavorassigner: a flavor "fits" when every requested resource has room; it can be
  // used with preemption when each request is within nominal quota, or, when the queue may
  // preempt while borrowing (borrowWithinCohort), within what it could ever hold.
  const Node& q = nodes_[static_cast<std::size_t>(queue)];
  // Kueue's flavor assigner may preempt while borrowing with borrowWithinCohort, or with fair
  // sharing when the queue reclaims within its cohort.
  const bool preempt_borrowing = q.borrow_within || (fair_ && q.reclaim != QueuePreemption::kNever);
  out.assign(q.groups.size(), -1);
  for (std::size_t g = 0; g < q.groups.size(); ++g) {
    const auto& group = q.groups[g];
    if (std::none_of(group.covered.begin(), group.covered.end(), [&](std::size_t r) { return charge[r] > 0; })) continue;
    int preempt = -1;
    for (const auto f : group.flavors) {
      if (!flavor_allows(f, job.request)) continue;
      bool fits_now = true, by_preemption = true;
      for (const auto r : group.covered) {
        const auto c = charge[r];
        if (c == 0) continue;
        const auto k = fr(f, r);
        if (c > available_at(queue, k)) fits_now = false;
        if (c > q.ceiling[k] || (c > q.nominal[k] && !preempt_borrowing)) by_preemption = false;
      }
      if (fits_now) {
        preempt = static_cast<int>(f);
        break;
      }
      if (by_preemption && preempt < 0) preempt = static_cast<int>(f);
    }
    if (preempt < 0) return false;
    out[g] = preempt;
  }
  return true;
}

void CapacityQueuesPlugin::resolve(const ClusterState& cluster) {
  if (resolved_for_ == &cluster) return;
  for (std::size_t f = 0; f < flavor_names_.size(); ++f) {
    if (flavor_names_[f] == "default") continue;
    const auto m = cluster.catalog().find(flavor_names_[f]);
    if (!m) {
      bad_arg(name_, "queues",
              "flavor \"" + flavor_names_[f] + "\" is neither \"default\" nor a GPU model of the catalog (" +
                  cluster.catalog().known_names() + ")");
    }
    flavor_models_[f] = *m;
  }
  resolved_for_ = &cluster;
}

CapacityQueuesPlugin::Running CapacityQueuesPlugin::make_running(int queue, const std::vector<int>& flavors,
                                                                 std::span<const std::int64_t> charge) const {
  Running r;
  r.queue = queue;
  const auto& q = nodes_[static_cast<std::size_t>(queue)];
  for (std::size_t g = 0; g < q.groups.size() && g < flavors.size(); ++g) {
    if (flavors[g] < 0) continue;
    for (const auto res : q.groups[g].covered) {
      if (charge[res] > 0) r.charged.emplace_back(fr(static_cast<std::uint32_t>(flavors[g]), res), charge[res]);
    }
  }
  return r;
}

Status CapacityQueuesPlugin::pre_filter(const ClusterState& cluster, TaskContext& ctx) {
  if (ctx.task_index != 0 && decided_job_ == ctx.job_id) return Status::success();   // task 0 admitted the job
  resolve(cluster);
  cluster_ = &cluster;
  decided_job_ = ctx.job_id;
  decided_models_.clear();
  const int q = queue_of(ctx.job);
  decided_queue_ = q;
  decided_flavors_.clear();
  if (q < 0) {
    // No ClusterQueue configured at all (e.g. the bare kueue-cohorts preset): nothing to enforce.
    if (local_queues_.empty()) return Status::success();
    return Status::unresolvable(name_, intern("no ClusterQueue for queue \"" + ctx.job.queue +
                                              "\" (not a ClusterQueue, not in any local_queues, and no default_queue)"));
  }
  charge_.assign(resources_.size(), 0);
  resources_.charge(&cluster, ctx.job, ctx.job.tasks, charge_);
  const auto& node = nodes_[static_cast<std::size_t>(q)];
  switch (assign(q, ctx.job, charge_, decided_flavors_)) {
    case Fit::kNoFlavor: return Status::unresolvable(name_, node.no_flavor_reason);
    case Fit::kTooBig: return Status::unresolvable(name_, node.too_big_reason);
    case Fit::kNoRoom: return Status::unschedulable(name_, node.no_room_reason);
    case Fit::kFits: break;
  }
  for (const int f : decided_flavors_) {
    if (f < 0) continue;
    const auto m = flavor_models_[static_cast<std::size_t>(f)];
    if (m.valid() && std::find(decided_models_.begin(), decided_models_.end(), m) == decided_models_.end()) {
      decided_models_.push_back(m);
    }
  }
  return Status::success();
}

void CapacityQueuesPlugin::index_key(std::vector<std::uint64_t>& key) const {
  // filter() reads decided_models_ in order (the first missing model names the reason).
  key.push_back(decided_models_.size());
  for (const auto m : decided_models_) key.push_back(m.value);
}

Status CapacityQueuesPlugin::filter(const ClusterState& cluster, const TaskContext&, NodeId node) const {
  if (decided_models_.empty()) return Status::success();
  const auto& s = cluster.node(node);
  for (const auto m : decided_models_) {
    bool has = s.model == m;
    if (!has && !s.model.valid()) {
      for (const auto& g : cluster.gpus(node)) {
        if (g.model == m) {
          has = true;
          break;
        }
      }
    }
    if (!has) {
      for (std::size_t f = 0; f < flavor_models_.size(); ++f) {
        if (flavor_models_[f] == m) return Status::unschedulable(name_, flavor_reasons_[f]);
      }
    }
  }
  return Status::success();
}

Status CapacityQueuesPlugin::post_filter(ClusterState& cluster, const JobSpec& job, JobId /*id*/, Statement& st,
                                         std::vector<JobId>& victims, const FitsFn& fits) {
  const int q = queue_of(job);
  if (q < 0 || jobs_ == nullptr) return Status::unschedulable(name_, "no ClusterQueue or no view of running jobs: nothing to reclaim");
  if (job.constraints.preempt_never) return Status::unschedulable(name_, "preemptionPolicy Never: the job does not reclaim");
  const Node& qn = nodes_[static_cast<std::size_t>(q)];
  if (qn.reclaim == QueuePreemption::kNever && qn.within == QueuePreemption::kNever) {
    return Status::unschedulable(name_, "the ClusterQueue's preemption policies are Never");
  }
  charge_.assign(resources_.size(), 0);
  resources_.charge(cluster_, job, job.tasks, charge_);
  std::vector<int> flavors;
  if (!assign_for_preemption(q, job, charge_, flavors)) {
    return Status::unschedulable(name_, "the job does not fit within its ClusterQueue's nominal quota in any flavor: nothing to preempt");
  }
  // The job's request per flavor-resource, and the ones needing preemption (Kueue's
  // resourcesRequiringPreemption: no room in the assigned flavor).
  const std::size_t frs = flavor_names_.size() * resources_.size();
  std::vector<std::pair<std::size_t, std::int64_t>> request;
  std::vector<std::uint8_t> needed(frs, 0);
  for (std::size_t g = 0; g < flavors.size(); ++g) {
    if (flavors[g] < 0) continue;
    for (const auto r : qn.groups[g].covered) {
      if (charge_[r] == 0) continue;
      const auto k = fr(static_cast<std::uint32_t>(flavors[g]), r);
      request.emplace_back(k, charge_[r]);
      if (charge_[r] > available_at(q, k)) needed[k] = 1;
    }
  }
  // The quota has room but the nodes are held: only other queues' borrowing jobs are in the way.
  const bool nodes_only = std::none_of(needed.begin(), needed.end(), [](std::uint8_t n) { return n != 0; });
  if (nodes_only) {
    for (const auto& [k, c] : request) needed[k] = 1;
  }
  auto borrowing = [&](const Node& n) {   // Kueue cqIsBorrowing
    if (n.parent < 0) return false;
    for (std::size_t k = 0; k < frs; ++k) {
      if (needed[k] != 0 && n.usage[k] > n.nominal[k]) return true;
    }
    return false;
  };
  auto uses_needed = [&](JobId j) {
    return std::any_of(running_[j.value].charged.begin(), running_[j.value].charged.end(),
                       [&](const auto& c) { return needed[c.first] != 0 && c.second > 0; });
  };
  auto eligible = [&](JobId j, bool lower_only) {
    if (running_[j.value].evicting) return false;
    const auto& spec = jobs_->spec(j);
    return spec.constraints.preemptible && (!lower_only || spec.priority < job.priority) && uses_needed(j);
  };
  // Kueue findCandidates.
  struct Candidate {
    JobId id;
    bool own;
    std::int32_t priority;
    SimTime started;
  };
  std::vector<Candidate> candidates;
  if (qn.within == QueuePreemption::kLowerPriority && !nodes_only) {
    for (const JobId j : qn.running) {
      if (eligible(j, true)) candidates.push_back({j, true, jobs_->spec(j).priority, jobs_->started(j)});
    }
  }
  if (qn.parent >= 0 && qn.reclaim != QueuePreemption::kNever) {
    for (std::size_t p = 0; p < nodes_.size(); ++p) {
      const auto& other = nodes_[p];
      if (!other.is_queue || static_cast<int>(p) == q || other.root != qn.root || !borrowing(other)) continue;
      for (const JobId j : other.running) {
        if (eligible(j, qn.reclaim == QueuePreemption::kLowerPriority)) {
          candidates.push_back({j, false, jobs_->spec(j).priority, jobs_->started(j)});
        }
      }
    }
  }
  if (candidates.empty()) return Status::unschedulable(name_, "no running job may be preempted for this job");
  // Kueue candidatesOrdering: other queues first, lower priority first, most recently admitted first.
  std::sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
    if (a.own != b.own) return !a.own;
    if (a.priority != b.priority) return a.priority < b.priority;
    if (a.started != b.started) return a.started > b.started;
    return a.id > b.id;
  });

  // Kueue workloadFits, plus a placement on the nodes as they would be.
  auto job_fits = [&](bool allow_borrowing) {
    for (const auto& [k, c] : request) {
      if (!allow_borrowing && qn.usage[k] + c > qn.nominal[k]) return false;
      if (c > available_at(q, k)) return false;
    }
    return fits({});
  };
  // A what-if eviction of a running job, on the nodes (through `sim`) and on the quotas; and its undo.
  auto sim_take = [&](Statement& sim, JobId j) {
    for (const auto& pl : jobs_->placements(j)) sim.evict(jobs_->spec(j).request, pl);
    running_[j.value].evicting = true;
    apply(running_[j.value], -1);
  };
  auto sim_give_back = [&](Statement& sim, JobId j) {
    for (const auto& pl : jobs_->placements(j)) sim.restore(jobs_->spec(j).request, pl);
    running_[j.value].evicting = false;
    apply(running_[j.value], +1);
  };
  // Kueue minimalPreemptions + fillBackWorkloads, simulated on the cluster and the quotas and
  // undone before returning. Returns the victims, empty when the job would still not fit.
  auto minimal = [&](const std::vector<Candidate>& cands, bool allow_borrowing, std::optional<std::int32_t> below) {
    Statement sim(cluster);
    std::vector<JobId> targets;
    auto take = [&](JobId j) { sim_take(sim, j); };
    auto give_back = [&](JobId j) { sim_give_back(sim, j); };
    bool fit = false;
    for (const auto& c : cands) {
      if (!c.own) {
        if (!borrowing(nodes_[static_cast<std::size_t>(running_[c.id.value].queue)])) continue;
        // borrowWithinCohort: a victim at or above the threshold means the job must not borrow.
        if (below && c.priority >= *below) allow_borrowing = false;
      }
      take(c.id);
      targets.push_back(c.id);
      if (job_fits(allow_borrowing)) {
        fit = true;
        break;
      }
    }
    if (fit) {
      // Put back, newest pick first (the last one stays), every victim the job fits without.
      for (std::size_t i = targets.size() - 1; i-- > 0;) {
        give_back(targets[i]);
        if (job_fits(allow_borrowing)) {
          targets[i] = targets.back();
          targets.pop_back();
        } else {
          take(targets[i]);
        }
      }
    }
    for (const JobId j : targets) {   // undo the simulation's quota changes; `sim` undoes the nodes
      running_[j.value].evicting = false;
      apply(running_[j.value], +1);
    }
    if (!fit) targets.clear();
    return targets;
  };

  // Kueue fairPreemptionStrategy: candidates offered per target ClusterQueue, highest DRS first,
  // filtered by the fair-sharing strategies; then the same put-back as minimalPreemptions.
  auto fair = [&]() {
    Statement sim(cluster);
    std::vector<JobId> targets;
    auto take = [&](JobId j) { sim_take(sim, j); };
    auto give_back = [&](JobId j) { sim_give_back(sim, j); };
    // The job's usage, simulated in its queue's share (Kueue SimulateUsageAddition).
    std::vector<std::int64_t> with_job(frs, 0);
    for (const auto& [k, c] : request) with_job[k] += c;
    std::vector<std::deque<JobId>> per(nodes_.size());
    for (const auto& c : candidates) per[static_cast<std::size_t>(running_[c.id.value].queue)].push_back(c.id);
    std::vector<std::uint8_t> pruned;
    // TargetClusterQueueOrdering.nextTarget, for the ClusterQueues of the preemptor's tree.
    auto next_target = [&]() {
      int best = -1;
      std::int64_t best_drs = -1;
      for (std::size_t p = 0; p < nodes_.size(); ++p) {
        const auto& n = nodes_[p];
        if (!n.is_queue || n.root != qn.root || pruned[p] != 0) continue;
        const bool self = static_cast<int>(p) == q;
        const std::int64_t d = self ? drs(q, &with_job) : drs(static_cast<int>(p), nullptr);
        if ((d == 0 && !self) || per[p].empty()) {
          pruned[p] = 1;
        } else if (d >= best_drs) {
          best_drs = d;
          best = static_cast<int>(p);
        }
      }
      return best;
    };
    auto pop = [&](int p) {
      const JobId j = per[static_cast<std::size_t>(p)].front();
      per[static_cast<std::size_t>(p)].pop_front();
      return j;
    };
    bool fit = false;
    auto offer = [&](JobId j) {   // the consumer: take until the job fits
      take(j);
      targets.push_back(j);
      fit = job_fits(true);
      return fit;
    };
    constexpr auto kInf = std::numeric_limits<std::int64_t>::max();
    std::vector<std::int64_t> without(frs, 0);
    // First strategy, per candidate.
    const FairStrategy first = strategies_.front();
    std::vector<std::deque<JobId>> retry(nodes_.size());
    pruned.assign(nodes_.size(), 0);
    for (int p = next_target(); p >= 0 && !fit; p = next_target()) {
      if (p == q) {   // the preemptor's own candidates (withinClusterQueue)
        offer(pop(p));
        continue;
      }
      const std::int64_t preemptor_new = drs(q, &with_job);
      const std::int64_t target_old = drs(p, nullptr);
      if (preemptor_new == kInf && target_old != kInf) {   // fsStrategyUnsatisfiable
        while (!per[static_cast<std::size_t>(p)].empty()) retry[static_cast<std::size_t>(p)].push_back(pop(p));
        continue;
      }
      while (!per[static_cast<std::size_t>(p)].empty()) {
        const JobId j = pop(p);
        bool passed = false;
        if (first == FairStrategy::kLessThanInitialShare) {
          passed = preemptor_new < target_old;
        } else {
          std::fill(without.begin(), without.end(), 0);
          for (const auto& [k, c] : running_[j.value].charged) without[k] -= c;
          passed = preemptor_new <= drs(p, &without);
        }
        if (passed) {
          offer(j);
          break;   // shares changed: pick the target ClusterQueue again
        }
        retry[static_cast<std::size_t>(p)].push_back(j);
      }
    }
    // Second strategy (LessThanInitialShare), once per target ClusterQueue, on the kept candidates.
    if (!fit && strategies_.size() > 1) {
      per = std::move(retry);
      pruned.assign(nodes_.size(), 0);
      for (int p = next_target(); p >= 0 && !fit; p = next_target()) {
        const bool passed = drs(q, &with_job) < drs(p, nullptr);
        const JobId j = pop(p);
        if (passed) offer(j);
        pruned[static_cast<std::size_t>(p)] = 1;
      }
    }
    if (fit) {
      for (std::size_t i = targets.size() - 1; i-- > 0;) {
        give_back(targets[i]);
        if (job_fits(true)) {
          targets[i] = targets.back();
          targets.pop_back();
        } else {
          take(targets[i]);
        }
      }
    }
    for (const JobId j : targets) {
      running_[j.value].evicting = false;
      apply(running_[j.value], +1);
    }
    if (!fit) targets.clear();
    return targets;
  };

  std::vector<Candidate> own;
  std::copy_if(candidates.begin(), candidates.end(), std::back_inserter(own), [](const Candidate& c) { return c.own; });
  auto under_nominal = [&] {   // Kueue queueUnderNominalInResourcesNeedingPreemption
    for (std::size_t k = 0; k < frs; ++k) {
      if (needed[k] != 0 && qn.usage[k] >= qn.nominal[k]) return false;
    }
    return true;
  };
  std::vector<JobId> targets;
  if (fair_) {
    targets = fair();
  } else if (own.size() == candidates.size()) {
    targets = minimal(candidates, true, std::nullopt);
  } else if (qn.borrow_within) {
    // Kueue canBorrowWithinCohort: victims of other queues below the job's priority, or below
    // max_priority_threshold + 1 when that is lower.
    std::int32_t threshold = job.priority;
    if (qn.borrow_threshold && *qn.borrow_threshold < threshold) threshold = *qn.borrow_threshold + 1;
    if (!under_nominal()) {
      std::erase_if(candidates, [&](const Candidate& c) { return !c.own && c.priority >= threshold; });
    }
    targets = minimal(candidates, true, threshold);
  } else {
    // Held nodes alone: reclaim only for a job its queue's nominal quota covers, as Kueue
    // reclaims (no borrowing after the evictions), so two queues never evict each other in turn.
    if (under_nominal() || nodes_only) targets = minimal(candidates, false, std::nullopt);
    if (targets.empty()) targets = minimal(own, true, std::nullopt);
  }
  if (targets.empty()) return Status::unschedulable(name_, "preempting the candidates would not make room");
  for (const JobId j : targets) {
    const auto& spec = jobs_->spec(j);
    for (const auto& pl : jobs_->placements(j)) st.evict(spec.request, pl);
    running_[j.value].evicting = true;
    apply(running_[j.value], -1);
    st.on_rollback([this, j] {
      auto& rr = running_[j.value];
      rr.evicting = false;
      apply(rr, +1);
    });
    victims.push_back(j);
  }
  return Status::success();
}

std::int64_t CapacityQueuesPlugin::drs(int queue, const std::vector<std::int64_t>* delta) const {
  // Kueue dominantResourceShare: borrowing per resource (above nominal, summed over flavors)
  // x 1000 / what the cohort tree can lend of it; the largest; x 1000 / weight (milli).
  const Node& n = nodes_[static_cast<std::size_t>(queue)];
  if (n.parent < 0) return 0;
  const std::size_t nr = resources_.size();
  const std::size_t frs = flavor_names_.size() * nr;
  std::vector<std::int64_t> borrowing(nr, 0);
  bool any = false;
  for (std::size_t k = 0; k < frs; ++k) {
    const std::int64_t b = n.usage[k] + (delta != nullptr ? (*delta)[k] : 0) - n.quota[k];
    if (b > 0) {
      borrowing[k % nr] += b;
      any = true;
    }
  }
  if (!any) return 0;
  if (n.weight_milli == 0) return std::numeric_limits<std::int64_t>::max();
  // What the cohort tree could lend: the root's pooled quota (cohorts have no quota or limits
  // of their own here, so every cohort of the tree can reach all of it).
  const Node& root = nodes_[static_cast<std::size_t>(n.root)];
  std::int64_t best = -1;
  for (std::size_t r = 0; r < nr; ++r) {
    if (borrowing[r] <= 0) continue;
    std::int64_t lendable = 0;
    for (std::size_t f = 0; f < flavor_names_.size(); ++f) lendable += root.quota[f * nr + r];
    if (lendable > 0) best = std::max(best, borrowing[r] * 1000 / lendable);
  }
  if (best < 0) return 0;
  return best * 1000 / n.weight_milli;
}

std::int64_t CapacityQueuesPlugin::dominant_resource_share(std::string_view queue) const {
  const int n = find_node(queue);
  return (n < 0 || !nodes_[static_cast<std::size_t>(n)].is_queue) ? 0 : drs(n, nullptr);
}

void CapacityQueuesPlugin::bound_to(std::span<const std::string_view> hooks) {
  at_queue_sort_ = std::find(hooks.begin(), hooks.end(), std::string_view("queue_sort")) != hooks.end();
  if (fair_ && !at_queue_sort_) {
    warn(name_ + ": fair_sharing is enabled but the plugin is not the queue sort: preemption follows the shares, the "
                 "admission order does not (list \"" + name_ + "\" at queue_sort too)");
  }
}

void CapacityQueuesPlugin::charged_for(int queue, const JobSpec& job, std::vector<std::pair<std::size_t, std::int64_t>>& out) const {
  out.clear();
  scratch_charge_.assign(resources_.size(), 0);
  resources_.charge(cluster_, job, job.tasks, scratch_charge_);
  std::vector<int> flavors;
  if (assign(queue, job, scratch_charge_, flavors) != Fit::kFits && !assign_for_preemption(queue, job, scratch_charge_, flavors)) {
    return;
  }
  const auto& q = nodes_[static_cast<std::size_t>(queue)];
  for (std::size_t g = 0; g < q.groups.size() && g < flavors.size(); ++g) {
    if (flavors[g] < 0) continue;
    for (const auto r : q.groups[g].covered) {
      if (scratch_charge_[r] > 0) out.emplace_back(fr(static_cast<std::uint32_t>(flavors[g]), r), scratch_charge_[r]);
    }
  }
}

void CapacityQueuesPlugin::refresh_keys() const {
  const SimTime now = jobs_ != nullptr ? jobs_->now() : SimTime::forever();
  if (keyed_ && keyed_at_ == now && keyed_generation_ == generation_) return;
  keyed_ = true;
  keyed_at_ = now;
  keyed_generation_ = generation_;
  key_.assign(workload_.size(), -1);
  // Waiting jobs per ClusterQueue, in Kueue's queue order (priority, then creation).
  while (arrived_ < by_submit_.size() && workload_[by_submit_[arrived_]].submit <= now) {
    const auto j = by_submit_[arrived_++];
    if (left_[j] == 0 && !(j < running_.size() && running_[j].queue >= 0)) waiting_.insert(j);
  }
  std::vector<std::vector<std::uint32_t>> waiting(nodes_.size());
  for (const auto j : waiting_) {
    const int q = queue_of(workload_[j]);
    if (q >= 0) waiting[static_cast<std::size_t>(q)].push_back(j);
  }
  const std::size_t frs = flavor_names_.size() * resources_.size();
  std::vector<std::int64_t> acc;
  std::vector<std::pair<std::size_t, std::int64_t>> charged;
  for (std::size_t q = 0; q < nodes_.size(); ++q) {
    auto& list = waiting[q];
    if (list.empty()) continue;
    std::sort(list.begin(), list.end(), [&](std::uint32_t a, std::uint32_t b) {
      const auto& x = workload_[a];
      const auto& y = workload_[b];
      if (x.priority != y.priority) return x.priority > y.priority;
      if (x.submit != y.submit) return x.submit < y.submit;
      return a < b;
    });
    acc.assign(frs, 0);
    for (const auto j : list) {
      charged_for(static_cast<int>(q), workload_[j], charged);
      for (const auto& [k, c] : charged) acc[k] += c;
      key_[j] = drs(static_cast<int>(q), &acc);
    }
  }
}

bool CapacityQueuesPlugin::less(const JobSpec& a, JobId ia, const JobSpec& b, JobId ib) const {
  if (fair_ && cluster_ != nullptr) {
    refresh_keys();
    auto key = [&](const JobSpec& job, JobId id) -> std::int64_t {
      if (id.value < key_.size() && key_[id.value] >= 0 && &workload_[id.value] == &job) return key_[id.value];
      if (id.value < key_.size() && key_[id.value] >= 0 && workload_[id.value].name == job.name) return key_[id.value];
      const int q = queue_of(job);   // not a waiting job of the workload: its own request only
      if (q < 0) return 0;
      std::vector<std::pair<std::size_t, std::int64_t>> charged;
      charged_for(q, job, charged);
      std::vector<std::int64_t> delta(flavor_names_.size() * resources_.size(), 0);
      for (const auto& [k, c] : charged) delta[k] += c;
      return drs(q, &delta);
    };
    const std::int64_t ka = key(a, ia), kb = key(b, ib);
    if (ka != kb) return ka < kb;
  }
  if (a.priority != b.priority) return a.priority > b.priority;
  if (a.submit != b.submit) return a.submit < b.submit;
  return ia < ib;
}

void CapacityQueuesPlugin::attach(const ClusterState& cluster, std::span<const JobSpec> workload, const JobsView* jobs) {
  resolve(cluster);
  cluster_ = &cluster;
  jobs_ = jobs;
  workload_ = workload;
  left_.assign(workload.size(), 0);
  by_submit_.resize(workload.size());
  std::iota(by_submit_.begin(), by_submit_.end(), 0U);
  std::stable_sort(by_submit_.begin(), by_submit_.end(),
                   [&](std::uint32_t a, std::uint32_t b) { return workload[a].submit < workload[b].submit; });
  arrived_ = 0;
  waiting_.clear();
  keyed_ = false;
  ++generation_;
  running_.assign(workload.size(), {});
  for (auto& n : nodes_) {
    std::fill(n.usage.begin(), n.usage.end(), 0);
    n.running.clear();
  }
}

void CapacityQueuesPlugin::job_started(const JobSpec& job, JobId id, std::span<const TaskPlacement> placements) {
  const int q = queue_of(job);
  if (q < 0) return;
  if (running_.size() <= id.value) running_.resize(id.value + 1);
  std::vector<int> flavors;
  charge_.assign(resources_.size(), 0);
  resources_.charge(cluster_, job, job.tasks, charge_);
  if (decided_job_ == id && decided_queue_ == q) {
    flavors = decided_flavors_;
  } else if (assign(q, job, charge_, flavors) != Fit::kFits) {
    // Started without our admission (a caller bypassing schedule()): first allowed flavor.
    const auto& node = nodes_[static_cast<std::size_t>(q)];
    flavors.assign(node.groups.size(), -1);
    for (std::size_t g = 0; g < node.groups.size(); ++g) {
      for (const auto f : node.groups[g].flavors) {
        if (flavor_allows(f, job.request)) {
          flavors[g] = static_cast<int>(f);
          break;
        }
      }
    }
  }
  if (!placements.empty() && static_cast<std::int32_t>(placements.size()) != job.tasks) {
    charge_.assign(resources_.size(), 0);   // a gang started with fewer tasks: charge what runs
    resources_.charge(cluster_, job, static_cast<std::int64_t>(placements.size()), charge_);
  }
  Running r = make_running(q, flavors, charge_);
  apply(r, +1);
  nodes_[static_cast<std::size_t>(q)].running.push_back(id);
  running_[id.value] = std::move(r);
  waiting_.erase(id.value);
  ++generation_;
}

void CapacityQueuesPlugin::job_stopped(const JobSpec&, JobId id, std::span<const TaskPlacement>) {
  if (id.value >= running_.size() || running_[id.value].queue < 0) return;
  auto& r = running_[id.value];
  if (!r.evicting) apply(r, -1);
  std::erase(nodes_[static_cast<std::size_t>(r.queue)].running, id);
  r = Running{};
  // Waiting again (requeued) unless it leaves for good: the engine calls job_left right after.
  if (id.value < left_.size() && left_[id.value] == 0) waiting_.insert(id.value);
  ++generation_;
}

void CapacityQueuesPlugin::job_left(const JobSpec&, JobId id) {
  if (id.value < left_.size()) left_[id.value] = 1;
  waiting_.erase(id.value);
  ++generation_;
}

int CapacityQueuesPlugin::find_node(std::string_view n) const {
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    if (nodes_[i].name == n) return static_cast<int>(i);
  }
  return -1;
}

std::optional<std::size_t> CapacityQueuesPlugin::find_fr(std::string_view flavor, std::string_view resource) const {
  const auto r = resources_.find(quota::QuotaResources::canonical(resource, {}));
  for (std::uint32_t f = 0; f < flavor_names_.size(); ++f) {
    if (flavor_names_[f] == flavor && r) return fr(f, *r);
  }
  return std::nullopt;
}

std::int64_t CapacityQueuesPlugin::usage(std::string_view node, std::string_view flavor, std::string_view resource) const {
  const int n = find_node(node);
  const auto k = find_fr(flavor, resource);
  return (n < 0 || !k) ? 0 : nodes_[static_cast<std::size_t>(n)].usage[*k];
}

std::int64_t CapacityQueuesPlugin::available(std::string_view queue, std::string_view flavor, std::string_view resource) const {
  const int n = find_node(queue);
  const auto k = find_fr(flavor, resource);
  return (n < 0 || !k || !nodes_[static_cast<std::size_t>(n)].is_queue) ? 0 : available_at(n, *k);
}

std::int64_t CapacityQueuesPlugin::ceiling(std::string_view queue, std::string_view flavor, std::string_view resource) const {
  const int n = find_node(queue);
  const auto k = find_fr(flavor, resource);
  return (n < 0 || !k) ? 0 : nodes_[static_cast<std::size_t>(n)].ceiling[*k];
}

std::string CapacityQueuesPlugin::cluster_queue_of(const std::string& job_queue) const {
  const auto it = local_queues_.find(job_queue);
  const int n = it != local_queues_.end() ? it->second : default_queue_;
  return n < 0 ? std::string() : nodes_[static_cast<std::size_t>(n)].name;
}

}  // namespace gpusched::policies
