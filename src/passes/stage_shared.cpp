// stage_shared: shared-memory staging (GPU pipeline only). Where the threads
// of a block read overlapping parts of an array inside a loop (matmul's rows
// of A and columns of B, a convolution's window over its input), the block
// copies the part it reads into shared memory once, all threads together,
// and the loop reads it from there: each global element is fetched once per
// block, in coalesced order, instead of once per thread that uses it.
//
// What is staged: for a serial loop of the thread's body with bounds uniform
// across the block, the loads in it of global arrays the kernel never writes
// whose indices land, over the block's threads and the loop's iterations, in
// a box of constant size with an origin uniform across the block
// (analysis/IndexRange.h), when one iteration of the loop reads each element
// of its box 16 times or more (PassParameters::stageMinReuse, which says why
// so many: reuse across threads; a window sliding with the thread, read once
// per thread, is left to the cache). A loop of constant trip count whose
// boxes fit is staged whole (a large filter's rows); another one, if no loop of the thread's body
// encloses it, is cut into stages of 32 iterations (PassParameters::stageLength; halves of it, down
// to 2, when the boxes do not fit), each loading its boxes before it runs (matmul's k). The
// outermost loop that stages anything wins. A block stages into 24 KiB
// (PassParameters::sharedKiB): under the 48 KiB a block may declare
// statically, and small enough that several blocks stay resident on an SM
// (228 KiB on an H100, 164 KiB on an A100).
//
// Pipelined stages (PassParameters::pipelineDepth 2 or 3, sm_80 and later):
// a loop staged in stages waits for each stage's copies before its compute,
// and no warp of the block has anything else to issue then (matmul at 25%
// occupancy: a third of its cycles). With D buffers per box, the copies of a
// stage are async copies (ir::AsyncCopy, cp.async: no register holds the
// data, so no occupancy is lost to them) issued D - 1 stages ahead of its
// compute, into the buffer the stage before last was read from, so they fly
// while the stages in between compute (pipelinedStages says in which order,
// and why one barrier a stage suffices; lowering/AsyncFills.h how a box is
// copied). All D buffers of the boxes fit the budget together, so stages are
// shorter; where they do not fit at 2 iterations, the loop is staged as
// without pipelining, and a remark says so.
//
// With no loop to stage, a loop-free body whose warps read down a column of
// an array (a transpose: consecutive threads along x, consecutive rows) has
// the box of those reads staged before it, when its rows fill a 32-byte
// sector: global reads then go row by row, and the column reads hit shared
// memory, which does not need them coalesced.
//
// The shape of the code: every thread of a block must reach the barriers, so
// the guards above the loop (map_to_gpu's bounds check, tile_registers' first
// copy) move down to the statements around it and into each stage; a thread
// out of range helps fill the boxes and computes nothing. The fill walks a
// box in row-major order with all threads of the block, element `fill *
// threads + thread`, so consecutive threads read consecutive addresses, and
// elements outside the array are not read.
//
// The layout of a box of two or more dimensions follows how its warps read
// it. Where the threads of a warp read down a column (a transpose, or a warp
// spanning two rows of threads), the innermost extent is padded to an odd
// length, so the column hits 32 different banks. Otherwise a warp reads along
// a row or one element for all (matmul's A, a broadcast) and no padding is
// needed against conflicts; the innermost extent is then rounded up to 16
// bytes so every row starts 16-byte aligned, and a thread's reads of
// consecutive elements of a row (matmul's A[i][k] over an unrolled k) become
// one 128-bit load (LLVM's load-store vectorizer proves the alignment): a
// quarter of the shared-memory instructions. Where instead a thread reads
// two 128-bit loads' worth of consecutive rows at one column, every lane of
// the warp the same ones (matmul's A under an 8 x 8 register tile), the box
// is stored transposed (readsRowsTogether says why), filled element by
// element. A staged load reads its box at the index minus the origin, with
// the index's constant term added last, so the rows of a thread's copies are
// one offset plus constants that LLVM folds into the loads' addresses.
//
// Under bounds checks, a nest is staged only where every index in it is
// proven in range: a box's fill reads no element outside the array, so an
// index out of range would read a zero where its check reported the error.
// Nests with an index left checked keep their global reads (and say so);
// the others are staged as without checks.
#include "passes/Passes.h"

#include "ir/IRPrinter.h"
#include "ir/IRVisitor.h"
#include "ir/KernelNest.h"
#include "passes/analysis/AccessAnalysis.h"
#include "passes/analysis/ArrayUses.h"
#include "passes/analysis/BlockCooperation.h"
#include "passes/analysis/BoundsProof.h"
#include "passes/analysis/IndexRange.h"
#include "passes/lowering/AsyncFills.h"
#include "passes/lowering/ReductionTrees.h"

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <set>

namespace loopc::passes {

using namespace loopc::ir;
using ir::Expr; // not the AST's
using ir::Stmt;

namespace {

// Bytes of the widest load a thread makes (ld.shared.v4.f32).
const int64_t kVectorLoadBytes = 16;
const int64_t kWarpSize = 32;

// cp.async, which pipelined stages copy by, came with compute capability 8.0.
const int kAsyncCopyCapability = 80;

// Longer constant loops span more than any box could hold.
const int64_t kLongestSpannedLoop = 1 << 16;

// The product of `factors` and `first`, saturating rather than overflowing:
// a box that large is never staged.
int64_t saturatingProduct(const std::vector<int64_t> &factors, int64_t first = 1) {
  int64_t product = first;
  for (int64_t factor : factors)
    if (__builtin_mul_overflow(product, factor, &product))
      return std::numeric_limits<int64_t>::max();
  return product;
}

// "4 KiB", "4.5 KiB": the shared memory a remark quotes.
std::string kibibytes(int64_t bytes) {
  int64_t tenths = (bytes * 10 + 1023) / 1024;
  return std::to_string(tenths / 10) + (tenths % 10 ? "." + std::to_string(tenths % 10) : "") +
         " KiB";
}

// How many times each of `elements` is read by `reads`, with one decimal
// when that is not whole: "once", "4 times", "4.4 times".
std::string timesRead(int64_t reads, int64_t elements) {
  auto tenths = static_cast<int64_t>(static_cast<double>(reads) * 10 /
                                     static_cast<double>(std::max<int64_t>(elements, 1)));
  if (tenths == 10)
    return "once";
  return std::to_string(tenths / 10) + (tenths % 10 ? "." + std::to_string(tenths % 10) : "") +
         " times";
}

// A load of a global array with the range of each of its indices.
struct RangedLoad {
  const Load *load;
  std::vector<IndexRange> indices;
  int64_t count;               // how many times the block makes it in the region
  std::vector<Expr> inlined{}; // its indices with the lets in scope substituted
};

// The loads of one array a block reads from one box.
struct Footprint {
  Buffer array;
  std::vector<IndexRange> box; // per dimension
  std::vector<const Load *> loads;
  int64_t loadCount = 0;
  std::vector<std::vector<Expr>> inlinedIndices{}; // of each of `loads`
  // Allocated [column][row] (see readsRowsTogether).
  bool transposed = false;

  std::vector<int64_t> extents() const {
    std::vector<int64_t> extents;
    for (const IndexRange &range : box)
      extents.push_back(range.totalSpan() + 1);
    return extents;
  }
  int64_t elements() const { return saturatingProduct(extents()); }
};

// The loads of read-only global arrays in a region whose indices have ranges
// (RangeScope), each counted for the threads and the constant loops of the
// region around it.
class LoadRanges : public IRVisitor {
public:
  LoadRanges(RangeScope &scope, const std::set<const BufferInfo *> &written, int64_t threads)
      : scope_(scope), written_(written), count_(threads) {}

