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
std::string format_change(std::optional<double> change);  // "+12.3%"
std::string format_speedup(std::optional<double> s);       // "1.23x"
std::string join_ids(const std::vector<std::string>& ids);  // "a, b" or "-"
std::string pair_title(const PairDiff& p);
std::string metric_line(const MetricDelta& m);
std::vector<std::pair<std::string, std::string>> pair_facts(const PairDiff& p);

}  // namespace keet::render
