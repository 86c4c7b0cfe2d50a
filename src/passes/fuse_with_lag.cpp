// fuse_with_lag (CPU): two parfor nests one after the other over the same
// rows, where the second writes what the first reads a few rows around each
// point (a Jacobi step into B, then B copied back into A), stream their
// arrays through memory once per nest: four passes over the rows where two
// would do. Fused point by point they would be wrong: the second nest's
// write of A[i][j] would come before the first nest's read of it at row
// i + 1. Fused with a lag of s rows (the farthest row one nest reads of
// what the other writes), they are not: at row r the first nest's row r,
// then the second nest's row r - s, whose elements the first has read:
//
//   parfor i in 1..N-1, j in 1..N-1 {          block per chunk of rows {
//     B[i][j] = f(A[i-1..i+1][j-1..j+1])         for r in chunk {
//   }                                              for j: B[r][j] = f(A[r-1..r+1][..])
//   parfor i in 1..N-1, j in 1..N-1 {              for j: A[r-1][j] = B[r-1][j]
//     A[i][j] = B[i][j]                          }
//   }                                          }
//                                              the chunks' first and last s rows:
//                                                A[i][j] = B[i][j]
//
// Each chunk of rows is a unit of work: its rows are read and written while
// they are in cache, and only the second nest's first and last s rows of a
// chunk, which the neighbouring chunks read, wait for a second launch.
// samples/jacobi2d took about two thirds of the time (docs/benchmarks.md,
// CPU history).
//
// Why it is legal: the arrays the two nests write are distinct, each nest
// writes only at its point and reads what it writes only there. The first
// reads what the second writes at rows i - s to i + s (its other indices
// free of the row): in a chunk's sweep the second nest writes row r - s
// after the first nest's rows up to r, the last to read it, and a chunk's
// edge rows after every chunk is done. The second may read what the first
// writes at rows i - s to i + s too (a Jacobi step back from B into A):
// row r - s reads rows up to r, computed. Arrays neither nest writes read
// the same throughout.
//
// Declined with a remark, where the nests are otherwise of this kind: nests
// of one dimension (their points are the vector lanes, which a lag would
// serialize; as plain C a 1-D lag did not pay), reads more than kMaxLag rows
// away, and accesses not proven in range under --bounds-check.
#include "passes/Passes.h"

#include "ir/IRVisitor.h"
#include "passes/analysis/AccessAnalysis.h"
#include "passes/analysis/BoundsProof.h"

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <set>

namespace loopc::passes {

using namespace loopc::ir;
using ir::Expr; // not the AST's
using ir::Stmt;

namespace {

// Chunks of rows the fused nest is cut into, each a unit of work: enough for
// the cores of a large machine, few enough that the rows a chunk leaves to
// the second launch (2 s) stay a small part of it.
const int64_t kChunks = 64;
// The fewest rows a chunk has, in lags: its first and last s rows are not
// fused.
const int64_t kMinChunkLags = 16;
// The farthest lag taken: rows a chunk keeps in cache grow with it.
const int64_t kMaxLag = 4;

// A perfect nest of parallel loops, outermost first, and its body.
struct ParforNest {
  std::vector<const For *> loops;
  Stmt body;
};

std::optional<ParforNest> parforNest(const Stmt &stmt) {
  const auto *top = stmt->as<For>();
  if (!top || top->forKind != ForKind::Parallel)
    return std::nullopt;
  std::vector<const For *> loops = parallelChain(*top);
  Stmt body = loops.back()->body;
  return ParforNest{std::move(loops), std::move(body)};
}

// Whether a nest's body is straight-line code: lets, stores and branches.
class StraightLine : public IRVisitor {
public:
  bool straight = true;

protected:
  bool finished() const override { return !straight; }
  void visitFor(const For &) override { straight = false; }
  void visitAtomicUpdate(const AtomicUpdate &) override { straight = false; }
  void visitScan(const Scan &) override { straight = false; }
  void visitReduce(const Reduce &) override { straight = false; }
  void visitBarrier(const Barrier &) override { straight = false; }
  void visitAllocate(const Allocate &) override { straight = false; }
};

// Whether `index` is the loop variable `var` plus a constant (which goes to
// `offset`) and depends on no other variable of `vars`.
bool isOffsetOf(const AffineIndex &index, const std::string &var, const std::set<std::string> &vars,
                int64_t &offset) {
  if (!index.isAffine() || index.coefficient(var) != 1)
    return false;
  for (const auto &[name, coefficient] : index.coefficients)
    if (name != var && vars.contains(name))
      return false;
  offset = 0;
  if (!index.rest)
    return true;
  const auto *constant = index.rest->as<IntImm>();
  if (!constant)
    return false;
  offset = constant->value;
  return true;
}

class LagFuser : public IRMutator {
public:
  LagFuser(const ReorderableAccesses &reorderable, const RemarkReporter &remarks)
      : reorderable_(reorderable), remarks_(remarks) {}

protected:
  Stmt visitFor(const For &node, const Stmt &self) override {
    // Kernels' loops run in their threads; only the host code's statements
    // are nests to fuse.
    if (node.forKind == ForKind::Parallel || node.forKind == ForKind::GpuBlock)
      return self;
    return IRMutator::visitFor(node, self);
  }

