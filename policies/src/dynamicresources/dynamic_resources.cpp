#include <gpusched/policies/dynamicresources/dynamic_resources.hpp>

#include <algorithm>

#include <gpusched/dra/nvidia.hpp>

namespace gpusched::policies {

std::optional<std::vector<dra::Allocation>> DynamicResources::allocate(const ClusterState& cluster, const dra::DeviceClaims& claims,
                                                                       NodeId node, bool* partial_tpu) const {
  // Devices depend on the nodes' specs only: a copy of the cluster they were built for (EASY
  // backfill's scratch cluster, a copy of a copy) has the same, so they are kept for it.
  const auto known = [&](std::uint64_t instance) {
    return instance != 0 && (devices_->cluster == instance ||
                             std::find(devices_->copies.begin(), devices_->copies.end(), instance) != devices_->copies.end());
  };
  const bool reuse = devices_ && devices_->classes == claims.classes.get() && devices_->given == claims.slices.get() && devices_->nodes.size() == cluster.node_count() &&
                     (known(cluster.instance()) || known(cluster.copied_from()));
  if (reuse && !known(cluster.instance())) {
    if (devices_->copies.size() >= 16) devices_->copies.erase(devices_->copies.begin());
    devices_->copies.push_back(cluster.instance());
  }
  if (!reuse) {
    Devices d;
    d.cluster = cluster.instance();
    d.classes = claims.classes.get();
    d.given = claims.slices.get();
    // The scenario checked the given slices against these nodes (resolve_claims).
    auto published = dra::simulated_devices(cluster.specs(), cluster.catalog(), dra::given_slices(claims.slices));
    d.slice_of_node = std::move(published.slice_of_node);
    d.nic_slice_of_node = std::move(published.nic_slice_of_node);
    d.nodes = std::move(published.nodes);
    for (const auto& units : published.units) d.unit_of.insert(d.unit_of.end(), units.begin(), units.end());
    d.alloc = std::make_unique<dra::Allocator>(*claims.classes, std::move(published.slices));
    devices_ = std::move(d);
    in_use_ = devices_->alloc->no_devices_in_use();
  }
  const Devices& d = *devices_;
  const std::int32_t slice = d.slice_of_node[node.value];
  if (slice >= 0) {
    // This node's devices: a GPU with any task on it is in use (DRA hands GPUs out whole), and so
    // is a busy GI. TPU chips are counted, not told apart: the first (chips - free) are in use.
    const auto gpus = cluster.gpus(node);
    const std::uint32_t first = d.alloc->first_device(static_cast<std::size_t>(slice));
    const auto count = static_cast<std::uint32_t>(d.alloc->slices()[static_cast<std::size_t>(slice)].devices.size());
    const std::int64_t chips_used = std::int64_t{cluster.spec(node).tpu.chips} - cluster.node(node).tpu_chips_free;
    for (std::uint32_t k = first; k < first + count; ++k) {
      const auto& u = d.unit_of[k];
      if (u.tpu_chip) {
        in_use_[k] = u.gpu < chips_used ? 1 : 0;
        continue;
      }
      const auto& g = gpus[u.gpu];
      in_use_[k] = u.mig_profile < 0 ? (g.fully_free() ? 0 : 1) : (cluster.mig_state(g).busy_at(u.mig_start) ? 1 : 0);
    }
  }
  if (const std::int32_t nics = d.nic_slice_of_node[node.value]; nics >= 0) {
    // The node's NICs: held by a task or free (TaskPlacement::nics).
    const std::uint64_t busy = cluster.node(node).nics_busy;
    const std::uint32_t first = d.alloc->first_device(static_cast<std::size_t>(nics));
    const auto count = static_cast<std::uint32_t>(d.alloc->slices()[static_cast<std::size_t>(nics)].devices.size());
    for (std::uint32_t k = first; k < first + count; ++k) in_use_[k] = (busy >> d.unit_of[k].gpu) & 1U;
  }
  // Google's TPU driver prepares only claims that take all of a host's chips; Kubernetes would
  // bind the pod and it would not start. Here such a node does not fit (docs/dra.md).
  auto on = dra::allocate_on_node(*d.alloc, d.nodes[node.value], cluster.spec(node), claims.pointers(), in_use_);
  if (on.partial_tpu && partial_tpu != nullptr) *partial_tpu = true;
  if (!on.error.empty()) {
    const std::string text = std::string("dynamic-resources: ") + (claims.shared ? "ResourceClaim" : "ResourceClaimTemplate") + " \"" +
                             claims.template_name + "\": " + on.error;
    if (std::find(errors_.begin(), errors_.end(), text) == errors_.end()) errors_.push_back(text);
  }
  return std::move(on.got);
}

std::optional<NodeId> DynamicResources::shared_node(const TaskContext& ctx) const {
  // An earlier task of this attempt allocated the claim or joined it: the job's tasks share it.
  if (!ctx.placed.empty()) return ctx.placed.front().node;
  const auto it = shared_.find(ctx.job.constraints.claims.get());
  if (it != shared_.end() && !it->second.users.empty()) return it->second.node;
  return std::nullopt;
}

Status DynamicResources::filter(const ClusterState& cluster, const TaskContext& ctx, NodeId node) const {
  const auto& c = ctx.job.constraints;
  if (!c.claims) {
    if (c.claim_template.empty() && c.resource_claim.empty()) return Status::success();
    return Status::unresolvable(name(), "claim not resolved (load the job through a scenario)");
  }
  if (c.claims->shared) {
    // An allocated claim: usable on its node only, by at most 256 pods at once
    // (dynamicresources.go PreFilter and Filter; dynamicresources_test.go "wrong-topology").
    const auto it = shared_.find(c.claims.get());
    const std::size_t users = (it == shared_.end() ? 0 : it->second.tasks()) + ctx.placed.size();
    if (users >= kMaxClaimUsers) return Status::unresolvable(name(), "resourceclaim in use");
    if (const auto at = shared_node(ctx)) {
      return *at == node ? Status::success() : Status::unresolvable(name(), "resourceclaim not available on the node");
    }
  }
  bool partial_tpu = false;
  if (!allocate(cluster, *c.claims, node, &partial_tpu)) {
    // The TPU driver's rule, when it is what refused the node (the pod's reason says so).
    return Status::unschedulable(name(), partial_tpu ? "the claim takes part of the host's TPU chips, which the TPU driver refuses"
                                                      : "cannot allocate all claims");
  }
  return Status::success();
}

bool DynamicResources::select(const ClusterState& cluster, const TaskContext& ctx, NodeId node, TaskPlacement& out) const {
  const auto& c = ctx.job.constraints;
  out.nics = 0;
  if (!c.claims) return pick_devices(cluster, ctx.request(), node, {}, chooser_, out);
  if (c.claims->shared) {
    // Allocated already: the devices stay with the job holding them ("good-topology").
    if (const auto at = shared_node(ctx)) return *at == node && pick_devices(cluster, ctx.request(), node, {}, chooser_, out);
  }
  const auto got = allocate(cluster, *c.claims, node);
  if (!got) return false;
  // The devices taken, in the allocator's order. Admin access monitors a device without taking
  // it: the job is not granted that GPU.
  std::vector<std::uint16_t> order;
  std::vector<GpuGrant> instances;
  std::int32_t chips = 0;
  std::uint64_t nics = 0;
  const Devices& d = *devices_;
  const auto gpus = cluster.gpus(node);
  for (const auto& a : *got) {
    for (const auto& r : a.devices) {
      if (r.admin_access) continue;
      const auto k = d.alloc->find_device(r.driver, r.pool, r.device);
      if (!k) return false;
      const auto& u = d.unit_of[*k];
      if (u.nic) nics |= std::uint64_t{1} << u.gpu;
      else if (u.tpu_chip) ++chips;
      else if (u.mig_profile < 0) order.push_back(u.gpu);
      else instances.push_back(ClusterState::mig_instance_grant(u.gpu, cluster.mig_geometry(gpus[u.gpu]), u.mig_profile, u.mig_start));
    }
  }
  // NICs are granted as the allocator chose them, besides the GPUs, GIs or chips.
  const auto granted_with_nics = [&](bool ok) {
    if (ok) out.nics = nics;
    return ok;
  };
  // The request is as many whole GPUs, GIs of one profile or TPU chips (the scenario resolved it
  // so); with firstAvailable alternatives of different counts, the smallest: the task takes what
  // the alternative chosen here takes (dra::DeviceClaims::most_devices at most).
  // A shared claim's jobs state no device: the one allocating it is granted the claim's kind.
  std::optional<TaskRequest> holding;
  if (c.claims->shared) {
    holding = ctx.request();
    holding->gpu = c.claims->holder;
  }
  const auto& r = holding ? *holding : ctx.request();
  if (r.tpu.chips > 0 || chips > 0) {
    // A host's chips: as many as the alternative chosen here takes (the whole host, by the TPU
    // driver's rule), between what the job states and most_devices.
    if (!order.empty() || !instances.empty() || chips < r.tpu.chips || chips > std::max(c.claims->most_devices, r.tpu.chips)) return false;
    out.node = node;
    out.gpus.clear();
    out.tpu_chips = chips;
    return granted_with_nics(true);
  }
  const auto wanted = static_cast<std::size_t>(r.gpu.mode == GpuMode::kNone ? 0 : r.gpu.count);
  const auto most = static_cast<std::size_t>(std::max<std::int32_t>(c.claims->most_devices, static_cast<std::int32_t>(wanted)));
  const auto granted = r.gpu.mode == GpuMode::kMig ? instances.size() : order.size();
  if (granted < wanted || granted > most) return false;
  if (r.gpu.mode == GpuMode::kMig) {
    if (!order.empty()) return false;
    out.node = node;
    out.gpus = std::move(instances);
    out.tpu_chips = r.tpu.chips;
    return granted_with_nics(true);
  }
  if (!instances.empty()) return false;
  if (granted == wanted) return granted_with_nics(pick_devices(cluster, r, node, order, chooser_, out));
  TaskRequest taken = r;   // a larger alternative: grant every GPU it chose
  taken.gpu.count = static_cast<std::int32_t>(granted);
  return granted_with_nics(pick_devices(cluster, taken, node, order, chooser_, out));
}

void DynamicResources::attach(const ClusterState& /*cluster*/, std::span<const JobSpec> /*workload*/, const JobsView* /*jobs*/) {
  shared_.clear();   // a new run
}

void DynamicResources::job_started(const JobSpec& job, JobId id, std::span<const TaskPlacement> placements) {
  const auto& c = job.constraints.claims;
  if (!c || !c->shared || placements.empty()) return;
  auto& use = shared_[c.get()];
  if (use.users.empty()) use.node = placements.front().node;
  const auto tasks = static_cast<std::uint32_t>(placements.size());
  // (An elastic job that grows is told again, with all its tasks.)
  const auto it = std::find_if(use.users.begin(), use.users.end(), [&](const auto& u) { return u.first == id; });
  if (it != use.users.end()) it->second = tasks;
  else use.users.emplace_back(id, tasks);
}

void DynamicResources::job_stopped(const JobSpec& job, JobId id, std::span<const TaskPlacement> /*placements*/) {
  const auto& c = job.constraints.claims;
  if (!c || !c->shared) return;
  const auto it = shared_.find(c.get());
  if (it == shared_.end()) return;
  std::erase_if(it->second.users, [&](const auto& u) { return u.first == id; });
  if (it->second.users.empty()) shared_.erase(it);   // no pod reserves it: the controller deallocates it
}

std::vector<std::string> DynamicResources::warnings() const {
  auto out = Plugin::warnings();
  auto errors = errors_;
  std::sort(errors.begin(), errors.end());
  out.insert(out.end(), errors.begin(), errors.end());
  return out;
}

}  // namespace gpusched::policies
