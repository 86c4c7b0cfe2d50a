// Squares a matrix twice, C = A A then D = C A, on the GPU when the machine
// has one (else on the CPU): first with std::vectors, copied to the device and
// back by each call, then with buffers that keep the matrices there between
// the calls. Checks both against a plain loop and prints the device and the
// times. Usage: matmul_app [N] (default 500).
#include "matmul.h" // generated from samples/matmul.loop

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

std::vector<float> reference(const std::vector<float> &A, const std::vector<float> &B, int64_t n) {
  std::vector<float> C(A.size());
  for (int64_t i = 0; i < n; ++i)
    for (int64_t k = 0; k < n; ++k)
      for (int64_t j = 0; j < n; ++j)
        C[i * n + j] += A[i * n + k] * B[k * n + j];
  return C;
}

bool close(const std::vector<float> &a, const std::vector<float> &b) {
  for (size_t i = 0; i < a.size(); ++i)
    if (std::fabs(a[i] - b[i]) > 1e-3f * (1.0f + std::fabs(b[i])))
      return false;
  return true;
}

} // namespace

int main(int argc, char **argv) {
  int64_t n = argc > 1 ? std::atoll(argv[1]) : 500;
  std::vector<float> A(n * n), C(n * n), D(n * n);
  for (int64_t i = 0; i < n * n; ++i)
    A[i] = static_cast<float>((i * 7) % 11) / 11.0f - 0.5f;
  try {
    std::printf("running on the %s\n",
                loopc::used_device() == loopc::Device::Gpu ? "GPU" : "CPU");

    // Host memory: each call copies its arrays in and out.
    loopc::Timer withVectors;
    loopc::kernels::matmul(A, A, C, n, n, n);
    loopc::kernels::matmul(C, A, D, n, n, n);
    double vectorMs = withVectors.stop();

    // Buffers: the matrices stay on the device; only D comes back.
    loopc::Buffer<float> a(A), c(n * n), d(n * n);
    loopc::Timer withBuffers;
    loopc::kernels::matmul(a, a, c, n, n, n);
    loopc::kernels::matmul(c, a, d, n, n, n);
    double bufferMs = withBuffers.stop();
    std::vector<float> fromBuffers = d.to_vector();

    std::vector<float> expected = reference(reference(A, A, n), A, n);
    bool agree = close(D, expected) && close(fromBuffers, expected);
    std::printf("N = %lld: with vectors %.3f ms, with buffers %.3f ms; %s\n",
                static_cast<long long>(n), vectorMs, bufferMs,
                agree ? "both agree with the reference" : "WRONG RESULTS");
    return agree ? 0 : 1;
  } catch (const loopc::Error &error) {
    std::fprintf(stderr, "matmul_app: %s\n", error.what());
    return 1;
  }
}
