// The NVPTX specialization of the emitter, libdevice linking and PTX emission
// (see NvptxTarget.h).
#include "codegen/NvptxTarget.h"

#include "codegen/LlvmEmitter.h"
#include "codegen/Optimize.h"
#include "ir/IRVisitor.h"

#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/Linker/Linker.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>

namespace loopc::codegen {

using namespace loopc::ir;

namespace {

constexpr const char *kNvptxTriple = "nvptx64-nvidia-cuda";
constexpr unsigned kSharedAddressSpace = 3;
constexpr unsigned kGlobalAddressSpace = 1;

// The block or thread index, block or grid extent along `dim`, as i32.
llvm::Value *readSpecialRegister(LlvmEmitter &emitter, bool block, bool extent, int dim) {
  using namespace llvm::Intrinsic;
  static constexpr ID kIndices[2][2][3] = {
      {{nvvm_read_ptx_sreg_tid_x, nvvm_read_ptx_sreg_tid_y, nvvm_read_ptx_sreg_tid_z},
       {nvvm_read_ptx_sreg_ntid_x, nvvm_read_ptx_sreg_ntid_y, nvvm_read_ptx_sreg_ntid_z}},
      {{nvvm_read_ptx_sreg_ctaid_x, nvvm_read_ptx_sreg_ctaid_y, nvvm_read_ptx_sreg_ctaid_z},
       {nvvm_read_ptx_sreg_nctaid_x, nvvm_read_ptx_sreg_nctaid_y, nvvm_read_ptx_sreg_nctaid_z}}};
  return emitter.builder().CreateIntrinsic(kIndices[block][extent][dim], {}, {});
}

// Structural equality of two expressions, to match a loop's extent with the
// launch geometry computed from the same expression by extract_kernels.
bool sameExpr(const ExprNode &a, const ExprNode &b) {
  if (a.kind != b.kind)
    return false;
  switch (a.kind) {
  case ExprNode::Kind::IntImm:
    return a.as<IntImm>()->value == b.as<IntImm>()->value;
  case ExprNode::Kind::FloatImm:
    return a.type == b.type && a.as<FloatImm>()->value == b.as<FloatImm>()->value;
  case ExprNode::Kind::BoolImm:
    return a.as<BoolImm>()->value == b.as<BoolImm>()->value;
  case ExprNode::Kind::Var:
    return a.type == b.type && a.as<Var>()->name == b.as<Var>()->name;
  case ExprNode::Kind::Binary: {
    auto &x = *a.as<Binary>(), &y = *b.as<Binary>();
    return x.op == y.op && sameExpr(*x.lhs, *y.lhs) && sameExpr(*x.rhs, *y.rhs);
  }
  case ExprNode::Kind::Unary: {
    auto &x = *a.as<Unary>(), &y = *b.as<Unary>();
    return x.op == y.op && sameExpr(*x.operand, *y.operand);
  }
  case ExprNode::Kind::Cast:
    return a.type == b.type && sameExpr(*a.as<Cast>()->operand, *b.as<Cast>()->operand);
  case ExprNode::Kind::Select: {
    auto &x = *a.as<ir::Select>(), &y = *b.as<ir::Select>();
    return sameExpr(*x.cond, *y.cond) && sameExpr(*x.thenValue, *y.thenValue) &&
           sameExpr(*x.elseValue, *y.elseValue);
  }
  default: // loads and calls never describe launch geometry
    return false;
  }
}

void collectLaunches(const StmtNode &stmt, std::vector<const ir::Launch *> &launches) {
  switch (stmt.kind) {
  case StmtNode::Kind::Launch:
    launches.push_back(stmt.as<ir::Launch>());
    return;
  case StmtNode::Kind::For:
    collectLaunches(*stmt.as<ir::For>()->body, launches);
    return;
  case StmtNode::Kind::IfThenElse: {
    auto &branch = *stmt.as<IfThenElse>();
    collectLaunches(*branch.thenCase, launches);
    if (branch.elseCase)
      collectLaunches(*branch.elseCase, launches);
    return;
  }
  case StmtNode::Kind::LetStmt:
    collectLaunches(*stmt.as<LetStmt>()->body, launches);
    return;
  case StmtNode::Kind::Allocate:
    collectLaunches(*stmt.as<ir::Allocate>()->body, launches);
    return;
  case StmtNode::Kind::Block:
    for (const ir::Stmt &child : stmt.as<ir::Block>()->stmts)
      collectLaunches(*child, launches);
    return;
  default:
    return;
  }
}

// Finds the GPU loops of one kernel that match every launch's geometry. A
// dimension is claimed by the outermost loop of its kind along it; loops
// nested in a claimed one (or inside a thread loop, for blocks) stay loops.
class GeometryMatcher {
public:
  GeometryMatcher(const std::vector<const ir::Launch *> &launches, std::set<const ir::For *> &out)
      : launches_(launches), out_(out) {}

