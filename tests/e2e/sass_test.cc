// End-to-end: hot spots without a source line show their SASS instruction in
// every format (text, markdown, HTML, JSON, keet source), from a stand-in
// nvdisasm script on PATH and, when scripts/fetch-nvdisasm can have it, the
// real one on a fixture report; with no disassembler, each kernel says so
// once.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <regex>

#include "support/report_writer.h"
#include "support/testing.h"

namespace fs = std::filesystem;

namespace keet {
namespace {

using namespace keet::testing;

constexpr uint64_t kPc = 0x7f3d64fb1b00;
constexpr std::string_view kNotFound =
    "SASS instructions not shown: no nvdisasm or cuobjdump found (install the CUDA toolkit or put it on PATH)";

std::string some_code(size_t n) {
  std::string code;
  for (size_t i = 0; i < n; ++i) code.push_back(static_cast<char>(i * 5 + 3));
  return code;
}

// The scenario kernel (uncoalesced loads) with its excess sectors at +0x20
// (2/3) and +0x40 (1/3) of an sm_86 cubin without a line table.
std::string sass_report(const std::string& name) {
  std::string path = temp_path(name);
  write_file(path, scenario_report_with_cubin(tiny_cubin("_Z12strided_copyv", some_code(0x80), kPc, 86), kPc,
                                              {{0x20, 4000000}, {0x40, 2000000}}, 86));
  return path;
}

// keet with PATH = `path` (plus the system's folders, for the stand-in's
// shell tools) and no CUDA_HOME or CUDA_PATH.
ProcessResult keet_with_path(const std::string& path, const std::string& args) {
  return run_command("env -u CUDA_HOME -u CUDA_PATH PATH=" + shell_quote(path) + " " + shell_quote(keet_binary()) +
                     " " + args);
}

bool toolkit_has_a_disassembler() {
  return fs::exists("/usr/local/cuda/bin/nvdisasm") || fs::exists("/usr/local/cuda/bin/cuobjdump");
}

size_t occurrences(const std::string& text, std::string_view what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

ProcessResult validate(const std::string& schema, const std::string& text) {
  std::string file = temp_path("sass-" + schema + ".json");
  write_file(file, text);
  return run_command(shell_quote(source_dir() + "/scripts/validate-json") + " " +
                     shell_quote(source_dir() + "/schemas/" + schema + ".schema.json") + " " + shell_quote(file));
}

TEST(Sass, StandInInstructionsInEveryFormat) {
  std::string report = shell_quote(sass_report("sass-stand-in.ncu-rep"));
  std::string path = stand_in_nvdisasm("sass-stand-in") + ":/usr/bin:/bin";

  auto text = keet_with_path(path, "analyze " + report);
  ASSERT_EQ(text.rc, 0) << text.err;
  EXPECT_NE(text.out.find("Where: SASS +0x20 (67%)  `STAND_IN.SM86 R32`"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("Where: SASS +0x40 (33%)  `STAND_IN.SM86 R64`"), std::string::npos) << text.out;
  EXPECT_EQ(text.out.find("SASS instructions not shown"), std::string::npos) << text.out;
  EXPECT_EQ(text.err, "");  // nothing of the disassembler's reaches the terminal

  auto md = keet_with_path(path, "analyze --format markdown " + report);
  ASSERT_EQ(md.rc, 0) << md.err;
  EXPECT_NE(md.out.find("- Where: `SASS +0x20` (67%) `STAND_IN.SM86 R32`"), std::string::npos) << md.out;

  auto html = keet_with_path(path, "analyze --format html " + report);
  ASSERT_EQ(html.rc, 0) << html.err;
  EXPECT_NE(html.out.find("<td><code>SASS +0x20</code></td><td class='num'>66.7%</td><td><pre>STAND_IN.SM86 R32</pre>"),
            std::string::npos)
      << html.out;
  EXPECT_NE(html.out.find("<td><code>SASS +0x40</code>"), std::string::npos);  // its own row, not merged
  EXPECT_EQ(html.out.find("<code>:0</code>"), std::string::npos);

  auto js = keet_with_path(path, "analyze --format json " + report);
  ASSERT_EQ(js.rc, 0) << js.err;
  auto v = validate("analysis", js.out);
  EXPECT_EQ(v.rc, 0) << v.out << v.err;
  auto doc = nlohmann::json::parse(js.out);
  bool seen = false;
  for (const auto& f : doc["kernels"][0]["findings"])
    for (const auto& s : f["source"])
      if (s["line"] == 0) {
        seen = true;
        EXPECT_EQ(s["sass"], "STAND_IN.SM86 R" + std::to_string(s["offset"].get<int>()));
        EXPECT_EQ(s["text"], "SASS +0x" + (std::stringstream() << std::hex << s["offset"].get<int>()).str());
      }
  EXPECT_TRUE(seen) << js.out;

  auto src = keet_with_path(path, "source " + report);
  ASSERT_EQ(src.rc, 0) << src.err;
  EXPECT_TRUE(std::regex_search(src.out, std::regex(R"(\+0x0020 .*STAND_IN\.SM86 R32)"))) << src.out;
  auto srcj = keet_with_path(path, "source --format json " + report);
  ASSERT_EQ(srcj.rc, 0) << srcj.err;
  v = validate("source", srcj.out);
  EXPECT_EQ(v.rc, 0) << v.out << v.err;
  auto lines = nlohmann::json::parse(srcj.out)["kernels"][0]["lines"];
  ASSERT_FALSE(lines.empty());
  for (const auto& l : lines) EXPECT_EQ(l["sass"], "STAND_IN.SM86 R" + std::to_string(l["offset"].get<int>()));
}

TEST(Sass, NoDisassemblerIsSaidOncePerKernel) {
  if (toolkit_has_a_disassembler()) GTEST_SKIP() << "/usr/local/cuda/bin has nvdisasm or cuobjdump: keet would find it";
  std::string report = shell_quote(sass_report("sass-none.ncu-rep"));
  std::string empty = temp_path("sass-empty-bin");
  fs::create_directories(empty);

  auto text = keet_with_path(empty, "analyze " + report);
  ASSERT_EQ(text.rc, 0) << text.err;
  EXPECT_EQ(occurrences(text.out, kNotFound), 1u) << text.out;
  EXPECT_GE(occurrences(text.out, "Where: SASS +0x"), 2u) << text.out;
  EXPECT_EQ(occurrences(text.out, "Where: SASS +0x20 (67%)\n"), 1u) << text.out;  // the offset alone

  auto md = keet_with_path(empty, "analyze --format markdown " + report);
  EXPECT_EQ(occurrences(md.out, kNotFound), 1u) << md.out;
  auto html = keet_with_path(empty, "analyze --format html " + report);
  EXPECT_EQ(occurrences(html.out, kNotFound), 1u) << html.out;
  EXPECT_NE(html.out.find("<td><code>SASS +0x20</code>"), std::string::npos);
  auto js = keet_with_path(empty, "analyze --format json " + report);
  auto notes = nlohmann::json::parse(js.out)["kernels"][0]["notes"];
  EXPECT_EQ(std::count(notes.begin(), notes.end(), std::string(kNotFound)), 1) << notes;
  auto src = keet_with_path(empty, "source " + report);
  EXPECT_EQ(occurrences(src.out, kNotFound), 1u) << src.out;
}

// The real nvdisasm (CUDA 12.4) on a fixture whose cubin has no line table
// (an sm_75 profile): the finding's hot spot shows the instruction, the same
// one `keet source` lists at that offset.
TEST(Sass, RealNvdisasmOnAFixture) {
  KEET_REQUIRE_SHARED();
  std::string why;
  auto bin = real_nvdisasm_dir(&why);
  if (!bin) GTEST_SKIP() << why;
  std::string report =
      shell_quote(*shared_dir() + "/fixtures/public/LakshyaSingh354__CudaCode/stage1/reps/vec_add.ncu-rep");
  std::string path = *bin + ":/usr/bin:/bin";
  auto text = keet_with_path(path, "analyze " + report);
  ASSERT_EQ(text.rc, 0) << text.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(text.out, m, std::regex(R"(Where: SASS \+0x([0-9a-f]+) \(\d+%\)  `([^`]+)`)")))
      << text.out;
  EXPECT_EQ(text.out.find("SASS instructions not shown"), std::string::npos);
  auto src = keet_with_path(path, "source --format json --top 0 " + report);
  ASSERT_EQ(src.rc, 0) << src.err;
  uint64_t offset = std::stoull(m[1].str(), nullptr, 16);
  bool found = false;
  auto lines = nlohmann::json::parse(src.out)["kernels"][0]["lines"];
  for (const auto& l : lines) {
    EXPECT_FALSE(l["sass"].get<std::string>().empty()) << l;
    if (l["offset"] != offset) continue;
    found = true;
    EXPECT_EQ(l["sass"], m[2].str());
  }
  EXPECT_TRUE(found) << std::hex << offset;
}

}  // namespace
}  // namespace keet
