#include <gpusched/resources.hpp>

#include <algorithm>

#include <gpusched/quantity.hpp>

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
  return name.find('/') != std::string_view::npos && name != kGpu && name != kGpuMilli && name != kGpuMem;
}

TaskRequest parse_requests(const std::vector<std::pair<std::string, std::string>>& items,
                           const std::vector<std::string>& gpu_models, const GpuCatalog& catalog,
                           ResourceTable& resources, const Location& where, std::string_view field_prefix) {
  using namespace resource_names;
  TaskRequest r;
  std::int64_t gpus = 0, milli = -1, mem_gib = -1;
  auto at = [&](const std::string& name) {
    Location l = where;
    l.field = std::string(field_prefix) + name;
    return l;
  };
  for (const auto& [name, value] : items) {
    if (name == kCpu) r.cpu_milli = parse_cpu_milli(value, at(name));
    else if (name == kMemory) r.memory_mib = parse_memory_mib(value, at(name));
    else if (name == kGpu) gpus = parse_count(value, at(name));
    else if (name == kGpuMilli) milli = parse_count(value, at(name));
    else if (name == kGpuMem) mem_gib = parse_count(value, at(name));
    else if (is_extended_resource(name)) {
      const auto amount = parse_count(value, at(name));
      if (amount > 0) r.extended.emplace_back(resources.intern(name), amount);
    } else {
      throw_error(ErrorCode::kResourceUnknown, at(name),
                  "unknown resource \"" + name + "\"; use cpu, memory, " + std::string(kGpu) + ", " +
                      std::string(kGpuMilli) + ", " + std::string(kGpuMem) +
                      " or an extended resource with a domain (\"example.com/name\")");
    }
  }
  if (milli > kMilliPerGpu) {
    throw_error(ErrorCode::kQuantityBad, at(std::string(kGpuMilli)),
                std::to_string(milli) + " is more than one GPU (1..1000); ask for whole GPUs with " + std::string(kGpu));
  }
  const bool shared = milli > 0 || mem_gib > 0;
  if (shared && gpus > 1) {
    throw_error(ErrorCode::kQuantityBad, at(std::string(kGpu)),
                "a GPU share (gpu-milli / gpu-mem) is of ONE GPU, but " + std::to_string(gpus) + " GPUs were asked for");
  }
  if (shared && !(milli == kMilliPerGpu && mem_gib <= 0)) {
    r.gpu.mode = GpuMode::kShared;
    r.gpu.count = 1;
    r.gpu.milli = static_cast<std::int32_t>(std::max<std::int64_t>(milli, 0));
    r.gpu.memory_mib = std::max<std::int64_t>(mem_gib, 0) * 1024;
  } else if (shared || gpus > 0) {
    if (gpus > 4096) throw_error(ErrorCode::kQuantityBad, at(std::string(kGpu)), "more than 4096 GPUs per task");
    r.gpu.mode = GpuMode::kWhole;
    r.gpu.count = static_cast<std::int32_t>(std::max<std::int64_t>(gpus, 1));
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
  std::sort(r.extended.begin(), r.extended.end());
  return r;
}

std::vector<std::pair<std::string, std::string>> format_requests(const TaskRequest& r, const ResourceTable& resources) {
  using namespace resource_names;
  std::vector<std::pair<std::string, std::string>> out;
  if (r.cpu_milli % 1000 == 0) out.emplace_back(kCpu, std::to_string(r.cpu_milli / 1000));
  else out.emplace_back(kCpu, std::to_string(r.cpu_milli) + "m");
  out.emplace_back(kMemory, std::to_string(r.memory_mib) + "Mi");
  if (r.gpu.mode == GpuMode::kWhole) out.emplace_back(kGpu, std::to_string(r.gpu.count));
  if (r.gpu.mode == GpuMode::kShared) {
    if (r.gpu.milli > 0) out.emplace_back(kGpuMilli, std::to_string(r.gpu.milli));
    if (r.gpu.memory_mib > 0) out.emplace_back(kGpuMem, std::to_string(r.gpu.memory_mib / 1024));
  }
  for (const auto& [id, amount] : r.extended) out.emplace_back(resources.name(id), std::to_string(amount));
  return out;
}

}  // namespace gpusched
