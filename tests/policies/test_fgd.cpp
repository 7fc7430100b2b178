// The FGD family (fgd, dotprod, gpu-clustering, gpu-packing) and FGD's fragmentation measure,
// on small clusters where the paper's rules give answers that can be checked by hand.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <gpusched/policies/fgd/fgd.hpp>
#include <gpusched/policies/fgd/fragmentation.hpp>
#include <gpusched/policies/framework/registry.hpp>
#include <gpusched/policies/framework/scheduler.hpp>
#include <gpusched/rng.hpp>

#include "support/support.hpp"

using namespace gpusched;
using namespace gpusched::policies;
namespace t = gpusched::test;

namespace {

Scheduler make(const std::string& profile, std::uint64_t seed = 1) {
  return Scheduler(builtin_profile(profile), Registry::with_builtins(), seed);
}

/// A built-in profile with its (only) score plugin's args replaced.
Scheduler make_with(const std::string& profile, nlohmann::json args) {
  auto p = builtin_profile(profile);
  p.score[0].args = std::move(args);
  return Scheduler(p, Registry::with_builtins(), 1);
}

/// Schedules `j` (and reports it started) and returns "node[gpus]" of every task, "" when not placed.
std::string place(Scheduler& s, ClusterState& c, const JobSpec& j, JobId id = JobId{0}) {
  std::vector<TaskPlacement> out;
  if (!s.schedule(c, j, id, out).ok()) return "";
  s.job_started(j, id, out);
  std::string r;
  for (const auto& p : out) {
    if (!r.empty()) r += ";";
    r += c.spec(p.node).name;
    if (p.gpus.empty()) continue;
    r += "[";
    for (std::size_t g = 0; g < p.gpus.size(); ++g) {
      if (g) r += ",";
      r += std::to_string(p.gpus[g].index);
    }
    r += "]";
  }
  return r;
}

TaskRequest share(int milli, int cores = 0) {
  t::Items items{{"gpusched.io/gpu-milli", std::to_string(milli)}};
  if (cores > 0) items.emplace_back("cpu", std::to_string(cores));
  return t::request(items);
}
TaskRequest gpus(int n, int cores = 0, std::vector<std::string> models = {}) {
  t::Items items{{"nvidia.com/gpu", std::to_string(n)}};
  if (cores > 0) items.emplace_back("cpu", std::to_string(cores));
  return t::request(items, std::move(models));
}
TaskRequest cpus(int cores) { return t::request({{"cpu", std::to_string(cores)}}); }
TaskRequest mig(const std::string& profile) { return t::request({{"nvidia.com/mig-" + profile, "1"}}); }

JobSpec job(const TaskRequest& r, std::int32_t tasks = 1) { return t::job("j", 0, 100, r, tasks); }

fgd::PodType type(const TaskRequest& r, std::int64_t pods = 1) {
  auto m = fgd::pod_type_of(r);
  m.pods = pods;
  return m;
}

/// A workload of `n` jobs of each request.
std::vector<JobSpec> workload(std::initializer_list<std::pair<TaskRequest, int>> mix) {
  std::vector<JobSpec> w;
  for (const auto& [r, n] : mix) {
    for (int i = 0; i < n; ++i) w.push_back(job(r));
  }
  return w;
}

/// A grant of one MIG GI of `profile` at `start` on GPU `gpu` of `node`, created for the task.
GpuGrant gi(const ClusterState& c, NodeId node, std::uint16_t gpu, const std::string& profile, int start) {
  const auto& g = c.gpus(node)[gpu];
  const auto& geo = c.mig_geometry(g);
  const int p = geo.find_profile(profile);
  const auto& prof = geo.profiles[static_cast<std::size_t>(p)];
  GpuGrant out{gpu, kMilliPerGpu * prof.compute_slices / geo.compute_slices, prof.memory_mib};
  out.mig_profile = static_cast<std::int8_t>(p);
  out.mig_start = static_cast<std::int8_t>(start);
  const auto& inst = c.mig_state(g).layout.instances();
  out.mig_created = std::none_of(inst.begin(), inst.end(), [&](const MigInstance& i) { return i.profile == p && i.start == start; });
  return out;
}

NodeSpec mig_node(std::string name, int gpu_count, bool dynamic, std::vector<MigInstance> layout = {}) {
  auto n = t::node(std::move(name), 32, 256, gpu_count, "A100-80GB");
  n.mig_dynamic = dynamic;
  for (auto& g : n.gpus) {
    g.partition = GpuPartition::kMig;
    g.mig = layout;
  }
  return n;
}

int profile_index(const std::string& name) {
  static const auto catalog = GpuCatalog::builtin();
  return catalog[*catalog.find("A100-80GB")].mig->find_profile(name);
}

}  // namespace

// ---------------------------------------------------------------------------- typical pod types

TEST_CASE("Typical pod types are the most popular shapes until the coverage is reached, renormalised", "[policies][fgd]") {
  // 20 pods: 10 one-GPU, 6 half-GPU (a 2-task job counts twice), 3 CPU-only, 1 two-GPU.
  std::vector<JobSpec> w = workload({{gpus(1, 4), 10}, {share(500, 2), 4}, {cpus(8), 3}, {gpus(2, 8), 1}});
  w.push_back(job(share(500, 2), 2));
  const auto types = fgd::typical_pod_types(w, 0.95);
  // 10 + 6 + 3 = 19 pods reach 95% of 20; the two-GPU shape is left out.
  REQUIRE(types.size() == 3);
  CHECK(fgd::same_pod_type(types[0].request, gpus(1, 4)));
  CHECK(fgd::same_pod_type(types[1].request, share(500, 2)));
  CHECK(fgd::same_pod_type(types[2].request, cpus(8)));
  CHECK(types[0].pods == 10);
  CHECK(types[1].pods == 6);
  CHECK(types[2].pods == 3);
  CHECK(types[0].probability == Approx(10.0 / 19));
  CHECK(types[1].probability == Approx(6.0 / 19));
  CHECK(types[2].probability == Approx(3.0 / 19));
  CHECK(types[2].request.gpu.mode == GpuMode::kNone);   // CPU-only pods are a type

  const auto half = fgd::typical_pod_types(w, 0.5);
  REQUIRE(half.size() == 1);
  CHECK(half[0].probability == 1.0);
  CHECK(fgd::typical_pod_types(w, 1.0).size() == 4);
  CHECK_THROWS_AS(fgd::typical_pod_types(w, 0.0), ProfileError);
  CHECK(fgd::typical_pod_types({}, 0.95).empty());
}

