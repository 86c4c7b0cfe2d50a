// `loopc check FILE...`: loads and checks programs, printing diagnostics.
#pragma once

#include <CLI/CLI.hpp>

namespace loopc::driver {

void addCheckCommand(CLI::App &app);

} // namespace loopc::driver
