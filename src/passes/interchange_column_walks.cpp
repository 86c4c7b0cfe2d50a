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
// On 2 cores PolyBench's covariance and correlation (at 1200 x 1400) ran
// 13-15x faster.
//
// Why it is legal: the iterations of a parfor are independent (the checker
// rejects races), so they may run in any order, statement by statement
// (fission) and iteration by iteration of the serial loop (interchange). Each
// j still runs its own statements in their order, and its serial loop's
// iterations in increasing order, only interleaved with other j's: every
// float sum adds the same terms in the same order, so the result is the same
// bit for bit, not reassociated.
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

#include <algorithm>
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

class ColumnWalkInterchanger : public IRMutator {
public:
  explicit ColumnWalkInterchanger(const RemarkReporter &remarks) : remarks_(remarks) {}

protected:
  Stmt visitFor(const For &node, const Stmt &self) override {
    if (node.forKind != ForKind::Parallel)
      return IRMutator::visitFor(node, self);
    // A nest is looked at from its outermost parallel loop; the parfors in
    // its body run serially in a thread and are left alone.
    std::vector<const For *> chain{&node};
    while (const auto *inner = chain.back()->body->as<For>()) {
      if (inner->forKind != ForKind::Parallel)
        break;
      chain.push_back(inner);
    }
    if (chain.size() < 2)
      return self;
    std::optional<Stmt> inner = interchange(chain);
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
  // The innermost loop of `chain` distributed over its statements and moved
  // inside the serial loops that walk columns along it, or none.
  std::optional<Stmt> interchange(const std::vector<const For *> &chain) const {
    const For &parallel = *chain.back();
    std::vector<Stmt> stmts;
    bool bindsNames = false;
    flattenScopes(parallel.body, stmts, bindsNames);

    std::vector<BufferAccess> accesses = collectAccesses(chain[chain.size() - 2]->body);
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
    std::set<std::string> outer;
    for (size_t i = 0; i + 1 < chain.size(); ++i)
      outer.insert(chain[i]->var);
    if (!usesAnyVar(parallel.min, outer) && !usesAnyVar(parallel.extent, outer)) {
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

  const RemarkReporter &remarks_;
};

} // namespace

Function interchangeColumnWalks(Function function, const RemarkReporter &remarks) {
  function.body = ColumnWalkInterchanger(remarks).mutate(function.body);
  return function;
}

} // namespace loopc::passes
