#include <gpusched/dra/nvidia.hpp>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>
#include <regex>
#include <stdexcept>
#include <string_view>

#include <gpusched/tpu.hpp>

namespace gpusched::dra {
namespace {

struct Arch {
  std::string_view prefix;   // catalog names starting with this
  std::string_view architecture;
  std::string_view compute_capability;
};
// NVIDIA's CUDA GPU compute capability table (developer.nvidia.com/cuda-gpus) and the
// architecture names NVML reports; the longest matching prefix wins.
constexpr Arch kArchs[] = {
    {"A100", "Ampere", "8.0.0"},  {"A800", "Ampere", "8.0.0"},   {"A30", "Ampere", "8.0.0"},   {"A10", "Ampere", "8.6.0"},
    {"A40", "Ampere", "8.6.0"},   {"H100", "Hopper", "9.0.0"},   {"H800", "Hopper", "9.0.0"},  {"H200", "Hopper", "9.0.0"},
    {"H20", "Hopper", "9.0.0"},   {"GH200", "Hopper", "9.0.0"},  {"L4", "Ada Lovelace", "8.9.0"}, {"L40", "Ada Lovelace", "8.9.0"},
    {"RTX-6000-Ada", "Ada Lovelace", "8.9.0"}, {"T4", "Turing", "7.5.0"}, {"V100", "Volta", "7.0.0"}, {"P100", "Pascal", "6.0.0"},
    {"P40", "Pascal", "6.1.0"},   {"K80", "Kepler", "3.7.0"},    {"B200", "Blackwell", "10.0.0"}, {"GB200", "Blackwell", "10.0.0"},
    {"B300", "Blackwell", "10.3.0"}, {"RTX-PRO-6000-Blackwell", "Blackwell", "12.0.0"},
};

const Arch* arch_of(std::string_view model) {
  const Arch* best = nullptr;
  for (const auto& a : kArchs) {
    if (model.substr(0, a.prefix.size()) == a.prefix && (best == nullptr || a.prefix.size() > best->prefix.size())) best = &a;
  }
  return best;
}

/// A stable, synthetic UUID for GPU `index` of `node` ("GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx").
std::string synthetic_uuid(std::string_view prefix, std::string_view node, std::size_t index) {
  std::uint64_t h1 = 1469598103934665603ULL, h2 = 1099511628211ULL * 31;
  auto mix = [&](unsigned char c) {
    h1 = (h1 ^ c) * 1099511628211ULL;
    h2 = (h2 ^ c) * 0x100000001b3ULL + 0x9e3779b97f4a7c15ULL;
  };
  for (char c : node) mix(static_cast<unsigned char>(c));
  mix(0);
  for (char c : std::to_string(index)) mix(static_cast<unsigned char>(c));
  char buf[64];
  // An empty prefix gives a plain UUID (the driver's vfio devices).
  std::snprintf(buf, sizeof buf, "%s%s%08x-%04x-%04x-%04x-%012llx", std::string(prefix).c_str(), prefix.empty() ? "" : "-",
                static_cast<unsigned>(h1 >> 32),
                static_cast<unsigned>((h1 >> 16) & 0xffff), static_cast<unsigned>(h1 & 0xffff), static_cast<unsigned>(h2 >> 48),
                static_cast<unsigned long long>(h2 & 0xffffffffffffULL));
  return buf;
}

std::string mib(std::int64_t v) { return std::to_string(v) + "Mi"; }

/// A PCIe root's name as resource.kubernetes.io/pcieRoot states it: "pci<domain>:<bus>".
std::string pcie_root_name(unsigned domain, unsigned bus) {
  char root[32];
  std::snprintf(root, sizeof root, "pci%04x:%02x", domain, bus);
  return root;
}
}  // namespace

std::string gpu_pcie_root(const NodeSpec& node, std::size_t i) {
  // GPUs behind one PCIe switch share a root; a GPU without one has a root of its own.
  const auto& g = node.gpus[i];
  const auto bus = g.pcie_switch >= 0 ? 0x80U + static_cast<unsigned>(g.pcie_switch) : static_cast<unsigned>(i);
  return pcie_root_name(static_cast<unsigned>(g.socket), bus);
}

namespace {
/// A node's one slice of `driver`, as both drivers publish theirs: pool = node name, one slice.
ResourceSlice node_slice(const NodeSpec& node, std::string_view driver) {
  ResourceSlice s;
  s.name = node.name + "-" + std::string(driver);
  s.driver = std::string(driver);
  s.pool = node.name;
  s.generation = 1;
  s.slice_count = 1;
  s.node_name = node.name;
  return s;
}

std::optional<ResourceSlice> make_slice(const NodeSpec& node, const GpuCatalog& catalog, bool simulated, std::vector<DeviceUnit>* units) {
  ResourceSlice s = node_slice(node, kNvidiaDriver);
  const std::string d = std::string(kNvidiaDriver) + "/";
  std::size_t nvidia = 0;   // the node's NVIDIA GPUs so far: their PCI functions, in order
  for (std::size_t i = 0; i < node.gpus.size(); ++i) {
    const GpuSpec& g = node.gpus[i];
    const GpuModel& m = catalog[g.model];
    if (m.vendor != "NVIDIA") continue;
    const std::size_t function = nvidia++;
    // Simulations: whole GPUs, passthrough GPUs, and the GIs of static layouts on `mixed` nodes
    // (under `single` the engine hands GIs out as nvidia.com/gpu, so a job cannot ask one for a
    // GI of a profile).
    if (simulated && g.partition != GpuPartition::kWhole && g.partition != GpuPartition::kPassthrough &&
        !(g.partition == GpuPartition::kMig && !node.mig_dynamic && node.mig_strategy != MigStrategy::kSingle)) {
      continue;
    }
    std::vector<std::pair<std::string, AttributeValue>> common;
    common.emplace_back(d + "productName", "NVIDIA " + m.name);
    common.emplace_back(d + "brand", std::string("Nvidia"));
    if (const Arch* a = arch_of(m.name)) {
      common.emplace_back(d + "architecture", std::string(a->architecture));
      common.emplace_back(d + "cudaComputeCapability", *Semver::parse(a->compute_capability));
    }
    common.emplace_back("resource.kubernetes.io/numaNode", std::int64_t{g.socket});
    common.emplace_back("resource.kubernetes.io/pcieRoot", gpu_pcie_root(node, i));
    if (!g.bus_id.empty()) common.emplace_back("resource.kubernetes.io/pciBusID", g.bus_id);
    if (g.nvlink_domain >= 0) common.emplace_back("gpusched.io/nvlinkDomain", std::int64_t{g.nvlink_domain});
    const std::string uuid = synthetic_uuid("GPU", node.name, i);
    if (g.partition == GpuPartition::kPassthrough) {
      // A GPU bound to vfio-pci, as the driver publishes it (cmd/gpu-kubelet-plugin,
      // VfioDeviceInfo.GetDevice and CanonicalName "gpu-vfio-<index>", the index being the GPU's
      // place among the node's NVIDIA GPU PCI functions, nvpci.GetGPUs): type vfio, numa (int),
      // no NVML attributes (brand, architecture, compute capability) and no memory capacity.
      // Left out, as the node model does not know them: deviceID (the PCI device id),
      // addressableMemory (the BARs' size) and iommuFDEnabled.
      Device dev;
      dev.name = "gpu-vfio-" + std::to_string(function);
      dev.attributes.emplace_back(d + "type", std::string("vfio"));
      dev.attributes.emplace_back(d + "uuid", synthetic_uuid("", node.name + "/vfio", i));
      dev.attributes.emplace_back(d + "productName", "NVIDIA " + m.name);
      dev.attributes.emplace_back(d + "vendorID", std::string("0x10de"));   // NVIDIA's PCI vendor id
      dev.attributes.emplace_back(d + "numa", std::int64_t{g.socket});
      for (auto& a : common) {
        if (a.first.compare(0, d.size(), d) != 0) dev.attributes.push_back(std::move(a));   // numaNode, pcieRoot, pciBusID, nvlinkDomain
      }
      dev.sort();
      s.devices.push_back(std::move(dev));
      if (units != nullptr) units->push_back({static_cast<std::uint16_t>(i), -1, -1});
      continue;
    }
    if (g.partition == GpuPartition::kMig) {   // in MIG mode: its static instances, not the GPU
      if (!m.mig) continue;
      for (const auto& inst : g.mig) {
        const MigProfile& p = m.mig->profiles[static_cast<std::size_t>(inst.profile)];
        // NVIDIA's name (k8s-dra-driver-gpu, cmd/gpu-kubelet-plugin/deviceinfo.go,
        // MigDeviceInfo.CanonicalName): gpu-<minor>-mig-<GI profile id>-<placement start>-<size in
        // memory slices>. A profile whose id the catalog does not know is named by its profile
        // (lowercased, dots dropped, '+' as '-', to keep a DNS label) instead.
        std::string id = std::to_string(p.id);
        if (p.id < 0) {
          id.clear();
          for (char c : p.name) {
            if (c == '.') continue;
            id += c == '+' ? '-' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
          }
        }
        Device dev;
        dev.name = "gpu-" + std::to_string(i) + "-mig-" + id + "-" + std::to_string(inst.start) + "-" + std::to_string(p.memory_slices);
        dev.attributes = common;
        dev.attributes.emplace_back(d + "type", std::string("mig"));
        dev.attributes.emplace_back(d + "profile", p.name);
        dev.attributes.emplace_back(d + "parentUUID", uuid);
        dev.attributes.emplace_back(d + "uuid", synthetic_uuid("MIG", node.name + "/" + std::to_string(i), static_cast<std::size_t>(inst.start)));
        dev.capacity.emplace_back(d + "memory", *Quantity::parse(mib(p.memory_mib)));
        if (p.sms > 0) dev.capacity.emplace_back(d + "multiprocessors", Quantity::from_int(p.sms));
        // The engines, where the catalog knows them (NVML's GPU instance profile info, as the driver reads it).
        for (const auto& [name, count] : {std::pair{"copyEngines", p.copy_engines}, std::pair{"decoders", p.decoders}, std::pair{"encoders", p.encoders},
                                          std::pair{"jpegEngines", p.jpeg_engines}, std::pair{"ofaEngines", p.ofa_engines}}) {
          if (count >= 0) dev.capacity.emplace_back(d + name, Quantity::from_int(count));
        }
        // The memory slices it occupies, one capacity each (as the driver publishes them).
        for (int k = inst.start; k < inst.start + p.memory_slices; ++k) dev.capacity.emplace_back(d + "memorySlice" + std::to_string(k), Quantity::from_int(1));
        dev.sort();
        s.devices.push_back(std::move(dev));
        if (units != nullptr) {
          units->push_back({static_cast<std::uint16_t>(i), static_cast<std::int8_t>(inst.profile), static_cast<std::int8_t>(inst.start)});
        }
      }
      continue;
    }
    Device dev;
    dev.name = "gpu-" + std::to_string(i);
    dev.attributes = std::move(common);
    dev.attributes.emplace_back(d + "type", std::string("gpu"));
    dev.attributes.emplace_back(d + "uuid", uuid);
    dev.capacity.emplace_back(d + "memory", *Quantity::parse(mib(m.memory_mib)));
    dev.sort();
    s.devices.push_back(std::move(dev));
    if (units != nullptr) units->push_back({static_cast<std::uint16_t>(i), -1, -1});
  }
  if (s.devices.empty()) return std::nullopt;
  return s;
}
}  // namespace

std::optional<ResourceSlice> nvidia_slice(const NodeSpec& node, const GpuCatalog& catalog, bool simulated) {
  return make_slice(node, catalog, simulated, nullptr);
}

std::optional<std::string> tpu_driver_generation(std::string_view accelerator) {
  // AcceleratorGen (cmd/tpu-dra-kubeletplugin/util.go): a new-style name ("tpu7x") is the
  // generation; an older label "tpu-<v>[-lite]-<device|podslice>" or "tpu-<v>[e|p]-slice" gives
  // <v>, "lite" appended for lite parts and "pod" for v5 lite podslices; two names the regex lets
  // through are not products (tpu-v4-device, tpu-v4-lite-podslice). Either way the generation must
  // be one the driver knows (hardware.go's families; util_test.go TestAcceleratorGen refuses
  // "tpu7x" and "tpu99z").
  static const std::regex kNew(R"(^tpu\d+[a-z]?$)");
  static const std::regex kPast(R"(^tpu-v\d+([ep]?-slice)?((?:-lite)?-(device|podslice))?$)");
  // hardware.go's families; v2 is named there as not supported.
  static constexpr std::string_view kKnown[] = {"v3", "v4", "v4lite", "v5lite", "v5litepod", "v5p", "v6e"};
  const std::string a(accelerator);
  std::string v = a;
  if (!std::regex_match(a, kNew)) {
    if (!std::regex_match(a, kPast) || a == "tpu-v4-device" || a == "tpu-v4-lite-podslice") return std::nullopt;
    const auto dash = a.find('-', 4);
    v = a.substr(4, dash == std::string::npos ? std::string::npos : dash - 4);
    if (a.find("lite") != std::string::npos) v += "lite";
    if (v.rfind("v5", 0) == 0 && a.find("podslice") != std::string::npos) v += "pod";
  }
  if (std::find(std::begin(kKnown), std::end(kKnown), v) == std::end(kKnown)) return std::nullopt;
  return v;
}

namespace {
std::optional<ResourceSlice> make_tpu_slice(const NodeSpec& node, std::vector<DeviceUnit>* units) {
  if (node.tpu.generation.empty() || node.tpu.chips <= 0) return std::nullopt;
  const auto label = [&](const char* key) -> std::string {
    const auto it = node.labels.find(key);
    return it == node.labels.end() ? std::string() : it->second;
  };
  std::string accelerator = label("cloud.google.com/gke-tpu-accelerator");
  if (accelerator.empty()) {
    if (const auto* g = TpuCatalog::builtin().find(node.tpu.generation)) accelerator = g->accelerator_label;
  }
  std::string topology = label("cloud.google.com/gke-tpu-topology");
  if (topology.empty()) topology = node.tpu.pool_topology;
  const auto gen = tpu_driver_generation(accelerator);
  if (!gen) return std::nullopt;
  // The device directory the driver enumerates (driver.go NewDriver): /dev and accel<i> files for
  // v3, v4 and v4lite; /dev/vfio and numbered files for the rest it knows (v5lite, v5litepod, v5p,
  // v6e). A generation it does not know was refused above (tpu7x: it has no directory for it).
  const std::string prefix = *gen == "v3" || *gen == "v4" || *gen == "v4lite" ? "accel" : "";
  ResourceSlice s = node_slice(node, kTpuDriver);
  const std::string d = std::string(kTpuDriver) + "/";
  // The driver numbers the chips in its directory listing's order and lists them from a map; here
  // in index order (accel0, accel1, ... and 0, 1, ...: the same order up to 10 chips).
  for (std::int32_t i = 0; i < node.tpu.chips; ++i) {
    Device dev;
    dev.name = prefix + std::to_string(i);
    // AllocatableDevice.GetDevice (manager.go): every attribute in the driver's own domain.
    dev.attributes.emplace_back(d + "index", std::int64_t{i});
    dev.attributes.emplace_back(d + "uuid", synthetic_uuid("tpu", node.name + "/" + dev.name, 0));
    dev.attributes.emplace_back(d + "tpuGen", *gen);
    dev.attributes.emplace_back(d + "brand", std::string("Google"));
    dev.attributes.emplace_back(d + "accelerator", accelerator);
    dev.attributes.emplace_back(d + "chipCount", std::int64_t{node.tpu.chips});
    if (!topology.empty()) dev.attributes.emplace_back(d + "topology", topology);
    dev.sort();
    s.devices.push_back(std::move(dev));
    if (units != nullptr) units->push_back({static_cast<std::uint16_t>(i), -1, -1, true});
  }
  return s;
}
}  // namespace

std::optional<ResourceSlice> tpu_slice(const NodeSpec& node) { return make_tpu_slice(node, nullptr); }

std::string nic_pcie_root(const NodeSpec& node, std::size_t k) {
  const auto& nic = node.nics[k];
  // On a GPU's root: that GPU's, as its device states it. Else a root of its own, in a PCI
  // domain no GPU root uses.
  if (nic.root_gpu >= 0 && static_cast<std::size_t>(nic.root_gpu) < node.gpus.size()) return gpu_pcie_root(node, static_cast<std::size_t>(nic.root_gpu));
  return pcie_root_name(static_cast<unsigned>(0x10 + nic.socket), static_cast<unsigned>(k));
}

std::optional<ResourceSlice> dranet_slice(const NodeSpec& node) {
  if (node.nics.empty()) return std::nullopt;
  ResourceSlice s = node_slice(node, kDranetDriver);
  const std::string d = std::string(kDranetDriver) + "/";
  for (std::size_t k = 0; k < node.nics.size(); ++k) {
    const auto& nic = node.nics[k];
    // A PCI address per NIC (synthetic: the model has none); dranet names the device after it
    // (inventory NormalizePCIAddress: "net1-" and the address with ':' and '.' as '-').
    char address[32];
    std::snprintf(address, sizeof address, "%04x:%02x:00.0", static_cast<unsigned>(nic.socket), static_cast<unsigned>(0x10 + k));
    Device dev;
    dev.name = "net1-" + std::string(address);
    std::replace(dev.name.begin(), dev.name.end(), ':', '-');
    std::replace(dev.name.begin(), dev.name.end(), '.', '-');
    dev.attributes.emplace_back(d + "pciAddress", std::string(address));
    dev.attributes.emplace_back(d + "numaNode", std::int64_t{nic.socket});
    dev.attributes.emplace_back("resource.kubernetes.io/pcieRoot", nic_pcie_root(node, k));
    dev.attributes.emplace_back(d + "ifName", "eth" + std::to_string(k + 1));   // eth0: the uplink, which dranet leaves out
    dev.attributes.emplace_back(d + "type", std::string("device"));
    dev.attributes.emplace_back(d + "virtual", false);
    dev.attributes.emplace_back(d + "rdma", nic.rdma);
    if (nic.rdma) dev.attributes.emplace_back(d + "rdmaDevice", "mlx5_" + std::to_string(k));
    dev.sort();
    s.devices.push_back(std::move(dev));
  }
  return s;
}

bool takes_whole_tpu_host(std::span<const Allocation> claims, const NodeSpec& node) {
  for (const auto& a : claims) {
    const auto chips = std::count_if(a.devices.begin(), a.devices.end(), [](const DeviceResult& r) { return r.driver == kTpuDriver; });
    if (chips != 0 && chips != node.tpu.chips) return false;
  }
  return true;
}

ClusterDevices simulated_devices(std::span<const NodeSpec> nodes, const GpuCatalog& catalog, std::span<const ResourceSlice> given) {
  std::map<std::string_view, std::size_t> node_index;
  for (std::size_t u = 0; u < nodes.size(); ++u) node_index.emplace(nodes[u].name, u);
  std::map<std::size_t, const ResourceSlice*> given_for;   // node -> its given slice
  for (const auto& g : given) {
    const std::string who = "ResourceSlice \"" + g.name + "\"";
    if (g.node_name.empty()) {
      throw std::invalid_argument(who + ": in a simulation a slice names its node (spec.nodeName); allNodes and nodeSelector slices "
                                  "have no GPU of the model to stand for");
    }
    if (g.driver != kNvidiaDriver && g.driver != kTpuDriver) {
      throw std::invalid_argument(who + ": driver \"" + g.driver + "\": simulations hand out the node model's NVIDIA GPUs and GIs "
                                  "and TPU chips, so a given slice is of driver gpu.nvidia.com or tpu.google.com");
    }
    const auto n = node_index.find(g.node_name);
    if (n == node_index.end()) throw std::invalid_argument(who + ": no node of the cluster is named \"" + g.node_name + "\"");
    if (!given_for.emplace(n->second, &g).second) {
      throw std::invalid_argument(who + ": node \"" + g.node_name + "\" has another given slice (one per node in a simulation)");
    }
  }
  ClusterDevices out;
  out.slice_of_node.assign(nodes.size(), -1);
  out.nic_slice_of_node.assign(nodes.size(), -1);
  for (std::size_t u = 0; u < nodes.size(); ++u) {
    out.nodes.push_back({nodes[u].name, nodes[u].labels});
    std::vector<DeviceUnit> units;
    auto s = make_slice(nodes[u], catalog, true, &units);
    if (!s) s = make_tpu_slice(nodes[u], &units);
    if (const auto g = given_for.find(u); g != given_for.end()) {
      // The given devices, each the model's device of that name.
      if (s && s->driver != g->second->driver) {
        throw std::invalid_argument("ResourceSlice \"" + g->second->name + "\": driver " + g->second->driver + ", but node \"" + nodes[u].name +
                                    "\" publishes its devices through " + s->driver);
      }
      std::vector<DeviceUnit> mapped;
      for (const auto& dev : g->second->devices) {
        const auto at = s ? std::find_if(s->devices.begin(), s->devices.end(), [&](const Device& m) { return m.name == dev.name; })
                          : std::vector<Device>::iterator{};
        if (!s || at == s->devices.end()) {
          std::string names;
          if (s) {
            for (const auto& m : s->devices) names += (names.empty() ? "" : ", ") + m.name;
          }
          throw std::invalid_argument("ResourceSlice \"" + g->second->name + "\": device \"" + dev.name + "\" is no device node \"" +
                                      nodes[u].name + "\" hands out in a simulation (" +
                                      (names.empty() ? std::string("it has none: whole GPUs, passthrough GPUs, static MIG instances and TPU chips only")
                                                    : "it has: " + names) + ")");
        }
        // The device stays the model's GPU or GI of that name: its type must say so (a vfio device
        // published as type gpu would match gpu.nvidia.com claims and be handed out as passthrough).
        const std::string type_key = std::string(kNvidiaDriver) + "/type";
        const auto* given_type = dev.attribute(type_key);
        const auto* model_type = at->attribute(type_key);
        if (given_type != nullptr && model_type != nullptr && !same_value(*given_type, *model_type)) {
          auto text = [](const AttributeValue& v) {
            const auto* t = std::get_if<std::string>(&v);
            return t != nullptr ? "\"" + *t + "\"" : std::string("not a string");
          };
          throw std::invalid_argument("ResourceSlice \"" + g->second->name + "\": device \"" + dev.name + "\" has type " + text(*given_type) +
                                      ", but node \"" + nodes[u].name + "\"'s device of that name is of type " + text(*model_type));
        }
        mapped.push_back(units[static_cast<std::size_t>(at - s->devices.begin())]);
      }
      if (mapped.empty()) {
        s.reset();   // the node publishes no GPU, GI or chip (its NICs still, below)
      } else {
        s = *g->second;
        units = std::move(mapped);
      }
    }
    if (s) {
      out.slice_of_node[u] = static_cast<std::int32_t>(out.slices.size());
      out.slices.push_back(std::move(*s));
      out.units.push_back(std::move(units));
    }
    // The node's NICs as dranet publishes them, right after its GPUs or chips.
    if (auto nic = dranet_slice(nodes[u])) {
      if (nodes[u].nics.size() > kMaxNics) {
        throw std::invalid_argument("node \"" + nodes[u].name + "\" has " + std::to_string(nodes[u].nics.size()) + " NICs: at most " +
                                    std::to_string(kMaxNics) + " in a simulation");
      }
      std::vector<DeviceUnit> nic_units(nodes[u].nics.size());
      for (std::size_t k = 0; k < nic_units.size(); ++k) nic_units[k] = {static_cast<std::uint16_t>(k), -1, -1, false, true};
      out.nic_slice_of_node[u] = static_cast<std::int32_t>(out.slices.size());
      out.slices.push_back(std::move(*nic));
      out.units.push_back(std::move(nic_units));
    }
  }
  // Kubernetes tells devices apart by driver, pool and name: two nodes' slices in one pool would
  // make one node's devices in use on the other (review).
  std::map<std::pair<std::string_view, std::string_view>, const ResourceSlice*> by_pool;   // (driver, pool)
  for (const auto& sl : out.slices) {
    const auto [it, fresh] = by_pool.emplace(std::pair<std::string_view, std::string_view>(sl.driver, sl.pool), &sl);
    if (!fresh) {
      throw std::invalid_argument("ResourceSlices \"" + it->second->name + "\" (node " + it->second->node_name + ") and \"" + sl.name +
                                  "\" (node " + sl.node_name + ") are both in " + sl.driver + "'s pool \"" + sl.pool +
                                  "\": in a simulation each node's devices are a pool of their own");
    }
  }
  return out;
}

std::optional<std::int32_t> claims_fit_empty(const DeviceClaims& claims, const NodeSpec& node, const GpuCatalog& catalog) {
  if (!claims.classes) return std::nullopt;
  std::vector<ResourceSlice> given;
  for (const auto& s : given_slices(claims.slices)) {
    if (s.node_name == node.name) given.push_back(s);
  }
  ClusterDevices published;
  try {
    published = simulated_devices(std::span<const NodeSpec>(&node, 1), catalog, given);
  } catch (const std::invalid_argument&) {
    return std::nullopt;
  }
  const Allocator alloc(*claims.classes, std::move(published.slices));
  const auto on = allocate_on_node(alloc, published.nodes.front(), node, claims.pointers(), alloc.no_devices_in_use());
  if (!on.got) return std::nullopt;
  // The GPUs, GIs or chips it takes (the job's kind): its NICs come besides.
  return devices_taken(*on.got) - devices_taken(*on.got, kDranetDriver);
}

NodeAllocation allocate_on_node(const Allocator& alloc, const NodeInfo& info, const NodeSpec& node,
                                std::span<const ResourceClaim* const> claims, std::span<const std::uint8_t> in_use) {
  NodeAllocation out;
  try {
    out.got = alloc.allocate(info, claims, in_use);
  } catch (const AllocationError& e) {
    out.error = e.what();
    return out;
  }
  if (out.got && !takes_whole_tpu_host(*out.got, node)) {
    out.got.reset();
    out.partial_tpu = true;
  }
  return out;
}

std::vector<DeviceClass> nvidia_device_classes() {
  return {{"gpu.nvidia.com", {CelExpression::compile("device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'")}},
          {"mig.nvidia.com", {CelExpression::compile("device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'mig'")}},
          {"vfio.gpu.nvidia.com",
           {CelExpression::compile("device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'vfio'")}}};
}

std::vector<DeviceClass> builtin_device_classes() {
  auto out = nvidia_device_classes();
  // deployments/helm/dra-driver-google-tpu/templates/deviceclass.yaml (extendedResourceName unset).
  out.push_back({std::string(kTpuDriver), {CelExpression::compile("device.driver == 'tpu.google.com'")}});
  return out;
}

nlohmann::json to_kubernetes(const ResourceSlice& slice) {
  using json = nlohmann::json;
  json devices = json::array();
  const std::string own = slice.driver + "/";
  auto short_name = [&](const std::string& q) { return q.compare(0, own.size(), own) == 0 ? q.substr(own.size()) : q; };
  for (const auto& d : slice.devices) {
    json attrs = json::object(), caps = json::object();
    for (const auto& [k, v] : d.attributes) {
      json a;
      if (const auto* b = std::get_if<bool>(&v)) a["bool"] = *b;
      else if (const auto* i = std::get_if<std::int64_t>(&v)) a["int"] = *i;
      else if (const auto* s = std::get_if<std::string>(&v)) a["string"] = *s;
      else a["version"] = std::get<Semver>(v).text();
      attrs[short_name(k)] = a;
    }
    for (const auto& [k, q] : d.capacity) caps[short_name(k)] = {{"value", q.to_kubernetes_string()}};
    json dev = {{"name", d.name}, {"attributes", attrs}};
    if (!caps.empty()) dev["capacity"] = caps;
    devices.push_back(dev);
  }
  json spec = {{"driver", slice.driver},
               {"pool", {{"name", slice.pool}, {"generation", slice.generation}, {"resourceSliceCount", slice.slice_count}}},
               {"devices", devices}};
  if (!slice.node_name.empty()) spec["nodeName"] = slice.node_name;
  else if (slice.all_nodes) spec["allNodes"] = true;
  else if (slice.node_selector) {
    json term = json::object();
    auto reqs = [](const std::vector<NodeSelectorRequirement>& rs) {
      json out = json::array();
      for (const auto& r : rs) out.push_back({{"key", r.key}, {"operator", r.op}, {"values", r.values}});
      return out;
    };
    if (!slice.node_selector->expressions.empty()) term["matchExpressions"] = reqs(slice.node_selector->expressions);
    if (!slice.node_selector->fields.empty()) term["matchFields"] = reqs(slice.node_selector->fields);
    spec["nodeSelector"] = {{"nodeSelectorTerms", json::array({term})}};
  }
  return {{"apiVersion", "resource.k8s.io/v1"}, {"kind", "ResourceSlice"}, {"metadata", {{"name", slice.name}}}, {"spec", spec}};
}

nlohmann::json to_kubernetes(const DeviceClass& cls) {
  nlohmann::json sels = nlohmann::json::array();
  for (const auto& s : cls.selectors) sels.push_back({{"cel", {{"expression", s.text()}}}});
  return {{"apiVersion", "resource.k8s.io/v1"}, {"kind", "DeviceClass"}, {"metadata", {{"name", cls.name}}}, {"spec", {{"selectors", sels}}}};
}

}  // namespace gpusched::dra
