// Ahead-of-time libraries (see CpuLibrary.h). Each kernel's CPU module
// (CpuTarget.h) keeps its code but hides it: everything it defines becomes
// internal, and a C function named after the kernel is added that checks and
// packs its arguments into the entry's buffer and scalar arrays, runs the
// entry and turns the device error word into a status and message. With GPU
// code, the module also gets the GPU host code of each architecture
// (GpuHostCode.h) and its PTX, and the C function first asks the runtime
// whether to run it on the GPU. The modules are then linked into one,
// optimized and emitted as a PIC object.
#include "codegen/CpuLibrary.h"

#include "codegen/CpuTarget.h"
#include "codegen/GpuHostCode.h"
#include "codegen/LlvmEmitter.h"
#include "codegen/NvptxTarget.h"
#include "codegen/Optimize.h"
#include "loopc/runtime.h"

#include <llvm/IR/LegacyPassManager.h>
#include <llvm/Linker/Linker.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/TargetParser/SubtargetFeature.h>

#include <algorithm>
#include <cctype>
#include <dlfcn.h>
#include <functional>
#include <map>
#include <mutex>
#include <set>

namespace loopc::codegen {
namespace {

// The longest message of a run-time fault, with the values it quotes.
constexpr uint64_t kMessageBytes = 1024;

// The C type of a kernel parameter in the generated header.
std::string cType(ScalarType type) {
  switch (type) {
  case ScalarType::I32:
    return "int32_t";
  case ScalarType::I64:
    return "int64_t";
  case ScalarType::F32:
    return "float";
  case ScalarType::F64:
    return "double";
  case ScalarType::Bool:
    return "bool";
  }
  return "void";
}

bool passedByPointer(const VarDecl &param) { return param.isArray() || param.isScalarOutput(); }

// A kernel's code for one GPU architecture as the object embeds it.
struct EmbeddedGpuCode {
  const LibraryGpuCode *code = nullptr;
  std::string ptx = {};
  DeviceErrorSites kernelSites = {}; // of the PTX's kernels
  llvm::Function *host = nullptr;
  DeviceErrorSites hostSites = {}; // of the host code
};

// A kernel's GPU code in the object: each architecture's, and the constant
// loopc_gpu_program (loopc/generated.h) describing them, which the C
// functions of the kernel share.
struct EmbeddedGpu {
  std::vector<EmbeddedGpuCode> codes = {};
  llvm::GlobalVariable *program = nullptr;
};

llvm::GlobalVariable *constantGlobal(llvm::Module &module, llvm::Constant *value,
                                     const std::string &name) {
  return new llvm::GlobalVariable(module, value->getType(), true, llvm::GlobalValue::PrivateLinkage,
                                  value, name);
}

llvm::GlobalVariable *gpuProgram(llvm::Module &module, const KernelDecl &kernel,
                                 const std::vector<EmbeddedGpuCode> &codes) {
  llvm::IRBuilder<> builder(module.getContext());
  auto *i32 = builder.getInt32Ty();
  auto *ptr = builder.getPtrTy();
  auto string = [&](const std::string &text, const std::string &name) {
    return builder.CreateGlobalString(text, name, 0, &module);
  };
  auto *imageType = llvm::StructType::get(i32, ptr, ptr, i32);
  std::vector<llvm::Constant *> images;
  for (const EmbeddedGpuCode &code : codes) {
    std::vector<llvm::Constant *> names;
    for (const ir::KernelFunc &device : code.code->function.kernels)
      names.push_back(string(device.name, "loopc.gpu.kernel"));
    auto *namesType = llvm::ArrayType::get(ptr, names.size());
    images.push_back(llvm::ConstantStruct::get(
        imageType,
        {builder.getInt32(static_cast<uint32_t>(code.code->computeCapability)),
         string(code.ptx, "loopc.gpu.ptx"),
         names.empty() ? static_cast<llvm::Constant *>(llvm::ConstantPointerNull::get(ptr))
                       : constantGlobal(module, llvm::ConstantArray::get(namesType, names),
                                        "loopc.gpu.kernels"),
         builder.getInt32(static_cast<uint32_t>(names.size()))}));
  }
  auto *imagesType = llvm::ArrayType::get(imageType, images.size());
  auto *programType = llvm::StructType::get(ptr, ptr, i32, ptr);
  llvm::Constant *program = llvm::ConstantStruct::get(
      programType,
      {string(kernel.name, "loopc.gpu.name"),
       constantGlobal(module, llvm::ConstantArray::get(imagesType, images), "loopc.gpu.images"),
       builder.getInt32(static_cast<uint32_t>(images.size())),
       llvm::ConstantPointerNull::get(ptr)});
  return new llvm::GlobalVariable(module, programType, false, llvm::GlobalValue::InternalLinkage,
                                  program, "loopc.gpu.program");
}

// The two C functions of a kernel: one taking arrays as host pointers, and
// one (named with "_buffers") taking a loopc_buffer for each.
enum class ArgumentForm { Pointers, Buffers };

// An array (or scalar result) argument, checked: its pointer and its size
// in bytes (0 when it has no elements).
struct CheckedArgument {
  const VarDecl *param = nullptr;
  llvm::Value *pointer = nullptr; // a loopc_buffer in the buffers form
  llvm::Value *bytes = nullptr;
  // An `out` array the kernel writes whole before reading it
  // (ir::Function::writtenWholeFirst): nothing to clear before the call.
  bool writtenWhole = false;

