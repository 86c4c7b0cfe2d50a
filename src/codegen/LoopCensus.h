// What LLVM's loop optimizations left of a kernel's loops: which loops of
// the Loop IR are still loops in the optimized module, and how many global
// memory loads one iteration of each makes (those of 2 or 4 iterations of
// the Loop IR's where the unroller unrolled it partly or by a run-time
// count; those of inner loops it unrolled whole too). A loop that is no
// longer there was unrolled whole. The performance model reads this to know which loads go
// out together (ptxas schedules the loads of straight-line code before
// their first use, not those of a later iteration of a loop), instead of
// guessing the unroller's decisions.
#pragma once

#include <llvm/IR/Module.h>

#include <map>
#include <string>

namespace loopc::codegen {

// Kernel name -> Loop IR loop variable -> global loads per iteration.
using LoopCensus = std::map<std::string, std::map<std::string, int>>;

// The loops of every kernel of `module` (optimized), found by the
// `llvm.loop` property the NVPTX target gives each ({"loopc.loop", name}).
LoopCensus censusLoops(llvm::Module &module);

} // namespace loopc::codegen
