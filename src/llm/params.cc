#include "llm/params.h"

#include <fmt/format.h>

#include <array>
#include <cctype>

#include "util/embedded_data.h"
#include "util/pattern.h"

namespace keet::llm {

using nlohmann::json;

namespace {

struct ModelRule {
  std::string provider;
  Pattern pattern;
  ModelParams params;
};

// A broken entry is a build-time bug caught by the unit test that loads the
// table; here it is skipped rather than taking the LLM layer down.
std::vector<ModelRule> load_rules() {
  std::vector<ModelRule> out;
  auto text = embedded_file("llm/models.json");
  json j = text ? json::parse(*text, nullptr, false) : json::object();
  if (!j.is_object()) return out;
  for (const auto& m : j.value("models", json::array())) {
    auto p = Pattern::compile(m.value("pattern", ""), {.case_insensitive = true});
    if (!p) continue;
    out.push_back({m.value("provider", ""), std::move(*p), {m.value("token_limit", ""), m.value("temperature", true)}});
  }
  return out;
}

const std::vector<ModelRule>& model_rules() {
  static const std::vector<ModelRule> r = load_rules();
  return r;
}

// KEET's own request: changing these would change what is asked or how the
// answer is checked, not how the model is driven.
constexpr std::array<std::string_view, 8> kReserved = {"model",  "messages",        "system", "tools",
                                                       "stream", "response_format", "format", "tool_choice"};

bool valid_key(std::string_view key) {
  if (key.empty() || key.front() == '.' || key.back() == '.' || key.find("..") != std::string_view::npos) return false;
  for (char c : key)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.') return false;
  return true;
}

json::json_pointer pointer_for(const std::string& dotted) {
  std::string p;
  for (char c : dotted) p += c == '.' ? '/' : c;
  return json::json_pointer("/" + p);
}

void erase_at(json& body, const json::json_pointer& ptr) {
  if (!body.contains(ptr)) return;
  json& parent = body[ptr.parent_pointer()];
  if (parent.is_object()) parent.erase(ptr.back());
}

}  // namespace

ModelParams model_params(std::string_view provider, std::string_view model) {
  for (const auto& r : model_rules())
    if (r.provider == provider && r.pattern.search(model)) return r.params;
  return {};
}

Result<ParamOverride> parse_param(std::string_view spec) {
  auto eq = spec.find('=');
  std::string key(spec.substr(0, eq));
  if (eq == std::string_view::npos || !valid_key(key))
    return fail(
        ExitCode::BadInput,
        fmt::format("--llm-param '{}': expected KEY=VALUE (KEY: letters, digits, _ - and . for nesting)", spec));
  std::string top = key.substr(0, key.find('.'));
  for (auto r : kReserved)
    if (top == r) return fail(ExitCode::BadInput, fmt::format("--llm-param {}: KEET builds this field itself", key));
  std::string text(spec.substr(eq + 1));
  json value = text.empty() ? json(nullptr) : json::parse(text, nullptr, false);
  if (value.is_discarded()) value = text;  // not JSON: a string (reasoning_effort=low)
  return ParamOverride{key, value};
}

void apply_overrides(json& body, const std::vector<ParamOverride>& overrides) {
  for (const auto& o : overrides) {
    auto ptr = pointer_for(o.key);
    if (o.value.is_null()) {
      erase_at(body, ptr);
      continue;
    }
    if (o.key == "max_tokens") body.erase("max_completion_tokens");
    if (o.key == "max_completion_tokens") body.erase("max_tokens");
    // A path through a field that is not an object ("temperature.x") has
    // nowhere to go; the field is left as KEET built it.
    try {
      body[ptr] = o.value;
    } catch (const json::exception&) {
    }
  }
}

void set_sampling(json& body, const Sampling& s) {
  auto mp = model_params(s.provider, s.model);
  body[pointer_for(mp.token_limit.empty() ? std::string(s.token_limit_key) : mp.token_limit)] = s.max_tokens;
  if (mp.temperature) body[pointer_for(std::string(s.temperature_key))] = s.temperature;
}

}  // namespace keet::llm
