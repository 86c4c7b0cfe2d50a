// tile_registers: register tiling by thread coarsening (the CPU's tiles,
// rows of windows, at the end: cpuRows). After map_to_gpu a thread
// computes one point of its parfor nest. Where the body has a loop whose
// loads are the same for neighbouring points along a mapped dimension
// (matmul's B[k][j] for every i, A[i][k] for every j; a filter's weights for
// every pixel), each thread now computes a small tile of points along those
// dimensions (4, or 4 x 4) and the copies of the body are jammed into one:
// one k loop updates every copy's accumulator, so a value loaded once feeds
// all the copies that use it from a register, and the accumulators stay in
// registers. Copies are independent (they were distinct iterations of a
// parfor), so interleaving their statements is always legal; a statement is
// copied only along the dimensions it depends on, so work common to the
// copies (a loop's bounds, a branch condition, an invariant load) is done once.
//
// Which points a thread takes: along x, copies a block width apart (copy r at
// r * 32 + thread), so the 32 threads of a warp still touch consecutive
// addresses in each copy; along y and z, consecutive points (stencils then
// reuse the loads of overlapping windows). Block loops shrink by the factor.
//
// Where stage_shared will put every read along x in shared memory (matmul's
// B), x copies go in groups of 4 consecutive points instead: copy g * 4 + r
// at g * 4 * 32 + 4 * thread + r of the block's columns (the same columns
// the block covers either way). A thread's 4 reads of a row are then one
// 128-bit shared load, and a warp's one contiguous 512-byte span, the
// fewest wavefronts; 8 x 8 per thread is 2 x 2 such sub-tiles of 4 x 4. In
// global memory it would not pay: 4 lanes' reads 16 bytes apart take 4
// times the sectors of a request, and nothing proves a 128-bit access
// aligned. The decision is made here, where the copies are made (rewriting
// them after staging would mean finding them again under the guards
// stage_shared moves), by running stage_shared on the tiled nest and seeing
// whether each read along x went to shared memory: its own criteria, not a
// guess of them. Reads down a column along x (sqdist's Y[j][k]), strided
// along the row, or sliding with a window along it (a filter's I[y][x + v],
// unaligned at most offsets) keep the copies a block width apart.
//
// Edges: a thread runs when its first copy is in range (map_to_gpu's guard
// at copy 0); a copy past the end of the range computes on the last index in
// it (`min(v, bound - 1)`), so every load it makes is one the program makes,
// and does not store; a copy in range stores at its indices before the
// clamp, equal there (storeInRange says why). Every block then runs the
// same straight-line tile, at any size; bodies that read a global buffer
// they also write are left alone (a clamped copy could read an element
// another thread has written). A block whose copies are all in range (the
// last copy of its last thread is: a test on the block index, uniform
// across the block) runs an interior tile instead, without the clamps and
// the store guards: most blocks at realistic sizes. There a y or z copy's
// index is the first copy's plus the copy index, and a window loop over such
// copies is unrolled (slidesAcrossCopies), innermost when it encloses a loop
// of reduction steps (loopOfReductionSteps), so the rows neighbouring copies
// share are loaded once; clamped, they could not be proven equal.
//
// Variants by size (register_tile=0, the default): a thread's 4 x 4
// points, and where 8 x 8 would keep two blocks per SM (the occupancy
// extract_kernels asks for, judged on the nest tiled and staged) a second
// nest of 8 x 8 tiles. The host runs it when its grid has at least 3/4 of
// the blocks that fit on the GPU at once (kFillingWave): larger tiles read
// half the shared memory per multiply-add, but make a quarter of the blocks,
// and a grid that leaves SMs idle loses more than that.
//
// Chosen only where it pays: a mapped dimension is coarsened when a global
// load inside a loop of the body is invariant along it, loads that differ
// across a warp weighing more than broadcasts; only in nests of two or more
// mapped dimensions, where the grid keeps enough blocks at realistic sizes
// (sizes are symbolic here; a 1-D nest would lose parallelism R-fold). Nests
// with barriers or shared memory are left alone. A body with no loop shares
// no loads, but gets consecutive points along y for the loads they keep in
// flight together (rowsInFlight).
#include "passes/Passes.h"

#include "ir/IRVisitor.h"
#include "ir/KernelNest.h"
#include "passes/analysis/AccessAnalysis.h"
#include "passes/analysis/BlockCooperation.h"
#include "passes/analysis/Evaluate.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <functional>
#include <optional>
#include <ranges>

namespace loopc::passes {

using namespace loopc::ir;
using ir::Expr; // not the AST's
using ir::Stmt;

namespace {

const size_t kMaxJammedNodes = 8000; // IR nodes of the jammed body (code size)
const int kWarpWideLoad = 4;         // the reuse weight of a load that differs across a warp
const int64_t kGroupedCopies = 4;    // x copies a lane reads with one 128-bit load of f32

// register_tile=0 (the default): 4 copies a dimension, and a variant of 8
// for grids large enough (see the file comment).
const int64_t kSmallTile = 4;
const int64_t kLargeTile = 8;
// The large tiles' grid must fill this much of the blocks that fit on the
// GPU at once. The performance model (h200, matmul) has 8 x 8 tiles and
// 4 x 4 tiles equal where the 8 x 8 grid makes about three quarters of a
// wave (1792^2), 8 x 8 faster from one wave on, 4 x 4 faster below.
struct Fraction {
  int64_t numerator, denominator;
};
const Fraction kFillingWave{3, 4};
// Deeper pipelines keep more of the large tile's operands in flight: at
// pipeline_depth=3, 8 x 8 tiles spill (extract_kernels.cpp says where).
const int64_t kDeepestLargeTilePipeline = 2;

// Rows a thread computes on the CPU. Two keep a 5 x 5 filter's 25 weights,
// the accumulators and the shared rows within AVX-512's 32 vector
// registers; four spill there (measured as plain C, clang 19: 2 rows faster
// than 1, 4 rows slower than 2).
const int64_t kCpuRows = 2;
// AVX-512's vector registers, which hold a window's weights (elements the
// window reads the same for every point: a filter's), each row's
// accumulator and the input rows being combined. Past them the weights are
// reloaded at every multiply-add: conv2d_11x11's 121 weights over 2 rows ran
// slower than 1 row.
const int64_t kVectorRegisters = 32;

// A set of GPU dimensions (bit d for x, y, z = 0, 1, 2): the copy indices a
// name or statement depends on.
using DimMask = unsigned;
const char kDimLetters[] = "xyz";

// One mapped dimension of the nest, as map_to_gpu made it.
struct MappedDim {
  int gpuDim = 0;
  const For *block = nullptr;
  const For *thread = nullptr;
  int reuse = 0;      // loads in loops of the body invariant along it, weighted
  int64_t factor = 1; // copies along it
  // Along x: copies in groups of kGroupedCopies consecutive points (see the
  // file comment), not a block width apart.
  bool grouped = false;
};

// Which copy, along the dimensions fixed so far.
struct CopyIndex {
  DimMask fixed = 0;
  std::array<int64_t, 3> index{0, 0, 0};
};

// A let of map_to_gpu's guard, `v < bound`.
struct GuardedIndex {
  Expr value; // of the let, from the block and thread indices
  Expr bound;
};

// The nest being tiled, as map_to_gpu made it: its loops, its guarded point,
// and the point's indices the guard bounds, by the name of their lets.
struct MappedNest {
  const Stmt &whole;
  const KernelNest &kernel;
  const GuardedPoint &point;
  const std::map<std::string, GuardedIndex> &guardedIndices;
  SourceRange source;
};

// `.x1y0`: the name of a copy of something that depends on the dimensions in
// `deps` (all fixed in `copy`).
std::string copySuffix(DimMask deps, const CopyIndex &copy) {
  std::string suffix;
  for (int d = 0; d < 3; ++d)
    if (deps & (1u << d))
      suffix += kDimLetters[d] + std::to_string(copy.index[d]);
  return suffix.empty() ? suffix : "." + suffix;
}

// Which blocks a tile is for (see the file comment).
enum class TileKind {
  Edge,      // any block: copies past the end clamped, and not stored
  Interior,  // a block every copy of which is in range: no clamps, no guards
  Unclamped, // any block whose copies read memory through shared boxes only:
             // no clamps, copies past the end not stored
};

// The copies of a thread's body, jammed: each statement is emitted once per
// copy index along the dimensions it depends on, the names it binds renamed
// per copy (`acc.x1y2`), in the order of the original statements.
class Jammer {
public:
  Jammer(const std::vector<MappedDim> &dims, const IfThenElse &guard,
         const std::map<std::string, GuardedIndex> &guardedIndices, TileKind kind, bool cpu)
      : dims_(dims), guard_(guard), guardedIndices_(guardedIndices),
        unclamped_(kind != TileKind::Edge), guarded_(kind != TileKind::Interior), cpu_(cpu) {
    for (const MappedDim &dim : dims) {
      if (dim.factor == 1)
        continue;
      coarsened_ |= 1u << dim.gpuDim;
      // x copies are a block apart: the block index moves per copy; y and z
      // copies are consecutive: the thread index does; grouped x copies
      // move both.
      varDeps_[dim.gpuDim == 0 ? dim.block->var : dim.thread->var] = 1u << dim.gpuDim;
      if (dim.grouped)
        varDeps_[dim.thread->var] = 1u << dim.gpuDim;
    }
  }

