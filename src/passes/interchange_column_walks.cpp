// interchange_column_walks (CPU): a parfor nest whose innermost parallel loop
// map_to_gpu cannot map (its bounds move with an outer loop of the nest:
// covariance's `parfor i in 0..M, j in i..M`) runs that loop serially in each
// thread, and a serial loop in its body then walks a column of a row-major
// array, each iteration a new cache line:
//
//   parallel for i in [0, M) {              parallel for i in [0, M) {
//     parallel for j in [i, M) {              for j.c0 in [i, M) { cov[i][j.c0] = 0 }
//       cov[i][j] = 0                         for k in [0, N) {
//       for k in [0, N) {                       for j.c1 in [i, M) {
//         cov[i][j] += d[k][i] * d[k][j]          cov[i][j.c1] += d[k][i] * d[k][j.c1]
//       }                                     }}
//       cov[i][j] /= n                        for j.c2 in [i, M) { cov[i][j.c2] /= n }
//   }}                                      }
//
// The pass distributes the inner parallel loop over the statements of its
// body and moves it inside each serial loop whose accesses walk columns
// along it (more of them strided along that loop and contiguous along the
// parallel one than the other way round), so the innermost loop streams
// along rows and vectorizes; the outer loops of the nest stay parallel.
// PolyBench's covariance and correlation ran more than ten times faster
// (docs/benchmarks.md, CPU history).
//
// Why it is legal: the iterations of a parfor are independent (the checker
// rejects races), so they may run in any order, statement by statement
// (fission) and iteration by iteration of the serial loop (interchange). Each
// j still runs its own statements in their order, and its serial loop's
// iterations in increasing order, only interleaved with other j's: every
// float sum adds the same terms in the same order, so the result is the same
// bit for bit, not reassociated.
//
// A serial loop of the host code is treated so too when its iterations are
// proven independent: each writes only its own slice of every array it
// writes (one dimension indexed by exactly its variable) and reads nothing
// another iteration writes (its own slice, or elements whose index in that
// dimension is a loop variable whose range ends before the loop's first
// iteration or starts after its last). lu's
// `for j in [i, N) { for k in [0, i) { A[i][j] -= A[i][k] * A[k][j] } }`
// writes column j and reads columns j and k < i: k goes outside, and each
// row of A[k] streams (lu ran faster: docs/benchmarks.md, CPU history). Its
// order of failures is the program's, so not under --bounds-check nor with a
// Check or an integer division in the loop.
//
// A serial loop of the host code over j whose body is a loop over k in
// [start, j), the triangle below j, then statements of j's own (lu's
// `for j in [0, i) { for k in [0, j) { A[i][j] -= A[i][k] * A[k][j] }
// A[i][j] /= A[j][j] }`), reads A[k][j] down a column: each j pulls the
// updates of every earlier k. It becomes the loop over k outside, which
// first finishes element k (the statements after the inner loop, as j = k)
// and then pushes its update to every later j, along row k:
//
//   for j in [s, e) {                        for k in [s, e) {
//     for k in [s, j) {                        X[k] = g(X[k], k)
//       X[j] = f(X[j], X[k], A[k][j])           for j in [k + 1, e) {
//     }                                           X[j] = f(X[j], X[k], A[k][j])
//     X[j] = g(X[j], j)                         }
//   }                                         }
//
// Legal when every store writes one element X[j] (one dimension indexed by
// exactly j, the others invariant), and X is read only there, at X[k] in
// the inner loop (element k, finished before the first push reads it, in
// both orders), or at elements of another slice (in a dimension other than
// j's, an index proven apart from the written one while j and k stay in the
// loop's range: `T[i + 1][k]` against `T[i][j]`, an index j or k against a
// written index at or past the loop's end). Each X[j] still receives its updates
// in increasing k and then its own statements: the same result bit for bit.
// lu ran more than twice as fast (the left-looking half of each row was
// most of its time; docs/benchmarks.md, CPU history).
//
// A reduction over that triangle pushes too (Nussinov's `best = max(best,
// redomap(max, 0, k in i + 1..j) T[i][k] + T[k + 1][j])` per cell): each j
// keeps its fold in an array of partial results, started as the
// accumulator's initial value, which each k, once X[k] is stored, combines
// its terms into for every later j, along the rows of T; j's reduction reads
// its partial result. The terms must read X only at element k (or another
// slice), nothing else the loop writes and no value bound inside it; each
// partial result combines its terms in increasing k, as the fold did.
//
// Not done: a nest whose inner parallel loop map_to_gpu maps (the CPU's
// thread loops already run inside the serial loops of a thread,
// codegen/CpuThreadNest.h); a body binding lets or arrays its statements
// share (the pieces would each need them). Nor is the interchanged nest
// tiled: a block of rows, each row's outputs a stretch of one row, stays in
// L2 on its own, and tiles of the row along j measured slower (each tile
// walks the serial loop again).
#include "passes/Passes.h"

