// Flags and facts shared by diff and gate for CI use: --min-delta, --pair,
// and the run's timestamp and host name for JUnit.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "app/common.h"
#include "render/diff_gate.h"
#include "util/error.h"

namespace keet::app {

// --min-delta "2us" -> 2000 (ns), or a one-line error naming the flag.
Result<double> duration_flag(const std::string& flag, const std::string& text);
// Every --pair "I:J", or an error naming the first malformed one.
Result<std::vector<std::pair<int, int>>> pair_flags(const std::vector<std::string>& texts);
std::string host_name();  // "localhost" when the system has none
// The gate report's formats: text, json, junit, sarif, markdown, github.
inline constexpr FormatWriter<compare::GateResult> kGateFormats[] = {
    {"text", render::gate_text},   {"json", render::gate_json},         {"junit", render::gate_junit},
    {"sarif", render::gate_sarif}, {"markdown", render::gate_markdown}, {"github", render::gate_github},
};

}  // namespace keet::app
