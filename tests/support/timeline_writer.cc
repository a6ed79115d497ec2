#include "support/timeline_writer.h"

#include <sqlite3.h>

#include <filesystem>
#include <map>
#include <stdexcept>

#include <fmt/format.h>

namespace keet::testing {
namespace {

class Db {
 public:
  explicit Db(const std::string& path) {
    std::filesystem::remove(path);
    if (sqlite3_open(path.c_str(), &db_) != SQLITE_OK) throw std::runtime_error("cannot create " + path);
  }
  ~Db() { sqlite3_close(db_); }
  void exec(const std::string& sql) {
    char* err = nullptr;
    if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
      std::string msg = err ? err : "?";
      sqlite3_free(err);
      throw std::runtime_error(msg + " in: " + sql.substr(0, 200));
    }
  }
  std::string quote(const std::string& s) {
    char* q = sqlite3_mprintf("%Q", s.c_str());
    std::string out = q;
    sqlite3_free(q);
    return out;
  }

 private:
  sqlite3* db_ = nullptr;
};

constexpr const char* kKernelTable = R"(CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (
  start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL,
  streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER, demangledName INTEGER NOT NULL,
  shortName INTEGER NOT NULL, mangledName INTEGER, launchType INTEGER, cacheConfig INTEGER,
  registersPerThread INTEGER NOT NULL, gridX INTEGER NOT NULL, gridY INTEGER NOT NULL, gridZ INTEGER NOT NULL,
  blockX INTEGER NOT NULL, blockY INTEGER NOT NULL, blockZ INTEGER NOT NULL, staticSharedMemory INTEGER NOT NULL,
  dynamicSharedMemory INTEGER NOT NULL, localMemoryPerThread INTEGER NOT NULL, localMemoryTotal INTEGER NOT NULL,
  gridId INTEGER NOT NULL, sharedMemoryExecuted INTEGER, graphNodeId INTEGER, sharedMemoryLimitConfig INTEGER))";

constexpr const char* kRuntimeTable = R"(CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (
  start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER NOT NULL, globalTid INTEGER,
  correlationId INTEGER, nameId INTEGER NOT NULL, returnValue INTEGER NOT NULL, callchainId INTEGER))";

constexpr const char* kMemcpyTable = R"(CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (
  start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL,
  streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER, bytes INTEGER NOT NULL,
  copyKind INTEGER NOT NULL, deprecatedSrcId INTEGER, srcKind INTEGER, dstKind INTEGER, srcDeviceId INTEGER,
  srcContextId INTEGER, dstDeviceId INTEGER, dstContextId INTEGER, migrationCause INTEGER, graphNodeId INTEGER,
  virtualAddress INTEGER))";

constexpr const char* kMemsetTable = R"(CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (
  start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL,
  streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER, value INTEGER NOT NULL,
  bytes INTEGER NOT NULL, graphNodeId INTEGER, memKind INTEGER))";

constexpr const char* kNvtxTable = R"(CREATE TABLE NVTX_EVENTS (
  start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, rangeId INTEGER, category INTEGER,
  color INTEGER, text TEXT, globalTid INTEGER, endGlobalTid INTEGER, textId INTEGER, domainId INTEGER))";

// globalPid of process 4242 on host 0 and vm 0; its thread 4243.
constexpr int64_t kPid = int64_t{4242} << 24;
constexpr int64_t kTid = kPid | 4243;

}  // namespace

