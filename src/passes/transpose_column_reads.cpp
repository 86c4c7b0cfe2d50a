// transpose_column_reads (CPU): an array a parfor nest reads down a column
// in its innermost loop, and reads again at every iteration of another of its
// loops, is read from a transposed copy made just before the nest. PolyBench's
// syr2k, as written (`parfor i { for k { for j in 0..i + 1 { C[i][j] +=
// A[j][k] * alpha * B[i][k] + B[j][k] * alpha * A[i][k] } } }`), walks
// A[j][k] and B[j][k] along j, a row of M elements apart: each step a new
// cache line, fetched again for every i. With the copies the inner loop
// streams along rows and vectorizes, as gemm's does:
//
//   parallel for i in [0, N) {                  A.transposed[M][N] = A's transpose
//     for k in [0, M) {                          B.transposed[M][N] = B's transpose
//       for j in [0, i + 1) {                    parallel for i in [0, N) {
//         C[i][j] += A[j][k] * .. B[j][k] ..       for k in [0, M) {
//   }}}                                              for j in [0, i + 1) {
//                                                      C[i][j] += A.transposed[k][j] * ..
//
// An access qualifies when its indices are affine, the loop directly around
// it (a For or a reduction's loop) moves exactly one of its leading indices,
// by 1 or -1, and not its last one, its last index moves with some loop of
// the nest (the nest sweeps rows, not one column), and some loop of the nest
// moves none of its indices (every element is read again at each of that
// loop's iterations: the copy, one read and one write per element, costs
// less than the column walks it saves). That leading dimension and the last
// trade places in the copy, so the access runs along the copy's rows; the
// other accesses of the array (A[i][k] above) keep reading the original. The
// copy is a parfor nest of its own, which the rest of the pipeline compiles
// as any transpose (tiles of blocks).
//
// Why it is exact: the array is not written in the nest (the pass declines
// otherwise), and the copy is taken right before it, so every element of the
// copy equals the original's element it replaces.
//
// Declined (a remark): a column walk in an array the nest writes, or one
// read once. Left out under --bounds-check (a failing index would name the
// copy), and on the GPU, where stage_shared reads columns through shared
// memory.
#include "passes/Passes.h"

#include "ir/IRVisitor.h"
#include "passes/analysis/AccessAnalysis.h"

#include <algorithm>
#include <map>
#include <set>

