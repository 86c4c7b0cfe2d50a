// lower_scans: Scan nodes to loops (both pipelines, first, so every later
// pass sees only parfors, redomaps and loops).
//
// A scan inside a parfor runs in its iteration's thread: a serial loop
// carrying the running value in a register. A scan at kernel level runs on
// the whole device as reduce-then-scan over chunks of consecutive points:
//   1. a parfor over the chunks folds each chunk into sums[c] (a redomap
//      along a row: map_rows_to_blocks gives the GPU a block per chunk);
//   2. sums is scanned in place, by the same construction one level down;
//   3. each chunk is scanned from the fold of the chunks before it
//      (sums[c - 1]): on the CPU by one thread walking it (a parfor over the
//      chunks); on the GPU by a block, tile by tile of 1024 consecutive
//      points, each lane scanning 4 of them in a register and the lanes'
//      totals scanned in shared memory (Hillis-Steele, 8 steps between two
//      buffers), the running fold carried from tile to tile; the tile goes
//      through shared memory, so every load and store of the chunk is
//      coalesced.
// A chunk holds at least one tile on the GPU (64 points on the CPU), and a
// target's number of chunks is bounded: the GPU's by 4096 (blocks for every
// SM, each scanning many tiles; the levels below then hold at most 16 and 1
// sums), the CPU's by 256 (few long runs for its cores; at most 4, then 1,
// below). The fourth level scans its sums in one thread. Each point's value
// is computed twice (in steps 1 and 3), as in any reduce-then-scan.
#include "passes/Passes.h"

#include "ir/IRVisitor.h"
#include "passes/lowering/ReductionTrees.h"

#include <map>

namespace loopc::passes {

using namespace loopc::ir;
using ir::Expr; // not the AST's
using ir::Stmt;

namespace {

const int64_t kTile = 256;     // lanes of a GPU block scanning a chunk
const int64_t kLanePoints = 4; // consecutive points each lane scans in a tile
const int kLevels = 3;         // chunked levels; the one below runs in one thread

// `value` written to the scan's element at the point, located at the
// program's target access, as the interpreter reports its index.
Stmt storeElement(const Scan &scan, Expr value) {
  return std::make_shared<Store>(scan.target, scan.indices, std::move(value), scan.targetSource);
}

// At each point: the value, then the running fold in `running`, written to
// the point's element.
Stmt scanStep(const Scan &scan, const Buffer &running) {
  Stmt step = makeBlock({store(running, {}, applyOperator(scan.op, load(running), scan.value)),
                         storeElement(scan, load(running))});
  return appendAtTail(scan.valueSetup, step);
}

class ScanLowerer : public IRMutator {
public:
  explicit ScanLowerer(PipelineTarget target) : target_(target) {}

protected:
  Stmt visitFor(const For &node, const Stmt &self) override {
    bool parallel = node.forKind == ForKind::Parallel;
    parallelDepth_ += parallel;
    Stmt mutated = IRMutator::visitFor(node, self);
    parallelDepth_ -= parallel;
    return mutated;
  }

  Stmt visitScan(const Scan &node, const Stmt &self) override {
    Stmt mutated = IRMutator::visitScan(node, self);
    const Scan &scan = *mutated->as<Scan>();
    if (parallelDepth_ > 0)
      return serially(scan);
    return chunked(scan, 0, scan.target->name);
  }

private:
  // The whole scan in one loop of a thread, carrying the fold in a register.
  Stmt serially(const Scan &scan) {
    Buffer running =
        makeBuffer(scan.target->name + ".running", scan.target->element, {}, MemorySpace::Register);
    Stmt loop = std::make_shared<For>(scan.loop.var, scan.loop.min, scan.loop.extent,
                                      ForKind::Serial, 0, scanStep(scan, running), scan.source);
    return std::make_shared<Allocate>(running, makeBlock({store(running, {}, scan.neutral), loop}));
  }