  void visit(const StmtNode &stmt) {
    switch (stmt.kind) {
    case StmtNode::Kind::For: {
      auto &loop = *stmt.as<ir::For>();
      bool isBlock = loop.forKind == ForKind::GpuBlock;
      bool isThread = loop.forKind == ForKind::GpuThread;
      bool claimed = false;
      if ((isBlock || isThread) && loop.gpuDim >= 0 && loop.gpuDim < 3) {
        bool &taken = (isBlock ? blockTaken_ : threadTaken_)[loop.gpuDim];
        bool blockedByThreads = isBlock && insideThreads_ > 0;
        if (!taken && !blockedByThreads && matchesEveryLaunch(loop, isBlock)) {
          out_.insert(&loop);
          taken = claimed = true;
        }
      }
      insideThreads_ += isThread;
      visit(*loop.body);
      insideThreads_ -= isThread;
      if (claimed)
        (isBlock ? blockTaken_ : threadTaken_)[loop.gpuDim] = false;
      return;
    }
    case StmtNode::Kind::IfThenElse: {
      auto &branch = *stmt.as<IfThenElse>();
      visit(*branch.thenCase);
      if (branch.elseCase)
        visit(*branch.elseCase);
      return;
    }
    case StmtNode::Kind::LetStmt:
      visit(*stmt.as<LetStmt>()->body);
      return;
    case StmtNode::Kind::Allocate:
      visit(*stmt.as<ir::Allocate>()->body);
      return;
    case StmtNode::Kind::Block:
      for (const ir::Stmt &child : stmt.as<ir::Block>()->stmts)
        visit(*child);
      return;
    default:
      return;
    }
  }

private:
  bool matchesEveryLaunch(const ir::For &loop, bool isBlock) const {
    if (launches_.empty())
      return false;
    for (const ir::Launch *launch : launches_) {
      const std::vector<ir::Expr> &geometry = isBlock ? launch->grid : launch->block;
      if (geometry.size() <= static_cast<size_t>(loop.gpuDim) ||
          !sameExpr(withoutWidening(*geometry[loop.gpuDim]), *loop.extent))
        return false;
    }
    return true;
  }

  // extract_kernels widens an i32 extent to the i64 of launch geometry.
  static const ExprNode &withoutWidening(const ExprNode &extent) {
    if (extent.kind == ExprNode::Kind::Cast && extent.type == ScalarType::I64 &&
        extent.as<Cast>()->operand->type == ScalarType::I32)
      return *extent.as<Cast>()->operand;
    return extent;
  }

  const std::vector<const ir::Launch *> &launches_;
  std::set<const ir::For *> &out_;
  bool blockTaken_[3] = {false, false, false};
  bool threadTaken_[3] = {false, false, false};
  int insideThreads_ = 0;
};

void initializeNvptx() {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
  });
}

Expected<std::unique_ptr<llvm::TargetMachine>> nvptxMachine(const std::string &gpu) {
  initializeNvptx();
  std::string problem;
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(kNvptxTriple, problem);
  if (!target)
    return makeError("no NVPTX target in this LLVM: " + problem);
  std::unique_ptr<llvm::MCSubtargetInfo> subtarget(
      target->createMCSubtargetInfo(kNvptxTriple, "", ""));
  // LLVM 19 also knows sm_20 to sm_37, which no ptxas since CUDA 12 assembles
  // (nor reads the PTX ISA 8.0 below for): they are refused as unknown.
  int version = 0;
  bool modern =
      gpu.starts_with("sm_") && std::sscanf(gpu.c_str() + 3, "%d", &version) == 1 && version >= 50;
  if (!subtarget || !modern || !subtarget->isCPUStringValid(gpu))
    return makeError("unknown GPU '" + gpu +
                     "' (loopc compiles for sm_50 to sm_90a: what LLVM 19 knows and CUDA 12's "
                     "ptxas accepts; e.g. sm_80)");
  // PTX ISA 8.0 covers sm_90 and is read by every ptxas and driver since CUDA 12.0.
  llvm::TargetOptions options;
  std::unique_ptr<llvm::TargetMachine> machine(
      target->createTargetMachine(kNvptxTriple, gpu, "+ptx80", options, std::nullopt, std::nullopt,
                                  llvm::CodeGenOptLevel::Aggressive));
  if (!machine)
    return makeError("cannot create the NVPTX target machine for " + gpu);
  return machine;
}

