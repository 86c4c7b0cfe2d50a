// Async copies as plain copies (see CpuAsyncCopies.h).
#include "codegen/CpuAsyncCopies.h"

#include "ir/IRVisitor.h"

namespace loopc::codegen {

using namespace loopc::ir;
using ir::Expr;
using ir::Stmt;

namespace {

class SynchronousCopies : public IRMutator {
protected:
  // target[.., last + e] = e < valid ? source[.., last + e] : 0: a Select
  // with a load on one side evaluates that side only when it is chosen, so
  // an element past `valid` is never read.
  Stmt visitAsyncCopy(const AsyncCopy &node, const Stmt &) override {
    std::vector<Stmt> copies;
    for (int element = 0; element < node.elements; ++element) {
      auto shifted = [&](std::vector<Expr> indices) {
        indices.back() = add(toI64(indices.back()), makeI64(element));
        return indices;
      };
      Expr read = std::make_shared<Load>(node.source, shifted(node.sourceIndices));
      Expr value =
          select(lessThan(makeI64(element), toI64(node.valid)), read, zeroOf(node.source->element));
      copies.push_back(std::make_shared<Store>(node.target, shifted(node.targetIndices), value));
    }
    return makeBlock(std::move(copies));
  }
  Stmt visitAsyncCommit(const AsyncCommit &, const Stmt &) override { return makeBlock({}); }
  Stmt visitAsyncWait(const AsyncWait &, const Stmt &) override { return makeBlock({}); }
};

} // namespace

Function copyAsyncCopiesInPlace(Function function) {
  for (KernelFunc &kernel : function.kernels)
    kernel.body = SynchronousCopies().mutate(kernel.body);
  return function;
}

} // namespace loopc::codegen
