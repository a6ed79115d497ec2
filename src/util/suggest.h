// "Did you mean ...?" for mistyped command and option names.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace keet {

// Edit distance (insert, delete, substitute, swap of neighbours; each costs 1).
std::size_t edit_distance(std::string_view a, std::string_view b);
// The candidate nearest to `typed`, if it is close enough to be a typo: at most
// 2 edits and fewer edits than half the typed length (so "x" suggests nothing).
std::optional<std::string> closest_name(std::string_view typed, const std::vector<std::string>& candidates);

}  // namespace keet
