// keet serve's HTTP transport: one handler for every request, served by
// libmicrohttpd inside the plugin libkeet_http.so (service/httpd_plugin.h).
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

// A body's bytes: in memory while small, else in a spooled file (`file`)
// that lives until the request is answered (BlobStore::adopt may keep it).
struct UploadPart {
  std::string field;
  std::string filename;  // what the client called it: shown, never a path
  std::string data;      // empty when spooled
  std::string file;      // set when spooled
  size_t size = 0;       // of the spooled file
  size_t length() const { return file.empty() ? data.size() : size; }
};

struct Request {
  std::string method;
  std::string path;
  std::map<std::string, std::string> query;    // decoded; the first of repeated names
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;                            // in memory (JSON bodies, small uploads)
  std::string body_file;                       // set instead when the body was spooled to disk
  size_t body_size = 0;                        // of the spooled file
  size_t body_length() const { return body_file.empty() ? body.size() : body_size; }
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
  size_t memory_body_bytes = 256u << 10;  // a request's body bytes kept in memory; the rest is spooled
  std::string spool_dir = "/tmp";         // on the upload store's file system, so that adopt() renames
  int max_connections = 512;              // open at once, a thread each (an event stream holds one)
  int max_connections_per_client = 256;   // open at once from one address
  int idle_timeout_s = 30;                // a silent connection is closed
  // A request's line and headers arrive within this many seconds, and its
  // body, once this long has passed, at 16 KiB/s on average: a client that
  // trickles bytes is closed (keet_httpd_config).
  int request_timeout_s = 30;
  size_t min_body_bytes_per_s = 16u << 10;
  size_t header_memory_bytes = 64u << 10;     // request line and headers must fit (else 431/414)
  std::function<void(std::string_view)> log;  // transport lines (limits reached); may be empty
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
  std::function<void(std::string_view)> log_;
};

}  // namespace keet::service
