// The kubectl node importer on MIG and device-plugin sharing nodes: exact MIG packing (NVIDIA's
// all-balanced and random legal layouts), the GPU count with and without GPU feature discovery's
// nvidia.com/gpu.count, and time-sliced / MPS nodes as GFD labels them. The fixture
// tests/data/k8s/nodes-device-plugin.json is written by hand in kubectl's format (README there).
#include <catch2/catch.hpp>

#include <cstdint>
#include <filesystem>
#include <map>
#include <random>
#include <sstream>
#include <string>

#include <gpusched/error.hpp>
#include <gpusched/gpu_catalog.hpp>
#include <gpusched/mig.hpp>
#include <gpusched/traces/kubernetes.hpp>

#include "support/support.hpp"

using namespace gpusched;
using namespace gpusched::traces;
namespace t = gpusched::test;

namespace {

std::vector<NodeSpec> nodes_from(const std::string& text) {
  GpuCatalog catalog = GpuCatalog::builtin();
  ResourceTable resources;
  std::istringstream in(text);
  return read_kube_nodes(in, "nodes.json", catalog, resources);
}

std::string one_node(const std::string& labels, const std::string& allocatable) {
  return R"({"apiVersion": "v1", "kind": "List", "items": [{"kind": "Node", "metadata": {"name": "n0", "labels": {)" +
         labels + R"(}}, "spec": {}, "status": {"allocatable": {)" + allocatable + "}}}]}";
}

template <class F>
TraceError trace_error(F&& f) {
  try {
    f();
  } catch (const TraceError& e) {
    return e;
  }
  FAIL("no TraceError");
  throw;
}

const NodeSpec& find(const std::vector<NodeSpec>& nodes, const std::string& name) {
  for (const auto& n : nodes) {
    if (n.name == name) return n;
  }
  FAIL("no node " << name);
  throw;
}

/// Instances per profile name over the node's GPUs; checks every GPU's layout is legal.
std::map<std::string, int> mig_counts(const NodeSpec& n, const GpuCatalog& catalog) {
  std::map<std::string, int> out;
  for (const auto& g : n.gpus) {
    if (g.partition != GpuPartition::kMig) continue;
    const auto& geo = *catalog[g.model].mig;
    MigLayout l;
    for (const auto& i : g.mig) {
      INFO("profile " << geo.profiles[static_cast<std::size_t>(i.profile)].name << " at " << i.start);
      REQUIRE(l.can_place(geo, i.profile, i.start));
      l.place(geo, i.profile, i.start);
      ++out[geo.profiles[static_cast<std::size_t>(i.profile)].name];
    }
  }
  return out;
}

std::string allocatable(const std::map<std::string, int>& counts) {
  std::string out = R"("cpu": "64", "memory": "512Gi")";
  for (const auto& [p, k] : counts) out += R"(, "nvidia.com/mig-)" + p + R"(": ")" + std::to_string(k) + "\"";
  return out;
}

}  // namespace

TEST_CASE("NVIDIA's all-balanced on 8 A100-80GB imports with and without the GPU count label", "[traces][kubernetes][mig]") {
  GpuCatalog catalog = GpuCatalog::builtin();
  ResourceTable resources;
  const auto nodes = read_kube_nodes(t::source_dir() / "tests" / "data" / "k8s" / "nodes-device-plugin.json", catalog, resources);
  // NVIDIA/mig-parted examples/config.yaml, all-balanced for A100-80GB: 2 x 1g.10gb, 1 x 2g.20gb, 1 x 3g.40gb per GPU.
  const std::map<std::string, int> per_gpu{{"1g.10gb", 2}, {"2g.20gb", 1}, {"3g.40gb", 1}};
  for (const auto* name : {"a100-balanced-0", "a100-balanced-nolabel"}) {
    INFO(name);
    const auto& n = find(nodes, name);
    REQUIRE(n.gpus.size() == 8);   // never a ninth GPU without the label
    const auto counts = mig_counts(n, catalog);
    for (const auto& [p, k] : per_gpu) CHECK(counts.at(p) == 8 * k);
    for (const auto& g : n.gpus) {
      CHECK(g.partition == GpuPartition::kMig);
      CHECK(catalog[g.model].name == "A100-80GB");
      CHECK_FALSE(g.mig.empty());   // a split of the instances, not necessarily all-balanced's own
    }
  }
}

