#include "llm/http.h"
#include "util/error.h"

#include <algorithm>
#include <cstdlib>
#include <thread>

#include "io/dynlib.h"
#include "llm/http_plugin.h"
#include "util/strings.h"

#ifndef KEET_PLUGIN_BUILD_DIR
#define KEET_PLUGIN_BUILD_DIR ""
#endif
#ifndef KEET_PLUGIN_INSTALL_DIR
#define KEET_PLUGIN_INSTALL_DIR "lib/keet"
#endif

namespace keet::llm {

std::string HttpResponse::header(const std::string& lower_name) const {
  auto it = headers.find(lower_name);
  return it == headers.end() ? "" : it->second;
}

std::pair<std::string, std::string> split_url(const std::string& url) {
  std::string full = url.find("://") == std::string::npos ? "http://" + url : url;
  size_t host_start = full.find("://") + 3;
  size_t path_start = full.find('/', host_start);
  if (path_start == std::string::npos) return {full, ""};
  return {full.substr(0, path_start), full.substr(path_start)};
}

namespace {

constexpr const char* kPluginName = "libkeet_http.so";

// Where the plugin may be: named by KEET_HTTP_PLUGIN, beside the executable
// (the build folder), in the installed lib/keet beside bin/ (CMakeLists.txt
// install rules), or in the folder it was built in (test binaries live in a
// sub-folder of the build).
std::vector<std::string> plugin_candidates() {
  std::vector<std::string> out;
  if (const char* env = std::getenv("KEET_HTTP_PLUGIN"); env && *env) return {env};
  if (auto dir = io::executable_dir(); !dir.empty()) {
    out.push_back(dir + "/" + kPluginName);
    out.push_back(dir + "/../" KEET_PLUGIN_INSTALL_DIR "/" + kPluginName);
  }
  if (*KEET_PLUGIN_BUILD_DIR) out.push_back(std::string(KEET_PLUGIN_BUILD_DIR) + "/" + kPluginName);
  return out;
}

// A library at `path` that answers to the plugin's version call.
Result<void*> open_plugin(const std::string& path) {
  KEET_TRY(lib, io::open_library(path));
  keet_http_abi_version_fn version = nullptr;
  if (!io::bind_symbol(*lib, "keet_http_abi_version", version))
    return fail(ExitCode::Dependency, path + ": not a KEET HTTP plugin");
  if (version() != KEET_HTTP_ABI_VERSION) return fail(ExitCode::Dependency, path + ": plugin of another keet version");
  return *lib;
}

Result<void*> load_plugin() {
  Error last{ExitCode::Dependency, std::string(kPluginName) + " not found"};
  for (const auto& path : plugin_candidates()) {
    auto lib = open_plugin(path);
    if (lib) return lib;
    last = lib.error();
  }
  return fail(ExitCode::Dependency, "HTTP support unavailable (" + last.message + ")");
}

Result<keet_http_post_fn> bind_post() {
  KEET_TRY(lib, http_plugin_library());
  keet_http_post_fn post = nullptr;
  if (!io::bind_symbol(*lib, "keet_http_post", post))
    return fail(ExitCode::Dependency, "HTTP plugin without keet_http_post");
  return post;
}

const Result<keet_http_post_fn>& plugin() {
  static const Result<keet_http_post_fn> loaded = bind_post();
  return loaded;
}

// Collects what the plugin reports through the C sink.
struct Collected {
  HttpResponse response;
  std::optional<HttpError> error;
};

keet_http_sink sink_for(Collected& c) {
  keet_http_sink s{};
  s.context = &c;
  s.status = [](void* ctx, int status) { static_cast<Collected*>(ctx)->response.status = status; };
  s.header = [](void* ctx, const char* name, const char* value) {
    static_cast<Collected*>(ctx)->response.headers[to_lower(name)] = value;
  };
  s.body = [](void* ctx, const char* data, size_t size) {
    static_cast<Collected*>(ctx)->response.body.assign(data, size);
  };
  s.error = [](void* ctx, int failure, const char* message) {
    auto kind = failure == KEET_HTTP_CONNECT     ? HttpFailure::Connect
                : failure == KEET_HTTP_TIMEOUT   ? HttpFailure::Timeout
                : failure == KEET_HTTP_TOO_LARGE ? HttpFailure::TooLarge
                                                 : HttpFailure::Other;
    static_cast<Collected*>(ctx)->error = HttpError{kind, message};
  };
  return s;
}

class PluginClient final : public HttpClient {
 public:
  PluginClient(const Timeouts& t, ProxyEnv proxies) : timeouts_(t), proxies_(std::move(proxies)) {}

  std::expected<HttpResponse, HttpError> post(const HttpRequest& req) override {
    if (!plugin()) return std::unexpected(HttpError{HttpFailure::Unavailable, plugin().error().message});
    auto proxy = proxy_for(req.url, proxies_);
    // A proxy variable that cannot be used will not become usable by retrying.
    if (!proxy) return std::unexpected(HttpError{HttpFailure::Unavailable, proxy.error()});
    auto res = send(req, *proxy);
    // Which proxy (host:port, never its credentials) when going through one.
    if (!res && *proxy) res.error().message += " (through proxy " + (*proxy)->where() + ")";
    return res;
  }

 private:
  std::expected<HttpResponse, HttpError> send(const HttpRequest& req, const std::optional<Proxy>& proxy) {
    auto [origin, path] = split_url(req.url);
    if (path.empty()) path = "/";
    std::vector<keet_http_header> headers;
    for (const auto& [k, v] : req.headers) headers.push_back({k.c_str(), v.c_str()});
    keet_http_request r{origin.c_str(),
                        path.c_str(),
                        headers.data(),
                        headers.size(),
                        req.body.data(),
                        req.body.size(),
                        static_cast<long>(timeouts_.connect.count()),
                        static_cast<long>(std::min(timeouts_.read, timeouts_.total).count()),
                        static_cast<long>(timeouts_.total.count()),
                        timeouts_.max_body_bytes,
                        proxy ? proxy->host.c_str() : nullptr,
                        proxy ? proxy->port : 0,
                        proxy ? proxy->user.c_str() : nullptr,
                        proxy ? proxy->password.c_str() : nullptr};
    Collected c;
    auto sink = sink_for(c);
    (*plugin())(&r, &sink);
    if (c.error) return std::unexpected(*c.error);
    return std::move(c.response);
  }

  Timeouts timeouts_;
  ProxyEnv proxies_;
};

class RealSleeper final : public Sleeper {
 public:
  void sleep_for(std::chrono::milliseconds d) override { std::this_thread::sleep_for(d); }
};

}  // namespace

const Result<void*>& http_plugin_library() {
  static const Result<void*> loaded = load_plugin();
  return loaded;
}

std::unique_ptr<HttpClient> make_http_client(const Timeouts& t, ProxyEnv proxies) {
  return std::make_unique<PluginClient>(t, std::move(proxies));
}

Sleeper& real_sleeper() {
  static RealSleeper s;
  return s;
}

}  // namespace keet::llm
