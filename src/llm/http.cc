#include "llm/http.h"

#include <httplib.h>

#include <thread>

#include "util/strings.h"

namespace keet::llm {

std::string HttpResponse::header(const std::string& lower_name) const {
  auto it = headers.find(lower_name);
  return it == headers.end() ? "" : it->second;
}

std::pair<std::string, std::string> split_url(const std::string& url) {
  std::string full = url.find("://") == std::string::npos ? "http://" + url : url;
  size_t host_start = full.find("://") + 3;
  size_t path_start = full.find('/', host_start);
  if (path_start == std::string::npos) return {full, ""};
  return {full.substr(0, path_start), full.substr(path_start)};
}

namespace {

HttpFailure failure_kind(httplib::Error e) {
  switch (e) {
    case httplib::Error::Connection:
    case httplib::Error::SSLConnection:
    case httplib::Error::SSLServerVerification: return HttpFailure::Connect;
    // cpp-httplib reports a read timeout as a failed read.
    case httplib::Error::Read:
    case httplib::Error::ConnectionTimeout: return HttpFailure::Timeout;
    default: return HttpFailure::Other;
  }
}

class HttplibClient final : public HttpClient {
 public:
  explicit HttplibClient(const Timeouts& t) : timeouts_(t) {}

  std::expected<HttpResponse, HttpError> post(const HttpRequest& req) override {
    auto [origin, path] = split_url(req.url);
    httplib::Client cli(origin);
    cli.set_connection_timeout(timeouts_.connect);
    cli.set_read_timeout(timeouts_.read);
    cli.set_write_timeout(timeouts_.connect);
    httplib::Headers headers;
    std::string content_type = "application/json";
    for (const auto& [k, v] : req.headers) headers.emplace(k, v);
    auto res = cli.Post(path.empty() ? "/" : path, headers, req.body, content_type);
    if (!res) {
      auto err = res.error();
      return std::unexpected(HttpError{failure_kind(err), origin + ": " + httplib::to_string(err)});
    }
    HttpResponse out{res->status, {}, res->body};
    for (const auto& [k, v] : res->headers) out.headers[to_lower(k)] = v;
    return out;
  }

 private:
  Timeouts timeouts_;
};

class RealSleeper final : public Sleeper {
 public:
  void sleep_for(std::chrono::milliseconds d) override { std::this_thread::sleep_for(d); }
};

}  // namespace

std::unique_ptr<HttpClient> make_http_client(const Timeouts& t) { return std::make_unique<HttplibClient>(t); }

Sleeper& real_sleeper() {
  static RealSleeper s;
  return s;
}

}  // namespace keet::llm
