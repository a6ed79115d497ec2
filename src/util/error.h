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

// Passing an error up: `KEET_TRY(x, f());` declares x = f() and returns its
// error from the enclosing function when it failed; KEET_TRY_VOID(f()) does the
// same for a result that is not kept. Both work for any std::expected whose
// error the enclosing function's result can hold.
#define KEET_TRY(var, ...)  \
  auto var = (__VA_ARGS__); \
  if (!var) return std::unexpected(std::move(var).error())
#define KEET_TRY_VOID(...)                                      \
  if (auto keet_try_result_ = (__VA_ARGS__); !keet_try_result_) \
  return std::unexpected(std::move(keet_try_result_).error())
