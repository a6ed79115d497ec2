// keet source R -k SEL [--top N] [--by samples|instructions|<metric>]:
// the kernel's per-PC source counters summed per CUDA source line (or per
// SASS instruction when the cubin has no line table, with the instruction
// when nvdisasm or cuobjdump is found: app/disassembler.h), costliest first.
#include <algorithm>
#include <memory>
#include <optional>
#include <ostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <CLI/CLI.hpp>

#include "analysis/sass.h"
#include "analysis/source_costs.h"
#include "app/commands.h"
#include "app/common.h"
#include "app/disassembler.h"
#include "render/table.h"
#include "util/json.h"

namespace keet::app {
namespace {

struct SourceArgs {
  ReportArgs report;
  int top = 20;
  std::string by;
  std::string format;
};

std::string_view level_name(analysis::SourceLevel l) {
  switch (l) {
    case analysis::SourceLevel::Source:
      return "source";
    case analysis::SourceLevel::Sass:
      return "sass";
    case analysis::SourceLevel::None:
      break;
  }
  return "none";
}

std::string_view basename(std::string_view path) {
  auto slash = path.find_last_of("/\\");
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

std::string location(const analysis::SourceLineCost& r) {
  if (r.is_sass()) return fmt::format("+{:#06x}", r.offset);
  return fmt::format("{}:{}", basename(r.file), r.line);
}

std::string count_text(double v) { return v == 0 ? "-" : fmt::format("{:.0f}", v); }

std::string top_stall(const analysis::SourceLineCost& r) {
  auto stalls = r.stalls();
  if (stalls.empty() || r.samples() <= 0) return "-";
  return fmt::format("{} {:.0f}%", stalls.front().first, 100 * stalls.front().second / r.samples());
}

size_t row_limit(const SourceArgs& a, const analysis::SourceTable& t) {
  return a.top <= 0 ? t.lines.size() : std::min<size_t>(a.top, t.lines.size());
}

// The metric the rows are ordered by: --by, else the table's default.
std::string order_metric(const SourceArgs& a, const analysis::SourceTable& t) {
  return a.by.empty() ? t.sorted_by : analysis::resolve_metric(a.by);
}

// --------------------------------------------------------------- table

void print_notes(std::ostream& out, const analysis::SourceTable& t) {
  for (const auto& n : t.notes) out << "note: " << n << "\n";
}

std::vector<std::string> table_row(const analysis::SourceTable& t, const analysis::SourceLineCost& r,
                                   const std::string& by, bool extra) {
  std::vector<std::string> row{location(r), fmt::format("{:.1f}%", 100 * t.share(r, by)), count_text(r.samples()),
                               count_text(r.executed_instructions())};
  if (extra) row.push_back(count_text(r.value(by)));
  row.push_back(top_stall(r));
  row.push_back(r.is_sass() ? r.sass : r.text);
  return row;
}

void print_kernel_table(std::ostream& out, const SourceArgs& a, const model::Kernel& k, analysis::SourceTable& t) {
  out << fmt::format("[{}] {}\n", k.index, k.display_name());
  print_notes(out, t);
  if (t.level == analysis::SourceLevel::None) return;
  std::string by = order_metric(a, t);
  analysis::sort_by(t, by);
  bool extra = by != analysis::resolve_metric("samples") && by != analysis::resolve_metric("instructions");
  std::vector<std::string> header{t.level == analysis::SourceLevel::Source ? "line" : "sass", "share", "samples",
                                  "instructions"};
  if (extra) header.push_back(a.by.empty() ? by : a.by);  // the short name the user typed
  header.insert(header.end(), {"top stall", "code"});
  render::Table table(header);
  table.right_align(extra ? std::vector<size_t>{1, 2, 3, 4} : std::vector<size_t>{1, 2, 3});
  for (size_t i = 0; i < row_limit(a, t); ++i) table.add(table_row(t, t.lines[i], by, extra));
  out << fmt::format("{} of {} rows by {} (share = fraction of the kernel's total)\n", row_limit(a, t), t.lines.size(),
                     by);
  out << table.str(120) << "\n";
}

// ---------------------------------------------------------------- json

nlohmann::json line_json(const analysis::SourceTable& t, const analysis::SourceLineCost& r, const std::string& by) {
  nlohmann::json stalls = nlohmann::json::object();
  for (const auto& [reason, v] : r.stalls()) stalls[reason] = v;
  nlohmann::json j{{"file", r.file},
                   {"line", r.line},
                   {"offset", r.offset},
                   {"instructions_mapped", r.instructions_mapped},
                   {"text", r.text},
                   {"sass", r.sass},
                   {"share", t.share(r, by)},
                   {"samples", r.samples()},
                   {"executed_instructions", r.executed_instructions()},
                   {"thread_instructions", r.thread_instructions()},
                   {"excess_global_sectors", r.excess_global_sectors()},
                   {"excess_shared_wavefronts", r.excess_shared_wavefronts()},
                   {"stalls", stalls},
                   {"metrics", r.metrics}};
  return j;
}

nlohmann::json kernel_json(const SourceArgs& a, const model::Kernel& k, analysis::SourceTable& t) {
  std::string by = order_metric(a, t);
  if (!by.empty()) analysis::sort_by(t, by);
  nlohmann::json lines = nlohmann::json::array();
  for (size_t i = 0; i < row_limit(a, t); ++i) lines.push_back(line_json(t, t.lines[i], by));
  return {{"index", k.index},     {"name", k.display_name()},
          {"mangled", k.mangled}, {"level", level_name(t.level)},
          {"sorted_by", by},      {"kernel_start", t.kernel_start},
          {"totals", t.totals},   {"row_count", t.lines.size()},
          {"notes", t.notes},     {"lines", lines}};
}

// ---------------------------------------------------------------- formats

// One --format's writer: it sees each kernel's table as it is made (then
// dropped); begin() comes before the first kernel, end() after the last.
class SourceSink {
 public:
  SourceSink(std::ostream& out, const SourceArgs& a) : out_(out), a_(a) {}
  virtual ~SourceSink() = default;
  virtual void begin() {}
  virtual void kernel(const model::Kernel& k, analysis::SourceTable& t) = 0;
  virtual void end() {}

 protected:
  std::ostream& out_;
  const SourceArgs& a_;
};

class SourceTableSink : public SourceSink {
 public:
  using SourceSink::SourceSink;
  void kernel(const model::Kernel& k, analysis::SourceTable& t) override { print_kernel_table(out_, a_, k, t); }
};

class SourceJsonSink : public SourceSink {
 public:
  SourceJsonSink(std::ostream& out, const SourceArgs& a) : SourceSink(out, a), doc_(out, "kernels") {}
  void begin() override { doc_.open(); }
  void kernel(const model::Kernel& k, analysis::SourceTable& t) override { doc_.add(kernel_json(a_, k, t)); }
  void end() override { doc_.close(); }

 private:
  JsonArrayDocument doc_;
};

// source's formats: the sink each --format name makes (the first is the default).
struct SourceFormat {
  std::string_view name;
  std::unique_ptr<SourceSink> (*make)(std::ostream&, const SourceArgs&);
};
template <class Sink>
std::unique_ptr<SourceSink> make_sink(std::ostream& out, const SourceArgs& a) {
  return std::make_unique<Sink>(out, a);
}
constexpr SourceFormat kSourceFormats[] = {{"table", make_sink<SourceTableSink>}, {"json", make_sink<SourceJsonSink>}};

// Why the SASS rows show no instruction, unless a note says it already (a
// report without the cubin is named once).
void add_sass_note(analysis::SourceTable& t, const std::string& why) {
  if (why.empty() || std::ranges::any_of(t.notes, [&](const std::string& n) { return n.starts_with(why); })) return;
  t.notes.push_back(analysis::sass_note(why));
}

// ----------------------------------------------------------------- run

// --by must name something at least one selected kernel has per PC. A first
// pass looks for one (and stops at it), so nothing is written before a bad
// --by is known.
Result<void> check_by(Context& ctx, const SourceArgs& a, const model::Report& complete) {
  if (a.by.empty()) return {};
  std::string metric = analysis::resolve_metric(a.by);
  bool found = false, any_source = false;
  model::Report head;
  auto opt = kernel_pass_options();
  opt.allow_partial = true;
  KEET_TRY(ok, stream_report(ctx, a.report, opt, head,
                             {.visit =
                                  [&](model::Kernel&& k, const model::Report& h) {
                                    auto t = analysis::source_table(h, k);
                                    found = t.has(metric);
                                    any_source |= t.level != analysis::SourceLevel::None;
                                    return !found;
                                  },
                              .quiet = true,
                              .context = &complete}));
  if (found || !any_source) return {};  // nothing to sort: the notes explain why
  return fail(ExitCode::BadInput, fmt::format("--by {}: no selected kernel has per-PC values of {}", a.by, metric));
}

// Each kernel's table is made, written and dropped as the kernel is read.
ExitCode run_source(Context& ctx, const SourceArgs& a) {
  auto complete = read_head(ctx, a.report);  // a kernel's module may come after it
  if (!complete) return report_error(ctx, complete.error());
  if (auto ok = check_by(ctx, a, *complete); !ok) return report_error(ctx, ok.error());
  auto sink = find_format(kSourceFormats, a.format).make(ctx.out, a);
  auto begin = [&](const model::Report&) { sink->begin(); };
  RunSass sass(ctx);
  auto visit = [&](model::Kernel&& k, const model::Report& head) {
    auto t = analysis::source_table(head, k);
    add_sass_note(t, sass.instructions()->annotate(t, head, k));
    sink->kernel(k, t);
    return true;
  };
  model::Report head;
  auto ok = stream_report(ctx, a.report, kernel_pass_options(), head,
                          {.begin = begin, .visit = visit, .context = &*complete});
  if (!ok) return report_error(ctx, ok.error());
  sink->end();
  return ok->partial_exit;
}

}  // namespace

Command source_command() {
  return {"source", "per-source-line costs (stall samples, instructions) of the selected kernels",
          [](CLI::App& sub, Action& action) {
            auto a = std::make_shared<SourceArgs>();
            add_report_args(sub, a->report);
            sub.add_option("--top,-n", a->top, "rows per kernel (0 = all)")->capture_default_str();
            sub.add_option("--by", a->by,
                           "sort by: samples, instructions, thread_instructions, excess_global_sectors, "
                           "excess_shared_wavefronts, a stall reason (long_scoreboard) or a per-PC metric name");
            add_format(sub, a->format, format_names(kSourceFormats));
            sub.callback([a, &action] { action = [a](Context& ctx) { return run_source(ctx, *a); }; });
          }};
}

}  // namespace keet::app
