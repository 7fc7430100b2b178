#include <gpusched/policies/framework/scheduler.hpp>

#include <algorithm>
#include <map>
#include <mutex>
#include <set>

#include <gpusched/assert.hpp>
#include <gpusched/error.hpp>
#include <gpusched/rng.hpp>
#include <gpusched/policies/framework/statement.hpp>
#include <gpusched/tpu_slice.hpp>

#include "node_index.hpp"

namespace gpusched::policies {

namespace {
template <class Hook>
Hook* as_hook(Plugin* p) {
  return dynamic_cast<Hook*>(p);
}
/// A Status keeps its reason as a string_view, so a reason built at run time is kept for the
/// life of the process (one per distinct text: a slice's topology and generation). Thread-safe.
std::string_view interned(std::string text) {
  static std::mutex mutex;
  static std::set<std::string> texts;
  const std::lock_guard<std::mutex> lock(mutex);
  return *texts.insert(std::move(text)).first;
}
}  // namespace

Scheduler::Scheduler(const Profile& profile, const Registry& registry, std::uint64_t seed)
    : profile_(profile), streams_(seed), tie_rng_(streams_.stream("policy.tie-break")) {
  const std::string where = "profile '" + profile.name + "'";
  std::map<std::string, std::pair<Plugin*, nlohmann::json>> instances;  // one instance per plugin name
  std::map<Plugin*, std::vector<std::string_view>> hooks_of;             // where each instance is listed

  // One instance per plugin name, configured by the args written at any of its hooks (the queue
  // sort is built first, but its args may be written at filter).
  std::map<std::string, nlohmann::json> written_args;
  {
    auto note = [&](const PluginRef& r) {
      if (!r.args.empty()) written_args.try_emplace(r.name, r.args);
    };
    note(profile.queue_sort);
    note(profile.device_select);
    for (const auto* list : {&profile.pre_filter, &profile.filter, &profile.score, &profile.reserve, &profile.permit,
                             &profile.post_filter, &profile.bind}) {
      for (const auto& r : *list) note(r);
    }
  }
  auto build = [&](const PluginRef& ref, const char* hook, const std::string& field) -> Plugin* {
    const PluginInfo* info = registry.find(ref.name);
    if (!info) {
      throw_error(ErrorCode::kProfileUnknownPlugin, {where, 0, field},
                  "unknown plugin \"" + ref.name + "\"; plugins for " + hook + ": " + registry.known_names(hook));
    }
    if (std::find(info->hooks.begin(), info->hooks.end(), hook) == info->hooks.end()) {
      throw_error(ErrorCode::kProfileWrongHook, {where, 0, field},
                  "plugin \"" + ref.name + "\" does not implement " + hook + "; plugins for " + hook + ": " +
                      registry.known_names(hook));
    }
    const auto written = written_args.find(ref.name);
    auto args = resolve_args(*info, ref.args.empty() && written != written_args.end() ? written->second : ref.args,
                             Location{where, 0, field});
    if (auto it = instances.find(ref.name); it != instances.end()) {
      if (!ref.args.empty() && it->second.second != args) {
        throw_error(ErrorCode::kProfileBadArgs, {where, 0, field},
                    "plugin \"" + ref.name + "\" appears at several hooks with different args");
      }
      hooks_of[it->second.first].push_back(hook);
      return it->second.first;
    }
    PluginContext ctx{args, streams_, info->name};
    auto plugin = info->factory(ctx);
    GPUSCHED_ASSERT(plugin != nullptr, "plugin factory returned null");
    Plugin* raw = plugin.get();
    owned_.push_back(std::move(plugin));
    instances.emplace(ref.name, std::pair{raw, args});
    hooks_of[raw].push_back(hook);
    return raw;
  };
  auto build_list = [&](const std::vector<PluginRef>& refs, const char* hook, auto& out, auto cast) {
    std::vector<std::string> seen;
    for (std::size_t i = 0; i < refs.size(); ++i) {
      // Where the entry was written (an extending profile merges lists), else its position.
      const std::string field = refs[i].field.empty() ? std::string(hook) + "/" + std::to_string(i) : refs[i].field;
      if (std::find(seen.begin(), seen.end(), refs[i].name) != seen.end()) {
        throw_error(ErrorCode::kProfileDuplicatePlugin, {where, 0, field},
                    "plugin \"" + refs[i].name + "\" is listed twice at " + hook);
      }
      seen.push_back(refs[i].name);
      out.push_back(cast(build(refs[i], hook, field), refs[i]));
    }
  };

  queue_sort_ = as_hook<QueueSortPlugin>(build(profile.queue_sort, "queue_sort", "queue_sort"));
  build_list(profile.pre_filter, "pre_filter", pre_filters_, [](Plugin* p, const PluginRef&) { return as_hook<PreFilterPlugin>(p); });
  {
    std::vector<Plugin*> any_filters;
    build_list(profile.filter, "filter", any_filters, [](Plugin* p, const PluginRef&) { return p; });
    for (auto* p : any_filters) {
      if (auto* f = as_hook<FilterPlugin>(p)) filters_.push_back(f);
      else if (auto* b = as_hook<BatchFilterPlugin>(p)) batch_filters_.push_back(b);
      else GPUSCHED_ASSERT(false, "a plugin registered for the filter hook implements neither filter interface");
    }
  }
  // A filter plugin that also has a pre-filter runs it (Kubernetes enables both points together).
  for (auto* f : filters_) {
    if (auto* pf = dynamic_cast<PreFilterPlugin*>(f); pf && std::find(pre_filters_.begin(), pre_filters_.end(), pf) == pre_filters_.end()) {
      pre_filters_.push_back(pf);
    }
  }
  for (std::size_t i = 0; i < profile.score.size(); ++i) {
    if (!(profile.score[i].weight > 0.0)) {
      throw_error(ErrorCode::kProfileZeroWeight, {where, 0, "score/" + std::to_string(i) + "/weight"},
                  "score weight of \"" + profile.score[i].name + "\" must be > 0 (remove the plugin to turn it off)");
    }
  }
  build_list(profile.score, "score", scores_, [&](Plugin* p, const PluginRef& ref) {
    return std::pair{as_hook<ScorePlugin>(p), ref.weight};
  });
  device_select_ = as_hook<DeviceSelectPlugin>(build(profile.device_select, "device_select", "device_select"));
  build_list(profile.reserve, "reserve", reserves_, [](Plugin* p, const PluginRef&) { return as_hook<ReservePlugin>(p); });
  build_list(profile.permit, "permit", permits_, [](Plugin* p, const PluginRef&) { return as_hook<PermitPlugin>(p); });
  build_list(profile.post_filter, "post_filter", post_filters_, [](Plugin* p, const PluginRef&) { return as_hook<PostFilterPlugin>(p); });
  build_list(profile.bind, "bind", binds_, [](Plugin* p, const PluginRef&) { return as_hook<BindPlugin>(p); });

  const bool has_fit = std::any_of(profile.filter.begin(), profile.filter.end(),
                                   [](const PluginRef& r) { return r.name == "node-resources-fit"; });
  if (!has_fit) {
    throw_error(ErrorCode::kProfileMissingHook, {where, 0, "filter"},
                "the filter list must include \"node-resources-fit\" (without it a placement could over-commit a node)");
  }
  for (auto& [plugin, hooks] : hooks_of) {
    try {
      plugin->bound_to(hooks);
    } catch (const ProfileError& e) {
      throw_error(e.code(), {where, 0, e.where().field}, e.detail());
    }
  }
  for (auto& p : owned_) {
    if (auto* e = dynamic_cast<JobEventsPlugin*>(p.get())) events_.push_back(e);
    // The queue sort's state changes the order, not where a job fits.
    // A queue sort also listed at other hooks (capacity-queues) reads queue state there too.
    if (p.get() == dynamic_cast<Plugin*>(queue_sort_)) dynamic_order_ = dynamic_order_ || p->reads_queue();
    if (p.get() != dynamic_cast<Plugin*>(queue_sort_) || hooks_of[p.get()].size() > 1) reads_queue_ = reads_queue_ || p->reads_queue();
  }
  // A plugin outside this library (Python) may read anything about a job: no equivalence classes.
  for (auto& p : owned_) opaque_ = opaque_ || p->opaque();
  kube_diagnosis_ = profile.diagnosis == Diagnosis::kKubeScheduler;
  kube_preemption_ = kube_diagnosis_ && std::any_of(profile.post_filter.begin(), profile.post_filter.end(),
                                                    [](const PluginRef& r) { return r.name == "priority-preemption"; });
  if (auto it = instances.find("node-resources-fit"); it != instances.end()) {
    fit_pre_filter_ = dynamic_cast<PreFilterPlugin*>(it->second.first);
  }
  const int pct = profile.percentage_of_nodes_to_score;
  if (pct < -1 || pct > 100) {
    throw_error(ErrorCode::kProfileBadArgs, {where, 0, "percentage_of_nodes_to_score"},
                "percentage_of_nodes_to_score must be 0 (kube-scheduler's adaptive default) to 100, or absent (every node)");
  }
  // The node index serves profiles whose per-node filters and scores may be node-local; whether
  // they are for a given job is asked per task (index_usable).
  index_eligible_ = batch_filters_.empty() && !opaque_;
  index_tree_ = NodeIndex::tree_serves(scores_);
  first_feasible_wins_ = batch_filters_.empty() && profile.tie_break == TieBreak::kNodeOrder &&
                         (scores_.empty() || (scores_.size() == 1 && scores_[0].first->orders_by_node_index()));
  // A random tie-break needs every node at the top score (NodeIndex::ordered_ties): the plugin's
  // own scores, not normalised ones. The first plugin's order may bound the next ones' scores
  // too (order_with); the plugins after those must score every node alike for a walk to be taken
  // (constant_score, asked per decision), and with any plugin after the first, the first one's
  // normalize must be the identity (the walk adds raw scores as the scan adds normalised ones).
  if (!scores_.empty()) order_span_ = 1 + scores_[0].first->order_with(scores_);
  GPUSCHED_ASSERT(order_span_ <= scores_.size() || scores_.empty(), "order_with covered more plugins than follow");
  ordered_ = batch_filters_.empty() && !scores_.empty() && scores_[0].first->orders_nodes() && scores_[0].second > 0.0 &&
             scores_[0].first->order_variants() >= 1 && scores_[0].first->order_variants() <= NodeIndex::kOrderVariants &&
             (profile.tie_break == TieBreak::kNodeOrder && scores_.size() == 1
                  ? scores_[0].first->normalize_is_identity() || scores_[0].first->normalize_is_min_max()
                  : scores_[0].first->normalize_is_identity());
}

Scheduler::~Scheduler() = default;

void Scheduler::set_node_index(bool on) {
  use_index_ = on;
  index_.reset();
}

Scheduler::IndexStats Scheduler::index_stats() const { return index_ ? index_->stats : IndexStats{}; }

bool Scheduler::before(const JobSpec& a, JobId ia, const JobSpec& b, JobId ib) const {
  return queue_sort_->less(a, ia, b, ib);
}

void Scheduler::note_reject(const Status& s, std::uint32_t count) {
  for (auto& r : rejects_) {
    if (r.reason.data() == s.reason.data() && r.plugin.data() == s.plugin.data()) {
      r.count += count;
      return;
    }
  }
  rejects_.push_back({s.plugin, s.reason, count});
}

void Scheduler::note_filter_reject(const FilterPlugin& f, const ClusterState& cluster, const TaskContext& ctx, NodeId node,
                                   const Status& s) {
  ++rejected_nodes_;
  if (s.code == StatusCode::kUnschedulableAndUnresolvable) ++unresolvable_nodes_;
  else if (kube_preemption_) resolvable_.add(node);
  if (!kube_diagnosis_) {
    note_reject(s);
    return;
  }
  reasons_.clear();
  f.reasons(cluster, ctx, node, s, reasons_);
  for (const auto r : reasons_) note_reject(Status{s.code, s.plugin, r});
}

std::size_t Scheduler::nodes_to_find(std::size_t nodes) const {
  // kube-scheduler's numFeasibleNodesToFind (minFeasibleNodesToFind 100,
  // minFeasibleNodesPercentageToFind 5).
  const int pct = profile_.percentage_of_nodes_to_score;
  if (pct < 0 || nodes < 100) return nodes;
  auto n = static_cast<std::int64_t>(nodes);
  std::int64_t p = pct;
  if (p == 0) p = std::max<std::int64_t>(50 - n / 125, 5);
  const std::int64_t find = n * p / 100;
  return static_cast<std::size_t>(std::max<std::int64_t>(find, 100));
}

void Scheduler::apply_batch_filters(const ClusterState& cluster, const TaskContext& ctx, std::vector<NodeId>& nodes) {
  for (auto* b : batch_filters_) {
    if (nodes.empty()) return;
    keep_.assign(nodes.size(), 1);
    const Status reason = b->filter_all(cluster, ctx, nodes, keep_);
    std::size_t kept = 0;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      if (keep_[i] != 0) nodes[kept++] = nodes[i];
    }
    if (kept < nodes.size()) {
      note_reject(reason, static_cast<std::uint32_t>(nodes.size() - kept));
      rejected_nodes_ += static_cast<std::uint32_t>(nodes.size() - kept);
      batch_rejected_ = true;
      if (reason.code == StatusCode::kUnschedulableAndUnresolvable) unresolvable_nodes_ += static_cast<std::uint32_t>(nodes.size() - kept);
    }
    nodes.resize(kept);
  }
}

