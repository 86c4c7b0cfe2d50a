// The runtime's internal device interface: the C API in Api.cpp checks
// arguments and records error messages, and one Device per kind (CudaDevice,
// CpuDevice) does the work. Failures are values carrying their message.
#pragma once

#include "loopc/runtime.h"

#include <chrono>
#include <expected>
#include <memory>
#include <string>
#include <vector>

namespace loopc::runtime {

struct Failure {
  loopc_status status;
  std::string message;
};

using Outcome = std::expected<void, Failure>;
template <typename T> using OutcomeOr = std::expected<T, Failure>;

inline std::unexpected<Failure> fail(loopc_status status, std::string message) {
  return std::unexpected(Failure{status, std::move(message)});
}

} // namespace loopc::runtime

// The C API's opaque handles. Device-specific handles are kept as `void *`
// so this header does not depend on cuda.h.
struct loopc_function {
  loopc_module *module = nullptr;
  std::string name;
  void *handle = nullptr; // CUfunction
};

struct loopc_module {
  std::string name;
  std::string jitLog;
  void *handle = nullptr; // CUmodule
  std::vector<std::unique_ptr<loopc_function>> functions;
};

struct loopc_event {
  void *handle = nullptr;                           // CUevent
  std::chrono::steady_clock::time_point recordedAt; // the cpu device's clock
  bool recorded = false;
};

namespace loopc::runtime {

class Device {
public:
  virtual ~Device() = default;

  virtual Outcome info(loopc_device_info &out) = 0;

  virtual OutcomeOr<loopc_device_ptr> allocate(size_t bytes) = 0;
  virtual Outcome release(loopc_device_ptr buffer) = 0;
  virtual Outcome copyToDevice(loopc_device_ptr destination, const void *source, size_t bytes) = 0;
  virtual Outcome copyToHost(void *destination, loopc_device_ptr source, size_t bytes) = 0;
  virtual Outcome copyOnDevice(loopc_device_ptr destination, loopc_device_ptr source,
                               size_t bytes) = 0;
  virtual Outcome fill(loopc_device_ptr destination, unsigned char value, size_t bytes) = 0;

  virtual OutcomeOr<std::unique_ptr<loopc_module>> loadPtx(const char *ptx,
                                                           const std::string &name) = 0;
  virtual Outcome unload(loopc_module &module) = 0;
  virtual OutcomeOr<void *> findFunction(loopc_module &module, const char *name) = 0;
  virtual Outcome functionInfo(const loopc_function &function, loopc_function_info &out) = 0;
  virtual Outcome launch(const loopc_function &function, const loopc_launch_config &config,
                         void **params, float *elapsedMs) = 0;
  virtual Outcome synchronize() = 0;

  virtual Outcome createEvent(loopc_event &event) = 0;
  virtual Outcome destroyEvent(loopc_event &event) = 0;
  virtual Outcome recordEvent(loopc_event &event) = 0;
  virtual OutcomeOr<float> elapsedMs(loopc_event &start, loopc_event &end) = 0;
};

OutcomeOr<std::unique_ptr<Device>> openCudaDevice(int ordinal);
OutcomeOr<std::unique_ptr<Device>> openCpuDevice(int ordinal);

// "kernel 'matmul' at samples/matmul.loop:3:5", or what part of it is known.
std::string describeLaunch(const loopc_launch_config &config, const std::string &functionName);

} // namespace loopc::runtime
