// Quotas and fair sharing: Kubernetes ResourceQuota (`resource-quota`), Kueue ClusterQueues with
// cohorts, borrowing, lending and reclaim (`capacity-queues`), and weighted DRF queue order
// (`drf`). See the headers in gpusched/policies/quota/ for the semantics.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <numeric>

#include <gpusched/policies/framework/statement.hpp>
#include <gpusched/policies/quota/capacity_queues.hpp>
#include <gpusched/policies/quota/drf.hpp>
#include <gpusched/policies/quota/quota_resources.hpp>
#include <gpusched/policies/quota/resource_quota.hpp>
#include <gpusched/quantity.hpp>

#include "builtin_plugins.hpp"

namespace gpusched::policies {

namespace {

using nlohmann::json;

Location arg_at(std::string_view plugin, const std::string& path) {
  return {"", 0, std::string(plugin) + "/args/" + path};
}

[[noreturn]] void bad_arg(std::string_view plugin, const std::string& path, const std::string& message) {
  throw_error(ErrorCode::kProfileBadArgs, arg_at(plugin, path), std::string(plugin) + ": " + message);
}

/// gpu-equivalent amounts are kept in millionths.
constexpr double kMicro = 1e6;

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  }
  return true;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

/// Rejects keys of `obj` not in `allowed` (typos in a quota config must not pass silently).
void check_keys(std::string_view plugin, const std::string& path, const json& obj,
                std::initializer_list<std::string_view> allowed) {
  for (const auto& [k, v] : obj.items()) {
    if (std::find(allowed.begin(), allowed.end(), k) != allowed.end()) continue;
    std::string known;
    for (auto a : allowed) known += (known.empty() ? "" : ", ") + std::string(a);
    bad_arg(plugin, path + (path.empty() ? "" : "/") + k, "unknown key \"" + k + "\" (expected: " + known + ")");
  }
}

const json& object_at(std::string_view plugin, const std::string& path, const json& v) {
  if (!v.is_object()) bad_arg(plugin, path, "expected an object");
  return v;
}

/// args[key], or an empty object when absent or null (never a temporary).
const json& member_or_empty(const json& args, const char* key) {
  static const json empty = json::object();
  return args.contains(key) && !args.at(key).is_null() ? args.at(key) : empty;
}

/// Compute share of one MIG / vGPU unit of `r`'s profile (first catalog model offering it).
double partition_fraction(const ClusterState* cluster, const GpuRequest& r) {
  if (cluster == nullptr) return 0.0;
  const auto& catalog = cluster->catalog();
  for (std::size_t m = 0; m < r.profile_by_model.size() && m < catalog.size(); ++m) {
    const int idx = r.profile_by_model[m];
    if (idx < 0) continue;
    const auto& model = catalog[GpuModelId{static_cast<std::uint16_t>(m)}];
    if (r.mode == GpuMode::kMig && model.mig && static_cast<std::size_t>(idx) < model.mig->profiles.size() &&
        model.mig->compute_slices > 0) {
      return static_cast<double>(model.mig->profiles[static_cast<std::size_t>(idx)].compute_slices) / model.mig->compute_slices;
    }
    if (r.mode == GpuMode::kVgpu && static_cast<std::size_t>(idx) < model.vgpu.size()) {
      return 1.0 / std::max(1, model.vgpu[static_cast<std::size_t>(idx)].max_per_gpu);
    }
  }
  return 0.0;
}

}  // namespace

// ================================================================ quota resources