Status Scheduler::place_task(const ClusterState& cluster, TaskContext& ctx, TaskPlacement& out,
                             std::span<const NodeId> only) {
  if (!explain_ || !rotate_) return place_task_scan(cluster, ctx, out, only);
  // The explanation's storage is kept from one decision to the next (explain_verdicts reuses
  // each node's vectors): an extender explains every request, and 1,000 nodes' verdicts would
  // otherwise cost thousands of allocations each time.
  explanation_.job = ctx.job_id;
  explanation_.task = ctx.task_index;
  explanation_.pre_filter = Status::success();
  explanation_.narrowed = !only.empty();
  if (explanation_.score_plugins.size() != scores_.size()) {   // the profile's, fixed: named once
    explanation_.score_plugins.clear();
    explanation_.weights.clear();
    for (const auto& [plugin, weight] : scores_) {
      explanation_.score_plugins.emplace_back(plugin->name());
      explanation_.weights.push_back(weight);
    }
  }
  explaining_ = true;
  Status s = Status::success();
  try {
    s = place_task_scan(cluster, ctx, out, only);
  } catch (...) {
    explaining_ = false;
    throw;
  }
  explaining_ = false;
  explain_(explanation_);
  return s;
}

Status Scheduler::place_task_scan(const ClusterState& cluster, TaskContext& ctx, TaskPlacement& out,
                                  std::span<const NodeId> only) {
  rejects_.clear();
  pre_filter_rejected_ = false;
  batch_rejected_ = false;
  resolvable_.clear();
  rejected_nodes_ = 0;
  unresolvable_nodes_ = 0;
  const std::size_t n = only.empty() ? cluster.node_count() : only.size();
  nodes_seen_ = n;
  Status too_big = Status::success();
  for (auto* pf : pre_filters_) {
    const Status s = pf->pre_filter(cluster, ctx);
    if (s.ok() || s.is_skip()) continue;
    if (kube_diagnosis_ && pf == fit_pre_filter_) {
      // kube-scheduler has no such shortcut: every node is reported under its own filters (a
      // tainted node as tainted). The answer stays the shortcut's; the search below words it.
      too_big = s;
      continue;
    }
    if (explaining_) {
      explanation_.pre_filter = s;
      resize_verdicts(0);
    }
    rejects_.push_back({s.plugin, s.reason, static_cast<std::uint32_t>(n)});
    rejected_nodes_ = static_cast<std::uint32_t>(n);
    pre_filter_rejected_ = true;
    if (s.code == StatusCode::kUnschedulableAndUnresolvable) unresolvable_nodes_ = static_cast<std::uint32_t>(n);
    return s;
  }
  feasible_.clear();
  NodeIndex::Class* cached = nullptr;   // the node index's answers, when it serves this task
  // The node index serves the task when every filter and score is node-local for it. With
  // percentage_of_nodes_to_score sampling (want < n) the search below still walks the nodes in its
  // rotating order and stops where the scan would, but reads each node's verdict, reject reasons
  // and raw scores from the index instead of calling the plugins.
  // A narrowed search (`only`: the engine's retry on the nodes that gained capacity, a
  // preemption what-if) walks its nodes the same way.
  // An explained decision reads every verdict from the class too (explain_verdicts) and takes
  // the scoring pass below, which records each node's scores: none of the shortcuts that skip it.
  bool local = too_big.ok() && index_usable(ctx.job);
  // A narrowed retry (the engine's, on the nodes that gained capacity since the last pass) asks
  // only about nodes that changed: the request class would recompute each of them too, after
  // walking every change since it was last used. Scanning them is the same work without that
  // walk (a rarely used class is cold and far behind: 3x a whole run with many request shapes).
  // An explained one reads its verdicts from the class unless a plugin is exhaustive (below).
  // A plugin that reports something from its answers (Plugin::exhaustive_for) must be asked about
  // the node states the scan would ask about: a partial search (sampling, a narrowed retry) scans
  // its nodes, and a decision never takes a score-order walk, which skips nodes (a first-feasible
  // walk asks about the nodes the scan asks about, in the same order, up to the first that fits).
  const bool exhaustive = local && exhaustive_for(ctx.job);
  if (!only.empty() && (!explaining_ || exhaustive)) local = false;
  if (exhaustive && (nodes_to_find(n) < n || bounds_reach_exhaustive(cluster, ctx))) local = false;
  if (explaining_ && !local) explain_verdicts(cluster, ctx, only);
  if (use_index_ && index_eligible_ && !index_) {
    const auto mode = index_tree_ ? NodeIndex::Mode::kTotals
                      : (scores_.size() == 1 && scores_[0].first->normalize_is_min_max() &&
                         profile_.tie_break == TieBreak::kNodeOrder)
                          ? NodeIndex::Mode::kMinMax
                          : NodeIndex::Mode::kLinear;
    index_ = std::make_unique<NodeIndex>(filters_, scores_, mode, kube_diagnosis_);
  }
  if (index_ && !local) ++index_->stats.fallbacks;
  NodeIndexClass* sampled = nullptr;   // answers for the sampled search
  if (local && !explaining_ && (first_feasible_wins_ || (ordered_ && !exhaustive)) && only.empty() && nodes_to_find(n) >= n) {
    // First-fit: the lowest-index feasible node, from the capacity tree shared by all requests
    // (no class to bring up to date). A score plugin that orders the nodes (ScorePlugin::
    // orders_nodes): a walk of its node order, shared by all requests, from the best node down.
    // When no node is feasible the class below gives the diagnosis.
    // kByGpu needs node-resources-fit: it guarantees every feasible node a GPU that fits.
    using Bound = ScorePlugin::OrderBound;
    auto bound = ordered_ ? scores_[0].first->order_bound(cluster, ctx) : Bound::kConstant;
    constants_.clear();
    for (std::size_t k = order_span_; ordered_ && k < scores_.size() && bound != Bound::kNone; ++k) {
      // Each plugin the order does not bound adds the same score to every node, or no walk.
      const auto c = scores_[k].first->constant_score(cluster, ctx);
      if (c && bound == Bound::kBounded) constants_.push_back(*c);
      else bound = Bound::kNone;
    }
    if (bound == Bound::kByGpu && (fit_pre_filter_ == nullptr || !scores_[0].first->normalize_is_min_max())) bound = Bound::kNone;
    const bool random_ties = profile_.tie_break == TieBreak::kRandom;
    if (random_ties && bound != Bound::kBounded) bound = Bound::kNone;   // (every feasible node ties under kConstant)
    if (bound != Bound::kNone && bound != Bound::kConstant && index_->skip_walk(ctx.job)) bound = Bound::kNone;
    if (bound != Bound::kNone) {
      OrderWalk walk;
      bool others = false;   // random ties: another feasible node below the top
      if (random_ties) {
        walk = index_->ordered_ties(cluster, ctx, others, constants_);
      } else if (bound == Bound::kConstant) {
        const auto u = index_->first_feasible(cluster, ctx);
        walk = u ? OrderWalk{OrderWalk::Kind::kFound, *u} : OrderWalk{OrderWalk::Kind::kNone};
      } else {
        walk = bound == Bound::kByGpu ? index_->gpu_ordered_best(cluster, ctx)
                                      : index_->ordered_best(cluster, ctx, scores_[0].first->normalize_is_min_max(), constants_);
      }
      if (walk.kind != OrderWalk::Kind::kGaveUp && bound != Bound::kConstant) index_->note_walked(ctx.job);
      if (walk.kind == OrderWalk::Kind::kFound) {
        ++index_->stats.decisions;
        ++(bound == Bound::kConstant ? index_->stats.first_feasible : index_->stats.ordered);
        if (random_ties) {
          // As the scan: a draw among the top nodes, in node order, when more than one node is feasible.
          const auto ties = index_->ties();
          walk.node = ties[others || ties.size() > 1 ? static_cast<std::size_t>(tie_rng_.below(ties.size())) : 0];
        }
        return finish(cluster, ctx, NodeId{walk.node}, out);
      }
      if (walk.kind == OrderWalk::Kind::kGaveUp) {
        ++index_->stats.gave_up;   // the class below answers
        index_->note_gave_up(ctx.job);
      } else if (!diagnose_) {
        ++index_->stats.decisions;
        return Status::unschedulable("scheduler", "no feasible node");   // nobody reads why
      }
    }
  }
  if (local) {
    index_key_.clear();
    for (const auto* f : filters_) f->index_key(index_key_);
    // The top total is all that is read, lowest index first: the score plugin's bounds may stand
    // for the scores of nodes that cannot reach it (NodeIndex::best_bounded).
    const bool bounds = index_tree_ && !explaining_ && only.empty() && nodes_to_find(n) >= n &&
                        profile_.tie_break == TieBreak::kNodeOrder;
    auto& c = index_->refresh(cluster, ctx, index_key_, bounds);
    if (explaining_) explain_verdicts(cluster, ctx, only, &c);
    ++index_->stats.decisions;
    if (!only.empty() || nodes_to_find(n) < n || (explaining_ && first_feasible_wins_)) {
      // (An explained first-fit walks the class like the scan: scored nodes are the scan's.)
      sampled = &c;
      cached = &c;
    } else if (c.feasible_count == 0) {
      if (!diagnose_) return Status::unschedulable("scheduler", "no feasible node");   // nobody reads why
      index_->resolve_deferred(c, cluster, ctx);
      return diagnose_from_index(c, ctx.job);
    } else {
      if (index_tree_ && NodeIndex::idle(c) && !explaining_) {
        std::uint32_t pick = 0;
        if (c.feasible_count > 1 && profile_.tie_break == TieBreak::kRandom) {
          pick = static_cast<std::uint32_t>(tie_rng_.below(c.ties[1]));
        }
        ++index_->stats.tree;
        return finish(cluster, ctx, NodeId{bounds ? index_->best_bounded(c, cluster, ctx) : NodeIndex::best(c, pick)}, out);
      }
      index_->settle(c, cluster, ctx);   // (bounds: the raw scores are read below)
      if (index_->mode() == NodeIndex::Mode::kMinMax && !explaining_) {
        ++index_->stats.tree;
        return finish(cluster, ctx, NodeId{NodeIndex::best_min_max(c, scores_[0].second)}, out);
      }
      cached = &c;
      ++index_->stats.normalized;
      for (std::uint32_t u = 0; u < n; ++u) {
        if (c.feasible[u] != 0) feasible_.push_back(NodeId{u});
      }
    }
  }
  // True when the search can stop (first-fit found its node).
  auto consider = [&](NodeId node) {
    if (sampled != nullptr) {
      const std::uint32_t sig = index_->reject_of(*sampled, cluster, ctx, node.value);
      if (sig != 0) {
        note_signature(index_->signature(sig - 1), node, 1);
        return false;
      }
      feasible_.push_back(node);
      return first_feasible_wins_;
    }
    for (const auto* f : filters_) {
      const Status s = f->filter(cluster, ctx, node);
      if (!s.ok()) {
        note_filter_reject(*f, cluster, ctx, node, s);
        return false;
      }
    }
    feasible_.push_back(node);
    return first_feasible_wins_;
  };
  // percentage_of_nodes_to_score: kube-scheduler's search from nextStartNodeIndex, stopping once
  // enough feasible nodes were found; the next search starts after the nodes processed.
  // Batch (e.g. Python) filters run after this search, on the nodes it kept: with one, stopping
  // early could leave only nodes it rejects, so every node is searched.
  const std::size_t want = batch_filters_.empty() ? nodes_to_find(n) : n;
  const std::size_t start = want < n ? start_ % n : 0;
  std::size_t processed = 0;
  for (std::size_t k = 0; k < n && (cached == nullptr || sampled != nullptr); ++k) {
    const std::size_t i = start == 0 ? k : (start + k) % n;
    ++processed;
    if (consider(only.empty() ? NodeId{static_cast<std::uint32_t>(i)} : only[i])) break;
    if (feasible_.size() >= want) break;
  }
  if (rotate_ && want < n) start_ = (start + processed) % n;
  if (!too_big.ok()) {
    feasible_.clear();
    return too_big;
  }
  if (!batch_filters_.empty()) apply_batch_filters(cluster, ctx, feasible_);
  if (feasible_.empty()) return Status::unschedulable("scheduler", "no feasible node");

  std::size_t best = 0;
  if (feasible_.size() > 1 && (!scores_.empty() || profile_.tie_break == TieBreak::kRandom)) {
    const std::size_t f = feasible_.size();
    total_.assign(f, 0.0);
    raw_.resize(f);
    if (explaining_) {
      explained_raw_.resize(scores_.size() * f);
      explained_norm_.resize(scores_.size() * f);
    }
    for (std::size_t k = 0; k < scores_.size(); ++k) {
      auto& [plugin, weight] = scores_[k];
      if (cached != nullptr) {
        const double* raw = cached->raw.data() + k * cached->nodes;
        for (std::size_t i = 0; i < f; ++i) raw_[i] = raw[feasible_[i].value];
      } else {
        plugin->score_all(cluster, ctx, feasible_, raw_);
      }
      if (explaining_) std::copy(raw_.begin(), raw_.end(), explained_raw_.begin() + static_cast<std::ptrdiff_t>(k * f));
      plugin->normalize(raw_);
      if (explaining_) std::copy(raw_.begin(), raw_.end(), explained_norm_.begin() + static_cast<std::ptrdiff_t>(k * f));
      for (std::size_t i = 0; i < f; ++i) {
        GPUSCHED_ASSERT(raw_[i] >= -1e-9 && raw_[i] <= 100.0 + 1e-9, "score plugin returned a score outside [0, 100]");
        total_[i] += weight * raw_[i];
      }
    }
    if (explaining_) {
      // Node by node, each verdict touched once (plugin by plugin, a thousand verdicts' vectors
      // were each grown twice per plugin). The total adds up in plugin order, as total_ does.
      const std::size_t plugins = scores_.size();
      for (std::size_t i = 0; i < f; ++i) {
        auto& v = explanation_.nodes[verdict_of_[feasible_[i].value]];
        v.raw.resize(plugins);
        v.normalized.resize(plugins);
        double t = 0;
        for (std::size_t k = 0; k < plugins; ++k) {
          v.raw[k] = explained_raw_[k * f + i];
          v.normalized[k] = explained_norm_[k * f + i];
          t += scores_[k].second * v.normalized[k];
        }
        v.total = t;
      }
    }
    const double top = *std::max_element(total_.begin(), total_.end());
    if (profile_.tie_break == TieBreak::kRandom) {
      std::size_t ties = 0;
      for (double t : total_) ties += (t == top) ? 1 : 0;
      auto pick = tie_rng_.below(ties);
      for (std::size_t i = 0; i < f; ++i) {
        if (total_[i] == top && pick-- == 0) {
          best = i;
          break;
        }
      }
    } else {
      best = static_cast<std::size_t>(std::find(total_.begin(), total_.end(), top) - total_.begin());
    }
  }
  return finish(cluster, ctx, feasible_[best], out);
}

