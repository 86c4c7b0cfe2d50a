// The performance model of GPU launches and host programs (see GpuModel.h).
#include "perf/GpuModel.h"

#include "perf/HostWalk.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>
#include <ranges>

namespace loopc::perf {

using namespace loopc::ir;
using ir::Expr;
using ir::Stmt;

namespace {

// Registers a kernel is assumed to use when ptxas did not say (no CUDA
// toolkit): a simple kernel's.
constexpr int kGuessedRegisters = 32;

} // namespace

Occupancy occupancyOf(const GpuDevice &device, const LaunchShape &launch,
                      const CompiledKernel &compiled) {
  Occupancy occupancy;
  int64_t warps = std::max<int64_t>(1, launch.warpsPerBlock());
  int registers = compiled.known ? std::max(compiled.registers, 1) : kGuessedRegisters;
  int unit = device.registerAllocationUnit;
  int64_t registersPerWarp = (static_cast<int64_t>(registers) * 32 + unit - 1) / unit * unit;
  int64_t byRegisters = device.registersPerSM / registersPerWarp / warps;
  int64_t byShared =
      device.sharedBytesPerSM / (compiled.sharedBytes + device.sharedBytesReservedPerBlock);
  int64_t byThreads = device.maxThreadsPerSM / (warps * 32);
  int64_t byBlocks = device.maxBlocksPerSM;
  std::pair<int64_t, const char *> limits[] = {{byRegisters, "registers"},
                                               {byShared, "shared memory"},
                                               {byThreads, "threads"},
                                               {byBlocks, "blocks per SM"}};
  auto [blocks, limiter] =
      *std::ranges::min_element(limits, {}, [](const auto &limit) { return limit.first; });
  occupancy.blocksPerSM = static_cast<int>(std::max<int64_t>(blocks, 1));
  occupancy.limiter = limiter;
  occupancy.warpsPerSM = static_cast<double>(occupancy.blocksPerSM * warps);
  occupancy.fraction = occupancy.warpsPerSM / (device.maxThreadsPerSM / 32.0);
  return occupancy;
}

double LaunchPrediction::boundFraction() const {
  double busy = 0;
  if (bound == "DRAM")
    busy = dramSeconds;
  else if (bound == "L2")
    busy = l2Seconds;
  else if (bound == "atomics")
    busy = atomicSeconds;
  else if (bound == "launch")
    busy = overheadSeconds;
  else if (bound == "latency")
    busy = latencySeconds;
  else
    busy = std::max({issueSeconds, fp32Seconds, fp64Seconds, loadStoreSeconds});
  return seconds > 0 ? busy / seconds : 0;
}

LaunchPrediction predictLaunch(const GpuDevice &device, const KernelProfile &profile,
                               const CompiledKernel &compiled) {
  LaunchPrediction prediction;
  prediction.profile = profile;
  prediction.compiled = compiled;
  prediction.occupancy = occupancyOf(device, profile.launch, compiled);
  double cyclesPerSecond = device.clockGHz * 1e9;

  double blocks = static_cast<double>(profile.launch.blocks());
  if (blocks <= 0) {
    prediction.bound = "launch";
    prediction.overheadSeconds = prediction.seconds = device.launchMicroseconds * 1e-6;
    return prediction;
  }
  double resident = prediction.occupancy.blocksPerSM;
  double sms = device.multiprocessors;
  double busiestBlocks = std::ceil(blocks / sms);
  prediction.waves = busiestBlocks / resident;

  // One block's demand on its SM's pipes, in cycles.
  double issue = profile.issuedInstructions() / blocks / device.schedulers;
  double fp32 = profile.fp32Instructions / blocks / (device.fp32Lanes / 32.0);
  double fp64 = profile.fp64Instructions / blocks / std::max(device.fp64Lanes / 32.0, 1.0 / 16);
  double loadStore = (profile.sharedWavefronts() + profile.l1Wavefronts()) / blocks;
  double throughput = std::max({issue, fp32, fp64, loadStore});
  // One block's critical path, in cycles.
  // A round trip's latency: from L1 for the share of the loaded sectors it
  // serves (those a block's warps touched before), from DRAM for the share of
  // the rest that are first touches (compulsory), from L2 for the others.
  double loadedFromL2 = 0, loaded = 0;
  for (const AccessProfile &access : profile.accesses)
    if (access.memory == MemorySpace::Global && access.kind == AccessProfile::Kind::Load) {
      loadedFromL2 += access.l2Sectors * 32.0;
      loaded += access.sectors * 32.0;
    }
  double fromDram =
      loadedFromL2 > 0 ? std::min(1.0, profile.compulsoryReadBytes / loadedFromL2) : 1;
  double fromL1 = loaded > 0 ? std::clamp(1 - loadedFromL2 / loaded, 0.0, 1.0) : 0;
  double memoryLatency =
      fromL1 * device.l1LatencyCycles +
      (1 - fromL1) * (fromDram * device.memoryLatencyNs + (1 - fromDram) * device.l2LatencyNs) *
          device.clockGHz;
  double critical = profile.criticalInstructions * device.warpIssueCycles +
                    profile.criticalMemoryRounds * memoryLatency +
                    profile.criticalSharedRounds * device.sharedLatencyCycles +
                    profile.criticalBarriers * device.barrierCycles;
  // A wait for async copies waits what the compute since their issue did
  // not cover: the warp's own stages, or the SM's share of the resident
  // blocks' work over as many stages where that is longer (the warp's
  // neighbours issue in the meantime).
  if (profile.criticalAsyncWaits > 0) {
    double stages = profile.criticalAsyncWaits + 1;
    double cover = std::max(profile.asyncCoverInstructions * device.warpIssueCycles +
                                profile.asyncCoverSharedRounds * device.sharedLatencyCycles +
                                profile.asyncCoverBarriers * device.barrierCycles,
                            profile.asyncStagesAhead * resident * throughput / stages);
    prediction.asyncExposedCycles = std::max(0.0, memoryLatency - cover);
    critical += profile.criticalAsyncWaits * prediction.asyncExposedCycles;
  }

  double fullWaves = std::floor(busiestBlocks / resident);
  double tail = busiestBlocks - fullWaves * resident;
  // A wave of blocks takes what the SM's pipes need for them all, or one
  // block's critical path, whichever is longer: other blocks issue while
  // one waits. A scheduler issues only in the cycles some warp of its own
  // is ready: a warp alone is ready for its critical path's instructions
  // out of its cycles, so with w warps, each as often and independently,
  // some warp is ready 1 - (1 - ready)^w of the cycles (a warp that never
  // waits keeps its scheduler busy; one warp alone takes its critical path).
  double ready = critical > 0 ? std::min(1.0, profile.criticalInstructions / critical) : 1.0;
  double warpsPerBlock = static_cast<double>(profile.launch.warpsPerBlock());
  auto waveCycles = [&](double blocksInWave) {
    double warpsPerScheduler = std::max(1.0, blocksInWave * warpsPerBlock / device.schedulers);
    double issuing = 1 - std::pow(1 - ready, warpsPerScheduler);
    double issueCycles = issuing > 0 ? blocksInWave * issue / issuing : 0;
    return std::max({blocksInWave * throughput, issueCycles, critical});
  };
  double smCycles = fullWaves * waveCycles(resident) + (tail > 0 ? waveCycles(tail) : 0);
  double latencyCycles = (fullWaves + (tail > 0 ? 1 : 0)) * critical;
  prediction.smSeconds = smCycles / cyclesPerSecond;
  prediction.latencySeconds = latencyCycles / cyclesPerSecond;
  double blocksPerSM = blocks / std::min(sms, blocks);
  prediction.issueSeconds = blocksPerSM * issue / cyclesPerSecond;
  prediction.fp32Seconds = blocksPerSM * fp32 / cyclesPerSecond;
  prediction.fp64Seconds = blocksPerSM * fp64 / cyclesPerSecond;
  prediction.loadStoreSeconds = blocksPerSM * loadStore / cyclesPerSecond;

  prediction.dramSeconds =
      (profile.compulsoryReadBytes + profile.compulsoryWriteBytes) / (device.dramGBs * 1e9);
  prediction.l2Seconds = profile.l2Bytes() / (device.l2GBs * 1e9);
  // Global atomics: through L2's atomic units, and one after the other on
  // each element when lanes target few (a histogram's bins).
  double atomicUpdates = 0, busiestElement = 0;
  for (const AccessProfile &access : profile.accesses)
    if (access.kind == AccessProfile::Kind::Atomic && access.memory == MemorySpace::Global) {
      atomicUpdates += access.activeLanes;
      busiestElement =
          std::max(busiestElement, access.activeLanes / std::max(access.atomicTargets, 1.0));
    }
  prediction.atomicSeconds = std::max(atomicUpdates / (device.atomicsPerCycle * cyclesPerSecond),
                                      busiestElement * device.sameAddressAtomicNs * 1e-9);
  prediction.overheadSeconds = device.launchMicroseconds * 1e-6;

  std::pair<double, const char *> bounds[] = {{prediction.dramSeconds, "DRAM"},
                                              {prediction.l2Seconds, "L2"},
                                              {prediction.atomicSeconds, "atomics"},
                                              {prediction.smSeconds, "SM"}};
  auto [longest, bound] =
      *std::ranges::max_element(bounds, {}, [](const auto &entry) { return entry.first; });
  // DRAM, L2 and the SMs work at once, but not in perfect overlap: blocks
  // start in waves and wait for their loads before they compute, so a
  // launch whose memory and SM times are close takes longer than either.
  // The launch takes their 4-norm: the longest alone when the others are
  // far shorter, 19% more than it when two are equal.
  constexpr double kOverlapNorm = 4;
  double memoryOrSM =
      std::max({prediction.dramSeconds, prediction.l2Seconds, prediction.smSeconds});
  if (memoryOrSM > 0) {
    double sum = 0;
    for (double part : {prediction.dramSeconds, prediction.l2Seconds, prediction.smSeconds})
      sum += std::pow(part / memoryOrSM, kOverlapNorm);
    longest = std::max(memoryOrSM * std::pow(sum, 1 / kOverlapNorm), prediction.atomicSeconds);
  }
  prediction.seconds = longest + prediction.overheadSeconds;
  prediction.bound = bound;
  if (prediction.bound == "SM") {
    // Which of the SM's limits: the waits of the critical path, or a pipe.
    std::pair<double, const char *> pipes[] = {{prediction.fp32Seconds, "FP32"},
                                               {prediction.fp64Seconds, "FP64"},
                                               {prediction.loadStoreSeconds, "load/store"},
                                               {prediction.issueSeconds, "issue"}};
    auto [busiest, pipe] =
        *std::ranges::max_element(pipes, {}, [](const auto &entry) { return entry.first; });
    prediction.bound = busiest >= prediction.latencySeconds ? pipe : "latency";
  }
  if (prediction.overheadSeconds > longest)
    prediction.bound = "launch";
  return prediction;
}

namespace {

// Walks a host program with the values of its sizes, predicting each launch.
// The GPU's view of the host code: launches predicted per kernel and
// geometry; a fill of device memory or a host operation between launches
// costs the device's overhead.
class GpuHostWalk : public HostWalk {
public:
  GpuHostWalk(const GpuDevice &device, const Function &function,
              const std::map<std::string, int64_t> &values,
              const std::map<std::string, CompiledKernel> &compiled)
      : HostWalk(function, values), device_(device), compiled_(compiled) {}