namespace quota {

std::string QuotaResources::canonical(std::string_view written, const Location& where) {
  using namespace resource_names;
  std::string_view n = written;
  if (starts_with(n, "limits.")) {
    throw_error(ErrorCode::kProfileBadArgs, where,
                "\"" + std::string(written) + "\": limits are not modelled (gpusched schedules by requests); use requests." +
                    std::string(n.substr(7)));
  }
  if (starts_with(n, "requests.")) n.remove_prefix(9);
  if (n == "cpu" || n == "memory" || n == kGpu || n == kGpuMilli || n == kTpu || n == "pods" || n == kGpuEquivalentName) {
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
                  std::string(kGpu) + ", " + std::string(kGpuMilli) + ", " + std::string(kMigPrefix) + "<profile>, " +
                  std::string(kVgpuPrefix) + "<profile>, " + std::string(kTpu) + ", " + std::string(kGpuEquivalentName) +
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
    case GpuMode::kPassthrough: g += gpu.count * weight(kGpu, 1.0); break;
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

void QuotaResources::charge(const ClusterState* cluster, const JobSpec& job, std::int64_t tasks,
                            std::span<std::int64_t> out) const {
  const auto& r = job.request;
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    const auto& e = entries_[i];
    std::int64_t per = 0;
    switch (e.kind) {
      case QuotaKind::kCpu: per = r.cpu_milli; break;
      case QuotaKind::kMemory: per = r.memory_mib; break;
      case QuotaKind::kGpu: per = (r.gpu.mode == GpuMode::kWhole || r.gpu.mode == GpuMode::kPassthrough) ? r.gpu.count : 0; break;
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

// ================================================================ resource-quota

ResourceQuotaPlugin::ResourceQuotaPlugin(const nlohmann::json& args, std::string_view name) : name_(name) {
  resources_.set_weights(args.value("weights", json()), arg_at(name, "weights"));
  const json& quotas = object_at(name, "quotas", member_or_empty(args, "quotas"));
  struct Limit {
    std::string ns;
    std::size_t resource;
    std::int64_t hard;
  };
  std::vector<Limit> limits;
  for (const auto& [ns, spec] : quotas.items()) {
    object_at(name, "quotas/" + ns, spec);
    namespaces_.try_emplace(ns);
    for (const auto& [k, v] : spec.items()) {
      const auto at = arg_at(name, "quotas/" + ns + "/" + k);
      const auto i = resources_.intern(quota::QuotaResources::canonical(k, at));
      limits.push_back({ns, i, resources_.parse_amount(i, v, at)});
    }
  }
  const auto n = resources_.size();
  for (auto& [ns, q] : namespaces_) {
    q.hard.assign(n, -1);
    q.used.assign(n, 0);
    q.over_reason.resize(n);
    q.too_big_reason.resize(n);
  }
  for (const auto& l : limits) {
    auto& q = namespaces_.at(l.ns);
    q.hard[l.resource] = l.hard;
    const std::string res = resources_.name(l.resource);
    const std::string hard = resources_.format(l.resource, l.hard);
    q.over_reason[l.resource] = "exceeded quota: namespace " + l.ns + ", " + res + " used + requested > hard " + hard;
    q.too_big_reason[l.resource] = "job requests more " + res + " than namespace " + l.ns + "'s ResourceQuota allows (hard " + hard + ")";
  }
}

Status ResourceQuotaPlugin::pre_filter(const ClusterState& cluster, TaskContext& ctx) {
  if (ctx.task_index != 0) return Status::success();   // task 0 admitted the whole job
  cluster_ = &cluster;
  const auto it = namespaces_.find(ctx.job.queue);
  if (it == namespaces_.end()) return Status::success();
  const auto& q = it->second;
  charge_.assign(resources_.size(), 0);
  resources_.charge(&cluster, ctx.job, ctx.job.tasks, charge_);
  for (std::size_t i = 0; i < charge_.size(); ++i) {
    if (q.hard[i] >= 0 && charge_[i] > q.hard[i]) return Status::unresolvable(name_, q.too_big_reason[i]);
  }
  for (std::size_t i = 0; i < charge_.size(); ++i) {
    if (q.hard[i] >= 0 && q.used[i] + charge_[i] > q.hard[i]) return Status::unschedulable(name_, q.over_reason[i]);
  }
  return Status::success();
}

void ResourceQuotaPlugin::attach(const ClusterState& cluster, std::span<const JobSpec> workload, const JobsView*) {
  cluster_ = &cluster;
  running_.assign(workload.size(), {});
  for (auto& [ns, q] : namespaces_) std::fill(q.used.begin(), q.used.end(), 0);
}

void ResourceQuotaPlugin::job_started(const JobSpec& job, JobId id, std::span<const TaskPlacement> placements) {
  const auto it = namespaces_.find(job.queue);
  if (it == namespaces_.end()) return;
  if (running_.size() <= id.value) running_.resize(id.value + 1);
  auto& c = running_[id.value];
  c.assign(resources_.size(), 0);
  const auto tasks = placements.empty() ? job.tasks : static_cast<std::int64_t>(placements.size());
  resources_.charge(cluster_, job, tasks, c);
  for (std::size_t i = 0; i < c.size(); ++i) it->second.used[i] += c[i];
}

void ResourceQuotaPlugin::job_stopped(const JobSpec& job, JobId id, std::span<const TaskPlacement>) {
  const auto it = namespaces_.find(job.queue);
  if (it == namespaces_.end() || id.value >= running_.size() || running_[id.value].empty()) return;
  auto& c = running_[id.value];
  for (std::size_t i = 0; i < c.size(); ++i) it->second.used[i] -= c[i];
  c.clear();
}

std::int64_t ResourceQuotaPlugin::used(const std::string& ns, std::string_view resource) const {
  const auto it = namespaces_.find(ns);
  if (it == namespaces_.end()) return 0;
  const auto i = resources_.find(quota::QuotaResources::canonical(resource, {}));
  return i ? it->second.used[*i] : 0;
}

// ================================================================ capacity-queues

namespace {

QueuePreemption parse_preemption(std::string_view plugin, const std::string& path, const json& v, bool allow_any) {
  if (v.is_string()) {
    const auto s = v.get<std::string>();
    if (s == "Never") return QueuePreemption::kNever;
    if (s == "LowerPriority") return QueuePreemption::kLowerPriority;
    if (s == "Any" && allow_any) return QueuePreemption::kAny;
  }
  bad_arg(plugin, path, std::string("expected ") + (allow_any ? "\"Never\", \"LowerPriority\" or \"Any\"" : "\"Never\" or \"LowerPriority\""));
}

}  // namespace

CapacityQueuesPlugin::CapacityQueuesPlugin(const nlohmann::json& args, std::string_view name) : name_(name) {
  resources_.set_weights(args.value("weights", json()), arg_at(name, "weights"));
  const json& cohorts = object_at(name, "cohorts", member_or_empty(args, "cohorts"));
  const json& queues = object_at(name, "queues", member_or_empty(args, "queues"));

  // Nodes: the ClusterQueues, then the cohorts.
  std::unordered_map<std::string, int> by_name;
  for (const auto& [q, spec] : queues.items()) {
    object_at(name, "queues/" + q, spec);
    check_keys(name, "queues/" + q, spec, {"cohort", "resource_groups", "flavors", "local_queues", "preemption"});
    Node n;
    n.name = q;
    n.is_queue = true;
    by_name.emplace(q, static_cast<int>(nodes_.size()));
    nodes_.push_back(std::move(n));
  }
  for (const auto& [c, spec] : cohorts.items()) {
    object_at(name, "cohorts/" + c, spec);
    check_keys(name, "cohorts/" + c, spec, {"parent"});
    if (by_name.count(c)) bad_arg(name, "cohorts/" + c, "\"" + c + "\" names both a ClusterQueue and a cohort");
    Node n;
    n.name = c;
    by_name.emplace(c, static_cast<int>(nodes_.size()));
    nodes_.push_back(std::move(n));
  }
  std::string cohort_names;
  for (const auto& [c, spec] : cohorts.items()) cohort_names += (cohort_names.empty() ? "" : ", ") + c;
  auto cohort_ref = [&](const std::string& path, const json& v) {
    if (!v.is_string()) bad_arg(name, path, "expected a cohort name");
    const auto s = v.get<std::string>();
    const auto it = by_name.find(s);
    if (it == by_name.end() || nodes_[static_cast<std::size_t>(it->second)].is_queue) {
      bad_arg(name, path, "unknown cohort \"" + s + "\" (cohorts: " + (cohort_names.empty() ? "none" : cohort_names) +
                              "); list it under \"cohorts\"");
    }
    return it->second;
  };

  // Raw quotas, parsed before the flavor x resource table can be sized.
  struct RawQuota {
    std::uint32_t flavor;
    std::size_t resource;
    std::int64_t nominal, borrowing, lending;   // -1 = not set
    std::string path;
  };
  std::vector<std::vector<RawQuota>> raw(nodes_.size());
  auto flavor_index = [&](const std::string& f) {
    for (std::uint32_t i = 0; i < flavor_names_.size(); ++i) {
      if (flavor_names_[i] == f) return i;
    }
    flavor_names_.push_back(f);
    return static_cast<std::uint32_t>(flavor_names_.size() - 1);
  };
  for (const auto& [q, spec] : queues.items()) {
    auto& node = nodes_[static_cast<std::size_t>(by_name.at(q))];
    const std::string qp = "queues/" + q;
    if (spec.contains("cohort")) node.parent = cohort_ref(qp + "/cohort", spec.at("cohort"));
    if (spec.contains("resource_groups") && spec.contains("flavors")) {
      bad_arg(name, qp, "give either \"resource_groups\" or \"flavors\" (shorthand for one group), not both");
    }
    std::vector<std::pair<std::string, const json*>> groups;
    if (spec.contains("flavors")) {
      groups.emplace_back(qp, &spec);
    } else if (spec.contains("resource_groups")) {
      const auto& rg = spec.at("resource_groups");
      if (!rg.is_array()) bad_arg(name, qp + "/resource_groups", "expected an array");
      for (std::size_t g = 0; g < rg.size(); ++g) {
        const std::string gp = qp + "/resource_groups/" + std::to_string(g);
        object_at(name, gp, rg[g]);
        check_keys(name, gp, rg[g], {"covered_resources", "flavors"});
        groups.emplace_back(gp, &rg[g]);
      }
    }
    std::vector<std::size_t> seen_resources;
    std::vector<std::uint32_t> seen_flavors;
    for (const auto& [gp, gj] : groups) {
      Group group;
      if (!gj->contains("flavors")) bad_arg(name, gp + "/flavors", "missing");
      const auto& fl = gj->at("flavors");
      if (!fl.is_array() || fl.empty()) bad_arg(name, gp + "/flavors", "expected a non-empty array of flavors");
      std::optional<std::vector<std::size_t>> covered;
      if (gj->contains("covered_resources")) {
        const auto& cr = gj->at("covered_resources");
        if (!cr.is_array()) bad_arg(name, gp + "/covered_resources", "expected an array of resource names");
        covered.emplace();
        for (std::size_t i = 0; i < cr.size(); ++i) {
          const auto at = arg_at(name, gp + "/covered_resources/" + std::to_string(i));
          if (!cr[i].is_string()) throw_error(ErrorCode::kProfileBadArgs, at, "expected a resource name");
          covered->push_back(resources_.intern(quota::QuotaResources::canonical(cr[i].get<std::string>(), at)));
        }
        std::sort(covered->begin(), covered->end());
      }
      for (std::size_t k = 0; k < fl.size(); ++k) {
        const std::string fp = gp + "/flavors/" + std::to_string(k);
        object_at(name, fp, fl[k]);
        check_keys(name, fp, fl[k], {"name", "resources"});
        if (!fl[k].contains("name") || !fl[k].at("name").is_string() || fl[k].at("name").get<std::string>().empty()) {
          bad_arg(name, fp + "/name", "expected a flavor name (a GPU model or \"default\")");
        }
        const auto f = flavor_index(fl[k].at("name").get<std::string>());
        if (std::find(seen_flavors.begin(), seen_flavors.end(), f) != seen_flavors.end()) {
          bad_arg(name, fp + "/name", "flavor \"" + flavor_names_[f] + "\" appears twice in ClusterQueue " + q);
        }
        seen_flavors.push_back(f);
        if (!fl[k].contains("resources")) bad_arg(name, fp + "/resources", "missing");
        const json& res = object_at(name, fp + "/resources", fl[k].at("resources"));
        std::vector<std::size_t> mine;
        for (const auto& [rn, rv] : res.items()) {
          const std::string rp = fp + "/resources/" + rn;
          const auto r = resources_.intern(quota::QuotaResources::canonical(rn, arg_at(name, rp)));
          RawQuota rq{f, r, -1, -1, -1, rp};
          if (rv.is_object()) {
            check_keys(name, rp, rv, {"nominal_quota", "borrowing_limit", "lending_limit"});
            if (!rv.contains("nominal_quota")) bad_arg(name, rp + "/nominal_quota", "missing");
            rq.nominal = resources_.parse_amount(r, rv.at("nominal_quota"), arg_at(name, rp + "/nominal_quota"));
            if (rv.contains("borrowing_limit")) {
              rq.borrowing = resources_.parse_amount(r, rv.at("borrowing_limit"), arg_at(name, rp + "/borrowing_limit"));
            }
            if (rv.contains("lending_limit")) {
              rq.lending = resources_.parse_amount(r, rv.at("lending_limit"), arg_at(name, rp + "/lending_limit"));
            }
          } else {
            rq.nominal = resources_.parse_amount(r, rv, arg_at(name, rp));
          }
          if ((rq.borrowing >= 0 || rq.lending >= 0) && node.parent < 0) {
            bad_arg(name, rp + (rq.borrowing >= 0 ? "/borrowing_limit" : "/lending_limit"),
                    "borrowing_limit and lending_limit need the ClusterQueue to be in a cohort");
          }
          if (rq.lending > rq.nominal) {
            bad_arg(name, rp + "/lending_limit",
                    "lending_limit " + resources_.format(r, rq.lending) + " exceeds nominal_quota " +
                        resources_.format(r, rq.nominal));
          }
          mine.push_back(r);
          raw[static_cast<std::size_t>(by_name.at(q))].push_back(rq);
        }
        std::sort(mine.begin(), mine.end());
        if (mine.empty()) bad_arg(name, fp + "/resources", "a flavor needs at least one resource");
        if (!covered) covered = mine;
        if (mine != *covered) {
          auto names = [&](const std::vector<std::size_t>& v) {
            std::string s;
            for (auto i : v) s += (s.empty() ? "" : ", ") + resources_.name(i);
            return s;
          };
          bad_arg(name, fp + "/resources",
                  "flavor \"" + flavor_names_[f] + "\" covers {" + names(mine) + "} but its resource group covers {" +
                      names(*covered) + "} (Kueue: every flavor of a group lists the group's coveredResources)");
        }
      }
      for (auto r : *covered) {
        if (std::find(seen_resources.begin(), seen_resources.end(), r) != seen_resources.end()) {
          bad_arg(name, gp, "resource " + resources_.name(r) + " is covered by two resource groups of ClusterQueue " + q);
        }
        seen_resources.push_back(r);
      }
      group.covered = *covered;
      for (std::size_t k = 0; k < fl.size(); ++k) group.flavors.push_back(flavor_index(fl[k].at("name").get<std::string>()));
      node.groups.push_back(std::move(group));
    }
    if (spec.contains("preemption")) {
      const std::string pp = qp + "/preemption";
      const auto& p = object_at(name, pp, spec.at("preemption"));
      check_keys(name, pp, p, {"reclaim_within_cohort", "within_cluster_queue"});
      if (p.contains("reclaim_within_cohort")) {
        node.reclaim = parse_preemption(name, pp + "/reclaim_within_cohort", p.at("reclaim_within_cohort"), true);
      }
      if (p.contains("within_cluster_queue")) {
        node.within = parse_preemption(name, pp + "/within_cluster_queue", p.at("within_cluster_queue"), false);
      }
    }
  }
  for (const auto& [c, spec] : cohorts.items()) {
    if (spec.contains("parent")) nodes_[static_cast<std::size_t>(by_name.at(c))].parent = cohort_ref("cohorts/" + c + "/parent", spec.at("parent"));
  }
  // A cycle of parents: walk up from every cohort.
  for (const auto& [c, spec] : cohorts.items()) {
    const int start = by_name.at(c);
    std::vector<int> path{start};
    for (int n = nodes_[static_cast<std::size_t>(start)].parent; n >= 0; n = nodes_[static_cast<std::size_t>(n)].parent) {
      if (n == start || std::find(path.begin(), path.end(), n) != path.end()) {
        std::string cycle;
        for (int p : path) cycle += nodes_[static_cast<std::size_t>(p)].name + " -> ";
        bad_arg(name, "cohorts/" + c + "/parent", "cohort cycle: " + cycle + nodes_[static_cast<std::size_t>(n)].name);
      }
      path.push_back(n);
    }
  }

  // The flavor x resource table.
  const std::size_t frs = flavor_names_.size() * resources_.size();
  for (auto& n : nodes_) {
    n.nominal.assign(frs, 0);
    n.borrowing_limit.assign(frs, -1);
    n.lending_limit.assign(frs, -1);
    n.quota.assign(frs, 0);
    n.lendable.assign(frs, 0);
    n.guaranteed.assign(frs, 0);
    n.usage.assign(frs, 0);
    n.ceiling.assign(frs, 0);
  }
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    for (const auto& rq : raw[i]) {
      const auto k = fr(rq.flavor, rq.resource);
      nodes_[i].nominal[k] = rq.nominal;
      nodes_[i].borrowing_limit[k] = rq.borrowing;
      nodes_[i].lending_limit[k] = rq.lending;
    }
  }
  // Quotas bottom-up: deepest nodes first.
  std::vector<int> depth(nodes_.size(), 0);
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    int r = static_cast<int>(i);
    while (nodes_[static_cast<std::size_t>(r)].parent >= 0) {
      r = nodes_[static_cast<std::size_t>(r)].parent;
      ++depth[i];
    }
    nodes_[i].root = r;
  }
  std::vector<std::size_t> order(nodes_.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return depth[a] > depth[b]; });
  for (auto i : order) {
    auto& n = nodes_[i];
    for (std::size_t k = 0; k < frs; ++k) {
      if (n.is_queue) n.quota[k] = n.nominal[k];
      n.lendable[k] = n.lending_limit[k] >= 0 ? std::min(n.lending_limit[k], n.quota[k]) : n.quota[k];
      n.guaranteed[k] = n.quota[k] - n.lendable[k];
      if (n.parent >= 0) nodes_[static_cast<std::size_t>(n.parent)].quota[k] += n.lendable[k];
    }
  }
  // Ceilings (usage is zero now). A borrowing limit above what the cohort could ever lend is
  // valid, as in Kueue: it is a cap, not a promise (Kueue's ClusterQueue webhook checks only that
  // it is non-negative and that the queue has a cohort; see docs/policies.md).
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    auto& n = nodes_[i];
    if (!n.is_queue) continue;
    for (std::size_t k = 0; k < frs; ++k) n.ceiling[k] = available_at(static_cast<int>(i), k);
  }

  // LocalQueues -> ClusterQueues.
  for (const auto& [q, spec] : queues.items()) {
    const int node = by_name.at(q);
    auto map = [&](const std::string& lq, const std::string& path) {
      const auto [it, added] = local_queues_.emplace(lq, node);
      if (!added && it->second != node) {
        bad_arg(name, path, "queue \"" + lq + "\" is mapped to ClusterQueues " + nodes_[static_cast<std::size_t>(it->second)].name +
                                " and " + q);
      }
    };
    if (spec.contains("local_queues")) {
      const auto& lq = spec.at("local_queues");
      if (!lq.is_array()) bad_arg(name, "queues/" + q + "/local_queues", "expected an array of queue names");
      for (std::size_t i = 0; i < lq.size(); ++i) {
        const std::string path = "queues/" + q + "/local_queues/" + std::to_string(i);
        if (!lq[i].is_string()) bad_arg(name, path, "expected a queue name");
        map(lq[i].get<std::string>(), path);
      }
    }
  }
  for (const auto& [q, spec] : queues.items()) local_queues_.try_emplace(q, by_name.at(q));
  if (args.contains("default_queue") && !args.at("default_queue").is_null()) {
    const auto& d = args.at("default_queue");
    if (!d.is_string()) bad_arg(name, "default_queue", "expected a ClusterQueue name");
    const auto s = d.get<std::string>();
    if (!s.empty()) {
      const auto it = by_name.find(s);
      if (it == by_name.end() || !nodes_[static_cast<std::size_t>(it->second)].is_queue) {
        std::string known;
        for (const auto& [q, spec] : queues.items()) known += (known.empty() ? "" : ", ") + q;
        bad_arg(name, "default_queue", "unknown ClusterQueue \"" + s + "\" (queues: " + (known.empty() ? "none" : known) + ")");
      }
      default_queue_ = it->second;
    }
  }

  for (auto& n : nodes_) {
    if (!n.is_queue) continue;
    const std::string cohort = n.parent >= 0 ? " plus what cohort " + nodes_[static_cast<std::size_t>(n.parent)].name + " can lend" : "";
    n.no_room_reason = "ClusterQueue " + n.name + ": no flavor has room for the job (nominal quota" + cohort + ")";
    n.too_big_reason = "job exceeds what ClusterQueue " + n.name + " could ever admit in every flavor (nominal quota" + cohort +
                       ", borrowing limits)";
    n.no_flavor_reason = "no flavor of ClusterQueue " + n.name + " offers the job's GPU model or profile";
  }
  flavor_models_.assign(flavor_names_.size(), GpuModelId{});
  for (const auto& f : flavor_names_) flavor_reasons_.push_back("node has no GPU of flavor " + f + " assigned by the ClusterQueue");
}

std::string_view CapacityQueuesPlugin::intern(std::string text) { return *texts_.insert(std::move(text)).first; }

std::int64_t CapacityQueuesPlugin::available_at(int node, std::size_t k) const {
  const Node& n = nodes_[static_cast<std::size_t>(node)];
  if (n.parent < 0) return std::max<std::int64_t>(0, n.quota[k] - n.usage[k]);
  const std::int64_t local = std::max<std::int64_t>(0, n.guaranteed[k] - n.usage[k]);
  std::int64_t from_parent = available_at(n.parent, k);
  if (n.borrowing_limit[k] >= 0) {
    // What it put into the parent (lendable), minus what it already takes from there, plus the limit.
    const std::int64_t in_parent = std::max<std::int64_t>(0, n.usage[k] - n.guaranteed[k]);
    from_parent = std::min(from_parent, n.lendable[k] - in_parent + n.borrowing_limit[k]);
  }
  return local + std::max<std::int64_t>(0, from_parent);
}

void CapacityQueuesPlugin::add_usage(int node, std::size_t k, std::int64_t delta) {
  int n = node;
  while (delta != 0) {
    Node& x = nodes_[static_cast<std::size_t>(n)];
    const std::int64_t old = x.usage[k];
    x.usage[k] += delta;
    if (x.parent < 0) break;
    // The parent sees what a child uses beyond its guaranteed (non-lendable) quota.
    delta = std::max<std::int64_t>(0, x.usage[k] - x.guaranteed[k]) - std::max<std::int64_t>(0, old - x.guaranteed[k]);
    n = x.parent;
  }
}

void CapacityQueuesPlugin::apply(const Running& r, int sign) {
  for (const auto& [k, amount] : r.charged) add_usage(r.queue, k, sign * amount);
}

int CapacityQueuesPlugin::queue_of(const JobSpec& job) const {
  const auto it = local_queues_.find(job.queue);
  return it != local_queues_.end() ? it->second : default_queue_;
}

bool CapacityQueuesPlugin::flavor_allows(std::uint32_t flavor, const TaskRequest& r) const {
  const GpuModelId m = flavor_models_[flavor];
  if (!m.valid()) return true;
  if (!r.model_allowed(m)) return false;
  if ((r.gpu.mode == GpuMode::kMig || r.gpu.mode == GpuMode::kVgpu) && r.gpu.profile_index(m) < 0) return false;
  return true;
}

CapacityQueuesPlugin::Fit CapacityQueuesPlugin::assign(int queue, const JobSpec& job, std::span<const std::int64_t> charge,
                                                       std::vector<int>& out, bool within_nominal,
                                                       std::span<const std::int64_t> own_relief) const {
  const Node& q = nodes_[static_cast<std::size_t>(queue)];
  out.assign(q.groups.size(), -1);
  Fit result = Fit::kFits;
  for (std::size_t g = 0; g < q.groups.size(); ++g) {
    const auto& group = q.groups[g];
    const bool requested = std::any_of(group.covered.begin(), group.covered.end(), [&](std::size_t r) { return charge[r] > 0; });
    if (!requested) continue;
    bool eligible = false, ever = false;
    for (const auto f : group.flavors) {
      if (!flavor_allows(f, job.request)) continue;
      eligible = true;
      bool fits_ever = true, fits_now = true;
      for (const auto r : group.covered) {
        const auto c = charge[r];
        if (c == 0) continue;
        const auto k = fr(f, r);
        if (c > q.ceiling[k]) fits_ever = false;
        const std::int64_t room = within_nominal ? q.nominal[k] - q.usage[k] + (own_relief.empty() ? 0 : own_relief[k])
                                                 : available_at(queue, k);
        if (c > room) fits_now = false;
      }
      ever = ever || fits_ever;
      if (fits_ever && fits_now) {
        out[g] = static_cast<int>(f);
        break;
      }
    }
    if (!eligible) return Fit::kNoFlavor;
    if (!ever) return Fit::kTooBig;
    if (out[g] < 0) result = Fit::kNoRoom;
  }
  return result;
}

void CapacityQueuesPlugin::resolve(const ClusterState& cluster) {
  if (resolved_for_ == &cluster) return;
  for (std::size_t f = 0; f < flavor_names_.size(); ++f) {
    if (flavor_names_[f] == "default") continue;
    const auto m = cluster.catalog().find(flavor_names_[f]);
    if (!m) {
      bad_arg(name_, "queues",
              "flavor \"" + flavor_names_[f] + "\" is neither \"default\" nor a GPU model of the catalog (" +
                  cluster.catalog().known_names() + ")");
    }
    flavor_models_[f] = *m;
  }
  resolved_for_ = &cluster;
}

CapacityQueuesPlugin::Running CapacityQueuesPlugin::make_running(int queue, const std::vector<int>& flavors,
                                                                 std::span<const std::int64_t> charge) const {
  Running r;
  r.queue = queue;
  const auto& q = nodes_[static_cast<std::size_t>(queue)];
  for (std::size_t g = 0; g < q.groups.size() && g < flavors.size(); ++g) {
    if (flavors[g] < 0) continue;
    for (const auto res : q.groups[g].covered) {
      if (charge[res] > 0) r.charged.emplace_back(fr(static_cast<std::uint32_t>(flavors[g]), res), charge[res]);
    }
  }
  return r;
}

Status CapacityQueuesPlugin::pre_filter(const ClusterState& cluster, TaskContext& ctx) {
  if (ctx.task_index != 0 && decided_job_ == ctx.job_id) return Status::success();   // task 0 admitted the job
  resolve(cluster);
  cluster_ = &cluster;
  decided_job_ = ctx.job_id;
  decided_models_.clear();
  const int q = queue_of(ctx.job);
  decided_queue_ = q;
  decided_flavors_.clear();
  if (q < 0) {
    // No ClusterQueue configured at all (e.g. the bare kueue-cohorts preset): nothing to enforce.
    if (local_queues_.empty()) return Status::success();
    return Status::unresolvable(name_, intern("no ClusterQueue for queue \"" + ctx.job.queue +
                                              "\" (not a ClusterQueue, not in any local_queues, and no default_queue)"));
  }
  charge_.assign(resources_.size(), 0);
  resources_.charge(&cluster, ctx.job, ctx.job.tasks, charge_);
  const auto& node = nodes_[static_cast<std::size_t>(q)];
  switch (assign(q, ctx.job, charge_, decided_flavors_, false)) {
    case Fit::kNoFlavor: return Status::unresolvable(name_, node.no_flavor_reason);
    case Fit::kTooBig: return Status::unresolvable(name_, node.too_big_reason);
    case Fit::kNoRoom: return Status::unschedulable(name_, node.no_room_reason);
    case Fit::kFits: break;
  }
  for (const int f : decided_flavors_) {
    if (f < 0) continue;
    const auto m = flavor_models_[static_cast<std::size_t>(f)];
    if (m.valid() && std::find(decided_models_.begin(), decided_models_.end(), m) == decided_models_.end()) {
      decided_models_.push_back(m);
    }
  }
  return Status::success();
}

Status CapacityQueuesPlugin::filter(const ClusterState& cluster, const TaskContext&, NodeId node) const {
  if (decided_models_.empty()) return Status::success();
  const auto& s = cluster.node(node);
  for (const auto m : decided_models_) {
    bool has = s.model == m;
    if (!has && !s.model.valid()) {
      for (const auto& g : cluster.gpus(node)) {
        if (g.model == m) {
          has = true;
          break;
        }
      }
    }
    if (!has) {
      for (std::size_t f = 0; f < flavor_models_.size(); ++f) {
        if (flavor_models_[f] == m) return Status::unschedulable(name_, flavor_reasons_[f]);
      }
    }
  }
  return Status::success();
}

Status CapacityQueuesPlugin::post_filter(ClusterState& /*cluster*/, const JobSpec& job, JobId /*id*/, Statement& st,
                                         std::vector<JobId>& victims, const FitsFn& fits) {
  const int q = queue_of(job);
  if (q < 0 || jobs_ == nullptr) return Status::unschedulable(name_, "no ClusterQueue or no view of running jobs: nothing to reclaim");
  if (job.constraints.preempt_never) return Status::unschedulable(name_, "preemptionPolicy Never: the job does not reclaim");
  const Node& qn = nodes_[static_cast<std::size_t>(q)];
  if (qn.reclaim == QueuePreemption::kNever && qn.within == QueuePreemption::kNever) {
    return Status::unschedulable(name_, "the ClusterQueue's preemption policies are Never");
  }
  charge_.assign(resources_.size(), 0);
  resources_.charge(cluster_, job, job.tasks, charge_);
  const std::size_t frs = flavor_names_.size() * resources_.size();
  auto preemptible_below = [&](JobId j, bool lower_only) {
    if (running_[j.value].evicting) return false;
    const auto& spec = jobs_->spec(j);
    return spec.constraints.preemptible && (!lower_only || spec.priority < job.priority);
  };
  // What the queue's own lower-priority jobs hold (within_cluster_queue: LowerPriority).
  std::vector<std::int64_t> relief(frs, 0);
  if (qn.within == QueuePreemption::kLowerPriority) {
    for (const JobId j : qn.running) {
      if (!preemptible_below(j, true)) continue;
      for (const auto& [k, a] : running_[j.value].charged) relief[k] += a;
    }
  }
  // Kueue preempts only for a job that fits within its queue's nominal quota.
  std::vector<int> flavors;
  if (assign(q, job, charge_, flavors, true, relief) != Fit::kFits) {
    return Status::unschedulable(name_, "the job does not fit within its ClusterQueue's nominal quota: nothing to reclaim");
  }
  std::vector<std::uint8_t> needed(frs, 0);
  for (std::size_t g = 0; g < flavors.size(); ++g) {
    if (flavors[g] < 0) continue;
    for (const auto r : qn.groups[g].covered) {
      if (charge_[r] > 0) needed[fr(static_cast<std::uint32_t>(flavors[g]), r)] = 1;
    }
  }
  auto touches = [&](JobId j) {
    return std::any_of(running_[j.value].charged.begin(), running_[j.value].charged.end(),
                       [&](const auto& c) { return needed[c.first] != 0 && c.second > 0; });
  };
  struct Candidate {
    JobId id;
    bool own;
    std::int32_t priority;
    SimTime started;
  };
  std::vector<Candidate> candidates;
  if (qn.reclaim != QueuePreemption::kNever) {
    for (std::size_t p = 0; p < nodes_.size(); ++p) {
      const auto& other = nodes_[p];
      if (!other.is_queue || static_cast<int>(p) == q || other.root != qn.root) continue;
      for (const JobId j : other.running) {
        if (!preemptible_below(j, qn.reclaim == QueuePreemption::kLowerPriority) || !touches(j)) continue;
        candidates.push_back({j, false, jobs_->spec(j).priority, jobs_->started(j)});
      }
    }
  }
  if (qn.within == QueuePreemption::kLowerPriority) {
    for (const JobId j : qn.running) {
      if (!preemptible_below(j, true) || !touches(j)) continue;
      candidates.push_back({j, true, jobs_->spec(j).priority, jobs_->started(j)});
    }
  }
  // Kueue's order: other (borrowing) queues first, lower priority first, most recently started first.
  std::sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
    if (a.own != b.own) return !a.own;
    if (a.priority != b.priority) return a.priority < b.priority;
    if (a.started != b.started) return a.started > b.started;
    return a.id > b.id;
  });
  std::vector<int> scratch;
  for (const auto& c : candidates) {
    const Running& r = running_[c.id.value];
    const Node& owner = nodes_[static_cast<std::size_t>(r.queue)];
    if (!c.own) {
      // Reclaim only from a queue still borrowing in what the job needs.
      const bool borrowing = std::any_of(r.charged.begin(), r.charged.end(), [&](const auto& ch) {
        return needed[ch.first] != 0 && owner.usage[ch.first] > owner.nominal[ch.first];
      });
      if (!borrowing) continue;
    } else if (assign(q, job, charge_, scratch, true) == Fit::kFits) {
      continue;   // within nominal already: the queue's own jobs are not in the way of its quota
    }
    const auto& spec = jobs_->spec(c.id);
    for (const auto& p : jobs_->placements(c.id)) st.evict(spec.request, p);
    running_[c.id.value].evicting = true;
    apply(r, -1);
    const JobId vid = c.id;
    st.on_rollback([this, vid] {
      auto& rr = running_[vid.value];
      rr.evicting = false;
      apply(rr, +1);
    });
    victims.push_back(c.id);
    if (assign(q, job, charge_, scratch, false) != Fit::kFits) continue;   // quota first (cheap)
    if (fits({})) return Status::success();
  }
  return Status::unschedulable(name_, "reclaiming every candidate would not make room");
}

