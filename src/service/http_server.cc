#include "service/http_server.h"

#include <exception>

#include "io/dynlib.h"
#include "llm/http.h"
#include "service/httpd_plugin.h"

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
  auto lib = llm::http_plugin_library();
  if (!lib) return std::unexpected(lib.error());
  HttpServer::Api api;
  keet_httpd_abi_version_fn version = nullptr;
  bool all = io::bind_symbol(*lib, "keet_httpd_abi_version", version) && io::bind_symbol(*lib, "keet_httpd_start", api.start) &&
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

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return s;
}

Request to_request(const keet_httpd_request& r) {
  Request out{r.method, r.path, {}, {}, std::string(r.body, r.body_size), {}};
  for (size_t i = 0; i < r.param_count; ++i) out.query.emplace(r.params[i].name, r.params[i].value);
  for (size_t i = 0; i < r.header_count; ++i) out.headers.emplace(lower(r.headers[i].name), r.headers[i].value);
  for (size_t i = 0; i < r.part_count; ++i)
    out.parts.push_back({r.parts[i].field, r.parts[i].filename, std::string(r.parts[i].data, r.parts[i].size)});
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
  keet_httpd_config c{config.host.c_str(),   config.port,
                      config.max_body_bytes, config.threads,
                      config.read_timeout_s, config.write_timeout_s,
                      dispatch,              &s->handler_,
                      s->admit_ ? admit : nullptr, &s->admit_};
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
