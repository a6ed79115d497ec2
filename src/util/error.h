// The application-level error and the exit codes of the analysis contract.
//
// Each layer has its own error type (readers::ReadError, llm::LlmError, ...);
// the app layer converts them into this one, which knows its exit code.
#pragma once
#include <expected>
#include <string>

namespace keet {

// Exit codes of docs/contracts.md; valid for every command.
enum class ExitCode : int {
  Ok = 0,
  Failed = 1,      // ran, and found what it was asked to fail on (gate)
  BadInput = 2,    // unreadable/corrupt/unsupported report, bad arguments
  Dependency = 3,  // an outside dependency failed (ncu missing, LLM required)
};

struct Error {
  ExitCode code = ExitCode::BadInput;
  std::string message;  // one line, names the file when there is one
};

template <typename T>
using Result = std::expected<T, Error>;

inline std::unexpected<Error> fail(ExitCode code, std::string message) {
  return std::unexpected(Error{code, std::move(message)});
}

}  // namespace keet