  int intent() const { // as the runtime's calls number them (loopc/generated.h)
    if (param->intent == Intent::Out)
      return writtenWhole ? 3 : 1;
    return param->intent == Intent::In ? 0 : 2;
  }
};

// Names C and C++ reserve to the implementation (`_Bool`, `_Generic`,
// `__STDC__`): containing `__`, or beginning with `_` and an uppercase
// letter.
bool isImplementationName(const std::string &name) {
  return (name.size() > 1 && name[0] == '_' && std::isupper(static_cast<unsigned char>(name[1]))) ||
         name.find("__") != std::string::npos;
}

// Words a C or C++ compiler reads as its own (and C's entry point).
bool isKeywordInC(const std::string &name) {
  static const std::set<std::string> reserved = {
      "alignas", "alignof", "and", "asm", "auto", "bool", "break", "case", "catch", "char", "class",
      "concept", "const", "consteval", "constexpr", "constinit", "const_cast", "continue",
      "co_await", "co_return", "co_yield", "decltype", "default", "delete", "do", "double",
      "dynamic_cast", "else", "enum", "explicit", "export", "extern", "false", "float", "for",
      "friend", "goto", "if", "inline", "int", "long", "main", "mutable", "namespace", "new",
      "noexcept", "not", "nullptr", "operator", "or", "private", "protected", "public", "register",
      "reinterpret_cast", "requires", "restrict", "return", "short", "signed", "sizeof", "static",
      "static_assert", "static_cast", "struct", "switch", "template", "this", "thread_local",
      "throw", "true", "try", "typedef", "typeid", "typename", "union", "unsigned", "using",
      "virtual", "void", "volatile", "wchar_t", "while", "xor",
      // C++'s other alternative tokens
      "and_eq", "bitand", "bitor", "compl", "not_eq", "or_eq", "xor_eq", "char8_t", "char16_t",
      "char32_t",
      // C's own, and GNU C's
      "typeof", "typeof_unqual"};
  return reserved.contains(name);
}

bool isReservedInC(const std::string &name) {
  return isKeywordInC(name) || isImplementationName(name);
}

Expected<std::unique_ptr<llvm::TargetMachine>> objectMachine(const std::string &cpu) {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
  std::string triple = llvm::sys::getProcessTriple();
  std::string problem;
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(triple, problem);
  if (!target)
    return makeError("cannot target the host CPU (" + triple + "): " + problem);
  std::string cpuName = cpu == "native" ? llvm::sys::getHostCPUName().str() : cpu;
  llvm::SubtargetFeatures features;
  if (cpu == "native")
    for (const auto &feature : llvm::sys::getHostCPUFeatures())
      features.AddFeature(feature.first(), feature.second);
  avoidMiscompiledCpuFeatures(features);
  // Asked of a generic subtarget: one made for an unknown CPU name prints
  // LLVM's own warning to stderr first.
  std::unique_ptr<llvm::MCSubtargetInfo> known(target->createMCSubtargetInfo(triple, "", ""));
  if (!known || !known->isCPUStringValid(cpuName))
    return makeError("unknown CPU '" + cpu + "' for " + triple +
                     " (give an LLVM CPU name such as x86-64-v3, or native)");
  llvm::TargetOptions options;
  std::unique_ptr<llvm::TargetMachine> machine(
      target->createTargetMachine(triple, cpuName, features.getString(), options, llvm::Reloc::PIC_,
                                  std::nullopt, llvm::CodeGenOptLevel::Aggressive));
  if (!machine)
    return makeError("cannot create a target machine for " + triple);
  return machine;
}

// The integer types in which `extent` does arithmetic that may overflow
// (LlvmEmitter::setOverflowFlag), in words: an i32 parameter's n * n is i32
// arithmetic, which the kernel's code computes in 32 bits too.
std::string overflowingTypes(const ir::ExprNode &extent) {
  bool i32 = false, i64 = false;
  std::function<void(const ir::ExprNode &)> visit = [&](const ir::ExprNode &expr) {
    auto note = [&](ScalarType type) {
      i32 |= type == ScalarType::I32;
      i64 |= type == ScalarType::I64;
    };
    if (auto *binary = expr.as<ir::Binary>()) {
      if (binary->op == ir::BinaryOpKind::Add || binary->op == ir::BinaryOpKind::Sub ||
          binary->op == ir::BinaryOpKind::Mul)
        note(binary->type);
      visit(*binary->lhs);
      visit(*binary->rhs);
    } else if (auto *unary = expr.as<ir::Unary>()) {
      note(unary->type);
      visit(*unary->operand);
    } else if (auto *cast = expr.as<ir::Cast>()) {
      visit(*cast->operand);
    } else if (auto *call = expr.as<ir::Call>()) {
      note(call->type);
      for (const ir::Expr &arg : call->args)
        visit(*arg);
    } else if (auto *select = expr.as<ir::Select>()) {
      visit(*select->cond);
      visit(*select->thenValue);
      visit(*select->elseValue);
    }
  };
  visit(extent);
  if (i32 && i64)
    return "32-bit or 64-bit integers";
  return i32 ? "32-bit integers" : "64-bit integers";
}

// Emits the C function of one kernel into its CPU module.
class WrapperEmitter {
public:
  WrapperEmitter(llvm::Module &module, const LibraryKernel &kernel, const SourceManager &sources,
                 ArgumentForm form)
      : module_(module), kernel_(kernel), sources_(sources), form_(form), emitter_(module, target_),
        builder_(emitter_.builder()) {}

  Status emit(const DeviceErrorSites &kernelSites, const EmbeddedGpu &gpu) {
    const KernelDecl &declaration = *kernel_.declaration;
    llvm::LLVMContext &context = module_.getContext();
    std::vector<llvm::Type *> paramTypes;
    for (const VarDeclPtr &param : declaration.params)
      paramTypes.push_back(passedByPointer(*param) ? builder_.getPtrTy()
                           : param->type.element == ScalarType::Bool
                               ? builder_.getInt8Ty()
                               : emitter_.valueType(param->type.element));
    paramTypes.insert(paramTypes.end(), declaration.sizes.size(), builder_.getInt64Ty());
    std::string symbol =
        form_ == ArgumentForm::Buffers ? bufferFunctionName(kernel_.symbol) : kernel_.symbol;
    function_ =
        llvm::Function::Create(llvm::FunctionType::get(builder_.getInt32Ty(), paramTypes, false),
                               llvm::Function::ExternalLinkage, symbol, module_);
    if (function_->getName() != symbol)
      return makeError("kernel '" + declaration.name + "': its C name '" + symbol +
                           "' clashes with a symbol of its code",
                       declaration.range);
    builder_.SetInsertPoint(llvm::BasicBlock::Create(context, "entry", function_));
    callRuntime("loopc_cpu_call_lock", {});

    // Extents are evaluated by the emitter, whose integer divisions report to
    // a word of their own.
    auto *i32 = builder_.getInt32Ty();
    auto *extentError =
        new llvm::GlobalVariable(module_, i32, false, llvm::GlobalValue::InternalLinkage,
                                 builder_.getInt32(0), "loopc.extent_error");
    builder_.CreateStore(builder_.getInt32(0), extentError);
    emitter_.setDeviceErrorRecord(extentError, declaration.range);

    ScopedBindings scope(emitter_);
    bindScalars(scope);
    std::vector<CheckedArgument> arguments;
    for (const ir::Buffer &buffer : kernel_.function.buffers)
      arguments.push_back(checkedBuffer(*buffer));
    failOnDeviceError(extentError, emitter_.deviceErrorSites(), LOOPC_ERROR_INVALID_ARGUMENT);
    if (!gpu.codes.empty())
      if (Status embedded = emitGpuPath(arguments, gpu); !embedded)
        return embedded;

    // The arrays' host memory (a buffer's, or a copy of it), the `out` ones
    // zeroed but those the kernel writes whole before reading (a pass over
    // memory as long as a copy kernel's own); the entry's arguments packed,
    // and run.
    std::vector<llvm::Value *> bufferPointers;
    for (size_t i = 0; i < arguments.size(); ++i) {
      llvm::Value *host =
          form_ == ArgumentForm::Buffers ? hostMemory(arguments, i) : arguments[i].pointer;
      if (arguments[i].intent() == 1)
        builder_.CreateMemSet(host, builder_.getInt8(0), arguments[i].bytes, llvm::MaybeAlign(1));
      bufferPointers.push_back(host);
    }
    auto *ptr = builder_.getPtrTy();
    llvm::Value *buffers = emitter_.createEntryAlloca(
        ptr, builder_.getInt64(std::max<size_t>(1, bufferPointers.size())), "buffers");
    for (size_t i = 0; i < bufferPointers.size(); ++i)
      builder_.CreateStore(bufferPointers[i], builder_.CreateConstInBoundsGEP1_64(ptr, buffers, i));
    llvm::Value *slots = scalarSlots(kernel_.function.scalars);
    llvm::GlobalVariable *errorWord = module_.getGlobalVariable(kDeviceErrorName, true);
    llvm::Function *entry = module_.getFunction(kCpuEntryName);
    if (!errorWord || !entry)
      return makeError("CPU library: the module of '" + declaration.name + "' has no entry",
                       declaration.range);
    builder_.CreateStore(builder_.getInt32(0), errorWord);
    builder_.CreateCall(entry, {buffers, slots});
    if (form_ == ArgumentForm::Buffers)
      releaseHostMemory(arguments, bufferPointers, arguments.size(), /*written=*/true);
    failOnDeviceError(errorWord, kernelSites, LOOPC_ERROR_KERNEL_FAULT);
    callRuntime("loopc_cpu_call_unlock", {});
    builder_.CreateRet(builder_.getInt32(LOOPC_SUCCESS));
    return emitter_.finish("CPU library", declaration.range, nullptr);
  }

private:
  // One 8-byte slot per scalar, holding the value bound to its name in its
  // own type.
  llvm::Value *scalarSlots(const std::vector<ir::ScalarParam> &scalars) {
    llvm::Value *slots = emitter_.createEntryAlloca(
        builder_.getInt64Ty(), builder_.getInt64(std::max<size_t>(1, scalars.size())), "scalars");
    for (size_t i = 0; i < scalars.size(); ++i)
      builder_.CreateStore(
          emitter_.toMemory(emitter_.emitExpr(*ir::makeVar(scalars[i].type, scalars[i].name)),
                            scalars[i].type),
          builder_.CreateConstInBoundsGEP1_64(builder_.getInt64Ty(), slots, i));
    return slots;
  }

