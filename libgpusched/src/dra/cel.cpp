// gpusched's CEL subset for DRA selectors (see gpusched/dra/cel.hpp for what it accepts): a
// lexer, a precedence-climbing parser into a small tree, and a tree-walking evaluator whose
// values carry CEL's errors as values (so `&&` and `||` can absorb them as CEL does).
#include <gpusched/dra/cel.hpp>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <variant>
#include <vector>

#include <re2/re2.h>

#include <gpusched/dra/device.hpp>

namespace gpusched::dra {
namespace detail {

// ------------------------------------------------------------------------------------ values

struct ErrorV {
  std::string message;
};
struct NullV {
  friend bool operator==(NullV, NullV) { return true; }
};
struct Value;
using List = std::shared_ptr<const std::vector<Value>>;
/// `device`, `device.attributes`, `device.capacity`, and one domain of either.
struct DeviceV {
  const Device* device;
  std::string_view driver;
};
struct DomainsV {
  const Device* device;
  std::string_view driver;
  bool capacity;
};
struct DomainV {
  const Device* device;
  bool capacity;
  std::string domain;
};
struct Value {
  std::variant<NullV, bool, std::int64_t, std::uint64_t, double, std::string, Semver, Quantity, List, DeviceV, DomainsV, DomainV, ErrorV> v;
  template <class T>
  [[nodiscard]] bool is() const {
    return std::holds_alternative<T>(v);
  }
  template <class T>
  [[nodiscard]] const T& as() const {
    return std::get<T>(v);
  }
};

Value error(std::string message) { return Value{ErrorV{std::move(message)}}; }

std::string_view kind_name(const Value& x) {
  switch (x.v.index()) {
    case 0: return "null_type";
    case 1: return "bool";
    case 2: return "int";
    case 3: return "uint";
    case 4: return "double";
    case 5: return "string";
    case 6: return "Semver";
    case 7: return "Quantity";
    case 8: return "list";
    case 9: return "device";
    default: return "map";
  }
}

Value no_overload(std::string_view fn, std::initializer_list<const Value*> args) {
  std::string m = "no matching overload for '" + std::string(fn) + "' applied to '(";
  bool first = true;
  for (const Value* a : args) {
    m += (first ? "" : ", ") + std::string(kind_name(*a));
    first = false;
  }
  return error(m + ")'");
}

// -------------------------------------------------------------------------------------- tree

enum class Op : std::uint8_t {
  kLiteral, kIdent, kSelect, kHas, kIndex, kCall, kList, kNot, kNeg, kAnd, kOr, kCond,
  kEq, kNe, kLt, kLe, kGt, kGe, kIn, kAdd, kSub, kMul, kDiv, kMod, kComprehension,
};
enum class Macro : std::uint8_t { kAll, kExists, kExistsOne, kFilter, kMap };

}  // namespace detail

struct detail::CelNode {
  Op op = Op::kLiteral;
  Value literal;
  std::string name;                 // identifier, field, function, or a comprehension's variable
  bool member = false;              // a call on a target (children[0])
  Macro macro = Macro::kAll;
  std::vector<std::shared_ptr<const CelNode>> children;
  std::shared_ptr<const re2::RE2> regex;     // matches() with a literal pattern, compiled once
  std::size_t column = 0;
};

namespace detail {
namespace {

using NodeP = std::shared_ptr<const CelNode>;

// ------------------------------------------------------------------------------------- lexer

enum class Tok : std::uint8_t { kEnd, kInt, kUint, kDouble, kString, kIdent, kPunct };
struct Token {
  Tok kind = Tok::kEnd;
  std::string text;     // identifier, punctuation, or a string literal's value
  std::int64_t i = 0;
  std::uint64_t u = 0;
  double d = 0;
  bool int_min_magnitude = false;   // 9223372036854775808: valid only after unary minus
  std::size_t column = 0;
};

[[noreturn]] void fail(const std::string& message, std::size_t column) { throw CelError(message, column); }

bool ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool ident_char(char c) { return ident_start(c) || (c >= '0' && c <= '9'); }

void append_utf8(std::string& out, std::uint32_t cp, std::size_t column) {
  if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) fail("invalid code point in string escape", column);
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

std::vector<Token> lex(std::string_view s) {
  std::vector<Token> out;
  std::size_t i = 0;
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  while (i < s.size()) {
    const char c = s[i];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      ++i;
      continue;
    }
    if (c == '/' && i + 1 < s.size() && s[i + 1] == '/') {   // a comment to the end of the line
      while (i < s.size() && s[i] != '\n') ++i;
      continue;
    }
    Token t;
    t.column = i + 1;
    const bool raw = (c == 'r' || c == 'R') && i + 1 < s.size() && (s[i + 1] == '"' || s[i + 1] == '\'');
    if ((c == 'b' || c == 'B') && i + 1 < s.size() && (s[i + 1] == '"' || s[i + 1] == '\'')) {
      fail("bytes literals are not supported", t.column);
    }
    if (c == '"' || c == '\'' || raw) {
      if (raw) ++i;
      const char q = s[i];
      const bool triple = i + 2 < s.size() && s[i + 1] == q && s[i + 2] == q;
      i += triple ? 3 : 1;
      std::string v;
      for (;;) {
        if (i >= s.size()) fail("unterminated string literal", t.column);
        if (triple ? (i + 2 < s.size() && s[i] == q && s[i + 1] == q && s[i + 2] == q) : s[i] == q) break;
        if (!triple && (s[i] == '\n' || s[i] == '\r')) fail("newline in string literal", i + 1);
        if (s[i] == '\\' && !raw) {
          if (i + 1 >= s.size()) fail("unterminated string literal", t.column);
          const char e = s[i + 1];
          i += 2;
          switch (e) {
            case 'n': v += '\n'; break;
            case 't': v += '\t'; break;
            case 'r': v += '\r'; break;
            case 'a': v += '\a'; break;
            case 'b': v += '\b'; break;
            case 'f': v += '\f'; break;
            case 'v': v += '\v'; break;
            case '\\': v += '\\'; break;
            case '\'': v += '\''; break;
            case '"': v += '"'; break;
            case '`': v += '`'; break;
            case '?': v += '?'; break;
            case 'x': case 'X': case 'u': case 'U': {
              const int n = (e == 'x' || e == 'X') ? 2 : e == 'u' ? 4 : 8;
              std::uint32_t cp = 0;
              for (int k = 0; k < n; ++k) {
                if (i >= s.size() || hex(s[i]) < 0) fail("bad hexadecimal escape", i + 1);
                cp = cp * 16 + static_cast<std::uint32_t>(hex(s[i++]));
              }
              append_utf8(v, cp, t.column);
              break;
            }
            default:
              if (e >= '0' && e <= '3') {   // \ooo
                std::uint32_t cp = static_cast<std::uint32_t>(e - '0');
                for (int k = 0; k < 2; ++k) {
                  if (i >= s.size() || s[i] < '0' || s[i] > '7') fail("bad octal escape", i + 1);
                  cp = cp * 8 + static_cast<std::uint32_t>(s[i++] - '0');
                }
                append_utf8(v, cp, t.column);
              } else {
                fail(std::string("unknown escape '\\") + e + "'", i - 1);
              }
          }
          continue;
        }
        v += s[i++];
      }
      i += triple ? 3 : 1;
      t.kind = Tok::kString;
      t.text = std::move(v);
      out.push_back(std::move(t));
      continue;
    }
    if ((c >= '0' && c <= '9') || (c == '.' && i + 1 < s.size() && s[i + 1] >= '0' && s[i + 1] <= '9')) {
      std::size_t j = i;
      if (c == '0' && j + 1 < s.size() && (s[j + 1] == 'x' || s[j + 1] == 'X')) {
        j += 2;
        unsigned __int128 v = 0;
        const std::size_t start = j;
        while (j < s.size() && hex(s[j]) >= 0) {
          v = v * 16 + static_cast<unsigned>(hex(s[j++]));
          if (v > std::numeric_limits<std::uint64_t>::max()) fail("integer literal out of range", t.column);
        }
        if (j == start) fail("bad hexadecimal literal", t.column);
        if (j < s.size() && (s[j] == 'u' || s[j] == 'U')) {
          ++j;
          t.kind = Tok::kUint;
          t.u = static_cast<std::uint64_t>(v);
        } else {
          if (v > static_cast<unsigned __int128>(std::numeric_limits<std::int64_t>::max())) fail("integer literal out of range", t.column);
          t.kind = Tok::kInt;
          t.i = static_cast<std::int64_t>(v);
        }
      } else {
        while (j < s.size() && s[j] >= '0' && s[j] <= '9') ++j;
        bool is_double = false;
        if (j + 1 < s.size() && s[j] == '.' && s[j + 1] >= '0' && s[j + 1] <= '9') {
          is_double = true;
          ++j;
          while (j < s.size() && s[j] >= '0' && s[j] <= '9') ++j;
        }
        if (j < s.size() && (s[j] == 'e' || s[j] == 'E')) {
          std::size_t k = j + 1;
          if (k < s.size() && (s[k] == '+' || s[k] == '-')) ++k;
          if (k < s.size() && s[k] >= '0' && s[k] <= '9') {
            is_double = true;
            j = k;
            while (j < s.size() && s[j] >= '0' && s[j] <= '9') ++j;
          }
        }
        const std::string num(s.substr(i, j - i));
        if (is_double) {
          t.kind = Tok::kDouble;
          t.d = std::strtod(num.c_str(), nullptr);
          if (!std::isfinite(t.d)) fail("double literal out of range", t.column);
        } else {
          unsigned __int128 v = 0;
          for (char d : num) {
            v = v * 10 + static_cast<unsigned>(d - '0');
            if (v > std::numeric_limits<std::uint64_t>::max()) fail("integer literal out of range", t.column);
          }
          if (j < s.size() && (s[j] == 'u' || s[j] == 'U')) {
            ++j;
            t.kind = Tok::kUint;
            t.u = static_cast<std::uint64_t>(v);
          } else {
            t.kind = Tok::kInt;
            if (v == static_cast<unsigned __int128>(std::numeric_limits<std::int64_t>::max()) + 1) {
              t.int_min_magnitude = true;
            } else if (v > static_cast<unsigned __int128>(std::numeric_limits<std::int64_t>::max())) {
              fail("integer literal out of range", t.column);
            } else {
              t.i = static_cast<std::int64_t>(v);
            }
          }
        }
      }
      if (j < s.size() && ident_char(s[j])) fail("bad number literal", t.column);
      i = j;
      out.push_back(std::move(t));
      continue;
    }
    if (ident_start(c)) {
      std::size_t j = i;
      while (j < s.size() && ident_char(s[j])) ++j;
      t.kind = Tok::kIdent;
      t.text = std::string(s.substr(i, j - i));
      i = j;
      out.push_back(std::move(t));
      continue;
    }
    static constexpr std::string_view kTwo[] = {"==", "!=", "<=", ">=", "&&", "||"};
    t.kind = Tok::kPunct;
    bool two = false;
    for (auto p : kTwo) {
      if (s.substr(i, 2) == p) {
        t.text = std::string(p);
        two = true;
      }
    }
    if (!two) {
      if (std::string_view("<>!?:.,()[]{}+-*/%").find(c) == std::string_view::npos) {
        fail(std::string("unexpected character '") + c + "'", t.column);
      }
      t.text = std::string(1, c);
    }
    i += t.text.size();
    out.push_back(std::move(t));
  }
  Token end;
  end.column = s.size() + 1;
  out.push_back(end);
  return out;
}

// ------------------------------------------------------------------------------------ parser

constexpr int kMaxDepth = 100;
constexpr int kMaxTreeDepth = 500;

struct Arity {
  std::string_view name;
  int min, max;
  bool global, member;
};
// The functions of the subset: name, arguments (besides a member call's target), and how it is called.
constexpr Arity kFunctions[] = {
    {"size", 0, 1, true, true},          {"int", 1, 1, true, false},          {"uint", 1, 1, true, false},
    {"double", 1, 1, true, false},       {"string", 1, 1, true, false},       {"bool", 1, 1, true, false},
    {"contains", 1, 1, false, true},     {"startsWith", 1, 1, false, true},   {"endsWith", 1, 1, false, true},
    {"matches", 1, 2, true, true},       {"lowerAscii", 0, 0, false, true},   {"upperAscii", 0, 0, false, true},
    {"trim", 0, 0, false, true},         {"indexOf", 1, 2, false, true},      {"lastIndexOf", 1, 2, false, true},
    {"charAt", 1, 1, false, true},       {"substring", 1, 2, false, true},    {"replace", 2, 3, false, true},
    {"split", 1, 2, false, true},        {"join", 0, 1, false, true},         {"semver", 1, 2, true, false},
    {"isSemver", 1, 2, true, false},     {"major", 0, 0, false, true},        {"minor", 0, 0, false, true},
    {"patch", 0, 0, false, true},        {"compareTo", 1, 1, false, true},    {"isGreaterThan", 1, 1, false, true},
    {"isLessThan", 1, 1, false, true},   {"quantity", 1, 1, true, false},     {"isQuantity", 1, 1, true, false},
    {"asInteger", 0, 0, false, true},    {"asApproximateFloat", 0, 0, false, true}, {"isInteger", 0, 0, false, true},
    {"sign", 1, 1, true, false},         {"add", 1, 1, false, true},          {"sub", 1, 1, false, true},
};

std::string supported_functions() {
  std::string out;
  for (const auto& f : kFunctions) out += (out.empty() ? "" : ", ") + std::string(f.name);
  return out + ", and the macros has, all, exists, exists_one, filter, map";
}

class Parser {
 public:
  explicit Parser(std::vector<Token> toks) : t_(std::move(toks)) {}

