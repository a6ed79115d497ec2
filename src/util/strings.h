// Small string helpers shared by every layer.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace keet {

std::vector<std::string_view> split(std::string_view s, char sep);
std::string_view trim(std::string_view s);
bool starts_with_ci(std::string_view s, std::string_view prefix);
std::string to_lower(std::string_view s);
// Appends `text` with every '"' doubled: the escaping inside a quoted CSV cell.
void append_quote_doubled(std::string& out, std::string_view text);
// `s` with every byte that does not start or continue a valid UTF-8 sequence
// replaced by U+FFFD (what util/json.h's writer does): XML and HTML must be
// valid UTF-8 too.
std::string valid_utf8(std::string_view s);
// `text` as lines of at most `width` columns (counting UTF-8 code points),
// broken at spaces; every line starts with `indent` (the first with
// `first_indent`). A word longer than a line stays whole. width 0: one line.
std::string wrap_text(std::string_view text, size_t width, std::string_view first_indent, std::string_view indent);
// A demangled C++ name a reader can take in: unchanged when at most `max`
// bytes, else template arguments nested deeper are shown as "<...>" (depth 2,
// then 1), then the parameter list as "(...)", then cut with "...". The
// namespace markers "<unnamed>" and "(anonymous namespace)" are kept.
std::string abbreviate_name(std::string_view name, size_t max = 100);
// A word a POSIX shell reads back unchanged: as it is when it holds only
// letters, digits and _-.:/=, else in single quotes.
std::string shell_word(std::string_view s);
// Parses a number the way ncu prints it ("1,234.5", "12.3%", "n/a" -> nullopt).
std::optional<double> parse_number(std::string_view s);

}  // namespace keet
