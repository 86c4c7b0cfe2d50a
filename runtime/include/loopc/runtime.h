/* loopc's runtime: a small C API over the CUDA Driver API and the host CPU.
 *
 * The CUDA driver (libcuda.so.1) is loaded with dlopen when a cuda runtime is
 * opened, never linked, so programs using this library start on machines with
 * no GPU; there, opening a cuda runtime fails with a message and the cpu
 * device keeps working. Every call returns a status; the message of the last
 * failure, naming the CUDA call, its error and the kernel and .loop source
 * location the caller attached, is loopc_runtime_last_error().
 *
 * A runtime is used from one thread at a time. Buffers, modules and events
 * belong to the runtime that made them and must be released before it is
 * closed. */
#ifndef LOOPC_RUNTIME_H
#define LOOPC_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum loopc_status {
  LOOPC_SUCCESS = 0,
  LOOPC_ERROR_INVALID_ARGUMENT = 1,
  LOOPC_ERROR_NO_DRIVER = 2,   /* libcuda.so.1 missing or unusable */
  LOOPC_ERROR_NO_DEVICE = 3,   /* the driver sees no device with that ordinal */
  LOOPC_ERROR_DRIVER = 4,      /* a CUDA call failed */
  LOOPC_ERROR_UNSUPPORTED = 5, /* the device kind cannot do this */
  LOOPC_ERROR_OUT_OF_MEMORY = 6,
  LOOPC_ERROR_KERNEL_FAULT = 7 /* a kernel failed at run time (an integer division by zero) */
} loopc_status;

typedef enum loopc_device_kind { LOOPC_DEVICE_CUDA = 0, LOOPC_DEVICE_CPU = 1 } loopc_device_kind;

typedef struct loopc_runtime loopc_runtime;
typedef struct loopc_module loopc_module;
typedef struct loopc_function loopc_function;
typedef struct loopc_event loopc_event;

/* A device address: a CUdeviceptr on cuda, a host address on cpu. */
typedef uint64_t loopc_device_ptr;

typedef struct loopc_device_info {
  loopc_device_kind kind;
  char name[256];
  int compute_capability_major; /* 0 on cpu */
  int compute_capability_minor;
  int multiprocessor_count; /* SMs on cuda, hardware threads on cpu */
  size_t total_memory_bytes;
  int max_threads_per_block;
  int max_shared_memory_per_block; /* bytes, without opting in to more */
  int warp_size;                   /* 1 on cpu */
  int driver_version;              /* e.g. 13000 for CUDA 13.0; 0 on cpu */
} loopc_device_info;

typedef struct loopc_function_info {
  int registers_per_thread;
  int local_memory_bytes; /* per thread: spills and local arrays */
  int static_shared_memory_bytes;
  int max_threads_per_block; /* the most this function can be launched with */
} loopc_function_info;

typedef struct loopc_launch_config {
  uint32_t grid[3];  /* blocks in x, y, z */
  uint32_t block[3]; /* threads per block in x, y, z */
  uint32_t dynamic_shared_bytes;
  /* Shown in error messages, including those of a later synchronize; either
   * may be NULL. source_location reads like "samples/matmul.loop:3:5". */
  const char *kernel_name;
  const char *source_location;
} loopc_launch_config;

/* The name of a status, e.g. "LOOPC_ERROR_NO_DRIVER". */
const char *loopc_status_name(loopc_status status);

/* Opens device `ordinal` of `kind`. On cuda this loads the driver (the path in
 * the environment variable LOOPC_CUDA_DRIVER when set, else libcuda.so.1),
 * initialises it and makes the device's primary context current. On failure
 * *out is NULL and loopc_runtime_last_error(NULL) says why. */
loopc_status loopc_runtime_open(loopc_device_kind kind, int ordinal, loopc_runtime **out);
void loopc_runtime_close(loopc_runtime *runtime);

/* The message of the last failed call on `runtime` ("" when none failed);
 * with NULL, that of the calling thread's last failed loopc_runtime_open or
 * call of a function loopc generated (docs/embedding.md). The text stays
 * valid until the next call on the same runtime (or thread). */
const char *loopc_runtime_last_error(const loopc_runtime *runtime);

loopc_status loopc_runtime_device_info(loopc_runtime *runtime, loopc_device_info *out);

/* Buffers. Sizes are in bytes; a zero-byte allocation gives address 0. */
loopc_status loopc_buffer_alloc(loopc_runtime *runtime, size_t bytes, loopc_device_ptr *out);
loopc_status loopc_buffer_free(loopc_runtime *runtime, loopc_device_ptr buffer);
loopc_status loopc_copy_to_device(loopc_runtime *runtime, loopc_device_ptr destination,
                                  const void *source, size_t bytes);
loopc_status loopc_copy_to_host(loopc_runtime *runtime, void *destination, loopc_device_ptr source,
                                size_t bytes);
loopc_status loopc_copy_on_device(loopc_runtime *runtime, loopc_device_ptr destination,
                                  loopc_device_ptr source, size_t bytes);
loopc_status loopc_memset(loopc_runtime *runtime, loopc_device_ptr destination, unsigned char value,
                          size_t bytes);

