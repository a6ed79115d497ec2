// keet export R --format csv|json: a drop-in for `ncu --import R --page raw
// --csv --print-units base`, or the whole model as JSON.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include <nlohmann/json.hpp>

#include <CLI/CLI.hpp>

#include "app/commands.h"
#include "app/common.h"
#include "render/raw_csv.h"
#include "render/report_json.h"
#include "util/json.h"
#include "util/pattern.h"

namespace keet::app {
namespace {

struct ExportArgs {
  ReportArgs report;
  std::string format;
  std::vector<std::string> metrics;  // --metrics: names or regex:<pattern>, as ncu's
  std::string units = "base";        // --print-units
};

// --metrics, as ncu's: metric names, or regex:<pattern> searched in names.
// Empty: every metric.
class MetricPick {
 public:
  static Result<MetricPick> parse(const std::vector<std::string>& specs) {
    MetricPick p;
    for (const auto& spec : specs) {
      if (!spec.starts_with("regex:")) {
        p.names_.insert(spec);
        continue;
      }
      auto re = Pattern::compile(spec.substr(6));
      if (!re)
        return fail(ExitCode::BadInput, fmt::format("--metrics {}: invalid regular expression: {}", spec, re.error()));
      p.patterns_.push_back(std::move(*re));
    }
    return p;
  }
  bool all() const { return names_.empty() && patterns_.empty(); }
  bool operator()(std::string_view metric) const {
    if (all() || names_.contains(metric)) return true;
    return std::ranges::any_of(patterns_, [&](const Pattern& re) { return re.search(metric); });
  }

 private:
  std::set<std::string, std::less<>> names_;
  std::vector<Pattern> patterns_;
};

// What the first pass over a binary report learns: the column set of the
// selected kernels. (The first one's chip decides the units row: the second
// pass, which decodes values, writes the header when that kernel arrives.)
struct Columns {
  model::Report head;
  std::vector<std::string> names;  // sorted once, at the end of the pass
  size_t seen = 0, selected = 0;
  bool lacked_nvtx = false;  // an NVTX filter on a report without NVTX data
  // --print-units auto: each column's largest magnitude (ncu scales a column by it).
  std::map<std::string, double, std::less<>> magnitude;
};

model::PrintUnits print_units(const ExportArgs& a) {
  return model::parse_print_units(a.units).value_or(model::PrintUnits::Base);
}

void note_magnitudes(const model::Kernel& k, std::map<std::string, double, std::less<>>& magnitude) {
  for (const auto& m : k.metrics)
    if (auto v = m.value.as_number(); v && std::isfinite(*v)) {
      auto [it, added] = magnitude.try_emplace(m.name, 0.0);
      it->second = std::max(it->second, std::fabs(*v));
    }
}

// The column set as marks over the report's string-table ids: a metric of a
// selected kernel costs an array read, and a name is copied when first seen.
class ColumnMarks {
 public:
  explicit ColumnMarks(const MetricPick& pick) : pick_(pick) {}
  void add(const model::Kernel& k) {
    for (const auto& m : k.metrics) {
      if (m.name_id == model::Metric::kNoNameId) {  // not from a string table: by name (sorted() removes repeats)
        if (!render::raw_csv_hidden(m.name) && pick_(m.name)) names_.push_back(m.name), ids_.push_back(m.name_id);
        continue;
      }
      if (m.name_id >= state_.size()) state_.resize(size_t{m.name_id} + 1, kUnknown);
      auto& s = state_[m.name_id];
      if (s == kUnknown) s = render::raw_csv_hidden(m.name) || !pick_(m.name) ? kNotColumn : kColumn;
      if (s == kColumn) s = kTaken, names_.push_back(m.name), ids_.push_back(m.name_id);
    }
  }
  // Whether metrics of this string-table id are a column (add() saw the id).
  bool column(uint32_t id) const { return id < state_.size() && state_[id] == kTaken; }
  // The column names, sorted; with `column_of_id`, each string-table id's
  // column (-1: none). Sorts positions, not strings.
  std::vector<std::string> sorted(std::vector<int32_t>* column_of_id = nullptr) {
    std::vector<uint32_t> order(names_.size());
    for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
    auto by_name = [&](uint32_t a, uint32_t b) { return names_[a] < names_[b]; };
    if (!std::is_sorted(order.begin(), order.end(), by_name)) std::sort(order.begin(), order.end(), by_name);
    if (column_of_id) column_of_id->assign(state_.size(), -1);
    std::vector<std::string> out;
    out.reserve(order.size());
    for (uint32_t i : order) {
      if (out.empty() || out.back() != names_[i]) out.push_back(std::move(names_[i]));  // a name the table holds twice
      if (column_of_id && ids_[i] != model::Metric::kNoNameId)
        (*column_of_id)[ids_[i]] = static_cast<int32_t>(out.size() - 1);
    }
    return out;
  }

