/* tests/programs/polybench/gemver.loop (kernel gemver) in plain C: A plus
 * two rank-one updates, then x += beta A^T y (a column walk per element),
 * x += z, and w += alpha A x, each loop parallel over its outputs with
 * sequential sums. */
#include "../harness.h"

static long N;
static float *A, *A0, *u1, *v1, *u2, *v2, *w, *w0, *x, *x0, *y, *z;
static const float alpha = 1.5f, beta = 1.2f;

static void reset(void) {
  memcpy(A, A0, (size_t)(N * N) * sizeof(float));
  memcpy(w, w0, (size_t)N * sizeof(float));
  memcpy(x, x0, (size_t)N * sizeof(float));
}

/* The sizes and arrays as parameters, restrict, as PolyBench passes them:
 * Polly models no loop over globals that a store might alias. */
static void __attribute__((noinline))
kernel_gemver(long N, float *restrict A, const float *restrict u1, const float *restrict v1,
              const float *restrict u2, const float *restrict v2, float *restrict w,
              float *restrict x, const float *restrict y, const float *restrict z) {
  PARFOR
  for (long i = 0; i < N; ++i)
    for (long j = 0; j < N; ++j)
      A[i * N + j] = A[i * N + j] + u1[i] * v1[j] + u2[i] * v2[j];
  PARFOR
  for (long i = 0; i < N; ++i)
    for (long j = 0; j < N; ++j)
      x[i] = x[i] + beta * A[j * N + i] * y[j];
  PARFOR
  for (long i = 0; i < N; ++i)
    x[i] = x[i] + z[i];
  PARFOR
  for (long i = 0; i < N; ++i)
    for (long j = 0; j < N; ++j)
      w[i] = w[i] + alpha * A[i * N + j] * x[j];
}

static void run(void) { kernel_gemver(N, A, u1, v1, u2, v2, w, x, y, z); }

static double checksum(void) { return bench_sum(w, (size_t)N); }

int main(int argc, char **argv) {
  N = bench_arg(argc, argv, 1);
  int reps = (int)bench_arg(argc, argv, 2);
  A = bench_alloc((size_t)(N * N)), A0 = bench_alloc((size_t)(N * N));
  u1 = bench_alloc((size_t)N), v1 = bench_alloc((size_t)N);
  u2 = bench_alloc((size_t)N), v2 = bench_alloc((size_t)N);
  w = bench_alloc((size_t)N), w0 = bench_alloc((size_t)N);
  x = bench_alloc((size_t)N), x0 = bench_alloc((size_t)N);
  y = bench_alloc((size_t)N), z = bench_alloc((size_t)N);
  bench_fill(A0, (size_t)(N * N), 1);
  bench_fill(u1, (size_t)N, 2), bench_fill(v1, (size_t)N, 3);
  bench_fill(u2, (size_t)N, 4), bench_fill(v2, (size_t)N, 5);
  bench_fill(w0, (size_t)N, 6), bench_fill(x0, (size_t)N, 7);
  bench_fill(y, (size_t)N, 8), bench_fill(z, (size_t)N, 9);
  bench_dump("in", "A", A0, 2, (long[]){N, N});
  bench_dump("in", "u1", u1, 1, (long[]){N});
  bench_dump("in", "v1", v1, 1, (long[]){N});
  bench_dump("in", "u2", u2, 1, (long[]){N});
  bench_dump("in", "v2", v2, 1, (long[]){N});
  bench_dump("in", "w", w0, 1, (long[]){N});
  bench_dump("in", "x", x0, 1, (long[]){N});
  bench_dump("in", "y", y, 1, (long[]){N});
  bench_dump("in", "z", z, 1, (long[]){N});
  bench_report(reps, reset, run, checksum);
  bench_dump("out", "A", A, 2, (long[]){N, N});
  bench_dump("out", "w", w, 1, (long[]){N});
  bench_dump("out", "x", x, 1, (long[]){N});
  return 0;
}
