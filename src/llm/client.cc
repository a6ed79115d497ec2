#include "llm/client.h"
#include "util/error.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <ostream>

#include "io/sha256.h"
#include "util/json.h"
#include "util/strings.h"

namespace keet::llm {

namespace {

bool retryable(int status) { return status == 429 || status >= 500; }

constexpr size_t kMaxErrorText = 300;

// The provider's own error text (already redacted), shortened.
std::string error_summary(const std::string& body, int status) {
  auto j = nlohmann::json::parse(body, nullptr, false);
  std::string msg;
  if (j.is_object() && j.contains("error")) {
    const auto& e = j["error"];
    msg = e.is_object() && e.contains("message") && e["message"].is_string() ? e["message"].get<std::string>()
                                                                             : json_text(e);
  } else {
    msg = body;
  }
  if (msg.size() > kMaxErrorText) msg = msg.substr(0, kMaxErrorText) + "...";
  return fmt::format("HTTP {}: {}", status, msg);
}

std::string why_retrying(const std::string& provider, const std::expected<HttpResponse, HttpError>& failure) {
  if (!failure)
    return failure.error().kind == HttpFailure::Connect
               ? provider + " not reachable"
               : provider + " request failed (" + failure.error().message + ")";
  if (failure->status == 429) return provider + " is rate-limiting (HTTP 429)";
  return fmt::format("{} answered HTTP {}", provider, failure->status);
}

}  // namespace

std::string retry_notice(const std::string& provider, const std::expected<HttpResponse, HttpError>& failure, int next,
                         int of, std::chrono::milliseconds delay) {
  return fmt::format("{}, retrying ({}/{}) in {:g} s\u2026", why_retrying(provider, failure), next, of,
                     static_cast<double>(delay.count()) / 1000.0);
}

std::optional<std::chrono::milliseconds> parse_retry_after(const std::string& value) {
  auto v = trim(value);
  if (v.empty() || !std::all_of(v.begin(), v.end(), [](char c) { return std::isdigit(c) || c == '.'; }))
    return std::nullopt;
  auto seconds = parse_number(v);
  if (!seconds || *seconds < 0) return std::nullopt;
  return std::chrono::milliseconds(static_cast<long long>(*seconds * 1000));
}

LlmClient::LlmClient(ProviderConfig cfg, HttpClient& http, Sleeper& sleeper, ResponseCache* cache, RetryPolicy retry,
                     std::ostream* dry_run)
    : cfg_(std::move(cfg)),
      provider_(find_provider(cfg_.provider)),
      http_(http),
      sleeper_(sleeper),
      cache_(cache),
      retry_(retry),
      dry_run_(dry_run) {}

// nullopt: do not retry (the server asks for a wait longer than max_delay).
std::optional<std::chrono::milliseconds> LlmClient::delay_for(int attempt, const HttpResponse* res) const {
  if (res)
    if (auto after = parse_retry_after(res->header("retry-after")))
      return *after <= retry_.max_delay ? std::optional(*after) : std::nullopt;
  double ms = static_cast<double>(retry_.initial.count()) * std::pow(retry_.factor, attempt);
  return std::min(std::chrono::milliseconds(static_cast<long long>(ms)), retry_.max_delay);
}

// Secrets a provider may echo back (a 401 body quoting the Authorization
// header, a proxy's error page): the key and every credential header value,
// removed before the text goes anywhere.
std::string LlmClient::redact(std::string text, const HttpRequest& req) const {
  std::vector<std::string> secrets;
  if (!cfg_.api_key.empty()) secrets.push_back(cfg_.api_key);
  for (const auto& [name, value] : req.headers) {
    auto n = to_lower(name);
    if (n == "authorization" || n == "x-api-key" || n == "api-key" || n == "proxy-authorization") {
      secrets.push_back(value);
      if (auto sp = value.find(' '); sp != std::string::npos) secrets.push_back(value.substr(sp + 1));
    }
  }
  std::sort(secrets.begin(), secrets.end(), [](const auto& a, const auto& b) { return a.size() > b.size(); });
  for (const auto& s : secrets) {
    if (s.size() < 4) continue;  // too short to be a secret; replacing it would garble the text
    for (size_t at = text.find(s); at != std::string::npos; at = text.find(s, at + 10))
      text.replace(at, s.size(), "<redacted>");
  }
  return text;
}

// Why no request may be sent now, if so.
std::optional<LlmError> LlmClient::refuse() const {
  if (failures_in_a_row_ >= retry_.breaker_after)
    return LlmError{LlmError::Kind::Unreachable,
                    fmt::format("not sent: the provider failed {} requests in a row", failures_in_a_row_)};
  if (spent_ >= retry_.run_budget)
    return LlmError{LlmError::Kind::Unreachable, fmt::format("not sent: this run's LLM time budget ({} s) is spent",
                                                             retry_.run_budget.count() / 1000)};
  return std::nullopt;
}

std::expected<HttpResponse, LlmError> LlmClient::post_with_retries(const HttpRequest& req) {
  if (auto no = refuse()) return std::unexpected(*no);
  auto res = attempts(req);
  failures_in_a_row_ = res ? 0 : failures_in_a_row_ + 1;
  if (!res) res.error().message = redact(res.error().message, req);
  return res;
}

std::expected<HttpResponse, LlmError> LlmClient::attempts(const HttpRequest& req) {
  LlmError last{LlmError::Kind::Unreachable, "no attempt made"};
  for (int attempt = 0; attempt < retry_.max_attempts; ++attempt) {
    ++http_calls_;
    auto started = std::chrono::steady_clock::now();
    auto res = http_.post(req);
    spent_ += std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started);
    if (res && res->status == 200) return *res;
    if (!res) {
      last = {LlmError::Kind::Unreachable, res.error().message};
      // A timed-out request already waited its full time, a missing transport
      // stays missing, and a server that sent too much would again: none is repeated.
      auto kind = res.error().kind;
      if (kind == HttpFailure::Timeout || kind == HttpFailure::Unavailable || kind == HttpFailure::TooLarge)
        return std::unexpected(last);
    } else {
      last = {LlmError::Kind::Status, error_summary(redact(res->body, req), res->status)};
      if (!retryable(res->status)) return std::unexpected(last);
    }
    if (attempt + 1 == retry_.max_attempts) break;
    auto delay = delay_for(attempt, res ? &*res : nullptr);
    if (!delay) {
      last.message += fmt::format(" (the server asks to retry after {} s: not retried)", res->header("retry-after"));
      return std::unexpected(last);
    }
    if (spent_ + *delay >= retry_.run_budget) {
      last.message += " (not retried: this run's LLM time budget would be exceeded)";
      return std::unexpected(last);
    }
    if (notice_) notice_(redact(retry_notice(cfg_.provider, res, attempt + 2, retry_.max_attempts, *delay), req));
    sleeper_.sleep_for(*delay);
    spent_ += *delay;
  }
  if (retry_.max_attempts > 1) last.message += fmt::format(" (after {} attempts)", retry_.max_attempts);
  return std::unexpected(last);
}

