// `loopc run FILE`: binds a kernel's arguments, runs it on a device, prints a
// summary of every output and the time taken; `--check` compares the outputs
// with the reference interpreter's.
#pragma once

#include <CLI/CLI.hpp>

namespace loopc::driver {

void addRunCommand(CLI::App &app);

} // namespace loopc::driver
