// The GPU path of the functions in objects compiled with GPU code
// (loopc/generated.h): which device they run on, chosen once per process,
// and the calls their host code makes. One CUDA runtime serves the whole
// process, opened at the first GPU call and kept open; each function's image
// is loaded into it at its first call and kept too. Calls run one at a time
// (the generated functions hold the call lock), so a call's state needs no
// lock of its own; the choice of device has one, as loopc_use_device may be
// called from any thread.
#include "loopc/generated.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace {

// Buffers of no bytes still get an address of their own.
constexpr int64_t kSmallestBufferBytes = 16;

struct DeviceChoice {
  std::mutex mutex;
  std::optional<bool> gpu; // decided: run on the GPU
  bool opened = false;     // tried to open the GPU
  loopc_runtime *runtime = nullptr;
  loopc_status openStatus = LOOPC_SUCCESS;
  std::string openFailure;
};

DeviceChoice &deviceChoice() {
  static DeviceChoice *choice = new DeviceChoice; // never destroyed: calls may come at exit
  return *choice;
}

// Opens CUDA device 0 the first time; the runtime, or null.
loopc_runtime *openGpu(DeviceChoice &choice) {
  if (!choice.opened) {
    choice.opened = true;
    choice.openStatus = loopc_runtime_open(LOOPC_DEVICE_CUDA, 0, &choice.runtime);
    if (choice.openStatus != LOOPC_SUCCESS)
      choice.openFailure = loopc_runtime_last_error(nullptr);
  }
  return choice.runtime;
}

// LOOPC_DEVICE's choice: the GPU, the CPU, or none (auto).
std::optional<bool> environmentChoice() {
  const char *value = std::getenv("LOOPC_DEVICE");
  if (!value || !*value || std::strcmp(value, "auto") == 0)
    return std::nullopt;
  if (std::strcmp(value, "gpu") == 0)
    return true;
  if (std::strcmp(value, "cpu") == 0)
    return false;
  std::fprintf(stderr, "loopc: LOOPC_DEVICE=%s is not cpu, gpu or auto; ignored\n", value);
  return std::nullopt;
}

bool decideGpu(DeviceChoice &choice) {
  if (!choice.gpu) {
    std::optional<bool> wanted = environmentChoice();
    choice.gpu = wanted ? *wanted : openGpu(choice) != nullptr;
  }
  return *choice.gpu;
}

// What a program's first call loaded: its image and kernels.
struct LoadedProgram {
  int image = -1;
  loopc_module *module = nullptr;
  std::vector<loopc_function *> kernels;
};

std::string architecture(int capability) { return "sm_" + std::to_string(capability); }

// Device memory of ended calls, kept for the next: cuMemAlloc and cuMemFree
// cost microseconds to milliseconds each, and cuMemFree waits for the GPU,
// which a chain of short calls would pay at every call. Used under the call
// lock.
class DeviceMemoryCache {
public:
  // `bytes` bytes (at least kSmallestBufferBytes) of device memory, zeroed.
  loopc_status acquire(loopc_runtime *runtime, size_t bytes, loopc_device_ptr *out) {
    auto idle = idle_.lower_bound(bytes);
    if (idle != idle_.end() && idle->first <= 2 * bytes) {
      *out = idle->second;
      idleBytes_ -= idle->first;
      idle_.erase(idle);
      return loopc_memset(runtime, *out, 0, bytes);
    }
    loopc_status status = loopc_buffer_alloc(runtime, bytes, out);
    if (status == LOOPC_ERROR_OUT_OF_MEMORY && !idle_.empty()) {
      clear(runtime);
      status = loopc_buffer_alloc(runtime, bytes, out);
    }
    return status == LOOPC_SUCCESS ? loopc_memset(runtime, *out, 0, bytes) : status;
  }
  // Memory from acquire() of `bytes` bytes, kept while the idle memory is
  // small.
  void release(loopc_runtime *runtime, loopc_device_ptr address, size_t bytes) {
    if (idleBytes_ + bytes > kMostIdleBytes) {
      loopc_buffer_free(runtime, address);
      return;
    }
    idle_.emplace(bytes, address);
    idleBytes_ += bytes;
  }

private:
  static constexpr size_t kMostIdleBytes = size_t{256} << 20;
  void clear(loopc_runtime *runtime) {
    for (auto [bytes, address] : idle_)
      loopc_buffer_free(runtime, address);
    idle_.clear();
    idleBytes_ = 0;
  }
  std::multimap<size_t, loopc_device_ptr> idle_;
  size_t idleBytes_ = 0;
};

