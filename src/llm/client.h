// Sends provider-neutral chat requests: builds the wire request, consults the
// cache, retries 429/5xx with exponential backoff honouring Retry-After, and
// prints requests instead of sending them on --dry-run.
#pragma once
#include <chrono>
#include <expected>
#include <functional>
#include <iosfwd>
#include <string>

#include "llm/cache.h"
#include "llm/http.h"
#include "llm/provider.h"

namespace keet::llm {

struct RetryPolicy {
  int max_attempts = 4;
  std::chrono::milliseconds initial{1000};
  double factor = 2.0;
  // The longest wait between attempts. A server asking (Retry-After) for a
  // longer one is not retried at all: it will not be back within this run.
  std::chrono::milliseconds max_delay{30000};
  // Circuit breaker: after this many requests in a row failed (each after its
  // retries), the rest of the run sends none and fails at once.
  int breaker_after = 2;
  // The whole run's time for the LLM (requests and waits together); past it
  // no request is sent, so a slow provider never holds the engine's answer.
  std::chrono::milliseconds run_budget{600000};
};

struct LlmError {
  enum class Kind { Unreachable, Status, Malformed, DryRun };
  Kind kind = Kind::Unreachable;
  std::string message;  // never contains the key (LlmClient::redact)
};

class LlmClient {
 public:
  LlmClient(ProviderConfig cfg, HttpClient& http, Sleeper& sleeper, ResponseCache* cache = nullptr,
            RetryPolicy retry = {}, std::ostream* dry_run = nullptr);

  std::expected<ChatResponse, LlmError> send(const ChatRequest& req);
  // Called before each wait between attempts with a line such as "openai not
  // reachable, retrying (2/4) in 1.5 s…"; keet shows it on a terminal only.
  using RetryNotice = std::function<void(const std::string&)>;
  void set_retry_notice(RetryNotice notice) { notice_ = std::move(notice); }
  const ProviderConfig& config() const { return cfg_; }
  int http_calls() const { return http_calls_; }

 private:
  std::expected<HttpResponse, LlmError> post_with_retries(const HttpRequest& req);
  std::expected<HttpResponse, LlmError> attempts(const HttpRequest& req);
  std::optional<LlmError> refuse() const;
  std::optional<std::chrono::milliseconds> delay_for(int attempt, const HttpResponse* res) const;
  std::string redact(std::string text, const HttpRequest& req) const;
  void print_dry_run(const HttpRequest& req) const;

  ProviderConfig cfg_;
  const Provider* provider_;
  HttpClient& http_;
  Sleeper& sleeper_;
  ResponseCache* cache_;
  RetryPolicy retry_;
  std::ostream* dry_run_;
  RetryNotice notice_;
  int http_calls_ = 0;
  int failures_in_a_row_ = 0;
  std::chrono::milliseconds spent_{0};  // in requests and waits, this run
};

// "openai not reachable, retrying (2/4) in 1.5 s…": `failure` is the failed
// attempt (its HTTP status, or the transport's error), `next` the attempt about to start.
std::string retry_notice(const std::string& provider, const std::expected<HttpResponse, HttpError>& failure, int next,
                         int of, std::chrono::milliseconds delay);

// Retry-After in seconds ("3", "1.5"); HTTP dates and junk give nullopt.
std::optional<std::chrono::milliseconds> parse_retry_after(const std::string& value);

}  // namespace keet::llm
