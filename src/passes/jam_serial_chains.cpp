// jam_serial_chains (CPU): a serial loop whose every iteration runs a chain
// of dependent steps, as a triangular solve does,
//
//   for i in [0, N) {
//     x[i] = b[i]
//     for j in [0, i) { x[i] = x[i] - L[i][j] * x[j] }
//     x[i] = x[i] / L[i][i]
//   }
//
// (Cholesky's and LU's row updates are the same shape), waits at each step
// of the chain for the step before: a fused multiply-add every 4 cycles or
// so, where a core can start two each cycle. Yet the iterations are
// independent over most of their chains: row i + 1 reads x[i] only at its
// last step. So a few consecutive iterations run together (unroll and
// jam): first each copy's statements before its chain, then the steps the
// copies share in one loop, each copy's step in turn, then each copy's own
// last steps and the statements after its chain, copy by copy:
//
//   for i.group in [0, max(N, 0) / 4) {
//     let i.first = i.group * 4
//     x[i.first] = b[i.first]; ...; x[i.first + 3] = b[i.first + 3]
//     for j in [0, i.first) {
//       x[i.first] = x[i.first] - L[i.first][j] * x[j]
//       ... (copies 1 to 3)
//     }
//     for j in [i.first, i.first) { copy 0 }; x[i.first] = x[i.first] / L[i.first][i.first]
//     for j in [i.first, i.first + 1) { copy 1 }; x[i.first + 1] = ...
//     ...
//   }
//   for i in [max(N, 0) / 4 * 4, N) { the original body }
//
// The elements the shared loop updates are kept in registers across it
// (as promote_invariant_elements does, with the range of i.first to prove
// them apart): 4 independent chains. Every element's steps still run in their
// order, so the results are the same bit for bit. Where the chain's loop
// starts later in later iterations and ends at the same place (a backward
// substitution's `for j in [i + 1, N)`), each copy's own first steps run
// before the shared ones instead.
//
// Legal when no statement of a copy moved before a statement of an earlier
// copy touches an element that statement writes, or writes one it touches:
// each pair is proven apart (provenApart, AccessAnalysis.h) over the ranges
// of the steps involved (j in [0, i.first) against i.first + 3; rows i.first
// + r below the enclosing loop's i). Cholesky and PolyBench's ludcmp ran
// several times faster (docs/benchmarks.md, CPU history).
//
// The same for the innermost parallel loop of a nest whose points each run
// a chain along their own row (a matrix-vector product written as a loop:
// gemver's `w[i] += alpha * A[i][j] * x[j]` along j): its points are
// independent, so no proof is needed, and 4 run together in a thread where
// the CPU's vector lanes, one point each, would gather rows apart. Points
// whose loads lie side by side are left to the lanes. (gemver, atax and
// bicg ran two to three times faster: docs/benchmarks.md, CPU history.)
//
// Loops of the host code (outside parallel loops) and innermost parallel
// loops, whose body is one serial loop of straight-line steps that read the
// element they write, and around it statements that may hold loops but bind
// nothing. Declined with a remark when a pair is not proven apart. Not done
// under --bounds-check (a failure could be reported for a later iteration
// first).
#include "passes/Passes.h"

#include "ir/IRVisitor.h"
#include "passes/analysis/AccessAnalysis.h"
#include "passes/analysis/BoundsProof.h"
#include "passes/lowering/ElementsInRegisters.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <ranges>

