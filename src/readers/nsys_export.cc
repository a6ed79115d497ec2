#include "readers/nsys_export.h"

#include <array>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "io/sqlite.h"
#include "readers/kineto_trace.h"

namespace keet::readers {
namespace {

constexpr std::string_view kSqliteMagic{"SQLite format 3\0", 16};
constexpr std::string_view kReportMagic = "NVIDIA Tegra Profiler Report ";

constexpr const char* kKernels = "CUPTI_ACTIVITY_KIND_KERNEL";
constexpr const char* kMemcpy = "CUPTI_ACTIVITY_KIND_MEMCPY";
constexpr const char* kMemset = "CUPTI_ACTIVITY_KIND_MEMSET";
constexpr const char* kRuntime = "CUPTI_ACTIVITY_KIND_RUNTIME";
constexpr const char* kNvtx = "NVTX_EVENTS";
constexpr const char* kOsrt = "OSRT_API";
constexpr const char* kStrings = "StringIds";
constexpr const char* kGpus = "TARGET_INFO_GPU";
constexpr const char* kCopyKinds = "ENUM_CUDA_MEMCPY_OPER";
constexpr const char* kOverhead = "PROFILER_OVERHEAD";
constexpr const char* kCapture = "META_DATA_CAPTURE";
// The profiler's own GPU time, as Nsight Systems' rules count it (gpustats.py).
constexpr const char* kOverheadNames =
    "'CUDA profiling data flush overhead', 'CUDA profiling stop overhead', 'CUDA profiling overhead'";
// nsys 2023.1 renamed the export's own metadata table.
constexpr std::array<const char*, 2> kMetaTables = {"META_DATA_EXPORT", "EXPORT_META_DATA"};
// NVTX push/pop and start/end ranges (and their NVTX-text forms), as nsys's
// own reports select them (ENUM_NSYS_EVENT_TYPE).
constexpr const char* kNvtxRangeTypes = "59, 60, 70, 71";

struct Failure {
  std::string what;
};

uint32_t be32(const unsigned char* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}

// The header announces the page count when its "version valid for" field
// matches the change counter (every writer since SQLite 3.7.0): a file
// shorter than that lost its tail.
std::optional<std::string> truncation(std::string_view head, uint64_t file_size) {
  if (head.size() < 100 || !head.starts_with(kSqliteMagic))
    return "not an SQLite database (an nsys export starts with \"SQLite format 3\")";
  auto* h = reinterpret_cast<const unsigned char*>(head.data());
  uint32_t page = (uint32_t{h[16]} << 8) | h[17];
  if (page == 1) page = 65536;
  if (page < 512 || (page & (page - 1)) != 0) return fmt::format("damaged SQLite header (page size {})", page);
  uint32_t pages = be32(h + 28);
  if (be32(h + 24) == be32(h + 92) && pages > 0 && uint64_t{pages} * page > file_size)
    return fmt::format("truncated: the SQLite header announces {} pages of {} bytes ({} bytes), the file has {}", pages,
                       page, uint64_t{pages} * page, file_size);
  return std::nullopt;
}

// The open export, as the queries below see it.
class Db {
 public:
  explicit Db(io::Sqlite& db) : db_(db) {}
  io::Sqlite& get() const { return db_; }
  std::string error() const { return db_.error(); }

 private:
  io::Sqlite& db_;
};

class Stmt {
 public:
  Stmt(const Db& db, const std::string& sql) : db_(db), s_(prepare(db, sql)) {}
  bool step() {
    switch (s_.step()) {
      case io::SqliteStatement::Step::Row:
        return true;
      case io::SqliteStatement::Step::Done:
        return false;
      case io::SqliteStatement::Step::Error:
        break;
    }
    throw Failure{"SQLite: " + db_.error() + " (the export is damaged)"};
  }
  void reset() { s_.reset(); }
  void bind(int i, int64_t v) { s_.bind(i, v); }
  bool null(int i) const { return s_.is_null(i); }
  int64_t i64(int i) const { return s_.i64(i); }
  uint64_t u64(int i) const { return static_cast<uint64_t>(std::max<int64_t>(0, i64(i))); }
  std::string_view text(int i) const { return s_.text(i); }

