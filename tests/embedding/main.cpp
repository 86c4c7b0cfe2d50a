// Calls the kernels of kernels.loop through the header loopc generated, on
// random shapes (not multiples of any tile), and checks every result against a
// plain C++ reference and every bad call against its status and message.
// Exits 0 when all hold, printing what failed otherwise.
#include "checked_checked.h"
#include "fused.h"
#include "kernels.h"
#include "pick_a.h"
#include "pick_b.h"
#include "vec_checked_vector.ops.h"
#include "vec_vector.ops.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

extern "C" loopc_status negate_in_c(const int32_t *a, int32_t *q, int64_t n);

namespace {

int failures = 0;

void expect(bool holds, const std::string &what) {
  if (!holds) {
    std::printf("FAILED: %s\n", what.c_str());
    ++failures;
  }
}

void expectSuccess(loopc_status status, const std::string &what) {
  expect(status == LOOPC_SUCCESS, what + " returned " + loopc_status_name(status) + ": " +
                                      loopc_runtime_last_error(nullptr));
}

void expectFailure(loopc_status status, loopc_status expected, const std::string &message,
                   const std::string &what) {
  std::string actual = loopc_runtime_last_error(nullptr);
  expect(status == expected && actual.find(message) != std::string::npos,
         what + ": expected " + loopc_status_name(expected) + " with '" + message + "', got " +
             loopc_status_name(status) + " with '" + actual + "'");
}

std::mt19937_64 rng(20261124);

int64_t randomSize(int64_t low, int64_t high) {
  return std::uniform_int_distribution<int64_t>(low, high)(rng);
}

template <typename T> std::vector<T> randomValues(size_t count, double low, double high) {
  std::uniform_real_distribution<double> value(low, high);
  std::vector<T> values(count);
  for (T &v : values)
    v = static_cast<T>(value(rng));
  return values;
}

void checkMatmul() {
  for (int trial = 0; trial < 4; ++trial) {
    int64_t M = randomSize(1, 97), K = randomSize(1, 131), N = randomSize(1, 75);
    auto A = randomValues<float>(M * K, -1, 1), B = randomValues<float>(K * N, -1, 1);
    std::vector<float> C(M * N, 42.0f); // out arrays are zeroed by the call
    expectSuccess(matmul(A.data(), B.data(), C.data(), M, K, N), "matmul");
    double worst = 0;
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double sum = 0;
        for (int64_t k = 0; k < K; ++k)
          sum += double(A[i * K + k]) * B[k * N + j];
        worst = std::max(worst, std::abs(sum - C[i * N + j]));
      }
    expect(worst < 1e-4, "matmul " + std::to_string(M) + "x" + std::to_string(K) + "x" +
                             std::to_string(N) + " differs by " + std::to_string(worst));
  }
  expectFailure(matmul(nullptr, nullptr, nullptr, -3, 4, 5), LOOPC_ERROR_INVALID_ARGUMENT,
                "kernel 'matmul': size M is negative", "matmul with M = -3");
  std::vector<float> B(4 * 5), C(3 * 5);
  expectFailure(matmul(nullptr, B.data(), C.data(), 3, 4, 5), LOOPC_ERROR_INVALID_ARGUMENT,
                "kernel 'matmul': 'A' is NULL", "matmul with A = NULL");
  // Empty arrays may be NULL.
  expectSuccess(matmul(nullptr, nullptr, C.data(), 3, 0, 5), "matmul with K = 0");
  expect(C == std::vector<float>(3 * 5, 0.0f), "matmul with K = 0 gives zeros");
  // From a bug hunt: 2^32 x 2^32 elements, whose count wraps to 0 in int64,
  // are not an empty array; a size in bytes beyond int64 is refused.
  const int64_t big = int64_t(1) << 32;
  expectFailure(matmul(nullptr, nullptr, nullptr, big, big, 0), LOOPC_ERROR_INVALID_ARGUMENT,
                "kernel 'matmul': 'A' would be too large (its type is f32[M][K]): its size in "
                "bytes overflows int64_t",
                "matmul with M = K = 2^32");
  expectFailure(matmul(nullptr, nullptr, nullptr, int64_t(1) << 62, 1, 0),
                LOOPC_ERROR_INVALID_ARGUMENT, "'A' would be too large", "matmul with 2^62 floats");
  expectSuccess(matmul(nullptr, nullptr, nullptr, 0, big, 0), "matmul with M = N = 0, K = 2^32");
}