  std::vector<RangedLoad> loads;
  std::vector<const Load *> loadsOfWrittenArrays; // never staged: the kernel writes them

protected:
  void visitFor(const For &node) override {
    visit(node.min);
    visit(node.extent);
    const auto *trips = node.extent->as<IntImm>();
    if (trips && trips->value > kLongestSpannedLoop)
      trips = nullptr;
    std::optional<IndexRange> first = scope_.rangeOf(node.min);
    if (trips && trips->value > 0 && first && first->totalSpan() == 0) {
      first->span = trips->value - 1;
      scope_.bindRange(node.var, *first);
    } else {
      scope_.bindUnknown(node.var);
    }
    int64_t outer = count_;
    count_ = saturatingProduct({trips ? std::max<int64_t>(trips->value, 0) : 1}, count_);
    visit(node.body);
    count_ = outer;
    scope_.unbind(node.var);
  }

  void visitLetStmt(const LetStmt &node) override {
    visit(node.value);
    scope_.bindLet(node.var, node.value);
    visit(node.body);
    scope_.unbind(node.var);
  }

  void visitLoad(const Load &node) override {
    IRVisitor::visitLoad(node);
    if (node.buffer->memory != MemorySpace::Global || node.indices.empty())
      return;
    if (written_.contains(node.buffer.get())) {
      loadsOfWrittenArrays.push_back(&node);
      return;
    }
    RangedLoad ranged{&node, {}, count_};
    for (const Expr &index : node.indices) {
      std::optional<IndexRange> range = scope_.rangeOf(index);
      if (!range)
        return;
      ranged.indices.push_back(std::move(*range));
      ranged.inlined.push_back(scope_.inlined(index));
    }
    loads.push_back(std::move(ranged));
  }

private:
  RangeScope &scope_;
  const std::set<const BufferInfo *> &written_;
  int64_t count_;
};

// Loads of one array whose boxes share an origin, united.
std::vector<Footprint> footprintsOf(const std::vector<RangedLoad> &loads) {
  std::vector<Footprint> footprints;
  for (const RangedLoad &ranged : loads) {
    auto sharesBox = [&](const Footprint &footprint) {
      if (footprint.array != ranged.load->buffer)
        return false;
      for (size_t d = 0; d < footprint.box.size(); ++d)
        if (!footprint.box[d].sharesOrigin(ranged.indices[d]))
          return false;
      return true;
    };
    auto footprint = std::ranges::find_if(footprints, sharesBox);
    if (footprint == footprints.end()) {
      footprints.push_back(Footprint{ranged.load->buffer, ranged.indices, {}, 0, {}, false});
      footprint = std::prev(footprints.end());
    }
    for (size_t d = 0; d < footprint->box.size(); ++d)
      footprint->box[d].unite(ranged.indices[d]);
    footprint->loads.push_back(ranged.load);
    footprint->inlinedIndices.push_back(ranged.inlined);
    if (__builtin_add_overflow(footprint->loadCount, ranged.count, &footprint->loadCount))
      footprint->loadCount = std::numeric_limits<int64_t>::max();
  }
  return footprints;
}

// Rewrites the staged loads of a loop body to read the shared copies.
class SharedLoads : public IRMutator {
public:
  struct Staged {
    const Footprint *footprint;
    Buffer shared;
    Expr copy; // the leading index of a buffer per pipelined stage, or null
  };
  explicit SharedLoads(std::map<const Load *, Staged> staged) : staged_(std::move(staged)) {}

protected:
  Expr visitLoad(const Load &node, const Expr &self) override {
    Expr mutated = IRMutator::visitLoad(node, self);
    auto staged = staged_.find(&node);
    if (staged == staged_.end())
      return mutated;
    const Load &load = *mutated->as<Load>();
    std::vector<Expr> indices;
    if (staged->second.copy)
      indices.push_back(staged->second.copy);
    for (size_t d = 0; d < load.indices.size(); ++d)
      indices.push_back(offsetInBox(toI64(load.indices[d]), staged->second.footprint->box[d]));
    if (staged->second.footprint->transposed)
      std::swap(indices[indices.size() - 2], indices.back());
    return std::make_shared<Load>(staged->second.shared, std::move(indices), load.source);
  }

private:
  // `index - origin`, a constant added to the index added last: a thread's
  // copies (`i + r` of a register tile) then read at one offset plus
  // constants, which LLVM folds into the addresses of its loads. Subtracted
  // last, each copy's offset was a value of its own, computed before the
  // loop and kept live across it (8 of them for an 8 x 8 tile's rows).
  static Expr offsetInBox(const Expr &index, const IndexRange &range) {
    const auto *sum = index->as<Binary>();
    const auto *constant = sum ? sum->rhs->as<IntImm>() : nullptr;
    if (!constant || (sum->op != BinaryOpKind::Add && sum->op != BinaryOpKind::Sub))
      return sub(index, range.origin());
    return makeBinary(sum->op, sub(sum->lhs, range.origin()), sum->rhs);
  }

  std::map<const Load *, Staged> staged_;
};

class LoopFinder : public IRVisitor {
public:
  bool found = false;

protected:
  void visitFor(const For &) override { found = true; }
};

bool hasLoop(const Stmt &stmt) {
  LoopFinder finder;
  finder.visit(stmt);
  return finder.found;
}

// The loads by which some warp of the nest reads down a column: an index
// other than the innermost changes across the threads of one warp (the x
// threads, and the y and z threads when a warp spans several rows of them).
std::set<const Load *> loadsDownColumns(const Stmt &nest, const std::vector<const For *> &threads) {
  std::vector<const For *> byDim = threads;
  std::ranges::sort(byDim, {}, &For::gpuDim);
  std::vector<std::string> warpVars;
  int64_t warpThreads = 1;
  for (const For *thread : byDim) {
    if (warpThreads >= kWarpSize)
      break;
    warpVars.push_back(thread->var);
    warpThreads *= thread->extent->as<IntImm>()->value;
  }
  std::set<const Load *> columnReads;
  for (const BufferAccess &access : collectAccesses(nest)) {
    if (!access.load || access.indices.size() < 2)
      continue;
    for (size_t d = 0; d + 1 < access.indices.size(); ++d)
      if (std::ranges::any_of(warpVars,
                              [&](const auto &var) { return access.indices[d].dependsOn(var); }))
        columnReads.insert(access.load);
  }
  return columnReads;
}

// The staging of one kernel nest: walks the thread's body down to the loops
// it stages, moving the guards above them down (see the file comment).
class NestStager {
public:
  NestStager(const std::vector<const For *> &threads, const std::set<const BufferInfo *> &written,
             std::set<const Load *> columnReads, const PassParameters &parameters,
             const RemarkReporter &remarks, std::set<std::string> &sharedNames,
             int computeCapability)
      : written_(written), columnReads_(std::move(columnReads)), parameters_(parameters),
        remarks_(remarks), sharedNames_(sharedNames), computeCapability_(computeCapability) {
    for (const For *thread : threads) {
      int64_t extent = thread->extent->as<IntImm>()->value;
      IndexRange range;
      range.span = extent - 1;
      scope_.bindRange(thread->var, range);
      threadRanges_[thread->var] = range;
      threadsByDim_[thread->gpuDim] = thread;
      threadCount_ *= extent;
    }
    // x fastest, as the hardware numbers the threads of a block.
    for (int dim = 2; dim >= 0; --dim)
      if (const For *thread = threadsByDim_[dim]) {
        Expr index = toI64(makeVar(thread->min->type, thread->var));
        linearThread_ =
            linearThread_ ? add(mul(linearThread_, toI64(thread->extent)), index) : index;
      }
  }

