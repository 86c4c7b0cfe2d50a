// The engines `loopc run --device` can choose, by device name. Adding an
// engine is one line in the registry (Engines.cpp); a device whose engine is
// missing from this build, or whose hardware is absent, is reported as "not
// available" with the reason instead of failing later.
#pragma once

#include "engine/Engine.h"
#include "passes/Pipeline.h"

#include <memory>
#include <set>
#include <span>
#include <string>

namespace loopc::driver {

// Creates an engine whose compiler follows `choices` (optimizations left out,
// their parameters; engines that compile nothing ignore them), or explains
// why this machine cannot have one (no GPU).
using EngineFactory = Expected<std::unique_ptr<Engine>> (*)(const passes::PassChoices &choices);

struct EngineEntry {
  const char *device;
  const char *description;
  EngineFactory create;
};

// The registered engines, best first: the default device is the first whose
// factory succeeds.
std::span<const EngineEntry> registeredEngines();

// Every device name loopc knows, registered in this build or not.
std::span<const char *const> knownDevices();

// The engine for `device`: an error for an unknown name, an engine missing
// from this build, or a device this machine lacks.
Expected<std::unique_ptr<Engine>> createEngine(const std::string &device,
                                               const passes::PassChoices &choices = {});

// The best engine that works here (gpu, then cpu, then interp).
Expected<std::unique_ptr<Engine>> createDefaultEngine(const passes::PassChoices &choices = {});

// The pass pipeline `engine` compiles kernels with; none for an engine that
// compiles nothing (the interpreter).
const passes::PipelineOptions *compilingPipeline(const Engine &engine);

} // namespace loopc::driver