  // When the runtime selects the GPU: the arrays copied to the device, the
  // host code of the architecture the runtime loaded, the results copied
  // back and the errors of the host code and the kernels reported; then
  // return. The CPU path follows, at the insertion point left.
  // The host memory of buffer argument `index` (loopc_buffer_host_begin);
  // when it cannot be had, the memory of those before it is released and the
  // failure returned.
  llvm::Value *hostMemory(const std::vector<CheckedArgument> &arguments, size_t index) {
    const CheckedArgument &argument = arguments[index];
    auto *ptr = builder_.getPtrTy();
    llvm::Value *slot = emitter_.createEntryAlloca(ptr, nullptr, argument.param->name + ".host");
    llvm::Value *status = builder_.CreateCall(
        module_.getOrInsertFunction("loopc_buffer_host_begin", builder_.getInt32Ty(), ptr,
                                    builder_.getInt64Ty(), builder_.getInt32Ty(), ptr),
        {argument.pointer, argument.bytes, builder_.getInt32(argument.intent()), slot});
    std::vector<llvm::Value *> before;
    for (size_t i = 0; i < index; ++i)
      before.push_back(hostSlots_.at(i));
    returnIfFailed(status, [&] {
      std::vector<llvm::Value *> hosts;
      for (llvm::Value *earlier : before)
        hosts.push_back(builder_.CreateLoad(ptr, earlier));
      releaseHostMemory(arguments, hosts, index, /*written=*/false);
    });
    hostSlots_.push_back(slot);
    return builder_.CreateLoad(ptr, slot, argument.param->name);
  }

  // Ends loopc_buffer_host_begin for the first `count` buffer arguments,
  // writing their host memory back to the buffers when `written` (a failure
  // to write is returned); otherwise only freed.
  void releaseHostMemory(const std::vector<CheckedArgument> &arguments,
                         const std::vector<llvm::Value *> &hosts, size_t count, bool written) {
    auto *ptr = builder_.getPtrTy();
    llvm::FunctionCallee end =
        module_.getOrInsertFunction("loopc_buffer_host_end", builder_.getInt32Ty(), ptr, ptr,
                                    builder_.getInt64Ty(), builder_.getInt32Ty());
    llvm::Value *failure = builder_.getInt32(LOOPC_SUCCESS);
    for (size_t i = 0; i < count; ++i) {
      llvm::Value *status =
          builder_.CreateCall(end, {arguments[i].pointer, hosts[i], arguments[i].bytes,
                                    builder_.getInt32(written ? arguments[i].intent() : 0)});
      failure = builder_.CreateSelect(
          builder_.CreateICmpNE(failure, builder_.getInt32(LOOPC_SUCCESS)), failure, status);
    }
    if (written)
      returnIfFailed(failure);
  }

  Status emitGpuPath(const std::vector<CheckedArgument> &arguments, const EmbeddedGpu &embedded) {
    const std::vector<EmbeddedGpuCode> &gpu = embedded.codes;
    llvm::LLVMContext &context = module_.getContext();
    auto *i32 = builder_.getInt32Ty();
    auto *i64 = builder_.getInt64Ty();
    auto *ptr = builder_.getPtrTy();
    auto runtime = [&](const char *name, llvm::Type *result, llvm::ArrayRef<llvm::Type *> params) {
      return module_.getOrInsertFunction(name, llvm::FunctionType::get(result, params, false));
    };
    auto *onGpu = llvm::BasicBlock::Create(context, "gpu", function_);
    auto *onCpu = llvm::BasicBlock::Create(context, "cpu", function_);
    llvm::Value *selected = builder_.CreateCall(runtime("loopc_gpu_selected", i32, {}));
    builder_.CreateCondBr(builder_.CreateICmpNE(selected, builder_.getInt32(0)), onGpu, onCpu);

    builder_.SetInsertPoint(onGpu);
    llvm::Value *call =
        builder_.CreateCall(runtime("loopc_gpu_call_begin", ptr, {ptr}), {embedded.program});
    const std::vector<ir::Buffer> &buffers = gpu.front().code->function.buffers;
    llvm::Value *devices = emitter_.createEntryAlloca(
        i64, builder_.getInt64(std::max<size_t>(1, buffers.size())), "device.buffers");
    for (size_t i = 0; i < buffers.size(); ++i) {
      auto argument = std::ranges::find_if(
          arguments, [&](const CheckedArgument &a) { return a.param->name == buffers[i]->name; });
      if (argument == arguments.end())
        return makeError("CPU library: the GPU code of '" + kernel_.declaration->name +
                             "' has an array '" + buffers[i]->name + "' the CPU code lacks",
                         kernel_.declaration->range);
      llvm::Value *device = builder_.CreateCall(
          runtime(form_ == ArgumentForm::Buffers ? "loopc_gpu_buffer_argument"
                                                 : "loopc_gpu_argument",
                  i64, {ptr, ptr, i64, i32}),
          {call, argument->pointer, argument->bytes, builder_.getInt32(argument->intent())});
      builder_.CreateStore(device, builder_.CreateConstInBoundsGEP1_64(i64, devices, i));
    }
    auto *recordType = llvm::ArrayType::get(i64, 3);
    llvm::Value *hostRecord = emitter_.createEntryAlloca(recordType, nullptr, "host.error");
    builder_.CreateStore(llvm::ConstantAggregateZero::get(recordType), hostRecord);
    llvm::Value *kernelRecord = emitter_.createEntryAlloca(recordType, nullptr, "gpu.error");
    llvm::Value *image = builder_.CreateCall(runtime("loopc_gpu_call_image", i32, {ptr}), {call});
    auto *notRun = llvm::BasicBlock::Create(context, "gpu.not_run", function_);
    llvm::SwitchInst *byImage = builder_.CreateSwitch(image, notRun, gpu.size());
    llvm::FunctionCallee end = runtime("loopc_gpu_call_end", i32, {ptr, ptr, ptr, i32});
    for (size_t k = 0; k < gpu.size(); ++k) {
      auto *run = llvm::BasicBlock::Create(context, "gpu." + gpu[k].code->gpu, function_);
      byImage->addCase(builder_.getInt32(static_cast<uint32_t>(k)), run);
      builder_.SetInsertPoint(run);
      llvm::Value *slots = scalarSlots(gpu[k].code->function.scalars);
      builder_.CreateCall(gpu[k].host, {call, devices, slots, hostRecord});
      llvm::GlobalVariable *messages = siteMessages(gpu[k].kernelSites);
      returnIfFailed(builder_.CreateCall(
          end,
          {call, kernelRecord,
           messages ? static_cast<llvm::Value *>(messages) : llvm::ConstantPointerNull::get(ptr),
           builder_.getInt32(static_cast<uint32_t>(gpu[k].kernelSites.size()))}));
      failOnDeviceError(hostRecord, gpu[k].hostSites, LOOPC_ERROR_KERNEL_FAULT);
      failOnDeviceError(kernelRecord, gpu[k].kernelSites, LOOPC_ERROR_KERNEL_FAULT, messages);
      callRuntime("loopc_cpu_call_unlock", {});
      builder_.CreateRet(builder_.getInt32(LOOPC_SUCCESS));
    }
    // The call failed before its host code could run: its status and message.
    builder_.SetInsertPoint(notRun);
    llvm::Value *status = builder_.CreateCall(
        end, {call, kernelRecord, llvm::ConstantPointerNull::get(ptr), builder_.getInt32(0)});
    callRuntime("loopc_cpu_call_unlock", {});
    builder_.CreateRet(status);
    builder_.SetInsertPoint(onCpu);
    return {};
  }

