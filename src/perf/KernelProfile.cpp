// Counting what one launch of a GPU kernel does (see KernelProfile.h).
#include "perf/KernelProfile.h"

#include "ir/IRPrinter.h"
#include "ir/IRVisitor.h"
#include "passes/analysis/Evaluate.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <ranges>
#include <set>
#include <tuple>
#include <utility>

namespace loopc::perf {

using namespace loopc::ir;
using ir::Expr;
using ir::Stmt;

namespace {

constexpr int kLanes = 32;
using LaneMask = uint32_t;
using LaneValues = std::array<int64_t, kLanes>;
constexpr LaneMask kAllLanes = 0xffffffffu;

// Which loops LLVM's unroller kept decides how many of a loop's loads go
// out together: ptxas issues the loads of straight-line code before their
// first use (a guarded load too, once it predicates the branch around it),
// but not those of a later iteration of a loop. So a loop LLVM unrolled
// whole joins the round trip of the code around it, and one it kept waits
// once per iteration of what it left (codegen/LoopCensus.h says which).
// Loops whose inner bounds move with their variable are walked at this many
// points of their range (a triangular nest).
constexpr int kMovingBoundSamples = 8;

// Warp instructions of operations that are not one instruction.
constexpr double kFloatDivideInstructions = 8;    // reciprocal and refinement
constexpr double kIntegerDivideInstructions = 20; // 64-bit division
double mathRoutineInstructions(Builtin builtin) {
  switch (builtin) {
  case Builtin::Exp:
    return 8;
  case Builtin::Log:
    return 12;
  case Builtin::Sin:
  case Builtin::Cos:
    return 20;
  case Builtin::Tanh:
    return 15;
  case Builtin::Pow:
    return 30;
  case Builtin::Sqrt:
    return 6;
  default:
    return 1; // abs, floor, ceil, min, max, fma
  }
}

// An access site's counts across the walk, and per visit the sectors each
// warp of the block touched (what the block's warps share).
struct SiteState {
  AccessProfile profile;
  struct Visit {
    std::set<int64_t> blockSectors; // union over the warps
    double weight = 0;              // executions per warp
    double newFraction = 1;         // sectors new per iteration of the loop around
    double tripsOfLoop = 1;
  };
  std::vector<Visit> visits; // by visit number within one warp's walk
};

// The loops around the current statement, innermost last.
struct LoopFrame {
  std::string var;
  double trips = 1;
  double roundsUnroll = 1; // iterations whose loads go out together
  // A short constant loop LLVM unrolls whole: its loads go out with those of
  // the code around it.
  bool joinsEnclosingRound = false;
  bool hasGlobalLoad = false;
  bool hasSharedLoad = false;
  // An AsyncWait in the loop's body: the groups it leaves in flight.
  int asyncPending = -1;
  // The non-affine index expressions an iteration has computed.
  std::set<std::string> computedIndices;
};

class Walker {
public:
  Walker(const KernelFunc &kernel, const LaunchShape &launch,
         const std::map<std::string, int64_t> &values,
         const std::map<std::string, CompiledLoop> &compiledLoops)
      : kernel_(kernel), launch_(launch), sizes_(values), compiledLoops_(compiledLoops),
        loopKeys_(ir::loopKeys(kernel.body)) {}

  KernelProfile profile() {
    KernelProfile result;
    result.kernel = kernel_.name;
    result.source = kernel_.source;
    result.launch = launch_;

    // Representative blocks: the middle one along each dimension of the
    // grid, and the last one (an edge tile) weighted by its share.
    std::vector<std::pair<std::array<int64_t, 3>, double>> blocks = {{{0, 0, 0}, 1.0}};
    for (int dim = 0; dim < 3; ++dim) {
      int64_t extent = launch_.grid[dim];
      if (extent <= 1)
        continue;
      std::vector<std::pair<std::array<int64_t, 3>, double>> split;
      for (auto [index, weight] : blocks) {
        index[dim] = extent / 2;
        split.push_back({index, weight * (1.0 - 1.0 / static_cast<double>(extent))});
        index[dim] = extent - 1;
        split.push_back({index, weight / static_cast<double>(extent)});
      }
      blocks = std::move(split);
    }
    double blockCount = static_cast<double>(launch_.blocks());
    int64_t threads = launch_.threadsPerBlock();
    // The critical path is the most common block's (the interior's).
    double largestShare = 0;
    for (const auto &block : blocks)
      largestShare = std::max(largestShare, block.second);
    Counts blockCritical;
    for (const auto &[blockIndex, share] : blocks) {
      blockIndex_ = blockIndex;
      blockWeight_ = share * blockCount;
      forgetBlockVisits();
      for (int64_t warp = 0; warp * kLanes < threads; ++warp) {
        warp_ = warp;
        warpCounts_ = {};
        visitNumber_.clear();
        availableLoads_.clear();
        vars_.clear();
        loops_.clear();
        loops_.push_back(LoopFrame{}); // the kernel's straight-line code
        LaneMask lanes = 0;
        for (int lane = 0; lane < kLanes; ++lane)
          if (warp * kLanes + lane < threads)
            lanes |= 1u << lane;
        segmentStart_ = totals_;
        segmentScatters_ = false;
        walk(*kernel_.body, lanes, 1.0);
        closeSegment();
        closeRoundScope(loops_.back(), 1.0);
        if (share >= largestShare) {
          blockCritical.instructions =
              std::max(blockCritical.instructions, warpCounts_.instructions);
          blockCritical.memoryRounds =
              std::max(blockCritical.memoryRounds, warpCounts_.memoryRounds);
          blockCritical.sharedRounds =
              std::max(blockCritical.sharedRounds, warpCounts_.sharedRounds);
          blockCritical.barriers = std::max(blockCritical.barriers, warpCounts_.barriers);
          if (warpCounts_.asyncWaits >= blockCritical.asyncWaits) {
            blockCritical.asyncWaits = warpCounts_.asyncWaits;
            blockCritical.asyncStagesAhead = warpCounts_.asyncStagesAhead;
            blockCritical.asyncCover = warpCounts_.asyncCover;
          }
        }
      }
      finishBlockVisits();
    }
    critical_ = blockCritical;

    result.fp32Instructions = totals_.fp32;
    result.fp64Instructions = totals_.fp64;
    result.floatDivides = totals_.divides;
    result.squareRoots = totals_.roots;
    result.dividerInstructions = totals_.dividerInstructions;
    result.routineInstructions = totals_.routineInstructions;
    result.scatteredInstructions = scattered_.fp32 + 2 * scattered_.fp64 -
                                   scattered_.dividerInstructions - scattered_.routineInstructions;
    result.scatteredDividerOperations = scattered_.divides + scattered_.roots;
    result.integerInstructions = totals_.integer;
    result.flops = totals_.flops;
    result.shuffles = totals_.shuffles;
    result.barriers = totals_.barriers;
    result.criticalInstructions = critical_.instructions;
    result.criticalMemoryRounds = critical_.memoryRounds;
    result.criticalSharedRounds = critical_.sharedRounds;
    result.criticalBarriers = critical_.barriers;
    if (critical_.asyncWaits > 0) {
      result.criticalAsyncWaits = critical_.asyncWaits;
      result.asyncStagesAhead = critical_.asyncStagesAhead;
      result.asyncCoverInstructions = critical_.asyncCover.instructions;
      result.asyncCoverSharedRounds = critical_.asyncCover.sharedRounds;
      result.asyncCoverBarriers = critical_.asyncCover.barriers;
    }
    // The copies a pass made of one access (a register tile's) are one line.
    std::map<std::tuple<SourceLoc, std::string, int, int, int>, AccessProfile> merged;
    for (const SiteState &site : std::views::values(sites_)) {
      const AccessProfile &access = site.profile;
      auto key = std::make_tuple(access.source.begin, access.array, static_cast<int>(access.memory),
                                 static_cast<int>(access.kind), access.vectorBytes);
      auto [entry, inserted] = merged.emplace(key, access);
      if (inserted)
        continue;
      AccessProfile &sum = entry->second;
      sum.requests += access.requests;
      sum.activeLanes += access.activeLanes;
      sum.sectors += access.sectors;
      sum.lines += access.lines;
      sum.wavefronts += access.wavefronts;
      sum.l2Sectors += access.l2Sectors;
      sum.addressesKnown = sum.addressesKnown && access.addressesKnown;
    }
    for (auto &[key, access] : merged)
      result.accesses.push_back(access);
    std::ranges::sort(result.accesses, [](const AccessProfile &a, const AccessProfile &b) {
      return std::tie(a.source.begin, a.array) < std::tie(b.source.begin, b.array);
    });
    computeCompulsoryBytes(result);
    result.approximate = approximate_;
    return result;
  }

private:
  struct Cover {
    double instructions = 0;
    double sharedRounds = 0;
    double barriers = 0;
  };
  struct Counts {
    double instructions = 0;
    double memoryRounds = 0;
    double sharedRounds = 0;
    double barriers = 0;
    double asyncWaits = 0;
    double asyncStagesAhead = 0;
    Cover asyncCover; // per wait
  };
  struct Totals {
    double fp32 = 0, fp64 = 0, integer = 0, flops = 0, shuffles = 0, barriers = 0;
    double divides = 0, roots = 0, dividerInstructions = 0, routineInstructions = 0;
  };