TEST_CASE("Typical pod types with equal counts keep the order in which they first appear", "[policies][fgd]") {
  const auto types = fgd::typical_pod_types(workload({{share(300), 2}, {gpus(1), 2}, {share(700), 2}}), 1.0);
  REQUIRE(types.size() == 3);
  CHECK(types[0].request.gpu.milli == 300);
  CHECK(types[1].request.gpu.mode == GpuMode::kWhole);
  CHECK(types[2].request.gpu.milli == 700);
  // Host memory does not distinguish types; CPU, GPU share and allowed models do.
  CHECK(fgd::same_pod_type(t::request({{"cpu", "1"}, {"memory", "4Gi"}}), t::request({{"cpu", "1"}, {"memory", "8Gi"}})));
  CHECK_FALSE(fgd::same_pod_type(gpus(1), gpus(1, 0, {"V100-32GB"})));
  CHECK_FALSE(fgd::same_pod_type(share(300), share(300, 1)));
}

// ---------------------------------------------------------------------------- fragmentation

TEST_CASE("Node fragment follows each case of the definition", "[policies][fgd]") {
  // 4x A100, 8 cores: GPU 2 has 300 milli free (a 0.7 share), GPU 3 is taken whole.
  auto c = t::cluster({t::node("n", 8, 64, 4), t::node("m", 8, 64, 2)});
  const NodeId n{0}, m{1};
  c.allocate(share(700), {n, {{2, 700, 0}}});
  c.allocate(gpus(1), {n, {{3, 1000, 81920}}});
  REQUIRE(fgd::node_idle_milli(c, n) == 2300);
  CHECK(fgd::gpu_idle_milli(c, n, 2) == 300);

  CHECK(fgd::node_fragment(c, n, type(cpus(1))) == 2300);                    // CPU-only: all idle GPU
  CHECK(fgd::node_fragment(c, n, type(gpus(1, 0, {"V100-32GB"}))) == 2300);  // model not allowed
  CHECK(fgd::node_fragment(c, n, type(gpus(1, 16))) == 2300);                // not enough CPU
  CHECK(fgd::node_fragment(c, n, type(gpus(3))) == 2300);                    // only 2 GPUs fully free
  CHECK(fgd::node_fragment(c, n, type(gpus(2))) == 300);                     // partly used GPU 2
  CHECK(fgd::node_fragment(c, n, type(gpus(1, 4))) == 300);
  CHECK(fgd::node_fragment(c, n, type(share(500))) == 300);                  // GPU 2: 300 < 500
  CHECK(fgd::node_fragment(c, n, type(share(200))) == 0);
  // Weighted by pods: (1 x 300 + 3 x 2300) / 4.
  const std::vector<fgd::PodType> types{type(share(500), 1), type(gpus(3), 3)};
  CHECK(fgd::node_fragmentation(c, n, types) == Approx(1800.0));

  // No GPU of node m has 500 free: all its idle GPU is fragment for the half-GPU type.
  c.allocate(share(700), {m, {{0, 700, 0}}});
  c.allocate(share(600), {m, {{1, 600, 0}}});
  CHECK(fgd::node_fragment(c, m, type(share(500))) == 700);
  CHECK(fgd::node_fragment(c, m, type(share(300))) == 0);

  const auto f = fgd::cluster_fragmentation(c, types);
  CHECK(f.idle_milli == 2300 + 700);
  CHECK(f.capacity_milli == 6000);
  CHECK(f.fragment_milli == Approx(1800.0 + (700 + 3 * 700) / 4.0));
  CHECK(f.ratio() == Approx(f.fragment_milli / 3000.0));
  CHECK(f.percent_of_capacity() == Approx(100.0 * f.fragment_milli / 6000.0));
}

TEST_CASE("MIG fragment on a dynamic A100 counts the free slices no legal GI of the type covers", "[policies][fgd]") {
  // Busy 1g.10gb at slice 0 and 3g.40gb at slices 4-7: slices 1, 2, 3 are free (3 x 125 milli).
  auto c = t::cluster({mig_node("a100", 1, true)});
  const NodeId n{0};
  c.allocate(mig("1g.10gb"), {n, {gi(c, n, 0, "1g.10gb", 0)}});
  c.allocate(mig("3g.40gb"), {n, {gi(c, n, 0, "3g.40gb", 4)}});
  REQUIRE(fgd::node_idle_milli(c, n) == 375);
  CHECK(fgd::node_fragment(c, n, type(mig("1g.10gb"))) == 0);     // starts 1, 2, 3 cover all three
  CHECK(fgd::node_fragment(c, n, type(mig("2g.20gb"))) == 125);   // only start 2 (slices 2-3): slice 1 is lost
  CHECK(fgd::node_fragment(c, n, type(mig("1g.20gb"))) == 125);   // starts 0, 2, 4, 6: only 2
  CHECK(fgd::node_fragment(c, n, type(mig("3g.40gb"))) == 375);   // starts 0 and 4 are taken
  CHECK(fgd::node_fragment(c, n, type(mig("4g.40gb"))) == 375);
  CHECK(fgd::node_fragment(c, n, type(gpus(1))) == 375);          // whole GPUs cannot use a MIG GPU
  CHECK(fgd::node_fragment(c, n, type(share(100))) == 375);

  // FGD puts a new 1g.10gb at slice 1, keeping slices 2-3 for a 2g.20gb; a start at 2 or 3
  // would strand them.
  auto s = make("fgd");
  const auto w = workload({{mig("1g.10gb"), 3}, {mig("2g.20gb"), 1}});
  s.attach(c, w, nullptr);
  std::vector<TaskPlacement> out;
  REQUIRE(s.schedule(c, job(mig("1g.10gb")), JobId{0}, out).ok());
  REQUIRE(out.size() == 1);
  REQUIRE(out[0].gpus.size() == 1);
  CHECK(out[0].gpus[0].mig_start == 1);
  CHECK(fgd::node_fragment(c, n, type(mig("2g.20gb"))) == 0);
  CHECK(t::cluster_violation(c).empty());
}

