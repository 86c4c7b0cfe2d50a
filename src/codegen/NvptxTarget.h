// Code generation for NVIDIA GPUs: the kernels of a Function become one LLVM
// module for nvptx64-nvidia-cuda, optimized and turned into PTX by LLVM's
// NVPTX backend. Host code is not compiled here: GpuEngine interprets it, and
// GpuHostCode.h compiles it for the host CPU where an object embeds the GPU
// code.
//
// Each KernelFunc becomes a `ptx_kernel` function `kernel.name(buffers...,
// scalars..., error)`: buffers are global pointers (noalias; readonly when the
// kernel never writes them, so loads may use the non-coherent cache), scalars
// are passed by value in their memory type (bool as i8), and `error` points to
// the device error record (24 bytes, DeviceErrors.h). The GPU loops that
// match the launch geometry are not loops at all: the variable is the block or
// thread index, behind a bounds guard; others are strided loops. Shared buffers
// are addrspace(3) globals of static size, zeroed by the block on entry;
// Register buffers are allocas; math without an NVPTX instruction calls
// libdevice, linked in with only the functions the module needs.
#pragma once

#include "codegen/DeviceErrors.h"
#include "codegen/LoopCensus.h"
#include "codegen/Target.h"
#include "ir/IR.h"
#include "support/Error.h"

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <map>
#include <memory>
#include <set>
#include <string>

namespace loopc::codegen {

inline constexpr const char *kDefaultGpu = "sm_80";

// The compute capability `gpu` names, major * 10 + minor (sm_90a: 90), which
// the pass pipeline sizes its choice of instructions by
// (passes::PipelineOptions::computeCapability); 80 for a name that is not
// sm_XX, which code generation refuses anyway.
int computeCapabilityOf(const std::string &gpu);

// Success when loopc generates code for `gpu`, else the error saying which
// names it takes.
Status checkGpuName(const std::string &gpu);

class NvptxTarget final : public Target {
public:
  // `directLoops`: the GpuBlock/GpuThread loops whose extent is the launch
  // geometry of every launch of their kernel (see launchGeometryLoops);
  // `loopNames`: each kernel's loops by ir::loopKeys of its body.
  NvptxTarget(std::set<const ir::For *> directLoops,
              std::map<const ir::For *, std::string> loopNames)
      : directLoops_(std::move(directLoops)), loopNames_(std::move(loopNames)) {}

  void emitGpuLoop(LlvmEmitter &emitter, const ir::For &loop) override;
  llvm::Value *allocate(LlvmEmitter &emitter, const ir::BufferInfo &buffer,
                        llvm::Value *elementCount) override;
  void release(LlvmEmitter &emitter, const ir::BufferInfo &buffer, llvm::Value *storage) override;
  void emitBarrier(LlvmEmitter &emitter) override;
  void emitAsyncCopy(LlvmEmitter &emitter, const ir::AsyncCopy &copy) override;
  void emitAsyncCommit(LlvmEmitter &emitter) override;
  void emitAsyncWait(LlvmEmitter &emitter, int pending) override;
  llvm::Value *emitShuffleXor(LlvmEmitter &emitter, llvm::Value *value, ScalarType type,
                              int laneMask) override;
  bool usesLibraryMath(Builtin builtin) const override;
  std::string libraryMathName(Builtin builtin, ScalarType type) const override;
  void emitLaunch(LlvmEmitter &emitter, const ir::Launch &launch) override;
  std::optional<std::string> loopName(const ir::For &loop) const override;

private:
  std::set<const ir::For *> directLoops_;
  std::map<const ir::For *, std::string> loopNames_;
  int threadLoopDepth_ = 0; // GpuThread loops around the current emission
};

// The loops of `function`'s kernels that need no loop on the GPU: outermost
// GpuBlock (GpuThread) loops, one per dimension, whose extent is the grid
// (block) extent of that dimension in every Launch of the kernel.
std::set<const ir::For *> launchGeometryLoops(const ir::Function &function);

// The kernels of `function` as an NVPTX module for `gpu` (sm_80, sm_90, ...):
// unoptimized when `optimize` is false, else with libdevice linked and the O3
// pipeline of the NVPTX target machine run (which includes NVVMReflect).
Expected<std::unique_ptr<llvm::Module>> emitNvptxModule(const ir::Function &function,
                                                        llvm::LLVMContext &context,
                                                        const std::string &gpu, bool optimize);

// The module's LLVM IR as text, and its PTX, whose device error sites go to
// `sites` and the loops left after optimization to `loops` when given.
Expected<std::string> nvptxLlvmText(const ir::Function &function, const std::string &gpu,
                                    bool optimize);
Expected<std::string> compileToPtx(const ir::Function &function, const std::string &gpu,
                                   DeviceErrorSites *sites = nullptr, LoopCensus *loops = nullptr);

// Where libdevice is read from: $LOOPC_LIBDEVICE, else libdevice.10.bc next to
// the running executable (carried to a GPU machine without the toolkit), else
// the CUDA toolkit's copy.
std::string libdevicePath();

} // namespace loopc::codegen
