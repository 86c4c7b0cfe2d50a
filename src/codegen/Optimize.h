// LLVM's O3 module pipeline for a target machine, shared by the CPU JIT and
// the NVPTX code generator so both optimize alike. The target machine adds its
// own passes (NVVMReflect on NVPTX) and its cost model. On a CPU with AVX-512
// the vectorizers are asked for 512-bit vectors: LLVM prefers 256 bits there
// by default, which halves the registers a block's accumulators fit in
// (matmul's 8 x 32 tile is 32 ymm registers and spills, or 16 zmm).
#pragma once

namespace llvm {
class Module;
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

} // namespace loopc::codegen
