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
#include <map>
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

// Identical launches fold into one diagnosis in the formats people read;
// JSON keeps every launch (unless --print-summary per-kernel).
bool folds_launches(const AnalyzeArgs& a) { return a.launches == "fold" && a.format != "json"; }

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

// `only`, when given, names the kernels to analyse (folded launches,
// --print-summary per-kernel); `ranked` gives each kernel's share of the GPU
// time, which the severity of its findings follows.
Result<Run> analyse_pass(
    Context& ctx, const AnalyzeArgs& a, const Ranked& ranked, const std::map<int, analysis::LaunchSummary>* only,
    bool keep_for_llm, const std::function<void(const model::Report&)>& begin,
    const std::function<void(const model::Report&, const model::Kernel&, const analysis::KernelDiagnosis&)>& write,
    AppView* app_view, analysis::SassInstructions* sass) {
  Run run;
  model::Report head;
  AnalysisPass pass{.options = {a.top}, .context = &ranked.head, .begin = begin};
  pass.options.derived = keep_for_llm;  // only the LLM's prompt and verifier read it
  pass.options.sass = sass;
  if (only) pass.wanted = [&](const model::Kernel& k) { return only->contains(k.index); };
  pass.per_kernel = [&](const model::Kernel& k, analysis::AnalyzeOptions& opt) {
    auto share = ranked.shares.find(k.display_name());
    opt.time_share = share == ranked.shares.end() ? std::nullopt : std::optional(share->second);
    opt.configurations = &ranked.configurations;
  };
  KEET_TRY(ok, analyse_kernels(ctx, a.report, pass, head, [&](model::Kernel&& k, const model::Report& h, auto&& d) {
             if (app_view) app_view->profiled.push_back(analysis::profiled_kernel(k, d));
             write(h, k, d);
             if (keep_for_llm) run.pending.push_back({std::move(d), std::move(k)});
             return true;
           }));
  run.stats = *ok;
  run.meta = report_meta(head, a);
  return run;
}

// Prose wraps to the terminal ($COLUMNS, else its width); text piped or
// written to a file keeps one line per sentence, as tools that grep it expect,
// unless $COLUMNS asks for a width.
size_t prose_width(const Context& ctx, const AnalyzeArgs& a) {
  bool terminal = ctx.out_is_tty && a.output.empty();
  return terminal || !ctx.getenv("COLUMNS").empty() ? output_width(ctx) : 0;
}

Result<Run> write_text(Context& ctx, const AnalyzeArgs& a, std::ostream& out, LlmRuntime* rt,
                       std::vector<llm::LlmResult>& narratives, AppView* app_view) {
  KEET_TRY(ranking, rank_pass(ctx, a));
  render::TextStyle style{ctx.color() && a.output.empty(), a.format == "markdown", prose_width(ctx, a), a.verbose};
  auto begin = [&](const model::Report& head) {
    if (style.markdown) out << "# KEET analysis of " << render::md_code(head.path) << "\n\n";
    if (ranking->groups.size() > 1) out << render::ranking_text(ranking->groups, style);
    out << render::report_view_text(ranking->view, style);
  };
  const auto* only = per_kernel(a) || folds_launches(a) ? &ranking->summaries : nullptr;
  RunSass sass(ctx);
  auto run = analyse_pass(
      ctx, a, *ranking, only, rt != nullptr, begin,
      [&](const model::Report&, const model::Kernel& k, const analysis::KernelDiagnosis& d) {
        out << render::kernel_text(d, style, only ? &only->at(d.index) : nullptr);
        if (a.calibrated) out << calibrated_text(a, k, d);
      },
      app_view, sass.instructions());
  if (!run || !rt) return run;
  out.flush();
  narratives = narrate(ctx, *rt, run->pending);
  bool several = run->pending.size() > 1;
  for (size_t i = 0; i < narratives.size(); ++i)
    out << (several ? narrative_heading(run->pending[i].diagnosis, style) : "")
        << (style.markdown ? render::narrative_markdown(narratives[i]) : llm::render_text(narratives[i])) << "\n";
  return run;
}