void Scheduler::resize_verdicts(std::size_t n) {
  // Verdicts move between the explanation and the spares, so their vectors keep their capacity
  // whatever the number of nodes explained (an extender's bind explains one node, its filter
  // thousands, in turn).
  auto& nodes = explanation_.nodes;
  while (nodes.size() > n) {
    spare_verdicts_.push_back(std::move(nodes.back()));
    nodes.pop_back();
  }
  while (nodes.size() < n) {
    if (spare_verdicts_.empty()) {
      nodes.emplace_back();
    } else {
      nodes.push_back(std::move(spare_verdicts_.back()));
      spare_verdicts_.pop_back();
    }
  }
}

// `only` holds distinct nodes (the engine's narrowed retries are sorted and unique, the
// extender's candidate ids too): a node listed twice would get two verdicts, the scores on one.
void Scheduler::explain_verdicts(const ClusterState& cluster, const TaskContext& ctx, std::span<const NodeId> only,
                                 NodeIndexClass* from) {
  const std::size_t n = only.empty() ? cluster.node_count() : only.size();
  verdict_of_.assign(cluster.node_count(), 0);
  resize_verdicts(n);
  for (std::size_t i = 0; i < n; ++i) {
    NodeVerdict& v = explanation_.nodes[i];
    v.node = only.empty() ? NodeId{static_cast<std::uint32_t>(i)} : only[i];
    v.rejected = Status::success();
    v.reasons.clear();
    v.raw.clear();
    v.normalized.clear();
    v.total = 0;
    const std::uint32_t sig = from != nullptr ? index_->reject_of(*from, cluster, ctx, v.node.value) : 0;
    if (from != nullptr && (sig == 0 || kube_diagnosis_)) {
      // A feasible node, or a rejected one whose signature holds the filter's reasons (the index
      // keeps them in kube wording only; otherwise the filters are asked, as below).
      if (sig != 0) {
        const auto& why = index_->signature(sig - 1);
        v.rejected = why.status;
        v.reasons.assign(why.reasons.begin(), why.reasons.end());
      }
    } else {
      for (const auto* f : filters_) {
        const Status st = f->filter(cluster, ctx, v.node);
        if (!st.ok()) {
          v.rejected = st;
          f->reasons(cluster, ctx, v.node, st, v.reasons);
          break;
        }
      }
    }
    verdict_of_[v.node.value] = i;
  }
}

