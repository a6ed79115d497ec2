// Shared libraries loaded on first use rather than at start-up. keet's start-up
// time is a benchmark target, and most commands never touch PostgreSQL, TLS or
// line editing, so those libraries are opened only by the code that needs them.
#pragma once
#include <string>

#include "util/error.h"

namespace keet::io {

// dlopen(name, RTLD_NOW | RTLD_LOCAL). The handle is never closed: the library
// stays loaded for the rest of the process, like a linked one would.
Result<void*> open_library(const std::string& name_or_path);

void* find_symbol(void* library, const char* name);

// Binds `out` to `name` in `library`; false when the symbol is missing.
template <typename F>
bool bind_symbol(void* library, const char* name, F& out) {
  out = reinterpret_cast<F>(find_symbol(library, name));
  return out != nullptr;
}

// The folder holding the running executable ("" when it cannot be told).
std::string executable_dir();

}  // namespace keet::io