void addAnnotation(llvm::Module &module, llvm::Function *kernel, const char *key, int value) {
  llvm::LLVMContext &context = module.getContext();
  llvm::Metadata *operands[] = {
      llvm::ValueAsMetadata::get(kernel), llvm::MDString::get(context, key),
      llvm::ValueAsMetadata::get(llvm::ConstantInt::get(llvm::Type::getInt32Ty(context), value))};
  module.getOrInsertNamedMetadata("nvvm.annotations")
      ->addOperand(llvm::MDNode::get(context, operands));
}

void emitKernel(LlvmEmitter &emitter, const KernelFunc &kernel) {
  llvm::LLVMContext &context = emitter.context();
  llvm::IRBuilder<> &builder = emitter.builder();
  std::vector<llvm::Type *> params(kernel.buffers.size(), builder.getPtrTy());
  for (const ScalarParam &scalar : kernel.scalars)
    params.push_back(emitter.memoryType(scalar.type));
  params.push_back(builder.getPtrTy()); // the device error word
  auto *function =
      llvm::Function::Create(llvm::FunctionType::get(builder.getVoidTy(), params, false),
                             llvm::Function::ExternalLinkage, kernel.name, emitter.module());
  function->setCallingConv(llvm::CallingConv::PTX_Kernel);
  addAnnotation(emitter.module(), function, "kernel", 1);
  // The occupancy target lets ptxas budget registers (see docs/gpu.md).
  if (kernel.maxThreadsPerBlock > 0)
    addAnnotation(emitter.module(), function, "maxntidx", kernel.maxThreadsPerBlock);
  if (kernel.minBlocksPerSM > 0)
    addAnnotation(emitter.module(), function, "minctasm", kernel.minBlocksPerSM);

  builder.SetInsertPoint(llvm::BasicBlock::Create(context, "entry", function));
  ScopedBindings scope(emitter);
  for (size_t i = 0; i < kernel.buffers.size(); ++i) {
    llvm::Argument *arg = function->getArg(static_cast<unsigned>(i));
    arg->setName(kernel.buffers[i]->name);
    arg->addAttr(llvm::Attribute::NoAlias);
    if (!kernel.buffers[i]->isWritten)
      arg->addAttr(llvm::Attribute::ReadOnly);
    scope.buffer(kernel.buffers[i].get(), arg);
  }
  for (size_t i = 0; i < kernel.scalars.size(); ++i) {
    llvm::Argument *arg = function->getArg(static_cast<unsigned>(kernel.buffers.size() + i));
    arg->setName(kernel.scalars[i].name);
    scope.var(kernel.scalars[i].name, emitter.fromMemory(arg, kernel.scalars[i].type));
  }
  llvm::Argument *errorWord = function->getArg(function->arg_size() - 1);
  errorWord->setName(kDeviceErrorName);
  errorWord->addAttr(llvm::Attribute::NoAlias);
  emitter.setDeviceErrorRecord(errorWord, kernel.source);
  emitter.setBoundsCheckBody(kernel.body);
  emitter.emitStmt(*kernel.body);
  builder.CreateRetVoid();
}

// Reads libdevice for `caller`, the first of its functions a module calls
// (named in the message when the toolkit is missing).
Expected<std::unique_ptr<llvm::Module>> readLibdevice(llvm::LLVMContext &context,
                                                      llvm::StringRef caller) {
  std::string path = libdevicePath();
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return makeError("the GPU code calls " + caller.drop_front(5).str() +
                     ", which comes from libdevice in the CUDA toolkit, and libdevice cannot be "
                     "read at '" +
                     path + "' (" + buffer.getError().message() +
                     "): install the CUDA toolkit, or set LOOPC_LIBDEVICE to its "
                     "libdevice.10.bc");
  // Lazily: the linker materializes only the functions a module calls (a
  // few of libdevice's hundreds), where parsing all of it took a quarter of
  // a small kernel's compile time.
  auto module = llvm::getOwningLazyBitcodeModule(std::move(*buffer), context);
  if (!module)
    return makeError("cannot parse libdevice '" + path +
                     "': " + llvm::toString(module.takeError()));
  return std::move(*module);
}

