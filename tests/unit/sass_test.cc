// SASS instructions at hot spots without a source line: the listing parser
// (readers/sass_listing), where a kernel's code sits in a cubin
// (readers/cubin), the per-run cache and its reasons (analysis/sass), and the
// app layer's disassembler (app/disassembler) against stand-in scripts and,
// when scripts/fetch-nvdisasm can have it, the real nvdisasm and cuobjdump.
#include <filesystem>
#include <random>

#include <fmt/format.h>

#include "analysis/engine.h"
#include "analysis/sass.h"
#include "analysis/source_costs.h"
#include "app/disassembler.h"
#include "io/file.h"
#include "readers/cubin.h"
#include "readers/reader.h"
#include "readers/sass_listing.h"
#include "support/report_writer.h"
#include "support/testing.h"
#include "util/strings.h"

namespace fs = std::filesystem;

namespace keet {
namespace {

using readers::parse_sass_listing;
using readers::SassListing;

// ------------------------------------------------------------ the parser

// nvdisasm 12.4 on a cubin nvcc 13 built (nvdisasm -c k.cubin), cut short.
constexpr std::string_view kNvdisasmElf =
    R"LST(	.headerflags	@"EF_CUDA_SW_1729687_v2 unrecognized:4 unrecognized:6000000"
	.elftype	@"ET_EXEC"


//--------------------- .text._Z4axpyPKdPddi      --------------------------
	.section	.text._Z4axpyPKdPddi,"ax",@progbits
	.sectioninfo	@"SHI_REGISTERS=10"
	.align	128
        .global         _Z4axpyPKdPddi
        .type           _Z4axpyPKdPddi,@function
_Z4axpyPKdPddi:
.text._Z4axpyPKdPddi:
        /*0000*/                   MOV R1, c[0x0][0x28] ;
        /*0050*/               @P0 EXIT ;
        /*00a0*/                   LDG.E.64 R2, [R2.64] ;
.L_x_0:
        /*00f0*/                   BRA `(.L_x_0);
//--------------------- .text._Z3twov      --------------------------
.text._Z3twov:
        /*0000*/                   EXIT ;
)LST";

// cuobjdump -sass: each instruction followed by its encoding, the second
// encoding word on a line of its own.
constexpr std::string_view kCuobjdump = R"LST(
	code for sm_86
		Function : _Z15addConstDouble3iP7double3dS0_
	.headerflags	@"EF_CUDA_64BIT_ADDRESS EF_CUDA_SM86 EF_CUDA_VIRTUAL_SM(EF_CUDA_SM86)"
        /*0000*/                   MOV R1, c[0x0][0x28] ;                         /* 0x00000a0000017a02 */
                                                                                  /* 0x000fc40000000f00 */
        /*0090*/                   LDG.E.64 R4, [R2.64] ;                         /* 0x0000000402027981 */
                                                                                  /* 0x000ea2000c1e1b00 */
)LST";

TEST(SassListing, ReadsNvdisasmCubinListingPerFunction) {
  auto l = parse_sass_listing(kNvdisasmElf);
  ASSERT_EQ(l.functions.size(), 2u);
  EXPECT_EQ(l.functions[0].name, "_Z4axpyPKdPddi");
  ASSERT_EQ(l.functions[0].instructions.size(), 4u);
  ASSERT_NE(l.at("_Z4axpyPKdPddi", 0xa0), nullptr);
  EXPECT_EQ(l.at("_Z4axpyPKdPddi", 0xa0)->text, "LDG.E.64 R2, [R2.64]");
  EXPECT_EQ(l.at("_Z4axpyPKdPddi", 0x50)->text, "@P0 EXIT");
  EXPECT_EQ(l.at("_Z4axpyPKdPddi", 0xf0)->text, "BRA `(.L_x_0)");
  EXPECT_EQ(l.at("_Z4axpyPKdPddi", 0x10), nullptr);  // no instruction there
  EXPECT_EQ(l.at("_Z3twov", 0)->text, "EXIT");       // offsets restart per function
  EXPECT_EQ(l.at("_Z9otherv", 0), nullptr);          // named listings never fall back
  EXPECT_FALSE(l.truncated);
}

TEST(SassListing, ReadsCuobjdumpAndDropsEncodings) {
  auto l = parse_sass_listing(kCuobjdump);
  ASSERT_EQ(l.functions.size(), 1u);
  EXPECT_EQ(l.instruction_count(), 2u);
  EXPECT_EQ(l.at("_Z15addConstDouble3iP7double3dS0_", 0x90)->text, "LDG.E.64 R4, [R2.64]");
}

TEST(SassListing, RawListingIsTheUnnamedFunction) {
  auto l = parse_sass_listing(
      "\t.headerflags @\"EF_CUDA_SM86\"\n  /*0000*/  MOV R1, c[0x0][0x28] ;\n  /*0010*/\tS2R   R10,\tSR_CTAID.X ;\n");
  ASSERT_EQ(l.functions.size(), 1u);
  EXPECT_EQ(l.functions[0].name, "");
  EXPECT_EQ(l.at("_Z4anyv", 0x10)->text, "S2R R10, SR_CTAID.X");  // whitespace made single spaces
}

TEST(SassListing, KeepsTheFirstOfRepeatedOffsetsAndSortsThem) {
  auto l = parse_sass_listing("/*0020*/ B ;\n/*0010*/ A ;\n/*0020*/ C ;\n");
  ASSERT_EQ(l.functions.size(), 1u);
  ASSERT_EQ(l.functions[0].instructions.size(), 2u);
  EXPECT_EQ(l.functions[0].instructions[0].offset, 0x10u);
  EXPECT_EQ(l.at("", 0x20)->text, "B");
}

TEST(SassListing, BoundsAndCleansWhatItKeeps) {
  std::string long_text(1000, 'X');
  std::string bad_name(SassListing::kMaxNameBytes + 1, 'n');
  std::string text = "/*0000*/ " + long_text +
                     " ;\n"                                   // cut to the bound
                     "/*0010*/ MOV\x1b[31m R1\x01, \xff ;\n"  // control and non-ASCII bytes
                     "/*00000000000000010*/ TOO_WIDE ;\n"     // 17 hex digits: no offset
                     "/*zz*/ NOT_AN_OFFSET ;\n"
                     "/* 0x000fe40000000f00 */\n"  // an encoding line
                     "/*0020*/ ;\n"                // nothing after the offset
                     + std::string(SassListing::kMaxLineBytes + 1, ' ') +
                     "/*0030*/ LONG_LINE ;\n"
                     "Function : " +
                     bad_name +
                     "\n/*0040*/ OF_A_REFUSED_FUNCTION ;\n"
                     "Function : _Z1kv\n/*0050*/ KEPT ;\n";
  auto l = parse_sass_listing(text);
  ASSERT_EQ(l.instruction_count(), 3u);
  const auto* first = l.at("", 0);
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first->text.size(), SassListing::kMaxInstructionText);
  EXPECT_EQ(l.at("", 0x10)->text, "MOV?[31m R1?, ?");
  EXPECT_EQ(l.at("", 0x20), nullptr);
  EXPECT_EQ(l.at("", 0x30), nullptr);
  EXPECT_EQ(l.at("", 0x40), nullptr);
  EXPECT_EQ(l.at("_Z1kv", 0x50)->text, "KEPT");
}

