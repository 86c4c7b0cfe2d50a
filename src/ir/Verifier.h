// The Loop IR verifier, run after every pass (Pipeline.cpp) so a broken pass
// fails at that pass with the node it got wrong, not later in code generation
// or on the GPU. It checks: operand types; every variable and buffer used
// within the scope that binds it; index counts against buffer ranks; every
// GpuThread loop inside a GpuBlock loop; barriers only inside a block and in
// block-uniform control flow; Shared buffers only inside a block (or a kernel);
// launches only in host code, matching their kernel; no Reduce once reductions
// are lowered.
#pragma once

#include "ir/IR.h"
#include "support/Error.h"

#include <string>

namespace loopc::ir {

struct VerifyOptions {
  bool reductionsLowered = false; // a Reduce is an error from here on
  bool scansLowered = false;      // a Scan is an error from here on
};

// `pass` names the pass whose output this is, for the message; empty for
// IR no pass made (read from text).
Status verifyFunction(const Function &function, const std::string &pass,
                      const VerifyOptions &options = {});

} // namespace loopc::ir
