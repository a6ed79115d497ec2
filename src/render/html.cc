#include "render/html.h"

#include <algorithm>
#include <map>
#include <tuple>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "analysis/hotspots.h"
#include "analysis/ranking.h"
#include "analysis/sass.h"
#include "render/analysis_text.h"
#include "render/diff_format.h"
#include "render/html_parts.h"
#include "util/strings.h"

namespace keet::render {
using namespace compare;
namespace {

using html::esc;

std::string badge(std::string_view text, std::string_view cls) {
  return fmt::format("<span class='badge {}'>{}</span>", esc(cls), esc(text));
}

std::string ranking_section(const std::vector<analysis::KernelGroup>& groups) {
  std::string rows;
  for (const auto& g : groups) {
    if (g.timed == 0) {
      rows += fmt::format("<tr><td><code>{}</code></td><td class='num'>{}</td><td>not measured</td><td>-</td></tr>",
                          esc(abbreviate_name(g.display, 120)), g.indices.size());
      continue;
    }
    rows += fmt::format(
        "<tr><td><code>{}</code></td><td class='num'>{}</td><td class='num'>{}</td>"
        "<td><span class='share'><span style='width:{:.0f}%'></span></span> {:.1f}%</td></tr>",
        esc(abbreviate_name(g.display, 120)), g.indices.size(), esc(format_duration(g.total_ns)), g.share * 100,
        g.share * 100);
  }
  // Its id lets keet serve's page, whose own ranking is by fold, leave this one out.
  return "<section class='card' id='kernel-ranking'><h2>Kernel ranking</h2><table><tr><th>kernel</th><th>launches</th>"
         "<th>total time</th><th>share of the profiled kernels' GPU time</th></tr>" +
         rows + "</table></section>";
}

std::string evidence_table(const std::vector<analysis::Evidence>& ev) {
  if (ev.empty()) return "";
  std::string rows;
  for (const auto& e : ev)
    rows += fmt::format("<tr><td>{}</td><td class='num'>{}</td><td><code>{}</code></td><td>{}</td></tr>",
                        esc(e.label.empty() ? e.metric : e.label), esc(evidence_value(e)), esc(e.metric),
                        esc(e.formula.empty() ? e.threshold : e.formula));
  return "<table><tr><th>evidence</th><th>value</th><th>metric</th><th>threshold / formula</th></tr>" + rows +
         "</table>";
}

std::string finding_html(const analysis::Finding& f) {
  std::string sev(analysis::severity_name(f.severity));
  std::string out = fmt::format("<div class='finding'><p>{} <strong>{}</strong> <code>{}</code>", badge(sev, sev),
                                esc(f.title), esc(f.id));
  if (f.estimated_speedup)
    out += fmt::format(" &mdash; estimated speedup <strong>{:.2f}x</strong>", *f.estimated_speedup);
  if (!f.relieves.empty()) out += " &mdash; relieves " + esc(fmt::format("{}", fmt::join(f.relieves, ", ")));
  out += "</p><p>" + esc(f.explanation) + "</p>" + evidence_table(f.evidence);
  if (!f.advice.empty()) {
    out += "<h3>What to change</h3><ul>";
    for (const auto& a : f.advice) out += "<li>" + esc(a) + "</li>";
    out += "</ul>";
  }
  return out + "</div>";
}

// Lines the findings point at, merged with the engine's hot lines; largest
// share first. A SASS instruction (line 0) is its own row, by offset. `note`
// receives why SASS rows show no instruction, when the hot lines say.
std::vector<analysis::SourceRef> hot_lines(const model::Report& r, const model::Kernel* k,
                                           const analysis::KernelDiagnosis& d, analysis::SassInstructions* sass,
                                           std::string& note) {
  std::map<std::tuple<std::string, int, uint64_t>, analysis::SourceRef> merged;
  auto add = [&](const analysis::SourceRef& s) {
    auto& slot = merged[{s.file, s.line, s.is_sass() ? s.offset : 0}];
    if (s.share >= slot.share) slot = s;
  };
  for (const auto& f : d.findings) std::ranges::for_each(f.source, add);
  if (k) {
    analysis::Context ctx{r, *k, sass};
    std::ranges::for_each(analysis::hot_lines(ctx, {"smsp__pcsamp_sample_count"}, 8), add);
    note = ctx.sass_missing();
  }
  std::vector<analysis::SourceRef> out;
  for (auto& [key, s] : merged) out.push_back(s);
  std::ranges::stable_sort(out, [](const auto& a, const auto& b) { return a.share > b.share; });
  return out;
}

std::string source_section(const std::vector<analysis::SourceRef>& lines) {
  if (lines.empty())
    return "<p class='empty'>no source-level data (profile with --import-source yes and source counters)</p>";
  std::string rows;
  for (const auto& s : lines) {
    std::string where = s.is_sass() ? s.text : fmt::format("{}:{}", s.file, s.line);
    rows += fmt::format("<tr><td><code>{}</code></td><td class='num'>{:.1f}%</td><td><pre>{}</pre></td></tr>",
                        esc(where), s.share * 100, esc(s.is_sass() ? s.sass : s.text));
  }
  return "<table><tr><th>line</th><th>share</th><th>code</th></tr>" + rows + "</table>";
}

// Every unit the report measures, binding first: the limiter model's view.
std::string units_section(const analysis::Limiter& lim) {
  if (lim.units.empty()) return "<h3>Unit utilisation</h3><p class='empty'>no throughput metrics in this report</p>";
  std::vector<html::Bar> bars;
  for (const auto& u : lim.units) bars.push_back({u.label, u.pct, fmt::format("{:.1f}%", u.pct)});
  return "<h3>Unit utilisation (% of peak, binding unit first)</h3>" + html::bar_chart(bars, 100, "sol");
}

std::string quality_html(const analysis::DataQuality& q) {
  if (q.sufficient && !q.degraded()) return "";
  std::string out = "<div class='finding'><p>" +
                    badge(q.sufficient ? "degraded data" : "insufficient data", q.sufficient ? "medium" : "high") +
                    "</p><ul>";
  for (const auto& p : q.problems) out += "<li>" + esc(p) + "</li>";
  for (const auto& bad : q.invalid)
    out += "<li>ignored <code>" + esc(bad.metric) + "</code>: " + esc(bad.why) + "</li>";
  for (const auto& e : q.ncu_errors) out += "<li>ncu could not run a rule: " + esc(e) + "</li>";
  if (!q.problems.empty())
    out += "<li>profile the kernel again: nothing measured in this capture can be trusted</li>";
  else if (!q.sufficient && !q.collect.empty())
    out += "<li>collect with <code>ncu " + esc(fmt::format("{}", fmt::join(q.collect, " "))) +
           "</code> (or --set full)</li>";
  return out + "</ul></div>";
}

// Bars scaled to the largest stall so the dominant reason fills the row.
std::string stall_chart(const analysis::DataQuality& q) {
  std::vector<html::Bar> bars;
  for (size_t i = 0; i < q.stall_reasons.size(); ++i)
    if (q.stall_values[i] > 0 && q.stall_reasons[i] != "selected")
      bars.push_back({q.stall_reasons[i], q.stall_values[i], fmt::format("{:.3g}", q.stall_values[i])});
  std::ranges::sort(bars, [](const html::Bar& a, const html::Bar& b) { return a.value > b.value; });
  if (bars.size() > 8) bars.resize(8);
  return html::bar_chart(bars, bars.empty() ? 1 : bars.front().value, "stalls");
}

// The kernel's title (the summary of its collapsible section) and its launch line.
std::string kernel_header(const analysis::KernelDiagnosis& d, const analysis::LaunchSummary* fold) {
  const auto& name = d.display_name();
  std::string cls(analysis::class_name(d.bottleneck.cls));
  std::string launches = analysis::folds_launches(fold) ? fmt::format(" &times;{} launches", fold->indices.size()) : "";
  std::string duration = analysis::folds_launches(fold) ? fold_spread(*fold) : format_duration(d.duration_ns);
  std::string out = fmt::format("<summary><h2>#{} <code title='{}'>{}</code>{} {}</h2></summary>", d.index, esc(name),
                                esc(abbreviate_name(name, 160)), launches, badge(cls + "-bound", cls));
  out += fmt::format(
      "<p class='meta'>grid ({}, {}, {}) &middot; block ({}, {}, {}) &middot; {} &middot; {} (sm_{})</p>", d.grid.x,
      d.grid.y, d.grid.z, d.block.x, d.block.y, d.block.z, esc(duration), esc(d.device), esc(d.compute_capability));
  if (analysis::folds_launches(fold))
    out += fmt::format(
        "<p class='meta'>launches {} fold into this diagnosis of #{} (same grid and block, durations "
        "within noise)</p>",
        esc(index_ranges(fold->indices)), fold->index);
  return out;
}

std::string library_html(const analysis::KernelDiagnosis& d) {
  if (d.library.empty()) return "";
  std::string what = d.primitive.empty() ? d.library : d.library + " " + d.primitive;
  std::string out = "<div class='finding'><p><strong>" + esc(what) +
                    " kernel</strong> (recognised from its name): change how it is called, not its code</p><ul>";
  for (const auto& a : d.library_advice) out += "<li>" + esc(a) + "</li>";
  return out + "</ul></div>";
}

std::string toc_section(const std::vector<TocEntry>& toc) {
  if (toc.size() < 2) return "";
  constexpr size_t kMax = 500;  // a page of 20,000 launches lists the first ones and says how many more
  std::string rows;
  for (size_t i = 0; i < toc.size() && i < kMax; ++i)
    rows += fmt::format("<li><a href='#k{}'>#{} <code>{}</code></a>{}</li>", toc[i].index, toc[i].index,
                        esc(abbreviate_name(toc[i].name, 80)),
                        toc[i].launches > 1 ? fmt::format(" &times;{}", toc[i].launches) : "");
  if (toc.size() > kMax) rows += fmt::format("<li>&hellip; {} more</li>", toc.size() - kMax);
  return "<nav class='card'><h2>Contents</h2><ol class='toc'>" + rows + "</ol></nav>";
}

std::string bottleneck_html(const analysis::Bottleneck& b) {
  std::string cls(analysis::class_name(b.cls));
  return fmt::format("<p>Bottleneck: {} confidence {:.0f}% &mdash; {}</p>", badge(cls + "-bound", cls),
                     b.confidence * 100, esc(b.summary));
}

}  // namespace

std::string html_kernel(const model::Report& r, const model::Kernel* k, const analysis::KernelDiagnosis& d,
                        const analysis::LaunchSummary* fold, analysis::SassInstructions* sass) {
  std::string out = fmt::format("<section class='card' id='k{}'><details open>", d.index) + kernel_header(d, fold) +
                    bottleneck_html(d.bottleneck) + quality_html(d.data_quality) + library_html(d);
  out += "<div class='grid2'><div>" + units_section(d.limiter);
  if (!d.data_quality.stall_unit.empty())
    out += "<h3>Warp stalls (" + esc(d.data_quality.stall_unit) + ")</h3>" + stall_chart(d.data_quality);
  out += "</div><div><h3>Roofline</h3>" + (k ? html::roofline_svg(html::roofline_of(*k)) : "") + "</div></div>";
  out += "<h3>Findings</h3>";
  if (d.findings.empty()) out += "<p class='empty'>no findings</p>";
  std::string unlisted;
  size_t quiet = 0;
  for (const auto& f : d.findings) {
    if (f.listed)
      out += finding_html(f);
    else
      unlisted += finding_html(f), ++quiet;
  }
  if (quiet)
    out +=
        fmt::format("<details><summary>Also noted: {} finding{} gaining nothing worth a change</summary>{}</details>",
                    quiet, quiet == 1 ? "" : "s", unlisted);
  std::string sass_missing;
  out += "<h3>Hot source lines</h3>" + source_section(hot_lines(r, k, d, sass, sass_missing));
  auto notes = d.notes;
  if (auto note = analysis::sass_note(sass_missing);
      !sass_missing.empty() && std::ranges::find(notes, note) == notes.end())
    notes.push_back(note);
  for (const auto& n : notes) out += "<p class='meta'>note: " + esc(n) + "</p>";
  return out + "</details></section>";
}

namespace {

std::string pair_section(const PairDiff& p) {
  std::string verdict(verdict_name(p.verdict));
  std::string out = fmt::format("<section class='card'><h2><code>{}</code> {}</h2><table>", esc(pair_title(p)),
                                badge(verdict, verdict));
  for (const auto& [label, value] : pair_facts(p))
    out += fmt::format("<tr><th>{}</th><td>{}</td></tr>", esc(label), esc(value));
  out += "</table><h3>Key metrics</h3><table><tr><th>metric</th><th>before</th><th>after</th><th>change</th></tr>";
  for (const auto& m : p.metrics)
    out += fmt::format(
        "<tr><td>{} <code>{}</code></td><td class='num'>{}</td><td class='num'>{}</td><td class='num'>{}</td></tr>",
        esc(m.key.label), esc(m.key.metric), esc(format_value(m.before, m.key.unit)),
        esc(format_value(m.after, m.key.unit)), esc(metric_change(m)));
  return out + "</table></section>";
}

std::string unmatched_section(const DiffResult& d) {
  if (d.unmatched_before.empty() && d.unmatched_after.empty()) return "";
  std::string out = "<section class='card'><h2>Missing and new kernels</h2><ul>";
  for (const auto& s : d.unmatched_before)
    out += "<li>missing (only before): <code>" + esc(s.identity()) + "</code></li>";
  for (const auto& s : d.unmatched_after) out += "<li>new (only after): <code>" + esc(s.identity()) + "</code></li>";
  out += "</ul>";
  if (auto hint = unmatched_hint(d); !hint.empty()) out += "<p class='meta'>" + esc(hint) + "</p>";
  return out + "</section>";
}

}  // namespace

std::string html_report_begin(const analysis::Diagnosis& meta, const std::vector<analysis::KernelGroup>& ranking,
                              const std::vector<TocEntry>& toc) {
  std::string body = fmt::format(
      "<header><h1>keet analysis</h1><p>{} &middot; {} &middot; Nsight Compute {}</p></header><main>",
      esc(meta.report_path), esc(meta.report_format), esc(meta.ncu_version.empty() ? "unknown" : meta.ncu_version));
  return html::page_head("keet analysis: " + meta.report_path) + body + ranking_section(ranking) + toc_section(toc);
}

std::string html_narrative(const analysis::KernelDiagnosis& d, const llm::LlmResult& r) {
  std::string status(llm::status_name(r.status));
  std::string out = fmt::format(
      "<section class='card'><h2>LLM narrative: <a href='#k{}'>#{}</a> {}</h2><p class='meta'>{}</p>", d.index, d.index,
      badge(status, r.status == llm::Status::Verified ? "low" : "medium"), esc(r.provider + ":" + r.model));
  if (r.status == llm::Status::Unavailable) return out + "<p>unavailable: " + esc(r.error) + "</p></section>";
  out += "<p>" + esc(r.text) + "</p>";
  if (!r.suggestions.empty()) {
    out += "<ul>";
    for (const auto& s : r.suggestions)
      out +=
          "<li>" + esc(s.text) + " <code>" + esc(s.finding ? *s.finding : std::string("speculative")) + "</code></li>";
    out += "</ul>";
  }
  for (const auto& c : r.contradictions) out += "<p class='meta'>contradicts the engine: " + esc(c) + "</p>";
  for (const auto& v : r.arch_violations) out += "<p class='meta'>not for this device: " + esc(v) + "</p>";
  if (r.unsupported_claims > 0)
    out += fmt::format("<p class='meta'>{} number(s) not backed by the report are marked [unverified]</p>",
                       r.unsupported_claims);
  return out + "</section>";
}

std::string html_report_end() { return "</main>" + html::page_tail(); }

std::string html_report_view(const analysis::ReportView& v) {
  if (v.empty()) return "";
  std::string out = "<section class='card'><h2>The report as a whole</h2>";
  if (!v.comparisons.empty()) out += "<ul>";
  for (const auto& c : v.comparisons) out += "<li>" + esc(c.text) + "</li>";
  if (!v.comparisons.empty()) out += "</ul>";
  for (const auto& series : v.shapes) {
    out += fmt::format("<h3>One kernel at {} launch shapes: <code>{}</code></h3>", series.rows.size(),
                       esc(abbreviate_name(series.display, 80)));
    out +=
        "<table><tr><th>launch</th><th>grid</th><th>block</th><th>launches</th><th>median time</th>"
        "<th>vs fastest</th></tr>";
    for (const auto& r : series.rows)
      out += fmt::format(
          "<tr><td><a href='#k{}'>#{}</a></td><td>({},{},{})</td><td>({},{},{})</td><td class='num'>{}</td>"
          "<td class='num'>{}</td><td class='num'>{:.2f}x</td></tr>",
          r.index, r.index, r.grid.x, r.grid.y, r.grid.z, r.block.x, r.block.y, r.block.z, r.launches,
          esc(human_duration(r.median_ns)), r.vs_fastest);
    out += "</table><p>" + esc(series.verdict) + ".</p>";
  }
  return out + "</section>";
}

std::string html_report(const model::Report& report, const analysis::Diagnosis& diagnosis) {
  std::map<int, const model::Kernel*> by_index;
  for (const auto& k : report.kernels) by_index.emplace(k.index, &k);
  auto kernel_of = [&](int index) {
    auto it = by_index.find(index);
    return it == by_index.end() ? nullptr : it->second;
  };
  analysis::KernelRanking ranking;
  for (const auto& kd : diagnosis.kernels)
    if (const auto* k = kernel_of(kd.index)) ranking.add(*k);
  std::vector<TocEntry> toc;
  for (const auto& kd : diagnosis.kernels) toc.push_back({kd.index, kd.display_name(), 1});
  std::string out = html_report_begin(diagnosis, ranking.groups(), toc);
  for (const auto& kd : diagnosis.kernels) out += html_kernel(report, kernel_of(kd.index), kd);
  return out + html_report_end();
}

std::string html_diff(const DiffResult& diff) {
  std::string body = "<header><h1>keet diff</h1><p>";
  body += esc(fmt::format("{} pair(s), noise threshold {:.1f}%", diff.pairs.size(), diff.threshold * 100));
  if (auto how = pairing_summary(diff); !how.empty()) body += "</p><p>" + esc(how);
  body +=
      "</p></header><main><section class='card'><h2>Summary</h2><table><tr><th>kernel</th><th>before</th>"
      "<th>after</th><th>change</th><th>speedup</th><th>verdict</th></tr>";
  for (const auto& p : diff.pairs) {
    std::string v(verdict_name(p.verdict));
    body += fmt::format(
        "<tr><td><code>{}</code></td><td class='num'>{}</td><td class='num'>{}</td><td class='num'>{}</td>"
        "<td class='num'>{}</td><td>{}</td></tr>",
        esc(pair_title(p)), esc(format_duration(p.before.duration_ns)), esc(format_duration(p.after.duration_ns)),
        esc(format_change(p.change)), esc(format_speedup(p.speedup)), badge(v, v));
  }
  body += "</table></section>";
  for (const auto& p : diff.pairs) body += pair_section(p);
  return html::page("keet diff", body + unmatched_section(diff) + "</main>");
}

}  // namespace keet::render
