// Checks the runtime's declarations of the CUDA Driver API (CudaDriverApi.h)
// against the toolkit's cuda.h, where the toolkit is installed: every value
// the runtime names, the symbol each entry point is looked up as, and each
// entry point's parameters and result, type by type. The checks are made by
// the compiler; the program only says what it checked.
//
// CudaDriverApi.h comes first: cuda.h defines the versioned names as macros
// (cuMemAlloc is cuMemAlloc_v2), which must not rename its declarations.
#include "../src/CudaDriverApi.h"

#include <cuda.h>

#include <cstdio>
#include <string_view>
#include <type_traits>

namespace {

// Whether a value of type A and one of type B are passed alike: the same
// type, pointers to types passed alike, or enums of one size (the runtime's
// enums are its own types, with cuda.h's values checked one by one below).
template <typename A, typename B> struct PassedAlike : std::is_same<A, B> {};
template <typename A, typename B>
requires(std::is_enum_v<A> &&std::is_enum_v<B>) struct PassedAlike<A, B>
    : std::bool_constant<sizeof(A) == sizeof(B)> {
};
template <typename A, typename B> struct PassedAlike<A *, B *> : PassedAlike<A, B> {};
template <typename A, typename B> struct PassedAlike<const A, const B> : PassedAlike<A, B> {};
template <typename A, typename B> struct PassedAlike<A *const, B *const> : PassedAlike<A, B> {};

template <typename A, typename B> struct CalledAlike : std::false_type {};
template <typename ResultA, typename... ParametersA, typename ResultB, typename... ParametersB>
requires(
    sizeof...(ParametersA) ==
    sizeof...(ParametersB)) struct CalledAlike<ResultA(ParametersA...), ResultB(ParametersB...)>
    : std::bool_constant<PassedAlike<ResultA, ResultB>::value &&
                         (PassedAlike<ParametersA, ParametersB>::value && ...)> {
};

// The name a macro of cuda.h gives an entry point, as a string.
#define LOOPC_STRINGIFY(text) #text
#define LOOPC_CUDA_H_SYMBOL(name) LOOPC_STRINGIFY(name)

// `name` is expanded where it stands alone (cuMemAlloc becomes cuda.h's
// cuMemAlloc_v2) and kept where it is pasted (loopc's cuMemAlloc_t).
#define LOOPC_CHECK_ENTRY_POINT(name, symbol, type)                                                \
  static_assert(std::string_view(LOOPC_CUDA_H_SYMBOL(name)) == symbol,                             \
                "the symbol cuda.h calls " #name " by differs");                                   \
  static_assert(                                                                                   \
      CalledAlike<loopc::cuda::name##_t, std::remove_pointer_t<decltype(&::name)>>::value,         \
      "cuda.h declares " #name " with other parameters");
LOOPC_CUDA_ENTRY_POINTS(LOOPC_CHECK_ENTRY_POINT)

#define LOOPC_CHECK_VALUE(constant)                                                                \
  static_assert(static_cast<long long>(loopc::cuda::constant) ==                                   \
                    static_cast<long long>(::constant),                                            \
                #constant " differs from cuda.h's");
LOOPC_CHECK_VALUE(CUDA_SUCCESS)
LOOPC_CHECK_VALUE(CUDA_ERROR_INVALID_VALUE)
LOOPC_CHECK_VALUE(CUDA_ERROR_OUT_OF_MEMORY)
LOOPC_CHECK_VALUE(CUDA_ERROR_NOT_INITIALIZED)
LOOPC_CHECK_VALUE(CUDA_ERROR_NO_DEVICE)
LOOPC_CHECK_VALUE(CUDA_ERROR_INVALID_DEVICE)
LOOPC_CHECK_VALUE(CUDA_ERROR_INVALID_CONTEXT)
LOOPC_CHECK_VALUE(CUDA_ERROR_INVALID_PTX)
LOOPC_CHECK_VALUE(CUDA_ERROR_INVALID_HANDLE)
LOOPC_CHECK_VALUE(CUDA_ERROR_NOT_FOUND)
LOOPC_CHECK_VALUE(CUDA_ERROR_ILLEGAL_ADDRESS)
LOOPC_CHECK_VALUE(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES)
LOOPC_CHECK_VALUE(CUDA_ERROR_LAUNCH_TIMEOUT)
LOOPC_CHECK_VALUE(CUDA_ERROR_ASSERT)
LOOPC_CHECK_VALUE(CUDA_ERROR_HARDWARE_STACK_ERROR)
LOOPC_CHECK_VALUE(CUDA_ERROR_ILLEGAL_INSTRUCTION)
LOOPC_CHECK_VALUE(CUDA_ERROR_MISALIGNED_ADDRESS)
LOOPC_CHECK_VALUE(CUDA_ERROR_INVALID_ADDRESS_SPACE)
LOOPC_CHECK_VALUE(CUDA_ERROR_INVALID_PC)
LOOPC_CHECK_VALUE(CUDA_ERROR_LAUNCH_FAILED)
LOOPC_CHECK_VALUE(CUDA_ERROR_NOT_SUPPORTED)
LOOPC_CHECK_VALUE(CUDA_ERROR_SYSTEM_DRIVER_MISMATCH)
LOOPC_CHECK_VALUE(CUDA_ERROR_UNKNOWN)
LOOPC_CHECK_VALUE(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)
LOOPC_CHECK_VALUE(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK)
LOOPC_CHECK_VALUE(CU_DEVICE_ATTRIBUTE_WARP_SIZE)
LOOPC_CHECK_VALUE(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
LOOPC_CHECK_VALUE(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)
LOOPC_CHECK_VALUE(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)
LOOPC_CHECK_VALUE(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)
LOOPC_CHECK_VALUE(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)
LOOPC_CHECK_VALUE(CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES)
LOOPC_CHECK_VALUE(CU_FUNC_ATTRIBUTE_NUM_REGS)
LOOPC_CHECK_VALUE(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)
LOOPC_CHECK_VALUE(CU_JIT_INFO_LOG_BUFFER)
LOOPC_CHECK_VALUE(CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES)
LOOPC_CHECK_VALUE(CU_JIT_ERROR_LOG_BUFFER)
LOOPC_CHECK_VALUE(CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES)
LOOPC_CHECK_VALUE(CU_JIT_LOG_VERBOSE)
LOOPC_CHECK_VALUE(CU_EVENT_DEFAULT)

static_assert(std::is_same_v<loopc::cuda::CUdevice, ::CUdevice>);
static_assert(std::is_same_v<loopc::cuda::CUdeviceptr, ::CUdeviceptr>);
static_assert(std::is_same_v<loopc::cuda::CUcontext, ::CUcontext>);
static_assert(std::is_same_v<loopc::cuda::CUmodule, ::CUmodule>);
static_assert(std::is_same_v<loopc::cuda::CUfunction, ::CUfunction>);
static_assert(std::is_same_v<loopc::cuda::CUevent, ::CUevent>);
static_assert(std::is_same_v<loopc::cuda::CUstream, ::CUstream>);

#define LOOPC_COUNT_ENTRY_POINT(name, symbol, type) +1
constexpr int kEntryPoints = 0 LOOPC_CUDA_ENTRY_POINTS(LOOPC_COUNT_ENTRY_POINT);

} // namespace

int main() {
  std::printf("the runtime's %d CUDA driver entry points, their types and values match cuda.h of "
              "CUDA %d.%d\n",
              kEntryPoints, CUDA_VERSION / 1000, CUDA_VERSION % 1000 / 10);
  return 0;
}