namespace loopc::passes {

using namespace loopc::ir;
using ir::Expr; // not the AST's
using ir::Stmt;

namespace {

// The loops of a nest: which are parallel and which serial (For loops;
// a reduction's are neither), and the trip counts known.
struct NestLoops {
  std::set<std::string> parallel, serial;
  std::map<std::string, int64_t> constantExtents;
};

NestLoops loopsOf(const Stmt &nest) {
  class Finder : public IRVisitor {
  public:
    NestLoops loops;

  protected:
    void visitFor(const For &loop) override {
      if (loop.forKind == ForKind::Parallel)
        loops.parallel.insert(loop.var);
      if (loop.forKind == ForKind::Serial)
        loops.serial.insert(loop.var);
      note(loop.var, loop.extent);
      IRVisitor::visitFor(loop);
    }
    void visitReduce(const Reduce &reduce) override {
      for (const Reduce::Loop &loop : reduce.loops)
        note(loop.var, loop.extent);
      IRVisitor::visitReduce(reduce);
    }

  private:
    void note(const std::string &var, const Expr &extent) {
      if (const auto *constant = extent->as<IntImm>())
        loops.constantExtents[var] = constant->value;
    }
  } finder;
  finder.visit(nest);
  return finder.loops;
}

// Whether the loop over `var`, directly around an access, is the loop the
// CPU runs as vector lanes there. The innermost parallel loop is; a serial
// loop inside it is when it stays inside its thread, which the CPU decides
// by the same test (gathersAcrossThreads, codegen/CpuThreadNest.h: syr2k's
// j, along which C[i][j] streams in each thread); otherwise the threads run
// inside it as the lanes, and an access that is a column along it is one
// element shared by the lanes or a gather across them (gemm's B[k][j] with k
// serial and j parallel is a row across them). A reduction's loop is
// vectorized or not by interleave_reductions, from the accesses' strides:
// a copy would change that choice (trmm's A[k][i] over k, 5x slower).
bool runsAsLanes(const std::string &var, const std::vector<BufferAccess> &accesses,
                 const NestLoops &loops, const std::string &innermostParallel) {
  if (var == innermostParallel)
    return true;
  return loops.serial.contains(var) && gathersAcrossThreads(accesses, var, innermostParallel);
}

// The leading dimension along which `access` walks a column in the loop
// directly around it, if it does (see the file comment; reuse aside).
std::optional<size_t> columnWalked(const BufferAccess &access,
                                   const std::vector<BufferAccess> &accesses,
                                   const NestLoops &loops) {
  size_t rank = access.indices.size();
  if (access.isStore || rank < 2 || access.enclosingLoops.empty() ||
      access.buffer->memory != MemorySpace::Global)
    return std::nullopt;
  if (!std::ranges::all_of(access.indices, &AffineIndex::isAffine))
    return std::nullopt;
  auto parallel =
      std::ranges::find_if(access.enclosingLoops.rbegin(), access.enclosingLoops.rend(),
                           [&](const std::string &loop) { return loops.parallel.contains(loop); });
  const std::string &innermost = access.enclosingLoops.back();
  if (parallel == access.enclosingLoops.rend() ||
      !runsAsLanes(innermost, accesses, loops, *parallel))
    return std::nullopt;
  if (access.indices.back().dependsOn(innermost))
    return std::nullopt;
  std::optional<size_t> walked;
  for (size_t d = 0; d + 1 < rank; ++d) {
    if (!access.indices[d].dependsOn(innermost))
      continue;
    int64_t coefficient = access.indices[d].coefficient(innermost);
    if (walked || (coefficient != 1 && coefficient != -1))
      return std::nullopt;
    walked = d;
  }
  return walked;
}

// Below this many iterations of the loop that reads them again, the copy
// of the elements costs about what the column walks do.
const int64_t kMinReuse = 8;

// A loop of the nest that moves none of `access`'s indices and runs often
// enough to pay for the copy (or whose trip count is a size), if any.
std::optional<std::string> reusingLoop(const BufferAccess &access, const NestLoops &loops) {
  for (const std::string &loop : access.enclosingLoops) {
    auto extent = loops.constantExtents.find(loop);
    if (extent != loops.constantExtents.end() && extent->second < kMinReuse)
      continue;
    if (std::ranges::none_of(access.indices,
                             [&](const AffineIndex &index) { return index.dependsOn(loop); }))
      return loop;
  }
  return std::nullopt;
}

bool sweepsRows(const BufferAccess &access) {
  return std::ranges::any_of(access.enclosingLoops, [&](const std::string &loop) {
    return access.indices.back().dependsOn(loop);
  });
}

// `indices` with dimension `walked` and the last one traded.
std::vector<Expr> traded(std::vector<Expr> indices, size_t walked) {
  std::swap(indices[walked], indices.back());
  return indices;
}

// The copies one nest reads: per array, the dimension its copy trades with
// the last, and the loads reading the copy.
struct Copy {
  size_t walked = 0;
  std::set<const Load *> loads;
  Buffer transposed;
};

class ReadsRetargeted : public IRMutator {
public:
  explicit ReadsRetargeted(const std::map<const BufferInfo *, Copy> &copies) : copies_(copies) {}

protected:
  Expr visitLoad(const Load &node, const Expr &self) override {
    Expr mutated = IRMutator::visitLoad(node, self);
    auto copy = copies_.find(node.buffer.get());
    if (copy == copies_.end() || !copy->second.loads.contains(&node))
      return mutated;
    const auto &load = *mutated->as<Load>();
    return std::make_shared<Load>(copy->second.transposed,
                                  traded(load.indices, copy->second.walked), load.source);
  }

private:
  const std::map<const BufferInfo *, Copy> &copies_;
};

class ColumnReadsTransposed : public IRMutator {
public:
  explicit ColumnReadsTransposed(const RemarkReporter &remarks) : remarks_(remarks) {}

protected:
  Stmt visitFor(const For &node, const Stmt &self) override {
    if (node.forKind != ForKind::Parallel)
      return IRMutator::visitFor(node, self);
    return transposedReads(self); // a nest: its inner parfors are part of it
  }

private:
  Stmt transposedReads(const Stmt &nest) {
    std::vector<BufferAccess> accesses = collectAccesses(nest);
    NestLoops loops = loopsOf(nest);
    std::set<const BufferInfo *> written;
    for (const BufferAccess &access : accesses)
      if (access.isStore)
        written.insert(access.buffer.get());
    // Per array, the qualifying loads of each walked dimension.
    std::map<const BufferInfo *, std::map<size_t, std::vector<const BufferAccess *>>> walks;
    for (const BufferAccess &access : accesses) {
      std::optional<size_t> walked = columnWalked(access, accesses, loops);
      if (!walked)
        continue;
      std::string array = access.buffer->nameInMessages();
      std::string along = remarks_.programName(access.enclosingLoops.back());
      if (written.contains(access.buffer.get())) {
        remarks_.declined(access.source, "'" + array + "' read down a column along " + along +
                                             ": no transposed copy, the nest writes it");
        continue;
      }
      if (!sweepsRows(access))
        continue; // one column: a copy would move the whole array for it
      if (!reusingLoop(access, loops)) {
        remarks_.declined(access.source, "'" + array + "' read down a column along " + along +
                                             ": no transposed copy, each element is read once");
        continue;
      }
      walks[access.buffer.get()][*walked].push_back(&access);
    }
    if (walks.empty())
      return nest;

    std::map<const BufferInfo *, Copy> copies;
    std::vector<Buffer> order; // arrays in the order of their first walk
    for (const BufferAccess &access : accesses) {
      auto walk = walks.find(access.buffer.get());
      if (walk == walks.end() || copies.contains(walk->first))
        continue;
      // The dimension most of the array's walks move (the first on a tie).
      auto most = std::ranges::max_element(walk->second, [](const auto &a, const auto &b) {
        return a.second.size() < b.second.size();
      });
      Copy &copy = copies[walk->first];
      copy.walked = most->first;
      for (const BufferAccess *walking : most->second)
        copy.loads.insert(walking->load);
      copy.transposed = transposedBuffer(*access.buffer, copy.walked);
      order.push_back(access.buffer);
      const BufferAccess &first = *most->second.front();
      remarks_.applied(first.source, "'" + access.buffer->nameInMessages() +
                                         "' read down a column along " +
                                         remarks_.programName(first.enclosingLoops.back()) +
                                         ", again at each iteration over " +
                                         remarks_.programName(*reusingLoop(first, loops)) +
                                         ": read from a copy transposed before the nest, "
                                         "along its rows");
    }

    Stmt result = ReadsRetargeted(copies).mutate(nest);
    std::vector<Stmt> copyNests;
    for (const Buffer &array : order)
      copyNests.push_back(copyNest(array, copies.at(array.get())));
    result = makeBlock({makeBlock(std::move(copyNests)), result});
    for (auto array = order.rbegin(); array != order.rend(); ++array)
      result = std::make_shared<Allocate>(copies.at(array->get()).transposed, result);
    return result;
  }

