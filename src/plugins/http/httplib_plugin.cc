// libkeet_http.so: HTTP(S) POST through cpp-httplib and OpenSSL behind the C
// interface of llm/http_plugin.h. keet opens it with dlopen on its first request.
#include <httplib.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "llm/http_plugin.h"

namespace {

keet_http_failure failure_kind(httplib::Error e) {
  switch (e) {
    case httplib::Error::Connection:
    case httplib::Error::SSLConnection:
    case httplib::Error::SSLServerVerification:
      return KEET_HTTP_CONNECT;
    // cpp-httplib reports a read timeout as a failed read.
    case httplib::Error::Read:
    case httplib::Error::ConnectionTimeout:
      return KEET_HTTP_TIMEOUT;
    default:
      return KEET_HTTP_OTHER;
  }
}

// Stops the client when the whole request outlives its deadline: the read
// timeout alone restarts with every byte, so a server trickling a few bytes a
// second could hold a request for hours.
class Deadline {
 public:
  Deadline(httplib::Client& cli, long seconds)
      : thread_([this, &cli, seconds] {
          std::unique_lock lock(mu_);
          if (!cv_.wait_for(lock, std::chrono::seconds(seconds), [this] { return done_; })) {
            expired_ = true;
            cli.stop();  // shuts the socket down: the blocked read returns
          }
        }) {}
  ~Deadline() { finish(); }
  bool finish() {
    {
      std::lock_guard lock(mu_);
      done_ = true;
    }
    cv_.notify_one();
    if (thread_.joinable()) thread_.join();
    return expired_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false, expired_ = false;
  std::thread thread_;
};

void post(const keet_http_request& req, const keet_http_sink& sink) {
  httplib::Client cli(req.origin);
  cli.set_connection_timeout(req.connect_timeout_s);
  cli.set_read_timeout(req.read_timeout_s);
  cli.set_write_timeout(req.connect_timeout_s);
  // http:// targets are sent to the proxy in absolute form, https:// ones
  // through a CONNECT tunnel (cpp-httplib does both once a proxy is set).
  if (req.proxy_host && *req.proxy_host) {
    cli.set_proxy(req.proxy_host, req.proxy_port);
    if (req.proxy_user && *req.proxy_user)
      cli.set_proxy_basic_auth(req.proxy_user, req.proxy_password ? req.proxy_password : "");
  }
  httplib::Request r;
  r.method = "POST";
  r.path = req.path;
  for (size_t i = 0; i < req.header_count; ++i) r.headers.emplace(req.headers[i].name, req.headers[i].value);
  r.headers.emplace("Content-Type", "application/json");
  r.body.assign(req.body, req.body_size);
  std::string body;
  bool too_big = false;
  r.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
    too_big = body.size() + n > req.max_body_bytes;
    if (!too_big) body.append(data, n);
    return !too_big;
  };
  httplib::Response res;
  httplib::Error error = httplib::Error::Success;
  Deadline deadline(cli, req.total_timeout_s);
  bool ok = cli.send(r, res, error);
  std::string origin(req.origin);
  if (deadline.finish()) {
    auto message = origin + ": no complete answer within " + std::to_string(req.total_timeout_s) + " s";
    return sink.error(sink.context, KEET_HTTP_TIMEOUT, message.c_str());
  }
  if (too_big) {
    auto message = origin + ": response longer than " + std::to_string(req.max_body_bytes) + " bytes";
    return sink.error(sink.context, KEET_HTTP_TOO_LARGE, message.c_str());
  }
  if (!ok) {
    std::string message = origin + ": " + httplib::to_string(error);
    return sink.error(sink.context, failure_kind(error), message.c_str());
  }
  sink.status(sink.context, res.status);
  for (const auto& [name, value] : res.headers) sink.header(sink.context, name.c_str(), value.c_str());
  sink.body(sink.context, body.data(), body.size());
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