void checkDotAndSmooth() {
  int64_t N = randomSize(1000, 5000);
  auto x = randomValues<double>(N, -2, 2), y = randomValues<double>(N, -2, 2);
  double r = -1, expected = 0;
  for (int64_t i = 0; i < N; ++i)
    expected += x[i] * y[i];
  expectSuccess(dot(x.data(), y.data(), &r, N), "dot");
  expect(std::abs(r - expected) < 1e-9 * N,
         "dot: " + std::to_string(r) + " instead of " + std::to_string(expected));
  expectFailure(dot(x.data(), y.data(), nullptr, N), LOOPC_ERROR_INVALID_ARGUMENT,
                "kernel 'dot': 'r' is NULL", "dot with r = NULL");

  std::vector<double> smoothed(N - 2);
  expectSuccess(smooth(x.data(), 0.25, smoothed.data(), N), "smooth");
  bool same = true;
  for (int64_t i = 0; i + 2 < N; ++i)
    same &= std::abs(smoothed[i] - (0.25 * x[i] + 0.75 * 0.5 * (x[i + 1] + x[i + 2]))) < 1e-12;
  expect(same, "smooth differs from the reference");
  expectFailure(smooth(x.data(), 0.25, smoothed.data(), 1), LOOPC_ERROR_INVALID_ARGUMENT,
                "'y' would have a negative extent (its type is f64[N - 2])", "smooth with N = 1");
}

void checkCountKeys() {
  int64_t N = randomSize(10000, 30000), B = randomSize(5, 300);
  std::vector<int32_t> keys(N);
  for (int32_t &key : keys)
    key = static_cast<int32_t>(randomSize(-20, B + 20)); // some outside [0, B)
  std::vector<int64_t> counts(B, 7), expected(B, 7);     // inout: added to
  for (int32_t key : keys)
    if (key >= 0 && key < B)
      ++expected[key];
  bool seen = false;
  expectSuccess(count_keys(keys.data(), counts.data(), &seen, N, B), "count_keys");
  expect(counts == expected, "count_keys counts differ");
  expect(seen, "count_keys: seen should be true");
  std::vector<int32_t> outside(100, -1);
  seen = true; // out scalars are zeroed too
  expectSuccess(count_keys(outside.data(), counts.data(), &seen, 100, B), "count_keys outside");
  expect(!seen, "count_keys: seen should be false when no key is in range");
}

void checkDivide() {
  int64_t N = randomSize(100, 999);
  std::vector<int32_t> a(N), q(N);
  for (int64_t i = 0; i < N; ++i)
    a[i] = static_cast<int32_t>(i * 37 - 5000);
  expectSuccess(divide(a.data(), 7, true, q.data(), N), "divide");
  bool same = true;
  for (int64_t i = 0; i < N; ++i)
    same &= q[i] == -(a[i] / 7);
  expect(same, "divide differs from the reference");
  expectSuccess(negate_in_c(a.data(), q.data(), N), "divide called from C");
  expect(q[1] == -a[1], "divide called from C negates");
  expectFailure(divide(a.data(), 0, false, q.data(), N), LOOPC_ERROR_KERNEL_FAULT,
                "kernels.loop:34:17: kernel 'divide': integer division by zero", "divide by zero");
}

void checkEveryOther() {
  int64_t N = randomSize(3, 999);
  auto x = randomValues<float>(N, -1, 1);
  std::vector<float> y(N, 42.0f);
  expectSuccess(every_other(x.data(), y.data(), N), "every_other");
  bool right = true;
  for (int64_t i = 0; i < N; ++i)
    right &= y[i] == (i % 2 == 0 ? 2.0f * x[i] : 0.0f);
  expect(right, "every_other: the elements it does not write are not zero");
}

void checkRunningTotal() {
  int64_t N = randomSize(100000, 300000); // several chunks of the scan
  std::vector<float> x(N), total(N);
  for (int64_t i = 0; i < N; ++i)
    x[i] = static_cast<float>(i % 3); // exact in f32 at any order of sums
  expectSuccess(running_total(x.data(), total.data(), N), "running_total");
  bool same = true;
  float sum = 0;
  for (int64_t i = 0; i < N; ++i)
    same &= total[i] == (sum += x[i]);
  expect(same, "running_total differs from the reference");
}

void checkGather() {
  std::vector<float> x = {10, 11, 12, 13, 14}, y(3);
  std::vector<int64_t> at = {4, 0, 2};
  expectSuccess(checked_gather(x.data(), at.data(), y.data(), 5, 3), "gather");
  expect(y == std::vector<float>{14, 10, 12}, "gather picks the elements asked for");
  at[1] = 7;
  expectFailure(checked_gather(x.data(), at.data(), y.data(), 5, 3), LOOPC_ERROR_KERNEL_FAULT,
                "checked.loop:6:12: kernel 'gather': index 7 out of range for dimension 0 of 'x' "
                "(extent 5)",
                "gather out of range");
}