  // ------------------------------------------------------------ values ---

  std::optional<int64_t> lookup(const std::string &name, int lane) const {
    if (auto found = vars_.find(name); found != vars_.end()) {
      if (!found->second)
        return std::nullopt;
      return (*found->second)[lane];
    }
    if (auto found = sizes_.find(name); found != sizes_.end())
      return found->second;
    return std::nullopt;
  }

  // `expr` in each lane of `lanes`; nullopt when some active lane's value is
  // unknown (read from memory, or a float).
  std::optional<LaneValues> evaluate(const ExprNode &expr, LaneMask lanes) const {
    LaneValues values{};
    for (int lane = 0; lane < kLanes; ++lane) {
      if (!(lanes & (1u << lane)))
        continue;
      auto value = passes::evaluateInteger(
          expr, [&](const std::string &name) { return lookup(name, lane); });
      if (!value)
        return std::nullopt;
      values[lane] = *value;
    }
    return values;
  }

  void bind(const std::string &name, std::optional<LaneValues> values) { vars_[name] = values; }

  // Ends the code between two barriers: its floating-point counts go to
  // scattered_ when it updates elements the data picks.
  void closeSegment() {
    if (segmentScatters_) {
      scattered_.fp32 += totals_.fp32 - segmentStart_.fp32;
      scattered_.fp64 += totals_.fp64 - segmentStart_.fp64;
      scattered_.divides += totals_.divides - segmentStart_.divides;
      scattered_.roots += totals_.roots - segmentStart_.roots;
      scattered_.dividerInstructions +=
          totals_.dividerInstructions - segmentStart_.dividerInstructions;
      scattered_.routineInstructions +=
          totals_.routineInstructions - segmentStart_.routineInstructions;
    }
    segmentStart_ = totals_;
    segmentScatters_ = false;
  }

  // ------------------------------------------------------------ walking ---

  void walk(const StmtNode &stmt, LaneMask lanes, double weight) {
    if (!lanes || weight <= 0)
      return;
    switch (stmt.kind) {
    case StmtNode::Kind::Block: {
      auto outerSiblings = std::exchange(siblingFactors_, mergeableSiblings(stmt, lanes));
      for (const Stmt &child : stmt.as<ir::Block>()->stmts)
        walk(*child, lanes, weight);
      siblingFactors_ = std::move(outerSiblings);
      return;
    }
    case StmtNode::Kind::For:
      walkFor(*stmt.as<ir::For>(), lanes, weight);
      return;
    case StmtNode::Kind::IfThenElse:
      walkIf(*stmt.as<IfThenElse>(), lanes, weight);
      return;
    case StmtNode::Kind::LetStmt: {
      auto &let = *stmt.as<LetStmt>();
      countExpr(*let.value, lanes, weight);
      auto saved = vars_.find(let.var) == vars_.end()
                       ? std::optional<std::optional<LaneValues>>()
                       : std::optional<std::optional<LaneValues>>(vars_[let.var]);
      bind(let.var, isFloat(let.value->type) ? std::nullopt : evaluate(*let.value, lanes));
      auto savedLoopVars = letLoopVars_.extract(let.var);
      auto savedValue = letValues_.extract(let.var);
      letLoopVars_[let.var] = loopVarsOf(*let.value);
      letValues_[let.var] = let.value.get();
      walk(*let.body, lanes, weight);
      letLoopVars_.erase(let.var);
      letValues_.erase(let.var);
      if (savedLoopVars)
        letLoopVars_.insert(std::move(savedLoopVars));
      if (savedValue)
        letValues_.insert(std::move(savedValue));
      if (saved)
        vars_[let.var] = *saved;
      else
        vars_.erase(let.var);
      return;
    }
    case StmtNode::Kind::Store: {
      auto &store = *stmt.as<ir::Store>();
      countExpr(*store.value, lanes, weight);
      for (const Expr &index : store.indices)
        countIndex(*index, lanes, weight);
      if (store.buffer->memory != MemorySpace::Register)
        access(&store, store.buffer, store.indices, store.source, AccessProfile::Kind::Store, lanes,
               weight);
      return;
    }
    case StmtNode::Kind::AtomicUpdate: {
      auto &update = *stmt.as<AtomicUpdate>();
      countExpr(*update.value, lanes, weight);
      for (const Expr &index : update.indices)
        countIndex(*index, lanes, weight);
      if (update.buffer->memory == MemorySpace::Register)
        addFloatOrInteger(update.buffer->element, 1, 1, weight, lanes);
      else
        access(&update, update.buffer, update.indices, update.source, AccessProfile::Kind::Atomic,
               lanes, weight);
      return;
    }
    case StmtNode::Kind::Allocate:
      walk(*stmt.as<ir::Allocate>()->body, lanes, weight);
      return;
    case StmtNode::Kind::Barrier:
      availableLoads_.clear(); // other threads' stores are visible after it
      if (probing_)
        return;
      closeSegment();
      issue(weight);
      totals_.barriers += weight * blockWeight_;
      warpCounts_.barriers += weight;
      // A barrier ends a round of loads: what was loaded before it is
      // waited for before any thread goes on.
      closeRoundScope(loops_.back(), weight);
      return;
    case StmtNode::Kind::WarpShuffle: {
      auto &shuffle = *stmt.as<WarpShuffle>();
      countExpr(*shuffle.value, lanes, weight);
      double pieces = scalarSize(shuffle.target->element) > 4 ? 2 : 1;
      if (probing_)
        return;
      issue(weight * pieces);
      totals_.shuffles += weight * pieces * blockWeight_;
      return;
    }
    case StmtNode::Kind::AsyncCopy: {
      // One instruction moves the copy; its global read counts for the
      // memory system but no round trip here: the AsyncWait decides.
      auto &copy = *stmt.as<AsyncCopy>();
      countExpr(*copy.valid, lanes, weight);
      for (const Expr &index : copy.sourceIndices)
        countIndex(*index, lanes, weight);
      for (const Expr &index : copy.targetIndices)
        countIndex(*index, lanes, weight);
      if (probing_)
        return;
      access(&copy, copy.source, copy.sourceIndices, {}, AccessProfile::Kind::Load, lanes, weight,
             copy.elements);
      access(&copy.targetIndices, copy.target, copy.targetIndices, {}, AccessProfile::Kind::Store,
             lanes, weight, copy.elements);
      return;
    }
    case StmtNode::Kind::AsyncCommit:
      if (!probing_)
        issue(weight);
      return;
    case StmtNode::Kind::AsyncWait:
      if (probing_)
        return;
      issue(weight);
      loops_.back().asyncPending = stmt.as<AsyncWait>()->pending;
      return;
    case StmtNode::Kind::Check:
      countExpr(*stmt.as<ir::Check>()->condition, lanes, weight);
      return;
    default: // Reduce, Scan and Launch do not reach a kernel
      return;
    }
  }