  Buffer transposedBuffer(const BufferInfo &array, size_t walked) {
    auto copy = std::make_shared<BufferInfo>(array);
    int made = ++made_[array.name];
    copy->name = array.name + ".transposed" + (made > 1 ? std::to_string(made) : "");
    copy->programName = array.nameInMessages();
    copy->shape = traded(array.shape, walked);
    copy->isParameter = false;
    copy->isWritten = true;
    return copy;
  }

  // parallel for t0, ..., t(r-1) over the copy's shape:
  //   copy[t0]..[t(r-1)] = array[t with `walked` and the last traded]
  Stmt copyNest(const Buffer &array, const Copy &copy) {
    std::vector<Expr> indices;
    for (size_t d = 0; d < copy.transposed->shape.size(); ++d)
      indices.push_back(makeVar(ScalarType::I64, copy.transposed->name + ".t" + std::to_string(d)));
    Stmt body = std::make_shared<Store>(
        copy.transposed, indices, std::make_shared<Load>(array, traded(indices, copy.walked)));
    for (size_t d = copy.transposed->shape.size(); d-- > 0;)
      body = std::make_shared<For>(indices[d]->as<Var>()->name, makeI64(0),
                                   toI64(copy.transposed->shape[d]), ForKind::Parallel, 0, body);
    return body;
  }

  const RemarkReporter &remarks_;
  std::map<std::string, int> made_; // copies made so far of each array, for unique names
};

} // namespace

Function transposeColumnReads(Function function, const RemarkReporter &remarks) {
  function.body = ColumnReadsTransposed(remarks).mutate(function.body);
  return function;
}

} // namespace loopc::passes
