#include "testing.h"

#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
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

std::vector<std::string> fixture_reports() {
  std::vector<std::string> out;
  auto s = shared_dir();
  if (!s) return out;
  for (const auto& e : fs::recursive_directory_iterator(*s + "/fixtures")) {
    auto ext = e.path().extension();
    if (e.is_regular_file() && (ext == ".ncu-rep" || ext == ".nsight-cuprof-report"))
      out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string temp_path(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / ("keet-test-" + std::to_string(getpid()));
  fs::create_directories(dir);
  return (dir / name).string();
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
  if (!out.flush()) throw std::runtime_error("cannot write " + path);
}

std::vector<std::string> csv_cells(std::string_view line) {
  std::vector<std::string> cells;
  std::string cell;
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (quoted && c == '"' && i + 1 < line.size() && line[i + 1] == '"') cell += line[++i];
    else if (c == '"') quoted = !quoted;
    else if (c == ',' && !quoted) cells.push_back(std::exchange(cell, {}));
    else cell += c;
  }
  cells.push_back(cell);
  return cells;
}

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') out += "'\\''";
    else out += c;
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

ProcessResult run_keet(const std::string& args) { return run_command(std::string(KEET_BINARY) + " " + args); }

}  // namespace keet::testing
