// map_to_gpu: the plain GPU mapping. Each top-level parfor nest (a Parallel
// loop not inside another) becomes a grid of blocks of threads: up to three of
// its loops are strip-mined into a GpuBlock loop over blocks and a GpuThread
// loop over the threads of a block, `v = min + v.block * size + v.thread`,
// with a guard `if (v < min + extent)` for the last, partial block. Loops that
// cannot be mapped (their bounds depend on another loop of the nest, or they
// are short: a constant trip count, or one bounded by a constant, under 16) run serially inside
// each thread, as do parfors nested in the body; a short loop of 4 or more
// iterations is mapped too where the run's sizes leave the other loops too
// few points to fill the GPU.
//
// The x dimension is chosen for coalescing: consecutive threads of a warp
// differ in their x index, so x goes to the loop along which the most global
// loads and stores of the nest are contiguous (the affine access analysis,
// each access in the body counted once), the innermost loop on a tie, which is
// what a row-major nest written in the natural order gets. The other mapped
// loops take y and z, innermost first. `loopc explain` shows the choice as the
// loop kinds (`gpu_thread.x for j.thread`).
// Later passes (tiling, staging) refine this mapping; this one is always legal.
#include "passes/Passes.h"

#include "ir/IRVisitor.h"
#include "passes/Remarks.h"
#include "passes/analysis/AccessAnalysis.h"
#include "passes/analysis/Evaluate.h"

#include <algorithm>
#include <array>
#include <functional>
#include <optional>

namespace loopc::passes {

using namespace loopc::ir;
using ir::Expr; // not the AST's
using ir::Stmt;

namespace {

// Threads per block along x, y, z for a mapping of 1, 2 or 3 dimensions: 256
// threads in all, a full warp (or more) along x.
const int64_t kBlockShapes[3][3] = {{256, 1, 1}, {32, 8, 1}, {32, 4, 2}};
// On the CPU a block is the unit of work a core takes, its threads vector
// lanes. A 1-D parfor of fewer than kCpuWideRange iterations gets blocks of
// kCpuNarrowBlock threads (chosen at run time, the extent being symbolic),
// so a few hundred heavy iterations spread over the cores instead of filling
// one block on one core; longer ones keep 256, whose lanes read a row's wide
// stretch together (a column walk like mv_transposed's). 2-D and 3-D nests
// keep 32 x 8 and 32 x 4 x 2: their rows of threads share the loads of a
// column (matmul's B) in registers, and they have blocks enough.
const int64_t kCpuNarrowBlock = 32;
const int64_t kCpuWideRange = 256 * 16; // 16 blocks of 256: a core each on 16 cores
// ...but a 2-D nest whose lanes gather along x, each lane from a row of its
// own, and read consecutive elements of those rows along y (a transpose's
// A[j][i] with x = j) gets one vector of lanes along x and a long run along
// y: each row gathered from then gives the block whole cache lines, and its
// page serves 64 elements before the block moves on, where 32 x 8 used 8 of
// each line and walked a page for every 8 (a transpose runs about twice as
// fast: docs/benchmarks.md, CPU history).
const int64_t kCpuTallBlock[3] = {16, 64, 1};
// The most threads a GPU block may have.
const int64_t kMostGpuThreads = 1024;
// A stride (in elements) past which each lane's element lies in a cache
// line of its own.
const int64_t kRowStride = 16;

// A trip count this short (at most) wastes a block dimension.
const int64_t kShortLoop = 16;
// ...unless the other loops leave the GPU idle: then a short loop of at
// least this many iterations is mapped too (a softmax over each of 12
// heads' rows: the heads multiply 1024 rows' threads by 12), never as x.
// Narrower ones (a padded border's 1 or 2 columns, RGB's 3 channels) would
// leave most of their threads idle, and stay in the thread.
const int64_t kShortLoopWorthMapping = 4;
// Threads a GPU holds at once per SM: below this many points per SM, the
// mapped loops leave it idle.
const int64_t kResidentThreadsPerSM = 2048;

// `min + offset`, without the addition when min is zero (the common case).
Expr offsetFrom(const Expr &min, Expr offset) {
  const auto *zero = min->as<IntImm>();
  return zero && zero->value == 0 ? offset : add(min, std::move(offset));
}

class GpuMapper : public IRMutator {
public:
  GpuMapper(PipelineTarget target, const std::map<std::string, int64_t> &runSizes,
            int multiprocessors, const PassParameters &parameters, const RemarkReporter &remarks,
            const CpuVectors &cpuVectors)
      : target_(target), runSizes_(runSizes), multiprocessors_(multiprocessors),
        parameters_(parameters), remarks_(remarks), cpuVectors_(cpuVectors) {}

