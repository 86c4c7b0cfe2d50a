// The CPU specialization of the emitter and the layout of the CPU module (see
// CpuTarget.h).
#include "codegen/CpuTarget.h"

#include "codegen/CpuAsyncCopies.h"
#include "codegen/CpuPanel.h"
#include "codegen/CpuScratch.h"
#include "codegen/CpuThreadNest.h"
#include "codegen/CpuWarpShuffles.h"
#include "codegen/LlvmEmitter.h"
#include "ir/KernelNest.h"

#include <llvm/Support/raw_ostream.h>

#include <loopc/generated.h>

namespace loopc::codegen {

using namespace loopc::ir;

namespace {

std::string workerName(const std::string &kernel) { return "loopc.kernel." + kernel; }

// A kernel's loopc_cpu_kernel_cost (loopc/generated.h: three i64, zero until
// measured), shared by every launch of it.
llvm::GlobalVariable *kernelCost(LlvmEmitter &emitter, const ir::Launch &launch) {
  std::string name = workerName(launch.kernel) + ".cost";
  if (llvm::GlobalVariable *cost = emitter.module().getGlobalVariable(name, true))
    return cost;
  auto *type = llvm::ArrayType::get(llvm::Type::getInt64Ty(emitter.context()), 3);
  auto *cost = new llvm::GlobalVariable(emitter.module(), type, /*isConstant=*/false,
                                        llvm::GlobalValue::InternalLinkage,
                                        llvm::ConstantAggregateZero::get(type), name);
  cost->setAlignment(llvm::Align(8));
  return cost;
}

llvm::FunctionType *workerType(llvm::LLVMContext &context) {
  auto *ptr = llvm::PointerType::getUnqual(context);
  auto *i64 = llvm::Type::getInt64Ty(context);
  return llvm::FunctionType::get(llvm::Type::getVoidTy(context), {ptr, ptr, i64, i64}, false);
}

} // namespace

void CpuTarget::emitGpuLoop(LlvmEmitter &emitter, const ir::For &loop) {
  if (loop.forKind == ForKind::GpuThread) {
    emitCpuThreadNest(emitter, ir::threadLoopsAt(loop));
    return;
  }
  // Blocks not distributed by the worker (nested grids, code before
  // extract_kernels) run as plain loops.
  emitter.emitCountedLoop(loop.var, emitter.emitExpr(*loop.min), emitter.emitExpr(*loop.extent),
                          [&](llvm::Value *var) {
                            ScopedBindings scope(emitter);
                            scope.var(loop.var, var);
                            emitter.emitStmt(*loop.body);
                          });
}

llvm::Value *CpuTarget::allocate(LlvmEmitter &emitter, const ir::BufferInfo &buffer,
                                 llvm::Value *elementCount) {
  llvm::IRBuilder<> &builder = emitter.builder();
  llvm::Type *elementType = emitter.memoryType(buffer.element);
  uint64_t elementSize = scalarSize(buffer.element);
  if (buffer.memory == MemorySpace::Global) {
    // The host code's arrays (a whole-array reduction's accumulator and
    // partials, a local array) start zeroed, on the stack when small: a
    // reduction inside a serial loop made two heap allocations per
    // iteration.
    auto *constant = llvm::dyn_cast<llvm::ConstantInt>(elementCount);
    if (constant && constant->getZExtValue() <= kStackScratchBytes / elementSize) {
      llvm::Value *storage = emitter.createEntryAlloca(elementType, elementCount, buffer.name);
      builder.CreateMemSet(storage, builder.getInt8(0), constant->getZExtValue() * elementSize,
                           llvm::MaybeAlign(elementSize));
      return storage;
    }
    ScratchStorage scratch(emitter, elementType, elementSize, elementCount, buffer.name,
                           /*zeroed=*/true);
    scratches_.emplace(scratch.pointer(), scratch);
    return scratch.pointer();
  }
  llvm::Value *storage;
  llvm::Value *bytes = builder.CreateMul(elementCount, builder.getInt64(elementSize));
  if (llvm::isa<llvm::ConstantInt>(elementCount)) {
    storage = emitter.createEntryAlloca(elementType, elementCount, buffer.name);
  } else {
    ScratchStorage scratch(emitter, elementType, elementSize, elementCount, buffer.name,
                           /*zeroed=*/false);
    storage = scratch.pointer();
    scratches_.emplace(storage, scratch);
    // Heap storage the machine does not have is null (LlvmEmitter reports
    // it and skips the array's code): nothing to fill.
    bytes = builder.CreateSelect(scratch.failed(), builder.getInt64(0), bytes);
  }
  // Shared storage starts undefined (ir::Allocate): all-ones bytes, NaN or
  // -1, so a pass that reads it before writing fails the differential tests
  // here rather than only on a GPU.
  bool undefined = buffer.memory == MemorySpace::Shared;
  builder.CreateMemSet(storage, builder.getInt8(undefined ? 0xff : 0), bytes,
                       llvm::MaybeAlign(elementSize));
  return storage;
}

void CpuTarget::release(LlvmEmitter &emitter, const ir::BufferInfo &buffer, llvm::Value *storage) {
  auto scratch = scratches_.find(storage);
  if (scratch != scratches_.end()) {
    scratch->second.release(emitter, /*restoreStack=*/true);
    scratches_.erase(scratch);
  }
}

// Threads of a block run one after the other between barriers (see
// BarrierFission), so a barrier outside a thread nest orders nothing.
void CpuTarget::emitBarrier(LlvmEmitter &) {}

llvm::Value *CpuTarget::emitShuffleXor(LlvmEmitter &emitter, llvm::Value *value, ScalarType, int) {
  emitter.fail("CPU code generation: a warp shuffle was not rewritten through shared memory");
  return value;
}

// libm's names: tanh, tanhf.
std::string CpuTarget::libraryMathName(Builtin builtin, ScalarType type) const {
  return std::string(builtinName(builtin)) + (type == ScalarType::F32 ? "f" : "");
}

void CpuTarget::emitLaunch(LlvmEmitter &emitter, const ir::Launch &launch) {
  llvm::IRBuilder<> &builder = emitter.builder();
  llvm::Function *worker = emitter.module().getFunction(workerName(launch.kernel));
  if (!worker) {
    emitter.fail("CPU code generation: launch of unknown kernel '" + launch.kernel + "'",
                 launch.source);
    return;
  }
  llvm::Value *buffers = emitter.createEntryAlloca(
      builder.getPtrTy(), builder.getInt64(std::max<size_t>(1, launch.buffers.size())),
      launch.kernel + ".buffers");
  for (size_t i = 0; i < launch.buffers.size(); ++i)
    builder.CreateStore(emitter.lookupBuffer(*launch.buffers[i], launch.source),
                        builder.CreateConstInBoundsGEP1_64(builder.getPtrTy(), buffers, i));
  llvm::Value *scalars = emitter.createEntryAlloca(
      builder.getInt64Ty(), builder.getInt64(std::max<size_t>(1, launch.scalars.size())),
      launch.kernel + ".scalars");
  for (size_t i = 0; i < launch.scalars.size(); ++i) {
    const ir::ExprNode &scalar = *launch.scalars[i];
    builder.CreateStore(emitter.toMemory(emitter.emitExpr(scalar), scalar.type),
                        builder.CreateConstInBoundsGEP1_64(builder.getInt64Ty(), scalars, i));
  }
  // The units of parallel work: blocks, or rows of a row sweep (every
  // block and thread index but x).
  llvm::Value *unitCount = builder.getInt64(1);
  auto sweep = rowSweeps_.find(launch.kernel);
  bool sweeps = sweep != rowSweeps_.end() && !sweep->second.spansBlocks;
  for (size_t dim = sweeps ? 1 : 0; dim < launch.grid.size(); ++dim) {
    unitCount =
        builder.CreateMul(unitCount, emitter.emitExprAs(*launch.grid[dim], ScalarType::I64));
    if (sweeps)
      unitCount =
          builder.CreateMul(unitCount, emitter.emitExprAs(*launch.block[dim], ScalarType::I64));
  }
  emitLaunchCall(emitter, worker, buffers, scalars, unitCount, kernelCost(emitter, launch));
}

// A launch the pool has measured to be short runs here, in the calling
// thread, without a call into the runtime: the host code then runs the
// kernel as a C compiler would run the loop (LLVM may inline it). The test is
// the pool's own (runsAlone in CpuThreadPool.cpp, on the figures it keeps in
// `cost`): one unit, or units measured alone to take less than
// LOOPC_CPU_INLINE_BELOW_PICOSECONDS in all; and it holds for as many
// launches as the pool has left before it times one again
// (alone_launches_until_timed), each taking one of them, so the pool still
// sees every 64th launch: it times it, and it stops launches after a Ctrl-C.
// The rest, and a launch of no units, go to loopc_cpu_launch_kernel.
// (Launches of a few points take about a third less time so, 1-D Jacobi's
// launches of 4000 points a little less: docs/benchmarks.md, CPU history.)
void CpuTarget::emitLaunchCall(LlvmEmitter &emitter, llvm::Function *worker, llvm::Value *buffers,
                               llvm::Value *scalars, llvm::Value *unitCount,
                               llvm::GlobalVariable *cost) {
  llvm::IRBuilder<> &builder = emitter.builder();
  llvm::LLVMContext &context = emitter.context();
  llvm::Type *i64 = builder.getInt64Ty();
  llvm::Function *function = builder.GetInsertBlock()->getParent();
  auto *inHere = llvm::BasicBlock::Create(context, "launch.here", function);
  auto *onPool = llvm::BasicBlock::Create(context, "launch.pool", function);
  auto *done = llvm::BasicBlock::Create(context, "launch.done", function);
  auto field = [&](int index) {
    return builder.CreateConstInBoundsGEP2_64(cost->getValueType(), cost, 0, index);
  };
  auto relaxedLoad = [&](llvm::Value *address, const char *name) {
    llvm::LoadInst *load = builder.CreateLoad(i64, address, name);
    load->setAtomic(llvm::AtomicOrdering::Monotonic);
    load->setAlignment(llvm::Align(8));
    return load;
  };
  llvm::Value *untilPtr = field(2);
  llvm::Value *alone = relaxedLoad(field(0), "cost.alone");
  llvm::Value *until = relaxedLoad(untilPtr, "cost.until");
  llvm::Value *some = builder.CreateICmpSGT(unitCount, builder.getInt64(0));
  llvm::Value *oneUnit = builder.CreateICmpEQ(unitCount, builder.getInt64(1));
  // alone <= limit / units, the division only where there are units.
  llvm::Value *safeUnits = builder.CreateSelect(some, unitCount, builder.getInt64(1));
  llvm::Value *shortAlone = builder.CreateAnd(
      builder.CreateICmpNE(alone, builder.getInt64(0)),
      builder.CreateICmpSLE(
          alone,
          builder.CreateSDiv(builder.getInt64(LOOPC_CPU_INLINE_BELOW_PICOSECONDS), safeUnits)));
  llvm::Value *here =
      builder.CreateAnd(builder.CreateAnd(some, builder.CreateICmpSGT(until, builder.getInt64(0))),
                        builder.CreateOr(oneUnit, shortAlone));
  builder.CreateCondBr(here, inHere, onPool);

  builder.SetInsertPoint(inHere);
  llvm::StoreInst *taken =
      builder.CreateStore(builder.CreateSub(until, builder.getInt64(1)), untilPtr);
  taken->setAtomic(llvm::AtomicOrdering::Monotonic);
  taken->setAlignment(llvm::Align(8));
  builder.CreateCall(worker, {buffers, scalars, builder.getInt64(0), unitCount});
  builder.CreateBr(done);

  builder.SetInsertPoint(onPool);
  auto *ptr = builder.getPtrTy();
  llvm::FunctionCallee parallelFor = emitter.module().getOrInsertFunction(
      "loopc_cpu_launch_kernel",
      llvm::FunctionType::get(builder.getVoidTy(), {ptr, ptr, ptr, i64, ptr}, false));
  builder.CreateCall(parallelFor, {worker, buffers, scalars, unitCount, cost});
  builder.CreateBr(done);
  builder.SetInsertPoint(done);
}

namespace {

void emitEntry(LlvmEmitter &emitter, const ir::Function &function) {
  llvm::LLVMContext &context = emitter.context();
  auto *ptr = llvm::PointerType::getUnqual(context);
  auto *entry = llvm::Function::Create(
      llvm::FunctionType::get(llvm::Type::getVoidTy(context), {ptr, ptr}, false),
      llvm::Function::ExternalLinkage, kCpuEntryName, emitter.module());
  llvm::IRBuilder<> &builder = emitter.builder();
  builder.SetInsertPoint(llvm::BasicBlock::Create(context, "entry", entry));
  ScopedBindings scope(emitter);
  for (size_t i = 0; i < function.buffers.size(); ++i) {
    llvm::Value *slot = builder.CreateConstInBoundsGEP1_64(ptr, entry->getArg(0), i);
    scope.buffer(function.buffers[i].get(),
                 builder.CreateLoad(ptr, slot, function.buffers[i]->name));
  }
  bindScalarSlots(emitter, scope, function.scalars, entry->getArg(1));
  emitter.emitStmt(*function.body);
  builder.CreateRetVoid();
}

// A worker's copy of a column's panel (CpuPanel.h): allocated when the
// worker starts, filled when a block of another column than the last one
// comes, read by the blocks in place of the array.
class PanelCopy {
public:
  PanelCopy(LlvmEmitter &emitter, const ColumnPanel &panel, const ir::Stmt &blockBody)
      : emitter_(emitter), builder_(emitter.builder()), panel_(panel),
        blockBody_(readFromPanel(panel, blockBody)), copy_(copyPanel(panel)) {
    llvm::Type *i64 = builder_.getInt64Ty();
    llvm::Value *bytes =
        builder_.getInt64(panel.rowLength * static_cast<int64_t>(scalarSize(panel.array->element)));
    for (size_t d = 0; d + 1 < panel.array->shape.size(); ++d)
      bytes =
          builder_.CreateMul(bytes, emitter.emitExprAs(*panel.array->shape[d], ScalarType::I64));
    // A panel of a few KiB stays in L1 in place; past kLargestPanel it
    // would not stay in L2 either way, and the copy is not made.
    llvm::Value *worth =
        builder_.CreateAnd(builder_.CreateICmpUGE(bytes, builder_.getInt64(kSmallestPanel)),
                           builder_.CreateICmpULE(bytes, builder_.getInt64(kLargestPanel)));
    // Rows of a cache line each start on one: malloc's 16-byte alignment
    // split every vector load of matmul's panel across two lines.
    llvm::FunctionCallee alignedAlloc = emitter.module().getOrInsertFunction(
        "aligned_alloc", llvm::FunctionType::get(builder_.getPtrTy(), {i64, i64}, false));
    llvm::BasicBlock *before = builder_.GetInsertBlock();
    llvm::BasicBlock *allocated = newBlock("panel.allocate"), *joined = newBlock("panel.ready");
    builder_.CreateCondBr(worth, allocated, joined);
    builder_.SetInsertPoint(allocated);
    llvm::Value *wholeLines = builder_.CreateAnd(
        builder_.CreateAdd(bytes, builder_.getInt64(kCacheLine - 1)), ~(kCacheLine - 1));
    llvm::Value *storage = builder_.CreateCall(
        alignedAlloc, {builder_.getInt64(kCacheLine), wholeLines}, panel.packed->name);
    builder_.CreateBr(joined);
    builder_.SetInsertPoint(joined);
    auto *phi = builder_.CreatePHI(builder_.getPtrTy(), 2, panel.packed->name);
    phi->addIncoming(llvm::ConstantPointerNull::get(builder_.getPtrTy()), before);
    phi->addIncoming(storage, allocated);
    storage_ = phi;
    // No column is in the copy yet: column indices are never negative.
    packedColumn_ = emitter.createEntryAlloca(i64, builder_.getInt64(1), "panel.column");
    builder_.CreateStore(builder_.getInt64(-1), packedColumn_);
  }