#include "ir/IRVisitor.h"
#include "passes/analysis/AccessAnalysis.h"
#include "passes/analysis/BoundsProof.h"

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>

namespace loopc::passes {

using namespace loopc::ir;
using ir::Expr; // not the AST's
using ir::Stmt;

namespace {

// How the accesses of a serial loop's body walk memory, counted per global
// access: along `serial` with a stride other than 0 or 1 while contiguous
// along `parallel` (a column walk the interchange turns into a row walk),
// and the other way round (a row walk it would turn into a column walk).
struct Walks {
  int64_t columns = 0, rows = 0;
  std::string firstColumnArray;
};

bool strided(const Stride &stride) {
  return stride.kind != Stride::Kind::Zero && stride.kind != Stride::Kind::Contiguous;
}

Walks countWalks(const std::vector<BufferAccess> &accesses, const std::string &serial,
                 const std::string &parallel) {
  Walks walks;
  for (const BufferAccess &access : accesses) {
    if (access.buffer->memory != MemorySpace::Global ||
        std::ranges::find(access.enclosingLoops, serial) == access.enclosingLoops.end())
      continue;
    Stride alongSerial = strideAlong(access, serial);
    Stride alongParallel = strideAlong(access, parallel);
    if (strided(alongSerial) && alongParallel.kind == Stride::Kind::Contiguous) {
      if (walks.columns++ == 0)
        walks.firstColumnArray = access.buffer->name;
    } else if (alongSerial.kind == Stride::Kind::Contiguous && strided(alongParallel)) {
      ++walks.rows;
    }
  }
  return walks;
}

// The statements of `body` in order, looking into the Blocks, lets and
// arrays that enclose the rest of it (the lowering's `var t` around the
// statements after it); `bindsNames` is set when there were such scopes.
void flattenScopes(const Stmt &body, std::vector<Stmt> &stmts, bool &bindsNames) {
  if (const auto *block = body->as<Block>()) {
    for (const Stmt &stmt : block->stmts)
      flattenScopes(stmt, stmts, bindsNames);
  } else if (const auto *let = body->as<LetStmt>()) {
    bindsNames = true;
    flattenScopes(let->body, stmts, bindsNames);
  } else if (const auto *allocate = body->as<Allocate>()) {
    bindsNames = true;
    flattenScopes(allocate->body, stmts, bindsNames);
  } else {
    stmts.push_back(body);
  }
}

// Whether a statement may fail at run time (a Check, an integer division
// or remainder): reordered, a later iteration's failure could be reported
// before an earlier one's.
class MayFail : public IRVisitor {
public:
  bool found = false;

protected:
  bool finished() const override { return found; }
  void visitCheck(const Check &) override { found = true; }
  void visitBinary(const Binary &node) override {
    if ((node.op == BinaryOpKind::Div || node.op == BinaryOpKind::Rem) && !isFloat(node.type))
      found = true;
    IRVisitor::visitBinary(node);
  }
};

// The range of each loop in a statement, by variable (names are unique
// within a function).
class LoopRanges : public IRVisitor {
public:
  std::map<std::string, const For *> loops;

protected:
  void visitFor(const For &node) override {
    loops[node.var] = &node;
    IRVisitor::visitFor(node);
  }
};

// Whether the iterations of the serial loop `loop` (host code, its
// accesses those of `accesses`) touch no element another writes: each array
// it writes has a dimension that every store indexes by exactly the loop's
// variable (an iteration's own slice), and every load indexes by that
// variable too or by a loop variable whose range ends before the loop's
// first iteration or starts after its last (elements no iteration writes).
// lu's `for j in [i, N) { for k in [0, i) { A[i][j] -= A[i][k] * A[k][j] } }`
// writes column j of A and reads columns j and k < i.
bool iterationsIndependent(const For &loop, const std::vector<BufferAccess> &accesses,
                           const std::map<std::string, const For *> &ranges) {
  auto outsideLoop = [&](const AffineIndex &index) {
    if (!index.isAffine() || index.coefficients.size() != 1 || index.rest)
      return false;
    const auto &[var, coefficient] = *index.coefficients.begin();
    auto range = ranges.find(var);
    if (coefficient != 1 || range == ranges.end() || var == loop.var)
      return false;
    const For &other = *range->second;
    auto end = [](const For &f) { return add(f.min, f.extent); };
    return provenNotPositive(sub(end(other), loop.min)) ||
           provenNotPositive(sub(end(loop), other.min));
  };
  auto ownSlice = [&](const AffineIndex &index) {
    return index.isAffine() && index.coefficients.size() == 1 && index.coefficient(loop.var) == 1 &&
           !index.rest;
  };
  std::set<std::string> written;
  for (const BufferAccess &access : accesses)
    if (access.isStore)
      written.insert(access.buffer->name);
  for (const std::string &array : written) {
    std::optional<size_t> rank;
    for (const BufferAccess &access : accesses)
      if (access.buffer->name == array)
        rank = access.indices.size();
    bool sliced = false;
    for (size_t d = 0; rank && d < *rank && !sliced; ++d)
      sliced = std::ranges::all_of(accesses, [&](const BufferAccess &access) {
        if (access.buffer->name != array)
          return true;
        return ownSlice(access.indices[d]) || (!access.isStore && outsideLoop(access.indices[d]));
      });
    if (!sliced)
      return false;
  }
  return true;
}

Expr orZero(const Expr &rest) { return rest ? rest : makeI64(0); }

// Whether two loop-invariant index remainders (null: 0) are proven equal.
bool provenEqual(const Expr &a, const Expr &b) {
  Expr lhs = a ? a : makeI64(0), rhs = b ? b : makeI64(0);
  return provenNotPositive(sub(lhs, rhs)) && provenNotPositive(sub(rhs, lhs));
}

Expr endOf(const For &loop) { return add(loop.min, loop.extent); }

// An index that is exactly one loop variable: `var`.
bool isExactly(const AffineIndex &index, const std::string &var) {
  return index.isAffine() && index.coefficients.size() == 1 && index.coefficient(var) == 1 &&
         !index.rest;
}

// Why the loop over j (`outer`, holding the triangular loop over k,
// `inner`, then `after`) may not become the loop over k pushing updates
// (see the file's comment), or nothing when it may. `accesses` are the
// outer loop's; `resolved` replaces the lets around it by their values.
// Its loads may read element j (a statement's own accumulation) unless
// `loadsRunEarlier`: a pushed term runs at step k, before j's statements.
std::optional<std::string> triangularPushBlocked(const For &outer, const For &inner,
                                                 const std::vector<BufferAccess> &accesses,
                                                 const std::function<Expr(const Expr &)> &resolved,
                                                 bool loadsRunEarlier) {
  const std::string &j = outer.var, &k = inner.var;
  std::optional<BufferAccess> store;
  for (const BufferAccess &access : accesses) {
    if (!access.isStore)
      continue;
    if (store && access.buffer->name != store->buffer->name)
      return "it writes more than one array";
    store = access;
  }
  if (!store)
    return "it writes no array";
  // The written slice: the dimension indexed by j, the others invariant.
  std::optional<size_t> own;
  for (size_t d = 0; d < store->indices.size(); ++d) {
    const AffineIndex &index = store->indices[d];
    if (isExactly(index, j) && !own)
      own = d;
    else if (!index.isAffine() || !index.coefficients.empty())
      return "a store's index is not j in one dimension and invariant in the others";
  }
  if (!own)
    return "a store's index is not j in one dimension and invariant in the others";
  auto sameElementBut = [&](const BufferAccess &access, const std::string &var) {
    for (size_t d = 0; d < access.indices.size(); ++d) {
      const AffineIndex &index = access.indices[d];
      bool same = d == *own ? isExactly(index, var)
                            : index.isAffine() && index.coefficients.empty() &&
                                  provenEqual(resolved(orZero(index.rest)),
                                              resolved(orZero(store->indices[d].rest)));
      if (!same)
        return false;
    }
    return true;
  };
  // A slice no iteration writes: in a dimension other than j's, an index
  // proven apart from the written one while j and k stay in [outer.min,
  // end of outer) (provenApart's elimination, AccessAnalysis.h).
  std::vector<LoopRange> ranges = {{k, resolved(outer.min), resolved(outer.extent)},
                                   {j, resolved(outer.min), resolved(outer.extent)}};
  auto otherSlice = [&](const BufferAccess &access) {
    if (!access.load)
      return false;
    for (size_t d = 0; d < access.indices.size(); ++d)
      if (d != *own && provenNonZero(sub(toI64(resolved(access.load->indices[d])),
                                         toI64(resolved(orZero(store->indices[d].rest)))),
                                     ranges))
        return true;
    return false;
  };
  for (const BufferAccess &access : accesses) {
    if (access.buffer->name != store->buffer->name || access.isStore)
      continue;
    if ((loadsRunEarlier || !sameElementBut(access, j)) && !sameElementBut(access, k) &&
        !otherSlice(access))
      return "it reads '" + access.buffer->name + "' elsewhere than at " +
             (loadsRunEarlier ? "element k" : "element j, element k") + " or another slice";
  }
  return std::nullopt;
}

// `max(j, e)` (either way round) where e is at most `start`, the first
// value of the loop over j: j. The lowering guards an empty range
// `k in s..j` with it.
class DropMaxBelowLoopVar : public IRMutator {
public:
  DropMaxBelowLoopVar(std::string var, std::function<bool(const Expr &)> belowStart)
      : var_(std::move(var)), belowStart_(std::move(belowStart)) {}

protected:
  Expr visitBinary(const Binary &node, const Expr &self) override {
    if (node.op == BinaryOpKind::Max) {
      auto isVar = [&](const Expr &e) {
        const auto *v = e->as<Var>();
        return v && v->name == var_;
      };
      if (isVar(node.lhs) && belowStart_(node.rhs))
        return node.lhs;
      if (isVar(node.rhs) && belowStart_(node.lhs))
        return node.rhs;
    }
    return IRMutator::visitBinary(node, self);
  }

private:
  std::string var_;
  std::function<bool(const Expr &)> belowStart_;
};

// The one Reduce of a loop's body outside any inner loop, and the
// statement just before it in its Block; none when there is not exactly one.
class TriangularReduceFinder : public IRVisitor {
public:
  const Reduce *reduce = nullptr;
  const Store *before = nullptr;
  int found = 0;

protected:
  void visitFor(const For &) override {}
  void visitBlock(const ir::Block &node) override {
    for (size_t i = 0; i < node.stmts.size(); ++i) {
      if (const auto *candidate = node.stmts[i]->as<Reduce>()) {
        ++found;
        reduce = candidate;
        before = i > 0 ? node.stmts[i - 1]->as<Store>() : nullptr;
      } else {
        visit(node.stmts[i]);
      }
    }
  }
  void visitReduce(const Reduce &) override { ++found; }
};

// The body with the Reduce `target` replaced by `replacement`.
class ReplaceReduce : public IRMutator {
public:
  ReplaceReduce(const Reduce *target, Stmt replacement)
      : target_(target), replacement_(std::move(replacement)) {}

protected:
  Stmt visitReduce(const Reduce &node, const Stmt &self) override {
    return &node == target_ ? replacement_ : self;
  }

private:
  const Reduce *target_;
  Stmt replacement_;
};

// The buffers a statement allocates.
class AllocatedBuffers : public IRVisitor {
public:
  std::set<std::string> names;

protected:
  void visitAllocate(const ir::Allocate &node) override {
    names.insert(node.buffer->name);
    IRVisitor::visitAllocate(node);
  }
};

class ColumnWalkInterchanger : public LetTrackingMutator {
public:
  ColumnWalkInterchanger(const ReorderableAccesses &reorderable, const RemarkReporter &remarks)
      : reorderable_(reorderable), remarks_(remarks) {}

protected:
  Stmt visitFor(const For &node, const Stmt &self) override {
    if (node.forKind == ForKind::Serial) {
      // A serial loop of the host code (the walk stops at parfors), inner
      // loops first.
      Stmt mutated = IRMutator::visitFor(node, self);
      const For &loop = *mutated->as<For>();
      if (std::optional<Stmt> pushed = pushTriangularUpdates(loop, mutated))
        return *pushed;
      if (std::optional<Stmt> pushed = pushTriangularReduction(loop, mutated))
        return *pushed;
      return interchange(loop, mutated, std::nullopt).value_or(mutated);
    }
    if (node.forKind != ForKind::Parallel)
      return IRMutator::visitFor(node, self);
    // A nest is looked at from its outermost parallel loop; the parfors in
    // its body run serially in a thread and are left alone.
    std::vector<const For *> chain = parallelChain(node);
    if (chain.size() < 2)
      return self;
    std::set<std::string> outer;
    for (size_t i = 0; i + 1 < chain.size(); ++i)
      outer.insert(chain[i]->var);
    std::optional<Stmt> inner = interchange(*chain.back(), chain[chain.size() - 2]->body, outer);
    if (!inner)
      return self;
    Stmt body = *inner;
    for (size_t i = chain.size() - 1; i-- > 0;) {
      const For &loop = *chain[i];
      body = std::make_shared<For>(loop.var, loop.min, loop.extent, loop.forKind, loop.gpuDim, body,
                                   loop.source);
    }
    return body;
  }

private:
  // `parallel` (the statement `parallelStmt`) distributed over its
  // statements and moved inside the serial loops that walk columns along
  // it, or none. `outer`: the parallel loops around it in its nest, or none
  // for a serial loop of the host code, whose iterations must be proven
  // independent.
  std::optional<Stmt> interchange(const For &parallel, const Stmt &parallelStmt,
                                  const std::optional<std::set<std::string>> &outer) const {
    std::vector<Stmt> stmts;
    bool bindsNames = false;
    flattenScopes(parallel.body, stmts, bindsNames);

    std::vector<BufferAccess> accesses = collectAccesses(parallelStmt);
    // The serial loops to move the parallel loop into, by position.
    std::vector<bool> walksColumns(stmts.size(), false);
    const For *firstWalk = nullptr;
    Walks firstWalks;
    for (size_t s = 0; s < stmts.size(); ++s) {
      const auto *serial = stmts[s]->as<For>();
      if (!serial || serial->forKind != ForKind::Serial ||
          usesAnyVar(serial->min, {parallel.var}) || usesAnyVar(serial->extent, {parallel.var}))
        continue;
      Walks walks = countWalks(accesses, serial->var, parallel.var);
      if (walks.columns > walks.rows) {
        walksColumns[s] = true;
        if (!firstWalk) {
          firstWalk = serial;
          firstWalks = walks;
        }
      }
    }
    if (!firstWalk)
      return std::nullopt;

    std::string j = remarks_.programName(parallel.var);
    std::string k = remarks_.programName(firstWalk->var);
    std::string line = std::to_string(firstWalk->source.begin.line);
    if (outer && !usesAnyVar(parallel.min, *outer) && !usesAnyVar(parallel.extent, *outer)) {
      remarks_.declined(parallel.source,
                        "not interchanged with the loop over " + k + " (line " + line + "): " + j +
                            " is mapped to CPU threads, whose loop already runs inside it");
      return std::nullopt;
    }
    if (bindsNames) {
      remarks_.declined(parallel.source, "not interchanged with the loop over " + k + " (line " +
                                             line + "): the body binds names its statements share");
      return std::nullopt;
    }
    if (!outer) {
      LoopRanges ranges;
      ranges.visit(parallel.body);
      MayFail mayFail;
      mayFail.visit(parallel.body);
      if (!reorderable_.allowed(parallel.body) || mayFail.found) {
        remarks_.declined(parallel.source,
                          "not interchanged with the loop over " + k + " (line " + line +
                              "): a failure in the serial loop over " + j +
                              " (an index out of range, a division by zero) would be reported "
                              "out of the program's order");
        return std::nullopt;
      }
      if (!iterationsIndependent(parallel, accesses, ranges.loops)) {
        remarks_.declined(parallel.source,
                          "not interchanged with the loop over " + k + " (line " + line +
                              "): the iterations of the serial loop over " + j +
                              " are not proven independent (each writing its own slice, "
                              "reading no other's)");
        return std::nullopt;
      }
    }

    // Consecutive statements that stay together share one loop over the
    // parallel variable, named apart (`j.c0`, `j.c1`, ...) as names are
    // unique within a function.
    std::vector<Stmt> pieces;
    std::vector<Stmt> pending;
    auto overParallel = [&](Stmt body) {
      std::string var = parallel.var + ".c" + std::to_string(pieces.size());
      body = substitute(body, {{parallel.var, makeVar(parallel.min->type, var)}});
      return std::make_shared<For>(var, parallel.min, parallel.extent, ForKind::Serial, 0,
                                   std::move(body), parallel.source);
    };
    auto flush = [&] {
      if (!pending.empty())
        pieces.push_back(overParallel(makeBlock(std::move(pending))));
      pending.clear();
    };
    for (size_t s = 0; s < stmts.size(); ++s) {
      if (!walksColumns[s]) {
        pending.push_back(stmts[s]);
        continue;
      }
      flush();
      const For &serial = *stmts[s]->as<For>();
      pieces.push_back(std::make_shared<For>(serial.var, serial.min, serial.extent, ForKind::Serial,
                                             0, overParallel(serial.body), serial.source));
    }
    flush();
    remarks_.applied(parallel.source, "interchanged with the loop over " + k + " (line " + line +
                                          "): " + j + " runs innermost, along the rows of '" +
                                          remarks_.programName(firstWalks.firstColumnArray) +
                                          "', each " + j + "'s terms in their order");
    return makeBlock(std::move(pieces));
  }

