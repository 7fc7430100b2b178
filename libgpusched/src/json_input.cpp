#include <gpusched/json_input.hpp>

#include <algorithm>
#include <cstddef>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

#include <gpusched/time.hpp>
#include <gpusched/utf8.hpp>

namespace gpusched {
namespace {

using json = nlohmann::json;

/// Offset of the first '[' or '{' (outside strings) that opens a level deeper than
/// kMaxJsonDepth, if any. A plain scan: it needs no valid JSON and never recurses.
std::optional<std::size_t> too_deep_at(std::string_view text) {
  int depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;   // skip the escaped character (\" does not end the string)
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth) return i;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return std::nullopt;
}

/// Line (counted from `first_line`) and 1-based column (in characters) of byte `offset`.
std::pair<std::int64_t, std::int64_t> line_column(std::string_view text, std::size_t offset, std::int64_t first_line) {
  offset = std::min(offset, text.size());
  std::int64_t line = first_line;
  std::size_t line_start = 0;
  for (std::size_t i = 0; i < offset; ++i) {
    if (text[i] == '\n') {
      ++line;
      line_start = i + 1;
    }
  }
  std::int64_t column = 1;
  for (std::size_t i = line_start; i < offset; ++i) {
    if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) ++column;   // UTF-8 continuation bytes do not count
  }
  return {line, column};
}

/// One JSON pointer token: '~' -> "~0", '/' -> "~1".
std::string pointer_token(std::string_view key) {
  std::string out;
  for (const char c : key) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out += c;
  }
  return out;
}

/// Builds the document from nlohmann's (iterative) SAX parser, refusing to open a level deeper
/// than kMaxJsonDepth and remembering the first error with its byte position.
class Builder {
 public:
  using number_integer_t = json::number_integer_t;
  using number_unsigned_t = json::number_unsigned_t;
  using number_float_t = json::number_float_t;
  using string_t = json::string_t;
  using binary_t = json::binary_t;

  explicit Builder(JsonPathStyle style) : style_(style) {}

  bool null() { return put(json(nullptr)); }
  bool boolean(bool v) { return put(json(v)); }
  bool number_integer(number_integer_t v) { return put(json(v)); }
  bool number_unsigned(number_unsigned_t v) { return put(json(v)); }
  bool number_float(number_float_t v, const string_t& /*text*/) { return put(json(v)); }
  bool string(string_t& v) { return put(json(std::move(v))); }
  bool binary(binary_t& v) { return put(json::binary(std::move(v))); }

  bool start_object(std::size_t /*size*/) { return open(json::object()); }
  bool start_array(std::size_t /*size*/) { return open(json::array()); }
  bool key(string_t& k) {
    levels_.back().key = std::move(k);
    levels_.back().key_pending = true;
    return true;
  }
  bool end_object() { return close(); }
  bool end_array() { return close(); }

  bool parse_error(std::size_t position, const std::string& last_token, const json::exception& ex) {
    error_ = Failure{position, last_token, ex.what(), ex.id, path()};
    return false;
  }

  struct Failure {
    std::size_t position = 0;    ///< bytes read when parsing stopped (the offending byte is the last)
    std::string token;           ///< the token read last
    std::string what;            ///< nlohmann's message
    int id = 0;                  ///< nlohmann's exception id (101 syntax, 406 number overflow, ...)
    std::string path;            ///< the field being read
  };

  [[nodiscard]] const std::optional<Failure>& failure() const { return error_; }
  [[nodiscard]] bool too_deep() const { return too_deep_; }
  /// The first levels of the path where nesting went too deep ("/a/0/b/..."): 256 levels would
  /// make the message unreadable.
  [[nodiscard]] std::string deep_path() const { return path(kDeepPathLevels); }
  json take() { return std::move(root_); }

 private:
  struct Level {
    json* node = nullptr;
    std::string key;            ///< objects: the key of the member being read
    bool key_pending = false;   ///< objects: a key was read and its value not yet
  };

  /// Where `v` goes: the root, the end of the open array, or the open object's pending key.
  json* slot() {
    if (levels_.empty()) return &root_;
    Level& l = levels_.back();
    if (l.node->is_array()) {
      l.node->push_back(nullptr);
      return &l.node->back();
    }
    l.key_pending = false;
    return &(*l.node)[l.key];
  }
  bool put(json v) {
    *slot() = std::move(v);
    return true;
  }
  bool open(json v) {
    if (levels_.size() >= static_cast<std::size_t>(kMaxJsonDepth)) {
      too_deep_ = true;
      return false;
    }
    json* s = slot();
    *s = std::move(v);
    levels_.push_back(Level{s, {}, false});
    return true;
  }
  bool close() {
    levels_.pop_back();
    return true;
  }

