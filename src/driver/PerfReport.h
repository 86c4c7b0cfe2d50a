// The performance model on the command line: `loopc explain --perf` prints
// what the model says of each launch of a kernel, and `loopc bench` its
// predicted time beside the measured one (perf/GpuModel.h; docs/perf.md).
#pragma once

#include "frontend/Ast.h"
#include "passes/Pipeline.h"
#include "perf/CpuModel.h"
#include "perf/GpuModel.h"
#include "support/Error.h"

#include <cstdint>
#include <map>
#include <ostream>
#include <string>

namespace loopc::driver {

// Compiles `kernel` through the GPU pipeline as the GPU engine would for a
// run with `values` (sizes and integer scalars), assembles its PTX with
// ptxas when the CUDA toolkit has it (registers, spills, shared memory), and
// predicts the run on `device`.
Expected<perf::ProgramPrediction> predictGpuRun(const Program &program, const KernelDecl &kernel,
                                                const passes::PassChoices &choices,
                                                const std::map<std::string, int64_t> &values,
                                                const perf::GpuDevice &device);

// Compiles `kernel` through the CPU pipeline as the CPU engine would and
// predicts the run with `values` on `device` (perf/CpuModel.h).
Expected<perf::CpuProgramPrediction> predictCpuRun(const Program &program, const KernelDecl &kernel,
                                                   const passes::PassChoices &choices,
                                                   const std::map<std::string, int64_t> &values,
                                                   const perf::CpuDevice &device);

// The CPU's report: per launch its geometry, work, bytes, the time of each
// bound and the prediction; the host code's; then the total.
void printCpuPrediction(std::ostream &out, const perf::CpuProgramPrediction &prediction);

// The whole report: per launch its geometry, resources, occupancy, work,
// accesses, the time of each bound and the prediction; then the total.
void printPrediction(std::ostream &out, const perf::ProgramPrediction &prediction);

// The bound of the launch that takes the most of the run's time.
std::string predictedBound(const perf::ProgramPrediction &prediction);

// The bound of the launch, or of the host code, that takes the most of a
// CPU run's time.
std::string predictedBound(const perf::CpuProgramPrediction &prediction);

// One line: "predicted 12.3 ms on native, compute-bound".
std::string predictionSummary(const perf::CpuProgramPrediction &prediction,
                              const perf::CpuDevice &device);

// One line: "predicted 0.452 ms on h100 (issue-bound)".
std::string predictionSummary(const perf::ProgramPrediction &prediction,
                              const perf::GpuDevice &device);

} // namespace loopc::driver
