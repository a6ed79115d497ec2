// keet serve's HTTP transport: one handler for every request, served by
// cpp-httplib inside the plugin libkeet_http.so (service/httpd_plugin.h).
// Requests and responses are plain structs, so the API (service/api.h) is
// tested by calling it directly and, end to end, through the real server.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/error.h"

namespace keet::service {

struct UploadPart {
  std::string field;
  std::string filename;  // what the client called it: shown, never a path
  std::string data;
};

struct Request {
  std::string method;
  std::string path;
  std::map<std::string, std::string> query;    // decoded; the first of repeated names
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
  std::vector<UploadPart> parts;  // multipart/form-data
  std::string header(const std::string& lower_name) const;
  std::string param(const std::string& name) const;
};

// Writes one piece of a streamed body; false once the client has gone.
using StreamWrite = std::function<bool(std::string_view)>;
// Called until it returns false (the stream is over).
using StreamNext = std::function<bool(const StreamWrite&)>;

struct Response {
  int status = 200;
  std::string content_type = "application/json";
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  StreamNext stream;  // set: the body is streamed (server-sent events)
};

using Handler = std::function<Response(const Request&)>;
// Decides on a request before its body is read (method, path, query and
// headers only): a response refuses it, and its body is never read.
using Admit = std::function<std::optional<Response>(const Request&)>;

struct ServerConfig {
  std::string host = "127.0.0.1";
  int port = 8080;  // 0: any free port
  size_t max_body_bytes = 256u << 20;
  int threads = 64;  // connections at once (an event stream holds one)
  int read_timeout_s = 30;
  int write_timeout_s = 30;
};

class HttpServer {
 public:
  // Binds the socket (exit 3 when the plugin is missing, 2 when the address cannot be used).
  static Result<std::unique_ptr<HttpServer>> start(const ServerConfig& config, Handler handler, Admit admit = {});
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;
  int port() const;
  void run();   // serves until stop()
  void stop();  // from any thread or a signal-watching thread

  struct Api;  // the plugin's entry points

 private:
  HttpServer() = default;
  const Api* api_ = nullptr;
  void* server_ = nullptr;
  Handler handler_;
  Admit admit_;
};

}  // namespace keet::service
