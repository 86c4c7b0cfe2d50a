// The CUDA driver's entry points, found with dlopen/dlsym at run time so the
// runtime neither links libcuda nor needs it to start.
#pragma once

#include "CudaDriverApi.h"

#include <expected>
#include <memory>
#include <string>

namespace loopc::runtime {

struct CudaDriver {
#define LOOPC_DECLARE_ENTRY_POINT(name, symbol, type) cuda::name##_t *name = nullptr;
  LOOPC_CUDA_ENTRY_POINTS(LOOPC_DECLARE_ENTRY_POINT)
#undef LOOPC_DECLARE_ENTRY_POINT

  void *library = nullptr; // the dlopen handle; the library stays loaded
  std::string libraryPath;

  // "CUDA_ERROR_INVALID_PTX (a PTX JIT compilation failed)".
  std::string describe(cuda::CUresult result) const;
};

// The library path the runtime opens: $LOOPC_CUDA_DRIVER, else libcuda.so.1.
std::string cudaDriverPath();

// Loads the driver and resolves every entry point; a missing library or
// symbol is an error whose message says which.
std::expected<std::unique_ptr<CudaDriver>, std::string> loadCudaDriver();

} // namespace loopc::runtime