// Links the libdevice functions the module calls, then makes everything but
// the kernels internal so the optimizer inlines and drops them.
Status linkLibdevice(llvm::Module &module) {
  auto needed = llvm::find_if(module.functions(), [](const llvm::Function &function) {
    return function.isDeclaration() && function.getName().starts_with("__nv_");
  });
  if (needed != module.functions().end()) {
    auto libdevice = readLibdevice(module.getContext(), needed->getName());
    if (!libdevice)
      return std::unexpected(libdevice.error());
    (*libdevice)->setTargetTriple(module.getTargetTriple());
    (*libdevice)->setDataLayout(module.getDataLayout());
    if (llvm::Linker::linkModules(module, std::move(*libdevice),
                                  llvm::Linker::Flags::LinkOnlyNeeded))
      return makeError("linking libdevice failed");
  }
  for (llvm::Function &function : module.functions())
    if (!function.isDeclaration() && function.getCallingConv() != llvm::CallingConv::PTX_Kernel)
      function.setLinkage(llvm::GlobalValue::InternalLinkage);
  return {};
}

Expected<std::unique_ptr<llvm::Module>> buildModule(const ir::Function &function,
                                                    llvm::LLVMContext &context,
                                                    llvm::TargetMachine &machine, bool optimized,
                                                    DeviceErrorSites *sites = nullptr) {
  auto module = std::make_unique<llvm::Module>(function.name, context);
  module->setTargetTriple(kNvptxTriple);
  module->setDataLayout(machine.createDataLayout());
  // Denormals are kept (IEEE results, as on the CPU and in the interpreter).
  module->addModuleFlag(llvm::Module::Override, "nvvm-reflect-ftz", uint32_t{0});
  std::map<const ir::For *, std::string> loopNames;
  for (const KernelFunc &kernel : function.kernels)
    loopNames.merge(ir::loopKeys(kernel.body));
  NvptxTarget target(launchGeometryLoops(function), std::move(loopNames));
  LlvmEmitter emitter(*module, target);
  emitter.setBoundsChecks(function);
  for (const KernelFunc &kernel : function.kernels)
    emitKernel(emitter, kernel);
  if (auto finished = emitter.finish("NVPTX code generation", function.source, sites); !finished)
    return std::unexpected(finished.error());
  if (!optimized)
    return module;
  if (auto linked = linkLibdevice(*module); !linked)
    return std::unexpected(linked.error());
  // The NVPTX machine adds NVVMReflect to the pipeline, which folds
  // libdevice's __nvvm_reflect("__CUDA_FTZ") from the module flag.
  optimizeModule(*module, machine);
  return module;
}

} // namespace

std::set<const ir::For *> launchGeometryLoops(const ir::Function &function) {
  std::set<const ir::For *> direct;
  std::vector<const ir::Launch *> launches;
  if (function.body)
    collectLaunches(*function.body, launches);
  for (const KernelFunc &kernel : function.kernels) {
    std::vector<const ir::Launch *> ofKernel;
    for (const ir::Launch *launch : launches)
      if (launch->kernel == kernel.name)
        ofKernel.push_back(launch);
    GeometryMatcher(ofKernel, direct).visit(*kernel.body);
  }
  return direct;
}

