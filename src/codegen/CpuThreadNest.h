// How the threads of one GPU block run on one CPU core.
//
// A GpuThread nest is a loop over the threads of a block. Between two
// barriers the threads of a block may run in any order (the program is free
// of races), so the CPU is free to choose the order that vectorizes:
//  - at a barrier the nest is split into consecutive thread loops (loop
//    fission); control flow around barriers is block-uniform and runs once;
//  - a sequential loop inside a thread runs with the thread loop moved inside
//    it (`for k: for thread: body`), so consecutive threads, whose accesses
//    are usually consecutive addresses (map_to_gpu coalesces them), become
//    consecutive vector lanes. The loop keeps its trip count per thread: the
//    iterations all active threads run come first, unguarded, then the rest
//    under a per-thread guard. A loop along which an access is contiguous but
//    which would gather across threads (a row walked by each thread) is left
//    inside its thread, where it is already a stream, and so is a small
//    loop of constant trip count, which LLVM unrolls into the thread's body;
//  - a guard affine in one thread index (`if (x < W)` from map_to_gpu)
//    narrows the range of that thread loop instead of testing each thread,
//    so the loop that remains has no condition in it and vectorizes.
// Values that cross from one thread loop to the next (lets, register buffers,
// the conditions of ifs that enclose split code) live in per-thread arrays,
// or are recomputed where that is cheap and cannot fault.
#pragma once

#include "ir/IR.h"

#include <vector>

namespace loopc::codegen {

class LlvmEmitter;

// Emits `nest`, consecutive GpuThread loops each the body of the previous
// one, for the current block.
void emitCpuThreadNest(LlvmEmitter &emitter, const std::vector<const ir::For *> &nest);

} // namespace loopc::codegen
