#pragma once
/// What a task asks for, in gpusched units, built from the resource names users write.
#include <bitset>
#include <optional>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <gpusched/compact_string.hpp>
#include <gpusched/error.hpp>
#include <gpusched/gpu_catalog.hpp>
#include <gpusched/ids.hpp>

namespace gpusched {

/// Resource names accepted in requests (Kubernetes spelling where one exists).
namespace resource_names {
inline constexpr std::string_view kCpu = "cpu";                      ///< quantity: "4", "500m"
inline constexpr std::string_view kMemory = "memory";                ///< quantity: "16Gi" (plain = bytes)
inline constexpr std::string_view kGpu = "nvidia.com/gpu";           ///< whole GPUs, integer
inline constexpr std::string_view kGpuShared = "nvidia.com/gpu.shared";  ///< replicas under renameByDefault
inline constexpr std::string_view kGpuMilli = "gpusched.io/gpu-milli";  ///< share of ONE GPU, 1..1000 (FGD model)
inline constexpr std::string_view kGpuMem = "aliyun.com/gpu-mem";    ///< GiB of ONE GPU's memory (gpushare)
inline constexpr std::string_view kHamiMem = "nvidia.com/gpumem";    ///< HAMi: MiB of each GPU (default: all of it)
inline constexpr std::string_view kHamiCores = "nvidia.com/gpucores";  ///< HAMi: percent of each GPU's SMs
inline constexpr std::string_view kMigPrefix = "nvidia.com/mig-";    ///< + profile, e.g. nvidia.com/mig-3g.40gb
inline constexpr std::string_view kVgpuPrefix = "nvidia.com/vgpu-";  ///< + vGPU profile, e.g. nvidia.com/vgpu-A100-10C
inline constexpr std::string_view kPassthrough = "pci_passthrough:alias";  ///< "<alias>:<count>", alias GPU or a model
inline constexpr std::string_view kTpu = "google.com/tpu";           ///< TPU chips on one host
inline constexpr std::string_view kTpuTopology = "cloud.google.com/gke-tpu-topology";  ///< slice shape, e.g. 2x2x4
inline constexpr std::string_view kTpuAccelerator = "cloud.google.com/gke-tpu-accelerator";  ///< e.g. tpu-v4-podslice
}  // namespace resource_names

/// Milli-GPU in one whole GPU.
inline constexpr std::int32_t kMilliPerGpu = 1000;
/// At most this many GPU models can be named in one constraint set (bit mask).
inline constexpr std::size_t kMaxGpuModels = 128;
using GpuModelMask = std::bitset<kMaxGpuModels>;

/// How a task uses GPUs.
enum class GpuMode : std::uint8_t {
  kNone,         ///< CPU-only
  kWhole,        ///< `count` units of nvidia.com/gpu: whole GPUs, or on time-slicing/MPS nodes
                 ///< replicas, or on MIG `single` nodes GPU instances
  kShared,       ///< part of `count` GPUs (one each): `milli` compute and/or `memory_mib`
                 ///< (gpu-milli and gpu-mem: count 1; HAMi gpumem/gpucores: count N)
  kMig,          ///< `count` GPU instances of MIG profile `profile` (mixed strategy)
  kVgpu,         ///< `count` vGPUs of profile `profile`
  kPassthrough,  ///< `count` whole GPUs passed through to a VM
};
std::string_view to_string(GpuMode m);

/// `memory_mib` value of a HAMi request without nvidia.com/gpumem: all of the GPU's memory.
inline constexpr std::int64_t kAllGpuMemory = -1;

struct GpuRequest {
  GpuMode mode = GpuMode::kNone;
  std::int32_t count = 0;         ///< units (see GpuMode); 0 with kNone
  std::int32_t milli = 0;         ///< shared: compute share of each GPU, 0..1000
  std::int64_t memory_mib = 0;    ///< shared: GPU memory on each GPU (kAllGpuMemory: all of it)
  /// kShared: the pod requests nvidia.com/gpu (`count`) besides its share, as quotas on
  /// requests.nvidia.com/gpu see it: always for HAMi (its webhook adds nvidia.com/gpu: 1 when
  /// absent), for a gpu-milli / gpu-mem share when written with nvidia.com/gpu: 1 (the openb
  /// mapping writes it). Other modes: unused (whole and passthrough GPUs are nvidia.com/gpu).
  bool names_gpu = true;
  /// kWhole: asked as nvidia.com/gpu.shared, the name the NVIDIA device plugin gives time-slicing
  /// / MPS replicas under renameByDefault; only such replicas serve it (and only it).
  bool shared_name = false;
  /// kWhole: the vendor resource asked instead of nvidia.com/gpu (amd.com/gpu: a catalog model's
  /// resource_name); empty = nvidia.com/gpu. Only models requested by that name serve it (issue 15).
  CompactString resource_name;
  CompactString profile;          ///< kMig / kVgpu: profile name as written
  /// kMig / kVgpu: the profile's index for each catalog model (by GpuModelId), -1 = not offered.
  std::vector<std::int8_t> profile_by_model;
  /// Profile index on model `m`, or -1.
  [[nodiscard]] int profile_index(GpuModelId m) const {
    return m.value < profile_by_model.size() ? profile_by_model[m.value] : -1;
  }
  /// Nominal GPU milli this request takes (count*1000 for whole GPUs, share x count when shared;
  /// partitions report their real share when granted).
  [[nodiscard]] std::int64_t total_milli() const {
    switch (mode) {
      case GpuMode::kWhole:
      case GpuMode::kPassthrough: return std::int64_t{count} * kMilliPerGpu;
      case GpuMode::kShared: return std::int64_t{count} * milli;
      default: return 0;
    }
  }
  bool operator==(const GpuRequest&) const = default;
};

/// A TPU request: chips on one host, and the slice the job's hosts form together.
struct TpuRequest {
  std::int32_t chips = 0;           ///< google.com/tpu per task (0 = no TPU)
  CompactString generation;         ///< from the accelerator label ("v4", "v5e", "v5p")
  CompactString topology;           ///< slice shape ("2x2x4"); empty = single-host, any shape
  std::int32_t hosts = 1;           ///< hosts the slice spans (= tasks of the job)
  bool operator==(const TpuRequest&) const = default;
};

/// The request of one task (all tasks of a job are alike).
struct TaskRequest {
  std::int64_t cpu_milli = 0;
  std::int64_t memory_mib = 0;
  GpuRequest gpu;
  TpuRequest tpu;
  GpuModelMask allowed_models;   ///< empty = any model (the job's gpu_model list, passthrough alias)
  /// kWhole: the models requested by the request's resource name (nvidia.com/gpu: NVIDIA models,
  /// amd.com/gpu: AMD ones); empty = any (a catalog whose models share one name). Kept apart from
  /// allowed_models so that exports do not write it as a gpu_model list (issue 15).
  GpuModelMask resource_models;
  std::vector<std::pair<ResourceId, std::int64_t>> extended;  ///< interned name -> amount