void CapacityQueuesPlugin::attach(const ClusterState& cluster, std::span<const JobSpec> workload, const JobsView* jobs) {
  resolve(cluster);
  cluster_ = &cluster;
  jobs_ = jobs;
  running_.assign(workload.size(), {});
  for (auto& n : nodes_) {
    std::fill(n.usage.begin(), n.usage.end(), 0);
    n.running.clear();
  }
}

void CapacityQueuesPlugin::job_started(const JobSpec& job, JobId id, std::span<const TaskPlacement> placements) {
  const int q = queue_of(job);
  if (q < 0) return;
  if (running_.size() <= id.value) running_.resize(id.value + 1);
  std::vector<int> flavors;
  charge_.assign(resources_.size(), 0);
  resources_.charge(cluster_, job, job.tasks, charge_);
  if (decided_job_ == id && decided_queue_ == q) {
    flavors = decided_flavors_;
  } else if (assign(q, job, charge_, flavors, false) != Fit::kFits) {
    // Started without our admission (a caller bypassing schedule()): first allowed flavor.
    const auto& node = nodes_[static_cast<std::size_t>(q)];
    flavors.assign(node.groups.size(), -1);
    for (std::size_t g = 0; g < node.groups.size(); ++g) {
      for (const auto f : node.groups[g].flavors) {
        if (flavor_allows(f, job.request)) {
          flavors[g] = static_cast<int>(f);
          break;
        }
      }
    }
  }
  if (!placements.empty() && static_cast<std::int32_t>(placements.size()) != job.tasks) {
    charge_.assign(resources_.size(), 0);   // a gang started with fewer tasks: charge what runs
    resources_.charge(cluster_, job, static_cast<std::int64_t>(placements.size()), charge_);
  }
  Running r = make_running(q, flavors, charge_);
  apply(r, +1);
  nodes_[static_cast<std::size_t>(q)].running.push_back(id);
  running_[id.value] = std::move(r);
}

