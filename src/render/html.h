// Self-contained HTML pages: inline CSS and SVG only, no scripts, fonts,
// images or links to anything outside the file, so a report can be attached to
// a CI run or mailed and opened offline.
#pragma once
#include <string>

#include "analysis/diagnosis.h"
#include "model/report.h"
#include "render/diff.h"

namespace keet::render {

// Kernel ranking, then per kernel: bottleneck, speed-of-light bars, roofline,
// stall breakdown, findings with evidence, hot source lines.
std::string html_report(const model::Report& report, const analysis::Diagnosis& diagnosis);
// Before/after page for `keet diff --format html`.
std::string html_diff(const DiffResult& diff);

}  // namespace keet::render