DeviceMemoryCache &deviceMemory() {
  static DeviceMemoryCache *cache = new DeviceMemoryCache; // never destroyed, as the runtime
  return *cache;
}

// The device error records of calls that did not wait for their kernels,
// read when the calls are next waited for. Used under the call lock.
struct PendingRecord {
  loopc_device_ptr record;
  size_t recordBytes;
  const char *const *messages;
  int32_t messageCount;
  std::string kernel;
};

std::vector<PendingRecord> &pendingRecords() {
  static auto *records = new std::vector<PendingRecord>;
  return *records;
}

// Calls that did not wait, at most: then the next one waits for them.
constexpr size_t kMostPendingCalls = 1024;

// Waits for every call on `runtime` and reads the records of those that did
// not wait: the first fault as a failure (the thread's last error).
loopc_status waitForPendingCalls(loopc_runtime *runtime) {
  std::vector<PendingRecord> &pending = pendingRecords();
  if (pending.empty())
    return LOOPC_SUCCESS;
  loopc_status status = loopc_synchronize(runtime);
  std::string failure = status ? loopc_runtime_last_error(runtime) : "";
  for (const PendingRecord &pendingRecord : pending) {
    int64_t record[3] = {0, 0, 0};
    if (status == LOOPC_SUCCESS) {
      status = loopc_copy_to_host(runtime, record, pendingRecord.record, sizeof record);
      if (status)
        failure = loopc_runtime_last_error(runtime);
    }
    deviceMemory().release(runtime, pendingRecord.record, pendingRecord.recordBytes);
    auto site = static_cast<uint32_t>(record[0]);
    if (status == LOOPC_SUCCESS && site != 0) {
      char message[1024];
      if (site <= static_cast<uint32_t>(pendingRecord.messageCount))
        std::snprintf(message, sizeof message, pendingRecord.messages[site - 1],
                      static_cast<long long>(record[1]), static_cast<long long>(record[2]));
      else
        std::snprintf(message, sizeof message, "kernel '%s': a fault at unknown site %u",
                      pendingRecord.kernel.c_str(), site);
      status = LOOPC_ERROR_KERNEL_FAULT;
      failure = message;
    }
  }
  pending.clear();
  return status ? loopc_report_failure(status, failure.c_str()) : status;
}

size_t bufferBytes(int64_t bytes) {
  return static_cast<size_t>(bytes < kSmallestBufferBytes ? kSmallestBufferBytes : bytes);
}

// The runtime of the GPU, opened if need be; null with the thread's last
// error set when there is none.
loopc_runtime *gpuRuntime() {
  DeviceChoice &choice = deviceChoice();
  std::lock_guard lock(choice.mutex);
  if (!openGpu(choice))
    loopc_report_failure(choice.openStatus, choice.openFailure.c_str());
  return choice.runtime;
}

// Holds the call lock for a scope: buffer calls and generated functions use
// the one GPU runtime one at a time.
struct CallLock {
  CallLock() { loopc_cpu_call_lock(); }
  ~CallLock() { loopc_cpu_call_unlock(); }
  CallLock(const CallLock &) = delete;
  CallLock &operator=(const CallLock &) = delete;
};

} // namespace