  void walkFor(const ir::For &loop, LaneMask lanes, double weight) {
    if (loop.forKind == ForKind::GpuBlock) {
      // The block's own index; a loop over more blocks than the grid has
      // runs the rest in turns.
      int64_t gridExtent = launch_.grid[loop.gpuDim];
      auto extent = evaluate(*loop.extent, lanes);
      double turns =
          extent ? std::ceil(static_cast<double>((*extent)[0]) / static_cast<double>(gridExtent))
                 : 1.0;
      if (!extent)
        approximate_ = true;
      LaneValues index;
      index.fill(blockIndex_[loop.gpuDim]);
      auto min = evaluate(*loop.min, lanes);
      if (min)
        for (int lane = 0; lane < kLanes; ++lane)
          index[lane] += (*min)[lane];
      bind(loop.var, index);
      walk(*loop.body, lanes, weight * std::max(turns, 1.0));
      vars_.erase(loop.var);
      return;
    }
    if (loop.forKind == ForKind::GpuThread) {
      int64_t blockExtent = launch_.block[loop.gpuDim];
      auto extent = evaluate(*loop.extent, lanes);
      auto min = evaluate(*loop.min, lanes);
      if (!extent || !min) {
        approximate_ = true;
        return;
      }
      LaneValues index;
      LaneMask active = 0;
      int64_t turns = 1;
      for (int lane = 0; lane < kLanes; ++lane) {
        if (!(lanes & (1u << lane)))
          continue;
        int64_t thread = warp_ * kLanes + lane;
        int64_t coordinate = loop.gpuDim == 0   ? thread % launch_.block[0]
                             : loop.gpuDim == 1 ? thread / launch_.block[0] % launch_.block[1]
                                                : thread / (launch_.block[0] * launch_.block[1]);
        index[lane] = (*min)[lane] + coordinate;
        if (coordinate < (*extent)[lane]) {
          active |= 1u << lane;
          turns = std::max<int64_t>(turns,
                                    ((*extent)[lane] - coordinate + blockExtent - 1) / blockExtent);
        }
      }
      bind(loop.var, index);
      walk(*loop.body, active, weight * static_cast<double>(turns));
      vars_.erase(loop.var);
      return;
    }

    auto min = evaluate(*loop.min, lanes);
    auto extent = evaluate(*loop.extent, lanes);
    if (!min || !extent) {
      // Bounds read from memory: once, as a guess.
      approximate_ = true;
      bind(loop.var, std::nullopt);
      walkIterations(loop, lanes, weight, 1, std::nullopt, nullptr);
      vars_.erase(loop.var);
      return;
    }
    // The warp runs as many iterations as its longest lane.
    int64_t trips = 0;
    for (int lane = 0; lane < kLanes; ++lane)
      if (lanes & (1u << lane))
        trips = std::max(trips, (*extent)[lane]);
    if (trips <= 0)
      return;
    if (loop.forKind == ForKind::Unrolled) {
      walkUnrolled(loop, lanes, weight, *min, trips);
      return;
    }
    walkIterations(loop, lanes, weight, trips, min, &*extent);
  }

  // A serial (or vectorized) loop: its body once at the middle of the
  // range, weighted by the trip count, or at several points when inner
  // bounds move with its variable.
  void walkIterations(const ir::For &loop, LaneMask lanes, double weight, int64_t trips,
                      const std::optional<LaneValues> &min, const LaneValues *extent) {
    bool constantTrips = loop.extent->as<IntImm>() != nullptr;
    LoopFrame frame;
    frame.var = loop.var;
    frame.trips = static_cast<double>(trips);
    frame.roundsUnroll = static_cast<double>(unrollFactor(loop, trips));
    frame.joinsEnclosingRound =
        unrolledByPtxas(loop) ||
        (frame.roundsUnroll >= static_cast<double>(trips) && (constantTrips || !compiled(loop)));
    double instructionsBefore = warpCounts_.instructions;
    // The loop's own increment and branch, per iteration LLVM leaves.
    if (!frame.joinsEnclosingRound)
      issue(weight * static_cast<double>(trips) * 2 / frame.roundsUnroll);
    std::vector<int64_t> points;
    if (min && trips > 1 && boundsMoveWith(*loop.body, loop.var)) {
      for (int sample = 0; sample < kMovingBoundSamples; ++sample)
        points.push_back((2 * sample + 1) * trips / (2 * kMovingBoundSamples));
    } else {
      points.push_back(trips / 2);
    }
    double share = static_cast<double>(trips) / static_cast<double>(points.size());
    bool waitsAsync = false;
    for (int64_t point : points) {
      if (min) {
        LaneValues value = *min;
        for (int lane = 0; lane < kLanes; ++lane)
          value[lane] +=
              std::min<int64_t>(point, std::max<int64_t>(extent ? (*extent)[lane] - 1 : 0, 0));
        bind(loop.var, value);
      }
      loops_.push_back(frame);
      auto available = std::exchange(availableLoads_, {});
      Counts before = warpCounts_;
      walk(*loop.body, lanes, weight * share);
      availableLoads_ = std::move(available);
      if (loops_.back().asyncPending >= 0 && !probing_)
        coverAsyncWaits(before, loops_.back().asyncPending, weight * share);
      waitsAsync |= loops_.back().asyncPending >= 0;
      if (frame.joinsEnclosingRound) {
        loops_[loops_.size() - 2].hasGlobalLoad |= loops_.back().hasGlobalLoad;
        loops_[loops_.size() - 2].hasSharedLoad |= loops_.back().hasSharedLoad;
      } else {
        closeRoundScope(loops_.back(), weight * share);
      }
      loops_.pop_back();
    }
    // An innermost loop LLVM kept issues at least the instructions LLVM
    // left in it: the index arithmetic of a copy into shared memory (an
    // element's row and column, the clamps and compares of its guard) is
    // not folded into addresses as a compute loop's is. A loop ptxas
    // unrolls whole folds its counter into constant offsets instead.
    if (const CompiledLoop *kept = compiled(loop);
        kept && !unrolledByPtxas(loop) && !containsKeptLoop(*loop.body)) {
      double iterations = weight * static_cast<double>(trips);
      double counted = (warpCounts_.instructions - instructionsBefore) / iterations;
      double left = kept->instructions / frame.roundsUnroll;
      if (left > counted)
        issue(iterations * (left - counted));
    }
    // The first iteration's wait is for the copies issued before the loop,
    // with no compute between: a whole round trip.
    if (waitsAsync && !probing_) {
      warpCounts_.asyncWaits -= weight;
      warpCounts_.memoryRounds += weight;
    }
    vars_.erase(loop.var);
  }

  // The waits of a pipelined loop's iterations (walked with `weight` since
  // `before`): each for the copies issued `pending + 1` iterations earlier,
  // so the compute of that many iterations lies between.
  void coverAsyncWaits(const Counts &before, int pending, double weight) {
    Counts &after = warpCounts_;
    double ahead = pending + 1;
    Cover cover{(after.instructions - before.instructions) / weight * ahead,
                (after.sharedRounds - before.sharedRounds) / weight * ahead,
                (after.barriers - before.barriers) / weight * ahead};
    double waits = after.asyncWaits + weight;
    auto blend = [&](double old, double added) {
      return (old * after.asyncWaits + added * weight) / waits;
    };
    after.asyncCover = {blend(after.asyncCover.instructions, cover.instructions),
                        blend(after.asyncCover.sharedRounds, cover.sharedRounds),
                        blend(after.asyncCover.barriers, cover.barriers)};
    after.asyncStagesAhead = blend(after.asyncStagesAhead, ahead);
    after.asyncWaits = waits;
  }

