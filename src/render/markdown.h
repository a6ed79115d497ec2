// The markdown sanitiser: outside strings (kernel names, file names, source
// lines) placed in markdown must neither end the construct they sit in nor
// inject raw HTML such as <script> for a renderer that allows it.
#pragma once
#include <string>
#include <string_view>

namespace keet::render {

// A code span holding `s` verbatim: its fence is longer than any run of
// backticks inside, line breaks become spaces (a code span is one line here),
// and in a table cell '|' is escaped. "<script>" in a code span is text.
std::string md_code(std::string_view s, bool in_table = false);
// Plain markdown text: the characters that start markup inside a line
// (\ ` * _ [ ] < > & |) are backslash-escaped and line breaks become spaces.
std::string md_text(std::string_view s);

}  // namespace keet::render
