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

#include <algorithm>
#include <set>

namespace loopc::passes {

using namespace loopc::ir;
using ir::Stmt;

namespace {

// Whether a reduction walks loops a pass made (split_reductions' combine
// of a row's partials): remarks about it say nothing of the program's
// loops.
bool walksPassMadeLoops(const Reduce &reduce) {
  return std::ranges::any_of(reduce.loops, [](const Reduce::Loop &loop) {
    return isPassMadeName(loop.var) || std::ranges::any_of(freeVars(loop.extent), isPassMadeName);
  });
}

class SiblingFuser : public ReductionPlacement {
public:
  SiblingFuser(PipelineTarget target, int multiprocessors, const RemarkReporter &remarks)
      : lowering_("fused.", target == PipelineTarget::Gpu, multiprocessors), remarks_(remarks) {}

protected:
  Stmt visitBlock(const Block &node, const Stmt &self) override {
    // A reduction that joins none is said so once, about the first before it.
    std::set<const Reduce *> refused;
    for (size_t p = 0; p < node.stmts.size(); ++p) {
      std::vector<SiblingRefusal> refusals;
      std::optional<SiblingGroup> group =
          gatherSiblings(node.stmts, p, remarks_.enabled() ? &refusals : nullptr);
      for (const SiblingRefusal &refusal : refusals) {
        const Reduce &first = *node.stmts[p]->as<Reduce>();
        if (walksPassMadeLoops(first) || walksPassMadeLoops(*refusal.candidate) ||
            !refused.insert(refusal.candidate).second)
          continue;
        remarks_.declined(refusal.candidate->source, "not fused with the redomap at line " +
                                                         std::to_string(first.source.begin.line) +
                                                         ": " + refusal.why);
      }
      if (group) {
        report(*group);
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
    }
    return IRMutator::visitBlock(node, self);
  }

private:
  // At the group's first member: the others, and how the group runs; at
  // a member that does not commute in a tree, the ordered walk.
  void report(const SiblingGroup &group) const {
    const Reduce &first = *group.members.front();
    // Copies of the first (unroll_around_reductions') share its place.
    int64_t copies = 0;
    std::vector<std::string> lines;
    for (size_t i = 1; i < group.members.size(); ++i) {
      const SourceRange &source = group.members[i]->source;
      if (source.begin == first.source.begin)
        ++copies;
      else
        lines.push_back(std::to_string(source.begin.line));
    }
    std::string others;
    for (size_t i = 0; i < lines.size(); ++i)
      others += (i == 0 ? "" : i + 1 == lines.size() ? " and " : ", ") + lines[i];
    std::string with;
    if (!lines.empty())
      with = std::string(lines.size() == 1 ? "the redomap at line " : "the redomaps at lines ") +
             others;
    if (copies > 0)
      with += (with.empty() ? "its " : " and its ") + countOf(copies, "unrolled copy");
    remarks_.applied(first.source,
                     "fused with " + with + ": " +
                         (inHostCode() ? "one pair of tree kernels walks their loops once"
                                       : "one loop nest walks their loops once"));
    if (inHostCode())
      for (const Reduce *member : group.members)
        if (!commutes(member->op))
          lowering_.reportOrderedWalk(remarks_, *member);
  }

  ReductionGroupLowering lowering_;
  const RemarkReporter &remarks_;
};

} // namespace

Function fuseSiblingReductions(Function function, PipelineTarget target, int multiprocessors,
                               const RemarkReporter &remarks) {
  function.body = SiblingFuser(target, multiprocessors, remarks).mutate(function.body);
  return function;
}

} // namespace loopc::passes
