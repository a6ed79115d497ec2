#include "service/chat_tools.h"

#include <algorithm>

#include "llm/prompt.h"
#include "service/mcp_tools.h"
#include "util/embedded_data.h"
#include "util/strings.h"

namespace keet::service {
namespace {

using nlohmann::json;

// data/mcp/tools.json's "chat" section: which tools the chat offers and how
// its privacy reads an answer. Checked by the unit tests
// (ChatTools.OffersTheToolsItsTableNames); a broken one offers nothing.
const json& chat_table() {
  static const json table = [] {
    const json& doc = agent_tool_table();
    auto it = doc.find("chat");
    return it != doc.end() && it->is_object() ? *it : json::object();
  }();
  return table;
}

const json* offer_of(const std::string& name) {
  auto offers = chat_table().find("offer");
  if (offers == chat_table().end() || !offers->is_object()) return nullptr;
  auto it = offers->find(name);
  return it != offers->end() && it->is_object() ? &*it : nullptr;
}

std::vector<std::string> strings_of(const json& j, const char* key) {
  std::vector<std::string> out;
  if (j.is_object() && j.contains(key) && j[key].is_array())
    for (const auto& s : j[key])
      if (s.is_string()) out.push_back(s.get<std::string>());
  return out;
}

bool needs_source(const json& offer) { return offer.value("needs_source", false); }

// The tool's arguments as the model sees them: without those the chat binds.
json model_parameters(json schema, const std::vector<std::string>& bound) {
  for (const auto& b : bound) {
    if (schema.contains("properties")) schema["properties"].erase(b);
    if (schema.contains("required") && schema["required"].is_array()) {
      json kept = json::array();
      for (const auto& r : schema["required"])
        if (r != b) kept.push_back(r);
      schema["required"] = std::move(kept);
    }
  }
  return schema;
}

json error(std::string what) { return {{"error", std::move(what)}}; }

constexpr const char* kSharingOff = "source sharing is off (run with --share-source)";

std::string label_of(const ChatPrivacy& p, int64_t index) {
  auto it = p.labels.find(index);
  return it != p.labels.end() ? it->second : "kernel_unknown";
}

// A reference's address (the Profiling Guide, a knowledge-base source) is
// public and no path of the user's.
bool is_url(const std::string& s) { return s.starts_with("https://") || s.starts_with("http://"); }

// Applies `p` to an answer, every member at every depth.
void withhold(json& j, const ChatPrivacy& p) {
  if (j.is_object()) {
    for (const auto& key : p.withheld) j.erase(key);
    auto index = j.find("index");
    if (!p.labels.empty() && index != j.end() && index->is_number_integer()) {
      if (j.contains(p.kernel_name)) j[p.kernel_name] = label_of(p, index->get<int64_t>());
      for (const auto& form : p.name_forms) j.erase(form);
    }
    for (auto& [key, sub] : j.items()) withhold(sub, p);
  } else if (j.is_array()) {
    for (auto& sub : j) withhold(sub, p);
  } else if (j.is_string() && p.scrub && !is_url(j.get_ref<const std::string&>())) {
    j = llm::scrub_paths(j.get<std::string>());
  }
}

}  // namespace

ChatTools::ChatTools(ChatToolOptions options) : options_(std::move(options)) {
  mcp_.run = options_.run;
  mcp_.own_reports = {options_.report};
  mcp_.own_reports_partial = options_.allow_partial;
  const json& table = chat_table();
  privacy_.scrub = !options_.share_source;
  if (privacy_.scrub) privacy_.withheld = strings_of(table, "withheld");
  if (options_.redact_names && options_.loaded) {
    // Each kernel's label once: answers name kernels row by row.
    for (const auto& k : options_.loaded->kernels)
      privacy_.labels.emplace(k.index, llm::kernel_label(k.display_name(), true));
    privacy_.kernel_name = table.value("kernel_name", "name");
    privacy_.name_forms = strings_of(table, "name_forms");
  }
}

std::vector<llm::ToolSpec> ChatTools::specs() const {
  std::vector<llm::ToolSpec> out;
  for (const auto& declaration : tool_declarations()) {
    std::string name = declaration.value("name", "");
    const json* offer = offer_of(name);
    if (!offer || (needs_source(*offer) && !options_.share_source)) continue;
    out.push_back({name, declaration.value("description", ""),
                   model_parameters(declaration.value("inputSchema", json::object()), strings_of(*offer, "bind"))});
  }
  return out;
}

std::string ChatTools::kernel_argument(const std::string& given) const {
  std::string key(trim(given));
  auto digit = [](unsigned char c) { return c >= '0' && c <= '9'; };
  if (key.size() > 1 && key[0] == '#' && std::ranges::all_of(key.substr(1), digit)) return key.substr(1);
  for (const auto& [index, label] : privacy_.labels)
    if (label == key) return std::to_string(index);
  return given;
}

json ChatTools::answer(const std::string& name, const json& arguments) const {
  const json* offer = offer_of(name);
  if (!offer || !find_tool(name)) return error("unknown tool '" + name.substr(0, 64) + "'");
  if (needs_source(*offer) && !options_.share_source) return error(kSharingOff);
  json args = arguments;
  for (const auto& b : strings_of(*offer, "bind")) args[b] = options_.report;
  if (args.contains("kernel") && args["kernel"].is_string())
    args["kernel"] = kernel_argument(args["kernel"].get<std::string>());
  Tools tools(mcp_, ReportRoots::create({}));
  auto outcome = tools.call(name, args);
  if (outcome.kind != ToolOutcome::Kind::Ok) return error(outcome.text);
  withhold(outcome.structured, privacy_);
  return std::move(outcome.structured);
}

}  // namespace keet::service
