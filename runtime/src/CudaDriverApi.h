// The part of the CUDA Driver API that the runtime calls, declared here so
// that loopc builds (and its runtime starts) without the CUDA toolkit: the
// driver itself is opened at run time (CudaDriver.h), and a machine without
// a GPU needs none of NVIDIA's files to run the CPU engines.
//
// Everything here is the driver's binary interface: the values of its enums,
// the layout of its handles and the symbol each call is exported as (most
// calls were revised once and are exported with a _v2 suffix; the old
// symbols keep their old ABIs). Where the toolkit is installed, the test
// suite checks every declaration against cuda.h (CudaDriverApiCheck.cpp).
#pragma once

#include <cstddef>

// The driver's opaque handles, under the driver's own tag names so that they
// are the same types as cuda.h's wherever both are seen.
struct CUctx_st;
struct CUmod_st;
struct CUfunc_st;
struct CUevent_st;
struct CUstream_st;

namespace loopc::cuda {

using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = CUctx_st *;
using CUmodule = CUmod_st *;
using CUfunction = CUfunc_st *;
using CUevent = CUevent_st *;
using CUstream = CUstream_st *;

// The results the runtime names; the driver may return others, which it
// describes through cuGetErrorName and cuGetErrorString.
enum CUresult : int {
  CUDA_SUCCESS = 0,
  CUDA_ERROR_INVALID_VALUE = 1,
  CUDA_ERROR_OUT_OF_MEMORY = 2,
  CUDA_ERROR_NOT_INITIALIZED = 3,
  CUDA_ERROR_NO_DEVICE = 100,
  CUDA_ERROR_INVALID_DEVICE = 101,
  CUDA_ERROR_INVALID_CONTEXT = 201,
  CUDA_ERROR_INVALID_PTX = 218,
  CUDA_ERROR_INVALID_HANDLE = 400,
  CUDA_ERROR_NOT_FOUND = 500,
  CUDA_ERROR_ILLEGAL_ADDRESS = 700,
  CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES = 701,
  CUDA_ERROR_LAUNCH_TIMEOUT = 702,
  CUDA_ERROR_ASSERT = 710,
  CUDA_ERROR_HARDWARE_STACK_ERROR = 714,
  CUDA_ERROR_ILLEGAL_INSTRUCTION = 715,
  CUDA_ERROR_MISALIGNED_ADDRESS = 716,
  CUDA_ERROR_INVALID_ADDRESS_SPACE = 717,
  CUDA_ERROR_INVALID_PC = 718,
  CUDA_ERROR_LAUNCH_FAILED = 719,
  CUDA_ERROR_NOT_SUPPORTED = 801,
  CUDA_ERROR_SYSTEM_DRIVER_MISMATCH = 803,
  CUDA_ERROR_UNKNOWN = 999,
};

enum CUdevice_attribute : int {
  CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1,
  CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK = 8,
  CU_DEVICE_ATTRIBUTE_WARP_SIZE = 10,
  CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
};

enum CUfunction_attribute : int {
  CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0,
  CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1,
  CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES = 3,
  CU_FUNC_ATTRIBUTE_NUM_REGS = 4,
  CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8,
};

enum CUjit_option : int {
  CU_JIT_INFO_LOG_BUFFER = 3,
  CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES = 4,
  CU_JIT_ERROR_LOG_BUFFER = 5,
  CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6,
  CU_JIT_LOG_VERBOSE = 12,
};

constexpr unsigned CU_EVENT_DEFAULT = 0;

// The oldest driver that exports every entry point below (CUDA 11.0 added
// cuDevicePrimaryCtxRelease_v2), as cuDriverGetVersion reports it.
constexpr int kOldestDriverVersion = 11000;

// Every driver call the runtime makes, as X(name, symbol, type): the name the
// runtime calls it by, the symbol the driver exports it as and its type. The
// list is kept to what is used, so that a driver lacking an unrelated newer
// entry point still loads.
#define LOOPC_CUDA_ENTRY_POINTS(X)                                                                 \
  X(cuGetErrorName, "cuGetErrorName", CUresult(CUresult, const char **))                           \
  X(cuGetErrorString, "cuGetErrorString", CUresult(CUresult, const char **))                       \
  X(cuInit, "cuInit", CUresult(unsigned))                                                          \
  X(cuDriverGetVersion, "cuDriverGetVersion", CUresult(int *))                                     \
  X(cuDeviceGetCount, "cuDeviceGetCount", CUresult(int *))                                         \
  X(cuDeviceGet, "cuDeviceGet", CUresult(CUdevice *, int))                                         \
  X(cuDeviceGetName, "cuDeviceGetName", CUresult(char *, int, CUdevice))                           \
  X(cuDeviceGetAttribute, "cuDeviceGetAttribute", CUresult(int *, CUdevice_attribute, CUdevice))   \
  X(cuDeviceTotalMem, "cuDeviceTotalMem_v2", CUresult(size_t *, CUdevice))                         \
  X(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", CUresult(CUcontext *, CUdevice))         \
  X(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", CUresult(CUdevice))                 \
  X(cuCtxSetCurrent, "cuCtxSetCurrent", CUresult(CUcontext))                                       \
  X(cuCtxGetCurrent, "cuCtxGetCurrent", CUresult(CUcontext *))                                     \
  X(cuCtxSynchronize, "cuCtxSynchronize", CUresult())                                              \
  X(cuMemAlloc, "cuMemAlloc_v2", CUresult(CUdeviceptr *, size_t))                                  \
  X(cuMemFree, "cuMemFree_v2", CUresult(CUdeviceptr))                                              \
  X(cuMemcpyHtoD, "cuMemcpyHtoD_v2", CUresult(CUdeviceptr, const void *, size_t))                  \
  X(cuMemcpyDtoH, "cuMemcpyDtoH_v2", CUresult(void *, CUdeviceptr, size_t))                        \
  X(cuMemcpyDtoD, "cuMemcpyDtoD_v2", CUresult(CUdeviceptr, CUdeviceptr, size_t))                   \
  X(cuMemsetD8, "cuMemsetD8_v2", CUresult(CUdeviceptr, unsigned char, size_t))                     \
  X(cuModuleLoadDataEx, "cuModuleLoadDataEx",                                                      \
    CUresult(CUmodule *, const void *, unsigned, CUjit_option *, void **))                         \
  X(cuModuleUnload, "cuModuleUnload", CUresult(CUmodule))                                          \
  X(cuModuleGetFunction, "cuModuleGetFunction", CUresult(CUfunction *, CUmodule, const char *))    \
  X(cuFuncGetAttribute, "cuFuncGetAttribute", CUresult(int *, CUfunction_attribute, CUfunction))   \
  X(cuFuncSetAttribute, "cuFuncSetAttribute", CUresult(CUfunction, CUfunction_attribute, int))     \
  X(cuLaunchKernel, "cuLaunchKernel",                                                              \
    CUresult(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,     \
             CUstream, void **, void **))                                                          \
  X(cuEventCreate, "cuEventCreate", CUresult(CUevent *, unsigned))                                 \
  X(cuEventDestroy, "cuEventDestroy_v2", CUresult(CUevent))                                        \
  X(cuEventRecord, "cuEventRecord", CUresult(CUevent, CUstream))                                   \
  X(cuEventSynchronize, "cuEventSynchronize", CUresult(CUevent))                                   \
  X(cuEventElapsedTime, "cuEventElapsedTime_v2", CUresult(float *, CUevent, CUevent))

// Each entry point's function type by its name and _t: cuMemAlloc_t.
#define LOOPC_CUDA_DECLARE_TYPE(name, symbol, type) using name##_t = type;
LOOPC_CUDA_ENTRY_POINTS(LOOPC_CUDA_DECLARE_TYPE)
#undef LOOPC_CUDA_DECLARE_TYPE

} // namespace loopc::cuda
