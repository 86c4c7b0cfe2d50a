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
// The column is walked in the loop the CPU runs as vector lanes: the
// innermost parallel loop that map_to_gpu maps, or a serial loop inside it
// that stays inside each thread (by the thread nest's own test,
// gathersAcrossThreads: syr2k's j, along which C[i][j] streams in each
// thread). An access qualifies in two ways:
//  - the loop directly around it is the lanes' loop and moves exactly one
//    of its leading indices, by 1 or -1, and not its last one (A[j][k]
//    above);
//  - it runs along a serial loop directly around it, inside the lanes'
//    loop, but across the lanes down a column (`C[i][j] += A[i][k] *
//    B[j][k]`, j the lanes: each thread a dot product of rows), and such
//    accesses alone keep that loop inside each thread: read from copies
//    along the lanes, they let the CPU run the loop with the lanes inside
//    it, as gemm's B[k][j] (A times B's transpose many times faster:
//    docs/benchmarks.md, CPU history).
// Either way its indices are affine, its last index moves with some loop of
// the nest (the nest sweeps rows, not one column), and some loop of the nest
// moves none of its indices (every element is read again at each of that
// loop's iterations: the copy, one read and one write per element, costs
// less than the column walks it saves). The leading dimension and the last
// trade places in the copy, so the access runs along the copy's rows; the
// other accesses of the array (A[i][k] above) keep reading the original. The
// copy is a parfor nest of its own, which the rest of the pipeline compiles
// as any transpose (tiles of blocks). The pass runs before jam_serial_chains,
// which would otherwise take the dot products of rows 4 points a thread.
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

// The loops of a nest: which are parallel (and of those, which map_to_gpu
// maps: bounds that read no loop of the nest) and which serial (For loops; a
// reduction's are neither), and the trip counts known.
struct NestLoops {
  std::set<std::string> parallel, mapped, serial;
  std::map<std::string, int64_t> constantExtents;
};

