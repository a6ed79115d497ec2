// One factory per command; the table in commands.cc lists them in help order.
#pragma once
#include "app/app.h"

namespace keet::app {

Command analyze_command();
Command coverage_command();
Command doctor_command();
Command eval_command();
Command list_command();
Command metrics_command();
Command export_command();
Command occupancy_command();
Command source_command();
Command explain_command();
Command diff_command();
Command record_command();
Command history_command();
Command gate_command();
Command profile_command();
Command ask_command();
Command chat_command();
Command serve_command();
Command worker_command();
Command mcp_command();
Command timeline_command();
Command tune_command();
Command calibrate_command();
Command lsp_command();

}  // namespace keet::app
