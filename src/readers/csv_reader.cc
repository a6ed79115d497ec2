// Readers for text exports: `ncu --csv --page raw` (with or without the units
// row, base or auto-scaled units), `ncu --csv --page details` (section/label
// rows mapped to metric names by data/metrics/details_names.json, rule rows
// become RuleResults) and `nvprof --csv` metric and event tables.
//
// The format is recognised from the header line, wherever it is: ncu and
// nvprof print their own lines and the program's output before it.
#include "readers/csv_reader.h"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <map>
#include <span>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "model/units.h"
#include "readers/csv_table.h"
#include "util/embedded_data.h"
#include "util/strings.h"

namespace keet::readers::csv {
namespace {

// Header starts, as the tools write them and as spreadsheet tools re-save them.
constexpr std::string_view kNcuHeader[] = {"\"ID\",\"Process ID\",", "ID,Process ID,"};
constexpr std::string_view kNvprofHeader[] = {"\"Device\",\"Kernel\",\"Invocations\",", "Device,Kernel,Invocations,"};

LineStart find_header(std::string_view text, std::span<const std::string_view> forms, size_t from = 0,
                      uint64_t from_line = 1) {
  LineStart best;
  for (auto form : forms) {
    auto at = find_line(text, form, from, from_line);
    if (at.pos < best.pos) best = at;
  }
  return best;
}

// Header name -> column, and a cell by column name ("" when absent).
class Columns {
 public:
  explicit Columns(const CsvRow& header) {
    for (size_t i = 0; i < header.cells.size(); ++i) index_.emplace(header.cells[i], i);
  }
  bool has(const std::string& name) const { return index_.contains(name); }
  std::string_view get(const CsvRow& row, const std::string& name) const {
    auto it = index_.find(name);
    if (it == index_.end() || it->second >= row.cells.size()) return {};
    return row.cells[it->second];
  }

