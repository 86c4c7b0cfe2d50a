// The one differential-testing helper: runs a kernel on several engines with
// identical seeded inputs and compares every output parameter against the
// first engine (the reference), reporting the first mismatch precisely.
#pragma once

#include "engine/Bindings.h"
#include "engine/Compare.h"
#include "engine/Engine.h"
#include "passes/Pipeline.h"

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

namespace loopc::test {

struct DifferentialOutcome {
  // The reference could not run these inputs (a binding or run-time error
  // such as an empty convolution output); nothing was compared.
  bool skipped = false;
  bool agree = true;
  std::string report; // why it was skipped, or every disagreement, one per line
  // The arguments after the reference ran, so a test can also assert exact
  // values (the neutral element of an empty reduction, wrapped integers).
  KernelArgs reference;
};

// `engines[0]` is the reference. The inputs come from bindKernelArguments on
// `request`, copied to every engine. Floats are compared with the tolerance
// of a reduction as long as the largest input, as `loopc run --check` does: no
// reduction can read more elements than that.
DifferentialOutcome runDifferential(const Program &program, const KernelDecl &kernel,
                                    const ArgumentRequest &request,
                                    std::span<Engine *const> engines);

// Runs `kernel` on `engines` (the first the reference) at every assignment
// of sizes, the other inputs as `base` asks (seed, random range); fails the
// current test on a disagreement or an assignment the reference cannot run.
void checkAgreementAt(const Program &program, const KernelDecl &kernel,
                      std::span<Engine *const> engines,
                      const std::vector<std::map<std::string, std::string>> &assignments,
                      const ArgumentRequest &base = {});

// Runs `kernelName` on the interpreter and on the CPU JIT compiling the GPU
// pipeline's kernels (the GPU-only passes' check without a GPU, sized for
// one SM as gpuPipelineOnOneSM says, with `choices`) at every assignment of sizes, with inputs from
// `seed`; fails the current test on a disagreement or an assignment the interpreter cannot run.
void checkGpuKernelsOnCpu(const Program &program, const std::string &kernelName,
                          const std::vector<std::map<std::string, std::string>> &assignments,
                          uint64_t seed, const passes::PassChoices &choices = {});
// The same with the GPU pipeline `pipeline` (its target must be the GPU).
void checkGpuKernelsOnCpu(const Program &program, const std::string &kernelName,
                          const std::vector<std::map<std::string, std::string>> &assignments,
                          uint64_t seed, const passes::PipelineOptions &pipeline);

} // namespace loopc::test
