#include "render/raw_csv.h"

#include <algorithm>
#include <cmath>

#include <ctime>
#include <iterator>
#include <set>

#include <fmt/format.h>

#include "model/units.h"
#include "util/strings.h"

namespace keet::render {
namespace {

// ncu prints the launch time in the local time zone, e.g. "2025-Feb-26 20:10:07".
std::string kernel_time(uint64_t t) {
  std::time_t tt = static_cast<std::time_t>(t);
  std::tm tm{};
  localtime_r(&tt, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%b-%d %H:%M:%S", &tm);
  return buf;
}

// Windows reports keep backslashes and a C string's terminating NUL.
std::string_view basename(std::string_view v) {
  v = v.substr(0, v.find('\0'));
  auto pos = v.find_last_of("/\\");
  return pos == std::string_view::npos ? v : v.substr(pos + 1);
}

// ncu quotes every cell, headers included; a quote inside is doubled.
void append_cell(std::string& out, std::string_view text, bool first = false) {
  if (!first) out += ',';
  out += '"';
  append_quote_doubled(out, text);
  out += '"';
}

void append_uint_cell(std::string& out, uint64_t v) {
  out += ",\"";
  fmt::format_to(std::back_inserter(out), "{}", v);
  out += '"';
}

void append_id_cells(const model::Report& r, const model::Kernel& k, std::string& out) {
  const std::string& host = k.host_name.empty() ? r.session.host_name : k.host_name;
  append_cell(out, std::to_string(k.index), true);
  append_uint_cell(out, k.process_id);
  append_cell(out, basename(k.process_name));
  append_cell(out, host);
  append_cell(out, k.display_name());
  append_cell(out, kernel_time(k.creation_time));
  append_uint_cell(out, k.context_id);
  append_uint_cell(out, k.stream_id);
}

const char* const kIdColumns[] = {"ID",          "Process ID",  "Process Name", "Host Name",
                                  "Kernel Name", "Kernel Time", "Context",      "Stream"};

std::vector<std::string> columns(const std::vector<const model::Kernel*>& kernels) {
  std::set<std::string_view> names;
  for (const auto* k : kernels)
    for (const auto& m : k->metrics)
      if (!raw_csv_hidden(m.name)) names.insert(m.name);
  return {names.begin(), names.end()};
}

// A CSV-read report's own unit for the column (the first kernel that has one), or null.
const std::string* own_unit(const std::string& name, const std::vector<const model::Kernel*>& kernels) {
  for (const auto* k : kernels)
    if (const auto* m = k->find(name); m && !m->unit.empty()) return &m->unit;
  return nullptr;
}

}  // namespace

bool raw_csv_hidden(std::string_view name) {
  return name.starts_with("group:") || name.starts_with("breakdown:") || name.starts_with("regex:");
}

RawCsvWriter::RawCsvWriter(std::vector<std::string> columns, std::vector<std::string> units)
    : columns_(std::move(columns)), units_(std::move(units)) {}

void RawCsvWriter::append_header(std::string& out) const {
  for (const char* id : kIdColumns) append_cell(out, id, id == kIdColumns[0]);
  for (const auto& c : columns_) append_cell(out, c);
  out += '\n';
  for (const char* id : kIdColumns) append_cell(out, "", id == kIdColumns[0]);
  for (size_t i = 0; i < units_.size(); ++i) append_cell(out, scales_.empty() ? units_[i] : scales_[i].unit);
  out += '\n';
}

int64_t RawCsvWriter::column(const model::Metric& m) const {
  auto by_name = [&]() -> int64_t {
    if (column_of_.empty() && !columns_.empty()) {  // built when first needed: a writer given rows' cells never is
      column_of_.reserve(columns_.size());
      for (size_t i = 0; i < columns_.size(); ++i) column_of_.emplace(columns_[i], i);
    }
    auto it = column_of_.find(m.name);
    return it == column_of_.end() ? kNoColumn : static_cast<int64_t>(it->second);
  };
  if (m.name_id == model::Metric::kNoNameId) return by_name();
  if (m.name_id >= column_by_id_.size()) column_by_id_.resize(size_t{m.name_id} + 1, kUnseen);
  int64_t& c = column_by_id_[m.name_id];
  if (c == kUnseen) c = by_name();
  return c;
}

void RawCsvWriter::scale_columns(const std::vector<double>& magnitudes) {
  scales_.clear();
  for (size_t i = 0; i < units_.size(); ++i)
    scales_.push_back(units_[i].empty() ? model::Scale{"", 1}
                                        : model::auto_scale(units_[i], i < magnitudes.size() ? magnitudes[i] : 0));
}

void RawCsvWriter::append_row(const model::Report& r, const model::Kernel& ids,
                              const std::vector<std::string_view>& cells, std::string& out) const {
  append_id_cells(r, ids, out);
  for (auto cell : cells) {
    out += ",\"";
    out += cell;
    out += '"';
  }
  out += '\n';
}

// One array read (or, for a name not seen yet, one hash lookup) per metric
// the kernel has, not one search per column.
void RawCsvWriter::append_row(const model::Report& r, const model::Kernel& k, std::string& out) const {
  auto& cells = cells_;
  cells.assign(columns_.size(), nullptr);
  for (const auto& m : k.metrics)
    if (int64_t c = column(m); c >= 0 && !cells[c]) cells[c] = &m;
  append_id_cells(r, k, out);
  for (size_t i = 0; i < cells.size(); ++i) {
    const auto* m = cells[i];
    out += ",\"";
    if (m && !scales_.empty() && !units_[i].empty() && m->value.is_number())
      out += model::auto_value_text(*m->value.as_number(), scales_[i]);
    else if (m)
      model::append_csv_cell(out, *m);
    out += '"';
  }
  out += '\n';
}

std::vector<std::string> raw_csv_units(const std::vector<std::string>& metrics,
                                       const std::vector<const model::Kernel*>& kernels) {
  // Binary reports carry no units: then no column needs a search of the kernels.
  bool own_units = std::ranges::any_of(kernels, [](const model::Kernel* k) {
    return std::ranges::any_of(k->metrics, [](const model::Metric& m) { return !m.unit.empty(); });
  });
  bool chip = kernels.empty() || model::chip_has_units(*kernels.front());
  auto units = model::units_of(metrics, chip);
  if (own_units)
    for (size_t i = 0; i < metrics.size(); ++i)
      if (const std::string* own = own_unit(metrics[i], kernels)) units[i] = *own;
  return units;
}

std::string raw_csv(const model::Report& r, const std::vector<const model::Kernel*>& kernels,
                    model::PrintUnits print_units) {
  auto names = columns(kernels);
  auto units = raw_csv_units(names, kernels);
  std::vector<double> magnitudes(names.size(), 0);
  if (print_units == model::PrintUnits::Auto)
    for (size_t i = 0; i < names.size(); ++i)
      for (const auto* k : kernels)
        if (auto v = k->number(names[i]); v && std::isfinite(*v))
          magnitudes[i] = std::max(magnitudes[i], std::fabs(*v));
  RawCsvWriter writer(std::move(names), std::move(units));
  if (print_units == model::PrintUnits::Auto) writer.scale_columns(magnitudes);
  std::string out;
  writer.append_header(out);
  for (const auto* k : kernels) writer.append_row(r, *k, out);
  return out;
}

}  // namespace keet::render
