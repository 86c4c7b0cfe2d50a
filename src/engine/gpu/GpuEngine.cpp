// The GPU engine (see GpuEngine.h); the host program it runs around the
// launches is GpuHostProgram.h's.
#include "engine/gpu/GpuEngine.h"

#include "engine/gpu/GpuHostProgram.h"

#include "codegen/NvptxTarget.h"
#include "lower/Lower.h"
#include "passes/Pipeline.h"
#include "support/CrashReport.h"
#include "support/IntegerArithmetic.h"
#include "support/Interrupt.h"

#include <loopc/generated.h>
#include <loopc/runtime.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <unordered_map>

namespace loopc::engine {

using namespace loopc::codegen;

using namespace loopc::ir;

struct GpuEngine::State {
  runtime::Runtime runtime;
  DevicePool pool; // after the runtime: freed before it goes
};

struct GpuEngine::Compiled {
  ir::Function function;
  runtime::Module module;
  std::map<std::string, runtime::Function> kernels; // by KernelFunc::name
  std::map<std::string, const KernelFunc *> kernelInfo;
  DeviceErrorSites errorSites;
};

namespace {

// The newest architecture LLVM 19 generates for that the device runs.
std::string gpuFor(const loopc_device_info &info) {
  int capability = info.compute_capability_major * 10 + info.compute_capability_minor;
  for (int known : {90, 89, 87, 86, 80, 75})
    if (capability >= known)
      return "sm_" + std::to_string(known);
  return "sm_" + std::to_string(capability);
}

// The architecture the kernels of `runtime`'s device are compiled for.
std::string gpuOf(const runtime::Runtime &runtime) {
  auto info = runtime.info();
  return info ? gpuFor(*info) : kDefaultGpu;
}

} // namespace

namespace {

passes::PipelineOptions gpuPipeline(passes::PassChoices choices, const runtime::Runtime &runtime) {
  passes::PipelineOptions options;
  options.target = passes::PipelineTarget::Gpu;
  options.choices = std::move(choices);
  options.computeCapability = computeCapabilityOf(gpuOf(runtime));
  if (auto info = runtime.info(); info && info->multiprocessor_count > 0)
    options.multiprocessors = info->multiprocessor_count;
  return options;
}

} // namespace

GpuEngine::GpuEngine(std::unique_ptr<State> state, passes::PassChoices choices)
    : state_(std::move(state)), gpu_(gpuOf(state_->runtime)),
      cache_(gpuPipeline(std::move(choices), state_->runtime)) {
  auto info = state_->runtime.info();
  device_ = (info ? std::string(info->name) : std::string("unknown GPU")) + " (" + gpu_ + ")";
}

GpuEngine::~GpuEngine() {
  // Modules are unloaded before the runtime closes.
  cache_.clear();
}

Expected<std::unique_ptr<Engine>> GpuEngine::create(passes::PassChoices choices) {
  auto runtime = runtime::Runtime::open(runtime::DeviceKind::Cuda);
  if (!runtime)
    return makeError(runtime.error().message);
  return std::unique_ptr<Engine>(new GpuEngine(
      std::make_unique<State>(State{std::move(*runtime), DevicePool{}}), std::move(choices)));
}

Status GpuEngine::load(Compiled &entry, const KernelDecl &kernel) {
  if (!entry.function.kernels.empty()) {
    auto ptx = compileToPtx(entry.function, gpu_, &entry.errorSites);
    if (!ptx)
      return std::unexpected(ptx.error());
    auto module = state_->runtime.loadPtx(*ptx, entry.function.name);
    if (!module)
      return std::unexpected(runtimeError(module.error(), kernel.range));
    entry.module = std::move(*module);
  }
  for (const KernelFunc &device : entry.function.kernels) {
    auto function = entry.module.function(device.name);
    if (!function)
      return std::unexpected(runtimeError(function.error(), device.source));
    entry.kernels[device.name] = *function;
    entry.kernelInfo[device.name] = &device;
  }
  return {};
}

Expected<RunStats> GpuEngine::run(const Program &program, const KernelDecl &kernel,
                                  KernelArgs &args) {
  auto compiled =
      cache_.get(program, kernel, args.sizes, [&](Compiled &entry) { return load(entry, kernel); });
  if (!compiled)
    return std::unexpected(compiled.error());
  const Compiled &code = **compiled;
  const ir::Function &function = code.function;
  auto bound = bindFunctionArguments(kernel, function, args, "GPU");
  if (!bound)
    return std::unexpected(bound.error());
  RunningKernel running(kernel.name, name());
  const runtime::Runtime &runtime = state_->runtime;
  HostProgram host(runtime, state_->pool, code.kernels, code.kernelInfo);

  std::vector<runtime::DeviceBuffer> deviceBuffers;
  std::vector<std::pair<size_t, size_t>> outputs; // argument, device buffer
  for (size_t i = 0; i < function.buffers.size(); ++i) {
    const ir::Buffer &buffer = function.buffers[i];
    size_t param = bound->bufferParams[i];
    HostArray &array = args.params[param];
    if (array.inDeviceMemory()) { // the caller's GPU array, used where it is
      if (kernel.params[param]->intent == Intent::Out && array.elementCount() > 0)
        if (auto zeroed =
                runtime.fill(array.deviceAddress, 0, array.elementCount() * scalarSize(array.type));
            !zeroed)
          return std::unexpected(runtimeError(zeroed.error(), buffer->declared));
      host.bindBuffer(buffer.get(), array.deviceAddress);
      continue;
    }
    std::span<unsigned char> elements = array.elementBytes();
    auto storage = runtime.allocate(std::max(elements.size(), kSmallestArrayBytes));
    if (!storage)
      return std::unexpected(runtimeError(storage.error(), buffer->declared));
    runtime::Result<> stored = elements.empty()
                                   ? storage->fill(0)
                                   : storage->copyFromHost(elements.data(), elements.size());
    if (!stored)
      return std::unexpected(runtimeError(stored.error(), buffer->declared));
    host.bindBuffer(buffer.get(), storage->address());
    if (buffer->isWritten || kernel.params[param]->intent == Intent::Out)
      outputs.emplace_back(param, deviceBuffers.size());
    deviceBuffers.push_back(std::move(*storage));
  }
  // The caller's GPU arrays may still be being written by its own work in
  // the context (another library's stream): it ends before the launches.
  if (std::ranges::any_of(args.params, &HostArray::inDeviceMemory))
    if (auto finished = runtime.synchronize(); !finished)
      return std::unexpected(runtimeError(finished.error(), kernel.range));
  auto errorStorage = runtime.allocate(sizeof(DeviceErrorRecord));
  if (!errorStorage)
    return std::unexpected(runtimeError(errorStorage.error(), kernel.range));
  if (auto cleared = errorStorage->fill(0); !cleared)
    return std::unexpected(runtimeError(cleared.error(), kernel.range));
  host.bindErrorRecord(errorStorage->address());
  for (size_t i = 0; i < function.scalars.size(); ++i)
    host.bindVar(function.scalars[i].name,
                 HostScalar::load(function.scalars[i].type,
                                  reinterpret_cast<const unsigned char *>(&bound->scalarSlots[i])));

  auto start = runtime.createEvent();
  auto stop = runtime.createEvent();
  if (!start || !stop)
    return std::unexpected(runtimeError(!start ? start.error() : stop.error(), kernel.range));
  if (auto recorded = start->record(); !recorded)
    return std::unexpected(runtimeError(recorded.error(), kernel.range));
  if (auto status = host.run(*function.body); !status)
    return std::unexpected(status.error());
  // A kernel's failure surfaces at the first wait after its launch; the
  // runtime's message names the kernel, the range points at its parfor.
  SourceRange waited = host.lastLaunch().valid() ? host.lastLaunch() : kernel.range;
  if (auto recorded = stop->record(); !recorded)
    return std::unexpected(runtimeError(recorded.error(), waited));
  if (auto synchronized = runtime.synchronize(); !synchronized)
    return std::unexpected(runtimeError(synchronized.error(), waited));
  auto milliseconds = stop->elapsedSince(*start);
  if (!milliseconds)
    return std::unexpected(runtimeError(milliseconds.error(), waited));
  DeviceErrorRecord errorRecord;
  if (auto copied = errorStorage->copyToHost(&errorRecord, sizeof errorRecord); !copied)
    return std::unexpected(runtimeError(copied.error(), waited));
  if (auto status = deviceErrorStatus(errorRecord, code.errorSites); !status)
    return std::unexpected(status.error());
  // Interrupted: the launches ran to their end, and their results go.
  if (interruptRequested())
    return makeError(kInterruptedMessage);

  for (auto [index, buffer] : outputs) {
    HostArray &array = args.params[index];
    std::span<unsigned char> elements = array.elementBytes();
    if (elements.empty())
      continue;
    if (auto copied = deviceBuffers[buffer].copyToHost(elements.data(), elements.size()); !copied)
      return std::unexpected(runtimeError(copied.error(), kernel.range));
  }
  RunStats stats;
  stats.seconds = *milliseconds / 1000.0;
  return stats;
}

} // namespace loopc::engine
