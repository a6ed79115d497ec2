// The narrow HTTP interface the LLM layer talks through. Production uses
// cpp-httplib (HTTPS via OpenSSL) in the plugin libkeet_http.so, opened on the
// first request (see http_plugin.h); tests point it at a loopback server, so
// the whole stack, plugin and wire format included, runs for real.
#pragma once
#include <chrono>
#include <expected>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "llm/proxy.h"
#include "util/error.h"

namespace keet::llm {

struct HttpRequest {
  std::string url;  // absolute: scheme://host[:port]/path
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
};

struct HttpResponse {
  int status = 0;
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
  std::string header(const std::string& lower_name) const;
};

// Unavailable: no HTTP transport at all (the plugin is missing); never retried.
// TooLarge: the body passed Timeouts::max_body_bytes; never retried either.
enum class HttpFailure { Connect, Timeout, Other, Unavailable, TooLarge };
struct HttpError {
  HttpFailure kind = HttpFailure::Other;
  std::string message;
};

struct Timeouts {
  std::chrono::seconds connect{10};
  std::chrono::seconds read{120};   // between two reads
  std::chrono::seconds total{180};  // one whole request: a trickling server cannot hold it longer
  size_t max_body_bytes = 8 << 20;  // no chat answer is this long; a bigger body is refused
};

class HttpClient {
 public:
  virtual ~HttpClient() = default;
  virtual std::expected<HttpResponse, HttpError> post(const HttpRequest& req) = 0;
};

// `proxies`: the proxy variables to honour (ProxyEnv::from(getenv)); the
// default, none, connects directly (tests).
std::unique_ptr<HttpClient> make_http_client(const Timeouts& t, ProxyEnv proxies = {});

// The plugin libkeet_http.so, opened once (KEET_HTTP_PLUGIN, beside the
// executable, lib/keet, the build folder); the HTTP server (service layer)
// binds its own symbols from it.
const Result<void*>& http_plugin_library();

// "https://host:443/v1" -> {"https://host:443", "/v1"}. An address without a
// scheme (OLLAMA_HOST=127.0.0.1:11434) is taken as http.
std::pair<std::string, std::string> split_url(const std::string& url);

// Waiting between retries goes through this, so tests never sleep for real.
class Sleeper {
 public:
  virtual ~Sleeper() = default;
  virtual void sleep_for(std::chrono::milliseconds d) = 0;
};
Sleeper& real_sleeper();

}  // namespace keet::llm