Status Scheduler::finish(const ClusterState& cluster, const TaskContext& ctx, NodeId chosen, TaskPlacement& out) {
  if (!device_select_->select(cluster, ctx, chosen, out)) {
    // Filters said yes but the device plugin cannot grant: a plugin disagreement, not bad input.
    GPUSCHED_ASSERT(false, "device_select could not grant devices on a node the filters accepted");
  }
  out.node = chosen;
  // A DRA claim's TPU chips are what its allocation took there (its size may depend on the host).
  if (!ctx.job.constraints.claims) out.tpu_chips = ctx.request().tpu.chips;
  for (const auto* f : filters_) f->complete(cluster, ctx, out);
  out.slowdown = cluster.placement_slowdown(ctx.request(), out);
  return Status::success();
}

Status Scheduler::diagnose_from_index(NodeIndexClass& c, const JobSpec& job) {
  // What the scan's note_filter_reject would have noted, node by node: each reject signature's
  // node count (kept by the class with its rejects, NodeIndexClass::sig_count), noted in the
  // order of each signature's first node. Kept in the class until it changes
  // (NodeIndexClass::diag_pos). The nodes where preemption might help are counted per
  // signature, and listed only when preemption_message reads them.
  // Precondition: no node is feasible, and none is deferred (NodeIndex::resolve_deferred).
  const bool list = kube_preemption_ && resolvable_list_needed(job);
  // Whether preemption might help a signature's nodes (looked up once, not per node).
  auto resolvable = [&](std::uint32_t sig) {
    return kube_preemption_ && index_->signature(sig).status.code != StatusCode::kUnschedulableAndUnresolvable;
  };
  if (c.diag_pos != c.log_pos) {
    const std::size_t sigs = c.sig_count.size();
    std::size_t present = 0, counted = 0;
    c.diag_resolvable_count = 0;
    for (std::uint32_t sig = 0; sig < sigs; ++sig) {
      if (c.sig_count[sig] == 0) continue;
      ++present;
      counted += c.sig_count[sig];
      if (resolvable(sig)) c.diag_resolvable_count += c.sig_count[sig];
    }
    GPUSCHED_ASSERT(counted == c.nodes, "node index: a diagnosis with a node feasible or deferred");
    // The signatures in the order of their first nodes: the nodes from the first on, until each is met.
    sig_met_.assign(sigs, 0);
    c.diag_sigs.clear();
    for (std::uint32_t u = 0; u < c.nodes && c.diag_sigs.size() < present; ++u) {
      const std::uint32_t sig = c.reject[u] - 1;
      if (sig_met_[sig] != 0) continue;
      sig_met_[sig] = 1;
      c.diag_sigs.emplace_back(sig, c.sig_count[sig]);
    }
    c.diag_resolvable.clear();
    c.diag_listed = false;
    c.diag_pos = c.log_pos;
  }
  if (list && !c.diag_listed) {
    sig_resolvable_.assign(c.sig_count.size(), 0);
    for (const auto& [sig, count] : c.diag_sigs) sig_resolvable_[sig] = resolvable(sig) ? 1 : 0;
    for (std::uint32_t u = 0; u < c.nodes; ++u) {
      if (sig_resolvable_[c.reject[u] - 1] != 0) c.diag_resolvable.push_back(NodeId{u});
    }
    c.diag_listed = true;
  }
  resolvable_.count = c.diag_resolvable_count;
  resolvable_.listed = c.diag_listed;
  if (c.diag_listed) resolvable_.nodes = c.diag_resolvable;
  else resolvable_.nodes.clear();
  rejected_nodes_ = static_cast<std::uint32_t>(c.nodes);
  for (const auto& [sig, count] : c.diag_sigs) {
    const auto& g = index_->signature(sig);
    if (g.status.code == StatusCode::kUnschedulableAndUnresolvable) unresolvable_nodes_ += count;
    note_reasons(g, count);
  }
  return Status::unschedulable("scheduler", "no feasible node");
}

