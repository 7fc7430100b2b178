#pragma once
/// CompactString: an immutable string in one pointer (8 bytes), for the text fields of a job
/// that most jobs leave empty (an app label, a priority class, a MIG profile, a claim template).
/// std::string takes 32 bytes even when empty; a million jobs carry several such fields, and a
/// 1M-job replay keeps every JobSpec (issue 14: under 1 GB).
///
/// Empty is a null pointer (no allocation). A non-empty value is one heap block shared by its
/// copies (an atomic count, as std::shared_ptr's), so copying a job copies no text. Values never
/// change in place: assigning makes a new block. Compared and ordered by content.
///
/// It reads as a `const std::string&` (implicit), so most code that read the std::string field
/// compiles unchanged; where a template needs the string itself, call str(). A temporary
/// CompactString does not convert (its block may die with it): copy its text with str().
///
/// Example:
///   CompactString app = "web";          // one allocation
///   CompactString copy = app;           // no allocation: shares it
///   const std::string& s = copy;        // "web"
///   if (app == "web" && !app.empty()) ...
#include <atomic>
#include <compare>
#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>

namespace gpusched {

class CompactString {
 public:
  CompactString() noexcept = default;
  CompactString(std::string_view s) { assign(s); }                   // NOLINT: implicit, as std::string's
  CompactString(const std::string& s) { assign(s); }                 // NOLINT
  CompactString(const char* s) { assign(s == nullptr ? std::string_view() : std::string_view(s)); }   // NOLINT
  CompactString(const CompactString& o) noexcept : p_(o.p_) {
    if (p_ != nullptr) p_->refs.fetch_add(1, std::memory_order_relaxed);
  }
  CompactString(CompactString&& o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
  CompactString& operator=(const CompactString& o) noexcept {
    CompactString copy(o);
    swap(copy);
    return *this;
  }
  CompactString& operator=(CompactString&& o) noexcept {
    CompactString moved(std::move(o));
    swap(moved);
    return *this;
  }
  CompactString& operator=(std::string_view s) { return *this = CompactString(s); }
  CompactString& operator=(const std::string& s) { return *this = CompactString(s); }
  CompactString& operator=(const char* s) { return *this = CompactString(s); }
  ~CompactString() { release(); }

  void swap(CompactString& o) noexcept { std::swap(p_, o.p_); }

  // The text lives as long as a CompactString holding it, so only an lvalue hands out a
  // reference or a view: `const std::string& s = job().constraints.app;` (a temporary's field)
  // would dangle, where a std::string field had its life extended; it does not compile. A
  // temporary's text is copied out with str().
  [[nodiscard]] const std::string& str() const& noexcept { return p_ != nullptr ? p_->text : empty_string(); }
  [[nodiscard]] std::string str() && { return std::as_const(*this).str(); }
  operator const std::string&() const& noexcept { return str(); }           // NOLINT: implicit by design
  operator const std::string&() && = delete;
  operator std::string_view() const& noexcept { return str(); }             // NOLINT
  operator std::string_view() && = delete;
  [[nodiscard]] bool empty() const noexcept { return p_ == nullptr; }
  [[nodiscard]] std::size_t size() const noexcept { return str().size(); }
  [[nodiscard]] const char* data() const noexcept { return str().data(); }
  [[nodiscard]] const char* c_str() const noexcept { return str().c_str(); }
  void clear() noexcept {
    release();
    p_ = nullptr;
  }

  friend bool operator==(const CompactString& a, const CompactString& b) noexcept {
    return a.p_ == b.p_ || a.str() == b.str();
  }
  friend bool operator==(const CompactString& a, const std::string& b) noexcept { return a.str() == b; }
  friend bool operator==(const CompactString& a, std::string_view b) noexcept { return a.str() == b; }
  friend bool operator==(const CompactString& a, const char* b) noexcept { return a.str() == b; }
  friend std::strong_ordering operator<=>(const CompactString& a, const CompactString& b) noexcept {
    return a.str() <=> b.str();
  }
  friend std::strong_ordering operator<=>(const CompactString& a, const std::string& b) noexcept { return a.str() <=> b; }
  friend std::strong_ordering operator<=>(const CompactString& a, std::string_view b) noexcept {
    return std::string_view(a.str()) <=> b;
  }
  friend std::string operator+(const CompactString& a, const std::string& b) { return a.str() + b; }
  friend std::string operator+(const std::string& a, const CompactString& b) { return a + b.str(); }
  friend std::string operator+(const CompactString& a, const char* b) { return a.str() + b; }
  friend std::string operator+(const char* a, const CompactString& b) { return a + b.str(); }

 private:
  struct Rep {
    std::atomic<std::size_t> refs{1};
    std::string text;
  };
  static const std::string& empty_string() noexcept {
    static const std::string kEmpty;
    return kEmpty;
  }
  void assign(std::string_view s) {
    if (!s.empty()) p_ = new Rep{1, std::string(s)};
  }
  void release() noexcept {
    if (p_ != nullptr && p_->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete p_;
  }

  Rep* p_ = nullptr;
};

/// Equal texts sharing one block: for a reader that fills the same field of many jobs (an app
/// per job in the Philly and Alibaba traces), each distinct text is allocated once. Belongs to one
/// reader; not thread-safe.
class CompactStringPool {
 public:
  [[nodiscard]] CompactString get(std::string_view s) {
    if (s.empty()) return {};
    auto it = texts_.find(s);
    if (it == texts_.end()) it = texts_.emplace(std::string(s), CompactString(s)).first;
    return it->second;
  }

 private:
  std::map<std::string, CompactString, std::less<>> texts_;
};

}  // namespace gpusched

template <>
struct std::hash<gpusched::CompactString> {
  std::size_t operator()(const gpusched::CompactString& s) const noexcept { return std::hash<std::string>{}(s.str()); }
};
