// The performance model of a GPU launch and of a whole kernel's host
// program: from a launch's profile (KernelProfile.h), what ptxas says of its
// registers and shared memory, and a device's figures (GpuDevices.h), how
// long it should take, what bounds it and how close it comes to that bound.
//
// A launch is a roofline with the latencies added where a warp waits:
//  - the chip's memory: DRAM moves at least each array's elements once
//    (compulsory traffic), L2 every sector its warps' requests miss in L1;
//  - each SM's pipes, for the blocks it runs: instruction issue (four warp
//    instructions a cycle), FP32 and FP64 lanes, and the load/store path
//    shared by shared-memory wavefronts (bank conflicts included) and global
//    requests' L1 wavefronts (a 128-byte line each);
//  - a block's critical path: the instructions of its busiest warp (one
//    every other cycle), one round trip to memory per group of loads that go
//    out together (as the loops LLVM left, and those ptxas unrolls, say), the
//    shared loads' latency and its barriers. A wave of B resident blocks
//    takes the longest of what the SM's pipes need for them, one critical
//    path, and their instructions over the share of cycles a scheduler finds
//    one of its warps ready (each warp ready for its critical path's
//    instructions out of its cycles), so few blocks or few loads in flight
//    show as latency-bound; the last, partial wave of a grid is a wave of its
//    own.
// The launch takes the 4-norm of the DRAM, L2 and SM times (they overlap,
// but not perfectly), at least the atomics' time, plus the device's launch
// overhead.
// docs/perf.md says what each figure means and where the model is blind.
#pragma once

#include "ir/IR.h"
#include "perf/GpuDevices.h"
#include "perf/KernelProfile.h"

#include <map>
#include <string>
#include <vector>

namespace loopc::perf {

// What the code generator made of a kernel: the assembler's report
// (ptxas -v) and the loops LLVM's optimizations left.
struct CompiledKernel {
  int registers = 0;
  int spillBytes = 0;  // stores and loads of spilled registers, per thread
  int sharedBytes = 0; // static shared memory per block
  bool known = false;  // false: no ptxas; registers are then a guess
  // Loop IR loop (ir::loopKeys) -> what one iteration does, for the loops still
  // loops after optimization (codegen/LoopCensus.h); the others were
  // unrolled whole.
  std::map<std::string, CompiledLoop> loops;
};

struct Occupancy {
  int blocksPerSM = 0;
  std::string limiter; // "registers", "shared memory", "threads", "blocks"
  double warpsPerSM = 0;
  double fraction = 0; // of the SM's maximum resident warps
};

Occupancy occupancyOf(const GpuDevice &device, const LaunchShape &launch,
                      const CompiledKernel &compiled);

struct LaunchPrediction {
  KernelProfile profile;
  CompiledKernel compiled;
  Occupancy occupancy;
  double launches = 1; // times the host program makes this launch
  double waves = 0;    // blocks per SM over resident blocks per SM
  // Seconds of one launch each resource needs.
  double dramSeconds = 0, l2Seconds = 0, atomicSeconds = 0;
  double issueSeconds = 0, fp32Seconds = 0, fp64Seconds = 0, loadStoreSeconds = 0;
  double latencySeconds = 0; // the critical paths of the waves
  // Cycles of an async copy's latency its wait leaves uncovered by the
  // compute since its issue (KernelProfile::criticalAsyncWaits).
  double asyncExposedCycles = 0;
  double smSeconds = 0; // the SMs' time, pipes and critical paths together
  double overheadSeconds = 0;
  double seconds = 0; // one launch
  std::string
      bound; // "DRAM", "L2", "issue", "FP32", "FP64", "load/store", "latency", "atomics", "launch"
  // The bound's busy time over the launch's time: near 1 when the bound is
  // saturated, lower when waits or overheads add to it.
  double boundFraction() const;
};

struct ProgramPrediction {
  std::string device; // the model's description
  std::vector<LaunchPrediction> launches;
  double hostSeconds = 0; // fills and copies the host program makes
  double seconds = 0;     // everything, each launch times its count
  bool approximate = false;
};

LaunchPrediction predictLaunch(const GpuDevice &device, const KernelProfile &profile,
                               const CompiledKernel &compiled);

// The host program of `function` (after the pipeline) with `values` binding
// its sizes and integer scalars: each launch it makes profiled and predicted
// (`compiled`: what the code generator made of each kernel, by name).
ProgramPrediction predictProgram(const GpuDevice &device, const ir::Function &function,
                                 const std::map<std::string, int64_t> &values,
                                 const std::map<std::string, CompiledKernel> &compiled);

} // namespace loopc::perf
