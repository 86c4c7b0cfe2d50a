// fuse_sibling_reductions: reductions over the same loops that follow one
// another are lowered as one group (lowering/ReductionGroups.h): the loops
// run once and each point feeds every member, so data they share is read
// once. `sum_and_max` sums and takes the maximum of x in one pass over x (one
// pair of kernels, not two); a row's sum and sum of squares come from one
// walk of the row. Horizontal fusion, after Futhark's.
//
// The later reduction usually sits a few statements further on, inside the
// scopes the lowering opened (`global f32 acc_2` around the rest of the
// block, `let s = acc` after the first reduction), after the store of its
// neutral element. Those statements are read as one chain; the reduction
// moves up to join the group when the statements it passes allow it:
//  - a statement it conflicts with (its accumulator's initial store) moves
//    before the group, if that crosses nothing it conflicts with;
//  - a scope whose name it uses (its accumulator's Allocate) is hoisted
//    around the group, if the scope's own header needs nothing bound or
//    written in between;
//  - it may not read any member's accumulator (that value exists only once
//    the fused loops end), nor a member its accumulator.
// Everything else stays in order after the group. Reductions nested in a
// member's value are left to lower_reductions, as are groups of one.
#include "passes/Passes.h"

#include "passes/lowering/ReductionGroups.h"
#include "passes/lowering/SiblingGroups.h"

namespace loopc::passes {

using namespace loopc::ir;
using ir::Stmt;

namespace {

class SiblingFuser : public ReductionPlacement {
public:
  explicit SiblingFuser(PipelineTarget target)
      : lowering_("fused.", target == PipelineTarget::Gpu) {}

protected:
  Stmt visitBlock(const Block &node, const Stmt &self) override {
    for (size_t p = 0; p < node.stmts.size(); ++p)
      if (std::optional<SiblingGroup> group = gatherSiblings(node.stmts, p)) {
        std::vector<GroupMember> members;
        for (const Reduce *member : group->members)
          members.push_back(
              renamedLoops({member, member->valueSetup, member->value}, *group->members.front()));
        Stmt lowered = inHostCode() ? lowering_.tree(members) : lowering_.serial(members);
        std::vector<Stmt> stmts(node.stmts.begin(), node.stmts.begin() + p);
        stmts.push_back(group->assemble(lowered, [](const Stmt &stmt) { return stmt; }));
        // The rest may hold further groups.
        return mutate(makeBlock(stmts));
      }
    return IRMutator::visitBlock(node, self);
  }

private:
  ReductionGroupLowering lowering_;
};

} // namespace

Function fuseSiblingReductions(Function function, PipelineTarget target) {
  function.body = SiblingFuser(target).mutate(function.body);
  return function;
}

} // namespace loopc::passes