  // The thread's work for `inner`, the lets and guard under the thread
  // loops.
  Stmt tile(const Stmt &inner) { return jam(inner, CopyIndex{}); }

  // Whether every copy of every thread of the block is in range: the last
  // copy of the last thread is (map_to_gpu's indices grow with the block
  // and thread indices, and tile_registers' copies with the copy index).
  // Uniform across the block; nothing when an index is not of that form.
  std::optional<Expr> interiorBlock() const {
    const std::vector<MappedDim> &dims = dims_;
    AffineScope scope;
    std::map<std::string, Expr> lastThread;
    CopyIndex last;
    for (const MappedDim &dim : dims) {
      for (const For *loop : {dim.block, dim.thread})
        scope.bindLoop(loop->var);
      const auto *extent = dim.thread->extent->as<IntImm>();
      if (!extent)
        return std::nullopt;
      lastThread[dim.thread->var] = makeInt(dim.thread->extent->type, extent->value - 1);
      last.fixed |= 1u << dim.gpuDim;
      last.index[dim.gpuDim] = dim.factor - 1;
    }
    Expr interior;
    for (const auto &[var, guarded] : guardedIndices_) {
      if (cpu_ && !depsOfName(var))
        continue; // tested per thread in the interior too (guardFirstCopy)
      AffineIndex index = scope.analyze(guarded.value);
      bool grows = index.isAffine() && std::ranges::all_of(dims, [&](const MappedDim &dim) {
                     return index.coefficient(dim.block->var) >= 0 &&
                            index.coefficient(dim.thread->var) >= 0;
                   });
      if (!grows)
        return std::nullopt;
      Expr lastValue = substitute(rewrite(guarded.value, last), lastThread);
      Expr inRange = lessThan(lastValue, guarded.bound);
      interior = interior ? logicalAnd(interior, inRange) : inRange;
    }
    return interior;
  }

private:
  Stmt jam(const Stmt &stmt, const CopyIndex &copy) {
    switch (stmt->kind) {
    case StmtNode::Kind::Block: {
      std::vector<Stmt> stmts;
      for (const Stmt &inner : stmt->as<Block>()->stmts)
        stmts.push_back(jam(inner, copy));
      return makeBlock(std::move(stmts));
    }
    case StmtNode::Kind::LetStmt:
      return jamLet(*stmt->as<LetStmt>(), copy);
    case StmtNode::Kind::Allocate:
      return jamAllocate(*stmt->as<Allocate>(), copy);
    case StmtNode::Kind::Store:
      return jamStore(*stmt->as<Store>(), copy);
    case StmtNode::Kind::AtomicUpdate:
      return jamAtomicUpdate(*stmt->as<AtomicUpdate>(), copy);
    case StmtNode::Kind::Check:
      return jamCheck(*stmt->as<Check>(), copy);
    case StmtNode::Kind::For:
      return jamFor(*stmt->as<For>(), copy);
    case StmtNode::Kind::IfThenElse:
      if (stmt.get() == &guard_)
        return guardFirstCopy(copy);
      return jamIf(*stmt->as<IfThenElse>(), copy);
    default:
      // Barrier (excluded by cooperatesAcrossThreads); Reduce and Launch do not
      // occur in a thread after lower_reductions and extract_kernels.
      assert(false && "tile_registers: unexpected statement in a thread body");
      return stmt;
    }
  }

  // Rewrites an expression of the original body for one copy: the copy's
  // block or thread index, its names and its buffers.
  class CopyRewriter : public IRMutator {
  public:
    CopyRewriter(const Jammer &jammer, const CopyIndex &copy) : jammer_(jammer), copy_(copy) {}

  protected:
    Expr visitVar(const Var &node, const Expr &self) override {
      for (const MappedDim &dim : jammer_.dims_) {
        if (dim.factor == 1)
          continue;
        // Only the loop variables (integers) are rescaled; a let of another
        // type (a bool mask) is copied below like any name.
        auto factor = [&] { return makeInt(node.type, dim.factor); };
        auto scaled = [&] {
          return add(mul(self, factor()), makeInt(node.type, copy_.index[dim.gpuDim]));
        };
        // Grouped, copy g * 4 + r of thread t and block b is thread 4 * t
        // + r of block b * factor + 4 * g: of `b * width + t`, the point
        // (b * factor + 4 * g) * width + 4 * t + r.
        int64_t copy = copy_.index[dim.gpuDim];
        if (dim.grouped && node.name == dim.block->var)
          return add(mul(self, factor()),
                     makeInt(node.type, copy / kGroupedCopies * kGroupedCopies));
        if (dim.grouped && node.name == dim.thread->var)
          return add(mul(self, makeInt(node.type, kGroupedCopies)),
                     makeInt(node.type, copy % kGroupedCopies));
        if (dim.gpuDim == 0 && node.name == dim.block->var)
          return scaled();
        if (dim.gpuDim != 0 && node.name == dim.thread->var)
          return scaled();
        if (dim.gpuDim != 0 && node.name == dim.block->var)
          return mul(self, factor());
      }
      auto deps = jammer_.varDeps_.find(node.name);
      if (deps == jammer_.varDeps_.end())
        return self;
      assert((deps->second & ~copy_.fixed) == 0 && "a copy of a name not fixed");
      if (std::optional<int> dim = jammer_.offsetFromFirstCopy(node.name)) {
        CopyIndex first = copy_;
        first.index[*dim] = 0;
        return add(makeVar(node.type, node.name + copySuffix(deps->second, first)),
                   makeInt(node.type, copy_.index[*dim]));
      }
      return makeVar(node.type, node.name + copySuffix(deps->second, copy_));
    }

    Expr visitLoad(const Load &node, const Expr &self) override {
      std::vector<Expr> indices;
      bool changed = mutateAll(node.indices, indices);
      Buffer buffer = jammer_.bufferFor(node.buffer, copy_);
      // In the tile of every block, a copy past an array's end reads there
      // and is not stored: its global loads are speculative (their indices
      // clamped where stage_shared does not serve them from a box).
      bool speculative = node.speculative ||
                         (jammer_.speculativeCopies() && buffer->memory == MemorySpace::Global &&
                          jammer_.depsOf(node.indices) != 0);
      if (!changed && buffer == node.buffer && speculative == node.speculative)
        return self;
      return std::make_shared<Load>(buffer, std::move(indices), node.source, speculative);
    }

  private:
    const Jammer &jammer_;
    const CopyIndex &copy_;
  };

  class DepsCollector : public IRVisitor {
  public:
    explicit DepsCollector(const Jammer &jammer) : jammer_(jammer) {}
    DimMask deps = 0;

  protected:
    void visitVar(const Var &node) override { deps |= jammer_.depsOfName(node.name); }
    void visitLoad(const Load &node) override {
      deps |= jammer_.depsOfBuffer(node.buffer);
      IRVisitor::visitLoad(node);
    }

  private:
    const Jammer &jammer_;
  };

  // Whether copies past the ends compute unguarded (TileKind::Unclamped).
  bool speculativeCopies() const { return unclamped_ && guarded_; }
  DimMask depsOfName(const std::string &name) const {
    auto found = varDeps_.find(name);
    return found == varDeps_.end() ? 0 : found->second;
  }
  DimMask depsOfBuffer(const Buffer &buffer) const {
    return copiedBuffers_.contains(buffer.get()) ? coarsened_ : 0;
  }
  DimMask depsOf(const std::vector<Expr> &exprs) const {
    DepsCollector collector(*this);
    for (const Expr &expr : exprs)
      collector.visit(expr);
    return collector.deps;
  }

  Buffer bufferFor(const Buffer &buffer, const CopyIndex &copy) const {
    if (!copiedBuffers_.contains(buffer.get()))
      return buffer;
    return bufferCopies_.at({buffer.get(), copySuffix(coarsened_, copy)});
  }

  Expr rewrite(const Expr &expr, const CopyIndex &copy) const {
    return CopyRewriter(*this, copy).mutate(expr);
  }
  std::vector<Expr> rewrite(const std::vector<Expr> &exprs, const CopyIndex &copy) const {
    std::vector<Expr> result;
    for (const Expr &expr : exprs)
      result.push_back(rewrite(expr, copy));
    return result;
  }

  // Calls `emit` for every copy index that extends `copy` along `free`.
  void forEachCopy(DimMask free, const CopyIndex &copy,
                   const std::function<void(const CopyIndex &)> &emit) const {
    for (const MappedDim &dim : dims_) {
      DimMask bit = 1u << dim.gpuDim;
      if (!(free & bit))
        continue;
      for (int64_t r = 0; r < dim.factor; ++r) {
        CopyIndex extended = copy;
        extended.fixed |= bit;
        extended.index[dim.gpuDim] = r;
        forEachCopy(free & ~bit, extended, emit);
      }
      return;
    }
    emit(copy);
  }

