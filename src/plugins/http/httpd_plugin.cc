// libkeet_http.so, server half: GNU libmicrohttpd behind the C interface of
// service/httpd_plugin.h. Every request, whatever its method and path, goes to
// keet's one handler; this file converts between libmicrohttpd and C structs
// and enforces the transport's bounds.
//
// Why libmicrohttpd and not cpp-httplib (which the client half still uses):
// httplib 0.11 serves a connection per pooled thread with per-read timeouts
// only, so 64 clients trickling a byte a second hold every thread; it reads a
// request line or header to the next '\n' without limit, counts no headers,
// and cannot bound connections per client. libmicrohttpd bounds the request
// line and headers by a per-connection memory pool, limits connections in
// total and per address, closes idle connections (and, with a watchdog of
// ours, requests that trickle in past the request timeout), hands the body over in
// pieces as it arrives (so it can go to disk), and lets the application
// answer before the body is read.
#include <microhttpd.h>

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "service/httpd_plugin.h"

namespace {

using Clock = std::chrono::steady_clock;

// A connection while it receives a request: the request's line and headers
// are due by `due` (counted from the connection's opening or its last
// answer); its body, past `due`, must keep up with the configured rate. A
// connection sending its answer (an event stream) is not timed.
struct Watch {
  int fd = -1;
  std::string remote;
  Clock::time_point started, due;
  bool receiving = true;  // the request has not all arrived
  bool body = false;      // its headers have; its body is arriving
  size_t received = 0;    // body bytes so far
};

struct Server {
  MHD_Daemon* daemon = nullptr;
  keet_httpd_config config{};
  std::string host, spool_dir;
  int port = 0;
  std::mutex mu;
  std::condition_variable cv;
  bool stopping = false;
  std::chrono::steady_clock::time_point last_log{};
  int unlogged = 0;  // transport messages dropped since the last one logged
  // The request deadline (watch_requests): every open connection, by MHD's
  // pointer. A connection leaves before MHD closes its socket (its
  // notify-closed callback comes first), so an fd here is never another's.
  std::mutex watch_mu;
  std::condition_variable watch_cv;
  std::map<MHD_Connection*, Watch> watched;
  bool watch_stopping = false;
  std::thread watchdog;
};

// ------------------------------------------------------------------ bodies

// Body bytes as they arrive: in memory while the request's budget lasts,
// then appended to a file in the spool folder (memory does not grow with
// the body's size).
struct Spool {
  std::string bytes;
  std::string path;  // set once spooled
  int fd = -1;
  size_t size = 0;

  bool spill(const std::string& dir) {
    std::string name = dir + "/body.tmp-XXXXXX";
    std::vector<char> buf(name.begin(), name.end());
    buf.push_back('\0');
    fd = mkstemp(buf.data());
    if (fd < 0) return false;
    fchmod(fd, 0644);  // as the store's other files: a worker under another user reads it
    path = buf.data();
    bool ok = write_all(bytes.data(), bytes.size());
    std::string().swap(bytes);
    return ok;
  }
  bool write_all(const char* data, size_t n) {
    while (n > 0) {
      ssize_t w = ::write(fd, data, n);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) return false;
      data += w;
      n -= static_cast<size_t>(w);
    }
    return true;
  }
  // `memory_left` is the request's budget, shared by all its parts.
  bool append(const char* data, size_t n, size_t& memory_left, const std::string& dir) {
    size += n;
    if (fd < 0 && n <= memory_left) {
      bytes.append(data, n);
      memory_left -= n;
      return true;
    }
    if (fd < 0 && !spill(dir)) return false;
    return write_all(data, n);
  }
  keet_httpd_body view() const {
    if (fd >= 0) return {nullptr, path.c_str(), size};
    return {bytes.data(), nullptr, size};
  }
  void reset() {
    if (fd >= 0) ::close(fd);
    if (!path.empty()) ::unlink(path.c_str());  // gone already when keet kept it
    fd = -1;
    path.clear();
    std::string().swap(bytes);
    size = 0;
  }
  Spool() = default;
  Spool(const Spool&) = delete;
  Spool& operator=(const Spool&) = delete;
  ~Spool() { reset(); }
};

