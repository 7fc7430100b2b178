// Quota resource names, amounts and charges shared by the quota plugins (see
// gpusched/policies/quota/quota_resources.hpp).
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <numeric>
#include <optional>

#include <gpusched/dra/allocator.hpp>
#include <gpusched/policies/framework/statement.hpp>
#include <gpusched/policies/quota/capacity_queues.hpp>
#include <gpusched/policies/quota/drf.hpp>
#include <gpusched/policies/quota/quota_resources.hpp>
#include <gpusched/policies/quota/resource_quota.hpp>
#include <gpusched/quantity.hpp>

#include "builtin_plugins.hpp"
#include "quota_common.hpp"

namespace gpusched::policies {

using namespace quota_util;   // NOLINT(google-build-using-namespace): internal helpers
using nlohmann::json;


namespace quota {

namespace {
/// Entry::detail of the nvidia.com/gpu.shared entry (kind kGpu).
constexpr std::string_view kSharedDetail = "shared";
}  // namespace

std::string QuotaResources::canonical(std::string_view written, const Location& where) {
  using namespace resource_names;
  std::string_view n = written;
  if (starts_with(n, "limits.")) {
    throw_error(ErrorCode::kProfileBadArgs, where,
                "\"" + std::string(written) + "\": limits are not modelled (gpusched schedules by requests); use requests." +
                    std::string(n.substr(7)));
  }
  if (starts_with(n, "requests.")) n.remove_prefix(9);
  if (n == "cpu" || n == "memory" || n == kGpu || n == kGpuShared || n == kGpuMilli || n == kTpu || n == "pods" ||
      n == kGpuEquivalentName) {
    return std::string(n);
  }
  if (n == "count/jobs" || n == "count/jobs.batch") return "count/jobs";
  if ((starts_with(n, kMigPrefix) && n.size() > kMigPrefix.size()) ||
      (starts_with(n, kVgpuPrefix) && n.size() > kVgpuPrefix.size())) {
    return lower(n);
  }
  if (n == kGpuMem || n == kHamiMem || n == kHamiCores || n == kTpuTopology || n == kTpuAccelerator || n == kPassthrough) {
    throw_error(ErrorCode::kProfileBadArgs, where,
                "\"" + std::string(written) + "\" cannot be limited by a quota (limit nvidia.com/gpu, " +
                    std::string(kGpuMilli) + " or " + std::string(kGpuEquivalentName) + " instead)");
  }
  // Extended resources pass, except misspellings in the domains whose names gpusched knows.
  const bool known_domain = starts_with(n, "nvidia.com/") || starts_with(n, "google.com/") || starts_with(n, "gpusched.io/");
  if (is_extended_resource(n) && !known_domain) return std::string(n);
  throw_error(ErrorCode::kProfileBadArgs, where,
              "unknown quota resource \"" + std::string(written) + "\"; use [requests.]cpu, [requests.]memory, " +
                  std::string(kGpu) + ", " + std::string(kGpuShared) + ", " + std::string(kGpuMilli) + ", " +
                  std::string(kMigPrefix) + "<profile>, " + std::string(kVgpuPrefix) + "<profile>, " + std::string(kTpu) + ", " + std::string(kGpuEquivalentName) +
                  ", pods, count/jobs or an extended resource (\"example.com/name\")");
}

std::size_t QuotaResources::intern(const std::string& canonical) {
  if (auto i = find(canonical)) return *i;
  using namespace resource_names;
  Entry e;
  e.name = canonical;
  if (canonical == "cpu") e.kind = QuotaKind::kCpu;
  else if (canonical == "memory") e.kind = QuotaKind::kMemory;
  else if (canonical == kGpu) e.kind = QuotaKind::kGpu;
  else if (canonical == kGpuShared) {
    // Replicas advertised under renameByDefault: their own resource name (docs/sharing.md).
    e.kind = QuotaKind::kGpu;
    e.detail = kSharedDetail;
  }
  else if (canonical == kGpuMilli) e.kind = QuotaKind::kGpuMilli;
  else if (canonical == kTpu) e.kind = QuotaKind::kTpu;
  else if (canonical == "pods") e.kind = QuotaKind::kPods;
  else if (canonical == "count/jobs") e.kind = QuotaKind::kJobs;
  else if (canonical == kGpuEquivalentName) e.kind = QuotaKind::kGpuEquivalent;
  else if (starts_with(canonical, kMigPrefix)) {
    e.kind = QuotaKind::kMig;
    e.detail = canonical.substr(kMigPrefix.size());
  } else if (starts_with(canonical, kVgpuPrefix)) {
    e.kind = QuotaKind::kVgpu;
    e.detail = canonical.substr(kVgpuPrefix.size());
  } else {
    e.kind = QuotaKind::kExtended;
    e.detail = canonical;
  }
  entries_.push_back(std::move(e));
  return entries_.size() - 1;
}

std::optional<std::size_t> QuotaResources::find(std::string_view canonical) const {
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    if (entries_[i].name == canonical) return i;
  }
  return std::nullopt;
}

std::int64_t QuotaResources::parse_amount(std::size_t i, const nlohmann::json& v, const Location& where) const {
  const auto text = scalar_text(v);
  if (!text || text->empty()) throw_error(ErrorCode::kProfileBadArgs, where, "expected a number or a quantity string");
  try {
    switch (entries_[i].kind) {
      case QuotaKind::kCpu: return parse_cpu_milli(*text, where);
      case QuotaKind::kMemory: return parse_memory_mib(*text, where);
      case QuotaKind::kGpuEquivalent: {
        char* end = nullptr;
        const double x = std::strtod(text->c_str(), &end);
        if (end != text->c_str() + text->size() || !std::isfinite(x) || x < 0) {
          throw_error(ErrorCode::kProfileBadArgs, where, "\"" + *text + "\" is not a number >= 0");
        }
        return std::llround(x * kMicro);
      }
      default: return parse_count(*text, where);
    }
  } catch (const ProfileError&) {
    throw;
  } catch (const Error& e) {
    throw_error(ErrorCode::kProfileBadArgs, where, e.detail());
  }
}

std::string QuotaResources::format(std::size_t i, std::int64_t amount) const {
  switch (entries_[i].kind) {
    case QuotaKind::kCpu: return amount % 1000 == 0 ? std::to_string(amount / 1000) : std::to_string(amount) + "m";
    case QuotaKind::kMemory: return amount % 1024 == 0 ? std::to_string(amount / 1024) + "Gi" : std::to_string(amount) + "Mi";
    case QuotaKind::kGpuEquivalent: {
      constexpr std::int64_t unit = 1'000'000;
      std::string s = std::to_string(amount / unit);
      if (amount % unit != 0) {
        std::string frac = std::to_string(unit + amount % unit).substr(1);
        while (!frac.empty() && frac.back() == '0') frac.pop_back();
        s += "." + frac;
      }
      return s;
    }
    default: return std::to_string(amount);
  }
}

void QuotaResources::set_weights(const nlohmann::json& weights, const Location& where) {
  if (weights.is_null()) return;
  if (!weights.is_object()) throw_error(ErrorCode::kProfileBadArgs, where, "weights must be an object");
  custom_weights_ = true;
  weights_.clear();
  for (const auto& [k, v] : weights.items()) {
    Location at = where;
    at.field += "/" + k;
    const std::string name = canonical(k, at);
    if (!v.is_number() || !(v.get<double>() >= 0.0)) throw_error(ErrorCode::kProfileBadArgs, at, "a weight must be a number >= 0");
    weights_[name] = v.get<double>();
  }
}

double QuotaResources::gpu_equivalent(const ClusterState* cluster, const TaskRequest& r) const {
  using namespace resource_names;
  auto weight = [&](std::string_view name, double fallback) {
    if (!custom_weights_) return fallback;
    const auto it = weights_.find(name);
    return it == weights_.end() ? 0.0 : it->second;
  };
  double g = 0.0;
  const auto& gpu = r.gpu;
  switch (gpu.mode) {
    case GpuMode::kWhole:
    case GpuMode::kPassthrough: g += gpu.count * weight(gpu.shared_name ? kGpuShared : kGpu, 1.0); break;
    case GpuMode::kShared: g += static_cast<double>(gpu.count) * gpu.milli * weight(kGpuMilli, 0.001); break;
    case GpuMode::kMig:
    case GpuMode::kVgpu: {
      const double fallback = custom_weights_ ? 0.0 : partition_fraction(cluster, gpu);
      const std::string name = std::string(gpu.mode == GpuMode::kMig ? kMigPrefix : kVgpuPrefix) + lower(gpu.profile);
      g += gpu.count * weight(name, fallback);
      break;
    }
    case GpuMode::kNone: break;
  }
  if (custom_weights_) {
    g += static_cast<double>(r.tpu.chips) * weight(kTpu, 0.0);
    g += static_cast<double>(r.cpu_milli) / 1000.0 * weight("cpu", 0.0);
    g += static_cast<double>(r.memory_mib) / 1024.0 * weight("memory", 0.0);
    if (cluster != nullptr) {
      for (const auto& [id, amount] : r.extended) {
        if (id.value < cluster->resources().size()) g += static_cast<double>(amount) * weight(cluster->resources().name(id), 0.0);
      }
    }
  }
  return g;
}

std::int64_t QuotaResources::nvidia_gpus(const GpuRequest& g) {
  // What the pod requests as nvidia.com/gpu (Kubernetes charges requests.nvidia.com/gpu that):
  // whole GPUs (also replicas of time-slicing / MPS GPUs and GIs of MIG `single` nodes, all
  // advertised as nvidia.com/gpu; gpu-milli 1000 is a whole GPU), passthrough GPUs (gpusched's
  // mapping of the flavor alias), a HAMi share (nvidia.com/gpu: N with gpumem / gpucores), a
  // gpu-milli / gpu-mem share written with nvidia.com/gpu: 1. MIG profiles and vGPUs are their
  // own resource names (nvidia.com/mig-<profile>, nvidia.com/vgpu-<profile>), not GPUs.
  // Replicas asked as nvidia.com/gpu.shared (renameByDefault) are requests.nvidia.com/gpu.shared.
  switch (g.mode) {
    case GpuMode::kWhole: return g.shared_name ? 0 : g.count;
    case GpuMode::kPassthrough: return g.count;
    case GpuMode::kShared: return g.names_gpu ? g.count : 0;
    default: return 0;
  }
}

void QuotaResources::charge(const ClusterState* cluster, const JobSpec& job, std::int64_t tasks,
                            std::span<std::int64_t> out) const {
  // A DRA claim whose firstAvailable alternatives ask for different counts is charged its worst
  // case, as Kubernetes' ResourceQuota charges it (dra::DeviceClaims::most_devices); the request
  // states the smallest.
  std::optional<TaskRequest> worst;
  if (const auto* claims = job.constraints.claims.get(); claims != nullptr) {
    if (claims->most_devices > job.request.gpu.count && job.request.gpu.mode != GpuMode::kNone) {
      worst = job.request;
      worst->gpu.count = claims->most_devices;
    } else if (claims->most_devices > job.request.tpu.chips && job.request.tpu.chips > 0) {   // TPU chips: google.com/tpu
      worst = job.request;
      worst->tpu.chips = claims->most_devices;
    }
  }
  const auto& r = worst ? *worst : job.request;
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    const auto& e = entries_[i];
    std::int64_t per = 0;
    switch (e.kind) {
      case QuotaKind::kCpu: per = r.cpu_milli; break;
      case QuotaKind::kMemory: per = r.memory_mib; break;
      case QuotaKind::kGpu:
        per = e.detail == kSharedDetail ? (r.gpu.mode == GpuMode::kWhole && r.gpu.shared_name ? r.gpu.count : 0)
                                        : nvidia_gpus(r.gpu);
        break;
      case QuotaKind::kGpuMilli: per = r.gpu.mode == GpuMode::kShared ? std::int64_t{r.gpu.count} * r.gpu.milli : 0; break;
      case QuotaKind::kMig: per = (r.gpu.mode == GpuMode::kMig && iequals(r.gpu.profile, e.detail)) ? r.gpu.count : 0; break;
      case QuotaKind::kVgpu: per = (r.gpu.mode == GpuMode::kVgpu && iequals(r.gpu.profile, e.detail)) ? r.gpu.count : 0; break;
      case QuotaKind::kTpu: per = r.tpu.chips; break;
      case QuotaKind::kExtended:
        if (cluster != nullptr && !r.extended.empty()) {
          if (e.table != &cluster->resources()) {
            e.table = &cluster->resources();
            e.id = cluster->resources().find(e.detail);
          }
          for (const auto& [id, amount] : r.extended) {
            if (e.id && id == *e.id) per += amount;
          }
        }
        break;
      case QuotaKind::kPods: per = 1; break;
      case QuotaKind::kJobs: out[i] += 1; continue;
      case QuotaKind::kGpuEquivalent:
        // Rounded down (after a little slack for binary fractions): 7 x 1/7 fits a limit of 1.
        out[i] += static_cast<std::int64_t>(std::floor(gpu_equivalent(cluster, r) * static_cast<double>(tasks) * kMicro + 1e-6));
        continue;
    }
    out[i] += per * tasks;
  }
}

}  // namespace quota

}  // namespace gpusched::policies