  Stmt jamLet(const LetStmt &let, const CopyIndex &copy) {
    DimMask deps = depsOf({let.value});
    if (!deps)
      return std::make_shared<LetStmt>(let.var, rewrite(let.value, copy), jam(let.body, copy));
    varDeps_[let.var] = deps;
    auto guarded = guardedIndices_.find(let.var);
    Stmt body = jam(let.body, copy);
    std::vector<std::pair<std::string, Expr>> bindings;
    std::optional<int> offsetDim = offsetFromFirstCopy(let.var);
    forEachCopy(deps & ~copy.fixed, copy, [&](const CopyIndex &each) {
      if (offsetDim && each.index[*offsetDim] != 0)
        return; // read as the first copy's plus the copy index
      Expr value = rewrite(let.value, each);
      if (guarded != guardedIndices_.end() && !unclamped_)
        value = minOf(value, sub(guarded->second.bound, makeInt(value->type, 1)));
      bindings.emplace_back(let.var + copySuffix(deps, each), value);
    });
    for (auto binding = bindings.rbegin(); binding != bindings.rend(); ++binding)
      body = std::make_shared<LetStmt>(binding->first, binding->second, body);
    return body;
  }

  // In the interior tile, copy r of a thread's index along y or z is its
  // first copy plus r (map_to_gpu's `y = y.block * 8 + y.thread`, the
  // copies consecutive): written so, a window's index at copy r and offset
  // u + 1 is the same expression as at copy r + 1 and offset u once the
  // window is unrolled (slidesAcrossCopies), and the load is made once.
  // The dimension, for such an index.
  std::optional<int> offsetFromFirstCopy(const std::string &name) const {
    auto guarded = guardedIndices_.find(name);
    if (!unclamped_ || guarded == guardedIndices_.end())
      return std::nullopt;
    for (const MappedDim &dim : dims_) {
      if (dim.gpuDim == 0 || dim.factor == 1 || depsOfName(name) != (1u << dim.gpuDim))
        continue;
      // Copy r rewrites the thread index t as t * factor + r: r more, when
      // the index reads t once, with coefficient 1, and the block index as
      // a multiple of the factor.
      AffineScope scope;
      scope.bindLoop(dim.thread->var);
      AffineIndex index = scope.analyze(guarded->second.value);
      if (index.isAffine() && index.coefficient(dim.thread->var) == 1)
        return dim.gpuDim;
    }
    return std::nullopt;
  }

  // A buffer allocated in the body is per thread: one per copy.
  Stmt jamAllocate(const Allocate &allocate, const CopyIndex &copy) {
    const Buffer &buffer = allocate.buffer;
    copiedBuffers_.insert(buffer.get());
    std::vector<Buffer> copies;
    forEachCopy(coarsened_ & ~copy.fixed, copy, [&](const CopyIndex &each) {
      std::string suffix = copySuffix(coarsened_, each);
      auto copied = std::make_shared<BufferInfo>(*buffer);
      copied->programName = buffer->nameInMessages();
      copied->name += suffix;
      copied->shape = rewrite(buffer->shape, each);
      bufferCopies_[{buffer.get(), suffix}] = copied;
      copies.push_back(copied);
    });
    Stmt body = jam(allocate.body, copy);
    for (auto copied = copies.rbegin(); copied != copies.rend(); ++copied)
      body = std::make_shared<Allocate>(*copied, body);
    return body;
  }

  Stmt jamStore(const Store &store, const CopyIndex &copy) {
    DimMask deps = depsOf(store.indices) | depsOf({store.value}) | depsOfBuffer(store.buffer);
    std::vector<Stmt> stores;
    bool perCopyBuffer = copiedBuffers_.contains(store.buffer.get());
    forEachCopy(deps & ~copy.fixed, copy, [&](const CopyIndex &each) {
      Stmt copied =
          std::make_shared<Store>(bufferFor(store.buffer, each), rewrite(store.indices, each),
                                  rewrite(store.value, each), store.source, store.reduction);
      stores.push_back(perCopyBuffer ? copied : storeInRange(copied, each));
    });
    return makeBlock(std::move(stores));
  }

  // Each copy checks its own values, when its indices are in range (an
  // iteration outside the original space checks nothing).
  Stmt jamCheck(const Check &check, const CopyIndex &copy) {
    std::vector<Expr> operands = check.values;
    operands.push_back(check.condition);
    DimMask deps = depsOf(operands);
    std::vector<Stmt> checks;
    forEachCopy(deps & ~copy.fixed, copy, [&](const CopyIndex &each) {
      checks.push_back(
          storeInRange(std::make_shared<Check>(rewrite(check.condition, each), check.message,
                                               rewrite(check.values, each), check.source),
                       each));
    });
    return makeBlock(std::move(checks));
  }

  // Unlike a store, an update repeated is not the same update: every copy
  // makes its own, whatever it depends on.
  Stmt jamAtomicUpdate(const AtomicUpdate &update, const CopyIndex &copy) {
    std::vector<Stmt> updates;
    bool perCopyBuffer = copiedBuffers_.contains(update.buffer.get());
    forEachCopy(coarsened_ & ~copy.fixed, copy, [&](const CopyIndex &each) {
      Stmt copied = std::make_shared<AtomicUpdate>(bufferFor(update.buffer, each),
                                                   rewrite(update.indices, each), update.op,
                                                   rewrite(update.value, each), update.source);
      updates.push_back(perCopyBuffer ? copied : storeInRange(copied, each));
    });
    return makeBlock(std::move(updates));
  }

  Stmt jamFor(const For &loop, const CopyIndex &copy) {
    DimMask deps = depsOf({loop.min, loop.extent});
    if (!deps) {
      auto sameLoop = [&](const For &original, ForKind kind, Stmt body) {
        return std::make_shared<For>(original.var, rewrite(original.min, copy),
                                     rewrite(original.extent, copy), kind, original.gpuDim,
                                     std::move(body), original.source);
      };
      // A window loop around a loop of reduction steps (a filter's columns)
      // goes inside it, so the rows of one column sit side by side however
      // many columns there are (the order a commuting reduction combines in
      // is free). Not on the CPU, whose results stay those of the program's
      // order: there the loop of reduction steps is unrolled too.
      // (Reduction steps bind nothing: jamming them twice is harmless.)
      if (const For *inner = unclamped_ && !cpu_ ? loopOfReductionSteps(loop) : nullptr) {
        Stmt innerBody = jam(inner->body, copy);
        if (slidesAcrossCopies(loop, innerBody))
          return sameLoop(*inner, inner->forKind,
                          sameLoop(loop, ForKind::Unrolled, std::move(innerBody)));
      }
      Stmt body = jam(loop.body, copy);
      bool window = unclamped_ && slidesAcrossCopies(loop, body);
      return sameLoop(loop, window ? ForKind::Unrolled : loop.forKind, std::move(body));
    }
    // Bounds that differ between copies: a loop per copy.
    varDeps_[loop.var] = deps;
    std::vector<Stmt> loops;
    forEachCopy(deps & ~copy.fixed, copy, [&](const CopyIndex &each) {
      loops.push_back(std::make_shared<For>(
          loop.var + copySuffix(deps, each), rewrite(loop.min, each), rewrite(loop.extent, each),
          loop.forKind, loop.gpuDim, jam(loop.body, each), loop.source));
    });
    return makeBlock(std::move(loops));
  }

  // The loop that is `loop`'s whole body, when its bounds do not read
  // `loop`'s variable and its body is reduction steps of commuting operators
  // only (`acc = acc + value`: Store::reduction), which may run in any order.
  static const For *loopOfReductionSteps(const For &loop) {
    const auto *inner = loop.body->as<For>();
    if (!inner || inner->forKind != ForKind::Serial || usesAnyVar(inner->min, {loop.var}) ||
        usesAnyVar(inner->extent, {loop.var}))
      return nullptr;
    std::vector<Stmt> steps{inner->body};
    if (const auto *block = inner->body->as<Block>())
      steps = block->stmts;
    bool onlySteps = std::ranges::all_of(steps, [](const Stmt &step) {
      const auto *store = step->as<Store>();
      return store && store->reduction;
    });
    return onlySteps ? inner : nullptr;
  }

  // A window loop over consecutive copies: a constant loop whose variable
  // is added, in a load's index, to an index the y or z copies take one
  // apart (a filter's rows over a tile of output rows). Copy r at u + 1
  // loads what copy r + 1 loads at u; unrolled (within the code-size
  // budget) in the interior tile, whose copies' indices are unclamped, the
  // iterations sit side by side (code generation emits each one) and LLVM
  // loads each element once for all the copies that read it: a 5 x 5 filter
  // over 4 rows reads 8 input rows per column, not 20.
  bool slidesAcrossCopies(const For &loop, const Stmt &jammedBody) const {
    const auto *trips = loop.extent->as<IntImm>();
    DimMask consecutive = coarsened_ & ~1u; // y and z
    if (loop.forKind != ForKind::Serial || !trips || trips->value < 2 || !consecutive ||
        codeSize(jammedBody) * static_cast<size_t>(trips->value) > kMaxJammedNodes)
      return false;
    class WindowFinder : public IRVisitor {
    public:
      WindowFinder(const Jammer &jammer, const std::string &loopVar, DimMask consecutive)
          : jammer_(jammer), loopVar_(loopVar), consecutive_(consecutive) {}
      bool found = false;

    protected:
      bool finished() const override { return found; }
      void visitLoad(const Load &node) override {
        for (const Expr &index : node.indices)
          found |= usesAnyVar(index, {loopVar_}) && (jammer_.depsOf({index}) & consecutive_);
        IRVisitor::visitLoad(node);
      }

    private:
      const Jammer &jammer_;
      const std::string &loopVar_;
      DimMask consecutive_;
    } finder(*this, loop.var, consecutive);
    finder.visit(loop.body);
    return finder.found;
  }