  [[nodiscard]] bool model_allowed(GpuModelId m) const {
    return (allowed_models.none() || (m.valid() && allowed_models.test(m.value))) &&
           (resource_models.none() || (m.valid() && resource_models.test(m.value)));
  }
  /// true when every GPU model may serve the request (no gpu_model list, no resource-name mask).
  [[nodiscard]] bool any_model() const { return allowed_models.none() && resource_models.none(); }
  bool operator==(const TaskRequest&) const = default;
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
/// HAMi's gpumem/gpucores go with nvidia.com/gpu: N (N shares, one per GPU); one MIG or vGPU
/// profile per task, which some catalog model (among `gpu_models`, when given) must offer;
/// TPU topology needs the accelerator label and must be offered by that generation.
/// Negative or malformed values throw QuantityError/TraceError/CatalogError with the location.
/// `devices_from_claim`: a DRA claim gives the job's devices, so a TPU slice selector (accelerator
/// and topology) may come without google.com/tpu: the generation and topology are kept, and
/// set_tpu_hosts sizes the slice once the claim's chips per host are known.
TaskRequest parse_requests(const std::vector<std::pair<std::string, std::string>>& items,
                           const std::vector<std::string>& gpu_models, const GpuCatalog& catalog,
                           ResourceTable& resources, const Location& where,
                           std::string_view field_prefix = {}, bool devices_from_claim = false);

/// The hosts (TpuRequest::hosts) a slice of `r.topology` spans at r.chips chips per host: one
/// for a sub-host slice of exactly r.chips chips. Nothing without a topology or chips. Throws
/// QuantityError at `where` when the slice's chips are neither r.chips nor a multiple of it.
void set_tpu_hosts(TpuRequest& r, const Location& where);

/// The inverse, for writing traces: name -> value in the canonical spelling.
std::vector<std::pair<std::string, std::string>> format_requests(const TaskRequest& r,
                                                                  const ResourceTable& resources);

}  // namespace gpusched
