#pragma once
/// Line-oriented CSV reading with locations for errors (file:line, column name).
/// Fields are split by Boost.Tokenizer's escaped_list_separator: ',' separates, '"' quotes,
/// '\' escapes. Blank lines and lines starting with '#' are skipped (comments are kept).
/// Fields may not span lines.
#include <cstdint>
#include <istream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <gpusched/error.hpp>

namespace gpusched::traces {

class CsvReader {
 public:
  /// Reads the header from `in`. `source` names the file in errors.
  CsvReader(std::istream& in, std::string source);

  [[nodiscard]] const std::vector<std::string>& header() const { return header_; }
  /// Column index of `name`, if present.
  [[nodiscard]] std::optional<std::size_t> column(std::string_view name) const;
  /// Column index of `name` or TraceError(kTraceMissingColumn) naming the file and the column.
  [[nodiscard]] std::size_t require(std::string_view name) const;
  /// Comment lines seen before the header (without '#').
  [[nodiscard]] const std::vector<std::string>& comments() const { return comments_; }

  /// Reads the next row into `fields`; false at end of input. Rows with the wrong number of
  /// fields, or broken quoting, throw TraceError with the line.
  bool next(std::vector<std::string>& fields);
  /// The 1-based line of the row last returned by next().
  [[nodiscard]] std::int64_t line() const { return line_; }
  [[nodiscard]] const std::string& source() const { return source_; }
  /// Location of field `col` of the current row.
  [[nodiscard]] Location at(std::size_t col) const { return {source_, line_, header_.at(col)}; }

 private:
  bool read_line(std::string& text);
  void split(const std::string& text, std::vector<std::string>& out) const;
  std::istream* in_;
  std::string source_;
  std::vector<std::string> header_;
  std::vector<std::string> comments_;
  std::int64_t line_ = 0;
  std::int64_t header_line_ = 0;
};

}  // namespace gpusched::traces
