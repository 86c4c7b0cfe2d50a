// LLVM's O3 module pipeline for a target machine, shared by the CPU JIT and
// the NVPTX code generator so both optimize alike. The target machine adds its
// own passes (NVVMReflect on NVPTX) and its cost model.
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
};

void optimizeModule(llvm::Module &module, llvm::TargetMachine &machine,
                    const OptimizeOptions &options = {});

} // namespace loopc::codegen
