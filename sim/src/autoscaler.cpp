#include <gpusched/sim/autoscaler.hpp>

#include <algorithm>

#include <gpusched/assert.hpp>
#include <gpusched/constraints.hpp>
#include <gpusched/dra/nvidia.hpp>
#include <gpusched/error.hpp>

namespace gpusched::sim {

std::string_view to_string(Expander e) {
  switch (e) {
    case Expander::kLeastWaste: return "least-waste";
    case Expander::kFirst: return "first";
    case Expander::kLeastIdleGpu: return "least-idle-gpu";
  }
  return "?";
}

std::optional<Expander> parse_expander(std::string_view s) {
  if (s == "least-waste") return Expander::kLeastWaste;
  if (s == "first") return Expander::kFirst;
  if (s == "least-idle-gpu") return Expander::kLeastIdleGpu;
  return std::nullopt;
}

namespace {

constexpr double kUsPerHour = 3.6e9;

[[noreturn]] void bad(std::size_t i, const std::string& field, const std::string& message) {
  throw_error(ErrorCode::kScenarioBadValue, {"", 0, "autoscaler/groups/" + std::to_string(i) + "/" + field}, message);
}

/// A node removed must have been seen empty by at least one scheduling cycle: never 0 µs.
SimTime idle_wait(const AutoscaleGroup& g) { return std::max(g.scale_down_idle, SimTime::from_us(1)); }

}  // namespace

Autoscaler::Autoscaler(Engine& engine, ClusterState& cluster, AutoscalerConfig config)
    : engine_(&engine), cluster_(&cluster), config_(std::move(config)), group_of_(cluster.node_count(), -1) {
  if (config_.scan_interval.us <= 0 || config_.scan_interval.is_forever()) {
    throw_error(ErrorCode::kScenarioBadValue, {"", 0, "autoscaler/scan_interval_s"},
                "the autoscaler's scan interval must be positive and finite");
  }
  const auto& groups = config_.groups;
  for (std::size_t i = 0; i < groups.size(); ++i) {
    const auto& g = groups[i];
    const std::string who = "autoscaled group '" + g.name + "'";
    if (g.name.empty()) bad(i, "name", "an autoscaled group needs a name");
    for (std::size_t k = 0; k < i; ++k) {
      if (groups[k].name == g.name) bad(i, "name", "two autoscaled groups are named '" + g.name + "'");
    }
    if (g.max == 0) bad(i, "max", who + " has no nodes (max 0)");
    if (static_cast<std::uint64_t>(g.first) + g.max > cluster.node_count()) {
      bad(i, "max", who + ": nodes " + std::to_string(g.first) + ".." + std::to_string(std::uint64_t{g.first} + g.max - 1) +
                        " are outside the cluster (" + std::to_string(cluster.node_count()) + " nodes)");
    }
    if (g.min > g.max) {
      bad(i, "min", who + ": min (" + std::to_string(g.min) + ") is above max (" + std::to_string(g.max) + ")");
    }
    if (g.provisioning_delay.us < 0 || g.provisioning_delay.is_forever()) {
      bad(i, "provisioning_delay_s", who + ": the provisioning delay must be >= 0 and finite");
    }
    if (g.scale_down_idle.us < 0) bad(i, "scale_down_idle_s", who + ": the scale-down idle time must be >= 0");
    for (std::uint32_t n = g.first; n < g.first + g.max; ++n) {
      if (group_of_[n] >= 0) {
        bad(i, "max", who + " overlaps group '" + groups[static_cast<std::size_t>(group_of_[n])].name + "' at node " +
                          cluster.spec(NodeId{n}).name);
      }
      group_of_[n] = static_cast<std::int32_t>(i);
    }
  }
  static_nodes_ = static_cast<std::uint32_t>(std::count(group_of_.begin(), group_of_.end(), -1));
  groups_.resize(groups.size());
  scratch_.reserve(groups.size());
  for (std::size_t i = 0; i < groups.size(); ++i) {
    const auto& g = groups[i];
    std::vector<NodeSpec> specs;
    specs.reserve(g.max);
    for (std::uint32_t n = g.first; n < g.first + g.max; ++n) specs.push_back(cluster.spec(NodeId{n}));
    scratch_.emplace_back(cluster.catalog(), cluster.resources(), std::move(specs));
    scratch_.back().set_device_options(cluster.device_options());
    auto& gs = groups_[i];
    gs.nodes.resize(g.max);
    for (std::uint32_t k = 0; k < g.max; ++k) {
      const NodeId n{g.first + k};
      if (k < g.min) {
        gs.nodes[k].mode = NodeMode::kUp;
        cluster.set_schedulable(n, true);
        ++gs.up;
      } else {
        cluster.set_schedulable(n, false);   // absent until provisioned
      }
    }
    gs.peak_up = gs.up;
    peak_up_ += gs.up;
  }
  template_fit_.assign(engine.workload().size() * groups.size(), 0);
  unhelpable_.assign(engine.workload().size(), 0);
}

void Autoscaler::on_start(const Engine& e) {
  start_ = e.now();
  for (auto& gs : groups_) {
    for (auto& ni : gs.nodes) {
      if (ni.mode != NodeMode::kUp) continue;
      ni.billed_since = start_;
      ni.empty_since = start_;   // min nodes: protected by min until the group grows
    }
  }
}

void Autoscaler::arm(SimTime t) {
  if (t.is_forever() || !armed_.insert(t).second) return;
  engine_->call_at(t, [this](SimTime now) {
    armed_.erase(now);
    scan(now);
  });
}

void Autoscaler::arm_next_grid(SimTime now) {
  const std::int64_t step = config_.scan_interval.us;
  std::int64_t k = now.us / step;
  if (now.us < 0 && now.us % step != 0) --k;   // floor
  arm(SimTime::from_us((k + 1) * step));
}

void Autoscaler::mark_fresh(NodeId n, SimTime now) {
  if (fresh_at_ != now) {
    fresh_.clear();
    fresh_at_ = now;
  }
  fresh_.push_back(n);
}

void Autoscaler::node_emptied(std::uint32_t g, std::uint32_t i, SimTime now) {
  auto& ni = groups_[g].nodes[i];
  const NodeId n{config_.groups[g].first + i};
  if (ni.mode != NodeMode::kUp || cluster_->node(n).tasks != 0 || !ni.empty_since.is_forever()) return;
  ni.empty_since = now;
  // At min size it cannot go now; a later scan (after the group grows) looks again.
  if (groups_[g].up + groups_[g].provisioning > config_.groups[g].min) arm(now + idle_wait(config_.groups[g]));
}

void Autoscaler::stop_billing(GroupState& gs, NodeInfo& ni, SimTime now) {
  if (ni.billed_since.is_forever()) return;
  gs.billed_us += (now - ni.billed_since).us;
  ni.billed_since = SimTime::forever();
}

void Autoscaler::on_submit(SimTime t, JobId, const Engine&) { arm_next_grid(t); }

void Autoscaler::on_job_start(SimTime t, JobId j, std::span<const TaskPlacement> placements, const Engine& e) {
  unhelpable_[j.value] = 0;
  on_job_grow(t, j, placements, e);
}

void Autoscaler::on_job_grow(SimTime, JobId, std::span<const TaskPlacement> added, const Engine&) {
  for (const auto& p : added) {
    const auto g = group_of(p.node);
    if (g < 0) continue;
    const auto gi = static_cast<std::size_t>(g);
    groups_[gi].nodes[p.node.value - config_.groups[gi].first].empty_since = SimTime::forever();
  }
}

void Autoscaler::on_job_finish(SimTime t, JobId j, const Engine& e) {
  for (const auto& p : e.job(j).placements) {
    mark_fresh(p.node, t);
    const auto g = group_of(p.node);
    if (g >= 0) node_emptied(static_cast<std::uint32_t>(g), p.node.value - config_.groups[static_cast<std::size_t>(g)].first, t);
  }
}

void Autoscaler::on_job_fail(SimTime t, JobId, std::string_view, const Engine&) {
  // The placements are gone by now: look at every group node.
  for (std::uint32_t g = 0; g < groups_.size(); ++g) {
    for (std::uint32_t i = 0; i < groups_[g].nodes.size(); ++i) node_emptied(g, i, t);
  }
}

void Autoscaler::on_job_requeue(SimTime t, JobId j, std::string_view reason, const Engine& e) {
  on_job_fail(t, j, reason, e);
  arm_next_grid(t);
}

void Autoscaler::on_node(SimTime t, NodeId n, bool up, const Engine&) {
  const auto g = group_of(n);
  if (up) mark_fresh(n, t);
  if (g < 0) return;
  const auto gi = static_cast<std::uint32_t>(g);
  auto& gs = groups_[gi];
  const std::uint32_t i = n.value - config_.groups[gi].first;
  auto& ni = gs.nodes[i];
  if (up) {
    if (ni.mode == NodeMode::kUp) return;
    if (ni.mode == NodeMode::kProvisioning) {
      --gs.provisioning;
    } else {
      ni.billed_since = t;   // brought up by a scenario event: billed from now
    }
    ni.mode = NodeMode::kUp;
    ++gs.up;
    gs.peak_up = std::max(gs.peak_up, gs.up);
    std::uint32_t total = 0;
    for (const auto& other : groups_) total += other.up;
    peak_up_ = std::max(peak_up_, total);
    node_emptied(gi, i, t);
    arm_next_grid(t);
  } else if (ni.mode == NodeMode::kUp) {
    // Taken down by a scenario event (a failure): gone, and no longer billed.
    ni.mode = NodeMode::kDown;
    ni.empty_since = SimTime::forever();
    --gs.up;
    stop_billing(gs, ni, t);
    arm_next_grid(t);
  }
}

void Autoscaler::on_end(SimTime end, const Engine&) { end_ = end; }

bool Autoscaler::matches(const JobSpec& spec, const NodeSpec& node) const {
  const auto& c = spec.constraints;
  if (!node_matches(c, node.labels)) return false;
  for (const auto& taint : node.taints) {
    if (taint.effect != TaintEffect::kPreferNoSchedule && !tolerated(c.tolerations, taint)) return false;
  }
  return true;
}

bool Autoscaler::fits_template(JobId j, std::uint32_t g) {
  auto& cached = template_fit_[static_cast<std::size_t>(j.value) * groups_.size() + g];
  if (cached == 0) {
    const auto& spec = engine_->workload()[j.value];
    const NodeId first{config_.groups[g].first};
    bool ok = spec.request.tpu.hosts <= 1 && cluster_->fits_empty(first, spec.request) && matches(spec, cluster_->spec(first));
    // A DRA claim: the group's node must hold it (its selectors, constraints and the TPU
    // driver's whole-host rule), not only the count the job states.
    if (ok && spec.constraints.claims) ok = claims_on(spec, g).has_value();
    cached = ok ? 1 : 2;
  }
  return cached == 1;
}

const std::optional<std::int32_t>& Autoscaler::claims_on(const JobSpec& spec, std::uint32_t g) {
  // Once per template (or shared claim) and group.
  const auto key = std::pair<const void*, std::uint32_t>(spec.constraints.claims.get(), g);
  auto it = claims_fit_.find(key);
  if (it == claims_fit_.end()) {
    const NodeId first{config_.groups[g].first};
    it = claims_fit_.emplace(key, dra::claims_fit_empty(*spec.constraints.claims, cluster_->spec(first), cluster_->catalog())).first;
  }
  return it->second;
}

bool Autoscaler::place(JobId j, std::uint32_t g, std::span<const std::uint32_t> slots, std::span<const std::uint32_t> fresh,
                       std::uint32_t& opened, std::vector<std::pair<JobId, TaskPlacement>>& undo) {
  const auto& spec = engine_->workload()[j.value];
  // A claim whose size depends on the node (firstAvailable alternatives of different counts, All
  // over nodes of different sizes) states its smallest: pack it as the group's nodes grant it.
  // A shared claim's job that would allocate it (scale_up passes no other) takes its devices.
  TaskRequest sized;
  const TaskRequest* asked = &spec.request;
  if (const auto& claims = spec.constraints.claims; claims && (claims->shared || spec.request.gpu.mode != GpuMode::kNone)) {
    const auto& taken = claims_on(spec, g);
    const GpuRequest& kind = claims->shared ? claims->holder : spec.request.gpu;
    if (taken && *taken > 0 && kind.mode != GpuMode::kNone && (claims->shared || *taken > spec.request.gpu.count)) {
      sized = spec.request;
      sized.gpu = kind;
      sized.gpu.count = *taken;
      asked = &sized;
    }
  } else if (claims && spec.request.tpu.chips > 0) {   // TPU chips: the whole host of the group's size
    const auto& taken = claims_on(spec, g);
    if (taken && *taken > spec.request.tpu.chips) {
      sized = spec.request;
      sized.tpu.chips = *taken;
      asked = &sized;
    }
  }
  const auto& r = *asked;
  auto& sc = scratch_[g];
  const std::size_t mark = undo.size();
  const std::uint32_t opened_before = opened;
  const std::int32_t per_node = spec.constraints.max_per_node;
  auto try_node = [&](std::uint32_t i) {
    const NodeId n{i};
    if (!sc.fits(n, r)) return false;
    if (per_node > 0) {   // max_per_node, counting this job's own tasks
      std::int32_t here = 0;
      for (std::size_t k = mark; k < undo.size(); ++k) here += undo[k].second.node == n ? 1 : 0;
      if (here >= per_node) return false;
    }
    if (!sc.pick_units(n, r, {}, nullptr, grants_)) return false;
    TaskPlacement p;
    p.node = n;
    p.gpus = grants_;
    p.tpu_chips = r.tpu.chips;
    sc.allocate(r, p);
    undo.emplace_back(j, std::move(p));
    return true;
  };
  std::int32_t placed = 0;
  for (std::int32_t t = 0; t < spec.tasks; ++t) {
    bool ok = false;
    for (std::uint32_t i : slots) {
      if ((ok = try_node(i))) break;
    }
    for (std::uint32_t k = 0; !ok && k < opened; ++k) ok = try_node(fresh[k]);
    if (!ok && opened < fresh.size() && try_node(fresh[opened])) {
      ++opened;
      ok = true;
    }
    if (!ok) break;
    ++placed;
  }
  if (placed >= std::max(spec.min_available, 1)) return true;
  while (undo.size() > mark) {
    sc.undo_allocate(r, undo.back().second);
    undo.pop_back();
  }
  opened = opened_before;
  return false;
}

void Autoscaler::rollback(std::uint32_t g, std::vector<std::pair<JobId, TaskPlacement>>& undo) {
  auto& sc = scratch_[g];
  for (auto it = undo.rbegin(); it != undo.rend(); ++it) sc.undo_allocate(engine_->workload()[it->first.value].request, it->second);
  undo.clear();
}

void Autoscaler::scan(SimTime now) {
  scale_up(now);
  scale_down(now);
}

void Autoscaler::scale_up(SimTime now) {
  const auto pending = engine_->pending_jobs();
  if (pending.empty()) return;
  const auto ngroups = static_cast<std::uint32_t>(groups_.size());
  const auto workload = engine_->workload();

  // The jobs to consider: not refused on empty group nodes before, fitting some template, and
  // not about to start on capacity freed at this very instant (the scheduling cycle of this
  // instant runs after the scan).
  std::vector<JobId> jobs;
  bool deferred = false;
  // Shared DRA claims (resource_claim): a job of a claim in use can only join its node, which no
  // new node helps; of a free claim's waiting jobs the first allocates it (packed as taking its
  // devices below) and the others join it there.
  std::set<std::string_view> claims_taken;
  bool claims_read = false;
  for (JobId j : pending) {
    if (unhelpable_[j.value]) continue;
    if (const auto& c = workload[j.value].constraints; !c.resource_claim.empty()) {
      if (!claims_read) {
        claims_read = true;
        for (std::uint32_t n = 0; n < cluster_->node_count(); ++n) {
          for (const JobId r : engine_->running_on(NodeId{n})) {
            const auto& name = workload[r.value].constraints.resource_claim;
            if (!name.empty()) claims_taken.insert(std::string_view(name));
          }
        }
      }
      if (!claims_taken.insert(std::string_view(c.resource_claim)).second) continue;
    }
    bool any = false;
    for (std::uint32_t g = 0; g < ngroups && !any; ++g) any = fits_template(j, g);
    if (!any) continue;
    const auto& spec = workload[j.value];
    if (fresh_at_ == now && spec.min_available <= 1) {
      const bool soon = std::any_of(fresh_.begin(), fresh_.end(), [&](NodeId n) {
        return cluster_->fits(n, spec.request) && matches(spec, cluster_->spec(n));
      });
      if (soon) {
        deferred = true;
        continue;
      }
    }
    jobs.push_back(j);
  }
  if (deferred) arm_next_grid(now);
  if (jobs.empty()) return;

  // Per group (scratch node indices): empty nodes that were up before now, nodes on their
  // way, and the nodes that can be asked for (down, in index order).
  std::vector<std::vector<std::uint32_t>> idle(ngroups), coming(ngroups), down(ngroups);
  for (std::uint32_t g = 0; g < ngroups; ++g) {
    const auto& gs = groups_[g];
    for (std::uint32_t i = 0; i < gs.nodes.size(); ++i) {
      const auto& ni = gs.nodes[i];
      if (ni.mode == NodeMode::kUp && ni.empty_since < now) idle[g].push_back(i);
      else if (ni.mode == NodeMode::kProvisioning) coming[g].push_back(i);
      else if (ni.mode == NodeMode::kDown) down[g].push_back(i);
    }
  }

  // 1. Capacity that exists or is coming: empty up nodes first, then provisioning ones. A job
  //    that fits on empty up nodes alone was refused there by the scheduler for a reason this
  //    model does not see (or its queue policy holds it back): it never triggers a scale-up
  //    until it starts (else: provision, stay empty, remove, provision again ...).
  std::vector<std::vector<std::pair<JobId, TaskPlacement>>> held(ngroups);
  std::vector<JobId> left;
  std::vector<std::uint32_t> slots;
  for (JobId j : jobs) {
    bool helped = false;
    for (std::uint32_t g = 0; g < ngroups && !helped; ++g) {
      if (!fits_template(j, g) || (idle[g].empty() && coming[g].empty())) continue;
      slots = idle[g];
      slots.insert(slots.end(), coming[g].begin(), coming[g].end());
      const std::size_t mark = held[g].size();
      std::uint32_t opened = 0;
      if (!place(j, g, slots, {}, opened, held[g])) continue;
      helped = true;
      const bool only_idle = std::all_of(held[g].begin() + static_cast<std::ptrdiff_t>(mark), held[g].end(), [&](const auto& e) {
        return std::binary_search(idle[g].begin(), idle[g].end(), e.second.node.value);
      });
      if (only_idle) {
        unhelpable_[j.value] = 1;
        while (held[g].size() > mark) {
          scratch_[g].undo_allocate(workload[j.value].request, held[g].back().second);
          held[g].pop_back();
        }
      }
    }
    if (!helped) left.push_back(j);
  }

  // 2. Each group's estimate for the rest: first fit onto its coming nodes' leftovers and then
  //    onto new template nodes, as many as the group has room for.
  std::vector<Option> options;
  std::vector<std::pair<JobId, TaskPlacement>> trial;
  for (std::uint32_t g = 0; g < ngroups && !left.empty(); ++g) {
    if (down[g].empty()) continue;
    Option o;
    o.group = g;
    for (JobId j : left) {
      if (fits_template(j, g)) place(j, g, coming[g], down[g], o.nodes, trial);
    }
    if (o.nodes > 0) {
      const auto& sc = scratch_[g];
      double cpu_cap = 0, cpu_free = 0, mem_cap = 0, mem_free = 0, gpu_cap = 0, gpu_free = 0;
      for (std::uint32_t k = 0; k < o.nodes; ++k) {
        const NodeId n{down[g][k]};
        cpu_cap += static_cast<double>(sc.cpu_capacity(n));
        cpu_free += static_cast<double>(sc.node(n).cpu_free_milli);
        mem_cap += static_cast<double>(sc.memory_capacity(n));
        mem_free += static_cast<double>(sc.node(n).memory_free_mib);
        gpu_cap += static_cast<double>(sc.node(n).gpu_count) * kMilliPerGpu;
        gpu_free += static_cast<double>(sc.node(n).gpu_milli_free);
      }
      const double idle_cpu = cpu_cap > 0 ? cpu_free / cpu_cap : 0.0;
      // Cluster Autoscaler: wastedCPU + wastedMemory (expander/waste/waste.go BestOption).
      o.waste = config_.expander == Expander::kLeastIdleGpu ? idle_cpu + (gpu_cap > 0 ? gpu_free / gpu_cap : 0.0)
                                                            : idle_cpu + (mem_cap > 0 ? mem_free / mem_cap : 0.0);
      options.push_back(o);
    }
    rollback(g, trial);
  }
  for (std::uint32_t g = 0; g < ngroups; ++g) rollback(g, held[g]);
  if (options.empty()) return;

  // 3. The expander picks one group (Cluster Autoscaler scales one group per loop).
  const Option* best = &options.front();
  if (config_.expander != Expander::kFirst) {
    for (const auto& o : options) {
      if (o.waste < best->waste) best = &o;
    }
  }
  const auto& cfg = config_.groups[best->group];
  auto& gs = groups_[best->group];
  for (std::uint32_t k = 0; k < best->nodes; ++k) {
    const std::uint32_t i = down[best->group][k];
    auto& ni = gs.nodes[i];
    const NodeId n{cfg.first + i};
    ni.mode = NodeMode::kProvisioning;
    ni.billed_since = now;
    ++gs.provisioning;
    ++gs.scale_ups;
    events_.push_back({now, best->group, n, true});
    engine_->push_node_event(now + cfg.provisioning_delay, n, true);
  }
  arm_next_grid(now);   // the jobs this group does not help may need another one
}

void Autoscaler::scale_down(SimTime now) {
  for (std::uint32_t g = 0; g < groups_.size(); ++g) {
    const auto& cfg = config_.groups[g];
    auto& gs = groups_[g];
    for (std::uint32_t i = 0; i < gs.nodes.size(); ++i) {
      auto& ni = gs.nodes[i];
      if (ni.mode != NodeMode::kUp || ni.empty_since.is_forever()) continue;
      const NodeId n{cfg.first + i};
      GPUSCHED_ASSERT(cluster_->node(n).tasks == 0, "autoscaler: a node marked empty runs tasks");
      if (ni.empty_since + idle_wait(cfg) > now || gs.up + gs.provisioning <= cfg.min) continue;
      ni.mode = NodeMode::kDown;
      ni.empty_since = SimTime::forever();
      --gs.up;
      ++gs.scale_downs;
      stop_billing(gs, ni, now);
      events_.push_back({now, g, n, false});
      engine_->push_node_event(now, n, false);
    }
  }
}

nlohmann::json Autoscaler::report() const {
  const SimTime end = end_.is_forever() ? engine_->now() : end_;
  nlohmann::json groups = nlohmann::json::array();
  double total = 0.0;
  std::uint64_t ups = 0, downs = 0;
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    const auto& gs = groups_[g];
    std::int64_t us = gs.billed_us;
    for (const auto& ni : gs.nodes) {
      if (!ni.billed_since.is_forever() && end > ni.billed_since) us += (end - ni.billed_since).us;
    }
    const double hours = static_cast<double>(us) / kUsPerHour;
    total += hours;
    ups += gs.scale_ups;
    downs += gs.scale_downs;
    groups.push_back({{"name", config_.groups[g].name},
                      {"min", config_.groups[g].min},
                      {"max", config_.groups[g].max},
                      {"peak_up", gs.peak_up},
                      {"scale_ups", gs.scale_ups},
                      {"scale_downs", gs.scale_downs},
                      {"node_hours", hours}});
  }
  const double span = end > start_ ? static_cast<double>((end - start_).us) : 0.0;
  return {{"expander", std::string(to_string(config_.expander))},
          {"scan_interval_s", config_.scan_interval.seconds()},
          {"groups", std::move(groups)},
          {"node_hours", total},
          {"static_node_hours", static_cast<double>(static_nodes_) * span / kUsPerHour},
          {"peak_up", peak_up_},
          {"scale_ups", ups},
          {"scale_downs", downs}};
}

}  // namespace gpusched::sim