  std::vector<Function::SizeChoice> takeSizeChoices() { return std::move(sizeChoices_); }

protected:
  Stmt visitFor(const For &node, const Stmt &self) override {
    if (node.forKind != ForKind::Parallel)
      return IRMutator::visitFor(node, self);
    return mapNest(node, self);
  }

private:
  Stmt mapNest(const For &top, const Stmt &nest) {
    std::vector<const For *> chain = parallelChain(top);
    std::set<std::string> nestVars;
    for (const For *loop : chain)
      nestVars.insert(loop->var);
    auto hoistable = [&](const For *loop) {
      return !usesAnyVar(loop->min, nestVars) && !usesAnyVar(loop->extent, nestVars);
    };
    // On the CPU a block's threads are vector lanes, which the thread nest
    // masks past a loop's end: only a constant trip count is short there.
    auto isShort = [&](const For *loop) {
      bool counted = target_ == PipelineTarget::Gpu || loop->extent->as<IntImm>();
      std::optional<int64_t> ceiling = constantCeiling(loop->extent);
      return counted && ceiling && *ceiling < kShortLoop;
    };
    // Candidates innermost first; short loops only when nothing else maps.
    std::vector<const For *> candidates;
    for (bool allowShort : {false, true}) {
      for (size_t i = chain.size(); i-- > 0;)
        if (hoistable(chain[i]) && (allowShort || !isShort(chain[i])))
          candidates.push_back(chain[i]);
      if (!candidates.empty())
        break;
    }
    // x for the candidate with the most contiguous global accesses (the
    // first, innermost, on a tie), then the others in order, up to three.
    std::vector<BufferAccess> accesses = collectAccesses(nest);
    auto contiguousAccesses = [&](const For *loop) {
      return std::ranges::count_if(accesses, [&](const BufferAccess &access) {
        return access.buffer->memory == MemorySpace::Global &&
               strideAlong(access, loop->var).kind == Stride::Kind::Contiguous;
      });
    };
    auto x = std::ranges::max_element(candidates, std::less<>(), contiguousAccesses);
    std::rotate(candidates.begin(), x, x + 1);
    std::vector<const For *> mapped(candidates.begin(),
                                    candidates.begin() + std::min<size_t>(candidates.size(), 3));
    if (target_ == PipelineTarget::Gpu)
      mapShortLoopsWhereIdle(chain, hoistable, isShort, mapped);
    // Serial loops for the unmapped members of the chain, in their order,
    // around the body (whose own parfors run serially in the thread).
    Stmt body = serializeParallelLoops(chain.back()->body);
    for (size_t i = chain.size(); i-- > 0;) {
      const For *loop = chain[i];
      if (std::find(mapped.begin(), mapped.end(), loop) != mapped.end())
        continue;
      body = std::make_shared<For>(loop->var, loop->min, loop->extent, ForKind::Serial, 0, body,
                                   loop->source);
    }
    const int64_t *shape = kBlockShapes[mapped.size() - 1];
    bool tall = target_ == PipelineTarget::Cpu && mapped.size() == 2 &&
                gathersRowsAlongX(accesses, *mapped[0], *mapped[1]);
    std::optional<std::array<int64_t, 3>> tile;
    if (target_ == PipelineTarget::Cpu && mapped.size() == 2 && !tall)
      tile = registerTileOf(chain.back()->body, accesses, *mapped[0], *mapped[1], nestVars);
    if (parameters_.blockX > 0 || (parameters_.blockY > 0 && mapped.size() >= 2))
      return grid(mapped, body,
                  chosenShape(mapped, tall   ? kCpuTallBlock
                                      : tile ? tile->data()
                                             : shape)
                      .data());
    if (tile) {
      remarks_.applied(
          mapped[0]->source,
          "blocks of " + std::to_string((*tile)[0]) + " x " + std::to_string((*tile)[1]) +
              " on the CPU: an outer product's register tile of " + std::to_string((*tile)[1]) +
              " rows of " + std::to_string((*tile)[0] / tileLanes_) + " vectors (" +
              std::to_string((*tile)[0] / tileLanes_ * (*tile)[1]) + " accumulators of " +
              std::to_string(cpuVectors_.registers) + " vector registers)");
      return grid(mapped, body, tile->data());
    }
    if (tall) {
      remarks_.applied(mapped[0]->source,
                       "blocks of " + std::to_string(kCpuTallBlock[0]) + " x " +
                           std::to_string(kCpuTallBlock[1]) +
                           " on the CPU: each lane along x reads a row of its own, walked along y");
      return grid(mapped, body, kCpuTallBlock);
    }
    if (target_ != PipelineTarget::Cpu || mapped.size() != 1)
      return grid(mapped, body, shape);
    const For &only = *mapped.front();
    const int64_t narrow[3] = {kCpuNarrowBlock, 1, 1};
    Expr wide = greaterOrEqual(only.extent, makeInt(only.extent->type, kCpuWideRange));
    return std::make_shared<IfThenElse>(wide, grid(mapped, body, shape),
                                        grid(mapped, body, narrow));
  }