  // The thread's body with its loops staged; with none to stage, with the
  // boxes its warps read down columns staged; nothing when neither is.
  std::optional<Stmt> stage(const Stmt &body) {
    if (std::optional<Stmt> staged = stagePath(body, nullptr, false))
      return staged;
    return stageColumnReads(body);
  }
  const std::vector<Buffer> &sharedBuffers() const { return sharedBuffers_; }

  // What the staging decided about each box it measured, in the order it
  // first met them: staged, or why not (the first reason, from the
  // outermost loop tried; the same box on both sides of a uniform branch
  // counts once).
  struct Verdict {
    SourceRange where; // the box's first load
    bool staged = false;
    std::string message;
  };
  std::vector<Verdict> verdicts() const {
    std::vector<Verdict> inOrder;
    for (const VerdictKey &key : verdictOrder_)
      inOrder.push_back(verdicts_.at(key));
    return inOrder;
  }

private:
  using VerdictKey = std::pair<SourceLoc, std::string>; // a load's place and array

  static VerdictKey keyOf(const Load &load) { return {load.source.begin, load.buffer->name}; }

  // A load a pass made (the fill of a buffer of its own, a reduction's
  // partials) is no part of the program: nothing to say about it.
  void noteVerdict(const Load &load, bool staged, std::string message) {
    if (!load.source.valid() || isPassMadeName(load.buffer->nameInMessages()))
      return;
    VerdictKey key = keyOf(load);
    auto [verdict, added] = verdicts_.try_emplace(key, Verdict{load.source, staged, message});
    if (added)
      verdictOrder_.push_back(key);
    else if (staged && !verdict->second.staged)
      verdict->second = Verdict{load.source, true, std::move(message)};
  }

  std::string loopName(const For &loop) const { return remarks_.programName(loop.var); }

  // "32 x 36 f32": a box's extents and element type.
  static std::string boxShape(const Footprint &footprint) {
    std::string extents;
    for (int64_t extent : footprint.extents())
      extents += (extents.empty() ? "" : " x ") + std::to_string(extent);
    return extents + " " + scalarTypeName(footprint.array->element);
  }

  // "a box of 32 x 36 f32 (4.5 KiB)", its bytes as allocated (padded).
  std::string describeBox(const Footprint &footprint) const {
    return "a box of " + boxShape(footprint) + " (" + kibibytes(paddedBytes(footprint)) +
           (footprint.transposed ? ", stored transposed" : "") + ")";
  }

  std::string quoted(const Footprint &footprint) const {
    return "'" + programArray(footprint) + "'";
  }
  std::string programArray(const Footprint &footprint) const {
    return remarks_.programName(footprint.array->nameInMessages());
  }
  // Whether the kernel's schedule says `no_stage=` of the box's array (and
  // says so in the remarks).
  bool unstagedBySchedule(const Footprint &footprint) {
    if (!parameters_.unstagedArrays.contains(programArray(footprint)))
      return false;
    noteVerdict(*footprint.loads.front(), false,
                quoted(footprint) +
                    " not staged: the schedule says no_stage=" + programArray(footprint));
    return true;
  }
  // `stmt`, in which a loop may be staged, under `guard` (null: all threads
  // run it), `inLoop` when a loop around it repeats it.
  std::optional<Stmt> stagePath(const Stmt &stmt, const Expr &guard, bool inLoop) {
    switch (stmt->kind) {
    case StmtNode::Kind::Block: {
      // Consecutive statements with nothing staged share one guard.
      std::vector<Stmt> stmts, unstaged;
      bool staged = false;
      auto flush = [&] {
        if (!unstaged.empty())
          stmts.push_back(guarded(makeBlock(std::move(unstaged)), guard));
        unstaged.clear();
      };
      for (const Stmt &inner : stmt->as<Block>()->stmts) {
        std::optional<Stmt> innerStaged = stagePath(inner, guard, inLoop);
        if (!innerStaged) {
          unstaged.push_back(inner);
          continue;
        }
        staged = true;
        flush();
        stmts.push_back(*innerStaged);
      }
      flush();
      return staged ? std::optional(makeBlock(std::move(stmts))) : std::nullopt;
    }
    case StmtNode::Kind::LetStmt: {
      const auto &let = *stmt->as<LetStmt>();
      scope_.bindLet(let.var, let.value);
      std::optional<Stmt> body = stagePath(let.body, guard, inLoop);
      scope_.unbind(let.var);
      if (!body)
        return std::nullopt;
      // Threads out of the guard now bind it too: they must not evaluate
      // what they did not (a load out of range). A uniform value is safe
      // to evaluate and stays uniform (it may bound a loop with barriers).
      Expr value = guard && !scope_.isUniform(let.value)
                       ? select(guard, let.value, zeroOf(let.value->type))
                       : let.value;
      return std::make_shared<LetStmt>(let.var, value, *body);
    }
    case StmtNode::Kind::Allocate: {
      const auto &allocate = *stmt->as<Allocate>();
      if (allocate.buffer->memory != MemorySpace::Register)
        return std::nullopt;
      std::optional<Stmt> body = stagePath(allocate.body, guard, inLoop);
      if (!body)
        return std::nullopt;
      return std::make_shared<Allocate>(allocate.buffer, *body);
    }
    case StmtNode::Kind::IfThenElse:
      return stageBranch(*stmt->as<IfThenElse>(), guard, inLoop);
    case StmtNode::Kind::For: {
      const auto &loop = *stmt->as<For>();
      bool sequential = loop.forKind == ForKind::Serial || loop.forKind == ForKind::Unrolled;
      if (!sequential || !scope_.isUniform(loop.min) || !scope_.isUniform(loop.extent))
        return std::nullopt;
      if (std::optional<Stmt> staged = stageLoop(loop, guard, inLoop))
        return staged;
      std::optional<Stmt> body = stagePath(loop.body, guard, true);
      if (!body)
        return std::nullopt;
      return std::make_shared<For>(loop.var, loop.min, loop.extent, loop.forKind, loop.gpuDim,
                                   *body, loop.source);
    }
    default:
      return std::nullopt;
    }
  }

  // A uniform branch stays a branch (all threads take the same side); a
  // branch that depends on the thread becomes part of the guard.
  std::optional<Stmt> stageBranch(const IfThenElse &branch, const Expr &guard, bool inLoop) {
    if (scope_.isUniform(branch.cond)) {
      size_t before = sharedBuffers_.size();
      std::optional<Stmt> thenCase = stagePath(branch.thenCase, guard, inLoop);
      // A block runs one side only: the other may stage into the same
      // buffers (tile_registers' interior and edge tiles stage one box).
      std::vector<Buffer> outer = reusable_;
      reusable_.insert(reusable_.end(), sharedBuffers_.begin() + static_cast<ptrdiff_t>(before),
                       sharedBuffers_.end());
      std::optional<Stmt> elseCase =
          branch.elseCase ? stagePath(branch.elseCase, guard, inLoop) : std::nullopt;
      reusable_ = std::move(outer);
      if (!thenCase && !elseCase)
        return std::nullopt;
      return std::make_shared<IfThenElse>(
          branch.cond, thenCase ? *thenCase : guarded(branch.thenCase, guard),
          elseCase ? *elseCase : (branch.elseCase ? guarded(branch.elseCase, guard) : nullptr));
    }
    if (branch.elseCase)
      return std::nullopt;
    // `guard && cond`, evaluating cond only under the guard.
    Expr both = guard ? select(guard, branch.cond, zeroOf(ScalarType::Bool)) : branch.cond;
    return stagePath(branch.thenCase, both, inLoop);
  }

