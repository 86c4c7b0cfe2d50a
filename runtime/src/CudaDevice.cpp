// The cuda device: the CUDA Driver API on the device's primary context (the
// context the CUDA runtime and other libraries share; CUDA 13 changed
// cuCtxCreate's signature, the primary context API is stable), the default
// stream, and messages that name the failing call and what it was doing.
#include "CudaDriver.h"
#include "Device.h"

#include <array>

namespace loopc::runtime {
using namespace cuda;
namespace {

// Above this, dynamic shared memory must be opted into per function.
constexpr uint32_t kDefaultDynamicSharedLimit = 48 * 1024;
constexpr size_t kJitLogBytes = 64 * 1024;

// Errors a kernel leaves behind for a later, unrelated call to report.
bool isAsynchronousKernelError(CUresult result) {
  switch (result) {
  case CUDA_ERROR_ILLEGAL_ADDRESS:
  case CUDA_ERROR_LAUNCH_FAILED:
  case CUDA_ERROR_LAUNCH_TIMEOUT:
  case CUDA_ERROR_MISALIGNED_ADDRESS:
  case CUDA_ERROR_ILLEGAL_INSTRUCTION:
  case CUDA_ERROR_INVALID_ADDRESS_SPACE:
  case CUDA_ERROR_INVALID_PC:
  case CUDA_ERROR_HARDWARE_STACK_ERROR:
  case CUDA_ERROR_ASSERT:
    return true;
  default:
    return false;
  }
}

std::string quoted(const std::string &name) { return "'" + name + "'"; }

class CudaDevice final : public Device {
public:
  CudaDevice(std::unique_ptr<CudaDriver> driver, int ordinal)
      : driver(std::move(driver)), ordinal(ordinal) {}

  ~CudaDevice() override {
    if (context)
      makeCurrent(); // the timing events belong to it; nothing to report on failure
    if (timingStart)
      driver->cuEventDestroy(timingStart);
    if (timingEnd)
      driver->cuEventDestroy(timingEnd);
    if (context)
      driver->cuDevicePrimaryCtxRelease(device);
  }

  Outcome open() {
    CUresult initResult = driver->cuInit(0);
    if (initResult == CUDA_ERROR_NO_DEVICE)
      return fail(LOOPC_ERROR_NO_DEVICE,
                  "no CUDA device (cuInit failed: " + driver->describe(initResult) + ")");
    if (initResult != CUDA_SUCCESS)
      return fail(LOOPC_ERROR_DRIVER, "initialising the CUDA driver " + driver->libraryPath +
                                          ": cuInit failed: " + driver->describe(initResult));
    int count = 0;
    if (auto checked =
            check(driver->cuDeviceGetCount(&count), "cuDeviceGetCount", "counting CUDA devices");
        !checked)
      return checked;
    if (count == 0)
      return fail(LOOPC_ERROR_NO_DEVICE,
                  "no CUDA device (the driver " + driver->libraryPath + " sees none)");
    if (ordinal < 0 || ordinal >= count)
      return fail(LOOPC_ERROR_NO_DEVICE, "no CUDA device " + std::to_string(ordinal) +
                                             " (the driver sees " + std::to_string(count) +
                                             (count == 1 ? " device)" : " devices)"));
    std::string opening = "opening CUDA device " + std::to_string(ordinal);
    if (auto checked = check(driver->cuDeviceGet(&device, ordinal), "cuDeviceGet", opening);
        !checked)
      return checked;
    if (auto checked = check(driver->cuDevicePrimaryCtxRetain(&context, device),
                             "cuDevicePrimaryCtxRetain", opening);
        !checked) {
      context = nullptr;
      return checked;
    }
    return check(driver->cuCtxSetCurrent(context), "cuCtxSetCurrent", opening);
  }

