#include "service/http_server.h"
#include "util/error.h"

#include <exception>

#include "io/dynlib.h"
#include "llm/http.h"
#include "service/httpd_plugin.h"
#include "util/strings.h"

namespace keet::service {

std::string Request::header(const std::string& lower_name) const {
  auto it = headers.find(lower_name);
  return it == headers.end() ? "" : it->second;
}

std::string Request::param(const std::string& name) const {
  auto it = query.find(name);
  return it == query.end() ? "" : it->second;
}

struct HttpServer::Api {
  keet_httpd_start_fn start = nullptr;
  keet_httpd_port_fn port = nullptr;
  keet_httpd_run_fn run = nullptr;
  keet_httpd_stop_fn stop = nullptr;
  keet_httpd_free_fn free = nullptr;
};

namespace {

Result<HttpServer::Api> bind_api() {
  KEET_TRY(lib, llm::http_plugin_library());
  HttpServer::Api api;
  keet_httpd_abi_version_fn version = nullptr;
  bool all = io::bind_symbol(*lib, "keet_httpd_abi_version", version) &&
             io::bind_symbol(*lib, "keet_httpd_start", api.start) &&
             io::bind_symbol(*lib, "keet_httpd_port", api.port) && io::bind_symbol(*lib, "keet_httpd_run", api.run) &&
             io::bind_symbol(*lib, "keet_httpd_stop", api.stop) && io::bind_symbol(*lib, "keet_httpd_free", api.free);
  if (!all || version() != KEET_HTTPD_ABI_VERSION)
    return fail(ExitCode::Dependency, "the HTTP plugin has no server of this keet version");
  return api;
}

const Result<HttpServer::Api>& api() {
  static const Result<HttpServer::Api> bound = bind_api();
  return bound;
}

Request to_request(const keet_httpd_request& r) {
  Request out;
  out.method = r.method;
  out.path = r.path;
  if (r.body.data) out.body.assign(r.body.data, r.body.size);
  if (r.body.file) out.body_file = r.body.file;
  out.body_size = r.body.size;
  for (size_t i = 0; i < r.param_count; ++i) out.query.emplace(r.params[i].name, r.params[i].value);
  for (size_t i = 0; i < r.header_count; ++i) out.headers.emplace(to_lower(r.headers[i].name), r.headers[i].value);
  for (size_t i = 0; i < r.part_count; ++i) {
    const auto& p = r.parts[i];
    out.parts.push_back({p.field, p.filename, p.body.data ? std::string(p.body.data, p.body.size) : std::string(),
                         p.body.file ? p.body.file : "", p.body.size});
  }
  return out;
}

// A streamed body handed to the plugin; freed by its release() call.
struct StreamBox {
  StreamNext next;
};

keet_httpd_stream to_stream(StreamNext next) {
  keet_httpd_stream s{};
  s.context = new StreamBox{std::move(next)};
  s.next = [](void* ctx, const keet_httpd_writer* w) -> int {
    try {
      StreamWrite write = [w](std::string_view piece) { return w->write(w->context, piece.data(), piece.size()) != 0; };
      return static_cast<StreamBox*>(ctx)->next(write) ? 1 : 0;
    } catch (...) {
      return 0;
    }
  };
  s.release = [](void* ctx) { delete static_cast<StreamBox*>(ctx); };
  return s;
}

void send(const Response& res, const keet_httpd_reply& reply) {
  reply.status(reply.context, res.status);
  for (const auto& [k, v] : res.headers) reply.header(reply.context, k.c_str(), v.c_str());
  if (res.stream) {
    auto s = to_stream(res.stream);
    reply.stream(reply.context, &s, res.content_type.c_str());
  } else {
    reply.body(reply.context, res.body.data(), res.body.size(), res.content_type.c_str());
  }
}

// Runs on the plugin's threads: no exception may leave it.
void dispatch(void* ctx, const keet_httpd_request* req, const keet_httpd_reply* reply) {
  Response res;
  try {
    res = (*static_cast<Handler*>(ctx))(to_request(*req));
  } catch (const std::exception& e) {
    res = {500, "application/json", {}, R"({"error":"internal error"})", {}};
  } catch (...) {
    res = {500, "application/json", {}, R"({"error":"internal error"})", {}};
  }
  send(res, *reply);
}

// Runs on the plugin's threads too; a failing check refuses (500).
int admit(void* ctx, const keet_httpd_request* req, const keet_httpd_reply* reply) {
  std::optional<Response> refused;
  try {
    refused = (*static_cast<Admit*>(ctx))(to_request(*req));
  } catch (...) {
    refused = Response{500, "application/json", {}, R"({"error":"internal error"})", {}};
  }
  if (!refused) return 1;
  send(*refused, *reply);
  return 0;
}

}  // namespace

Result<std::unique_ptr<HttpServer>> HttpServer::start(const ServerConfig& config, Handler handler, Admit admit_first) {
  if (!api()) return std::unexpected(api().error());
  std::unique_ptr<HttpServer> s(new HttpServer());
  s->api_ = &*api();
  s->handler_ = std::move(handler);
  s->admit_ = std::move(admit_first);
  s->log_ = config.log;
  keet_httpd_config c{};
  c.host = config.host.c_str();
  c.port = config.port;
  c.max_body_bytes = config.max_body_bytes;
  c.memory_body_bytes = config.memory_body_bytes;
  c.spool_dir = config.spool_dir.c_str();
  c.max_connections = config.max_connections;
  c.max_connections_per_client = config.max_connections_per_client;
  c.idle_timeout_s = config.idle_timeout_s;
  c.request_timeout_s = config.request_timeout_s;
  c.min_body_bytes_per_s = config.min_body_bytes_per_s;
  c.header_memory_bytes = config.header_memory_bytes;
  c.handler = dispatch;
  c.handler_context = &s->handler_;
  c.admit = s->admit_ ? admit : nullptr;
  c.admit_context = &s->admit_;
  if (s->log_) {
    c.log = [](void* ctx, const char* line) {
      try {
        (*static_cast<std::function<void(std::string_view)>*>(ctx))(line);
      } catch (...) {
      }
    };
    c.log_context = &s->log_;
  }
  char error[512] = "";
  s->server_ = s->api_->start(&c, error, sizeof error);
  if (!s->server_) return fail(ExitCode::BadInput, error);
  return s;
}

HttpServer::~HttpServer() {
  if (server_) api_->free(server_);
}

int HttpServer::port() const { return api_->port(server_); }
void HttpServer::run() { api_->run(server_); }
void HttpServer::stop() { api_->stop(server_); }

}  // namespace keet::service
