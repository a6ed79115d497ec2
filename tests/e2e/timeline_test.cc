// End-to-end: `keet timeline` on every Nsight Systems fixture against the
// oracle's `nsys stats --report cuda_gpu_kern_sum` (per-kernel totals and
// launch counts exact), reports nsys refuses, no nsys at all, damaged
// exports; the keet.timeline/1 contract; `analyze --timeline` on the fixture
// pair with both report kinds and on test-made timelines where the profiled
// kernel is and is not the hot one; `profile --nsys` with stand-in tools.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include "support/report_writer.h"
#include "support/testing.h"
#include "support/timeline_writer.h"

namespace keet {
namespace {

namespace fs = std::filesystem;
using namespace keet::testing;
using json = nlohmann::json;

std::string nsys_fixtures() { return *shared_dir() + "/fixtures/nsys"; }
std::string oracle() { return *shared_dir() + "/tools/nsys-oracle"; }

std::vector<std::string> manifest_paths() {
  std::ifstream in(nsys_fixtures() + "/MANIFEST.tsv");
  std::vector<std::string> paths;
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    auto path = line.substr(0, line.find('\t'));
    if (path.ends_with(".nsys-rep") || path.ends_with(".qdrep") || path.ends_with(".sqlite"))
      paths.push_back(nsys_fixtures() + "/" + path);
  }
  return paths;
}

struct Totals {
  int64_t total = 0;
  uint64_t launches = 0;
  bool operator==(const Totals&) const = default;
};

// What nsys stats says of one export: name -> (Total Time, Instances or
// Num Calls or Count) for kernels (cuda_gpu_kern_sum), CUDA API functions
// (cuda_api_sum) and memory operations (cuda_gpu_mem_time_sum), from one run.
struct OracleStats {
  std::map<std::string, Totals> kernels, api, memory;
  std::string why_no_kernels;  // the oracle's reason when it has no kernel table
};

// nsys stats strips the runtime's version suffix only when it has four
// digits ("_v3020"); KEET strips any of four or more ("_v12000").
std::string without_version(std::string name) {
  auto v = name.rfind("_v");
  if (v != std::string::npos && name.size() - v >= 6 &&
      name.find_first_not_of("0123456789", v + 2) == std::string::npos)
    name.resize(v);
  return name;
}

OracleStats oracle_stats(const std::string& sqlite) {
  auto r = run_command(shell_quote(oracle()) +
                       " stats --report cuda_gpu_kern_sum --report cuda_api_sum --report cuda_gpu_mem_time_sum "
                       "--format csv -o - " +
                       shell_quote(sqlite) + " 2>&1");
  OracleStats out;
  std::map<std::string, Totals>* table = nullptr;
  bool kernel_header = false;
  std::istringstream in(r.out);
  std::string line;
  while (std::getline(in, line)) {
    if (line.starts_with("Processing [")) {
      table = line.find("cuda_gpu_kern_sum") != std::string::npos ? &out.kernels
              : line.find("cuda_api_sum") != std::string::npos    ? &out.api
                                                                  : &out.memory;
      continue;
    }
    if (line.starts_with("Time (%)")) {
      kernel_header |= table == &out.kernels;
      continue;
    }
    if (line.find("does not contain") != std::string::npos && table == &out.kernels) out.why_no_kernels = line;
    auto c = csv_cells(line);
    if (!table || c.size() < 9 || c[1].empty() || !std::isdigit(static_cast<unsigned char>(c[1][0]))) continue;
    auto name = table == &out.api ? without_version(c[8]) : c[8];
    auto& t = (*table)[name];
    t.total += std::stoll(c[1]);
    t.launches += std::stoull(c[2]);
  }
  if (!kernel_header && out.why_no_kernels.empty())
    out.why_no_kernels = "oracle gave no table: " + r.out.substr(0, 300);
  return out;
}

std::map<std::string, Totals> keet_kernels(const json& doc) {
  std::map<std::string, Totals> out;
  for (const auto& k : doc["kernels"])
    out[k["name"].get<std::string>()] = {k["total_ns"].get<int64_t>(), k["launches"].get<uint64_t>()};
  return out;
}

// The oracle's SQLite export of a report, kept between runs (it is a pure
// function of the fixture and the oracle's version).
std::string oracle_export(const std::string& report, std::string* refused) {
  fs::path cache = fs::temp_directory_path() / "keet-nsys-oracle-exports";
  fs::create_directories(cache);
  std::string key = report.substr(nsys_fixtures().size() + 1);
  for (char& c : key)
    if (c == '/' || c == ' ') c = '_';
  std::string out = (cache / (key + ".sqlite")).string();
  if (fs::exists(out)) return out;
  std::string partial = out + "." + std::to_string(getpid()) + ".partial.sqlite";  // tests run side by side
  auto r = run_command(shell_quote(oracle()) + " export --type sqlite --force-overwrite true -o " +
                       shell_quote(partial) + " " + shell_quote(report));
  std::string said = r.out + r.err;  // nsys writes its refusal on stderr
  if (said.find("newer than your current version") != std::string::npos) {
    *refused = said;
    return "";
  }
  if (!fs::exists(partial)) {
    *refused = "oracle export failed: " + said.substr(0, 300);
    return "";
  }
  fs::rename(partial, out);
  return out;
}

std::string last_line(const std::string& s) {
  auto end = s.find_last_not_of('\n');
  if (end == std::string::npos) return "";
  auto start = s.rfind('\n', end);
  return s.substr(start == std::string::npos ? 0 : start + 1, end - (start == std::string::npos ? 0 : start + 1) + 1);
}

TEST(TimelineFixtures, EveryFixtureReadsAndAgreesWithNsysStats) {
  KEET_REQUIRE_SHARED();
  auto paths = manifest_paths();
  ASSERT_GE(paths.size(), 30u);
  size_t read = 0, refused = 0, kernels = 0, launches = 0, api_functions = 0;
  for (const auto& f : paths) {
    SCOPED_TRACE(f);
    std::string sqlite = f, why_refused;
    if (!f.ends_with(".sqlite")) sqlite = oracle_export(f, &why_refused);
    if (sqlite.empty()) {
      ASSERT_NE(why_refused.find("newer than your current version"), std::string::npos) << why_refused;
      auto r = run_keet("timeline --nsys " + shell_quote(oracle()) + " " + shell_quote(f));
      auto beside = fs::path(f).replace_extension(".sqlite");
      if (fs::exists(beside)) {  // the author's own export: keet reads it and needs no nsys
        EXPECT_EQ(r.rc, 0) << r.err;
        EXPECT_NE(r.err.find("the export beside the report"), std::string::npos) << r.err;
        ++refused;
        continue;
      }
      // keet says so in one line, with the command to run with a newer nsys.
      EXPECT_EQ(r.rc, 3) << r.err;
      auto line = last_line(r.err);
      EXPECT_NE(line.find("newer than"), std::string::npos) << r.err;
      EXPECT_NE(line.find("nsys export --type sqlite -o"), std::string::npos) << r.err;
      ++refused;
      continue;
    }
    auto r = run_keet("timeline --format json " + shell_quote(sqlite));
    ASSERT_EQ(r.rc, 0) << r.err;
    auto doc = json::parse(r.out);
    auto stats = oracle_stats(sqlite);
    const auto& want = stats.kernels;
    auto got = keet_kernels(doc);
    // The CUDA API table and the memory operations agree with cuda_api_sum and cuda_gpu_mem_time_sum.
    std::map<std::string, Totals> api, memory;
    for (const auto& a : doc["api_calls"])
      api[a["name"].get<std::string>()] = {a["total_ns"].get<int64_t>(), a["count"].get<uint64_t>()};
    for (const auto& m : doc["memory"]) {
      auto d = m["direction"].get<std::string>();
      memory[d == "memset" ? "[CUDA memset]" : "[CUDA memcpy " + d + "]"] = {m["total_ns"].get<int64_t>(),
                                                                             m["count"].get<uint64_t>()};
    }
    EXPECT_EQ(api, stats.api);
    EXPECT_EQ(memory, stats.memory);
    api_functions += api.size();
    if (want.empty()) {  // no kernel table: the oracle skips it, keet lists the table as absent
      const auto& why_empty = stats.why_no_kernels;
      EXPECT_NE(why_empty.find("does not contain CUDA kernel data"), std::string::npos) << why_empty;
      auto absent = doc["absent_tables"].get<std::vector<std::string>>();
      EXPECT_NE(std::ranges::find(absent, "CUPTI_ACTIVITY_KIND_KERNEL"), absent.end());
    }
    EXPECT_EQ(got, want);
    uint64_t n = 0;
    for (const auto& [name, t] : got) n += t.launches;
    EXPECT_EQ(doc["launches"].get<uint64_t>(), n);
    ++read;
    kernels += got.size();
    launches += n;
  }
  std::cout << "[ nsys    ] " << read << " timelines agree with nsys stats cuda_gpu_kern_sum (" << kernels
            << " kernel names, " << launches << " launches), cuda_api_sum (" << api_functions
            << " API functions) and cuda_gpu_mem_time_sum; " << refused << " reports refused by nsys 2023.4\n";
  EXPECT_EQ(read + refused, paths.size());
}

// GPU busy is the union of every kernel, copy and memset: on a PyTorch run of
// 1,000 kernels that fill the GPU (profiler flushes between them), within 1%
// of the union of the operations nsys stats cuda_gpu_trace lists.
TEST(TimelineFixtures, GpuBusyIsTheUnionOfTheOperationsNsysLists) {
  KEET_REQUIRE_SHARED();
  std::string refused;
  auto sqlite = oracle_export(nsys_fixtures() + "/zasdfgbnm-dumpster__tensoriterator/report1.qdrep", &refused);
  ASSERT_FALSE(sqlite.empty()) << refused;
  auto trace = run_command(shell_quote(oracle()) + " stats --report cuda_gpu_trace --format csv -o - " +
                           shell_quote(sqlite) + " 2>&1");
  std::vector<std::pair<int64_t, int64_t>> ops;
  std::istringstream in(trace.out);
  std::string line;
  while (std::getline(in, line)) {
    auto c = csv_cells(line);
    if (c.size() < 2 || c[0].empty() || !std::isdigit(static_cast<unsigned char>(c[0][0]))) continue;
    ops.emplace_back(std::stoll(c[0]), std::stoll(c[0]) + std::stoll(c[1]));
  }
  ASSERT_GT(ops.size(), 1000u);
  std::ranges::sort(ops);
  int64_t busy = 0, end = 0;
  for (auto [s, e] : ops) {
    busy += std::max<int64_t>(0, e - std::max(s, end));
    end = std::max(end, e);
  }
  auto r = run_keet("timeline --format json " + shell_quote(sqlite));
  ASSERT_EQ(r.rc, 0) << r.err;
  auto doc = json::parse(r.out);
  EXPECT_NEAR(doc["gpu_busy_ns"].get<double>(), static_cast<double>(busy), 0.01 * static_cast<double>(busy));
  EXPECT_GT(doc["gpu_busy_ns"].get<double>(), 0.8 * doc["gpu_time_ns"].get<double>());  // never "2.8%" again
}

// The header names the GPUs that ran something and the nsys that exported
// the file; on a terminal a 700-character PyTorch kernel name loses its
// template arguments, in a pipe it stays whole.
TEST(TimelineFixtures, HeaderAndNamesAsANewcomerReadsThem) {
  KEET_REQUIRE_SHARED();
  std::string refused;
  auto rodinia = oracle_export(nsys_fixtures() + "/kmcho2019__Rodinia_3.1_Gaussian/report2.nsys-rep", &refused);
  ASSERT_FALSE(rodinia.empty()) << refused;
  auto r = run_keet("timeline " + shell_quote(rodinia));
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("(exported by nsys 2023.4"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("GPU 0: NVIDIA GeForce RTX 3090\n(6 more GPU(s) in the machine ran nothing of this run)\n"),
            std::string::npos)
      << r.out;
  auto fusion = oracle_export(nsys_fixtures() + "/Young768__profiling_/fusion.nsys-rep", &refused);
  ASSERT_FALSE(fusion.empty()) << refused;
  auto piped = run_command("env -u COLUMNS " + shell_quote(keet_binary()) + " timeline " + shell_quote(fusion));
  auto terminal = run_command("COLUMNS=120 " + shell_quote(keet_binary()) + " timeline " + shell_quote(fusion));
  ASSERT_EQ(terminal.rc, 0) << terminal.err;
  const std::string whole = "void at::native::<unnamed>::distribution_elementwise_grid_stride_kernel<float, (int)4, ";
  EXPECT_NE(piped.out.find(whole), std::string::npos) << piped.out;
  EXPECT_EQ(terminal.out.find(whole), std::string::npos) << terminal.out;
  EXPECT_NE(terminal.out.find("distribution_elementwise_grid_stride_kernel<...>("), std::string::npos) << terminal.out;
}

// The rows `nsys analyze` lists for each of its six CUDA rules (rows=-1:
// all of them), by rule; a rule nsys skips (its table is absent) lists none.
std::map<std::string, json> nsys_analyze(const std::string& sqlite, const fs::path& dir) {
  static const char* kRules[] = {"cuda_memcpy_sync", "cuda_memcpy_async", "cuda_memset_sync",
                                 "cuda_api_sync",    "gpu_gaps",          "gpu_time_util"};
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::string cmd = shell_quote(oracle()) + " analyze";
  for (const char* r : kRules) cmd += fmt::format(" -r {}:rows=-1", r);
  run_command(cmd + " -f json -o " + shell_quote((dir / "a").string()) + " " + shell_quote(sqlite) + " 2>&1");
  std::map<std::string, json> out;
  for (const char* r : kRules) {
    out[r] = json::array();
    std::ifstream in(dir / fmt::format("a_{}_rows=-1.json", r));
    std::stringstream text;
    text << in.rdbuf();
    if (auto doc = json::parse(text.str(), nullptr, false); doc.is_array()) out[r] = doc;
  }
  return out;
}

// Every row NVIDIA's rules list is an operation of the same check in keet's
// JSON (same start and duration; a utilisation stretch with the same use),
// and the check either raised a verdict or says why it stays quiet.
TEST(TimelineFixtures, EveryProblemNsysAnalyzeFindsKeetFindsToo) {
  KEET_REQUIRE_SHARED();
  size_t files = 0, rows = 0, verdicts = 0;
  std::map<std::string, size_t> per_rule;
  for (const auto& f : manifest_paths()) {
    SCOPED_TRACE(f);
    std::string sqlite = f, refused;
    if (!f.ends_with(".sqlite")) sqlite = oracle_export(f, &refused);
    if (sqlite.empty()) continue;  // nsys 2023.4 cannot read it (the test above checks keet says so)
    auto nvidia = nsys_analyze(sqlite, fs::path(temp_path("nsys-analyze")));
    auto r = run_keet("timeline --format json " + shell_quote(sqlite));
    ASSERT_EQ(r.rc, 0) << r.err;
    auto doc = json::parse(r.out);
    ++files;
    verdicts += doc["verdicts"].size();
    for (const auto& check : doc["checks"]) {
      if (check["nsys_rule"].is_null()) continue;  // KEET's own check: nsys has no rule to compare
      std::string rule = check["nsys_rule"];
      const auto& want = nvidia[rule];
      if (want.empty()) continue;
      EXPECT_GE(check["count"].get<size_t>(), 1u) << rule;
      EXPECT_TRUE(!check["verdict"].is_null() || !check["quiet"].is_null()) << rule << ": neither verdict nor reason";
      for (const auto& row : want) {
        auto number = [](const json& j) { return j.is_number() ? j.get<double>() : -1.0; };
        double start = number(row["Start (ns)"]), duration = number(row["Duration (ns)"]);
        auto same = [&](const json& op) {
          if (number(op["start_ns"]) != start || number(op["duration_ns"]) != duration) return false;
          if (rule != "gpu_time_util") return true;
          return std::abs(number(op["in_use_pct"]) - number(row["In-Use (%)"])) < 0.051;
        };
        const auto& ops = check["operations"];
        EXPECT_TRUE(std::ranges::any_of(ops, same)) << rule << " row " << row.dump() << " not in keet's check";
        ++rows;
        ++per_rule[rule];
      }
    }
  }
  std::cout << "[ nsys    ] " << files << " exports: keet lists all " << rows << " rows of nsys analyze (";
  for (const auto& [rule, n] : per_rule) std::cout << rule << " " << n << ", ";
  std::cout << "), " << verdicts << " verdicts\n";
  EXPECT_GE(files, 20u);
  EXPECT_GE(per_rule.size(), 5u);  // the fixtures exercise all but cuda_memset_sync
}

std::vector<std::string> names_in(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) out.push_back(e.path().filename().string());
  std::ranges::sort(out);
  return out;
}

