// Lowering reductions that share their loops (see ReductionGroups.h).
#include "passes/lowering/ReductionGroups.h"

#include "ir/IRVisitor.h"
#include "passes/lowering/ReductionTrees.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <set>

namespace loopc::passes {

using namespace loopc::ir;
using ir::Expr; // not the AST's
using ir::Stmt;

namespace {

constexpr int64_t kThreads = kReductionThreads;

// The first kernel's grid: a block per kThreads * kPointsPerThread* points, at
// most kMaxBlocks* (the partials the second kernel combines). On the GPU the
// blocks of a large reduction must come in many waves, so that the last,
// partial wave is a small part of the time: 1024 blocks of 256 threads at 40
// registers were 1.29 waves of an H100 (6 blocks per SM), and the 232 blocks
// of the second wave ran with most of the device idle (dot over 2^28 well
// below DRAM bandwidth and torch.dot; Nsight Compute, docs/benchmarks.md).
// 16384 blocks are 20 waves there; one block reads their partials in a few
// microseconds. The CPU runs blocks as tasks of its thread pool, where fewer
// are cheaper: a block's tree and partial cost many times what a block of
// 256 points (one a thread) spends on its sums (a sum of 256000 floats took
// several times as long a point as at 64 points a thread).
constexpr int64_t kPointsPerThreadGpu = 4;
// On the GPU, a group whose operators do not all commute walks its range in
// order, each thread a contiguous chunk of it. Read by the thread that folds
// it, a chunk's elements reach a warp's 32 lanes 32 sectors apart: the
// load/store unit, replaying every access once per sector, kept sum_and_max
// over 2^28 floats at about a third of the copy rate on an H100
// (docs/benchmarks.md, GPU history). So the chunks are walked a piece of
// kOrderedPiece points at a time: the block computes the values of its
// threads' pieces with the lanes of a warp on 4 pieces' consecutive points
// (one sector each), hands them over in shared memory, and each thread
// folds its own piece there, in order. Chunks are whole pieces; a piece per
// thread is the least a thread walks.
constexpr int64_t kOrderedPiece = 8;
// Such a walk's grid is at most this many blocks per SM of the GPU: whole
// waves where an SM holds 1, 2, 4, 8 or 16 of them, so that its blocks, each
// walking equal chunks, end together; few partials for the second kernel,
// which reads each thread's chunk of them in order, uncoalesced.
constexpr int64_t kOrderedBlocksPerSM = 16;
constexpr int64_t kPointsPerThreadCpu = 64;
constexpr int64_t kMaxBlocksGpu = 16384;
constexpr int64_t kMaxBlocksCpu = 1024;

// On the CPU, a whole-array reduction of at most this many IR operations
// (points times pointSize) runs as a loop in the host code rather than as a
// tree over the cores, in both versions chosen at run time: its two kernels
// cost far more than the loop (a sum of products of 1000 floats inside a
// serial loop took about a tenth of the tree's time as a loop), and the loop
// was not slower than the tree on 2 cores up to 64000 points of 7
// operations, where 2^17 operations are about 18700 points.
constexpr int64_t kSerialReductionWork = int64_t(1) << 17;

// The loops of `reduce` from `first` on around `body`, serial.
Stmt serialLoops(const Reduce &reduce, size_t first, Stmt body) {
  for (size_t i = reduce.loops.size(); i-- > first;) {
    const Reduce::Loop &loop = reduce.loops[i];
    body = std::make_shared<For>(loop.var, loop.min, loop.extent, ForKind::Serial, 0, body,
                                 reduce.source);
  }
  return body;
}

// Each member's `cell = combine(cell, value)` at every point of the loops
// from `first` on (the first member's), with its value setup around it.
Stmt accumulateInto(const std::vector<GroupMember> &group, size_t first,
                    const std::vector<Buffer> &cells) {
  std::vector<Stmt> steps;
  for (size_t m = 0; m < group.size(); ++m)
    steps.push_back(appendAtTail(
        group[m].valueSetup,
        reductionStep(group[m].reduce->op, group[m].reduce->neutral, cells[m], group[m].value)));
  return serialLoops(*group.front().reduce, first, makeBlock(steps));
}

// A loop's extent as an i64 count of points: not negative.
Expr nonNegative(const Expr &extent) { return maxOf(toI64(extent), makeI64(0)); }

// How many of `reduce`'s loops, from the outermost, have bounds that use no
// variable of the loops before them (at least one).
size_t rectangularLoops(const Reduce &reduce) {
  std::set<std::string> outer;
  size_t count = 0;
  for (const Reduce::Loop &loop : reduce.loops) {
    if (count > 0 && (usesAnyVar(loop.min, outer) || usesAnyVar(loop.extent, outer)))
      break;
    outer.insert(loop.var);
    ++count;
  }
  return count;
}

// The IR operations of one point of a group (IRVisitor.h's codeSize): each
// member's value setup and its combine.
int64_t pointSize(const std::vector<GroupMember> &group) {
  size_t size = 0;
  for (const GroupMember &member : group) {
    const Reduce &reduce = *member.reduce;
    Expr combined =
        applyOperator(reduce.op, load(reduce.accumulator, reduce.indices), member.value);
    size += codeSize(std::make_shared<Store>(reduce.accumulator, reduce.indices, combined));
    if (member.valueSetup)
      size += codeSize(member.valueSetup);
  }
  return static_cast<int64_t>(std::max<size_t>(1, size));
}

// Whether the group's loops have at most `most` points (a bool), when every
// loop's bounds use no variable of the loops before it and no member's value
// needs a loop of its own per point (a nested reduction), so that each point
// is a few operations: else nullopt.
std::optional<Expr> atMostPoints(const std::vector<GroupMember> &group, int64_t most) {
  const Reduce &first = *group.front().reduce;
  if (rectangularLoops(first) != first.loops.size())
    return std::nullopt;
  for (const GroupMember &member : group)
    if (member.valueSetup && containsLoopOf(member.valueSetup, ForKind::Serial))
      return std::nullopt;
  // Each factor and product clamped to most + 1: no product can overflow.
  Expr beyond = makeI64(most + 1);
  Expr points;
  for (const Reduce::Loop &loop : first.loops) {
    Expr extent = minOf(nonNegative(loop.extent), beyond);
    points = points ? minOf(mul(points, extent), beyond) : extent;
  }
  return lessOrEqual(points, makeI64(most));
}

// On the CPU, block `block` of `grid` walks a contiguous range of the
// `extent` points, its kThreads threads interleaved (consecutive threads,
// which the CPU runs as vector lanes, at consecutive points): a thread
// striding over the whole grid read 1 KB, then jumped by the grid's span,
// which the cores' prefetchers did not follow (a sum over 2^24 floats took
// about twice as long a point as a loop along the array).
ThreadWalk blockWalk(const Expr &block, const Expr &thread, const Expr &grid, const Expr &extent) {
  Expr threads = makeI64(kThreads);
  Expr perBlock =
      mul(div(add(div(add(extent, sub(grid, makeI64(1))), grid), makeI64(kThreads - 1)), threads),
          threads);
  Expr start = mul(block, perBlock);
  Expr blockPoints = minOf(perBlock, sub(extent, start));
  return {add(start, thread), threads, stridedTripCount(thread, blockPoints, threads)};
}

// `stmt` inside an Allocate of each buffer.
Stmt allocating(const std::vector<Buffer> &buffers, Stmt stmt) {
  for (size_t i = buffers.size(); i-- > 0;)
    stmt = std::make_shared<Allocate>(buffers[i], stmt);
  return stmt;
}

// gpu_block.x for block in [0, blocks) { shared tiles; gpu_thread.x for
// thread in [0, 256) { body } }
Stmt gpuLoops(const std::string &blockVar, Expr blocks, const std::string &threadVar,
              const std::vector<Buffer> &tiles, Stmt body, SourceRange source) {
  Stmt threadLoop = std::make_shared<For>(threadVar, makeI64(0), makeI64(kThreads),
                                          ForKind::GpuThread, 0, body, source);
  return std::make_shared<For>(blockVar, makeI64(0), blocks, ForKind::GpuBlock, 0,
                               allocating(tiles, threadLoop), source);
}

} // namespace

Stmt ReductionPlacement::visitFor(const For &node, const Stmt &self) {
  bool parallel = node.forKind != ForKind::Serial;
  parallelDepth_ += parallel;
  Stmt result = IRMutator::visitFor(node, self);
  parallelDepth_ -= parallel;
  return result;
}

Stmt ReductionPlacement::visitReduce(const Reduce &node, const Stmt &self) {
  ++parallelDepth_;
  Stmt result = IRMutator::visitReduce(node, self);
  --parallelDepth_;
  return result;
}

GroupMember renamedLoops(GroupMember member, const Reduce &first) {
  std::map<std::string, Expr> renames;
  for (size_t i = 0; i < first.loops.size(); ++i)
    renames[member.reduce->loops[i].var] = makeVar(first.loops[i].min->type, first.loops[i].var);
  member.valueSetup = member.valueSetup ? substitute(member.valueSetup, renames) : nullptr;
  member.value = substitute(member.value, renames);
  return member;
}

std::string ReductionGroupLowering::fresh(const std::string &base) {
  return prefix_ + base + std::to_string(counter_++);
}

Stmt ReductionGroupLowering::serial(const std::vector<GroupMember> &group) {
  std::vector<Buffer> cells, allocated;
  std::vector<Stmt> before, after;
  for (const GroupMember &member : group) {
    const Buffer &accumulator = member.reduce->accumulator;
    if (accumulator->memory == MemorySpace::Register && accumulator->shape.empty()) {
      cells.push_back(accumulator);
      continue;
    }
    Buffer cell = makeBuffer(fresh("acc.reg"), accumulator->element, {}, MemorySpace::Register);
    cells.push_back(cell);
    allocated.push_back(cell);
    before.push_back(store(cell, {}, load(accumulator, member.reduce->indices)));
    after.push_back(store(accumulator, member.reduce->indices, load(cell)));
  }
  std::vector<Stmt> body = before;
  body.push_back(accumulateInto(group, 0, cells));
  body.insert(body.end(), after.begin(), after.end());
  return allocating(allocated, makeBlock(body));
}

Stmt ReductionGroupLowering::tree(const std::vector<GroupMember> &group) {
  Stmt kernels = treeKernels(group);
  if (forGpu_)
    return kernels;
  std::optional<Expr> few = atMostPoints(group, kSerialReductionWork / pointSize(group));
  if (!few)
    return kernels;
  return std::make_shared<IfThenElse>(*few, serial(group), kernels);
}

Stmt ReductionGroupLowering::treeKernels(const std::vector<GroupMember> &group) {
  std::string prefix = fresh("red");
  const Reduce &first = *group.front().reduce;
  const Reduce::Loop &outer = first.loops.front();
  ScalarType loopType = outer.min->type;
  size_t walked = forGpu_ ? rectangularLoops(first) : 1;
  Expr extent = outer.extent->type == ScalarType::I64
                    ? outer.extent
                    : std::make_shared<Cast>(ScalarType::I64, outer.extent);
  if (walked > 1) {
    extent = nonNegative(outer.extent);
    for (size_t k = 1; k < walked; ++k)
      extent = mul(extent, nonNegative(first.loops[k].extent));
  }
  Expr threads = makeI64(kThreads);

  // Kernel 1: per-thread partial folds, per-block trees, one partial per
  // block and member.
  // A user's operator keeps the range's order: each thread of the grid folds
  // a contiguous chunk, and the trees pair neighbours.
  bool inOrder = !std::ranges::all_of(
      group, [](const GroupMember &member) { return commutes(member.reduce->op); });
  bool inPieces = walksInPieces(first, inOrder);
  std::string gridVar = prefix + ".grid";
  Expr grid = makeVar(ScalarType::I64, gridVar);
  int64_t pointsPerBlock = kThreads * (inPieces  ? kOrderedPiece
                                       : forGpu_ ? kPointsPerThreadGpu
                                                 : kPointsPerThreadCpu);
  // On the CPU a block walks outer indices, each of which may be a whole
  // inner range: the grid counts the points of the leading rectangular
  // loops, at most a block per outer index. (Counting the outer loop alone
  // ran a sum over 3000^3 points as one block, on one core, which an
  // interrupt could not stop before its end.)
  Expr gridPoints = extent;
  Expr maxBlocks = makeI64(inPieces  ? kOrderedBlocksPerSM * multiprocessors_
                           : forGpu_ ? kMaxBlocksGpu
                                     : kMaxBlocksCpu);
  if (size_t rectangular = rectangularLoops(first); !forGpu_ && rectangular > 1) {
    gridPoints = nonNegative(outer.extent);
    for (size_t k = 1; k < rectangular; ++k)
      gridPoints = mul(gridPoints, nonNegative(first.loops[k].extent));
    maxBlocks = minOf(maxBlocks, nonNegative(outer.extent));
  }
  Expr gridValue = maxOf(
      minOf(div(add(gridPoints, makeI64(pointsPerBlock - 1)), makeI64(pointsPerBlock)), maxBlocks),
      makeI64(1));
  Expr block = makeVar(ScalarType::I64, prefix + ".block");
  Expr thread = makeVar(ScalarType::I64, prefix + ".thread");

  // Per member: its partials, its per-thread register and its tile (a
  // member's index in its names when there are several).
  std::vector<Buffer> partials, parts, tiles;
  for (size_t m = 0; m < group.size(); ++m) {
    std::string suffix = group.size() > 1 ? std::to_string(m) : "";
    ScalarType element = group[m].reduce->accumulator->element;
    partials.push_back(
        makeBuffer(prefix + ".partials" + suffix, element, {grid}, MemorySpace::Global));
    parts.push_back(makeBuffer(prefix + ".part" + suffix, element, {}, MemorySpace::Register));
    tiles.push_back(makeBuffer(prefix + ".tile" + suffix, element, {threads}, MemorySpace::Shared));
  }
  std::vector<Stmt> publish;
  std::vector<std::pair<ReduceOperator, Buffer>> halving;
  auto firstThreadDoes = [](const Expr &threadIndex, Stmt stmt) {
    return std::make_shared<IfThenElse>(equal(threadIndex, makeI64(0)), stmt);
  };
  for (size_t m = 0; m < group.size(); ++m) {
    halving.push_back({group[m].reduce->op, tiles[m]});
    publish.push_back(
        firstThreadDoes(thread, store(partials[m], {block}, load(tiles[m], {makeI64(0)}))));
  }
  std::vector<Buffer> shared = tiles;
  std::string chunkVar = prefix + ".chunk";
  Stmt share;
  if (inPieces) {
    std::vector<Buffer> pieces;
    share = orderedPieces(group, parts, tiles, block, thread, extent,
                          makeVar(ScalarType::I64, chunkVar), prefix, pieces);
    shared.insert(shared.end(), pieces.begin(), pieces.end());
  } else {
    Expr gridThread = add(mul(block, threads), thread);
    ThreadWalk walk = forGpu_ || inOrder
                          ? threadWalk(gridThread, mul(grid, threads), extent, inOrder)
                          : blockWalk(block, thread, grid, extent);
    std::string stepVar = prefix + ".step";
    std::vector<Stmt> steps;
    for (size_t m = 0; m < group.size(); ++m)
      steps.push_back(store(parts[m], {}, group[m].reduce->neutral));
    if (walked > 1) {
      steps.push_back(
          flatWalk(first, walked, walk, prefix, stepVar, accumulateInto(group, walked, parts)));
    } else {
      Expr position = add(walk.first, mul(makeVar(ScalarType::I64, stepVar), walk.stride));
      Stmt pointBody = std::make_shared<LetStmt>(
          outer.var, add(outer.min, castTo(loopType, position)), accumulateInto(group, 1, parts));
      steps.push_back(std::make_shared<For>(stepVar, makeI64(0), walk.trips, ForKind::Serial, 0,
                                            pointBody, first.source));
    }
    // The per-thread register goes to the tile before its scope ends, so no
    // register value lives across a barrier.
    for (size_t m = 0; m < group.size(); ++m)
      steps.push_back(store(tiles[m], {thread}, load(parts[m])));
    share = allocating(parts, makeBlock(steps));
  }
  std::vector<Stmt> kernel1Thread = {share, std::make_shared<Barrier>()};
  kernel1Thread.push_back(treeHalving(halving, thread, inOrder));
  kernel1Thread.insert(kernel1Thread.end(), publish.begin(), publish.end());
  Stmt kernel1 = gpuLoops(prefix + ".block", grid, prefix + ".thread", shared,
                          makeBlock(kernel1Thread), first.source);

  // Kernel 2: one block folds each member's partials into its accumulator.
  std::string prefix2 = fresh("red");
  Expr thread2 = makeVar(ScalarType::I64, prefix2 + ".thread");
  std::vector<Buffer> tiles2;
  std::vector<Stmt> gather, results;
  std::vector<std::pair<ReduceOperator, Buffer>> halving2;
  for (size_t m = 0; m < group.size(); ++m) {
    const Reduce &reduce = *group[m].reduce;
    std::string suffix = group.size() > 1 ? std::to_string(m) : "";
    ScalarType element = reduce.accumulator->element;
    Buffer part2 = makeBuffer(prefix2 + ".part" + suffix, element, {}, MemorySpace::Register);
    Buffer tile2 = makeBuffer(prefix2 + ".tile" + suffix, element, {threads}, MemorySpace::Shared);
    tiles2.push_back(tile2);
    std::string stepVar2 = prefix2 + ".step" + suffix;
    ThreadWalk walk2 = threadWalk(thread2, threads, grid, inOrder);
    Expr partialIndex = add(walk2.first, mul(makeVar(ScalarType::I64, stepVar2), walk2.stride));
    gather.push_back(std::make_shared<Allocate>(
        part2,
        makeBlock({store(part2, {}, reduce.neutral),
                   std::make_shared<For>(stepVar2, makeI64(0), walk2.trips, ForKind::Serial, 0,
                                         reductionStep(reduce.op, reduce.neutral, part2,
                                                       load(partials[m], {partialIndex})),
                                         reduce.source),
                   store(tile2, {thread2}, load(part2))})));
    halving2.push_back({reduce.op, tile2});
    Expr result = applyOperator(reduce.op, load(reduce.accumulator, reduce.indices),
                                load(tile2, {makeI64(0)}));
    results.push_back(firstThreadDoes(thread2, store(reduce.accumulator, reduce.indices, result)));
  }
  std::vector<Stmt> kernel2Thread = gather;
  kernel2Thread.push_back(std::make_shared<Barrier>());
  kernel2Thread.push_back(treeHalving(halving2, thread2, inOrder));
  kernel2Thread.insert(kernel2Thread.end(), results.begin(), results.end());
  Stmt kernel2 = gpuLoops(prefix2 + ".block", makeI64(1), prefix2 + ".thread", tiles2,
                          makeBlock(kernel2Thread), first.source);

  Stmt kernels = allocating(partials, makeBlock({kernel1, kernel2}));
  if (inPieces) {
    // Each thread's chunk: its share of the range, in whole pieces.
    Expr piece = makeI64(kOrderedPiece);
    Expr perThread = ceilDiv(extent, mul(grid, threads));
    kernels = std::make_shared<LetStmt>(chunkVar, mul(ceilDiv(perThread, piece), piece), kernels);
  }
  return std::make_shared<LetStmt>(gridVar, gridValue, kernels);
}

bool ReductionGroupLowering::walksInPieces(const Reduce &first, bool inOrder) const {
  return forGpu_ && inOrder && first.loops.size() == 1;
}

void ReductionGroupLowering::reportOrderedWalk(const RemarkReporter &remarks,
                                               const Reduce &reduce) const {
  if (!walksInPieces(reduce, true)) {
    warnOrderedWalk(remarks, reduce);
    return;
  }
  remarks.applied(reduce.source,
                  "the operator '" + reduce.op.userName +
                      "' does not commute, so this reduction is walked in order: each thread "
                      "folds a contiguous chunk, " +
                      std::to_string(kOrderedPiece) +
                      " points at a time, which its block loads coalesced and hands over in "
                      "shared memory; the partials combine neighbour by neighbour");
}

// The pieces' walk (kOrderedPiece): at each step, every thread's next piece
// of kOrderedPiece points. In round r of the step, lane index q = r * 256 +
// thread computes the values of point q % kOrderedPiece of thread q /
// kOrderedPiece's piece (a warp: 4 pieces of 8 consecutive points) into
// slot q of each member's piece buffer; after a barrier each thread folds
// its own slots in order into its partial, which lives in its slot of the
// member's tile from step to step, so that no register lives across a
// barrier. The slots leave a gap after every 32, so that the lanes' stores
// in a round and their reads of their k-th points fall in different banks.
// Points past the range's end are neither computed nor folded.
Stmt ReductionGroupLowering::orderedPieces(const std::vector<GroupMember> &group,
                                           const std::vector<Buffer> &parts,
                                           const std::vector<Buffer> &tiles, const Expr &block,
                                           const Expr &thread, const Expr &extent,
                                           const Expr &chunk, const std::string &prefix,
                                           std::vector<Buffer> &pieces) {
  const Reduce &first = *group.front().reduce;
  const Reduce::Loop &loop = first.loops.front();
  Expr piece = makeI64(kOrderedPiece);
  Expr step = makeVar(ScalarType::I64, prefix + ".step");
  Expr point = makeVar(ScalarType::I64, prefix + ".point");
  Expr blockStart = mul(block, mul(makeI64(kThreads), chunk));
  // The position in the range of point `offset` of `owner`'s piece.
  auto position = [&](const Expr &owner, const Expr &offset) {
    return add(add(blockStart, mul(owner, chunk)), add(mul(step, piece), offset));
  };
  auto slot = [](const Expr &index) { return add(index, div(index, makeI64(32))); };
  for (size_t m = 0; m < group.size(); ++m)
    pieces.push_back(makeBuffer(prefix + ".pieces" + (group.size() > 1 ? std::to_string(m) : ""),
                                group[m].reduce->accumulator->element,
                                {makeI64(kThreads * kOrderedPiece * 33 / 32)},
                                MemorySpace::Shared));
  Expr inRange = lessThan(point, extent);

  std::string roundVar = prefix + ".round";
  Expr round = makeVar(ScalarType::I64, roundVar);
  Expr lane = add(mul(round, makeI64(kThreads)), thread);
  Expr owner = add(mul(round, makeI64(kThreads / kOrderedPiece)), div(thread, piece));
  std::vector<Stmt> values;
  for (size_t m = 0; m < group.size(); ++m)
    values.push_back(
        appendAtTail(group[m].valueSetup, store(pieces[m], {slot(lane)}, group[m].value)));
  Stmt atPoint = std::make_shared<LetStmt>(loop.var, add(loop.min, castTo(loop.min->type, point)),
                                           makeBlock(values));
  Stmt compute = std::make_shared<For>(
      roundVar, makeI64(0), piece, ForKind::Unrolled, 0,
      std::make_shared<LetStmt>(point->as<Var>()->name, position(owner, rem(thread, piece)),
                                std::make_shared<IfThenElse>(inRange, atPoint)),
      first.source);

  std::string offsetVar = prefix + ".offset";
  Expr offset = makeVar(ScalarType::I64, offsetVar);
  std::vector<Stmt> folds, start, end;
  for (size_t m = 0; m < group.size(); ++m) {
    const Reduce &reduce = *group[m].reduce;
    start.push_back(store(parts[m], {}, load(tiles[m], {thread})));
    folds.push_back(reductionStep(reduce.op, reduce.neutral, parts[m],
                                  load(pieces[m], {slot(add(mul(thread, piece), offset))})));
    end.push_back(store(tiles[m], {thread}, load(parts[m])));
  }
  Stmt foldLoop = std::make_shared<For>(
      offsetVar, makeI64(0), piece, ForKind::Unrolled, 0,
      std::make_shared<LetStmt>(point->as<Var>()->name, position(thread, offset),
                                std::make_shared<IfThenElse>(inRange, makeBlock(folds))),
      first.source);
  std::vector<Stmt> fold = start;
  fold.push_back(foldLoop);
  fold.insert(fold.end(), end.begin(), end.end());

  Stmt steps = std::make_shared<For>(
      step->as<Var>()->name, makeI64(0), div(chunk, piece), ForKind::Serial, 0,
      makeBlock({compute, std::make_shared<Barrier>(), allocating(parts, makeBlock(fold)),
                 std::make_shared<Barrier>()}),
      first.source);
  std::vector<Stmt> walk;
  for (size_t m = 0; m < group.size(); ++m)
    walk.push_back(store(tiles[m], {thread}, group[m].reduce->neutral));
  walk.push_back(steps);
  return makeBlock(walk);
}

// A thread's walk over the points of `reduce`'s first `loops` loops, taken
// as one row-major range of positions: the position's digit for each loop
// (its index in the loop) is kept in a register and advanced by the
// stride's digits with a carry, so a point costs a few additions, not the
// 64-bit divisions of a position split afresh (which on a GPU cost more
// than reading the element). Two divisions per loop and thread set it up.
Stmt ReductionGroupLowering::flatWalk(const Reduce &reduce, size_t loops, const ThreadWalk &walk,
                                      const std::string &prefix, const std::string &stepVar,
                                      Stmt pointBody) {
  // extents[k] and the points of the loops inside loop k; both at least 1 as
  // divisors (no point is walked when one is empty).
  std::vector<Expr> extents(loops), inner(loops);
  for (size_t k = 0; k < loops; ++k)
    extents[k] = nonNegative(reduce.loops[k].extent);
  inner[loops - 1] = makeI64(1);
  for (size_t k = loops - 1; k-- > 0;)
    inner[k] = mul(inner[k + 1], extents[k + 1]);
  auto atLeastOne = [](Expr value) { return maxOf(std::move(value), makeI64(1)); };
  auto digit = [&](const Expr &position, size_t k) {
    Expr above = div(position, atLeastOne(inner[k]));
    return k == 0 ? above : rem(above, atLeastOne(extents[k]));
  };

  std::vector<Buffer> cells;
  std::vector<Stmt> start;
  std::vector<std::pair<std::string, Expr>> strideLets;
  for (size_t k = 0; k < loops; ++k) {
    cells.push_back(
        makeBuffer(prefix + ".at" + std::to_string(k), ScalarType::I64, {}, MemorySpace::Register));
    start.push_back(store(cells[k], {}, digit(walk.first, k)));
    strideLets.push_back({prefix + ".stride" + std::to_string(k), digit(walk.stride, k)});
  }

  // Advance the digits, innermost first; a digit passing its extent wraps
  // and carries one into the next (a digit and its stride digit are below
  // the extent, so one subtraction is enough). The outermost is not wrapped:
  // past the last point, the walk ends.
  std::function<Stmt(size_t, Expr)> advance = [&](size_t k, Expr carry) -> Stmt {
    Expr next = add(load(cells[k]), makeVar(ScalarType::I64, strideLets[k].first));
    if (carry)
      next = add(next, carry);
    if (k == 0)
      return store(cells[k], {}, next);
    std::string nextVar = prefix + ".next" + std::to_string(k);
    std::string wrapsVar = prefix + ".wraps" + std::to_string(k);
    Expr nextValue = makeVar(ScalarType::I64, nextVar);
    Expr wraps = makeVar(ScalarType::Bool, wrapsVar);
    Stmt update = store(cells[k], {}, select(wraps, sub(nextValue, extents[k]), nextValue));
    Expr carried = select(wraps, makeI64(1), makeI64(0));
    return std::make_shared<LetStmt>(
        nextVar, next,
        std::make_shared<LetStmt>(wrapsVar, greaterOrEqual(nextValue, extents[k]),
                                  makeBlock({update, advance(k - 1, carried)})));
  };

  for (size_t k = loops; k-- > 0;) {
    const Reduce::Loop &loop = reduce.loops[k];
    ScalarType type = loop.min->type;
    Expr index = load(cells[k]);
    if (type != ScalarType::I64)
      index = std::make_shared<Cast>(type, index);
    pointBody = std::make_shared<LetStmt>(loop.var, add(loop.min, index), pointBody);
  }
  Stmt walkLoop =
      std::make_shared<For>(stepVar, makeI64(0), walk.trips, ForKind::Serial, 0,
                            makeBlock({pointBody, advance(loops - 1, nullptr)}), reduce.source);
  start.push_back(walkLoop);
  Stmt body = makeBlock(start);
  for (auto let = strideLets.rbegin(); let != strideLets.rend(); ++let)
    body = std::make_shared<LetStmt>(let->first, let->second, body);
  return allocating(cells, body);
}

} // namespace loopc::passes
