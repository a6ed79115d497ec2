// Number and label formatting shared by the diff renderings (text, Markdown,
// HTML) and the gate's reports.
#pragma once
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "render/diff.h"

namespace keet::render {

std::string format_duration(std::optional<double> ns);
std::string format_value(double v, const std::string& unit);
std::string format_change(std::optional<double> change);    // "+12.3%"
std::string format_speedup(std::optional<double> s);        // "1.23x"
std::string join_ids(const std::vector<std::string>& ids);  // "a, b" or "-"
std::string pair_title(const compare::PairDiff& p);
std::string metric_line(const compare::MetricDelta& m);
// A key metric's change: "+12.4 points" for a rate (unit %), else "+12.3%".
std::string metric_change(const compare::MetricDelta& m);
std::vector<std::pair<std::string, std::string>> pair_facts(const compare::PairDiff& p);

// How a pair was made when not by name, saying when the kernel names differ:
// "position, the only kernel of each report: the kernel names differ
// (addConstDouble3 -> addConstDouble)". "" for a pair of the same function.
// The parts are separate so the MCP tool words a keet.diff/1 pair the same way.
std::string pairing_note(compare::PairedBy by, const std::string& before_name, const std::string& after_name,
                         int before_index, int after_index);
std::string pairing_note(const compare::PairDiff& p);
// "pairing: 2 by name, 1 as the only kernel of each report"; "" when every pair is by name.
std::string pairing_summary(const compare::DiffResult& d);
// "--pair 2:1 --pair 3:4"
std::string pair_flags_text(const std::vector<std::pair<int, int>>& pairs);
// What to pass when an unmatched kernel is another one renamed; "" unless both
// reports have unmatched kernels.
std::string unmatched_hint(const compare::DiffResult& d);

}  // namespace keet::render
