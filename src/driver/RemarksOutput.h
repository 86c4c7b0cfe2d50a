// `--remarks` (explain, run, bench, the REPL's :explain and :run): the
// optimization remarks of compiling a kernel (passes/Remarks.h), shown as
// the one diagnostics engine shows errors: `file:line:col: remark: PASS:
// message` (`warning:` for a performance cliff), the source line and a caret.
#pragma once

#include "frontend/Ast.h"
#include "passes/Pipeline.h"
#include "support/Diagnostics.h"
#include "support/Error.h"

#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <vector>

namespace loopc::driver {

// The remarks of compiling `kernel` through `pipeline` (its remarks and
// specialized sizes are set here: those a run with these `sizes` compiles
// for, as an engine does), in source order; with `afterPass`, that pass's
// alone (an unknown pass is explainKernel's error). A program the pipeline
// refuses is its located error.
Expected<std::vector<passes::Remark>>
kernelRemarks(const Program &program, const KernelDecl &kernel, passes::PipelineOptions pipeline,
              const std::map<std::string, int64_t> &sizes, const std::string &afterPass = "");

// A remark as a diagnostic: a remark (a warning for a cliff) whose message
// starts with the pass's name.
Diagnostic remarkDiagnostic(const passes::Remark &remark);

// Writes each remark formatted by `diagnostics`.
void printRemarks(std::ostream &out, const DiagnosticEngine &diagnostics,
                  const std::vector<passes::Remark> &remarks);

} // namespace loopc::driver