  ProgramPrediction predict() {
    result_.device = device_.description;
    run();
    result_.approximate |= approximate();
    for (const LaunchPrediction &prediction : std::views::values(predictions_)) {
      result_.launches.push_back(prediction);
      result_.seconds += prediction.seconds * prediction.launches;
    }
    std::ranges::stable_sort(result_.launches, {},
                             [](const LaunchPrediction &launch) { return launch.profile.kernel; });
    result_.seconds += result_.hostSeconds;
    return result_;
  }

protected:
  // A global temporary is cleared before use: a fill of its bytes.
  void allocated(double bytes, double times) override {
    result_.hostSeconds +=
        times * (device_.hostOperationMicroseconds * 1e-6 + bytes / (device_.dramGBs * 1e9));
  }
  void stored(const ir::Store &, double times) override {
    result_.hostSeconds += times * device_.hostOperationMicroseconds * 1e-6;
  }
  void launched(const LaunchSite &site, double times) override {
    auto found = predictions_.find(site.key);
    if (found == predictions_.end()) {
      CompiledKernel facts;
      if (auto known = compiled_.find(site.kernel.name); known != compiled_.end())
        facts = known->second;
      KernelProfile profile = profileKernel(site.kernel, site.shape, site.values, facts.loops);
      result_.approximate |= profile.approximate;
      found = predictions_.emplace(site.key, predictLaunch(device_, profile, facts)).first;
      found->second.launches = 0;
    }
    found->second.launches += times;
  }

private:
  const GpuDevice &device_;
  const std::map<std::string, CompiledKernel> &compiled_;
  std::map<std::string, LaunchPrediction> predictions_;
  ProgramPrediction result_;
};

} // namespace

ProgramPrediction predictProgram(const GpuDevice &device, const Function &function,
                                 const std::map<std::string, int64_t> &values,
                                 const std::map<std::string, CompiledKernel> &compiled) {
  return GpuHostWalk(device, function, values, compiled).predict();
}

} // namespace loopc::perf
