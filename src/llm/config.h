// Which provider and model to use, and where KEET keeps its files: --llm
// PROVIDER:MODEL, else $KEET_LLM, else the config file
// ($XDG_CONFIG_HOME/keet/config.json, fallback ~/.config/keet/config.json).
// Keys come only from the provider's environment variable.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "llm/http.h"
#include "llm/provider.h"
#include "util/error.h"

namespace keet::llm {

using Getenv = std::function<std::string(const std::string&)>;

struct Settings {
  ProviderConfig provider;
  Timeouts timeouts;
  std::vector<std::string> warnings;  // e.g. a key found in the config file (ignored)
};

// `flag` is the --llm value ("" when not given). Fails (BadInput) on an unknown
// provider or a spec without a model, and when nothing selects a provider.
Result<Settings> resolve_settings(const std::string& flag, const Getenv& env);

std::string config_file(const Getenv& env);
std::string cache_dir(const Getenv& env);   // $XDG_CACHE_HOME/keet (else ~/.cache/keet)
std::string cache_file(const Getenv& env);  // $XDG_CACHE_HOME/keet/llm.sqlite

}  // namespace keet::llm
