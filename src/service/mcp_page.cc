#include "service/mcp_page.h"

#include <algorithm>

#include <fmt/format.h>

#include "util/json.h"

namespace keet::service {

using nlohmann::json;

json tool_result(const std::string& text, const json& structured) {
  return {{"content", json::array({{{"type", "text"}, {"text", text}}})},
          {"structuredContent", structured},
          {"isError", false}};
}

size_t result_bytes(const std::string& text, const json& structured) {
  return json_text(tool_result(text, structured)).size();
}

json slice(const json& all, int64_t offset, int64_t limit) {
  json out = json::array();
  if (!all.is_array()) return out;
  for (int64_t i = std::max<int64_t>(offset, 0); i < static_cast<int64_t>(all.size()) && limit > 0; ++i, --limit)
    out.push_back(all[static_cast<size_t>(i)]);
  return out;
}

void set_page(json& answer, size_t shown, int64_t offset, int64_t total) {
  int64_t next = offset + static_cast<int64_t>(shown);
  answer["total"] = total;
  answer["offset"] = offset;
  answer["next_offset"] = next < total ? json(next) : json(nullptr);
  answer["truncated"] = next < total;
}

std::string index_ranges(const std::vector<int64_t>& indices) {
  std::string out;
  for (size_t i = 0; i < indices.size();) {
    size_t j = i;
    while (j + 1 < indices.size() && indices[j + 1] == indices[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += j == i ? fmt::format("{}", indices[i]) : fmt::format("{}-{}", indices[i], indices[j]);
    i = j + 1;
  }
  return out;
}

Budget budget_of(const json& declaration) {
  Budget b;
  if (auto it = declaration.find("budget_bytes"); it != declaration.end() && it->is_number_unsigned())
    b.bytes = it->get<size_t>();
  if (auto it = declaration.find("page"); it != declaration.end() && it->is_object())
    if (auto list = it->find("list"); list != it->end() && list->is_string()) b.list = list->get<std::string>();
  return b;
}

namespace {

// The list's name for the summary: the pointer's last token ("/kernel/findings" -> "findings").
std::string list_name(const std::string& pointer) { return pointer.substr(pointer.rfind('/') + 1); }

std::string page_note(const std::string& name, const json& s, size_t shown, bool cut, size_t budget) {
  int64_t offset = s.value("offset", int64_t{0}), total = s.value("total", int64_t{0});
  if (total == 0) return "";  // the summary already says there is nothing
  std::string note =
      shown == 0 ? fmt::format("; no {} from {} of {}", name, offset, total)
                 : fmt::format("; {} {}-{} of {}", name, offset + 1, offset + static_cast<int64_t>(shown), total);
  if (cut) note += fmt::format(" (cut to the {}-byte size budget)", budget);
  if (s.value("truncated", false)) note += fmt::format(", next_offset {}", s["next_offset"].get<int64_t>());
  return note;
}

}  // namespace

void fit_budget(const Budget& budget, json& structured, std::string& text) {
  if (budget.list.empty()) return;
  json::json_pointer at(budget.list);
  if (!structured.contains(at) || !structured[at].is_array() || !structured.contains("total")) return;
  const json all = structured[at];
  const std::string summary = text, name = list_name(budget.list);
  const int64_t offset = structured.value("offset", int64_t{0}), total = structured["total"].get<int64_t>();
  auto show = [&](size_t n, bool cut) {
    structured[at] = slice(all, 0, static_cast<int64_t>(n));
    // The handler's page may already end before total; a cut page ends sooner.
    if (cut) set_page(structured, n, offset, total);
    text = summary + page_note(name, structured, n, cut, budget.bytes);
  };
  show(all.size(), false);
  if (budget.bytes == 0 || result_bytes(text, structured) <= budget.bytes || all.size() <= 1) return;
  // The largest page that fits; sizes grow with the rows kept.
  size_t lo = 1, hi = all.size() - 1;
  while (lo < hi) {
    size_t mid = (lo + hi + 1) / 2;
    show(mid, true);
    if (result_bytes(text, structured) <= budget.bytes)
      lo = mid;
    else
      hi = mid - 1;
  }
  show(lo, true);
}

}  // namespace keet::service
