// drop_overwritten_fills: a statement filling an array with zeros, followed
// in its block by one that writes every element again before anything reads
// it, does nothing a program can see, so it goes. The lowering makes such
// fills for the `out` arrays of a kernel a kernel calls (`out` arrays start
// zeroed), and the callee usually writes them whole: `gemv(At, x, y)` zeroes
// y and then stores each y[i]. A fill is one pass over memory, and on the
// GPU a launch.
//
// The later statement must be a full write of the array (ArrayUses.h: a nest
// of parallel loops over its whole shape storing each element
// unconditionally) that neither reads the array nor writes it otherwise, and
// no statement in between may touch it.
#include "passes/Passes.h"

#include "ir/IRVisitor.h"
#include "passes/analysis/ArrayUses.h"

namespace loopc::passes {

using namespace loopc::ir;
using ir::Expr; // not the AST's
using ir::Stmt;

namespace {

bool isZeroFill(const Stmt &stmt) {
  std::optional<FullWrite> fill = fullWrite(stmt);
  return fill && fill->isExpression && fill->lets.empty() && isZeroConstant(fill->store->value);
}

// Whether `stmts[fill]`, a zero fill, is written over before any read.
bool overwrittenBeforeRead(const std::vector<Stmt> &stmts, size_t fill) {
  const BufferInfo *array = fullWrite(stmts[fill])->store->buffer.get();
  for (size_t i = fill + 1; i < stmts.size(); ++i) {
    ArrayUses uses(array);
    uses.visit(stmts[i]);
    if (uses.reads.empty() && uses.writes == 0)
      continue;
    return uses.reads.empty() && uses.writes == 1 && fullWrite(stmts[i], array);
  }
  return false;
}

class DropFills : public IRMutator {
protected:
  Stmt visitBlock(const Block &node, const Stmt &self) override {
    Stmt mutated = IRMutator::visitBlock(node, self);
    const std::vector<Stmt> &stmts = mutated->as<Block>()->stmts;
    std::vector<Stmt> kept;
    for (size_t i = 0; i < stmts.size(); ++i)
      if (!isZeroFill(stmts[i]) || !overwrittenBeforeRead(stmts, i))
        kept.push_back(stmts[i]);
    if (kept.size() == stmts.size())
      return mutated;
    return makeBlock(std::move(kept));
  }
};

} // namespace

ir::Function dropOverwrittenFills(ir::Function function) {
  function.body = DropFills().mutate(function.body);
  return function;
}

} // namespace loopc::passes