  // The CPU block of a 2-D nest whose threads accumulate (a reduction, or a
  // serial loop), over a range the nest does not change, products of an
  // element each row of threads shares (matmul's A[i][k], the same along x)
  // and one each column shares (B[k][j], the same along y, consecutive along
  // x): an outer product per step. The thread nest keeps a block's
  // accumulators in vector registers across the range (CpuThreadNest.h),
  // loading each step's row of B once for all rows and broadcasting each
  // row's element of A once for all lanes, so the block
  // is a register tile: V vectors of lanes along x by R rows, R * V
  // accumulators, V vectors of B and one broadcast within the registers,
  // shaped to load least per multiply-add ((R + V) / (R * V)), V a power of
  // two. 64 x 6 with AVX-512's 32 registers ran matmul about a tenth faster
  // than 32 x 8, whose 8 rows' addresses LLVM could not keep in registers
  // (docs/benchmarks.md, CPU history). None where the CPU is not known.
  std::optional<std::array<int64_t, 3>> registerTileOf(const Stmt &body,
                                                       const std::vector<BufferAccess> &accesses,
                                                       const For &x, const For &y,
                                                       const std::set<std::string> &nestVars) {
    if (cpuVectors_.f32Lanes <= 0 || cpuVectors_.registers <= 0)
      return std::nullopt;
    // The loops over a range: a reduction's, or a serial loop updating a
    // register (gemm's `C[i][j] += ...`, kept in a register across it).
    class Ranges : public IRVisitor {
    public:
      std::vector<std::vector<std::pair<std::string, std::pair<Expr, Expr>>>> found;

    protected:
      void visitReduce(const Reduce &node) override {
        std::vector<std::pair<std::string, std::pair<Expr, Expr>>> loops;
        for (const Reduce::Loop &loop : node.loops)
          loops.push_back({loop.var, {loop.min, loop.extent}});
        found.push_back(std::move(loops));
        IRVisitor::visitReduce(node);
      }
      void visitFor(const For &node) override {
        if (node.forKind == ForKind::Serial)
          found.push_back({{node.var, {node.min, node.extent}}});
        IRVisitor::visitFor(node);
      }
    } ranges;
    ranges.visit(body);
    for (const auto &loops : ranges.found) {
      std::set<std::string> steps;
      bool fixedRange = true;
      for (const auto &[var, range] : loops) {
        steps.insert(var);
        fixedRange =
            fixedRange && !usesAnyVar(range.first, nestVars) && !usesAnyVar(range.second, nestVars);
      }
      if (!fixedRange)
        continue;
      bool rowShared = false;
      const BufferAccess *columnShared = nullptr;
      for (const BufferAccess &access : accesses) {
        if (access.isStore || access.buffer->memory != MemorySpace::Global ||
            std::ranges::none_of(access.enclosingLoops,
                                 [&](const std::string &loop) { return steps.contains(loop); }))
          continue;
        Stride::Kind alongX = strideAlong(access, x.var).kind;
        Stride::Kind alongY = strideAlong(access, y.var).kind;
        rowShared |= alongX == Stride::Kind::Zero && alongY != Stride::Kind::Zero &&
                     alongY != Stride::Kind::Unknown;
        if (alongX == Stride::Kind::Contiguous && alongY == Stride::Kind::Zero)
          columnShared = &access;
      }
      if (!rowShared || !columnShared)
        continue;
      int64_t bytes = std::max<int64_t>(scalarSize(columnShared->buffer->element), 1);
      tileLanes_ = std::max<int64_t>(cpuVectors_.f32Lanes * 4 / bytes, 1);
      int64_t bestVectors = 0, bestRows = 0;
      for (int64_t vectors : {1, 2, 4}) {
        int64_t rows = (cpuVectors_.registers - vectors - 1) / vectors;
        if (rows < 1)
          continue;
        // (R + V) / (R * V) least: R * V / (R + V) greatest.
        if (bestVectors == 0 ||
            rows * vectors * (bestRows + bestVectors) > bestRows * bestVectors * (rows + vectors))
          bestVectors = vectors, bestRows = rows;
      }
      if (bestVectors == 0)
        return std::nullopt;
      return std::array<int64_t, 3>{bestVectors * tileLanes_, bestRows, 1};
    }
    return std::nullopt;
  }

