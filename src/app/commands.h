// One factory per command; the table in commands.cc lists them in help order.
#pragma once
#include "app/app.h"

namespace keet::app {

Command list_command();
Command metrics_command();
Command export_command();

}  // namespace keet::app