  Stmt visitBlock(const Block &node, const Stmt &self) override {
    std::vector<Stmt> stmts;
    bool changed = false;
    for (const Stmt &stmt : node.stmts) {
      Stmt mutated = mutate(stmt);
      changed |= mutated != stmt;
      stmts.push_back(mutated);
    }
    for (size_t s = 0; s + 1 < stmts.size(); ++s) {
      if (std::optional<Stmt> fused = fuse(stmts[s], stmts[s + 1])) {
        stmts[s] = *fused;
        stmts.erase(stmts.begin() + static_cast<std::ptrdiff_t>(s) + 1);
        changed = true;
      }
    }
    return changed ? makeBlock(std::move(stmts)) : self;
  }

private:
  // `first` then `second` fused with a lag, or none. Only nests that match
  // the pattern but for their shape or the checks get a remark: most pairs
  // of nests are nothing of this kind.
  std::optional<Stmt> fuse(const Stmt &first, const Stmt &second) const {
    std::optional<ParforNest> one = parforNest(first), two = parforNest(second);
    if (!one || !two || one->loops.size() != two->loops.size())
      return std::nullopt;
    // The same rectangular ranges (the rows' inner loops are swept at each
    // row, and the edge rows bound only after them).
    std::set<std::string> vars;
    for (const For *loop : one->loops)
      vars.insert(loop->var);
    for (const For *loop : two->loops)
      vars.insert(loop->var);
    for (size_t d = 0; d < one->loops.size(); ++d)
      if (!sameExpr(one->loops[d]->min, two->loops[d]->min) ||
          !sameExpr(one->loops[d]->extent, two->loops[d]->extent) ||
          usesAnyVar(one->loops[d]->min, vars) || usesAnyVar(one->loops[d]->extent, vars))
        return std::nullopt;
    for (const Stmt &body : {one->body, two->body}) {
      StraightLine straight;
      straight.visit(body);
      if (!straight.straight)
        return std::nullopt;
    }
    std::optional<int64_t> lag = lagOf(*one, first, *two, second);
    if (!lag)
      return std::nullopt;
    SourceRange where = two->loops.front()->source;
    auto decline = [&](const std::string &why) -> std::optional<Stmt> {
      remarks_.declined(where, "not fused with the parfor before it, a few rows behind: " + why);
      return std::nullopt;
    };
    if (one->loops.size() < 2)
      return decline("a nest of one dimension (its points are the vector lanes, which a lag "
                     "would serialize)");
    if (*lag > kMaxLag)
      return decline("its rows read " + std::to_string(*lag) + " rows away, more than " +
                     std::to_string(kMaxLag));
    if (!reorderable_.allowed(first) || !reorderable_.allowed(second))
      return decline("under --bounds-check, an index of the nests is not proven in range");

    std::map<std::string, Expr> renamed;
    for (size_t d = 0; d < one->loops.size(); ++d)
      renamed[two->loops[d]->var] = makeVar(one->loops[d]->min->type, one->loops[d]->var);
    std::string rowsBehind = std::to_string(*lag) + (*lag == 1 ? " row" : " rows");
    remarks_.applied(where, "fused with the parfor before it, " + rowsBehind +
                                " behind: each chunk of rows is read and written once while in "
                                "cache, its first and last " +
                                rowsBehind + " in a second launch");
    return fused(*one, substitute(two->body, renamed), *lag, first->as<For>()->source);
  }