TEST_CASE("MIG fragment on a static A100 counts idle GIs the type cannot take", "[policies][fgd]") {
  // GIs 3g.40gb@0, 2g.20gb@4 (busy), 1g.10gb@6: idle GIs hold slices 0-3 and 6 (5 x 125 milli);
  // slice 7 belongs to no GI and is not capacity.
  const std::vector<MigInstance> layout{{profile_index("3g.40gb"), 0}, {profile_index("2g.20gb"), 4},
                                        {profile_index("1g.10gb"), 6}};
  auto c = t::cluster({mig_node("static", 1, false, layout)});
  const NodeId n{0};
  REQUIRE(fgd::node_idle_milli(c, n) == 875);
  c.allocate(mig("2g.20gb"), {n, {gi(c, n, 0, "2g.20gb", 4)}});
  REQUIRE(fgd::node_idle_milli(c, n) == 625);
  CHECK(fgd::node_fragment(c, n, type(mig("1g.10gb"))) == 500);   // only the 1g GI serves it
  CHECK(fgd::node_fragment(c, n, type(mig("3g.40gb"))) == 125);
  CHECK(fgd::node_fragment(c, n, type(mig("2g.20gb"))) == 625);   // its GI is busy: none left
  CHECK(fgd::node_fragment(c, n, type(cpus(1))) == 625);
}

// ---------------------------------------------------------------------------- fgd

TEST_CASE("FGD places a half-GPU pod on the GPU that keeps a whole GPU free for the typical one-GPU pods", "[policies][fgd]") {
  // GPU 0 has 600 free, GPU 1 is free. On GPU 1 no whole GPU would be left (F for 1-GPU pods:
  // 600 -> 1100); on GPU 0 the 1-GPU fragment shrinks to 100.
  auto c = t::cluster({t::node("n", 16, 64, 2)});
  c.allocate(share(400), {NodeId{0}, {{0, 400, 0}}});
  auto s = make("fgd");
  s.attach(c, workload({{gpus(1), 5}, {share(500), 5}}), nullptr);
  CHECK(place(s, c, job(share(500))) == "n[0]");
}

TEST_CASE("FGD leaves a leftover the typical pods can use where the tightest GPU would strand it", "[policies][fgd]") {
  // Free 600 and 550; a 500 pod. Tightest fit (gpu-packing) leaves 50 on GPU 1; FGD, whose
  // typical pods ask for 100, leaves 100 on GPU 0 and keeps GPU 1's 550.
  auto base = t::cluster({t::node("n", 16, 64, 2)});
  base.allocate(share(400), {NodeId{0}, {{0, 400, 0}}});
  base.allocate(share(450), {NodeId{0}, {{1, 450, 0}}});
  auto c = base;
  auto s = make("fgd");
  s.attach(c, workload({{share(100), 3}}), nullptr);
  CHECK(place(s, c, job(share(500))) == "n[0]");
  auto c2 = base;
  auto p = make("packing");
  CHECK(place(p, c2, job(share(500))) == "n[1]");
}

TEST_CASE("Best-fit and FGD disagree where Best-fit strands a whole GPU", "[policies][fgd]") {
  // a: 4 cores, 1 free GPU. b: 64 cores, GPUs with 700 and 1000 free. A (2 cores, 0.5 GPU) pod:
  // Best-fit takes a (least normalised free left), leaving no whole GPU there (ΔF = +450);
  // FGD fills b's used GPU (ΔF = 0.9 x -500 + 0.1 x 200 = -430).
  auto base = t::cluster({t::node("a", 4, 64, 1), t::node("b", 64, 256, 2)});
  base.allocate(share(300), {NodeId{1}, {{0, 300, 0}}});
  const auto w = workload({{gpus(1, 2), 9}, {share(500, 2), 1}});
  const auto pod = job(share(500, 2));

  auto c1 = base;
  auto bf = make("best-fit");
  CHECK(place(bf, c1, pod) == "a[0]");

  auto c2 = base;
  auto f = make("fgd");
  f.attach(c2, w, nullptr);
  CHECK(place(f, c2, pod) == "b[0]");

  // The growth FGD saw, per node.
  fgd::FragmentationCache cache(fgd::typical_pod_types(w));
  std::vector<GpuGrant> grants;
  CHECK(*cache.best_grants(base, pod.request, NodeId{0}, nullptr, grants) == Approx(450.0));
  CHECK(*cache.best_grants(base, pod.request, NodeId{1}, nullptr, grants) == Approx(-430.0));
  REQUIRE(grants.size() == 1);
  CHECK(grants[0].index == 0);
}

TEST_CASE("FGD without a workload treats the task's own shape as the only typical type", "[policies][fgd]") {
  auto c = t::cluster({t::node("n", 16, 64, 2)});
  c.allocate(share(400), {NodeId{0}, {{0, 400, 0}}});
  auto s = make("fgd");
  // Only half-GPU pods matter: GPU 1 keeps 500 usable (ΔF 0); GPU 0 would strand 100.
  CHECK(place(s, c, job(share(500))) == "n[1]");
  FgdPlugin plugin;
  CycleState state;
  const auto j = job(gpus(1));
  TaskContext ctx{j, JobId{0}, 0, state};
  (void)plugin.score(c, ctx, NodeId{0});
  CHECK_FALSE(plugin.attached());
  REQUIRE(plugin.types().size() == 1);
  CHECK(fgd::same_pod_type(plugin.types()[0].request, gpus(1)));
}