/* Modules: PTX text JIT-compiled by the driver (cuda only). `module_name`
 * names the module in messages and may be NULL. When the driver rejects the
 * PTX, the last error holds the JIT's error log. */
loopc_status loopc_module_load_ptx(loopc_runtime *runtime, const char *ptx, const char *module_name,
                                   loopc_module **out);
/* The JIT's information log (ptxas's register and spill report) of a loaded
 * module; "" when the driver wrote none. Valid while the module is loaded. */
const char *loopc_module_jit_log(const loopc_module *module);
loopc_status loopc_module_unload(loopc_runtime *runtime, loopc_module *module);
/* Functions live as long as their module. */
loopc_status loopc_module_function(loopc_runtime *runtime, loopc_module *module, const char *name,
                                   loopc_function **out);
loopc_status loopc_function_info_get(loopc_runtime *runtime, const loopc_function *function,
                                     loopc_function_info *out);

/* Launches `function` on the default stream. `params` is as for
 * cuLaunchKernel: one pointer per kernel parameter, to that parameter's
 * value. With `elapsed_ms` non-NULL the launch is bracketed by events and
 * waited for, and *elapsed_ms receives its GPU time; otherwise the launch is
 * asynchronous and its failures surface at the next synchronize, whose
 * message names the kernel and location given here. */
loopc_status loopc_launch(loopc_runtime *runtime, const loopc_function *function,
                          const loopc_launch_config *config, void **params, float *elapsed_ms);
loopc_status loopc_synchronize(loopc_runtime *runtime);

/* Events time a region: record one before and one after, then ask for the
 * milliseconds between them (which waits for the second). */
loopc_status loopc_event_create(loopc_runtime *runtime, loopc_event **out);
loopc_status loopc_event_destroy(loopc_runtime *runtime, loopc_event *event);
loopc_status loopc_event_record(loopc_runtime *runtime, loopc_event *event);
loopc_status loopc_event_elapsed_ms(loopc_runtime *runtime, loopc_event *start, loopc_event *end,
                                    float *out);

/* Where the functions of objects compiled with GPU code (`loopc compile
 * --emit object --gpu ...`, docs/embedding.md) run: LOOPC_DEVICE_CUDA opens
 * CUDA device 0 now, and fails (NO_DRIVER, NO_DEVICE), keeping the choice
 * before, where there is none; LOOPC_DEVICE_CPU runs them on the CPU. Without
 * a call, the environment variable LOOPC_DEVICE (cpu, gpu or auto) decides at
 * the first call of such a function, and auto (the default) takes the GPU
 * when a CUDA device is present. Functions compiled without GPU code always
 * run on the CPU. */
loopc_status loopc_use_device(loopc_device_kind kind);
/* The device they run on now (deciding as their first call would). */
loopc_device_kind loopc_used_device(void);

/* Buffers for those functions' `..._buffers` forms, which take a buffer for
 * each array and keep the data where the functions run between calls
 * (docs/embedding.md, "Buffers"). A buffer lives on the device
 * loopc_used_device() names when it is created: device memory on the GPU,
 * host memory on the CPU. Its bytes start zeroed. Buffer calls and the
 * generated functions run one at a time, from any thread. */
typedef struct loopc_buffer loopc_buffer;

loopc_status loopc_buffer_create(size_t bytes, loopc_buffer **out);
/* NULL is ignored. */
void loopc_buffer_destroy(loopc_buffer *buffer);
size_t loopc_buffer_size(const loopc_buffer *buffer);
loopc_device_kind loopc_buffer_device(const loopc_buffer *buffer);
/* Copies `bytes` bytes into the buffer at byte `offset`, out of it, or
 * between two buffers (of any devices); a range past a buffer's end is
 * LOOPC_ERROR_INVALID_ARGUMENT and copies nothing. */
loopc_status loopc_buffer_upload(loopc_buffer *buffer, size_t offset, const void *source,
                                 size_t bytes);
loopc_status loopc_buffer_download(const loopc_buffer *buffer, size_t offset, void *destination,
                                   size_t bytes);
loopc_status loopc_buffer_copy(loopc_buffer *destination, size_t destination_offset,
                               const loopc_buffer *source, size_t source_offset, size_t bytes);

/* On the GPU, a `..._buffers` call whose arrays are all buffers on the GPU
 * returns once its kernels are launched, without waiting for them; calls,
 * copies and timers run in the order they are made. What waits: this call,
 * a download, a `..._buffers` call given a buffer of the CPU or running on
 * the CPU, a call of a function taking pointers, and loopc_timer_stop. A
 * kernel's fault in a call that did not wait is reported by the next of
 * those (LOOPC_ERROR_KERNEL_FAULT, with the kernel's message). On the CPU
 * every call waits. */
loopc_status loopc_wait_for_calls(void);

/* The time the calls, copies and timers between a start and a stop took,
 * measured where they run (GPU events, or the CPU's clock). */
typedef struct loopc_timer loopc_timer;
loopc_status loopc_timer_start(loopc_timer **out);
/* Waits for the calls before it, writes the milliseconds since the start to
 * *milliseconds and frees the timer. */
loopc_status loopc_timer_stop(loopc_timer *timer, double *milliseconds);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* LOOPC_RUNTIME_H */