  // One block (its grid indices bound): from the copy when there is one,
  // else from the array.
  void emitBlock(const ir::StmtNode &inPlace) {
    llvm::BasicBlock *copied = newBlock("panel.use"), *direct = newBlock("panel.none"),
                     *done = newBlock("panel.done");
    builder_.CreateCondBr(builder_.CreateIsNotNull(storage_), copied, direct);
    builder_.SetInsertPoint(copied);
    {
      ScopedBindings scope(emitter_);
      scope.buffer(panel_.packed.get(), storage_);
      llvm::Value *column = emitter_.emitExprAs(
          ir::Var(panel_.xBlock->min->type, panel_.xBlock->var), ScalarType::I64);
      llvm::BasicBlock *fill = newBlock("panel.fill"), *filled = newBlock("panel.filled");
      builder_.CreateCondBr(
          builder_.CreateICmpNE(column, builder_.CreateLoad(builder_.getInt64Ty(), packedColumn_)),
          fill, filled);
      builder_.SetInsertPoint(fill);
      emitter_.emitStmt(*copy_);
      builder_.CreateStore(column, packedColumn_);
      builder_.CreateBr(filled);
      builder_.SetInsertPoint(filled);
      emitter_.emitStmt(*blockBody_);
    }
    builder_.CreateBr(done);
    builder_.SetInsertPoint(direct);
    emitter_.emitStmt(inPlace);
    builder_.CreateBr(done);
    builder_.SetInsertPoint(done);
  }