void NvptxTarget::emitGpuLoop(LlvmEmitter &emitter, const ir::For &loop) {
  llvm::IRBuilder<> &builder = emitter.builder();
  bool isBlock = loop.forKind == ForKind::GpuBlock;
  ScalarType type = loop.min->type;
  llvm::Value *min = emitter.emitExpr(*loop.min);
  llvm::Value *extent = emitter.emitExpr(*loop.extent);
  llvm::Value *index =
      emitter.emitCast(builder.CreateZExt(readSpecialRegister(emitter, isBlock, false, loop.gpuDim),
                                          builder.getInt64Ty()),
                       ScalarType::I64, type);
  threadLoopDepth_ += !isBlock;
  auto emitBody = [&](llvm::Value *var) {
    ScopedBindings scope(emitter);
    scope.var(loop.var, var);
    emitter.emitStmt(*loop.body);
  };
  if (directLoops_.contains(&loop)) {
    // One iteration per block (thread): the guard only matters where the
    // launch rounded the geometry up, and keeps barriers block-uniform.
    llvm::Function *function = builder.GetInsertBlock()->getParent();
    auto *inside = llvm::BasicBlock::Create(emitter.context(), loop.var + ".inside", function);
    auto *after = llvm::BasicBlock::Create(emitter.context(), loop.var + ".after", function);
    builder.CreateCondBr(builder.CreateICmpSLT(index, extent), inside, after);
    builder.SetInsertPoint(inside);
    emitBody(builder.CreateAdd(min, index, loop.var, /*HasNUW=*/false, /*HasNSW=*/true));
    builder.CreateBr(after);
    builder.SetInsertPoint(after);
  } else {
    // A strided loop over the grid (block): correct for any extent. Each
    // thread of a block runs a strided thread loop its own number of times,
    // so a barrier inside one would be reached unevenly (a hang, or
    // undefined behaviour); the block's threads agree on block loops.
    if (!isBlock && containsBarrier(*loop.body))
      emitter.fail("NVPTX code generation: a barrier inside GPU thread loop '" + loop.var +
                       "', whose extent is not the block size of every launch of its kernel",
                   loop.source);
    llvm::Value *stride = emitter.emitCast(
        builder.CreateZExt(readSpecialRegister(emitter, isBlock, true, loop.gpuDim),
                           builder.getInt64Ty()),
        ScalarType::I64, type);
    llvm::Function *function = builder.GetInsertBlock()->getParent();
    llvm::BasicBlock *preheader = builder.GetInsertBlock();
    auto *header = llvm::BasicBlock::Create(emitter.context(), loop.var + ".header", function);
    auto *body = llvm::BasicBlock::Create(emitter.context(), loop.var + ".body", function);
    auto *exit = llvm::BasicBlock::Create(emitter.context(), loop.var + ".exit", function);
    builder.CreateBr(header);
    builder.SetInsertPoint(header);
    llvm::PHINode *offset = builder.CreatePHI(index->getType(), 2, loop.var + ".offset");
    offset->addIncoming(index, preheader);
    builder.CreateCondBr(builder.CreateICmpSLT(offset, extent), body, exit);
    builder.SetInsertPoint(body);
    emitBody(builder.CreateAdd(min, offset, loop.var, false, true));
    offset->addIncoming(builder.CreateAdd(offset, stride, "", false, true),
                        builder.GetInsertBlock());
    builder.CreateBr(header);
    builder.SetInsertPoint(exit);
  }
  threadLoopDepth_ -= !isBlock;
}

llvm::Value *NvptxTarget::allocate(LlvmEmitter &emitter, const ir::BufferInfo &buffer,
                                   llvm::Value *elementCount) {
  llvm::IRBuilder<> &builder = emitter.builder();
  llvm::Type *elementType = emitter.memoryType(buffer.element);
  uint64_t elementSize = scalarSize(buffer.element);
  auto *constantCount = llvm::dyn_cast<llvm::ConstantInt>(elementCount);
  if (buffer.memory == MemorySpace::Global) {
    emitter.fail("NVPTX code generation: global buffer '" + buffer.name +
                     "' allocated inside a kernel (the host allocates global temporaries)",
                 buffer.declared);
    return llvm::PoisonValue::get(builder.getPtrTy());
  }
  if (!constantCount) {
    // globalize_private_arrays moved the private arrays whose extents the
    // host knows and refused the others.
    emitter.fail("NVPTX code generation: " +
                     std::string(buffer.memory == MemorySpace::Register ? "private array '"
                                                                        : "shared buffer '") +
                     buffer.name + "' needs a size known at compile time",
                 buffer.declared);
    return llvm::PoisonValue::get(builder.getPtrTy());
  }
  uint64_t count = std::max<uint64_t>(1, constantCount->getZExtValue());
  if (buffer.memory == MemorySpace::Register) {
    llvm::Value *storage = emitter.createEntryAlloca(elementType, elementCount, buffer.name);
    builder.CreateMemSet(storage, builder.getInt8(0), builder.getInt64(count * elementSize),
                         llvm::MaybeAlign(elementSize));
    return storage;
  }
  if (threadLoopDepth_ > 0) {
    emitter.fail("NVPTX code generation: shared buffer '" + buffer.name +
                     "' allocated inside a thread loop",
                 buffer.declared);
    return llvm::PoisonValue::get(builder.getPtrTy());
  }
  auto *arrayType = llvm::ArrayType::get(elementType, count);
  auto *storage = new llvm::GlobalVariable(emitter.module(), arrayType, false,
                                           llvm::GlobalValue::InternalLinkage,
                                           llvm::UndefValue::get(arrayType), buffer.name, nullptr,
                                           llvm::GlobalValue::NotThreadLocal, kSharedAddressSpace);
  storage->setAlignment(llvm::Align(16));
  return storage;
}