 private:
  static io::SqliteStatement prepare(const Db& db, const std::string& sql) {
    auto s = db.get().prepare(sql);
    if (!s) throw Failure{"SQLite: " + s.error()};
    return std::move(*s);
  }
  const Db& db_;
  io::SqliteStatement s_;
};

// The tables and columns present: queries are built from them, so an older
// or sparser schema is read as far as it goes.
class Schema {
 public:
  explicit Schema(const Db& db) {
    Stmt t(db, "SELECT name FROM sqlite_master WHERE type = 'table'");
    while (t.step()) tables_.emplace(t.text(0));
  }
  bool has(const std::string& table) const { return tables_.contains(table); }
  bool has(const Db& db, const std::string& table, const std::string& column) {
    if (!has(table)) return false;
    auto it = columns_.find(table);
    if (it == columns_.end()) {
      std::set<std::string> cols;
      Stmt s(db, "SELECT name FROM pragma_table_info('" + table + "')");  // table: one of ours, never the file's
      while (s.step()) cols.emplace(s.text(0));
      it = columns_.emplace(table, std::move(cols)).first;
    }
    return it->second.contains(column);
  }
  void require(const Db& db, const std::string& table, std::initializer_list<const char*> cols) {
    for (const char* c : cols)
      if (!has(db, table, c))
        throw Failure{fmt::format("table {} has no column {}: not an nsys export this reader knows", table, c)};
  }

 private:
  std::set<std::string> tables_;
  std::map<std::string, std::set<std::string>> columns_;
};

class ExportReader {
 public:
  ExportReader(const Db& db, std::string path, model::TimelineSink& sink) : db_(db), schema_(db), sink_(sink) {
    meta_.path = std::move(path);
  }

  void read() {
    read_meta();
    auto [lo, hi] = span();
    read_gpu_ranges();
    sink_.begin(meta_, lo, hi);
    if (schema_.has(kNvtx)) read_nvtx();
    read_gpu_operations();
    read_sync_calls();
    read_api_calls();
  }

 private:
  void read_meta() {
    for (const char* t : kMetaTables)
      if (schema_.has(t)) {
        meta_.schema = t;
        Stmt s(db_, fmt::format("SELECT name, value FROM {}", t));
        while (s.step()) {
          if (s.text(0) == "EXPORT_PRODUCT_VERSION") meta_.tool_version = s.text(1);
          if (s.text(0) == "EXPORT_SCHEMA_VERSION") meta_.schema_version = s.text(1);
        }
        break;
      }
    bool activity = schema_.has(kKernels) || schema_.has(kMemcpy) || schema_.has(kMemset) || schema_.has(kRuntime);
    if (meta_.schema.empty() && !(schema_.has(kStrings) && activity))
      throw Failure{"not an Nsight Systems export (no META_DATA_EXPORT or EXPORT_META_DATA table, no CUPTI activity)"};
    if (!schema_.has(kStrings)) throw Failure{"not an Nsight Systems export this reader knows: no StringIds table"};
    for (const char* t : {kKernels, kMemcpy, kMemset, kRuntime, kNvtx, kOsrt})
      if (!schema_.has(t)) meta_.absent_tables.emplace_back(t);
    count_untraced_calls();
    read_command();
    if (schema_.has(db_, kGpus, "id") && schema_.has(db_, kGpus, "name")) {
      Stmt g(db_, "SELECT id, name FROM TARGET_INFO_GPU ORDER BY id");
      while (g.step() && meta_.gpus.size() < 1024) meta_.gpus.push_back({g.u64(0), std::string(g.text(1))});
    }
  }