void Scheduler::note_reasons(const NodeIndexSignature& g, std::uint32_t count) {
  if (!kube_diagnosis_) {
    note_reject(g.status, count);
  } else {
    for (const auto r : g.reasons) note_reject(Status{g.status.code, g.status.plugin, r}, count);
  }
}

void Scheduler::note_signature(const NodeIndexSignature& g, NodeId node, std::uint32_t count) {
  // note_filter_reject, from the reasons the index kept.
  rejected_nodes_ += count;
  if (g.status.code == StatusCode::kUnschedulableAndUnresolvable) unresolvable_nodes_ += count;
  else if (kube_preemption_) resolvable_.add(node);
  note_reasons(g, count);
}

bool Scheduler::exhaustive_for(const JobSpec& job) const {
  return std::any_of(filters_.begin(), filters_.end(), [&](const FilterPlugin* f) { return f->exhaustive_for(job); }) ||
         std::any_of(scores_.begin(), scores_.end(), [&](const auto& s) { return s.first->exhaustive_for(job); });
}

bool Scheduler::bounds_reach_exhaustive(const ClusterState& cluster, const TaskContext& ctx) const {
  // The index skips nodes below every filter's capacity bounds without asking any filter; the
  // scan asks the filters in order and stops at the first that rejects. So bounds from a filter
  // listed after an exhaustive one (or from it) would skip nodes the scan asks it about
  // (dynamic-resources before node-resources-fit: review of 5de8bc0).
  bool after = false;
  for (const auto* f : filters_) {
    after = after || f->exhaustive_for(ctx.job);
    if (!after) continue;
    CapacityNeed need;
    f->capacity_need(cluster, ctx, need);
    if (need != CapacityNeed{}) return true;
  }
  return false;
}

