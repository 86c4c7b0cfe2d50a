// The top-level command line: the app's shared settings and the one place
// where every failure becomes a `loopc: error: ...` line and an exit status,
// so no subcommand can end in an uncaught exception.
#pragma once

#include <CLI/CLI.hpp>

namespace loopc::driver {

// Settings shared by every subcommand: one-line errors, a subcommand required.
void configureApp(CLI::App &app);

// Parses the command line and runs the chosen subcommand; returns the exit
// status.
int runApp(CLI::App &app, int argc, char **argv);

} // namespace loopc::driver
