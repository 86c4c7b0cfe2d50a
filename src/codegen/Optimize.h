// LLVM's O3 module pipeline for a target machine, shared by the CPU JIT and
// the NVPTX code generator so both optimize alike. The target machine adds its
// own passes (NVVMReflect on NVPTX) and its cost model. On a CPU with AVX-512
// the vectorizers are asked for 512-bit vectors: LLVM prefers 256 bits there
// by default, which halves the registers a block's accumulators fit in
// (matmul's 8 x 32 tile is 32 ymm registers and spills, or 16 zmm).
#pragma once

namespace llvm {
class Function;
class Module;
class SubtargetFeatures;
class TargetMachine;
} // namespace llvm

namespace loopc::codegen {

struct OptimizeOptions {
  // Loop and SLP vectorization both on, for the CPU's vector units; otherwise
  // LLVM's default tuning (no SLP), which the NVPTX path keeps.
  bool vectorize = false;
  // Vectorized loops call glibc's vector math library (libmvec: exp, log,
  // sin, ... on 4, 8 or 16 lanes) instead of the scalar function once per
  // lane; the code then needs libmvec at link time.
  bool vectorMath = false;
};

void optimizeModule(llvm::Module &module, llvm::TargetMachine &machine,
                    const OptimizeOptions &options = {});

// Asks optimizeModule to build `function`'s vectors without gathers: where
// a thread walks rows of its own (CpuThreadNest.h), the vector dimension is
// the row, and an element of another row is one scalar load. The SLP
// vectorizer otherwise packs the loads of chains jammed across rows
// (jam_serial_chains: `A[i][j]`, `A[i + 1][j]`, ... along j) into a gather
// at every step, which costs more than the jammed chains save
// (docs/benchmarks.md, CPU history). Elsewhere the lanes' gathers stay:
// without them a transpose's or a convolution's lanes load one by one.
void preferNoGathers(llvm::Function &function);

// Leaves out the x86 features LLVM 19 miscompiles our code with. AVX512BW:
// a vectorized loop over bools (bytes) with a vector math call in it keeps
// the mask of an 8-lane byte store in a 16-bit mask register, spills and
// reloads all 16 bits around the call, and stores 16 bytes where 8 were
// meant (clobbering the next lanes' flags: a bug hunt's early-return
// function gave 0 for 3 of every 4 elements). Without it the bytes are
// stored one by one; float and integer code keeps its 512-bit vectors.
void avoidMiscompiledCpuFeatures(llvm::SubtargetFeatures &features);

} // namespace loopc::codegen