 private:
  enum : uint8_t { kUnknown, kNotColumn, kColumn, kTaken };
  const MetricPick& pick_;
  std::vector<uint8_t> state_;      // by name id
  std::vector<std::string> names_;  // in the order first seen
  std::vector<uint32_t> ids_;       // of names_
};

// The reader keeps only the metrics that may be columns (its filter is asked
// once per name), by name alone: values are decoded only for `magnitudes`,
// each column's largest value (--print-units auto).
Result<Columns> scan_columns(const io::ByteSource& src, model::KernelFilter sel, const MetricPick& pick,
                             bool magnitudes) {
  Columns c;
  ColumnMarks marks(pick);
  readers::ReadOptions opt;
  opt.instances = opt.rules = opt.modules = false;
  opt.metric_values = magnitudes;
  opt.allow_partial = true;  // the second pass decides what a truncation means
  opt.metric_filter = [&](std::string_view n) { return !render::raw_csv_hidden(n) && pick(n); };
  opt.metric_filter_by_name = true;
  auto ok = readers::stream_into(src, opt, c.head, [&](model::Kernel&& k) {
    ++c.seen;
    if (sel.take(k)) {
      marks.add(k);
      if (magnitudes) note_magnitudes(k, c.magnitude);
      ++c.selected;
    }
    return true;
  });
  if (!ok) return fail(ExitCode::BadInput, ok.error().message());
  c.names = marks.sorted();
  c.lacked_nvtx = sel.lacked_nvtx();
  return c;
}

// `first`: the first selected kernel, whole (null when none is).
render::RawCsvWriter make_writer(const Columns& c, model::PrintUnits print_units, const model::Kernel* first_kernel) {
  std::vector<const model::Kernel*> first;
  if (first_kernel) first.push_back(first_kernel);
  render::RawCsvWriter writer({c.names.begin(), c.names.end()}, render::raw_csv_units(c.names, first));
  if (print_units == model::PrintUnits::Auto) {
    std::vector<double> magnitudes;
    for (const auto& n : c.names) magnitudes.push_back(c.magnitude.contains(n) ? c.magnitude.at(n) : 0.0);
    writer.scale_columns(magnitudes);
  }
  return writer;
}

// Second pass: each selected kernel becomes a row as it is read and is then
// dropped, so memory stays flat on reports with thousands of kernels.
ExitCode stream_rows(Context& ctx, const ExportArgs& a, const io::ByteSource& src, model::KernelFilter sel,
                     const Columns& c) {
  for (const auto& w : c.head.warnings) ctx.err << "keet: warning: " << w << "\n";
  std::optional<render::RawCsvWriter> writer;  // made, and the header written, at the first selected kernel
  std::string out;
  auto start = [&](const model::Kernel* first) {
    writer.emplace(make_writer(c, print_units(a), first));
    writer->append_header(out);
  };
  readers::ReadOptions opt;
  opt.modules = opt.rules = false;  // the raw page shows neither
  opt.instances = false;            // a cell only needs to know a list exists (Metric::listed)
  opt.allow_partial = a.report.allow_partial;
  model::Report report;
  auto ok = readers::stream_into(src, opt, report, [&](model::Kernel&& k) {
    if (!sel.take(k)) return !sel.done();
    if (!writer) start(&k);
    writer->append_row(c.head, k, out);  // the first pass saw the whole session
    if (out.size() > (1u << 20)) ctx.out << out, out.clear();
    return true;
  });
  if (!writer) start(nullptr);
  ctx.out << out;
  // The column pass did not decode values, so damage inside one is seen here.
  for (const auto& w : report.warnings)
    if (std::ranges::find(c.head.warnings, w) == c.head.warnings.end()) ctx.err << "keet: warning: " << w << "\n";
  if (!ok) return report_error(ctx, Error{ExitCode::BadInput, ok.error().message()});
  return (c.head.partial || report.partial) && !a.report.allow_partial ? ExitCode::BadInput : ExitCode::Ok;
}

// A report whose selected kernels hold at most this many metrics is read
// once, keeping for each selected kernel only what its row needs (below);
// the columns are known at the end of the read and the rows are written
// then. A bigger one is read twice (columns by name, then rows) so memory
// stays flat. KEET_EXPORT_HOLD_METRICS overrides it (0: always two passes),
// which lets the tests compare the two paths on one report.
constexpr size_t kHoldMetrics = 500'000;  // about 12 MB held

size_t hold_limit(Context& ctx) {
  auto text = ctx.getenv("KEET_EXPORT_HOLD_METRICS");
  size_t v = kHoldMetrics;
  if (!text.empty()) std::from_chars(text.data(), text.data() + text.size(), v);
  return v;
}

// A kernel with its fields but none of its metrics: what a row's first cells need.
model::Kernel row_fields(const model::Kernel& k) {
  model::Kernel f;
  f.index = k.index;
  f.mangled = k.mangled;
  f.function = k.function;
  f.demangled = k.demangled;
  f.context_id = k.context_id;
  f.stream_id = k.stream_id;
  f.creation_time = k.creation_time;
  f.process_id = k.process_id;
  f.process_name = k.process_name;
  f.host_name = k.host_name;
  return f;
}

// What the one-pass read keeps: per selected kernel its fields, and the text
// of each cell that may be a column, written as it was decoded (12 bytes and
// the text per metric, where keeping the kernels whole cost about 100 bytes
// and a name per metric, which made the read slower than reading twice).
struct Held {
  struct Cell {
    uint32_t name_id, at, size;  // `size` bytes of `text` from `at`
  };
  Columns columns;  // its head is the whole report's
  std::vector<int32_t> column_of_id;
  std::vector<model::Kernel> rows;  // row_fields() of each selected kernel
  std::vector<size_t> first_cell;   // of each row in `cells`, and the end
  std::vector<Cell> cells;
  std::string text;
  bool chip_has_units = true;  // of the first selected kernel (the units row)
};

// The one-pass read: nullopt when the selected kernels exceed `limit`
// metrics, when the read was not clean (an error, a warning, a partial
// report), or when a metric has no string-table id, where the two passes
// decide what to print and how to exit. Base units only (auto scales a
// column by values not read yet).
std::optional<Held> read_whole(const io::ByteSource& src, model::KernelFilter sel, const MetricPick& pick,
                               size_t limit) {
  Held h;
  ColumnMarks marks(pick);
  readers::ReadOptions opt;  // as the row pass reads
  opt.modules = opt.rules = false;
  opt.instances = false;
  size_t held = 0;
  bool refused = false;
  auto ok = readers::stream_into(src, opt, h.columns.head, [&](model::Kernel&& k) {
    ++h.columns.seen;
    if (!sel.take(k)) return true;
    held += k.metrics.size();
    if (held > limit || h.text.size() > UINT32_MAX / 2) return refused = true, false;
    marks.add(k);
    if (h.rows.empty()) h.chip_has_units = model::chip_has_units(k);
    h.first_cell.push_back(h.cells.size());
    for (const auto& m : k.metrics) {
      if (m.name_id == model::Metric::kNoNameId) return refused = true, false;
      if (!marks.column(m.name_id)) continue;
      auto at = static_cast<uint32_t>(h.text.size());
      model::append_csv_cell(h.text, m);
      h.cells.push_back({m.name_id, at, static_cast<uint32_t>(h.text.size() - at)});
    }
    h.rows.push_back(row_fields(k));
    ++h.columns.selected;
    return true;  // the kernel's buffers are decoded into again
  });
  if (!ok || refused || h.columns.head.partial || !h.columns.head.warnings.empty()) return std::nullopt;
  h.first_cell.push_back(h.cells.size());
  h.columns.names = marks.sorted(&h.column_of_id);
  h.columns.lacked_nvtx = sel.lacked_nvtx();
  return h;
}

ExitCode write_held(Context& ctx, Held& h) {
  std::string out;
  auto units = model::units_of(h.columns.names, h.chip_has_units);
  render::RawCsvWriter writer(std::move(h.columns.names), std::move(units));
  writer.append_header(out);
  // A cell not filled yet has no data pointer; a filled one, even empty,
  // points into `text`.
  std::vector<std::string_view> row(writer.columns().size());
  for (size_t r = 0; r < h.rows.size(); ++r) {
    std::fill(row.begin(), row.end(), std::string_view());
    for (size_t i = h.first_cell[r]; i < h.first_cell[r + 1]; ++i) {
      const auto& cell = h.cells[i];
      int32_t c = h.column_of_id[cell.name_id];
      if (c < 0 || row[c].data() != nullptr) continue;  // the first metric of a repeated name wins, as append_row's
      row[c] = std::string_view(h.text).substr(cell.at, cell.size);
    }
    writer.append_row(h.columns.head, h.rows[r], row, out);
    if (out.size() > (1u << 20)) ctx.out << out, out.clear();
  }
  ctx.out << out;
  return ExitCode::Ok;
}

bool is_binary_report(const io::ByteSource& src) {
  const auto* r = readers::find_reader(src.bytes());
  return r != nullptr && (r->name == "ncu-rep" || r->name == "ncu-repz");
}

ExitCode export_binary_csv(Context& ctx, const ExportArgs& a, const io::ByteSource& src) {
  auto sel = kernel_filter(a.report);
  if (!sel) return report_error(ctx, sel.error());
  auto pick = MetricPick::parse(a.metrics);
  if (!pick) return report_error(ctx, pick.error());
  bool magnitudes = print_units(a) == model::PrintUnits::Auto;
  auto refused = [&](const Columns& c) -> std::optional<ExitCode> {
    if (c.lacked_nvtx) return report_error(ctx, no_nvtx_error(a.report));
    if (c.selected == 0 && c.seen > 0 && !sel->all()) return report_error(ctx, no_kernel_matches(a.report));
    return std::nullopt;
  };
  // Each read counts -s/-c afresh (the filter is copied).
  if (!magnitudes)
    if (auto held = read_whole(src, *sel, *pick, hold_limit(ctx))) {
      if (auto rc = refused(held->columns)) return *rc;
      return write_held(ctx, *held);
    }
  auto cols = scan_columns(src, *sel, *pick, magnitudes);
  if (!cols) return report_error(ctx, cols.error());
  if (auto rc = refused(*cols)) return *rc;
  return stream_rows(ctx, a, src, *sel, *cols);
}

// keet.export/1 kernel by kernel ("kernels" sorts first among its members,
// so the document is written in the order json_text() would write it whole).
ExitCode export_json(Context& ctx, const ExportArgs& a) {
  if (a.units != "base")
    return report_error(ctx,
                        Error{ExitCode::BadInput, "--print-units applies to --format csv (JSON keeps base units)"});
  auto pick = MetricPick::parse(a.metrics);
  if (!pick) return report_error(ctx, pick.error());
  readers::ReadOptions opt;
  opt.modules = false;  // instances stay: the export lists them
  if (!pick->all()) opt.metric_filter = *pick;
  JsonObjectStream doc(ctx.out, 1);
  std::optional<JsonArrayStream> kernels;
  model::Report head;
  auto ok = stream_report(ctx, a.report, opt, head,
                          {.begin = [&](const model::Report&) { kernels.emplace(doc.array_member("kernels")); },
                           .visit =
                               [&](model::Kernel&& k, const model::Report&) {
                                 kernels->add(render::export_kernel_json(k));
                                 return true;
                               }});
  if (!ok) return report_error(ctx, ok.error());
  kernels->close();
  auto rest = render::report_json(head, {});  // everything but the kernels
  for (const auto& [key, value] : rest.items())
    if (key != "kernels") doc.member(key, value);
  doc.close();
  return ok->partial_exit;
}

ExitCode export_csv(Context& ctx, const ExportArgs& a) {
  auto src = open_report(a.report.path);
  if (src && is_binary_report(**src)) return export_binary_csv(ctx, a, **src);
  // CSV inputs: their units come from the file, and the column set needs every
  // kernel; such files are small next to binary reports.
  auto pick = MetricPick::parse(a.metrics);
  if (!pick) return report_error(ctx, pick.error());
  readers::ReadOptions opt;
  opt.modules = false;
  opt.instances = true;  // csv prints "" (not "no data") for a value-less metric that has them
  if (!pick->all()) opt.metric_filter = *pick;
  auto loaded = load_report(ctx, a.report, opt);
  if (!loaded) return report_error(ctx, loaded.error());
  ctx.out << render::raw_csv(loaded->report, loaded->selected, print_units(a));
  return loaded->partial_exit;
}

// export's formats: the runner each --format name selects (the first is the default).
struct ExportFormat {
  std::string_view name;
  ExitCode (*run)(Context&, const ExportArgs&);
};
constexpr ExportFormat kExportFormats[] = {{"csv", export_csv}, {"json", export_json}};

}  // namespace

Command export_command() {
  return {"export", "export metrics as ncu-compatible raw CSV or as JSON", [](CLI::App& sub, Action& action) {
            auto a = std::make_shared<ExportArgs>();
            add_report_args(sub, a->report);
            add_format(sub, a->format, format_names(kExportFormats));
            sub.add_option("--metrics", a->metrics,
                           "only these metrics: names or regex:<pattern>, comma-separated or repeated (as ncu)")
                ->delimiter(',');
            sub.add_option("--print-units", a->units,
                           "csv: base (as ncu --print-units base) or auto (scaled with SI prefixes, as ncu's auto)")
                ->check(CLI::IsMember({"base", "auto"}))
                ->capture_default_str();
            sub.callback([a, &action] {
              action = [a](Context& ctx) { return find_format(kExportFormats, a->format).run(ctx, *a); };
            });
          }};
}

}  // namespace keet::app
