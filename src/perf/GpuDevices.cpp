// The table of GPUs the performance model knows (see GpuDevices.h).
#include "perf/GpuDevices.h"

#include <algorithm>
#include <cctype>

namespace loopc::perf {

namespace {

// A copy kernel reaches this fraction of the data sheet's DRAM bandwidth
// (H100 SXM: 2950 of 3350 GB/s); devices not measured take the same.
constexpr double kAchievedDramFraction = 0.88;
// L2 read bandwidth per SM and GHz of SM clock, from the H100's ~5.5 TB/s.
constexpr double kL2GBsPerSMGHz = 21.0;

GpuDevice h100Sxm() {
  GpuDevice device;
  device.name = "h100";
  device.description = "NVIDIA H100 SXM5 80 GB (HBM3)";
  device.driverNames = {"H100 80GB HBM3", "H100 SXM"};
  device.calibration = "measured";
  device.multiprocessors = 132;
  device.clockGHz = 1.98;
  device.fp32Lanes = 128;
  device.fp64Lanes = 64;
  device.sharedBytesPerSM = 228 * 1024;
  device.l1BytesPerSM = 256 * 1024;
  device.dramGBs = 2950;
  device.l2GBs = kL2GBsPerSMGHz * 132 * 1.98;
  device.l2Bytes = 50LL << 20;
  device.memoryLatencyNs = 560;
  device.l2LatencyNs = 150;
  device.sameAddressAtomicNs = 65;
  device.atomicsPerCycle = 35;
  device.launchMicroseconds = 2.5;
  device.hostOperationMicroseconds = 5;
  return device;
}

// A device scaled from the H100 SXM's calibrated figures by its data sheet.
GpuDevice fromDataSheet(GpuDevice device, double dataSheetDramGBs) {
  device.calibration = "data sheet";
  device.dramGBs = kAchievedDramFraction * dataSheetDramGBs;
  device.l2GBs = kL2GBsPerSMGHz * device.multiprocessors * device.clockGHz;
  return device;
}

std::vector<GpuDevice> makeTable() {
  std::vector<GpuDevice> table = {h100Sxm()};

  GpuDevice pcie = h100Sxm();
  pcie.name = "h100-pcie";
  pcie.description = "NVIDIA H100 PCIe 80 GB (HBM2e)";
  pcie.driverNames = {"H100 PCIe"};
  pcie.multiprocessors = 114;
  pcie.clockGHz = 1.755;
  table.push_back(fromDataSheet(pcie, 2000));

  // The H200 is the H100's chip with HBM3e: measured, a copy kernel moves
  // 4090 GB/s (85% of the data sheet's 4800) and the kernels of
  // tests/perf/h200_measured.tsv fit a longer memory latency.
  GpuDevice h200 = h100Sxm();
  h200.name = "h200";
  h200.description = "NVIDIA H200 SXM 141 GB (HBM3e)";
  h200.driverNames = {"H200"};
  h200.dramGBs = 4090;
  h200.memoryLatencyNs = 650;
  table.push_back(h200);

  GpuDevice a100 = h100Sxm();
  a100.name = "a100";
  a100.description = "NVIDIA A100 SXM4 80 GB (HBM2e)";
  a100.driverNames = {"A100"};
  a100.ptxTarget = "sm_80";
  a100.multiprocessors = 108;
  a100.clockGHz = 1.41;
  a100.fp32Lanes = 64;
  a100.fp64Lanes = 32;
  a100.sharedBytesPerSM = 164 * 1024;
  a100.l1BytesPerSM = 192 * 1024;
  a100.l2Bytes = 40LL << 20;
  table.push_back(fromDataSheet(a100, 2039));

  GpuDevice l4 = h100Sxm();
  l4.name = "l4";
  l4.description = "NVIDIA L4 24 GB (GDDR6)";
  l4.driverNames = {"L4"};
  l4.ptxTarget = "sm_89";
  l4.multiprocessors = 58;
  l4.clockGHz = 2.04;
  l4.fp32Lanes = 128;
  l4.fp64Lanes = 2;
  l4.sharedBytesPerSM = 100 * 1024;
  l4.l1BytesPerSM = 128 * 1024;
  l4.maxThreadsPerSM = 1536;
  l4.maxBlocksPerSM = 24;
  l4.l2Bytes = 48LL << 20;
  table.push_back(fromDataSheet(l4, 300));
  return table;
}

std::string lowercase(std::string text) {
  std::ranges::transform(text, text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

} // namespace

double GpuDevice::fp32PeakFlops() const {
  return 2.0 * fp32Lanes * multiprocessors * clockGHz * 1e9;
}

const std::vector<GpuDevice> &gpuDevices() {
  static const std::vector<GpuDevice> table = makeTable();
  return table;
}

const GpuDevice *gpuDeviceForDriverName(const std::string &driverName) {
  // Longer names first: "H100 PCIe" before a bare "H100".
  const GpuDevice *best = nullptr;
  size_t bestLength = 0;
  for (const GpuDevice &device : gpuDevices())
    for (const std::string &known : device.driverNames)
      if (driverName.find(known) != std::string::npos && known.size() > bestLength) {
        best = &device;
        bestLength = known.size();
      }
  return best;
}

const GpuDevice &typicalGpuDeviceFor(const std::string &ptxTarget) {
  for (const GpuDevice &device : gpuDevices())
    if (device.ptxTarget == ptxTarget)
      return device;
  return gpuDevices().front();
}

Expected<const GpuDevice *> findGpuDevice(const std::string &name) {
  for (const GpuDevice &device : gpuDevices())
    if (lowercase(device.name) == lowercase(name))
      return &device;
  if (const GpuDevice *device = gpuDeviceForDriverName(name))
    return device;
  std::string known;
  for (const GpuDevice &device : gpuDevices())
    known += (known.empty() ? "" : ", ") + device.name;
  return makeError("unknown device model '" + name + "'; the models are " + known);
}

} // namespace loopc::perf
