#include <gpusched/resources.hpp>

#include <algorithm>

#include <gpusched/quantity.hpp>
#include <gpusched/tpu.hpp>

namespace gpusched {

ResourceId ResourceTable::intern(std::string_view name) {
  if (auto id = find(name)) return *id;
  names_.emplace_back(name);
  return ResourceId{static_cast<std::uint16_t>(names_.size() - 1)};
}

std::optional<ResourceId> ResourceTable::find(std::string_view name) const {
  for (std::size_t i = 0; i < names_.size(); ++i) {
    if (names_[i] == name) return ResourceId{static_cast<std::uint16_t>(i)};
  }
  return std::nullopt;
}

bool is_extended_resource(std::string_view name) {
  using namespace resource_names;
  if (name.find('/') == std::string_view::npos) return false;
  for (auto known : {kGpu, kGpuShared, kGpuMilli, kGpuMem, kHamiMem, kHamiCores, kTpu, kTpuTopology, kTpuAccelerator}) {
    if (name == known) return false;
  }
  return name.substr(0, kMigPrefix.size()) != kMigPrefix && name.substr(0, kVgpuPrefix.size()) != kVgpuPrefix;
}

std::string_view to_string(GpuMode m) {
  switch (m) {
    case GpuMode::kNone: return "none";
    case GpuMode::kWhole: return "whole";
    case GpuMode::kShared: return "shared";
    case GpuMode::kMig: return "mig";
    case GpuMode::kVgpu: return "vgpu";
    case GpuMode::kPassthrough: return "passthrough";
  }
  return "?";
}

namespace {
bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

/// Resolves a MIG or vGPU profile name against every catalog model allowed by `r`; throws when
/// no allowed model offers it, naming what the allowed models do offer.
void resolve_profile(TaskRequest& r, const GpuCatalog& catalog, const Location& where, bool mig) {
  r.gpu.profile_by_model.assign(catalog.size(), -1);
  bool any = false;
  std::string offered;
  for (std::size_t i = 0; i < catalog.size(); ++i) {
    const GpuModelId id{static_cast<std::uint16_t>(i)};
    if (!r.model_allowed(id)) continue;
    const auto& m = catalog[id];
    int idx = -1;
    if (mig && m.mig) {
      idx = m.mig->find_profile(r.gpu.profile);
      offered += (offered.empty() ? "" : "; ") + m.name + ": " + m.mig->profile_names();
    } else if (!mig && !m.vgpu.empty()) {
      idx = m.find_vgpu(r.gpu.profile);
      std::string names;
      for (const auto& v : m.vgpu) names += (names.empty() ? "" : ", ") + v.name;
      offered += (offered.empty() ? "" : "; ") + m.name + ": " + names;
    }
    r.gpu.profile_by_model[i] = static_cast<std::int8_t>(idx);
    any = any || idx >= 0;
  }
  if (any) return;
  const std::string what = mig ? "MIG profile" : "vGPU profile";
  throw_error(mig ? ErrorCode::kCatalogUnknownMigProfile : ErrorCode::kCatalogUnknownVgpuProfile, where,
              "no " + std::string(r.allowed_models.none() ? "" : "allowed ") + "GPU model has the " + what + " \"" +
                  r.gpu.profile + "\"" + (offered.empty() ? std::string() : "; offered: " + offered));
}
}  // namespace

void set_tpu_hosts(TpuRequest& r, const Location& where) {
  if (r.topology.empty() || r.chips <= 0) return;
  const std::string topology(r.topology);
  const auto t = parse_tpu_topology(topology, where);
  const auto chips = t.chips();
  if (chips < r.chips) {
    r.hosts = 1;   // a sub-host slice (v5e 1x1, 2x2 on 8-chip hosts): one host, part of its chips
    if (chips != r.chips) {
      throw_error(ErrorCode::kQuantityBad, where, "a " + topology + " slice has " + std::to_string(chips) + " chips but each task asks for " +
                                                      std::to_string(r.chips));
    }
  } else {
    if (chips % r.chips != 0) {
      throw_error(ErrorCode::kQuantityBad, where, "a " + topology + " slice has " + std::to_string(chips) + " chips, not a multiple of " +
                                                      std::to_string(r.chips) + " per task");
    }
    r.hosts = static_cast<std::int32_t>(chips / r.chips);
  }
}

TaskRequest parse_requests(const std::vector<std::pair<std::string, std::string>>& items,
                           const std::vector<std::string>& gpu_models, const GpuCatalog& catalog,
                           ResourceTable& resources, const Location& where, std::string_view field_prefix,
                           bool devices_from_claim) {
  using namespace resource_names;
  TaskRequest r;
  std::int64_t shared_gpus = -1;   // nvidia.com/gpu.shared (device-plugin renameByDefault)
  std::int64_t gpus = -1, milli = -1, mem_gib = -1, hami_mem = -1, hami_cores = -1, profile_count = 0;
  std::string mig_name, vgpu_name, passthrough, tpu_topology, tpu_accel;
  std::string profile_field;
  std::int64_t vendor_gpus = -1;   // a non-NVIDIA catalog resource name (amd.com/gpu), issue 15
  std::string vendor_resource;
  auto is_gpu_resource_name = [&](std::string_view name) {
    for (std::size_t i = 0; i < catalog.size(); ++i) {
      if (catalog[GpuModelId{static_cast<std::uint16_t>(i)}].resource_name == name) return true;
    }
    return false;
  };
  auto at = [&](std::string_view name) {
    Location l = where;
    l.field = std::string(field_prefix) + std::string(name);
    return l;
  };
  for (const auto& [name, value] : items) {
    if (name == kCpu) r.cpu_milli = parse_cpu_milli(value, at(name));
    else if (name == kMemory) r.memory_mib = parse_memory_mib(value, at(name));
    else if (name == kGpu) gpus = parse_count(value, at(name));
    else if (name == kGpuShared) shared_gpus = parse_count(value, at(name));
    else if (name == kGpuMilli) milli = parse_count(value, at(name));
    else if (name == kGpuMem) mem_gib = parse_count(value, at(name));
    else if (name == kHamiMem) hami_mem = parse_count(value, at(name));
    else if (name == kHamiCores) hami_cores = parse_count(value, at(name));
    else if (name == kTpu) {
      const auto chips = parse_count(value, at(name));
      if (chips > 1 << 20) throw_error(ErrorCode::kQuantityBad, at(name), "more than 1048576 TPU chips per task");
      r.tpu.chips = static_cast<std::int32_t>(chips);
    }
    else if (name == kTpuTopology) tpu_topology = value;
    else if (name == kTpuAccelerator) tpu_accel = value;
    else if (name == kPassthrough) passthrough = value;
    else if (starts_with(name, kMigPrefix) || starts_with(name, kVgpuPrefix)) {
      const bool mig = starts_with(name, kMigPrefix);
      const auto n = parse_count(value, at(name));
      if (n == 0) continue;
      if (!mig_name.empty() || !vgpu_name.empty()) {
        throw_error(ErrorCode::kQuantityBad, at(name), "one MIG or vGPU profile per task (split the job into tasks of one profile each)");
      }
      (mig ? mig_name : vgpu_name) = name.substr(mig ? kMigPrefix.size() : kVgpuPrefix.size());
      profile_count = n;
      profile_field = name;
    } else if (name != kGpu && is_gpu_resource_name(name)) {
      if (!vendor_resource.empty()) {
        throw_error(ErrorCode::kQuantityBad, at(name), "a task asks for GPUs by one resource name, but it names both " +
                                                           vendor_resource + " and " + name);
      }
      vendor_gpus = parse_count(value, at(name));
      vendor_resource = name;
    } else if (is_extended_resource(name)) {
      const auto amount = parse_count(value, at(name));
      if (amount > 0) r.extended.emplace_back(resources.intern(name), amount);
    } else {
      throw_error(ErrorCode::kResourceUnknown, at(name),
                  "unknown resource \"" + name + "\"; use cpu, memory, " + std::string(kGpu) + ", " +
                      std::string(kGpuMilli) + ", " + std::string(kGpuMem) + ", " + std::string(kHamiMem) + ", " +
                      std::string(kHamiCores) + ", " + std::string(kMigPrefix) + "<profile>, " + std::string(kVgpuPrefix) +
                      "<profile>, " + std::string(kPassthrough) + ", " + std::string(kTpu) +
                      " or an extended resource with a domain (\"example.com/name\")");
    }
  }
  if (shared_gpus > 0) {
    if (gpus > 0 || milli > 0 || mem_gib > 0 || hami_mem >= 0 || hami_cores >= 0 || !mig_name.empty() || !vgpu_name.empty() ||
        !passthrough.empty() || r.tpu.chips > 0) {
      throw_error(ErrorCode::kQuantityBad, at(kGpuShared),
                  "nvidia.com/gpu.shared (time-slicing / MPS replicas under the device plugin's renameByDefault) goes alone: "
                  "no nvidia.com/gpu, GPU share, profile, passthrough or TPU beside it");
    }
    gpus = shared_gpus;
  }
  if (!vendor_resource.empty()) {
    // amd.com/gpu (or another vendor's name): whole GPUs of the models requested by that name, alone.
    if (gpus >= 0 || shared_gpus > 0 || milli > 0 || mem_gib > 0 || hami_mem >= 0 || hami_cores >= 0 || !mig_name.empty() ||
        !vgpu_name.empty() || !passthrough.empty() || r.tpu.chips > 0) {
      throw_error(ErrorCode::kQuantityBad, at(vendor_resource),
                  vendor_resource + " asks for whole GPUs of the models requested by that name and goes alone: no " +
                      std::string(kGpu) + ", GPU share, profile, passthrough or TPU beside it");
    }
    gpus = vendor_gpus;
  }
  const bool hami = hami_mem >= 0 || hami_cores >= 0;
  const bool fgd_share = milli > 0 || mem_gib > 0;
  const bool profile = !mig_name.empty() || !vgpu_name.empty();
  // At most one way of asking for GPUs.
  const int ways = (hami ? 1 : 0) + (fgd_share ? 1 : 0) + (profile ? 1 : 0) + (!passthrough.empty() ? 1 : 0) + (r.tpu.chips > 0 ? 1 : 0);
  if (ways > 1 || (gpus > 0 && (profile || !passthrough.empty() || r.tpu.chips > 0))) {
    throw_error(ErrorCode::kQuantityBad, at(profile ? profile_field : std::string(kGpu)),
                "a task asks for GPUs one way: nvidia.com/gpu (optionally with gpu-milli/gpu-mem or HAMi gpumem/gpucores), "
                "a MIG or vGPU profile, pci_passthrough:alias, or google.com/tpu");
  }
  if (milli == 0) {
    throw_error(ErrorCode::kQuantityBad, at(kGpuMilli), "0 is not a share of a GPU (1..1000); leave it out for none");
  }
  if (milli > kMilliPerGpu) {
    throw_error(ErrorCode::kQuantityBad, at(kGpuMilli),
                std::to_string(milli) + " is more than one GPU (1..1000); ask for whole GPUs with " + std::string(kGpu));
  }
  if (mem_gib > 1 << 20) throw_error(ErrorCode::kQuantityBad, at(kGpuMem), "more than 1048576 GiB of one GPU's memory");
  if (hami_mem > std::int64_t{1} << 30) throw_error(ErrorCode::kQuantityBad, at(kHamiMem), "more than 2^30 MiB of one GPU's memory");
  if (hami_cores > 100) throw_error(ErrorCode::kQuantityBad, at(kHamiCores), "a percentage, 0..100");
  if (fgd_share && gpus > 1) {
    throw_error(ErrorCode::kQuantityBad, at(kGpu),
                "a GPU share (gpu-milli / gpu-mem) is of ONE GPU, but " + std::to_string(gpus) + " GPUs were asked for");
  }
  if (gpus > 4096 || profile_count > 4096) throw_error(ErrorCode::kQuantityBad, at(profile ? profile_field : std::string(kGpu)), "more than 4096 GPUs per task");
  if (hami) {
    r.gpu.mode = GpuMode::kShared;
    r.gpu.count = static_cast<std::int32_t>(gpus < 0 ? 1 : gpus);
    if (r.gpu.count == 0) throw_error(ErrorCode::kQuantityBad, at(kGpu), "HAMi gpumem/gpucores need nvidia.com/gpu >= 1");
    r.gpu.milli = static_cast<std::int32_t>(std::max<std::int64_t>(hami_cores, 0) * 10);
    r.gpu.memory_mib = hami_mem < 0 ? kAllGpuMemory : hami_mem;
  } else if (fgd_share && !(milli == kMilliPerGpu && mem_gib <= 0)) {
    r.gpu.mode = GpuMode::kShared;
    r.gpu.count = 1;
    r.gpu.milli = static_cast<std::int32_t>(std::max<std::int64_t>(milli, 0));
    r.gpu.memory_mib = std::max<std::int64_t>(mem_gib, 0) * 1024;
    r.gpu.names_gpu = gpus > 0;
  } else if (fgd_share || gpus > 0) {
    r.gpu.mode = GpuMode::kWhole;
    r.gpu.count = static_cast<std::int32_t>(std::max<std::int64_t>(gpus, 1));
    r.gpu.milli = kMilliPerGpu;
    r.gpu.shared_name = shared_gpus > 0;
    r.gpu.resource_name = vendor_resource;
  } else if (profile) {
    r.gpu.mode = mig_name.empty() ? GpuMode::kVgpu : GpuMode::kMig;
    r.gpu.count = static_cast<std::int32_t>(profile_count);
    r.gpu.profile = mig_name.empty() ? vgpu_name : mig_name;
  } else if (!passthrough.empty()) {
    // OpenStack flavor extra spec: "<alias>:<count>"; the alias is GPU (any model) or a model name.
    const auto colon = passthrough.rfind(':');
    if (colon == std::string::npos || colon == 0) {
      throw_error(ErrorCode::kQuantityBad, at(kPassthrough), "expected \"<alias>:<count>\", e.g. \"GPU:2\" or \"A100-80GB:1\"");
    }
    const auto n = parse_count(passthrough.substr(colon + 1), at(kPassthrough));
    if (n < 1 || n > 4096) throw_error(ErrorCode::kQuantityBad, at(kPassthrough), "the count must be 1..4096");
    const auto alias = passthrough.substr(0, colon);
    if (alias != "GPU" && alias != "gpu") r.allowed_models.set(catalog.require(alias, at(kPassthrough)).value);
    r.gpu.mode = GpuMode::kPassthrough;
    r.gpu.count = static_cast<std::int32_t>(n);
    r.gpu.milli = kMilliPerGpu;
  }
  for (const auto& m : gpu_models) {
    if (r.gpu.mode == GpuMode::kNone) {
      throw_error(ErrorCode::kQuantityBad, at("gpu_model"), "a GPU model constraint on a task that asks for no GPU");
    }
    Location l = where;
    l.field = "gpu_model";
    r.allowed_models.set(catalog.require(m, l).value);
  }
  if (r.gpu.mode == GpuMode::kWhole) {
    // A model's vendor decides the name it is requested by (issue 15): nvidia.com/gpu never lands on
    // an MI300X, amd.com/gpu only on AMD models. Catalogs of one name keep an empty mask (any model).
    const std::string_view rn = vendor_resource.empty() ? kGpu : std::string_view(vendor_resource);
    GpuModelMask by_rn;
    for (std::size_t i = 0; i < catalog.size(); ++i) {
      if (catalog[GpuModelId{static_cast<std::uint16_t>(i)}].resource_name == rn) by_rn.set(i);
    }
    if (by_rn.count() != catalog.size()) {
      r.resource_models = by_rn;
      const bool constrained = r.allowed_models.any();
      if (by_rn.none() || (constrained && (r.allowed_models & by_rn).none())) {
        throw_error(ErrorCode::kQuantityBad, at(vendor_resource.empty() ? (shared_gpus > 0 ? kGpuShared : kGpu) : rn),
                    std::string("no ") + (constrained ? "GPU model of gpu_model" : "catalog GPU model") + " is requested as " +
                        std::string(rn));
      }
    }
  }
  if (profile) resolve_profile(r, catalog, at(profile_field), !mig_name.empty());
  // TPU: the accelerator label names the generation; the topology must be one it offers.
  // With a claim the chips per host come from it (set_tpu_hosts once they are known).
  const bool chips_later = devices_from_claim && r.tpu.chips <= 0;
  if (!tpu_topology.empty() || !tpu_accel.empty()) {
    if (r.tpu.chips <= 0 && !chips_later) throw_error(ErrorCode::kQuantityBad, at(kTpu), "a TPU slice selector needs google.com/tpu chips per task");
    if (tpu_accel.empty()) {
      throw_error(ErrorCode::kQuantityBad, at(kTpuAccelerator), "a TPU topology needs the accelerator label too (e.g. tpu-v4-podslice)");
    }
  }
  if (r.tpu.chips > 0 || (chips_later && !tpu_accel.empty())) {
    const TpuGeneration* gen = nullptr;
    for (const auto& g : TpuCatalog::builtin().generations()) {
      if (g.accelerator_label == tpu_accel || g.name == tpu_accel) gen = &g;
    }
    if (!tpu_accel.empty() && !gen) {
      std::string known;
      for (const auto& g : TpuCatalog::builtin().generations()) known += (known.empty() ? "" : ", ") + g.accelerator_label;
      throw_error(ErrorCode::kCatalogUnknownModel, at(kTpuAccelerator), "unknown TPU accelerator \"" + tpu_accel + "\"; known: " + known);
    }
    if (gen) r.tpu.generation = gen->name;
    if (!tpu_topology.empty()) {
      r.tpu.topology = gen->require_topology(tpu_topology, at(kTpuTopology)).to_string();
      set_tpu_hosts(r.tpu, at(kTpu));
    }
  }
  std::sort(r.extended.begin(), r.extended.end());
  return r;
}

std::vector<std::pair<std::string, std::string>> format_requests(const TaskRequest& r, const ResourceTable& resources) {
  using namespace resource_names;
  std::vector<std::pair<std::string, std::string>> out;
  if (r.cpu_milli % 1000 == 0) out.emplace_back(kCpu, std::to_string(r.cpu_milli / 1000));
  else out.emplace_back(kCpu, std::to_string(r.cpu_milli) + "m");
  out.emplace_back(kMemory, std::to_string(r.memory_mib) + "Mi");
  if (r.gpu.mode == GpuMode::kWhole) {
    out.emplace_back(r.gpu.shared_name ? std::string(kGpuShared) : r.gpu.resource_name.empty() ? std::string(kGpu) : r.gpu.resource_name.str(),
                     std::to_string(r.gpu.count));
  }
  if (r.gpu.mode == GpuMode::kShared && (r.gpu.count > 1 || r.gpu.memory_mib == kAllGpuMemory || r.gpu.memory_mib % 1024 != 0)) {
    // Only HAMi can say this.
    out.emplace_back(kGpu, std::to_string(r.gpu.count));
    if (r.gpu.memory_mib != kAllGpuMemory) out.emplace_back(kHamiMem, std::to_string(r.gpu.memory_mib));
    out.emplace_back(kHamiCores, std::to_string(r.gpu.milli / 10));
  } else if (r.gpu.mode == GpuMode::kShared) {
    if (r.gpu.names_gpu) out.emplace_back(kGpu, "1");
    if (r.gpu.milli > 0) out.emplace_back(kGpuMilli, std::to_string(r.gpu.milli));
    if (r.gpu.memory_mib > 0) out.emplace_back(kGpuMem, std::to_string(r.gpu.memory_mib / 1024));
  }
  if (r.gpu.mode == GpuMode::kMig) out.emplace_back(std::string(kMigPrefix) + r.gpu.profile, std::to_string(r.gpu.count));
  if (r.gpu.mode == GpuMode::kVgpu) out.emplace_back(std::string(kVgpuPrefix) + r.gpu.profile, std::to_string(r.gpu.count));
  if (r.gpu.mode == GpuMode::kPassthrough) out.emplace_back(kPassthrough, "GPU:" + std::to_string(r.gpu.count));
  // (A claim job states the slice selectors without chips: the claim gives them.)
  if (r.tpu.chips > 0 || !r.tpu.generation.empty()) {
    if (r.tpu.chips > 0) out.emplace_back(kTpu, std::to_string(r.tpu.chips));
    if (!r.tpu.generation.empty()) {
      out.emplace_back(kTpuAccelerator, TpuCatalog::builtin().require(r.tpu.generation, {}).accelerator_label);
    }
    if (!r.tpu.topology.empty()) out.emplace_back(kTpuTopology, r.tpu.topology);
  }
  for (const auto& [id, amount] : r.extended) out.emplace_back(resources.name(id), std::to_string(amount));
  return out;
}

}  // namespace gpusched