void CapacityQueuesPlugin::job_stopped(const JobSpec&, JobId id, std::span<const TaskPlacement>) {
  if (id.value >= running_.size() || running_[id.value].queue < 0) return;
  auto& r = running_[id.value];
  if (!r.evicting) apply(r, -1);
  std::erase(nodes_[static_cast<std::size_t>(r.queue)].running, id);
  r = Running{};
}

int CapacityQueuesPlugin::find_node(std::string_view n) const {
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    if (nodes_[i].name == n) return static_cast<int>(i);
  }
  return -1;
}

std::optional<std::size_t> CapacityQueuesPlugin::find_fr(std::string_view flavor, std::string_view resource) const {
  const auto r = resources_.find(quota::QuotaResources::canonical(resource, {}));
  for (std::uint32_t f = 0; f < flavor_names_.size(); ++f) {
    if (flavor_names_[f] == flavor && r) return fr(f, *r);
  }
  return std::nullopt;
}

std::int64_t CapacityQueuesPlugin::usage(std::string_view node, std::string_view flavor, std::string_view resource) const {
  const int n = find_node(node);
  const auto k = find_fr(flavor, resource);
  return (n < 0 || !k) ? 0 : nodes_[static_cast<std::size_t>(n)].usage[*k];
}

std::int64_t CapacityQueuesPlugin::available(std::string_view queue, std::string_view flavor, std::string_view resource) const {
  const int n = find_node(queue);
  const auto k = find_fr(flavor, resource);
  return (n < 0 || !k || !nodes_[static_cast<std::size_t>(n)].is_queue) ? 0 : available_at(n, *k);
}

