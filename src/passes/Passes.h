// The passes of the middle end, one per file, each an IR-to-IR function on a
// whole Function. Pipeline.cpp lists them in order; tests call them alone.
#pragma once

#include "ir/IR.h"
#include "passes/Pipeline.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace loopc::passes {

// The sizes among `sizes` (run-time values) worth a kernel of their own
// when `options`' pipeline runs specialize_sizes: small ones bounding a loop
// inside a parfor (specialize_sizes.cpp).
std::map<std::string, int64_t> sizesToSpecialize(const ir::Function &function,
                                                 const std::map<std::string, int64_t> &sizes,
                                                 const PipelineOptions &options);

// Those sizes replaced by their values (specialize_sizes.cpp).
ir::Function specializeSizes(ir::Function function, const std::map<std::string, int64_t> &values);

// Scan nodes to loops: serial inside a parfor, reduce-then-scan over chunks
// at kernel level, chunked for `target` (lower_scans.cpp).
ir::Function lowerScans(ir::Function function, PipelineTarget target);

// Constant folding, algebraic identities, trivial and dead lets (simplify.cpp).
ir::Function simplify(ir::Function function);
// One expression simplified as the pass simplifies it (for the bounds a pass
// computes and prints).
ir::Expr simplifyExpr(const ir::Expr &expr);

// Zero fills of arrays written whole again before any read are dropped
// (drop_overwritten_fills.cpp).
ir::Function dropOverwrittenFills(ir::Function function);

// A local array written in full by a parfor and read once per element by a
// later statement is computed at the read instead (fuse_producers.cpp).
ir::Function fuseProducers(ir::Function function, const RemarkReporter &remarks = {});

// A parfor over few rows each reducing a long range gets the ranges split
// into parts reduced by a parfor of their own, when the host finds the rows
// too few for `target`: too few blocks, or on the GPU, where the rows will be
// threads (blockPerRowCondition), too few threads (split_reductions.cpp).
ir::Function splitReductions(ir::Function function, PipelineTarget target,
                             const RemarkReporter &remarks = {});

// A 1-D parfor walking rows to a block per row, its redomaps block trees and
// its inner parfors strided over the threads (map_rows_to_blocks.cpp).
// With `fuseSiblings`, a row's sibling redomaps share one strided walk (as
// fuse_sibling_reductions does elsewhere; skipping that pass turns it off).
ir::Function mapRowsToBlocks(ir::Function function, bool fuseSiblings,
                             const RemarkReporter &remarks = {});

// The shortest row map_rows_to_blocks gives a block: a quarter of its 256
// threads have work.
inline constexpr int64_t kMinBlockRowLength = 64;

// map_rows_to_blocks' decision about `parfor` (a For statement): the
// condition on which the host gives each iteration a block (its rows at
// least kMinBlockRowLength long), or none when each iteration stays a thread
// of map_to_gpu's mapping whatever the sizes, with why in `declined` (empty
// when the parfor walks no rows at all: nothing to say)
// (map_rows_to_blocks.cpp).
struct RowMapping {
  std::optional<ir::Expr> condition;
  std::string declined;
};
RowMapping rowMapping(const ir::Stmt &parfor);
// Its condition alone.
std::optional<ir::Expr> blockPerRowCondition(const ir::Stmt &parfor);

// Parfors combining into small arrays get a copy of them per block in shared
// memory, over a grid-stride loop (on the CPU, a range of the iterations per
// block), when the host finds they fit (privatize_combines.cpp).
ir::Function privatizeCombines(ir::Function function, const PassParameters &parameters = {},
                               PipelineTarget target = PipelineTarget::Gpu,
                               int multiprocessors = 132, const RemarkReporter &remarks = {});

// On the CPU, a parfor nest whose rows read, a few rows around each point,
// what the parfor nest after it overwrites is fused with it, that one a few
// rows behind, in chunks of rows (fuse_with_lag.cpp).
ir::Function fuseWithLag(ir::Function function, const RemarkReporter &remarks = {});

// On the CPU, a parfor nest that is the whole body of a serial loop of the
// host code moves out of it when each point touches only its own slices of
// the arrays written (hoist_independent_parfors.cpp).
ir::Function hoistIndependentParfors(ir::Function function, const RemarkReporter &remarks = {});

// A parfor nest whose points test, inside their loops, that what they read
// lies inside an array (a padded convolution's window) is split into its
// interior, where the tests hold at every step and are dropped, and the
// borders that keep them (partition_borders.cpp); on the GPU where the host
// finds the nest has `gpuMinPoints` points or more and is mostly interior.
ir::Function partitionBorders(ir::Function function, PipelineTarget target, int64_t gpuMinPoints,
                              const RemarkReporter &remarks = {});

// On the CPU, the inner parallel loop of a nest that map_to_gpu leaves
// serial in each thread (a triangular nest) moves inside the serial loops
// that walk columns along it (interchange_column_walks.cpp).
ir::Function interchangeColumnWalks(ir::Function function, const RemarkReporter &remarks = {});

// On the CPU, an array a parfor nest reads down a column in its innermost
// loop, again at each iteration of another loop, is read from a copy
// transposed before the nest (transpose_column_reads.cpp).
ir::Function transposeColumnReads(ir::Function function, const RemarkReporter &remarks = {});

