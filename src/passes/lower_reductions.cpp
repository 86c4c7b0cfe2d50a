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
// The order of combination changes, which the language allows. The lowering
// itself (lowering/ReductionGroups.h) takes groups: here each Reduce is a
// group of one; fuse_sibling_reductions, before this pass, lowers groups of
// reductions over the same loops.
#include "passes/Passes.h"

#include "ir/IRVisitor.h"
#include "passes/lowering/ReductionGroups.h"

namespace loopc::passes {

using namespace loopc::ir;
using ir::Expr; // not the AST's
using ir::Stmt;

namespace {

class ReductionLowerer : public ReductionPlacement {
public:
  ReductionLowerer(PipelineTarget target, int multiprocessors, const RemarkReporter &remarks)
      : lowering_("", target == PipelineTarget::Gpu, multiprocessors), remarks_(remarks) {}

protected:
  Stmt visitReduce(const Reduce &node, const Stmt &) override {
    // Nested reductions first. A tree reduction's value is computed inside
    // its GPU threads, so the reductions nested in it are serial there.
    bool tree = inHostCode();
    parallelDepth_ += tree;
    Stmt valueSetup = mutate(node.valueSetup);
    parallelDepth_ -= tree;
    std::vector<GroupMember> group = {{&node, valueSetup, node.value}};
    if (tree && !commutes(node.op))
      lowering_.reportOrderedWalk(remarks_, node);
    return tree ? lowering_.tree(group) : lowering_.serial(group);
  }

private:
  ReductionGroupLowering lowering_;
  const RemarkReporter &remarks_;
};

} // namespace

Function lowerReductions(Function function, PipelineTarget target, int multiprocessors,
                         const RemarkReporter &remarks) {
  function.body = ReductionLowerer(target, multiprocessors, remarks).mutate(function.body);
  return function;
}

} // namespace loopc::passes