  Stmt jamIf(const IfThenElse &branch, const CopyIndex &copy) {
    DimMask deps = depsOf({branch.cond});
    std::vector<Stmt> branches;
    forEachCopy(deps & ~copy.fixed, copy, [&](const CopyIndex &each) {
      branches.push_back(
          std::make_shared<IfThenElse>(rewrite(branch.cond, each), jam(branch.thenCase, each),
                                       branch.elseCase ? jam(branch.elseCase, each) : nullptr));
    });
    return makeBlock(std::move(branches));
  }

  // map_to_gpu's guard, `v < bound` for each mapped index v: the thread
  // runs when its first copy is in range; copies past the end compute on
  // the last index in range (so every load they make is one the program
  // makes) and do not store.
  Stmt guardFirstCopy(const CopyIndex &copy) {
    if (!guarded_ && !cpu_)
      return jam(guard_.thenCase, copy);
    Expr firstInRange;
    for (const auto &[var, guarded] : guardedIndices_) {
      // The CPU's interior tile tests the indices its copies share (x, the
      // vector lanes, which the thread nest narrows to the guard).
      if (!guarded_ && depsOfName(var))
        continue;
      Expr inRange = inRangeTest(var, CopyIndex{coarsened_, {0, 0, 0}});
      firstInRange = firstInRange ? logicalAnd(firstInRange, inRange) : inRange;
    }
    if (!firstInRange)
      return jam(guard_.thenCase, copy);
    return std::make_shared<IfThenElse>(firstInRange, jam(guard_.thenCase, copy));
  }

  // `value < bound` for the copy of a guarded let, before clamping.
  Expr inRangeTest(const std::string &var, const CopyIndex &copy) const {
    const GuardedIndex &guarded = guardedIndices_.at(var);
    return lessThan(rewrite(guarded.value, copy), guarded.bound);
  }

  // The global store of a copy happens when the copy's indices are in range.
  // There a clamped index equals its value before clamping, which the store
  // reads instead: the tests need those values after the loop anyway, and
  // the clamped ones then die in the loop that reads them (an 8 x 8 tile
  // kept 16 of them, 32 registers, across its k loop for the stores, and
  // ptxas spilled at 128).
  Stmt storeInRange(Stmt store, const CopyIndex &copy) const {
    if (!guarded_)
      return store;
    Expr inRange;
    std::map<std::string, Expr> unclamped;
    for (const auto &[var, guarded] : guardedIndices_) {
      DimMask deps = depsOfName(var);
      if (!deps || (deps & ~copy.fixed))
        continue;
      Expr test = inRangeTest(var, copy);
      inRange = inRange ? logicalAnd(inRange, test) : test;
      unclamped[var + copySuffix(deps, copy)] = rewrite(guarded.value, copy);
    }
    if (!inRange)
      return store;
    return std::make_shared<IfThenElse>(inRange, substitute(store, unclamped));
  }

  const std::vector<MappedDim> &dims_;
  const IfThenElse &guard_;
  const std::map<std::string, GuardedIndex> &guardedIndices_; // by let name
  const bool unclamped_;                                      // copy indices past the end stay so
  const bool guarded_;                                        // copies past the end do not store
  // The CPU pipeline's rows (RegisterTilingTarget::cpu): the program's order
  // within a copy, and the interior tile guarded along the dimensions
  // without copies.
  const bool cpu_;
  DimMask coarsened_ = 0;
  std::map<std::string, DimMask> varDeps_; // names bound per copy
  std::set<const BufferInfo *> copiedBuffers_;
  std::map<std::pair<const BufferInfo *, std::string>, Buffer> bufferCopies_;
};

class RegisterTiler : public IRMutator {
public:
  // `factor` copies along one dimension (PassParameters::registerTile; 0
  // for variants by size), at most its square per thread, so the
  // accumulators fit in registers.
  RegisterTiler(const PassParameters &parameters, const RegisterTilingTarget &target,
                const RemarkReporter &remarks)
      : factor_(parameters.registerTile == 0 ? kSmallTile : parameters.registerTile),
        bySize_(parameters.registerTile == 0), parameters_(parameters), target_(target),
        remarks_(remarks) {}

  // The choices between tile sizes made for PipelineOptions::runSizes.
  std::vector<Function::SizeChoice> takeSizeChoices() { return std::move(sizeChoices_); }

protected:
  Stmt visitFor(const For &node, const Stmt &self) override {
    if (node.forKind != ForKind::GpuBlock)
      return IRMutator::visitFor(node, self);
    return tileNest(self);
  }

private:
  Stmt tileNest(const Stmt &nest) {
    // map_to_gpu's form: block loops, thread loops, lets, `if (guard)`.
    std::optional<KernelNest> kernel = kernelNestAt(nest);
    if (!kernel || kernel->threads.empty() || kernel->threads.size() != kernel->blocks.size())
      return nest;
    const std::vector<const For *> &blocks = kernel->blocks, &threads = kernel->threads;
    const Stmt &threadNest = kernel->threadNest, &inner = kernel->body;
    std::optional<GuardedPoint> point = guardedPointOf(inner);
    // A nest whose threads cooperate is one a pass built (a block tree, a
    // row per block, a private histogram): not a plain mapping to tile, and
    // no remark about it.
    if (!point || cooperatesAcrossThreads(point->guarded))
      return nest;
    const std::vector<const LetStmt *> &lets = point->lets;
    const Stmt &guarded = point->guarded;
    const IfThenElse *guard = point->guard;
    SourceRange source = nestSource(threads);
    // A loop-free body has no loads to share: nothing to say about it.
    bool hasLoop = containsLoop(guard->thenCase);
    if (threads.size() < 2) {
      if (hasLoop && !target_.cpu)
        remarks_.declined(source, "not tiled: 1 mapped dimension; tiles need 2 or more, so that "
                                  "the grid keeps enough blocks");
      return nest;
    }
    if (const BufferInfo *array = readWrittenArray(guarded)) {
      remarks_.declined(source, "not tiled: the nest reads '" + array->nameInMessages() +
                                    "', which it writes (a copy past the edge, clamped, could "
                                    "read an element another thread has written)");
      return nest;
    }

    std::vector<MappedDim> dims;
    std::set<std::string> indexVars;
    for (const For *thread : threads) {
      auto block = std::ranges::find_if(
          blocks, [&](const For *loop) { return loop->gpuDim == thread->gpuDim; });
      if (block == blocks.end())
        return nest;
      dims.push_back({thread->gpuDim, *block, thread});
      indexVars.insert({thread->var, (*block)->var});
    }
    // Only the lets may read the block and thread indices; they are what
    // the copies rewrite.
    std::set<std::string> guardedVars = freeVars(guarded);
    if (std::ranges::any_of(indexVars, [&](const auto &var) { return guardedVars.contains(var); }))
      return nest;

    std::optional<std::map<std::string, GuardedIndex>> guardedIndices =
        guardedIndicesOf(guard->cond, lets, indexVars);
    if (!guardedIndices)
      return nest;

    MappedNest mapped{nest, *kernel, *point, *guardedIndices, source};
    if (target_.cpu)
      return cpuRows(mapped, dims);
    if (!hasLoop)
      return rowsInFlight(mapped, dims);
    countReuse(threadNest, dims);
    std::vector<MappedDim> small = dims;
    if (!chooseFactors(guard->thenCase, small, factor_)) {
      if (hasLoop)
        remarks_.declined(source, whyNotTiled(guard->thenCase, small));
      return nest;
    }
    // A grid too small to give every SM a block keeps a point a thread: a
    // thread with 16 points runs their steps one after another, where 16
    // threads would run them side by side on more SMs (a padded
    // convolution's borders, a small run). Decided for the sizes of the run
    // where the pipeline knows them.
    Expr smallGrid = gridBlocksOf(blocks, small);
    if (std::optional<int64_t> smallBlocks = evaluateInteger(*smallGrid, target_.runSizes);
        smallBlocks && *smallBlocks < target_.multiprocessors) {
      remarks_.declined(source, "not tiled at these sizes: the grid of " + factorsOf(small) +
                                    " tiles would have " + std::to_string(*smallBlocks) +
                                    " blocks, fewer than the " +
                                    std::to_string(target_.multiprocessors) +
                                    " SMs; a point a thread keeps more of them busy");
      sizeChoices_.push_back({greaterOrEqual(smallGrid, makeI64(target_.multiprocessors)), false});
      return nest;
    }
    Tiling smallTiling = tiledWithLayout(small, mapped);
    if (remarks_.enabled())
      remarks_.applied(source, describeTiles(small) + smallTiling.layout);
    for (const std::optional<std::string> &why : {smallTiling.notGrouped, smallTiling.notUnclamped})
      if (why)
        remarks_.declined(source, *why);
    Stmt tiled = smallTiling.nest;
    if (!bySize_)
      return tiled;
    return withLargeTiles(tiled, small, dims, mapped);
  }

