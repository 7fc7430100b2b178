#include <gpusched/dra/device.hpp>

#include <algorithm>

namespace gpusched::dra {

std::string_view type_name(const AttributeValue& v) {
  switch (v.index()) {
    case 0: return "bool";
    case 1: return "int";
    case 2: return "string";
    default: return "version";
  }
}

bool same_value(const AttributeValue& a, const AttributeValue& b) {
  if (a.index() != b.index()) return false;
  if (const auto* x = std::get_if<Semver>(&a)) return x->text() == std::get<Semver>(b).text();
  return a == b;
}

namespace {
template <class V>
const V* find_named(const std::vector<std::pair<std::string, V>>& list, std::string_view name) {
  const auto it = std::lower_bound(list.begin(), list.end(), name, [](const auto& e, std::string_view n) { return e.first < n; });
  return it != list.end() && it->first == name ? &it->second : nullptr;
}
}  // namespace

const AttributeValue* Device::attribute(std::string_view qualified) const { return find_named(attributes, qualified); }
const Quantity* Device::capacity_of(std::string_view qualified) const { return find_named(capacity, qualified); }

void Device::sort() {
  auto by_name = [](const auto& a, const auto& b) { return a.first < b.first; };
  std::stable_sort(attributes.begin(), attributes.end(), by_name);
  std::stable_sort(capacity.begin(), capacity.end(), by_name);
}

std::string qualify(std::string_view name, std::string_view driver) {
  if (name.find('/') != std::string_view::npos) return std::string(name);
  return std::string(driver) + "/" + std::string(name);
}

}  // namespace gpusched::dra
