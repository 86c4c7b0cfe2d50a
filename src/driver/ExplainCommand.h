// `loopc explain FILE [--kernel K] [--after PASS]`: prints the Loop IR of a
// kernel after each pass of the pipeline (or only after PASS), so every
// mapping decision (loop kinds, memory spaces, barriers, launches) is visible.
#pragma once

#include <CLI/CLI.hpp>

namespace loopc::driver {

void addExplainCommand(CLI::App &app);

} // namespace loopc::driver
