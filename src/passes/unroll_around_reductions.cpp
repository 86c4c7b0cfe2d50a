// unroll_around_reductions: a short constant loop around reductions in a
// thread's body is unrolled, so that fuse_sibling_reductions jams its
// copies' reductions into one walk (unroll-and-jam). nbody's
// `parfor i in 0..N, c in 0..3` reduces over every body j once per
// component c: map_to_gpu keeps the short c loop serial in each thread, so
// each thread walks all N bodies three times, computing the distance between
// i and j each time. Unrolled, the three reductions over j are siblings:
// fused, one walk feeds three accumulators, and the copies' common
// subexpressions (the distance, its square root) sit in one loop body,
// where LLVM computes them once.
//
// Unrolled only where the walks can fuse: the loop runs 2 to 4 times (a
// fused group holds at most 4 members), its body reaches a reduction through
// blocks, lets and scopes only (not under an if or another loop), and that
// reduction's range depends neither on the loop's variable nor on a name the
// body binds (the copies' ranges must be the same expressions); the copies
// stay within a code-size budget. Each copy's names get the loop variable
// and the copy's number as a suffix (`acc.c1`), and each copy runs inside
// the scopes the one before it opens, as the lowering leaves consecutive
// statements, so the sibling search walks from one copy into the next.
#include "passes/Passes.h"

#include "ir/IRVisitor.h"

#include <algorithm>
#include <set>

namespace loopc::passes {

using namespace loopc::ir;
using ir::Expr; // not the AST's
using ir::Stmt;

namespace {

constexpr int64_t kMaxCopies = 4;         // fuse_sibling_reductions' largest group
constexpr size_t kMaxUnrolledSize = 4000; // codeSize of all the copies

// The reductions `stmt` reaches through blocks, lets and scopes alone.
void reductionsAtTop(const Stmt &stmt, std::vector<const Reduce *> &reductions) {
  if (auto *block = stmt->as<Block>())
    for (const Stmt &inner : block->stmts)
      reductionsAtTop(inner, reductions);
  else if (auto *let = stmt->as<LetStmt>())
    reductionsAtTop(let->body, reductions);
  else if (auto *allocate = stmt->as<Allocate>())
    reductionsAtTop(allocate->body, reductions);
  else if (auto *reduce = stmt->as<Reduce>())
    reductions.push_back(reduce);
}

// Whether unrolling `loop` lets its copies' reductions fuse (file comment).
bool unrollingFuses(const For &loop) {
  const auto *trips = loop.extent->as<IntImm>();
  if (loop.forKind != ForKind::Serial || !trips || trips->value < 2 || trips->value > kMaxCopies ||
      codeSize(loop.body) * static_cast<size_t>(trips->value) > kMaxUnrolledSize)
    return false;
  std::vector<const Reduce *> reductions;
  reductionsAtTop(loop.body, reductions);
  std::set<std::string> varying = boundNames(loop.body);
  varying.insert(loop.var);
  return !reductions.empty() && std::ranges::all_of(reductions, [&](const Reduce *reduce) {
    return std::ranges::none_of(reduce->loops, [&](const Reduce::Loop &range) {
      return usesAnyVar(range.min, varying) || usesAnyVar(range.extent, varying);
    });
  });
}

class Unroller : public IRMutator {
protected:
  Stmt visitFor(const For &node, const Stmt &self) override {
    bool thread = node.forKind == ForKind::GpuThread;
    threadDepth_ += thread;
    Stmt mutated = IRMutator::visitFor(node, self); // inner loops first
    threadDepth_ -= thread;
    const auto &loop = *mutated->as<For>();
    if (threadDepth_ == 0 || !unrollingFuses(loop))
      return mutated;
    int64_t trips = loop.extent->as<IntImm>()->value;
    const auto *first = loop.min->as<IntImm>();
    Stmt unrolled;
    for (int64_t k = trips; k-- > 0;) {
      Expr index = first ? makeInt(loop.min->type, first->value + k)
                         : add(loop.min, makeInt(loop.min->type, k));
      Stmt copy = renameBindings(substitute(loop.body, {{loop.var, index}}),
                                 "." + loop.var + std::to_string(k));
      unrolled = unrolled ? appendAtTail(copy, unrolled) : copy;
    }
    return unrolled;
  }

private:
  int threadDepth_ = 0;
};

} // namespace

Function unrollAroundReductions(Function function) {
  function.body = Unroller().mutate(function.body);
  return function;
}

} // namespace loopc::passes
