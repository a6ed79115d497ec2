// keet analyze R: the expert diagnosis (no LLM needed).
#include <fmt/format.h>

#include "analysis/derived.h"
#include "analysis/engine.h"
#include "analysis/ranking.h"
#include "app/commands.h"
#include "app/common.h"
#include "app/llm_flags.h"
#include "llm/explain.h"
#include "readers/reader.h"
#include "render/html.h"
#include "io/file.h"
#include "render/analysis_json.h"
#include "render/analysis_text.h"
#include "util/json.h"
#include "render/markdown.h"

namespace keet::app {
namespace {

struct AnalyzeArgs {
  ReportArgs report;
  int top = 5;
  std::string format;
  std::string output;
  LlmArgs llm;
};

// What survives of each analysed kernel: its diagnosis, and a light copy
// (identity and duration) for the ranking table. Kernels are analysed as they
// stream in, so memory stays flat on reports with thousands of launches.
struct Streamed {
  model::Report report;
  analysis::Diagnosis diagnosis;
  std::vector<model::Kernel> light;
  std::vector<llm::LlmResult> narratives;  // one per kernel with --llm
  ExitCode partial_exit = ExitCode::Ok;
};

model::Kernel light_copy(const model::Kernel& k) {
  model::Kernel l;
  l.index = k.index;
  l.mangled = k.mangled;
  l.function = k.function;
  l.demangled = k.demangled;
  for (const auto& m : k.metrics)
    if (analysis::is_duration_metric(m.name)) l.metrics.push_back(m);
  return l;
}

Result<Streamed> analyze_streaming(Context& ctx, const AnalyzeArgs& a, LlmRuntime* llm_rt) {
  auto sel = model::KernelSelector::parse(a.report.kernel);
  if (!sel) return std::unexpected(sel.error());
  auto src = io::open_file(a.report.path);
  if (!src) return std::unexpected(src.error());
  Streamed s;
  analysis::AnalyzeOptions opt{a.top};
  auto ok = readers::stream_into(**src, {}, s.report, [&](model::Kernel&& k) {
    if (!sel->matches(k)) return true;
    s.diagnosis.kernels.push_back(analysis::analyze_kernel(s.report, k, opt));
    s.light.push_back(light_copy(k));
    // The narrative needs the kernel's metrics, so it is made while they exist.
    if (llm_rt) s.narratives.push_back(llm::explain_kernel(llm_rt->client(), s.diagnosis.kernels.back(), &k,
                                                           {llm_rt->prompt_options()}));
    return true;
  });
  if (!ok) return fail(ExitCode::BadInput, ok.error().message());
  for (const auto& w : s.report.warnings) ctx.err << "keet: warning: " << w << "\n";
  if (s.report.partial && !a.report.allow_partial) s.partial_exit = ExitCode::BadInput;
  if (s.light.empty() && !sel->all())
    return fail(ExitCode::BadInput, fmt::format("{}: no kernel matches -k {}", a.report.path, a.report.kernel));
  s.diagnosis.report_path = s.report.path;
  s.diagnosis.report_format = std::string(model::format_name(s.report.format));
  s.diagnosis.ncu_version = s.report.ncu_version();
  return s;
}

std::string render_json(const Streamed& s) {
  auto j = render::analysis_json(s.diagnosis);
  for (size_t i = 0; i < s.narratives.size(); ++i) j["kernels"][i]["llm"] = llm::to_json(s.narratives[i]);
  return json_text(j, 2) + "\n";
}

std::string render_text(const AnalyzeArgs& a, const Streamed& s, bool color) {
  std::vector<const model::Kernel*> ks;
  for (const auto& k : s.light) ks.push_back(&k);
  render::TextStyle style{color && a.output.empty(), a.format == "markdown"};
  auto ranking = analysis::rank_kernels(ks);
  std::string out = style.markdown ? "# KEET analysis of " + render::md_code(s.diagnosis.report_path) + "\n\n" : "";
  if (ranking.size() > 1) out += render::ranking_text(ranking, style);
  for (size_t i = 0; i < s.diagnosis.kernels.size(); ++i) {
    out += render::kernel_text(s.diagnosis.kernels[i], style);
    if (i < s.narratives.size()) out += llm::render_text(s.narratives[i]) + "\n";
  }
  return out;
}

// The page and the exit code a truncated report earns (as text and JSON do).
Result<std::pair<std::string, ExitCode>> render_html(Context& ctx, const AnalyzeArgs& a) {
  auto loaded = load_report(ctx, a.report);
  if (!loaded) return std::unexpected(loaded.error());
  auto diagnosis = analysis::analyze(loaded->report, loaded->selected, {a.top});
  return std::pair{render::html_report(loaded->report, diagnosis), loaded->partial_exit};
}

Result<void> emit(Context& ctx, const AnalyzeArgs& a, const std::string& text) {
  if (a.output.empty()) {
    ctx.out << text;
    return {};
  }
  return io::write_text_file(a.output, text);
}

bool wants_llm(Context& ctx, const AnalyzeArgs& a) { return !a.llm.spec.empty() || !ctx.getenv("KEET_LLM").empty(); }

ExitCode run_analyze(Context& ctx, const AnalyzeArgs& a) {
  if (a.format == "html") {
    auto html = render_html(ctx, a);
    if (!html) return report_error(ctx, html.error());
    if (auto w = emit(ctx, a, html->first); !w) return report_error(ctx, w.error());
    return html->second;
  }
  std::unique_ptr<LlmRuntime> rt;
  if (wants_llm(ctx, a)) {
    auto created = LlmRuntime::create(ctx, a.llm);
    if (!created) return report_error(ctx, created.error());
    rt = std::move(*created);
  }
  auto s = analyze_streaming(ctx, a, rt.get());
  if (!s) return report_error(ctx, s.error());
  std::string text = a.format == "json" ? render_json(*s) : render_text(a, *s, ctx.color());
  if (auto w = emit(ctx, a, text); !w) return report_error(ctx, w.error());
  if (s->partial_exit != ExitCode::Ok) return s->partial_exit;
  return rt ? llm_exit(a.llm, s->narratives) : ExitCode::Ok;
}

}  // namespace

Command analyze_command() {
  return {"analyze", "diagnose kernels: bottleneck, findings with evidence, fixes and expected gains",
          [](CLI::App& sub, Action& action) {
            auto a = std::make_shared<AnalyzeArgs>();
            add_report_args(sub, a->report);
            sub.add_option("--top", a->top, "findings shown per kernel (0 = all)")->capture_default_str();
            add_format(sub, a->format, {"text", "markdown", "json", "html"});
            add_llm_args(sub, a->llm);
            sub.add_option("-o,--output", a->output, "write to this file instead of stdout");
            sub.callback([a, &action] { action = [a](Context& ctx) { return run_analyze(ctx, *a); }; });
          }};
}

}  // namespace keet::app