TEST(SassListing, GarbageNeverCrashes) {
  std::mt19937 rng(24);
  std::string base(kNvdisasmElf);
  base += kCuobjdump;
  for (int round = 0; round < 2000; ++round) {
    std::string b = round % 2 ? base : std::string(4096, '\0');
    for (int i = 0; i < 32; ++i) b[rng() % b.size()] = static_cast<char>(rng() % 256);
    b = b.substr(0, rng() % (b.size() + 1));
    auto l = parse_sass_listing(b);
    for (const auto& f : l.functions) {
      EXPECT_FALSE(f.instructions.empty());
      for (const auto& ins : f.instructions) {
        EXPECT_LE(ins.text.size(), SassListing::kMaxInstructionText);
        EXPECT_FALSE(ins.text.empty());
        (void)l.at(f.name, ins.offset);
      }
    }
  }
}

// ------------------------------------------------------- code in a cubin

constexpr uint64_t kPc = 0x7f3d64fb1b00;

std::string some_code(size_t n) {
  std::string code;
  for (size_t i = 0; i < n; ++i) code.push_back(static_cast<char>(i * 7 + 1));
  return code;
}

TEST(SassCubin, RebasedCubinGivesTheFunctionsCodeAndSm) {
  std::string code = some_code(0x60);
  std::string bytes = testing::tiny_cubin("_Z4kernv", code, kPc, 86);
  auto c = readers::Cubin::parse(bytes);
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->sm(), 86);
  const auto* sym = c->symbol("_Z4kernv");
  ASSERT_NE(sym, nullptr);
  EXPECT_EQ(sym->value, kPc);
  EXPECT_EQ(readers::Cubin::code(bytes, *sym), code);
  // Bytes shorter than the ones parsed never give a view past their end.
  EXPECT_TRUE(readers::Cubin::code(std::string_view(bytes).substr(0, sym->code_offset + 1), *sym).empty());
}

