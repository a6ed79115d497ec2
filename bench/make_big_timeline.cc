// keet_make_big_timeline BASE.sqlite OUT.sqlite N: a copy of a real nsys
// SQLite export whose kernels (and their runtime API calls) are repeated,
// shifted later in time run after run, until the kernel table holds N rows.
// scripts/bench-timeline reads the result with `keet timeline`.
#include <sqlite3.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace {

sqlite3* db = nullptr;

void exec(const std::string& sql) {
  char* err = nullptr;
  if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    std::fprintf(stderr, "make_big_timeline: %s\n  in %s\n", err ? err : "?", sql.c_str());
    std::exit(1);
  }
}

int64_t scalar(const std::string& sql) {
  sqlite3_stmt* s = nullptr;
  int64_t v = 0;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW)
    v = sqlite3_column_int64(s, 0);
  sqlite3_finalize(s);
  return v;
}

std::vector<std::string> columns(const std::string& table) {
  std::vector<std::string> out;
  sqlite3_stmt* s = nullptr;
  sqlite3_prepare_v2(db, ("SELECT name FROM pragma_table_info('" + table + "')").c_str(), -1, &s, nullptr);
  while (sqlite3_step(s) == SQLITE_ROW) out.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(s, 0)));
  sqlite3_finalize(s);
  return out;
}

// The column list of `table` with times shifted by i periods and correlation
// ids moved past every earlier copy's.
std::string shifted(const std::string& table, const std::string& alias) {
  std::vector<std::string> cols;
  for (const auto& c : columns(table)) {
    if (c == "start" || c == "end")
      cols.push_back(fmt::format("{}.{} + rep.i * {{period}}", alias, c));
    else if (c == "correlationId")
      cols.push_back(fmt::format("{}.{} + rep.i * {{stride}}", alias, c));
    else
      cols.push_back(alias + "." + c);
  }
  return fmt::format("{}", fmt::join(cols, ", "));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: keet_make_big_timeline BASE.sqlite OUT.sqlite KERNELS\n");
    return 2;
  }
  std::filesystem::copy_file(argv[1], argv[2], std::filesystem::copy_options::overwrite_existing);
  int64_t want = std::stoll(argv[3]);
  if (sqlite3_open(argv[2], &db) != SQLITE_OK) return 1;
  exec("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF");
  int64_t base = scalar("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL");
  if (base == 0) {
    std::fprintf(stderr, "make_big_timeline: %s has no kernel\n", argv[1]);
    return 1;
  }
  int64_t period = scalar("SELECT max(end) - min(start) + 1000 FROM CUPTI_ACTIVITY_KIND_KERNEL");
  int64_t stride = scalar("SELECT max(correlationId) + 1 FROM CUPTI_ACTIVITY_KIND_RUNTIME");
  int64_t copies = (want + base - 1) / base;
  auto fill = [&](std::string sql) {
    for (auto [key, value] : {std::pair{"{period}", period}, std::pair{"{stride}", stride}})
      for (size_t at; (at = sql.find(key)) != std::string::npos;)
        sql.replace(at, std::string(key).size(), std::to_string(value));
    return sql;
  };
  exec("BEGIN");
  exec(fmt::format(
      "CREATE TEMP TABLE rep AS WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r WHERE i < {}) "
      "SELECT i FROM r",
      copies - 1));
  exec(
      "CREATE TEMP TABLE calls AS SELECT r.* FROM CUPTI_ACTIVITY_KIND_RUNTIME r WHERE r.correlationId IN "
      "(SELECT correlationId FROM CUPTI_ACTIVITY_KIND_KERNEL)");
  exec("CREATE TEMP TABLE kernels AS SELECT * FROM CUPTI_ACTIVITY_KIND_KERNEL");
  exec(fill(
      fmt::format("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL SELECT {} FROM rep, temp.kernels k ORDER BY rep.i, k.start "
                  "LIMIT {}",
                  shifted("CUPTI_ACTIVITY_KIND_KERNEL", "k"), want - base)));
  exec(fill(fmt::format("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME SELECT {} FROM rep, temp.calls c",
                        shifted("CUPTI_ACTIVITY_KIND_RUNTIME", "c"))));
  exec("COMMIT");
  std::printf("%lld kernels, %lld runtime calls\n",
              static_cast<long long>(scalar("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL")),
              static_cast<long long>(scalar("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME")));
  sqlite3_close(db);
  return 0;
}