  // Returns `status` (the runtime has its message) when it is not success,
  // after `cleanUp` emits what must happen first.
  void returnIfFailed(llvm::Value *status, const std::function<void()> &cleanUp = {}) {
    llvm::LLVMContext &context = module_.getContext();
    auto *failed = llvm::BasicBlock::Create(context, "failed", function_);
    auto *ok = llvm::BasicBlock::Create(context, "ok", function_);
    builder_.CreateCondBr(builder_.CreateICmpNE(status, builder_.getInt32(LOOPC_SUCCESS)), failed,
                          ok);
    builder_.SetInsertPoint(failed);
    if (cleanUp)
      cleanUp();
    callRuntime("loopc_cpu_call_unlock", {});
    builder_.CreateRet(status);
    builder_.SetInsertPoint(ok);
  }

  // Binds the kernel's scalar values and sizes (checked non-negative) by
  // name, as the Function's scalars refer to them.
  void bindScalars(ScopedBindings &scope) {
    const KernelDecl &declaration = *kernel_.declaration;
    for (size_t i = 0; i < declaration.params.size(); ++i) {
      const VarDecl &param = *declaration.params[i];
      if (passedByPointer(param))
        continue;
      llvm::Value *value = function_->getArg(i);
      if (param.type.element == ScalarType::Bool)
        value = builder_.CreateICmpNE(value, builder_.getInt8(0));
      scope.var(param.name, value);
    }
    for (size_t i = 0; i < declaration.sizes.size(); ++i) {
      const std::string &name = declaration.sizes[i]->name;
      llvm::Value *size = function_->getArg(declaration.params.size() + i);
      failIf(builder_.CreateICmpSLT(size, builder_.getInt64(0)), LOOPC_ERROR_INVALID_ARGUMENT,
             prefix() + "size " + name + " is negative");
      scope.var(name, size);
    }
  }

  // The pointer argument of `buffer`, checked: no negative extent, not NULL
  // with elements.
  CheckedArgument checkedBuffer(const ir::BufferInfo &buffer) {
    const KernelDecl &declaration = *kernel_.declaration;
    size_t position = 0;
    while (declaration.params[position]->name != buffer.name)
      ++position;
    const VarDecl &param = *declaration.params[position];
    llvm::Value *pointer = function_->getArg(position);
    std::string type = sources_.text(param.type.range);
    // The element and byte counts are products of extents that may overflow
    // (2^32 x 2^32 wraps to 0): an array has elements when every extent is
    // positive, and one whose size in bytes does not fit in an int64_t cannot
    // exist. A zero extent makes the array empty whatever the others are.
    llvm::Value *hasElements = builder_.getTrue();
    llvm::Value *overflows = builder_.getFalse();
    llvm::Value *count = builder_.getInt64(1);
    auto multiply = [&](llvm::Value *left, llvm::Value *right) {
      llvm::Value *product =
          builder_.CreateBinaryIntrinsic(llvm::Intrinsic::smul_with_overflow, left, right);
      overflows = builder_.CreateOr(overflows, builder_.CreateExtractValue(product, 1));
      return builder_.CreateExtractValue(product, 0);
    };
    for (const ir::Expr &extent : buffer.shape) {
      llvm::Value *value = extentValue(*extent, param.name, type);
      failIf(builder_.CreateICmpSLT(value, builder_.getInt64(0)), LOOPC_ERROR_INVALID_ARGUMENT,
             prefix() + "'" + param.name + "' would have a negative extent (its type is " + type +
                 ")");
      hasElements =
          builder_.CreateAnd(hasElements, builder_.CreateICmpSGT(value, builder_.getInt64(0)));
      count = multiply(count, value);
    }
    llvm::Type *element = emitter_.memoryType(buffer.element);
    llvm::Value *bytes =
        multiply(count, builder_.getInt64(module_.getDataLayout().getTypeAllocSize(element)));
    failIf(builder_.CreateAnd(hasElements, overflows), LOOPC_ERROR_INVALID_ARGUMENT,
           prefix() + "'" + param.name + "' would be too large (its type is " + type +
               "): its size in bytes overflows int64_t");
    failIf(builder_.CreateAnd(builder_.CreateIsNull(pointer), hasElements),
           LOOPC_ERROR_INVALID_ARGUMENT, prefix() + "'" + param.name + "' is NULL");
    bytes = builder_.CreateSelect(hasElements, bytes, builder_.getInt64(0));
    if (form_ == ArgumentForm::Buffers) {
      // An empty array may be a NULL buffer, as it may be a NULL pointer.
      llvm::Value *size =
          builder_.CreateCall(module_.getOrInsertFunction(
                                  "loopc_buffer_size", builder_.getInt64Ty(), builder_.getPtrTy()),
                              {pointer});
      failIf(builder_.CreateICmpULT(size, bytes), LOOPC_ERROR_INVALID_ARGUMENT, [&] {
        return formatted(prefix() + "'" + param.name + "' is a buffer of %lld bytes; its type, " +
                             type + ", needs %lld",
                         {size, bytes});
      });
    }
    return {&param, pointer, bytes, kernel_.function.writtenWholeFirst.contains(buffer.name)};
  }