// Newer ncu moves only the function symbols to load addresses: a kernel
// still opens its own .text section.
TEST(SassCubin, CubinWithOnlyFunctionsRebasedGivesTheSameCode) {
  std::string code = some_code(0x50);
  std::string bytes = testing::tiny_cubin("_Z4kernv", code, kPc, 80, false);
  auto c = readers::Cubin::parse(bytes);
  ASSERT_TRUE(c);
  EXPECT_EQ(readers::Cubin::code(bytes, *c->symbol("_Z4kernv")), code);
  // A function other than its section's kernel, past the section's end: no place known.
  std::string other = testing::tiny_cubin("_Z4kernv", code, kPc, 80, false);
  auto text = other.find(".text._Z4kernv");
  other[text + 6] = 'X';  // the section is now .text.X4kernv
  auto o = readers::Cubin::parse(other);
  ASSERT_TRUE(o);
  EXPECT_TRUE(readers::Cubin::code(other, *o->symbol("_Z4kernv")).empty());
}

TEST(SassCubin, UnrebasedCubinGivesTheSameCode) {
  std::string code = some_code(0x40);
  std::string bytes = testing::tiny_cubin("_Z4kernv", code, 0, 75);
  auto c = readers::Cubin::parse(bytes);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->sm(), 75);
  EXPECT_EQ(readers::Cubin::code(bytes, *c->symbol("_Z4kernv")), code);
}

TEST(SassCubin, DamageNeverGivesCodeOutsideTheFile) {
  std::string bytes = testing::tiny_cubin("_Z4kernv", some_code(0x80), kPc, 86);
  std::mt19937 rng(7);
  for (int round = 0; round < 3000; ++round) {
    std::string b = bytes;
    for (int i = 0; i < 4; ++i) b[rng() % b.size()] = static_cast<char>(rng() % 256);
    auto c = readers::Cubin::parse(b);
    if (!c) continue;
    for (const auto& s : c->symbols()) {
      auto view = readers::Cubin::code(b, s);
      if (view.empty()) continue;
      EXPECT_GE(view.data(), b.data());
      EXPECT_LE(view.data() + view.size(), b.data() + b.size());
    }
  }
}

// `source` built by `nvcc` as an sm_80 cubin (no -lineinfo) in a fresh
// folder `name`: its bytes, or nullopt after recording why not.
std::optional<std::string> nvcc_cubin(const std::string& nvcc, const std::string& name, const std::string& source) {
  std::string dir = testing::temp_path(name);
  fs::create_directories(dir);
  testing::write_file(dir + "/k.cu", source);
  auto built = testing::run_command(testing::shell_quote(nvcc) + " -cubin -arch=sm_80 -o " +
                                    testing::shell_quote(dir + "/k.cubin") + " " + testing::shell_quote(dir + "/k.cu"));
  if (built.rc != 0) {
    ADD_FAILURE() << "nvcc failed: " << built.err;
    return std::nullopt;
  }
  auto bytes = io::read_text_file(dir + "/k.cubin");
  if (!bytes) ADD_FAILURE() << "cannot read " << dir << "/k.cubin";
  return bytes ? std::optional<std::string>(*bytes) : std::nullopt;
}

