// A chain of 100 calls of one small kernel (y = a y + x over N points),
// through host pointers (each call copies x and y to the device and y back)
// and through buffers (the data stays there; the calls do not wait), timed
// with loopc::Timer. The two must give the same values. On a GPU the
// buffers' chain shows what copies cost; on the CPU both are the same code.
// Usage: embedding_chain [N] (default 100003).
#include "gpu_vec_vector.ops.h"

#include <cstdio>
#include <cstdlib>
#include <vector>

int main(int argc, char **argv) {
  const int64_t n = argc > 1 ? std::atoll(argv[1]) : 100003;
  const int calls = 100;
  std::vector<float> x(n), y(n, 1.0f);
  for (int64_t i = 0; i < n; ++i)
    x[i] = static_cast<float>(i % 17) / 16.0f;
  try {
    // First calls start the CPU's threads and load the GPU code: untimed.
    loopc::kernels::gpu_vec_scale(1.0f, y, n);
    loopc::Timer throughPointers;
    for (int call = 0; call < calls; ++call) {
      loopc::kernels::gpu_vec_scale(0.5f, y, n);
      loopc::kernels::gpu_vec_axpy(1.0f, x, y, n);
    }
    double pointerMs = throughPointers.stop();

    loopc::Buffer<float> bx(x), by(std::vector<float>(n, 1.0f));
    loopc::kernels::gpu_vec_scale(1.0f, by, n);
    loopc::Timer throughBuffers;
    for (int call = 0; call < calls; ++call) {
      loopc::kernels::gpu_vec_scale(0.5f, by, n);
      loopc::kernels::gpu_vec_axpy(1.0f, bx, by, n);
    }
    double bufferMs = throughBuffers.stop();
    std::vector<float> fromBuffers = by.to_vector();

    bool same = fromBuffers == y;
    std::printf("chain of %d calls on the %s, N = %lld: through host pointers %.3f ms, through "
                "buffers %.3f ms; %s\n",
                2 * calls, loopc::used_device() == loopc::Device::Gpu ? "GPU" : "CPU",
                static_cast<long long>(n), pointerMs, bufferMs,
                same ? "the same values" : "DIFFERENT VALUES");
    return same ? 0 : 1;
  } catch (const loopc::Error &error) {
    std::fprintf(stderr, "embedding_chain: %s\n", error.what());
    return 1;
  }
}
