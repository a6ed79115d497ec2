// keet analyze R: the expert diagnosis (no LLM needed).
//
// Kernels stream through the engine one at a time and each is written as soon
// as it is analysed, so memory stays flat however many kernels the report
// holds. Text, markdown and HTML open with the ranking of all kernels, which a
// cheap first pass (names and durations only) builds; JSON needs no ranking.
// With --llm the engine's answer for every kernel is written first and the
// narratives follow, so a slow or dead provider never holds back the
// deterministic answer (JSON, one document, carries each narrative inside its
// kernel and is written once they are in).
#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string_view>

#include <fmt/format.h>

#include <CLI/CLI.hpp>

#include "analysis/derived.h"
#include "analysis/engine.h"
#include "analysis/ranking.h"
#include "analysis/report_view.h"
#include "analysis/timeline_join.h"
#include "app/analyze.h"
#include "app/commands.h"
#include "app/common.h"
#include "app/compare.h"
#include "app/disassembler.h"
#include "app/llm_flags.h"
#include "app/pipeline.h"
#include "app/timeline_input.h"
#include "compare/calibration.h"
#include "llm/explain.h"
#include "readers/reader.h"
#include "render/analysis_json.h"
#include "render/analysis_text.h"
#include "render/html.h"
#include "render/html_parts.h"
#include "render/llm_markdown.h"
#include "render/markdown.h"
#include "render/timeline.h"
#include "util/error.h"
#include "util/json.h"