  // API calls whose GPU activity the export lacks. Only the calls' names are
  // looked up (StringIds is small); the runtime table is scanned once, and
  // only when an activity table is absent.
  void count_untraced_calls() {
    bool kernels = !schema_.has(kKernels), copies = !schema_.has(kMemcpy), sets = !schema_.has(kMemset);
    if (!(kernels || copies || sets) || !schema_.has(db_, kRuntime, "nameId")) return;
    Stmt s(db_,
           "SELECT CASE WHEN v.value LIKE 'cudaMemcpy%' OR v.value LIKE 'cuMemcpy%' THEN 1"
           " WHEN v.value LIKE 'cudaMemset%' OR v.value LIKE 'cuMemset%' THEN 2 ELSE 0 END AS kind, count(*)"
           " FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN (SELECT id, value FROM StringIds WHERE value LIKE 'cudaLaunch%'"
           " OR value LIKE 'cuLaunch%' OR value LIKE 'cudaGraphLaunch%' OR value LIKE 'cuGraphLaunch%'"
           " OR value LIKE 'cudaMemcpy%' OR value LIKE 'cuMemcpy%' OR value LIKE 'cudaMemset%'"
           " OR value LIKE 'cuMemset%') v ON v.id = r.nameId GROUP BY 1");
    while (s.step()) {
      auto n = s.u64(1);
      switch (s.i64(0)) {
        case 0:
          if (kernels) meta_.untraced.launch_calls = n;
          break;
        case 1:
          if (copies) meta_.untraced.memcpy_calls = n;
          break;
        default:
          if (sets) meta_.untraced.memset_calls = n;
      }
    }
  }

  // PROCESS_0:COMMAND and PROCESS_0:ARGUMENT_<i>, in argument order, and
  // the kinds of events nsys was asked to trace.
  void read_command() {
    if (!schema_.has(db_, kCapture, "name") || !schema_.has(db_, kCapture, "value")) return;
    Stmt s(db_,
           "SELECT name, value FROM META_DATA_CAPTURE WHERE name = 'PROCESS_0:COMMAND' OR name LIKE "
           "'PROCESS_0:ARGUMENT_%' OR name = 'CAPTURE_EVENT_TYPE'");
    std::map<int64_t, std::string> args;
    std::string command;
    while (s.step() && args.size() < 4096) {
      auto name = s.text(0);
      if (name == "CAPTURE_EVENT_TYPE") {
        if (meta_.traced.size() < 64) meta_.traced.emplace_back(s.text(1));
        continue;
      }
      if (name == "PROCESS_0:COMMAND") {
        command = s.text(1);
        continue;
      }
      auto index = name.substr(std::string_view("PROCESS_0:ARGUMENT_").size());
      if (!index.empty() && index.size() < 6 && index.find_first_not_of("0123456789") == std::string_view::npos)
        args.emplace(std::stoll(std::string(index)), std::string(s.text(1)));
    }
    if (command.empty()) return;
    meta_.command.push_back(std::move(command));
    for (auto& [i, a] : args) meta_.command.push_back(std::move(a));
  }

  // The process of a row: globalPid (or globalTid) >> 24, as nsys's rules
  // take it; 0 where the table has no such column.
  std::string pid_of(const char* table, const char* alias = "") {
    for (const char* col : {"globalPid", "globalTid"})
      if (schema_.has(db_, table, col)) return fmt::format("(({}{} >> 24) & 16777215)", alias, col);
    return "0";
  }

  void read_gpu_ranges() {
    std::vector<std::string> parts;
    for (const char* t : {kKernels, kMemcpy, kMemset})
      if (schema_.has(t) && schema_.has(db_, t, "deviceId"))
        parts.push_back(fmt::format(
            "SELECT {} AS p, deviceId AS d, min(start) AS lo, max(end) AS hi FROM {} WHERE start > 0 GROUP BY 1, 2",
            pid_of(t), t));
    if (parts.empty()) return;
    Stmt s(db_, fmt::format("SELECT p, d, min(lo), max(hi) FROM ({}) GROUP BY 1, 2 ORDER BY 1, 2",
                            fmt::join(parts, " UNION ALL ")));
    while (s.step() && meta_.gpu_ranges.size() < 4096)
      meta_.gpu_ranges.push_back({static_cast<uint32_t>(s.u64(0)), s.u64(1), s.i64(2), s.i64(3)});
  }

  std::pair<int64_t, int64_t> span() {
    std::vector<std::string> parts;
    for (const char* t : {kKernels, kMemcpy, kMemset})
      if (schema_.has(t)) {
        schema_.require(db_, t, {"start", "end"});
        parts.push_back(fmt::format("SELECT min(start) AS lo, max(end) AS hi FROM {}", t));
      }
    if (parts.empty()) return {0, 0};
    Stmt s(db_, fmt::format("SELECT min(lo), max(hi) FROM ({})", fmt::join(parts, " UNION ALL ")));
    if (!s.step() || s.null(0) || s.null(1)) return {0, 0};
    return {s.i64(0), s.i64(1)};
  }

