// The CUDA driver's entry points, found with dlopen/dlsym at run time so the
// runtime neither links libcuda nor needs it to start.
//
// cuda.h maps most calls to versioned symbols by macro (cuMemAlloc is
// cuMemAlloc_v2, cuCtxCreate is cuCtxCreate_v4, ...), and the unversioned
// symbols the library still exports keep their old ABIs. Naming each entry
// point through those macros, for both its type and the symbol looked up,
// keeps the two in step with the header the runtime is built against.
#pragma once

#include <cuda.h>

#include <expected>
#include <memory>
#include <string>

namespace loopc::runtime {

// Every driver call the runtime makes. The list is kept to what is used so an
// older driver that lacks an unrelated newer entry point still loads.
#define LOOPC_CUDA_ENTRY_POINTS(X)                                                                 \
  X(cuGetErrorName)                                                                                \
  X(cuGetErrorString)                                                                              \
  X(cuInit)                                                                                        \
  X(cuDriverGetVersion)                                                                            \
  X(cuDeviceGetCount)                                                                              \
  X(cuDeviceGet)                                                                                   \
  X(cuDeviceGetName)                                                                               \
  X(cuDeviceGetAttribute)                                                                          \
  X(cuDeviceTotalMem)                                                                              \
  X(cuDevicePrimaryCtxRetain)                                                                      \
  X(cuDevicePrimaryCtxRelease)                                                                     \
  X(cuCtxSetCurrent)                                                                               \
  X(cuCtxGetCurrent)                                                                               \
  X(cuCtxSynchronize)                                                                              \
  X(cuMemAlloc)                                                                                    \
  X(cuMemFree)                                                                                     \
  X(cuMemcpyHtoD)                                                                                  \
  X(cuMemcpyDtoH)                                                                                  \
  X(cuMemcpyDtoD)                                                                                  \
  X(cuMemsetD8)                                                                                    \
  X(cuModuleLoadDataEx)                                                                            \
  X(cuModuleUnload)                                                                                \
  X(cuModuleGetFunction)                                                                           \
  X(cuFuncGetAttribute)                                                                            \
  X(cuFuncSetAttribute)                                                                            \
  X(cuLaunchKernel)                                                                                \
  X(cuEventCreate)                                                                                 \
  X(cuEventDestroy)                                                                                \
  X(cuEventRecord)                                                                                 \
  X(cuEventSynchronize)                                                                            \
  X(cuEventElapsedTime)

struct CudaDriver {
#define LOOPC_DECLARE_ENTRY_POINT(name) decltype(&::name) name = nullptr;
  LOOPC_CUDA_ENTRY_POINTS(LOOPC_DECLARE_ENTRY_POINT)
#undef LOOPC_DECLARE_ENTRY_POINT

  void *library = nullptr; // the dlopen handle; the library stays loaded
  std::string libraryPath;

  // "CUDA_ERROR_INVALID_PTX (a PTX JIT compilation failed)".
  std::string describe(CUresult result) const;
};

// The library path the runtime opens: $LOOPC_CUDA_DRIVER, else libcuda.so.1.
std::string cudaDriverPath();

// Loads the driver and resolves every entry point; a missing library or
// symbol is an error whose message says which.
std::expected<std::unique_ptr<CudaDriver>, std::string> loadCudaDriver();

} // namespace loopc::runtime