 private:
  std::unordered_map<std::string, size_t> index_;
};

// Columns that describe the kernel or the row, not a metric.
const std::unordered_set<std::string>& id_columns() {
  static const std::unordered_set<std::string> s = {"ID",
                                                    "Process ID",
                                                    "Process Name",
                                                    "Host Name",
                                                    "Kernel Name",
                                                    "Kernel Time",
                                                    "Context",
                                                    "Stream",
                                                    "Block Size",
                                                    "Grid Size",
                                                    "Device",
                                                    "CC",
                                                    "Section Name",
                                                    "Body Item Label",
                                                    "Metric Name",
                                                    "Metric Unit",
                                                    "Metric Value",
                                                    "Rule Name",
                                                    "Rule Type",
                                                    "Rule Description",
                                                    "Estimated Speedup Type",
                                                    "Estimated Speedup"};
  return s;
}

// Counts and ids; anything that is not a number a uint64 can hold reads as 0.
uint64_t to_uint(std::optional<double> v) { return v && *v >= 0 && *v < 1.8e19 ? static_cast<uint64_t>(*v) : 0; }
uint64_t to_uint(std::string_view s) { return to_uint(parse_number(s)); }

// "(256, 1, 1)"
model::Dim3 parse_dim(std::string_view s) {
  model::Dim3 d;
  uint64_t* parts[] = {&d.x, &d.y, &d.z};
  size_t i = 0;
  s = trim(s);
  if (s.starts_with('(')) s.remove_prefix(1);
  for (auto piece : split(s, ','))
    if (i < 3) *parts[i++] = to_uint(trim(piece.substr(0, piece.find(')'))));
  return d;
}

// "2025-Feb-26 20:10:07" in local time, as ncu prints it.
uint64_t parse_kernel_time(std::string_view s) {
  std::tm tm{};
  std::string text(s);
  if (strptime(text.c_str(), "%Y-%b-%d %H:%M:%S", &tm) == nullptr) return 0;
  tm.tm_isdst = -1;
  std::time_t t = std::mktime(&tm);
  return t < 0 ? 0 : static_cast<uint64_t>(t);
}

uint64_t exact_uint(std::string_view s) {
  uint64_t v = 0;
  for (char ch : s)
    if (ch != ',') v = v * 10 + static_cast<uint64_t>(ch - '0');
  return v;
}

bool integral_text(std::string_view s) {
  return !s.empty() && s.find_first_not_of("0123456789,") == std::string_view::npos;
}

// A cell as a value in base units; nullopt for an empty cell (metric absent).
std::optional<model::Metric> metric_from(std::string name, std::string_view text, std::string_view unit) {
  text = trim(text);
  if (text.empty()) return std::nullopt;
  model::Metric m;
  m.name = std::move(name);
  m.unit = std::string(unit);
  if (text == "no data" || text == "n/a") return m;
  if (text == "nan" || text == "-nan") {
    m.value = model::Value::of_double(std::nan(""));
    return m;
  }
  auto n = parse_number(text);
  if (!n) {
    m.value = model::Value::of_string(std::string(text));
    return m;
  }
  auto base = model::to_base_unit(*n, unit);
  m.unit = base.unit;
  if (base.value == *n && integral_text(text) && *n < 1e19) {
    m.value = model::Value::of_uint(exact_uint(text));  // all 64 bits, not a double's 53
    return m;
  }
  m.value = model::Value::of_double(base.value);
  return m;
}

// What the rows of one kernel told so far: metric names kept, and the launch
// values, noted whether or not the caller keeps those metrics (they decide
// the kernel's grid and block).
struct Seen {
  std::unordered_set<std::string> names;
  std::unordered_map<std::string, double> launch;
};

bool is_launch_shape(std::string_view name) {
  return name == "launch__grid_size" || name == "launch__block_size" || name.starts_with("launch__grid_dim_") ||
         name.starts_with("launch__block_dim_");
}

void add_metric(model::Kernel& k, std::optional<model::Metric> m, const ReadOptions& opt, Seen& seen) {
  if (!m) return;
  if (is_launch_shape(m->name) && m->value.is_number()) seen.launch.emplace(m->name, m->value.number);
  if (!opt.metrics) return;
  if (opt.metric_filter && !opt.metric_filter(m->name)) return;
  if (!seen.names.insert(m->name).second) return;  // a details page repeats a metric in several sections
  k.metrics.push_back(std::move(*m));
}

void add_compute_capability(model::Kernel& k, std::string_view cc, const ReadOptions& opt, Seen& seen) {
  auto dot = cc.find('.');
  if (cc.empty() || dot == std::string_view::npos) return;
  add_metric(k, metric_from("device__attribute_compute_capability_major", cc.substr(0, dot), ""), opt, seen);
  add_metric(k, metric_from("device__attribute_compute_capability_minor", cc.substr(dot + 1), ""), opt, seen);
}

void fill_identity(model::Kernel& k, const Columns& c, const CsvRow& row) {
  k.index = static_cast<int>(to_uint(c.get(row, "ID")));
  k.process_id = to_uint(c.get(row, "Process ID"));
  k.process_name = std::string(c.get(row, "Process Name"));
  k.host_name = std::string(c.get(row, "Host Name"));
  k.demangled = std::string(c.get(row, "Kernel Name"));
  k.creation_time = parse_kernel_time(c.get(row, "Kernel Time"));
  k.context_id = to_uint(c.get(row, "Context"));
  k.stream_id = to_uint(c.get(row, "Stream"));
  if (c.has("Block Size")) k.block = parse_dim(c.get(row, "Block Size"));
  if (c.has("Grid Size")) k.grid = parse_dim(c.get(row, "Grid Size"));
}

// One of grid/block from the "Grid Size"-style column if there was one, else
// the per-dimension metrics, else (ncu 2022.3's raw page of a pre-2020.3
// report has no dimensions) the total as (n, 1, 1): the shape is unknown there,
// the size is not.
void dims_from_launch(model::Dim3& d, const Seen& seen, const std::string& kind) {
  auto n = [&](const std::string& name) -> std::optional<uint64_t> {
    auto it = seen.launch.find(name);
    if (it == seen.launch.end()) return std::nullopt;
    return to_uint(std::optional<double>(it->second));
  };
  if (d.product() != 0) return;
  auto x = n("launch__" + kind + "_dim_x"), y = n("launch__" + kind + "_dim_y"), z = n("launch__" + kind + "_dim_z");
  if (x)
    d = {*x, y.value_or(1), z.value_or(1)};
  else if (auto total = n("launch__" + kind + "_size"))
    d = {*total, 1, 1};
}

// Grid and block as the binary report gives them (see readers::grid_in_blocks).
void finish_launch(model::Kernel& k, const Seen& seen) {
  dims_from_launch(k.grid, seen, "grid");
  dims_from_launch(k.block, seen, "block");
  auto blocks = seen.launch.find("launch__grid_size");
  if (blocks != seen.launch.end()) k.grid = grid_in_blocks(k.grid, k.block, blocks->second);
}

void check_width(const CsvRow& row, size_t width) {
  for (size_t i = width; i < row.cells.size(); ++i)
    if (!trim(row.cells[i]).empty())
      throw CsvError{row.line, fmt::format("row has {} cells but the header has {}", row.cells.size(), width)};
}

// Rows of one table: from `pos` until the text ends, a blank line, or a tool
// line ("==PROF== ...", "==1234== Event result:").
std::vector<CsvRow> table_rows(std::string_view text, size_t& pos, uint64_t& line, size_t width) {
  std::vector<CsvRow> rows;
  while (pos < text.size() && text[pos] != '\n' && text[pos] != '\r' && text.substr(pos, 2) != "==") {
    rows.push_back(read_row(text, pos, line));
    check_width(rows.back(), width);
  }
  return rows;
}

// --- ncu --page raw ---

bool is_units_row(const CsvRow& row, const Columns& c) {
  if (c.has("ID")) return trim(c.get(row, "ID")).empty();
  for (const auto& cell : row.cells)
    if (parse_number(cell)) return false;
  return true;
}

void read_raw(const std::vector<CsvRow>& rows, const CsvRow& header, const ReadOptions& opt, const KernelSink& sink) {
  Columns c(header);
  size_t first = !rows.empty() && is_units_row(rows.front(), c) ? 1 : 0;
  for (size_t r = first; r < rows.size(); ++r) {
    model::Kernel k;
    Seen seen;
    fill_identity(k, c, rows[r]);
    for (size_t i = 0; i < header.cells.size() && i < rows[r].cells.size(); ++i) {
      const auto& name = header.cells[i];
      if (id_columns().contains(name)) continue;
      // A view of the units row's cell itself: `cells[i] : ""` would be a temporary string.
      std::string_view unit = first && rows.front().cells.size() > i ? std::string_view(rows.front().cells[i]) : "";
      add_metric(k, metric_from(name, rows[r].cells[i], unit), opt, seen);
    }
    finish_launch(k, seen);
    if (!sink(std::move(k))) return;
  }
}

// --- ncu --page details ---

struct DetailsName {
  std::string metric, unit;
};
struct DetailsSection {
  std::string id;
  bool metric_names = false;  // rows already carry ncu metric names
  std::unordered_map<std::string, DetailsName> labels;
};

// data/metrics/details_names.json, by section id and by display name.
const std::unordered_map<std::string, DetailsSection>& details_sections() {
  static const auto table = [] {
    std::unordered_map<std::string, DetailsSection> out;
    auto j = nlohmann::json::parse(embedded_file("metrics/details_names.json").value_or("{}"), nullptr, false);
    if (j.is_discarded() || !j.contains("sections")) return out;
    for (const auto& [id, s] : j["sections"].items()) {
      DetailsSection sec{id, s.value("metric_names", false), {}};
      for (const auto& [label, m] : s["metrics"].items())
        sec.labels[label] = {m.value("metric", ""), m.value("unit", "")};
      out[id] = sec;
      for (const auto& name : s["display_names"]) out[name.get<std::string>()] = sec;
    }
    return out;
  }();
  return table;
}

std::string details_metric_name(std::string_view section, std::string_view label) {
  auto it = details_sections().find(std::string(section));
  if (it != details_sections().end()) {
    if (it->second.metric_names) return std::string(label);
    if (auto m = it->second.labels.find(std::string(label)); m != it->second.labels.end()) return m->second.metric;
  }
  // A custom section or a label KEET does not know: keep it, clearly not an ncu name.
  return fmt::format("details:{}/{}", section, label);
}

int rule_type(std::string_view t) {
  static const std::map<std::string_view, int> types = {{"INF", 1}, {"OK", 1}, {"WRN", 2}, {"ERR", 3}, {"OPT", 4}};
  auto it = types.find(t);
  return it == types.end() ? 0 : it->second;
}

void add_rule(model::Kernel& k, const Columns& c, const CsvRow& row) {
  std::string name(c.get(row, "Rule Name"));
  std::string section(c.get(row, "Section Name"));
  model::RuleMessage msg;
  msg.type = rule_type(c.get(row, "Rule Type"));
  msg.text = std::string(c.get(row, "Rule Description"));
  if (auto s = parse_number(c.get(row, "Estimated Speedup"))) msg.estimated_speedup = *s;
  msg.speedup_type = c.get(row, "Estimated Speedup Type") == "global" ? 1 : 0;
  for (auto& r : k.rules)
    if (r.id == name && r.section == section) {
      msg.id = static_cast<int>(r.messages.size());
      r.messages.push_back(std::move(msg));
      return;
    }
  model::RuleResult r{name, name, section, {}, {}};
  r.messages.push_back(std::move(msg));
  k.rules.push_back(std::move(r));
}

void details_row(model::Kernel& k, const Columns& c, const CsvRow& row, const ReadOptions& opt, Seen& seen) {
  std::string_view label = c.get(row, "Metric Name");
  if (!label.empty()) {
    std::string name = details_metric_name(c.get(row, "Section Name"), label);
    add_metric(k, metric_from(std::move(name), c.get(row, "Metric Value"), c.get(row, "Metric Unit")), opt, seen);
  }
  if (!c.get(row, "Rule Name").empty() && opt.rules) add_rule(k, c, row);
}

void read_details(const std::vector<CsvRow>& rows, const CsvRow& header, const ReadOptions& opt,
                  const KernelSink& sink) {
  Columns c(header);
  for (size_t r = 0; r < rows.size();) {
    model::Kernel k;
    Seen seen;
    fill_identity(k, c, rows[r]);
    add_compute_capability(k, c.get(rows[r], "CC"), opt, seen);
    auto key = std::pair(c.get(rows[r], "ID"), c.get(rows[r], "Process ID"));
    for (; r < rows.size() && std::pair(c.get(rows[r], "ID"), c.get(rows[r], "Process ID")) == key; ++r)
      details_row(k, c, rows[r], opt, seen);
    finish_launch(k, seen);
    if (!sink(std::move(k))) return;
  }
}

// --- nvprof --csv ---

// "23.17%", "94.148GB/s", "Low (1)", "1234"
std::optional<model::Metric> nvprof_metric(std::string name, std::string_view text) {
  static const std::vector<std::pair<std::string_view, std::string_view>> suffixes = {{"%", "%"},
                                                                                      {"TB/s", "Tbyte/second"},
                                                                                      {"GB/s", "Gbyte/second"},
                                                                                      {"MB/s", "Mbyte/second"},
                                                                                      {"KB/s", "Kbyte/second"},
                                                                                      {"B/s", "byte/second"}};
  text = trim(text);
  for (const auto& [suffix, unit] : suffixes)
    if (text.ends_with(suffix) && parse_number(text.substr(0, text.size() - suffix.size())))
      return metric_from(std::move(name), text.substr(0, text.size() - suffix.size()), unit);
  return metric_from(std::move(name), text, "");
}

struct NvprofKernels {
  std::vector<model::Kernel> kernels;
  std::vector<Seen> seen;
  std::map<std::pair<std::string, std::string>, size_t> index;  // (device, kernel) -> position