  // A string id, resolved once per distinct id.
  std::string_view string_of(int64_t id) {
    auto it = strings_.find(id);
    if (it != strings_.end()) return it->second;
    if (!lookup_) lookup_ = std::make_unique<Stmt>(db_, "SELECT value FROM StringIds WHERE id = ?");
    lookup_->reset();
    lookup_->bind(1, id);
    std::string value = lookup_->step() ? std::string(lookup_->text(0)) : fmt::format("(string {} missing)", id);
    return strings_.emplace(id, std::move(value)).first->second;
  }

  // The runtime call of each kernel, through the correlation id within one
  // process (ids restart per process); grouped so a kernel joins one call.
  std::string launch_join() {
    if (!schema_.has(db_, kRuntime, "correlationId") || !schema_.has(db_, kKernels, "correlationId")) return {};
    schema_.require(db_, kRuntime, {"start"});
    bool by_process = schema_.has(db_, kRuntime, "globalTid") && schema_.has(db_, kKernels, "globalPid");
    if (!by_process)
      return " LEFT JOIN (SELECT correlationId AS c, min(start) AS s FROM CUPTI_ACTIVITY_KIND_RUNTIME GROUP BY 1) r "
             "ON r.c = k.correlationId";
    return " LEFT JOIN (SELECT correlationId AS c, globalTid & -16777216 AS p, min(start) AS s FROM "
           "CUPTI_ACTIVITY_KIND_RUNTIME GROUP BY 1, 2) r ON r.c = k.correlationId AND r.p = k.globalPid";
  }

  // One table's rows in start order, handed to the sink one at a time so
  // that the tables can be merged by start.
  struct Cursor {
    std::unique_ptr<Stmt> stmt;
    std::function<void(const Stmt&)> emit;
    bool live = false;
    void advance() { live = stmt->step(); }
  };

  void read_gpu_operations() {
    std::vector<Cursor> cursors;
    if (schema_.has(kKernels)) cursors.push_back(kernels());
    if (schema_.has(kMemcpy)) cursors.push_back(copies());
    if (schema_.has(kMemset)) cursors.push_back(memsets());
    if (schema_.has(db_, kOverhead, "nameId") && schema_.has(db_, kOverhead, "globalTid"))
      cursors.push_back(overheads());
    for (auto& c : cursors) c.advance();
    for (;;) {
      Cursor* next = nullptr;
      for (auto& c : cursors)
        if (c.live && (!next || c.stmt->i64(0) < next->stmt->i64(0))) next = &c;
      if (!next) break;
      next->emit(*next->stmt);
      next->advance();
    }
  }

  Cursor kernels() {
    schema_.require(db_, kKernels, {"deviceId", "streamId", "demangledName"});
    bool has_short = schema_.has(db_, kKernels, "shortName");
    bool has_dims = true;
    for (const char* c : {"gridX", "gridY", "gridZ", "blockX", "blockY", "blockZ"})
      has_dims &= schema_.has(db_, kKernels, c);
    std::string join = launch_join();
    std::string sql = fmt::format(
        "SELECT k.start, k.end, k.deviceId, k.streamId, k.demangledName, {}, {}, {}, {} FROM "
        "CUPTI_ACTIVITY_KIND_KERNEL k{} ORDER BY k.start, k.end",
        has_short ? "k.shortName" : "k.demangledName",
        has_dims ? "k.gridX, k.gridY, k.gridZ, k.blockX, k.blockY, k.blockZ" : "0, 0, 0, 0, 0, 0",
        join.empty() ? "NULL" : "r.s", pid_of(kKernels, "k."), join);
    return {std::make_unique<Stmt>(db_, sql), [this](const Stmt& s) {
              model::KernelLaunch k{.start = s.i64(0),
                                    .end = s.i64(1),
                                    .device = s.u64(2),
                                    .stream = s.u64(3),
                                    .pid = static_cast<uint32_t>(s.u64(13)),
                                    .name_key = static_cast<uint64_t>(s.i64(4))};
              k.name = string_of(s.i64(4));
              k.short_name = string_of(s.i64(5));
              k.grid = {s.u64(6), s.u64(7), s.u64(8)};
              k.block = {s.u64(9), s.u64(10), s.u64(11)};
              if (!s.null(12)) k.api_start = s.i64(12);
              sink_.kernel(k);
            }};
  }

