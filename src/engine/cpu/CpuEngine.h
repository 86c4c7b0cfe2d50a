// The CPU engine: a kernel is lowered, run through the pass pipeline,
// compiled to native code for the host (CpuJit.h) and run on every core.
// Compiled programs are cached per kernel for the engine's lifetime, so
// repeated runs (benchmarks, differential tests at several sizes) compile once.
#pragma once

#include "engine/Engine.h"
#include "engine/compiled/EngineArguments.h"

#include <memory>
#include <set>
#include <string>

namespace loopc::engine {

class CpuEngine final : public Engine {
public:
  // The CPU pipeline's kernels by default; PipelineTarget::Gpu runs the
  // GPU's (the differential tests' check of the GPU-only passes).
  explicit CpuEngine(passes::PipelineTarget pipeline = passes::PipelineTarget::Cpu,
                     passes::PassChoices choices = {});
  // Kernels from the pipeline `options` make (a GPU pipeline sized for
  // another GPU's multiprocessors, say).
  explicit CpuEngine(passes::PipelineOptions options);
  ~CpuEngine() override;
  // "cpu", or "cpu (GPU kernels, ...)" with any parameters set otherwise and
  // bounds checks.
  std::string name() const override;
  std::string kind() const override;
  // "cpu: <LLVM's name of this CPU>, <threads> threads".
  std::string device() const override;
  Expected<RunStats> run(const Program &program, const KernelDecl &kernel,
                         KernelArgs &args) override;
  // The pipeline kernels are compiled with (`--remarks` runs it alone).
  const passes::PipelineOptions &pipeline() const { return cache_.pipeline(); }

private:
  struct Compiled;
  CompiledKernelCache<Compiled> cache_;
};

} // namespace loopc::engine