TEST_CASE("MIG instances drawn from random legal layouts always import onto that many GPUs", "[traces][kubernetes][mig]") {
  GpuCatalog catalog = GpuCatalog::builtin();
  std::mt19937_64 rng(15);   // the engine alone: its output is fixed by the standard
  for (const auto* model_name : {"A100-80GB", "A100-40GB", "H100-80GB", "A30"}) {
    const auto id = catalog.find(model_name);
    if (!id || !catalog[*id].mig) continue;
    const auto& geo = *catalog[*id].mig;
    const auto maximal = mig_maximal_layouts(geo);
    REQUIRE_FALSE(maximal.empty());
    for (int trial = 0; trial < 25; ++trial) {
      const int gpus = 1 + static_cast<int>(rng() % 8);
      std::map<std::string, int> counts;
      for (int g = 0; g < gpus; ++g) {
        // A random maximal layout, then a random subset of it (still legal).
        const auto& l = maximal[static_cast<std::size_t>(rng() % maximal.size())];
        for (const auto& i : l) {
          if (rng() % 4 != 0) ++counts[geo.profiles[static_cast<std::size_t>(i.profile)].name];
        }
      }
      if (counts.empty()) continue;
      const std::string product = std::string(model_name) == "A30" ? "NVIDIA-A30" : std::string("NVIDIA-") + model_name;
      INFO(model_name << " on " << gpus << " GPU(s): " << allocatable(counts));
      const auto labelled = nodes_from(one_node(R"("nvidia.com/gpu.product": ")" + product + R"(", "nvidia.com/gpu.count": ")" +
                                                    std::to_string(gpus) + "\"",
                                                allocatable(counts)));
      REQUIRE(static_cast<int>(labelled[0].gpus.size()) == gpus);
      CHECK(mig_counts(labelled[0], catalog) == counts);
      // Without the label: the fewest GPUs that hold them, so never more than the real count.
      const auto unlabelled = nodes_from(one_node(R"("nvidia.com/gpu.product": ")" + product + "\"", allocatable(counts)));
      CHECK(static_cast<int>(unlabelled[0].gpus.size()) <= gpus);
      CHECK(mig_counts(unlabelled[0], catalog) == counts);
      if (unlabelled[0].gpus.size() > 1) {
        // ... and the fewest: one GPU less does not hold them.
        const auto fewer = std::to_string(unlabelled[0].gpus.size() - 1);
        const auto e = trace_error([&] {
          (void)nodes_from(one_node(R"("nvidia.com/gpu.product": ")" + product + R"(", "nvidia.com/gpu.count": ")" + fewer + "\"",
                                    allocatable(counts)));
        });
        CHECK(e.detail().find("do not fit") != std::string::npos);
      }
    }
  }
}

TEST_CASE("MIG instances that fit no split onto the labelled GPUs are refused with the reason", "[traces][kubernetes][mig]") {
  // Two 4g.40gb cannot share one A100-80GB (4 + 4 compute slices > 7), so 3 need 3 GPUs.
  const auto e = trace_error([] {
    (void)nodes_from(one_node(R"("nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB", "nvidia.com/gpu.count": "2")",
                              R"("cpu": "8", "memory": "64Gi", "nvidia.com/mig-4g.40gb": "3")"));
  });
  CHECK(e.id() == "gpusched.trace_error.102");
  CHECK(e.where().field == "items[0].status.allocatable.nvidia.com/mig-4g.40gb");
  CHECK(e.detail().find("3 x 4g.40gb") != std::string::npos);
  CHECK(e.detail().find("nvidia.com/gpu.count = 2") != std::string::npos);
  // The same without the label: three GPUs, one 4g.40gb each.
  const auto n = nodes_from(one_node(R"("nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB")",
                                     R"("cpu": "8", "memory": "64Gi", "nvidia.com/mig-4g.40gb": "3")"));
  CHECK(n[0].gpus.size() == 3);
}

TEST_CASE("The MIG manager's all-<profile> config tells the GPU count exactly", "[traces][kubernetes][mig]") {
  // all-1g.10gb on A100-80GB is 7 x 1g.10gb per GPU: 14 instances are 2 GPUs.
  const auto n = nodes_from(one_node(R"("nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB", "nvidia.com/mig.config": "all-1g.10gb")",
                                     R"("cpu": "8", "memory": "64Gi", "nvidia.com/mig-1g.10gb": "14")"));
  CHECK(n[0].gpus.size() == 2);
  // 10 instances are not a whole number of all-1g.10gb GPUs: refused, naming the label.
  const auto e = trace_error([] {
    (void)nodes_from(one_node(R"("nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB", "nvidia.com/mig.config": "all-1g.10gb")",
                              R"("cpu": "8", "memory": "64Gi", "nvidia.com/mig-1g.10gb": "10")"));
  });
  CHECK(e.where().field == "items[0].metadata.labels.nvidia.com/mig.config");
  CHECK(e.detail().find("nvidia.com/gpu.count") != std::string::npos);
  // mig-parted names configs after the 80 GB parts: all-1g.10gb is 7 x 1g.5gb on an A100-40GB,
  // so a name that is not the instances' profile tells nothing (the fewest GPUs, 2, hold 10).
  const auto forty = nodes_from(one_node(R"("nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB", "nvidia.com/mig.config": "all-1g.10gb")",
                                         R"("cpu": "8", "memory": "64Gi", "nvidia.com/mig-1g.5gb": "10")"));
  CHECK(forty[0].gpus.size() == 2);
}

