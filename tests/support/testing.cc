#include "testing.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <stdexcept>

namespace fs = std::filesystem;

namespace keet::testing {

std::string source_dir() { return KEET_SOURCE_DIR; }

std::optional<std::string> shared_dir() {
  fs::path p = fs::path(KEET_SOURCE_DIR).parent_path() / "shared";
  if (const char* env = std::getenv("KEET_SHARED_DIR")) p = env;
  if (fs::is_directory(p / "fixtures")) return p.string();
  return std::nullopt;
}

std::optional<std::string> oracle_examples() {
  auto s = shared_dir();
  if (!s) return std::nullopt;
  auto r = run_command(shell_quote(*s + "/tools/ncu-oracle") + " --examples");
  if (r.rc != 0) return std::nullopt;
  std::string dir = r.out.substr(0, r.out.find('\n')) + "/uncoalescedGlobalAccesses";
  if (!fs::is_directory(dir)) return std::nullopt;
  return dir;
}

std::optional<std::string> oracle_examples_2024() {
  auto s = shared_dir();
  if (!s || !fs::exists(*s + "/tools/ncu-oracle-2024.1")) return std::nullopt;
  auto r = run_command(shell_quote(*s + "/tools/ncu-oracle-2024.1") + " --examples");
  if (r.rc != 0) return std::nullopt;
  std::string dir = r.out.substr(0, r.out.find('\n'));
  if (!fs::is_directory(dir + "/sharedBankConflicts")) return std::nullopt;
  return dir;
}

std::optional<std::string> real_nvdisasm_dir(std::string* why) {
  static const auto found = []() -> std::pair<std::optional<std::string>, std::string> {
    auto r = run_command(shell_quote(source_dir() + "/scripts/fetch-nvdisasm"));
    std::string dir = r.out.substr(0, r.out.find('\n'));
    if (r.rc != 0 || !fs::exists(dir + "/nvdisasm"))
      return {std::nullopt, "no real nvdisasm (scripts/fetch-nvdisasm: " + r.err + ")"};
    return {dir, ""};
  }();
  if (why) *why = found.second;
  return found.first;
}

std::optional<std::string> nvcc_path() {
  const char* env = std::getenv("KEET_TEST_NVCC");
  std::string p = env && *env ? env : "/usr/local/cuda/bin/nvcc";
  if (access(p.c_str(), X_OK) != 0) return std::nullopt;
  return p;
}

std::vector<std::string> fixture_reports() {
  std::vector<std::string> out;
  auto s = shared_dir();
  if (!s) return out;
  for (const auto& e : fs::recursive_directory_iterator(*s + "/fixtures")) {
    auto ext = e.path().extension();
    if (e.is_regular_file() && (ext == ".ncu-rep" || ext == ".nsight-cuprof-report")) out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

namespace {
// One fresh folder per test process, made by mkdtemp and removed when the
// process exits. A folder named after the pid was not enough: ctest runs each
// test in its own process, pids are reused, and a later test found an earlier
// one's files (a history store that already held 48 runs). Forked children
// leave through _exit, and the owner check keeps any that do not from
// removing their parent's folder.
struct ProcessTempDir {
  fs::path path;
  pid_t owner = getpid();
  ProcessTempDir() {
    std::string pattern = (fs::temp_directory_path() / "keet-test-XXXXXX").string();
    if (!mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed for " + pattern);
    path = pattern;
    // mkdtemp makes it 0700; tests that run keet as another user (nobody,
    // reading a read-only history) need to reach the files in it.
    fs::permissions(path, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                              fs::perms::others_read | fs::perms::others_exec);
    // Every keet a test starts keeps its caches (nsys exports, LLM replies)
    // here, never in the home folder of whoever runs the tests.
    setenv("XDG_CACHE_HOME", (path / "xdg-cache").c_str(), 1);
  }
  ~ProcessTempDir() {
    if (getpid() != owner || std::getenv("KEET_TEST_KEEP_TEMP")) return;
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};
}  // namespace

std::string temp_path(const std::string& name) {
  static ProcessTempDir dir;
  return (dir.path / name).string();
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
  if (!out.flush()) throw std::runtime_error("cannot write " + path);
}

void write_script(const std::string& path, const std::string& text) {
  write_file(path, text);
  fs::permissions(path, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec);
}

std::string stand_in_nvdisasm(const std::string& name) {
  std::string dir = temp_path(name);
  fs::create_directories(dir);
  write_script(dir + "/nvdisasm", R"LST(#!/bin/sh
[ "$1" = "-b" ] || exit 2
n=$(wc -c < "$3") || exit 1
i=0
while [ "$i" -lt "$n" ]; do printf '        /*%04x*/                   STAND_IN.%s R%d ;\n' "$i" "$2" "$i"; i=$((i + 16)); done
)LST");
  return dir;
}

std::vector<std::string> csv_cells(std::string_view line) {
  std::vector<std::string> cells;
  std::string cell;
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (quoted && c == '"' && i + 1 < line.size() && line[i + 1] == '"')
      cell += line[++i];
    else if (c == '"')
      quoted = !quoted;
    else if (c == ',' && !quoted)
      cells.push_back(std::exchange(cell, {}));
    else
      cell += c;
  }
  cells.push_back(cell);
  return cells;
}

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'')
      out += "'\\''";
    else
      out += c;
  }
  return out + "'";
}

static std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

ProcessResult run_command(const std::string& cmd) {
  static int counter = 0;
  std::string base = temp_path("cmd" + std::to_string(counter++));
  std::string full = cmd + " >" + base + ".out 2>" + base + ".err </dev/null";
  int status = std::system(full.c_str());
  ProcessResult r;
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = slurp(base + ".out");
  r.err = slurp(base + ".err");
  fs::remove(base + ".out");
  fs::remove(base + ".err");
  return r;
}

const std::string& keet_binary() {
  static const std::string path = [] {
    const char* env = std::getenv("KEET_TEST_BINARY");
    return std::string(env && *env ? env : KEET_BUILT_BINARY);
  }();
  return path;
}

std::string build_dir() { return KEET_BUILD_DIR; }

std::optional<std::string> chromium() {
  for (const char* c : {"chromium", "chromium-browser", "google-chrome"})
    if (run_command(std::string("command -v ") + c).rc == 0) return std::string(c);
  return std::nullopt;
}

std::string render_in_chromium(const std::string& browser, const std::string& html, const std::string& name) {
  namespace fs = std::filesystem;
  std::string page = temp_path(name + ".html");
  fs::path kept = fs::path(build_dir()) / "test-artifacts";
  fs::create_directories(kept);
  std::string shot = (kept / (name + ".png")).string();
  fs::remove(shot);
  std::ofstream(page) << html;
  std::string flags =
      "--headless --no-sandbox --disable-gpu --no-first-run --disable-extensions "
      "--host-resolver-rules='MAP * ~NOTFOUND' --virtual-time-budget=2000 --window-size=1200,1800 ";
  auto s = run_command("timeout 90 " + browser + " " + flags + "--screenshot=" + shot + " file://" + page);
  EXPECT_EQ(s.rc, 0) << s.err;
  EXPECT_TRUE(fs::exists(shot) && fs::file_size(shot) > 10000) << "no screenshot at " << shot;
  auto dom = run_command("timeout 90 " + browser + " " + flags + "--dump-dom file://" + page);
  EXPECT_EQ(dom.rc, 0) << dom.err;
  return dom.out;
}

bool keet_is_sanitized() {
  // ASan answers help=1 with its flag list before main runs.
  static const bool sanitized =
      run_command("ASAN_OPTIONS=help=1 " + shell_quote(keet_binary()) + " help").err.find("AddressSanitizer") !=
      std::string::npos;
  return sanitized;
}

namespace {

// The current ASAN_OPTIONS with one more option.
std::string asan_options_with(const std::string& option) {
  const char* current = std::getenv("ASAN_OPTIONS");
  return (current && *current ? std::string(current) + ":" : "") + option;
}

}  // namespace

std::string asan_options_capped(long mib) {
  // The quarantine holds up to 256 MiB of freed memory; the shadow is an eighth more.
  return asan_options_with("hard_rss_limit_mb=" + std::to_string(mib + mib / 8 + 256 + 64));
}

std::string memory_cap_prefix(long mib) {
  if (keet_is_sanitized()) return "ASAN_OPTIONS=" + shell_quote(asan_options_capped(mib)) + " ";
  return "ulimit -v " + std::to_string(mib * 1024) + "; ";
}

std::string measured_memory_prefix() {
  if (!keet_is_sanitized()) return "";
  return "ASAN_OPTIONS=" + shell_quote(asan_options_with("quarantine_size_mb=0")) + " ";
}

ProcessResult run_keet(const std::string& args) { return run_command(keet_binary() + " " + args); }

namespace {

std::string summary_line(const std::string& report) {
  auto at = report.find("SUMMARY: ");
  if (at == std::string::npos) at = 0;
  return report.substr(at, report.find('\n', at) - at);
}

// Sanitizer reports of every process a test starts. At start-up this process
// sets KEET_SANITIZER_REPORTS to a folder of its own (its children inherit it);
// a sanitized keet (tools/keet/sanitizer_hooks.cc) writes each report there
// too, in a file named after its pid, and the test during which one appears
// fails with it, whatever exit status it expected and wherever it sent keet's
// stderr. A release keet ignores the variable.
class SanitizerReports : public ::testing::EmptyTestEventListener {
 public:
  explicit SanitizerReports(fs::path dir) : dir_(std::move(dir)) {}