  // An unrolled loop: every iteration, its variable a constant, so that
  // neighbouring iterations' accesses to consecutive addresses can be merged
  // into one wider access, as the code generator's loads are. Its loads join
  // the round of the code around it.
  void walkUnrolled(const ir::For &loop, LaneMask lanes, double weight, const LaneValues &min,
                    int64_t trips) {
    // Each iteration's shared loads are waited for before its arithmetic:
    // one shared round trip per iteration that loads.
    auto iterate = [&](int64_t iteration) {
      LaneValues value = min;
      for (int lane = 0; lane < kLanes; ++lane)
        value[lane] += iteration;
      bind(loop.var, value);
      bool sharedBefore = std::exchange(loops_.back().hasSharedLoad, false);
      walk(*loop.body, lanes, weight);
      if (loops_.back().hasSharedLoad && !probing_)
        warpCounts_.sharedRounds += weight;
      loops_.back().hasSharedLoad = sharedBefore;
    };
    if (probing_) { // inside another unrolled loop's probe: no probe of its own
      for (int64_t iteration = 0; iteration < trips; ++iteration)
        iterate(iteration);
      vars_.erase(loop.var);
      return;
    }
    // A dry run of the first two iterations finds the loads read at
    // consecutive addresses by consecutive iterations.
    std::map<const void *, int64_t> factors;
    if (trips >= 2) {
      probing_ = true;
      probedAddresses_.clear();
      for (probeIteration_ = 0; probeIteration_ < 2; ++probeIteration_)
        iterate(probeIteration_);
      probing_ = false;
      factors = mergeableLoads(trips);
    }
    auto outerFactors = std::exchange(vectorFactors_, std::move(factors));
    auto outerIteration = std::exchange(unrolledIteration_, 0);
    for (int64_t iteration = 0; iteration < trips; ++iteration) {
      unrolledIteration_ = iteration;
      iterate(iteration);
    }
    vectorFactors_ = std::move(outerFactors);
    unrolledIteration_ = outerIteration;
    vars_.erase(loop.var);
  }

  // Of the loads the probe saw: those whose every lane reads the next element
  // in the second iteration, merged by 2 or 4 (at most 16 bytes) when every
  // lane's first address is a multiple of the merged width.
  std::map<const void *, int64_t> mergeableLoads(int64_t trips) const {
    std::map<const void *, int64_t> factors;
    for (const auto &[node, probe] : probedAddresses_) {
      const auto &[elementBytes, lanes, first, second] = probe;
      if (!first || !second)
        continue;
      bool consecutive = true;
      for (int lane = 0; lane < kLanes; ++lane)
        if ((lanes & (1u << lane)) && (*second)[lane] - (*first)[lane] != elementBytes)
          consecutive = false;
      if (!consecutive)
        continue;
      for (int64_t factor : {16 / elementBytes, 8 / elementBytes}) {
        if (factor < 2 || trips % factor != 0)
          continue;
        bool aligned = true;
        for (int lane = 0; lane < kLanes; ++lane)
          if ((lanes & (1u << lane)) && (*first)[lane] % (factor * elementBytes) != 0)
            aligned = false;
        if (aligned) {
          factors[node] = factor;
          break;
        }
      }
    }
    return factors;
  }

  // Shared loads of one straight-line block (the values its statements
  // store) that read consecutive elements in every lane, the first at a
  // multiple of the merged width, as the code generator merges them into
  // one 64- or 128-bit load (register tiles laid out per warp: a thread's 4
  // copies read 4 neighbours of a row): the first of each group with its
  // factor, the others 0 (merged into it). Shared memory only: a shared
  // buffer's extents are constants, so the code generator proves the
  // alignment these addresses show; a global array's sizes are not known
  // to it.
  std::map<const void *, int64_t> mergeableSiblings(const StmtNode &block, LaneMask lanes) {
    // Loads of the same elements (one row read by several copies) are one
    // load, the code generator's GVN keeps the first: grouped together.
    using Key = std::pair<const BufferInfo *, LaneValues>;
    std::map<Key, std::vector<const ir::Load *>> byAddress;
    std::vector<Key> inOrder;
    for (const Stmt &child : block.as<ir::Block>()->stmts) {
      const auto *store = child->as<ir::Store>();
      if (!store)
        continue;
      for (const ir::Load *load : ir::loadsIn(store->value)) {
        if (load->buffer->memory != MemorySpace::Shared || vectorFactors_.contains(load))
          continue;
        if (auto addresses = laneAddresses(*load->buffer, load->indices, lanes)) {
          for (int lane = 0; lane < kLanes; ++lane)
            if (!(lanes & (1u << lane)))
              (*addresses)[lane] = 0; // compared across loads: the active lanes only
          Key key{load->buffer.get(), *addresses};
          std::vector<const ir::Load *> &same = byAddress[key];
          if (same.empty())
            inOrder.push_back(key);
          same.push_back(load);
        }
      }
    }
    std::map<const void *, int64_t> factors;
    for (const Key &first : inOrder) {
      const ir::Load *load = byAddress.at(first).front();
      auto elementBytes = static_cast<int64_t>(scalarSize(load->buffer->element));
      for (int64_t factor : {16 / elementBytes, 8 / elementBytes}) {
        if (factor < 2 || factors.contains(load))
          continue;
        std::vector<Key> group{first};
        for (int64_t next = 1; next < factor; ++next) {
          Key shifted = first;
          for (int lane = 0; lane < kLanes; ++lane)
            if (lanes & (1u << lane))
              shifted.second[lane] += next * elementBytes;
          auto found = byAddress.find(shifted);
          if (found == byAddress.end() || factors.contains(found->second.front()))
            break;
          group.push_back(shifted);
        }
        bool aligned = true;
        for (int lane = 0; lane < kLanes; ++lane)
          if ((lanes & (1u << lane)) && first.second[lane] % (factor * elementBytes) != 0)
            aligned = false;
        if (!aligned || static_cast<int64_t>(group.size()) != factor)
          continue;
        for (const Key &member : group)
          for (const ir::Load *same : byAddress.at(member))
            factors[same] = member == first ? factor : 0;
      }
    }
    return factors;
  }

  void walkIf(const IfThenElse &branch, LaneMask lanes, double weight) {
    countExpr(*branch.cond, lanes, weight);
    issue(weight); // the branch
    if (auto cond = evaluate(*branch.cond, lanes)) {
      LaneMask taken = 0;
      for (int lane = 0; lane < kLanes; ++lane)
        if ((lanes & (1u << lane)) && (*cond)[lane])
          taken |= 1u << lane;
      auto before = availableLoads_;
      walk(*branch.thenCase, taken, weight);
      availableLoads_ = before;
      if (branch.elseCase)
        walk(*branch.elseCase, lanes & ~taken, weight);
      availableLoads_ = std::move(before);
      return;
    }
    // Decided by data: the warp runs both sides, each, as a guess, half the
    // time when there are two.
    approximate_ = true;
    double share = branch.elseCase ? 0.5 : 1.0;
    auto before = availableLoads_;
    walk(*branch.thenCase, lanes, weight * share);
    availableLoads_ = before;
    if (branch.elseCase)
      walk(*branch.elseCase, lanes, weight * share);
    availableLoads_ = std::move(before);
  }

  // ------------------------------------------------------------ counting ---

  void issue(double warpInstructions) {
    if (probing_)
      return;
    warpCounts_.instructions += warpInstructions;
    totals_.integer += warpInstructions * blockWeight_;
  }

  // `instructions` warp instructions of `type`, doing `flops` operations in
  // each of the `lanes` active.
  void addFloatOrInteger(ScalarType type, double instructions, double flops, double weight,
                         LaneMask lanes = kAllLanes) {
    if (probing_)
      return;
    warpCounts_.instructions += instructions * weight;
    double laneFlops = flops * std::popcount(lanes) * weight * blockWeight_;
    if (type == ScalarType::F64) {
      totals_.fp64 += instructions * weight * blockWeight_;
      totals_.flops += laneFlops;
    } else if (isFloat(type)) {
      totals_.fp32 += instructions * weight * blockWeight_;
      totals_.flops += laneFlops;
    } else {
      totals_.integer += instructions * weight * blockWeight_;
    }
  }