  Outcome info(loopc_device_info &out) override {
    if (auto current = makeCurrent(); !current)
      return current;
    out.kind = LOOPC_DEVICE_CUDA;
    const std::string querying = "querying CUDA device " + std::to_string(ordinal);
    if (auto checked = check(driver->cuDeviceGetName(out.name, sizeof out.name, device),
                             "cuDeviceGetName", querying);
        !checked)
      return checked;
    const std::array<std::pair<CUdevice_attribute, int *>, 6> attributes = {{
        {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, &out.compute_capability_major},
        {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, &out.compute_capability_minor},
        {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, &out.multiprocessor_count},
        {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, &out.max_threads_per_block},
        {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, &out.max_shared_memory_per_block},
        {CU_DEVICE_ATTRIBUTE_WARP_SIZE, &out.warp_size},
    }};
    for (auto [attribute, value] : attributes)
      if (auto checked = check(driver->cuDeviceGetAttribute(value, attribute, device),
                               "cuDeviceGetAttribute", querying);
          !checked)
        return checked;
    if (auto checked = check(driver->cuDeviceTotalMem(&out.total_memory_bytes, device),
                             "cuDeviceTotalMem", querying);
        !checked)
      return checked;
    return check(driver->cuDriverGetVersion(&out.driver_version), "cuDriverGetVersion", querying);
  }

  OutcomeOr<loopc_device_ptr> allocate(size_t bytes) override {
    if (bytes == 0)
      return 0;
    if (auto current = makeCurrent(); !current)
      return std::unexpected(current.error());
    CUdeviceptr address = 0;
    if (auto checked = check(driver->cuMemAlloc(&address, bytes), "cuMemAlloc",
                             "allocating " + std::to_string(bytes) + " bytes");
        !checked)
      return std::unexpected(checked.error());
    return address;
  }

  Outcome release(loopc_device_ptr buffer) override {
    if (buffer == 0)
      return {};
    if (auto current = makeCurrent(); !current)
      return current;
    return check(driver->cuMemFree(buffer), "cuMemFree", "freeing a buffer");
  }

  Outcome copyToDevice(loopc_device_ptr destination, const void *source, size_t bytes) override {
    if (bytes == 0)
      return {};
    if (auto current = makeCurrent(); !current)
      return current;
    return check(driver->cuMemcpyHtoD(destination, source, bytes), "cuMemcpyHtoD",
                 "copying " + std::to_string(bytes) + " bytes to the device");
  }

  Outcome copyToHost(void *destination, loopc_device_ptr source, size_t bytes) override {
    if (bytes == 0)
      return {};
    if (auto current = makeCurrent(); !current)
      return current;
    return check(driver->cuMemcpyDtoH(destination, source, bytes), "cuMemcpyDtoH",
                 "copying " + std::to_string(bytes) + " bytes to the host");
  }

  Outcome copyOnDevice(loopc_device_ptr destination, loopc_device_ptr source,
                       size_t bytes) override {
    if (bytes == 0)
      return {};
    if (auto current = makeCurrent(); !current)
      return current;
    return check(driver->cuMemcpyDtoD(destination, source, bytes), "cuMemcpyDtoD",
                 "copying " + std::to_string(bytes) + " bytes on the device");
  }

  Outcome fill(loopc_device_ptr destination, unsigned char value, size_t bytes) override {
    if (bytes == 0)
      return {};
    if (auto current = makeCurrent(); !current)
      return current;
    return check(driver->cuMemsetD8(destination, value, bytes), "cuMemsetD8",
                 "setting " + std::to_string(bytes) + " bytes");
  }

  OutcomeOr<std::unique_ptr<loopc_module>> loadPtx(const char *ptx,
                                                   const std::string &name) override {
    if (auto current = makeCurrent(); !current)
      return std::unexpected(current.error());
    std::vector<char> infoLog(kJitLogBytes, '\0');
    std::vector<char> errorLog(kJitLogBytes, '\0');
    std::array<CUjit_option, 5> options = {
        CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, CU_JIT_ERROR_LOG_BUFFER,
        CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, CU_JIT_LOG_VERBOSE};
    // The driver reads sizes and flags smuggled in the pointer values.
    std::array<void *, 5> values = {
        infoLog.data(), reinterpret_cast<void *>(static_cast<uintptr_t>(kJitLogBytes - 1)),
        errorLog.data(), reinterpret_cast<void *>(static_cast<uintptr_t>(kJitLogBytes - 1)),
        reinterpret_cast<void *>(static_cast<uintptr_t>(1))};
    CUmodule handle = nullptr;
    CUresult result =
        driver->cuModuleLoadDataEx(&handle, ptx, options.size(), options.data(), values.data());
    if (result != CUDA_SUCCESS) {
      std::string message = "loading module " + quoted(name) +
                            ": cuModuleLoadDataEx failed: " + driver->describe(result);
      if (errorLog[0])
        message += "\nJIT error log:\n" + std::string(errorLog.data());
      if (infoLog[0])
        message += "\nJIT info log:\n" + std::string(infoLog.data());
      return fail(statusFor(result), std::move(message));
    }
    auto module = std::make_unique<loopc_module>();
    module->name = name;
    module->jitLog = infoLog.data();
    module->handle = handle;
    return module;
  }

