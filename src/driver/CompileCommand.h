// `loopc compile FILE [--kernel K] --emit llvm [-o OUT] [--no-opt]`: prints the
// LLVM IR the CPU code generator produces for a kernel (after the pass
// pipeline and, unless --no-opt, after LLVM's O3 for the host CPU).
#pragma once

#include <CLI/CLI.hpp>

namespace loopc::driver {

void addCompileCommand(CLI::App &app);

} // namespace loopc::driver