  // A division or square root of floats (warp instructions, an f64 one
  // twice), and the instructions addFloatOrInteger counted for it.
  void addDivider(ScalarType type, double instructions, bool root, double weight) {
    if (probing_)
      return;
    double scale = type == ScalarType::F64 ? 2 : 1;
    (root ? totals_.roots : totals_.divides) += scale * weight * blockWeight_;
    totals_.dividerInstructions += scale * instructions * weight * blockWeight_;
  }

  // Index arithmetic: LLVM strength-reduces an index that moves by a
  // constant step with the loops around it and folds constant offsets into
  // the address, so that costs nothing. Clamps (min, max, select) and
  // divisions do not move so: each is an instruction (a division by a
  // variable many), and their result one more to scale into the address (a
  // copy's element row and column, a halo's clamped coordinates).
  // Each distinct one is computed once per iteration of the innermost loop
  // whose variable it uses (LLVM's GVN and LICM), and not at all when it
  // uses none (computed once per thread).
  void countIndex(const ExprNode &index, LaneMask lanes, double weight) {
    countLoadsIn(index, lanes, weight);
    countNonAffine(index, weight);
  }

  void countNonAffine(const ExprNode &expr, double weight) {
    bool nonAffine =
        expr.kind == ExprNode::Kind::Call || expr.kind == ExprNode::Kind::Select ||
        (expr.kind == ExprNode::Kind::Binary && (expr.as<Binary>()->op == BinaryOpKind::Div ||
                                                 expr.as<Binary>()->op == BinaryOpKind::Rem));
    if (!nonAffine) {
      if (auto *unary = expr.as<Unary>())
        countNonAffine(*unary->operand, weight);
      else if (auto *binary = expr.as<Binary>()) {
        countNonAffine(*binary->lhs, weight);
        countNonAffine(*binary->rhs, weight);
      } else if (auto *cast = expr.as<Cast>())
        countNonAffine(*cast->operand, weight);
      return;
    }
    std::set<std::string> varying = loopVarsOf(expr);
    for (auto loop = loops_.rbegin(); loop != loops_.rend(); ++loop)
      if (varying.contains(loop->var)) {
        if (loop->computedIndices.insert(ir::toString(Expr(Expr(), &expr))).second)
          addFloatOrInteger(ScalarType::I64, nonAffineInstructions(expr) + 1, 0, weight);
        return;
      }
  }

  // The variables of the loops being walked that `expr` uses, directly or
  // through the lets it reads.
  std::set<std::string> loopVarsOf(const ExprNode &expr) const {
    std::set<std::string> result;
    for (const std::string &name : freeVars(Expr(Expr(), &expr))) {
      if (auto let = letLoopVars_.find(name); let != letLoopVars_.end())
        result.insert(let->second.begin(), let->second.end());
      else if (std::ranges::any_of(loops_, [&](const LoopFrame &loop) { return loop.var == name; }))
        result.insert(name);
    }
    return result;
  }

  static double nonAffineInstructions(const ExprNode &expr) {
    switch (expr.kind) {
    case ExprNode::Kind::Unary:
      return nonAffineInstructions(*expr.as<Unary>()->operand);
    case ExprNode::Kind::Binary: {
      auto &binary = *expr.as<Binary>();
      double own = 0;
      if (binary.op == BinaryOpKind::Div || binary.op == BinaryOpKind::Rem)
        own = binary.rhs->as<IntImm>() ? 1 : kIntegerDivideInstructions;
      return own + nonAffineInstructions(*binary.lhs) + nonAffineInstructions(*binary.rhs);
    }
    case ExprNode::Kind::Select: {
      auto &select = *expr.as<ir::Select>();
      return 1 + nonAffineInstructions(*select.cond) + nonAffineInstructions(*select.thenValue) +
             nonAffineInstructions(*select.elseValue);
    }
    case ExprNode::Kind::Cast:
      return nonAffineInstructions(*expr.as<Cast>()->operand);
    case ExprNode::Kind::Call: {
      double total = 1;
      for (const Expr &arg : expr.as<ir::Call>()->args)
        total += nonAffineInstructions(*arg);
      return total;
    }
    default:
      return 0;
    }
  }

  void countLoadsIn(const ExprNode &expr, LaneMask lanes, double weight) {
    switch (expr.kind) {
    case ExprNode::Kind::Load:
      countExpr(expr, lanes, weight);
      return;
    case ExprNode::Kind::Unary:
      countLoadsIn(*expr.as<Unary>()->operand, lanes, weight);
      return;
    case ExprNode::Kind::Binary:
      countLoadsIn(*expr.as<Binary>()->lhs, lanes, weight);
      countLoadsIn(*expr.as<Binary>()->rhs, lanes, weight);
      return;
    case ExprNode::Kind::Select:
      countLoadsIn(*expr.as<ir::Select>()->cond, lanes, weight);
      countLoadsIn(*expr.as<ir::Select>()->thenValue, lanes, weight);
      countLoadsIn(*expr.as<ir::Select>()->elseValue, lanes, weight);
      return;
    case ExprNode::Kind::Cast:
      countLoadsIn(*expr.as<Cast>()->operand, lanes, weight);
      return;
    case ExprNode::Kind::Call:
      for (const Expr &arg : expr.as<ir::Call>()->args)
        countLoadsIn(*arg, lanes, weight);
      return;
    default:
      return;
    }
  }

  void countExpr(const ExprNode &expr, LaneMask lanes, double weight) {
    if (!lanes)
      return;
    switch (expr.kind) {
    case ExprNode::Kind::Load: {
      auto &load = *expr.as<ir::Load>();
      for (const Expr &index : load.indices)
        countIndex(*index, lanes, weight);
      if (load.buffer->memory != MemorySpace::Register)
        access(&load, load.buffer, load.indices, load.source, AccessProfile::Kind::Load, lanes,
               weight);
      return;
    }
    case ExprNode::Kind::Unary:
      countExpr(*expr.as<Unary>()->operand, lanes, weight);
      if (isFloat(expr.type) || readsMemory(expr))
        addFloatOrInteger(expr.type, 1, isFloat(expr.type) ? 1 : 0, weight, lanes);
      return;
    case ExprNode::Kind::Binary: {
      auto &binary = *expr.as<Binary>();
      bool floatOperands = isFloat(binary.lhs->type);
      // A multiply under an add or subtract is one fused multiply-add.
      auto fusedProduct = [&](const ExprNode &operand) {
        auto *product = operand.as<Binary>();
        return floatOperands && product && product->op == BinaryOpKind::Mul &&
               (binary.op == BinaryOpKind::Add || binary.op == BinaryOpKind::Sub);
      };
      for (const Expr *operand : {&binary.lhs, &binary.rhs}) {
        if (fusedProduct(**operand)) {
          auto &product = *(*operand)->as<Binary>();
          countExpr(*product.lhs, lanes, weight);
          countExpr(*product.rhs, lanes, weight);
          addFloatOrInteger(binary.lhs->type, 0, 1, weight, lanes); // its flop; no instruction
        } else {
          countExpr(**operand, lanes, weight);
        }
      }
      double instructions = floatOperands ? 1 : integerInstructions(binary);
      if (floatOperands && (binary.op == BinaryOpKind::Div || binary.op == BinaryOpKind::Rem))
        instructions = kFloatDivideInstructions;
      bool flop = floatOperands && !isComparison(binary.op) && binary.op != BinaryOpKind::And &&
                  binary.op != BinaryOpKind::Or;
      addFloatOrInteger(floatOperands ? binary.lhs->type : ScalarType::I64, instructions,
                        flop ? 1 : 0, weight, lanes);
      if (floatOperands && (binary.op == BinaryOpKind::Div || binary.op == BinaryOpKind::Rem))
        addDivider(binary.lhs->type, instructions, /*root=*/false, weight);
      return;
    }
    case ExprNode::Kind::Select: {
      auto &select = *expr.as<ir::Select>();
      countExpr(*select.cond, lanes, weight);
      addFloatOrInteger(ScalarType::I64, 1, 0, weight);
      if (auto cond = evaluate(*select.cond, lanes)) {
        LaneMask taken = 0;
        for (int lane = 0; lane < kLanes; ++lane)
          if ((lanes & (1u << lane)) && (*cond)[lane])
            taken |= 1u << lane;
        countExpr(*select.thenValue, taken, weight);
        countExpr(*select.elseValue, lanes & ~taken, weight);
      } else {
        countExpr(*select.thenValue, lanes, weight);
        countExpr(*select.elseValue, lanes, weight);
      }
      return;
    }
    case ExprNode::Kind::Cast: {
      auto &cast = *expr.as<Cast>();
      countExpr(*cast.operand, lanes, weight);
      if (isFloat(cast.type) != isFloat(cast.operand->type))
        addFloatOrInteger(ScalarType::I64, 1, 0, weight);
      return;
    }
    case ExprNode::Kind::Call: {
      auto &call = *expr.as<ir::Call>();
      for (const Expr &arg : call.args)
        countExpr(*arg, lanes, weight);
      addFloatOrInteger(call.type, mathRoutineInstructions(call.builtin),
                        call.builtin == Builtin::Fma ? 2 : 1, weight, lanes);
      if (call.builtin == Builtin::Sqrt && isFloat(call.type))
        addDivider(call.type, mathRoutineInstructions(call.builtin), /*root=*/true, weight);
      if (call.isMathRoutine() && !probing_)
        totals_.routineInstructions += (call.type == ScalarType::F64 ? 2 : 1) *
                                       mathRoutineInstructions(call.builtin) * weight *
                                       blockWeight_;
      return;
    }
    default:
      return;
    }
  }

