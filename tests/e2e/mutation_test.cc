// End-to-end mutation test (issue 13): thousands of structured mutants of real
// reports and CSVs, each read by the real keet binary under a wall-clock and an
// address-space limit (an RSS limit for an ASan keet). Every run must end with
// a documented exit code (0 or 2: these commands have no gate failure), never a
// signal or a timeout, and a successful `analyze --format json` must print
// valid JSON.
//
// Deterministic: mutant i of seed s is made by std::mt19937_64 seeded with
// (kSeed, s, i), so a failure names a mutant that the test rebuilds the same way
// on any machine. Seeds are the smallest fixture reports and CSVs under
// ../shared (keeps the run inside CI's 2-core budget) plus, always, a report
// from the tests' writer and keet's own CSV export of it, so the test still
// runs (with fewer mutants) without ../shared.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <random>
#include <sstream>
#include <string_view>
#include <thread>

#include "ncu_report.pb.h"
#include "support/report_writer.h"
#include "support/testing.h"

namespace keet {
namespace {

using namespace keet::testing;
namespace fs = std::filesystem;

constexpr uint64_t kSeed = 13;        // the number; change it and the mutants change
constexpr int kMutantsPerSeed = 180;  // 12 seeds with ../shared: about 2,100 mutants
constexpr auto kWallLimit = std::chrono::seconds(10);
constexpr rlim_t kMemoryLimit = rlim_t{1} << 30;  // 1 GiB of address space per run

// KEET_MUTANTS_PER_SEED runs the first N of each seed's mutants (the same
// mutants as the full run's first N): CI's sanitizer stage takes a quarter,
// since under ASan the full set costs most of that stage's time.
size_t mutants_per_seed() {
  const char* v = std::getenv("KEET_MUTANTS_PER_SEED");
  if (!v || !*v) return kMutantsPerSeed;
  char* end = nullptr;
  unsigned long n = std::strtoul(v, &end, 10);
  return (*end == '\0' && n > 0) ? std::min<size_t>(n, 100000) : kMutantsPerSeed;
}

// ---------------------------------------------------------------- mutators --

using Rng = std::mt19937_64;

size_t pick(Rng& rng, size_t n) { return n == 0 ? 0 : std::uniform_int_distribution<size_t>(0, n - 1)(rng); }

void put_u32(std::string& s, size_t at, uint32_t v) {
  if (at + 4 > s.size()) return;
  for (int i = 0; i < 4; ++i) s[at + i] = static_cast<char>((v >> (8 * i)) & 0xff);
}

// A binary report split into its framed parts, and the offsets of every
// length prefix once re-assembled, for the structural mutators.
struct Framed {
  RawReport raw;
  bool ok = false;
};

Framed frame(const std::string& bytes) {
  Framed f;
  if (bytes.size() < 8 || bytes.compare(0, 4, std::string("NVR\0", 4)) != 0) return f;
  try {
    f.raw = RawReport::parse(bytes);
    f.ok = f.raw.bytes() == bytes && !f.raw.blocks.empty();
  } catch (const std::exception&) {
    f.ok = false;  // an old framing the test's splitter does not know: byte mutators only
  }
  return f;
}

// Byte positions of printable runs (names, metric strings) at least 6 long.
std::vector<std::pair<size_t, size_t>> text_runs(const std::string& s) {
  std::vector<std::pair<size_t, size_t>> runs;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    bool printable = i < s.size() && (std::isalnum(static_cast<unsigned char>(s[i])) || s[i] == '_');
    if (printable) continue;
    if (i - start >= 6) runs.emplace_back(start, i - start);
    start = i + 1;
  }
  return runs;
}

std::string truncate(Rng& rng, std::string s) {
  s.resize(pick(rng, s.size()));
  return s;
}

std::string flip_bytes(Rng& rng, std::string s) {
  for (int n = 1 + static_cast<int>(pick(rng, 8)); n > 0 && !s.empty(); --n)
    s[pick(rng, s.size())] ^= 1 << pick(rng, 8);
  return s;
}

// Invalid UTF-8 or control characters (ESC, BEL, CR, NUL) inside a name,
// same length, so a binary report's framing still holds.
std::string poison_text(Rng& rng, std::string s, bool control) {
  auto runs = text_runs(s);
  if (runs.empty()) return flip_bytes(rng, s);
  static const std::string bad_utf8[] = {"\xff", "\xc3", "\xe2\x82", "\xed\xa0\x80", "\xc0\xaf"};
  static const std::string ctl[] = {"\x1b[2J", "\x1b]0;x\x07", "\r", std::string("\0", 1), "\x7f", "\x1b"};
  for (int n = 1 + static_cast<int>(pick(rng, 3)); n > 0; --n) {
    auto [at, len] = runs[pick(rng, runs.size())];
    const std::string& with = control ? ctl[pick(rng, std::size(ctl))] : bad_utf8[pick(rng, std::size(bad_utf8))];
    size_t pos = at + pick(rng, len);
    for (size_t i = 0; i < with.size() && pos + i < at + len; ++i) s[pos + i] = with[i];
  }
  return s;
}

// Damage inside an embedded cubin: its ELF header fields (section table
// offset, counts, string index) or bytes of its sections and DWARF.
std::string damage_elf(Rng& rng, std::string s) {
  std::vector<size_t> elfs;
  for (size_t at = s.find("\x7f"
                          "ELF");
       at != std::string::npos; at = s.find("\x7f"
                                            "ELF",
                                            at + 1))
    elfs.push_back(at);
  if (elfs.empty()) return flip_bytes(rng, s);
  size_t base = elfs[pick(rng, elfs.size())];
  static const size_t fields[] = {0x04, 0x20, 0x28, 0x34, 0x36, 0x38, 0x3a, 0x3c, 0x3e};
  static const uint32_t values[] = {0, 1, 0xffff, 0xffffffffu, 0x7fffffff, 0x10000};
  for (int n = 1 + static_cast<int>(pick(rng, 3)); n > 0; --n) {
    if (pick(rng, 2) == 0) {
      size_t at = base + fields[pick(rng, std::size(fields))];
      if (at + 2 <= s.size()) {
        uint32_t v = values[pick(rng, std::size(values))];
        s[at] = static_cast<char>(v & 0xff);
        s[at + 1] = static_cast<char>((v >> 8) & 0xff);
      }
    } else {
      size_t at = base + 64 + pick(rng, 16384);
      if (at < s.size()) s[at] = static_cast<char>(pick(rng, 256));
    }
  }
  return s;
}

// Re-assembles `raw`, overwriting one item's (or block header's) length prefix.
std::string flip_length(Rng& rng, const RawReport& raw) {
  std::string out = raw.bytes();
  std::vector<size_t> prefixes = {4};
  size_t at = 8 + raw.file_header.size();
  for (const auto& b : raw.blocks) {
    prefixes.push_back(at);
    at += 4 + b.header.size();
    for (const auto& item : b.items) {
      prefixes.push_back(at);
      at += 4 + item.size();
    }
  }
  size_t where = prefixes[pick(rng, prefixes.size())];
  uint32_t old = 0;
  for (int i = 0; i < 4; ++i) old |= uint32_t(static_cast<unsigned char>(out[where + i])) << (8 * i);
  static const uint32_t values[] = {0, 1, 0xffffffffu, 0x7fffffff, 0x80000000u};
  uint32_t v = pick(rng, 3) == 0 ? (pick(rng, 2) ? old + 1 : old - 1) : values[pick(rng, std::size(values))];
  put_u32(out, where, v);
  return out;
}

std::string mutate_header(Rng& rng, RawReport raw, int kind) {
  auto& b = raw.blocks[pick(rng, raw.blocks.size())];
  pb::BlockHeader h;
  h.ParsePartialFromString(b.header);
  static const uint32_t huge[] = {1000000, 0xffffffffu, 0x7fffffff, 65536};
  switch (kind) {
    case 0:  // huge counts: the header claims more items than the bytes hold
      if (pick(rng, 2))
        h.set_num_results(huge[pick(rng, std::size(huge))]);
      else
        h.set_num_sources(huge[pick(rng, std::size(huge))]);
      if (pick(rng, 3) == 0) h.set_payload_size(uint64_t{1} << (32 + pick(rng, 30)));
      break;
    case 1: {  // zero-length items: many results of no bytes at all
      size_t n = 1000 + pick(rng, 100000);
      h.set_num_results(h.num_results() + static_cast<uint32_t>(n));
      b.items.insert(b.items.end(), n, std::string());
      h.clear_payload_size();
      break;
    }
    default:  // the string table gone: every metric name id now points nowhere
      h.clear_string_table();
      break;
  }
  b.header = h.SerializePartialAsString();
  return raw.bytes();
}

// Metric name ids beyond any string table, in one kernel result.
std::string bad_string_ids(Rng& rng, RawReport raw) {
  for (int tries = 0; tries < 8; ++tries) {
    auto& b = raw.blocks[pick(rng, raw.blocks.size())];
    if (b.items.empty()) continue;
    auto& item = b.items[pick(rng, b.items.size())];
    pb::ProfileResult r;
    if (!r.ParsePartialFromString(item) || r.metric_results_size() == 0) continue;
    static const uint32_t ids[] = {0xffffffffu, 0x7fffffff, 1000000, 65535};
    for (auto& m : *r.mutable_metric_results())
      if (pick(rng, 2)) m.set_name_id(ids[pick(rng, std::size(ids))]);
    item = r.SerializePartialAsString();
    return raw.bytes();
  }
  return flip_length(rng, raw);
}

// CSV chaos: quotes, separators, huge fields, lost and doubled lines.
std::string csv_chaos(Rng& rng, std::string s) {
  std::vector<std::string> lines;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  if (lines.empty()) lines.emplace_back();
  auto& line = lines[pick(rng, lines.size())];
  switch (pick(rng, 12)) {
    case 0:
      line.insert(pick(rng, line.size() + 1), "\"");
      break;  // unbalanced quote
    case 1:
      line.insert(pick(rng, line.size() + 1), ",,,");
      break;  // extra separators
    case 2:
      line.insert(pick(rng, line.size() + 1), std::string(1 << (10 + pick(rng, 11)), 'x'));
      break;  // huge field
    case 3:
      line.insert(pick(rng, line.size() + 1), "\"a\nb\"");
      break;  // newline inside quotes
    case 4:
      lines.erase(lines.begin());
      break;  // header lost
    case 5:
      for (int i = 0; i < 200; ++i) lines.push_back(lines.back());
      break;  // many duplicated rows
    case 6:
      line = std::string(line.size() / 2 + 1, ',');
      break;   // only separators
    case 7: {  // numbers replaced by junk a parser must reject or read
      static const char* junk[] = {"nan", "1e999", "-", "inf", "0x10", "1,5", "\"\"", "-1e-999"};
      size_t q = line.find("\",\"");
      if (q != std::string::npos) line.insert(q + 3, junk[pick(rng, std::size(junk))]);
      break;
    }
    case 8:
      line += std::string(500, ';') + "\t\t";
      break;  // other separators
    case 9:
      lines.front().insert(0, "\xef\xbb\xbf");
      break;  // BOM
    case 10:
      line = poison_text(rng, line, pick(rng, 2));
      break;    // bad UTF-8 / control chars
    default: {  // a thousand columns
      std::string wide;
      for (int i = 0; i < 1000; ++i) wide += "\"c" + std::to_string(i) + "\",";
      line += wide;
    }
  }
  std::string out;
  for (const auto& l : lines) out += l + (pick(rng, 20) == 0 ? "\r\n" : "\n");
  return pick(rng, 4) == 0 ? truncate(rng, out) : out;
}

std::string mutate(const std::string& seed, const Framed& framed, bool csv, Rng& rng) {
  if (csv) {
    switch (pick(rng, 4)) {
      case 0:
        return truncate(rng, seed);
      case 1:
        return flip_bytes(rng, seed);
      default:
        return csv_chaos(rng, seed);
    }
  }
  size_t kinds = framed.ok ? 11 : 5;
  switch (pick(rng, kinds)) {
    case 0:
      return truncate(rng, seed);
    case 1:
      return flip_bytes(rng, seed);
    case 2:
      return poison_text(rng, seed, false);
    case 3:
      return poison_text(rng, seed, true);
    case 4:
      return damage_elf(rng, seed);
    case 5:
      return flip_length(rng, framed.raw);
    case 6:
      return mutate_header(rng, framed.raw, 0);
    case 7:
      return mutate_header(rng, framed.raw, 1);
    case 8:
      return mutate_header(rng, framed.raw, 2);
    case 9:
      return bad_string_ids(rng, framed.raw);
    default:
      return damage_elf(rng, seed);
  }
}

// ------------------------------------------------------------------ runner --

struct RunResult {
  int rc = -1;  // exit status, or -signal, or -1000 on timeout
  double seconds = 0;
  long max_rss_kb = 0;
  std::string out;
};

// The environment of every keet run: this process's, and for an ASan keet
// (which an address-space limit would stop before main) ASAN_OPTIONS with the
// same memory cap as ASan's hard_rss_limit_mb.
struct ChildEnv {
  bool address_space_cap = true;
  std::vector<std::string> vars;
};

ChildEnv child_env() {
  ChildEnv e;
  e.address_space_cap = !keet_is_sanitized();
  for (char** v = environ; *v; ++v)
    if (e.address_space_cap || std::string_view(*v).rfind("ASAN_OPTIONS=", 0) != 0) e.vars.emplace_back(*v);
  if (!e.address_space_cap) e.vars.push_back("ASAN_OPTIONS=" + asan_options_capped(kMemoryLimit >> 20));
  return e;
}

// fork/exec of keet with stdout to `out_path`, stderr discarded, under
// RLIMIT_AS (or ASan's RSS cap); killed (process group) past the wall limit.
RunResult run_limited(const std::vector<std::string>& args, const std::string& out_path, const ChildEnv& env) {
  RunResult r;
  // Everything the child needs is made before fork: the parent has threads.
  std::vector<char*> argv, envp;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (const auto& v : env.vars) envp.push_back(const_cast<char*>(v.c_str()));
  envp.push_back(nullptr);
  auto start = std::chrono::steady_clock::now();
  pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    if (env.address_space_cap) {
      rlimit mem{kMemoryLimit, kMemoryLimit};
      setrlimit(RLIMIT_AS, &mem);
    }
    int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int null = open("/dev/null", O_RDWR);
    dup2(out, 1);
    dup2(null, 2);
    dup2(null, 0);
    execve(argv[0], argv.data(), envp.data());
    _exit(127);
  }
  int status = 0;
  rusage usage{};
  bool timed_out = false;
  for (;;) {
    pid_t done = wait4(pid, &status, WNOHANG, &usage);
    if (done == pid) break;
    if (std::chrono::steady_clock::now() - start > kWallLimit && !timed_out) {
      timed_out = true;
      kill(-pid, SIGKILL);
      kill(pid, SIGKILL);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.max_rss_kb = usage.ru_maxrss;
  if (timed_out)
    r.rc = -1000;
  else if (WIFSIGNALED(status))
    r.rc = -WTERMSIG(status);
  else
    r.rc = WEXITSTATUS(status);
  r.out = read_file(out_path);
  return r;
}

std::string fmt_what(const std::string& seed, size_t mutant, const std::string& command) {
  return "mutant " + std::to_string(mutant) + " of " + seed + ", keet " + command;
}

struct Seed {
  std::string name;
  std::string bytes;
  bool csv = false;
  Framed framed;
};

Seed make_seed(std::string name, std::string bytes) {
  Seed s;
  s.csv = bytes.compare(0, 4, std::string("NVR\0", 4)) != 0;
  s.framed = s.csv ? Framed{} : frame(bytes);
  s.name = std::move(name);
  s.bytes = std::move(bytes);
  return s;
}

// The writer's report: two kernels, a device name, enough metrics for findings.
std::string writer_report() {
  ReportWriter w;
  ReportWriter::Block b;
  for (int i = 0; i < 2; ++i) {
    auto k = w.kernel("void kernel_" + std::to_string(i) + "<float>(float*, int)", 64 << i, 256,
                      {{"gpu__time_duration.sum", 1000.0 * (i + 1)},
                       {"dram__throughput.avg.pct_of_peak_sustained_elapsed", 85},
                       {"sm__throughput.avg.pct_of_peak_sustained_elapsed", 20},
                       {"launch__grid_size", double(64 << i)},
                       {"launch__block_size", 256},
                       {"device__attribute_compute_capability_major", 8},
                       {"device__attribute_compute_capability_minor", 6}});
    auto* dev = k.add_metric_results();
    dev->set_name_id(w.name_id("device__attribute_display_name"));
    dev->mutable_value()->set_string_value("Test GPU");
    b.results.push_back(k.SerializeAsString());
  }
  w.flush_strings(b);
  w.add(b);
  return w.bytes();
}

std::vector<Seed> seeds() {
  std::vector<Seed> out;
  std::string rep = temp_path("mutation_seed.ncu-rep");
  write_file(rep, writer_report());
  out.push_back(make_seed("writer.ncu-rep", read_file(rep)));
  auto csv = run_keet("export --format csv " + shell_quote(rep));
  if (csv.rc == 0) out.push_back(make_seed("writer-export.csv", csv.out));
  if (auto shared = shared_dir()) {
    // The smallest real reports (binary, old .nsight-cuprof-report) and CSVs
    // (ncu's and nvprof's): the mutants stay quick to read.
    std::vector<std::pair<uintmax_t, fs::path>> reports, csvs;
    for (const auto& e : fs::recursive_directory_iterator(*shared + "/fixtures/public")) {
      if (!e.is_regular_file()) continue;
      auto ext = e.path().extension();
      if (ext == ".csv")
        csvs.emplace_back(e.file_size(), e.path());
      else if (ext == ".ncu-rep" || ext == ".nsight-cuprof-report")
        reports.emplace_back(e.file_size(), e.path());
    }
    std::sort(reports.begin(), reports.end());
    std::sort(csvs.begin(), csvs.end());
    for (size_t i = 0; i < std::min<size_t>(6, reports.size()); ++i)
      out.push_back(
          make_seed(reports[i].second.lexically_relative(*shared + "/fixtures/public"), read_file(reports[i].second)));
    for (size_t i = 0; i < std::min<size_t>(4, csvs.size()); ++i)
      out.push_back(
          make_seed(csvs[i].second.lexically_relative(*shared + "/fixtures/public"), read_file(csvs[i].second)));
  }
  return out;
}

TEST(MutationE2E, EveryMutantEndsWithADocumentedExitCodeInBoundedTimeAndMemory) {
  auto all = seeds();
  ASSERT_FALSE(all.empty());
  if (!shared_dir()) std::cout << "[ mutation ] ../shared is absent: mutating the writer's report and its CSV only\n";
  const std::string keet = keet_binary();
  const ChildEnv env = child_env();
  const std::string dir = temp_path("mutants");
  fs::remove_all(dir);
  fs::create_directories(dir);

  std::atomic<size_t> next{0}, commands{0}, framed_mutants{0}, refused{0};
  std::mutex mu;
  std::vector<std::string> failures;
  double worst_seconds = 0;
  long worst_rss_kb = 0;
  std::string worst_seconds_what, worst_rss_what;
  const size_t per_seed = mutants_per_seed();
  const size_t total = all.size() * per_seed;

  auto worker = [&](int id) {
    for (size_t n; (n = next++) < total;) {
      const Seed& seed = all[n / per_seed];
      size_t i = n % per_seed;
      std::seed_seq sq{kSeed, uint64_t(n / per_seed), uint64_t(i)};
      Rng rng(sq);
      std::string bytes = mutate(seed.bytes, seed.framed, seed.csv, rng);
      if (seed.framed.ok) ++framed_mutants;
      std::string file = dir + "/m" + std::to_string(id) + (seed.csv ? ".csv" : ".ncu-rep");
      std::string out = dir + "/o" + std::to_string(id);
      write_file(file, bytes);
      std::vector<std::vector<std::string>> cmds = {{keet, "list", file},
                                                    {keet, "analyze", "--format", "json", file},
                                                    {keet, "export", "--format", "csv", file},
                                                    {keet, "metrics", file}};
      for (const auto& c : cmds) {
        RunResult r = run_limited(c, out, env);
        ++commands;
        if (r.rc == 2) ++refused;
        std::string what = fmt_what(seed.name, i, c[1]);
        std::lock_guard lock(mu);
        if (r.seconds > worst_seconds) worst_seconds = r.seconds, worst_seconds_what = what;
        if (r.max_rss_kb > worst_rss_kb) worst_rss_kb = r.max_rss_kb, worst_rss_what = what;
        if (r.rc != 0 && r.rc != 2)
          failures.push_back(what + (r.rc == -1000 ? ": timed out"
                                     : r.rc < 0    ? ": signal " + std::to_string(-r.rc)
                                                   : ": exit " + std::to_string(r.rc)));
        else if (r.rc == 0 && c[1] == "analyze" && !nlohmann::json::accept(r.out))
          failures.push_back(what + ": exit 0 with invalid JSON");
      }
    }
  };
  std::thread a(worker, 0), b(worker, 1);
  a.join();
  b.join();

  std::cout << "[ mutation ] " << total << " mutants of " << all.size() << " seeds (" << framed_mutants
            << " of framed binary reports), " << commands << " commands (" << refused
            << " refused with exit 2); worst time " << worst_seconds << " s (" << worst_seconds_what
            << "), worst max RSS " << worst_rss_kb / 1024 << " MiB (" << worst_rss_what << ")\n";
  std::string listed;
  for (size_t i = 0; i < std::min<size_t>(failures.size(), 10); ++i) listed += "\n  " + failures[i];
  EXPECT_TRUE(failures.empty()) << failures.size() << " failing runs (mutants rebuild from seed " << kSeed
                                << " and their index):" << listed;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace keet