  static constexpr std::size_t kDeepPathLevels = 6;

  /// The path of the value being read: "/a/0/b" or "a[0].b"; past `max_levels` levels, "...".
  [[nodiscard]] std::string path(std::size_t max_levels = std::numeric_limits<std::size_t>::max()) const {
    std::string out;
    for (std::size_t i = 0; i < levels_.size(); ++i) {
      if (i == max_levels) {
        out.append(style_ == JsonPathStyle::kPointer ? "/..." : "...");
        break;
      }
      const Level& l = levels_[i];
      const bool last = i + 1 == levels_.size();
      if (l.node->is_array()) {
        // The element being read: the next one at the innermost level, the last one above it.
        const std::size_t n = l.node->size();
        const std::size_t index = last ? n : (n > 0 ? n - 1 : 0);
        if (style_ == JsonPathStyle::kPointer) out.append("/").append(std::to_string(index));
        else out.append("[").append(std::to_string(index)).append("]");
      } else {
        if (last && !l.key_pending) break;   // between members (or inside a key): the object itself
        if (style_ == JsonPathStyle::kPointer) out.append("/").append(pointer_token(l.key));
        else out.append(out.empty() ? "" : ".").append(l.key);
      }
    }
    return out;
  }

  JsonPathStyle style_;
  json root_;
  std::vector<Level> levels_;
  std::optional<Failure> error_;
  bool too_deep_ = false;
};

/// nlohmann's message without its id and position prefix:
/// "[json.exception.parse_error.101] parse error at line 1, column 5: syntax error ..." -> "syntax error ...".
std::string plain_message(std::string what) {
  if (!what.empty() && what.front() == '[') {
    const auto end = what.find("] ");
    if (end != std::string::npos) what.erase(0, end + 2);
  }
  if (what.rfind("parse error", 0) == 0) {
    const auto colon = what.find(": ");
    if (colon != std::string::npos) what.erase(0, colon + 2);
  }
  return what;
}

}  // namespace

json parse_json(std::string_view text, const std::string& source, const JsonErrors& errors, std::int64_t first_line) {
  const auto deep = too_deep_at(text);
  Builder builder(errors.paths);
  bool ok = false;
  try {
    ok = json::sax_parse(text.begin(), text.end(), &builder, json::input_format_t::json, /*strict=*/true,
                         /*ignore_comments=*/false);
  } catch (const json::exception& ex) {
    // The SAX parser reports through parse_error(); anything thrown is still a syntax error.
    throw_error(errors.syntax, {source, first_line, ""}, "not valid JSON: " + printable_utf8(plain_message(ex.what())));
  }
  if (ok) return builder.take();
  if (builder.too_deep()) {
    const auto [line, column] = line_column(text, deep.value_or(0), first_line);
    throw_error(errors.too_deep, {source, deep ? line : 0, builder.deep_path()},
                "JSON nested deeper than " + std::to_string(kMaxJsonDepth) + " levels (at column " + std::to_string(column) +
                    "); gpusched reads at most " + std::to_string(kMaxJsonDepth) + " levels of arrays and objects");
  }
  if (const auto& f = builder.failure()) {
    const bool overflow = f->id == 406;   // out_of_range.406: number overflow
    // A syntax error points at the byte read last; a number too large at its first character.
    std::size_t at = f->position > 0 ? f->position - 1 : 0;
    if (overflow) at = f->position >= f->token.size() ? f->position - f->token.size() : 0;
    const auto [line, column] = line_column(text, at, first_line);
    const std::string where = " (column " + std::to_string(column) + ")";
    if (overflow) {
      throw_error(errors.out_of_range, {source, line, f->path},
                  printable_utf8(f->token) + " is out of range" + where +
                      ": a JSON number must be a finite double (magnitude below 1.8e308)");
    }
    const std::string message = printable_utf8(plain_message(f->what));
    const bool bad_utf8 = message.find("UTF-8") != std::string::npos;
    throw_error(errors.syntax, {source, line, bad_utf8 ? f->path : std::string()},
                "not valid JSON" + where + ": " + message);
  }
  throw_error(errors.syntax, {source, first_line, ""}, "not valid JSON");
}

}  // namespace gpusched
