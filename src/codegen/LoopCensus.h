// What LLVM's loop optimizations left of a kernel's loops: which loops of
// the Loop IR are still loops in the optimized module, how many global
// memory loads one iteration of each makes (those of 2 or 4 iterations of
// the Loop IR's where the unroller unrolled it partly or by a run-time
// count; those of inner loops it unrolled whole too), how many instructions
// it issues, and its trip count where that is a constant. A loop that is no
// longer there was unrolled whole. The performance model reads this to know
// which loads go out together (ptxas schedules the loads of straight-line
// code before their first use, not those of a later iteration of a loop,
// and unrolls short loops of a constant trip count itself) and what an
// iteration costs, instead of guessing the unroller's decisions.
#pragma once

#include <llvm/IR/Module.h>

#include <cstdint>
#include <map>
#include <string>

namespace loopc::codegen {

struct CensusLoop {
  int globalLoads = 0; // per iteration
  // Per iteration, of the loop's own blocks (not those of the loops in it):
  // the machine instructions of its instructions but phis, casts that move
  // no bits and address arithmetic with constant offsets (folded into the
  // memory instruction); a 64-bit multiply counts three, a division by a
  // constant its multiply-high and shifts.
  int instructions = 0;
  // The trip count, where ptxas may unroll the loop: a constant the latch
  // compares a counter with, and no `nounroll` pragma; 0 otherwise.
  int64_t constantTrips = 0;
};

// Kernel name -> the loop's name (ir::loopKeys) -> what is left of that loop.
using LoopCensus = std::map<std::string, std::map<std::string, CensusLoop>>;

// The loops of every kernel of `module` (optimized), found by the
// `llvm.loop` property the NVPTX target gives each ({"loopc.loop", name}).
LoopCensus censusLoops(llvm::Module &module);

} // namespace loopc::codegen