struct loopc_buffer {
  loopc_device_kind kind = LOOPC_DEVICE_CPU;
  size_t bytes = 0;
  loopc_runtime *runtime = nullptr; // on the GPU
  loopc_device_ptr device = 0;      // on the GPU
  void *host = nullptr;             // on the CPU (64-byte aligned)
};

struct loopc_gpu_call {
  loopc_gpu_program *program = nullptr;
  loopc_runtime *runtime = nullptr;
  LoadedProgram *loaded = nullptr;
  loopc_status status = LOOPC_SUCCESS;
  std::string failure;
  struct Argument {
    void *host; // copied back at the end unless intent is in; null: a buffer's own memory
    int64_t bytes;
    loopc_device_ptr device;
    int32_t intent;
  };
  std::vector<Argument> arguments;
  std::vector<std::pair<loopc_device_ptr, size_t>> temporaries; // the call's device memory
  loopc_device_ptr errorRecord = 0;

  bool failed() const { return status != LOOPC_SUCCESS; }
  // Keeps the first failure, named after the kernel.
  void fail(loopc_status why, const std::string &message) {
    if (failed())
      return;
    status = why;
    failure = "kernel '" + std::string(program->name) + "': " + message;
  }
  // Keeps the runtime's failure when `result` is one; true when it is not.
  bool check(loopc_status result) {
    if (result != LOOPC_SUCCESS)
      fail(result, loopc_runtime_last_error(runtime));
    return result == LOOPC_SUCCESS && !failed();
  }
  // Zeroed device memory, returned to the cache at the end of the call.
  loopc_device_ptr allocate(int64_t bytes) {
    loopc_device_ptr address = 0;
    size_t size = bufferBytes(bytes);
    if (failed() || !check(deviceMemory().acquire(runtime, size, &address)))
      return 0;
    temporaries.emplace_back(address, size);
    return address;
  }
  // The device copy of `bytes` bytes of host memory.
  loopc_device_ptr copyIn(void *host, int64_t bytes, int32_t intent) {
    loopc_device_ptr device = allocate(bytes);
    if (failed())
      return 0;
    arguments.push_back({host, bytes, device, intent});
    if (intent != 1 && intent != 3 && bytes > 0) // in or inout: copied in
      check(loopc_copy_to_device(runtime, device, host, static_cast<size_t>(bytes)));
    return device;
  }
  // Loads the image for the device at the program's first call.
  void load() {
    if (program->loaded) {
      loaded = static_cast<LoadedProgram *>(program->loaded);
      return;
    }
    loopc_device_info info;
    if (!check(loopc_runtime_device_info(runtime, &info)))
      return;
    int capability = info.compute_capability_major * 10 + info.compute_capability_minor;
    int image = -1;
    for (int i = 0; i < program->image_count; ++i)
      if (program->images[i].compute_capability <= capability)
        image = i;
    if (image < 0) {
      std::string held;
      for (int i = 0; i < program->image_count; ++i)
        held += (i ? ", " : "") + architecture(program->images[i].compute_capability);
      fail(LOOPC_ERROR_UNSUPPORTED, "its object holds GPU code for " + held +
                                        ", all newer than the GPU (" + info.name + ", " +
                                        architecture(capability) + "): compile it with --gpu " +
                                        architecture(capability) + " too");
      return;
    }
    auto loading = std::make_unique<LoadedProgram>();
    loading->image = image;
    if (!check(loopc_module_load_ptx(runtime, program->images[image].ptx, program->name,
                                     &loading->module)))
      return;
    const loopc_gpu_image &code = program->images[image];
    for (int i = 0; i < code.kernel_count; ++i) {
      loopc_function *function = nullptr;
      if (!check(loopc_module_function(runtime, loading->module, code.kernels[i], &function))) {
        loopc_module_unload(runtime, loading->module);
        return;
      }
      loading->kernels.push_back(function);
    }
    loaded = loading.release();
    program->loaded = loaded;
  }
};

