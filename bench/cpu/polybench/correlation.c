/* tests/programs/polybench/correlation.loop (kernel correlation) in plain C:
 * the column means and standard deviations (1 where at most 0.1), the
 * normalized data, the upper triangle of the correlation (a sequential sum
 * over the rows per element), mirrored, with ones on the diagonal. */
#include "../harness.h"
#include <math.h>

static long M, N;
static float *data, *data0, *corr, *mean, *stddev;

static void reset(void) { memcpy(data, data0, (size_t)(N * M) * sizeof(float)); }

/* The sizes and arrays as parameters, restrict, as PolyBench passes them:
 * Polly models no loop over globals that a store might alias. */
static void __attribute__((noinline))
kernel_correlation(long M, long N, float *restrict data, float *restrict corr,
                   float *restrict mean, float *restrict stddev) {
  float float_n = (float)N;
  const float eps = 0.1f;
  PARFOR
  for (long j = 0; j < M; ++j) {
    mean[j] = 0.0f;
    for (long i = 0; i < N; ++i)
      mean[j] += data[i * M + j];
    mean[j] /= float_n;
  }
  PARFOR
  for (long j = 0; j < M; ++j) {
    stddev[j] = 0.0f;
    for (long i = 0; i < N; ++i)
      stddev[j] += (data[i * M + j] - mean[j]) * (data[i * M + j] - mean[j]);
    stddev[j] /= float_n;
    stddev[j] = sqrtf(stddev[j]);
    stddev[j] = stddev[j] <= eps ? 1.0f : stddev[j];
  }
  PARFOR
  for (long i = 0; i < N; ++i)
    for (long j = 0; j < M; ++j) {
      data[i * M + j] -= mean[j];
      data[i * M + j] /= sqrtf(float_n) * stddev[j];
    }
  PARFOR
  for (long i = 0; i < M - 1; ++i)
    corr[i * M + i] = 1.0f;
  PARFOR
  for (long i = 0; i < M - 1; ++i)
    for (long j = i + 1; j < M; ++j) {
      corr[i * M + j] = 0.0f;
      for (long k = 0; k < N; ++k)
        corr[i * M + j] += data[k * M + i] * data[k * M + j];
    }
  for (long i = 0; i < M; ++i) {
    PARFOR
    for (long j = i + 1; j < M; ++j)
      corr[j * M + i] = corr[i * M + j];
  }
  if (M > 0)
    corr[(M - 1) * M + M - 1] = 1.0f;
}

static void run(void) { kernel_correlation(M, N, data, corr, mean, stddev); }

static double checksum(void) { return bench_sum(corr, (size_t)(M * M)); }

int main(int argc, char **argv) {
  M = bench_arg(argc, argv, 1), N = bench_arg(argc, argv, 2);
  int reps = (int)bench_arg(argc, argv, 3);
  data = bench_alloc((size_t)(N * M)), data0 = bench_alloc((size_t)(N * M));
  corr = bench_alloc((size_t)(M * M)), mean = bench_alloc((size_t)M);
  stddev = bench_alloc((size_t)M);
  bench_fill(data0, (size_t)(N * M), 1);
  bench_dump("in", "data", data0, 2, (long[]){N, M});
  bench_report(reps, reset, run, checksum);
  bench_dump("out", "data", data, 2, (long[]){N, M});
  bench_dump("out", "corr", corr, 2, (long[]){M, M});
  bench_dump("out", "mean", mean, 1, (long[]){M});
  bench_dump("out", "stddev", stddev, 1, (long[]){M});
  return 0;
}