  static Stmt guarded(const Stmt &stmt, const Expr &guard) {
    return guard ? std::make_shared<IfThenElse>(guard, stmt) : stmt;
  }

  // The footprints of the loop's body worth staging when its variable
  // ranges as the scope now says; empty when they would not fit. Worth it
  // means reused across threads within one iteration: each element of the
  // iteration's box read stage_min_reuse times or more, and not by every thread alike (a
  // box the same for all threads, a filter's weights, is a broadcast the
  // load unit already serves once per warp), and moving along the loop (a
  // box every iteration reads whole, a thread's own row in nbody, stays in
  // the thread's registers, loaded once before the loop).
  // `span` says what the boxes span in remarks ("stages of 32 iterations of
  // k"); boxes that do not fit are kept in tooLarge_.
  std::vector<Footprint> stageable(const For &loop, int64_t iterations, const std::string &span) {
    LoadRanges ranged(scope_, written_, threadCount_ * iterations);
    ranged.visit(loop.body);
    for (const Load *load : ranged.loadsOfWrittenArrays)
      noteVerdict(*load, false,
                  "'" + remarks_.programName(load->buffer->nameInMessages()) +
                      "' not staged: the kernel also writes it (only read-only arrays are staged)");
    std::vector<Footprint> footprints = footprintsOf(ranged.loads);
    for (Footprint &footprint : footprints)
      footprint.transposed = readsRowsTogether(footprint);
    // One iteration: the loop variable a uniform term.
    scope_.unbind(loop.var);
    std::map<const Load *, RangedLoad> iteration = loadsByNode(loop.body);
    for (const auto &[var, range] : threadRanges_)
      scope_.bindRange(var, IndexRange{});
    std::map<const Load *, RangedLoad> iterationOfOneThread = loadsByNode(loop.body);
    for (const auto &[var, range] : threadRanges_)
      scope_.bindRange(var, range);
    std::vector<Footprint> chosen;
    std::vector<std::string> reuse;     // of each chosen box, per iteration
    std::vector<std::string> overruled; // of each, what the schedule overruled, or ""
    int64_t bytes = sharedBytes_;
    std::vector<Buffer> reusable = reusable_;
    for (Footprint &footprint : footprints) {
      std::optional<Footprint> all = unitedBox(footprint, iteration);
      std::optional<Footprint> oneThread = unitedBox(footprint, iterationOfOneThread);
      if (!all || !oneThread || unstagedBySchedule(footprint))
        continue;
      std::optional<std::string> reason = notWorthStaging(loop, *all, *oneThread, footprint);
      bool asked = parameters_.stagedArrays.contains(programArray(footprint));
      if (reason && !asked) {
        noteVerdict(*footprint.loads.front(), false, quoted(footprint) + " not staged: " + *reason);
        continue;
      }
      int64_t footprintBytes =
          takeReusable(footprint, reusable) ? 0 : paddedBytes(footprint) * copies_;
      bytes += footprintBytes;
      reuse.push_back(timesRead(all->loadCount, all->elements()));
      overruled.push_back(reason ? "; the schedule asks for it (stage=" + programArray(footprint) +
                                       "), where by itself stage_shared would not: " + *reason
                                 : "");
      chosen.push_back(std::move(footprint));
    }
    int64_t budget = parameters_.sharedKiB * 1024;
    if (bytes > budget) {
      // Each box is told what all of them need.
      std::string boxes;
      for (size_t i = 0; i < chosen.size(); ++i)
        boxes += std::string(i == 0                   ? ""
                             : i + 1 == chosen.size() ? " and "
                                                      : ", ") +
                 quoted(chosen[i]) + " (" + boxShape(chosen[i]) + ", " +
                 kibibytes(paddedBytes(chosen[i])) + ")";
      std::string fit = chosen.size() == 1
                            ? "its " + describeBox(chosen.front()).substr(2) + " does not fit"
                            : "the boxes of " + boxes + " do not fit";
      std::string before =
          sharedBytes_ > 0 ? " with the " + kibibytes(sharedBytes_) + " staged before" : "";
      if (copies_ > 1)
        fit += " " + std::to_string(copies_) + " times (pipeline_depth=" + std::to_string(copies_) +
               ")";
      tooLarge_.clear();
      for (const Footprint &footprint : chosen)
        tooLarge_.emplace_back(footprint.loads.front(),
                               quoted(footprint) + " not staged: for " + span + ", " + fit +
                                   " in shared_kib=" + std::to_string(parameters_.sharedKiB) +
                                   before);
      return {};
    }
    for (size_t i = 0; i < chosen.size(); ++i)
      noteVerdict(*chosen[i].loads.front(), true,
                  quoted(chosen[i]) + " staged in shared memory: " + describeBox(chosen[i]) +
                      " for " + span + "; each element is read " + reuse[i] + " per iteration of " +
                      loopName(loop) + overruled[i]);
    return chosen;
  }

  // Why a box read by one iteration of `loop` as `all` (one thread of it as
  // `oneThread`), over the whole loop as `footprint`, is not worth staging
  // (stageable's rules), if it is not.
  std::optional<std::string> notWorthStaging(const For &loop, const Footprint &all,
                                             const Footprint &oneThread,
                                             const Footprint &footprint) const {
    if (all.loadCount / parameters_.stageMinReuse < all.elements())
      return "each element is read " + timesRead(all.loadCount, all.elements()) +
             " per iteration of " + loopName(loop) +
             ", fewer than stage_min_reuse=" + std::to_string(parameters_.stageMinReuse) +
             " (the cache serves such repeats)";
    if (oneThread.elements() == all.elements())
      return "every thread of the block reads the same elements (a broadcast, which the load "
             "unit serves once per warp)";
    if (std::ranges::equal(all.extents(), footprint.extents()))
      return "its box does not move along " + loopName(loop) +
             " (every iteration reads all of it: it stays in registers)";
    return std::nullopt;
  }