namespace keet::app {
namespace {

// The timeline of the run and what the analysed kernels were (for the join).
struct AppView {
  model::TimelineSummary timeline;
  double threshold = 0.5;
  std::vector<analysis::ProfiledKernel> profiled;
  analysis::TimelineJoin join() const { return analysis::join_timeline(timeline, profiled, threshold); }
};

// "calibrated: 1.42x (formula 1.80x x median ratio 0.79 over 3 pair(s) on 8.6)", per finding with an estimate.
std::string calibrated_text(const AnalyzeArgs& a, const model::Kernel& k, const analysis::KernelDiagnosis& d) {
  std::string arch = compare::arch_of_device(device_of(k)), out;
  for (const auto& f : d.findings) {
    if (!f.estimated_speedup) continue;
    auto row = compare::calibration_for(a.calibration, f.id, arch);
    if (!row) continue;
    out += fmt::format(
        "  {}: formula {:.2f}x, calibrated {:.2f}x (median measured/predicted {:.2f} over {} pair(s) on {})\n", f.id,
        *f.estimated_speedup, *f.estimated_speedup * row->median_ratio, row->median_ratio, row->count, row->arch);
  }
  if (out.empty()) return "calibrated estimates: the history has no measured pair for these findings\n\n";
  return "calibrated estimates (from the history's before/after pairs):\n" + out + "\n";
}

bool per_kernel(const AnalyzeArgs& a) { return a.summary == "per-kernel"; }

using LaunchMap = std::map<int, analysis::LaunchSummary>;

// A kernel the LLM will be asked about once the engine's answer is out: the
// narrative needs the kernel's metrics, so they are kept only in that case.
struct Pending {
  analysis::KernelDiagnosis diagnosis;
  model::Kernel kernel;
};

analysis::Diagnosis report_meta(const model::Report& head, const AnalyzeArgs& a) {
  analysis::Diagnosis d;
  d.report_path = a.report_name.empty() ? head.path : a.report_name;
  d.report_format = std::string(model::format_name(head.format));
  d.ncu_version = head.ncu_version();
  return d;
}

// First pass: the ranking of every selected kernel, from names and durations,
// and what the whole report says about itself (a report's session may come
// after its kernels, so the header of a page is known only after a full pass).
struct Ranked {
  std::vector<analysis::KernelGroup> groups;
  model::Report head;  // complete: session, devices, modules
  analysis::Diagnosis meta;
  // --print-summary per-kernel: one entry per kernel and launch configuration;
  // folded launches: one per configuration and band of durations; by the
  // index of the launch that stands for it.
  std::map<int, analysis::LaunchSummary> summaries;
  // Each kernel name's share (0..1) of the selected kernels' GPU time.
  std::map<std::string, double, std::less<>> shares;
  std::vector<analysis::LaunchSummary> folds;  // every fold, report order (JSON's launch_folds)
  // Every launch configuration (name, grid, block, device): the engine weighs a
  // launch-shape gain against the same kernel at another grid.
  std::vector<analysis::LaunchSummary> configurations;
  analysis::ReportView view;  // the report as a whole: comparisons across kernels
};

Result<Ranked> rank_pass(Context& ctx, const AnalyzeArgs& a) {
  analysis::KernelRanking ranking;
  analysis::LaunchGroups launches;
  analysis::ReportSurvey survey;
  model::Report head;
  auto opt = light_options();
  opt.modules = true;        // the head serves the second pass
  opt.allow_partial = true;  // the second pass decides what a truncation means
  KEET_TRY(ok, stream_report(ctx, a.report, opt, head,
                             {.visit =
                                  [&](model::Kernel&& k, const model::Report&) {
                                    ranking.add(k);
                                    launches.add(k);
                                    survey.add(k);
                                    return true;
                                  },
                              .quiet = true}));
  auto meta = report_meta(head, a);
  Ranked r{ranking.groups(), std::move(head),      std::move(meta), {}, {},
           launches.folds(), launches.summaries(), survey.view()};
  if (per_kernel(a))
    for (const auto& s : r.configurations) r.summaries.emplace(s.index, s);
  else
    for (const auto& s : r.folds) r.summaries.emplace(s.index, s);
  for (const auto& g : r.groups)
    if (g.timed > 0) r.shares.emplace(g.display, g.share);
  return r;
}

std::vector<llm::LlmResult> narrate(Context& ctx, LlmRuntime& rt, const std::vector<Pending>& pending) {
  std::vector<llm::LlmResult> out;
  for (size_t i = 0; i < pending.size(); ++i) {
    if (ctx.err_is_tty)
      ctx.err << fmt::format("keet: asking the LLM about kernel {} ({} of {})...\n", pending[i].diagnosis.index, i + 1,
                             pending.size());
    out.push_back(llm::explain_kernel(rt.client(), pending[i].diagnosis, &pending[i].kernel, {rt.prompt_options()}));
  }
  return out;
}

nlohmann::json fold_json(const analysis::LaunchSummary& s) {
  auto ns = [&](double v) { return s.timed ? nlohmann::json(v) : nlohmann::json(nullptr); };
  return {{"count", s.indices.size()},  {"indices", s.indices},         {"timed", s.timed},
          {"total_ns", ns(s.total_ns)}, {"mean_ns", ns(s.mean_ns())},   {"min_ns", ns(s.min_ns)},
          {"max_ns", ns(s.max_ns)},     {"median_ns", ns(s.median_ns)}, {"representative", s.index}};
}

std::string narrative_heading(const analysis::KernelDiagnosis& d, const render::TextStyle& style) {
  const auto& name = d.display_name();
  if (style.markdown) return fmt::format("## LLM narrative: #{} {}\n\n", d.index, render::md_code(name));
  return fmt::format("LLM narrative for [{}] {}\n", d.index, name);
}

// The streaming pass shared by every format: analyse each selected kernel and
// hand it to `write`, keeping it for the LLM only when one is configured.
struct Run {
  StreamStats stats;
  analysis::Diagnosis meta;  // report path, format, ncu version (no kernels)
  std::vector<Pending> pending;
};

// Prose wraps to the terminal ($COLUMNS, else its width); text piped or
// written to a file keeps one line per sentence, as tools that grep it expect,
// unless $COLUMNS asks for a width.
size_t prose_width(const Context& ctx, const AnalyzeArgs& a) {
  bool terminal = ctx.out_is_tty && a.output.empty();
  return terminal || !ctx.getenv("COLUMNS").empty() ? output_width(ctx) : 0;
}

// One output of analyze (a format written to one stream) as the kernels pass:
// several outputs (-o json=a.json,html=a.html) share one reading and one
// analysis of the report. `a` is the output's own (its format and file).
class AnalyzeSink {
 public:
  struct Shared {
    Context& ctx;
    const Ranked& ranked;
    bool llm;  // narratives follow the engine's answer
    analysis::SassInstructions* sass;
  };
  AnalyzeSink(const Shared& s, AnalyzeArgs a, std::ostream& out, AppView* view, const LaunchMap* only)
      : ctx_(s.ctx),
        ranked_(s.ranked),
        llm_(s.llm),
        sass_(s.sass),
        a_(std::move(a)),
        out_(out),
        view_(view),
        only_(only) {}
  virtual ~AnalyzeSink() = default;
  virtual void begin(const model::Report& head) = 0;
  virtual void kernel(const model::Report& head, const model::Kernel& k, const analysis::KernelDiagnosis& d) = 0;
  // After the pass: the narratives of `pending` (one each), then the end of the document.
  virtual void end(const Run& run, const std::vector<llm::LlmResult>& narratives) = 0;

