#include "analysis/sass.h"

#include <algorithm>
#include <functional>

#include <fmt/format.h>

#include "readers/cubin.h"

namespace keet::analysis {
namespace {

// The kernel's function in the cubin: by its mangled name, else the function
// that starts at the kernel's start PC (ncu's cubins are rebased to load
// addresses).
const readers::CubinSymbol* kernel_symbol(const readers::Cubin& cubin, const model::Kernel& k, uint64_t start) {
  if (!k.mangled.empty())
    if (const auto* s = cubin.symbol(k.mangled)) return s;
  for (const auto& s : cubin.symbols())
    if (s.value == start && s.code_size > 0) return &s;
  return nullptr;
}

// The report's SM for the module (major << 16 | minor), else the cubin's own.
int sm_of(const model::Module& m, const readers::Cubin& cubin) {
  if (m.sm_revision != 0) return static_cast<int>((m.sm_revision >> 16) * 10 + (m.sm_revision & 0xffff));
  return cubin.sm();
}

bool has_sass_rows(const SourceTable& t) {
  return std::ranges::any_of(t.lines, [](const SourceLineCost& r) { return r.is_sass(); });
}

}  // namespace

std::string sass_note(std::string_view why) { return fmt::format("SASS instructions not shown: {}", why); }

size_t SassInstructions::disassembled() const {
  std::lock_guard lock(mutex_);
  return calls_;
}

std::shared_ptr<const SassInstructions::Entry> SassInstructions::disassemble(const model::Module& module,
                                                                             const model::Kernel& kernel,
                                                                             uint64_t start) {
  // No tool: nothing to read the cubin for (hashing and parsing it costs more
  // than analysing the kernel).
  if (auto why = disassembler_.unavailable())
    return std::make_shared<Entry>(Entry{"", fail(ExitCode::Dependency, *why)});
  std::string_view bytes = module.binary.view();
  auto key = std::make_tuple(std::hash<std::string_view>{}(bytes), bytes.size(), start);
  if (auto it = cache_.find(key); it != cache_.end()) return it->second;
  auto entry = std::make_shared<Entry>(Entry{"", readers::SassListing{}});
  auto cubin = readers::Cubin::parse(bytes);
  const readers::CubinSymbol* sym = cubin ? kernel_symbol(*cubin, kernel, start) : nullptr;
  std::string_view code = sym ? readers::Cubin::code(bytes, *sym) : std::string_view();
  if (!cubin) {
    entry->listing = std::unexpected(cubin.error());
  } else if (code.empty()) {
    entry->listing = fail(ExitCode::BadInput, "the report's cubin holds no code for the kernel");
  } else if (calls_ >= kMaxKernels) {
    // Not cached: the answer is about this run, not about the kernel.
    return std::make_shared<Entry>(Entry{
        "", fail(ExitCode::Dependency, fmt::format("keet disassembles at most {} kernels per run", kMaxKernels))});
  } else {
    ++calls_;
    entry->function = sym->name;
    auto text = disassembler_.disassemble({bytes, sym->name, code, sm_of(module, *cubin)});
    if (text)
      entry->listing = readers::parse_sass_listing(*text);
    else
      entry->listing = std::unexpected(text.error());
  }
  cache_.emplace(key, entry);
  return entry;
}

std::string SassInstructions::annotate(SourceTable& table, const model::Report& report, const model::Kernel& kernel) {
  if (!has_sass_rows(table)) return "";
  const model::Module* module = report.module_for(kernel);
  if (!module || module->binary.empty()) return "the report does not embed the kernel's cubin";
  std::shared_ptr<const Entry> entry;
  {
    std::lock_guard lock(mutex_);
    entry = disassemble(*module, kernel, table.kernel_start);
  }
  if (!entry->listing) return entry->listing.error().message;
  bool any = false;
  for (auto& row : table.lines) {
    if (!row.is_sass()) continue;
    if (const auto* ins = entry->listing->at(entry->function, row.offset)) row.sass = ins->text, any = true;
  }
  if (any) return "";
  return entry->listing->instruction_count() == 0 ? "the disassembler's output holds no instruction"
                                                  : "the disassembly has no instruction at the hot spots' offsets";
}

}  // namespace keet::analysis
