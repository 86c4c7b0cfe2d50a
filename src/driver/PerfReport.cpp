// The performance model on the command line (see PerfReport.h).
#include "driver/PerfReport.h"

#include "codegen/CpuLibrary.h"
#include "codegen/NvptxTarget.h"
#include "codegen/Ptxas.h"
#include "lower/Lower.h"
#include "passes/Passes.h"

#include <cmath>
#include <iomanip>
#include <sstream>
#include <utility>

namespace loopc::driver {

namespace {

// 3 significant digits, trailing zeros dropped: "1.5", "268", "0.125".
std::string significant(double value) {
  std::ostringstream text;
  text << std::setprecision(3) << value;
  return text.str();
}

// `value` over the largest power of 1000 it reaches (up to 10^12), and that
// power's prefix: {3.35, "G"}.
std::pair<double, const char *> withPrefix(double value) {
  const char *prefixes[] = {"", "K", "M", "G", "T"};
  int prefix = 0;
  while (std::abs(value) >= 1000 && prefix < 4) {
    value /= 1000;
    ++prefix;
  }
  return {value, prefixes[prefix]};
}

// `value` with its SI prefix on the unit: "268 MB", "3.35 GFLOP".
std::string quantity(double value, const std::string &unit) {
  auto [scaled, prefix] = withPrefix(value);
  return significant(scaled) + " " + prefix + unit;
}

// A count of things: "134M warp instructions", "24 memory round trips".
std::string count(double value, const std::string &things) {
  auto [scaled, prefix] = withPrefix(value);
  return significant(scaled) + prefix + " " + things;
}

std::string milliseconds(double seconds) {
  std::ostringstream text;
  text << std::fixed << std::setprecision(seconds < 1e-3 ? 4 : 3) << seconds * 1e3 << " ms";
  return text.str();
}

std::string percent(double fraction) {
  std::ostringstream text;
  text << std::fixed << std::setprecision(0) << fraction * 100 << "%";
  return text.str();
}

std::string where(const SourceRange &range) {
  if (!range.valid())
    return "-";
  return std::to_string(range.begin.line) + ":" + std::to_string(range.begin.col);
}

const char *accessKind(const perf::AccessProfile &access) {
  bool shared = access.memory == ir::MemorySpace::Shared;
  switch (access.kind) {
  case perf::AccessProfile::Kind::Load:
    return shared ? "shared load" : "global load";
  case perf::AccessProfile::Kind::Store:
    return shared ? "shared store" : "global store";
  case perf::AccessProfile::Kind::Atomic:
    return shared ? "shared atomic" : "global atomic";
  }
  return "";
}

void printLaunch(std::ostream &out, const perf::LaunchPrediction &launch) {
  const perf::KernelProfile &profile = launch.profile;
  const perf::LaunchShape &shape = profile.launch;
  out << "kernel " << profile.kernel << " (" << where(profile.source) << ")";
  if (launch.launches != 1)
    out << ", launched " << std::setprecision(4) << launch.launches << " times";
  out << "\n";
  out << "  launch       grid " << shape.grid[0] << " x " << shape.grid[1] << " x " << shape.grid[2]
      << ", block " << shape.block[0] << " x " << shape.block[1] << " x " << shape.block[2] << " ("
      << shape.blocks() << " blocks of " << shape.threadsPerBlock() << " threads)\n";
  const perf::CompiledKernel &compiled = launch.compiled;
  if (compiled.known)
    out << "  resources    " << compiled.registers << " registers, " << compiled.spillBytes
        << " bytes spilled, " << compiled.sharedBytes << " bytes of shared memory (ptxas)\n";
  else
    out << "  resources    unknown (no ptxas): 32 registers assumed\n";
  out << "  occupancy    " << launch.occupancy.blocksPerSM << " blocks per SM ("
      << launch.occupancy.warpsPerSM << " warps, " << percent(launch.occupancy.fraction)
      << "), limited by " << launch.occupancy.limiter << "; " << significant(launch.waves)
      << " waves\n";
  out << "  work         " << quantity(profile.flops, "FLOP") << ", "
      << count(profile.issuedInstructions(), "warp instructions") << " ("
      << count(profile.fp32Instructions + profile.fp64Instructions, "floating-point") << ")\n";
  out << "  memory       DRAM " << quantity(profile.compulsoryReadBytes, "B") << " read, "
      << quantity(profile.compulsoryWriteBytes, "B") << " written (each element once); L2 "
      << quantity(profile.l2Bytes(), "B") << "; L1 " << count(profile.l1Wavefronts(), "lines")
      << "; shared " << count(profile.sharedWavefronts(), "wavefronts") << "\n";
  out << "  per block    critical path " << count(profile.criticalInstructions, "instructions")
      << ", " << count(profile.criticalMemoryRounds, "memory round trips") << ", "
      << count(profile.criticalBarriers, "barriers") << " (its busiest warp)\n";
  if (profile.criticalAsyncWaits > 0)
    out << "  async copies " << count(profile.criticalAsyncWaits, "waits")
        << " (its busiest warp), each for copies issued " << significant(profile.asyncStagesAhead)
        << " stages of compute before it; " << significant(launch.asyncExposedCycles)
        << " cycles of their latency left uncovered\n";
  if (!profile.accesses.empty()) {
    out << "  accesses     (line:col array kind: bytes a lane, sectors a request, bytes used of "
           "those moved; shared: cycles a request)\n";
    for (const perf::AccessProfile &access : profile.accesses) {
      out << "    " << std::left << std::setw(8) << where(access.source) << std::setw(12)
          << access.array << std::setw(14) << accessKind(access) << std::right;
      out << access.vectorBytes << " B";
      if (access.memory == ir::MemorySpace::Shared) {
        double cycles = access.requests > 0 ? access.wavefronts / access.requests : 0;
        out << ", " << significant(cycles) << " cycles"
            << (cycles > 1.01 && access.vectorBytes <= 4 ? " (bank conflicts)" : "");
      } else {
        out << ", " << significant(access.sectorsPerRequest()) << " sectors, "
            << percent(access.sectorEfficiency()) << " used";
        if (!access.addressesKnown)
          out << " (addresses from data)";
        if (access.kind == perf::AccessProfile::Kind::Atomic)
          out << ", " << count(access.atomicTargets, "targets");
      }
      out << "; " << count(access.requests, "requests") << "\n";
    }
  }
  out << "  times        DRAM " << milliseconds(launch.dramSeconds) << ", L2 "
      << milliseconds(launch.l2Seconds) << ", issue " << milliseconds(launch.issueSeconds)
      << ", FP32 " << milliseconds(launch.fp32Seconds);
  if (launch.fp64Seconds > 0)
    out << ", FP64 " << milliseconds(launch.fp64Seconds);
  out << ", load/store " << milliseconds(launch.loadStoreSeconds) << ", latency "
      << milliseconds(launch.latencySeconds);
  if (launch.atomicSeconds > 0)
    out << ", atomics " << milliseconds(launch.atomicSeconds);
  out << "\n";
  out << "  predicted    " << milliseconds(launch.seconds) << ", " << launch.bound << "-bound ("
      << percent(launch.boundFraction()) << " of the time)";
  if (profile.flops > 0 && launch.seconds > 0)
    out << ", " << quantity(profile.flops / launch.seconds, "FLOP/s");
  out << "\n";
}

} // namespace

Expected<perf::ProgramPrediction> predictGpuRun(const Program &program, const KernelDecl &kernel,
                                                const passes::PassChoices &choices,
                                                const std::map<std::string, int64_t> &values,
                                                const perf::GpuDevice &device) {
  passes::PipelineOptions pipeline;
  pipeline.target = passes::PipelineTarget::Gpu;
  pipeline.choices = choices;
  pipeline.computeCapability = codegen::computeCapabilityOf(device.ptxTarget);
  pipeline.multiprocessors = device.multiprocessors;
  ir::Function lowered = ir::lowerKernel(program, kernel);
  pipeline.specializedSizes = passes::sizesToSpecialize(lowered, values, pipeline);
  pipeline.runSizes = values;
  auto function = passes::runPipeline(std::move(lowered), pipeline);
  if (!function)
    return std::unexpected(function.error());
  std::map<std::string, perf::CompiledKernel> compiled;
  if (function->kernels.empty())
    return perf::predictProgram(device, *function, values, compiled);
  codegen::LoopCensus loops;
  auto ptx = codegen::compileToPtx(*function, device.ptxTarget, nullptr, &loops);
  if (!ptx)
    return std::unexpected(ptx.error());
  for (const auto &[kernelName, kernelLoops] : loops)
    for (const auto &[name, loop] : kernelLoops)
      compiled[kernelName].loops[name] = {loop.globalLoads, loop.instructions, loop.constantTrips};
  if (std::optional<std::string> ptxas = codegen::findPtxas()) {
    auto reports = codegen::runPtxas(*ptxas, *ptx, device.ptxTarget);
    if (!reports)
      return std::unexpected(reports.error());
    for (const codegen::PtxasKernelReport &report : *reports) {
      perf::CompiledKernel &facts = compiled[report.name];
      facts.registers = report.registers;
      facts.spillBytes = report.spillStoreBytes + report.spillLoadBytes;
      facts.sharedBytes = report.sharedBytes;
      facts.known = true;
    }
  }
  return perf::predictProgram(device, *function, values, compiled);
}

Expected<perf::CpuProgramPrediction> predictCpuRun(const Program &program, const KernelDecl &kernel,
                                                   const passes::PassChoices &choices,
                                                   const std::map<std::string, int64_t> &values,
                                                   const perf::CpuDevice &device) {
  passes::PipelineOptions pipeline;
  pipeline.target = passes::PipelineTarget::Cpu;
  pipeline.choices = choices;
  codegen::targetCpu(pipeline);
  auto function = passes::runPipeline(ir::lowerKernel(program, kernel), pipeline);
  if (!function)
    return std::unexpected(function.error());
  return perf::predictCpuProgram(device, *function, values);
}

void printCpuPrediction(std::ostream &out, const perf::CpuProgramPrediction &prediction) {
  out << "// performance model: " << prediction.device << "\n";
  for (const perf::CpuLaunchPrediction &launch : prediction.launches) {
    const perf::KernelProfile &profile = launch.profile;
    out << "kernel " << profile.kernel << " (line " << where(profile.source) << "), launched "
        << significant(launch.launches) << " time" << (launch.launches == 1 ? "" : "s") << "\n";
    out << "  grid         " << profile.launch.grid[0] << " x " << profile.launch.grid[1] << " x "
        << profile.launch.grid[2] << " blocks of " << profile.launch.block[0] << " x "
        << profile.launch.block[1] << " x " << profile.launch.block[2] << " threads, "
        << (launch.alone ? "run in the calling thread" : "shared out to the pool") << "\n";
    out << "  work         " << quantity(profile.flops, "FLOP") << ", "
        << (launch.vectorized ? "threads as vector lanes" : "scalar (" + launch.scalarBecause + ")")
        << "\n";
    out << "  memory       " << quantity(profile.compulsoryReadBytes, "B") << " read, "
        << quantity(profile.compulsoryWriteBytes, "B") << " written\n";
    out << "  times        compute " << milliseconds(launch.computeSeconds) << ", memory "
        << milliseconds(launch.memorySeconds) << ", launch " << milliseconds(launch.overheadSeconds)
        << "\n";
    out << "  predicted    " << milliseconds(launch.seconds) << " a launch, " << launch.bound
        << "-bound\n\n";
  }
  if (prediction.hostSeconds > 0)
    out << "host code      " << milliseconds(prediction.hostSeconds) << " (operations "
        << milliseconds(prediction.hostComputeSeconds) << ", recurrences "
        << milliseconds(prediction.hostLatencySeconds) << ", memory "
        << milliseconds(prediction.hostMemorySeconds) << ")\n";
  out << "total          " << milliseconds(prediction.seconds);
  if (prediction.approximate)
    out << "; approximate: data decides some branch or bound";
  out << "\n";
}

void printPrediction(std::ostream &out, const perf::ProgramPrediction &prediction) {
  out << "// performance model: " << prediction.device << "\n";
  for (const perf::LaunchPrediction &launch : prediction.launches) {
    printLaunch(out, launch);
    out << "\n";
  }
  out << "total          " << milliseconds(prediction.seconds);
  if (prediction.hostSeconds > 0)
    out << " (" << milliseconds(prediction.hostSeconds) << " of it fills and copies by the host)";
  if (prediction.approximate)
    out << "; approximate: data decides some branch or bound";
  out << "\n";
}

std::string predictedBound(const perf::ProgramPrediction &prediction) {
  const perf::LaunchPrediction *longest = nullptr;
  for (const perf::LaunchPrediction &launch : prediction.launches)
    if (!longest || launch.seconds * launch.launches > longest->seconds * longest->launches)
      longest = &launch;
  return longest ? longest->bound : "launch";
}

std::string predictedBound(const perf::CpuProgramPrediction &prediction) {
  const perf::CpuLaunchPrediction *longest = nullptr;
  for (const perf::CpuLaunchPrediction &launch : prediction.launches)
    if (!longest || launch.seconds * launch.launches > longest->seconds * longest->launches)
      longest = &launch;
  if (!longest || prediction.hostSeconds > longest->seconds * longest->launches)
    return "host code";
  return longest->bound;
}

std::string predictionSummary(const perf::CpuProgramPrediction &prediction,
                              const perf::CpuDevice &device) {
  std::string bound = predictedBound(prediction);
  return "predicted " + milliseconds(prediction.seconds) + " on " + device.name + ", " + bound +
         (bound == "host code" ? "" : "-bound");
}

std::string predictionSummary(const perf::ProgramPrediction &prediction,
                              const perf::GpuDevice &device) {
  return "predicted " + milliseconds(prediction.seconds) + " on " + device.name + ", " +
         predictedBound(prediction) + "-bound";
}

} // namespace loopc::driver