struct Part {
  std::string field, filename;
  Spool body;
};

// One request, from its headers to its answer (MHD's per-request pointer).
struct ReplyState;
void discard(ReplyState* st);

struct Exchange {
  std::string method, path, remote;
  std::vector<std::pair<std::string, std::string>> headers, params;
  MHD_PostProcessor* multipart = nullptr;
  std::unique_ptr<std::pair<Server*, Exchange*>> multipart_context;  // on_part's closure
  Spool body;
  std::vector<std::unique_ptr<Part>> parts;
  size_t received = 0, memory_left = 0;
  bool answered = false, failed = false;
  bool over_limit = false;  // the body is past the limit: what still comes is counted and dropped
  bool no_room = false;     // the body could not be spooled (disk full): dropped, answered 503
  // keet refused the request on its headers while a body was on its way: the
  // body is read and dropped and this answer sent after it, because a client
  // that sends before it reads (Python's http.client, requests) takes a
  // connection closed under its upload for a broken pipe and never sees the
  // 401 or 403.
  ReplyState* refusal = nullptr;
  ~Exchange() {
    if (multipart) MHD_destroy_post_processor(multipart);
    discard(refusal);
  }
};

// ----------------------------------------------------------------- logging

// At most one line a second reaches keet's log, with a count of those
// dropped: a flood of refused connections must not become a flood of lines.
// `always`: a line that is bounded already (the request watchdog's, at most
// two a second) is written whatever came just before it.
void log_line(Server& s, const std::string& line, bool always = false) {
  if (!s.config.log) return;
  if (always) return s.config.log(s.config.log_context, line.c_str());
  std::string out;
  {
    std::lock_guard lock(s.mu);
    auto now = std::chrono::steady_clock::now();
    if (now - s.last_log < std::chrono::seconds(1)) {
      ++s.unlogged;
      return;
    }
    out = line;
    if (s.unlogged) out += " (" + std::to_string(s.unlogged) + " similar lines dropped)";
    s.unlogged = 0;
    s.last_log = now;
  }
  s.config.log(s.config.log_context, out.c_str());
}

void mhd_log(void* cls, const char* format, va_list ap) {
  char buf[512];
  vsnprintf(buf, sizeof buf, format, ap);
  std::string line = buf;
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
  log_line(*static_cast<Server*>(cls), line);
}

// -------------------------------------------------------- request deadline

std::string client_address(MHD_Connection* c);

Clock::duration request_timeout(const Server& s) {
  return std::chrono::seconds(s.config.request_timeout_s > 0 ? s.config.request_timeout_s : 30);
}

void on_connection(void* cls, MHD_Connection* c, void**, MHD_ConnectionNotificationCode code) {
  auto& s = *static_cast<Server*>(cls);
  std::lock_guard lock(s.watch_mu);
  if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
    s.watched.erase(c);
    return;
  }
  const MHD_ConnectionInfo* info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
  if (!info) return;
  auto now = Clock::now();
  s.watched[c] = Watch{info->connect_fd, client_address(c), now, now + request_timeout(s)};
}

// What the request's handling tells its connection's watch.
template <class F>
void update_watch(Server& s, MHD_Connection* c, F&& update) {
  std::lock_guard lock(s.watch_mu);
  if (auto it = s.watched.find(c); it != s.watched.end()) update(it->second);
}

// Past its due time, a request whose headers have not all come, or whose
// body is behind the rate (counted from the due time), is late.
bool late(const Server& s, const Watch& w, Clock::time_point now) {
  if (!w.receiving || w.fd < 0 || now < w.due) return false;
  if (!w.body) return true;
  double owed = std::chrono::duration<double>(now - w.due).count() * static_cast<double>(s.config.min_body_bytes_per_s);
  return static_cast<double>(w.received) < owed;
}

