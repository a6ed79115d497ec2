// End-to-end: `analyze --format markdown` and `diff --format markdown` go
// through a real CommonMark renderer (Debian's cmark-gfm) and the HTML has the
// structure the JSON of the same run implies: each finding a heading, its
// explanation, evidence, fix and ncu's agreeing rules separate blocks, the
// advice one list item each, every note its own quote, and names from the
// report shown as text (no markup, no raw HTML) however they are spelt.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>

#include "support/report_writer.h"
#include "support/testing.h"

namespace keet {
namespace {

using namespace keet::testing;
using json = nlohmann::json;

// A name with every character that starts markup in a line, and raw HTML.
constexpr const char* kHostileName = "evil_*kernel*_|x|<script>alert(1)</script>__init__`q`";

// cmark-gfm with raw HTML passed through (--unsafe), so an unescaped tag would show.
std::string to_html(const std::string& markdown, bool tables = false) {
  std::string path = temp_path("md-input.md");
  std::ofstream(path) << markdown;
  auto r = run_command(std::string("cmark-gfm --unsafe ") + (tables ? "-e table " : "") + shell_quote(path));
  EXPECT_EQ(r.rc, 0) << "cmark-gfm (Debian package cmark-gfm, scripts/bootstrap): " << r.err;
  return r.out;
}

// How cmark writes text into HTML.
std::string html_text(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '&')
      out += "&amp;";
    else if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else if (c == '"')
      out += "&quot;";
    else
      out += c;
  }
  return out;
}

size_t count(const std::string& hay, const std::string& needle) {
  size_t n = 0;
  for (auto at = hay.find(needle); at != std::string::npos; at = hay.find(needle, at + needle.size())) ++n;
  return n;
}

std::string hostile_report(const std::string& file, double duration_ns) {
  ReportWriter w;
  ReportWriter::Block b;
  auto k = w.kernel(kHostileName, 8192, 256, scenario_metrics(duration_ns));
  auto other = w.kernel("tiny_<b>bold</b>", 1, 32, {{"gpu__time_duration.sum", 1500}});
  w.flush_strings(b);
  b.results.push_back(k.SerializeAsString());
  b.results.push_back(other.SerializeAsString());
  w.add(b);
  std::string path = temp_path(file);
  w.write(path);
  return path;
}

// The HTML of one run against the JSON of the same report.
void expect_structure(const json& analysis, const std::string& html, const std::string& where) {
  size_t findings = 0, notes = 0;
  for (const auto& k : analysis["kernels"]) {
    notes += k["notes"].size();
    for (const auto& f : k["findings"]) {
      // A finding whose own estimate gains 1.01x or less is one "Also noted" id, not a section.
      if (f["estimated_speedup"].is_number() &&
          std::round(f["estimated_speedup"].get<double>() * 100) / 100 <= 1.01 + 1e-9) {
        EXPECT_NE(html.find("Also noted, gaining nothing worth a change"), std::string::npos) << where;
        continue;
      }
      ++findings;
      std::string expl = f["explanation"];
      if (!expl.empty())
        EXPECT_NE(html.find("<p>" + html_text(expl) + "</p>"), std::string::npos)
            << where << ": explanation of " << f["id"] << " is not a paragraph of its own";
      if (!f["evidence"].empty()) {  // a list of labelled values, the label as the reader's words
        std::string first = f["evidence"][0].value("label", f["evidence"][0]["metric"].get<std::string>());
        EXPECT_NE(html.find("<p>Evidence:</p>\n<ul>\n<li>" + html_text(first) + ": "), std::string::npos)
            << where << ": evidence of " << f["id"];
      }
      if (f["advice"].empty()) continue;
      std::string fix = "<p>Fix:</p>\n<ul>\n";
      for (const auto& a : f["advice"]) fix += "<li>" + html_text(a.get<std::string>()) + "</li>\n";
      EXPECT_NE(html.find(fix + "</ul>"), std::string::npos) << where << ": fix list of " << f["id"];
    }
  }
  EXPECT_EQ(count(html, "<h3>"), findings) << where;
  EXPECT_EQ(count(html, "<blockquote>\n<p>Note: "), notes) << where << ": one quote per note";
  // ncu's agreeing rules: a paragraph, never the tail of an advice bullet.
  EXPECT_EQ(count(html, "Also flagged by ncu"), count(html, "<p>Also flagged by ncu: ")) << where;
  EXPECT_EQ(html.find("<script"), std::string::npos) << where;
  EXPECT_EQ(html.find("<em>"), std::string::npos) << where << ": markup from a name or a text";
  EXPECT_EQ(count(html, "<p><strong>Bottleneck: "), analysis["kernels"].size()) << where << ": one per kernel";
}

