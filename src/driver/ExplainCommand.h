// `loopc explain FILE [--kernel K] [--after PASS] [--target gpu|cpu]
// [--remarks]`: prints the Loop IR of a kernel after each pass of the
// pipeline for the target (the GPU's by default), or only after PASS, so
// every mapping decision (loop kinds, memory spaces, register tiles,
// barriers, launches) is visible; with --remarks, what each optimization did
// or declined and why (RemarksOutput.h) instead.
#pragma once

#include "frontend/Ast.h"
#include "passes/Pipeline.h"
#include "support/Error.h"

#include <CLI/CLI.hpp>

#include <ostream>
#include <string>
#include <vector>

namespace loopc::driver {

void addExplainCommand(CLI::App &app);

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

// "gpu" or "cpu" (as the --target options spell them) as a pipeline target.
passes::PipelineTarget pipelineTargetNamed(const std::string &target);

} // namespace loopc::driver
