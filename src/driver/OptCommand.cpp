// `loopc opt`: runs passes on Loop IR read from a file (ir/IRParser.h), as
// `loopc explain` prints it, and prints the result: a pass tested on the input
// it is meant for, written by hand or cut from `explain --after`. Exit status
// 1 when the file does not parse, is not valid IR, or a pass fails.
#include "driver/OptCommand.h"

#include "codegen/CpuLibrary.h"
#include "driver/RemarksOutput.h"
#include "driver/Session.h"
#include "frontend/Loader.h"
#include "ir/IRParser.h"
#include "ir/IRPrinter.h"
#include "passes/Passes.h"
#include "passes/Pipeline.h"
#include "support/LineDiff.h"

#include <charconv>
#include <iostream>
#include <memory>

namespace loopc::driver {

namespace {

struct OptOptions {
  std::string file;
  std::vector<std::string> passes;
  std::string target = "gpu";
  std::vector<std::string> parameters;
  std::vector<std::string> sizes;
  bool changes = false;
  bool remarks = false;
};

Expected<passes::PipelineOptions> pipelineOptions(const OptOptions &options,
                                                  passes::Remarks &remarks) {
  passes::PipelineOptions pipeline;
  pipeline.target =
      options.target == "cpu" ? passes::PipelineTarget::Cpu : passes::PipelineTarget::Gpu;
  codegen::targetCpu(pipeline);
  for (const std::string &assignment : options.parameters)
    if (Status set = passes::setPassParameter(pipeline.choices.parameters, assignment); !set)
      return std::unexpected(set.error());
  for (const std::string &assignment : options.sizes) {
    auto split = splitAssignment(assignment, "--set");
    if (!split)
      return std::unexpected(split.error());
    const auto &[name, text] = *split;
    int64_t value = 0;
    auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc() || end != text.data() + text.size() || value < 0)
      return makeError("--set " + assignment + ": a size's value is a non-negative integer");
    pipeline.runSizes[name] = value;
  }
  pipeline.remarks = &remarks;
  return pipeline;
}

int runOpt(const OptOptions &options) {
  SourceManager sources;
  DiagnosticEngine diagnostics(sources);
  Expected<std::string> text = readSourceFile(options.file);
  if (!text) {
    std::cerr << "loopc: error: cannot open '" << options.file << "': " << text.error().message
              << "\n";
    return 1;
  }
  uint32_t file = sources.addFile(options.file, std::move(*text));
  Expected<ir::Function> function = ir::parseFunction(sources.file(file).text, file);
  if (!function) {
    diagnostics.error(function.error().range, function.error().message);
    diagnostics.print(std::cerr);
    return 1;
  }
  passes::Remarks remarks;
  Expected<passes::PipelineOptions> pipeline = pipelineOptions(options, remarks);
  if (!pipeline) {
    std::cerr << "loopc: error: " << pipeline.error().message << "\n";
    return 1;
  }
  // Bounds checks as the function says (`bounds_checked`), as the pipeline
  // that printed it ran.
  pipeline->choices.boundsChecks = function->boundsChecked;
  // The sizes of --set an engine would compile as constants, as it does for
  // a run at them (specialize_sizes replaces them).
  pipeline->specializedSizes = passes::sizesToSpecialize(*function, pipeline->runSizes, *pipeline);
  std::string before = ir::toString(*function);
  Expected<ir::Function> result =
      passes::runPasses(std::move(*function), options.passes, *pipeline);
  if (!result) {
    std::cerr << "loopc: error: " << result.error().message << "\n";
    return 1;
  }
  if (options.remarks) {
    printRemarks(std::cout, diagnostics, remarks.inPipelineOrder());
    return 0;
  }
  std::string after = ir::toString(*result);
  if (options.changes) {
    std::string changes = unifiedLineDiff(before, after);
    std::cout << (changes.empty() ? "// no changes\n" : changes);
    return 0;
  }
  std::cout << after;
  return 0;
}

} // namespace

void addOptCommand(CLI::App &app) {
  auto options = std::make_shared<OptOptions>();
  CLI::App *command = app.add_subcommand(
      "opt", "Run compiler passes on Loop IR read from a file, as `loopc explain` prints it");
  command->add_option("FILE", options->file, "The IR: one func and its kernels (a .lir file)")
      ->required();
  command->add_option("--pass", options->passes,
                      "Run this pass (repeatable, in the order given; none: the IR is read, "
                      "checked and printed back). The passes: `loopc explain --help`, "
                      "--skip-pass, and docs/architecture.md");
  command
      ->add_option("--target", options->target,
                   "The pipeline the passes run as part of: gpu (the default) or cpu")
      ->check(CLI::IsMember({"cpu", "gpu"}));
  command->add_option("--pass-param", options->parameters,
                      "NAME=VALUE: size an optimization otherwise (repeatable; docs/tuning.md)");
  command->add_option("--set", options->sizes,
                      "NAME=VALUE: a size's value in the run the passes compile for "
                      "(repeatable): the choices a pass makes by size are made for it, and "
                      "specialize_sizes compiles the small ones as constants");
  auto *changes = command->add_flag(
      "--changes", options->changes,
      "Print what the passes changed (a unified diff of the IR) instead of the IR");
  command
      ->add_flag("--remarks", options->remarks,
                 "Print what the passes did and declined instead of the IR")
      ->excludes(changes);
  command->callback([options] {
    if (int exitCode = runOpt(*options))
      throw CLI::RuntimeError(exitCode);
  });
}

} // namespace loopc::driver