  NodeP parse() {
    NodeP e = expr();
    if (peek().kind != Tok::kEnd) fail("unexpected '" + describe(peek()) + "'", peek().column);
    // Chains of binary operators parse in loops but nest in the tree, which is evaluated
    // recursively: bound its depth (without recursing here).
    std::vector<std::pair<const CelNode*, int>> stack{{e.get(), 1}};
    while (!stack.empty()) {
      const auto [n, d] = stack.back();
      stack.pop_back();
      if (d > kMaxTreeDepth) fail("expression nested more than " + std::to_string(kMaxTreeDepth) + " levels (long chains of operators count)", n->column);
      for (const auto& c : n->children) stack.emplace_back(c.get(), d + 1);
    }
    return e;
  }

 private:
  std::vector<Token> t_;
  std::size_t at_ = 0;
  int depth_ = 0;
  std::vector<std::string> vars_{"device"};

  const Token& peek() const { return t_[at_]; }
  static std::string describe(const Token& t) { return t.kind == Tok::kEnd ? "end of expression" : t.text.empty() ? "literal" : t.text; }
  bool is(std::string_view p) const { return peek().kind == Tok::kPunct && peek().text == p; }
  bool accept(std::string_view p) {
    if (!is(p)) return false;
    ++at_;
    return true;
  }
  void expect(std::string_view p) {
    if (!accept(p)) fail("expected '" + std::string(p) + "', found '" + describe(peek()) + "'", peek().column);
  }

  struct Depth {
    Parser& p;
    explicit Depth(Parser& q) : p(q) {
      if (++p.depth_ > kMaxDepth) fail("expression nested more than " + std::to_string(kMaxDepth) + " levels", p.peek().column);
    }
    ~Depth() { --p.depth_; }
  };

  static NodeP node(Op op, std::size_t column, std::vector<NodeP> children = {}) {
    auto n = std::make_shared<CelNode>();
    n->op = op;
    n->column = column;
    n->children = std::move(children);
    return n;
  }

