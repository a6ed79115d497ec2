#include "support/http_proxy.h"

#include <httplib.h>

namespace keet::testing {

namespace {

// "http://host:port/path" -> {"http://127.0.0.1:port" for .invalid hosts, "/path"}.
std::pair<std::string, std::string> route(const std::string& target) {
  auto host_start = target.find("://") + 3;
  auto path_start = target.find('/', host_start);
  std::string authority = target.substr(host_start, path_start - host_start);
  std::string path = path_start == std::string::npos ? "/" : target.substr(path_start);
  auto colon = authority.rfind(':');
  std::string host = authority.substr(0, colon);
  std::string port = colon == std::string::npos ? "80" : authority.substr(colon + 1);
  if (host.ends_with(".invalid")) host = "127.0.0.1";
  return {"http://" + host + ":" + port, path};
}

}  // namespace

TestHttpProxy::TestHttpProxy() : server_(std::make_unique<httplib::Server>()) {
  server_->Post(".*", [this](const httplib::Request& req, httplib::Response& res) {
    // A request in origin form was not meant for a proxy.
    if (!req.target.starts_with("http://")) {
      res.status = 400;
      return res.set_content("not a proxy request", "text/plain");
    }
    {
      std::lock_guard lock(mu_);
      requests_.push_back({req.target, req.get_header_value("Proxy-Authorization")});
    }
    auto [origin, path] = route(req.target);
    httplib::Client upstream(origin);
    httplib::Headers headers;
    for (const auto& [k, v] : req.headers)
      if (k != "Proxy-Authorization" && k != "Host" && k != "Content-Length" && k != "Content-Type")
        headers.emplace(k, v);
    auto answer = upstream.Post(path.c_str(), headers, req.body, req.get_header_value("Content-Type").c_str());
    if (!answer) {
      res.status = 502;
      return res.set_content("bad gateway: " + httplib::to_string(answer.error()), "text/plain");
    }
    res.status = answer->status;
    for (const auto& [k, v] : answer->headers)
      if (k == "Retry-After") res.set_header(k, v);
    res.set_content(answer->body, answer->get_header_value("Content-Type").c_str());
  });
  port_ = server_->bind_to_any_port("127.0.0.1");
  thread_ = std::thread([this] { server_->listen_after_bind(); });
  while (!server_->is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

TestHttpProxy::~TestHttpProxy() {
  server_->stop();
  if (thread_.joinable()) thread_.join();
}

std::string TestHttpProxy::url() const { return "http://127.0.0.1:" + std::to_string(port_); }

std::vector<ProxiedRequest> TestHttpProxy::requests() const {
  std::lock_guard lock(mu_);
  return requests_;
}

}  // namespace keet::testing