  // `extent` as i64, refused when its arithmetic overflows: wrapped, n * n
  // with n = 2^32 would be an empty array, and a NULL pointer would be
  // accepted for it (or n = 3037000500 called negative).
  llvm::Value *extentValue(const ir::ExprNode &extent, const std::string &name,
                           const std::string &type) {
    if (!overflowFlag_)
      overflowFlag_ = emitter_.createEntryAlloca(builder_.getInt1Ty(), nullptr, "overflowed");
    builder_.CreateStore(builder_.getFalse(), overflowFlag_);
    emitter_.setOverflowFlag(overflowFlag_);
    llvm::Value *value = emitter_.emitExprAs(extent, ScalarType::I64);
    emitter_.setOverflowFlag(nullptr);
    failIf(builder_.CreateLoad(builder_.getInt1Ty(), overflowFlag_), LOOPC_ERROR_INVALID_ARGUMENT,
           prefix() + "in the type of '" + name + "' (" + type + "): the extent overflows " +
               overflowingTypes(extent));
    return value;
  }

  std::string prefix() const { return "kernel '" + kernel_.declaration->name + "': "; }

  llvm::CallInst *callRuntime(const std::string &name, llvm::ArrayRef<llvm::Value *> args) {
    std::vector<llvm::Type *> types;
    for (llvm::Value *arg : args)
      types.push_back(arg->getType());
    llvm::Type *result = args.empty() ? builder_.getVoidTy() : builder_.getInt32Ty();
    return builder_.CreateCall(
        module_.getOrInsertFunction(name, llvm::FunctionType::get(result, types, false)), args);
  }

  // Returns `status` with the message `message` computes (in the failing
  // branch) when `failed` holds.
  void failIf(llvm::Value *failed, loopc_status status,
              const std::function<llvm::Value *()> &message) {
    llvm::LLVMContext &context = module_.getContext();
    auto *bad = llvm::BasicBlock::Create(context, "bad_argument", function_);
    auto *good = llvm::BasicBlock::Create(context, "ok", function_);
    builder_.CreateCondBr(failed, bad, good);
    builder_.SetInsertPoint(bad);
    llvm::Value *text = message();
    callRuntime("loopc_cpu_call_unlock", {});
    builder_.CreateRet(callRuntime("loopc_report_failure", {builder_.getInt32(status), text}));
    builder_.SetInsertPoint(good);
  }
  void failIf(llvm::Value *failed, loopc_status status, const std::string &message) {
    failIf(failed, status,
           [&] { return builder_.CreateGlobalStringPtr(message, "loopc.message"); });
  }

  // `format` (its '%' other than the conversions escaped) printed with
  // `values` (i64) into a message buffer.
  llvm::Value *formatted(const std::string &format, std::vector<llvm::Value *> values) {
    std::vector<llvm::Value *> args = {
        emitter_.createEntryAlloca(builder_.getInt8Ty(), builder_.getInt64(kMessageBytes),
                                   "message"),
        builder_.getInt64(kMessageBytes), builder_.CreateGlobalStringPtr(format, "loopc.format")};
    args.insert(args.end(), values.begin(), values.end());
    builder_.CreateCall(snprintf(), args);
    return args[0];
  }

  llvm::FunctionCallee snprintf() {
    auto *type = llvm::FunctionType::get(
        builder_.getInt32Ty(), {builder_.getPtrTy(), builder_.getInt64Ty(), builder_.getPtrTy()},
        /*isVarArg=*/true);
    return module_.getOrInsertFunction("snprintf", type);
  }

  // A device error site's message as a snprintf format quoting the record's
  // two values.
  std::string messageFormat(const DeviceErrorSite &site) const {
    std::string location = sources_.location(site.range);
    std::string text = (location.empty() ? "" : location + ": ") + prefix() + site.message;
    std::string format;
    for (size_t i = 0; i < text.size(); ++i) {
      if (text.compare(i, 3, "{0}") == 0 || text.compare(i, 3, "{1}") == 0) {
        format += text[i + 1] == '0' ? "%1$lld" : "%2$lld";
        i += 2;
      } else {
        format += text[i] == '%' ? "%%" : std::string(1, text[i]);
      }
    }
    return format;
  }

  // The table of the sites' messages as snprintf formats (messageFormat),
  // by site id - 1; null when there are none.
  llvm::GlobalVariable *siteMessages(const DeviceErrorSites &sites) {
    if (sites.empty())
      return nullptr;
    std::vector<llvm::Constant *> messages;
    for (const DeviceErrorSite &site : sites)
      messages.push_back(builder_.CreateGlobalStringPtr(messageFormat(site), "loopc.message"));
    auto *tableType = llvm::ArrayType::get(builder_.getPtrTy(), messages.size());
    return new llvm::GlobalVariable(module_, tableType, true, llvm::GlobalValue::PrivateLinkage,
                                    llvm::ConstantArray::get(tableType, messages),
                                    "loopc.messages");
  }

  // Fails with the message of the site `record` names, when it names one;
  // `table`: the sites' messages when siteMessages made them already.
  void failOnDeviceError(llvm::Value *record, const DeviceErrorSites &sites, loopc_status status,
                         llvm::GlobalVariable *table = nullptr) {
    if (!table)
      table = siteMessages(sites);
    if (!table)
      return;
    llvm::Type *tableType = table->getValueType();
    llvm::Value *site = builder_.CreateLoad(builder_.getInt32Ty(), record);
    failIf(builder_.CreateICmpNE(site, builder_.getInt32(0)), status, [&] {
      llvm::Value *index = builder_.CreateSub(site, builder_.getInt32(1));
      std::vector<llvm::Value *> args = {
          emitter_.createEntryAlloca(builder_.getInt8Ty(), builder_.getInt64(kMessageBytes),
                                     "message"),
          builder_.getInt64(kMessageBytes),
          builder_.CreateLoad(
              builder_.getPtrTy(),
              builder_.CreateInBoundsGEP(tableType, table, {builder_.getInt64(0), index}))};
      for (uint64_t i = 0; i < 2; ++i)
        args.push_back(builder_.CreateLoad(
            builder_.getInt64Ty(),
            builder_.CreateConstInBoundsGEP1_64(builder_.getInt8Ty(), record,
                                                kDeviceErrorValuesOffset + 8 * i)));
      builder_.CreateCall(snprintf(), args);
      return args[0];
    });
  }

