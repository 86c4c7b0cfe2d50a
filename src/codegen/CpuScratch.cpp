// Scratch storage on the stack or the heap (see CpuScratch.h).
#include "codegen/CpuScratch.h"

namespace loopc::codegen {

ScratchStorage::ScratchStorage(LlvmEmitter &emitter, llvm::Type *elementType, uint64_t elementSize,
                               llvm::Value *count, const std::string &name, bool zeroed) {
  llvm::IRBuilder<> &builder = emitter.builder();
  llvm::Function *function = builder.GetInsertBlock()->getParent();
  llvm::Value *bytes = emitter.saturatingMultiply(count, builder.getInt64(elementSize));
  onStack_ = builder.CreateICmpULE(bytes, builder.getInt64(kStackScratchBytes));
  savedStack_ = builder.CreateStackSave();
  auto *stack = llvm::BasicBlock::Create(emitter.context(), name + ".stack", function);
  auto *heap = llvm::BasicBlock::Create(emitter.context(), name + ".heap", function);
  auto *ready = llvm::BasicBlock::Create(emitter.context(), name + ".ready", function);
  builder.CreateCondBr(onStack_, stack, heap);
  builder.SetInsertPoint(stack);
  llvm::Value *onStackPointer = builder.CreateAlloca(elementType, count, name);
  if (zeroed)
    builder.CreateMemSet(onStackPointer, builder.getInt8(0), bytes, llvm::MaybeAlign(elementSize));
  builder.CreateBr(ready);
  builder.SetInsertPoint(heap);
  auto *i64 = builder.getInt64Ty();
  llvm::Value *onHeapPointer;
  if (zeroed) {
    llvm::FunctionCallee calloc = emitter.module().getOrInsertFunction(
        "calloc", llvm::FunctionType::get(builder.getPtrTy(), {i64, i64}, false));
    onHeapPointer =
        builder.CreateCall(calloc, {count, builder.getInt64(elementSize)}, name + ".heap");
  } else {
    llvm::FunctionCallee malloc = emitter.module().getOrInsertFunction(
        "malloc", llvm::FunctionType::get(builder.getPtrTy(), {i64}, false));
    onHeapPointer = builder.CreateCall(malloc, {bytes}, name + ".heap");
  }
  builder.CreateBr(ready);
  builder.SetInsertPoint(ready);
  llvm::PHINode *pointer = builder.CreatePHI(builder.getPtrTy(), 2, name);
  pointer->addIncoming(onStackPointer, stack);
  pointer->addIncoming(onHeapPointer, heap);
  pointer_ = pointer;
  failed_ = builder.CreateIsNull(pointer);
}

void ScratchStorage::release(LlvmEmitter &emitter, bool restoreStack) const {
  llvm::IRBuilder<> &builder = emitter.builder();
  llvm::Function *function = builder.GetInsertBlock()->getParent();
  auto *restore = llvm::BasicBlock::Create(emitter.context(), "scratch.restore", function);
  auto *free = llvm::BasicBlock::Create(emitter.context(), "scratch.free", function);
  auto *done = llvm::BasicBlock::Create(emitter.context(), "scratch.released", function);
  builder.CreateCondBr(onStack_, restore, free);
  builder.SetInsertPoint(restore);
  if (restoreStack)
    builder.CreateStackRestore(savedStack_);
  builder.CreateBr(done);
  builder.SetInsertPoint(free);
  llvm::FunctionCallee freeFunction = emitter.module().getOrInsertFunction(
      "free", llvm::FunctionType::get(builder.getVoidTy(), {builder.getPtrTy()}, false));
  builder.CreateCall(freeFunction, {pointer_});
  builder.CreateBr(done);
  builder.SetInsertPoint(done);
}

} // namespace loopc::codegen
