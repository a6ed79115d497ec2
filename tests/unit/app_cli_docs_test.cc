// The man page and completion writers on a small command line with every
// kind of flag, and text that roff, bash or zsh would otherwise take as syntax.
#include <gtest/gtest.h>

#include <fstream>

#include "app/cli_docs.h"
#include "support/testing.h"

namespace keet::app {
namespace {

struct Cli {
  CLI::App app{"keet: explains .things \\ with -dashes", "keet"};
  std::string format = "text", out;
  bool quiet = false;
  std::vector<std::string> files;
  Cli() {
    auto* sub = app.add_subcommand("analyze", ".starts a roff request [and] 'quotes': colons");
    sub->add_option("report", files, "report files")->required();
    sub->add_option("--format,-f", format, "output format")->check(CLI::IsMember({"text", "json"}));
    sub->add_flag("--quiet", quiet, "say less");
    sub->add_option("-o,--output", out, "write here");
    app.add_subcommand("diff", "compare");
    auto* timeline = app.add_subcommand("timeline", "a run");
    timeline->add_option("timeline", run, "Nsight Systems run")->required();
  }
  std::string run;
};

std::string write(const std::string& name, const std::string& text) {
  std::string path = testing::temp_path(name);
  std::ofstream(path) << text;
  return path;
}

TEST(CliDocs, ManPageEscapesRoffAndListsEveryFlag) {
  Cli c;
  std::string page = man_page(c.app, "9.9");
  EXPECT_NE(page.find("\\&.starts a roff request"), std::string::npos) << page;
  EXPECT_NE(page.find("\\e with \\-dashes"), std::string::npos) << page;
  EXPECT_NE(page.find("\\fB\\-f\\fR, \\fB\\-\\-format\\fR \\fI{text|json}\\fR"), std::string::npos) << page;
  EXPECT_NE(page.find("\\fB\\-\\-quiet\\fR\nsay less"), std::string::npos) << "a flag takes no value:\n" << page;
  EXPECT_NE(page.find("\\fBkeet analyze\\fR [\\fIoptions\\fR] \\fIreport\\fR..."), std::string::npos) << page;
  // Every input a newcomer has, and first commands for each.
  EXPECT_NE(page.find("from Nsight Systems (an .nsys-rep or .qdrep report, or its SQLite export)"), std::string::npos);
  EXPECT_NE(page.find(".SH EXAMPLES\n"), std::string::npos) << page;
  EXPECT_NE(page.find("\\fBkeet timeline run.nsys-rep\\fR"), std::string::npos) << page;
  EXPECT_NE(page.find("\\fBnsys\\fR(1)"), std::string::npos) << page;
  auto groff = testing::run_command("groff -man -Tutf8 -ww -z " + testing::shell_quote(write("cli.1", page)));
  EXPECT_EQ(groff.rc, 0);
  EXPECT_EQ(groff.err, "");
}

TEST(CliDocs, BashCompletesChoicesAndFlags) {
  Cli c;
  std::string script = write("cli.bash", bash_completion(c.app));
  auto complete = [&](const std::string& words, int cword) {
    return testing::run_command("bash -c " +
                                testing::shell_quote("source " + testing::shell_quote(script) + "; COMP_WORDS=(keet " +
                                                     words + "); COMP_CWORD=" + std::to_string(cword) +
                                                     "; _keet; echo \"${COMPREPLY[@]}\""))
        .out;
  };
  EXPECT_EQ(complete("''", 1), "analyze diff timeline help -h --help\n");
  EXPECT_EQ(complete("analyze -f ''", 3), "text json\n");
  EXPECT_EQ(complete("analyze --q", 2), "--quiet\n");
}

// A report argument offers reports (and folders to walk into), a timeline
// argument Nsight Systems runs; the user's extglob setting survives.
TEST(CliDocs, BashOffersTheFilesEachArgumentReads) {
  Cli c;
  std::string script = write("cli_files.bash", bash_completion(c.app));
  std::string dir = testing::temp_path("completion_files");
  testing::run_command("rm -rf " + testing::shell_quote(dir) + " && mkdir -p " + testing::shell_quote(dir + "/sub"));
  for (const char* name : {"a.ncu-rep", "b.txt", "c.nsys-rep", "d.sqlite", "e.csv"})
    write("completion_files/" + std::string(name), "");
  auto complete = [&](const std::string& words, int cword) {
    return testing::run_command("bash -c " + testing::shell_quote("shopt -u extglob; source " +
                                                                  testing::shell_quote(script) + "; COMP_WORDS=(keet " +
                                                                  words + "); COMP_CWORD=" + std::to_string(cword) +
                                                                  "; _keet; printf '%s\\n' \"${COMPREPLY[@]}\" | sort; "
                                                                  "shopt -q extglob && echo extglob left on"))
        .out;
  };
  std::string d = testing::shell_quote(dir + "/");
  EXPECT_EQ(complete("analyze " + d, 2), dir + "/a.ncu-rep\n" + dir + "/e.csv\n" + dir + "/sub\n");
  EXPECT_EQ(complete("timeline " + d, 2), dir + "/c.nsys-rep\n" + dir + "/d.sqlite\n" + dir + "/sub\n");
  EXPECT_EQ(complete("diff " + d, 2), dir + "/a.ncu-rep\n" + dir + "/b.txt\n" + dir + "/c.nsys-rep\n" + dir +
                                          "/d.sqlite\n" + dir + "/e.csv\n" + dir + "/sub\n")
      << "an argument of no known kind offers every file";
}

TEST(CliDocs, ZshQuotesDescriptions) {
  Cli c;
  std::string script = zsh_completion(c.app);
  EXPECT_NE(script.find("'analyze:.starts a roff request \\[and\\] '\\''quotes'\\''\\: colons'"), std::string::npos)
      << script;
  EXPECT_NE(script.find("'--format[output format]:value:(text json)'"), std::string::npos) << script;
  // What each argument reads, said and offered.
  EXPECT_NE(script.find("'*:Nsight Compute report (.ncu-rep, .ncu-repz, ncu or nvprof CSV):_files -g "
                        "\"*.(ncu-rep|ncu-repz|nsight-cuprof-report|csv)(-.)\"'"),
            std::string::npos)
      << script;
  EXPECT_NE(script.find("'*:Nsight Systems run (.nsys-rep, .qdrep or its SQLite export):_files -g "
                        "\"*.(nsys-rep|qdrep|sqlite)(-.)\"'"),
            std::string::npos)
      << script;
  if (testing::run_command("command -v zsh").rc != 0) GTEST_SKIP() << "zsh is not installed: not parsed";
  EXPECT_EQ(testing::run_command("zsh -n " + testing::shell_quote(write("_keet", script))).rc, 0);
}

}  // namespace
}  // namespace keet::app
