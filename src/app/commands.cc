#include "app/commands.h"

namespace keet::app {

const std::vector<Command>& commands() {
  static const std::vector<Command> table = {
      list_command(),
      metrics_command(),
      export_command(),
  };
  return table;
}

}  // namespace keet::app