  // A loop-free body on the GPU (an elementwise map, a transpose, a
  // one-step stencil) shares no loads worth a tile, but a thread that
  // computes one point has one round trip to memory in flight: 64 warps of
  // an SM holding 8 KB of 4-byte loads, where an H100 needs about twice that
  // to cover its latency at full bandwidth (a transpose at 8192^2, each
  // thread one point, ran at about half the copy rate; reverse at three
  // quarters: docs/benchmarks.md, GPU history).
  // So a thread computes 4 consecutive points along y (register_tile sizes
  // it), whose loads are independent and issued together (x keeps the
  // warp's consecutive points: coalescing is unchanged); a stencil's
  // neighbouring rows then also share their loads, and a transpose's staged
  // box becomes square. Not where the grid would give an SM no block at the
  // run's sizes, nor for a body with arrays of its own (each copy would
  // have its own).
  Stmt rowsInFlight(const MappedNest &mapped, std::vector<MappedDim> dims) {
    const Stmt &nest = mapped.whole;
    const IfThenElse &guard = *mapped.point.guard;
    SourceRange source = mapped.source;
    auto y = std::ranges::find_if(dims, [](const MappedDim &dim) { return dim.gpuDim == 1; });
    if (y == dims.end() || codeSize(guard.thenCase) * factor_ > kMaxJammedNodes ||
        allocatesArrays(guard.thenCase))
      return nest;
    if (factor_ == 1) {
      remarks_.declined(source, "not tiled: register_tile=1");
      return nest;
    }
    y->factor = factor_;
    Expr grid = gridBlocksOf(mapped.kernel.blocks, dims);
    if (std::optional<int64_t> gridBlocks = evaluateInteger(*grid, target_.runSizes);
        gridBlocks && *gridBlocks < target_.multiprocessors) {
      remarks_.declined(source, "a point per thread at these sizes: the grid of " +
                                    std::to_string(factor_) + " points a thread along " +
                                    dimensionName(*y) + " would have " +
                                    std::to_string(*gridBlocks) + " blocks, fewer than the " +
                                    std::to_string(target_.multiprocessors) + " SMs");
      sizeChoices_.push_back({greaterOrEqual(grid, makeI64(target_.multiprocessors)), false});
      return nest;
    }
    remarks_.applied(source, std::to_string(factor_) + " consecutive points per thread along " +
                                 dimensionName(*y) +
                                 ": the body has no loop, so their loads are in flight together");
    return tiledWithLayout(dims, mapped).nest;
  }

  // Whether `body` allocates an array of its own (a `var` array of the
  // program): each copy would get one, its memory multiplied for no reuse.
  static bool allocatesArrays(const Stmt &body) {
    class Allocations : public IRVisitor {
    public:
      bool found = false;

    protected:
      bool finished() const override { return found; }
      void visitAllocate(const Allocate &) override { found = true; }
    } allocations;
    allocations.visit(body);
    return allocations.found;
  }

  // The CPU's tiles (RegisterTilingTarget::cpu): x is the vector lanes, so
  // copies go along y only, kCpuRows consecutive rows a thread, where a
  // window of the body slides along y (a filter's rows: I[y + u][x + v]).
  // The rows then load the input rows their windows share once, and their
  // chains of multiply-adds run side by side in vector registers instead of
  // one after the other (conv2d_5x5 took about two thirds of the time).
  Stmt cpuRows(const MappedNest &mapped, std::vector<MappedDim> dims) {
    const Stmt &nest = mapped.whole, &threadNest = mapped.kernel.threadNest;
    SourceRange source = mapped.source;
    // Without a window along y there is nothing of this kind to gain (the
    // CPU's other passes shape such nests): no remark.
    auto y = std::ranges::find_if(dims, [](const MappedDim &dim) { return dim.gpuDim == 1; });
    if (y == dims.end() || !windowSlidesAlong(threadNest, y->thread->var))
      return nest;
    int64_t weights = windowWeights(threadNest, dims);
    if (weights + 2 * kCpuRows + 1 > kVectorRegisters) {
      remarks_.declined(source, "not tiled on the CPU: the window's " + std::to_string(weights) +
                                    " weights would not stay in vector registers beside " +
                                    std::to_string(kCpuRows) + " rows (" +
                                    std::to_string(kVectorRegisters) + " registers)");
      return nest;
    }
    size_t size = codeSize(mapped.point.guard->thenCase);
    if (size * kCpuRows > kMaxJammedNodes) {
      remarks_.declined(source, "not tiled on the CPU: the body is too large to copy (" +
                                    std::to_string(size) + " IR nodes; " +
                                    std::to_string(kCpuRows) + " copies would pass " +
                                    std::to_string(kMaxJammedNodes) + ")");
      return nest;
    }
    y->factor = kCpuRows;
    remarks_.applied(source, std::to_string(kCpuRows) + " consecutive rows per thread along " +
                                 dimensionName(*y) +
                                 " on the CPU: their windows overlap, so the rows share loads "
                                 "and their chains run side by side (x stays the vector lanes)");
    return tiledNest(dims, mapped);
  }

  // The elements the body's loads read inside constant loops that are the
  // same for every point of the nest (a filter's weights): the loads that
  // move with none of `dims`, each counted once per iteration of the
  // constant loops it moves with. Unknown loops count as large.
  static int64_t windowWeights(const Stmt &threadNest, const std::vector<MappedDim> &dims) {
    std::map<std::string, int64_t> trips = constantLoopsIn(threadNest);
    int64_t weights = 0;
    for (const BufferAccess &access : collectAccesses(threadNest)) {
      auto movesWith = [&](const std::string &var) {
        return std::ranges::any_of(access.indices,
                                   [&](const AffineIndex &index) { return index.dependsOn(var); });
      };
      bool perPoint = std::ranges::any_of(dims, [&](const MappedDim &dim) {
        return movesWith(dim.thread->var) || movesWith(dim.block->var);
      });
      if (access.isStore || perPoint)
        continue;
      int64_t elements = 1;
      for (const std::string &loop : access.enclosingLoops)
        if (movesWith(loop)) {
          auto count = trips.find(loop);
          elements *= count == trips.end() ? kVectorRegisters : std::max<int64_t>(count->second, 1);
        }
      if (elements > 1)
        weights += elements;
    }
    return weights;
  }

  // Whether a load in `threadNest` reads consecutive rows along
  // `threadVar` and moves with a constant loop of the body: a window along
  // that dimension, which neighbouring copies overlap (rows a chunk apart,
  // `c * rows + k`, share nothing).
  static bool windowSlidesAlong(const Stmt &threadNest, const std::string &threadVar) {
    std::map<std::string, int64_t> constantLoops = constantLoopsIn(threadNest);
    return std::ranges::any_of(collectAccesses(threadNest), [&](const BufferAccess &access) {
      return !access.isStore && std::ranges::any_of(access.indices, [&](const AffineIndex &index) {
        // Consecutive rows (the thread index's coefficient 1) that the
        // window's steps reach: copy r + 1's rows are copy r's, one step on.
        return index.isAffine() && index.coefficient(threadVar) == 1 &&
               std::ranges::any_of(constantLoops, [&](const auto &loop) {
                 return index.coefficient(loop.first) != 0;
               });
      });
    });
  }

  // The trip counts of the loops of a thread's body (not the block's and
  // thread loops) whose extents are constants.
  static std::map<std::string, int64_t> constantLoopsIn(const Stmt &threadNest) {
    class ConstantLoops : public IRVisitor {
    public:
      std::map<std::string, int64_t> trips;

    protected:
      void visitFor(const For &node) override {
        const auto *extent = node.extent->as<IntImm>();
        if (extent && node.forKind != ForKind::GpuThread && node.forKind != ForKind::GpuBlock)
          trips[node.var] = extent->value;
        IRVisitor::visitFor(node);
      }
    } loops;
    loops.visit(threadNest);
    return loops.trips;
  }

