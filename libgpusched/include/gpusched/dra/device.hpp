#pragma once
/// A DRA device as a ResourceSlice publishes it (resource.k8s.io/v1 Device): a name unique in
/// its pool, typed attributes and capacities. Names of attributes and capacities are stored fully
/// qualified ("gpu.nvidia.com/productName"): an unqualified name in the API belongs to the
/// slice's driver, as Kubernetes reads it.
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include <gpusched/dra/values.hpp>

namespace gpusched::dra {

/// One attribute value: exactly one of bool, int, string, version (DeviceAttribute).
using AttributeValue = std::variant<bool, std::int64_t, std::string, Semver>;

/// "bool", "int", "string" or "version".
[[nodiscard]] std::string_view type_name(const AttributeValue& v);
/// Equal type and value, as a matchAttribute constraint compares them: versions by their exact
/// text (Kubernetes' allocator compares the strings; CEL's == on versions compares precedence).
[[nodiscard]] bool same_value(const AttributeValue& a, const AttributeValue& b);

struct Device {
  std::string name;
  std::vector<std::pair<std::string, AttributeValue>> attributes;   ///< sorted by qualified name
  std::vector<std::pair<std::string, Quantity>> capacity;           ///< sorted by qualified name

  /// The attribute or capacity named `qualified` ("domain/id"), or nullptr.
  [[nodiscard]] const AttributeValue* attribute(std::string_view qualified) const;
  [[nodiscard]] const Quantity* capacity_of(std::string_view qualified) const;
  /// Sorts both lists by name (call after building a device by hand); duplicate names are the
  /// caller's error (the readers reject them).
  void sort();
};

/// "domain/id" for `name` as a slice of `driver` states it: names with a "/" are kept, others
/// get the driver as their domain.
[[nodiscard]] std::string qualify(std::string_view name, std::string_view driver);

}  // namespace gpusched::dra
