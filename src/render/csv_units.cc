#include "render/csv_units.h"

#include <charconv>
#include <cmath>
#include <optional>
#include <vector>

#include "model/units.h"
#include "render/table.h"

namespace keet::render {
namespace {

using Row = std::vector<std::string>;

// RFC 4180 rows; a quoted field may hold separators, quotes ("") and newlines.
std::vector<Row> parse_rows(std::string_view text) {
  std::vector<Row> rows;
  Row row;
  std::string field;
  bool quoted = false, any = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (quoted) {
      if (c != '"') field += c;
      else if (i + 1 < text.size() && text[i + 1] == '"') field += '"', ++i;
      else quoted = false;
      continue;
    }
    if (c == '"') quoted = any = true;
    else if (c == ',') row.push_back(std::move(field)), field.clear(), any = true;
    else if (c == '\n') {
      row.push_back(std::move(field));
      rows.push_back(std::move(row));
      row.clear(), field.clear(), any = false;
    } else if (c != '\r') field += c, any = true;
  }
  if (any || !row.empty()) row.push_back(std::move(field)), rows.push_back(std::move(row));
  return rows;
}

std::optional<double> number(const std::string& cell) {
  double v = 0;
  auto [end, ec] = std::from_chars(cell.data(), cell.data() + cell.size(), v);
  if (ec != std::errc() || end != cell.data() + cell.size() || cell.empty()) return std::nullopt;
  return v;
}

void scale_column(std::vector<Row>& rows, size_t col) {
  const std::string base = rows[1][col];
  double magnitude = 0;
  for (size_t r = 2; r < rows.size(); ++r)
    if (col < rows[r].size())
      if (auto v = number(rows[r][col]); v && std::isfinite(*v)) magnitude = std::max(magnitude, std::fabs(*v));
  auto scale = model::auto_scale(base, magnitude);
  rows[1][col] = scale.unit;
  for (size_t r = 2; r < rows.size(); ++r)
    if (col < rows[r].size())
      if (auto v = number(rows[r][col])) rows[r][col] = model::auto_value_text(*v, scale);
}

}  // namespace

std::string auto_units_csv(std::string_view base_csv) {
  auto rows = parse_rows(base_csv);
  if (rows.size() < 2) return std::string(base_csv);
  for (size_t col = 0; col < rows[1].size(); ++col)
    if (!rows[1][col].empty()) scale_column(rows, col);
  std::string out;
  for (const auto& row : rows) {
    for (size_t i = 0; i < row.size(); ++i) out += (i ? "," : "") + csv_quote(row[i]);
    out += '\n';
  }
  return out;
}

}  // namespace keet::render
