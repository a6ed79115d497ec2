// End-to-end: `cmake --install build --prefix P` gives a working P/bin/keet
// that finds its data and its HTTP plugin from any directory, a man page that
// man(1) renders, and bash/zsh completions that complete the commands.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>

#include "support/fake_llm_server.h"
#include "support/report_writer.h"
#include "support/testing.h"

namespace keet {
namespace {

using namespace keet::testing;
namespace fs = std::filesystem;

std::string saxpy_report() {
  ReportWriter w;
  ReportWriter::Block b;
  auto k = w.kernel("saxpy", 4096, 256,
                    {{"gpu__time_duration.sum", 40000},
                     {"device__attribute_compute_capability_major", 8},
                     {"device__attribute_compute_capability_minor", 6},
                     {"launch__sm_count", 26},
                     {"gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed", 88},
                     {"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", 88},
                     {"sm__throughput.avg.pct_of_peak_sustained_elapsed", 20}});
  w.flush_strings(b);
  b.results.push_back(k.SerializeAsString());
  w.add(b);
  std::string path = temp_path("install-saxpy.ncu-rep");
  w.write(path);
  return path;
}

// One install for the whole suite: it is the slow step.
class Installed : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    prefix_ = new std::string(temp_path("install-prefix"));
    fs::remove_all(*prefix_);
    install_ = new ProcessResult(
        run_command("cmake --install " + shell_quote(build_dir()) + " --prefix " + shell_quote(*prefix_)));
  }
  static void TearDownTestSuite() {
    fs::remove_all(*prefix_);
    delete prefix_;
    delete install_;
  }
  void SetUp() override { ASSERT_EQ(install_->rc, 0) << install_->out << install_->err; }
  static std::string at(const std::string& rel) { return *prefix_ + "/" + rel; }
  // The installed keet, run from / so nothing is found relative to the build.
  static ProcessResult keet(const std::string& env, const std::string& args) {
    return run_command("cd / && " + env + " " + shell_quote(at("bin/keet")) + " " + args);
  }
  static std::string* prefix_;
  static ProcessResult* install_;
};
std::string* Installed::prefix_ = nullptr;
ProcessResult* Installed::install_ = nullptr;

TEST_F(Installed, LaysOutTheFiles) {
  for (std::string rel : {"bin/keet", "lib/keet/libkeet_http.so", "share/man/man1/keet.1",
                          "share/bash-completion/completions/keet", "share/zsh/site-functions/_keet"})
    EXPECT_TRUE(fs::is_regular_file(at(rel))) << rel << " was not installed";
}

// `import keet` from the installed tree (P/lib/python3.X/dist-packages), from
// any directory, with no keet executable on PATH: the README's one-liner.
TEST_F(Installed, ThePythonModuleImportsAndAnalyses) {
  fs::path site;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(at("lib"), ec))
    if (e.path().filename().string().starts_with("python3")) site = e.path() / "dist-packages";
  if (site.empty()) GTEST_SKIP() << "the Python module was not built (pybind11-dev, python3-dev)";
  ASSERT_TRUE(fs::is_regular_file(site / "keet" / "__init__.py"));
  auto r =
      run_command("cd / && env PATH=/usr/bin:/bin PYTHONPATH=" + shell_quote(site.string()) + " /usr/bin/python3 -c " +
                  shell_quote("import keet; r = keet.open('" + saxpy_report() +
                              "'); print(r.analyze().kernels[0].bottleneck.class_)"));
  ASSERT_EQ(r.rc, 0) << r.out << r.err;
  EXPECT_EQ(r.out, "memory\n");
}

TEST_F(Installed, AnalyzesAndExplainsWithItsCompiledInData) {
  auto a = keet("", "analyze --format json " + shell_quote(saxpy_report()));
  ASSERT_EQ(a.rc, 0) << a.err;
  auto j = nlohmann::json::parse(a.out);
  ASSERT_EQ(j["kernels"].size(), 1u);
  EXPECT_EQ(j["kernels"][0]["bottleneck"]["class"], "memory") << a.out;
  // The knowledge base (data/kb) answers with no LLM.
  auto e = keet("", "explain --format json long_scoreboard");
  ASSERT_EQ(e.rc, 0) << e.err;
  EXPECT_NE(e.out.find("scoreboard"), std::string::npos) << e.out;
}

