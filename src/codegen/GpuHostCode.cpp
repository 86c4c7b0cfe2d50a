// The GPU pipeline's host code as host CPU code (see GpuHostCode.h).
#include "codegen/GpuHostCode.h"

#include "codegen/CpuTarget.h"
#include "codegen/LlvmEmitter.h"

#include <map>

namespace loopc::codegen {

using namespace loopc::ir;

namespace {

// The emitter's target for host code driving a GPU. Registers and other host
// storage are the CPU's (a CpuTarget does them); the GPU's memory, kernels
// and error record are reached through the runtime.
class GpuHostTarget final : public Target {
public:
  GpuHostTarget(const ir::Function &function, const SourceManager &sources) : sources_(sources) {
    for (size_t i = 0; i < function.kernels.size(); ++i)
      kernels_.emplace(function.kernels[i].name,
                       std::pair{static_cast<int32_t>(i), &function.kernels[i]});
  }

  // The call (loopc_gpu_call) and device error record of the function being
  // emitted.
  void setCall(llvm::Value *call, llvm::Value *deviceErrorRecord) {
    call_ = call;
    deviceErrorRecord_ = deviceErrorRecord;
  }

  void emitGpuLoop(LlvmEmitter &emitter, const ir::For &loop) override {
    emitter.fail("GPU host code: a GPU loop outside a kernel", loop.source);
  }

  llvm::Value *allocate(LlvmEmitter &emitter, const ir::BufferInfo &buffer,
                        llvm::Value *elementCount) override {
    if (buffer.memory != MemorySpace::Global)
      return host_.allocate(emitter, buffer, elementCount);
    llvm::IRBuilder<> &builder = emitter.builder();
    llvm::Value *bytes = emitter.saturatingMultiply(
        elementCount, builder.getInt64(static_cast<int64_t>(scalarSize(buffer.element))));
    llvm::Value *address =
        builder.CreateCall(runtime(emitter, "loopc_gpu_alloc", builder.getInt64Ty(),
                                   {builder.getPtrTy(), builder.getInt64Ty()}),
                           {call_, bytes});
    return builder.CreateIntToPtr(address, builder.getPtrTy(), buffer.name);
  }

  void release(LlvmEmitter &emitter, const ir::BufferInfo &buffer, llvm::Value *storage) override {
    if (buffer.memory != MemorySpace::Global) {
      host_.release(emitter, buffer, storage);
      return;
    }
    llvm::IRBuilder<> &builder = emitter.builder();
    builder.CreateCall(runtime(emitter, "loopc_gpu_free", builder.getVoidTy(),
                               {builder.getPtrTy(), builder.getInt64Ty()}),
                       {call_, builder.CreatePtrToInt(storage, builder.getInt64Ty())});
  }

  void emitBarrier(LlvmEmitter &emitter) override {
    emitter.fail("GPU host code: a barrier outside a kernel");
  }

  llvm::Value *emitShuffleXor(LlvmEmitter &emitter, llvm::Value *value, ScalarType, int) override {
    emitter.fail("GPU host code: a warp shuffle outside a kernel");
    return value;
  }

  std::string libraryMathName(Builtin builtin, ScalarType type) const override {
    return host_.libraryMathName(builtin, type);
  }
  bool spellsOutSaturatingConversions() const override { return true; }

  llvm::Value *emitLoad(LlvmEmitter &emitter, const ir::BufferInfo &buffer, llvm::Type *type,
                        llvm::Value *address) override {
    if (buffer.memory != MemorySpace::Global)
      return Target::emitLoad(emitter, buffer, type, address);
    llvm::IRBuilder<> &builder = emitter.builder();
    llvm::Value *element = emitter.createEntryAlloca(type, nullptr, buffer.name + ".element");
    builder.CreateCall(runtime(emitter, "loopc_gpu_read", builder.getVoidTy(),
                               {builder.getPtrTy(), builder.getPtrTy(), builder.getInt64Ty(),
                                builder.getInt64Ty()}),
                       {call_, element, builder.CreatePtrToInt(address, builder.getInt64Ty()),
                        builder.getInt64(sizeOf(emitter, type))});
    return builder.CreateLoad(type, element);
  }

  void emitStore(LlvmEmitter &emitter, const ir::BufferInfo &buffer, llvm::Value *value,
                 llvm::Value *address) override {
    if (buffer.memory != MemorySpace::Global) {
      Target::emitStore(emitter, buffer, value, address);
      return;
    }
    llvm::IRBuilder<> &builder = emitter.builder();
    llvm::Value *element =
        emitter.createEntryAlloca(value->getType(), nullptr, buffer.name + ".element");
    builder.CreateStore(value, element);
    builder.CreateCall(runtime(emitter, "loopc_gpu_write", builder.getVoidTy(),
                               {builder.getPtrTy(), builder.getInt64Ty(), builder.getPtrTy(),
                                builder.getInt64Ty()}),
                       {call_, builder.CreatePtrToInt(address, builder.getInt64Ty()), element,
                        builder.getInt64(sizeOf(emitter, value->getType()))});
  }

