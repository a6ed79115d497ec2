#include "store/libpq.h"

#include "io/dynlib.h"

namespace keet::store {
namespace {

using io::bind_symbol;

Result<LibPq> open_libpq() {
  auto lib = io::open_library("libpq.so.5");
  if (!lib)
    return fail(ExitCode::Dependency,
                "PostgreSQL client library libpq.so.5 not found (Debian: apt-get install libpq5)");
  LibPq p{};
  bool ok = bind_symbol(*lib, "PQconnectdb", p.connectdb) && bind_symbol(*lib, "PQstatus", p.status) &&
            bind_symbol(*lib, "PQerrorMessage", p.error_message) && bind_symbol(*lib, "PQfinish", p.finish) &&
            bind_symbol(*lib, "PQreset", p.reset) &&
            bind_symbol(*lib, "PQsetNoticeProcessor", p.set_notice_processor) && bind_symbol(*lib, "PQexec", p.exec) &&
            bind_symbol(*lib, "PQexecParams", p.exec_params) && bind_symbol(*lib, "PQresultStatus", p.result_status) &&
            bind_symbol(*lib, "PQntuples", p.ntuples) && bind_symbol(*lib, "PQnfields", p.nfields) &&
            bind_symbol(*lib, "PQgetvalue", p.getvalue) && bind_symbol(*lib, "PQclear", p.clear);
  if (!ok) return fail(ExitCode::Dependency, "libpq.so.5 lacks a function KEET needs");
  return p;
}

const Result<LibPq>& loaded() {
  static const Result<LibPq> lib = open_libpq();
  return lib;
}

}  // namespace

Result<const LibPq*> load_libpq() {
  if (!loaded()) return std::unexpected(loaded().error());
  return &*loaded();
}

const LibPq& pq() { return *loaded(); }

}  // namespace keet::store
