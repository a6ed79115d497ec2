#include "render/table.h"

#include <algorithm>

#include "util/strings.h"

namespace keet::render {
namespace {

std::string clip(const std::string& s, size_t w) {
  if (s.size() <= w) return s;
  return w <= 3 ? s.substr(0, w) : s.substr(0, w - 3) + "...";
}

}  // namespace

std::string Table::str(size_t max_width) const {
  std::vector<size_t> width(header_.size(), 0);
  auto measure = [&](const std::vector<std::string>& row) {
    for (size_t i = 0; i < row.size() && i < width.size(); ++i)
      width[i] = std::max(width[i], std::min(row[i].size(), max_width));
  };
  measure(header_);
  for (const auto& r : rows_) measure(r);
  std::string out;
  auto emit = [&](const std::vector<std::string>& row) {
    std::string line;
    for (size_t i = 0; i < width.size(); ++i) {
      std::string cell = clip(i < row.size() ? row[i] : "", max_width);
      std::string pad(width[i] - cell.size(), ' ');
      bool right = std::find(right_.begin(), right_.end(), i) != right_.end();
      line += right ? pad + cell : cell + (i + 1 < width.size() ? pad : "");
      if (i + 1 < width.size()) line += "  ";
    }
    out += line + "\n";
  };
  emit(header_);
  for (const auto& r : rows_) emit(r);
  return out;
}

std::string csv_quote(const std::string& s) {
  std::string out = "\"";
  append_quote_doubled(out, s);
  return out + "\"";
}

}  // namespace keet::render