  // `tiled`, the nest at `small` tiles (4 x 4), or a host branch between it
  // and the nest at 8 x 8 tiles where they pay (the file comment).
  Stmt withLargeTiles(const Stmt &tiled, const std::vector<MappedDim> &small,
                      const std::vector<MappedDim> &dims, const MappedNest &mapped) {
    const std::vector<const For *> &blocks = mapped.kernel.blocks;
    const IfThenElse &guard = *mapped.point.guard;
    SourceRange source = mapped.source;
    std::vector<MappedDim> large = dims;
    // Only square tiles have been measured against each other: a thread's
    // 4 x 4 points and 8 x 8.
    if (copiesOf(small) != kSmallTile * kSmallTile ||
        !chooseFactors(guard.thenCase, large, kLargeTile) ||
        copiesOf(large) != kLargeTile * kLargeTile)
      return tiled;
    std::string largeTiles = factorsOf(large);
    if (parameters_.pipelineDepth > kDeepestLargeTilePipeline) {
      remarks_.declined(source, "no " + largeTiles +
                                    " variant for grids that fill the GPU at "
                                    "pipeline_depth=" +
                                    std::to_string(parameters_.pipelineDepth) +
                                    ": its edge tile would spill registers");
      return tiled;
    }
    // The grid of the large tiles, in blocks, evaluated on the host; at the
    // sizes of the run compiled for, when the pipeline knows them.
    Expr gridBlocks = gridBlocksOf(blocks, large);
    std::optional<int64_t> blocksHere = evaluateInteger(*gridBlocks, target_.runSizes);
    auto tooFewBlocks = [&](int64_t blocksPerSM) {
      return "no " + largeTiles + " tiles at these sizes: their grid would have " +
             std::to_string(*blocksHere) + " blocks, fewer than " +
             std::to_string(blocksFillingGpu(blocksPerSM)) + " (" + fillingWave(blocksPerSM) + ")";
    };
    // Two blocks per SM at least, or no variant: a run on too few blocks for
    // that decides before the large tiles are made.
    if (blocksHere && *blocksHere < blocksFillingGpu(2)) {
      remarks_.declined(source, tooFewBlocks(2));
      sizeChoices_.push_back({greaterOrEqual(gridBlocks, makeI64(blocksFillingGpu(2))), false});
      return tiled;
    }
    Tiling largeTiling = tiledWithLayout(large, mapped);
    Stmt largeTiled = largeTiling.nest;
    Function staged;
    staged.body = largeTiling.staged ? largeTiling.staged : largeTiled;
    if (target_.stagingFollows && !largeTiling.staged)
      staged = stageShared(std::move(staged), parameters_, {}, target_.computeCapability);
    int64_t blocksPerSM = blocksPerSMToAsk(staged.body);
    if (blocksPerSM < 2) {
      remarks_.declined(source,
                        "no " + largeTiles + " variant for grids that fill the GPU: its " +
                            std::to_string(copiesOf(large)) +
                            " accumulators a thread would leave room for one block per SM (two "
                            "need operands streamed from shared memory filled by async copies, "
                            "along at most 2 loops)");
      return tiled;
    }
    // The host's choice, which drop_untaken_branches makes where the sizes
    // of the run are known.
    int64_t fills = blocksFillingGpu(blocksPerSM);
    Stmt bySize =
        std::make_shared<IfThenElse>(greaterOrEqual(gridBlocks, makeI64(fills)), largeTiled, tiled);
    if (!blocksHere)
      remarks_.applied(source,
                       largeTiles + " points per thread instead where the grid of " + largeTiles +
                           " tiles has " + std::to_string(fills) +
                           " blocks or more (tested at run time): " + fillingWave(blocksPerSM));
    else if (*blocksHere < fills)
      remarks_.declined(source, tooFewBlocks(blocksPerSM));
    else
      remarks_.applied(source,
                       largeTiles + " points per thread instead: at these sizes the grid of " +
                           largeTiles + " tiles has " + std::to_string(*blocksHere) + " blocks, " +
                           std::to_string(fills) + " or more (" + fillingWave(blocksPerSM) + ")");
    return bySize;
  }

  // A nest tiled, and what its remarks say of the x copies' layout.
  struct Tiling {
    Stmt nest;
    std::string layout;                      // "; j (grid x) copies 4 consecutive points ..."
    std::optional<std::string> notGrouped;   // why x copies stay a block width apart
    std::optional<std::string> notUnclamped; // why unclamped_tiles=1 is declined
    // The nest as stage_shared stages it, where judging the layout took that.
    Stmt staged;
  };

  // The nest tiled with `dims`' factors, x copies grouped where that pays
  // (whyNotGrouped).
  Tiling tiledWithLayout(std::vector<MappedDim> dims, const MappedNest &mapped) const {
    Tiling tiling{tiledNest(dims, mapped), "", {}, {}, {}};
    MappedDim *x = groupableX(dims, mapped.point.lets);
    if (!x)
      return tiling;
    x->grouped = true;
    Stmt grouped = tiledNest(dims, mapped);
    if (std::optional<std::string> why = whyNotGrouped(grouped, dims, tiling.staged)) {
      tiling.notGrouped = dimensionName(*x) + " copies a block width apart, not " +
                          std::to_string(kGroupedCopies) + " consecutive points a thread: " + *why;
      tiling.staged = nullptr; // (of the grouped nest, not this one)
      return tiling;
    }
    tiling.nest = grouped;
    tiling.layout = "; " + dimensionName(*x) + " copies " + std::to_string(kGroupedCopies) +
                    " consecutive points a thread (its reads of shared memory 128-bit, "
                    "contiguous across a warp)";
    if (parameters_.unclampedTiles) {
      if (std::optional<std::string> hazard = faultPastEnds(mapped.kernel.body))
        tiling.notUnclamped = "no tile for every block (unclamped_tiles=1): a copy past the "
                              "ends would compute on what it reads there, and " +
                              *hazard;
      else
        withUnclampedTile(tiling, dims, mapped);
    }
    return tiling;
  }

  // What a copy past the arrays' ends, computing on the unspecified values
  // its speculative loads give there, could do beyond computing a value
  // nobody stores: divide by zero, fail a check, run a loop as long as such
  // a value says, or index an array with it. Nothing where it cannot.
  static std::optional<std::string> faultPastEnds(const Stmt &body) {
    struct Hazards : IRVisitor {
      std::optional<std::string> found;
      std::set<std::string> readNames; // lets whose values read memory
      bool readsMemory(const Expr &expr) const {
        return !loadsIn(expr).empty() || usesAnyVar(expr, readNames);
      }
      void visitLetStmt(const LetStmt &node) override {
        if (readsMemory(node.value))
          readNames.insert(node.var);
        IRVisitor::visitLetStmt(node);
      }
      void visitBinary(const Binary &node) override {
        if (isInteger(node.type) &&
            (node.op == BinaryOpKind::Div || node.op == BinaryOpKind::Rem) && readsMemory(node.rhs))
          found = "an integer division's divisor reads memory";
        IRVisitor::visitBinary(node);
      }
      void visitLoad(const Load &node) override {
        if (std::ranges::any_of(node.indices,
                                [&](const Expr &index) { return readsMemory(index); }))
          found = "an index reads memory";
        IRVisitor::visitLoad(node);
      }
      void visitCheck(const Check &node) override {
        found = "the body checks a value at run time";
        IRVisitor::visitCheck(node);
      }
      void visitFor(const For &node) override {
        if (readsMemory(node.min) || readsMemory(node.extent))
          found = "a loop's bounds read memory";
        IRVisitor::visitFor(node);
      }
    } hazards;
    hazards.visit(body);
    return hazards.found;
  }

  // `tiling` as one tile for every block (TileKind::Unclamped) where its
  // copies read memory through shared boxes only: edge blocks then run as
  // fast as interior ones, from the same code.
  void withUnclampedTile(Tiling &tiling, const std::vector<MappedDim> &dims,
                         const MappedNest &mapped) const {
    Stmt unclamped = tiledNest(dims, mapped, true);
    Function trial;
    trial.body = unclamped;
    trial = stageShared(std::move(trial), parameters_, {}, target_.computeCapability);
    if (!readsPastEndsFromShared(unclamped, trial.body, dims))
      return;
    tiling.nest = unclamped;
    tiling.staged = trial.body;
    tiling.layout += "; one tile for every block, copies past the ends computing on what the "
                     "shared boxes hold there, not stored";
  }

  // The nest with each thread computing its copies (`dims`' factors and
  // layout).
  // `unclamped`: one tile for every block (TileKind::Unclamped), where
  // readsPastEndsFromShared says it may.
  Stmt tiledNest(const std::vector<MappedDim> &dims, const MappedNest &mapped,
                 bool unclamped = false) const {
    const IfThenElse &guard = *mapped.point.guard;
    const Stmt &inner = mapped.kernel.body;
    Stmt body;
    if (unclamped)
      body =
          Jammer(dims, guard, mapped.guardedIndices, TileKind::Unclamped, target_.cpu).tile(inner);
    else
      body = edgeAndInteriorTiles(dims, inner, guard, mapped.guardedIndices);
    for (const For *thread : mapped.kernel.threads | std::views::reverse)
      body = std::make_shared<For>(thread->var, thread->min, thread->extent, ForKind::GpuThread,
                                   thread->gpuDim, body, thread->source);
    for (const For *block : mapped.kernel.blocks | std::views::reverse)
      body = std::make_shared<For>(block->var, block->min, tiledExtent(*block, dims),
                                   ForKind::GpuBlock, block->gpuDim, body, block->source);
    return body;
  }

  // A thread's work in the edge tile, and in the interior tile where the
  // block's copies are all in range.
  Stmt edgeAndInteriorTiles(const std::vector<MappedDim> &dims, const Stmt &inner,
                            const IfThenElse &guard,
                            const std::map<std::string, GuardedIndex> &guardedIndices) const {
    // The edge tile keeps x copies a block width apart even where the
    // interior groups them: its clamped indices are not provably
    // neighbours, so grouped reads would stay scalar and four copies' reads
    // a lane apart would meet in a quarter of the banks (matmul 1000, where
    // most blocks are edge blocks, ran slower on an H200: docs/benchmarks.md,
    // GPU history). Both layouts cover the block's points, and a block runs
    // one tile or the other.
    std::vector<MappedDim> edgeDims = dims;
    for (MappedDim &dim : edgeDims)
      dim.grouped = false;
    Jammer edge(edgeDims, guard, guardedIndices, TileKind::Edge, target_.cpu);
    Stmt body = edge.tile(inner);
    if (std::optional<Expr> interior = edge.interiorBlock())
      body = std::make_shared<IfThenElse>(
          *interior,
          Jammer(dims, guard, guardedIndices, TileKind::Interior, target_.cpu).tile(inner), body);
    return body;
  }

