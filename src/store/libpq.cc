#include "store/libpq.h"

#include <dlfcn.h>

namespace keet::store {
namespace {

template <typename F>
bool bind(void* lib, const char* name, F& out) {
  out = reinterpret_cast<F>(dlsym(lib, name));
  return out != nullptr;
}

Result<LibPq> open_libpq() {
  void* lib = dlopen("libpq.so.5", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return fail(ExitCode::Dependency, "PostgreSQL client library libpq.so.5 not found (Debian: apt-get install libpq5)");
  LibPq p{};
  bool ok = bind(lib, "PQconnectdb", p.connectdb) && bind(lib, "PQstatus", p.status) &&
            bind(lib, "PQerrorMessage", p.error_message) && bind(lib, "PQfinish", p.finish) &&
            bind(lib, "PQsetNoticeProcessor", p.set_notice_processor) && bind(lib, "PQexec", p.exec) &&
            bind(lib, "PQexecParams", p.exec_params) && bind(lib, "PQresultStatus", p.result_status) &&
            bind(lib, "PQntuples", p.ntuples) && bind(lib, "PQgetvalue", p.getvalue) && bind(lib, "PQclear", p.clear);
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