void LlmClient::print_dry_run(const HttpRequest& req) const {
  *dry_run_ << "POST " << req.url << "\n";
  for (const auto& [k, v] : redacted_headers(req)) *dry_run_ << k << ": " << v << "\n";
  auto body = nlohmann::json::parse(req.body, nullptr, false);
  *dry_run_ << "\n" << (body.is_discarded() ? req.body : json_text(body, 2)) << "\n\n";
}

std::expected<ChatResponse, LlmError> LlmClient::send(const ChatRequest& chat) {
  if (!provider_) return std::unexpected(LlmError{LlmError::Kind::Unreachable, "unknown provider " + cfg_.provider});
  HttpRequest req = provider_->build(cfg_, chat);
  if (dry_run_) {
    print_dry_run(req);
    return std::unexpected(LlmError{LlmError::Kind::DryRun, "dry run: request not sent"});
  }
  // The whole URL (scheme, host, port, path): an answer from one server is
  // never replayed for another that serves the same model name.
  std::string hash = io::sha256_hex(req.url + "\n" + req.body);
  if (cache_)
    if (auto hit = cache_->get(cfg_.provider, cfg_.model, hash))
      if (auto parsed = provider_->parse(*hit, chat)) {
        parsed->usage = {};
        parsed->cached = true;
        return *parsed;
      }
  KEET_TRY(res, post_with_retries(req));
  auto parsed = provider_->parse(res->body, chat);
  if (!parsed) return std::unexpected(LlmError{LlmError::Kind::Malformed, redact(parsed.error(), req)});
  // Only answers that parse and match the schema are worth replaying.
  if (cache_ && (!chat.output || parsed->structured)) cache_->put(cfg_.provider, cfg_.model, hash, res->body);
  return *parsed;
}

}  // namespace keet::llm