  llvm::Module &module_;
  const LibraryKernel &kernel_;
  const SourceManager &sources_;
  ArgumentForm form_;
  CpuTarget target_{{}};
  std::vector<llvm::Value *> hostSlots_; // hostMemory's, by argument
  LlvmEmitter emitter_;
  llvm::IRBuilder<> &builder_;
  llvm::Function *function_ = nullptr;
  llvm::Value *overflowFlag_ = nullptr; // extentValue's, for the emitter
};

// The CPU module of one kernel with its code internal, its GPU code and its
// C function added.
Expected<std::unique_ptr<llvm::Module>> kernelModule(const LibraryKernel &kernel,
                                                     const SourceManager &sources,
                                                     llvm::LLVMContext &context,
                                                     const llvm::DataLayout &layout) {
  DeviceErrorSites sites;
  auto module = emitCpuModule(kernel.function, context, &sites);
  if (!module)
    return module;
  (*module)->setDataLayout(layout);
  for (llvm::GlobalValue &global : (*module)->global_values())
    if (!global.isDeclaration())
      global.setLinkage(llvm::GlobalValue::InternalLinkage);
  EmbeddedGpu gpu;
  for (const LibraryGpuCode &code : kernel.gpu) {
    EmbeddedGpuCode embedded{&code};
    auto ptx = compileToPtx(code.function, code.gpu, &embedded.kernelSites);
    if (!ptx)
      return std::unexpected(ptx.error());
    embedded.ptx = std::move(*ptx);
    auto host = emitGpuHostCode(**module, code.function, "loopc.gpu.host." + code.gpu, sources,
                                embedded.hostSites);
    if (!host)
      return std::unexpected(host.error());
    embedded.host = *host;
    gpu.codes.push_back(std::move(embedded));
  }
  if (!gpu.codes.empty())
    gpu.program = gpuProgram(**module, *kernel.declaration, gpu.codes);
  for (ArgumentForm form : {ArgumentForm::Pointers, ArgumentForm::Buffers})
    if (Status wrapped = WrapperEmitter(**module, kernel, sources, form).emit(sites, gpu); !wrapped)
      return std::unexpected(wrapped.error());
  return module;
}

} // namespace

namespace {

// Functions of the C library a program links, which a kernel's function may
// not replace: the object's own code calls the memory, formatting and math
// ones (a kernel named memset would be called by its own zeroing, forever).
bool isCLibraryFunction(const std::string &name) {
  // Every name the C and math libraries define (pthread_create, rand, time:
  // a kernel of that name would replace it in the whole program), as loaded
  // in this process; the list covers what the object calls where they are
  // not loaded, and what glibc links statically from libc_nonshared.a
  // (atexit: not in libc.so.6, so dlsym does not see it).
  static void *const libraries[] = {dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD),
                                    dlopen("libm.so.6", RTLD_LAZY | RTLD_NOLOAD)};
  for (void *library : libraries)
    if (library && dlsym(library, name.c_str()))
      return true;
  static const std::set<std::string> functions = {
      "abort", "calloc", "exit", "fprintf", "free", "malloc", "memcmp", "memcpy", "memmove",
      "memset", "printf", "realloc", "snprintf", "strcmp", "strlen", "puts", "sqrt", "sqrtf", "exp",
      "expf", "log", "logf", "sin", "sinf", "cos", "cosf", "tanh", "tanhf", "pow", "powf", "floor",
      "floorf", "ceil", "ceilf", "fabs", "fabsf", "fma", "fmaf", "fmin", "fminf", "fmax", "fmaxf",
      "abs", "labs",
      // libc_nonshared.a, now or in older glibc
      "atexit", "at_quick_exit", "pthread_atfork", "stat", "fstat", "lstat", "fstatat", "mknod",
      "mknodat", "stat64", "fstat64", "lstat64", "fstatat64"};
  return functions.contains(name);
}

// Macros of the standard headers (C11 to C23; C++'s <cxxx> headers define
// the same ones) and of GCC's predefines, which would replace a parameter's
// or function's name in the header of a program that includes them first.
// Whole families go by the prefixes the C standard reserves for them
// ("Future library directions": E[A-Z0-9] for <errno.h>, PRI and SCN for
// <inttypes.h>, ...) and by those glibc uses in the same headers in its GNU
// mode (g++ always defines _GNU_SOURCE: <signal.h> brings SA_, si_, ...).
// Function-like macros matter for kernel names only, object-like ones for
// both; one list serves both, as renaming a parameter costs nothing.
bool isStandardMacro(const std::string &name) {
  static const std::set<std::string> names = {
      // <assert.h>, <complex.h>, <errno.h>, <math.h>, <setjmp.h>, <stdarg.h>
      "assert", "NDEBUG", "static_assert", "complex", "imaginary", "I", "CMPLX", "CMPLXF", "CMPLXL",
      "errno", "HUGE_VAL", "HUGE_VALF", "HUGE_VALL", "INFINITY", "NAN", "MAXFLOAT", "MATH_ERRNO",
      "MATH_ERREXCEPT", "math_errhandling", "fpclassify", "isfinite", "isinf", "isnan", "isnormal",
      "issubnormal", "iszero", "signbit", "isgreater", "isgreaterequal", "isless", "islessequal",
      "islessgreater", "isunordered", "iscanonical", "issignaling", "setjmp", "sigsetjmp", "va_arg",
      "va_copy", "va_end", "va_start",
      // <float.h>, <limits.h> (their FLT_, DBL_ and _MAX names by pattern)
      "DECIMAL_DIG", "CHAR_BIT", "MB_LEN_MAX", "LONG_BIT", "WORD_BIT",
      // <stdalign.h>, <stdatomic.h>, <stdbool.h>, <stddef.h>, <stdnoreturn.h>, <threads.h>
      "alignas", "alignof", "kill_dependency", "bool", "true", "false", "NULL", "offsetof",
      "unreachable", "noreturn", "thread_local", "ONCE_FLAG_INIT", "TSS_DTOR_ITERATIONS",
      // <stdio.h>, <stdlib.h>, <time.h>, <wchar.h>, and glibc's in GNU mode
      "BUFSIZ", "EOF", "FILENAME_MAX", "FOPEN_MAX", "L_tmpnam", "L_ctermid", "L_cuserid",
      "P_tmpdir", "TMP_MAX", "stdin", "stdout", "stderr", "EXIT_SUCCESS", "EXIT_FAILURE",
      "MB_CUR_MAX", "RAND_MAX", "alloca", "CLOCKS_PER_SEC", "WEOF", "NSIG", "MINSIGSTKSZ",
      "SIGSTKSZ", "BIG_ENDIAN", "LITTLE_ENDIAN", "PDP_ENDIAN", "BYTE_ORDER", "NFDBITS",
      "FD_SETSIZE", "FD_SET", "FD_CLR", "FD_ISSET", "FD_ZERO", "WCONTINUED", "WEXITED", "WNOHANG",
      "WNOWAIT", "WSTOPPED", "WUNTRACED", "WEXITSTATUS", "WIFCONTINUED", "WIFEXITED", "WIFSIGNALED",
      "WIFSTOPPED", "WSTOPSIG", "WTERMSIG", "F_OK", "R_OK", "W_OK", "X_OK", "STDIN_FILENO",
      "STDOUT_FILENO", "STDERR_FILENO", "SNAN", "SNANF", "SNANL", "NZERO", "TEMP_FAILURE_RETRY",
      "assert_perror", "strdupa", "strndupa", "sigmask", "toascii",
      // GCC's predefines without a leading _ (in its GNU modes, the default)
      "linux", "unix", "i386", "i486", "i586", "i686", "sun", "sparc", "mips", "vax", "mc68000",
      "m68k", "pdp11", "hpux", "sgi", "ns32000", "pyr", "sequent", "tahoe", "gould", "u3b", "u3b2",
      "u3b5", "u3b15", "u3b20d", "bsd4_2", "bsd4_3", "system_v", "alpha", "ppc"};
  if (names.contains(name))
    return true;
  static const char *const prefixes[] = {
      "PRI",           "SCN",  "FE_",   "LC_",       "SIG",          "ATOMIC_", "atomic_",
      "memory_order_", "FP_",  "FLT_",  "DBL_",      "LDBL_",        "TIME_",   "CLOCK_",
      "TIMER_",        "M_",   "SA_",   "SI_",       "SS_",          "sa_",     "si_",
      "sigev_",        "ILL_", "FPE_",  "SEGV_",     "BUS_",         "TRAP_",   "CLD_",
      "POLL_",         "REG_", "SEEK_", "HUGE_VAL_", "SNANF",        "ADJ_",    "MOD_",
      "STA_",          "NL_",  "BC_",   "RENAME_",   "CLOSE_RANGE_", "XATTR_",  "htobe",
      "htole",         "be16", "be32",  "be64",      "le16",         "le32",    "le64"};
  for (const char *prefix : prefixes)
    if (name.starts_with(prefix))
      return true;
  auto isUpperName = [&] {
    return std::ranges::all_of(name, [](char c) {
      return std::isupper(static_cast<unsigned char>(c)) ||
             std::isdigit(static_cast<unsigned char>(c)) || c == '_';
    });
  };
  // <errno.h>'s E[0-9A-Z]..., <stdint.h>'s INTn_C/UINTn_MAX/..., and the
  // limits of <limits.h>, <stdint.h> and POSIX (..._MAX, _MIN, _WIDTH).
  if (name.size() > 1 && name[0] == 'E' &&
      (std::isupper(static_cast<unsigned char>(name[1])) ||
       std::isdigit(static_cast<unsigned char>(name[1]))) &&
      isUpperName())
    return true;
  if ((name.starts_with("INT") || name.starts_with("UINT")) && name.ends_with("_C"))
    return true;
  return isUpperName() &&
         (name.ends_with("_MAX") || name.ends_with("_MIN") || name.ends_with("_WIDTH"));
}

// Names a generated header uses or includes (its types and macros, the
// runtime's loopc_ and LOOPC_ names, the standard ones), which a parameter
// may not take.
bool isHeaderName(const std::string &name) {
  static const std::set<std::string> names = {"size_t",   "int8_t",   "int16_t",  "int32_t",
                                              "int64_t",  "uint8_t",  "uint16_t", "uint32_t",
                                              "uint64_t", "intptr_t", "uintptr_t"};
  // `loopc` is the C++ functions' namespace.
  return names.contains(name) || name == "loopc" || name.starts_with("loopc_") ||
         name.starts_with("LOOPC_") || isStandardMacro(name) || isReservedInC(name);
}

} // namespace

