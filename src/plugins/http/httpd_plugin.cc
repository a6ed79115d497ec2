// libkeet_http.so, server half: cpp-httplib's Server behind the C interface of
// service/httpd_plugin.h. Every request, whatever its method and path, goes to
// keet's one handler; this file only converts between httplib and C structs.
#include <httplib.h>

#include <sys/socket.h>

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
  int listener = -1;  // the listening socket, once made
};

// httplib's default socket options set SO_REUSEPORT, with which a second
// server binds the same port and takes half its connections. SO_REUSEADDR
// stays: a restart must not wait for TIME_WAIT, and on Linux it never lets
// two sockets listen on one port.
void socket_options(Server& s, int sock) {
  int yes = 1;
  setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  s.listener = sock;
}

// httplib listens with a backlog of 5, fixed when Debian built it: a burst of
// clients beyond the busy threads then gets connection resets. Calling
// listen() again on a listening socket only changes its backlog (the kernel
// caps it at net.core.somaxconn).
void widen_backlog(const Server& s) {
  if (s.listener >= 0) ::listen(s.listener, SOMAXCONN);
}

struct ReplyState {
  httplib::Response* res;
};

// Strings live in the httplib request for the whole call; only pointers are built.
struct CRequest {
  std::vector<keet_httpd_header> params, headers;
  std::vector<keet_httpd_part> parts;
  keet_httpd_request req{};
};

// A request body as keet's handler takes it: the raw bytes, or the parts of a
// multipart/form-data body.
struct Body {
  std::string bytes;
  std::vector<httplib::MultipartFormData> parts;
};

void fill(const httplib::Request& r, const Body& body, CRequest& c) {
  for (const auto& [k, v] : r.params) c.params.push_back({k.c_str(), v.c_str()});
  for (const auto& [k, v] : r.headers) c.headers.push_back({k.c_str(), v.c_str()});
  for (const auto& f : body.parts) c.parts.push_back({f.name.c_str(), f.filename.c_str(), f.content.data(), f.content.size()});
  c.req = {r.method.c_str(), r.path.c_str(),     c.params.data(), c.params.size(), c.headers.data(), c.headers.size(),
           body.bytes.data(), body.bytes.size(), c.parts.data(),  c.parts.size(),  r.remote_addr.c_str()};
}

// Reads the body through httplib's content reader, so that every content type
// is taken as bytes: httplib's own reading parses a form-urlencoded body
// (what `curl --data-binary` sends) and refuses one over 8 KiB, and does not
// bound a chunked body at all. Here no body grows past `limit`, chunked or
// not: past it the rest is read and dropped. It must be read: httplib 0.11
// would otherwise take the unread bytes for the next request's first line,
// which it reads to the next '\n' with no limit at all.
enum class BodyRead { Ok, TooLarge, Broken };

BodyRead read_body(const httplib::Request& req, const httplib::Response& res, const httplib::ContentReader& reader,
                   size_t limit, Body& body) {
  size_t total = 0;
  auto keep = [&](size_t n) {
    total += n;
    return total <= limit;
  };
  bool ok = req.is_multipart_form_data()
                ? reader(
                      [&](const httplib::MultipartFormData& part) {
                        if (total <= limit) body.parts.push_back(part);
                        return true;
                      },
                      [&](const char* data, size_t n) {
                        if (keep(n) && !body.parts.empty()) body.parts.back().content.append(data, n);
                        return true;
                      })
                : reader([&](const char* data, size_t n) {
                    if (keep(n)) body.bytes.append(data, n);
                    return true;
                  });
  if (total > limit || res.status == 413) {
    body = {};
    return BodyRead::TooLarge;
  }
  return ok ? BodyRead::Ok : BodyRead::Broken;
}

// The plugin's own refusals, in keet's error shape ({"error": ...}).
void refuse(httplib::Response& res, int status, const std::string& message) {
  res.status = status;
  res.set_content("{\"error\":\"" + message + "\"}", "application/json");
}

