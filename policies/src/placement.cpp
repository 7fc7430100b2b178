// Placement-constraint plugins: taints and tolerations, node affinity, app maximum per node,
// topology spread and GPU-topology scoring (Kubernetes TaintToleration, NodeAffinity,
// InterPodAffinity-as-a-count, PodTopologySpread).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include <gpusched/constraints.hpp>
#include <gpusched/policies/placement/app_max_per_node.hpp>
#include <gpusched/policies/placement/gpu_topology.hpp>
#include <gpusched/policies/placement/node_affinity.hpp>
#include <gpusched/policies/placement/node_unschedulable.hpp>
#include <gpusched/policies/placement/taint_toleration.hpp>
#include <gpusched/policies/placement/topology_spread.hpp>
#include <gpusched/topology.hpp>

#include "builtin_plugins.hpp"

namespace gpusched::policies {

namespace {

constexpr std::int64_t kMaxNodeScore = 100;

/// Kubernetes DefaultNormalizeScore over integer raw scores (>= 0): 100 * s / max, or
/// 100 - that when `reverse`; when max is 0: all 100 if `reverse`, else unchanged (0).
void default_normalize(std::span<double> scores, bool reverse) {
  std::int64_t max = 0;
  for (double s : scores) max = std::max(max, static_cast<std::int64_t>(s));
  if (max == 0) {
    if (reverse) std::fill(scores.begin(), scores.end(), static_cast<double>(kMaxNodeScore));
    return;
  }
  for (auto& s : scores) {
    const std::int64_t v = kMaxNodeScore * static_cast<std::int64_t>(s) / max;
    s = static_cast<double>(reverse ? kMaxNodeScore - v : v);
  }
}

}  // namespace

// ---------------------------------------------------------------- node-unschedulable

Status NodeUnschedulablePlugin::filter(const ClusterState& cluster, const TaskContext& ctx, NodeId node) const {
  for (const auto& t : cluster.spec(node).taints) {
    if (t.key != kTaintKey || t.effect != TaintEffect::kNoSchedule) continue;
    // As the peer: a job that tolerates the unschedulable taint tolerates the cordon.
    static const Taint cordon{std::string(kTaintKey), "", TaintEffect::kNoSchedule};
    if (tolerated(ctx.job.constraints.tolerations, cordon)) return Status::success();
    return Status::unresolvable(name(), "node(s) were unschedulable");
  }
  return Status::success();
}

// ---------------------------------------------------------------- taint-toleration

Status TaintTolerationPlugin::filter(const ClusterState& cluster, const TaskContext& ctx, NodeId node) const {
  const auto& taints = cluster.spec(node).taints;
  if (taints.empty()) return Status::success();
  const auto& tols = ctx.job.constraints.tolerations;
  // A NoSchedule / NoExecute taint that nothing tolerates, worded as kube-scheduler's current
  // TaintToleration words it (older releases named the taint: "{key: value}").
  for (const auto& t : taints) {
    if (t.effect == TaintEffect::kPreferNoSchedule || tolerated(tols, t)) continue;
    return Status::unresolvable(name(), "node(s) had untolerated taint(s)");
  }
  return Status::success();
}

double TaintTolerationPlugin::score(const ClusterState& cluster, const TaskContext& ctx, NodeId node) {
  const auto& taints = cluster.spec(node).taints;
  if (taints.empty()) return 0.0;
  return count_untolerated(ctx.job.constraints.tolerations, taints, TaintEffect::kPreferNoSchedule);
}

void TaintTolerationPlugin::normalize(std::span<double> scores) const { default_normalize(scores, true); }

// ---------------------------------------------------------------- node-affinity

namespace {
/// The index and stamp of the task's entry in NodeAffinityPlugin::rules_.
const StateKey<std::pair<std::size_t, std::uint64_t>> kAffinityRules{"node-affinity/rules"};
}  // namespace

NodeAffinityPlugin::Rules& NodeAffinityPlugin::rules(const ClusterState& cluster, const TaskContext& ctx) const {
  if (cluster_ != &cluster || nodes_ != cluster.node_count()) {
    cluster_ = &cluster;
    nodes_ = cluster.node_count();
    rules_.clear();
    next_ = 0;
  }
  if (const auto* at = ctx.state.read(kAffinityRules); at && at->first < rules_.size() && rules_[at->first].stamp == at->second) {
    return rules_[at->first];
  }
  const auto& c = ctx.job.constraints;
  std::size_t i = 0;
  while (i < rules_.size() && !(rules_[i].selector == c.node_selector && rules_[i].required == c.affinity.required &&
                                rules_[i].preferred == c.affinity.preferred)) {
    ++i;
  }
  if (i == rules_.size()) {
    if (rules_.size() < kMaxRules) {
      rules_.emplace_back();
    } else {
      i = next_;
      next_ = (next_ + 1) % kMaxRules;
    }
    auto& r = rules_[i];
    r.selector = c.node_selector;
    r.required = c.affinity.required;
    r.preferred = c.affinity.preferred;
    r.matches.assign(nodes_, -1);
    r.weights.assign(nodes_, -1);
    r.stamp = ++stamps_;
  }
  ctx.state.write(kAffinityRules, std::pair{i, rules_[i].stamp});
  return rules_[i];
}

void NodeAffinityPlugin::attach(const ClusterState& /*cluster*/, std::span<const JobSpec> /*workload*/, const JobsView* /*jobs*/) {
  cluster_ = nullptr;
  rules_.clear();
}

Status NodeAffinityPlugin::filter(const ClusterState& cluster, const TaskContext& ctx, NodeId node) const {
  const auto& c = ctx.job.constraints;
  if (c.node_selector.empty() && c.affinity.required.empty()) return Status::success();
  auto& m = rules(cluster, ctx).matches[node.value];
  if (m < 0) m = node_matches(c, cluster.spec(node).labels) ? 1 : 0;
  if (m != 0) return Status::success();
  return Status::unresolvable(name(), "node(s) didn't match Pod's node affinity/selector");
}

double NodeAffinityPlugin::score(const ClusterState& cluster, const TaskContext& ctx, NodeId node) {
  const auto& a = ctx.job.constraints.affinity;
  if (a.preferred.empty()) return 0.0;
  auto& w = rules(cluster, ctx).weights[node.value];
  if (w < 0) w = static_cast<std::int32_t>(preferred_weight(a, cluster.spec(node).labels));
  return static_cast<double>(w);
}

void NodeAffinityPlugin::normalize(std::span<double> scores) const { default_normalize(scores, false); }

// ---------------------------------------------------------------- app-max-per-node

namespace {
/// Tasks per (running job, node) of the jobs with many tasks, built once per task on demand.
struct RunningTaskIndex {
  std::unordered_set<std::uint32_t> indexed;                 // job ids
  std::unordered_map<std::uint64_t, std::int32_t> tasks;     // (job << 32 | node) -> tasks
};
const StateKey<RunningTaskIndex> kRunningTasks{"app-max-per-node/running-tasks"};
/// A running job with at most this many tasks is scanned; a larger one is indexed.
constexpr std::size_t kScanTasks = 16;

std::int32_t running_tasks_on(const JobsView& jobs, JobId j, NodeId node, CycleState& state) {
  const auto placements = jobs.placements(j);
  if (placements.size() <= kScanTasks) {
    return static_cast<std::int32_t>(
        std::count_if(placements.begin(), placements.end(), [&](const TaskPlacement& p) { return p.node == node; }));
  }
  auto* index = state.read(kRunningTasks);
  if (!index) index = &state.write(kRunningTasks, RunningTaskIndex{});
  auto key = [&](NodeId n) { return (std::uint64_t{j.value} << 32) | n.value; };
  if (index->indexed.insert(j.value).second) {
    for (const auto& p : placements) ++index->tasks[key(p.node)];
  }
  const auto it = index->tasks.find(key(node));
  return it == index->tasks.end() ? 0 : it->second;
}
}  // namespace

Status AppMaxPerNodePlugin::filter(const ClusterState& /*cluster*/, const TaskContext& ctx, NodeId node) const {
  const auto& c = ctx.job.constraints;
  if (c.app.empty()) return Status::success();
  std::int32_t limit = c.max_per_node;   // 0: none
  std::int32_t tasks = 0;
  for (const auto& p : ctx.placed) tasks += p.node == node ? 1 : 0;
  if (ctx.jobs) {
    for (const JobId j : ctx.jobs->running_on(node)) {
      const auto& other = ctx.jobs->spec(j).constraints;
      if (other.app != c.app) continue;
      if (other.max_per_node > 0 && (limit == 0 || other.max_per_node < limit)) limit = other.max_per_node;
      tasks += running_tasks_on(*ctx.jobs, j, node, ctx.state);
    }
  }
  if (limit > 0 && tasks + 1 > limit) return Status::unschedulable(name(), "node(s) already run max_per_node tasks of the app");
  return Status::success();
}

// ---------------------------------------------------------------- topology-spread

namespace {
const StateKey<TopologySpreadPlugin::Counts> kSpreadCounts{"topology-spread/counts"};
}  // namespace

void TopologySpreadPlugin::attach(const ClusterState& /*cluster*/, std::span<const JobSpec> /*workload*/, const JobsView* /*jobs*/) {
  domains_ = {};
  running_ = {};
}

const TopologySpreadPlugin::Domains& TopologySpreadPlugin::domains(const ClusterState& cluster) const {
  if (domains_.cluster == &cluster && domains_.nodes == cluster.node_count()) return domains_;
  domains_.cluster = &cluster;
  domains_.nodes = cluster.node_count();
  domains_.of_node.assign(cluster.node_count(), -1);
  std::unordered_map<std::string, std::int32_t> ids;
  for (std::uint32_t i = 0; i < cluster.node_count(); ++i) {
    const auto& labels = cluster.spec(NodeId{i}).labels;
    const auto it = labels.find(key_);
    if (it == labels.end()) continue;
    domains_.of_node[i] = ids.try_emplace(it->second, static_cast<std::int32_t>(ids.size())).first->second;
  }
  domains_.count = ids.size();
  return domains_;
}

const TopologySpreadPlugin::Running& TopologySpreadPlugin::running(const ClusterState& cluster, const TaskContext& ctx) const {
  auto& r = running_;
  if (ctx.task_index > 0 && r.cluster == &cluster && r.job == &ctx.job && r.job_id == ctx.job_id && r.jobs == ctx.jobs) {
    return r;
  }
  const auto& d = domains(cluster);
  const auto& jc = ctx.job.constraints;
  r.cluster = &cluster;
  r.job = &ctx.job;
  r.job_id = ctx.job_id;
  r.jobs = ctx.jobs;
  r.per_domain.assign(d.count, 0);
  // Eligible nodes: with the key, and (nodeAffinityPolicy: Honor) passing the job's
  // nodeSelector and required node affinity. Without those, every node with the key.
  r.filtered = !jc.node_selector.empty() || !jc.affinity.required.empty();
  r.eligible_domain.assign(d.count, r.filtered ? 0 : 1);
  r.eligible_node.clear();
  if (r.filtered) {
    r.eligible_node.assign(d.nodes, 0);
    for (std::uint32_t i = 0; i < d.nodes; ++i) {
      const auto dom = d.of_node[i];
      if (dom < 0 || !node_matches(jc, cluster.spec(NodeId{i}).labels)) continue;
      r.eligible_node[i] = 1;
      r.eligible_domain[static_cast<std::size_t>(dom)] = 1;
    }
  }
  if (!jc.app.empty() && ctx.jobs) {
    // Tasks of running jobs of the app, in the job's namespace (its queue), on the eligible
    // nodes: a constraint's labelSelector matches pods of the pod's own namespace only
    // (kubernetes podtopologyspread/common.go; filtering_test.go "existing pods in a different
    // namespace do not count").
    for (std::uint32_t i = 0; i < d.nodes; ++i) {
      const auto dom = d.of_node[i];
      if (dom < 0 || (r.filtered && !r.eligible_node[i])) continue;
      for (const JobId j : ctx.jobs->running_on(NodeId{i})) {
        const auto& other = ctx.jobs->spec(j);
        if (other.constraints.app != jc.app || other.queue != ctx.job.queue) continue;
        r.per_domain[static_cast<std::size_t>(dom)] += running_tasks_on(*ctx.jobs, j, NodeId{i}, ctx.state);
      }
    }
  }
  return r;
}

TopologySpreadPlugin::Counts& TopologySpreadPlugin::counts(const ClusterState& cluster, const TaskContext& ctx) const {
  if (auto* c = ctx.state.read(kSpreadCounts)) return *c;
  const auto& d = domains(cluster);
  const auto& r = running(cluster, ctx);
  Counts c;
  c.per_domain = r.per_domain;
  // This job's earlier tasks match its own selector.
  for (const auto& p : ctx.placed) {
    const auto dom = d.of_node[p.node.value];
    if (dom >= 0 && (!r.filtered || r.eligible_node[p.node.value])) ++c.per_domain[static_cast<std::size_t>(dom)];
  }
  c.min = std::numeric_limits<std::int32_t>::max();
  for (std::size_t i = 0; i < d.count; ++i) {
    if (r.eligible_domain[i]) c.min = std::min(c.min, c.per_domain[i]);
  }
  return ctx.state.write(kSpreadCounts, std::move(c));
}

Status TopologySpreadPlugin::pre_filter(const ClusterState& cluster, TaskContext& ctx) {
  if (mode_ == Mode::kDoNotSchedule) (void)counts(cluster, ctx);
  return Status::success();
}

Status TopologySpreadPlugin::filter(const ClusterState& cluster, const TaskContext& ctx, NodeId node) const {
  if (mode_ == Mode::kScheduleAnyway) return Status::success();
  const auto dom = domains(cluster).of_node[node.value];
  if (dom < 0) return Status::unresolvable(name(), "node(s) didn't match pod topology spread constraints (missing required label)");
  const auto& c = counts(cluster, ctx);
  const std::int64_t skew = std::int64_t{c.per_domain[static_cast<std::size_t>(dom)]} + 1 - c.min;
  if (skew > max_skew_) return Status::unschedulable(name(), "node(s) didn't match pod topology spread constraints");
  return Status::success();
}

double TopologySpreadPlugin::score(const ClusterState& cluster, const TaskContext& ctx, NodeId node) {
  if (mode_ == Mode::kDoNotSchedule) return 0.0;
  const auto& d = domains(cluster);
  const auto dom = d.of_node[node.value];
  if (dom < 0) return -1.0;   // ignored: 0 after normalize()
  auto& c = counts(cluster, ctx);
  const auto di = static_cast<std::size_t>(dom);
  if (c.scored.empty()) c.scored.assign(d.count, 0);
  if (!c.scored[di]) {
    c.scored[di] = 1;
    ++c.scored_domains;
  }
  last_scored_domains_ = c.scored_domains;
  return c.per_domain[di];
}

void TopologySpreadPlugin::normalize(std::span<double> scores) const {
  if (mode_ == Mode::kDoNotSchedule) return;
  // Kubernetes: weight log(domains + 2) per constraint, plus max_skew - 1, rounded.
  const double weight = std::log(static_cast<double>(last_scored_domains_) + 2.0);
  std::int64_t min = std::numeric_limits<std::int64_t>::max(), max = 0;
  for (auto& s : scores) {
    if (s < 0.0) continue;
    const auto raw = static_cast<std::int64_t>(std::llround(s * weight + static_cast<double>(max_skew_ - 1)));
    s = static_cast<double>(raw);
    min = std::min(min, raw);
    max = std::max(max, raw);
  }
  for (auto& s : scores) {
    if (s < 0.0) s = 0.0;
    else if (max == 0) s = static_cast<double>(kMaxNodeScore);
    else s = static_cast<double>(kMaxNodeScore * (max + min - static_cast<std::int64_t>(s)) / max);
  }
}

// ---------------------------------------------------------------- gpu-topology

std::size_t GpuTopologyScore::KeyHash::operator()(const Key& k) const noexcept {
  std::uint64_t h = reinterpret_cast<std::uintptr_t>(k.topology) * 0x9e3779b97f4a7c15ULL;
  h ^= k.mask + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  h ^= static_cast<std::uint64_t>(k.k) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  return static_cast<std::size_t>(h);
}

double GpuTopologyScore::link_score(GpuLink worst) {
  switch (worst) {
    case GpuLink::kSelf:
    case GpuLink::kNvlink: return 100.0;
    case GpuLink::kPcieSwitch: return 200.0 / 3.0;
    case GpuLink::kHostBridge: return 100.0 / 3.0;
    case GpuLink::kCrossSocket: return 0.0;
  }
  return 0.0;
}

void GpuTopologyScore::attach(const ClusterState& /*cluster*/, std::span<const JobSpec> /*workload*/, const JobsView* /*jobs*/) {
  cache_.clear();
}

double GpuTopologyScore::score(const ClusterState& cluster, const TaskContext& ctx, NodeId node) {
  const auto& r = ctx.request();
  const int k = r.gpu.count;
  if (k <= 1 || r.gpu.mode == GpuMode::kNone || r.gpu.mode == GpuMode::kMig) return 100.0;
  const auto gpus = cluster.gpus(node);
  candidates_.clear();
  std::uint64_t mask = 0;
  for (std::size_t g = 0; g < gpus.size(); ++g) {
    const auto units = cluster.gpu_units(node, gpus[g], r);
    if (units <= 0) continue;
    // MIG single or device-plugin replicas: several units per GPU, no GPU subset to choose.
    if (gpus[g].partition == GpuPartition::kMig || units > 1) return 100.0;
    candidates_.push_back(static_cast<int>(g));
    if (g < 64) mask |= std::uint64_t{1} << g;
  }
  if (static_cast<int>(candidates_.size()) < k) return 0.0;
  const Topology& topology = cluster.topology(node);
  const bool cacheable = gpus.size() <= 64;
  const Key key{&topology, mask, k};
  if (cacheable) {
    if (const auto it = cache_.find(key); it != cache_.end()) return it->second;
  }
  const auto subset = topology.best_subset(candidates_, k);
  GpuLink worst = GpuLink::kSelf;
  for (std::size_t a = 0; a < subset.size(); ++a) {
    for (std::size_t b = a + 1; b < subset.size(); ++b) worst = std::max(worst, topology.link(subset[a], subset[b]));
  }
  const double s = subset.empty() ? 0.0 : link_score(worst);
  if (cacheable) {
    if (cache_.size() >= (std::size_t{1} << 16)) cache_.clear();
    cache_.emplace(key, s);
  }
  return s;
}

// ---------------------------------------------------------------- registration

namespace detail {

void register_placement_plugins(Registry& r) {
  r.add({"taint-toleration",
         "Kubernetes TaintToleration: filter rejects nodes with a NoSchedule/NoExecute taint the job does not "
         "tolerate; score prefers fewer untolerated PreferNoSchedule taints (fewest = 100)",
         {"filter", "score"}, {}, [](const PluginContext&) { return std::make_unique<TaintTolerationPlugin>(); }});
  r.add({"node-unschedulable",
         "Kubernetes NodeUnschedulable: rejects a cordoned node (taint node.kubernetes.io/unschedulable:NoSchedule) "
         "unless the job tolerates that taint: \"node(s) were unschedulable\"",
         {"filter"}, {}, [](const PluginContext&) { return std::make_unique<NodeUnschedulablePlugin>(); }});
  r.add({"node-affinity",
         "Kubernetes NodeAffinity: filter = nodeSelector and required node affinity (In, NotIn, Exists, "
         "DoesNotExist, Gt, Lt); score = weights of the matching preferred terms, normalised to 0..100",
         {"filter", "score"}, {}, [](const PluginContext&) { return std::make_unique<NodeAffinityPlugin>(); }});
  r.add({"app-max-per-node",
         "at most max_per_node tasks of one app on a node, counting running jobs and the job's own tasks "
         "(Alibaba's per-app instance limit; max 1 = Kubernetes required pod anti-affinity on the hostname)",
         {"filter"}, {}, [](const PluginContext&) { return std::make_unique<AppMaxPerNodePlugin>(); }});
  r.add({"topology-spread",
         "Kubernetes PodTopologySpread: spreads the tasks of an app (or of one job) over the domains of a node "
         "label; DoNotSchedule filters nodes whose domain would exceed max_skew, ScheduleAnyway only scores",
         {"pre_filter", "filter", "score"},
         {{"topology_key", "string", "node label whose values are the domains (zones, racks)", "topology.kubernetes.io/zone"},
          {"max_skew", "number", "largest allowed difference between a domain's count and the minimum (integer >= 1)", 1},
          {"when_unsatisfiable", "string", "DoNotSchedule (filter) or ScheduleAnyway (score only)", "DoNotSchedule"}},
         [](const PluginContext& c) {
           const auto where = [&](const char* arg) { return Location{"", 0, std::string(c.name) + "/args/" + arg}; };
           const auto key = c.args.at("topology_key").get<std::string>();
           if (key.empty()) throw_error(ErrorCode::kProfileBadArgs, where("topology_key"), "topology-spread: topology_key must not be empty");
           const double skew = number_arg(c, "max_skew", 1.0);
           if (skew != std::floor(skew) || skew > 1e6) {
             throw_error(ErrorCode::kProfileBadArgs, where("max_skew"), "topology-spread: max_skew must be an integer >= 1");
           }
           const auto when = c.args.at("when_unsatisfiable").get<std::string>();
           if (when != "DoNotSchedule" && when != "ScheduleAnyway") {
             throw_error(ErrorCode::kProfileBadArgs, where("when_unsatisfiable"),
                         "topology-spread: when_unsatisfiable must be \"DoNotSchedule\" or \"ScheduleAnyway\"");
           }
           return std::make_unique<TopologySpreadPlugin>(key, static_cast<std::int32_t>(skew),
                                                         when == "DoNotSchedule" ? TopologySpreadPlugin::Mode::kDoNotSchedule
                                                                                 : TopologySpreadPlugin::Mode::kScheduleAnyway);
         }});
  r.add({"gpu-topology",
         "multi-GPU tasks prefer the node whose best free k-GPU subset is best connected: NVLink 100 > one PCIe "
         "switch 67 > one NUMA node 33 > across sockets 0 (pair with the topology-manager device select)",
         {"score"}, {}, [](const PluginContext&) { return std::make_unique<GpuTopologyScore>(); }});
}

}  // namespace detail

}  // namespace gpusched::policies