  NodeP expr() {
    Depth d(*this);
    NodeP c = or_expr();
    if (is("?")) {
      const auto col = peek().column;
      ++at_;
      NodeP a = expr();
      expect(":");
      NodeP b = expr();
      return node(Op::kCond, col, {c, a, b});
    }
    return c;
  }
  /// `a op b op c ...` as a balanced tree (as cel-go builds && and || chains): a long chain nests
  /// log2(n) deep, not n deep. Operands keep their order, which && and || do not depend on.
  static NodeP balanced(Op op, const std::vector<NodeP>& terms, const std::vector<std::size_t>& columns, std::size_t lo, std::size_t hi) {
    if (hi - lo == 1) return terms[lo];
    const std::size_t mid = lo + (hi - lo) / 2;
    return node(op, columns[mid - 1], {balanced(op, terms, columns, lo, mid), balanced(op, terms, columns, mid, hi)});
  }
  NodeP chain(Op op, std::string_view token, NodeP (Parser::*operand)()) {
    std::vector<NodeP> terms{(this->*operand)()};
    std::vector<std::size_t> columns;
    while (is(token)) {
      columns.push_back(peek().column);
      ++at_;
      terms.push_back((this->*operand)());
    }
    return balanced(op, terms, columns, 0, terms.size());
  }
  NodeP or_expr() { return chain(Op::kOr, "||", &Parser::and_expr); }
  NodeP and_expr() { return chain(Op::kAnd, "&&", &Parser::relation); }
  NodeP relation() {
    NodeP l = addition();
    for (;;) {
      const auto col = peek().column;
      Op op;
      if (is("==")) op = Op::kEq;
      else if (is("!=")) op = Op::kNe;
      else if (is("<")) op = Op::kLt;
      else if (is("<=")) op = Op::kLe;
      else if (is(">")) op = Op::kGt;
      else if (is(">=")) op = Op::kGe;
      else if (peek().kind == Tok::kIdent && peek().text == "in") op = Op::kIn;
      else return l;
      ++at_;
      l = node(op, col, {l, addition()});
    }
  }
  NodeP addition() {
    NodeP l = multiplication();
    for (;;) {
      const auto col = peek().column;
      if (accept("+")) l = node(Op::kAdd, col, {l, multiplication()});
      else if (accept("-")) l = node(Op::kSub, col, {l, multiplication()});
      else return l;
    }
  }
  NodeP multiplication() {
    NodeP l = unary();
    for (;;) {
      const auto col = peek().column;
      if (accept("*")) l = node(Op::kMul, col, {l, unary()});
      else if (accept("/")) l = node(Op::kDiv, col, {l, unary()});
      else if (accept("%")) l = node(Op::kMod, col, {l, unary()});
      else return l;
    }
  }
  NodeP unary() {
    Depth d(*this);
    const auto col = peek().column;
    if (accept("!")) return node(Op::kNot, col, {unary()});
    if (is("-")) {
      ++at_;
      if (peek().kind == Tok::kInt && peek().int_min_magnitude) {   // -9223372036854775808
        ++at_;
        auto n = node(Op::kLiteral, col);
        std::const_pointer_cast<CelNode>(n)->literal = Value{std::numeric_limits<std::int64_t>::min()};
        return member(n);
      }
      return node(Op::kNeg, col, {unary()});
    }
    return member(primary());
  }

  std::vector<NodeP> arguments() {   // after '('
    std::vector<NodeP> args;
    if (accept(")")) return args;
    for (;;) {
      args.push_back(expr());
      if (accept(")")) return args;
      expect(",");
    }
  }

  static const Arity* function(std::string_view name) {
    for (const auto& f : kFunctions) {
      if (f.name == name) return &f;
    }
    return nullptr;
  }

  NodeP call(std::string name, std::size_t col, NodeP target, std::vector<NodeP> args) {
    const Arity* f = function(name);
    const bool member_call = target != nullptr;
    if (f == nullptr || (member_call ? !f->member : !f->global)) {
      fail("undeclared reference to '" + name + "'" + (member_call ? " (as a method)" : "") +
               " (gpusched's CEL subset supports " + supported_functions() + ")",
           col);
    }
    const int n = static_cast<int>(args.size());
    if (n < f->min || n > f->max) {
      fail("'" + name + "' takes " + (f->min == f->max ? std::to_string(f->min) : std::to_string(f->min) + " to " + std::to_string(f->max)) +
               " argument(s), got " + std::to_string(n),
           col);
    }
    if (!member_call && name == "size" && n != 1) fail("'size' takes 1 argument, got " + std::to_string(n), col);
    if (!member_call && name == "matches" && n != 2) fail("'matches' takes 2 arguments, got " + std::to_string(n), col);
    if (member_call && name == "matches" && n != 1) fail("'matches' takes 1 argument, got " + std::to_string(n), col);
    auto out = std::make_shared<CelNode>();
    out->op = Op::kCall;
    out->name = std::move(name);
    out->column = col;
    out->member = member_call;
    if (member_call) out->children.push_back(std::move(target));
    for (auto& a : args) out->children.push_back(std::move(a));
    if (out->name == "matches") {   // a literal pattern is compiled (and checked) now
      const NodeP& pattern = out->children.back();
      if (pattern->op == Op::kLiteral && pattern->literal.is<std::string>()) {
        auto re = std::make_shared<const re2::RE2>(pattern->literal.as<std::string>(), re2::RE2::Quiet);
        if (!re->ok()) fail("invalid regular expression '" + pattern->literal.as<std::string>() + "': " + re->error(), pattern->column);
        out->regex = std::move(re);
      }
    }
    return out;
  }

  NodeP macro(Macro m, std::size_t col, NodeP target) {   // after "name("
    if (peek().kind != Tok::kIdent) fail("a macro's first argument must be a variable name", peek().column);
    std::string var = peek().text;
    if (var == "device") fail("'device' cannot be a macro variable", peek().column);
    ++at_;
    expect(",");
    if (peek().kind == Tok::kIdent && at_ + 1 < t_.size() && t_[at_ + 1].kind == Tok::kPunct && t_[at_ + 1].text == ",") {
      fail("two-variable comprehensions are not supported in gpusched's CEL subset (docs/dra.md)", peek().column);
    }
    vars_.push_back(var);
    std::vector<NodeP> parts;
    parts.reserve(3);
    parts.push_back(std::move(target));
    parts.push_back(expr());
    if (m == Macro::kMap && accept(",")) parts.push_back(expr());   // map(x, predicate, transform)
    vars_.pop_back();
    expect(")");
    auto out = std::make_shared<CelNode>();
    out->op = Op::kComprehension;
    out->macro = m;
    out->name = std::move(var);
    out->column = col;
    out->children = std::move(parts);
    return out;
  }

  NodeP member(NodeP e) {
    for (;;) {
      const auto col = peek().column;
      if (accept(".")) {
        if (is("?")) fail("optional field selection (.?) is not supported in gpusched's CEL subset: use has() (docs/dra.md)", col);
        if (peek().kind != Tok::kIdent) fail("expected a field or method name after '.'", peek().column);
        std::string name = peek().text;
        ++at_;
        if (accept("(")) {
          static const std::pair<std::string_view, Macro> kMacros[] = {
              {"all", Macro::kAll}, {"exists", Macro::kExists}, {"exists_one", Macro::kExistsOne}, {"filter", Macro::kFilter}, {"map", Macro::kMap}};
          bool done = false;
          for (const auto& [mname, m] : kMacros) {
            if (name == mname) {
              e = macro(m, col, e);
              done = true;
              break;
            }
          }
          if (!done) e = call(std::move(name), col, e, arguments());
        } else {
          if (e->op == Op::kIdent && e->name == "device" && name != "driver" && name != "attributes" && name != "capacity") {
            fail("undefined field '" + name + "' (a device has driver, attributes and capacity)", col);
          }
          auto n = std::make_shared<CelNode>();
          n->op = Op::kSelect;
          n->name = std::move(name);
          n->column = col;
          n->children = {e};
          e = n;
        }
      } else if (accept("[")) {
        if (e->op == Op::kIdent && e->name == "device") fail("a device is not a map: use device.driver, device.attributes or device.capacity", col);
        NodeP key = expr();
        expect("]");
        e = node(Op::kIndex, col, {e, key});
      } else {
        return e;
      }
    }
  }