// Twice a second: a late request's socket is shut down, and libmicrohttpd,
// reading its end, closes the connection in its own thread. One log line
// says what each closed connection had not sent.
void watch_requests(Server& s) {
  std::unique_lock lock(s.watch_mu);
  while (!s.watch_stopping) {
    s.watch_cv.wait_for(lock, std::chrono::milliseconds(500));
    auto now = Clock::now();
    std::string closed;
    int count = 0;
    for (auto& [c, w] : s.watched) {
      if (!late(s, w, now)) continue;
      ::shutdown(w.fd, SHUT_RDWR);
      w.fd = -1;
      if (++count > 4) continue;  // the line names four; the count says the rest
      closed += (closed.empty() ? "" : "; ") + std::string("a request from ") + w.remote +
                (w.body ? " sent its body slower than " + std::to_string(s.config.min_body_bytes_per_s) +
                              " bytes/s after the request timeout"
                        : " had not sent its line and headers within the request timeout");
    }
    if (closed.empty()) continue;
    lock.unlock();
    if (count > 4) closed += "; and " + std::to_string(count - 4) + " more";
    log_line(s, "connections closed: " + closed, true);
    lock.lock();
  }
}

// ---------------------------------------------------------------- replies

// What keet's reply callbacks build: status and headers first, then a body
// or a stream, which makes the MHD response.
struct ReplyState {
  int status = 200;
  std::vector<std::pair<std::string, std::string>> headers;
  MHD_Response* response = nullptr;

  void finish(const char* content_type) {
    if (!response) return;
    MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
    for (const auto& [k, v] : headers) MHD_add_response_header(response, k.c_str(), v.c_str());
  }
};

// A stream keet handed over, read by MHD through next(): what keet writes
// in one call is buffered and handed out as MHD asks for it.
struct StreamState {
  keet_httpd_stream stream{};
  std::string pending;
  size_t sent = 0;
  bool over = false;
};

ssize_t read_stream(void* cls, uint64_t, char* buf, size_t max) {
  auto& st = *static_cast<StreamState*>(cls);
  while (st.sent == st.pending.size()) {
    st.pending.clear();
    st.sent = 0;
    if (st.over) return MHD_CONTENT_READER_END_OF_STREAM;
    keet_httpd_writer w{&st.pending, [](void* ctx, const char* data, size_t size) -> int {
                          static_cast<std::string*>(ctx)->append(data, size);
                          return 1;
                        }};
    if (!st.stream.next(st.stream.context, &w)) st.over = true;
  }
  size_t n = std::min(max, st.pending.size() - st.sent);
  std::memcpy(buf, st.pending.data() + st.sent, n);
  st.sent += n;
  return static_cast<ssize_t>(n);
}

void free_stream(void* cls) {
  auto* st = static_cast<StreamState*>(cls);
  st->stream.release(st->stream.context);
  delete st;
}

void discard(ReplyState* st) {
  if (st && st->response) MHD_destroy_response(st->response);
  delete st;
}

keet_httpd_reply reply_for(ReplyState& st) {
  keet_httpd_reply r{};
  r.context = &st;
  r.status = [](void* ctx, int status) { static_cast<ReplyState*>(ctx)->status = status; };
  r.header = [](void* ctx, const char* name, const char* value) {
    static_cast<ReplyState*>(ctx)->headers.emplace_back(name, value);
  };
  r.body = [](void* ctx, const char* data, size_t size, const char* type) {
    auto& st = *static_cast<ReplyState*>(ctx);
    if (st.response) return;
    st.response = MHD_create_response_from_buffer(size, const_cast<char*>(data), MHD_RESPMEM_MUST_COPY);
    st.finish(type);
  };
  r.stream = [](void* ctx, const keet_httpd_stream* s, const char* type) {
    auto& st = *static_cast<ReplyState*>(ctx);
    auto* stream = new StreamState{*s, {}, 0, false};
    if (st.response) return free_stream(stream);
    st.response = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16 * 1024, read_stream, stream, free_stream);
    if (!st.response) return free_stream(stream);
    st.finish(type);
  };
  return r;
}

