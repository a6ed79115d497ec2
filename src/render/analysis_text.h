// Human-readable analysis: a terminal view (optional ANSI colour) and Markdown.
#pragma once
#include <string>
#include <vector>

#include "analysis/diagnosis.h"
#include "analysis/ranking.h"

namespace keet::render {

struct TextStyle {
  bool color = false;
  bool markdown = false;
};

std::string ranking_text(const std::vector<analysis::KernelGroup>& groups, const TextStyle& style, size_t max_rows = 15);
std::string kernel_text(const analysis::KernelDiagnosis& k, const TextStyle& style);
std::string analysis_text(const analysis::Diagnosis& d, const std::vector<analysis::KernelGroup>& ranking,
                          const TextStyle& style);

// "1.23 ms" / "45.6 us" / "789 ns".
std::string human_duration(double ns);
// Evidence value with its unit, in a readable scale ("72.61 %", "25.2 MB").
std::string evidence_value(const analysis::Evidence& e);

}  // namespace keet::render