  NodeP primary() {
    Depth d(*this);
    const Token& t = peek();
    const auto col = t.column;
    auto literal = [&](Value v) {
      ++at_;
      auto n = std::make_shared<CelNode>();
      n->op = Op::kLiteral;
      n->literal = std::move(v);
      n->column = col;
      return NodeP(n);
    };
    switch (t.kind) {
      case Tok::kInt:
        if (t.int_min_magnitude) fail("integer literal out of range", col);
        return literal(Value{t.i});
      case Tok::kUint: return literal(Value{t.u});
      case Tok::kDouble: return literal(Value{t.d});
      case Tok::kString: return literal(Value{t.text});
      case Tok::kEnd: fail("unexpected end of expression", col);
      case Tok::kIdent: {
        if (t.text == "true") return literal(Value{true});
        if (t.text == "false") return literal(Value{false});
        if (t.text == "null") return literal(Value{NullV{}});
        std::string name = t.text;
        ++at_;
        if (name == "cel" && is(".")) fail("cel.bind and the other cel.* macros are not supported in gpusched's CEL subset (docs/dra.md)", col);
        if (name == "optional" && is(".")) fail("optional values are not supported in gpusched's CEL subset (docs/dra.md)", col);
        if (accept("(")) {
          if (name == "has") {
            NodeP arg = expr();
            expect(")");
            if (arg->op != Op::kSelect) fail("has() needs a field selection, as in has(device.attributes[\"d\"].id)", col);
            auto n = std::make_shared<CelNode>(*arg);
            n->op = Op::kHas;
            return n;
          }
          return call(std::move(name), col, nullptr, arguments());
        }
        if (std::find(vars_.begin(), vars_.end(), name) == vars_.end()) {
          fail("undeclared reference to '" + name + "' (the selector's variable is 'device')", col);
        }
        auto n = std::make_shared<CelNode>();
        n->op = Op::kIdent;
        n->name = std::move(name);
        n->column = col;
        return n;
      }
      case Tok::kPunct:
        if (accept("(")) {
          NodeP e = expr();
          expect(")");
          return e;
        }
        if (accept("[")) {
          std::vector<NodeP> items;
          if (!accept("]")) {
            for (;;) {
              items.push_back(expr());
              if (accept("]")) break;
              expect(",");
              if (accept("]")) break;   // a trailing comma
            }
          }
          return node(Op::kList, col, std::move(items));
        }
        if (is("{")) fail("map literals are not supported", col);
        if (is(".")) fail("qualified names are not supported", col);
        fail("unexpected '" + t.text + "'", col);
    }
    fail("unexpected token", col);
  }
};

// --------------------------------------------------------------------------------- evaluator

/// Kubernetes stops a selector whose evaluation costs more than CELSelectorExpressionMaxCost
/// (10^6). gpusched counts one unit per expression node evaluated (each element of a macro
/// counts its body again), not cel-go's cost model: near the limit the two may disagree, but no
/// selector runs unbounded.
constexpr std::uint64_t kMaxCost = 1'000'000;
struct CostExceeded {};

struct Env {
  const Device* device;
  std::string_view driver;
  std::vector<std::pair<std::string_view, Value>> vars;
  std::uint64_t cost = 0;
};

Value eval(const CelNode& n, Env& env);

std::optional<int> numeric_compare(const Value& a, const Value& b) {
  // CEL's cross-type numeric comparisons: int, uint and double compare by value.
  auto as_double = [](const Value& x) -> std::optional<long double> {
    if (x.is<std::int64_t>()) return static_cast<long double>(x.as<std::int64_t>());
    if (x.is<std::uint64_t>()) return static_cast<long double>(x.as<std::uint64_t>());
    if (x.is<double>()) return static_cast<long double>(x.as<double>());
    return std::nullopt;
  };
  if (a.is<std::int64_t>() && b.is<std::int64_t>()) return a.as<std::int64_t>() < b.as<std::int64_t>() ? -1 : a.as<std::int64_t>() > b.as<std::int64_t>() ? 1 : 0;
  if (a.is<std::uint64_t>() && b.is<std::uint64_t>()) return a.as<std::uint64_t>() < b.as<std::uint64_t>() ? -1 : a.as<std::uint64_t>() > b.as<std::uint64_t>() ? 1 : 0;
  if (a.is<std::int64_t>() && b.is<std::uint64_t>()) {
    if (a.as<std::int64_t>() < 0) return -1;
    const auto x = static_cast<std::uint64_t>(a.as<std::int64_t>());
    return x < b.as<std::uint64_t>() ? -1 : x > b.as<std::uint64_t>() ? 1 : 0;
  }
  if (a.is<std::uint64_t>() && b.is<std::int64_t>()) {
    const auto r = numeric_compare(b, a);
    return r ? std::optional<int>(-*r) : std::nullopt;
  }
  const auto x = as_double(a), y = as_double(b);
  if (!x || !y) return std::nullopt;
  if (std::isnan(static_cast<double>(*x)) || std::isnan(static_cast<double>(*y))) return 2;   // unordered
  return *x < *y ? -1 : *x > *y ? 1 : 0;
}

/// CEL equality (heterogeneous: values of different types are unequal, numbers compare by value).
/// nullopt: an error value on either side.
std::optional<bool> equal(const Value& a, const Value& b) {
  if (a.is<ErrorV>() || b.is<ErrorV>()) return std::nullopt;
  if (const auto c = numeric_compare(a, b)) return *c == 0;
  if (a.v.index() != b.v.index()) return false;
  if (a.is<NullV>()) return true;
  if (a.is<bool>()) return a.as<bool>() == b.as<bool>();
  if (a.is<std::string>()) return a.as<std::string>() == b.as<std::string>();
  if (a.is<Semver>()) return a.as<Semver>() == b.as<Semver>();
  if (a.is<Quantity>()) return a.as<Quantity>() == b.as<Quantity>();
  if (a.is<List>()) {
    const auto& x = *a.as<List>();
    const auto& y = *b.as<List>();
    if (x.size() != y.size()) return false;
    for (std::size_t i = 0; i < x.size(); ++i) {
      const auto e = equal(x[i], y[i]);
      if (!e) return std::nullopt;
      if (!*e) return false;
    }
    return true;
  }
  if (a.is<DomainV>()) {
    const auto& x = a.as<DomainV>();
    const auto& y = b.as<DomainV>();
    return x.device == y.device && x.capacity == y.capacity && x.domain == y.domain;
  }
  return false;   // devices and attribute maps: compared by identity only in this subset
}

Value attribute_value(const AttributeValue& a) {
  return std::visit([](const auto& x) { return Value{x}; }, a);
}

/// The domains of a device's attributes or capacities, in name order, each once.
std::vector<std::string_view> domains_of(const Device& d, bool capacity) {
  std::vector<std::string_view> out;
  auto add = [&](std::string_view qualified) {
    const auto slash = qualified.find('/');
    const auto dom = qualified.substr(0, slash);
    if (out.empty() || out.back() != dom) out.push_back(dom);
  };
  if (capacity) {
    for (const auto& [k, v] : d.capacity) add(k);
  } else {
    for (const auto& [k, v] : d.attributes) add(k);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

/// m[key] for the map-like values; `test_only`: has() (returns bool).
Value lookup(const Value& m, const Value& key, bool test_only) {
  if (m.is<ErrorV>()) return m;
  if (key.is<ErrorV>()) return key;
  if (m.is<DeviceV>()) {
    const auto& d = m.as<DeviceV>();
    if (!key.is<std::string>()) return error("no such key");
    const auto& k = key.as<std::string>();
    if (test_only) return Value{k == "driver" || k == "attributes" || k == "capacity"};
    if (k == "driver") return Value{std::string(d.driver)};
    if (k == "attributes") return Value{DomainsV{d.device, d.driver, false}};
    if (k == "capacity") return Value{DomainsV{d.device, d.driver, true}};
    return error("no such key: " + k);
  }
  if (m.is<DomainsV>()) {
    const auto& d = m.as<DomainsV>();
    if (!key.is<std::string>()) return error("no such key");
    const auto& k = key.as<std::string>();
    const auto doms = domains_of(*d.device, d.capacity);
    const bool present = std::binary_search(doms.begin(), doms.end(), std::string_view(k));
    if (test_only) return Value{present};
    // Kubernetes gives every domain a map, empty when the device has nothing in it, so a
    // selector for another driver's attribute fails with "no such key" on the id, not the domain.
    return Value{DomainV{d.device, d.capacity, k}};
  }
  if (m.is<DomainV>()) {
    const auto& d = m.as<DomainV>();
    if (!key.is<std::string>()) return error("no such key");
    const std::string q = d.domain + "/" + key.as<std::string>();
    if (d.capacity) {
      const Quantity* c = d.device->capacity_of(q);
      if (test_only) return Value{c != nullptr};
      if (c == nullptr) return error("no such key: " + key.as<std::string>());
      return Value{*c};
    }
    const AttributeValue* a = d.device->attribute(q);
    if (test_only) return Value{a != nullptr};
    if (a == nullptr) return error("no such key: " + key.as<std::string>());
    return attribute_value(*a);
  }
  if (m.is<List>()) {
    if (test_only) return error("has() applies to maps and messages");
    const auto& l = *m.as<List>();
    std::optional<std::int64_t> i;
    if (key.is<std::int64_t>()) i = key.as<std::int64_t>();
    else if (key.is<std::uint64_t>() && key.as<std::uint64_t>() <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) i = static_cast<std::int64_t>(key.as<std::uint64_t>());
    else if (key.is<double>() && std::floor(key.as<double>()) == key.as<double>() && std::abs(key.as<double>()) < 1e18) i = static_cast<std::int64_t>(key.as<double>());
    if (!i) return no_overload("_[_]", {&m, &key});
    if (*i < 0 || static_cast<std::size_t>(*i) >= l.size()) return error("index out of range: " + std::to_string(*i));
    return l[static_cast<std::size_t>(*i)];
  }
  return no_overload(test_only ? "has" : "_[_]", {&m, &key});
}

/// The elements a macro iterates: a list's items, or a map's keys.
std::optional<std::vector<Value>> iteration(const Value& target) {
  if (target.is<List>()) return *target.as<List>();
  std::vector<Value> keys;
  if (target.is<DomainsV>()) {
    for (auto d : domains_of(*target.as<DomainsV>().device, target.as<DomainsV>().capacity)) keys.push_back(Value{std::string(d)});
    return keys;
  }
  if (target.is<DomainV>()) {
    const auto& d = target.as<DomainV>();
    const std::string prefix = d.domain + "/";
    auto add = [&](const std::string& qualified) {
      if (qualified.compare(0, prefix.size(), prefix) == 0) keys.push_back(Value{qualified.substr(prefix.size())});
    };
    if (d.capacity) {
      for (const auto& [k, v] : d.device->capacity) add(k);
    } else {
      for (const auto& [k, v] : d.device->attributes) add(k);
    }
    return keys;
  }
  return std::nullopt;   // a device is an object, not a map
}

Value as_bool_or_error(const Value& v, std::string_view op) {
  if (v.is<bool>() || v.is<ErrorV>()) return v;
  return no_overload(op, {&v});
}

Value int_arith(Op op, std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  switch (op) {
    case Op::kAdd: if (__builtin_add_overflow(a, b, &r)) return error("integer overflow"); return Value{r};
    case Op::kSub: if (__builtin_sub_overflow(a, b, &r)) return error("integer overflow"); return Value{r};
    case Op::kMul: if (__builtin_mul_overflow(a, b, &r)) return error("integer overflow"); return Value{r};
    case Op::kDiv:
      if (b == 0) return error("division by zero");
      if (a == std::numeric_limits<std::int64_t>::min() && b == -1) return error("integer overflow");
      return Value{a / b};
    default:
      if (b == 0) return error("modulus by zero");
      if (a == std::numeric_limits<std::int64_t>::min() && b == -1) return error("integer overflow");
      return Value{a % b};
  }
}

Value uint_arith(Op op, std::uint64_t a, std::uint64_t b) {
  std::uint64_t r = 0;
  switch (op) {
    case Op::kAdd: if (__builtin_add_overflow(a, b, &r)) return error("unsigned integer overflow"); return Value{r};
    case Op::kSub: if (__builtin_sub_overflow(a, b, &r)) return error("unsigned integer overflow"); return Value{r};
    case Op::kMul: if (__builtin_mul_overflow(a, b, &r)) return error("unsigned integer overflow"); return Value{r};
    case Op::kDiv: if (b == 0) return error("division by zero"); return Value{a / b};
    default: if (b == 0) return error("modulus by zero"); return Value{a % b};
  }
}

std::string_view op_name(Op op) {
  switch (op) {
    case Op::kAdd: return "_+_";
    case Op::kSub: return "_-_";
    case Op::kMul: return "_*_";
    case Op::kDiv: return "_/_";
    case Op::kMod: return "_%_";
    case Op::kLt: return "_<_";
    case Op::kLe: return "_<=_";
    case Op::kGt: return "_>_";
    case Op::kGe: return "_>=_";
    default: return "_?_";
  }
}

Value arith(Op op, const Value& a, const Value& b) {
  if (a.is<ErrorV>()) return a;
  if (b.is<ErrorV>()) return b;
  if (a.is<std::int64_t>() && b.is<std::int64_t>()) return int_arith(op, a.as<std::int64_t>(), b.as<std::int64_t>());
  if (a.is<std::uint64_t>() && b.is<std::uint64_t>()) return uint_arith(op, a.as<std::uint64_t>(), b.as<std::uint64_t>());
  if (a.is<double>() && b.is<double>() && op != Op::kMod) {
    const double x = a.as<double>(), y = b.as<double>();
    return Value{op == Op::kAdd ? x + y : op == Op::kSub ? x - y : op == Op::kMul ? x * y : x / y};
  }
  if (op == Op::kAdd && a.is<std::string>() && b.is<std::string>()) return Value{a.as<std::string>() + b.as<std::string>()};
  if (op == Op::kAdd && a.is<List>() && b.is<List>()) {
    auto out = std::make_shared<std::vector<Value>>(*a.as<List>());
    out->insert(out->end(), b.as<List>()->begin(), b.as<List>()->end());
    return Value{List(std::move(out))};
  }
  return no_overload(op_name(op), {&a, &b});
}

Value compare(Op op, const Value& a, const Value& b) {
  if (a.is<ErrorV>()) return a;
  if (b.is<ErrorV>()) return b;
  std::optional<int> c = numeric_compare(a, b);
  if (!c) {
    if (a.is<std::string>() && b.is<std::string>()) c = a.as<std::string>().compare(b.as<std::string>());
    else if (a.is<bool>() && b.is<bool>()) c = static_cast<int>(a.as<bool>()) - static_cast<int>(b.as<bool>());
    else return no_overload(op_name(op), {&a, &b});
  }
  if (*c == 2) return Value{false};   // NaN
  const int s = *c < 0 ? -1 : *c > 0 ? 1 : 0;
  switch (op) {
    case Op::kLt: return Value{s < 0};
    case Op::kLe: return Value{s <= 0};
    case Op::kGt: return Value{s > 0};
    default: return Value{s >= 0};
  }
}

std::optional<std::int64_t> to_int(const Value& x) {
  if (x.is<std::int64_t>()) return x.as<std::int64_t>();
  return std::nullopt;
}

Value string_index(const std::string& s, std::int64_t i) {
  // CEL indexes strings by code point.
  std::vector<std::size_t> starts;
  for (std::size_t k = 0; k < s.size(); ++k) {
    if ((static_cast<unsigned char>(s[k]) & 0xC0) != 0x80) starts.push_back(k);
  }
  if (i < 0 || static_cast<std::size_t>(i) > starts.size()) return error("index out of range: " + std::to_string(i));
  return Value{static_cast<std::int64_t>(static_cast<std::size_t>(i) == starts.size() ? s.size() : starts[static_cast<std::size_t>(i)])};
}

std::int64_t code_points(std::string_view s) {
  std::int64_t n = 0;
  for (char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80 ? 1 : 0;
  return n;
}

std::int64_t code_point_index(const std::string& s, std::size_t byte) { return code_points(std::string_view(s).substr(0, byte)); }

Value call(const CelNode& n, Env& env) {
  std::vector<Value> a;
  a.reserve(n.children.size());
  for (const auto& c : n.children) {
    a.push_back(eval(*c, env));
    if (a.back().is<ErrorV>()) return a.back();
  }
  const std::string& f = n.name;
  const Value& x = a[0];
  auto args_of = [&](std::size_t from) {
    std::vector<const Value*> p;
    for (std::size_t i = from; i < a.size(); ++i) p.push_back(&a[i]);
    return p;
  };
  auto overload = [&]() {
    std::string m = "no matching overload for '" + f + "' applied to '";
    if (n.member) m += std::string(kind_name(a[0])) + ".";
    m += "(";
    const auto p = args_of(n.member ? 1 : 0);
    for (std::size_t i = 0; i < p.size(); ++i) m += (i ? ", " : "") + std::string(kind_name(*p[i]));
    return error(m + ")'");
  };
  const bool str = x.is<std::string>();
  if (f == "size") {
    if (str) return Value{code_points(x.as<std::string>())};
    if (x.is<List>()) return Value{static_cast<std::int64_t>(x.as<List>()->size())};
    if (auto keys = iteration(x); keys && !x.is<List>()) return Value{static_cast<std::int64_t>(keys->size())};
    return overload();
  }
  if (!n.member) {
    if (f == "int") {
      if (x.is<std::int64_t>()) return x;
      if (x.is<std::uint64_t>()) {
        if (x.as<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) return error("integer overflow");
        return Value{static_cast<std::int64_t>(x.as<std::uint64_t>())};
      }
      if (x.is<double>()) {
        const double d = x.as<double>();
        if (!(d > -9.223372036854775808e18 && d < 9.223372036854775807e18)) return error("integer overflow");
        return Value{static_cast<std::int64_t>(d)};
      }
      if (str) {
        const auto& s = x.as<std::string>();
        std::int64_t v = 0;
        std::size_t k = 0;
        const bool neg = !s.empty() && s[0] == '-';
        if (neg || (!s.empty() && s[0] == '+')) k = 1;
        if (k >= s.size()) return error("cannot convert '" + s + "' to int");
        for (; k < s.size(); ++k) {
          if (s[k] < '0' || s[k] > '9') return error("cannot convert '" + s + "' to int");
          if (__builtin_mul_overflow(v, 10, &v) || (neg ? __builtin_sub_overflow(v, s[k] - '0', &v) : __builtin_add_overflow(v, s[k] - '0', &v))) {
            return error("integer overflow");
          }
        }
        return Value{v};
      }
      return overload();
    }
    if (f == "uint") {
      if (x.is<std::uint64_t>()) return x;
      if (x.is<std::int64_t>()) {
        if (x.as<std::int64_t>() < 0) return error("unsigned integer overflow");
        return Value{static_cast<std::uint64_t>(x.as<std::int64_t>())};
      }
      if (x.is<double>()) {
        const double d = x.as<double>();
        if (!(d >= 0 && d < 1.8446744073709552e19)) return error("unsigned integer overflow");
        return Value{static_cast<std::uint64_t>(d)};
      }
      if (str) {
        const std::string& t = x.as<std::string>();
        std::uint64_t v = 0;
        const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
        if (t.empty() || ec != std::errc() || end != t.data() + t.size()) return error("cannot convert '" + t + "' to uint");
        return Value{v};
      }
      return overload();
    }
    if (f == "double") {
      if (x.is<double>()) return x;
      if (x.is<std::int64_t>()) return Value{static_cast<double>(x.as<std::int64_t>())};
      if (x.is<std::uint64_t>()) return Value{static_cast<double>(x.as<std::uint64_t>())};
      if (str) {
        char* end = nullptr;
        const std::string& t = x.as<std::string>();
        const double d = std::strtod(t.c_str(), &end);
        if (t.empty() || *end != '\0' || std::isspace(static_cast<unsigned char>(t[0])) != 0) return error("cannot convert '" + t + "' to double");
        return Value{d};
      }
      return overload();
    }
    if (f == "string") {
      if (str) return x;
      if (x.is<std::int64_t>()) return Value{std::to_string(x.as<std::int64_t>())};
      if (x.is<std::uint64_t>()) return Value{std::to_string(x.as<std::uint64_t>())};
      if (x.is<bool>()) return Value{std::string(x.as<bool>() ? "true" : "false")};
      if (x.is<double>()) {
        char buf[64];
        const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, x.as<double>());
        return Value{std::string(buf, ec == std::errc() ? end : buf)};
      }
      if (x.is<Quantity>()) return Value{x.as<Quantity>().to_string()};
      return overload();
    }
    if (f == "bool") {
      if (x.is<bool>()) return x;
      if (str) {
        static const std::pair<std::string_view, bool> kBools[] = {{"1", true}, {"t", true}, {"T", true}, {"true", true}, {"TRUE", true}, {"True", true},
                                                                   {"0", false}, {"f", false}, {"F", false}, {"false", false}, {"FALSE", false}, {"False", false}};
        for (const auto& [t, b] : kBools) {
          if (x.as<std::string>() == t) return Value{b};
        }
        return error("cannot convert '" + x.as<std::string>() + "' to bool");
      }
      return overload();
    }
    if (f == "semver" || f == "isSemver") {
      if (!str || (a.size() == 2 && !a[1].is<bool>())) return overload();
      const bool normalize = a.size() == 2 && a[1].as<bool>();
      auto v = normalize ? Semver::parse_normalized(x.as<std::string>()) : Semver::parse(x.as<std::string>());
      if (f == "isSemver") return Value{v.has_value()};
      if (!v) return error("could not parse '" + x.as<std::string>() + "' as a semantic version");
      return Value{std::move(*v)};
    }
    if (f == "sign") {
      if (!x.is<Quantity>()) return overload();
      return Value{static_cast<std::int64_t>(x.as<Quantity>().sign())};
    }
    if (f == "quantity" || f == "isQuantity") {
      if (!str) return overload();
      auto q = Quantity::parse(x.as<std::string>());
      if (f == "isQuantity") return Value{q.has_value()};
      if (!q) return error("quantities must match the regular expression of Kubernetes quantities: '" + x.as<std::string>() + "'");
      return Value{*q};
    }
  }
  // Methods (and the global form of matches).
  if (f == "matches") {
    if (!str || !a[1].is<std::string>()) return overload();
    // RE2, as CEL: linear time in the subject, UTF-8 aware, RE2's syntax.
    if (n.regex) return Value{re2::RE2::PartialMatch(x.as<std::string>(), *n.regex)};
    const re2::RE2 re(a[1].as<std::string>(), re2::RE2::Quiet);
    if (!re.ok()) return error("invalid regular expression '" + a[1].as<std::string>() + "': " + re.error());
    return Value{re2::RE2::PartialMatch(x.as<std::string>(), re)};
  }
  if (str) {
    const std::string& s = x.as<std::string>();
    if (f == "contains" || f == "startsWith" || f == "endsWith") {
      if (!a[1].is<std::string>()) return overload();
      const std::string& p = a[1].as<std::string>();
      if (f == "contains") return Value{s.find(p) != std::string::npos};
      if (f == "startsWith") return Value{s.compare(0, p.size(), p) == 0 && s.size() >= p.size()};
      return Value{s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0};
    }
    if (f == "lowerAscii" || f == "upperAscii") {
      std::string out = s;
      for (char& c : out) {
        if (f == "lowerAscii" && c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
        if (f == "upperAscii" && c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
      }
      return Value{out};
    }
    if (f == "trim") {
      const auto b = s.find_first_not_of(" \t\n\r\v\f");
      if (b == std::string::npos) return Value{std::string()};
      return Value{s.substr(b, s.find_last_not_of(" \t\n\r\v\f") - b + 1)};
    }
    if (f == "indexOf" || f == "lastIndexOf") {
      if (!a[1].is<std::string>() || (a.size() == 3 && !a[2].is<std::int64_t>())) return overload();
      const std::string& sub = a[1].as<std::string>();
      const std::int64_t len = code_points(s), sub_len = code_points(sub);
      std::int64_t off = f == "indexOf" ? 0 : len - sub_len;
      if (a.size() == 3) {
        // cel-go (ext/strings.go): an offset must index a character of the string.
        off = a[2].as<std::int64_t>();
        if (off < 0 || off >= len) return error("index out of range: " + std::to_string(off));
        if (f == "lastIndexOf" && off > len - sub_len) off = len - sub_len;
      }
      if (sub_len > len || off < 0) return Value{std::int64_t{-1}};
      const auto from = static_cast<std::size_t>(string_index(s, off).as<std::int64_t>());
      const std::size_t r = f == "indexOf" ? s.find(sub, from) : s.rfind(sub, from);
      return Value{r == std::string::npos ? std::int64_t{-1} : code_point_index(s, r)};
    }
    if (f == "charAt") {
      const auto i = to_int(a[1]);
      if (!i) return overload();
      const Value at = string_index(s, *i);
      if (at.is<ErrorV>()) return at;
      const auto b = static_cast<std::size_t>(at.as<std::int64_t>());
      if (b == s.size()) return Value{std::string()};
      const Value next = string_index(s, *i + 1);
      return Value{s.substr(b, static_cast<std::size_t>(next.as<std::int64_t>()) - b)};
    }
    if (f == "substring") {
      const auto i = to_int(a[1]);
      const auto j = a.size() == 3 ? to_int(a[2]) : std::optional<std::int64_t>(code_points(s));
      if (!i || !j) return overload();
      if (*j < *i) return error("substring: end index before start index");
      const Value b = string_index(s, *i), e = string_index(s, *j);
      if (b.is<ErrorV>()) return b;
      if (e.is<ErrorV>()) return e;
      return Value{s.substr(static_cast<std::size_t>(b.as<std::int64_t>()), static_cast<std::size_t>(e.as<std::int64_t>() - b.as<std::int64_t>()))};
    }
    // The string's code points, as Go's strings package splits on an empty separator.
    auto runes = [&]() {
      std::vector<std::string> out;
      for (std::size_t k = 0; k < s.size();) {
        std::size_t e = k + 1;
        while (e < s.size() && (static_cast<unsigned char>(s[e]) & 0xC0) == 0x80) ++e;
        out.push_back(s.substr(k, e - k));
        k = e;
      }
      return out;
    };
    if (f == "replace") {
      if (!a[1].is<std::string>() || !a[2].is<std::string>() || (a.size() == 4 && !a[3].is<std::int64_t>())) return overload();
      const std::string& from = a[1].as<std::string>();
      const std::string& to = a[2].as<std::string>();
      std::int64_t limit = a.size() == 4 ? a[3].as<std::int64_t>() : -1;
      std::string out;
      if (from.empty()) {   // strings.Replace: `to` before every code point and at the end
        const auto rs = runes();
        for (std::size_t k = 0; k <= rs.size(); ++k) {
          if (limit != 0) {
            out += to;
            --limit;
          }
          if (k < rs.size()) out += rs[k];
        }
        return Value{out};
      }
      std::size_t k = 0;
      while (limit != 0) {
        const std::size_t at = s.find(from, k);
        if (at == std::string::npos) break;
        out += s.substr(k, at - k) + to;
        k = at + from.size();
        --limit;
      }
      out += s.substr(k);
      return Value{out};
    }
    if (f == "split") {
      if (!a[1].is<std::string>() || (a.size() == 3 && !a[2].is<std::int64_t>())) return overload();
      const std::string& sep = a[1].as<std::string>();
      const std::int64_t limit = a.size() == 3 ? a[2].as<std::int64_t>() : -1;
      auto out = std::make_shared<std::vector<Value>>();
      if (limit == 0) return Value{List(out)};
      if (sep.empty()) {   // strings.SplitN(s, "", n): one element per code point, the last takes the rest
        const auto rs = runes();
        for (std::size_t k = 0; k < rs.size(); ++k) {
          if (limit > 0 && static_cast<std::int64_t>(out->size()) == limit - 1) {
            std::string rest;
            for (std::size_t r = k; r < rs.size(); ++r) rest += rs[r];
            out->push_back(Value{rest});
            break;
          }
          out->push_back(Value{rs[k]});
        }
        return Value{List(out)};
      }
      std::size_t k = 0;
      while (limit < 0 || static_cast<std::int64_t>(out->size()) < limit - 1) {
        const std::size_t at = s.find(sep, k);
        if (at == std::string::npos) break;
        out->push_back(Value{s.substr(k, at - k)});
        k = at + sep.size();
      }
      out->push_back(Value{s.substr(k)});
      return Value{List(out)};
    }
  }
  if (f == "join" && x.is<List>()) {
    if (a.size() == 2 && !a[1].is<std::string>()) return overload();
    const std::string sep = a.size() == 2 ? a[1].as<std::string>() : std::string();
    std::string out;
    bool first = true;
    for (const auto& e : *x.as<List>()) {
      if (!e.is<std::string>()) return overload();
      out += (first ? "" : sep) + e.as<std::string>();
      first = false;
    }
    return Value{out};
  }
  if (x.is<Semver>()) {
    const Semver& v = x.as<Semver>();
    if (f == "major") return Value{static_cast<std::int64_t>(v.major())};
    if (f == "minor") return Value{static_cast<std::int64_t>(v.minor())};
    if (f == "patch") return Value{static_cast<std::int64_t>(v.patch())};
    if ((f == "compareTo" || f == "isGreaterThan" || f == "isLessThan") && a[1].is<Semver>()) {
      const int c = v.compare(a[1].as<Semver>());
      if (f == "compareTo") return Value{static_cast<std::int64_t>(c)};
      return Value{f == "isGreaterThan" ? c > 0 : c < 0};
    }
    return overload();
  }
  if (x.is<Quantity>()) {
    const Quantity& q = x.as<Quantity>();
    if (f == "compareTo" || f == "isGreaterThan" || f == "isLessThan") {
      if (!a[1].is<Quantity>()) return overload();
      const auto& o = a[1].as<Quantity>();
      const int c = q < o ? -1 : q > o ? 1 : 0;
      if (f == "compareTo") return Value{static_cast<std::int64_t>(c)};
      return Value{f == "isGreaterThan" ? c > 0 : c < 0};
    }
    if (f == "asInteger") {
      const auto i = q.as_integer();
      if (!i) return error("cannot convert value to integer (it is fractional or out of range)");
      return Value{*i};
    }
    if (f == "asApproximateFloat") return Value{q.as_double()};
    if (f == "isInteger") return Value{q.is_integer() && q.as_integer().has_value()};
    if (f == "add" || f == "sub") {
      std::optional<Quantity> o;
      if (a[1].is<Quantity>()) o = a[1].as<Quantity>();
      else if (a[1].is<std::int64_t>()) o = Quantity::from_int(a[1].as<std::int64_t>());
      else return overload();
      const std::optional<Quantity> r = q.plus(f == "add" ? *o : o->negated());
      if (!r) return error("quantity overflow");
      return Value{*r};
    }
    return overload();
  }
  return overload();
}

Value comprehension(const CelNode& n, Env& env) {
  const Value target = eval(*n.children[0], env);
  if (target.is<ErrorV>()) return target;
  const auto items = iteration(target);
  if (!items) return no_overload(n.macro == Macro::kMap ? "map" : "all", {&target});
  const CelNode& body = *n.children[1];
  env.vars.emplace_back(n.name, Value{});
  struct Pop {
    Env& e;
    ~Pop() { e.vars.pop_back(); }
  } pop{env};
  auto run = [&](const CelNode& expr, const Value& item) {
    env.vars.back().second = item;
    return eval(expr, env);
  };
  switch (n.macro) {
    case Macro::kAll:
    case Macro::kExists: {
      // As CEL's && / || folds: a decisive answer wins over errors met on the way.
      const bool all = n.macro == Macro::kAll;
      std::optional<Value> err;
      for (const auto& item : *items) {
        const Value r = run(body, item);
        if (r.is<bool>()) {
          if (r.as<bool>() != all) return Value{!all};
        } else {
          if (!err) err = r.is<ErrorV>() ? r : no_overload(all ? "all" : "exists", {&r});
        }
      }
      if (err) return *err;
      return Value{all};
    }
    case Macro::kExistsOne: {
      std::int64_t count = 0;
      for (const auto& item : *items) {
        const Value r = run(body, item);
        if (r.is<ErrorV>()) return r;
        if (!r.is<bool>()) return no_overload("exists_one", {&r});
        count += r.as<bool>() ? 1 : 0;
      }
      return Value{count == 1};
    }
    case Macro::kFilter:
    case Macro::kMap: {
      auto out = std::make_shared<std::vector<Value>>();
      const bool filter = n.macro == Macro::kFilter;
      const bool guarded = n.macro == Macro::kMap && n.children.size() == 3;
      for (const auto& item : *items) {
        if (filter || guarded) {
          const Value keep = run(body, item);
          if (keep.is<ErrorV>()) return keep;
          if (!keep.is<bool>()) return no_overload(filter ? "filter" : "map", {&keep});
          if (!keep.as<bool>()) continue;
          if (filter) {
            out->push_back(item);
            continue;
          }
        }
        Value r = run(guarded ? *n.children[2] : body, item);
        if (r.is<ErrorV>()) return r;
        out->push_back(std::move(r));
      }
      return Value{List(out)};
    }
  }
  return error("unknown macro");
}

Value eval(const CelNode& n, Env& env) {
  if (++env.cost > kMaxCost) throw CostExceeded{};
  switch (n.op) {
    case Op::kLiteral: return n.literal;
    case Op::kIdent: {
      for (auto it = env.vars.rbegin(); it != env.vars.rend(); ++it) {
        if (it->first == n.name) return it->second;
      }
      return Value{DeviceV{env.device, env.driver}};   // the parser allows only declared names
    }
    case Op::kSelect: return lookup(eval(*n.children[0], env), Value{n.name}, false);
    case Op::kHas: return lookup(eval(*n.children[0], env), Value{n.name}, true);
    case Op::kIndex: {
      const Value m = eval(*n.children[0], env);
      return lookup(m, eval(*n.children[1], env), false);
    }
    case Op::kCall: return call(n, env);
    case Op::kList: {
      auto out = std::make_shared<std::vector<Value>>();
      for (const auto& c : n.children) {
        out->push_back(eval(*c, env));
        if (out->back().is<ErrorV>()) return out->back();
      }
      return Value{List(out)};
    }
    case Op::kNot: {
      const Value x = eval(*n.children[0], env);
      if (x.is<bool>()) return Value{!x.as<bool>()};
      return as_bool_or_error(x, "!_");
    }
    case Op::kNeg: {
      const Value x = eval(*n.children[0], env);
      if (x.is<std::int64_t>()) {
        if (x.as<std::int64_t>() == std::numeric_limits<std::int64_t>::min()) return error("integer overflow");
        return Value{-x.as<std::int64_t>()};
      }
      if (x.is<double>()) return Value{-x.as<double>()};
      if (x.is<ErrorV>()) return x;
      return no_overload("-_", {&x});
    }
    case Op::kAnd:
    case Op::kOr: {
      // Commutative over errors: a decisive side (false for &&, true for ||) wins.
      const bool decisive = n.op == Op::kOr;
      const std::string_view name = n.op == Op::kAnd ? "_&&_" : "_||_";
      const Value l = as_bool_or_error(eval(*n.children[0], env), name);
      if (l.is<bool>() && l.as<bool>() == decisive) return l;
      const Value r = as_bool_or_error(eval(*n.children[1], env), name);
      if (r.is<bool>() && r.as<bool>() == decisive) return r;
      if (l.is<ErrorV>()) return l;
      if (r.is<ErrorV>()) return r;
      return Value{!decisive};
    }
    case Op::kCond: {
      const Value c = eval(*n.children[0], env);
      if (c.is<ErrorV>()) return c;
      if (!c.is<bool>()) return no_overload("_?_:_", {&c});
      return eval(*n.children[c.as<bool>() ? 1 : 2], env);
    }
    case Op::kEq:
    case Op::kNe: {
      const Value a = eval(*n.children[0], env);
      if (a.is<ErrorV>()) return a;
      const Value b = eval(*n.children[1], env);
      if (b.is<ErrorV>()) return b;
      const auto e = equal(a, b);
      if (!e) return error("error in equality");
      return Value{n.op == Op::kEq ? *e : !*e};
    }
    case Op::kLt:
    case Op::kLe:
    case Op::kGt:
    case Op::kGe: return compare(n.op, eval(*n.children[0], env), eval(*n.children[1], env));
    case Op::kIn: {
      const Value x = eval(*n.children[0], env);
      const Value c = eval(*n.children[1], env);
      if (x.is<ErrorV>()) return x;
      if (c.is<ErrorV>()) return c;
      if (c.is<List>()) {
        for (const auto& e : *c.as<List>()) {
          const auto q = equal(x, e);
          if (q && *q) return Value{true};
        }
        return Value{false};
      }
      if (c.is<DomainsV>() || c.is<DomainV>()) return lookup(c, x, true);
      return no_overload("@in", {&x, &c});
    }
    case Op::kAdd:
    case Op::kSub:
    case Op::kMul:
    case Op::kDiv:
    case Op::kMod: return arith(n.op, eval(*n.children[0], env), eval(*n.children[1], env));
    case Op::kComprehension: return comprehension(n, env);
  }
  return error("unknown expression");
}

}  // namespace
}  // namespace detail

CelExpression CelExpression::compile(std::string_view text) {
  if (text.size() > kMaxLength) {
    throw CelError("the expression is " + std::to_string(text.size()) + " characters long, more than Kubernetes' limit of " +
                       std::to_string(kMaxLength),
                   0);
  }
  if (text.find_first_not_of(" \t\r\n") == std::string_view::npos) throw CelError("the expression is empty", 0);
  detail::Parser p(detail::lex(text));
  CelExpression e;
  e.root_ = p.parse();
  e.text_ = std::string(text);
  const auto& root = *e.root_;
  if (root.op == detail::Op::kLiteral && !root.literal.is<bool>()) {
    throw CelError("the expression must evaluate to bool, not " + std::string(detail::kind_name(root.literal)), 1);
  }
  return e;
}

CelExpression::Result CelExpression::evaluate(const Device& device, std::string_view driver) const {
  detail::Env env{&device, driver, {}, 0};
  detail::Value v;
  try {
    v = detail::eval(*root_, env);
  } catch (const detail::CostExceeded&) {
    return {false, "operation cancelled: actual cost limit exceeded (gpusched counts " + std::to_string(detail::kMaxCost) + " steps)"};
  }
  if (v.is<detail::ErrorV>()) return {false, v.as<detail::ErrorV>().message};
  if (!v.is<bool>()) return {false, "the expression must evaluate to bool, not " + std::string(detail::kind_name(v))};
  return {v.as<bool>(), {}};
}

}  // namespace gpusched::dra
