// lower_scans: Scan nodes to loops (both pipelines, first, so every later
// pass sees only parfors, redomaps and loops).
//
// A scan inside a parfor runs in its iteration's thread: a serial loop
// carrying the running value in a register. A scan at kernel level runs on
// the whole device as reduce-then-scan over chunks of consecutive points:
//   1. a parfor over the chunks folds each chunk into sums[c] (a redomap
//      along a row: map_rows_to_blocks gives the GPU a block per chunk);
//   2. sums is scanned in place, by the same construction one level down;
//   3. a parfor over the chunks scans each chunk in its thread, from the
//      fold of the chunks before it (sums[c - 1]).
// The chunks hold at least kMinChunk points, and a target's number of chunks
// is bounded: the GPU wants many threads in step 3 (at most 65536 chunks, so
// the levels below hold at most 1024 and 16 sums), the CPU few long runs (at
// most 256 chunks, a few blocks for its cores). The third level scans its
// (at most 16) sums in one thread. Each point's value is computed twice (in
// steps 1 and 3), as in any reduce-then-scan.
#include "passes/Passes.h"

#include "ir/IRVisitor.h"
#include "passes/lowering/ReductionTrees.h"

#include <map>

namespace loopc::passes {

using namespace loopc::ir;
using ir::Expr; // not the AST's
using ir::Stmt;

namespace {

const int64_t kMinChunk = 64;
const int kLevels = 3; // chunked levels; the one below runs in one thread

Expr ceilDiv(Expr a, Expr b) { return div(add(std::move(a), sub(b, makeI64(1))), b); }

// At each point: the value, then the running fold in `running`, written to
// the point's element.
Stmt scanStep(const Scan &scan, const Buffer &running) {
  Stmt step = makeBlock({store(running, {}, applyOperator(scan.op, load(running), scan.value)),
                         store(scan.target, scan.indices, load(running))});
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
    int64_t maxChunks = target_ == PipelineTarget::Gpu ? 65536 : 256;
    Expr points = makeVar(ScalarType::I64, prefix + ".points");
    Expr size = makeVar(ScalarType::I64, prefix + ".size");
    Expr chunks = makeVar(ScalarType::I64, prefix + ".chunks");
    std::string chunkVar = prefix + ".chunk";
    Expr chunk = makeVar(ScalarType::I64, chunkVar);
    Expr first = mul(chunk, size);
    Expr count = makeBinary(BinaryOpKind::Min, size, sub(points, first));
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
    // the thread, the CPU ran threads as lanes striding across chunks (12x
    // slower at 2^24 points).
    Buffer running = makeBuffer(prefix + ".running", type, {}, MemorySpace::Register);
    Expr carry = std::make_shared<Select>(makeBinary(BinaryOpKind::Eq, chunk, makeI64(0)),
                                          scan.neutral, load(sums, {sub(chunk, makeI64(1))}));
    Stmt scans = std::make_shared<For>(
        chunkVar, makeI64(0), chunks, ForKind::Parallel, 0,
        std::make_shared<Allocate>(
            running, makeBlock({store(running, {}, carry),
                                std::make_shared<For>(
                                    offsetVar, makeI64(0), count, ForKind::Serial, 0,
                                    substitute(scanStep(scan, running), atOffset), scan.source)})),
        scan.source);

    Stmt body = std::make_shared<Allocate>(sums, makeBlock({folds, sumsScanned, scans}));
    Expr chunkSize =
        makeBinary(BinaryOpKind::Max, makeI64(kMinChunk), ceilDiv(points, makeI64(maxChunks)));
    return std::make_shared<LetStmt>(
        prefix + ".points", makeBinary(BinaryOpKind::Max, toI64(scan.loop.extent), makeI64(0)),
        std::make_shared<LetStmt>(
            prefix + ".size", chunkSize,
            std::make_shared<LetStmt>(prefix + ".chunks", ceilDiv(points, size), body)));
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
