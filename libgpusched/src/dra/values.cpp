#include <gpusched/dra/values.hpp>

#include <algorithm>
#include <cctype>
#include <limits>

namespace gpusched::dra {
namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

/// A decimal number without sign or leading zeros ("0" alone allowed), below 2^64.
std::optional<std::uint64_t> numeric(std::string_view s) {
  if (s.empty() || s.size() > 20 || !std::all_of(s.begin(), s.end(), is_digit)) return std::nullopt;
  if (s.size() > 1 && s[0] == '0') return std::nullopt;
  unsigned __int128 v = 0;
  for (char c : s) v = v * 10 + static_cast<unsigned>(c - '0');
  if (v > std::numeric_limits<std::uint64_t>::max()) return std::nullopt;
  return static_cast<std::uint64_t>(v);
}

bool identifier_chars(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-';
  });
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  for (;;) {
    const auto at = s.find(sep);
    out.push_back(s.substr(0, at));
    if (at == std::string_view::npos) return out;
    s.remove_prefix(at + 1);
  }
}

}  // namespace

std::optional<Semver> Semver::parse(std::string_view text) {
  Semver v;
  v.text_ = std::string(text);
  std::string_view core = text;
  std::string_view pre, build;
  bool has_pre = false, has_build = false;
  if (const auto plus = core.find('+'); plus != std::string_view::npos) {
    build = core.substr(plus + 1);
    core = core.substr(0, plus);
    has_build = true;
  }
  if (const auto dash = core.find('-'); dash != std::string_view::npos) {
    pre = core.substr(dash + 1);
    core = core.substr(0, dash);
    has_pre = true;
  }
  const auto parts = split(core, '.');
  if (parts.size() != 3) return std::nullopt;
  const auto a = numeric(parts[0]), b = numeric(parts[1]), c = numeric(parts[2]);
  if (!a || !b || !c) return std::nullopt;
  v.major_ = *a;
  v.minor_ = *b;
  v.patch_ = *c;
  if (has_pre) {
    for (auto id : split(pre, '.')) {
      if (!identifier_chars(id)) return std::nullopt;
      // A numeric identifier has no leading zeros.
      if (std::all_of(id.begin(), id.end(), is_digit) && id.size() > 1 && id[0] == '0') return std::nullopt;
      v.pre_.emplace_back(id);
    }
  }
  if (has_build) {
    for (auto id : split(build, '.')) {
      if (!identifier_chars(id)) return std::nullopt;
    }
  }
  return v;
}

std::optional<Semver> Semver::parse_normalized(std::string_view text) {
  std::string_view s = text;
  if (!s.empty() && s[0] == 'v') s.remove_prefix(1);
  std::string_view rest;
  const auto tail = s.find_first_of("-+");
  if (tail != std::string_view::npos) {
    rest = s.substr(tail);
    s = s.substr(0, tail);
  }
  auto parts = split(s, '.');
  if (parts.empty() || parts.size() > 3) return std::nullopt;
  // Kubernetes' normalizeAndParse: a short version cannot carry pre-release or build metadata.
  if (parts.size() < 3 && !rest.empty()) return std::nullopt;
  std::string core;
  for (std::size_t i = 0; i < 3; ++i) {
    std::string_view p = i < parts.size() ? parts[i] : std::string_view("0");
    while (p.size() > 1 && p[0] == '0') p.remove_prefix(1);
    if (i > 0) core.push_back('.');
    core.append(p);
  }
  core.append(rest);
  auto v = parse(core);
  if (v) v->text_ = std::string(text);
  return v;
}

int Semver::compare(const Semver& o) const {
  auto cmp = [](auto x, auto y) { return x < y ? -1 : x > y ? 1 : 0; };
  if (int c = cmp(major_, o.major_)) return c;
  if (int c = cmp(minor_, o.minor_)) return c;
  if (int c = cmp(patch_, o.patch_)) return c;
  if (pre_.empty() || o.pre_.empty()) return pre_.empty() == o.pre_.empty() ? 0 : (pre_.empty() ? 1 : -1);
  for (std::size_t i = 0; i < std::min(pre_.size(), o.pre_.size()); ++i) {
    const auto& x = pre_[i];
    const auto& y = o.pre_[i];
    const bool xn = std::all_of(x.begin(), x.end(), is_digit), yn = std::all_of(y.begin(), y.end(), is_digit);
    if (xn && yn) {
      if (int c = cmp(x.size(), y.size())) return c;   // no leading zeros: longer is larger
      if (int c = cmp(x, y)) return c;
    } else if (xn != yn) {
      return xn ? -1 : 1;   // numeric identifiers have lower precedence
    } else if (int c = cmp(x, y)) {
      return c;
    }
  }
  return cmp(pre_.size(), o.pre_.size());
}

namespace {
constexpr __int128 ten_to(int e) {
  __int128 r = 1;
  for (int i = 0; i < e; ++i) r *= 10;
  return r;
}
constexpr __int128 kLimit = ten_to(38);   // nanos: 10^29 units

}  // namespace

