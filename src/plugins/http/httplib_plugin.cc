// libkeet_http.so: HTTP(S) POST through cpp-httplib and OpenSSL behind the C
// interface of llm/http_plugin.h. keet opens it with dlopen on its first request.
#include <httplib.h>

#include <string>

#include "llm/http_plugin.h"

namespace {

keet_http_failure failure_kind(httplib::Error e) {
  switch (e) {
    case httplib::Error::Connection:
    case httplib::Error::SSLConnection:
    case httplib::Error::SSLServerVerification: return KEET_HTTP_CONNECT;
    // cpp-httplib reports a read timeout as a failed read.
    case httplib::Error::Read:
    case httplib::Error::ConnectionTimeout: return KEET_HTTP_TIMEOUT;
    default: return KEET_HTTP_OTHER;
  }
}

void post(const keet_http_request& req, const keet_http_sink& sink) {
  httplib::Client cli(req.origin);
  cli.set_connection_timeout(req.connect_timeout_s);
  cli.set_read_timeout(req.read_timeout_s);
  cli.set_write_timeout(req.connect_timeout_s);
  httplib::Headers headers;
  for (size_t i = 0; i < req.header_count; ++i) headers.emplace(req.headers[i].name, req.headers[i].value);
  std::string body(req.body, req.body_size);
  auto res = cli.Post(req.path, headers, body, "application/json");
  if (!res) {
    std::string message = std::string(req.origin) + ": " + httplib::to_string(res.error());
    sink.error(sink.context, failure_kind(res.error()), message.c_str());
    return;
  }
  sink.status(sink.context, res->status);
  for (const auto& [name, value] : res->headers) sink.header(sink.context, name.c_str(), value.c_str());
  sink.body(sink.context, res->body.data(), res->body.size());
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int keet_http_abi_version(void) { return KEET_HTTP_ABI_VERSION; }

// No exception may leave a C function: it is turned into an error report.
extern "C" __attribute__((visibility("default"))) void keet_http_post(const keet_http_request* request,
                                                                      const keet_http_sink* sink) {
  try {
    post(*request, *sink);
  } catch (const std::exception& e) {
    sink->error(sink->context, KEET_HTTP_OTHER, e.what());
  } catch (...) {
    sink->error(sink->context, KEET_HTTP_OTHER, "unknown error in the HTTP plugin");
  }
}
