// `loopc repl [FILE] [--device D]`: an interactive session (driver/Repl.h)
// with line editing and history (~/.loopc_history) when stdin is a terminal
// and loopc was built with libedit; otherwise lines are read plainly with no
// prompts, so a script can be piped in.
#pragma once

#include <CLI/CLI.hpp>

namespace loopc::driver {

void addReplCommand(CLI::App &app);

} // namespace loopc::driver
