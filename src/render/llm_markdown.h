// The LLM narrative in Markdown, for `analyze --format markdown --llm`. A model
// wrote the text, so it is outside text like a kernel name: escaped, never raw
// HTML or markup, each paragraph and list its own block.
#pragma once
#include <string>

#include "llm/result.h"

namespace keet::render {

std::string narrative_markdown(const llm::LlmResult& r);

}  // namespace keet::render
