// `loopc explain FILE [--kernel K] [--after PASS] [--target gpu|cpu]
// [--remarks]`: prints the Loop IR of a kernel after each pass of the
// pipeline for the target (the GPU's by default), or only after PASS, so
// every mapping decision (loop kinds, memory spaces, register tiles,
// barriers, launches) is visible; with --remarks, what each optimization did
// or declined and why (RemarksOutput.h) instead.
#pragma once

#include "driver/Cli.h"
#include "driver/Session.h"
#include "frontend/Ast.h"
#include "passes/Pipeline.h"
#include "support/Error.h"

#include <CLI/CLI.hpp>

#include <functional>
#include <map>
#include <ostream>
#include <string>
#include <vector>

namespace loopc::driver {

void addExplainCommand(CLI::App &app);

// The options of `loopc explain`, and of the REPL's :explain.
struct ExplainOptions {
  std::string file; // FILE, on the command line
  std::string kernel;
  std::string after;
  std::string target = "gpu";
  PassChoiceOptions passes;
  std::vector<std::string> sizes; // --set NAME=VALUE: sizes an engine would specialize for
  bool remarks = false;
  bool changes = false;    // --changes: each pass's changes, not its whole output
  bool perf = false;       // --perf: the performance model's report instead of the IR
  std::string deviceModel; // empty: h100 for the GPU, native for the CPU

  void addTo(CLI::App &command, CommandForm form);
};

// Prints remarks, quoting the source each is about (the command line quotes
// the files, the REPL the inputs).
using RemarkPrinter = std::function<void(const std::vector<passes::Remark> &)>;

// What `loopc explain` prints of the kernel `options` names in `program`
// (--fp-contract applied to it), to `out`: the IR after each pass (or
// --after's), each pass's changes, the remarks (through `printRemarks`) or
// the performance model's report. An error is located where it has a place.
Status explainAsOptionsSay(std::ostream &out, Program &program, const ExplainOptions &options,
                           const RemarkPrinter &printRemarks);

// Writes the kernel's IR after each pass of the `pipeline` (only after the
// passes named `afterPass` when it is not empty; its own afterPass is
// replaced) to `out`, or with `changesOnly` what each pass changed (a
// unified diff against the IR before it). An unknown pass is an error
// listing the passes. Shared with the REPL's :explain.
Status explainKernel(std::ostream &out, const Program &program, const KernelDecl &kernel,
                     const std::string &afterPass, passes::PipelineOptions pipeline,
                     bool changesOnly = false);

// The error for `--after PASS` naming no pass of `passNames` (those the
// pipeline of `pipeline` ran): the option that left it out, or the passes.
Error unknownPassError(const std::string &afterPass, const std::vector<std::string> &passNames,
                       const passes::PipelineOptions &pipeline);

// What the performance model predicts of a run of `kernel` with `values`
// (every size, and the integer scalars that count loops) on `deviceModel`
// ("" for the target's default: h100, or this CPU), written to `out` as
// `loopc explain --perf` prints it. Shared with the REPL's :explain --perf.
Status explainPerformance(std::ostream &out, const Program &program, const KernelDecl &kernel,
                          const passes::PassChoices &choices,
                          const std::map<std::string, int64_t> &values, const std::string &target,
                          const std::string &deviceModel);

// The values of `kernel`'s sizes among `assignments` (NAME=VALUE, as --set
// gives them), and with `integerScalars` of its integer scalar parameters
// too (a time loop's `steps`, which the performance model needs).
Expected<std::map<std::string, int64_t>> sizeValues(const KernelDecl &kernel,
                                                    const std::vector<std::string> &assignments,
                                                    bool integerScalars);

// "gpu" or "cpu" (as the --target options spell them) as a pipeline target.
passes::PipelineTarget pipelineTargetNamed(const std::string &target);

} // namespace loopc::driver