// From a bug hunt: extents whose arithmetic wrapped (n * n with n = 2^32 is
// 0 in int64_t) passed for empty arrays, a NULL was accepted and the kernel
// wrote through it. They are refused; extents that fit are checked as before.
void checkOverflowingExtents() {
  std::vector<float> y(9);
  expectSuccess(square(3, y.data()), "square with n = 3");
  expect(y == std::vector<float>(9, 1.0f), "square with n = 3 writes 9 ones");
  const std::string squareOverflows =
      "kernel 'square': in the type of 'y' (f32[n * n]): the extent overflows 64-bit integers";
  expectFailure(square(int64_t(1) << 32, nullptr), LOOPC_ERROR_INVALID_ARGUMENT, squareOverflows,
                "square with n = 2^32");
  expectFailure(square(3037000500, nullptr), LOOPC_ERROR_INVALID_ARGUMENT, squareOverflows,
                "square with n = 3037000500 (n * n just past 2^63)");
  expectFailure(square(int64_t(1) << 30, nullptr), LOOPC_ERROR_INVALID_ARGUMENT,
                "kernel 'square': 'y' is NULL", "square with n = 2^30 (2^60 floats)");
  expectFailure(square(3037000499, nullptr), LOOPC_ERROR_INVALID_ARGUMENT,
                "kernel 'square': 'y' would be too large", "square with n * n just below 2^63");

  float x[1] = {1};
  const std::string cubeOverflows =
      "kernel 'cube': in the type of 'y' (f32[N * N * N]): the extent overflows 64-bit integers";
  expectFailure(cube(x, nullptr, int64_t(1) << 22), LOOPC_ERROR_INVALID_ARGUMENT, cubeOverflows,
                "cube with N = 2^22");
  expectFailure(cube(x, nullptr, int64_t(1) << 21), LOOPC_ERROR_INVALID_ARGUMENT, cubeOverflows,
                "cube with N = 2^21 (N^3 = 2^63)");
  expectFailure(cube(x, nullptr, int64_t(1) << 20), LOOPC_ERROR_INVALID_ARGUMENT,
                "kernel 'cube': 'y' is NULL", "cube with N = 2^20");

  // An i32 scalar's m * m is i32 arithmetic, in the kernel's code too.
  expectSuccess(square32(3, y.data()), "square32 with m = 3");
  expect(y == std::vector<float>(9, 2.0f), "square32 with m = 3 writes 9 twos");
  expectFailure(square32(50000, nullptr), LOOPC_ERROR_INVALID_ARGUMENT,
                "kernel 'square32': in the type of 'y' (f32[m * m]): the extent overflows 32-bit "
                "integers",
                "square32 with m = 50000");
}

// Two of vector.ops.loop's three kernels, chosen by KERNELS.
void checkVectorOps() {
  std::vector<float> x = {1, 2, 3}, y = {10, 20, 30};
  expectSuccess(vec_axpy(2.0f, x.data(), y.data(), 3), "vec_axpy");
  expectSuccess(vec_scale(0.5f, y.data(), 3), "vec_scale");
  expect(y == std::vector<float>{6, 12, 18}, "vec_axpy then vec_scale: wrong values");
  // The same source compiled again with PREFIX vec_checked_ and BOUNDS_CHECK.
  expectSuccess(vec_checked_axpy(1.0f, x.data(), y.data(), 3), "vec_checked_axpy");
  expect(y == std::vector<float>{7, 14, 21}, "vec_checked_axpy: wrong values");
  // KERNELS over pick_a.loop and pick_b.loop.
  expectSuccess(twice(y.data(), 3), "twice");
  expectSuccess(shift(y.data(), 3), "shift");
  expect(y == std::vector<float>{15, 29, 43}, "twice then shift: wrong values");
}

// fused.loop, built for x86-64 (no FMA instruction): a * b - c rounded once.
// At a = 1 + 2^-30, b = 1 - 2^-30, c = 1 the exact result is -2^-60; the
// product rounded first gives 0.
void checkFusedWithoutFma() {
  std::mt19937 random(11);
  std::uniform_real_distribution<double> uniform(-1, 1);
  std::vector<double> a(101), b(101), c(101), r(101);
  for (size_t i = 0; i < a.size(); ++i) {
    a[i] = uniform(random), b[i] = uniform(random), c[i] = a[i] * b[i];
  }
  a[0] = 1 + std::ldexp(1.0, -30), b[0] = 1 - std::ldexp(1.0, -30), c[0] = 1;
  expectSuccess(residual(a.data(), b.data(), c.data(), r.data(), 101), "residual");
  for (size_t i = 0; i < a.size(); ++i)
    expect(r[i] == std::fma(a[i], b[i], -c[i]),
           "residual[" + std::to_string(i) + "] is not a * b - c rounded once");
}

} // namespace

int main() {
  checkMatmul();
  checkDotAndSmooth();
  checkCountKeys();
  checkDivide();
  checkEveryOther();
  checkRunningTotal();
  checkGather();
  checkOverflowingExtents();
  checkVectorOps();
  checkFusedWithoutFma();
  // kernels.loop's functions hold GPU code too: on a machine with a CUDA
  // device they ran there (LOOPC_DEVICE=cpu runs them on the CPU).
  std::printf("embedding: kernels.loop's functions ran on the %s\n",
              loopc_used_device() == LOOPC_DEVICE_CUDA ? "GPU" : "CPU");
  if (failures == 0)
    std::printf("embedding: every kernel agrees with its reference and every bad call fails\n");
  return failures == 0 ? 0 : 1;
}
