// `loopc compile` (see CompileCommand.h). Exit status 1 when the program does
// not check, code generation fails or ptxas rejects the PTX.
#include "driver/CompileCommand.h"

#include "codegen/CpuJit.h"
#include "codegen/ModuleFile.h"
#include "codegen/NvptxTarget.h"
#include "codegen/Ptxas.h"
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
  std::string target; // empty: cpu for llvm, gpu for ptx and module
  PassChoiceOptions passes;
  std::string gpu = codegen::kDefaultGpu;
  std::string output;
  bool noOptimize = false;
  bool verbose = false;
};

// Assembles `ptx` with ptxas and prints one line per kernel to stderr.
bool reportPtxas(const std::string &ptx, const std::string &gpu) {
  std::optional<std::string> ptxas = codegen::findPtxas();
  if (!ptxas) {
    std::cerr << "loopc: note: ptxas not found (set LOOPC_PTXAS); no register report\n";
    return true;
  }
  auto reports = codegen::runPtxas(*ptxas, ptx, gpu);
  if (!reports) {
    printError(reports.error().message);
    return false;
  }
  for (const codegen::PtxasKernelReport &report : *reports)
    std::cerr << "ptxas " << gpu << ": " << report.name << ": " << report.registers
              << " registers, " << report.spillStoreBytes << " bytes spill stores, "
              << report.spillLoadBytes << " bytes spill loads, " << report.stackBytes
              << " bytes stack, " << report.sharedBytes << " bytes shared\n";
  return true;
}

// --target, or its default for --emit.
bool isGpu(const CompileOptions &options) {
  return options.target == "gpu" || (options.target.empty() && options.emit != "llvm");
}

Expected<std::string> generate(const CompileOptions &options, const ir::Function &function,
                               const SourceManager &sources, bool &ptxasOk) {
  bool gpu = isGpu(options);
  if (!gpu && options.emit != "llvm")
    return makeError("--emit " + options.emit + " needs --target gpu");
  if (!gpu)
    return codegen::cpuLlvmText(function, !options.noOptimize);
  if (options.emit == "llvm")
    return codegen::nvptxLlvmText(function, options.gpu, !options.noOptimize);
  auto ptx = codegen::compileToPtx(function, options.gpu);
  if (!ptx)
    return ptx;
  if (options.verbose)
    ptxasOk = reportPtxas(*ptx, options.gpu);
  if (options.emit == "ptx")
    return ptx;
  return codegen::serializeModule(
      codegen::describeModule(function, options.gpu, std::move(*ptx), sources));
}

int runCompile(const CompileOptions &options) {
  auto session = openSession(options.file);
  if (!session)
    return 1;
  Expected<const KernelDecl *> kernel = selectKernel(*session->program, options.kernel);
  if (!kernel) {
    session->report(kernel.error());
    return 1;
  }
  auto choices = options.passes.toChoices();
  if (!choices) {
    session->report(choices.error());
    return 1;
  }
  passes::PipelineOptions pipeline;
  pipeline.target = isGpu(options) ? passes::PipelineTarget::Gpu : passes::PipelineTarget::Cpu;
  pipeline.choices = std::move(*choices);
  Expected<ir::Function> function =
      passes::runPipeline(ir::lowerKernel(*session->program, **kernel), pipeline);
  if (!function) {
    session->report(function.error());
    return 1;
  }
  bool ptxasOk = true;
  Expected<std::string> text = generate(options, *function, session->sources, ptxasOk);
  if (!text) {
    session->report(text.error());
    return 1;
  }
  if (options.output.empty() || options.output == "-") {
    std::cout << *text;
    return ptxasOk ? 0 : 1;
  }
  std::ofstream out(options.output);
  out << *text;
  if (!out) {
    printError("cannot write '" + options.output + "'");
    return 1;
  }
  return ptxasOk ? 0 : 1;
}

} // namespace

void addCompileCommand(CLI::App &app) {
  auto options = std::make_shared<CompileOptions>();
  CLI::App *command = app.add_subcommand("compile", "Compile a kernel and print the code");
  command->add_option("FILE", options->file, "The .loop file")->required();
  command->add_option("--kernel", options->kernel,
                      "The kernel to compile (default: the last kernel of the file)");
  command
      ->add_option("--emit", options->emit,
                   "What to emit: llvm (LLVM IR), ptx, or module (manifest and PTX as JSON)")
      ->check(CLI::IsMember({"llvm", "ptx", "module"}));
  command
      ->add_option("--target", options->target,
                   "cpu or gpu (default: cpu for --emit llvm, gpu for ptx and module)")
      ->check(CLI::IsMember({"cpu", "gpu"}));
  command->add_option("--gpu", options->gpu, "The GPU architecture (default: sm_80)");
  options->passes.addTo(*command);
  command->add_option("-o,--output", options->output, "Output file (default: stdout)");
  command->add_flag("--no-opt", options->noOptimize, "Emit the LLVM IR before optimization");
  command->add_flag("--verbose", options->verbose,
                    "Run ptxas -v on the PTX and report registers, spills and shared memory");
  command->callback([options] {
    if (int exitCode = runCompile(*options))
      throw CLI::RuntimeError(exitCode);
  });
}

} // namespace loopc::driver
