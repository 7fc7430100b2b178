// Tests for traces/transforms.hpp: shuffle, FGD resampling, time scaling, target load, filters, fill form.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include <gpusched/rng.hpp>
#include <gpusched/traces/transforms.hpp>

#include "support/support.hpp"

using namespace gpusched;
using namespace gpusched::traces;
namespace t = gpusched::test;

namespace {

TaskRequest cpu_req() { return t::request({{"cpu", "2"}, {"memory", "4Gi"}}); }
TaskRequest whole_req(int n) {
  return t::request({{"cpu", "4"}, {"memory", "8Gi"}, {"nvidia.com/gpu", std::to_string(n)}});
}
TaskRequest share_req(int milli) {
  return t::request({{"cpu", "1"}, {"memory", "2Gi"}, {"nvidia.com/gpu", "1"}, {"gpusched.io/gpu-milli", std::to_string(milli)}});
}

JobSpec cpu_job(const std::string& name, double submit_s = 0) { return t::job(name, submit_s, 60, cpu_req()); }
JobSpec gpu_job(const std::string& name, int gpus, double submit_s = 0) { return t::job(name, submit_s, 60, whole_req(gpus)); }
JobSpec share_job(const std::string& name, int milli, double submit_s = 0) {
  return t::job(name, submit_s, 60, share_req(milli));
}

/// A mixed pool like openb's: CPU-only pods, shares, 1/2/4/8-GPU pods. Names p0, p1, ...
Workload mixed_pool() {
  Workload w;
  const int shares[] = {100, 250, 500, 700, 900};
  const int gpus[] = {1, 1, 2, 4, 8};
  for (int i = 0; i < 40; ++i) {
    const auto name = t::numbered("p", i);
    const double submit = i * 10.0;
    if (i % 4 == 0) w.push_back(cpu_job(name, submit));
    else if (i % 4 == 1 || i % 4 == 2) w.push_back(share_job(name, shares[i % 5], submit));
    else w.push_back(gpu_job(name, gpus[i % 5], submit));
  }
  return w;
}

std::vector<std::string> names(const Workload& w) {
  std::vector<std::string> out;
  for (const auto& j : w) out.push_back(j.name);
  return out;
}

/// The pool name a copy "<name>#<k>" was made from.
std::string base_name(const std::string& copy) { return copy.substr(0, copy.rfind('#')); }

std::int64_t max_job_milli(const Workload& w) {
  std::int64_t m = 0;
  for (const auto& j : w) m = std::max(m, gpu_milli_requested(j));
  return m;
}

}  // namespace

// ---------------------------------------------------------------- gpu_milli_requested

TEST_CASE("gpu_milli_requested counts whole GPUs as 1000 each times tasks", "[traces][transforms]") {
  CHECK(gpu_milli_requested(gpu_job("a", 1)) == 1000);
  CHECK(gpu_milli_requested(gpu_job("a", 8)) == 8000);
  CHECK(gpu_milli_requested(t::job("a", 0, 60, whole_req(2), 3)) == 6000);
  CHECK(gpu_milli_requested(t::job("a", 0, 60, t::request({{"pci_passthrough:alias", "GPU:2"}}))) == 2000);
}

TEST_CASE("gpu_milli_requested counts a share as its milli and CPU-only as zero", "[traces][transforms]") {
  CHECK(gpu_milli_requested(share_job("a", 250)) == 250);
  CHECK(gpu_milli_requested(t::job("a", 0, 60, share_req(500), 4)) == 2000);
  CHECK(gpu_milli_requested(t::job("a", 0, 60, t::request({{"gpusched.io/gpu-milli", "300"}}))) == 300);
  // gpu-milli 1000 is a whole GPU.
  CHECK(gpu_milli_requested(t::job("a", 0, 60, t::request({{"gpusched.io/gpu-milli", "1000"}}))) == 1000);
  CHECK(gpu_milli_requested(cpu_job("a")) == 0);
  // A memory-only share takes no compute share, as the cluster grants it.
  CHECK(gpu_milli_requested(t::job("a", 0, 60, t::request({{"aliyun.com/gpu-mem", "8"}}))) == 0);
  // HAMi: a share on each of N GPUs.
  CHECK(gpu_milli_requested(t::job("a", 0, 60, t::request({{"nvidia.com/gpu", "2"}, {"nvidia.com/gpucores", "30"}}))) == 600);
  CHECK(gpu_milli_requested(t::job("a", 0, 60, t::request({{"google.com/tpu", "4"}}))) == 0);
}

