#pragma once
/// The resources a quota can limit, and what a job is charged for them. Shared by
/// `resource-quota` (Kubernetes ResourceQuota) and `capacity-queues` (Kueue ClusterQueues).
///
/// Accepted names (a leading `requests.` is dropped, as in ResourceQuota `requests.cpu`;
/// `limits.*` is refused because gpusched models requests only):
///
/// | name                           | charged per job                                   | unit in args            |
/// |--------------------------------|---------------------------------------------------|-------------------------|
/// | `cpu`                          | cpu request x tasks                               | quantity ("64", "500m") |
/// | `memory`                       | memory request x tasks                            | quantity ("256Gi")      |
/// | `nvidia.com/gpu`               | nvidia.com/gpu the pod requests x tasks (see nvidia_gpus) | count           |
/// | `gpusched.io/gpu-milli`        | shares: milli x GPUs x tasks (whole GPUs: 0)      | milli-GPU               |
/// | `nvidia.com/mig-<profile>`     | GPU instances of that profile x tasks             | count                   |
/// | `nvidia.com/vgpu-<profile>`    | vGPUs of that profile x tasks                     | count                   |
/// | `google.com/tpu`               | TPU chips x tasks                                 | count                   |
/// | `<domain>/<name>`              | the extended resource x tasks                     | count                   |
/// | `pods`                         | tasks                                             | count                   |
/// | `count/jobs` (`count/jobs.batch`) | 1                                              | count                   |
/// | `gpusched.io/gpu-equivalent`   | weighted GPU cost (see Weights)                   | number (may be fractional) |
///
/// As with ResourceQuota, a job is charged under the names it requests: a whole-GPU job uses
/// `nvidia.com/gpu`, not `gpusched.io/gpu-milli`; a HAMi share (`nvidia.com/gpu: 2` with
/// `nvidia.com/gpucores: 50`) uses `nvidia.com/gpu` (2) and `gpusched.io/gpu-milli` (2 x 500,
/// its cores in gpusched's unit), as does a gpu-milli share written with `nvidia.com/gpu: 1`.
/// `gpusched.io/gpu-equivalent` is the one resource that adds different kinds up, with weights
/// per requested resource name (a share costs its compute once, as gpu-milli).
///
/// Example:
///   QuotaResources res;
///   const auto gpu = res.intern(QuotaResources::canonical("requests.nvidia.com/gpu", where));
///   std::vector<std::int64_t> c(res.size());
///   res.charge(cluster, job, job.tasks, c);   // c[gpu] == GPUs x tasks
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include <gpusched/cluster.hpp>
#include <gpusched/error.hpp>
#include <gpusched/job.hpp>

namespace gpusched::policies::quota {

/// The name of the derived weighted-GPU resource.
inline constexpr std::string_view kGpuEquivalentName = "gpusched.io/gpu-equivalent";

enum class QuotaKind : std::uint8_t { kCpu, kMemory, kGpu, kGpuMilli, kMig, kVgpu, kTpu, kExtended, kPods, kJobs, kGpuEquivalent };

/// Internal amounts: cpu milli, memory MiB, gpu-equivalent millionths (each job's cost rounded down),
/// everything else as counted.
class QuotaResources {
 public:
  /// The canonical spelling of a quota resource name (drops `requests.`, lower-cases MIG
  /// profiles as written). Throws ProfileError(kProfileBadArgs) at `where` for an unknown or
  /// unsupported name, listing the accepted ones.
  static std::string canonical(std::string_view written, const Location& where);

  /// Dense index of a canonical name (added on first use).
  std::size_t intern(const std::string& canonical);
  [[nodiscard]] std::size_t size() const { return entries_.size(); }
  [[nodiscard]] const std::string& name(std::size_t i) const { return entries_[i].name; }
  [[nodiscard]] std::optional<std::size_t> find(std::string_view canonical) const;

  /// Parses an amount for resource `i` (a JSON number or quantity string). Throws
  /// ProfileError(kProfileBadArgs) at `where` when malformed or negative.
  [[nodiscard]] std::int64_t parse_amount(std::size_t i, const nlohmann::json& v, const Location& where) const;
  /// An internal amount in the unit users write ("64", "256Gi", "2.5").
  [[nodiscard]] std::string format(std::size_t i, std::int64_t amount) const;

  /// `weights` (an object: resource name -> gpu-equivalents per unit; cpu per core, memory per
  /// GiB) replaces the defaults, which are: nvidia.com/gpu 1, gpusched.io/gpu-milli 0.001, a MIG
  /// profile its compute slices / the GPU's (1g of 7 = 1/7), a vGPU profile 1 / vGPUs per GPU,
  /// everything else 0. Throws ProfileError at `where` on a bad name or a negative weight.
  void set_weights(const nlohmann::json& weights, const Location& where);

  /// Adds to `out` (size() entries) the charge of `tasks` tasks of `job`. `cluster` names the
  /// extended resources and the GPU catalog (MIG/vGPU default weights); null: those count 0.
  /// O(size()).
  void charge(const ClusterState* cluster, const JobSpec& job, std::int64_t tasks, std::span<std::int64_t> out) const;
  /// nvidia.com/gpu one task requests: `count` for whole GPUs (replicas and MIG `single` GIs
  /// too), passthrough GPUs, HAMi shares and gpu-milli / gpu-mem shares written with
  /// nvidia.com/gpu: 1 (GpuRequest::names_gpu); 0 for other shares, MIG profiles and vGPUs.
  [[nodiscard]] static std::int64_t nvidia_gpus(const GpuRequest& g);

 private:
  struct Entry {
    std::string name;
    QuotaKind kind;
    std::string detail;   // MIG / vGPU profile, extended resource name
    // Extended: the resource id in the last cluster seen.
    mutable const ResourceTable* table = nullptr;
    mutable std::optional<ResourceId> id;
  };
  [[nodiscard]] double gpu_equivalent(const ClusterState* cluster, const TaskRequest& r) const;

  std::vector<Entry> entries_;
  bool custom_weights_ = false;
  std::map<std::string, double, std::less<>> weights_;   // canonical name -> weight per unit
};

}  // namespace gpusched::policies::quota
