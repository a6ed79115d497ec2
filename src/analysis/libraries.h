// Library kernels recognised from their names (data/rules/libraries.json):
// which library, which operation it runs, and the advice for calling it.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "model/report.h"

namespace keet::analysis {

// The library, the operation it runs when the table knows it ("GEMV (FP64)",
// "merge sort"; "" otherwise), the advice for that call, and whether the
// operation prepares data for other work (a fill, cuRAND state setup).
struct LibraryMatch {
  std::string library, primitive;
  std::vector<std::string> advice;
  bool setup = false;
};
std::optional<LibraryMatch> library_kernel(const model::Kernel& kernel);

// A name users give their own kernel for an operation a library primitive
// runs (a hand-written GEMV), and what to do when the library's is faster.
struct UserFamily {
  std::string primitive;  // a library primitive's name starts with it ("GEMV" matches "GEMV (FP64)")
  std::string advice;
};
// The family the kernel's demangled name belongs to, or null.
const UserFamily* user_family(const std::string& demangled);

}  // namespace keet::analysis
