#pragma once
/// CEL selectors over one DRA device, as DeviceClass and ResourceClaim selectors use them
/// (`device.driver`, `device.attributes["domain"].id`, `device.capacity["domain"].id`).
///
/// gpusched evaluates a documented subset of CEL (docs/dra.md lists it); anything outside it is
/// a compile error naming the column, never a silent wrong answer:
///  - literals: int (decimal, hex), uint (`1u`), double, string (single, double or raw quotes,
///    with escapes), bool, null, lists `[a, b]`;
///  - operators: `! - * / % + - < <= > >= == != in && || ?:` with CEL's precedence; `&&` and `||`
///    are commutative over errors as in CEL (`false && error` is false);
///  - numbers: int and uint arithmetic with overflow errors, double arithmetic, comparisons across
///    int, uint and double;
///  - macros: `has(x.f)`, `l.all(x, p)`, `l.exists(x, p)`, `l.exists_one(x, p)`, `l.filter(x, p)`,
///    `l.map(x, e)` (lists, and the keys of maps);
///  - functions: `size`, `int`, `uint`, `double`, `string`, `bool`; strings `contains`,
///    `startsWith`, `endsWith`, `matches` (ECMAScript regular expressions: RE2's common subset),
///    `lowerAscii`, `upperAscii`, `trim`, `indexOf`, `lastIndexOf`, `charAt`, `substring`,
///    `replace`, `split`; lists `join`;
///  - Kubernetes libraries: `semver(s)`, `semver(s, true)`, `isSemver(s[, true])` and a version's
///    `major() minor() patch() compareTo(v) isGreaterThan(v) isLessThan(v)`; `quantity(s)`,
///    `isQuantity(s)` and a quantity's `compareTo(q) isGreaterThan(q) isLessThan(q) asInteger()
///    asApproximateFloat() isInteger() sign() add(q|int) sub(q|int)`.
/// Errors at evaluation (a missing attribute: "no such key", a type mismatch: "no matching
/// overload", an overflow) are reported, not taken as false: the allocator decides what they mean.
#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

namespace gpusched::dra {

struct Device;

namespace detail {
struct CelNode;
}

/// A selector that gpusched's CEL subset cannot compile: the message says why; `column` is
/// 1-based (0: the expression as a whole).
class CelError : public std::invalid_argument {
 public:
  CelError(const std::string& message, std::size_t column) : std::invalid_argument(message), column_(column) {}
  [[nodiscard]] std::size_t column() const { return column_; }

 private:
  std::size_t column_;
};

class CelExpression {
 public:
  /// Kubernetes' limit on a selector's length (CELSelectorExpressionMaxLength).
  static constexpr std::size_t kMaxLength = 10 * 1024;

  /// Compiles `text`. Throws CelError when it is not CEL, is longer than kMaxLength, nests more
  /// than 100 levels, or uses something outside the subset (an undeclared variable or function,
  /// a map literal, bytes).
  static CelExpression compile(std::string_view text);

  struct Result {
    bool value = false;   ///< the selector's answer (when error is empty)
    std::string error;    ///< a runtime error, or "must evaluate to bool"
  };
  /// Evaluates the expression with `device` (published by `driver`) as the variable `device`.
  [[nodiscard]] Result evaluate(const Device& device, std::string_view driver) const;

  [[nodiscard]] const std::string& text() const { return text_; }

 private:
  std::shared_ptr<const detail::CelNode> root_;
  std::string text_;
};

}  // namespace gpusched::dra