  // The runtime call (its name's string id) of each row of `table`, joined
  // by correlation id within the process, among the calls whose names match
  // `names` (a filter on StringIds, so the runtime table is scanned, not grouped whole).
  std::string api_join(const char* table, const char* names) {
    if (!schema_.has(db_, kRuntime, "correlationId") || !schema_.has(db_, kRuntime, "nameId") ||
        !schema_.has(db_, table, "correlationId"))
      return {};
    bool by_process = schema_.has(db_, kRuntime, "globalTid") && schema_.has(db_, table, "globalPid");
    return fmt::format(
        " LEFT JOIN (SELECT correlationId AS c, {} min(nameId) AS n, min(start) AS t FROM CUPTI_ACTIVITY_KIND_RUNTIME "
        "WHERE nameId IN "
        "(SELECT id FROM StringIds WHERE {}) GROUP BY 1{}) r ON r.c = m.correlationId{}",
        by_process ? "globalTid & -16777216 AS p," : "", names, by_process ? ", 2" : "",
        by_process ? " AND r.p = m.globalPid" : "");
  }

  std::string column_or(const char* table, const char* column, const char* otherwise) {
    return schema_.has(db_, table, column) ? fmt::format("m.{}", column) : otherwise;
  }

  static model::HostMemory memory_kind(const Stmt& s, int i) {
    if (s.null(i)) return model::HostMemory::Unknown;
    auto v = s.i64(i);
    return v >= 0 && v <= 4 ? static_cast<model::HostMemory>(v) : model::HostMemory::Unknown;
  }

  std::string_view api_name(const Stmt& s, int i) { return s.null(i) ? std::string_view() : string_of(s.i64(i)); }
  static std::optional<int64_t> api_start(const Stmt& s, int i) {
    return s.null(i) ? std::nullopt : std::optional<int64_t>(s.i64(i));
  }

  std::unordered_map<int64_t, std::string> copy_kinds() {
    std::unordered_map<int64_t, std::string> kinds;
    if (!schema_.has(db_, kCopyKinds, "id") || !schema_.has(db_, kCopyKinds, "label")) return kinds;
    Stmt s(db_, "SELECT id, label FROM ENUM_CUDA_MEMCPY_OPER");
    while (s.step() && kinds.size() < 4096) kinds.emplace(s.i64(0), std::string(s.text(1)));
    return kinds;
  }

  Cursor copies() {
    schema_.require(db_, kMemcpy, {"deviceId", "streamId", "bytes", "copyKind"});
    kinds_ = copy_kinds();
    std::string join = api_join(kMemcpy, "value LIKE 'cudaMemcpy%' OR value LIKE 'cuMemcpy%'");
    bool devices = schema_.has(db_, kMemcpy, "srcDeviceId") && schema_.has(db_, kMemcpy, "dstDeviceId");
    std::string sql = fmt::format(
        "SELECT m.start, m.end, m.deviceId, m.streamId, m.bytes, m.copyKind, {}, {}, {}, {}, {}, {} FROM "
        "CUPTI_ACTIVITY_KIND_MEMCPY m{} ORDER BY m.start",
        pid_of(kMemcpy, "m."), column_or(kMemcpy, "srcKind", "NULL"), column_or(kMemcpy, "dstKind", "NULL"),
        devices ? "(m.srcDeviceId IS NOT NULL AND m.srcDeviceId = m.dstDeviceId)" : "0", join.empty() ? "NULL" : "r.n",
        join.empty() ? "NULL" : "r.t", join);
    return {std::make_unique<Stmt>(db_, sql), [this](const Stmt& s) {
              auto it = kinds_.find(s.i64(5));
              if (it == kinds_.end()) it = kinds_.emplace(s.i64(5), fmt::format("copy kind {}", s.i64(5))).first;
              sink_.memory({.kind = model::MemoryKind::Copy,
                            .start = s.i64(0),
                            .end = s.i64(1),
                            .device = s.u64(2),
                            .stream = s.u64(3),
                            .bytes = s.u64(4),
                            .direction = it->second,
                            .pid = static_cast<uint32_t>(s.u64(6)),
                            .copy_kind = static_cast<int>(s.i64(5)),
                            .src = memory_kind(s, 7),
                            .dst = memory_kind(s, 8),
                            .same_device = s.i64(9) != 0,
                            .api = api_name(s, 10),
                            .api_start = api_start(s, 11)});
            }};
  }

