#include "llm/proxy.h"

#include <arpa/inet.h>
#include <fmt/format.h>

#include <array>
#include <charconv>
#include <cstring>

#include "util/strings.h"

namespace keet::llm {

namespace {

struct HostPort {
  std::string host;  // lower-case, IPv6 without brackets
  int port = 0;      // 0: none given
};

std::optional<int> parse_port(std::string_view s) {
  int port = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), port);
  if (ec != std::errc() || end != s.data() + s.size() || port <= 0 || port > 65535) return std::nullopt;
  return port;
}

// "host", "host:port", "[v6]", "[v6]:port", and a bare IPv6 address.
std::optional<HostPort> split_host_port(std::string_view s) {
  HostPort out;
  if (s.starts_with('[')) {
    auto close = s.find(']');
    if (close == std::string_view::npos) return std::nullopt;
    out.host = to_lower(s.substr(1, close - 1));
    auto rest = s.substr(close + 1);
    if (rest.empty()) return out;
    if (!rest.starts_with(':')) return std::nullopt;
    auto port = parse_port(rest.substr(1));
    if (!port) return std::nullopt;
    out.port = *port;
    return out;
  }
  auto colon = s.rfind(':');
  if (colon != std::string_view::npos && s.find(':') == colon) {  // one colon: host:port (more: bare IPv6)
    auto port = parse_port(s.substr(colon + 1));
    if (!port) return std::nullopt;
    out.port = *port;
    s = s.substr(0, colon);
  }
  out.host = to_lower(s);
  return out;
}