std::string bufferFunctionName(const std::string &symbol) { return symbol + "_buffers"; }

namespace {

// The C++ functions of `kernel` for its generated header (inside namespace
// loopc::kernels): one taking spans, one taking buffers, each checking that
// its arrays hold the elements their types need where every extent is a
// size, a scalar parameter or a number, then calling the C function.
// `names` are the C parameters' names, parameters then sizes.
std::string cplusplusFunctions(const LibraryKernel &kernel, const SourceManager &sources,
                               const std::vector<std::string> &names) {
  const KernelDecl &declaration = *kernel.declaration;
  std::map<std::string, std::string> scalarNames; // .loop name -> C name, of integer scalars
  for (size_t i = 0; i < declaration.params.size(); ++i)
    if (!passedByPointer(*declaration.params[i]) && isInteger(declaration.params[i]->type.element))
      scalarNames[declaration.params[i]->name] = names[i];
  for (size_t i = 0; i < declaration.sizes.size(); ++i)
    scalarNames[declaration.sizes[i]->name] = names[declaration.params.size() + i];
  std::string functions;
  for (bool buffers : {false, true}) {
    std::vector<std::string> params, arguments;
    std::string checks;
    for (size_t i = 0; i < declaration.params.size(); ++i) {
      const VarDecl &param = *declaration.params[i];
      std::string type = cType(param.type.element);
      std::string constness = param.intent == Intent::In ? "const " : "";
      if (!passedByPointer(param)) {
        params.push_back(type + " " + names[i]);
        arguments.push_back(names[i]);
        continue;
      }
      if (buffers) {
        params.push_back(constness + "loopc::Buffer<" + type + "> &" + names[i]);
        arguments.push_back(names[i] + ".get()");
      } else if (param.isArray()) {
        params.push_back("loopc::Span<" + constness + type + "> " + names[i]);
        arguments.push_back(names[i] + ".data()");
      } else {
        params.push_back(type + " &" + names[i]);
        arguments.push_back("&" + names[i]);
        continue;
      }
      std::vector<std::string> extents;
      for (const ExprPtr &dim : param.type.dims) {
        std::string text = sources.text(dim->range);
        auto scalar = scalarNames.find(text);
        if (scalar != scalarNames.end())
          extents.push_back("static_cast<int64_t>(" + scalar->second + ")");
        else if (!text.empty() && std::ranges::all_of(text, [](char c) {
                   return std::isdigit(static_cast<unsigned char>(c));
                 }))
          extents.push_back(text);
      }
      if (extents.size() != param.type.dims.size())
        continue; // counted by the C function alone
      std::string count;
      for (const std::string &extent : extents)
        count += (count.empty() ? "" : ", ") + extent;
      checks += "  loopc::detail::checkElements(\"" + declaration.name + "\", \"" + param.name +
                "\", \"" + sources.text(param.type.range) + "\", " + names[i] +
                ".size(), loopc::detail::elementCount({" + (param.isArray() ? count : "1") +
                "}));\n";
    }
    for (size_t i = 0; i < declaration.sizes.size(); ++i) {
      params.push_back("int64_t " + names[declaration.params.size() + i]);
      arguments.push_back(names[declaration.params.size() + i]);
    }
    functions += "\ninline void " + kernel.symbol + "(";
    for (size_t i = 0; i < params.size(); ++i)
      functions += (i ? ", " : "") + params[i];
    functions += ") {\n" + checks + "  loopc::check(::" +
                 (buffers ? bufferFunctionName(kernel.symbol) : kernel.symbol) + "(";
    for (size_t i = 0; i < arguments.size(); ++i)
      functions += (i ? ", " : "") + arguments[i];
    functions += "));\n}\n";
  }
  return functions;
}

} // namespace

Expected<std::string> librarySymbol(const KernelDecl &kernel, const std::string &prefix) {
  std::string symbol = prefix + kernel.name;
  bool identifier = !std::isdigit(static_cast<unsigned char>(symbol[0]));
  for (char c : symbol)
    identifier &= std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  if (!identifier)
    return makeError("'" + symbol +
                         "' is not a C identifier: give a --prefix of letters, digits "
                         "and '_'",
                     kernel.nameRange);
  if (isImplementationName(symbol))
    return makeError("kernel '" + kernel.name + "' cannot be a C function named '" + symbol +
                         "' (a reserved identifier: C and C++ keep names containing '__', or "
                         "beginning with '_' and an uppercase letter, to the compiler and its "
                         "library): give it a --prefix",
                     kernel.nameRange);
  if (isKeywordInC(symbol))
    return makeError("kernel '" + kernel.name + "' cannot be a C function named '" + symbol +
                         "' (a C or C++ keyword, or main): give it a --prefix",
                     kernel.nameRange);
  if (isCLibraryFunction(symbol) || isHeaderName(symbol))
    return makeError("kernel '" + kernel.name + "' cannot be a C function named '" + symbol +
                         "' (a name of the C library, a standard macro or a name of loopc's "
                         "runtime, which the program and the kernels' code use): give it a "
                         "--prefix",
                     kernel.nameRange);
  return symbol;
}

