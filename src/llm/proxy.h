// Which HTTP proxy a request goes through, from the variables curl and most
// tools read: https_proxy/HTTPS_PROXY for https:// URLs, http_proxy/HTTP_PROXY
// for http://, all_proxy/ALL_PROXY for either (the lower-case name first), and
// no_proxy/NO_PROXY for the hosts reached directly. Clusters often reach the
// internet only through such a proxy.
#pragma once
#include <expected>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace keet::llm {

// The variables, read once when the HTTP client is made.
struct ProxyEnv {
  std::string http, https, all, no_proxy;
  static ProxyEnv from(const std::function<std::string(const std::string&)>& getenv);
};

struct Proxy {
  std::string host;
  int port = 1080;             // curl's default proxy port
  std::string user, password;  // from http://user:pass@host:port; never printed
  std::string where() const;   // "host:port": what messages say (no credentials)
};

// "[http://][user[:password]@]host[:port][/]"; user and password are
// percent-decoded. https:// and socks proxies are refused (the transport
// speaks plain HTTP to the proxy, and CONNECT through it for https targets).
std::expected<Proxy, std::string> parse_proxy(std::string_view value);

// curl's NO_PROXY rules: a comma- or space-separated list; "*" alone matches
// every host; a name matches itself and its subdomains (a leading dot is
// ignored: ".example.com" and "example.com" are the same entry); an IP
// address matches itself or, with "/bits", its CIDR range (IPv4 and IPv6);
// names compare case-insensitively. An entry with ":port" applies only to
// that port. Nothing is implicit: list localhost for a local Ollama.
bool no_proxy_matches(std::string_view no_proxy, std::string_view host, int port);

// The proxy for a request to `url` (scheme://host[:port]/...), nullopt when
// none applies; an error when the chosen variable cannot be used, naming the
// variable (never its credentials).
std::expected<std::optional<Proxy>, std::string> proxy_for(const std::string& url, const ProxyEnv& env);

}  // namespace keet::llm
