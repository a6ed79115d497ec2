// The one way KEET turns JSON into text.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace keet {

// nlohmann's dump() throws type_error.316 on a string that is not valid UTF-8,
// and strings come from reports, CSV files and servers KEET does not control
// (one damaged byte in a kernel name aborted every JSON-writing command). This
// writer replaces each invalid byte with U+FFFD instead, so it never throws.
// indent < 0 writes one line.
std::string json_text(const nlohmann::json& j, int indent = -1);

}  // namespace keet
