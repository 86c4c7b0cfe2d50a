/* samples/histogram.loop's histogram in plain C: counts of N floats in B equal
 * bins of [-1, 1), as a C programmer writes it with OpenMP: each thread counts
 * into bins of its own, then adds them to the shared ones. */
#include "harness.h"

static long N, B;
static float *x;
static int *H;

static void reset(void) { memset(H, 0, (size_t)B * sizeof(int)); }

/* The range, as the sample takes it: at run time (volatile, so that the
 * compiler does not turn the division by hi - lo = 2 into a multiplication,
 * which it could not do for the sample's run-time lo and hi). */
static volatile float rangeLo = -1.0f, rangeHi = 1.0f;

static void run(void) {
  float lo = rangeLo, hi = rangeHi;
#pragma omp parallel
  {
    int *mine = calloc((size_t)B, sizeof(int));
#pragma omp for
    for (long i = 0; i < N; ++i)
      if (x[i] >= lo && x[i] < hi) {
        long bin = (long)((x[i] - lo) / (hi - lo) * (float)B);
        mine[bin < B - 1 ? bin : B - 1] += 1;
      }
    for (long b = 0; b < B; ++b)
      if (mine[b]) {
#pragma omp atomic
        H[b] += mine[b];
      }
    free(mine);
  }
}

static double checksum(void) {
  double sum = 0;
  for (long b = 0; b < B; ++b)
    sum += (double)H[b] * (double)(b + 1);
  return sum;
}

int main(int argc, char **argv) {
  N = bench_arg(argc, argv, 1);
  B = bench_arg(argc, argv, 2);
  int reps = (int)bench_arg(argc, argv, 3);
  x = bench_alloc((size_t)N);
  H = calloc((size_t)B, sizeof(int));
  bench_fill(x, (size_t)N, 1);
  bench_dump("in", "x", x, 1, (long[]){N});
  bench_report(reps, reset, run, checksum);
  bench_dump_typed("out", "H", H, "<i4", 1, (long[]){B});
  return 0;
}
