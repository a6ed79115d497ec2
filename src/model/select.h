// Kernel selection for -k: an index ("3"), an exact name (demangled, function
// or mangled), or "regex:<RE2 pattern>" searched in the displayed name (util/pattern.h).
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "model/nvtx.h"
#include "model/report.h"
#include "util/error.h"
#include "util/pattern.h"

namespace keet::model {

// "function", "demangled" or "mangled" (model::NameBase, report.h).
std::optional<NameBase> parse_name_base(std::string_view s);
const std::string& name_in_base(const Kernel& k, NameBase base);

class KernelSelector {
 public:
  static Result<KernelSelector> parse(std::string_view spec, NameBase base = NameBase::Function);  // empty spec: all
  bool matches(const Kernel& k) const;
  bool all() const { return spec_.empty(); }
  const std::string& spec() const { return spec_; }

 private:
  std::string spec_;
  NameBase base_ = NameBase::Function;
  std::optional<int> index_;
  std::optional<Pattern> regex_;  // compiled once
};

// -k plus ncu's -s/--launch-skip and -c/--launch-count: of the kernels -k
// matches, skip the first `skip` and take at most `count`. It counts, so
// make one per pass over a report.
// NVTX filters (--nvtx-include/--nvtx-exclude) narrow the kernels before -s
// and -c count, as ncu's do.
class KernelFilter {
 public:
  KernelFilter(KernelSelector sel, uint64_t skip = 0, std::optional<uint64_t> count = std::nullopt,
               NvtxFilter nvtx = {})
      : sel_(std::move(sel)), nvtx_(std::move(nvtx)), skip_(skip), count_(count) {}
  bool take(const Kernel& k);
  // Every kernel it will take has been taken: a reader may stop.
  bool done() const { return count_ && taken_ >= *count_; }
  // Nothing narrows the selection: every kernel is taken.
  bool all() const { return sel_.all() && !nvtx_.active() && skip_ == 0 && !count_; }
  const KernelSelector& selector() const { return sel_; }
  // An NVTX filter met a kernel without NVTX data (such kernels are never
  // taken): the report was not profiled with --nvtx.
  bool lacked_nvtx() const { return lacked_nvtx_; }

 private:
  KernelSelector sel_;
  NvtxFilter nvtx_;
  bool lacked_nvtx_ = false;
  uint64_t skip_ = 0, skipped_ = 0, taken_ = 0;
  std::optional<uint64_t> count_;
};

std::vector<const Kernel*> select(const Report& r, const KernelSelector& sel);

}  // namespace keet::model