  Outcome unload(loopc_module &module) override {
    if (auto current = makeCurrent(); !current)
      return current;
    return check(driver->cuModuleUnload(static_cast<CUmodule>(module.handle)), "cuModuleUnload",
                 "unloading module " + quoted(module.name));
  }

  OutcomeOr<void *> findFunction(loopc_module &module, const char *name) override {
    if (auto current = makeCurrent(); !current)
      return std::unexpected(current.error());
    CUfunction function = nullptr;
    if (auto checked = check(
            driver->cuModuleGetFunction(&function, static_cast<CUmodule>(module.handle), name),
            "cuModuleGetFunction",
            "looking up kernel " + quoted(name) + " in module " + quoted(module.name));
        !checked)
      return std::unexpected(checked.error());
    return static_cast<void *>(function);
  }

  Outcome functionInfo(const loopc_function &function, loopc_function_info &out) override {
    if (auto current = makeCurrent(); !current)
      return current;
    const std::array<std::pair<CUfunction_attribute, int *>, 4> attributes = {{
        {CU_FUNC_ATTRIBUTE_NUM_REGS, &out.registers_per_thread},
        {CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, &out.local_memory_bytes},
        {CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, &out.static_shared_memory_bytes},
        {CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, &out.max_threads_per_block},
    }};
    for (auto [attribute, value] : attributes)
      if (auto checked = check(driver->cuFuncGetAttribute(value, attribute,
                                                          static_cast<CUfunction>(function.handle)),
                               "cuFuncGetAttribute", "querying kernel " + quoted(function.name));
          !checked)
        return checked;
    return {};
  }

  Outcome launch(const loopc_function &function, const loopc_launch_config &config, void **params,
                 float *elapsedMs) override {
    if (auto current = makeCurrent(); !current)
      return current;
    const std::string launching = "launching " + describeLaunch(config, function.name) + " (grid " +
                                  dimensions(config.grid) + ", block " + dimensions(config.block) +
                                  ", " + std::to_string(config.dynamic_shared_bytes) +
                                  " bytes of dynamic shared memory)";
    auto cuFunction = static_cast<CUfunction>(function.handle);
    if (config.dynamic_shared_bytes > kDefaultDynamicSharedLimit)
      if (auto checked = check(driver->cuFuncSetAttribute(
                                   cuFunction, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                   static_cast<int>(config.dynamic_shared_bytes)),
                               "cuFuncSetAttribute", launching);
          !checked)
        return checked;
    if (elapsedMs) {
      if (auto created = createTimingEvents(); !created)
        return created;
      if (auto checked =
              check(driver->cuEventRecord(timingStart, nullptr), "cuEventRecord", launching);
          !checked)
        return checked;
    }
    if (auto checked =
            check(driver->cuLaunchKernel(cuFunction, config.grid[0], config.grid[1], config.grid[2],
                                         config.block[0], config.block[1], config.block[2],
                                         config.dynamic_shared_bytes, nullptr, params, nullptr),
                  "cuLaunchKernel", launching);
        !checked)
      return checked;
    unfinishedLaunch = describeLaunch(config, function.name);
    if (!elapsedMs)
      return {};
    const std::string running = "running " + unfinishedLaunch;
    if (auto checked = check(driver->cuEventRecord(timingEnd, nullptr), "cuEventRecord", running);
        !checked)
      return checked;
    if (auto checked = check(driver->cuEventSynchronize(timingEnd), "cuEventSynchronize", running);
        !checked)
      return checked;
    unfinishedLaunch.clear();
    return check(driver->cuEventElapsedTime(elapsedMs, timingStart, timingEnd),
                 "cuEventElapsedTime", "timing " + describeLaunch(config, function.name));
  }

  Outcome synchronize() override {
    if (auto current = makeCurrent(); !current)
      return current;
    std::string what = unfinishedLaunch.empty() ? std::string("synchronizing")
                                                : "synchronizing after " + unfinishedLaunch;
    if (auto checked = check(driver->cuCtxSynchronize(), "cuCtxSynchronize", what); !checked)
      return checked;
    unfinishedLaunch.clear();
    return {};
  }

