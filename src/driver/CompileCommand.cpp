// `loopc compile` (see CompileCommand.h). Exit status 1 when the program does
// not check, code generation fails or ptxas rejects the PTX.
#include "driver/CompileCommand.h"

#include "codegen/CpuJit.h"
#include "codegen/CpuLibrary.h"
#include "codegen/ModuleFile.h"
#include "codegen/NvptxTarget.h"
#include "codegen/Ptxas.h"
#include "driver/Cli.h"
#include "driver/OutputPaths.h"
#include "driver/Session.h"
#include "lower/Lower.h"
#include "passes/Pipeline.h"
#include "perf/GpuDevices.h"
#include "support/AtomicFile.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <sstream>

namespace loopc::driver {

namespace {

struct CompileOptions {
  std::string file;
  std::vector<std::string> kernels; // several only for --emit object and header
  std::string emit = "llvm";
  std::string target; // empty: cpu for llvm, gpu for ptx and module
  PassChoiceOptions passes;
  std::string gpu = codegen::kDefaultGpu;
  bool gpuGiven = false; // --gpu on the command line: --emit object embeds GPU code for it
  std::string cpu = "native";
  std::string prefix; // before each kernel's name in --emit object and header
  std::string output;
  std::string depfile;
  bool skipMissingKernels = false; // --kernel names the file lacks are skipped
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
  return options.target == "gpu" ||
         (options.target.empty() && (options.emit == "ptx" || options.emit == "module"));
}

// An object file or header embeds kernels in a host program (CpuLibrary.h).
bool isLibrary(const CompileOptions &options) {
  return options.emit == "object" || options.emit == "header";
}

// LOOPC_<NAME>_<HASH>_H for the header written to `output` (or for `file`),
// the hash of its functions' names: headers of the same name in two folders
// may be included together, and declare different functions.
std::string headerGuard(const CompileOptions &options,
                        const std::vector<codegen::LibraryKernel> &kernels) {
  std::string stem =
      std::filesystem::path(options.output.empty() || options.output == "-" ? options.file
                                                                            : options.output)
          .stem()
          .string();
  std::string guard = "LOOPC_";
  for (char c : stem)
    guard += std::isalnum(static_cast<unsigned char>(c))
                 ? static_cast<char>(std::toupper(static_cast<unsigned char>(c)))
                 : '_';
  uint32_t hash = 2166136261u; // FNV-1a
  for (const codegen::LibraryKernel &kernel : kernels)
    for (char c : kernel.symbol + ",")
      hash = (hash ^ static_cast<unsigned char>(c)) * 16777619u;
  char hex[9];
  std::snprintf(hex, sizeof hex, "%08X", hash);
  return guard + "_" + hex + "_H";
}

// The object file or header of the kernels of the main file (or those
// --kernel names).
Expected<std::string> generateLibrary(const CompileOptions &options, const Session &session,
                                      const passes::PipelineOptions &pipeline) {
  if (options.target == "gpu")
    return makeError("--emit " + options.emit +
                     " embeds CPU code, and GPU code with --gpu: it takes no --target gpu");
  std::vector<const KernelDecl *> declarations;
  if (options.kernels.empty()) {
    for (const auto &kernel : session.program->modules.front()->kernels)
      declarations.push_back(kernel.get());
    if (declarations.empty())
      return makeError("'" + options.file + "' has no kernel to compile");
  }
  for (const std::string &name : options.kernels) {
    auto kernel = selectKernel(*session.program, name);
    if (!kernel && options.skipMissingKernels)
      continue;
    if (!kernel)
      return std::unexpected(kernel.error());
    if (std::ranges::find(declarations, *kernel) == declarations.end())
      declarations.push_back(*kernel);
  }
  std::vector<std::string> gpus; // the architectures of the GPU code, ascending
  if (options.gpuGiven && options.emit == "object") {
    std::stringstream list(options.gpu);
    for (std::string gpu; std::getline(list, gpu, ',');) {
      if (auto known = codegen::checkGpuName(gpu); !known)
        return std::unexpected(known.error());
      if (std::ranges::find(gpus, gpu) == gpus.end())
        gpus.push_back(gpu);
    }
    std::ranges::stable_sort(gpus, {}, codegen::computeCapabilityOf);
  }
  std::vector<codegen::LibraryKernel> kernels;
  for (const KernelDecl *declaration : declarations) {
    Expected<ir::Function> function =
        passes::runPipeline(ir::lowerKernel(*session.program, *declaration), pipeline);
    if (!function)
      return std::unexpected(function.error());
    auto symbol = codegen::librarySymbol(*declaration, options.prefix);
    if (!symbol)
      return std::unexpected(symbol.error());
    codegen::LibraryKernel kernel{declaration, std::move(*function), std::move(*symbol)};
    for (const std::string &gpu : gpus) {
      passes::PipelineOptions gpuPipeline = pipeline;
      gpuPipeline.target = passes::PipelineTarget::Gpu;
      gpuPipeline.computeCapability = codegen::computeCapabilityOf(gpu);
      gpuPipeline.multiprocessors = perf::typicalGpuDeviceFor(gpu).multiprocessors;
      Expected<ir::Function> gpuFunction =
          passes::runPipeline(ir::lowerKernel(*session.program, *declaration), gpuPipeline);
      if (!gpuFunction)
        return std::unexpected(gpuFunction.error());
      kernel.gpu.push_back({gpu, gpuPipeline.computeCapability, std::move(*gpuFunction)});
    }
    kernels.push_back(std::move(kernel));
  }
  // Each kernel also has a function taking buffers: kernel f's f_buffers.
  for (const codegen::LibraryKernel &kernel : kernels)
    for (const codegen::LibraryKernel &other : kernels)
      if (other.symbol == codegen::bufferFunctionName(kernel.symbol))
        return makeError("kernel '" + other.declaration->name + "' cannot be a C function named '" +
                             other.symbol + "': that is the function of kernel '" +
                             kernel.declaration->name +
                             "' taking buffers; rename one of them, or compile them apart",
                         other.declaration->nameRange);
  if (options.emit == "header")
    return codegen::libraryHeader(kernels, session.sources, headerGuard(options, kernels));
  return codegen::compileLibraryObject(kernels, session.sources, options.cpu);
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

// The Makefile rule of --depfile, for build systems: the output depends on
// every .loop file it was compiled from (the main file and its imports).
std::string depfileRule(const CompileOptions &options, const SourceManager &sources) {
  auto escaped = [](const std::string &path) {
    std::string text;
    for (char c : path)
      text += c == ' ' || c == '#' ? std::string("\\") + c : c == '$' ? "$$" : std::string(1, c);
    return text;
  };
  std::string rule = escaped(options.output) + ":";
  for (size_t id = 1; id < sources.fileCount(); ++id) // id 0 is "no file"
    rule += " " + escaped(sources.file(id).path);
  return rule + "\n";
}

// Writes `text` to -o (stdout without one) and the rule to --depfile, both
// whole or neither (support/AtomicFile.h); false when that fails.
bool writeOutput(const CompileOptions &options, const std::string &text,
                 const SourceManager &sources) {
  if (!options.depfile.empty() && (options.output.empty() || options.output == "-")) {
    printError("--depfile needs an output file (-o FILE)");
    return false;
  }
  if (options.output.empty() || options.output == "-") {
    std::cout << text;
    return true;
  }
  std::vector<std::string> paths = {options.output};
  if (!options.depfile.empty())
    paths.push_back(options.depfile);
  Status written = writeFilesAtomically(
      paths, [&](size_t i) { return i == 0 ? text : depfileRule(options, sources); });
  if (!written)
    printError(written.error().message);
  return written.has_value();
}

// -o and --depfile must not be a .loop file compiled, nor one another.
Status checkOutputFiles(const CompileOptions &options, const SourceManager &sources) {
  std::vector<PathUse> outputs;
  if (!options.output.empty() && options.output != "-")
    outputs.push_back({options.output, "-o " + options.output});
  if (!options.depfile.empty())
    outputs.push_back({options.depfile, "--depfile " + options.depfile});
  return checkDistinctOutputs(sourceFileUses(sources), outputs);
}

int runCompile(const CompileOptions &options) {
  auto session = openSession(options.file);
  if (!session)
    return 1;
  if (Status distinct = checkOutputFiles(options, session->sources); !distinct) {
    printError(distinct.error().message);
    return 1;
  }
  if (options.kernels.size() > 1 && !isLibrary(options)) {
    printError("--emit " + options.emit +
               " compiles one kernel: name several with --kernel only for --emit object or header");
    return 2;
  }
  Expected<const KernelDecl *> kernel = selectKernel(
      *session->program, options.kernels.empty() ? "" : options.kernels.front(), "compile");
  if (!kernel && !(isLibrary(options) && options.skipMissingKernels)) {
    session->report(kernel.error());
    return 1;
  }
  auto choices = options.passes.choicesFor(*session->program);
  if (!choices) {
    session->report(choices.error());
    return 1;
  }
  passes::PipelineOptions pipeline;
  pipeline.target = isGpu(options) ? passes::PipelineTarget::Gpu : passes::PipelineTarget::Cpu;
  pipeline.choices = std::move(*choices);
  codegen::targetCpu(pipeline, options.cpu);
  pipeline.computeCapability = codegen::computeCapabilityOf(options.gpu);
  pipeline.multiprocessors = perf::typicalGpuDeviceFor(options.gpu).multiprocessors;
  for (const std::string &note : passes::choicesWithoutEffect(pipeline))
    printWarning(note);
  if (isLibrary(options)) {
    if (options.emit == "object" && (options.output.empty() || options.output == "-")) {
      printError("--emit object writes a binary file: give it with -o FILE");
      return 1;
    }
    Expected<std::string> library = generateLibrary(options, *session, pipeline);
    if (!library) {
      session->report(library.error());
      return 1;
    }
    return writeOutput(options, *library, session->sources) ? 0 : 1;
  }
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
  return writeOutput(options, *text, session->sources) && ptxasOk ? 0 : 1;
}

} // namespace

void addCompileCommand(CLI::App &app) {
  auto options = std::make_shared<CompileOptions>();
  CLI::App *command = app.add_subcommand("compile", "Compile a kernel and print the code");
  command->add_option("FILE", options->file, "The .loop file")->required();
  command
      ->add_option("--kernel", options->kernels,
                   "The kernel to compile (default: the last kernel of the file; for --emit "
                   "object and header, every kernel of the file, or those named by repeating it)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->check(nonEmpty());
  command
      ->add_option("--emit", options->emit,
                   "What to emit: llvm (LLVM IR), ptx, module (manifest and PTX as JSON), or "
                   "object and header (a CPU object file with a C function per kernel of the "
                   "file, and its C header: docs/embedding.md)")
      ->check(CLI::IsMember({"llvm", "ptx", "module", "object", "header"}));
  command
      ->add_option("--target", options->target,
                   "cpu or gpu (default: gpu for --emit ptx and module, else cpu)")
      ->check(CLI::IsMember({"cpu", "gpu"}));
  command->add_option("--gpu", options->gpu,
                      "The GPU architecture (default: sm_80); for --emit object, the GPU code to "
                      "embed beside the CPU code, one or more architectures separated by commas "
                      "(e.g. sm_80,sm_90: docs/embedding.md)");
  command->add_option("--prefix", options->prefix,
                      "For --emit object and header: put this before each kernel's name to make "
                      "its C function's name (e.g. mylib_)");
  command->add_option("--cpu", options->cpu,
                      "The CPU an object file is for: an LLVM CPU name such as x86-64-v3, or "
                      "native (the default: this machine's CPU and features)");
  options->passes.addTo(*command);
  command->add_option("-o,--output", options->output, "Output file (default: stdout; - too)")
      ->check(nonEmpty());
  command
      ->add_option("--depfile", options->depfile,
                   "Also write a Makefile rule: the output depends on the .loop files it "
                   "was compiled from")
      ->check(nonEmpty());
  command->add_flag("--skip-missing-kernels", options->skipMissingKernels,
                    "For --emit object and header: skip the kernels --kernel names that the "
                    "program lacks instead of failing (the output may then define no function; "
                    "loopc_add_kernels' KERNELS over several sources)");
  command->add_flag("--no-opt", options->noOptimize, "Emit the LLVM IR before optimization");
  command->add_flag("--verbose", options->verbose,
                    "Run ptxas -v on the PTX and report registers, spills and shared memory");
  command->callback([options, command] {
    options->gpuGiven = command->count("--gpu") > 0;
    if (int exitCode = runCompile(*options))
      throw CLI::RuntimeError(exitCode);
  });
}

} // namespace loopc::driver
