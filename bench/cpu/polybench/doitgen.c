/* tests/programs/polybench/doitgen.loop (kernel doitgen) in plain C: each
 * row A[r][q] becomes A[r][q] C4, through the shared sum array: for every r
 * and q in turn, two loops parallel over p (the sums, then the copy back). */
#include "../harness.h"

static long NR, NQ, NP;
static float *A, *A0, *C4, *sum;

static void reset(void) { memcpy(A, A0, (size_t)(NR * NQ * NP) * sizeof(float)); }

/* The sizes and arrays as parameters, restrict, as PolyBench passes them:
 * Polly models no loop over globals that a store might alias. */
static void __attribute__((noinline))
kernel_doitgen(long NR, long NQ, long NP, float *restrict A, const float *restrict C4,
               float *restrict sum) {
  for (long r = 0; r < NR; ++r)
    for (long q = 0; q < NQ; ++q) {
      PARFOR
      for (long p = 0; p < NP; ++p) {
        sum[p] = 0.0f;
        for (long s = 0; s < NP; ++s)
          sum[p] += A[(r * NQ + q) * NP + s] * C4[s * NP + p];
      }
      PARFOR
      for (long p = 0; p < NP; ++p)
        A[(r * NQ + q) * NP + p] = sum[p];
    }
}

static void run(void) { kernel_doitgen(NR, NQ, NP, A, C4, sum); }

static double checksum(void) { return bench_sum(A, (size_t)(NR * NQ * NP)); }

int main(int argc, char **argv) {
  NR = bench_arg(argc, argv, 1), NQ = bench_arg(argc, argv, 2), NP = bench_arg(argc, argv, 3);
  int reps = (int)bench_arg(argc, argv, 4);
  A = bench_alloc((size_t)(NR * NQ * NP)), A0 = bench_alloc((size_t)(NR * NQ * NP));
  C4 = bench_alloc((size_t)(NP * NP)), sum = bench_alloc((size_t)NP);
  bench_fill(A0, (size_t)(NR * NQ * NP), 1), bench_fill(C4, (size_t)(NP * NP), 2);
  bench_dump("in", "A", A0, 3, (long[]){NR, NQ, NP});
  bench_dump("in", "C4", C4, 2, (long[]){NP, NP});
  bench_report(reps, reset, run, checksum);
  bench_dump("out", "A", A, 3, (long[]){NR, NQ, NP});
  bench_dump("out", "sum", sum, 1, (long[]){NP});
  return 0;
}
