// The performance model of a program on the CPU: each launch of its kernels
// on loopc's thread pool, and the host code between them, which on the CPU
// is compiled code doing real work (a recurrence, a triangular solve, a
// dynamic program's cells), from the Loop IR of the CPU pipeline at the
// sizes of a run and a CPU's figures (CpuDevices.h).
//
// A launch (its profile from KernelProfile.h: the threads of a GPU block
// run as the vector lanes of one core) is a roofline on one thread and on
// all of them: its floating-point work at the vector rate, or the scalar
// rate where a block's threads read strided elements (a gather) or scatter
// updates, its divisions and square roots on the divider beside it, its
// math routines as calls of the vector math library, and the chains of its
// accumulations at their latency where too few vectors run them together;
// against the bytes it must move at the bandwidth of the memory that holds
// them (the last-level cache when its arrays fit; a column strip's walk at
// the strip rate; a run that starts a stream anew after a cache latency).
// The pool runs a launch alone when that takes under 2 us (the runtime's
// rule), else shares it out and pays a hand-over.
//
// A statement of the host code costs what one execution does, times how
// often it runs: the operations of its value, at the vector rate when its
// innermost loop walks every array it touches along a row (LLVM vectorizes
// that loop, unless its run-time overlap check always fails), at the scalar
// rate otherwise, or at the latency of a dependent operation when it
// updates the same element each iteration (a recurrence: `x[i] -= L[i][j] *
// x[j]` along j); and its accesses: an element for one walked along a row,
// a cache line for one walked down a column of an array larger than the
// core's L2.
// docs/perf.md says how each figure is computed and where the model is blind.
#pragma once

#include "ir/IR.h"
#include "perf/CpuDevices.h"
#include "perf/KernelProfile.h"

#include <map>
#include <string>
#include <vector>

namespace loopc::perf {

struct CpuLaunchPrediction {
  KernelProfile profile;
  double launches = 1;       // times the host program makes this launch
  bool vectorized = true;    // false: some loop runs lane by lane
  std::string scalarBecause; // why not: "lanes gather", ...
  bool alone = false;        // runs in the calling thread
  // Seconds of one launch on the threads it runs on.
  double computeSeconds = 0, memorySeconds = 0, overheadSeconds = 0;
  double seconds = 0;
  std::string bound; // "compute", "memory", "launch"
};

struct CpuProgramPrediction {
  std::string device; // the model's description
  std::vector<CpuLaunchPrediction> launches;
  // The host code's statements: operations, recurrences and memory.
  double hostComputeSeconds = 0, hostLatencySeconds = 0, hostMemorySeconds = 0;
  double hostSeconds = 0;
  double seconds = 0; // everything
  bool approximate = false;
};

// The host program of `function` (after the CPU pipeline) with `values`
// binding its sizes and integer scalars.
CpuProgramPrediction predictCpuProgram(const CpuDevice &device, const ir::Function &function,
                                       const std::map<std::string, int64_t> &values);

} // namespace loopc::perf
