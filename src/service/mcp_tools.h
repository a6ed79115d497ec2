// The MCP tools: declared in data/mcp/tools.json (name, description, input
// and output schemas), answered by running KEET's commands through
// McpOptions::run and projecting their JSON contracts (docs/contracts.md)
// through the shapes the same table declares (service/projection.h), so that
// every measured number names the metric or quantity it is.
#pragma once
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "service/mcp.h"
#include "service/projection.h"
#include "service/report_paths.h"

namespace keet::service {

// data/mcp/tools.json as embedded, parsed once (an empty object if it were
// broken): the agent tools' one table, read here and by service/chat_tools.cc.
const nlohmann::json& agent_tool_table();
// tools/list's "tools" array: the table with each outputSchema made whole
// (the shared $defs copied in). Parsed and checked once.
const nlohmann::json& tool_declarations();
// One tool's declaration, or nullptr.
const nlohmann::json* find_tool(std::string_view name);
// The table's "shapes": what each row and object of an answer holds, and
// from which member of the command's contract.
const Projections& answer_shapes();

struct ToolOutcome {
  enum class Kind { Ok, ToolError, UnknownTool, BadArguments };
  Kind kind = Kind::Ok;
  nlohmann::json structured;  // Ok: conforms to the tool's outputSchema
  std::string text;           // Ok: a short summary; otherwise the one-line reason
};

class Tools {
 public:
  Tools(const McpOptions& options, Result<ReportRoots> roots);
  // Never throws: a failing command, a malformed report or output that is
  // not what the contract says all become ToolError with one line.
  ToolOutcome call(std::string_view name, const nlohmann::json& arguments) const;

 private:
  const McpOptions& options_;
  Result<ReportRoots> roots_;
};

}  // namespace keet::service
