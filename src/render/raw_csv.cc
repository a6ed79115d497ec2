#include "render/raw_csv.h"

#include <ctime>
#include <set>

#include <fmt/format.h>

#include "model/units.h"
#include "render/table.h"

namespace keet::render {
namespace {

// ncu hides its pseudo-metrics (metric-name lists) from the raw page.
bool hidden(const std::string& name) { return name.starts_with("group:") || name.starts_with("breakdown:"); }

std::string kernel_time(uint64_t t) {
  std::time_t tt = static_cast<std::time_t>(t);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%b-%d %H:%M:%S", &tm);
  return buf;
}

std::string basename(const std::string& p) {
  auto pos = p.find_last_of('/');
  return pos == std::string::npos ? p : p.substr(pos + 1);
}

std::vector<std::string> columns(const std::vector<const model::Kernel*>& kernels) {
  std::set<std::string> names;
  for (const auto* k : kernels)
    for (const auto& m : k->metrics)
      if (!hidden(m.name)) names.insert(m.name);
  return {names.begin(), names.end()};
}

std::string join_row(const std::vector<std::string>& cells) {
  std::string line;
  for (size_t i = 0; i < cells.size(); ++i) line += (i ? "," : "") + csv_quote(cells[i]);
  return line + "\n";
}

}  // namespace

std::string raw_csv(const model::Report& r, const std::vector<const model::Kernel*>& kernels) {
  auto names = columns(kernels);
  std::vector<std::string> head = {"ID", "Process ID", "Process Name", "Host Name", "Kernel Name",
                                   "Kernel Time", "Context", "Stream"};
  std::vector<std::string> units(head.size(), "");
  for (const auto& n : names) {
    head.push_back(n);
    units.push_back(model::unit_of(n));
  }
  std::string out = join_row(head) + join_row(units);
  for (const auto* k : kernels) {
    std::vector<std::string> row = {std::to_string(k->index), std::to_string(k->process_id),
                                    basename(k->process_name), r.session.host_name, k->display_name(),
                                    kernel_time(k->creation_time), std::to_string(k->context_id),
                                    std::to_string(k->stream_id)};
    for (const auto& n : names) {
      const auto* m = k->find(n);
      row.push_back(m ? model::csv_value_text(n, m->value, !m->value.empty()) : "");
    }
    out += join_row(row);
  }
  return out;
}

}  // namespace keet::render
