#include "llm/config.h"
#include "util/error.h"

#include <fmt/format.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace keet::llm {

using nlohmann::json;

namespace {

std::string xdg_dir(const Getenv& env, const std::string& var, const std::string& fallback) {
  std::string dir = env(var);
  if (!dir.empty()) return dir;
  return env("HOME") + "/" + fallback;
}

std::string provider_names() {
  std::string out;
  for (const auto& p : providers()) out += (out.empty() ? "" : ", ") + std::string(p.name);
  return out;
}

// A missing config file is fine; a broken one is named in the error.
Result<json> read_config(const Getenv& env) {
  std::string path = config_file(env);
  std::ifstream in(path);
  if (!in) return json::object();
  std::stringstream ss;
  ss << in.rdbuf();
  json j = json::parse(ss.str(), nullptr, false);
  if (j.is_discarded() || !j.is_object()) return fail(ExitCode::BadInput, fmt::format("{}: not a JSON object", path));
  return j;
}

std::string spec_from(const std::string& flag, const Getenv& env, const json& cfg) {
  if (!flag.empty()) return flag;
  if (auto e = env("KEET_LLM"); !e.empty()) return e;
  const json llm = cfg.value("llm", json());
  if (llm.is_string()) return llm.get<std::string>();
  if (llm.is_object()) return llm.value("provider", "") + ":" + llm.value("model", "");
  return "";
}

// Base URL: the provider's environment variable, then the config file, then the default.
std::string base_url_for(const Provider& p, const Getenv& env, const json& cfg) {
  std::string base = env(std::string(p.base_env));
  if (base.empty())
    base = cfg.value("providers", json::object()).value(std::string(p.name), json::object()).value("base_url", "");
  if (base.empty()) base = std::string(p.default_base);
  if (base.find("://") == std::string::npos) base = "http://" + base;
  while (base.ends_with('/')) base.pop_back();
  return base;
}

void apply_timeouts(const json& cfg, Timeouts& t) {
  if (cfg.contains("connect_timeout_s") && cfg["connect_timeout_s"].is_number_integer())
    t.connect = std::chrono::seconds(cfg["connect_timeout_s"].get<int>());
  if (cfg.contains("timeout_s") && cfg["timeout_s"].is_number_integer())
    t.read = std::chrono::seconds(cfg["timeout_s"].get<int>());
  if (cfg.contains("total_timeout_s") && cfg["total_timeout_s"].is_number_integer())
    t.total = std::chrono::seconds(cfg["total_timeout_s"].get<int>());
  t.total = std::max(t.total, t.read);  // a longer read timeout asked for is honoured
}

}  // namespace

std::string config_file(const Getenv& env) { return xdg_dir(env, "XDG_CONFIG_HOME", ".config") + "/keet/config.json"; }
std::string cache_dir(const Getenv& env) { return xdg_dir(env, "XDG_CACHE_HOME", ".cache") + "/keet"; }
std::string cache_file(const Getenv& env) { return cache_dir(env) + "/llm.sqlite"; }

Result<Settings> resolve_settings(const std::string& flag, const Getenv& env) {
  KEET_TRY(cfg, read_config(env));
  std::string spec = spec_from(flag, env, *cfg);
  if (spec.empty())
    return fail(ExitCode::BadInput,
                "no LLM chosen: pass --llm PROVIDER:MODEL, set KEET_LLM, or write " + config_file(env));
  // The model may itself contain colons (ollama's "llama3.1:8b"): split at the first.
  size_t colon = spec.find(':');
  std::string name = spec.substr(0, colon);
  std::string model = colon == std::string::npos ? "" : spec.substr(colon + 1);
  const Provider* p = find_provider(name);
  if (!p) return fail(ExitCode::BadInput, fmt::format("unknown LLM provider '{}' (known: {})", name, provider_names()));
  if (model.empty()) return fail(ExitCode::BadInput, fmt::format("--llm {}: missing model, use PROVIDER:MODEL", spec));
  Settings s;
  s.provider = {name, model, base_url_for(*p, env, *cfg), p->key_env.empty() ? "" : env(std::string(p->key_env))};
  apply_timeouts(*cfg, s.timeouts);
  if (cfg->contains("api_key"))
    s.warnings.push_back(config_file(env) + ": api_key is ignored; keys are read only from " + std::string(p->key_env));
  return s;
}

}  // namespace keet::llm
