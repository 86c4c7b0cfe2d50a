// Loading libcuda with dlopen and resolving the entry points the runtime uses
// by the symbols the driver exports them as.
#include "CudaDriver.h"

#include <dlfcn.h>

#include <cstdlib>
#include <string_view>

namespace loopc::runtime {

std::string cudaDriverPath() {
  const char *override = std::getenv("LOOPC_CUDA_DRIVER");
  return override && *override ? override : "libcuda.so.1";
}

std::string CudaDriver::describe(cuda::CUresult result) const {
  const char *name = nullptr;
  const char *text = nullptr;
  std::string description;
  if (cuGetErrorName(result, &name) == cuda::CUDA_SUCCESS && name)
    description = name;
  else
    description = "CUDA error " + std::to_string(static_cast<int>(result));
  if (cuGetErrorString(result, &text) == cuda::CUDA_SUCCESS && text)
    description += std::string(" (") + text + ")";
  return description;
}

std::expected<std::unique_ptr<CudaDriver>, std::string> loadCudaDriver() {
  auto driver = std::make_unique<CudaDriver>();
  driver->libraryPath = cudaDriverPath();
  // The driver is never unloaded: libcuda keeps threads and atexit handlers
  // that must not outlive its code, and reopening it is cheap.
  driver->library = dlopen(driver->libraryPath.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (!driver->library) {
    const char *reason = dlerror();
    return std::unexpected("no CUDA driver (" + driver->libraryPath +
                           " not found: " + (reason ? reason : "unknown reason") + ")");
  }
  std::string missing;
  auto resolve = [&](const char *symbol) {
    void *address = dlsym(driver->library, symbol);
    // cuEventElapsedTime_v2 appeared in CUDA 12.8 with the old call's ABI;
    // older drivers are still usable through the old name.
    if (!address && std::string_view(symbol) == "cuEventElapsedTime_v2")
      address = dlsym(driver->library, "cuEventElapsedTime");
    if (!address)
      missing += missing.empty() ? symbol : std::string(", ") + symbol;
    return address;
  };
#define LOOPC_RESOLVE_ENTRY_POINT(name, symbol, type)                                              \
  driver->name = reinterpret_cast<decltype(driver->name)>(resolve(symbol));
  LOOPC_CUDA_ENTRY_POINTS(LOOPC_RESOLVE_ENTRY_POINT)
#undef LOOPC_RESOLVE_ENTRY_POINT
  if (!missing.empty())
    return std::unexpected(
        "unusable CUDA driver " + driver->libraryPath + ": it lacks the entry points " + missing +
        " (the driver is older than CUDA " + std::to_string(cuda::kOldestDriverVersion / 1000) +
        "." + std::to_string(cuda::kOldestDriverVersion % 1000 / 10) +
        ", the oldest loopc supports)");
  return driver;
}

} // namespace loopc::runtime
