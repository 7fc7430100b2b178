#include <gpusched/scheduling.hpp>

#include <functional>

#include <gpusched/rng.hpp>

namespace gpusched {

std::uint64_t request_class(const JobSpec& j) {
  const auto& r = j.request;
  std::uint64_t h = 0xcbf29ce484222325ULL;
  auto mix = [&h](std::uint64_t v) { h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); };
  mix(static_cast<std::uint64_t>(r.cpu_milli));
  mix(static_cast<std::uint64_t>(r.memory_mib));
  mix(static_cast<std::uint64_t>(r.gpu.mode));
  mix(static_cast<std::uint64_t>(r.gpu.count));
  mix(static_cast<std::uint64_t>(r.gpu.milli));
  mix(static_cast<std::uint64_t>(r.gpu.memory_mib));
  mix(std::hash<GpuModelMask>{}(r.allowed_models));
  mix(std::hash<GpuModelMask>{}(r.resource_models));   // amd.com/gpu vs nvidia.com/gpu (issue 15)
  mix(fnv1a64(r.gpu.profile));   // MIG / vGPU profile: a failed 3g says nothing about a 4g
  mix(r.gpu.shared_name ? 1U : 0U);   // nvidia.com/gpu.shared is served by other units than nvidia.com/gpu
  mix(fnv1a64(r.gpu.resource_name));
  mix(static_cast<std::uint64_t>(r.tpu.chips));
  mix(fnv1a64(r.tpu.generation));
  mix(fnv1a64(r.tpu.topology));
  for (const auto& [id, amount] : r.extended) {
    mix(id.value);
    mix(static_cast<std::uint64_t>(amount));
  }
  // Placement constraints: a job restricted to some nodes says nothing about an unrestricted one.
  const auto& c = j.constraints;
  for (const auto& [k, v] : c.node_selector) { mix(fnv1a64(k)); mix(fnv1a64(v)); }
  for (const auto& t : c.tolerations) { mix(fnv1a64(t.key)); mix(fnv1a64(t.op)); mix(fnv1a64(t.value)); mix(fnv1a64(t.effect)); }
  auto mix_term = [&](const LabelTerm& term) {
    for (const auto& req : term) {
      mix(fnv1a64(req.key));
      mix(fnv1a64(req.op));
      for (const auto& v : req.values) mix(fnv1a64(v));
    }
    mix(0x7e57);
  };
  for (const auto& term : c.affinity.required) mix_term(term);
  for (const auto& [w, term] : c.affinity.preferred) { mix(static_cast<std::uint64_t>(w)); mix_term(term); }
  mix(fnv1a64(c.app));
  mix(static_cast<std::uint64_t>(c.max_per_node));
  // A DRA claim decides which devices fit (a claim for two GPUs on one PCIe root is not a plain
  // two-GPU request): jobs of one ResourceClaimTemplate share its resolved claims.
  mix(fnv1a64(c.claim_template));
  mix(fnv1a64(c.resource_claim));
  mix(static_cast<std::uint64_t>(j.tasks));
  mix(static_cast<std::uint64_t>(j.min_available));
  return h;
}

}  // namespace gpusched
