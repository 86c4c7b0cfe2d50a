// map_to_gpu: the plain GPU mapping. Each top-level parfor nest (a Parallel
// loop not inside another) becomes a grid of blocks of threads: up to three of
// its loops are strip-mined into a GpuBlock loop over blocks and a GpuThread
// loop over the threads of a block, `v = min + v.block * size + v.thread`,
// with a guard `if (v < min + extent)` for the last, partial block. The
// innermost loop goes to x, so consecutive threads touch consecutive elements
// of row-major arrays (coalescing). Loops that cannot be mapped (their bounds
// depend on another loop of the nest, or they are short constant loops) run
// serially inside each thread, as do parfors nested in the body.
// Later passes (tiling, staging) refine this mapping; this one is always legal.
#include "passes/Passes.h"

#include "ir/IRVisitor.h"

#include <algorithm>

namespace loopc::passes {

using namespace loopc::ir;
using ir::Expr; // not the AST's
using ir::Stmt;

namespace {

// Threads per block along x, y, z for a mapping of 1, 2 or 3 dimensions: 256
// threads in all, a full warp (or more) along x.
const int64_t kBlockShapes[3][3] = {{256, 1, 1}, {32, 8, 1}, {32, 4, 2}};

// A constant trip count this short wastes a block dimension.
const int64_t kShortLoop = 16;

// Every remaining Parallel loop becomes Serial: inside a thread, iterations
// run one after another.
class SerializeParallel : public IRMutator {
protected:
  Stmt visitFor(const For &node, const Stmt &self) override {
    Stmt result = IRMutator::visitFor(node, self);
    const auto *loop = result->as<For>();
    if (loop->forKind != ForKind::Parallel)
      return result;
    return std::make_shared<For>(loop->var, loop->min, loop->extent, ForKind::Serial, 0, loop->body,
                                 loop->source);
  }
};

// `min + offset`, without the addition when min is zero (the common case).
Expr offsetFrom(const Expr &min, Expr offset) {
  const auto *zero = min->as<IntImm>();
  return zero && zero->value == 0 ? offset : makeBinary(BinaryOpKind::Add, min, std::move(offset));
}

class GpuMapper : public IRMutator {
protected:
  Stmt visitFor(const For &node, const Stmt &self) override {
    if (node.forKind != ForKind::Parallel)
      return IRMutator::visitFor(node, self);
    return mapNest(node);
  }

private:
  Stmt mapNest(const For &top) {
    // The perfectly nested chain of parallel loops, outermost first.
    std::vector<const For *> chain{&top};
    while (const auto *inner = chain.back()->body->as<For>()) {
      if (inner->forKind != ForKind::Parallel)
        break;
      chain.push_back(inner);
    }
    std::set<std::string> nestVars;
    for (const For *loop : chain)
      nestVars.insert(loop->var);
    auto hoistable = [&](const For *loop) {
      return !usesAnyVar(loop->min, nestVars) && !usesAnyVar(loop->extent, nestVars);
    };
    auto isShort = [](const For *loop) {
      const auto *extent = loop->extent->as<IntImm>();
      return extent && extent->value < kShortLoop;
    };
    // Innermost first, up to three; short loops only when nothing else maps.
    std::vector<const For *> mapped;
    for (bool allowShort : {false, true}) {
      for (size_t i = chain.size(); i-- > 0 && mapped.size() < 3;)
        if (hoistable(chain[i]) && (allowShort || !isShort(chain[i])))
          mapped.push_back(chain[i]);
      if (!mapped.empty())
        break;
    }
    // Serial loops for the unmapped members of the chain, in their order,
    // around the body (whose own parfors run serially in the thread).
    Stmt body = SerializeParallel().mutate(chain.back()->body);
    for (size_t i = chain.size(); i-- > 0;) {
      const For *loop = chain[i];
      if (std::find(mapped.begin(), mapped.end(), loop) != mapped.end())
        continue;
      body = std::make_shared<For>(loop->var, loop->min, loop->extent, ForKind::Serial, 0, body,
                                   loop->source);
    }
    // The guard, then the mapped variables, then thread and block loops.
    Expr guard;
    for (const For *loop : mapped) {
      Expr inRange = makeBinary(BinaryOpKind::Lt, makeVar(loop->min->type, loop->var),
                                offsetFrom(loop->min, loop->extent));
      guard = guard ? makeBinary(BinaryOpKind::And, guard, inRange) : inRange;
    }
    body = std::make_shared<IfThenElse>(guard, body);
    const int64_t *shape = kBlockShapes[mapped.size() - 1];
    for (size_t d = 0; d < mapped.size(); ++d) {
      const For *loop = mapped[d];
      ScalarType type = loop->min->type;
      Expr size = makeInt(type, shape[d]);
      Expr offset =
          makeBinary(BinaryOpKind::Add,
                     makeBinary(BinaryOpKind::Mul, makeVar(type, loop->var + ".block"), size),
                     makeVar(type, loop->var + ".thread"));
      body = std::make_shared<LetStmt>(loop->var, offsetFrom(loop->min, offset), body);
    }
    for (size_t d = 0; d < mapped.size(); ++d) {
      const For *loop = mapped[d];
      body = std::make_shared<For>(loop->var + ".thread", makeInt(loop->min->type, 0),
                                   makeInt(loop->min->type, shape[d]), ForKind::GpuThread,
                                   static_cast<int>(d), body, loop->source);
    }
    for (size_t d = 0; d < mapped.size(); ++d) {
      const For *loop = mapped[d];
      ScalarType type = loop->min->type;
      Expr size = makeInt(type, shape[d]);
      // ceil(extent / size), and no blocks at all for an empty range.
      Expr blocks = makeBinary(BinaryOpKind::Div,
                               makeBinary(BinaryOpKind::Sub,
                                          makeBinary(BinaryOpKind::Add, loop->extent, size),
                                          makeInt(type, 1)),
                               size);
      blocks = makeBinary(BinaryOpKind::Max, blocks, makeInt(type, 0));
      body = std::make_shared<For>(loop->var + ".block", makeInt(type, 0), blocks,
                                   ForKind::GpuBlock, static_cast<int>(d), body, loop->source);
    }
    return body;
  }
};

} // namespace

Function mapToGpu(Function function) {
  function.body = GpuMapper().mutate(function.body);
  return function;
}

} // namespace loopc::passes