  // Whether `staged`, the nest `unclamped` (TileKind::Unclamped) as
  // stage_shared stages it, reads no memory at a copy's index but from
  // shared memory: every load and store of `unclamped` that moves with a
  // copy is a global store (guarded) or a global load stage_shared moved
  // into a box, where past the array's ends it reads zeros or elements in
  // range.
  static bool readsPastEndsFromShared(const Stmt &unclamped, const Stmt &staged,
                                      const std::vector<MappedDim> &dims) {
    auto movesWithCopies = [&](const BufferAccess &access) {
      return std::ranges::any_of(dims, [&](const MappedDim &dim) {
        return dim.factor > 1 && std::ranges::any_of(access.indices, [&](const AffineIndex &index) {
                 return index.dependsOn(dim.block->var) || index.dependsOn(dim.thread->var);
               });
      });
    };
    std::set<SourceLoc> perCopyLoads;
    for (const BufferAccess &access : collectAccesses(unclamped)) {
      if (!movesWithCopies(access) || access.buffer->memory == MemorySpace::Shared)
        continue;
      if (access.buffer->memory != MemorySpace::Global || (access.load && !access.source.valid()))
        return false;
      if (access.load)
        perCopyLoads.insert(access.source.begin);
    }
    return std::ranges::none_of(collectAccesses(staged), [&](const BufferAccess &access) {
      return access.load && access.source.valid() && access.buffer->memory == MemorySpace::Global &&
             perCopyLoads.contains(access.source.begin);
    });
  }

  // The extent of the block loop `block` once its dimension has its factor
  // of copies a thread: the blocks shrink by it.
  static Expr tiledExtent(const For &block, const std::vector<MappedDim> &dims) {
    auto dim = std::ranges::find_if(dims, [&](const MappedDim &d) { return d.block == &block; });
    if (dim->factor == 1)
      return block.extent;
    ScalarType type = block.extent->type;
    return div(add(block.extent, makeInt(type, dim->factor - 1)), makeInt(type, dim->factor));
  }

  // The blocks of the grid of `dims`' tiles, an i64 expression.
  static Expr gridBlocksOf(const std::vector<const For *> &blocks,
                           const std::vector<MappedDim> &dims) {
    Expr gridBlocks;
    for (const For *block : blocks) {
      Expr extent = toI64(tiledExtent(*block, dims));
      gridBlocks = gridBlocks ? mul(gridBlocks, extent) : extent;
    }
    return gridBlocks;
  }

  // The blocks a run needs at least for 8 x 8 tiles to pay on
  // `blocksPerSM` blocks per SM.
  int64_t blocksFillingGpu(int64_t blocksPerSM) const {
    int64_t resident = blocksPerSM * target_.multiprocessors;
    return (resident * kFillingWave.numerator + kFillingWave.denominator - 1) /
           kFillingWave.denominator;
  }

  // "3/4 of the 264 that fit at once, 2 per SM on 132 SMs".
  std::string fillingWave(int64_t blocksPerSM) const {
    return "3/4 of the " + std::to_string(blocksPerSM * target_.multiprocessors) +
           " that fit at once, " + std::to_string(blocksPerSM) + " per SM on " +
           std::to_string(target_.multiprocessors) + " SMs";
  }

  // The x dimension, when its copies can go in groups of 4 consecutive
  // points: copies in multiples of 4, and every let reading its indices of
  // the form `b * width + t` (times a constant, plus anything else), so
  // thread 4 * t + r of a block 4 blocks wide is a point of the same block
  // of the original mapping.
  static MappedDim *groupableX(std::vector<MappedDim> &dims,
                               const std::vector<const LetStmt *> &lets) {
    auto x = std::ranges::find_if(dims, [](const MappedDim &dim) { return dim.gpuDim == 0; });
    if (x == dims.end() || x->factor % kGroupedCopies != 0)
      return nullptr;
    const auto *width = x->thread->extent->as<IntImm>();
    if (!width)
      return nullptr;
    AffineScope scope;
    scope.bindLoop(x->block->var);
    scope.bindLoop(x->thread->var);
    for (const LetStmt *let : lets) {
      AffineIndex index = scope.analyze(let->value);
      if (!index.isAffine() ||
          index.coefficient(x->block->var) != width->value * index.coefficient(x->thread->var))
        return nullptr;
    }
    return &*x;
  }

  // The grouped layout pays where a thread's copies read shared memory:
  // every load that differs along x must be one stage_shared stages (in
  // global memory, lanes whose reads are 16 bytes apart take 4 times the
  // sectors of one request, and nothing proves a 128-bit access aligned).
  // Asked of stage_shared itself, run on the tiled nest, rather than
  // guessed from its criteria: a box too large, or reused too little,
  // stays in global memory. Why not, or nothing when it pays.
  std::optional<std::string> whyNotGrouped(const Stmt &nest, const std::vector<MappedDim> &dims,
                                           Stmt &staged) const {
    if (!target_.stagingFollows)
      return "stage_shared does not run";
    const MappedDim &x =
        *std::ranges::find_if(dims, [](const MappedDim &dim) { return dim.gpuDim == 0; });
    std::set<std::string> indexVars;
    for (const MappedDim &dim : dims)
      indexVars.insert({dim.block->var, dim.thread->var});
    std::map<SourceLoc, std::string> rowReads;
    for (const BufferAccess &access : collectAccesses(nest)) {
      if (!access.load || !access.source.valid() || access.buffer->memory != MemorySpace::Global ||
          strideAlong(access, x.thread->var).kind == Stride::Kind::Zero)
        continue;
      std::string array = remarks_.programName(access.buffer->nameInMessages());
      // A thread's 4 points must be neighbours in a row: not rows apart
      // (a read down a column, sqdist's Y[j][k])...
      for (size_t d = 0; d + 1 < access.indices.size(); ++d)
        if (access.indices[d].dependsOn(x.thread->var))
          return "its reads of '" + array + "' go down a column along it";
      // ... nor elements apart (a strided walk of the row, `j in 1..N by 2`:
      // a thread's 4 points then are 8 elements wide, and the warp's reads
      // of one copy collide in fewer banks than before; the edge tile's
      // clamped indices are not affine, the interior tile's tell)...
      const AffineIndex &row = access.indices.back();
      if (row.isAffine() && row.coefficient(x.thread->var) != kGroupedCopies)
        return "its reads of '" + array + "' are not contiguous along it";
      // ... nor a window sliding along the row (a filter's `x + v`), whose
      // 4 points start at every offset, not at 16-byte boundaries.
      for (const std::string &loop : access.enclosingLoops)
        if (!indexVars.contains(loop) && access.indices.back().dependsOn(loop))
          return "its reads of '" + array + "' slide along the row with '" +
                 remarks_.programName(loop) + "' (unaligned)";
      rowReads.emplace(access.source.begin, array);
    }
    if (rowReads.empty())
      return "no load differs along it";
    Function trial;
    trial.body = nest;
    trial = stageShared(std::move(trial), parameters_, {}, target_.computeCapability);
    staged = trial.body;
    for (const BufferAccess &access : collectAccesses(trial.body)) {
      auto read = rowReads.find(access.source.begin);
      if (access.load && access.source.valid() && access.buffer->memory == MemorySpace::Global &&
          read != rowReads.end())
        return "'" + read->second +
               "' is read from global memory, where 4 points a thread would not coalesce";
    }
    return std::nullopt;
  }

  // The guard as map_to_gpu writes it, `v < bound && ...` over lets `v` of
  // the block and thread indices (no other let) with bounds that depend on
  // neither; nothing else can be clamped.
  static std::optional<std::map<std::string, GuardedIndex>>
  guardedIndicesOf(const Expr &cond, const std::vector<const LetStmt *> &lets,
                   const std::set<std::string> &indexVars) {
    std::set<std::string> letVars;
    for (const LetStmt *let : lets)
      letVars.insert(let->var);
    std::map<std::string, GuardedIndex> guarded;
    for (const Expr &conjunct : conjunctsOf(cond)) {
      const auto *less = conjunct->as<Binary>();
      const auto *var = less && less->op == BinaryOpKind::Lt ? less->lhs->as<Var>() : nullptr;
      auto let = std::ranges::find_if(
          lets, [&](const LetStmt *let) { return var && let->var == var->name; });
      if (let == lets.end() || usesAnyVar((*let)->value, letVars) ||
          usesAnyVar(less->rhs, letVars) || usesAnyVar(less->rhs, indexVars))
        return std::nullopt;
      guarded[var->name] = {(*let)->value, less->rhs};
    }
    return guarded;
  }

  // A copy past the end reads at the last index in range: harmless unless
  // the body reads a global buffer it also writes (another iteration's
  // element, possibly written already). That buffer, if any.
  static const BufferInfo *readWrittenArray(const Stmt &body) {
    std::set<const BufferInfo *> loaded, stored;
    std::vector<const BufferInfo *> inOrder; // of first load, for a deterministic answer
    for (const BufferAccess &access : collectAccesses(body)) {
      if (access.buffer->memory != MemorySpace::Global)
        continue;
      if (!access.isStore && loaded.insert(access.buffer.get()).second)
        inOrder.push_back(access.buffer.get());
      if (access.isStore)
        stored.insert(access.buffer.get());
    }
    auto written =
        std::ranges::find_if(inOrder, [&](auto *buffer) { return stored.contains(buffer); });
    return written == inOrder.end() ? nullptr : *written;
  }