TEST_CASE("FGD's integer score is the authors' truncated sigmoid of the fragmentation growth", "[policies][fgd]") {
  CHECK(fgd::integer_score(0.0) == 50);
  CHECK(fgd::integer_score(1.0) == 49);      // any growth drops below 50 (truncation)
  CHECK(fgd::integer_score(-39.0) == 50);    // 100 sigmoid(0.039) = 50.97
  CHECK(fgd::integer_score(-41.0) == 51);    // 100 sigmoid(0.041) = 51.02
  CHECK(fgd::integer_score(1000.0) == 26);   // one GPU more fragment: 100 sigmoid(-1) = 26.9
  CHECK(fgd::integer_score(-1000.0) == 73);
  CHECK(fgd::integer_score(1e9) == 0);
  CHECK(fgd::integer_score(-1e9) == 100);
}

TEST_CASE("FGD with integer scores sends near-equal nodes to the first in node order", "[policies][fgd]") {
  // Typical pods ask for 100 milli. A 500 pod strands 30 on a (ΔF 30) and 10 on b (ΔF 10):
  // both score 49, so the preset takes a; exact scores take b.
  auto base = t::cluster({t::node("a", 16, 64, 1), t::node("b", 16, 64, 1)});
  base.allocate(share(470), {NodeId{0}, {{0, 470, 0}}});
  base.allocate(share(490), {NodeId{1}, {{0, 490, 0}}});
  const auto w = workload({{share(100), 3}});
  auto c1 = base;
  auto preset = make("fgd");
  preset.attach(c1, w, nullptr);
  CHECK(place(preset, c1, job(share(500))) == "a[0]");
  auto c2 = base;
  auto exact = make_with("fgd", {{"integer_scores", false}});
  exact.attach(c2, w, nullptr);
  CHECK(place(exact, c2, job(share(500))) == "b[0]");
}

TEST_CASE("FGD with integer scores puts a share on the first GPU with the best integer score", "[policies][fgd]") {
  // The same two leftovers on one node: GPU 0 (ΔF 30) and GPU 1 (ΔF 10) both score 49.
  auto base = t::cluster({t::node("n", 16, 64, 2)});
  base.allocate(share(470), {NodeId{0}, {{0, 470, 0}}});
  base.allocate(share(490), {NodeId{0}, {{1, 490, 0}}});
  const auto w = workload({{share(100), 3}});
  auto c1 = base;
  auto preset = make("fgd");
  preset.attach(c1, w, nullptr);
  CHECK(place(preset, c1, job(share(500))) == "n[0]");
  auto c2 = base;
  auto exact = make_with("fgd", {{"integer_scores", false}});
  exact.attach(c2, w, nullptr);
  CHECK(place(exact, c2, job(share(500))) == "n[1]");

  fgd::FragmentationCache cache(fgd::typical_pod_types(w));
  std::vector<GpuGrant> grants;
  CHECK(*cache.best_grants(base, share(500), NodeId{0}, nullptr, grants, fgd::GpuChoice::kFirstBestScore) == Approx(30.0));
  REQUIRE(grants.size() == 1);
  CHECK(grants[0].index == 0);
  CHECK(*cache.best_grants(base, share(500), NodeId{0}, nullptr, grants) == Approx(10.0));
  REQUIRE(grants.size() == 1);
  CHECK(grants[0].index == 1);
}

TEST_CASE("FGD's coverage argument must lie in above 0 and at most 1", "[policies][fgd]") {
  auto p = builtin_profile("fgd");
  p.score[0].args = {{"coverage", 1.5}};
  CHECK_THROWS_AS(Scheduler(p, Registry::with_builtins(), 1), ProfileError);
  p.score[0].args = {{"coverage", 0.5}};
  p.device_select.args = {{"coverage", 0.5}};
  CHECK_NOTHROW(Scheduler(p, Registry::with_builtins(), 1));
}

TEST_CASE("The fragmentation cache equals a recomputation after random placements and releases", "[policies][fgd]") {
  auto c = t::cluster({t::node("a0", 64, 512, 8), t::node("a1", 32, 256, 4), t::node("v", 16, 128, 2, "V100-32GB"),
                       t::node("t4", 8, 64, 4, "T4"), t::node("cpu", 16, 64, 0), mig_node("mig-d", 2, true),
                       mig_node("mig-s", 1, false,
                                {{profile_index("3g.40gb"), 0}, {profile_index("2g.20gb"), 4}, {profile_index("1g.10gb"), 6}})});
  const std::vector<TaskRequest> shapes{share(200, 1), share(500, 2), share(700, 1), gpus(1, 4),     gpus(2, 8),
                                        gpus(1, 2, {"T4"}), cpus(4),   mig("1g.10gb"), mig("2g.20gb"), mig("3g.40gb")};
  std::vector<JobSpec> w;
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    for (std::size_t k = 0; k <= i % 4; ++k) w.push_back(job(shapes[i]));
  }
  const auto types = fgd::typical_pod_types(w, 1.0);
  REQUIRE(types.size() == shapes.size());
  fgd::FragmentationCache cache(types);
  auto scratch = [&](NodeId n) {
    std::int64_t sum = 0;
    for (const auto& m : types) sum += m.pods * fgd::node_fragment(c, n, m);
    return sum;
  };
  Rng rng(7);
  std::vector<std::pair<TaskRequest, TaskPlacement>> running;
  std::vector<GpuGrant> grants;
  int placed = 0, released = 0;
  for (int step = 0; step < 400; ++step) {
    if (!running.empty() && rng.below(3) == 0) {
      const auto k = static_cast<std::size_t>(rng.below(running.size()));
      c.release(running[k].first, running[k].second);
      running.erase(running.begin() + static_cast<std::ptrdiff_t>(k));
      ++released;
    } else {
      const auto& r = shapes[static_cast<std::size_t>(rng.below(shapes.size()))];
      const NodeId n{static_cast<std::uint32_t>(rng.below(c.node_count()))};
      const auto d = cache.best_grants(c, r, n, nullptr, grants);
      if (!d) continue;
      const auto before = cache.weighted_node(c, n);
      TaskPlacement p{n, grants};
      c.allocate(r, p);
      running.emplace_back(r, p);
      ++placed;
      // The predicted growth is what happened.
      CHECK(*d * static_cast<double>(cache.total_weight()) ==
            Approx(static_cast<double>(cache.weighted_node(c, n) - before)).margin(1e-6));
    }
    for (std::uint32_t n = 0; n < c.node_count(); ++n) {
      INFO("step " << step << " node " << n);
      REQUIRE(cache.weighted_node(c, NodeId{n}) == scratch(NodeId{n}));
    }
    REQUIRE(t::cluster_violation(c).empty());
  }
  CHECK(placed > 100);
  CHECK(released > 50);
  CHECK(cache.cluster(c).fragment_milli == Approx(fgd::cluster_fragmentation(c, types).fragment_milli));
}

