// What the compiling engines (CpuEngine, GpuEngine) share around a run: the
// per-kernel cache of compiled code, and binding a call's KernelArgs to the
// buffers and scalars of the lowered Function by the names the lowering gives
// them (the kernel's parameters and sizes), with `out` parameters zeroed.
#pragma once

#include "engine/Engine.h"
#include "ir/IR.h"
#include "lower/Lower.h"
#include "passes/Passes.h"
#include "passes/Pipeline.h"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace loopc::engine {

// A call's arguments in the lowered Function's order.
struct FunctionArguments {
  // bufferParams[i]: the position in KernelArgs::params of Function::buffers[i].
  std::vector<size_t> bufferParams;
  // One 8-byte slot per Function::scalars[i], holding the value in its own
  // type (bool as one byte), as the generated code reads it.
  std::vector<uint64_t> scalarSlots;
};

// Checks the argument count, zeroes `out` parameters (whatever the caller left
// in them) and maps `function`'s buffers and scalars to `args`. `engine`
// names the engine in internal errors.
Expected<FunctionArguments> bindFunctionArguments(const KernelDecl &kernel,
                                                  const ir::Function &function, KernelArgs &args,
                                                  const std::string &engine);

// Compiled code per kernel for an engine's lifetime, so repeated runs
// (benchmarks, differential tests at several sizes) compile once: one entry
// per kernel, per value of the sizes it is specialized for
// (passes::sizesToSpecialize; none when the pipeline skips
// specialize_sizes), and per outcome of the choices the passes made for the
// sizes of the run compiled for (Function::sizeChoices: 8 x 8 register tiles
// or 4 x 4), so a run compiles only the variant it runs. `Compiled` has an
// `ir::Function function` member: the kernel after the pass pipeline, which
// the build callback compiles in place.
template <typename Compiled> class CompiledKernelCache {
public:
  using Build = std::function<Status(Compiled &)>;

  // `pipeline` without an afterPass callback.
  explicit CompiledKernelCache(passes::PipelineOptions pipeline) : pipeline_(std::move(pipeline)) {}
  const passes::PipelineOptions &pipeline() const { return pipeline_; }

  // The kernel compiled for a run with these `sizes`.
  Expected<const Compiled *> get(const Program &program, const KernelDecl &kernel,
                                 const std::map<std::string, int64_t> &sizes, const Build &build) {
    Entry &entry = entries_[&kernel];
    // A kernel pointer may be reused by another program, and the lowering
    // follows how each kernel's multiply-adds round (--fp-contract may
    // change that between runs).
    std::vector<FpContract> contracts = fpContracts(program);
    if (entry.program != &program || entry.contracts != contracts)
      entry = Entry{&program, std::move(contracts), ir::lowerKernel(program, kernel), {}};
    std::map<std::string, int64_t> specialized =
        passes::sizesToSpecialize(entry.lowered, sizes, pipeline_);
    std::vector<std::unique_ptr<Compiled>> &variants = entry.variants[specialized];
    for (const std::unique_ptr<Compiled> &variant : variants)
      if (passes::choicesHoldAt(variant->function, sizes))
        return variant.get();
    passes::PipelineOptions options = pipeline_;
    options.specializedSizes = std::move(specialized);
    options.runSizes = sizes;
    auto compiled = std::make_unique<Compiled>();
    Expected<ir::Function> function = passes::runPipeline(entry.lowered, options);
    if (!function)
      return std::unexpected(function.error());
    compiled->function = std::move(*function);
    if (auto built = build(*compiled); !built)
      return std::unexpected(built.error());
    variants.push_back(std::move(compiled));
    return variants.back().get();
  }

  void clear() { entries_.clear(); }

private:
  static std::vector<FpContract> fpContracts(const Program &program) {
    std::vector<FpContract> contracts;
    for (const auto &module : program.modules)
      for (const auto &each : module->kernels)
        contracts.push_back(each->fpContract);
    return contracts;
  }

  struct Entry {
    const Program *program = nullptr;
    std::vector<FpContract> contracts; // of the program's kernels, when lowered
    ir::Function lowered;
    std::map<std::map<std::string, int64_t>, std::vector<std::unique_ptr<Compiled>>> variants;
  };
  passes::PipelineOptions pipeline_;
  std::map<const KernelDecl *, Entry> entries_;
};

} // namespace loopc::engine
