// Retries made visible: on a terminal, each wait between attempts is
// announced on stderr ("keet: openai not reachable, retrying (2/4) in 1 s…");
// elsewhere (logs, CI) stderr carries only the final error. Runs keet's
// command line in-process with a Context that says whether stderr is a terminal.
#include <gtest/gtest.h>

#include <map>
#include <sstream>

#include "app/app.h"
#include "llm/client.h"
#include "support/fake_llm_server.h"
#include "support/report_writer.h"
#include "support/testing.h"

namespace keet {
namespace {

using namespace keet::testing;

std::string retry_test_report() {
  ReportWriter w;
  ReportWriter::Block b;
  auto k = w.kernel("vecAdd", 64, 256,
                    {{"gpu__time_duration.sum", 5120}, {"dram__throughput.avg.pct_of_peak_sustained_elapsed", 88.5}});
  w.flush_strings(b);
  b.results.push_back(k.SerializeAsString());
  w.add(b);
  std::string path = temp_path("retry-notice.ncu-rep");
  w.write(path);
  return path;
}

struct AskRun {
  int rc;
  std::string out, err;
};

AskRun ask(const FakeLlmServer& server, bool err_is_tty) {
  std::map<std::string, std::string> env = {{"OPENAI_BASE_URL", server.url() + "/v1"},
                                            {"OPENAI_API_KEY", "sk-notice"},
                                            {"XDG_CONFIG_HOME", "/nonexistent"},
                                            {"XDG_CACHE_HOME", temp_path("retry-notice-cache")}};
  std::string report = retry_test_report();
  const char* argv[] = {"keet", "ask", report.c_str(), "why?", "--no-cache", "--llm", "openai:m"};
  std::ostringstream out, err;
  app::Context ctx{out, err, false, err_is_tty, [&](const std::string& k) { return env.contains(k) ? env[k] : ""; }};
  int rc = app::run(7, argv, ctx);
  return {rc, out.str(), err.str()};
}

void script_two_failures(FakeLlmServer& server) {
  // Retry-After keeps the real waits short (0.1 s each).
  server.script({503, R"({"error":{"message":"overloaded"}})", {{"Retry-After", "0.1"}}});
  server.script({429, R"({"error":{"message":"slow down"}})", {{"Retry-After", "0.1"}}});
  server.script({200, openai_text_reply("DRAM throughput is 88.5% of peak.")});
}

TEST(RetryNotice, TerminalSeesEachRetry) {
  FakeLlmServer server;
  script_two_failures(server);
  auto r = ask(server, true);
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.err,
            "keet: openai answered HTTP 503, retrying (2/4) in 0.1 s\u2026\n"
            "keet: openai is rate-limiting (HTTP 429), retrying (3/4) in 0.1 s\u2026\n");
  EXPECT_NE(r.out.find("verified"), std::string::npos) << r.out;
  EXPECT_EQ(server.received().size(), 3u);
}

TEST(RetryNotice, NonTerminalStaysQuiet) {
  FakeLlmServer server;
  script_two_failures(server);
  auto r = ask(server, false);
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(server.received().size(), 3u);
}

// The wording for a server nobody answers on, without real waiting.
class NoSleep : public llm::Sleeper {
 public:
  void sleep_for(std::chrono::milliseconds) override {}
};

TEST(RetryNotice, UnreachableServerWording) {
  auto http = llm::make_http_client({});
  NoSleep sleeper;
  llm::LlmClient client({"ollama", "m", "http://127.0.0.1:9", ""}, *http, sleeper);
  std::vector<std::string> lines;
  client.set_retry_notice([&](const std::string& l) { lines.push_back(l); });
  auto res = client.send({"m", {{llm::Role::User, "hi"}}});
  ASSERT_FALSE(res);
  std::vector<std::string> expected = {"ollama not reachable, retrying (2/4) in 1 s\u2026",
                                       "ollama not reachable, retrying (3/4) in 2 s\u2026",
                                       "ollama not reachable, retrying (4/4) in 4 s\u2026"};
  EXPECT_EQ(lines, expected);
  EXPECT_NE(res.error().message.find("after 4 attempts"), std::string::npos) << res.error().message;
}

TEST(RetryNotice, SecondsAreShownShortly) {
  std::expected<llm::HttpResponse, llm::HttpError> failure =
      std::unexpected(llm::HttpError{llm::HttpFailure::Connect, "x"});
  EXPECT_EQ(llm::retry_notice("openai", failure, 2, 4, std::chrono::milliseconds(1500)),
            "openai not reachable, retrying (2/4) in 1.5 s\u2026");
}

}  // namespace
}  // namespace keet