  // The serial loop `outer` (the statement `outerStmt`) as the loop over
  // its triangular loop's variable pushing updates (see the file's
  // comment), or none.
  std::optional<Stmt> pushTriangularUpdates(const For &outer, const Stmt &outerStmt) const {
    std::vector<Stmt> stmts;
    bool bindsNames = false;
    flattenScopes(outer.body, stmts, bindsNames);
    const auto *inner = stmts.empty() ? nullptr : stmts.front()->as<For>();
    if (!inner || inner->forKind != ForKind::Serial || inner->min->type != outer.min->type ||
        !provenEqual(inner->min, outer.min) ||
        !provenEqual(endOf(*inner), makeVar(outer.min->type, outer.var)))
      return std::nullopt; // not a loop over the triangle below j
    std::vector<BufferAccess> accesses = collectAccesses(outerStmt);
    Walks walks = countWalks(accesses, inner->var, outer.var);
    if (walks.columns <= walks.rows)
      return std::nullopt;

    std::string j = remarks_.programName(outer.var);
    std::string k = remarks_.programName(inner->var);
    std::string line = std::to_string(inner->source.begin.line);
    auto decline = [&](const std::string &why) {
      remarks_.declined(outer.source, "not interchanged with its loop over " + k + " below " + j +
                                          " (line " + line + "): " + why);
      return std::nullopt;
    };
    MayFail mayFail;
    mayFail.visit(outer.body);
    if (!reorderable_.allowed(outer.body) || mayFail.found)
      return decline("a failure (an index out of range, a division by zero) would be reported "
                     "out of the program's order");
    if (bindsNames)
      return decline("the body binds names its statements share");
    if (std::optional<std::string> blocked = triangularPushBlocked(
            outer, *inner, accesses, [&](const Expr &e) { return resolved(e); }, false))
      return decline(*blocked);

    // The loop over k finishes element k (the statements after the
    // triangle, at j = k), then pushes its update to every later j.
    Expr kVar = makeVar(inner->min->type, inner->var);
    std::vector<Stmt> finish(stmts.begin() + 1, stmts.end());
    Expr firstLater = add(kVar, castTo(kVar->type, makeI64(1)));
    Stmt push = std::make_shared<For>(outer.var, firstLater, sub(endOf(outer), firstLater),
                                      ForKind::Serial, 0, inner->body, outer.source);
    Stmt body = makeBlock({substitute(makeBlock(std::move(finish)), {{outer.var, kVar}}), push});
    remarks_.applied(outer.source, "interchanged with its loop over " + k + " (line " + line +
                                       "): each " + k +
                                       " finishes its element, then updates the "
                                       "later " +
                                       j + "s along the rows of '" +
                                       remarks_.programName(walks.firstColumnArray) + "', each " +
                                       j + "'s terms in their order");
    return std::make_shared<For>(inner->var, outer.min, outer.extent, ForKind::Serial, 0,
                                 std::move(body), inner->source);
  }

