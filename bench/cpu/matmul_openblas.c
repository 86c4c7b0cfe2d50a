/* samples/matmul.loop as a tuned library computes it: OpenBLAS's cblas_sgemm
 * on the same row-major A (M x K) and B (K x N), with as many threads as
 * OPENBLAS_NUM_THREADS (run.sh sets the core count). The peer loopc's matmul
 * is measured against in bench/cpu/run.sh when libopenblas-dev is installed. */
#include "harness.h"

#include <cblas.h>

static long M, N, K;
static float *A, *B, *C;

static void run(void) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)M, (int)N, (int)K, 1.0f, A, (int)K, B,
              (int)N, 0.0f, C, (int)N);
}

static double checksum(void) { return bench_sum(C, (size_t)(M * N)); }

int main(int argc, char **argv) {
  M = bench_arg(argc, argv, 1), N = bench_arg(argc, argv, 2), K = bench_arg(argc, argv, 3);
  int reps = (int)bench_arg(argc, argv, 4);
  A = bench_alloc((size_t)(M * K)), B = bench_alloc((size_t)(K * N)),
  C = bench_alloc((size_t)(M * N));
  bench_fill(A, (size_t)(M * K), 1), bench_fill(B, (size_t)(K * N), 2),
      bench_fill(C, (size_t)(M * N), 3);
  bench_report(reps, bench_nothing, run, checksum);
  return 0;
}
