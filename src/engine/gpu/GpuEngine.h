// The GPU engine: a kernel is lowered, run through the pass pipeline and its
// device kernels compiled to PTX (NvptxTarget.h), which the runtime loads
// through the CUDA driver; PTX modules are cached per kernel for the engine's
// lifetime. A run copies the inputs to the device, runs the host program
// (launches, temporaries, top-level reduction cells), and copies the outputs
// back. RunStats::seconds is the GPU time between CUDA events recorded around
// the host program: the kernels and the small copies between them, not the
// input and output transfers.
#pragma once

#include "engine/Engine.h"
#include "engine/compiled/EngineArguments.h"

#include <memory>
#include <set>
#include <string>

namespace loopc::engine {

class GpuEngine final : public Engine {
public:
  // Opens the first CUDA device; the error is the runtime's message ("no
  // CUDA driver ...") where there is none.
  // `choices`: the optimizations of the GPU pipeline to leave out and their
  // parameters.
  static Expected<std::unique_ptr<Engine>> create(passes::PassChoices choices = {});
  ~GpuEngine() override;

  std::string name() const override {
    return pipeline().choices.boundsChecks ? "gpu" : "gpu (unchecked)";
  }
  std::string kind() const override { return "gpu"; }
  std::string device() const override { return device_; }
  Expected<RunStats> run(const Program &program, const KernelDecl &kernel,
                         KernelArgs &args) override;

  // The architecture PTX is generated for: the device's, capped at the newest
  // LLVM 19 knows (the driver JIT-compiles PTX for newer GPUs).
  const std::string &gpu() const { return gpu_; }
  // The pipeline kernels are compiled with (`--remarks` runs it alone).
  const passes::PipelineOptions &pipeline() const { return cache_.pipeline(); }

private:
  struct State;
  struct Compiled;
  GpuEngine(std::unique_ptr<State> state, passes::PassChoices choices);
  // Loads the PTX of `compiled.function`'s kernels.
  Status load(Compiled &compiled, const KernelDecl &kernel);

  std::unique_ptr<State> state_;
  std::string gpu_;
  std::string device_; // "NVIDIA H100 80GB HBM3 (sm_90)"
  CompiledKernelCache<Compiled> cache_;
};

} // namespace loopc::engine