MHD_Result queue(MHD_Connection* c, Exchange& x, ReplyState& st) {
  x.answered = true;
  if (!st.response) return MHD_NO;  // out of memory: drop the connection
  MHD_Result r = MHD_queue_response(c, static_cast<unsigned>(st.status), st.response);
  MHD_destroy_response(st.response);
  st.response = nullptr;
  return r;
}

// The plugin's own refusals, in keet's error shape ({"error": ...}).
MHD_Result refuse(MHD_Connection* c, Exchange& x, int status, const std::string& message, bool close) {
  ReplyState st;
  st.status = status;
  if (close) st.headers.emplace_back("Connection", "close");
  std::string body = "{\"error\":\"" + message + "\"}";
  reply_for(st).body(&st, body.data(), body.size(), "application/json");
  return queue(c, x, st);
}

// ---------------------------------------------------------------- requests

std::string client_address(MHD_Connection* c) {
  const MHD_ConnectionInfo* info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
  if (!info || !info->client_addr) return "";
  char host[NI_MAXHOST] = "";
  socklen_t len = info->client_addr->sa_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
  if (getnameinfo(info->client_addr, len, host, sizeof host, nullptr, 0, NI_NUMERICHOST) != 0) return "";
  return host;
}

MHD_Result collect_pair(void* cls, MHD_ValueKind, const char* key, const char* value) {
  static_cast<std::vector<std::pair<std::string, std::string>>*>(cls)->emplace_back(key ? key : "", value ? value : "");
  return MHD_YES;
}

// Strings live in the exchange for the whole call; only pointers are built.
struct CRequest {
  std::vector<keet_httpd_header> params, headers;
  std::vector<keet_httpd_part> parts;
  keet_httpd_request req{};
};

void fill(const Exchange& x, CRequest& c) {
  for (const auto& [k, v] : x.params) c.params.push_back({k.c_str(), v.c_str()});
  for (const auto& [k, v] : x.headers) c.headers.push_back({k.c_str(), v.c_str()});
  for (const auto& p : x.parts) c.parts.push_back({p->field.c_str(), p->filename.c_str(), p->body.view()});
  c.req = {x.method.c_str(), x.path.c_str(), c.params.data(), c.params.size(), c.headers.data(),
           c.headers.size(), x.body.view(),  c.parts.data(),  c.parts.size(),  x.remote.c_str()};
}

MHD_Result on_part(void* cls, MHD_ValueKind, const char* key, const char* filename, const char*, const char*,
                   const char* data, uint64_t offset, size_t size) {
  auto& [s, x] = *static_cast<std::pair<Server*, Exchange*>*>(cls);
  std::string field = key ? key : "";
  bool continues =
      !x->parts.empty() && x->parts.back()->field == field && (offset > 0 || x->parts.back()->body.size == 0);
  if (!continues) {
    x->parts.push_back(std::make_unique<Part>());
    x->parts.back()->field = field;
    x->parts.back()->filename = filename ? filename : "";
  }
  if (size > 0 && !x->parts.back()->body.append(data, size, x->memory_left, s->spool_dir)) {
    x->failed = true;
    return MHD_NO;
  }
  return MHD_YES;
}

bool is_multipart(MHD_Connection* c) {
  const char* type = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
  return type && strncasecmp(type, "multipart/form-data", 19) == 0;
}

// A body is on its way: announced by its length or by chunked encoding.
bool has_body(MHD_Connection* c) {
  const char* length = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
  const char* chunked = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING);
  return (length && std::strtoull(length, nullptr, 10) > 0) || chunked;
}

// How far past the limit a body is still read (and dropped) so that its
// client, which may not read before it has sent everything, gets the 413:
// a body announced as longer than this past the limit is refused at once.
// A refused request's body is drained up to this many bytes too.
constexpr size_t kDrainBytes = 16u << 20;

uint64_t declared_length(MHD_Connection* c) {
  const char* length = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
  return length ? std::strtoull(length, nullptr, 10) : 0;
}

