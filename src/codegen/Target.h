// What a code generator target decides on top of the shared LlvmEmitter: how
// the GPU loop kinds execute (special registers on NVPTX, plain or parallel
// loops on the CPU), where each memory space lives (addrspace(3) globals,
// allocas, the heap), what a barrier is, which math functions stand in for
// builtins LLVM has no intrinsic for, and how host code launches a kernel.
// Everything else (expressions, addressing, control flow) is target
// independent and stays in the emitter.
#pragma once

#include "ir/IR.h"

#include <optional>
#include <string>

namespace llvm {
class Type;
class Value;
} // namespace llvm

namespace loopc::codegen {

class LlvmEmitter;

class Target {
public:
  virtual ~Target() = default;

  // Emits a For of kind GpuBlock or GpuThread (the emitter handles the other
  // kinds), binding `loop.var` around the emission of its body.
  virtual void emitGpuLoop(LlvmEmitter &emitter, const ir::For &loop) = 0;

  // Returns zeroed storage for `elementCount` elements of `buffer` in its
  // memory space, valid until the matching release().
  virtual llvm::Value *allocate(LlvmEmitter &emitter, const ir::BufferInfo &buffer,
                                llvm::Value *elementCount) = 0;
  virtual void release(LlvmEmitter &emitter, const ir::BufferInfo &buffer,
                       llvm::Value *storage) = 0;

  virtual void emitBarrier(LlvmEmitter &emitter) = 0;

  // ir::AsyncCopy, AsyncCommit and AsyncWait, which only the NVPTX target
  // has instructions for (the CPU makes them plain copies before emitting:
  // CpuAsyncCopies.h); by default a code generation error.
  virtual void emitAsyncCopy(LlvmEmitter &emitter, const ir::AsyncCopy &copy);
  virtual void emitAsyncCommit(LlvmEmitter &emitter);
  virtual void emitAsyncWait(LlvmEmitter &emitter, int pending);

  // `value` (of `type`) as the thread in lane `lane ^ laneMask` of this
  // thread's warp has it (ir::WarpShuffle).
  virtual llvm::Value *emitShuffleXor(LlvmEmitter &emitter, llvm::Value *value, ScalarType type,
                                      int laneMask) = 0;

  // Whether threads running at the same time reach memory of `memory`, so
  // an AtomicUpdate there must be atomic. Registers are a thread's own.
  virtual bool sharedAtOnce(ir::MemorySpace memory) const {
    return memory != ir::MemorySpace::Register;
  }

  // Whether `builtin` is emitted as a call to libraryMathName instead of an LLVM
  // intrinsic: tanh has none, and NVPTX cannot select exp, log, sin, cos or
  // pow, so the GPU calls libdevice for those.
  virtual bool usesLibraryMath(Builtin builtin) const { return builtin == Builtin::Tanh; }

  // The function the emitter calls for a builtin without an LLVM intrinsic
  // (tanh): a libm or libdevice name, taking and returning `type`.
  virtual std::string libraryMathName(Builtin builtin, ScalarType type) const = 0;

  // Whether a float-to-integer conversion (saturating, NaN to 0) is emitted
  // as llvm.fptosi.sat, which NVPTX selects as one instruction, or spelled
  // out as a clamp, an fptosi and two selects, which x86 vectorizes (its
  // backend scalarizes a vector of fptosi.sat to 64-bit integers).
  virtual bool spellsOutSaturatingConversions() const { return false; }

  // A kernel launch in host code.
  virtual void emitLaunch(LlvmEmitter &emitter, const ir::Launch &launch) = 0;

  // A load of an element of `buffer` (of memory type `type`) at `address`,
  // and a store of `value` there: plain ones, unless the code cannot reach
  // the buffer's memory directly (the GPU's, from host code compiled ahead of
  // time: GpuHostCode.h).
  virtual llvm::Value *emitLoad(LlvmEmitter &emitter, const ir::BufferInfo &buffer,
                                llvm::Type *type, llvm::Value *address);
  virtual void emitStore(LlvmEmitter &emitter, const ir::BufferInfo &buffer, llvm::Value *value,
                         llvm::Value *address);

  // The name a loop carries as an `llvm.loop` property ({"loopc.loop",
  // name}), so that what LLVM made of the loops can be read from the
  // optimized module (LoopCensus.h); none where the target does not ask.
  virtual std::optional<std::string> loopName(const ir::For &) const { return std::nullopt; }
};

} // namespace loopc::codegen