// A cubin nvcc builds here (CUDA 13 writes the newer ELF layout: the SM in
// e_flags' second byte); readelf says where the .text section is.
TEST(SassCubin, NvccCubinCodeIsWhereReadelfSays) {
  auto nvcc = testing::nvcc_path();
  if (!nvcc) GTEST_SKIP() << "no nvcc (/usr/local/cuda/bin/nvcc or $KEET_TEST_NVCC)";
  std::string dir = testing::temp_path("sass-nvcc");
  auto bytes = nvcc_cubin(*nvcc, "sass-nvcc",
                          "__global__ void axpy(const double* x, double* y, double a, int n) {\n"
                          "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                          "  if (i < n) y[i] = a * x[i] + y[i];\n}\n");
  ASSERT_TRUE(bytes);
  auto c = readers::Cubin::parse(*bytes);
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->sm(), 80);
  EXPECT_FALSE(c->has_line_info());  // built without -lineinfo
  const auto* sym = c->symbol("_Z4axpyPKdPddi");
  ASSERT_NE(sym, nullptr);
  // In a subshell: run_command's redirections would reach only the pipe's last command.
  auto readelf = testing::run_command("(readelf -SW " + testing::shell_quote(dir + "/k.cubin") +
                                      " | grep -F ' .text._Z4axpyPKdPddi ')");
  if (readelf.rc != 0) GTEST_SKIP() << "no readelf: " << readelf.err;
  // "[NN] .text.NAME PROGBITS ADDR OFF SIZE ...": offset and size in hex.
  std::istringstream row(readelf.out.substr(readelf.out.find(']') + 1));
  std::string name, type, addr, off, size;
  row >> name >> type >> addr >> off >> size;
  EXPECT_EQ(sym->code_offset, std::stoull(off, nullptr, 16));
  EXPECT_EQ(readers::Cubin::code(*bytes, *sym).size(), std::stoull(size, nullptr, 16));
}

// ------------------------------------------- the per-run instructions cache

// A stand-in disassembler: records what it is given and answers with a raw
// listing of one instruction per 16 bytes naming its offset and the SM.
struct FakeDisassembler : analysis::Disassembler {
  std::vector<std::string> functions, codes;
  std::vector<int> sms;
  std::optional<Error> fail_with;
  Result<std::string> disassemble(const analysis::SassCode& c) override {
    functions.emplace_back(c.function), codes.emplace_back(c.code), sms.push_back(c.sm);
    if (fail_with) return std::unexpected(*fail_with);
    std::string out = "\t.headerflags @\"raw\"\n";
    for (size_t at = 0; at < c.code.size(); at += 16) out += fmt::format("/*{:04x}*/ FAKE.SM{} R{} ;\n", at, c.sm, at);
    return out;
  }
};

model::Report read_report(const std::string& bytes) {
  auto src = io::memory_source("mem.ncu-rep", bytes);
  auto r = readers::load(*src, {});
  if (!r) throw std::runtime_error(r.error().message());
  return std::move(*r);
}

// The scenario kernel (memory-bound, uncoalesced) at kPc with its excess
// sectors at +0x20 (2/3) and +0x40 (1/3), its cubin holding 0x80 bytes of code.
model::Report scenario(int sm = 86,
                       const std::string& cubin = testing::tiny_cubin("_Z12strided_copyv", some_code(0x80), kPc, 86)) {
  return read_report(testing::scenario_report_with_cubin(cubin, kPc, {{0x20, 4000000}, {0x40, 2000000}}, sm));
}

TEST(SassInstructions, FillsSassRowsFromOneDisassemblyPerKernel) {
  auto r = scenario();
  FakeDisassembler fake;
  analysis::SassInstructions sass(fake);
  for (int pass = 0; pass < 3; ++pass) {  // launches of one kernel: one disassembly
    auto t = analysis::source_table(r, r.kernels[0]);
    ASSERT_EQ(t.level, analysis::SourceLevel::Sass);
    EXPECT_EQ(sass.annotate(t, r, r.kernels[0]), "");
    for (const auto& row : t.lines) EXPECT_EQ(row.sass, fmt::format("FAKE.SM86 R{}", row.offset));
  }
  ASSERT_EQ(fake.functions.size(), 1u);
  EXPECT_EQ(sass.disassembled(), 1u);
  EXPECT_EQ(fake.functions[0], "_Z12strided_copyv");
  EXPECT_EQ(fake.codes[0], some_code(0x80));
  EXPECT_EQ(fake.sms[0], 86);  // the report's SM for the module
}

