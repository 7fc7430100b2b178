#pragma once
/// Kubernetes Dynamic Resource Allocation objects, as `kubectl get resourceslices,deviceclasses,
/// resourceclaims,resourceclaimtemplates -o yaml` prints them (resource.k8s.io v1, v1beta2 and
/// v1beta1), read into gpusched::dra (docs/dra.md). Node objects contribute their name and
/// labels only (node selectors of slices match them). Every field of these kinds that gpusched
/// does not model is an error naming the file, line, document, object and field; in particular
/// the alpha features of Kubernetes 1.34 (device taints and tolerations, partitionable devices'
/// counters, consumable capacity, binding conditions, distinctAttribute, per-device node
/// selection). A selector outside gpusched's CEL subset is an error at the expression's field.
///
/// Example:
///   auto objs = scenario::read_kubernetes_objects("cluster-dra.yaml");
///   auto dra = scenario::read_dra_objects(objs);
///   dra::Allocator alloc(dra.classes, dra.slices);
#include <string>
#include <vector>

#include <gpusched/dra/allocator.hpp>
#include <gpusched/node.hpp>
#include <gpusched/scenario/k8s_objects.hpp>

namespace gpusched::scenario {

struct DraObjects {
  std::vector<dra::DeviceClass> classes;
  std::vector<dra::ResourceSlice> slices;
  std::vector<dra::ResourceClaim> claims;      ///< with status.allocation when allocated
  std::vector<dra::ResourceClaim> templates;   ///< ResourceClaimTemplates: the claim spec each pod gets
  std::vector<dra::NodeInfo> nodes;            ///< Node objects (name and labels)
};

/// Reads the DRA kinds (and Nodes) among `objects`; other kinds are an error naming them.
/// Throws ScenarioError naming the object's file, line and field.
DraObjects read_dra_objects(const std::vector<KubernetesObject>& objects);

/// What `gpusched dra allocate` decided for one claim.
struct DraOutcome {
  std::string claim;                          ///< namespace/name
  std::string node;                           ///< where it was allocated (empty: nowhere)
  std::optional<dra::Allocation> allocation;  ///< nullopt: pending
  std::string reason;                         ///< why it is pending: no node fits, or Kubernetes' error text
  bool preallocated = false;                  ///< status.allocation was given: kept as it is
};

/// Allocates every claim without status.allocation, in the order given, as the DRA scheduler
/// plugin would for a pod using that claim alone: on `node` when named, else on the first node
/// (Node objects in the order given, else the slices' nodeName values in name order) where it
/// fits. Devices of claims allocated before (status.allocation, or earlier in this run) are in
/// use. An allocation error (a CEL runtime error, an unknown class) leaves the claim pending with
/// the error as its reason, as kube-scheduler does; other claims go on.
std::vector<DraOutcome> allocate_claims(const DraObjects& objects, const std::string& node = "");
/// A table: claim, node, devices or the reason.
std::string format_dra(const std::vector<DraOutcome>& outcomes);
/// The outcomes as JSON: per claim its status.allocation as the API would hold it (devices.results
/// and nodeSelector), or its pending reason.
nlohmann::json dra_json(const std::vector<DraOutcome>& outcomes);

/// The ResourceSlices NVIDIA's DRA driver would publish for these nodes (Google's TPU driver for
/// TPU hosts), and their DeviceClasses, as a kubectl List (gpusched/dra/nvidia.hpp).
nlohmann::json nvidia_dra_objects(const std::vector<NodeSpec>& nodes, const GpuCatalog& catalog);

}  // namespace gpusched::scenario
