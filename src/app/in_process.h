// KEET's commands run inside the current process, for the long-running
// servers (service/mcp.h, keet serve): each call parses its own command line
// and writes to its own buffers, so calls may run concurrently.
#pragma once
#include <functional>
#include <string>

#include "service/mcp.h"

namespace keet::app {

// A runner whose commands see only the environment variables that locate
// keet's default history store (HOME, XDG_DATA_HOME) and the CUDA toolkit's
// disassembler (PATH, CUDA_HOME, CUDA_PATH; TMPDIR for its input) from
// `getenv`: no LLM is configured behind a server's back (KEET_LLM and API
// keys are hidden).
service::CommandRunner in_process_runner(std::function<std::string(const std::string&)> getenv);

}  // namespace keet::app