TEST(SassInstructions, SaysWhyWhenThereIsNoInstruction) {
  auto r = scenario();
  FakeDisassembler fake;
  fake.fail_with = Error{ExitCode::Dependency, std::string(app::kNoDisassembler)};
  analysis::SassInstructions sass(fake);
  auto t = analysis::source_table(r, r.kernels[0]);
  EXPECT_EQ(sass.annotate(t, r, r.kernels[0]), app::kNoDisassembler);
  for (const auto& row : t.lines) EXPECT_EQ(row.sass, "");
  EXPECT_EQ(analysis::sass_note(app::kNoDisassembler),
            "SASS instructions not shown: no nvdisasm or cuobjdump found (install the CUDA toolkit or put it on PATH)");

  auto no_cubin = scenario(86, "");
  auto t2 = analysis::source_table(no_cubin, no_cubin.kernels[0]);
  FakeDisassembler unused;
  analysis::SassInstructions sass2(unused);
  EXPECT_EQ(sass2.annotate(t2, no_cubin, no_cubin.kernels[0]), "the report does not embed the kernel's cubin");
  EXPECT_TRUE(unused.functions.empty());

  // A cubin whose function has another name and starts elsewhere: no code for the kernel.
  auto other = scenario(86, testing::tiny_cubin("_Z5otherv", some_code(0x80), kPc + 0x1000, 86));
  auto t3 = analysis::source_table(other, other.kernels[0]);
  EXPECT_NE(sass2.annotate(t3, other, other.kernels[0]).find("no code for the kernel"), std::string::npos);
  EXPECT_TRUE(unused.functions.empty());
}

TEST(SassInstructions, SourceRowsNeedNoDisassembly) {
  analysis::SourceTable t;
  t.lines.push_back({});
  t.lines.back().file = "k.cu", t.lines.back().line = 3;
  model::Report r;
  model::Kernel k;
  FakeDisassembler fake;
  analysis::SassInstructions sass(fake);
  EXPECT_EQ(sass.annotate(t, r, k), "");
  EXPECT_TRUE(fake.functions.empty());
}

TEST(SassInstructions, DisassemblesAtMostSoManyKernelsPerRun) {
  FakeDisassembler fake;
  analysis::SassInstructions sass(fake);
  std::string last_why;
  for (size_t i = 0; i <= analysis::SassInstructions::kMaxKernels; ++i) {
    uint64_t pc = kPc + 0x10000 * i;  // distinct kernels: distinct cubins
    auto r = read_report(testing::scenario_report_with_cubin(
        testing::tiny_cubin("_Z12strided_copyv", some_code(0x80), pc, 86), pc, {{0x20, 1}}, 86));
    auto t = analysis::source_table(r, r.kernels[0]);
    last_why = sass.annotate(t, r, r.kernels[0]);
  }
  EXPECT_EQ(fake.functions.size(), analysis::SassInstructions::kMaxKernels);
  EXPECT_NE(last_why.find(fmt::format("at most {} kernels", analysis::SassInstructions::kMaxKernels)),
            std::string::npos)
      << last_why;
}

// The engine: a finding's SASS hot spots carry the instruction; without one
// the kernel gets the reason once, as a note.
TEST(SassInstructions, FindingsCarryTheInstructionOrOneNote) {
  auto r = scenario();
  FakeDisassembler fake;
  analysis::SassInstructions sass(fake);
  analysis::AnalyzeOptions opt;
  opt.sass = &sass;
  auto d = analysis::analyze_kernel(r, r.kernels[0], opt);
  const analysis::Finding* uncoalesced = nullptr;
  for (const auto& f : d.findings)
    if (f.id == "memory.uncoalesced_global") uncoalesced = &f;
  ASSERT_NE(uncoalesced, nullptr);
  ASSERT_EQ(uncoalesced->source.size(), 2u);
  EXPECT_EQ(uncoalesced->source[0].offset, 0x20u);
  EXPECT_EQ(uncoalesced->source[0].text, "SASS +0x20");
  EXPECT_EQ(uncoalesced->source[0].sass, "FAKE.SM86 R32");
  EXPECT_EQ(uncoalesced->source[1].sass, "FAKE.SM86 R64");
  for (const auto& n : d.notes) EXPECT_EQ(n.find("SASS instructions"), std::string::npos) << n;

  fake.fail_with = Error{ExitCode::Dependency, "nvdisasm failed (exit 1): boom"};
  analysis::SassInstructions failing(fake);
  opt.sass = &failing;
  auto bare = analysis::analyze_kernel(r, r.kernels[0], opt);
  int notes = 0;
  for (const auto& n : bare.notes) notes += n == "SASS instructions not shown: nvdisasm failed (exit 1): boom";
  EXPECT_EQ(notes, 1);

  opt.sass = nullptr;  // no disassembler given: offsets only, and no note
  auto plain = analysis::analyze_kernel(r, r.kernels[0], opt);
  for (const auto& n : plain.notes) EXPECT_EQ(n.find("SASS instructions"), std::string::npos) << n;
}

// -------------------------------------------- the app layer's disassembler

