#include "render/llm_markdown.h"

#include <cctype>

#include <fmt/format.h>

#include "render/markdown.h"

namespace keet::render {
namespace {

// One paragraph of outside text. md_text escapes markup inside a line; a
// paragraph must also not start a block (heading, quote, list, rule).
std::string paragraph(std::string_view s) {
  std::string out = md_text(s);
  size_t lead = out.find_first_not_of(' ');
  if (lead == std::string::npos) return "";
  out.erase(0, lead);
  if (std::string_view("#>-+=~").find(out[0]) != std::string_view::npos) return "\\" + out;
  size_t digits = 0;
  while (digits < out.size() && std::isdigit(static_cast<unsigned char>(out[digits]))) ++digits;
  if (digits > 0 && digits < out.size() && (out[digits] == '.' || out[digits] == ')')) out.insert(digits, "\\");
  return out;
}

// Blank lines separate the model's paragraphs; single line breaks join.
std::string paragraphs(const std::string& text) {
  std::string out, current;
  auto flush = [&] {
    if (auto p = paragraph(current); !p.empty()) out += p + "\n\n";
    current.clear();
  };
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    std::string_view line(text.data() + start, (end == std::string::npos ? text.size() : end) - start);
    if (line.find_first_not_of(" \t\r") == std::string_view::npos)
      flush();
    else
      current += (current.empty() ? "" : " ") + std::string(line);
    if (end == std::string::npos) break;
    start = end + 1;
  }
  flush();
  return out;
}

// A labelled list: the label paragraph keeps two lists in a row from merging into one.
std::string list(std::string_view label, const std::vector<std::string>& items) {
  if (items.empty()) return "";
  std::string out = fmt::format("{}\n\n", label);
  for (const auto& i : items) out += "- " + md_text(i) + "\n";
  return out + "\n";
}

}  // namespace

std::string narrative_markdown(const llm::LlmResult& r) {
  std::string out =
      fmt::format("#### LLM narrative ({}) — {}\n\n", md_code(r.provider + ":" + r.model), llm::status_name(r.status));
  if (r.status == llm::Status::Unavailable) return out + "Unavailable: " + paragraph(r.error) + "\n\n";
  out += paragraphs(r.text);
  std::vector<std::string> suggestions;
  for (const auto& s : r.suggestions)
    suggestions.push_back(fmt::format("{} ({})", s.text, s.finding ? *s.finding : "speculative"));
  out += list("Suggestions:", suggestions);
  out += list("Questions:", r.questions);
  out += list("Not for this device:", r.arch_violations);
  out += list("Contradicts the analysis:", r.contradictions);
  if (r.unsupported_claims > 0)
    out += fmt::format("{} number(s) not backed by the report are marked \\[unverified\\].\n\n", r.unsupported_claims);
  return out;
}

}  // namespace keet::render
