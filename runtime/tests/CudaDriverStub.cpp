// A stand-in for libcuda.so.1 with one simulated device, for testing the
// runtime's driver paths on machines without a GPU: the tests point
// LOOPC_CUDA_DRIVER at it and choose, through loopcStub* functions, which
// call fails with which error.
//
// Buffers live in host memory. A module "compiles" when its PTX text does not
// contain "syntax error"; its kernels are the names after ".entry". Launching
// the kernel named "loopc_fill_u32" runs it for real (its parameters are
// (u32 *out, u32 value, u32 count)), so parameter passing can be checked.
// Built as a second library with LOOPC_STUB_WITHOUT_LAUNCH, it lacks
// cuLaunchKernel, like a driver too old for the runtime. Each entry point is
// defined under the symbol the driver exports it as (CudaDriverApi.h).
#include "../src/CudaDriverApi.h"

#include <array>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

using namespace loopc::cuda;

struct CUctx_st {};
struct CUmod_st {
  std::string ptx;
  std::vector<CUfunc_st *> functions;
};
struct CUfunc_st {
  std::string name;
  std::vector<size_t> parameterSizes; // bytes, in the order of the PTX's .param list
};
struct CUevent_st {
  uint64_t tick = 0;
};

namespace {

struct StubState {
  std::map<std::string, CUresult> failures; // by unversioned entry point name
  int deviceCount = 1;
  CUctx_st primaryContext;
  CUcontext current = nullptr;
  uint64_t clock = 0; // advanced by each launch, read by events
  unsigned lastLaunch[7] = {};
  // Every launch since the last reset: the kernel's name, its grid and block
  // (x, y, z each) and its parameters' bytes.
  struct Launch {
    std::string kernel;
    std::array<unsigned, 6> geometry;
    std::vector<std::vector<unsigned char>> parameters;
  };
  std::vector<Launch> launches;
  // Written to the u32 that the next launch's last parameter points to (the
  // device error word of loopc's kernels), then cleared; 0 writes nothing.
  uint32_t errorWordOnNextLaunch = 0;
  int allocations = 0;
  int computeCapability = 90;   // major * 10 + minor
  std::string lastModuleTarget; // the `.target` line of the PTX loaded last
};

StubState &state() {
  static StubState instance;
  return instance;
}

CUresult injected(const char *entryPoint) {
  auto found = state().failures.find(entryPoint);
  return found == state().failures.end() ? CUDA_SUCCESS : found->second;
}

// The size of one `.param` declaration of a PTX entry: `.param .u32 name`,
// `.param .align 8 .b8 name[16]`.
size_t parameterSize(const std::string &declaration) {
  if (size_t bracket = declaration.find('['); bracket != std::string::npos)
    return std::strtoul(declaration.c_str() + bracket + 1, nullptr, 10);
  std::istringstream words(declaration);
  std::string word;
  while (words >> word) {
    if (word == ".param")
      continue;
    if (word == ".align") {
      words >> word;
      continue;
    }
    // The type: .u8, .s32, .f64, .b16, ...
    return std::strtoul(word.c_str() + 2, nullptr, 10) / 8;
  }
  return 0;
}

// The parameter sizes of the entry `name` in `ptx`.
std::vector<size_t> parameterSizes(const std::string &ptx, const std::string &name) {
  std::vector<size_t> sizes;
  size_t open = ptx.find(".entry " + name + "(");
  size_t close = open == std::string::npos ? open : ptx.find(')', open);
  if (close == std::string::npos)
    return sizes;
  std::string list = ptx.substr(open, close - open);
  for (size_t at = list.find(".param"); at != std::string::npos; at = list.find(".param", at + 1)) {
    size_t end = list.find_first_of(",\n", at);
    sizes.push_back(parameterSize(list.substr(at, end == std::string::npos ? end : end - at)));
  }
  return sizes;
}

void copyLog(void *buffer, size_t capacity, const std::string &text) {
  if (!buffer || capacity == 0)
    return;
  size_t length = std::min(capacity - 1, text.size());
  std::memcpy(buffer, text.data(), length);
  static_cast<char *>(buffer)[length] = '\0';
}

} // namespace

#define LOOPC_STUB_ENTRY(name)                                                                     \
  if (CUresult failure = injected(name); failure != CUDA_SUCCESS)                                  \
  return failure