// The kernels the page diagnoses, in report order: the launches that stand
// for folds, or every selected launch.
std::vector<render::TocEntry> table_of_contents(const Ranked& r, const std::map<int, analysis::LaunchSummary>* only) {
  std::vector<render::TocEntry> toc;
  if (only)
    for (const auto& [index, fold] : *only) toc.push_back({index, fold.display, fold.indices.size()});
  else
    for (const auto& g : r.groups)
      for (int index : g.indices) toc.push_back({index, g.display, 1});
  std::ranges::sort(toc, {}, &render::TocEntry::index);
  return toc;
}

Result<Run> write_html(Context& ctx, const AnalyzeArgs& a, std::ostream& out, LlmRuntime* rt,
                       std::vector<llm::LlmResult>& narratives, AppView* app_view) {
  KEET_TRY(ranking, rank_pass(ctx, a));
  const auto* only = per_kernel(a) || folds_launches(a) ? &ranking->summaries : nullptr;
  auto begin = [&](const model::Report&) {
    out << render::html_report_begin(ranking->meta, ranking->groups, table_of_contents(*ranking, only))
        << render::html_report_view(ranking->view);
  };
  RunSass sass(ctx);
  auto run = analyse_pass(
      ctx, a, *ranking, only, rt != nullptr, begin,
      [&](const model::Report& head, const model::Kernel& k, const analysis::KernelDiagnosis& d) {
        out << render::html_kernel(head, &k, d, only ? &only->at(d.index) : nullptr, sass.instructions());
      },
      app_view, sass.instructions());
  if (!run) return run;
  if (rt) {
    out.flush();
    narratives = narrate(ctx, *rt, run->pending);
    for (size_t i = 0; i < narratives.size(); ++i)
      out << render::html_narrative(run->pending[i].diagnosis, narratives[i]);
  }
  if (app_view)
    out << render::join_html(app_view->join())
        << render::timeline_html_section(app_view->timeline, render::TimelineStyle{});
  out << render::html_report_end();
  return run;
}

// keet.analysis/1, member by member in the order json_text() sorts them, so
// the bytes are those of the whole document dumped at once.
Result<Run> write_json(Context& ctx, const AnalyzeArgs& a, std::ostream& out, LlmRuntime* rt,
                       std::vector<llm::LlmResult>& narratives, AppView* app_view) {
  // Every launch's duration first (the ranking pass): the severity of a
  // finding follows its kernel's share of the GPU time, in every format.
  KEET_TRY(ranked, rank_pass(ctx, a));
  const auto* only = per_kernel(a) ? &ranked->summaries : nullptr;
  auto kernel_json = [&](const analysis::KernelDiagnosis& d, const nlohmann::json* llm) {
    return [&d, llm, only](JsonWriter& w) {
      std::optional<nlohmann::json> launches;
      if (only) launches = fold_json(only->at(d.index));
      render::write_kernel_diagnosis(w, d, {launches ? &*launches : nullptr, llm});
    };
  };
  JsonObjectStream doc(out, 2);
  std::optional<JsonArrayStream> kernels;
  auto begin = [&](const model::Report&) { kernels.emplace(doc.array_member("kernels")); };
  RunSass sass(ctx);
  auto run = analyse_pass(
      ctx, a, *ranked, only, rt != nullptr, begin,
      [&](const model::Report&, const model::Kernel&, const analysis::KernelDiagnosis& d) {
        if (!rt) kernels->add(kernel_json(d, nullptr));
      },
      app_view, sass.instructions());
  if (!run) return run;
  if (rt) {
    narratives = narrate(ctx, *rt, run->pending);
    for (size_t i = 0; i < narratives.size(); ++i) {
      auto llm = llm::to_json(narratives[i]);
      kernels->add(kernel_json(run->pending[i].diagnosis, &llm));
    }
  }
  kernels->close();
  auto rest = render::analysis_json(run->meta);  // everything but the kernels
  rest["launch_folds"] = nlohmann::json::array();
  for (const auto& f : ranked->folds) rest["launch_folds"].push_back(fold_json(f));
  if (app_view) rest["timeline"] = render::join_json(app_view->join());
  rest["whole_report"] = render::report_view_json(ranked->view);
  for (const auto& [key, value] : rest.items())
    if (key != "kernels") doc.member(key, value);
  doc.close();
  return run;
}

