// The SASS instruction at a hot spot that has no source line (a cubin built
// without -lineinfo): "SASS +0x110" becomes "SASS +0x110  LDG.E.64 R2, [R2.64]".
//
// Disassembling is an outside effect (nvdisasm or cuobjdump is run), so it sits
// behind Disassembler: the app layer finds the tool and runs it
// (app/disassembler.h), tests pass a stand-in. This layer decides what to
// disassemble (only kernels with SASS rows, each kernel once per run), reads
// the listing (readers/sass_listing.h) and says why there is no instruction
// when there is none.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "analysis/source_costs.h"
#include "model/report.h"
#include "readers/sass_listing.h"
#include "util/error.h"

namespace keet::analysis {

// One kernel's code, as a disassembler is given it.
struct SassCode {
  std::string_view cubin;     // the whole cubin (ELF) the report embeds
  std::string_view function;  // the kernel's mangled name in it
  std::string_view code;      // the kernel's instruction bytes (a part of `cubin`)
  int sm = 0;                 // 86 for sm_86; 0 when unknown
};

class Disassembler {
 public:
  virtual ~Disassembler() = default;
  // A SASS listing of the kernel (nvdisasm's or cuobjdump -sass's text), or
  // an error whose message says, for a person, why there is none: "no
  // nvdisasm or cuobjdump found (install the CUDA toolkit or put it on PATH)".
  virtual Result<std::string> disassemble(const SassCode& code) = 0;
  // Why no kernel can be disassembled at all (no tool found, or it hung),
  // before any cubin is read; nullopt when one may be.
  virtual std::optional<std::string> unavailable() { return std::nullopt; }
};

// The note a kernel gets when its SASS hot spots show no instruction.
std::string sass_note(std::string_view why);

// One run's SASS instructions: each kernel's code is disassembled at most once
// (keyed by its cubin's content and its name, so thousands of launches of one
// kernel cost one process), and at most kMaxKernels kernels are, so a report
// of many kernels without line tables cannot keep keet starting processes
// for minutes.
class SassInstructions {
 public:
  static constexpr size_t kMaxKernels = 64;

  explicit SassInstructions(Disassembler& d) : disassembler_(d) {}

  // Sets `sass` on the table's rows without a source line from the kernel's
  // disassembly. Returns why they have none, in words ("" when they have it,
  // or when the table has no such row).
  std::string annotate(SourceTable& table, const model::Report& report, const model::Kernel& kernel);

  size_t disassembled() const;  // kernels handed to the disassembler so far

 private:
  struct Entry {
    std::string function;  // the kernel's name in the cubin and the listing
    Result<readers::SassListing> listing;
  };
  std::shared_ptr<const Entry> disassemble(const model::Module& module, const model::Kernel& kernel, uint64_t start);

  Disassembler& disassembler_;
  mutable std::mutex mutex_;
  // (hash of the cubin, its size, the kernel's start PC) -> its listing. In
  // the rebased cubin a report stores, the start PC names the function.
  std::map<std::tuple<size_t, size_t, uint64_t>, std::shared_ptr<const Entry>> cache_;
  size_t calls_ = 0;
};

}  // namespace keet::analysis
