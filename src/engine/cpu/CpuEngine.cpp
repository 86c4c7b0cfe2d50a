// The CPU engine (see CpuEngine.h): the arguments bound by
// bindFunctionArguments are handed to the entry function as its buffer
// pointer array and scalar slot array.
#include "engine/cpu/CpuEngine.h"

#include "codegen/CpuJit.h"
#include "codegen/CpuLibrary.h"
#include "engine/Bindings.h"
#include "loopc/generated.h"
#include "support/CrashReport.h"
#include "support/Interrupt.h"

#include <llvm/ADT/StringRef.h>
#include <llvm/TargetParser/Host.h>

#include <chrono>

namespace loopc::engine {

using namespace loopc::codegen;

struct CpuEngine::Compiled {
  ir::Function function; // its buffers and scalars give the slot order
  std::unique_ptr<CpuProgram> code;
};

namespace {

passes::PipelineOptions pipelineFor(passes::PipelineTarget target, passes::PassChoices choices) {
  passes::PipelineOptions options;
  options.target = target;
  options.choices = std::move(choices);
  codegen::targetCpu(options);
  return options;
}

} // namespace

CpuEngine::CpuEngine(passes::PipelineTarget pipeline, passes::PassChoices choices)
    : cache_(pipelineFor(pipeline, std::move(choices))) {}
CpuEngine::CpuEngine(passes::PipelineOptions options)
    : cache_([&] {
        if (options.cpuVectors.f32Lanes == 0)
          codegen::targetCpu(options);
        return std::move(options);
      }()) {}
CpuEngine::~CpuEngine() = default;

std::string CpuEngine::name() const {
  const passes::PipelineOptions &pipeline = cache_.pipeline();
  std::string details = pipeline.target == passes::PipelineTarget::Gpu ? "GPU kernels" : "";
  auto add = [&](const std::string &detail) {
    if (!detail.empty())
      details += (details.empty() ? "" : ", ") + detail;
  };
  add(passes::describeChangedParameters(pipeline.choices.parameters));
  add(pipeline.choices.boundsChecks ? "" : "unchecked");
  return details.empty() ? "cpu" : "cpu (" + details + ")";
}

std::string CpuEngine::kind() const {
  return cache_.pipeline().target == passes::PipelineTarget::Gpu ? "gpu-on-cpu" : "cpu";
}

std::string CpuEngine::device() const {
  return "cpu: " + llvm::sys::getHostCPUName().str() + ", " +
         std::to_string(loopc_cpu_worker_count()) + " threads";
}

Expected<RunStats> CpuEngine::run(const Program &program, const KernelDecl &kernel,
                                  KernelArgs &args) {
  auto compiled = cache_.get(program, kernel, args.sizes, [](Compiled &entry) -> Status {
    auto code = CpuProgram::compile(entry.function);
    if (!code)
      return std::unexpected(code.error());
    entry.code = std::move(*code);
    return {};
  });
  if (!compiled)
    return std::unexpected(compiled.error());
  if (Status onHost = refuseDeviceArrays(kernel, args, kind()); !onHost)
    return std::unexpected(onHost.error());
  auto bound = bindFunctionArguments(kernel, (*compiled)->function, args, "CPU");
  if (!bound)
    return std::unexpected(bound.error());
  RunningKernel running(kernel.name, name());
  // An empty array is passed as a few zeroed bytes, not a null pointer: the
  // code after a recorded fault (`A[t % C]` with C = 0 goes on with t % C =
  // 0) then reads a harmless element before the fault is reported.
  alignas(16) static thread_local std::byte emptyArray[64];
  std::vector<void *> buffers;
  for (size_t param : bound->bufferParams) {
    std::span<unsigned char> bytes = args.params[param].elementBytes();
    buffers.push_back(bytes.empty() ? static_cast<void *>(emptyArray) : bytes.data());
  }

  auto start = std::chrono::steady_clock::now();
  Status ran = (*compiled)->code->run(buffers.data(), bound->scalarSlots.data());
  if (!ran)
    return std::unexpected(ran.error());
  // Cancelled launches left the outputs unfinished.
  if (interruptRequested())
    return makeError(kInterruptedMessage);
  RunStats stats;
  stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return stats;
}

} // namespace loopc::engine
