// `loopc opt FILE --pass NAME...`: passes run on Loop IR read from text.
#pragma once

#include <CLI/CLI.hpp>

namespace loopc::driver {

void addOptCommand(CLI::App &app);

} // namespace loopc::driver