TEST_CASE("FGD's remembered node answers never change a decision", "[policies][fgd]") {
  // A long-lived scheduler (answers remembered across decisions) against a fresh one per decision.
  auto c = t::cluster({t::node("a0", 64, 512, 8), t::node("a1", 64, 512, 8), t::node("a2", 32, 256, 4),
                       t::node("t4", 16, 64, 4, "T4"), t::node("cpu", 16, 64, 0), mig_node("mig-d", 2, true)});
  const std::vector<TaskRequest> shapes{share(300, 2), share(500, 4), share(800, 1), gpus(1, 8), gpus(2, 8),
                                        cpus(4),       mig("1g.10gb"), mig("3g.40gb")};
  std::vector<JobSpec> w;
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    for (std::size_t k = 0; k <= i % 3; ++k) w.push_back(job(shapes[i]));
  }
  auto warm = make("fgd");
  warm.attach(c, w, nullptr);
  Rng rng(3);
  std::vector<std::pair<JobSpec, std::vector<TaskPlacement>>> running;
  for (std::uint32_t i = 0; i < 150; ++i) {
    if (!running.empty() && rng.below(3) == 0) {
      const auto k = static_cast<std::size_t>(rng.below(running.size()));
      for (const auto& p : running[k].second) c.release(running[k].first.request, p);
      running.erase(running.begin() + static_cast<std::ptrdiff_t>(k));
      continue;
    }
    const auto j = job(shapes[static_cast<std::size_t>(rng.below(shapes.size()))]);
    auto copy = c;
    auto fresh = make("fgd");
    fresh.attach(copy, w, nullptr);
    std::vector<TaskPlacement> expected, got;
    const bool ok = fresh.schedule(copy, j, JobId{i}, expected).ok();
    INFO("decision " << i);
    REQUIRE(warm.schedule(c, j, JobId{i}, got).ok() == ok);
    CHECK(got == expected);
    if (ok) running.emplace_back(j, got);
  }
}

TEST_CASE("FGD's score bounds are never below its integer scores", "[policies][fgd][node-index]") {
  // ScorePlugin::score_bounds: the node index keeps a node's bound instead of its score while the
  // bound cannot reach the top, so a bound below the score would change a decision. Random
  // placements and releases on plain, T4, CPU-only and MIG nodes; after each, every request's
  // bound and score on every node it fits.
  auto sliced = t::node("ts", 16, 128, 2);
  for (auto& g : sliced.gpus) {
    g.partition = GpuPartition::kTimeSlicing;
    g.replicas = 4;
  }
  auto mixed = t::node("mix", 32, 256, 4);   // plain GPUs of two models
  mixed.gpus[1].model = mixed.gpus[3].model = t::node("x", 1, 1, 1, "V100-32GB").gpus[0].model;
  auto c = t::cluster({t::node("a0", 64, 512, 8), t::node("a1", 32, 256, 4), t::node("v", 16, 128, 2, "V100-32GB"),
                       t::node("t4", 8, 64, 4, "T4"), t::node("cpu", 16, 64, 0), mig_node("mig-d", 2, true), sliced, mixed});
  const auto mem_share = t::request({{"aliyun.com/gpu-mem", "12"}, {"cpu", "2"}});
  // HAMi: shares on two GPUs with all their memory, an exclusive share (gpucores 100), and two
  // requests that differ in GPU memory alone (the bounds are kept per GPU request).
  const auto hami_two = t::request({{"nvidia.com/gpu", "2"}, {"nvidia.com/gpucores", "30"}, {"cpu", "2"}});
  const auto hami_all = t::request({{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "4096"}, {"nvidia.com/gpucores", "100"}});
  const auto hami_8g = t::request({{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "8192"}, {"nvidia.com/gpucores", "20"}});
  const auto hami_30g = t::request({{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "30720"}, {"nvidia.com/gpucores", "20"}});
  const std::vector<TaskRequest> shapes{share(200, 1), share(500, 2), share(700, 1), share(1000, 1), gpus(1, 4),
                                        gpus(2, 8),    gpus(1, 2, {"T4"}), cpus(4),   cpus(40),       mem_share,
                                        mig("1g.10gb"), share(300, 30), hami_two, hami_all, hami_8g, hami_30g};
  // Requests outside the typical types are bounded too (the scheduler asks for any task).
  std::vector<TaskRequest> asked = shapes;
  asked.push_back(share(450, 3));
  asked.push_back(gpus(3, 1));
  asked.push_back(t::request({{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "8192"}, {"nvidia.com/gpucores", "20"}, {"cpu", "9"}}));
  std::vector<JobSpec> w;
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    for (std::size_t k = 0; k <= i % 4; ++k) w.push_back(job(shapes[i]));
  }
  FgdPlugin fgd(1.0, true);
  fgd.attach(c, w, nullptr);
  REQUIRE(fgd.types().size() == shapes.size());
  FgdPlugin lone(1.0, true);   // no workload: each task's own shape is the only type (the fallback)
  Rng rng(11);
  std::vector<std::pair<TaskRequest, TaskPlacement>> running;
  std::vector<GpuGrant> grants;
  fgd::FragmentationCache cache(fgd.types());
  int checked = 0, tight = 0, below_top = 0, no_bound = 0;
  for (int step = 0; step < 300; ++step) {
    if (!running.empty() && rng.below(3) == 0) {
      const auto k = static_cast<std::size_t>(rng.below(running.size()));
      c.release(running[k].first, running[k].second);
      running.erase(running.begin() + static_cast<std::ptrdiff_t>(k));
    } else {
      const auto& r = shapes[static_cast<std::size_t>(rng.below(shapes.size()))];
      const NodeId n{static_cast<std::uint32_t>(rng.below(c.node_count()))};
      if (cache.best_grants(c, r, n, nullptr, grants)) {
        TaskPlacement p{n, grants};
        c.allocate(r, p);
        running.emplace_back(r, p);
      }
    }
    for (std::size_t k = 0; k < 2 * asked.size(); ++k) {
      // Odd steps ask in reverse: a bound kept for one request must not answer another.
      const std::size_t a = step % 2 == 0 ? k : 2 * asked.size() - 1 - k;
      auto& plugin = a < asked.size() ? fgd : lone;
      const auto& r = asked[a % asked.size()];
      const JobSpec j = job(r);
      CycleState state;
      TaskContext ctx{j, JobId{0}, 0, state};
      std::vector<NodeId> fit;
      for (std::uint32_t n = 0; n < c.node_count(); ++n) {
        if (c.fits(NodeId{n}, r)) fit.push_back(NodeId{n});
      }
      std::vector<double> bound(fit.size());
      const bool offered = plugin.score_bounds(c, ctx, fit, bound);
      CHECK(offered == (r.gpu.mode != GpuMode::kMig));
      if (!offered) continue;
      for (std::size_t i = 0; i < fit.size(); ++i) {
        const double score = plugin.score(c, ctx, fit[i]);
        INFO("step " << step << " node " << c.spec(fit[i]).name << " request " << r.gpu.milli << "m x" << r.gpu.count << " mem "
                     << r.gpu.memory_mib << " cpu " << r.cpu_milli << (a < asked.size() ? "" : " (fallback)"));
        if (std::isnan(bound[i])) {
          CHECK(c.spec(fit[i]).name == "ts");   // partitioned GPUs only (a CPU-only task has a bound everywhere)
          ++no_bound;
          continue;
        }
        REQUIRE(bound[i] >= score);
        ++checked;
        tight += bound[i] == score ? 1 : 0;
        below_top += bound[i] < 62 ? 1 : 0;
      }
    }
  }
  // The bound is exercised (thousands of pairs), often exact, and often below the best score a
  // half-GPU share could reach: a bound of "always the maximum" would pass the check above.
  CHECK(checked > 3000);
  CHECK(tight > checked / 4);
  CHECK(below_top > checked / 4);
  CHECK(no_bound > 0);
}

