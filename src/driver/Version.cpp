// What `loopc --version` prints (see Version.h).
#include "driver/Version.h"

#include "LoopcVersion.h"

#include <llvm/Config/llvm-config.h>
#include <loopc/runtime.h>

#include <string>

namespace loopc::driver {

namespace {

// The first GPU as the GPU engine would open it, or why it cannot.
std::string gpuLine() {
  loopc_runtime *runtime = nullptr;
  if (loopc_runtime_open(LOOPC_DEVICE_CUDA, 0, &runtime) != LOOPC_SUCCESS)
    return std::string("GPU: none usable: ") + loopc_runtime_last_error(nullptr) +
           "; --device gpu-on-cpu runs the GPU pipeline's kernels on the CPU";
  loopc_device_info info{};
  std::string line = "GPU: ";
  if (loopc_runtime_device_info(runtime, &info) == LOOPC_SUCCESS)
    line += std::string(info.name) + " (sm_" + std::to_string(info.compute_capability_major) +
            std::to_string(info.compute_capability_minor) + "), CUDA driver " +
            std::to_string(info.driver_version / 1000) + "." +
            std::to_string(info.driver_version % 1000 / 10);
  else
    line += std::string("device 0 opened, but its properties could not be read (") +
            loopc_runtime_last_error(runtime) + ")";
  loopc_runtime_close(runtime);
  return line;
}

} // namespace

std::string versionReport() {
  return std::string("loopc ") + LOOPC_VERSION + " (commit " + LOOPC_COMMIT + ")\nLLVM " +
         LLVM_VERSION_STRING + "\n" + gpuLine();
}

} // namespace loopc::driver
