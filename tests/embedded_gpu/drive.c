/* Calls every kernel of kernels.loop once and prints what it returned and
 * the results, then, when LOOPC_CUDA_DRIVER names the stand-in driver, the
 * launches it saw. Arguments, in order, before the calls:
 *   use-cpu, use-gpu      loopc_use_device(LOOPC_DEVICE_CPU or _CUDA)
 *   capability=NN         the stand-in device's compute capability
 *   fault=SITE            the stand-in's next launch after saxpy, total and
 *                         shifted records device error SITE (gather's)
 *   async-fault=SITE      the same for gather_buffers' launch */
#include "kernels.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *stub;

static void *control(const char *name) { return stub ? dlsym(stub, name) : NULL; }

static void report(const char *kernel, loopc_status status) {
  printf("%s: %s", kernel, loopc_status_name(status));
  if (status != LOOPC_SUCCESS)
    printf(" (%s)", loopc_runtime_last_error(NULL));
  printf("\n");
}

static void print_floats(const char *name, const float *values, int count) {
  printf("  %s =", name);
  for (int i = 0; i < count; ++i)
    printf(" %.6g", values[i]);
  printf("\n");
}

int main(int argc, char **argv) {
  const char *driver = getenv("LOOPC_CUDA_DRIVER");
  stub = driver ? dlopen(driver, RTLD_NOW) : NULL;
  unsigned fault = 0, async_fault = 0;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "use-cpu") == 0 || strcmp(argv[i], "use-gpu") == 0) {
      loopc_device_kind kind = argv[i][4] == 'c' ? LOOPC_DEVICE_CPU : LOOPC_DEVICE_CUDA;
      report(argv[i], loopc_use_device(kind));
    } else if (strncmp(argv[i], "capability=", 11) == 0) {
      ((void (*)(int))control("loopcStubSetComputeCapability"))(atoi(argv[i] + 11));
    } else if (strncmp(argv[i], "fault=", 6) == 0) {
      fault = (unsigned)atoi(argv[i] + 6);
    } else if (strncmp(argv[i], "async-fault=", 12) == 0) {
      async_fault = (unsigned)atoi(argv[i] + 12);
    }
  }
  printf("device: %s\n", loopc_used_device() == LOOPC_DEVICE_CUDA ? "cuda" : "cpu");

  float x[5] = {1, 2, 3, 4, 5}, y[5] = {1, 1, 1, 1, 1}, s = 7;
  report("saxpy", saxpy(x, y, 2.0f, 5));
  print_floats("y", y, 5);
  report("total", total(x, &s, 5));
  print_floats("s", &s, 1);

  double u[3] = {1.5, 2.5, 3.5}, v[3] = {7, 7, 7};
  report("shifted", shifted(u, true, 10, v, 3));
  printf("  v = %g %g %g\n", v[0], v[1], v[2]);

  int32_t at[3] = {4, 0, 2};
  float picked[3] = {7, 7, 7};
  if (fault)
    ((void (*)(unsigned))control("loopcStubSetErrorWordOnNextLaunch"))(fault);
  report("gather", gather(x, at, picked, 5, 3));
  print_floats("picked", picked, 3);
  int32_t outside[1] = {5};
  report("gather outside", gather(x, outside, picked, 5, 1));

  float r[6] = {0.5f, 0.2f, 0.1f, 0.05f, 0.02f, 0.01f}, ry[6], rz[6];
  report("levinson", levinson(r, ry, rz, 6));
  print_floats("ry", ry, 6);

  /* A chain of calls on buffers: the data stays where the functions run. */
  loopc_buffer *bx = NULL, *by = NULL, *bs = NULL;
  float ones[5] = {1, 1, 1, 1, 1}, sum = 7, chained[5];
  report("create", loopc_buffer_create(sizeof x, &bx));
  report("create", loopc_buffer_create(sizeof ones, &by));
  report("create", loopc_buffer_create(sizeof sum, &bs));
  printf("buffers on: %s\n", loopc_buffer_device(bx) == LOOPC_DEVICE_CUDA ? "cuda" : "cpu");
  report("upload", loopc_buffer_upload(bx, 0, x, sizeof x));
  report("upload", loopc_buffer_upload(by, 0, ones, sizeof ones));
  report("saxpy_buffers", saxpy_buffers(bx, by, 2.0f, 5));
  report("saxpy_buffers", saxpy_buffers(bx, by, 1.0f, 5));
  report("total_buffers", total_buffers(by, bs, 5));
  report("download", loopc_buffer_download(by, 0, chained, sizeof chained));
  report("download", loopc_buffer_download(bs, 0, &sum, sizeof sum));
  print_floats("chained", chained, 5);
  print_floats("sum", &sum, 1);
  report("saxpy_buffers small", saxpy_buffers(bx, bs, 2.0f, 5));
  report("saxpy_buffers null", saxpy_buffers(NULL, by, 2.0f, 5));
  report("download past the end", loopc_buffer_download(by, 16, chained, 8));
  report("copy", loopc_buffer_copy(by, 4, bx, 0, 8));
  report("download", loopc_buffer_download(by, 0, chained, sizeof chained));
  print_floats("copied", chained, 5);

  /* On the GPU a call on buffers does not wait: a fault surfaces when the
   * calls are waited for. */
  loopc_buffer *bat = NULL, *bpicked = NULL;
  report("create", loopc_buffer_create(sizeof at, &bat));
  report("create", loopc_buffer_create(sizeof picked, &bpicked));
  report("upload", loopc_buffer_upload(bat, 0, at, sizeof at));
  if (async_fault)
    ((void (*)(unsigned))control("loopcStubSetErrorWordOnNextLaunch"))(async_fault);
  report("gather_buffers", gather_buffers(bx, bat, bpicked, 5, 3));
  report("wait", loopc_wait_for_calls());
  report("download", loopc_buffer_download(bpicked, 0, picked, sizeof picked));
  print_floats("picked from buffers", picked, 3);
  loopc_timer *timer = NULL;
  double milliseconds = -1;
  report("timer start", loopc_timer_start(&timer));
  for (int i = 0; i < 100; ++i)
    saxpy_buffers(bx, by, 1.0f, 5);
  report("timer stop", loopc_timer_stop(timer, &milliseconds));
  printf("  timed: %s\n", milliseconds >= 0 ? "yes" : "no");
  loopc_buffer_destroy(bat);
  loopc_buffer_destroy(bpicked);
  loopc_buffer_destroy(bx);
  loopc_buffer_destroy(by);
  loopc_buffer_destroy(bs);

  int (*launches)(void) = (int (*)(void))control("loopcStubLaunchCount");
  if (launches) {
    const char *(*target)(void) = (const char *(*)(void))control("loopcStubLastModuleTarget");
    printf("module: %s\n", target());
    const char *(*kernel)(int) = (const char *(*)(int))control("loopcStubLaunchKernel");
    const unsigned *(*geometry)(int) = (const unsigned *(*)(int))control("loopcStubLaunchGeometry");
    int (*parameters)(int) = (int (*)(int))control("loopcStubLaunchParameterCount");
    const unsigned char *(*parameter)(int, int, size_t *) =
        (const unsigned char *(*)(int, int, size_t *))control("loopcStubLaunchParameter");
    for (int i = 0; i < launches(); ++i) {
      const unsigned *g = geometry(i);
      printf("launch %s grid %u %u %u block %u %u %u params", kernel(i), g[0], g[1], g[2], g[3],
             g[4], g[5]);
      for (int p = 0; p < parameters(i); ++p) {
        size_t bytes = 0;
        const unsigned char *value = parameter(i, p, &bytes);
        unsigned long long number = 0;
        memcpy(&number, value, bytes < sizeof number ? bytes : sizeof number);
        /* Device addresses differ from run to run: only their size. */
        if (bytes == 8 && number > 0xffffffffull)
          printf(" 8:address");
        else
          printf(" %zu:%llu", bytes, number);
      }
      printf("\n");
    }
  }
  return 0;
}