// ---------------------------------------------------------------------------- baselines

TEST_CASE("DotProd prefers the node whose free CPU and GPU are small where the pod asks", "[policies][fgd]") {
  // max CPU 128,000 milli, max GPU 8,000 milli. Pod: 8 cores, 1 GPU.
  // big: 1 x 0.0625 + 1 x 0.125 = 0.1875 -> 100 x (1 - 0.09375); small: 0.25 x 0.0625 + 0.25 x 0.125.
  auto c = t::cluster({t::node("big", 128, 512, 8), t::node("small", 32, 128, 2)});
  const auto j = job(gpus(1, 8));
  CycleState state;
  TaskContext ctx{j, JobId{0}, 0, state};
  DotProdScore dot;
  CHECK(dot.score(c, ctx, NodeId{0}) == Approx(90.625));
  CHECK(dot.score(c, ctx, NodeId{1}) == Approx(97.65625));
  auto s = make("dotprod");
  CHECK(place(s, c, j) == "small[0]");
  // A CPU-only pod only looks at CPU: small again (0.25 x 0.0625 < 1 x 0.0625).
  CHECK(place(s, c, job(cpus(8))) == "small");
  DotProdScore whole(true);
  CHECK(whole.score(c, ctx, NodeId{0}) == 90.0);
}

TEST_CASE("DotProd with integer scores sends nodes less than a point apart to the first in node order", "[policies][fgd]") {
  // Pod: 8 cores, 1 GPU. a (128 cores): 100 x (1 - 0.1875/2) = 90.6; b (120 cores): 90.8. Both 90.
  auto base = t::cluster({t::node("a", 128, 512, 8), t::node("b", 120, 512, 8)});
  auto c1 = base;
  auto preset = make("dotprod");
  CHECK(place(preset, c1, job(gpus(1, 8))) == "a[0]");
  auto c2 = base;
  auto exact = make_with("dotprod", {{"integer_scores", false}});
  CHECK(place(exact, c2, job(gpus(1, 8))) == "b[0]");
}

