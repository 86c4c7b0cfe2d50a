// Lowering of a checked kernel (and everything it calls) into one Loop IR
// Function: parfor nests become Parallel loops, redomaps become Reduce nodes,
// `fn` calls are inlined, kernel calls are expanded in place. No GPU mapping
// is decided here; the passes do that.
#pragma once

#include "frontend/Ast.h"
#include "ir/IR.h"

namespace loopc::ir {

// `kernel` must belong to `program`, which passed Sema.
Function lowerKernel(const Program &program, const KernelDecl &kernel);

} // namespace loopc::ir
