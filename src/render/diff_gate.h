// The CI regression gate's reports (its verdict is compare/gate.h): text and JSON
// (diff_gate.cc), JUnit XML, Markdown and GitHub workflow commands
// (gate_ci.cc), SARIF 2.1.0 (gate_sarif.cc).
#pragma once
#include <string>
#include <vector>

#include "compare/gate.h"
#include "render/diff.h"

namespace keet::render {

// "finding introduced: ...; metric moved: global load sectors +200%; memory-bound -> latency-bound"
std::string likely_cause(const compare::PairDiff& p);
std::string regression_message(const compare::PairDiff& p);

// The row's one-line explanation (the regression message, the pass line, or why it has no pair).
std::string gate_row_message(const compare::GateRow& r);
// "max slowdown 5.0%, min delta 2.00 us"
std::string gate_limits(const compare::GateResult& g);

std::string gate_text(const compare::GateResult& g);
std::string gate_json(const compare::GateResult& g);  // keet.gate/1
std::string gate_junit(const compare::GateResult& g);
std::string gate_sarif(const compare::GateResult& g);
std::string gate_markdown(const compare::GateResult& g);  // GitHub step summary
std::string gate_github(const compare::GateResult& g);    // GitHub workflow commands (::error ...)

// GitHub workflow command escaping: a property value (%, CR, LF, ':' and ','
// encoded) and a message (%, CR, LF encoded).
std::string github_property(std::string_view s);
std::string github_message(std::string_view s);

// A kernel's source file as a path relative to `root` when it lies under it
// ("src/k.cu"), else as given; "" when the kernel has no source location.
std::string source_path_under(const compare::SourceLocation& s, const std::string& root);

}  // namespace keet::render
