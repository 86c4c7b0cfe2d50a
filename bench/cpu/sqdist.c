/* samples/sqdist.loop in plain C: D[i][j] = sum over k of (X[i][k] -
 * Y[j][k])^2, X of M x K, Y of N x K, D of M x N, parallel over i. */
#include "harness.h"

static long M, N, K;
static float *X, *Y, *D;

static void run(void) {
#pragma omp parallel for
  for (long i = 0; i < M; ++i)
    for (long j = 0; j < N; ++j) {
      float sum = 0.0f;
      for (long k = 0; k < K; ++k) {
        float d = X[i * K + k] - Y[j * K + k];
        sum += d * d;
      }
      D[i * N + j] = sum;
    }
}

static double checksum(void) { return bench_sum(D, (size_t)(M * N)); }

int main(int argc, char **argv) {
  M = bench_arg(argc, argv, 1), N = bench_arg(argc, argv, 2), K = bench_arg(argc, argv, 3);
  int reps = (int)bench_arg(argc, argv, 4);
  X = bench_alloc((size_t)(M * K)), Y = bench_alloc((size_t)(N * K)),
  D = bench_alloc((size_t)(M * N));
  bench_fill(X, (size_t)(M * K), 1), bench_fill(Y, (size_t)(N * K), 2),
      bench_fill(D, (size_t)(M * N), 3);
  bench_dump("in", "X", X, 2, (long[]){M, K});
  bench_dump("in", "Y", Y, 2, (long[]){N, K});
  bench_report(reps, bench_nothing, run, checksum);
  bench_dump("out", "D", D, 2, (long[]){M, N});
  return 0;
}
