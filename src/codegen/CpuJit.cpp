// Host compilation and JIT loading (see CpuJit.h).
#include "codegen/CpuJit.h"

#include "codegen/CpuTarget.h"
#include "codegen/Optimize.h"
#include "loopc/generated.h"

#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ThreadSafeModule.h>
#include <llvm/Support/DynamicLibrary.h>
#include <llvm/Support/Error.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include <atomic>
#include <mutex>

namespace loopc::codegen {
namespace {

std::string describe(llvm::Error error) { return llvm::toString(std::move(error)); }

void initializeNativeTarget() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
}

Expected<llvm::orc::JITTargetMachineBuilder> hostMachineBuilder() {
  initializeNativeTarget();
  auto builder = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!builder)
    return makeError("cannot target the host CPU: " + describe(builder.takeError()));
  builder->setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
  avoidMiscompiledCpuFeatures(builder->getFeatures());
  return std::move(*builder);
}

// Whether glibc's vector math library is loaded into this process, so that
// the JIT resolves the calls vectorized loops make into it (loaded on first
// use; false on a system without it, whose loops then call scalar math).
bool vectorMathLoaded(const llvm::Triple &triple) {
  static const bool loaded = !llvm::sys::DynamicLibrary::LoadLibraryPermanently("libmvec.so.1");
  return triple.getArch() == llvm::Triple::x86_64 && loaded;
}

// The module of `function`, set up for (and optionally optimized on) the host.
Expected<std::unique_ptr<llvm::Module>>
hostModule(const ir::Function &function, llvm::LLVMContext &context,
           llvm::orc::JITTargetMachineBuilder &machineBuilder, bool optimize,
           DeviceErrorSites *sites = nullptr) {
  auto module = emitCpuModule(function, context, sites);
  if (!module)
    return std::unexpected(module.error());
  auto machine = machineBuilder.createTargetMachine();
  if (!machine)
    return makeError("cannot create the host target machine: " + describe(machine.takeError()));
  (*module)->setDataLayout((*machine)->createDataLayout());
  (*module)->setTargetTriple((*machine)->getTargetTriple().str());
  if (optimize)
    optimizeModule(
        **module, **machine,
        {.vectorize = true, .vectorMath = vectorMathLoaded((*machine)->getTargetTriple())});
  return module;
}

} // namespace

CpuProgram::~CpuProgram() = default;

Expected<std::unique_ptr<CpuProgram>> CpuProgram::compile(const ir::Function &function) {
  auto machineBuilder = hostMachineBuilder();
  if (!machineBuilder)
    return std::unexpected(machineBuilder.error());
  auto context = std::make_unique<llvm::LLVMContext>();
  DeviceErrorSites sites;
  auto module = hostModule(function, *context, *machineBuilder, /*optimize=*/true, &sites);
  if (!module)
    return std::unexpected(module.error());

  auto jit = llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(*machineBuilder).create();
  if (!jit)
    return makeError("cannot start the CPU JIT: " + describe(jit.takeError()));
  llvm::orc::JITDylib &library = (*jit)->getMainJITDylib();
  // libm (tanh) and libc (calloc, free) come from this process; the thread
  // pool entry is defined explicitly, as executables do not export symbols.
  auto processSymbols = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
      (*jit)->getDataLayout().getGlobalPrefix());
  if (!processSymbols)
    return makeError("cannot expose process symbols to the JIT: " +
                     describe(processSymbols.takeError()));
  library.addGenerator(std::move(*processSymbols));
  llvm::orc::SymbolMap runtime;
  runtime[(*jit)->mangleAndIntern("loopc_cpu_launch_kernel")] = {
      llvm::orc::ExecutorAddr::fromPtr(&loopc_cpu_launch_kernel), llvm::JITSymbolFlags::Exported};
  if (auto error = library.define(llvm::orc::absoluteSymbols(std::move(runtime))))
    return makeError("cannot define the CPU runtime for the JIT: " + describe(std::move(error)));

  if (auto error =
          (*jit)->addIRModule(llvm::orc::ThreadSafeModule(std::move(*module), std::move(context))))
    return makeError("cannot load the CPU module: " + describe(std::move(error)));
  auto entry = (*jit)->lookup(kCpuEntryName);
  if (!entry)
    return makeError("cannot link the CPU module: " + describe(entry.takeError()));

  auto errorRecord = (*jit)->lookup(kDeviceErrorName);
  if (!errorRecord)
    return makeError("cannot link the CPU module: " + describe(errorRecord.takeError()));

  std::unique_ptr<CpuProgram> program(new CpuProgram());
  program->entry_ = entry->toPtr<void (*)(void **, void *)>();
  program->errorRecord_ = errorRecord->toPtr<DeviceErrorRecord *>();
  program->errorSites_ = std::move(sites);
  program->jit_ = std::move(*jit);
  return program;
}

Status CpuProgram::run(void **buffers, void *scalars) const {
  // The generated code writes the record (its site atomically), possibly
  // from pool threads; the pool has joined them all when the entry returns.
  std::atomic_ref<uint32_t>(errorRecord_->site).store(0, std::memory_order_relaxed);
  entry_(buffers, scalars);
  std::atomic_thread_fence(std::memory_order_acquire);
  return deviceErrorStatus(*errorRecord_, errorSites_);
}

Expected<std::string> cpuLlvmText(const ir::Function &function, bool optimize) {
  auto machineBuilder = hostMachineBuilder();
  if (!machineBuilder)
    return std::unexpected(machineBuilder.error());
  llvm::LLVMContext context;
  auto module = hostModule(function, context, *machineBuilder, optimize);
  if (!module)
    return std::unexpected(module.error());
  std::string text;
  llvm::raw_string_ostream stream(text);
  (*module)->print(stream, nullptr);
  return text;
}

} // namespace loopc::codegen
