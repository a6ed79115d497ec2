// Plain aligned text tables for terminal output.
#pragma once
#include <string>
#include <vector>

namespace keet::render {

class Table {
 public:
  explicit Table(std::vector<std::string> header) : header_(std::move(header)) {}
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  // Columns listed here are right-aligned (numbers).
  void right_align(std::vector<size_t> cols) { right_ = std::move(cols); }
  // Cells wider than max_width are cut (clip_cell); 0: none is (text piped
  // to another program keeps every value whole, as grep and awk expect).
  std::string str(size_t max_width = 80) const;
  // At most `total` columns wide: every column but `wrap` is cut at
  // `max_cell`, and `wrap` gets what is left (at least 16), its long cells
  // continued on further lines rather than cut. `total` 0: no cell is cut or
  // wrapped.
  std::string str_fit(size_t total, size_t wrap, size_t max_cell) const;
  size_t size() const { return rows_.size(); }

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
  std::vector<size_t> right_;
};

// `s` in at most `w` characters, keeping the part that tells rows apart: a
// path's end ("...ports/run2.ncu-rep"), a name without its template
// arguments ("gemm<...>(float *, int)") before its head ("gemm<float, 12...").
std::string clip_cell(const std::string& s, size_t w);

// RFC 4180 quoting, always quoted like ncu's exports.
std::string csv_quote(const std::string& s);

}  // namespace keet::render