extern "C" {

// ---------------------------------------------------------- test controls ---
__attribute__((visibility("default"))) void loopcStubFail(const char *entryPoint, int result) {
  state().failures[entryPoint] = static_cast<CUresult>(result);
}
__attribute__((visibility("default"))) void loopcStubReset() {
  state().failures.clear();
  state().deviceCount = 1;
  state().launches.clear();
  state().errorWordOnNextLaunch = 0;
  state().allocations = 0;
  state().computeCapability = 90;
  state().lastModuleTarget.clear();
}
// The compute capability the device reports, major * 10 + minor (90).
__attribute__((visibility("default"))) void loopcStubSetComputeCapability(int capability) {
  state().computeCapability = capability;
}
// The `.target` line of the PTX of the module loaded last ("" before any).
__attribute__((visibility("default"))) const char *loopcStubLastModuleTarget() {
  return state().lastModuleTarget.c_str();
}
__attribute__((visibility("default"))) void loopcStubSetDeviceCount(int count) {
  state().deviceCount = count;
}
// grid x, y, z, block x, y, z, dynamic shared bytes of the last launch.
__attribute__((visibility("default"))) const unsigned *loopcStubLastLaunch() {
  return state().lastLaunch;
}
// Launches recorded since the last reset.
__attribute__((visibility("default"))) int loopcStubLaunchCount() {
  return static_cast<int>(state().launches.size());
}
__attribute__((visibility("default"))) const char *loopcStubLaunchKernel(int launch) {
  return state().launches.at(static_cast<size_t>(launch)).kernel.c_str();
}
// grid x, y, z, block x, y, z of launch `launch`.
__attribute__((visibility("default"))) const unsigned *loopcStubLaunchGeometry(int launch) {
  return state().launches.at(static_cast<size_t>(launch)).geometry.data();
}
__attribute__((visibility("default"))) int loopcStubLaunchParameterCount(int launch) {
  return static_cast<int>(state().launches.at(static_cast<size_t>(launch)).parameters.size());
}
// The bytes of parameter `index` of launch `launch`; their count in *bytes.
__attribute__((visibility("default"))) const unsigned char *
loopcStubLaunchParameter(int launch, int index, size_t *bytes) {
  const auto &value =
      state().launches.at(static_cast<size_t>(launch)).parameters.at(static_cast<size_t>(index));
  *bytes = value.size();
  return value.data();
}
// cuMemAlloc calls since the last reset.
__attribute__((visibility("default"))) int loopcStubAllocationCount() {
  return state().allocations;
}
__attribute__((visibility("default"))) void loopcStubSetErrorWordOnNextLaunch(uint32_t value) {
  state().errorWordOnNextLaunch = value;
}

} // extern "C"

// ------------------------------------------------------ the driver's calls ---
extern "C" {

CUresult cuGetErrorName(CUresult error, const char **pStr) {
  switch (error) {
  case CUDA_SUCCESS:
    *pStr = "CUDA_SUCCESS";
    return CUDA_SUCCESS;
  case CUDA_ERROR_INVALID_VALUE:
    *pStr = "CUDA_ERROR_INVALID_VALUE";
    return CUDA_SUCCESS;
  case CUDA_ERROR_OUT_OF_MEMORY:
    *pStr = "CUDA_ERROR_OUT_OF_MEMORY";
    return CUDA_SUCCESS;
  case CUDA_ERROR_NO_DEVICE:
    *pStr = "CUDA_ERROR_NO_DEVICE";
    return CUDA_SUCCESS;
  case CUDA_ERROR_SYSTEM_DRIVER_MISMATCH:
    *pStr = "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH";
    return CUDA_SUCCESS;
  case CUDA_ERROR_INVALID_PTX:
    *pStr = "CUDA_ERROR_INVALID_PTX";
    return CUDA_SUCCESS;
  case CUDA_ERROR_NOT_FOUND:
    *pStr = "CUDA_ERROR_NOT_FOUND";
    return CUDA_SUCCESS;
  case CUDA_ERROR_ILLEGAL_ADDRESS:
    *pStr = "CUDA_ERROR_ILLEGAL_ADDRESS";
    return CUDA_SUCCESS;
  case CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES:
    *pStr = "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES";
    return CUDA_SUCCESS;
  default:
    *pStr = nullptr;
    return CUDA_ERROR_INVALID_VALUE;
  }
}

CUresult cuGetErrorString(CUresult error, const char **pStr) {
  switch (error) {
  case CUDA_ERROR_NO_DEVICE:
    *pStr = "no CUDA-capable device is detected";
    return CUDA_SUCCESS;
  case CUDA_ERROR_INVALID_PTX:
    *pStr = "a PTX JIT compilation failed";
    return CUDA_SUCCESS;
  case CUDA_ERROR_ILLEGAL_ADDRESS:
    *pStr = "an illegal memory access was encountered";
    return CUDA_SUCCESS;
  case CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES:
    *pStr = "too many resources requested for launch";
    return CUDA_SUCCESS;
  default:
    *pStr = "stub error";
    return CUDA_SUCCESS;
  }
}

CUresult cuInit(unsigned int) {
  LOOPC_STUB_ENTRY("cuInit");
  return CUDA_SUCCESS;
}

CUresult cuDriverGetVersion(int *version) {
  *version = 13000; // CUDA 13.0
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *count) {
  *count = state().deviceCount;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *device, int ordinal) {
  *device = ordinal;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char *name, int length, CUdevice) {
  copyLog(name, static_cast<size_t>(length), "loopc stub GPU");
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int *value, CUdevice_attribute attribute, CUdevice) {
  switch (attribute) {
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
    *value = state().computeCapability / 10;
    return CUDA_SUCCESS;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
    *value = state().computeCapability % 10;
    return CUDA_SUCCESS;
  case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
    *value = 132;
    return CUDA_SUCCESS;
  case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
    *value = 1024;
    return CUDA_SUCCESS;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK:
    *value = 48 * 1024;
    return CUDA_SUCCESS;
  case CU_DEVICE_ATTRIBUTE_WARP_SIZE:
    *value = 32;
    return CUDA_SUCCESS;
  default:
    return CUDA_ERROR_INVALID_VALUE;
  }
}

CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice) {
  *bytes = size_t{80} << 30;
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *context, CUdevice) {
  LOOPC_STUB_ENTRY("cuDevicePrimaryCtxRetain");
  *context = &state().primaryContext;
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice) { return CUDA_SUCCESS; }

