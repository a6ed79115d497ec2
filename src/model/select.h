// Kernel selection for -k: an index ("3"), an exact name (demangled, function
// or mangled), or "regex:<RE2 pattern>" searched in the displayed name (util/pattern.h).
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "model/report.h"
#include "util/error.h"
#include "util/pattern.h"

namespace keet::model {

class KernelSelector {
 public:
  static Result<KernelSelector> parse(std::string_view spec);  // empty spec: all
  bool matches(const Kernel& k) const;
  bool all() const { return spec_.empty(); }
  const std::string& spec() const { return spec_; }

 private:
  std::string spec_;
  std::optional<int> index_;
  std::optional<Pattern> regex_;  // compiled once
};

std::vector<const Kernel*> select(const Report& r, const KernelSelector& sel);

}  // namespace keet::model