TEST_CASE("Time-sliced and MPS nodes come in with their replicas, renamed or not", "[traces][kubernetes][sharing]") {
  GpuCatalog catalog = GpuCatalog::builtin();
  ResourceTable resources;
  const auto nodes = read_kube_nodes(t::source_dir() / "tests" / "data" / "k8s" / "nodes-device-plugin.json", catalog, resources);
  const auto& ts = find(nodes, "a100-ts-0");
  REQUIRE(ts.gpus.size() == 2);
  for (const auto& g : ts.gpus) {
    CHECK(g.partition == GpuPartition::kTimeSlicing);
    CHECK(g.replicas == 4);
    CHECK(catalog[g.model].name == "A100-80GB");   // the -SHARED suffix is GFD's, not the model's
  }
  CHECK_FALSE(ts.sharing.rename_by_default);
  const auto& mps = find(nodes, "a100-mps-renamed");
  REQUIRE(mps.gpus.size() == 2);
  CHECK(mps.gpus[0].partition == GpuPartition::kMps);
  CHECK(mps.gpus[1].replicas == 4);
  CHECK(mps.sharing.rename_by_default);
  CHECK_FALSE(mps.sharing.fail_requests_greater_than_one.has_value());   // the plugin's default (true for MPS)
  // nvidia.com/gpu.shared is not an extended resource of its own.
  CHECK(mps.extended.empty());

  // GFD writes nvidia.com/gpu.replicas = 0 when sharing is disabled: plain GPUs.
  const auto plain = nodes_from(one_node(R"("nvidia.com/gpu.product": "NVIDIA-L4", "nvidia.com/gpu.replicas": "0")",
                                         R"("cpu": "8", "memory": "32Gi", "nvidia.com/gpu": "2")"));
  REQUIRE(plain[0].gpus.size() == 2);
  CHECK(plain[0].gpus[0].partition == GpuPartition::kWhole);
}

TEST_CASE("Sharing labels that do not add up are refused naming the field", "[traces][kubernetes][sharing]") {
  auto e = trace_error([] {
    (void)nodes_from(one_node(R"("nvidia.com/gpu.product": "NVIDIA-L4", "nvidia.com/gpu.replicas": "4")",
                              R"("cpu": "8", "memory": "32Gi", "nvidia.com/gpu.shared": "6")"));
  });
  CHECK(e.where().field == "items[0].status.allocatable.nvidia.com/gpu.shared");
  CHECK(e.detail().find("not a multiple") != std::string::npos);
  e = trace_error([] {
    (void)nodes_from(one_node(R"("nvidia.com/gpu.product": "NVIDIA-L4")", R"("cpu": "8", "memory": "32Gi", "nvidia.com/gpu.shared": "4")"));
  });
  CHECK(e.detail().find("nvidia.com/gpu.replicas") != std::string::npos);
  e = trace_error([] {
    (void)nodes_from(one_node(R"("nvidia.com/gpu.product": "NVIDIA-L4", "nvidia.com/gpu.replicas": "2", "nvidia.com/gpu.sharing-strategy": "mig")",
                              R"("cpu": "8", "memory": "32Gi", "nvidia.com/gpu": "4")"));
  });
  CHECK(e.where().field == "items[0].metadata.labels.nvidia.com/gpu.sharing-strategy");
  // Replicated MIG instances are not modelled: refused rather than read as more instances.
  e = trace_error([] {
    (void)nodes_from(one_node(R"("nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB", "nvidia.com/mig-1g.10gb.replicas": "2")",
                              R"("cpu": "8", "memory": "32Gi", "nvidia.com/mig-1g.10gb": "14")"));
  });
  CHECK(e.where().field == "items[0].metadata.labels.nvidia.com/mig-1g.10gb.replicas");
}