TEST_F(Installed, LoadsTheInstalledHttpPlugin) {
  FakeLlmServer server;
  nlohmann::json answer = {{"summary", "DRAM throughput is 88% of peak; the kernel is memory-bound."},
                           {"reasoning", "The engine classifies the kernel as memory-bound."},
                           {"suggestions", nlohmann::json::array()},
                           {"questions", nlohmann::json::array()},
                           {"confidence", 0.8}};
  server.script({200, openai_text_reply(answer.dump())});
  std::string env = "LD_DEBUG=libs XDG_CACHE_HOME=" + shell_quote(temp_path("install-cache")) +
                    " XDG_CONFIG_HOME=/nonexistent OPENAI_API_KEY=sk-test OPENAI_BASE_URL=" + server.url() + "/v1";
  auto r = keet(env, "analyze --no-cache --format json --llm openai:m " + shell_quote(saxpy_report()));
  ASSERT_EQ(r.rc, 0) << r.err;
  // ld.so names each library it loads: the plugin comes from the prefix, not the build folder.
  EXPECT_NE(r.err.find(at("bin/../lib/keet/libkeet_http.so")), std::string::npos) << r.err.substr(0, 4000);
  EXPECT_EQ(r.err.find(build_dir() + "/libkeet_http.so"), std::string::npos);
  auto j = nlohmann::json::parse(r.out);
  // The request went out through the plugin and the answer came back.
  EXPECT_EQ(j["kernels"][0]["llm"]["status"], "verified") << j["kernels"][0]["llm"].dump(2);
  EXPECT_EQ(server.received().size(), 1u);
}

TEST_F(Installed, ManPageRendersEveryCommand) {
  auto man = run_command("(MANWIDTH=100 man -l " + shell_quote(at("share/man/man1/keet.1")) + " | col -b)");
  ASSERT_EQ(man.rc, 0) << man.err;
  EXPECT_TRUE(man.err.empty()) << man.err;
  auto help = run_keet("help");
  for (std::string cmd : {"analyze", "diff", "doctor", "export", "gate", "profile", "chat"}) {
    ASSERT_NE(help.out.find(cmd), std::string::npos) << cmd;
    EXPECT_NE(man.out.find("keet " + cmd + " [options]"), std::string::npos) << cmd << " missing:\n" << man.out;
  }
  // Flags come from the same definitions as the help text, descriptions included.
  auto analyze_help = run_keet("help analyze");
  EXPECT_NE(analyze_help.out.find("output format"), std::string::npos);
  EXPECT_NE(man.out.find("--format {text|markdown|json|html}"), std::string::npos) << man.out;
  EXPECT_NE(man.out.find("EXIT STATUS"), std::string::npos);
  EXPECT_NE(man.out.find("EXAMPLES"), std::string::npos) << man.out;
  EXPECT_NE(man.out.find("keet timeline run.nsys-rep"), std::string::npos) << man.out;
  EXPECT_NE(help.out.find("Nsight Systems timelines"), std::string::npos) << help.out;
  // groff's own warnings (bad escapes, unknown requests) fail the page too.
  auto groff = run_command("groff -man -Tutf8 -ww -z " + shell_quote(at("share/man/man1/keet.1")));
  EXPECT_EQ(groff.rc, 0);
  EXPECT_TRUE(groff.err.empty()) << groff.err;
}

// COMP_WORDS as bash fills them for `keet <words>` with the cursor on the last one.
std::string complete_bash(const std::string& script, const std::string& words, int cword) {
  auto r = run_command("bash -c " +
                       shell_quote("source " + shell_quote(script) + "; COMP_WORDS=(keet " + words +
                                   "); COMP_CWORD=" + std::to_string(cword) + "; _keet; echo \"${COMPREPLY[@]}\""));
  EXPECT_EQ(r.rc, 0) << r.err;
  return r.out;
}

TEST_F(Installed, BashCompletesCommandsFlagsAndValues) {
  std::string script = at("share/bash-completion/completions/keet");
  EXPECT_EQ(complete_bash(script, "an", 1), "analyze\n");
  EXPECT_EQ(complete_bash(script, "d", 1), "doctor diff\n");
  EXPECT_EQ(complete_bash(script, "help ex", 2), "export explain\n");
  EXPECT_EQ(complete_bash(script, "analyze --for", 2), "--format\n");
  EXPECT_EQ(complete_bash(script, "analyze --format m", 3), "markdown\n");
  EXPECT_EQ(complete_bash(script, "diff -f ''", 3), "text markdown json html\n");
}

TEST_F(Installed, ZshCompletionParses) {
  if (run_command("command -v zsh").rc != 0) GTEST_SKIP() << "zsh is not installed: the zsh script is not parsed";
  auto r = run_command("zsh -n " + shell_quote(at("share/zsh/site-functions/_keet")));
  EXPECT_EQ(r.rc, 0) << r.err;
}

}  // namespace
}  // namespace keet