// What httplib answers by itself (a request line it cannot parse, an
// oversized one, a bad Range) has an empty body; every error gets one.
std::string error_text(int status) {
  switch (status) {
    case 400: return "bad request: the request line, a header or the body is malformed";
    case 404: return "no such endpoint";
    case 413: return "the request body is over the server's limit";
    case 414: return "the request line is too long";
    case 416: return "the Range header cannot be satisfied";
    case 500: return "internal error";
    default: return "HTTP error " + std::to_string(status);
  }
}

// "Handled" always: it is what makes httplib give an answer written outside
// the routes (as keet's refusal of a client waiting for 100 Continue is) its
// Content-Length; without one the client reads until the connection closes.
httplib::Server::HandlerResponse fill_empty_error(const httplib::Request&, httplib::Response& res) {
  if (res.body.empty() && !res.content_provider_) refuse(res, res.status, error_text(res.status));
  return httplib::Server::HandlerResponse::Handled;
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

void handle(const Server& s, const httplib::Request& req, const Body& body, httplib::Response& res) {
  CRequest c;
  fill(req, body, c);
  ReplyState st{&res};
  auto reply = reply_for(st);
  s.config.handler(s.config.handler_context, &c.req, &reply);
}

// keet's checks (token, Origin, Host) on the headers alone; false when keet
// refused the request and filled `res`.
bool admitted(const Server& s, const httplib::Request& req, httplib::Response& res) {
  if (!s.config.admit) return true;
  CRequest c;
  fill(req, Body{}, c);
  ReplyState st{&res};
  auto reply = reply_for(st);
  return s.config.admit(s.config.admit_context, &c.req, &reply) != 0;
}

// A refused request's body is dropped as it arrives (read_body with no room:
// see there why it is read at all), so memory does not grow with what a
// client sends; a client that waits for 100 Continue never sends it.
void handle_with_body(const Server& s, const httplib::Request& req, httplib::Response& res,
                      const httplib::ContentReader& reader) {
  if (!admitted(s, req, res)) {
    Body dropped;
    int status = res.status;  // httplib's reading sets 400 or 413 on failure: keet's answer stands
    (void)read_body(req, res, reader, 0, dropped);
    res.status = status;
    return;
  }
  Body body;
  switch (read_body(req, res, reader, s.config.max_body_bytes, body)) {
    case BodyRead::Ok: return handle(s, req, body, res);
    case BodyRead::TooLarge:
      return refuse(res, 413, "the request body is over the limit of " + std::to_string(s.config.max_body_bytes) +
                                  " bytes (--max-upload and room for multipart framing)");
    case BodyRead::Broken: return refuse(res, 400, "the request body could not be read (cut short, or malformed chunks or multipart)");
  }
}

void route_everything(Server& s) {
  auto h = [&s](const httplib::Request& req, httplib::Response& res) { handle(s, req, Body{}, res); };
  auto with_body = [&s](const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& reader) {
    handle_with_body(s, req, res, reader);
  };
  s.http.Get(".*", h);
  s.http.Post(".*", with_body);
  s.http.Put(".*", with_body);
  s.http.Patch(".*", with_body);
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
  s->http.set_socket_options([raw = s.get()](socket_t sock) { socket_options(*raw, sock); });
  // Without it Nagle's algorithm holds a reply's last segment for the client's
  // delayed ACK: 40 ms a request on a reused connection.
  s->http.set_tcp_nodelay(true);
  s->http.set_error_handler(httplib::Server::HandlerWithResponse(fill_empty_error));
  // A client that waits for 100 Continue (curl does for large bodies) is
  // refused before it sends the body at all. "Connection: close" tells it not
  // to send the body anyway: curl does, to keep a kept-alive connection in
  // step, and httplib would read those bytes as the next request line.
  s->http.set_expect_100_continue_handler([raw = s.get()](const httplib::Request& req, httplib::Response& res) {
    if (admitted(*raw, req, res)) return 100;
    res.set_header("Connection", "close");
    return res.status;
  });
  route_everything(*s);
  s->port = config.port == 0 ? s->http.bind_to_any_port(s->host) : config.port;
  bool bound = config.port == 0 ? s->port > 0 : s->http.bind_to_port(s->host, config.port);
  if (!bound) {
    error = "cannot listen on " + s->host + ":" + std::to_string(config.port) + " (address in use or not available)";
    return nullptr;
  }
  widen_backlog(*s);
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