passes::CpuVectors cpuVectorsOf(const std::string &cpu) {
  static std::mutex mutex;
  static std::map<std::string, passes::CpuVectors> known;
  std::lock_guard lock(mutex);
  if (auto found = known.find(cpu); found != known.end())
    return found->second;
  passes::CpuVectors vectors;
  if (auto machine = objectMachine(cpu)) {
    const llvm::MCSubtargetInfo &subtarget = *(*machine)->getMCSubtargetInfo();
    if ((*machine)->getTargetTriple().isX86()) {
      if (subtarget.checkFeatures("+avx512f"))
        vectors = {16, 32};
      else if (subtarget.checkFeatures("+avx"))
        vectors = {8, 16};
      else
        vectors = {4, 16};
    } else if ((*machine)->getTargetTriple().isAArch64()) {
      vectors = {4, 32};
    }
  }
  known.emplace(cpu, vectors);
  return vectors;
}

void targetCpu(passes::PipelineOptions &pipeline, const std::string &cpu) {
  if (pipeline.target == passes::PipelineTarget::Cpu)
    pipeline.cpuVectors = cpuVectorsOf(cpu);
}

Expected<std::string> compileLibraryObject(const std::vector<LibraryKernel> &kernels,
                                           const SourceManager &sources, const std::string &cpu) {
  auto machine = objectMachine(cpu);
  if (!machine)
    return std::unexpected(machine.error());
  llvm::LLVMContext context;
  auto library = std::make_unique<llvm::Module>("loopc.library", context);
  library->setDataLayout((*machine)->createDataLayout());
  library->setTargetTriple((*machine)->getTargetTriple().str());
  for (const LibraryKernel &kernel : kernels) {
    auto module = kernelModule(kernel, sources, context, library->getDataLayout());
    if (!module)
      return std::unexpected(module.error());
    (*module)->setTargetTriple(library->getTargetTriple());
    // Internal names that clash are renamed by the linker.
    if (llvm::Linker::linkModules(*library, std::move(*module)))
      return makeError("CPU library: cannot link the code of kernel '" + kernel.declaration->name +
                       "'");
  }
  optimizeModule(*library, **machine, {.vectorize = true});

  llvm::SmallString<0> object;
  llvm::raw_svector_ostream stream(object);
  llvm::legacy::PassManager passes;
  if ((*machine)->addPassesToEmitFile(passes, stream, nullptr, llvm::CodeGenFileType::ObjectFile))
    return makeError("the host target cannot emit object files");
  passes.run(*library);
  return std::string(object.str());
}

std::string libraryHeader(const std::vector<LibraryKernel> &kernels, const SourceManager &sources,
                          const std::string &guard) {
  std::string header =
      "/* Generated by loopc compile --emit header; do not edit. Each function runs its\n"
      " * kernel on the CPU's cores, or on the GPU where its object holds GPU code and\n"
      " * the runtime chooses the GPU (loopc_use_device, LOOPC_DEVICE): arrays are\n"
      " * row-major, `out` arrays are zeroed first, sizes follow the parameters. Each\n"
      " * kernel has two functions: one taking host pointers, and one, named with\n"
      " * _buffers, taking a loopc_buffer for each array, whose data stays on the\n"
      " * device between calls. They return LOOPC_SUCCESS, or a status whose\n"
      " * message is loopc_runtime_last_error(NULL). Calls run one at a time. Link\n"
      " * the object compiled with this header, loopc::runtime and libm. */\n";
  header += "#ifndef " + guard + "\n#define " + guard + "\n\n";
  std::string cplusplus; // the C++ functions of every kernel
  header += "#include <loopc/runtime.h>\n\n#include <stdint.h>\n#ifndef __cplusplus\n"
            "#include <stdbool.h>\n#endif\n\n#ifdef __cplusplus\nextern \"C\" {\n#endif\n";
  for (const LibraryKernel &kernel : kernels) {
    const KernelDecl &declaration = *kernel.declaration;
    header += "\n/* kernel " + declaration.name + " (" + sources.location(declaration.range) + ")";
    for (const VarDeclPtr &param : declaration.params) {
      const char *intent = param->intent == Intent::Out     ? "out "
                           : param->intent == Intent::InOut ? "inout "
                           : param->isArray()               ? "in "
                                                            : "";
      header += "\n *   " + param->name + ": " + intent + sources.text(param->type.range);
    }
    header += " */\n";
    // A parameter's name is only documentation in C: one the header itself
    // uses (a keyword, a type, a macro) gets a `_`, or `_2`, `_3`... where
    // that is another parameter's name (`NULL` beside `NULL_`).
    std::set<std::string> taken;
    for (const VarDeclPtr &param : declaration.params)
      taken.insert(param->name);
    for (const VarDeclPtr &size : declaration.sizes)
      taken.insert(size->name);
    auto name = [&](const VarDecl &decl) {
      if (!isHeaderName(decl.name))
        return decl.name;
      std::string renamed = decl.name + "_";
      for (int suffix = 2; taken.contains(renamed); ++suffix)
        renamed = decl.name + "_" + std::to_string(suffix);
      taken.insert(renamed);
      return renamed;
    };
    std::vector<std::string> names;
    for (const VarDeclPtr &param : declaration.params)
      names.push_back(name(*param));
    for (const VarDeclPtr &size : declaration.sizes)
      names.push_back(name(*size));
    // The function taking host pointers, then the one taking buffers.
    for (bool buffers : {false, true}) {
      std::vector<std::string> params;
      for (size_t i = 0; i < declaration.params.size(); ++i) {
        const VarDecl &param = *declaration.params[i];
        std::string type =
            buffers && passedByPointer(param) ? "loopc_buffer" : cType(param.type.element);
        if (passedByPointer(param))
          params.push_back(std::string(param.intent == Intent::In ? "const " : "") + type + " *" +
                           names[i]);
        else
          params.push_back(type + " " + names[i]);
      }
      for (size_t i = 0; i < declaration.sizes.size(); ++i)
        params.push_back("int64_t " + names[declaration.params.size() + i]);
      header +=
          "loopc_status " + (buffers ? bufferFunctionName(kernel.symbol) : kernel.symbol) + "(";
      for (size_t i = 0; i < params.size(); ++i)
        header += (i ? ", " : "") + params[i];
      header += std::string(params.empty() ? "void" : "") + ");\n";
    }
    cplusplus += cplusplusFunctions(kernel, sources, names);
  }
  header += "\n#ifdef __cplusplus\n} /* extern \"C\" */\n\n#include <loopc/loopc.hpp>\n\n"
            "/* The same functions for C++ (loopc/loopc.hpp): arrays as loopc::Span or\n"
            " * loopc::Buffer, scalar results by reference, failures thrown as loopc::Error. */\n"
            "namespace loopc {\nnamespace kernels {\n" +
            cplusplus + "\n} // namespace kernels\n} // namespace loopc\n#endif\n\n#endif /* " +
            guard + " */\n";
  return header;
}

} // namespace loopc::codegen