TEST_CASE("gpu_milli_requested counts MIG instances as their compute share", "[traces][transforms]") {
  // 3 of 7 compute slices: 428 per GI, as the cluster grants it.
  CHECK(gpu_milli_requested(t::job("a", 0, 60, t::request({{"nvidia.com/mig-3g.40gb", "1"}}))) == 428);
  CHECK(gpu_milli_requested(t::job("a", 0, 60, t::request({{"nvidia.com/mig-3g.40gb", "2"}}), 2)) == 4 * 428);
  CHECK(gpu_milli_requested(t::job("a", 0, 60, t::request({{"nvidia.com/mig-1g.10gb", "1"}}))) == 142);
  CHECK(gpu_milli_requested(t::job("a", 0, 60, t::request({{"nvidia.com/mig-7g.80gb", "1"}}))) == 1000);
  // A30: 4 compute slices.
  CHECK(gpu_milli_requested(t::job("a", 0, 60, t::request({{"nvidia.com/mig-1g.6gb", "1"}}))) == 250);
  CHECK(gpu_milli_requested(t::job("a", 0, 60, t::request({{"nvidia.com/mig-2g.12gb", "1"}}))) == 500);
}

TEST_CASE("gpu_milli_requested counts vGPUs as one over the vGPUs per GPU", "[traces][transforms]") {
  CHECK(gpu_milli_requested(t::job("a", 0, 60, t::request({{"nvidia.com/vgpu-A100-10C", "1"}}))) == 250);
  CHECK(gpu_milli_requested(t::job("a", 0, 60, t::request({{"nvidia.com/vgpu-A100D-8C", "2"}}))) == 200);
  CHECK(gpu_milli_requested(t::job("a", 0, 60, t::request({{"nvidia.com/vgpu-T4-16C", "1"}}))) == 1000);
}

TEST_CASE("gpu_milli_requested falls back on the profile name for profiles outside the builtin catalog",
          "[traces][transforms]") {
  JobSpec j = cpu_job("a");
  j.request.gpu.mode = GpuMode::kMig;
  j.request.gpu.count = 1;
  j.request.gpu.profile = "2g.99gb";   // not in any builtin model: 2 of 7 slices
  CHECK(gpu_milli_requested(j) == 285);
  j.request.gpu.mode = GpuMode::kVgpu;
  j.request.gpu.profile = "Z9-1Q";     // unknown vGPU: a whole GPU per unit
  CHECK(gpu_milli_requested(j) == 1000);
}

TEST_CASE("gpu_milli_requested over a list is the sum of the jobs", "[traces][transforms]") {
  const Workload w{gpu_job("a", 2), share_job("b", 300), cpu_job("c")};
  CHECK(gpu_milli_requested(std::span<const JobSpec>(w)) == 2300);
  CHECK(gpu_milli_requested(std::span<const JobSpec>()) == 0);
}

// ---------------------------------------------------------------- shuffle

TEST_CASE("shuffle is a permutation that keeps each job's spec", "[traces][transforms]") {
  const auto pool = mixed_pool();
  for (std::uint64_t seed = 0; seed < 20; ++seed) {
    const auto s = shuffle(pool, seed);
    REQUIRE(s.size() == pool.size());
    auto a = names(pool), b = names(s);
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    CHECK(a == b);
    std::map<std::string, const JobSpec*> by_name;
    for (const auto& j : pool) by_name[j.name] = &j;
    for (const auto& j : s) {
      CHECK(j.submit == by_name.at(j.name)->submit);
      CHECK(gpu_milli_requested(j) == gpu_milli_requested(*by_name.at(j.name)));
    }
  }
}