  // Integer arithmetic on indices (loop variables, sizes) is folded into
  // addresses, hoisted out of loops or strength-reduced by LLVM, and counts
  // nothing; on values read from memory (a histogram's bin) it counts one
  // instruction. Comparisons and logic count one (predicates), a division
  // by a constant one (a multiply-high and shift), by a variable many.
  static double integerInstructions(const Binary &binary) {
    if (isComparison(binary.op) || binary.op == BinaryOpKind::And || binary.op == BinaryOpKind::Or)
      return 1;
    if (binary.op == BinaryOpKind::Div || binary.op == BinaryOpKind::Rem)
      return binary.rhs->as<IntImm>() ? 1 : kIntegerDivideInstructions;
    return readsMemory(binary) ? 1 : 0;
  }

  // Whether `expr` reads an array (a register scalar is no memory).
  static bool readsMemory(const ExprNode &expr) {
    return std::ranges::any_of(ir::loadsIn(Expr(Expr(), &expr)), [](const ir::Load *load) {
      return load->buffer->memory != MemorySpace::Register || !load->buffer->shape.empty();
    });
  }

  // ------------------------------------------------------------ accesses ---

  // The byte offsets of buffer[indices] in each active lane, row-major.
  std::optional<LaneValues> laneAddresses(const BufferInfo &buffer,
                                          const std::vector<Expr> &indices, LaneMask lanes,
                                          const std::string *shiftedVar = nullptr) {
    std::vector<int64_t> extents;
    for (const Expr &extent : buffer.shape) {
      auto value = passes::evaluateInteger(
          *extent, [&](const std::string &name) { return lookup(name, 0); });
      extents.push_back(value ? std::max<int64_t>(*value, 1) : 1);
    }
    LaneValues address{};
    for (size_t dim = 0; dim < indices.size(); ++dim) {
      std::optional<LaneValues> index;
      if (shiftedVar) {
        // The index one iteration later along `shiftedVar`.
        LaneValues values{};
        for (int lane = 0; lane < kLanes; ++lane) {
          if (!(lanes & (1u << lane)))
            continue;
          // The lets computed from the loop's variable move with it.
          std::function<std::optional<int64_t>(const std::string &)> shifted =
              [&](const std::string &name) -> std::optional<int64_t> {
            auto found = lookup(name, lane);
            if (name == *shiftedVar)
              return found ? std::optional<int64_t>(*found + 1) : found;
            if (auto let = letValues_.find(name);
                let != letValues_.end() && letLoopVars_.at(name).contains(*shiftedVar))
              return passes::evaluateInteger(*let->second, shifted);
            return found;
          };
          auto value = passes::evaluateInteger(*indices[dim], shifted);
          if (!value)
            return std::nullopt;
          values[lane] = *value;
        }
        index = values;
      } else {
        index = evaluate(*indices[dim], lanes);
      }
      if (!index)
        return std::nullopt;
      for (int lane = 0; lane < kLanes; ++lane)
        address[lane] = address[lane] * extents[dim] + (*index)[lane];
    }
    for (int64_t &value : address)
      value *= static_cast<int64_t>(scalarSize(buffer.element));
    return address;
  }

