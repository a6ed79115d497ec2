// A small RFC 4180 CSV parser for the readers of ncu and nvprof text exports:
// quoted cells with doubled quotes and embedded newlines, CRLF or LF, and any
// text before the table (==PROF== lines, program output) left to the caller.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace keet::readers::csv {

struct CsvRow {
  std::vector<std::string> cells;
  uint64_t line = 0;  // 1-based line where the row starts
};

// Thrown only inside the CSV readers; read_ncu/read_nvprof convert it.
struct CsvError {
  uint64_t line;
  std::string what;
};

// Reads one record starting at `pos` (updated past its line end); `line` is
// the 1-based line of `pos` and is advanced by the lines consumed.
CsvRow read_row(std::string_view text, size_t& pos, uint64_t& line);

// Position and line of the first line that starts with `prefix`, if any.
struct LineStart {
  size_t pos = std::string_view::npos;
  uint64_t line = 0;
};
LineStart find_line(std::string_view text, std::string_view prefix, size_t from = 0, uint64_t from_line = 1);

}  // namespace keet::readers::csv