bool Scheduler::index_usable(const JobSpec& job) const {
  if (!use_index_ || !index_eligible_) return false;
  for (const auto* f : filters_) {
    if (!f->node_local_for(job)) return false;
  }
  for (const auto& [plugin, weight] : scores_) {
    if (!plugin->node_local_for(job)) return false;
  }
  return true;
}

Status Scheduler::place_job(ClusterState& cluster, const JobSpec& job, JobId id, Statement& st,
                            std::vector<TaskPlacement>& out, std::span<const NodeId> only) {
  out.clear();
  Status failure = Status::success();
  auto take = [&](TaskPlacement p) {
    Status s = Status::success();
    for (std::size_t r = 0; r < reserves_.size() && s.ok(); ++r) {
      s = reserves_[r]->reserve(cluster, job, id, p);
      if (s.ok()) st.on_rollback([plugin = reserves_[r], &cluster, &job, id, p] { plugin->unreserve(cluster, job, id, p); });
    }
    if (!s.ok()) return s;
    st.allocate(job.request, p);
    out.push_back(std::move(p));
    return s;
  };
  if (job.request.tpu.hosts > 1) {
    // A multi-host TPU slice: every host of one block of one pool, or nothing.
    std::vector<TaskPlacement> hosts;
    failure = place_slice(cluster, job, id, hosts);
    for (auto& p : hosts) {
      if (!failure.ok()) break;
      failure = take(std::move(p));
    }
  } else {
    for (std::int32_t t = 0; t < job.tasks; ++t) {
      cycle_.clear();
      TaskContext ctx{job, id, t, cycle_, out, jobs_};
      TaskPlacement p;
      failure = place_task(cluster, ctx, p, only);
      if (!failure.ok()) break;
      failure = take(std::move(p));
      if (!failure.ok()) break;
    }
  }
  if (static_cast<std::int32_t>(out.size()) < job.min_available) {
    return failure.ok() ? Status::unschedulable("scheduler", "fewer than min_available tasks fit") : failure;
  }
  for (auto* pm : permits_) {
    const Status s = pm->permit(cluster, job, id, out);
    if (!s.ok()) return s;
  }
  return Status::success();
}

namespace {
/// Sets a flag for a scope and puts back what it was, however the scope ends.
class Setting {
 public:
  Setting(bool& flag, bool value) : flag_(flag), was_(flag) { flag_ = value; }
  ~Setting() { flag_ = was_; }
  Setting(const Setting&) = delete;
  Setting& operator=(const Setting&) = delete;

 private:
  bool& flag_;
  bool was_;
};
}  // namespace

Status Scheduler::schedule(ClusterState& cluster, const JobSpec& job, JobId id, std::vector<TaskPlacement>& out,
                           std::span<const NodeId> only) {
  victims_.clear();
  preemption_msg_.clear();
  // kube-scheduler runs PostFilter (DefaultPreemption) whenever filtering failed; its message
  // joins the diagnosis.
  auto failed = [&] {
    if (kube_preemption_) preemption_msg_ = preemption_message(cluster, job);
    return last_status_;
  };
  auto bind_all = [&](Statement& st) {
    Status s = Status::success();
    for (std::size_t b = 0; b < binds_.size() && s.ok(); ++b) s = binds_[b]->bind(cluster, job, id, out);
    if (s.ok()) st.commit();
    return s;
  };
  {
    Statement st(cluster);
    rotate_ = true;   // only the real attempt moves percentage_of_nodes_to_score's start, no what-if
    last_status_ = place_job(cluster, job, id, st, out, only);
    rotate_ = false;
    if (last_status_.ok()) last_status_ = bind_all(st);
    if (last_status_.ok()) return last_status_;
  }
  out.clear();
  // Post-filters (preemption, reclaim) may make room by evicting running jobs. Kubernetes does
  // not preempt for a pod no node could ever take (UnschedulableAndUnresolvable).
  if (post_filters_.empty() || last_status_.code == StatusCode::kUnschedulableAndUnresolvable) return failed();
  const bool may_help =
      std::any_of(post_filters_.begin(), post_filters_.end(), [&](const PostFilterPlugin* pf) { return pf->may_help(job); });
  if (!only.empty()) {
    // The caller narrowed the search; never evict for a job that fits elsewhere as things are.
    // When no post-filter could help, this search only looks for such a place: if there is none,
    // the narrowed attempt's diagnosis stands (the engine keeps a narrowed job's last full reason
    // anyway), and the node index skips counting every node's rejection (diagnose_).
    const auto narrowed = may_help ? DiagnosisState{} : diagnosis_state();
    Statement st(cluster);
    bool placed = false;
    {
      const Setting diagnose(diagnose_, may_help);
      placed = place_job(cluster, job, id, st, out, {}).ok() && bind_all(st).ok();
    }
    if (placed) {
      last_status_ = Status::success();
      return last_status_;
    }
    out.clear();
    if (!may_help) restore(narrowed);
  }
  if (!may_help) return failed();
  const auto saved = diagnosis_state();
  std::vector<TaskPlacement> probe_out;
  const FitsFn fits = [&](std::span<const NodeId> nodes) {
    Statement probe(cluster);   // rolls back: a what-if
    return place_job(cluster, job, id, probe, probe_out, nodes).ok();
  };
  for (auto* pf : post_filters_) {
    Statement st(cluster);
    std::vector<JobId> victims;
    if (!pf->post_filter(cluster, job, id, st, victims, fits).ok()) continue;
    Status s = place_job(cluster, job, id, st, out, {});
    if (s.ok()) s = bind_all(st);
    if (s.ok()) {
      victims_ = std::move(victims);
      last_status_ = s;
      return s;
    }
    out.clear();
  }
  restore(saved);
  return failed();
}

Status Scheduler::probe(ClusterState& cluster, const JobSpec& job, JobId id, std::vector<TaskPlacement>& out,
                        std::span<const NodeId> only, bool keep) {
  victims_.clear();
  preemption_msg_.clear();
  out.clear();
  Statement st(cluster);   // rolled back unless kept
  {
    const Setting real(rotate_, true);   // explained, and sampling moves on, as schedule() does
    last_status_ = place_job(cluster, job, id, st, out, only);
  }
  if (keep && last_status_.ok()) {
    for (std::size_t b = 0; b < binds_.size() && last_status_.ok(); ++b) last_status_ = binds_[b]->bind(cluster, job, id, out);
    if (last_status_.ok()) st.commit();
  }
  if (!last_status_.ok()) out.clear();
  return last_status_;
}

