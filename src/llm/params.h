// Request parameters that differ between models, and the user's overrides.
// OpenAI's reasoning models (o1, o3, o4-mini, gpt-5) reject `max_tokens` and
// any `temperature` but the default, so how the token limit is spelled and
// whether a temperature is sent come from data/llm/models.json (model-name
// patterns per provider); `--llm-param KEY=VALUE` changes or removes any
// body field for the run, for models the table does not know yet.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/error.h"

namespace keet::llm {

// What the table says about one model; empty fields keep the provider's own.
struct ModelParams {
  std::string token_limit;  // body key for the token limit ("max_completion_tokens"); "": the provider's
  bool temperature = true;  // false: send no temperature
};
ModelParams model_params(std::string_view provider, std::string_view model);

// Writes the token limit and temperature into a request body as the model
// wants them: the provider's own keys (dotted paths: "options.num_predict")
// unless the table names another token-limit key or no temperature.
struct Sampling {
  std::string_view provider, model;
  int max_tokens = 0;
  double temperature = 0;
  std::string_view token_limit_key, temperature_key;
};
void set_sampling(nlohmann::json& body, const Sampling& s);

// One --llm-param: `key` is a dotted path into the request body
// ("options.num_ctx"); a null value removes the field.
struct ParamOverride {
  std::string key;
  nlohmann::json value;
};
// "KEY=VALUE": VALUE is read as JSON when it is JSON (4000, true, null,
// {"a":1}), else as a string; "KEY=" removes the field. Fields that carry
// KEET's own request (model, messages, tools, schema...) are refused (BadInput).
Result<ParamOverride> parse_param(std::string_view spec);
// Applies the overrides in order. Setting one of the two token-limit keys
// (max_tokens, max_completion_tokens) removes the other: they are alternatives,
// and the API refuses a body carrying the wrong one.
void apply_overrides(nlohmann::json& body, const std::vector<ParamOverride>& overrides);

}  // namespace keet::llm