// The client waits for "100 Continue" before it sends its body: an answer now
// costs it nothing to read, and it never sends the body.
bool waits_to_send(MHD_Connection* c) {
  const char* expect = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_EXPECT);
  return expect && strcasecmp(expect, "100-continue") == 0;
}

// Whether the client is sending its body now: bytes arrive within `ms` of its
// headers. A client that reads the answer before it sends (without Expect:
// 100-continue) sends nothing until it has one.
bool body_arriving(MHD_Connection* c, int ms) {
  const MHD_ConnectionInfo* info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
  if (!info) return false;
  pollfd p{info->connect_fd, POLLIN, 0};
  return poll(&p, 1, ms) > 0 && (p.revents & POLLIN);
}

// Answers keet's refusal now, or, when a body of a known, bounded length is
// arriving from a client that sends before it reads, after that body has
// been read and dropped.
MHD_Result refuse_on_headers(MHD_Connection* c, Exchange& x, ReplyState& st, bool body) {
  // A chunked body announces no length: it may go on without end, and is
  // refused at once, as one announced longer than is worth draining. A client
  // that waits for the answer gets it at once too (after 100 ms of silence).
  uint64_t length = declared_length(c);
  if (!body || waits_to_send(c) || length == 0 || length > kDrainBytes || !body_arriving(c, 100)) {
    if (body && st.response) MHD_add_response_header(st.response, MHD_HTTP_HEADER_CONNECTION, "close");
    return queue(c, x, st);
  }
  x.refusal = new ReplyState(std::move(st));
  st.response = nullptr;
  return MHD_YES;
}

// Bytes that are read only to be dropped (a refused request's body, one past
// the limit, one with no room on disk), up to `bound` in all; past it the
// connection is closed.
MHD_Result drop(Server& s, Exchange& x, size_t bound, const char* why) {
  if (x.received <= bound) return MHD_YES;
  log_line(s, "a body from " + x.remote + " " + why + " went on past " + std::to_string(bound) +
                  " bytes: connection closed");
  return MHD_NO;
}

std::string limit_text(const Server& s) {
  return "the request body is over the limit of " + std::to_string(s.config.max_body_bytes) +
         " bytes (--max-upload and room for multipart framing)";
}

// The first call, on the headers alone: keet's checks, then the declared
// length against the limit. An answer given here is sent without reading
// the body (a client waiting for 100 Continue never sends it), and the
// connection is closed after it so that a body already on its way is not
// taken for the next request.
MHD_Result begin(Server& s, MHD_Connection* c, const char* url, const char* method, Exchange& x) {
  x.method = method;
  x.path = url;
  x.remote = client_address(c);
  x.memory_left = s.config.memory_body_bytes;
  MHD_get_connection_values(c, MHD_HEADER_KIND, collect_pair, &x.headers);
  MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, collect_pair, &x.params);
  bool body = has_body(c);
  update_watch(s, c, [&](Watch& w) {
    w.body = body;
    w.receiving = body;
  });
  if (s.config.admit) {
    CRequest cr;
    fill(x, cr);
    ReplyState st;
    auto reply = reply_for(st);
    if (s.config.admit(s.config.admit_context, &cr.req, &reply) == 0) return refuse_on_headers(c, x, st, body);
  }
  const char* length = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
  if (length && std::strtoull(length, nullptr, 10) > s.config.max_body_bytes) {
    if (std::strtoull(length, nullptr, 10) > s.config.max_body_bytes + kDrainBytes)
      return refuse(c, x, 413, limit_text(s), true);
    x.over_limit = true;  // read and dropped, so that a client which does not wait reads the 413
  }
  if (body && is_multipart(c)) {
    x.multipart_context = std::make_unique<std::pair<Server*, Exchange*>>(&s, &x);
    x.multipart = MHD_create_post_processor(c, 64 * 1024, on_part, x.multipart_context.get());
    if (!x.multipart) return refuse(c, x, 400, "the multipart body has no boundary", true);
  }
  return MHD_YES;
}