std::string percent_decode(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    int hi = 0, lo = 0;
    if (s[i] == '%' && i + 2 < s.size() &&
        std::from_chars(s.data() + i + 1, s.data() + i + 2, hi, 16).ec == std::errc() &&
        std::from_chars(s.data() + i + 2, s.data() + i + 3, lo, 16).ec == std::errc()) {
      out += static_cast<char>(hi * 16 + lo);
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

// An address in network byte order: 4 bytes (IPv4) or 16 (IPv6); size 0: not an address.
struct Address {
  std::array<unsigned char, 16> bytes{};
  size_t size = 0;
};

Address parse_address(const std::string& text) {
  Address a;
  if (inet_pton(AF_INET, text.c_str(), a.bytes.data()) == 1)
    a.size = 4;
  else if (inet_pton(AF_INET6, text.c_str(), a.bytes.data()) == 1)
    a.size = 16;
  return a;
}

bool same_prefix(const Address& a, const Address& b, size_t bits) {
  if (a.size != b.size || bits > a.size * 8) return false;
  for (size_t i = 0; i < bits / 8; ++i)
    if (a.bytes[i] != b.bytes[i]) return false;
  if (bits % 8 == 0) return true;
  unsigned mask = 0xFFu << (8 - bits % 8) & 0xFFu;
  return (a.bytes[bits / 8] & mask) == (b.bytes[bits / 8] & mask);
}

// One NO_PROXY entry (no port) against the host.
bool entry_matches(std::string_view entry, const std::string& host) {
  auto slash = entry.find('/');
  Address target = parse_address(host);
  if (target.size) {
    Address net = parse_address(std::string(entry.substr(0, slash)));
    if (!net.size) return false;
    size_t bits = net.size * 8;
    if (slash != std::string_view::npos) {
      auto b = parse_port(entry.substr(slash + 1));  // a small positive integer, as a port is
      if (!b && entry.substr(slash + 1) != "0") return false;
      bits = b ? static_cast<size_t>(*b) : 0;
    }
    return same_prefix(net, target, bits);
  }
  while (entry.starts_with('.')) entry.remove_prefix(1);
  while (entry.ends_with('.')) entry.remove_suffix(1);
  std::string name = to_lower(entry);
  if (name.empty()) return false;
  if (name == host) return true;
  return host.size() > name.size() && host.ends_with(name) && host[host.size() - name.size() - 1] == '.';
}

std::string first_set(const std::function<std::string(const std::string&)>& env, const char* lower, const char* upper) {
  auto v = env(lower);
  return v.empty() ? env(upper) : v;
}

}  // namespace

ProxyEnv ProxyEnv::from(const std::function<std::string(const std::string&)>& getenv) {
  return {first_set(getenv, "http_proxy", "HTTP_PROXY"), first_set(getenv, "https_proxy", "HTTPS_PROXY"),
          first_set(getenv, "all_proxy", "ALL_PROXY"), first_set(getenv, "no_proxy", "NO_PROXY")};
}

std::string Proxy::where() const {
  return host.find(':') == std::string::npos ? fmt::format("{}:{}", host, port) : fmt::format("[{}]:{}", host, port);
}

std::expected<Proxy, std::string> parse_proxy(std::string_view value) {
  value = trim(value);
  if (auto scheme_end = value.find("://"); scheme_end != std::string_view::npos) {
    auto scheme = to_lower(value.substr(0, scheme_end));
    if (scheme != "http") return std::unexpected(fmt::format("{}:// proxies are not supported (only http://)", scheme));
    value.remove_prefix(scheme_end + 3);
  }
  while (value.ends_with('/')) value.remove_suffix(1);
  Proxy p;
  if (auto at = value.rfind('@'); at != std::string_view::npos) {
    auto userinfo = value.substr(0, at);
    auto colon = userinfo.find(':');
    p.user = percent_decode(userinfo.substr(0, colon));
    if (colon != std::string_view::npos) p.password = percent_decode(userinfo.substr(colon + 1));
    value.remove_prefix(at + 1);
  }
  auto hp = split_host_port(value);
  if (!hp || hp->host.empty() || value.find('/') != std::string_view::npos)
    return std::unexpected("not a proxy address ([http://][user:password@]host[:port])");
  p.host = hp->host;
  if (hp->port) p.port = hp->port;
  return p;
}

bool no_proxy_matches(std::string_view no_proxy, std::string_view host, int port) {
  std::string h = to_lower(host);
  if (h.starts_with('[') && h.ends_with(']')) h = h.substr(1, h.size() - 2);
  std::string list(no_proxy);
  for (char& c : list)
    if (c == ' ' || c == '\t') c = ',';
  for (auto raw : split(list, ',')) {
    auto entry = trim(raw);
    if (entry.empty()) continue;
    if (entry == "*") return true;
    // "host:port" / "[v6]:port" apply to that port only; a bare IPv6 address has no port.
    auto slash = entry.find('/');
    auto hp = split_host_port(entry.substr(0, slash));
    if (!hp) continue;
    if (hp->port && hp->port != port) continue;
    std::string bare = hp->host + (slash == std::string_view::npos ? "" : std::string(entry.substr(slash)));
    if (entry_matches(bare, h)) return true;
  }
  return false;
}

std::expected<std::optional<Proxy>, std::string> proxy_for(const std::string& url, const ProxyEnv& env) {
  auto scheme_end = url.find("://");
  std::string scheme = scheme_end == std::string::npos ? "http" : to_lower(url.substr(0, scheme_end));
  std::string_view rest =
      scheme_end == std::string::npos ? std::string_view(url) : std::string_view(url).substr(scheme_end + 3);
  rest = rest.substr(0, rest.find('/'));
  if (auto at = rest.rfind('@'); at != std::string_view::npos) rest.remove_prefix(at + 1);
  auto hp = split_host_port(rest);
  if (!hp) return std::nullopt;  // the transport reports the bad URL itself
  int port = hp->port ? hp->port : scheme == "https" ? 443 : 80;
  bool https = scheme == "https";
  const std::string& chosen = https ? env.https : env.http;
  std::string value = chosen.empty() ? env.all : chosen;
  const char* variable = !chosen.empty() ? (https ? "HTTPS_PROXY" : "HTTP_PROXY") : "ALL_PROXY";
  if (value.empty() || no_proxy_matches(env.no_proxy, hp->host, port)) return std::nullopt;
  auto proxy = parse_proxy(value);
  if (!proxy) return std::unexpected(fmt::format("{}: {}", variable, proxy.error()));
  return std::optional<Proxy>(std::move(*proxy));
}

}  // namespace keet::llm
