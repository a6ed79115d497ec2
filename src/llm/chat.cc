#include "llm/chat.h"

#include <fmt/format.h>

#include <set>

#include "llm/explain.h"
#include "util/json.h"

namespace keet::llm {

using nlohmann::json;

namespace {

const model::Kernel* kernel_at(const model::Report* r, int index) {
  if (!r) return nullptr;
  for (const auto& k : r->kernels)
    if (k.index == index) return &k;
  return nullptr;
}

json message_json(const Message& m) {
  static const char* roles[] = {"system", "user", "assistant", "tool"};
  json j = {{"role", roles[static_cast<int>(m.role)]}, {"content", m.content}};
  for (const auto& c : m.tool_calls)
    j["tool_calls"].push_back({{"id", c.id}, {"name", c.name}, {"arguments", c.arguments}});
  if (m.role == Role::Tool) j["tool_call_id"] = m.tool_call_id;
  return j;
}

// One reply as CommonMark: blank lines between blocks so that text, lists and
// notes never run together.
std::string reply_markdown(const LlmResult& r) {
  std::string out = fmt::format("## {}:{} ({})\n\n", r.provider, r.model, status_name(r.status));
  if (r.status == Status::Unavailable) return out + "Unavailable: " + r.error + "\n";
  out += r.text + "\n";
  std::string list =
      reply_notes(r, {"- ", "- Question: ", "- Not for this device: ", "- Contradicts the engine: ", "- "});
  return list.empty() ? out : out + "\n" + list;
}

std::string kernel_title(const analysis::KernelDiagnosis& d, bool redact) {
  return fmt::format("#{} {}", d.index, kernel_label(d.display_name(), redact));
}

}  // namespace

ChatSession::ChatSession(LlmClient& client, ToolContext tools, ChatOptions opt)
    : client_(client), tools_(tools), opt_(std::move(opt)) {
  std::string system = chat_system_prompt() + "\n\n" + opening_context();
  context_tokens_ = estimate_tokens(system);
  messages_.push_back({Role::System, std::move(system)});
}

// The kernel list, plus the full context of the focus kernel (the only one, or -k).
std::string ChatSession::opening_context() const {
  const auto& kernels = tools_.diagnosis->kernels;
  std::string out = fmt::format("The report has {} profiled kernel(s):\n", kernels.size()) + kernels_overview(tools_);
  int focus = opt_.focus_kernel >= 0 ? opt_.focus_kernel : kernels.size() == 1 ? kernels[0].index : -1;
  for (const auto& d : kernels)
    if (d.index == focus) {
      Prompt p = explain_prompt(d, kernel_at(tools_.report, d.index), opt_.prompt);
      out += "\nContext of the kernel in focus:\n" +
             kernel_context(d, kernel_at(tools_.report, d.index), opt_.prompt, p.metric_rows);
    }
  return out;
}

VerifyContext ChatSession::verify_context() const {
  VerifyContext ctx;
  std::set<std::pair<std::string, std::string>> devices;  // (name, compute capability)
  for (const auto& d : tools_.diagnosis->kernels) {
    auto kv = known_values(d, kernel_at(tools_.report, d.index));
    ctx.known.insert(ctx.known.end(), kv.begin(), kv.end());
    devices.emplace(d.device, d.compute_capability);
  }
  for (const auto& [name, cc] : devices) ctx.devices.push_back({name, cc});
  // A tool answer's numbers are the report's too (the agent tools state each as a measure).
  ctx.known.insert(ctx.known.end(), tool_known_.begin(), tool_known_.end());
  const auto& kernels = tools_.diagnosis->kernels;
  for (const auto& d : kernels)
    if (kernels.size() == 1 || d.index == opt_.focus_kernel) ctx.bottleneck = d.bottleneck;
  return ctx;
}

// Runs the calls of one reply and appends their results; false when there were none.
bool ChatSession::run_tool_round(const ChatResponse& res) {
  if (res.tool_calls.empty()) return false;
  messages_.push_back({Role::Assistant, res.text, res.tool_calls});
  for (const auto& call : res.tool_calls) {
    auto answer = tool_answer(tools_, call);
    auto known = measured_in(answer);
    tool_known_.insert(tool_known_.end(), known.begin(), known.end());
    messages_.push_back({Role::Tool, json_text(answer), {}, call.id, call.name});
  }
  return true;
}

bool ChatSession::focus(int kernel_index) {
  for (const auto& d : tools_.diagnosis->kernels)
    if (d.index == kernel_index) {
      opt_.focus_kernel = kernel_index;
      // The opening context is the system prompt: rebuilt, it carries the new kernel.
      messages_[0].content = chat_system_prompt() + "\n\n" + opening_context();
      context_tokens_ = estimate_tokens(messages_[0].content);
      // A code span: a demangled name's `*` and `_` would be read as emphasis.
      log_.push_back("*Kernel in focus:* `" + kernel_title(d, opt_.prompt.redact_names) + "`\n");
      return true;
    }
  return false;
}

LlmResult ChatSession::turn(const std::string& user_text) {
  log_.push_back("## You\n\n" + user_text + "\n");
  LlmResult r = answer(user_text);
  log_.push_back(reply_markdown(r));
  return r;
}

LlmResult ChatSession::answer(const std::string& user_text) {
  messages_.push_back({Role::User, user_text});
  LlmResult r = unavailable(client_, "");
  r.cached = true;
  r.prompt_tokens_estimate = context_tokens_;
  int rounds = 0;
  std::optional<std::string> first_reply;  // kept in case the correction round fails
  for (bool corrected = false;;) {
    ChatRequest req{client_.config().model, messages_, tool_specs(tools_), std::nullopt, opt_.max_tokens};
    auto res = send_with_repair(client_, req, r);
    if (!res && first_reply) {
      res = ChatResponse{};
      res->text = *first_reply;  // shown flagged, with its unsupported parts marked
    }
    if (!res) return results_.emplace_back(r);
    if (run_tool_round(*res)) {
      if (++rounds >= opt_.max_tool_rounds) {
        r.status = Status::Unavailable;
        r.error = fmt::format("stopped after {} tool rounds without a final answer", opt_.max_tool_rounds);
        return results_.emplace_back(r);
      }
      continue;
    }
    auto v = verify_text(res->text, verify_context());
    if (!v.clean() && !corrected) {
      corrected = r.corrected = true;
      first_reply = res->text;
      messages_.push_back({Role::Assistant, res->text});
      messages_.push_back({Role::User, "KEET checked your answer against the report and found problems:\n" +
                                           v.feedback() +
                                           "Answer again using only numbers from the report or the tool results."});
      continue;
    }
    r.claims.clear();
    r.unsupported_claims = 0;
    r.text = mark_unsupported(res->text, v.claims);
    apply_verification(r, v);
    r.error.clear();
    messages_.push_back({Role::Assistant, r.text});
    return results_.emplace_back(r);
  }
}

std::string ChatSession::transcript_markdown() const {
  std::string out = fmt::format("# keet chat ({}:{})\n", client_.config().provider, client_.config().model);
  for (const auto& block : log_) out += "\n" + block;
  return out;
}

json ChatSession::transcript() const {
  json msgs = json::array();
  for (const auto& m : messages_) msgs.push_back(message_json(m));
  json results = json::array();
  for (const auto& r : results_) results.push_back(to_json(r));
  return {{"schema", "keet.chat/1"},
          {"provider", client_.config().provider},
          {"model", client_.config().model},
          {"messages", msgs},
          {"replies", results}};
}

}  // namespace keet::llm
