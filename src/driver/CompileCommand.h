// `loopc compile FILE [--kernel K] --emit llvm|ptx|module [--target cpu|gpu]
// [--gpu sm_XX] [-o OUT] [--no-opt] [--verbose]`: prints or writes the code a
// kernel compiles to, after the pass pipeline:
//  - llvm: the LLVM IR of the CPU module (--target cpu, the default for llvm)
//    or of the NVPTX module (--target gpu), after O3 unless --no-opt;
//  - ptx: the PTX of the kernels (GPU only);
//  - module: a module file (codegen/ModuleFile.h): manifest and PTX in one.
// --verbose assembles the PTX with ptxas, when installed, and reports
// registers, spills and shared memory per kernel on stderr.
#pragma once

#include <CLI/CLI.hpp>

namespace loopc::driver {

void addCompileCommand(CLI::App &app);

} // namespace loopc::driver
