#include "readers/csv_table.h"

namespace keet::readers::csv {
namespace {

// One cell; `pos` is left on the separator or line end that follows it.
std::string read_cell(std::string_view t, size_t& pos, uint64_t& line, uint64_t row_line) {
  std::string cell;
  if (pos >= t.size() || t[pos] != '"') {
    size_t end = t.find_first_of(",\r\n", pos);
    if (end == std::string_view::npos) end = t.size();
    cell.assign(t.substr(pos, end - pos));
    pos = end;
    return cell;
  }
  for (++pos;; ++pos) {
    if (pos >= t.size()) throw CsvError{row_line, "unterminated quoted cell"};
    char c = t[pos];
    if (c == '"' && pos + 1 < t.size() && t[pos + 1] == '"')
      ++pos;
    else if (c == '"')
      break;
    if (c == '\n') ++line;
    cell += c;
  }
  ++pos;  // closing quote
  if (pos < t.size() && t[pos] != ',' && t[pos] != '\r' && t[pos] != '\n')
    throw CsvError{line, "text after a closing quote"};
  return cell;
}

}  // namespace

CsvRow read_row(std::string_view t, size_t& pos, uint64_t& line) {
  CsvRow row;
  row.line = line;
  for (;;) {
    row.cells.push_back(read_cell(t, pos, line, row.line));
    if (pos < t.size() && t[pos] == ',') {
      ++pos;
      continue;
    }
    break;
  }
  if (pos < t.size() && t[pos] == '\r') ++pos;
  if (pos < t.size() && t[pos] == '\n') ++pos;
  ++line;
  return row;
}

LineStart find_line(std::string_view text, std::string_view prefix, size_t from, uint64_t from_line) {
  uint64_t line = from_line;
  for (size_t pos = from; pos < text.size();) {
    if (text.substr(pos, prefix.size()) == prefix) return {pos, line};
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) break;
    pos = nl + 1;
    ++line;
  }
  return {};
}

}  // namespace keet::readers::csv
