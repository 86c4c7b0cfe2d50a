// A kernel nest as map_to_gpu makes it and the passes after it keep it: the
// grid's GpuBlock loops, the block's GpuThread loops directly inside the last
// of them, then what each thread runs; inside that, map_to_gpu's point: the
// lets of the point's indices and `if (guard) { ... }`. The passes and code
// generation read a nest through this view instead of walking its loops
// again each in its own way, and rebuild it around a new body with
// `rebuilt`.
#pragma once

#include "ir/IR.h"

#include <functional>
#include <optional>
#include <vector>

namespace loopc::ir {

struct KernelNest {
  std::vector<const For *> blocks;  // outermost first
  std::vector<const For *> threads; // outermost first; may be none
  Stmt threadNest;                  // the outermost thread loop, else `body`
  Stmt body;                        // inside the innermost thread loop

  // The loop of GPU dimension `dim` (0 for x), or null.
  const For *blockAlong(int dim) const;
  const For *threadAlong(int dim) const;

  // `body` inside copies of the thread loops (variables, bounds,
  // dimensions and sources kept), `aroundThreads` applied to those, and
  // the result inside copies of the block loops.
  Stmt rebuilt(Stmt body, const std::function<Stmt(Stmt)> &aroundThreads = {}) const;
};

// The nest starting at `stmt` when it is a GpuBlock loop.
std::optional<KernelNest> kernelNestAt(const Stmt &stmt);

// The GpuThread loops from `stmt` inward, outermost first.
std::vector<const For *> threadLoopsAt(const StmtNode &stmt);

// map_to_gpu's point: lets, then `if (guard)` with no else.
struct GuardedPoint {
  std::vector<const LetStmt *> lets;
  Stmt guarded; // the if, the statement inside the lets
  const IfThenElse *guard;
};
std::optional<GuardedPoint> guardedPointOf(const Stmt &body);

} // namespace loopc::ir
