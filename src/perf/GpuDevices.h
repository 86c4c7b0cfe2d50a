// The GPUs the performance model knows: what each SM has (lanes, schedulers,
// registers, shared memory, resident threads and blocks), what the whole chip
// moves (DRAM and L2 bandwidth, L2 size), and the latencies and overheads
// that decide when a kernel waits rather than computes.
//
// Bandwidths are what a copy kernel achieves, not the data sheet's peak: the
// H100 SXM's were measured (a device-to-device copy reads and writes 2950
// GB/s of the 3350 the data sheet gives); the other devices take the same
// fraction of their data sheet's figure until a run measures them. Latencies
// and the launch overhead were fitted to the H100 runs recorded in
// bench/gpu/results (tests/perf_test.cpp keeps the fit from regressing);
// docs/perf.md says which figure comes from where.
#pragma once

#include "support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace loopc::perf {

struct GpuDevice {
  std::string name;        // what --device-model takes: "h100"
  std::string description; // "NVIDIA H100 SXM5 80 GB (HBM3)"
  // Substrings of the CUDA driver's device name that mean this device
  // ("H100 80GB HBM3"), so `loopc bench` on a GPU finds its model.
  std::vector<std::string> driverNames;
  // Where the figures come from: "measured" (calibrated against runs on the
  // device) or "data sheet" (scaled from the vendor's figures).
  std::string calibration;
  std::string ptxTarget = "sm_90"; // the architecture its kernels are compiled for

  int multiprocessors = 0;
  double clockGHz = 0; // SM clock under a sustained load
  int fp32Lanes = 0;   // FP32 multiply-adds per SM per cycle
  int fp64Lanes = 0;   // FP64 multiply-adds per SM per cycle
  int schedulers = 4;  // warp instructions issued per SM per cycle
  int registersPerSM = 65536;
  int registerAllocationUnit = 256; // registers are given to a warp in these
  int maxRegistersPerThread = 255;
  int sharedBytesPerSM = 0; // the most all resident blocks may use
  int sharedBytesReservedPerBlock = 1024;
  int l1BytesPerSM = 0; // L1 and shared memory together
  int maxThreadsPerSM = 2048;
  int maxBlocksPerSM = 32;
  double dramGBs = 0; // achieved by a copy: reads plus writes
  double l2GBs = 0;   // achieved L2 read bandwidth
  int64_t l2Bytes = 0;
  // A global load's round trip under load, in ns, from DRAM and from L2:
  // what a warp waits for before it can use what it loaded.
  double memoryLatencyNs = 0;
  double l2LatencyNs = 0;
  // The cycles between two instructions of one warp when it runs alone:
  // many wait for the one before (an FMA's result after 4 cycles, a shared
  // load's after 30), so a warp issues about every other cycle.
  double warpIssueCycles = 2;
  // A shared memory load's latency, a global load's that L1 serves, and a
  // barrier's, in cycles.
  double sharedLatencyCycles = 30;
  double l1LatencyCycles = 35;
  double barrierCycles = 40;
  // Global atomic updates of one address follow one another at this pace
  // (the L2 slice owning it serializes them), in ns; updates of different
  // addresses go through L2's atomic units at this many a cycle.
  double sameAddressAtomicNs = 0;
  double atomicsPerCycle = 0;
  // A launch's cost on the GPU's time line when launches follow one another
  // (the gap between two kernels), and a host-side copy or fill of device
  // memory between launches, in microseconds.
  double launchMicroseconds = 0;
  double hostOperationMicroseconds = 0;

  // FP32 multiply-adds as flops per second: 2 * lanes * SMs * clock.
  double fp32PeakFlops() const;
};

// The table: h100 (SXM), h100-pcie, h200, a100, l4.
const std::vector<GpuDevice> &gpuDevices();

// The device named `name` (a table name, case-insensitive), or the one whose
// driver name contains one of its `driverNames`; an error lists the names.
Expected<const GpuDevice *> findGpuDevice(const std::string &name);

// The first device of the table whose kernels are compiled for `ptxTarget`
// (h100 for sm_90, a100 for sm_80, l4 for sm_89; h100 for any other): what
// a pipeline for no device at hand sizes its variants for.
const GpuDevice &typicalGpuDeviceFor(const std::string &ptxTarget);

// The model of the GPU the CUDA driver calls `driverName`, if it is known.
const GpuDevice *gpuDeviceForDriverName(const std::string &driverName);

} // namespace loopc::perf