  // The serial loop `outer` (the statement `outerStmt`) with its one
  // reduction over the triangle below j pushed by each k into partial
  // results (see the file's comment), or none.
  std::optional<Stmt> pushTriangularReduction(const For &outer, const Stmt &outerStmt) const {
    TriangularReduceFinder finder;
    finder.visit(outer.body);
    const Reduce *reduce = finder.reduce;
    if (finder.found != 1 || !reduce || reduce->loops.size() != 1)
      return std::nullopt;
    const Reduce::Loop &range = reduce->loops.front();
    Expr start = resolved(outer.min);
    auto belowStart = [&](const Expr &e) { return provenNotPositive(sub(resolved(e), start)); };
    Expr rangeEnd = DropMaxBelowLoopVar(outer.var, belowStart).mutate(add(range.min, range.extent));
    if (range.min->type != outer.min->type || !provenEqual(resolved(range.min), start) ||
        !provenEqual(resolved(rangeEnd), makeVar(outer.min->type, outer.var)))
      return std::nullopt; // not a reduction over the triangle below j
    // The terms' loads, as the loop over j sees them.
    class Loads : public IRVisitor {
    public:
      std::set<const Load *> nodes;

    protected:
      void visitLoad(const Load &node) override {
        nodes.insert(&node);
        IRVisitor::visitLoad(node);
      }
    } termLoads;
    termLoads.visit(reduce->value);
    std::vector<BufferAccess> terms = collectAccesses(outerStmt);
    std::erase_if(terms, [&](const BufferAccess &access) {
      return !access.load || !termLoads.nodes.contains(access.load);
    });
    Walks walks = countWalks(terms, range.var, outer.var);
    if (walks.columns <= walks.rows)
      return std::nullopt;

    std::string j = remarks_.programName(outer.var);
    std::string k = remarks_.programName(range.var);
    auto decline = [&](const std::string &why) {
      remarks_.declined(reduce->source, "the reduction over " + k + " below " + j +
                                            " not pushed by each " + k + ": " + why);
      return std::nullopt;
    };
    const auto *initial = finder.before;
    if (!initial || initial->buffer != reduce->accumulator || !initial->indices.empty() ||
        !reduce->indices.empty() || !isConstantValue(initial->value))
      return decline("its accumulator is not a scalar set to a constant just before it");
    if (reduce->valueSetup)
      return decline("its terms need statements of their own");
    MayFail mayFail;
    mayFail.visit(reduce->value);
    if (!reorderable_.allowed(reduce->value) || mayFail.found)
      return decline("a failure in a term (an index out of range, a division by zero) would be "
                     "reported out of the program's order");

    // What the loop writes, but for its own temporaries: one array, each
    // iteration its slice j; the terms read it only at element k or
    // another slice, read nothing else it writes and no name bound in it.
    AllocatedBuffers temporaries;
    temporaries.visit(outer.body);
    std::vector<BufferAccess> accesses = collectAccesses(outerStmt);
    std::erase_if(accesses, [&](const BufferAccess &access) {
      return temporaries.names.contains(access.buffer->name);
    });
    std::vector<BufferAccess> stores;
    std::ranges::copy_if(accesses, std::back_inserter(stores),
                         [](const BufferAccess &access) { return access.isStore; });
    // The checks of the statement form, on the stores and the terms' loads.
    std::vector<BufferAccess> checked = stores;
    for (const BufferAccess &term : terms)
      if (!temporaries.names.contains(term.buffer->name))
        checked.push_back(term);
      else
        return decline("its terms read '" + remarks_.programName(term.buffer->name) +
                       "', which each " + j + " sets");
    For triangle(range.var, range.min, range.extent, ForKind::Serial, 0, nullptr);
    if (std::optional<std::string> blocked = triangularPushBlocked(
            outer, triangle, checked, [&](const Expr &e) { return resolved(e); }, true))
      return decline(*blocked);
    std::set<std::string> bound = boundNames(outer.body);
    for (const std::string &name : freeVars(reduce->value))
      if (name != range.var && name != outer.var && bound.contains(name))
        return decline("its terms read '" + remarks_.programName(name) + "', which each " + j +
                       " binds");

    // partial[j - start] starts as the accumulator's initial value; j's
    // reduction becomes a read of it, and after j's statements, k = j
    // combines its terms into the partial results of the later js.
    ScalarType type = reduce->accumulator->element;
    Expr jVar = makeVar(outer.min->type, outer.var);
    auto partialAt = [&](const Expr &index) {
      return std::vector<Expr>{toI64(sub(index, outer.min))};
    };
    auto partial = std::make_shared<BufferInfo>();
    partial->name = reduce->accumulator->name + ".partials";
    partial->programName = reduce->accumulator->nameInMessages();
    partial->element = type;
    partial->shape = {maxOf(toI64(outer.extent), makeI64(0))};
    partial->memory = MemorySpace::Global;
    partial->isWritten = true;
    Stmt readPartial =
        std::make_shared<Store>(reduce->accumulator, std::vector<Expr>{},
                                std::make_shared<Load>(partial, partialAt(jVar)), reduce->source);
    std::string later = outer.var + ".later";
    Expr laterVar = makeVar(outer.min->type, later);
    Expr firstLater = add(jVar, castTo(jVar->type, makeI64(1)));
    Expr term = substitute(reduce->value, {{range.var, jVar}, {outer.var, laterVar}});
    Stmt combineInto = std::make_shared<Store>(
        partial, partialAt(laterVar),
        applyOperator(reduce->op, std::make_shared<Load>(partial, partialAt(laterVar)), term),
        reduce->source);
    Stmt push = std::make_shared<For>(later, firstLater, sub(endOf(outer), firstLater),
                                      ForKind::Serial, 0, combineInto, reduce->source);
    Stmt body = makeBlock({ReplaceReduce(reduce, readPartial).mutate(outer.body), push});
    Stmt fill = std::make_shared<For>(
        outer.var, outer.min, outer.extent, ForKind::Serial, 0,
        std::make_shared<Store>(partial, partialAt(jVar), initial->value), outer.source);
    Stmt loop = std::make_shared<For>(outer.var, outer.min, outer.extent, ForKind::Serial, 0,
                                      std::move(body), outer.source);
    remarks_.applied(reduce->source, "the reduction over " + k + " below " + j +
                                         " pushed by each " + k + " into the later " + j +
                                         "s' partial results, along the rows of '" +
                                         remarks_.programName(walks.firstColumnArray) + "'");
    // Names are unique within a function: the fill's loop is the loop's
    // own, renamed.
    std::string fillVar = outer.var + ".fill";
    fill = substitute(fill, {{outer.var, makeVar(outer.min->type, fillVar)}});
    fill = std::make_shared<For>(fillVar, outer.min, outer.extent, ForKind::Serial, 0,
                                 fill->as<For>()->body, outer.source);
    return std::make_shared<ir::Allocate>(partial, makeBlock({fill, loop}));
  }

  static bool isConstantValue(const Expr &value) {
    return value->as<IntImm>() || value->as<FloatImm>();
  }

  const ReorderableAccesses &reorderable_;
  const RemarkReporter &remarks_;
};

} // namespace

Function interchangeColumnWalks(Function function, const RemarkReporter &remarks) {
  ReorderableAccesses reorderable(function);
  function.body = ColumnWalkInterchanger(reorderable, remarks).mutate(function.body);
  return function;
}

} // namespace loopc::passes
