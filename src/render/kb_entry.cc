#include "render/kb_entry.h"

#include <fmt/format.h>

#include "util/strings.h"

namespace keet::render {
// Named, not anonymous: unity builds batch this file with app's explain.
namespace kb_entry_impl {

constexpr std::size_t kWrapWidth = 78;

std::string joined(const std::vector<std::string>& words, std::string_view sep) {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : std::string(sep)) + w;
  return out;
}

// Greedy word wrap: `first` starts the first line, `indent` the others.
std::string wrap(std::string_view text, std::string_view first, std::string_view indent) {
  std::string out, line(first);
  std::size_t start = first.size();
  for (const auto& word : split(text, ' ')) {
    if (word.empty()) continue;
    if (line.size() > start && line.size() + 1 + word.size() > kWrapWidth) {
      out += line + "\n";
      line = indent;
      start = indent.size();
    }
    line += (line.size() > start ? " " : "") + std::string(word);
  }
  return out + line + "\n";
}
std::string wrap(std::string_view text, std::string_view indent) { return wrap(text, indent, indent); }

std::string paragraph(std::string_view heading, std::string_view text) {
  return fmt::format("{}:\n{}", heading, wrap(text, "  "));
}

std::string bullets(std::string_view heading, const std::vector<std::string>& items) {
  if (items.empty()) return "";
  std::string out = fmt::format("{}:\n", heading);
  for (const auto& item : items) out += wrap(item, "  - ", "    ");
  return out;
}

std::string references_text(const kb::Entry& e) {
  std::string out = "References:\n";
  for (const auto& r : e.references) out += fmt::format("  - {}\n    {}\n", r.title, r.url);
  return out;
}

}  // namespace kb_entry_impl

std::string kb_entry_text(const kb::Entry& e) {
  using namespace kb_entry_impl;
  std::string out = fmt::format("{} ({})\n\n", e.title, e.id);
  if (!e.aliases.empty()) out += wrap("Also known as: " + joined(e.aliases, ", "), "", "  ");
  if (!e.metrics.empty()) out += wrap("Metrics: " + joined(e.metrics, ", "), "", "  ");
  if (!e.evidence.empty()) out += wrap("Judged on: " + joined(e.evidence, ", "), "", "  ");
  out += "\n" + paragraph("What it means", e.summary) + "\n" + paragraph("How to read it", e.how_to_read);
  out += "\n" + paragraph("Typical values", e.typical) + "\n" + bullets("What to do", e.remedies);
  return out + "\n" + references_text(e);
}

}  // namespace keet::render