void NvptxTarget::release(LlvmEmitter &, const ir::BufferInfo &, llvm::Value *) {}

void NvptxTarget::emitBarrier(LlvmEmitter &emitter) {
  emitter.builder().CreateIntrinsic(llvm::Intrinsic::nvvm_barrier0, {}, {});
}

Status checkGpuName(const std::string &gpu) {
  if (auto machine = nvptxMachine(gpu); !machine)
    return std::unexpected(machine.error());
  return {};
}

int computeCapabilityOf(const std::string &gpu) {
  int version = 0;
  if (gpu.starts_with("sm_") && std::sscanf(gpu.c_str() + 3, "%d", &version) == 1)
    return version;
  return 80;
}

// cp.async with a source size (the .s forms): the bytes of the valid
// elements are read, the rest of the copy zero-filled. 16 bytes go through
// L2 only (.cg), as a staged tile is read from shared memory, not L1; 4 and
// 8 bytes have only the .ca form.
void NvptxTarget::emitAsyncCopy(LlvmEmitter &emitter, const ir::AsyncCopy &copy) {
  llvm::IRBuilder<> &builder = emitter.builder();
  auto inSpace = [&](llvm::Value *pointer, unsigned space) {
    return pointer->getType()->getPointerAddressSpace() == space
               ? pointer
               : builder.CreateAddrSpaceCast(pointer, builder.getPtrTy(space));
  };
  llvm::Value *target =
      inSpace(emitter.elementAddress(*copy.target, copy.targetIndices, {}), kSharedAddressSpace);
  llvm::Value *source =
      inSpace(emitter.elementAddress(*copy.source, copy.sourceIndices, {}), kGlobalAddressSpace);
  llvm::Value *validBytes =
      builder.CreateMul(emitter.emitExprAs(*copy.valid, ScalarType::I32),
                        builder.getInt32(static_cast<uint32_t>(scalarSize(copy.target->element))));
  llvm::Intrinsic::ID intrinsic =
      copy.bytes() == 16  ? llvm::Intrinsic::nvvm_cp_async_cg_shared_global_16_s
      : copy.bytes() == 8 ? llvm::Intrinsic::nvvm_cp_async_ca_shared_global_8_s
                          : llvm::Intrinsic::nvvm_cp_async_ca_shared_global_4_s;
  builder.CreateIntrinsic(intrinsic, {}, {target, source, validBytes});
}

void NvptxTarget::emitAsyncCommit(LlvmEmitter &emitter) {
  emitter.builder().CreateIntrinsic(llvm::Intrinsic::nvvm_cp_async_commit_group, {}, {});
}

void NvptxTarget::emitAsyncWait(LlvmEmitter &emitter, int pending) {
  emitter.builder().CreateIntrinsic(llvm::Intrinsic::nvvm_cp_async_wait_group, {},
                                    {emitter.builder().getInt32(pending)});
}