// The report sits in a folder keet may not write (as ../shared is meant to
// be): the export goes to keet's cache, named by the report's bytes, and the
// next run reads it there with no nsys at all.
TEST(TimelineCli, ReportIsExportedIntoTheCacheNeverBesideIt) {
  KEET_REQUIRE_SHARED();
  std::string folder = temp_path("read-only-reports");
  std::error_code ec;  // a run stopped midway left it read-only
  fs::permissions(folder, fs::perms::owner_all, fs::perm_options::add, ec);
  fs::remove_all(folder);
  fs::create_directories(folder);
  std::string report = folder + "/lianhang-report1.nsys-rep";
  fs::copy_file(nsys_fixtures() + "/Lianhang666__gpu3/report1.nsys-rep", report);
  fs::permissions(folder, fs::perms::owner_read | fs::perms::owner_exec);
  std::string cache = temp_path("keet-cache");
  fs::remove_all(cache);
  std::string keet = "env XDG_CACHE_HOME=" + shell_quote(cache) + " " + shell_quote(keet_binary());
  auto r = run_command(keet + " timeline --format json --nsys " + shell_quote(oracle()) + " " + shell_quote(report));
  ASSERT_EQ(r.rc, 0) << r.err;
  auto doc = json::parse(r.out);
  EXPECT_EQ(doc["timeline"], report);
  ASSERT_EQ(doc["kernels"].size(), 2u);
  EXPECT_EQ(doc["kernels"][0]["short_name"], "histogram_kernel");
  EXPECT_EQ(doc["export_schema"], "META_DATA_EXPORT");
  EXPECT_NE(r.err.find("export --type sqlite"), std::string::npos) << r.err;
  EXPECT_EQ(names_in(folder), std::vector<std::string>{"lianhang-report1.nsys-rep"});
  auto kept = names_in(cache + "/keet/nsys");
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_TRUE(kept[0].ends_with(".sqlite") && kept[0].find("partial") == std::string::npos) << kept[0];
  auto again = run_command(keet + " timeline --format json --nsys /nonexistent/nsys " + shell_quote(report));
  EXPECT_EQ(again.rc, 0) << again.err;
  EXPECT_NE(again.err.find("the export made before"), std::string::npos) << again.err;
  EXPECT_EQ(again.out, r.out);
  fs::permissions(folder, fs::perms::owner_all);
}