  // The kernel's grid and block, its parameters in slots as the GPU engine
  // passes them (buffers, scalars in their kernel types, the error record),
  // handed to loopc_gpu_launch.
  void emitLaunch(LlvmEmitter &emitter, const ir::Launch &launch) override {
    auto found = kernels_.find(launch.kernel);
    if (found == kernels_.end()) {
      emitter.fail("GPU host code: launch of unknown kernel '" + launch.kernel + "'",
                   launch.source);
      return;
    }
    auto [index, kernel] = found->second;
    llvm::IRBuilder<> &builder = emitter.builder();
    llvm::Type *i64 = builder.getInt64Ty();
    llvm::Value *geometry = emitter.createEntryAlloca(i64, builder.getInt64(6), "geometry");
    for (int axis = 0; axis < 3; ++axis) {
      auto extent = [&](const std::vector<ir::Expr> &extents) {
        return axis < static_cast<int>(extents.size())
                   ? emitter.emitExprAs(*extents[axis], ScalarType::I64)
                   : builder.getInt64(1);
      };
      builder.CreateStore(extent(launch.grid),
                          builder.CreateConstInBoundsGEP1_64(i64, geometry, axis));
      builder.CreateStore(extent(launch.block),
                          builder.CreateConstInBoundsGEP1_64(i64, geometry, 3 + axis));
    }
    size_t count = launch.buffers.size() + launch.scalars.size() + 1;
    llvm::Value *slots =
        emitter.createEntryAlloca(i64, builder.getInt64(static_cast<int64_t>(count)), "params");
    llvm::Value *params = emitter.createEntryAlloca(
        builder.getPtrTy(), builder.getInt64(static_cast<int64_t>(count)), "param.pointers");
    auto slot = [&](size_t i) { return builder.CreateConstInBoundsGEP1_64(i64, slots, i); };
    for (size_t i = 0; i < count; ++i) {
      builder.CreateStore(builder.getInt64(0), slot(i));
      builder.CreateStore(slot(i),
                          builder.CreateConstInBoundsGEP1_64(builder.getPtrTy(), params, i));
    }
    for (size_t i = 0; i < launch.buffers.size(); ++i) {
      const BufferInfo &buffer = *launch.buffers[i];
      if (buffer.memory != MemorySpace::Global) {
        emitter.fail("GPU host code: kernel '" + launch.kernel + "' is given '" + buffer.name +
                         "', which is not in device memory",
                     launch.source);
        return;
      }
      builder.CreateStore(builder.CreatePtrToInt(emitter.lookupBuffer(buffer, launch.source), i64),
                          slot(i));
    }
    for (size_t i = 0; i < launch.scalars.size(); ++i) {
      ScalarType type =
          i < kernel->scalars.size() ? kernel->scalars[i].type : launch.scalars[i]->type;
      builder.CreateStore(emitter.toMemory(emitter.emitExprAs(*launch.scalars[i], type), type),
                          slot(launch.buffers.size() + i));
    }
    builder.CreateStore(deviceErrorRecord_, slot(count - 1));
    llvm::Value *source =
        builder.CreateGlobalStringPtr(sources_.location(launch.source), "loopc.launch.source");
    builder.CreateCall(runtime(emitter, "loopc_gpu_launch", builder.getVoidTy(),
                               {builder.getPtrTy(), builder.getInt32Ty(), builder.getPtrTy(),
                                builder.getPtrTy(), builder.getInt32Ty(), builder.getPtrTy()}),
                       {call_, builder.getInt32(index), geometry, params,
                        builder.getInt32(kernel->maxThreadsPerBlock), source});
  }

private:
  static llvm::FunctionCallee runtime(LlvmEmitter &emitter, const char *name, llvm::Type *result,
                                      llvm::ArrayRef<llvm::Type *> params) {
    return emitter.module().getOrInsertFunction(name,
                                                llvm::FunctionType::get(result, params, false));
  }
  static int64_t sizeOf(LlvmEmitter &emitter, llvm::Type *type) {
    return static_cast<int64_t>(emitter.module().getDataLayout().getTypeStoreSize(type));
  }

  const SourceManager &sources_;
  std::map<std::string, std::pair<int32_t, const KernelFunc *>> kernels_;
  CpuTarget host_{{}};
  llvm::Value *call_ = nullptr;
  llvm::Value *deviceErrorRecord_ = nullptr;
};

} // namespace

Expected<llvm::Function *> emitGpuHostCode(llvm::Module &module, const ir::Function &function,
                                           const std::string &name, const SourceManager &sources,
                                           DeviceErrorSites &sites) {
  llvm::LLVMContext &context = module.getContext();
  auto *ptr = llvm::PointerType::getUnqual(context);
  auto *host = llvm::Function::Create(
      llvm::FunctionType::get(llvm::Type::getVoidTy(context), {ptr, ptr, ptr, ptr}, false),
      llvm::Function::InternalLinkage, name, module);
  GpuHostTarget target(function, sources);
  LlvmEmitter emitter(module, target);
  llvm::IRBuilder<> &builder = emitter.builder();
  builder.SetInsertPoint(llvm::BasicBlock::Create(context, "entry", host));
  llvm::Value *call = host->getArg(0);
  llvm::Value *deviceRecord = builder.CreateCall(
      module.getOrInsertFunction("loopc_gpu_error_record",
                                 llvm::FunctionType::get(builder.getInt64Ty(), {ptr}, false)),
      {call});
  target.setCall(call, deviceRecord);
  emitter.setBoundsChecks(function);
  emitter.setBoundsCheckBody(function.body);
  emitter.setDeviceErrorRecord(host->getArg(3), function.source);
  {
    ScopedBindings scope(emitter);
    for (size_t i = 0; i < function.buffers.size(); ++i) {
      llvm::Value *address = builder.CreateLoad(
          builder.getInt64Ty(),
          builder.CreateConstInBoundsGEP1_64(builder.getInt64Ty(), host->getArg(1), i));
      scope.buffer(function.buffers[i].get(),
                   builder.CreateIntToPtr(address, ptr, function.buffers[i]->name));
    }
    bindScalarSlots(emitter, scope, function.scalars, host->getArg(2));
    emitter.emitStmt(*function.body);
  }
  builder.CreateRetVoid();
  if (auto finished = emitter.finish("GPU host code", function.source, &sites); !finished)
    return std::unexpected(finished.error());
  return host;
}

} // namespace loopc::codegen