  size_t find_or_add(std::string_view device, std::string_view name, const ReadOptions& opt) {
    auto key = std::pair(std::string(device), std::string(name));
    if (auto it = index.find(key); it != index.end()) return it->second;
    model::Kernel k;
    k.index = static_cast<int>(kernels.size());
    k.demangled = key.second;
    seen.emplace_back();
    add_metric(k, metric_from("device__attribute_display_name", device.substr(0, device.rfind(" (")), ""), opt,
               seen.back());
    kernels.push_back(std::move(k));
    return index[key] = kernels.size() - 1;
  }
};

void nvprof_table(const std::vector<CsvRow>& rows, const CsvRow& header, const ReadOptions& opt, NvprofKernels& out) {
  Columns c(header);
  std::string name_col = c.has("Metric Name") ? "Metric Name" : "Event Name";
  for (const auto& row : rows) {
    size_t i = out.find_or_add(c.get(row, "Device"), c.get(row, "Kernel"), opt);
    auto& k = out.kernels[i];
    k.invocations = std::max(k.invocations, to_uint(c.get(row, "Invocations")));  // events and metrics tables agree
    add_metric(out.kernels[i], nvprof_metric(std::string(c.get(row, name_col)), c.get(row, "Avg")), opt, out.seen[i]);
  }
}

void read_nvprof_text(std::string_view text, const ReadOptions& opt, const KernelSink& sink) {
  NvprofKernels all;
  size_t pos = 0;
  uint64_t line = 1;
  for (;;) {
    auto at = find_header(text, kNvprofHeader, pos, line);
    if (at.pos == std::string_view::npos) break;
    pos = at.pos;
    line = at.line;
    CsvRow header = read_row(text, pos, line);
    nvprof_table(table_rows(text, pos, line, header.cells.size()), header, opt, all);
  }
  for (auto& k : all.kernels)
    if (!sink(std::move(k))) return;
}

void read_ncu_text(std::string_view text, const ReadOptions& opt, model::Report& report, const KernelSink& sink) {
  auto at = find_header(text, kNcuHeader);
  if (at.pos == std::string_view::npos) throw CsvError{1, "no ncu CSV header (\"ID\",\"Process ID\",...)"};
  size_t pos = at.pos;
  uint64_t line = at.line;
  CsvRow header = read_row(text, pos, line);
  auto rows = table_rows(text, pos, line, header.cells.size());
  Columns c(header);
  bool details = c.has("Section Name") && c.has("Metric Name") && c.has("Metric Value");
  report.format = details ? model::Format::NcuCsvDetails : model::Format::NcuCsvRaw;
  if (details)
    read_details(rows, header, opt, sink);
  else
    read_raw(rows, header, opt, sink);
}

template <typename Fn>
ReadResult<void> guarded(const io::ByteSource& src, Fn&& fn) {
  try {
    fn(src.bytes());
  } catch (const CsvError& e) {
    ReadError err{src.name(), 0, e.what, false};
    err.line = e.line;
    return std::unexpected(err);
  }
  return {};
}

}  // namespace

bool detect_ncu(std::string_view bytes) { return find_header(bytes, kNcuHeader).pos != std::string_view::npos; }

ReadResult<void> read_ncu(const io::ByteSource& src, const ReadOptions& opt, model::Report& report,
                          const KernelSink& sink) {
  return guarded(src, [&](std::string_view text) { read_ncu_text(text, opt, report, sink); });
}

bool detect_nvprof(std::string_view bytes) { return find_header(bytes, kNvprofHeader).pos != std::string_view::npos; }

ReadResult<void> read_nvprof(const io::ByteSource& src, const ReadOptions& opt, model::Report& report,
                             const KernelSink& sink) {
  report.format = model::Format::NvprofCsv;
  return guarded(src, [&](std::string_view text) { read_nvprof_text(text, opt, sink); });
}

}  // namespace keet::readers::csv
