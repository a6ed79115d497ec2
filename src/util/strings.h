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
// Parses a number the way ncu prints it ("1,234.5", "12.3%", "n/a" -> nullopt).
std::optional<double> parse_number(std::string_view s);

}  // namespace keet
