#include <gpusched/traces/csv.hpp>

#include <boost/tokenizer.hpp>

#include <gpusched/utf8.hpp>

namespace gpusched::traces {
namespace {
std::string trim(std::string s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return {};
  const auto e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}
}  // namespace

CsvReader::CsvReader(std::istream& in, std::string source) : in_(&in), source_(std::move(source)) {
  std::string text;
  while (std::getline(*in_, text)) {
    ++line_;
    const std::string t = trim(text);
    if (t.empty()) continue;
    if (t[0] == '#') {
      comments_.push_back(trim(t.substr(1)));
      continue;
    }
    split(t, header_);
    for (auto& h : header_) h = trim(h);
    header_line_ = line_;
    if (!is_valid_utf8(t)) {
      throw_error(ErrorCode::kTraceBadValue, {source_, line_, ""}, "header: " + describe_invalid_utf8(t));
    }
    return;
  }
  throw_error(ErrorCode::kTraceMissingColumn, {source_, line_, ""}, "no header row (the file is empty)");
}

std::optional<std::size_t> CsvReader::column(std::string_view name) const {
  for (std::size_t i = 0; i < header_.size(); ++i) if (header_[i] == name) return i;
  return std::nullopt;
}

std::size_t CsvReader::require(std::string_view name) const {
  if (auto c = column(name)) return *c;
  std::string have;
  for (const auto& h : header_) have += (have.empty() ? "" : ",") + h;
  throw_error(ErrorCode::kTraceMissingColumn, {source_, header_line_, std::string(name)},
              "missing column '" + std::string(name) + "' (header has: " + have + ")");
}

void CsvReader::split(const std::string& text, std::vector<std::string>& out) const {
  out.clear();
  try {
    boost::tokenizer<boost::escaped_list_separator<char>> tok(text, boost::escaped_list_separator<char>('\\', ',', '"'));
    for (const auto& f : tok) out.push_back(f);
  } catch (const boost::escaped_list_error& ex) {
    throw_error(ErrorCode::kTraceBadValue, {source_, line_, ""}, std::string("malformed CSV row: ") + ex.what());
  }
}

bool CsvReader::read_line(std::string& text) {
  while (std::getline(*in_, text)) {
    ++line_;
    const auto b = text.find_first_not_of(" \t\r");
    if (b == std::string::npos || text[b] == '#') continue;
    if (!text.empty() && text.back() == '\r') text.pop_back();
    return true;
  }
  return false;
}

bool CsvReader::next(std::vector<std::string>& fields) {
  std::string text;
  if (!read_line(text)) return false;
  split(text, fields);
  if (fields.size() != header_.size()) {
    throw_error(ErrorCode::kTraceBadValue, {source_, line_, ""},
                "row has " + std::to_string(fields.size()) + " fields, the header has " + std::to_string(header_.size()));
  }
  for (std::size_t i = 0; i < fields.size(); ++i) {
    fields[i] = trim(fields[i]);
    // Names and labels end up in JSON outputs and Python strings: reject bad bytes here, where
    // the file and the line are known, not when an output is written.
    if (!is_valid_utf8(fields[i])) throw_error(ErrorCode::kTraceBadValue, at(i), describe_invalid_utf8(fields[i]));
  }
  return true;
}

}  // namespace gpusched::traces
