#pragma once
/// Kubernetes Dynamic Resource Allocation with structured parameters: ResourceSlices publish
/// devices, DeviceClasses select them, ResourceClaims ask for them, and the allocator decides as
/// kube-scheduler's DynamicResources plugin does (k8s.io/dynamic-resource-allocation/structured,
/// the 1.34 allocator with the default feature gates: admin access and prioritized lists on;
/// device taints, partitionable devices, consumable capacity and binding conditions off — inputs
/// that use those are refused by the readers).
///
/// The search, as the peer's: claims in the order given, their requests in spec order, and each
/// request's devices one at a time, from pools in order of first appearance, their slices in
/// order and each slice's devices in order; depth-first with backtracking over devices, requests,
/// `firstAvailable` alternatives and claims; the first complete solution wins. Kubernetes keeps
/// pools in a Go map (random order): where two pools could both satisfy a request it may choose
/// the other one; gpusched's order is the slices' (documented in docs/dra.md).
///
/// Example:
///   dra::Allocator alloc(classes, slices);
///   auto in_use = alloc.no_devices_in_use();
///   auto r = alloc.allocate({"node-1", {}}, {&claim}, in_use);   // nullopt: does not fit there
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <gpusched/dra/cel.hpp>
#include <gpusched/dra/device.hpp>
#include <gpusched/resources.hpp>