// On the CPU, a serial loop of the host code whose iterations each run a
// chain of dependent steps runs several iterations together, their chains
// interleaved (jam_serial_chains.cpp).
ir::Function jamSerialChains(ir::Function function, const RemarkReporter &remarks = {});

// On the CPU, an element a serial loop updates at every iteration, which no
// other access in the loop touches, lives in a register across the loop
// (promote_invariant_elements.cpp).
ir::Function promoteInvariantElements(ir::Function function, const RemarkReporter &remarks = {});

// Parfor nests to GpuBlock x GpuThread loops with bounds guards (map_to_gpu.cpp).
// The CPU's blocks of a 1-D nest are smaller, and those of an outer product
// the register tile `cpuVectors` holds (map_to_gpu.cpp). With the run's
// sizes, short loops are mapped too where the others leave the GPU's
// `multiprocessors` idle (a size choice). `parameters.blockX` and `blockY`,
// where not 0, give the blocks' shape (blockShapeError says which the GPU
// cannot take).
ir::Function mapToGpu(ir::Function function, PipelineTarget target = PipelineTarget::Gpu,
                      const std::map<std::string, int64_t> &runSizes = {},
                      int multiprocessors = 132, const PassParameters &parameters = {},
                      const RemarkReporter &remarks = {}, const CpuVectors &cpuVectors = {});

// Why map_to_gpu cannot take `parameters`' block shape for `target` (a GPU
// block holds at most 1024 threads), or none.
std::optional<std::string> blockShapeError(const PassParameters &parameters, PipelineTarget target);

// Reduce nodes to serial accumulations or block tree reductions
// (lower_reductions.cpp).
// A tree over a user's operator that does not commute walks its range in
// order: a warning. Such a walk's grid on the GPU is sized in waves of its
// `multiprocessors`.
ir::Function lowerReductions(ir::Function function, PipelineTarget target,
                             int multiprocessors = 132, const RemarkReporter &remarks = {});

// A CPU thread's serial min/max reduction of floats folds into vector lanes
// (interleave_reductions.cpp).
ir::Function interleaveReductions(ir::Function function, const RemarkReporter &remarks = {});

// A short constant loop around reductions in a thread is unrolled so its
// copies' reductions fuse into one walk (unroll_around_reductions.cpp).
ir::Function unrollAroundReductions(ir::Function function);

// Reductions over the same loops that follow one another (with statements
// between them that can move) are lowered as one group: their loops run
// once (fuse_sibling_reductions.cpp).
ir::Function fuseSiblingReductions(ir::Function function, PipelineTarget target,
                                   int multiprocessors = 132, const RemarkReporter &remarks = {});

// Block tree reductions combine each warp's partials by register shuffles,
// then the warps' totals after one barrier (combine_in_warps.cpp).
ir::Function combineInWarps(ir::Function function, const RemarkReporter &remarks = {});

// What tile_registers knows of what follows it and of the GPU.
struct RegisterTilingTarget {
  bool stagingFollows = false; // stage_shared runs next: it decides the x copies' layout
  int computeCapability = 80;  // stage_shared's, to judge a tile's operands
  int multiprocessors = 132;   // PipelineOptions::multiprocessors
  // PipelineOptions::runSizes: where they decide the tiles, one nest.
  std::map<std::string, int64_t> runSizes = {};
  // The CPU pipeline, whose backend runs the threads along x as vector
  // lanes: rows of windows only (tile_registers.cpp, cpuRows).
  bool cpu = false;
};

// Threads of a mapped nest compute a small tile of points each, the copies
// of the body jammed so loads are shared in registers; with register_tile=0
// a larger tile too, for grids that fill the GPU, picked at run time
// (tile_registers.cpp).
ir::Function tileRegisters(ir::Function function, const PassParameters &parameters = {},
                           const RegisterTilingTarget &target = {},
                           const RemarkReporter &remarks = {});

// Arrays the threads of a block read in common inside a loop are copied to
// shared memory by the whole block, a stage at a time (stage_shared.cpp);
// with pipeline_depth 2 or 3 and a GPU of compute capability 80 or more
// (`computeCapability`, 80 for sm_80), by async copies issued stages ahead.
ir::Function stageShared(ir::Function function, const PassParameters &parameters = {},
                         const RemarkReporter &remarks = {}, int computeCapability = 80);

// GPU: parfor-private arrays whose extents the run decides move to global
// memory, a slice per thread, allocated by the host around their kernel; an
// error, located at the array, when its extents are not known at the launch
// (globalize_private_arrays.cpp).
Expected<ir::Function> globalizePrivateArrays(ir::Function function);

// Host branches whose conditions the sizes of the run compiled for decide
// keep only the side taken, recorded in Function::sizeChoices
// (drop_untaken_branches.cpp); nothing without `runSizes`.
ir::Function dropUntakenBranches(ir::Function function,
                                 const std::map<std::string, int64_t> &runSizes);

// Each outermost GpuBlock nest to a KernelFunc and a Launch (extract_kernels.cpp).
ir::Function extractKernels(ir::Function function);

// The blocks per SM the kernel extract_kernels makes of `nest`, an outermost
// GpuBlock loop, asks ptxas to fit (KernelFunc::minBlocksPerSM; 0 for none).
int blocksPerSMToAsk(const ir::Stmt &nest);

} // namespace loopc::passes