TEST_CASE("shuffle is deterministic per seed and differs between seeds", "[traces][transforms]") {
  const auto pool = mixed_pool();
  CHECK(names(shuffle(pool, 42)) == names(shuffle(pool, 42)));
  CHECK(names(shuffle(pool, 42)) != names(shuffle(pool, 43)));
  CHECK(names(shuffle(pool, 42)) != names(pool));
  std::set<std::vector<std::string>> orders;
  for (std::uint64_t seed = 42; seed < 52; ++seed) orders.insert(names(shuffle(pool, seed)));
  CHECK(orders.size() == 10);
}

TEST_CASE("shuffle matches a Fisher-Yates replay of its named stream", "[traces][transforms]") {
  const auto pool = mixed_pool();
  auto expected = names(pool);
  Rng rng = RngStreams(7).stream("transform.shuffle");
  for (std::size_t i = expected.size(); i > 1; --i) std::swap(expected[i - 1], expected[rng.below(i)]);
  CHECK(names(shuffle(pool, 7)) == expected);
}

TEST_CASE("shuffle of an empty or one-job list is the list", "[traces][transforms]") {
  CHECK(shuffle({}, 1).empty());
  CHECK(names(shuffle({cpu_job("only")}, 1)) == std::vector<std::string>{"only"});
}

// ---------------------------------------------------------------- resample_to_gpu_milli

TEST_CASE("resample keeps the jobs as a prefix, stays within the target and stops tight", "[traces][transforms]") {
  const auto pool = mixed_pool();
  const auto pool_total = gpu_milli_requested(std::span<const JobSpec>(pool));
  const auto max_milli = max_job_milli(pool);
  for (std::uint64_t seed = 42; seed < 52; ++seed) {
    const auto start = shuffle(pool, seed);
    for (const std::int64_t target : {pool_total, pool_total + 1, 13 * pool_total / 10, 3 * pool_total}) {
      const auto out = resample_to_gpu_milli(start, pool, target, seed);
      const auto total = gpu_milli_requested(std::span<const JobSpec>(out));
      CHECK(total <= target);
      // The stopping draw asked for more than what was left, and no job asks for more than max_milli.
      CHECK(total > target - max_milli);
      REQUIRE(out.size() >= start.size());
      for (std::size_t i = 0; i < start.size(); ++i) CHECK(out[i].name == start[i].name);
      if (target == pool_total) CHECK(out.size() == start.size());
    }
  }
}

TEST_CASE("resample copies keep their spec and get unique names of the form name#k", "[traces][transforms]") {
  const auto pool = mixed_pool();
  std::map<std::string, const JobSpec*> by_name;
  for (const auto& j : pool) by_name[j.name] = &j;
  const auto target = 3 * gpu_milli_requested(std::span<const JobSpec>(pool));
  const auto out = resample_to_gpu_milli(pool, pool, target, 42);
  REQUIRE(out.size() > pool.size());
  const auto all = names(out);
  CHECK(std::set<std::string>(all.begin(), all.end()).size() == all.size());
  std::map<std::string, int> copies;
  for (std::size_t i = pool.size(); i < out.size(); ++i) {
    const auto& c = out[i];
    const auto base = base_name(c.name);
    REQUIRE(by_name.count(base) == 1);
    const auto& orig = *by_name.at(base);
    // k counts the copies of that pool name: 1, 2, 3, ... in order.
    CHECK(c.name == base + "#" + std::to_string(++copies[base]));
    CHECK(c.submit == orig.submit);
    CHECK(c.duration == orig.duration);
    CHECK(c.tasks == orig.tasks);
    CHECK(c.queue == orig.queue);
    CHECK(c.request.gpu.mode == orig.request.gpu.mode);
    CHECK(c.request.cpu_milli == orig.request.cpu_milli);
    CHECK(gpu_milli_requested(c) == gpu_milli_requested(orig));
  }
}