  // Records one warp request (or, for a merged load, the iterations it
  // covers) of the access `node`.
  // `asyncElements`: a side of an async copy of that many elements per
  // lane, whose global read the copy's wait waits for, and whose shared
  // write is no instruction of its own.
  void access(const void *node, const Buffer &buffer, const std::vector<Expr> &indices,
              SourceRange source, AccessProfile::Kind kind, LaneMask lanes, double weight,
              int asyncElements = 0) {
    int elementBytes = static_cast<int>(scalarSize(buffer->element));
    if (probing_) {
      auto &probe = probedAddresses_[node];
      std::get<0>(probe) = elementBytes;
      std::get<1>(probe) = lanes;
      auto &slot = probeIteration_ == 0 ? std::get<2>(probe) : std::get<3>(probe);
      if (!slot)
        slot = laneAddresses(*buffer, indices, lanes);
      return;
    }
    if (kind != AccessProfile::Kind::Load)
      forgetLoadsOf(buffer.get());
    int factor = std::max(asyncElements, 1);
    if (auto sibling = siblingFactors_.find(node); sibling != siblingFactors_.end()) {
      if (sibling->second == 0)
        return; // merged into the request of a neighbour
      factor = static_cast<int>(sibling->second);
    }
    if (auto found = vectorFactors_.find(node); found != vectorFactors_.end()) {
      factor = static_cast<int>(found->second);
      if (unrolledIteration_ % factor != 0)
        return; // merged into the request of an earlier iteration
    }
    auto addresses = laneAddresses(*buffer, indices, lanes);
    // The same elements loaded again with nothing stored to them between
    // are one load: the code generator's GVN keeps the first.
    if (kind == AccessProfile::Kind::Load && addresses &&
        !availableLoads_.insert({buffer.get(), lanes, *addresses}).second)
      return;
    SiteState &site = sites_[node];
    AccessProfile &profile = site.profile;
    if (profile.requests == 0 && profile.array.empty()) {
      profile.array = buffer->nameInMessages();
      profile.source = source;
      profile.memory = buffer->memory;
      profile.kind = kind;
      profile.elementBytes = elementBytes;
      profile.vectorBytes = elementBytes * factor;
      if (kind == AccessProfile::Kind::Atomic) {
        double targets = 1;
        for (const Expr &extent : buffer->shape)
          if (auto value = passes::evaluateInteger(
                  *extent, [&](const std::string &name) { return lookup(name, 0); }))
            targets *= static_cast<double>(std::max<int64_t>(*value, 1));
        profile.atomicTargets = targets;
      }
    }
    double active = std::popcount(lanes);
    double scaled = weight * blockWeight_;
    profile.requests += scaled;
    profile.activeLanes += active * scaled;
    if (asyncElements == 0 || buffer->memory == MemorySpace::Global)
      addFloatOrInteger(ScalarType::I64, 1, 0, weight); // the memory instruction
    if (buffer->memory == MemorySpace::Global)
      addFloatOrInteger(ScalarType::I64, 1, 0, weight); // its address

    std::set<int64_t> sectors, lines;
    if (addresses) {
      for (int lane = 0; lane < kLanes; ++lane) {
        if (!(lanes & (1u << lane)))
          continue;
        for (int64_t byte = 0; byte < elementBytes * factor; byte += 32) {
          sectors.insert(((*addresses)[lane] + byte) >> 5);
          lines.insert(((*addresses)[lane] + byte) >> 7);
        }
      }
    } else {
      profile.addressesKnown = false;
      segmentScatters_ |= kind == AccessProfile::Kind::Atomic && !probing_;
    }
    double sectorCount = addresses ? static_cast<double>(sectors.size()) : active;
    double lineCount = addresses ? static_cast<double>(lines.size()) : active;

    if (buffer->memory == MemorySpace::Shared) {
      double wavefronts = 1;
      if (kind == AccessProfile::Kind::Atomic) {
        // The shared memory unit updates one lane's element a cycle (the
        // rate that fits a 256-bin histogram of 2^28 values measured on an
        // H100: docs/benchmarks.md, GPU history).
        wavefronts = active;
      } else if (addresses) {
        wavefronts = sharedWavefronts(*addresses, lanes, elementBytes * factor);
      } else {
        wavefronts = active;
      }
      profile.wavefronts += wavefronts * scaled;
      if (kind == AccessProfile::Kind::Load) {
        loops_.back().hasSharedLoad = true;
      }
      return;
    }

    profile.sectors += sectorCount * scaled;
    profile.lines += lineCount * scaled;
    if (kind == AccessProfile::Kind::Atomic) {
      profile.l2Sectors += active * scaled; // each lane's update is done in L2
      return;
    }
    if (kind == AccessProfile::Kind::Store) {
      profile.l2Sectors += sectorCount * scaled;
      return;
    }
    if (asyncElements == 0)
      loops_.back().hasGlobalLoad = true;
    // What the block's warps share, and what the next iteration of the
    // innermost loop around brings anew.
    size_t number = visitNumber_[node]++;
    if (site.visits.size() <= number)
      site.visits.resize(number + 1);
    SiteState::Visit &visit = site.visits[number];
    visit.weight = std::max(visit.weight, weight);
    if (addresses)
      visit.blockSectors.insert(sectors.begin(), sectors.end());
    else
      for (int i = 0; i < active; ++i)
        visit.blockSectors.insert(-(static_cast<int64_t>(visit.blockSectors.size()) + 1));
    const LoopFrame *innermost = nullptr;
    for (auto loop = loops_.rbegin(); loop != loops_.rend(); ++loop)
      if (!loop->var.empty()) {
        innermost = &*loop;
        break;
      }
    if (innermost && addresses && warp_ == 0) {
      visit.tripsOfLoop = innermost->trips;
      if (auto next = laneAddresses(*buffer, indices, lanes, &innermost->var)) {
        std::set<int64_t> nextSectors;
        for (int lane = 0; lane < kLanes; ++lane)
          if (lanes & (1u << lane))
            nextSectors.insert((*next)[lane] >> 5);
        double fresh = 0;
        for (int64_t sector : nextSectors)
          fresh += sectors.contains(sector) ? 0 : 1;
        visit.newFraction = fresh / std::max<double>(1, static_cast<double>(sectors.size()));
      }
    } else if (!addresses) {
      visit.newFraction = 1;
    }
  }

  void forgetLoadsOf(const BufferInfo *buffer) {
    std::erase_if(availableLoads_, [&](const auto &entry) { return std::get<0>(entry) == buffer; });
  }

  // Shared memory cycles of one warp request: per 128-byte wavefront, the
  // most distinct words any one bank must deliver.
  static double sharedWavefronts(const LaneValues &addresses, LaneMask lanes, int bytes) {
    std::map<int64_t, std::set<int64_t>> wordsOfBank;
    std::set<int64_t> words;
    for (int lane = 0; lane < kLanes; ++lane) {
      if (!(lanes & (1u << lane)))
        continue;
      for (int byte = 0; byte < bytes; byte += 4) {
        int64_t word = (addresses[lane] + byte) >> 2;
        words.insert(word);
        wordsOfBank[word % 32].insert(word);
      }
    }
    size_t conflict = 1;
    for (const auto &[bank, bankWords] : wordsOfBank)
      conflict = std::max(conflict, bankWords.size());
    double bandwidth = std::ceil(static_cast<double>(words.size()) * 4.0 / 128.0);
    return std::max<double>(static_cast<double>(conflict), bandwidth);
  }

  // Ends a stretch of code whose loads go out together: one round trip for
  // its global loads and one for its shared loads, per `roundsUnroll`
  // iterations of its loop.
  void closeRoundScope(LoopFrame &frame, double weight) {
    if (probing_)
      return;
    double rounds = weight / std::max(1.0, frame.roundsUnroll);
    if (frame.hasGlobalLoad)
      warpCounts_.memoryRounds += rounds;
    if (frame.hasSharedLoad)
      warpCounts_.sharedRounds += rounds;
    frame.hasGlobalLoad = frame.hasSharedLoad = false;
  }

  void forgetBlockVisits() {
    for (SiteState &site : std::views::values(sites_))
      site.visits.clear();
  }

  // After all warps of a block: the sectors of each load L2 must deliver,
  // those the block's warps did not already bring into L1.
  void finishBlockVisits() {
    for (SiteState &site : std::views::values(sites_)) {
      for (const SiteState::Visit &visit : site.visits) {
        double sectors = static_cast<double>(visit.blockSectors.size());
        double trips = std::max(1.0, visit.tripsOfLoop);
        double perLoopEntry = visit.weight / trips;
        site.profile.l2Sectors +=
            sectors * perLoopEntry * (1 + (trips - 1) * visit.newFraction) * blockWeight_;
      }
      site.visits.clear();
    }
  }

  // Whether ptxas unrolls whole a loop LLVM kept: one of a constant trip
  // count that it may unroll (codegen/LoopCensus.h), when the unrolled code
  // stays short. ptxas unrolled matmul's copy of B (8 iterations of 36
  // instructions) and conv2d_5x5's 2 x 2 tile rows (5 of 82), but not
  // cnn_conv's halo copy (13 of 56) nor conv2d_5x5's (19 of 39): the SASS
  // has as many global loads as the PTX there.
  bool unrolledByPtxas(const ir::For &loop) const {
    constexpr int64_t kPtxasUnrollInstructions = 500;
    const CompiledLoop *kept = compiled(loop);
    return kept && kept->constantTrips > 0 &&
           kept->constantTrips * kept->instructions <= kPtxasUnrollInstructions;
  }

  // What the code generator left of `loop`; null where it unrolled it whole.
  const CompiledLoop *compiled(const ir::For &loop) const {
    auto key = loopKeys_.find(&loop);
    if (key == loopKeys_.end())
      return nullptr;
    auto found = compiledLoops_.find(key->second);
    return found == compiledLoops_.end() ? nullptr : &found->second;
  }

  // The iterations of `loop`'s body one iteration of what LLVM's unroller
  // left runs: all of them when it unrolled the loop whole, else the loads
  // the optimized loop makes over those one iteration of ours makes.
  int64_t unrollFactor(const ir::For &loop, int64_t trips) const {
    const CompiledLoop *kept = compiled(loop);
    if (!kept)
      return trips;
    int64_t ours = globalLoadsPerIteration(*loop.body);
    if (ours == 0)
      return 1;
    return std::clamp<int64_t>((kept->globalLoads + ours / 2) / ours, 1, trips);
  }

