// The middle end as one list of passes (Pipeline.cpp): from the lowered Loop
// IR to GPU-shaped kernels extracted from host code, ready for either code
// generator.
#pragma once

#include "ir/IR.h"
#include "passes/Remarks.h"
#include "support/Error.h"

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace loopc::passes {

// The machine the kernels are shaped for. Both code generators accept the
// IR of either pipeline (tests run the GPU's kernels on the CPU JIT), but the
// CPU backend runs a block's threads as vector lanes with the sequential
// loops outside them (CpuThreadNest.h), where the GPU's register tiles
// mostly add accumulator traffic: with a variant of them that ran whole
// tiles apart, conv2d_5x5 and cnn_conv_valid took more than twice as long on
// the CPU (matmul ran faster), and clamped copies along x turn contiguous
// loads into gathers there. So tile_registers makes the CPU tiles of its own:
// rows of a window, x left to the vector lanes (RegisterTilingTarget::cpu).
enum class PipelineTarget { Gpu, Cpu };

// The vector registers of the CPU a pipeline compiles for: map_to_gpu shapes
// the blocks of an outer product (matmul's) as the register tile they make
// on it. Zero lanes: not known (no particular CPU), and such blocks keep the
// general shape.
struct CpuVectors {
  int f32Lanes = 0; // f32 lanes of the widest vector the code generator uses
  int registers = 0;
};

// The numbers the optimization passes size their work by. Each has a
// default; `--pass-param NAME=VALUE` sets it, so a benchmark can measure
// other choices in the same run (and a tuner can search them).
struct PassParameters {
  // register_tile (tile_registers): copies of a thread's work per coarsened
  // dimension, 1, 2, 4 or 8; at most its square per thread. 0, the default:
  // 4, and 8 where the grid of 8 x 8 tiles fills the GPU (PipelineOptions::
  // multiprocessors) and they keep two blocks per SM, picked at run time.
  // Measured on an H200 (docs/benchmarks.md, GPU history), both pipelined:
  // 8 x 8 tiles at one block per SM ran matmul faster than 4 x 4 at 2048 and
  // at 4096; the performance model predicts today's two blocks per SM faster
  // still there, and slower at 1000 (64 blocks of 8 x 8 tiles for 132 SMs).
  int64_t registerTile = 0;
  // stage_length (stage_shared): iterations of the longest stage of a loop
  // staged in parts, 4 to 64; shorter ones (halves, down to 2) are tried
  // when its boxes do not fit.
  int64_t stageLength = 32;
  // shared_kib (stage_shared): KiB of shared memory a block may stage
  // into, 1 to 48 (the most a block may declare statically).
  int64_t sharedKiB = 24;
  // stage_min_reuse (stage_shared): how many times one iteration of a loop
  // must read each element of a box for the box to be staged, 2 to 256.
  // Where fewer threads read each element, L1 (on Hopper the same memory as
  // shared) serves the repeats from the lines the first reader brought in,
  // and the copy and its barriers are pure cost. Measured on an H100
  // (docs/benchmarks.md, GPU history): a 5x5 convolution, each element read
  // 4-5 times per filter row, ran more than twice as fast unstaged; an 11x11
  // one, 8-10 times, faster too; matmul, 32 and 128 times (B and A at 4 x 4
  // register tiles), slower unstaged.
  int64_t stageMinReuse = 16;
  // copies_in_flight (stage_shared): how many of a thread's copies into
  // shared memory load at once, 0 to 32. From 1 on, each load is
  // unconditional (its indices clamped into the array) and a group of this
  // many is unrolled, its loads in flight together before the first store:
  // more hide more of memory's latency a stage and hold more registers. 0,
  // the default, copies element by element, each load under its guard, a
  // round trip to memory each where LLVM keeps the copy a loop. The
  // performance model predicted groups of 8 faster on matmul and the
  // convolutions (docs/perf.md); measured on an H200 they were not
  // (docs/benchmarks.md, GPU history), and sqdist's 4 x 4 tiles then spill
  // 16 to 80 bytes at 128 registers. Pipelined stages (below) copy by async
  // copies instead.
  int64_t copiesInFlight = 0;
  // pipeline_depth (stage_shared): shared buffers of each box of a loop
  // staged in stages, 1 to 3. 1 copies each stage, waits for it and computes
  // it. 2 and 3 (double and triple buffering, GPUs of compute capability 8.0
  // and later) copy by async copies (cp.async) issued depth - 1 stages
  // ahead, into the buffer the stage before last freed, so the copies
  // overlap the compute of the stages in between and hold no register; the
  // boxes of all buffers fit shared_kib together. Measured on an H200
  // (docs/benchmarks.md, GPU history), 2 against 1: a 64-channel 3x3
  // convolution up to twice as fast, 5x5 faster too, matmul a little faster
  // at 2048 and 4096, the same at 1000; 3 slower than 2 (shorter stages,
  // whose arithmetic covers less of the copies).
  int64_t pipelineDepth = 2;
  // unclamped_tiles (tile_registers): 1 gives every block of a register-
  // tiled nest the same tile, without clamps, where all its copies' reads
  // go through shared memory (stage_shared's boxes hold zeros or elements in
  // range past the array's ends) and copies past the ends do not store:
  // edge blocks then run the interior's code, grouped and unclamped,
  // instead of a slower tile of their own, and the kernel is half the code.
  // 0, the default until a GPU has measured it, keeps an edge tile.
  int64_t unclampedTiles = 0;
  // border_min_points (partition_borders, GPU): the points a nest needs for
  // its interior and borders to be split apart, its interior also 16 times
  // its borders' points (the host tests both), 0 to 2^30. 0 splits every
  // nest it can, as the CPU pipeline does. The default is where the
  // performance model's predictions for padded convolutions cross
  // (partition_borders.cpp); not yet measured on a GPU.
  int64_t borderMinPoints = int64_t{1} << 20;
  // block_x, block_y (map_to_gpu): the threads of a block along x (every
  // nest) and y (nests mapped on two or three dimensions), powers of two
  // up to 1024, at most 1024 threads a block on the GPU. 0, the default:
  // the pass's shapes (32 x 8 and 32 x 4 x 2; 256 threads for a 1-D nest,
  // on the CPU 32 below 4096 points and 16 x 64 where the lanes gather rows
  // walked along y). On the CPU a block's x threads are vector lanes, and a
  // block is the work a core takes at a time: which shape is fastest
  // differs between CPUs (docs/tuning.md), and `loopc tune` searches it.
  int64_t blockX = 0;
  int64_t blockY = 0;
  // stage_shared, by a kernel's schedule only (`stage=A`, `no_stage=B`):
  // the program's `in` arrays staged wherever a box of them can be, however
  // seldom an iteration reads an element, and those never staged.
  std::set<std::string> stagedArrays = {};
  std::set<std::string> unstagedArrays = {};
};

// What the user chose about the optimizations.
struct PassChoices {
  // Optimizations to leave out (`--skip-pass`), so a benchmark can measure
  // what each brings. Naming a pass that is not an optimization is an error
  // listing those that are; one the target's pipeline does not run is
  // skipped already.
  std::set<std::string> skipped = {};
  PassParameters parameters = {};
  // The parameters the user gave (`--pass-param`): a kernel's `@schedule`
  // sets only the others.
  std::set<std::string> parametersGiven = {};
  // Whether the entry kernel's `@schedule` applies (docs/schedules.md): its
  // parameters over the defaults, its passes left out with `skipped`. Not
  // to the tuner's candidates and the choices it kept, which are whole (but
  // for its arrays' staging, which the tuner does not search: that applies
  // always).
  bool kernelSchedules = true;
  // Check every array access in the generated code (`--bounds-check`): an
  // index out of range is a located run-time error instead of a wild access.
  // Indices proven in range are not checked (BoundsProof.h), and the passes
  // that would move an unproven access out of the checks' sight are left
  // out where one remains.
  bool boundsChecks = false;
};

// Sets the parameter `NAME=VALUE` names; an error names the parameters and
// their ranges when the name or the value is not one of them.
Status setPassParameter(PassParameters &parameters, const std::string &assignment);

// Why `choice`, one of a kernel's `@schedule`, names nothing the pipeline
// knows: the message a located error gives, listing what it may name. None
// when it is a pass parameter with a value in range, `skip=` an
// optimization pass, or names an array (`stage=`, which Sema checks).
std::optional<ScheduleError> scheduleChoiceError(const ScheduleChoice &choice);

// `choices` with `schedule` applied (PassChoices::kernelSchedules): its
// parameters where the user gave none, its passes added to those left out.
Expected<PassChoices> withSchedule(PassChoices choices, const Schedule &schedule);

// `register_tile=8, skip=stage_shared`: the `@schedule` arguments that give
// `choices` (the parameters that differ from the defaults, the passes left
// out in pipeline order); empty when `choices` are the defaults.
std::string scheduleArguments(const PassChoices &choices);

// Every parameter's name and its value in `parameters`, in a fixed order.
std::vector<std::pair<std::string, int64_t>> namedParameters(const PassParameters &parameters);

// The parameters that differ from the defaults, `register_tile=8
// stage_length=16`; empty when none does.
std::string describeChangedParameters(const PassParameters &parameters);

struct PipelineOptions {
  PipelineTarget target = PipelineTarget::Gpu;
  PassChoices choices;
  // The GPU's compute capability, major * 10 + minor (80 for sm_80), which
  // decides the instructions passes may use (stage_shared's async copies
  // need 80).
  int computeCapability = 80;
  // The GPU's multiprocessors (SMs): tile_registers' variants by size
  // compare a grid's blocks with the blocks that fit on them at once. The
  // GPU engine gives its device's; a pipeline for no device at hand, the
  // count of a typical GPU of its architecture (132, an H100's, for sm_90).
  int multiprocessors = 132;
  // Sizes compiled as constants (sizesToSpecialize picks them from the
  // values of a run): the kernel then runs only with these values.
  std::map<std::string, int64_t> specializedSizes;
  // The CPU's vectors, for the CPU pipeline: the engine's host's, or those
  // of the CPU `loopc compile --cpu` names (codegen::cpuVectorsOf).
  CpuVectors cpuVectors;
  // The sizes of the run being compiled for, when an engine compiles for
  // one: a choice the host would make at run time between variants
  // (tile_registers' tiles by size) is made now, the other variant left out,
  // and recorded in Function::sizeChoices. Empty (`loopc compile`): the
  // host chooses.
  std::map<std::string, int64_t> runSizes;
  // Called after every pass with its name and the Function it produced
  // (`loopc explain` prints it); may be empty.
  std::function<void(const std::string &pass, const ir::Function &)> afterPass;
  // Where the passes report what they did and declined, and the cliffs they
  // saw (`loopc explain --remarks`); may be null.
  Remarks *remarks = nullptr;
};

// The optimizations (the passes `--skip-pass` may name) in pipeline order;
// those `target`'s pipeline runs when one is given.
std::vector<std::string> optimizationPasses(std::optional<PipelineTarget> target = std::nullopt);

// A pass of the pipeline as the registry (Pipeline.cpp) describes it.
struct PassDescription {
  std::string name;
  std::string summary;
  std::vector<PipelineTarget> targets; // the pipelines that run it
  bool skippable = false;              // an optimization: `--skip-pass` may leave it out
};
// Every pass, in pipeline order (a pass that runs twice, once).
std::vector<PassDescription> describePasses();

// The parameters some pass of `target`'s pipeline reads (`shared_kib`,
// `block_x` and `block_y` on the CPU; every one on the GPU), in a fixed
// order.
std::vector<std::string> parametersRead(PipelineTarget target);

// The option that leaves the pass `name` out of the pipeline of `options`
// ("--target cpu" for a pass of the other target's pipeline, "--skip-pass
// NAME"); "" when it runs, or is no pass.
std::string passLeftOutBy(const std::string &name, const PipelineOptions &options);

// What the user chose that the pipeline of `options` never acts on, one
// message each: a parameter whose passes it leaves out or read it only on
// the other target (`--pass-param register_tile=8 changes nothing:
// tile_registers reads it in the GPU pipeline only`), a skipped pass it does
// not run.
std::vector<std::string> choicesWithoutEffect(const PipelineOptions &options);

// Whether every choice `function`'s passes made for the sizes of a run
// (Function::sizeChoices) comes out the same at `sizes`: its code is then
// right for them.
bool choicesHoldAt(const ir::Function &function, const std::map<std::string, int64_t> &sizes);

// Runs every pass in order; the IR verifier checks the result of each. An
// invalid IR is a compiler bug, reported as an internal error naming the
// pass that produced it.
Expected<ir::Function> runPipeline(ir::Function function, const PipelineOptions &options = {});

// Runs the passes `names` on `function`, in the order given, as the pipeline
// of `options` runs each (whatever --skip-pass says: they are asked for),
// for a pass tested on IR written by hand (`loopc opt`). The input must
// hold what the pipeline's passes before the first of them establish (a
// Reduce after lower_reductions is an error), and so must each output. An
// unknown name, or a pass the target's pipeline does not run, is an error
// naming those it runs.
Expected<ir::Function> runPasses(ir::Function function, const std::vector<std::string> &names,
                                 const PipelineOptions &options = {});

} // namespace loopc::passes