  // The lag at which `two` may run behind `one`, fused, or none: the
  // farthest row, and at least one, either reads of what the other writes (what the second
  // overwrites, before the first has read it; what the first writes, once
  // the first has written it), none of the other indices of such a read
  // moving with the row; every write at its point, the arrays the two write
  // distinct, and each reading what it writes at its point only.
  static std::optional<int64_t> lagOf(const ParforNest &one, const Stmt &first,
                                      const ParforNest &two, const Stmt &second) {
    std::vector<BufferAccess> accessesOne = collectAccesses(first);
    std::vector<BufferAccess> accessesTwo = collectAccesses(second);
    std::set<const BufferInfo *> writtenOne, writtenTwo;
    for (const BufferAccess &access : accessesOne)
      if (access.isStore)
        writtenOne.insert(access.buffer.get());
    for (const BufferAccess &access : accessesTwo)
      if (access.isStore)
        writtenTwo.insert(access.buffer.get());
    bool readsOverwritten = std::ranges::any_of(accessesOne, [&](const BufferAccess &access) {
      return !access.isStore && writtenTwo.contains(access.buffer.get());
    });
    if (!readsOverwritten)
      return std::nullopt;
    int64_t lag = 0;
    // One nest's accesses: `own`, the arrays it writes (at its point only);
    // `other`, those the other nest writes (rows a constant distance away,
    // which set the lag).
    auto check = [&](const std::vector<BufferAccess> &accesses, const ParforNest &nest,
                     const std::set<const BufferInfo *> &own,
                     const std::set<const BufferInfo *> &other) {
      std::set<std::string> vars;
      for (const For *loop : nest.loops)
        vars.insert(loop->var);
      const std::string &row = nest.loops.front()->var;
      for (const BufferAccess &access : accesses) {
        const BufferInfo *array = access.buffer.get();
        if (own.contains(array) && other.contains(array))
          return false;
        if (!own.contains(array) && !other.contains(array))
          continue; // read by both nests alone: the same throughout
        if (access.indices.size() != nest.loops.size())
          return false;
        int64_t offset = 0;
        if (!isOffsetOf(access.indices[0], row, vars, offset))
          return false;
        if (own.contains(array)) {
          // At its point: every index its own loop's variable.
          if (offset != 0)
            return false;
          for (size_t d = 1; d < access.indices.size(); ++d) {
            int64_t inner = 0;
            if (!isOffsetOf(access.indices[d], nest.loops[d]->var, vars, inner) || inner != 0)
              return false;
          }
          continue;
        }
        if (access.isStore)
          return false;
        for (size_t d = 1; d < access.indices.size(); ++d)
          if (access.indices[d].dependsOn(row) || !access.indices[d].isAffine())
            return false;
        lag = std::max(lag, std::abs(offset));
      }
      return true;
    };
    if (!check(accessesOne, one, writtenOne, writtenTwo) ||
        !check(accessesTwo, two, writtenTwo, writtenOne))
      return std::nullopt;
    // At least a row: reads of the same row's other columns (a stencil along
    // the rows alone) need the whole row read before any of it is written.
    return std::max<int64_t>(lag, 1);
  }

