// A tiny HTTP forward proxy on 127.0.0.1 for transport tests: it takes
// absolute-form requests ("POST http://host:port/path HTTP/1.1"), forwards
// them and records what it forwarded. Host names under .invalid (which never
// resolve) are sent to 127.0.0.1, so a request to http://llm.invalid:PORT/
// can only succeed through the proxy. CONNECT (https) is not served.
#pragma once
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace httplib {
class Server;
}

namespace keet::testing {

struct ProxiedRequest {
  std::string target;               // the absolute URL asked for
  std::string proxy_authorization;  // the Proxy-Authorization header, if any
};

class TestHttpProxy {
 public:
  TestHttpProxy();
  ~TestHttpProxy();
  TestHttpProxy(const TestHttpProxy&) = delete;
  TestHttpProxy& operator=(const TestHttpProxy&) = delete;

  int port() const { return port_; }
  std::string url() const;  // http://127.0.0.1:PORT
  std::vector<ProxiedRequest> requests() const;

 private:
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int port_ = 0;
  mutable std::mutex mu_;
  std::vector<ProxiedRequest> requests_;
};

}  // namespace keet::testing