  // `scan` at `level` (0 for the program's), names made from `base`.
  Stmt chunked(const Scan &scan, int level, const std::string &base) {
    std::string prefix = base + ".scan" + std::to_string(level);
    if (level == kLevels) {
      // A handful of sums: one thread scans them.
      return std::make_shared<For>(prefix + ".one", makeI64(0), makeI64(1), ForKind::Parallel, 0,
                                   serially(scan), scan.source);
    }
    bool gpu = target_ == PipelineTarget::Gpu;
    int64_t maxChunks = gpu ? 4096 : 256;
    int64_t minChunk = gpu ? kTile * kLanePoints : 64;
    Expr points = makeVar(ScalarType::I64, prefix + ".points");
    Expr size = makeVar(ScalarType::I64, prefix + ".size");
    Expr chunks = makeVar(ScalarType::I64, prefix + ".chunks");
    std::string chunkVar = prefix + ".chunk";
    Expr chunk = makeVar(ScalarType::I64, chunkVar);
    Expr first = mul(chunk, size);
    Expr count = minOf(size, sub(points, first));
    ScalarType type = scan.target->element;
    Buffer sums = makeBuffer(prefix + ".sums", type, {chunks}, MemorySpace::Global);

    // 1. Each chunk's fold, over the offsets in the chunk: the points'
    // accesses then show how they move along the chunk and across chunks
    // (map_rows_to_blocks reads that).
    Buffer fold = makeBuffer(prefix + ".fold", type, {}, MemorySpace::Register);
    std::string offsetVar = prefix + ".offset";
    ScalarType pointType = scan.loop.min->type;
    std::map<std::string, Expr> atOffset{
        {scan.loop.var,
         add(scan.loop.min, castTo(pointType, add(first, makeVar(ScalarType::I64, offsetVar))))}};
    Stmt valueSetup = substitute(scan.valueSetup, atOffset);
    Expr value = substitute(scan.value, atOffset);
    // A Reduce may combine its points in any order (a block tree takes them
    // interleaved), which the builtin operators allow; a user's operator
    // need not commute, so its chunks fold in order, in one thread.
    Stmt reduce;
    if (scan.op.kind == ReduceOperator::Kind::User)
      reduce = std::make_shared<For>(
          offsetVar, makeI64(0), count, ForKind::Serial, 0,
          appendAtTail(valueSetup, store(fold, {}, applyOperator(scan.op, load(fold), value))),
          scan.source);
    else
      reduce = std::make_shared<Reduce>(fold, std::vector<Expr>{}, scan.op, scan.neutral,
                                        std::vector<Reduce::Loop>{{offsetVar, makeI64(0), count}},
                                        valueSetup, value, scan.source);
    Stmt folds = std::make_shared<For>(
        chunkVar, makeI64(0), chunks, ForKind::Parallel, 0,
        std::make_shared<Allocate>(fold, makeBlock({store(fold, {}, scan.neutral), reduce,
                                                    store(sums, {chunk}, load(fold))})),
        scan.source);

    // 2. The sums scanned in place, one level down.
    std::string sumVar = prefix + ".k";
    Scan sumsScan(sums, {makeVar(ScalarType::I64, sumVar)}, scan.op, scan.neutral,
                  {sumVar, makeI64(0), chunks}, nullptr,
                  load(sums, {makeVar(ScalarType::I64, sumVar)}), scan.source);
    Stmt sumsScanned = chunked(sumsScan, level + 1, base);

    // 3. Each chunk scanned from the fold of the chunks before it, over its
    // offsets too: over the points themselves, whose bounds then depend on
    // the thread, the CPU ran threads as lanes striding across chunks (more
    // than ten times slower: docs/benchmarks.md, CPU history).
    Expr carry =
        select(equal(chunk, makeI64(0)), scan.neutral, load(sums, {sub(chunk, makeI64(1))}));
    Stmt scans = gpu ? blockScans(scan, prefix, chunks, count, carry, atOffset)
                     : threadScans(scan, prefix, chunks, count, carry, atOffset);

    Stmt body = std::make_shared<Allocate>(sums, makeBlock({folds, sumsScanned, scans}));
    Expr chunkSize = maxOf(makeI64(minChunk), ceilDiv(points, makeI64(maxChunks)));
    return std::make_shared<LetStmt>(
        prefix + ".points", maxOf(toI64(scan.loop.extent), makeI64(0)),
        std::make_shared<LetStmt>(
            prefix + ".size", chunkSize,
            std::make_shared<LetStmt>(prefix + ".chunks", ceilDiv(points, size), body)));
  }