  // Made when a test starts, not when the tests are only listed.
  void OnTestStart(const ::testing::TestInfo&) override {
    std::error_code ec;
    fs::create_directories(dir_, ec);
  }

  void OnTestEnd(const ::testing::TestInfo&) override {
    std::error_code ec;
    std::vector<fs::path> reports;
    for (const auto& e : fs::directory_iterator(dir_, ec)) reports.push_back(e.path());
    std::sort(reports.begin(), reports.end());
    for (size_t i = 0; i < reports.size(); ++i) {
      std::string text = slurp(reports[i].string());
      // A test that runs keet thousands of times may collect hundreds: the
      // first few in full, then their summary lines.
      if (i >= 3)
        text = summary_line(text);
      else if (text.size() > 16000)
        text = text.substr(0, 16000) + "\n[...]";
      ADD_FAILURE() << "sanitizer report (" << reports[i].filename().string() << "):\n" << text;
      fs::remove(reports[i], ec);
    }
  }

  void OnTestProgramEnd(const ::testing::UnitTest&) override {
    std::error_code ec;
    fs::remove(dir_, ec);  // only when empty
  }

 private:
  fs::path dir_;
};

[[maybe_unused]] const bool kSanitizerReportsWatched = [] {
  fs::path dir = fs::temp_directory_path() / ("keet-sanitizer-" + std::to_string(getpid()));
  setenv("KEET_SANITIZER_REPORTS", dir.c_str(), 1);
  ::testing::UnitTest::GetInstance()->listeners().Append(new SanitizerReports(dir));
  return true;
}();

}  // namespace

}  // namespace keet::testing