TEST_CASE("GPU Clustering scores nodes in four bands by the kinds of pods they run", "[policies][fgd]") {
  auto c = t::cluster({t::node("n0", 16, 64, 2), t::node("n1", 16, 64, 2), t::node("n2", 16, 64, 2),
                       t::node("n3", 16, 64, 2)});
  auto s = make("clustering");
  // Place the residents through the scheduler so that it counts their kinds.
  std::vector<TaskPlacement> out;
  auto start = [&](const TaskRequest& r, std::uint32_t node, std::uint16_t gpu, std::int32_t milli) {
    const auto j = job(r);
    TaskPlacement p{NodeId{node}, {{gpu, milli, 0}}};
    c.allocate(r, p);
    s.job_started(j, JobId{node}, std::vector<TaskPlacement>{p});
  };
  start(share(300), 0, 0, 300);   // n0: sharing only
  start(gpus(1), 1, 0, 1000);     // n1: one-GPU only
  start(share(300), 2, 0, 300);   // n2: both kinds
  start(gpus(1), 2, 1, 1000);
  GpuClusteringScore score;
  score.attach(c, {}, nullptr);
  score.job_started(job(share(300)), JobId{0}, std::vector<TaskPlacement>{{NodeId{0}, {}}});
  score.job_started(job(gpus(1)), JobId{1}, std::vector<TaskPlacement>{{NodeId{1}, {}}});
  score.job_started(job(share(300)), JobId{2}, std::vector<TaskPlacement>{{NodeId{2}, {}}});
  score.job_started(job(gpus(1)), JobId{3}, std::vector<TaskPlacement>{{NodeId{2}, {}}});
  CHECK(score.count(NodeId{2}, -1) == 1);
  CHECK(score.count(NodeId{2}, 1) == 1);

  const auto j = job(share(500));
  CycleState state;
  TaskContext ctx{j, JobId{9}, 0, state};
  // band + 1 + 24 x used GPU share
  CHECK(score.score(c, ctx, NodeId{0}) == Approx(75 + 1 + 24 * 0.15));   // only sharing pods
  CHECK(score.score(c, ctx, NodeId{2}) == Approx(50 + 1 + 24 * 0.65));   // sharing among others
  CHECK(score.score(c, ctx, NodeId{3}) == Approx(25 + 1));               // no GPU pod
  CHECK(score.score(c, ctx, NodeId{1}) == Approx(0 + 1 + 24 * 0.5));     // other kinds only
  const auto cpu = job(cpus(1));
  TaskContext cpu_ctx{cpu, JobId{9}, 0, state};
  for (std::uint32_t n = 0; n < 4; ++n) CHECK(score.score(c, cpu_ctx, NodeId{n}) == 0.0);

  CHECK(place(s, c, j, JobId{10}) == "n0[0]");
  CHECK(place(s, c, job(gpus(1)), JobId{11}) == "n1[1]");
  CHECK(place(s, c, job(gpus(2)), JobId{12}) == "n3[0,1]");   // 2-GPU pods are a kind of their own
}

TEST_CASE("GPU Clustering as the paper preset measures fullness as free GPU milli below the largest node", "[policies][fgd]") {
  // Both nodes hold only sharing pods (band 75). big: 8 GPUs, 4,000 milli used; small: 2 GPUs,
  // 100 used. Used share says big (1/2 > 1/20); the authors' fill says small: 25 x 6,100/8,000
  // = 19 against 25 x 4,000/8,000 = 12.
  auto c = t::cluster({t::node("big", 64, 256, 8), t::node("small", 16, 64, 2)});
  auto s = make("clustering");
  GpuClusteringScore authors(true, ClusteringFill::kFreeMilli), used_share;
  std::uint32_t id = 0;
  auto start = [&](const TaskRequest& r, std::uint32_t node, std::uint16_t gpu, std::int32_t milli) {
    const auto j = job(r);
    const std::vector<TaskPlacement> p{{NodeId{node}, {{gpu, milli, 0}}}};
    c.allocate(r, p[0]);
    for (JobEventsPlugin* e : std::initializer_list<JobEventsPlugin*>{&authors, &used_share}) e->job_started(j, JobId{id}, p);
    s.job_started(j, JobId{id++}, p);
  };
  authors.attach(c, {}, nullptr);
  used_share.attach(c, {}, nullptr);
  for (std::uint16_t g = 0; g < 8; ++g) start(share(500), 0, g, 500);
  start(share(100), 1, 0, 100);
  const auto j = job(share(300));
  CycleState state;
  TaskContext ctx{j, JobId{99}, 0, state};
  CHECK(authors.score(c, ctx, NodeId{0}) == 75.0 + 12.0);
  CHECK(authors.score(c, ctx, NodeId{1}) == 75.0 + 19.0);
  CHECK(used_share.score(c, ctx, NodeId{0}) > used_share.score(c, ctx, NodeId{1}));
  CHECK(place(s, c, j, JobId{100}) == "small[0]");
}

TEST_CASE("GPU Clustering's fill argument is used-share or free-milli", "[policies][fgd]") {
  CHECK_THROWS_AS(make_with("clustering", {{"fill", "used"}}), ProfileError);
  CHECK_THROWS_AS(make_with("clustering", {{"integer_scores", 1}}), ProfileError);
  CHECK_NOTHROW(make_with("clustering", {{"fill", "used-share"}}));
}

TEST_CASE("GPU Clustering keeps a job's tasks together and treats untracked GPU use as other kinds", "[policies][fgd]") {
  auto c = t::cluster({t::node("n0", 16, 64, 2), t::node("n1", 16, 64, 2), t::node("n2", 16, 64, 2)});
  // n0's GPU is in use by something the scheduler was never told about.
  c.allocate(share(300), {NodeId{0}, {{0, 300, 0}}});
  auto s = make("clustering");
  // The first task opens n1 (empty band beats "other kinds"); the second joins it (same kind).
  CHECK(place(s, c, job(share(400), 2)) == "n1[0];n1[0]");
}

TEST_CASE("GPU Packing prefers used GPUs, then few opened GPUs on a used node, then small idle nodes", "[policies][fgd]") {
  // p0: GPU 0 has 700 free; p1: GPU 0 taken whole; p2: idle with 4 GPUs; p3: idle with 2 GPUs.
  auto base = t::cluster({t::node("p0", 16, 64, 2), t::node("p1", 16, 64, 2), t::node("p2", 16, 64, 4),
                          t::node("p3", 16, 64, 2)});
  base.allocate(share(300), {NodeId{0}, {{0, 300, 0}}});
  base.allocate(gpus(1), {NodeId{1}, {{0, 1000, 81920}}});
  GpuPacking packing;
  CycleState state;
  const auto half = job(share(500));
  TaskContext ctx{half, JobId{0}, 0, state};
  CHECK(packing.score(base, ctx, NodeId{0}) == Approx(100 - 34 * 0.2));   // (a): 200 left on GPU 0
  CHECK(packing.score(base, ctx, NodeId{1}) == Approx(66.0));             // (b): opens 1 GPU
  CHECK(packing.score(base, ctx, NodeId{2}) == Approx(33 - 33 * 0.75));   // (c): 4 GPUs
  CHECK(packing.score(base, ctx, NodeId{3}) == Approx(33 - 33 * 0.25));   // (c): 2 GPUs

  struct Case {
    TaskRequest r;
    const char* expected;
  };
  for (const auto& k : {Case{share(500), "p0[0]"},    // fits the used GPU
                        Case{share(800), "p0[1]"},    // must open a GPU: p0 and p1 tie, node order
                        Case{gpus(1), "p0[1]"},       // the same
                        Case{gpus(2), "p3[0,1]"}}) {  // only idle nodes have 2 free: the smaller
    INFO(k.expected);
    auto c = base;
    auto s = make("packing");
    CHECK(place(s, c, job(k.r)) == k.expected);
  }
}

