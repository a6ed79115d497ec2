// libFuzzer target: the whole analyse-and-render path `keet analyze` and
// `keet gate` take, from report bytes of any format KEET reads (content
// detection picks the reader) to every output: JSON, text, markdown, HTML, and
// the gate's text, JUnit and SARIF. The gate needs a baseline; here the
// report's own snapshots with durations halved stand in for it, so every timed
// kernel is a regression and the regression renderers run too. A crash, a
// sanitizer report or a throw out of any renderer (invalid UTF-8 in dump())
// fails the target.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "analysis/engine.h"
#include "analysis/ranking.h"
#include "io/file.h"
#include "readers/reader.h"
#include "render/analysis_json.h"
#include "render/analysis_text.h"
#include "render/diff.h"
#include "render/diff_gate.h"
#include "render/html.h"
#include "util/json.h"

namespace {

using namespace keet;

// Output must not be empty: a renderer returning nothing for a report with
// kernels would be a silent wrong answer; trap so libFuzzer keeps the input.
void require(bool ok) {
  if (!ok) __builtin_trap();
}

void render_gate(const model::Report& report, const analysis::Diagnosis& d) {
  auto after = compare::snapshots(report, d);
  auto before = after;
  for (auto& s : before)
    if (s.duration_ns) *s.duration_ns /= 2;
  auto g = compare::gate(compare::diff(before, after, {0.05, {}}), 0.05);
  g.report = "fuzz-input";
  g.baseline = "fuzz baseline";
  require(!render::gate_text(g).empty());
  require(!render::gate_junit(g).empty());
  require(!render::gate_sarif(g).empty());
  require(!render::gate_json(g).empty());
  require(!render::gate_markdown(g).empty());
  require(!render::gate_github(g).empty());
  require(!render::html_diff(compare::diff(before, after, {0.05, {}})).empty());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto src = io::memory_source("fuzz-input", std::string(reinterpret_cast<const char*>(data), size));
  readers::ReadOptions opt;
  opt.allow_partial = true;
  auto report = readers::load(*src, opt);
  if (!report) {
    (void)report.error().message();
    return 0;
  }
  std::vector<const model::Kernel*> ks;
  for (const auto& k : report->kernels) ks.push_back(&k);
  auto d = analysis::analyze(*report, ks, {0});
  d.report_path = "fuzz-input";
  d.report_format = std::string(model::format_name(report->format));
  d.ncu_version = report->ncu_version();

  require(!json_text(render::analysis_json(d), 2).empty());
  auto ranking = analysis::rank_kernels(ks);
  for (bool markdown : {false, true})
    for (bool color : {false, true}) {
      render::TextStyle style{color, markdown};
      (void)render::analysis_text(d, ranking, style);
      if (ranking.size() > 1) (void)render::ranking_text(ranking, style);
    }
  require(!render::html_report(*report, d).empty());
  render_gate(*report, d);
  return 0;
}
