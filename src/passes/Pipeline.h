// The middle end as one list of passes (Pipeline.cpp): from the lowered Loop
// IR to GPU-shaped kernels extracted from host code, ready for either code
// generator.
#pragma once

#include "ir/IR.h"
#include "support/Error.h"

#include <functional>
#include <string>

namespace loopc::passes {

struct PipelineOptions {
  // Called after every pass with its name and the Function it produced
  // (`loopc explain` prints it); may be empty.
  std::function<void(const std::string &pass, const ir::Function &)> afterPass;
};

// Runs every pass in order; the IR verifier checks the result of each. An
// invalid IR is a compiler bug, reported as an internal error naming the
// pass that produced it.
Expected<ir::Function> runPipeline(ir::Function function, const PipelineOptions &options = {});

} // namespace loopc::passes
