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
// its privacy reads an answer. Embedded and checked by the unit tests
// (ChatTools.OffersEveryToolItsTableNames); a broken one offers nothing.
const json& chat_table() {
  static const json table = [] {
    auto text = embedded_file("mcp/tools.json");
    json doc = text ? json::parse(*text, nullptr, false) : json();
    return doc.is_object() && doc.contains("chat") && doc["chat"].is_object() ? doc["chat"] : json::object();
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

}  // namespace

ChatTools::ChatTools(ChatToolOptions options) : options_(std::move(options)) {
  mcp_.run = options_.run;
  mcp_.own_reports = {options_.report};
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
  if (options_.redact_names && options_.loaded)
    for (const auto& k : options_.loaded->kernels)
      if (llm::kernel_label(k.display_name(), true) == key) return std::to_string(k.index);
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
  make_private(outcome.structured);
  return std::move(outcome.structured);
}

namespace {

struct Privacy {
  bool scrub = false;                    // not sharing source: paths in strings become <path>
  std::vector<std::string> withheld;     // members left out when not sharing source
  const model::Report* names = nullptr;  // set when redacting
  std::string kernel_name;
  std::vector<std::string> name_forms;
};

std::string label_of(const model::Report& report, int64_t index) {
  for (const auto& k : report.kernels)
    if (k.index == index) return llm::kernel_label(k.display_name(), true);
  return "kernel_unknown";
}

// A reference's address (the Profiling Guide, a knowledge-base source) is
// public and no path of the user's.
bool is_url(const std::string& s) { return s.starts_with("https://") || s.starts_with("http://"); }

void withhold(json& j, const Privacy& p) {
  if (j.is_object()) {
    for (const auto& key : p.withheld) j.erase(key);
    auto index = j.find("index");
    if (p.names && index != j.end() && index->is_number_integer()) {
      if (j.contains(p.kernel_name)) j[p.kernel_name] = label_of(*p.names, index->get<int64_t>());
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

void ChatTools::make_private(json& answer) const {
  const json& table = chat_table();
  Privacy p;
  p.scrub = !options_.share_source;
  if (p.scrub) p.withheld = strings_of(table, "withheld");
  if (options_.redact_names && options_.loaded) {
    p.names = options_.loaded;
    p.kernel_name = table.value("kernel_name", "name");
    p.name_forms = strings_of(table, "name_forms");
  }
  withhold(answer, p);
}

}  // namespace keet::service