// shfl.sync.bfly over the whole warp (every lane takes part: the IR reaches a
// shuffle in block-uniform control flow) on 32-bit pieces: an f32 as it is,
// a bool or i32 as an i32, an i64 or f64 as two halves.
llvm::Value *NvptxTarget::emitShuffleXor(LlvmEmitter &emitter, llvm::Value *value, ScalarType type,
                                         int laneMask) {
  llvm::IRBuilder<> &builder = emitter.builder();
  auto shuffle = [&](llvm::Intrinsic::ID intrinsic, llvm::Value *piece) {
    return builder.CreateIntrinsic(
        intrinsic, {},
        {builder.getInt32(-1), piece, builder.getInt32(laneMask), builder.getInt32(31)});
  };
  switch (type) {
  case ScalarType::F32:
    return shuffle(llvm::Intrinsic::nvvm_shfl_sync_bfly_f32, value);
  case ScalarType::I32:
    return shuffle(llvm::Intrinsic::nvvm_shfl_sync_bfly_i32, value);
  case ScalarType::Bool: {
    llvm::Value *word = builder.CreateZExt(value, builder.getInt32Ty());
    return builder.CreateICmpNE(shuffle(llvm::Intrinsic::nvvm_shfl_sync_bfly_i32, word),
                                builder.getInt32(0));
  }
  case ScalarType::I64:
  case ScalarType::F64: {
    llvm::Value *bits = builder.CreateBitCast(value, builder.getInt64Ty());
    llvm::Value *low = builder.CreateTrunc(bits, builder.getInt32Ty());
    llvm::Value *high = builder.CreateTrunc(builder.CreateLShr(bits, 32), builder.getInt32Ty());
    low = builder.CreateZExt(shuffle(llvm::Intrinsic::nvvm_shfl_sync_bfly_i32, low),
                             builder.getInt64Ty());
    high = builder.CreateZExt(shuffle(llvm::Intrinsic::nvvm_shfl_sync_bfly_i32, high),
                              builder.getInt64Ty());
    llvm::Value *joined = builder.CreateOr(low, builder.CreateShl(high, 32));
    return builder.CreateBitCast(joined, value->getType());
  }
  }
  return value;
}

bool NvptxTarget::usesLibraryMath(Builtin builtin) const { return ir::isMathRoutine(builtin); }

// libdevice's names: __nv_tanh, __nv_tanhf.
std::string NvptxTarget::libraryMathName(Builtin builtin, ScalarType type) const {
  return std::string("__nv_") + builtinName(builtin) + (type == ScalarType::F32 ? "f" : "");
}

std::optional<std::string> NvptxTarget::loopName(const ir::For &loop) const {
  auto found = loopNames_.find(&loop);
  if (found == loopNames_.end())
    return std::nullopt;
  return found->second;
}

void NvptxTarget::emitLaunch(LlvmEmitter &emitter, const ir::Launch &launch) {
  emitter.fail("NVPTX code generation: a launch inside device code", launch.source);
}

Expected<std::unique_ptr<llvm::Module>> emitNvptxModule(const ir::Function &function,
                                                        llvm::LLVMContext &context,
                                                        const std::string &gpu, bool optimize) {
  auto machine = nvptxMachine(gpu);
  if (!machine)
    return std::unexpected(machine.error());
  return buildModule(function, context, **machine, optimize);
}

Expected<std::string> nvptxLlvmText(const ir::Function &function, const std::string &gpu,
                                    bool optimize) {
  llvm::LLVMContext context;
  auto module = emitNvptxModule(function, context, gpu, optimize);
  if (!module)
    return std::unexpected(module.error());
  std::string text;
  llvm::raw_string_ostream stream(text);
  (*module)->print(stream, nullptr);
  return text;
}

Expected<std::string> compileToPtx(const ir::Function &function, const std::string &gpu,
                                   DeviceErrorSites *sites, LoopCensus *loops) {
  auto machine = nvptxMachine(gpu);
  if (!machine)
    return std::unexpected(machine.error());
  llvm::LLVMContext context;
  auto module = buildModule(function, context, **machine, true, sites);
  if (!module)
    return std::unexpected(module.error());
  if (loops)
    *loops = censusLoops(**module);
  llvm::SmallString<0> ptx;
  llvm::raw_svector_ostream stream(ptx);
  llvm::legacy::PassManager passes;
  if ((*machine)->addPassesToEmitFile(passes, stream, nullptr, llvm::CodeGenFileType::AssemblyFile))
    return makeError("the NVPTX target cannot emit PTX");
  passes.run(**module);
  return std::string(ptx.str());
}

std::string libdevicePath() {
  if (const char *path = std::getenv("LOOPC_LIBDEVICE"); path && *path)
    return path;
  std::error_code error;
  std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
  if (!error) {
    std::filesystem::path beside = self.parent_path() / "libdevice.10.bc";
    if (std::filesystem::exists(beside, error))
      return beside.string();
  }
  return LOOPC_LIBDEVICE_PATH;
}

} // namespace loopc::codegen
