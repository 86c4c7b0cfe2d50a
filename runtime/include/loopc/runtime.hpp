// C++ over loopc's runtime C API: owning types that release their buffer,
// module, event or runtime when they go out of scope, and failures as
// std::expected values carrying the runtime's message.
//
// A Runtime must outlive everything made from it; Functions are views that
// live as long as their Module.
#pragma once

#include "loopc/runtime.h"

#include <version>
#if !defined(__cpp_lib_expected)
#error "loopc/runtime.hpp needs C++23 (std::expected); from C or older C++ use loopc/runtime.h"
#endif

#include <array>
#include <cstddef>
#include <expected>
#include <span>
#include <string>
#include <utility>

namespace loopc::runtime {

struct RuntimeError {
  loopc_status status;
  std::string message;
};

template <typename T = void> using Result = std::expected<T, RuntimeError>;

namespace detail {
inline Result<> check(const loopc_runtime *runtime, loopc_status status) {
  if (status == LOOPC_SUCCESS)
    return {};
  return std::unexpected(RuntimeError{status, loopc_runtime_last_error(runtime)});
}
// The value made by `make` when the call succeeded. (GCC 12's
// std::expected has no transform.)
template <typename Make>
auto valueIf(const loopc_runtime *runtime, loopc_status status, Make make)
    -> Result<decltype(make())> {
  if (status != LOOPC_SUCCESS)
    return std::unexpected(RuntimeError{status, loopc_runtime_last_error(runtime)});
  return make();
}
} // namespace detail

enum class DeviceKind { Cuda = LOOPC_DEVICE_CUDA, Cpu = LOOPC_DEVICE_CPU };

struct LaunchConfig {
  std::array<uint32_t, 3> grid = {1, 1, 1};
  std::array<uint32_t, 3> block = {1, 1, 1};
  uint32_t dynamicSharedBytes = 0;
  std::string kernelName;     // for messages; the function's name when empty
  std::string sourceLocation; // "samples/matmul.loop:3:5", for messages
};

// The parameter array a launch takes: one pointer to each argument, which
// must stay alive until the launch call returns.
template <typename... Args> std::array<void *, sizeof...(Args)> kernelParams(Args &...args) {
  return {const_cast<void *>(static_cast<const void *>(&args))...};
}

class DeviceBuffer {
public:
  DeviceBuffer() = default;
  DeviceBuffer(DeviceBuffer &&other) noexcept { *this = std::move(other); }
  DeviceBuffer &operator=(DeviceBuffer &&other) noexcept {
    if (this != &other) {
      reset();
      runtime = std::exchange(other.runtime, nullptr);
      address_ = std::exchange(other.address_, 0);
      bytes = std::exchange(other.bytes, 0);
    }
    return *this;
  }
  ~DeviceBuffer() { reset(); }

  loopc_device_ptr address() const { return address_; }
  size_t size() const { return bytes; }

  // Copies `source` to the start of the buffer.
  Result<> copyFromHost(const void *source, size_t count) {
    return detail::check(runtime, loopc_copy_to_device(runtime, address_, source, count));
  }
  Result<> copyToHost(void *destination, size_t count) const {
    return detail::check(runtime, loopc_copy_to_host(runtime, destination, address_, count));
  }
  template <typename T> Result<> upload(std::span<const T> values) {
    return copyFromHost(values.data(), values.size_bytes());
  }
  template <typename T> Result<> download(std::span<T> values) const {
    return copyToHost(values.data(), values.size_bytes());
  }
  Result<> fill(unsigned char value) {
    return detail::check(runtime, loopc_memset(runtime, address_, value, bytes));
  }

private:
  friend class Runtime;
  DeviceBuffer(loopc_runtime *runtime, loopc_device_ptr address, size_t bytes)
      : runtime(runtime), address_(address), bytes(bytes) {}
  void reset() {
    if (runtime && address_)
      loopc_buffer_free(runtime, address_);
    runtime = nullptr;
    address_ = 0;
    bytes = 0;
  }

  loopc_runtime *runtime = nullptr;
  loopc_device_ptr address_ = 0;
  size_t bytes = 0;
};

class Function {
public:
  Function() = default;
  loopc_function *handle() const { return function; }
  Result<loopc_function_info> info() const {
    loopc_function_info out{};
    return detail::valueIf(runtime, loopc_function_info_get(runtime, function, &out),
                           [&] { return out; });
  }

private:
  friend class Module;
  Function(loopc_runtime *runtime, loopc_function *function)
      : runtime(runtime), function(function) {}
  loopc_runtime *runtime = nullptr;
  loopc_function *function = nullptr;
};

class Module {
public:
  Module() = default;
  Module(Module &&other) noexcept { *this = std::move(other); }
  Module &operator=(Module &&other) noexcept {
    if (this != &other) {
      reset();
      runtime = std::exchange(other.runtime, nullptr);
      module = std::exchange(other.module, nullptr);
    }
    return *this;
  }
  ~Module() { reset(); }