std::int64_t CapacityQueuesPlugin::ceiling(std::string_view queue, std::string_view flavor, std::string_view resource) const {
  const int n = find_node(queue);
  const auto k = find_fr(flavor, resource);
  return (n < 0 || !k) ? 0 : nodes_[static_cast<std::size_t>(n)].ceiling[*k];
}

std::string CapacityQueuesPlugin::cluster_queue_of(const std::string& job_queue) const {
  const auto it = local_queues_.find(job_queue);
  const int n = it != local_queues_.end() ? it->second : default_queue_;
  return n < 0 ? std::string() : nodes_[static_cast<std::size_t>(n)].name;
}

// ================================================================ drf

DrfSort::DrfSort(const nlohmann::json& args, std::string_view name) : name_(name) {
  const json& w = object_at(name, "weights", member_or_empty(args, "weights"));
  for (const auto& [q, v] : w.items()) {
    if (!v.is_number() || !(v.get<double>() > 0.0)) bad_arg(name, "weights/" + q, "a queue weight must be a number > 0");
    weights_[q] = v.get<double>();
  }
  if (args.is_object() && args.contains("order")) {
    const json& o = args.at("order");
    const std::string order = o.is_string() ? o.get<std::string>() : std::string();
    if (order != "current-share" && order != "share-after") {
      bad_arg(name, "order", "expected \"current-share\" (Volcano/YARN: the queue's share now) or \"share-after\" "
                             "(gpusched: the share once the job starts)");
    }
    share_after_ = order == "share-after";
  }
}