// A piece of the body. Past the limit it is counted and dropped, and the
// 413 goes out when the body has ended (libmicrohttpd 0.9.75 cannot answer
// while a body is still arriving); past the limit and kDrainBytes more, the
// connection is closed.
MHD_Result take(Server& s, MHD_Connection* c, Exchange& x, const char* data, size_t size) {
  x.received += size;
  update_watch(s, c, [&](Watch& w) { w.received = x.received; });
  if (x.refusal) return drop(s, x, kDrainBytes, "that was refused");
  if (x.received > s.config.max_body_bytes && !x.over_limit && !x.no_room) {
    x.over_limit = true;
    x.body.reset();
    x.parts.clear();
  }
  if (x.over_limit) return drop(s, x, s.config.max_body_bytes + kDrainBytes, "over the limit");
  if (x.no_room) return drop(s, x, s.config.max_body_bytes + kDrainBytes, "with no room to spool it");
  bool ok = x.multipart ? MHD_post_process(x.multipart, data, size) == MHD_YES && !x.failed
                        : x.body.append(data, size, x.memory_left, s.spool_dir);
  if (ok) return MHD_YES;
  if (x.failed || !x.multipart) {  // the spool folder's disk is full (or gone): 503 once the body has ended
    log_line(s, "a body from " + x.remote + " could not be spooled (disk full?): answered 503");
    x.no_room = true;
    x.body.reset();
    x.parts.clear();
    return MHD_YES;
  }
  log_line(s, "a body from " + x.remote + " could not be parsed (malformed multipart)");
  return MHD_NO;
}

MHD_Result answer(Server& s, MHD_Connection* c, Exchange& x) {
  if (x.refusal) {
    if (x.refusal->response) MHD_add_response_header(x.refusal->response, MHD_HTTP_HEADER_CONNECTION, "close");
    return queue(c, x, *x.refusal);
  }
  if (x.over_limit) return refuse(c, x, 413, limit_text(s), false);
  if (x.no_room)
    return refuse(c, x, 503, "the server has no room to store the upload (its disk is full); try again later", true);
  CRequest cr;
  fill(x, cr);
  ReplyState st;
  auto reply = reply_for(st);
  s.config.handler(s.config.handler_context, &cr.req, &reply);
  return queue(c, x, st);
}

MHD_Result on_request(void* cls, MHD_Connection* c, const char* url, const char* method, const char*, const char* data,
                      size_t* size, void** context) {
  auto& s = *static_cast<Server*>(cls);
  try {
    auto* x = static_cast<Exchange*>(*context);
    if (!x) {
      x = new Exchange;
      *context = x;
      return begin(s, c, url, method, *x);
    }
    if (x->answered) {  // refused on its headers; what still arrives is dropped
      *size = 0;
      return MHD_YES;
    }
    if (*size > 0) {
      MHD_Result r = take(s, c, *x, data, *size);
      *size = 0;
      return r;
    }
    update_watch(s, c, [](Watch& w) { w.receiving = false; });
    return answer(s, c, *x);
  } catch (...) {  // no exception may cross into C
    return MHD_NO;
  }
}

// A request is over (answered, or its connection closed): the next one on
// the connection has the request timeout from now.
void on_completed(void* cls, MHD_Connection* c, void** context, MHD_RequestTerminationCode) {
  delete static_cast<Exchange*>(*context);
  *context = nullptr;
  auto& s = *static_cast<Server*>(cls);
  update_watch(s, c, [&](Watch& w) {
    w.started = Clock::now();
    w.due = w.started + request_timeout(s);
    w.receiving = true;
    w.body = false;
    w.received = 0;
  });
}

// ---------------------------------------------------------------- sockets

