// The cpu device: buffers in host memory and wall-clock events, so code that
// moves data and times regions through the runtime runs unchanged on a
// machine without a GPU. It does not run PTX; CPU kernels are compiled and
// run by loopc's JIT, which uses these buffers directly.
#include "Device.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <thread>

namespace loopc::runtime {
namespace {

// Enough for the widest vector loads the CPU code generator emits.
constexpr size_t kBufferAlignment = 64;

std::string processorName() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line))
    if (line.starts_with("model name"))
      if (auto colon = line.find(':'); colon != std::string::npos)
        return line.substr(line.find_first_not_of(' ', colon + 1));
  return "host CPU";
}

void *hostAddress(loopc_device_ptr pointer) { return reinterpret_cast<void *>(pointer); }

class CpuDevice final : public Device {
public:
  Outcome info(loopc_device_info &out) override {
    out.kind = LOOPC_DEVICE_CPU;
    std::string name = processorName();
    std::strncpy(out.name, name.c_str(), sizeof out.name - 1);
    out.name[sizeof out.name - 1] = '\0';
    out.compute_capability_major = 0;
    out.compute_capability_minor = 0;
    out.multiprocessor_count = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    long pages = sysconf(_SC_PHYS_PAGES);
    long pageSize = sysconf(_SC_PAGESIZE);
    out.total_memory_bytes =
        pages > 0 && pageSize > 0 ? static_cast<size_t>(pages) * static_cast<size_t>(pageSize) : 0;
    out.max_threads_per_block = 1024;
    out.max_shared_memory_per_block = 48 * 1024;
    out.warp_size = 1;
    out.driver_version = 0;
    return {};
  }

  OutcomeOr<loopc_device_ptr> allocate(size_t bytes) override {
    if (bytes == 0)
      return 0;
    size_t rounded = (bytes + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment;
    void *memory = std::aligned_alloc(kBufferAlignment, rounded);
    if (!memory)
      return fail(LOOPC_ERROR_OUT_OF_MEMORY,
                  "allocating " + std::to_string(bytes) + " bytes of host memory failed");
    return reinterpret_cast<loopc_device_ptr>(memory);
  }

  Outcome release(loopc_device_ptr buffer) override {
    std::free(hostAddress(buffer));
    return {};
  }

  Outcome copyToDevice(loopc_device_ptr destination, const void *source, size_t bytes) override {
    if (bytes)
      std::memcpy(hostAddress(destination), source, bytes);
    return {};
  }

  Outcome copyToHost(void *destination, loopc_device_ptr source, size_t bytes) override {
    if (bytes)
      std::memcpy(destination, hostAddress(source), bytes);
    return {};
  }

  Outcome copyOnDevice(loopc_device_ptr destination, loopc_device_ptr source,
                       size_t bytes) override {
    if (bytes)
      std::memmove(hostAddress(destination), hostAddress(source), bytes);
    return {};
  }

  Outcome fill(loopc_device_ptr destination, unsigned char value, size_t bytes) override {
    if (bytes)
      std::memset(hostAddress(destination), value, bytes);
    return {};
  }

  OutcomeOr<std::unique_ptr<loopc_module>> loadPtx(const char *, const std::string &name) override {
    return unsupported("loading PTX module '" + name + "'");
  }
  Outcome unload(loopc_module &) override { return {}; }
  OutcomeOr<void *> findFunction(loopc_module &, const char *name) override {
    return unsupported(std::string("looking up kernel '") + name + "'");
  }
  Outcome functionInfo(const loopc_function &function, loopc_function_info &) override {
    return unsupported("querying kernel '" + function.name + "'");
  }
  Outcome launch(const loopc_function &function, const loopc_launch_config &config, void **,
                 float *) override {
    return unsupported("launching " + describeLaunch(config, function.name));
  }

  Outcome synchronize() override { return {}; }

  Outcome createEvent(loopc_event &) override { return {}; }
  Outcome destroyEvent(loopc_event &) override { return {}; }
  Outcome recordEvent(loopc_event &event) override {
    event.recordedAt = std::chrono::steady_clock::now();
    event.recorded = true;
    return {};
  }
  OutcomeOr<float> elapsedMs(loopc_event &start, loopc_event &end) override {
    if (!start.recorded || !end.recorded)
      return fail(
          LOOPC_ERROR_INVALID_ARGUMENT,
          "timing a region: both events must be recorded before their elapsed time is read");
    return std::chrono::duration<float, std::milli>(end.recordedAt - start.recordedAt).count();
  }

private:
  static std::unexpected<Failure> unsupported(const std::string &what) {
    return fail(LOOPC_ERROR_UNSUPPORTED,
                what + ": the cpu device does not run PTX (loopc's CPU JIT runs CPU kernels)");
  }
};

} // namespace

OutcomeOr<std::unique_ptr<Device>> openCpuDevice(int ordinal) {
  if (ordinal != 0)
    return fail(LOOPC_ERROR_NO_DEVICE,
                "no cpu device " + std::to_string(ordinal) + " (the host is cpu device 0)");
  return std::make_unique<CpuDevice>();
}

} // namespace loopc::runtime