  // The kernels this output diagnoses (folded launches, --print-summary
  // per-kernel); null: every selected launch.
  const LaunchMap* only() const { return only_; }
  bool wants(int index) const { return !only_ || only_->contains(index); }
  AppView* view() const { return view_; }
  std::ostream& stream() const { return out_; }

 protected:
  const analysis::LaunchSummary* fold_of(int index) const { return only_ ? &only_->at(index) : nullptr; }
  // The pending kernels this output narrates, with their narratives.
  std::vector<std::pair<const Pending*, const llm::LlmResult*>> told(const Run& run,
                                                                     const std::vector<llm::LlmResult>& n) const {
    std::vector<std::pair<const Pending*, const llm::LlmResult*>> out;
    for (size_t i = 0; i < n.size() && i < run.pending.size(); ++i)
      if (wants(run.pending[i].diagnosis.index)) out.emplace_back(&run.pending[i], &n[i]);
    return out;
  }

  Context& ctx_;
  const Ranked& ranked_;
  bool llm_;
  analysis::SassInstructions* sass_;
  AnalyzeArgs a_;
  std::ostream& out_;
  AppView* view_;
  const LaunchMap* only_;
};

class TextSink final : public AnalyzeSink {
 public:
  TextSink(const Shared& s, AnalyzeArgs a, std::ostream& out, AppView* view, const LaunchMap* only)
      : AnalyzeSink(s, std::move(a), out, view, only),
        style_{ctx_.color() && a_.output.empty(), a_.format == "markdown", prose_width(ctx_, a_), a_.verbose} {}
  void begin(const model::Report& head) override {
    if (style_.markdown) out_ << "# KEET analysis of " << render::md_code(head.path) << "\n\n";
    if (ranked_.groups.size() > 1) out_ << render::ranking_text(ranked_.groups, style_);
    out_ << render::report_view_text(ranked_.view, style_);
  }
  void kernel(const model::Report&, const model::Kernel& k, const analysis::KernelDiagnosis& d) override {
    out_ << render::kernel_text(d, style_, fold_of(d.index));
    if (a_.calibrated) out_ << calibrated_text(a_, k, d);
  }
  void end(const Run& run, const std::vector<llm::LlmResult>& narratives) override {
    auto mine = told(run, narratives);
    for (const auto& [pending, narrative] : mine)
      out_ << (mine.size() > 1 ? narrative_heading(pending->diagnosis, style_) : "")
           << (style_.markdown ? render::narrative_markdown(*narrative) : llm::render_text(*narrative)) << "\n";
  }

