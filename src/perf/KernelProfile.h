// What one launch of a GPU kernel does, counted from its Loop IR at the sizes
// of a run: the static facts the performance model (GpuModel.h) turns into a
// time, and `loopc explain --perf` prints.
//
// The kernel's body is walked once per warp of a representative block (its
// block index in the middle of the grid along each dimension, and the last
// block too where a dimension has an edge, weighted by how many blocks are
// like each), with every thread index of the warp's 32 lanes bound, so that
// conditions on thread indices (a tree's `thread < 64`, a tile's edge guard)
// switch lanes off exactly, and the addresses of each global and shared
// access are known lane by lane: from them come the 32-byte sectors and
// 128-byte lines a warp's request touches (coalescing), the bank conflicts of
// a shared access, and which sectors the block's warps share (what L1 serves).
// Loops run their body once, weighted by the trip count, at the middle of
// their range (a loop whose inner bounds move with it at several points);
// unrolled loops run every iteration, so neighbouring iterations' accesses
// that the code generator merges into 64- or 128-bit loads are seen as one,
// as are a straight-line block's shared loads of neighbouring elements (a
// register tile's x copies, 4 neighbours a thread).
// Counts are warp instructions, the unit SM schedulers issue: index
// arithmetic LLVM strength-reduces counts nothing, clamps and divisions in
// indices once per iteration of the loop they move with, and an innermost
// loop the code generator kept at least what LLVM left in it.
#pragma once

#include "ir/IR.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace loopc::perf {

struct LaunchShape {
  std::array<int64_t, 3> grid = {1, 1, 1};
  std::array<int64_t, 3> block = {1, 1, 1};
  int64_t blocks() const { return grid[0] * grid[1] * grid[2]; }
  int64_t threadsPerBlock() const { return block[0] * block[1] * block[2]; }
  int64_t warpsPerBlock() const { return (threadsPerBlock() + 31) / 32; }
};

// One global or shared memory access of the kernel (a Load, Store or
// AtomicUpdate of the IR), over the whole launch.
struct AccessProfile {
  std::string array; // the program's name for it
  SourceRange source;
  ir::MemorySpace memory = ir::MemorySpace::Global;
  enum class Kind : uint8_t { Load, Store, Atomic } kind = Kind::Load;
  int elementBytes = 4;
  int vectorBytes = 4; // bytes a lane moves per request (merged neighbours)
  double requests = 0; // warp requests
  // Over all requests (divide by `requests` for one):
  double activeLanes = 0; // lanes that take part
  double sectors = 0;     // distinct 32-byte sectors (global)
  double lines = 0;       // distinct 128-byte lines (global): L1 wavefronts
  double wavefronts = 0;  // shared memory cycles (bank conflicts included)
  // Sectors L1 cannot serve: the first touch of each by the block's warps,
  // and again each time the walk moves past it (global loads only).
  double l2Sectors = 0;
  bool addressesKnown = true; // false: data decides them (a gather)
  // Distinct elements an atomic update may target (contention).
  double atomicTargets = 0;

  double sectorsPerRequest() const { return requests > 0 ? sectors / requests : 0; }
  double usefulBytes() const { return activeLanes * vectorBytes; }
  // The share of the bytes moved that lanes asked for: 1 for a coalesced
  // access (or lanes sharing one element), 1/8 for a warp reading a float
  // from each of 32 sectors.
  double sectorEfficiency() const {
    return sectors > 0 ? std::min(1.0, usefulBytes() / (sectors * 32.0)) : 1.0;
  }
};

struct KernelProfile {
  std::string kernel;
  SourceRange source;
  LaunchShape launch;
  // Warp instructions over the launch, by the unit that executes them.
  double fp32Instructions = 0; // adds, multiplies, multiply-adds, min/max
  double fp64Instructions = 0;
  double integerInstructions = 0; // index arithmetic, comparisons, branches
  double flops = 0;               // floating-point operations (an FMA is 2)
  // Of the floating-point instructions: divisions and square roots (an f64
  // one counts twice), and the instructions counted above for them.
  double floatDivides = 0, squareRoots = 0, dividerInstructions = 0;
  // Of the floating-point instructions: those counted for math routines
  // (exp, log, sin, cos, tanh, pow; an f64 one twice).
  double routineInstructions = 0;
  // Of the code between two barriers (or the kernel's ends) that also
  // updates elements the data picks (a histogram's bins), where a CPU's loop
  // over the threads does not vectorize: its floating-point instructions
  // other than those counted for divisions, square roots and math routines
  // (an f64 one twice), and its divisions and square roots.
  double scatteredInstructions = 0, scatteredDividerOperations = 0;
  double shuffles = 0;
  double barriers = 0; // barrier instructions (per warp)
  // A warp's longest path: instructions it issues in order, global memory
  // round trips it waits for (loads in flight together count once) and
  // barriers it meets, for the warp of the representative block that has
  // the most.
  double criticalInstructions = 0;
  double criticalMemoryRounds = 0;
  double criticalSharedRounds = 0;
  double criticalBarriers = 0;
  // The busiest warp's waits for async copies (a pipelined stage's
  // AsyncWait), each for copies issued `asyncStagesAhead` stages of compute
  // before it: the compute between (instructions, shared round trips and
  // barriers of those stages) covers the copies' latency, and only what it
  // does not cover is waited for. The first stage's copies, issued before
  // the loop with nothing to cover them, are a memory round trip.
  double criticalAsyncWaits = 0;
  double asyncStagesAhead = 0;
  double asyncCoverInstructions = 0; // per wait
  double asyncCoverSharedRounds = 0;
  double asyncCoverBarriers = 0;
  std::vector<AccessProfile> accesses;
  // Bytes the launch must move to and from DRAM at least: each global
  // array's elements it reads, once, and those it writes, once.
  double compulsoryReadBytes = 0;
  double compulsoryWriteBytes = 0;
  // Some count is a guess: a branch or a bound decided by data, an extent
  // the sizes do not give.
  bool approximate = false;

  double warps() const { return static_cast<double>(launch.blocks()) * launch.warpsPerBlock(); }
  double issuedInstructions() const;
  double sharedWavefronts() const;
  double l1Wavefronts() const;
  double l2Bytes() const;
};

// A loop of the Loop IR that the code generator kept as a loop
// (codegen/LoopCensus.h): per iteration of what LLVM left, its global loads
// and the instructions of its own code (not of the loops in it), and its
// trip count when that is a constant (0 otherwise).
struct CompiledLoop {
  int globalLoads = 0;
  int instructions = 0;
  int64_t constantTrips = 0;
};

// Profiles one launch of `kernel` with `launch`'s geometry; `values` binds
// the kernel's sizes and scalars. `compiledLoops` (by ir::loopKeys) says
// which loops the code generator kept as loops and what one iteration of
// each does; the others it unrolled whole.
KernelProfile profileKernel(const ir::KernelFunc &kernel, const LaunchShape &launch,
                            const std::map<std::string, int64_t> &values,
                            const std::map<std::string, CompiledLoop> &compiledLoops);

} // namespace loopc::perf
