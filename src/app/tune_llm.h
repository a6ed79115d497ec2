// The LLM's part in `keet tune`: a request for candidate changes aimed at the
// engine's top findings, and the unified diffs found in its answer.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "app/llm_flags.h"
#include "app/tune.h"

namespace keet::app {

struct Proposal {
  std::string diff;    // as the model wrote it
  std::string target;  // the finding id the model names before it ("" if none)
};

// Source leaves the machine only with --share-source or for a model on this
// machine (ollama, or a base URL on localhost / 127.0.0.1 / ::1).
bool local_model(const llm::ProviderConfig& cfg);

// Asks for up to `n` changes to `files` (path -> text) against the report's
// diagnosis. An unreachable LLM is Dependency; an answer with no unified diff
// too (the answer is kept in the message's first line only). A dry run prints
// the request and returns no proposal.
Result<std::vector<Proposal>> ask_for_changes(Context& ctx, LlmRuntime& rt, const TuneRequest& req,
                                              const std::string& report,
                                              const std::map<std::string, std::string>& files, int n);

// The proposals in an answer, each with the finding id named in the text
// before its diff (one of `finding_ids`), at most `n`.
std::vector<Proposal> proposals_in(const std::string& answer, const std::vector<std::string>& finding_ids, int n);

}  // namespace keet::app