NestLoops loopsOf(const Stmt &nest) {
  class Finder : public IRVisitor {
  public:
    NestLoops loops;
    std::map<std::string, std::set<std::string>> parallelBoundsRead;

  protected:
    void visitFor(const For &loop) override {
      if (loop.forKind == ForKind::Parallel) {
        loops.parallel.insert(loop.var);
        std::set<std::string> &read = parallelBoundsRead[loop.var];
        for (const Expr &bound : {loop.min, loop.extent})
          read.merge(freeVars(bound));
      }
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
  std::set<std::string> nestLoops = boundNames(nest);
  for (const auto &[var, read] : finder.parallelBoundsRead)
    if (std::ranges::none_of(read,
                             [&](const std::string &name) { return nestLoops.contains(name); }))
      finder.loops.mapped.insert(var);
  return finder.loops;
}

// The loop the CPU runs as vector lanes around an access: the innermost
// parallel loop map_to_gpu maps (a triangle's inner parfor runs serially in
// each thread), if any.
std::optional<std::string> lanesAround(const BufferAccess &access, const NestLoops &loops) {
  auto lanes =
      std::ranges::find_if(access.enclosingLoops.rbegin(), access.enclosingLoops.rend(),
                           [&](const std::string &loop) { return loops.mapped.contains(loop); });
  if (lanes == access.enclosingLoops.rend())
    return std::nullopt;
  return *lanes;
}

// Whether the loop over `var`, directly around an access, is the loop the
// CPU runs as vector lanes there. The lanes' own loop is; a serial loop
// inside it (or a parfor run serially) is when it stays inside its thread,
// which the CPU decides by the same test (gathersAcrossThreads,
// codegen/CpuThreadNest.h: syr2k's j, along which C[i][j] streams in each
// thread); otherwise the threads run inside it as the lanes, and an access
// that is a column along it is one element shared by the lanes or a gather
// across them (gemm's B[k][j] with k serial and j parallel is a row across
// them). A reduction's loop is vectorized or not by interleave_reductions,
// from the accesses' strides: a copy would change that choice (trmm's
// A[k][i] over k, several times slower).
bool runsAsLanes(const std::string &var, const std::vector<BufferAccess> &accesses,
                 const NestLoops &loops, const std::string &lanes) {
  if (var == lanes)
    return true;
  bool serialInThread = loops.serial.contains(var) || loops.parallel.contains(var);
  return serialInThread && gathersAcrossThreads(accesses, var, lanes);
}

bool affineLoad(const BufferAccess &access) {
  return !access.isStore && access.indices.size() >= 2 && !access.enclosingLoops.empty() &&
         access.buffer->memory == MemorySpace::Global &&
         std::ranges::all_of(access.indices, &AffineIndex::isAffine);
}

// The one leading dimension whose index moves with `loop`, by 1 or -1, when
// no other index moves with it (the last one included).
std::optional<size_t> leadingDimensionAlong(const BufferAccess &access, const std::string &loop) {
  if (access.indices.back().dependsOn(loop))
    return std::nullopt;
  std::optional<size_t> walked;
  for (size_t d = 0; d + 1 < access.indices.size(); ++d) {
    if (!access.indices[d].dependsOn(loop))
      continue;
    int64_t coefficient = access.indices[d].coefficient(loop);
    if (walked || (coefficient != 1 && coefficient != -1))
      return std::nullopt;
    walked = d;
  }
  return walked;
}

// A column an access walks in the lanes: its dimension that trades places
// with the last in the copy, and the loop along which it is walked.
struct Walk {
  size_t dimension;
  std::string along;
};

// Where `access` walks a column in the loop directly around it, and that
// loop runs as the lanes (see the file comment; reuse aside).
std::optional<Walk> columnWalked(const BufferAccess &access,
                                 const std::vector<BufferAccess> &accesses,
                                 const NestLoops &loops) {
  std::optional<std::string> lanes = lanesAround(access, loops);
  const std::string &innermost = access.enclosingLoops.back();
  if (!affineLoad(access) || !lanes || !runsAsLanes(innermost, accesses, loops, *lanes))
    return std::nullopt;
  if (std::optional<size_t> walked = leadingDimensionAlong(access, innermost))
    return Walk{*walked, innermost};
  return std::nullopt;
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

// The accesses that read along rows in a serial loop inside the lanes'
// loop but across the lanes down a column (`B[j][k]` for k serial, j the
// lanes: a dot product of rows per thread), when they alone keep that loop
// inside each thread: read from copies whose rows run along the lanes, they
// let the CPU run the loop with the lanes inside it, as gemm's B[k][j].
// Only accesses that get a copy count (an array the nest does not write,
// read again, sweeping rows): one left in place keeps the loop in its
// thread, and the others' copies would then only stride along it.
std::map<const BufferAccess *, Walk> walksAcrossLanes(const std::vector<BufferAccess> &accesses,
                                                      const NestLoops &loops,
                                                      const std::set<const BufferInfo *> &written) {
  std::map<std::pair<std::string, std::string>, std::vector<const BufferAccess *>> byLoops;
  std::map<const BufferAccess *, size_t> dimensions;
  for (const BufferAccess &access : accesses) {
    std::optional<std::string> lanes = lanesAround(access, loops);
    const std::string &innermost =
        access.enclosingLoops.empty() ? std::string() : access.enclosingLoops.back();
    if (!affineLoad(access) || !lanes || !loops.serial.contains(innermost) ||
        strideAlong(access, innermost).kind != Stride::Kind::Contiguous ||
        written.contains(access.buffer.get()) || !sweepsRows(access) || !reusingLoop(access, loops))
      continue;
    if (std::optional<size_t> walked = leadingDimensionAlong(access, *lanes)) {
      byLoops[{innermost, *lanes}].push_back(&access);
      dimensions[&access] = *walked;
    }
  }
  std::map<const BufferAccess *, Walk> walks;
  for (const auto &[loopPair, walking] : byLoops) {
    const auto &[serial, lanes] = loopPair;
    std::vector<BufferAccess> others;
    for (const BufferAccess &access : accesses)
      if (std::ranges::find(walking, &access) == walking.end())
        others.push_back(access);
    if (gathersAcrossThreads(others, serial, lanes))
      continue; // the loop stays in its thread whatever the copies
    for (const BufferAccess *access : walking)
      walks[access] = Walk{dimensions.at(access), lanes};
  }
  return walks;
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
    // Per array, the qualifying loads of each walked dimension, and the
    // loop along which each walks.
    struct Walking {
      const BufferAccess *access;
      std::string along;
    };
    std::map<const BufferInfo *, std::map<size_t, std::vector<Walking>>> walks;
    std::map<const BufferAccess *, Walk> acrossLanes = walksAcrossLanes(accesses, loops, written);
    for (const BufferAccess &access : accesses) {
      std::optional<Walk> walked = columnWalked(access, accesses, loops);
      if (auto across = acrossLanes.find(&access); !walked && across != acrossLanes.end())
        walked = across->second;
      if (!walked)
        continue;
      std::string array = access.buffer->nameInMessages();
      std::string along = remarks_.programName(walked->along);
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
      walks[access.buffer.get()][walked->dimension].push_back({&access, walked->along});
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
      for (const Walking &walking : most->second)
        copy.loads.insert(walking.access->load);
      copy.transposed = transposedBuffer(*access.buffer, copy.walked);
      order.push_back(access.buffer);
      const Walking &first = most->second.front();
      remarks_.applied(first.access->source,
                       "'" + access.buffer->nameInMessages() + "' read down a column along " +
                           remarks_.programName(first.along) + ", again at each iteration over " +
                           remarks_.programName(*reusingLoop(*first.access, loops)) +
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