  // The chunks' sweeps, one block each, then the rows they leave.
  static Stmt fused(const ParforNest &one, const Stmt &secondBody, int64_t lag,
                    SourceRange source) {
    const For &rows = *one.loops.front();
    ScalarType rowType = rows.min->type;
    std::string prefix = rows.var + ".lag";
    Expr rowCount = maxOf(toI64(rows.extent), makeI64(0));
    Expr chunkRows = makeVar(ScalarType::I64, prefix + ".chunk_rows");
    Expr chunks = makeVar(ScalarType::I64, prefix + ".chunks");
    Expr chunk = makeVar(ScalarType::I64, prefix + ".chunk");
    Expr first = mul(chunk, chunkRows);
    Expr count = makeVar(ScalarType::I64, prefix + ".count");
    Expr r = makeVar(ScalarType::I64, prefix + ".row");
    Expr s = makeI64(lag), twoLags = makeI64(2 * lag);
    auto rowAt = [&](Expr offset) { return add(toI64(rows.min), add(first, std::move(offset))); };
    // The nest's inner loops, serial, around a body at row `rowValue`.
    auto rowOf = [&](const Stmt &body, Expr rowValue) {
      Stmt inner = body;
      for (size_t d = one.loops.size(); d-- > 1;) {
        const For &loop = *one.loops[d];
        inner = std::make_shared<For>(loop.var, loop.min, loop.extent, ForKind::Serial, 0, inner,
                                      loop.source);
      }
      return std::make_shared<LetStmt>(rows.var, castTo(rowType, std::move(rowValue)), inner);
    };
    // The sweep: at row r, the first nest's row r and the second's r - s
    // once r - s is past the chunk's first s rows.
    Stmt sweep = makeBlock({rowOf(one.body, rowAt(r)),
                            std::make_shared<IfThenElse>(greaterOrEqual(r, twoLags),
                                                         rowOf(secondBody, rowAt(sub(r, s))))});
    // A chunk's rows, min(first + chunk_rows, rows) - first. The sweep's
    // extent says it as min(chunk_rows, max(rows of the nest - first, 0)),
    // whose clamp at 0 a loop that runs drops (BoundsProof: its last row is
    // then below the nest's); the edges' tests read the first form.
    Expr countValue = sub(minOf(add(first, chunkRows), rowCount), first);
    Expr sweepExtent = minOf(chunkRows, maxOf(sub(toI64(rows.extent), first), makeI64(0)));
    Stmt chunkBody = std::make_shared<For>(prefix + ".row", makeI64(0), sweepExtent,
                                           ForKind::Serial, 0, sweep, source);
    Stmt sweeps =
        std::make_shared<For>(prefix + ".chunk", makeI64(0), chunks, ForKind::GpuBlock, 0,
                              std::make_shared<For>(prefix + ".lane", makeI64(0), makeI64(1),
                                                    ForKind::GpuThread, 0, chunkBody, source),
                              source);

    // The rows left, in parallel over the chunks, their 2 s edge rows and
    // the inner dimensions (map_to_gpu maps them, x along the rows): edge
    // k < s is the chunk's row k, else its row count - 2 s + k, unless the
    // sweep or the first s rows have it (a chunk of fewer than 2 s rows).
    Expr k = makeVar(ScalarType::I64, prefix + ".edge");
    Expr isHead = lessThan(k, s);
    Expr edgeRow = makeVar(ScalarType::I64, prefix + ".edge_row");
    Expr edgeValue = select(isHead, k, add(sub(count, twoLags), k));
    Expr leftBySweep =
        logicalAnd(logicalAnd(greaterOrEqual(edgeRow, makeI64(0)), lessThan(edgeRow, count)),
                   logicalOr(isHead, greaterOrEqual(edgeRow, s)));
    Stmt edges = std::make_shared<IfThenElse>(
        leftBySweep,
        std::make_shared<LetStmt>(rows.var, castTo(rowType, rowAt(edgeRow)), secondBody));
    edges = std::make_shared<LetStmt>(
        prefix + ".count", countValue,
        std::make_shared<LetStmt>(prefix + ".edge_row", edgeValue, edges));
    for (size_t d = one.loops.size(); d-- > 1;) {
      const For &loop = *one.loops[d];
      edges = std::make_shared<For>(loop.var, loop.min, loop.extent, ForKind::Parallel, 0, edges,
                                    loop.source);
    }
    edges = std::make_shared<For>(prefix + ".edge", makeI64(0), twoLags, ForKind::Parallel, 0,
                                  edges, source);
    edges = std::make_shared<For>(prefix + ".chunk", makeI64(0), chunks, ForKind::Parallel, 0,
                                  edges, source);

    Expr chunkRowsValue = maxOf(div(add(rowCount, makeI64(kChunks - 1)), makeI64(kChunks)),
                                makeI64(kMinChunkLags * lag));
    Expr chunksValue = div(add(rowCount, sub(chunkRows, makeI64(1))), chunkRows);
    return std::make_shared<LetStmt>(
        prefix + ".chunk_rows", chunkRowsValue,
        std::make_shared<LetStmt>(prefix + ".chunks", chunksValue, makeBlock({sweeps, edges})));
  }

  const ReorderableAccesses &reorderable_;
  const RemarkReporter &remarks_;
};

} // namespace

Function fuseWithLag(Function function, const RemarkReporter &remarks) {
  ReorderableAccesses reorderable(function);
  function.body = LagFuser(reorderable, remarks).mutate(function.body);
  return function;
}

} // namespace loopc::passes
