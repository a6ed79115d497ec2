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

std::string Table::str_fit(size_t total, size_t wrap, size_t max_cell) const {
  std::vector<size_t> width(header_.size(), 0);
  auto measure = [&](const std::vector<std::string>& row) {
    for (size_t i = 0; i < row.size() && i < width.size(); ++i)
      width[i] = std::max(width[i], i == wrap ? row[i].size() : std::min(row[i].size(), max_cell));
  };
  measure(header_);
  for (const auto& r : rows_) measure(r);
  size_t others = 0;
  for (size_t i = 0; i < width.size(); ++i)
    if (i != wrap) others += width[i] + 2;
  if (wrap < width.size())
    width[wrap] = std::min(width[wrap], std::max<size_t>(16, total > others ? total - others : 0));
  std::string out;
  auto emit = [&](const std::vector<std::string>& row) {
    std::string rest = wrap < row.size() ? row[wrap] : "";
    for (bool first = true; first || !rest.empty(); first = false) {
      std::string line;
      for (size_t i = 0; i < width.size(); ++i) {
        std::string cell;
        if (i == wrap)
          cell = rest.substr(0, width[i]), rest.erase(0, cell.size());
        else if (first)
          cell = clip(i < row.size() ? row[i] : "", width[i]);
        std::string pad(width[i] - cell.size(), ' ');
        bool right = std::find(right_.begin(), right_.end(), i) != right_.end();
        line += right ? pad + cell : cell + (i + 1 < width.size() ? pad : "");
        if (i + 1 < width.size()) line += "  ";
      }
      while (!line.empty() && line.back() == ' ') line.pop_back();
      out += line + "\n";
    }
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
