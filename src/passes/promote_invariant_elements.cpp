// promote_invariant_elements (CPU): a serial loop that updates one element
// of an array at every iteration, the same element each time (trmm's
// `for k in i + 1..M { B[i][j] += A[k][i] * B[k][j] }`, a triangular solve's
// `for j in 0..i { x[i] -= L[i][j] * x[j] }`), stores it and loads it back
// at every step: LLVM cannot keep it in a register, as the other accesses of
// the array in the loop (B[k][j], x[j]) might be the same element for all
// it knows. Each step then waits for the store's value to come back through
// memory before its arithmetic. When every other access of the array in the
// loop is proven to touch another element, the element lives in a register
// across the loop:
//
//   for k in [i + 1, M) {                   if (M - (i + 1) > 0) {
//     B[i][j] = B[i][j] + A[k][i] * B[k][j]   register f32 B.element
//   }                                         B.element = B[i][j]
//                                             for k in [i + 1, M) {
//                                               B.element = B.element + A[k][i] * B[k][j]
//                                             }
//                                             B[i][j] = B.element
//                                           }
//
// Proven apart (provenApart, AccessAnalysis.h): in some dimension the
// difference of the indices stays at least 1 or at most -1 over the ranges
// of the loop and the loops inside it (k in [i + 1, M) against i; j in
// [0, i) against i; i0 + 1 against i0). Every element of the loop proven
// so gets a register, under one guard (jam_serial_chains leaves loops that
// update several). The loop runs its iterations in their order and the
// elements take the same values: the results are the same bit for bit. The
// guard keeps a loop of no iteration from touching the elements.
// trmm ran several times faster (docs/benchmarks.md, CPU history).
//
// Declined (a remark): another access of the array in the loop not proven
// apart from the element. Not done under --bounds-check (the element's
// first access would move before the loop's other failures), nor where the
// loop holds a barrier, a launch or an update other threads may make (a
// combine, a scan, a reduction into the array).
#include "passes/Passes.h"

#include "ir/IRVisitor.h"
#include "passes/analysis/BoundsProof.h"
#include "passes/lowering/ElementsInRegisters.h"

#include <map>

namespace loopc::passes {

using namespace loopc::ir;
using ir::Expr; // not the AST's
using ir::Stmt;

namespace {

class Promoter : public LetTrackingMutator {
public:
  Promoter(const ReorderableAccesses &reorderable, const RemarkReporter &remarks)
      : reorderable_(reorderable), remarks_(remarks) {}

protected:
  Stmt visitFor(const For &node, const Stmt &self) override {
    bool reorderable = reorderable_.allowed(self);
    Stmt mutated = IRMutator::visitFor(node, self); // inner loops first
    const For &loop = *mutated->as<For>();
    if (loop.forKind != ForKind::Serial || !reorderable)
      return mutated;
    RegisterElements how{.around = {},
                         .resolve = [&](const Expr &expr) { return resolved(expr); },
                         .stem = "element",
                         .made = &cells_,
                         .remarks = remarks_};
    return keepElementsInRegisters(loop, how).value_or(mutated);
  }

private:
  const ReorderableAccesses &reorderable_;
  RemarkReporter remarks_;
  int cells_ = 0; // registers made so far, for unique names
};

} // namespace

Function promoteInvariantElements(Function function, const RemarkReporter &remarks) {
  ReorderableAccesses reorderable(function);
  function.body = Promoter(reorderable, remarks).mutate(function.body);
  return function;
}

} // namespace loopc::passes