namespace loopc::passes {

using namespace loopc::ir;
using ir::Expr; // not the AST's
using ir::Stmt;

namespace {

// Iterations run together. Where the copies' loads of a step lie side by
// side (LU's A[k][j] for j, j + 1, ...), LLVM's SLP vectorizer makes each
// step one vector multiply-add of the copies over vector loads: 16 copies,
// two 512-bit vectors, ran fastest (ludcmp took about half as long again
// with 8). Rows apart (a triangular solve's L[i][j] for i, i + 1, ...), it
// makes the same of gathers, slower than scalar chains: 4 copies kept
// scalar ran fastest (Cholesky took about half as long again with 8).
const int64_t kSideBySideCopies = 16;
const int64_t kRowsApartCopies = 4;
// The largest body copied kSideBySideCopies times (codeSize), so the jammed loop
// stays a loop a core's decoders and caches hold.
const size_t kMaxBodySize = 64;

bool containsParallelLoop(const Stmt &stmt) { return containsLoopOf(stmt, ForKind::Parallel); }

// What a statement of a jammed body holds that matters: loops, bindings
// (lets and arrays of its own), or anything that synchronizes or launches.
struct Contents {
  bool loops = false, bindings = false, synchronization = false;
};

Contents contentsOf(const Stmt &stmt) {
  class Finder : public IRVisitor {
  public:
    Contents found;

  protected:
    void visitFor(const For &node) override {
      found.loops = true;
      IRVisitor::visitFor(node);
    }
    void visitLetStmt(const LetStmt &node) override {
      found.bindings = true;
      IRVisitor::visitLetStmt(node);
    }
    void visitAllocate(const ir::Allocate &node) override {
      found.bindings = true;
      IRVisitor::visitAllocate(node);
    }
  } finder;
  finder.visit(stmt);
  finder.found.synchronization = synchronizes(stmt);
  return finder.found;
}

// One load or store of an array element.
struct Access {
  const BufferInfo *buffer = nullptr;
  std::vector<Expr> indices;
  bool isStore = false;
  SourceRange source;
};

class Accesses : public IRVisitor {
public:
  std::vector<Access> found;

protected:
  void visitLoad(const Load &node) override {
    found.push_back({node.buffer.get(), node.indices, false, node.source});
    IRVisitor::visitLoad(node);
  }
  void visitStore(const Store &node) override {
    found.push_back({node.buffer.get(), node.indices, true, node.source});
    IRVisitor::visitStore(node);
  }
};

std::vector<Access> accessesOf(const Stmt &stmt) {
  Accesses accesses;
  accesses.visit(stmt);
  return accesses.found;
}

// Whether some store of `body` reads the floating-point element it writes,
// the same element at every iteration of the loop over `stepVar`: a step of
// a chain. (LLVM vectorizes an integer one along the loop, reassociated.)
bool continuesAChain(const Stmt &body, const std::string &stepVar) {
  std::vector<Access> accesses = accessesOf(body);
  for (const Access &store : accesses) {
    bool invariant = std::ranges::none_of(
        store.indices, [&](const Expr &index) { return freeVars(index).contains(stepVar); });
    if (!store.isStore || !invariant || !isFloat(store.buffer->element))
      continue;
    for (const Access &load : accesses)
      if (!load.isStore && load.buffer == store.buffer &&
          std::ranges::equal(load.indices, store.indices, sameExpr))
        return true;
  }
  return false;
}

// A loop body as one list of statements: lets of index arithmetic
// substituted where they are read, the scalar registers it declares
// (`var w` of the program) collected. False when a let reads memory (moved
// to its readers, it could read another value).
struct FlatBody {
  std::vector<Stmt> stmts;
  std::vector<Buffer> registers;
};

// `stmt` inside the declarations of every copy's registers.
Stmt withRegisters(Stmt stmt, const std::vector<std::vector<Buffer>> &cells) {
  for (const std::vector<Buffer> &copy : std::views::reverse(cells))
    for (const Buffer &cell : std::views::reverse(copy))
      stmt = std::make_shared<ir::Allocate>(cell, std::move(stmt));
  return stmt;
}

bool flatten(const Stmt &stmt, FlatBody &flat) {
  if (const auto *block = stmt->as<ir::Block>())
    return std::ranges::all_of(block->stmts, [&](const Stmt &s) { return flatten(s, flat); });
  if (const auto *let = stmt->as<LetStmt>())
    return buffersRead(let->value).empty() &&
           flatten(substitute(let->body, {{let->var, let->value}}), flat);
  if (const auto *allocate = stmt->as<ir::Allocate>();
      allocate && allocate->buffer->memory == MemorySpace::Register &&
      allocate->buffer->shape.empty()) {
    flat.registers.push_back(allocate->buffer);
    return flatten(allocate->body, flat);
  }
  flat.stmts.push_back(stmt);
  return true;
}

// `max(a, b)` and `min(a, b)` replaced by the operand the ranges prove
// they are (the lowered `for j in i + 1..N` ends at `max(N, i + 1)`), so
// the chain's bounds stay affine.
class ResolveMinMax : public IRMutator {
public:
  ResolveMinMax(const std::vector<LoopRange> &ranges, std::function<Expr(const Expr &)> resolve)
      : ranges_(ranges), resolve_(std::move(resolve)) {}

protected:
  Expr visitBinary(const Binary &node, const Expr &self) override {
    Expr mutated = IRMutator::visitBinary(node, self);
    const auto &binary = *mutated->as<Binary>();
    if (binary.op != BinaryOpKind::Max && binary.op != BinaryOpKind::Min)
      return mutated;
    Expr lhs = resolve_(binary.lhs), rhs = resolve_(binary.rhs);
    bool lhsLarger = provenAtLeast(sub(lhs, rhs), 0, ranges_);
    bool rhsLarger = provenAtLeast(sub(rhs, lhs), 0, ranges_);
    if (lhsLarger || rhsLarger)
      return (lhsLarger == (binary.op == BinaryOpKind::Max)) ? binary.lhs : binary.rhs;
    return mutated;
  }

private:
  const std::vector<LoopRange> &ranges_;
  std::function<Expr(const Expr &)> resolve_;
};

// The statements of one copy of the body that run together, with the
// range of the chain's loop variable where they are its steps.
struct Section {
  std::vector<Access> accesses;
  std::optional<LoopRange> steps; // none outside the chain's loop
};

class Jammer : public LetTrackingMutator {
public:
  Jammer(const ReorderableAccesses &reorderable, const RemarkReporter &remarks)
      : reorderable_(reorderable), remarks_(remarks) {}

protected:
  Stmt visitFor(const For &node, const Stmt &self) override {
    bool reorderable = reorderable_.allowed(self);
    bool parallel = node.forKind != ForKind::Serial;
    parallelDepth_ += parallel;
    enclosing_.push_back({node.var, resolved(node.min), resolved(node.extent)});
    Stmt mutated = IRMutator::visitFor(node, self);
    enclosing_.pop_back();
    parallelDepth_ -= parallel;
    const For &loop = *mutated->as<For>();
    bool hostLoop = !parallel && parallelDepth_ == 0;
    bool innermostParallel = loop.forKind == ForKind::Parallel && !containsParallelLoop(loop.body);
    if (!reorderable || !(hostLoop || innermostParallel))
      return mutated;
    return jam(loop).value_or(mutated);
  }

private:
  std::optional<Stmt> jam(const For &loop) {
    // The body: statements without loops around one serial loop.
    FlatBody flat;
    if (!flatten(loop.body, flat))
      return std::nullopt;
    // One of them the chain: a serial loop of straight-line steps, one of
    // which updates an element from its last value. The others may hold
    // loops (each copy runs them in turn), not bindings or synchronization.
    const std::vector<Stmt> &stmts = flat.stmts;
    auto isChain = [](const Stmt &stmt) {
      const For *loop = stmt->as<For>();
      if (!loop || loop->forKind != ForKind::Serial)
        return false;
      Contents contents = contentsOf(loop->body);
      return !contents.loops && !contents.bindings && !contents.synchronization &&
             continuesAChain(loop->body, loop->var);
    };
    if (std::ranges::count_if(stmts, isChain) != 1 || codeSize(loop.body) > kMaxBodySize)
      return std::nullopt;
    size_t at = std::ranges::find_if(stmts, isChain) - stmts.begin();
    const For &chain = *stmts[at]->as<For>();
    std::vector<Stmt> before(stmts.begin(), stmts.begin() + at);
    std::vector<Stmt> after(stmts.begin() + at + 1, stmts.end());
    auto staysOut = [](const Stmt &stmt) {
      Contents contents = contentsOf(stmt);
      return contents.bindings || contents.synchronization;
    };
    if (std::ranges::any_of(before, staysOut) || std::ranges::any_of(after, staysOut))
      return std::nullopt;

    // The chain's range in iteration `v`: [start(v), end(v)), one end of it
    // the same in every iteration.
    std::vector<LoopRange> withLoop{{loop.var, resolved(loop.min), resolved(loop.extent)}};
    withLoop.insert(withLoop.end(), enclosing_.rbegin(), enclosing_.rend());
    ResolveMinMax resolveMinMax(withLoop, [&](const Expr &expr) { return resolved(expr); });
    Expr chainStart = resolveMinMax.mutate(chain.min);
    Expr chainEnd = resolveMinMax.mutate(add(chain.min, chain.extent));
    AffineScope scope;
    scope.bindLoop(loop.var);
    AffineIndex startForm = scope.analyze(resolved(chainStart));
    AffineIndex endForm = scope.analyze(resolved(chainEnd));
    if (!startForm.isAffine() || !endForm.isAffine())
      return std::nullopt;
    int64_t startSlope = startForm.coefficient(loop.var);
    int64_t endSlope = endForm.coefficient(loop.var);
    std::string over = remarks_.programName(loop.var);
    if (startSlope != 0 && endSlope != 0) {
      remarks_.declined(loop.source, "the iterations of the loop over " + over +
                                         " not run together: both ends of the loop over " +
                                         remarks_.programName(chain.var) + " move with " + over);
      return std::nullopt;
    }

    // A parallel loop's iterations are independent, so its copies need no
    // proof; but where their loads lie side by side, the CPU's threads run
    // them as vector lanes already.
    bool parallel = loop.forKind == ForKind::Parallel;
    bool sideBySide = loadsSideBySide(chain.body, loop.var);
    if (parallel && sideBySide)
      return std::nullopt;
    int64_t copies = sideBySide ? kSideBySideCopies : kRowsApartCopies;
    ScalarType type = loop.min->type;
    std::string firstName = loop.var + ".first";
    Expr first = makeVar(type, firstName);
    auto iteration = [&](int64_t r) { return r == 0 ? first : add(first, makeInt(type, r)); };
    // Each copy's own registers.
    std::vector<std::vector<Buffer>> cells(copies);
    for (int64_t r = 0; r < copies; ++r)
      for (const Buffer &cell : flat.registers) {
        auto copied = std::make_shared<BufferInfo>(*cell);
        copied->name = cell->name + ".copy" + std::to_string(r);
        cells[r].push_back(copied);
      }
    auto copy = [&](const Stmt &stmt, int64_t r) {
      Stmt copied = substitute(stmt, {{loop.var, iteration(r)}});
      for (size_t c = 0; c < flat.registers.size(); ++c)
        copied = retargetAccesses(copied, flat.registers[c], cells[r][c]);
      return copied;
    };
    auto copyOf = [&](const Expr &expr, int64_t r) {
      return substitute(expr, {{loop.var, iteration(r)}});
    };
    auto at_ = [&](const Expr &expr, int64_t r) { return copyOf(resolved(expr), r); };
    // The steps all copies share, [sharedStart, sharedEnd); each copy's own
    // before them (a start that moves) or after them (an end that moves).
    Expr sharedStart = copyOf(chainStart, startSlope >= 0 ? copies - 1 : 0);
    Expr sharedEnd = copyOf(chainEnd, endSlope >= 0 ? 0 : copies - 1);

    // The ranges the proofs run over: the first iteration of a group lies
    // in [min, min + extent - (copies - 1)), then the loops around.
    std::vector<LoopRange> around;
    around.push_back(
        {firstName, resolved(loop.min), sub(toI64(resolved(loop.extent)), makeI64(copies - 1))});
    around.insert(around.end(), enclosing_.rbegin(), enclosing_.rend());

    // Each copy's sections in the order of the original: before, own
    // first steps, shared steps, own last steps, after.
    std::string otherVar = chain.var + ".other";
    auto steps = [&](Expr start, Expr end) {
      return LoopRange{chain.var, start, sub(toI64(end), toI64(start))};
    };
    auto sectionsOf = [&](int64_t r) {
      std::vector<Section> sections(5);
      for (const Stmt &stmt : before)
        std::ranges::move(accessesOf(copy(stmt, r)), std::back_inserter(sections[0].accesses));
      std::vector<Access> chainAccesses = accessesOf(copy(chain.body, r));
      if (startSlope != 0)
        sections[1] = {chainAccesses, steps(at_(chainStart, r), resolved(sharedStart))};
      sections[2] = {chainAccesses, steps(resolved(sharedStart), resolved(sharedEnd))};
      if (endSlope != 0)
        sections[3] = {chainAccesses, steps(resolved(sharedEnd), at_(chainEnd, r))};
      for (const Stmt &stmt : after)
        std::ranges::move(accessesOf(copy(stmt, r)), std::back_inserter(sections[4].accesses));
      return sections;
    };
    // Sections of a later copy that now run before sections of an earlier
    // one: before and own first steps before everything from the first
    // steps on, shared steps interleaved with shared steps and before what
    // follows.
    const std::vector<std::pair<int, int>> reordered = {{0, 1}, {0, 2}, {0, 3}, {0, 4}, {1, 2},
                                                        {1, 3}, {1, 4}, {2, 2}, {2, 3}, {2, 4}};
    for (int64_t later = parallel ? copies : 1; later < copies; ++later) {
      std::vector<Section> moved = sectionsOf(later);
      for (int64_t earlier = 0; earlier < later; ++earlier) {
        std::vector<Section> kept = sectionsOf(earlier);
        for (auto [m, k] : reordered)
          if (auto clash = firstClash(moved[m], kept[k], chain.var, otherVar, around)) {
            remarks_.declined(loop.source, "the iterations of the loop over " + over +
                                               " not run together: the access at line " +
                                               std::to_string(clash->begin.line) +
                                               " would run before an access of an earlier "
                                               "iteration, one of them a write, not proven to "
                                               "touch another element");
            return std::nullopt;
          }
      }
    }

    // The group's code. A copy's own steps stop at its range's other end
    // where the shared steps might lie beyond it (a range empty in some
    // copies).
    auto chainLoop = [&](Expr start, Expr end, Stmt body) {
      return std::make_shared<For>(chain.var, start, sub(end, start), ForKind::Serial, 0,
                                   std::move(body), chain.source);
    };
    std::vector<Stmt> group;
    for (const Stmt &stmt : before)
      for (int64_t r = 0; r < copies; ++r)
        group.push_back(copy(stmt, r));
    if (startSlope != 0) {
      Expr end = provenAtMost(resolved(sub(sharedStart, chainEnd)), 0, around)
                     ? sharedStart
                     : minOf(sharedStart, chainEnd);
      for (int64_t r = 0; r < copies; ++r)
        group.push_back(chainLoop(copyOf(chainStart, r), copyOf(end, r), copy(chain.body, r)));
    }
    std::vector<Stmt> shared;
    for (int64_t r = 0; r < copies; ++r)
      shared.push_back(copy(chain.body, r));
    // The elements the shared steps update in memory kept in registers
    // across them: proven apart here, with the range of the group's first
    // iteration, which promote_invariant_elements would not know.
    Stmt sharedLoop = chainLoop(sharedStart, sharedEnd, makeBlock(std::move(shared)));
    RegisterElements how{.around = around,
                         .resolve = [&](const Expr &expr) { return resolved(expr); },
                         .stem = "chain",
                         .made = &registersMade_,
                         .remarks = {}};
    group.push_back(keepElementsInRegisters(*sharedLoop->as<For>(), how).value_or(sharedLoop));
    Expr ownLastStart = provenAtLeast(resolved(sub(sharedEnd, chainStart)), 0, around)
                            ? sharedEnd
                            : maxOf(sharedEnd, chainStart);
    for (int64_t r = 0; r < copies; ++r) {
      if (endSlope != 0)
        group.push_back(
            chainLoop(copyOf(ownLastStart, r), copyOf(chainEnd, r), copy(chain.body, r)));
      for (const Stmt &stmt : after)
        group.push_back(copy(stmt, r));
    }

    // The groups, then the iterations left over in the original loop.
    Expr extent = maxOf(loop.extent, makeInt(type, 0));
    Expr groups = div(extent, makeInt(type, copies));
    Expr done = mul(groups, makeInt(type, copies));
    std::string groupVar = loop.var + ".group";
    Stmt groupLoop = std::make_shared<For>(
        groupVar, makeInt(type, 0), groups, loop.forKind, 0,
        std::make_shared<LetStmt>(
            firstName, add(loop.min, mul(makeVar(type, groupVar), makeInt(type, copies))),
            withRegisters(makeBlock(std::move(group)), cells)),
        loop.source);
    Stmt rest = std::make_shared<For>(loop.var, add(loop.min, done), sub(loop.extent, done),
                                      loop.forKind, 0, loop.body, loop.source);
    remarks_.applied(loop.source, "the loop over " + over + " runs " + std::to_string(copies) +
                                      " iterations together: their chains over " +
                                      remarks_.programName(chain.var) +
                                      " interleaved, each element's steps in their order");
    return makeBlock({groupLoop, rest});
  }