  // The global loads one iteration of a loop's body makes, with those of
  // the loops in it that LLVM unrolled whole (gone from the census) times
  // their trip counts; loops it kept make their own.
  int64_t globalLoadsPerIteration(const StmtNode &body) const {
    int64_t loads = 0;
    auto inExpr = [&](const ExprNode &expr) {
      for (const ir::Load *load : ir::loadsIn(Expr(Expr(), &expr)))
        loads += load->buffer->memory == MemorySpace::Global ? 1 : 0;
    };
    std::function<void(const StmtNode &, int64_t)> visit = [&](const StmtNode &stmt,
                                                               int64_t times) {
      int64_t before = loads;
      switch (stmt.kind) {
      case StmtNode::Kind::For: {
        auto &loop = *stmt.as<ir::For>();
        auto *trips = loop.extent->as<IntImm>();
        bool unrolledWhole = loop.forKind == ForKind::Unrolled || (trips && !compiled(loop));
        if (unrolledWhole)
          visit(*loop.body, times * (trips ? std::max<int64_t>(trips->value, 0) : 1));
        return;
      }
      case StmtNode::Kind::Block:
        for (const Stmt &child : stmt.as<ir::Block>()->stmts)
          visit(*child, times);
        return;
      case StmtNode::Kind::LetStmt:
        inExpr(*stmt.as<LetStmt>()->value);
        loads = before + (loads - before) * times;
        return visit(*stmt.as<LetStmt>()->body, times);
      case StmtNode::Kind::IfThenElse:
        inExpr(*stmt.as<IfThenElse>()->cond);
        loads = before + (loads - before) * times;
        visit(*stmt.as<IfThenElse>()->thenCase, times);
        if (stmt.as<IfThenElse>()->elseCase)
          visit(*stmt.as<IfThenElse>()->elseCase, times);
        return;
      case StmtNode::Kind::Store: {
        auto &store = *stmt.as<ir::Store>();
        inExpr(*store.value);
        for (const Expr &index : store.indices)
          inExpr(*index);
        loads = before + (loads - before) * times;
        return;
      }
      case StmtNode::Kind::AtomicUpdate:
        inExpr(*stmt.as<AtomicUpdate>()->value);
        loads = before + (loads - before) * times;
        return;
      case StmtNode::Kind::Allocate:
        return visit(*stmt.as<ir::Allocate>()->body, times);
      default:
        return;
      }
    };
    visit(body, 1);
    return loads;
  }

  // Whether a loop inside `body` is one the code generator kept.
  bool containsKeptLoop(const StmtNode &body) const {
    class Finder : public IRVisitor {
    public:
      explicit Finder(const Walker &walker) : walker_(walker) {}
      bool found = false;

    protected:
      bool finished() const override { return found; }
      void visitFor(const ir::For &node) override {
        found |= walker_.compiled(node) != nullptr;
        IRVisitor::visitFor(node);
      }

    private:
      const Walker &walker_;
    } finder(*this);
    finder.visit(Stmt(Stmt(), &body));
    return finder.found;
  }

  // Whether a loop inside `body` has bounds that use `var`.
  static bool boundsMoveWith(const StmtNode &body, const std::string &var) {
    class Finder : public IRVisitor {
    public:
      explicit Finder(const std::string &var) : var_({var}) {}
      bool found = false;

    protected:
      bool finished() const override { return found; }
      void visitFor(const ir::For &node) override {
        found |= usesAnyVar(node.min, var_) || usesAnyVar(node.extent, var_);
        IRVisitor::visitFor(node);
      }

    private:
      std::set<std::string> var_;
    } finder(var);
    finder.visit(Stmt(Stmt(), &body));
    return finder.found;
  }

  void computeCompulsoryBytes(KernelProfile &result) const {
    // Per global array: the bytes its requests ask for, at most the array.
    std::map<std::string, std::pair<double, double>> readWrite;
    std::map<std::string, double> arrayBytes;
    for (const Buffer &buffer : kernel_.buffers) {
      double bytes = static_cast<double>(scalarSize(buffer->element));
      for (const Expr &extent : buffer->shape) {
        auto value = passes::evaluateInteger(*extent, [&](const std::string &name) {
          auto found = sizes_.find(name);
          return found == sizes_.end() ? std::nullopt : std::optional<int64_t>(found->second);
        });
        bytes *= value ? static_cast<double>(std::max<int64_t>(*value, 0)) : 1.0;
      }
      arrayBytes[buffer->nameInMessages()] = bytes;
    }
    for (const AccessProfile &access : result.accesses) {
      if (access.memory != MemorySpace::Global)
        continue;
      auto &[read, written] = readWrite[access.array];
      (access.kind == AccessProfile::Kind::Load ? read : written) += access.usefulBytes();
      if (access.kind == AccessProfile::Kind::Atomic)
        read += access.usefulBytes();
    }
    for (const auto &[array, traffic] : readWrite) {
      double size = arrayBytes.contains(array) ? arrayBytes.at(array) : traffic.first;
      result.compulsoryReadBytes += std::min(traffic.first, size);
      result.compulsoryWriteBytes += std::min(traffic.second, size);
    }
  }

  const KernelFunc &kernel_;
  const LaunchShape &launch_;
  const std::map<std::string, int64_t> &sizes_;
  const std::map<std::string, CompiledLoop> &compiledLoops_;
  const std::map<const ir::For *, std::string> loopKeys_;

  std::array<int64_t, 3> blockIndex_ = {0, 0, 0};
  double blockWeight_ = 1;
  int64_t warp_ = 0;
  std::map<std::string, std::optional<LaneValues>> vars_;
  std::vector<LoopFrame> loops_;
  // The lets in scope: the variables of the loops being walked each uses.
  std::map<std::string, std::set<std::string>> letLoopVars_;
  std::map<std::string, const ExprNode *> letValues_;
  std::map<const void *, int64_t> vectorFactors_;
  // Loads of the block being walked merged with their neighbours
  // (mergeableSiblings).
  std::map<const void *, int64_t> siblingFactors_;
  int64_t unrolledIteration_ = 0;
  // The dry run of an unrolled loop's first two iterations: per load, its
  // element size, lanes and addresses in each.
  bool probing_ = false;
  int probeIteration_ = 0;
  std::map<const void *,
           std::tuple<int64_t, LaneMask, std::optional<LaneValues>, std::optional<LaneValues>>>
      probedAddresses_;
  // Loads whose value is still in a register: (buffer, lanes, addresses).
  std::set<std::tuple<const BufferInfo *, LaneMask, LaneValues>> availableLoads_;
  std::map<const void *, SiteState> sites_;
  std::map<const void *, size_t> visitNumber_;
  Counts warpCounts_, critical_;
  Totals totals_;
  // The code since the last barrier: the totals where it began, whether it
  // updates elements the data picks; the totals of the code that does.
  Totals segmentStart_;
  bool segmentScatters_ = false;
  Totals scattered_;
  bool approximate_ = false;
};

} // namespace

double KernelProfile::issuedInstructions() const {
  return fp32Instructions + fp64Instructions + integerInstructions;
}

double KernelProfile::sharedWavefronts() const {
  double total = 0;
  for (const AccessProfile &access : accesses)
    total += access.memory == MemorySpace::Shared ? access.wavefronts : 0;
  return total;
}

double KernelProfile::l1Wavefronts() const {
  double total = 0;
  for (const AccessProfile &access : accesses)
    total += access.memory == MemorySpace::Global ? access.lines : 0;
  return total;
}

double KernelProfile::l2Bytes() const {
  double total = 0;
  for (const AccessProfile &access : accesses)
    total += access.memory == MemorySpace::Global ? access.l2Sectors * 32.0 : 0;
  return total;
}

KernelProfile profileKernel(const KernelFunc &kernel, const LaunchShape &launch,
                            const std::map<std::string, int64_t> &values,
                            const std::map<std::string, CompiledLoop> &compiledLoops) {
  return Walker(kernel, launch, values, compiledLoops).profile();
}

} // namespace loopc::perf
