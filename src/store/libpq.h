// libpq, loaded on first use. PostgreSQL is only needed by `--db postgresql://`,
// and linking libpq directly pulls ~20 libraries (Kerberos, LDAP, GnuTLS...)
// into every keet start-up; dlopen keeps the common path fast.
#pragma once
#include <libpq-fe.h>

#include "util/error.h"

namespace keet::store {

struct LibPq {
  decltype(&::PQconnectdb) connectdb;
  decltype(&::PQstatus) status;
  decltype(&::PQerrorMessage) error_message;
  decltype(&::PQfinish) finish;
  decltype(&::PQreset) reset;
  decltype(&::PQsetNoticeProcessor) set_notice_processor;
  decltype(&::PQexec) exec;
  decltype(&::PQexecParams) exec_params;
  decltype(&::PQresultStatus) result_status;
  decltype(&::PQntuples) ntuples;
  decltype(&::PQnfields) nfields;
  decltype(&::PQgetvalue) getvalue;
  decltype(&::PQclear) clear;
};

// The loaded library, or Dependency when libpq.so.5 is not installed.
Result<const LibPq*> load_libpq();
// Only valid after load_libpq() succeeded (every PgStore exists after that).
const LibPq& pq();

}  // namespace keet::store