CUresult cuCtxSetCurrent(CUcontext context) {
  state().current = context;
  return CUDA_SUCCESS;
}

CUresult cuCtxGetCurrent(CUcontext *context) {
  *context = state().current;
  return CUDA_SUCCESS;
}

CUresult cuCtxSynchronize() {
  LOOPC_STUB_ENTRY("cuCtxSynchronize");
  return CUDA_SUCCESS;
}

CUresult cuMemAlloc_v2(CUdeviceptr *address, size_t bytes) {
  LOOPC_STUB_ENTRY("cuMemAlloc");
  ++state().allocations;
  *address = reinterpret_cast<CUdeviceptr>(std::malloc(bytes));
  return *address ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult cuMemFree_v2(CUdeviceptr address) {
  std::free(reinterpret_cast<void *>(address));
  return CUDA_SUCCESS;
}

CUresult cuMemcpyHtoD_v2(CUdeviceptr destination, const void *source, size_t bytes) {
  LOOPC_STUB_ENTRY("cuMemcpyHtoD");
  std::memcpy(reinterpret_cast<void *>(destination), source, bytes);
  return CUDA_SUCCESS;
}

CUresult cuMemcpyDtoH_v2(void *destination, CUdeviceptr source, size_t bytes) {
  LOOPC_STUB_ENTRY("cuMemcpyDtoH");
  std::memcpy(destination, reinterpret_cast<const void *>(source), bytes);
  return CUDA_SUCCESS;
}

CUresult cuMemcpyDtoD_v2(CUdeviceptr destination, CUdeviceptr source, size_t bytes) {
  std::memmove(reinterpret_cast<void *>(destination), reinterpret_cast<const void *>(source),
               bytes);
  return CUDA_SUCCESS;
}

CUresult cuMemsetD8_v2(CUdeviceptr destination, unsigned char value, size_t bytes) {
  std::memset(reinterpret_cast<void *>(destination), value, bytes);
  return CUDA_SUCCESS;
}

CUresult cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int count,
                            CUjit_option *options, void **values) {
  std::string ptx = static_cast<const char *>(image);
  bool failed = ptx.find("syntax error") != std::string::npos;
  if (size_t target = ptx.find(".target"); target != std::string::npos)
    state().lastModuleTarget = ptx.substr(target, ptx.find('\n', target) - target);
  void *infoLog = nullptr, *errorLog = nullptr;
  size_t infoBytes = 0, errorBytes = 0;
  for (unsigned i = 0; i < count; ++i) {
    auto value = reinterpret_cast<uintptr_t>(values[i]);
    switch (options[i]) {
    case CU_JIT_INFO_LOG_BUFFER:
      infoLog = values[i];
      break;
    case CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES:
      infoBytes = value;
      break;
    case CU_JIT_ERROR_LOG_BUFFER:
      errorLog = values[i];
      break;
    case CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES:
      errorBytes = value;
      break;
    default:
      break;
    }
  }
  if (failed) {
    copyLog(errorLog, errorBytes, "ptxas application ptx input, line 3; error   : syntax error");
    return CUDA_ERROR_INVALID_PTX;
  }
  copyLog(infoLog, infoBytes, "ptxas info    : Used 8 registers");
  *module = new CUmod_st{std::move(ptx), {}};
  return CUDA_SUCCESS;
}

