#pragma once
/// What a task asks for, in gpusched units, built from the resource names users write.
#include <bitset>
#include <optional>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <gpusched/error.hpp>
#include <gpusched/gpu_catalog.hpp>
#include <gpusched/ids.hpp>

namespace gpusched {

/// Resource names accepted in requests (Kubernetes spelling where one exists).
namespace resource_names {
inline constexpr std::string_view kCpu = "cpu";                      ///< quantity: "4", "500m"
inline constexpr std::string_view kMemory = "memory";                ///< quantity: "16Gi" (plain = bytes)
inline constexpr std::string_view kGpu = "nvidia.com/gpu";           ///< whole GPUs, integer
inline constexpr std::string_view kGpuMilli = "gpusched.io/gpu-milli";  ///< share of ONE GPU, 1..1000 (FGD model)
inline constexpr std::string_view kGpuMem = "aliyun.com/gpu-mem";    ///< GiB of ONE GPU's memory (gpushare)
}  // namespace resource_names

/// Milli-GPU in one whole GPU.
inline constexpr std::int32_t kMilliPerGpu = 1000;
/// At most this many GPU models can be named in one constraint set (bit mask).
inline constexpr std::size_t kMaxGpuModels = 128;
using GpuModelMask = std::bitset<kMaxGpuModels>;

/// How a task uses GPUs.
enum class GpuMode : std::uint8_t {
  kNone,      ///< CPU-only
  kWhole,     ///< `count` GPUs, each entirely (nvidia.com/gpu)
  kShared,    ///< part of ONE GPU: `milli` compute share and/or `memory_mib` (gpu-milli, gpu-mem)
};

struct GpuRequest {
  GpuMode mode = GpuMode::kNone;
  std::int32_t count = 0;         ///< GPUs: 0 (none), N (whole) or 1 (shared)
  std::int32_t milli = 0;         ///< shared: compute share of one GPU, 0..1000
  std::int64_t memory_mib = 0;    ///< shared: GPU memory on that GPU
  /// Total GPU milli this request takes (count*1000 for whole GPUs).
  [[nodiscard]] std::int64_t total_milli() const {
    return mode == GpuMode::kWhole ? std::int64_t{count} * kMilliPerGpu : milli;
  }
};

/// The request of one task (all tasks of a job are alike).
struct TaskRequest {
  std::int64_t cpu_milli = 0;
  std::int64_t memory_mib = 0;
  GpuRequest gpu;
  GpuModelMask allowed_models;   ///< empty = any model
  std::vector<std::pair<ResourceId, std::int64_t>> extended;  ///< interned name -> amount

  [[nodiscard]] bool model_allowed(GpuModelId m) const {
    return allowed_models.none() || (m.valid() && allowed_models.test(m.value));
  }
};

/// Interns extended-resource names ("rdma/hca", "example.com/foo") to dense ids.
class ResourceTable {
 public:
  ResourceId intern(std::string_view name);
  [[nodiscard]] std::optional<ResourceId> find(std::string_view name) const;
  [[nodiscard]] const std::string& name(ResourceId id) const { return names_[id.value]; }
  [[nodiscard]] std::size_t size() const { return names_.size(); }

 private:
  std::vector<std::string> names_;
};

/// Is this an extended resource name (contains '/', is not one of the GPU names)?
bool is_extended_resource(std::string_view name);

/// Builds a TaskRequest from (name, value) pairs as users write them. `field_prefix` is put
/// before the resource name in error locations (e.g. "requests." for JSON traces).
/// Rules: whole GPUs exclude gpu-milli/gpu-mem except `nvidia.com/gpu: 1` with a share;
/// negative or malformed values throw QuantityError/TraceError with the location.
TaskRequest parse_requests(const std::vector<std::pair<std::string, std::string>>& items,
                           const std::vector<std::string>& gpu_models, const GpuCatalog& catalog,
                           ResourceTable& resources, const Location& where,
                           std::string_view field_prefix = {});

/// The inverse, for writing traces: name -> value in the canonical spelling.
std::vector<std::pair<std::string, std::string>> format_requests(const TaskRequest& r,
                                                                  const ResourceTable& resources);

}  // namespace gpusched
