// The reduction pieces shared by the lowering passes (see ReductionTrees.h).
#include "passes/lowering/ReductionTrees.h"

#include "ir/IRVisitor.h"

namespace loopc::passes {

using namespace loopc::ir;
using ir::Expr; // not the AST's
using ir::Stmt;

Expr stridedTripCount(Expr first, Expr extent, Expr stride) {
  return div(sub(add(extent, stride), add(first, makeI64(1))), stride);
}

Expr load(const Buffer &buffer, std::vector<Expr> indices) {
  return std::make_shared<Load>(buffer, std::move(indices));
}

Stmt store(const Buffer &buffer, std::vector<Expr> indices, Expr value) {
  buffer->isWritten = true;
  return std::make_shared<Store>(buffer, std::move(indices), std::move(value));
}

Stmt reductionStep(const ReduceOperator &op, const Expr &neutral, const Buffer &cell, Expr value) {
  cell->isWritten = true;
  auto reduction =
      commutes(op) ? std::make_shared<ReductionStep>(ReductionStep{op, neutral}) : nullptr;
  return std::make_shared<Store>(cell, std::vector<Expr>{},
                                 applyOperator(op, load(cell), std::move(value)), SourceRange{},
                                 std::move(reduction));
}

bool commutes(const ReduceOperator &op) {
  return op.kind != ReduceOperator::Kind::User || op.userCommutes;
}

void warnOrderedWalk(const RemarkReporter &remarks, const Reduce &reduce) {
  remarks.warning(reduce.source,
                  "the operator '" + reduce.op.userName +
                      "' does not commute, so this reduction is walked in order: each thread "
                      "folds a contiguous chunk (neighbouring threads read far-apart elements) "
                      "and the partials combine neighbour by neighbour; an operator symmetric "
                      "in its operands, or a builtin one such as max, would allow a strided "
                      "walk and a halving tree");
}

Stmt treeHalving(const std::vector<std::pair<ReduceOperator, Buffer>> &tiles, const Expr &thread,
                 bool inOrder) {
  std::vector<Stmt> steps;
  for (int64_t step = 1; step < kReductionThreads; step *= 2) {
    int64_t distance = inOrder ? step : kReductionThreads / (2 * step);
    Expr partner = add(thread, makeI64(distance));
    std::vector<Stmt> combines;
    for (const auto &[op, tile] : tiles)
      combines.push_back(
          store(tile, {thread}, applyOperator(op, load(tile, {thread}), load(tile, {partner}))));
    Expr active = inOrder ? equal(rem(thread, makeI64(2 * distance)), makeI64(0))
                          : lessThan(thread, makeI64(distance));
    steps.push_back(std::make_shared<IfThenElse>(active, makeBlock(combines)));
    steps.push_back(std::make_shared<Barrier>());
  }
  return makeBlock(std::move(steps));
}

ThreadWalk threadWalk(const Expr &thread, const Expr &threads, const Expr &extent, bool inOrder) {
  if (!inOrder)
    return {thread, threads, stridedTripCount(thread, extent, threads)};
  Expr chunk = div(add(extent, sub(threads, makeI64(1))), threads);
  Expr first = mul(thread, chunk);
  Expr trips = maxOf(minOf(chunk, sub(extent, first)), makeI64(0));
  return {first, makeI64(1), trips};
}

Buffer makeBuffer(std::string name, ScalarType element, std::vector<Expr> shape,
                  MemorySpace memory) {
  auto buffer = std::make_shared<BufferInfo>();
  buffer->name = std::move(name);
  buffer->element = element;
  buffer->shape = std::move(shape);
  buffer->memory = memory;
  return buffer;
}

} // namespace loopc::passes
