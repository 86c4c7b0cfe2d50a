/* tests/programs/polybench/k2mm.loop (kernel k2mm) in plain C: tmp = alpha A
 * B, then D = beta D + tmp C, each parallel over its rows (the .loop's
 * parfors over i and j), each element a sequential sum. */
#include "../harness.h"

static long NI, NJ, NK, NL;
static float *tmp, *A, *B, *C, *D, *D0;
static const float alpha = 1.5f, beta = 1.2f;

static void reset(void) { memcpy(D, D0, (size_t)(NI * NL) * sizeof(float)); }

/* The sizes and arrays as parameters, restrict, as PolyBench passes them:
 * Polly models no loop over globals that a store might alias.
 *
 * Polly dismisses both products (one SCoP): before it runs, clang versions
 * the first nest on whether its k loop runs at all and makes the other
 * version, zeros only, one memset of the whole of tmp, which Polly cannot
 * bound (-Rpass-analysis=polly-scops: "Inbounds assumption" and "No-aliasing
 * assumption" false, "SCoP ends here but was dismissed"); with -mllvm
 * -disable-loop-idiom-all, which bench/cpu/polybench.sh passes, it optimizes
 * them. */
static void __attribute__((noinline))
kernel_k2mm(long NI, long NJ, long NK, long NL, float *restrict tmp, const float *restrict A,
            const float *restrict B, const float *restrict C, float *restrict D) {
  PARFOR
  for (long i = 0; i < NI; ++i)
    for (long j = 0; j < NJ; ++j) {
      tmp[i * NJ + j] = 0.0f;
      for (long k = 0; k < NK; ++k)
        tmp[i * NJ + j] += alpha * A[i * NK + k] * B[k * NJ + j];
    }
  PARFOR
  for (long i = 0; i < NI; ++i)
    for (long j = 0; j < NL; ++j) {
      D[i * NL + j] *= beta;
      for (long k = 0; k < NJ; ++k)
        D[i * NL + j] += tmp[i * NJ + k] * C[k * NL + j];
    }
}

static void run(void) { kernel_k2mm(NI, NJ, NK, NL, tmp, A, B, C, D); }

static double checksum(void) { return bench_sum(D, (size_t)(NI * NL)); }

int main(int argc, char **argv) {
  NI = bench_arg(argc, argv, 1), NJ = bench_arg(argc, argv, 2);
  NK = bench_arg(argc, argv, 3), NL = bench_arg(argc, argv, 4);
  int reps = (int)bench_arg(argc, argv, 5);
  tmp = bench_alloc((size_t)(NI * NJ)), A = bench_alloc((size_t)(NI * NK));
  B = bench_alloc((size_t)(NK * NJ)), C = bench_alloc((size_t)(NJ * NL));
  D = bench_alloc((size_t)(NI * NL)), D0 = bench_alloc((size_t)(NI * NL));
  bench_fill(A, (size_t)(NI * NK), 1), bench_fill(B, (size_t)(NK * NJ), 2);
  bench_fill(C, (size_t)(NJ * NL), 3), bench_fill(D0, (size_t)(NI * NL), 4);
  bench_dump("in", "A", A, 2, (long[]){NI, NK});
  bench_dump("in", "B", B, 2, (long[]){NK, NJ});
  bench_dump("in", "C", C, 2, (long[]){NJ, NL});
  bench_dump("in", "D", D0, 2, (long[]){NI, NL});
  bench_report(reps, reset, run, checksum);
  bench_dump("out", "tmp", tmp, 2, (long[]){NI, NJ});
  bench_dump("out", "D", D, 2, (long[]){NI, NL});
  return 0;
}