// analyze's formats: the writer each --format name selects (the first is the
// default), and whether it is prose (text, markdown: several reports in one
// output, the joined timeline view after them, --calibrated) or a document of
// one report (json, html).
struct AnalyzeFormat {
  std::string_view name;
  Result<Run> (*write)(Context&, const AnalyzeArgs&, std::ostream&, LlmRuntime*, std::vector<llm::LlmResult>&,
                       AppView*);
  bool prose;
};
constexpr AnalyzeFormat kAnalyzeFormats[] = {{"text", write_text, true},
                                             {"markdown", write_text, true},
                                             {"json", write_json, false},
                                             {"html", write_html, false}};

Result<std::vector<compare::CalibrationPoint>> load_calibration(Context& ctx, const AnalyzeArgs& a) {
  if (!find_format(kAnalyzeFormats, a.format).prose)
    return fail(ExitCode::BadInput, "--calibrated: shown in text and markdown output only");
  KEET_TRY(db, open_history(ctx, a.db));
  return (*db)->calibration_points();
}

}  // namespace

std::vector<std::string> analyze_format_names() { return format_names(kAnalyzeFormats); }

ExitCode run_analyze(Context& ctx, const AnalyzeArgs& given) {
  AnalyzeArgs a = given;
  if (a.calibrated) {
    auto points = load_calibration(ctx, a);
    if (!points) return report_error(ctx, points.error());
    a.calibration = std::move(*points);
  }
  std::unique_ptr<LlmRuntime> rt;
  if (!a.llm.spec.empty() || !ctx.getenv("KEET_LLM").empty()) {
    auto created = LlmRuntime::create(ctx, a.llm);
    if (!created) return report_error(ctx, created.error());
    rt = std::move(*created);
  }
  const AnalyzeFormat& format = find_format(kAnalyzeFormats, a.format);
  auto reports = each_report(a.report);
  if (reports.size() > 1 && !format.prose)
    return report_error(ctx,
                        Error{ExitCode::BadInput, fmt::format("analyze --format {} describes one report: give "
                                                              "one report per call (text and markdown take several)",
                                                              a.format)});
  std::optional<AppView> app_view;
  if (!a.timeline.path.empty()) {  // read first: an unreadable timeline fails before any output
    auto t = load_timeline(ctx, a.timeline, system_runner());
    if (!t) return report_error(ctx, t.error());
    app_view = AppView{std::move(*t), a.coverage_threshold, {}};
  }
  auto* view = app_view ? &*app_view : nullptr;
  auto target = OutputTarget::open(ctx, a.output);
  if (!target) return report_error(ctx, target.error());
  std::vector<llm::LlmResult> narratives;
  ExitCode partial = ExitCode::Ok;
  for (const auto& one : reports) {
    AnalyzeArgs each = a;
    each.report = one;
    // Text names each report before its kernels (markdown's heading already does).
    if (reports.size() > 1 && a.format == "text") target->stream() << "Report: " << one.path << "\n\n";
    std::vector<llm::LlmResult> told;
    Result<Run> run = format.write(ctx, each, target->stream(), rt.get(), told, view);
    if (!run) return report_error(ctx, run.error());
    if (run->stats.partial_exit != ExitCode::Ok) partial = run->stats.partial_exit;
    narratives.insert(narratives.end(), told.begin(), told.end());
  }
  if (view) {  // text and markdown: the joined view once, after every report's kernels
    auto join = view->join();
    if (format.prose)
      target->stream() << "\n" << render::join_text(join, {ctx.color() && a.output.empty(), a.format == "markdown"});
    if (auto w = analysis::coverage_warning(join); !w.empty()) ctx.err << "keet: warning: " << w << "\n";
  }
  if (auto w = target->commit(); !w) return report_error(ctx, w.error());
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
            sub.add_option("-o,--output", a->output, "write to this file instead of stdout");
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
