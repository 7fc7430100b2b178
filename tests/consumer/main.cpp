// Places one job on a two-node cluster with the installed library's binpack profile.
// Exit code 0 only when the job lands where binpack must put it.
#include <cstdio>
#include <vector>

#include <gpusched/cluster.hpp>
#include <gpusched/policies/framework/registry.hpp>
#include <gpusched/policies/framework/scheduler.hpp>
#include <gpusched/scenario/scenario.hpp>   // the rest of the umbrella must compile and link too
#include <gpusched/traces/native.hpp>
#include <gpusched/version.hpp>

int main() {
  using namespace gpusched;
  GpuCatalog catalog = GpuCatalog::builtin();
  const GpuModelId a100 = catalog.require("A100-80GB", {});

  std::vector<NodeSpec> nodes(2);
  nodes[0].name = "node-a";   // 4 GPUs
  nodes[1].name = "node-b";   // 2 GPUs: the tighter fit for a 2-GPU job
  for (int i = 0; i < 2; ++i) {
    nodes[i].cpu_milli = 32'000;
    nodes[i].memory_mib = 256 * 1024;
    nodes[i].gpus.assign(i == 0 ? 4 : 2, GpuSpec{a100, 0});
  }
  ClusterState cluster(catalog, ResourceTable{}, nodes);

  ResourceTable resources;
  JobSpec job;
  job.name = "train";
  job.request = parse_requests({{"cpu", "8"}, {"memory", "64Gi"}, {"nvidia.com/gpu", "2"}}, {}, catalog, resources, {});

  policies::Scheduler scheduler(policies::builtin_profile("binpack"), policies::Registry::with_builtins(), 42);
  std::vector<TaskPlacement> placements;
  const Status status = scheduler.schedule(cluster, job, JobId{0}, placements);
  if (!status.ok() || placements.size() != 1) {
    std::printf("not placed: %s\n", scheduler.last_diagnosis().c_str());
    return 1;
  }
  const std::string& chosen = cluster.spec(placements[0].node).name;
  std::printf("gpusched %s placed %s on %s (%zu GPUs)\n", kVersion, job.name.c_str(), chosen.c_str(),
              placements[0].gpus.size());
  const bool placed_right = chosen == "node-b" && placements[0].gpus.size() == 2 && cluster.totals().gpus_busy == 2;
  const bool umbrella_links = !scenario::demo_scenario_text().empty();
  return placed_right && umbrella_links ? 0 : 1;
}
