// Code generation for the host CPU. A Function becomes one LLVM module with
//  - `loopc_main(ptr buffers, ptr scalars)`: the host code; buffers[i] points
//    to Function::buffers[i], scalars is one 8-byte slot per
//    Function::scalars[i] holding the value in its own type (bool as a byte);
//  - per kernel, a worker `loopc.kernel.<name>(ptr buffers, ptr scalars,
//    i64 unitBegin, i64 unitEnd)` running a range of units of parallel work,
//    the blocks of the linearized GpuBlock grid or, for a row sweep
//    (CpuThreadNest.h), rows; a Launch hands it to the thread pool
//    (loopc_cpu_launch_kernel, runtime/include/loopc/generated.h) with the
//    kernel's `loopc.kernel.<name>.cost`, what the pool measured of its
//    launches (a short one runs in the calling thread).
// Within a block, the GpuThread nest runs as loops over the threads, split at
// barriers and moved inside sequential loops (CpuThreadNest.h). Shared
// buffers are per-block stack storage, Register buffers allocas, Global
// temporaries the host code's stack up to kStackScratchBytes (CpuScratch.h),
// else heap memory.
// The device error record (DeviceErrors.h) is the module's global [3 x i64]
// `loopc_device_error`.
#pragma once

#include "codegen/CpuScratch.h"
#include "codegen/CpuThreadNest.h"
#include "codegen/DeviceErrors.h"
#include "codegen/Target.h"
#include "ir/IR.h"
#include "support/Error.h"

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <map>
#include <memory>

namespace loopc::codegen {

inline constexpr const char *kCpuEntryName = "loopc_main";

class CpuTarget final : public Target {
public:
  // The kernels that run as row sweeps (CpuThreadNest.h), by name.
  explicit CpuTarget(std::map<std::string, RowSweep> rowSweeps)
      : rowSweeps_(std::move(rowSweeps)) {}

  void emitGpuLoop(LlvmEmitter &emitter, const ir::For &loop) override;
  llvm::Value *allocate(LlvmEmitter &emitter, const ir::BufferInfo &buffer,
                        llvm::Value *elementCount) override;
  void release(LlvmEmitter &emitter, const ir::BufferInfo &buffer, llvm::Value *storage) override;
  void emitBarrier(LlvmEmitter &emitter) override;
  // Never reached: exchangeShufflesThroughShared rewrites a kernel's
  // shuffles before its threads become loops.
  llvm::Value *emitShuffleXor(LlvmEmitter &emitter, llvm::Value *value, ScalarType type,
                              int laneMask) override;
  // Blocks run at once on the pool's cores, but a block's threads run one
  // after another on one core: its shared memory needs no atomics.
  bool sharedAtOnce(ir::MemorySpace memory) const override {
    return memory == ir::MemorySpace::Global;
  }
  std::string libraryMathName(Builtin builtin, ScalarType type) const override;
  bool spellsOutSaturatingConversions() const override { return true; }
  void emitLaunch(LlvmEmitter &emitter, const ir::Launch &launch) override;

private:
  // Runs `worker` over `unitCount` units: in the calling thread when the
  // pool measured such a launch short, else through the pool.
  static void emitLaunchCall(LlvmEmitter &emitter, llvm::Function *worker, llvm::Value *buffers,
                             llvm::Value *scalars, llvm::Value *unitCount,
                             llvm::GlobalVariable *cost);

  std::map<std::string, RowSweep> rowSweeps_;
  // Allocations of run-time size, released on release.
  std::map<llvm::Value *, ScratchStorage> scratches_;
};

// The unoptimized module of `function` (see the file comment), whose
// device error sites (DeviceErrors.h) go to `sites` when given.
Expected<std::unique_ptr<llvm::Module>> emitCpuModule(const ir::Function &function,
                                                      llvm::LLVMContext &context,
                                                      DeviceErrorSites *sites = nullptr);

} // namespace loopc::codegen