  // A transpose: the threads of a warp, consecutive along x, read down a
  // column of an array (A[j][i] with j along x), 4 bytes from each of 32
  // rows. Copied into shared memory first, a row of the box at a time by
  // consecutive threads, the reads become shared-memory reads, which need
  // no coalescing (and the odd padding keeps a column free of bank
  // conflicts). Only boxes whose rows fill a 32-byte sector are worth it.
  std::optional<Stmt> stageColumnReads(const Stmt &body) {
    const For *x = threadsByDim_[0];
    if (!x)
      return std::nullopt;
    std::vector<Footprint> footprints = footprintsOf(loadsOf(body, threadCount_));
    scope_.bindRange(x->var, IndexRange{});
    std::map<const Load *, RangedLoad> oneColumn = loadsByNode(body);
    scope_.bindRange(x->var, threadRanges_.at(x->var));
    std::vector<Footprint> chosen;
    int64_t bytes = sharedBytes_;
    for (Footprint &footprint : footprints) {
      std::optional<Footprint> column = unitedBox(footprint, oneColumn);
      std::vector<int64_t> extents = footprint.extents();
      if (!column || extents.size() < 2 || unstagedBySchedule(footprint))
        continue;
      // Along x the rows change and the columns do not.
      std::vector<int64_t> columnExtents = column->extents();
      if (columnExtents.back() != extents.back() || std::ranges::equal(columnExtents, extents))
        continue;
      const Load &first = *footprint.loads.front();
      int64_t rowBytes =
          extents.back() * static_cast<int64_t>(scalarSize(footprint.array->element));
      if (rowBytes < 32) {
        noteVerdict(first, false,
                    quoted(footprint) + " read down columns, not staged: a row of its box is " +
                        std::to_string(rowBytes) + " bytes, less than a 32-byte sector");
        continue;
      }
      int64_t footprintBytes = paddedBytes(footprint);
      if (footprintBytes > parameters_.sharedKiB * 1024 - bytes) {
        noteVerdict(first, false,
                    quoted(footprint) +
                        " read down columns, not staged: " + describeBox(footprint) +
                        " does not fit in shared_kib=" + std::to_string(parameters_.sharedKiB));
        continue;
      }
      noteVerdict(first, true,
                  quoted(footprint) + " read down columns: staged in shared memory, " +
                      describeBox(footprint) + " copied along its rows");
      bytes += footprintBytes;
      chosen.push_back(std::move(footprint));
    }
    if (chosen.empty())
      return std::nullopt;
    auto [loads, stmts] = allocateShared(chosen);
    stmts.push_back(std::make_shared<Barrier>());
    stmts.push_back(loads.mutate(body));
    return makeBlock(std::move(stmts));
  }

  // The loads of `region` with ranges, each made `count` times.
  std::vector<RangedLoad> loadsOf(const Stmt &region, int64_t count) {
    LoadRanges ranged(scope_, written_, count);
    ranged.visit(region);
    return std::move(ranged.loads);
  }

  // The loads of `region` with ranges, each counted once per thread.
  std::map<const Load *, RangedLoad> loadsByNode(const Stmt &region) {
    LoadRanges ranged(scope_, written_, threadCount_);
    ranged.visit(region);
    std::map<const Load *, RangedLoad> loads;
    for (RangedLoad &load : ranged.loads)
      loads.emplace(load.load, std::move(load));
    return loads;
  }

  // The one box of the footprint's loads as `ranges` has them, if they
  // still share one.
  static std::optional<Footprint> unitedBox(const Footprint &footprint,
                                            const std::map<const Load *, RangedLoad> &ranges) {
    std::vector<RangedLoad> loads;
    for (const Load *load : footprint.loads)
      if (auto found = ranges.find(load); found != ranges.end())
        loads.push_back(found->second);
    std::vector<Footprint> boxes = footprintsOf(loads);
    if (loads.size() != footprint.loads.size() || boxes.size() != 1)
      return std::nullopt;
    return boxes[0];
  }

  std::optional<Stmt> stageLoop(const For &loop, const Expr &guard, bool inLoop) {
    std::optional<IndexRange> first = scope_.rangeOf(loop.min);
    if (!first)
      return std::nullopt;
    std::optional<Stmt> staged = stageLoopIfFits(loop, guard, inLoop, *first);
    copies_ = 1;
    // The boxes did not fit however the loop was cut: the last cut tried
    // (the shortest stages) says by how much.
    if (!staged)
      for (const auto &[load, message] : tooLarge_)
        noteVerdict(*load, false, message);
    tooLarge_.clear();
    return staged;
  }

  std::optional<Stmt> stageLoopIfFits(const For &loop, const Expr &guard, bool inLoop,
                                      const IndexRange &first) {
    // Whole, when the loop has a constant trip count and its boxes fit.
    if (const auto *trips = loop.extent->as<IntImm>(); trips && trips->value > 0) {
      IndexRange all = first;
      all.span = trips->value - 1;
      scope_.bindRange(loop.var, all);
      std::vector<Footprint> footprints =
          stageable(loop, trips->value, "the whole loop over " + loopName(loop));
      scope_.unbind(loop.var);
      if (!footprints.empty())
        return stageWhole(loop, std::move(footprints), guard, inLoop);
    }
    // In stages: `var = min + stage * length + lane`; not inside another
    // loop, where a loop of symbolic trip count is often short (a filter's
    // rows) and its stages would fetch mostly what it does not read.
    if (inLoop)
      return std::nullopt;
    // Pipelined stages need a buffer per stage in flight; where those do
    // not fit even at stages of 2, the stages are copied one at a time.
    std::vector<int64_t> copies{1};
    if (parameters_.pipelineDepth > 1 && computeCapability_ >= kAsyncCopyCapability)
      copies.insert(copies.begin(), parameters_.pipelineDepth);
    for (int64_t buffers : copies) {
      copies_ = buffers;
      if (std::optional<Stmt> staged = stageInStagesIfFits(loop, guard))
        return staged;
      if (buffers > 1 && !tooLarge_.empty())
        remarks_.declined(loop.source,
                          "the stages of " + loopName(loop) + " not pipelined: the boxes of " +
                              std::to_string(buffers) + " stages do not fit shared_kib=" +
                              std::to_string(parameters_.sharedKiB) + " however short the stages");
    }
    return std::nullopt;
  }

  // The loop in stages of the parameter's length first, then halves of it
  // down to 2 (a stage of two iterations still halves the barriers of
  // staging each one), with copies_ buffers per box.
  std::optional<Stmt> stageInStagesIfFits(const For &loop, const Expr &guard) {
    for (int64_t length = parameters_.stageLength; length >= 2; length /= 2) {
      if (const auto *trips = loop.extent->as<IntImm>(); trips && trips->value <= length)
        continue;
      ScalarType type = loop.min->type;
      Expr stageVar = makeVar(type, loop.var + ".stage");
      Expr laneVar = makeVar(type, loop.var + ".lane");
      Expr value = add(loop.min, add(mul(stageVar, makeInt(type, length)), laneVar));
      IndexRange lane;
      lane.span = length - 1;
      scope_.bindRange(loop.var + ".lane", lane);
      scope_.bindLet(loop.var, value);
      std::vector<Footprint> footprints = stageable(
          loop, length, "stages of " + std::to_string(length) + " iterations of " + loopName(loop));
      scope_.unbind(loop.var);
      scope_.unbind(loop.var + ".lane");
      if (!footprints.empty())
        return stageInStages(loop, std::move(footprints), length, value, guard);
    }
    return std::nullopt;
  }

  // fill; barrier; the loop; and a barrier before a loop around refills.
  Stmt stageWhole(const For &loop, std::vector<Footprint> footprints, const Expr &guard,
                  bool inLoop) {
    auto [loads, stmts] = allocateShared(footprints);
    stmts.push_back(std::make_shared<Barrier>());
    Stmt body = loads.mutate(loop.body);
    stmts.push_back(guarded(std::make_shared<For>(loop.var, loop.min, loop.extent, loop.forKind,
                                                  loop.gpuDim, body, loop.source),
                            guard));
    if (inLoop)
      stmts.push_back(std::make_shared<Barrier>());
    return makeBlock(std::move(stmts));
  }

