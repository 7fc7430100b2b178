#include <gpusched/utf8.hpp>

#include <cstdint>

namespace gpusched {
namespace {

/// Length of the well-formed UTF-8 sequence starting at s[i], or 0 when it is not one.
std::size_t sequence_length(std::string_view s, std::size_t i) noexcept {
  const auto b = [&](std::size_t k) { return static_cast<std::uint8_t>(s[k]); };
  const std::uint8_t c = b(i);
  if (c < 0x80) return 1;
  std::size_t n = 0;
  std::uint8_t lo = 0x80, hi = 0xBF;   // allowed range of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;   // no overlong forms
    if (c == 0xED) hi = 0x9F;   // no UTF-16 surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;   // no overlong forms
    if (c == 0xF4) hi = 0x8F;   // nothing above U+10FFFF
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  if (b(i + 1) < lo || b(i + 1) > hi) return 0;
  for (std::size_t k = 2; k < n; ++k) {
    if (b(i + k) < 0x80 || b(i + k) > 0xBF) return 0;
  }
  return n;
}

}  // namespace

std::optional<std::size_t> invalid_utf8_at(std::string_view s) noexcept {
  std::size_t i = 0;
  while (i < s.size()) {
    if (static_cast<std::uint8_t>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    const std::size_t n = sequence_length(s, i);
    if (n == 0) return i;
    i += n;
  }
  return std::nullopt;
}

std::string printable_utf8(std::string_view s) {
  if (is_valid_utf8(s)) return std::string(s);
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size() + 16);
  std::size_t i = 0;
  while (i < s.size()) {
    const std::size_t n = sequence_length(s, i);
    if (n == 0) {
      const auto c = static_cast<std::uint8_t>(s[i]);
      out.append("\\x");
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 0xF]);
      ++i;
    } else {
      out.append(s.substr(i, n));
      i += n;
    }
  }
  return out;
}

std::string describe_invalid_utf8(std::string_view s) {
  const auto at = invalid_utf8_at(s);
  if (!at) return {};
  static constexpr char kHex[] = "0123456789ABCDEF";
  const auto c = static_cast<std::uint8_t>(s[*at]);
  std::string out = "invalid UTF-8 (byte 0x";
  out.push_back(kHex[c >> 4]);
  out.push_back(kHex[c & 0xF]);
  out.append(" at position ").append(std::to_string(*at + 1)).append(")");
  return out;
}

}  // namespace gpusched