 private:
  render::TextStyle style_;
};

// The kernels the page diagnoses, in report order: the launches that stand
// for folds, or every selected launch.
std::vector<render::TocEntry> table_of_contents(const Ranked& r, const LaunchMap* only) {
  std::vector<render::TocEntry> toc;
  if (only)
    for (const auto& [index, fold] : *only) toc.push_back({index, fold.display, fold.indices.size()});
  else
    for (const auto& g : r.groups)
      for (int index : g.indices) toc.push_back({index, g.display, 1});
  std::ranges::sort(toc, {}, &render::TocEntry::index);
  return toc;
}

class HtmlSink final : public AnalyzeSink {
 public:
  using AnalyzeSink::AnalyzeSink;
  void begin(const model::Report&) override {
    out_ << render::html_report_begin(ranked_.meta, ranked_.groups, table_of_contents(ranked_, only_))
         << render::html_report_view(ranked_.view);
  }
  void kernel(const model::Report& head, const model::Kernel& k, const analysis::KernelDiagnosis& d) override {
    out_ << render::html_kernel(head, &k, d, fold_of(d.index), sass_);
  }
  void end(const Run& run, const std::vector<llm::LlmResult>& narratives) override {
    for (const auto& [pending, narrative] : told(run, narratives))
      out_ << render::html_narrative(pending->diagnosis, *narrative);
    if (view_)
      out_ << render::join_html(view_->join())
           << render::timeline_html_section(view_->timeline, render::TimelineStyle{});
    out_ << render::html_report_end();
  }
};

// keet.analysis/1, member by member in the order json_text() sorts them, so
// the bytes are those of the whole document dumped at once.
class JsonSink final : public AnalyzeSink {
 public:
  JsonSink(const Shared& s, AnalyzeArgs a, std::ostream& out, AppView* view, const LaunchMap* only)
      : AnalyzeSink(s, std::move(a), out, view, only), doc_(out_, 2) {}
  void begin(const model::Report&) override { kernels_.emplace(doc_.array_member("kernels")); }
  void kernel(const model::Report&, const model::Kernel&, const analysis::KernelDiagnosis& d) override {
    if (!llm_) kernels_->add(kernel_json(d, nullptr));
  }
  void end(const Run& run, const std::vector<llm::LlmResult>& narratives) override {
    for (const auto& [pending, narrative] : told(run, narratives)) {
      auto llm = llm::to_json(*narrative);
      kernels_->add(kernel_json(pending->diagnosis, &llm));
    }
    kernels_->close();
    auto rest = render::analysis_json(run.meta);  // everything but the kernels
    rest["launch_folds"] = nlohmann::json::array();
    for (const auto& f : ranked_.folds) rest["launch_folds"].push_back(fold_json(f));
    if (view_) rest["timeline"] = render::join_json(view_->join());
    rest["whole_report"] = render::report_view_json(ranked_.view);
    for (const auto& [key, value] : rest.items())
      if (key != "kernels") doc_.member(key, value);
    doc_.close();
  }