  // Step 3 on the CPU: a thread per chunk, from `carry`, over the chunk's
  // `count` offsets (`atOffset` maps the scan's variable to them).
  static Stmt threadScans(const Scan &scan, const std::string &prefix, const Expr &chunks,
                          const Expr &count, const Expr &carry,
                          const std::map<std::string, Expr> &atOffset) {
    std::string chunkVar = prefix + ".chunk", offsetVar = prefix + ".offset";
    Buffer running =
        makeBuffer(prefix + ".running", scan.target->element, {}, MemorySpace::Register);
    return std::make_shared<For>(
        chunkVar, makeI64(0), chunks, ForKind::Parallel, 0,
        std::make_shared<Allocate>(
            running, makeBlock({store(running, {}, carry),
                                std::make_shared<For>(
                                    offsetVar, makeI64(0), count, ForKind::Serial, 0,
                                    substitute(scanStep(scan, running), atOffset), scan.source)})),
        scan.source);
  }

  // Step 3 on the GPU: a block per chunk, a tile of kTile * kLanePoints
  // consecutive offsets at a time. The block loads the tile into shared
  // memory (coalesced: point r * kTile + lane for r < kLanePoints), each
  // lane scans its kLanePoints consecutive points there in a register, the
  // lanes' totals are scanned across the block (Hillis-Steele, 8 steps
  // between two buffers), each lane folds the totals before it into its
  // points, and the block stores the tile (coalesced again). A tile of one
  // point a lane waited for 11 barriers per 256 points; this one waits for
  // 13 per 1024. (8 points a lane spilled a max scan's registers: ptxas,
  // given 256 threads a block and no more, budgets 32 registers a thread.)
  static Stmt blockScans(const Scan &scan, const std::string &prefix, const Expr &chunks,
                         const Expr &count, const Expr &carry,
                         const std::map<std::string, Expr> &atOffset) {
    ScalarType type = scan.target->element;
    std::string blockVar = prefix + ".chunk", threadVar = prefix + ".lane";
    std::string tileVar = prefix + ".tile", offsetVar = prefix + ".offset";
    std::string rowVar = prefix + ".row", pointVar = prefix + ".point";
    Expr thread = makeVar(ScalarType::I64, threadVar);
    Expr offset = makeVar(ScalarType::I64, offsetVar);
    Expr tileStart = mul(makeVar(ScalarType::I64, tileVar), makeI64(kTile * kLanePoints));
    // The tile's points, lane by lane: point p of the tile at p + p / kLanePoints,
    // a gap after each lane's points, so the lanes' reads of their k-th points
    // fall in different banks.
    Buffer staged = makeBuffer(prefix + ".staged", type, {makeI64(kTile * (kLanePoints + 1))},
                               MemorySpace::Shared);
    auto slot = [](Expr point) { return add(point, div(point, makeI64(kLanePoints))); };
    Buffer tiles[2] = {makeBuffer(prefix + ".tile_a", type, {makeI64(kTile)}, MemorySpace::Shared),
                       makeBuffer(prefix + ".tile_b", type, {makeI64(kTile)}, MemorySpace::Shared)};
    Buffer folded = makeBuffer(prefix + ".carry", type, {makeI64(1)}, MemorySpace::Shared);
    Buffer running = makeBuffer(prefix + ".running", type, {}, MemorySpace::Register);
    Expr inChunk = lessThan(offset, count);
    Expr firstThread = equal(thread, makeI64(0));
    // `body` for each of the lane's rows of the tile, `offset` bound to its
    // point's offset in the chunk (coalesced across the lanes).
    auto eachRow = [&](Stmt body) {
      Expr row = makeVar(ScalarType::I64, rowVar);
      Expr point = add(mul(row, makeI64(kTile)), thread);
      return std::make_shared<For>(
          rowVar, makeI64(0), makeI64(kLanePoints), ForKind::Unrolled, 0,
          std::make_shared<LetStmt>(
              pointVar, point, std::make_shared<LetStmt>(offsetVar, add(tileStart, point), body)),
          scan.source);
    };
    Expr rowSlot = slot(makeVar(ScalarType::I64, pointVar));
    // `body` for each of the lane's own points from its `first` on, at `ownSlot`.
    Expr laneSlots = mul(thread, makeI64(kLanePoints + 1));
    Expr ownSlot = add(laneSlots, makeVar(ScalarType::I64, rowVar));
    auto eachOwnPoint = [&](int64_t first, Stmt body) {
      return std::make_shared<For>(rowVar, makeI64(first), makeI64(kLanePoints - first),
                                   ForKind::Unrolled, 0, body, scan.source);
    };

    std::vector<Stmt> steps;
    // The tile's points (the neutral element past the chunk's end).
    steps.push_back(eachRow(std::make_shared<IfThenElse>(
        inChunk,
        appendAtTail(substitute(scan.valueSetup, atOffset),
                     store(staged, {rowSlot}, substitute(scan.value, atOffset))),
        store(staged, {rowSlot}, scan.neutral))));
    steps.push_back(std::make_shared<Barrier>());
    // Each lane's points scanned in order; its total to the block's scan.
    Expr own = load(staged, {ownSlot});
    steps.push_back(std::make_shared<Allocate>(
        running,
        makeBlock({store(running, {}, load(staged, {laneSlots})),
                   eachOwnPoint(
                       1, makeBlock({store(running, {}, applyOperator(scan.op, load(running), own)),
                                     store(staged, {ownSlot}, load(running))})),
                   store(tiles[0], {thread}, load(running))})));
    steps.push_back(std::make_shared<Barrier>());
    // The totals scanned in place: after the step of distance d, each
    // position holds the fold of the 2d positions up to it.
    int from = 0;
    for (int64_t distance = 1; distance < kTile; distance *= 2, from = 1 - from) {
      Expr self = load(tiles[from], {thread});
      Expr earlier = load(tiles[from], {sub(thread, makeI64(distance))});
      steps.push_back(store(tiles[1 - from], {thread},
                            select(greaterOrEqual(thread, makeI64(distance)),
                                   applyOperator(scan.op, earlier, self), self)));
      steps.push_back(std::make_shared<Barrier>());
    }
    const Buffer &scanned = tiles[from];
    // Each lane's points from the fold of everything before them: the
    // chunk's before the tile, then the lanes' before this one.
    Expr before = select(firstThread, load(folded, {makeI64(0)}),
                         applyOperator(scan.op, load(folded, {makeI64(0)}),
                                       load(scanned, {sub(thread, makeI64(1))})));
    steps.push_back(std::make_shared<LetStmt>(
        prefix + ".before", before,
        eachOwnPoint(0, store(staged, {ownSlot},
                              applyOperator(scan.op, makeVar(type, prefix + ".before"), own)))));
    steps.push_back(std::make_shared<Barrier>());
    // The tile's elements written, as they were read.
    Stmt write = storeElement(scan, load(staged, {rowSlot}));
    steps.push_back(eachRow(std::make_shared<IfThenElse>(
        inChunk, substitute(appendAtTail(scan.valueSetup, write), atOffset))));
    steps.push_back(std::make_shared<IfThenElse>(
        firstThread, store(folded, {makeI64(0)},
                           applyOperator(scan.op, load(folded, {makeI64(0)}),
                                         load(scanned, {makeI64(kTile - 1)})))));
    steps.push_back(std::make_shared<Barrier>());

    Stmt tileLoop =
        std::make_shared<For>(tileVar, makeI64(0), ceilDiv(count, makeI64(kTile * kLanePoints)),
                              ForKind::Serial, 0, makeBlock(std::move(steps)), scan.source);
    Stmt threads = std::make_shared<For>(
        threadVar, makeI64(0), makeI64(kTile), ForKind::GpuThread, 0,
        makeBlock({std::make_shared<IfThenElse>(firstThread, store(folded, {makeI64(0)}, carry)),
                   std::make_shared<Barrier>(), tileLoop}),
        scan.source);
    for (const Buffer &buffer : {staged, tiles[0], tiles[1], folded})
      threads = std::make_shared<Allocate>(buffer, threads);
    return std::make_shared<For>(blockVar, makeI64(0), chunks, ForKind::GpuBlock, 0, threads,
                                 scan.source);
  }

  PipelineTarget target_;
  int parallelDepth_ = 0;
};

} // namespace

Function lowerScans(Function function, PipelineTarget target) {
  function.body = ScanLowerer(target).mutate(function.body);
  return function;
}

} // namespace loopc::passes