TEST(Markdown, HostileNamesRenderAsText) {
  std::string rep = shell_quote(hostile_report("md-hostile.ncu-rep", 120000));
  auto md = run_keet("analyze --format markdown " + rep);
  ASSERT_EQ(md.rc, 0) << md.err;
  auto js = run_keet("analyze --format json " + rep);
  ASSERT_EQ(js.rc, 0) << js.err;
  json analysis = json::parse(js.out);
  ASSERT_FALSE(analysis["kernels"][0]["findings"].empty());
  std::string html = to_html(md.out);
  expect_structure(analysis, html, "writer report");
  // The name, character for character, inside a code span of the kernel's heading.
  std::string name = analysis["kernels"][0]["demangled"];
  EXPECT_NE(html.find("<h2><code>[0] " + html_text(name) + "</code></h2>"), std::string::npos) << html;
  EXPECT_NE(html.find("&lt;b&gt;bold&lt;/b&gt;"), std::string::npos) << html;
  EXPECT_EQ(html.find("<b>"), std::string::npos);
  // Bottleneck and busiest units are two paragraphs, not one run-on line.
  EXPECT_NE(html.find("<p><strong>Bottleneck: MEMORY"), std::string::npos) << html;
  EXPECT_NE(html.find("<p>Busiest units (% of each unit"), std::string::npos) << html;
}

TEST(Markdown, DiffRendersItsTableAndNamesAsText) {
  std::string before = shell_quote(hostile_report("md-before.ncu-rep", 120000));
  std::string after = shell_quote(hostile_report("md-after.ncu-rep", 80000));
  auto md = run_keet("diff --format markdown " + before + " " + after);
  ASSERT_EQ(md.rc, 0) << md.err;
  std::string html = to_html(md.out, true);
  EXPECT_EQ(count(html, "<table>"), 1u) << html;
  EXPECT_EQ(count(html, "<tr>"), 3u) << "a header and one row per pair:\n" << html;
  EXPECT_EQ(html.find("<script"), std::string::npos) << html;
  EXPECT_EQ(html.find("<em>"), std::string::npos) << html;
  EXPECT_EQ(html.find("<b>"), std::string::npos) << html;
  // The '|' in the name stays inside its cell: every row has the header's six cells.
  EXPECT_EQ(count(html, "<td"), 12u) << html;
}

TEST(Markdown, FixtureAnalysesRenderWithTheirStructure) {
  KEET_REQUIRE_SHARED();
  size_t with_rules = 0, checked = 0;
  for (const auto& report : fixture_reports()) {
    auto js = run_keet("analyze --format json " + shell_quote(report));
    if (js.rc != 0 || js.out.empty()) continue;  // unreadable fixtures are the readers' tests
    auto md = run_keet("analyze --launches all --format markdown " + shell_quote(report));  // as JSON: every launch
    ASSERT_EQ(md.rc, 0) << report << ": " << md.err;
    json analysis = json::parse(js.out);
    expect_structure(analysis, to_html(md.out), report);
    for (const auto& k : analysis["kernels"])
      for (const auto& f : k["findings"]) with_rules += !f["ncu_rules"].empty();
    ++checked;
  }
  EXPECT_GT(checked, 50u);
  EXPECT_GT(with_rules, 0u) << "no fixture finding agrees with an ncu rule: 'Also flagged by ncu' went untested";
}

}  // namespace
}  // namespace keet