struct ToolDir {
  std::string dir = testing::temp_path("sass-tools-" + std::to_string(::getpid()) + "-" +
                                       ::testing::UnitTest::GetInstance()->current_test_info()->name());
  ToolDir() {
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~ToolDir() { fs::remove_all(dir); }
  std::string add(const std::string& sub, const std::string& name, const std::string& script) {
    fs::create_directories(dir + "/" + sub);
    testing::write_script(dir + "/" + sub + "/" + name, script);
    return dir + "/" + sub + "/" + name;
  }
};

// nvdisasm's way of being called (-b SMxy FILE), answering one instruction
// per 16 bytes of the file that names the SM and the offset.
constexpr std::string_view kStandInNvdisasm = R"LST(#!/bin/sh
[ "$1" = "-b" ] || { echo "nvdisasm fatal : expected -b, got $1"; exit 2; }
n=$(wc -c < "$3") || exit 1
printf '\t.headerflags\t@"EF_CUDA_%s"\n' "$2"
i=0
while [ "$i" -lt "$n" ]; do printf '        /*%04x*/                   STAND_IN.%s R%d ;\n' "$i" "$2" "$i"; i=$((i + 16)); done
)LST";

// cuobjdump's (-sass -fun NAME FILE).
constexpr std::string_view kStandInCuobjdump = R"LST(#!/bin/sh
[ "$1" = "-sass" ] && [ "$2" = "-fun" ] || exit 2
printf '\n\tcode for sm_xx\n\t\tFunction : %s\n' "$3"
printf '        /*0020*/                   CUOBJDUMP.%s ;     /* 0x0000000402027981 */\n' "$3"
)LST";

app::GetEnv env_of(std::map<std::string, std::string> vars) {
  return [vars](const std::string& name) {
    auto it = vars.find(name);
    return it == vars.end() ? std::string() : it->second;
  };
}

analysis::SassCode code_of(const std::string& cubin, const std::string& code, int sm) {
  return {cubin, "_Z4kernv", code, sm};
}

TEST(SassTool, FindsNvdisasmFirstThenCuobjdumpInEachPlace) {
  ToolDir t;
  t.add("path", "cuobjdump", "#!/bin/sh\n");
  t.add("home/bin", "nvdisasm", "#!/bin/sh\n");
  t.add("fixed", "nvdisasm", "#!/bin/sh\n");
  auto found = app::find_disassembler(
      env_of({{"PATH", t.dir + "/none:" + t.dir + "/path"}, {"CUDA_HOME", t.dir + "/home"}}), {t.dir + "/fixed"});
  ASSERT_TRUE(found);
  EXPECT_EQ(found->path, t.dir + "/home/bin/nvdisasm");  // nvdisasm anywhere beats cuobjdump on PATH
  EXPECT_TRUE(found->nvdisasm);
  found = app::find_disassembler(env_of({{"CUDA_PATH", t.dir + "/nowhere"}}), {t.dir + "/fixed"});
  ASSERT_TRUE(found);
  EXPECT_EQ(found->path, t.dir + "/fixed/nvdisasm");
  found = app::find_disassembler(env_of({{"PATH", t.dir + "/path"}}), {});
  ASSERT_TRUE(found);
  EXPECT_FALSE(found->nvdisasm);
  EXPECT_FALSE(app::find_disassembler(env_of({}), {t.dir + "/none"}));
  fs::create_directories(t.dir + "/plain");
  testing::write_file(t.dir + "/plain/nvdisasm", "");  // not executable: not a tool
  EXPECT_FALSE(app::find_disassembler(env_of({{"PATH", t.dir + "/plain"}}), {}));
}

TEST(SassTool, RunsAStandInNvdisasmOnTheKernelsCode) {
  ToolDir t;
  t.add("bin", "nvdisasm", std::string(kStandInNvdisasm));
  app::ToolDisassembler tool(env_of({{"PATH", t.dir + "/bin"}, {"TMPDIR", t.dir}}), app::system_runner(),
                             std::chrono::seconds(20), {});
  auto out = tool.disassemble(code_of("the whole cubin", some_code(0x40), 75));
  ASSERT_TRUE(out) << out.error().message;
  auto l = parse_sass_listing(*out);
  EXPECT_EQ(l.instruction_count(), 4u);
  EXPECT_EQ(l.at("_Z4kernv", 0x30)->text, "STAND_IN.SM75 R48");
  // Its input file is gone afterwards.
  for (const auto& e : fs::directory_iterator(t.dir))
    EXPECT_FALSE(e.path().filename().string().starts_with("keet-sass-"));
  // nvdisasm reads raw code only for a known SM.
  auto no_sm = tool.disassemble(code_of("cubin", some_code(0x40), 0));
  ASSERT_FALSE(no_sm);
  EXPECT_NE(no_sm.error().message.find("SM"), std::string::npos);
}

