// The C API: argument checks, handle ownership, and the last-error message of
// each runtime. The devices do the work (CudaDevice.cpp, CpuDevice.cpp).
#include "Device.h"
#include "loopc/generated.h"

#include <algorithm>

using namespace loopc::runtime;

struct loopc_runtime {
  std::unique_ptr<Device> device;
  std::string lastError;
};

namespace {

// Failures with no runtime to hold them: opening, and calls given none.
thread_local std::string threadLastError;

loopc_status record(loopc_runtime *runtime, const Outcome &outcome) {
  if (outcome)
    return LOOPC_SUCCESS;
  (runtime ? runtime->lastError : threadLastError) = outcome.error().message;
  return outcome.error().status;
}

template <typename T> loopc_status record(loopc_runtime *runtime, const OutcomeOr<T> &outcome) {
  return outcome ? LOOPC_SUCCESS : record(runtime, std::unexpected(outcome.error()));
}

loopc_status invalid(loopc_runtime *runtime, const char *function, const char *problem) {
  return record(runtime,
                fail(LOOPC_ERROR_INVALID_ARGUMENT, std::string(function) + ": " + problem));
}

} // namespace

namespace loopc::runtime {

std::string describeLaunch(const loopc_launch_config &config, const std::string &functionName) {
  std::string description =
      "kernel '" +
      std::string(config.kernel_name && *config.kernel_name ? config.kernel_name : functionName) +
      "'";
  if (config.source_location && *config.source_location)
    description += std::string(" at ") + config.source_location;
  return description;
}

} // namespace loopc::runtime

// Every entry point starts with this: a null runtime is reported through the
// thread's last error, since it has no runtime to hold the message.
#define LOOPC_REQUIRE_RUNTIME(runtime)                                                             \
  do {                                                                                             \
    if (!(runtime))                                                                                \
      return invalid(nullptr, __func__, "the runtime is NULL");                                    \
  } while (false)

