// Answers sized for an assistant's context: the paging fields every listing
// tool shares (total, offset, next_offset, truncated) and the size budget a
// tool declares in data/mcp/tools.json (budget_bytes, page.list), which the
// server keeps by shortening the page, never by cutting an answer apart.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace keet::service {

// The tools/call result of a successful call: the short summary as the one
// text block and the answer as structuredContent (docs/mcp.md says why the
// JSON is not repeated as text).
nlohmann::json tool_result(const std::string& text, const nlohmann::json& structured);
// Its size on the wire, as the server writes it (util/json.h).
size_t result_bytes(const std::string& text, const nlohmann::json& structured);

// Rows [offset, offset + limit) of `all` (fewer at its end).
nlohmann::json slice(const nlohmann::json& all, int64_t offset, int64_t limit);
// The page fields of an answer whose list shows `shown` rows from `offset`
// of `total`.
void set_page(nlohmann::json& answer, size_t shown, int64_t offset, int64_t total);
// Report indices as ranges: {0,1,2,3,7,9,10} -> "0-3,7,9-10".
std::string index_ranges(const std::vector<int64_t>& indices);

struct Budget {
  size_t bytes = 0;  // 0: none
  std::string list;  // JSON pointer to the paged list in the answer
};
// The budget a tool declaration states (budget_bytes, page.list).
Budget budget_of(const nlohmann::json& declaration);

// Keeps the whole result within the budget: drops rows from the end of the
// page (at least one stays, so that paging always moves on) and sets
// next_offset and truncated to match. Then adds the page to the summary
// ("kernels 1-20 of 52, next_offset 20"), saying when the budget cut it.
void fit_budget(const Budget& budget, nlohmann::json& structured, std::string& text);

}  // namespace keet::service