  // Whether every load of `body` that differs from one iteration of the
  // loop over `var` to the next reads the element beside the last one's:
  // `var` in its last index only, with coefficient 1.
  bool loadsSideBySide(const Stmt &body, const std::string &var) const {
    AffineScope scope;
    scope.bindLoop(var);
    for (const Access &load : accessesOf(body)) {
      if (load.isStore || load.indices.empty())
        continue;
      for (size_t d = 0; d < load.indices.size(); ++d) {
        AffineIndex form = scope.analyze(resolved(load.indices[d]));
        int64_t wanted = d + 1 == load.indices.size() ? form.coefficient(var) : 0;
        if (!form.isAffine() || form.coefficient(var) != wanted)
          return false;
        if (d + 1 == load.indices.size() && wanted != 0 && wanted != 1)
          return false;
      }
    }
    return true;
  }

  // The source of an access of `moved` that may touch an element an access
  // of `kept` writes, or write one it touches; none when every such pair is
  // proven apart. The chain's variable is renamed in `kept`'s accesses, as
  // it takes other values there.
  std::optional<SourceRange> firstClash(const Section &moved, const Section &kept,
                                        const std::string &stepVar, const std::string &otherVar,
                                        const std::vector<LoopRange> &around) const {
    std::vector<LoopRange> ranges;
    if (moved.steps)
      ranges.push_back(*moved.steps);
    if (kept.steps)
      ranges.push_back({otherVar, kept.steps->min, kept.steps->extent});
    ranges.insert(ranges.end(), around.begin(), around.end());
    for (const Access &m : moved.accesses)
      for (const Access &k : kept.accesses) {
        if (m.buffer != k.buffer || (!m.isStore && !k.isStore))
          continue;
        std::vector<Expr> mine, theirs;
        for (const Expr &index : m.indices)
          mine.push_back(resolved(index));
        for (const Expr &index : k.indices)
          theirs.push_back(
              substitute(resolved(index), {{stepVar, makeVar(index->type, otherVar)}}));
        if (m.indices.empty() || !provenApart(mine, theirs, ranges))
          return m.source;
      }
    return std::nullopt;
  }

  const ReorderableAccesses &reorderable_;
  const RemarkReporter &remarks_;
  std::vector<LoopRange> enclosing_; // the loops around, outermost first
  int parallelDepth_ = 0;
  int registersMade_ = 0; // for unique names
};

} // namespace

Function jamSerialChains(Function function, const RemarkReporter &remarks) {
  ReorderableAccesses reorderable(function);
  function.body = Jammer(reorderable, remarks).mutate(function.body);
  return function;
}

} // namespace loopc::passes