 private:
  std::function<void(JsonWriter&)> kernel_json(const analysis::KernelDiagnosis& d, const nlohmann::json* llm) const {
    return [&d, llm, only = only_](JsonWriter& w) {
      std::optional<nlohmann::json> launches;
      if (only) launches = fold_json(only->at(d.index));
      render::write_kernel_diagnosis(w, d, {launches ? &*launches : nullptr, llm});
    };
  }
  JsonObjectStream doc_;
  std::optional<JsonArrayStream> kernels_;
};

// The one analysis pass: each kernel that some output diagnoses goes through
// the engine once and to every output that wants it. A kernel's findings
// follow its share of the GPU time (`ranked`), in every format.
Result<Run> analyse_pass(Context& ctx, const AnalyzeArgs& a, const Ranked& ranked,
                         const std::vector<std::unique_ptr<AnalyzeSink>>& sinks, analysis::SassInstructions* sass,
                         bool keep_for_llm) {
  Run run;
  model::Report head;
  AnalysisPass pass{.options = {a.top}, .context = &ranked.head, .begin = [&](const model::Report& h) {
                      for (const auto& s : sinks) s->begin(h);
                    }};
  pass.options.derived = keep_for_llm;  // only the LLM's prompt and verifier read it
  pass.options.sass = sass;
  if (std::ranges::none_of(sinks, [](const auto& s) { return s->only() == nullptr; }))
    pass.wanted = [&](const model::Kernel& k) {
      return std::ranges::any_of(sinks, [&](const auto& s) { return s->wants(k.index); });
    };
  pass.per_kernel = [&](const model::Kernel& k, analysis::AnalyzeOptions& opt) {
    auto share = ranked.shares.find(k.display_name());
    opt.time_share = share == ranked.shares.end() ? std::nullopt : std::optional(share->second);
    opt.configurations = &ranked.configurations;
  };
  KEET_TRY(ok, analyse_kernels(ctx, a.report, pass, head, [&](model::Kernel&& k, const model::Report& h, auto&& d) {
             for (const auto& s : sinks) {
               if (!s->wants(d.index)) continue;
               if (s->view()) s->view()->profiled.push_back(analysis::profiled_kernel(k, d));
               s->kernel(h, k, d);
             }
             if (keep_for_llm) run.pending.push_back({std::move(d), std::move(k)});
             return true;
           }));
  run.stats = *ok;
  run.meta = report_meta(head, a);
  return run;
}

template <class Sink>
std::unique_ptr<AnalyzeSink> make_sink(const AnalyzeSink::Shared& s, AnalyzeArgs a, std::ostream& out, AppView* view,
                                       const LaunchMap* only) {
  return std::make_unique<Sink>(s, std::move(a), out, view, only);
}

// analyze's formats: the output each --format name selects (the first is the
// default), and whether it is prose (text, markdown: several reports in one
// output, the joined timeline view after them, --calibrated) or a document of
// one report (json, html).
struct AnalyzeFormat {
  std::string_view name;
  std::unique_ptr<AnalyzeSink> (*make)(const AnalyzeSink::Shared&, AnalyzeArgs, std::ostream&, AppView*,
                                       const LaunchMap*);
  bool prose;
};
constexpr AnalyzeFormat kAnalyzeFormats[] = {{"text", make_sink<TextSink>, true},
                                             {"markdown", make_sink<TextSink>, true},
                                             {"json", make_sink<JsonSink>, false},
                                             {"html", make_sink<HtmlSink>, false}};

// The kernels an output in `format` diagnoses: identical launches fold in the
// formats people read; JSON keeps every launch (unless --print-summary per-kernel).
const LaunchMap* wanted_launches(const AnalyzeArgs& a, std::string_view format, const Ranked& ranked) {
  bool folds = a.launches == "fold" && format != "json";
  return per_kernel(a) || folds ? &ranked.summaries : nullptr;
}

// One output of the command: its format, its stream and its share of the
// --timeline view (what it diagnosed, joined to the run).
struct Output {
  std::string format;
  std::ostream* stream;
  AppView* view;
};

// One report through every output: one ranking pass, one analysis pass (the
// union of the kernels the outputs diagnose), one round of narratives.
Result<Run> analyse_into(Context& ctx, const AnalyzeArgs& a, const std::vector<Output>& outputs, LlmRuntime* rt,
                         std::vector<llm::LlmResult>& narratives) {
  KEET_TRY(ranked, rank_pass(ctx, a));
  RunSass sass(ctx);
  AnalyzeSink::Shared shared{ctx, *ranked, rt != nullptr, sass.instructions()};
  std::vector<std::unique_ptr<AnalyzeSink>> sinks;
  for (const auto& o : outputs) {
    AnalyzeArgs own = a;
    own.format = o.format;
    const auto& format = find_format(kAnalyzeFormats, o.format);
    sinks.push_back(format.make(shared, std::move(own), *o.stream, o.view, wanted_launches(a, o.format, *ranked)));
  }
  KEET_TRY(run, analyse_pass(ctx, a, *ranked, sinks, sass.instructions(), rt != nullptr));
  if (rt) {
    for (const auto& s : sinks) s->stream().flush();  // the engine's answer is out before the LLM is asked
    narratives = narrate(ctx, *rt, run->pending);
  }
  for (const auto& s : sinks) s->end(*run, narratives);
  return run;
}

Result<std::vector<compare::CalibrationPoint>> load_calibration(Context& ctx, const AnalyzeArgs& a,
                                                                const std::vector<OutputSpec>& outputs) {
  if (std::ranges::none_of(outputs, [](const auto& o) { return find_format(kAnalyzeFormats, o.format).prose; }))
    return fail(ExitCode::BadInput, "--calibrated: shown in text and markdown output only");
  KEET_TRY(db, open_history(ctx, a.db));
  return (*db)->calibration_points();
}

// What run_analyze checks before anything is read: one report per document
// (json, html) and per list of outputs.
Result<void> check_outputs(const AnalyzeArgs& a, const std::vector<OutputSpec>& outputs,
                           const std::vector<ReportArgs>& reports) {
  if (reports.size() <= 1) return {};
  if (outputs.size() > 1)
    return fail(ExitCode::BadInput, "analyze -o FORMAT=FILE,...: writes one report's outputs: give one report");
  if (find_format(kAnalyzeFormats, outputs.front().format).prose) return {};
  return fail(ExitCode::BadInput, fmt::format("analyze --format {} describes one report: give one report per call "
                                              "(text and markdown take several)",
                                              a.format));
}

}  // namespace

std::vector<std::string> analyze_format_names() { return format_names(kAnalyzeFormats); }

ExitCode run_analyze(Context& ctx, const AnalyzeArgs& given) {
  AnalyzeArgs a = given;
  auto outputs = output_list(a.output, a.format, analyze_format_names());
  if (!outputs) return report_error(ctx, outputs.error());
  auto reports = each_report(a.report);
  if (auto ok = check_outputs(a, *outputs, reports); !ok) return report_error(ctx, ok.error());
  if (a.calibrated) {
    auto points = load_calibration(ctx, a, *outputs);
    if (!points) return report_error(ctx, points.error());
    a.calibration = std::move(*points);
  }
  std::unique_ptr<LlmRuntime> rt;
  if (!a.llm.spec.empty() || !ctx.getenv("KEET_LLM").empty()) {
    auto created = LlmRuntime::create(ctx, a.llm);
    if (!created) return report_error(ctx, created.error());
    rt = std::move(*created);
  }
  // One view of the run per output (what each diagnosed, joined to it).
  std::vector<AppView> views;
  if (!a.timeline.path.empty()) {  // read first: an unreadable timeline fails before any output
    auto t = load_timeline(ctx, a.timeline, system_runner());
    if (!t) return report_error(ctx, t.error());
    views.assign(outputs->size(), AppView{std::move(*t), a.coverage_threshold, {}});
  }
  auto targets = open_outputs(ctx, *outputs);
  if (!targets) return report_error(ctx, targets.error());
  std::vector<Output> each_output;
  for (size_t i = 0; i < outputs->size(); ++i)
    each_output.push_back({(*outputs)[i].format, &(*targets)[i].stream(), views.empty() ? nullptr : &views[i]});
  std::vector<llm::LlmResult> narratives;
  ExitCode partial = ExitCode::Ok;
  for (const auto& one : reports) {
    AnalyzeArgs each = a;
    each.report = one;
    // Text names each report before its kernels (markdown's heading already does).
    if (reports.size() > 1 && each_output.front().format == "text")
      *each_output.front().stream << "Report: " << one.path << "\n\n";
    std::vector<llm::LlmResult> told;
    Result<Run> run = analyse_into(ctx, each, each_output, rt.get(), told);
    if (!run) return report_error(ctx, run.error());
    if (run->stats.partial_exit != ExitCode::Ok) partial = run->stats.partial_exit;
    narratives.insert(narratives.end(), told.begin(), told.end());
  }
  for (size_t i = 0; i < views.size(); ++i) {
    // text and markdown: the joined view once, after every report's kernels
    auto join = views[i].join();
    const auto& format = (*outputs)[i].format;
    if (find_format(kAnalyzeFormats, format).prose)
      *each_output[i].stream << "\n"
                             << render::join_text(join, {ctx.color() && a.output.empty(), format == "markdown"});
    if (auto w = analysis::coverage_warning(join); !w.empty() && i == 0) ctx.err << "keet: warning: " << w << "\n";
  }
  if (auto w = commit_outputs(*targets); !w) return report_error(ctx, w.error());
  if (partial != ExitCode::Ok) return partial;
  return rt ? llm_exit(a.llm, narratives) : ExitCode::Ok;
}

Command analyze_command() {
  return {"analyze", "diagnose kernels: bottleneck, findings with evidence, fixes and expected gains",
          [](CLI::App& sub, Action& action) {
            auto a = std::make_shared<AnalyzeArgs>();
            add_reports_args(sub, a->report);
            add_report_name(sub, a->report_name);
            sub.add_option("--top", a->top, "findings shown per kernel (0 = all)")->capture_default_str();
            add_format(sub, a->format, analyze_format_names());
            add_llm_args(sub, a->llm);
            add_output_option(sub, a->output);
            sub.add_option("--print-summary", a->summary,
                           "per-kernel: one diagnosis per kernel and launch configuration, with the launches' "
                           "count and duration spread (as ncu's --print-summary)")
                ->check(CLI::IsMember({"none", "per-kernel"}))
                ->capture_default_str();
            sub.add_option("--launches", a->launches,
                           "fold: identical launches (same kernel, grid and block, durations within noise) share one "
                           "diagnosis with their count and spread (text, markdown, html); all: one diagnosis per "
                           "launch. JSON always lists every launch")
                ->check(CLI::IsMember({"fold", "all"}))
                ->capture_default_str();
            sub.add_flag("-v,--verbose", a->verbose,
                         "show each evidence value's metric name and kernels' whole names (JSON always has them)");
            add_app_view_flags(sub, a->timeline, a->coverage_threshold);
            sub.add_flag("--calibrated", a->calibrated,
                         "beside each estimated speedup, the estimate corrected by the history's measured/predicted "
                         "ratio for that rule and architecture (keet calibrate; text and markdown)");
            add_db_option(sub, a->db);
            sub.callback([a, &action] { action = [a](Context& ctx) { return run_analyze(ctx, *a); }; });
          }};
}

}  // namespace keet::app
