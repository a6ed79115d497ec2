// The raw-page CSV, column for column like `ncu --import R --page raw --csv
// --print-units base`: 8 ID columns, every metric column (sorted), a units row,
// then one row per kernel.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "model/report.h"
#include "model/units.h"

namespace keet::render {

// ncu hides its pseudo-metrics (metric-name lists, regex requests) from the raw page.
bool raw_csv_hidden(std::string_view metric);

// Writes the page row by row, so a caller can stream kernels through it
// without holding the report: the columns are fixed up front. A writer
// serves one report (it remembers columns by the report's name ids).
class RawCsvWriter {
 public:
  // `columns`: sorted metric names; `units`: one per column.
  RawCsvWriter(std::vector<std::string> columns, std::vector<std::string> units);
  // The header row and the units row.
  void append_header(std::string& out) const;
  void append_row(const model::Report& r, const model::Kernel& k, std::string& out) const;
  // A row whose cells were written already, one per column (empty: an empty
  // cell), each as model::append_csv_cell wrote it: the kernel's own fields
  // come from `ids` (its metrics are not looked at). Base units only.
  void append_row(const model::Report& r, const model::Kernel& ids, const std::vector<std::string_view>& cells,
                  std::string& out) const;
  // --print-units auto: a column's unit is scaled by its largest magnitude
  // among the kernels written (one per column, 0: nothing to scale), as ncu
  // scales it, and its numbers are written with six decimals.
  void scale_columns(const std::vector<double>& magnitudes);
  const std::vector<std::string>& columns() const { return columns_; }

 private:
  // The column of a metric: by its string-table id once that id was seen
  // (one array read per metric), else by name.
  int64_t column(const model::Metric& m) const;

  std::vector<std::string> columns_;
  std::vector<std::string> units_;
  std::vector<model::Scale> scales_;                                // empty: base units
  mutable std::unordered_map<std::string_view, size_t> column_of_;  // by name, built on first use
  static constexpr int64_t kUnseen = -2, kNoColumn = -1;
  mutable std::vector<int64_t> column_by_id_;        // kUnseen, kNoColumn or the column
  mutable std::vector<const model::Metric*> cells_;  // of the row being written
};

// The unit row of these columns, as ncu prints it: a CSV-read report's own
// unit, else the metric database for the first kernel's chip.
std::vector<std::string> raw_csv_units(const std::vector<std::string>& metrics,
                                       const std::vector<const model::Kernel*>& kernels);

std::string raw_csv(const model::Report& r, const std::vector<const model::Kernel*>& kernels,
                    model::PrintUnits units = model::PrintUnits::Base);

}  // namespace keet::render
