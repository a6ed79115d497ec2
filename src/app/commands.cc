#include "app/commands.h"

namespace keet::app {

const std::vector<Command>& commands() {
  static const std::vector<Command> table = {
      analyze_command(),  coverage_command(), doctor_command(),    eval_command(),   list_command(),
      metrics_command(),  export_command(),   occupancy_command(), source_command(), explain_command(),
      diff_command(),     record_command(),   history_command(),   gate_command(),   profile_command(),
      ask_command(),      chat_command(),     serve_command(),     worker_command(), mcp_command(),
      timeline_command(), tune_command(),     calibrate_command(), lsp_command(),
  };
  return table;
}

}  // namespace keet::app
