// The pieces of a reduction shared by the passes that lower one
// (lower_reductions, map_rows_to_blocks): the combine of an operator, the
// serial accumulation step, a block's tree over a shared tile, and the trip
// count of a thread striding over a range shared with the other threads.
#pragma once

#include "ir/IR.h"
#include "passes/Remarks.h"

#include <string>
#include <utility>
#include <vector>

namespace loopc::passes {

// Threads per block of a cooperative reduction: a power of two for the halving.
inline constexpr int64_t kReductionThreads = 256;

// `cell = combine(cell, value)`, marked a reduction step (see ir::Store)
// when the operator commutes.
ir::Stmt reductionStep(const ir::ReduceOperator &op, const ir::Expr &neutral,
                       const ir::Buffer &cell, ir::Expr value);

// Whether the lowering may combine points in any order: the builtin
// operators commute, and a user's `assoc fn` the checker found symmetric in
// its operands (`max(abs(a), abs(b))`, sema::commutesAsWritten); any other
// need only be associative, so its points must combine in the order of the
// range.
bool commutes(const ir::ReduceOperator &op);

// The warning for a reduction whose threads walk its range in order because
// its operator does not commute (threadWalk's contiguous chunks, a tree
// pairing neighbours), located at the redomap: a cliff the program avoids
// with an operator symmetric in its operands or a builtin one.
void warnOrderedWalk(const RemarkReporter &remarks, const ir::Reduce &reduce);

// Combines each tile[0..kReductionThreads) into its tile[0] with its
// operator; `thread` is the thread index (i64). Each step combines every
// tile and is followed by one barrier. With `inOrder`, neighbours pair up
// (tile[t] with tile[t + s] for t a multiple of 2s), so tile[0] is the
// combination in thread order; otherwise the tile is halved (tile[t] with
// tile[t + half]), every active thread a neighbour of the next.
ir::Stmt treeHalving(const std::vector<std::pair<ir::ReduceOperator, ir::Buffer>> &tiles,
                     const ir::Expr &thread, bool inOrder);

// How one of `threads` threads walks its share of [0, extent): the points
// first, first + stride, ... (trips of them). Interleaved (thread t takes
// t, t + threads, ...: neighbouring threads read neighbouring points, which
// coalesces), or, `inOrder`, a contiguous chunk per thread in thread order,
// so that combining the threads' partials in thread order keeps the range's.
struct ThreadWalk {
  ir::Expr first, stride, trips;
};
ThreadWalk threadWalk(const ir::Expr &thread, const ir::Expr &threads, const ir::Expr &extent,
                      bool inOrder);

// How many of the positions first, first + stride, ... lie below extent:
// ceil((extent - first) / stride), as the trip count of a thread that strides
// over a range shared with the other threads.
ir::Expr stridedTripCount(ir::Expr first, ir::Expr extent, ir::Expr stride);

ir::Buffer makeBuffer(std::string name, ScalarType element, std::vector<ir::Expr> shape,
                      ir::MemorySpace memory);
ir::Expr load(const ir::Buffer &buffer, std::vector<ir::Expr> indices = {});
// A Store, marking the buffer written.
ir::Stmt store(const ir::Buffer &buffer, std::vector<ir::Expr> indices, ir::Expr value);

} // namespace loopc::passes