Status Scheduler::what_if(ClusterState& cluster, const JobSpec& job, JobId id, std::vector<TaskPlacement>& out) {
  const auto saved = diagnosis_state();
  Statement st(cluster);
  // The diagnosis stays that of the last real attempt (restored below), so a failed what-if need
  // not count why every node refused (EASY backfill's reservation search fails many of them).
  Status s;
  {
    const Setting quiet(diagnose_, false);
    s = place_job(cluster, job, id, st, out, {});
  }
  if (s.ok()) st.commit();
  else out.clear();
  restore(saved);
  return s;
}

void Scheduler::attach(const ClusterState& cluster, std::span<const JobSpec> workload, const JobsView* jobs) {
  jobs_ = jobs;
  node_priorities_.assign(cluster.node_count(), {});
  running_priorities_.clear();
  priorities_fed_ = false;
  start_ = 0;   // each run's node search starts at the first node, however often the scheduler ran
  if (index_) index_->clear();   // plugins are attached again: their answers may change
  const std::span<const JobSpec> seen = target_.empty() ? workload : std::span<const JobSpec>(target_);
  for (auto* p : events_) p->attach(cluster, seen, jobs);
}

namespace {
/// The distinct nodes of `placements`, in first-seen order.
void distinct_nodes(std::span<const TaskPlacement> placements, std::vector<std::uint32_t>& out) {
  out.clear();
  for (const auto& p : placements) {
    if (std::find(out.begin(), out.end(), p.node.value) == out.end()) out.push_back(p.node.value);
  }
}
}  // namespace

void Scheduler::job_started(const JobSpec& job, JobId id, std::span<const TaskPlacement> placements) {
  for (auto* p : events_) p->job_started(job, id, placements);
  if (kube_preemption_) {
    priorities_fed_ = true;
    std::vector<std::uint32_t> nodes;
    distinct_nodes(placements, nodes);
    for (const auto n : nodes) {
      if (n >= node_priorities_.size()) node_priorities_.resize(n + 1);
      node_priorities_[n].insert(job.priority);
    }
    running_priorities_.insert(job.priority);
  }
}

void Scheduler::job_stopped(const JobSpec& job, JobId id, std::span<const TaskPlacement> placements) {
  for (auto* p : events_) p->job_stopped(job, id, placements);
  if (kube_preemption_) {
    std::vector<std::uint32_t> nodes;
    distinct_nodes(placements, nodes);
    for (const auto n : nodes) {
      if (n >= node_priorities_.size()) continue;
      if (const auto it = node_priorities_[n].find(job.priority); it != node_priorities_[n].end()) node_priorities_[n].erase(it);
    }
    if (const auto it = running_priorities_.find(job.priority); it != running_priorities_.end()) running_priorities_.erase(it);
  }
}

Status Scheduler::admit(const JobSpec& job, JobId id) {
  for (std::size_t i = 0; i < events_.size(); ++i) {
    const Status s = events_[i]->job_submitted(job, id);
    if (s.ok()) continue;
    // Every plugin hears that the job left, not only those that admitted it: a plugin may
    // have noted it on submission without charging it (job_left tolerates a job never charged).
    for (auto* p : events_) p->job_left(job, id);
    return s;
  }
  return Status::success();
}

void Scheduler::job_left(const JobSpec& job, JobId id) {
  for (auto* p : events_) p->job_left(job, id);
}

std::uint64_t Scheduler::equivalence_class(const JobSpec& job) const {
  // The job's address is unique among the jobs of a run: no two jobs share a class.
  if (opaque_) return static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(&job));
  std::uint64_t h = request_class(job);
  if (reads_queue_ || !post_filters_.empty()) {
    // Quotas and preemption read who the job is, not only what it asks for.
    h ^= fnv1a64(job.queue, static_cast<std::uint64_t>(job.priority) * 0x9e3779b97f4a7c15ULL + (job.constraints.preempt_never ? 1 : 0));
  }
  return h;
}

void Scheduler::index_pools(const ClusterState& cluster) {
  if (pools_for_ == &cluster && pools_nodes_ == cluster.node_count()) return;
  pools_.clear();
  pools_for_ = &cluster;
  pools_nodes_ = cluster.node_count();
  std::map<std::string, std::size_t> by_name;
  for (std::uint32_t i = 0; i < cluster.node_count(); ++i) {
    const auto& t = cluster.spec(NodeId{i}).tpu;
    if (t.generation.empty() || t.pool_topology.empty()) continue;
    auto [it, added] = by_name.try_emplace(t.pool, pools_.size());
    if (added) {
      TpuPool p;
      p.generation = &TpuCatalog::builtin().require(t.generation, {});
      p.chips_per_host = t.chips;
      p.topology = parse_tpu_topology(t.pool_topology, {});
      p.grid = pool_grid(*p.generation, p.topology, t.chips, {});
      p.provisioned = t.provisioned;
      p.hosts.assign(p.grid.host_count(), NodeId{});
      pools_.push_back(std::move(p));
    }
    auto& pool = pools_[it->second];
    const auto index = t.coords.empty() ? 0 : pool.grid.index_of(t.coords);
    GPUSCHED_ASSERT(index < pool.hosts.size() && !pool.hosts[index].valid(), "two TPU hosts at the same pool coordinates");
    pool.hosts[index] = NodeId{i};
  }
}

