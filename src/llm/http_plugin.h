// The C interface between keet and its HTTP plugin, libkeet_http.so
// (src/plugins/http). HTTPS needs cpp-httplib and OpenSSL, whose loading and
// initialisation cost more than the rest of keet's start-up, so they live in a
// plugin opened by the first HTTP request. Only C types cross this boundary:
// keet links the C++ runtime statically, the plugin uses the shared one.
#pragma once
#include <stddef.h>

extern "C" {

#define KEET_HTTP_ABI_VERSION 3

struct keet_http_header {
  const char* name;
  const char* value;
};

struct keet_http_request {
  const char* origin;  // scheme://host[:port]
  const char* path;    // "/v1/chat/completions"
  const struct keet_http_header* headers;
  size_t header_count;
  const char* body;
  size_t body_size;
  long connect_timeout_s;
  long read_timeout_s;
  long total_timeout_s;   // the whole request, however slowly the server trickles
  size_t max_body_bytes;  // a longer response is cut off and reported as an error
  // The HTTP proxy to go through (keet chose it from HTTPS_PROXY/NO_PROXY...);
  // proxy_host NULL or "" for a direct connection. https targets tunnel with CONNECT.
  const char* proxy_host;
  int proxy_port;
  const char* proxy_user;  // NULL or "": no Proxy-Authorization
  const char* proxy_password;
};

enum keet_http_failure { KEET_HTTP_CONNECT = 0, KEET_HTTP_TIMEOUT = 1, KEET_HTTP_OTHER = 2, KEET_HTTP_TOO_LARGE = 3 };

// The plugin reports the response through these; keet copies what it is given.
struct keet_http_sink {
  void* context;
  void (*status)(void* context, int status);
  void (*header)(void* context, const char* name, const char* value);
  void (*body)(void* context, const char* data, size_t size);
  void (*error)(void* context, int failure, const char* message);
};

typedef int (*keet_http_abi_version_fn)(void);
typedef void (*keet_http_post_fn)(const struct keet_http_request* request, const struct keet_http_sink* sink);

}  // extern "C"