TEST_CASE("resample draws are exactly the stream's draws and the crossing draw stops the process",
          "[traces][transforms]") {
  const auto pool = mixed_pool();
  std::map<std::string, std::size_t> index;
  for (std::size_t i = 0; i < pool.size(); ++i) index[pool[i].name] = i;
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    const std::int64_t target = 50'000 + static_cast<std::int64_t>(seed) * 777;
    const auto out = resample_to_gpu_milli({}, pool, target, seed);
    Rng rng = RngStreams(seed).stream("transform.resample");
    std::int64_t total = 0;
    for (const auto& c : out) {
      const auto i = rng.below(pool.size());
      CHECK(index.at(base_name(c.name)) == i);
      total += gpu_milli_requested(pool[i]);
    }
    // The next draw of the stream is the one that would have crossed the target.
    const auto next = rng.below(pool.size());
    CHECK(total + gpu_milli_requested(pool[next]) > target);
  }
}

TEST_CASE("resample does not skip a crossing draw in favour of a smaller job", "[traces][transforms]") {
  // Big 1000-milli and small 100-milli jobs. Exactly-fill would always end within 100 of the
  // target; the FGD rule stops at the first big draw that crosses, which can leave more.
  const Workload pool{gpu_job("big", 1), share_job("small", 100)};
  const std::int64_t target = 5050;
  int early_stops = 0;
  for (std::uint64_t seed = 0; seed < 50; ++seed) {
    const auto out = resample_to_gpu_milli({}, pool, target, seed);
    const auto total = gpu_milli_requested(std::span<const JobSpec>(out));
    REQUIRE(total <= target);
    CHECK(total > target - 1000);
    if (target - total >= 100) ++early_stops;
  }
  CHECK(early_stops > 0);
}

TEST_CASE("resample appends drawn CPU-only jobs and stops only on a GPU draw", "[traces][transforms]") {
  const Workload pool{cpu_job("cpu"), gpu_job("gpu", 1)};
  bool saw_cpu_copy = false;
  for (std::uint64_t seed = 0; seed < 20; ++seed) {
    const auto out = resample_to_gpu_milli({gpu_job("first", 1)}, pool, 3000, seed);
    int gpu_copies = 0;
    for (std::size_t i = 1; i < out.size(); ++i) {
      if (base_name(out[i].name) == "gpu") ++gpu_copies;
      else saw_cpu_copy = true;
    }
    // 1000 + 2 x 1000 = 3000: a third GPU draw would cross.
    CHECK(gpu_copies == 2);
    CHECK(gpu_milli_requested(std::span<const JobSpec>(out)) == 3000);
  }
  CHECK(saw_cpu_copy);
}

TEST_CASE("resample deflates to the longest prefix within the target", "[traces][transforms]") {
  const Workload jobs{gpu_job("a", 1), cpu_job("b"), gpu_job("c", 1), gpu_job("d", 1), cpu_job("e"), gpu_job("f", 1),
                      share_job("g", 10)};
  const Workload pool{share_job("s", 10)};
  CHECK(names(resample_to_gpu_milli(jobs, pool, 3000, 1)) == std::vector<std::string>{"a", "b", "c", "d", "e"});
  CHECK(names(resample_to_gpu_milli(jobs, pool, 3999, 1)) == std::vector<std::string>{"a", "b", "c", "d", "e"});
  CHECK(names(resample_to_gpu_milli(jobs, pool, 999, 1)).empty());
  CHECK(names(resample_to_gpu_milli(jobs, pool, 0, 1)).empty());
  // A CPU-only head survives a zero target.
  CHECK(names(resample_to_gpu_milli({cpu_job("x"), gpu_job("y", 1)}, pool, 0, 1)) == std::vector<std::string>{"x"});
}