  // for stage: fill; barrier; the stage's iterations (a full stage runs a
  // constant count, unrolled when its body is straight-line code: shared
  // loads at constant offsets); barrier.
  Stmt stageInStages(const For &loop, std::vector<Footprint> footprints, int64_t length,
                     const Expr &value, const Expr &guard) {
    ScalarType type = loop.min->type;
    std::string stage = loop.var + ".stage", lane = loop.var + ".lane", rest = loop.var + ".rest";
    Expr lengthImm = makeInt(type, length);
    Expr stageVar = makeVar(type, stage);
    bool pipelined = pipelines(loop, footprints);
    Expr copy = pipelined ? toI64(rem(stageVar, makeInt(type, copies_))) : nullptr;
    auto [loads, stmts] = allocateShared(footprints, copy);
    Stmt body = loads.mutate(loop.body);
    auto lanes = [&](Expr count, ForKind kind) {
      return guarded(std::make_shared<For>(lane, makeInt(type, 0), std::move(count), kind, 0,
                                           std::make_shared<LetStmt>(loop.var, value, body),
                                           loop.source),
                     guard);
    };
    // Unrolled, a stage of cheap straight-line code reads shared memory at
    // constant offsets; a body calling a math routine gains nothing from it,
    // and 32 inlined copies of the routine's slow path spill.
    bool straightLine = !hasLoop(body) && !callsMathRoutine(body);
    Expr restVar = makeVar(type, rest);
    Stmt iterations = std::make_shared<LetStmt>(
        rest, sub(loop.extent, mul(stageVar, lengthImm)),
        std::make_shared<IfThenElse>(
            greaterOrEqual(restVar, lengthImm),
            lanes(lengthImm, straightLine ? ForKind::Unrolled : ForKind::Serial),
            lanes(restVar, ForKind::Serial)));
    Expr stages =
        maxOf(div(add(loop.extent, makeInt(type, length - 1)), lengthImm), makeInt(type, 0));
    if (pipelined)
      return pipelinedStages(loop, stmts, iterations, stages);
    stmts.push_back(std::make_shared<Barrier>());
    stmts.push_back(iterations);
    stmts.push_back(std::make_shared<Barrier>());
    return std::make_shared<For>(stage, makeInt(type, 0), stages, ForKind::Serial, 0,
                                 makeBlock(std::move(stmts)), loop.source);
  }

  // Whether the stages of `loop` copy by async copies into copies_ buffers
  // per box (stageLoopIfFits sized them so); says why not where the
  // parameter asks for it.
  bool pipelines(const For &loop, const std::vector<Footprint> &footprints) {
    if (parameters_.pipelineDepth < 2)
      return false;
    std::string stages = "the stages of " + loopName(loop);
    if (computeCapability_ < kAsyncCopyCapability) {
      remarks_.declined(loop.source, stages +
                                         " not pipelined: async copies (cp.async) need sm_80 or "
                                         "later, and the kernels are compiled for sm_" +
                                         std::to_string(computeCapability_));
      return false;
    }
    if (copies_ < 2) // their buffers did not fit (stageLoopIfFits said so)
      return false;
    for (const Footprint &footprint : footprints)
      if (scalarSize(footprint.array->element) < 4) {
        remarks_.declined(loop.source, stages +
                                           " not pipelined: async copies move 4 bytes or "
                                           "more, and the elements of " +
                                           quoted(footprint) + " are " +
                                           scalarTypeName(footprint.array->element));
        copies_ = 1;
        return false;
      }
    remarks_.applied(loop.source,
                     stages + " pipelined " + std::to_string(copies_) +
                         " deep: async copies (cp.async) into " + std::to_string(copies_) +
                         " buffers per box, each stage's issued " + std::to_string(copies_ - 1) +
                         " stage" + (copies_ > 2 ? "s" : "") + " ahead of its compute");
    return true;
  }

  // The stages of a loop pipelined over D = copies_ buffers per box, the
  // copies of stage s into buffer s % D (`fills` copy stage `var.stage`):
  //   for p in 0..D-1: [p < stages] copy stage p; commit
  //   for s in 0..stages:
  //     wait until stage s has landed (D - 2 younger groups may fly); barrier
  //     [s + D - 1 < stages] copy stage s + D - 1; commit
  //     compute stage s
  //   barrier
  // The barrier orders the copies into buffer (s + D - 1) % D = (s - 1) % D
  // after every thread's compute of stage s - 1, its last reader, and makes
  // every thread's copies of stage s, each thread's own waited for, visible
  // to all: one barrier per stage. Every thread commits a group per stage,
  // empty past the last, so the count a wait leaves in flight holds at the
  // end. The barrier after the loop keeps a block that runs again (more
  // blocks than the grid holds) from copying into a buffer still read.
  Stmt pipelinedStages(const For &loop, std::vector<Stmt> fills, const Stmt &iterations,
                       const Expr &stages) {
    ScalarType type = loop.min->type;
    std::string stage = loop.var + ".stage";
    Expr stageVar = makeVar(type, stage);
    Stmt copyStage = makeBlock(std::move(fills));
    auto copyAhead = [&](const Expr &ahead) {
      return makeBlock({std::make_shared<IfThenElse>(lessThan(ahead, stages),
                                                     substitute(copyStage, {{stage, ahead}})),
                        std::make_shared<AsyncCommit>()});
    };
    std::vector<Stmt> prologue;
    for (int64_t ahead = 0; ahead + 1 < copies_; ++ahead)
      prologue.push_back(copyAhead(makeInt(type, ahead)));
    Stmt steady = makeBlock({std::make_shared<AsyncWait>(static_cast<int>(copies_ - 2)),
                             std::make_shared<Barrier>(),
                             copyAhead(add(stageVar, makeInt(type, copies_ - 1))), iterations});
    prologue.push_back(std::make_shared<For>(stage, makeInt(type, 0), stages, ForKind::Serial, 0,
                                             steady, loop.source));
    prologue.push_back(std::make_shared<Barrier>());
    return makeBlock(std::move(prologue));
  }

  // Whether a thread reads consecutive rows of a 2-D box at one column, two
  // 128-bit loads' worth or more (matmul's A[i + r][k] over an 8 x 8 register
  // tile's rows r), and all lanes of a warp the same elements (a broadcast:
  // how a warp's reads fall on the banks is then the same in either layout).
  // Stored [column][row], such a box gives 128-bit loads down the column,
  // whose values the products of that column use at once; stored
  // [row][column], the 128-bit loads run along the row, and a thread holds
  // the values of 4 columns of each of its rows until the last is used (8
  // rows of f32: 32 registers where the transposed box needs 8, and ptxas
  // spilled at 128). The price: the fill copies an element at a time, 4
  // times the copies. With one load's worth of rows (a 4 x 4 tile: 16
  // registers against 4) the tile fitted its registers either way, and the
  // performance model predicted the extra copies a little slower (matmul).
  bool readsRowsTogether(const Footprint &footprint) const {
    int64_t vector = kVectorLoadBytes / std::max<int64_t>(1, scalarSize(footprint.array->element));
    const For *lanes = threadsByDim_[0];
    const auto *laneCount = lanes ? lanes->extent->as<IntImm>() : nullptr;
    if (footprint.box.size() != 2 || vector < 2 || !laneCount || laneCount->value % kWarpSize != 0)
      return false;
    for (size_t i = 0; i < footprint.loads.size(); ++i) {
      const std::vector<Expr> &indices = footprint.inlinedIndices[i];
      if (columnReads_.contains(footprint.loads[i]) ||
          std::ranges::any_of(indices,
                              [&](const Expr &index) { return usesAnyVar(index, {lanes->var}); }))
        return false;
    }
    // `index` as a term and a constant added to it.
    auto split = [](const Expr &index) -> std::pair<Expr, int64_t> {
      if (const auto *sum = index->as<Binary>(); sum && sum->op == BinaryOpKind::Add)
        if (const auto *constant = sum->rhs->as<IntImm>())
          return {sum->lhs, constant->value};
      return {index, 0};
    };
    auto rowsAfter = [&](const std::vector<Expr> &first, int64_t rows) {
      auto [term, row] = split(first[0]);
      return std::ranges::any_of(footprint.inlinedIndices, [&](const std::vector<Expr> &other) {
        auto [otherTerm, otherRow] = split(other[0]);
        return otherRow == row + rows && sameExpr(otherTerm, term) && sameExpr(other[1], first[1]);
      });
    };
    return std::ranges::any_of(footprint.inlinedIndices, [&](const std::vector<Expr> &first) {
      for (int64_t rows = 1; rows < 2 * vector; ++rows)
        if (!rowsAfter(first, rows))
          return false;
      return true;
    });
  }

