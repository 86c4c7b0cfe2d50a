// The coalescing check behind the `map_to_gpu` warning of `--remarks`: in a
// kernel as the GPU pipeline leaves it, the global accesses that the threads
// of a warp, consecutive along x, make far apart. map_to_gpu gives x the
// loop along which most accesses are contiguous, and stage_shared turns the
// column reads of a transpose into row reads through shared memory; what is
// left costs a memory transaction per thread instead of one per warp, which a
// program fixes by the order of its loops or the layout of its arrays.
#pragma once

#include "ir/IR.h"
#include "passes/Remarks.h"

namespace loopc::passes {

// Warns, at each such access, which array and which index make it strided.
void warnUncoalescedAccesses(const ir::Function &function, const RemarkReporter &remarks);

} // namespace loopc::passes