TEST_CASE("resample leaves jobs that meet the target exactly unchanged", "[traces][transforms]") {
  const Workload jobs{gpu_job("a", 2), share_job("b", 500)};
  CHECK(names(resample_to_gpu_milli(jobs, jobs, 2500, 3)) == names(jobs));
  // Even with no GPU job to draw from.
  CHECK(names(resample_to_gpu_milli(jobs, Workload{cpu_job("c")}, 2500, 3)) == names(jobs));
}

TEST_CASE("resample is deterministic per seed and differs between seeds", "[traces][transforms]") {
  const auto pool = mixed_pool();
  const auto target = 2 * gpu_milli_requested(std::span<const JobSpec>(pool));
  CHECK(names(resample_to_gpu_milli(pool, pool, target, 42)) == names(resample_to_gpu_milli(pool, pool, target, 42)));
  CHECK(names(resample_to_gpu_milli(pool, pool, target, 42)) != names(resample_to_gpu_milli(pool, pool, target, 43)));
}

TEST_CASE("resample throws when the pool cannot reach the target or the target is negative", "[traces][transforms]") {
  const Workload jobs{gpu_job("a", 1)};
  CHECK_THROWS_AS(resample_to_gpu_milli(jobs, Workload{cpu_job("c")}, 5000, 1), std::invalid_argument);
  CHECK_THROWS_AS(resample_to_gpu_milli(jobs, {}, 5000, 1), std::invalid_argument);
  CHECK_THROWS_WITH(resample_to_gpu_milli(jobs, {}, 5000, 1), Catch::Contains("no job asking for GPU"));
  CHECK_THROWS_AS(resample_to_gpu_milli(jobs, jobs, -1, 1), std::invalid_argument);
  // Deflating needs no pool.
  CHECK(resample_to_gpu_milli(jobs, {}, 500, 1).empty());
}

TEST_CASE("resample copy names skip names already taken", "[traces][transforms]") {
  const Workload jobs{cpu_job("a#1"), cpu_job("a#3")};
  const Workload pool{gpu_job("a", 1)};
  CHECK(names(resample_to_gpu_milli(jobs, pool, 3000, 9)) == std::vector<std::string>{"a#1", "a#3", "a#2", "a#4", "a#5"});
}

// ---------------------------------------------------------------- scale_time

TEST_CASE("scale_time scales submit times, durations and walltimes and keeps forever", "[traces][transforms]") {
  Workload w{t::job("a", 10, 4, cpu_req()), t::job("b", 3, -1, cpu_req())};
  w[0].constraints.walltime = SimTime::from_seconds(8);
  const auto s = scale_time(w, 2.5);
  CHECK(s[0].submit == SimTime::from_seconds(25));
  CHECK(s[0].duration == SimTime::from_seconds(10));
  CHECK(s[0].constraints.walltime == SimTime::from_seconds(20));
  CHECK(s[1].submit == SimTime::from_us(7'500'000));
  CHECK(s[1].duration.is_forever());
  CHECK(s[1].constraints.walltime.is_forever());
  const auto h = scale_time(w, 0.5);
  CHECK(h[0].submit == SimTime::from_seconds(5));
  CHECK(h[0].duration == SimTime::from_seconds(2));
  CHECK(names(s) == names(w));
}