void TimelineWriter::write(const std::string& path) const {
  Db db(path);
  db.exec("BEGIN");
  bool old = schema_ == Schema::Before2023;
  db.exec(
      fmt::format("CREATE TABLE {} (name TEXT NOT NULL, value TEXT)", old ? "EXPORT_META_DATA" : "META_DATA_EXPORT"));
  db.exec(fmt::format("INSERT INTO {} VALUES ('EXPORT_PRODUCT_VERSION', '{}'), ('EXPORT_SCHEMA_VERSION', '{}')",
                      old ? "EXPORT_META_DATA" : "META_DATA_EXPORT", old ? "2022.4.2.1" : "2023.3.3.42",
                      old ? "3.0.0" : "3.4.0"));
  db.exec("CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL)");
  db.exec("CREATE TABLE TARGET_INFO_GPU (vmId INTEGER NOT NULL, id INTEGER NOT NULL, name TEXT)");
  db.exec("INSERT INTO TARGET_INFO_GPU VALUES (0, 0, 'Test GPU')");
  db.exec("CREATE TABLE ENUM_CUDA_MEMCPY_OPER (id INTEGER NOT NULL PRIMARY KEY, name TEXT, label TEXT)");
  db.exec(
      "INSERT INTO ENUM_CUDA_MEMCPY_OPER VALUES (1, 'CUDA_MEMCPY_KIND_HTOD', 'Host-to-Device'), "
      "(2, 'CUDA_MEMCPY_KIND_DTOH', 'Device-to-Host'), (8, 'CUDA_MEMCPY_KIND_DTOD', 'Device-to-Device')");
  std::map<std::string, int64_t> ids;
  auto id = [&](const std::string& s) {
    auto [it, fresh] = ids.try_emplace(s, static_cast<int64_t>(ids.size()) + 1);
    if (fresh) db.exec(fmt::format("INSERT INTO StringIds VALUES ({}, {})", it->second, db.quote(s)));
    return it->second;
  };
  if (!kernels_.empty()) db.exec(kKernelTable);
  bool api = false;
  for (const auto& k : kernels_) api |= k.api_start.has_value();
  for (const auto& [t, set] : transfers_) api |= !t.api.empty();
  if (api || !calls_.empty()) db.exec(kRuntimeTable);
  int64_t correlation = 100;
  for (const auto& c : calls_)
    db.exec(fmt::format("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES ({}, {}, 1, {}, {}, {}, 0, NULL)", c.start,
                        c.end, kTid, 10000 + correlation++, id(c.name)));
  for (const auto& k : kernels_) {
    ++correlation;
    db.exec(
        fmt::format("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES ({}, {}, {}, 1, {}, {}, {}, {}, {}, NULL, 1, 0, "
                    "32, {}, 1, 1, {}, 1, 1, 0, 0, 0, 0, {}, 0, NULL, NULL)",
                    k.start, k.end, k.device, k.stream, correlation, kPid, id(k.name),
                    id(k.short_name.empty() ? k.name : k.short_name), k.grid, k.block, correlation));
    if (k.api_start)
      db.exec(fmt::format("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES ({}, {}, 1, {}, {}, {}, 0, NULL)",
                          *k.api_start, *k.api_start + 2000, kTid, correlation, id("cudaLaunchKernel_v7000")));
  }
  bool any_copy = !copies_.empty(), any_set = !sets_.empty();
  for (const auto& [t, set] : transfers_) (set ? any_set : any_copy) = true;
  if (any_copy) db.exec(kMemcpyTable);
  if (any_set) db.exec(kMemsetTable);
  auto column = [](int v) { return v < 0 ? std::string("NULL") : std::to_string(v); };
  for (const auto& [t, set] : transfers_) {
    ++correlation;
    if (set)
      db.exec(fmt::format(
          "INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET (start, end, deviceId, contextId, streamId, correlationId, "
          "globalPid, value, bytes, memKind) VALUES ({}, {}, 0, 1, 7, {}, {}, 0, {}, {})",
          t.start, t.end, correlation, kPid, t.bytes, column(t.dst)));
    else
      db.exec(fmt::format(
          "INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY (start, end, deviceId, contextId, streamId, correlationId, "
          "globalPid, bytes, copyKind, srcKind, dstKind, srcDeviceId, dstDeviceId) VALUES ({}, {}, 0, 1, 7, {}, {}, "
          "{}, {}, {}, {}, {}, {})",
          t.start, t.end, correlation, kPid, t.bytes, t.kind, column(t.src), column(t.dst), column(t.src_device),
          column(t.dst_device)));
    if (!t.api.empty())
      db.exec(fmt::format("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES ({}, {}, 1, {}, {}, {}, 0, NULL)",
                          t.start - 5000, t.end + 1000, kTid, correlation, id(t.api)));
  }
  if (!overheads_.empty()) {
    db.exec("CREATE TABLE PROFILER_OVERHEAD (start INTEGER NOT NULL, end INTEGER, globalTid INTEGER, nameId INTEGER)");
    for (const auto& o : overheads_)
      db.exec(fmt::format("INSERT INTO PROFILER_OVERHEAD VALUES ({}, {}, {}, {})", o.start, o.end, kTid, id(o.name)));
  }
  if (!command_.empty() || !traced_.empty()) {
    db.exec("CREATE TABLE META_DATA_CAPTURE (name TEXT NOT NULL, value TEXT)");
    for (const auto& kind : traced_)
      db.exec(fmt::format("INSERT INTO META_DATA_CAPTURE VALUES ('CAPTURE_EVENT_TYPE', {})", db.quote(kind)));
    for (size_t i = 0; i < command_.size(); ++i)
      db.exec(fmt::format("INSERT INTO META_DATA_CAPTURE VALUES ({}, {})",
                          db.quote(i == 0 ? "PROCESS_0:COMMAND" : fmt::format("PROCESS_0:ARGUMENT_{}", i - 1)),
                          db.quote(command_[i])));
  }
  for (const auto& c : copies_)
    db.exec(
        fmt::format("INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY (start, end, deviceId, contextId, streamId, bytes, "
                    "copyKind) VALUES ({}, {}, 0, 1, 7, {}, {})",
                    c.start, c.end, c.bytes, c.kind));
  for (const auto& s : sets_)
    db.exec(
        fmt::format("INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET (start, end, deviceId, contextId, streamId, value, bytes) "
                    "VALUES ({}, {}, 0, 1, 7, 0, {})",
                    s.start, s.end, s.bytes));
  if (!ranges_.empty()) db.exec(kNvtxTable);
  for (const auto& r : ranges_)
    db.exec(
        fmt::format("INSERT INTO NVTX_EVENTS (start, end, eventType, globalTid, textId) VALUES ({}, {}, 59, {}, {})",
                    r.start, r.end, kTid, id(r.name)));
  db.exec("COMMIT");
}

}  // namespace keet::testing