namespace gpusched::dra {

/// Kubernetes' limit on the devices of one claim (AllocationResultsMaxSize).
inline constexpr std::size_t kMaxDevicesPerClaim = 32;

/// One node selector requirement (core/v1 NodeSelectorRequirement).
struct NodeSelectorRequirement {
  std::string key;
  std::string op;   ///< In, NotIn, Exists, DoesNotExist, Gt, Lt
  std::vector<std::string> values;
  friend bool operator==(const NodeSelectorRequirement&, const NodeSelectorRequirement&) = default;
};
/// One NodeSelectorTerm: every requirement must hold. `fields` may only name metadata.name.
struct NodeSelectorTerm {
  std::vector<NodeSelectorRequirement> expressions;   ///< on labels
  std::vector<NodeSelectorRequirement> fields;        ///< on metadata.name
};

/// The node a decision is for: its name and labels.
struct NodeInfo {
  std::string name;
  std::map<std::string, std::string> labels;
};
[[nodiscard]] bool matches(const NodeSelectorTerm& term, const NodeInfo& node);

struct ResourceSlice {
  std::string name;   ///< metadata.name (for messages)
  std::string driver;
  std::string pool;
  std::int64_t generation = 0;
  std::int64_t slice_count = 1;   ///< pool.resourceSliceCount
  // Exactly one of these says which nodes see the slice.
  std::string node_name;
  bool all_nodes = false;
  std::optional<NodeSelectorTerm> node_selector;
  std::vector<Device> devices;
};

/// Opaque configuration for a driver (DeviceConfiguration.opaque): it does not affect the
/// decision; the allocation result carries it to the driver.
struct OpaqueConfig {
  std::string driver;
  std::string parameters;   ///< the JSON object, as compact text
  friend bool operator==(const OpaqueConfig&, const OpaqueConfig&) = default;
};

struct DeviceClass {
  std::string name;
  std::vector<CelExpression> selectors;
  std::vector<OpaqueConfig> config;   ///< spec.config, in order
};

enum class AllocationMode : std::uint8_t { kExactCount, kAll };

/// What a request (`exactly`) or one `firstAvailable` alternative asks for.
struct DeviceSubRequest {
  std::string name;
  std::string device_class;
  std::vector<CelExpression> selectors;
  AllocationMode mode = AllocationMode::kExactCount;
  std::int64_t count = 1;
  bool admin_access = false;   ///< only on `exactly` requests
};

struct DeviceRequest {
  std::string name;
  /// `exactly` (first_available empty), or the alternatives in order (exactly unused).
  DeviceSubRequest exactly;
  std::vector<DeviceSubRequest> first_available;
};

struct DeviceConstraint {
  std::vector<std::string> requests;   ///< empty: every request; "req" or "req/sub"
  std::string match_attribute;         ///< fully qualified
};

/// A claim's spec.devices.config entry: for the named requests ("req" or "req/sub"; none: all).
struct ClaimConfig {
  std::vector<std::string> requests;
  OpaqueConfig opaque;
};

/// An entry of the allocation result's devices.config (DeviceAllocationConfiguration).
struct AllocatedConfig {
  enum class Source : std::uint8_t { kClass, kClaim };   ///< FromClass, FromClaim
  Source source = Source::kClass;
  std::vector<std::string> requests;   ///< empty: every request of the claim
  OpaqueConfig opaque;
  friend bool operator==(const AllocatedConfig&, const AllocatedConfig&) = default;
};
[[nodiscard]] std::string_view to_string(AllocatedConfig::Source s);

struct DeviceResult {
  std::string request;   ///< "req", or "req/sub" for a firstAvailable alternative
  std::string driver, pool, device;
  bool admin_access = false;
  friend bool operator==(const DeviceResult&, const DeviceResult&) = default;
};

struct ResourceClaim {
  std::string namespace_name, name;
  std::vector<DeviceRequest> requests;
  std::vector<DeviceConstraint> constraints;
  std::vector<ClaimConfig> config;   ///< spec.devices.config, in order
  /// status.allocation when the claim is allocated already (its non-admin devices are in use).
  std::optional<std::vector<DeviceResult>> allocated;
  /// "namespace/name", or the name alone without a namespace (as Kubernetes' messages print it).
  [[nodiscard]] std::string id() const { return namespace_name.empty() ? name : namespace_name + "/" + name; }
};

/// A task's claims as a simulation runs them (JobConstraints::claims): made from one
/// ResourceClaimTemplate, with the DeviceClasses they may name.
struct DeviceClaims {
  std::string template_name;
  std::shared_ptr<const std::vector<DeviceClass>> classes;
  std::vector<ResourceClaim> claims;
  /// `claims` as Allocator::allocate takes them.
  [[nodiscard]] std::vector<const ResourceClaim*> pointers() const {
    std::vector<const ResourceClaim*> out;
    out.reserve(claims.size());
    for (const auto& c : claims) out.push_back(&c);
    return out;
  }
  /// ResourceSlices the scenario gives for some nodes, in place of those derived from their model
  /// (dra::simulated_devices); null: none.
  std::shared_ptr<const std::vector<ResourceSlice>> slices;
  /// The most devices the claim can take, admin access left out: with `firstAvailable`
  /// alternatives of different counts, each request's largest alternative, summed (0: as many
  /// as the job's request states). The job's request states the smallest, so that node-resources-fit
  /// and the node index's capacity bounds never refuse a node where a smaller alternative fits;
  /// quotas charge this, as Kubernetes' ResourceQuota charges a claim's worst case
  /// (pkg/quota/v1/evaluator/core/resource_claims.go, "use the worst case per device class").
  std::int32_t most_devices = 0;
  /// One ResourceClaim shared by every job that names it (JobConstraints::resource_claim), not a
  /// claim per task made from a template. It is allocated when the first of them starts, on that
  /// job's node, and stays allocated until the last of them ends (Kubernetes' resourceclaim
  /// controller clears the allocation once no pod reserves the claim). The jobs state no device:
  /// the one that allocates the claim is granted `holder` (its devices' kind, the smallest count);
  /// the others are placed on its node with none.
  bool shared = false;
  GpuRequest holder;
  /// How the jobs of a shared claim share its devices at run time, as NVIDIA's driver sets them
  /// up: time-sliced (its DefaultGpuConfig, and CUDA's default for processes on one GPU), or
  /// MPS when the claim's GpuConfig / MigDeviceConfig says `sharing.strategy: MPS`, each client
  /// then limited to `mps_active_thread_percent` of the SMs (mpsConfig.defaultActiveThreadPercentage).
  enum class Sharing : std::uint8_t { kTimeSlicing, kMps };
  Sharing sharing = Sharing::kTimeSlicing;
  std::int32_t mps_active_thread_percent = 100;
};

/// One claim's allocation: the devices in the order they were chosen, and where the claim can
/// be used: `node_name` when a device's slice names its node, else the merged node selector of
/// the devices' slices (empty: every node).
struct Allocation {
  std::vector<DeviceResult> devices;
  /// The classes' config, then the claim's, as Kubernetes copies them into the result (see
  /// Allocator::allocate).
  std::vector<AllocatedConfig> config;
  std::string node_name;
  NodeSelectorTerm node_selector;
};

/// The devices `allocations` take: admin access left out (those are monitored, not taken); of
/// driver `driver` only, when one is named.
[[nodiscard]] inline std::int32_t devices_taken(std::span<const Allocation> allocations, std::string_view driver = {}) {
  std::int32_t n = 0;
  for (const auto& a : allocations) {
    for (const auto& r : a.devices) n += r.admin_access || (!driver.empty() && r.driver != driver) ? 0 : 1;
  }
  return n;
}

/// What Kubernetes' Allocate reports as an error (the pod is not scheduled in this attempt):
/// a CEL runtime error in a selector, an unknown DeviceClass, too many devices, "All" over a
/// pool being updated, an `All` device that breaks a constraint.
class AllocationError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Allocator {
 public:
  /// Classes by name (the last of a name wins) and every slice of the cluster.
  Allocator(std::vector<DeviceClass> classes, std::vector<ResourceSlice> slices);

