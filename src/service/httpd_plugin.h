// The C interface of the HTTP server half of libkeet_http.so
// (src/plugins/http/httpd_plugin.cc, GNU libmicrohttpd). keet links the C++
// runtime statically, so no C++ object may cross into the plugin, and only C
// types pass here. The plugin moves bytes and enforces the transport's
// bounds (connections, per-client connections, idle time, a request's time,
// header memory, body size); routing, authentication and every answer are decided in libkeet
// (service/http_server.h), where tests reach them.
#pragma once
#include <stddef.h>

extern "C" {

#define KEET_HTTPD_ABI_VERSION 4

struct keet_httpd_header {
  const char* name;  // as received (keet lower-cases it)
  const char* value;
};

// A body or one part of it: in memory (`data`) while small, else spooled to
// `file` (a path under the configured spool folder that the plugin removes
// once the request is answered; keet may rename it away first).
struct keet_httpd_body {
  const char* data;  // NULL when spooled
  const char* file;  // NULL when in memory
  size_t size;
};

// One part of a multipart/form-data body.
struct keet_httpd_part {
  const char* field;     // the form field's name
  const char* filename;  // as the client sent it: never used as a path
  struct keet_httpd_body body;
};

struct keet_httpd_request {
  const char* method;
  const char* path;                        // decoded path, no query
  const struct keet_httpd_header* params;  // decoded query parameters
  size_t param_count;
  const struct keet_httpd_header* headers;
  size_t header_count;
  struct keet_httpd_body body;  // empty for multipart bodies: see parts
  const struct keet_httpd_part* parts;
  size_t part_count;
  const char* remote_addr;
};

// A streamed body (server-sent events): the plugin calls next() until it
// returns 0, handing it write(), which buffers what next() writes (it
// returns 0 only if the bytes cannot be taken); a client that has gone is
// noticed when the plugin sends, and ends the stream. release() is called
// exactly once at the end, however it ended.
struct keet_httpd_writer {
  void* context;
  int (*write)(void* context, const char* data, size_t size);
};
struct keet_httpd_stream {
  void* context;
  int (*next)(void* context, const struct keet_httpd_writer* writer);
  void (*release)(void* context);
};

// keet fills the reply through these (status and headers first); the plugin
// copies what it is given.
struct keet_httpd_reply {
  void* context;
  void (*status)(void* context, int status);
  void (*header)(void* context, const char* name, const char* value);
  void (*body)(void* context, const char* data, size_t size, const char* content_type);
  void (*stream)(void* context, const struct keet_httpd_stream* stream, const char* content_type);
};

typedef void (*keet_httpd_handler)(void* context, const struct keet_httpd_request* request,
                                   const struct keet_httpd_reply* reply);
// Asked before a request's body is read (the request has no body yet):
// nonzero to go on and read it; zero when keet refused the request and filled
// `reply`, and the body is never read (nor, with Expect: 100-continue, sent).
typedef int (*keet_httpd_admit)(void* context, const struct keet_httpd_request* request,
                                const struct keet_httpd_reply* reply);
// One line about the transport (a refused connection, a limit reached).
typedef void (*keet_httpd_log)(void* context, const char* line);

struct keet_httpd_config {
  const char* host;
  int port;                        // 0: any free port (keet_httpd_port tells which)
  size_t max_body_bytes;           // a longer body is refused (413 when announced, else the connection is closed)
  size_t memory_body_bytes;        // a request's body bytes kept in memory; past this they go to spool_dir
  const char* spool_dir;           // where bodies go; on the file system of keet's upload store
  int max_connections;             // open at once; each has its own thread
  int max_connections_per_client;  // open at once from one address
  int idle_timeout_s;              // a connection silent this long is closed
  // A request's line and headers must have arrived this long after the
  // connection opened or its previous answer went out, and its body then
  // arrives at min_body_bytes_per_s on average once this long has passed;
  // else the connection is closed: a client trickling bytes holds a
  // connection (and its address's share) this long, not for ever.
  int request_timeout_s;
  size_t min_body_bytes_per_s;
  size_t header_memory_bytes;  // request line and headers of one request must fit
  keet_httpd_handler handler;
  void* handler_context;
  keet_httpd_admit admit;  // NULL: every body is read
  void* admit_context;
  keet_httpd_log log;  // NULL: transport messages are dropped
  void* log_context;
};

typedef int (*keet_httpd_abi_version_fn)(void);
// Binds the socket; NULL (and `error` filled) when it cannot.
typedef void* (*keet_httpd_start_fn)(const struct keet_httpd_config* config, char* error, size_t error_size);
typedef int (*keet_httpd_port_fn)(void* server);
typedef void (*keet_httpd_run_fn)(void* server);   // serves until stopped
typedef void (*keet_httpd_stop_fn)(void* server);  // from any thread; run() returns
typedef void (*keet_httpd_free_fn)(void* server);  // after run() has returned

}  // extern "C"
