// keet serve's HTTP surface: the REST API under /api/v1 (docs/openapi.json
// describes every route of routes(); a unit test checks both ways), the web
// UI's files (web/, compiled in), and /mcp when an MCP handler is mounted.
// Authentication, Origin checks, CORS and security headers are applied here,
// once, before any route runs.
#pragma once
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "service/http_server.h"
#include "service/service.h"
#include "util/embedded_data.h"

namespace keet::service {

struct RouteInfo {
  std::string method;
  std::string pattern;  // "/api/v1/jobs/{id}"
};
// Every API route, in the order they are matched.
const std::vector<RouteInfo>& routes();

// Constant-time comparison (the time depends on the lengths only).
bool same_secret(std::string_view a, std::string_view b);
// Does the Host header name this machine's loopback interface?
bool loopback_host(const std::string& host_header);
bool loopback_address(const std::string& host);

// The web UI's files (web/*, path relative to web/), compiled in by cmake/embed_data.cmake.
const std::vector<EmbeddedFile>& web_files();

class Api {
 public:
  Api(JobStore& jobs, BlobStore& blobs, KeetRunner& runner, Workers* workers, ServiceOptions options,
      Clock clock = io::system_unix_ms);
  Response handle(const Request& req);
  // The checks handle() makes first (Origin, Host, token), on the headers
  // alone: the HTTP server asks before it reads a body, so a refused client
  // costs no memory however much it sends.
  std::optional<Response> admit(const Request& headers_only) const;
  // `message` with the job store's URL or file and the data folder named, not shown.
  std::string without_server_paths(std::string message) const;
  // /mcp (POST, GET, DELETE) goes here once mounted; the same checks apply.
  void mount_mcp(Handler mcp) { mcp_ = std::move(mcp); }

  struct Context;

 private:
  Response route(const Request& req);
  std::optional<Response> refuse(const Request& req) const;
  void add_common_headers(const Request& req, Response& res) const;
  JobStore& jobs_;
  BlobStore& blobs_;
  KeetRunner& runner_;
  Workers* workers_;
  ServiceOptions opt_;
  Clock clock_;
  Handler mcp_;
  // Storing an upload and queueing its job happen together, as do deleting a
  // job and removing the upload no job uses any more: a job never points at
  // an upload that was removed between the two.
  std::mutex uploads_;

  friend struct Handlers;
};

}  // namespace keet::service
