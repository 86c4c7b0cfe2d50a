// The engine registry (see Engines.h).
#include "driver/Engines.h"

#include "engine/cpu/CpuEngine.h"
#include "engine/gpu/GpuEngine.h"
#include "interp/Interpreter.h"

#include <algorithm>

namespace loopc::driver {

namespace {

Expected<std::unique_ptr<Engine>> createGpu(const passes::PassChoices &choices) {
  return engine::GpuEngine::create(choices);
}

Expected<std::unique_ptr<Engine>> createCpu(const passes::PassChoices &choices) {
  return std::make_unique<engine::CpuEngine>(passes::PipelineTarget::Cpu, choices);
}

// The GPU pipeline's kernels (blocks, shared memory, barriers, register
// tiles) run by the CPU JIT: every GPU transformation can be run and checked
// on a machine without a GPU. Last, so it is never the default.
Expected<std::unique_ptr<Engine>> createGpuKernelsOnCpu(const passes::PassChoices &choices) {
  return std::make_unique<engine::CpuEngine>(passes::PipelineTarget::Gpu, choices);
}

Expected<std::unique_ptr<Engine>> createInterpreter(const passes::PassChoices &) {
  return std::make_unique<Interpreter>();
}

// Best first. A factory that needs hardware returns an error saying what is
// missing, so the default falls through to the next engine.
constexpr EngineEntry kEngines[] = {
    {"gpu", "NVIDIA GPU (PTX from LLVM, run through the CUDA driver)", createGpu},
    {"cpu", "native code for this CPU (LLVM JIT, all cores)", createCpu},
    {"interp", "the reference interpreter (slow, checks every access)", createInterpreter},
    {"gpu-on-cpu", "the GPU pipeline's kernels run by the CPU JIT (tests GPU passes without a GPU)",
     createGpuKernelsOnCpu},
};

constexpr const char *kKnownDevices[] = {"gpu", "cpu", "interp", "gpu-on-cpu"};

std::string registeredList() {
  std::string names;
  for (const EngineEntry &entry : kEngines)
    names += (names.empty() ? "" : ", ") + std::string(entry.device);
  return names;
}

} // namespace

std::span<const EngineEntry> registeredEngines() { return kEngines; }

std::span<const char *const> knownDevices() { return kKnownDevices; }

Expected<std::unique_ptr<Engine>> createEngine(const std::string &device,
                                               const passes::PassChoices &choices) {
  for (const EngineEntry &entry : kEngines) {
    if (device != entry.device)
      continue;
    auto engine = entry.create(choices);
    if (!engine)
      return makeError("device '" + device + "' is not available: " + engine.error().message +
                       (device == "gpu" ? " (--device gpu-on-cpu runs the GPU pipeline's kernels "
                                          "on the CPU)"
                                        : ""));
    return engine;
  }
  bool known = std::ranges::any_of(kKnownDevices, [&](const char *name) { return device == name; });
  if (known)
    return makeError("device '" + device + "' is not available: this build of loopc has no " +
                     device + " engine (available: " + registeredList() + ")");
  std::string names;
  for (const char *name : kKnownDevices)
    names += (names.empty() ? "" : ", ") + std::string(name);
  return makeError("unknown device '" + device + "' (choose from " + names + ")");
}

const passes::PipelineOptions *compilingPipeline(const Engine &engine) {
  if (const auto *cpu = dynamic_cast<const engine::CpuEngine *>(&engine))
    return &cpu->pipeline();
  if (const auto *gpu = dynamic_cast<const engine::GpuEngine *>(&engine))
    return &gpu->pipeline();
  return nullptr;
}

Expected<std::unique_ptr<Engine>> createDefaultEngine(const passes::PassChoices &choices) {
  std::string reasons;
  for (const EngineEntry &entry : kEngines) {
    auto engine = entry.create(choices);
    if (engine)
      return engine;
    reasons +=
        std::string(reasons.empty() ? "" : "; ") + entry.device + ": " + engine.error().message;
  }
  return makeError("no engine is available (" + reasons + ")");
}

} // namespace loopc::driver
