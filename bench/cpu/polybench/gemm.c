/* tests/programs/polybench/gemm.loop (kernel gemm) in plain C: C = alpha A B
 * + beta C, parallel over C's rows (the .loop's parfor over i and j), each
 * element a sequential sum over k. */
#include "../harness.h"

static long NI, NJ, NK;
static float *C, *C0, *A, *B;
static const float alpha = 1.5f, beta = 1.2f;

static void reset(void) { memcpy(C, C0, (size_t)(NI * NJ) * sizeof(float)); }

/* The sizes and arrays as parameters, restrict, as PolyBench passes them:
 * Polly models no loop over globals that a store might alias. */
static void __attribute__((noinline))
kernel_gemm(long NI, long NJ, long NK, float *restrict C, const float *restrict A,
            const float *restrict B) {
  PARFOR
  for (long i = 0; i < NI; ++i)
    for (long j = 0; j < NJ; ++j) {
      C[i * NJ + j] *= beta;
      for (long k = 0; k < NK; ++k)
        C[i * NJ + j] += alpha * A[i * NK + k] * B[k * NJ + j];
    }
}

static void run(void) { kernel_gemm(NI, NJ, NK, C, A, B); }

static double checksum(void) { return bench_sum(C, (size_t)(NI * NJ)); }

int main(int argc, char **argv) {
  NI = bench_arg(argc, argv, 1), NJ = bench_arg(argc, argv, 2), NK = bench_arg(argc, argv, 3);
  int reps = (int)bench_arg(argc, argv, 4);
  C = bench_alloc((size_t)(NI * NJ)), C0 = bench_alloc((size_t)(NI * NJ));
  A = bench_alloc((size_t)(NI * NK)), B = bench_alloc((size_t)(NK * NJ));
  bench_fill(C0, (size_t)(NI * NJ), 1), bench_fill(A, (size_t)(NI * NK), 2);
  bench_fill(B, (size_t)(NK * NJ), 3);
  bench_dump("in", "C", C0, 2, (long[]){NI, NJ});
  bench_dump("in", "A", A, 2, (long[]){NI, NK});
  bench_dump("in", "B", B, 2, (long[]){NK, NJ});
  bench_report(reps, reset, run, checksum);
  bench_dump("out", "C", C, 2, (long[]){NI, NJ});
  return 0;
}
