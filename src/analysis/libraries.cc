#include "analysis/libraries.h"

#include <algorithm>
#include <stdexcept>

#include "util/data_value.h"
#include "util/pattern.h"

namespace keet::analysis {
namespace {

// The operation a library kernel runs (GEMV, merge sort, state setup...):
// its advice replaces the library's, which may be about another operation.
struct LibraryPrimitive {
  std::string name;
  Pattern match;
  std::vector<std::string> advice;
  bool setup = false;
};

struct Library {
  std::string name;
  std::vector<std::string> prefixes, contains, advice;
  std::vector<Pattern> patterns;  // on the demangled name: kernels written around a library's device API
  std::vector<LibraryPrimitive> primitives;
};

// The table is compiled into the binary and checked by a unit test, so a
// pattern that does not compile is a bug in the data, not in the input.
Pattern library_pattern(const std::string& text) {
  auto p = Pattern::compile(text, {.case_insensitive = true});
  if (!p) throw std::logic_error("data/rules/libraries.json: pattern " + text + ": " + p.error());
  return *p;
}

Library library_from(const DataValue& l) {
  Library lib{l.at("name").str(),
              l.value("prefixes", std::vector<std::string>{}),
              l.value("contains", std::vector<std::string>{}),
              l.value("advice", std::vector<std::string>{}),
              {},
              {}};
  for (const auto& text : l.value("patterns", std::vector<std::string>{}))
    lib.patterns.push_back(library_pattern(text));
  for (auto p : l.member("primitives"))
    lib.primitives.push_back({p.at("name").str(), library_pattern(p.at("match").str()),
                              p.value("advice", std::vector<std::string>{}), p.value("setup", false)});
  return lib;
}

const std::vector<Library>& libraries() {
  static const std::vector<Library> libs = [] {
    std::vector<Library> out;
    auto j = compiled_data("rules/libraries.json");
    if (!j) return out;
    for (auto l : j->member("libraries")) out.push_back(library_from(l));
    return out;
  }();
  return libs;
}

bool names_library(const Library& lib, const std::string& name) {
  return std::ranges::any_of(lib.prefixes, [&](const std::string& p) { return name.starts_with(p); }) ||
         std::ranges::any_of(lib.contains, [&](const std::string& c) { return name.find(c) != std::string::npos; });
}

const Library* library_of(const model::Kernel& k) {
  for (const std::string* name : {&k.function, &k.demangled, &k.mangled})
    for (const auto& lib : libraries())
      if (!name->empty() && names_library(lib, *name)) return &lib;
  const std::string& full = k.demangled.empty() ? k.display_name() : k.demangled;
  for (const auto& lib : libraries())
    if (std::ranges::any_of(lib.patterns, [&](const Pattern& p) { return p.search(full); })) return &lib;
  return nullptr;
}

const LibraryPrimitive* primitive_of(const Library& lib, const model::Kernel& k) {
  const std::string& name = k.demangled.empty() ? k.display_name() : k.demangled;
  for (const auto& p : lib.primitives)
    if (p.match.search(name) || (!k.mangled.empty() && p.match.search(k.mangled))) return &p;
  return nullptr;
}

}  // namespace

std::optional<LibraryMatch> library_kernel(const model::Kernel& k) {
  const Library* lib = library_of(k);
  if (!lib) return std::nullopt;
  const LibraryPrimitive* prim = primitive_of(*lib, k);
  return LibraryMatch{lib->name, prim ? prim->name : "", prim ? prim->advice : lib->advice, prim && prim->setup};
}

namespace {

struct CompiledFamily {
  UserFamily family;
  Pattern names;
};

const std::vector<CompiledFamily>& user_families() {
  static const std::vector<CompiledFamily> families = [] {
    std::vector<CompiledFamily> out;
    auto j = compiled_data("rules/libraries.json");
    if (!j) return out;
    for (auto f : j->member("user_families"))
      out.push_back({{f.at("primitive").str(), f.at("advice").str()}, library_pattern(f.at("names").str())});
    return out;
  }();
  return families;
}

}  // namespace

const UserFamily* user_family(const std::string& demangled) {
  for (const auto& f : user_families())
    if (f.names.search(demangled)) return &f.family;
  return nullptr;
}

}  // namespace keet::analysis
