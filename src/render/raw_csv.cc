#include "render/raw_csv.h"

#include <ctime>
#include <set>

#include <fmt/format.h>

#include "model/units.h"
#include "render/table.h"

namespace keet::render {
namespace {

// ncu hides its pseudo-metrics (metric-name lists, regex requests) from the raw page.
bool hidden(const std::string& name) {
  return name.starts_with("group:") || name.starts_with("breakdown:") || name.starts_with("regex:");
}

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
std::string basename(const std::string& p) {
  std::string_view v(p);
  v = v.substr(0, v.find('\0'));
  auto pos = v.find_last_of("/\\");
  return std::string(pos == std::string_view::npos ? v : v.substr(pos + 1));
}

std::vector<std::string> columns(const std::vector<const model::Kernel*>& kernels) {
  std::set<std::string> names;
  for (const auto* k : kernels)
    for (const auto& m : k->metrics)
      if (!hidden(m.name)) names.insert(m.name);
  return {names.begin(), names.end()};
}

// ncu quotes every cell, headers included.
std::string join_row(const std::vector<std::string>& cells) {
  std::string line;
  for (size_t i = 0; i < cells.size(); ++i) line += (i ? "," : "") + csv_quote(cells[i]);
  return line + "\n";
}

// A CSV-read report carries its units; for a binary report the units row
// follows the first kernel's chip (ncu prints units only for chips it knows).
std::string column_unit(const std::string& name, const std::vector<const model::Kernel*>& kernels) {
  if (kernels.empty()) return model::unit_of(name);
  for (const auto* k : kernels)
    if (const auto* m = k->find(name); m && !m->unit.empty()) return m->unit;
  return model::unit_of(name, *kernels.front());
}

std::vector<std::string> id_cells(const model::Report& r, const model::Kernel& k) {
  const std::string& host = k.host_name.empty() ? r.session.host_name : k.host_name;
  return {std::to_string(k.index), std::to_string(k.process_id), basename(k.process_name), host,
          k.display_name(), kernel_time(k.creation_time), std::to_string(k.context_id),
          std::to_string(k.stream_id)};
}

}  // namespace

std::string raw_csv(const model::Report& r, const std::vector<const model::Kernel*>& kernels) {
  auto names = columns(kernels);
  std::vector<std::string> head = {"ID", "Process ID", "Process Name", "Host Name", "Kernel Name",
                                   "Kernel Time", "Context", "Stream"};
  std::vector<std::string> units(head.size(), "");
  for (const auto& n : names) {
    head.push_back(n);
    units.push_back(column_unit(n, kernels));
  }
  std::string out = join_row(head) + join_row(units);
  for (const auto* k : kernels) {
    auto row = id_cells(r, *k);
    for (const auto& n : names) {
      const auto* m = k->find(n);
      row.push_back(m ? model::csv_cell_text(*m) : "");
    }
    out += join_row(row);
  }
  return out;
}

}  // namespace keet::render
