#pragma once
/// The built-in demo scenario with its node groups scaled to any node count, in the demo's
/// proportions (the last group takes the remainder). Shared by bench_sim and bench_growth;
/// bench-private. Callers set the workload (jobs, load) and name.
#include <cstddef>
#include <cstdint>

#include <nlohmann/json.hpp>

#include <gpusched/scenario/scenario.hpp>

namespace gpusched::bench {

inline nlohmann::json scaled_demo_doc(std::int64_t nodes) {
  auto doc = nlohmann::json::parse(scenario::demo_scenario_text());
  auto& groups = doc["cluster"]["node_groups"];
  std::int64_t demo_total = 0;
  for (const auto& g : groups) demo_total += g["count"].get<std::int64_t>();
  std::int64_t made = 0;
  for (std::size_t i = 0; i < groups.size(); ++i) {
    const std::int64_t c = i + 1 == groups.size() ? nodes - made : groups[i]["count"].get<std::int64_t>() * nodes / demo_total;
    groups[i]["count"] = c;
    made += c;
  }
  return doc;
}

}  // namespace gpusched::bench