  Outcome createEvent(loopc_event &event) override {
    if (auto current = makeCurrent(); !current)
      return current;
    CUevent handle = nullptr;
    if (auto checked = check(driver->cuEventCreate(&handle, CU_EVENT_DEFAULT), "cuEventCreate",
                             "creating an event");
        !checked)
      return checked;
    event.handle = handle;
    return {};
  }

  Outcome destroyEvent(loopc_event &event) override {
    if (auto current = makeCurrent(); !current)
      return current;
    return check(driver->cuEventDestroy(static_cast<CUevent>(event.handle)), "cuEventDestroy",
                 "destroying an event");
  }

  Outcome recordEvent(loopc_event &event) override {
    if (auto current = makeCurrent(); !current)
      return current;
    return check(driver->cuEventRecord(static_cast<CUevent>(event.handle), nullptr),
                 "cuEventRecord", "recording an event");
  }

  OutcomeOr<float> elapsedMs(loopc_event &start, loopc_event &end) override {
    if (auto current = makeCurrent(); !current)
      return std::unexpected(current.error());
    std::string timing = unfinishedLaunch.empty()
                             ? std::string("timing a region")
                             : "timing a region ending after " + unfinishedLaunch;
    if (auto checked = check(driver->cuEventSynchronize(static_cast<CUevent>(end.handle)),
                             "cuEventSynchronize", timing);
        !checked)
      return std::unexpected(checked.error());
    float milliseconds = 0;
    if (auto checked =
            check(driver->cuEventElapsedTime(&milliseconds, static_cast<CUevent>(start.handle),
                                             static_cast<CUevent>(end.handle)),
                  "cuEventElapsedTime", timing);
        !checked)
      return std::unexpected(checked.error());
    return milliseconds;
  }

private:
  static loopc_status statusFor(CUresult result) {
    return result == CUDA_ERROR_OUT_OF_MEMORY ? LOOPC_ERROR_OUT_OF_MEMORY : LOOPC_ERROR_DRIVER;
  }

  static std::string dimensions(const uint32_t (&extent)[3]) {
    return std::to_string(extent[0]) + "x" + std::to_string(extent[1]) + "x" +
           std::to_string(extent[2]);
  }

  // "<what>: <call> failed: <error>", plus the kernel that probably caused an
  // error a launch left behind for this call to find.
  Outcome check(CUresult result, const char *call, const std::string &what) const {
    if (result == CUDA_SUCCESS)
      return {};
    std::string message = what + ": " + call + " failed: " + driver->describe(result);
    if (isAsynchronousKernelError(result) && !unfinishedLaunch.empty() &&
        what.find(unfinishedLaunch) == std::string::npos)
      message += " (raised by the earlier launch of " + unfinishedLaunch + ")";
    return fail(statusFor(result), std::move(message));
  }

  // Another library or thread may have made a different context current.
  Outcome makeCurrent() {
    CUcontext current = nullptr;
    if (driver->cuCtxGetCurrent(&current) == CUDA_SUCCESS && current == context)
      return {};
    return check(driver->cuCtxSetCurrent(context), "cuCtxSetCurrent",
                 "making CUDA device " + std::to_string(ordinal) + "'s context current");
  }

  Outcome createTimingEvents() {
    for (CUevent *event : {&timingStart, &timingEnd})
      if (!*event)
        if (auto checked = check(driver->cuEventCreate(event, CU_EVENT_DEFAULT), "cuEventCreate",
                                 "creating the events that time a launch");
            !checked)
          return checked;
    return {};
  }

  std::unique_ptr<CudaDriver> driver;
  int ordinal;
  CUdevice device = 0;
  CUcontext context = nullptr;
  CUevent timingStart = nullptr;
  CUevent timingEnd = nullptr;
  // The launch not yet known to have finished, named in later errors.
  std::string unfinishedLaunch;
};

} // namespace

OutcomeOr<std::unique_ptr<Device>> openCudaDevice(int ordinal) {
  auto driver = loadCudaDriver();
  if (!driver)
    return fail(LOOPC_ERROR_NO_DRIVER, driver.error());
  auto device = std::make_unique<CudaDevice>(std::move(*driver), ordinal);
  if (auto opened = device->open(); !opened)
    return std::unexpected(opened.error());
  return device;
}

} // namespace loopc::runtime
