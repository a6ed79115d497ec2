// End-to-end: hostile input and faults (issue 13) never cost a crash, a hang,
// a leaked secret or a silent wrong answer. Each test rebuilds its reproducer.
#include <gtest/gtest.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

#include "io/file.h"
#include "readers/reader.h"
#include "support/report_writer.h"
#include "support/testing.h"

namespace keet {
namespace {

using namespace keet::testing;
namespace fs = std::filesystem;

// A one-kernel report named `kernel` (any bytes), with a device name.
std::string named_report(const std::string& file, const std::string& kernel, double ns = 1000) {
  std::string path = temp_path(file);
  write_file(path, one_kernel_report(
                       kernel, 64, 256,
                       {{"gpu__time_duration.sum", ns}, {"sm__throughput.avg.pct_of_peak_sustained_elapsed", 40}}));
  return path;
}

std::string hostile_db(const std::string& name) {
  std::string path = temp_path(name);
  fs::remove(path);
  return "--db " + shell_quote("sqlite:" + path);
}

void expect_valid_json(const std::string& what, const ProcessResult& r, int rc = 0) {
  EXPECT_EQ(r.rc, rc) << what << ": " << r.err;
  EXPECT_TRUE(nlohmann::json::accept(r.out)) << what << " wrote invalid JSON: " << r.out.substr(0, 300);
}

// --- 1. one byte that is not UTF-8 ---

TEST(HostileUtf8, EveryJsonWriterSurvivesAnInvalidByteInAKernelName) {
  auto rep = shell_quote(named_report("utf8_bad.ncu-rep", "k\xff"));
  auto other = shell_quote(named_report("utf8_bad2.ncu-rep", "k\xff", 2000));
  for (std::string cmd : {"list", "metrics", "export", "analyze", "source"})
    expect_valid_json(cmd, run_keet(cmd + " --format json " + rep));
  expect_valid_json("diff", run_keet("diff --format json " + rep + " " + other));
  expect_valid_json("analyze --llm --dry-run",
                    run_keet("analyze --format json --dry-run --llm openai:m " + rep + " 2>/dev/null"));
  std::string db = hostile_db("utf8_bad.sqlite");
  auto rec = run_keet("record " + rep + " --tag main " + db);
  ASSERT_EQ(rec.rc, 0) << rec.err;
  expect_valid_json("history", run_keet("history --format json " + db));
  expect_valid_json("gate sarif", run_keet("gate " + other + " --baseline main --format sarif " + db), 1);
  // The byte is replaced (U+FFFD), never dropped or passed through.
  auto j = nlohmann::json::parse(run_keet("list --format json " + rep).out);
  EXPECT_EQ(j["kernels"][0]["name"], "k\xef\xbf\xbd()");
}

TEST(HostileUtf8, TwoLineCsvWithAnInvalidByte) {
  std::string path = temp_path("utf8_bad.csv");
  std::ofstream(path) << "\"ID\",\"Process ID\",\"Process Name\",\"Host Name\",\"Kernel Name\",\"Kernel Time\","
                         "\"Context\",\"Stream\",\"gpu__time_duration.sum\"\n"
                         "\"0\",\"1\",\"p\",\"h\",\"k\xff\",\"\",\"1\",\"7\",\"2,048\"\n";
  for (std::string cmd : {"list", "metrics", "export", "analyze"})
    expect_valid_json(cmd, run_keet(cmd + " --format json " + shell_quote(path)));
}

// --- 2. patterns: RE2, linear time, bounded size ---

// A kernel and a metric whose names are 100 KB long: std::regex recursed once
// per character and overflowed the stack on them.
std::string long_name_report() {
  std::string name(100000, 'a');
  name += ",";
  ReportWriter w;
  ReportWriter::Block b;
  auto k = w.kernel(name, 1, 32, {{"gpu__time_duration.sum", 1000}, {name, 1}});
  w.flush_strings(b);
  b.results.push_back(k.SerializeAsString());
  w.add(b);
  std::string path = temp_path("long_name.ncu-rep");
  w.write(path);
  return shell_quote(path);
}

TEST(HostilePatterns, PathologicalPatternsOnAHundredKilobyteNameNeverCrash) {
  auto rep = long_name_report();
  for (std::string p : {"(.*)*zq", "(a|,)*>"}) {
    auto list = run_keet("list -k " + shell_quote("regex:" + p) + " " + rep);
    EXPECT_EQ(list.rc, 2) << p << ": " << list.err;  // nothing matches: a clear error, not a crash
    EXPECT_NE(list.err.find("no kernel matches"), std::string::npos) << p << ": " << list.err;
    auto metrics = run_keet("metrics --format json --grep " + shell_quote(p) + " " + rep);
    EXPECT_EQ(metrics.rc, 0) << p << ": " << metrics.err;
  }
  auto hit = run_keet("list --format json -k " + shell_quote("regex:(a|,)*,") + " " + rep);
  ASSERT_EQ(hit.rc, 0) << hit.err;
  EXPECT_EQ(nlohmann::json::parse(hit.out)["kernels"].size(), 1u);
}

TEST(HostilePatterns, BadOrHugePatternIsOneLineAndExitTwo) {
  auto rep = long_name_report();
  for (std::string p : std::vector<std::string>{"(", "a{2000}{2000}", std::string(5000, 'x')}) {
    for (std::string cmd : {"list -k " + shell_quote("regex:" + p), "metrics --grep " + shell_quote(p)}) {
      auto r = run_keet(cmd + " " + rep);
      EXPECT_EQ(r.rc, 2) << cmd.substr(0, 80);
      EXPECT_NE(r.err.find("invalid regular expression"), std::string::npos) << r.err.substr(0, 200);
      EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err.substr(0, 200);
    }
  }
}

// --- 3. amplification: counts bounded by the bytes ---

// A block whose header claims `claimed` kernel results, followed by `zero_items`
// items of length zero (4 bytes each).
std::string claiming_report(const std::string& file, uint32_t claimed, size_t zero_items) {
  ReportWriter w;
  ReportWriter::Block b;
  b.header.set_num_results(claimed);
  b.extra_payload = std::string(4 * zero_items, '\0');
  w.add(b);
  std::string path = temp_path(file);
  w.write(path);
  return shell_quote(path);
}

TEST(HostileAmplification, MillionZeroLengthResultsAreRefusedNotModelled) {
  // 4 MB of real zero-length items: each used to become a model kernel
  // (15 s and 909 MB for `list`, 6.7 GB for analyze --format json).
  auto rep = claiming_report("million_empty.ncu-rep", 1'000'000, 1'000'000);
  for (std::string cmd : {"list", "analyze --format json", "export --format csv", "metrics"}) {
    // 400 MB of address space is plenty for an error, and far below what the
    // kernels would cost (an ASan keet: the same cap on its RSS).
    auto r = run_command(memory_cap_prefix(390) + keet_binary() + " " + cmd + " " + rep);
    EXPECT_EQ(r.rc, 2) << cmd << ": " << r.err;
    EXPECT_NE(r.err.find("kernel result is empty"), std::string::npos) << cmd << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  // The header alone claiming a million results: the bytes end first.
  auto lie = run_keet("list " + claiming_report("million_claimed.ncu-rep", 1'000'000, 0));
  EXPECT_EQ(lie.rc, 2) << lie.err;
}

TEST(HostileAmplification, KernelsPerReportAreCapped) {
  ReportWriter w;
  ReportWriter::Block b;
  for (int i = 0; i < 5; ++i) b.results.push_back(w.kernel("k" + std::to_string(i), 1, 32, {}).SerializeAsString());
  w.flush_strings(b);
  w.add(b);
  auto src = io::memory_source("five.ncu-rep", w.bytes());
  readers::ReadOptions opt;
  opt.max_kernels = 3;
  auto capped = readers::load(*src, opt);
  ASSERT_FALSE(capped);
  EXPECT_NE(capped.error().message().find("more than 3 kernels"), std::string::npos) << capped.error().message();
  opt.max_kernels = 5;
  auto all = readers::load(*src, opt);
  ASSERT_TRUE(all) << all.error().message();
  EXPECT_EQ(all->kernels.size(), 5u);
}

TEST(HostileAmplification, KernelsPackedTighterThanRealOnesAreRefused) {
  // 20,000 tiny kernel results (about 30 bytes each, where real ones take
  // kilobytes): 900 bytes of model each, 90x the file.
  ReportWriter w;
  ReportWriter::Block b;
  std::string tiny = w.kernel("k", 1, 32, {}).SerializeAsString();
  for (int i = 0; i < 20000; ++i) b.results.push_back(tiny);
  w.flush_strings(b);
  w.add(b);
  auto src = io::memory_source("tiny.ncu-rep", w.bytes());
  auto r = readers::load(*src);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("more than real kernel results can fit"), std::string::npos)
      << r.error().message();
  b.results.resize(900);  // a small report of small kernels is fine
  ReportWriter small;
  small.add(b);
  auto ok = readers::load(*io::memory_source("small.ncu-rep", small.bytes()));
  ASSERT_TRUE(ok) << ok.error().message();
  EXPECT_EQ(ok->kernels.size(), 900u);
}

// --- 4. output injection ---

const std::string kEvilName = "k\x1b]0;pwned\x07\x1b[2J\rX<script>alert(1)</script>";

// No byte a terminal would obey: C0 controls other than newline and tab, DEL.
bool terminal_clean(const std::string& s) {
  return std::none_of(s.begin(), s.end(), [](char c) {
    auto u = static_cast<unsigned char>(c);
    return (u < 0x20 && c != '\n' && c != '\t') || u == 0x7f;
  });
}

TEST(HostileOutput, ControlCharactersNeverReachTheTerminal) {
  auto rep = shell_quote(named_report("evil.ncu-rep", kEvilName));
  auto other = shell_quote(named_report("evil2.ncu-rep", kEvilName, 5000));
  std::string db = hostile_db("evil.sqlite");
  ASSERT_EQ(run_keet("record " + rep + " --tag main " + db).rc, 0);
  std::vector<std::pair<std::string, int>> runs = {
      {"list " + rep, 0},
      {"analyze " + rep, 0},
      {"analyze --format markdown " + rep, 0},
      {"metrics " + rep, 0},
      {"source " + rep, 0},
      {"diff " + rep + " " + other, 0},
      {"gate " + other + " --baseline main " + db, 1},
      {"gate " + other + " --baseline main --format junit " + db, 1},
      {"history " + db, 0},
      {"list -k nosuch" + shell_quote(kEvilName) + " " + rep, 2},
  };
  for (const auto& [cmd, rc] : runs) {
    auto r = run_keet(cmd);
    EXPECT_EQ(r.rc, rc) << cmd << ": " << r.err;
    EXPECT_TRUE(terminal_clean(r.out)) << cmd << " wrote a control character: " << r.out;
    EXPECT_TRUE(terminal_clean(r.err)) << cmd << " wrote a control character on stderr: " << r.err;
  }
  auto text = run_keet("list " + rep);
  EXPECT_NE(text.out.find("k^[]0;pwned^G^[[2J^MX"), std::string::npos) << text.out;  // shown, not obeyed
}

TEST(HostileOutput, JunitStaysValidXmlAndMarkdownCarriesNoHtml) {
  auto rep = shell_quote(named_report("evilx.ncu-rep", kEvilName + "\xff"));
  auto slow = shell_quote(named_report("evilx2.ncu-rep", kEvilName + "\xff", 5000));
  std::string db = hostile_db("evilx.sqlite");
  ASSERT_EQ(run_keet("record " + rep + " --tag main " + db).rc, 0);
  std::string junit = temp_path("evil_junit.xml");
  auto g = run_keet("gate " + slow + " --baseline main --format junit -o " + shell_quote(junit) + " " + db);
  EXPECT_EQ(g.rc, 1) << g.err;
  std::ifstream in(junit);
  std::string xml((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_NE(xml.find("<testsuite"), std::string::npos) << xml;
  bool xml_chars_only = std::none_of(xml.begin(), xml.end(), [](char c) {  // what XML 1.0 allows
    auto u = static_cast<unsigned char>(c);
    return u < 0x20 && c != '\n' && c != '\t' && c != '\r';
  });
  EXPECT_TRUE(xml_chars_only) << xml;
  EXPECT_EQ(xml.find("\xff"), std::string::npos);  // nor invalid UTF-8
  EXPECT_EQ(xml.find("<script>"), std::string::npos) << xml;
  if (run_command("command -v xmllint").rc == 0) {
    auto lint = run_command("xmllint --noout " + shell_quote(junit));
    EXPECT_EQ(lint.rc, 0) << lint.err;
  }
  for (std::string cmd : {"analyze --format markdown " + rep, "diff --format markdown " + rep + " " + slow}) {
    auto md = run_keet(cmd);
    EXPECT_EQ(md.rc, 0) << md.err;
    // The name is inside code spans, which a renderer shows as text; it never
    // starts a line of its own, where it would be raw HTML.
    for (size_t at = md.out.find("<script>"); at != std::string::npos; at = md.out.find("<script>", at + 1)) {
      size_t line = md.out.rfind('\n', at) + 1;
      size_t ticks = std::count(md.out.begin() + line, md.out.begin() + at, '`');
      EXPECT_EQ(ticks % 2, 1u) << cmd << ": <script> outside a code span: " << md.out.substr(line, at - line + 20);
    }
  }
}

// --- 5. silent wrong answers ---

TEST(HostileFaults, WriteErrorOnStdoutIsAnError) {
  auto rep = shell_quote(named_report("full.ncu-rep", "k"));
  for (std::string cmd : {"list", "analyze", "export --format csv", "analyze --format json"}) {
    auto r = run_command("(" + keet_binary() + " " + cmd + " " + rep + " > /dev/full)");
    EXPECT_NE(r.rc, 0) << cmd;
    EXPECT_NE(r.err.find("cannot write to standard output"), std::string::npos) << cmd << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
}

TEST(HostileFaults, HtmlHonoursTruncationLikeTextAndJson) {
  std::string path = temp_path("cut.ncu-rep");  // the second of two blocks is cut short
  std::ofstream(path, std::ios::binary) << cut_short_report({"first", "second"}, 8);
  std::string html = shell_quote(temp_path("cut.html"));
  for (std::string fmt : std::vector<std::string>{"text", "json", "html -o " + html}) {
    EXPECT_EQ(run_keet("analyze --format " + fmt + " " + shell_quote(path)).rc, 2) << fmt;
    EXPECT_EQ(run_keet("analyze --allow-partial --format " + fmt + " " + shell_quote(path)).rc, 0) << fmt;
  }
}

// A history with a few runs: `record` it `n` times.
std::string recorded_db(const std::string& name, int n) {
  std::string file = temp_path(name);
  fs::remove(file);
  std::string db = "--db " + shell_quote("sqlite:" + file);
  auto rep = shell_quote(named_report(name + ".ncu-rep", std::string(600, 'k')));
  std::string script;
  for (int i = 0; i < n; ++i)
    script += keet_binary() + " record " + rep + " --tag t" + std::to_string(i) + " " + db + " >/dev/null && ";
  EXPECT_EQ(run_command(script + "true").rc, 0);
  return file;
}

TEST(HostileFaults, ReadOnlyHistoryServesReading) {
  std::string file = recorded_db("readonly.sqlite", 2);
  std::string db = "--db " + shell_quote("sqlite:" + file);
  std::string as_reader;  // root writes anything: read as nobody instead
  if (geteuid() == 0) {
    if (run_command("command -v setpriv").rc != 0) GTEST_SKIP() << "running as root without setpriv";
    as_reader = "setpriv --reuid=65534 --regid=65534 --clear-groups ";
  }
  ASSERT_EQ(run_command("chmod 0444 " + shell_quote(file)).rc, 0);
  auto h = run_command(as_reader + keet_binary() + " history --format json --limit 0 " + db);
  EXPECT_EQ(h.rc, 0) << h.err;
  if (h.rc == 0) EXPECT_EQ(nlohmann::json::parse(h.out)["kernels"][0]["points"].size(), 2u) << h.out;
  auto rec = run_command(as_reader + keet_binary() + " record " + shell_quote(named_report("ro_more.ncu-rep", "k")) +
                         " " + db);
  EXPECT_NE(rec.rc, 0);  // writing still fails, clearly
  EXPECT_NE(rec.err.find("readonly"), std::string::npos) << rec.err;
  run_command("chmod 0644 " + shell_quote(file));
}

// Bytes of the file, with the first `what` replaced by `with` (same length).
void patch_file(const std::string& file, const std::string& what, const std::string& with) {
  std::ifstream in(file, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  in.close();
  size_t at = bytes.find(what);
  ASSERT_NE(at, std::string::npos) << what;
  bytes.replace(at, what.size(), with);
  std::ofstream(file, std::ios::binary | std::ios::trunc) << bytes;
}

TEST(HostileFaults, CorruptHistoryIsReportedNotSkipped) {
  std::string file = recorded_db("corrupt.sqlite", 12);
  std::string db = "--db " + shell_quote("sqlite:" + file);
  ASSERT_EQ(run_keet("history --format json --limit 0 " + db).rc, 0);
  std::string copy = file + ".pages";
  fs::copy_file(file, copy, fs::copy_options::overwrite_existing);
  // One damaged record: it used to vanish from `history` (exit 0, 11 of 12 runs).
  patch_file(file, "\"grid\"", "\"gr!d\"");
  auto h = run_keet("history --format json --limit 0 " + db);
  EXPECT_EQ(h.rc, 2) << h.out;
  EXPECT_NE(h.err.find("damaged kernel record"), std::string::npos) << h.err;
  EXPECT_EQ(run_keet("gate " + shell_quote(named_report("c_gate.ncu-rep", "k")) + " --baseline latest " + db).rc, 2);
  // Damaged pages: bad input (exit 2, naming the file), not a failing dependency.
  std::string pages_db = "--db " + shell_quote("sqlite:" + copy);
  {
    std::fstream f(copy, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(3 * 4096);
    f << std::string(64, '\x5a');
  }
  auto p = run_keet("history --format json --limit 0 " + pages_db);
  EXPECT_EQ(p.rc, 2) << p.out;
  EXPECT_NE(p.err.find("malformed"), std::string::npos) << p.err;
  auto rec = run_keet("record " + shell_quote(named_report("c_more.ncu-rep", "k")) + " " + pages_db);
  EXPECT_EQ(rec.rc, 2) << rec.err;
}

}  // namespace
}  // namespace keet