TEST_CASE("GPU Packing with integer scores uses the authors' bands", "[policies][fgd]") {
  // As above: p0 GPU 0 with 700 free, p1 one GPU taken whole, p2 idle 4 GPUs, p3 idle 2 GPUs.
  auto base = t::cluster({t::node("p0", 16, 64, 2), t::node("p1", 16, 64, 2), t::node("p2", 16, 64, 4),
                          t::node("p3", 16, 64, 2)});
  base.allocate(share(300), {NodeId{0}, {{0, 300, 0}}});
  base.allocate(gpus(1), {NodeId{1}, {{0, 1000, 81920}}});
  GpuPacking packing(true);
  CycleState state;
  const auto half = job(share(500));
  TaskContext ctx{half, JobId{0}, 0, state};
  CHECK(packing.score(base, ctx, NodeId{0}) == 93.0);   // 100 - 70 % free before placing / 10
  CHECK(packing.score(base, ctx, NodeId{1}) == 49.0);   // 50 - 1 GPU opened
  CHECK(packing.score(base, ctx, NodeId{2}) == 29.0);   // 33 - 4 GPUs
  CHECK(packing.score(base, ctx, NodeId{3}) == 31.0);   // 33 - 2 GPUs
  const auto one = job(gpus(1));
  TaskContext ctx1{one, JobId{1}, 0, state};
  CHECK(packing.score(base, ctx1, NodeId{0}) == 49.0);   // a whole GPU always opens one
  CHECK(packing.score(base, ctx1, NodeId{3}) == 31.0);
  const auto cpu = job(cpus(2));
  TaskContext ctx0{cpu, JobId{2}, 0, state};
  CHECK(packing.score(base, ctx0, NodeId{0}) == 0.0);    // CPU-only pods score 0
}

TEST_CASE("GPU Packing with integer scores ties used GPUs within 100 milli and takes node order", "[policies][fgd]") {
  // q0's used GPU has 790 free, q1's 720: both score 93, so the preset takes q0; exact scores take
  // the tighter q1.
  auto base = t::cluster({t::node("q0", 16, 64, 1), t::node("q1", 16, 64, 1)});
  base.allocate(share(210), {NodeId{0}, {{0, 210, 0}}});
  base.allocate(share(280), {NodeId{1}, {{0, 280, 0}}});
  auto c1 = base;
  auto preset = make("packing");
  CHECK(place(preset, c1, job(share(500))) == "q0[0]");
  auto c2 = base;
  auto exact = make_with("packing", {{"integer_scores", false}});
  CHECK(place(exact, c2, job(share(500))) == "q1[0]");
}

TEST_CASE("GPU Packing picks the GPU with the least free milli that fits inside the node", "[policies][fgd]") {
  auto c = t::cluster({t::node("n", 16, 64, 3)});
  c.allocate(share(300), {NodeId{0}, {{0, 300, 0}}});
  c.allocate(share(600), {NodeId{0}, {{1, 600, 0}}});
  auto s = make("packing");
  CHECK(place(s, c, job(share(300))) == "n[1]");   // 400 free: the tightest that fits
  CHECK(place(s, c, job(share(300))) == "n[0]");   // now 700 is the tightest
}

// ---------------------------------------------------------------------------- contract

TEST_CASE("Every FGD-family profile never over-commits a node", "[policies][fgd]") {
  const std::vector<TaskRequest> shapes{share(200, 1), share(500, 2),  share(900, 1), gpus(1, 4),
                                        gpus(2, 8),    gpus(4, 8),     cpus(4),       gpus(1, 2, {"T4"}),
                                        mig("1g.10gb"), mig("2g.20gb"), mig("3g.40gb"), mig("7g.80gb")};
  for (const std::string profile : {"fgd", "dotprod", "clustering", "packing"}) {
    INFO(profile);
    auto c = t::cluster({t::node("a0", 64, 512, 8), t::node("a1", 32, 256, 4), t::node("t4", 16, 64, 4, "T4"),
                         t::node("v", 16, 64, 2, "V100-32GB"), t::node("cpu", 8, 32, 0), mig_node("mig-d", 2, true),
                         mig_node("mig-s", 1, false, {{profile_index("4g.40gb"), 0}, {profile_index("3g.40gb"), 4}})});
    auto s = make(profile, 5);
    std::vector<JobSpec> w;
    for (const auto& r : shapes) w.push_back(job(r));
    s.attach(c, w, nullptr);
    Rng rng(11);
    struct Running {
      JobSpec job;
      JobId id;
      std::vector<TaskPlacement> where;
    };
    std::vector<Running> running;
    int placed = 0;
    for (std::uint32_t i = 0; i < 300; ++i) {
      if (!running.empty() && rng.below(4) == 0) {
        const auto k = static_cast<std::size_t>(rng.below(running.size()));
        for (const auto& p : running[k].where) c.release(running[k].job.request, p);
        s.job_stopped(running[k].job, running[k].id, running[k].where);
        running.erase(running.begin() + static_cast<std::ptrdiff_t>(k));
      } else {
        const auto j = job(shapes[static_cast<std::size_t>(rng.below(shapes.size()))], 1 + static_cast<std::int32_t>(rng.below(2)));
        std::vector<TaskPlacement> out;
        if (s.schedule(c, j, JobId{i}, out).ok()) {
          s.job_started(j, JobId{i}, out);
          running.push_back({j, JobId{i}, out});
          ++placed;
        }
      }
      REQUIRE(t::cluster_violation(c).empty());
    }
    CHECK(placed > 60);
  }
}
