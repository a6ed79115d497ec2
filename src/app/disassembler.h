// The SASS disassembler behind analysis::Disassembler: finding nvdisasm (or
// cuobjdump) and running it through ProcessRunner, so that hot spots without
// a source line can show their instruction (analysis/sass.h decides what to
// disassemble and reads the listing).
#pragma once
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "analysis/sass.h"
#include "app/app.h"
#include "app/profile.h"

namespace keet::app {

struct DisassemblerTool {
  std::string path;
  bool nvdisasm = true;  // false: cuobjdump
};

// The CUDA toolkit's folders a disassembler is looked for in after PATH,
// $CUDA_HOME/bin and $CUDA_PATH/bin.
const std::vector<std::string>& default_cuda_bins();

// nvdisasm, else cuobjdump: the first found on PATH, in $CUDA_HOME/bin,
// $CUDA_PATH/bin, then in each of `cuda_bins`.
std::optional<DisassemblerTool> find_disassembler(const GetEnv& getenv,
                                                  const std::vector<std::string>& cuda_bins = default_cuda_bins());

// What the error says when neither is found.
inline constexpr std::string_view kNoDisassembler =
    "no nvdisasm or cuobjdump found (install the CUDA toolkit or put it on PATH)";

// Runs the tool found (looked for on first use) on one kernel: nvdisasm -b
// SM<sm> on the kernel's instruction bytes (the rebased cubins ncu stores are
// refused by nvdisasm, and their raw code is not), or cuobjdump -sass -fun
// <kernel> on the cubin; each written to a private temporary file. A run
// longer than `timeout`, a failed run and a missing tool are errors, which
// the analysis shows as "instruction not shown: <why>"; after a run that could
// not start or timed out, the tool is not run again by this object. The
// output kept is bounded (kMaxListingBytes).
class ToolDisassembler final : public analysis::Disassembler {
 public:
  static constexpr size_t kMaxListingBytes = 64u << 20;

  ToolDisassembler(GetEnv getenv, ProcessRunner& runner, std::chrono::seconds timeout = std::chrono::seconds(30),
                   std::vector<std::string> cuda_bins = default_cuda_bins());
  Result<std::string> disassemble(const analysis::SassCode& code) override;
  std::optional<std::string> unavailable() override;

 private:
  const std::optional<DisassemblerTool>& tool();

  GetEnv getenv_;
  ProcessRunner& runner_;
  std::chrono::seconds timeout_;
  std::vector<std::string> cuda_bins_;
  std::optional<std::optional<DisassemblerTool>> tool_;  // outer: looked for yet
  // Set when a run could not start or ran past the timeout: the tool is not
  // run again (64 kernels each waiting the full timeout would take half an hour).
  std::optional<Error> stuck_;
};

// One command run's disassembler and the instructions it gave (each kernel
// disassembled once per run): what analyze and source pass to the analysis.
class RunSass {
 public:
  explicit RunSass(const Context& ctx, ProcessRunner& runner = system_runner());
  analysis::SassInstructions* instructions() { return &instructions_; }

 private:
  ToolDisassembler tool_;
  analysis::SassInstructions instructions_;
};

}  // namespace keet::app