extern "C" {

const char *loopc_status_name(loopc_status status) {
  switch (status) {
  case LOOPC_SUCCESS:
    return "LOOPC_SUCCESS";
  case LOOPC_ERROR_INVALID_ARGUMENT:
    return "LOOPC_ERROR_INVALID_ARGUMENT";
  case LOOPC_ERROR_NO_DRIVER:
    return "LOOPC_ERROR_NO_DRIVER";
  case LOOPC_ERROR_NO_DEVICE:
    return "LOOPC_ERROR_NO_DEVICE";
  case LOOPC_ERROR_DRIVER:
    return "LOOPC_ERROR_DRIVER";
  case LOOPC_ERROR_UNSUPPORTED:
    return "LOOPC_ERROR_UNSUPPORTED";
  case LOOPC_ERROR_OUT_OF_MEMORY:
    return "LOOPC_ERROR_OUT_OF_MEMORY";
  case LOOPC_ERROR_KERNEL_FAULT:
    return "LOOPC_ERROR_KERNEL_FAULT";
  }
  return "LOOPC_ERROR_UNKNOWN";
}

loopc_status loopc_runtime_open(loopc_device_kind kind, int ordinal, loopc_runtime **out) {
  if (!out)
    return invalid(nullptr, __func__, "the result pointer is NULL");
  *out = nullptr;
  OutcomeOr<std::unique_ptr<Device>> device =
      kind == LOOPC_DEVICE_CUDA ? openCudaDevice(ordinal)
      : kind == LOOPC_DEVICE_CPU
          ? openCpuDevice(ordinal)
          : fail(LOOPC_ERROR_INVALID_ARGUMENT, "loopc_runtime_open: unknown device kind " +
                                                   std::to_string(static_cast<int>(kind)));
  if (!device)
    return record(nullptr, std::unexpected(device.error()));
  *out = new loopc_runtime{std::move(*device), {}};
  return LOOPC_SUCCESS;
}

void loopc_runtime_close(loopc_runtime *runtime) { delete runtime; }

loopc_status loopc_report_failure(loopc_status status, const char *message) {
  threadLastError = message ? message : "";
  return status;
}

const char *loopc_runtime_last_error(const loopc_runtime *runtime) {
  return (runtime ? runtime->lastError : threadLastError).c_str();
}

loopc_status loopc_runtime_device_info(loopc_runtime *runtime, loopc_device_info *out) {
  LOOPC_REQUIRE_RUNTIME(runtime);
  if (!out)
    return invalid(runtime, __func__, "the result pointer is NULL");
  *out = loopc_device_info{};
  return record(runtime, runtime->device->info(*out));
}

loopc_status loopc_buffer_alloc(loopc_runtime *runtime, size_t bytes, loopc_device_ptr *out) {
  LOOPC_REQUIRE_RUNTIME(runtime);
  if (!out)
    return invalid(runtime, __func__, "the result pointer is NULL");
  auto buffer = runtime->device->allocate(bytes);
  *out = buffer.value_or(0);
  return record(runtime, buffer);
}

loopc_status loopc_buffer_free(loopc_runtime *runtime, loopc_device_ptr buffer) {
  LOOPC_REQUIRE_RUNTIME(runtime);
  return record(runtime, runtime->device->release(buffer));
}

loopc_status loopc_copy_to_device(loopc_runtime *runtime, loopc_device_ptr destination,
                                  const void *source, size_t bytes) {
  LOOPC_REQUIRE_RUNTIME(runtime);
  if (bytes && (!destination || !source))
    return invalid(runtime, __func__, "a NULL source or destination");
  return record(runtime, runtime->device->copyToDevice(destination, source, bytes));
}

loopc_status loopc_copy_to_host(loopc_runtime *runtime, void *destination, loopc_device_ptr source,
                                size_t bytes) {
  LOOPC_REQUIRE_RUNTIME(runtime);
  if (bytes && (!destination || !source))
    return invalid(runtime, __func__, "a NULL source or destination");
  return record(runtime, runtime->device->copyToHost(destination, source, bytes));
}

loopc_status loopc_copy_on_device(loopc_runtime *runtime, loopc_device_ptr destination,
                                  loopc_device_ptr source, size_t bytes) {
  LOOPC_REQUIRE_RUNTIME(runtime);
  if (bytes && (!destination || !source))
    return invalid(runtime, __func__, "a NULL source or destination");
  return record(runtime, runtime->device->copyOnDevice(destination, source, bytes));
}

loopc_status loopc_memset(loopc_runtime *runtime, loopc_device_ptr destination, unsigned char value,
                          size_t bytes) {
  LOOPC_REQUIRE_RUNTIME(runtime);
  if (bytes && !destination)
    return invalid(runtime, __func__, "a NULL destination");
  return record(runtime, runtime->device->fill(destination, value, bytes));
}

loopc_status loopc_module_load_ptx(loopc_runtime *runtime, const char *ptx, const char *module_name,
                                   loopc_module **out) {
  LOOPC_REQUIRE_RUNTIME(runtime);
  if (!ptx || !out)
    return invalid(runtime, __func__, "the PTX text or the result pointer is NULL");
  *out = nullptr;
  auto module = runtime->device->loadPtx(ptx, module_name ? module_name : "<unnamed>");
  if (!module)
    return record(runtime, std::unexpected(module.error()));
  *out = module->release();
  return LOOPC_SUCCESS;
}

const char *loopc_module_jit_log(const loopc_module *module) {
  return module ? module->jitLog.c_str() : "";
}

loopc_status loopc_module_unload(loopc_runtime *runtime, loopc_module *module) {
  LOOPC_REQUIRE_RUNTIME(runtime);
  if (!module)
    return LOOPC_SUCCESS;
  loopc_status status = record(runtime, runtime->device->unload(*module));
  delete module;
  return status;
}

loopc_status loopc_module_function(loopc_runtime *runtime, loopc_module *module, const char *name,
                                   loopc_function **out) {
  LOOPC_REQUIRE_RUNTIME(runtime);
  if (!module || !name || !out)
    return invalid(runtime, __func__, "the module, the name or the result pointer is NULL");
  *out = nullptr;
  auto known = std::ranges::find(module->functions, std::string_view(name),
                                 [](const auto &function) { return function->name; });
  if (known != module->functions.end()) {
    *out = known->get();
    return LOOPC_SUCCESS;
  }
  auto handle = runtime->device->findFunction(*module, name);
  if (!handle)
    return record(runtime, std::unexpected(handle.error()));
  module->functions.push_back(std::make_unique<loopc_function>(module, name, *handle));
  *out = module->functions.back().get();
  return LOOPC_SUCCESS;
}

loopc_status loopc_function_info_get(loopc_runtime *runtime, const loopc_function *function,
                                     loopc_function_info *out) {
  LOOPC_REQUIRE_RUNTIME(runtime);
  if (!function || !out)
    return invalid(runtime, __func__, "the function or the result pointer is NULL");
  *out = loopc_function_info{};
  return record(runtime, runtime->device->functionInfo(*function, *out));
}

loopc_status loopc_launch(loopc_runtime *runtime, const loopc_function *function,
                          const loopc_launch_config *config, void **params, float *elapsed_ms) {
  LOOPC_REQUIRE_RUNTIME(runtime);
  if (!function || !config)
    return invalid(runtime, __func__, "the function or the launch configuration is NULL");
  for (int axis = 0; axis < 3; ++axis)
    if (config->grid[axis] == 0 || config->block[axis] == 0)
      return record(runtime, fail(LOOPC_ERROR_INVALID_ARGUMENT,
                                  "launching " + describeLaunch(*config, function->name) +
                                      ": every grid and block extent must be at least 1"));
  return record(runtime, runtime->device->launch(*function, *config, params, elapsed_ms));
}

loopc_status loopc_synchronize(loopc_runtime *runtime) {
  LOOPC_REQUIRE_RUNTIME(runtime);
  return record(runtime, runtime->device->synchronize());
}

loopc_status loopc_event_create(loopc_runtime *runtime, loopc_event **out) {
  LOOPC_REQUIRE_RUNTIME(runtime);
  if (!out)
    return invalid(runtime, __func__, "the result pointer is NULL");
  *out = nullptr;
  auto event = std::make_unique<loopc_event>();
  if (auto created = runtime->device->createEvent(*event); !created)
    return record(runtime, created);
  *out = event.release();
  return LOOPC_SUCCESS;
}

loopc_status loopc_event_destroy(loopc_runtime *runtime, loopc_event *event) {
  LOOPC_REQUIRE_RUNTIME(runtime);
  if (!event)
    return LOOPC_SUCCESS;
  loopc_status status = record(runtime, runtime->device->destroyEvent(*event));
  delete event;
  return status;
}

loopc_status loopc_event_record(loopc_runtime *runtime, loopc_event *event) {
  LOOPC_REQUIRE_RUNTIME(runtime);
  if (!event)
    return invalid(runtime, __func__, "the event is NULL");
  return record(runtime, runtime->device->recordEvent(*event));
}

loopc_status loopc_event_elapsed_ms(loopc_runtime *runtime, loopc_event *start, loopc_event *end,
                                    float *out) {
  LOOPC_REQUIRE_RUNTIME(runtime);
  if (!start || !end || !out)
    return invalid(runtime, __func__, "an event or the result pointer is NULL");
  auto milliseconds = runtime->device->elapsedMs(*start, *end);
  *out = milliseconds.value_or(0.0f);
  return record(runtime, milliseconds);
}

} // extern "C"