TEST(SassTool, RunsAStandInCuobjdumpOnTheCubin) {
  ToolDir t;
  t.add("bin", "cuobjdump", std::string(kStandInCuobjdump));
  app::ToolDisassembler tool(env_of({{"PATH", t.dir + "/bin"}, {"TMPDIR", t.dir}}), app::system_runner(),
                             std::chrono::seconds(20), {});
  auto out = tool.disassemble(code_of("cubin bytes", some_code(0x40), 0));
  ASSERT_TRUE(out) << out.error().message;
  EXPECT_EQ(parse_sass_listing(*out).at("_Z4kernv", 0x20)->text, "CUOBJDUMP._Z4kernv");
}

TEST(SassTool, FailuresAndTimeoutsAreReasons) {
  ToolDir t;
  t.add("failing", "nvdisasm", "#!/bin/sh\necho 'nvdisasm error   : Unrecognized operation' >&2\nexit 1\n");
  t.add("slow", "nvdisasm", "#!/bin/sh\nsleep 30\n");
  auto code = code_of("c", some_code(0x20), 86);
  app::ToolDisassembler failing(env_of({{"PATH", t.dir + "/failing"}}), app::system_runner(), std::chrono::seconds(20),
                                {});
  auto f = failing.disassemble(code);
  ASSERT_FALSE(f);
  EXPECT_EQ(f.error().message, "nvdisasm failed (exit 1): nvdisasm error : Unrecognized operation");
  app::ToolDisassembler slow(env_of({{"PATH", t.dir + "/slow"}}), app::system_runner(), std::chrono::seconds(1), {});
  auto started = std::chrono::steady_clock::now();
  auto s = slow.disassemble(code);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("longer than 1 s"), std::string::npos) << s.error().message;
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(10));
  // A tool that timed out is not run again: the next kernel gets the same answer at once.
  started = std::chrono::steady_clock::now();
  auto again = slow.disassemble(code);
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().message, s.error().message);
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::milliseconds(500));
  app::ToolDisassembler none(env_of({}), app::system_runner(), std::chrono::seconds(1), {});
  auto n = none.disassemble(code);
  ASSERT_FALSE(n);
  EXPECT_EQ(n.error().message, app::kNoDisassembler);
}

// ------------------------------------------------ the real nvdisasm