  [[nodiscard]] const std::vector<ResourceSlice>& slices() const { return slices_; }
  [[nodiscard]] const DeviceClass* find_class(std::string_view name) const;
  /// Devices are numbered across all slices, slice by slice: in_use vectors are indexed so.
  [[nodiscard]] std::size_t device_count() const { return device_slice_.size(); }
  [[nodiscard]] std::vector<std::uint8_t> no_devices_in_use() const { return std::vector<std::uint8_t>(device_count(), 0); }
  /// The number of device (driver, pool, name), among the slices of the pool's newest
  /// generation; nullopt when none.
  [[nodiscard]] std::optional<std::uint32_t> find_device(std::string_view driver, std::string_view pool, std::string_view name) const;
  /// Marks the non-admin devices of `results` in use (devices unknown here are skipped). A device
  /// is its (driver, pool, name): every generation of it is marked, as Kubernetes keeps in-use
  /// devices by that id.
  void mark_in_use(const std::vector<DeviceResult>& results, std::vector<std::uint8_t>& in_use) const;
  /// Marks device `d` and its twins of other generations (same driver, pool and name).
  void mark_in_use(std::uint32_t d, std::vector<std::uint8_t>& in_use) const;
  /// Kubernetes gives up a search that runs too long (DRASchedulerFilterTimeout, 10 s); gpusched
  /// counts steps instead, so the answer does not depend on the machine: past this many, allocate()
  /// throws AllocationError("filter operation aborted ...").
  static constexpr std::uint64_t kMaxSteps = 5'000'000;
  [[nodiscard]] const Device& device(std::uint32_t d) const;
  [[nodiscard]] const ResourceSlice& slice_of(std::uint32_t d) const { return slices_[device_slice_[d]]; }
  /// The number of slice `s`'s first device (its devices follow in order).
  [[nodiscard]] std::uint32_t first_device(std::size_t s) const { return slice_first_[s]; }

  /// Allocates `claims` together for a pod on `node`: one Allocation per claim, in order, or
  /// nullopt when they do not fit on that node. `in_use` (device_count() long) marks devices
  /// other claims hold. Throws AllocationError as Kubernetes' Allocate returns an error.
  [[nodiscard]] std::optional<std::vector<Allocation>> allocate(const NodeInfo& node, std::span<const ResourceClaim* const> claims,
                                                                std::span<const std::uint8_t> in_use) const;

  /// Calls of the depth-first step in the last allocate() (for tests and benchmarks).
  [[nodiscard]] std::uint64_t last_steps() const { return last_steps_; }

 private:
  struct Search;
  std::vector<DeviceClass> classes_;
  std::unordered_map<std::string, std::size_t> class_index_;
  std::vector<ResourceSlice> slices_;
  std::vector<std::uint32_t> device_slice_;    // device -> slice
  std::vector<std::uint32_t> slice_first_;     // slice -> its first device number
  std::unordered_map<std::string, std::vector<std::uint32_t>> by_node_;   // nodeName -> slices
  std::vector<std::uint32_t> unpinned_;        // slices for all nodes or by node selector
  std::unordered_map<std::string, std::uint32_t> device_by_id_;           // "driver\0pool\0name" -> device (newest generation)
  std::vector<std::uint32_t> identity_;                                   // device -> its (driver, pool, name) id
  std::vector<std::vector<std::uint32_t>> twins_;                         // id -> its devices, every generation
  mutable std::uint64_t last_steps_ = 0;
};

}  // namespace gpusched::dra