std::size_t DrfSort::queue_index(const std::string& q) const {
  const auto it = queue_ids_.find(q);
  if (it != queue_ids_.end()) return it->second;
  Queue queue;
  if (const auto w = weights_.find(q); w != weights_.end()) queue.weight = w->second;
  queues_.push_back(std::move(queue));
  queue_ids_.emplace(q, queues_.size() - 1);
  return queues_.size() - 1;
}

DrfSort::Vec DrfSort::request_of(const JobSpec& job) const {
  const auto& r = job.request;
  double gpu = 0.0;
  switch (r.gpu.mode) {
    case GpuMode::kWhole:
    case GpuMode::kPassthrough:
    case GpuMode::kShared: gpu = static_cast<double>(r.gpu.total_milli()); break;
    case GpuMode::kMig:
    case GpuMode::kVgpu: gpu = r.gpu.count * kMilliPerGpu * partition_fraction(cluster_, r.gpu); break;
    case GpuMode::kNone: break;
  }
  const auto t = static_cast<double>(job.tasks);
  return {static_cast<double>(r.cpu_milli) * t, static_cast<double>(r.memory_mib) * t, gpu * t,
          static_cast<double>(r.tpu.chips) * t};
}

double DrfSort::dominant(const Vec& v, double weight) const {
  double m = 0.0;
  for (std::size_t d = 0; d < kDims; ++d) {
    if (capacity_[d] > 0) m = std::max(m, v[d] / capacity_[d]);
  }
  return m / weight;
}