#define KEET_REQUIRE_NVDISASM(dir)                   \
  std::string why_##dir;                             \
  auto dir = testing::real_nvdisasm_dir(&why_##dir); \
  if (!dir) GTEST_SKIP() << why_##dir;

// One instruction as cuobjdump prints it at `offset` of `function` in the
// cubin at `path`, read with grep and sed: a second opinion that shares
// nothing with keet's parser or with nvdisasm's raw mode.
std::string cuobjdump_at(const std::string& bin, const std::string& path, const std::string& function,
                         uint64_t offset) {
  auto r =
      testing::run_command(fmt::format("({}/cuobjdump -sass -fun {} {} | grep -F '/*{:04x}*/' | head -1 | "
                                       "sed -e 's|^ */\\*[0-9a-f]*\\*/ *||' -e 's| *;.*$||' -e 's|  *| |g')",
                                       bin, function, testing::shell_quote(path), offset));
  return std::string(keet::trim(r.out));
}

// Fixture reports whose cubins have no line table, one of each rebasing (an
// sm_75 profile whose section symbols were moved too, an sm_80 one whose were
// not): the costliest SASS rows get nvdisasm's instruction, the same one
// cuobjdump shows there.
TEST(SassReal, FixtureHotSpotsMatchCuobjdump) {
  KEET_REQUIRE_SHARED();
  KEET_REQUIRE_NVDISASM(bin);
  for (std::string name :
       {"LakshyaSingh354__CudaCode/stage1/reps/vec_add.ncu-rep", "bwd29__self-join-MiSTIC/ilpProf.ncu-rep"}) {
    auto r = readers::load_file(*testing::shared_dir() + "/fixtures/public/" + name);
    ASSERT_TRUE(r) << r.error().message;
    const auto& k = r->kernels[0];
    app::ToolDisassembler tool(env_of({{"PATH", *bin}}), app::system_runner());
    analysis::SassInstructions sass(tool);
    auto t = analysis::source_table(*r, k);
    ASSERT_EQ(t.level, analysis::SourceLevel::Sass) << name;
    ASSERT_EQ(sass.annotate(t, *r, k), "") << name;
    std::string cubin = testing::temp_path("sass-fixture.cubin");
    testing::write_file(cubin, std::string(r->module_for(k)->binary.view()));
    for (size_t i = 0; i < t.lines.size() && i < 6; ++i) {  // cuobjdump costs 0.3 s a row
      const auto& row = t.lines[i];
      ASSERT_FALSE(row.sass.empty()) << name << std::hex << " +" << row.offset;
      EXPECT_EQ(row.sass, cuobjdump_at(*bin, cubin, k.mangled, row.offset)) << name << std::hex << " +" << row.offset;
    }
  }
}

// cuobjdump alone (no nvdisasm beside it): keet runs it on the whole cubin
// and reads the kernel's instructions from its listing, as nvdisasm gives them.
TEST(SassReal, CuobjdumpAloneGivesTheSameInstructions) {
  KEET_REQUIRE_SHARED();
  KEET_REQUIRE_NVDISASM(bin);
  ToolDir only;
  fs::create_directories(only.dir + "/bin");
  fs::create_symlink(*bin + "/cuobjdump", only.dir + "/bin/cuobjdump");
  auto r = readers::load_file(*testing::shared_dir() + "/fixtures/public/bwd29__self-join-MiSTIC/ilpProf.ncu-rep");
  ASSERT_TRUE(r) << r.error().message;
  const auto& k = r->kernels[0];
  app::ToolDisassembler nvdisasm(env_of({{"PATH", *bin}}), app::system_runner());
  app::ToolDisassembler cuobjdump(env_of({{"PATH", only.dir + "/bin"}}), app::system_runner());
  analysis::SassInstructions by_nvdisasm(nvdisasm), by_cuobjdump(cuobjdump);
  auto a = analysis::source_table(*r, k), b = a;
  ASSERT_EQ(by_nvdisasm.annotate(a, *r, k), "");
  ASSERT_EQ(by_cuobjdump.annotate(b, *r, k), "");
  ASSERT_EQ(a.lines.size(), b.lines.size());
  for (size_t i = 0; i < a.lines.size(); ++i) {
    EXPECT_FALSE(b.lines[i].sass.empty());
    EXPECT_EQ(a.lines[i].sass, b.lines[i].sass) << std::hex << a.lines[i].offset;
  }
}

// A cubin nvcc 13 builds (sm_80, no -lineinfo), embedded in a report: nvdisasm
// 12.4 reads its code, and agrees with cuobjdump.
TEST(SassReal, OwnCubinHotSpotsMatchCuobjdump) {
  KEET_REQUIRE_NVDISASM(bin);
  auto nvcc = testing::nvcc_path();
  if (!nvcc) GTEST_SKIP() << "no nvcc";
  std::string dir = testing::temp_path("sass-real");
  auto bytes = nvcc_cubin(*nvcc, "sass-real",
                          "__global__ void strided_copy(const float* in, float* out, int stride, int n) {\n"
                          "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                          "  if (i < n) out[i] = in[i * stride] * 2.0f;\n}\n");
  ASSERT_TRUE(bytes);
  const std::string mangled = "_Z12strided_copyPKfPfii";
  // nvcc's own cubin is not rebased (its symbols' values are 0): the kernel
  // is found by its name.
  auto report_bytes = testing::scenario_report_with_cubin(*bytes, kPc, {{0x40, 3}, {0x80, 1}}, 80);
  auto r = read_report(report_bytes);
  r.kernels[0].mangled = mangled;
  app::ToolDisassembler tool(env_of({{"PATH", *bin}}), app::system_runner());
  analysis::SassInstructions sass(tool);
  auto t = analysis::source_table(r, r.kernels[0]);
  ASSERT_EQ(sass.annotate(t, r, r.kernels[0]), "");
  ASSERT_EQ(t.lines.size(), 2u);
  for (const auto& row : t.lines) {
    ASSERT_FALSE(row.sass.empty());
    EXPECT_EQ(row.sass, cuobjdump_at(*bin, dir + "/k.cubin", mangled, row.offset)) << std::hex << row.offset;
  }
}

}  // namespace
}  // namespace keet
