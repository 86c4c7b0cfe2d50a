/* tests/programs/polybench/k3mm.loop (kernel k3mm) in plain C: E = A B, F =
 * C D, G = E F, each product parallel over its rows (the .loop's parfors
 * over i and j), each element a sequential sum. */
#include "../harness.h"

static long NI, NJ, NK, NL, NM;
static float *A, *B, *C, *D, *E, *F, *G;

/* The sizes and arrays as parameters, restrict, as PolyBench passes them:
 * Polly models no loop over globals that a store might alias. One function
 * per product, as the .loop calls mm3_mul three times, and not inlined:
 * written out in one function, two of the products got Polly's
 * matrix-multiply code, whose packed operands took 8.8 MB of that frame,
 * past an 8 MB stack (a crash).
 *
 * Polly dismisses mm3_mul itself: before it runs, clang versions the nest on
 * whether its k loop runs at all and makes the other version, zeros only,
 * one memset of the whole of E, which Polly cannot bound
 * (-Rpass-analysis=polly-scops: "Inbounds assumption" and "No-aliasing
 * assumption" false, "SCoP ends here but was dismissed"); with -mllvm
 * -disable-loop-idiom-all, which bench/cpu/polybench.sh passes, it
 * optimizes the three products. */
static void __attribute__((noinline))
mm3_mul(long P, long Q, long R, const float *restrict A, const float *restrict B,
        float *restrict E) {
  PARFOR
  for (long i = 0; i < P; ++i)
    for (long j = 0; j < R; ++j) {
      E[i * R + j] = 0.0f;
      for (long k = 0; k < Q; ++k)
        E[i * R + j] += A[i * Q + k] * B[k * R + j];
    }
}

static void __attribute__((noinline))
kernel_k3mm(long NI, long NJ, long NK, long NL, long NM, const float *restrict A,
            const float *restrict B, const float *restrict C, const float *restrict D,
            float *restrict E, float *restrict F, float *restrict G) {
  mm3_mul(NI, NK, NJ, A, B, E);
  mm3_mul(NJ, NM, NL, C, D, F);
  mm3_mul(NI, NJ, NL, E, F, G);
}

static void run(void) { kernel_k3mm(NI, NJ, NK, NL, NM, A, B, C, D, E, F, G); }

static double checksum(void) { return bench_sum(G, (size_t)(NI * NL)); }

int main(int argc, char **argv) {
  NI = bench_arg(argc, argv, 1), NJ = bench_arg(argc, argv, 2), NK = bench_arg(argc, argv, 3);
  NL = bench_arg(argc, argv, 4), NM = bench_arg(argc, argv, 5);
  int reps = (int)bench_arg(argc, argv, 6);
  A = bench_alloc((size_t)(NI * NK)), B = bench_alloc((size_t)(NK * NJ));
  C = bench_alloc((size_t)(NJ * NM)), D = bench_alloc((size_t)(NM * NL));
  E = bench_alloc((size_t)(NI * NJ)), F = bench_alloc((size_t)(NJ * NL));
  G = bench_alloc((size_t)(NI * NL));
  bench_fill(A, (size_t)(NI * NK), 1), bench_fill(B, (size_t)(NK * NJ), 2);
  bench_fill(C, (size_t)(NJ * NM), 3), bench_fill(D, (size_t)(NM * NL), 4);
  bench_dump("in", "A", A, 2, (long[]){NI, NK});
  bench_dump("in", "B", B, 2, (long[]){NK, NJ});
  bench_dump("in", "C", C, 2, (long[]){NJ, NM});
  bench_dump("in", "D", D, 2, (long[]){NM, NL});
  bench_report(reps, bench_nothing, run, checksum);
  bench_dump("out", "E", E, 2, (long[]){NI, NJ});
  bench_dump("out", "F", F, 2, (long[]){NJ, NL});
  bench_dump("out", "G", G, 2, (long[]){NI, NL});
  return 0;
}
