// lower_reductions: removes every Reduce node.
// - A Reduce inside a parallel loop (one reduction per element, as in matmul)
//   is one thread's work: a serial loop nest folding the values into a
//   register accumulator, stored back once at the end.
// - A Reduce in host code (a whole-array reduction, as in dot) must use the
//   whole device: a first kernel gives each thread a strided share of the
//   outermost reduction loop, combines the 256 per-thread values of a block
//   in shared memory by tree halving (a barrier between steps), and writes one
//   partial per block to a global temporary; a second, single-block kernel
//   combines the partials the same way and folds them into the accumulator.
// The order of combination changes, which the language allows.
#include "passes/Passes.h"

#include "ir/IRVisitor.h"
#include "passes/lowering/ReductionTrees.h"

namespace loopc::passes {

using namespace loopc::ir;
using ir::Expr; // not the AST's
using ir::Stmt;

namespace {

const int64_t kThreads = kReductionThreads;
const int64_t kMaxBlocks = 1024; // partials combined by the second kernel

class ReductionLowerer : public IRMutator {
protected:
  Stmt visitFor(const For &node, const Stmt &self) override {
    bool parallel = node.forKind != ForKind::Serial;
    parallelDepth_ += parallel;
    Stmt result = IRMutator::visitFor(node, self);
    parallelDepth_ -= parallel;
    return result;
  }

  Stmt visitReduce(const Reduce &node, const Stmt &) override {
    // Nested reductions first. A tree reduction's value is computed inside
    // its GPU threads, so the reductions nested in it are serial there.
    bool tree = parallelDepth_ == 0;
    parallelDepth_ += tree;
    Stmt valueSetup = mutate(node.valueSetup);
    parallelDepth_ -= tree;
    return tree ? treeReduction(node, valueSetup) : serialReduction(node, valueSetup);
  }

private:
  // The loops of `reduce` around `body`, serial.
  static Stmt serialLoops(const Reduce &reduce, size_t first, Stmt body) {
    for (size_t i = reduce.loops.size(); i-- > first;) {
      const Reduce::Loop &loop = reduce.loops[i];
      body = std::make_shared<For>(loop.var, loop.min, loop.extent, ForKind::Serial, 0, body,
                                   reduce.source);
    }
    return body;
  }

  // `cell = combine(cell, value)` at every point of loops[first..], with the
  // value setup around it.
  static Stmt accumulateInto(const Reduce &reduce, const Stmt &valueSetup, size_t first,
                             const Buffer &cell) {
    Stmt step = reductionStep(reduce.op, cell, reduce.value);
    return serialLoops(reduce, first, appendAtTail(valueSetup, step));
  }

  Stmt serialReduction(const Reduce &reduce, const Stmt &valueSetup) {
    const Buffer &accumulator = reduce.accumulator;
    if (accumulator->memory == MemorySpace::Register && accumulator->shape.empty())
      return accumulateInto(reduce, valueSetup, 0, accumulator);
    Buffer cell = makeBuffer(fresh("acc.reg"), accumulator->element, {}, MemorySpace::Register);
    Stmt body = makeBlock({store(cell, {}, load(accumulator, reduce.indices)),
                           accumulateInto(reduce, valueSetup, 0, cell),
                           store(accumulator, reduce.indices, load(cell))});
    return std::make_shared<Allocate>(cell, body);
  }

