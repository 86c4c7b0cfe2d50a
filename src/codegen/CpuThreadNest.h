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
//    so the loop that remains has no condition in it and vectorizes. Around
//    a loop with the thread loops inside it, the blocks the guard leaves
//    whole run the full thread loops, and so, where nothing past the guard
//    can fault or be seen, do the blocks at its edges: the threads past it
//    compute values no store keeps (the rows past it those of the last row,
//    x's lanes past it from what is proven in range for any lane), and only
//    the stores keep to the guard;
//  - a guard affine in several (a triangle's `j <= i`, a band's) is tested
//    once per block at the corners of its threads' box: a block it covers
//    whole runs as if it had no guard, a block it misses runs nothing, and
//    only the blocks it cuts test each thread (a triangular product's rect
//    with `if (j <= i)` around its loop over k ran more than ten times
//    faster: docs/benchmarks.md, CPU history).
// Values that cross from one thread loop to the next (lets, register buffers,
// the conditions of ifs that enclose split code) live in per-thread arrays,
// or are recomputed where that is cheap and cannot fault. A let of names the
// same in every thread (those bound outside the nest, the variables of loops
// around barriers) is evaluated once for the block, even a division, where
// every thread of the block would evaluate it (outside any if): a division
// in a thread loop, checked for zero, keeps the loop from vectorizing.
#pragma once

#include "ir/IR.h"

#include <optional>
#include <vector>

namespace loopc::codegen {

class LlvmEmitter;

// Emits `nest`, consecutive GpuThread loops each the body of the previous
// one, for the current block.
void emitCpuThreadNest(LlvmEmitter &emitter, const std::vector<const ir::For *> &nest);

// A kernel the CPU runs as rows rather than block by block: its threads and
// blocks are all independent (no barrier, no shared memory), a thread runs
// no loop (an elementwise map, a stencil of a few explicit neighbours), and
// every access streams along x. One row is a combination of the other block
// and thread indices, swept along x over all x blocks: one stream where
// block order would read pieces of blockDim.x elements from several rows at
// once. A thread may run small loops of constant trip count, which LLVM
// unrolls (a 5 x 5 filter's window: the few input rows it reads stay in
// cache from one output row to the next). Kernels with longer loops in
// their threads keep the block order, whose tiles keep the rows a block
// reads in cache while its rows reuse them (a large filter's window,
// matmul's row of B), and so do kernels with an access strided along x
// (transpose's tiles).
// When the body reads the x indices only as map_to_gpu combines them,
// `x.block * size + x.thread`, the x blocks of a row are one thread loop
// across the whole row (`row`): one vectorized loop per row, where block by
// block each 32 elements paid for narrowing the thread loop to the guards.
// A 1-D grid has no other rows: its blocks stay the units of parallel work
// (so that they can be shared out), and the consecutive blocks one call runs
// are one thread loop over their span (`spansBlocks`).
struct RowSweep {
  std::vector<const ir::For *> rows; // the other grid and thread loops, slowest first
  const ir::For *xBlock;
  const ir::For *xThread;
  // A GpuThread For over the row's x, or null. When `spansBlocks`, over the
  // x of the blocks [kSpanFirst, kSpanFirst + kSpanCount), which the caller
  // binds.
  ir::Stmt row;
  bool spansBlocks = false;
  static constexpr const char *kSpanFirst = "span.first";
  static constexpr const char *kSpanCount = "span.count";
};
std::optional<RowSweep> rowSweepOf(const ir::KernelFunc &kernel);

// Whether the blocks of `kernel` should run column by column (y advancing
// fastest) rather than row by row: a sequential loop runs with the thread
// loops inside it and reads in it an array that changes along the loop and
// along x but not along y, as matmul's B[k][j]. Blocks of one column then
// share that panel (K x 32 elements) from cache; row by row, each block
// loads a new one.
bool runsColumnByColumn(const ir::KernelFunc &kernel);

} // namespace loopc::codegen
