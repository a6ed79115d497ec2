// libkeet_http.so, server half: cpp-httplib's Server behind the C interface of
// service/httpd_plugin.h. Every request, whatever its method and path, goes to
// keet's one handler; this file only converts between httplib and C structs.
#include <httplib.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "service/httpd_plugin.h"

namespace {

struct Server {
  httplib::Server http;
  keet_httpd_config config{};
  std::string host;
  int port = 0;
};

struct ReplyState {
  httplib::Response* res;
};

// Strings live in the httplib request for the whole call; only pointers are built.
struct CRequest {
  std::vector<keet_httpd_header> params, headers;
  std::vector<keet_httpd_part> parts;
  keet_httpd_request req{};
};

void fill(const httplib::Request& r, CRequest& c) {
  for (const auto& [k, v] : r.params) c.params.push_back({k.c_str(), v.c_str()});
  for (const auto& [k, v] : r.headers) c.headers.push_back({k.c_str(), v.c_str()});
  for (const auto& [k, f] : r.files) c.parts.push_back({f.name.c_str(), f.filename.c_str(), f.content.data(), f.content.size()});
  c.req = {r.method.c_str(), r.path.c_str(), c.params.data(), c.params.size(), c.headers.data(), c.headers.size(),
           r.body.data(),    r.body.size(), c.parts.data(),  c.parts.size(),  r.remote_addr.c_str()};
}

// The stream keet handed over, released exactly once whoever finishes first.
struct StreamHolder {
  keet_httpd_stream stream{};
  bool released = false;
  void release() {
    if (!released) stream.release(stream.context);
    released = true;
  }
  ~StreamHolder() { release(); }
};

void set_stream(httplib::Response& res, const keet_httpd_stream& s, const char* content_type) {
  auto holder = std::make_shared<StreamHolder>();  // built in place: a temporary would release the stream
  holder->stream = s;
  res.set_chunked_content_provider(
      content_type,
      [holder](size_t, httplib::DataSink& sink) {
        keet_httpd_writer w{&sink, [](void* ctx, const char* data, size_t size) -> int {
                              auto& out = *static_cast<httplib::DataSink*>(ctx);
                              return out.is_writable() && out.write(data, size) ? 1 : 0;
                            }};
        if (holder->stream.next(holder->stream.context, &w)) return true;
        sink.done();
        return true;
      },
      [holder](bool) { holder->release(); });
}

keet_httpd_reply reply_for(ReplyState& st) {
  keet_httpd_reply r{};
  r.context = &st;
  r.status = [](void* ctx, int status) { static_cast<ReplyState*>(ctx)->res->status = status; };
  r.header = [](void* ctx, const char* name, const char* value) {
    static_cast<ReplyState*>(ctx)->res->set_header(name, value);
  };
  r.body = [](void* ctx, const char* data, size_t size, const char* type) {
    static_cast<ReplyState*>(ctx)->res->set_content(std::string(data, size), type);
  };
  r.stream = [](void* ctx, const keet_httpd_stream* s, const char* type) {
    set_stream(*static_cast<ReplyState*>(ctx)->res, *s, type);
  };
  return r;
}

void handle(const Server& s, const httplib::Request& req, httplib::Response& res) {
  CRequest c;
  fill(req, c);
  ReplyState st{&res};
  auto reply = reply_for(st);
  s.config.handler(s.config.handler_context, &c.req, &reply);
}

void route_everything(Server& s) {
  auto h = [&s](const httplib::Request& req, httplib::Response& res) { handle(s, req, res); };
  s.http.Get(".*", h);
  s.http.Post(".*", h);
  s.http.Put(".*", h);
  s.http.Patch(".*", h);
  s.http.Delete(".*", h);
  s.http.Options(".*", h);
}

void* start(const keet_httpd_config& config, std::string& error) {
  auto s = std::make_unique<Server>();
  s->config = config;
  s->host = config.host;
  int threads = config.threads > 0 ? config.threads : 8;
  s->http.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
  s->http.set_payload_max_length(config.max_body_bytes);
  s->http.set_read_timeout(config.read_timeout_s, 0);
  s->http.set_write_timeout(config.write_timeout_s, 0);
  s->http.set_keep_alive_max_count(100);
  route_everything(*s);
  s->port = config.port == 0 ? s->http.bind_to_any_port(s->host) : config.port;
  bool bound = config.port == 0 ? s->port > 0 : s->http.bind_to_port(s->host, config.port);
  if (!bound) {
    error = "cannot listen on " + s->host + ":" + std::to_string(config.port) + " (address in use or not available)";
    return nullptr;
  }
  return s.release();
}

}  // namespace

#define KEET_EXPORT extern "C" __attribute__((visibility("default")))

KEET_EXPORT int keet_httpd_abi_version(void) { return KEET_HTTPD_ABI_VERSION; }

KEET_EXPORT void* keet_httpd_start(const keet_httpd_config* config, char* error, size_t error_size) {
  std::string why;
  void* s = nullptr;
  try {
    s = start(*config, why);
  } catch (const std::exception& e) {
    why = e.what();
  }
  if (!s && error_size) snprintf(error, error_size, "%s", why.c_str());
  return s;
}

KEET_EXPORT int keet_httpd_port(void* server) { return static_cast<Server*>(server)->port; }

KEET_EXPORT void keet_httpd_run(void* server) {
  try {
    static_cast<Server*>(server)->http.listen_after_bind();
  } catch (...) {
  }
}

KEET_EXPORT void keet_httpd_stop(void* server) { static_cast<Server*>(server)->http.stop(); }

KEET_EXPORT void keet_httpd_free(void* server) { delete static_cast<Server*>(server); }
