// claims.csv: the DRA devices each task holds through its claim (issue 18: "outputs name the
// allocated devices").
#include <algorithm>
#include <map>
#include <optional>
#include <ostream>

#include <gpusched/dra/nvidia.hpp>
#include <gpusched/scenario/scenario.hpp>
#include <gpusched/sim/outputs.hpp>

namespace gpusched::scenario {

std::vector<ClaimRow> claim_rows(const sim::Engine& engine) {
  std::vector<ClaimRow> rows;
  const auto& cluster = engine.cluster();
  const auto workload = engine.workload();
  // The devices as the dynamic-resources plugin published them, built when the first claim job
  // is met (most runs have none), and one allocator per set of DeviceClasses.
  std::optional<dra::ClusterDevices> published;
  std::map<const std::vector<dra::DeviceClass>*, dra::Allocator> allocators;
  for (std::size_t j = 0; j < workload.size(); ++j) {
    const auto& spec = workload[j];
    const auto& claims = spec.constraints.claims;
    if (!claims) continue;
    const auto& rt = engine.job(JobId{static_cast<std::uint32_t>(j)});
    if (rt.state != sim::JobState::kRunning && rt.state != sim::JobState::kCompleted) continue;
    if (!published) published = dra::simulated_devices(cluster.specs(), cluster.catalog(), dra::given_slices(claims->slices));
    auto it = allocators.find(claims->classes.get());
    if (it == allocators.end()) it = allocators.emplace(claims->classes.get(), dra::Allocator(*claims->classes, published->slices)).first;
    const dra::Allocator& alloc = it->second;
    const auto ptrs = claims->pointers();
    for (std::size_t t = 0; t < rt.placements.size(); ++t) {
      const auto& p = rt.placements[t];
      auto row = [&](std::string request, std::string driver, std::string pool, std::string device, bool admin) {
        rows.push_back(ClaimRow{spec.name, static_cast<std::int32_t>(t), cluster.spec(p.node).name, claims->template_name,
                                std::move(request), std::move(driver), std::move(pool), std::move(device), admin});
      };
      // Which request each granted GPU or NIC serves: the allocator again, with only the granted
      // devices free. The search takes devices in a fixed order and its first solution wins, so among
      // these devices it finds the same solution it found when it chose them (a test compares).
      // Devices with admin access are found again as they were: in-use marks never limit them.
      // The node's own slice and its NICs' (TaskPlacement::nics).
      const auto on_node = [&](const std::vector<std::int32_t>& of) { return p.node.value < of.size() ? of[p.node.value] : -1; };
      const std::int32_t slices[] = {on_node(published->slice_of_node), on_node(published->nic_slice_of_node)};
      std::optional<std::vector<dra::Allocation>> got;
      std::vector<std::pair<std::size_t, std::size_t>> granted;   // (slice, device) the task holds
      if (slices[0] >= 0 || slices[1] >= 0) {
        auto in_use = std::vector<std::uint8_t>(alloc.device_count(), 1);
        for (const std::int32_t slice : slices) {
          if (slice < 0) continue;
          const auto& units = published->units[static_cast<std::size_t>(slice)];
          for (std::size_t k = 0; k < units.size(); ++k) {
            const auto& u = units[k];
            // TPU chips are counted, not told apart: the task holds the first it took (all of
            // them, as Google's driver takes a host's chips together).
            const bool held = u.nic ? ((p.nics >> u.gpu) & 1U) != 0
                              : u.tpu_chip ? u.gpu < p.tpu_chips
                                           : std::any_of(p.gpus.begin(), p.gpus.end(), [&](const GpuGrant& x) {
                                               return x.index == u.gpu && x.mig_profile == u.mig_profile &&
                                                      (u.mig_profile < 0 || x.mig_start == u.mig_start);
                                             });
            if (!held) continue;
            in_use[alloc.first_device(static_cast<std::size_t>(slice)) + k] = 0;
            granted.emplace_back(static_cast<std::size_t>(slice), k);
          }
        }
        try {
          got = alloc.allocate(published->nodes[p.node.value], ptrs, in_use);
        } catch (const dra::AllocationError&) {
          got.reset();
        }
      }
      if (got) {
        for (const auto& a : *got) {
          for (const auto& r : a.devices) row(r.request, r.driver, r.pool, r.device, r.admin_access);
        }
      } else {
        // Not expected (the plugin granted these devices for the claim): name them without the
        // request rather than leave them out.
        for (const auto& [slice, k] : granted) {
          const auto& sl = alloc.slices()[slice];
          row("", sl.driver, sl.pool, sl.devices[k].name, false);
        }
      }
    }
  }
  return rows;
}

void write_claims_csv(std::ostream& out, const std::vector<ClaimRow>& rows) {
  using sim::csv_field;
  out << "job,task,node,claim_template,request,driver,pool,device,admin_access\n";
  for (const auto& r : rows) {
    out << csv_field(r.job) << ',' << r.task << ',' << csv_field(r.node) << ',' << csv_field(r.claim_template) << ','
        << csv_field(r.request) << ',' << csv_field(r.driver) << ',' << csv_field(r.pool) << ',' << csv_field(r.device) << ','
        << (r.admin_access ? "true" : "false") << '\n';
  }
}

std::vector<ClaimRow> RunResult::claims() const { return claim_rows(engine()); }

}  // namespace gpusched::scenario