bool DrfSort::ahead(std::uint32_t a, std::uint32_t b) const {
  const auto& x = workload_[a];
  const auto& y = workload_[b];
  if (x.priority != y.priority) return x.priority > y.priority;
  if (x.submit != y.submit) return x.submit < y.submit;
  return a < b;
}

void DrfSort::advance_arrivals() const {
  const SimTime now = jobs_ != nullptr ? jobs_->now() : SimTime::forever();
  if (keyed_ && now == keyed_at_) return;
  keyed_ = true;
  keyed_at_ = now;
  while (arrived_ < by_submit_.size() && workload_[by_submit_[arrived_]].submit <= now) {
    const auto j = by_submit_[arrived_++];
    if (started_[j]) continue;
    auto& q = queues_[job_queue_[j]];
    const auto at = std::upper_bound(q.waiting.begin(), q.waiting.end(), j,
                                     [&](std::uint32_t a, std::uint32_t b) { return ahead(a, b); });
    q.waiting.insert(at, j);
    q.dirty = true;
  }
}

void DrfSort::refresh(std::size_t qi) const {
  auto& q = queues_[qi];
  if (!q.dirty) return;
  std::erase_if(q.waiting, [&](std::uint32_t j) { return started_[j] != 0; });
  Vec acc = q.usage;
  for (const auto j : q.waiting) {
    if (!share_after_) key_[j] = dominant(acc, q.weight);   // current share: the jobs ahead only
    for (std::size_t d = 0; d < kDims; ++d) acc[d] += job_request_[j][d];
    if (share_after_) key_[j] = dominant(acc, q.weight);
  }
  q.dirty = false;
}

