/* tests/programs/polybench/covariance.loop (kernel covariance) in plain C:
 * the column means, the centred data, the upper triangle of the covariance
 * (a sequential sum over the rows per element), mirrored. */
#include "../harness.h"

static long M, N;
static float *data, *data0, *cov, *mean;

static void reset(void) { memcpy(data, data0, (size_t)(N * M) * sizeof(float)); }

/* The sizes and arrays as parameters, restrict, as PolyBench passes them:
 * Polly models no loop over globals that a store might alias. */
static void __attribute__((noinline))
kernel_covariance(long M, long N, float *restrict data, float *restrict cov, float *restrict mean) {
  float float_n = (float)N;
  PARFOR
  for (long j = 0; j < M; ++j) {
    mean[j] = 0.0f;
    for (long i = 0; i < N; ++i)
      mean[j] += data[i * M + j];
    mean[j] /= float_n;
  }
  PARFOR
  for (long i = 0; i < N; ++i)
    for (long j = 0; j < M; ++j)
      data[i * M + j] -= mean[j];
  PARFOR
  for (long i = 0; i < M; ++i)
    for (long j = i; j < M; ++j) {
      cov[i * M + j] = 0.0f;
      for (long k = 0; k < N; ++k)
        cov[i * M + j] += data[k * M + i] * data[k * M + j];
      cov[i * M + j] /= float_n - 1.0f;
    }
  for (long i = 0; i < M; ++i) {
    PARFOR
    for (long j = i + 1; j < M; ++j)
      cov[j * M + i] = cov[i * M + j];
  }
}

static void run(void) { kernel_covariance(M, N, data, cov, mean); }

static double checksum(void) { return bench_sum(cov, (size_t)(M * M)); }

int main(int argc, char **argv) {
  M = bench_arg(argc, argv, 1), N = bench_arg(argc, argv, 2);
  int reps = (int)bench_arg(argc, argv, 3);
  data = bench_alloc((size_t)(N * M)), data0 = bench_alloc((size_t)(N * M));
  cov = bench_alloc((size_t)(M * M)), mean = bench_alloc((size_t)M);
  bench_fill(data0, (size_t)(N * M), 1);
  bench_dump("in", "data", data0, 2, (long[]){N, M});
  bench_report(reps, reset, run, checksum);
  bench_dump("out", "cov", cov, 2, (long[]){M, M});
  bench_dump("out", "mean", mean, 1, (long[]){M});
  return 0;
}