Status Scheduler::place_slice(const ClusterState& cluster, const JobSpec& job, JobId id, std::vector<TaskPlacement>& out) {
  index_pools(cluster);
  const auto& r = job.request.tpu;
  rejects_.clear();
  pre_filter_rejected_ = false;
  batch_rejected_ = false;
  resolvable_.clear();
  rejected_nodes_ = 0;
  unresolvable_nodes_ = 0;
  nodes_seen_ = 0;
  cycle_.clear();
  TaskContext ctx{job, id, 0, cycle_, {}, jobs_};
  for (auto* pf : pre_filters_) {
    const Status s = pf->pre_filter(cluster, ctx);
    if (!s.ok() && !s.is_skip()) return s;
  }
  const auto slice = parse_tpu_topology(r.topology, {});
  std::vector<std::uint8_t> free;
  for (const auto& pool : pools_) {
    if (pool.generation->name != r.generation || pool.chips_per_host != r.chips) continue;
    if (pool.provisioned && !slice_matches_pool(pool.topology, slice)) continue;
    nodes_seen_ += pool.hosts.size();
    free.assign(pool.hosts.size(), 0);
    for (std::size_t h = 0; h < pool.hosts.size(); ++h) {
      const NodeId node = pool.hosts[h];
      if (!node.valid()) continue;
      bool ok = true;
      for (const auto* f : filters_) {
        const Status s = f->filter(cluster, ctx, node);
        if (!s.ok()) {
          note_filter_reject(*f, cluster, ctx, node, s);
          ok = false;
          break;
        }
      }
      free[h] = ok ? 1 : 0;
    }
    if (!batch_filters_.empty()) {
      std::vector<NodeId> passed;
      for (std::size_t h = 0; h < pool.hosts.size(); ++h) {
        if (free[h] != 0) passed.push_back(pool.hosts[h]);
      }
      apply_batch_filters(cluster, ctx, passed);
      std::sort(passed.begin(), passed.end());
      for (std::size_t h = 0; h < pool.hosts.size(); ++h) {
        free[h] = (free[h] != 0 && std::binary_search(passed.begin(), passed.end(), pool.hosts[h])) ? 1 : 0;
      }
    }
    std::optional<std::vector<std::uint32_t>> block;
    if (pool.provisioned) {
      if (std::all_of(free.begin(), free.end(), [](std::uint8_t f) { return f != 0; })) {
        block.emplace(pool.hosts.size());
        for (std::uint32_t h = 0; h < pool.hosts.size(); ++h) (*block)[h] = h;
      }
    } else {
      block = find_slice_block(*pool.generation, pool.chips_per_host, pool.grid, free, slice);
    }
    if (!block) continue;
    out.clear();
    for (std::size_t t = 0; t < block->size(); ++t) {
      TaskContext host_ctx{job, id, static_cast<std::int32_t>(t), cycle_, out, jobs_};
      TaskPlacement p;
      const NodeId node = pool.hosts[(*block)[t]];
      if (!device_select_->select(cluster, host_ctx, node, p)) {
        GPUSCHED_ASSERT(false, "device_select could not grant devices on a TPU host the filters accepted");
      }
      p.node = node;
      p.tpu_chips = r.chips;
      p.slowdown = cluster.placement_slowdown(job.request, p);
      out.push_back(std::move(p));
    }
    return Status::success();
  }
  // No pool can ever serve the slice (generation, host size, topology, size): say why, naming the
  // pools, instead of "0/0 nodes are available" (issue 15).
  std::vector<TpuPoolView> views;
  views.reserve(pools_.size());
  for (const auto& pool : pools_) {
    std::size_t present = 0;
    std::string_view name;
    for (const NodeId n : pool.hosts) {
      if (!n.valid()) continue;
      if (present++ == 0) name = cluster.spec(n).tpu.pool;
    }
    views.push_back({name, pool.generation, pool.chips_per_host, pool.topology, pool.provisioned, present});
  }
  if (auto why = explain_unservable_slice(views, TpuCatalog::builtin().require(r.generation, {}), r.chips, slice); !why.empty()) {
    const auto all = static_cast<std::uint32_t>(cluster.node_count());
    rejects_.clear();
    resolvable_.clear();
    batch_rejected_ = false;
    const Status s = Status::unresolvable("tpu-slice", interned(std::move(why)));
    note_reject(s, all);
    nodes_seen_ = all;
    rejected_nodes_ = all;
    unresolvable_nodes_ = all;
    return s;
  }
  return Status::unschedulable("tpu-slice", interned("no TPU pool has a free " + r.topology + " block of " + r.generation + " hosts"));
}

bool Scheduler::resolvable_list_needed(const JobSpec& job) const {
  // preemption_message's loop over the nodes: with the priority index, only when a running job
  // has a lower priority than `job` (without it, always).
  return !priorities_fed_ || (!running_priorities_.empty() && *running_priorities_.begin() < job.priority);
}

std::string Scheduler::preemption_message(const ClusterState& cluster, const JobSpec& job) const {
  // defaultpreemption's PodEligibleToPreemptOthers, then Evaluator.Preempt's FitError over all
  // nodes: "Preemption is not helpful for scheduling" for the nodes filtered out as
  // UnschedulableAndUnresolvable; "No preemption victims found for incoming pod" for the others
  // when nothing of lower priority runs there. A node with lower-priority pods is what the peer
  // dry-runs (its filters again without them): not modelled here, so no message then.
  if (job.constraints.preempt_never) return "preemption: not eligible due to preemptionPolicy=Never.";
  const std::size_t all = cluster.node_count();
  if (nodes_seen_ != all || rejected_nodes_ != all || batch_rejected_) return {};
  if (pre_filter_rejected_ && unresolvable_nodes_ != all) return {};
  if (resolvable_.count != 0 && !jobs_) return {};
  if (resolvable_list_needed(job)) {   // (else no running job has a lower priority)
    GPUSCHED_ASSERT(resolvable_.listed, "preemption: resolvable nodes not listed");
    for (const NodeId n : resolvable_.nodes) {
      if (priorities_fed_) {
        // Same answer as scanning every job on the node (below), from the priority index.
        if (n.value < node_priorities_.size() && !node_priorities_[n.value].empty() &&
            *node_priorities_[n.value].begin() < job.priority) {
          return {};
        }
      } else {
        for (const JobId j : jobs_->running_on(n)) {
          if (jobs_->spec(j).priority < job.priority) return {};
        }
      }
    }
  }
  const std::size_t no_victims = resolvable_.count;
  std::vector<std::string> items;
  if (no_victims > 0) items.push_back(std::to_string(no_victims) + " No preemption victims found for incoming pod");
  if (all > no_victims) items.push_back(std::to_string(all - no_victims) + " Preemption is not helpful for scheduling");
  std::sort(items.begin(), items.end());
  std::string out = "preemption: 0/" + std::to_string(all) + " nodes are available:";
  for (std::size_t i = 0; i < items.size(); ++i) out += (i ? ", " : " ") + items[i];
  return out + ".";
}

std::vector<std::string> Scheduler::warnings() const {
  std::vector<std::string> out;
  for (const auto& p : owned_) {
    for (auto& w : p->warnings()) {
      if (std::find(out.begin(), out.end(), w) == out.end()) out.push_back(std::move(w));
    }
  }
  return out;
}

std::string Scheduler::last_diagnosis() const {
  if (kube_diagnosis_) {
    // kube-scheduler's FitError.Error(): "0/N nodes are available: <pre-filter message>." or the
    // "<count> <reason>" items of every rejected node's reasons, sorted as text (Go sort.Strings).
    std::map<std::string_view, std::uint32_t> counts;
    for (const auto& r : rejects_) counts[r.reason] += r.count;
    std::vector<std::string> items;
    for (const auto& [reason, count] : counts) items.push_back(std::to_string(count) + " " + std::string(reason));
    std::sort(items.begin(), items.end());
    std::string out = std::to_string(nodes_seen_ - std::min<std::size_t>(nodes_seen_, rejected_nodes_)) + "/" +
                      std::to_string(nodes_seen_) + " nodes are available";
    const std::string preemption = preemption_msg_.empty() ? "" : " " + preemption_msg_;
    if (items.empty()) {
      if (!last_status_.reason.empty()) out += ": " + std::string(last_status_.reason) + ".";
      return out + preemption;
    }
    if (pre_filter_rejected_) return out + ": " + std::string(rejects_.front().reason) + "." + preemption;
    out += ":";
    for (std::size_t i = 0; i < items.size(); ++i) out += (i ? ", " : " ") + items[i];
    return out + "." + preemption;
  }
  auto sorted = rejects_;
  std::stable_sort(sorted.begin(), sorted.end(), [](const Reject& a, const Reject& b) { return a.count > b.count; });
  std::uint32_t rejected = 0;
  for (const auto& r : sorted) rejected += r.count;
  std::string out = std::to_string(nodes_seen_ > rejected ? nodes_seen_ - rejected : 0) + "/" +
                    std::to_string(nodes_seen_) + " nodes are available";
  if (sorted.empty()) {
    if (!last_status_.reason.empty()) out += ": " + std::string(last_status_.reason);
    return out;
  }
  out += ":";
  for (std::size_t i = 0; i < sorted.size(); ++i) {
    out += (i ? ", " : " ") + std::to_string(sorted[i].count) + " " + std::string(sorted[i].reason) + " (" +
           std::string(sorted[i].plugin) + ")";
  }
  return out;
}

}  // namespace gpusched::policies