  // Whether a global access's lanes along x each read a row of their own
  // (a stride of a cache line or more), walked consecutively along y.
  static bool gathersRowsAlongX(const std::vector<BufferAccess> &accesses, const For &x,
                                const For &y) {
    return std::ranges::any_of(accesses, [&](const BufferAccess &access) {
      if (access.buffer->memory != MemorySpace::Global)
        return false;
      Stride alongX = strideAlong(access, x.var);
      bool rows =
          alongX.kind == Stride::Kind::Symbolic ||
          (alongX.kind == Stride::Kind::Constant && std::abs(alongX.constant) >= kRowStride);
      return rows && strideAlong(access, y.var).kind == Stride::Kind::Contiguous;
    });
  }

  // The block shape block_x and block_y ask for, the others of `defaults`;
  // on the GPU a 3-D block's z shrinks to keep it within 1024 threads.
  std::array<int64_t, 3> chosenShape(const std::vector<const For *> &mapped,
                                     const int64_t *defaults) const {
    std::array<int64_t, 3> shape = {defaults[0], defaults[1], defaults[2]};
    if (parameters_.blockX > 0)
      shape[0] = parameters_.blockX;
    if (parameters_.blockY > 0 && mapped.size() >= 2)
      shape[1] = parameters_.blockY;
    if (target_ == PipelineTarget::Gpu && mapped.size() == 3)
      shape[2] = std::clamp<int64_t>(kMostGpuThreads / (shape[0] * shape[1]), 1, shape[2]);
    std::string described = std::to_string(shape[0]);
    for (size_t d = 1; d < mapped.size(); ++d)
      described += " x " + std::to_string(shape[d]);
    remarks_.applied(mapped.front()->source,
                     "blocks of " + described + " threads, as block_x and block_y ask");
    return shape;
  }

  // `body` run by a grid of blocks of `shape` threads over the `mapped`
  // loops (x first).
  static Stmt grid(const std::vector<const For *> &mapped, Stmt body, const int64_t *shape) {
    // The guard, then the mapped variables, then thread and block loops.
    Expr guard;
    for (const For *loop : mapped) {
      Expr inRange =
          lessThan(makeVar(loop->min->type, loop->var), offsetFrom(loop->min, loop->extent));
      guard = guard ? logicalAnd(guard, inRange) : inRange;
    }
    body = std::make_shared<IfThenElse>(guard, body);
    for (size_t d = 0; d < mapped.size(); ++d) {
      const For *loop = mapped[d];
      ScalarType type = loop->min->type;
      Expr size = makeInt(type, shape[d]);
      Expr offset =
          add(mul(makeVar(type, loop->var + ".block"), size), makeVar(type, loop->var + ".thread"));
      body = std::make_shared<LetStmt>(loop->var, offsetFrom(loop->min, offset), body);
    }
    for (size_t d = 0; d < mapped.size(); ++d) {
      const For *loop = mapped[d];
      body = std::make_shared<For>(loop->var + ".thread", makeInt(loop->min->type, 0),
                                   makeInt(loop->min->type, shape[d]), ForKind::GpuThread,
                                   static_cast<int>(d), body, loop->source);
    }
    for (size_t d = 0; d < mapped.size(); ++d) {
      const For *loop = mapped[d];
      ScalarType type = loop->min->type;
      Expr size = makeInt(type, shape[d]);
      // ceil(extent / size), and no blocks at all for an empty range.
      Expr blocks = div(sub(add(loop->extent, size), makeInt(type, 1)), size);
      blocks = maxOf(blocks, makeInt(type, 0));
      body = std::make_shared<For>(loop->var + ".block", makeInt(type, 0), blocks,
                                   ForKind::GpuBlock, static_cast<int>(d), body, loop->source);
    }
    return body;
  }