CUresult cuModuleUnload(CUmodule module) {
  for (CUfunction function : module->functions)
    delete function;
  delete module;
  return CUDA_SUCCESS;
}

CUresult cuModuleGetFunction(CUfunction *function, CUmodule module, const char *name) {
  if (module->ptx.find(std::string(".entry ") + name) == std::string::npos)
    return CUDA_ERROR_NOT_FOUND;
  module->functions.push_back(new CUfunc_st{name, parameterSizes(module->ptx, name)});
  *function = module->functions.back();
  return CUDA_SUCCESS;
}

CUresult cuFuncGetAttribute(int *value, CUfunction_attribute attribute, CUfunction) {
  *value = attribute == CU_FUNC_ATTRIBUTE_NUM_REGS                ? 8
           : attribute == CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK ? 1024
                                                                  : 0;
  return CUDA_SUCCESS;
}

CUresult cuFuncSetAttribute(CUfunction, CUfunction_attribute, int) {
  LOOPC_STUB_ENTRY("cuFuncSetAttribute");
  return CUDA_SUCCESS;
}

#ifndef LOOPC_STUB_WITHOUT_LAUNCH
CUresult cuLaunchKernel(CUfunction function, unsigned int gridX, unsigned int gridY,
                        unsigned int gridZ, unsigned int blockX, unsigned int blockY,
                        unsigned int blockZ, unsigned int sharedBytes, CUstream, void **params,
                        void **) {
  LOOPC_STUB_ENTRY("cuLaunchKernel");
  if (uint64_t{blockX} * blockY * blockZ > 1024)
    return CUDA_ERROR_INVALID_VALUE;
  const unsigned launch[7] = {gridX, gridY, gridZ, blockX, blockY, blockZ, sharedBytes};
  std::memcpy(state().lastLaunch, launch, sizeof launch);
  std::vector<std::vector<unsigned char>> values;
  for (size_t i = 0; i < function->parameterSizes.size(); ++i) {
    const auto *bytes = static_cast<const unsigned char *>(params[i]);
    values.emplace_back(bytes, bytes + function->parameterSizes[i]);
  }
  if (uint32_t word = std::exchange(state().errorWordOnNextLaunch, 0); word && !values.empty()) {
    CUdeviceptr errorWord = 0;
    std::memcpy(&errorWord, values.back().data(), sizeof errorWord);
    std::memcpy(reinterpret_cast<void *>(errorWord), &word, sizeof word);
  }
  state().launches.push_back(
      {function->name, {gridX, gridY, gridZ, blockX, blockY, blockZ}, std::move(values)});
  if (function->name == "loopc_fill_u32") {
    auto *out = reinterpret_cast<uint32_t *>(*static_cast<CUdeviceptr *>(params[0]));
    uint32_t value = *static_cast<uint32_t *>(params[1]);
    uint32_t count = *static_cast<uint32_t *>(params[2]);
    for (uint32_t i = 0; i < count; ++i)
      out[i] = value;
  }
  state().clock += 3;
  return CUDA_SUCCESS;
}
#endif

CUresult cuEventCreate(CUevent *event, unsigned int) {
  *event = new CUevent_st;
  return CUDA_SUCCESS;
}

CUresult cuEventDestroy_v2(CUevent event) {
  delete event;
  return CUDA_SUCCESS;
}

CUresult cuEventRecord(CUevent event, CUstream) {
  event->tick = state().clock;
  return CUDA_SUCCESS;
}

CUresult cuEventSynchronize(CUevent) {
  LOOPC_STUB_ENTRY("cuEventSynchronize");
  return CUDA_SUCCESS;
}

// Each launch takes 1.5 ms of stub time.
CUresult cuEventElapsedTime_v2(float *milliseconds, CUevent start, CUevent end) {
  *milliseconds = static_cast<float>(end->tick - start->tick) * 0.5f;
  return CUDA_SUCCESS;
}

} // extern "C"