  // Where the remarks about a nest point: its outermost loop in the source.
  static SourceRange nestSource(const std::vector<const For *> &threads) {
    SourceRange first = threads.front()->source;
    for (const For *thread : threads)
      if (thread->source.valid() && (!first.valid() || thread->source.begin < first.begin))
        first = thread->source;
    return first;
  }

  static bool containsLoop(const Stmt &body) {
    class Finder : public IRVisitor {
    public:
      bool found = false;

    protected:
      void visitFor(const For &) override { found = true; }
    } finder;
    finder.visit(body);
    return finder.found;
  }

  // The program's name of a mapped dimension (map_to_gpu's thread loop of
  // `i` is `i.thread`), and its letter: "j (grid x)".
  std::string dimensionName(const MappedDim &dim) const {
    std::string var = dim.thread->var;
    if (var.ends_with(".thread"))
      var.resize(var.size() - std::string(".thread").size());
    return remarks_.programName(var) + " (grid " + kDimLetters[dim.gpuDim] + ")";
  }

  // The dimensions in the order of the hardware's (x first).
  static std::vector<const MappedDim *> byGpuDim(const std::vector<MappedDim> &dims) {
    std::vector<const MappedDim *> sorted;
    for (const MappedDim &dim : dims)
      sorted.push_back(&dim);
    std::ranges::sort(sorted, {}, &MappedDim::gpuDim);
    return sorted;
  }

  // "8 x 8": the factors of the coarsened dimensions, x first.
  static std::string factorsOf(const std::vector<MappedDim> &dims) {
    std::string factors;
    for (const MappedDim *dim : byGpuDim(dims))
      if (dim->factor > 1)
        factors += (factors.empty() ? "" : " x ") + std::to_string(dim->factor);
    return factors;
  }

  static int64_t copiesOf(const std::vector<MappedDim> &dims) {
    int64_t copies = 1;
    for (const MappedDim &dim : dims)
      copies *= dim.factor;
    return copies;
  }

  // "4 x 4 points per thread along j (grid x) and i (grid y)", and each dimension
  // left whole with why (chooseFactors' reasons).
  std::string describeTiles(const std::vector<MappedDim> &dims) const {
    std::string factors, along, whole;
    int64_t copies = 1;
    for (const MappedDim *dim : byGpuDim(dims)) {
      copies *= dim->factor;
      if (dim->factor > 1) {
        factors += (factors.empty() ? "" : " x ") + std::to_string(dim->factor);
        along += (along.empty() ? "" : " and ") + dimensionName(*dim);
      }
    }
    for (const MappedDim *dim : byGpuDim(dims)) {
      if (dim->factor > 1)
        continue;
      std::string why = dim->reuse == 0 ? "no load in a loop is invariant along it"
                        : copies == factor_ * factor_
                            ? "a thread has " + std::to_string(factor_) +
                                  "^2 = " + std::to_string(copies) + " points already"
                            : "more copies would pass the code-size budget";
      whole += "; not along " + dimensionName(*dim) + ": " + why;
    }
    return factors + " points per thread along " + along + whole;
  }

  // Why no dimension got copies: no reuse along any, register_tile=1, or a
  // body too large to copy.
  std::string whyNotTiled(const Stmt &body, const std::vector<MappedDim> &dims) const {
    std::string names;
    for (const MappedDim *dim : byGpuDim(dims))
      names += (names.empty() ? "" : " or ") + dimensionName(*dim);
    if (std::ranges::none_of(dims, [](const MappedDim &dim) { return dim.reuse > 0; }))
      return "not tiled: no load in a loop of the body is invariant along " + names +
             ", so neighbouring points share no loads";
    if (factor_ == 1)
      return "not tiled: register_tile=1";
    return "not tiled: the body is too large to copy (" + std::to_string(codeSize(body)) +
           " IR nodes; 2 copies would pass " + std::to_string(kMaxJammedNodes) + ")";
  }

  // Per mapped dimension, the global loads inside a loop of the body (they
  // change with the loop) that do not change along the dimension: each is
  // loaded once for all copies along it. A load that differs across the
  // threads of a warp (along x) is a memory transaction per warp and counts
  // kWarpWideLoad times one that is the same for the whole warp (a broadcast).
  static void countReuse(const Stmt &threadNest, std::vector<MappedDim> &dims) {
    std::set<std::string> threadVars;
    for (const MappedDim &dim : dims)
      threadVars.insert(dim.thread->var);
    std::map<std::string, std::set<std::string>> boundDeps = loopBoundDependences(threadNest, dims);
    auto x = std::ranges::find_if(dims, [](const MappedDim &dim) { return dim.gpuDim == 0; });
    for (const BufferAccess &access : collectAccesses(threadNest)) {
      if (access.isStore || access.buffer->memory != MemorySpace::Global)
        continue;
      bool changesInLoop = std::ranges::any_of(access.enclosingLoops, [&](const auto &loop) {
        return !threadVars.contains(loop) && strideAlong(access, loop).kind != Stride::Kind::Zero;
      });
      if (!changesInLoop)
        continue;
      bool warpWide =
          x != dims.end() && strideAlong(access, x->thread->var).kind != Stride::Kind::Zero;
      for (MappedDim &dim : dims) {
        // A loop whose bounds move along the dimension is copied per copy
        // (a window per pixel of a box filter): its loads are not shared.
        bool ownLoopPerCopy = std::ranges::any_of(access.enclosingLoops, [&](const auto &loop) {
          auto deps = boundDeps.find(loop);
          return deps != boundDeps.end() && deps->second.contains(dim.thread->var);
        });
        if (!ownLoopPerCopy && strideAlong(access, dim.thread->var).kind == Stride::Kind::Zero)
          dim.reuse += warpWide ? kWarpWideLoad : 1;
      }
    }
  }

  // Per loop variable inside the thread nest, the mapped dimensions (by
  // their thread variable) its loop's bounds depend on, through lets and
  // outer loops' variables.
  static std::map<std::string, std::set<std::string>>
  loopBoundDependences(const Stmt &threadNest, const std::vector<MappedDim> &dims) {
    class Dependences : public IRVisitor {
    public:
      explicit Dependences(const std::vector<MappedDim> &dims) {
        for (const MappedDim &dim : dims)
          for (const For *loop : {dim.block, dim.thread})
            deps_[loop->var] = {dim.thread->var};
      }
      std::map<std::string, std::set<std::string>> loopDeps;

    protected:
      void visitLetStmt(const LetStmt &node) override {
        deps_[node.var] = depsOf({node.value});
        IRVisitor::visitLetStmt(node);
      }
      void visitFor(const For &node) override {
        if (!deps_.contains(node.var))
          deps_[node.var] = loopDeps[node.var] = depsOf({node.min, node.extent});
        IRVisitor::visitFor(node);
      }

    private:
      std::set<std::string> depsOf(const std::vector<Expr> &exprs) const {
        std::set<std::string> result;
        for (const Expr &expr : exprs)
          for (const std::string &name : freeVars(expr))
            if (auto deps = deps_.find(name); deps != deps_.end())
              result.insert(deps->second.begin(), deps->second.end());
        return result;
      }
      std::map<std::string, std::set<std::string>> deps_;
    } dependences(dims);
    dependences.visit(threadNest);
    return dependences.loopDeps;
  }

  // Factors for the dimensions with reuse, most reuse first (x on a tie),
  // `factor` each and at most its square in all, within the code-size
  // budget. False when none pays.
  static bool chooseFactors(const Stmt &body, std::vector<MappedDim> &dims, int64_t factor) {
    std::vector<MappedDim *> byReuse;
    for (MappedDim &dim : dims)
      if (dim.reuse > 0)
        byReuse.push_back(&dim);
    std::ranges::stable_sort(byReuse, [](const MappedDim *a, const MappedDim *b) {
      return a->reuse != b->reuse ? a->reuse > b->reuse : a->gpuDim < b->gpuDim;
    });
    int64_t copies = 1;
    for (MappedDim *dim : byReuse)
      if (copies * factor <= factor * factor) {
        dim->factor = factor;
        copies *= factor;
      }
    size_t size = codeSize(body);
    // Over the code-size budget: halve the factors, least reuse first.
    for (auto dim = byReuse.rbegin(); dim != byReuse.rend();) {
      if (size * static_cast<size_t>(copies) <= kMaxJammedNodes)
        break;
      if ((*dim)->factor == 1) {
        ++dim;
        continue;
      }
      (*dim)->factor /= 2;
      copies /= 2;
    }
    return copies > 1;
  }

  const int64_t factor_;
  const bool bySize_; // register_tile=0: a large tile where the grid fills the GPU
  const PassParameters &parameters_;
  const RegisterTilingTarget target_;
  const RemarkReporter &remarks_;
  // The host's choices between tile sizes made for the run's sizes.
  std::vector<Function::SizeChoice> sizeChoices_;
};

} // namespace

Function tileRegisters(Function function, const PassParameters &parameters,
                       const RegisterTilingTarget &target, const RemarkReporter &remarks) {
  RegisterTiler tiler(parameters, target, remarks);
  function.body = tiler.mutate(function.body);
  std::ranges::move(tiler.takeSizeChoices(), std::back_inserter(function.sizeChoices));
  return function;
}

} // namespace loopc::passes