  Cursor memsets() {
    schema_.require(db_, kMemset, {"deviceId", "streamId", "bytes"});
    std::string join = api_join(kMemset, "value LIKE 'cudaMemset%' OR value LIKE 'cuMemset%'");
    std::string sql = fmt::format(
        "SELECT m.start, m.end, m.deviceId, m.streamId, m.bytes, {}, {}, {}, {} FROM CUPTI_ACTIVITY_KIND_MEMSET m{} "
        "ORDER BY m.start",
        pid_of(kMemset, "m."), column_or(kMemset, "memKind", "NULL"), join.empty() ? "NULL" : "r.n",
        join.empty() ? "NULL" : "r.t", join);
    return {std::make_unique<Stmt>(db_, sql), [this](const Stmt& s) {
              sink_.memory({.kind = model::MemoryKind::Set,
                            .start = s.i64(0),
                            .end = s.i64(1),
                            .device = s.u64(2),
                            .stream = s.u64(3),
                            .bytes = s.u64(4),
                            .pid = static_cast<uint32_t>(s.u64(5)),
                            .dst = memory_kind(s, 6),
                            .api = api_name(s, 7),
                            .api_start = api_start(s, 8)});
            }};
  }

  Cursor overheads() {
    schema_.require(db_, kOverhead, {"start", "end"});
    std::string sql = fmt::format(
        "SELECT o.start, o.end, (o.globalTid >> 24) & 16777215 FROM PROFILER_OVERHEAD o JOIN StringIds s ON s.id = "
        "o.nameId WHERE s.value IN ({}) ORDER BY o.start",
        kOverheadNames);
    return {std::make_unique<Stmt>(db_, sql), [this](const Stmt& s) {
              sink_.overhead({s.i64(0), s.i64(1), static_cast<uint32_t>(s.u64(2))});
            }};
  }

  // The runtime calls that block the host until the GPU is done (nsys's
  // cuda_api_sync rule's two, and cudaThreadSynchronize, the deprecated name
  // of cudaDeviceSynchronize that old code such as Rodinia still calls).
  void read_sync_calls() {
    if (!schema_.has(db_, kRuntime, "nameId")) return;
    schema_.require(db_, kRuntime, {"start", "end"});
    bool tid = schema_.has(db_, kRuntime, "globalTid");
    Stmt s(db_, fmt::format("SELECT r.start, r.end, {}, r.nameId FROM CUPTI_ACTIVITY_KIND_RUNTIME r WHERE r.nameId IN "
                            "(SELECT id FROM StringIds WHERE value LIKE 'cudaDeviceSynchronize%' OR value LIKE "
                            "'cudaStreamSynchronize%' OR value LIKE 'cudaThreadSynchronize%')",
                            tid ? "r.globalTid" : "0"));
    while (s.step()) {
      auto g = s.u64(2);
      sink_.sync_call({s.i64(0), s.i64(1), static_cast<uint32_t>((g >> 24) & 0xFFFFFF),
                       static_cast<uint32_t>(g & 0xFFFFFF), string_of(s.i64(3))});
    }
  }

  // A call without the runtime's version suffix: "cudaMalloc_v3020" ->
  // "cudaMalloc", "cudaGetDeviceProperties_v2_v12000" ->
  // "cudaGetDeviceProperties_v2" (nsys stats strips only four-digit ones).
  static std::string summary_name(std::string_view name) {
    auto v = name.rfind("_v");
    if (v != std::string_view::npos && name.size() - v >= 6 &&
        name.find_first_not_of("0123456789", v + 2) == std::string_view::npos)
      name = name.substr(0, v);
    return std::string(name);
  }