  void release() {
    llvm::FunctionCallee free = emitter_.module().getOrInsertFunction(
        "free", llvm::FunctionType::get(builder_.getVoidTy(), {builder_.getPtrTy()}, false));
    builder_.CreateCall(free, {storage_});
  }

private:
  static constexpr int64_t kSmallestPanel = 16 << 10, kLargestPanel = 4 << 20;
  static constexpr uint64_t kCacheLine = 64;

  llvm::BasicBlock *newBlock(const char *name) {
    return llvm::BasicBlock::Create(emitter_.context(), name,
                                    builder_.GetInsertBlock()->getParent());
  }

  LlvmEmitter &emitter_;
  llvm::IRBuilder<> &builder_;
  const ColumnPanel &panel_;
  ir::Stmt blockBody_, copy_;
  llvm::Value *storage_ = nullptr;
  llvm::AllocaInst *packedColumn_ = nullptr;
};

// The worker unpacks its arguments and calls the body function, whose buffer
// parameters are noalias (distinct arrays): after inlining, LLVM keeps that as
// alias scopes, which lets it vectorize without run-time overlap checks.
void emitKernel(LlvmEmitter &emitter, const KernelFunc &kernel, const RowSweep *sweep) {
  llvm::LLVMContext &context = emitter.context();
  llvm::IRBuilder<> &builder = emitter.builder();
  auto *ptr = builder.getPtrTy();
  auto *i64 = builder.getInt64Ty();

  std::vector<llvm::Type *> bodyParams(kernel.buffers.size(), ptr);
  for (const ScalarParam &scalar : kernel.scalars)
    bodyParams.push_back(emitter.valueType(scalar.type));
  bodyParams.push_back(i64);
  bodyParams.push_back(i64);
  auto *body = llvm::Function::Create(
      llvm::FunctionType::get(builder.getVoidTy(), bodyParams, false),
      llvm::Function::InternalLinkage, workerName(kernel.name) + ".body", emitter.module());
  for (size_t i = 0; i < kernel.buffers.size(); ++i)
    body->addParamAttr(static_cast<unsigned>(i), llvm::Attribute::NoAlias);

  llvm::Function *worker = emitter.module().getFunction(workerName(kernel.name));
  builder.SetInsertPoint(llvm::BasicBlock::Create(context, "entry", worker));
  std::vector<llvm::Value *> args;
  for (size_t i = 0; i < kernel.buffers.size(); ++i)
    args.push_back(
        builder.CreateLoad(ptr, builder.CreateConstInBoundsGEP1_64(ptr, worker->getArg(0), i)));
  {
    ScopedBindings unpacked(emitter);
    bindScalarSlots(emitter, unpacked, kernel.scalars, worker->getArg(1));
    for (const ScalarParam &scalar : kernel.scalars)
      args.push_back(emitter.emitExpr(ir::Var(scalar.type, scalar.name)));
  }
  args.push_back(worker->getArg(2));
  args.push_back(worker->getArg(3));
  builder.CreateCall(body, args);
  builder.CreateRetVoid();

  builder.SetInsertPoint(llvm::BasicBlock::Create(context, "entry", body));
  ScopedBindings scope(emitter);
  for (size_t i = 0; i < kernel.buffers.size(); ++i) {
    body->getArg(static_cast<unsigned>(i))->setName(kernel.buffers[i]->name);
    scope.buffer(kernel.buffers[i].get(), body->getArg(static_cast<unsigned>(i)));
  }
  for (size_t i = 0; i < kernel.scalars.size(); ++i) {
    llvm::Argument *arg = body->getArg(static_cast<unsigned>(kernel.buffers.size() + i));
    arg->setName(kernel.scalars[i].name);
    scope.var(kernel.scalars[i].name, arg);
  }
  llvm::Value *unitBegin = body->getArg(static_cast<unsigned>(body->arg_size() - 2));
  llvm::Value *unitEnd = body->getArg(static_cast<unsigned>(body->arg_size() - 1));

  // The units of parallel work are the iterations of `units`, the outermost
  // GpuBlock nest (the grid) or a row sweep's rows: linear unit u is the
  // iteration whose innermost loop varies fastest.
  if (sweep && sweep->spansBlocks) {
    scope.var(RowSweep::kSpanFirst, unitBegin);
    scope.var(RowSweep::kSpanCount, builder.CreateSub(unitEnd, unitBegin));
    emitCpuThreadNest(emitter, {sweep->row->as<ir::For>()});
    builder.CreateRetVoid();
    return;
  }
  std::vector<const ir::For *> grid;
  ir::Stmt inside = kernel.body; // what each unit runs
  if (std::optional<ir::KernelNest> nest = ir::kernelNestAt(kernel.body)) {
    grid = nest->blocks;
    inside = nest->threadNest;
  }
  // y advancing fastest, when blocks of a column share a panel (see
  // runsColumnByColumn; matmul ran faster so, the more the larger:
  // docs/benchmarks.md, CPU history).
  if (!sweep && runsColumnByColumn(kernel))
    std::ranges::stable_partition(grid, [](const ir::For *loop) { return loop->gpuDim != 1; });
  const std::vector<const ir::For *> &units = sweep ? sweep->rows : grid;
  // Under bounds checks an access not proven in range is checked on the
  // program's arrays, where the panel's copy would read it.
  std::optional<ColumnPanel> panel;
  if (!sweep && emitter.accessesUncheckedIn(kernel.body))
    panel = columnPanelOf(kernel);
  std::optional<PanelCopy> panelCopy;
  if (panel)
    panelCopy.emplace(emitter, *panel, inside);
  auto emitUnit = [&] {
    if (panelCopy) {
      panelCopy->emitBlock(*inside);
      return;
    }
    if (!sweep) {
      emitter.emitStmt(*inside);
      return;
    }
    if (sweep->row) {
      emitCpuThreadNest(emitter, {sweep->row->as<ir::For>()});
      return;
    }
    const ir::For &xBlock = *sweep->xBlock;
    emitter.emitCountedLoop(xBlock.var, emitter.emitExpr(*xBlock.min),
                            emitter.emitExpr(*xBlock.extent), [&](llvm::Value *var) {
                              ScopedBindings scope(emitter);
                              scope.var(xBlock.var, var);
                              emitCpuThreadNest(emitter, {sweep->xThread});
                            });
  };
  // The unit's position along each loop is decoded from unitBegin once,
  // then advanced like an odometer: a division per unit would cost as much
  // as a small block's work.
  std::vector<llvm::Value *> mins, extents, positions;
  llvm::Value *rest = unitBegin;
  for (size_t i = units.size(); i-- > 0;) {
    llvm::Value *extent = emitter.emitExprAs(*units[i]->extent, ScalarType::I64);
    llvm::Value *position =
        emitter.createEntryAlloca(i64, builder.getInt64(1), units[i]->var + ".position");
    builder.CreateStore(builder.CreateSRem(rest, extent), position);
    rest = builder.CreateSDiv(rest, extent);
    mins.insert(mins.begin(), emitter.emitExprAs(*units[i]->min, ScalarType::I64));
    extents.insert(extents.begin(), extent);
    positions.insert(positions.begin(), position);
  }
  emitter.emitCountedLoop(
      "unit", unitBegin, builder.CreateSub(unitEnd, unitBegin), [&](llvm::Value *) {
        {
          ScopedBindings blockScope(emitter);
          for (size_t i = 0; i < units.size(); ++i) {
            llvm::Value *index = builder.CreateAdd(mins[i], builder.CreateLoad(i64, positions[i]));
            llvm::Value *var = emitter.emitCast(index, ScalarType::I64, units[i]->min->type);
            var->setName(units[i]->var);
            blockScope.var(units[i]->var, var);
          }
          emitUnit();
        }
        llvm::Value *carry = builder.getTrue();
        for (size_t i = units.size(); i-- > 0;) {
          llvm::Value *position = builder.CreateLoad(i64, positions[i]);
          llvm::Value *next = builder.CreateAdd(position, builder.CreateZExt(carry, i64));
          llvm::Value *wraps = builder.CreateICmpEQ(next, extents[i]);
          builder.CreateStore(builder.CreateSelect(wraps, builder.getInt64(0), next), positions[i]);
          carry = wraps;
        }
      });
  if (panelCopy)
    panelCopy->release();
  builder.CreateRetVoid();
}

} // namespace

Expected<std::unique_ptr<llvm::Module>>
emitCpuModule(const ir::Function &input, llvm::LLVMContext &context, DeviceErrorSites *sites) {
  const ir::Function function = copyAsyncCopiesInPlace(exchangeShufflesThroughShared(input));
  auto module = std::make_unique<llvm::Module>(function.name, context);
  std::map<std::string, RowSweep> rowSweeps;
  for (const KernelFunc &kernel : function.kernels)
    if (std::optional<RowSweep> sweep = rowSweepOf(kernel))
      rowSweeps.emplace(kernel.name, *sweep);
  CpuTarget target(rowSweeps);
  LlvmEmitter emitter(*module, target);
  emitter.setBoundsChecks(function);
  for (const KernelFunc &kernel : function.kernels)
    llvm::Function::Create(workerType(context), llvm::Function::ExternalLinkage,
                           workerName(kernel.name), *module);
  auto *recordType = llvm::ArrayType::get(llvm::Type::getInt64Ty(context), 3);
  auto *errorWord = new llvm::GlobalVariable(
      *module, recordType, /*isConstant=*/false, llvm::GlobalValue::ExternalLinkage,
      llvm::ConstantAggregateZero::get(recordType), kDeviceErrorName);
  emitter.setDeviceErrorRecord(errorWord, function.source);
  emitter.setBoundsCheckBody(function.body);
  emitEntry(emitter, function);
  for (const KernelFunc &kernel : function.kernels) {
    emitter.setDeviceErrorRecord(errorWord, kernel.source);
    emitter.setBoundsCheckBody(kernel.body);
    auto sweep = rowSweeps.find(kernel.name);
    emitKernel(emitter, kernel, sweep == rowSweeps.end() ? nullptr : &sweep->second);
  }
  if (auto finished = emitter.finish("CPU code generation", function.source, sites); !finished)
    return std::unexpected(finished.error());
  return module;
}

} // namespace loopc::codegen