extern "C" {

loopc_status loopc_use_device(loopc_device_kind kind) {
  DeviceChoice &choice = deviceChoice();
  std::lock_guard lock(choice.mutex);
  if (kind == LOOPC_DEVICE_CPU) {
    choice.gpu = false;
    return LOOPC_SUCCESS;
  }
  if (kind != LOOPC_DEVICE_CUDA)
    return loopc_report_failure(LOOPC_ERROR_INVALID_ARGUMENT,
                                "loopc_use_device: the kind is neither CUDA nor CPU");
  if (!openGpu(choice))
    return loopc_report_failure(choice.openStatus, choice.openFailure.c_str());
  choice.gpu = true;
  return LOOPC_SUCCESS;
}

loopc_device_kind loopc_used_device(void) {
  return loopc_gpu_selected() ? LOOPC_DEVICE_CUDA : LOOPC_DEVICE_CPU;
}

int32_t loopc_gpu_selected(void) {
  DeviceChoice &choice = deviceChoice();
  std::lock_guard lock(choice.mutex);
  return decideGpu(choice);
}

loopc_gpu_call *loopc_gpu_call_begin(loopc_gpu_program *program) {
  auto *call = new loopc_gpu_call;
  call->program = program;
  {
    DeviceChoice &choice = deviceChoice();
    std::lock_guard lock(choice.mutex);
    call->runtime = openGpu(choice);
    if (!call->runtime) {
      call->fail(choice.openStatus, "cannot run on the GPU: " + choice.openFailure);
      return call;
    }
  }
  if (pendingRecords().size() >= kMostPendingCalls &&
      waitForPendingCalls(call->runtime) != LOOPC_SUCCESS) {
    call->status = LOOPC_ERROR_KERNEL_FAULT;
    call->failure = loopc_runtime_last_error(nullptr);
    return call;
  }
  call->load();
  call->errorRecord = call->allocate(3 * sizeof(int64_t));
  return call;
}

int32_t loopc_gpu_call_image(const loopc_gpu_call *call) {
  return call->failed() || !call->loaded ? -1 : call->loaded->image;
}

loopc_device_ptr loopc_gpu_argument(loopc_gpu_call *call, void *host, int64_t bytes,
                                    int32_t intent) {
  return call->copyIn(host, bytes, intent);
}

loopc_device_ptr loopc_gpu_buffer_argument(loopc_gpu_call *call, loopc_buffer *buffer,
                                           int64_t bytes, int32_t intent) {
  if (call->failed())
    return 0;
  if (buffer->kind != LOOPC_DEVICE_CUDA)
    return call->copyIn(buffer->host, bytes, intent);
  if (intent == 1 && bytes > 0)
    call->check(loopc_memset(call->runtime, buffer->device, 0, static_cast<size_t>(bytes)));
  return buffer->device;
}

loopc_device_ptr loopc_gpu_alloc(loopc_gpu_call *call, int64_t bytes) {
  return call->allocate(bytes);
}

void loopc_gpu_free(loopc_gpu_call *call, loopc_device_ptr buffer) {
  for (size_t i = 0; i < call->temporaries.size(); ++i)
    if (call->temporaries[i].first == buffer) {
      deviceMemory().release(call->runtime, buffer, call->temporaries[i].second);
      call->temporaries.erase(call->temporaries.begin() + static_cast<std::ptrdiff_t>(i));
      return;
    }
}

void loopc_gpu_read(loopc_gpu_call *call, void *host, loopc_device_ptr device, int64_t bytes) {
  if (call->failed() ||
      !call->check(loopc_copy_to_host(call->runtime, host, device, static_cast<size_t>(bytes))))
    std::memset(host, 0, static_cast<size_t>(bytes));
}

void loopc_gpu_write(loopc_gpu_call *call, loopc_device_ptr device, const void *host,
                     int64_t bytes) {
  if (!call->failed())
    call->check(loopc_copy_to_device(call->runtime, device, host, static_cast<size_t>(bytes)));
}

loopc_device_ptr loopc_gpu_error_record(loopc_gpu_call *call) { return call->errorRecord; }

int32_t loopc_launch_geometry_check(const int64_t *geometry, int32_t max_threads, char *reason,
                                    size_t reason_bytes) {
  static constexpr int64_t kGridLimits[3] = {2147483647, 65535, 65535};
  static constexpr int64_t kBlockLimits[3] = {1024, 1024, 64};
  static constexpr int64_t kThreadsPerBlock = 1024;
  int64_t blockThreads = 1;
  for (int axis = 0; axis < 3; ++axis) {
    int64_t blocks = geometry[axis], threads = geometry[3 + axis];
    if (blocks <= 0 || threads <= 0)
      return 0;
    if (blocks > kGridLimits[axis] || threads > kBlockLimits[axis]) {
      std::snprintf(reason, reason_bytes,
                    "needs a grid of %lld blocks of %lld threads along axis %c, beyond the GPU's "
                    "limits",
                    static_cast<long long>(blocks), static_cast<long long>(threads), "xyz"[axis]);
      return -1;
    }
    blockThreads *= threads;
  }
  // The PTX's .maxntid (when the kernel has one) bounds the block too.
  int64_t threadLimit =
      max_threads > 0 && max_threads < kThreadsPerBlock ? max_threads : kThreadsPerBlock;
  if (blockThreads > threadLimit) {
    std::snprintf(reason, reason_bytes, "needs blocks of %lld threads, more than its limit of %lld",
                  static_cast<long long>(blockThreads), static_cast<long long>(threadLimit));
    return -1;
  }
  return 1;
}

void loopc_gpu_launch(loopc_gpu_call *call, int32_t kernel, const int64_t *geometry, void **params,
                      int32_t max_threads, const char *source) {
  if (call->failed())
    return;
  const char *name = call->program->images[call->loaded->image].kernels[kernel];
  char reason[256];
  int32_t launches = loopc_launch_geometry_check(geometry, max_threads, reason, sizeof reason);
  if (launches < 0)
    call->fail(LOOPC_ERROR_UNSUPPORTED,
               std::string("its kernel '") + name + "'" +
                   (source && *source ? std::string(" (") + source + ")" : "") + " " + reason);
  if (launches <= 0)
    return;
  loopc_launch_config config = {};
  for (int axis = 0; axis < 3; ++axis) {
    config.grid[axis] = static_cast<uint32_t>(geometry[axis]);
    config.block[axis] = static_cast<uint32_t>(geometry[3 + axis]);
  }
  config.kernel_name = name;
  config.source_location = source;
  call->check(loopc_launch(call->runtime, call->loaded->kernels[static_cast<size_t>(kernel)],
                           &config, params, nullptr));
}

loopc_status loopc_gpu_call_end(loopc_gpu_call *call, void *error_record,
                                const char *const *messages, int32_t message_count) {
  std::memset(error_record, 0, 3 * sizeof(int64_t));
  bool waits = !call->arguments.empty();
  if (!call->failed() && !waits) {
    // Nothing to copy back: its record is read when the calls are waited for.
    for (size_t i = 0; i < call->temporaries.size(); ++i)
      if (call->temporaries[i].first == call->errorRecord) {
        pendingRecords().push_back({call->errorRecord, call->temporaries[i].second, messages,
                                    message_count, call->program->name});
        call->temporaries.erase(call->temporaries.begin() + static_cast<std::ptrdiff_t>(i));
        break;
      }
  } else if (!call->failed() && call->check(loopc_synchronize(call->runtime)) &&
             call->check(loopc_copy_to_host(call->runtime, error_record, call->errorRecord,
                                            3 * sizeof(int64_t)))) {
    for (const loopc_gpu_call::Argument &argument : call->arguments)
      if (argument.intent != 0 && argument.bytes > 0 &&
          !call->check(loopc_copy_to_host(call->runtime, argument.host, argument.device,
                                          static_cast<size_t>(argument.bytes))))
        break;
  }
  for (auto [address, bytes] : call->temporaries)
    deviceMemory().release(call->runtime, address, bytes);
  loopc_status status = call->status;
  // An earlier call's fault comes first: it happened first.
  if (waits && call->runtime && waitForPendingCalls(call->runtime) != LOOPC_SUCCESS) {
    status = LOOPC_ERROR_KERNEL_FAULT;
    call->failure = loopc_runtime_last_error(nullptr);
  }
  if (status != LOOPC_SUCCESS)
    loopc_report_failure(status, call->failure.c_str());
  delete call;
  return status;
}

loopc_status loopc_buffer_create(size_t bytes, loopc_buffer **out) {
  if (!out)
    return loopc_report_failure(LOOPC_ERROR_INVALID_ARGUMENT,
                                "loopc_buffer_create: the result pointer is NULL");
  *out = nullptr;
  CallLock lock;
  auto buffer = std::make_unique<loopc_buffer>();
  buffer->bytes = bytes;
  if (loopc_gpu_selected()) {
    buffer->kind = LOOPC_DEVICE_CUDA;
    buffer->runtime = gpuRuntime();
    if (!buffer->runtime)
      return static_cast<loopc_status>(deviceChoice().openStatus);
    size_t size = bufferBytes(static_cast<int64_t>(bytes));
    if (loopc_status status = loopc_buffer_alloc(buffer->runtime, size, &buffer->device))
      return loopc_report_failure(status, loopc_runtime_last_error(buffer->runtime));
    if (loopc_status status = loopc_memset(buffer->runtime, buffer->device, 0, size)) {
      loopc_buffer_free(buffer->runtime, buffer->device);
      return loopc_report_failure(status, loopc_runtime_last_error(buffer->runtime));
    }
  } else {
    size_t size = (bufferBytes(static_cast<int64_t>(bytes)) + 63) / 64 * 64;
    buffer->host = std::aligned_alloc(64, size);
    if (!buffer->host)
      return loopc_report_failure(
          LOOPC_ERROR_OUT_OF_MEMORY,
          ("loopc_buffer_create: no host memory for " + std::to_string(bytes) + " bytes").c_str());
    std::memset(buffer->host, 0, size);
  }
  *out = buffer.release();
  return LOOPC_SUCCESS;
}

void loopc_buffer_destroy(loopc_buffer *buffer) {
  if (!buffer)
    return;
  CallLock lock;
  if (buffer->kind == LOOPC_DEVICE_CUDA)
    loopc_buffer_free(buffer->runtime, buffer->device);
  std::free(buffer->host);
  delete buffer;
}

size_t loopc_buffer_size(const loopc_buffer *buffer) { return buffer ? buffer->bytes : 0; }

loopc_device_kind loopc_buffer_device(const loopc_buffer *buffer) {
  return buffer ? buffer->kind : LOOPC_DEVICE_CPU;
}

namespace {

// Fails unless [offset, offset + bytes) lies in `buffer` (non-null) and,
// with bytes to copy, the host memory `host` (when asked for) is not null.
loopc_status checkRange(const char *function, const loopc_buffer *buffer, size_t offset,
                        size_t bytes, bool hostNull = false) {
  std::string problem;
  if (!buffer)
    problem = "the buffer is NULL";
  else if (bytes && hostNull)
    problem = "the host pointer is NULL";
  else if (offset > buffer->bytes || bytes > buffer->bytes - offset)
    problem = "bytes " + std::to_string(offset) + " to " + std::to_string(offset + bytes) +
              " are past the end of a buffer of " + std::to_string(buffer->bytes);
  if (problem.empty())
    return LOOPC_SUCCESS;
  return loopc_report_failure(LOOPC_ERROR_INVALID_ARGUMENT,
                              (std::string(function) + ": " + problem).c_str());
}

// The calls that did not wait, waited for, where the GPU is open.
// The GPU's runtime when it has been opened, else null.
loopc_runtime *openedGpu() {
  DeviceChoice &choice = deviceChoice();
  std::lock_guard lock(choice.mutex);
  return choice.runtime;
}

loopc_status waitForCalls() {
  loopc_runtime *runtime = openedGpu();
  return runtime ? waitForPendingCalls(runtime) : LOOPC_SUCCESS;
}

loopc_status runtimeStatus(loopc_runtime *runtime, loopc_status status) {
  return status == LOOPC_SUCCESS ? status
                                 : loopc_report_failure(status, loopc_runtime_last_error(runtime));
}

} // namespace

loopc_status loopc_buffer_upload(loopc_buffer *buffer, size_t offset, const void *source,
                                 size_t bytes) {
  if (loopc_status status = checkRange(__func__, buffer, offset, bytes, !source))
    return status;
  if (bytes == 0)
    return LOOPC_SUCCESS;
  CallLock lock;
  if (buffer->kind == LOOPC_DEVICE_CPU) {
    std::memcpy(static_cast<char *>(buffer->host) + offset, source, bytes);
    return LOOPC_SUCCESS;
  }
  return runtimeStatus(
      buffer->runtime,
      loopc_copy_to_device(buffer->runtime, buffer->device + offset, source, bytes));
}

loopc_status loopc_buffer_download(const loopc_buffer *buffer, size_t offset, void *destination,
                                   size_t bytes) {
  if (loopc_status status = checkRange(__func__, buffer, offset, bytes, !destination))
    return status;
  if (bytes == 0)
    return LOOPC_SUCCESS;
  CallLock lock;
  if (loopc_status status = waitForCalls())
    return status;
  if (buffer->kind == LOOPC_DEVICE_CPU) {
    std::memcpy(destination, static_cast<const char *>(buffer->host) + offset, bytes);
    return LOOPC_SUCCESS;
  }
  return runtimeStatus(buffer->runtime, loopc_copy_to_host(buffer->runtime, destination,
                                                           buffer->device + offset, bytes));
}

loopc_status loopc_buffer_copy(loopc_buffer *destination, size_t destination_offset,
                               const loopc_buffer *source, size_t source_offset, size_t bytes) {
  if (loopc_status status = checkRange(__func__, destination, destination_offset, bytes))
    return status;
  if (loopc_status status = checkRange(__func__, source, source_offset, bytes))
    return status;
  if (bytes == 0)
    return LOOPC_SUCCESS;
  if (source->kind == LOOPC_DEVICE_CPU)
    return loopc_buffer_upload(destination, destination_offset,
                               static_cast<const char *>(source->host) + source_offset, bytes);
  if (destination->kind == LOOPC_DEVICE_CPU)
    return loopc_buffer_download(
        source, source_offset, static_cast<char *>(destination->host) + destination_offset, bytes);
  CallLock lock;
  return runtimeStatus(source->runtime,
                       loopc_copy_on_device(source->runtime,
                                            destination->device + destination_offset,
                                            source->device + source_offset, bytes));
}

loopc_status loopc_buffer_host_begin(loopc_buffer *buffer, int64_t bytes, int32_t intent,
                                     void **host) {
  *host = nullptr;
  if (loopc_status status = waitForCalls())
    return status;
  if (buffer->kind == LOOPC_DEVICE_CPU) {
    *host = buffer->host;
    return LOOPC_SUCCESS;
  }
  // A copy of at least one byte: an empty array's pointer is not null either.
  *host = std::malloc(bufferBytes(bytes));
  if (!*host)
    return loopc_report_failure(
        LOOPC_ERROR_OUT_OF_MEMORY,
        ("no host memory for a copy of a buffer of " + std::to_string(bytes) + " bytes").c_str());
  if (intent == 1 || intent == 3 || bytes <= 0) // out: nothing to read
    return LOOPC_SUCCESS;
  loopc_status status =
      runtimeStatus(buffer->runtime, loopc_copy_to_host(buffer->runtime, *host, buffer->device,
                                                        static_cast<size_t>(bytes)));
  if (status != LOOPC_SUCCESS) {
    std::free(*host);
    *host = nullptr;
  }
  return status;
}

loopc_status loopc_buffer_host_end(loopc_buffer *buffer, void *host, int64_t bytes,
                                   int32_t intent) {
  if (buffer->kind == LOOPC_DEVICE_CPU)
    return LOOPC_SUCCESS;
  loopc_status status = LOOPC_SUCCESS;
  if (intent != 0 && bytes > 0)
    status = runtimeStatus(buffer->runtime, loopc_copy_to_device(buffer->runtime, buffer->device,
                                                                 host, static_cast<size_t>(bytes)));
  std::free(host);
  return status;
}

loopc_status loopc_wait_for_calls(void) {
  CallLock lock;
  if (loopc_status status = waitForCalls())
    return status;
  loopc_runtime *runtime = openedGpu();
  return runtime ? runtimeStatus(runtime, loopc_synchronize(runtime)) : LOOPC_SUCCESS;
}

} // extern "C"