// keet makes the listening socket itself: SO_REUSEADDR (a restart need not
// wait for TIME_WAIT; on Linux it never lets two sockets listen on one port)
// but never SO_REUSEPORT (with which a second server would take half the
// connections), and a backlog the kernel's largest, for bursts.
int listen_on(const std::string& host, int port, int& bound_port, std::string& error) {
  addrinfo hints{}, *found = nullptr;
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  std::string service = std::to_string(port);
  if (int rc = getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints, &found); rc != 0) {
    error = "cannot listen on " + host + ": " + gai_strerror(rc);
    return -1;
  }
  int fd = -1, why = 0;
  for (addrinfo* a = found; a && fd < 0; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    int yes = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    if (bind(fd, a->ai_addr, a->ai_addrlen) != 0 || listen(fd, SOMAXCONN) != 0) {
      why = errno;
      ::close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(found);
  if (fd < 0) {
    error = "cannot listen on " + host + ":" + std::to_string(port) + " (" +
            (why == EADDRINUSE ? "address in use" : std::strerror(why)) + ")";
    return -1;
  }
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  bound_port = ntohs(addr.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port
                                                : reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
  return fd;
}

void* start(const keet_httpd_config& config, std::string& error) {
  auto s = std::make_unique<Server>();
  s->config = config;
  s->host = config.host ? config.host : "";
  s->spool_dir = config.spool_dir ? config.spool_dir : "/tmp";
  int fd = listen_on(s->host, config.port, s->port, error);
  if (fd < 0) return nullptr;
  unsigned connections = config.max_connections > 0 ? static_cast<unsigned>(config.max_connections) : 256;
  unsigned per_client =
      config.max_connections_per_client > 0 ? static_cast<unsigned>(config.max_connections_per_client) : 0;
  unsigned idle = config.idle_timeout_s > 0 ? static_cast<unsigned>(config.idle_timeout_s) : 30;
  size_t header_memory = config.header_memory_bytes >= 4096 ? config.header_memory_bytes : 64 * 1024;
  // A thread per connection: keet's handlers block (the job store, an LLM
  // question), and a slow client then holds only its own thread.
  unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_POLL_INTERNAL_THREAD | MHD_USE_ITC | MHD_USE_ERROR_LOG;
  s->daemon = MHD_start_daemon(flags, 0, nullptr, nullptr, on_request, s.get(),       //
                               MHD_OPTION_EXTERNAL_LOGGER, mhd_log, s.get(),          // first, or it misses some  //
                               MHD_OPTION_LISTEN_SOCKET, fd,                          //
                               MHD_OPTION_CONNECTION_LIMIT, connections,              //
                               MHD_OPTION_PER_IP_CONNECTION_LIMIT, per_client,        //
                               MHD_OPTION_CONNECTION_TIMEOUT, idle,                   //
                               MHD_OPTION_CONNECTION_MEMORY_LIMIT, header_memory,     //
                               MHD_OPTION_NOTIFY_COMPLETED, on_completed, s.get(),    //
                               MHD_OPTION_NOTIFY_CONNECTION, on_connection, s.get(),  //
                               MHD_OPTION_END);
  if (!s->daemon) {
    ::close(fd);
    error = "the HTTP server (libmicrohttpd) could not start on " + s->host + ":" + std::to_string(s->port);
    return nullptr;
  }
  s->watchdog = std::thread([server = s.get()] { watch_requests(*server); });
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
  auto& s = *static_cast<Server*>(server);
  std::unique_lock lock(s.mu);
  s.cv.wait(lock, [&] { return s.stopping; });
}

// Stops taking connections at once (the port is free again); connections
// already open are finished when the server is freed.
KEET_EXPORT void keet_httpd_stop(void* server) {
  auto& s = *static_cast<Server*>(server);
  std::lock_guard lock(s.mu);
  if (!s.stopping) {
    int fd = MHD_quiesce_daemon(s.daemon);
    if (fd >= 0) ::close(fd);
  }
  s.stopping = true;
  s.cv.notify_all();
}

KEET_EXPORT void keet_httpd_free(void* server) {
  auto* s = static_cast<Server*>(server);
  {
    std::lock_guard lock(s->watch_mu);
    s->watch_stopping = true;
  }
  s->watch_cv.notify_all();
  if (s->watchdog.joinable()) s->watchdog.join();
  MHD_stop_daemon(s->daemon);
  delete s;
}
