// Storage of run-time size for one scope of CPU code: an iteration's private
// array (`var t: f32[K]`), or the side-by-side slots of a block's threads'
// arrays. On the stack up to kStackScratchBytes, as before; beyond, on the
// heap: a pool thread's stack is a few MiB, and 256 threads' arrays of 10000
// floats are 10 MB (a bug hunt's crash). The choice is made at run time.
#pragma once

#include "codegen/LlvmEmitter.h"

#include <string>

namespace loopc::codegen {

inline constexpr uint64_t kStackScratchBytes = 64 * 1024;

class ScratchStorage {
public:
  // Emits the allocation of `count` elements of `elementType`, each
  // `elementSize` bytes; zeroed when `zeroed` (on the heap by calloc, whose
  // fresh pages cost nothing until touched), else not.
  ScratchStorage(LlvmEmitter &emitter, llvm::Type *elementType, uint64_t elementSize,
                 llvm::Value *count, const std::string &name, bool zeroed);
  llvm::Value *pointer() const { return pointer_; }
  // True (i1) when the heap had no room: pointer() is then null.
  llvm::Value *failed() const { return failed_; }
  // Emits the release: the heap storage freed, or the stack restored when
  // `restoreStack` (else an enclosing scope restores it, with the storage
  // allocated after this one).
  void release(LlvmEmitter &emitter, bool restoreStack) const;

private:
  llvm::Value *pointer_ = nullptr;
  llvm::Value *onStack_ = nullptr;
  llvm::Value *savedStack_ = nullptr;
  llvm::Value *failed_ = nullptr;
};

} // namespace loopc::codegen