  // A box's extents as allocated (the file comment says why): the innermost
  // odd where warps read down its columns, else rows of whole 16 bytes.
  std::vector<int64_t> padded(const Footprint &footprint) const {
    std::vector<int64_t> extents = footprint.extents();
    if (extents.size() < 2)
      return extents;
    if (footprint.transposed)
      std::swap(extents[0], extents[1]);
    int64_t &row = extents.back();
    if (std::ranges::any_of(footprint.loads,
                            [&](const Load *load) { return columnReads_.contains(load); })) {
      row += 1 - row % 2;
    } else {
      int64_t vector = std::max<int64_t>(
          1, kVectorLoadBytes / static_cast<int64_t>(scalarSize(footprint.array->element)));
      row = (row + vector - 1) / vector * vector;
      // The fill walks the box in the array's order, so a warp's copies into
      // a transposed box go down its columns: rows of an odd number of
      // 16-byte groups put the columns' elements in different banks (8
      // columns of 4 rows, matmul's A: 32 banks, where rows of 64 f32 put all
      // 8 columns in 4 banks).
      if (footprint.transposed && (row / vector) % 2 == 0)
        row += vector;
    }
    return extents;
  }
  // padded(), after a leading dimension of one buffer per pipelined stage.
  std::vector<int64_t> allocatedShape(const Footprint &footprint) const {
    std::vector<int64_t> shape = padded(footprint);
    if (copies_ > 1)
      shape.insert(shape.begin(), copies_);
    return shape;
  }
  AsyncBox asyncBox(const Footprint &footprint, const Buffer &shared, const Expr &copy) const {
    std::vector<Expr> origin;
    for (const IndexRange &range : footprint.box)
      origin.push_back(toI64(range.origin()));
    return AsyncBox{footprint.array, std::move(origin), footprint.extents(), shared, copy,
                    linearThread_,   threadCount_,      footprint.transposed};
  }
  int64_t paddedBytes(const Footprint &footprint) const {
    return saturatingProduct(padded(footprint),
                             static_cast<int64_t>(scalarSize(footprint.array->element)));
  }

  // The shared buffers of `footprints` (allocated around the thread loops):
  // the rewriting of their loads, and the statements filling them.
  struct Staging {
    SharedLoads loads;
    std::vector<Stmt> fills;
  };
  // With `copy` (pipelined stages: copies_ buffers per box), the buffer of
  // each box that `copy` indexes, filled by async copies.
  Staging allocateShared(const std::vector<Footprint> &footprints, const Expr &copy = nullptr) {
    std::map<const Load *, SharedLoads::Staged> staged;
    std::vector<Stmt> fills;
    for (const Footprint &footprint : footprints) {
      Buffer shared = takeReusable(footprint, reusable_);
      if (!shared) {
        std::vector<Expr> shape;
        for (int64_t extent : allocatedShape(footprint))
          shape.push_back(makeI64(extent));
        shared = makeBuffer(uniqueName(footprint.array->name + ".shared"), footprint.array->element,
                            std::move(shape), MemorySpace::Shared);
        shared->isWritten = true;
        shared->declared = footprint.array->declared;
        sharedBytes_ += paddedBytes(footprint) * copies_;
        sharedBuffers_.push_back(shared);
      }
      fills.push_back(copy ? asyncFill(asyncBox(footprint, shared, copy),
                                       vectorElements(asyncBox(footprint, shared, copy)))
                           : fill(footprint, shared));
      for (const Load *load : footprint.loads)
        staged[load] = {&footprint, shared, copy};
    }
    return Staging{SharedLoads(std::move(staged)), std::move(fills)};
  }

  // A buffer of `pool` of the footprint's element type and allocated shape,
  // taken out of the pool; null when there is none.
  Buffer takeReusable(const Footprint &footprint, std::vector<Buffer> &pool) const {
    std::vector<int64_t> shape = allocatedShape(footprint);
    auto fits = std::ranges::find_if(pool, [&](const Buffer &buffer) {
      return buffer->element == footprint.array->element &&
             std::ranges::equal(buffer->shape, shape, [](const Expr &extent, int64_t wanted) {
               const auto *constant = extent->as<IntImm>();
               return constant && constant->value == wanted;
             });
    });
    if (fits == pool.end())
      return nullptr;
    Buffer buffer = *fits;
    pool.erase(fits);
    return buffer;
  }

  std::string uniqueName(const std::string &name) {
    std::string unique = name;
    for (int suffix = 2; sharedNames_.contains(unique); ++suffix)
      unique = name + std::to_string(suffix);
    sharedNames_.insert(unique);
    return unique;
  }

