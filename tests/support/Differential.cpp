// See Differential.h.
#include "Differential.h"

#include "TestSupport.h"

#include "engine/cpu/CpuEngine.h"
#include "interp/Interpreter.h"

#include <doctest/doctest.h>

#include <algorithm>

namespace loopc::test {

namespace {

std::string describeRequest(const KernelDecl &kernel, const ArgumentRequest &request) {
  std::string text = kernel.name + "(";
  bool first = true;
  for (const auto &[name, value] : request.values) {
    text += (first ? "" : " ") + name + "=" + value;
    first = false;
  }
  return text + ", seed " + std::to_string(request.seed) + ")";
}

} // namespace

DifferentialOutcome runDifferential(const Program &program, const KernelDecl &kernel,
                                    const ArgumentRequest &request,
                                    std::span<Engine *const> engines) {
  DifferentialOutcome outcome;
  std::string where = describeRequest(kernel, request);
  Expected<KernelArgs> inputs = bindKernelArguments(kernel, request);
  if (!inputs) {
    outcome.skipped = true;
    outcome.report = where + ": inputs not bindable: " + inputs.error().message;
    return outcome;
  }
  CompareOptions options = compareOptionsFor(kernel, *inputs);
  KernelArgs &reference = outcome.reference;
  reference = *inputs;
  if (auto ran = engines[0]->run(program, kernel, reference); !ran) {
    outcome.skipped = true;
    outcome.report = where + ": " + engines[0]->name() + " failed: " + ran.error().message;
    return outcome;
  }
  for (Engine *engine : engines.subspan(1)) {
    KernelArgs args = *inputs;
    if (auto ran = engine->run(program, kernel, args); !ran) {
      outcome.agree = false;
      outcome.report += where + ": " + engine->name() + " failed where " + engines[0]->name() +
                        " ran: " + ran.error().message + "\n";
      continue;
    }
    for (size_t i = 0; i < kernel.params.size(); ++i) {
      if (kernel.params[i]->intent != Intent::Out && kernel.params[i]->intent != Intent::InOut)
        continue;
      CompareReport compared = compareArrays(reference.params[i], args.params[i], options);
      if (compared.matches)
        continue;
      outcome.agree = false;
      outcome.report += where + ": " + engine->name() + " vs " + engines[0]->name() + ": " +
                        compared.describe(kernel.params[i]->name) + "\n";
    }
  }
  return outcome;
}

void checkAgreementAt(const Program &program, const KernelDecl &kernel,
                      std::span<Engine *const> engines,
                      const std::vector<std::map<std::string, std::string>> &assignments,
                      const ArgumentRequest &base) {
  for (const auto &values : assignments) {
    std::string assignment;
    for (const auto &[name, value] : values)
      assignment += name + "=" + value + " ";
    CAPTURE(assignment);
    ArgumentRequest request = base;
    request.values = values;
    DifferentialOutcome outcome = runDifferential(program, kernel, request, engines);
    REQUIRE_MESSAGE(!outcome.skipped, outcome.report);
    CHECK_MESSAGE(outcome.agree, outcome.report);
  }
}

void checkGpuKernelsOnCpu(const Program &program, const std::string &kernelName,
                          const std::vector<std::map<std::string, std::string>> &assignments,
                          uint64_t seed, const passes::PassChoices &choices) {
  checkGpuKernelsOnCpu(program, kernelName, assignments, seed, gpuPipelineOnOneSM(choices));
}

void checkGpuKernelsOnCpu(const Program &program, const std::string &kernelName,
                          const std::vector<std::map<std::string, std::string>> &assignments,
                          uint64_t seed, const passes::PipelineOptions &pipeline) {
  REQUIRE(pipeline.target == passes::PipelineTarget::Gpu);
  const KernelDecl *kernel = program.findKernel(kernelName);
  REQUIRE_MESSAGE(kernel, "no kernel " << kernelName);
  Interpreter interpreter;
  engine::CpuEngine gpuKernels(pipeline);
  Engine *engines[] = {&interpreter, &gpuKernels};
  for (const auto &values : assignments) {
    ArgumentRequest request;
    request.values = values;
    request.seed = seed;
    DifferentialOutcome outcome = runDifferential(program, *kernel, request, engines);
    REQUIRE_MESSAGE(!outcome.skipped, outcome.report);
    CHECK_MESSAGE(outcome.agree, outcome.report);
  }
}

} // namespace loopc::test