// --export-dir names the folder; an nsys that writes nothing leaves no
// half-made export behind and exits 3 with its status.
TEST(TimelineCli, ExportDirAndAFailedExport) {
  std::string folder = temp_path("export-dir-case");
  fs::remove_all(folder);
  fs::create_directories(folder);
  std::string report = folder + "/run.nsys-rep";
  std::ofstream(report) << "NVIDIA Tegra Profiler Report 2023@4@4@54-3332\n\x0b" << std::string(64, 'x');
  std::string made = folder + "/made.sqlite";
  TimelineWriter w;
  w.kernel({"k(int)", "k", 0, 50});
  w.write(made);
  // A stand-in nsys: "export --type sqlite --force-overwrite true -o OUT REPORT" copies `made` to OUT.
  std::string nsys = folder + "/nsys";
  std::ofstream(nsys) << "#!/bin/sh\ncp " << shell_quote(made) << " \"$7\"\n";
  fs::permissions(nsys, fs::perms::owner_all);
  std::string exports = folder + "/exports";
  auto r = run_keet("timeline --format json --export-dir " + shell_quote(exports) + " --nsys " + shell_quote(nsys) +
                    " " + shell_quote(report));
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(json::parse(r.out)["kernels"][0]["short_name"], "k");
  ASSERT_EQ(names_in(exports).size(), 1u);
  EXPECT_EQ(names_in(folder), (std::vector<std::string>{"exports", "made.sqlite", "nsys", "run.nsys-rep"}));

  // A kept export that no longer reads (the disk filled up while nsys wrote
  // it) is an error naming the report, and goes: the next run exports again.
  std::string kept = exports + "/" + names_in(exports)[0];
  std::ofstream(kept, std::ios::binary | std::ios::trunc)
      << std::string("SQLite format 3\0", 16) << std::string(300, 'z');
  auto damaged = run_keet("timeline --export-dir " + shell_quote(exports) + " --nsys " + shell_quote(nsys) + " " +
                          shell_quote(report));
  EXPECT_EQ(damaged.rc, 2) << damaged.err;
  EXPECT_TRUE(names_in(exports).empty());
  EXPECT_EQ(run_keet("timeline --export-dir " + shell_quote(exports) + " --nsys " + shell_quote(nsys) + " " +
                     shell_quote(report))
                .rc,
            0);

  std::ofstream(nsys) << "#!/bin/sh\necho half > \"$7\"\necho 'nsys: cannot export' >&2\nexit 4\n";
  std::ofstream(report, std::ios::app) << "changed";  // other bytes: not the export made before
  auto failed = run_keet("timeline --export-dir " + shell_quote(exports) + " --nsys " + shell_quote(nsys) + " " +
                         shell_quote(report));
  EXPECT_EQ(failed.rc, 3) << failed.err;
  EXPECT_NE(failed.err.find("exited with status 4"), std::string::npos) << failed.err;
  EXPECT_EQ(names_in(exports).size(), 1u);  // nothing half-made was left
  auto unwritable = run_keet("timeline --export-dir /proc/keet-cannot-be-here --nsys " + shell_quote(nsys) + " " +
                             shell_quote(report));
  EXPECT_EQ(unwritable.rc, 2) << unwritable.err;
  EXPECT_NE(unwritable.err.find("--export-dir /proc/keet-cannot-be-here"), std::string::npos) << unwritable.err;
}