double DrfSort::key(const JobSpec& job, JobId id) const {
  const bool known = id.value < workload_.size() &&
                     (&workload_[id.value] == &job || (workload_[id.value].name == job.name && workload_[id.value].submit == job.submit));
  if (known && !started_[id.value]) {
    advance_arrivals();
    if (job.submit <= keyed_at_) {
      refresh(job_queue_[id.value]);
      return key_[id.value];
    }
  }
  const auto qi = queue_index(job.queue);
  Vec v = queues_[qi].usage;
  if (share_after_) {
    const Vec r = request_of(job);
    for (std::size_t d = 0; d < kDims; ++d) v[d] += r[d];
  }
  return dominant(v, queues_[qi].weight);
}

bool DrfSort::less(const JobSpec& a, JobId ia, const JobSpec& b, JobId ib) const {
  const double ka = key(a, ia), kb = key(b, ib);
  if (ka != kb) return ka < kb;
  if (a.priority != b.priority) return a.priority > b.priority;
  if (a.submit != b.submit) return a.submit < b.submit;
  return ia < ib;
}

void DrfSort::attach(const ClusterState& cluster, std::span<const JobSpec> workload, const JobsView* jobs) {
  cluster_ = &cluster;
  workload_ = workload;
  jobs_ = jobs;
  const auto& t = cluster.totals();
  capacity_ = {static_cast<double>(t.cpu_milli), static_cast<double>(t.memory_mib), static_cast<double>(t.gpu_milli),
               static_cast<double>(t.tpu_chips)};
  queues_.clear();
  queue_ids_.clear();
  const auto n = workload.size();
  job_queue_.resize(n);
  job_request_.resize(n);
  for (std::size_t j = 0; j < n; ++j) {
    job_queue_[j] = static_cast<std::uint32_t>(queue_index(workload[j].queue));
    job_request_[j] = request_of(workload[j]);
  }
  started_.assign(n, 0);
  running_.assign(n, Vec{});
  key_.assign(n, 0.0);
  by_submit_.resize(n);
  std::iota(by_submit_.begin(), by_submit_.end(), 0U);
  std::stable_sort(by_submit_.begin(), by_submit_.end(),
                   [&](std::uint32_t a, std::uint32_t b) { return workload[a].submit < workload[b].submit; });
  arrived_ = 0;
  keyed_ = false;
}

void DrfSort::job_started(const JobSpec& job, JobId id, std::span<const TaskPlacement> placements) {
  const auto qi = queue_index(job.queue);
  Vec u{};
  const auto tasks = static_cast<double>(placements.empty() ? static_cast<std::size_t>(job.tasks) : placements.size());
  u[0] = static_cast<double>(job.request.cpu_milli) * tasks;
  u[1] = static_cast<double>(job.request.memory_mib) * tasks;
  if (placements.empty()) {
    u = request_of(job);
  } else {
    for (const auto& p : placements) {
      for (const auto& g : p.gpus) u[2] += g.milli;
      u[3] += p.tpu_chips;
    }
  }
  if (running_.size() <= id.value) running_.resize(id.value + 1, Vec{});
  running_[id.value] = u;
  auto& q = queues_[qi];
  for (std::size_t d = 0; d < kDims; ++d) q.usage[d] += u[d];
  q.dirty = true;
  if (id.value < started_.size()) started_[id.value] = 1;
}

void DrfSort::job_stopped(const JobSpec& job, JobId id, std::span<const TaskPlacement>) {
  if (id.value >= running_.size()) return;
  auto& q = queues_[queue_index(job.queue)];
  for (std::size_t d = 0; d < kDims; ++d) q.usage[d] -= running_[id.value][d];
  running_[id.value] = Vec{};
  q.dirty = true;
}

double DrfSort::share(const std::string& queue) const {
  const auto it = queue_ids_.find(queue);
  return it == queue_ids_.end() ? 0.0 : dominant(queues_[it->second].usage, queues_[it->second].weight);
}

// ================================================================ registration

namespace detail {

void register_quota_plugins(Registry& r) {
  const PluginArg weights{"weights", "object",
                          "gpusched.io/gpu-equivalent cost per unit of each requested resource (e.g. "
                          "{\"nvidia.com/mig-7g.80gb\": 7, \"nvidia.com/mig-1g.10gb\": 1}); replaces the defaults "
                          "(nvidia.com/gpu 1, gpusched.io/gpu-milli 0.001, MIG/vGPU their share of a GPU)",
                          nullptr};
  r.add({"resource-quota",
         "Kubernetes ResourceQuota per namespace (the job's queue): a job whose whole request would push its "
         "namespace's running requests over a hard limit waits (larger than the limit itself: unresolvable)",
         {"pre_filter"},
         {{"quotas", "object",
           "namespace -> {resource: hard limit}, e.g. {\"team-a\": {\"requests.nvidia.com/gpu\": 8, \"requests.memory\": "
           "\"256Gi\", \"count/jobs\": 10}}",
           json::object()},
          weights},
         [](const PluginContext& c) { return std::make_unique<ResourceQuotaPlugin>(c.args, c.name); }});
  r.add({"capacity-queues",
         "Kueue ClusterQueues: per-flavor nominal quota, borrowing from and lending to (hierarchical) cohorts; the "
         "post-filter reclaims lent quota by evicting borrowing jobs (reclaimWithinCohort) and, when asked, the queue's "
         "lower-priority jobs (withinClusterQueue)",
         {"pre_filter", "filter", "post_filter"},
         {{"queues", "object",
           "ClusterQueue name -> {cohort, resource_groups: [{flavors: [{name: <GPU model>|default, resources: {<resource>: "
           "<nominal> | {nominal_quota, borrowing_limit, lending_limit}}}]}], local_queues, preemption: "
           "{reclaim_within_cohort: Never|LowerPriority|Any (default Any), within_cluster_queue: Never|LowerPriority}}",
           json::object()},
          {"cohorts", "object", "cohort name -> {parent: <cohort>} (hierarchical cohorts)", json::object()},
          {"default_queue", "string", "ClusterQueue for jobs whose queue has none (\"\": such jobs are unresolvable)", ""},
          weights},
         [](const PluginContext& c) { return std::make_unique<CapacityQueuesPlugin>(c.args, c.name); }});
  r.add({"drf",
         "queue order by weighted dominant-resource share (Volcano drf/proportion, YARN DRF): the queue whose current "
         "share is lowest goes first (the jobs ahead in its queue counted as started), then priority, submission, id",
         {"queue_sort"},
         {{"weights", "object", "queue -> weight (> 0; default 1): a queue with weight 2 gets twice the share", json::object()},
          {"order", "string",
           "current-share (Volcano/YARN: the queue's share now) | share-after (gpusched: the share once the job starts, "
           "so small jobs in busier queues can go first)",
           "current-share"}},
         [](const PluginContext& c) { return std::make_unique<DrfSort>(c.args, c.name); }});
}

}  // namespace detail

}  // namespace gpusched::policies
