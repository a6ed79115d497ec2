#include "llm/client.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <ostream>

#include "util/strings.h"

namespace keet::llm {

namespace {

bool retryable(int status) { return status == 429 || status >= 500; }

std::string path_of(const std::string& url) { return split_url(url).second; }

// The provider's own error text, shortened; bodies never hold our key.
std::string error_summary(const HttpResponse& res) {
  auto j = nlohmann::json::parse(res.body, nullptr, false);
  std::string msg;
  if (j.is_object() && j.contains("error")) {
    const auto& e = j["error"];
    msg = e.is_object() ? e.value("message", e.dump()) : e.dump();
  } else {
    msg = res.body.substr(0, 200);
  }
  return fmt::format("HTTP {}: {}", res.status, msg);
}

}  // namespace

std::optional<std::chrono::milliseconds> parse_retry_after(const std::string& value) {
  auto v = trim(value);
  if (v.empty() || !std::all_of(v.begin(), v.end(), [](char c) { return std::isdigit(c) || c == '.'; }))
    return std::nullopt;
  auto seconds = parse_number(v);
  if (!seconds || *seconds < 0) return std::nullopt;
  return std::chrono::milliseconds(static_cast<long long>(*seconds * 1000));
}

LlmClient::LlmClient(ProviderConfig cfg, HttpClient& http, Sleeper& sleeper, ResponseCache* cache,
                     RetryPolicy retry, std::ostream* dry_run)
    : cfg_(std::move(cfg)), provider_(find_provider(cfg_.provider)), http_(http), sleeper_(sleeper),
      cache_(cache), retry_(retry), dry_run_(dry_run) {}

std::chrono::milliseconds LlmClient::delay_for(int attempt, const HttpResponse* res) const {
  if (res)
    if (auto after = parse_retry_after(res->header("retry-after"))) return std::min(*after, retry_.max_delay);
  double ms = static_cast<double>(retry_.initial.count()) * std::pow(retry_.factor, attempt);
  return std::min(std::chrono::milliseconds(static_cast<long long>(ms)), retry_.max_delay);
}

std::expected<HttpResponse, LlmError> LlmClient::post_with_retries(const HttpRequest& req) {
  LlmError last{LlmError::Kind::Unreachable, "no attempt made"};
  for (int attempt = 0; attempt < retry_.max_attempts; ++attempt) {
    ++http_calls_;
    auto res = http_.post(req);
    if (res && res->status == 200) return *res;
    if (!res) {
      last = {LlmError::Kind::Unreachable, res.error().message};
      // A timed-out request already waited the full read timeout, and a missing
      // transport stays missing: neither is repeated.
      auto kind = res.error().kind;
      if (kind == HttpFailure::Timeout || kind == HttpFailure::Unavailable) return std::unexpected(last);
    } else {
      last = {LlmError::Kind::Status, error_summary(*res)};
      if (!retryable(res->status)) return std::unexpected(last);
    }
    if (attempt + 1 < retry_.max_attempts) sleeper_.sleep_for(delay_for(attempt, res ? &*res : nullptr));
  }
  last.message += fmt::format(" (after {} attempts)", retry_.max_attempts);
  return std::unexpected(last);
}

void LlmClient::print_dry_run(const HttpRequest& req) const {
  *dry_run_ << "POST " << req.url << "\n";
  for (const auto& [k, v] : redacted_headers(req)) *dry_run_ << k << ": " << v << "\n";
  auto body = nlohmann::json::parse(req.body, nullptr, false);
  *dry_run_ << "\n" << (body.is_discarded() ? req.body : body.dump(2)) << "\n\n";
}

std::expected<ChatResponse, LlmError> LlmClient::send(const ChatRequest& chat) {
  if (!provider_) return std::unexpected(LlmError{LlmError::Kind::Unreachable, "unknown provider " + cfg_.provider});
  HttpRequest req = provider_->build(cfg_, chat);
  if (dry_run_) {
    print_dry_run(req);
    return std::unexpected(LlmError{LlmError::Kind::DryRun, "dry run: request not sent"});
  }
  std::string hash = sha256_hex(path_of(req.url) + "\n" + req.body);
  if (cache_)
    if (auto hit = cache_->get(cfg_.provider, cfg_.model, hash))
      if (auto parsed = provider_->parse(*hit, chat)) {
        parsed->usage = {};
        parsed->cached = true;
        return *parsed;
      }
  auto res = post_with_retries(req);
  if (!res) return std::unexpected(res.error());
  auto parsed = provider_->parse(res->body, chat);
  if (!parsed) return std::unexpected(LlmError{LlmError::Kind::Malformed, parsed.error()});
  // Only answers that parse and match the schema are worth replaying.
  if (cache_ && (!chat.output || parsed->structured)) cache_->put(cfg_.provider, cfg_.model, hash, res->body);
  return *parsed;
}

}  // namespace keet::llm