  Result<Function> function(const std::string &name) const {
    loopc_function *found = nullptr;
    return detail::valueIf(runtime, loopc_module_function(runtime, module, name.c_str(), &found),
                           [&] { return Function(runtime, found); });
  }
  // ptxas's report of registers and spills, from the driver's JIT.
  std::string jitLog() const { return loopc_module_jit_log(module); }

private:
  friend class Runtime;
  Module(loopc_runtime *runtime, loopc_module *module) : runtime(runtime), module(module) {}
  void reset() {
    if (runtime && module)
      loopc_module_unload(runtime, module);
    runtime = nullptr;
    module = nullptr;
  }
  loopc_runtime *runtime = nullptr;
  loopc_module *module = nullptr;
};

class Event {
public:
  Event() = default;
  Event(Event &&other) noexcept { *this = std::move(other); }
  Event &operator=(Event &&other) noexcept {
    if (this != &other) {
      reset();
      runtime = std::exchange(other.runtime, nullptr);
      event = std::exchange(other.event, nullptr);
    }
    return *this;
  }
  ~Event() { reset(); }

  Result<> record() { return detail::check(runtime, loopc_event_record(runtime, event)); }
  // Milliseconds from `start` to this event; waits for this event.
  Result<float> elapsedSince(const Event &start) const {
    float milliseconds = 0;
    return detail::valueIf(runtime,
                           loopc_event_elapsed_ms(runtime, start.event, event, &milliseconds),
                           [&] { return milliseconds; });
  }

private:
  friend class Runtime;
  Event(loopc_runtime *runtime, loopc_event *event) : runtime(runtime), event(event) {}
  void reset() {
    if (runtime && event)
      loopc_event_destroy(runtime, event);
    runtime = nullptr;
    event = nullptr;
  }
  loopc_runtime *runtime = nullptr;
  loopc_event *event = nullptr;
};

class Runtime {
public:
  static Result<Runtime> open(DeviceKind kind, int ordinal = 0) {
    loopc_runtime *runtime = nullptr;
    loopc_status status =
        loopc_runtime_open(static_cast<loopc_device_kind>(kind), ordinal, &runtime);
    return detail::valueIf(nullptr, status, [&] { return Runtime(runtime); });
  }

  Runtime(Runtime &&other) noexcept : runtime(std::exchange(other.runtime, nullptr)) {}
  Runtime &operator=(Runtime &&other) noexcept {
    if (this != &other) {
      loopc_runtime_close(runtime);
      runtime = std::exchange(other.runtime, nullptr);
    }
    return *this;
  }
  ~Runtime() { loopc_runtime_close(runtime); }

  loopc_runtime *handle() const { return runtime; }

  Result<loopc_device_info> info() const {
    loopc_device_info out{};
    return detail::valueIf(runtime, loopc_runtime_device_info(runtime, &out), [&] { return out; });
  }

  Result<DeviceBuffer> allocate(size_t bytes) const {
    loopc_device_ptr address = 0;
    return detail::valueIf(runtime, loopc_buffer_alloc(runtime, bytes, &address),
                           [&] { return DeviceBuffer(runtime, address, bytes); });
  }

  Result<Module> loadPtx(const std::string &ptx, const std::string &moduleName) const {
    loopc_module *module = nullptr;
    return detail::valueIf(runtime,
                           loopc_module_load_ptx(runtime, ptx.c_str(), moduleName.c_str(), &module),
                           [&] { return Module(runtime, module); });
  }

  // An asynchronous launch; its failures surface at synchronize().
  Result<> launch(const Function &function, const LaunchConfig &config,
                  std::span<void *> params) const {
    return launchWith(function, config, params, nullptr);
  }
  // A launch that waits for the kernel and gives its GPU time in milliseconds.
  Result<float> launchTimed(const Function &function, const LaunchConfig &config,
                            std::span<void *> params) const {
    float milliseconds = 0;
    if (auto launched = launchWith(function, config, params, &milliseconds); !launched)
      return std::unexpected(launched.error());
    return milliseconds;
  }

  Result<> synchronize() const { return detail::check(runtime, loopc_synchronize(runtime)); }

  // Sets `bytes` bytes at `address` (device memory the runtime did not
  // allocate, such as another library's array) to `value`.
  Result<> fill(loopc_device_ptr address, unsigned char value, size_t bytes) const {
    return detail::check(runtime, loopc_memset(runtime, address, value, bytes));
  }

  Result<Event> createEvent() const {
    loopc_event *event = nullptr;
    return detail::valueIf(runtime, loopc_event_create(runtime, &event),
                           [&] { return Event(runtime, event); });
  }

private:
  explicit Runtime(loopc_runtime *runtime) : runtime(runtime) {}

  Result<> launchWith(const Function &function, const LaunchConfig &config,
                      std::span<void *> params, float *elapsedMs) const {
    loopc_launch_config raw{};
    for (int axis = 0; axis < 3; ++axis) {
      raw.grid[axis] = config.grid[axis];
      raw.block[axis] = config.block[axis];
    }
    raw.dynamic_shared_bytes = config.dynamicSharedBytes;
    raw.kernel_name = config.kernelName.c_str();
    raw.source_location = config.sourceLocation.c_str();
    return detail::check(runtime,
                         loopc_launch(runtime, function.handle(), &raw, params.data(), elapsedMs));
  }

  loopc_runtime *runtime = nullptr;
};

} // namespace loopc::runtime
