#pragma once
/// The raw Pod objects of a `kubectl get pods -o json` snapshot, for what the importer does not
/// keep (annotations, images, UIDs): whatif's --as-gpu-mem and the extender's UID map.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include <gpusched/json_input.hpp>

namespace gpusched::scenario {

/// Calls fn(object, "namespace/name") for each item of the list (or the single object) that has
/// a metadata.name; the namespace defaults to "default", as the importer names jobs. The file
/// has been read and checked by the importer already: malformed items are skipped.
template <class Fn>
void for_each_pod_object(const std::filesystem::path& pods, Fn&& fn) {
  std::ifstream in(pods, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  const auto doc = parse_json(text.str(), pods.string(), kTraceJsonErrors);
  const auto visit = [&](const nlohmann::json& item) {
    if (!item.is_object() || !item.contains("metadata") || !item["metadata"].is_object()) return;
    const auto& meta = item["metadata"];
    if (!meta.contains("name") || !meta["name"].is_string()) return;
    const std::string ns = meta.contains("namespace") && meta["namespace"].is_string() ? meta["namespace"].get<std::string>() : "default";
    fn(item, ns + "/" + meta["name"].get<std::string>());
  };
  if (doc.contains("items") && doc["items"].is_array()) {
    for (const auto& item : doc["items"]) visit(item);
  } else {
    visit(doc);
  }
}

}  // namespace gpusched::scenario
