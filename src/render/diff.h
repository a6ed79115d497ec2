// The before/after comparison (compare/diff.h) as a person reads it: text
// and Markdown (diff_text.cc). Its JSON contract, keet.diff/1, is written by
// the compare layer (compare::diff_json), which MCP and the store share.
#pragma once
#include <string>

#include "compare/diff.h"

namespace keet::render {

std::string diff_text(const compare::DiffResult& d);
std::string diff_markdown(const compare::DiffResult& d);

}  // namespace keet::render
