/* What bounds durbin (bench/cpu/polybench/durbin.c) on any compiler that
 * keeps its arithmetic: the dot product of each step alone, N - 1 steps of k
 * dependent fused multiply-adds in source order (sum += r[k - i - 1] * y[i],
 * rounded once each as the language and C under FP_CONTRACT ON round it), on
 * the same sizes and layout. No compiler may reorder the chain, so a step
 * takes k times the latency of one multiply-add whatever else it does;
 * bench/cpu/polybench.sh prints this time beside durbin's row. */
#include "../harness.h"

#include <math.h>

static long N;
static float *r, *y, total;

static void __attribute__((noinline)) chains(long N, const float *restrict r, float *restrict y) {
  float carried = 0.0f;
  for (long k = 1; k < N; ++k) {
    float sum = 0.0f;
    for (long i = 0; i < k; ++i)
      sum = fmaf(r[k - i - 1], y[i], sum);
    /* Each step's sum feeds the next, as alpha does in durbin. */
    y[k] = sum * 1e-3f;
    carried += sum;
  }
  total = carried;
}

static void run(void) { chains(N, r, y); }

static double checksum(void) { return total; }

int main(int argc, char **argv) {
  N = bench_arg(argc, argv, 1);
  int reps = (int)bench_arg(argc, argv, 2);
  r = bench_alloc((size_t)N), y = bench_alloc((size_t)N);
  bench_fill(r, (size_t)N, 1), bench_fill(y, (size_t)N, 2);
  bench_report(reps, bench_nothing, run, checksum);
  return 0;
}