TEST(TimelineCli, OldSchemaExportReadsAsWritten) {
  KEET_REQUIRE_SHARED();
  auto r = run_keet("timeline --format json " + shell_quote(nsys_fixtures() + "/Lianhang666__gpu3/report2.sqlite"));
  ASSERT_EQ(r.rc, 0) << r.err;
  auto doc = json::parse(r.out);
  EXPECT_EQ(doc["export_schema"], "EXPORT_META_DATA");
  EXPECT_EQ(doc["nsys_version"], "2022.4.2.1");
}

TEST(TimelineCli, WithoutNsysTheErrorNamesTheCommand) {
  auto report = temp_path("new.nsys-rep");
  std::ofstream(report) << "NVIDIA Tegra Profiler Report 2026@1@3@425-261338342291v0.\n\x0b" << std::string(64, 'x');
  auto r =
      run_command("env -u NSYS PATH=/nonexistent " + shell_quote(keet_binary()) + " timeline " + shell_quote(report));
  EXPECT_EQ(r.rc, 3) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find("nsys 2026.1.3.425"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("nsys export --type sqlite -o " + fs::path(report).replace_extension(".sqlite").string()),
            std::string::npos)
      << r.err;
}

TEST(TimelineCli, DamagedExportsExitTwoWithOneLine) {
  TimelineWriter w;
  for (int i = 0; i < 200; ++i) w.kernel({"k(int)", "k", i * 100, i * 100 + 50});
  auto whole = temp_path("whole-e2e.sqlite");
  w.write(whole);
  std::ifstream in(whole, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::pair<std::string, std::string>> cases = {
      {"truncated", bytes.substr(0, bytes.size() - 4096)},
      {"header only", bytes.substr(0, 100)},
      {"zeroed pages", bytes.substr(0, 4096) + std::string(bytes.size() - 4096, '\0')},
      {"not sqlite", "hello, world"},
  };
  std::string flipped = bytes;
  for (size_t i = 4096; i < flipped.size(); i += 7) flipped[i] = static_cast<char>(flipped[i] ^ 0xff);
  cases.emplace_back("flipped bytes", flipped);
  for (const auto& [what, data] : cases) {
    auto path = temp_path("damaged-e2e.sqlite");
    std::ofstream(path, std::ios::binary | std::ios::trunc) << data;
    auto r = run_keet("timeline " + shell_quote(path));
    EXPECT_EQ(r.rc, 2) << what << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << what << ": " << r.err;
    EXPECT_TRUE(r.err.starts_with("keet: ")) << what << ": " << r.err;
  }
}

TEST(TimelineCli, TextAndHtmlShowTheRun) {
  TimelineWriter w;
  for (int i = 0; i < 20; ++i)
    w.kernel({"step(float *)", "step", i * 1000, i * 1000 + 400 + 20 * i, 0, 7, 64, 128, i * 1000 - 100});
  w.memcpy(1, 0, 10, 1 << 20);
  w.nvtx("epoch", 0, 20'000);
  auto path = temp_path("show.sqlite");
  w.write(path);
  auto text = run_keet("timeline " + shell_quote(path));
  ASSERT_EQ(text.rc, 0) << text.err;
  EXPECT_NE(text.out.find("step(float *)"), std::string::npos);
  EXPECT_NE(text.out.find("Host-to-Device: 1 operations"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("epoch: 1 ranges"), std::string::npos) << text.out;
  EXPECT_NE(
      text.out.find("Launch latency (runtime API call, or the end of earlier work on its stream, to kernel start; 20 "
                    "launches)"),
      std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("step(float *): 20 launches, first quarter mean"), std::string::npos) << text.out;  // drifts
  auto html = run_keet("timeline --format html " + shell_quote(path));
  ASSERT_EQ(html.rc, 0);
  EXPECT_NE(html.out.find("<svg class='timeline'"), std::string::npos);
  EXPECT_EQ(html.out.find("<script"), std::string::npos);
}

ProcessResult validate(const std::string& schema, const std::string& text, const std::string& name) {
  auto path = temp_path(name);
  std::ofstream(path) << text;
  return run_command(shell_quote(source_dir() + "/scripts/validate-json") + " " +
                     shell_quote(source_dir() + "/schemas/" + schema + ".schema.json") + " " + shell_quote(path));
}

// A two-GPU training run as the tests write it: device 1 waits in its
// all-reduce while device 0 computes; 3,000 cudaMalloc calls in the loop; a
// one-time NVRTC compilation that opens an 800 ms gap.
std::string multi_gpu_run(const std::string& name) {
  constexpr int64_t kMs = 1'000'000;
  TimelineWriter w;
  const std::string allreduce = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm *, unsigned long, ncclWork *)";
  w.nvtx("executor_utils::NVRTC", 10 * kMs, 810 * kMs);
  w.kernel({"warmup()", "warmup", 1 * kMs, 2 * kMs, 0, 7});
  for (int step = 0; step < 10; ++step) {
    int64_t t = 900 * kMs + step * 10 * kMs;
    w.kernel({"gemm()", "gemm", t, t + 8 * kMs, 0, 7, 1, 32, t - 20'000});
    w.kernel({allreduce, "ncclDevKernel_AllReduce_Sum_f32_RING_LL", t + 8 * kMs, t + 9 * kMs, 0, 13});
    w.kernel({"gemm()", "gemm", t, t + 2 * kMs, 1, 7});
    w.kernel({allreduce, "ncclDevKernel_AllReduce_Sum_f32_RING_LL", t + 2 * kMs, t + 9 * kMs, 1, 13});
  }
  for (int i = 0; i < 3000; ++i)
    w.api_call("cudaMalloc_v3020", 900 * kMs + i * 30'000, 900 * kMs + i * 30'000 + 20'000);
  auto path = temp_path(name);
  w.write(path);
  return path;
}

TEST(TimelineCli, MultiGpuNcclApiChurnAndACompilationGap) {
  auto path = multi_gpu_run("multi-gpu.sqlite");
  auto r = run_keet("timeline --format json " + shell_quote(path));
  ASSERT_EQ(r.rc, 0) << r.err;
  auto doc = json::parse(r.out);
  std::vector<std::string> ids;
  for (const auto& v : doc["verdicts"]) ids.push_back(v["id"].get<std::string>());
  for (std::string want : {"nccl-exposed", "device-imbalance", "alloc-churn", "gpu-gaps"})
    EXPECT_NE(std::ranges::find(ids, want), ids.end()) << want;
  ASSERT_EQ(doc["device_use"].size(), 2u);
  EXPECT_EQ(doc["device_use"][1]["nccl_overlap_ns"], 0);
  ASSERT_EQ(doc["phases"].size(), 1u);
  EXPECT_EQ(doc["phases"][0]["what"], "compilation");
  auto text = run_keet("timeline " + shell_quote(path));
  ASSERT_EQ(text.rc, 0) << text.err;
  for (std::string want : {"Communication is exposed", "Collectives: AllReduce 20 launch(es)",
                           "inside NVTX executor_utils::NVRTC (one-time compilation)", "Calls: cudaMalloc 3000 call(s)",
                           "CUDA API calls by host time", "device 1: range"})
    EXPECT_NE(text.out.find(want), std::string::npos) << want << "\n" << text.out;
  auto v = validate("timeline", r.out, "timeline-multi-gpu.json");
  EXPECT_EQ(v.rc, 0) << v.out << v.err;
}

TEST(TimelineContracts, TimelineJsonConforms) {
  auto path = temp_path("contract.sqlite");
  TimelineWriter w;
  for (int i = 0; i < 12; ++i)
    w.kernel({"a(int)", "a", i * 100, i * 100 + 40, 0, 7, static_cast<uint64_t>(1 + i % 2), 32, i * 100 - 10});
  w.memset(0, 5, 64);
  w.nvtx("r", 0, 10);
  w.write(path);
  auto r = run_keet("timeline --format json " + shell_quote(path));
  ASSERT_EQ(r.rc, 0) << r.err;
  auto v = validate("timeline", r.out, "timeline-contract.json");
  EXPECT_EQ(v.rc, 0) << v.out << v.err;
  auto doc = json::parse(r.out);
  doc["kernels"][0]["extra"] = 1;  // the schema is closed
  EXPECT_EQ(validate("timeline", doc.dump(), "timeline-bad.json").rc, 1);
  if (!shared_dir()) return;
  for (const auto& f : manifest_paths()) {
    if (!f.ends_with(".sqlite")) continue;
    auto out = run_keet("timeline --format json " + shell_quote(f));
    ASSERT_EQ(out.rc, 0) << f << ": " << out.err;
    auto fv = validate("timeline", out.out, "timeline-fixture.json");
    EXPECT_EQ(fv.rc, 0) << f << ": " << fv.out << fv.err;
  }
}

std::string writer_report(const std::string& name) {
  std::string path = temp_path(name);
  write_file(path, scenario_and_tiny_report(120000));
  return path;
}

// A timeline of the same program where `hot` carries 90% of the GPU time.
std::string writer_timeline(const std::string& name, const std::string& hot) {
  TimelineWriter w;
  int64_t t = 0;
  auto add = [&](const std::string& k, int64_t d, int n) {
    for (int i = 0; i < n; ++i, t += d + 100) w.kernel({k + "()", k, t, t + d});
  };
  add(hot, 9000, 10);
  for (std::string other : {"strided_copy", "tiny", "hot_solver"})
    if (other != hot) add(other, 500, 10);
  std::string path = temp_path(name);
  w.write(path);
  return path;
}

TEST(TimelineJoinCli, ProfiledKernelIsTheHotOne) {
  auto report = writer_report("join-hot.ncu-rep");
  auto timeline = writer_timeline("join-hot.sqlite", "strided_copy");
  auto r = run_keet("analyze --format json " + shell_quote(report) + " --timeline " + shell_quote(timeline));
  ASSERT_EQ(r.rc, 0) << r.err;
  auto doc = json::parse(r.out);
  auto& j = doc["timeline"];
  EXPECT_FALSE(j["low_coverage"].get<bool>());
  EXPECT_NEAR(j["coverage"].get<double>(), 95000.0 / 100000.0, 1e-9);
  EXPECT_EQ(j["kernels"][0]["name"], "strided_copy()");
  EXPECT_NEAR(j["kernels"][0]["gpu_share"].get<double>(), 0.9, 1e-9);
  ASSERT_FALSE(j["kernels"][0]["gains"].empty());
  double s = j["kernels"][0]["gains"][0]["kernel_speedup"].get<double>();
  double app = j["kernels"][0]["gains"][0]["app_speedup"].get<double>();
  EXPECT_NEAR(app, 1 / (0.1 + 0.9 / s), 1e-9);
  EXPECT_EQ(r.err.find("cover"), std::string::npos) << r.err;
  // Each share names its denominator: the GPU kernel time, and the run's span (idle time included).
  EXPECT_EQ(j["gpu_time_ns"], 100000);
  ASSERT_GT(j["span_ns"].get<double>(), 0);
  double span = j["span_ns"].get<double>();
  EXPECT_NEAR(j["kernels"][0]["span_share"].get<double>(), j["kernels"][0]["total_ns"].get<double>() / span, 1e-9);
  EXPECT_NEAR(j["span_coverage"].get<double>(), j["coverage"].get<double>() * 100000 / span, 1e-9);
  auto text = run_keet("analyze " + shell_quote(report) + " --timeline " + shell_quote(timeline));
  EXPECT_NE(text.out.find("The profiled kernels carry 95.0% of the GPU kernel time (100.00 us, the sum of every "
                          "kernel's duration), "),
            std::string::npos)
      << text.out;
  // The writer's kernels overlap: 95 us of them run in 91 us of GPU-busy time.
  EXPECT_NE(text.out.find("104.4% of the GPU-busy time (91.00 us, some kernel, copy or memset running; over 100% "
                          "because kernels ran at the same time) and "),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("of the run's span ("), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("  Verdicts for the run"), std::string::npos) << text.out;
  EXPECT_EQ(j["gpu_busy_ns"], 91000);
  EXPECT_NEAR(j["busy_coverage"].get<double>(), 95000.0 / 91000, 1e-9);
  EXPECT_NEAR(j["kernels"][0]["busy_share"].get<double>(), 90000.0 / 91000, 1e-9);
  EXPECT_TRUE(j["verdicts"].is_array());
  auto v = validate("analysis", r.out, "analysis-timeline.json");
  EXPECT_EQ(v.rc, 0) << v.out << v.err;
}

// diff and gate with --timeline: the prose formats end with the changes
// weighed by the run; the documents (json) do not carry it.
TEST(TimelineJoinCli, DiffAndGateWeighTheChangesInTheirProseFormats) {
  auto report = shell_quote(writer_report("join-diff.ncu-rep"));
  auto timeline = shell_quote(writer_timeline("join-diff.sqlite", "strided_copy"));
  std::string db = "--db " + shell_quote("sqlite:" + temp_path("join-diff-history.sqlite"));
  std::filesystem::remove(temp_path("join-diff-history.sqlite"));
  ASSERT_EQ(run_keet("record " + report + " --tag main " + db).rc, 0);
  // `command` with the timeline: its output, after checking that it succeeds.
  auto output = [&](const std::string& command) {
    auto r = run_keet(command + " --timeline " + timeline);
    EXPECT_EQ(r.rc, 0) << command << ": " << r.err;
    return r.out;
  };
  const std::string diff = "diff " + report + " " + report, gate = "gate " + report + " --baseline main " + db;
  auto text = output(diff);
  EXPECT_NE(text.find("\nApplication view (timeline "), std::string::npos) << text;
  EXPECT_NE(text.find("  strided_copy(): +0.0% on a kernel with 90.0% of GPU kernel time: +0.00% of it"),
            std::string::npos)
      << text;
  auto markdown = output(diff + " --format markdown");
  EXPECT_NE(markdown.find("\n## Application view (timeline "), std::string::npos) << markdown;
  auto doc = output(diff + " --format json");
  EXPECT_EQ(doc.find("Application view"), std::string::npos);
  EXPECT_NO_THROW((void)json::parse(doc));
  auto gate_text = output(gate);
  EXPECT_NE(gate_text.find("\nApplication view (timeline "), std::string::npos) << gate_text;
  EXPECT_EQ(output(gate + " --format sarif").find("Application view"), std::string::npos);
}

TEST(TimelineJoinCli, ProfiledKernelIsNotTheHotOne) {
  auto report = writer_report("join-cold.ncu-rep");
  auto timeline = writer_timeline("join-cold.sqlite", "hot_solver");
  auto r = run_keet("analyze " + shell_quote(report) + " --timeline " + shell_quote(timeline));
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("Application view"), std::string::npos);
  EXPECT_NE(r.err.find("the profiled kernels cover 10.0% of the GPU kernel time"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("hot_solver (90.0%, 10 launches; ncu -k hot_solver --launch-skip 1 --launch-count 1)"),
            std::string::npos)
      << r.err;
  auto j = run_keet("analyze --format json " + shell_quote(report) + " --timeline " + shell_quote(timeline));
  auto doc = json::parse(j.out);
  EXPECT_TRUE(doc["timeline"]["low_coverage"].get<bool>());
  EXPECT_EQ(doc["timeline"]["not_profiled"][0]["short_name"], "hot_solver");
  auto html = run_keet("analyze --format html " + shell_quote(report) + " --timeline " + shell_quote(timeline));
  EXPECT_NE(html.out.find("Application view"), std::string::npos);
  EXPECT_NE(html.out.find("<svg class='timeline'"), std::string::npos);
}

TEST(TimelineJoinCli, Lianhang666BothReportKinds) {
  KEET_REQUIRE_SHARED();
  auto dir = nsys_fixtures() + "/Lianhang666__gpu3/";
  auto r = run_keet("analyze --format json " + shell_quote(dir + "myReport.ncu-rep") + " --timeline " +
                    shell_quote(dir + "report2.sqlite"));
  ASSERT_EQ(r.rc, 0) << r.err;
  auto doc = json::parse(r.out);
  auto& j = doc["timeline"];
  std::map<std::string, double> share;
  for (const auto& k : j["kernels"]) share[k["name"].get<std::string>()] = k["gpu_share"].get<double>();
  // report2: histogram_kernel 59,934 ns and convert_kernel 6,976 ns.
  EXPECT_NEAR(share.at("histogram_kernel(unsigned int *, unsigned int *, unsigned int, unsigned int)"),
              59934.0 / 66910.0, 1e-9);
  EXPECT_NEAR(j["coverage"].get<double>(), 1.0, 1e-9);
  EXPECT_FALSE(j["low_coverage"].get<bool>());
  EXPECT_EQ(validate("analysis", r.out, "analysis-lianhang.json").rc, 0);
}

// Stand-ins that write real fixture files: nsys records Lianhang666's
// report1 and exports it as nsys 2022.4 did (report2.sqlite); ncu writes
// myReport.ncu-rep and keeps its arguments.
void write_stand_ins(const fs::path& dir) {
  fs::create_directories(dir);
  std::string fix = nsys_fixtures() + "/Lianhang666__gpu3/";
  std::ofstream(dir / "nsys")
      << "#!/bin/sh\nsub=$1; out=\nwhile [ $# -gt 0 ]; do [ \"$1\" = -o ] && out=$2; shift; done\n"
         "case $sub in\n  profile) cp "
      << shell_quote(fix + "report1.nsys-rep")
      << " \"$out.nsys-rep\" ;;\n"
         "  export) cp "
      << shell_quote(fix + "report2.sqlite") << " \"$out\" ;;\nesac\n";
  std::ofstream(dir / "ncu") << "#!/bin/sh\necho \"$@\" > " << shell_quote((dir / "ncu.args").string())
                             << "\nout=\nwhile [ $# -gt 0 ]; do [ \"$1\" = -o ] && out=$2; shift; done\n"
                                "case $out in *.ncu-rep) ;; *) out=$out.ncu-rep ;; esac\ncp "
                             << shell_quote(fix + "myReport.ncu-rep") << " \"$out\"\n";
  fs::permissions(dir / "nsys", fs::perms::owner_all);
  fs::permissions(dir / "ncu", fs::perms::owner_all);
}

TEST(TimelineProfile, NsysThenNcuOnTheHotKernelsThenTheJoinedAnalysis) {
  KEET_REQUIRE_SHARED();
  fs::path dir = temp_path("profile-nsys");
  write_stand_ins(dir);
  auto r = run_keet("profile --nsys --nsys-path " + shell_quote((dir / "nsys").string()) + " --ncu " +
                    shell_quote((dir / "ncu").string()) + " --top-kernels 1 -o " + shell_quote((dir / "app").string()) +
                    " -- ./app --n 3");
  ASSERT_EQ(r.rc, 0) << r.err;
  std::ifstream args(dir / "ncu.args");
  std::string ncu_args((std::istreambuf_iterator<char>(args)), std::istreambuf_iterator<char>());
  EXPECT_NE(ncu_args.find(
                "--kernel-name-base function --kernel-name regex:^(histogram_kernel)$ --launch-count 1 ./app --n 3"),
            std::string::npos)
      << ncu_args;
  EXPECT_TRUE(fs::exists(dir / "app-timeline.nsys-rep"));
  EXPECT_NE(r.out.find("Application view"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("histogram_kernel"), std::string::npos);
}

}  // namespace
}  // namespace keet