std::optional<Quantity> Quantity::parse(std::string_view s) {
  if (s.empty() || s.size() > 64) return std::nullopt;
  bool negative = false;
  if (s[0] == '+' || s[0] == '-') {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  std::size_t i = 0;
  std::string digits;   // all significant digits, integer then fraction
  int fraction = 0;
  bool any = false, dot = false;
  for (; i < s.size(); ++i) {
    const char c = s[i];
    if (is_digit(c)) {
      any = true;
      if (digits.empty() && c == '0' && !dot) continue;   // leading zeros
      digits += c;
      if (dot) ++fraction;
    } else if (c == '.' && !dot) {
      dot = true;
    } else {
      break;
    }
  }
  if (!any || digits.size() > 36) return std::nullopt;
  std::string_view suffix = s.substr(i);
  int exp10 = 0;      // value = digits x 10^(exp10 - fraction) x 2^exp2
  int exp2 = 0;
  if (suffix.empty()) {
  } else if (suffix.size() == 2 && suffix[1] == 'i') {
    const std::string_view bin = "KMGTPE";
    const auto k = bin.find(suffix[0]);
    if (k == std::string_view::npos) return std::nullopt;
    exp2 = 10 * static_cast<int>(k + 1);
  } else if ((suffix[0] == 'e' || suffix[0] == 'E') && suffix.size() > 1) {
    std::string_view e = suffix.substr(1);
    bool neg = false;
    if (e[0] == '+' || e[0] == '-') {
      neg = e[0] == '-';
      e.remove_prefix(1);
    }
    if (e.empty() || e.size() > 3 || !std::all_of(e.begin(), e.end(), is_digit)) return std::nullopt;
    int v = 0;
    for (char c : e) v = v * 10 + (c - '0');
    exp10 = neg ? -v : v;
  } else if (suffix.size() == 1) {
    switch (suffix[0]) {
      case 'n': exp10 = -9; break;
      case 'u': exp10 = -6; break;
      case 'm': exp10 = -3; break;
      case 'k': exp10 = 3; break;
      case 'M': exp10 = 6; break;
      case 'G': exp10 = 9; break;
      case 'T': exp10 = 12; break;
      case 'P': exp10 = 15; break;
      case 'E': exp10 = 18; break;
      default: return std::nullopt;
    }
  } else {
    return std::nullopt;
  }
  // nanos = digits x 10^(exp10 - fraction + 9) x 2^exp2, its magnitude rounded up when finer
  // than 1n (Kubernetes rounds away from zero: -1.5n is -2n), after the binary multiplier.
  const int scale = exp10 - fraction + 9;
  __int128 n = 0;
  if (!digits.empty()) {
    __int128 whole = 0;
    for (char ch : digits) whole = whole * 10 + (ch - '0');
    if (scale >= 0) {
      if (scale > 38 || whole > kLimit / ten_to(scale)) return std::nullopt;
      n = whole * ten_to(scale);
      for (int k = 0; k < exp2; ++k) {
        if (n > kLimit / 2) return std::nullopt;
        n *= 2;
      }
    } else {
      if (-scale > 38) {
        n = 1;   // far below 1n: rounds up to 1n
      } else {
        const __int128 div = ten_to(-scale);
        __int128 q = whole / div, r = whole % div;
        for (int k = 0; k < exp2; ++k) {
          if (q > kLimit / 2 || r > kLimit / 2) return std::nullopt;
          q *= 2;
          r *= 2;
          q += r / div;
          r %= div;
        }
        n = q + (r != 0 ? 1 : 0);
      }
    }
  }
  if (n > kLimit) return std::nullopt;
  return Quantity(negative ? -n : n);
}

std::optional<std::int64_t> Quantity::as_integer() const {
  if (!is_integer()) return std::nullopt;
  const __int128 v = nanos_ / kNanosPerUnit;
  if (v > std::numeric_limits<std::int64_t>::max() || v < std::numeric_limits<std::int64_t>::min()) return std::nullopt;
  return static_cast<std::int64_t>(v);
}

double Quantity::as_double() const {
  return static_cast<double>(nanos_ / kNanosPerUnit) + static_cast<double>(nanos_ % kNanosPerUnit) / 1e9;
}

std::optional<Quantity> Quantity::plus(const Quantity& o) const {
  const __int128 r = nanos_ + o.nanos_;
  if (r > kLimit || r < -kLimit) return std::nullopt;
  return Quantity(r);
}

std::string Quantity::to_string() const {
  const bool neg = nanos_ < 0;
  unsigned __int128 m = static_cast<unsigned __int128>(neg ? -nanos_ : nanos_);
  unsigned __int128 whole = m / static_cast<unsigned __int128>(kNanosPerUnit);
  unsigned __int128 frac = m % static_cast<unsigned __int128>(kNanosPerUnit);
  std::string w;
  do {
    w += static_cast<char>('0' + static_cast<int>(whole % 10));
    whole /= 10;
  } while (whole != 0);
  std::reverse(w.begin(), w.end());
  std::string out = (neg ? "-" : "") + w;
  if (frac != 0) {
    std::string f(9, '0');
    for (int k = 8; k >= 0; --k) {
      f[static_cast<std::size_t>(k)] = static_cast<char>('0' + static_cast<int>(frac % 10));
      frac /= 10;
    }
    while (!f.empty() && f.back() == '0') f.pop_back();
    out += "." + f;
  }
  return out;
}

std::string Quantity::to_kubernetes_string() const {
  const auto whole = as_integer();
  if (!whole || *whole <= 0) return to_string();
  static constexpr const char* kSuffix[] = {"Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
  std::int64_t v = *whole;
  int k = -1;
  while (k < 5 && v % 1024 == 0) {
    v /= 1024;
    ++k;
  }
  std::string out = std::to_string(v);
  if (k >= 0) out.append(kSuffix[k]);
  return out;
}

}  // namespace gpusched::dra
