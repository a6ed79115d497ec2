#include "render/table.h"

#include <algorithm>

#include "util/strings.h"

namespace keet::render {
namespace {

// Every outermost <...> emptied to "<...>".
std::string without_template_arguments(const std::string& s) {
  std::string out;
  int depth = 0;
  for (char c : s) {
    if (c == '<') {
      if (depth++ == 0) out += "<...";
    } else if (c == '>' && depth > 0) {
      if (--depth == 0) out += '>';
    } else if (depth == 0) {
      out += c;
    }
  }
  return out;
}

std::string clip(const std::string& s, size_t w) { return w == 0 ? s : clip_cell(s, w); }

}  // namespace

std::string clip_cell(const std::string& s, size_t w) {
  if (s.size() <= w) return s;
  if (w <= 3) return s.substr(0, w);
  if (s.find('/') != std::string::npos && s.find(' ') == std::string::npos) return "..." + s.substr(s.size() - (w - 3));
  if (s.find('<') != std::string::npos)
    if (auto bare = without_template_arguments(s); bare.size() < s.size()) return clip_cell(bare, w);
  return s.substr(0, w - 3) + "...";
}

std::string Table::str(size_t max_width) const {
  std::vector<size_t> width(header_.size(), 0);
  auto measure = [&](const std::vector<std::string>& row) {
    for (size_t i = 0; i < row.size() && i < width.size(); ++i)
      width[i] = std::max(width[i], max_width == 0 ? row[i].size() : std::min(row[i].size(), max_width));
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
      width[i] = std::max(width[i], i == wrap || total == 0 ? row[i].size() : std::min(row[i].size(), max_cell));
  };
  measure(header_);
  for (const auto& r : rows_) measure(r);
  size_t others = 0;
  for (size_t i = 0; i < width.size(); ++i)
    if (i != wrap) others += width[i] + 2;
  if (wrap < width.size() && total > 0)
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