struct loopc_timer {
  loopc_runtime *runtime = nullptr; // null: the CPU's clock
  loopc_event *start = nullptr;
  std::chrono::steady_clock::time_point startedAt;
};

extern "C" {

loopc_status loopc_timer_start(loopc_timer **out) {
  if (!out)
    return loopc_report_failure(LOOPC_ERROR_INVALID_ARGUMENT,
                                "loopc_timer_start: the result pointer is NULL");
  *out = nullptr;
  CallLock lock;
  auto timer = std::make_unique<loopc_timer>();
  if (loopc_gpu_selected()) {
    timer->runtime = gpuRuntime();
    if (!timer->runtime)
      return static_cast<loopc_status>(deviceChoice().openStatus);
    if (loopc_status status = loopc_event_create(timer->runtime, &timer->start))
      return runtimeStatus(timer->runtime, status);
    if (loopc_status status = loopc_event_record(timer->runtime, timer->start)) {
      loopc_event_destroy(timer->runtime, timer->start);
      return runtimeStatus(timer->runtime, status);
    }
  }
  timer->startedAt = std::chrono::steady_clock::now();
  *out = timer.release();
  return LOOPC_SUCCESS;
}

loopc_status loopc_timer_stop(loopc_timer *timer, double *milliseconds) {
  if (!timer || !milliseconds)
    return loopc_report_failure(LOOPC_ERROR_INVALID_ARGUMENT,
                                "loopc_timer_stop: the timer or the result pointer is NULL");
  std::unique_ptr<loopc_timer> owned(timer);
  CallLock lock;
  *milliseconds = 0;
  if (!timer->runtime) {
    *milliseconds = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() -
                                                              timer->startedAt)
                        .count();
    return LOOPC_SUCCESS;
  }
  loopc_runtime *runtime = timer->runtime;
  loopc_event *stop = nullptr;
  float elapsed = 0;
  loopc_status status = loopc_event_create(runtime, &stop);
  if (status == LOOPC_SUCCESS)
    status = loopc_event_record(runtime, stop);
  if (status == LOOPC_SUCCESS)
    status = loopc_event_elapsed_ms(runtime, timer->start, stop, &elapsed);
  status = runtimeStatus(runtime, status);
  if (stop)
    loopc_event_destroy(runtime, stop);
  loopc_event_destroy(runtime, timer->start);
  *milliseconds = elapsed;
  if (status != LOOPC_SUCCESS)
    return status;
  return waitForCalls();
}

} // extern "C"
