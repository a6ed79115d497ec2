#include "analysis/source_costs.h"

#include <memory>

#include <algorithm>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "readers/cubin.h"
#include "util/embedded_data.h"

namespace keet::analysis {
namespace {

// data/source/columns.json, parsed once.
struct Columns {
  std::map<std::string, std::string, std::less<>> aliases;
  std::vector<std::string> default_order;
  std::string stall_prefix = "smsp__pcsamp_warps_issue_stalled_";
  std::string stall_exclude_suffix = "_not_issued";
  std::set<std::string, std::less<>> not_additive;
};

Columns load_columns() {
  Columns c;
  auto text = embedded_file("source/columns.json");
  if (!text) return c;
  auto j = nlohmann::json::parse(*text, nullptr, false);
  if (j.is_discarded()) return c;
  c.aliases = j.value("aliases", std::map<std::string, std::string, std::less<>>{});
  c.default_order = j.value("default_order", std::vector<std::string>{});
  c.stall_prefix = j.value("stall_prefix", c.stall_prefix);
  c.stall_exclude_suffix = j.value("stall_exclude_suffix", c.stall_exclude_suffix);
  for (const auto& n : j.value("not_additive", std::vector<std::string>{})) c.not_additive.insert(n);
  return c;
}

const Columns& columns() {
  static const Columns c = load_columns();
  return c;
}

std::string alias_metric(std::string_view alias) {
  auto it = columns().aliases.find(alias);
  return it == columns().aliases.end() ? std::string(alias) : it->second;
}

// ------------------------------------------------------------ PC metrics

// launch__function_pcs holds one element whose value is the kernel's start PC
// (the scalar is a double and loses the low bits).
std::optional<uint64_t> kernel_start(const model::Kernel& k) {
  const model::Metric* m = k.find("launch__function_pcs");
  if (!m || m->instances.empty() || !m->instances.front().value.is_number()) return std::nullopt;
  return m->instances.front().value.integer;
}

struct PcRange {
  uint64_t begin = 0, end = 0;
  bool contains(uint64_t pc) const { return pc >= begin && pc < end; }
};

// Without a symbol size, instance keys are accepted within 16 MiB of the
// start, far more than any kernel and far less than the gap to the small
// integers other lists use as keys (register counts, block sizes).
constexpr uint64_t kMaxKernelBytes = uint64_t{1} << 24;

bool is_pc_key(const model::Value& v) {
  return v.kind == model::Value::Kind::Uint64 || v.kind == model::Value::Kind::Uint32;
}

// A list metric keyed by PCs of this kernel whose values add up per line.
bool is_pc_metric(const model::Metric& m, const PcRange& range) {
  if (m.instances.empty() || columns().not_additive.contains(m.name)) return false;
  return std::all_of(m.instances.begin(), m.instances.end(), [&](const model::Instance& i) {
    return is_pc_key(i.key) && range.contains(i.key.integer) && i.value.is_number();
  });
}

// The PC metrics' values as index arrays: metric names once, then one entry
// per (PC, metric) with data, PCs ascending. Each entry is the sum of the
// metric's instances at that PC, added in report order (metrics, then list
// order), so sums come out as they did with a map per PC.
struct PcValues {
  std::vector<const std::string*> names;  // metric index -> name (distinct names)
  struct Cell {
    uint64_t pc;
    uint32_t metric;
    double value;
  };
  std::vector<Cell> cells;  // sorted by PC, then first appearance in the report
  bool empty() const { return cells.empty(); }
};

// `only` (full metric names), when given, limits the metrics looked at, so
// the lists of the others are never decoded.
PcValues collect_pc_values(const model::Kernel& k, const PcRange& range, const std::vector<std::string>* only) {
  PcValues out;
  std::vector<PcValues::Cell> raw;
  auto add = [&](const model::Metric& m) {
    if (!is_pc_metric(m, range)) return;
    auto known = std::find_if(out.names.begin(), out.names.end(), [&](const std::string* n) { return *n == m.name; });
    auto index = static_cast<uint32_t>(known - out.names.begin());
    if (known == out.names.end()) out.names.push_back(&m.name);
    for (const auto& i : m.instances) raw.push_back({i.key.integer, index, *i.value.as_number()});
  };
  if (only) {
    for (const auto& name : *only)
      for (const auto& m : k.metrics)
        if (m.name == name) add(m);
  } else {
    for (const auto& m : k.metrics) add(m);
  }
  // A stable sort by PC keeps each PC's values in report order.
  std::stable_sort(raw.begin(), raw.end(), [](const auto& a, const auto& b) { return a.pc < b.pc; });
  std::vector<int64_t> slot_of(out.names.size(), -1);  // cell of each metric at the current PC
  for (size_t i = 0; i < raw.size(); ++i) {
    if (i == 0 || raw[i].pc != raw[i - 1].pc) std::fill(slot_of.begin(), slot_of.end(), -1);
    auto& slot = slot_of[raw[i].metric];
    if (slot < 0) {
      slot = static_cast<int64_t>(out.cells.size());
      out.cells.push_back({raw[i].pc, raw[i].metric, 0.0});
    }
    out.cells[slot].value += raw[i].value;
  }
  return out;
}

// A table over some metrics sorts its rows as the whole table would: by the
// whole table's default metric, which is therefore added to the subset. That
// is the first of the default order the kernel has PC values of; without one,
// the whole table's fallback (the first PC metric by name) needs every list,
// so nullptr says: build the whole table.
const std::vector<std::string>* with_default_metric(const model::Kernel& k, const PcRange& range,
                                                    const std::vector<std::string>& only,
                                                    std::vector<std::string>& subset) {
  for (const auto& name : only)
    if (std::find(subset.begin(), subset.end(), name) == subset.end()) subset.push_back(name);
  for (const auto& d : columns().default_order) {
    bool has = std::any_of(k.metrics.begin(), k.metrics.end(),
                           [&](const model::Metric& m) { return m.name == d && is_pc_metric(m, range); });
    if (!has) continue;
    if (std::find(subset.begin(), subset.end(), d) == subset.end()) subset.push_back(d);
    return &subset;
  }
  return nullptr;
}

// ------------------------------------------------------------ grouping

std::string_view basename(std::string_view path) {
  auto slash = path.find_last_of("/\\");
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// The embedded copy of `path`: same path, else the only file with the same
// base name (ncu stores the path it found on the profiling host).
const model::SourceFile* embedded_source(const model::Module* mod, std::string_view path) {
  if (!mod) return nullptr;
  const model::SourceFile* by_name = nullptr;
  int same_name = 0;
  for (const auto& f : mod->files) {
    if (f.path == path) return &f;
    if (basename(f.path) == basename(path)) by_name = &f, ++same_name;
  }
  return same_name == 1 ? by_name : nullptr;
}

std::string line_text(const model::SourceFile* file, int line) {
  if (!file || line <= 0) return "";
  size_t pos = 0;
  for (int i = 1; i < line; ++i) {
    pos = file->content.find('\n', pos);
    if (pos == std::string::npos) return "";
    ++pos;
  }
  auto end = file->content.find('\n', pos);
  std::string text = file->content.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
  if (!text.empty() && text.back() == '\r') text.pop_back();
  return text;
}

struct RowKey {
  std::string file;
  int line = 0;
  uint64_t offset = 0;  // only for SASS rows
  auto operator<=>(const RowKey&) const = default;
};

// A PC the line table does not cover (or every PC, without one) gets a SASS row.
RowKey row_key(const readers::Cubin* cubin, uint64_t pc, uint64_t start) {
  if (cubin && cubin->has_line_info())
    if (auto loc = cubin->location(pc)) return {loc->file, static_cast<int>(loc->line), 0};
  return {"", 0, pc - start};
}

// Sums per row in arrays (row x metric), PCs ascending as before; the rows'
// name-keyed maps are filled once at the end, one insert per metric a row has.
std::vector<SourceLineCost> group_rows(const PcValues& pcs, const readers::Cubin* cubin, uint64_t start) {
  std::map<RowKey, size_t> row_of;
  std::vector<SourceLineCost> rows;
  std::vector<double> sums;      // rows x metrics
  std::vector<uint8_t> present;  // rows x metrics
  const size_t width = pcs.names.size();
  size_t row = 0;
  for (size_t i = 0; i < pcs.cells.size(); ++i) {
    const auto& cell = pcs.cells[i];
    if (i == 0 || cell.pc != pcs.cells[i - 1].pc) {  // a new PC: find its row
      RowKey key = row_key(cubin, cell.pc, start);
      auto [it, added] = row_of.try_emplace(key, rows.size());
      if (added) {
        auto& r = rows.emplace_back();
        r.file = key.file, r.line = key.line, r.offset = cell.pc - start;  // PCs ascend
        sums.resize(sums.size() + width, 0.0);
        present.resize(present.size() + width, 0);
      }
      row = it->second;
      ++rows[row].instructions_mapped;
    }
    sums[row * width + cell.metric] += cell.value;
    present[row * width + cell.metric] = 1;
  }
  for (size_t r = 0; r < rows.size(); ++r)
    for (size_t m = 0; m < width; ++m)
      if (present[r * width + m]) rows[r].metrics.emplace(*pcs.names[m], sums[r * width + m]);
  // In row-key order, as the map of rows gave them.
  std::vector<SourceLineCost> out;
  out.reserve(rows.size());
  for (const auto& [key, r] : row_of) out.push_back(std::move(rows[r]));
  return out;
}

// ------------------------------------------------------------ the table

// Every kernel of a module shares one cubin, and decoding its DWARF line
// table dominates the cost of a source table: keep the last few decoded, keyed
// by content (hash and size), so a report with thousands of launches of the
// same module decodes it once.
Result<readers::Cubin> parse_cached(std::string_view binary) {
  struct Slot {
    size_t hash = 0, size = 0;
    std::shared_ptr<const Result<readers::Cubin>> cubin;
  };
  thread_local std::vector<Slot> cache;
  size_t h = std::hash<std::string_view>{}(binary);
  for (const auto& slot : cache)
    if (slot.hash == h && slot.size == binary.size()) return *slot.cubin;
  auto parsed = std::make_shared<const Result<readers::Cubin>>(readers::Cubin::parse(binary));
  if (cache.size() >= 8) cache.erase(cache.begin());
  cache.push_back({h, binary.size(), parsed});
  return *parsed;
}

std::optional<readers::Cubin> open_cubin(const model::Module* mod, SourceTable& t) {
  if (!mod || mod->binary.empty()) {
    t.notes.push_back("the report does not embed the kernel's cubin: showing SASS offsets");
    return std::nullopt;
  }
  auto cubin = parse_cached(mod->binary.view());
  if (!cubin) {
    t.notes.push_back(cubin.error().message + ": showing SASS offsets");
    return std::nullopt;
  }
  for (const auto& w : cubin->warnings()) t.notes.push_back(w);
  if (!cubin->has_line_info())
    t.notes.push_back("the cubin has no line table (build with -lineinfo): showing SASS offsets");
  return std::move(*cubin);
}

PcRange kernel_range(const readers::Cubin* cubin, const model::Kernel& k, uint64_t start) {
  const readers::CubinSymbol* sym = cubin ? cubin->symbol(k.mangled) : nullptr;
  if (sym && sym->value == start && sym->size > 0) return {start, start + sym->size};
  return {start, start + kMaxKernelBytes};
}

void add_totals(SourceTable& t) {
  for (const auto& row : t.lines)
    for (const auto& [name, v] : row.metrics) t.totals[name] += v;
}

std::string default_metric(const SourceTable& t) {
  for (const auto& m : columns().default_order)
    if (t.has(m)) return m;
  return t.totals.empty() ? std::string() : t.totals.begin()->first;
}

void attach_text(SourceTable& t, const model::Module* mod) {
  for (auto& row : t.lines)
    if (!row.is_sass()) row.text = line_text(embedded_source(mod, row.file), row.line);
}

}  // namespace

// ------------------------------------------------------------ SourceLineCost

double SourceLineCost::value(std::string_view metric) const {
  auto it = metrics.find(metric);
  return it == metrics.end() ? 0 : it->second;
}
double SourceLineCost::samples() const { return value(alias_metric("samples")); }
double SourceLineCost::executed_instructions() const { return value(alias_metric("instructions")); }
double SourceLineCost::thread_instructions() const { return value(alias_metric("thread_instructions")); }
double SourceLineCost::excess_global_sectors() const { return value(alias_metric("excess_global_sectors")); }
double SourceLineCost::excess_shared_wavefronts() const { return value(alias_metric("excess_shared_wavefronts")); }

std::vector<std::pair<std::string, double>> SourceLineCost::stalls() const {
  const auto& c = columns();
  std::vector<std::pair<std::string, double>> out;
  for (const auto& [name, v] : metrics) {
    if (!name.starts_with(c.stall_prefix) || name.ends_with(c.stall_exclude_suffix) || v <= 0) continue;
    out.emplace_back(name.substr(c.stall_prefix.size()), v);
  }
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  return out;
}

double SourceTable::share(const SourceLineCost& row, std::string_view metric) const {
  auto it = totals.find(metric);
  if (it == totals.end() || it->second <= 0) return 0;
  return row.value(metric) / it->second;
}

// ------------------------------------------------------------ public API

std::string resolve_metric(std::string_view alias) {
  if (columns().aliases.contains(alias)) return alias_metric(alias);
  if (alias.find("__") == std::string_view::npos && !alias.empty())
    return columns().stall_prefix + std::string(alias);  // a stall reason
  return std::string(alias);
}

void sort_by(SourceTable& t, std::string_view metric) {
  t.sorted_by = std::string(metric);
  // Each row's value looked up once and the rows moved once: sorting the rows
  // themselves looked a map up and moved a row per comparison, a third of
  // analysing a kernel with per-PC counters.
  std::vector<std::pair<double, size_t>> keys;
  keys.reserve(t.lines.size());
  for (size_t i = 0; i < t.lines.size(); ++i) keys.emplace_back(t.lines[i].value(metric), i);
  std::stable_sort(keys.begin(), keys.end(), [&](const auto& x, const auto& y) {
    if (x.first != y.first) return x.first > y.first;
    const SourceLineCost &a = t.lines[x.second], &b = t.lines[y.second];
    return std::tie(a.file, a.line, a.offset) < std::tie(b.file, b.line, b.offset);
  });
  std::vector<SourceLineCost> sorted;
  sorted.reserve(t.lines.size());
  for (const auto& [value, i] : keys) sorted.push_back(std::move(t.lines[i]));
  t.lines = std::move(sorted);
}

static SourceTable build_table(const model::Report& report, const model::Kernel& kernel,
                               const std::vector<std::string>* only) {
  SourceTable t;
  auto start = kernel_start(kernel);
  if (!start) {
    t.notes.push_back("the kernel has no start PC (launch__function_pcs): no source view");
    return t;
  }
  t.kernel_start = *start;
  const model::Module* mod = report.module_for(kernel);
  auto cubin = open_cubin(mod, t);
  const readers::Cubin* c = cubin ? &*cubin : nullptr;
  PcRange range = kernel_range(c, kernel, *start);
  std::vector<std::string> subset;
  if (only) only = with_default_metric(kernel, range, *only, subset);
  auto pcs = collect_pc_values(kernel, range, only);
  if (pcs.empty()) {
    t.notes = {"the kernel has no per-instruction source counters (profile with --section SourceCounters)"};
    return t;
  }
  t.level = c && c->has_line_info() ? SourceLevel::Source : SourceLevel::Sass;
  t.lines = group_rows(pcs, c, *start);
  add_totals(t);
  attach_text(t, mod);
  sort_by(t, default_metric(t));
  return t;
}

SourceTable source_table(const model::Report& report, const model::Kernel& kernel) {
  return build_table(report, kernel, nullptr);
}

SourceTable source_table(const model::Report& report, const model::Kernel& kernel,
                         const std::vector<std::string>& only) {
  return build_table(report, kernel, &only);
}

std::optional<SourceRef> kernel_location(const model::Report& report, const model::Kernel& kernel) {
  auto start = kernel_start(kernel);
  const model::Module* mod = start ? report.module_for(kernel) : nullptr;
  if (!mod || mod->binary.empty()) return std::nullopt;
  auto cubin = parse_cached(mod->binary.view());
  if (!cubin || !cubin->has_line_info()) return std::nullopt;
  // The entry PC itself may sit in a range the line table leaves out (a
  // prologue); then the first covered instruction of the kernel stands in.
  PcRange range = kernel_range(&*cubin, kernel, *start);
  const auto& ranges = cubin->ranges();  // sorted, non-overlapping: ends ascend too
  auto it = std::partition_point(ranges.begin(), ranges.end(), [&](const auto& r) { return r.end <= range.begin; });
  for (; it != ranges.end() && it->begin < range.end; ++it)
    if (it->line > 0 && it->file < cubin->files().size())
      return SourceRef{cubin->files()[it->file], static_cast<int>(it->line), 0, ""};
  return std::nullopt;
}

std::vector<SourceLineCost> source_lines(const model::Report& report, const model::Kernel& kernel) {
  return source_table(report, kernel).lines;
}

std::vector<SourceRef> hottest_lines(const SourceTable& table, std::string_view metric_or_alias, size_t n) {
  std::string metric = resolve_metric(metric_or_alias);
  std::vector<std::pair<double, const SourceLineCost*>> rows;  // each value looked up once
  for (const auto& r : table.lines)
    if (double v = r.value(metric); v > 0) rows.emplace_back(v, &r);
  std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<SourceRef> out;
  for (size_t i = 0; i < rows.size() && i < n; ++i) {
    const SourceLineCost& r = *rows[i].second;
    std::string text = r.is_sass() ? fmt::format("SASS +{:#x}", r.offset) : r.text;
    out.push_back({r.file, r.line, table.share(r, metric), std::move(text), r.offset, r.sass});
  }
  return out;
}

std::vector<SourceRef> hottest_lines_for(const model::Report& report, const model::Kernel& kernel,
                                         std::string_view metric, size_t n) {
  return hottest_lines(source_table(report, kernel), metric, n);
}

}  // namespace keet::analysis