  // Adds to `mapped` (as y or z) the short loops of `chain` worth mapping
  // where, at the run's sizes, the loops mapped so far give fewer points
  // than the GPU holds threads; the choice is a size choice of the function.
  // Without the run's sizes (`loopc compile`) the short loops stay serial.
  void mapShortLoopsWhereIdle(const std::vector<const For *> &chain,
                              const std::function<bool(const For *)> &hoistable,
                              const std::function<bool(const For *)> &isShort,
                              std::vector<const For *> &mapped) {
    std::vector<const For *> worthMapping;
    for (size_t i = chain.size(); i-- > 0;) {
      std::optional<int64_t> ceiling = constantCeiling(chain[i]->extent);
      if (hoistable(chain[i]) && isShort(chain[i]) && ceiling &&
          *ceiling >= kShortLoopWorthMapping && std::ranges::find(mapped, chain[i]) == mapped.end())
        worthMapping.push_back(chain[i]);
    }
    if (worthMapping.empty() || mapped.empty() || mapped.size() == 3 || runSizes_.empty())
      return;
    Expr points;
    for (const For *loop : mapped) {
      Expr extent = maxOf(toI64(loop->extent), makeI64(0));
      points = points ? mul(points, extent) : extent;
    }
    std::optional<int64_t> value = evaluateInteger(*points, runSizes_);
    if (!value)
      return;
    int64_t filling = kResidentThreadsPerSM * multiprocessors_;
    bool idle = *value < filling;
    sizeChoices_.push_back({lessThan(points, makeI64(filling)), idle});
    if (!idle)
      return;
    for (const For *loop : worthMapping) {
      if (mapped.size() == 3)
        break;
      mapped.push_back(loop);
      // (A loop a pass made, a fill's, has no name in the program.)
      std::string what = isPassMadeName(loop->var)
                             ? std::string("a loop")
                             : "the loop over '" + remarks_.programName(loop->var) + "'";
      remarks_.applied(loop->source,
                       what + " of at most " + std::to_string(*constantCeiling(loop->extent)) +
                           " iterations mapped to the grid too: at these sizes the other loops "
                           "give " +
                           std::to_string(*value) + " points, fewer than the " +
                           std::to_string(filling) + " threads the GPU holds at once");
    }
  }

  PipelineTarget target_;
  const std::map<std::string, int64_t> &runSizes_;
  int multiprocessors_;
  const PassParameters &parameters_;
  const RemarkReporter &remarks_;
  const CpuVectors &cpuVectors_;
  int64_t tileLanes_ = 0; // the lanes of a vector of the last register tile's elements
  std::vector<Function::SizeChoice> sizeChoices_;
};

} // namespace

Function mapToGpu(Function function, PipelineTarget target,
                  const std::map<std::string, int64_t> &runSizes, int multiprocessors,
                  const PassParameters &parameters, const RemarkReporter &remarks,
                  const CpuVectors &cpuVectors) {
  GpuMapper mapper(target, runSizes, multiprocessors, parameters, remarks, cpuVectors);
  function.body = mapper.mutate(function.body);
  std::ranges::move(mapper.takeSizeChoices(), std::back_inserter(function.sizeChoices));
  return function;
}

std::optional<std::string> blockShapeError(const PassParameters &parameters,
                                           PipelineTarget target) {
  int64_t threads =
      std::max<int64_t>(parameters.blockX, 1) * std::max<int64_t>(parameters.blockY, 1);
  if (target != PipelineTarget::Gpu || threads <= kMostGpuThreads)
    return std::nullopt;
  return "block_x=" + std::to_string(parameters.blockX) +
         " and block_y=" + std::to_string(parameters.blockY) + " make blocks of " +
         std::to_string(threads) + " threads; a GPU block holds at most " +
         std::to_string(kMostGpuThreads);
}

} // namespace loopc::passes