TEST_CASE("scale_time rounds to the microsecond and rejects a time past the input range", "[traces][transforms]") {
  Workload w{t::job("a", 0, 0, cpu_req())};
  w[0].submit = SimTime::from_us(3);
  w[0].duration = SimTime::from_seconds(6'000'000'000);   // 6e9 s: within kMaxInputSeconds
  const auto s = scale_time(w, 0.5);
  CHECK(s[0].submit == SimTime::from_us(2));   // 1.5 rounds away from zero
  CHECK(s[0].duration == SimTime::from_seconds(3'000'000'000));
  // 2.4e10 s would pass kMaxInputSeconds (1e10 s): an error naming the job, never a wrapped or "forever" time.
  CHECK_THROWS_AS(scale_time(w, 4.0), std::out_of_range);
  CHECK_THROWS_WITH(scale_time(w, 4.0), Catch::Contains("job \"a\": its duration"));
  CHECK_THROWS_AS(scale_time(w, 1e300), std::out_of_range);
}

TEST_CASE("scale_time rejects a factor that is not finite and positive", "[traces][transforms]") {
  const Workload w{cpu_job("a")};
  for (const double f : {0.0, -1.0, std::nan(""), std::numeric_limits<double>::infinity()}) {
    CHECK_THROWS_AS(scale_time(w, f), std::invalid_argument);
  }
  CHECK_THROWS_WITH(scale_time(w, 0.0), Catch::Contains("factor"));
}

// ---------------------------------------------------------------- target offered load

namespace {

/// A mixed workload with irregular arrivals over about a day and durations from a minute to
/// ten hours (its own stream, so it never depends on other tests): CPU-only jobs, shares,
/// 1/2/4/8-GPU jobs and two-task gangs.
Workload irregular_workload(std::size_t n) {
  Rng rng = RngStreams(7).stream("test.target_load");
  Workload w;
  double submit = 1000.0;   // the first arrival is not at zero: it must stay where it is
  const int shares[] = {100, 250, 500, 700};
  const int gpus[] = {1, 2, 4, 8};
  for (std::size_t i = 0; i < n; ++i) {
    submit += static_cast<double>(rng.below(600));   // equal submit times happen
    const double duration = 60.0 + static_cast<double>(rng.below(36'000));
    const auto kind = rng.below(4);
    const auto name = t::numbered("j", static_cast<std::int64_t>(i));
    if (kind == 0) w.push_back(t::job(name, submit, duration, cpu_req()));
    else if (kind == 1) w.push_back(t::job(name, submit, duration, share_req(shares[rng.below(4)])));
    else w.push_back(t::job(name, submit, duration, whole_req(gpus[rng.below(4)]), kind == 3 ? 2 : 1));
  }
  return w;
}

}  // namespace

TEST_CASE("offered_gpu_load is GPU milli times duration over capacity times the arrival span", "[traces][transforms]") {
  // 1 GPU x 60 s + a 500m share x 60 s + 2 tasks x 2 GPUs x 30 s = (60 + 30 + 120) GPU-s of work,
  // arriving over 200 s on 4 GPUs: 210 / 800.
  Workload w{t::job("whole", 100, 60, whole_req(1)), share_job("share", 500, 0), t::job("gang", 50, 30, whole_req(2), 2),
             cpu_job("cpu", 200)};
  CHECK(offered_gpu_load(w, 4000) == Approx(210.0 / 800.0).epsilon(1e-15));
  // CPU-only jobs add no work, but their arrivals count toward the span.
  w.pop_back();
  CHECK(offered_gpu_load(w, 4000) == Approx(210.0 / 400.0).epsilon(1e-15));
}

TEST_CASE("scale_to_gpu_load reaches the target load and changes nothing but submit times", "[traces][transforms]") {
  const auto w = irregular_workload(2000);
  const double before = offered_gpu_load(w, 64'000);
  for (const double target : {0.05, 0.8, 1.0, 3.5}) {
    INFO("target " << target << ", load before " << before);
    const auto s = scale_to_gpu_load(w, 64'000, target);
    CHECK(std::abs(offered_gpu_load(s, 64'000) / target - 1.0) <= 1e-9);
    REQUIRE(s.size() == w.size());
    CHECK(names(s) == names(w));
    CHECK(s.front().submit == w.front().submit);   // the first arrival stays put
    for (std::size_t i = 0; i < w.size(); ++i) {
      CHECK(s[i].duration == w[i].duration);
      CHECK(s[i].constraints.walltime == w[i].constraints.walltime);
      CHECK(s[i].request.gpu.count == w[i].request.gpu.count);
      CHECK(s[i].tasks == w[i].tasks);
      if (i > 0) CHECK(s[i - 1].submit <= s[i].submit);   // arrival order kept
    }
    // Gaps scale by one factor (up to rounding each submit to the microsecond).
    const double factor = before / target;
    const auto gap = [](const Workload& x, std::size_t i) { return static_cast<double>((x[i].submit - x.front().submit).us); };
    CHECK(gap(s, w.size() / 2) == Approx(gap(w, w.size() / 2) * factor).margin(1.0));
    // A higher load than the trace's tightens the arrivals, a lower one spreads them.
    CHECK((target > before) == (gap(s, w.size() - 1) < gap(w, w.size() - 1)));
  }
  CHECK(before > 0.8);
  CHECK(before < 3.5);
}

TEST_CASE("scale_to_gpu_load keeps submit order for jobs given out of order, and is deterministic", "[traces][transforms]") {
  auto w = irregular_workload(300);
  std::reverse(w.begin(), w.end());
  const auto a = scale_to_gpu_load(w, 16'000, 0.7);
  const auto b = scale_to_gpu_load(w, 16'000, 0.7);
  CHECK(std::abs(offered_gpu_load(a, 16'000) / 0.7 - 1.0) <= 1e-9);
  CHECK(names(a) == names(w));
  for (std::size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].submit == b[i].submit);
    if (i > 0) CHECK(a[i - 1].submit >= a[i].submit);   // still in reverse submit order
  }
  CHECK(a.back().submit == w.back().submit);   // the earliest arrival stays put
}

TEST_CASE("scale_to_gpu_load rejects a bad target and workloads without GPU work or arrival span", "[traces][transforms]") {
  const Workload w{gpu_job("a", 1, 0), gpu_job("b", 1, 100)};
  for (const double bad : {0.0, -0.5, std::nan(""), std::numeric_limits<double>::infinity()}) {
    CHECK_THROWS_WITH(scale_to_gpu_load(w, 8000, bad), Catch::Contains("target load must be finite and > 0"));
  }
  CHECK_THROWS_WITH(scale_to_gpu_load(Workload{cpu_job("a", 0), cpu_job("b", 100)}, 8000, 0.8), Catch::Contains("no job asks for GPU"));
  CHECK_THROWS_WITH(scale_to_gpu_load(Workload{gpu_job("a", 1, 5), gpu_job("b", 2, 5)}, 8000, 0.8),
                    Catch::Contains("arrive at the same time"));
  CHECK_THROWS_WITH(scale_to_gpu_load(Workload{gpu_job("a", 1, 5)}, 8000, 0.8), Catch::Contains("arrive at the same time"));
  CHECK_THROWS_WITH(scale_to_gpu_load(Workload{}, 8000, 0.8), Catch::Contains("no jobs"));
  CHECK_THROWS_WITH(scale_to_gpu_load(w, 0, 0.8), Catch::Contains("no GPU capacity"));
  CHECK_THROWS_WITH(scale_to_gpu_load(arrival_only(w), 8000, 0.8), Catch::Contains("job \"a\" asks for GPU and never ends"));
  CHECK_THROWS_WITH(scale_to_gpu_load(w, 8000, 1e-12), Catch::Contains("too small"));
}

// ---------------------------------------------------------------- kinds and filter

TEST_CASE("kind_of classifies each way of asking for GPUs", "[traces][transforms]") {
  CHECK(kind_of(cpu_job("a")) == JobKind::kCpuOnly);
  CHECK(kind_of(share_job("a", 300)) == JobKind::kShare);
  CHECK(kind_of(t::job("a", 0, 60, t::request({{"aliyun.com/gpu-mem", "8"}}))) == JobKind::kShare);
  CHECK(kind_of(gpu_job("a", 1)) == JobKind::kOneGpu);
  CHECK(kind_of(t::job("a", 0, 60, whole_req(1), 4)) == JobKind::kOneGpu);   // per task
  CHECK(kind_of(gpu_job("a", 4)) == JobKind::kMultiGpu);
  CHECK(kind_of(t::job("a", 0, 60, t::request({{"pci_passthrough:alias", "GPU:2"}}))) == JobKind::kMultiGpu);
  CHECK(kind_of(t::job("a", 0, 60, t::request({{"nvidia.com/mig-3g.40gb", "1"}}))) == JobKind::kOther);
  CHECK(kind_of(t::job("a", 0, 60, t::request({{"nvidia.com/vgpu-A100-10C", "1"}}))) == JobKind::kOther);
  CHECK(kind_of(t::job("a", 0, 60, t::request({{"nvidia.com/gpu", "2"}, {"nvidia.com/gpucores", "30"}}))) == JobKind::kOther);
  CHECK(kind_of(t::job("a", 0, 60, t::request({{"google.com/tpu", "4"}}))) == JobKind::kOther);
}

TEST_CASE("job kind names round-trip and unknown names are rejected", "[traces][transforms]") {
  for (const auto k : {JobKind::kCpuOnly, JobKind::kShare, JobKind::kOneGpu, JobKind::kMultiGpu, JobKind::kOther}) {
    CHECK(parse_job_kind(to_string(k)) == k);
  }
  CHECK(to_string(JobKind::kMultiGpu) == "multi-gpu");
  CHECK(to_string(JobKind::kCpuOnly) == "cpu");
  CHECK_FALSE(parse_job_kind("gpu").has_value());
  CHECK_FALSE(parse_job_kind("").has_value());
  CHECK_FALSE(parse_job_kind("Share").has_value());
}

TEST_CASE("filter keeps jobs of the given queues and kinds in order", "[traces][transforms]") {
  Workload w{cpu_job("a"), share_job("b", 200), gpu_job("c", 1), gpu_job("d", 8), share_job("e", 900)};
  w[1].queue = "team-a";
  w[2].queue = "team-a";
  w[3].queue = "team-b";
  CHECK(names(filter(w, {})) == names(w));
  CHECK(names(filter(w, {{"team-a"}, {}})) == std::vector<std::string>{"b", "c"});
  CHECK(names(filter(w, {{"team-a", "default"}, {}})) == std::vector<std::string>{"a", "b", "c", "e"});
  CHECK(names(filter(w, {{}, {JobKind::kShare}})) == std::vector<std::string>{"b", "e"});
  CHECK(names(filter(w, {{}, {JobKind::kOneGpu, JobKind::kMultiGpu}})) == std::vector<std::string>{"c", "d"});
  CHECK(names(filter(w, {{"team-a"}, {JobKind::kShare}})) == std::vector<std::string>{"b"});
  CHECK(filter(w, {{"nobody"}, {}}).empty());
}

// ---------------------------------------------------------------- arrival_only

TEST_CASE("arrival_only makes the jobs arrive one at a time in order and never end", "[traces][transforms]") {
  Workload w{t::job("a", 30, 5, cpu_req()), t::job("b", 10, 7, whole_req(1)), t::job("c", 20, -1, share_req(100))};
  w[0].constraints.walltime = SimTime::from_seconds(9);
  const auto f = arrival_only(w);
  CHECK(names(f) == names(w));
  for (std::size_t i = 0; i < f.size(); ++i) {
    const auto& j = f[i];
    CHECK(j.submit == SimTime::from_us(static_cast<std::int64_t>(i)));
    CHECK(j.duration.is_forever());
    CHECK(j.estimate().is_forever());
  }
  CHECK(gpu_milli_requested(std::span<const JobSpec>(f)) == gpu_milli_requested(std::span<const JobSpec>(w)));
}
