// `loopc compile`: lowers the chosen kernel, runs the pass pipeline and emits
// the CPU module as LLVM IR to stdout or to the -o file. Exit status 1 when
// the program does not check or code generation fails.
#include "driver/CompileCommand.h"

#include "codegen/CpuJit.h"
#include "driver/Session.h"
#include "ir/Lower.h"
#include "passes/Pipeline.h"

#include <fstream>
#include <iostream>
#include <memory>

namespace loopc::driver {

namespace {

struct CompileOptions {
  std::string file;
  std::string kernel;
  std::string emit = "llvm";
  std::string output;
  bool noOptimize = false;
};

int runCompile(const CompileOptions &options) {
  auto session = openSession(options.file);
  if (!session)
    return 1;
  Expected<const KernelDecl *> kernel = selectKernel(*session->program, options.kernel);
  if (!kernel) {
    session->report(kernel.error());
    return 1;
  }
  ir::Function function = passes::runPipeline(ir::lowerKernel(*session->program, **kernel));
  Expected<std::string> text = codegen::cpuLlvmText(function, !options.noOptimize);
  if (!text) {
    session->report(text.error());
    return 1;
  }
  if (options.output.empty() || options.output == "-") {
    std::cout << *text;
    return 0;
  }
  std::ofstream out(options.output);
  out << *text;
  if (!out) {
    printError("cannot write '" + options.output + "'");
    return 1;
  }
  return 0;
}

} // namespace

void addCompileCommand(CLI::App &app) {
  auto options = std::make_shared<CompileOptions>();
  CLI::App *command = app.add_subcommand("compile", "Compile a kernel and print the code");
  command->add_option("FILE", options->file, "The .loop file")->required();
  command->add_option("--kernel", options->kernel,
                      "The kernel to compile (default: the last kernel of the file)");
  command->add_option("--emit", options->emit, "What to emit: llvm (the CPU module)")
      ->check(CLI::IsMember({"llvm"}));
  command->add_option("-o,--output", options->output, "Output file (default: stdout)");
  command->add_flag("--no-opt", options->noOptimize, "Emit the LLVM IR before optimization");
  command->callback([options] {
    if (int exitCode = runCompile(*options))
      throw CLI::RuntimeError(exitCode);
  });
}

} // namespace loopc::driver
