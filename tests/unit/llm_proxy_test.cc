// Proxy variables (HTTPS_PROXY, NO_PROXY...): which proxy a URL goes
// through, curl's NO_PROXY rules, and requests through a real loopback
// forward proxy with the real HTTP plugin.
#include <gtest/gtest.h>

#include <map>

#include "llm/http.h"
#include "llm/proxy.h"
#include "support/fake_llm_server.h"
#include "support/http_proxy.h"

namespace keet {
namespace {

using namespace keet::llm;
using keet::testing::FakeLlmServer;
using keet::testing::TestHttpProxy;

TEST(LlmProxy, NoProxyFollowsCurl) {
  struct Case {
    const char* list;
    const char* host;
    int port;
    bool direct;
  };
  const Case cases[] = {
      {"*", "api.openai.com", 443, true},
      {"", "api.openai.com", 443, false},
      {"openai.com", "api.openai.com", 443, true},
      {".openai.com", "api.openai.com", 443, true},
      {".openai.com", "openai.com", 443, true},
      {"openai.com", "notopenai.com", 443, false},
      {"OpenAI.COM", "API.openai.com", 443, true},
      {"example.org, openai.com", "api.openai.com", 443, true},
      {"example.org openai.com", "api.openai.com", 443, true},
      {"api.openai.com.", "api.openai.com", 443, true},
      {"localhost,127.0.0.1", "127.0.0.1", 11434, true},
      {"127.0.0.1", "127.0.0.2", 80, false},
      {"10.0.0.0/8", "10.20.30.40", 80, true},
      {"10.0.0.0/8", "11.0.0.1", 80, false},
      {"192.168.1.0/24", "192.168.1.77", 80, true},
      {"192.168.1.0/24", "192.168.2.77", 80, false},
      {"::1", "::1", 80, true},
      {"[::1]", "[::1]", 80, true},
      {"fd00::/8", "fd12:3456::1", 80, true},
      {"fd00::/8", "fe80::1", 80, false},
      {"10.0.0.0/8", "ten.example", 80, false},
      {"llm.lan:8000", "llm.lan", 8000, true},
      {"llm.lan:8000", "llm.lan", 8001, false},
      {"[::1]:8000", "::1", 8000, true},
      {"*.openai.com", "api.openai.com", 443, false},  // curl has no wildcards but "*" alone
  };
  for (const auto& c : cases)
    EXPECT_EQ(no_proxy_matches(c.list, c.host, c.port), c.direct)
        << "NO_PROXY='" << c.list << "' host " << c.host << ":" << c.port;
}

TEST(LlmProxy, ParsesProxyAddresses) {
  auto p = parse_proxy("http://alice:s%40cret@proxy.corp:3128/");
  ASSERT_TRUE(p) << p.error();
  EXPECT_EQ(p->host, "proxy.corp");
  EXPECT_EQ(p->port, 3128);
  EXPECT_EQ(p->user, "alice");
  EXPECT_EQ(p->password, "s@cret");
  EXPECT_EQ(p->where(), "proxy.corp:3128");
  auto bare = parse_proxy("proxy.corp");
  ASSERT_TRUE(bare);
  EXPECT_EQ(bare->port, 1080);
  EXPECT_TRUE(bare->user.empty());
  auto v6 = parse_proxy("http://[fd00::1]:8080");
  ASSERT_TRUE(v6);
  EXPECT_EQ(v6->where(), "[fd00::1]:8080");
  for (const char* bad :
       {"socks5://proxy:1080", "https://proxy:443", "http://", "http://proxy:99999", "http://proxy/x"}) {
    auto e = parse_proxy(bad);
    EXPECT_FALSE(e) << bad;
  }
  EXPECT_EQ(parse_proxy("http://u:topsecret@proxy:notaport").error().find("topsecret"), std::string::npos);
}

TEST(LlmProxy, ChoosesTheVariableForTheScheme) {
  std::map<std::string, std::string> vars = {{"https_proxy", "http://lower:1"},
                                             {"HTTPS_PROXY", "http://upper:2"},
                                             {"HTTP_PROXY", "http://plain:3"},
                                             {"ALL_PROXY", "http://all:4"},
                                             {"NO_PROXY", "internal.lan"}};
  auto env = ProxyEnv::from([&](const std::string& k) { return vars.contains(k) ? vars[k] : ""; });
  auto https = proxy_for("https://api.openai.com/v1", env);
  ASSERT_TRUE(https && *https);
  EXPECT_EQ((*https)->where(), "lower:1") << "the lower-case name wins, as in curl";
  auto http = proxy_for("http://gpu-box:8000/v1", env);
  ASSERT_TRUE(http && *http);
  EXPECT_EQ((*http)->where(), "plain:3");
  auto direct = proxy_for("https://vllm.internal.lan/v1", env);
  ASSERT_TRUE(direct);
  EXPECT_FALSE(*direct);
  vars.erase("HTTP_PROXY");
  auto all = proxy_for("http://gpu-box:8000/v1",
                       ProxyEnv::from([&](const std::string& k) { return vars.contains(k) ? vars[k] : ""; }));
  ASSERT_TRUE(all && *all);
  EXPECT_EQ((*all)->where(), "all:4");
  auto none = proxy_for("https://api.openai.com/v1", ProxyEnv{});
  ASSERT_TRUE(none);
  EXPECT_FALSE(*none);
  auto bad = proxy_for("https://api.openai.com/v1", ProxyEnv{"", "socks5://u:pw@p:1", "", ""});
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().find("HTTPS_PROXY"), std::string::npos) << bad.error();
  EXPECT_EQ(bad.error().find("pw"), std::string::npos);
}

HttpRequest chat_post(const std::string& base) {
  return {base + "/v1/chat/completions", {{"Authorization", "Bearer k"}}, R"({"model":"m"})"};
}

TEST(LlmProxy, RequestsGoThroughTheProxy) {
  FakeLlmServer server;
  TestHttpProxy proxy;
  server.script({200, testing::openai_text_reply("hi")});
  auto http =
      make_http_client({}, ProxyEnv{"http://bob:hunter22@127.0.0.1:" + std::to_string(proxy.port()), "", "", ""});
  // A name that never resolves: only the proxy can reach it.
  std::string base = "http://llm.keet-test.invalid:" + std::to_string(server.port());
  auto res = http->post(chat_post(base));
  ASSERT_TRUE(res) << res.error().message;
  EXPECT_EQ(res->status, 200);
  ASSERT_EQ(proxy.requests().size(), 1u);
  EXPECT_EQ(proxy.requests()[0].target, base + "/v1/chat/completions");
  EXPECT_EQ(proxy.requests()[0].proxy_authorization, "Basic Ym9iOmh1bnRlcjIy");  // bob:hunter22
  ASSERT_EQ(server.received().size(), 1u);
  EXPECT_EQ(server.received()[0].body, R"({"model":"m"})");
  EXPECT_EQ(server.received()[0].headers.count("proxy-authorization"), 0u) << "the proxy keeps its credentials";
}

TEST(LlmProxy, NoProxyBypassesIt) {
  FakeLlmServer server;
  TestHttpProxy proxy;
  server.script({200, testing::openai_text_reply("hi")});
  auto http = make_http_client({}, ProxyEnv{proxy.url(), "", "", "localhost,127.0.0.1"});
  auto res = http->post(chat_post(server.url()));
  ASSERT_TRUE(res) << res.error().message;
  EXPECT_TRUE(proxy.requests().empty());
  EXPECT_EQ(server.received().size(), 1u);
}

TEST(LlmProxy, UnreachableProxyIsNamedWithoutCredentials) {
  Timeouts t;
  t.connect = std::chrono::seconds(2);
  auto http = make_http_client(t, ProxyEnv{"http://bob:hunter22@127.0.0.1:9", "", "", ""});
  auto res = http->post(chat_post("http://llm.keet-test.invalid:8000"));
  ASSERT_FALSE(res);
  EXPECT_EQ(res.error().kind, HttpFailure::Connect);
  EXPECT_NE(res.error().message.find("through proxy 127.0.0.1:9"), std::string::npos) << res.error().message;
  EXPECT_EQ(res.error().message.find("hunter22"), std::string::npos);
  EXPECT_EQ(res.error().message.find("bob"), std::string::npos);
}

TEST(LlmProxy, UnusableProxyVariableIsNotRetried) {
  auto http = make_http_client({}, ProxyEnv{"socks5://127.0.0.1:1080", "", "", ""});
  auto res = http->post(chat_post("http://127.0.0.1:9"));
  ASSERT_FALSE(res);
  EXPECT_EQ(res.error().kind, HttpFailure::Unavailable);
  EXPECT_NE(res.error().message.find("HTTP_PROXY: socks5:// proxies are not supported"), std::string::npos)
      << res.error().message;
}

}  // namespace
}  // namespace keet
