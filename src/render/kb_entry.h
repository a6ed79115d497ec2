// A knowledge-base entry as text for people: what `keet explain` prints and
// what the Language Server shows (and links to) for a finding's term.
#pragma once
#include <string>

#include "kb/entry.h"

namespace keet::render {

// Title and id, aliases and metrics, what it means, how to read it, typical
// values, what to do and references, wrapped at 78 columns.
std::string kb_entry_text(const kb::Entry& e);

}  // namespace keet::render
