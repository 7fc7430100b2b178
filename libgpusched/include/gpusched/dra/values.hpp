#pragma once
/// The scalar types of Kubernetes Dynamic Resource Allocation (resource.k8s.io), held exactly:
/// a device attribute's version (semantic versioning 2.0.0) and a device capacity's quantity
/// (a Kubernetes resource.Quantity). Both compare as the API server's CEL libraries do
/// (k8s.io/apiserver/pkg/cel/library semver.go and quantity.go).
#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpusched::dra {

/// A semantic version ("1.2.3-rc.1+build.5"). Ordering follows semver.org 2.0.0 section 11:
/// major, minor and patch numerically, a pre-release below its release, pre-release identifiers
/// left to right (numeric ones numerically and below alphanumeric ones); build metadata is kept
/// but ignored by comparisons (and so by ==).
class Semver {
 public:
  /// Strict semver 2.0.0 (no leading "v", all three numbers, no leading zeros); nullopt otherwise.
  static std::optional<Semver> parse(std::string_view text);
  /// CEL's semver(text, true): a leading "v" dropped, missing minor/patch taken as 0 and leading
  /// zeros dropped before the strict parse.
  static std::optional<Semver> parse_normalized(std::string_view text);

  [[nodiscard]] std::uint64_t major() const { return major_; }
  [[nodiscard]] std::uint64_t minor() const { return minor_; }
  [[nodiscard]] std::uint64_t patch() const { return patch_; }
  [[nodiscard]] const std::string& text() const { return text_; }
  /// -1, 0 or 1.
  [[nodiscard]] int compare(const Semver& other) const;
  friend bool operator==(const Semver& a, const Semver& b) { return a.compare(b) == 0; }

 private:
  std::uint64_t major_ = 0, minor_ = 0, patch_ = 0;
  std::vector<std::string> pre_;   // pre-release identifiers
  std::string text_;               // as given
};

/// A Kubernetes quantity ("80Gi", "500m", "1.5", "2e3") held exactly in nano units (10^-9) as a
/// 128-bit integer, so comparisons never round. Suffixes: binary Ki Mi Gi Ti Pi Ei, decimal
/// n u m k M G T P E, or an exponent (e/E followed by a signed integer). A fraction finer than
/// 1n rounds up, as Kubernetes does.
class Quantity {
 public:
  Quantity() = default;
  /// nullopt when `text` is not a quantity or its magnitude is beyond 10^29.
  static std::optional<Quantity> parse(std::string_view text);
  static Quantity from_int(std::int64_t v) { return Quantity(static_cast<__int128>(v) * kNanosPerUnit); }

  [[nodiscard]] __int128 nanos() const { return nanos_; }
  [[nodiscard]] bool is_integer() const { return nanos_ % kNanosPerUnit == 0; }
  /// The value as an int64 when it is an integer in range; nullopt otherwise.
  [[nodiscard]] std::optional<std::int64_t> as_integer() const;
  [[nodiscard]] double as_double() const;
  [[nodiscard]] int sign() const { return nanos_ > 0 ? 1 : nanos_ < 0 ? -1 : 0; }
  /// nullopt on overflow (beyond 10^29).
  [[nodiscard]] std::optional<Quantity> plus(const Quantity& o) const;
  [[nodiscard]] Quantity negated() const { return Quantity(-nanos_); }
  /// A canonical text: an integer when whole ("85899345920"), else a decimal ("0.5").
  [[nodiscard]] std::string to_string() const;
  /// As kubectl prints a binary quantity: whole multiples of 1024 with the largest exact suffix
  /// ("80Gi", "81559Mi"), anything else as to_string().
  [[nodiscard]] std::string to_kubernetes_string() const;
  friend auto operator<=>(const Quantity& a, const Quantity& b) { return a.nanos_ <=> b.nanos_; }
  friend bool operator==(const Quantity& a, const Quantity& b) { return a.nanos_ == b.nanos_; }

  static constexpr __int128 kNanosPerUnit = 1'000'000'000;

 private:
  explicit Quantity(__int128 n) : nanos_(n) {}
  __int128 nanos_ = 0;
};

}  // namespace gpusched::dra