  Stmt treeReduction(const Reduce &reduce, const Stmt &valueSetup) {
    std::string prefix = fresh("red");
    ScalarType element = reduce.accumulator->element;
    const Reduce::Loop &outer = reduce.loops.front();
    ScalarType loopType = outer.min->type;
    Expr extent = outer.extent->type == ScalarType::I64
                      ? outer.extent
                      : std::make_shared<Cast>(ScalarType::I64, outer.extent);
    Expr threads = makeI64(kThreads);

    // Kernel 1: per-thread strided partial sums, per-block tree, one partial
    // per block.
    std::string gridVar = prefix + ".grid";
    Expr grid = makeVar(ScalarType::I64, gridVar);
    Expr gridValue = makeBinary(
        BinaryOpKind::Max,
        makeBinary(BinaryOpKind::Min,
                   makeBinary(BinaryOpKind::Div,
                              makeBinary(BinaryOpKind::Add, extent, makeI64(kThreads - 1)),
                              threads),
                   makeI64(kMaxBlocks)),
        makeI64(1));
    Buffer partials = makeBuffer(prefix + ".partials", element, {grid}, MemorySpace::Global);
    Expr block = makeVar(ScalarType::I64, prefix + ".block");
    Expr thread = makeVar(ScalarType::I64, prefix + ".thread");
    Expr first =
        makeBinary(BinaryOpKind::Add, makeBinary(BinaryOpKind::Mul, block, threads), thread);
    Expr stride = makeBinary(BinaryOpKind::Mul, grid, threads);
    std::string stepVar = prefix + ".step";
    Expr steps = stridedTripCount(first, extent, stride);
    Expr position =
        makeBinary(BinaryOpKind::Add, first,
                   makeBinary(BinaryOpKind::Mul, makeVar(ScalarType::I64, stepVar), stride));
    if (loopType != ScalarType::I64)
      position = std::make_shared<Cast>(loopType, position);
    Buffer part = makeBuffer(prefix + ".part", element, {}, MemorySpace::Register);
    Stmt pointBody =
        std::make_shared<LetStmt>(outer.var, makeBinary(BinaryOpKind::Add, outer.min, position),
                                  accumulateInto(reduce, valueSetup, 1, part));
    Stmt threadShare = std::make_shared<Allocate>(
        part, makeBlock({store(part, {}, reduce.neutral),
                         std::make_shared<For>(stepVar, makeI64(0), steps, ForKind::Serial, 0,
                                               pointBody, reduce.source),
                         nullptr}));
    Buffer tile = makeBuffer(prefix + ".tile", element, {threads}, MemorySpace::Shared);
    auto firstThreadDoes = [&](Stmt stmt) {
      return std::make_shared<IfThenElse>(makeBinary(BinaryOpKind::Eq, thread, makeI64(0)), stmt);
    };
    // The per-thread register is stored into the tile before its scope ends,
    // so no register value lives across a barrier.
    Stmt shareToTile = appendAtTail(threadShare, store(tile, {thread}, load(part)));
    Stmt kernel1Thread =
        makeBlock({shareToTile, std::make_shared<Barrier>(), treeHalving(reduce.op, tile, thread),
                   firstThreadDoes(store(partials, {block}, load(tile, {makeI64(0)})))});
    Stmt kernel1 =
        gpuLoops(prefix + ".block", grid, prefix + ".thread", tile, kernel1Thread, reduce.source);

    // Kernel 2: one block folds the partials into the accumulator.
    std::string prefix2 = fresh("red");
    Expr thread2 = makeVar(ScalarType::I64, prefix2 + ".thread");
    Buffer part2 = makeBuffer(prefix2 + ".part", element, {}, MemorySpace::Register);
    Buffer tile2 = makeBuffer(prefix2 + ".tile", element, {threads}, MemorySpace::Shared);
    std::string stepVar2 = prefix2 + ".step";
    Expr steps2 = stridedTripCount(thread2, grid, threads);
    Expr partialIndex =
        makeBinary(BinaryOpKind::Add, thread2,
                   makeBinary(BinaryOpKind::Mul, makeVar(ScalarType::I64, stepVar2), threads));
    Stmt gather = std::make_shared<Allocate>(
        part2, makeBlock({store(part2, {}, reduce.neutral),
                          std::make_shared<For>(
                              stepVar2, makeI64(0), steps2, ForKind::Serial, 0,
                              reductionStep(reduce.op, part2, load(partials, {partialIndex})),
                              reduce.source),
                          store(tile2, {thread2}, load(part2))}));
    Expr result = applyOperator(reduce.op, load(reduce.accumulator, reduce.indices),
                                load(tile2, {makeI64(0)}));
    auto firstThread2Does = [&](Stmt stmt) {
      return std::make_shared<IfThenElse>(makeBinary(BinaryOpKind::Eq, thread2, makeI64(0)), stmt);
    };
    Stmt kernel2Thread =
        makeBlock({gather, std::make_shared<Barrier>(), treeHalving(reduce.op, tile2, thread2),
                   firstThread2Does(store(reduce.accumulator, reduce.indices, result))});
    Stmt kernel2 = gpuLoops(prefix2 + ".block", makeI64(1), prefix2 + ".thread", tile2,
                            kernel2Thread, reduce.source);

    return std::make_shared<LetStmt>(
        gridVar, gridValue, std::make_shared<Allocate>(partials, makeBlock({kernel1, kernel2})));
  }

  // gpu_block.x for block in [0, blocks) { shared tile; gpu_thread.x for thread in [0, 256) { body
  // } }
  static Stmt gpuLoops(const std::string &blockVar, Expr blocks, const std::string &threadVar,
                       const Buffer &tile, Stmt body, SourceRange source) {
    Stmt threadLoop = std::make_shared<For>(threadVar, makeI64(0), makeI64(kThreads),
                                            ForKind::GpuThread, 0, body, source);
    return std::make_shared<For>(blockVar, makeI64(0), blocks, ForKind::GpuBlock, 0,
                                 std::make_shared<Allocate>(tile, threadLoop), source);
  }

  std::string fresh(const std::string &base) { return base + std::to_string(counter_++); }

  int parallelDepth_ = 0;
  int counter_ = 0;
};

} // namespace

Function lowerReductions(Function function) {
  function.body = ReductionLowerer().mutate(function.body);
  return function;
}

} // namespace loopc::passes
