#pragma once
/// UTF-8 checks for text read from files: names in traces must be valid UTF-8 (JSON outputs and
/// Python strings need it), and error messages that quote input must stay valid UTF-8.
///
/// Example: `if (auto bad = invalid_utf8_at(name)) throw_error(..., "invalid UTF-8 at byte " + ...);`
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace gpusched {

/// Offset of the first byte that does not begin a well-formed UTF-8 sequence (RFC 3629: no
/// overlong forms, no surrogates, nothing above U+10FFFF), or nullopt when `s` is valid. O(n).
[[nodiscard]] std::optional<std::size_t> invalid_utf8_at(std::string_view s) noexcept;

/// True when `s` is well-formed UTF-8.
[[nodiscard]] inline bool is_valid_utf8(std::string_view s) noexcept { return !invalid_utf8_at(s).has_value(); }

/// `s` with every byte that is not part of a well-formed UTF-8 sequence written as `\xNN`
/// (valid text comes back unchanged). Used for messages that quote input.
[[nodiscard]] std::string printable_utf8(std::string_view s);

/// "invalid UTF-8 (byte 0xC3 at position 4)" for the first bad byte of `s`; "" when `s` is valid.
[[nodiscard]] std::string describe_invalid_utf8(std::string_view s);

}  // namespace gpusched
