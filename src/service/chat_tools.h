// The model's tools in `keet ask` / `keet chat`: the agent tools of
// data/mcp/tools.json that its "chat" section offers, answered by the same
// service::Tools the MCP server calls, with the chat's report bound to their
// report argument and the chat's privacy applied to every answer (without
// --share-source no source path or text; with --redact-names the prompt's
// kernel labels instead of names).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "llm/tools.h"
#include "model/report.h"
#include "service/mcp.h"

namespace keet::service {

struct ChatToolOptions {
  CommandRunner run;                      // app::in_process_runner() in the real program
  std::string report;                     // the chat's report as the user named it ("-": standard input)
  const model::Report* loaded = nullptr;  // that report, read: the kernels' names for --redact-names
  bool share_source = false;
  bool redact_names = false;
  bool allow_partial = false;  // the chat's --allow-partial: its tools read the report truncated too
};

// How an answer is made private, from the table's chat section and the
// chat's switches; built once per chat.
struct ChatPrivacy {
  bool scrub = false;                     // not sharing source: paths in strings become <path>
  std::vector<std::string> withheld;      // members left out when not sharing source
  std::map<int64_t, std::string> labels;  // redacting: each kernel's label, by index
  std::string kernel_name;
  std::vector<std::string> name_forms;
};

class ChatTools : public llm::ToolBox {
 public:
  explicit ChatTools(ChatToolOptions options);
  std::vector<llm::ToolSpec> specs() const override;
  nlohmann::json answer(const std::string& name, const nlohmann::json& arguments) const override;

 private:
  // The kernel argument as the MCP tool reads it: a redacted label or "#3" becomes the index.
  std::string kernel_argument(const std::string& given) const;

  ChatToolOptions options_;
  McpOptions mcp_;
  ChatPrivacy privacy_;
};

}  // namespace keet::service
