#include "model/select.h"

#include <charconv>

namespace keet::model {

std::optional<NameBase> parse_name_base(std::string_view s) {
  if (s == "function") return NameBase::Function;
  if (s == "demangled") return NameBase::Demangled;
  if (s == "mangled") return NameBase::Mangled;
  return std::nullopt;
}

const std::string& name_in_base(const Kernel& k, NameBase base) {
  const std::string& chosen = base == NameBase::Function  ? k.function
                              : base == NameBase::Mangled ? k.mangled
                                                          : k.demangled;
  if (!chosen.empty()) return chosen;
  // Independent of the name printed (Kernel::shown): the readable ones first.
  return !k.demangled.empty() ? k.demangled : !k.function.empty() ? k.function : k.mangled;
}

Result<KernelSelector> KernelSelector::parse(std::string_view spec, NameBase base) {
  KernelSelector s;
  s.spec_ = std::string(spec);
  s.base_ = base;
  if (spec.empty()) return s;
  if (spec.starts_with("regex:")) {
    auto re = Pattern::compile(spec.substr(6));
    if (!re) return fail(ExitCode::BadInput, "-k " + s.spec_ + ": invalid regular expression: " + re.error());
    s.regex_ = std::move(*re);
    return s;
  }
  int idx = 0;
  auto [p, ec] = std::from_chars(spec.data(), spec.data() + spec.size(), idx);
  if (ec == std::errc() && p == spec.data() + spec.size() && idx >= 0) s.index_ = idx;
  return s;
}

bool KernelSelector::matches(const Kernel& k) const {
  if (spec_.empty()) return true;
  if (index_) return k.index == *index_;
  if (regex_) return regex_->search(name_in_base(k, base_));
  return k.demangled == spec_ || k.function == spec_ || k.mangled == spec_;
}

bool KernelFilter::take(const Kernel& k) {
  if (done() || !sel_.matches(k)) return false;
  if (nvtx_.active() && !k.nvtx) lacked_nvtx_ = true;
  if (nvtx_.active() && (!k.nvtx || !nvtx_.matches(*k.nvtx))) return false;
  if (skipped_ < skip_) {
    ++skipped_;
    return false;
  }
  ++taken_;
  return true;
}

std::vector<const Kernel*> select(const Report& r, const KernelSelector& sel) {
  std::vector<const Kernel*> out;
  for (const auto& k : r.kernels)
    if (sel.matches(k)) out.push_back(&k);
  return out;
}

}  // namespace keet::model
