// The thread pool that runs the blocks of a CPU kernel: the JIT'd host code
// calls loopc_cpu_parallel_for (resolved by the JIT to this process), which
// splits the block range into chunks taken dynamically by one worker per
// core, so uneven blocks (triangular nests) still balance.
#pragma once

#include <cstdint>

namespace loopc::codegen {

// The signature of a CPU kernel: its buffers, its scalars (one 8-byte slot
// each) and the half-open range of linear block indices to run.
using CpuKernelFn = void (*)(void **buffers, void *scalars, int64_t blockBegin, int64_t blockEnd);

// Runs kernel(buffers, scalars, b, e) over chunks [b, e) covering [0, blockCount)
// on every core and returns when all are done.
void parallelForBlocks(CpuKernelFn kernel, void **buffers, void *scalars, int64_t blockCount);

// The number of threads parallelForBlocks uses.
unsigned cpuWorkerCount();

} // namespace loopc::codegen

// The symbol the JIT'd code calls.
extern "C" void loopc_cpu_parallel_for(loopc::codegen::CpuKernelFn kernel, void **buffers,
                                       void *scalars, int64_t blockCount);