  // Every API function's calls, summed in SQLite as nsys stats cuda_api_sum
  // sums them (one row per name id; the sink merges ids of one name).
  void read_api_calls() {
    if (!schema_.has(db_, kRuntime, "nameId")) return;
    schema_.require(db_, kRuntime, {"start", "end"});
    Stmt s(db_,
           "SELECT nameId, count(*), sum(end - start), min(end - start), max(end - start) FROM "
           "CUPTI_ACTIVITY_KIND_RUNTIME GROUP BY nameId");
    while (s.step()) {
      model::ApiCallStats a{.name = summary_name(string_of(s.i64(0)))};
      a.time = {.count = s.u64(1), .total_ns = s.i64(2), .min_ns = s.i64(3), .max_ns = s.i64(4)};
      sink_.api_calls(a);
    }
  }

  void read_nvtx() {
    schema_.require(db_, kNvtx, {"start", "end", "eventType"});
    bool text = schema_.has(db_, kNvtx, "text"), text_id = schema_.has(db_, kNvtx, "textId");
    std::string name = text_id && text ? "COALESCE(s.value, e.text)" : text_id ? "s.value" : text ? "e.text" : "NULL";
    Stmt s(db_,
           fmt::format("SELECT e.start, e.end, {} FROM NVTX_EVENTS e{} WHERE e.eventType IN ({}) AND e.end IS NOT NULL "
                       "ORDER BY e.start",
                       name, text_id ? " LEFT JOIN StringIds s ON s.id = e.textId" : "", kNvtxRangeTypes));
    while (s.step()) {
      auto n = s.text(2);
      sink_.nvtx({s.i64(0), s.i64(1), n.empty() ? std::string_view("(unnamed)") : n});
    }
  }

  const Db& db_;
  Schema schema_;
  model::TimelineSink& sink_;
  model::TimelineMeta meta_;
  std::unordered_map<int64_t, std::string> strings_;
  std::unordered_map<int64_t, std::string> kinds_;  // copy kind labels
  std::unique_ptr<Stmt> lookup_;
};

ReadResult<void> read_db(io::Sqlite& sqlite, const std::string& name, model::TimelineSink& sink) {
  sqlite.harden();
  Db db(sqlite);
  try {
    ExportReader(db, name, sink).read();
  } catch (const Failure& f) {
    return std::unexpected(ReadError{.file = name, .what = f.what});
  }
  return {};
}

ReadError open_error(const std::string& name, const std::string& message) {
  return ReadError{.file = name, .what = "cannot open as SQLite: " + message};
}

}  // namespace

TimelineFile sniff_timeline(std::string_view head) {
  if (head.starts_with(kSqliteMagic)) return TimelineFile::NsysExport;
  if (head.starts_with(kReportMagic)) return TimelineFile::NsysReport;
  if (looks_like_kineto(head)) return TimelineFile::Kineto;
  return TimelineFile::Other;
}

std::string nsys_report_version(std::string_view head) {
  if (!head.starts_with(kReportMagic)) return {};
  head.remove_prefix(kReportMagic.size());
  auto end = head.find_first_of("-\n");
  std::string version(head.substr(0, end == std::string_view::npos ? 0 : end));
  if (version.find('@') == std::string::npos) return {};  // "1." before 2024
  for (char& c : version)
    if (c == '@') c = '.';
  return version;
}

ReadResult<void> read_nsys_export(const std::string& path, model::TimelineSink& sink) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return std::unexpected(ReadError{.file = path, .what = "cannot open: " + std::string(std::strerror(errno))});
  auto size = static_cast<uint64_t>(in.tellg());
  std::string head(100, '\0');
  in.seekg(0);
  in.read(head.data(), 100);
  head.resize(static_cast<size_t>(in.gcount()));
  if (auto why = truncation(head, size)) return std::unexpected(ReadError{.file = path, .what = *why});
  auto db = io::Sqlite::open(path, {.read_only = true, .immutable = true});
  if (!db) return std::unexpected(open_error(path, db.error()));
  return read_db(*db, path, sink);
}

ReadResult<void> read_nsys_export_bytes(std::string_view bytes, const std::string& name, model::TimelineSink& sink) {
  if (auto why = truncation(bytes.substr(0, 100), bytes.size()))
    return std::unexpected(ReadError{.file = name, .what = *why});
  auto db = io::Sqlite::over_bytes(bytes);
  if (!db) return std::unexpected(open_error(name, db.error()));
  return read_db(*db, name, sink);
}

std::string timeline_error_message(const ReadError& e) { return fmt::format("{}: {}", e.file, e.what); }

}  // namespace keet::readers