  // All threads copy the box: element `fill * threads + thread` in
  // row-major order, 0 where the box leaves the array.
  //
  // Each copy loads unconditionally, its global indices clamped into the
  // array (and the element into the box, for the last round's threads past
  // its end, which then store nothing), and picks 0 after the load where the
  // element lies outside: a load that cannot fault needs no branch around
  // it. A thread's copies go in groups of PassParameters::copiesInFlight,
  // each group unrolled, so ptxas issues a group's loads before the first of
  // their stores: one round trip to memory per group. Guarded loads in a
  // loop waited one round trip each: matmul's 4 x 4 tiles 9 times a stage
  // (LLVM unrolled the copy of B by 2), a 5 x 5 filter's halo 19 times
  // (`loopc explain --perf` counts them, docs/perf.md). An array with no
  // elements is read at its element 0, whose value is not used: the engines
  // give every array storage for a few elements (GpuEngine.cpp,
  // CpuEngine.cpp). A guard around the copies instead made ptxas spill
  // (sqdist: 464 bytes).
  Stmt fill(const Footprint &footprint, const Buffer &shared) {
    if (parameters_.copiesInFlight == 0)
      return guardedFill(footprint, shared);
    std::vector<int64_t> extents = footprint.extents();
    int64_t elements = footprint.elements();
    std::string prefix = shared->name;
    int64_t rounds = (elements + threadCount_ - 1) / threadCount_;
    int64_t group = std::min(parameters_.copiesInFlight, rounds);
    int64_t groups = (rounds + group - 1) / group;
    // The round is the group's first plus the copy, past the last round
    // where the groups overrun it (their elements are past the box's end).
    std::string groupVar = prefix + ".group", copyVar = prefix + ".copy";
    Expr round = makeVar(ScalarType::I64, copyVar);
    if (groups > 1)
      round = add(mul(makeVar(ScalarType::I64, groupVar), makeI64(group)), round);
    Expr first = add(mul(round, makeI64(threadCount_)), linearThread_);
    bool partial = rounds * threadCount_ != elements || groups * group != rounds;
    Expr element = makeVar(ScalarType::I64, prefix + ".element");
    Expr boxElement = partial ? minOf(element, makeI64(elements - 1)) : element;
    std::vector<Expr> local, global;
    Expr inArray;
    int64_t stride = elements;
    for (size_t d = 0; d < extents.size(); ++d) {
      stride /= extents[d];
      Expr index = stride == 1 ? boxElement : div(boxElement, makeI64(stride));
      if (d > 0)
        index = rem(index, makeI64(extents[d]));
      local.push_back(index);
      Expr at = add(footprint.box[d].origin(), index);
      Expr extent = toI64(footprint.array->shape[d]);
      Expr inside = logicalAnd(greaterOrEqual(at, makeI64(0)), lessThan(at, extent));
      inArray = inArray ? logicalAnd(inArray, inside) : inside;
      global.push_back(maxOf(minOf(at, sub(extent, makeI64(1))), makeI64(0)));
    }
    if (footprint.transposed)
      std::swap(local[0], local[1]);
    std::string valueVar = prefix + ".value";
    Stmt copy = store(shared, std::move(local),
                      select(inArray, makeVar(footprint.array->element, valueVar),
                             zeroOf(footprint.array->element)));
    if (partial)
      copy = std::make_shared<IfThenElse>(lessThan(element, makeI64(elements)), copy);
    copy = std::make_shared<LetStmt>(
        prefix + ".element", first,
        std::make_shared<LetStmt>(
            valueVar, std::make_shared<Load>(footprint.array, std::move(global)), copy));
    Stmt copies =
        std::make_shared<For>(copyVar, makeI64(0), makeI64(group), ForKind::Unrolled, 0, copy);
    if (groups > 1)
      copies =
          std::make_shared<For>(groupVar, makeI64(0), makeI64(groups), ForKind::Serial, 0, copies);
    return copies;
  }

  // The copy element by element, each load under its guard
  // (copies_in_flight=0, what stage_shared made before the groups): kept so
  // that a run on a GPU can measure one against the other.
  Stmt guardedFill(const Footprint &footprint, const Buffer &shared) {
    std::vector<int64_t> extents = footprint.extents();
    int64_t elements = footprint.elements();
    std::string prefix = shared->name;
    Expr element = makeVar(ScalarType::I64, prefix + ".element");
    std::vector<Expr> local, global;
    Expr inArray;
    int64_t stride = elements;
    for (size_t d = 0; d < extents.size(); ++d) {
      stride /= extents[d];
      Expr index = stride == 1 ? element : div(element, makeI64(stride));
      if (d > 0)
        index = rem(index, makeI64(extents[d]));
      local.push_back(index);
      Expr at = add(footprint.box[d].origin(), index);
      global.push_back(at);
      Expr inside = logicalAnd(greaterOrEqual(at, makeI64(0)),
                               lessThan(at, toI64(footprint.array->shape[d])));
      inArray = inArray ? logicalAnd(inArray, inside) : inside;
    }
    Expr value = select(inArray, std::make_shared<Load>(footprint.array, std::move(global)),
                        zeroOf(footprint.array->element));
    if (footprint.transposed)
      std::swap(local[0], local[1]);
    Stmt copy = store(shared, std::move(local), value);
    if (elements % threadCount_ != 0)
      copy = std::make_shared<IfThenElse>(lessThan(element, makeI64(elements)), copy);
    std::string fillVar = prefix + ".fill";
    Expr first = add(mul(makeVar(ScalarType::I64, fillVar), makeI64(threadCount_)), linearThread_);
    return std::make_shared<For>(
        fillVar, makeI64(0), makeI64((elements + threadCount_ - 1) / threadCount_), ForKind::Serial,
        0, std::make_shared<LetStmt>(prefix + ".element", first, copy));
  }

  RangeScope scope_;
  const std::set<const BufferInfo *> &written_;
  const std::set<const Load *> columnReads_; // of the nest's loads
  const PassParameters &parameters_;
  const RemarkReporter &remarks_;
  std::set<std::string> &sharedNames_;
  std::map<std::string, IndexRange> threadRanges_;
  const For *threadsByDim_[3] = {nullptr, nullptr, nullptr};
  int64_t threadCount_ = 1;
  Expr linearThread_;
  int64_t sharedBytes_ = 0;
  std::vector<Buffer> sharedBuffers_;
  std::map<VerdictKey, Verdict> verdicts_;
  std::vector<VerdictKey> verdictOrder_;
  // The boxes of the last cut of a loop tried that did not fit, and why.
  std::vector<std::pair<const Load *, std::string>> tooLarge_;
  // Buffers of a side of a uniform branch, free for the side being staged.
  std::vector<Buffer> reusable_;
  int computeCapability_;
  // Buffers per box of the cut being tried: pipeline_depth for stages that
  // async copies may pipeline, else 1.
  int64_t copies_ = 1;
};

class SharedStager : public IRMutator {
public:
  SharedStager(const Function &function, const PassParameters &parameters,
               const RemarkReporter &remarks, int computeCapability)
      : reorderable_(function), parameters_(parameters), remarks_(remarks),
        computeCapability_(computeCapability) {}

protected:
  Stmt visitFor(const For &node, const Stmt &self) override {
    if (node.forKind != ForKind::GpuBlock)
      return IRMutator::visitFor(node, self);
    return stageNest(node, self);
  }

private:
  Stmt stageNest(const For &outer, const Stmt &nest) {
    std::optional<KernelNest> kernel = kernelNestAt(nest);
    if (!kernel || kernel->threads.empty() || cooperatesAcrossThreads(nest))
      return nest;
    for (const For *thread : kernel->threads) {
      const auto *min = thread->min->as<IntImm>();
      if (!min || min->value != 0 || !thread->extent->as<IntImm>())
        return nest;
    }
    std::set<const BufferInfo *> written = writtenArrays(nest);
    NestStager stager(kernel->threads, written, loadsDownColumns(nest, kernel->threads),
                      parameters_, remarks_, sharedNames_, computeCapability_);
    std::optional<Stmt> staged = stager.stage(kernel->body);
    if (staged && !reorderable_.allowed(nest)) {
      remarks_.declined(
          outer.source,
          "not staged: an index in this nest is not proven in range, and a box "
          "would read it unchecked (`loopc explain --remarks` lists the checks kept)");
      return nest;
    }
    for (const NestStager::Verdict &verdict : stager.verdicts()) {
      if (verdict.staged)
        remarks_.applied(verdict.where, verdict.message);
      else
        remarks_.declined(verdict.where, verdict.message);
    }
    if (!staged)
      return nest;
    return kernel->rebuilt(*staged, [&](Stmt threads) {
      for (const Buffer &shared : stager.sharedBuffers())
        threads = std::make_shared<Allocate>(shared, threads);
      return threads;
    });
  }

  const ReorderableAccesses reorderable_; // under bounds checks, the nests proven in range
  const PassParameters &parameters_;
  const RemarkReporter &remarks_;
  std::set<std::string> sharedNames_;
  int computeCapability_;
};

} // namespace

Function stageShared(Function function, const PassParameters &parameters,
                     const RemarkReporter &remarks, int computeCapability) {
  function.body =
      SharedStager(function, parameters, remarks, computeCapability).mutate(function.body);
  return function;
}

} // namespace loopc::passes
